"""The patch kept for DaCe's cutout.py (harnessgen/cutout/dace_patches/) applies to the DaCe 2
that runs the suite, and does what its BUG.md says: the installed cutout still fails on a
match inside a LoopRegion, the patched one cuts it out and the match applies there. It runs in
``make test-other-dace`` (DaCe 2.0); on DaCe 1.0.2, whose loops are state machines, there is
nothing to patch."""
import shutil
import subprocess
import sys
from pathlib import Path

import dace
import dace.sdfg.analysis.cutout as installed_cutout
import pytest

from tests.conftest import REPO

PATCHES = REPO / "harnessgen" / "cutout" / "dace_patches"
ON_DACE_1 = dace.__version__.startswith("1.")


def patched_copy(tmp: Path) -> Path:
    """The installed cutout.py, copied and patched (patch -p1, as in a DaCe checkout)."""
    target = tmp / "dace" / "sdfg" / "analysis" / "cutout.py"
    target.parent.mkdir(parents=True)
    shutil.copy(installed_cutout.__file__, target)
    proc = subprocess.run(["patch", "-p1", "--forward", "-i", str(PATCHES / "cutout-regions.patch")], cwd=tmp,
                          capture_output=True, text=True)
    assert proc.returncode == 0, f"the patch no longer applies to DaCe {dace.__version__}: {proc.stdout}"
    return target


def reproduce(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(PATCHES / "reproduce.py"), *args], cwd=tmp, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.skipif(ON_DACE_1, reason="DaCe 1.0.2 has no control-flow regions; make test-other-dace runs this")
def test_the_installed_cutout_fails_in_a_loop_and_the_patched_one_cuts_it_out(tmp_path):
    patched = patched_copy(tmp_path / "tree")
    before = reproduce(tmp_path)
    assert before.returncode == 1 and "'LoopRegion' object has no attribute 'parent'" in before.stdout, (
        "DaCe's own cutout no longer fails here: the patch may be upstream now\n" + before.stdout + before.stderr)
    after = reproduce(tmp_path, str(patched))
    assert after.returncode == 0, after.stdout + after.stderr
    assert "the translated match applies: True" in after.stdout and "validates" in after.stdout
