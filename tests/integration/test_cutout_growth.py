"""A multi-state cutout that keeps a loop guard but drops its body is grown until it keeps
the whole loop, so the instance is fuzzed instead of being left UNSUPPORTED."""
import copy

import pytest

from harnessgen.cutout.extract import _lost_control_flow, _make_cutout, extract
from harnessgen.plan.instances import enumerate_instances, load_transformation, rebuild_transformation
from harnessgen.targets.loaders import load_python_program
from tests.conftest import PROGRAMS, run_cli, summary_of

PROGRAM = PROGRAMS / "nested_loops.py"
UNROLL = "harnessgen.targets.cloudsc_xforms:UnrollByTwo"


@pytest.fixture(scope="module")
def unroll_instances():
    target = load_python_program(PROGRAM, "nested_loops")
    program = target.programs["nested_loops"]
    sdfg = program.build()
    cls = load_transformation(UNROLL)
    return sdfg, cls, enumerate_instances(target, [program], cls, UNROLL, {"nested_loops": sdfg})


# the states of loops written as state machines; on DaCe 2.0 a loop is one LoopRegion
@pytest.mark.dace_102
def test_the_grown_cutout_keeps_every_state_of_the_loops(unroll_instances):
    sdfg, cls, insts = unroll_instances
    assert len(insts) == 2                      # the j loop and the k loop inside it
    for inst in insts:
        dace_cutout, _ = _make_cutout(sdfg, rebuild_transformation(cls, copy.deepcopy(inst.match), sdfg), True)
        assert _lost_control_flow(dace_cutout), "DaCe's own cutout no longer drops the loop body"
        pair = extract(sdfg, inst, cls)
        assert pair.ok, pair.error
        nested = next(n.sdfg for n, _ in sdfg.all_nodes_recursive() if hasattr(n, "sdfg") and n.sdfg is not sdfg)
        assert {s.label for s in pair.pre.states()} >= {s.label for s in nested.states()}
        assert len(pair.post.states()) > len(pair.pre.states())       # the transformation did unroll


def test_grown_cutouts_are_fuzzed_and_a_correct_unroll_stays_silent(tmp_path):
    proc = run_cli(["fuzz", "--program", f"{PROGRAM}:nested_loops", "--transformation", UNROLL, "--time", "5",
                    "--jobs", "2"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    entries = summary_of(tmp_path)["instances"]
    assert len(entries) == 2
    assert all(e["verdict"] == "PASS" and e["execs"] > 1000 for e in entries), entries


def test_a_changed_interface_is_judged_where_it_is_the_programs():
    """Vectorization with propagate_parent retypes the containers around the map: in a cutout
    those are its interface, in the program some are transients. The cutout grows until the
    change is internal (the instance is judged, not INVALID_SDFG) or until it is the whole
    program, where only the program's own containers count."""
    from harnessgen import subjects
    from harnessgen.cutout.extract import INTERFACE_CHANGED

    subject = subjects.load("kernels:sigmoid")
    change = subject.change("Vectorization")
    program = subject.sdfg("sigmoid")
    verdicts = []
    for base in subject.instances("Vectorization"):
        variant = change.with_params(base, {"propagate_parent": True})
        pair = change.extract(program, variant, 0)
        verdicts.append(pair.verdict.name)
        assert "post changed the interface of 1 smaller cutout" in pair.grown_for
        if pair.error.startswith(INTERFACE_CHANGED):        # left standing: only program containers named
            named = {part.split()[1] for part in pair.error[len(INTERFACE_CHANGED):].split("; ")}
            assert named and all(not program.arrays[name].transient for name in named), pair.error
    assert "PASS" in verdicts and "INVALID_SDFG" in verdicts
