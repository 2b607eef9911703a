"""Bound expressions: one small language, evaluated in Python and rendered to C++.

Constraint bounds (``"1"``, ``"KLON"``, ``"N - 1"``, ``"max(0, i + 1)"``,
``"-1e3"``) are parsed once into a tree. The NumPy decoder evaluates the tree
with Python numbers; the C++ decoder gets the tree rendered as an expression.
Both follow the same rules, so both decoders derive the same ranges:

* integer context: every operation on int64; ``/`` and ``//`` are floor
  division (division by zero gives 0); ``%`` is the floor modulo;
* float context: double arithmetic; ``/`` is true division.
"""
from __future__ import annotations

import ast
import dataclasses
import functools
import math
from typing import Dict, FrozenSet, Tuple, Union

from .errors import ConfigError

Number = Union[int, float]


@dataclasses.dataclass(frozen=True)
class Expr:
    op: str                      # "num", "sym", "neg", "+", "-", "*", "/", "//", "%", "min", "max"
    args: Tuple["Expr", ...] = ()
    value: Number = 0
    name: str = ""

    # -- construction helpers
    @staticmethod
    def num(v: Number) -> "Expr":
        return Expr("num", value=v)

    @staticmethod
    def sym(name: str) -> "Expr":
        return Expr("sym", name=name)

    def symbols(self) -> FrozenSet[str]:
        if self.op == "sym":
            return frozenset([self.name])
        out: FrozenSet[str] = frozenset()
        for a in self.args:
            out |= a.symbols()
        return out

    def is_float(self) -> bool:
        return (self.op == "num" and isinstance(self.value, float)) or any(a.is_float() for a in self.args)

    def __str__(self) -> str:
        return to_text(self)


_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%"}
_CALLS = {"min": "min", "Min": "min", "max": "max", "Max": "max", "int_floor": "//", "floor_div": "//"}


def parse(text: Union[str, int, float], what: str = "bound") -> Expr:
    """Parse a bound; ``what`` names the constraint in error messages."""
    if isinstance(text, bool):
        raise ConfigError(f"{what}: a bound must be a number or an expression, not {text!r}")
    if isinstance(text, (int, float)):
        return Expr.num(text)
    try:
        tree = ast.parse(str(text).strip(), mode="eval").body
    except SyntaxError as exc:
        raise ConfigError(f"{what}: cannot parse bound {text!r} ({exc.msg})") from exc
    return _from_ast(tree, what, text)


