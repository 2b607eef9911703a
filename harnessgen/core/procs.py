"""Child processes that must not outlive their parent, and work done in a forked child."""
from __future__ import annotations

import ctypes
import gc
import os
import pickle
import signal
import threading
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Tuple

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


def call_in_fork(function: Callable[[], Any]) -> Tuple[bool, Any]:
    """``function()`` run in a child forked from this process: (True, what it returned, which
    must pickle), or (False, None) where the child gave no answer (it raised, crashed or was
    killed). Whatever the child changes stays in its own pages: ``function`` may change the
    objects it finds in place. A process running other threads is not forked (no answer): a
    fork copies the caller's thread alone, and a lock another one held would never be released
    in the child."""
    if threading.active_count() > 1:
        return False, None
    reading, writing = os.pipe()
    pid = os.fork()
    if pid == 0:             # the child: answer, then leave without running the parent's exit code
        os.close(reading)
        try:
            gc.disable()     # a collection would touch, and so copy, every page of the parent's heap
            die_with_parent()
            answer = pickle.dumps(function(), protocol=pickle.HIGHEST_PROTOCOL)
            with os.fdopen(writing, "wb") as out:
                out.write(answer)
        except BaseException:      # noqa: BLE001 -- no answer is the answer
            pass
        finally:
            os._exit(0)
    os.close(writing)
    with os.fdopen(reading, "rb") as answers:
        answer = answers.read()
    _, status = os.waitpid(pid, 0)
    if not answer or not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        return False, None
    return True, pickle.loads(answer)
