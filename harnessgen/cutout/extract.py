"""Stage 2: cut out the smallest sub-program around an instance, before and after.

``extract`` returns a ``CutoutPair``. A transformation that raises while
applying, or leaves an invalid SDFG, is a *finding* (verdict
``FAILED_TO_APPLY`` / ``INVALID_SDFG``), never a traceback of ours.
"""
from __future__ import annotations

import copy
import dataclasses
import hashlib
import itertools
import json
import pickle
import traceback
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple, Union

from .. import __version__
from ..core import envs
from ..core.errors import Unsupported
from ..core.files import write_atomic
from ..core.names import SYMBOL_INPUT_PREFIX, SYMBOL_OUTPUT_PREFIX
from ..core.outcome import Outcome
from ..core.procs import call_in_fork
from .ordering import new_unordered_accesses
from ..dacecompat import add_nested, copy_sdfg, dace_identity, find_new_name, keep_template, kept_analyses, spare_copy, template_identity
from ..dacecompat.code import code_places, index_bare_reads, new_symbol_arguments, symbol_arguments, symbol_types
from ..plan import passes
from ..plan.instances import MATCH_PLACE_KEYS, Instance, match_settings, rebuild_transformation
from .aliasing import alias_groups, alibi_groups, joint_layout
from .cut import Cut, Later, input_volume
from .regions import region_cuts

PRE_NAME = "hg_pre"
POST_NAME = "hg_post"


@dataclasses.dataclass
class CutoutPair:
    """The cutout before (pre) and after (post) the transformation."""

    instance: Instance
    pre: Any                         # dace.SDFG named hg_pre
    post: Optional[Any]              # dace.SDFG named hg_post (None when the transformation failed)
    input_config: List[str]
    output_config: List[str]
    program_sdfg: Any                # the whole program, for deriving constraints
    translated_match: Dict[str, Any]  # the transformation's JSON relative to pre
    verdict: Outcome = Outcome.PASS
    error: str = ""
    # symbolic element counts of the input configuration, unreduced and as judged (``volumes``)
    input_volume_before: Union[str, Later] = ""
    input_volume_after: str = ""
    # why the cutout is larger than DaCe's: the alias groups it grew past (``aliasing.py``), or
    # the match that held only in a larger cutout
    aliases: List[Dict[str, Any]] = dataclasses.field(default_factory=list)
    grown_for: str = ""
    whole_program: bool = False      # pre is the whole program (``whole_program_pair``)
    # what the change did to the interface that the pair is judged with nonetheless
    # (``_interface_notes``): recorded with the instance, never a finding of its own
    notes: List[str] = dataclasses.field(default_factory=list)
    # accesses post leaves unordered that pre orders (``ordering``): INVALID_SDFG where the
    # harness finds no difference ('' where none)
    unordered: str = ""
    # symbols the cutout assigns that its program reads after it (``Cut.symbol_outputs``): each
    # enters from a container and is written to one at the end, in pre and post
    symbol_outputs: List[str] = dataclasses.field(default_factory=list)
    # the whole program after the change as DaCe made it, before harnessgen adapted post for its
    # harness (``whole_program_pair(keep_as_made=True)``): what DaCe's own build of it builds
    post_as_made: Optional[Any] = None

    @property
    def ok(self) -> bool:
        return self.verdict == Outcome.PASS and self.post is not None

    def volumes(self) -> Tuple[str, str]:
        """(unreduced, as judged) input volumes; the unreduced one measured when first asked."""
        if isinstance(self.input_volume_before, Later):
            self.input_volume_before = self.input_volume_before()
        return self.input_volume_before, self.input_volume_after

    @property
    def containers(self) -> List[str]:
        """Every non-transient container of pre: what the harness decodes and compares."""
        return sorted(name for name, desc in self.pre.arrays.items() if not desc.transient)


def plain_copy(sdfg, name: str):
    """A deep copy as a plain ``dace.SDFG`` (SDFGCutout carries base-SDFG references)."""
    return copy_sdfg(sdfg, name)


def _make_cutout(sdfg, xform, reduce: bool):
    """Alibi nodes keep the cutout's inputs to the subsets the match reads. The cutout takes the
    whole containers instead (larger inputs, the same program) where DaCe 1.0.2 cannot make
    them (it compares a symbolic subset size with 1, ``N > 1``, and sympy refuses), and where
    two alibis of one container would cut apart the memory one node sees (``alibi_groups``).
    Returns (cutout, the alibi groups it grew past)."""
    from dace.sdfg.analysis.cutout import SDFGCutout

    def cut(alibi: bool):
        with kept_analyses.reading(sdfg):
            return SDFGCutout.from_transformation(sdfg, xform, make_side_effects_global=True, use_alibi_nodes=alibi,
                                                  reduce_input_config=reduce)

    try:
        cutout = cut(alibi=True)
    except TypeError as exc:
        if "truth value of Relational" not in str(exc):
            raise
        return cut(alibi=False), []
    groups = [] if _aliases_cut_apart() else alibi_groups(cutout)
    if not groups:
        return cutout, []
    return cut(alibi=False), groups


def _original_states(cutout) -> List[Tuple[Any, Any]]:
    """(cutout state, program state) for every control-flow block of an SDFGCutout."""
    return [(new, old) for new, old in cutout._out_translation.items()
            if hasattr(new, "parent_graph") and hasattr(old, "parent_graph") and hasattr(old, "nodes")]


def _lost_control_flow(cutout) -> List[Tuple[Any, set]]:
    """(program state, program states the cutout must add to keep it whole) for every state of
    a multi-state cutout that kept some of its outgoing edges and lost one that matters: the
    entry of a loop it guards, or a branch along which the program comes back into the
    cutout without passing through that state (an if/else whose other side was left out).
    Losing every edge is how a cutout ends, and losing a loop's exit only ends it after the
    loop; losing a loop body or a branch makes pre a different program (it stops where the
    program goes on)."""
    import networkx as nx
    from dace.transformation.interstate.loop_detection import find_for_loop

    if not _is_cutout(cutout):
        return []
    pairs = _original_states(cutout)
    inside = {old for _, old in pairs}
    lost = []
    for new, old in pairs:
        graph = old.parent_graph
        try:
            kept, had = new.parent_graph.out_degree(new), graph.out_degree(old)
        except Exception:   # not a control-flow block of both graphs
            continue
        if not 0 < kept < had:
            continue
        without = graph.nx.copy()
        without.remove_node(old)
        for edge in graph.out_edges(old):
            if edge.dst in inside:
                continue
            try:
                enters_loop = bool(find_for_loop(graph, old, edge.dst))
            except Exception:   # not a loop DaCe understands
                enters_loop = False
            reached = nx.descendants(without, edge.dst) | {edge.dst}
            if enters_loop:     # the body: what the entry reaches without passing the guard
                lost.append((old, reached))
            elif reached & (inside - {old}):    # the branch, up to where it comes back in
                back = set().union(*(nx.ancestors(without, s) | {s} for s in inside - {old} if s in without))
                lost.append((old, reached & back))
    return lost


def _loop_inits(states: set) -> set:
    """Sources outside ``states`` of edges that set a symbol another edge from inside sets too:
    the initialisation of a loop whose guard and increment are inside. Without it the loop
    variable becomes an argument of the cutout, and DaCe 1.0.2 declares it a second time in
    the generated code once a transformation reshapes the loop (a build failure of the
    harness's making, not the transformation's)."""
    extra = set()
    for state in states:
        edges = state.parent_graph.in_edges(state)
        set_inside = {sym for e in edges if e.src in states for sym in e.data.assignments}
        extra |= {e.src for e in edges if e.src not in states and set(e.data.assignments) & set_inside}
    return extra


