"""Which nested-SDFG connectors alias (aliasing.py): overlapping views of one container, one
of them written. Disjoint views and views that are only read stay apart (cutting them apart
changes nothing the program computes)."""
import dace

from harnessgen.aliasing import alias_groups
from harnessgen.targets.loaders import load_python_program
from tests.conftest import PROGRAMS


def groups_of(name: str):
    sdfg = load_python_program(PROGRAMS / "aliased_rows.py", name).programs[name].build()
    found = []
    for node, state in sdfg.all_nodes_recursive():
        if isinstance(node, dace.nodes.NestedSDFG):
            used = {n for n, d in node.sdfg.arrays.items() if not d.transient}
            found += alias_groups(state, node, used)
    return found


def test_a_read_and_a_write_of_overlapping_rows_alias():
    [group] = groups_of("shift_rows")
    assert group.container == "B" and len(group.members) == 2 and len(group.written) == 1


def test_disjoint_views_do_not_alias():
    assert groups_of("disjoint_halves") == []


def test_views_that_are_only_read_do_not_alias():
    assert groups_of("read_twice") == []


def test_only_the_containers_a_cutout_uses_count():
    sdfg = load_python_program(PROGRAMS / "aliased_rows.py", "shift_rows").programs["shift_rows"].build()
    node, state = next((n, s) for n, s in sdfg.all_nodes_recursive() if isinstance(n, dace.nodes.NestedSDFG))
    written = next(e.src_conn for e in state.out_edges(node))
    assert alias_groups(state, node, {written}) == []
