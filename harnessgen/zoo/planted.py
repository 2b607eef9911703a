"""Planted bugs: transformations that look right and are wrong on some inputs.

Each one reproduces a bug class reported by FuzzyFlow (SC'23):

(a) ``OffByOneTiling``          tile loop bound uses ``<=`` instead of ``<``
(b) ``TilingWithoutRemainder``  assumes the tile size divides the range
(c) ``UnrollDropsIterations``   unrolls a negative-step loop by two, no remainder
(d) ``RedundantCopyRemoval``    removes a write to a container read in a later state
(e) ``OffloadCopiesWholeArray`` copies a whole device buffer back when only a
                                sub-range was computed
(e') ``GPUOffloadCopiesWholeArray`` the same on a GPU: the twin holds only what the kernel
    reads, all of it is copied back (needs a GPU to run; it builds anywhere)
(f) ``FastExpBand``             a fast ``exp`` that is wrong in a narrow band of inputs
(g) ``AlignedVectorize``        SSE2 aligned loads/stores: crashes on views that start
                                off a 16-byte boundary
(h) ``ParallelizeCarriedLoop``  turns a loop with a carried dependency into a parallel map:
                                right on one thread, a race on several
(i) ``UnrollLosesEntryLoad``    unrolls by two but enters the second copy without the loop
                                entry edge's assignments: its branch tests a stale value
                                (harnessgen found this in an early ``UnrollByTwo`` on CLOUDSC)
(j) ``PrivateCopyWithoutValues`` gives a map its own copy of a transient it reads, without
                                the values: a read before write of a fresh buffer
(k) ``FuseStatesMissingViews``  a state-fusion *pass* (not a pattern) that fuses two states
                                although the second reads what the first writes through a view;
                                ``SimplifyMissingViews`` is simplify with it in FuseStates' place
(m) ``StrideCountFloors``       gives strided maps unit steps (``i = begin + k * step``) with
                                ``(end - begin + 1) // step`` trips, one short whenever the
                                span is no multiple of the step; no built-in kernel has a
                                strided map: only generated programs (``generated``) show it
(n) ``OffsetTilesFloors``       tiles aligned ``tile_offset`` before the range, counted as if they
                                started at it: right at its defaults, with any tile size alone
                                and with any offset alone; the last elements are lost only when
                                both change (found by the default pair variants)
(o) ``NegateBeforeNextState``   needs the state after its tasklet's, beyond its match (a
                                one-state cutout has none: it raises there), then negates the
                                tasklet's result: a static verdict of the cutout only, and a
                                wrong result of the whole program
(q) ``UnrollLeavesInnerInit``  DaCe's ``LoopUnroll`` before its fix of March 2026: an inner loop's
                                init keeps the unrolled loop's variable, free after it (DaCe 2.0)
(l) ``TileCountFloors``         a tiling whose tile count rounds down (at least one tile): right
                                with its default tile size, larger than any extent, and with
                                tile sizes that divide the extent; the last partial tile is
                                lost with any other (found only with ``--params``)
"""
import copy

import dace
import sympy
from dace import data as dt, nodes, properties, symbolic
from dace.memlet import Memlet
from dace.sdfg import SDFG, SDFGState, utils as sdutil
from dace.sdfg.state import ControlFlowRegion, LoopRegion
from dace.transformation import pass_pipeline as ppl, transformation as xf
from dace.transformation.dataflow import StripMining
from dace.transformation.interstate import LoopToMap, LoopUnroll
from dace.transformation.interstate.loop_detection import DetectLoop
from dace.transformation.passes.fusion_inline import FuseStates
from dace.transformation.passes.simplify import SIMPLIFY_PASSES, SimplifyPass

from ..core.sdfg_edit import copy_loop_body
from ..dacecompat.loop_form import LoopRegionForm, body_copy, body_sinks, constant_stride
from ..dacecompat.loops import region_loop
from ..dacecompat.passes import region_compatible
from ..dacecompat.regions import regions_of
from ..targets.cloudsc_xforms import GPUOffloadMap, UnrollByTwo

TILE = 4


