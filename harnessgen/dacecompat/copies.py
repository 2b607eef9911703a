"""Deep copies of SDFGs through their JSON: a copy shares nothing with the original (no cached
parents, no SDFGCutout translation tables), as if loaded from a file."""
from __future__ import annotations

import json

import dace


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


def copy_sdfg(sdfg, name: str = None):
    """A deep copy of ``sdfg`` as a plain top-level ``dace.SDFG`` (renamed when ``name`` is given).
    Through text, as a file would be: DaCe's in-memory JSON may hold objects it reads back
    differently."""
    copied = dace.SDFG.from_json(json.loads(dace.serialize.dumps(sdfg_json(sdfg))))
    if name is not None:
        copied.name = name
    return copied