def _grown_cutout(cutout, fresh_transformation, instance_id: str, rounds: int = 8):
    """A cutout that lost no loop body or branch: ``cutout`` itself, or ``cutout`` grown by the
    missing states until it lost none. Returns (cutout, the transformation translated into it,
    or None when ``cutout`` was whole). DaCe extends the states to a single entry; growing may
    end at the whole program (a plain SDFG copy). Unsupported when ``rounds`` do not suffice."""
    from dace.sdfg.analysis.cutout import SDFGCutout

    xform = None
    for attempt in range(rounds + 1):
        lost = _lost_control_flow(cutout)
        if not lost:
            return cutout, xform
        if attempt == rounds:
            raise Unsupported(f"DaCe's cutout of {instance_id} keeps only some successors of state "
                              f"{lost[0][0].label}: pre would stop where the program goes on, so no "
                              "difference it shows could be trusted")
        states = {old for _, old in _original_states(cutout)}
        states |= set().union(*(missing for _, missing in lost))
        states |= _loop_inits(states)
        xform = fresh_transformation()
        cutout = SDFGCutout.multistate_cutout(*states, make_side_effects_global=True)
        if _is_cutout(cutout):
            cutout.translate_transformation_into(xform)
        else:
            xform._sdfg = cutout


def _is_cutout(sdfg) -> bool:
    from dace.sdfg.analysis.cutout import SDFGCutout

    return isinstance(sdfg, SDFGCutout)


def _matched_sdfg(program_sdfg, match: Dict[str, Any]):
    """The (nested) SDFG that holds the match."""
    cfg = program_sdfg.cfg_list[max(int(match.get("cfg_id", 0)), 0)]
    return cfg if cfg is cfg.sdfg else cfg.sdfg


def _path_below(node, inner) -> List[Tuple[int, int]]:
    """(state id, node id) of every nested SDFG node from ``node.sdfg`` down to ``inner``."""
    path = []
    while inner is not node.sdfg:
        state = inner.parent
        if state.parent_graph is not state.sdfg:
            raise Unsupported(f"the match lies in a nested SDFG inside a control-flow region ({state.parent_graph.label}):"
                              " harnessgen cannot yet follow it into a grown cutout")
        path.insert(0, (state.sdfg.node_id(state), state.node_id(inner.parent_nsdfg_node)))
        inner = state.sdfg
    return path


def _cut_around(state, node):
    """A single-state cutout of ``node`` with every scope that encloses it in ``state``."""
    from dace.sdfg.analysis.cutout import SDFGCutout

    scope = state.scope_dict()
    top = node
    while scope[top] is not None:
        top = scope[top]
    nodes = state.scope_subgraph(top).nodes() if top is not node else [node]
    return SDFGCutout.singlestate_cutout(state, *nodes, make_side_effects_global=True, use_alibi_nodes=False)


def _aliases_cut_apart() -> bool:
    """The test-only knob that cuts aliased containers apart again (the audit must catch it)."""
    return envs.get("HARNESSGEN_CUT_ALIASES_APART") == "1"


def _used(cutout) -> set:
    """The containers a cutout takes from its place: its non-transient ones."""
    return {name for name, desc in cutout.arrays.items() if not desc.transient}


def _aliased_views(level, used: set) -> List:
    """The alias groups of the nested SDFG ``level`` among the containers ``used`` (by a cutout
    taken inside it); none at the top level."""
    if level.parent_nsdfg_node is None or _aliases_cut_apart():
        return []
    return alias_groups(level.parent, level.parent_nsdfg_node, used)


def _joined_views(program_sdfg, cutout, translated: Dict[str, Any], match: Dict[str, Any]) -> Optional["Cut"]:
    """``cutout`` (taken inside a nested SDFG whose connectors alias) nested once more, in an
    SDFG that passes each alias group as one container, at the program's relative offsets: the
    program's memory without the scopes around the nested SDFG. None where nothing aliases, or
    the offsets cannot be written in the cutout's terms, or the containers it would pass are
    themselves aliased further out (the caller grows the cutout instead)."""
    level = _matched_sdfg(program_sdfg, match)
    used = _used(cutout)
    groups = _aliased_views(level, used)
    if not groups:
        return None
    node, state = level.parent_nsdfg_node, level.parent
    allowed = {str(s) for s in cutout.free_symbols}
    layouts = [joint_layout(state, node, group, allowed) for group in groups]
    if any(layout is None for layout in layouts):
        return None
    outer_used = {e.data.data for e in state.in_edges(node) if e.dst_conn in used} | \
                 {e.data.data for e in state.out_edges(node) if e.src_conn in used}
    if _aliased_views(state.sdfg, outer_used):
        return None
    return _nested_with_joint_containers(cutout, translated, node, groups, layouts)


def _connectors(cutout, program_node) -> Tuple[List[str], List[str]]:
    """The in- and out-connectors of the cutout nested in its own SDFG: the program's nested
    SDFG's for its connectors (a transformation meets the same interface), and for the other
    containers (transients the cutout made global) what the cutout reads and writes."""
    reads, writes = _configs(cutout)
    ins = {n for n in set(reads) | set(writes) if n in program_node.in_connectors}
    outs = {n for n in set(reads) | set(writes) if n in program_node.out_connectors}
    others = (set(reads) | set(writes)) - set(program_node.in_connectors) - set(program_node.out_connectors)
    ins |= others & set(reads)
    # a transient of the program the cutout made global is written whether or not DaCe counts
    # it as an output (it does where the program reads it later)
    outs |= set(written_containers(cutout, sorted(others)))
    return sorted(ins), sorted(outs)


def _nested_with_joint_containers(cutout, translated: Dict[str, Any], program_node, groups, layouts) -> "Cut":
    """One state: each joint container (a flat buffer of the group's length) and each other
    container the cutout takes, passed to the cutout as a nested SDFG, group members at their
    offsets; the match moves into the nested copy, the configurations name the joint
    containers in place of their members."""
    import dace

    inner = plain_copy(cutout, cutout.name)
    target = inner.cfg_list[max(int(translated.get("cfg_id", 0)), 0)]
    reads, writes = _connectors(cutout, program_node)
    inputs, outputs = _configs(cutout)
    wrapper = dace.SDFG(f"{inner.name}_joined")
    symbols = sorted(str(s) for s in inner.free_symbols)
    for sym in symbols:
        wrapper.add_symbol(sym, inner.symbols.get(sym, dace.int64))
    joint = {}
    for group, layout in zip(groups, layouts):
        name = find_new_name(group.container, set(inner.arrays) | set(wrapper.arrays))
        wrapper.add_array(name, [dace.symbolic.pystr_to_symbolic(str(layout.length))],
                          inner.arrays[group.members[0]].dtype)
        joint.update({m: (name, layout.offsets[m], layout.spans[m]) for m in group.members})
    for name in sorted(set(reads) | set(writes)):
        if name not in joint:
            desc = copy.deepcopy(inner.arrays[name])
            desc.transient = False
            wrapper.add_datadesc(name, desc)
    state = wrapper.add_state("joined_views", is_start_block=True)
    nested = add_nested(state, inner, set(reads), set(writes), {s: s for s in symbols})
    accesses = {}

    def memlet(name: str):
        if name not in joint:
            return dace.Memlet.from_array(name, wrapper.arrays[name])
        container, offset, span = joint[name]
        end = dace.symbolic.pystr_to_symbolic(f"{offset} + ({span}) - 1")
        return dace.Memlet(data=container, subset=dace.subsets.Range([(offset, end, 1)]))

    def access(name: str, write: bool):
        container = joint[name][0] if name in joint else name
        if (container, write) not in accesses:
            accesses[(container, write)] = state.add_write(container) if write else state.add_read(container)
        return accesses[(container, write)]

    for name in sorted(reads):
        state.add_edge(access(name, False), None, nested, name, memlet(name))
    for name in sorted(writes):
        state.add_edge(nested, name, access(name, True), None, memlet(name))
    wrapper.reset_cfg_list()

    def outer(names: List[str]) -> List[str]:
        return sorted({joint[n][0] if n in joint else n for n in names})

    aliases = [{**g.to_json(), "joined_as": joint[g.members[0]][0], **layout.to_json()}
               for g, layout in zip(groups, layouts)]
    return Cut(wrapper, {**translated, "cfg_id": wrapper.cfg_list.index(target)}, aliases=aliases,
                configs=(outer(inputs), outer(outputs)))


