"""Loops whose inputs the blocks before them compute, as a user writes them: a cutout of the
loop alone would make the fuzzer invent what those blocks compute; one that takes them in
makes their smaller inputs instead (the input configuration a region cutout minimises).

* ``outer_then_sum``: a 16x16 transient computed from a 16-vector in the state before a
  reversed loop over 15 of its diagonal elements (an odd trip count: unrolling by two must
  handle the remainder);
* ``scaled_then_sum``: the same transient computed from a 16x16 array: taking that state in
  would not make the input smaller;
* ``outer_then_add``: the vector's outer product and its sum with ``out`` in one state.
"""
import dace
import numpy as np


@dace.program
def outer_then_sum(x: dace.float64[16], out: dace.float64[16]):
    for t in range(4):
        T = np.ndarray((16, 16), dtype=np.float64)
        for i, j in dace.map[0:16, 0:16]:
            T[i, j] = x[i] * x[j]
        for i in range(14, -1, -1):
            out[i] = out[i] + T[i, i]


@dace.program
def scaled_then_sum(Y: dace.float64[16, 16], out: dace.float64[16]):
    for t in range(4):
        T = np.ndarray((16, 16), dtype=np.float64)
        for i, j in dace.map[0:16, 0:16]:
            T[i, j] = Y[i, j] * 2.0
        for i in range(14, -1, -1):
            out[i] = out[i] + T[i, i]


@dace.program
def outer_then_add(x: dace.float64[16], out: dace.float64[16, 16]):
    for t in range(4):
        T = np.ndarray((16, 16), dtype=np.float64)
        for i, j in dace.map[0:16, 0:16]:
            T[i, j] = x[i] * x[j]
        for i, j in dace.map[0:16, 0:16]:
            out[i, j] = out[i, j] + T[i, j]
