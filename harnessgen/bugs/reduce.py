"""Program reduction: the smallest program that still shows a bug (C-Reduce's idea on SDFGs).

Starting from a bug's representative cutout (``pre.sdfg``), edits are tried one at a time,
the largest first: remove a state (its neighbours joined), a connected part of a state's
dataflow, a map with its body; cut a loop to one trip, collapse a map to one iteration,
replace a tasklet's code by a plain copy of its first input. After each edit the containers nothing uses any more are dropped. An edit is
kept when the program still validates and the transformation, applied at any of its matches
there, still gives the bug's signature. The pass repeats until no edit is kept or the time is
up (an edit must make the program smaller: fewer states and nodes, else less code or fewer
map dimensions); what is left is written as an ordinary finding folder with its ``repro.py``.

How a program is judged depends on the kind:

- FAILED_TO_APPLY, INVALID_SDFG: the transformation applied to a copy (nothing runs);
- BUILD_FAILURE: post's code generated and checked by the compiler (``-fsyntax-only``);
- MISMATCH, RACE, OOB_WRITE, POST_HANG, POST_CRASH: pre and post built (the shared build cache
  serves repeats) and replayed on the finding's input carried over to the smaller program's
  layout and on boundary seeds; an input with the bug's outcome is localized (or, for a crash,
  run under gdb) for the signature. The reduced program's finding is then triaged as usual,
  which shrinks its input again.
"""
from __future__ import annotations

import dataclasses
import json
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Tuple

from ..core.data import AFL_CONFIGS
from ..core.errors import HarnessgenError, Unsupported
from ..core.files import write_atomic, write_json
from ..core.runtime import Tolerance
from ..cutout.changes import load_change
from ..dacecompat import control_flow_code, copy_sdfg, regions_of
from ..dacecompat.loops import region_loop as for_loop_of_region
from ..engines import RawCrash
from ..harness import judge
from ..harness.build import compile_errors
from ..harness.compiler import CXX, CXXFLAGS
from ..harness.codegen_causes import Cause, diagnostics
from ..harness.judge import JudgeOptions
from ..harness.replay import ReplayWorker
from ..inputs.layout import InputLayout
from ..plan.instances import Instance
from ..triage.classify import Triage, TriageOptions, region
from ..triage.localize import localize
from ..triage.reproducer import write_codegen_finding, write_static_finding
from . import signature as sig
from .cluster import CODEGEN_FAILURE, STATIC_VERDICTS, Bug, load_json, sdfg_size, static_signature
from ..triage.stack import run_gdb

REDUCED_DIR = "reduced"
REDUCTION_FILE = "reduction.json"


@dataclasses.dataclass
class ReduceOptions:
    seconds: float = 60.0          # per bug
    max_candidates: int = 2000
    judge: JudgeOptions = JudgeOptions()    # how the programs are judged (builds in its work dir's cache)
    seeds: int = 12                # boundary seeds per program judged, besides the finding's input


@dataclasses.dataclass
class Reduction:
    bug: str
    kind: str
    representative: str
    before: Tuple[int, int]        # (states, nodes)
    after: Tuple[int, int]
    seconds: float
    candidates: int                # programs judged
    kept: int                      # edits kept
    folder: Optional[str] = None   # the reduced finding (its repro.py), when it was reduced
    reason: str = ""               # why not, or why it stopped

    def to_json(self) -> Dict:
        return dataclasses.asdict(self)


# ------------------------------------------------------------------ size and copies
def program_size(sdfg) -> Tuple[int, int]:
    """(states, nodes), nested SDFGs included: as a finding's size is counted."""
    return sdfg_size(sdfg.to_json())


def _graphs(sdfg) -> List:
    """Every control-flow graph of the program in a fixed order: each SDFG (nested ones too) and
    each of its regions (loops, branches), a conditional block aside (it has branches, not a
    graph of blocks)."""
    from dace.sdfg.state import ConditionalBlock

    return [graph for sd in sdfg.all_sdfgs_recursive()
            for graph in [sd] + [r for r in regions_of(sd) if not isinstance(r, ConditionalBlock)]]


def _states(graph) -> List[Tuple[int, object]]:
    """(position, state) of the states among a graph's blocks."""
    import dace

    return [(s, block) for s, block in enumerate(graph.nodes()) if isinstance(block, dace.SDFGState)]


