"""Correct transformations must stay silent for 150,000 executions of afl-fuzz (a budget that
does not depend on the machine's speed: about 8 s here); one correct only up to rounding
passes under the default tolerance and is caught by --exact."""
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


SILENT_EXECS = 150_000


def pick(program, spec, extra, accept):
    settings = {"tile_sizes": (4, 3, 5)} if "--set" in extra else None
    _, insts = instances_of(program, spec, settings)
    return next(i for i in insts if accept(i))


@pytest.mark.fuzz
@pytest.mark.parametrize("name", sorted(SILENT))
def test_correct_transformation_stays_silent_for_150000_executions(tmp_path, name):
    program, spec, extra, accept = SILENT[name]
    inst = pick(program, spec, extra, accept)
    # the fuzzer's oracle itself stays silent: a proof would skip the fuzzing (tests/quality/test_prove_native.py)
    proc = run_cli(["fuzz", "--program", f"kernels:{program}", "--transformation", spec, "--instance", inst.id,
                    "--time", "120", "--execs", str(SILENT_EXECS), "--prove", "off", *extra], tmp_path)
    assert proc.returncode == 0, proc.stderr
    [entry] = summary_of(tmp_path)["instances"]
    assert entry["verdict"] == "PASS", entry
    assert entry["crashes"] == []
    assert entry["execs"] >= SILENT_EXECS          # it really ran them all (-E), within the 120 s cap


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
