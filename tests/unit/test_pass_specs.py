"""Passes and pipelines as changes: how a spec is resolved, what a pass changed, the
bisection's searches, and the unsimplified form of a program."""
import pytest
from hypothesis import given, settings, strategies as st

from harnessgen.checks.pipeline_bisect import first_failing_prefix
from harnessgen.core.errors import ConfigError
from harnessgen.cutout.changes import Passes, Patterns, load_change
from harnessgen.plan import passes
from harnessgen.plan.instances import Instance
from tests.conftest import kernels

PLANTED_PASS = "harnessgen.zoo.planted:FuseStatesMissingViews"
PLANTED_PIPELINE = "harnessgen.zoo.planted:SimplifyMissingViews"


def test_specs_resolve_to_passes_pipelines_or_patterns():
    simplify = passes.find_pass("simplify")
    assert simplify.name == "simplify" and simplify.is_pipeline
    assert simplify.members == passes.simplify_member_names()
    fuse = passes.find_pass("FuseStates")
    assert fuse.name == "FuseStates" and not fuse.is_pipeline
    assert passes.find_pass("MapTiling") is None                       # a pattern transformation
    assert isinstance(load_change("MapTiling"), Patterns)
    assert isinstance(load_change(PLANTED_PASS), Passes)
    planted = passes.find_pass(PLANTED_PIPELINE)
    assert "FuseStatesMissingViews" in planted.members and "FuseStates" not in planted.members


def test_a_misspelt_pass_is_named_in_the_error():
    with pytest.raises(ConfigError, match="FuseStates"):
        load_change("FuseState")


def test_changed_paths_name_what_a_pass_changed_and_nothing_else():
    softmax = kernels().programs["softmax"].sdfg(simplified=False)
    fuse = passes.find_pass("FuseStates")
    assert passes.changed_paths(softmax, passes.applied_copy(fuse, softmax)) == [""]
    untouched = passes.applied_copy(fuse, softmax, limit=0)
    assert passes.fingerprint(untouched) == passes.fingerprint(softmax)
    assert passes.changed_paths(softmax, untouched) == []


def test_a_nested_sdfg_the_pass_changed_is_an_instance_of_its_own():
    target = kernels()
    change = load_change("simplify")
    found = change.instances(target, [target.programs["clip_small"]],
                             lambda name, simplified: target.programs[name].sdfg(simplified), None)
    paths = sorted(i.match["sdfg"] for i in found)
    assert paths[0] == "" and len(paths) == 2 and paths[1].startswith("/")
    assert all(not i.simplified for i in found)


def test_steps_can_be_limited_and_filtered():
    softmax = kernels().programs["softmax"].sdfg(simplified=False)
    pipeline = passes.find_pass("simplify")
    steps = passes.run_pass(pipeline, passes.applied_copy(pipeline, softmax, limit=0)).applied
    assert len(steps) >= 2
    assert passes.run_pass(pipeline, passes.applied_copy(pipeline, softmax, limit=0), limit=1).applied == steps[:1]
    only = passes.run_pass(pipeline, passes.applied_copy(pipeline, softmax, limit=0), only=["FuseStates"]).applied
    assert set(only) == {"FuseStates"}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 30), min_size=1, max_size=12, unique=True), st.data())
def test_ddmin_keeps_exactly_what_a_monotone_failure_needs(items, data):
    needed = set(data.draw(st.lists(st.sampled_from(items), min_size=1, unique=True)))
    calls = []

    def fails(subset):
        calls.append(subset)
        return needed <= set(subset)

    result = passes.minimal_subset(list(items), fails)
    assert set(result) == needed
    assert result == [x for x in items if x in needed]                  # the pipeline's order kept


@given(st.integers(1, 60), st.data())
def test_thefirst_failing_prefix_is_found(count, data):
    first = data.draw(st.integers(1, count))
    assert first_failing_prefix(count, lambda k: k >= first) == first


def test_unsimplified_instances_are_other_instances():
    from harnessgen.subjects import plan

    simplified = plan("kernels:gemm", "MapTiling").planned
    written = plan("kernels:gemm", "MapTiling", simplify=False).planned
    assert simplified and written
    assert all(inst.simplified for _, inst in simplified) and not any(inst.simplified for _, inst in written)
    assert not {i.id for _, i in simplified} & {i.id for _, i in written}


def test_an_instance_record_without_the_form_is_a_simplified_one():
    record = {"id": "X-1", "target": "kernels", "program": "gemm", "transformation": "MapTiling",
              "transformation_spec": "MapTiling", "match": {}, "description": ""}
    assert Instance.from_json(record).simplified


def test_the_targets_default_to_simplify_and_each_of_its_passes_as_dace_lists_them():
    from dace.transformation.passes.simplify import SIMPLIFY_PASSES

    from harnessgen.dacecompat import NEWER_PASSES, NEWER_TRANSFORMATIONS, present
    from harnessgen.targets import resolve

    simplify = ["simplify"] + [cls.__name__ for cls in SIMPLIFY_PASSES]
    newer = present(NEWER_TRANSFORMATIONS + NEWER_PASSES)
    for name in ("kernels", "cloudsc", "generated"):
        target, _ = resolve(name)
        defaults = target.default_transformations
        assert defaults[-len(simplify):] == simplify, name
        # what only a newer DaCe has is in every target's defaults where this DaCe has it
        assert set(newer) <= set(defaults) or name == "generated", (name, set(newer) - set(defaults))
        assert len(defaults) == len(set(defaults)), name


def test_a_pass_that_needs_constructor_arguments_is_refused_not_a_finding():
    """harnessgen makes each pass without arguments: PatternMatchAndApplyRepeated(transformations)
    would fail to apply everywhere, a failure of harnessgen's making."""
    import pytest as _pytest

    from harnessgen.core.errors import ConfigError
    from harnessgen.plan.passes import builtin_passes, find_pass

    spec = "dace.transformation.passes.pattern_matching:PatternMatchAndApplyRepeated"
    with _pytest.raises(ConfigError, match="transformations"):
        find_pass(spec)
    assert "PatternMatchAndApplyRepeated" not in builtin_passes()
