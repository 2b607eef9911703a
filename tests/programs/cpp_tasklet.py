"""A tasklet written in C++: DaCe runs it, plain Python cannot (the reference check falls back
to comparing the program's two forms)."""
import dace

N = dace.symbol("N")


@dace.program
def cpp_tasklet(A: dace.float64[N], B: dace.float64[N]):
    for i in dace.map[0:N]:
        with dace.tasklet(dace.Language.CPP):
            a << A[i]
            b >> B[i]
            """
            b = 3.0 * a - 1.0;
            """
