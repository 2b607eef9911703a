"""Cutouts of matches that lie in control-flow regions (DaCe 2.0's loops and branches).

DaCe's ``SDFGCutout.from_transformation`` cannot cut out a match whose graph is a region: it
takes the region for an SDFG (``target_sdfg.parent``) and translates the match through the
SDFG's top-level graph (a patch for DaCe is kept under ``dace_patches/``). Its
``singlestate_cutout`` works on a state inside a region, so a single-state match is cut out by
it, and the match is translated here. Every other candidate is harnessgen's own *block
cutout*: blocks of one control-flow graph (a state, a loop, a conditional, the matched blocks)
taken out whole, with what they read and write, into an SDFG of their own:

* a container they use stays transient only where nothing outside them uses it, so every
  value the program reads later is an output, and every value written earlier an input;
* a symbol defined outside them (the variable of a loop around them, an assignment on an
  earlier edge) becomes a free symbol of the cutout, whose range the program's loops give;
* the blocks must have one entry and lead to one exit (otherwise pre would stop where the
  program goes on): where they do not, that candidate is left out, and the next one up, the
  region around them as one block, always does.

Like DaCe's single-state cutouts, each candidate minimises its input configuration: the state's
nodes by DaCe's own minimum cut (``reduce_input_config``), whole blocks by taking in the blocks
on the straight line of control flow before them where that shrinks what the fuzzer must make
(a block that computes a large array from a small one: the small one becomes the input).

Candidates run from the smallest (the state's nodes, the matched blocks) outwards through
every region that holds the match; the caller goes on to the whole nested SDFG and the whole
program. Each candidate's match is checked to be the same place (the same GUIDs), never merely
one the transformation also accepts."""
from __future__ import annotations

import copy
import dataclasses
import re
from typing import Any, Dict, Iterator, List, Optional, Sequence, Set, Tuple

import dace
from dace import nodes
from dace.sdfg import state as sdfg_state
from dace.sdfg.analysis.cutout import SDFGCutout
from dace.transformation import transformation as xf

from ..dacecompat.code import assigned_symbols, live_after, region_code_places, symbol_types
from ..dacecompat import block_at, block_path, copy_sdfg, enclosing_blocks, is_region, kept_analyses, region_kind
from ..plan.instances import Instance, rebuild_transformation
from .cut import VOLUME_PROBE_SIZE, Cut, Later, input_volume, volumes_at

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _state_id(match: Dict[str, Any]) -> int:
    """A single-state match's state (DaCe 2.0 leaves a property at its default, 0, unwritten)."""
    return int(match.get("state_id", 0))


@dataclasses.dataclass
class Location:
    """Where a match lies: the SDFG that holds it, the control-flow graph its ids refer to
    (the SDFG itself, or a region of it), and that graph's path from the SDFG."""

    sdfg: Any
    graph: Any
    path: Tuple[int, ...]

    @property
    def in_region(self) -> bool:
        return self.graph is not self.sdfg


def locate(program_sdfg, match: Dict[str, Any]) -> Location:
    graph = program_sdfg.cfg_list[max(int(match.get("cfg_id", 0)), 0)]
    sdfg = graph if isinstance(graph, dace.SDFG) else graph.sdfg
    return Location(sdfg, graph, block_path(sdfg, graph))


def region_cuts(program_sdfg, instance: Instance, cls: type, dace_failed: bool) -> Iterator[Cut]:
    """The candidate cutouts of a match inside a region, smallest first; of a match among an
    SDFG's own blocks only where DaCe's cutout failed (a matched block is a region, or DaCe's
    cutout is not a valid SDFG)."""
    where = locate(program_sdfg, instance.match)
    if not (where.in_region or dace_failed):
        return
    original = rebuild_transformation(cls, copy.deepcopy(instance.match), program_sdfg)
    # each cut only reads the program: DaCe's analyses of it are kept for the next (never held
    # open across a yield, where the caller works on other SDFGs)
    if issubclass(cls, xf.SingleStateTransformation):
        with kept_analyses.reading(program_sdfg):
            cut = _state_cut(where, original, instance.match)
        if cut is not None:
            yield cut
        first = [where.graph.node(_state_id(instance.match))]
    else:
        first = _matched_blocks(original, where.graph)
    for graph, blocks, why in _ladder(where, first):
        with kept_analyses.reading(program_sdfg):
            cut = _reduced_block_cut(where, graph, blocks, instance.match, original, why)
        if cut is not None:
            yield cut


