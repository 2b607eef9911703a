"""Two nested maps that copy a strided range: the inner map's range starts at the outer map's
parameter. The whole program is one state, so an instance's cutout is the program itself: the
reference check and the instance build the same sources (the shape whose build once came from
the reference check's cache entry, without its AFL harness).

OutLocalStorage gives the inner map a local buffer shaped by the outer memlet,
``ceil((N - i) / 2)``: a shape that names the outer map's parameter outside its scope. On
DaCe 2.0.0b1 the program after it takes ``i`` as an argument: DaCe's own call of it with the
program's arguments fails (``Missing program argument "i"``). DaCe 1.0.2 counts ``i`` as
defined by the map, and the program it builds writes B wrongly."""
import dace

N = dace.symbol("N")


@dace.program
def strided_copy(A: dace.float64[N], B: dace.float64[N]):
    for i in dace.map[0:2]:
        for j in dace.map[i:N:2]:
            B[j] = A[j]
