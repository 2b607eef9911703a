"""NPBench's shapes, judged as a DaCe maintainer would have them judged: no bug harnessgen made,
and a real one CONFIRMED by DaCe alone.

On ``tests/programs/npbench_mini`` (a checkout in NPBench's layout, benchmarks of our own):
- DaCe's NestSDFG, MapTiling, MapTilingWithOverlap and StripMining stay silent. Before, the
  value ``checksum`` returns made its reference check a false finding against the frontend,
  NestSDFG there gave 5 MISMATCHes in harnessgen's own symbol output ``hg_symout_acc`` (the
  whole program agreed), and every MapTiling on ``segments`` was INVALID_SDFG (a JSON round trip
  of the program, not DaCe, broke it);
- the benchmark DaCe's frontend refuses is one line, and the others run;
- a wrong tiling (the zoo's OffByOneTiling) is found on ``window``, CONFIRMED: its bug folder's
  ``confirm.py`` (DaCe and NumPy only) exits 1, as does its reproducer."""
import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import PROGRAMS, run_cli, summary_of

ENV = {"HARNESSGEN_NPBENCH": str(PROGRAMS / "npbench_mini")}
FINDINGS = ("MISMATCH", "POST_CRASH", "POST_HANG", "OOB_WRITE", "RACE", "FAILED_TO_APPLY", "INVALID_SDFG",
            "BUILD_FAILURE", "CUTOUT_MISSED")


def test_correct_transformations_on_npbench_shapes_stay_silent(tmp_path):
    proc = run_cli(["fuzz", "--program", "npbench", "--transformation",
                    "NestSDFG,MapTiling,MapTilingWithOverlap,StripMining", "--time", "1", "--jobs", "2",
                    "--params", "default"], tmp_path, env=ENV)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "unparsable: not loaded, left out of the run" in proc.stderr, proc.stderr[-3000:]
    assert "reference check: 3 of 3 program(s) agree" in proc.stderr, proc.stderr[-3000:]
    entries = summary_of(tmp_path)["instances"]
    assert {e["program"] for e in entries} == {"checksum", "segments", "window"}
    told = [(e["id"], e["verdict"], e["message"][:200]) for e in entries if e["verdict"] in FINDINGS + ("ERROR",)]
    assert not told, told
    assert sum(e["transformation"] == "NestSDFG" and e["program"] == "checksum" for e in entries) >= 3


def test_a_wrong_tiling_is_confirmed_by_dace_alone(tmp_path):
    proc = run_cli(["fuzz", "--program", "npbench:window", "--transformation",
                    "harnessgen.zoo.planted:OffByOneTiling", "--time", "2", "--params", "default"], tmp_path, env=ENV)
    assert proc.returncode == 0, proc.stderr[-3000:]
    bugs = json.loads((tmp_path / "out" / "bugs.json").read_text())["bugs"]
    confirmed = [b for b in bugs if b["dace_alone"] == "CONFIRMED"]
    assert confirmed and confirmed[0]["kind"] == "MISMATCH", [(b["kind"], b["confirmation"]) for b in bugs]
    assert bugs[0]["dace_alone"] == "CONFIRMED", "confirmed bugs come first"
    folder = tmp_path / "out" / "bugs" / confirmed[0]["id"]
    assert "## DaCe alone: CONFIRMED" in (folder / "BUG.md").read_text()
    confirm = subprocess.run([sys.executable, "confirm.py"], cwd=folder / "confirm", capture_output=True, text=True,
                             timeout=600)
    assert confirm.returncode == 1 and "MISMATCH" in confirm.stdout, confirm.stdout + confirm.stderr[-2000:]
    repro = Path(confirmed[0]["representative"]["path"]) / "repro.py"
    replay = subprocess.run([sys.executable, str(repro)], capture_output=True, text=True, timeout=600)
    assert replay.returncode == 1, replay.stdout + replay.stderr[-2000:]
    assert f"{len(confirmed)} CONFIRMED (DaCe alone shows it on the whole program" in proc.stderr, proc.stderr[-2000:]
