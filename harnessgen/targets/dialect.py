"""DaCe's Python dialect as plain Python: what a ``@dace.program`` means, run under NumPy.

Most of a program's body is NumPy already, and ``dace.map[...]`` iterates like a loop. What
plain Python cannot run is DaCe's explicit dataflow: memlet statements in tasklets
(``a << A[i]`` reads, ``b >> B[i]`` writes when the tasklet ends, ``b >> B(1, lambda x, y:
x + y)[i]`` combines with what is there) and explicit maps written as decorated functions
(``@dace.map(_[0:N])`` or ``@dace.map`` with ``i: _[0:N]`` annotations). ``plain_function``
rewrites those constructs into loops, reads and writes (an array subset is bound as a NumPy
view, so writes through it land in place) and returns the function compiled in the program's
own globals; a body without them is returned as it is, and a construct with no plain meaning
raises ``Unsupported`` naming it.
"""
from __future__ import annotations

import ast
import inspect
import textwrap
import types
from typing import Dict, List, Optional, Tuple

from ..core.errors import Unsupported

_WRITE_COMBINE = "__hg_combine"


def _is_dace_attr(node: ast.AST, name: str) -> bool:
    """``dace.<name>`` (or a bare ``<name>`` imported from dace)."""
    if isinstance(node, ast.Call):
        node = node.func
    return (isinstance(node, ast.Attribute) and node.attr == name and isinstance(node.value, ast.Name)
            and node.value.id == "dace") or (isinstance(node, ast.Name) and node.id == name)


def _memlet(node: ast.stmt) -> Optional[Tuple[str, str, ast.expr]]:
    """(local name, "in"/"out", the memlet expression) of a memlet statement, or None."""
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.BinOp)):
        return None
    op = node.value
    if not isinstance(op.left, ast.Name) or not isinstance(op.op, (ast.LShift, ast.RShift)):
        return None
    return op.left.id, "in" if isinstance(op.op, ast.LShift) else "out", op.right


def _split_memlet(expr: ast.expr) -> Tuple[ast.expr, Optional[ast.expr], bool]:
    """(the container subset as a plain subscript or name, the write-conflict function or None,
    whether it names a range rather than one element). ``B(1, f)[i]`` -> (``B[i]``, f)."""
    combine = None
    subscript = expr
    if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Call):
        call = expr.value
        if len(call.args) > 1:
            combine = call.args[1]
        subscript = ast.Subscript(value=call.func, slice=expr.slice, ctx=ast.Load())
    elif isinstance(expr, ast.Call):              # A(1) without a subset: the whole container
        if len(expr.args) > 1:
            combine = expr.args[1]
        subscript = expr.func
    ranged = not isinstance(subscript, ast.Subscript) or _has_slice(subscript.slice)
    return subscript, combine, ranged


def _has_slice(index: ast.expr) -> bool:
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    return any(isinstance(p, ast.Slice) for p in parts)


def _store(target: ast.expr) -> ast.expr:
    target = _copy(target)
    target.ctx = ast.Store()
    return target


def _copy(node: ast.AST) -> ast.AST:
    return ast.parse(ast.unparse(node), mode="eval").body


def _tasklet_body(body: List[ast.stmt]) -> List[ast.stmt]:
    """A tasklet's statements with its memlets made plain: reads first, the code, then writes."""
    reads, writes, code = [], [], []
    for stmt in body:
        memlet = _memlet(stmt)
        if memlet is None:
            code.append(stmt)
            continue
        local, direction, expr = memlet
        subscript, combine, ranged = _split_memlet(expr)
        if direction == "in":
            reads.append(ast.Assign(targets=[ast.Name(local, ast.Store())], value=_copy(subscript)))
        elif ranged and combine is None:           # a view: the tasklet writes through it
            reads.append(ast.Assign(targets=[ast.Name(local, ast.Store())], value=_copy(subscript)))
        elif combine is None:
            writes.append(ast.Assign(targets=[_store(subscript)], value=ast.Name(local, ast.Load())))
        else:
            combined = ast.Call(func=_copy(combine), args=[_copy(subscript), ast.Name(local, ast.Load())], keywords=[])
            if ranged:
                writes.append(ast.Expr(ast.Call(func=ast.Name(_WRITE_COMBINE, ast.Load()),
                                                args=[_copy(subscript), _copy(combine), ast.Name(local, ast.Load())],
                                                keywords=[])))
            else:
                writes.append(ast.Assign(targets=[_store(subscript)], value=combined))
    return reads + [_Plain().visit(s) for s in code] + writes or [ast.Pass()]


