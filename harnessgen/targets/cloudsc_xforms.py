"""Engineer-style custom transformations shipped with the ``cloudsc`` target.

They are what a performance engineer writes for a code like CLOUDSC, and what
FuzzyFlow's case study found bugs in:

``OffloadMap``   kernel extraction: a parallel region (a top-level map) moves to a
                 separate "device" buffer space. Every container the map touches gets
                 a device twin; the subsets the map reads *and* writes are copied in
                 before it (so elements a conditional write skips keep their values),
                 the subsets it writes are copied back after it. On a GPU the twins
                 would live in global memory; here they are CPU buffers, so the harness
                 tests exactly the data movement an offload adds. Copies are maps over
                 the subsets, so an empty parallel region copies nothing.
``GPUOffloadMap`` kernel extraction onto a GPU: the map becomes a CUDA kernel (``GPU_Device``)
                 on twins in GPU global memory. Every twin is copied in whole, so the
                 whole copy back is exact even where the kernel writes only a sub-range
                 (the copy back that FuzzyFlow found overwriting host results copied a
                 twin that held only what the kernel wrote).
``UnrollByTwo``  partial unrolling of a state-machine loop with a constant stride: each
                 trip runs the body for ``i`` and, if ``i + stride`` still satisfies the
                 loop condition, for ``i + stride``; otherwise it steps by one stride and
                 leaves through the guard (the remainder iteration is never lost).

Both are meant to be correct: fuzzing them must stay silent, and a finding is a bug
of the transformation (the closing notes of the cloudsc runs say which).
"""
from __future__ import annotations

import copy
from typing import Optional

import dace
from dace import data as dt, nodes, properties, symbolic
from dace.memlet import Memlet
from dace.sdfg import SDFG, SDFGState, utils as sdutil
from dace.sdfg.state import ConditionalBlock, ControlFlowRegion
from dace.transformation import transformation as xf
from dace.transformation.interstate.loop_detection import DetectLoop

from ..core.sdfg_edit import copy_loop_body
from ..dacecompat.loop_form import LoopRegionForm, body_copy, body_sinks, constant_stride, shifted_condition


# ---------------------------------------------------------------- offload
@properties.make_properties
class OffloadMap(xf.SingleStateTransformation):
    """Moves a top-level map onto device twins of its containers, with copy-in/copy-out."""

    map_entry = xf.PatternNode(nodes.MapEntry)

    @classmethod
    def expressions(cls):
        return [sdutil.node_path_graph(cls.map_entry)]

    def can_be_applied(self, graph: SDFGState, expr_index, sdfg, permissive=False):
        entry = self.map_entry
        if graph.entry_node(entry) is not None:
            return False                        # only whole parallel regions are offloaded
        exit_ = graph.exit_node(entry)
        edges = graph.in_edges(entry) + graph.out_edges(exit_)
        touched = [e for e in edges if e.data.data is not None]
        if not touched:
            return False
        for edge in touched:
            node = edge.src if edge.dst is entry else edge.dst
            if not isinstance(node, nodes.AccessNode):
                return False
            desc = sdfg.arrays[node.data]
            if isinstance(desc, dt.View):
                return False
        return any(isinstance(sdfg.arrays[e.data.data], dt.Array) for e in touched)

    def apply(self, graph: SDFGState, sdfg: SDFG):
        entry = self.map_entry
        exit_ = graph.exit_node(entry)
        reads = [e for e in graph.in_edges(entry) if e.data.data is not None]
        writes = [e for e in graph.out_edges(exit_) if e.data.data is not None]
        twins = {}
        for name in sorted({e.data.data for e in reads + writes}):
            desc = sdfg.arrays[name]
            twins[name], _ = sdfg.add_array(f"device_{name}", desc.shape, desc.dtype, transient=True,
                                            find_new_name=True, lifetime=dace.AllocationLifetime.State)
        for edge in reads:
            self._copy_in(graph, edge.src, edge, twins[edge.data.data])
        copied_in = {e.data.data for e in reads}
        for edge in writes:
            name = edge.data.data
            if name not in copied_in:      # write-only: the twin still starts as the host data
                self._copy_in(graph, graph.add_access(name), edge, twins[name], ordering_only=True)
                copied_in.add(name)
            self._copy_out(graph, edge, twins[name])

    @staticmethod
    def _retarget(graph: SDFGState, edge, twin: str) -> None:
        host = edge.data.data
        for inner in graph.memlet_tree(edge):
            if inner.data.data == host:
                inner.data.data = twin

    def _copy_in(self, graph: SDFGState, host: nodes.AccessNode, edge, twin: str, ordering_only: bool = False) -> None:
        entry = self.map_entry
        device = graph.add_access(twin)
        copy_subset(graph, host, device, edge.data.subset, "copy_in")
        if ordering_only:
            graph.add_nedge(device, entry, Memlet())     # the copy-in happens before the kernel
            return
        self._retarget(graph, edge, twin)
        graph.add_edge(device, None, entry, edge.dst_conn, copy.deepcopy(edge.data))
        graph.remove_edge(edge)

    def _copy_out(self, graph: SDFGState, edge, twin: str) -> None:
        host = edge.dst
        subset = copy.deepcopy(edge.data.subset)
        self._retarget(graph, edge, twin)
        device = graph.add_access(twin)
        graph.add_edge(edge.src, edge.src_conn, device, None, copy.deepcopy(edge.data))
        graph.remove_edge(edge)
        copy_subset(graph, device, host, subset, "copy_out")


