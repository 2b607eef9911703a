"""An SDFG as the prover sees it: statements with integer domains, one write, affine reads and
an expression tree (a polyhedral model).

A *statement* is a tasklet output or a copy between two access nodes, run once per point of
its domain: the iteration variables of the maps around it (and of the loops around its
state), bounded by affine ranges over the sizes. Its schedule (a timestamp vector) orders it
as the SDFG does: states in order, loop iterations in order, nodes of a state in a
topological order, map iterations in index order (a map's iterations being unordered, any
conflict between two of them is refused, ``dataflow.check_races``).

What the model does not cover raises ``NotAffine`` with the reason: nested SDFGs, library
nodes, views and streams, non-Python tasklets, tasklets with control flow, dynamic written
memlets, memlets of ranges in tasklets, non-affine indices or bounds, and control flow other
than a sequence of states and counted loops with affine bounds. Reductions (write-conflict
resolution) are statements with their operation; ``dataflow`` combines them.
"""
from __future__ import annotations

import ast
import dataclasses
from typing import Dict, List, Optional, Tuple

import islpy as isl
import sympy

from ..dacecompat import for_loops
from ..dacecompat.code import assigned_symbols
from ..inputs.layout import InputLayout
from .affine import NotAffine, bound_to_isl, to_isl

SIZE_PREFIX = "p_"          # isl parameter names of the sizes
DIM_PREFIX = "v"            # isl names of a statement's iteration variables


@dataclasses.dataclass
class Access:
    container: str
    index: Tuple[str, ...]           # isl expressions over the statement's names


@dataclasses.dataclass
class Statement:
    name: str                        # isl tuple name, S0, S1, ...
    origin: str                      # what it is in the SDFG, for messages
    dims: List[str]
    domain: List[str]                # isl constraints over dims and sizes (a conjunction)
    schedule: List[str]              # timestamp entries (isl expressions)
    write: Access
    reads: List[Access]
    expr: tuple                      # ("read", k) | ("idx", isl expr) | ("const", text) | (op, ...)
    nodes: Tuple[object, object]     # (first, last) node in its state: dataflow order
    state: int                       # which state (in program order) it lies in
    maps: Tuple[Tuple[object, int], ...]   # (map entry, dims it adds) around it, outermost first
    wcr: str = ""                    # write-conflict resolution: the statement contributes to a reduction
    loops: int = 0                   # how many of dims are loop iterations (the first ones)
    # in a branch whose condition reads data: the read of the element's value before the write
    # (what it keeps where the condition fails)
    old_read: Optional[int] = None


@dataclasses.dataclass
class Program:
    """One side (pre or post) of a pair, in isl objects of one context."""

    ctx: object
    sizes: List[str]                 # symbol names, in layout order
    context: object                  # isl.Set of the sizes' valid values
    statements: List[Statement]
    shapes: Dict[str, Tuple[str, ...]]   # container -> isl extents
    dtypes: Dict[str, str]
    transient: Dict[str, bool]
    states: List[object]
    private: Dict[str, int] = dataclasses.field(default_factory=dict)   # container -> leading iteration dims

    def params(self) -> str:
        return "[" + ", ".join(SIZE_PREFIX + s for s in self.sizes) + "]"

    def domain(self, st: Statement):
        return isl.Set(f"{self.params()} -> {{ {st.name}[{', '.join(st.dims)}] : {' and '.join(st.domain) or 'true'} }}",
                       context=self.ctx).intersect_params(self.context)

    def access(self, st: Statement, acc: Access):
        text = (f"{self.params()} -> {{ {st.name}[{', '.join(st.dims)}] -> "
                f"{tuple_name(acc.container)}[{', '.join(acc.index)}] }}")
        return isl.Map(text, context=self.ctx).intersect_domain(self.domain(st))

    def schedule(self, st: Statement, width: int):
        stamp = list(st.schedule) + ["0"] * (width - len(st.schedule))
        return isl.Map(f"{self.params()} -> {{ {st.name}[{', '.join(st.dims)}] -> [{', '.join(stamp)}] }}",
                       context=self.ctx).intersect_domain(self.domain(st))

    def extent(self, container: str):
        """The container's elements, as a set."""
        shape = self.shapes[container]
        lead = self.private.get(container, 0)     # a private copy per iteration: those dims are free
        dims = [f"o{k}" for k in range(lead + len(shape))]
        cons = [f"0 <= {d} < {s}" for d, s in zip(dims[lead:], shape)]
        return isl.Set(f"{self.params()} -> {{ {tuple_name(container)}[{', '.join(dims)}] : "
                       f"{' and '.join(cons) or 'true'} }}", context=self.ctx).intersect_params(self.context)


def tuple_name(container: str) -> str:
    return "A_" + container


def size_names(layout: InputLayout) -> Dict[str, str]:
    return {s.name: SIZE_PREFIX + s.name for s in layout.symbols}


def size_context(ctx, layout: InputLayout):
    """The sizes' ranges the layout decodes (each bound may name the sizes before it)."""
    names, cons = {}, []
    for slot in layout.symbols:
        lo, hi = bound_to_isl(slot.lo, names), bound_to_isl(slot.hi, names)
        names[slot.name] = SIZE_PREFIX + slot.name
        cons.append(f"{lo} <= {names[slot.name]} <= {hi}")
    params = "[" + ", ".join(names.values()) + "]"
    return isl.Set(f"{params} -> {{ : {' and '.join(cons) or 'true'} }}", context=ctx)


