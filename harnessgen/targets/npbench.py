"""Built-in target ``npbench``: every benchmark of an NPBench checkout (github.com/spcl/npbench).

A checkout is found from ``HARNESSGEN_NPBENCH`` (``make ... NPBENCH=<folder>``), else at
``../shared/npbench`` beside the working folder or beside harnessgen's own folder. Every
benchmark comes from ``bench_info/<name>.json``, as NPBench's own runner finds them:

* the program: ``npbench/benchmarks/<relative_path>/<module_name>_dace.py:<func_name>``;
* its reference: ``<module_name>_numpy.py:<func_name>``, NumPy, run on the same inputs (a
  difference is a finding against DaCe's frontend or simplify, ``checks.reference_check``);
* its sizes (``parameters``: S, M, L, paper): a size smaller than another at every preset
  stays no larger than it in every input (``relations``): NPBench's programs assume them
  (conv2d's kernel is no wider than its image) and never check them;
* its inputs: ``<module_name>.py:initialize`` (``seed_arrays``), at the S sizes scaled down.

A benchmark that cannot be loaded (DaCe's frontend refuses it, a file is missing) is left out
of the run with one line saying why and what to do (``Target.unloadable``); the others run.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from pathlib import Path
from typing import Dict, FrozenSet, List, Optional, Set, Tuple

import numpy as np

from ..core import envs
from ..core.errors import ConfigError
from ..core.files import write_atomic
from ..core.records import DEFAULT_MAX_SIZE
from .base import Program, Target
from .loaders import cached_program, content_identity, load_module
from .reference import Reference

# where a checkout is looked for when HARNESSGEN_NPBENCH is not set
DEFAULT_PLACES = (Path("../shared/npbench"), Path(__file__).resolve().parents[2].parent / "shared" / "npbench")
HOW_TO_GET_ONE = ("give an NPBench checkout with NPBENCH=<folder> (make) or HARNESSGEN_NPBENCH=<folder>: "
                  "git clone https://github.com/spcl/npbench, or DaCe's own copy in its tests/npbench")


@dataclasses.dataclass(frozen=True)
class Benchmark:
    """One benchmark of a checkout, as its ``bench_info`` file describes it."""

    name: str                       # the bench_info file's name: unique in a checkout
    folder: Path                    # npbench/benchmarks/<relative_path>
    module: str
    function: str
    presets: Dict[str, Dict[str, int]]
    init_function: str
    init_args: Tuple[str, ...]
    init_outputs: Tuple[str, ...]

    @property
    def program_file(self) -> Path:
        return self.folder / f"{self.module}_dace.py"

    @property
    def reference_file(self) -> Path:
        return self.folder / f"{self.module}_numpy.py"

    @property
    def init_file(self) -> Path:
        return self.folder / f"{self.module}.py"

    def source(self) -> bytes:
        """What the program is made of: its file, its function's name and its sizes."""
        return b"\0".join([self.program_file.read_bytes(), self.function.encode(),
                           json.dumps(self.presets, sort_keys=True).encode()])


def checkout() -> Path:
    """The NPBench checkout to use (ConfigError saying how to get one where there is none)."""
    given = envs.get("HARNESSGEN_NPBENCH")
    places = [Path(given)] if given else list(DEFAULT_PLACES)
    for place in places:
        if (place / "bench_info").is_dir():
            return place
    where = f"HARNESSGEN_NPBENCH={given}" if given else " or ".join(str(p) for p in DEFAULT_PLACES[:1])
    raise ConfigError(f"target npbench: no NPBench checkout at {where} (it has no bench_info folder); {HOW_TO_GET_ONE}")


def benchmarks(root: Path) -> List[Benchmark]:
    """Every benchmark a checkout's ``bench_info`` lists, by name."""
    found = []
    for info in sorted((root / "bench_info").glob("*.json")):
        try:
            bench = json.loads(info.read_text())["benchmark"]
            init = bench.get("init", {})
            found.append(Benchmark(
                name=info.stem, folder=root / "npbench" / "benchmarks" / bench["relative_path"],
                module=bench["module_name"], function=bench["func_name"],
                presets={k: {n: int(v) for n, v in sizes.items()} for k, sizes in bench.get("parameters", {}).items()},
                init_function=init.get("func_name", "initialize"), init_args=tuple(init.get("input_args", ())),
                init_outputs=tuple(init.get("output_args", ()))))
        except (KeyError, TypeError, ValueError, json.JSONDecodeError) as exc:
            raise ConfigError(f"target npbench: {info} is not a bench_info file NPBench writes "
                              f"({type(exc).__name__}: {exc})") from exc
    return found


