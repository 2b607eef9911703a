"""Stage 1b: the transformation's own parameters as a fuzzed dimension.

From a transformation's DaCe property declarations (type, default, choices) and the scope it
matched, each property gets a ``Domain``: the values worth trying, simplest first (the
default, then small values), boundary-aware: 1 and 2, small primes (sizes that divide
nothing), the extents of the matched maps and loops and their neighbours, a value beyond every
extent; zero and equal overlaps; every member of an enumeration; both truth values.
``param_domains.json`` (and a class's own ``HARNESSGEN_PARAMS``) says which properties are
promises or names that are never varied.

A parameter *variant* is a dict of non-default values (``{}`` is the default). ``--params``
chooses how many a match gets: ``default`` (one), ``pairs`` (the run's default: the default
and ``PAIRS`` variants that change two properties together where their domains interact, a
size against an offset or overlap, a choice against a size: some bugs show only then),
``pairs:K`` (K such variants), ``boundary`` (the default and every value of each property
with the others at their default), ``N`` (at most N, drawn from all combinations, seeded,
simplest first). ``simpler`` lists the variants a finding's parameters shrink to, simplest
first.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
import json
import math
import random
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..core.errors import ConfigError
from ..dacecompat import json_context
from .instances import MATCH_PLACE_KEYS

DOMAINS_FILE = Path(__file__).with_name("param_domains.json")
MODES = ("default", "boundary", "pairs")
# pair variants per match in the run's default mode (``pairs``)
PAIRS = 2
NUMERIC_KINDS = ("size", "natural", "index")
# small primes: tile sizes and vector widths that divide no power of two and few extents
PRIMES = (3, 5)


@dataclasses.dataclass
class Domain:
    """The values one property is fuzzed with, the default first, then simplest first."""

    name: str
    kind: str
    values: List[Any]              # JSON values (tuples as lists, enum members by name)

    @property
    def default(self) -> Any:
        return self.values[0]

    def rank(self, value: Any) -> int:
        """How far from the simplest a value is (the default is 0); an unlisted value is last."""
        canon = _canon(value)
        for i, known in enumerate(self.values):
            if _canon(known) == canon:
                return i
        return len(self.values)


@dataclasses.dataclass
class Space:
    """A match's parameter space: the domains of its fuzzed properties, and why the others are not."""

    transformation: str
    domains: List[Domain]
    fixed: Dict[str, str]          # property -> why it keeps its default

    def domain(self, name: str) -> Optional[Domain]:
        return next((d for d in self.domains if d.name == name), None)

    def complexity(self, params: Dict[str, Any]) -> Tuple[int, int, str]:
        """Order of simplicity: fewer non-default properties, then values nearer the default."""
        ranks = [(self.domain(k).rank(v) if self.domain(k) else 99) for k, v in params.items()]
        return len(params), sum(ranks), _canon(params)

    def to_json(self) -> Dict:
        return {"transformation": self.transformation,
                "domains": {d.name: {"kind": d.kind, "values": d.values} for d in self.domains},
                "fixed": self.fixed}


@dataclasses.dataclass(frozen=True)
class ParamOptions:
    """How a run plans parameter variants: ``--params``, the largest size a symbol takes (the
    extents of symbolic scopes) and the seed that fixes which combinations ``N`` draws."""

    mode: str = "default"
    max_size: int = 16
    seed: int = 0


def parse_mode(text: str) -> str:
    """``--params`` as given: ``default``, ``pairs``, ``pairs:K``, ``boundary`` or a count ``N``."""
    value = str(text).strip().lower()
    if value in MODES:
        return value
    if value.isdigit() and int(value) >= 1:
        return str(int(value))
    if value.startswith("pairs:") and value[6:].isdigit():
        return f"pairs:{int(value[6:])}"
    raise ConfigError(f"--params {text!r}: expected default, pairs, pairs:K, boundary or a number of variants per "
                      "match (N >= 1)")


# ---------------------------------------------------------------- domains from declarations
@functools.lru_cache(maxsize=1)
def _builtin_hints() -> Dict[str, Dict]:
    data = json.loads(DOMAINS_FILE.read_text())
    return {k: v for k, v in data.items() if not k.startswith("_")}


