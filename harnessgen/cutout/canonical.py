"""A pair's canonical form: pre and post up to the names and GUIDs DaCe gives them.

Two instances of a transformation at different places of a program (or two settings of its
parameters) often make the same pair: the same containers, symbols, code and change, with
other names. Such pairs compute the same functions, so they are bound to get the same verdict,
and one of them is judged for all (``pair_key``).

The key is sound before it is complete: a difference it cannot see past (the same graph
with its nodes listed in another order, a name also called in code) makes two keys or none,
never one for two programs. What it leaves out is only what no generated code depends on:
GUIDs, labels, source positions, the transformation history, the order names are declared
in, and the names themselves, each replaced by its place in the order of first use in the
graph (a bijection, so pairs whose names collide differently do not merge).
"""
from __future__ import annotations

import hashlib
import json
import re
from typing import Dict, Iterable, List, Optional

# keys whose values no generated code depends on
_DROPPED = frozenset({"guid", "label", "debuginfo", "transformation_hist", "orig_sdfg", "hash", "name",
                      "source_files", "dace_version", "origin", "collapsed"})
# keys whose values are DaCe's own words (a container may be named like one of them)
_NOT_NAMES = frozenset({"type", "language", "dtype", "storage", "schedule", "lifetime", "instrument",
                        "wcr_nonatomic", "allow_oob", "unroll", "omp_schedule"})
# dict-valued keys whose keys are names
_NAME_KEYED = frozenset({"_arrays", "symbols", "in_connectors", "out_connectors", "constants_prop",
                         "symbol_mapping", "values", "assignments"})
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CANON = "hg_n{}"


def pair_key(pre_json: Dict, post_json: Dict, extra: Optional[Dict] = None) -> Optional[str]:
    """A hex digest equal for two pairs whose pre, post and ``extra`` (the constraints, the
    input and output configuration, the alias groups) are the same up to names; None where the pair cannot be
    put into that form safely (a name also called as a function or taken as an attribute in
    its code)."""
    document = [_stripped(pre_json), _stripped(post_json), _stripped(extra or {})]
    names = _names_in_order(document)
    if _called(document, names):
        return None
    renamed = _renamed(document, {name: _CANON.format(i) for i, name in enumerate(names)})
    text = json.dumps(renamed, sort_keys=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _stripped(node):
    """The document without ``_DROPPED``; its tuples as lists (a conditional block's branches are
    (condition, region) pairs: what is in them is named and compared like the rest)."""
    if isinstance(node, dict):
        return {k: _stripped(v) for k, v in node.items() if k not in _DROPPED}
    if isinstance(node, (list, tuple)):
        return [_stripped(v) for v in node]
    return node


def _names_in_order(document) -> List[str]:
    """Every declared name (containers, symbols, connectors, map parameters), in the order of
    first use in a walk of the document (``_texts``): the same walk on an equivalent pair meets
    the names at the same places."""
    declared = set()
    _collect_declared(document, declared)
    ordered: Dict[str, None] = {}
    for word in _words(document):
        if word in declared:
            ordered.setdefault(word)
    return list(ordered)


def _collect_declared(node, declared: set) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _NAME_KEYED and isinstance(value, dict):
                declared.update(str(k) for k in value)
            elif key == "params" and isinstance(value, list):
                declared.update(str(v) for v in value if isinstance(v, str))
            elif key in ("data", "src_connector", "dst_connector") and isinstance(value, str):
                declared.add(value)
            _collect_declared(value, declared)
    elif isinstance(node, list):
        for value in node:
            _collect_declared(value, declared)


def _words(node) -> Iterable[str]:
    for text in _texts(node, with_keys=True):
        yield from _WORD.findall(text)


def _texts(node, with_keys: bool) -> Iterable[str]:
    """The document's strings (and keys), the graph before the declarations (``attributes``
    last): an order of first use that does not depend on the order names were declared in."""
    if isinstance(node, dict):
        for key, value in sorted(node.items(), key=lambda item: item[0] == "attributes"):
            if with_keys:
                yield str(key)
            if key not in _NOT_NAMES:
                yield from _texts(value, with_keys)
    elif isinstance(node, list):
        for value in node:
            yield from _texts(value, with_keys)
    elif isinstance(node, str):
        yield node


def _called(document, names: List[str]) -> bool:
    """Whether a name is also called as a function somewhere (``exp(``) or taken as an
    attribute (``x.real``): renaming it would rename what it calls or takes."""
    if not names:
        return False
    alternatives = "|".join(map(re.escape, names))
    pattern = re.compile(r"\b(?:" + alternatives + r")\s*\(|\.\s*(?:" + alternatives + r")\b")
    return any(pattern.search(text) for text in _texts(document, with_keys=False))


def _renamed(node, mapping: Dict[str, str]):
    if not mapping:
        return node
    pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(mapping, key=len, reverse=True))) + r")\b")

    def text(value: str) -> str:
        return pattern.sub(lambda m: mapping[m.group(0)], value)

    order = {canonical: i for i, canonical in enumerate(mapping.values())}

    def walk(value, key=None):
        if isinstance(value, dict):
            out = {text(str(k)): (v if k in _NOT_NAMES else walk(v, k)) for k, v in value.items()}
            if key in _NAME_KEYED:       # declared in any order: listed by first use
                out = dict(sorted(out.items(), key=lambda item: (item[0] not in order, order.get(item[0], 0),
                                                                 item[0])))
            return out
        if isinstance(value, list):
            return [walk(v, key) for v in value]
        if isinstance(value, str):
            return text(value)
        return value

    return walk(node)
