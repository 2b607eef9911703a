"""Symbol types of an unchanged program, inferred once while a cutout is made of it: the same
answers DaCe gives, and never an answer kept for another SDFG."""
import copy

import dace

from harnessgen.dacecompat import symbol_types


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
    with symbol_types.reading(program):
        first = _answers(state)
        kept = len(symbol_types._kept)
        again = _answers(state)
        assert len(symbol_types._kept) == kept > 0            # the second time, nothing inferred anew
    assert first == again == expected


def test_a_copy_or_a_changed_edge_is_answered_by_dace_not_from_what_was_kept():
    program, state = _program()
    with symbol_types.reading(program):
        _answers(state)
    changed = copy.deepcopy(program)
    edge = changed.edges()[0]
    edge.data.assignments = {"i": "N + 1", "x": "N * 2"}     # x is an integer now
    with symbol_types.reading(program):
        assert _answers(changed.node(1))["x"] != "double"
    with symbol_types.reading(changed):                      # the copy read as a program of its own
        assert _answers(changed.node(1))["x"] != "double"
