"""An SDFG as the prover sees it: statements with integer domains, one write, affine reads and
an expression tree (a polyhedral model).

A *statement* is a tasklet output or a copy between two access nodes, run once per point of
its domain: the iteration variables of the maps around it (and of the loops around its
state), bounded by affine ranges over the sizes. Its schedule (a timestamp vector) orders it
as the SDFG does: states in order, loop iterations in order, nodes of a state in a
topological order, map iterations in index order (a map's iterations being unordered, any
conflict between two of them is refused, ``dataflow.check_races``).

What the model does not cover raises ``NotAffine`` with the reason: nested SDFGs, library
nodes, views and streams, non-Python tasklets, tasklets with control flow, the values of
reductions (write-conflict resolution: bounds and coverage only), dynamic memlets, non-affine indices or bounds, and control flow
other than a sequence of states and counted loops with affine bounds.
"""
from __future__ import annotations

import ast
import dataclasses
from typing import Dict, List, Optional, Tuple

import islpy as isl
import sympy

from ..layout import InputLayout
from . import affine
from .affine import NotAffine

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
    dtype: str
    reads: List[Access]
    expr: tuple                      # ("read", k) | ("idx", isl expr) | ("const", text) | (op, ...)
    nodes: Tuple[object, object]     # (first, last) node in its state: dataflow order
    state: int                       # which state (in program order) it lies in
    maps: Tuple[Tuple[object, int], ...]   # (map entry, dims it adds) around it, outermost first
    wcr: str = ""                    # write-conflict resolution (a reduction): bounds and coverage only


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


def container_of(tuple_id: str) -> str:
    return tuple_id[2:]


def size_names(layout: InputLayout) -> Dict[str, str]:
    return {s.name: SIZE_PREFIX + s.name for s in layout.symbols}


