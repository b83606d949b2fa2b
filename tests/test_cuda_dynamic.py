"""CUDA kernels with per-thread loops whose trip count is known only when they run.

Newton iterations (`while abs(r) > tol`), loops over `range(n)` with `n` an argument or read
from an array, `*=` updates and loop-carried values, as numba.cuda users write them. The
backward sweep replays such a loop's iterations from its start (reverse/replay.py) instead
of recording them on a tape of unknown size. Each adjoint is checked against central finite
differences of a NumPy re-implementation of the kernel (not against adjit). In CI these run
in numba's CUDA simulator; on a GPU unchanged with NUMBA_ENABLE_CUDASIM=0.
"""
import math

import numba
import numpy as np
import pytest

cuda = pytest.importorskip("numba.cuda")

import adjit  # noqa: E402
import adjit.cuda  # noqa: E402
from adjit import AdjitError  # noqa: E402
from fd import weighted_output_fd as fd  # noqa: E402

pytestmark = pytest.mark.cuda

THREADS = 16


def launch(kernel, n, *args):
    kernel[(n + THREADS - 1) // THREADS, THREADS](*args)


# Newton's method for the cube root, to a tolerance: a while loop with loop-carried values

@cuda.jit
def cube_root(a, out):
    i = cuda.grid(1)
    if i < a.shape[0]:
        x = 1.0 + a[i] / 3.0
        r = x * x * x - a[i]
        while abs(r) > 1e-13 * a[i]:
            x = x - r / (3.0 * x * x)
            r = x * x * x - a[i]
        out[i] = x


def cube_root_numpy(a):
    out = np.empty_like(a)
    for i, v in enumerate(a):
        x = 1.0 + v / 3.0
        r = x ** 3 - v
        while abs(r) > 1e-13 * v:
            x = x - r / (3.0 * x * x)
            r = x ** 3 - v
        out[i] = x
    return out


def test_newton_while_loop_to_a_tolerance():
    a = np.linspace(0.5, 30.0, 21)
    w = np.random.default_rng(1).normal(size=a.size)
    out, a_bar = np.zeros_like(a), np.zeros_like(a)
    adj = adjit.cuda.adjoint_kernel(cube_root, argnums=0)
    launch(adj, a.size, a, out, a_bar, w.copy())
    np.testing.assert_allclose(out, cube_root_numpy(a), rtol=1e-14)
    # the converged iteration's derivative is the cube root's (to the tolerance)
    np.testing.assert_allclose(a_bar, w / (3.0 * np.cbrt(a) ** 2), rtol=1e-8)
    np.testing.assert_allclose(a_bar, fd(cube_root_numpy, [a], 0, w), rtol=1e-6, atol=1e-9)
    src = adj.source
    assert "computed again from the loop's start" in src and "cuda.local.array(" in src


# a per-thread time integration with a run-time number of steps and a shared parameter

@cuda.jit
def oscillator(x0, p, steps, dt, out):
    i = cuda.grid(1)
    if i < x0.shape[0]:
        x = x0[i]
        v = 0.0
        for k in range(steps):
            a = -p[0] * math.sin(x) - 0.1 * v * abs(v)
            v += dt * a
            x += dt * v
        out[i] = x * x + v


def oscillator_numpy(x0, p, steps, dt):
    x = x0.copy()
    v = np.zeros_like(x0)
    for _ in range(steps):
        a = -p[0] * np.sin(x) - 0.1 * v * np.abs(v)
        v = v + dt * a
        x = x + dt * v
    return x * x + v


@pytest.mark.parametrize("steps", [0, 1, 7])
def test_for_loop_over_a_run_time_number_of_steps(steps):
    x0 = np.linspace(-1.0, 1.5, 19)
    p = np.array([2.5])
    w = np.random.default_rng(2).normal(size=x0.size)
    out, x0_bar, p_bar = np.zeros_like(x0), np.zeros_like(x0), np.zeros(1)
    adj = adjit.cuda.adjoint_kernel(oscillator, argnums=(0, 1))
    launch(adj, x0.size, x0, p, steps, 0.05, out, x0_bar, p_bar, w.copy())
    run = lambda x0_, p_: oscillator_numpy(x0_, p_, steps, 0.05)      # noqa: E731
    np.testing.assert_allclose(out, run(x0, p), rtol=1e-13)
    np.testing.assert_allclose(x0_bar, fd(run, [x0, p], 0, w), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(p_bar, fd(run, [x0, p], 1, w), rtol=1e-6, atol=1e-9)


# trip counts read per thread from an array, `*=`, and a loop of constant count around it

@cuda.jit
def growth(y0, rate, counts, out):
    i = cuda.grid(1)
    if i < y0.shape[0]:
        total = 0.0
        for rep in range(3):
            y = y0[i] * (rep + 1.0)
            m = counts[i]
            while m > 0:
                y *= 1.0 + rate[i] * math.sin(y)
                m -= 1
            total += y * y
        out[i] = total


def growth_numpy(y0, rate, counts):
    out = np.zeros_like(y0)
    for i in range(y0.size):
        total = 0.0
        for rep in range(3):
            y = y0[i] * (rep + 1.0)
            for _ in range(counts[i]):
                y *= 1.0 + rate[i] * math.sin(y)
            total += y * y
        out[i] = total
    return out


def test_run_time_loop_per_thread_inside_a_constant_loop():
    rng = np.random.default_rng(3)
    y0 = rng.uniform(0.2, 1.0, 13)
    rate = rng.uniform(0.05, 0.3, 13)
    counts = rng.integers(0, 6, 13)
    w = rng.normal(size=13)
    out, y0_bar, rate_bar = np.zeros(13), np.zeros(13), np.zeros(13)
    adj = adjit.cuda.adjoint_kernel(growth, argnums=(0, 1))
    launch(adj, 13, y0, rate, counts, out, y0_bar, rate_bar, w.copy())
    run = lambda a, b: growth_numpy(a, b, counts)       # noqa: E731
    np.testing.assert_allclose(out, run(y0, rate), rtol=1e-13)
    np.testing.assert_allclose(y0_bar, fd(run, [y0, rate], 0, w), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(rate_bar, fd(run, [y0, rate], 1, w), rtol=1e-6, atol=1e-8)


# a device function with a Newton loop, called from a kernel

def kepler(mean_anomaly, e):
    """The eccentric anomaly E with E - e sin E = M, by Newton's method."""
    E = mean_anomaly
    f = E - e * math.sin(E) - mean_anomaly
    while abs(f) > 1e-14:
        E = E - f / (1.0 - e * math.cos(E))
        f = E - e * math.sin(E) - mean_anomaly
    return math.cos(E)


dkepler = adjit.grad(kepler, argnums=(0, 1), target="cuda")


@cuda.jit
def kepler_terms(m, e, gm, ge):
    i = cuda.grid(1)
    if i < m.shape[0]:
        gm[i], ge[i] = dkepler(m[i], e[i])


def test_device_gradient_of_a_newton_loop():
    m = np.linspace(0.1, 3.0, 11)
    e = np.linspace(0.05, 0.6, 11)
    gm, ge = np.zeros(11), np.zeros(11)
    launch(kepler_terms, 11, m, e, gm, ge)
    h = 1e-6
    f = np.vectorize(kepler)
    np.testing.assert_allclose(gm, (f(m + h, e) - f(m - h, e)) / (2 * h), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(ge, (f(m, e + h) - f(m, e - h)) / (2 * h), rtol=1e-6, atol=1e-9)
    # analytically: dE/dM = 1 / (1 - e cos E), dE/de = sin E / (1 - e cos E)
    E = np.array([_solve(mi, ei) for mi, ei in zip(m, e)])
    denom = 1.0 - e * np.cos(E)
    np.testing.assert_allclose(gm, -np.sin(E) / denom, rtol=1e-9)
    np.testing.assert_allclose(ge, -np.sin(E) * np.sin(E) / denom, rtol=1e-9)


def _solve(mean_anomaly, e):
    E = mean_anomaly
    for _ in range(60):
        E = E - (E - e * math.sin(E) - mean_anomaly) / (1.0 - e * math.cos(E))
    return E


# what cannot be replayed is refused

@cuda.jit
def accumulates_into_its_output(x, n, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i]
        for k in range(n):
            out[i] = out[i] * math.sin(out[i]) + x[i]


def test_loop_reading_back_what_it_writes_is_refused():
    adj = adjit.cuda.adjoint_kernel(accumulates_into_its_output, argnums=0)
    line = accumulates_into_its_output.py_func.__code__.co_firstlineno + 5
    with pytest.raises(AdjitError, match=f"line {line}") as info:
        adj.source_for(np.ones(4), 3, np.zeros(4))
    assert "written in the loop or after it" in str(info.value)


@cuda.jit
def nested_run_time_loops(x, n, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        s = x[i]
        for j in range(n):
            for k in range(n):
                s = math.sin(s) * x[i]
        out[i] = s


@cuda.jit
def returns_from_the_loop(x, n, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        s = x[i]
        out[i] = 0.0
        for k in range(n):
            s = math.sin(s) * x[i]
            if s < 0.1:
                out[i] = s
                return
        out[i] = s


def test_nested_run_time_loops_are_refused():
    adj = adjit.cuda.adjoint_kernel(nested_run_time_loops, argnums=0)
    with pytest.raises(AdjitError, match="inside another such loop"):
        adj.source_for(np.ones(4), 3, np.zeros(4))


def test_local_scratch_in_a_run_time_loop():
    x = np.linspace(0.1, 0.9, 10)
    w = np.random.default_rng(4).normal(size=10)
    out, x_bar = np.zeros(10), np.zeros(10)
    adj = adjit.cuda.adjoint_kernel(smoothing, argnums=0)
    launch(adj, 10, x, 4, out, x_bar, w.copy())
    run = lambda v: smoothing_numpy(v, 4)        # noqa: E731
    np.testing.assert_allclose(out, run(x), rtol=1e-13)
    np.testing.assert_allclose(x_bar, fd(run, [x], 0, w), rtol=1e-6, atol=1e-9)


@cuda.jit
def smoothing(x, n, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        c = cuda.local.array(2, numba.float64)
        c[0] = x[i]
        c[1] = x[i] * 0.5
        s = c[0]
        for k in range(n):
            s = s + c[1] * math.tanh(s)
        out[i] = s


def smoothing_numpy(x, n):
    s = x.copy()
    for _ in range(n):
        s = s + 0.5 * x * np.tanh(s)
    return s


def returns_numpy(x, n):
    out = np.zeros_like(x)
    for i, v in enumerate(x):
        s = v
        for _ in range(n):
            s = math.sin(s) * v
            if s < 0.1:
                break
        out[i] = s
    return out


def test_return_from_a_run_time_loop():
    x = np.linspace(0.05, 1.0, 12)
    w = np.random.default_rng(6).normal(size=12)
    out, x_bar = np.zeros(12), np.zeros(12)
    adj = adjit.cuda.adjoint_kernel(returns_from_the_loop, argnums=0)
    launch(adj, 12, x, 5, out, x_bar, w.copy())
    run = lambda v: returns_numpy(v, 5)        # noqa: E731
    np.testing.assert_allclose(out, run(x), rtol=1e-14)
    np.testing.assert_allclose(x_bar, fd(run, [x], 0, w), rtol=1e-6, atol=1e-9)