# ------------------------------------------------------------------ building a program
def build_program(sdfg, layout: InputLayout, ctx) -> Program:
    """``sdfg`` as statements; raises NotAffine where it leaves the modelled fragment."""
    from dace import data as dt

    sizes = [s.name for s in layout.symbols]
    shapes, dtypes, transient = {}, {}, {}
    names = size_names(layout)
    constants = dict(sdfg.constants)
    for name, desc in sdfg.arrays.items():
        if isinstance(desc, (dt.View, dt.Stream)) or type(desc).__name__ in ("View", "ArrayView", "StructureView"):
            raise NotAffine(f"container {name} is a {type(desc).__name__}")
        if any(sympy.sympify(o) != 0 for o in getattr(desc, "offset", []) or []):
            raise NotAffine(f"container {name} has an index offset")
        shapes[name] = tuple(to_isl(_subst(s, constants), names) for s in desc.shape)
        dtypes[name] = desc.dtype.to_string() if hasattr(desc.dtype, "to_string") else str(desc.dtype)
        transient[name] = bool(desc.transient)
    builder = _Builder(names, constants, _private_scopes(sdfg))
    states = builder.walk(sdfg)
    for container, loops in builder.value_elements.items():     # one element per iteration of the loops around
        shapes[container], transient[container] = (), True
        dtypes[container] = builder.value_types[container]
        builder.private_dims[container] = loops
    prog = Program(ctx=ctx, sizes=sizes, context=size_context(ctx, layout), statements=builder.statements,
                   shapes=shapes, dtypes=dtypes, transient=transient, states=states, private=builder.private_dims)
    return prog


def _private_scopes(sdfg) -> Dict[str, object]:
    """Transients DaCe allocates once per iteration of a map (scope lifetime, every use in one
    state inside that map): container -> the innermost map entry around all its uses. Each
    iteration has its own copy, so the model indexes them by the iterations too."""
    from dace import dtypes
    from dace.sdfg import nodes

    uses: Dict[str, list] = {}
    for state in sdfg.states():
        scopes = state.scope_dict()
        for node in state.nodes():
            if isinstance(node, nodes.AccessNode):
                uses.setdefault(node.data, []).append((state, scopes[node]))
        for edge in state.edges():       # tasklet to tasklet: a scalar with no access node
            if isinstance(edge.src, nodes.Tasklet) and isinstance(edge.dst, nodes.Tasklet) and edge.data.data:
                uses.setdefault(edge.data.data, []).append((state, scopes[edge.src]))
    private = {}
    for name, where in uses.items():
        desc = sdfg.arrays.get(name)
        if desc is None or not desc.transient or desc.lifetime != dtypes.AllocationLifetime.Scope:
            continue
        if len({id(s) for s, _ in where}) != 1 or any(e is None for _, e in where):
            continue
        state = where[0][0]
        scopes = state.scope_dict()
        common = _chain(where[0][1], scopes)
        for _, entry in where[1:]:
            chain = _chain(entry, scopes)
            common = [e for e in common if any(e is c for c in chain)]
        if common:
            private[name] = common[-1]
    return private


def _chain(entry, scopes) -> list:
    """The map entries from the outermost to ``entry``."""
    out = []
    while entry is not None:
        out.append(entry)
        entry = scopes[entry]
    return out[::-1]


def _subst(e, constants):
    if type(e).__name__ == "SymExpr":       # DaCe's exact expression with an approximation
        e = e.expr
    e = sympy.sympify(e) if not isinstance(e, sympy.Basic) else e
    if not constants:
        return e
    repl = {s: constants[s.name] for s in e.free_symbols if s.name in constants}
    return e.subs(repl) if repl else e