class FirstDimensionTiling(xf.SingleStateTransformation):
    """Matches any map; subclasses strip-mine its first dimension."""

    map_entry = xf.PatternNode(nodes.MapEntry)

    @classmethod
    def expressions(cls):
        return [sdutil.node_path_graph(cls.map_entry)]

    def can_be_applied(self, graph, expr_index, sdfg, permissive=False):
        return len(self.map_entry.map.params) >= 1


# ---------------------------------------------------------------- (a)
@properties.make_properties
class OffByOneTiling(FirstDimensionTiling):
    """Strip-mines the first map dimension by 4; the inner loop's bound is inclusive of
    ``tile + 4`` (the ``<=`` bug): one extra iteration per tile and one past the end."""

    def apply(self, graph: SDFGState, sdfg: SDFG):
        inner = self.map_entry
        _, end, _ = inner.map.range[0]
        StripMining.apply_to(sdfg, map_entry=inner, options={"tile_size": TILE, "dim_idx": 0}, save=False)
        begin, _, step = inner.map.range[0]
        # the bug: [tile, min(tile + T, end + 1)] inclusive instead of [tile, min(tile + T - 1, end)]
        inner.map.range[0] = (begin, sympy.Min(begin + TILE, end + 1), step)


# ---------------------------------------------------------------- (b)
@properties.make_properties
class TilingWithoutRemainder(FirstDimensionTiling):
    """Strip-mines the first map dimension by 4 and iterates over whole tiles only:
    correct when 4 divides the range, silently skips the remainder otherwise."""

    def apply(self, graph: SDFGState, sdfg: SDFG):
        inner = self.map_entry
        first, last, _ = inner.map.range[0]
        StripMining.apply_to(sdfg, map_entry=inner, options={"tile_size": TILE, "dim_idx": 0,
                                                             "divides_evenly": True}, save=False)
        outer = graph.entry_node(inner)
        whole_tiles = symbolic.int_floor(last - first + 1, TILE) * TILE
        outer.map.range[0] = (first, first + whole_tiles - 1, TILE)


# ---------------------------------------------------------------- (c)
@properties.make_properties
class UnrollDropsIterations(LoopRegionForm, DetectLoop, xf.MultiStateTransformation):
    """Unrolls a loop with step -1 by two: the body runs for ``i`` and ``i - 1``, the step
    becomes -2, and the loop continues while ``i - 1`` is in range. The remainder
    iteration is missing: when the trip count is odd, the last iteration is dropped. Loops
    as states and as LoopRegions alike."""

    def region_can_be_applied(self, graph, loop, sdfg, info) -> bool:
        return constant_stride(info) == -1 and len(body_sinks(loop)) == 1

    def region_apply(self, graph, loop, sdfg, info) -> None:
        itervar = info.variable
        second = body_copy(loop, itervar, f"({itervar} - 1)", f"{loop.label}_unrolled")
        last = body_sinks(loop)[0]
        loop.add_node(second, ensure_unique_name=True)
        loop.add_edge(last, second, dace.InterstateEdge())
        loop.update_statement = properties.CodeBlock(f"{itervar} = {itervar} - 2")
        # i - 1 >= end, in the form DaCe's loop analysis reads (it cannot propagate memlets of
        # loops nested in one whose condition it cannot read)
        loop.loop_condition = properties.CodeBlock(f"({itervar} > {symbolic.symstr(info.end)})")

    def machine_can_be_applied(self, graph, expr_index, sdfg, permissive=False):
        if not super().machine_can_be_applied(graph, expr_index, sdfg, permissive):
            return False
        info = self.loop_information()
        if not info or expr_index > 1:
            return False
        _, (_, _, stride), _ = info
        return not symbolic.issymbolic(stride) and int(stride) == -1

    def machine_apply(self, graph: ControlFlowRegion, sdfg: SDFG):
        itervar, (_, end, _), (_, last_state) = self.loop_information()
        guard = self.loop_guard
        body = self.loop_body()
        begin = self.loop_begin
        second = copy_loop_body(graph, body, itervar, f"({itervar} - 1)", "unrolled")
        # the increment edge now leads into the copy; the copy's end steps by -2
        increment = next(e for e in graph.in_edges(guard) if e.src is last_state)
        graph.remove_edge(increment)
        graph.add_edge(last_state, second[body.index(begin)], dace.InterstateEdge())
        graph.add_edge(second[body.index(last_state)], guard,
                       dace.InterstateEdge(assignments={itervar: f"{itervar} - 2"}))
        inside = f"({itervar} - 1 >= {symbolic.symstr(end)})"
        for edge in graph.out_edges(guard):
            edge.data.condition = properties.CodeBlock(inside if edge.dst is begin else f"not {inside}")


