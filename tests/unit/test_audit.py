"""The audit's classification: CUTOUT_MISSED, observable, latent."""
from harnessgen.audit import AGREES, CUTOUT_MISSED, DIFFERS, SKIPPED, AuditRecord, classify, is_cheap


def test_a_passing_cutout_of_a_program_that_differs_is_cutout_missed():
    assert classify("PASS", AuditRecord(verdict=DIFFERS)) == CUTOUT_MISSED
    assert classify("PASS", AuditRecord(verdict="FAILED_TO_APPLY")) == CUTOUT_MISSED
    assert classify("PASS", AuditRecord(verdict=AGREES)) is None


def test_findings_are_observable_or_latent():
    assert classify("MISMATCH", AuditRecord(verdict=DIFFERS)) == "observable"
    assert classify("FAILED_TO_APPLY", AuditRecord(verdict="FAILED_TO_APPLY")) == "observable"
    assert classify("RACE", AuditRecord(verdict=AGREES)) == "latent"


def test_a_skipped_audit_says_nothing():
    assert classify("PASS", AuditRecord(verdict=SKIPPED)) is None
    assert classify("MISMATCH", AuditRecord(verdict=SKIPPED)) is None


def test_only_small_programs_are_audited_by_default():
    from tests.conftest import program_sdfg

    assert is_cheap(program_sdfg("gemm"))
