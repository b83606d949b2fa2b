"""Second derivatives: hvp, hessian, jvp(grad(f)), grad(grad(f)).

Checked against Hessians written out by hand (Rosenbrock, a vectorized function), against
Hessians from central differences of the function's values alone (nothing of adjit in the
oracle), and by the symmetry of the Hessian: <u, H v> = <v, H u> for random u, v, x
(hypothesis). The programs are the shapes users write: loops over arrays, a recurrence, a
time-stepping loop, vectorized numpy, stop_gradient.
"""
import math
import pickle

import numba
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import adjit
from fd import fd_grad, fd_hessian, fd_jacobian


def rosenbrock(x):
    s = 0.0
    for i in range(x.shape[0] - 1):
        s += 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2
    return s


def rosenbrock_hessian(x):
    n = x.shape[0]
    H = np.zeros((n, n))
    for i in range(n - 1):
        H[i, i] += 1200.0 * x[i] ** 2 - 400.0 * x[i + 1] + 2.0
        H[i + 1, i + 1] += 200.0
        H[i, i + 1] -= 400.0 * x[i]
        H[i + 1, i] -= 400.0 * x[i]
    return H


def vectorized(x):
    return np.sum(np.exp(x) * x) + np.dot(x, x) ** 2


def vectorized_hessian(x):
    return np.diag(np.exp(x) * (x + 2.0)) + 4.0 * np.dot(x, x) * np.eye(x.size) + \
        8.0 * np.outer(x, x)


def recurrence(x, a):
    h = 0.0
    out = 0.0
    for i in range(x.shape[0]):
        h = math.tanh(a * h + x[i])
        out += h * h
    return out


recurrence_njit = numba.njit(recurrence)    # the differences' oracle, compiled once per module


def pendulum_energy(theta0, g, dt, steps):
    """Leapfrog for a pendulum: a function of the final state (its energy alone would be
    nearly conserved, with second derivatives too small for the differences' oracle)."""
    th = theta0
    om = 0.0
    for t in range(steps):
        om -= 0.5 * dt * g * math.sin(th)
        th += dt * om
        om -= 0.5 * dt * g * math.sin(th)
    return th + 0.3 * om * om


def stopped_weights(x):
    w = adjit.stop_gradient(x)
    return np.sum(w * x * x)


def matrix_loss(A, w):
    return np.sum(np.tanh(A @ w)) + np.sum(A * A) * 0.1


@pytest.fixture(scope="module")
def rosen_hvp():
    return adjit.hvp(rosenbrock)


def test_hvp_matches_the_analytic_hessian_of_loop_code(rosen_hvp):
    x = np.array([0.3, -0.5, 1.2, 0.8, -1.1])
    v = np.array([1.0, -2.0, 0.5, 0.3, 0.7])
    np.testing.assert_allclose(rosen_hvp(x, v), rosenbrock_hessian(x) @ v, rtol=1e-12)


