"""A float computed before a branch and tested in its condition (``gated``, and
``gated_symbol`` as DaCe 1.0.2's frontend makes it): an interstate symbol of type double, a free
symbol of every cutout after its assignment. And a branch on a scalar argument
(``branch_on_scalar``)."""
import dace

N = dace.symbol("N")


@dace.program
def gated(A: dace.float64[N], G: dace.float64[1], B: dace.float64[N]):
    # explicit maps and a size symbol: the plain-Python reference test runs it
    g = G[0] * 2.0
    for i in dace.map[0:N]:
        B[i] = A[i] * g
    if g > 1.0:
        for i in dace.map[0:N]:
            B[i] = B[i] + g


@dace.program
def branch_on_scalar(A: dace.float64[N], s: dace.float64, B: dace.float64[N]):
    # the condition reads the scalar argument s (an interstate edge's on 1.0.2, a branch's on 2.0)
    if s > 1.0:
        B[:] = A * 2.0
    else:
        B[:] = A - 1.0


def gated_symbol():
    """``g = G[0] * 2.0``, then ``B = A * g``, and ``B += g`` where ``g > 1.0``, built by hand
    as DaCe 1.0.2's frontend writes such a program, so that every DaCe has it: ``g`` an
    interstate symbol of type double, assigned before the first map and tested on the edge
    into the second (DaCe 2.0's frontend keeps ``g`` a scalar container)."""
    sdfg = dace.SDFG("gated_symbol")
    for name, shape in (("A", [N]), ("G", [1]), ("B", [N])):
        sdfg.add_array(name, shape, dace.float64)
    sdfg.add_symbol("g", dace.float64)
    init = sdfg.add_state("init")
    first = sdfg.add_state("MapState")
    sdfg.add_edge(init, first, dace.InterstateEdge(assignments={"g": "G[0] * 2.0"}))
    first.add_mapped_tasklet("scale", {"i": "0:N"}, {"a": dace.Memlet("A[i]")}, "b = a * g",
                             {"b": dace.Memlet("B[i]")}, external_edges=True)
    second = sdfg.add_state("AddState")
    end = sdfg.add_state("end")
    sdfg.add_edge(first, second, dace.InterstateEdge(condition="g > 1.0"))
    sdfg.add_edge(first, end, dace.InterstateEdge(condition="not (g > 1.0)"))
    sdfg.add_edge(second, end, dace.InterstateEdge())
    second.add_mapped_tasklet("add", {"i": "0:N"}, {"b_in": dace.Memlet("B[i]")}, "b_out = b_in + g",
                              {"b_out": dace.Memlet("B[i]")}, external_edges=True)
    return sdfg