# ------------------------------------------------------------------ edits
Edit = Callable[[object], None]


def edits(sdfg) -> Iterator[Tuple[str, Edit]]:
    """Every edit of ``sdfg``, largest first; each is addressed by position, so that it
    applies to a copy."""
    import dace
    import networkx as nx

    graphs = _graphs(sdfg)
    for g, graph in enumerate(graphs):
        for chunk in _state_chunks(graph):
            yield f"remove {len(chunk)} blocks from {graph.node(chunk[0]).label}", _remove_states_at(g, chunk)
    for g, graph in enumerate(graphs):
        for s, block in enumerate(graph.nodes()):
            if graph.number_of_nodes() > 1:
                yield f"remove {_kind(block)} {block.label}", _at(g, s, _remove_state)
    for g, graph in enumerate(graphs):
        for s, block in enumerate(graph.nodes()):
            for b, _ in enumerate(getattr(block, "branches", None) or []):
                if len(block.branches) > 1:
                    yield f"drop branch {b} of {block.label}", _at(g, s, _drop_branch(b))
    for g, graph in enumerate(graphs):
        for s, state in _states(graph):
            parts = sorted((sorted(state.node_id(n) for n in part) for part in nx.weakly_connected_components(state.nx)))
            for part in parts:
                yield f"remove {len(part)} node(s) of {state.label}", _at(g, s, _remove_nodes(part))
    for g, graph in enumerate(graphs):
        for s, state in _states(graph):
            for node in state.nodes():
                if isinstance(node, dace.nodes.MapEntry):
                    inside = sorted(state.node_id(n) for n in state.scope_subgraph(node).nodes())
                    yield f"remove map {node.map.label} and its body", _at(g, s, _remove_nodes(inside))
    for g, graph in enumerate(graphs):
        for s, block in enumerate(graph.nodes()):
            if isinstance(block, dace.SDFGState) and _loop_of(graph, block) is not None \
                    and not _one_trip_already(graph, block):
                yield f"one trip of the loop at {block.label}", _at(g, s, _one_trip)
            elif _region_loop_to_cut(block):
                yield f"one trip of the loop {block.label}", _at(g, s, _region_one_trip)
    for g, graph in enumerate(graphs):
        for s, state in _states(graph):
            for node in state.nodes():
                if isinstance(node, dace.nodes.MapEntry) and _collapsible(node):
                    yield f"one iteration of map {node.map.label}", _at(g, s, _one_iteration(state.node_id(node)))
                elif isinstance(node, dace.nodes.Tasklet) and node.out_connectors:
                    yield f"plain copy in tasklet {node.label}", _at(g, s, _plain_tasklet(state.node_id(node)))


def _kind(block) -> str:
    import dace

    return "state" if isinstance(block, dace.SDFGState) else type(block).__name__


def _drop_branch(index: int) -> Callable:
    def apply(graph, conditional) -> None:
        conditional.remove_branch(conditional.branches[index][1])
    return apply


def _region_loop(block):
    """The for-loop a ``LoopRegion`` is (None for any other block, or a loop DaCe cannot read)."""
    from dace.sdfg.state import LoopRegion

    if not isinstance(block, LoopRegion):
        return None
    return for_loop_of_region(block)


def _region_loop_to_cut(block) -> bool:
    """A ``LoopRegion`` DaCe reads whose condition does not yet stop it after one trip."""
    found = _region_loop(block)
    return found is not None and _trip_test(found.variable, found.start) not in block.loop_condition.as_string


def _region_one_trip(graph, loop) -> None:
    """The loop region runs its body only while its variable is still its start."""
    from dace.properties import CodeBlock

    found = _region_loop(loop)
    loop.loop_condition = CodeBlock(f"({loop.loop_condition.as_string}) and {_trip_test(found.variable, found.start)}")


def _state_chunks(graph, smallest: int = 4) -> List[List[int]]:
    """Runs of states in the order the program reaches them (ids in the graph), halves first,
    then quarters..., down to ``smallest``: a large program loses most of itself in a few
    judged candidates (ddmin's idea) before states go one at a time."""
    import networkx as nx

    if graph.number_of_nodes() < 2 * smallest:
        return []
    order = [graph.node_id(state) for state in nx.dfs_preorder_nodes(graph.nx, graph.start_block)]
    chunks, size = [], len(order) // 2
    while size >= smallest:
        chunks += [order[i:i + size] for i in range(0, len(order) - size + 1, size)]
        size //= 2
    return chunks


