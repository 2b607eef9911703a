import numpy as np


def initialize(G, E, N):
    rng = np.random.default_rng(5)
    cuts = np.sort(rng.integers(0, E + 1, size=G - 1))
    starts = np.concatenate(([0], cuts, [E])).astype(np.uint32)
    return starts, rng.integers(0, N, size=E).astype(np.uint32), rng.random(E), rng.random(N)
