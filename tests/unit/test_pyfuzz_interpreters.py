"""The interpreter of the compiler under test: --torch VERSION and --python PATH."""
import sys

import pytest

from harnessgen.core.errors import ConfigError
from harnessgen.pyfuzz.interpreters import python_version_for, resolve_python


def test_torch_releases_get_the_newest_python_their_compile_runs_on():
    assert python_version_for("2.0.1") == "3.10"
    assert python_version_for("2.1.2") == "3.11"
    assert python_version_for("2.5.0") == "3.12"
    assert python_version_for("2.13.0") == "3.13"
    with pytest.raises(ConfigError, match="TORCH="):
        python_version_for("latest")


def test_a_torch_version_without_its_environment_says_how_to_make_it():
    with pytest.raises(ConfigError, match=r"make setup-torch TORCH=9\.9\.9"):
        resolve_python("torch", None, "9.9.9")


def test_an_interpreter_that_cannot_run_says_which_flag_to_fix(tmp_path):
    with pytest.raises(ConfigError, match="--python"):
        resolve_python("torch", str(tmp_path / "no-python"), None)


def test_an_interpreter_that_has_what_pyfuzz_needs_is_taken_as_given():
    assert resolve_python("dace", sys.executable, None) == sys.executable
    assert resolve_python("dace", None, None) is None
