"""DaCe's explicit dataflow: an explicit map with memlets, a tasklet block, and a sum by
write-conflict resolution. Plain Python cannot run this as written (``_``, ``a << A[i]``)."""
import dace

N = dace.symbol("N")


@dace.program
def dialect(A: dace.float64[N], B: dace.float64[N], S: dace.float64[1]):
    @dace.map(_[0:N])
    def double(i):
        a << A[i]
        b >> B[i]
        b = 2.0 * a + 1.0

    with dace.tasklet:
        first << A[0]
        out >> S[0]
        out = first

    for i in dace.map[0:N]:
        with dace.tasklet:
            v << B[i]
            total >> S(1, lambda x, y: x + y)[0]
            total = v
