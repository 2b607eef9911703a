"""Every place an SDFG keeps code outside its dataflow: what its control flow reads by name.

DaCe 1.0.2 keeps all of it on interstate edges (conditions and assignments). DaCe 2.0 keeps
more of it in its control-flow regions: a ``ConditionalBlock``'s branch conditions, a
``LoopRegion``'s init, condition and update, and whatever code a newer region kind lists in
``get_meta_codeblocks``. A nested SDFG's symbol mapping is code of the SDFG around it too (its
values are expressions read there).

Anything that changes how a container is read (a scalar made a one-element array must be read
as ``x[0]``) changes every one of these places, or DaCe's code generator compares a pointer:
``code_places`` is the one list of them.
"""
from __future__ import annotations

import ast
import dataclasses
from typing import Any, Callable, Dict, Iterable, Iterator, List, Sequence, Set

import dace
from dace.sdfg import state as sdfg_state

from .regions import is_region, regions_of


@dataclasses.dataclass
class CodePlace:
    """One piece of code: where it is (for messages), its text, and how to write it back."""

    where: str
    text: str
    _write: Callable[[str], None]

    def replace(self, text: str) -> None:
        if text != self.text:
            self._write(text)
            self.text = text


def code_places(sdfg) -> List[CodePlace]:
    """Every place ``sdfg``'s own control flow keeps code (not its nested SDFGs': their code
    reads their own names), in a fixed order: each region's (the SDFG's first) edges and
    own statements, then the symbol mappings of the nested SDFGs it holds."""
    places: List[CodePlace] = []
    for region in [sdfg] + list(regions_of(sdfg)):
        places += region_code_places(region)
    for state in sdfg.states():
        for node in state.nodes():
            mapping = getattr(node, "symbol_mapping", None)
            if isinstance(mapping, dict) and hasattr(node, "sdfg"):
                places += _mapping_places(node, mapping)
    return places


def region_code_places(region) -> List[CodePlace]:
    """The code one control-flow graph (an SDFG or a region) keeps itself: the conditions and
    assignments of its edges, and its own statements (a loop's, a conditional's); not that of
    the regions inside it."""
    places: List[CodePlace] = []
    if not isinstance(region, sdfg_state.ConditionalBlock):       # a conditional's "edges" are its branches
        for edge in region.edges():
            places += _edge_places(edge)
    places += [_block_place(region, code, label) for code, label in _own_code(region)]
    return places


def _edge_places(edge) -> List[CodePlace]:
    data = edge.data
    where = f"interstate edge {edge.src.label} -> {edge.dst.label}"

    def assign(name: str) -> Callable[[str], None]:
        def write(text: str) -> None:
            data.assignments[name] = text
        return write

    def condition(text: str) -> None:
        from dace.properties import CodeBlock

        data.condition = CodeBlock(text)

    places = [CodePlace(f"{where}, assignment {name}", str(value), assign(name))
              for name, value in sorted(data.assignments.items())]
    if data.condition is not None:
        places.append(CodePlace(f"{where}, condition", data.condition.as_string, condition))
    return places


def _own_code(region) -> Iterator:
    """(code block, label) of a region's own statements."""
    if hasattr(region, "get_meta_codeblocks"):     # DaCe 2.0: each region kind lists its own
        labels = {id(getattr(region, a, None)): a.replace("_", " ")
                  for a in ("init_statement", "loop_condition", "update_statement")}
        for code in region.get_meta_codeblocks():
            if code is not None:
                yield code, labels.get(id(code), "branch condition" if isinstance(
                    region, sdfg_state.ConditionalBlock) else "statement")
        return
    if isinstance(region, sdfg_state.LoopRegion):
        for attr in ("init_statement", "loop_condition", "update_statement"):
            code = getattr(region, attr, None)
            if code is not None:
                yield code, attr.replace("_", " ")
    elif isinstance(region, sdfg_state.ConditionalBlock):
        for code, _branch in region.branches:
            if code is not None:
                yield code, "branch condition"


def _block_place(region, code, label: str) -> CodePlace:
    def write(text: str) -> None:
        code.as_string = text        # in place: the region holds this very code block

    return CodePlace(f"{type(region).__name__} {region.label}, {label}", code.as_string, write)


