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


@pytest.mark.parametrize("text", ["N ** M", "import os", "f(N)", "N if M else 1", "[1, 2]"])
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
