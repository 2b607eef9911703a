"""What ``harnessgen ci`` makes of a DaCe revision before judging anything: the requirements it
declares (DaCe's ``setup.py`` joins literal lists with names), which of them this environment
lacks, and a revision that cannot build a trivial program (its submodules missing) stopping
the check with what to do, never passing it."""
import shutil
import subprocess
import sys
from pathlib import Path

import dace

from harnessgen.ci import changed_classes
from harnessgen.ci.revision import _install_requires, missing_requirements
from tests.conftest import run_cli

SETUP_PY = '''
from setuptools import setup
cmake_requires = ['scikit-build', 'cmake']
setup(name='dace', install_requires=[
    'numpy', 'networkx >= 2.5', 'aenum >= 3.1', 'dataclasses; python_version < "3.7"',
] + cmake_requires)
'''


def test_literal_lists_joined_with_names_are_read():
    assert _install_requires(SETUP_PY) == ['numpy', 'networkx >= 2.5', 'aenum >= 3.1',
                                           'dataclasses; python_version < "3.7"', 'scikit-build', 'cmake']


def test_only_what_the_environment_does_not_satisfy_is_missing():
    wanted = ["numpy", "numpy < 1", "harnessgen-no-such-package >= 1", 'dataclasses; python_version < "3.7"']
    assert missing_requirements(Path(sys.executable), wanted) == ["numpy < 1", "harnessgen-no-such-package >= 1"]


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=dev", "-c", "user.email=dev@example.org", *args],
                   check=True, capture_output=True)


def test_a_docstring_is_not_a_change_but_a_renamed_local_is(tmp_path):
    repo = tmp_path / "repo"
    (repo / "dace").mkdir(parents=True)
    code = 'class T:\n    """Tiles."""\n    def apply(self):\n        count = 1\n        return count\n'
    (repo / "dace" / "t.py").write_text(code)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    (repo / "dace" / "t.py").write_text(code.replace("Tiles.", "Tiles a map."))
    _git(repo, "commit", "-qam", "docstring")
    assert changed_classes(repo, "HEAD~1", "HEAD") == []
    (repo / "dace" / "t.py").write_text(code.replace("count", "n"))
    _git(repo, "commit", "-qam", "local")
    assert [c.name for c in changed_classes(repo, "HEAD~1", "HEAD")] == ["T"]


def test_a_checkout_without_its_submodules_stops_the_check(tmp_path):
    """DaCe's ``dace/external`` folders are submodules: a clone without ``--recursive`` has them
    empty, and nothing builds."""
    repo = tmp_path / "dace-checkout"
    shutil.copytree(Path(dace.__file__).parent, repo / "dace", ignore=shutil.ignore_patterns("__pycache__", "external"))
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    _git(repo, "add", "-A")
    for name in ("cub", "moodycamel"):              # gitlinks, as a submodule is recorded
        (repo / "dace" / "external" / name).mkdir(parents=True)
        _git(repo, "update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},dace/external/{name}")
    _git(repo, "commit", "-qm", "a DaCe with its submodules not checked out")
    proc = run_cli(["ci", "--dace", str(repo), "--base", "HEAD", "--head", "HEAD", "--out", str(tmp_path / "ci")],
                   tmp_path)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    said = proc.stdout + proc.stderr
    assert "cannot build a trivial program" in said and "git submodule update --init" in said, said[-2000:]
    assert "dace/external/moodycamel" in said
    assert not (tmp_path / "ci" / "ci.json").exists()


def test_the_tests_a_pull_request_changed_are_told_apart(tmp_path):
    """A revert removes the fix's test: at base it is a test the pull request changed, run first."""
    from harnessgen.ci.harvest import callers, changed_tests

    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "dace" / "transformation").mkdir(parents=True)
    kept = "def test_kept():\n    assert True\n"
    (repo / "tests" / "t_test.py").write_text(kept + "\n\ndef test_fixed():\n    assert 1\n")
    (repo / "dace" / "transformation" / "tiling.py").write_text(
        "class MapTiling:\n    def apply(self):\n        StripMining.apply_to(None)\n\n\nclass Other:\n    pass\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "the fix, with its test")
    (repo / "tests" / "t_test.py").write_text(kept)
    _git(repo, "commit", "-qam", "the revert")
    path = "tests/t_test.py"
    assert changed_tests(repo, path, "HEAD~1", "HEAD") == [f"{path}::test_fixed"]
    assert changed_tests(repo, path, "HEAD", "HEAD~1") == []
    assert callers(repo, "HEAD", ["StripMining"]) == ["MapTiling"]
