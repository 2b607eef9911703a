import numpy as np


def window_sums(x, w):
    k = w.shape[0]
    return np.array([np.dot(x[i:i + k], w) for i in range(x.shape[0] - k + 1)])