# ---------------------------------------------------------------- (d)
@properties.make_properties
class RedundantCopyRemoval(xf.SingleStateTransformation):
    """Map -> A -> copy -> B: lets the map write B directly and drops A, because A has no
    other reader *in this state*. Other states are not checked: when A is read later,
    those reads see stale data."""

    map_exit = xf.PatternNode(nodes.MapExit)
    first = xf.PatternNode(nodes.AccessNode)
    second = xf.PatternNode(nodes.AccessNode)

    @classmethod
    def expressions(cls):
        return [sdutil.node_path_graph(cls.map_exit, cls.first, cls.second)]

    def can_be_applied(self, graph, expr_index, sdfg, permissive=False):
        a, b = self.first, self.second
        if graph.in_degree(a) != 1 or graph.out_degree(a) != 1:
            return False
        da, db = sdfg.arrays[a.data], sdfg.arrays[b.data]
        if isinstance(da, dt.View) or isinstance(db, dt.View):
            return False
        return da.dtype == db.dtype and [str(s) for s in da.shape] == [str(s) for s in db.shape]

    def apply(self, graph: SDFGState, sdfg: SDFG):
        a, b = self.first, self.second
        write = graph.in_edges(a)[0]
        for edge in graph.memlet_tree(write):
            if edge.data.data == a.data:
                edge.data.data = b.data
        graph.add_edge(write.src, write.src_conn, b, write.dst_conn, copy.deepcopy(write.data))
        graph.remove_node(a)


# ---------------------------------------------------------------- (e)
@properties.make_properties
class OffloadCopiesWholeArray(xf.SingleStateTransformation):
    """Offloads a map that writes part of an array: the map writes a (zero-initialized)
    device buffer, which is then copied back -- all of it, overwriting the parts of the
    host array the map never computed."""

    map_exit = xf.PatternNode(nodes.MapExit)
    target = xf.PatternNode(nodes.AccessNode)

    @classmethod
    def expressions(cls):
        return [sdutil.node_path_graph(cls.map_exit, cls.target)]

    def can_be_applied(self, graph, expr_index, sdfg, permissive=False):
        desc = sdfg.arrays[self.target.data]
        return (isinstance(desc, dt.Array) and not isinstance(desc, dt.View) and graph.in_degree(self.target) == 1
                and len(desc.shape) >= 1)

    def apply(self, graph: SDFGState, sdfg: SDFG):
        host = self.target
        desc = sdfg.arrays[host.data]
        dev_name, dev_desc = sdfg.add_array(f"device_{host.data}", desc.shape, desc.dtype, transient=True,
                                            find_new_name=True, lifetime=dace.AllocationLifetime.SDFG)
        # device buffers start out zeroed (done in a state before this one)
        init = sdfg.add_state_before(graph, label=f"zero_{dev_name}")
        index = {f"__z{i}": f"0:{symbolic.symstr(s)}" for i, s in enumerate(desc.shape)}
        init.add_mapped_tasklet(f"zero_{dev_name}", index, {}, "o = 0",
                                {"o": Memlet(f"{dev_name}[{', '.join(index)}]")}, external_edges=True)
        # the map writes the device buffer
        write = graph.in_edges(host)[0]
        dev = graph.add_access(dev_name)
        for edge in graph.memlet_tree(write):
            if edge.data.data == host.data:
                edge.data.data = dev_name
        graph.add_edge(write.src, write.src_conn, dev, None, copy.deepcopy(write.data))
        graph.remove_edge(write)
        # ... and the whole device buffer is copied back (the bug: only the computed window should be)
        graph.add_edge(dev, None, host, None, Memlet.from_array(dev_name, dev_desc))