class _Builder:
    def __init__(self, size_names: Dict[str, str], constants: Dict, private: Dict[str, object]):
        self.size_names = size_names
        self.constants = constants
        self.statements: List[Statement] = []
        self.private = private
        self.private_dims: Dict[str, int] = {}
        self.values_made = 0                    # statements that compute a value symbol (``value``)
        self.value_elements: Dict[str, int] = {}    # their containers -> the loop dimensions they are per
        self.value_types: Dict[str, str] = {}       # their containers -> the type of what they hold

    def privatized(self, acc: Access, dims: List[str], maps, loops: int) -> Access:
        """``acc`` indexed by the iterations that own a private copy of its container."""
        entry = self.private.get(acc.container)
        if entry is None:
            return acc
        lead = loops
        for e, added in maps:
            lead += added
            if e is entry:
                break
        else:
            raise NotAffine(f"{acc.container} is used outside the map that owns it")
        if self.private_dims.setdefault(acc.container, lead) != lead:
            raise NotAffine(f"{acc.container} is private to maps of different depths")
        return Access(acc.container, tuple(dims[:lead]) + acc.index)

    # -------------------------------------------------------------- control flow
    def walk(self, sdfg) -> List[object]:
        """Every state, with where it runs: the loops around it (their iteration variables
        become dimensions) and the symbols assigned before it. Returns the states in order."""
        from dace.sdfg.state import BreakBlock, ConditionalBlock, ControlFlowRegion, LoopRegion, SDFGState

        for block in sdfg.all_control_flow_blocks():
            # states, counted loops, plain regions (a sequence of blocks) and conditionals; a
            # break where ``loop_region`` recognises it
            if not (isinstance(block, (SDFGState, LoopRegion, ConditionalBlock, BreakBlock))
                    or type(block) is ControlFlowRegion):
                raise NotAffine(f"control flow block {type(block).__name__} {block.label}")
        self.sdfg, self.order, self.guards = sdfg, [], []
        self.breaks: Dict[int, object] = {}     # id of a conditional that breaks a loop -> its condition
        self.break_blocks: set = set()          # ids of the breaks those conditionals hold
        self.region(sdfg.start_block, None, None, _Place(dict(self.size_names), {}, [], [], []), [])
        if len(self.order) + len(self.guards) != len(list(sdfg.states())):
            raise NotAffine("states that the start state does not reach in sequence")
        return self.order

    def region(self, cur, stop, came, place: "_Place", guards: List[object]):
        """States from ``cur`` in sequence until the edge back to ``stop`` (a loop's guard),
        which is returned."""
        from dace.sdfg.state import BreakBlock, ConditionalBlock, ControlFlowRegion, LoopRegion

        position = 0
        while cur is not None:
            if any(cur is s for s in self.order + self.guards):
                raise NotAffine(f"control flow into state {cur.label} the prover does not recognise")
            out = cur.parent_graph.out_edges(cur)
            if isinstance(cur, BreakBlock):
                if id(cur) not in self.break_blocks:
                    raise NotAffine(f"a break at {cur.label} outside a loop region that breaks as `if c: break`")
                return None                     # the end of a breaking branch (``loop_region`` checked it)
            if isinstance(cur, (ControlFlowRegion, ConditionalBlock)):
                if isinstance(cur, ConditionalBlock):
                    self.conditional(cur, place, guards, position)
                    if id(cur) in self.breaks:  # the rest of the iteration runs where it did not break
                        place = dataclasses.replace(place, domain=place.domain + [
                            _negated(self.breaks[id(cur)], place.env, self.constants)])
                elif isinstance(cur, LoopRegion):
                    self.loop_region(cur, place, guards, position)
                else:       # a sequence of blocks, one step of this sequence (with a constant dimension)
                    inner = dataclasses.replace(place, prefix=place.prefix + [str(position), "0"])
                    self.region(cur.start_block, None, None, inner, guards)
                place = place.without(assigned_symbols([cur]))
                position += 1
                if len(out) > 1 or (out and not out[0].data.is_unconditional()):
                    raise NotAffine(f"a branch after the {'conditional' if isinstance(cur, ConditionalBlock) else 'loop'} "
                                    f"{cur.label}")
                if not out:
                    return None
                place = place.assigned(self.assign(place, out[0].data.assignments, out[0], position))
                came, cur = out[0], out[0].dst
                continue
            if len(out) == 2:
                exit_edge, itervar, assigned = self.loop(cur, came, out, place, guards, position)
                if exit_edge.dst is stop:
                    return exit_edge         # straight back to the guard of the loop around it
                place = place.dropped(itervar).without(assigned)
                place = place.assigned(self.assign(place, exit_edge.data.assignments, exit_edge, position + 1))
                came, cur, position = exit_edge, exit_edge.dst, position + 1
                continue
            if len(out) > 2:
                raise NotAffine(f"a branch after state {cur.label}")
            self.order.append(cur)
            self.state(cur, place.at(position), len(self.order) - 1)
            position += 1
            if not out:
                if stop is not None:
                    raise NotAffine(f"a loop body ends in state {cur.label}")
                return None
            edge = out[0]
            if not edge.data.is_unconditional():
                raise NotAffine(f"a condition on the edge after state {cur.label}")
            if edge.dst is stop:
                return edge
            place = place.assigned(self.assign(place, edge.data.assignments, edge, position))
            came, cur = edge, edge.dst
        return None

    def loop(self, guard, came, out, place: "_Place", guards: List[object], position: int):
        """A counted loop at ``guard``: its body's states, with the iteration as a dimension.
        Returns the exit edge."""
        reach = [self.reaches(e.dst, guard, guards) for e in out]
        if reach.count(True) != 1 or came is None:
            raise NotAffine(f"a branch after state {guard.label}")
        body, exit_edge = (out[0], out[1]) if reach[0] else (out[1], out[0])
        if guard.nodes():
            raise NotAffine(f"the loop guard {guard.label} holds nodes")
        self.guards.append(guard)
        backs = [e for e in guard.parent_graph.in_edges(guard) if e is not came]
        if len(backs) != 1 or len(backs[0].data.assignments) != 1 or body.data.assignments:
            raise NotAffine(f"the loop at {guard.label} is not a counted loop")
        back = backs[0]
        [(itervar, update)] = back.data.assignments.items()
        new = _parse(update, self.constants)
        step = sympy.expand(new - next((f for f in new.free_symbols if f.name == itervar), sympy.Integer(0)))
        if itervar not in place.env or not isinstance(step, sympy.Integer) or int(step) == 0:
            raise NotAffine(f"the loop at {guard.label} has no constant step or no start of {itervar}")
        cond, leave = body.data.condition_sympy(), exit_edge.data.condition_sympy()
        if sympy.simplify(sympy.Not(cond)) != sympy.simplify(leave):
            raise NotAffine(f"the loop at {guard.label} leaves on another condition than its negation")
        var = f"{DIM_PREFIX}{len(place.dims)}"
        start = place.env[itervar]
        inside = place.with_env({itervar: f"({start} + {int(step)} * {var})"})
        first = place.with_env({itervar: start})
        domain = [f"{var} >= 0", _convex(cond, inside.env, self.constants), _convex(cond, first.env, self.constants)]
        assigned = self.assigned_in_body(body.dst, guard) - {itervar}
        carried = inside.without(assigned)
        body_place = _Place(carried.env, carried.values, place.dims + [var], place.domain + domain,
                            place.prefix + [str(position), var], place.predicate, place.predicate_reads)
        first_state, first_guard = len(self.order), len(self.guards)
        returned = self.region(body.dst, guard, body, body_place, guards + [guard])
        if returned is not back:
            raise NotAffine(f"the loop at {guard.label} has another way back to its guard")
        # a body that assigns what the condition reads would make the trip count another one
        # (its states' edges, and the exits of the loops nested in it)
        watched = {s.name for s in cond.free_symbols} | {itervar}
        for state in self.order[first_state:] + self.guards[first_guard:]:
            for edge in state.parent_graph.out_edges(state):
                if edge is not back and watched & set(edge.data.assignments):
                    raise NotAffine(f"the body of the loop at {guard.label} assigns "
                                    f"{sorted(watched & set(edge.data.assignments))}")
        return exit_edge, itervar, assigned     # the variable's value after the loop is not modelled: a use refuses

    def assigned_in_body(self, first, guard) -> set:
        """The symbols the edges of a state-machine loop's body assign (from ``first`` on, up to
        and with the edge back to ``guard``)."""
        found, seen, todo = set(), set(), [first]
        while todo:
            block = todo.pop()
            if block is guard or id(block) in seen:
                continue
            seen.add(id(block))
            for edge in block.parent_graph.out_edges(block):
                found |= set(edge.data.assignments)
                todo.append(edge.dst)
        return found

    def loop_region(self, loop, place: "_Place", guards: List[object], position: int) -> None:
        """A counted ``LoopRegion``: its body, with the iteration as a dimension (as ``loop`` does
        for a loop written as states)."""
        if getattr(loop, "inverted", False) or getattr(loop, "has_continue", False):
            raise NotAffine(f"the loop {loop.label} is not a counted loop (inverted, or it continues)")
        breaks = self.break_conditions(loop)
        found = next((f for f in for_loops(loop.parent_graph) if f.region is loop), None)
        if found is None:
            raise NotAffine(f"the loop {loop.label} is not a counted loop DaCe's loop analysis reads")
        step = sympy.expand(_subst(found.stride, self.constants))
        if not isinstance(step, sympy.Integer) or int(step) == 0:
            raise NotAffine(f"the loop {loop.label} has no constant step")
        try:
            start = to_isl(_parse(str(found.start), self.constants), place.env)
        except NotAffine as exc:
            raise NotAffine(f"the loop {loop.label} starts at {found.start}: {exc}") from exc
        cond = _parse(loop.loop_condition.as_string, self.constants)
        var = f"{DIM_PREFIX}{len(place.dims)}"
        carried = place.without(assigned_symbols([loop]) - {found.variable})
        inside = carried.with_env({found.variable: f"({start} + {int(step)} * {var})"})
        first = place.with_env({found.variable: start})
        domain = [f"{var} >= 0", _convex(cond, inside.env, self.constants), _convex(cond, first.env, self.constants)]
        # an iteration runs where no earlier one broke: where no w before it met a break's condition
        earlier = f"w{len(place.dims)}"
        at_earlier = carried.with_env({found.variable: f"({start} + {int(step)} * {earlier})"})
        for condition in breaks:
            try:
                met = _convex(condition, at_earlier.env, self.constants)
            except NotAffine as exc:
                raise NotAffine(f"the loop {loop.label} breaks on {condition}: {exc}") from exc
            domain.append(f"not (exists ({earlier} : 0 <= {earlier} < {var} and {met}))")
        body_place = _Place(inside.env, inside.values, place.dims + [var], place.domain + domain,
                            place.prefix + [str(position), var], place.predicate, place.predicate_reads)
        watched = {s.name for s in cond.free_symbols} | {found.variable}
        watched |= {s.name for c in breaks for s in c.free_symbols}
        for edge in loop.all_interstate_edges():
            if watched & set(edge.data.assignments):
                raise NotAffine(f"the body of the loop {loop.label} assigns {sorted(watched & set(edge.data.assignments))}")
        self.region(loop.start_block, None, None, body_place, guards)

    def break_conditions(self, loop) -> List[object]:
        """The conditions on which ``loop`` breaks, in the order of its body (recorded in
        ``self.breaks``). A break is modelled where it is all of a branch ``if c: break`` of a
        conditional directly in the loop's body, ``c`` over the sizes and the loops' variables
        (the iterations then end at the first that meets it); any other break refuses."""
        from dace.sdfg.state import BreakBlock, ConditionalBlock

        found, recognised = [], set()
        for block in loop.nodes():
            if not isinstance(block, ConditionalBlock):
                continue
            if not any(isinstance(n, BreakBlock) for _, branch in block.branches for n in branch.nodes()):
                continue
            [(condition, branch)] = block.branches if len(block.branches) == 1 else [(None, None)]
            if condition is None or branch.number_of_nodes() != 1:
                raise NotAffine(f"the loop {loop.label} breaks in {block.label} other than by `if c: break`")
            self.breaks[id(block)] = _parse(condition.as_string, self.constants)
            found.append(self.breaks[id(block)])
            recognised.add(id(branch.nodes()[0]))
        self.break_blocks |= recognised
        for node, _ in _blocks_of_this_loop(loop):
            if isinstance(node, BreakBlock) and id(node) not in recognised:
                raise NotAffine(f"the loop {loop.label} breaks at {node.label}, not as `if c: break` in its body")
        return found

    def conditional(self, block, place: "_Place", guards: List[object], position: int) -> None:
        """A ``ConditionalBlock``: each branch runs where its condition holds and no earlier
        one's did. A condition over the sizes and the loops' variables restricts the domain of
        the branch's statements (exactly); one that reads data (a value symbol, a scalar) is a
        predicate: each statement of the branch then writes ``select(predicate, its value, the
        element's value before)``, what a write that may not happen leaves."""
        earlier_domain: List[str] = []          # the earlier conditions, negated, where affine
        earlier_data: List[tuple] = []          # and where they read data
        reads = list(place.predicate_reads)
        for k, (condition, branch) in enumerate(block.branches):
            domain, data = list(earlier_domain), list(earlier_data)
            if condition is not None:
                cond = _parse(condition.as_string, self.constants)
                try:
                    holds, fails = _convex(cond, place.env, self.constants), _negated(cond, place.env, self.constants)
                    domain.append(holds)
                except NotAffine:
                    tree = self.predicate(condition.as_string, place, reads, position, k)
                    data.append(tree)
                    holds, fails = None, ("not", tree)
            inner = dataclasses.replace(place, domain=place.domain + domain,
                                        prefix=place.prefix + [str(position), str(k)],
                                        predicate=_conjunction([place.predicate] + data), predicate_reads=reads)
            if branch.number_of_nodes():
                self.region(branch.start_block, None, None, inner, guards)
            if condition is None:
                break
            if holds is not None:
                earlier_domain.append(fails)
            else:
                earlier_data.append(fails)

    def predicate(self, text: str, place: "_Place", reads: List[Access], position: int, branch: int) -> tuple:
        """A branch condition that reads data, as a read (appended to ``reads``) of the value a
        statement of its own computes where the conditional starts (``value``)."""
        element = self.value(f"condition_{branch}", text, place, position, ("-1", str(branch)))
        reads.append(element)
        return ("read", len(reads) - 1)

    def reaches(self, start, target, blocked: List[object]) -> bool:
        seen, todo = set(), [start]
        while todo:
            node = todo.pop()
            if node is target:
                return True
            if id(node) in seen or any(node is b for b in blocked):
                continue
            seen.add(id(node))
            todo.extend(e.dst for e in node.parent_graph.out_edges(node))
        return False

    def assign(self, place: "_Place", assignments: Dict[str, str], edge, position: int) -> Tuple[Dict, Dict]:
        """Symbols an interstate edge assigns: affine in what is known (an alias), else a value
        computed from data (an element, a scalar named bare, an expression over them and other
        values), which a statement of its own computes where the edge runs (``value``), so that
        a read of the symbol later reads what the data held then. ``position``: the block the
        edge leads into."""
        env, values = {}, {}
        for k, (name, text) in enumerate(assignments.items()):
            try:
                env[name] = to_isl(_parse(text, self.constants), place.env)
                continue
            except NotAffine as exc:
                affine_failure = exc
            try:
                values[name] = self.value(name, str(text), place.assigned((env, values)), position, ("-2", str(k)))
            except NotAffine as exc:
                raise NotAffine(f"the assignment {name} = {text} after {edge.src.label}: {affine_failure}; "
                                f"as a value: {exc}") from exc
        return env, values

    def value(self, name: str, text: str, place: "_Place", position: int, when: Tuple[str, str]) -> Access:
        """A statement that computes ``text`` from data where control passes on its way into the
        block at ``position`` (after everything before it, before everything of that block; the
        schedule entries ``when`` order those made there: an edge's assignments, then a
        conditional's conditions), into an element of its own per iteration of the loops
        around; returns that element."""
        try:
            tree = ast.parse(text, mode="eval").body
        except SyntaxError as exc:
            raise NotAffine(f"{text!r}: {exc}") from exc
        reads: List[Access] = []
        tree = _DataReads(self, place, reads).visit(tree)
        env = {n: ("read", k) for k, n in enumerate(_READ_NAMES[:len(reads)])}
        for symbol, access in place.values.items():
            if symbol in _names_in(text):
                env[symbol] = ("read", len(reads))
                reads.append(access)
        expr = _tree(tree, env, place.env, _Named(f"the value {name}"))
        self.values_made += 1
        element = Access(f"{VALUE_PREFIX}{name}_{self.values_made}", tuple(place.dims))
        all_reads, expr, old = _predicated(place, reads, expr, element, "", f"the value {name}")
        self.statements.append(Statement(
            name=f"S{len(self.statements)}", origin=f"the value {name} = {text}", dims=list(place.dims),
            domain=list(place.domain), schedule=place.prefix + [str(position), *when], write=element,
            reads=all_reads, expr=expr, nodes=(None, None), state=-self.values_made, maps=(),
            loops=len(place.dims), old_read=old))
        self.value_elements[element.container] = len(place.dims)
        self.value_types[element.container] = _value_type(self.sdfg, name, reads)
        return element

    # -------------------------------------------------------------- one state
    def state(self, state, place: "_Place", index: int) -> None:
        from dace.sdfg import nodes, utils as sdutil

        order = list(sdutil.dfs_topological_sort(state))
        pos = {n: k for k, n in enumerate(order)}
        scopes = state.scope_dict()
        for node in order:
            if isinstance(node, (nodes.MapEntry, nodes.MapExit, nodes.AccessNode)):
                if isinstance(node, nodes.MapEntry) and any(not c.startswith("IN_") for c in node.in_connectors):
                    raise NotAffine(f"map {node.map.label} has a dynamic range (input connectors "
                                    f"{sorted(c for c in node.in_connectors if not c.startswith('IN_'))})")
                continue
            if isinstance(node, nodes.Tasklet):
                self.tasklet(state, node, place, index, pos, scopes)
            else:
                raise NotAffine(f"{type(node).__name__} {node.label} (only maps, tasklets and access nodes are modelled)")
        for edge in state.edges():
            into = isinstance(edge.dst, nodes.AccessNode) and isinstance(edge.src, (nodes.AccessNode, nodes.MapEntry))
            out_of = isinstance(edge.src, nodes.AccessNode) and isinstance(edge.dst, nodes.MapExit)
            if (into or out_of) and edge.data.data is not None:
                self.copy(state, edge, place, index, pos, scopes)

    def scope_names(self, node, scopes, place: "_Place", pos):
        """(names, dims, domain, schedule, maps) of the loops and maps around ``node``."""
        names = dict(place.env)
        dims, domain, schedule, maps = list(place.dims), list(place.domain), list(place.prefix), []
        for entry in _chain(scopes[node], scopes):
            schedule.append(str(pos[entry]))
            added = 0
            for param, rng in zip(entry.map.params, entry.map.range):
                var = f"{DIM_PREFIX}{len(dims)}"
                domain.extend(_range_constraints(var, rng, names, self.constants))
                names[param] = var
                dims.append(var)
                schedule.append(var)
                added += 1
            maps.append((entry, added))
        return names, dims, domain, schedule, tuple(maps)

    def tasklet(self, state, node, place: "_Place", index: int, pos, scopes) -> None:
        from dace import dtypes

        if node.code.language != dtypes.Language.Python:
            raise NotAffine(f"tasklet {node.label} is written in {node.code.language.name}")
        names, dims, domain, schedule, maps = self.scope_names(node, scopes, place, pos)
        loops = len(place.dims)
        reads, inputs = [], {}
        for name in sorted(_names_in(node.code.as_string) & set(place.values)):
            if name not in node.in_connectors:       # a value symbol: the value computed where it was assigned
                inputs[name] = ("read", len(reads))
                reads.append(place.values[name])
        for edge in state.in_edges(node):
            if edge.data.data is None:
                continue
            acc = self.privatized(self.element(state, edge, names, "read"), dims, maps, loops)
            inputs[edge.dst_conn] = ("read", len(reads))
            reads.append(acc)
        outputs, wcrs = {}, {}
        for edge in state.out_edges(node):
            if edge.data.data is None:
                continue
            if edge.data.dynamic:
                raise NotAffine(f"tasklet {node.label} may or may not write {edge.data.data} (dynamic memlet)")
            if edge.src_conn in outputs:
                raise NotAffine(f"tasklet {node.label} writes connector {edge.src_conn} twice")
            outputs[edge.src_conn] = self.privatized(self.element(state, edge, names, "write"), dims, maps, loops)
            wcrs[edge.src_conn] = edge.data.wcr or ""
        values = _tasklet_values(node, inputs, names)
        for conn in sorted(outputs):
            if conn not in values:
                raise NotAffine(f"tasklet {node.label} does not assign its output {conn}")
            acc = outputs[conn]
            all_reads, expr, old = _predicated(place, reads, values[conn], acc, wcrs[conn], f"tasklet {node.label}")
            self.statements.append(Statement(
                name=f"S{len(self.statements)}", origin=f"tasklet {node.label} -> {acc.container}", dims=dims,
                domain=domain, schedule=schedule + [str(pos[node])], write=acc, reads=all_reads,
                expr=expr, nodes=(node, node), state=index, maps=maps, wcr=wcrs[conn], loops=loops, old_read=old))

    def element(self, state, edge, names, role: str) -> Access:
        """The one element a tasklet's memlet names, checked against the access node it leads to."""
        from dace.sdfg import nodes

        memlet = edge.data
        path = state.memlet_path(edge)
        end = path[0].src if role == "read" else path[-1].dst
        direct = isinstance(end, nodes.Tasklet) and len(path) == 1      # tasklet to tasklet
        if not direct and (not isinstance(end, nodes.AccessNode) or end.data != memlet.data):
            raise NotAffine(f"a memlet of {memlet.data} that does not lead to its access node")
        subset = memlet.subset           # a dynamic read still reads the element it names
        index = []
        for begin, end_, _ in subset.ndrange():
            b, e = _subst(begin, self.constants), _subst(end_, self.constants)
            if sympy.simplify(e - b) != 0:
                raise NotAffine(f"tasklet memlet {memlet} names more than one element")
            index.append(to_isl(b, names))
        return Access(memlet.data, tuple(index))

    # -------------------------------------------------------------- copies
    def copy(self, state, edge, place: "_Place", index: int, pos, scopes) -> None:
        """A copy between two access nodes, directly or through a map's entry or exit (a local
        buffer filled from, or written back to, a container outside the map)."""
        from dace import subsets
        from dace.sdfg import nodes

        memlet = edge.data
        path = state.memlet_path(edge)
        src_node, dst_node = path[0].src, path[-1].dst
        inner = edge.src if isinstance(edge.dst, nodes.MapExit) else edge.dst
        if not (isinstance(src_node, nodes.AccessNode) and isinstance(dst_node, nodes.AccessNode)):
            raise NotAffine(f"a memlet of {memlet.data} between a map and a node that is no access node")
        if src_node.data == dst_node.data and memlet.other_subset is None and len(path) > 1:
            return                       # the same container inside and outside a map: no copy
        # a side without a subset is the whole container (as DaCe's code generator copies it)
        src = memlet.get_src_subset(edge, state) or subsets.Range.from_array(self.sdfg.arrays[src_node.data])
        dst = memlet.get_dst_subset(edge, state) or subsets.Range.from_array(self.sdfg.arrays[dst_node.data])
        what = f"{src_node.data} -> {dst_node.data}"
        if memlet.dynamic:
            raise NotAffine(f"the copy {what} is dynamic")
        names, dims, domain, schedule, maps = self.scope_names(inner, scopes, place, pos)
        loops = len(place.dims)
        copy_dims = []
        src_idx = self.copy_index(src, names, dims, domain, copy_dims, what)
        dst_idx = self.copy_index(dst, names, dims, domain, None, what, copy_dims)
        read = self.privatized(Access(src_node.data, src_idx), dims, maps, loops)
        write = self.privatized(Access(dst_node.data, dst_idx), dims, maps, loops)
        reads, expr, old = _predicated(place, [read], ("read", 0), write, memlet.wcr or "", f"the copy {what}")
        # a copy into an access node inside a map comes before the copy out of it to the map's exit
        # (both are placed at that node)
        after = "1" if isinstance(edge.dst, nodes.MapExit) else "0"
        self.statements.append(Statement(
            name=f"S{len(self.statements)}", origin=f"copy {what}", dims=dims + copy_dims,
            domain=domain, schedule=schedule + [str(pos[inner]), after] + copy_dims, write=write,
            reads=reads, expr=expr, nodes=(src_node, dst_node), state=index, maps=maps,
            wcr=memlet.wcr or "", loops=loops, old_read=old))

    def copy_index(self, subset, names, dims, domain, new_dims: Optional[list], what: str, given=None):
        """The element of ``subset`` at the copy's k-th point: each dimension longer than one
        takes the next copy dimension. On the first side the copy dimensions are made."""
        index, k = [], 0
        for begin, end, step in subset.ndrange():
            b, e, s = (_subst(x, self.constants) for x in (begin, end, step))
            if sympy.simplify(e - b) == 0:
                index.append(to_isl(b, names))
                continue
            if not (isinstance(s, sympy.Integer) and int(s) > 0):
                raise NotAffine(f"the copy {what} has the step {s}")
            if new_dims is not None:
                var = f"{DIM_PREFIX}{len(dims) + len(new_dims)}"
                new_dims.append(var)
                domain.append(f"0 <= {var} <= floor((({to_isl(e, names)}) - ({to_isl(b, names)}))/{int(s)})")
            elif k >= len(given):
                raise NotAffine(f"the copy {what} has subsets of different shapes")
            var = (new_dims if new_dims is not None else given)[k]
            k += 1
            index.append(f"({to_isl(b, names)} + {int(s)} * {var})")
        if given is not None and k != len(given):
            raise NotAffine(f"the copy {what} has subsets of different shapes")
        return tuple(index)


