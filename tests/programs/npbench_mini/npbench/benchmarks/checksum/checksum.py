import numpy as np


def initialize(N):
    return np.random.default_rng(7).integers(0, 256, size=(N, ), dtype=np.uint8)
