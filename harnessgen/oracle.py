"""The oracle in NumPy; the same rule as ``hg_compare`` in templates/harness.cpp.j2.

Per element: ``|post - pre| <= atol + rtol * |pre|`` computed in double, NaN
equals NaN, equal values (infinities included) are equal, an infinity never
equals a finite value (the tolerance applies to finite pairs); ``exact``
compares bits; integers and booleans compare exactly. Complex values compare as
their real and imaginary parts. Implemented in ``runtime`` (which reproducers
carry a copy of).
"""
from .runtime import Difference, Tolerance, compare, differing

__all__ = ["Difference", "Tolerance", "compare", "differing"]
