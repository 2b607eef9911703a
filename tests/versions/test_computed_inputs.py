"""A region cutout that took in the blocks computing its inputs judges as faithfully as any
other: on ``outer_then_sum`` (``tests/programs/computed_inputs.py``) the reversed loop is cut
out with the state before it (the fuzzer makes the 16 values of x, not the 256 of the
transient), a planted unrolling that drops the remainder iteration is found there, with a
reproducer that replays and a difference the whole program shows, and the correct LoopToMap
stays silent."""
import json
import subprocess
import sys
from pathlib import Path

from harnessgen.dacecompat import has_regions
from tests.conftest import PROGRAMS, REPO, run_cli, summary_of


def test_a_planted_bug_is_found_through_a_cutout_that_took_in_its_inputs_and_a_correct_change_passes(tmp_path):
    proc = run_cli(["fuzz", "--program", f"{PROGRAMS / 'computed_inputs.py'}:outer_then_sum", "--transformation",
                    "LoopToMap,harnessgen.zoo.planted:UnrollDropsIterations", "--time", "2",
                    "--no-reference-check", "--audit"], tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    entries = {e["transformation"]: e for e in summary_of(tmp_path)["instances"]}
    assert set(entries) == {"LoopToMap", "UnrollDropsIterations"}, sorted(entries)
    correct, planted = entries["LoopToMap"], entries["UnrollDropsIterations"]
    assert correct["verdict"] == "PASS", correct["message"]
    assert planted["verdict"] == "MISMATCH", planted["message"]
    assert planted["audit"].get("classification") == "observable", planted["audit"]
    regions = has_regions_here()     # else DaCe 1.0.2's own multi-state cutout, which takes the state in too
    for entry in (correct, planted):
        assert entry["input_config_after"].startswith("32 "), entry["input_config_after"]
        manifest = json.loads((Path(entry["build_dir"]) / "manifest.json").read_text())
        if regions:
            assert entry["input_config_before"].startswith("272 "), entry["input_config_before"]
            assert "block(s) before it that compute its inputs" in manifest["grown_for"], manifest["grown_for"]
    [finding] = planted["findings"]
    replay = subprocess.run([sys.executable, str(Path(finding["path"]) / "repro.py")], capture_output=True,
                            text=True, cwd=REPO, timeout=300)
    assert replay.returncode == 1, replay.stdout + replay.stderr


def has_regions_here() -> bool:
    import dace

    @dace.program
    def probe(A: dace.float64[4]):
        for i in range(3):
            A[i + 1] = A[i]

    return has_regions(probe.to_sdfg(simplify=True))
