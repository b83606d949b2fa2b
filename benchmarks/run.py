"""The JIT benchmark table: njit forward time, adjit gradient time, their ratio, compile time.

Times are medians of repeated runs in this one process; the ratio is taken from the same
run. First-call compile is the time of the gradient's first call (transformation plus numba
compilation of the gradient). Run with `make bench`.
"""
import os
import platform
import sys
import time

import numba
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

import adjit  # noqa: E402
from cases import cases  # noqa: E402


def median_time(fn, args, repeats, min_time=0.2):
    """Median seconds per call, over `repeats` batches sized to take about min_time/repeats."""
    fn(*args)
    t0 = time.perf_counter()
    fn(*args)
    one = max(time.perf_counter() - t0, 1e-7)
    inner = max(1, int(min_time / repeats / one))
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn(*args)
        samples.append((time.perf_counter() - t0) / inner)
    return float(np.median(samples))


def main():
    repeats = int(os.environ.get("ADJIT_BENCH_REPEATS", "7"))
    print(f"machine: {platform.machine()} {platform.processor() or ''} "
          f"({os.cpu_count()} cores), python {platform.python_version()}, "
          f"numba {numba.__version__}, numpy {np.__version__}")
    print(f"medians of {repeats} runs; 'first call' is the gradient's first call in a process "
          "where numba itself is already warm; forward = numba.njit(f) with default flags; "
          "FAST = fastmath={'contract', 'arcp', 'nsz'} for the gradient only\n")
    numba.njit(lambda v: v + 1.0)(1.0)
    header = f"| {'case':34} | {'forward ms':>10} | {'gradient ms':>11} | {'grad/fwd':>8} | " \
             f"{'first call s':>12} |"
    print(header)
    print("|" + "|".join("-" * (len(c)) for c in header.split("|")[1:-1]) + "|")
    for name, fn, args, argnums, options in cases():
        forward = numba.njit(fn)
        g = adjit.grad(fn, argnums=argnums, **options)
        t0 = time.perf_counter()
        g(*args)
        compile_s = time.perf_counter() - t0
        tf = median_time(forward, args, repeats)
        tg = median_time(g, args, repeats)
        print(f"| {name:34} | {tf * 1e3:10.3f} | {tg * 1e3:11.3f} | {tg / tf:8.2f} | "
              f"{compile_s:12.2f} |", flush=True)


if __name__ == "__main__":
    main()
