"""pyfuzz on torch.compile: a planted graph pass that drops writes through aliases must be
found, minimized to a write through a view and replayed; its correct twin must stay silent."""
import json
import subprocess
import sys

import pytest

from harnessgen.pyfuzz.compilers import torch_available

TORCH_MISSING = torch_available()
pytestmark = [pytest.mark.pyfuzz, pytest.mark.usefixtures("exclusive_cores"),
              pytest.mark.skipif(TORCH_MISSING is not None, reason=TORCH_MISSING or "")]

PLANTED = "harnessgen.pyfuzz.planted_passes:drop_alias_writes"
CORRECT = "harnessgen.pyfuzz.planted_passes:keep_alias_writes"
WRONG = ("MISMATCH", "GUARD_FAILURE")


def pyfuzz(tmp_path, graph_pass, seconds, libfuzzer=()):
    from harnessgen.cli import main

    out, crashes = tmp_path / "run", tmp_path / "crashes"
    code = main(["pyfuzz", "--compiler", "torch", "--time", str(seconds), "--out", str(out), "--crashes", str(crashes),
                 "--torch-pass", graph_pass, "--compile-modes", "aot_eager", "--shrink-time", "60", "--seed", "1",
                 "--", *libfuzzer])
    assert code == 0
    return json.loads((out / "summary.json").read_text()), crashes


def test_planted_alias_write_drop_is_found_minimized_and_replays(tmp_path):
    summary, crashes = pyfuzz(tmp_path, PLANTED, 60)
    wrong = [f for f in summary["findings"] if f["outcome"] in WRONG]
    assert wrong, summary
    finding = wrong[0]
    folder = crashes / "pyfuzz" / "torch" / finding["directory"].rsplit("/", 1)[1]
    program = json.loads((folder / "program.json").read_text())
    meta = json.loads((folder / "meta.json").read_text())
    # minimized to the heart of it: a view, and an in-place write through it
    assert meta["shrink"]["stmts_after"] <= 3, (folder / "program.py").read_text()
    views = {"slice", "select", "view", "squeeze", "unsqueeze", "transpose"}
    made = {s["target"]["name"]: s["op"] for s in program["stmts"]}
    writes = [s for s in program["stmts"] if s["op"].endswith("_") or s["op"] in ("setitem", "fill_slice")]
    assert any(made.get(w["args"][0]) in views for w in writes), (folder / "program.py").read_text()
    assert meta["passes"] == [PLANTED]
    replay = subprocess.run([sys.executable, str(folder / "repro.py")], capture_output=True, text=True,
                            cwd=folder, timeout=300)
    assert replay.returncode == 1, replay.stdout + replay.stderr
    assert "aot_eager" in replay.stdout and "still failing" in replay.stdout


def test_the_same_walk_keeping_every_write_stays_silent(tmp_path):
    # bounded by programs, not seconds: the silence means as much on a loaded machine as on an idle
    # one (alone 24 programs take about 30 s; beside the suite's heaviest tests on 2 cores one
    # program took 4 s), with a time cap far above either
    summary, _ = pyfuzz(tmp_path, CORRECT, 240, libfuzzer=["-runs=24"])
    # every program but libFuzzer's empty first input is judged
    assert summary["outcomes"].get("PASS", 0) >= 20, summary
    assert not [f for f in summary["findings"] if f["outcome"] in WRONG], summary
