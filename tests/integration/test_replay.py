"""Replay classifies what post did: mismatch, out-of-bounds write, crash, hang; and
recognises when pre itself failed (a missing constraint, never a transformation bug)."""
import subprocess

import numpy as np

from harnessgen.core.outcome import Outcome
from harnessgen.core.runtime import Tolerance
from harnessgen.cutout.extract import whole_program_pair
from harnessgen.harness.build import build
from harnessgen.harness.replay import replay
from harnessgen.inputs import seeds
from harnessgen.inputs.constraints import derive
from harnessgen.targets.loaders import load_python_program
from tests.conftest import PROGRAMS, layout_of, make_pair, scatter_missing_constraint

BROKEN = str(PROGRAMS / "broken_xforms.py")


def first_seed(layout):
    return seeds.sample(layout, count=3, seed=0)[1][1]


def built(pair, cache):
    layout = layout_of(pair)
    return layout, build(pair, layout, cache, afl=False)


def test_out_of_bounds_write_is_found_by_guard_zones(build_cache):
    pair = make_pair("reduction", "harnessgen.zoo.planted:OffByOneTiling")
    layout, harness = built(pair, build_cache)
    result = replay(harness.dir, first_seed(layout))
    assert result.outcome == Outcome.OOB_WRITE
    assert result.container in ("ROWSUM", "COLMAX") and result.detail["offset"] >= result.detail["bytes"]
    proc = subprocess.run([str(harness.harness_replay), "-"], input=first_seed(layout), capture_output=True)
    assert proc.returncode == -6 and b"HARNESSGEN: OOB_WRITE" in proc.stderr


def test_mismatch_reports_container_index_and_values(build_cache):
    pair = make_pair("column_window", "harnessgen.zoo.planted:OffloadCopiesWholeArray")
    layout, harness = built(pair, build_cache)
    result = replay(harness.dir, first_seed(layout))
    assert result.outcome == Outcome.MISMATCH and result.container == "TEND"
    assert len(result.detail["multi_index"]) == 2 and result.detail["pre"] != result.detail["post"]
    assert "MISMATCH in TEND[" in result.describe()


def test_segfault_in_post_is_a_post_crash(build_cache):
    pair = make_pair("sigmoid", f"{BROKEN}:NullWrite")
    layout, harness = built(pair, build_cache)
    result = replay(harness.dir, first_seed(layout))
    assert result.outcome == Outcome.POST_CRASH and "SIGSEGV" in result.message


def test_endless_post_is_a_post_hang(build_cache):
    pair = make_pair("sigmoid", f"{BROKEN}:SpinForever")
    layout, harness = built(pair, build_cache)
    result = replay(harness.dir, first_seed(layout), timeout_s=3)
    assert result.outcome == Outcome.POST_HANG


def test_pre_writing_out_of_bounds_is_invalid_input_not_a_finding(build_cache):
    layout, harness = scatter_missing_constraint(build_cache)
    bad = layout.encode({"N": 1, "M": 2}, {"idx": np.array([41], np.int32), "val": np.ones(1), "y": np.zeros(2)})
    result = replay(harness.dir, bad)
    assert result.outcome == Outcome.INVALID_INPUT and not result.outcome.is_finding
    proc = subprocess.run([str(harness.harness_replay), "-"], input=bad, capture_output=True)
    assert proc.returncode == 3 and b"INVALID_INPUT" in proc.stderr     # never an abort
    good = layout.encode({"N": 1, "M": 2}, {"idx": np.array([1], np.int32), "val": np.ones(1), "y": np.zeros(2)})
    assert replay(harness.dir, good).outcome == Outcome.PASS


def test_derived_constraints_keep_the_scatter_in_bounds():
    program = load_python_program(PROGRAMS / "scatter.py", "scatter").programs["scatter"].build()
    c = derive(whole_program_pair(program, "scatter"))
    assert (str(c.values["idx"].lo), str(c.values["idx"].hi)) == ("0", "(M - 1)")


