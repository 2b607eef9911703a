"""Stage 3 of pyfuzz: run one program as written and compiled, and judge.

Order of checks, one ``Verdict``:

1. The reference (NumPy / eager torch) runs the program, and every value it
   computes is profiled. A valid program whose reference fails or produces a
   NaN or an infinity anywhere is discarded (``INVALID_INPUT``), never
   reported: compilers may assume finite values (DaCe builds with
   ``-ffast-math``).
2. Each compile mode runs it. On a valid program any exception is
   ``COMPILER_ERROR``. On a program made invalid on purpose (disruptive mode),
   a clear rejection with the reference's own error type is right, a clear
   rejection with another type is ``EXCEPTION_MISMATCH`` (Dynamo's wrappers
   are looked through), an internal error (``KeyError``, ``AssertionError``,
   a backend crash, ...) is ``UNCLEAR_ERROR`` and running it without a word is
   ``ACCEPTED_INVALID``.
3. Outputs of every mode, then the final state of every argument (a program
   may write its inputs), are compared with the reference by the native
   oracle's rule (``runtime.compare``; NaN equals NaN), not bit for bit. A
   float32 value beyond the tolerance is still rounding when the float64
   reference (the program run in float64) is at most ``ROUNDING_FACTOR`` times
   as far from it as the reference's own value. The verdict names the modes
   that differ and the ones that agree: DaCe's ``simplify`` agreeing while
   ``auto_optimize`` differs blames the optimization pipeline.
4. A compiler that keeps what it compiled (torch) is called a second time
   with other values of the same shapes. A raise or a wrong result there, with
   the first call right, is ``GUARD_FAILURE`` when a compile for the second
   values alone gets them right (the kept graph did not fit them and its
   guards let it run), else a ``MISMATCH`` on the second inputs (``call`` 1).

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

from ..core.outcome import Outcome
from ..core.runtime import Tolerance, compare
from .compilers import Compiler
from .mutations import guarded_value
from .program_record import Program

# float32 programs are compared at float32's precision: NumPy and the compiled code may
# round differently in every operation
FLOAT32_TOLERANCE = Tolerance(rtol=Tolerance.rtol32, atol=Tolerance.atol32)
# a float32 value that differs beyond the tolerance is still rounding when it is at most this many
# times as far from the float64 reference as the reference's own value
ROUNDING_FACTOR = 3.0


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
    call: int = 0                        # 1: it shows on the second call (other values, same shapes)

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
    snapshot = {k: np.array(v, copy=True) for k, v in inputs.items()}
    with np.errstate(all="ignore"):
        for stmt in program.stmts:
            exec("\n".join(stmt.lines(program.compiler)), scope, env)
            # a copy now: a later in-place statement may write this value's storage
            value = env[stmt.target.name]
            snapshot[stmt.target.name] = value.detach().clone().numpy() if hasattr(value, "detach") else np.array(value, copy=True)
    return snapshot


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
        return _judge_invalid(compiler, program, inputs, modes, error)
    if not program.valid:
        program.valid = True                         # the rule it broke does not make it invalid here
    if not all_finite(expected):
        return Verdict(Outcome.INVALID_INPUT, detail="the reference computes NaN or infinity")
    calls = [Call(program, inputs, expected, compiler)]
    again = _second_call(compiler, program)
    if again is not None:
        calls.append(again)
    failing, agreeing, first = [], [], None
    for mode in modes:
        try:
            results = compiler.run_calls(program, mode, [call.inputs for call in calls])
        except Exception as error:
            return Verdict(Outcome.COMPILER_ERROR, mode=mode, detail=f"{type(error).__name__}: {_short(error)}",
                           error_type=type(error).__name__, where=_compiler_frame(error, compiler.name))
        difference, call = calls[0].difference(results[0], tolerance), 0
        if difference is None and len(results) > 1:
            stale = _stale(calls[1], results[1], tolerance, compiler, mode)
            if stale is not None:
                # stale only when a compile for the second inputs alone gets them right;
                # otherwise the second inputs just show a plain wrong result
                try:
                    fresh = compiler.run_calls(program, mode, [calls[1].inputs])[0]
                except Exception as error:
                    return Verdict(Outcome.COMPILER_ERROR, mode=mode, call=1, error_type=type(error).__name__,
                                   detail=f"on the second inputs: {type(error).__name__}: {_short(error)}",
                                   where=_compiler_frame(error, compiler.name))
                difference, call = calls[1].difference(fresh, tolerance), 1
                if difference is None:
                    return stale
        if difference is None:
            agreeing.append(mode)
            continue
        failing.append(mode)
        first = first or (mode, difference, call)
    if not failing:
        return Verdict(Outcome.PASS, agreeing_modes=agreeing)
    mode, (index, diff), call = first
    detail = f"{_output_name(program, index)} of {mode} differs from the reference"
    if call:
        detail += " on the second inputs (other values, the same shapes)"
    if agreeing:
        detail += f" ({', '.join(agreeing)} agree{'s' if len(agreeing) == 1 else ''} with it)"
    return Verdict(Outcome.MISMATCH, mode=mode, detail=detail, output=index, difference=diff,
                   failing_modes=failing, agreeing_modes=agreeing, call=call)


def _output_name(program: Program, index: int) -> str:
    """Outputs come first, then the arguments' final states."""
    if index < len(program.outputs):
        return f"output {index}"
    return f"input {program.inputs[index - len(program.outputs)].name} after the call"


