"""Boundary-aware seed inputs: the values where optimizations break first.

Sizes 1 and 2, the largest allowed, primes, and tile / vector widths +-1
(remainder loops): the first three seeds take every size smallest, the largest
prime (a remainder for every tile width) and largest, the others a random
one of these. Data that is zero, constant, a ramp, small integers, random, or
extreme but finite (the float bound, values just above the flush threshold,
alternating signs); every other seed with buffers that start one element off
their 64-byte alignment. Every seed is encoded with the layout, so it
decodes to exactly the intended values. Deterministic for a given RNG seed.

``screen_seeds`` runs seeds through a build's replay binary before fuzzing (a seed that
already crashes is a finding at once) and for the whole-program audit.
"""
from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Tuple

import numpy as np

from ..core import expr as ex, protocol
from .layout import InputLayout

WIDTHS = (2, 4, 8, 16, 32, 64, 128)
PATTERNS = ("zeros", "random", "ones", "ramp", "small_ints", "extremes", "mixed", "sorted")


def _is_prime(n: int) -> bool:
    return n >= 2 and all(n % d for d in range(2, math.isqrt(n) + 1))


def _primes_upto(n: int) -> List[int]:
    return [p for p in range(2, n + 1) if _is_prime(p)]


def symbol_candidates(lo: int, hi: int) -> List[int]:
    """Boundary values of one symbol's range, smallest first, no duplicates."""
    if lo > hi:
        return []
    cands = {lo, hi, lo + 1, hi - 1}
    cands |= {w + d for w in WIDTHS for d in (-1, 0, 1)}
    cands |= set(p for p in _primes_upto(min(hi, 257)) if p >= lo)
    return sorted(c for c in cands if lo <= c <= hi)


def _float_values(pattern: str, n: int, lo: float, hi: float, tiny: float, rng) -> np.ndarray:
    span_lo, span_hi = max(lo, -1e300), min(hi, 1e300)
    if pattern == "zeros":
        v = np.zeros(n)
    elif pattern == "ones":
        v = np.ones(n)
    elif pattern == "ramp":
        v = np.arange(n, dtype=np.float64) + 1.0
    elif pattern == "small_ints":
        v = rng.integers(-3, 4, size=n).astype(np.float64)
    elif pattern == "extremes":
        choices = np.array([span_hi, span_lo, 2 * tiny, -2 * tiny, 1.0, -1.0, 0.5, 1e-3])
        v = choices[rng.integers(0, len(choices), size=n)]
    elif pattern == "mixed":
        v = rng.normal(0.0, 1.0, size=n) * 10.0 ** rng.integers(-3, 4, size=n)
    else:  # random, sorted
        v = rng.uniform(max(span_lo, -1e3), min(span_hi, 1e3), size=n)
        if pattern == "sorted":
            v = np.sort(v)
    # keep every value where it decodes to itself: inside the range, not below the flush threshold
    v = np.clip(v, lo, hi)
    v = np.where((np.abs(v) < tiny) & (v != 0), np.sign(v) * 2 * tiny, v)
    return np.clip(v, lo, hi)


def _int_values(pattern: str, n: int, lo: int, hi: int, rng) -> np.ndarray:
    lo_c, hi_c = max(lo, -(1 << 20)), min(hi, 1 << 20)
    if lo_c > hi_c:
        lo_c = hi_c = lo
    if pattern == "zeros":
        v = np.zeros(n, dtype=np.int64)
    elif pattern == "ones":
        v = np.ones(n, dtype=np.int64)
    elif pattern == "ramp":
        v = np.arange(n, dtype=np.int64)
    elif pattern == "extremes":
        v = np.array([lo, hi], dtype=np.int64)[rng.integers(0, 2, size=n)]
    else:
        v = rng.integers(lo_c, hi_c + 1, size=n, dtype=np.int64)
        if pattern == "sorted":
            v = np.sort(v)
    return np.clip(v, lo, hi)