def _remove_states_at(g: int, ids: List[int]) -> Edit:
    def apply(sdfg) -> None:
        graph = _graphs(sdfg)[g]
        for state in [graph.node(i) for i in ids]:      # objects first: removing renumbers the rest
            _remove_state(graph, state)
    return apply


def _at(g: int, s: int, edit: Callable) -> Edit:
    def apply(sdfg) -> None:
        graph = _graphs(sdfg)[g]
        edit(graph, graph.nodes()[s])
    return apply


def _remove_state(graph, state) -> None:
    """Remove ``state``; a state between one predecessor and one successor is bridged by an
    edge with both edges' conditions and assignments (where they do not conflict)."""
    from dace.properties import CodeBlock
    from dace.sdfg import InterstateEdge

    ins, outs = list(graph.in_edges(state)), list(graph.out_edges(state))
    if graph.start_block is state:
        if len(outs) != 1 or not outs[0].data.is_unconditional():
            raise ValueError("a start state that branches")
        successor = outs[0].dst
        graph.remove_node(state)
        graph.start_block = graph.node_id(successor)
        return
    if outs and len(ins) == 1 and len(outs) == 1:
        a, b = ins[0].data, outs[0].data
        if not (a.is_unconditional() or b.is_unconditional()) or set(a.assignments) & set(b.assignments):
            raise ValueError("conditions or assignments that do not join")
        condition = b.condition if a.is_unconditional() else a.condition
        graph.add_edge(ins[0].src, outs[0].dst, InterstateEdge(condition=CodeBlock(condition.as_string),
                                                               assignments={**a.assignments, **b.assignments}))
    elif outs:
        raise ValueError("a state with several predecessors and successors")
    graph.remove_node(state)


def _remove_nodes(ids: List[int]) -> Callable:
    def apply(graph, state) -> None:
        state.remove_nodes_from([state.node(i) for i in ids])
    return apply


def _loop_of(graph, guard):
    """(iteration variable, start, the edge into the body, the edge out) of the loop ``guard``
    tests, as DaCe's loop detection finds it; None when ``guard`` is no loop guard."""
    import networkx as nx
    from dace.transformation.interstate.loop_detection import find_for_loop

    outs = graph.out_edges(guard)
    if len(outs) != 2:
        return None
    # the body is the way that comes back to the guard; the other leaves the loop
    back = [nx.has_path(graph.nx, e.dst, guard) for e in outs]
    if back.count(True) != 1:
        return None
    body, leave = (outs[0], outs[1]) if back[0] else (outs[1], outs[0])
    try:
        found = find_for_loop(graph, guard, body.dst)
    except Exception:  # noqa: BLE001 -- DaCe's detection gives up on shapes it does not know
        found = None
    if found is None:
        return None
    itervar, (start, _, _), _ = found
    return itervar, start, body, leave


def _trip_test(itervar: str, start) -> str:
    return f"({itervar} == {start})"


def _one_trip_already(graph, guard) -> bool:
    itervar, start, body, _ = _loop_of(graph, guard)
    return _trip_test(itervar, start) in body.data.condition.as_string


def _one_trip(graph, guard) -> None:
    """The loop enters its body only while the iteration variable is still its start: at most
    one trip, whatever the step (a loop that made no trip still makes none)."""
    from dace.properties import CodeBlock

    itervar, start, body, leave = _loop_of(graph, guard)
    test = f"({body.data.condition.as_string}) and {_trip_test(itervar, start)}"
    body.data.condition = CodeBlock(test)
    leave.data.condition = CodeBlock(f"not ({test})")


def _collapsible(entry) -> bool:
    return any(_constant(e - b) not in (0, None) for b, e, _ in entry.map.range.ndrange())


def _constant(value) -> Optional[int]:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _one_iteration(node_id: int) -> Callable:
    def apply(graph, state) -> None:
        from dace import subsets

        entry = state.node(node_id)
        entry.map.range = subsets.Range([(b, b, 1) for b, _, _ in entry.map.range.ndrange()])
    return apply


