"""Stage 4: how fuzzer bytes become a valid input. The single source of truth.

The rule, implemented here in NumPy and rendered into C++ by
``templates/decoder.inc.j2`` (a property test checks they agree byte for byte):

1. Bytes are consumed front to back; reading past the end yields zero bytes,
   so every byte string of every length decodes (the empty input gives the
   smallest symbols and all-zero data).
2. Symbols first, in dependency order: each reads the width of its type as a
   little-endian signed integer ``x``; its bounds ``[lo, hi]`` are evaluated
   with the symbols before it. ``x`` is kept when inside, else mapped to
   ``lo + ((x - lo) mod (hi - lo + 1))`` (unsigned 64-bit arithmetic).
   An empty range (``lo > hi``) makes the input *unsatisfiable*: it is
   skipped, never run.
3. Start offsets next (when the layout has them, the default): one byte per
   container, sorted by name, ``offset = (byte mod (64 / itemsize)) * itemsize``:
   where inside its guard-zoned, 64-byte aligned allocation the container
   starts. Real callers pass views aligned only to the element size; zero bytes
   keep every buffer aligned.
4. Containers next, sorted by name: element count from the decoded symbols;
   each element reads its type's width.
   * integers: as symbols, within the container's value range (the type's
     range when none is given);
   * bool: the lowest bit;
   * floats: the raw IEEE value is kept when finite, not tiny and inside
     ``[lo, hi]`` -- so AFL++'s comparison-guided mutations land exactly.
     Otherwise: non-finite -> 0 (unless NaN/Inf are allowed); ``|x| < tiny``
     -> signed zero; outside the range -> ``lo * (1 - m) + hi * m`` with ``m``
     the value's mantissa bits read as a fraction in ``[0, 1)``, clipped into
     ``[lo, hi]`` (computed in the element's own type; not ``fmod``, whose cost
     grows with the exponent: a microsecond for the huge values that random
     bytes mostly are);
   * complex: real and imaginary part as two floats.
5. More than ``MAX_INPUT_BYTES`` of container data makes the input
   unsatisfiable (sizes come from the constraints, so this only bounds
   absurd user ranges).
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np

from ..core import expr as ex
from ..core.errors import ConfigError, Unsupported
from .constraints import Constraints

LAYOUT_VERSION = 3   # 3: out-of-range floats fold by their mantissa, no longer by fmod
ALIGNMENT = 64      # allocations are aligned to this; offsets stay below it
MAX_INPUT_BYTES = 256 << 20

# uint64 is left out: its values do not fit the signed 64-bit folding rule
_SUPPORTED = {"float64", "float32", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
              "bool", "complex64", "complex128"}


@dataclasses.dataclass(frozen=True)
class SymbolSlot:
    name: str
    dtype: str           # numpy dtype name of the symbol (int32 / int64)
    lo: ex.Expr
    hi: ex.Expr


@dataclasses.dataclass(frozen=True)
class ContainerSlot:
    name: str
    dtype: str
    count: ex.Expr                 # number of elements allocated (DaCe total_size)
    shape: tuple                   # of ex.Expr, for reporting multi-indices
    lo: Optional[ex.Expr] = None   # value range (numeric types)
    hi: Optional[ex.Expr] = None
    is_output: bool = True
    # whether pre writes it; one it never writes must come out of pre as it went in (else pre
    # wrote outside another container: a missing constraint, never a finding)
    pre_writes: bool = True

    @property
    def itemsize(self) -> int:
        return np.dtype(self.dtype).itemsize

    @property
    def kind(self) -> str:
        return np.dtype(self.dtype).kind

    @property
    def offset_choices(self) -> int:
        """How many start offsets (multiples of the element size below ALIGNMENT) there are."""
        return max(1, ALIGNMENT // self.itemsize)


@dataclasses.dataclass
class DecodedInput:
    symbols: Dict[str, int]
    arrays: Dict[str, np.ndarray]   # flat arrays of ``count`` elements
    consumed: int                   # bytes of the input that were read
    offsets: Dict[str, int] = dataclasses.field(default_factory=dict)   # start offset in bytes

    def to_npz(self, path: Path) -> None:
        payload = {f"sym:{k}": np.asarray(v) for k, v in self.symbols.items()}
        payload.update({f"arr:{k}": v for k, v in self.arrays.items()})
        payload.update({f"off:{k}": np.asarray(v) for k, v in self.offsets.items()})
        with open(path, "wb") as fh:
            np.savez(fh, **payload)

    @classmethod
    def from_npz(cls, path: Path) -> "DecodedInput":
        """What ``to_npz`` wrote (``consumed`` is not kept: 0)."""
        with np.load(path) as npz:
            return cls(symbols={k[4:]: int(npz[k]) for k in npz.files if k.startswith("sym:")},
                       arrays={k[4:]: npz[k] for k in npz.files if k.startswith("arr:")}, consumed=0,
                       offsets={k[4:]: int(npz[k]) for k in npz.files if k.startswith("off:")})


@dataclasses.dataclass
class InputLayout:
    symbols: List[SymbolSlot]
    containers: List[ContainerSlot]
    float_tiny: float
    allow_nonfinite: bool
    version: int = LAYOUT_VERSION
    offsets: bool = True            # whether the fuzzer chooses each buffer's start offset

    # ------------------------------------------------------------ decoding
    def decode(self, data: bytes) -> Optional[DecodedInput]:
        """Decode fuzzer bytes; ``None`` when the input is unsatisfiable."""
        reader = _Reader(data)
        env: Dict[str, int] = {}
        for slot in self.symbols:
            width = np.dtype(slot.dtype).itemsize
            raw = int(np.frombuffer(reader.read(width), dtype=np.dtype(slot.dtype).newbyteorder("<"))[0])
            lo, hi = ex.evaluate(slot.lo, env), ex.evaluate(slot.hi, env)
            lo, hi = _clip_to_type(lo, hi, slot.dtype)
            if lo > hi:
                return None
            env[slot.name] = int(_map_ints(np.array([raw], dtype=np.int64), lo, hi)[0])
        offsets = {}
        for slot in self.containers:
            byte = reader.read(1)[0] if self.offsets else 0
            offsets[slot.name] = (byte % slot.offset_choices) * slot.itemsize
        counts = self.counts(env)
        if self._data_bytes(counts) > MAX_INPUT_BYTES:
            return None
        arrays = {}
        for slot in self.containers:
            count = counts[slot.name]
            raw = reader.read(count * slot.itemsize)
            arrays[slot.name] = self._map_values(slot, np.frombuffer(raw, dtype=np.dtype(slot.dtype).newbyteorder("<")).astype(slot.dtype), env)
        return DecodedInput(symbols=env, arrays=arrays, consumed=min(reader.pos, len(data)), offsets=offsets)

    def _map_values(self, slot: ContainerSlot, raw: np.ndarray, env) -> np.ndarray:
        kind = slot.kind
        if kind == "b":
            return (raw.view(np.uint8) & 1).astype(bool)
        if kind in "iu":
            lo, hi = self._value_bounds(slot, env, as_float=False)
            lo, hi = _clip_to_type(lo, hi, slot.dtype)
            if lo > hi:
                lo = hi = _clip_to_type(lo, lo, slot.dtype)[0]
            return _map_ints(raw.astype(np.int64), lo, hi).astype(slot.dtype)
        if kind == "f":
            lo, hi = self._value_bounds(slot, env, as_float=True)
            return _map_floats(raw, lo, hi, self.float_tiny, self.allow_nonfinite)
        if kind == "c":
            part = np.float32 if slot.dtype == "complex64" else np.float64
            lo, hi = self._value_bounds(slot, env, as_float=True)
            flat = _map_floats(raw.view(part), lo, hi, self.float_tiny, self.allow_nonfinite)
            return flat.view(slot.dtype)
        raise Unsupported(f"container {slot.name}: dtype {slot.dtype} is not supported")

    def _value_bounds(self, slot: ContainerSlot, env, as_float: bool):
        if slot.lo is None:
            if as_float:
                return -np.inf, np.inf
            info = np.iinfo(slot.dtype)
            return int(info.min), int(info.max)
        return ex.evaluate(slot.lo, env, as_float), ex.evaluate(slot.hi, env, as_float)

    # ------------------------------------------------------------ encoding (seeds)
    def encode(self, symbols: Dict[str, int], arrays: Dict[str, np.ndarray],
               offsets: Optional[Dict[str, int]] = None) -> bytes:
        """Bytes that decode to these values when they are inside their ranges (offsets: aligned
        when not given)."""
        parts = []
        for slot in self.symbols:
            parts.append(np.asarray([symbols[slot.name]], dtype=np.dtype(slot.dtype).newbyteorder("<")).tobytes())
        if self.offsets:
            offsets = offsets or {}
            parts.append(bytes((offsets.get(c.name, 0) // c.itemsize) % c.offset_choices for c in self.containers))
        for slot in self.containers:
            values = np.asarray(arrays[slot.name], dtype=slot.dtype).ravel()
            parts.append(values.astype(np.dtype(slot.dtype).newbyteorder("<")).tobytes())
        return b"".join(parts)

    # ------------------------------------------------------------ helpers
    def counts(self, symbols: Dict[str, int]) -> Dict[str, int]:
        return {c.name: max(0, ex.evaluate(c.count, symbols)) for c in self.containers}

    def fits(self, symbols: Dict[str, int], limit: int = MAX_INPUT_BYTES) -> bool:
        """Whether these sizes stay within ``limit`` bytes of container data (``MAX_INPUT_BYTES``:
        the decoder refuses them otherwise)."""
        return self._data_bytes(self.counts(symbols)) <= limit

    def _data_bytes(self, counts: Dict[str, int]) -> int:
        return sum(counts[c.name] * c.itemsize for c in self.containers)

    def shape(self, name: str, symbols: Dict[str, int]) -> tuple:
        slot = self.container(name)
        return tuple(max(0, ex.evaluate(s, symbols)) for s in slot.shape)

    def container(self, name: str) -> ContainerSlot:
        for c in self.containers:
            if c.name == name:
                return c
        raise KeyError(name)

    # ------------------------------------------------------------ serialization
    def to_json(self) -> dict:
        return {
            "version": self.version,
            "offsets": self.offsets,
            "float_tiny": self.float_tiny,
            "allow_nonfinite": self.allow_nonfinite,
            "symbols": [{"name": s.name, "dtype": s.dtype, "lo": str(s.lo), "hi": str(s.hi)} for s in self.symbols],
            "containers": [{"name": c.name, "dtype": c.dtype, "count": str(c.count),
                            "shape": [str(x) for x in c.shape],
                            "lo": None if c.lo is None else str(c.lo), "hi": None if c.hi is None else str(c.hi),
                            "is_output": c.is_output, "pre_writes": c.pre_writes} for c in self.containers],
        }

    @classmethod
    def from_json(cls, obj: dict) -> "InputLayout":
        if obj.get("version") != LAYOUT_VERSION:
            raise ConfigError(f"layout.json has version {obj.get('version')}, this harnessgen reads "
                              f"{LAYOUT_VERSION}: rebuild the harness")
        p = ex.parse
        symbols = [SymbolSlot(s["name"], s["dtype"], p(s["lo"]), p(s["hi"])) for s in obj["symbols"]]
        containers = [ContainerSlot(c["name"], c["dtype"], p(c["count"]), tuple(p(x) for x in c["shape"]),
                                    None if c["lo"] is None else p(c["lo"]), None if c["hi"] is None else p(c["hi"]),
                                    c["is_output"], c.get("pre_writes", True)) for c in obj["containers"]]
        return cls(symbols, containers, obj["float_tiny"], obj["allow_nonfinite"], obj["version"], obj["offsets"])

    def save(self, path: Path) -> None:
        Path(path).write_text(json.dumps(self.to_json(), indent=1))

    @classmethod
    def load(cls, path: Path) -> "InputLayout":
        return cls.from_json(json.loads(Path(path).read_text()))


class _Reader:
    def __init__(self, data: bytes):
        self.data = bytes(data)
        self.pos = 0

    def read(self, n: int) -> bytes:
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk + bytes(n - len(chunk))


_MASK64 = (1 << 64) - 1


def _clip_to_type(lo: int, hi: int, dtype: str):
    info = np.iinfo(dtype)
    return max(int(lo), int(info.min)), min(int(hi), int(info.max))


def _map_ints(x: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Keep values in [lo, hi]; fold the others to lo + (x mod span), unsigned 64-bit."""
    inside = (x >= lo) & (x <= hi)
    if inside.all():
        return x
    span = np.uint64(((hi - lo) & _MASK64) + 1 & _MASK64)
    with np.errstate(over="ignore"):
        offset = x.view(np.uint64) % span
        folded = (np.uint64(lo & _MASK64) + offset).view(np.int64)
    return np.where(inside, x, folded)