def _grown_past_aliases(program_sdfg, cutout, match: Dict[str, Any]):
    """``cutout``, or a cutout of the enclosing state around every nested SDFG whose connectors
    alias among the containers the cutout uses (repeated outwards while the enclosing SDFG is
    itself nested and aliased). Returns (cutout, the path of nested SDFG nodes from the new
    cutout's root to the matched SDFG or None when nothing grew, the alias groups)."""
    matched = level = _matched_sdfg(program_sdfg, match)
    groups, around = [], None
    while True:
        found = _aliased_views(level, _used(cutout))
        if not found:
            break
        groups += found
        node, state = level.parent_nsdfg_node, level.parent
        cutout, around = _cut_around(state, node), node
        level = state.sdfg
    if around is None:
        return cutout, None, []
    copied = cutout._in_translation[around]
    start = cutout.start_state
    path = [(cutout.node_id(start), start.node_id(copied))] + _path_below(around, matched)
    return cutout, path, [g.to_json() for g in groups]


def _configs(cutout) -> Tuple[List[str], List[str]]:
    if _is_cutout(cutout):
        return sorted(cutout.input_config), sorted(cutout.output_config)
    # DaCe falls back to a copy of the whole SDFG: every global container is in and out
    everything = sorted(n for n, d in cutout.arrays.items() if not d.transient)
    return everything, everything


def written_containers(sdfg, names: List[str]) -> List[str]:
    """Those of ``names`` that some state of ``sdfg`` (nested ones included) writes."""
    from dace import nodes

    written = {node.data for node, state in sdfg.all_nodes_recursive()
               if isinstance(node, nodes.AccessNode) and state.in_degree(node) > 0}
    return [n for n in names if n in written]


def scalars_to_arrays(sdfg, names: List[str]) -> List[str]:
    """Scalars passed by value in DaCe's ABI cannot be read back: those of ``names`` that
    ``sdfg`` writes (nested SDFGs included) become 1-element arrays, and every place its
    control flow reads one by name (``dacecompat.code_places``: interstate edges, branch
    conditions, loop statements, nested symbol mappings) then reads element 0, or the
    generated code would compare a pointer. A scalar it only reads stays a scalar, passed by
    value as the program passes it. Returns the names converted."""
    import dace

    converted = []
    for name in written_containers(sdfg, names):
        desc = sdfg.arrays[name]
        if isinstance(desc, dace.data.Scalar) and not desc.transient:
            sdfg.arrays[name] = dace.data.Array(desc.dtype, [1], transient=False, storage=desc.storage)
            converted.append(name)
    if converted:
        for place in code_places(sdfg):      # not nested SDFGs': their code reads their own names
            place.replace(index_bare_reads(place.text, converted))
    return converted


def _check_interface(pre, post, whole: bool) -> str:
    """Post must take the same global containers as pre; re-add the ones post dropped. A
    container post made transient is not passed to it (pre's is still compared). Post must
    take no symbol argument a caller of pre does not give (``_free_symbols_problem``; ``whole``:
    pre is the whole program)."""
    problems = []
    pre_globals = {n: d for n, d in pre.arrays.items() if not d.transient}
    for name, desc in pre_globals.items():
        if name not in post.arrays:
            # e.g. a write-elimination removed every use: the container stays untouched in post
            post.add_datadesc(name, copy.deepcopy(desc))
            continue
        other = post.arrays[name]
        if other.transient:
            continue
        if other.dtype != desc.dtype or str(other.shape) != str(desc.shape):
            problems.append(f"container {name} changed from {desc.dtype}{list(desc.shape)} to "
                            f"{other.dtype}{list(other.shape)}")
    for name, desc in post.arrays.items():
        if not desc.transient and name not in pre_globals:
            problems.append(f"post introduced a new global container {name}")
    new_symbols = new_symbol_arguments(pre, post)
    if new_symbols:
        problems.append(_free_symbols_problem(new_symbols, whole))
    return "; ".join(problems)


def _interface_notes(pre, post) -> List[str]:
    """What post takes or leaves that pre does not, where the pair can still be judged: a
    container made transient (the caller's stays as it was: compared with what pre wrote). A
    symbol post reads and no longer declares, though pre takes it (the change removed its last
    assignment in the cutout, and DaCe the declaration with it), is declared in post as pre has
    it, or DaCe cannot generate post. A symbol argument post takes that pre does not never gets
    here (``new_symbol_arguments``): the cutout is grown, and the whole program judges it."""
    import dace

    notes = []
    made_transient = sorted(n for n, d in pre.arrays.items()
                            if not d.transient and n in post.arrays and post.arrays[n].transient)
    if made_transient:
        notes.append(f"post made container(s) {made_transient} transient: it no longer writes the caller's "
                     "(compared with what pre writes)")
    types = {**symbol_types(post), **symbol_types(pre)}
    for name in sorted(symbol_arguments(post) - set(post.symbols) - set(post.arrays)):
        post.add_symbol(name, types.get(name, dace.int64))
    return notes


def _free_symbols_problem(new_symbols: List[str], whole: bool) -> str:
    """What a post that takes symbol arguments its pre does not is: in a cutout, a symbol the
    program may define outside it (judged in a larger cutout, where it has the program's value,
    never a free input that can make post agree); in the whole program, one no caller can give
    a value: the transformation's bug, even where DaCe's validation passes."""
    if whole:
        return (f"the program after the change takes symbol argument(s) {new_symbols} that it did not take: "
                "free in the changed program, where a call with the program's own arguments cannot give them a "
                "value (DaCe's code generator fails on them, or the compiled program reads them unset)")
    return f"post takes symbol argument(s) {new_symbols} that pre does not"


def _symbols_as_outputs(pre, post, names: List[str]) -> Tuple[List[str], List[str]]:
    """Symbols the cutout assigns that its program reads after it, made results: in pre and
    post, a new first state assigns each from an input container ``hg_sym_<name>`` (its value
    where the cutout starts, defined on every path), and a new last state, after every end,
    writes it to ``hg_symout_<name>``, which the harness compares. Returns (inputs, outputs)."""
    import dace

    if not names:
        return [], []
    types = {**symbol_types(post), **symbol_types(pre)}
    for sdfg in (pre, post):
        assignments = {}
        ends = [b for b in sdfg.nodes() if sdfg.out_degree(b) == 0]
        last = sdfg.add_state("hg_symbol_outputs")
        for name in names:
            dtype = types.get(name, dace.int64)
            into, out = SYMBOL_INPUT_PREFIX + name, SYMBOL_OUTPUT_PREFIX + name
            for container in (into, out):
                if container in sdfg.arrays or container in sdfg.symbols:
                    raise Unsupported(f"the cutout already has a container or symbol named {container}")
                sdfg.add_array(container, [1], dtype, transient=False)
            if name not in sdfg.symbols:
                sdfg.add_symbol(name, dtype)
            assignments[name] = f"{into}[0]"
            tasklet = last.add_tasklet(f"hg_symbol_out_{name}", set(), {"value"}, f"value = {name}")
            last.add_edge(tasklet, "value", last.add_write(out), None, dace.Memlet(f"{out}[0]"))
        for end in ends:
            sdfg.add_edge(end, last, dace.InterstateEdge())
        old_start = sdfg.start_block
        first = sdfg.add_state("hg_symbol_entries")
        sdfg.add_edge(first, old_start, dace.InterstateEdge(assignments=assignments))
        sdfg.start_block = sdfg.node_id(first)
    return [SYMBOL_INPUT_PREFIX + n for n in names], [SYMBOL_OUTPUT_PREFIX + n for n in names]


