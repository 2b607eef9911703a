"""Stage 1: every place a transformation applies, as a serializable ``Instance``.

Transformations are named on the command line as
  ``MapTiling``                 a DaCe built-in, by class name
  ``path/to/file.py:Class``     a class in a Python file
  ``package.module:Class``      a class in an importable module
"""
from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import platform
import warnings
from typing import Any, Dict, Iterator, List, Optional

from ..core.errors import ConfigError, Unsupported
from ..dacecompat import json_context
from ..targets import Program, Target
from ..targets.loaders import load_class
from .passes import close_pass_names


@dataclasses.dataclass
class Instance:
    """One match of a transformation in one program."""

    id: str
    target: str
    program: str
    transformation: str          # class name
    transformation_spec: str     # how to load the class again
    match: Dict[str, Any]        # the transformation's JSON, relative to the program's SDFG
    description: str = ""
    # which SDFG of the program the match lies in: the simplified one (what DaCe users run, and
    # what pattern transformations meet by default) or the one the frontend wrote (--no-simplify,
    # and every pass: simplify would leave them nothing to do)
    simplified: bool = True
    # a parameter variant (--params): the properties it sets apart from their defaults, and the
    # id of the match's instance with every property at its default
    params: Dict[str, Any] = dataclasses.field(default_factory=dict)
    base: str = ""
    # a step of a recipe (``harnessgen.recipe``): where its recording is kept and which step
    # (``{"store", "index"}``, index 0 the whole recipe); {} for every other instance
    step: Dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def match_id(self) -> str:
        """The match this instance judges, whatever its parameters."""
        return self.base or self.id

    @property
    def variant_record(self) -> Dict[str, Any]:
        """What a result records of a parameter variant: its values and its match ({} for a
        match at its defaults)."""
        return {"values": self.params, "match": self.base} if self.params else {}

    def to_json(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, obj: Dict[str, Any]) -> "Instance":
        return cls(**obj)


# DaCe's transformation modules that do not import here, with why (an optional dependency
# such as torch or onnx is missing): their transformations cannot be used
UNIMPORTABLE: Dict[str, str] = {}


# packages of dace.transformation that import optional machine-learning dependencies (torch,
# onnx: torch alone takes 4.5 s to import): imported only when a name is not found elsewhere.
# None of their transformations is a CPU built-in (``exclusion_reason``).
OPTIONAL_PACKAGES = ("onnx",)
_IMPORTED: set = set()                # which rounds are done: "core", "optional"


def _import_dace_transformations(optional: bool = False) -> None:
    """Import every module of ``dace.transformation`` (``optional``: those of
    ``OPTIONAL_PACKAGES`` too): a transformation registers itself when its module is imported,
    and the packages' ``__init__`` files do not import all of them (DaCe 1.0.2's
    ``LoopLifting``). A module that fails to import is left out (its classes cannot be used
    either) and kept in ``UNIMPORTABLE`` with the reason."""
    import importlib
    import pkgutil

    import dace.transformation as package

    round_ = "optional" if optional else "core"
    if round_ in _IMPORTED:
        return
    _IMPORTED.add(round_)
    prefix = package.__name__ + "."
    # walked by hand: pkgutil.walk_packages imports every package to look into it, the
    # optional ones too
    pending = [(info.name, info.ispkg) for info in pkgutil.iter_modules(package.__path__, prefix)
               if (info.name.removeprefix(prefix) in OPTIONAL_PACKAGES) == optional]
    while pending:
        name, is_package = pending.pop(0)
        if name in UNIMPORTABLE:
            continue
        try:
            module = importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 -- an optional dependency of one module is missing
            UNIMPORTABLE[name] = f"{type(exc).__name__}: {exc}"
            warnings.warn(f"DaCe module {name} does not import here ({type(exc).__name__}: {exc}); "
                          "its transformations are not available")
            continue
        if is_package:
            pending += [(info.name, info.ispkg) for info in pkgutil.iter_modules(module.__path__, name + ".")]


def class_spec(cls: type) -> str:
    """The value ``load_transformation`` or ``passes.find_pass`` loads ``cls`` again from (in a
    worker too): DaCe's own by name, a class of a user's file (or of a script) by
    ``file.py:Class``, any other by ``module:Class``."""
    import sys

    from ..targets.loaders import USER_MODULE_PREFIX
    from .passes import builtin_passes

    if builtin_transformations().get(cls.__name__) is cls or builtin_passes().get(cls.__name__) is cls:
        return cls.__name__
    source = getattr(sys.modules.get(cls.__module__), "__file__", None)
    if source and (cls.__module__.startswith(USER_MODULE_PREFIX) or cls.__module__ == "__main__"):
        return f"{source}:{cls.__qualname__}"      # a user's file: loaded again from it
    return f"{cls.__module__}:{cls.__qualname__}"


