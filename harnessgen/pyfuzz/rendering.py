"""The source of a (mutated) generated program: each statement's line, rewritten by the
mutations that apply to it (the families are described in ``mutations``)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Dict, List, Tuple

from .ops import BOOLS, INTS

if TYPE_CHECKING:      # the types only: program.py renders through this module
    from .program_record import Mutation, Program, Stmt, Value


# ---------------------------------------------------------------- rendering
def render_body(program: Program) -> Tuple[List[str], List[str]]:
    """(module-level helper functions, the program body's lines)."""
    helpers: List[str] = []
    body: List[str] = []
    by_stmt: Dict[int, Dict[str, Mutation]] = {}
    for m in program.mutations:
        by_stmt.setdefault(m.stmt, {})[m.kind] = m
    values = program.values()
    blocks: List[List[str]] = []
    for index, stmt in enumerate(program.stmts):
        mine = by_stmt.get(index, {})
        lines = _base_lines(program.compiler, index, stmt, values, mine, helpers)
        if "guard" in mine:
            lines = _guarded(program.compiler, stmt, mine["guard"].params, lines)
        if "recover" in mine:
            lines = lines + _recovered(program.compiler, index, stmt, mine["recover"].params)
        if "break" in mine:
            lines = ["torch._dynamo.graph_break()"] + lines
        blocks.append(lines)
    for index in _order(len(blocks), [m for m in program.mutations if m.kind == "hoist"]):
        body += blocks[index]
    return helpers, body


def _order(count: int, hoists: List[Mutation]) -> List[int]:
    """The statements' order: each hoisted one right after the statement it follows now."""
    order = list(range(count))
    for hoist in hoists:
        order.remove(hoist.stmt)
        after = hoist.params["after"]
        order.insert(order.index(after) + 1 if after >= 0 else 0, hoist.stmt)
    return order


def _base_lines(compiler: str, index: int, stmt: Stmt, values: Dict[str, Value],
                mine: Dict[str, Mutation], helpers: List[str]) -> List[str]:
    if "loops" in mine:
        return _loops(compiler, index, stmt, values)
    if "closure" in mine:
        return _closure(compiler, index, stmt, helpers)
    return stmt.lines(compiler)


def _dtype(compiler: str, dtype: str) -> str:
    return f"{'torch' if compiler == 'torch' else 'np'}.{dtype}"


def _zeros(compiler: str, value: Value, like: str, kind: str = "zeros") -> str:
    """A new array of ``value``'s shape and dtype; for torch on the device of ``like`` (an
    operand), or compiled on a GPU the rewrite would mix devices."""
    if compiler != "torch":
        return f"np.{kind}({tuple(value.shape)!r}, dtype={_dtype(compiler, value.dtype)})"
    return f"torch.{kind}({tuple(value.shape)!r}, dtype={_dtype(compiler, value.dtype)}, device={like}.device)"


def _loops(compiler: str, index: int, stmt: Stmt, values: Dict[str, Value]) -> List[str]:
    target = stmt.target
    rank = len(target.shape) if compiler == "dace" else 1     # torch: one operator per row
    loop_vars = [f"i{index}_{d}" for d in range(rank)]
    # DaCe: the innermost index is a one-element slice, so that NumPy keeps the dtype (a
    # float32 scalar plus a Python float is a float64 in NumPy 1.x; a float32 array is not)
    # torch: rows as one-row slices, so that every row runs the same (vectorized) kernel as the whole
    element = loop_vars[:-1] + [f"{loop_vars[-1]}:{loop_vars[-1]} + 1"]
    names = {}
    for arg in stmt.args:
        shape = values[arg].shape
        if len(shape) == len(target.shape) and shape[0] == target.shape[0]:
            names[arg] = f"{arg}[{', '.join(element)}]"
        elif compiler == "dace":     # row broadcast: the operand follows the last dimension
            names[arg] = f"{arg}[{element[-1]}]"
        else:
            names[arg] = arg
    lines = [f"{target.name} = {_zeros(compiler, target, stmt.args[0], 'empty')}"]
    for depth, (var, n) in enumerate(zip(loop_vars, target.shape)):
        lines.append("    " * depth + f"for {var} in range({n}):")
    lines.append("    " * rank + f"{target.name}[{', '.join(element)}] = {stmt.expression(compiler, names)}")
    return lines


def _closure(compiler: str, index: int, stmt: Stmt, helpers: List[str]) -> List[str]:
    name = f"helper_{index}"
    if compiler == "dace":
        params = [f"p{k}" for k in range(len(stmt.args))]
        expression = stmt.expression(compiler, dict(zip(stmt.args, params)))
        helpers.append(f"def {name}({', '.join(params)}):\n    return {expression}")
        return [f"{stmt.target.name} = {name}({', '.join(stmt.args)})"]
    if stmt.operator.mutates:
        # torch, a write: the closure writes the tensor it captures; the other operands are parameters
        params = {arg: f"p{k}" for k, arg in enumerate(stmt.args[1:])}
        lines = [f"def {name}({', '.join(params.values())}):", f"    {stmt.expression(compiler, params)}",
                 f"    return {stmt.args[0]}"]
        return lines + [f"{stmt.target.name} = {name}({', '.join(params)})"]
    # torch: the first operand is the parameter, the others are captured from the enclosing scope
    first = stmt.args[0]
    expression = stmt.expression(compiler, {first: "p0"})
    return [f"def {name}(p0):", f"    return {expression}", f"{stmt.target.name} = {name}({first})"]


def guard_operand(compiler: str, params: Dict) -> str:
    """What a guard compares with its threshold: an entry of the probe (``entry``), that
    entry as a Python number (``item``: a graph break in torch), or the probe's sum."""
    form = params.get("form", "entry")
    if form == "sum":
        return f"{params['probe']}.sum()" if compiler != "dace" else f"np.sum({params['probe']})"
    entry = f"{params['probe']}[{', '.join(str(i) for i in params['index'])}]"
    return f"{entry}.item()" if form == "item" else entry


def _guarded(compiler: str, stmt: Stmt, params: Dict, lines: List[str]) -> List[str]:
    condition = f"{guard_operand(compiler, params)} {'<=' if params['below'] else '>='} {params['threshold']!r}"
    return ([f"if {condition}:"] + ["    " + line for line in lines]
            + ["else:", f"    {stmt.target.name} = {_zeros(compiler, stmt.target, stmt.args[0])}"])


def _recovered(compiler: str, index: int, stmt: Stmt, params: Dict) -> List[str]:
    name = stmt.target.name
    entry = f"{name}[{', '.join(str(i) for i in params['index'])}]"
    keep = f"keep_{index}"
    saved = entry if compiler == "dace" else f"{entry}.clone()"
    junk = (params["junk"] if stmt.target.dtype in INTS else bool(params["junk"]) if stmt.target.dtype in BOOLS
            else float(params["junk"]))
    return [f"{keep} = {saved}", f"{entry} = {junk!r}", f"{entry} = {keep}"]
