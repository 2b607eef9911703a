"""Finding an interpreter of a given version: every candidate is run before it is trusted."""
import os
import stat

import pytest

from harnessgen.core.errors import ConfigError
from harnessgen.core.pythons import find_python


def _script(path, body: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


@pytest.fixture
def fake_world(tmp_path, monkeypatch):
    """A PATH and a pyenv root of our own, holding only what each test puts there."""
    shims, root = tmp_path / "shims", tmp_path / "pyenv"
    shims.mkdir()
    monkeypatch.setenv("PATH", f"{shims}{os.pathsep}/bin{os.pathsep}/usr/bin")
    monkeypatch.setenv("PYENV_ROOT", str(root))
    return shims, root


def test_a_pyenv_shim_that_exits_127_is_skipped_for_the_installed_version(fake_world):
    shims, root = fake_world
    _script(shims / "python3.97", "echo 'pyenv: python3.97: command not found' >&2; exit 127")
    real = _script(root / "versions" / "3.97.2" / "bin" / "python3.97", "echo 3.97")
    assert find_python("3.97", "a test") == real


def test_the_newest_patch_release_of_pyenv_wins(fake_world):
    _, root = fake_world
    _script(root / "versions" / "3.97.1" / "bin" / "python3.97", "echo 3.97")
    newer = _script(root / "versions" / "3.97.10" / "bin" / "python3.97", "echo 3.97")
    _script(root / "versions" / "3.97.9" / "bin" / "python3.97", "echo 3.97")   # sorts after .10 as text
    assert find_python("3.97", "a test") == newer


def test_an_interpreter_reporting_another_version_is_not_taken(fake_world):
    shims, _ = fake_world
    _script(shims / "python3.97", "echo 3.11")
    with pytest.raises(ConfigError) as caught:
        find_python("3.97", "torch 2.0.1's torch.compile")
    message = str(caught.value)
    assert "not runnable as Python 3.97" in message and "python3.97" in message
    assert "pyenv install 3.97" in message and "--python PATH" in message


def test_none_at_all_names_the_installs_that_would_fix_it(fake_world):
    with pytest.raises(ConfigError, match=r"uv python install 3\.97.*apt-get install python3\.97"):
        find_python("3.97", "a test")