def _from_ast(node: ast.AST, what: str, text) -> Expr:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return Expr.num(node.value)
    if isinstance(node, ast.Name):
        return Expr.sym(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _from_ast(node.operand, what, text)
        if isinstance(node.op, ast.UAdd):
            return inner
        if inner.op == "num":
            return Expr.num(-inner.value)
        return Expr("neg", (inner,))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        # integer powers are expanded into products, so both decoders need no pow()
        exponent = node.right
        base = _from_ast(node.left, what, text)
        if not (isinstance(exponent, ast.Constant) and isinstance(exponent.value, int) and 0 <= exponent.value <= 16):
            if isinstance(exponent, ast.Constant) and not isinstance(exponent.value, int):
                raise ConfigError(f"{what}: only integer powers are supported in {text!r}")
            # a symbolic exponent (a size R**K): a power that saturates, in both decoders
            return Expr("**", (base, _from_ast(exponent, what, text)))
        result = Expr.num(1)
        for _ in range(exponent.value):
            result = base if result == Expr.num(1) else Expr("*", (result, base))
        return result
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        return Expr(_BINOPS[type(node.op)], (_from_ast(node.left, what, text), _from_ast(node.right, what, text)))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CALLS and node.args:
        op = _CALLS[node.func.id]
        args = [_from_ast(a, what, text) for a in node.args]
        if op == "//":
            if len(args) != 2:
                raise ConfigError(f"{what}: {node.func.id} takes two arguments in {text!r}")
            return Expr("//", tuple(args))
        result = args[0]
        for a in args[1:]:
            result = Expr(op, (result, a))
        return result
    raise ConfigError(f"{what}: unsupported syntax in bound {text!r}; use numbers, symbols, "
                      "+ - * / // %, min() and max()")


# ------------------------------------------------------------------ evaluation
def _floordiv(a: int, b: int) -> int:
    return 0 if b == 0 else a // b


def _floormod(a: int, b: int) -> int:
    return 0 if b == 0 else a % b


def evaluate(e: Expr, env: Dict[str, Number], as_float: bool = False) -> Number:
    """Evaluate in integer context (int64 semantics, floor division) or float context."""
    if e.op == "num":
        return float(e.value) if as_float else _as_int(e.value)
    if e.op == "sym":
        v = env[e.name]
        return float(v) if as_float else int(v)
    vals = [evaluate(a, env, as_float) for a in e.args]
    if e.op == "neg":
        return -vals[0]
    a, b = vals
    if e.op == "**":
        return math.pow(a, b) if as_float else _saturating_pow(a, b)
    if e.op == "+":
        return a + b
    if e.op == "-":
        return a - b
    if e.op == "*":
        return a * b
    if e.op == "min":
        return min(a, b)
    if e.op == "max":
        return max(a, b)
    if as_float:
        if e.op == "/":
            return a / b if b != 0 else 0.0
        if e.op == "//":
            return float(math.floor(a / b)) if b != 0 else 0.0
        return math.fmod(a, b) if b != 0 else 0.0
    if e.op in ("/", "//"):
        return _floordiv(a, b)
    return _floormod(a, b)


# where a power saturates: far above any input's size, and a few of them still add up within int64
POW_LIMIT = 1 << 62


def _saturating_pow(a: int, b: int) -> int:
    """``a ** b`` in integers, held within +-POW_LIMIT (as ``hg_pow`` in C++): a negative
    exponent gives 0 (the floor of a fraction) except for bases 1 and -1; never an unbounded number."""
    if a in (0, 1, -1) or b <= 0:
        if a == -1:
            return -1 if b % 2 else 1
        return 1 if (b == 0 or a == 1) else 0
    result = 1
    for _ in range(b):              # |a| >= 2: int64 is left within 63 steps
        result *= a
        if abs(result) > POW_LIMIT:
            return POW_LIMIT if (a > 0 or b % 2 == 0) else -POW_LIMIT      # the sign of a ** b
    return result


def _as_int(v: Number) -> int:
    if isinstance(v, float):
        if not v.is_integer():
            raise ConfigError(f"bound {v!r} is not an integer but bounds a symbol or integer container")
        return int(v)
    return v


# ------------------------------------------------------------------ rendering
def to_cpp(e: Expr, as_float: bool = False, symbol_prefix: str = "sym_") -> str:
    """Render as a C++ expression over ``int64_t sym_<name>`` variables."""
    if e.op == "num":
        if as_float:
            return repr(float(e.value))
        return f"INT64_C({_as_int(e.value)})"
    if e.op == "sym":
        return f"(double){symbol_prefix}{e.name}" if as_float else f"{symbol_prefix}{e.name}"
    args = [to_cpp(a, as_float, symbol_prefix) for a in e.args]
    if e.op == "neg":
        return f"(-{args[0]})"
    if e.op in ("+", "-", "*"):
        return f"({args[0]} {e.op} {args[1]})"
    fn = {"min": "hg_min", "max": "hg_max", "**": "hg_pow"}.get(e.op)
    if fn:
        return f"{fn}{'_f' if as_float else ''}({args[0]}, {args[1]})"
    if as_float:
        return {"/": f"hg_div_f({args[0]}, {args[1]})", "//": f"hg_floordiv_f({args[0]}, {args[1]})",
                "%": f"hg_fmod_f({args[0]}, {args[1]})"}[e.op]
    return {"/": f"hg_floordiv({args[0]}, {args[1]})", "//": f"hg_floordiv({args[0]}, {args[1]})",
            "%": f"hg_floormod({args[0]}, {args[1]})"}[e.op]


def to_text(e: Expr) -> str:
    """Readable text that ``parse`` reads back to the same tree."""
    if e.op == "num":
        return repr(e.value)
    if e.op == "sym":
        return e.name
    args = [to_text(a) for a in e.args]
    if e.op == "neg":
        return f"(-{args[0]})"
    if e.op in ("min", "max"):
        return f"{e.op}({args[0]}, {args[1]})"
    return f"({args[0]} {e.op} {args[1]})"


def simplify(e: Expr) -> Expr:
    """Fold constants and drop neutral terms (keeps rendered code readable)."""
    if e.op in ("num", "sym"):
        return e
    args = tuple(simplify(a) for a in e.args)
    if all(a.op == "num" for a in args) and not any(isinstance(a.value, float) for a in args):
        return Expr.num(evaluate(Expr(e.op, args), {}))
    if e.op == "+" and args[1].op == "num" and args[1].value == 0:
        return args[0]
    if e.op == "+" and args[0].op == "num" and args[0].value == 0:
        return args[1]
    if e.op == "-" and args[1].op == "num" and args[1].value == 0:
        return args[0]
    if e.op in ("min", "max") and args[0] == args[1]:
        return args[0]
    return Expr(e.op, args)


_SYMPY_FUNCS = {"Min", "Max", "int_floor", "floor", "ceiling", "Mod", "Abs", "int_ceil"}


def text_of(value) -> str:
    """``str`` of a value, printed once per distinct value: a program repeats its index
    expressions on every memlet, and sympy's printer was most of the constraint derivation's
    time. Keyed by type and value (``1`` and ``1.0`` are equal and print apart); sympy's
    objects are immutable, and equal ones print alike."""
    try:
        return _printed(value)
    except TypeError:          # unhashable
        return str(value)


@functools.lru_cache(maxsize=1 << 16, typed=True)
def _printed(value) -> str:
    return str(value)


def to_sympy(text):
    """sympify with every identifier a plain symbol (sympy would read N, S, E, I, Q as its own objects)."""
    return _text_to_sympy(text_of(text))


@functools.lru_cache(maxsize=1 << 16)
def _text_to_sympy(text: str):
    """``to_sympy`` of a text, parsed once: the constraint derivation asks for the same index
    expressions of a program thousands of times (sympy's parser is most of its time), and
    sympy's objects are immutable."""
    import re

    import sympy

    names = set(re.findall(r"[A-Za-z_]\w*", text)) - _SYMPY_FUNCS
    local = {n: sympy.Symbol(n) for n in names}
    local.update({"int_floor": lambda a, b: sympy.floor(a / b), "Min": sympy.Min, "Max": sympy.Max})
    return sympy.sympify(text, locals=local)


def from_sympy(expr) -> Expr:
    """Convert a DaCe/sympy expression (via its text) into a bound expression."""
    return parse(text_of(expr), "derived bound")
