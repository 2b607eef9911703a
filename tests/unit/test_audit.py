"""The audit's classification: CUTOUT_MISSED, observable, latent."""
from harnessgen.checks.audit import (AGREES, AUDIT_MAX_SIZE, CUTOUT_MISSED, DIFFERS, SKIPPED, WHOLE_PROGRAM_FINDING,
                                     AuditOptions, AuditRecord, audit, classify, is_cheap)
from harnessgen.harness.judge import JudgeOptions


def test_a_passing_cutout_of_a_program_that_differs_is_cutout_missed():
    assert classify("PASS", AuditRecord(verdict=DIFFERS)) == CUTOUT_MISSED
    assert classify("PASS", AuditRecord(verdict=AGREES)) is None


def test_a_whole_program_that_fails_statically_is_a_finding_of_its_own_never_cutout_missed():
    for verdict in ("BUILD_FAILURE", "FAILED_TO_APPLY", "INVALID_SDFG"):
        assert classify("PASS", AuditRecord(verdict=verdict)) == WHOLE_PROGRAM_FINDING


def test_the_whole_programs_static_failure_gets_its_reproducer(tmp_path):
    """Nothing runs: the record names the whole program's static finding (pre and post kept)."""
    from harnessgen.cutout.extract import whole_program_pair
    from tests.conftest import program_sdfg

    def invalid(post):
        post.arrays["X"].shape = (1, 2)      # a container whose shape disagrees with its memlets

    sdfg = program_sdfg("sigmoid")
    record = audit(lambda: whole_program_pair(sdfg, "whole", transform=invalid),
                   AuditOptions(keep_root=tmp_path / "audit", judge=JudgeOptions(work_dir=tmp_path / "work", max_size=AUDIT_MAX_SIZE)))
    assert record.verdict == "INVALID_SDFG" and record.finding and (tmp_path / "audit" / "invalid_sdfg").is_dir()
    assert classify("PASS", record) == WHOLE_PROGRAM_FINDING


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


def test_the_whole_program_is_built_as_dace_builds_it(tmp_path):
    """A change that leaves the program reading a symbol it no longer declares validates, and
    harnessgen's harness declares the symbol again to build it; DaCe's own build of the changed
    program fails (its argument list has no type for the symbol). The audit builds the program
    as DaCe made it: a BUILD_FAILURE with a reproducer that applies the change to the program."""
    import subprocess
    import sys
    from pathlib import Path

    from harnessgen.cutout.extract import whole_program_pair
    from tests.conftest import program_sdfg

    def undeclared(post):
        del post.symbols["N"]

    sdfg = program_sdfg("sigmoid")
    record = audit(lambda: whole_program_pair(sdfg, "whole", transform=undeclared, keep_as_made=True),
                   AuditOptions(keep_root=tmp_path / "audit",
                                judge=JudgeOptions(work_dir=tmp_path / "work", max_size=AUDIT_MAX_SIZE)))
    assert record.verdict == "BUILD_FAILURE", record
    assert "DaCe's own build of the program after the change fails" in record.reason
    assert classify("PASS", record) == WHOLE_PROGRAM_FINDING
    assert (Path(record.finding) / "pre.sdfg").is_file()
    # without the change, the program as DaCe made it builds and agrees with itself
    same = audit(lambda: whole_program_pair(sdfg, "whole", transform=lambda post: None, keep_as_made=True),
                 AuditOptions(keep_root=tmp_path / "same", inputs=2,
                              judge=JudgeOptions(work_dir=tmp_path / "work", max_size=AUDIT_MAX_SIZE)))
    assert same.verdict == AGREES, same
