"""Deep copies of SDFGs through their JSON: a copy shares nothing with the original (no cached
parents, no SDFGCutout translation tables), as if loaded from a file.

A program that is loaded once and copied many times (the whole program, for every audit and
every pass instance) is copied from a pickle of it taken as it was loaded (``keep_template``):
for CLOUDSC 0.5 s a copy against 4 to 6 s through JSON, and the same SDFG, since the object
pickled was itself just read from JSON (``tests/unit/test_copies.py`` compares the two)."""
from __future__ import annotations

import json
import pickle
import weakref
from typing import Dict, Optional, Tuple

import dace

from .names import settled

# id(sdfg) -> (a weak reference to it, its pickle, its identity); the entry goes when the SDFG
# does, before its id can be reused (a whole program after a pass is kept only while a pass
# instance needs it)
_TEMPLATES: Dict[int, Tuple[weakref.ref, bytes, str]] = {}


def sdfg_json(sdfg) -> dict:
    """``sdfg``'s JSON, loadable on its own. Two things DaCe 2.0 gets wrong are set right: it
    writes its version (which reading symbolic values needs) only into a top-level SDFG's JSON;
    and serializing a top-level SDFG numbers the source files of its debug information *in
    place*, so that a later serialization of a nested SDFG, or of a cutout sharing those
    objects, writes file numbers without the table they index (reading it fails)."""
    _forget_file_numbers(sdfg)
    data = sdfg.to_json()
    data.setdefault("dace_version", dace.__version__)
    return data


def _forget_file_numbers(sdfg) -> None:
    """Drop a file number where the file's name is kept beside it (it then serializes by name)."""
    def forget(element) -> None:
        info = getattr(element, "debuginfo", None)
        if info is not None and getattr(info, "file_index", None) is not None and info.filename:
            info.file_index = None

    forget(sdfg)
    for _, _, desc in sdfg.arrays_recursive():
        forget(desc)
    for node, _ in sdfg.all_nodes_recursive():
        forget(node)
    for edge, _ in sdfg.all_edges_recursive():
        forget(edge)


def keep_template(sdfg, identity: str = "", pickled: Optional[bytes] = None) -> bytes:
    """Copies of ``sdfg`` come from a pickle of it as it is now (``pickled``: that pickle, where
    the SDFG was just loaded from it); returns the pickle. Only for an SDFG just read from
    JSON (a file, or ``copy_sdfg``) that nothing changes in place afterwards: a program as
    loaded, or a program after a pass kept to be copied. A copy is then that SDFG as it was
    kept, whatever happens to the object later. ``identity`` names its content where it is
    known (``template_identity``): what work done on it may be kept under."""
    key = id(sdfg)
    pickled = pickled if pickled is not None else pickle.dumps(sdfg, protocol=pickle.HIGHEST_PROTOCOL)
    _TEMPLATES[key] = (weakref.ref(sdfg), pickled, identity)
    weakref.finalize(sdfg, _TEMPLATES.pop, key, None)
    return pickled


def _template(sdfg) -> Optional[Tuple[weakref.ref, bytes, str]]:
    """What ``keep_template`` kept of ``sdfg`` (this very object, not one that had its id); None."""
    kept = _TEMPLATES.get(id(sdfg))
    return kept if kept is not None and kept[0]() is sdfg else None


def template_identity(sdfg) -> str:
    """The identity ``sdfg`` was kept with; '' where none was given or it was not kept."""
    kept = _template(sdfg)
    return kept[2] if kept is not None else ""


def copy_sdfg(sdfg, name: str = None):
    """A deep copy of ``sdfg`` as a plain top-level ``dace.SDFG`` (renamed when ``name`` is given).
    Through text, as a file would be: DaCe's in-memory JSON may hold objects it reads back
    differently; from its pickle where it was kept (``keep_template``)."""
    kept = _template(sdfg)
    if kept is not None:
        copied = pickle.loads(kept[1])
    else:
        copied = settled(dace.SDFG.from_json(json.loads(dace.serialize.dumps(sdfg_json(sdfg)))))
        if json_broke_connectors(sdfg, copied):
            copied = pickle.loads(pickle.dumps(sdfg, protocol=pickle.HIGHEST_PROTOCOL))
    if name is not None:
        copied.name = name
    return copied


def json_broke_connectors(original, copied) -> bool:
    """Whether reading ``original``'s JSON back made a nested SDFG's connector disagree with what
    is connected to it, where ``original`` agrees. DaCe's reader gives the symbols in a
    container's shape the types of its SDFG's symbol table, where the frontend's objects keep
    their own: a shape ``stop - start`` of a view (NPBench's spmv, ``uint32`` bounds) then no
    longer equals the nested SDFG's ``int`` one, and the program read back fails DaCe's
    validation, which the program DaCe made passes. Such a program is copied by pickle (its
    objects as they are). The copy is checked first: a copy that agrees costs nothing more."""
    broken = _disagreeing_connectors(copied)
    return bool(broken) and len(_disagreeing_connectors(original)) < len(broken)


def _disagreeing_connectors(sdfg) -> list:
    """(nested SDFG, connector) pairs whose inner descriptor, restated in the outer symbols, is
    not equivalent to the outer one (DaCe's rule in ``NestedSDFG.validate``)."""
    from dace.sdfg import nodes

    found = []
    for node, state in sdfg.all_nodes_recursive():
        if not isinstance(node, nodes.NestedSDFG) or node.sdfg is None:
            continue
        outer = state.sdfg
        for edge in list(state.in_edges(node)) + list(state.out_edges(node)):
            conn = edge.dst_conn if edge.dst is node else edge.src_conn
            if conn is None or edge.data.data is None or conn not in node.sdfg.arrays:
                continue
            try:
                same = node.sdfg.arrays[conn].is_equivalent(outer.arrays[edge.data.data],
                                                            symbol_mapping=node.symbol_mapping)
            except TypeError:      # DaCe 1.0.2: no symbol mapping in the comparison
                same = node.sdfg.arrays[conn].is_equivalent(outer.arrays[edge.data.data])
            except Exception:  # noqa: BLE001 -- a descriptor DaCe cannot compare: not this check's to judge
                continue
            if not same:
                found.append((node.label, conn))
    return found


# a copy made ahead of each of the last programs asked (at most ``_SPARES``): id -> (a weak
# reference to the program, the copy)
_SPARE_COPIES: Dict[int, Tuple[weakref.ref, object]] = {}
_SPARES = 2


def spare_copy(sdfg):
    """A copy of ``sdfg`` (one ``keep_template`` kept) made once and held, for forked children
    to change: a child's changes are its own pages, so the copy here stays as
    ``copy_sdfg`` would make it, and each child is spared the copy (a third of a second on
    CLOUDSC). Nothing in this process may change it. None where ``sdfg`` has no template."""
    kept = _template(sdfg)
    if kept is None:
        return None
    held = _SPARE_COPIES.pop(id(sdfg), None)
    if held is None or held[0]() is not sdfg:
        held = (weakref.ref(sdfg), pickle.loads(kept[1]))
        while len(_SPARE_COPIES) >= _SPARES:
            _SPARE_COPIES.pop(next(iter(_SPARE_COPIES)))
        weakref.finalize(sdfg, _SPARE_COPIES.pop, id(sdfg), None)
    _SPARE_COPIES[id(sdfg)] = held       # the last one asked goes last: the oldest leaves first
    return held[1]