def _map_ranges(function: ast.FunctionDef) -> Tuple[List[str], ast.expr]:
    """(the map's parameters, the ``_[...]`` subscript they range over) of an explicit map."""
    decorator = next(d for d in function.decorator_list if _is_dace_attr(d, "map"))
    params = [a.arg for a in function.args.args]
    if isinstance(decorator, ast.Call) and decorator.args:
        ranges = decorator.args[0]
    else:
        slices = []
        for arg in function.args.args:
            if not (isinstance(arg.annotation, ast.Subscript) and isinstance(arg.annotation.value, ast.Name)
                    and arg.annotation.value.id == "_"):
                raise Unsupported(f"explicit map {function.name}: parameter {arg.arg} has no range (_[begin:end])")
            slices.append(arg.annotation.slice)
        ranges = ast.Subscript(value=ast.Name("_", ast.Load()),
                               slice=slices[0] if len(slices) == 1 else ast.Tuple(slices, ast.Load()), ctx=ast.Load())
    if not (isinstance(ranges, ast.Subscript) and isinstance(ranges.value, ast.Name) and ranges.value.id == "_"):
        raise Unsupported(f"explicit map {function.name}: its range is not written as _[begin:end, ...]")
    return params, ranges


class _Plain(ast.NodeTransformer):
    """Explicit maps become loops over ``dace.map[...]``; tasklets (``with dace.tasklet`` and
    ``@dace.tasklet`` functions) become their statements with plain reads and writes."""

    def visit_FunctionDef(self, node: ast.FunctionDef):
        if any(_is_dace_attr(d, "map") for d in node.decorator_list):
            params, ranges = _map_ranges(node)
            target = (ast.Name(params[0], ast.Store()) if len(params) == 1 else
                      ast.Tuple([ast.Name(p, ast.Store()) for p in params], ast.Store()))
            iterator = ast.Subscript(value=ast.Attribute(ast.Name("dace", ast.Load()), "map", ast.Load()),
                                     slice=ranges.slice, ctx=ast.Load())
            return ast.For(target=target, iter=iterator, body=_tasklet_body(node.body), orelse=[])
        if any(_is_dace_attr(d, "tasklet") for d in node.decorator_list):
            return ast.If(test=ast.Constant(True), body=_tasklet_body(node.body), orelse=[])
        self.generic_visit(node)
        return node

    def visit_With(self, node: ast.With):
        if any(_is_dace_attr(item.context_expr, "tasklet") for item in node.items):
            for item in node.items:
                call = item.context_expr
                if isinstance(call, ast.Call) and (call.args or call.keywords):
                    raise Unsupported(f"a tasklet in another language ({ast.unparse(call)}) has no plain Python "
                                      "meaning")
            return ast.If(test=ast.Constant(True), body=_tasklet_body(node.body), orelse=[])
        self.generic_visit(node)
        return node


def _uses_dialect(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.With) and any(_is_dace_attr(i.context_expr, "tasklet") for i in node.items):
            return True
        if isinstance(node, ast.FunctionDef) and any(_is_dace_attr(d, ("map")) or _is_dace_attr(d, "tasklet")
                                                     for d in node.decorator_list):
            return True
    return False


def _combine_into(view, combine, value) -> None:
    """A write-conflict resolution over a range: every element combined with the new value."""
    import numpy as np

    view[...] = np.vectorize(combine)(view, value)


def plain_function(function: types.FunctionType) -> types.FunctionType:
    """``function`` (a ``@dace.program``'s Python function) with DaCe's dialect made plain; the
    function itself where its body has none."""
    try:
        source = textwrap.dedent(inspect.getsource(function))
    except (OSError, TypeError):
        return function
    tree = ast.parse(source)
    outer = tree.body[0]
    if not isinstance(outer, ast.FunctionDef) or not _uses_dialect(outer):
        return function
    outer.decorator_list = []
    outer.body = [_Plain().visit(stmt) for stmt in outer.body]
    module = ast.fix_missing_locations(ast.Module(body=[outer], type_ignores=[]))
    namespace: Dict = dict(function.__globals__)
    namespace[_WRITE_COMBINE] = _combine_into
    exec(compile(module, inspect.getsourcefile(function) or "<dace program>", "exec"), namespace)
    return namespace[outer.name]
