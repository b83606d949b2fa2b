"""Relax a Lennard-Jones cluster by gradient descent, entirely inside @numba.njit.

The energy is plain loop code; adjit's gradient is called from the jitted optimizer loop like
any other jitted function. Run: .venv/bin/python examples/relax_cluster.py
"""
import math
import time

import numba
import numpy as np

from adjit import grad


def energy(x):
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


denergy = grad(energy)


@numba.njit
def relax(x, steps, lr, max_step):
    for _ in range(steps):
        g = denergy(x)
        for i in range(x.shape[0]):
            for k in range(3):
                step = -lr * g[i, k]
                x[i, k] += min(max(step, -max_step), max_step)
    return x


def main(n_side=3, steps=2000):
    rng = np.random.default_rng(0)
    grid = np.array([(i, j, k) for i in range(n_side) for j in range(n_side)
                     for k in range(n_side)], dtype=np.float64)
    x = grid * 1.3 + rng.uniform(-0.05, 0.05, grid.shape)
    e0 = energy(x)
    t0 = time.perf_counter()
    x = relax(x, steps, 1e-3, 0.01)
    elapsed = time.perf_counter() - t0
    e1 = energy(x)
    print(f"{len(x)} atoms: energy {e0:.4f} -> {e1:.4f} after {steps} jitted gradient steps "
          f"({elapsed:.2f} s including compilation)")
    print(f"max |force| at the end: {np.abs(denergy(x)).max():.2e}")
    assert e1 < e0 and math.isfinite(e1)
    return e0, e1


if __name__ == "__main__":
    main()
