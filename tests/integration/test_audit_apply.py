"""The audit applies the instance's match to the whole program as DaCe applies any match: after
``can_be_applied``, which some transformations use to compute what ``apply`` then does.
StateFusionExtended computes there the ordering edges between the fused states; applied
without it, the whole program lost the edge between COLMAX's initialisation and its
max-reduction, and the audit reported a CUTOUT_MISSED that was its own."""
import pytest

from harnessgen.checks.audit import AGREES, AUDIT_MAX_SIZE, AuditOptions, audit
from harnessgen.cutout.extract import transformed_program
from harnessgen.harness.judge import JudgeOptions
from tests.conftest import instances_of, program_sdfg


def ordering_edges(state):
    return [(str(e.src), str(e.dst)) for e in state.edges() if e.data.is_empty()]


# DaCe 2.0's reduction has no two states StateFusionExtended fuses
@pytest.mark.dace_102
def test_the_whole_program_keeps_what_can_be_applied_computed(tmp_path, build_cache):
    cls, insts = instances_of("reduction", "StateFusionExtended")
    sdfg = program_sdfg("reduction")
    assert insts, "reduction no longer has a StateFusionExtended match"
    for inst in insts:
        pair = transformed_program(sdfg, inst, cls)
        assert pair.ok, pair.error
        fused = [s for s in pair.post.states() if ordering_edges(s)]
        assert fused, f"{inst.id}: the fused state has no ordering edge"
        record = audit(lambda: transformed_program(sdfg, inst, cls), AuditOptions(
            keep_root=tmp_path / inst.id, judge=JudgeOptions(work_dir=build_cache, max_size=AUDIT_MAX_SIZE), inputs=6,
            time_s=30))
        assert record.verdict == AGREES, record
