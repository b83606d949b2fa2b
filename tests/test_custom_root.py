"""custom_root: the derivative of an equation's solution by the implicit function theorem,
whatever solver found it (a Newton while loop, a fixed-point iteration).

Checked against the analytic derivative of Kepler's equation's solution and against central
differences of whole programs; forward mode against reverse mode.
"""
import math

import numba
import numpy as np
import pytest

import adjit
from adjit import custom_root
from fd import fd_grad


@numba.njit
def kepler(E, M, e):
    return E - e * math.sin(E) - M


@custom_root(kepler)
def eccentric_anomaly(M, e, E0):
    """Newton's method until the step is below 1e-14: a while loop adjit does not
    differentiate (the solution's derivative comes from the residual)."""
    E = E0
    while True:
        step = kepler(E, M, e) / (1.0 - e * math.cos(E))
        E -= step
        if abs(step) < 1e-14:
            return E


def orbit_position(M, e):
    E = eccentric_anomaly(M, e, M)
    return math.cos(E) - e + 0.5 * math.sqrt(1.0 - e * e) * math.sin(E)


def orbit_by_hand(M, e):
    E = eccentric_anomaly(M, e, M)
    dE_dM = 1.0 / (1.0 - e * math.cos(E))
    dE_de = math.sin(E) / (1.0 - e * math.cos(E))
    dx_dE = -math.sin(E) + 0.5 * math.sqrt(1.0 - e * e) * math.cos(E)
    dx_de = -1.0 - 0.5 * e / math.sqrt(1.0 - e * e) * math.sin(E)
    return dx_dE * dE_dM, dx_dE * dE_de + dx_de


@pytest.mark.parametrize("M, e", [(1.1, 0.4), (0.2, 0.9), (3.0, 0.05)])
def test_kepler_matches_the_analytic_derivative(M, e):
    g = adjit.grad(orbit_position, argnums=(0, 1))(M, e)
    expected = orbit_by_hand(M, e)
    assert g[0] == pytest.approx(expected[0], rel=1e-12)
    assert g[1] == pytest.approx(expected[1], rel=1e-12)
    _, t = adjit.jvp(orbit_position, argnums=(0, 1))(M, e, (0.3, -0.7))
    assert t == pytest.approx(0.3 * expected[0] - 0.7 * expected[1], rel=1e-12)


@numba.njit
def balance(x, b, A):
    return x + 0.1 * np.tanh(A @ x) - b


@custom_root(balance)
def equilibrium(b, A, x0):
    x = x0.copy()
    for it in range(200):
        x = b - 0.1 * np.tanh(A @ x)
    return x


def weighted_equilibrium(b, A):
    x = equilibrium(b, A, np.zeros_like(b))
    s = 0.0
    for i in range(x.shape[0]):
        s += (i + 1.0) * x[i] * x[i]
    return s


def test_a_vector_solution_matches_differences():
    rng = np.random.default_rng(0)
    b, A = rng.normal(size=3), rng.normal(size=(3, 3))
    gb, gA = adjit.grad(weighted_equilibrium, argnums=(0, 1))(b, A)
    np.testing.assert_allclose(gb, fd_grad(weighted_equilibrium, (b, A), 0), rtol=1e-6)
    np.testing.assert_allclose(gA, fd_grad(weighted_equilibrium, (b, A), 1), rtol=1e-6,
                               atol=1e-9)
    v = rng.normal(size=3)
    _, t = adjit.jvp(weighted_equilibrium)(b, A, v)
    assert t == pytest.approx(np.dot(gb, v), rel=1e-12)


def test_outside_differentiation_it_is_the_solver():
    E = eccentric_anomaly(1.1, 0.4, 1.1)
    assert abs(kepler(E, 1.1, 0.4)) < 1e-14


def test_refusals():
    def no_params(x):
        return x * x - 2.0
    with pytest.raises(adjit.AdjitError, match="takes the solution and at least one parameter"):
        custom_root(no_params)

    def residual(x, a, b):
        return x - a * b

    with pytest.raises(adjit.AdjitError, match="fewer than the residual's 2 parameter"):
        @custom_root(residual)
        def solve(a):
            return a