def test_hessian_matches_the_analytic_hessian():
    x = np.array([0.3, -0.5, 1.2, 0.8])
    np.testing.assert_allclose(adjit.hessian(rosenbrock)(x), rosenbrock_hessian(x), rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_allclose(adjit.hessian(vectorized)(x), vectorized_hessian(x), rtol=1e-12)


def test_recurrence_against_differences_of_values():
    x, a = np.array([0.2, -0.4, 0.9]), 0.7
    compiled = recurrence_njit
    np.testing.assert_allclose(adjit.hessian(recurrence)(x, a), fd_hessian(compiled, (x, a), 0),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(adjit.hessian(recurrence, argnums=1)(x, a),
                               float(fd_hessian(compiled, (x, a), 1)), rtol=1e-5)


def test_time_loop_second_derivatives():
    compiled = numba.njit(pendulum_energy)
    args = (0.8, 9.81, 0.01, 200)
    for k in (0, 1):
        got = adjit.grad(adjit.grad(pendulum_energy, argnums=k), argnums=k)(*args)
        np.testing.assert_allclose(got, float(fd_hessian(compiled, args, k)), rtol=1e-5)


def euler_chain(x, k, steps):
    y = x.copy()
    for t in range(steps):
        y = y + 0.01 * np.tanh(k * y)
    return np.sum(y ** 3)


def test_hvp_with_checkpointing_is_identical_and_keeps_a_smaller_tape():
    x, v = np.linspace(-1.0, 1.0, 5), np.linspace(0.3, -0.2, 5)
    plain, checkpointed = adjit.hvp(euler_chain), adjit.hvp(euler_chain, checkpoint="auto")
    np.testing.assert_array_equal(checkpointed(x, 0.8, 400, v), plain(x, 0.8, 400, v))
    assert checkpointed.last_tape.total_bytes < plain.last_tape.total_bytes / 2
    assert checkpointed.last_tape.recompute_factor > 1.0


def test_stop_gradient_stays_stopped_in_both_passes():
    x = np.array([0.5, -1.5, 2.0])
    # w = x held constant: f = sum(w x^2), H = diag(2 w)
    np.testing.assert_allclose(adjit.hessian(stopped_weights)(x), np.diag(2.0 * x), rtol=1e-14)


def test_matrix_argument_has_shape_x_shape_twice():
    rng = np.random.default_rng(3)
    A, w = rng.standard_normal((2, 3)), rng.standard_normal(3)
    H = adjit.hessian(matrix_loss)(A, w)
    assert H.shape == (2, 3, 2, 3)
    np.testing.assert_allclose(H, fd_hessian(numba.njit(matrix_loss), (A, w), 0), rtol=1e-5,
                               atol=1e-6)


def test_hvp_in_several_arguments_takes_and_returns_tuples():
    x, a = np.array([0.2, -0.4, 0.9]), 0.7
    vx, va = np.array([1.0, 0.5, -0.2]), 0.4
    hx, ha = adjit.hvp(recurrence, argnums=(0, 1))(x, a, (vx, va))
    # the blocks of the full Hessian in (x, a), from differences of values
    compiled = recurrence_njit

    def joined(z):
        return compiled(z[:3], z[3])
    H = fd_hessian(joined, (np.append(x, a),), 0)
    full = H @ np.append(vx, va)
    np.testing.assert_allclose(hx, full[:3], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ha, full[3], rtol=1e-5, atol=1e-6)


def test_hessian_in_several_arguments_is_a_nested_tuple_of_blocks():
    x, a = np.array([0.2, -0.4, 0.9]), 0.7
    H = adjit.hessian(recurrence, argnums=(0, 1))(x, a)
    assert [[np.shape(b) for b in row] for row in H] == [[(3, 3), (3,)], [(3,), ()]]
    compiled = recurrence_njit

    def joined(z):
        return compiled(z[:3], z[3])
    full = fd_hessian(joined, (np.append(x, a),), 0)
    np.testing.assert_allclose(H[0][0], full[:3, :3], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(H[0][1], full[:3, 3], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(H[1][0], full[3, :3], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(H[1][1], full[3, 3], rtol=1e-5, atol=1e-6)


def test_jvp_of_grad_and_grad_of_grad(rosen_hvp):
    x = np.array([0.3, -0.5, 1.2, 0.8])
    v = np.array([1.0, -2.0, 0.5, 0.3])
    g, hv = adjit.jvp(adjit.grad(rosenbrock))(x, v)
    np.testing.assert_allclose(g, adjit.grad(rosenbrock)(x), rtol=1e-15)
    np.testing.assert_allclose(hv, rosenbrock_hessian(x) @ v, rtol=1e-12)

    def cubic_sine(a):
        return math.sin(a) * a ** 3
    a = 0.7
    exact = -math.sin(a) * a ** 3 + 6.0 * math.cos(a) * a ** 2 + 6.0 * a * math.sin(a)
    assert adjit.grad(adjit.grad(cubic_sine))(a) == pytest.approx(exact, rel=1e-14)


def test_called_from_njit_and_pickled(rosen_hvp):
    x = np.array([0.3, -0.5, 1.2, 0.8])
    v = np.array([1.0, -2.0, 0.5, 0.3])
    hess = adjit.hessian(rosenbrock)

    @numba.njit
    def newton_direction(x, v):
        return rosen_hvp(x, v), hess(x)
    hv, H = newton_direction(x, v)
    np.testing.assert_allclose(hv, rosenbrock_hessian(x) @ v, rtol=1e-12)
    np.testing.assert_allclose(H, rosenbrock_hessian(x), rtol=1e-12, atol=1e-12)
    again = pickle.loads(pickle.dumps(rosen_hvp))
    np.testing.assert_allclose(again(x, v), hv, rtol=0)


def test_refusals_name_the_function_and_what_to_use():
    x = np.array([0.3, -0.5])
    with pytest.raises(adjit.AdjitError, match="hessian"):
        adjit.grad(adjit.grad(rosenbrock))(x)
    with pytest.raises(adjit.AdjitError, match="only as grad, value_and_grad, vjp or jvp"):
        adjit.grad(adjit.grad(recurrence, argnums=(0, 1)))


@pytest.fixture(scope="module")
def symmetric_hvp():
    return adjit.hvp(recurrence)


@given(st.lists(st.floats(-2.0, 2.0), min_size=6, max_size=6),
       st.floats(-1.5, 1.5))
def test_hessian_vector_products_are_symmetric(symmetric_hvp, values, a):
    """<u, H v> = <v, H u>: the dot-product test of the Hessian."""
    z = np.array(values)
    x, u, v = z[:2].copy(), z[2:4].copy(), z[4:].copy()
    x = np.append(x, 0.3)
    u = np.append(u, -0.7)
    v = np.append(v, 0.2)
    left = np.dot(u, symmetric_hvp(x, a, v))
    right = np.dot(v, symmetric_hvp(x, a, u))
    assert left == pytest.approx(right, rel=1e-10, abs=1e-12)


# Jacobians -----------------------------------------------------------------------------

def reaction_rhs(y, k):
    """An ODE right-hand side, written element by element."""
    out = np.empty(3)
    out[0] = -k * y[0] + y[1] * y[2]
    out[1] = k * y[0] - math.sin(y[1])
    out[2] = y[0] ** 2 - y[2]
    return out


def reaction_jacobian(y, k):
    return np.array([[-k, y[2], y[1]], [k, -math.cos(y[1]), 0.0], [2.0 * y[0], 0.0, -1.0]])


def outer_product(x):
    return np.outer(x, np.tanh(x))


@pytest.mark.parametrize("make", [adjit.jacobian, adjit.jacfwd, adjit.jacrev])
def test_jacobian_of_an_ode_right_hand_side(make):
    y, k = np.array([0.3, 0.7, -0.2]), 1.3
    np.testing.assert_allclose(make(reaction_rhs)(y, k), reaction_jacobian(y, k), rtol=1e-14,
                               atol=1e-15)


def test_jacobian_shapes_and_tuple_argnums():
    y, k = np.array([0.3, 0.7, -0.2]), 1.3
    Jy, Jk = adjit.jacobian(reaction_rhs, argnums=(0, 1))(y, k)
    np.testing.assert_allclose(Jy, reaction_jacobian(y, k), rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(Jk, [-y[0], y[0], 0.0], rtol=1e-14, atol=1e-15)
    x = np.array([0.4, -1.1, 0.8])
    expected = fd_jacobian(numba.njit(outer_product), (x,), 0)    # the oracle, compiled once
    for make in (adjit.jacobian, adjit.jacfwd, adjit.jacrev):
        J = make(outer_product)(x)
        assert J.shape == (3, 3, 3)
        np.testing.assert_allclose(J, expected, rtol=1e-6, atol=1e-8)
    # a float result: the Jacobian is the gradient
    np.testing.assert_allclose(adjit.jacobian(rosenbrock)(x), adjit.grad(rosenbrock)(x),
                               rtol=0)


def test_jacobian_from_njit_code():
    jac = adjit.jacfwd(reaction_rhs)

    @numba.njit
    def newton_matrix(y, k, dt):
        return np.eye(3) - dt * jac(y, k)
    y, k = np.array([0.3, 0.7, -0.2]), 1.3
    np.testing.assert_allclose(newton_matrix(y, k, 0.1), np.eye(3) - 0.1 * reaction_jacobian(y, k),
                               rtol=1e-14)


# hvp over programs written as users write them (tests/test_natural_programs.py) ---------

NATURAL = ("rk4_pendulum_helper", "leapfrog_chain_helper", "rnn_tanh", "lstm_slices_helper",
           "lj_periodic_np_round", "gmm_adbench_loops", "logreg_numba_prange",
           "tv_denoise_3d_slices", "heat_double_buffer_swap", "while_break_fixed_point",
           "helper_returns_tuple_arrays", "heat_copy_then_handover", "mvn_cholesky_nll")


def _natural_case(name):
    import test_natural_programs as natural
    for p in natural.CASES:
        if p.id == name:
            return p.values[:3]
    raise KeyError(name)


@pytest.mark.parametrize("name", NATURAL)
def test_hvp_of_natural_programs_matches_differences_of_the_gradient(name):
    """H v against central differences of adjit's gradient (itself checked against
    differences of values in test_natural_programs.py) along a random direction."""
    loss, args, argnums = _natural_case(name)
    k = argnums[0]
    x = args[k]
    rng = np.random.default_rng(7)
    v = rng.standard_normal() if np.ndim(x) == 0 else rng.standard_normal(np.shape(x))
    got = adjit.hvp(loss, argnums=k)(*args, v)
    g = adjit.grad(loss, argnums=k)
    h = 1e-6
    hi, lo = list(args), list(args)
    hi[k], lo[k] = x + h * v, x - h * v
    expected = (np.asarray(g(*hi)) - np.asarray(g(*lo))) / (2 * h)
    scale = max(np.max(np.abs(expected)), np.max(np.abs(np.asarray(g(*args)))), 1e-3)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6 * scale)


def test_second_derivatives_through_det_are_refused_naming_the_function():
    """...and the user's line the generated jvp's refused line was made from (the message
    named only a line of the generated code)."""
    loss, args, argnums = _natural_case("kalman_filter_solve")
    with pytest.raises(adjit.AdjitError, match=r"second derivatives of 'kalman_nll'.*\(made "
                       r"from kalman_nll, line \d+: `nll \+= .*np.linalg.det\(S\)"):
        adjit.hvp(loss, argnums=argnums[0])(*args, np.ones_like(args[argnums[0]]))


# gradients called inside differentiated code ------------------------------------------------

ROSEN_GRAD = adjit.grad(rosenbrock)
RECURRENCE_GRAD = adjit.grad(recurrence)


def rosenbrock_grad_by_hand(x):
    g = np.zeros_like(x)
    for i in range(x.shape[0] - 1):
        r = x[i + 1] - x[i] ** 2
        g[i] += -400.0 * x[i] * r - 2.0 * (1.0 - x[i])
        g[i + 1] += 200.0 * r
    return g


def directional(x, v):
    """L(x) = <grad E(x), v>: its gradient is H(x) v."""
    return np.dot(ROSEN_GRAD(x), v)


def unrolled_descent(x0, lr, steps):
    """The loss after `steps` gradient steps, differentiated in the start and the rate (a
    learned optimizer's meta-gradient)."""
    x = x0.copy()
    for t in range(steps):
        x -= lr * ROSEN_GRAD(x)
    return rosenbrock(x)


@numba.njit
def _gradient_norm(x, a):
    g = RECURRENCE_GRAD(x, a)
    return np.sum(g * g)


def penalized(x, a):
    """A gradient penalty, the gradient called from an @njit helper, in two arguments."""
    return recurrence(x, a) + 0.5 * _gradient_norm(x, a)


def test_a_gradient_inside_is_differentiated_by_the_hessian():
    x = np.array([0.3, -0.5, 1.2, 0.8])
    v = np.array([1.0, 0.5, -2.0, 0.25])
    np.testing.assert_allclose(adjit.grad(directional)(x, v), rosenbrock_hessian(x) @ v,
                               rtol=1e-13)
    # against differences of the hand-written gradient (nothing of adjit in the oracle)
    fd = np.array([(np.dot(rosenbrock_grad_by_hand(x + h), v) -
                    np.dot(rosenbrock_grad_by_hand(x - h), v)) / 2e-6
                   for h in np.eye(4) * 1e-6])
    np.testing.assert_allclose(adjit.grad(directional)(x, v), fd, rtol=1e-6)
    _, t = adjit.jvp(directional)(x, v, v)
    assert t == pytest.approx(v @ rosenbrock_hessian(x) @ v, rel=1e-13)


def test_unrolled_descent_and_a_gradient_penalty_match_differences():
    x0 = np.array([0.2, 0.1, -0.3])
    g_x0, g_lr = adjit.grad(unrolled_descent, argnums=(0, 1))(x0, 1e-3, 5)
    np.testing.assert_allclose(g_x0, fd_grad(unrolled_descent, (x0, 1e-3, 5), 0), rtol=1e-6)
    assert g_lr == pytest.approx(fd_grad(unrolled_descent, (x0, 1e-3, 5), 1), rel=1e-6)
    x, a = np.array([0.4, -0.3, 0.9, 0.1]), 0.7
    g_x, g_a = adjit.grad(penalized, argnums=(0, 1))(x, a)
    np.testing.assert_allclose(g_x, fd_grad(penalized, (x, a), 0), rtol=1e-6, atol=1e-9)
    assert g_a == pytest.approx(fd_grad(penalized, (x, a), 1), rel=1e-6)


def mixed_function(x, y):
    return math.sin(x * y) + x ** 3 * y ** 2


def test_mixed_second_derivatives_and_other_derivatives_of_gradients():
    x, y = 0.7, 1.3
    exact = math.cos(x * y) - x * y * math.sin(x * y) + 6.0 * x ** 2 * y
    mixed = adjit.grad(adjit.grad(mixed_function, argnums=1), argnums=0)
    assert mixed(x, y) == pytest.approx(exact, rel=1e-14)
    assert pickle.loads(pickle.dumps(mixed))(x, y) == pytest.approx(exact, rel=1e-14)
    value, d = adjit.value_and_grad(adjit.grad(mixed_function), argnums=1)(x, y)
    assert value == pytest.approx(y * math.cos(x * y) + 3.0 * x ** 2 * y ** 2, rel=1e-14)
    assert d == pytest.approx(exact, rel=1e-14)
    # jvp of grad in another argument: the column of mixed second derivatives
    xr, a, h = np.array([0.2, -0.4, 0.3]), 0.6, 1e-4
    _, t = adjit.jvp(adjit.grad(recurrence), argnums=1)(xr, a, 1.0)
    cross = [(recurrence(xr + e, a + h) - recurrence(xr + e, a - h) - recurrence(xr - e, a + h)
              + recurrence(xr - e, a - h)) / (4 * h * h) for e in np.eye(3) * h]
    np.testing.assert_allclose(t, cross, rtol=1e-5)
    # vjp of an array-valued gradient: H u
    xv, u = np.array([0.3, -0.5, 1.2, 0.8]), np.array([1.0, 0.0, -1.0, 2.0])
    _, hu = adjit.vjp(adjit.grad(rosenbrock))(xv, u)
    np.testing.assert_allclose(hu, rosenbrock_hessian(xv) @ u, rtol=1e-13)
