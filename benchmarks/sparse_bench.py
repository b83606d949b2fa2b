"""Sparse Jacobians of the 2-D Brusselator from its pattern: adjit's colored jvps against
scipy's colored finite differences (approx_derivative with the same pattern) and adjit's
dense Jacobian.

    .venv/bin/python benchmarks/sparse_bench.py [N ...]      (grid sizes; default 16 32 64)

Medians of repeated calls after a first (compiling) call; the machine's load is printed.
"""
import os
import statistics
import sys
import time

import numpy as np
from scipy.optimize._numdiff import approx_derivative

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))

import adjit  # noqa: E402
from brusselator_sparse import brusselator, pattern as brusselator_pattern  # noqa: E402


def _median(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main(sizes):
    print(f"load average: {os.getloadavg()[0]:.2f}")
    print("| grid | unknowns | colors | adjit sparse (ms) | scipy colored FD (ms) | "
          "adjit dense (ms) | max abs diff to dense |")
    print("|---|---|---|---|---|---|---|")
    params = (1.0, 3.0, 0.02)
    for n in sizes:
        y = np.random.default_rng(n).uniform(0.5, 1.5, 2 * n * n)
        P = brusselator_pattern(n)
        J = adjit.jacobian(brusselator, sparse=P)
        Js = J(y, *params)                                   # compiles
        sparse = _median(lambda: J(y, *params), 5)
        fwd = adjit.jacobian(brusselator)
        njit_f = __import__("numba").njit(brusselator)
        njit_f(y, *params)

        def fd():
            return approx_derivative(lambda z: njit_f(z, *params), y, sparsity=P,
                                     method="2-point")
        colored = _median(fd, 5)
        if n <= 32:
            D = fwd(y, *params)
            dense = _median(lambda: fwd(y, *params), 3)
            diff = f"{np.max(np.abs(Js.toarray() - D)):.1e}"
        else:
            dense, diff = float("nan"), "(not run)"
        print(f"| {n} x {n} | {2 * n * n} | {J.ncolors} | {1e3 * sparse:.2f} | "
              f"{1e3 * colored:.2f} | {1e3 * dense:.1f} | {diff} |")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [16, 32, 64])
