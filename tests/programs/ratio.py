"""A program and a transformation in one file (the CLI loads the file once)."""
import dace

from harnessgen.zoo.correct import ReciprocalDivision

N = dace.symbol("N")


@dace.program
def ratio(A: dace.float64[N], B: dace.float64[N], C: dace.float64[N]):
    C[:] = A / B


class Recip(ReciprocalDivision):
    """The same rewrite, defined next to the program it is meant for."""
