"""DaCe passes and pipelines as what is tested: loading one, running it (all of it, a prefix
of its steps, or a subset of its passes), and which SDFGs of a program it changed.

A *pass spec* on the command line is ``simplify`` (DaCe's simplification pipeline), the class
name of a DaCe pass (``FuseStates``, ``DeadDataflowElimination``, ``ConstantPropagation``, ...)
or ``module:Class`` / ``file.py:Class`` for a user's own ``Pass``. A pass that is one of
simplify's members runs as simplify runs it (recursively into nested SDFGs where simplify
does that, to a fixed point, interstate edges split afterwards): simplify with every other
member skipped. Any other pass runs once in a plain ``Pipeline`` that adds its analyses.
"""
from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from ..core.errors import ConfigError
from ..dacecompat import copy_sdfg, simplify_members
from ..targets.loaders import load_class

SIMPLIFY = "simplify"
# JSON keys a copy of an SDFG (and a cutout of it) renumbers or drops, and the history DaCe
# keeps of how it was made (1.0.2 keeps the original program once a transformation is
# recorded): not its content
VOLATILE_KEYS = ("cfg_id", "sdfg_list_id", "hash", "guid", "debuginfo", "orig_sdfg", "transformation_hist")


@dataclasses.dataclass(frozen=True)
class PassSpec:
    """A loaded pass spec: the class, what reports call it, and its members when a pipeline."""

    spec: str
    cls: type
    name: str

    @property
    def members(self) -> List[str]:
        """The modifying passes a pipeline is made of, in its order (one name for a single pass)."""
        from dace.transformation import pass_pipeline as ppl

        if not issubclass(self.cls, ppl.Pipeline):
            return [self.cls.__name__]
        return [type(p).__name__ for p in self.cls().passes if _modifies(p)]

    @property
    def is_pipeline(self) -> bool:
        return len(self.members) > 1


def builtin_passes() -> Dict[str, type]:
    """DaCe's own passes and pipelines that change an SDFG, by class name (``simplify`` too)."""
    import dace.transformation.passes  # noqa: F401 -- registers the built-in passes
    from dace.transformation import pass_pipeline as ppl
    from dace.transformation.passes.simplify import SimplifyPass

    found = {SIMPLIFY: SimplifyPass}
    for cls in _subclasses(ppl.Pass):
        if cls.__module__.startswith("dace.transformation.passes") and cls.__name__ not in found \
                and not required_arguments(cls):
            found[cls.__name__] = cls
    return found


def _subclasses(base: type) -> List[type]:
    seen, stack = [], list(base.__subclasses__())
    while stack:
        cls = stack.pop()
        if cls not in seen:
            seen.append(cls)
            stack.extend(cls.__subclasses__())
    return sorted(seen, key=lambda c: (c.__module__, c.__name__))


def is_pass_class(cls: Any) -> bool:
    from dace.transformation import pass_pipeline as ppl
    from dace.transformation.transformation import PatternTransformation, SubgraphTransformation

    return (isinstance(cls, type) and issubclass(cls, ppl.Pass)
            and not issubclass(cls, (PatternTransformation, SubgraphTransformation)))


def required_arguments(cls: type) -> List[str]:
    """What a pass's constructor needs that has no default (``PatternMatchAndApplyRepeated``'s
    ``transformations``): harnessgen makes every pass with none, so it cannot run such a pass."""
    # DaCe's properties wrap every constructor as (obj, *args, **kwargs): only a call tells
    import re

    try:
        cls()
    except TypeError as exc:
        found = re.search(r"missing \d+ required (?:positional|keyword-only) arguments?: (.*)", str(exc))
        return re.findall(r"'(\w+)'", found.group(1)) if found else []
    except Exception:  # noqa: BLE001 -- it is made, or fails for a reason of its own: not ours to judge here
        return []
    return []


