import numpy as np


def segment_dots(starts, index, weight, x):
    return np.array([weight[a:b] @ x[index[a:b]] for a, b in zip(starts[:-1], starts[1:])])