def relations(presets: Dict[str, Dict[str, int]], symbols: List[str],
              combined: Set[FrozenSet[str]]) -> Dict[str, List[str]]:
    """For each of ``symbols``, those it is larger than at every preset size among those the
    program combines in one expression (``combined``: a shape ``H - K + 1``, a range ``i:i+K``):
    NPBench's programs assume such orders (a convolution's kernel no wider than its image) and
    do not check them. Sizes never combined keep their own ranges (a batch may be larger than
    an image). Strict at every preset, so never a cycle."""
    sizes = [p for p in presets.values() if all(s in p for s in symbols)]
    if not sizes:
        return {}
    below: Dict[str, List[str]] = {}
    for big in symbols:
        smaller = [small for small in symbols if small != big and all(p[small] < p[big] for p in sizes)
                   and any({small, big} <= group for group in combined)]
        if smaller:
            below[big] = sorted(smaller)
    return below


def combined_symbols(sdfg) -> Set[FrozenSet[str]]:
    """The sets of symbols that appear together in one expression of ``sdfg``: a container's
    extent, a map's range, a memlet's subset (each dimension on its own)."""
    from dace.sdfg import nodes

    groups: Set[FrozenSet[str]] = set()

    def add(expressions) -> None:
        for expression in expressions:
            names = frozenset(str(s) for s in getattr(expression, "free_symbols", ()))
            if len(names) > 1:
                groups.add(names)

    for _, _, desc in sdfg.arrays_recursive():
        add(desc.shape)
    for node, _ in sdfg.all_nodes_recursive():
        if isinstance(node, nodes.MapEntry):
            add(part for dim in node.map.range.ranges for part in dim)
    for edge, _ in sdfg.all_edges_recursive():
        subset = getattr(getattr(edge.data, "subset", None), "ranges", None)
        if subset:
            add(part for dim in subset for part in dim)
    return groups


def constraints_text(below: Dict[str, List[str]], max_size: int = DEFAULT_MAX_SIZE) -> Dict:
    """A constraints file (``{"name": ["lo", "hi"]}``) that keeps the ``relations``."""
    out: Dict = {"_about": "sizes ordered as at every preset size of NPBench's bench_info (written by harnessgen)"}
    for big, smaller in sorted(below.items()):
        lo = "1"
        for small in smaller:
            lo = f"max({lo}, {small})"
        out[big] = [lo, str(max_size)]
    return out


def scaled_sizes(presets: Dict[str, Dict[str, int]], largest: int) -> Dict[str, int]:
    """The smallest preset (S, else the first), scaled down so that its largest size is at most
    ``largest``, each at least 1: the ratios of NPBench's own sizes, small enough to run."""
    sizes = presets.get("S") or next(iter(presets.values()), {})
    if not sizes:
        return {}
    top = max(sizes.values())
    factor = min(1.0, largest / top) if top > 0 else 1.0
    return {name: max(1, int(round(value * factor))) for name, value in sizes.items()}


def _symbols_of(module) -> List[str]:
    import dace

    return sorted(name for name, value in vars(module).items() if isinstance(value, dace.symbolic.symbol))


def _constraints_file(bench: Benchmark, module, sdfg) -> Optional[Path]:
    """The benchmark's ``relations`` as a constraints file in the program cache (None where
    there are none), named by its content."""
    symbols = [s for s in _symbols_of(module) if all(s in p for p in bench.presets.values())]
    text = constraints_text(relations(bench.presets, symbols, combined_symbols(sdfg)))
    if len(text) == 1:
        return None
    blob = json.dumps(text, indent=1, sort_keys=True)
    path = (Path(envs.get("HARNESSGEN_PROGRAM_CACHE")) / "npbench" /
            f"{bench.name}-{hashlib.sha256(blob.encode()).hexdigest()[:12]}.constraints.json")
    if not path.is_file():
        write_atomic(path, blob.encode())
    return path


def _load_failure(bench: Benchmark, what: str, exc: BaseException) -> ConfigError:
    first = (str(exc).strip().splitlines() or [""])[0][:300]
    return ConfigError(f"npbench:{bench.name}: {what} ({type(exc).__name__}: {first})")


