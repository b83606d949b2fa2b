"""CUDA benchmark: forward kernel, adjoint kernel, their ratio, and adjit's CPU gradient of
the same work, for an elementwise map (10^7 elements), a 1-D stencil (10^7), a 2-D heat
stencil on a 2-D grid (10^7 cells), a counted while loop per thread (10^7, its values recorded
in a local array) and Lennard-Jones energies with a cutoff (10^4 atoms, thread per atom).

Needs a GPU (numba-cuda and a driver); without one it says so and exits 0. Kernel times are
medians of repeated launches on device arrays, synchronized, after a warm-up launch (which
compiles). The adjoint kernel also recomputes the primal (Enzyme's convention), so its time
includes a forward. The CPU column is adjit.grad of the same math as a plain function,
compiled by numba, single-threaded. The hand-written column is a careful person's adjoint
kernel of the map and the stencil (below): it recomputes and writes the primal as adjit's does,
sums the parameter's adjoint over the block in shared memory, and for the stencil gathers each
x_bar[i] from its neighbours' cotangents (one plain store per point, no atomics; it leaves
out_bar as it is, where adjit's zeroes it). Run: .venv/bin/python benchmarks/cuda_bench.py
"""
import math
import os
import sys
import time

import numpy as np

# numba-cuda 0.2x registers an overload of np.row_stack, which numpy 2.5 removed: with both
# (the GPU machines' image), compiling any kernel fails inside numba-cuda. As the tests do
# (tests/conftest.py), give numpy back the alias before numba.cuda is imported.
if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack

from numba import cuda, float64  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))


SMOKE = os.environ.get("ADJIT_CUDA_BENCH_SMOKE") == "1"
"""Tiny sizes, one repeat, also in the simulator: checks the script itself (tests/test_cuda.py)."""


