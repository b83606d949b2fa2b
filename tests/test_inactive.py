"""Calls with no derivative, called as they are: integer results (np.argsort, np.argmax,
np.argmin) and random draws (np.random.*, seeded by np.random.seed as a statement). The
oracles are numba's own generator (the same draws, compiled by numba from the user's code)
and central finite differences of the numba-compiled function."""
import numba
import numpy as np
import pytest

import adjit
from adjit import AdjitError

from fd import fd_grad

X = np.linspace(0.1, 1.0, 5)


def noisy(x):
    np.random.seed(3)
    r = np.random.normal(0.0, 1.0, x.shape[0])
    return np.sum(x * r) + np.sum(x ** 2)


@numba.njit
def draws(n):
    np.random.seed(3)
    return np.random.normal(0.0, 1.0, n)


def test_random_draw_is_a_constant():
    np.testing.assert_allclose(adjit.grad(noisy)(X), draws(5) + 2 * X, rtol=1e-14)


def test_random_draw_in_forward_mode():
    v = np.linspace(-1.0, 1.0, 5)
    value, tangent = adjit.jvp(noisy)(X, v)
    assert value == pytest.approx(numba.njit(noisy)(X), rel=1e-14)
    assert tangent == pytest.approx(np.dot(draws(5) + 2 * X, v), rel=1e-12)


def noise_every_step(x, scale):
    np.random.seed(1)
    s = 0.0
    for k in range(3):
        noise = np.random.uniform(-1.0, 1.0, size=x.shape[0])
        s += np.sum(x * noise * scale) ** 2 + np.random.random() * scale
    return s


def test_draws_inside_a_loop_match_finite_differences():
    primal = numba.njit(noise_every_step)
    g = adjit.grad(noise_every_step, argnums=(0, 1))(X, 0.7)
    for k in (0, 1):
        np.testing.assert_allclose(g[k], fd_grad(primal, (X, 0.7), k), rtol=1e-6, atol=1e-9)


def sorted_weights(x):
    order = np.argsort(x)
    top = np.argmax(x)
    low = np.argmin(x)
    return np.sum(x[order] * np.arange(x.shape[0])) + x[top] ** 2 - 3.0 * x[low]


def test_integer_results_index_arrays():
    x = np.array([3.0, 1.0, 2.0])
    # order = [1, 2, 0]: weights 0, 1, 2 on x1, x2, x0; top = 0; low = 1
    np.testing.assert_allclose(adjit.grad(sorted_weights)(x), [2.0 + 6.0, -3.0, 1.0],
                               rtol=1e-14)
    np.testing.assert_allclose(adjit.grad(sorted_weights)(x), fd_grad(sorted_weights, (x,), 0),
                               rtol=1e-7)


def sort_by_stopped(x):
    return np.sum(x[np.argsort(adjit.stop_gradient(x))][:2] ** 2)


def test_argsort_of_a_stopped_value():
    x = np.array([0.5, -2.0, 0.25, 3.0])
    # the two smallest: x1 = -2 and x2 = 0.25
    np.testing.assert_allclose(adjit.grad(sort_by_stopped)(x), [0.0, -4.0, 0.5, 0.0],
                               rtol=1e-14)


def seed_as_value(x):
    s = np.random.seed(0)
    return x * 2.0 + s


def draw_for_nothing(x):
    np.random.normal(0.0, 1.0)
    return x * 2.0


def wrong_keyword(x):
    return x * np.random.normal(0.0, 1.0, shape=3)[0]


@pytest.mark.parametrize("f, match", [
    (seed_as_value, "np.random.seed` used as a value"),
    (draw_for_nothing, "np.random.normal` called for nothing"),
    (wrong_keyword, "the keyword `shape`"),
], ids=["seed-as-value", "draw-for-nothing", "wrong-keyword"])
def test_misuse_is_refused(f, match):
    with pytest.raises(AdjitError, match=match):
        adjit.grad(f)(1.0)


def scalar_draw(x):
    return x * np.random.random()


def test_cuda_code_refuses_numpy_draws():
    with pytest.raises(AdjitError, match="np.random.random` in CUDA code"):
        adjit.grad(scalar_draw, target="cuda")(1.0)
