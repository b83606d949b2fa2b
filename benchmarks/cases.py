"""Benchmark cases: loop code written the way numba users write it.

Each case gives the function, its inputs, and the argnums to differentiate. The same
functions are compiled with numba.njit for the forward time, and with adjit for the gradient.
"""
import math

import numba
import numpy as np


def sum_of_sin(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += math.sin(x[i]) * x[i]
    return s


def horner(c, t):
    p = 0.0
    for k in range(c.shape[0]):
        p = p * t + c[k]
    return p


def lennard_jones(x):
    n = x.shape[0]
    e = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            dx = x[i, 0] - x[j, 0]
            dy = x[i, 1] - x[j, 1]
            dz = x[i, 2] - x[j, 2]
            r2 = dx * dx + dy * dy + dz * dz
            inv6 = 1.0 / (r2 * r2 * r2)
            e += 4.0 * (inv6 * inv6 - inv6)
    return e


@numba.njit
def pair_energy(r2):
    inv6 = 1.0 / (r2 * r2 * r2)
    return 4.0 * (inv6 * inv6 - inv6)


def lennard_jones_helper(x):
    """The same energy with the pair term in an @njit helper, which adjit inlines."""
    n = x.shape[0]
    e = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            dx = x[i, 0] - x[j, 0]
            dy = x[i, 1] - x[j, 1]
            dz = x[i, 2] - x[j, 2]
            e += pair_energy(dx * dx + dy * dy + dz * dz)
    return e


def heat(u0, alpha, steps):
    n = u0.shape[0]
    u = u0.copy()
    un = np.zeros(n)
    for t in range(steps):
        for i in range(1, n - 1):
            un[i] = u[i] + alpha * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        for i in range(1, n - 1):
            u[i] = un[i]
    s = 0.0
    for i in range(n):
        s += u[i] * u[i]
    return s


def lattice(n, spacing, seed):
    """n atoms on a jittered cubic lattice: no two closer than about 0.8 * spacing."""
    rng = np.random.default_rng(seed)
    side = int(math.ceil(n ** (1.0 / 3.0)))
    pts = np.array([(i, j, k) for i in range(side) for j in range(side) for k in range(side)],
                   dtype=np.float64)[:n]
    return pts * spacing + rng.uniform(-0.1, 0.1, pts.shape) * spacing


FAST = {"contract", "arcp", "nsz"}
"""The fast-math flags that keep NaN and inf semantics (no nnan, ninf or afn)."""


def cases():
    """(name, function, args, argnums, grad options) for every benchmark."""
    rng = np.random.default_rng(0)
    return [
        ("sum-of-sin (1e5)", sum_of_sin, (rng.random(100_000),), 0, {}),
        ("horner (1e5 coeffs)", horner, (rng.random(100_000) / 100_000, 0.999), (0, 1), {}),
        ("lennard-jones (200 atoms)", lennard_jones, (lattice(200, 1.2, 1),), 0, {}),
        ("lennard-jones, fastmath=FAST", lennard_jones, (lattice(200, 1.2, 1),), 0,
         {"fastmath": FAST}),
        ("lennard-jones, njit helper (200)", lennard_jones_helper, (lattice(200, 1.2, 1),), 0,
         {}),
        ("heat d/du0 (256 x 2000)", heat, (rng.random(256), 0.25, 2000), 0, {}),
        ("heat d/(u0, alpha) (256 x 2000)", heat, (rng.random(256), 0.25, 2000), (0, 1), {}),
    ]
