"""Replay an input through cffi: decode with NumPy, run libpre/libpost, compare.

``replay(build_dir, data)`` runs the replay in a child process, so a post that
segfaults or hangs cannot take the tool down, and classifies the result:
``PASS``, ``MISMATCH``, ``OOB_WRITE``, ``POST_CRASH``, ``POST_HANG`` or
``INVALID_INPUT`` (pre itself failed: a missing constraint, not a bug of the
transformation). The child reports its progress on stdout, one JSON object a
line, so the parent knows whether pre had finished when it died.

``python -m harnessgen.replay BUILD_DIR INPUT`` is the child.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np

from .emit import CTYPES, GUARD_BYTES
from .errors import Unsupported
from .layout import DecodedInput, InputLayout
from .oracle import Tolerance, compare
from .outcome import Outcome

CANARY = 0xA5
DEFAULT_TIMEOUT_S = 20.0


@dataclasses.dataclass
class ReplayResult:
    outcome: Outcome
    satisfiable: bool = True
    container: Optional[str] = None
    detail: Dict = dataclasses.field(default_factory=dict)
    symbols: Dict[str, int] = dataclasses.field(default_factory=dict)
    message: str = ""

    def to_json(self):
        out = dataclasses.asdict(self)
        out["outcome"] = self.outcome.name
        return out

    def describe(self) -> str:
        if self.outcome == Outcome.MISMATCH:
            d = self.detail
            where = ", ".join(str(i) for i in d.get("multi_index", [d.get("index")]))
            return (f"MISMATCH in {self.container}[{where}]: pre={d.get('pre')!r} "
                    f"post={d.get('post')!r} ({d.get('differing')} of {d.get('total')} elements differ, "
                    f"max |diff| {d.get('max_abs_diff')!r})")
        if self.outcome == Outcome.OOB_WRITE:
            return (f"OOB_WRITE: post wrote outside {self.container} (byte offset {self.detail.get('offset')} "
                    f"of a {self.detail.get('bytes')}-byte buffer)")
        if not self.satisfiable:
            return "input is unsatisfiable under the constraints (never run)"
        return f"{self.outcome.name}{': ' + self.message if self.message else ''}"


# ---------------------------------------------------------------- parent side
def replay(build_dir: Path, data: bytes, tolerance: Optional[Tolerance] = None,
           timeout_s: float = DEFAULT_TIMEOUT_S, scratch: Optional[Path] = None) -> ReplayResult:
    """Replay ``data`` against the build in a child process and classify the outcome."""
    build_dir = Path(build_dir)
    scratch = Path(scratch or build_dir)
    scratch.mkdir(parents=True, exist_ok=True)
    input_path = scratch / f".replay-{os.getpid()}-{hashlib.sha1(data).hexdigest()[:12]}.bin"
    input_path.write_bytes(data)
    cmd = [sys.executable, "-m", "harnessgen.replay", str(build_dir), str(input_path)]
    if tolerance is not None:
        cmd += ["--rtol", repr(tolerance.rtol), "--atol", repr(tolerance.atol)] + (["--exact"] if tolerance.exact else [])
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired as exc:
        stages = _stages(exc.stdout or "")
        if "pre_done" in stages:
            return ReplayResult(Outcome.POST_HANG, message=f"post ran longer than {timeout_s:g} s")
        return ReplayResult(Outcome.INVALID_INPUT, message=f"pre ran longer than {timeout_s:g} s")
    finally:
        input_path.unlink(missing_ok=True)
    stages = _stages(proc.stdout)
    if "result" in stages:
        return _from_json(stages["result"])
    died = _signal_name(proc.returncode)
    if "pre_done" in stages:
        return ReplayResult(Outcome.POST_CRASH, message=f"post died ({died})", symbols=stages["pre_done"].get("symbols", {}))
    if "decoded" in stages:
        return ReplayResult(Outcome.INVALID_INPUT, message=f"pre died ({died})")
    raise RuntimeError(f"replay child failed before running anything ({died}):\n{proc.stderr[-2000:]}")


def _stages(stdout: str) -> Dict[str, Dict]:
    out = {}
    for line in (stdout or "").splitlines():
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and "stage" in obj:
            out[obj["stage"]] = obj
    return out


def _signal_name(returncode: int) -> str:
    if returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return f"signal {-returncode}"
    return f"exit status {returncode}"


def _from_json(obj: Dict) -> ReplayResult:
    return ReplayResult(outcome=Outcome[obj["outcome"]], satisfiable=obj["satisfiable"], container=obj["container"],
                        detail=obj["detail"], symbols=obj["symbols"], message=obj["message"])


# ---------------------------------------------------------------- child side
class _Side:
    """One shared library (libpre.so or libpost.so) loaded through cffi."""

    def __init__(self, lib_path: Path, spec: Dict, layout: InputLayout):
        import cffi

        self.name = spec["name"]
        self.init_args: List[str] = spec["init_args"]
        self.program_args: List[tuple] = [tuple(a) for a in spec["program_args"]]
        symbols = {s.name: s.dtype for s in layout.symbols}
        containers = {c.name: c.dtype for c in layout.containers}
        self.types = {**{k: CTYPES[v] for k, v in symbols.items()}, **{k: CTYPES[v] for k, v in containers.items()}}
        for name, _ in self.program_args + [(a, False) for a in self.init_args]:
            if self.types.get(name, "").startswith("std::"):
                raise Unsupported(f"{name}: complex values passed by value cannot be replayed through cffi")
        init_params = ", ".join(f"{self.types[a]} {a}" for a in self.init_args) or "void"
        prog_params = "".join(f", {'void *' if ptr else self.types[a] + ' '}{a}" for a, ptr in self.program_args)
        self.ffi = cffi.FFI()
        self.ffi.cdef(f"void *__dace_init_{self.name}({init_params});\n"
                      f"int __dace_exit_{self.name}(void *state);\n"
                      f"void __program_{self.name}(void *state{prog_params});")
        self.lib = self.ffi.dlopen(str(lib_path))

    def run(self, decoded: DecodedInput, buffers: Dict[str, "_Guarded"]) -> bool:
        init = getattr(self.lib, f"__dace_init_{self.name}")
        program = getattr(self.lib, f"__program_{self.name}")
        done = getattr(self.lib, f"__dace_exit_{self.name}")
        state = init(*[self._value(a, decoded, buffers) for a in self.init_args])
        if state == self.ffi.NULL:
            return False
        args = []
        for name, is_pointer in self.program_args:
            if is_pointer:
                args.append(buffers[name].pointer(self.ffi))
            else:
                args.append(self._value(name, decoded, buffers))
        program(state, *args)
        done(state)
        return True

    @staticmethod
    def _value(name: str, decoded: DecodedInput, buffers: Dict[str, "_Guarded"]):
        if name in decoded.symbols:
            return int(decoded.symbols[name])
        return buffers[name].data[0].item()


class _Guarded:
    """A container's data with guard zones on both sides, as the C++ harness allocates it."""

    def __init__(self, values: np.ndarray):
        nbytes = values.nbytes
        self.raw = np.full(GUARD_BYTES + nbytes + GUARD_BYTES + 64, CANARY, dtype=np.uint8)
        # align the data start to 64 bytes, as aligned_alloc in the harness does
        start = (-self.raw.ctypes.data) % 64 + GUARD_BYTES
        self.start = start
        self.nbytes = nbytes
        self.data = self.raw[start:start + nbytes].view(values.dtype)
        self.data[...] = values

    def pointer(self, ffi):
        """The data start as a C pointer (valid for empty containers too)."""
        return ffi.cast("char *", ffi.from_buffer(self.raw)) + self.start

    def first_corruption(self) -> Optional[int]:
        before = self.raw[self.start - GUARD_BYTES:self.start]
        after = self.raw[self.start + self.nbytes:self.start + self.nbytes + GUARD_BYTES]
        bad = np.flatnonzero(before != CANARY)
        if bad.size:
            return int(bad[0]) - GUARD_BYTES
        bad = np.flatnonzero(after != CANARY)
        if bad.size:
            return self.nbytes + int(bad[0])
        return None