def _mapping_places(node, mapping: dict) -> List[CodePlace]:
    def write_to(name: str) -> Callable[[str], None]:
        def write(text: str) -> None:
            from dace import symbolic

            mapping[name] = symbolic.pystr_to_symbolic(text)
        return write

    return [CodePlace(f"nested SDFG {node.label}, symbol mapping {name}", str(value), write_to(name))
            for name, value in sorted(mapping.items(), key=lambda kv: str(kv[0]))]


# ------------------------------------------------------------------ symbols
def symbol_types(sdfg) -> Dict[str, Any]:
    """Every symbol's type: as declared, else as its assignment or loop defines it."""
    types = dict(sdfg.symbols)
    for edge in sdfg.all_interstate_edges():
        try:
            types.update(edge.data.new_symbols(sdfg, types))
        except Exception:   # an assignment DaCe cannot type: int64 below
            continue
    for block in sdfg.all_control_flow_blocks():
        if isinstance(block, sdfg_state.LoopRegion) and block.loop_variable:
            try:
                types.update(block.new_symbols(types))
            except Exception:
                types.setdefault(block.loop_variable, dace.int64)
    return {**types, **sdfg.symbols}


def symbol_arguments(sdfg) -> Set[str]:
    """The symbols ``sdfg`` takes as arguments: what its generated code reads that nothing in it
    defines (DaCe's ``arglist`` asked without it: arglist raises where a symbol is read but not
    declared, DaCe 1.0.2's ``KeyError: 'tile_i'``). A symbol declared but read nowhere is among
    DaCe's free symbols, not here: no caller has to pass it."""
    return {str(name) for name in sdfg.used_symbols(all_symbols=False) if str(name) not in sdfg.arrays}


def given_by_caller(sdfg) -> Set[str]:
    """The symbols a caller of ``sdfg`` gives: its arguments, and those its arguments' shapes,
    strides and offsets hold (DaCe infers them from the arrays it is called with)."""
    described = {str(s) for desc in sdfg.arrays.values() if not desc.transient for s in desc.free_symbols}
    return symbol_arguments(sdfg) | described


def new_symbol_arguments(before, after) -> List[str]:
    """The symbols ``after`` takes as arguments that a caller of ``before`` does not give
    (``given_by_caller``; nor a container of that name): what a caller of ``after`` would have to
    pass and cannot."""
    return sorted(symbol_arguments(after) - given_by_caller(before) - set(before.arrays))


# ------------------------------------------------------------------ symbols a program reads later
def assigned_symbols(blocks: Sequence) -> Set[str]:
    """The symbols ``blocks`` (of one control-flow graph) assign: on their own edges between
    them, on every edge inside the regions among them, and as the variable of a loop."""
    inside = set(blocks)
    graph = blocks[0].parent_graph if blocks else None
    found: Set[str] = set()
    if graph is not None:
        for edge in graph.edges():
            if edge.src in inside and edge.dst in inside:
                found |= set(edge.data.assignments)
    for block in blocks:
        for region in [block] + list(_regions_under(block)):
            if not is_region(region):
                continue
            if not isinstance(region, sdfg_state.ConditionalBlock):
                for edge in region.edges():
                    found |= set(edge.data.assignments)
            if isinstance(region, sdfg_state.LoopRegion) and region.loop_variable:
                found.add(str(region.loop_variable))
    return found


