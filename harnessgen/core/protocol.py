"""The harness binary's protocol, owned here and nowhere else.

A built harness (templates/harness.cpp.j2) talks to the rest of harnessgen through three
channels, and this module defines all three; the template renders its constants from here
(``template_context``) and every caller decodes through here:

* **exit status** (``Exit``): 0 pass, 2 bytes the decoder cannot make an input of, 3 pre failed
  on its own input, 69 a GPU side on a machine without a usable GPU, ...; a finding is an
  ``abort()`` (a negative status from ``subprocess``), a hang is a timeout;
* **stderr markers**: one line per event, ``HARNESSGEN: NAME key=value ...`` (``Marker``);
* **environment** read at start-up (``HarnessEnv``; envs.py declares the names for users).

``run_native`` runs the replay binary on one input, ``run_native_batch`` on several in one
process, ``device_check`` asks it whether its sides can run here.
"""
from __future__ import annotations

import dataclasses
import enum
import os
import subprocess
import time
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Union

from .runtime import Tolerance


class Exit(enum.IntEnum):
    """The replay binary's exit statuses (a finding aborts instead)."""

    PASS = 0
    UNSATISFIABLE = 2      # the decoder cannot make a valid input of these bytes (not run)
    INVALID_INPUT = 3      # pre failed on the input: a constraint is missing, not a finding
    OUT_OF_MEMORY = 4      # the input asks for more memory than the machine gives
    USAGE = 64             # EX_USAGE
    CANNOT_READ = 66       # EX_NOINPUT
    NO_GPU = 69            # EX_UNAVAILABLE: a GPU side and no usable GPU here


# statuses that say nothing against the transformation
NOT_A_FINDING = (Exit.PASS, Exit.UNSATISFIABLE, Exit.INVALID_INPUT)

MARKER = "HARNESSGEN:"


class Marker(str, enum.Enum):
    """The events a harness reports on stderr, each as ``HARNESSGEN: NAME key=value ...``."""

    PRE_DONE = "PRE_DONE"                  # pre finished (HARNESSGEN_STAGES=1): what follows is post's
    INVALID_INPUT = "INVALID_INPUT"        # reason=...
    MISMATCH = "MISMATCH"                  # container= index= pre= post= differing= of= max_abs_diff=
    OOB_WRITE = "OOB_WRITE"                # container= offset= bytes=
    POST_CRASH = "POST_CRASH"              # reason=
    RACE_CANDIDATE = "RACE_CANDIDATE"      # threads= run=
    NO_GPU = "NO_GPU"                      # reason=
    CUDA_ERROR = "CUDA_ERROR"              # side= call= error= (a kernel side's failing CUDA call; it aborts)
    INPUT = "INPUT"                        # index= (several inputs: this one starts)
    RAN = "RAN"                            # index= seconds= (several inputs: this one finished)


# the environment a harness reads at start-up, by HarnessEnv field
ENVIRONMENT = {
    "rtol": "HARNESSGEN_RTOL", "atol": "HARNESSGEN_ATOL", "exact": "HARNESSGEN_EXACT",
    "rtol32": "HARNESSGEN_RTOL32", "atol32": "HARNESSGEN_ATOL32",
    "stages": "HARNESSGEN_STAGES", "threads": "HARNESSGEN_THREADS", "repeat": "HARNESSGEN_REPEAT",
    "setup_delay": "HARNESSGEN_SETUP_DELAY_MS",
}


# The OpenMP runtime's idle threads spin 1 ms before they sleep (its default: 200 ms). Threads
# between back-to-back parallel regions, the ones a race needs running at once, are still
# spinning when the next region starts; a thread that waits longer waits for one that is not
# running. On a busy machine that spinning (and its sched_yield calls) was CPU taken from the
# other workers: the automatic race check spent 47 of a run's 300 CPU seconds, 32 of them in
# the kernel. A caller's own KMP_BLOCKTIME wins.
OPENMP_WAIT = {"KMP_BLOCKTIME": "1"}


def template_context() -> Dict:
    """What templates/harness.cpp.j2 renders its exit codes, markers and variable names from."""
    return {"exit": {e.name: int(e) for e in Exit}, "marker": MARKER,
            "markers": {m.name: f"{MARKER} {m.value}" for m in Marker}, "env": dict(ENVIRONMENT)}