def replay_in_process(build_dir: Path, data: bytes, tolerance: Tolerance, progress=None) -> ReplayResult:
    """Decode, run pre then post on guarded copies, compare. ``progress(stage, info)`` is told
    when decoding and pre are done (the parent uses it to attribute a crash)."""
    from .build import HarnessBuild

    progress = progress or (lambda stage, info: None)
    build = HarnessBuild.open(build_dir)
    layout = build.layout
    decoded = layout.decode(data)
    if decoded is None:
        return ReplayResult(Outcome.PASS, satisfiable=False)
    symbols = {k: int(v) for k, v in decoded.symbols.items()}
    progress("decoded", {"symbols": symbols})
    pre_side = _Side(build.libpre, build.manifest["pre"], layout)
    post_side = _Side(build.libpost, build.manifest["post"], layout)
    pre_bufs = {name: _Guarded(values) for name, values in decoded.arrays.items()}
    post_bufs = {name: _Guarded(values) for name, values in decoded.arrays.items()}
    if not pre_side.run(decoded, pre_bufs):
        return ReplayResult(Outcome.INVALID_INPUT, symbols=symbols, message="pre's initialization failed")
    name, offset = _corrupted_guard(pre_bufs)
    if name is not None:
        return ReplayResult(Outcome.INVALID_INPUT, container=name, symbols=symbols,
                            detail={"offset": offset}, message=f"pre wrote outside {name}")
    progress("pre_done", {"symbols": symbols})
    if not post_side.run(decoded, post_bufs):
        return ReplayResult(Outcome.POST_CRASH, symbols=symbols, message="post's initialization failed")
    name, offset = _corrupted_guard(post_bufs)
    if name is not None:
        return ReplayResult(Outcome.OOB_WRITE, container=name, symbols=symbols,
                            detail={"offset": offset, "bytes": post_bufs[name].nbytes})
    for slot in layout.containers:
        diff = compare(slot.name, pre_bufs[slot.name].data, post_bufs[slot.name].data, tolerance)
        if diff is not None:
            detail = diff.to_json()
            detail["multi_index"] = _multi_index(layout, slot, symbols, diff.index)
            return ReplayResult(Outcome.MISMATCH, container=slot.name, symbols=symbols, detail=detail)
    return ReplayResult(Outcome.PASS, symbols=symbols)


