"""Helpers that return a number and an array from several `return`s: a distance and its
gradient as metric code writes them (early returns for degenerate inputs, float32 gradient
arrays, the same array returned from two places, arrays computed in the return itself).
numba gives the caller one tuple whichever return ran; adjit copies the arrays of the return
taken into the call's result and assigns its numbers to names every return shares.

Each gradient is checked against central differences of numba's own forward and every value
against numba's to the bit."""
import math

import numba
import numpy as np
import pytest

import adjit
from adjit import AdjitError

from fd import fd_grad


@numba.njit(fastmath=True)
def cosine_with_gradient(x, y):
    dot = 0.0
    xx = 0.0
    yy = 0.0
    for i in range(x.shape[0]):
        dot += x[i] * y[i]
        xx += x[i] * x[i]
        yy += y[i] * y[i]
    if xx == 0.0 and yy == 0.0:
        return 0.0, np.zeros(x.shape, dtype=np.float32)
    if xx == 0.0 or yy == 0.0:
        return 1.0, np.zeros(x.shape, dtype=np.float32)
    scale = 1.0 / math.sqrt(xx * yy)
    grad = np.empty(x.shape[0], dtype=np.float32)
    for i in range(x.shape[0]):
        grad[i] = x[i] * dot * scale / xx - y[i] * scale
    return 1.0 - dot * scale, grad


@numba.njit()
def power_distance_with_gradient(x, y, p):
    total = 0.0
    for i in range(x.shape[0]):
        total += abs(x[i] - y[i]) ** p
    dist = total ** (1.0 / p)
    grad = np.zeros(x.shape[0])
    if total == 0.0:
        return dist, grad
    inv = total ** ((1.0 - p) / p)
    for i in range(x.shape[0]):
        grad[i] = abs(x[i] - y[i]) ** (p - 1.0) * np.sign(x[i] - y[i]) * inv
    return dist, grad


@numba.njit()
def energy_with_gradient(x, y):
    d0 = x[0] - y[0]
    d1 = x[1] - y[1]
    s0 = abs(x[2]) + abs(y[2])
    s1 = abs(x[3]) + abs(y[3])
    det = s0 * s1
    if det == 0.0:
        return d0 ** 2 + d1 ** 2, np.array([0.0, 0.0, 1.0, 1.0])
    m = s1 * d0 ** 2 + s0 * d1 ** 2
    grad = np.empty(4)
    grad[0] = s1 * d0 / det
    grad[1] = s0 * d1 / det
    grad[2] = np.sign(x[2]) * (s1 * (det - m) + det * d1 ** 2) / (2 * det ** 2)
    grad[3] = np.sign(x[3]) * (s0 * (det - m) + det * d0 ** 2) / (2 * det ** 2)
    return (m / det + math.log(det)) / 2.0, grad


@numba.njit()
def clipped_with_direction(x, y):
    d = 0.0
    for i in range(x.shape[0]):
        d += (x[i] - y[i]) ** 2
    if d < 1e-3:
        return d, x * 0.0
    elif d > 10.0:
        return 1.0, (x - y) / d
    return d, 2.0 * (x - y)


def cosine_distance(x, y):
    return cosine_with_gradient(x, y)[0]


def cosine_both(x, y):
    d, g = cosine_with_gradient(x, y)
    return d + 0.5 * np.sum(g * g)


def power_both(x, y):
    d, g = power_distance_with_gradient(x, y, 3.0)
    return d * np.sum(g)


def energy_both(x, y):
    e, g = energy_with_gradient(x, y)
    return e + np.dot(g, g)


def clipped_both(x, y):
    d, g = clipped_with_direction(x, y)
    return d * np.sum(g * g)


def embedding_loss(X, Y):
    """A loss over pairs, each pair's distance and gradient from the helper."""
    total = 0.0
    for i in range(X.shape[0]):
        d, g = clipped_with_direction(X[i], Y[i])
        total += d + 0.1 * np.sum(g * g)
    return total


X = np.array([0.3, -0.5, 0.9, 0.4])
Y = np.array([0.7, 0.2, -0.4, 0.6])


@pytest.mark.parametrize("f, x, y", [
    (cosine_distance, X, Y), (power_both, X, Y), (energy_both, X, Y),
    (energy_both, np.array([0.3, -0.5, 0.0, 0.4]), np.array([0.7, 0.2, 0.0, 0.6])),
    (clipped_both, X, Y), (clipped_both, X, X + 0.01), (clipped_both, 4.0 * X, -Y),
])
def test_a_number_and_an_array_from_several_returns(f, x, y):
    value, g = adjit.value_and_grad(f)(x, y)
    forward = numba.njit(f)
    assert value == forward(x, y)
    np.testing.assert_allclose(g, fd_grad(forward, [x, y], 0), rtol=1e-6, atol=1e-8)


def test_a_float32_gradient_array_from_several_returns():
    """numba's float32 array rounds what is stored into it: central differences of a step
    above that rounding (fourth order) give its derivative."""
    value, g = adjit.value_and_grad(cosine_both)(X, Y)
    assert value == numba.njit(cosine_both)(X, Y)
    np.testing.assert_allclose(g, fd_grad(numba.njit(cosine_both), [X, Y], 0, h=1e-3, order=4),
                               rtol=1e-4, atol=1e-4)


def test_a_helper_with_several_returns_called_in_a_loop():
    rng = np.random.default_rng(3)
    A, B = rng.normal(size=(5, 4)), rng.normal(size=(5, 4))
    B[2] = A[2] + 0.001         # (each of the three returns taken)
    B[4] = 3.0 * A[4]
    value, g = adjit.value_and_grad(embedding_loss)(A, B)
    assert value == pytest.approx(numba.njit(embedding_loss)(A, B), rel=1e-14)
    np.testing.assert_allclose(g, fd_grad(numba.njit(embedding_loss), [A, B], 0),
                               rtol=1e-6, atol=1e-7)


@numba.njit()
def caller_array_or_other(x, y):
    d = np.sum(x * y)
    if d > 0.0:
        return d, x
    return -d, y


@numba.njit()
def array_or_number(x, y):
    d = np.sum(x * y)
    if d > 0.0:
        return d, x * 2.0
    return d, 0.0


def uses_caller_array(x, y):
    d, g = caller_array_or_other(x, y)
    return d * np.sum(g)


def uses_array_or_number(x, y):
    d, g = array_or_number(x, y)
    return d * np.sum(g)


@pytest.mark.parametrize("f, words", [
    (uses_caller_array, "one of several `return`s"),
    (uses_array_or_number, "a tuple with arrays from one return and something else"),
])
def test_what_several_returns_cannot_give_is_refused(f, words):
    with pytest.raises(AdjitError, match=words):
        adjit.grad(f)(X, Y)