def _plain_tasklet(node_id: int) -> Callable:
    def apply(graph, state) -> None:
        import dace
        from dace.properties import CodeBlock

        tasklet = state.node(node_id)
        source = sorted(tasklet.in_connectors)
        body = "\n".join(f"{out} = {source[0] if source else 0}" for out in sorted(tasklet.out_connectors))
        if tasklet.code.as_string.strip() == body:
            raise ValueError("already plain")
        tasklet.code = CodeBlock(body, dace.Language.Python)
    return apply


def weight(sdfg) -> Tuple[int, int]:
    """What an edit must make smaller: states and nodes, then loops that may make more than one
    trip, tasklet code and map dimensions that iterate more than once."""
    import dace

    states, nodes = program_size(sdfg)
    rest = sum(1 for graph in _graphs(sdfg) for _, state in _states(graph)
               if _loop_of(graph, state) is not None and not _one_trip_already(graph, state))
    rest += sum(1 for graph in _graphs(sdfg) for block in graph.nodes()
                if _region_loop_to_cut(block))
    for node, _ in sdfg.all_nodes_recursive():
        if isinstance(node, dace.nodes.Tasklet):
            rest += len(node.code.as_string)
        elif isinstance(node, dace.nodes.MapEntry):
            rest += sum(1 for b, e, _ in node.map.range.ndrange() if _constant(e - b) != 0)
    return states + nodes, rest


def drop_unused_containers(sdfg) -> None:
    """Access nodes nothing reads or writes, then containers no access node, nested connector
    or interstate edge of their SDFG names."""
    import dace

    for graph in _graphs(sdfg):
        for _, state in _states(graph):
            state.remove_nodes_from([n for n in state.nodes() if isinstance(n, dace.nodes.AccessNode)
                                     and state.degree(n) == 0])
    for graph in sdfg.all_sdfgs_recursive():
        used = set()
        for state in graph.states():
            for node in state.nodes():
                if isinstance(node, dace.nodes.AccessNode):
                    used.add(node.data)
        for edge in control_flow_code(graph):
            used |= sig.identifiers(edge.condition.as_string)
            for value in edge.assignments.values():
                used |= sig.identifiers(str(value))
        if graph.parent_nsdfg_node is not None:
            used |= set(graph.parent_nsdfg_node.in_connectors) | set(graph.parent_nsdfg_node.out_connectors)
        for name in [n for n in graph.arrays if n not in used]:
            graph.remove_data(name, validate=False)


# ------------------------------------------------------------------ judging a program
class Judge:
    """Whether the bug's change, made to a program at any place it applies there
    (``Change.variants``), still shows the bug's signature: what shows it, or None."""

    def __init__(self, bug: Bug, change, instance, same_signature: bool = True):
        self.target, self.kind = bug.signature, bug.signature.kind
        self.change, self.instance = change, instance
        # False: judging the bug on another DaCe, where DaCe's own lines have moved: the same
        # kind and what of the signature holds across versions (``version_stable``) will do
        self.same_signature = same_signature
        self.tried = 0              # places the change was made at, over every call
        self.otherwise = ""         # a finding of the bug's kind that is not the bug (another DaCe)

    def __call__(self, sdfg):
        for pair in self.change.variants(sdfg, self.instance):
            self.tried += 1
            try:
                found = self.judge_pair(pair, sdfg)
            except (HarnessgenError, Unsupported):     # this variant does not build or run: not the bug
                continue
            if found is not None:
                pair.instance = dataclasses.replace(pair.instance, id=f"{self.instance.id}-reduced")
                return found
        return None

    def judge_pair(self, pair, sdfg):
        raise NotImplementedError


class StaticJudge(Judge):
    """The exception or invalid SDFG the change leaves, or the compiler's first error on post's
    code: (pair, message)."""

    def judge_pair(self, pair, sdfg):
        names = sig.program_names(sdfg.to_json())
        if pair.verdict is not None and pair.verdict.name in STATIC_VERDICTS:     # PASS: post was made
            found = static_signature(pair.verdict.name, self.target.transformation, pair.error, names)
            message = pair.error
        elif self.kind == "BUILD_FAILURE":
            message = compile_errors(pair.post)
            if message is None:
                return None
            found = sig.build_signature(self.target.transformation, message, names)
        else:
            return None
        if self.same_signature:
            return (pair, message) if found.key == self.target.key else None
        if found.kind != self.kind:
            return None
        if sig.version_stable(found) != sig.version_stable(self.target):
            self.otherwise = self.otherwise or message
            return None
        return pair, message