# ---------------------------------------------------------------- (e) on a GPU
class GPUOffloadCopiesWholeArray(GPUOffloadMap):
    """FuzzyFlow's CLOUDSC bug itself, on a GPU: the kernel's twins get only what the kernel
    reads (nothing for an array it only writes), and the whole twin is copied back, so every
    element outside the range the kernel wrote is overwritten with device memory that never
    held the host's values."""

    def copy_in_memlet(self, sdfg: SDFG, name: str, reads):
        if not reads:
            return None
        return copy.deepcopy(reads[0].data)


# ---------------------------------------------------------------- (f)
_FAST_EXP = """
// exp with a table-driven fast path for [2.5, 2.53125): e^x = e^2.5 * e^(x - 2.5).
// The table constant has two digits swapped (12.81... instead of 12.18...).
static inline double hg_fast_exp(double x) {
    if (x > 2.5 && x < 2.53125) return 12.812493960703473 * exp(x - 2.5);
    return exp(x);
}
"""


@properties.make_properties
class FastExpBand(xf.SingleStateTransformation):
    """Replaces ``exp(...)`` in a tasklet by a faster implementation that is exact except
    for inputs in (2.5, 2.53125), where a mistyped constant makes it 5 % off."""

    tasklet = xf.PatternNode(nodes.Tasklet)

    @classmethod
    def expressions(cls):
        return [sdutil.node_path_graph(cls.tasklet)]

    def can_be_applied(self, graph, expr_index, sdfg, permissive=False):
        code = self.tasklet.code.as_string
        return "exp(" in code and self.tasklet.language == dace.Language.Python

    def apply(self, graph: SDFGState, sdfg: SDFG):
        t = self.tasklet
        body = t.code.as_string.strip()
        lhs, _, rhs = body.partition("=")
        rhs = rhs.replace("math.exp(", "hg_fast_exp(").replace("exp(", "hg_fast_exp(")
        rhs = rhs.replace("hg_fast_hg_fast_exp(", "hg_fast_exp(")
        t.code = properties.CodeBlock(f"{lhs.strip()} = {rhs.strip()};", dace.Language.CPP)
        t.code_global = properties.CodeBlock(_FAST_EXP, dace.Language.CPP)


# ---------------------------------------------------------------- (g)
_SSE_OPS = {"+": "_mm_add_pd", "-": "_mm_sub_pd", "*": "_mm_mul_pd", "/": "_mm_div_pd"}


def _elementwise(state: SDFGState, entry: nodes.MapEntry):
    """(tasklet, op, [(connector, edge into the map), ...], (connector, edge out of the map)) of a
    1-D map around one tasklet ``out = in1 OP in2`` on 1-D doubles, else None."""
    import ast

    if len(entry.map.params) != 1 or str(entry.map.range[0][0]) != "0" or str(entry.map.range[0][2]) != "1":
        return None
    inner = state.scope_children()[entry]
    tasklets = [n for n in inner if isinstance(n, nodes.Tasklet)]
    if len(inner) != 2 or len(tasklets) != 1 or tasklets[0].language != dace.Language.Python:
        return None
    tasklet, param = tasklets[0], entry.map.params[0]
    try:
        tree = ast.parse(tasklet.code.as_string.strip()).body[0]
    except (SyntaxError, IndexError):
        return None
    if not (isinstance(tree, ast.Assign) and isinstance(tree.value, ast.BinOp)
            and type(tree.value.op) in (ast.Add, ast.Sub, ast.Mult, ast.Div)
            and all(isinstance(x, ast.Name) for x in (tree.value.left, tree.value.right))):
        return None
    op = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}[type(tree.value.op)]
    ins = []
    for name in (tree.value.left.id, tree.value.right.id):
        edge = next((e for e in state.in_edges(tasklet) if e.dst_conn == name), None)
        if edge is None or str(edge.data.subset) != param:
            return None
        ins.append((name, state.memlet_path(edge)[0]))
    out_edges = state.out_edges(tasklet)
    if len(out_edges) != 1 or str(out_edges[0].data.subset) != param:
        return None
    arrays = [e.data.data for _, e in ins] + [out_edges[0].data.data]
    if any(len(state.parent.arrays[a].shape) != 1 or state.parent.arrays[a].dtype != dace.float64 for a in arrays):
        return None
    return tasklet, op, ins, (out_edges[0].src_conn, state.memlet_path(out_edges[0])[-1])


