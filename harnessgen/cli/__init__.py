"""The ``harnessgen`` command line: its parser and commands (``commands``), and how records
are shown on a terminal (``render``, ``progress``)."""
from .commands import build_parser, main

__all__ = ["build_parser", "main"]
