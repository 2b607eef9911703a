"""Built-in target ``kernels``: our own suite of small DaCe programs.

Each program is written from the math, has symbolic sizes, and comes with a
NumPy reference (``REFERENCES``) that tests use to check the program itself.
Together they cover the shapes of code that optimizations rewrite: matrix
chains, stencils in a time loop, elementwise chains with temporaries read
twice, row reductions, indirect (sparse) accesses, a negative-step loop with
a carried dependency, a sub-range update of a larger array, and a value
written in one state and read in a later one.
"""
# No ``from __future__ import annotations`` here: DaCe reads the argument
# annotations of @dace.program functions as objects.
from pathlib import Path

import dace
import numpy as np

from .base import GPU_TRANSFORMATIONS, Program, Target, builtin_defaults
from .loaders import cached_program, content_identity, program_key
from .reference import Reference

NI, NJ, NK, NL, NM = (dace.symbol(s) for s in ("NI", "NJ", "NK", "NL", "NM"))
N, M = dace.symbol("N"), dace.symbol("M")
NNZ = dace.symbol("NNZ")
TSTEPS = dace.symbol("TSTEPS")
KLON, KLEV, KIDIA, KFDIA = (dace.symbol(s) for s in ("KLON", "KLEV", "KIDIA", "KFDIA"))
NSCAN = dace.symbol("NSCAN")   # its own size symbol: afl_configs/kernels.constraints.json lets it grow
f64, i32 = dace.float64, dace.int32

@dace.program
def matrix_chain(A: f64[NI, NJ], B: f64[NJ, NK], C: f64[NK, NL], D: f64[NL, NM], R: f64[NI, NM]):
    R[:] = ((A @ B) @ C) @ D

@dace.program
def gemm(alpha: f64, beta: f64, C: f64[NI, NJ], A: f64[NI, NK], B: f64[NK, NJ]):
    C[:] = alpha * A @ B + beta * C

@dace.program
def jacobi2d(A: f64[N, N], B: f64[N, N]):
    for t in range(TSTEPS):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])

@dace.program
def elementwise_chain(A: f64[N], B: f64[N], C: f64[N], OUT1: f64[N], OUT2: f64[N]):
    t = A * B + C          # read three times below
    u = t * t - A          # read twice below
    OUT1[:] = t / (1.0 + u * u)
    OUT2[:] = u - t

@dace.program
def softmax(X: f64[N, M], Y: f64[N, M]):
    mx = np.max(X, axis=1)
    e = np.exp(X - mx[:, np.newaxis])
    s = np.sum(e, axis=1)
    Y[:] = e / s[:, np.newaxis]

@dace.program
def reduction(A: f64[N, M], ROWSUM: f64[N], COLMAX: f64[M]):
    ROWSUM[:] = np.sum(A, axis=1)
    COLMAX[:] = np.max(A, axis=0)

@dace.program
def spmv(rowptr: i32[M + 1], col: i32[NNZ], val: f64[NNZ], x: f64[N], y: f64[M]):
    for i in range(M):
        acc = 0.0
        for j in range(rowptr[i], rowptr[i + 1]):
            acc += val[j] * x[col[j]]
        y[i] = acc

@dace.program
def trisolve(U: f64[N, N], b: f64[N], x: f64[N]):
    # back substitution U x = b, rows from the bottom up
    for i in range(N - 1, -1, -1):
        s = b[i]
        for j in range(i + 1, N):
            s = s - U[i, j] * x[j]
        x[i] = s / U[i, i]

@dace.program
def column_window(T: f64[KLON, KLEV], Q: f64[KLON, KLEV], TEND: f64[KLON, KLEV]):
    # only columns KIDIA..KFDIA (1-based, inclusive) are updated
    for jl, jk in dace.map[KIDIA - 1:KFDIA, 0:KLEV]:
        TEND[jl, jk] = 0.5 * (Q[jl, jk] - T[jl, jk]) + TEND[jl, jk]

@dace.program
def two_phase(A: f64[N], B: f64[N], C: f64[N], D: f64[N]):
    T = np.ndarray([N], dtype=np.float64)
    for i in dace.map[0:N]:
        T[i] = A[i] * A[i] + B[i]
    C[:] = T
    # T is read again in later states (inside the loop)
    for k in range(TSTEPS):
        D[:] = 0.5 * D + T


@dace.program
def sigmoid(X: f64[N], Y: f64[N]):
    Y[:] = np.exp(X) / (1.0 + np.exp(X))

@dace.program
def prefix_sum(A: f64[NSCAN], B: f64[NSCAN]):
    # a loop-carried dependency: iteration i needs iteration i - 1
    for i in range(1, NSCAN):
        A[i] = A[i - 1] + B[i]


@dace.program
def clip_small(QX: f64[M, N], FLUX: f64[M, N]):
    # CLOUDSC's clipping of tiny species, per column: the branch tests data, which the
    # frontend loads on the species loop's entry edge
    for jl in dace.map[0:M]:
        for jm in range(N):
            FLUX[jl, jm] = 0.5 * QX[jl, jm]
            if QX[jl, jm] < 1e-14:
                QX[jl, jm] = 0.0


@dace.program
def transpose_scale(A: f64[N, M], B: f64[M, N]):
    for i in dace.map[0:N]:
        for j in dace.map[0:M]:
            B[j, i] = 2.0 * A[i, j] + B[j, i]

