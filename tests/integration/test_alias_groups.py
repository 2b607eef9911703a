"""Which nested-SDFG connectors alias (aliasing.py): overlapping views of one container, one
of them written. Disjoint views and views that are only read stay apart (cutting them apart
changes nothing the program computes)."""
import dace
import pytest

from harnessgen.cutout.aliasing import alias_groups
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


# DaCe 2.0's frontend passes the row through one in-and-out connector: no two connectors alias
@pytest.mark.dace_102
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


def extract_all(name: str, transformation: str):
    from harnessgen.cutout.extract import extract
    from harnessgen.plan.instances import enumerate_instances, load_transformation

    target = load_python_program(PROGRAMS / "aliased_rows.py", name)
    program = target.programs[name]
    sdfg = program.build()
    cls = load_transformation(transformation)
    return [extract(sdfg, inst, cls) for inst in enumerate_instances(target, [program], cls, transformation,
                                                                      {name: sdfg})]


# DaCe 2.0's frontend passes the row through one in-and-out connector: no two connectors alias
@pytest.mark.dace_102
def test_views_of_symbolic_length_are_joined_in_the_cutouts_symbols():
    [pair] = extract_all("shift_rows_sized", "LoopToMap")
    [group] = pair.aliases
    assert group["joined_as"] == "B" and group["length"] == "M" and set(group["spans"].values()) == {"M"}
    assert [str(s) for s in pair.pre.arrays["B"].shape] == ["M"] and pair.grown_for == ""


# DaCe 2.0's frontend passes the row through one in-and-out connector: no two connectors alias
@pytest.mark.dace_102
def test_views_a_map_iteration_apart_grow_the_cutout_to_the_map():
    """Row i and row 0 are i rows apart: no constant offset in one buffer, so the cutout keeps
    the map and the whole container instead."""
    [pair] = extract_all("shift_from_first_row", "LoopToMap")
    [group] = pair.aliases
    assert len(group["members"]) == 3 and "joined_as" not in group
    assert pair.grown_for == "aliased views" and len(pair.pre.arrays["B"].shape) == 2
    assert any(isinstance(n, dace.nodes.MapEntry) for n, _ in pair.pre.all_nodes_recursive())


def nested_node_cutouts(name: str):
    """Cutouts of NestSDFG on the loop's nested SDFG: DaCe cuts its node out of the map body with
    alibi containers standing for the parts of the rows its connectors carry."""
    return [p for p in extract_all(name, "NestSDFG") if p.translated_match.get("cfg_id", 0) > 0
            or any(a.get("kept_whole") for a in p.aliases)]


def test_alibis_of_overlapping_views_that_a_nested_sdfg_writes_are_kept_one_container():
    [pair] = nested_node_cutouts("shift_rows")
    [group] = pair.aliases
    assert group["kept_whole"] == "alibi containers" and group["container"] == "B"
    assert pair.containers == ["A", "B"] and pair.grown_for == "aliased views"


# DaCe 2.0's frontend passes the row through one in-and-out connector: no two connectors alias
@pytest.mark.dace_102
def test_alibis_that_are_only_read_or_disjoint_stay_apart():
    for name in ("read_twice", "disjoint_halves"):
        pairs = extract_all(name, "NestSDFG")
        assert all(p.aliases == [] for p in pairs), name
        assert any(c.startswith("__cutout_") for p in pairs for c in p.containers), name
