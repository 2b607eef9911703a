"""An instance's inputs carried from its cutout's layout into the whole program's (the audit)."""
import numpy as np

from harnessgen.core import expr as ex
from harnessgen.inputs import seeds
from harnessgen.inputs.layout import ContainerSlot, InputLayout, SymbolSlot

P = ex.parse


def layout(symbols, containers) -> InputLayout:
    return InputLayout(symbols, containers, float_tiny=1e-9, allow_nonfinite=False)


CUTOUT = layout([SymbolSlot("N", "int64", P(1), P(64))],
                [ContainerSlot("A", "float64", P("N"), (P("N"),), P(-1e6), P(1e6)),
                 ContainerSlot("tmp", "float64", P(4), (P(4),), P(-1e6), P(1e6))])
PROGRAM = layout([SymbolSlot("N", "int64", P(1), P(6)), SymbolSlot("K", "int64", P(1), P(6))],
                 [ContainerSlot("A", "float64", P("N"), (P("N"),), P(-1e6), P(1e6)),
                  ContainerSlot("B", "float64", P("K"), (P("K"),), P(-1e6), P(1e6)),
                  ContainerSlot("tmp", "float64", P("N * K"), (P("N"), P("K")), P(-1e6), P(1e6))])


def test_same_symbols_and_same_sized_containers_carry_over():
    a = np.arange(1, 6, dtype=np.float64)
    source = CUTOUT.encode({"N": 5}, {"A": a, "tmp": np.full(4, 7.0)})
    [(name, data)] = seeds.translated(CUTOUT, [("crash-1", source)], PROGRAM, seed=3)
    decoded = PROGRAM.decode(data)
    assert name == "hg-from-crash-1" and decoded.symbols["N"] == 5 and 1 <= decoded.symbols["K"] <= 6
    assert np.array_equal(decoded.arrays["A"], a)
    # a container of another size is drawn afresh, not truncated or padded
    assert decoded.arrays["tmp"].size == 5 * decoded.symbols["K"]


def test_symbol_values_are_clamped_into_the_programs_range_and_the_rest_is_deterministic():
    source = CUTOUT.encode({"N": 40}, {"A": np.ones(40), "tmp": np.zeros(4)})
    first = seeds.translated(CUTOUT, [("s", source)], PROGRAM, seed=1)
    assert PROGRAM.decode(first[0][1]).symbols["N"] == 6
    assert first == seeds.translated(CUTOUT, [("s", source)], PROGRAM, seed=1)
