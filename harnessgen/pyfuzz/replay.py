"""Judge one program in a child process: a compiled program that dies or hangs
takes only the child with it.

Children come from a fork server (``multiprocessing``'s ``forkserver``) that
imported the compiler's package once, so a replay costs the compile, not the
import. Not a plain fork of the caller: a caller that has run threads (torch's
and OpenMP's pools; a test process that ran eager torch) can leave a lock held
in the child, which then hangs in its first parallel region. A child killed by
a signal is ``POST_CRASH``, one that outlives the timeout ``POST_HANG``.
"""
from __future__ import annotations

import dataclasses
import multiprocessing
import signal
from pathlib import Path
from typing import Dict, Optional, Sequence, Tuple

import numpy as np

from ..outcome import Outcome
from ..procs import die_with_parent
from ..runtime import Tolerance
from .compilers import Compiler, get_compiler
from .oracle import Verdict, judge
from .program import Program

DEFAULT_TIMEOUT_S = 300.0


@dataclasses.dataclass(frozen=True)
class CompilerSpec:
    """What it takes to make the same compiler again in another process."""

    name: str
    work_dir: Path
    passes: Tuple[str, ...] = ()

    def make(self) -> Compiler:
        return get_compiler(self.name, self.work_dir, self.passes)


def _child(conn, spec: CompilerSpec, program_json: Dict, inputs: Dict[str, np.ndarray], tolerance: Tolerance,
           modes: Optional[Sequence[str]]) -> None:
    die_with_parent()
    verdict = judge(spec.make(), Program.from_json(program_json), inputs, tolerance, list(modes) if modes else None)
    conn.send(verdict.to_json())
    conn.close()


# top-level packages the fork server imports before it forks any child
PRELOAD = {"dace": ["dace", "harnessgen.pyfuzz.compilers"], "torch": ["torch", "harnessgen.pyfuzz.compilers"]}


def _context(compiler: str):
    context = multiprocessing.get_context("forkserver")
    # takes effect when the server starts, i.e. at the first replay of this process
    context.set_forkserver_preload(PRELOAD.get(compiler, ["harnessgen.pyfuzz.compilers"]))
    return context


def judge_isolated(spec: CompilerSpec, program: Program, inputs: Dict[str, np.ndarray],
                   tolerance: Tolerance = Tolerance(), modes: Optional[Sequence[str]] = None,
                   timeout_s: float = DEFAULT_TIMEOUT_S) -> Verdict:
    context = _context(spec.name)
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(sender, spec, program.to_json(), inputs, tolerance, modes))
    child.start()
    sender.close()
    try:
        if receiver.poll(timeout_s):
            try:
                return Verdict.from_json(receiver.recv())
            except EOFError:          # the child died before it could answer
                pass
        else:
            child.kill()
            child.join()
            return Verdict(Outcome.POST_HANG, detail=f"no verdict within {timeout_s:.0f} s")
        child.join()
        code = child.exitcode
        if code is not None and code < 0:
            name = signal.Signals(-code).name
            return Verdict(Outcome.POST_CRASH, detail=f"the process died of {name}", error_type=name)
        return Verdict(Outcome.POST_CRASH, detail=f"the process exited with status {code} without a verdict",
                       error_type=f"exit {code}")
    finally:
        receiver.close()
        if child.is_alive():
            child.kill()
        child.join()
