"""Running pre and post from Python, standalone (stdlib, numpy and cffi only).

harnessgen's replay imports this module; every reproducer (``repro.py``)
carries a verbatim copy of it, so the two cannot drift apart. Nothing here
may import harnessgen.

* ``parse_prototypes``  argument order of DaCe's entry points, from its header
* ``GuardedBuffer``     a container's data between two guard zones, laid out as
                        the C++ harness lays it out
* ``SideLibrary``       one DaCe-generated shared library loaded through cffi
* ``Tolerance`` / ``differing`` / ``compare``  the oracle (the same rule as
                        ``hg_compare`` in templates/harness.cpp.j2)
"""
import dataclasses
import re
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

GUARD_BYTES = 1024
CANARY = 0xA5
_INTACT_ZONE = bytes([CANARY]) * GUARD_BYTES

CTYPES = {
    "float64": "double", "float32": "float", "int8": "int8_t", "int16": "int16_t", "int32": "int32_t",
    "int64": "int64_t", "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t", "bool": "bool",
    "complex64": "std::complex<float>", "complex128": "std::complex<double>",
}


# ---------------------------------------------------------------- DaCe's header
def _split_params(text: str) -> List[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def parse_prototypes(name: str, header: str) -> Tuple[List[str], List[Tuple[str, bool]]]:
    """(init argument names, [(program argument name, is_pointer)]) of ``name`` in DaCe's header."""
    init = re.search(r"__dace_init_%s\((.*?)\);" % re.escape(name), header, re.S)
    prog = re.search(r"__program_%s\((.*?)\);" % re.escape(name), header, re.S)
    if not init or not prog:
        raise RuntimeError("cannot find the entry points of %s in DaCe's header" % name)

    def names(params):
        out = []
        for p in params:
            if p and p != "void":
                out.append((re.findall(r"[A-Za-z_]\w*", p)[-1], "*" in p or "&" in p))
        return out

    init_args = [n for n, _ in names(_split_params(init.group(1)))]
    return init_args, names(_split_params(prog.group(1)))[1:]  # [1:]: the state handle


# ---------------------------------------------------------------- guard zones
class GuardedBuffer:
    """Data of one container with GUARD_BYTES of canary bytes on both sides: the allocation is
    64-byte aligned and the data starts ``offset`` bytes past the first guard zone."""

    def __init__(self, values: np.ndarray, offset: int = 0, canary: int = CANARY, guard: int = GUARD_BYTES):
        # ``canary``, ``guard``: other bytes and wider zones, for the probe of what pre reads
        # around its containers (``replay.pre_reads_outside``); guard zones are checked only
        # at their defaults
        self.nbytes = values.nbytes
        self.offset = offset
        self.raw = np.full(guard + offset + self.nbytes + guard + 64, canary, dtype=np.uint8)
        self.start = (-self.raw.ctypes.data) % 64 + guard + offset
        self.data = self.raw[self.start:self.start + self.nbytes].view(values.dtype)
        self.data[...] = values.reshape(-1)

    def pointer(self, ffi):
        """The data start as a C pointer (valid for empty containers too)."""
        return ffi.cast("char *", ffi.from_buffer(self.raw)) + self.start

    def first_corruption(self) -> Optional[int]:
        """Byte offset (relative to the data start) of the first overwritten guard byte."""
        end = self.start + self.nbytes
        if self.raw[self.start - GUARD_BYTES:self.start].tobytes() == _INTACT_ZONE and \
                self.raw[end:end + GUARD_BYTES].tobytes() == _INTACT_ZONE:
            return None            # (the usual case, in one comparison per zone)
        bad = np.flatnonzero(self.raw[self.start - GUARD_BYTES:self.start] != CANARY)
        if bad.size:
            return int(bad[0]) - GUARD_BYTES
        bad = np.flatnonzero(self.raw[self.start + self.nbytes:self.start + self.nbytes + GUARD_BYTES] != CANARY)
        if bad.size:
            return self.nbytes + int(bad[0])
        return None


def first_corrupted(buffers: Dict[str, GuardedBuffer]):
    """(container, byte offset) of the first guard zone written into, or (None, None)."""
    for name, buf in buffers.items():
        offset = buf.first_corruption()
        if offset is not None:
            return name, offset
    return None, None


# ---------------------------------------------------------------- OpenMP threads
_OMP = None


def set_threads(n: int) -> None:
    """How many OpenMP threads the loaded libraries use from now on (libomp or libgomp)."""
    global _OMP
    if _OMP is None:
        import ctypes
        import ctypes.util

        # the usual names first: find_library runs ldconfig (8 ms, every replay child)
        for find in (lambda: "libomp.so.5", lambda: "libomp.so", lambda: ctypes.util.find_library("omp"),
                     lambda: "libgomp.so.1", lambda: ctypes.util.find_library("gomp")):
            name = find()
            if not name:
                continue
            try:
                _OMP = ctypes.CDLL(name)
                break
            except OSError:
                continue
        if _OMP is None:
            raise RuntimeError("no OpenMP runtime (libomp or libgomp) found to set the thread count")
    _OMP.omp_set_num_threads(int(n))


# ---------------------------------------------------------------- one side
class SideLibrary:
    """A DaCe-generated library (``__dace_init_<name>``, ``__program_<name>``, ``__dace_exit_<name>``)."""

    def __init__(self, lib_path: str, name: str, init_args: Sequence[str],
                 program_args: Sequence[Tuple[str, bool]], dtypes: Dict[str, str]):
        import cffi

        self.name = name
        self.init_args = list(init_args)
        self.program_args = [tuple(a) for a in program_args]
        self.types = {k: CTYPES[v] for k, v in dtypes.items()}
        for arg in self.init_args + [a for a, ptr in self.program_args if not ptr]:
            if self.types.get(arg, "").startswith("std::"):
                raise NotImplementedError("%s: complex values passed by value cannot go through cffi" % arg)
        init_params = ", ".join("%s %s" % (self.types[a], a) for a in self.init_args) or "void"
        prog_params = "".join(", %s%s" % ("void *" if ptr else self.types[a] + " ", a) for a, ptr in self.program_args)
        self.ffi = cffi.FFI()
        self.ffi.cdef("void *__dace_init_%s(%s);\nint __dace_exit_%s(void *state);\n"
                      "void __program_%s(void *state%s);" % (name, init_params, name, name, prog_params))
        self.lib = self.ffi.dlopen(str(lib_path))

    def run(self, symbols: Dict[str, int], buffers: Dict[str, GuardedBuffer]) -> bool:
        """Run once; False when DaCe's initialization failed."""
        def value(arg):
            return int(symbols[arg]) if arg in symbols else buffers[arg].data[0].item()

        state = getattr(self.lib, "__dace_init_" + self.name)(*[value(a) for a in self.init_args])
        if state == self.ffi.NULL:
            return False
        args = [buffers[a].pointer(self.ffi) if ptr else value(a) for a, ptr in self.program_args]
        getattr(self.lib, "__program_" + self.name)(state, *args)
        getattr(self.lib, "__dace_exit_" + self.name)(state)
        return True


# ---------------------------------------------------------------- the oracle
@dataclasses.dataclass(frozen=True)
class Tolerance:
    """The oracle's one tolerance: every default is here, and every stage (command line, harness
    template, triage, replay, reproducers) gets it as this value."""

    rtol: float = 1e-5
    atol: float = 1e-8
    exact: bool = False
    # single precision's floor: a float32 (or narrower) value is compared at least this loosely,
    # since two correct codes of one sum round differently in every operation the compiler
    # orders or contracts otherwise (a larger rtol or atol above still wins)
    rtol32: float = 1e-4
    atol32: float = 1e-6

    def for_width(self, itemsize: int) -> Tuple[float, float]:
        """(rtol, atol) for floating values of ``itemsize`` bytes."""
        if itemsize < 8:
            return max(self.rtol, self.rtol32), max(self.atol, self.atol32)
        return self.rtol, self.atol

    def to_json(self) -> Dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: Dict) -> "Tolerance":
        """From ``to_json``'s dictionary; a missing field keeps its default."""
        fields = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in fields})


