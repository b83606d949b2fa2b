"""numba `@stencil` kernels called by differentiated code, written as numba's documentation
and stencil codes write them: every program's value against numba's own compile and its
gradient against central differences of that compile."""
import math

import numpy as np
import pytest
from numba import njit, stencil

import adjit
from adjit import AdjitError
from fd import check_value_and_grad

RNG = np.random.default_rng(7)


@stencil
def second_difference(a):
    return a[-1] - 2.0 * a[0] + a[1]


@stencil
def five_point(u, alpha):
    return u[0, 0] + alpha * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - 4.0 * u[0, 0])


@stencil(neighborhood=((-3, 0),))
def trailing_mean(a):
    s = 0.0
    for k in range(-3, 1):
        s += a[k]
    return s / 4.0


@stencil(cval=1.0)
def ratio(a, b):
    return a[0] / (1.0 + b[1] * b[1])


@stencil(standard_indexing=("w",))
def weighted(a, w):
    return w[0] * a[-1] + w[1] * a[0] + w[2] * a[1]


@stencil
def upwind(u, c):
    if c > 0.0:
        return u[0] - c * (u[0] - u[-1])
    return u[0] - c * (u[1] - u[0])


def curvature_penalty(y):
    return np.sum(second_difference(y) ** 2)


def heat_energy(u0, alpha):
    u = u0.copy()
    for _ in range(4):
        u = five_point(u, alpha)
    return np.sum(u * u)


def smoothed_loss(x, target):
    m = trailing_mean(x)
    return np.sum((m - target) ** 2)


def ratio_sum(a, b):
    return np.sum(np.log(ratio(a, b)))


def filter_fit(a, w):
    return np.sum(weighted(a, w) ** 2)


def advect(u0, c):
    u = u0
    for _ in range(3):
        u = upwind(u, c)
    return np.sum(u * np.arange(u.shape[0]))


@njit
def _relax(u):
    v = second_difference(u)
    return u + 0.1 * v


def relaxed(u):
    return np.sum(np.tanh(_relax(_relax(u))))


def into_buffer(u):
    buf = np.full(u.shape, 3.0)
    second_difference(u, out=buf)       # the border keeps the 3.0 it had
    return np.sum(buf * buf)


Y = np.linspace(0.0, 1.0, 9) ** 2 + 0.1 * RNG.normal(size=9)
U = RNG.normal(size=(6, 7))
X = RNG.normal(size=10)

CASES = {
    "second_difference": (curvature_penalty, (Y,), 0),
    "heat_five_point": (heat_energy, (U, 0.2), (0, 1)),
    "trailing_mean_neighborhood": (smoothed_loss, (X, np.cos(np.arange(10.0))), (0, 1)),
    "cval_two_arrays": (ratio_sum, (np.abs(X) + 0.5, X[::-1].copy()), (0, 1)),
    "standard_indexing": (filter_fit, (X, np.array([0.25, 0.5, 0.25])), (0, 1)),
    "branch_on_a_scalar": (advect, (X, 0.4), (0, 1)),
    "called_in_njit_helpers": (relaxed, (Y,), 0),
    "out_keyword": (into_buffer, (Y,), 0),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_stencil_matches_numba_and_finite_differences(name):
    f, args, argnums = CASES[name]
    check_value_and_grad(f, args, argnums)


def test_second_difference_gradient_is_the_analytic_one():
    g = adjit.grad(curvature_penalty)(Y)
    d = np.zeros_like(Y)
    d[1:-1] = Y[:-2] - 2.0 * Y[1:-1] + Y[2:]
    # d/dy_j of sum_i d_i^2 with d_i = y_{i-1} - 2 y_i + y_{i+1}
    expected = np.zeros_like(Y)
    expected[:-2] += 2.0 * d[1:-1]
    expected[1:-1] += -4.0 * d[1:-1]
    expected[2:] += 2.0 * d[1:-1]
    np.testing.assert_allclose(g, expected, rtol=1e-12, atol=1e-14)


def test_the_stencil_is_the_loop_nest_numba_runs():
    text = adjit.show(curvature_penalty, "normalized", Y)
    # one loop over the array, the kernel inside the reach, cval (0) on the border
    assert "for second_difference__si0 in range(" in text
    assert "second_difference__sout[second_difference__si0] = 0.0" in text


@stencil
def _integer_count(a):
    return a[-1] + a[1]


@stencil
def _writes_argument(a):
    a[0] = 1.0
    return a[0]


def _on_integers(x, k):
    return x[0] * np.sum(_integer_count(k))


def _writing(x):
    return np.sum(_writes_argument(x))


@pytest.mark.parametrize("f, args, words", [
    (_on_integers, (X, np.arange(5)), "over the integer array `a`"),
    (_writing, (X,), "assignment to the stencil"),
])
def test_what_a_stencil_cannot_do_is_refused_by_name(f, args, words):
    with pytest.raises(AdjitError, match=words):
        adjit.grad(f)(*args)


def test_arrays_of_another_shape_are_refused_when_the_gradient_runs():
    def f(a, b):
        return np.sum(ratio(a, b))
    with pytest.raises(ValueError, match="differ in shape from its first argument"):
        adjit.grad(f)(np.ones(5), np.ones(4))
    assert math.isfinite(adjit.grad(f)(np.ones(5), np.ones(5))[0])