DYNAMIC_KINDS = ("MISMATCH", "RACE", "OOB_WRITE", "POST_HANG", "POST_CRASH")


class DynamicJudge(Judge):
    """Pre and post built and replayed on the finding's input (carried over to the program's
    layout) and boundary seeds; an input with the bug's outcome is localized (or run under gdb)
    for its signature: (pair, build, failing input)."""

    def __init__(self, bug: Bug, change, instance, meta: Dict, options: ReduceOptions, same_signature: bool = True):
        super().__init__(bug, change, instance, same_signature)
        self.options = options
        self.tolerance = Tolerance.from_json(meta["tolerance"]) if meta.get("tolerance") else Tolerance()
        self.threads = int(meta.get("threads") or 1)
        self.repeat = int(meta.get("repro_runs") or 1) if self.kind == "RACE" else 1
        rep = bug.representative.path
        layout_file = Path(meta["build_dir"]) / "layout.json" if meta.get("build_dir") else None
        self.source_layout = InputLayout.load(layout_file) if layout_file and layout_file.is_file() else None
        self.source_input = (rep / "input.bin").read_bytes() if (rep / "input.bin").is_file() else b""
        constraints = AFL_CONFIGS / f"{instance.target}.constraints.json"
        self.judging = dataclasses.replace(options.judge, tolerance=self.tolerance,
                                           constraints=constraints if constraints.is_file() else None)

    def judge_pair(self, pair, sdfg):
        if pair.verdict is not None and pair.verdict.name in STATIC_VERDICTS:
            return None
        prepared = judge.prepare(pair, self.judging)
        layout, harness = prepared.layout, prepared.harness
        inputs = judge.inputs(layout, self.options.seeds, carried=(
            self.source_layout, [("finding", self.source_input)] if self.source_input else []))
        with ReplayWorker(harness.dir) as worker:
            if self.kind == "POST_HANG":
                worker.timeout_s = 5.0
            for _, data in inputs:
                result = worker.run(data, self.tolerance, self.threads, self.repeat)
                if result.outcome.name != self.kind:
                    continue
                if not self.same_signature:
                    where = f" in {result.container}" if result.container else ""
                    return pair, harness, data, (result.message or f"{result.outcome.name}{where}")
                if self._signature(pair, layout, harness, data, result).key == self.target.key:
                    return pair, harness, data
        return None

    def _signature(self, pair, layout, harness, data: bytes, result) -> sig.Signature:
        if self.kind == "POST_CRASH":
            with tempfile.TemporaryDirectory(prefix="hg-reduce-") as tmp:
                path = Path(tmp) / "input.bin"
                path.write_bytes(data)
                stack = run_gdb(harness.harness_replay, path)
            return sig.crash_signature(self.target.transformation, (region(result, layout) or ("",))[0], stack)
        divergence = None
        if self.kind in ("MISMATCH", "OOB_WRITE", "RACE"):
            try:
                found = localize(pair, layout, data, self.judging.work_dir, self.tolerance, threads=self.threads,
                                 attempts=20 if self.kind == "RACE" else 1)
                divergence = found.to_json() if found else None
            except Exception:  # noqa: BLE001 -- unlocalized: the output container speaks for it
                divergence = None
        return sig.divergence_signature(self.kind, self.target.transformation, load_json(harness.dir / "pre.sdfg"),
                                        load_json(harness.dir / "post.sdfg"), result.container, divergence,
                                        region(result, layout))


class CodegenJudge:
    """Whether DaCe's code for a program still fails to compile with a cause's error at its
    line (``codegen_causes.Cause``): (None, the compiler's output), or None."""

    def __init__(self, cause):
        self.cause = cause

    def __call__(self, sdfg):
        message = compile_errors(sdfg)
        if message is not None and self.cause.matches_log(message, sdfg.name):
            return None, message
        return None