@dataclasses.dataclass
class Difference:
    container: str
    index: int                 # flat index (of the part, for complex containers)
    pre: float
    post: float
    differing: int
    total: int
    max_abs_diff: float
    max_index: int = -1        # flat index of the largest difference (the first if all are NaN)

    def to_json(self):
        return dataclasses.asdict(self)


def _parts(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a).ravel()
    if a.dtype.kind == "c":
        return a.view(np.float32 if a.dtype == np.complex64 else np.float64)
    return a


def differing(pre: np.ndarray, post: np.ndarray, tol: Tolerance) -> np.ndarray:
    """Mask of the elements (parts) where post differs from pre.

    ``|post - pre| <= atol + rtol * |pre|`` in double for finite pairs (float32 parts at
    least at ``rtol32``/``atol32``), NaN equals NaN,
    equal values (infinities included) are equal; ``exact`` compares bits; integers
    and booleans compare exactly.
    """
    pre, post = _parts(pre), _parts(post)
    if pre.dtype.kind != "f":
        return pre != post
    if tol.exact:
        width = {2: np.uint16, 4: np.uint32, 8: np.uint64}[pre.dtype.itemsize]
        return pre.view(width) != post.view(width)
    rtol, atol = tol.for_width(pre.dtype.itemsize)
    a, b = pre.astype(np.float64), post.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        close = np.isfinite(a) & np.isfinite(b) & (np.abs(b - a) <= atol + rtol * np.abs(a))
        same = (np.isnan(a) & np.isnan(b)) | (a == b) | close
    return ~same


def _same_bytes(pre: np.ndarray, post: np.ndarray) -> bool:
    return pre.dtype == post.dtype and pre.shape == post.shape and \
        np.ascontiguousarray(pre).tobytes() == np.ascontiguousarray(post).tobytes()


def compare(name: str, pre: np.ndarray, post: np.ndarray, tol: Tolerance) -> Optional[Difference]:
    """The first difference of one container, or None."""
    if _same_bytes(pre, post):     # equal under every rule: the usual case, without the rules' passes
        return None
    mask = differing(pre, post, tol)
    if not mask.any():
        return None
    a, b = _parts(pre), _parts(post)
    idx = np.flatnonzero(mask)
    with np.errstate(invalid="ignore", over="ignore"):
        diffs = np.abs(b[idx].astype(np.float64) - a[idx].astype(np.float64))
    finite = ~np.isnan(diffs)
    worst = int(idx[finite][np.argmax(diffs[finite])]) if finite.any() else int(idx[0])
    return Difference(container=name, index=int(idx[0]), pre=float(a[idx[0]]), post=float(b[idx[0]]),
                      differing=int(idx.size), total=int(mask.size),
                      max_abs_diff=float(diffs[finite].max()) if finite.any() else float("nan"), max_index=worst)
