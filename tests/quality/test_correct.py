"""Correct transformations must stay silent for 30 s of fuzzing (hundreds of thousands of
executions); one correct only up to rounding passes under the default tolerance and is caught
by --exact."""
import pytest

from tests.conftest import instances_of, run_cli, summary_of

SILENT = {
    # tiles of 4, 3 and 5 on gemm's 3-D accumulation map: remainders in every dimension
    "MapTiling": ("gemm", "MapTiling", ["--set", "tile_sizes=[4,3,5]"], lambda i: "gemm_map" in i.description),
    "MapInterchange": ("transpose_scale", "MapInterchange", [], lambda i: True),
    "MapFusion": ("elementwise_chain", "MapFusion", [], lambda i: True),
    "ReciprocalDivision": ("elementwise_chain", "harnessgen.zoo.correct:ReciprocalDivision", [], lambda i: True),
    # the cloudsc target's own transformations, where the zoo's buggy versions fail: an
    # empty or partial column window, and a negative-step loop with odd trip counts
    "OffloadMap": ("column_window", "harnessgen.targets.cloudsc_xforms:OffloadMap", [], lambda i: True),
    "UnrollByTwo": ("trisolve", "harnessgen.targets.cloudsc_xforms:UnrollByTwo", [], lambda i: True),
    # ... and a loop whose branch tests a value loaded on the loop's entry edge
    "UnrollByTwo-branch": ("clip_small", "harnessgen.targets.cloudsc_xforms:UnrollByTwo", [], lambda i: True),
}


def pick(program, spec, extra, accept):
    settings = {"tile_sizes": (4, 3, 5)} if "--set" in extra else None
    _, insts = instances_of(program, spec, settings)
    return next(i for i in insts if accept(i))


@pytest.mark.fuzz
@pytest.mark.parametrize("name", sorted(SILENT))
def test_correct_transformation_stays_silent_for_30_seconds(tmp_path, name):
    program, spec, extra, accept = SILENT[name]
    inst = pick(program, spec, extra, accept)
    # the fuzzer's oracle itself stays silent: a proof would skip the fuzzing (tests/quality/test_prove_native.py)
    proc = run_cli(["fuzz", "--program", f"kernels:{program}", "--transformation", spec, "--instance", inst.id,
                    "--time", "30", "--prove", "off", *extra], tmp_path)
    assert proc.returncode == 0, proc.stderr
    [entry] = summary_of(tmp_path)["instances"]
    assert entry["verdict"] == "PASS", entry
    assert entry["crashes"] == []
    assert entry["execs"] > 100_000          # it really ran: ~20k execs/s here
    assert entry["fuzz_seconds"] >= 29


@pytest.mark.fuzz
def test_rounding_difference_is_caught_by_exact(tmp_path):
    program, spec, extra, accept = SILENT["ReciprocalDivision"]
    inst = pick(program, spec, extra, accept)
    proc = run_cli(["fuzz", "--program", f"kernels:{program}", "--transformation", spec, "--instance", inst.id,
                    "--time", "60", "--exact", "--until-crash"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    [entry] = summary_of(tmp_path)["instances"]
    assert entry["verdict"] == "MISMATCH"
    assert entry["seconds_to_first_finding"] <= 60
