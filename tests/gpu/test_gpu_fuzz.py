"""On a GPU: the planted kernel bugs and the planted GPU offload bug are found and replay; the
correct kernels and GPUOffloadMap stay silent. Skipped, with the runtime's reason, where no
CUDA device is (CI has none); `pytest -m gpu` on a GPU machine after `make setup-gpu`."""
import json
import subprocess
import sys

import pytest

from harnessgen.cuda import toolkit
from harnessgen.gpukernels import spec as kernels
from tests.conftest import run_cli, summary_of

REASON = toolkit.gpu_unavailable() if toolkit.available() else "no CUDA toolchain (make setup-cuda)"
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(REASON is not None, reason=f"needs a CUDA GPU: {REASON}")]

_, SHIPPED = kernels.resolve("gpukernels")
PLANTED = [s.name for s in SHIPPED if s.expect in ("RACE", "BARRIER_DIVERGENCE")]
CORRECT = [s.name for s in SHIPPED if s.expect in (None, "REDUNDANT_BARRIER")]


@pytest.mark.parametrize("name", PLANTED)
def test_a_planted_kernel_bug_is_found_and_replays(tmp_path, name):
    expect = next(s.expect for s in SHIPPED if s.name == name)
    proc = run_cli(["fuzz", "--program", f"gpukernels:{name}", "--time", "180", "--until-crash"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = summary_of(tmp_path)["instances"][0]
    assert result["verdict"] == expect, result
    finding = result["findings"][0]
    repro = subprocess.run([sys.executable, finding["path"] + "/repro.py", "--runs", "100"],
                           capture_output=True, text=True, timeout=600)
    assert repro.returncode == 1, repro.stdout + repro.stderr


@pytest.mark.parametrize("name", CORRECT)
def test_a_correct_kernel_stays_silent(tmp_path, name):
    proc = run_cli(["fuzz", "--program", f"gpukernels:{name}", "--time", "60"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = summary_of(tmp_path)["instances"][0]
    assert result["verdict"] == "PASS", result


@pytest.mark.parametrize("spec, verdict", [("harnessgen.zoo.planted:GPUOffloadCopiesWholeArray", "MISMATCH"),
                                           ("harnessgen.targets.cloudsc_xforms:GPUOffloadMap", "PASS")])
def test_gpu_offload_on_a_column_window(tmp_path, spec, verdict):
    proc = run_cli(["fuzz", "--program", "kernels:column_window", "--transformation", spec, "--time", "90",
                    "--until-crash"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = summary_of(tmp_path)["instances"]
    assert {r["verdict"] for r in results} == {verdict}, json.dumps(results, indent=1)[:3000]


def test_the_trailing_barrier_of_the_transpose_is_redundant_and_the_other_needed(tmp_path):
    from harnessgen.cli import main

    out = tmp_path / "barriers.json"
    assert main(["barriers", "--program", "gpukernels:transpose_extra_barrier", "--out", str(out),
                 "--corpus-dir", str(tmp_path / "corpus")]) == 0
    verdicts = json.loads(out.read_text())
    assert [v["verdict"] for v in sorted(verdicts, key=lambda v: v["line"])] == ["NEEDED", "REDUNDANT_BARRIER"]
