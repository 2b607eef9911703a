"""A reference runs on a program's containers and symbols; a @dace.program runs as plain Python."""
import numpy as np
import pytest

from harnessgen.core.errors import Unsupported
from harnessgen.targets import resolve
from harnessgen.targets.reference import Reference


def test_a_reference_gets_its_containers_symbols_and_scalars_by_name():
    def scale(alpha, X, Y, N):
        Y[:N] = alpha * X[:N]

    arrays = {"alpha": np.array([2.0]), "X": np.arange(4.0), "Y": np.zeros(4)}
    out = Reference("scale", scale).run(arrays, {"N": 3}, scalars={"alpha"})
    assert out["Y"].tolist() == [0.0, 2.0, 4.0, 0.0]
    assert arrays["Y"].tolist() == [0.0] * 4                         # the caller's arrays stay as they were


def test_a_reference_that_cannot_run_is_unsupported_not_a_verdict():
    def broken(X):
        raise ValueError("no")

    with pytest.raises(Unsupported, match="did not run"):
        Reference("broken", broken).run({"X": np.zeros(2)}, {})
    with pytest.raises(Unsupported, match="no container or symbol"):
        Reference("other", lambda Z: None).run({"X": np.zeros(2)}, {})


def test_a_dace_program_runs_as_plain_python_with_its_sizes_bound():
    target, _ = resolve("tests/programs/gated.py:gated")
    reference = target.programs["gated"].reference
    assert reference is not None
    arrays = {"A": np.arange(3.0), "G": np.array([1.0]), "B": np.zeros(3)}
    out = reference.run(arrays, {"N": 3})
    assert out["B"].tolist() == [0.0 + 2.0, 2.0 + 2.0, 4.0 + 2.0]