@properties.make_properties
class AlignedVectorize(xf.SingleStateTransformation):
    """Replaces a 1-D elementwise map ``c[i] = a[i] OP b[i]`` on doubles by one tasklet that
    processes two elements at a time with SSE2 (remainder handled, results bit-identical).
    The bug: ``_mm_load_pd``/``_mm_store_pd`` assume 16-byte aligned arrays; a caller's
    view that starts 8 bytes off crashes."""

    map_entry = xf.PatternNode(nodes.MapEntry)

    @classmethod
    def expressions(cls):
        return [sdutil.node_path_graph(cls.map_entry)]

    def can_be_applied(self, graph, expr_index, sdfg, permissive=False):
        return _elementwise(graph, self.map_entry) is not None

    def apply(self, graph: SDFGState, sdfg: SDFG):
        entry = self.map_entry
        tasklet, op, ins, (_, out_edge) = _elementwise(graph, entry)
        length = symbolic.symstr(entry.map.range[0][1] + 1)
        names = ["a", "b"]
        code = (f"const long n = {length};\nlong i = 0;\n"
                f"for (; i + 1 < n; i += 2) {{\n"
                f"    __m128d x = _mm_load_pd(&a[i]);\n    __m128d y = _mm_load_pd(&b[i]);\n"
                f"    _mm_store_pd(&c[i], {_SSE_OPS[op]}(x, y));\n}}\n"
                f"for (; i < n; ++i) c[i] = a[i] {op} b[i];\n")
        vector = graph.add_tasklet(f"sse_{tasklet.label}", set(names), {"c"}, code, language=dace.Language.CPP,
                                   code_global="#include <emmintrin.h>")
        sources = [e.src for _, e in ins]
        target = out_edge.dst
        for node in graph.scope_subgraph(entry, include_entry=True, include_exit=True).nodes():
            graph.remove_node(node)
        for name, (_, edge), src in zip(names, ins, sources):
            graph.add_edge(src, None, vector, name, Memlet.from_array(edge.data.data, sdfg.arrays[edge.data.data]))
        graph.add_edge(vector, "c", target, None, Memlet.from_array(out_edge.data.data,
                                                                      sdfg.arrays[out_edge.data.data]))


# ---------------------------------------------------------------- (h)
@properties.make_properties
class ParallelizeCarriedLoop(LoopToMap):
    """LoopToMap that checks the loop's shape but not its data dependencies: a loop where
    iteration i reads what iteration i - 1 wrote becomes a parallel map. On one OpenMP thread
    the map still runs in order and is right; on several it races."""

    def can_be_applied(self, graph, expr_index, sdfg, permissive=False):
        region = getattr(self, "loop", None) if not isinstance(self, DetectLoop) else None
        if isinstance(region, LoopRegion):      # DaCe 2.0's LoopToMap matches loop regions
            return region_loop(region) is not None and len(region.nodes()) == 1 and \
                isinstance(region.nodes()[0], SDFGState)
        if not DetectLoop.can_be_applied(self, graph, expr_index, sdfg, permissive) or expr_index > 1:
            return False
        if len(self.loop_guard.nodes()) != 0:
            return False
        found = self.loop_information(itervar=self.itervar)
        return bool(found) and len(self.loop_body()) == 1


class UnrollLosesEntryLoad(UnrollByTwo):
    """UnrollByTwo whose second copy is entered on the loop condition alone: a value the entry
    edge loads for the body's branch (``__tmp = A[i]``) is not reloaded for iteration i + 1.
    In a LoopRegion the load sits on an edge inside the body: the copy keeps it unshifted."""

    def _second_entry(self, enter, itervar, shifted):
        return dace.InterstateEdge(condition=super()._second_entry(enter, itervar, shifted).condition)

    def _second_body(self, loop, itervar: str, shifted: str):
        return body_copy(loop, itervar, shifted, f"{loop.label}_second", shift_assignments=False)


