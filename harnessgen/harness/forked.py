"""Inputs screened through cffi in a forked child, before any replay binary is compiled.

A pair proven equal bit for bit is not fuzzed: its seed inputs (and, where post runs parallel
code pre does not, the race check's runs) only confirm the proof natively. Compiling its
replay binary was a third of such a pair's build, while the same runs through cffi
(``replay._Replayer``: the same decoder, guard zones, sides and oracle as the harness) take
milliseconds. So such a build is made without the binary, and its inputs run first in a child
of a small server process (``python -m harnessgen.harness.forked --serve``, one per process
that screens): a side that crashes or hangs takes down only the child, and forking the small
server costs a millisecond where forking a worker that holds DaCe and its programs cost ten.

Only a clean answer is taken: every input that ran passed (one the layout cannot decode passes,
as the harness's exit status says). Anything else (an input that fails, a child that dies or
does not answer in time, a build cffi cannot load) and the inputs run again natively, with the
replay binary compiled then (``HarnessBuild.harness_replay``): every finding is the native
run's, exactly as without this screening.
"""
from __future__ import annotations

import atexit
import dataclasses
import gc
import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from ..core import protocol
from ..core.outcome import Outcome
from ..inputs import seeds as seedlib
from .built import HarnessBuild

Screened = Tuple[List[Path], List[Tuple[Path, int]]]
TIMEOUT_S = 20.0          # the most one input may take (the first with loading the build)
# past the screening's deadline, an input still running gets this long before the native screening
# takes over (which gives it its deadline and a second, as it gives every input)
DEADLINE_GRACE_S = 2.0


@dataclasses.dataclass(frozen=True)
class RacePass:
    """The race check's pass over the inputs that passed: ``threads`` and ``repeat`` as the
    harness takes them, for at most ``seconds`` from its start (None: no limit)."""

    threads: int
    repeat: int
    seconds: Optional[float] = None


class Screening:
    """The seed inputs of one build, then (``race``) the race check over those that passed:
    both in one child where the build may be screened through cffi, each natively otherwise
    (or where the child's answer was not clean). Its time shows as the seeds'."""

    def __init__(self, build: HarnessBuild, race: Optional[RacePass] = None):
        self.build, self.race_pass = build, race
        self._race_answer: Optional[Tuple[List[Path], List[float]]] = None

    def seeds(self, paths: List[Path], deadline: Optional[float] = None,
              timings: Optional[List[float]] = None) -> Screened:
        """``seeds.screen_seeds``'s answer for the inputs on one thread."""
        if self.build.replay_deferred and not self.build.replay_compiled and paths:
            answer = _server().screen(self.build.dir, paths, deadline, self.race_pass)
            if answer is not None:
                seconds, raced = answer
                if timings is not None:
                    timings += seconds
                passing = paths[:len(seconds)]
                if raced is not None:
                    self._race_answer = (passing, raced)
                return passing, []
        return seedlib.screen_seeds(self.build, paths, timeout_s=TIMEOUT_S, deadline=deadline, timings=timings)

    def race(self, paths: List[Path], deadline: Optional[float] = None) -> Screened:
        """The race check over ``paths``: the child's answer where it checked exactly these."""
        assert self.race_pass is not None
        if self._race_answer is not None and self._race_answer[0] == list(paths):
            return paths[:len(self._race_answer[1])], []
        return seedlib.screen_seeds(self.build, paths, timeout_s=TIMEOUT_S, threads=self.race_pass.threads,
                                    repeat=self.race_pass.repeat, deadline=deadline)


