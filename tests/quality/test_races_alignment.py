"""Race mode and fuzzer-chosen alignment: both planted classes are found within 60 s and
replay; correct parallel transformations stay silent in race mode."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harnessgen.harness.built import HarnessBuild
from tests.conftest import PROGRAMS, instances_of, run_cli, summary_of


def alone(folder: Path, tmp: Path, post_from_pre: bool = False) -> subprocess.CompletedProcess:
    where = tmp / f"alone-{int(post_from_pre)}"
    where.mkdir()
    shutil.copy(folder / "repro.py", where)
    if post_from_pre:
        shutil.copy(folder / "pre.sdfg", where / "post.sdfg")
    # post made pre again: a race reproducer tries for its whole minute unless told less
    seconds = ["--seconds", "10"] if post_from_pre else []
    return subprocess.run([sys.executable, "repro.py", *seconds], cwd=where, capture_output=True, text=True,
                          timeout=600)


@pytest.mark.fuzz
@pytest.mark.quiet_machine     # a race shows only where its threads run at once
def test_planted_race_is_found_in_race_mode_and_replays(tmp_path):
    proc = run_cli(["fuzz", "--program", "kernels:prefix_sum", "--transformation",
                    "harnessgen.zoo.planted:ParallelizeCarriedLoop", "--time", "60", "--race", "--until-crash"],
                   tmp_path)
    assert proc.returncode == 0, proc.stderr
    [entry] = summary_of(tmp_path)["instances"]
    assert entry["verdict"] == "RACE" and entry["seconds_to_first_finding"] <= 60
    folder = Path(entry["findings"][0]["path"])
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["container"] == "A" and meta["threads"] > 1 and meta["differing_runs"] >= 1
    # ThreadSanitizer names the statement that writes A in post's parallel loop
    assert meta["tsan"]["reports"] >= 1, meta.get("tsan_error")
    assert any(loc["access"] == "write" and "A[" in loc["code"] for loc in meta["tsan"]["locations"]), meta["tsan"]
    failing = alone(folder, tmp_path)
    assert failing.returncode == 1 and "RACE" in failing.stdout, failing.stdout + failing.stderr
    fixed = alone(folder, tmp_path, post_from_pre=True)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr


@pytest.mark.fuzz
def test_aligned_vector_access_is_found_only_through_a_misaligned_view(tmp_path):
    _, insts = instances_of("elementwise_chain", "harnessgen.zoo.planted:AlignedVectorize")
    proc = run_cli(["fuzz", "--program", "kernels:elementwise_chain", "--transformation",
                    "harnessgen.zoo.planted:AlignedVectorize", "--instance", insts[0].id, "--time", "60",
                    "--until-crash"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    [entry] = summary_of(tmp_path)["instances"]
    assert entry["verdict"] == "POST_CRASH" and entry["seconds_to_first_finding"] <= 60
    folder = Path(entry["findings"][0]["path"])
    meta = json.loads((folder / "meta.json").read_text())
    import numpy as np

    with np.load(folder / "inputs.npz") as npz:
        offsets = {k[4:]: int(npz[k]) for k in npz.files if k.startswith("off:")}
    assert any(o % 16 for o in offsets.values()), offsets        # the reproducer keeps the misalignment
    failing = alone(folder, tmp_path)
    assert failing.returncode == 1 and "SIGSEGV" in failing.stdout, failing.stdout + failing.stderr
    assert meta["outcome"] == "POST_CRASH"


@pytest.mark.fuzz
@pytest.mark.parametrize("program,spec,pick", [
    ("spmv", "LoopToMap", None),
    ("gemm", "MapTiling", "gemm_map"),
])
def test_correct_parallel_transformations_stay_silent_in_race_mode(tmp_path, program, spec, pick):
    _, insts = instances_of(program, spec)
    inst = next(i for i in insts if pick is None or pick in i.description)
    proc = run_cli(["fuzz", "--program", f"kernels:{program}", "--transformation", spec, "--instance", inst.id,
                    "--time", "60", "--execs", "100000", "--race"], tmp_path)     # bounded by executions
    assert proc.returncode == 0, proc.stderr
    [entry] = summary_of(tmp_path)["instances"]
    assert entry["verdict"] == "PASS", entry
    assert entry["execs"] >= 50_000, entry["execs"]           # both afl-fuzz instances ran their share
    assert entry["race_execs_per_sec"] and entry["race_execs_per_sec"] > 100


@pytest.mark.fuzz
@pytest.mark.quiet_machine
def test_a_parallelizing_transformation_is_judged_on_several_threads_without_race_mode(tmp_path):
    proc = run_cli(["fuzz", "--program", "kernels:prefix_sum", "--transformation",
                    "harnessgen.zoo.planted:ParallelizeCarriedLoop", "--time", "30", "--until-crash"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    [entry] = summary_of(tmp_path)["instances"]
    assert entry["verdict"] == "RACE", entry
    assert entry["race_check"].startswith("post runs 1 parallel region(s) pre does not"), entry["race_check"]
    # the whole program races too: the audit runs it on several threads as well
    assert entry["audit"]["outcome"] == "RACE" and entry["audit"]["classification"] == "observable", entry["audit"]


@pytest.mark.fuzz
@pytest.mark.parametrize("program,spec,parallel", [
    ("trisolve", "harnessgen.zoo.correct:ReciprocalDivision", False),
    ("elementwise_chain", "MapTiling", True),
])
def test_the_race_check_runs_where_post_runs_parallel_code_pre_does_not(tmp_path, program, spec, parallel):
    """A correct rewrite of trisolve's sequential loop needs no check; tiling a parallel map
    keeps its one directive but changes the region's body, so post is judged on several
    threads, and stays silent."""
    _, insts = instances_of(program, spec)
    proc = run_cli(["fuzz", "--program", f"kernels:{program}", "--transformation", spec, "--instance", insts[0].id,
                    "--time", "5"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    [entry] = summary_of(tmp_path)["instances"]
    assert entry["verdict"] == "PASS", entry
    assert bool(entry["race_check"]) == parallel, entry["race_check"]
    build = HarnessBuild.open(entry["build_dir"])
    if parallel:
        directives = {side: sorted(line.strip() for line in build.host_source(side).splitlines() if "#pragma" in line)
                      for side in ("pre", "post")}
        assert directives["pre"] == directives["post"], directives


@pytest.mark.fuzz
@pytest.mark.quiet_machine
def test_a_loop_moved_into_a_parallel_map_races_without_a_new_directive(tmp_path):
    """DaCe's MoveLoopIntoMap moves the row loop of a wavefront into the column map: the
    directive lines stay the same, the region's body now carries a dependency between columns.
    Found by default (no --race), as a RACE the whole program shows too."""
    wavefront = PROGRAMS / "wavefront.py"
    proc = run_cli(["fuzz", "--program", f"{wavefront}:wavefront", "--transformation", "MoveLoopIntoMap",
                    "--time", "20"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    [entry] = summary_of(tmp_path)["instances"]
    assert entry["verdict"] == "RACE", entry
    build = HarnessBuild.open(entry["build_dir"])
    directives = {side: sorted(line.strip() for line in build.host_source(side).splitlines() if "#pragma omp" in line)
                  for side in ("pre", "post")}
    assert directives["pre"] == directives["post"] == ["#pragma omp parallel for"]
    assert entry["race_check"].startswith("post runs 1 parallel region(s)"), entry["race_check"]
    folder = Path(entry["findings"][0]["path"])
    assert alone(folder, tmp_path).returncode == 1
