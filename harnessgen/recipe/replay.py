"""Replay some of a recipe's steps on the program it began with: the candidates the shrinking
of a bisected recipe judges.

A pattern step is found again by the GUIDs of the nodes its match bound when the recipe made
it (node numbers change as soon as one step is left out); it is applied where DaCe's own
check still accepts it there, and left out where its nodes are gone or the check refuses. A
pass step is made again from its class and properties and run as a one-pass pipeline (its
analyses first). Subgraph steps, steps that raised, a match without GUIDs (a DaCe whose nodes
have none) and a pass that cannot be made again are not replayable: no candidate holds them.
"""
from __future__ import annotations

import json
from typing import Dict, List, Optional, Tuple

from .record import Recording, Step, Store, element_ids


def replayable(step: Step) -> bool:
    if step.error:
        return False
    if step.kind == "pattern":
        return bool(step.guids) and not step.unjudgeable
    return step.kind == "pass"


def replayed(recording: Recording, store: Store, indices: List[int], name: str):
    """The program before the recipe with the steps ``indices`` (in the recipe's order) made
    again; the second item: how many of them were applied (a pattern's nodes may be gone)."""
    program = store.program(recording.original, name)
    applied = 0
    for index in sorted(indices):
        step = recording.step(index)
        with element_ids(step.ids):
            applied += _replay(program, step)
    return program, applied


def _replay(program, step: Step) -> bool:
    from ..cutout.extract import apply_match
    from ..plan.instances import load_transformation
    from ..plan.passes import find_pass

    if step.kind == "pass":
        return _replay_pass(program, find_pass(step.spec).cls, step)
    cls = load_transformation(step.spec)
    match = _translated(program, cls, step)
    return match is not None and apply_match(cls, match, program)


def _replay_pass(program, cls: type, step: Step) -> bool:
    from dace.serialize import set_properties_from_json
    from dace.transformation import pass_pipeline as ppl

    made = cls()
    set_properties_from_json(made, json.loads(json.dumps(step.match)),
                             ignore_properties={"transformation", "type", "CATEGORY", "dace_version"})
    return ppl.Pipeline([made]).apply_pass(program, {}) is not None


def _translated(program, cls: type, step: Step) -> Optional[Dict]:
    """The step's match with its nodes' numbers as they are in ``program`` (None where one
    of them is gone or they no longer share one graph)."""
    where = _by_guid(program)
    expr = cls.expressions()[step.match.get("expr_index", 0)]
    pattern = cls._get_pattern_nodes()
    places = {}
    for key, guid in step.guids.items():
        if guid not in where:
            return None
        places[expr.node_id(pattern[key])] = where[guid]
    graphs = {id(graph) for _, graph in places.values()}
    if len(graphs) != 1:
        return None
    graph = next(iter(places.values()))[1]
    cfg_id, state_id = _graph_place(graph)
    return {**step.match, "cfg_id": cfg_id, "state_id": state_id,
            "_subgraph": {str(k): graph.node_id(node) for k, (node, _) in places.items()}}


def _by_guid(program) -> Dict[str, Tuple]:
    """Every node and control-flow block of the program by its GUID, with its graph (a GUID
    two nodes share, as a copied node may keep its original's, finds neither)."""
    found, shared = {}, set()
    for node, graph in program.all_nodes_recursive():
        guid = getattr(node, "guid", None)
        if guid in found:
            shared.add(guid)
        elif guid:
            found[guid] = (node, graph)
    return {guid: place for guid, place in found.items() if guid not in shared}


def _graph_place(graph) -> Tuple[int, int]:
    """``cfg_id`` and ``state_id`` of a match whose nodes lie in ``graph`` (a state: its
    region's number and its own; a region: its number and -1)."""
    from dace.sdfg.state import SDFGState

    if isinstance(graph, SDFGState):
        region = graph.parent_graph
        return region.cfg_id, region.node_id(graph)
    return graph.cfg_id, -1