def _hints(cls: type) -> Dict[str, Dict]:
    """What the data file says of a built-in (by the built-in it derives from) and what the class
    says of itself."""
    hints: Dict[str, Dict] = {}
    for base in reversed(cls.__mro__):
        if base.__module__.startswith("dace."):
            hints.update(_builtin_hints().get(base.__name__, {}))
    hints.update(getattr(cls, "HARNESSGEN_PARAMS", {}) or {})
    return hints


def space(cls: type, xform, sdfg, pinned: Sequence[str] = (), max_size: int = 16) -> Space:
    """The parameter space of one match of ``cls`` (``xform``, bound to ``sdfg``); ``pinned``:
    properties ``--set`` gave (never varied); ``max_size``: the largest size a symbol takes."""
    extents, dims = scope_extents(xform, max_size)
    hints = _hints(cls)
    domains, fixed = [], {}
    for name, prop in sorted(getattr(cls, "__properties__", {}).items()):
        if name in MATCH_PLACE_KEYS or name.startswith("_"):
            continue
        if name in pinned:
            fixed[name] = "pinned by --set"
            continue
        hint = hints.get(name, {})
        if "fixed" in hint:
            fixed[name] = hint["fixed"]
            continue
        domain, why = _domain(name, prop, hint, extents, dims)
        if domain is None:
            fixed[name] = why
        elif len(domain.values) > 1:
            domains.append(domain)
    return Space(cls.__name__, domains, fixed)


def _domain(name: str, prop, hint: Dict, extents: List[int], dims: int) -> Tuple[Optional[Domain], str]:
    default = _json_value(prop.default)
    if "values" in hint:
        return Domain(name, "choice", _unique([default, *hint["values"]])), ""
    kind = hint.get("kind") or _declared_kind(prop, default)
    if kind is None:
        return None, "a name, a string or an object: not varied"
    if kind == "bool":
        return Domain(name, kind, _unique([default, not default if default is not None else True, False])), ""
    if kind == "choice":
        members = [m.name for m in prop.choices if getattr(m, "name", m) != "Undefined"] \
            if hasattr(prop.choices, "__members__") else list(prop.choices)
        return Domain(name, kind, _unique([default, *members])), ""
    scalars = _scalar_values(kind, _scalar_default(default), extents, dims)
    if isinstance(default, list) or _is_shape(prop):
        return Domain(name, kind, _unique([default, *_shape_values(scalars, extents, dims, kind)])), ""
    return Domain(name, kind, _unique([default, *scalars])), ""


def _declared_kind(prop, default) -> Optional[str]:
    from dace.properties import EnumProperty, SymbolicProperty

    if isinstance(prop, EnumProperty) or (getattr(prop, "choices", None) and not _is_shape(prop)):
        return "choice"
    dtype = getattr(prop, "dtype", None)
    if dtype is bool or isinstance(default, bool):
        return "bool"
    scalar = _scalar_default(default)
    numeric = dtype is int or isinstance(prop, SymbolicProperty) or _is_shape(prop)
    if not numeric or not (scalar is None or isinstance(scalar, int)):
        return None
    if scalar is None or scalar > 0:
        return "size"
    return "natural" if scalar == 0 else "index"


def _is_shape(prop) -> bool:
    from dace.properties import ListProperty, ShapeProperty

    return isinstance(prop, ShapeProperty) or (isinstance(prop, ListProperty)
                                               and getattr(prop, "element_type", int) in (int, None))


def _scalar_default(default) -> Optional[int]:
    if isinstance(default, list):
        default = default[0] if default else None
    if isinstance(default, str):
        try:
            return int(default)
        except ValueError:
            return None
    return default if isinstance(default, int) and not isinstance(default, bool) else None


