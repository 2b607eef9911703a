"""The shrinker: smallest failing symbols, few and simple non-zero values, canonical bytes."""
import numpy as np

from harnessgen.core import expr as ex
from harnessgen.inputs.layout import ContainerSlot, InputLayout, SymbolSlot
from harnessgen.triage.shrink import Shrinker

P = ex.parse
LAYOUT = InputLayout(
    [SymbolSlot("N", "int32", P(1), P(32)), SymbolSlot("M", "int32", P(1), P("N"))],
    [ContainerSlot("A", "float64", P("N * M"), (P("N"), P("M")), P(-1e6), P(1e6)),
     ContainerSlot("idx", "int32", P("N"), (P("N"),), P(0), P("N - 1"))],
    float_tiny=1e-9, allow_nonfinite=False)


def start(n=29, m=7, seed=0):
    rng = np.random.default_rng(seed)
    arrays = {"A": rng.uniform(-1e3, 1e3, n * m), "idx": rng.integers(0, n, n).astype(np.int32)}
    return LAYOUT.encode({"N": n, "M": m}, arrays)


def shrink(predicate, data=None):
    data = data or start()
    assert predicate(data)
    out, stats = Shrinker(LAYOUT, predicate).shrink(data)
    assert predicate(out)
    decoded = LAYOUT.decode(out)
    assert LAYOUT.encode(decoded.symbols, decoded.arrays).rstrip(b"\0") == out    # canonical, trimmed
    return decoded, stats


def test_symbols_go_to_the_smallest_failing_value():
    # "wrong only when N is not a multiple of 4": the smallest such N is 1
    decoded, _ = shrink(lambda d: LAYOUT.decode(d).symbols["N"] % 4 != 0)
    assert decoded.symbols == {"N": 1, "M": 1}
    # with a lower limit the smallest failing value is found exactly, not approximately
    decoded, _ = shrink(lambda d: LAYOUT.decode(d).symbols["N"] >= 13 and LAYOUT.decode(d).symbols["N"] % 4)
    assert decoded.symbols["N"] == 13


def test_arrays_become_zero_when_the_data_does_not_matter():
    decoded, stats = shrink(lambda d: LAYOUT.decode(d).symbols["N"] > 2)
    assert not decoded.arrays["A"].any() and not decoded.arrays["idx"].any()
    assert stats.bytes_after < stats.bytes_before


def test_one_simple_non_zero_value_remains_when_one_is_needed():
    def predicate(d):
        a = LAYOUT.decode(d).arrays["A"]
        return bool(np.any(a > 100.0))

    decoded, _ = shrink(predicate)
    a = decoded.arrays["A"]
    assert np.count_nonzero(a) == 1 and a.size == 1
    assert a[0] > 100 and float(f"{a[0]:.2g}") == a[0]               # at most two significant digits


def test_index_values_move_toward_simple_numbers():
    def predicate(d):
        decoded = LAYOUT.decode(d)
        return decoded.symbols["N"] >= 3 and int(decoded.arrays["idx"][0]) == decoded.symbols["N"] - 1

    rng = np.random.default_rng(1)
    idx = rng.integers(0, 29, 29).astype(np.int32)
    idx[0] = 28
    decoded, _ = shrink(predicate, LAYOUT.encode({"N": 29, "M": 7}, {"A": rng.uniform(-9, 9, 29 * 7), "idx": idx}))
    assert decoded.symbols["N"] == 3 and decoded.arrays["idx"].tolist() == [2, 0, 0]


def test_budget_is_respected():
    calls = []

    def predicate(d):
        calls.append(1)
        return True

    Shrinker(LAYOUT, predicate, budget=10).shrink(start())
    assert len(calls) <= 10
