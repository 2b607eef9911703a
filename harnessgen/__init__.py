"""harnessgen: fuzz compiler optimizations in isolation.

Pipeline (one module per stage):
targets -> instances -> cutout -> constraints -> layout -> emit/build -> engines -> replay

The public face is small: ``harnessgen.check`` (judge a transformation on a program, get a
``Report`` back) and the records it returns; ``harnessgen.judge`` is the path ``check`` and
the ``harnessgen fuzz`` command share. They load on first use (``import harnessgen`` stays
cheap: the pytest plugin is imported by every pytest session of an environment that has it).
"""
import importlib

__version__ = "0.1.0"
__all__ = ["Bug", "Hooks", "Report", "Verdict", "__version__", "check", "judge"]

_API = frozenset(__all__) - {"__version__"}


def __getattr__(name: str):
    if name in _API:
        return getattr(importlib.import_module("harnessgen.api"), name)
    raise AttributeError(f"module 'harnessgen' has no attribute {name!r}")