def _scalar_values(kind: str, default: Optional[int], extents: List[int], dims: int) -> List[int]:
    """One dimension's values, simplest first: small ones, primes, the extents and their
    neighbours, one beyond every extent."""
    if kind == "index":
        return list(range(-1, max(dims, 1)))
    top = max(extents, default=0)
    # a size equal to its extent is one tile (MapTiling skips it): its neighbours are the boundary;
    # an offset, overlap or count equal to the extent is one
    near = sorted({v for e in extents for v in ((e - 1, e + 1) if kind == "size" else (e - 1, e, e + 1))})
    values = ([1, 2] if kind == "size" else [0, 1, 2]) + list(PRIMES) + near + [2 * top + 1 if top else 17]
    low = 1 if kind == "size" else 0
    return sorted({v for v in values if v >= low and v != default}, key=lambda v: (v > 3, v))


def _shape_values(scalars: List[int], extents: List[int], dims: int, kind: str) -> List[List[int]]:
    """A tuple property per map dimension: every scalar value in all dimensions, then (in two
    or more dimensions) each dimension alone at its neighbours of the extent."""
    dims = max(dims, 1)
    out = [[v] * dims for v in scalars]
    if dims > 1:
        base = 1 if kind == "size" else 0
        for d in range(dims):
            for v in (PRIMES[0], max(extents, default=PRIMES[1]) + 1):
                out.append([v if i == d else base for i in range(dims)])
    return out


def scope_extents(xform, max_size: int) -> Tuple[List[int], int]:
    """The extents of the maps and loops a match holds (a symbolic size at ``max_size``, the
    largest a size symbol takes), and the most dimensions of one of its maps."""
    from dace.sdfg import nodes
    from dace.transformation import transformation as xf

    extents, dims = set(), 0
    for attr in dir(type(xform)):
        if not isinstance(getattr(type(xform), attr, None), xf.PatternNode):
            continue
        try:
            node = getattr(xform, attr)
        except Exception:  # noqa: BLE001 -- a pattern node the match leaves unset
            continue
        if isinstance(node, (nodes.MapEntry, nodes.MapExit)):
            dims = max(dims, len(node.map.params))
            for size in node.map.range.size_exact():
                extents.add(_at_size(size, max_size))
    loop = getattr(xform, "loop_information", None)
    if callable(loop):
        try:
            _, (start, end, step), _ = loop()
            extents.add(_at_size((end - start) / step + 1 if step else 0, max_size))
        except Exception:  # noqa: BLE001 -- no loop to read, or one DaCe cannot analyse
            pass
    known = sorted(e for e in extents if e is not None and e > 0)
    return sorted(set(known[:1] + known[-1:])), dims      # the smallest and the largest


def _at_size(expr, max_size: int) -> Optional[int]:
    from dace import symbolic

    try:
        expr = symbolic.pystr_to_symbolic(str(expr))
        value = expr.subs({s: max_size for s in expr.free_symbols})
        return int(value)
    except (TypeError, ValueError, AttributeError):
        return None


def variant_match(cls: type, match: Dict[str, Any], params: Dict[str, Any]) -> Dict[str, Any]:
    """The match's JSON with ``params`` set, each written as DaCe writes it (a value the
    property refuses raises ValueError)."""
    from dace.serialize import set_properties_from_json

    xform = cls()
    try:
        set_properties_from_json(xform, params, context=json_context(transformation=xform))
        written = json.loads(json.dumps(xform.to_json()))
    except Exception as exc:  # noqa: BLE001 -- DaCe raises what the property's parser raises
        raise ValueError(f"{cls.__name__}: {describe(params)} refused: {exc}") from exc
    # DaCe leaves a property at its default out of its JSON: a variant that sets one to a value
    # equal to the default (an explicit None) keeps the match's
    return {**match, **{k: written[k] for k in params if k in written}}


# ---------------------------------------------------------------- variants
def variants(space_: Space, mode: str, seed: int = 0, key: str = "") -> List[Dict[str, Any]]:
    """The parameter variants a match is judged with, the default (``{}``) first, then simplest
    first. ``key`` (the match's identity) and ``seed`` fix which combinations ``N`` draws."""
    if mode == "default" or not space_.domains:
        return [{}]
    if mode == "boundary":
        found = [{d.name: v} for d in space_.domains for v in d.values[1:]]
    elif mode.startswith("pairs"):
        found = _pairs(space_, int(mode.partition(":")[2] or PAIRS), seed, key)
    else:
        found = _drawn(space_, int(mode) - 1, seed, key)
    return [{}] + sorted(_unique_dicts(found), key=space_.complexity)


