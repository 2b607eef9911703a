"""Helpers DaCe moved or dropped between versions."""
from __future__ import annotations

import functools
import hashlib
import inspect
import os
from importlib.metadata import PackageNotFoundError, distribution, version
from pathlib import Path
from typing import Any, Container, Dict, Optional

import dace
from dace import dtypes


@functools.lru_cache(maxsize=1)
def dace_version() -> str:
    """The running DaCe's version: the imported package's own (a tree on ``PYTHONPATH`` is not
    the distribution installed beside it, and the version tells how its SDFG files are read),
    else its distribution's. Read once per process: planning CLOUDSC asks thousands of times."""
    own = getattr(dace, "__version__", None)
    if own:
        return str(own)
    try:
        return version("dace")
    except PackageNotFoundError:
        return "unknown"


@functools.lru_cache(maxsize=1)
def dace_identity() -> str:
    """What caches of plans, programs and builds are keyed by: which DaCe code runs, not only
    its version string. DaCe's main branch said ``1.0.0`` for a year, so two revisions of it
    would share every cache entry. The installed distribution is its version; a DaCe tree
    outside one (a checkout on ``PYTHONPATH``, an editable install) adds what
    ``HARNESSGEN_DACE_TREE`` names (the tree's git id, which ``harnessgen ci`` sets) or else a
    digest of its Python files' sizes and modification times."""
    base = dace_version()
    # read here, not through core.envs (which declares it): core imports this package
    tree = os.environ.get("HARNESSGEN_DACE_TREE", "")
    if tree:
        return f"{base}+tree.{tree}"
    package = Path(dace.__file__).resolve().parent
    if _from_distribution(package):
        return base
    return f"{base}+src.{_files_digest(package)}"


def _from_distribution(package: Path) -> bool:
    try:
        located = Path(distribution("dace").locate_file("dace/__init__.py")).resolve()
    except (PackageNotFoundError, OSError, TypeError):
        return False
    return located.parent == package


def _files_digest(package: Path) -> str:
    digest = hashlib.sha256()
    for root, dirs, files in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(f for f in files if f.endswith(".py")):
            stat = os.stat(os.path.join(root, name))
            digest.update(f"{os.path.relpath(os.path.join(root, name), package)}:{stat.st_size}:"
                          f"{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def add_nested(state, sdfg, inputs, outputs, symbol_mapping=None):
    """A nested SDFG node in ``state``: 1.0.2's ``add_nested_sdfg`` takes the parent SDFG second,
    2.0's does not."""
    if "parent" in inspect.signature(state.add_nested_sdfg).parameters:
        return state.add_nested_sdfg(sdfg, state.sdfg, inputs, outputs, symbol_mapping)
    return state.add_nested_sdfg(sdfg, inputs, outputs, symbol_mapping)


def settled(sdfg):
    """``sdfg`` (just read from JSON or a pickle) with its control-flow graphs numbered as a
    program DaCe built is: 2.0.0b1's ``from_json`` numbers them, DaCe's later main branch does
    not, and a match's ``cfg_id`` must mean the same block either way."""
    reset = getattr(sdfg, "reset_cfg_list", None)
    if reset is not None:
        reset()
    return sdfg


def json_context(written_by: Optional[str] = None, **items: Any) -> Dict[str, Any]:
    """A context for DaCe's ``from_json``/``set_properties_from_json``: DaCe 2.0 reads a symbolic
    property only knowing which DaCe wrote it (before 2.0.0a4 as a Python string, after as its
    own format); 1.0.2 ignores the key. ``written_by``: that DaCe (default: this one)."""
    return {**items, "version": written_by or dace_version()}


def find_new_name(name: str, existing: Container[str]) -> str:
    """A name like ``name`` not in ``existing`` (``dace.data`` in 1.0.2, ``dace.utils`` in 2.0)."""
    finder = getattr(dace.data, "find_new_name", None)
    if finder is None:
        from dace.utils import find_new_name as finder
    return finder(name, existing)


def node_schedule(node) -> dtypes.ScheduleType:
    """A node's schedule; 2.0's nested SDFGs have none of their own (Default)."""
    return getattr(node, "schedule", dtypes.ScheduleType.Default)