def matched_elements(xform) -> Dict[str, Any]:
    """The nodes or blocks a match binds, by pattern name (those of other expressions left out)."""
    found = {}
    for name in xform._get_pattern_nodes():
        try:
            found[name] = getattr(xform, name)
        except (KeyError, IndexError, AttributeError):
            continue
    return found


def _matched_blocks(xform, graph) -> List:
    found = []
    for node in matched_elements(xform).values():
        if isinstance(node, sdfg_state.ControlFlowBlock) and node in graph.nodes() and node not in found:
            found.append(node)
    return found


def _ladder(where: Location, first: List) -> Iterator[Tuple[Any, List, str]]:
    """(graph, its blocks, why) from the matched blocks up to the outermost region around them."""
    graph, blocks = where.graph, first
    yield graph, blocks, f"a match inside a {region_kind(graph)} ({graph.label}): the matched block(s) whole"
    for block in enclosing_blocks(where.sdfg, graph):
        parent = block.parent_graph
        if isinstance(parent, sdfg_state.ConditionalBlock):
            continue                      # a branch is cut out with its conditional block
        yield parent, [block], f"a match inside a {region_kind(graph)}: the {region_kind(block)} {block.label} whole"


# ------------------------------------------------------------------ the state's nodes
def _state_cut(where: Location, original, match: Dict[str, Any]) -> Optional[Cut]:
    """DaCe's single-state cutout of the match's nodes (with their scopes), the match translated."""
    state = where.graph.node(_state_id(match))
    affected = _affected_nodes(original, state)
    cutout = _single_state_cutout(state, affected, reduce=True)
    reduced = cutout is not None
    if not reduced:
        cutout = _single_state_cutout(state, affected, reduce=False)
    if cutout is None:   # DaCe could not cut these nodes out: the blocks around them can
        return None
    start = cutout.start_block
    subgraph = {}
    for key, node_id in match.get("_subgraph", {}).items():
        node = state.node(int(node_id))
        if node not in cutout._in_translation:
            return None
        subgraph[key] = start.node_id(cutout._in_translation[node])
    taken = {node for node in cutout._in_translation if isinstance(node, nodes.Node) and node in state.nodes()}
    outside = _accessed_outside(where.sdfg, [state], cutout_nodes=taken)
    _globalize(cutout, outside)
    inputs, outputs = sorted(cutout.input_config), sorted(cutout.output_config | (outside & _written(cutout)))
    translated = {**match, "cfg_id": 0, "state_id": cutout.node_id(start), "_subgraph": subgraph}
    copied = copy_sdfg(cutout, cutout.name)
    if not _same_place(original, translated, copied, type(original)):
        return None
    before = Later(lambda: _unreduced_state_volume(state, affected)) if reduced else \
        input_volume(cutout, sorted(cutout.input_config))
    return Cut(copied, translated, configs=(inputs, outputs), volume_before=before, fresh=True,
               grown_for=f"a match inside a {region_kind(where.graph)} ({where.graph.label}): its state's nodes")


def _unreduced_state_volume(state, affected: Set) -> str:
    """The input volume of DaCe's cutout of ``affected`` before its reduction."""
    plain = _single_state_cutout(state, affected, reduce=False)
    return "unknown (DaCe's unreduced cutout failed)" if plain is None else \
        input_volume(plain, sorted(plain.input_config))


def _single_state_cutout(state, affected: Set, reduce: bool):
    """DaCe's cutout of ``affected`` (``reduce``: grown by its minimum cut to the smallest input
    configuration); None where DaCe cannot make it."""
    try:
        return SDFGCutout.singlestate_cutout(state, *affected, make_side_effects_global=True,
                                            use_alibi_nodes=False, reduce_input_config=reduce,
                                            preserve_guids=True)
    except Exception:   # noqa: BLE001 -- DaCe's cutout raises several kinds
        return None


def _affected_nodes(xform, state) -> Set:
    """The matched nodes, each map with its whole scope and the data nodes it reads from and
    writes to. DaCe finds those through the memlet paths of the scope's inner edges, which end
    at the first data node inside the scope: where the body starts with one (DaCe 2.0's
    frontend writes ``A_index`` nodes there), the cutout would lose the map's inputs."""
    affected = set()
    for node in matched_elements(xform).values():
        if node not in state.nodes():
            continue
        affected.add(node)
        entry = node if isinstance(node, nodes.EntryNode) else \
            state.entry_node(node) if isinstance(node, nodes.ExitNode) else None
        if entry is not None:
            affected |= set(state.scope_subgraph(entry, include_entry=True, include_exit=True).nodes())
            affected |= _outer_data_nodes(state, entry)
    return affected