def _corrupted_guard(buffers: Dict[str, _Guarded]):
    """(container, byte offset) of the first guard zone written into, or (None, None)."""
    for name, buf in buffers.items():
        offset = buf.first_corruption()
        if offset is not None:
            return name, offset
    return None, None


def execute(build_dir: Path, decoded: DecodedInput, side: str = "pre") -> Dict[str, np.ndarray]:
    """Run one side in this process on decoded inputs and return every container after it
    (for checking programs against references; crashes take the caller down)."""
    from .build import HarnessBuild

    build = HarnessBuild.open(build_dir)
    lib = build.libpre if side == "pre" else build.libpost
    runner = _Side(lib, build.manifest[side], build.layout)
    buffers = {name: _Guarded(values) for name, values in decoded.arrays.items()}
    if not runner.run(decoded, buffers):
        raise RuntimeError(f"{side}'s initialization failed")
    return {name: buf.data.copy() for name, buf in buffers.items()}


def _multi_index(layout: InputLayout, slot, symbols, flat: int):
    element = flat // 2 if slot.kind == "c" else flat
    shape = layout.shape(slot.name, symbols)
    if shape and int(np.prod(shape)) == layout.counts(symbols)[slot.name]:
        return [int(i) for i in np.unravel_index(element, shape)]
    return [element]


def _main(argv: List[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m harnessgen.replay")
    parser.add_argument("build_dir")
    parser.add_argument("input")
    parser.add_argument("--rtol", type=float)
    parser.add_argument("--atol", type=float)
    parser.add_argument("--exact", action="store_true")
    args = parser.parse_args(argv)
    from .build import HarnessBuild

    oracle = HarnessBuild.open(Path(args.build_dir)).manifest["oracle"]
    tol = Tolerance(rtol=args.rtol if args.rtol is not None else oracle["rtol"],
                    atol=args.atol if args.atol is not None else oracle["atol"],
                    exact=args.exact or oracle["exact"])

    def progress(stage, info):
        print(json.dumps({"stage": stage, **info}), flush=True)

    result = replay_in_process(Path(args.build_dir), Path(args.input).read_bytes(), tol, progress)
    print(json.dumps({"stage": "result", **result.to_json()}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
