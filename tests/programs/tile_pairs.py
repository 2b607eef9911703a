"""A map that reads a neighbour through a transient: ``t = A * A``, then ``out[i] = t[i] +
t[i + 1]``. DaCe 1.0.2's ``BufferTiling`` leaves its tile symbol ``tile_i`` free in the whole
program here (its code generator fails with ``KeyError: 'tile_i'``); DaCe 2.0 fixed that.
``shifted_sums`` holds the same map inside a loop whose variable the map's range reads.
``triangle_updates``: an inner loop whose init reads the outer loop's variable (a LoopUnroll
of the outer loop must replace it there too: DaCe's fix of March 2026)."""
import dace

N = dace.symbol("N")
T = dace.symbol("T")


@dace.program
def square_pairs(A: dace.float64[N + 1], out: dace.float64[N]):
    t = A * A
    for i in dace.map[0:N]:
        out[i] = t[i] + t[i + 1]


@dace.program
def shifted_sums(A: dace.float64[N + 4], out: dace.float64[4, N]):
    for k in range(4):
        for i in dace.map[0:N]:
            out[k, i] = A[i + k] + A[i]


@dace.program
def triangle_updates(Z: dace.float64[5, 5, N]):
    for jn in range(1, 4):
        for jm in range(jn + 1, 5):
            for jl in range(N):
                Z[jm, jn, jl] = Z[jm, jn, jl] - Z[jn, jn, jl] * Z[jm, jm, jl]
