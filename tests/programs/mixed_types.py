"""A program touching every dtype the input layout decodes (decoder agreement tests)."""
import dace

N = dace.symbol("N")
M = dace.symbol("M")


@dace.program
def mixed(F64: dace.float64[N], F32: dace.float32[N, M], I16: dace.int16[M], U8: dace.uint8[N],
          FLAGS: dace.bool_[N], Z: dace.complex128[M], I64: dace.int64[N], U32: dace.uint32[M],
          OUT: dace.float64[N], s: dace.float64):
    for i in dace.map[0:N]:
        OUT[i] = F64[i] * s + U8[i] + I64[i] + F32[i, 0]
    for j in dace.map[0:M]:
        Z[j] = Z[j] * 2.0 + I16[j] + U32[j]
