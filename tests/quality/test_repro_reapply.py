"""A reproducer makes post again: it applies the transformation to pre with the DaCe (and the
transformation) installed where it runs. So it exits 1 while the bug is there and 0 once the
transformation is fixed, whether the fix computes correctly or declines the place; the recorded
post stays one flag away."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import instances_of, run_cli, summary_of

PLANTED = "harnessgen.zoo.planted:TilingWithoutRemainder"

# a "fixed" transformation, as a fixed release would install it: loaded before the reproducer runs
FIXED_BY_TILING_CORRECTLY = """
from dace.transformation.dataflow import StripMining
import harnessgen.zoo.planted as planted

def apply(self, graph, sdfg):
    StripMining.apply_to(sdfg, map_entry=self.map_entry, options={"tile_size": 4, "dim_idx": 0}, save=False)

planted.TilingWithoutRemainder.apply = apply
"""
FIXED_BY_DECLINING = """
import harnessgen.zoo.planted as planted

planted.TilingWithoutRemainder.can_be_applied = lambda self, graph, expr_index, sdfg, permissive=False: False
"""


@pytest.fixture(scope="module")
def finding(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("reapply")
    _, insts = instances_of("elementwise_chain", PLANTED)
    proc = run_cli(["fuzz", "--program", "kernels:elementwise_chain", "--transformation", PLANTED,
                    "--instance", insts[0].id, "--time", "10"], tmp)
    assert proc.returncode == 0, proc.stderr
    [entry] = summary_of(tmp)["instances"]
    assert entry["verdict"] == "MISMATCH", entry
    return Path(entry["findings"][0]["path"])


def run_alone(folder: Path, where: Path, *args: str, fix: str = "") -> subprocess.CompletedProcess:
    where.mkdir()
    shutil.copy(folder / "repro.py", where / "repro.py")
    env = None
    if fix:
        (where / "fix").mkdir()
        (where / "fix" / "sitecustomize.py").write_text(fix)
        env = {"PYTHONPATH": str(where / "fix")}
    return subprocess.run([sys.executable, "repro.py", *args], cwd=where, capture_output=True, text=True,
                          timeout=600, env={**os.environ, **(env or {})})


@pytest.mark.fuzz
def test_the_reproducer_applies_the_transformation_again_and_says_so(finding, tmp_path):
    meta = json.loads((finding / "meta.json").read_text())
    assert meta["reapply"] == {"reapplies": True, "why": ""}
    proc = run_alone(finding, tmp_path / "as-is")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"post: {PLANTED} applied again to pre" in proc.stdout and "MISMATCH" in proc.stdout


@pytest.mark.fuzz
@pytest.mark.parametrize("fix,said", [(FIXED_BY_TILING_CORRECTLY, "pre and post agree"),
                                      (FIXED_BY_DECLINING, "no longer applies at this place")])
def test_a_fixed_transformation_makes_the_reproducer_exit_0(finding, tmp_path, fix, said):
    fixed = run_alone(finding, tmp_path / "fixed", fix=fix)
    assert fixed.returncode == 0 and said in fixed.stdout, fixed.stdout + fixed.stderr
    # the post recorded when the finding was made still differs: one flag away
    recorded = run_alone(finding, tmp_path / "recorded", "--recorded", fix=fix)
    assert recorded.returncode == 1 and "the one recorded" in recorded.stdout, recorded.stdout + recorded.stderr


@pytest.mark.fuzz
def test_where_applying_again_does_not_stand_for_the_bug_the_recorded_post_runs_and_says_why(finding, tmp_path):
    where = tmp_path / "edited"
    where.mkdir()
    text = (finding / "repro.py").read_text()
    assert "REAPPLIES = True\n" in text
    (where / "repro.py").write_text(text.replace("REAPPLIES = True\n", "REAPPLIES = False\n").replace(
        "REAPPLY_WHY = ''", "REAPPLY_WHY = 'it made other code'"))
    proc = subprocess.run([sys.executable, "repro.py"], cwd=where, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "post: the one recorded when the finding was made (it made other code)" in proc.stdout


@pytest.mark.fuzz
@pytest.mark.parametrize("pre", ["pre", "post"])
def test_the_reapply_check_in_a_fork_answers_as_a_new_interpreter(finding, tmp_path, pre):
    """The check runs in a child forked from the triaging process (DaCe already loaded); its
    answer is the one a new interpreter running the reproducer gives: for the finding's pre, and
    for another pre (its post, from which the transformation does not make the recorded post)."""
    from harnessgen.triage.reproducer import _check_reapply_in_fork

    shutil.copytree(finding, tmp_path / "copy")
    repro = tmp_path / "copy" / "repro.py"
    shutil.copy(finding / f"{pre}.sdfg", repro.with_name("pre.sdfg"))
    answered, forked = _check_reapply_in_fork(repro, repro.with_name(".forked.json"))
    subprocess.run([sys.executable, "repro.py", "--check-reapply", ".new.json"], cwd=repro.parent, check=True,
                   capture_output=True, timeout=600)
    assert answered and forked == json.loads(repro.with_name(".new.json").read_text())
    assert forked["reapplies"] == (pre == "pre")