def _range_constraints(var: str, rng, names: Dict[str, str], constants) -> List[str]:
    begin, end, step = (_subst(x, constants) for x in rng)
    b, e = to_isl(begin, names), to_isl(end, names)
    if not isinstance(step, sympy.Integer) or int(step) == 0:
        raise NotAffine(f"a map step {step} that is no integer constant")
    s = int(step)
    if s > 0:
        cons = [f"{b} <= {var} <= {e}"]
        if s != 1:
            cons.append(f"(({var}) - ({b})) mod {s} = 0")
    else:
        cons = [f"{e} <= {var} <= {b}"]
        cons.append(f"(({b}) - ({var})) mod {-s} = 0")
    return cons


@dataclasses.dataclass
class _Named:
    """What an assignment's message names as the place it follows (``edge.src.label``)."""

    label: str

    @property
    def src(self) -> "_Named":
        return self


@dataclasses.dataclass
class _Place:
    """Where a state runs: the symbols known there, the loops around it."""

    env: Dict[str, str]              # symbol -> isl expression (sizes, aliases, loop iterations)
    values: Dict[str, Access]        # value symbols: the element each was assigned from
    dims: List[str]                  # the loops' dimensions
    domain: List[str]
    prefix: List[str]                # schedule entries of the loops and positions around
    # the branch conditions that read data around it: a tree over ``predicate_reads`` (None: always)
    predicate: Optional[tuple] = None
    predicate_reads: List[Access] = dataclasses.field(default_factory=list)

    def at(self, position: int) -> "_Place":
        return dataclasses.replace(self, prefix=self.prefix + [str(position)])

    def with_env(self, extra: Dict[str, str]) -> "_Place":
        return dataclasses.replace(self, env={**self.env, **extra})

    def dropped(self, name: str) -> "_Place":
        return dataclasses.replace(self, env={k: v for k, v in self.env.items() if k != name})

    def without(self, names) -> "_Place":
        """Symbols a block may assign are unknown after it (and, in a loop, in its body: their
        value comes from the iteration before): a use of one refuses."""
        names = set(names)
        return dataclasses.replace(self, env={k: v for k, v in self.env.items() if k not in names},
                                   values={k: v for k, v in self.values.items() if k not in names})

    def assigned(self, env_values) -> "_Place":
        env, values = env_values
        return dataclasses.replace(self, env={**self.env, **env}, values={**self.values, **values})


