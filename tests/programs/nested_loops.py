"""Constant-trip loops nested inside a map, like CLOUDSC's species loops: cutouts of the
inner loops' transformations start inside the outer loop, where DaCe's multi-state cutout
can keep a loop guard but drop its body."""
import dace

N = dace.symbol("N")


@dace.program
def nested_loops(A: dace.float64[N, 4, 4], S: dace.float64[N, 4]):
    for i in dace.map[0:N]:
        for j in range(4):
            S[i, j] = 0.0
            for k in range(4):
                S[i, j] = S[i, j] - A[i, j, k] * (k + 1)