def _map_floats(x: np.ndarray, lo: float, hi: float, tiny: float, allow_nonfinite: bool) -> np.ndarray:
    """Step by step as in the C++ decoder: non-finite -> 0, tiny -> signed 0, fold into [lo, hi]."""
    ftype = x.dtype.type
    lo, hi, tiny = ftype(lo), ftype(hi), ftype(tiny)
    x = x.copy()
    with np.errstate(invalid="ignore", over="ignore"):
        nonfinite = ~np.isfinite(x)
        if allow_nonfinite:
            mapped = ~nonfinite
        else:
            x[nonfinite] = 0
            mapped = np.ones(x.shape, dtype=bool)
        small = mapped & (np.abs(x) < tiny)
        x[small] = np.copysign(ftype(0), x[small])
        outside = mapped & ~((x >= lo) & (x <= hi))
        if outside.any():
            if hi > lo:
                x[outside] = _fold_by_mantissa(x[outside], lo, hi)
            else:
                x[outside] = lo
    return x


def _fold_by_mantissa(x: np.ndarray, lo, hi) -> np.ndarray:
    """``lo * (1 - m) + hi * m`` in x's type, ``m`` the mantissa bits as a fraction; clipped to [lo, hi]."""
    ftype = x.dtype.type
    bits, uint = (52, np.uint64) if x.dtype == np.float64 else (23, np.uint32)
    m = (x.view(uint) & uint((1 << bits) - 1)).astype(x.dtype) * ftype(2.0 ** -bits)
    return np.minimum(np.maximum(lo * (ftype(1) - m) + hi * m, lo), hi)


