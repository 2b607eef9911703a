"""pyproject.toml names every package (setuptools installs only those), and every data folder
the code reads is package data."""
import tomllib

from tests.conftest import REPO


def _config():
    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_python_package_is_listed():
    listed = set(_config()["packages"])
    found = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "harnessgen").rglob("__init__.py")}
    assert found <= listed, sorted(found - listed)


def test_the_data_folders_are_package_data_of_their_own_packages():
    config = _config()
    assert config["package-dir"] == {"harnessgen.templates": "templates", "harnessgen.afl_configs": "afl_configs"}
    for package, folder in config["package-dir"].items():
        patterns = config["package-data"][package]
        files = [p for p in (REPO / folder).iterdir() if p.is_file()]
        assert files and all(any(p.match(pattern) for pattern in patterns) for p in files), (package, patterns)
