"""The same transformation as the planted bug of tests/versions/test_this_dace.py (found in
DaCe's auto_optimize pipeline on every DaCe version), done right, must stay silent."""
import json
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.pyfuzz, pytest.mark.usefixtures("exclusive_cores")]

CORRECT = "harnessgen.zoo.correct:TilingWithRemainder"


def test_correct_tiling_in_auto_optimize_stays_silent(tmp_path):
    """Same match, same tile size, the last partial tile included: no mismatch may blame
    auto_optimize. (Real DaCe 1.0.2 errors, such as its BLAS dot validation, may still
    appear as COMPILER_ERROR; they are not the transformation's.)"""
    from harnessgen.cli import main

    out = tmp_path / "run"
    # bounded by programs, not seconds (libFuzzer -runs): nine programs, the same on any machine
    code = main(["pyfuzz", "--compiler", "dace", "--time", "240", "--out", str(out), "--crashes",
                 str(tmp_path / "crashes"), "--dace-pass", CORRECT, "--dims", "2-8", "--seed", "1", "--", "-runs=8"])
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["outcomes"].get("PASS", 0) >= 8, summary          # it really judged programs
    assert not [f for f in summary["findings"] if f["outcome"] == "MISMATCH"], summary
