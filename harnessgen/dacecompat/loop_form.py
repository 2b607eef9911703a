"""Loop transformations written for loops as state machines (DaCe's ``DetectLoop``: a guard, a
body, an increment edge back) also match loops as ``LoopRegion``s, DaCe 2.0's form.

``LoopRegionForm`` adds a last pattern, one ``LoopRegion``; a transformation that mixes it in
implements ``region_can_be_applied`` and ``region_apply`` for that form, and keeps its
state-machine form for the DaCe that builds loops so. ``body_copy`` copies a loop region's
body with the loop variable shifted (the second iteration of an unrolled loop)."""
from __future__ import annotations

import copy
from typing import List, Optional

import dace
from dace.properties import CodeBlock
from dace.sdfg import nodes, utils as sdutil
from dace.sdfg.state import ControlFlowRegion, LoopRegion, SDFGState
from dace.transformation import transformation as xf

from .loops import ForLoop, region_loop
from .regions import is_region


class LoopRegionForm:
    """Mixin (before the state-machine base): the transformation also matches a LoopRegion.
    Subclasses write their state-machine form as ``machine_can_be_applied``/``machine_apply``
    (whose ``super()`` reaches the base's) and their region form as ``region_*``."""

    loop_region = xf.PatternNode(LoopRegion)

    @classmethod
    def expressions(cls):
        return list(super().expressions()) + [sdutil.node_path_graph(cls.loop_region)]

    @classmethod
    def region_expression(cls) -> int:
        return len(cls.expressions()) - 1

    def can_be_applied(self, graph, expr_index, sdfg, permissive=False):
        if expr_index != self.region_expression():
            return self.machine_can_be_applied(graph, expr_index, sdfg, permissive)
        loop = self.loop_region
        info = region_loop(loop)
        if info is None or _leaves_early(loop):
            return False
        return self.region_can_be_applied(graph, loop, sdfg, info)

    def apply(self, graph, sdfg):
        if self.expr_index != self.region_expression():
            return self.machine_apply(graph, sdfg)
        return self.region_apply(graph, self.loop_region, sdfg, region_loop(self.loop_region))

    def machine_can_be_applied(self, graph, expr_index, sdfg, permissive=False):
        return super().can_be_applied(graph, expr_index, sdfg, permissive)

    def machine_apply(self, graph, sdfg):
        return super().apply(graph, sdfg)

    def region_can_be_applied(self, graph, loop: LoopRegion, sdfg, info: ForLoop) -> bool:
        return False

    def region_apply(self, graph, loop: LoopRegion, sdfg, info: ForLoop) -> None:
        raise NotImplementedError(f"{type(self).__name__} has no LoopRegion form")


def _leaves_early(loop: LoopRegion) -> bool:
    """A break, a continue or a return in the body: the body does not simply run to its end."""
    found = [getattr(loop, test, False) for test in ("has_break", "has_continue", "has_return")]
    return any(test() if callable(test) else test for test in found)


def body_sinks(loop: LoopRegion) -> List:
    """The blocks where one iteration of the body ends."""
    return [block for block in loop.nodes() if loop.out_degree(block) == 0]


def body_copy(loop: LoopRegion, itervar: str, shifted: str, label: str, shift_assignments: bool = True):
    """The loop's body as a new region (not yet in any graph): every block copied with
    ``itervar`` replaced by ``shifted``; ``shift_assignments=False`` keeps what the body's
    edges assign as it was (a value loaded for the first iteration only)."""
    sdfg = loop.sdfg
    region = ControlFlowRegion(label, sdfg)
    copies = {}
    for block in loop.nodes():
        new = copy.deepcopy(block)
        _reattach(new, sdfg)
        new.replace_dict({itervar: shifted})
        copies[block] = new
        region.add_node(new, is_start_block=block is loop.start_block, ensure_unique_name=True)
    for edge in loop.edges():
        data = copy.deepcopy(edge.data)
        assignments = dict(data.assignments)
        data.replace_dict({itervar: shifted})
        if not shift_assignments:
            data.assignments = assignments
        region.add_edge(copies[edge.src], copies[edge.dst], data)
    return region


def _reattach(block, sdfg) -> None:
    """A deep copy of a block loses its SDFG: give it, its inner blocks and their nested SDFGs
    their place back."""
    blocks = [block] + (list(block.all_control_flow_blocks()) if is_region(block) else [])
    for inner in blocks:
        inner.sdfg = sdfg
        if isinstance(inner, SDFGState):
            for node in inner.nodes():
                if isinstance(node, nodes.NestedSDFG):
                    node.sdfg.parent_sdfg = sdfg


def shifted_condition(condition: CodeBlock, itervar: str, shifted: str) -> str:
    """``condition`` with ``itervar`` replaced by ``shifted``, as text."""
    edge = dace.InterstateEdge(condition=CodeBlock(condition.as_string))
    edge.replace_dict({itervar: shifted})
    return edge.condition.as_string


def constant_stride(info: ForLoop) -> Optional[int]:
    try:
        return int(info.stride)
    except (TypeError, ValueError):
        return None