def test_tolerance_can_be_overridden_at_replay(build_cache):
    pair = make_pair("elementwise_chain", "harnessgen.zoo.correct:ReciprocalDivision")
    layout, harness = built(pair, build_cache)
    inputs = [d for _, d in seeds.sample(layout, count=12, seed=5)]
    assert all(replay(harness.dir, d).outcome == Outcome.PASS for d in inputs)
    exact = [replay(harness.dir, d, Tolerance(exact=True)).outcome for d in inputs]
    assert Outcome.MISMATCH in exact


def test_a_build_that_does_not_load_is_a_replay_error_not_a_traceback(build_cache, tmp_path):
    import shutil

    pair = make_pair("column_window", "harnessgen.zoo.planted:OffloadCopiesWholeArray")
    layout, harness = built(pair, build_cache)
    broken = tmp_path / "broken-build"
    shutil.copytree(harness.dir, broken)
    (broken / "libpost.so").write_bytes(b"not a shared library")
    result = replay(broken, first_seed(layout))
    assert result.outcome == Outcome.REPLAY_ERROR and not result.outcome.is_finding
    assert "does not load" in result.message


def test_what_a_library_prints_is_never_taken_for_the_workers_answer(build_cache, tmp_path, monkeypatch):
    """A worker whose output carries other lines (a CUDA runtime's message on standard output)
    still answers: the parent reads past them; one that says nothing else dies as REPLAY_ERROR."""
    import sys

    from harnessgen.harness.replay import ReplayWorker

    answer = '{"stage": "result", "outcome": "PASS", "satisfiable": true, "container": null, "detail": {}, ' \
             '"symbols": {}, "message": ""}'
    fake = tmp_path / "fake_worker.py"
    fake.write_text("import sys\nfor line in sys.stdin:\n    print('CUDA error: out of memory', flush=True)\n"
                    f"    print({answer!r}, flush=True)\n")
    pair = make_pair("column_window", "harnessgen.zoo.planted:OffloadCopiesWholeArray")
    layout, harness = built(pair, build_cache)

    def start(worker):
        worker.close()
        worker.proc = subprocess.Popen([sys.executable, str(fake)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.DEVNULL)
        worker._buffer = b""

    monkeypatch.setattr(ReplayWorker, "_start", start)
    with ReplayWorker(harness.dir) as worker:
        assert worker.run(first_seed(layout)).outcome == Outcome.PASS
    fake.write_text("import sys\nsys.stdin.readline()\nprint('Segmentation fault in cuInit', flush=True)\n")
    with ReplayWorker(harness.dir) as worker:
        result = worker.run(first_seed(layout))
    assert result.outcome == Outcome.REPLAY_ERROR and "cuInit" in result.message


def _alone(harness, paths, threads=1):
    """What each input does in a process of its own."""
    from harnessgen.core import protocol

    env = protocol.HarnessEnv(threads=threads)
    return [p for p in paths if protocol.run_native(harness.harness_replay, p, env).crashed]


def test_seeds_screened_in_batches_fail_exactly_as_each_alone(build_cache, tmp_path):
    # a wrong tiling fails only for sizes that are not a multiple of the tile: passing and failing
    # inputs interleave, and each failing one aborts the batch it is in
    pair = make_pair("elementwise_chain", "harnessgen.zoo.planted:TilingWithoutRemainder")
    layout, harness = built(pair, build_cache)
    paths = seeds.write(seeds.sample(layout, count=12, seed=3), tmp_path / "seeds")
    timings = []
    passing, crashing = seeds.screen_seeds(harness, paths, timings=timings)
    failing_alone = _alone(harness, paths)
    assert failing_alone and len(failing_alone) < len(paths)          # both kinds among the seeds
    assert [p for p, _ in crashing] == failing_alone
    assert [position for _, position in crashing] == [paths.index(p) + 1 for p in failing_alone]
    assert passing == [p for p in paths if p not in failing_alone]
    assert len(timings) == len(paths) and all(t > 0 for t in timings)


def test_a_hang_in_a_batch_gets_its_own_full_time(build_cache, tmp_path):
    pair = make_pair("sigmoid", f"{BROKEN}:SpinForever")
    layout, harness = built(pair, build_cache)
    paths = seeds.write(seeds.sample(layout, count=2, seed=0), tmp_path / "seeds")
    passing, crashing = seeds.screen_seeds(harness, paths, timeout_s=1.0)
    assert passing == [] and [p for p, _ in crashing] == paths
