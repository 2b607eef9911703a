"""The NumPy oracle: |post - pre| <= atol + rtol |pre|, NaN equal to NaN, --exact bitwise."""
import numpy as np

from harnessgen.core.runtime import Tolerance, compare, differing

DEFAULT = Tolerance()
EXACT = Tolerance(exact=True)


def test_nan_equals_nan_and_equal_infinities_are_equal():
    pre = np.array([np.nan, np.inf, -np.inf, 1.0])
    assert not differing(pre, pre.copy(), DEFAULT).any()


def test_inf_against_finite_differs():
    assert differing(np.array([np.inf]), np.array([1e308]), DEFAULT).all()


def test_tolerance_is_relative_to_pre():
    pre = np.array([1000.0, 0.0])
    post = np.array([1000.0 + 0.9e-2, 0.9e-8])     # inside rtol*|pre| and atol
    assert not differing(pre, post, DEFAULT).any()
    post = np.array([1000.0 + 1.2e-2, 1.2e-8])     # just outside
    assert differing(pre, post, DEFAULT).all()


def test_exact_compares_bits():
    pre = np.array([0.1 + 0.2, 0.0])
    post = np.array([0.3, -0.0])
    assert differing(pre, post, EXACT).all()
    assert not differing(pre, post, DEFAULT).any()


def test_integers_compare_exactly_and_report_first_index():
    pre = np.array([1, 2, 3, 4], dtype=np.int32)
    post = np.array([1, 2, 4, 5], dtype=np.int32)
    diff = compare("X", pre, post, DEFAULT)
    assert (diff.index, diff.differing, diff.pre, diff.post) == (2, 2, 3.0, 4.0)


def test_complex_values_compare_by_parts():
    pre = np.array([1 + 1j, 2 + 2j])
    post = np.array([1 + 1j, 2 + 3j])
    diff = compare("C", pre, post, DEFAULT)
    assert diff.index == 3 and diff.differing == 1     # imaginary part of element 1


def test_float32_compared_in_double():
    pre = np.array([1.0], dtype=np.float32)
    post = np.array([np.nextafter(np.float32(1.0), np.float32(2.0))], dtype=np.float32)
    assert not differing(pre, post, DEFAULT).any()
    assert differing(pre, post, EXACT).all()


def test_largest_difference_is_located():
    pre = np.array([1.0, 2.0, 3.0, 4.0])
    post = np.array([1.0, 2.5, 3.0, 9.0])
    diff = compare("X", pre, post, DEFAULT)
    assert (diff.index, diff.max_index, diff.max_abs_diff) == (1, 3, 5.0)


def test_float32_values_are_compared_at_single_precisions_floor():
    """Two correct codes of one float32 sum round differently (a reordered or contracted
    operation): 4.5e-5 apart is rounding there, not in float64; 1e-3 apart is a difference."""
    pre, post = np.array([29266.309], dtype=np.float32), np.array([29265.004], dtype=np.float32)
    assert not differing(pre, post, DEFAULT).any()
    assert not differing(pre.astype(np.complex64), post.astype(np.complex64), DEFAULT).any()
    assert differing(pre.astype(np.float64), post.astype(np.float64), DEFAULT).all()
    assert differing(pre, np.array([29237.0], dtype=np.float32), DEFAULT).all()
    assert differing(pre, post, Tolerance(rtol32=1e-5)).all()       # the floor is the tolerance's own
    assert not differing(pre, post, Tolerance(rtol=1e-3, rtol32=1e-5)).any()   # a looser rtol still wins
