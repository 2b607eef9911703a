"""Inputs screened through cffi in a forked child, before any replay binary is compiled.

A pair proven equal bit for bit is not fuzzed: its seed inputs (and, where post runs parallel
code pre does not, the race check's runs) only confirm the proof natively. Compiling its
replay binary was a third of such a pair's build, while the same runs through cffi
(``replay._Replayer``: the same decoder, guard zones, sides and oracle as the harness) take
milliseconds. So such a build is made without the binary, and ``screen`` runs its inputs in a
child forked from this process: a side that crashes or hangs takes down only the child.

Only a clean answer is taken: every input that ran passed (one the layout cannot decode passes,
as the harness's exit status says). Anything else (an input that fails, a child that dies or
does not answer in time, a build cffi cannot load) and the inputs run again natively, with the
replay binary compiled then (``HarnessBuild.harness_replay``): every finding is the native
run's, exactly as without this screening.
"""
from __future__ import annotations

import functools
import json
import os
import select
import signal
import time
from pathlib import Path
from typing import List, Optional, Tuple

from ..core import protocol
from ..core.outcome import Outcome
from ..inputs import seeds as seedlib
from .built import HarnessBuild
from .replay import _Replayer

Screened = Tuple[List[Path], List[Tuple[Path, int]]]


def screen(build: HarnessBuild, paths: List[Path], timeout_s: float = 20.0, threads: int = 1, repeat: int = 1,
           deadline: Optional[float] = None, timings: Optional[List[float]] = None) -> Screened:
    """``seeds.screen_seeds``'s answer (passing inputs, [(failing input, its 1-based position)]):
    through cffi in a forked child where the build has no replay binary yet and every input
    that ran there passed, else natively."""
    if build.replay_deferred and not build.replay_compiled and paths and hasattr(os, "fork"):
        _prime()
        ran = _in_child(build, paths, timeout_s, threads, repeat, deadline)
        if ran is not None:
            if timings is not None:
                timings += ran
            return paths[:len(ran)], []
    return seedlib.screen_seeds(build, paths, timeout_s=timeout_s, threads=threads, repeat=repeat,
                                deadline=deadline, timings=timings)


@functools.lru_cache(maxsize=None)
def _prime() -> None:
    """What every child would do first, done once here: cffi's parser set up (15 ms)."""
    import cffi

    cffi.FFI().cdef("void *hg_prime(int x);")


def _in_child(build: HarnessBuild, paths: List[Path], timeout_s: float, threads: int, repeat: int,
              deadline: Optional[float]) -> Optional[List[float]]:
    """Each input's seconds where every one that ran in the child passed; None for anything
    else. The child answers a line per input; ``timeout_s`` is the most it may take for one
    (the first with loading the build)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:                  # the child: never returns
        os.close(read_end)
        _child(build.dir, paths, threads, repeat, deadline, write_end)
    os.close(write_end)
    seconds: List[float] = []
    finished, buffer = False, b""
    try:
        while not finished:
            ready, _, _ = select.select([read_end], [], [], timeout_s)
            if not ready:
                return None           # a hang: the native run gives it its own verdict
            chunk = os.read(read_end, 65536)
            if not chunk:
                break
            buffer += chunk
            while b"\n" in buffer:
                line, _, buffer = buffer.partition(b"\n")
                answer = json.loads(line)
                if answer.get("done"):
                    finished = True
                elif answer.get("outcome") != Outcome.PASS.name:
                    return None
                else:
                    seconds.append(answer["seconds"])
    except (OSError, ValueError):
        return None
    finally:
        os.close(read_end)
        _reap(pid)
    return seconds if finished else None


def _reap(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)


def _child(build_dir: Path, paths: List[Path], threads: int, repeat: int, deadline: Optional[float],
           answers: int) -> None:
    """Replay each input (until ``deadline``, checked before each, as the native screening does)
    and answer a line for each; stop at the first that does not pass. What the libraries
    print goes nowhere: only the answers reach the parent."""
    try:
        quiet = os.open(os.devnull, os.O_WRONLY)
        os.dup2(quiet, 1)
        os.dup2(quiet, 2)
        for name, value in protocol.OPENMP_WAIT.items():     # as the harness runs: a caller's own wins
            os.environ.setdefault(name, value)
        replayer = _Replayer(build_dir)
        for path in paths:
            if deadline is not None and time.monotonic() > deadline:
                break
            started = time.perf_counter()
            result = replayer.run(Path(path).read_bytes(), replayer.default_tolerance, None, threads, repeat)
            outcome = result.outcome.name
            _answer(answers, {"outcome": outcome, "seconds": round(time.perf_counter() - started, 6)})
            if result.outcome != Outcome.PASS:
                break
        _answer(answers, {"done": True})
    except BaseException:       # noqa: BLE001 -- no answer is the answer: the parent runs them natively
        pass
    finally:
        os._exit(0)


def _answer(fd: int, answer: dict) -> None:
    data = (json.dumps(answer) + "\n").encode()
    while data:
        data = data[os.write(fd, data):]
