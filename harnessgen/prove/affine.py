"""Affine expressions in isl's syntax: sympy expressions of DaCe (ranges, memlet indices) and
the layout's bound expressions, printed for ``islpy`` to parse.

Only what isl represents exactly is printed: sums, products with one constant factor, integer
constants, ``min``/``max``, floor and ceiling of a quotient by a positive constant (DaCe's
``int_floor``/``int_ceil``, sympy's ``floor``/``ceiling``) and ``mod`` by a positive constant.
Anything else raises ``NotAffine`` naming it: the proof then says UNKNOWN with that reason.
"""
from __future__ import annotations

from fractions import Fraction
from typing import Dict

import sympy

from ..core import expr as ex
from ..core.errors import Unsupported


class NotAffine(Unsupported):
    """The pair leaves the fragment the prover models; the message is the UNKNOWN reason."""


def _const(e) -> Fraction:
    return Fraction(int(e.p), int(e.q))


def _positive_int(e, what: str) -> int:
    if not (isinstance(e, sympy.Integer) and int(e) > 0):
        raise NotAffine(f"{what} by {e}: not a positive integer constant")
    return int(e)


def to_isl(e, names: Dict[str, str]) -> str:
    """``e`` (a sympy expression or a number) in isl syntax; ``names`` renames its symbols
    (a symbol missing from it is not affine here)."""
    e = sympy.sympify(e) if not isinstance(e, sympy.Basic) else e
    return _print(e, names)


def _print(e, names: Dict[str, str]) -> str:
    if isinstance(e, sympy.Integer) or e in (sympy.true, sympy.false):
        return str(int(e))
    if isinstance(e, sympy.Rational):
        raise NotAffine(f"the fraction {e} in an index or bound")
    if isinstance(e, sympy.Symbol):
        if e.name not in names:
            raise NotAffine(f"the symbol {e.name} (neither a size nor an iteration variable here)")
        return names[e.name]
    if isinstance(e, sympy.Add):
        return "(" + " + ".join(_print(a, names) for a in e.args) + ")"
    if isinstance(e, sympy.Mul):
        coeff, rest = e.as_coeff_Mul()
        factors = sympy.Mul.make_args(rest)
        if len(factors) > 1 or any(f.is_number for f in factors):
            raise NotAffine(f"the product {e} (not affine)")
        if not isinstance(coeff, sympy.Integer):
            raise NotAffine(f"the fraction {coeff} in {e}")
        return f"({int(coeff)} * {_print(factors[0], names)})"
    if isinstance(e, (sympy.Min, sympy.Max)):
        op = "min" if isinstance(e, sympy.Min) else "max"
        args = [_print(a, names) for a in e.args]
        out = args[0]
        for a in args[1:]:
            out = f"{op}({out}, {a})"
        return out
    name = type(e).__name__
    if name in ("int_floor", "int_ceil", "floor_div"):
        num, den = e.args
        d = _positive_int(den, name)
        return f"{'ceil' if name == 'int_ceil' else 'floor'}(({_print(num, names)})/{d})"
    if isinstance(e, (sympy.floor, sympy.ceiling)):
        return _quotient("floor" if isinstance(e, sympy.floor) else "ceil", e.args[0], names)
    if isinstance(e, sympy.Mod):
        num, den = e.args
        return f"(({_print(num, names)}) mod {_positive_int(den, 'mod')})"
    raise NotAffine(f"{name} in {e} (not affine)")


def _quotient(op: str, arg, names: Dict[str, str]) -> str:
    """floor/ceil of a sum with rational coefficients: one integer numerator over their common
    denominator."""
    terms = sympy.Add.make_args(sympy.expand(arg))
    den = 1
    for t in terms:
        c, _ = t.as_coeff_Mul()
        if not c.is_Rational:
            raise NotAffine(f"{op}({arg}) (not affine)")
        den = den * int(c.q) // _gcd(den, int(c.q))
    numerator = sympy.expand(arg * den)
    return f"{op}(({_print(numerator, names)})/{den})"


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a


_EX_OPS = {"+": "+", "-": "-", "*": "*"}


def bound_to_isl(e: ex.Expr, names: Dict[str, str]) -> str:
    """A layout bound (``expr.Expr``, integer context) in isl syntax."""
    if e.op == "num":
        if isinstance(e.value, float) and not float(e.value).is_integer():
            raise NotAffine(f"the bound {e} is not an integer")
        return str(int(e.value))
    if e.op == "sym":
        if e.name not in names:
            raise NotAffine(f"the bound {e} names {e.name}, no symbol before it")
        return names[e.name]
    args = [bound_to_isl(a, names) for a in e.args]
    if e.op == "neg":
        return f"(-{args[0]})"
    if e.op in _EX_OPS:
        if e.op == "*" and not (e.args[0].op == "num" or e.args[1].op == "num"):
            raise NotAffine(f"the bound {e} (a product of symbols)")
        return f"({args[0]} {_EX_OPS[e.op]} {args[1]})"
    if e.op in ("min", "max"):
        return f"{e.op}({args[0]}, {args[1]})"
    if e.op in ("/", "//", "%") and e.args[1].op == "num" and int(e.args[1].value) > 0:
        d = int(e.args[1].value)
        return f"floor(({args[0]})/{d})" if e.op != "%" else f"(({args[0]}) mod {d})"
    raise NotAffine(f"the bound {e} (not affine)")
