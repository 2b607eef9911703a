"""pyfuzz must find a planted bug in DaCe's auto_optimize pipeline, and its reproducer must
replay; the same transformation done right must stay silent."""
import json
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.pyfuzz, pytest.mark.usefixtures("exclusive_cores")]

PLANTED = "harnessgen.zoo.planted:TilingWithoutRemainder"
CORRECT = "harnessgen.zoo.correct:TilingWithRemainder"


def test_planted_tiling_bug_in_auto_optimize_is_found_and_replays(tmp_path):
    from harnessgen.cli import main

    out, crashes = tmp_path / "run", tmp_path / "crashes"
    code = main(["pyfuzz", "--compiler", "dace", "--time", "120", "--out", str(out), "--crashes", str(crashes),
                 "--dace-pass", PLANTED, "--dims", "2-8", "--shrink-time", "90", "--seed", "1"])
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    mismatches = [f for f in summary["findings"] if f["outcome"] == "MISMATCH"
                  and "auto_optimize" in f["signature"][2]]
    assert mismatches, summary
    finding = mismatches[0]
    assert finding["seconds_to_find"] is not None and finding["seconds_to_find"] <= 120
    folder = crashes / "pyfuzz" / "dace" / finding["directory"].rsplit("/", 1)[1]
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["verdict"]["agreeing_modes"] == ["simplify"]      # the pipeline, not the frontend, is blamed
    replay = subprocess.run([sys.executable, str(folder / "repro.py")], capture_output=True, text=True,
                            cwd=folder, timeout=300)
    assert replay.returncode == 1, replay.stdout + replay.stderr
    assert "auto_optimize: output" in replay.stdout
    assert meta["shrink"]["stmts_after"] <= meta["shrink"]["stmts_before"]
    # the bug as a developer files it: the minimal program, the versions, the comparison used
    row = next(r for r in summary["distinct_bugs"] if r["kind"] == "MISMATCH" and "auto_optimize" in r["description"])
    report = (out / row["report"]).read_text()
    assert (folder / "program.py").read_text().strip() in report and "## The comparison used" in report
    assert f"| dace | {meta['versions']['dace']} |" in report and str(folder / "repro.py") in report


def test_correct_tiling_in_auto_optimize_stays_silent(tmp_path):
    """Same match, same tile size, the last partial tile included: no mismatch may blame
    auto_optimize. (Real DaCe 1.0.2 errors, such as its BLAS dot validation, may still
    appear as COMPILER_ERROR; they are not the transformation's.)"""
    from harnessgen.cli import main

    out = tmp_path / "run"
    code = main(["pyfuzz", "--compiler", "dace", "--time", "90", "--out", str(out), "--crashes",
                 str(tmp_path / "crashes"), "--dace-pass", CORRECT, "--dims", "2-8", "--seed", "1"])
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["outcomes"].get("PASS", 0) >= 3, summary          # it really judged programs
    assert not [f for f in summary["findings"] if f["outcome"] == "MISMATCH"], summary
