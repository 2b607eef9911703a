"""Which DaCe a run names: a release by its version, a source tree by its folder and revision."""
import importlib.util
import subprocess
import types

from harnessgen.core.versions import dace_source


def _dace_at(monkeypatch, folder):
    (folder / "dace").mkdir(parents=True)
    (folder / "dace" / "__init__.py").write_text("__version__ = '2.0.0b1'\n")
    spec = types.SimpleNamespace(origin=str(folder / "dace" / "__init__.py"))
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: spec if name == "dace" else real(name, *a))
    dace_source.cache_clear()


def test_an_installed_release_is_named_by_its_version_only(tmp_path, monkeypatch):
    _dace_at(monkeypatch, tmp_path / "lib" / "site-packages")
    assert dace_source() == ""
    dace_source.cache_clear()


def test_a_source_tree_is_named_by_its_folder_and_a_checkout_by_its_revision_too(tmp_path, monkeypatch):
    tree = tmp_path / "dace-2.0.0b1"
    _dace_at(monkeypatch, tree)
    assert dace_source() == f"source tree {tree.resolve()} (not a git checkout)"
    git = ["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "a DaCe branch"], check=True)
    revision = subprocess.run([*git, "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True).stdout.strip()
    dace_source.cache_clear()
    assert dace_source() == f"checkout {tree.resolve()} at {revision}"
    (tree / "dace" / "__init__.py").write_text("__version__ = '2.0.0b2'\n")
    dace_source.cache_clear()
    assert dace_source() == f"checkout {tree.resolve()} at {revision}+changes"
    dace_source.cache_clear()
