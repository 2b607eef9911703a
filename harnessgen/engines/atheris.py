"""Atheris (libFuzzer for Python) engine: fuzzes a Python-level compiler for a time budget.

The fuzzing process is ``python -m harnessgen.pyfuzz.target``. libFuzzer stops
at the first input that kills it (a compiled program's SIGSEGV, a hang); the
engine then starts it again on the same corpus for the time left, so one
crash never ends a session. Findings the session judges itself (mismatches,
compiler errors) do not stop it. libFuzzer flags (``-fork``, ``-dict``,
``-max_len``...) pass through ``job.options``.

libFuzzer looks at ``-max_total_time`` only between inputs and runs the whole
corpus before its first look, and one program can take seconds to compile: the
engine therefore interrupts the process itself at the deadline (SIGINT, which
libFuzzer answers by exiting; then SIGKILL to its process group, compilers
included).
"""
from __future__ import annotations

import dataclasses
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import List, Optional

from ..core.errors import HarnessgenError
from ..core.files import write_atomic
from ..core.procs import die_with_parent, interpreter_environment
from . import Engine, EngineResult, FuzzJob, RawCrash

# a fuzzing process that ends this soon after it started is not restarted
MIN_SESSION_S = 5.0
STATUS_LINE = re.compile(r"^#(\d+)\s+\w+.*?exec/s: (\d+)")
# -len_control=0: every input may use the whole -max_len at once; the generator reads its
# choices from the bytes, and libFuzzer's slow growth from 4 bytes would spend the first
# minutes on one-statement programs with one-element arrays
DEFAULT_FLAGS = ["-rss_limit_mb=16384", "-timeout=600", "-print_final_stats=1", "-len_control=0", "-max_len=512"]
SEED_INPUTS = 8
# how long a process interrupted at the deadline may take to exit before it is killed
INTERRUPT_GRACE_S = 10.0


@dataclasses.dataclass
class PyFuzzTarget:
    """What the engine fuzzes: the target process's own arguments (compiler, mode, passes)."""

    arguments: List[str]
    python: Optional[str] = None      # the interpreter of the compiler under test (None: this one)


class AtherisEngine(Engine):
    name = "atheris"

    def command(self, job: FuzzJob, seconds: int) -> List[str]:
        flags = list(DEFAULT_FLAGS) + [f"-max_total_time={seconds}", f"-seed={job.seed}" if job.seed else "",
                                       f"-artifact_prefix={job.out_dir / 'artifacts'}/"]
        if job.dict_file:
            flags.append(f"-dict={job.dict_file}")
        if job.max_execs:
            flags.append(f"-runs={job.max_execs}")
        flags += job.options
        corpus = [str(job.out_dir / "corpus")] + ([str(job.seeds_dir)] if job.seeds_dir else [])
        return ([job.build.python or sys.executable, "-m", "harnessgen.pyfuzz.target", *job.build.arguments, "--out", str(job.out_dir),
                 "--"] + corpus + [f for f in flags if f])

    def seed_corpus(self, corpus: Path, seed: int) -> None:
        """A new corpus starts from a few seeded random inputs (programs of every size)."""
        if any(corpus.iterdir()):
            return
        rng = random.Random(seed)
        for index in range(SEED_INPUTS):
            data = bytes(rng.randrange(256) for _ in range(32 + 48 * index))
            write_atomic(corpus / f"seed-{index}", data)

    def run(self, job: FuzzJob) -> EngineResult:
        for sub in ("corpus", "artifacts"):
            (job.out_dir / sub).mkdir(parents=True, exist_ok=True)
        self.seed_corpus(job.out_dir / "corpus", job.seed)
        started = time.time()
        deadline = started + job.time_s
        libfuzzer_execs, crashes, command = 0, [], []
        log_path = job.out_dir / "fuzz.log"
        while True:
            left = int(deadline - time.time())
            if left < MIN_SESSION_S:
                break
            command = self.command(job, left)
            before = set((job.out_dir / "artifacts").iterdir())
            process_started = time.time()
            with open(log_path, "a") as log:
                returncode = _run_until(command, log, deadline, interpreter_environment(job.build.python))
            libfuzzer_execs += _last_exec_count(log_path)
            for artifact in sorted(set((job.out_dir / "artifacts").iterdir()) - before):
                kind = "hang" if artifact.name.startswith(("timeout-", "slow-unit-")) else "crash"
                crashes.append(RawCrash(artifact, round(time.time() - started, 1), kind))
            if returncode in (0, None) or job.until_crash and crashes:
                break
            if not (set((job.out_dir / "artifacts").iterdir()) - before):
                if not _session_program_count(job.out_dir, process_started):
                    raise HarnessgenError(f"the fuzzing process exited with status {returncode} before it judged "
                                          f"a program; the end of {log_path}:\n{_tail(log_path)}")
                break                      # it failed without saving an input: no point in restarting
        wall = time.time() - started
        # the session counts every program it judged; libFuzzer's count misses the inputs of a
        # process interrupted before its first status line
        execs = max(libfuzzer_execs, _session_program_count(job.out_dir, started))
        return EngineResult(execs=execs, execs_per_sec=execs / wall if wall else 0.0, wall_s=wall, crashes=crashes,
                            stats={}, command=command)


def _run_until(command: List[str], log, deadline: float, env=None) -> Optional[int]:
    """Run one fuzzing process; its exit status, or None when the deadline stopped it."""
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                               preexec_fn=die_with_parent, env=env)
    try:
        return process.wait(timeout=max(deadline - time.time(), 0.0))
    except subprocess.TimeoutExpired:
        _stop(process)
        return None
    except KeyboardInterrupt:      # its own session does not see the terminal's Ctrl-C
        _stop(process)
        raise


def _stop(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=INTERRUPT_GRACE_S)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(process.pid, signal.SIGKILL)   # compilers it started, and itself if still there
    except ProcessLookupError:
        pass
    process.wait()


def _session_program_count(out_dir: Path, since: float) -> int:
    """Programs judged by the processes of this run (their stats files written since ``since``)."""
    total = 0
    for path in (out_dir / "stats").glob("*.json"):
        if path.stat().st_mtime >= since:
            try:
                total += int(json.loads(path.read_text()).get("programs", 0))
            except (ValueError, OSError):
                continue
    return total


def _tail(path: Path, lines: int = 15) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def _last_exec_count(log_path: Path) -> int:
    """Executions of the latest fuzzing process, from libFuzzer's last status line."""
    count = 0
    for line in log_path.read_text(errors="replace").splitlines():
        if line.startswith("INFO: Running with entropic") or line.startswith("INFO: Seed:"):
            count = 0
        match = STATUS_LINE.match(line)
        if match:
            count = int(match.group(1))
    return count
