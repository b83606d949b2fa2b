"""A stiff reaction-diffusion system integrated implicitly with adjit's sparse Jacobian.

The 2-D Brusselator on an n x n periodic grid,

    du/dt = a + u^2 v - (b + 1) u + alpha lap(u)
    dv/dt = b u - u^2 v + alpha lap(v),

written as a simulation code writes its right-hand side (loops over the grid). scipy's BDF
solver needs the Jacobian of that right-hand side at every Newton step. Each unknown couples
to its four neighbours and to the other field at its own point, so the Jacobian has 6 entries
per row out of 2 n^2. adjit reads that pattern from the code (`adjit.sparsity`) and evaluates
the Jacobian exactly from a dozen jvps (`adjit.jacobian(rhs, sparse=True)`), where scipy's
default estimates it by finite differences over the same coloring (given the pattern).

    python examples/brusselator_sparse.py [n]
"""
import sys
import time

import numpy as np
import scipy.sparse as sps
from scipy.integrate import solve_ivp

import adjit


def brusselator(y, a, b, alpha):
    n = int(np.sqrt(y.size // 2))
    u = y[: n * n].reshape((n, n))
    v = y[n * n:].reshape((n, n))
    du = np.empty((n, n))
    dv = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            ip, im = (i + 1) % n, (i - 1) % n
            jp, jm = (j + 1) % n, (j - 1) % n
            lu = u[ip, j] + u[im, j] + u[i, jp] + u[i, jm] - 4.0 * u[i, j]
            lv = v[ip, j] + v[im, j] + v[i, jp] + v[i, jm] - 4.0 * v[i, j]
            du[i, j] = a + u[i, j] * u[i, j] * v[i, j] - (b + 1.0) * u[i, j] + alpha * lu
            dv[i, j] = b * u[i, j] - u[i, j] * u[i, j] * v[i, j] + alpha * lv
    return np.concatenate((du.ravel(), dv.ravel()))


def pattern(n):
    """Which entries of the Jacobian can be nonzero: the 5-point stencil in each field, and
    each point's other field."""
    N = n * n
    rows, cols = [], []
    for i in range(n):
        for j in range(n):
            k = i * n + j
            for c in (k, ((i + 1) % n) * n + j, ((i - 1) % n) * n + j,
                      i * n + (j + 1) % n, i * n + (j - 1) % n):
                rows += [k, N + k]
                cols += [c, N + c]
            rows += [k, N + k]
            cols += [N + k, k]
    return sps.csr_array((np.ones(len(rows), bool), (rows, cols)), shape=(2 * N, 2 * N))


def main(n=16, t_end=5.0):
    import numba
    params = (1.0, 3.0, 0.02)
    rhs_compiled = numba.njit(brusselator)
    x = np.linspace(0.0, 1.0, n, endpoint=False)
    u0 = 1.0 + np.sin(2 * np.pi * x)[:, None] * np.ones(n)[None, :]
    y0 = np.concatenate((u0.ravel(), np.full(n * n, 3.0)))
    P = adjit.sparsity(brusselator)(y0, *params)     # read from the code above
    assert (P != pattern(n)).nnz == 0                # the stencil, exactly
    J = adjit.jacobian(brusselator, sparse=True)

    def rhs(t, y):
        return rhs_compiled(y, *params)

    J(y0, *params)                       # compile once, outside the timing
    rhs(0.0, y0)
    results = {}
    for label, jac in (("adjit sparse Jacobian", lambda t, y: J(y, *params)),
                       ("scipy colored differences", None)):
        start = time.perf_counter()
        sol = solve_ivp(rhs, (0.0, t_end), y0, method="BDF", jac=jac,
                        jac_sparsity=None if jac is not None else P, rtol=1e-6, atol=1e-9)
        elapsed = time.perf_counter() - start
        results[label] = sol
        print(f"{label:28s} {elapsed:7.3f} s, {sol.njev:4d} Jacobians, {sol.nfev:5d} right-hand "
              f"sides, success {sol.success}")
    a, b = (results[k].y[:, -1] for k in results)
    print(f"{J.ncolors} colors for {2 * n * n} unknowns; the two solutions agree to "
          f"{np.max(np.abs(a - b)):.1e}")
    return results


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 16)