def find_pass(spec: str) -> Optional[PassSpec]:
    """The pass a ``--transformation`` value names, or None where it names none (a pattern
    transformation, or nothing: the caller says which)."""
    if ":" in spec:
        cls = load_class(spec)
        if is_pass_class(cls) and required_arguments(cls):
            raise ConfigError(f"--transformation {spec}: the pass needs constructor argument(s) "
                              f"{', '.join(required_arguments(cls))}, and harnessgen makes each pass without any; "
                              "give a subclass of your own that sets them")
        return PassSpec(spec, cls, cls.__name__) if is_pass_class(cls) else None
    cls = builtin_passes().get(spec) or builtin_passes().get(spec.lower())
    if cls is None:
        return None
    return PassSpec(spec, cls, SIMPLIFY if spec.lower() == SIMPLIFY else cls.__name__)


def close_pass_names(spec: str) -> List[str]:
    return difflib.get_close_matches(spec, sorted(builtin_passes()), n=3, cutoff=0.6)


def simplify_member_names() -> List[str]:
    return simplify_members()


def _modifies(p) -> bool:
    from dace.transformation.pass_pipeline import Modifies

    return p.modifies() != Modifies.Nothing


# ---------------------------------------------------------------- running a pass
@dataclasses.dataclass
class Steps:
    """What one run of a pass did: the modifying passes that changed something, in order."""

    applied: List[str] = dataclasses.field(default_factory=list)


def _pipeline_for(pspec: PassSpec):
    """The object whose ``apply_pass`` runs the spec as the module docstring says."""
    from dace.transformation import pass_pipeline as ppl
    from dace.transformation.passes.simplify import SimplifyPass

    if issubclass(pspec.cls, ppl.Pipeline):
        return pspec.cls()
    if pspec.name in simplify_member_names():
        return SimplifyPass(skip=set(simplify_member_names()) - {pspec.name})
    return ppl.Pipeline([pspec.cls()])


def run_pass(pspec: PassSpec, sdfg, limit: Optional[int] = None, only: Optional[Iterable[str]] = None) -> Steps:
    """Apply the pass to ``sdfg`` in place. ``limit``: stop after this many steps that changed
    something; ``only``: apply only these member passes (their analyses still run)."""
    pipeline = _pipeline_for(pspec)
    steps = Steps()
    allowed = None if only is None else set(only)
    original = pipeline.apply_subpass

    def subpass(graph, p, state):
        modifying = _modifies(p)
        if limit is not None and len(steps.applied) >= limit:
            return None
        if modifying and allowed is not None and type(p).__name__ not in allowed:
            return None
        result = original(graph, p, state)
        if modifying and result is not None:
            steps.applied.append(type(p).__name__)
        return result

    pipeline.apply_subpass = subpass
    pipeline.apply_pass(sdfg, {})
    return steps


def applied_copy(pspec: PassSpec, sdfg, **kwargs):
    """A deep copy of ``sdfg`` with the pass applied (``run_pass``'s keywords)."""
    post = copy_sdfg(sdfg)
    run_pass(pspec, post, **kwargs)
    return post


# ---------------------------------------------------------------- what changed
def sdfg_paths(sdfg) -> Dict[str, Any]:
    """Every SDFG of a program by a path that survives a pass changing node ids: ``""`` for the
    top level, then ``<parent path>/<state label>/<nested SDFG node label>`` (``#k`` added
    where a state holds several nodes of one label)."""
    from dace import nodes

    found: Dict[str, Any] = {"": sdfg}

    def walk(level, prefix: str) -> None:
        for state in sorted(_states(level), key=lambda s: s.label):
            seen: Dict[str, int] = {}
            nested = [n for n in state.nodes() if isinstance(n, nodes.NestedSDFG)]
            for node in sorted(nested, key=lambda n: n.label):
                k = seen[node.label] = seen.get(node.label, 0) + 1
                path = f"{prefix}/{state.label}/{node.label}" + (f"#{k}" if k > 1 else "")
                found[path] = node.sdfg
                walk(node.sdfg, path)

    walk(sdfg, "")
    return found