def sample(layout: InputLayout, count: int = 12, seed: int = 0) -> List[Tuple[str, bytes]]:
    """``count`` named seed inputs for this layout."""
    rng = np.random.default_rng(seed)
    seeds: List[Tuple[str, bytes]] = []
    for i in range(count):
        symbols = _choose_symbols(layout, i, rng)
        if symbols is None:
            continue
        pattern = PATTERNS[i % len(PATTERNS)]
        arrays = pattern_arrays(layout, symbols, pattern, rng)
        # every other seed hands over buffers that start one element off their alignment
        offsets = {c.name: c.itemsize if i % 2 else 0 for c in layout.containers}
        seeds.append((f"hg-seed-{i:02d}-{pattern}", layout.encode(symbols, arrays, offsets)))
    return seeds


# a seed holds at most this much container data: a size that grows fast (``R**K``) at its
# largest makes inputs a run takes minutes over, and the fuzzer finds larger ones where they matter
SEED_INPUT_BYTES = 16 << 20


def _choose_symbols(layout: InputLayout, i: int, rng) -> Optional[Dict[str, int]]:
    """The ``i``-th seed's symbols. Where they size more than ``SEED_INPUT_BYTES`` (a size ``R**K``
    at its largest), the largest value is halved until they fit, within the symbols' ranges;
    else the smallest sizes; None where none fit."""
    env = _pick_symbols(layout, i, rng)
    if env is None or layout.fits(env, SEED_INPUT_BYTES):
        return env
    env = _halved_to_fit(layout, env)
    if env is None:
        env = _pick_symbols(layout, 0, rng)
    return env if env is not None and layout.fits(env, SEED_INPUT_BYTES) else None


def _halved_to_fit(layout: InputLayout, env: Dict[str, int]) -> Optional[Dict[str, int]]:
    env = dict(env)
    while not layout.fits(env, SEED_INPUT_BYTES):
        name = max(sorted(env), key=lambda k: env[k])
        smaller = env[name] // 2
        if smaller == env[name]:
            return None
        env[name] = smaller
    return env if _within_ranges(layout, env) else None


def _within_ranges(layout: InputLayout, env: Dict[str, int]) -> bool:
    for slot in layout.symbols:
        lo, hi = _symbol_bounds(slot, env)
        if not lo <= env[slot.name] <= hi:
            return False
    return True


def _pick_symbols(layout: InputLayout, i: int, rng) -> Optional[Dict[str, int]]:
    env: Dict[str, int] = {}
    for slot in layout.symbols:
        lo, hi = _symbol_bounds(slot, env)
        cands = symbol_candidates(lo, hi)
        if not cands:
            return None
        if i == 0:
            env[slot.name] = cands[0]             # everything smallest
        elif i == 1:                              # everything the largest prime: a remainder for every
            primes = [c for c in cands if _is_prime(c)]                      # tile and vector width
            env[slot.name] = primes[-1] if primes else cands[-1]
        elif i == 2:
            env[slot.name] = cands[-1]            # everything largest
        else:
            env[slot.name] = int(cands[rng.integers(0, len(cands))])
    return env


def unsatisfiable(layout: InputLayout, count: int = 12, seed: int = 0) -> Optional[str]:
    """Why no seed input exists for this layout (a symbol whose range is empty whatever the
    symbols before it take, among the values the sampler tries), or None when one does."""
    rng = np.random.default_rng(seed)
    for i in range(count):
        if _choose_symbols(layout, i, rng) is not None:
            return None
    env: Dict[str, int] = {}
    for slot in layout.symbols:
        lo, hi = _symbol_bounds(slot, env)
        cands = symbol_candidates(lo, hi)
        if not cands:
            return f"{slot.name} has no value in [{lo}, {hi}]" + (f" with {env}" if env else "")
        env[slot.name] = cands[0]
    return "no symbol values satisfy the constraints"


def _symbol_bounds(slot, env: Dict[str, int]) -> Tuple[int, int]:
    """A symbol's range given the symbols before it, clipped to its integer type."""
    info = np.iinfo(slot.dtype)
    return max(ex.evaluate(slot.lo, env), int(info.min)), min(ex.evaluate(slot.hi, env), int(info.max))


