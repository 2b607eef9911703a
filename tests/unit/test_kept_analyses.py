"""Symbol types of an unchanged program, inferred once while a cutout is made of it: the same
answers DaCe gives, and never an answer kept for another SDFG."""
import copy

import dace
from dace.transformation.passes.analysis import StateReachability

from harnessgen.dacecompat import kept_analyses


def _program():
    """A program whose interstate edges define an integer and a double symbol."""
    sdfg = dace.SDFG("typed_symbols")
    sdfg.add_symbol("N", dace.int32)
    sdfg.add_array("A", [8], dace.float64)
    sdfg.add_array("B", [8], dace.float64)
    first, second = sdfg.add_state("first", is_start_block=True), sdfg.add_state("second")
    sdfg.add_edge(first, second, dace.InterstateEdge(assignments={"i": "N + 1", "x": "A[0]"}))
    second.add_mapped_tasklet("scale", {"k": "0:8"}, {"a": dace.Memlet("A[k]")}, "b = a * x + i",
                              {"b": dace.Memlet("B[k]")}, external_edges=True)
    return sdfg, second


def _answers(state):
    return {name: str(dtype) for name, dtype in state.defined_symbols().items()}


def test_an_unchanged_programs_symbols_are_inferred_once_and_as_dace_infers_them():
    program, state = _program()
    expected = _answers(state)
    assert expected["x"] == "double" and expected["i"] in ("int", "int64_t")
    with kept_analyses.reading(program):
        first = _answers(state)
        kept = len(kept_analyses._kept)
        again = _answers(state)
        assert len(kept_analyses._kept) == kept > 0            # the second time, nothing inferred anew
    assert first == again == expected


def test_a_copy_or_a_changed_edge_is_answered_by_dace_not_from_what_was_kept():
    program, state = _program()
    with kept_analyses.reading(program):
        _answers(state)
    changed = copy.deepcopy(program)
    edge = changed.edges()[0]
    edge.data.assignments = {"i": "N + 1", "x": "N * 2"}     # x is an integer now
    with kept_analyses.reading(program):
        assert _answers(changed.node(1))["x"] != "double"
    with kept_analyses.reading(changed):                      # the copy read as a program of its own
        assert _answers(changed.node(1))["x"] != "double"


def _reachability(sdfg):
    return {cfg: {k.label: sorted(s.label for s in v) for k, v in reach.items()}
            for cfg, reach in StateReachability().apply_pass(sdfg, None).items()}


def _chain():
    sdfg = dace.SDFG("chain")
    states = [sdfg.add_state(f"s{k}", is_start_block=k == 0) for k in range(3)]
    for a, b in zip(states, states[1:]):
        sdfg.add_edge(a, b, dace.InterstateEdge())
    return sdfg


def test_an_unchanged_programs_state_reachability_is_analysed_once_and_as_dace_analyses_it():
    program = _chain()
    expected = _reachability(program)
    assert expected[0]["s0"] == ["s1", "s2"]
    with kept_analyses.reading(program):
        first = _reachability(program)
        kept = dict(kept_analyses._reach)
        StateReachability().apply_pass(program, None)[0][program.node(2)]   # DaCe's callers: a lookup that inserts
        assert _reachability(program) == first == expected
        assert kept_analyses._reach == kept and len(kept) == 1  # the second time, nothing analysed anew


def test_a_changed_copys_reachability_is_analysed_by_dace():
    program = _chain()
    with kept_analyses.reading(program):
        _reachability(program)
    changed = copy.deepcopy(program)
    changed.add_edge(changed.node(2), changed.node(0), dace.InterstateEdge(condition="False"))
    with kept_analyses.reading(program):
        assert _reachability(changed)[0]["s2"] == ["s0", "s1", "s2"]


def test_a_substitution_inside_a_reading_block_is_kept_and_equals_sympys():
    import sympy

    n, m = sympy.symbols("N M")
    volume = (n + 1) * m
    mapping = {n: 20, m: 3}
    program, _ = _program()
    with kept_analyses.reading(program):
        first = volume.subs(dict(mapping))
        assert len(kept_analyses._substituted) == 1
        again = volume.subs({m: 3, n: 20})                    # the same mapping, in another order
        assert len(kept_analyses._substituted) == 1
        other = volume.subs({n: 20, m: 4})
    assert first == again == 63 and other == 84
    assert volume.subs(n, 1) == 2 * m                         # outside the block and other forms: sympy's own


def test_a_substitution_leaves_out_only_names_that_cannot_change_the_expression():
    import sympy

    n, m = sympy.symbols("N M")
    volume = (n + 1) * m
    guesses = {f"S{i}": 20 for i in range(300)} | {"N": 20, "M": 3}      # every symbol of a program, as DaCe guesses
    chained = {"N": m + 1, "M": 3}                                      # a value that brings a symbol in
    program, _ = _program()
    with kept_analyses.reading(program):
        assert volume.subs(guesses) == 63
        [(_, kept)] = kept_analyses._substituted.keys()
        assert kept == frozenset({("N", 20), ("M", 3)})
        inside = volume.subs(chained)
    assert inside == volume.subs(dict(chained)) and inside.free_symbols == {m}      # sympy's own answer
    assert volume.subs(dict(guesses)) == 63
