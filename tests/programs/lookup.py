"""y[i] = table[k[i]] read inside a tasklet: no memlet says which element of ``table`` is read,
so no constraint keeps the values of ``k`` within it (NPBench's spmv gathers ``x[cols]`` so)."""
import dace

N = dace.symbol("N")
M = dace.symbol("M")


@dace.program
def lookup(k: dace.int64[N], table: dace.float64[M], y: dace.float64[N]):
    for i in dace.map[0:N]:
        with dace.tasklet:
            t << table[:]
            j << k[i]
            out >> y[i]
            out = t[j]
