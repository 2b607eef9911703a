import dace
import numpy as np

H, K = (dace.symbol(s, dace.int64) for s in ('H', 'K'))


@dace.program
def window_sums(x: dace.float64[H], w: dace.float64[K]):
    out = np.ndarray((H - K + 1, ), dtype=np.float64)
    for i in range(H - K + 1):
        out[i] = np.sum(x[i:i + K] * w)
    return out