# ---------------------------------------------------------------- the caller's side
class _Server:
    """The screening server of this process, started when first needed and again after it
    was stopped (a child that did not answer in time takes the server with it)."""

    def __init__(self):
        self.proc: Optional[subprocess.Popen] = None
        self.owner = 0
        self.buffer = b""

    def screen(self, build_dir: Path, paths: List[Path], deadline: Optional[float],
               race: Optional[RacePass]) -> Optional[Tuple[List[float], Optional[List[float]]]]:
        """(each input's seconds, each race run's or None) where every input that ran passed
        both passes; None for anything else."""
        try:
            self._start()
            request = {"build": str(build_dir), "paths": [str(p) for p in paths], "deadline": deadline,
                       "race": dataclasses.asdict(race) if race is not None else None}
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
            answers = self._answers(deadline)
        except (OSError, ValueError):
            answers = None
        if answers is None:
            self.stop()
            return None
        if answers[-1].get("exit") != 0 or not any(a.get("done") for a in answers):
            return None
        ran: Dict[str, List[float]] = {"seeds": [], "race": []}
        for answer in answers:
            if "outcome" not in answer:
                continue
            if answer["outcome"] != Outcome.PASS.name:
                return None
            ran[answer["pass"]].append(answer["seconds"])
        return ran["seeds"], (ran["race"] if race is not None else None)

    def _answers(self, deadline: Optional[float] = None) -> Optional[List[Dict]]:
        """The child's answers up to the server's line saying how it ended; None where a line
        takes longer than ``TIMEOUT_S``, or runs past the screening's ``deadline`` by more than
        ``DEADLINE_GRACE_S`` (an input that runs for long: the native screening, which bounds
        its inputs alike, decides it), or the server is gone."""
        answers: List[Dict] = []
        fd = self.proc.stdout.fileno()
        while True:
            while b"\n" not in self.buffer:
                wait = TIMEOUT_S if deadline is None else \
                    min(TIMEOUT_S, max(deadline - time.monotonic(), 0.0) + DEADLINE_GRACE_S)
                ready, _, _ = select.select([fd], [], [], wait)
                chunk = os.read(fd, 65536) if ready else b""
                if not chunk:
                    return None
                self.buffer += chunk
            line, _, self.buffer = self.buffer.partition(b"\n")
            answers.append(json.loads(line))
            if "exit" in answers[-1]:
                return answers

    def _start(self) -> None:
        if self.proc is not None and self.proc.poll() is None and self.owner == os.getpid():
            return
        self.proc, self.owner, self.buffer = None, os.getpid(), b""
        env = {**os.environ, "OMP_NUM_THREADS": "1", **{k: os.environ.get(k, v) for k, v in protocol.OPENMP_WAIT.items()}}
        self.proc = subprocess.Popen([sys.executable, "-m", "harnessgen.harness.forked", "--serve"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=env, start_new_session=True)

    def stop(self) -> None:
        if self.proc is None or self.owner != os.getpid():
            self.proc = None
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)      # the server and a child it waits for
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            stream.close()
        self.proc = None


_SERVER: Optional[_Server] = None


def _server() -> _Server:
    global _SERVER
    if _SERVER is None:
        _SERVER = _Server()
        atexit.register(_SERVER.stop)
    return _SERVER


# ---------------------------------------------------------------- the server's side
def _serve() -> int:
    """Fork a child per request; after it, say how it ended (``{"exit": status}``). What the
    libraries print goes nowhere: only the answers reach the caller."""
    import cffi

    from .replay import _Replayer

    cffi.FFI().cdef("void *hg_prime(int x);")         # cffi's parser set up once (15 ms a child)
    _preload_openmp()
    gc.freeze()          # what the server holds stays out of the children's collections (and pages)
    answers = os.dup(1)
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(_Replayer, request, answers)
        _, status = os.waitpid(pid, 0)
        _answer(answers, {"exit": status})
    return 0


def _preload_openmp() -> None:
    """The OpenMP runtime the sides link, mapped once here (not started: each child starts its
    own, as a fresh process would), and what setting its thread count imports (5 ms a child)."""
    import ctypes
    import ctypes.util  # noqa: F401

    for name in ("libomp.so.5", "libgomp.so.1"):
        try:
            ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
            return
        except OSError:
            continue


def _child(replayer_class, request: Dict, answers: int) -> None:
    """Replay each input on one thread, then the race pass over all of them (each until its
    deadline, checked before each input, as the native screening does); stop at the first run
    that does not pass. Never returns."""
    try:                          # (the server's standard error is already nowhere)
        replayer = replayer_class(Path(request["build"]))
        paths = [Path(p) for p in request["paths"]]
        passes = [("seeds", 1, 1, request["deadline"])]
        if request["race"]:
            race = request["race"]
            passes.append(("race", race["threads"], race["repeat"], race["seconds"]))
        for number, (name, threads, repeat, limit) in enumerate(passes):
            deadline = limit if number == 0 else (None if limit is None else time.monotonic() + limit)
            for count, path in enumerate(paths):
                if deadline is not None and time.monotonic() > deadline:
                    paths = paths[:count]       # the race pass checks those that ran
                    break
                started = time.perf_counter()
                result = replayer.run(path.read_bytes(), replayer.default_tolerance, None, threads, repeat)
                _answer(answers, {"pass": name, "outcome": result.outcome.name,
                                  "seconds": round(time.perf_counter() - started, 6)})
                if result.outcome != Outcome.PASS:
                    os._exit(0)
        _answer(answers, {"done": True})
    except BaseException:       # noqa: BLE001 -- no "done" is the answer: the caller runs them natively
        pass
    finally:
        os._exit(0)


def _answer(fd: int, answer: Dict) -> None:
    data = (json.dumps(answer) + "\n").encode()
    while data:
        data = data[os.write(fd, data):]


if __name__ == "__main__":
    if sys.argv[1:] != ["--serve"]:
        sys.stderr.write("usage: python -m harnessgen.harness.forked --serve (the screening server)\n")
        sys.exit(64)
    sys.exit(_serve())
