"""Finding a Python interpreter of a given version that actually runs.

A name on PATH is not proof of an interpreter: pyenv puts a shim for every version it has
installed on PATH, and a shim for a version that is installed but not activated exits 127
("pyenv: python3.10: command not found"). Every candidate is therefore run once
(``-c 'import sys; ...'``) and its reported version compared before it is trusted.
Candidates, in order: PATH, pyenv's version folders (``$PYENV_ROOT`` or ``~/.pyenv``),
``uv python find``, and the usual system folders.
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
from typing import Iterator, List, Optional

from .errors import ConfigError

_PROBE = "import sys; print('%d.%d' % sys.version_info[:2])"
_SYSTEM_FOLDERS = ("/usr/local/bin", "/usr/bin", "/opt/homebrew/bin")


def reported_version(python: str, timeout_s: float = 30.0) -> Optional[str]:
    """The ``major.minor`` the interpreter says it is; None when it does not run (a shim of a
    version that is not active, a broken link, a missing library)."""
    try:
        done = subprocess.run([python, "-c", _PROBE], capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def candidates(version: str) -> Iterator[str]:
    """Every place a ``python<version>`` may be, most preferred first (unchecked, no repeats)."""
    seen: set = set()
    for path in _candidate_paths(version):
        real = os.path.realpath(path)
        if path not in seen and real not in seen:
            seen.update((path, real))
            yield path


def _candidate_paths(version: str) -> Iterator[str]:
    on_path = shutil.which(f"python{version}")
    if on_path:
        yield on_path
    pyenv_root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    # newest patch release first (3.10.13 before 3.10.9)
    for folder in sorted(glob.glob(os.path.join(pyenv_root, "versions", f"{version}.*")), key=_release, reverse=True):
        yield os.path.join(folder, "bin", f"python{version}")
    uv = shutil.which("uv")
    if uv:
        try:
            found = subprocess.run([uv, "python", "find", version], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            found = None
        if found is not None and found.returncode == 0 and found.stdout.strip():
            yield found.stdout.strip().splitlines()[-1]
    for folder in _SYSTEM_FOLDERS:
        yield os.path.join(folder, f"python{version}")


def _release(folder: str) -> tuple:
    """A version folder's release as numbers (non-numeric parts, such as ``3.13.0t``, count as 0)."""
    parts = os.path.basename(folder).split(".")
    return tuple(int(p) if p.isdigit() else 0 for p in parts)


def find_python(version: str, needed_for: str) -> str:
    """An interpreter of Python ``version`` ("3.10") that runs; a ConfigError that names the
    exact fix when there is none. ``needed_for`` says in the message why it is wanted."""
    tried: List[str] = []
    for path in candidates(version):
        if not os.path.exists(path):
            continue
        if reported_version(path) == version:
            return path
        tried.append(path)
    rejected = f" (found but not runnable as Python {version}: {', '.join(tried)})" if tried else ""
    raise ConfigError(
        f"no runnable Python {version} here{rejected}; {needed_for} needs it. Install one: "
        f"`pyenv install {version}` (then it is found in pyenv's versions folder, no `pyenv global` needed), "
        f"`uv python install {version}`, or `apt-get install python{version}`; or pass --python PATH")