def _value_symbols_as_inputs(pre, post) -> List[str]:
    """Free symbols of pre that hold a float or bool become 1-element input containers.

    DaCe's frontend turns a scalar tested in a condition (``if zdqs > 0``) into an
    interstate symbol of the scalar's type. A cutout that starts after the
    assignment has it as a free symbol, yet the input layout decodes only integer
    symbols (they size containers and bound loops). A value symbol does neither, so
    pre and post get the same new first state that assigns it from a container
    ``hg_sym_<name>``, which the layout decodes like any other float or bool input.
    Returns the new containers' names."""
    import dace
    import numpy as np

    names = [str(s) for s in sorted(pre.free_symbols, key=str)
             if str(s) in pre.symbols and np.dtype(pre.symbols[str(s)].as_numpy_dtype()).kind in "fcb"]
    if not names:
        return []
    for sdfg in (pre, post):
        assignments = {}
        for name in names:
            container = SYMBOL_INPUT_PREFIX + name
            if container in sdfg.arrays or container in sdfg.symbols:
                raise Unsupported(f"the cutout already has a container or symbol named {container}")
            sdfg.add_array(container, [1], pre.symbols[name], transient=False)
            assignments[name] = f"{container}[0]"
        # a new state with one edge into the old start: never on a loop's back edge
        old_start = sdfg.start_block
        first = sdfg.add_state("hg_symbol_inputs")
        sdfg.add_edge(first, old_start, dace.InterstateEdge(assignments=assignments))
        sdfg.start_block = sdfg.node_id(first)
    return [SYMBOL_INPUT_PREFIX + n for n in names]


def _dace_cut(program_sdfg, instance: Instance, cls: type) -> Cut:
    """DaCe's cutout, grown until it lost no loop body or branch and keeps aliased views whole."""
    xform = rebuild_transformation(cls, copy.deepcopy(instance.match), program_sdfg)
    try:
        reduced, alibis = _make_cutout(program_sdfg, xform, reduce=True)
    except Exception as exc:
        raise Unsupported(f"DaCe could not cut out {instance.id}: {type(exc).__name__}: {exc}") from exc
    reduced, grown = _grown_cutout(reduced, lambda: rebuild_transformation(cls, copy.deepcopy(instance.match),
                                                                           program_sdfg), instance.id)
    translated = _translated_json(grown or xform)
    if not _is_cutout(reduced) and translated.get("cfg_id", 0) > 0:
        # DaCe fell back to a copy of the (nested) SDFG holding the match and left the match
        # untranslated: in the copy, that SDFG is the root, and its states keep their ids
        translated["cfg_id"] = 0
    kept_whole = [{**group.to_json(), "kept_whole": "alibi containers"} for group in alibis]
    joined = _joined_views(program_sdfg, reduced, translated, instance.match)
    if joined is not None:
        return dataclasses.replace(joined, control_flow_grown=grown is not None, aliases=kept_whole + joined.aliases,
                                   grown_for="aliased views" if kept_whole else "")
    reduced, nested_path, aliases = _grown_past_aliases(program_sdfg, reduced, instance.match)
    if nested_path is not None:
        translated = copy.deepcopy(instance.match)
    aliases = kept_whole + aliases
    return Cut(reduced, translated, nested_path, aliases, "aliased views" if aliases else "",
                control_flow_grown=grown is not None)


def _larger_cuts(program_sdfg, instance: Instance):
    """Where the match does not hold inside DaCe's cutout (it reads what the cut changed: is a
    container transient, is it read later, an interstate edge of a matched state), larger
    cutouts until it holds: the whole nested SDFG that holds the match (where no connectors of
    it alias), then the whole program, where it matched in the first place."""
    matched = _matched_sdfg(program_sdfg, instance.match)
    if matched is not program_sdfg:
        whole_nested = plain_copy(matched, matched.name)
        match = {**copy.deepcopy(instance.match), "cfg_id": 0}
        grown_for = "the match: the whole nested SDFG"
        if not _aliased_views(matched, _used(whole_nested)):
            yield Cut(whole_nested, match, grown_for=grown_for)
        else:
            joined = _joined_views(program_sdfg, whole_nested, match, instance.match)
            if joined is not None:
                yield dataclasses.replace(joined, grown_for=grown_for)
    yield Cut(program_sdfg, copy.deepcopy(instance.match), grown_for="the match: the whole program")


def _candidate_cuts(program_sdfg, instance: Instance, cls: type):
    """DaCe's cutout, then the larger ones (``_larger_cuts``). Where DaCe cannot make its cutout
    (its ``SDFGCutout`` raises, or it cannot be grown whole), the larger cutouts still judge
    the match, and say why they were taken."""
    try:
        cut = _dace_cut(program_sdfg, instance, cls)
        failed = _invalid(cut.sdfg)
        if failed:
            failed = f"DaCe's own cutout is not a valid SDFG ({failed[:200]})"
        else:
            yield cut
    except Unsupported as exc:
        failed = f"DaCe's own cutout failed ({str(exc)[:200]})"
    for cut in _region_then_larger_cuts(program_sdfg, instance, cls, bool(failed)):
        yield dataclasses.replace(cut, grown_for=f"{failed}; {cut.grown_for}") if failed else cut


def _region_then_larger_cuts(program_sdfg, instance: Instance, cls: type, dace_failed: bool):
    """The cutouts of the regions around a match (``regions``), then the whole nested SDFG and
    the whole program. A region cutout that harnessgen cannot make ends that ladder early (the
    larger cutouts still judge the match) and says why."""
    why = ""
    try:
        yield from region_cuts(program_sdfg, instance, cls, dace_failed)
    except (Unsupported, ValueError, KeyError, IndexError, AttributeError) as exc:
        why = f"the cutouts of the regions around it failed ({type(exc).__name__}: {str(exc)[:160]})"
    for cut in _larger_cuts(program_sdfg, instance):
        yield dataclasses.replace(cut, grown_for=f"{why}; {cut.grown_for}") if why else cut


