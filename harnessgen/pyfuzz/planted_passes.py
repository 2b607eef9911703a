"""Graph passes for ``pyfuzz --compiler torch --torch-pass MODULE:FUNCTION``: a planted bug
and its correct twin, the way a torch.compile developer would test a pass of their own.

A pass takes the FX graph Dynamo captured (before functionalization: in-place
writes and views are still there) and its example inputs, and returns the graph
the backend compiles next.

``drop_alias_writes``  planted: an in-place write whose tensor is a view of
                       another (``x[1:3].add_(y)``, ``v = x.view(...); v.copy_(y)``,
                       ``x[i] = y``) is removed as if it were dead, the classic
                       mistake of an alias analysis that looks at names, not
                       storage
``keep_alias_writes``  the same walk over the same nodes, removing nothing: the
                       plumbing alone must not make a finding
"""
from __future__ import annotations

import operator
from typing import List

# graph targets that return a view of their first operand
VIEWS = {"getitem", "select", "view", "reshape", "squeeze", "unsqueeze", "transpose", "t", "expand", "narrow",
         "permute", "as_strided", "unflatten", "flatten", "diagonal", "unbind", "split", "chunk"}


def _name(node) -> str:
    target = node.target
    return target if isinstance(target, str) else getattr(target, "__name__", str(target))


def _writes_in_place(node) -> bool:
    if node.op == "call_function" and node.target is operator.setitem:
        return True
    name = _name(node)
    return node.op in ("call_method", "call_function") and name.endswith("_") and not name.startswith("_")


def _is_view(node) -> bool:
    return getattr(node, "op", None) in ("call_method", "call_function") and _name(node) in VIEWS


def alias_writes(gm) -> List:
    """The in-place writes of ``gm`` whose written tensor is a view."""
    return [n for n in gm.graph.nodes if _writes_in_place(n) and n.args and _is_view(n.args[0])]


def drop_alias_writes(gm, example_inputs):
    for node in alias_writes(gm):
        node.replace_all_uses_with(node.args[0])
        gm.graph.erase_node(node)
    gm.graph.lint()
    gm.recompile()
    return gm


def keep_alias_writes(gm, example_inputs):
    alias_writes(gm)
    gm.graph.lint()
    gm.recompile()
    return gm
