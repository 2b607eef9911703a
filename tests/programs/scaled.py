"""A map that reads no scalar, then a loop scaling by the program's scalar argument: a cutout of
the map's tasklet holds no scalar at all."""
import dace

N = dace.symbol("N")


@dace.program
def scaled(alpha: dace.float64, A: dace.float64[N], B: dace.float64[N], C: dace.float64[N]):
    for i in dace.map[0:N]:
        B[i] = A[i] + 1.0
    for j in range(N):
        C[j] = alpha * B[j]
