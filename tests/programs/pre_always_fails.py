"""A program that dies on every input: its tasklet aborts. Whatever a transformation does to
it, no input runs pre to completion, so no verdict can rest on an input."""
import dace

N = dace.symbol("N")


@dace.program
def pre_always_fails(A: dace.float64[N], B: dace.float64[N]):
    for i in dace.map[0:N]:
        with dace.tasklet(dace.Language.CPP):
            a << A[i]
            b >> B[i]
            """
            abort();
            b = exp(a);
            """
