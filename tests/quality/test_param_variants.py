"""Transformation parameters as a fuzzed dimension (--params): a planted tiling bug that only
non-default tile sizes show is found, its reproducer names the tile size and replays, and the
simplest failing tile size is reported; the correct twin stays silent with every tile size."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harnessgen import subjects
from harnessgen.plan.params import ParamOptions
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


PAIR_PLANTED = "harnessgen.zoo.planted:OffsetTilesFloors"
PAIR_CORRECT = "harnessgen.zoo.correct:OffsetTilesCeils"


def _first_match(spec: str, mode: str):
    found = subjects.load(PROGRAM).instances(spec, None, ParamOptions(mode))
    return [i for i in found if i.match_id == found[0].match_id]


@pytest.mark.fuzz
def test_a_bug_only_two_parameters_together_show_is_found_by_default(tmp_path):
    """The tiling loses elements only when its tile size and its offset both change: the
    variants that change one parameter at a time all pass; the default run's pair variants
    find it, and its correct twin stays silent with the same variants."""
    boundary = _first_match(PAIR_PLANTED, "boundary")
    assert all(len(i.params) <= 1 for i in boundary) and len(boundary) >= 8
    proc = run_cli(["fuzz", "--program", PROGRAM, "--transformation", PAIR_PLANTED, "--params", "boundary",
                    "--instance", ",".join(i.id for i in boundary), "--time", "2", "--jobs", "2", "--no-audit"],
                   tmp_path / "one-at-a-time")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert {r["verdict"] for r in summary_of(tmp_path / "one-at-a-time")["instances"]} == {"PASS"}

    planted, correct = _first_match(PAIR_PLANTED, "pairs"), _first_match(PAIR_CORRECT, "pairs")
    assert [sorted(i.params) for i in planted[1:]] == [["tile_offset", "tile_size"]] * 2
    proc = run_cli(["fuzz", "--program", PROGRAM, "--transformation", f"{PAIR_PLANTED},{PAIR_CORRECT}",
                    "--instance", ",".join(i.id for i in planted + correct), "--time", "5", "--jobs", "2",
                    "--no-audit", "--params-shrink-time", "0"], tmp_path / "default")
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = {r["id"]: r for r in summary_of(tmp_path / "default")["instances"]}
    assert {results[i.id]["verdict"] for i in correct} == {"PASS"}
    assert results[planted[0].id]["verdict"] == "PASS"
    assert {results[i.id]["verdict"] for i in planted[1:]} == {"MISMATCH"}
