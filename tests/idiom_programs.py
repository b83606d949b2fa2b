"""Programs of tests/test_idioms.py that use `assert`: a module pytest does not rewrite (its
rewritten asserts call pytest's helpers, which numba cannot compile)."""
import numpy as np
from numba import njit


@njit
def solve_tridiag(a, b, c, d):
    """Thomas' algorithm as ocean-model kernels write it (pyhpc-benchmarks' tke kernel):
    shapes compared whole in an assert, the diagonals updated in place."""
    assert a.shape == b.shape and a.shape == c.shape and a.shape == d.shape
    n = a.shape[0]
    for i in range(1, n):
        w = a[i] / b[i - 1]
        b[i] += -w * c[i - 1]
        d[i] += -w * d[i - 1]
    out = np.empty_like(a)
    out[-1] = d[-1] / b[-1]
    for i in range(n - 2, -1, -1):
        out[i] = (d[i] - c[i] * out[i + 1]) / b[i]
    return out
