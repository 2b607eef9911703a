"""``harnessgen ci`` with its defaults finds the programs for a changed class in the checkout's own
tests, as a DaCe maintainer runs it: no ``--program``.

The base holds a fix to ``MapTiling`` (tiles that do not divide the range are handled) and the
test that came with it. A pull request that reverts the fix removes that test too; the check
takes it from the base, runs it with the head's DaCe up to the moment DaCe applies MapTiling,
and judges MapTiling on the program the test built there: the bug the revert brings back is
found, new, with a reproducer. A pull request that only renames a local of MapTiling passes;
one that changes a class no test applies says that class was not exercised."""
import json
import shutil
import subprocess
from pathlib import Path
from xml.etree import ElementTree

import dace
import pytest

from tests.conftest import run_cli

TILING = "dace/transformation/dataflow/tiling.py"
EXPANSION = "dace/transformation/dataflow/map_expansion.py"
EVENLY = 'default=False, category="Applicability", desc="Tile size divides dimension length evenly"'
TEST_FILE = "tests/transformations/map_tiling_ragged_test.py"
TEST = '''import numpy as np

import dace
from dace.transformation.dataflow import MapTiling


def _doubled():
    sdfg = dace.SDFG("doubled")
    sdfg.add_array("A", [10], dace.float64)
    sdfg.add_array("B", [10], dace.float64)
    state = sdfg.add_state()
    state.add_mapped_tasklet("double", {"i": "0:10"}, {"a": dace.Memlet("A[i]")}, "b = 2 * a",
                             {"b": dace.Memlet("B[i]")}, external_edges=True)
    return sdfg


def test_tiles_that_do_not_divide_the_range():
    sdfg = _doubled()
    assert sdfg.apply_transformations(MapTiling, options={"tile_sizes": (4,)}) == 1
    A, B = np.random.rand(10), np.zeros(10)
    sdfg(A=A, B=B)
    assert np.allclose(B, 2 * A)
'''


def _edit(repo: Path, path: str, old: str, new: str) -> None:
    text = (repo / path).read_text()
    assert text.count(old) >= 1, f"{path} no longer holds {old!r}"
    (repo / path).write_text(text.replace(old, new))


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=dev", "-c", "user.email=dev@example.org", *args],
                   check=True, capture_output=True)


def _commit(repo: Path, message: str) -> None:
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", message)


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    """A DaCe checkout (the installed DaCe's sources): the fix with its test at ``main``, and
    three pull requests on it."""
    repo = tmp_path_factory.mktemp("dace-checkout")
    shutil.copytree(Path(dace.__file__).parent, repo / "dace", ignore=shutil.ignore_patterns("__pycache__"))
    (repo / TEST_FILE).parent.mkdir(parents=True)
    (repo / TEST_FILE).write_text(TEST)
    subprocess.run(["git", "-c", "init.defaultBranch=main", "init", "-q", str(repo)], check=True)
    _commit(repo, "MapTiling: ragged tiles (the fix, with its test)")
    _git(repo, "checkout", "-qb", "revert")
    _edit(repo, TILING, EVENLY, EVENLY.replace("default=False", "default=True"))
    (repo / TEST_FILE).unlink()
    _commit(repo, "Revert 'MapTiling: ragged tiles'")
    _git(repo, "checkout", "-q", "main")
    _git(repo, "checkout", "-qb", "harmless")
    _edit(repo, TILING, "removed_maps", "maps_removed")
    _commit(repo, "MapTiling: a local renamed")
    _git(repo, "checkout", "-q", "main")
    _git(repo, "checkout", "-qb", "untested")
    text = (repo / EXPANSION).read_text()
    (repo / EXPANSION).write_text(text + "\n\nclass NobodysExpansion(MapExpansion):\n    \"\"\"Applied by no test.\"\"\"\n"
                                  "    pass\n")
    _commit(repo, "a transformation no test applies")
    _git(repo, "checkout", "-q", "main")
    return repo


def _check(repo: Path, head: str, tmp_path: Path, *extra: str):
    out = tmp_path / "ci"
    proc = run_cli(["ci", "--dace", str(repo), "--base", "main", "--head", head, "--time", "2", "--out", str(out),
                    *extra], tmp_path)
    return proc, out


@pytest.mark.fuzz
def test_a_reverted_fix_is_caught_on_the_program_its_removed_test_built(checkout, tmp_path):
    proc, out = _check(checkout, "revert", tmp_path)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads((out / "ci.json").read_text())
    assert [c["name"] for c in result["changed"]] == ["MapTiling"]
    [run] = result["runs"]                      # the test's program was enough: no other source ran
    assert run["source"] == "tests" and run["judged"].get("MapTiling", 0) >= 1, run
    [bug] = [b for b in result["bugs"] if b["new"]]
    assert bug["transformation"] == "MapTiling" and bug["kind"] in ("OOB_WRITE", "MISMATCH"), bug
    assert Path(bug["reproducer"], "repro.py").is_file()
    index = [json.loads(line) for line in Path(run["program"], "index.jsonl").read_text().splitlines()]
    assert [(e["test"], e["source"].split()[0]) for e in index] == [
        (f"{TEST_FILE}::test_tiles_that_do_not_divide_the_range", "base")]


@pytest.mark.fuzz
def test_a_harmless_change_passes(checkout, tmp_path):
    proc, out = _check(checkout, "harmless", tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads((out / "ci.json").read_text())
    assert result["runs"] and result["runs"][0]["source"] == "tests" and not result["bugs"], result


def test_a_class_no_program_exercises_is_said_so(checkout, tmp_path):
    proc, out = _check(checkout, "untested", tmp_path, "--exercise", "tests")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads((out / "ci.json").read_text())
    assert [n["name"] for n in result["not_exercised"]] == ["NobodysExpansion"], result
    assert "NobodysExpansion" in (out / "summary.md").read_text().split("### Not exercised")[1]
    suite = ElementTree.parse(out / "junit.xml").getroot()
    [case] = [c for c in suite.iter("testcase") if c.get("name") == "NobodysExpansion: not exercised"]
    assert case.find("skipped") is not None and suite.get("failures") == "0"
