"""Helpers DaCe moved or dropped between versions."""
from __future__ import annotations

import functools
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Container, Dict, Optional

import dace
from dace import dtypes


@functools.lru_cache(maxsize=1)
def dace_version() -> str:
    """The installed DaCe's version (its distribution's, which a source checkout may lack).
    Read once per process: reading a distribution's metadata costs 2 ms, and planning CLOUDSC
    asks for it thousands of times (13 s of a cold plan)."""
    try:
        return version("dace")
    except PackageNotFoundError:
        return str(getattr(dace, "__version__", "unknown"))


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
