"""Semantics-preserving rewrites of a generated program (the TorchProbe families).

Each family rewrites one statement's source; they compose (a statement may be
resolved into loops, guarded and mutated-then-recovered at once). Every
rewrite computes the same values on the program's own input, which
``tests/unit/test_pyfuzz_mutations.py`` checks on generated programs:

``loops``    the operator resolved into explicit loops over the elements
             (torch: over the first dimension, an operator per row; only
             correctly rounded operators, whose bits do not depend on the
             vector width, see ``Op.exact``)
``closure``  the statement moved into a function: a module-level helper for
             DaCe (its frontend takes no nested functions), a closure that
             captures its other operands for torch
``guard``    an always-true conditional block around the statement; the
             condition compares an entry of an earlier value with a threshold
             synthesized from the value profiled on the program's input, with a
             margin wider than any rounding; the else branch computes zeros
``recover``  an entry of the result overwritten with junk and restored from a
             saved copy (mutate-then-recover)
"""
from __future__ import annotations

from typing import Callable, Dict, List, Tuple

import numpy as np

from .choices import ByteChoices
from .ops import INTS
from .program import Mutation, Program, Stmt, Value

ELEMENTWISE = ("unary", "binary", "scalar", "where")
FAMILIES = ("loops", "closure", "guard", "recover")
# families that replace the statement's own line (at most one of them per statement)
REPLACING = ("loops", "closure")


# ---------------------------------------------------------------- choosing
def applicable(program: Program, kind: str, index: int) -> bool:
    stmt = program.stmts[index]
    taken = {m.kind for m in program.mutations if m.stmt == index}
    if kind in taken or (kind in REPLACING and taken & set(REPLACING)):
        return False
    if kind == "loops":
        return (stmt.operator.kind in ELEMENTWISE and len(stmt.target.shape) >= 1
                and (program.compiler == "dace" or stmt.operator.exact))
    if kind == "recover":
        return not stmt.operator.view and len(stmt.target.shape) >= 1
    return True


def mutate(program: Program, choices: ByteChoices, profile: Dict[str, np.ndarray],
           families=FAMILIES, max_mutations: int = 3) -> Program:
    """``program`` with up to ``max_mutations`` rewrites chosen by ``choices``. ``profile``
    holds every value of the unmutated program on its input (guard thresholds)."""
    out = program.copy()
    for _ in range(choices.integer(0, max_mutations)):
        options = [(kind, i) for i in range(len(out.stmts)) for kind in families if applicable(out, kind, i)]
        if not options:
            break
        kind, index = choices.choice(options)
        out.mutations.append(Mutation(kind, index, PARAMS[kind](out, index, choices, profile)))
    return out


def _index(shape: Tuple[int, ...], choices: ByteChoices) -> List[int]:
    return [choices.integer(0, n - 1) for n in shape]


def _guard_params(program: Program, index: int, choices: ByteChoices, profile) -> Dict:
    earlier = [v for v in program.inputs] + [s.target for s in program.stmts[:index]]
    probe = choices.choice([v for v in earlier if all(n > 0 for n in v.shape)])
    where = _index(probe.shape, choices)
    seen = profile[probe.name][tuple(where)].item()
    margin = 1 + choices.integer(0, 3) + abs(seen) / 2
    below = choices.boolean()
    threshold = seen + margin if below else seen - margin
    if probe.dtype in INTS:
        threshold = int(np.floor(threshold)) if below else int(np.ceil(threshold))
    return {"probe": probe.name, "index": where, "threshold": threshold, "below": below}


def _recover_params(program: Program, index: int, choices: ByteChoices, profile) -> Dict:
    target = program.stmts[index].target
    return {"index": _index(target.shape, choices), "junk": choices.choice([7, -3, 1000, 0])}


PARAMS: Dict[str, Callable] = {
    "loops": lambda program, index, choices, profile: {},
    "closure": lambda program, index, choices, profile: {},
    "guard": _guard_params,
    "recover": _recover_params,
}


# ---------------------------------------------------------------- rendering
def render_body(program: Program) -> Tuple[List[str], List[str]]:
    """(module-level helper functions, the program body's lines)."""
    helpers: List[str] = []
    body: List[str] = []
    by_stmt: Dict[int, Dict[str, Mutation]] = {}
    for m in program.mutations:
        by_stmt.setdefault(m.stmt, {})[m.kind] = m
    values = program.values()
    for index, stmt in enumerate(program.stmts):
        mine = by_stmt.get(index, {})
        lines = _base_lines(program.compiler, index, stmt, values, mine, helpers)
        if "guard" in mine:
            lines = _guarded(program.compiler, stmt, mine["guard"].params, lines)
        if "recover" in mine:
            lines = lines + _recovered(program.compiler, index, stmt, mine["recover"].params)
        body += lines
    return helpers, body


def _base_lines(compiler: str, index: int, stmt: Stmt, values: Dict[str, Value],
                mine: Dict[str, Mutation], helpers: List[str]) -> List[str]:
    if "loops" in mine:
        return _loops(compiler, index, stmt, values)
    if "closure" in mine:
        return _closure(compiler, index, stmt, helpers)
    return [f"{stmt.target.name} = {stmt.expression(compiler)}"]


def _dtype(compiler: str, dtype: str) -> str:
    return f"{'np' if compiler == 'dace' else 'torch'}.{dtype}"


def _zeros(compiler: str, value: Value, like: str, kind: str = "zeros") -> str:
    """A new array of ``value``'s shape and dtype; for torch on the device of ``like`` (an
    operand), or compiled on a GPU the rewrite would mix devices."""
    if compiler == "dace":
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
        if len(shape) == len(target.shape):
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
    # torch: the first operand is the parameter, the others are captured from the enclosing scope
    first = stmt.args[0]
    expression = stmt.expression(compiler, {first: "p0"})
    return [f"def {name}(p0):", f"    return {expression}", f"{stmt.target.name} = {name}({first})"]


def _guarded(compiler: str, stmt: Stmt, params: Dict, lines: List[str]) -> List[str]:
    entry = f"{params['probe']}[{', '.join(str(i) for i in params['index'])}]"
    condition = f"{entry} {'<=' if params['below'] else '>='} {params['threshold']!r}"
    return ([f"if {condition}:"] + ["    " + line for line in lines]
            + ["else:", f"    {stmt.target.name} = {_zeros(compiler, stmt.target, stmt.args[0])}"])


def _recovered(compiler: str, index: int, stmt: Stmt, params: Dict) -> List[str]:
    name = stmt.target.name
    entry = f"{name}[{', '.join(str(i) for i in params['index'])}]"
    keep = f"keep_{index}"
    saved = entry if compiler == "dace" else f"{entry}.clone()"
    junk = params["junk"] if stmt.target.dtype in INTS else float(params["junk"])
    return [f"{keep} = {saved}", f"{entry} = {junk!r}", f"{entry} = {keep}"]
