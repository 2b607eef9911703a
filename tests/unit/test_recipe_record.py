"""Recording a recipe: every change it made through DaCe is a step, with where the recipe made
it; nothing it did not do is one; DaCe is left as it was."""
import functools

import pytest

from harnessgen.dacecompat import copy_sdfg
from harnessgen.recipe.record import Store, record
from tests.conftest import PROGRAMS

RECIPES = PROGRAMS / "recipes.py"


@functools.lru_cache(maxsize=None)
def _program():
    from harnessgen.targets.loaders import load_python_program

    return load_python_program(RECIPES, "smooth").programs["smooth"].sdfg(False)


def _record(tmp_path, recipe: str):
    return record(copy_sdfg(_program()), f"{RECIPES}:{recipe}", tmp_path / recipe, "smooth")


def test_each_step_says_what_it_applied_and_where_the_recipe_asked(tmp_path):
    recording = _record(tmp_path, "planted")
    names = [s.name for s in recording.steps]
    assert "MapFusion" in names or "MapFusionVertical" in names, names
    planted = [s for s in recording.steps if s.name == "TilingWithoutRemainder"]
    assert len(planted) == 1, names
    step = planted[0]
    line = next(n for n, text in enumerate(RECIPES.read_text().splitlines(), 1) if "the wrong step" in text)
    assert step.where == f"recipes.py:{line}"
    assert step.chain[0].startswith("planted (") and "apply_to" in step.chain
    assert step.kind == "pattern" and not step.unjudgeable and step.match["_subgraph"]
    # the steps after it: each with its own place in the recipe's calls
    later = recording.steps[step.index:]
    assert any(s.name == "MapTiling" and "apply_to" in s.chain for s in later), [s.chain for s in later]
    assert [s.index for s in recording.steps] == list(range(1, len(recording.steps) + 1))
    # every step's program is kept, and the recipe's result
    store = Store(tmp_path / "planted")
    assert all(store.path(s.before).is_file() for s in recording.steps)
    assert store.path(recording.final).is_file() and recording.final != recording.original


def test_a_pass_is_kept_after_it_a_pattern_is_applied_again(tmp_path):
    recording = _record(tmp_path, "correct")
    passes = [s for s in recording.steps if s.kind == "pass"]
    patterns = [s for s in recording.steps if s.kind == "pattern" and not s.unjudgeable]
    assert passes and patterns
    assert all(s.after for s in passes) and not any(s.after for s in patterns)


@pytest.mark.parametrize("recipe", ["nothing", "elsewhere"])
def test_what_the_recipe_did_not_do_to_the_program_is_no_step(tmp_path, recipe):
    recording = _record(tmp_path, recipe)
    assert recording.steps == [] and not recording.error


def test_a_recipe_that_raises_keeps_its_steps_and_the_error(tmp_path):
    recording = _record(tmp_path, "raises")
    assert recording.steps and "the recipe's own mistake" in recording.error
    assert not any(s.error for s in recording.steps)


def test_a_recipe_that_returns_another_sdfg_is_told_what_was_recorded(tmp_path):
    recording = _record(tmp_path, "returns_a_copy")
    assert recording.steps == [] and "optimize that one in place" in recording.error


def test_a_class_of_the_recipes_own_is_loaded_again_from_its_file(tmp_path):
    recording = _record(tmp_path, "own_class")
    own = [s for s in recording.steps if s.name == "OwnTiling"]
    assert len(own) == 1 and own[0].spec == f"{RECIPES}:OwnTiling", [(s.name, s.spec) for s in recording.steps]
    assert next(s for s in recording.steps if s.name.startswith("MapFusion")).spec.startswith("MapFusion")


def test_dace_is_left_as_it_was(tmp_path):
    from dace.transformation import pass_pipeline as ppl
    from dace.transformation.dataflow import MapFusion

    before = (MapFusion.__dict__.get("apply"), ppl.Pipeline.__dict__["apply_pass"])
    _record(tmp_path, "planted")
    assert (MapFusion.__dict__.get("apply"), ppl.Pipeline.__dict__["apply_pass"]) == before


def test_a_recording_is_made_once(tmp_path):
    first = _record(tmp_path, "correct")
    again = _record(tmp_path, "correct")
    assert again.to_json() == first.to_json()


def test_steps_replayed_on_the_program_make_what_the_recipe_made(tmp_path):
    """What the shrinking of a bisected recipe rests on: the steps up to one, made again on the
    program before the recipe, give the program the recipe had there; a step whose nodes an
    earlier step made is found only where that step is made too."""
    import uuid

    from harnessgen.plan.passes import fingerprint
    from harnessgen.recipe.record import GUID_MARK
    from harnessgen.recipe.replay import replayable, replayed

    recording = _record(tmp_path, "planted")
    store = Store(tmp_path / "planted")
    planted = next(s.index for s in recording.steps if s.name == "TilingWithoutRemainder")
    assert all(replayable(s) for s in recording.steps[:planted])
    program, applied = replayed(recording, store, list(range(1, planted + 1)), "again")
    assert applied == planted
    assert fingerprint(program) == fingerprint(store.program(recording.step(planted + 1).before, "again"))

    def maker(guid: str) -> int:        # the seed of the step that made a node (0: the program's own)
        number = uuid.UUID(guid).int
        return (number >> 48) & 0xFFFFFFFF if number >> 112 == GUID_MARK else 0

    # a later step bound a node an earlier step made: alone it finds nothing, after it it applies
    later = next(s for s in recording.steps if s.kind == "pattern" and any(maker(g) for g in s.guids.values()))
    assert replayable(later) and replayed(recording, store, [later.index], "again")[1] == 0
    assert replayed(recording, store, list(range(1, later.index + 1)), "again")[1] == later.index
