"""A program read from the program cache plans exactly what the program made afresh plans: the
same instances, with the same ids, control-flow graph ids and matches. An instance's id hashes
its match, so a cached program that numbers its loop bodies differently (DaCe's main branch
reads an SDFG's JSON without numbering its control-flow graphs) would plan other instances, and
a warm run would judge other places than a cold one. Runs on each DaCe the suite runs on."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# matches inside loop bodies (jacobi2d's maps in its time loop, clip_small's branch in a loop), where a
# control-flow graph's id is part of a match
CASES = [("kernels:jacobi2d", "LoopUnroll,LoopToMap,MapTiling,MapFusion"),
         ("kernels:clip_small", "LoopUnroll,LoopToMap,MapTiling,StateFusion,MapExpansion")]


def _plan(program: str, transformations: str, cache: Path, tmp_path: Path):
    env = {**os.environ, "HARNESSGEN_PROGRAM_CACHE": str(cache), "HARNESSGEN_SHIPPED_PARSES": "0"}
    proc = subprocess.run([sys.executable, "-m", "harnessgen", "instances", "--program", program,
                           "--transformation", transformations, "--params", "default", "--json",
                           "--work-dir", str(tmp_path / "work")], capture_output=True, text=True, env=env,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


@pytest.mark.parametrize("program,transformations", CASES)
def test_a_cached_program_plans_what_a_fresh_one_plans(program, transformations, tmp_path):
    cache = tmp_path / "programs"
    fresh = _plan(program, transformations, cache, tmp_path)
    assert fresh, "no instance: nothing compared"
    assert _plan(program, transformations, cache, tmp_path) == fresh          # read through its pickle
    pickles = sorted(cache.rglob("*.pickle"))
    assert pickles, "the program was not cached"
    for pickled in pickles:
        pickled.unlink()
    assert _plan(program, transformations, cache, tmp_path) == fresh          # read from its JSON
