"""Child processes that must not outlive their parent, and work done in a forked child."""
from __future__ import annotations

import ctypes
import gc
import os
import pickle
import select
import signal
import threading
import time
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


def call_in_fork(function: Callable[[], Any], timeout: Optional[float] = None) -> Tuple[bool, Any]:
    """``function()`` run in a child forked from this process: (True, what it returned, which
    must pickle), or (False, None) where the child gave no answer (it raised, crashed, was
    killed, or did not answer within ``timeout`` seconds: then it is killed). Whatever the child changes stays in its own pages: ``function`` may change the
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
        answer = _read_until(answers, pid, timeout)
    _, status = os.waitpid(pid, 0)
    if not answer or not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        return False, None
    return True, pickle.loads(answer)


def _read_until(answers, pid: int, timeout: Optional[float]) -> bytes:
    """What the child wrote until it closed its end, or b"" where that took longer than
    ``timeout`` seconds (the child is killed)."""
    if timeout is None:
        return answers.read()
    deadline = time.monotonic() + timeout
    chunks = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([answers], [], [], left)[0]:
            os.kill(pid, signal.SIGKILL)
            return b""
        chunk = os.read(answers.fileno(), 1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
