import dace
import numpy as np

N = dace.symbol('N')


@dace.program
def checksum(data: dace.uint8[N]):
    acc: dace.uint16 = 0x1D0F
    for i in range(N):
        cur = data[i]
        for _ in range(0, 4):
            if (acc ^ cur) & 1:
                acc = (acc >> 1) ^ 0xA001
            else:
                acc = acc >> 1
            cur = cur >> 1
    return acc & 0xFFFF
