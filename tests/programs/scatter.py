"""y[idx[i]] = val[i]: a program that writes where an index array says."""
import dace

N = dace.symbol("N")
M = dace.symbol("M")


@dace.program
def scatter(idx: dace.int32[N], val: dace.float64[N], y: dace.float64[M]):
    for i in range(N):
        y[idx[i]] = val[i] * 2.0