def builtin_transformations(optional: bool = False) -> Dict[str, type]:
    """DaCe's own pattern and subgraph transformations, by class name (``optional``: those of
    ``OPTIONAL_PACKAGES`` too)."""
    from dace.transformation.transformation import PatternTransformation, SubgraphTransformation

    _import_dace_transformations()
    if optional:
        _import_dace_transformations(optional=True)
    found: Dict[str, type] = {}
    classes = list(PatternTransformation.subclasses_recursive(all_subclasses=True))
    classes += list(SubgraphTransformation.subclasses_recursive())
    for cls in classes:
        if cls.__module__.startswith("dace."):
            found.setdefault(cls.__name__, cls)
    return found


# why a DaCe built-in is not in ``--transformation all`` (CPU code only): by a word of its
# module's name, then by its own name
_NOT_CPU_MODULES = {"gpu": "makes GPU code (--transformation gpu)", "fpga": "makes FPGA code",
                    "mpi": "makes MPI code", "map_distribution": "distributes data over MPI ranks",
                    "hbm": "FPGA high-bandwidth memory", "bank_split": "FPGA memory banks",
                    "warp_tiling": "GPU warps", "copy_to_device": "copies to a GPU",
                    "streaming_memory": "FPGA streams", "stream_transient": "streams (FPGA)"}
# code only some machines compile: left out elsewhere (its build failure would be the machine's)
_MACHINE_ONLY = {"sve": ("aarch64", "makes ARM SVE code, which only an aarch64 compiler with SVE builds")}
_NOT_TRANSFORMATIONS = {"DetectLoop": "an abstract base of loop transformations",
                        "ExpandTransformation": "the base of library-node expansions"}


def exclusion_reason(cls: type) -> Optional[str]:
    """Why a DaCe built-in pattern transformation is not among the CPU built-ins; None if it is."""
    from dace.transformation.transformation import ExpandTransformation, SubgraphTransformation

    package, _, module = cls.__module__.removeprefix("dace.transformation.").partition(".")
    if issubclass(cls, SubgraphTransformation):
        return "a subgraph transformation (only pattern transformations are enumerated)"
    if issubclass(cls, ExpandTransformation) or cls.__module__.startswith("dace.libraries."):
        return "a library-node expansion (the code generator runs it)"
    if cls.__name__ in _NOT_TRANSFORMATIONS:
        return _NOT_TRANSFORMATIONS[cls.__name__]
    if not cls.__module__.startswith("dace.transformation."):
        return f"not in dace.transformation ({cls.__module__})"
    word = next((w for w in _NOT_CPU_MODULES if w in module), None)
    if word is not None:
        return _NOT_CPU_MODULES[word]
    for word, (machine, why) in _MACHINE_ONLY.items():
        if word in module.split(".") and platform.machine() != machine:
            return f"{why} (this machine is {platform.machine()})"
    if package not in ("dataflow", "interstate"):
        return f"lives in dace.transformation.{package}, not among the dataflow or interstate transformations"
    return None


def cpu_builtin_transformations() -> List[str]:
    """Names of DaCe's pattern transformations that produce CPU code: what ``--transformation
    all`` selects, sorted (``exclusion_reason`` says why each other one is not)."""
    return sorted(name for name, cls in builtin_transformations().items() if exclusion_reason(cls) is None)


def load_transformation(spec: str) -> type:
    """Resolve a ``--transformation`` value to a pattern transformation class."""
    from dace.transformation.transformation import PatternTransformation, SubgraphTransformation

    if ":" in spec:
        cls = load_class(spec)
    else:
        builtins = builtin_transformations()
        cls = builtins.get(spec)
        if cls is None:
            builtins = builtin_transformations(optional=True)
            cls = builtins.get(spec)
        if cls is None:
            close = difflib.get_close_matches(spec, sorted(builtins), n=3, cutoff=0.6) + close_pass_names(spec)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            if UNIMPORTABLE:
                hint += f"; these DaCe modules do not import here, their transformations unknown: " \
                        f"{', '.join(sorted(UNIMPORTABLE))}"
            raise ConfigError(f"--transformation {spec!r} is neither a DaCe built-in transformation nor a DaCe "
                              f"pass{hint}; custom ones are given as path/file.py:Class or module:Class")
    if not (isinstance(cls, type) and issubclass(cls, (PatternTransformation, SubgraphTransformation))):
        raise ConfigError(f"--transformation {spec!r} is not a DaCe transformation or pass class")
    return cls


def instance_id(program: str, cls_name: str, match: Dict[str, Any]) -> str:
    """Class name plus a short hash of the program name and the match JSON (stable across runs)."""
    blob = json.dumps({"program": program, "match": match}, sort_keys=True, default=str)
    return f"{cls_name}-{hashlib.sha1(blob.encode()).hexdigest()[:8]}"


