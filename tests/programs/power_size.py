"""A size that is a power with a symbolic exponent (NPBench's stockham_fft: x[R**K])."""
import dace

R, K = (dace.symbol(s, dtype=dace.int64, integer=True, positive=True) for s in ("R", "K"))


@dace.program
def power_size(x: dace.float64[R**K], y: dace.float64[R**K]):
    y[:] = x * 2.0
