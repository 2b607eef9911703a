"""Every planted bug: many raw crashes, exactly one finding, minimal, and a reproducer
that travels alone and goes quiet once post is replaced by pre."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harnessgen.core import expr as ex
from harnessgen.inputs.layout import InputLayout
from harnessgen.zoo import PLANTED
from tests.conftest import instances_of, run_cli, summary_of


def run_repro(folder: Path, post_from_pre: bool = False, *args: str) -> subprocess.CompletedProcess:
    alone = folder.parent / f"alone-{folder.name}-{int(post_from_pre)}"
    alone.mkdir()
    shutil.copy(folder / "repro.py", alone / "repro.py")
    if post_from_pre:
        shutil.copy(folder / "pre.sdfg", alone / "post.sdfg")
    return subprocess.run([sys.executable, "repro.py", *args], cwd=alone, capture_output=True, text=True, timeout=600)


@pytest.mark.fuzz
# a race shows only where its threads run at once: never beside another test
@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.quiet_machine) if PLANTED[name].race else name
                                  for name in sorted(PLANTED)])
def test_planted_bug_becomes_exactly_one_minimal_reproducer(tmp_path, name):
    bug = PLANTED[name]
    _, insts = instances_of(bug.program, f"harnessgen.zoo.planted:{name}")
    # long enough for many raw crashes of one bug; a race, which shows on some runs only, gets longer
    proc = run_cli(["fuzz", "--program", f"kernels:{bug.program}", "--transformation",
                    f"harnessgen.zoo.planted:{name}", "--instance", insts[0].id, "--time", "20" if bug.race else "10"]
                   + (["--race"] if bug.race else []), tmp_path)
    assert proc.returncode == 0, proc.stderr
    [entry] = summary_of(tmp_path)["instances"]
    assert len(entry["findings"]) == 1, entry["findings"]               # one bug, one finding
    assert entry["verdict"] == entry["findings"][0]["outcome"]
    folder = Path(entry["findings"][0]["path"])
    meta = json.loads((folder / "meta.json").read_text())
    # every raw crash is accounted for. A few may be FLAKY: a race that did not race again, or a
    # crash that depended on what earlier persistent-mode iterations left in post's transients
    counts = entry["triage"]
    assert len(meta["raw_crashes"]) + counts["flaky"] == counts["raw"] >= 1 and counts["invalid_inputs"] == 0
    assert counts["flaky"] <= counts["raw"] // 4, counts
    assert meta["minimized_bytes"] <= meta["raw_bytes"]
    assert meta["outcome"] == bug.outcome
    # the smallest failing sizes: the sizes' lower bounds unless the bug needs more
    layout = InputLayout.load(Path(entry["build_dir"]) / "layout.json")
    env = {}
    for slot in layout.symbols:
        env[slot.name] = meta["symbols"][slot.name]
        least = bug.least_failing.get(slot.name, ex.evaluate(slot.lo, env))
        if bug.race:    # how small an input still races three times in three is luck (and load)
            assert least <= meta["symbols"][slot.name], (slot.name, meta["symbols"])
        else:
            assert meta["symbols"][slot.name] == least, (slot.name, meta["symbols"])
    assert (folder / "README.md").read_text().count("## ") == 3
    failing = run_repro(folder)
    assert failing.returncode == 1, failing.stdout + failing.stderr
    fixed = run_repro(folder, True, "--seconds", "10")    # a race reproducer would try for a minute
    assert fixed.returncode == 0 and "agree" in fixed.stdout, fixed.stdout + fixed.stderr