@dataclasses.dataclass
class Call:
    """One call of the program: its inputs, the reference's results and, on demand, the
    float64 reference that tells rounding from error."""

    program: Program
    inputs: Dict[str, np.ndarray]
    expected: List[np.ndarray]
    compiler: Compiler
    _wide: Optional[List[np.ndarray]] = None

    def wide(self) -> Optional[List[np.ndarray]]:
        if self._wide is None and self.program.has_float32:
            upcast = {k: v.astype(np.float64) if v.dtype == np.float32 else v for k, v in self.inputs.items()}
            try:
                with np.errstate(all="ignore"):
                    self._wide = self.compiler.reference(self.program.widened(), upcast)
            except Exception:
                self._wide = []
        return self._wide or None

    def difference(self, got: List[np.ndarray], tolerance: Tolerance):
        return _first_difference(self.expected, got, tolerance, self.wide)


def _second_call(compiler: Compiler, program: Program) -> Optional[Call]:
    """Other values of the same shapes, for a compiler that reuses what it compiled: none
    when a guard of the program reads a value that lies near its threshold for them (rounding
    could then pick the other branch)."""
    if not compiler.reuses_compiled:
        return None
    inputs = program.make_inputs(call=1)
    guards = [m.params for m in program.mutations if m.kind == "guard"]
    try:
        with np.errstate(all="ignore"):
            values = profile(program, inputs) if guards else {}
            expected = compiler.reference(program, inputs)
    except Exception:
        return None
    for guard in guards:
        seen = guarded_value(values[guard["probe"]], guard)
        if abs(seen - guard["threshold"]) < 1e-3 * (1 + abs(seen)):
            return None
    if not all_finite(expected):
        return None
    return Call(program, inputs, expected, compiler)


def _stale(call: Call, result, tolerance: Tolerance, compiler: Compiler, mode: str) -> Optional[Verdict]:
    """A GUARD_FAILURE: the first call was right, the second (other values, same shapes)
    raised or computed something else."""
    if isinstance(result, BaseException):
        return Verdict(Outcome.GUARD_FAILURE, mode=mode, failing_modes=[mode], call=1,
                       detail=f"called again with other values: {type(result).__name__}: {_short(result)}",
                       error_type=type(result).__name__, where=_compiler_frame(result, compiler.name))
    difference = call.difference(result, tolerance)
    if difference is None:
        return None
    index, diff = difference
    return Verdict(Outcome.GUARD_FAILURE, mode=mode, output=index, difference=diff, failing_modes=[mode], call=1,
                   detail=f"called again with other values of the same shapes, {_output_name(call.program, index)} "
                          f"of {mode} differs from the reference (the first call agreed, and a compile for "
                          f"these values alone agrees too)")


def _judge_invalid(compiler: Compiler, program: Program, inputs, modes, rejected: BaseException) -> Verdict:
    expected = type(compiler.root_error(rejected)).__name__
    for mode in modes:
        try:
            compiler.run(program, mode, inputs)
        except Exception as error:
            root = compiler.root_error(error)
            if not compiler.is_clear_error(error):
                return Verdict(Outcome.UNCLEAR_ERROR, mode=mode, detail=f"{type(error).__name__}: {_short(error)}",
                               error_type=type(error).__name__, where=_compiler_frame(error, compiler.name))
            if compiler.same_errors_as_reference and type(root).__name__ != expected:
                return Verdict(Outcome.EXCEPTION_MISMATCH, mode=mode, error_type=type(root).__name__,
                               where=_compiler_frame(error, compiler.name),
                               detail=f"the reference raises {expected}, {mode} raises "
                                      f"{type(root).__name__}: {_short(root)}")
        else:
            return Verdict(Outcome.ACCEPTED_INVALID, mode=mode,
                           detail="the compiled program ran although the reference rejects it")
    return Verdict(Outcome.PASS, detail="rejected with a clear error")


def _first_difference(expected: List[np.ndarray], got: List[np.ndarray], tolerance: Tolerance, wide=lambda: None):
    if len(expected) != len(got):
        return (0, {"container": "outputs", "detail": f"{len(got)} outputs instead of {len(expected)}"})
    for index, (want, have) in enumerate(zip(expected, got)):
        if want.shape != have.shape:
            return (index, {"container": f"output {index}", "detail": f"shape {have.shape} instead of {want.shape}"})
        have = have.astype(want.dtype, copy=False)
        difference = compare(f"output {index}", want, have, tolerance_for(want, tolerance))
        if difference is None or (want.dtype == np.float32 and _rounding(want, have, wide, index, tolerance)):
            continue
        return (index, difference.to_json())
    return None


def _rounding(want: np.ndarray, have: np.ndarray, wide, index: int, tolerance: Tolerance) -> bool:
    """True when the float64 reference explains a float32 difference as rounding: at every
    element the compiled value is at most ``ROUNDING_FACTOR`` times as far from it as the
    reference's own (PyTorch's rule for its compiler's tests, element by element)."""
    if tolerance.exact:
        return False
    truth = wide()
    if truth is None or index >= len(truth):
        return False
    exact = truth[index].astype(np.float64)
    with np.errstate(all="ignore"):
        theirs = np.abs(have.astype(np.float64) - exact)
        ours = np.abs(want.astype(np.float64) - exact)
        return bool(np.all(np.isfinite(theirs)) and np.all(theirs <= ROUNDING_FACTOR * ours + tolerance.atol))


def _short(error: BaseException, limit: int = 300) -> str:
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return text[:limit]
