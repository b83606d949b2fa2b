"""The JIT benchmark table: njit forward time, adjit gradient time, their ratio, compile time.

Times are medians of repeated runs in this one process; the ratio is taken from the same
run. First-call compile is the time of the gradient's first call (transformation plus numba
compilation of the gradient). Run with `make bench`.

With jax installed (`pip install 'adjit[compare]'`), the cases that have a JAX mirror in
jax_cases.py also get the time of jax.jit(jax.grad(f)) on the same inputs (as device arrays,
float64, waiting for the result) and the ratio adjit/JAX; the two gradients are compared.
JAX runs in a separate process (jax_cases.py run as a script, before the table): its thread
pool left running here would compete with numba and OpenBLAS for the cores and distort the
adjit times. That process is pinned to one CPU, as the generated code is single-threaded: on
the 2-core CI machine JAX was also fastest and steadiest that way (0.18 ms for the softmax-CE
gradient pinned, 0.24 to 0.52 ms from run to run with its thread pool on both cores).
ADJIT_BENCH_JAX_PIN=0 leaves JAX its default threads. Without jax a note line says so and
the table is the same otherwise.
"""
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

# One BLAS thread (before numpy loads OpenBLAS), unless the caller chose: on this 2-core CI
# machine a threaded GEMM waits a scheduler tick (4 ms) for its second thread whenever the
# other core is busy, which turned the MLP row's 0.6 ms into 8 ms from run to run. The
# generated code is single-threaded anyway (and JAX does its matrix products without BLAS).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numba  # noqa: E402
import numpy as np  # noqa: E402

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


def measure_jax(repeats, out):
    """{case name: (seconds, path of its saved gradient)} from jax_cases.py run in a
    subprocess writing into folder `out`, and a line to print: the JAX version, or why
    there is no comparison (None instead of the dict)."""
    if importlib.util.find_spec("jax") is None:
        return None, "note: jax is not installed, no JAX comparison " \
                     "(pip install 'adjit[compare]' to add it)"
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jax_cases.py")
    pin = os.environ.get("ADJIT_BENCH_JAX_PIN", "1") != "0" and hasattr(os, "sched_setaffinity")
    cpu = max(os.sched_getaffinity(0)) if pin else None
    # JAX on the CPU, like adjit here (a machine with a GPU would otherwise compare against
    # the GPU); ADJIT_BENCH_JAX_PLATFORM=gpu asks for that comparison
    env = dict(os.environ, JAX_PLATFORMS=os.environ.get("ADJIT_BENCH_JAX_PLATFORM", "cpu"))
    proc = subprocess.run([sys.executable, script, out, str(repeats)], capture_output=True,
                          text=True, env=env,
                          preexec_fn=(lambda: os.sched_setaffinity(0, {cpu})) if pin else None)
    if proc.returncode != 0:
        return None, "note: no JAX comparison, jax_cases.py failed:\n" + proc.stderr[-2000:]
    with open(os.path.join(out, "times.json")) as fh:
        info = json.load(fh)
    where = f"pinned to CPU {cpu}" if pin else "default threads"
    return info["cases"], info["about"].replace("(in its own process)",
                                                f"(in its own process, {where})")


def max_rel_diff(a, saved):
    """Largest |a - b| over the gradient (a tuple for tuple argnums), relative to max |a|;
    b is read from the .npz file jax_cases.py saved (arrays g0, g1, ...)."""
    a = a if isinstance(a, tuple) else (a,)
    with np.load(saved) as z:
        b = [z[f"g{k}"] for k in range(len(a))]
    scale = max(float(np.max(np.abs(x))) for x in a) or 1.0
    return max(float(np.max(np.abs(np.asarray(x) - np.asarray(y)))) for x, y in zip(a, b)) \
        / scale


def main():
    with tempfile.TemporaryDirectory(prefix="adjit-bench-jax-") as tmp:
        table(tmp)


def table(tmp):
    repeats = int(os.environ.get("ADJIT_BENCH_REPEATS", "7"))
    print(f"machine: {platform.machine()} {platform.processor() or ''} "
          f"({os.cpu_count()} cores), python {platform.python_version()}, "
          f"numba {numba.__version__}, numpy {np.__version__}")
    print(f"medians of {repeats} runs; 'first call' is the gradient's first call in a process "
          "where numba itself is already warm; forward = numba.njit(f) with default flags; "
          "FAST = fastmath={'contract', 'arcp', 'nsz'} for the gradient only; "
          f"OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}\n")
    jax_times, about = measure_jax(repeats, tmp)
    print(about + "\n")
    numba.njit(lambda v: v + 1.0)(1.0)
    header = f"| {'case':34} | {'forward ms':>10} | {'gradient ms':>11} | {'grad/fwd':>8} | " \
             f"{'first call s':>12} |"
    if jax_times is not None:
        header += f" {'jax grad ms':>11} | {'adjit/jax':>9} |"
    print(header)
    print("|" + "|".join("-" * (len(c)) for c in header.split("|")[1:-1]) + "|")
    diffs = []
    for name, fn, args, argnums, options in cases():
        forward = numba.njit(fn)
        g = adjit.grad(fn, argnums=argnums, **options)
        t0 = time.perf_counter()
        g(*args)
        compile_s = time.perf_counter() - t0
        tf = median_time(forward, args, repeats)
        tg = median_time(g, args, repeats)
        row = f"| {name:34} | {tf * 1e3:10.3f} | {tg * 1e3:11.3f} | {tg / tf:8.2f} | " \
              f"{compile_s:12.2f} |"
        if jax_times is not None and name in jax_times:
            tj, saved = jax_times[name]
            diffs.append((name, max_rel_diff(g(*args), saved)))
            row += f" {tj * 1e3:11.3f} | {tg / tj:9.2f} |"
        elif jax_times is not None:
            row += f" {'-':>11} | {'-':>9} |"
        print(row, flush=True)
    for name, d in diffs:
        print(f"{name}: adjit and JAX gradients differ by {d:.1e} of the largest component"
              + ("" if d < 1e-8 else "  <-- MISMATCH"))


if __name__ == "__main__":
    main()
