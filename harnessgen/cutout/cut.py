"""A candidate cutout, as the extraction stage passes it on: the SDFG, where the match lies in
it, and why it is as large as it is."""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Optional, Tuple


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
