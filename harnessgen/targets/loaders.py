"""Load programs from user files: saved SDFGs and ``file.py:function``."""
from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from ..errors import ConfigError
from . import Program, Target, with_afl_configs


def prepare_sdfg(sdfg):
    """Make an SDFG ready for instance enumeration: pure library expansions, simplified."""
    sdfg.expand_library_nodes()
    sdfg.simplify()
    return sdfg


def load_module(path: Path) -> ModuleType:
    """Import a Python file once per process (a program and a transformation may share it)."""
    path = path.resolve()
    if not path.is_file():
        raise ConfigError(f"no such file: {path.name!r} (check the path given to --program/--transformation)")
    key = "harnessgen_user_" + hashlib.sha1(str(path).encode()).hexdigest()[:12]
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[key] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the user's file is broken: say which
        del sys.modules[key]
        raise ConfigError(f"importing {path.name} failed: {type(exc).__name__}: {exc}") from exc
    return module


def load_sdfg_file(path: Path) -> Target:
    import dace

    if not path.is_file():
        raise ConfigError(f"--program: no such SDFG file {str(path)!r}")

    def build():
        try:
            sdfg = dace.SDFG.from_file(str(path))
        except Exception as exc:
            raise ConfigError(f"--program: {path.name} is not a readable SDFG ({exc})") from exc
        return prepare_sdfg(sdfg)

    name = path.stem
    return with_afl_configs(Target(name=name, programs={name: Program(name, build, f"SDFG from {path.name}")}))


def load_python_program(path: Path, function: str) -> Target:
    import dace

    module = load_module(path)
    prog = getattr(module, function, None)
    if prog is None:
        raise ConfigError(f"--program: {path.name} has no attribute {function!r}")
    if not hasattr(prog, "to_sdfg"):
        raise ConfigError(f"--program: {path.name}:{function} is not a @dace.program")

    def build():
        sdfg = prog.to_sdfg(simplify=True)
        if not isinstance(sdfg, dace.SDFG):
            raise ConfigError(f"--program: {path.name}:{function} did not produce an SDFG")
        return prepare_sdfg(sdfg)

    target = Target(name=function, programs={function: Program(function, build, f"{path.name}:{function}")},
                    source_module=module)
    return with_afl_configs(target)
