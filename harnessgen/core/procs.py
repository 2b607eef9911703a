"""Child processes that must not outlive their parent."""
from __future__ import annotations

import ctypes
import os
import signal
from pathlib import Path
from typing import Dict, Optional

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Ask the kernel to send SIGTERM when the parent dies (Linux; elsewhere a no-op). Used in
    campaign workers and for afl-fuzz: a campaign killed with ``kill -9`` must not leave
    workers fuzzing into directories the resumed run reuses."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:   # the parent died before prctl took effect
        os._exit(1)


def package_root() -> Path:
    """The folder that holds the ``harnessgen`` package."""
    return Path(__file__).resolve().parents[2]     # this file is harnessgen/core/procs.py


def interpreter_environment(python: Optional[str]) -> Dict[str, str]:
    """The environment for a process of ``python`` (None: this interpreter): another
    interpreter imports harnessgen from its source folder."""
    env = dict(os.environ)
    if python:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(package_root()), env.get("PYTHONPATH", "")) if p)
    return env
