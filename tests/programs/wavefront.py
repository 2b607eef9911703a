"""A wavefront: row k of A needs row k - 1, one column to the left. The row loop is
sequential and each row's map is parallel; moving the row loop into the map would make
column j wait for column j - 1 of the previous row, written by another thread. On one thread
the columns run in order and the result is right; on several, it races. Moving the loop keeps
the same OpenMP directive: only the parallel region's body changes."""
import dace

N = dace.symbol("N")
K = dace.symbol("K")


@dace.program
def wavefront(A: dace.float64[K, N], B: dace.float64[N]):
    for k in range(1, K):
        for j in dace.map[1:N]:
            A[k, j] = A[k - 1, j - 1] + B[j]
