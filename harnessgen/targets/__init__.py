"""Targets: a named program source plus its defaults.

A target spec on the command line is one of
  ``kernels`` / ``kernels:gemm``   a built-in target (all programs / one program); ``npbench``
                                   is every benchmark of an NPBench checkout
  ``path/to/prog.sdfg``            a saved SDFG
  ``path/to/folder/``              every SDFG file of a folder, a program each
  ``path/to/file.py:function``     a ``@dace.program`` in a Python file
  ``generated:17`` / ``generated``  a random program / a stream of them (progen/target.py)

Built-in targets live in this package, one module each, registered below by
name; a module is imported only when its target is asked for.
"""
from __future__ import annotations

import importlib
from pathlib import Path
from typing import Dict, Optional

from ..core.errors import ConfigError
from .base import GPU_TRANSFORMATIONS, Program, Target, with_afl_configs
from .loaders import load_python_program, load_sdfg_file, load_sdfg_folder

__all__ = ["BUILTIN_TARGETS", "GPU_TRANSFORMATIONS", "Program", "Target", "resolve", "with_afl_configs"]


# name -> module (relative to this package, or absolute) defining ``make_target()``; a registry
# read by name: the generated target lives with its generator (progen), above the programs
BUILTIN_TARGETS: Dict[str, str] = {
    "kernels": ".kernels",
    "cloudsc": ".cloudsc",
    "npbench": ".npbench",
    "generated": "harnessgen.progen.target",
}


def resolve(spec: str) -> tuple[Target, Optional[str]]:
    """Turn a ``--program`` value into a target and an optional program name."""
    if spec.endswith(".sdfg") or spec.endswith(".sdfgz"):
        return load_sdfg_file(Path(spec)), None
    if Path(spec).is_dir():
        return load_sdfg_folder(Path(spec)), None
    if ".py:" in spec:
        path, func = spec.rsplit(":", 1)
        return load_python_program(Path(path), func), None
    name, _, program = spec.partition(":")
    if name not in BUILTIN_TARGETS:
        raise ConfigError(
            f"unknown target {spec!r} in --program: use a built-in target "
            f"({', '.join(sorted(BUILTIN_TARGETS))}), a file.sdfg or a file.py:function")
    module = importlib.import_module(BUILTIN_TARGETS[name], __name__)
    target = with_afl_configs(module.make_target())
    return target, (program or None)
