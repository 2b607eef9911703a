"""A program and a transformation in one file (the CLI loads the file once)."""
import dace

from harnessgen.zoo.correct import ReciprocalDivision

N = dace.symbol("N")


@dace.program
def ratio(A: dace.float64[N], B: dace.float64[N], C: dace.float64[N]):
    C[:] = A / B


class Recip(ReciprocalDivision):
    """The same rewrite, defined next to the program it is meant for."""


class RecipThatWarns(ReciprocalDivision):
    """The same rewrite, warning as DaCe's passes do (a UserWarning while it applies)."""

    def apply(self, graph, sdfg):
        import warnings

        warnings.warn("RecipThatWarns: a library warning while applying", UserWarning)
        return super().apply(graph, sdfg)