# ---------------------------------------------------------------- construction
def build_layout(pair, constraints: Constraints, offsets: bool = True) -> InputLayout:
    """The layout of a cutout pair under its constraints."""
    import networkx as nx

    pre = pair.pre
    graph = nx.DiGraph()
    names = sorted(constraints.symbols)
    graph.add_nodes_from(names)
    for name in names:
        rng = constraints.symbols[name]
        for dep in rng.lo.symbols() | rng.hi.symbols():
            graph.add_edge(dep, name)
    order = list(nx.lexicographical_topological_sort(graph))
    symbols = [SymbolSlot(n, _symbol_dtype(pre, n), constraints.symbols[n].lo, constraints.symbols[n].hi)
               for n in order]
    outputs = set(pair.output_config)
    written = _written_by(pre, pair.containers)
    containers = []
    for name in pair.containers:
        desc = pre.arrays[name]
        dtype = desc.dtype.as_numpy_dtype().name
        if dtype not in _SUPPORTED:
            raise Unsupported(f"container {name} has type {dtype}, which the input layout cannot decode")
        rng = constraints.values.get(name)
        containers.append(ContainerSlot(
            name=name, dtype=dtype, count=allocated_count(desc),
            shape=tuple(ex.simplify(ex.from_sympy(s)) for s in desc.shape),
            lo=rng.lo if rng else None, hi=rng.hi if rng else None, is_output=name in outputs,
            pre_writes=name in written))
    return InputLayout(symbols, containers, constraints.float_tiny, constraints.allow_nonfinite, offsets=offsets)