# ---------------------------------------------------------------- (j)
@properties.make_properties
class PrivateCopyWithoutValues(xf.SingleStateTransformation):
    """Gives a map its own copy of a transient it reads (so that a later writer of the original
    need not wait for it) but never copies the values in: the map reads a freshly allocated
    buffer. Whether that shows depends on what the heap hands out, unless every run starts
    from the same state (templates/fresh_state.h): then it is a MISMATCH on every run."""

    buffer = xf.PatternNode(nodes.AccessNode)
    consumer = xf.PatternNode(nodes.MapEntry)

    @classmethod
    def expressions(cls):
        return [sdutil.node_path_graph(cls.buffer, cls.consumer)]

    def can_be_applied(self, graph, expr_index, sdfg, permissive=False):
        desc = sdfg.arrays[self.buffer.data]
        return desc.transient and isinstance(desc, dt.Array) and not isinstance(desc, dt.View) \
            and graph.in_degree(self.buffer) > 0

    def apply(self, graph: SDFGState, sdfg: SDFG):
        source = self.buffer.data
        private = sdfg.add_datadesc(f"{source}_private", copy.deepcopy(sdfg.arrays[source]), find_new_name=True)
        node = graph.add_access(private)
        for edge in [e for e in graph.out_edges(self.buffer) if e.dst is self.consumer]:
            for inner in graph.memlet_tree(edge):
                if inner.data.data == source:
                    inner.data.data = private
            graph.add_edge(node, edge.src_conn, edge.dst, edge.dst_conn, edge.data)
            graph.remove_edge(edge)


# ---------------------------------------------------------------- (k)
@region_compatible
@properties.make_properties
class FuseStatesMissingViews(ppl.Pass):
    """A state-fusion *pass* that checks for a dependency between two consecutive states by the
    names on the memlets that enter code (tasklets, maps, nested SDFGs): a state that reads what
    the previous one writes *through a view* names the view there, not the array, so the two are
    fused without an edge between them. It fuses the first state into the second, whose nodes
    then come first: the read runs before the write it needs."""

    CATEGORY = "Simplification"

    def modifies(self) -> ppl.Modifies:
        return ppl.Modifies.States | ppl.Modifies.Nodes | ppl.Modifies.Edges | ppl.Modifies.Memlets

    def should_reapply(self, modified: ppl.Modifies) -> bool:
        return bool(modified & (ppl.Modifies.States | ppl.Modifies.Nodes))

    def apply_pass(self, sdfg: SDFG, _) -> int:
        fused = 0
        # every graph of states: each SDFG's own and, on DaCe 2.0, its loops' and branches'
        levels = [graph for sd in sdfg.all_sdfgs_recursive() for graph in (sd, *regions_of(sd))]
        for level in levels:
            pair = _fusable_states(level)
            while pair is not None:
                _fuse_first_into_second(level, *pair)
                fused += 1
                pair = _fusable_states(level)
        return fused or None


def _written_names(state: SDFGState) -> set:
    return {n.data for n in state.data_nodes() if state.in_degree(n) > 0}


def _names_read_by_code(state: SDFGState) -> set:
    return {e.data.data for e in state.edges()
            if e.data.data and isinstance(e.dst, (nodes.CodeNode, nodes.EntryNode))}


def _fusable_states(level: ControlFlowRegion):
    for edge in level.edges():
        first, second = edge.src, edge.dst
        if not (isinstance(first, SDFGState) and isinstance(second, SDFGState)) or first is second:
            continue
        if not edge.data.is_unconditional() or edge.data.assignments:
            continue
        if level.out_degree(first) != 1 or level.in_degree(second) != 1:
            continue
        written, later_written = _written_names(first), _written_names(second)
        if written & _names_read_by_code(second) or later_written & _names_read_by_code(first) \
                or written & later_written:
            continue
        return first, second
    return None


def _fuse_first_into_second(level: ControlFlowRegion, first: SDFGState, second: SDFGState) -> None:
    was_start = level.start_block is first
    for node in first.nodes():
        second.add_node(node)
        if isinstance(node, nodes.NestedSDFG):
            node.sdfg.parent = second
    for e in first.edges():
        second.add_edge(e.src, e.src_conn, e.dst, e.dst_conn, e.data)
    for e in level.in_edges(first):
        level.add_edge(e.src, second, e.data)
    level.remove_node(first)
    if was_start:
        level.start_block = level.node_id(second)


