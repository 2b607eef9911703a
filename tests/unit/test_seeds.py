"""Boundary-aware seeds: deterministic, and each decodes to exactly the values it encodes."""
import numpy as np

from harnessgen.core import expr as ex
from harnessgen.inputs import seeds
from harnessgen.inputs.layout import ContainerSlot, InputLayout, SymbolSlot
from tests.unit.test_layout import LAYOUT


def test_symbol_candidates_cover_boundaries_primes_and_tile_widths():
    cands = seeds.symbol_candidates(1, 40)
    assert {1, 2, 39, 40} <= set(cands)
    assert {3, 5, 7, 11, 13, 37} <= set(cands)                 # primes
    assert {7, 8, 9, 15, 16, 17, 31, 32, 33} <= set(cands)     # tile / vector widths +-1
    assert cands == sorted(set(cands)) and seeds.symbol_candidates(5, 4) == []


def test_seeds_are_deterministic_and_start_smallest_largest_prime_and_largest():
    first, again = seeds.sample(LAYOUT, 12, seed=3), seeds.sample(LAYOUT, 12, seed=3)
    assert first == again
    assert seeds.sample(LAYOUT, 12, seed=4) != first
    smallest, prime, largest = (LAYOUT.decode(first[i][1]) for i in range(3))
    assert smallest.symbols["N"] == 1 and largest.symbols["N"] == 16
    # N in [1, 16], M in [1, N], K in [M - 1, N]: the largest prime of each range
    assert prime.symbols == {"N": 13, "M": 13, "K": 13}


def test_every_seed_decodes_to_itself():
    for name, data in seeds.sample(LAYOUT, 16, seed=0):
        decoded = LAYOUT.decode(data)
        assert decoded is not None, name
        assert decoded.consumed == len(data), name          # nothing padded, nothing left over
        assert LAYOUT.encode(decoded.symbols, decoded.arrays, decoded.offsets) == data, name


def test_every_other_seed_is_misaligned_by_one_element():
    decoded = [LAYOUT.decode(d) for _, d in seeds.sample(LAYOUT, 4, seed=0)]
    assert all(v == 0 for v in decoded[0].offsets.values())
    assert decoded[1].offsets == {c.name: c.itemsize for c in LAYOUT.containers}


def test_extremes_pattern_reaches_the_float_bound():
    extremes = [d for n, d in seeds.sample(LAYOUT, 16, seed=0) if n.endswith("extremes")]
    values = np.concatenate([LAYOUT.decode(d).arrays["A"] for d in extremes])
    assert values.max() == 1e6 and values.min() == -1e6


def test_random_mode_ignores_the_layout():
    assert seeds.random_inputs(4, seed=1) == seeds.random_inputs(4, seed=1)
    assert all(len(d) == 512 for _, d in seeds.random_inputs(4, seed=1))


def test_a_symbol_of_a_whole_type_range_gets_its_largest_prime_at_once():
    # not a size: its range is the type's; primes are tested one candidate at a time
    P = ex.parse
    layout = InputLayout([SymbolSlot("S", "int32", P(1), P(2**31 - 1))],
                         [ContainerSlot("A", "float64", P(1), (P(1),), P(-1.0), P(1.0))], float_tiny=1e-9,
                         allow_nonfinite=False)
    prime, largest = (layout.decode(d) for _, d in seeds.sample(layout, 3, seed=0)[1:3])
    assert prime.symbols["S"] == 2**31 - 1 and largest.symbols["S"] == 2**31 - 1   # M31 is prime


def test_a_layout_no_input_satisfies_says_which_symbol_has_no_value():
    import dataclasses

    assert seeds.unsatisfiable(LAYOUT) is None
    # a loop variable of a loop that never runs (range(2, 2)): its cut-out body is dead code
    dead = SymbolSlot("i1", "int64", ex.parse("2"), ex.parse("1"))
    layout = dataclasses.replace(LAYOUT, symbols=tuple(LAYOUT.symbols) + (dead,))
    assert seeds.sample(layout, 12) == []
    assert seeds.unsatisfiable(layout).startswith("i1 has no value in [2, 1]")
