"""A Python builder for a bug's program: the SDFG written as calls of DaCe's API.

A developer reading a bug report understands ``add_map`` and ``add_tasklet`` faster than
SDFG JSON, and can edit it. Written where the program holds only what the builder writes:
states with interstate edges, control-flow regions (DaCe 2.0's loops, conditional blocks with
their branches, plain regions), arrays and scalars (no views or structures), access nodes, maps
and tasklets; anything else (nested SDFGs, library nodes, consumes) makes ``python_builder``
return None and the report says the program is given as an SDFG only.
Rendered from ``templates/builder.py.j2``.
"""
from __future__ import annotations

import re
from typing import Dict, List, Optional

from ..core.data import template_environment


class NotBuildable(Exception):
    """The program holds something the builder does not write."""


def python_builder(sdfg, bug_id: str = "") -> Optional[str]:
    """Python source that builds ``sdfg`` (None when it holds what the builder does not write)."""
    try:
        context = _context(sdfg)
    except NotBuildable:
        return None
    return template_environment().get_template("builder.py.j2").render(bug_id=bug_id, **context)


def _dtype(typeclass) -> str:
    name = typeclass.to_string() if hasattr(typeclass, "to_string") else str(typeclass)
    return {"double": "float64", "float": "float32", "long long": "int64", "int": "int32", "bool": "bool_",
            "unsigned char": "uint8", "char": "int8", "short": "int16", "unsigned int": "uint32",
            "unsigned long long": "uint64"}.get(name, name)


def _size(value) -> str:
    """A size as Python: an integer, or a symbolic expression parsed by DaCe (``S("N*5")``)."""
    try:
        return str(int(value))
    except (TypeError, ValueError):
        return f"S({str(value)!r})"


def _context(sdfg) -> Dict:
    import dace

    arrays = []
    for name, desc in sdfg.arrays.items():
        if type(desc) is dace.data.Scalar:
            arrays.append({"name": name, "scalar": True, "dtype": _dtype(desc.dtype), "transient": desc.transient})
        elif type(desc) is dace.data.Array:
            arrays.append({"name": name, "scalar": False, "dtype": _dtype(desc.dtype), "transient": desc.transient,
                           "shape": [_size(s) for s in desc.shape], "strides": [_size(s) for s in desc.strides]})
        else:
            raise NotBuildable(type(desc).__name__)
    blocks = _Blocks(sdfg)
    blocks.graph(sdfg, "sdfg")
    return {"name": sdfg.name, "symbols": sorted((k, _dtype(v)) for k, v in sdfg.symbols.items()),
            "arrays": arrays, "blocks": blocks.written, "transitions": blocks.transitions,
            "regions": blocks.uses_regions}


class _Blocks:
    """The control flow, graph by graph: each block in the order it must be made (a region
    before what it holds), and each graph's transitions after its blocks."""

    def __init__(self, sdfg):
        self.sdfg = sdfg
        self.written: List[Dict] = []
        self.transitions: List[Dict] = []
        self.counts: Dict[str, int] = {}
        self.uses_regions = False

    def graph(self, graph, graph_var: str) -> None:
        names = {block: self.block(graph, block, graph_var) for block in graph.nodes()}
        for e in graph.edges():
            self.transitions.append({"graph": graph_var, "src": names[e.src], "dst": names[e.dst],
                                     "condition": repr(e.data.condition.as_string),
                                     "assignments": repr({k: str(v) for k, v in e.data.assignments.items()})})

    def block(self, graph, block, graph_var: str) -> str:
        kind = type(block).__name__
        common = {"graph": graph_var, "label": block.label, "start": graph.start_block is block}
        if kind == "SDFGState":
            var = self._name("state")
            self.written.append({"kind": "state", **common, **_state(block, var)})
            return var
        self.uses_regions = True
        if kind == "LoopRegion":
            var = self._name("loop")
            self.written.append({"kind": "loop", "var": var, **common, **_loop(block)})
            self.graph(block, var)
        elif kind == "ConditionalBlock":
            var = self._name("conditional")
            self.written.append({"kind": "conditional", "var": var, **common})
            for condition, branch in block.branches:
                branch_var = self._name("branch")
                self.written.append({"kind": "branch", "var": branch_var, "owner": var, "label": branch.label,
                                     "condition": repr(condition.as_string) if condition is not None else None})
                self.graph(branch, branch_var)
        elif kind == "ControlFlowRegion":
            var = self._name("region")
            self.written.append({"kind": "region", "var": var, **common})
            self.graph(block, var)
        else:
            raise NotBuildable(kind)
        return var

    def _name(self, kind: str) -> str:
        self.counts[kind] = self.counts.get(kind, -1) + 1
        return f"{kind}{self.counts[kind]}"


