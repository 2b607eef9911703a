"""``harnessgen ci`` on a pull request to a DaCe source tree: the base revision already has a
bug in StripMining (its tiles assumed to divide the range); the head touches StripMining and
plants the same mistake in MapTiling. Only MapTiling's bug is new: it fails the check, as JUnit
XML and Markdown say; StripMining's is listed as pre-existing."""
import shutil
import subprocess
from pathlib import Path
from xml.etree import ElementTree

import dace
import pytest

from tests.conftest import PROGRAMS, run_cli

STRIP = "dace/transformation/dataflow/strip_mining.py"
TILING = "dace/transformation/dataflow/tiling.py"
EXPANSION = "dace/transformation/dataflow/map_expansion.py"
EVENLY_STRIP = 'default=False, category="Applicability", desc="Tile size divides dimension range evenly?"'
EVENLY_TILING = 'default=False, category="Applicability", desc="Tile size divides dimension length evenly"'


def _edit(repo: Path, path: str, old: str, new: str) -> None:
    text = (repo / path).read_text()
    assert text.count(old) == 1, f"{path} no longer holds {old!r}"
    (repo / path).write_text(text.replace(old, new))


def _commit(repo: Path, message: str) -> None:
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=dev", "-c", "user.email=dev@example.org", "commit", "-qm",
                    message], check=True)


@pytest.fixture(scope="module")
def pull_request(tmp_path_factory):
    """A DaCe git checkout (the installed DaCe's sources) with a base and a head commit."""
    repo = tmp_path_factory.mktemp("dace-checkout")
    shutil.copytree(Path(dace.__file__).parent, repo / "dace", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(["git", "-c", "init.defaultBranch=main", "init", "-q", str(repo)], check=True)
    _edit(repo, STRIP, EVENLY_STRIP, EVENLY_STRIP.replace("default=False", "default=True"))   # at base already
    _commit(repo, "base: StripMining's tiles assumed to divide the range")
    subprocess.run(["git", "-C", str(repo), "checkout", "-qb", "pull-request"], check=True)
    _edit(repo, STRIP, "dimension range evenly?", "dimension range evenly (assumed)?")        # touched at head
    _edit(repo, TILING, EVENLY_TILING, EVENLY_TILING.replace("default=False", "default=True"))  # new at head
    _commit(repo, "head: MapTiling too")
    # the base moves on after the pull request branched: not the pull request's change
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "main"], check=True)
    _edit(repo, EXPANSION, '"""Implements the map-expansion pattern.', '"""Implements the map expansion pattern.')
    _commit(repo, "base moves on: MapExpansion's docstring")
    return repo


@pytest.mark.fuzz
def test_only_the_bug_the_pull_request_brings_fails_the_check(pull_request, tmp_path):
    out = tmp_path / "ci"
    proc = run_cli(["ci", "--dace", str(pull_request), "--base", "main", "--head", "pull-request", "--builtin", "",
                    "--program", f"{PROGRAMS / 'scaled.py'}:scaled", "--time", "2", "--out", str(out)], tmp_path)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = (out / "summary.md").read_text()
    assert "## harnessgen: 1 new bug(s)" in report, report
    new = report.split("### New bugs")[1].split("###")[0]
    assert "MapTiling" in new and "StripMining" not in new, report
    assert "StripMining" in report.split("### Pre-existing bugs")[1], report
    suite = ElementTree.parse(out / "junit.xml").getroot()
    failed = [c.get("name") for c in suite.iter("testcase") if c.find("failure") is not None]
    skipped = [c.get("name") for c in suite.iter("testcase") if c.find("skipped") is not None]
    assert failed == ["MapTiling on " + f"{PROGRAMS / 'scaled.py'}:scaled"], ElementTree.tostring(suite)
    assert skipped and all(name.startswith("StripMining") for name in skipped)
    assert suite.get("failures") == "1"
    # only what the pull request changed was judged (not what the base changed since)
    changed = {line.split("`")[1] for line in report.splitlines() if line.startswith("| `dace.")}
    assert changed == {"dace.transformation.dataflow.strip_mining:StripMining",
                       "dace.transformation.dataflow.tiling:MapTiling"}, changed
