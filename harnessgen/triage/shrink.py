"""Minimize a failing input while it still reproduces the same finding.

First ``afl-tmin`` on the raw bytes (kept only if it preserves the finding), then
semantic passes on the decoded values, in the spirit of Hypothesis' shrinker:
small named passes, each proposing simpler candidates and keeping one only when
the predicate still holds, repeated until none makes progress:

* ``symbols``   every symbol to its smallest failing value (arrays follow: the
                leading block of each array is kept)
* ``zeros``     a whole array to zero
* ``constant``  a whole array to one simple constant
* ``sparsify``  chunks of an array to zero, halving the chunk size (few non-zeros)
* ``values``    each remaining value toward a simple number (0, +-1, an integer,
                fewer significant digits)

Every candidate goes through ``layout.encode`` and ``layout.decode``, so what is
tested is always a valid input, and the result is canonical: exactly the bytes
the decoder consumes.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

from ..core import expr as ex
from ..inputs.layout import DecodedInput, InputLayout

Predicate = Callable[[bytes], bool]


@dataclasses.dataclass
class ShrinkStats:
    bytes_before: int
    bytes_after: int = 0
    tmin_bytes: Optional[int] = None
    candidates: int = 0
    accepted: int = 0
    seconds: float = 0.0
    passes: Dict[str, int] = dataclasses.field(default_factory=dict)


def afl_tmin(harness_afl: Path, data: bytes, timeout_s: float = 60.0) -> Optional[bytes]:
    """afl-tmin's byte-level minimization (any crash counts for it); None if unavailable."""
    tool = shutil.which("afl-tmin")
    if tool is None or not Path(harness_afl).exists():
        return None
    with tempfile.TemporaryDirectory(prefix="hg-tmin-") as tmp:
        src, dst = Path(tmp) / "in", Path(tmp) / "out"
        src.write_bytes(data)
        env = {**os.environ, "AFL_QUIET": "1", "AFL_SKIP_CPUFREQ": "1", "OMP_NUM_THREADS": "1",
               "AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES": "1"}
        try:
            subprocess.run([tool, "-i", str(src), "-o", str(dst), "--", str(harness_afl)], capture_output=True,
                           timeout=timeout_s, env=env)
        except subprocess.TimeoutExpired:
            return None
        return dst.read_bytes() if dst.exists() else None


