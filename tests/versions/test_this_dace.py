"""On whichever DaCe runs the suite (``make test`` runs these on the default DaCe and again on
the other one, ``make test-other-dace``): one planted bug per subject kind is found and its
reproducer replays, the correct twin stays silent, and the cutouts around loops (region
cutouts on DaCe 2.0, whose loops are LoopRegions) agree with their whole programs."""
import json
import subprocess
import sys
from pathlib import Path

import dace
import pytest

from tests.conftest import REPO, run_cli, summary_of

FINDINGS = {"MISMATCH", "OOB_WRITE", "POST_CRASH", "POST_HANG", "RACE"}
LOOP_BUGS = [
    ("trisolve", "harnessgen.zoo.planted:UnrollDropsIterations"),      # the remainder iteration dropped
    ("clip_small", "harnessgen.zoo.planted:UnrollLosesEntryLoad"),     # a load for the branch not redone
]


def fuzz(tmp: Path, program: str, spec: str, seconds: int, *extra: str):
    proc = run_cli(["fuzz", "--program", f"kernels:{program}", "--transformation", spec, "--all", "--time",
                    str(seconds), "--params", "default", "--no-reference-check", "--audit", *extra], tmp)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return summary_of(tmp)["instances"]


def replays(finding: Path, tmp: Path) -> bool:
    proc = run_cli(["replay", str(finding)], tmp)
    return proc.returncode == 1


@pytest.mark.parametrize("program,spec", LOOP_BUGS, ids=[s.rsplit(":", 1)[1] for _, s in LOOP_BUGS])
def test_a_planted_loop_bug_is_found_replays_and_shows_in_the_whole_program(tmp_path, program, spec):
    entries = fuzz(tmp_path, program, spec, 20, "--until-crash")
    found = [e for e in entries if e["verdict"] == "MISMATCH"]
    assert found, [(e["id"], e["verdict"], e["message"][:200]) for e in entries]
    first = found[0]
    assert replays(Path(first["findings"][0]["path"]), tmp_path)
    # the cutout around the loop computes what the loop computes in the program: the bug is
    # observable there, and no passing cutout hides a whole-program difference
    assert first["audit"]["verdict"] == "DIFFERS", first["audit"]
    assert not [e for e in entries if e["verdict"] == "CUTOUT_MISSED"], entries


def test_the_correct_unroll_stays_silent_and_its_cutouts_agree_with_their_programs(tmp_path):
    entries = []
    for program in ("trisolve", "clip_small"):
        entries += fuzz(tmp_path / program, program, "harnessgen.targets.cloudsc_xforms:UnrollByTwo", 10)
    assert entries and all(e["verdict"] == "PASS" for e in entries), [(e["id"], e["verdict"]) for e in entries]
    assert all(e["audit"]["verdict"] == "AGREES" for e in entries), [(e["id"], e["audit"]) for e in entries]


def test_a_match_inside_a_loop_is_cut_out_smaller_than_its_program(tmp_path):
    """TaskletFusion inside clip_small's loop: a cutout of its state (DaCe's own on 1.0.2; on
    2.0, where the state lies in a LoopRegion, harnessgen's region cutout), never the whole
    program; and judged, it agrees with the whole program."""
    proc = run_cli(["instances", "--program", "kernels:clip_small", "--transformation", "TaskletFusion",
                    "--params", "default", "--json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert rows and all(r["status"] == "PASS" for r in rows), rows
    for row in rows:
        assert "whole program" not in row["grown_for"] and "whole nested SDFG" not in row["grown_for"], row
    entries = fuzz(tmp_path, "clip_small", "TaskletFusion", 5)
    assert all(e["verdict"] == "PASS" and e["audit"]["verdict"] == "AGREES" for e in entries), entries


def test_a_planted_pass_bug_is_found_and_replays(tmp_path):
    entries = fuzz(tmp_path, "softmax", "harnessgen.zoo.planted:FuseStatesMissingViews", 5, "--until-crash")
    found = [e for e in entries if e["verdict"] in FINDINGS]
    assert found and found[0]["verdict"] == "MISMATCH", [(e["id"], e["verdict"]) for e in entries]
    assert replays(Path(found[0]["findings"][0]["path"]), tmp_path)


@pytest.mark.pyfuzz
@pytest.mark.usefixtures("exclusive_cores")
def test_a_planted_bug_in_dace_auto_optimize_is_found_through_its_frontend(tmp_path):
    """pyfuzz finds the planted tiling bug in DaCe's auto_optimize pipeline, blames the
    pipeline (not the frontend), shrinks the program, and its reproducer and BUG.md replay it
    (its correct twin stays silent: tests/quality/test_pyfuzz_dace.py)."""
    out, crashes = tmp_path / "run", tmp_path / "crashes"
    cmd = [str(Path(sys.executable).with_name("harnessgen")), "pyfuzz", "--compiler", "dace", "--time", "90",
           "--out", str(out), "--crashes", str(crashes), "--dace-pass", "harnessgen.zoo.planted:TilingWithoutRemainder",
           "--dims", "2-8", "--shrink-time", "20", "--seed", "1"]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    mismatches = [f for f in summary["findings"] if f["outcome"] == "MISMATCH" and "auto_optimize" in f["signature"][2]]
    assert mismatches, summary["outcomes"]
    finding = mismatches[0]
    assert finding["seconds_to_find"] is not None and finding["seconds_to_find"] <= 90
    folder = crashes / "pyfuzz" / "dace" / finding["directory"].rsplit("/", 1)[1]
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["versions"]["dace"] == dace.__version__
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