@dataclasses.dataclass(frozen=True)
class HarnessEnv:
    """How one run of a harness is asked to behave."""

    tolerance: Optional[Tolerance] = None    # None: the tolerance it was built with
    threads: int = 1                         # OpenMP threads for post (race mode above 1)
    repeat: int = 1                          # post runs per input
    stages: bool = False                     # report PRE_DONE

    def variables(self) -> Dict[str, str]:
        out = {ENVIRONMENT["threads"]: str(self.threads), ENVIRONMENT["repeat"]: str(self.repeat),
               ENVIRONMENT["stages"]: "1" if self.stages else "0"}
        if self.tolerance is not None:
            out.update({ENVIRONMENT["rtol"]: repr(float(self.tolerance.rtol)),
                        ENVIRONMENT["atol"]: repr(float(self.tolerance.atol)),
                        ENVIRONMENT["rtol32"]: repr(float(self.tolerance.rtol32)),
                        ENVIRONMENT["atol32"]: repr(float(self.tolerance.atol32)),
                        ENVIRONMENT["exact"]: "1" if self.tolerance.exact else "0"})
        return out

    def environ(self, extra: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
        """The caller's environment (a driver may be found through it) with these settings; the
        harness sets its own thread counts, OMP_NUM_THREADS only keeps OpenMP from starting a
        pool it will not use."""
        return {**OPENMP_WAIT, **os.environ, "OMP_NUM_THREADS": "1", **self.variables(), **(extra or {})}


@dataclasses.dataclass
class NativeRun:
    """One run of the replay binary on one input."""

    returncode: Optional[int]                # None: it ran past its time limit
    stderr: str

    @property
    def timed_out(self) -> bool:
        return self.returncode is None

    @property
    def exit(self) -> Optional[Exit]:
        """The named status it exited with; None for an abort, a signal, a timeout or an unknown one."""
        try:
            return Exit(self.returncode) if self.returncode is not None and self.returncode >= 0 else None
        except ValueError:
            return None

    @property
    def crashed(self) -> bool:
        """Killed by a signal (a finding aborts) or hung."""
        return self.returncode is None or self.returncode < 0

    @property
    def judged_fine(self) -> bool:
        """Exited with a status that says nothing against the transformation."""
        return self.exit in NOT_A_FINDING

    def reported(self, marker: Marker) -> bool:
        return f"{MARKER} {marker.value}" in self.stderr

    def fields(self, marker: Marker) -> Optional[Dict[str, str]]:
        """The key=value fields of the last line reporting ``marker``; None when none does."""
        every = self.each(marker)
        return every[-1] if every else None

    def each(self, marker: Marker) -> List[Dict[str, str]]:
        """The key=value fields of every line reporting ``marker``, in order."""
        head = f"{MARKER} {marker.value}"
        return [_fields_of(marker, line[len(head):]) for line in self.stderr.splitlines() if line.startswith(head)]


def _fields_of(marker: Marker, rest: str) -> Dict[str, str]:
    if marker in (Marker.NO_GPU, Marker.INVALID_INPUT, Marker.POST_CRASH) and " reason=" in rest:
        return {"reason": rest.split(" reason=", 1)[1].strip()}     # a reason may hold spaces
    return dict(part.split("=", 1) for part in rest.split() if "=" in part)


def _run(command: List[str], env: Dict[str, str], timeout_s: float, stdin: Optional[bytes] = None) -> NativeRun:
    """The replay binary's status and stderr (None: it ran past ``timeout_s``; POSIX keeps what
    it wrote so far on the exception)."""
    try:
        proc = subprocess.run(command, input=stdin, capture_output=True, timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired as exc:
        return NativeRun(None, (exc.stderr or b"").decode(errors="replace"))
    return NativeRun(proc.returncode, proc.stderr.decode(errors="replace"))


def run_native(binary: Union[str, Path], data: Union[bytes, Path], env: HarnessEnv = HarnessEnv(),
               timeout_s: float = 20.0, extra_env: Optional[Mapping[str, str]] = None) -> NativeRun:
    """Run ``binary`` (a replay binary) on one input: bytes go through stdin, a path as its argument."""
    from_stdin = isinstance(data, (bytes, bytearray))
    return _run([str(binary), "-" if from_stdin else str(data)], env.environ(extra_env), timeout_s,
                bytes(data) if from_stdin else None)


@dataclasses.dataclass
class BatchRun:
    """One run of the replay binary on several inputs: which finished, in order, and how."""

    finished: List[float]                    # seconds each of the first inputs took, inside the process
    started: int                             # how many inputs it started
    total: int                               # how many it was given
    run: NativeRun                           # the process: its status (None: killed at its limit), stderr
    seconds: float                           # the process's wall time, start-up included

    @property
    def complete(self) -> bool:
        """Every input ran to its end and the process exited by itself."""
        return len(self.finished) == self.total and not self.run.crashed


def run_native_batch(binary: Union[str, Path], paths: Sequence[Path], env: HarnessEnv = HarnessEnv(),
                     timeout_s: float = 20.0) -> BatchRun:
    """Run ``binary`` on ``paths`` (two or more) in one process: it stops at the first input
    that does not finish (a crash, an exit of its own) or at the time limit of the batch."""
    started_at = time.monotonic()
    run = _run([str(binary), *map(str, paths)], env.environ(), timeout_s)
    finished = [float(fields.get("seconds", 0.0)) for fields in run.each(Marker.RAN)]
    return BatchRun(finished, len(run.each(Marker.INPUT)), len(paths), run, time.monotonic() - started_at)


def device_check(binary: Union[str, Path], timeout_s: float = 120.0) -> Optional[str]:
    """Why the sides of this harness cannot run on this machine (its own ``--device-check``);
    None when they can (always, for a CPU build)."""
    proc = subprocess.run([str(binary), "--device-check"], capture_output=True, timeout=timeout_s,
                          env=HarnessEnv().environ())
    run = NativeRun(proc.returncode, proc.stderr.decode(errors="replace"))
    if run.exit == Exit.PASS:
        return None
    reason = run.fields(Marker.NO_GPU)
    return reason["reason"] if reason else f"device check exited {proc.returncode}"
