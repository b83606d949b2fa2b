"""Sparse Jacobians of the 2-D Brusselator: adjit's detected pattern and colored jvps against
scipy's colored finite differences (approx_derivative with the same pattern), adjit's dense
Jacobian and JAX's dense jacfwd (when jax is installed: the extra [compare]), and scipy's
BDF solver with each.

    .venv/bin/python benchmarks/sparse_bench.py [N ...]      (grid sizes; default 32 64 128)

Detection is `adjit.sparsity(brusselator)` on fresh arguments (once per argument types and
shapes in use). Jacobian times are medians of repeated calls after a first (compiling) one;
the dense ones run where the matrix fits in a few hundred MB. The machine's load is printed.
"""
import os
import statistics
import sys
import time

import numba
import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize._numdiff import approx_derivative

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))

import adjit  # noqa: E402
from brusselator_sparse import brusselator  # noqa: E402

PARAMS = (1.0, 3.0, 0.02)


def _median(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _jax_brusselator():
    """The same right-hand side as JAX users write it (jnp.roll on the periodic grid), and
    its jitted dense jacfwd; None without jax."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)

    def f(y, a, b, alpha):
        n = int(round((y.size // 2) ** 0.5))
        u, v = y[: n * n].reshape(n, n), y[n * n:].reshape(n, n)

        def lap(w):
            return (jnp.roll(w, 1, 0) + jnp.roll(w, -1, 0) + jnp.roll(w, 1, 1)
                    + jnp.roll(w, -1, 1) - 4.0 * w)
        du = a + u * u * v - (b + 1.0) * u + alpha * lap(u)
        dv = b * u - u * u * v + alpha * lap(v)
        return jnp.concatenate((du.ravel(), dv.ravel()))
    return jax.jit(jax.jacfwd(f))


def jacobians(sizes):
    jax_jac = _jax_brusselator()
    print("| grid | unknowns | detection (s) | colors | adjit sparse (ms) | scipy colored FD "
          "(ms) | adjit dense (ms) | JAX jacfwd dense (ms) | max abs diff to dense |")
    print("|---|---|---|---|---|---|---|---|---|")
    f_numba = numba.njit(brusselator)
    for n in sizes:
        y = np.random.default_rng(n).uniform(0.5, 1.5, 2 * n * n)
        t = time.perf_counter()
        P = adjit.sparsity(brusselator)(y, *PARAMS)
        detect = time.perf_counter() - t
        J = adjit.jacobian(brusselator, sparse=True)
        Js = J(y, *PARAMS)                                   # compiles (and detects again)
        sparse = _median(lambda: J(y, *PARAMS), 5)
        f_numba(y, *PARAMS)

        def fd():
            return approx_derivative(lambda z: f_numba(z, *PARAMS), y, sparsity=P,
                                     method="2-point")
        colored = _median(fd, 5)
        dense_cell = diff = "(not run)"
        if n <= 64:
            full = adjit.jacobian(brusselator)
            D = full(y, *PARAMS)
            dense = _median(lambda: full(y, *PARAMS), 3)
            dense_cell = f"{1e3 * dense:.1f}"
            diff = f"{np.max(np.abs(Js.toarray() - D)):.1e}"
            del D
        jax_cell = "not installed" if jax_jac is None else "(not run)"
        if jax_jac is not None and n <= 64:
            jax_jac(y, *PARAMS).block_until_ready()
            jax_cell = f"{1e3 * _median(lambda: jax_jac(y, *PARAMS).block_until_ready(), 3):.1f}"
        print(f"| {n} x {n} | {2 * n * n:,} | {detect:.2f} | {J.ncolors} | {1e3 * sparse:.2f} "
              f"| {1e3 * colored:.2f} | {dense_cell} | {jax_cell} | {diff} |")


def solver(n, t_end=5.0):
    """scipy's BDF on the n x n Brusselator with each Jacobian."""
    x = np.linspace(0.0, 1.0, n, endpoint=False)
    u0 = 1.0 + np.sin(2 * np.pi * x)[:, None] * np.ones(n)[None, :]
    y0 = np.concatenate((u0.ravel(), np.full(n * n, 3.0)))
    f_numba = numba.njit(brusselator)
    J = adjit.jacobian(brusselator, sparse=True)
    J(y0, *PARAMS)
    f_numba(y0, *PARAMS)
    P = adjit.sparsity(brusselator)(y0, *PARAMS)
    print(f"\nscipy solve_ivp(method='BDF') on {n} x {n} ({2 * n * n:,} unknowns) to t = "
          f"{t_end}, rtol 1e-6, atol 1e-9:\n")
    print("| Jacobian | wall (s) | Jacobians | right-hand sides | steps |")
    print("|---|---|---|---|---|")
    for label, jac, sparsity in (("adjit sparse (detected)", lambda t, y: J(y, *PARAMS), None),
                                 ("scipy colored FD", None, P)):
        t = time.perf_counter()
        sol = solve_ivp(lambda t, y: f_numba(y, *PARAMS), (0.0, t_end), y0, method="BDF",
                        jac=jac, jac_sparsity=sparsity, rtol=1e-6, atol=1e-9)
        wall = time.perf_counter() - t
        assert sol.success
        print(f"| {label} | {wall:.2f} | {sol.njev} | {sol.nfev} | {sol.t.size - 1} |")


def main(sizes):
    print(f"load average: {os.getloadavg()[0]:.2f}")
    jacobians(sizes)
    solver(32)


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [32, 64, 128])