def _outer_data_nodes(state, entry) -> Set:
    """The data nodes directly outside a scope's entry and exit."""
    exit_node = state.exit_node(entry)
    found = {e.src for e in state.in_edges(entry) if isinstance(e.src, nodes.AccessNode)}
    return found | {e.dst for e in state.out_edges(exit_node) if isinstance(e.dst, nodes.AccessNode)}


def _globalize(cutout, outside: Set[str]) -> None:
    """Containers the cutout writes that the program uses elsewhere, in a data node or in its
    control flow (a condition reading what the cutout computed), are outputs: DaCe's own
    output configuration looks at data nodes only."""
    for name in _written(cutout) & outside:
        desc = cutout.arrays[name]
        if desc.transient and not isinstance(desc, dace.data.View):
            desc.transient = False


def _written(sdfg) -> Set[str]:
    return {n.data for state in sdfg.states() for n in state.data_nodes() if state.in_degree(n) > 0}


# ------------------------------------------------------------------ whole blocks
def block_cut(where: Location, graph, blocks: Sequence, match: Dict[str, Any], original) -> Optional[Cut]:
    """``blocks`` of ``graph`` (in ``where.sdfg``'s control flow) whole, in an SDFG of their own;
    None where they do not form one entry and one exit, or the match cannot be found again."""
    if graph is where.sdfg and len(blocks) == graph.number_of_nodes():
        return None                       # the whole SDFG: the caller's next candidate
    entry = _single_entry_and_exit(graph, blocks)
    if entry is None:
        return None
    cut_name = f"{where.sdfg.name}_blocks"
    cutout = copy_sdfg(where.sdfg, cut_name)
    graph_path = block_path(where.sdfg, graph)
    ids = [graph.node_id(b) for b in blocks]
    copied_graph = block_at(cutout, graph_path)
    moved = [copied_graph.node(i) for i in ids]
    kept_edges = [(e.src, e.dst, e.data) for e in copied_graph.edges() if e.src in moved and e.dst in moved]
    for block in list(cutout.nodes()):
        cutout.remove_node(block)
    for block in moved:
        cutout.add_node(block, is_start_block=block is moved[ids.index(graph.node_id(entry))])
        block.parent_graph = cutout
    for src, dst, data in kept_edges:
        cutout.add_edge(src, dst, data)
    cutout.reset_cfg_list()
    _declare_free_symbols(cutout, where.sdfg)
    used, arguments = _block_containers(where.sdfg, blocks)
    for name in list(cutout.arrays):
        if name not in used:
            cutout.remove_data(name, validate=False)
        elif name in arguments:
            cutout.arrays[name].transient = False
    translated = _translate(where, match, graph_path, ids, cutout,
                            isinstance(original, xf.SingleStateTransformation))
    if translated is None or not _same_place(original, translated, cutout, type(original)):
        return None
    # a symbol the blocks assign and the program reads after them (an accumulator on an
    # interstate edge, a loop's last value) is a result of theirs as much as a container is
    symbols = sorted(live_after(list(blocks), assigned_symbols(list(blocks))))
    return Cut(cutout, translated, configs=_block_configs(blocks, arguments), symbol_outputs=symbols)


def _block_containers(sdfg, blocks: Sequence) -> Tuple[Set[str], Set[str]]:
    """(the containers ``blocks`` use, those of them that are the cutout's arguments): a
    container is an argument where the program's caller passes it or the program uses it
    outside the blocks (a view stays what it is: it views an argument)."""
    used = _accessed(blocks, sdfg)
    outside = _accessed_outside(sdfg, blocks)
    arguments = {name for name in used if (name in outside or not sdfg.arrays[name].transient)
                 and not isinstance(sdfg.arrays[name], dace.data.View)}
    return used, arguments


def _block_configs(blocks: Sequence, arguments: Set[str]) -> Tuple[List[str], List[str]]:
    """(input configuration, output configuration) of ``blocks`` cut out whole, whose
    ``arguments`` are those of ``_block_containers``: arguments they read, or do not write
    (read by their control flow, or passed through), and those they write."""
    reads, writes = _reads_and_writes(blocks)
    return sorted(arguments & reads | (arguments - writes)), sorted(arguments & writes)