# ------------------------------------------------------------------ the loop
def reduce_program(pre, judge: Callable, options: ReduceOptions) -> Tuple[object, object, object, int, int, str]:
    """Greedy: keep the first edit that leaves a smaller program the judge accepts, start over;
    returns (program, its failing pair, what else the judge said of it (a message, or the build
    and the failing input), programs judged, edits kept, why it stopped)."""
    started = time.monotonic()
    found = judge(pre)
    if found is None:
        return pre, None, "", 1, 0, "the representative's cutout does not show the signature again here"
    best, (pair, *evidence) = pre, found
    message = evidence[0] if len(evidence) == 1 else tuple(evidence)
    judged, kept = 1, 0
    while True:
        progress = False
        for _, edit in edits(best):
            if time.monotonic() - started > options.seconds or judged >= options.max_candidates:
                return best, pair, message, judged, kept, "time or candidate budget used up"
            candidate = copy_sdfg(best)
            try:
                edit(candidate)
                drop_unused_containers(candidate)
                candidate.validate()
            except Exception:  # noqa: BLE001 -- an edit that breaks the program is not kept
                continue
            if weight(candidate) >= weight(best):
                continue
            judged += 1
            try:
                result = judge(candidate)
            except Exception:  # noqa: BLE001 -- the judge failing some other way is not the bug
                result = None
            if result is not None:
                pair, *evidence = result
                message = evidence[0] if len(evidence) == 1 else tuple(evidence)
                best, kept, progress = candidate, kept + 1, True
                break
        if not progress:
            return best, pair, message, judged, kept, "no smaller program shows the bug"


def cached_reduction(bug: Bug, out_dir: Path) -> Optional[Reduction]:
    """An earlier reduction of the bug's representative, where its folder is still there."""
    record_file = Path(out_dir) / "bugs" / bug.id / REDUCTION_FILE
    cached = load_json(record_file) if record_file.is_file() else None
    if not cached or cached.get("representative") != str(bug.representative.path):
        return None
    if cached.get("folder") and not Path(cached["folder"]).is_dir():
        return None
    return Reduction(**{**cached, "before": tuple(cached["before"]), "after": tuple(cached["after"])})


def reduce_bug(bug: Bug, out_dir: Path, options: ReduceOptions = ReduceOptions()) -> Reduction:
    """Reduce one bug's representative (cached in ``<out>/bugs/<id>/reduction.json`` for the
    same representative)."""
    import dace

    rep = bug.representative
    folder = Path(out_dir) / "bugs" / bug.id
    record_file = folder / REDUCTION_FILE
    cached = cached_reduction(bug, out_dir)
    if cached is not None:
        return cached
    started = time.monotonic()
    if bug.signature.kind == CODEGEN_FAILURE:
        return _reduce_codegen(bug, folder, record_file, started, options)
    if not (rep.path / "pre.sdfg").is_file():       # pyfuzz's: a generated Python program
        return Reduction(bug=bug.id, kind=bug.signature.kind, representative=str(rep.path), before=rep.size,
                         after=rep.size, seconds=0.0, candidates=0, kept=0,
                         reason="a generated program, minimized by pyfuzz's own shrinker when it was triaged")
    pre = dace.SDFG.from_file(str(rep.path / "pre.sdfg"))
    before = program_size(pre)
    record = Reduction(bug=bug.id, kind=bug.signature.kind, representative=str(rep.path), before=before,
                       after=before, seconds=0.0, candidates=0, kept=0)
    if bug.signature.kind in STATIC_VERDICTS:
        _reduce_static(bug, pre, folder, options, record)
    elif bug.signature.kind in DYNAMIC_KINDS:
        _reduce_dynamic(bug, pre, folder, options, record)
    else:
        record.reason = f"no reduction for {bug.signature.kind}"
    record.seconds = round(time.monotonic() - started, 2)
    write_json(record_file, record.to_json())
    return record


