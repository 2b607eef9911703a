import numpy as np


def initialize(H, K):
    rng = np.random.default_rng(3)
    return rng.random((H, )), rng.random((K, ))
