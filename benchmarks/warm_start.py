"""One case's gradient in a fresh process, loaded from numba's on-disk cache (run by run.py).

`python warm_start.py INDEX` builds the gradient of case INDEX of cases.py with cache=True,
calls it once and prints one JSON line: the case's name, the seconds of that first call, the
wall-clock time (time.time()) when its result was there, and numba's cache hits of the
gradient's dispatcher (1 when the machine code came from the disk, 0 when it compiled).
run.py starts it with the environment of the benchmark process (ADJIT_CACHE_DIR naming the
folder where that process compiled the same gradient, OPENBLAS_NUM_THREADS, PYTHONPATH with
the repository and this folder), after the benchmark process compiled the case, and takes
the time from just before it started this process to that result: Python's start, the
imports of numpy, numba and adjit, the transformation of the function (which is not
cached) and loading the machine code. numba's own one-time set-up is done before the first
call is timed (it is part of the time to the first result).

`python warm_start.py --all`, run by run.py before its table, builds and calls every case's
gradient once with adjit's default disk cache and prints one JSON line: the seconds it took
and how many gradients numba loaded from the disk and how many it compiled. It leaves adjit's
runtime (the functions the generated code calls, which numba compiles on a machine's first
use and keeps in its own disk cache) compiled, so that the table's first calls are the same
kind of number on a checkout's first run and on any later one.
"""
import json
import sys
import time

import adjit
from cases import cases, inputs


def main(index):
    name, fn, args, argnums, options = cases()[index]
    args = inputs(args)
    g = adjit.grad(fn, argnums=argnums, cache=True, **options)
    # numba's one-time set-up (about 0.2 s: it imports its numpy support and checks for
    # BLAS through scipy), which the first jitted call of any process pays: done here so
    # that the first call's time is the same kind of number for every case (the inputs of
    # some cases are made by an @njit function, which would otherwise have paid it)
    try:
        from numba.core.registry import cpu_target
        cpu_target.target_context.refresh()
    except (ImportError, AttributeError):
        pass
    t0 = time.perf_counter()
    g(*args)
    first = time.perf_counter() - t0
    end = time.time()
    print(json.dumps({"name": name, "first": first, "end": end, "hits": _cache_hits(g)}))


def _cache_hits(g):
    """numba's disk-cache hits of what g's last call ran (1: loaded, 0: compiled)."""
    return int(sum(g._called.dispatcher.stats.cache_hits.values()))


def warm_all():
    start = time.perf_counter()
    loaded = compiled = 0
    for name, fn, args, argnums, options in cases():
        g = adjit.grad(fn, argnums=argnums, cache=True, **options)
        g(*inputs(args))
        hits = _cache_hits(g)
        loaded += hits > 0
        compiled += hits == 0
    print(json.dumps({"seconds": time.perf_counter() - start, "loaded": loaded,
                      "compiled": compiled}))


if __name__ == "__main__":
    if sys.argv[1] == "--all":
        warm_all()
    else:
        main(int(sys.argv[1]))
