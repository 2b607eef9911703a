"""Every kernel of the built-in suite computes what its NumPy reference says, built by our
own build stage and run through cffi on boundary-aware inputs."""
import inspect

import dace
import numpy as np
import pytest

from harnessgen.cutout.extract import whole_program_pair
from harnessgen.harness.build import build
from harnessgen.harness.replay import execute
from harnessgen.inputs import seeds
from harnessgen.targets.kernels import PROGRAM_NAMES, REFERENCES
from tests.conftest import layout_of, program_sdfg


@pytest.mark.parametrize("name", PROGRAM_NAMES)
def test_kernel_matches_reference(build_cache, name):
    pair = whole_program_pair(program_sdfg(name), f"kernel-{name}")
    layout = layout_of(pair)
    harness = build(pair, layout, build_cache, afl=False)
    reference = REFERENCES[name]
    params = inspect.signature(reference).parameters
    checked = 0
    for _, data in seeds.sample(layout, count=8, seed=11):
        decoded = layout.decode(data)
        out = execute(harness.dir, decoded, "pre")
        expected = {}
        for slot in layout.containers:
            shape = layout.shape(slot.name, decoded.symbols)
            expected[slot.name] = decoded.arrays[slot.name].reshape(shape).copy()
        args = {}
        for p in params:
            if p in decoded.symbols:
                args[p] = decoded.symbols[p]
            elif isinstance(program_sdfg(name).arrays[p], dace.data.Scalar):
                args[p] = expected[p].reshape(-1)[0]     # scalars travel as 1-element buffers
            else:
                args[p] = expected[p]
        reference(**args)
        for slot in layout.containers:
            got = out[slot.name].reshape(expected[slot.name].shape)
            want = expected[slot.name]
            scale = max(1.0, float(np.nanmax(np.abs(np.where(np.isfinite(want), want, 0)))) if want.size else 1.0)
            assert np.allclose(got, want, rtol=1e-9, atol=1e-9 * scale, equal_nan=True), \
                f"{name}: {slot.name} differs for symbols {decoded.symbols}"
        checked += 1
    assert checked >= 6
