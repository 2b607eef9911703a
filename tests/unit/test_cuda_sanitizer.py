"""compute-sanitizer's reports are read into verdicts (the synchronization oracle's second
witness); the texts follow the tool's documented report format."""
from harnessgen.core.outcome import Outcome
from harnessgen.cuda import sanitizer

RACECHECK = """\
========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at 0x3d0 in /src/kernels/transpose.cu:53:transpose_racy(const double *, double *, int, int)
=========     and Read access at 0x4c0 in /src/kernels/transpose.cu:57:transpose_racy(const double *, double *, int, int) [384 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
"""

RACECHECK_CLEAN = """\
========= COMPUTE-SANITIZER
========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)
"""

SYNCCHECK = """\
========= COMPUTE-SANITIZER
========= Barrier error detected. Divergent thread(s) in block
=========     at 0x2a0 in /src/kernels/rotate.cu:25:rotate_divergent_barrier(const float *, float *, int)
=========     by thread (20,0,0) in block (1,0,0)
=========
========= ERROR SUMMARY: 1 error
"""

SYNCCHECK_CLEAN = "========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n"


def test_a_racecheck_hazard_is_a_race_with_both_source_lines():
    report = sanitizer.parse("racecheck", RACECHECK, 0)
    assert report.errors == 1 and report.verdict == Outcome.RACE
    assert report.locations == ["transpose.cu:53", "transpose.cu:57"]


def test_a_synccheck_barrier_error_is_barrier_divergence_at_its_line():
    report = sanitizer.parse("synccheck", SYNCCHECK, 0)
    assert report.errors == 1 and report.verdict == Outcome.BARRIER_DIVERGENCE
    assert report.locations == ["rotate.cu:25"]


def test_clean_reports_give_no_verdict():
    reports = [sanitizer.parse("racecheck", RACECHECK_CLEAN), sanitizer.parse("synccheck", SYNCCHECK_CLEAN)]
    assert [r.errors for r in reports] == [0, 0]
    assert sanitizer.classify(reports) is None


def test_a_divergent_barrier_outranks_the_races_around_it():
    reports = [sanitizer.parse("racecheck", RACECHECK), sanitizer.parse("synccheck", SYNCCHECK)]
    assert sanitizer.classify(reports) == Outcome.BARRIER_DIVERGENCE
    assert sanitizer.classify(reports[:1]) == Outcome.RACE


def test_a_report_survives_its_json_round_trip():
    report = sanitizer.parse("racecheck", RACECHECK)
    again = sanitizer.SanitizerReport(**{k: v for k, v in report.to_json().items() if k != "verdict"})
    assert again == report and report.to_json()["verdict"] == "RACE"


def test_the_synchronization_verdict_weighs_sanitizer_then_self_disagreement():
    from harnessgen.gpukernels.kernel_triage import sync_verdict

    race = [sanitizer.parse("racecheck", RACECHECK)]
    divergent = [sanitizer.parse("synccheck", SYNCCHECK)]
    assert sync_verdict(Outcome.MISMATCH, divergent, 20, 20) == Outcome.BARRIER_DIVERGENCE
    assert sync_verdict(Outcome.MISMATCH, race, 0, 20) == Outcome.RACE          # outputs agreed, hazards did not
    assert sync_verdict(Outcome.MISMATCH, [], 3, 20) == Outcome.RACE            # wrong in some launches only
    assert sync_verdict(Outcome.MISMATCH, [], 20, 20) == Outcome.MISMATCH       # wrong every time: plain bug
    assert sync_verdict(Outcome.OOB_WRITE, [], 0, 20) == Outcome.OOB_WRITE
