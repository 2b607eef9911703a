"""A bounded run's triage starts no replay long after the bound: an instance that starts at
the bound's end gets ``TRIAGE_MIN_S`` for its raw crashes, one before it until the bound's end
and ``TRIAGE_PAST_BOUND_S``; an unbounded run's triage has no deadline."""
import dataclasses
import time

from harnessgen.core.records import FuzzOptions
from harnessgen.plan.instances import Instance
from harnessgen.triage.classify import TRIAGE_MIN_S, TRIAGE_PAST_BOUND_S, TriageOptions


def _instance():
    return Instance(id="X-1", target="t", program="p", transformation="X", transformation_spec="X", match={})


def test_an_unbounded_run_triages_without_a_deadline(tmp_path):
    assert TriageOptions.for_instance(FuzzOptions(out_dir=tmp_path), _instance()).deadline is None


def test_a_bounded_run_stops_replaying_one_instance_time_past_its_bound(tmp_path):
    ends = time.time() + 100.0
    before = time.monotonic()
    options = TriageOptions.for_instance(dataclasses.replace(FuzzOptions(out_dir=tmp_path), run_ends_at=ends),
                                         _instance())
    assert before + 100.0 + TRIAGE_PAST_BOUND_S - 1.0 <= options.deadline <= time.monotonic() + 100.0 + TRIAGE_PAST_BOUND_S


def test_an_instance_started_at_the_bound_still_gets_its_minimum(tmp_path):
    past = dataclasses.replace(FuzzOptions(out_dir=tmp_path), run_ends_at=time.time() - 600.0)
    before = time.monotonic()
    options = TriageOptions.for_instance(past, _instance())
    assert before + TRIAGE_MIN_S - 1.0 <= options.deadline <= time.monotonic() + TRIAGE_MIN_S
