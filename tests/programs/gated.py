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
