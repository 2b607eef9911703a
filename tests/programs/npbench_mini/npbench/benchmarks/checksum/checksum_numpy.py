import numpy as np


def checksum(data, seed=0x1D0F):
    acc = seed
    for value in data:
        cur = int(value)
        for _ in range(4):
            acc = ((acc >> 1) ^ 0xA001) if (acc ^ cur) & 1 else acc >> 1
            cur >>= 1
    return acc & 0xFFFF
