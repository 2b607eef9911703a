"""A candidate cutout, as the extraction stage passes it on: the SDFG, where the match lies in
it, and why it is as large as it is; and the size of an input configuration, which both kinds
of cutout (DaCe's and the region cutouts) minimise."""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

from ..core.expr import to_sympy

# DaCe's own assumption for symbol values when it minimizes the input configuration.
VOLUME_PROBE_SIZE = 20


@dataclasses.dataclass
class Cut:
    """One candidate cutout: the SDFG, where the match lies in it, and why it is this large."""

    sdfg: Any
    match: Dict[str, Any]                        # relative to ``sdfg``, up to ``nested_path``
    nested_path: Optional[List[Tuple[int, int]]] = None   # the match's SDFG, when it moved into a copy
    aliases: List[Dict[str, Any]] = dataclasses.field(default_factory=list)
    grown_for: str = ""
    control_flow_grown: bool = False
    configs: Optional[Tuple[List[str], List[str]]] = None  # (inputs, outputs) where not DaCe's
    # symbols the cut blocks assign that the program reads after them: outputs of the cutout
    symbol_outputs: List[str] = dataclasses.field(default_factory=list)
    # the input volume before the cut took in what computes its inputs ("" where it did not),
    # or how to measure it when it is asked for (``Later``)
    volume_before: Union[str, "Later"] = ""
    # ``sdfg`` was just read back from JSON and nothing changes it: the sides are copied from it
    # directly, without another trip through JSON
    fresh: bool = False

    def match_in(self, pre) -> Dict[str, Any]:
        if self.nested_path is None:
            return self.match
        # the matched nested SDFG is copied whole into the grown cutout: the match keeps its
        # states and nodes, only its place in the cutout's list of SDFGs changes
        return {**self.match, "cfg_id": sdfg_along(pre, self.nested_path).cfg_id}


def sdfg_along(sdfg, path: List[Tuple[int, int]]):
    """The nested SDFG reached from ``sdfg`` through (state id, node id) of nested SDFG nodes."""
    for state_id, node_id in path:
        sdfg = sdfg.node(state_id).node(node_id).sdfg
    return sdfg


class Later:
    """A statistic measured once, when first asked for: a cutout's unreduced input volume is
    reported for the pairs that are judged, never for those that take an equal pair's verdict
    (the unreduced cutout it needs was a third of a small place's cut)."""

    def __init__(self, measure: Callable[[], str]):
        self._measure: Optional[Callable[[], str]] = measure
        self._value = ""

    def __call__(self) -> str:
        if self._measure is not None:
            self._value, self._measure = self._measure(), None
        return self._value


def input_volume(sdfg, names: List[str]) -> str:
    """Symbolic number of elements in the named containers (the input configuration size), as
    a polynomial in the symbols (expanded: ``simplify`` was a tenth of a small cutout's time)."""
    import sympy

    total = sympy.Integer(0)
    for name in names:
        total += to_sympy(sdfg.arrays[name].total_size)
    return str(sympy.expand(total))


def volumes_at(sdfg, names: List[str], values: Tuple[int, ...]) -> Tuple[int, ...]:
    """The number of elements in the named containers with every symbol at each of ``values``
    (-1 where a size is not a number there): a fast comparison of input configurations."""
    sizes = [to_sympy(sdfg.arrays[name].total_size) for name in names]
    found = []
    for value in values:
        try:
            found.append(sum(_at(size, value) for size in sizes))
        except (TypeError, ValueError):
            found.append(-1)
    return tuple(found)


def volume_at_probe(expr: str) -> int:
    """Evaluate a symbolic volume with every symbol at DaCe's probe value."""
    try:
        return _at(to_sympy(expr), VOLUME_PROBE_SIZE)
    except Exception:  # "unknown (...)" volumes
        return -1


def _at(size, value: int) -> int:
    """A symbolic size with every symbol at ``value``."""
    return int(size.subs({s: value for s in size.free_symbols}))
