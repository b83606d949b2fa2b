"""Integer counters stepped in loops (`idx += 1`) and the loads they index.

Packed triangular storage, CSR row pointers, "next free slot" counters: numba code walks
arrays with a counter it steps by a constant. The backward sweep needs the counter's value
at every step; it takes it back by stepping the other way (`idx = idx - 1`, exact for
integers) instead of recording every value, and loads like `Lp[idx]` of an array the
function never writes are loaded again there instead of recorded. These tests check the
gradients against finite differences of the numba-compiled functions, and that the tape no
longer grows with the number of steps.
"""
import math

import numba
import numpy as np
import pytest

import adjit

from fd import fd_grad


def packed_lower_energy(x, Lp):
    """sum_r tanh((L x)_r)^2 with L lower triangular, stored row by row in Lp."""
    n = x.shape[0]
    total = 0.0
    idx = 0
    for r in range(n):
        s = 0.0
        for c in range(r + 1):
            s += Lp[idx] * x[c]
            idx += 1
        total += math.tanh(s) ** 2
    return total


def csr_energy(vals, cols, rowlen, x):
    """A CSR matrix-vector product walked with a running pointer p."""
    p = 0
    e = 0.0
    for i in range(rowlen.shape[0]):
        s = 0.0
        for _ in range(rowlen[i]):
            s += vals[p] * x[cols[p]]
            p += 1
        e += math.sin(s) * x[i]
    return e


def positive_weights(x, w):
    """A counter stepped only in a branch, read after the loop as well."""
    cnt = 0
    total = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            total += w[cnt] * x[i] ** 2
            cnt += 1
    return total / max(cnt, 1)


def mirrored_pairs(x):
    """A counter walking down (j -= 1) while the loop walks up, and a stride of 2."""
    j = x.shape[0] - 1
    k = 0
    s = 0.0
    for i in range(x.shape[0] // 2):
        s += x[i] * math.cos(x[j]) + x[k] * x[k]
        j -= 1
        k = k + 2
    return s


def packed_rows_prange(x, Lp):
    """The packed product with each row's start computed, in a numba.prange loop."""
    n = x.shape[0]
    total = 0.0
    for r in numba.prange(n):
        idx = r * (r + 1) // 2
        s = 0.0
        for c in range(r + 1):
            s += Lp[idx] * x[c]
            idx += 1
        total += s * s
    return total


def heat_with_counter(u0, k, steps):
    """A time loop (checkpointed in the test) whose body walks a counter."""
    u = u0.copy()
    un = u0.copy()
    n = u.shape[0]
    for t in range(steps):
        idx = 1
        for _ in range(n - 2):
            un[idx] = u[idx] + k[idx] * (u[idx - 1] - 2.0 * u[idx] + u[idx + 1])
            idx += 1
        u, un = un, u
    return np.sum(u * u)


@pytest.fixture(scope="module")
def rng():
    return np.random.default_rng(11)


def _check(g, f, args, argnums, rtol=1e-6, atol=1e-8):
    got = g(*args)
    got = got if isinstance(argnums, tuple) else (got,)
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    compiled = numba.njit(f)
    for value, k in zip(got, nums):
        np.testing.assert_allclose(value, fd_grad(compiled, args, k), rtol=rtol, atol=atol,
                                   err_msg=f"d/d arg {k} of {f.__name__}")


@pytest.fixture(scope="module")
def packed_grad():
    return adjit.grad(packed_lower_energy, argnums=(0, 1))


def test_packed_triangular_product(rng, packed_grad):
    n = 6
    args = (rng.standard_normal(n), 0.5 * rng.standard_normal(n * (n + 1) // 2))
    _check(packed_grad, packed_lower_energy, args, (0, 1))
    source = packed_grad.source
    assert "idx = idx + 1" in source       # stepped, not recorded
    assert "_itape" not in source           # no integer is recorded


def test_the_tape_does_not_grow_with_the_steps(rng, packed_grad):
    packed_grad(rng.standard_normal(4), rng.standard_normal(10))
    small = packed_grad.last_tape.tape_bytes
    n = 300      # 45150 steps (idx and Lp[idx] recorded: 720 kB); 2 floats a row are
    packed_grad(rng.standard_normal(n), 0.01 * rng.standard_normal(n * (n + 1) // 2))
    assert packed_grad.last_tape.tape_bytes == small


def test_csr_pointer_carried_across_rows(rng):
    rowlen = np.array([2, 0, 3, 1, 2])
    nnz = int(rowlen.sum())
    cols = rng.integers(0, 5, nnz)
    args = (rng.standard_normal(nnz), cols, rowlen, rng.standard_normal(5))
    g = adjit.grad(csr_energy, argnums=(0, 3))
    _check(g, csr_energy, args, (0, 3))
    assert "p = p + 1" in g.source     # stepped, not recorded


def test_counter_stepped_in_a_branch(rng):
    x = rng.standard_normal(12)
    w = rng.standard_normal(12)
    g = adjit.value_and_grad(positive_weights, argnums=(0, 1))
    value, got = g(x, w)
    compiled = numba.njit(positive_weights)
    np.testing.assert_allclose(value, compiled(x, w), rtol=1e-14)
    for k in (0, 1):
        np.testing.assert_allclose(got[k], fd_grad(compiled, (x, w), k), rtol=1e-6, atol=1e-8)
    assert "cnt = cnt - 1" in g.source


def test_counters_walking_down_and_by_two(rng):
    x = rng.standard_normal(9)
    g = adjit.grad(mirrored_pairs)
    _check(g, mirrored_pairs, (x,), 0)
    assert "j = j - 1" in g.source and "k = k + 2" in g.source    # stepped, not recorded


def test_counter_in_a_parallel_loop(rng):
    n = 7
    args = (rng.standard_normal(n), rng.standard_normal(n * (n + 1) // 2))
    g = adjit.grad(packed_rows_prange, argnums=(0, 1))
    _check(g, packed_rows_prange, args, (0, 1))


def test_counter_in_a_checkpointed_time_loop(rng):
    n = 8
    u0 = rng.standard_normal(n)
    k = 0.1 + 0.1 * rng.random(n)
    g = adjit.grad(heat_with_counter, argnums=(0, 1), checkpoint=3)
    _check(g, heat_with_counter, (u0, k, 9), (0, 1))
    plain = adjit.grad(heat_with_counter, argnums=(0, 1))
    for a, b in zip(g(u0, k, 9), plain(u0, k, 9)):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)


def test_a_float_accumulator_is_recorded_not_stepped_back(rng):
    """t += dt is not undone by t -= dt (rounding): floats stay on the tape."""
    def clock(x, dt):
        t = 0.0
        s = 0.0
        for i in range(x.shape[0]):
            s += math.sin(t) * x[i]
            t += dt
        return s
    x = rng.standard_normal(10)
    g = adjit.grad(clock, argnums=(0, 1))
    _check(g, clock, (x, 0.3), (0, 1))
    assert "t = t - dt" not in g.source