def median(fn, repeats=9):
    repeats = 1 if SMOKE else repeats
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main():
    from numba import config, cuda
    if not SMOKE and (config.ENABLE_CUDASIM or not cuda.is_available()):
        print("note: no CUDA GPU available (or NUMBA_ENABLE_CUDASIM=1): the CUDA benchmark "
              "needs one; the CUDA tests run in the simulator (make test).")
        return 0
    import adjit
    import adjit.cuda
    import test_cuda as T

    if config.ENABLE_CUDASIM:
        print("device: the CUDA simulator (smoke test: tiny sizes, times mean nothing)")
    else:
        dev = cuda.get_current_device()
        print(f"device: {dev.name.decode() if isinstance(dev.name, bytes) else dev.name}, "
              f"compute capability {dev.compute_capability}")
    threads = THREADS
    rows = []

    def run(name, kernel, argnums, host_args, n_threads, cpu_fn, cpu_args, cpu_argnums,
            hand=None, launch=None):
        d_args = [cuda.to_device(a) for a in host_args]
        adj = adjit.cuda.adjoint_kernel(kernel, argnums)
        shadows = adj.shadows_for(*host_args)
        params = adj.params
        d_shadows = [cuda.to_device(np.ones_like(host_args[params.index(s[:-4])]))
                     for s in shadows]
        blocks, threads_ = launch or ((n_threads + threads - 1) // threads, threads)

        def fwd():
            kernel[blocks, threads_](*d_args)
            cuda.synchronize()

        def bwd():
            adj[blocks, threads_](*d_args, *d_shadows)
            cuda.synchronize()

        def by_hand():
            hand[blocks, threads_](*d_args, *d_shadows)
            cuda.synchronize()

        tf, tb = median(fwd), median(bwd)
        th = median(by_hand) if hand is not None else float("nan")
        if hand is not None:        # the hand-written adjoint computes what adjit's does
            results = []
            for k in (adj, hand):
                fresh = [cuda.to_device(np.zeros_like(host_args[params.index(s[:-4])]))
                         for s in shadows[:len(argnums)]]
                ones = [cuda.to_device(np.ones_like(host_args[params.index(s[:-4])]))
                        for s in shadows[len(argnums):]]
                k[blocks, threads_](*d_args, *fresh, *ones)
                results.append([f.copy_to_host() for f in fresh])
            for mine, theirs in zip(*results):
                np.testing.assert_allclose(mine, theirs, rtol=1e-9, atol=1e-12)
        g = adjit.grad(cpu_fn, argnums=cpu_argnums)
        tc = median(lambda: g(*cpu_args), repeats=3)
        rows.append((name, tf * 1e3, tb * 1e3, tb / tf, th * 1e3, tb / th, tc * 1e3, tc / tb))

    n = 64 if SMOKE else 10_000_000
    x = np.linspace(0.0, 1.0, n)
    run("elementwise map (1e7)", T.elementwise, (0, 1), (x, np.array([0.7]), np.zeros(n)), n,
        _elementwise_cpu, (x, 0.7), (0, 1), map_hand)
    run("1-D stencil (1e7)", T.stencil, (0, 1), (x, np.array([0.3]), np.zeros(n)), n,
        _stencil_cpu, (x, 0.3), (0, 1), stencil_hand)
    side = 8 if SMOKE else 3162
    u = np.random.default_rng(0).random((side, side))
    tile = (16, 16)
    run("2-D heat stencil (3162^2, 2-D grid)", T.heat_2d, (0, 1),
        (u, np.array([0.15]), np.zeros_like(u)), None, _heat_2d_cpu, (u, 0.15), (0, 1),
        launch=(((side + 15) // 16, (side + 15) // 16), tile))
    a = np.linspace(0.2, 1.4, n)
    run("counted while loop, 6 steps (1e7)", T.counted_while_kernel, 0, (a, np.zeros(n)), n,
        _counted_while_cpu, (a,), 0)
    pos = T._lattice(27 if SMOKE else 10_000, spacing=1.12)
    run("Lennard-Jones, cutoff 2.5 (1e4 atoms)", T.lj_energies, 0,
        (pos, np.zeros(pos.shape[0])), pos.shape[0], T.lj_total, (pos,), 0)
    print(f"| {'case':38} | {'forward ms':>10} | {'adjoint ms':>10} | {'adj/fwd':>7} | "
          f"{'by hand ms':>10} | {'adjit/hand':>10} | {'CPU adjit grad ms':>17} | "
          f"{'CPU/GPU adjoint':>15} |")
    print("|" + "|".join("-" * (w + 2) for w in (38, 10, 10, 7, 10, 10, 17, 15)) + "|")
    for name, tf, tb, ratio, th, vs_hand, tc, speedup in rows:
        hand_cells = f"{th:10.3f} | {vs_hand:10.2f}" if th == th else f"{'-':>10} | {'-':>10}"
        print(f"| {name:38} | {tf:10.3f} | {tb:10.3f} | {ratio:7.2f} | {hand_cells} | "
              f"{tc:17.1f} | {speedup:15.1f} |")
    print("targets: adjoint/forward <= 3 (map, stencil), <= 5 (Lennard-Jones with atomics); "
          "adjit/hand <= 1.2")
    return 0


THREADS = 256


@cuda.jit(device=True)
def _block_add(acc, target):
    red = cuda.shared.array(THREADS, float64)
    t = cuda.threadIdx.x
    red[t] = acc
    cuda.syncthreads()
    s = THREADS // 2
    while s > 0:
        if t < s:
            red[t] += red[t + s]
        cuda.syncthreads()
        s //= 2
    if t == 0:
        cuda.atomic.add(target, 0, red[0])


# Hand-written adjoint kernels of tests/test_cuda.py's elementwise map and stencil, with
# adjit's calling convention (primal arguments, then x_bar, p_bar, out_bar)
@cuda.jit
def map_hand(x, p, out, x_bar, p_bar, out_bar):
    i = cuda.grid(1)
    acc = 0.0
    if i < x.shape[0]:
        xi = x[i]
        e = math.exp(-p[0] * xi)
        out[i] = e * xi
        g = out_bar[i]
        out_bar[i] = 0.0
        x_bar[i] += g * e * (1.0 - p[0] * xi)
        acc = -g * xi * xi * e
    _block_add(acc, p_bar)


@cuda.jit
def stencil_hand(x, a, out, x_bar, a_bar, out_bar):
    i = cuda.grid(1)
    n = x.shape[0]
    acc = 0.0
    if i < n:
        xi = x[i]
        g = 0.0
        if i > 0 and i < n - 1:
            out[i] = a[0] * x[i - 1] * x[i + 1] + math.sin(xi) - 2.0 * xi * xi
            gi = out_bar[i]
            g = gi * (math.cos(xi) - 4.0 * xi)
            acc = gi * x[i - 1] * x[i + 1]
        if i + 1 < n - 1:
            g += out_bar[i + 1] * a[0] * x[i + 2]
        if i - 1 > 0:
            g += out_bar[i - 1] * a[0] * x[i - 2]
        x_bar[i] += g
    _block_add(acc, a_bar)


def _elementwise_cpu(x, p):
    s = 0.0
    for i in range(x.shape[0]):
        s += math.exp(-p * x[i]) * x[i]
    return s


def _heat_2d_cpu(u, alpha):
    n, m = u.shape
    s = 0.0
    for i in range(n):
        for j in range(m):
            if i == 0 or j == 0 or i == n - 1 or j == m - 1:
                s += u[i, j]
            else:
                s += u[i, j] + alpha * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]
                                        - 4.0 * u[i, j])
    return s


def _counted_while_cpu(a):
    s = 0.0
    for i in range(a.shape[0]):
        x = a[i]
        k = 0
        while k < 6:
            x *= math.sin(x) + 1.5
            k += 1
        s += x * k
    return s


def _stencil_cpu(x, a):
    s = 0.0
    for i in range(1, x.shape[0] - 1):
        s += a * x[i - 1] * x[i + 1] + math.sin(x[i]) - 2.0 * x[i] * x[i]
    return s


if __name__ == "__main__":
    sys.exit(main())
