"""numba.prange loops: gradient time against forward time, serial and parallel.

For each case the same function is written twice, with `range` and with `numba.prange`,
compiled by numba (njit, and njit(parallel=True) for the prange form) and differentiated by
adjit (grad; the prange form's gradient runs its forward and backward sweeps in parallel).
Times are medians of repeated calls after a warm-up, at each thread count given (numba's
set_num_threads), ratios from the same run. The two gradients are checked equal (to 1e-10)
before timing.

    .venv/bin/python benchmarks/prange_bench.py [--threads 1 2 4] [--quick]
"""
import argparse
import os
import sys
import time

import numba
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import adjit  # noqa: E402
from cases import lattice, lennard_jones, lennard_jones_prange  # noqa: E402
import gmm_bench  # noqa: E402


def median_ms(fn, args, repeats=9):
    fn(*args)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t)
    return 1e3 * float(np.median(times))


def cases(quick):
    n_atoms = 500 if quick else 2000
    gmm = (10, 5, 1000) if quick else (20, 10, 4000)
    return [
        (f"Lennard-Jones energy ({n_atoms} atoms)", lennard_jones, lennard_jones_prange,
         (lattice(n_atoms, 1.2, 1),), 0),
        ("ADBench GMM (d={}, K={}, n={})".format(*gmm), gmm_bench.gmm_objective.py_func,
         gmm_bench.gmm_objective_prange.py_func, gmm_bench.make_inputs(*gmm), (0, 1, 2)),
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, nargs="*", default=None)
    ap.add_argument("--quick", action="store_true")
    opts = ap.parse_args()
    top = numba.config.NUMBA_NUM_THREADS
    threads = opts.threads or sorted({1, 2, top})
    print(f"numba {numba.__version__}, {os.cpu_count()} CPUs, numba threads up to {top}, "
          f"load {os.getloadavg()[0]:.2f}")
    print("| case | threads | serial fwd ms | serial grad ms | serial grad/fwd | prange fwd ms "
          "| prange grad ms | prange grad/fwd | prange grad speed-up |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, serial, parallel, args, argnums in cases(opts.quick):
        fs, fp = numba.njit(serial), numba.njit(parallel=True)(parallel)
        gs, gp = adjit.grad(serial, argnums=argnums), adjit.grad(parallel, argnums=argnums)
        a, b = gs(*args), gp(*args)
        for x, y in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,)):
            np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-10)
        for t in threads:
            if t > top:
                continue
            numba.set_num_threads(t)
            sf, sg = median_ms(fs, args), median_ms(gs, args)
            pf, pg = median_ms(fp, args), median_ms(gp, args)
            print(f"| {name} | {t} | {sf:.3f} | {sg:.3f} | {sg / sf:.2f} | {pf:.3f} | {pg:.3f} "
                  f"| {pg / pf:.2f} | {sg / pg:.2f} |", flush=True)
        numba.set_num_threads(top)
    print(f"load after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
