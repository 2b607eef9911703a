"""Helpers DaCe moved or dropped between versions."""
from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Container

import dace
from dace import dtypes


def dace_version() -> str:
    """The installed DaCe's version (its distribution's, which a source checkout may lack)."""
    try:
        return version("dace")
    except PackageNotFoundError:
        return str(getattr(dace, "__version__", "unknown"))


def find_new_name(name: str, existing: Container[str]) -> str:
    """A name like ``name`` not in ``existing`` (``dace.data`` in 1.0.2, ``dace.utils`` in 2.0)."""
    finder = getattr(dace.data, "find_new_name", None)
    if finder is None:
        from dace.utils import find_new_name as finder
    return finder(name, existing)


def node_schedule(node) -> dtypes.ScheduleType:
    """A node's schedule; 2.0's nested SDFGs have none of their own (Default)."""
    return getattr(node, "schedule", dtypes.ScheduleType.Default)
