"""De-duplication keys: outcome, container and a coarse region of the difference."""
from harnessgen.core.outcome import Outcome
from harnessgen.harness.replay import ReplayResult
from harnessgen.triage.classify import TriageResult, region
from tests.unit.test_layout import LAYOUT


def mismatch(index, n=4, m=2):
    return ReplayResult(Outcome.MISMATCH, container="A", symbols={"N": n, "M": m, "K": 1},
                        detail={"multi_index": index})


def test_mismatch_region_is_first_inner_last_per_dimension():
    assert region(mismatch([0, 1]), LAYOUT) == ("first", "last")
    assert region(mismatch([2, 0]), LAYOUT) == ("inner", "first")
    assert region(mismatch([3, 1]), LAYOUT) == ("last", "last")


def test_out_of_bounds_region_is_the_side_hit():
    below = ReplayResult(Outcome.OOB_WRITE, container="A", detail={"offset": -8, "bytes": 64})
    above = ReplayResult(Outcome.OOB_WRITE, container="A", detail={"offset": 64, "bytes": 64})
    assert region(below, LAYOUT) == ("below",) and region(above, LAYOUT) == ("above",)


def test_crash_region_is_the_signal():
    crash = ReplayResult(Outcome.POST_CRASH, message="post died (SIGSEGV)")
    assert region(crash, LAYOUT) == ("SIGSEGV",)


def test_verdict_is_the_most_severe_finding_and_pass_without_findings():
    from pathlib import Path

    from harnessgen.triage.classify import Finding

    def finding(outcome):
        return Finding(key=(outcome.name, "A", ()), outcome=outcome, container="A", folder=Path("x"), raw=[], meta={})

    assert TriageResult([], [{"input": "x"}], ["y"], 2, 0.0).verdict == Outcome.PASS
    both = TriageResult([finding(Outcome.MISMATCH), finding(Outcome.POST_CRASH)], [], [], 2, 0.0)
    assert both.verdict == Outcome.POST_CRASH