# how far back before a block cutout its input configuration is looked for: a bound on the
# search (each step is a walk over the program), not on what a cutout may hold
REDUCE_BLOCKS = 8


def _reduced_block_cut(where: Location, graph, blocks: Sequence, match: Dict[str, Any], original,
                       why: str) -> Optional[Cut]:
    """``block_cut`` of ``blocks``, or of the blocks before them too where that gives the
    smallest input configuration (the unreduced cut where the reduced one cannot be made)."""
    taken, before, after = _reduced_blocks(where.sdfg, graph, blocks)
    if len(taken) > len(blocks):
        cut = block_cut(where, graph, taken, match, original)
        if cut is not None:
            return dataclasses.replace(
                cut, volume_before=before,
                grown_for=f"{why}, with the {len(taken) - len(blocks)} block(s) before it that compute its inputs "
                          f"(input configuration {before} -> {after} elements)")
    cut = block_cut(where, graph, blocks, match, original)
    return None if cut is None else dataclasses.replace(cut, grown_for=why)


# the symbol values at which two input configurations are compared: DaCe's probe, and one
# where the terms of the highest degree decide (at 20 alone, 40*N*M + 4*N beats 35*N*M + 152*N)
COMPARED_AT = (VOLUME_PROBE_SIZE, 1000)


def _reduced_blocks(sdfg, graph, blocks: Sequence) -> Tuple[List, str, str]:
    """(blocks, their input volume before, after): ``blocks`` with the blocks on the straight
    line of control flow that leads into them, as many as give the smallest input configuration
    (smaller at every value of ``COMPARED_AT``), the fewest where several do. Between blocks
    this is DaCe's minimum cut: only a point on that line keeps one entry and one exit."""
    first = _block_inputs(sdfg, blocks)
    best, best_inputs, best_sizes = list(blocks), first, volumes_at(sdfg, first, COMPARED_AT)
    current = list(blocks)
    for _ in range(REDUCE_BLOCKS):
        previous = _straight_predecessor(graph, current)
        if previous is None or (graph is sdfg and len(current) + 1 == graph.number_of_nodes()):
            break                  # nothing before, or the whole program: the ladder's next rung
        current = [previous] + current
        inputs = _block_inputs(sdfg, current)
        sizes = volumes_at(sdfg, inputs, COMPARED_AT)
        if min(sizes) >= 0 and all(new < old for new, old in zip(sizes, best_sizes)):
            best, best_inputs, best_sizes = list(current), inputs, sizes
    if len(best) == len(blocks):
        return best, "", ""
    return best, input_volume(sdfg, first), input_volume(sdfg, best_inputs)


def _block_inputs(sdfg, blocks: Sequence) -> List[str]:
    return _block_configs(blocks, _block_containers(sdfg, blocks)[1])[0]


def _straight_predecessor(graph, blocks: Sequence):
    """The block from which control always enters ``blocks`` and which leads nowhere else; None
    where control enters them from several blocks, or from outside ``graph``."""
    entry = _single_entry_and_exit(graph, blocks)
    if entry is None or entry is graph.start_block:
        return None
    incoming = graph.in_edges(entry)
    if len(incoming) != 1 or incoming[0].src in blocks or graph.out_degree(incoming[0].src) != 1:
        return None
    return incoming[0].src


def _single_entry_and_exit(graph, blocks: Sequence):
    """The one block through which control enters ``blocks``, where control also leaves them
    through one edge target only; None otherwise."""
    inside = set(blocks)
    entries = {b for b in blocks if b is graph.start_block or any(e.src not in inside for e in graph.in_edges(b))}
    if not entries:
        entries = {b for b in blocks if graph.in_degree(b) == 0}
    exits = {e.dst for b in blocks for e in graph.out_edges(b) if e.dst not in inside}
    if len(entries) != 1 or len(exits) > 1:
        return None
    return next(iter(entries))


def _declare_free_symbols(cutout, program) -> None:
    """The symbols the blocks use, and only those, are the cutout's: the program's own, and
    those their old surroundings defined (an enclosing loop's variable, an earlier
    assignment), typed as they were."""
    types = symbol_types(program)
    for name in list(cutout.symbols):     # the program's declarations: only those still used return
        cutout.remove_symbol(name)
    for name in sorted(map(str, cutout.free_symbols)):
        if name not in cutout.symbols and name not in cutout.arrays:
            cutout.add_symbol(name, types.get(name, dace.int64))