def rebuild_transformation(cls: type, match: Dict[str, Any], sdfg) -> Any:
    """Recreate a matched transformation of ``cls`` from its JSON, bound to ``sdfg``.

    DaCe's own ``from_json`` looks the class up by name among all subclasses,
    which picks the wrong class when a user's class shadows a built-in name.
    """
    from dace.serialize import set_properties_from_json

    expr_index = match.get("expr_index", 0)
    expr = cls.expressions()[expr_index]
    subgraph = {expr.node(int(k)): int(v) for k, v in match.get("_subgraph", {}).items()}
    xform = cls()
    xform.setup_match(sdfg, match.get("cfg_id", 0), match.get("state_id", 0), subgraph, expr_index)
    # a match kept from another DaCe says which (its settings are read as that DaCe wrote them)
    set_properties_from_json(xform, match, context=json_context(match.get("dace_version"), transformation=xform),
                             ignore_properties={"transformation", "type", "dace_version"})
    xform._sdfg = sdfg
    return xform


# the keys of a match's JSON that say where it lies (the others say how it is set)
MATCH_PLACE_KEYS = frozenset({"type", "transformation", "_subgraph", "cfg_id", "sdfg_id", "state_id", "expr_index",
                              "dace_version"})


def match_settings(match: Dict[str, Any]) -> Dict[str, Any]:
    """The transformation's properties a match records (``--set``), without where it lies."""
    return {k: v for k, v in match.items() if k not in MATCH_PLACE_KEYS}


def pattern_matches(sdfg, cls, options: Optional[Dict[str, Any]]) -> Iterator[Any]:
    from dace.transformation import optimizer

    yield from optimizer.Optimizer(sdfg).get_pattern_matches(patterns=[cls], options=[options] if options else None)


def bound_node(xform, key: str):
    """The node a match binds to a pattern node; None for one its expression does not use
    (DaCe raises KeyError: a loop match binds no ``loop_break`` in most of its expressions)."""
    try:
        return getattr(xform, key)
    except KeyError:
        return None


def match_scopes(sdfg, names: List[str]) -> Dict[str, List[str]]:
    """Every match of each named transformation in ``sdfg``, said by its scope kind: the node
    types the match binds, in pattern order (``MapEntry``, ``LoopRegion+LoopRegion``). A
    transformation whose matching raises counts as matching nothing."""
    found: Dict[str, List[str]] = {}
    for name in names:
        cls = load_transformation(name)
        scopes = []
        try:
            for xform in pattern_matches(sdfg, cls, None):
                nodes = [bound_node(xform, key) for key in cls._get_pattern_nodes()]
                scopes.append("+".join(type(n).__name__ for n in nodes if n is not None) or "SDFG")
        except Exception:  # noqa: BLE001 -- DaCe's matcher failed: what a plan records as ERROR
            scopes = []
        found[name] = scopes
    return found


def parse_settings(settings: List[str], cls: type) -> Dict[str, Any]:
    """``--set NAME=VALUE`` (VALUE as JSON, else a string) into transformation properties."""
    out: Dict[str, Any] = {}
    props = getattr(cls, "__properties__", {})
    for item in settings or []:
        name, sep, raw = item.partition("=")
        if not sep:
            raise ConfigError(f"--set {item!r}: expected NAME=VALUE")
        if props and name not in props:
            raise ConfigError(f"--set {name}: {cls.__name__} has no property {name!r} "
                              f"(it has: {', '.join(sorted(props))})")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        out[name] = tuple(value) if isinstance(value, list) else value
    return out


def enumerate_instances(target: Target, programs: List[Program], cls: type, spec: str,
                        sdfgs: Optional[Dict[str, Any]] = None,
                        settings: Optional[Dict[str, Any]] = None) -> List[Instance]:
    """Every match of ``cls`` in the given programs, in a deterministic order."""
    from dace.transformation.transformation import SubgraphTransformation

    if issubclass(cls, SubgraphTransformation):
        raise Unsupported(f"{cls.__name__} is a subgraph transformation; only pattern transformations "
                          "are enumerated so far")
    found: List[Instance] = []
    failed: List[tuple] = []
    for program in programs:
        sdfg = sdfgs[program.name] if sdfgs is not None else program.build()
        try:
            matches = list(pattern_matches(sdfg, cls, settings))
        except Exception as exc:  # noqa: BLE001 -- DaCe's matcher failed on this program only
            failed.append((program.name, exc))
            continue
        for xform in matches:
            # through JSON once, so the record equals what a file round trip gives back
            match = json.loads(json.dumps(xform.to_json()))
            desc = _describe(xform, sdfg)
            found.append(Instance(id=instance_id(program.name, cls.__name__, match), target=target.name,
                                  program=program.name, transformation=cls.__name__,
                                  transformation_spec=spec, match=match, description=desc))
    if failed and len(failed) == len(programs):
        raise failed[0][1]
    for name, exc in failed:     # the other programs' matches stand; the run's warnings.log says which failed
        warnings.warn(f"{cls.__name__}: matching failed on program {name}: {type(exc).__name__}: {exc}")
    found.sort(key=lambda inst: (inst.program, inst.id))
    return found


def _describe(xform, sdfg) -> str:
    try:
        return xform.print_match(sdfg)
    except Exception:  # print_match is best-effort in DaCe; a description is optional
        return xform.__class__.__name__
