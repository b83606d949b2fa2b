"""Loops whose iterations the backward sweep computes again instead of recording them.

A loop over data points whose body fills scratch buffers (the ADBench mixture model writes
xc[j] and Qxc[j] for every point and component) would otherwise record every buffer value
of every iteration: a tape proportional to the number of points. Computing each iteration
again just before its adjoint keeps one iteration on the tape, as a hand-written adjoint
does. These tests check the gradients (against finite differences of the numba-compiled
function and against the same program written so that nothing can be recomputed), that the
tape no longer grows with the number of iterations, and that loops whose iterations are not
independent are left alone.
"""
import math

import numba
import numpy as np
import pytest

import adjit

from fd import fd_grad


def mahalanobis_sum(x, means, L):
    """Per point and component: centred point, a triangular matrix times it, its norm."""
    n, d = x.shape
    K = means.shape[0]
    xc = np.empty(d)
    y = np.empty(d)
    total = 0.0
    for i in range(n):
        best = -1e300
        acc = 0.0
        for k in range(K):
            for j in range(d):
                xc[j] = x[i, j] - means[k, j]
            for r in range(d):
                s = 0.0
                for c in range(r + 1):
                    s += L[k, r, c] * xc[c]
                y[r] = s
            q = 0.0
            for j in range(d):
                q += y[j] * y[j]
            acc += math.exp(-0.5 * q)
            best = max(best, -q)
        total += math.log(acc) + 0.1 * best
    return total


def mixture_terms(x, means, L):
    """A mixture's log-likelihood as ADBench's GMM writes it: each component's term filled
    into an array (a triangular matrix times the centred point per component), then a
    log-sum-exp over the components."""
    n, d = x.shape
    K = means.shape[0]
    xc = np.empty(d)
    y = np.empty(d)
    terms = np.empty(K)
    total = 0.0
    for i in range(n):
        for k in range(K):
            for j in range(d):
                xc[j] = x[i, j] - means[k, j]
            for r in range(d):
                s = 0.0
                for c in range(r + 1):
                    s += L[k, r, c] * xc[c]
                y[r] = s
            q = 0.0
            for j in range(d):
                q += y[j] * y[j]
            terms[k] = -0.5 * q
        mx = terms[0]
        for k in range(1, K):
            if terms[k] > mx:
                mx = terms[k]
        acc = 0.0
        for k in range(K):
            acc += math.exp(terms[k] - mx)
        total += math.log(acc) + mx
    return total


def running_state(x, a):
    """Not independent: h carries from one iteration to the next (recorded, as before)."""
    h = 0.0
    out = 0.0
    for i in range(x.shape[0]):
        h = math.tanh(a * h + x[i])
        out += h * h
    return out


def buffer_read_before_filled(x, w):
    """Not independent: the buffer's element 0 is read before the iteration refills it."""
    n = x.shape[0]
    buf = np.zeros(3)
    total = 0.0
    for i in range(n):
        prev = buf[0]
        for j in range(3):
            buf[j] = math.sin(w * x[i] + j)
        total += prev * buf[1] * buf[2]
    return total


def sum_read_in_its_loop(x):
    """Not independent: the running sum s is read by the next iteration (s + 1.0), not only
    added to (tests/test_adversarial.py's helper_zeros_in_loop, which this once broke)."""
    s = 0.0
    for k in range(3):
        t = np.zeros(3)
        for i in range(3):
            t[i] += x[i] * (s + 1.0)
        s += t[0] * t[1] + t[2]
    return s


def _inputs(rng, n, d=3, K=2):
    x = rng.standard_normal((n, d))
    means = rng.standard_normal((K, d))
    L = np.tril(rng.standard_normal((K, d, d))) * 0.5 + np.eye(d)
    return x, means, L


@pytest.fixture(scope="module")
def rng():
    return np.random.default_rng(5)


@pytest.fixture(scope="module")
def mahalanobis_grad():
    return adjit.grad(mahalanobis_sum, argnums=(0, 1, 2))


def test_gradient_matches_finite_differences(rng, mahalanobis_grad):
    args = _inputs(rng, 6)
    compiled = numba.njit(mahalanobis_sum)
    got = mahalanobis_grad(*args)
    for k in range(3):
        np.testing.assert_allclose(got[k], fd_grad(compiled, args, k), rtol=1e-6, atol=1e-8)
    assert "each iteration computed again before its adjoint" in mahalanobis_grad.source


def test_the_tape_holds_one_iteration_not_all(rng, mahalanobis_grad):
    mahalanobis_grad(*_inputs(rng, 10))
    small = mahalanobis_grad.last_tape.tape_bytes
    mahalanobis_grad(*_inputs(rng, 2000))
    large = mahalanobis_grad.last_tape.tape_bytes
    assert large == small, (small, large)