def _written_by(sdfg, names) -> set:
    """Those of ``names`` some state of ``sdfg`` writes, at any depth; every name where the
    SDFG cannot be read that way, so that no check rests on a guess."""
    from ..cutout.extract import written_containers

    try:
        return set(written_containers(sdfg, list(names)))
    except Exception:   # a DaCe we cannot walk: treat every container as written
        return set(names)


def allocated_count(desc) -> ex.Expr:
    """Elements a container's buffer must hold: DaCe's ``total_size``, or more where its strides
    reach further. A nested SDFG's view of a slice keeps the strides of the array it slices
    (an ``(N, C)`` output row of an ``(N, H, W, C)`` array has strides ``(H*W*C, 1)``) while its
    ``total_size`` counts its shape only; a buffer of that size has the cutout write far outside
    it, in pre and post alike (resnet's conv2d reduction), which the program never does."""
    import sympy

    total = sympy.sympify(desc.total_size)
    try:
        reach = 1 + sum((sympy.sympify(n) - 1) * sympy.sympify(s) for n, s in zip(desc.shape, desc.strides))
        reach += sympy.sympify(getattr(desc, "start_offset", 0) or 0)
    except (TypeError, ValueError, sympy.SympifyError):
        return ex.simplify(ex.from_sympy(total))
    excess = sympy.expand(reach - total)
    if excess.is_number:          # dense strides (either order) reach exactly the total size
        return ex.simplify(ex.from_sympy(total if excess <= 0 else reach))
    return ex.simplify(ex.from_sympy(sympy.Max(total, reach)))


def _symbol_dtype(sdfg, name: str) -> str:
    dtype = sdfg.symbols.get(name)
    if dtype is None:
        return "int64"
    np_name = dtype.as_numpy_dtype().name
    if np.dtype(np_name).kind not in "iu":
        raise Unsupported(f"symbol {name} has non-integer type {np_name}")
    return np_name