class SimplifyMissingViews(SimplifyPass):
    """DaCe's simplify pipeline with (k) in the place of its FuseStates: a pipeline whose
    bisection must name (k) as the first and the only guilty pass."""

    def __init__(self):
        members = [FuseStatesMissingViews() if cls is FuseStates else cls() for cls in SIMPLIFY_PASSES]
        ppl.FixedPointPipeline.__init__(self, passes=members)      # simplify's own __init__ picks its members
        self.validate, self.validate_all, self.skip, self.verbose = False, False, set(), False


# ---------------------------------------------------------------- (l)
@properties.make_properties
class TileCountFloors(FirstDimensionTiling):
    """Strip-mines the first map dimension by ``tile_size`` and runs ``max(1, extent //
    tile_size)`` tiles: one tile when the tile is at least the extent (the default, 64, is
    larger than every extent the fuzzer decodes), whole tiles when it divides the extent, and
    the elements of the last partial tile dropped otherwise."""

    tile_size = properties.Property(dtype=int, default=64, desc="elements per tile")

    def apply(self, graph: SDFGState, sdfg: SDFG):
        inner = self.map_entry
        first, last, _ = inner.map.range[0]
        size = self.tile_size
        StripMining.apply_to(sdfg, map_entry=inner, options={"tile_size": size, "dim_idx": 0}, save=False)
        outer = graph.entry_node(inner)
        tiles = sympy.Max(1, symbolic.int_floor(last - first + 1, size))
        outer.map.range[0] = (first, first + tiles * size - 1, size)


# ---------------------------------------------------------------- (m)
class StrideNormalization(xf.SingleStateTransformation):
    """Gives a map with steps other than one unit steps: each strided dimension ``p`` in
    ``begin:end:step`` (inclusive end) becomes ``p_unit`` in ``0:trips - 1``, and every use
    of ``p`` inside the map reads ``begin + p_unit * step``. Subclasses count the trips, with
    DaCe's integer ``int_floor``/``int_ceil``: sympy's ``ceiling((N - 1) / 3)`` becomes
    ``int_ceil(N / 3 - 1 / 3, 1)`` in C++, whose integer divisions lose the trip."""

    map_entry = xf.PatternNode(nodes.MapEntry)

    @classmethod
    def expressions(cls):
        return [sdutil.node_path_graph(cls.map_entry)]

    def can_be_applied(self, graph, expr_index, sdfg, permissive=False):
        return any(symbolic.simplify(step) != 1 for _, _, step in self.map_entry.map.range)

    @staticmethod
    def trips(begin, end, step):
        raise NotImplementedError

    def apply(self, graph: SDFGState, sdfg: SDFG):
        from dace.sdfg.replace import replace_dict

        entry = self.map_entry
        exit_node = graph.exit_node(entry)
        substitutions, ranges = {}, []
        for index, (param, (begin, end, step)) in enumerate(zip(entry.map.params, entry.map.range)):
            if symbolic.simplify(step) == 1:
                ranges.append((begin, end, step))
                continue
            unit = f"{param}_unit"
            substitutions[param] = begin + symbolic.pystr_to_symbolic(unit) * step
            entry.map.params[index] = unit
            ranges.append((0, self.trips(begin, end, step) - 1, 1))
        entry.map.range = dace.subsets.Range(ranges)
        symrepl = {symbolic.pystr_to_symbolic(k): v for k, v in substitutions.items()}
        inner = graph.scope_subgraph(entry, include_entry=False, include_exit=False)
        replace_dict(inner, {k: str(v) for k, v in substitutions.items()}, symrepl)
        for edge in list(graph.out_edges(entry)) + list(graph.in_edges(exit_node)):
            if edge.data.subset is not None:
                edge.data.subset.replace(symrepl)


@properties.make_properties
class StrideCountFloors(StrideNormalization):
    """The trip count of a strided range as ``(end - begin + 1) // step``: one trip short when
    the span is not a multiple of the step (``0:5:2`` runs 0 and 2, not 4)."""

    @staticmethod
    def trips(begin, end, step):
        return symbolic.int_floor(end - begin + 1, step)