def _reduce_codegen(bug: Bug, folder: Path, record_file: Path, started: float, options: ReduceOptions) -> Reduction:
    """The smallest program DaCe still cannot build for the bug's cause, written as a finding
    of its own (program.sdfg, repro.py, BUG.md) under ``bugs/<id>/reduced/``."""
    import dace

    rep = bug.representative
    meta = load_json(rep.path / "meta.json") or {}
    cause = Cause.from_json(meta)
    program = dace.SDFG.from_file(str(rep.path / "program.sdfg"))
    record = Reduction(bug=bug.id, kind=bug.signature.kind, representative=str(rep.path), before=program_size(program),
                       after=program_size(program), seconds=0.0, candidates=0, kept=0)
    best, _, message, judged, kept, why = reduce_program(program, CodegenJudge(cause), options)
    record.candidates, record.kept, record.reason, record.after = judged, kept, why, program_size(best)
    if judged and message:
        target = folder / REDUCED_DIR / "codegen_failure"
        said = (f"reduced from {record.before[0]} states and {record.before[1]} nodes to {record.after[0]} and "
                f"{record.after[1]} ({kept} edits kept of {judged} programs judged: {why})")
        write_codegen_finding(target, best, cause, diagnostics(message), meta.get("instance", ""),
                              meta.get("target", ""), said, CXX, CXXFLAGS)
        record.folder = str(target)
    record.seconds = round(time.monotonic() - started, 2)
    write_json(record_file, record.to_json())
    return record


def _change_of(spec: str, record: Reduction):
    """The bug's change (a pattern transformation or a pass), or None with the reason recorded."""
    try:
        return load_change(spec)
    except Exception as exc:  # noqa: BLE001 -- the transformation is gone: say so in the report
        record.reason = f"{spec} cannot be loaded here: {type(exc).__name__}: {exc}"
        return None


def _reduce_static(bug: Bug, pre, folder: Path, options: ReduceOptions, record: Reduction) -> None:
    instance = Instance.from_json(json.loads((bug.representative.path / "instance.json").read_text()))
    change = _change_of(instance.transformation_spec, record)
    if change is None:
        return
    best, pair, message, judged, kept, why = reduce_program(pre, StaticJudge(bug, change, instance), options)
    record.candidates, record.kept, record.reason = judged, kept, why
    if pair is None:
        return
    record.after = program_size(best)
    target = folder / REDUCED_DIR / bug.signature.kind.lower()
    write_static_finding(target, pair, bug.signature.kind, message, CXX, CXXFLAGS)
    record.folder = str(target)


def _reduce_dynamic(bug: Bug, pre, folder: Path, options: ReduceOptions, record: Reduction) -> None:
    """Reduce with builds and replays; the smallest program's failing input is triaged like a
    fuzzer's crash (replayed, shrunk, localized, written with its repro.py)."""
    meta = json.loads((bug.representative.path / "meta.json").read_text())
    instance = finding_instance(meta)
    change = _change_of(instance.transformation_spec, record)
    if change is None:
        return
    dynamic = DynamicJudge(bug, change, instance, meta, options)
    best, pair, evidence, judged, kept, why = reduce_program(pre, dynamic, options)
    record.candidates, record.kept, record.reason = judged, kept, why
    if pair is None:
        return
    harness, data = evidence
    keep_root = folder / REDUCED_DIR
    raw = keep_root / "raw" / "reduced-input.bin"
    write_atomic(raw, data)
    kind = {"RACE": "race", "POST_HANG": "hang"}.get(bug.signature.kind, "crash")
    triaged = Triage(harness.dir, TriageOptions(tolerance=dynamic.tolerance, keep_root=keep_root,
                                                work_dir=options.judge.work_dir, race_threads=max(dynamic.threads, 2),
                                                tsan=False)).run([RawCrash(raw, None, kind)])
    if not triaged.findings:
        record.reason = "the reduced program's input did not replay as the same finding"
        return
    record.after = program_size(best)
    record.folder = str(triaged.findings[0].folder)


def finding_instance(meta: Dict):
    """The finding's instance: its build's record where the build is still there, else what
    meta.json says of it."""
    build = meta.get("build_dir")
    if build and (Path(build) / "instance.json").is_file():
        return Instance.from_json(json.loads((Path(build) / "instance.json").read_text()))
    return Instance(id=meta.get("instance", ""), target=meta.get("target", ""), program=meta.get("program", ""),
                    transformation=meta.get("transformation", ""),
                    transformation_spec=meta.get("transformation_spec") or meta.get("transformation", ""),
                    match=meta.get("transformation_json") or {})
