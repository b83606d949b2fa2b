"""Backward loops whose iterations commute run upward (reverse/ascending.py).

The programs are written as numba users write them; each gradient is checked against
central finite differences of the numba-compiled function. Where the generated code is the
point (a loop runs upward, a counter follows its forward course), the test reads `.source`
as a user would.
"""
import math

import numba
import numpy as np
import pytest

import adjit

from fd import assert_grad_matches_fd


def packed_quadratic(icf, x):
    """sum_k |L_k x|^2 with L_k unit lower triangular, packed row by row after d
    diagonal entries (the mixture model's triangular product)."""
    K, d = icf.shape[0], x.shape[0]
    Lx = np.empty(d)
    total = 0.0
    for k in range(K):
        for j in range(d):
            Lx[j] = math.exp(icf[k, j]) * x[j]
        idx = d
        for c in range(d):
            for r in range(c + 1, d):
                Lx[r] += icf[k, idx] * x[c]
                idx += 1
        for j in range(d):
            total += Lx[j] * Lx[j]
    return total


def product_chain(x):
    """A value carried from one iteration to the next: its adjoint must run downward."""
    p = 1.0
    for i in range(x.shape[0]):
        p = p * math.sin(x[i]) + 0.5
    return p


def last_term_read_after(x):
    """A name each iteration sets, read after the loop: its last value is the last
    iteration's."""
    s = 0.0
    t = 0.0
    for i in range(x.shape[0]):
        t = x[i] * x[i]
        s += math.cos(t)
    return s + 3.0 * t


def own_rows(W, v):
    """Each iteration reads and writes its own row of an array, and adds into shared
    parameters."""
    n, m = W.shape
    out = np.empty((n, m))
    acc = 0.0
    for i in range(n):
        for j in range(m):
            out[i, j] = math.tanh(W[i, j] * v[j])
        for j in range(m):
            acc += out[i, j] * out[i, j] * v[j]
    return acc


def counter_read_between_loops(Lp, x):
    """A counter read in the outer loop's body, outside the inner loop that steps it."""
    n = x.shape[0]
    total = 0.0
    idx = 0
    for r in range(n):
        s = 0.0
        for c in range(r + 1):
            s += Lp[idx] * x[c]
            idx += 1
        total += math.tanh(s) ** 2 * Lp[idx - 1]
    return total


def two_counters(a, b, x):
    """Two counters stepped in the same inner loop, by different amounts."""
    n = x.shape[0]
    total = 0.0
    p = 0
    q = 0
    for r in range(n):
        for c in range(r, n):
            total += a[p] * x[c] * x[r] + b[q] * x[c]
            p += 1
            q += 2
    return total


@pytest.fixture
def rng():
    return np.random.default_rng(7)


def _check(fn, args, argnums, rtol=1e-6, atol=1e-8):
    g = adjit.grad(fn, argnums=argnums)
    assert_grad_matches_fd(g, numba.njit(fn), args, argnums, rtol=rtol, atol=atol)
    return g


def _backward(g):
    return g.source.split("# backward sweep", 1)[1]


def test_triangular_product_runs_upward(rng):
    d, K = 6, 3
    icf = rng.normal(size=(K, d + d * (d - 1) // 2)) * 0.3
    x = rng.normal(size=d)
    g = _check(packed_quadratic, (icf, x), (0, 1))
    back = _backward(g)
    assert "idx = idx - 1" not in back          # the counter follows its forward course
    assert "idx = idx + 1" in back
    assert "for c in range(d):" in back and "for r in range(_t" in back


def test_a_carried_value_keeps_its_loop_downward(rng):
    x = rng.normal(size=9)
    g = _check(product_chain, (x,), 0)
    assert "range(_t" in _backward(g) and ", -1, -1)" in _backward(g)


def test_a_name_read_after_the_loop(rng):
    _check(last_term_read_after, (rng.normal(size=8),), 0)


def test_own_rows_and_shared_sums(rng):
    W = rng.normal(size=(5, 4))
    v = rng.normal(size=4)
    _check(own_rows, (W, v), (0, 1))


def test_a_counter_read_outside_the_loop_stepping_it(rng):
    n = 6
    Lp = rng.normal(size=n * (n + 1) // 2)
    x = rng.normal(size=n)
    _check(counter_read_between_loops, (Lp, x), (0, 1))


def test_two_counters_in_one_loop(rng):
    n = 5
    m = n * (n + 1) // 2
    a, b, x = rng.normal(size=m), rng.normal(size=2 * m), rng.normal(size=n)
    g = _check(two_counters, (a, b, x), (0, 1, 2))
    back = _backward(g)
    assert "p = p - 1" not in back and "q = q - 2" not in back


def test_empty_and_single_iterations(rng):
    """Loops that run no iteration or one: the counter's entry value and the loops' bounds
    at their edges."""
    for d in (1, 2):
        icf = rng.normal(size=(2, d + d * (d - 1) // 2)) * 0.3
        x = rng.normal(size=d)
        _check(packed_quadratic, (icf, x), (0, 1))
