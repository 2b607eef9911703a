"""Library warnings during a run go to the run's own log, not between the verdict lines.

DaCe warns (``UserWarning``) about memlet propagation, uninitialized transients and more while
harnessgen cuts out, transforms and generates code; on a run over hundreds of instances these
flooded the terminal. Inside ``captured_warnings`` every warning Python would show is written as
one line to ``warnings.log`` in the run's output directory (forked workers inherit the hook
and append to the same file) and counted for the summary; ``echo`` (``-v``) shows them too.
"""
from __future__ import annotations

import contextlib
import os
import warnings
from pathlib import Path
from typing import Iterator

LOG_NAME = "warnings.log"


def _one_line(message, category, filename, lineno) -> str:
    text = " ".join(str(message).split())
    return f"{category.__name__}: {text} ({filename}:{lineno})\n"


@contextlib.contextmanager
def captured_warnings(out_dir: Path, echo: bool = False) -> Iterator[Path]:
    """Send shown warnings to ``out_dir/warnings.log`` (appended) while the block runs."""
    path = Path(out_dir) / LOG_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    shown = warnings.showwarning

    def record(message, category, filename, lineno, file=None, line=None):
        # one write() of one line in append mode: lines of forked workers never interleave
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, _one_line(message, category, filename, lineno).encode())
        finally:
            os.close(fd)
        if echo:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = record
    try:
        yield path
    finally:
        warnings.showwarning = shown


def count(out_dir: Path) -> int:
    """Warnings the run's log holds."""
    path = Path(out_dir) / LOG_NAME
    if not path.is_file():
        return 0
    with path.open("rb") as handle:
        return sum(1 for _ in handle)
