"""Hessian-vector products against gradients: hvp time / gradient time, same process.

adjit.hvp(f)(x, v) is the gradient of f's jvp (reverse over forward): its cost should be a
small multiple of the gradient's (JAX's rule of thumb for forward-over-reverse: about 4).
Cases: the Rosenbrock function (loops, n = 10^5), a Lennard-Jones cluster energy (pair
loops, 125 atoms), a tanh recurrence (a loop-carried scalar, n = 10^5). Medians of repeated
calls after a warm-up (compile excluded); each row's ratio from the same run. Each hvp is
checked against central differences of the gradient first.

    .venv/bin/python benchmarks/hvp_bench.py
"""
import math
import os
import time

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
    grid = np.array([(i, j, k) for i in range(5) for j in range(5) for k in range(5)], float)
    yield "Rosenbrock, n = 1e5", rosenbrock, rng.uniform(-1.0, 1.0, 100_000)
    yield "Lennard-Jones, 125 atoms", lennard_jones, grid * 1.2 + rng.uniform(-0.05, 0.05, grid.shape)
    yield "tanh recurrence, n = 1e5", recurrence, rng.standard_normal(100_000) * 0.3


def main():
    print(f"# serial loops, float64; load {os.getloadavg()[0]:.2f}")
    print("| case | gradient ms | hvp ms | hvp/gradient | max rel. error vs differences |")
    print("|---|---|---|---|---|")
    failed = False
    for name, f, x in cases():
        g = adjit.grad(f)
        h = adjit.hvp(f)
        v = np.random.default_rng(1).standard_normal(x.shape)
        eps = 1e-6
        fd = (g(x + eps * v) - g(x - eps * v)) / (2 * eps)
        hv = h(x, v)
        err = np.max(np.abs(hv - fd)) / max(np.max(np.abs(fd)), 1e-300)
        failed |= not err < 1e-5
        tg = median_ms(g, x)
        th = median_ms(h, x, v)
        print(f"| {name} | {tg:.3f} | {th:.3f} | {th / tg:.2f} | {err:.1e}"
              f"{'' if err < 1e-5 else ' FAIL'} |", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
