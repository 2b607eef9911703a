"""The ``gpukernels`` target: hand-written CUDA kernels, fuzzed differentially.

A kernel directory holds ``.cu`` sources and one JSON manifest per kernel::

    {
      "source": "block_sum.cu",          # beside the manifest
      "kernel": "block_sum",             # an extern "C" __global__ function in it
      "description": "...",
      "symbols": {"N": [1, 4096], "THREADS": [1, 256]},   # bounds may use earlier symbols
      "grid": ["(N + THREADS - 1) // THREADS"],           # up to 3 expressions each
      "block": ["THREADS"],
      "shared_bytes": "THREADS * 8",                       # dynamic shared memory (default 0)
      "args": [                                            # the kernel's parameters, in order
        {"name": "x", "role": "in", "dtype": "float64", "shape": ["N"], "range": [-1000, 1000]},
        {"name": "partial", "role": "out", "dtype": "float64", "shape": ["(N + THREADS - 1) // THREADS"]},
        {"name": "n", "role": "value", "dtype": "int32", "value": "N"}
      ],
      "reference": {"cpu": "block_sum_reference", "extra": ["THREADS"]},
      "expect": "RACE"                   # planted bugs only: what fuzzing on a GPU must find
    }

``"extends": "other.json"`` starts from another manifest (a planted kernel and its correct
counterpart share everything but ``kernel`` and ``expect``). Roles: ``in`` (read), ``out``
(written), ``inout``; ``value`` passes an integer expression of the symbols by value.
The reference is an ``extern "C"`` host function of the same source taking the kernel's
arguments then ``extra`` (``{"cpu": ...}``), or a known-good kernel launched the same way
(``{"kernel": ...}``). Expressions use the bound language of ``harnessgen.core.expr``.

The kernel becomes post, the reference pre, each behind DaCe's entry points
(``templates/kernel_side.cu.j2``), so the harness, decoder, oracle, guard zones, engines
and cffi replay are those of cutouts.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Dict, List, Optional

from .. import __version__
from ..core import expr as ex, protocol
from ..core.data import template_environment
from ..core.errors import ConfigError
from ..core.outcome import Outcome
from ..core.records import DEFAULT_FLOAT_BOUND
from ..core.runtime import CTYPES
from ..inputs.layout import ContainerSlot, InputLayout, SymbolSlot
from ..plan.instances import Instance

# the one "transformation" of every kernel instance: the kernel replacing its reference
KERNEL = "kernel"
BUILTIN_DIR = Path(__file__).resolve().parent / "shipped"   # the built-in target's kernels
ROLES = ("in", "out", "inout", "value")
SYMBOL_DTYPE = "int32"
FLOAT_TINY = 1e-300


@dataclasses.dataclass(frozen=True)
class KernelArg:
    name: str
    role: str
    dtype: str
    shape: tuple = ()                      # of ex.Expr (arrays)
    value: Optional[ex.Expr] = None        # role "value"
    lo: Optional[float] = None
    hi: Optional[float] = None

    @property
    def is_array(self) -> bool:
        return self.role != "value"

    @property
    def count(self) -> ex.Expr:
        total = ex.Expr.num(1)
        for dim in self.shape:
            total = ex.Expr("*", (total, dim))
        return ex.simplify(total)


@dataclasses.dataclass(frozen=True)
class KernelSpec:
    name: str                              # the manifest's file name without .json
    manifest: Path
    source: Path
    kernel: str
    description: str
    symbols: tuple                         # of (name, lo Expr, hi Expr)
    grid: tuple
    block: tuple
    shared_bytes: ex.Expr
    args: tuple                            # of KernelArg
    reference: Dict
    expect: Optional[str]

    @property
    def arrays(self) -> List[KernelArg]:
        return [a for a in self.args if a.is_array]

    def digest(self) -> str:
        """Changes with the manifest, the source and everything the source includes beside it."""
        h = hashlib.sha256(self.manifest_text().encode())
        for path in sorted(self.source.parent.glob("*.cu*")) + sorted(self.source.parent.glob("*.h")):
            h.update(path.name.encode() + path.read_bytes())
        return h.hexdigest()[:8]

    def manifest_text(self) -> str:
        return json.dumps(_resolved(self.manifest), sort_keys=True)

    def instance(self, target: str) -> Instance:
        return Instance(id=f"{self.name}-{self.digest()}", target=target, program=self.name,
                        transformation=KERNEL, transformation_spec=str(self.manifest),
                        match=_resolved(self.manifest), description=self.description)


# ------------------------------------------------------------------ manifests
def _resolved(path: Path, seen: tuple = ()) -> Dict:
    """A manifest with its ``extends`` chain merged in (later keys win)."""
    if path in seen:
        raise ConfigError(f"{path}: 'extends' loops back to itself")
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read kernel manifest {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a kernel manifest is a JSON object")
    base = data.pop("extends", None)
    if base is None:
        return data
    return {**_resolved(path.parent / base, seen + (path,)), **data}


def _expr(path: Path, field: str, text) -> ex.Expr:
    try:
        return ex.parse(text, what=f"{path.name}: {field}")
    except ConfigError:
        raise
    except Exception as exc:   # noqa: BLE001 -- any parse failure is the manifest's
        raise ConfigError(f"{path}: {field} = {text!r} is not an expression ({exc})") from exc


def _require(path: Path, data: Dict, key: str, kind):
    if key not in data:
        raise ConfigError(f"{path}: missing {key!r}")
    if not isinstance(data[key], kind):
        raise ConfigError(f"{path}: {key!r} must be a {getattr(kind, '__name__', kind)}")
    return data[key]


def _geometry(path: Path, data: Dict, key: str) -> tuple:
    dims = _require(path, data, key, list)
    if not 1 <= len(dims) <= 3:
        raise ConfigError(f"{path}: {key!r} has 1 to 3 expressions (x, y, z)")
    return tuple(_expr(path, f"{key}[{i}]", d) for i, d in enumerate(dims)) + (ex.Expr.num(1),) * (3 - len(dims))


def _arg(path: Path, i: int, raw: Dict, known: set) -> KernelArg:
    where = f"args[{i}]"
    if not isinstance(raw, dict) or "name" not in raw:
        raise ConfigError(f"{path}: {where} needs a name")
    name, role, dtype = raw["name"], raw.get("role"), raw.get("dtype")
    if role not in ROLES:
        raise ConfigError(f"{path}: {where} ({name}): role must be one of {', '.join(ROLES)}")
    if dtype not in CTYPES:
        raise ConfigError(f"{path}: {where} ({name}): dtype {dtype!r} is not one of {', '.join(sorted(CTYPES))}")
    if role == "value":
        value = _expr(path, f"{where}.value", raw.get("value", ""))
        _check_symbols(path, f"{where}.value", value, known)
        return KernelArg(name, role, dtype, value=value)
    shape = tuple(_expr(path, f"{where}.shape", d) for d in _require(path, raw, "shape", list))
    for dim in shape:
        _check_symbols(path, f"{where}.shape", dim, known)
    lo, hi = (raw.get("range") or [None, None])
    return KernelArg(name, role, dtype, shape=shape, lo=lo, hi=hi)


def _check_symbols(path: Path, field: str, e: ex.Expr, known: set) -> None:
    unknown = sorted(e.symbols() - known)
    if unknown:
        raise ConfigError(f"{path}: {field} uses {', '.join(unknown)}, which 'symbols' does not declare")


def load(path: Path) -> KernelSpec:
    """One manifest, checked: every error names the file and the field to fix."""
    path = Path(path)
    data = _resolved(path)
    source = path.parent / _require(path, data, "source", str)
    if not source.is_file():
        raise ConfigError(f"{path}: source {source.name} is not beside the manifest")
    symbols = []
    for name, bounds in _require(path, data, "symbols", dict).items():
        if not (isinstance(bounds, list) and len(bounds) == 2):
            raise ConfigError(f"{path}: symbols.{name} must be [lo, hi]")
        lo, hi = (_expr(path, f"symbols.{name}", b) for b in bounds)
        _check_symbols(path, f"symbols.{name}", ex.Expr("+", (lo, hi)), {s for s, _, _ in symbols})
        symbols.append((name, lo, hi))
    known = {s for s, _, _ in symbols}
    args = tuple(_arg(path, i, raw, known) for i, raw in enumerate(_require(path, data, "args", list)))
    names = [a.name for a in args]
    if len(set(names)) != len(names) or set(names) & known:
        raise ConfigError(f"{path}: argument names must be distinct and differ from the symbols")
    grid, block = _geometry(path, data, "grid"), _geometry(path, data, "block")
    shared = _expr(path, "shared_bytes", data.get("shared_bytes", 0))
    for field, e in [("grid", d) for d in grid] + [("block", d) for d in block] + [("shared_bytes", shared)]:
        _check_symbols(path, field, e, known)
    reference = _require(path, data, "reference", dict)
    if len(set(reference) & {"cpu", "kernel"}) != 1:
        raise ConfigError(f"{path}: reference is {{\"cpu\": function}} or {{\"kernel\": known-good kernel}}")
    for i, extra in enumerate(reference.get("extra", [])):
        _check_symbols(path, f"reference.extra[{i}]", _expr(path, "reference.extra", extra), known)
    expect = data.get("expect")
    if expect is not None and expect not in Outcome.__members__ and expect not in SYNC_VERDICTS:
        raise ConfigError(f"{path}: expect {expect!r} is not a verdict ({', '.join(SYNC_VERDICTS)}, MISMATCH, ...)")
    return KernelSpec(name=path.stem, manifest=path, source=source, kernel=_require(path, data, "kernel", str),
                      description=data.get("description", ""), symbols=tuple(symbols), grid=grid, block=block,
                      shared_bytes=shared, args=args, reference=reference, expect=expect)


# verdicts of the synchronization oracle besides the Outcome ones (see sanitizer.py)
SYNC_VERDICTS = ("RACE", "BARRIER_DIVERGENCE", "REDUNDANT_BARRIER")


def load_dir(folder: Path) -> Dict[str, KernelSpec]:
    folder = Path(folder)
    manifests = sorted(folder.glob("*.json"))
    if not manifests:
        raise ConfigError(f"{folder} holds no kernel manifests (*.json beside the .cu files)")
    return {m.stem: load(m) for m in manifests}


def resolve(spec: str) -> tuple:
    """``gpukernels`` / ``gpukernels:NAME`` / ``DIR`` / ``DIR:NAME`` -> (target name, kernels)."""
    base, _, name = spec.partition(":")
    folder = BUILTIN_DIR if base == "gpukernels" else Path(base)
    if not folder.is_dir():
        raise ConfigError(f"--program {spec}: use gpukernels[:NAME] or a directory of kernel manifests")
    kernels = load_dir(folder)
    if name and name not in kernels:
        raise ConfigError(f"--program {spec}: no manifest {name}.json; choose one of {', '.join(sorted(kernels))}")
    target = "gpukernels" if base == "gpukernels" else folder.name
    return target, ([kernels[name]] if name else [kernels[k] for k in sorted(kernels)])


# ------------------------------------------------------------------ layout
def layout(spec: KernelSpec, float_bound: float = DEFAULT_FLOAT_BOUND) -> InputLayout:
    """Symbols first (the geometry among them), then every array, as for a cutout."""
    symbols = [SymbolSlot(name, SYMBOL_DTYPE, lo, hi) for name, lo, hi in spec.symbols]
    containers = []
    for arg in sorted(spec.arrays, key=lambda a: a.name):
        kind = arg.dtype
        floating = kind.startswith(("float", "complex"))
        lo = arg.lo if arg.lo is not None else (-float_bound if floating else None)
        hi = arg.hi if arg.hi is not None else (float_bound if floating else None)
        containers.append(ContainerSlot(
            name=arg.name, dtype=arg.dtype, count=arg.count, shape=arg.shape,
            lo=None if lo is None else ex.Expr.num(float(lo) if floating else int(lo)),
            hi=None if hi is None else ex.Expr.num(float(hi) if floating else int(hi)),
            is_output=arg.role != "in"))
    return InputLayout(symbols=symbols, containers=containers, float_tiny=FLOAT_TINY, allow_nonfinite=False)


# ------------------------------------------------------------------ sides
def render_side(spec: KernelSpec, role: str) -> str:
    """The C++/CUDA source of one side: ``pre`` (the reference) or ``post`` (the kernel)."""
    name = "hg_pre" if role == "pre" else "hg_post"
    cpu = role == "pre" and "cpu" in spec.reference
    function = spec.kernel if role == "post" else spec.reference.get("cpu") or spec.reference["kernel"]
    symbol_params = ", ".join(f"{CTYPES[SYMBOL_DTYPE]} {s}" for s, _, _ in spec.symbols)
    program_params = [f"{CTYPES[a.dtype]} *{a.name}" for a in spec.arrays]
    program_params += [f"{CTYPES[SYMBOL_DTYPE]} {s}" for s, _, _ in spec.symbols]
    call_args = []
    for arg in spec.args:
        if not arg.is_array:
            call_args.append(f"({CTYPES[arg.dtype]})({cpp(arg.value)})")
        else:
            call_args.append(arg.name if cpu else f"hg_dev_{arg.name}")
    if cpu:
        call_args += [f"({cpp(_expr(spec.manifest, 'reference.extra', e))})" for e in spec.reference.get("extra", [])]
    arrays = [{"name": a.name, "ctype": CTYPES[a.dtype], "count": cpp(a.count), "output": a.role != "in"}
              for a in spec.arrays]
    return template_environment().get_template("kernel_side.cu.j2").render(
        version=__version__, role="reference (pre)" if role == "pre" else "kernel under test (post)",
        kernel=spec.kernel, manifest=spec.manifest.name, source=spec.source.name, name=name, cpu=cpu,
        function=function, symbol_params=symbol_params, program_params=program_params, call_args=call_args,
        arrays=arrays, grid=[cpp(d) for d in spec.grid], block=[cpp(d) for d in spec.block],
        shared_bytes=cpp(spec.shared_bytes), **protocol.template_context())


def cpp(e: ex.Expr) -> str:
    """An expression over the symbols, which are plain parameters in a side's source."""
    return ex.to_cpp(e, symbol_prefix="")


def side_signature(spec: KernelSpec):
    """What the harness template needs of a side: DaCe's init and program arguments."""
    init_args = [s for s, _, _ in spec.symbols]
    program_args = [(a.name, True) for a in spec.arrays] + [(s, False) for s in init_args]
    return init_args, program_args


def is_kernel_spec(spec: str) -> bool:
    """``gpukernels[:NAME]``, or a directory (``DIR[:NAME]``) of kernel manifests."""
    base = spec.partition(":")[0]
    if base == "gpukernels":
        return True
    folder = Path(base)
    return folder.is_dir() and any(folder.glob("*.json")) and any(folder.glob("*.cu"))
