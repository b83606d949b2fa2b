"""Safe reuse: threads share one compilation, gradients pickle (into other processes too),
generated source is byte-identical across processes, arguments are never written."""
import concurrent.futures
import math
import os
import pickle
import subprocess
import sys
import threading

import numba
import numpy as np
import pytest

from adjit import api, grad, value_and_grad

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def energy(x, k):
    s = 0.0
    for i in range(x.shape[0] - 1):
        d = x[i + 1] - x[i]
        s += k * math.cosh(d) + math.sin(x[i]) * d
    return s


def energy_grad_analytic(x, k):
    g = np.zeros_like(x)
    for i in range(x.shape[0] - 1):
        d = x[i + 1] - x[i]
        dd = k * math.sinh(d) + math.sin(x[i])
        g[i + 1] += dd
        g[i] += -dd + math.cos(x[i]) * d
    return g


@numba.njit
def jitted(a, b):
    return a * math.exp(b) + b * b


def scalar(a, b):
    return math.atan2(a, 1.0 + b * b) * a


# threads -------------------------------------------------------------------------------------
def _count_builds(monkeypatch):
    calls = []
    real = api.build

    def counting(*args, **kwargs):
        calls.append(args[2])
        return real(*args, **kwargs)
    monkeypatch.setattr(api, "build", counting)
    return calls


def test_many_threads_compile_once_and_agree(monkeypatch):
    calls = _count_builds(monkeypatch)
    g = grad(energy)
    n = 16
    xs = [np.linspace(0.0, 1.0 + 0.1 * t, 9) for t in range(n)]
    start = threading.Barrier(n)

    def work(t):
        start.wait()
        return g(xs[t], 0.5 + t)
    with concurrent.futures.ThreadPoolExecutor(n) as pool:
        results = list(pool.map(work, range(n)))
    assert len(calls) == 1
    for t, got in enumerate(results):
        np.testing.assert_allclose(got, energy_grad_analytic(xs[t], 0.5 + t), rtol=1e-12)
    for t in range(n):
        assert not np.array_equal(xs[t], np.zeros(9))   # inputs untouched
        np.testing.assert_array_equal(xs[t], np.linspace(0.0, 1.0 + 0.1 * t, 9))


def test_threads_with_different_argument_types(monkeypatch):
    """Two type signatures (float64 and float32 b) from 24 threads at once: one compilation
    each, and every call returns what the same call returns single-threaded, to the bit."""
    calls = _count_builds(monkeypatch)
    g = value_and_grad(scalar, argnums=0)
    n = 24
    args = [(0.3 + 0.01 * t, 0.1 * (t % 3) if t % 2 else np.float32(0.1 * (t % 3)))
            for t in range(n)]
    start = threading.Barrier(n)

    def work(t):
        start.wait()
        return [g(*args[t]) for _ in range(20)]
    with concurrent.futures.ThreadPoolExecutor(n) as pool:
        results = list(pool.map(work, range(n)))
    assert len(calls) == 2
    for t, outs in enumerate(results):
        alone = g(*args[t])
        assert all(out == alone for out in outs)
        a, b = args[t]
        c = 1.0 + float(b) * float(b)
        assert alone[1] == pytest.approx(math.atan2(a, c) + a * c / (a * a + c * c), rel=1e-6)


@grad
def decorated(x, k):
    return energy(x, k) * k


# pickling ------------------------------------------------------------------------------------
def test_pickle_round_trip_in_process():
    g = value_and_grad(energy, argnums=(0, 1))
    x = np.linspace(0.0, 1.0, 6)
    before = g(x, 0.7)
    h = pickle.loads(pickle.dumps(g))
    assert h is g           # unpickled where it was made: the original, compiled code and all
    assert isinstance(h, api.GradientFunction) and h.argnums == (0, 1)
    after = h(x, 0.7)
    assert after[0] == before[0]
    np.testing.assert_array_equal(after[1][0], before[1][0])
    assert after[1][1] == before[1][1]


def test_pickle_a_module_level_decorated_gradient():
    """`@grad def f` at module level: the module's name for it is the GradientFunction
    itself, so it pickles by that name (and unpickles to it)."""
    h = pickle.loads(pickle.dumps(decorated))
    assert h is decorated
    x = np.linspace(0.0, 1.0, 5)
    np.testing.assert_allclose(h(x, 0.5), 0.5 * energy_grad_analytic(x, 0.5), rtol=1e-12)


def test_pickle_keeps_int_argnums_and_njit_functions():
    g = pickle.loads(pickle.dumps(grad(jitted, argnums=1)))
    assert g(2.0, 0.5) == pytest.approx(2.0 * math.exp(0.5) + 1.0, rel=1e-14)


def _in_worker(g, x):
    return g(x, 1.5)


def test_gradients_run_in_spawned_worker_processes():
    """multiprocessing (spawn: a fresh interpreter, as Dask's process workers) unpickles the
    gradient, compiles it there, and returns the same numbers."""
    import multiprocessing
    g = grad(energy)
    xs = [np.linspace(-1.0, 1.0, 5) * t for t in range(1, 4)]
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        remote = pool.starmap(_in_worker, [(g, x) for x in xs])
    for x, got in zip(xs, remote):
        np.testing.assert_array_equal(got, g(x, 1.5))


# deterministic source ------------------------------------------------------------------------
_DUMP = r"""
import hashlib, sys
sys.path[:0] = [{tests!r}, {benchmarks!r}]
import numba
from adjit.api import _Mode
from adjit.transform import build
from programs import PROGRAMS
for k, (f, args, argnums) in enumerate(PROGRAMS):
    argnums = (argnums,) if isinstance(argnums, int) else argnums
    types = tuple(numba.typeof(a) for a in args)
    for mode in (_Mode("grad", False, False), _Mode("value_and_grad", True, True)):
        src = build(f, argnums, types, mode, jit=False).source
        print(k, f.__name__, mode.name, hashlib.sha1(src.encode()).hexdigest())
"""


def _dump(hashseed):
    code = _DUMP.format(tests=HERE, benchmarks=os.path.join(ROOT, "benchmarks"))
    env = dict(os.environ, PYTHONHASHSEED=str(hashseed))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True)
    return out.stdout


def test_source_is_identical_across_processes():
    """Every program of the construct suite, in two processes with different string-hash
    seeds (so set and dict orders keyed by strings differ): byte-identical source."""
    first, second = _dump(1), _dump(2)
    assert first.count("\n") >= 60
    assert first == second


# arguments -----------------------------------------------------------------------------------
def test_gradient_never_writes_its_arguments():
    x = np.linspace(0.0, 1.0, 7)
    keep = x.copy()
    grad(energy, argnums=(0, 1))(x, 0.3)
    value_and_grad(energy)(x, 0.3)
    np.testing.assert_array_equal(x, keep)