def _states(sdfg) -> list:
    """Every state of one SDFG, inside its control-flow regions too (not into nested SDFGs)."""
    return list(sdfg.all_states()) if hasattr(sdfg, "all_states") else list(sdfg.states())


def fingerprint(sdfg, nested: bool = False) -> str:
    """A hash of one SDFG's own content: its nested SDFGs stand in by their labels (``nested``:
    with their content too), and what a copy renumbers or drops (ids, GUIDs, debug
    information) is left out."""
    import dace

    def strip(obj):
        if isinstance(obj, dict):
            inner = obj.get("type") == "NestedSDFG" and not nested
            return {k: ({a: strip(v) for a, v in obj[k].items() if a != "sdfg"} if inner and k == "attributes"
                        else strip(obj[k]))
                    for k in obj if k not in VOLATILE_KEYS}
        if isinstance(obj, list):
            return [strip(v) for v in obj]
        return obj

    blob = json.dumps(strip(json.loads(dace.serialize.dumps(sdfg.to_json()))), sort_keys=True, default=str)
    return hashlib.sha1(blob.encode()).hexdigest()


# the fingerprints of programs passes start from (the program as its frontend wrote it, the
# same for every pass of a plan: its prints were half of enumerating each pass on CLOUDSC), by
# id() while the program is held here; programs are never changed in place
_PRINTS: Dict[int, Tuple[Any, str, Dict[str, str]]] = {}


def _prints_of(pre) -> Tuple[str, Dict[str, str]]:
    """(the whole program's fingerprint, each SDFG's by path)."""
    kept = _PRINTS.get(id(pre))
    if kept is None or kept[0] is not pre:
        if len(_PRINTS) >= 4:
            _PRINTS.clear()
        kept = _PRINTS[id(pre)] = (pre, fingerprint(pre, nested=True),
                                   {path: fingerprint(s) for path, s in sdfg_paths(pre).items()})
    return kept[1], kept[2]


def changed_paths(pre, post) -> List[str]:
    """The paths (``sdfg_paths``) of pre's SDFGs that the pass changed: those whose content
    differs, and the parents of nested SDFGs it removed or added. A post equal to pre as a
    whole changed none (one print of it instead of one per SDFG: most passes change nothing)."""
    whole, before = _prints_of(pre)
    if fingerprint(post, nested=True) == whole:
        return []
    after = {path: fingerprint(s) for path, s in sdfg_paths(post).items()}
    changed = {path for path in before if path in after and before[path] != after[path]}
    changed |= {parent_path(path) for path in set(before) ^ set(after)}
    return sorted(p for p in changed if p in before)


def parent_path(path: str) -> str:
    return path.rsplit("/", 2)[0] if path else ""


def nested_node(sdfg, path: str):
    """(state, nested SDFG node) that ``path`` names, its parent SDFG being ``parent_path``'s."""
    from dace import nodes

    parent = sdfg_paths(sdfg)[parent_path(path)]
    _, state_label, node_label = path.rsplit("/", 2)
    label, _, k = node_label.partition("#")
    for state in _states(parent):
        if state.label == state_label:
            matches = sorted((n for n in state.nodes() if isinstance(n, nodes.NestedSDFG) and n.label == label),
                             key=lambda n: n.label)
            return state, matches[int(k or 1) - 1]
    raise KeyError(path)


def minimal_subset(items: List[str], still_fails: Callable[[List[str]], bool]) -> List[str]:
    """Zeller's ddmin: a subset of ``items`` (order kept) for which ``still_fails`` holds and
    from which no single item can be left out. ``still_fails(items)`` must hold."""
    current, n = list(items), 2
    while len(current) >= 2:
        chunk = max(1, len(current) // n)
        parts = [current[i:i + chunk] for i in range(0, len(current), chunk)]
        reduced = False
        for i in range(len(parts)):
            complement = [x for j, part in enumerate(parts) if j != i for x in part]
            if complement and still_fails(complement):
                current, n, reduced = complement, max(n - 1, 2), True
                break
        if not reduced:
            if n >= len(current):
                break
            n = min(len(current), 2 * n)
    return current

