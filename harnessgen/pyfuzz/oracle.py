"""Stage 3 of pyfuzz: run one program as written and compiled, and judge.

Order of checks, one ``Verdict``:

1. The reference (NumPy / eager torch) runs the program, and every value it
   computes is profiled. A valid program whose reference fails or produces a
   NaN or an infinity anywhere is discarded (``INVALID_INPUT``), never
   reported: compilers may assume finite values (DaCe builds with
   ``-ffast-math``).
2. Each compile mode runs it. On a valid program any exception is
   ``COMPILER_ERROR``. On a program made invalid on purpose (disruptive mode),
   a clear rejection (a syntax, type or value error) is right, an internal
   error (``KeyError``, ``AssertionError``, a backend crash, ...) is
   ``UNCLEAR_ERROR`` and running it without a word is ``ACCEPTED_INVALID``.
3. Outputs of every mode are compared with the reference by the native oracle's
   rule (``runtime.compare``; NaN equals NaN). The verdict names the modes that
   differ and the ones that agree: DaCe's ``simplify`` agreeing while
   ``auto_optimize`` differs blames the optimization pipeline.

A compiled program that kills the process (SIGSEGV) or hangs is caught by the
caller: the fuzzing target writes the program before running it, the engine
and triage run it in a child process.
"""
from __future__ import annotations

import dataclasses
import importlib
import os
import traceback
from typing import Dict, List, Optional, Tuple

import numpy as np

from ..outcome import Outcome
from ..runtime import Tolerance, compare
from .compilers import Compiler
from .program import Program

# float32 programs are compared at float32's precision: NumPy and the compiled code may
# round differently in every operation
FLOAT32_TOLERANCE = Tolerance(rtol=1e-4, atol=1e-6)


@dataclasses.dataclass
class Verdict:
    outcome: Outcome
    mode: Optional[str] = None           # the (first) mode that failed
    detail: str = ""
    error_type: Optional[str] = None     # exception class of a compiler failure
    where: Optional[str] = None          # the compiler's innermost frame of that failure
    output: Optional[int] = None         # index of the first differing output
    difference: Optional[Dict] = None
    failing_modes: List[str] = dataclasses.field(default_factory=list)
    agreeing_modes: List[str] = dataclasses.field(default_factory=list)

    @property
    def is_finding(self) -> bool:
        return self.outcome.is_finding

    def signature(self, compiler: str) -> Tuple:
        """What de-duplicates findings: compiler, symptom, and the error type and place or
        the modes that disagree with the reference."""
        if self.outcome == Outcome.MISMATCH:
            return (compiler, self.outcome.name, ",".join(self.failing_modes))
        return (compiler, self.outcome.name, self.mode or "", self.error_type or "", self.where or "")

    def to_json(self) -> Dict:
        out = dataclasses.asdict(self)
        out["outcome"] = self.outcome.name
        return out

    @classmethod
    def from_json(cls, data: Dict) -> "Verdict":
        data = dict(data)
        data["outcome"] = Outcome.parse(data["outcome"])
        return cls(**data)


def tolerance_for(array: np.ndarray, base: Tolerance) -> Tolerance:
    if array.dtype == np.float32 and not base.exact:
        return Tolerance(rtol=max(base.rtol, FLOAT32_TOLERANCE.rtol), atol=max(base.atol, FLOAT32_TOLERANCE.atol))
    return base


