"""Cutouts around matches in loops and branches: the smallest block that holds the match, not
the program. On DaCe 2.0 loops and branches are control-flow regions and these are
harnessgen's region cutouts (DaCe's own cannot cut there); on 1.0.2 they are DaCe's cutouts
of the state machine. Either way the same things must hold: a match in a loop body is cut out
as its state, a loop nested in another as that loop alone, the outer loop's variable free."""
import json

import dace

from harnessgen.cutout.cut import Cut
from harnessgen.cutout.extract import extract
from harnessgen.dacecompat import copy_sdfg, for_loops
from harnessgen.plan.instances import Instance, instance_id, load_transformation, pattern_matches


@dace.program
def rows(A: dace.float64[12, 16], B: dace.float64[12, 16]):
    for t in range(1, 12):
        for j in dace.map[0:16]:
            A[t, j] = A[t - 1, j] * 0.5 + B[t, j]
    B[0, 0] = A[11, 3]


@dace.program
def nested_loops(A: dace.float64[12, 16]):
    for t in range(1, 12):
        for j in range(16):
            A[t, j] = A[t - 1, j] + 1.0


@dace.program
def branchy(A: dace.float64[12, 16], c: dace.float64[12]):
    for t in range(12):
        if c[t] > 0:
            for j in dace.map[0:16]:
                A[t, j] = A[t, j] * 2.0


def pairs(program, spec: str):
    sdfg = program.to_sdfg(simplify=True)
    cls = load_transformation(spec)
    for xform in pattern_matches(sdfg, cls, None):
        match = json.loads(json.dumps(xform.to_json()))
        instance = Instance(id=instance_id(program.name, cls.__name__, match), target="test", program=program.name,
                            transformation=cls.__name__, transformation_spec=spec, match=match)
        yield extract(sdfg, instance, cls)


def blocks(sdfg):
    return list(sdfg.all_control_flow_blocks()) if hasattr(sdfg, "all_control_flow_blocks") else sdfg.nodes()


def test_a_map_in_a_loop_body_is_cut_out_as_its_state_with_the_loop_variable_free():
    [pair] = pairs(rows, "MapTiling")
    assert pair.ok, pair.error
    assert "whole" not in pair.grown_for, pair.grown_for
    assert [type(b).__name__ for b in blocks(pair.pre)] == ["SDFGState"]
    assert "t" in pair.pre.free_symbols
    assert pair.input_config == ["A", "B"] and "A" in pair.output_config


def test_a_loop_nested_in_a_loop_is_cut_out_alone():
    found = [p for p in pairs(nested_loops, "LoopToMap") if p.ok]
    assert found, "LoopToMap did not match the inner loop"
    for pair in found:
        assert "whole program" not in pair.grown_for, pair.grown_for
        assert [loop.variable for loop in for_loops(pair.pre)] == ["j"]
        assert "t" in pair.pre.free_symbols
        assert pair.input_config == ["A"] and pair.output_config == ["A"]


def test_a_map_in_a_branch_in_a_loop_is_cut_out_without_the_branch():
    [pair] = pairs(branchy, "MapTiling")
    assert pair.ok, pair.error
    assert [type(b).__name__ for b in blocks(pair.pre)] == ["SDFGState"]
    assert "c" not in pair.pre.arrays          # the branch's condition stays outside


def test_a_cutout_that_is_not_a_valid_sdfg_is_passed_over_for_the_next_one_up(monkeypatch):
    """A candidate cutout that does not validate (DaCe's, or a region cutout) is never judged:
    the next larger one is, and says why it was taken."""
    import harnessgen.cutout.extract as extract_module

    [good] = pairs(rows, "MapTiling")
    broken = copy_sdfg(good.pre, "broken")
    broken.start_block.add_edge(broken.start_block.add_access("A"), None,
                                broken.start_block.add_access("B"), None, dace.Memlet("A[0:3]"))   # no such copy
    valid = Cut(copy_sdfg(good.pre, "valid"), good.translated_match, grown_for="the next one up")
    monkeypatch.setattr(extract_module, "_candidate_cuts",
                        lambda *args: iter([Cut(broken, good.translated_match, grown_for="a broken one"), valid]))
    pair = extract(good.program_sdfg, good.instance, load_transformation("MapTiling"))
    assert pair.ok, pair.error
    assert pair.grown_for.startswith("1 smaller cutout(s) not a valid SDFG (a broken one: ") and \
        pair.grown_for.endswith("the next one up"), pair.grown_for