def pattern_arrays(layout: InputLayout, symbols: Dict[str, int], pattern: str, rng) -> Dict[str, np.ndarray]:
    counts = layout.counts(symbols)
    arrays = {}
    for slot in layout.containers:
        n = counts[slot.name]
        kind = slot.kind
        if kind == "b":
            values = rng.integers(0, 2, size=n).astype(bool) if pattern != "zeros" else np.zeros(n, bool)
        elif kind in "iu":
            lo, hi = layout._value_bounds(slot, symbols, as_float=False)
            info = np.iinfo(slot.dtype)
            values = _int_values(pattern, n, max(lo, int(info.min)), min(hi, int(info.max)), rng)
        else:
            lo, hi = layout._value_bounds(slot, symbols, as_float=True)
            parts = 2 * n if kind == "c" else n
            values = _float_values(pattern, parts, lo, hi, layout.float_tiny, rng)
            part_type = np.float32 if slot.dtype in ("float32", "complex64") else np.float64
            values = values.astype(part_type)
            if kind == "c":
                values = values.view(slot.dtype)
        arrays[slot.name] = np.asarray(values).astype(slot.dtype)
    return arrays


def translated(source: InputLayout, inputs: List[Tuple[str, bytes]], target: InputLayout,
               seed: int = 0) -> List[Tuple[str, bytes]]:
    """``inputs`` of one layout (a cutout's) carried over to another (the whole program's):
    symbols of the same name keep their values, clamped into the target's ranges; containers of
    the same name and element count keep their contents; everything else is drawn as a random
    seed would be. Inputs the source cannot decode, or that leave a target range empty, are
    dropped."""
    rng = np.random.default_rng(seed)
    out: List[Tuple[str, bytes]] = []
    for name, data in inputs:
        decoded = source.decode(data)
        if decoded is None:
            continue
        symbols = _carried_symbols(target, decoded.symbols, rng)
        if symbols is None:
            continue
        arrays = pattern_arrays(target, symbols, "random", rng)
        for slot in target.containers:
            carried = decoded.arrays.get(slot.name)
            if carried is not None and carried.size == arrays[slot.name].size:
                arrays[slot.name] = carried.astype(slot.dtype).ravel()
        out.append((f"hg-from-{name}", target.encode(symbols, arrays)))
    return out


def _carried_symbols(layout: InputLayout, values: Dict[str, int], rng) -> Optional[Dict[str, int]]:
    env: Dict[str, int] = {}
    for slot in layout.symbols:
        lo, hi = _symbol_bounds(slot, env)
        if lo > hi:
            return None
        wanted = values.get(slot.name)
        env[slot.name] = min(max(int(wanted), lo), hi) if wanted is not None else int(rng.integers(lo, hi + 1))
    return env if layout.fits(env, SEED_INPUT_BYTES) else _halved_to_fit(layout, env)


def random_inputs(count: int = 4, seed: int = 0, length: int = 512) -> List[Tuple[str, bytes]]:
    """Seeds without any knowledge of the layout: random bytes (for measuring what the
    boundary-aware seeds add, and for fuzzing without them)."""
    rng = np.random.default_rng(seed)
    return [(f"hg-random-{i:02d}", rng.integers(0, 256, size=length, dtype=np.uint8).tobytes())
            for i in range(count)]


SEED_MODES = ("boundary", "random", "none")
PROOF_PREFIX = "hg-proof-"      # a proof's counterexamples (prove.counterexample_inputs)
OWN_PREFIXES = ("hg-seed-", "hg-random-", PROOF_PREFIX)


