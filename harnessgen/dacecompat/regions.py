"""Control-flow regions: where a block sits among them, and the blocks around it.

DaCe 2.0 keeps loops and branches as regions (``LoopRegion``; ``ConditionalBlock`` whose
branches are ``ControlFlowRegion``s), and simplify raises them even from state machines. A
block is addressed by its *path*: the node ids from an SDFG down to it through the regions
that hold it (``()`` is the SDFG itself). 1.0.2's SDFGs are flat state machines: every path
there has one element."""
from __future__ import annotations

from typing import Iterator, List, Tuple

from dace.sdfg import SDFG, state as sdfg_state

BlockPath = Tuple[int, ...]

_REGION_TYPES = tuple(t for t in (getattr(sdfg_state, "AbstractControlFlowRegion", None),
                                  sdfg_state.ControlFlowRegion, sdfg_state.ConditionalBlock) if t is not None)


def is_region(block) -> bool:
    """A block that holds other blocks: a loop, a conditional, a branch (not an SDFG)."""
    return isinstance(block, _REGION_TYPES) and not isinstance(block, SDFG)


def region_kind(block) -> str:
    if isinstance(block, sdfg_state.LoopRegion):
        return "loop"
    if isinstance(block, sdfg_state.ConditionalBlock):
        return "conditional"
    if is_region(block):
        return "branch" if isinstance(_parent(block), sdfg_state.ConditionalBlock) else "region"
    return "state"


def regions_of(sdfg) -> Iterator:
    """Every region of ``sdfg``'s own control flow (not of its nested SDFGs), outermost first."""
    todo = list(sdfg.nodes())
    while todo:
        block = todo.pop(0)
        if is_region(block):
            yield block
            todo += list(block.nodes())


def has_regions(sdfg) -> bool:
    """Whether any SDFG of the program (nested ones included) has a control-flow region."""
    return any(next(regions_of(sd), None) is not None for sd in sdfg.all_sdfgs_recursive())


def _parent(block):
    return getattr(block, "parent_graph", None)


def block_path(sdfg, block) -> BlockPath:
    """The node ids from ``sdfg`` down to ``block`` (which lies in ``sdfg``'s own control flow)."""
    path: List[int] = []
    while block is not sdfg:
        graph = _parent(block)
        if graph is None:
            raise ValueError(f"{block} does not lie in {sdfg.name}'s control flow")
        path.insert(0, graph.node_id(block))
        block = graph
    return tuple(path)


def block_at(sdfg, path: BlockPath):
    block = sdfg
    for node_id in path:
        # by position: a conditional block numbers its branches, but has no graph to look them up in
        block = list(block.nodes())[node_id]
    return block


def enclosing_blocks(sdfg, block) -> List:
    """``block`` and every region that holds it, innermost first, up to (not including) ``sdfg``;
    a branch is followed by its conditional block."""
    chain = []
    while block is not sdfg and block is not None:
        chain.append(block)
        block = _parent(block)
    return chain


def control_flow_code(sdfg) -> List:
    """What ``sdfg``'s control flow computes, as interstate edges: its own edges (in every
    region), and for each loop region its start, condition and update, for each branch its
    condition, as if they were written on edges (they are, in a state machine)."""
    import dace

    found = [edge.data for edge in sdfg.all_interstate_edges()]
    for region in regions_of(sdfg):
        if isinstance(region, sdfg_state.LoopRegion) and region.loop_variable:
            for statement in (region.init_statement, region.update_statement):
                assignments = _assignments(statement)
                if assignments:
                    found.append(dace.InterstateEdge(assignments=assignments))
            if region.loop_condition is not None:
                found.append(dace.InterstateEdge(condition=region.loop_condition.as_string))
        elif isinstance(region, sdfg_state.ConditionalBlock):
            for condition, _branch in region.branches:
                if condition is not None:
                    found.append(dace.InterstateEdge(condition=condition.as_string))
    return found


def _assignments(statement) -> dict:
    """``{variable: expression}`` of a loop's init or update statement (``i = 0; j = 1``)."""
    import ast

    if statement is None:
        return {}
    found = {}
    for tree in statement.code if isinstance(statement.code, list) else [statement.code]:
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                found[node.targets[0].id] = ast.unparse(node.value)
    return found


def raise_control_flow(sdfg) -> bool:
    """Loops and branches written as states (by DaCe 1.0.2, or a frontend) raised into regions,
    where this DaCe has them (``ControlFlowRaising``): the form its transformations match.
    Returns whether it ran."""
    try:
        from dace.transformation.passes.simplification.control_flow_raising import ControlFlowRaising
    except ImportError:
        return False
    ControlFlowRaising().apply_pass(sdfg, {})
    sdfg.reset_cfg_list()
    return True
