"""A float computed before a branch is tested in its condition: DaCe makes it an interstate
symbol of type double, a free symbol of every cutout after its assignment."""
import dace

N = dace.symbol("N")

@dace.program
def gated(A: dace.float64[N], G: dace.float64[1], B: dace.float64[N]):
    g = G[0] * 2.0
    for i in dace.map[0:N]:
        B[i] = A[i] * g
    if g > 1.0:
        for i in dace.map[0:N]:
            B[i] = B[i] + g


@dace.program
def branch_on_scalar(A: dace.float64[N], s: dace.float64, B: dace.float64[N]):
    # the condition reads the scalar argument s on an interstate edge
    if s > 1.0:
        B[:] = A * 2.0
    else:
        B[:] = A - 1.0
