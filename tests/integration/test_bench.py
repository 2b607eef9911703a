"""What `make bench` compares must be comparable: the native loop runs the harness's inputs,
and the FuzzyFlow-style baseline computes what the harness computes. No time is asserted."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from harnessgen.harness.build import build
from harnessgen.harness.replay import execute
from harnessgen.inputs import seeds
from tests.conftest import layout_of, make_pair

REPO = Path(__file__).resolve().parents[2]


def _built(build_cache):
    pair = make_pair("elementwise_chain", "MapTiling")
    return build(pair, layout_of(pair), build_cache, afl=True)


def test_bench_mode_times_every_satisfiable_input_it_is_given(build_cache, tmp_path):
    harness = _built(build_cache)
    files = seeds.write(seeds.sample(harness.layout, 4, seed=3), tmp_path)
    proc = subprocess.run([str(harness.harness_replay), "--bench", "0.01", *map(str, files)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [Path(r["file"]).name for r in rows] == [f.name for f in files]
    for row in rows:
        assert row["status"] == 0 and row["bytes"] == Path(row["file"]).stat().st_size
        assert all(row[k] > 0 for k in ("bare_s", "lifecycle_s", "harness_s"))


def test_fuzzyflow_side_computes_what_the_harness_computes(build_cache, tmp_path):
    harness = _built(build_cache)
    _, data = seeds.sample(harness.layout, 3, seed=5)[1]   # the largest prime sizes, random values
    decoded = harness.layout.decode(data)
    decoded.to_npz(tmp_path / "in.npz")
    for side in ("pre", "post"):
        subprocess.run([sys.executable, str(REPO / "bench" / "fuzzyflow_side.py"), str(harness.dir), side,
                        str(tmp_path / "in.npz"), str(tmp_path / "out.npz")], check=True, timeout=120)
        expected = execute(harness.dir, decoded, side)
        with np.load(tmp_path / "out.npz") as got:
            assert sorted(got.files) == sorted(expected)
            for name in expected:
                np.testing.assert_array_equal(got[name], expected[name])
        # the run changed something: the comparison is not between two copies of the inputs
        assert any(not np.array_equal(expected[n], decoded.arrays[n]) for n in expected)
