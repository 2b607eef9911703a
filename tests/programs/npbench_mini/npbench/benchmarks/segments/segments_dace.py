import dace
import numpy as np

G, E, N = (dace.symbol(s, dtype=dace.int64) for s in ('G', 'E', 'N'))


@dace.program
def segment_dots(starts: dace.uint32[G + 1], index: dace.uint32[E], weight: dace.float64[E], x: dace.float64[N]):
    out = np.empty(G, weight.dtype)
    for s in range(G):
        first = dace.define_local_scalar(dace.uint32)
        last = dace.define_local_scalar(dace.uint32)
        first = starts[s]
        last = starts[s + 1]
        picked = index[first:last]
        w = weight[first:last]
        out[s] = w @ x[picked]
    return out