class _CutsAt:
    """The candidate cutouts of one place of one program (a match's nodes, for one
    transformation class), made as they are first asked for and kept for the next instance at
    that place: a match's parameter variants cut out the same nodes, and only the
    transformation's properties differ (DaCe's cutout and its input reduction were most of a
    variant's cutout). Nothing here is changed by its users: each cut is copied before it is
    transformed, and each instance gets its own match, aliases and configurations."""

    def __init__(self, program_sdfg, made: Iterator[Cut], first: str):
        self.program = program_sdfg           # held: an id() is unique only while its object lives
        self._source, self._made, self._done, self._first = made, [], False, first
        self._unreduced: Optional[Later] = None
        self._volumes: Dict[Tuple[int, Tuple[str, ...]], str] = {}   # id(a cut's SDFG, held), names
        self._plain: Dict[int, Any] = {}      # id(a cut's SDFG, held in _made) -> its plain copy
        self._size: Optional[Tuple[int, int]] = None   # (copies counted, their nodes)

    def cuts(self, instance: Instance) -> Iterator[Cut]:
        """The cuts, smallest first, each with ``instance``'s own properties on its match."""
        settings = match_settings(instance.match)
        for position in itertools.count():
            if position == len(self._made):
                if self._done:
                    return
                try:
                    self._made.append(next(self._source))
                except StopIteration:
                    self._done = True
                    return
                except BaseException:
                    # a cut that failed half-made is made again next time (this place's only: the
                    # others' cuts are whole)
                    for key in [k for k, place in _CUTS_AT.items() if place is self]:
                        del _CUTS_AT[key]
                    raise
            cut = self._made[position]
            # the cut says where the match lies; its properties are all the instance's own (the
            # instance that made the cut may have recorded properties this one leaves at default)
            yield dataclasses.replace(cut, match={**copy.deepcopy(_place(cut.match)), **copy.deepcopy(settings)},
                                      grown_for=cut.grown_for.replace(self._first, instance.id),
                                      aliases=copy.deepcopy(cut.aliases), configs=copy.deepcopy(cut.configs),
                                      symbol_outputs=list(cut.symbol_outputs))

    def sides(self, cut: Cut) -> Tuple[Any, Any]:
        """Pre and post of one of these cuts, plain copies: one copy through JSON per cut (none
        for a cut fresh from JSON), and each side, for every instance that judges the cut, from
        that copy's pickle (a CLOUDSC cut's JSON round trip was most of its copying)."""
        plain = self._plain.get(id(cut.sdfg))
        if plain is None:
            plain = self._plain[id(cut.sdfg)] = cut.sdfg if cut.fresh else plain_copy(cut.sdfg, None)
            keep_template(plain)
        return plain_copy(plain, PRE_NAME), plain_copy(plain, POST_NAME)

    @property
    def size(self) -> int:
        """The nodes of the copies this place holds (its cuts' plain copies; a cut that is the
        program itself is not held by it)."""
        if self._size is None or self._size[0] != len(self._plain):
            self._size = (len(self._plain), sum(_node_count(sdfg) for sdfg in self._plain.values()))
        return self._size[1]

    def unreduced_volume(self, compute: Callable[[], str]) -> Later:
        """The place's unreduced input volume (DaCe's cutout without its reduction), measured
        once, when a pair first asks for it."""
        if self._unreduced is None:
            self._unreduced = Later(compute)
        return self._unreduced

    def volume(self, cut_sdfg, names: List[str]) -> str:
        """``input_volume`` of one of these cuts, once per cut and configuration."""
        key = (id(cut_sdfg), tuple(names))
        if key not in self._volumes:
            self._volumes[key] = input_volume(cut_sdfg, names)
        return self._volumes[key]


# the places whose cuts are kept, newest last. A match's parameter variants are judged in a queue
# of their own, minutes after its defaults (CLOUDSC: 2,472 MapFusionHorizontal instances, 1,306 of
# them variants), so the places are kept by how much they hold, not by how recently they were cut:
# at most _CUTS_KEPT places and _CUTS_KEPT_NODES nodes in their copies (a state's cut is tens of
# nodes, a whole CLOUDSC about 3,000), the oldest large place given up first (a few whole
# programs would otherwise push out a thousand small places)
_CUTS_AT: Dict[Tuple, _CutsAt] = {}
_CUTS_KEPT = 4096
_CUTS_KEPT_NODES = 40000
_LARGE_PLACE_NODES = 1000


def _node_count(sdfg) -> int:
    return sum(1 for _ in sdfg.all_nodes_recursive())


def _place(match: Dict[str, Any]) -> Dict[str, Any]:
    """Where a match lies, without the transformation's properties (``match_settings``)."""
    return {k: v for k, v in match.items() if k in MATCH_PLACE_KEYS}


def _cuts_at(program_sdfg, instance: Instance, cls: type) -> _CutsAt:
    # the test-only knob changes how a place is cut: a cut made under the other setting is another cut
    key = (id(program_sdfg), cls, json.dumps(_place(instance.match), sort_keys=True, default=str),
           _aliases_cut_apart())
    found = _CUTS_AT.pop(key, None)
    if found is None or found.program is not program_sdfg:
        found = _CutsAt(program_sdfg, _candidate_cuts(program_sdfg, instance, cls), instance.id)
    _CUTS_AT[key] = found
    _forget_places()
    return found


def _forget_places() -> None:
    """Keep ``_CUTS_AT`` within its bounds (the newest place always stays)."""
    while len(_CUTS_AT) > _CUTS_KEPT:
        del _CUTS_AT[next(iter(_CUTS_AT))]
    sizes = {key: place.size for key, place in _CUTS_AT.items()}
    total, newest = sum(sizes.values()), next(reversed(_CUTS_AT))
    for threshold in (_LARGE_PLACE_NODES, 0):
        for key in [k for k in list(_CUTS_AT) if sizes[k] > threshold and k != newest]:
            if total <= _CUTS_KEPT_NODES:
                return
            total -= sizes[key]
            del _CUTS_AT[key]


def _matching_cut(cuts: _CutsAt, instance: Instance, cls: type, past: int = 0):
    """The smallest candidate cutout of ``cuts`` inside which the transformation still matches
    (after the ``past`` smallest such), with its pre and post copies and the match relative to them."""
    matching, invalid = 0, []
    for cut in cuts.cuts(instance):
        pre, post = cuts.sides(cut)
        problem = _invalid(pre)
        if problem:             # harnessgen's or DaCe's cutout defect, never post's: the next one up
            invalid.append(f"{cut.grown_for or 'DaCe cutout'}: {problem}")
            continue
        if invalid:
            cut = dataclasses.replace(cut, grown_for=f"{len(invalid)} smaller cutout(s) not a valid SDFG "
                                                     f"({invalid[0][:200]}); {cut.grown_for}")
        match = cut.match_in(pre)
        applied = rebuild_transformation(cls, copy.deepcopy(match), post)
        if can_apply(applied, post):
            if matching == past:
                return cut, pre, post, match, applied
            matching += 1
    if past:
        raise Unsupported(f"{instance.id}: no cutout larger than the {past} already judged holds the match")
    if invalid:
        raise Unsupported(f"{instance.id}: no cutout is a valid SDFG before the transformation "
                          f"(the smallest, {invalid[0][:300]})")
    if instance.params:          # a variant: the transformation declines these values at this match
        raise Unsupported(f"{instance.id}: the transformation does not apply here with "
                          f"{', '.join(f'{k}={v}' for k, v in sorted(instance.params.items()))} "
                          "(its can_be_applied refuses them even in the whole program; the match's defaults are "
                          f"judged as {instance.base})")
    raise Unsupported(f"{instance.id}: the transformation does not match even in a copy of the whole program "
                      "(its can_be_applied depends on something a copy does not keep)")


def _invalid(sdfg) -> str:
    """Why a cutout is not a valid SDFG ('' where it is): a cutout's own defect, never post's
    INVALID_SDFG."""
    try:
        sdfg.validate()
    except Exception as exc:  # noqa: BLE001 -- DaCe's validation raises several kinds
        return f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0]}"
    return ""


def extract(program_sdfg, instance: Instance, cls: type, past: int = 0) -> CutoutPair:
    """Cut out ``instance`` from ``program_sdfg`` and apply the transformation to a copy.
    ``past``: how many of the smallest cutouts that hold the match to pass over (they were
    judged, and the whole-program audit showed them missing what the program computes).

    Where post changes the cutout's interface (a container's type or shape, a container made
    transient...), the change may concern a container that is internal to the program and only
    crosses the cutout's boundary: the next larger cutout is taken, up to the whole program,
    whose interface is the program's own; only a change there is the transformation's."""
    grown = f"the audit: {past} smaller cutout(s) missed a difference of the whole program" if past else ""
    pair = _extract_at(program_sdfg, instance, cls, past, grown)
    skipped = past
    while _judged_again_larger(pair):
        skipped += 1
        try:
            pair = _extract_at(program_sdfg, instance, cls, skipped, _why_larger(pair, skipped - past))
        except Unsupported as exc:
            if pair.error.startswith(STEP_DECLINED_IN_CUTOUT):
                # the whole program's can_be_applied refuses the match: the failure is one only a
                # cutout's shape gives the transformation, never a program DaCe made
                raise Unsupported(f"{instance.id}: a step inside the transformation's apply declines in every cutout "
                                  f"that holds the match, and the whole program does not hold it ({exc})") from exc
            break                    # no larger cutout: the smallest's verdict stands
    return pair