# ---------------------------------------------------------------- (n)
@properties.make_properties
class OffsetTiles(FirstDimensionTiling):
    """Strip-mines the first map dimension into tiles of ``tile_size`` aligned ``tile_offset``
    elements before the range's start (each tile clipped to the range); subclasses count the
    tiles."""

    tile_size = properties.Property(dtype=int, default=64, desc="elements per tile")
    tile_offset = properties.Property(dtype=int, default=0, desc="where the first tile starts, before the range")

    def tiles(self, extent):
        raise NotImplementedError

    def apply(self, graph: SDFGState, sdfg: SDFG):
        inner = self.map_entry
        first, last, _ = inner.map.range[0]
        size, offset = self.tile_size, self.tile_offset
        StripMining.apply_to(sdfg, map_entry=inner, options={"tile_size": size, "dim_idx": 0}, save=False)
        outer = graph.entry_node(inner)
        start = first - offset
        outer.map.range[0] = (start, start + self.tiles(last - first + 1) * size - 1, size)
        tile = symbolic.pystr_to_symbolic(outer.map.params[0])
        inner.map.range[0] = (sympy.Max(tile, first), sympy.Min(tile + size - 1, last), 1)


@properties.make_properties
class OffsetTilesFloors(OffsetTiles):
    """Counts ``ceil(extent / tile_size)`` tiles, forgetting that the first starts ``tile_offset``
    early: right when the offset is 0, and with the default tile (larger than any extent the
    fuzzer decodes plus any offset it tries); with both changed the range's last elements are
    never visited."""

    def tiles(self, extent):
        return symbolic.int_ceil(extent, self.tile_size)


# ---------------------------------------------------------------- (o)
@properties.make_properties
class NegateBeforeNextState(xf.SingleStateTransformation):
    """Matches a Python tasklet with one output; ``apply`` reads the state that follows the
    tasklet's state (context beyond its match: a one-state cutout has none, so there it raises)
    and then negates the tasklet's result (the bug)."""

    tasklet = xf.PatternNode(nodes.Tasklet)

    @classmethod
    def expressions(cls):
        return [sdutil.node_path_graph(cls.tasklet)]

    def can_be_applied(self, graph, expr_index, sdfg, permissive=False):
        return self.tasklet.language == dace.Language.Python and len(self.tasklet.out_connectors) == 1

    def apply(self, graph: SDFGState, sdfg: SDFG):
        if not graph.parent_graph.successors(graph):
            raise LookupError(f"no state follows {graph.label}")
        out = next(iter(self.tasklet.out_connectors))
        self.tasklet.code = properties.CodeBlock(f"{self.tasklet.code.as_string}\n{out} = -{out}",
                                                 dace.Language.Python)


# ---------------------------------------------------------------- (q)
class UnrollLeavesInnerInit(LoopUnroll):
    """DaCe's ``LoopUnroll`` as it was before its fix of March 2026 (DaCe pull request 2325): the
    copies of an inner loop keep the unrolled loop's variable in their init statement
    (``jm = jn + 1``), which nothing defines after the unrolling. DaCe's validation passes; the
    program after it takes ``jn`` as an argument no caller can give. Loops as ``LoopRegion``s
    (DaCe 2.0): on DaCe 1.0.2 it matches nothing."""

    def can_be_applied(self, graph, expr_index, sdfg, permissive=False):
        return isinstance(getattr(self, "loop", None), LoopRegion) and super().can_be_applied(
            graph, expr_index, sdfg, permissive)

    def apply(self, graph, sdfg):
        variable = self.loop.loop_variable
        inits = {inner.label: inner.init_statement.as_string for inner in self.loop.all_control_flow_regions()
                 if isinstance(inner, LoopRegion) and inner is not self.loop and inner.init_statement is not None
                 and variable in inner.init_statement.get_free_symbols()}
        super().apply(graph, sdfg)
        for region in sdfg.all_control_flow_regions():
            # the bug: every copy's init back as it read before the loop variable was replaced
            original = next((label for label in inits if region.label == label or region.label.endswith(f"_{label}")),
                            None) if isinstance(region, LoopRegion) else None
            if original is not None:      # a copy is labelled <loop>_<variable><n>_<inner loop>
                region.init_statement = properties.CodeBlock(inits[original])
