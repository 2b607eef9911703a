"""Where harnessgen's data folders are: ``templates/`` and ``afl_configs/``.

In a source checkout they sit at the top of the project (its fixed layout); in an installed
wheel they are package data inside ``harnessgen/`` (pyproject.toml maps them there). Every
module finds them through this one place.
"""
from __future__ import annotations

import functools
from pathlib import Path

import jinja2

from .errors import InternalError

PACKAGE = Path(__file__).resolve().parents[1]     # harnessgen/, this file being harnessgen/core/data.py


def data_dir(name: str) -> Path:
    """The installed copy of ``name`` (inside the package), else the checkout's."""
    for candidate in (PACKAGE / name, PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise InternalError(f"harnessgen's data folder {name}/ is missing from {PACKAGE} and its parent: "
                        "reinstall harnessgen (pip install .)")


TEMPLATES = data_dir("templates")
AFL_CONFIGS = data_dir("afl_configs")


@functools.lru_cache(maxsize=None)
def template_environment(verbatim: bool = False, autoescape: bool = False) -> jinja2.Environment:
    """The one environment ``templates/`` is rendered in. ``verbatim``: every whitespace kept (a
    Python reproducer's indentation), otherwise block tags take their line with them (C++,
    Markdown); ``autoescape``: HTML. Undefined names are errors; ``num`` formats a number or
    says ``-`` for none."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), keep_trailing_newline=True,
                             trim_blocks=not verbatim, lstrip_blocks=not verbatim, autoescape=autoescape,
                             undefined=jinja2.StrictUndefined)
    env.filters["num"] = lambda v, fmt="{:,.0f}": "-" if v is None else fmt.format(v)
    return env