def _judged_again_larger(pair: CutoutPair) -> bool:
    """Whether the cutout's verdict may be the cut's making, judged again in the next larger one:
    post changed the cutout's interface, or a step inside the transformation's apply declined
    there (what that step's can_be_applied reads may lie outside the cutout)."""
    return ((pair.verdict == Outcome.INVALID_SDFG and pair.error.startswith(INTERFACE_CHANGED))
            or (pair.verdict == Outcome.FAILED_TO_APPLY and pair.error.startswith(STEP_DECLINED_IN_CUTOUT)))


def _why_larger(pair: CutoutPair, smaller: int) -> str:
    if pair.error.startswith(INTERFACE_CHANGED):
        return (f"post changed the interface of {smaller} smaller cutout(s) "
                f"({pair.error[len(INTERFACE_CHANGED):][:200]})")
    return (f"a step inside the transformation's apply declined in {smaller} smaller cutout(s) "
            f"({pair.error[len(STEP_DECLINED_IN_CUTOUT):].splitlines()[0][:200]})")


# how a pair's error starts when a transformation's apply failed in a cutout because a step it
# takes inside (another transformation's apply_to) declined there: judged again in a larger one
STEP_DECLINED_IN_CUTOUT = "a step inside apply declined in the cutout: "
# how a pair's error starts when post takes other containers or symbols than pre: in a cutout
# (judged again in a larger one), and in the whole program (the transformation's finding)
INTERFACE_CHANGED = "post changed the cutout's interface: "
PROGRAM_INTERFACE_CHANGED = "post changed the program's interface: "


def _extract_at(program_sdfg, instance: Instance, cls: type, past: int, grown_for: str) -> CutoutPair:
    """``extract`` in the cutout ``past`` steps larger than the smallest that holds the match;
    ``grown_for``: why it was grown."""
    cuts = _cuts_at(program_sdfg, instance, cls)
    cut, pre, post, translated, applied = _matching_cut(cuts, instance, cls, past)
    if grown_for:
        cut = dataclasses.replace(cut, grown_for=f"{grown_for}; {cut.grown_for or 'DaCe cutout'}")
    input_config, output_config = cut.configs or _configs(cut.sdfg)
    after = cuts.volume(cut.sdfg, input_config)
    # a grown cutout is a multi-state one, whose input configuration DaCe does not reduce (a
    # region cutout reduces its own, and says from what)
    grown = cut.control_flow_grown or cut.grown_for
    before = cut.volume_before or (after if grown else cuts.unreduced_volume(
        lambda: _unreduced_volume(program_sdfg, instance, cls)))
    pair = CutoutPair(instance=instance, pre=pre, post=None, input_config=input_config,
                      output_config=output_config, program_sdfg=program_sdfg, translated_match=translated,
                      input_volume_before=before, input_volume_after=after, aliases=cut.aliases,
                      grown_for=cut.grown_for, symbol_outputs=list(cut.symbol_outputs))

    try:
        applied.apply_pattern(append=False)
    except Exception as exc:
        pair = _failed(pair, Outcome.FAILED_TO_APPLY, exc)
        if cut.sdfg is not program_sdfg and _declined_inside_apply(exc):
            pair.error = STEP_DECLINED_IN_CUTOUT + pair.error
        return pair
    return _with_post(pair, post, whole=cut.sdfg is program_sdfg)


def _with_post(pair: CutoutPair, post, whole: bool = False) -> CutoutPair:
    """Give ``pair`` the changed cutout ``post``: INVALID_SDFG where it does not validate or takes
    other containers or symbols than pre; else both made ready for the harness (symbols read
    from data become inputs, output scalars 1-element arrays). ``whole``: the cutout is the
    whole program, whose interface is the program's own (a change to it is the finding)."""
    pre = pair.pre
    try:
        post.validate()
    except Exception as exc:
        pair.post = post            # kept for inspection: what the transformation made
        return _failed(pair, Outcome.INVALID_SDFG, exc)
    problem = _check_interface(pre, post, whole)
    if problem:
        pair.post = post
        pair.verdict = Outcome.INVALID_SDFG
        pair.error = f"{PROGRAM_INTERFACE_CHANGED if whole else INTERFACE_CHANGED}{problem}"
        return pair
    # judged after the dynamic verdict: a wrong result, where the code shows one, says more
    pair.unordered = new_unordered_accesses(pre, post)
    pair.notes += _interface_notes(pre, post)
    symbol_ins, symbol_outs = _symbols_as_outputs(pre, post, pair.symbol_outputs)
    pair.output_config = sorted(set(pair.output_config) | set(symbol_outs))
    value_inputs = _value_symbols_as_inputs(pre, post)
    pair.input_config = input_config = sorted(set(pair.input_config) | set(value_inputs) | set(symbol_ins))
    writable = sorted(set(pair.output_config) | set(input_config))
    # each side's own: a scalar one side writes and the other only reads is an array on the
    # first and passed by value to the second (the harness compares the one buffer both get)
    scalars_to_arrays(pre, writable)
    scalars_to_arrays(post, writable)
    pair.post = post
    return pair


def whole_program_pair(program_sdfg, label: str = "whole-program", transform=None,
                       changed: Optional[Callable[[str], Any]] = None, pre_on_failure: bool = True,
                       keep_as_made: bool = False) -> CutoutPair:
    """The whole program as pre and post. Without ``transform`` post is the program too: that
    checks the harness and the program itself (must always pass, deterministically). With it,
    ``transform(post)`` changes post first, before the harness's adaptations (as ``extract``
    applies a transformation): one that raises Unsupported passes it on, any other exception is FAILED_TO_APPLY, an invalid post or a changed
    interface INVALID_SDFG, in ``verdict`` and ``error`` (``post`` kept for inspection).
    ``changed(name)`` instead gives post already changed, a copy of its own (``AppliedOnce``),
    or raises as the change did. ``pre_on_failure=False``: a pair whose change failed (to apply,
    or to validate) has no pre (None), and perhaps no post, for callers that ask only whether it
    fails: a copy of CLOUDSC is a third of a second, and confirming a cutout's static verdict
    made two (``_changed_post`` asks a forked child instead). ``keep_as_made``: a copy of the
    changed program as DaCe made it, named as the program, is kept in ``post_as_made``."""
    inst = Instance(id=label, target="", program=program_sdfg.name, transformation="identity",
                    transformation_spec="", match={})
    everything = sorted(n for n, d in program_sdfg.arrays.items() if not d.transient)
    pair = CutoutPair(instance=inst, pre=None, post=None,
                      input_config=everything, output_config=everything, program_sdfg=program_sdfg,
                      translated_match={}, whole_program=True)

    changing = transform is not None or changed is not None
    if changing:
        pair.post, failure = _changed_post(program_sdfg, transform, changed, in_a_fork=not pre_on_failure)
        if failure is not None:
            pair.verdict, pair.error = failure
            if pre_on_failure:
                pair.pre = plain_copy(program_sdfg, PRE_NAME)
            return pair
        if keep_as_made:
            # not through JSON: what a change made need not read back (a block class DaCe's
            # serializer does not know), and DaCe's own build never reads it back either
            pair.post_as_made = copy.deepcopy(pair.post)
            pair.post_as_made.name = program_sdfg.name
    else:
        pair.post = plain_copy(program_sdfg, POST_NAME)
    # the program itself, never changed by the transformation (post is a copy of its own)
    pair.pre = plain_copy(program_sdfg, PRE_NAME)
    if changing:
        problem = _check_interface(pair.pre, pair.post, whole=True)
        if problem:
            pair.verdict, pair.error = Outcome.INVALID_SDFG, f"{PROGRAM_INTERFACE_CHANGED}{problem}"
            return pair
        pair.unordered = new_unordered_accesses(pair.pre, pair.post)
        pair.notes += _interface_notes(pair.pre, pair.post)
        _value_symbols_as_inputs(pair.pre, pair.post)
        pair.input_config = sorted(n for n, d in pair.pre.arrays.items() if not d.transient)
    scalars_to_arrays(pair.pre, everything)
    scalars_to_arrays(pair.post, everything)
    return pair


