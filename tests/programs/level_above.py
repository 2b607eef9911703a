"""A map inside a level loop reads the level above only below the top level, as CLOUDSC's
sections do: the memlet DaCe propagates out of the map spans ``k - 1:k + 1`` even at k = 0."""
import dace

N = dace.symbol("N")
K = dace.symbol("K")


@dace.program
def level_above(T: dace.float64[N, K], OUT: dace.float64[N, K]):
    for k in range(K):
        for i in dace.map[0:N]:
            if k > 0:
                OUT[i, k] = T[i, k] - T[i, k - 1]
            else:
                OUT[i, k] = T[i, k]
