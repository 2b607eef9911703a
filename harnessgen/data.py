"""Where harnessgen's data folders are: ``templates/`` and ``afl_configs/``.

In a source checkout they sit at the top of the project (its fixed layout); in an installed
wheel they are package data inside ``harnessgen/`` (pyproject.toml maps them there). Every
module finds them through this one place.
"""
from __future__ import annotations

from pathlib import Path

from .errors import InternalError

PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """The installed copy of ``name`` (inside the package), else the checkout's."""
    for candidate in (PACKAGE / name, PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise InternalError(f"harnessgen's data folder {name}/ is missing from {PACKAGE} and its parent: "
                        "reinstall harnessgen (pip install .)")


TEMPLATES = data_dir("templates")
AFL_CONFIGS = data_dir("afl_configs")