def write(seeds: List[Tuple[str, bytes]], directory: Path) -> List[Path]:
    """Write seeds into ``directory`` (kept: user files there are left alone)."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, data in seeds:
        path = directory / f"{name}.bin"
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
        paths.append(path)
    return paths


def screen_seeds(build, paths: List[Path], timeout_s: float = 20.0, threads: int = 1, repeat: int = 1,
                 deadline: Optional[float] = None, timings: Optional[List[float]] = None):
    """Run every seed with the build's replay binary (until ``deadline``, a ``time.monotonic()``
    value, where one is given): (passing seeds, [(crashing seed, its 1-based position)]).
    ``timings`` gets each run's seconds (the first of each process with its start-up).

    The seeds run in batches, one process for as many as finish (a process per seed was most of
    the screening: 5 ms of start-up against 0.5 ms of running, and more on a busy machine). An
    input that does not finish in its batch (a crash, an exit of its own, the batch's time limit
    or the deadline) runs again alone, as it always did, and its own run decides: a crash is never
    blamed on what an earlier input of the batch left behind, and a hang gets its full
    ``timeout_s``."""
    passing, crashing = [], []
    env = protocol.HarnessEnv(threads=threads, repeat=repeat)
    position, batching = 0, True
    while position < len(paths):
        if deadline is not None and time.monotonic() > deadline:
            break
        rest = paths[position:]
        if batching and len(rest) > 1:
            limit = timeout_s if deadline is None else min(timeout_s, max(deadline - time.monotonic(), 0.0) + 1.0)
            batch = protocol.run_native_batch(build.harness_replay, rest, env, limit)
            # a binary that announces no input (built before batches, or failing before its first):
            # one process per input, as before
            batching = batch.started > 0
            if timings is not None and batch.finished:
                start_up = max(batch.seconds - sum(batch.finished), 0.0) if batch.complete else 0.0
                timings += [batch.finished[0] + start_up] + batch.finished[1:]
            passing += rest[:len(batch.finished)]
            position += len(batch.finished)
            if batch.complete:
                break
            if position >= len(paths):   # every input finished, then the process died: the last runs alone
                position -= 1
                passing.pop()
                if timings is not None:
                    timings.pop()
            if deadline is not None and time.monotonic() > deadline and batch.started == len(batch.finished):
                break                    # cut between two inputs at the deadline: the next was not started in time
        path = paths[position]
        started = time.monotonic()
        crashed = protocol.run_native(build.harness_replay, path, env, timeout_s).crashed
        if timings is not None:
            timings.append(time.monotonic() - started)
        position += 1
        if crashed:
            crashing.append((path, position))
        else:
            passing.append(path)
    return passing, crashing


def own_inputs(layout: InputLayout, make: Callable[[int], Tuple[Dict[str, int], Dict]],
               largest: Iterable[int], why: Optional[List[str]] = None) -> List[Tuple[str, bytes]]:
    """A program's own inputs (``Program.own_inputs``: its benchmark's ``initialize``) at each
    of the ``largest`` sizes, encoded for ``layout``: its symbols from the sizes, each container
    the program's argument of that name where one fits, else zeros. Only inputs that decode to
    those very sizes (within the layout's ranges) are kept; ``why`` collects why the others
    were not."""
    inputs, why = [], why if why is not None else []
    for size in largest:
        try:
            sizes, values = make(size)
            symbols = {s.name: int(sizes[s.name]) for s in layout.symbols}
            counts = layout.counts(symbols)
            arrays = {c.name: _fitting(values.get(c.name), counts[c.name]) for c in layout.containers}
            data = layout.encode(symbols, arrays)
        except Exception as exc:  # noqa: BLE001 -- a size the layout lacks, an initialize that fails
            why.append(f"at largest size {size}: {type(exc).__name__}: {exc}"[:300])
            continue
        decoded = layout.decode(data)
        if decoded is not None and all(int(decoded.symbols[k]) == v for k, v in symbols.items()):
            inputs.append((f"own-inputs-{size}", data))
        else:
            why.append(f"at largest size {size}: the sizes {symbols} lie outside the layout's ranges")
    return inputs


def _fitting(value, count: int) -> np.ndarray:
    """``value`` flattened where it has ``count`` elements, else zeros."""
    flat = np.asarray(value).reshape(-1) if value is not None else np.zeros(0)
    return flat if flat.size == count else np.zeros(count)
