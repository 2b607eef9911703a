"""Targets: a named program source plus its defaults.

A target spec on the command line is one of
  ``kernels`` / ``kernels:gemm``   a built-in target (all programs / one program)
  ``path/to/prog.sdfg``            a saved SDFG
  ``path/to/file.py:function``     a ``@dace.program`` in a Python file

Built-in targets live in this package, one module each, registered below by
name; a module is imported only when its target is asked for.
"""
from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path
from typing import Callable, Dict, List, Optional

from ..errors import ConfigError

REPO_ROOT = Path(__file__).resolve().parents[2]
AFL_CONFIGS = REPO_ROOT / "afl_configs"

# what --transformation gpu means for the built-in targets
GPU_TRANSFORMATIONS = ["GPUTransformMap", "GPUTransformSDFG", "harnessgen.targets.cloudsc_xforms:GPUOffloadMap"]

# name -> module (relative to this package) defining ``make_target()``
BUILTIN_TARGETS: Dict[str, str] = {
    "kernels": ".kernels",
    "cloudsc": ".cloudsc",
}


@dataclasses.dataclass
class Program:
    """One program of a target: a name and a function that builds its SDFG."""

    name: str
    build: Callable[[], "object"]  # () -> dace.SDFG, simplified, library nodes expanded
    description: str = ""


@dataclasses.dataclass
class Target:
    """What the pipeline needs to know about a program source."""

    name: str
    programs: Dict[str, Program]
    default_transformations: List[str] = dataclasses.field(default_factory=list)
    # --transformation gpu: those that move code onto a GPU (their post is CUDA)
    gpu_transformations: List[str] = dataclasses.field(default_factory=list)
    constraints_file: Optional[Path] = None
    options_file: Optional[Path] = None
    dict_file: Optional[Path] = None
    # the file a ``file.py:function`` target came from (a transformation may
    # live in the same file: it is loaded once)
    source_module: Optional[object] = None

    def select(self, program: Optional[str]) -> List[Program]:
        if program is None:
            return [self.programs[k] for k in sorted(self.programs)]
        if program not in self.programs:
            raise ConfigError(f"target {self.name!r} has no program {program!r}; "
                              f"choose one of: {', '.join(sorted(self.programs))}")
        return [self.programs[program]]


def _afl_config(name: str, suffix: str) -> Optional[Path]:
    path = AFL_CONFIGS / f"{name}{suffix}"
    return path if path.is_file() else None


def with_afl_configs(target: Target) -> Target:
    """Attach ``afl_configs/<target>.options|.dict|.constraints.json`` when present."""
    target.options_file = target.options_file or _afl_config(target.name, ".options")
    target.dict_file = target.dict_file or _afl_config(target.name, ".dict")
    target.constraints_file = target.constraints_file or _afl_config(target.name, ".constraints.json")
    return target


def resolve(spec: str) -> tuple[Target, Optional[str]]:
    """Turn a ``--program`` value into a target and an optional program name."""
    from .loaders import load_python_program, load_sdfg_file

    if spec.endswith(".sdfg") or spec.endswith(".sdfgz"):
        return load_sdfg_file(Path(spec)), None
    if ".py:" in spec:
        path, func = spec.rsplit(":", 1)
        return load_python_program(Path(path), func), None
    name, _, program = spec.partition(":")
    from ..cuda.kernels import is_kernel_spec

    if is_kernel_spec(spec):
        raise ConfigError(f"--program {spec} is a CUDA kernel target, not a program: `harnessgen fuzz --program "
                          f"{spec}` tests each kernel against its reference, `harnessgen barriers` its barriers")
    if name not in BUILTIN_TARGETS:
        raise ConfigError(
            f"unknown target {spec!r} in --program: use a built-in target "
            f"({', '.join(sorted(BUILTIN_TARGETS))}), a file.sdfg or a file.py:function")
    module = importlib.import_module(BUILTIN_TARGETS[name], __name__)
    target = with_afl_configs(module.make_target())
    return target, (program or None)