class AppliedOnce:
    """A change to a whole program (a pass), applied once per program: every call gives a copy
    of its own of the program after it, or raises what applying it raised. Every instance of a
    pass meets the same program (CLOUDSC as its frontend wrote it: simplify takes half a minute
    on it each time). The program after it is also kept on disk (``<program cache>/applied/``)
    where the program's content has an identity (``template_identity``): the plan, which applies
    the pass to find its instances, hands it to every worker of every later run."""

    def __init__(self, apply: Callable[[Any], None], identity: str):
        self.apply = apply
        self.identity = identity          # the pass's name and code: what the kept program is for
        # (program, program after it, exception): one program at a time, CLOUDSC's copies are large
        self._made: Optional[tuple] = None

    def __call__(self, program_sdfg) -> Callable[[str], Any]:
        """``changed(name)`` for ``whole_program_pair``: the program after the change, named."""
        def changed(name: str):
            _, after, failure = self._after(program_sdfg)
            if failure is not None:
                raise failure
            return copy_sdfg(after, name)
        return changed

    def offer(self, program_sdfg, post) -> None:
        """``post``: the program after the change, made elsewhere (the plan's enumeration);
        kept on disk unless it is there already."""
        kept = self._kept(program_sdfg)
        if kept is not None and not kept.is_file():
            self._keep(kept, copy_sdfg(post))

    def _after(self, program_sdfg) -> tuple:
        made = self._made
        if made is None or made[0] is not program_sdfg:
            kept = self._kept(program_sdfg)
            after = self._load(kept) if kept is not None and kept.is_file() else None
            made = (program_sdfg, after, None) if after is not None else self._apply(program_sdfg, kept)
            self._made = made
        return made

    @staticmethod
    def _load(kept: Path):
        """The program kept there, as its template; None where the file does not load (it is
        then made again and written over)."""
        pickled = kept.read_bytes()
        try:
            after = pickle.loads(pickled)
        except Exception:  # noqa: BLE001 -- a damaged file only costs the pass's time
            return None
        keep_template(after, pickled=pickled)
        return after

    def _apply(self, program_sdfg, kept: Optional[Path]) -> tuple:
        post = plain_copy(program_sdfg, program_sdfg.name)
        try:
            self.apply(post)
        except Unsupported:
            raise
        except Exception as exc:  # noqa: BLE001 -- every instance of the pass fails alike
            return (program_sdfg, None, exc)
        after = copy_sdfg(post)          # read back from JSON: what a copy of it is kept from
        if kept is not None:
            self._keep(kept, after)
        else:
            keep_template(after)
        return (program_sdfg, after, None)

    def _kept(self, program_sdfg) -> Optional[Path]:
        """Where the program after the change is kept; None where the program has no identity."""
        program = template_identity(program_sdfg)
        if not program:
            return None

        digest = hashlib.sha256(json.dumps([program, self.identity, __version__, dace_identity()]).encode()).hexdigest()[:24]
        return Path(envs.get("HARNESSGEN_PROGRAM_CACHE")) / "applied" / f"{digest}.pickle"

    @staticmethod
    def _keep(kept: Path, after) -> None:
        """Keep ``after`` (an SDFG just read from JSON) as its template and on disk, atomically."""
        pickled = keep_template(after)
        write_atomic(kept, pickled)


def extract_change(program_sdfg, instance: Instance, apply: AppliedOnce, past: int = 0,
                   before_whole: Optional[Callable[[], None]] = None) -> CutoutPair:
    """A pass at one SDFG of a program (``instance.match``: ``{"pass", "sdfg"}``, the SDFG's path
    in ``passes.sdfg_paths``). A nested SDFG is cut out with the state around it, and the pass
    applied to that cutout, where the pass then makes of the nested SDFG exactly what it makes
    of it in the whole program: the cutout holds the whole change. Otherwise (the top level, a
    nested SDFG the pass removed, or one it treats differently inside the cutout), and after
    the audit (``past``), the whole program is pre and the program after the pass is post."""
    path = instance.match.get("sdfg", "")
    if past == 0 and path:
        pair = _nested_change(program_sdfg, instance, apply, path)
        if pair is not None:
            return pair
    if past > (1 if path else 0):
        raise Unsupported(f"{instance.id}: the whole program was judged already; no larger cutout exists")
    if before_whole is not None:
        before_whole()
    pair = whole_program_pair(program_sdfg, instance.id, changed=apply(program_sdfg))
    pair.instance, pair.translated_match = instance, copy.deepcopy(instance.match)
    pair.grown_for = "the pass: the whole program" + (" (after the audit)" if past else "")
    pair.input_volume_before = pair.input_volume_after = input_volume(pair.pre, pair.input_config)
    return pair


def _nested_change(program_sdfg, instance: Instance, apply: AppliedOnce, path: str) -> Optional[CutoutPair]:
    # what needs no pass first: a nested SDFG that cannot be cut out alone never pays for the
    # pass on the whole program (half a minute on CLOUDSC as its frontend wrote it)
    state, node = passes.nested_node(program_sdfg, path)
    try:
        cutout = _cut_around(state, node)
    except Exception:       # noqa: BLE001 -- DaCe could not cut it out: the whole program instead
        return None
    pre = plain_copy(cutout, PRE_NAME)
    try:
        pre.validate()
    except Exception:       # noqa: BLE001 -- a cutout DaCe made invalid is not judged
        return None
    before = passes.fingerprint(node.sdfg)
    inside = [p for p, sub in passes.sdfg_paths(pre).items()
              if p and p.rsplit("/", 1)[-1] == path.rsplit("/", 1)[-1] and passes.fingerprint(sub) == before]
    if len(inside) != 1:
        return None
    post = plain_copy(cutout, POST_NAME)
    try:
        apply.apply(post)
    except Exception:
        return None
    made = passes.sdfg_paths(post).get(inside[0])
    if made is None:
        return None
    try:
        whole_post = apply(program_sdfg)(program_sdfg.name)
    except Exception:       # the whole program's pair says how the pass fails
        return None
    after = passes.sdfg_paths(whole_post).get(path)
    if after is None or passes.fingerprint(made) != passes.fingerprint(after):
        return None                 # the pass does something else here than in the program
    input_config, output_config = _configs(cutout)
    pair = CutoutPair(instance=instance, pre=pre, post=None, input_config=input_config,
                      output_config=output_config, program_sdfg=program_sdfg,
                      translated_match=copy.deepcopy(instance.match),
                      input_volume_before=input_volume(pre, input_config),
                      input_volume_after=input_volume(pre, input_config))
    return _with_post(pair, post)


def _translated_json(xform) -> Dict[str, Any]:
    """The match JSON after DaCe translated it into the cutout.

    ``translate_transformation_into`` updates ``subgraph`` (keyed by pattern
    node) but not ``_subgraph`` (keyed by node id), which is what ``to_json``
    writes; rebuild the latter from the former.
    """
    if hasattr(xform, "expressions") and isinstance(getattr(xform, "_subgraph_user", None), dict):
        expr = xform.expressions()[xform.expr_index]
        xform._subgraph = {expr.node_id(k): v for k, v in xform._subgraph_user.items()}
    return xform.to_json()


def _unreduced_volume(program_sdfg, instance: Instance, cls: type) -> str:
    """Input configuration size without the minimum input-flow reduction (for reporting)."""
    xform = rebuild_transformation(cls, copy.deepcopy(instance.match), program_sdfg)
    try:
        cutout, _ = _make_cutout(program_sdfg, xform, reduce=False)
    except Exception as exc:  # reporting only: say so instead of failing the instance
        return f"unknown ({type(exc).__name__})"
    names, _ = _configs(cutout)
    return input_volume(cutout, names)


