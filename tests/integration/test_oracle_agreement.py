"""The C++ oracle in the harness and the NumPy oracle give the same verdict."""
import itertools
import os
import subprocess

import numpy as np
import pytest

from harnessgen.core.protocol import Exit, HarnessEnv
from harnessgen.core.runtime import Tolerance, differing
from harnessgen.cutout.extract import POST_NAME, PRE_NAME, CutoutPair
from harnessgen.harness.build import build
from harnessgen.inputs.constraints import derive
from harnessgen.inputs.layout import build_layout
from harnessgen.plan.instances import Instance
from harnessgen.targets.loaders import load_python_program
from tests.conftest import PROGRAMS

POOL = [0.0, -0.0, 1.0, 1.0 + 1e-6, 1.0 + 2e-5, -1.0, 1e-8, 2.5e-8, 1e6, 1e6 * (1 + 1e-5), np.nan, np.inf,
        -np.inf, 1e300, 5e-324, 0.1 + 0.2, 0.3]


@pytest.fixture(scope="module")
def oracle_build(build_cache):
    return _oracle_build(build_cache, "copy_x", "copy_z")


def _oracle_build(build_cache, pre_name, post_name):
    pre = load_python_program(PROGRAMS / "oracle_pair.py", pre_name).programs[pre_name].build()
    post = load_python_program(PROGRAMS / "oracle_pair.py", post_name).programs[post_name].build()
    pre.name, post.name = PRE_NAME, POST_NAME
    names = ["X", "Y", "Z"]
    inst = Instance("oracle-pair", "", "copy", "swap", "", {})
    pair = CutoutPair(inst, pre, post, names, names, pre, {})
    layout = build_layout(pair, derive(pair, allow_nonfinite=True, float_tiny=0.0, float_bound=1e308))
    return layout, build(pair, layout, build_cache, afl=False)


@pytest.fixture(scope="module")
def oracle_build32(build_cache):
    return _oracle_build(build_cache, "copy_x32", "copy_z32")


def verdict(harness, path, env):
    proc = subprocess.run([str(harness.harness_replay), str(path)], capture_output=True,
                          env={**os.environ, **env})
    assert proc.returncode in (0, -6), proc.stderr
    return proc.returncode == -6


@pytest.mark.parametrize("tol", [Tolerance(), Tolerance(exact=True), Tolerance(rtol=1e-3, atol=0.0)])
def test_harness_and_numpy_agree_on_every_pair(oracle_build, tmp_path, tol):
    layout, harness = oracle_build
    env = HarnessEnv(tol).variables()
    for n, (x, z) in enumerate(itertools.product(POOL, POOL)):
        X, Z = np.array([x]), np.array([z])
        data = layout.encode({"N": 1}, {"X": X, "Y": np.zeros(1), "Z": Z})
        decoded = layout.decode(data)
        assert decoded.arrays["X"].tobytes() == X.tobytes() and decoded.arrays["Z"].tobytes() == Z.tobytes()
        path = tmp_path / f"{n}.bin"
        path.write_bytes(data)
        expected = bool(differing(X, Z, tol).any())
        assert verdict(harness, path, env) == expected, (x, z, tol)


def test_the_built_harness_exits_with_the_protocols_statuses(oracle_build):
    _, harness = oracle_build
    source = (harness.dir / "harness.cpp").read_text()
    assert "enum HgStatus { " + ", ".join(f"HG_{e.name} = {int(e)}" for e in Exit) + " };" in source


POOL32 = [1.0, 1.0 + 5e-5, 1.0 + 2e-4, -1.0, 0.0, 5e-7, 2e-6, 3e4, 3e4 * (1 + 4.5e-5), np.nan, np.inf]


@pytest.mark.parametrize("tol", [Tolerance(), Tolerance(rtol32=1e-5, atol32=0.0)])
def test_harness_and_numpy_agree_on_float32_pairs(oracle_build32, tmp_path, tol):
    layout, harness = oracle_build32
    env = HarnessEnv(tol).variables()
    agreed = set()
    for n, (x, z) in enumerate(itertools.product(POOL32, POOL32)):
        X, Z = np.array([x], dtype=np.float32), np.array([z], dtype=np.float32)
        path = tmp_path / f"{n}.bin"
        path.write_bytes(layout.encode({"N": 1}, {"X": X, "Y": np.zeros(1, np.float32), "Z": Z}))
        expected = bool(differing(X, Z, tol).any())
        assert verdict(harness, path, env) == expected, (x, z, tol)
        agreed.add(expected)
    assert agreed == {True, False}