def _states_under(blocks: Sequence) -> List:
    found = []
    for block in blocks:
        if isinstance(block, sdfg_state.SDFGState):
            found.append(block)
        elif is_region(block):
            found += [b for b in block.all_control_flow_blocks() if isinstance(b, sdfg_state.SDFGState)]
    return found


def _code_under(blocks: Sequence) -> List[str]:
    """The text of the control flow inside ``blocks``: their edges, loop statements, conditions."""
    texts = []
    for block in blocks:
        if not is_region(block):
            continue
        for region in [block] + [b for b in block.all_control_flow_blocks() if is_region(b)]:
            texts += _region_code(region)
    return texts


def _region_code(region) -> List[str]:
    return [place.text for place in region_code_places(region)]


def _accessed(blocks: Sequence, sdfg) -> Set[str]:
    """Containers of ``sdfg`` that ``blocks`` use: in a data node, or by name in their control flow."""
    used = {n.data for state in _states_under(blocks) for n in state.data_nodes()}
    for text in _code_under(blocks):
        used |= set(IDENTIFIER.findall(text)) & set(sdfg.arrays)
    for name in list(used):               # what a view views is used with it
        desc = sdfg.arrays.get(name)
        if isinstance(desc, dace.data.View):
            used |= _viewed(sdfg, name)
    return used & set(sdfg.arrays)


def _viewed(sdfg, view: str) -> Set[str]:
    found = set()
    for state in sdfg.states():
        for node in state.data_nodes():
            if node.data == view:
                found |= {e.data.data for e in state.all_edges(node) if e.data.data and e.data.data != view}
    return found


def _accessed_outside(sdfg, blocks: Sequence, cutout_nodes: Optional[Set] = None) -> Set[str]:
    """Containers ``sdfg`` uses outside ``blocks`` (and, within a state of them, outside
    ``cutout_nodes``): in data nodes, and by name in its control flow (the regions around the
    blocks included: an enclosing loop's condition reads what its body computes)."""
    inside = set(_states_under(blocks))
    used = set()
    for state in sdfg.states():
        if state not in inside:
            used |= {n.data for n in state.data_nodes()}
        elif cutout_nodes is not None:
            used |= {n.data for n in state.data_nodes() if n not in cutout_nodes}
    inner_regions = {b for b in blocks if is_region(b)}
    inner_regions |= {r for b in inner_regions for r in b.all_control_flow_blocks() if is_region(r)}
    for region in [sdfg] + [b for b in sdfg.all_control_flow_blocks() if is_region(b)]:
        if region in inner_regions:
            continue
        for text in _region_code(region):
            used |= set(IDENTIFIER.findall(text))
    return used & set(sdfg.arrays)


def _reads_and_writes(blocks: Sequence) -> Tuple[Set[str], Set[str]]:
    reads, writes = set(), set()
    for state in _states_under(blocks):
        for node in state.data_nodes():
            if state.out_degree(node) > 0:
                reads.add(node.data)
            if state.in_degree(node) > 0:
                writes.add(node.data)
    return reads, writes


def _translate(where: Location, match: Dict[str, Any], graph_path, ids: List[int], cutout,
               is_single_state: bool) -> Optional[Dict]:
    """The match relative to ``cutout``, whose top-level blocks are the blocks ``ids`` of the
    graph at ``graph_path`` (in that order)."""
    match_path = where.path
    translated = copy.deepcopy(match)
    if tuple(match_path) == tuple(graph_path):          # the match's graph is the one cut from
        translated["cfg_id"] = 0
        try:
            if is_single_state:
                translated["state_id"] = ids.index(_state_id(match))
            else:
                translated["_subgraph"] = {k: ids.index(int(v)) for k, v in match.get("_subgraph", {}).items()}
        except ValueError:                              # a matched block was left out
            return None
        return translated
    depth = len(graph_path)
    if tuple(match_path[:depth]) != tuple(graph_path) or match_path[depth] not in ids:
        return None
    inner = block_at(cutout, (ids.index(match_path[depth]),) + tuple(match_path[depth + 1:]))
    translated["cfg_id"] = inner.cfg_id
    return translated


def _same_place(original, translated: Dict[str, Any], cutout, cls: type) -> bool:
    """The translated match names the same blocks and nodes as the original (by GUID)."""
    try:
        moved = rebuild_transformation(cls, copy.deepcopy(translated), cutout)
    except Exception:
        return False
    before, after = matched_elements(original), matched_elements(moved)
    if set(before) != set(after):
        return False
    return all(getattr(before[k], "guid", None) == getattr(after[k], "guid", None) for k in before)
