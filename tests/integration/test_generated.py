"""The ``generated`` target: random DaCe programs that compile and agree with their NumPy
reference (or whose difference is a DaCe bug that replays), each saved as a file a user reads
and runs, named alone or as a guided stream."""
import json
import subprocess
import sys

import pytest

from harnessgen.checks.reference_check import AGREES, CHECK_MAX_SIZE, DIFFERS, CheckOptions, check_program
from harnessgen.core.errors import ConfigError
from harnessgen.harness.judge import JudgeOptions
from harnessgen.progen.target import generated_dir, stream_coverage
from harnessgen.targets import resolve
from tests.conftest import BUILD_CACHE

# not chosen: the first seeds past those the unit tests print
SEEDS = [str(s) for s in range(100, 106)]


def test_generated_programs_compile_and_agree_with_their_reference_or_the_difference_replays(tmp_path):
    target, _ = resolve("generated")
    options = CheckOptions(crashes_root=tmp_path, judge=JudgeOptions(work_dir=BUILD_CACHE, max_size=CHECK_MAX_SIZE))
    for seed in SEEDS:
        check = check_program("generated", target.programs[seed], options)
        assert json.loads(json.dumps(check.to_json()))["program"] == seed   # what a run's state stores
        verdicts = {form.form: form.verdict for form in check.forms}
        assert set(verdicts) == {"unsimplified", "simplified"}, seed
        for form in check.forms:
            assert form.verdict in (AGREES, DIFFERS), (seed, form)
            assert form.inputs > 0
            if form.verdict == DIFFERS:      # a DaCe bug, not the generator's: its reproducer shows it
                replay = subprocess.run([sys.executable, "repro.py"], cwd=form.finding, capture_output=True,
                                        text=True, timeout=300)
                assert replay.returncode == 1 and "DIFFERS" in replay.stdout, (seed, replay.stdout + replay.stderr)


def test_a_generated_program_is_a_file_a_user_reads_and_runs():
    target, program = resolve("generated:3+reduce")
    [selected] = target.select(program)
    path = generated_dir() / "3+reduce.py"
    assert selected.name == "3+reduce" and str(path) in selected.description
    source = path.read_text()
    assert "@dace.program" in source and "def reference(" in source and "generated:3+reduce" in source
    ran = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr[-2000:]
    arrays = [line.split()[0] for line in ran.stdout.splitlines() if "agrees" in line or "DIFFERS" in line]
    assert arrays and len(arrays) == source.split("def shapes(")[1].count('": (')


def test_a_stream_is_guided_cached_and_named_by_its_seeds():
    target, program = resolve("generated:0-3")
    names = [p.name for p in target.select(program)]
    assert names[0] == "0" and [int(n.split("+")[0]) for n in names] == sorted(int(n.split("+")[0]) for n in names)
    assert len(names) + len(stream_coverage(0, 4)["rejected"]) == 4
    coverage = stream_coverage(0, 4)
    assert coverage["programs"] == len(names) and coverage["matches"] and "never_matched" in coverage
    assert [p.name for p in resolve("generated:0-3")[0].select("0-3")] == names
    for bad in ("5-2", "x", "3+"):
        with pytest.raises(ConfigError, match="generated:"):
            target.select(bad)
    assert json.loads(json.dumps(coverage)) == coverage