def _blocks_of_this_loop(loop):
    """The blocks inside ``loop``, its nested loops' left out (their breaks are theirs)."""
    from dace.sdfg.state import LoopRegion, SDFGState

    return loop.all_nodes_recursive(lambda node, _: not isinstance(node, (LoopRegion, SDFGState)))


def _parse(text, constants):
    from dace import symbolic

    return _subst(symbolic.pystr_to_symbolic(str(text)), constants)


_RELATIONS = {sympy.StrictLessThan: "<", sympy.LessThan: "<=", sympy.StrictGreaterThan: ">",
              sympy.GreaterThan: ">=", sympy.Equality: "="}


def _convex(cond, names: Dict[str, str], constants) -> str:
    """A loop condition as isl constraints: a conjunction of affine comparisons (its
    iterations are then one interval, which the loop runs from its start)."""
    if cond is sympy.true:
        return "0 <= 0"
    if isinstance(cond, sympy.And):
        return " and ".join(_convex(c, names, constants) for c in cond.args)
    if type(cond) in _RELATIONS:
        lhs, rhs = (_subst(x, constants) for x in cond.args)
        return f"{to_isl(lhs, names)} {_RELATIONS[type(cond)]} {to_isl(rhs, names)}"
    raise NotAffine(f"the loop condition {cond} (only conjunctions of affine comparisons)")


