"""Bound expressions: one parse, the same value in Python and in the rendered C++."""
import pytest
from hypothesis import given, strategies as st

from harnessgen.core import expr as ex
from harnessgen.core.errors import ConfigError


def test_parse_and_evaluate_integer_context():
    e = ex.parse("max(1, N - 1) + min(KLON, 3) * 2")
    assert ex.evaluate(e, {"N": 5, "KLON": 7}) == 4 + 6
    assert e.symbols() == {"N", "KLON"}


@pytest.mark.parametrize("a,b", [(7, 2), (-7, 2), (7, -2), (-7, -2), (0, 3), (5, 0)])
def test_floor_division_and_modulo_follow_python(a, b):
    assert ex.evaluate(ex.parse(f"{a} // {b}" if b else f"{a} // B"), {"B": 0}) == (a // b if b else 0)
    assert ex.evaluate(ex.parse("A % B"), {"A": a, "B": b}) == (a % b if b else 0)
    # "/" on integers is floor division too (bounds of symbols are integers)
    assert ex.evaluate(ex.parse("A / B"), {"A": a, "B": b}) == (a // b if b else 0)


def test_float_context_and_powers():
    assert ex.evaluate(ex.parse("-1e3"), {}, as_float=True) == -1000.0
    assert ex.evaluate(ex.parse("N / 2"), {"N": 5}, as_float=True) == 2.5
    assert ex.evaluate(ex.parse("N**2 + 1"), {"N": 6}) == 37


def test_sympy_names_are_plain_symbols():
    # sympy would read N, S, E, I as its own objects
    value = ex.to_sympy("N*S + E - I")
    assert {str(s) for s in value.free_symbols} == {"N", "S", "E", "I"}


@pytest.mark.parametrize("text", ["N ** 0.5", "import os", "f(N)", "N if M else 1", "[1, 2]"])
def test_unsupported_syntax_names_the_constraint(text):
    with pytest.raises(ConfigError, match="my.json: KLON"):
        ex.parse(text, "my.json: KLON upper bound")


def test_non_integer_bound_of_integer_is_an_error():
    with pytest.raises(ConfigError, match="not an integer"):
        ex.evaluate(ex.parse("1.5"), {})


@given(st.integers(-50, 50), st.integers(-50, 50))
def test_text_round_trip(a, b):
    e = ex.parse(f"max({a}, N) - min(M, {b}) * (N // 3)")
    again = ex.parse(ex.to_text(e))
    env = {"N": a + 3, "M": b - 2}
    assert ex.evaluate(again, env) == ex.evaluate(e, env)


@pytest.mark.parametrize("r,k", [(2, 10), (3, 0), (0, 5), (0, 0), (1, 10**18), (-1, 10**18 + 1), (5, -2),
                                 (-3, 3), (2, 62), (2, 63), (3, 100), (-3, 101), (16, 10**12)])
def test_a_symbolic_power_is_exact_until_it_saturates(r, k):
    """A size R**K (stockham_fft's): exact where it is an int64 far from the limit, held at
    +-2**62 beyond, 0 for a negative exponent, and never a loop as long as the exponent."""
    value = ex.evaluate(ex.parse("R**K"), {"R": r, "K": k})
    if k < 0:
        assert value == (1 if r == 1 else 0)
    elif abs(r) <= 1 or (k < 64 and abs(r) ** k <= ex.POW_LIMIT):
        assert value == r ** k
    else:
        assert value == (ex.POW_LIMIT if (r > 0 or k % 2 == 0) else -ex.POW_LIMIT)
    assert ex.parse(ex.to_text(ex.parse("R**K"))) == ex.parse("R**K")
    assert ex.to_cpp(ex.parse("R**(K - 1)")) == "hg_pow(sym_R, (sym_K - INT64_C(1)))"
