"""A user's own optimization, judged step by step: a wrong step planted among the others is
named as the first wrong one, with the line of the recipe that made it and a reproducer that
replays; the same recipe without it gives no finding."""
import json

import pytest

from tests.conftest import PROGRAMS, run_cli

RECIPES = PROGRAMS / "recipes.py"
PROGRAM = f"{RECIPES}:smooth"


def _recipe(tmp_path, recipe: str):
    proc = run_cli(["recipe", "--program", PROGRAM, "--recipe", f"{RECIPES}:{recipe}", "--time", "4"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc, json.loads((tmp_path / "out" / "recipe.json").read_text())


@pytest.mark.fuzz
def test_the_planted_step_is_named_first_with_a_reproducer_that_replays(tmp_path):
    proc, report = _recipe(tmp_path, "planted")
    first = report["first_wrong"]
    assert first is not None, [(s["index"], s["name"], s["verdict"]) for s in report["steps"]]
    line = next(n for n, text in enumerate(RECIPES.read_text().splitlines(), 1) if "the wrong step" in text)
    assert (first["name"], first["verdict"], first["where"]) == ("TilingWithoutRemainder", "MISMATCH",
                                                                   f"recipes.py:{line}")
    assert report["wrong"] == 1, [(s["index"], s["name"], s["verdict"]) for s in report["steps"]]
    assert len(report["steps"]) > 10 and report["judged"] == len(report["steps"])
    assert f"first wrong step: {first['index']} of {len(report['steps'])}" in " ".join((proc.stdout + proc.stderr).split())
    replayed = run_cli(["replay", first["reproducer"]], tmp_path)
    assert replayed.returncode == 1 and "MISMATCH" in replayed.stdout, replayed.stdout[-2000:]
    # the whole recipe differs too, and its bisection comes to the same step
    whole = report["whole_recipe"]
    assert whole["verdict"] == "MISMATCH" and whole["bisect"]["first_step"] == first["index"], whole
    # and, replayed alone on the program, the planted step is the fewest steps that still change it
    assert whole["bisect"]["minimal_steps"] == [first["index"]], whole["bisect"]
    assert (tmp_path / "out" / "recipe.md").read_text().count("| MISMATCH |") == 1


@pytest.mark.fuzz
def test_a_correct_recipe_gives_no_finding(tmp_path):
    _, report = _recipe(tmp_path, "correct")
    assert report["first_wrong"] is None and report["wrong"] == 0
    assert report["judged"] == len(report["steps"]) > 10
    assert report["whole_recipe"]["verdict"] == "PASS"
    assert {s["verdict"] for s in report["steps"]} == {"PASS"}, [(s["index"], s["name"], s["verdict"])
                                                                 for s in report["steps"]]
