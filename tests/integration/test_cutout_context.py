"""Matches that depend on the program around them keep matching: where DaCe's cutout changes
what the transformation's applicability test reads (a transient made global, a state's
interstate edges), the cutout grows until the match holds, up to the whole program, instead
of leaving the instance UNSUPPORTED."""
import pytest

from harnessgen.cutout.extract import extract
from tests.conftest import PROGRAMS, instances_of, program_sdfg, run_cli, summary_of

# each was UNSUPPORTED ("does not match inside its own cutout") before the cutout could grow
# (DaCe 2.0's loops are LoopRegions: spmv has no StateFusion match there, clip_small's start
# state is no longer one StartStateElimination removes)
ON_STATE_MACHINES = pytest.mark.dace_102
CONTEXT_DEPENDENT = [pytest.param("spmv", "StateFusion", marks=ON_STATE_MACHINES),
                     ("elementwise_chain", "OTFMapFusion"), ("softmax", "BufferTiling"),
                     pytest.param("clip_small", "StartStateElimination", marks=ON_STATE_MACHINES)]


@pytest.mark.parametrize("program,spec", CONTEXT_DEPENDENT)
def test_a_context_dependent_match_is_judged_in_a_grown_cutout(program, spec):
    cls, insts = instances_of(program, spec)
    pairs = [extract(program_sdfg(program), inst, cls) for inst in insts]    # Unsupported would raise
    assert any(pair.grown_for.startswith("the match") for pair in pairs), [p.grown_for for p in pairs]
    assert all(pair.post is not None or pair.error for pair in pairs)


# loops as state machines: DaCe 2.0's are LoopRegions, with no increment edge to rewrite
@pytest.mark.dace_102
def test_a_rewrite_of_the_increment_edge_alone_is_judged_on_every_loop():
    spec = f"{PROGRAMS / 'loop_edges.py'}:CommuteIncrement"
    for program in ("trisolve", "spmv", "prefix_sum", "clip_small"):
        cls, insts = instances_of(program, spec)
        assert insts, program
        for inst in insts:
            pair = extract(program_sdfg(program), inst, cls)
            assert pair.ok, (inst.id, pair.error)


# DaCe 2.0's spmv has no StateFusion match (its loop is a LoopRegion)
@pytest.mark.dace_102
@pytest.mark.fuzz
def test_a_transient_dependent_builtin_is_fuzzed_on_kernels(tmp_path):
    proc = run_cli(["fuzz", "--program", "kernels:spmv", "--transformation", "StateFusion", "--time", "5",
                    "--jobs", "2"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    entries = summary_of(tmp_path)["instances"]
    assert len(entries) == 2
    assert all(e["verdict"] == "PASS" and e["execs"] > 1000 for e in entries), entries