def live_after(blocks: Sequence, names: Set[str]) -> Set[str]:
    """Those of ``names`` that the program may read after control leaves ``blocks`` (blocks of
    one graph) before it assigns them again: along the edges out of them, then on through the
    regions around (a loop's next iteration and what follows the loop, what follows a
    conditional). A region that may or may not assign a name does not end its life; a loop's
    start assigns its variable."""
    inside = set(blocks)
    graph = blocks[0].parent_graph
    live: Set[str] = set()
    seen: Set[tuple] = set()
    todo: List[tuple] = []
    exits = [e for b in blocks for e in graph.out_edges(b) if e.dst not in inside]
    if exits:
        todo += [("edge", e, frozenset(names)) for e in exits]
    else:
        todo.append(("after", graph, frozenset(names)))
    while todo:
        kind, where, alive = todo.pop()
        alive = alive - live
        if not alive or (kind, id(where), alive) in seen:
            continue
        seen.add((kind, id(where), alive))
        if kind == "edge":
            data = where.data
            read = names_read(data.condition.as_string if data.condition is not None else "")
            for value in data.assignments.values():
                read |= names_read(str(value))
            live |= alive & read
            todo.append(("block", where.dst, alive - set(data.assignments)))
        elif kind == "block":
            live |= alive & _reads_first(where)
            rest = alive - _assigns_first(where)
            out = where.parent_graph.out_edges(where)
            todo += [("edge", e, rest) for e in out] if out else [("after", where.parent_graph, rest)]
        else:                                   # the end of a graph: what comes after it
            todo += _after_graph(where, alive)
    return live


def _after_graph(graph, alive: frozenset) -> List[tuple]:
    """Where control goes when ``graph`` ends: a loop's next iteration and what follows it,
    what follows the conditional a branch belongs to; nothing after an SDFG."""
    if isinstance(graph, dace.SDFG):
        return []
    parent = graph.parent_graph
    if isinstance(parent, sdfg_state.ConditionalBlock):      # a branch ends: after its conditional
        return _after_block(parent, alive)
    steps: List[tuple] = []
    if isinstance(graph, sdfg_state.LoopRegion):
        steps.append(("block", graph, alive))                  # its update and condition, the next iteration
    return steps + _after_block(graph, alive)


def _after_block(block, alive: frozenset) -> List[tuple]:
    out = block.parent_graph.out_edges(block) if block.parent_graph is not None else []
    return [("edge", e, alive) for e in out] if out else [("after", block.parent_graph, alive)]


def _reads_first(block) -> Set[str]:
    """Names a block may read before assigning them (DaCe's own free-symbol analysis)."""
    try:
        return {str(s) for s in block.free_symbols}
    except Exception:      # noqa: BLE001 -- a block DaCe cannot analyse: all it names, read
        return {str(s) for p in (region_code_places(block) if is_region(block) else []) for s in names_read(p.text)}


def _assigns_first(block) -> Set[str]:
    """Names a block assigns on every path before it can read them: a loop's variable."""
    if isinstance(block, sdfg_state.LoopRegion) and block.loop_variable and block.init_statement is not None:
        return {str(block.loop_variable)}
    return set()


def _regions_under(block) -> Iterator:
    if hasattr(block, "all_control_flow_blocks"):
        yield from block.all_control_flow_blocks()


# ------------------------------------------------------------------ reads by name
def names_read(text: str) -> Set[str]:
    """The names a piece of code reads ('' and unparsable code: none)."""
    tree = _parse(text)
    if tree is None:
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def bare_reads(text: str, names: Iterable[str]) -> Set[str]:
    """Those of ``names`` that ``text`` reads bare (not as the array of a subscript)."""
    names = set(names)
    tree = _parse(text)
    if tree is None or not names:
        return set()
    subscripted = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Subscript)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
            and n.id in names and id(n) not in subscripted}


def index_bare_reads(text: str, names: Iterable[str]) -> str:
    """``text`` with every bare read of ``names`` made a read of element 0 (``x`` -> ``x[0]``);
    subscripts (``x[i]``) and assignment targets stay as they are."""
    names = set(names)
    if not bare_reads(text, names):
        return text
    tree = _parse(text)

    class Index(ast.NodeTransformer):
        def visit_Subscript(self, node):
            node.slice = self.visit(node.slice)     # x[i] stays x[i]; its index may read a scalar
            return node

        def visit_Name(self, node):
            if node.id in names and isinstance(node.ctx, ast.Load):
                return ast.copy_location(ast.Subscript(value=ast.Name(id=node.id, ctx=ast.Load()),
                                                       slice=ast.Constant(0), ctx=ast.Load()), node)
            return node

    return ast.unparse(Index().visit(tree))


def _parse(text: str):
    if not text or not text.strip():
        return None
    try:
        return ast.parse(text)
    except SyntaxError:
        return None
