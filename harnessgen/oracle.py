"""The oracle in NumPy; the same rule as ``hg_compare`` in templates/harness.cpp.j2.

Per element: ``|post - pre| <= atol + rtol * |pre|`` computed in double, NaN
equals NaN, equal values (infinities included) are equal, an infinity never
equals a finite value (the tolerance applies to finite pairs); ``exact`` compares
bits; integers and booleans compare exactly. Complex values compare as their
real and imaginary parts.
"""
from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np


@dataclasses.dataclass(frozen=True)
class Tolerance:
    rtol: float = 1e-5
    atol: float = 1e-8
    exact: bool = False


@dataclasses.dataclass
class Difference:
    container: str
    index: int                 # flat index (of the part, for complex containers)
    pre: float
    post: float
    differing: int
    total: int
    max_abs_diff: float

    def to_json(self):
        return dataclasses.asdict(self)


def _parts(a: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "c":
        return a.view(np.float32 if a.dtype == np.complex64 else np.float64)
    return a


def differing(pre: np.ndarray, post: np.ndarray, tol: Tolerance) -> np.ndarray:
    """Boolean mask of the elements (parts) where post differs from pre."""
    pre, post = _parts(np.ascontiguousarray(pre).ravel()), _parts(np.ascontiguousarray(post).ravel())
    if pre.dtype.kind != "f":
        return pre != post
    if tol.exact:
        width = {2: np.uint16, 4: np.uint32, 8: np.uint64}[pre.dtype.itemsize]
        return pre.view(width) != post.view(width)
    a, b = pre.astype(np.float64), post.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        close = np.isfinite(a) & np.isfinite(b) & (np.abs(b - a) <= tol.atol + tol.rtol * np.abs(a))
        same = (np.isnan(a) & np.isnan(b)) | (a == b) | close
    return ~same


def compare(name: str, pre: np.ndarray, post: np.ndarray, tol: Tolerance) -> Optional[Difference]:
    mask = differing(pre, post, tol)
    if not mask.any():
        return None
    a, b = _parts(np.ascontiguousarray(pre).ravel()), _parts(np.ascontiguousarray(post).ravel())
    idx = np.flatnonzero(mask)
    with np.errstate(invalid="ignore", over="ignore"):
        diffs = np.abs(b[idx].astype(np.float64) - a[idx].astype(np.float64))
    finite = diffs[~np.isnan(diffs)]
    return Difference(container=name, index=int(idx[0]), pre=float(a[idx[0]]), post=float(b[idx[0]]),
                      differing=int(idx.size), total=int(mask.size),
                      max_abs_diff=float(finite.max()) if finite.size else float("nan"))