PROGRAMS = {
    "matrix_chain": matrix_chain, "gemm": gemm, "jacobi2d": jacobi2d,
    "elementwise_chain": elementwise_chain, "softmax": softmax, "reduction": reduction,
    "spmv": spmv, "trisolve": trisolve, "column_window": column_window,
    "two_phase": two_phase, "sigmoid": sigmoid, "prefix_sum": prefix_sum,
    "clip_small": clip_small, "transpose_scale": transpose_scale,
}


# ---------------------------------------------------------------- references
def _ref_matrix_chain(A, B, C, D, R):
    R[:] = ((A @ B) @ C) @ D


def _ref_gemm(alpha, beta, C, A, B):
    C[:] = alpha * A @ B + beta * C


def _ref_jacobi2d(A, B, TSTEPS):
    for _ in range(TSTEPS):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])


def _ref_elementwise_chain(A, B, C, OUT1, OUT2):
    t = A * B + C
    u = t * t - A
    OUT1[:] = t / (1.0 + u * u)
    OUT2[:] = u - t


def _ref_softmax(X, Y):
    e = np.exp(X - X.max(axis=1, keepdims=True))
    Y[:] = e / e.sum(axis=1, keepdims=True)


def _ref_reduction(A, ROWSUM, COLMAX):
    ROWSUM[:] = A.sum(axis=1)
    COLMAX[:] = A.max(axis=0)


def _ref_spmv(rowptr, col, val, x, y):
    for i in range(len(y)):
        y[i] = sum(val[j] * x[col[j]] for j in range(rowptr[i], rowptr[i + 1]))


def _ref_trisolve(U, b, x):
    n = len(b)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for i in range(n - 1, -1, -1):
            s = b[i]
            for j in range(i + 1, n):
                s = s - U[i, j] * x[j]
            x[i] = s / U[i, i]


def _ref_column_window(T, Q, TEND, KIDIA, KFDIA):
    sl = slice(KIDIA - 1, KFDIA)
    TEND[sl] = 0.5 * (Q[sl] - T[sl]) + TEND[sl]


def _ref_two_phase(A, B, C, D, TSTEPS):
    T = A * A + B
    C[:] = T
    for _ in range(TSTEPS):
        D[:] = 0.5 * D + T


def _ref_sigmoid(X, Y):
    with np.errstate(over="ignore", invalid="ignore"):
        Y[:] = np.exp(X) / (1.0 + np.exp(X))


def _ref_prefix_sum(A, B):
    for i in range(1, len(A)):
        A[i] = A[i - 1] + B[i]


def _ref_clip_small(QX, FLUX):
    FLUX[:] = 0.5 * QX
    QX[QX < 1e-14] = 0.0


def _ref_transpose_scale(A, B):
    B[:] = 2.0 * A.T + B


REFERENCES = {
    "matrix_chain": _ref_matrix_chain,
    "gemm": _ref_gemm,
    "jacobi2d": _ref_jacobi2d,
    "elementwise_chain": _ref_elementwise_chain,
    "softmax": _ref_softmax,
    "reduction": _ref_reduction,
    "spmv": _ref_spmv,
    "trisolve": _ref_trisolve,
    "column_window": _ref_column_window,
    "two_phase": _ref_two_phase,
    "sigmoid": _ref_sigmoid,
    "prefix_sum": _ref_prefix_sum,
    "clip_small": _ref_clip_small,
    "transpose_scale": _ref_transpose_scale,
}


def _builder(name: str, simplify: bool = True):
    def build():
        return cached_program(f"kernels-{name}", Path(__file__).read_bytes(),
                              lambda: PROGRAMS[name].to_sdfg(simplify=simplify), simplify)

    return build


PROGRAM_NAMES = tuple(REFERENCES)


DESCRIPTIONS = {
    "matrix_chain": "R = ((A B) C) D",
    "gemm": "C = alpha A B + beta C",
    "jacobi2d": "2-D Jacobi stencil, TSTEPS sweeps",
    "elementwise_chain": "elementwise chain, temporaries read twice",
    "softmax": "row softmax",
    "reduction": "row sums and column maxima",
    "spmv": "CSR sparse matrix-vector product (index arrays)",
    "trisolve": "back substitution, negative-step loop",
    "column_window": "update of columns KIDIA..KFDIA only",
    "two_phase": "temporary written once, copied out, read again in later states",
    "sigmoid": "logistic function through exp",
    "prefix_sum": "running sum, a loop-carried dependency",
    "clip_small": "data-dependent branch in a loop (tiny values clipped to zero)",
    "transpose_scale": "nested maps, transposed access",
}


def make_target() -> Target:
    identity = content_identity(program_key(Path(__file__).read_bytes()).encode())
    programs = {name: Program(name, _builder(name), DESCRIPTIONS[name], build_unsimplified=_builder(name, False),
                              reference=Reference(f"kernels:{name}", REFERENCES[name]),
                              identity=content_identity(identity.encode(), name.encode()))
                for name in PROGRAM_NAMES}
    return Target(name="kernels", programs=programs,
                  default_transformations=builtin_defaults(["MapTiling", "MapInterchange", "MapFusion"]),
                  gpu_transformations=list(GPU_TRANSFORMATIONS))
