"""A cutout's pre builds wherever the program it was cut from builds: every instance of every
CPU built-in in the kernels, each pre compiled (``harnessgen instances --builds``). A pre
that fails where DaCe's own code for its program compiles is a shape harnessgen made (its
cutout or its stand-ins), and the command then exits 1."""
import json

from tests.conftest import BUILD_CACHE, run_cli


def test_every_kernel_cutouts_pre_builds_where_its_program_builds(tmp_path):
    proc = run_cli(["instances", "--program", "kernels", "--transformation", "all", "--params", "default",
                    "--builds", "--work-dir", str(BUILD_CACHE), "--json"], tmp_path, timeout=1200)
    rows = json.loads(proc.stdout) if proc.stdout.strip().startswith("[") else []
    assert rows, proc.stderr[-3000:]
    checked = [r for r in rows if "builds" in r]
    assert len(checked) >= 300, len(checked)        # every pair that could be made was compiled
    ours = [(r["id"], r["builds"]) for r in checked if not r["builds"]["pre"] and not r["builds"]["dace_made"]]
    assert not ours and proc.returncode == 0, ours
