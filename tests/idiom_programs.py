"""Programs of tests/test_idioms.py that use `assert`: a module pytest does not rewrite (its
rewritten asserts call pytest's helpers, which numba cannot compile)."""
import math

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


# poliastro's rotation_matrix checks its axis with `in` (here: pytest rewrites no assert)
@njit
def rotation(angle, axis):
    assert axis in (0, 1, 2)
    c, s = math.cos(angle), math.sin(angle)
    a1, a2 = (axis + 1) % 3, (axis + 2) % 3
    R = np.zeros((3, 3))
    R[axis, axis] = 1.0
    R[a1, a1] = c
    R[a1, a2] = -s
    R[a2, a1] = s
    R[a2, a2] = c
    return R