class Shrinker:
    def __init__(self, layout: InputLayout, predicate: Predicate, budget: int = 3000,
                 deadline_s: float = 120.0):
        self.layout = layout
        self.predicate = predicate
        self.budget = budget
        self.deadline = time.monotonic() + deadline_s
        self.stats: Optional[ShrinkStats] = None
        self._tried: set = set()

    # ------------------------------------------------------------ driver
    def shrink(self, data: bytes, harness_afl: Optional[Path] = None) -> Tuple[bytes, ShrinkStats]:
        started = time.monotonic()
        self.stats = ShrinkStats(bytes_before=len(data))
        if harness_afl is not None and self.budget > 0:     # a budget of 0 asks for no shrinking at all
            reduced = afl_tmin(harness_afl, data)
            if reduced is not None:
                self.stats.tmin_bytes = len(reduced)
                if len(reduced) < len(data) and self._test(reduced):
                    data = reduced
        state = self.layout.decode(data)
        if state is None:
            raise ValueError("the input to shrink is unsatisfiable")
        passes = [("symbols", self._pass_symbols), ("offsets", self._pass_offsets), ("zeros", self._pass_zeros),
                  ("constant", self._pass_constant), ("sparsify", self._pass_sparsify), ("values", self._pass_values)]
        progress = True
        while progress and not self._exhausted():
            progress = False
            for name, run in passes:
                new_state = run(state)
                if new_state is not None:
                    state = new_state
                    self.stats.passes[name] = self.stats.passes.get(name, 0) + 1
                    progress = True
        # trailing zero bytes are what the decoder reads past the end anyway
        best = self.layout.encode(state.symbols, state.arrays, state.offsets).rstrip(b"\0")
        self.stats.bytes_after = len(best)
        self.stats.seconds = round(time.monotonic() - started, 3)
        return best, self.stats

    def _exhausted(self) -> bool:
        return self.stats.candidates >= self.budget or time.monotonic() > self.deadline

    def _test(self, data: bytes) -> bool:
        if data in self._tried or self._exhausted():
            return False
        self._tried.add(data)
        self.stats.candidates += 1
        ok = bool(self.predicate(data))
        self.stats.accepted += ok
        return ok

    def _try(self, symbols: Dict[str, int], arrays: Dict[str, np.ndarray],
             current: DecodedInput) -> Optional[DecodedInput]:
        """Encode a candidate, normalise it through the decoder; keep it if it is simpler than
        ``current`` and still fails the same way."""
        return self._try_offsets(symbols, arrays, current.offsets, current)

    def _try_offsets(self, symbols, arrays, offsets, current: DecodedInput) -> Optional[DecodedInput]:
        decoded = self.layout.decode(self.layout.encode(symbols, arrays, offsets))
        if decoded is None or not simpler(decoded, current):
            return None
        canonical = self.layout.encode(decoded.symbols, decoded.arrays, decoded.offsets)
        return decoded if self._test(canonical) else None

    # ------------------------------------------------------------ passes
    def _pass_symbols(self, state: DecodedInput) -> Optional[DecodedInput]:
        changed = None
        for slot in self.layout.symbols:
            current = state.symbols[slot.name]
            lo = ex.evaluate(slot.lo, state.symbols)
            for value in _smaller_values(lo, current):
                symbols = {**state.symbols, slot.name: value}
                accepted = None
                # differences often sit at the end of an array: keeping only the leading block
                # would lose them, so the trailing block and plain ones are tried as well
                for keep in ("leading", "trailing", "ones"):
                    arrays = self._resized(state, symbols, keep)
                    accepted = None if arrays is None else self._try(symbols, arrays, state)
                    if accepted is not None:
                        break
                if accepted is not None:
                    state = changed = accepted
                    break
        return changed

    def _resized(self, state: DecodedInput, symbols: Dict[str, int],
                 keep: str = "leading") -> Optional[Dict[str, np.ndarray]]:
        """Arrays for new symbol values: the leading (or trailing) block of each old array,
        zero-padded, or all ones."""
        try:
            counts = self.layout.counts(symbols)
        except Exception:  # a bound that cannot be evaluated for these values
            return None
        arrays = {}
        for slot in self.layout.containers:
            old = state.arrays[slot.name]
            n = counts[slot.name]
            old_shape = self.layout.shape(slot.name, state.symbols)
            new_shape = self.layout.shape(slot.name, symbols)
            if keep == "ones":
                arrays[slot.name] = np.ones(n, dtype=old.dtype)
            elif (old_shape and int(np.prod(old_shape)) == old.size and new_shape
                    and int(np.prod(new_shape)) == n and len(old_shape) == len(new_shape)):
                grown = np.zeros(new_shape, dtype=old.dtype)
                target = tuple(slice(0, min(a, b)) for a, b in zip(old_shape, new_shape))
                if keep == "trailing":
                    source = tuple(slice(a - min(a, b), a) for a, b in zip(old_shape, new_shape))
                else:
                    source = target
                grown[target] = old.reshape(old_shape)[source]
                arrays[slot.name] = grown.ravel()
            else:
                flat = np.zeros(n, dtype=old.dtype)
                flat[:min(n, old.size)] = old[:min(n, old.size)]
                arrays[slot.name] = flat
            arrays[slot.name] = self._clipped(slot, arrays[slot.name], symbols)
        return arrays

    def _clipped(self, slot, values: np.ndarray, symbols: Dict[str, int]) -> np.ndarray:
        """Values clipped into ranges that depend on symbols: an index at the top of its range
        stays at the top (the decoder would fold it somewhere else)."""
        if slot.lo is None or values.dtype.kind not in "iuf" or not (slot.lo.symbols() | slot.hi.symbols()):
            return values
        as_float = values.dtype.kind == "f"
        lo, hi = ex.evaluate(slot.lo, symbols, as_float), ex.evaluate(slot.hi, symbols, as_float)
        return np.clip(values, lo, hi).astype(values.dtype) if lo <= hi else values

    def _with(self, state: DecodedInput, name: str, values: np.ndarray) -> Optional[DecodedInput]:
        arrays = {**state.arrays, name: values}
        return self._try(state.symbols, arrays, state)

    def _pass_offsets(self, state: DecodedInput) -> Optional[DecodedInput]:
        """Buffers back to aligned starts, or to the smallest misalignment (one element)."""
        changed = None
        for slot in self.layout.containers:
            current = state.offsets.get(slot.name, 0)
            for offset in sorted({0, slot.itemsize} - {current}):
                if offset >= current:
                    continue
                accepted = self._try_offsets(state.symbols, state.arrays, {**state.offsets, slot.name: offset}, state)
                if accepted is not None:
                    state = changed = accepted
                    break
        return changed

    def _pass_zeros(self, state: DecodedInput) -> Optional[DecodedInput]:
        changed = None
        for slot in self.layout.containers:
            values = state.arrays[slot.name]
            if values.size and np.any(values != 0):
                accepted = self._with(state, slot.name, np.zeros_like(values))
                if accepted is not None:
                    state = changed = accepted
        return changed

    def _pass_constant(self, state: DecodedInput) -> Optional[DecodedInput]:
        changed = None
        for slot in self.layout.containers:
            values = state.arrays[slot.name]
            if values.size < 2 or np.all(values == values.flat[0]):
                continue
            for constant in _simple_constants(values):
                accepted = self._with(state, slot.name, np.full_like(values, constant))
                if accepted is not None:
                    state = changed = accepted
                    break
        return changed

    def _pass_sparsify(self, state: DecodedInput) -> Optional[DecodedInput]:
        changed = None
        for slot in self.layout.containers:
            values = state.arrays[slot.name]
            chunk = max(1, values.size // 2)
            while chunk >= 1 and not self._exhausted():
                start = 0
                while start < values.size:
                    piece = values[start:start + chunk]
                    if np.any(piece != 0):
                        candidate = values.copy()
                        candidate[start:start + chunk] = 0
                        accepted = self._with(state, slot.name, candidate)
                        if accepted is not None:
                            state = changed = accepted
                            values = state.arrays[slot.name]
                    start += chunk
                chunk //= 2
        return changed

    def _pass_values(self, state: DecodedInput) -> Optional[DecodedInput]:
        changed = None
        for slot in self.layout.containers:
            values = state.arrays[slot.name]
            for index in np.flatnonzero(values != 0)[:512]:
                if self._exhausted():
                    return changed
                for simpler in _simpler_values(values[index]):
                    candidate = values.copy()
                    candidate[index] = simpler
                    if candidate[index] == values[index]:
                        continue
                    accepted = self._with(state, slot.name, candidate)
                    if accepted is not None:
                        state = changed = accepted
                        values = state.arrays[slot.name]
                        break
        return changed


def _value_cost(values: np.ndarray) -> float:
    """How hard values are to read: 0 is free, small integers are cheap, long decimals dear."""
    if values.size == 0 or values.dtype == bool:
        return float(np.count_nonzero(values))
    parts = values.view(np.float64 if values.dtype == np.complex128 else np.float32) if values.dtype.kind == "c" \
        else values
    cost = 0.0
    for v in parts[parts != 0].astype(np.float64):
        digits = len(f"{abs(v):.15g}".replace(".", "").replace("e", "").lstrip("0"))
        cost += 1.0 + digits + (0.0 if float(v).is_integer() and abs(v) < 1e6 else 4.0) + min(abs(v), 1e3) / 1e3
    return cost


def complexity(decoded: DecodedInput) -> Tuple:
    """The shrink order: fewer symbol units, then fewer non-zeros, then aligned buffers, then simpler values."""
    arrays = list(decoded.arrays.values())
    return (sum(abs(int(v)) for v in decoded.symbols.values()),
            sum(int(np.count_nonzero(a)) for a in arrays),
            sum(decoded.offsets.values()),
            round(sum(_value_cost(a) for a in arrays), 6))


def simpler(candidate: DecodedInput, current: DecodedInput) -> bool:
    return complexity(candidate) < complexity(current)


def _smaller_values(lo: int, current: int) -> List[int]:
    """Candidates below ``current``, smallest first: all of them when few, else a sample."""
    if current <= lo:
        return []
    if current - lo <= 24:
        return list(range(lo, current))
    head = list(range(lo, lo + 16))
    span = current - lo
    return head + sorted({lo + span * k // 8 for k in range(1, 8)} - set(head))


def _simple_constants(values: np.ndarray) -> List:
    if values.dtype == bool:
        return [True]
    first = values.flat[np.flatnonzero(values != 0)[0]] if np.any(values != 0) else values.flat[0]
    return [1, -1, 2, first]


def _simpler_values(x) -> List:
    """Numbers a person reads more easily than x, simplest first: small integers (of x's sign),
    x rounded to an integer, x with one to three significant digits."""
    if isinstance(x, (np.bool_, bool)):
        return []
    if np.iscomplexobj(x):
        return [complex(np.round(x.real), np.round(x.imag))]
    v = float(x)
    if not np.isfinite(v):
        return [0.0, 1.0]
    sign = -1.0 if v < 0 else 1.0
    out = [sign * 1.0, sign * 2.0, float(np.round(v))]
    out += [float(f"{v:.{digits}g}") for digits in (1, 2, 3)]
    return [c for i, c in enumerate(out) if c != v and c not in out[:i]]
