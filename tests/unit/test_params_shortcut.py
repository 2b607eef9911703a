"""A variant's static finding whose match's defaults, prepared before in the same run, failed
alike: its simplest parameters are the defaults, found without preparing anything again."""
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