def _interaction(a: Domain, b: Domain) -> int:
    """How much two properties' domains interact: two sizes, offsets or counts (a tile size
    and its overlap) most, a choice or flag against one of them next (a tiling type and a
    stride), two choices least."""
    return (a.kind in NUMERIC_KINDS) + (b.kind in NUMERIC_KINDS)


def _pairs(space_: Space, count: int, seed: int, key: str) -> List[Dict[str, Any]]:
    """``count`` variants that each change two properties, from the pairs whose domains
    interact most, one pair after another (seeded by the match: every run draws the same)."""
    pairs = list(itertools.combinations(space_.domains, 2))
    if not pairs or count < 1:
        return []
    best = max(_interaction(a, b) for a, b in pairs)
    rng = random.Random(int(hashlib.sha256(f"pairs:{seed}:{key}".encode()).hexdigest()[:12], 16))
    queues = []
    for a, b in (p for p in pairs if _interaction(*p) == best):
        combos = [{a.name: va, b.name: vb} for va in a.values[1:] for vb in b.values[1:]]
        rng.shuffle(combos)
        queues.append(combos)
    found: List[Dict[str, Any]] = []
    while len(found) < count and any(queues):
        for queue in queues:
            if queue and len(found) < count:
                found.append(queue.pop(0))
    return found


def _drawn(space_: Space, count: int, seed: int, key: str) -> List[Dict[str, Any]]:
    """``count`` distinct non-default combinations; every one when there are no more."""
    if math.prod(len(d.values) for d in space_.domains) - 1 <= count:
        combos = itertools.product(*(d.values for d in space_.domains))
        return [p for p in (_params(space_, c) for c in combos) if p]
    rng = random.Random(int(hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()[:12], 16))
    found: Dict[str, Dict[str, Any]] = {}
    while len(found) < count:
        params = _params(space_, [rng.choice(d.values) for d in space_.domains])
        if params:
            found.setdefault(_canon(params), params)
    return list(found.values())


def _params(space_: Space, values: Sequence[Any]) -> Dict[str, Any]:
    return {d.name: v for d, v in zip(space_.domains, values) if d.rank(v) != 0}


def simpler(space_: Space, params: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The variants one step simpler than ``params``, simplest first: a property back at its
    default, or at a value nearer the default."""
    found = []
    for name, value in params.items():
        found.append({k: v for k, v in params.items() if k != name})
        domain = space_.domain(name)
        if domain is not None:
            found += [{**params, name: v} for v in domain.values[1:domain.rank(value)]]
    return sorted(_unique_dicts(found, keep_default=True), key=space_.complexity)


def variant_suffix(params: Dict[str, Any]) -> str:
    """What a variant's instance id adds to its match's: a short hash of its parameters."""
    return "" if not params else "-p" + hashlib.sha1(_canon(params).encode()).hexdigest()[:6]


def describe(params: Dict[str, Any]) -> str:
    """``tile_sizes=[5], tile_trivial=true`` (``defaults`` for none)."""
    return ", ".join(f"{k}={json.dumps(v)}" for k, v in sorted(params.items())) or "defaults"


# ---------------------------------------------------------------- helpers
def _json_value(value) -> Any:
    """A property value as JSON: tuples as lists, enum members by name, symbols as numbers
    where they are numbers."""
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    if hasattr(value, "name") and hasattr(type(value), "__members__"):
        return value.name
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    try:
        return int(value)
    except (TypeError, ValueError):
        return str(value)


def _canon(value) -> str:
    return json.dumps(value, sort_keys=True)


def _unique(values: List[Any]) -> List[Any]:
    seen, out = set(), []
    for v in values:
        if _canon(v) not in seen:
            seen.add(_canon(v))
            out.append(v)
    return out


def _unique_dicts(dicts: List[Dict[str, Any]], keep_default: bool = False) -> List[Dict[str, Any]]:
    return _unique([d for d in dicts if d or keep_default])
