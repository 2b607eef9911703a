"""The NumPy decoder: every byte string decodes, in-range values pass through unchanged."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from harnessgen.core import expr as ex
from harnessgen.inputs.layout import ContainerSlot, InputLayout, SymbolSlot

P = ex.parse


def sample_layout(nonfinite=False) -> InputLayout:
    symbols = [SymbolSlot("N", "int32", P(1), P(16)), SymbolSlot("M", "int64", P(1), P("N")),
               SymbolSlot("K", "int32", P("M - 1"), P("N"))]
    containers = [
        ContainerSlot("A", "float64", P("N * M"), (P("N"), P("M")), P(-1e6), P(1e6)),
        ContainerSlot("idx", "int32", P("M"), (P("M"),), P(0), P("N - 1")),
        ContainerSlot("f", "float32", P("N"), (P("N"),), P(150.0), P(350.0)),
        ContainerSlot("flags", "bool", P("K"), (P("K"),)),
        ContainerSlot("z", "complex128", P(2), (P(2),), P(-10.0), P(10.0)),
        ContainerSlot("raw", "int16", P("N"), (P("N"),)),
    ]
    return InputLayout(symbols, containers, float_tiny=1e-9, allow_nonfinite=nonfinite)


LAYOUT = sample_layout()


def check_ranges(d):
    n, m, k = d.symbols["N"], d.symbols["M"], d.symbols["K"]
    assert 1 <= n <= 16 and 1 <= m <= n and m - 1 <= k <= n
    assert d.arrays["A"].shape == (n * m,) and np.all(np.abs(d.arrays["A"]) <= 1e6)
    assert np.all(np.isfinite(d.arrays["A"]))
    small = d.arrays["A"][d.arrays["A"] != 0]
    assert np.all(np.abs(small) >= 1e-9)
    assert np.all((d.arrays["idx"] >= 0) & (d.arrays["idx"] <= n - 1))
    assert np.all((d.arrays["f"] >= 150) & (d.arrays["f"] <= 350))
    assert d.arrays["flags"].dtype == bool and d.arrays["flags"].size == k
    assert np.all(np.abs(d.arrays["z"].view(np.float64)) <= 10)


@settings(max_examples=400)
@given(st.binary(min_size=0, max_size=3000))
def test_every_byte_string_decodes_into_range(data):
    d = LAYOUT.decode(data)
    if d is not None:
        check_ranges(d)
        assert d.consumed <= len(data)


@pytest.mark.parametrize("length", [0, 1, 7, 100, 1 << 20])
def test_any_length_including_one_megabyte(length):
    data = np.random.default_rng(length).integers(0, 256, size=length, dtype=np.uint8).tobytes()
    d = LAYOUT.decode(data)
    assert d is not None
    check_ranges(d)


def test_empty_input_gives_smallest_symbols_and_zero_data():
    d = LAYOUT.decode(b"")
    assert d.symbols == {"N": 1, "M": 1, "K": 0}
    assert not d.arrays["A"].any() and d.arrays["f"].tolist() == [150.0]


def test_unsatisfiable_symbol_range_is_reported_not_guessed():
    layout = InputLayout([SymbolSlot("N", "int32", P(1), P(4)), SymbolSlot("M", "int32", P("N + 1"), P(3))],
                         [], 1e-9, False)
    four = np.array([4, 0], dtype="<i4").tobytes()
    assert layout.decode(four) is None
    assert layout.decode(np.array([1, 2], dtype="<i4").tobytes()).symbols == {"N": 1, "M": 2}


def test_decoding_is_deterministic():
    data = bytes(range(256)) * 8
    a, b = LAYOUT.decode(data), LAYOUT.decode(data)
    assert a.symbols == b.symbols
    for name in a.arrays:
        assert a.arrays[name].tobytes() == b.arrays[name].tobytes()


@st.composite
def in_range_values(draw):
    n = draw(st.integers(1, 16))
    m = draw(st.integers(1, n))
    k = draw(st.integers(m - 1, n))
    finite = st.floats(-1e6, 1e6, allow_nan=False).filter(lambda v: v == 0 or abs(v) >= 1e-9)
    arrays = {
        "A": np.array(draw(st.lists(finite, min_size=n * m, max_size=n * m))),
        "idx": np.array(draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m)), dtype=np.int32),
        "f": np.array(draw(st.lists(st.floats(150, 350, width=32), min_size=n, max_size=n)), dtype=np.float32),
        "flags": np.array(draw(st.lists(st.booleans(), min_size=k, max_size=k)), dtype=bool),
        "z": np.array(draw(st.lists(st.complex_numbers(max_magnitude=7, allow_nan=False, allow_infinity=False)
                                    .filter(lambda c: all(v == 0 or abs(v) >= 1e-9 for v in (c.real, c.imag))),
                                    min_size=2, max_size=2)), dtype=np.complex128),
        "raw": np.array(draw(st.lists(st.integers(-2**15, 2**15 - 1), min_size=n, max_size=n)), dtype=np.int16),
    }
    return {"N": n, "M": m, "K": k}, arrays


@settings(max_examples=200)
@given(in_range_values())
def test_encode_then_decode_is_the_identity_inside_the_ranges(values):
    symbols, arrays = values
    d = LAYOUT.decode(LAYOUT.encode(symbols, arrays))
    assert d.symbols == symbols
    for name, expected in arrays.items():
        assert d.arrays[name].tobytes() == expected.astype(d.arrays[name].dtype).tobytes(), name


def test_nonfinite_values_only_when_allowed():
    nan_inf = np.array([np.nan, np.inf, -np.inf, 5.0])
    symbols = np.array([4, 1, 0], dtype="<i4").tobytes()[:4] + np.array([1], dtype="<i8").tobytes() \
        + np.array([0], dtype="<i4").tobytes()
    data = symbols + bytes(len(LAYOUT.containers)) + nan_inf.tobytes()      # aligned buffers
    strict = LAYOUT.decode(data).arrays["A"]
    assert np.all(np.isfinite(strict)) and strict[3] == 5.0
    loose = sample_layout(nonfinite=True).decode(data).arrays["A"]
    assert np.isnan(loose[0]) and loose[1] == np.inf and loose[2] == -np.inf and loose[3] == 5.0


def test_tiny_values_flush_to_signed_zero_and_out_of_range_values_fold():
    symbols = np.array([3], dtype="<i4").tobytes() + np.array([1], dtype="<i8").tobytes() \
        + np.array([0], dtype="<i4").tobytes()
    offsets = bytes(len(LAYOUT.containers))
    a = LAYOUT.decode(symbols + offsets + np.array([-1e-12, 3e6, 1e-9], dtype="<f8").tobytes()).arrays["A"]
    assert a[0] == 0 and np.signbit(a[0])
    m = (np.array([3e6]).view(np.uint64)[0] & np.uint64(2**52 - 1)) / 2.0**52    # 3e6's mantissa as a fraction
    assert a[1] == -1e6 * (1 - m) + 1e6 * m and -1e6 <= a[1] <= 1e6
    assert a[2] == 1e-9


def test_huge_values_fold_by_their_mantissa_so_neighbours_stay_apart():
    symbols = np.array([3], dtype="<i4").tobytes() + np.array([1], dtype="<i8").tobytes() \
        + np.array([0], dtype="<i4").tobytes()
    huge = np.array([1e300, np.nextafter(1e300, np.inf), -1e300], dtype="<f8")
    a = LAYOUT.decode(symbols + bytes(len(LAYOUT.containers)) + huge.tobytes()).arrays["A"]
    assert np.all((a >= -1e6) & (a <= 1e6))
    assert a[0] != a[1] and a[0] == a[2]          # the sign does not matter, the mantissa does


def test_offsets_are_multiples_of_the_element_size_below_64_bytes():
    symbols = np.array([2], dtype="<i4").tobytes() + np.array([1], dtype="<i8").tobytes() \
        + np.array([0], dtype="<i4").tobytes()
    # in layout order: A f64 (8 choices), idx i32 (16), f f32 (16), flags bool (64), z c128 (4), raw i16 (32)
    d = LAYOUT.decode(symbols + bytes([9, 17, 63, 255, 33, 7]))
    assert d.offsets == {"A": 8, "idx": 4, "f": 60, "flags": 63, "z": 16, "raw": 14}
    for name, offset in d.offsets.items():
        slot = LAYOUT.container(name)
        assert offset % slot.itemsize == 0 and 0 <= offset < 64
    again = LAYOUT.decode(LAYOUT.encode(d.symbols, d.arrays, d.offsets))
    assert again.offsets == d.offsets
    assert LAYOUT.decode(symbols).offsets == dict.fromkeys(d.offsets, 0)        # zero bytes: aligned


def test_layout_json_round_trip():
    again = InputLayout.from_json(LAYOUT.to_json())
    data = bytes(range(200)) * 3
    a, b = LAYOUT.decode(data), again.decode(data)
    assert a.symbols == b.symbols and all(a.arrays[k].tobytes() == b.arrays[k].tobytes() for k in a.arrays)


def test_a_strided_view_gets_a_buffer_as_far_as_its_strides_reach():
    """A nested SDFG's slice of a row keeps the strides of the array it slices: ``(N, C)`` with
    strides ``(H*W*C, 1)`` reaches ``(N-1)*H*W*C + C`` elements, not ``N*C`` (resnet's conv2d
    reduction wrote that far, in pre and post alike, past a buffer of its shape's size)."""
    import dace

    from harnessgen.inputs.layout import allocated_count

    N, C, H, W = (dace.symbol(s) for s in "NCHW")
    strided = allocated_count(dace.data.Array(dace.float32, [N, C], strides=[C * H * W, 1]))
    assert ex.evaluate(strided, {"N": 3, "C": 2, "H": 4, "W": 5}) == 2 * 40 + 2
    assert str(allocated_count(dace.data.Array(dace.float32, [N, C]))) == "(C * N)"
    column_major = allocated_count(dace.data.Array(dace.float32, [N, C], strides=[1, N]))
    assert ex.evaluate(column_major, {"N": 3, "C": 2}) == 6
    assert ex.evaluate(allocated_count(dace.data.Array(dace.float32, [5, 3], strides=[10, 1])), {}) == 43
