"""A branch on the value a called ``@dace.program`` returns, as CLOUDSC tests ``zdqs``: DaCe
1.0.2's frontend keeps the returned scalar as a one-element array, and the branch condition
compares the array itself (``if (d > 0.0)`` with ``double d[1]``), which does not compile;
simplify turns it into a scalar first, so only the program as its frontend wrote it fails."""
import dace

N = dace.symbol("N")
K = dace.symbol("K")


@dace.program
def shifted(x: dace.float64):
    return x - 1.0


@dace.program
def scalar_branch(A: dace.float64[N, K], B: dace.float64[N, K]):
    for k in range(K):
        for i in dace.map[0:N]:
            d = shifted(A[i, k])
            if d > 0.0:
                B[i, k] = d
            else:
                B[i, k] = 0.0
