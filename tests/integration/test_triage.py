"""Triage: FLAKY and INVALID_INPUT are never findings; crashes become one minimal reproducer."""
import json
import subprocess
import sys

import numpy as np

from harnessgen.core.outcome import Outcome
from harnessgen.engines import RawCrash
from harnessgen.harness.build import build
from harnessgen.inputs import seeds
from harnessgen.subjects import triage_build
from harnessgen.triage.classify import TriageOptions
from tests.conftest import PROGRAMS, layout_of, make_pair, scatter_missing_constraint

BROKEN = str(PROGRAMS / "broken_xforms.py")


def raw_files(tmp_path, inputs):
    out = []
    for i, data in enumerate(inputs):
        path = tmp_path / "raw" / f"crash-{i}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        out.append(RawCrash(path, float(i), "crash"))
    return out


def options(tmp_path, build_cache):
    return TriageOptions(keep_root=tmp_path / "kept", work_dir=build_cache)


def test_nondeterministic_post_is_flaky_not_a_finding(build_cache, tmp_path):
    pair = make_pair("sigmoid", f"{BROKEN}:Flaky")
    layout = layout_of(pair)
    harness = build(pair, layout, build_cache, afl=False)
    inputs = [d for _, d in seeds.sample(layout, 6, 0)[1:]]      # not the all-zero seed
    result = triage_build(harness.dir, raw_files(tmp_path, inputs), options(tmp_path, build_cache))
    assert result.findings == [] and result.verdict == Outcome.PASS
    assert len(result.flaky) >= 3
    notes = json.loads((tmp_path / "kept" / "notes.json").read_text())
    assert notes["flaky"]


def test_a_post_wrong_from_its_first_call_is_a_finding_though_its_state_leaks(build_cache, tmp_path):
    """Each replay runs as a fresh process does (a child forked from the loaded build): a post
    whose state leaks from run to run but is wrong from its first call is a MISMATCH every
    time, as its reproducer shows, never waved through as flaky."""
    pair = make_pair("sigmoid", f"{BROKEN}:WrongOnEveryOtherCall")
    layout = layout_of(pair)
    harness = build(pair, layout, build_cache, afl=False)
    inputs = [d for _, d in seeds.sample(layout, 4, 0)[1:]]
    result = triage_build(harness.dir, raw_files(tmp_path, inputs), options(tmp_path, build_cache))
    assert result.verdict == Outcome.MISMATCH and not result.flaky


def test_a_finding_the_native_harness_does_not_show_is_flaky(build_cache, tmp_path):
    """The replays see post wrong, a fresh native process sees it right: no reproducer would
    replay it, so it is flaky, never a finding."""
    pair = make_pair("sigmoid", f"{BROKEN}:WrongInPythonOnly")
    layout = layout_of(pair)
    harness = build(pair, layout, build_cache, afl=False)
    inputs = [d for _, d in seeds.sample(layout, 3, 0)[1:]]
    result = triage_build(harness.dir, raw_files(tmp_path, inputs), options(tmp_path, build_cache))
    assert result.findings == [] and result.verdict == Outcome.PASS
    assert len(result.flaky) == len(inputs)


def test_pre_failing_is_invalid_input_and_the_instance_passes(build_cache, tmp_path):
    layout, harness = scatter_missing_constraint(build_cache)
    bad = layout.encode({"N": 2, "M": 2}, {"idx": np.array([40, 0], np.int32), "val": np.ones(2), "y": np.zeros(2)})
    result = triage_build(harness.dir, raw_files(tmp_path, [bad]), options(tmp_path, build_cache))
    assert result.verdict == Outcome.PASS and result.findings == []
    assert len(result.invalid) == 1 and "outside y" in result.invalid[0]["message"]


def test_post_crash_becomes_one_minimal_reproducer(build_cache, tmp_path):
    pair = make_pair("sigmoid", f"{BROKEN}:NullWrite")
    layout = layout_of(pair)
    harness = build(pair, layout, build_cache, afl=True)
    inputs = [d for _, d in seeds.sample(layout, 5, 0)]
    result = triage_build(harness.dir, raw_files(tmp_path, inputs), options(tmp_path, build_cache))
    [finding] = result.findings
    assert finding.outcome == Outcome.POST_CRASH and len(finding.raw) == 5
    meta = json.loads((finding.folder / "meta.json").read_text())
    assert meta["minimized_bytes"] <= meta["raw_bytes"]
    with np.load(finding.folder / "inputs.npz") as npz:      # the crash needs no data: all zeros
        assert all(not npz[k].any() for k in npz.files if k.startswith("arr:"))
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "repro.py").write_text((finding.folder / "repro.py").read_text())
    proc = subprocess.run([sys.executable, "repro.py"], cwd=alone, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "post died (signal SIGSEGV)" in proc.stdout, proc.stdout + proc.stderr


def test_triage_of_an_afl_sync_directory_collects_every_instances_crashes(build_cache, tmp_path):
    """`--jobs 3` with race mode on one instance: main, s1, s2 and race each keep crashes in their
    own folder (and hangs in theirs); triage of the sync directory, or of one instance folder
    in it, takes every one of them."""
    from harnessgen.campaign.retriage import triage_directory
    from harnessgen.engines import FuzzJob
    from harnessgen.engines.afl import instance_names

    pair = make_pair("sigmoid", f"{BROKEN}:NullWrite")
    layout = layout_of(pair)
    harness = build(pair, layout, build_cache, afl=True)
    inputs = [d for _, d in seeds.sample(layout, 5, 0)]
    job = FuzzJob(build=harness, seeds_dir=tmp_path, out_dir=tmp_path / "sync", time_s=1, parallel=3, race_threads=2)
    names = instance_names(job)
    assert names == ["main", "s1", "s2", "race"]
    sync = tmp_path / "sync"
    for n, name in enumerate(names):
        (sync / name / "crashes").mkdir(parents=True)
        (sync / name / "cmdline").write_text(f"{harness.harness_afl}\n")
        (sync / name / "crashes" / f"id:000000,sig:06,src:000000,time:{n},execs:{n}").write_bytes(inputs[n])
    (sync / "s2" / "hangs").mkdir()
    (sync / "s2" / "hangs" / "id:000000,src:000001,time:9,execs:9").write_bytes(inputs[4])
    (sync / "queue").mkdir()                        # not an instance folder
    for where in (sync, sync / "s1"):
        [(instance, result)] = triage_directory(where, tmp_path / "crashes", TriageOptions(work_dir=build_cache))
        assert instance == pair.instance.id and result.raw_total == 5
        [finding] = result.findings
        assert finding.outcome == Outcome.POST_CRASH and len(finding.raw) == 5


def test_a_crashing_post_takes_down_its_replay_alone(build_cache):
    """The replay server loads the build once and forks a child per input: a crash is said,
    and the next input runs in the same server."""
    from harnessgen.harness.replay import ReplayWorker

    pair = make_pair("sigmoid", f"{BROKEN}:NullWrite")
    layout = layout_of(pair)
    harness = build(pair, layout, build_cache, afl=False)
    data = seeds.sample(layout, 2, 0)[1][1]
    with ReplayWorker(harness.dir) as worker:
        first = worker.run(data)
        server = worker.proc.pid
        again = worker.run(data)
        assert first.outcome == again.outcome == Outcome.POST_CRASH and "SIGSEGV" in again.message
        assert worker.proc.pid == server and worker.proc.poll() is None