def _loop(loop) -> Dict:
    def code(block) -> str:
        return repr(block.as_string if block is not None else None)

    # Python literals (repr), not JSON: a condition reads `i < N`, not `i \u003c N`
    return {"condition": code(loop.loop_condition), "loop_var": repr(loop.loop_variable or None),
            "init_expr": code(loop.init_statement), "update_expr": code(loop.update_statement),
            "inverted": bool(loop.inverted),
            "update_before_condition": bool(getattr(loop, "update_before_condition", True))}


def _state(state, var: str) -> Dict:
    from dace.sdfg import nodes

    entry_var: Dict = {}
    out: List[Dict] = []
    variables: Dict = {}
    for k, node in enumerate(state.nodes()):
        name = f"{var}_n{k}"
        if type(node) is nodes.AccessNode:
            out.append({"kind": "access", "var": name, "data": node.data})
        elif type(node) is nodes.Tasklet:
            out.append({"kind": "tasklet", "var": name, "label": node.label, "code": node.code.as_string,
                        "inputs": repr(sorted(node.in_connectors)), "outputs": repr(sorted(node.out_connectors)),
                        "language": node.language.name})
        elif type(node) is nodes.MapEntry:
            exit_node = state.exit_node(node)
            entry_var[exit_node] = f"{name}_exit"
            # DaCe's ends are inclusive, a range string's exclusive
            ranges = {p: f"{b}:{e + 1}" + ("" if s == 1 else f":{s}")
                      for p, (b, e, s) in zip(node.map.params, node.map.range.ndrange())}
            out.append({"kind": "map", "var": name, "exit_var": f"{name}_exit", "label": node.map.label,
                        "ranges": repr(ranges),
                        "schedule": node.map.schedule.name,
                        "in_connectors": sorted(node.in_connectors), "out_connectors": sorted(node.out_connectors),
                        "exit_in_connectors": sorted(exit_node.in_connectors),
                        "exit_out_connectors": sorted(exit_node.out_connectors)})
        elif type(node) is nodes.MapExit:
            continue                        # made with its entry
        else:
            raise NotBuildable(type(node).__name__)
        variables[node] = name
    variables.update(entry_var)
    edges = []
    for edge in state.edges():
        memlet = edge.data
        edges.append({"src": variables[edge.src], "dst": variables[edge.dst], "src_conn": repr(edge.src_conn),
                      "dst_conn": repr(edge.dst_conn), "memlet": _memlet(memlet)})
    return {"var": var, "nodes": out, "edges": edges}


def _memlet(memlet) -> str:
    if memlet.is_empty():
        return "dace.Memlet()"
    args = [f"data={memlet.data!r}", f"subset={str(memlet.subset)!r}"]
    if memlet.other_subset is not None:
        args.append(f"other_subset={str(memlet.other_subset)!r}")
    if memlet.wcr is not None:
        wcr = re.sub(r"\s+", " ", str(memlet.wcr))
        args.append(f"wcr={wcr!r}")
    if memlet.dynamic:
        args.append("dynamic=True")
    if str(memlet.volume) != str(memlet.subset.num_elements()):      # propagated out of a map: kept as is
        args.append(f"volume={_size(memlet.volume)}")
    return f"dace.Memlet({', '.join(args)})"
