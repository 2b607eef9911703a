"""Transformation parameters as a fuzzed dimension (--params): a planted tiling bug that only
non-default tile sizes show is found, its reproducer names the tile size and replays, and the
simplest failing tile size is reported; the correct twin stays silent with every tile size."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harnessgen import subjects
from harnessgen.params import ParamOptions
from tests.conftest import run_cli, summary_of

PLANTED = "harnessgen.zoo.planted:TileCountFloors"
CORRECT = "harnessgen.zoo.correct:TileCountCeils"
PROGRAM = "kernels:elementwise_chain"


def _one_match_variants(spec: str):
    """Every boundary variant of the first match, the defaults first."""
    found = subjects.load(PROGRAM).instances(spec, None, ParamOptions("boundary"))
    first = found[0].match_id
    return [i for i in found if i.match_id == first]


@pytest.mark.fuzz
def test_a_bug_only_other_parameters_show_is_found_and_named(tmp_path):
    planted, correct = _one_match_variants(PLANTED), _one_match_variants(CORRECT)
    assert len(planted) == len(correct) >= 6
    ids = [i.id for i in planted + correct]
    proc = run_cli(["fuzz", "--program", PROGRAM, "--transformation", f"{PLANTED},{CORRECT}", "--params", "boundary",
                    "--instance", ",".join(ids), "--time", "3", "--jobs", "2", "--no-audit",
                    "--params-shrink-time", "60"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = summary_of(tmp_path)
    results = {r["id"]: r for r in summary["instances"]}
    assert set(results) == set(ids)

    # the correct tiling: silent with every tile size
    assert {results[i.id]["verdict"] for i in correct} == {"PASS"}
    # the planted one: right with its default tile size, wrong with some other
    assert results[planted[0].id]["verdict"] == "PASS" and not planted[0].params
    failing = [i for i in planted if results[i.id]["verdict"] != "PASS"]
    assert failing and {results[i.id]["verdict"] for i in failing} == {"MISMATCH"}
    for inst in failing:
        size = inst.params["tile_size"]
        assert size not in (1, 64) and size < 16              # a partial tile only exists below the extent
        finding = Path(results[inst.id]["findings"][0]["path"])
        meta = json.loads((finding / "meta.json").read_text())
        assert meta["params"] == {"tile_size": size} and meta["transformation_json"]["tile_size"] == size
        assert f"tile_size={size}" in (finding / "README.md").read_text()
        assert f"tile_size={size}" in (finding / "repro.py").read_text().split('"""')[1]
        record = results[inst.id]["params"]
        assert record["values"] == {"tile_size": size} and record["match"] == planted[0].id
        assert record["simplest"]["tile_size"] <= size
    # the simplest failing parameters, with a reproducer of their own that replays
    widest = max(failing, key=lambda i: i.params["tile_size"])
    record = results[widest.id]["params"]
    assert record["simplest"]["tile_size"] < widest.params["tile_size"], record
    simplest = Path(record["findings"][0])
    assert json.loads((simplest / "meta.json").read_text())["params"] == record["simplest"]
    replay = subprocess.run([sys.executable, "repro.py"], cwd=simplest, capture_output=True, text=True, timeout=300)
    assert replay.returncode == 1, replay.stdout + replay.stderr
    # per transformation: the match and how many parameter variants it was judged with
    rows = {row["transformation"]: row for row in summary["per_transformation"]}
    assert rows["TileCountFloors"]["matches"] == 1
    assert rows["TileCountFloors"]["param_variants"] == len(planted) - 1
    assert "parameter variants" in (tmp_path / "out" / "report.md").read_text()