# what ``_Builder.value`` names the containers its statements write, and the reads it names
VALUE_PREFIX = "__hg_value_"
_READ_NAMES = [f"__hg_read_{k}" for k in range(64)]


class _DataReads(ast.NodeTransformer):
    """A value's reads of data made names (``_READ_NAMES``), their accesses in ``reads``: an
    element ``A[i]`` (affine indices), a one-element container named bare."""

    def __init__(self, builder: "_Builder", place: "_Place", reads: List[Access]):
        self.builder, self.place, self.reads = builder, place, reads

    def _read(self, access: Access, node) -> ast.AST:
        if len(self.reads) >= len(_READ_NAMES):
            raise NotAffine("a value that reads too many elements")
        self.reads.append(access)
        return ast.copy_location(ast.Name(id=_READ_NAMES[len(self.reads) - 1], ctx=ast.Load()), node)

    def visit_Subscript(self, node):
        arrays = self.builder.sdfg.arrays
        if not (isinstance(node.value, ast.Name) and node.value.id in arrays):
            raise NotAffine(f"the subscript {ast.unparse(node)}")
        index = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return self._read(Access(node.value.id, tuple(to_isl(_parse(ast.unparse(i), self.builder.constants),
                                                             self.place.env) for i in index)), node)

    def visit_Name(self, node):
        arrays = self.builder.sdfg.arrays
        if node.id in arrays and node.id not in self.place.env and node.id not in self.place.values:
            if not _one_element(arrays[node.id]):
                raise NotAffine(f"the container {node.id} read whole")
            return self._read(Access(node.id, ("0",) * len(arrays[node.id].shape)), node)
        return node


