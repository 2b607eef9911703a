"""A map whose body holds a loop (so the loop lives in a nested SDFG) and passes one row of
B to it through several connectors: views of the same memory in the program.

``shift_rows``: iteration j reads B[i, j + 1], which iteration j + 1 wrote just before (the
loop runs downwards): a dependency carried through two connectors of one container.
``scale_rows``: every iteration reads and writes only its own element: nothing carried.
``shift_rows_sized``: ``shift_rows`` with rows of M elements (the views' lengths are symbolic).
``shift_from_first_row``: each row also reads row 0, which the map's first iteration does not
write; the views' distance (i rows) is not a constant."""
import dace

N = dace.symbol("N")


@dace.program
def shift_rows(B: dace.float64[N, 5], A: dace.float64[N]):
    for i in dace.map[0:N]:
        for j in range(3, -1, -1):
            B[i, j] = B[i, j + 1] + A[i]


@dace.program
def scale_rows(B: dace.float64[N, 5], A: dace.float64[N]):
    for i in dace.map[0:N]:
        for j in range(5):
            B[i, j] = B[i, j] * A[i] + 1.0


@dace.program
def disjoint_halves(B: dace.float64[N, 4]):
    for i in dace.map[0:N]:
        for j in range(2):
            B[i, j + 2] = B[i, j] * 2.0


@dace.program
def read_twice(B: dace.float64[N, 5], C: dace.float64[N, 4]):
    for i in dace.map[0:N]:
        for j in range(4):
            C[i, j] = B[i, j] + B[i, j + 1]


M = dace.symbol("M")


@dace.program
def shift_rows_sized(B: dace.float64[N, M], A: dace.float64[N]):
    for i in dace.map[0:N]:
        for j in range(M - 2, -1, -1):
            B[i, j] = B[i, j + 1] + A[i]


@dace.program
def shift_from_first_row(B: dace.float64[N, 5]):
    for i in dace.map[1:N]:
        for j in range(3, -1, -1):
            B[i, j] = B[i, j + 1] + B[0, j]
