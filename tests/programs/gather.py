"""y[i] = x[idx[i]] inside a map: DaCe passes idx[i] into a nested SDFG as a scalar."""
import dace

N = dace.symbol("N")
M = dace.symbol("M")


@dace.program
def gather(idx: dace.int32[N], x: dace.float64[M], y: dace.float64[N]):
    for i in dace.map[0:N]:
        y[i] = x[idx[i]]