def _program(bench: Benchmark) -> Program:
    """The benchmark as a program: its ``@dace.program`` parsed once per source and DaCe."""
    def dace_program():
        if not bench.program_file.is_file():
            raise ConfigError(f"npbench:{bench.name}: no file {bench.program_file} (its bench_info names it); "
                              "check the checkout")
        module = load_module(bench.program_file)
        found = getattr(module, bench.function, None)
        if found is None or not hasattr(found, "to_sdfg"):
            raise ConfigError(f"npbench:{bench.name}: {bench.program_file.name} has no @dace.program "
                              f"{bench.function!r} (bench_info's func_name)")
        return module, found

    def parse(simplify: bool):
        _, program = dace_program()
        try:
            # each form as DaCe makes it for a user: simplified by its frontend, library nodes
            # expanded after (spmv's library nodes expanded first fail simplify's validation)
            return program.to_sdfg(simplify=simplify)
        except Exception as exc:  # noqa: BLE001 -- whatever DaCe's frontend raises, the program is the cause
            raise _load_failure(bench, "DaCe's frontend cannot make an SDFG of it; leave it out (--program "
                                "npbench:NAME for the others) or file it against DaCe's frontend", exc) from exc

    def build(simplify: bool = True):
        try:
            return cached_program(f"npbench-{bench.name}", bench.source(), lambda: parse(simplify), simplify)
        except ConfigError:
            raise
        except Exception as exc:  # noqa: BLE001 -- DaCe's simplify or JSON round trip: the program cannot be judged
            raise _load_failure(bench, "DaCe cannot prepare it (simplify, or reading its SDFG back); file it "
                                "against DaCe", exc) from exc

    @functools.lru_cache(maxsize=1)
    def constraints() -> Optional[Path]:
        # once per process: every instance's judgement asks (it reads the program and scans it)
        return _constraints_file(bench, dace_program()[0], build(simplify=True))

    return Program(bench.name, build, f"{bench.folder.name}/{bench.program_file.name}:{bench.function}",
                   build_unsimplified=lambda: build(simplify=False), reference=_reference(bench),
                   identity=content_identity(bench.source()) if bench.program_file.is_file() else "",
                   constraints=constraints,
                   own_inputs=(lambda largest: seed_arrays(bench, largest)) if bench.init_file.is_file() else None)


def _reference(bench: Benchmark) -> Optional[Reference]:
    """NPBench's NumPy version of the benchmark, loaded when first run."""
    if not bench.reference_file.is_file():
        return None

    def run(**kwargs):
        function = getattr(load_module(bench.reference_file), bench.function)
        return function(**kwargs)

    import inspect

    try:
        parameters = _parameters(bench.reference_file, bench.function)
    except (SyntaxError, ValueError):
        return None
    run.__signature__ = inspect.Signature([
        inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=None if has_default else inspect.Parameter.empty)
        for n, has_default in parameters])
    return Reference(f"npbench {bench.reference_file.name}:{bench.function}", run,
                     identity=content_identity(bench.reference_file.read_bytes(),
                                               bench.init_file.read_bytes() if bench.init_file.is_file() else b""),
                     independent=True)


def _parameters(path: Path, function: str) -> List[Tuple[str, bool]]:
    """A function's parameters (name, whether it has a default), read from its file without
    importing it."""
    import ast

    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef) and node.name == function:
            names = [a.arg for a in node.args.args]
            defaulted = len(node.args.defaults)
            return [(n, i >= len(names) - defaulted) for i, n in enumerate(names)]
    raise ValueError(f"{path.name} has no function {function}")


def seed_arrays(bench: Benchmark, largest: int) -> Tuple[Dict[str, int], Dict]:
    """NPBench's own inputs (``initialize``) at its S sizes scaled down (``scaled_sizes``):
    (sizes, {argument: value})."""
    sizes = scaled_sizes(bench.presets, largest)
    init = getattr(load_module(bench.init_file), bench.init_function)
    made = init(**{name: sizes[name] for name in bench.init_args if name in sizes})
    made = made if isinstance(made, tuple) else (made,)
    values = dict(zip(bench.init_outputs, made))
    # an output of ``initialize`` that is a size (stockham's N) is a size
    sizes.update({k: int(v) for k, v in values.items() if k not in sizes and np.ndim(v) == 0
                  and isinstance(v, (int, np.integer))})
    return sizes, {k: np.asarray(v) for k, v in values.items()}


def make_target() -> Target:
    root = checkout()
    programs = {bench.name: _program(bench) for bench in benchmarks(root)}
    # no defaults of its own: every CPU built-in, as the FuzzyFlow paper measured NPBench
    return Target(name="npbench", programs=programs, partial=True)