@properties.make_properties
class GPUOffloadMap(OffloadMap):
    """Moves a top-level map into a CUDA kernel on GPU twins of its containers."""

    def apply(self, graph: SDFGState, sdfg: SDFG):
        entry = self.map_entry
        exit_ = graph.exit_node(entry)
        reads = [e for e in graph.in_edges(entry) if e.data.data is not None]
        writes = [e for e in graph.out_edges(exit_) if e.data.data is not None]
        read_names = {e.data.data for e in reads}
        twins = {}
        for name in sorted({e.data.data for e in reads + writes}):
            desc = sdfg.arrays[name]
            twins[name], _ = sdfg.add_array(f"gpu_{name}", desc.shape, desc.dtype, transient=True, find_new_name=True,
                                            storage=dace.StorageType.GPU_Global,
                                            lifetime=dace.AllocationLifetime.State)
        copied_in = {}
        for name in sorted(twins):
            # whole arrays: a plain copy edge becomes one cudaMemcpy, and a twin that holds all
            # of the host data can be copied back whole
            host = next((e.src for e in reads if e.data.data == name), None) or graph.add_access(name)
            device = graph.add_access(twins[name])
            memlet = self.copy_in_memlet(sdfg, name, [e for e in reads if e.data.data == name])
            if memlet is None:
                graph.add_nedge(host, device, Memlet())
            else:
                graph.add_edge(host, None, device, None, memlet)
            copied_in[name] = device
        for edge in reads:
            name = edge.data.data
            self._retarget(graph, edge, twins[name])
            graph.add_edge(copied_in[name], None, entry, edge.dst_conn, copy.deepcopy(edge.data))
            graph.remove_edge(edge)
        for name, device in copied_in.items():
            if name not in read_names:
                graph.add_nedge(device, entry, Memlet())   # copied in before the kernel runs
        for edge in writes:
            host, name = edge.dst, edge.data.data
            self._retarget(graph, edge, twins[name])
            device = graph.add_access(twins[name])
            graph.add_edge(edge.src, edge.src_conn, device, None, copy.deepcopy(edge.data))
            graph.remove_edge(edge)
            graph.add_edge(device, None, host, None, Memlet.from_array(twins[name], sdfg.arrays[twins[name]]))
        entry.map.schedule = dace.ScheduleType.GPU_Device

    def copy_in_memlet(self, sdfg: SDFG, name: str, reads) -> Optional[Memlet]:
        """What of ``name`` is copied to its twin before the kernel (None: nothing)."""
        return Memlet.from_array(name, sdfg.arrays[name])


def copy_subset(graph: SDFGState, src: nodes.AccessNode, dst: nodes.AccessNode, subset, label: str) -> None:
    """Copy ``subset`` of ``src`` into the same subset of ``dst``, element by element in a map.

    Not a plain copy edge: a subset such as ``KIDIA - 1:KFDIA`` has a negative extent when
    the window is empty, and DaCe's copy would run with that size. A map over an empty range
    does nothing. (The first version of this transformation used plain copy edges; fuzzing
    it on ``kernels:column_window`` found the crash with KIDIA = 2, KFDIA = 0.)

    Clamped to the array: a propagated memlet over-approximates what a kernel touches, e.g.
    ``ZTP1[jl, jk - 1:jk + 1]`` for a read of level ``jk - 1`` that the kernel makes only when
    ``jk > 0``. Copying it whole wrote before the start of the device twin at ``jk = 0``
    (fuzzing CLOUDSC found the heap corruption as a POST_CRASH, OffloadMap-af5eda96)."""
    index = [f"__c{i}" for i in range(len(subset))]
    shape = graph.sdfg.arrays[src.data].shape
    ranges = {}
    for i, (b, e, s), extent in zip(index, subset.ndrange(), shape):
        low = f"Max(0, {symbolic.symstr(b)})"
        high = f"Min({symbolic.symstr(extent)} - 1, {symbolic.symstr(e)})"
        ranges[i] = f"{low}:{high} + 1:{symbolic.symstr(s)}"
    where = ", ".join(index)
    graph.add_mapped_tasklet(f"{label}_{src.data}", ranges, {"__in": Memlet(f"{src.data}[{where}]")}, "__out = __in",
                             {"__out": Memlet(f"{dst.data}[{where}]")}, external_edges=True,
                             input_nodes={src.data: src}, output_nodes={dst.data: dst})


