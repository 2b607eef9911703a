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
from typing import Any, Dict, List, Optional, Set, Tuple


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


def _groups(label: str, views: Dict[str, List[Tuple[str, object, bool]]]) -> List[AliasGroup]:
    """Alias groups among ``views`` (outer container -> (member, subset viewed, written))."""
    groups = []
    for outer in sorted(views):
        accesses = views[outer]
        pairs = {(a, b) for a, subset_a, writes_a in accesses for b, subset_b, writes_b in accesses
                 if a < b and (writes_a or writes_b) and _might_overlap(subset_a, subset_b)}
        members = sorted({name for pair in pairs for name in pair})
        if members:
            written = sorted({name for name, _, writes in accesses if writes and name in members})
            groups.append(AliasGroup(nested=label, container=outer, members=tuple(members), written=tuple(written)))
    return groups


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
    return _groups(nested_node.label, views)


def alibi_groups(cutout) -> List[AliasGroup]:
    """Alias groups among the alibi containers of a single-state DaCe cutout: the stand-ins
    (``__cutout_X``) DaCe makes for the part of program container X that one edge into a scope
    it cut away carries. They matter where one node that is not a tasklet (a nested SDFG, a
    library node, a scope) sees two of them, one written, whose parts may overlap: in the
    program it sees one memory, and may read what it wrote. A tasklet reads all its inputs
    before it writes, so separate stand-ins cannot change what it computes."""
    from dace import nodes

    translation = getattr(cutout, "_out_translation", {})
    views: Dict[Tuple[str, str], List[Tuple[str, object, bool]]] = {}
    for state in cutout.states():
        program_state = translation.get(state)
        for access in state.data_nodes():
            desc = cutout.arrays[access.data]
            if program_state is None or desc.transient or not access.data.startswith("__cutout_"):
                continue
            for edge in state.all_edges(access):
                writes = edge.dst is access
                user, conn = (edge.src, edge.src_conn) if writes else (edge.dst, edge.dst_conn)
                original = translation.get(user)
                if original is None or not conn or isinstance(user, (nodes.Tasklet, nodes.AccessNode)):
                    continue
                by_conn = program_state.out_edges_by_connector if writes else program_state.in_edges_by_connector
                for program_edge in by_conn(original, conn):
                    key = (user.label, program_edge.data.data)
                    views.setdefault(key, []).append((access.data, program_edge.data.subset, writes))
    groups = []
    for (label, outer), accesses in sorted(views.items()):
        groups += _groups(label, {outer: accesses})
    return groups


@dataclasses.dataclass(frozen=True)
class JointLayout:
    """One group as one flat buffer: member ``m`` starts ``offsets[m]`` elements into it and
    spans ``spans[m]`` elements (the program's strides, written in the nested SDFG's symbols)."""

    length: Any                    # sympy expression: elements of the joint buffer
    offsets: Dict[str, int]
    spans: Dict[str, Any]

    def to_json(self) -> Dict:
        return {"length": str(self.length), "offsets": dict(sorted(self.offsets.items())),
                "spans": {m: str(s) for m, s in sorted(self.spans.items())}}


def _member_subsets(state, nested_node, members: Tuple[str, ...]) -> Optional[Dict[str, Any]]:
    """The one outer subset each member views (None when a member is passed two different ones)."""
    seen: Dict[str, Any] = {}
    edges = [(e.dst_conn, e) for e in state.in_edges(nested_node)] + \
            [(e.src_conn, e) for e in state.out_edges(nested_node)]
    for conn, edge in edges:
        if conn in members:
            if conn in seen and str(seen[conn]) != str(edge.data.subset):
                return None
            seen[conn] = edge.data.subset
    return seen if set(seen) == set(members) else None


def _symbolic(value):
    """A sympy expression of DaCe's (strings through DaCe's parser: sympy's own would read a
    symbol named ``N`` or ``S`` as one of its functions)."""
    from dace import symbolic

    return value if hasattr(value, "free_symbols") else symbolic.pystr_to_symbolic(str(value))


def _inner_terms(expr, nested_node, allowed: Set[str]):
    """``expr`` (in the enclosing SDFG's symbols) in the nested SDFG's symbols, or None where it
    names a symbol the nested SDFG does not receive under a name of its own."""
    import sympy

    renames = {}
    for inner, outer in nested_node.symbol_mapping.items():
        outer = _symbolic(outer)
        if isinstance(outer, sympy.Symbol):
            renames[str(outer)] = inner
    expr = _symbolic(expr)
    expr = expr.xreplace({s: sympy.Symbol(renames[str(s)], **s.assumptions0) for s in expr.free_symbols
                          if str(s) in renames and renames[str(s)] != str(s)})
    if not {str(s) for s in expr.free_symbols} <= allowed:
        return None
    return sympy.simplify(expr)


def joint_layout(state, nested_node, group: AliasGroup, allowed: Set[str]) -> Optional[JointLayout]:
    """Where ``group``'s members lie in one flat buffer, from the subsets the enclosing state
    passes and the outer container's strides; None where that cannot be written with constant
    relative offsets and lengths in the symbols ``allowed`` (the cutout's), or the members do
    not share one element type."""
    import sympy

    outer = state.sdfg.arrays[group.container]
    inner = nested_node.sdfg.arrays
    if len({inner[m].dtype for m in group.members}) != 1:
        return None
    subsets = _member_subsets(state, nested_node, group.members)
    if subsets is None:
        return None
    strides = [_symbolic(s) for s in outer.strides]
    first, span = {}, {}
    for member, subset in subsets.items():
        lo = [_symbolic(x) for x in subset.min_element()]
        hi = [_symbolic(x) for x in subset.max_element()]
        if len(lo) != len(strides):
            return None
        first[member] = sum(a * s for a, s in zip(lo, strides))
        span[member] = _inner_terms(sum((b - a) * s for a, b, s in zip(lo, hi, strides)) + 1, nested_node, allowed)
        if span[member] is None:
            return None
    base = group.members[0]
    relative = {m: sympy.simplify(first[m] - first[base]) for m in group.members}
    if not all(r.is_Integer for r in relative.values()):
        return None
    low = min(int(r) for r in relative.values())
    offsets = {m: int(r) - low for m, r in relative.items()}
    ends = [offsets[m] + span[m] for m in group.members]
    # the joint length is the end that no other end exceeds, provably
    for end in ends:
        gaps = [sympy.simplify(end - other) for other in ends]
        if all(g.is_number and g >= 0 for g in gaps):
            return JointLayout(length=end, offsets=offsets, spans=span)
    return None