def test_dependent_loops_are_recorded_and_exact(rng):
    x = rng.standard_normal(30)
    g = adjit.grad(running_state, argnums=(0, 1))
    got = g(x, 0.7)
    compiled = numba.njit(running_state)
    np.testing.assert_allclose(got[0], fd_grad(compiled, (x, 0.7), 0), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(got[1], fd_grad(compiled, (x, 0.7), 1), rtol=1e-6)
    assert "computed again" not in g.source


def test_a_buffer_read_before_it_is_filled_is_not_recomputed(rng):
    x = rng.standard_normal(12)
    g = adjit.grad(buffer_read_before_filled, argnums=(0, 1))
    got = g(x, 0.8)
    compiled = numba.njit(buffer_read_before_filled)
    np.testing.assert_allclose(got[0], fd_grad(compiled, (x, 0.8), 0), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(got[1], fd_grad(compiled, (x, 0.8), 1), rtol=1e-6)
    assert "computed again" not in g.source


def test_a_sum_read_inside_its_loop_is_not_a_reduction(rng):
    x = rng.standard_normal(4)
    g = adjit.value_and_grad(sum_read_in_its_loop)
    value, got = g(x)
    compiled = numba.njit(sum_read_in_its_loop)
    np.testing.assert_allclose(value, compiled(x), rtol=1e-13)
    np.testing.assert_allclose(got, fd_grad(compiled, (x,), 0), rtol=1e-6, atol=1e-9)
    assert "computed again" not in g.source


def test_the_same_gradient_as_without_recomputation(rng, mahalanobis_grad):
    """Against the plan that records everything (the recomputation switched off in the
    reverse builder): the same numbers up to rounding."""
    from adjit.reverse import adjoint
    args = _inputs(rng, 25)
    expected = mahalanobis_grad(*args)
    original = adjoint.ReverseBuilder.__init__

    def no_recompute(self, *a, **k):
        original(self, *a, **k)
        self.allow_recompute = False
    adjoint.ReverseBuilder.__init__ = no_recompute
    try:
        recorded = adjit.grad(mahalanobis_sum, argnums=(0, 1, 2))
        got = recorded(*args)
    finally:
        adjoint.ReverseBuilder.__init__ = original
    assert "computed again" not in recorded.source
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_iterations_with_a_loop_nest_are_kept_not_computed_again(rng):
    """The component loop's iterations each run a triangular loop nest: the forward sweep
    keeps each iteration's buffers (xc, y) and the numbers its adjoint reads, and the
    reversed iteration loads them instead of computing the nest again. Same bits as
    computing it again; against finite differences."""
    from adjit.reverse import emit
    args = _inputs(rng, 9, d=4, K=3)
    kept = adjit.grad(mixture_terms, argnums=(0, 1, 2))
    expected = kept(*args)
    src = kept.source
    assert "each iteration's values kept by the forward sweep, loaded before its adjoint" \
        in src
    assert "_kept_xc" in src and "_kept_y" in src
    original = emit.Emitter._keep_iterations
    emit.Emitter._keep_iterations = lambda self, *a: None
    try:
        again = adjit.grad(mixture_terms, argnums=(0, 1, 2))
        got = again(*args)
    finally:
        emit.Emitter._keep_iterations = original
    assert "kept by the forward sweep" not in again.source
    for a, b in zip(got, expected):
        assert np.array_equal(a, b)
    compiled = numba.njit(mixture_terms)
    for k in range(3):
        np.testing.assert_allclose(expected[k], fd_grad(compiled, args, k), rtol=1e-6,
                                   atol=1e-8)
    kept(*_inputs(rng, 2000, d=4, K=3))         # the kept values: one point's, not all
    assert kept.last_tape.tape_bytes == again.last_tape.tape_bytes


def mixture_loglik(logw, centers, x):
    """Log-likelihood of points under a mixture of unit Gaussians, work buffers allocated
    once and overwritten for every (point, component)."""
    n, d = x.shape
    K = logw.shape[0]
    diff = np.empty(d)
    terms = np.empty(K)
    total = 0.0
    for i in range(n):
        for k in range(K):
            for j in range(d):
                diff[j] = x[i, j] - centers[k, j]
            sq = 0.0
            for j in range(d):
                sq += diff[j] * diff[j]
            terms[k] = logw[k] - 0.5 * sq
        m = terms[0]
        for k in range(1, K):
            if terms[k] > m:
                m = terms[k]
        s = 0.0
        for k in range(K):
            s += math.exp(terms[k] - m)
        total += m + math.log(s)
    return total


@pytest.mark.parametrize("argnums", [0, 1, (0, 1)])
def test_buffers_of_a_recomputed_loop_stay_allocated(argnums):
    """In the gradient in the weights alone, the buffer `diff` carries no derivative and the
    loop over points is computed again in the backward sweep, which fills `diff` before it
    reads it: the forward sweep need not compute its elements, but it must still allocate
    it (numba could not compile the generated code: `diff` not defined)."""
    rng = np.random.default_rng(0)
    args = (rng.normal(size=3), rng.normal(size=(3, 2)), rng.normal(size=(7, 2)))
    g = adjit.value_and_grad(mixture_loglik, argnums)
    value, got = g(*args)
    compiled = numba.njit(mixture_loglik)
    assert value == compiled(*args)
    nums = (argnums,) if isinstance(argnums, int) else argnums
    gots = (got,) if isinstance(argnums, int) else got
    for k, gk in zip(nums, gots):
        np.testing.assert_allclose(gk, fd_grad(compiled, args, k), rtol=1e-6, atol=1e-8)
    got = adjit.grad(mixture_loglik, argnums)(*args)
    for a, b in zip((got,) if isinstance(argnums, int) else got, gots):
        np.testing.assert_array_equal(a, b)
    assert "each iteration computed again before its adjoint" in \
        adjit.grad(mixture_loglik, argnums).source_for(*args)
