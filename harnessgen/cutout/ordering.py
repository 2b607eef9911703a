"""Accesses a transformation leaves unordered: within one state, DaCe may run any two nodes
that no path connects at the same time (OpenMP sections, GPU streams), so a write of a
container and another access to the same elements with no path between them is a data race
by the SDFG's own semantics, whatever order DaCe's CPU code generator happens to emit them in.
Only a write against a read counts: two unordered writes of the same elements are often one
copy made twice, the same values, and are left alone.
A state fusion that drops the ordering a read needed computes the right values on one
machine and wrong ones on another; comparing outputs cannot see it.

Only what post adds counts: a container whose accesses pre already leaves unordered somewhere
is pre-existing. Writes that both resolve conflicts (WCR) and views (aliases whose subsets are
another container's) are left out; two subsets are in conflict only where DaCe's own
``subsets.intersects`` says they overlap (an unknown overlap is not one)."""
from __future__ import annotations

import inspect
import sys
from typing import Dict, List, Set, Tuple

import networkx as nx

# how an INVALID_SDFG's error starts when post leaves accesses unordered
UNORDERED = "post leaves accesses unordered: "


def embedded() -> str:
    """This module's code as a Python literal: the reproducers and confirm.py judge with the
    very same rule, without harnessgen installed."""
    return repr(inspect.getsource(sys.modules[__name__]))


def new_unordered_accesses(pre, post) -> str:
    """What post leaves unordered that pre does not ('' where nothing): the first such pair,
    named."""
    before = {data for data, _ in _unordered(pre)}
    for data, said in _unordered(post):
        if data not in before:
            return said
    return ""


def _unordered(sdfg) -> List[Tuple[str, str]]:
    found: List[Tuple[str, str]] = []
    for nested in sdfg.all_sdfgs_recursive():
        for state in _states(nested):
            found += _in_state(nested, state)
    return found


def _states(sdfg):
    return list(sdfg.all_states()) if hasattr(sdfg, "all_states") else list(sdfg.states())


def _in_state(sdfg, state) -> List[Tuple[str, str]]:
    import dace

    nodes: Dict[str, list] = {}
    for node in state.nodes():
        if isinstance(node, dace.nodes.AccessNode) and node.data in sdfg.arrays \
                and not isinstance(sdfg.arrays[node.data], dace.data.View):
            nodes.setdefault(node.data, []).append(node)
    reachable: Dict[object, Set] = {}
    found = []
    for data in sorted(d for d, accesses in nodes.items() if len(accesses) > 1):
        conflict = _first_conflict(state, nodes[data], reachable)
        if conflict:
            found.append((data, conflict))
    return found


def _first_conflict(state, accesses, reachable) -> str:
    for writer in accesses:
        written = [_subset(e, state, "dst") for e in state.in_edges(writer) if not e.data.is_empty()]
        if not written or any(e.data.wcr is not None for e in state.in_edges(writer)):
            continue
        for other in accesses:
            if other is writer or _ordered(state, writer, other, reachable):
                continue
            # reads only: two writes of the same elements are often the same values written twice
            # (a copy made twice), whose order does not matter
            touched = [_subset(e, state, "src") for e in state.out_edges(other) if not e.data.is_empty()]
            if any(_overlap(w, t) for w in written for t in touched):
                return (f"{writer.data} is written by {_name(state, writer)} and accessed by {_name(state, other)} in "
                        f"state {state.label}, with no path between them: DaCe may run them in either order, or at once")
    return ""


def _subset(edge, state, side: str):
    """The subset of the access node's container an edge at it moves."""
    try:
        return edge.data.get_dst_subset(edge, state) if side == "dst" else edge.data.get_src_subset(edge, state)
    except Exception:  # noqa: BLE001 -- DaCe cannot tell: no conflict claimed on it
        return None


def _ordered(state, one, other, reachable: Dict[object, Set]) -> bool:
    for a, b in ((one, other), (other, one)):
        if a not in reachable:
            reachable[a] = nx.descendants(state.nx, a)
        if b in reachable[a]:
            return True
    return False


def _overlap(first, second) -> bool:
    from dace import subsets

    if first is None or second is None:
        return False
    try:
        return subsets.intersects(first, second) is True
    except Exception:  # noqa: BLE001 -- DaCe cannot tell (symbolic, mismatched dimensions): no conflict claimed
        return False


def _name(state, node) -> str:
    sources = [str(e.src) for e in state.in_edges(node)]
    targets = [str(e.dst) for e in state.out_edges(node)]
    return f"{node.data} (from {', '.join(sources)})" if sources else f"{node.data} (read by {', '.join(targets)})"