def profile(program: Program, inputs: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
    """Every value of the (unmutated) program on ``inputs``, statement by statement."""
    if program.compiler == "torch":
        import torch

        env = {k: torch.from_numpy(v.copy()) for k, v in inputs.items()}
        scope = {"torch": torch}
    else:
        env = {k: v.copy() for k, v in inputs.items()}
        scope = {"np": np}
    with np.errstate(all="ignore"):
        for stmt in program.stmts:
            env[stmt.target.name] = eval(stmt.expression(program.compiler), scope, env)
    return {k: (v.detach().numpy() if hasattr(v, "detach") else np.asarray(v)) for k, v in env.items()}


def all_finite(values) -> bool:
    return all(not (v.dtype.kind in "fc" and not np.isfinite(v).all()) for v in values)


def _compiler_frame(error: BaseException, package: str) -> str:
    """``path/in/package.py:function`` of the innermost traceback frame inside the compiler's
    installed package (not any folder that happens to carry its name)."""
    try:
        root = os.path.dirname(importlib.import_module(package).__file__) + os.sep
    except (ImportError, TypeError):
        return ""
    where = ""
    for frame in traceback.extract_tb(error.__traceback__):
        if frame.filename.startswith(root):
            where = f"{frame.filename[len(root):].replace(os.sep, '/')}:{frame.name}"
    return where


def judge(compiler: Compiler, program: Program, inputs: Dict[str, np.ndarray],
          tolerance: Tolerance = Tolerance(), modes: Optional[List[str]] = None) -> Verdict:
    modes = modes or compiler.modes()
    try:
        with np.errstate(all="ignore"):
            expected = compiler.reference(program, inputs)
    except Exception as error:                       # the reference rejects the program
        if program.valid:
            return Verdict(Outcome.INVALID_INPUT, detail=f"reference failed: {type(error).__name__}: {error}")
        return _judge_invalid(compiler, program, inputs, modes)
    if not program.valid:
        program.valid = True                         # the rule it broke does not make it invalid here
    if not all_finite(expected):
        return Verdict(Outcome.INVALID_INPUT, detail="the reference computes NaN or infinity")
    failing, agreeing, first = [], [], None
    for mode in modes:
        try:
            got = compiler.run(program, mode, inputs)
        except Exception as error:
            return Verdict(Outcome.COMPILER_ERROR, mode=mode, detail=f"{type(error).__name__}: {_short(error)}",
                           error_type=type(error).__name__, where=_compiler_frame(error, compiler.name))
        difference = _first_difference(expected, got, tolerance)
        if difference is None:
            agreeing.append(mode)
            continue
        failing.append(mode)
        first = first or (mode, difference)
    if not failing:
        return Verdict(Outcome.PASS, agreeing_modes=agreeing)
    mode, (index, diff) = first
    detail = f"output {index} of {mode} differs from the reference"
    if agreeing:
        detail += f" ({', '.join(agreeing)} agree{'s' if len(agreeing) == 1 else ''} with it)"
    return Verdict(Outcome.MISMATCH, mode=mode, detail=detail, output=index, difference=diff,
                   failing_modes=failing, agreeing_modes=agreeing)


def _judge_invalid(compiler: Compiler, program: Program, inputs, modes) -> Verdict:
    for mode in modes:
        try:
            compiler.run(program, mode, inputs)
        except Exception as error:
            if compiler.is_clear_error(error):
                continue
            return Verdict(Outcome.UNCLEAR_ERROR, mode=mode, detail=f"{type(error).__name__}: {_short(error)}",
                           error_type=type(error).__name__, where=_compiler_frame(error, compiler.name))
        else:
            return Verdict(Outcome.ACCEPTED_INVALID, mode=mode,
                           detail="the compiled program ran although the reference rejects it")
    return Verdict(Outcome.PASS, detail="rejected with a clear error")


def _first_difference(expected: List[np.ndarray], got: List[np.ndarray], tolerance: Tolerance):
    if len(expected) != len(got):
        return (0, {"container": "outputs", "detail": f"{len(got)} outputs instead of {len(expected)}"})
    for index, (want, have) in enumerate(zip(expected, got)):
        if want.shape != have.shape:
            return (index, {"container": f"output {index}", "detail": f"shape {have.shape} instead of {want.shape}"})
        difference = compare(f"output {index}", want, have.astype(want.dtype, copy=False),
                             tolerance_for(want, tolerance))
        if difference is not None:
            return (index, difference.to_json())
    return None


def _short(error: BaseException, limit: int = 300) -> str:
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return text[:limit]
