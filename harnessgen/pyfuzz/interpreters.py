"""The interpreter a Python-level compiler runs in, when it is not harnessgen's own.

harnessgen stays in its venv; the compiler under test may need another Python
(torch.compile of the 2.0 series runs only on Python 3.10) or be a build the
user already has. ``make setup-torch TORCH=<version>`` runs this module to build
``.harnessgen/pyenvs/torch-<version>`` with a fitting interpreter; ``pyfuzz
--torch <version>`` finds it there, ``pyfuzz --python PATH`` takes any
interpreter. The fuzzing process and the judge server then run in that
interpreter with harnessgen imported from its source folder; what they need
besides the compiler is numpy, jinja2 and atheris.

    python -m harnessgen.pyfuzz.interpreters setup-torch 2.0.1
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List, Optional, Tuple

from ..core.errors import ConfigError
from ..core.procs import interpreter_environment
from ..core.pythons import find_python

ENVS = Path(".harnessgen") / "pyenvs"
# (first torch release of a series, the newest Python its torch.compile runs on)
PYTHON_FOR_TORCH: List[Tuple[Tuple[int, int], str]] = [
    ((2, 0), "3.10"), ((2, 1), "3.11"), ((2, 4), "3.12"), ((2, 6), "3.13"),
]
# what the fuzzing process needs beside the compiler (atheris 3 does not import on Python 3.10)
SUPPORT = {"3.10": ["numpy<2", "jinja2", "atheris==2.3.0"]}
DEFAULT_SUPPORT = ["numpy<2", "jinja2", "atheris"]


def env_python(version: str) -> Path:
    return ENVS / f"torch-{version}" / "bin" / "python"


def python_version_for(torch_version: str) -> str:
    try:
        release = tuple(int(part) for part in torch_version.split(".")[:2])
    except ValueError as error:
        raise ConfigError(f"TORCH={torch_version!r}: write a release such as 2.0.1") from error
    chosen = PYTHON_FOR_TORCH[0][1]
    for first, python in PYTHON_FOR_TORCH:
        if release >= first:
            chosen = python
    return chosen


def setup_torch(torch_version: str) -> Path:
    python_version = python_version_for(torch_version)
    folder = ENVS / f"torch-{torch_version}"
    python = env_python(torch_version)
    if not python.exists():
        subprocess.run([find_python(python_version, f"torch {torch_version}'s torch.compile"), "-m", "venv", str(folder)],
                       check=True)
    packages = [f"torch=={torch_version}"] + SUPPORT.get(python_version, DEFAULT_SUPPORT)
    subprocess.run([str(python), "-m", "pip", "install", "-q", *packages], check=True)
    check(str(python), "torch")
    print(f"torch {torch_version} on Python {python_version}: pyfuzz --compiler torch --torch {torch_version}")
    return python


def check(python: str, compiler: str) -> str:
    """The compiler's version as ``python`` imports it; a ConfigError says what is missing."""
    module = {"torch": "torch", "tvm": "tvm", "dace": "dace"}[compiler]
    probe = (f"import {module}, numpy, jinja2, harnessgen.pyfuzz.target; print({module}.__version__)")
    try:
        done = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=600,
                              env=interpreter_environment(python))
    except OSError as error:
        raise ConfigError(f"--python {python}: cannot run it ({error})") from error
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        raise ConfigError(f"--python {python} cannot run pyfuzz for {compiler}: {last} (it needs {module}, "
                          f"numpy, jinja2 and atheris)")
    return done.stdout.strip()


def resolve_python(compiler: str, python: Optional[str], torch_version: Optional[str]) -> Optional[str]:
    """The interpreter of ``--python`` or ``--torch``, checked; None: harnessgen's own."""
    if torch_version:
        if compiler != "torch":
            raise ConfigError("--torch VERSION is for --compiler torch")
        found = env_python(torch_version)
        if not found.exists():
            raise ConfigError(f"--torch {torch_version}: no environment for it yet; run "
                              f"`make setup-torch TORCH={torch_version}`")
        python = str(found)
    if python is None:
        return None
    python = os.path.abspath(python) if os.sep in python else (shutil.which(python) or python)
    version = check(python, compiler)
    if torch_version and not version.startswith(torch_version):
        raise ConfigError(f"--torch {torch_version}: its environment holds torch {version}")
    return python


def main(argv: List[str]) -> int:
    if len(argv) != 2 or argv[0] != "setup-torch":
        print(__doc__)
        return 2
    setup_torch(argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
