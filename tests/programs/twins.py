"""Three maps that differ only in their containers (``twins``: the first two) or in one
constant (the third): the first two make the same cutout pair up to names."""
import dace

N = dace.symbol("N")


@dace.program
def twins(A: dace.float64[N], B: dace.float64[N], C: dace.float64[N], D: dace.float64[N],
          E: dace.float64[N], F: dace.float64[N]):
    for i in dace.map[0:N]:
        B[i] = A[i] * 2.0 + 1.0
    for i in dace.map[0:N]:
        D[i] = C[i] * 2.0 + 1.0
    for i in dace.map[0:N]:
        F[i] = E[i] * 3.0 + 1.0