def can_apply(xform, sdfg) -> bool:
    """Whether ``xform`` matches in ``sdfg``, asked as DaCe asks before every apply: several
    transformations (StateFusionExtended, MapFusion) compute in ``can_be_applied`` what their
    ``apply`` then uses, so an apply without it transforms differently."""
    try:
        cfg = sdfg.cfg_list[xform.cfg_id]
        graph = cfg.node(xform.state_id) if xform.state_id >= 0 else cfg
    except IndexError:   # the match points at a region the cutout does not have
        return False
    try:
        # the SDFG that holds the match, as DaCe's own matcher passes it (the root's would send a
        # match inside a nested SDFG looking for its containers in the wrong place)
        return bool(xform.can_be_applied(graph, xform.expr_index, cfg.sdfg if hasattr(cfg, "sdfg") else sdfg))
    except Exception:  # a can_be_applied that raises cannot be trusted to say yes
        return False


TRACEBACK_FRAMES = 12


# how DaCe's own apply says the transformation's can_be_applied refused the match
DECLINED_BY_DACE = '"can_be_applied" failed'


def _declined_by_dace(exc: BaseException) -> bool:
    return isinstance(exc, ValueError) and DECLINED_BY_DACE in str(exc)


def _declined_inside_apply(exc: BaseException) -> bool:
    """Whether ``exc`` is DaCe's ``apply_to`` declining a step that a transformation's own
    ``apply`` takes (BufferTiling tiles and fuses by applying other transformations): the
    transformation said it applies, then a step of it could not."""
    if not _declined_by_dace(exc):
        return False
    from dace.transformation.transformation import TransformationBase
    frames = traceback.walk_tb(exc.__traceback__)
    return any(frame.f_code.co_name == "apply" and isinstance(frame.f_locals.get("self"), TransformationBase)
               for frame, _ in frames)


def _declined(exc: Exception, where: str) -> None:
    """A script's own ``apply_to`` that DaCe stops because the transformation's ``can_be_applied``
    refuses the place is the transformation declining, never its failure to apply: Unsupported,
    saying so. (A step declined inside a transformation's apply is that transformation failing.)"""
    if _declined_by_dace(exc) and not _declined_inside_apply(exc):
        raise Unsupported(f"{where}: DaCe's own apply_to declines the place (the transformation's can_be_applied "
                          "says no there): not a failure to apply") from exc


def _change_fails(post, transform) -> Optional[Tuple[Outcome, Exception]]:
    """``transform(post)`` (where given), then ``post`` validated: how that failed (FAILED_TO_APPLY or
    INVALID_SDFG, and the exception), or None. Unsupported passes on."""
    if transform is not None:
        try:
            transform(post)
        except Unsupported:
            raise
        except Exception as exc:
            _declined(exc, "the whole program")
            return Outcome.FAILED_TO_APPLY, exc
    try:
        post.validate()
    except Exception as exc:
        return Outcome.INVALID_SDFG, exc
    return None


def _changed_post(program_sdfg, transform, changed, in_a_fork: bool):
    """(post, None) where the change takes: post a copy of the program with the change made;
    (post or None, (verdict, error)) where it fails to apply or to validate. ``in_a_fork``:
    the question is asked of a forked child first, where the program has a copy made ahead."""
    if transform is not None and changed is None and in_a_fork:
        asked = _changed_in_a_fork(program_sdfg, transform)
        if asked is not None:
            if asked[1] is not None and asked[1][0] == Outcome.INVALID_SDFG:
                _program_validates(program_sdfg)
            return asked
    if changed is None:
        post = plain_copy(program_sdfg, POST_NAME)
    else:
        try:
            post = changed(POST_NAME)
        except Unsupported:
            raise
        except Exception as exc:        # post as it was before the change
            return plain_copy(program_sdfg, POST_NAME), (Outcome.FAILED_TO_APPLY, _error_text(exc))
    failure = _change_fails(post, transform if changed is None else None)
    if failure is not None and failure[0] == Outcome.INVALID_SDFG:
        _program_validates(program_sdfg)
    return post, (None if failure is None else (failure[0], _error_text(failure[1])))


# id(program) -> (the program, held so that its id stays its own; why it does not validate, or "")
_PROGRAM_VALIDITY: Dict[int, Tuple[Any, str]] = {}


def _program_validates(program_sdfg) -> None:
    """An invalid program after a change is the change's only where the program before it, as
    harnessgen holds it, validates (once per program): otherwise Unsupported, saying why."""
    kept = _PROGRAM_VALIDITY.get(id(program_sdfg))
    if kept is None or kept[0] is not program_sdfg:
        kept = _PROGRAM_VALIDITY[id(program_sdfg)] = (program_sdfg, _invalid(program_sdfg))
    if kept[1]:
        raise Unsupported(f"the program itself does not validate as harnessgen holds it ({kept[1][:300]}): an "
                          "invalid program after the change says nothing of the transformation")


def _changed_in_a_fork(program_sdfg, transform):
    """``_changed_post`` asked of a forked child that changes a copy made ahead (``spare_copy``):
    CLOUDSC's copy is a third of a second, and whether a cutout's static verdict shows on the
    whole program is asked of hundreds of instances, nearly all of which fail there in
    milliseconds. (None, (verdict, error)) where it fails, said as this process says it; (post,
    None) where it takes the change (the child's post, through a pickle); None where the
    program has no copy made ahead or the child gave no answer. Unsupported passes on."""
    spare = spare_copy(program_sdfg)
    if spare is None:
        return None

    def ask():
        spare.name = POST_NAME
        try:
            failure = _change_fails(spare, transform)
        except Unsupported as exc:
            return "Unsupported", str(exc)
        return ("", spare) if failure is None else (failure[0].name, _error_text(failure[1]))

    answered, answer = call_in_fork(ask)
    if not answered:
        return None
    verdict, said = answer
    if verdict == "Unsupported":
        raise Unsupported(said)
    return (said, None) if not verdict else (None, (Outcome[verdict], said))


def _failed(pair: CutoutPair, verdict: Outcome, exc: BaseException) -> CutoutPair:
    pair.verdict = verdict
    pair.error = _error_text(exc)
    return pair


def _error_text(exc: BaseException) -> str:
    """The exception and the innermost frames: enough that DaCe's or the transformation's own are
    among them when the standard library's come last (an ast visitor's recursion): bug signatures
    are made of them."""
    said = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return said + "\n" + "".join(traceback.format_tb(exc.__traceback__)[-TRACEBACK_FRAMES:])


def apply_match(cls: type, match: Dict, sdfg) -> bool:
    """Apply ``cls`` at ``match`` (its JSON) in ``sdfg`` in place where DaCe's own check accepts
    it there; whether it did."""
    xform = rebuild_transformation(cls, match, sdfg)
    if not can_apply(xform, sdfg):
        return False
    xform.apply_pattern(append=False)
    return True


def transformed_program(program_sdfg, instance: Instance, cls: type, pre_on_failure: bool = True,
                        keep_as_made: bool = False) -> CutoutPair:
    """Whole-pre (the program) and whole-post (the same match applied to a copy of it); where
    the transformation fails on the whole program, the pair's verdict and error say how
    (``pre_on_failure``: see ``whole_program_pair``)."""
    def apply(post) -> None:
        if not apply_match(cls, copy.deepcopy(instance.match), post):
            raise Unsupported(f"{instance.id} does not match in a copy of the whole program")

    pair = whole_program_pair(program_sdfg, f"{instance.id}-whole", transform=apply, pre_on_failure=pre_on_failure,
                              keep_as_made=keep_as_made)
    pair.instance = dataclasses.replace(instance, id=f"{instance.id}-whole")
    pair.translated_match = copy.deepcopy(instance.match)
    return pair