_NEGATED = {"<": ">=", "<=": ">", ">": "<=", ">=": "<"}


def _negated(cond, names: Dict[str, str], constants) -> str:
    """The negation of an affine condition as isl constraints (a disjunction where it is one)."""
    if cond is sympy.true:
        return "1 = 0"
    if isinstance(cond, sympy.And):
        return "(" + " or ".join(_negated(c, names, constants) for c in cond.args) + ")"
    if type(cond) in _RELATIONS:
        lhs, rhs = (to_isl(_subst(x, constants), names) for x in cond.args)
        op = _RELATIONS[type(cond)]
        if op == "=":
            return f"({lhs} < {rhs} or {lhs} > {rhs})"
        return f"{lhs} {_NEGATED[op]} {rhs}"
    raise NotAffine(f"the condition {cond} (only conjunctions of affine comparisons)")


def _conjunction(trees: List[Optional[tuple]]) -> Optional[tuple]:
    parts = [t for t in trees if t is not None]
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else ("bool", "and") + tuple(parts)


def _value_type(sdfg, name: str, reads: List[Access]) -> str:
    """What a value symbol holds: its declared type, else that of what it reads first, else bool
    (a condition)."""
    dtype = sdfg.symbols.get(name)
    if dtype is None and reads and reads[0].container in sdfg.arrays:
        dtype = sdfg.arrays[reads[0].container].dtype
    if dtype is None:
        return "bool"
    return dtype.to_string() if hasattr(dtype, "to_string") else str(dtype)


