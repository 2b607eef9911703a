"""A planted bug that no built-in program's shape exposes (a strided map made unit-step one
trip short) is found by a short campaign on a stream of generated programs, and its reproducer
replays; the correct twin stays silent on the same programs."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harnessgen import subjects
from tests.conftest import BUILD_CACHE, REPO, cores_to_myself

PLANTED = "harnessgen.zoo.planted:StrideCountFloors"
CORRECT = "harnessgen.zoo.correct:StrideCountCeils"
STREAM = "generated:0-7"


def test_no_built_in_program_has_the_shape_the_planted_bug_needs():
    for program in ("kernels", "cloudsc"):
        assert subjects.load(program).instances(PLANTED) == [], program


@pytest.mark.fuzz
def test_a_short_generated_campaign_finds_the_bug_only_generated_shapes_show(tmp_path):
    out = tmp_path / "out"
    cmd = [str(Path(sys.executable).with_name("harnessgen")), "campaign", "--program", STREAM,
           "--transformation", f"{PLANTED},{CORRECT}", "--budget", "3s", "--jobs", "2", "--out", str(out),
           "--work-dir", str(BUILD_CACHE), "--corpus-dir", str(tmp_path / "corpus"),
           "--crashes-dir", str(tmp_path / "crashes"), "--no-progress", "--reduce-time", "0", "--no-reference-check"]
    with cores_to_myself():
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    verdicts = {}
    for inst in summary["instances"]:
        verdicts.setdefault(inst["transformation"], []).append(inst)
    assert {i["verdict"] for i in verdicts["StrideCountCeils"]} == {"PASS"}
    planted = verdicts["StrideCountFloors"]
    assert len(planted) == len(verdicts["StrideCountCeils"]) >= 2
    found = [i for i in planted if i["verdict"] == "MISMATCH"]
    assert found, [i["verdict"] for i in planted]
    # the programs are generated ones, named so that the name alone regenerates them
    assert all(i["program"].split("+")[0].isdigit() for i in planted)
    finding = (out / found[0]["findings"][0]["path"]).resolve()     # relative to the run directory
    assert "generated/" in (finding / "README.md").read_text()
    replay = subprocess.run([sys.executable, "repro.py"], cwd=finding, capture_output=True, text=True, timeout=300)
    assert replay.returncode == 1, replay.stdout + replay.stderr
    assert "StrideCountFloors" in (out / "report.md").read_text()
