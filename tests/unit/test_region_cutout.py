"""Cutouts around matches in loops and branches: the smallest block that holds the match, not
the program. On DaCe 2.0 loops and branches are control-flow regions and these are
harnessgen's region cutouts (DaCe's own cannot cut there); on 1.0.2 they are DaCe's cutouts
of the state machine. Either way the same things must hold: a match in a loop body is cut out
as its state, a loop nested in another as that loop alone, the outer loop's variable free;
and a cutout takes in the blocks before it where they make its input configuration smaller."""
import json

import dace

from harnessgen.cutout.cut import Cut
from harnessgen.cutout.extract import extract
from harnessgen.dacecompat import copy_sdfg, for_loops
from harnessgen.plan.instances import Instance, instance_id, load_transformation, pattern_matches
from tests.programs.computed_inputs import outer_then_add, outer_then_sum, scaled_then_sum


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
    extract_module._CUTS_AT.clear()      # the cuts made for ``good`` would be taken again at its place
    pair = extract(good.program_sdfg, good.instance, load_transformation("MapTiling"))
    assert pair.ok, pair.error
    assert pair.grown_for.startswith("1 smaller cutout(s) not a valid SDFG (a broken one: ") and \
        pair.grown_for.endswith("the next one up"), pair.grown_for


def test_a_loop_takes_in_the_state_that_computes_its_large_input_from_a_small_one():
    """The inner loop reads a 16x16 transient that the state before it computes from a vector:
    cut out alone, the fuzzer would make 256 values the program never has; with that state,
    it makes the 16 of x. The transient is then the cutout's own, never decoded."""
    from harnessgen.dacecompat import has_regions

    [pair] = [p for p in pairs(outer_then_sum, "LoopToMap") if p.ok]
    assert pair.input_config == ["out", "x"], pair.input_config
    assert "T" in pair.pre.arrays and pair.pre.arrays["T"].transient
    if has_regions(pair.program_sdfg):      # harnessgen's region cutout (DaCe 1.0.2's own takes the state too)
        assert "with the 1 block(s) before it that compute its inputs (input configuration 272 -> 32" \
            in pair.grown_for, pair.grown_for
        assert pair.volumes() == ("272", "32")


def test_a_loop_stays_alone_where_the_state_before_it_would_not_shrink_its_inputs():
    """The state before computes the transient from an array as large: taking it in would only
    make the cutout larger, so the loop is cut out alone and the transient is its input."""
    from harnessgen.dacecompat import has_regions

    [pair] = [p for p in pairs(scaled_then_sum, "LoopToMap") if p.ok]
    if has_regions(pair.program_sdfg):
        assert "before it" not in pair.grown_for, pair.grown_for
        assert pair.input_config == ["T", "out"], pair.input_config
        assert [type(b).__name__ for b in pair.pre.nodes()] == ["LoopRegion"]
    else:                                   # DaCe 1.0.2's multi-state cutout takes the state whole
        assert pair.input_config == ["Y", "out"], pair.input_config


def test_a_map_in_a_loop_body_takes_in_the_map_that_computes_its_input_as_dace_would():
    """The second map reads T, which the first computes from x in the same state: DaCe's
    minimum cut takes the first map in (as its own cutouts do outside regions), and the
    fuzzer makes x and out, never T."""
    found = [p for p in pairs(outer_then_add, "MapTiling") if p.ok and "out" in p.output_config]
    assert len(found) == 1, [p.output_config for p in pairs(outer_then_add, "MapTiling")]
    [pair] = found
    assert pair.input_config == ["out", "x"], pair.input_config
    assert pair.pre.arrays["T"].transient
    assert pair.volumes() == ("512", "272")