def _one_element(desc) -> bool:
    return all(str(s) == "1" for s in desc.shape)


def _predicated(place: "_Place", reads: List[Access], expr: tuple, write: Access, wcr: str, what: str):
    """(reads, expression, the read of the value before) of a statement in a branch whose
    condition reads data: the predicate's reads, then its own, then the element it writes (its
    value before), and ``select(predicate, expr, value before)``; unchanged outside such a
    branch (no read of the value before)."""
    if place.predicate is None:
        return reads, expr, None
    if wcr:
        raise NotAffine(f"{what} reduces under a branch condition that reads data")
    own = len(place.predicate_reads)
    shifted = _shift_reads(expr, own)
    all_reads = list(place.predicate_reads) + list(reads) + [write]
    old = len(all_reads) - 1
    return all_reads, ("select", place.predicate, shifted, ("read", old)), old


def _shift_reads(expr: tuple, by: int) -> tuple:
    kind = expr[0]
    if kind == "read":
        return ("read", expr[1] + by)
    if kind in ("idx", "const"):
        return expr
    head = first_child(kind)
    return expr[:head] + tuple(_shift_reads(a, by) for a in expr[head:])


def _names_in(code: str) -> set:
    try:
        return {n.id for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Name)}
    except SyntaxError:
        return set()


# ------------------------------------------------------------------ tasklet code
# expression trees: (kind, [name,] children...): these kinds carry a name (operator, function,
# dtype) before their children
NAMED_KINDS = ("bin", "cmp", "bool", "call", "store")


def first_child(kind: str) -> int:
    """Where the children of a tree node of ``kind`` start."""
    return 2 if kind in NAMED_KINDS else 1


_BIN = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**", ast.FloorDiv: "//", ast.Mod: "%"}
_CMP = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


def _tasklet_values(node, inputs: Dict[str, tuple], names: Dict[str, str]) -> Dict[str, tuple]:
    """Each name the tasklet assigns, as an expression tree over its inputs."""
    try:
        body = ast.parse(node.code.as_string).body
    except SyntaxError as exc:
        raise NotAffine(f"tasklet {node.label}: {exc}") from exc
    env = dict(inputs)
    for stmt in body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue                                  # a docstring or a bare constant
        if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name) and type(stmt.op) in _BIN:
            env[stmt.target.id] = ("bin", _BIN[type(stmt.op)], _tree(ast.Name(id=stmt.target.id), env, names, node),
                                   _tree(stmt.value, env, names, node))
            continue
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
            raise NotAffine(f"tasklet {node.label}: the statement {ast.unparse(stmt)!r} (only assignments)")
        env[stmt.targets[0].id] = _tree(stmt.value, env, names, node)
    return env


def _tree(e, env, names, node) -> tuple:
    if isinstance(e, ast.Constant) and isinstance(e.value, (int, float, bool)):
        return ("const", repr(e.value))
    if isinstance(e, ast.Name):
        if e.id in env:
            return env[e.id]
        if e.id in names:
            return ("idx", names[e.id])
        if e.id in ("True", "False"):
            return ("const", e.id)
        raise NotAffine(f"tasklet {node.label}: the name {e.id} is neither an input nor a symbol")
    if isinstance(e, ast.BinOp) and type(e.op) in _BIN:
        return ("bin", _BIN[type(e.op)], _tree(e.left, env, names, node), _tree(e.right, env, names, node))
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd, ast.Not)):
        inner = _tree(e.operand, env, names, node)
        return inner if isinstance(e.op, ast.UAdd) else ("neg" if isinstance(e.op, ast.USub) else "not", inner)
    if isinstance(e, ast.Compare) and len(e.ops) == 1 and type(e.ops[0]) in _CMP:
        return ("cmp", _CMP[type(e.ops[0])], _tree(e.left, env, names, node),
                _tree(e.comparators[0], env, names, node))
    if isinstance(e, ast.BoolOp):
        return ("bool", "and" if isinstance(e.op, ast.And) else "or") + tuple(_tree(v, env, names, node)
                                                                             for v in e.values)
    if isinstance(e, ast.IfExp):
        return ("select", _tree(e.test, env, names, node), _tree(e.body, env, names, node),
                _tree(e.orelse, env, names, node))
    if isinstance(e, ast.Call) and not e.keywords:
        fname = ast.unparse(e.func)
        return ("call", fname) + tuple(_tree(a, env, names, node) for a in e.args)
    raise NotAffine(f"tasklet {node.label}: the expression {ast.unparse(e)!r}")
