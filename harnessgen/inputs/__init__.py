"""Stages 3 and 4, what a valid input is: the ranges of every symbol and value
(``constraints``), how fuzzer bytes become an input (``layout``, the single source of truth),
and the boundary seeds (``seeds``).
"""

__all__ = ["constraints", "layout", "seeds"]
