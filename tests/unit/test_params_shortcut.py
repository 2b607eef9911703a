"""A variant's static finding whose match's defaults, prepared before in the same run, failed
alike: its simplest parameters are the defaults, found without preparing anything again."""
from pathlib import Path

from harnessgen import subjects
from harnessgen.core import shared_pairs
from harnessgen.core.records import FuzzOptions, InstanceResult
from harnessgen.plan.params import ParamOptions

PROGRAM = "kernels:elementwise_chain"
SPEC = "harnessgen.zoo.planted:OffsetTilesFloors"


def _two_parameter_variant(subject):
    found = subject.instances(SPEC, None, ParamOptions("pairs"))
    variant = next(i for i in found if len(i.params) >= 2)
    return variant, next(i for i in found if i.id == variant.match_id)


def _simplified(subject, variant, options, prepared):
    subject.prepare = lambda *args, **kwargs: prepared.append(args[1].id)
    result = InstanceResult(id=variant.id, transformation=variant.transformation, program=variant.program,
                            target=variant.target, verdict="FAILED_TO_APPLY")
    subject._simplify_params(SPEC, variant, options, result)
    return result.params


def test_the_defaults_failing_alike_are_the_simplest_without_a_new_prepare(tmp_path):
    subject = subjects.load(PROGRAM)
    variant, defaults = _two_parameter_variant(subject)
    options = FuzzOptions(out_dir=tmp_path / "run", crashes_root=tmp_path / "crashes", params_shrink_s=30)
    shared_pairs.record_prepared(options.out_dir, defaults.id, "FAILED_TO_APPLY")
    prepared = []
    record = _simplified(subject, variant, options, prepared)
    assert prepared == []
    assert record["simplest"] == {} and record["simplest_instance"] == defaults.id
    assert record["tried"] == 1 and record["complete"]
    assert record["findings"] == [str(options.keep_dir(defaults) / "failed_to_apply")]


def test_defaults_with_another_verdict_leave_the_greedy_search_to_decide(tmp_path):
    subject = subjects.load(PROGRAM)
    variant, defaults = _two_parameter_variant(subject)
    options = FuzzOptions(out_dir=tmp_path / "run", crashes_root=tmp_path / "crashes", params_shrink_s=30)
    shared_pairs.record_prepared(options.out_dir, defaults.id, shared_pairs.BUILT)
    prepared = []
    record = _simplified(subject, variant, options, prepared)
    # every simpler candidate was prepared (here: none failed alike), the defaults never assumed
    assert prepared and defaults.id not in prepared and record["simplest"] == variant.params


def test_a_variant_whose_cutout_takes_the_change_is_not_built_to_ask_whether_it_fails_to_apply(tmp_path, monkeypatch):
    """Failing to apply is the cutout's answer: the simpler variants the cutout takes are
    judged not alike without a build, and the simplest failing one is still found."""
    from harnessgen.subjects import sdfg as sdfg_subject
    from tests.conftest import PROGRAMS

    spec = f"{PROGRAMS / 'broken_xforms.py'}:RaisesWhenStrict"
    subject = subjects.load("kernels:sigmoid")
    found = subject.instances(spec, None, ParamOptions("pairs"))
    variant = next(i for i in found if i.params == {"strict": True, "wide": True})
    built = []
    monkeypatch.setattr(sdfg_subject, "prepare_pair", lambda *args, **kwargs: built.append(args) or None)
    options = FuzzOptions(out_dir=tmp_path / "run", crashes_root=tmp_path / "crashes", params_shrink_s=30,
                          work_dir=tmp_path / "work")
    result = InstanceResult(id=variant.id, transformation=variant.transformation, program=variant.program,
                            target=variant.target, verdict="FAILED_TO_APPLY")
    subject._simplify_params(spec, variant, options, result)
    assert built == []
    assert result.params["simplest"] == {"strict": True} and result.params["complete"]
    kept = Path(result.params["findings"][0])
    assert kept.name == "failed_to_apply" and "strict variant gave up" in (kept / "error.txt").read_text()
    # what the cutout took was not recorded as prepared: a later question (a build failure's) asks again
    taken = subject.change(spec).with_params(variant, {"wide": True})
    assert shared_pairs.prepared(options.out_dir, taken.id) is None
