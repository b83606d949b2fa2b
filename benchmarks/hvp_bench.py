"""Hessian-vector products against gradients and the function itself, and against JAX.

adjit.hvp(f)(x, v) is the gradient of f's jvp (reverse over forward): its cost should be a
small multiple of the gradient's (JAX's rule of thumb for forward-over-reverse: about 4).
Cases: the Rosenbrock function (loops, n = 10^4 and 10^5), a Lennard-Jones cluster energy
(pair loops, 125 and 200 atoms), a tanh recurrence (a loop-carried scalar, n = 10^5).
Columns: the forward function (numba.njit of the same code), the gradient, the hvp, their
ratios, and with jax installed (the optional extra adjit[compare]) the time of
jax.jit(lambda x, v: jax.jvp(jax.grad(f), (x,), (v,))[1]) on the same inputs for f written
the way JAX wants it (vectorized; the recurrence as lax.scan), its result compared with
adjit's. Medians of repeated calls after a warm-up (compile excluded); each row from one
run. Each hvp is checked against central differences of the gradient first.

    .venv/bin/python benchmarks/hvp_bench.py
"""
import math
import os
import time

import numba
import numpy as np

import adjit
from cases import lennard_jones     # (benchmarks/ is on the path of a script run from it)


def rosenbrock(x):
    s = 0.0
    for i in range(x.shape[0] - 1):
        s += 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2
    return s


def recurrence(x):
    h = 0.0
    out = 0.0
    for i in range(x.shape[0]):
        h = math.tanh(0.7 * h + x[i])
        out += h * h
    return out


def median_ms(f, *args, repeat=9):
    f(*args)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        f(*args)
        times.append(time.perf_counter() - t)
    return 1e3 * sorted(times)[repeat // 2]


def cases():
    rng = np.random.default_rng(0)

    def cluster(m):
        grid = np.array([(i, j, k) for i in range(m) for j in range(m) for k in range(m)], float)
        return grid * 1.2 + rng.uniform(-0.05, 0.05, grid.shape)
    yield "Rosenbrock, n = 1e4", rosenbrock, rng.uniform(-1.0, 1.0, 10_000)
    yield "Rosenbrock, n = 1e5", rosenbrock, rng.uniform(-1.0, 1.0, 100_000)
    yield "Lennard-Jones, 125 atoms", lennard_jones, cluster(5)
    yield "Lennard-Jones, 200 atoms", lennard_jones, cluster(6)[:200]
    yield "tanh recurrence, n = 1e5", recurrence, rng.standard_normal(100_000) * 0.3


def jax_hvps():
    """{function name: jitted (x, v) -> H v} written for JAX, or None without jax."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)

    def rosenbrock_jax(x):
        return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    def lennard_jones_jax(x):
        d = x[:, None, :] - x[None, :, :]
        r2 = jnp.sum(d * d, axis=2) + jnp.eye(x.shape[0])     # (the diagonal: r2 = 1)
        inv6 = 1.0 / (r2 * r2 * r2)
        return 2.0 * jnp.sum(inv6 * inv6 - inv6)             # each pair twice, the diagonal 0

    def recurrence_jax(x):
        def step(h, xi):
            h = jnp.tanh(0.7 * h + xi)
            return h, h * h
        return jnp.sum(jax.lax.scan(step, 0.0, x)[1])

    def hvp_of(f):
        return jax.jit(lambda x, v: jax.jvp(jax.grad(f), (x,), (v,))[1])
    return {"rosenbrock": hvp_of(rosenbrock_jax), "lennard_jones": hvp_of(lennard_jones_jax),
            "recurrence": hvp_of(recurrence_jax)}


def main():
    jax = jax_hvps()
    print(f"# serial loops, float64; load {os.getloadavg()[0]:.2f}")
    if jax is None:
        print("# note: jax is not installed, no JAX comparison (pip install 'adjit[compare]')")
    head = "| case | forward ms | gradient ms | hvp ms | hvp/gradient | hvp/forward |"
    rule = "|---|---|---|---|---|---|"
    if jax is not None:
        head += " JAX hvp ms | adjit/JAX | max rel. diff to JAX |"
        rule += "---|---|---|"
    print(head + " max rel. error vs differences |")
    print(rule + "---|")
    failed = False
    for name, f, x in cases():
        forward = numba.njit(f)
        g = adjit.grad(f)
        h = adjit.hvp(f)
        v = np.random.default_rng(1).standard_normal(x.shape)
        eps = 1e-6
        fd = (g(x + eps * v) - g(x - eps * v)) / (2 * eps)
        hv = h(x, v)
        err = np.max(np.abs(hv - fd)) / max(np.max(np.abs(fd)), 1e-300)
        failed |= not err < 1e-5
        tf = median_ms(forward, x)
        tg = median_ms(g, x)
        th = median_ms(h, x, v)
        row = f"| {name} | {tf:.3f} | {tg:.3f} | {th:.3f} | {th / tg:.2f} | {th / tf:.2f} |"
        if jax is not None:
            fj = jax[f.__name__]

            def run(x, v, fj=fj):
                return fj(x, v).block_until_ready()
            xj, vj = (np.ascontiguousarray(a) for a in (x, v))
            tj = median_ms(run, xj, vj)
            diff = np.max(np.abs(np.asarray(run(xj, vj)) - hv)) / np.max(np.abs(hv))
            row += f" {tj:.3f} | {th / tj:.2f} | {diff:.1e} |"
        print(row + f" {err:.1e}{'' if err < 1e-5 else ' FAIL'} |", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
