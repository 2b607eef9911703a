import dace

N = dace.symbol('N')


@dace.program
def unparsable(a: dace.float64[N]):
    # a generator over a symbolic range: DaCe's frontend refuses it
    a[:] = sum(v for v in a)
