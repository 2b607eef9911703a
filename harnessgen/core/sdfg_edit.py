"""Small SDFG edits shared by the transformations harnessgen ships (zoo and targets)."""
from __future__ import annotations

import copy


def copy_loop_body(graph, body, itervar: str, shifted: str, suffix: str):
    """Copies of the states in ``body`` (and the edges between them) with ``itervar``
    replaced by the expression ``shifted``; returns the copies in ``body``'s order."""
    from dace.sdfg import SDFGState

    copies = [SDFGState.from_json(s.to_json(), context={"sdfg": graph.sdfg}) for s in body]
    for state in copies:
        state.label = f"{state.label}_{suffix}"
        state.replace(itervar, shifted)
        graph.add_node(state)
    for edge in graph.edges():
        if edge.src in body and edge.dst in body:
            data = copy.deepcopy(edge.data)
            data.replace_dict({itervar: shifted})
            graph.add_edge(copies[body.index(edge.src)], copies[body.index(edge.dst)], data)
    return copies
