"""Pre copies X into Y, post copies Z into Y: the harness's verdict is the oracle's on (X, Z)."""
import dace

N = dace.symbol("N")


@dace.program
def copy_x(X: dace.float64[N], Z: dace.float64[N], Y: dace.float64[N]):
    Y[:] = X


@dace.program
def copy_z(X: dace.float64[N], Z: dace.float64[N], Y: dace.float64[N]):
    Y[:] = Z


@dace.program
def copy_x32(X: dace.float32[N], Z: dace.float32[N], Y: dace.float32[N]):
    Y[:] = X


@dace.program
def copy_z32(X: dace.float32[N], Z: dace.float32[N], Y: dace.float32[N]):
    Y[:] = Z
