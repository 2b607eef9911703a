"""Which containers of a nested SDFG are views of one container of the program.

DaCe's frontend passes one outer array to a nested SDFG through several connectors (a read
connector for ``B[i, 1:5]``, a write connector for ``B[i, 0:4]``). Inside the nested SDFG
they are distinct containers; in the program they are the same memory, and a loop in the
nested SDFG may carry a dependency through them. A cutout that keeps them apart computes a
different program, one without that dependency, so the cutout stage grows past every nested
SDFG whose connectors alias (``cutout.py``).

Only groups that some member writes matter: connectors that are all read see equal values
in the program and independent values in a cutout, a superset of the program's inputs that
cannot hide a difference.
"""
from __future__ import annotations

import dataclasses
from typing import Dict, List, Set, Tuple


@dataclasses.dataclass(frozen=True)
class AliasGroup:
    """Connectors of one nested SDFG that view overlapping parts of one outer container."""

    nested: str                    # the nested SDFG's label
    container: str                 # the container of the enclosing SDFG they view
    members: Tuple[str, ...]       # the nested SDFG's containers, sorted
    written: Tuple[str, ...]       # those of them the nested SDFG writes

    def to_json(self) -> Dict:
        return dataclasses.asdict(self)


def _might_overlap(first, second) -> bool:
    """False only where DaCe can show the two subsets disjoint (symbolic bounds it cannot
    compare count as overlapping: growing a cutout is never wrong, cutting apart may be)."""
    from dace import subsets

    if first is None or second is None:
        return True
    try:
        return subsets.intersects(first, second) is not False
    except Exception:   # sympy cannot decide a comparison of the bounds
        return True


def alias_groups(state, nested_node, used: Set[str]) -> List[AliasGroup]:
    """The alias groups of ``nested_node`` (in ``state``) among the containers ``used`` by a
    cutout taken inside it; a group needs two members, one of which is written, whose
    subsets may overlap."""
    views: Dict[str, List[Tuple[str, object, bool]]] = {}
    for edge in state.in_edges(nested_node):
        if edge.dst_conn and edge.data.data is not None and edge.dst_conn in used:
            views.setdefault(edge.data.data, []).append((edge.dst_conn, edge.data.subset, False))
    for edge in state.out_edges(nested_node):
        if edge.src_conn and edge.data.data is not None and edge.src_conn in used:
            views.setdefault(edge.data.data, []).append((edge.src_conn, edge.data.subset, True))
    groups = []
    for outer in sorted(views):
        accesses = views[outer]
        pairs = {(a, b) for a, subset_a, writes_a in accesses for b, subset_b, writes_b in accesses
                 if a < b and (writes_a or writes_b) and _might_overlap(subset_a, subset_b)}
        members = sorted({name for pair in pairs for name in pair})
        if members:
            written = sorted({name for name, _, writes in accesses if writes and name in members})
            groups.append(AliasGroup(nested=nested_node.label, container=outer, members=tuple(members),
                                     written=tuple(written)))
    return groups