# ---------------------------------------------------------------- unroll
@properties.make_properties
class UnrollByTwo(LoopRegionForm, DetectLoop, xf.MultiStateTransformation):
    """Runs two iterations per trip of a constant-stride loop, with a remainder check. Loops
    written as states (DaCe 1.0.2) and as LoopRegions (DaCe 2.0) alike."""

    def region_can_be_applied(self, graph, loop, sdfg, info) -> bool:
        return constant_stride(info) not in (None, 0) and len(body_sinks(loop)) == 1

    def region_apply(self, graph, loop, sdfg, info) -> None:
        """After the body, its copy for the next iteration, under the loop's condition for it;
        the update then steps twice."""
        step = symbolic.symstr(info.stride)
        shifted = f"({info.variable} + {step})"
        second = self._second_body(loop, info.variable, shifted)
        guarded = ConditionalBlock(f"{loop.label}_second_guard", sdfg)
        guarded.add_branch(properties.CodeBlock(shifted_condition(loop.loop_condition, info.variable, shifted)),
                           second)
        last = body_sinks(loop)[0]
        loop.add_node(guarded, ensure_unique_name=True)
        loop.add_edge(last, guarded, dace.InterstateEdge())
        loop.update_statement = properties.CodeBlock(f"{info.variable} = {info.variable} + 2 * ({step})")

    def _second_body(self, loop, itervar: str, shifted: str):
        return body_copy(loop, itervar, shifted, f"{loop.label}_second")

    def machine_can_be_applied(self, graph, expr_index, sdfg, permissive=False):
        if expr_index > 1 or not super().machine_can_be_applied(graph, expr_index, sdfg, permissive):
            return False
        info = self.loop_information()
        if not info:
            return False
        itervar, (_, _, stride), (_, last_state) = info
        increment = [e for e in graph.in_edges(self.loop_guard) if e.src is last_state]
        # the second copy's edge replaces the increment: it must assign nothing else
        if len(increment) != 1 or set(increment[0].data.assignments) != {itervar}:
            return False
        return not symbolic.issymbolic(stride) and int(stride) != 0

    def machine_apply(self, graph: ControlFlowRegion, sdfg: SDFG):
        itervar, (_, _, stride), (_, last_state) = self.loop_information()
        guard = self.loop_guard
        begin = self.loop_begin
        body = list(self.loop_body())
        enter = next(e for e in graph.out_edges(guard) if e.dst is begin)
        increment = next(e for e in graph.in_edges(guard) if e.src is last_state)
        step = symbolic.symstr(stride)
        shifted = f"({itervar} + {step})"
        second = copy_loop_body(graph, body, itervar, shifted, "second")
        # the increment may be conditional: when the body ends in an inner loop, it is that
        # loop's exit edge, and every edge that replaces it must keep its condition
        leaves = None if increment.data.is_unconditional() else increment.data.condition.as_string
        # after the first copy: a second iteration when it is still inside the loop ...
        into_second = self._second_entry(enter.data, itervar, shifted)
        next_inside = into_second.condition.as_string
        into_second.condition = properties.CodeBlock(self._both(leaves, next_inside))
        graph.remove_edge(increment)
        graph.add_edge(last_state, second[body.index(begin)], into_second)
        back = copy.deepcopy(increment.data)
        back.replace_dict({itervar: shifted})      # the second copy's exit condition
        back.assignments = {itervar: f"{itervar} + 2 * ({step})"}
        graph.add_edge(second[body.index(last_state)], guard, back)
        # ... otherwise one stride, and the guard ends the loop
        graph.add_edge(last_state, guard, dace.InterstateEdge(
            condition=properties.CodeBlock(self._both(leaves, f"not ({next_inside})")),
            assignments=dict(increment.data.assignments)))

    @staticmethod
    def _both(first, second: str) -> str:
        return second if first is None else f"({first}) and ({second})"

    def _second_entry(self, enter: dace.InterstateEdge, itervar: str, shifted: str) -> dace.InterstateEdge:
        """The loop's entry edge for the next iteration: its condition and also its assignments,
        which may load what the body's branches test (the frontend puts such loads there)."""
        into_second = copy.deepcopy(enter)
        into_second.replace_dict({itervar: shifted})
        return into_second
