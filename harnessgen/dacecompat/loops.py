"""For-loops of a program's control flow, whichever form they take: a state machine (a guard
state with an increment edge back into it, as DaCe 1.0.2 builds every loop) or a
``LoopRegion`` (DaCe 2.0)."""
from __future__ import annotations

import dataclasses
from typing import Any, List, Optional

import networkx as nx
from dace.sdfg import state as sdfg_state
from dace.transformation.interstate.loop_detection import find_for_loop
from dace.transformation.passes.analysis import loop_analysis

from .regions import regions_of


@dataclasses.dataclass
class ForLoop:
    """``for variable in range(start, end + 1, stride)``: the bounds as DaCe's symbolic values
    (``end`` inclusive); ``region`` is the ``LoopRegion`` where the loop is one."""

    variable: str
    start: Any
    end: Any
    stride: Any
    region: Optional[Any] = None


def for_loops(sdfg) -> List[ForLoop]:
    """Every for-loop of ``sdfg``'s own control flow (not its nested SDFGs'), in every region."""
    loops = _state_machine_loops(sdfg)
    for region in regions_of(sdfg):
        loops += _state_machine_loops(region)
        if isinstance(region, sdfg_state.LoopRegion):
            found = region_loop(region)
            if found is not None:
                loops.append(found)
    return loops


def region_loop(loop) -> Optional[ForLoop]:
    """A ``LoopRegion`` with a loop variable, a parsable start, end and constant-sign stride."""
    if not loop.loop_variable:
        return None
    try:
        start = loop_analysis.get_init_assignment(loop)
        end = loop_analysis.get_loop_end(loop)
        stride = loop_analysis.get_loop_stride(loop)
    except Exception:   # a condition or update DaCe's analysis cannot read
        return None
    if start is None or end is None or stride is None:
        return None
    return ForLoop(str(loop.loop_variable), start, end, stride, loop)


def _state_machine_loops(graph) -> List[ForLoop]:
    """Loops written as states: a guard, an entry edge into the body, an increment edge back
    that the body reaches without passing through the guard."""
    loops = []
    for guard in graph.nodes():
        if not isinstance(guard, sdfg_state.SDFGState):
            continue
        without_guard = graph.nx.copy()
        without_guard.remove_node(guard)
        for edge in graph.out_edges(guard):
            entry = edge.dst
            if entry is guard:
                continue
            try:
                info = find_for_loop(graph, guard, entry)
            except Exception:  # not a loop DaCe understands
                info = None
            if not info:
                continue
            var = info[0]
            increments = [ie.src for ie in graph.in_edges(guard)
                          if var in ie.data.assignments and var in {str(s) for s in ie.data.free_symbols}]
            if any(src is entry or nx.has_path(without_guard, entry, src) for src in increments):
                start, end, stride = info[1]
                loops.append(ForLoop(str(var), start, end, stride))
    return loops