def size_context(ctx, layout: InputLayout):
    """The sizes' ranges the layout decodes (each bound may name the sizes before it)."""
    names, cons = {}, []
    for slot in layout.symbols:
        lo, hi = affine.bound_to_isl(slot.lo, names), affine.bound_to_isl(slot.hi, names)
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
    constants = {k: v for k, v in sdfg.constants.items()}
    for name, desc in sdfg.arrays.items():
        if isinstance(desc, (dt.View, dt.Stream)) or type(desc).__name__ in ("View", "ArrayView", "StructureView"):
            raise NotAffine(f"container {name} is a {type(desc).__name__}")
        if any(sympy.sympify(o) != 0 for o in getattr(desc, "offset", []) or []):
            raise NotAffine(f"container {name} has an index offset")
        shapes[name] = tuple(affine.to_isl(_subst(s, constants), names) for s in desc.shape)
        dtypes[name] = desc.dtype.to_string() if hasattr(desc.dtype, "to_string") else str(desc.dtype)
        transient[name] = bool(desc.transient)
    builder = _Builder(names, constants, _private_scopes(sdfg))
    states = builder.walk(sdfg)
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

    def privatized(self, acc: Access, dims: List[str], maps) -> Access:
        """``acc`` indexed by the iterations that own a private copy of its container."""
        entry = self.private.get(acc.container)
        if entry is None:
            return acc
        lead = 0
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
        """The states in program order: a straight sequence (loops are refused)."""
        from dace.sdfg.state import SDFGState

        for block in sdfg.all_control_flow_blocks():
            if not isinstance(block, SDFGState):
                raise NotAffine(f"control flow block {type(block).__name__} {block.label}")
        order, state, seen = [], sdfg.start_state, set()
        while state is not None:
            if state in seen:
                raise NotAffine("a loop between states")
            seen.add(state)
            order.append(state)
            out = sdfg.out_edges(state)
            if len(out) > 1:
                raise NotAffine(f"a branch after state {state.label}")
            if out:
                edge = out[0]
                if not edge.data.is_unconditional():
                    raise NotAffine(f"a condition on the edge after state {state.label}")
                if edge.data.assignments:
                    raise NotAffine(f"symbol assignments after state {state.label}")
                state = edge.dst
            else:
                state = None
        if len(order) != len(list(sdfg.states())):
            raise NotAffine("states that the start state does not reach in sequence")
        for index, st in enumerate(order):
            self.state(st, index)
        return order

    # -------------------------------------------------------------- one state
    def state(self, state, index: int) -> None:
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
                self.tasklet(state, node, index, pos, scopes)
            else:
                raise NotAffine(f"{type(node).__name__} {node.label} (only maps, tasklets and access nodes are modelled)")
        for edge in state.edges():
            if isinstance(edge.src, nodes.AccessNode) and isinstance(edge.dst, nodes.AccessNode):
                self.copy(state, edge, index, pos, scopes)

    def scope_names(self, state, node, scopes, index: int, pos):
        """(names, dims, domain, schedule, maps) of the maps around ``node``."""
        chain = []
        entry = scopes[node]
        while entry is not None:
            chain.append(entry)
            entry = scopes[entry]
        chain.reverse()
        names = dict(self.size_names)
        dims, domain, schedule, maps = [], [], [str(index)], []
        for entry in chain:
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

    def tasklet(self, state, node, index: int, pos, scopes) -> None:
        from dace import dtypes

        if node.code.language != dtypes.Language.Python:
            raise NotAffine(f"tasklet {node.label} is written in {node.code.language.name}")
        names, dims, domain, schedule, maps = self.scope_names(state, node, scopes, index, pos)
        reads, inputs = [], {}
        for edge in state.in_edges(node):
            if edge.data.data is None:
                continue
            acc = self.privatized(self.element(state, edge, names, "read"), dims, maps)
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
            outputs[edge.src_conn] = self.privatized(self.element(state, edge, names, "write"), dims, maps)
            wcrs[edge.src_conn] = edge.data.wcr or ""
        values = _tasklet_values(node, inputs, names)
        for conn in sorted(outputs):
            if conn not in values:
                raise NotAffine(f"tasklet {node.label} does not assign its output {conn}")
            acc = outputs[conn]
            self.statements.append(Statement(
                name=f"S{len(self.statements)}", origin=f"tasklet {node.label} -> {acc.container}", dims=dims,
                domain=domain, schedule=schedule + [str(pos[node])], write=acc, dtype="", reads=reads,
                expr=values[conn], nodes=(node, node), state=index, maps=maps, wcr=wcrs[conn]))

    def element(self, state, edge, names, role: str) -> Access:
        """The one element a tasklet's memlet names, checked against the access node it leads to."""
        from dace.sdfg import nodes

        memlet = edge.data
        path = state.memlet_path(edge)
        end = path[0].src if role == "read" else path[-1].dst
        direct = isinstance(end, nodes.Tasklet) and len(path) == 1      # tasklet to tasklet
        if not direct and (not isinstance(end, nodes.AccessNode) or end.data != memlet.data):
            raise NotAffine(f"a memlet of {memlet.data} that does not lead to its access node")
        if memlet.dynamic and role == "read":
            pass                         # a dynamic read still reads the element it names
        subset = memlet.subset
        index = []
        for begin, end_, _ in subset.ndrange():
            b, e = _subst(begin, self.constants), _subst(end_, self.constants)
            if sympy.simplify(e - b) != 0:
                raise NotAffine(f"tasklet memlet {memlet} names more than one element")
            index.append(affine.to_isl(b, names))
        return Access(memlet.data, tuple(index))

    # -------------------------------------------------------------- copies
    def copy(self, state, edge, index: int, pos, scopes) -> None:
        memlet = edge.data
        if memlet.dynamic:
            raise NotAffine(f"the copy {edge.src.data} -> {edge.dst.data} is dynamic")
        src = memlet.get_src_subset(edge, state)
        dst = memlet.get_dst_subset(edge, state)
        if src is None or dst is None:
            raise NotAffine(f"the copy {edge.src.data} -> {edge.dst.data} has no subset on one side")
        names, dims, domain, schedule, maps = self.scope_names(state, edge.dst, scopes, index, pos)
        copy_dims = []
        src_idx = self.copy_index(src, names, dims, domain, copy_dims, edge)
        dst_idx = self.copy_index(dst, names, dims, domain, None, edge, copy_dims)
        read = self.privatized(Access(edge.src.data, src_idx), dims, maps)
        write = self.privatized(Access(edge.dst.data, dst_idx), dims, maps)
        self.statements.append(Statement(
            name=f"S{len(self.statements)}", origin=f"copy {edge.src.data} -> {edge.dst.data}", dims=dims + copy_dims,
            domain=domain, schedule=schedule + [str(pos[edge.dst])] + copy_dims, write=write,
            dtype="", reads=[read], expr=("read", 0), nodes=(edge.src, edge.dst), state=index, maps=maps,
            wcr=memlet.wcr or ""))

    def copy_index(self, subset, names, dims, domain, new_dims: Optional[list], edge, given=None):
        """The element of ``subset`` at the copy's k-th point: each dimension longer than one
        takes the next copy dimension. On the first side the copy dimensions are made."""
        index, k = [], 0
        for begin, end, step in subset.ndrange():
            b, e, s = (_subst(x, self.constants) for x in (begin, end, step))
            if sympy.simplify(e - b) == 0:
                index.append(affine.to_isl(b, names))
                continue
            if not (isinstance(s, sympy.Integer) and int(s) > 0):
                raise NotAffine(f"the copy {edge.src.data} -> {edge.dst.data} has the step {s}")
            if new_dims is not None:
                var = f"{DIM_PREFIX}{len(dims) + len(new_dims)}"
                new_dims.append(var)
                domain.append(f"0 <= {var} <= floor((({affine.to_isl(e, names)}) - ({affine.to_isl(b, names)}))/{int(s)})")
            elif k >= len(given):
                raise NotAffine(f"the copy {edge.src.data} -> {edge.dst.data} has subsets of different shapes")
            var = (new_dims if new_dims is not None else given)[k]
            k += 1
            index.append(f"({affine.to_isl(b, names)} + {int(s)} * {var})")
        if given is not None and k != len(given):
            raise NotAffine(f"the copy {edge.src.data} -> {edge.dst.data} has subsets of different shapes")
        return tuple(index)


def _range_constraints(var: str, rng, names: Dict[str, str], constants) -> List[str]:
    begin, end, step = (_subst(x, constants) for x in rng)
    b, e = affine.to_isl(begin, names), affine.to_isl(end, names)
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


# ------------------------------------------------------------------ tasklet code
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
