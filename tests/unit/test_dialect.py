"""DaCe's Python dialect run as plain Python: the reference of a program written with it."""
import numpy as np
import pytest

from harnessgen.core.errors import Unsupported
from harnessgen.targets.dialect import plain_function
from harnessgen.targets.reference import python_reference
from tests.conftest import PROGRAMS


def _load(name: str):
    from harnessgen.targets.loaders import load_module

    return getattr(load_module(PROGRAMS / f"{name}.py"), name)


def test_explicit_maps_tasklets_and_conflict_resolution_run_as_numpy():
    program = _load("dialect")
    reference = python_reference(program)
    A = np.arange(5, dtype=np.float64)
    out = reference.run({"A": A, "B": np.zeros(5), "S": np.zeros(1)}, {"N": 5})
    assert np.array_equal(out["B"], 2.0 * A + 1.0)
    assert out["S"][0] == A[0] + (2.0 * A + 1.0).sum()       # written by one tasklet, then summed into


def test_a_function_without_the_dialect_is_kept_as_it_is():
    program = _load("ratio")
    assert plain_function(program.f) is program.f


def test_a_map_without_ranges_says_what_it_cannot_read():
    def uses_a_bare_map(A):  # the shape plain_function refuses: parameters without _[...] ranges
        @dace.map  # noqa: F821
        def body(i):
            a << A[i]  # noqa: F841

    with pytest.raises(Unsupported, match="has no range"):
        plain_function(uses_a_bare_map)
