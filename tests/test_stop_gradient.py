"""stop_gradient: a constant for differentiation, recognized by identity under any alias,
and dropped from the backward sweep by activity analysis."""
import math

import numba
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import adjit
import adjit as ad
from fd import fd_grad
from adjit import grad, stop_gradient
from adjit import stop_gradient as sg

import programs
from stop_gradient_softmax import logsumexp


def tutorial(x, y):
    return x * x + stop_gradient(y) * x


def test_tutorial_example_is_seven_not_four():
    dx, dy = grad(tutorial, argnums=(0, 1))(2.0, 3.0)
    assert dx == 7.0  # 2x + y; the widely quoted 4.0 is wrong
    assert dy == 0.0


def aliased(x, y):
    return sg(x * y) * y + ad.stop_gradient(x) * x + adjit.stop_gradient(y)


def test_any_import_alias_is_recognized():
    dx, dy = grad(aliased, argnums=(0, 1))(1.5, 2.0)
    assert dx == pytest.approx(1.5)          # only the unstopped factor x of x * x counts
    assert dy == pytest.approx(1.5 * 2.0)    # d/dy of c * y with c = x*y held constant


class Renamed:
    halt = staticmethod(stop_gradient)


halt = Renamed.halt


def renamed_global(x):
    return halt(x) * x


def test_recognized_by_identity_not_spelling():
    assert grad(renamed_global)(3.0) == 3.0


def test_stopped_in_loop_matches_constant_substitution():
    x = np.array([0.3, -0.8, 1.1, 0.5])
    g = grad(programs.stopped_in_loop)(x)
    s_before = np.concatenate([[0.0], np.cumsum(
        [x[i] * x[i] * x[i] + 0.0 for i in range(3)])])
    # s_i = s_{i-1} + x_i^3 + s_{i-1} x_i: recompute exactly
    s = 0.0
    expected = np.zeros_like(x)
    for i in range(4):
        expected[i] = x[i] * x[i] + s
        s = s + x[i] * x[i] * x[i] + s * x[i]
    np.testing.assert_allclose(g, expected, rtol=1e-14)
    _ = s_before


def stopped_everything(x, y):
    return stop_gradient(x * y + math.sin(x)) * 3.0


def test_fully_stopped_output_gives_zeros_and_no_adjoint_code():
    g = grad(stopped_everything, argnums=(0, 1))
    assert g(1.0, 2.0) == (0.0, 0.0)
    backward = g.source.split("# backward sweep")[-1]
    assert "_bar +=" not in backward and "_bar -=" not in backward


def softmax_xent(z, k):
    return logsumexp(z) - z[k]


def test_stable_softmax_with_stopped_max():
    z = np.array([1000.0, 1001.0, 999.5, 1000.2])
    g = grad(softmax_xent)(z, 1)
    p = np.exp(z - z.max())
    p /= p.sum()
    expected = p.copy()
    expected[1] -= 1.0
    assert np.all(np.isfinite(g))
    np.testing.assert_allclose(g, expected, rtol=1e-12, atol=1e-15)


def test_stopped_max_leaves_no_adjoint_for_the_max():
    src = grad(softmax_xent).source_for(np.ones(3), 0)
    assert "m_bar" not in src and "m_2_bar" not in src


@given(x=st.floats(-3, 3), y=st.floats(-3, 3))
def test_stopped_term_contributes_exactly_zero(x, y):
    g_with = grad(with_stopped_term, argnums=(0, 1))
    g_without = grad(without_stopped_term, argnums=(0, 1))
    assert g_with(x, y) == g_without(x, y)


def with_stopped_term(x, y):
    return x * math.sin(y) + stop_gradient(math.exp(x) * y * y)


def without_stopped_term(x, y):
    return x * math.sin(y)


@numba.njit
def njit_uses_stop(x):
    return stop_gradient(x) * 2.0


def test_stop_gradient_is_identity_in_python_and_njit():
    arr = np.arange(3.0)
    assert stop_gradient(2.5) == 2.5
    assert stop_gradient(arr) is arr
    assert njit_uses_stop(1.5) == 3.0


def calls_njit_that_stops(x):
    return njit_uses_stop(x) * x


def test_stop_gradient_inside_called_njit_function():
    assert grad(calls_njit_that_stops)(1.5) == 3.0


def _stopped_product_in_a_loop(W, x0, steps):
    h = x0.copy()
    acc = 0.0
    for t in range(steps):
        h[:] = stop_gradient(np.tanh(W @ h))
        acc += np.sum(h * W[0])
    return acc


def _same_with_h_fixed(W2, x0, steps, W):
    h = x0.copy()
    acc = 0.0
    for t in range(steps):
        h = np.tanh(W @ h)
        acc += np.sum(h * W2[0])
    return acc


def test_matrix_product_in_a_loop_reaching_only_stop_gradient_is_accepted():
    """Once refused ("changed after a matrix product"): a stopped product has no adjoint, so
    nothing needs its operands (a helper's find while writing the adversarial example)."""
    W = np.random.default_rng(0).normal(size=(3, 3)) * 0.5
    x0 = np.ones(3)
    g = adjit.grad(_stopped_product_in_a_loop, argnums=0)(W, x0, 4)
    fd = fd_grad(lambda W2: _same_with_h_fixed(W2, x0, 4, W), (W,), 0)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)


_Pair = __import__("collections").namedtuple("_Pair", ["scale", "shift"])


def _stopped_tuple_written(x, a):
    t = stop_gradient((x[1], a))
    return np.sum(x[1:] * t[0]) * t[1] + a * np.sum(x)


def _stopped_named_tuple_in_a_loop(x, a):
    q = stop_gradient(_Pair(a, x[0]))
    s = 0.0
    for i in range(3):
        s += q.scale * a * np.sum(q.shift * x)
    return s


def _stopped_nested(a, b, w):
    p = (a, (b, w[0]))
    a2, (b2, w2) = stop_gradient(p)
    return a * a2 + np.sum(w * w2) * b2 + b


def test_stop_gradient_of_a_tuple_stops_every_number_in_it():
    # JAX's stop_gradient of a pytree: each leaf a constant, the structure kept
    x, a = np.array([1.0, 2.0, 3.0]), 0.7
    gx, ga = grad(_stopped_tuple_written, argnums=(0, 1))(x, a)
    np.testing.assert_allclose(gx, np.r_[0.0, 2.0 * a, 2.0 * a] + a, rtol=1e-15)
    assert ga == pytest.approx(np.sum(x), rel=1e-15)
    gx, ga = grad(_stopped_named_tuple_in_a_loop, argnums=(0, 1))(x, a)
    np.testing.assert_allclose(gx, np.full(3, 3 * a * a * x[0]), rtol=1e-14)
    assert ga == pytest.approx(3 * a * x[0] * np.sum(x), rel=1e-14)
    w = np.array([1.0, 2.0])
    g = grad(_stopped_nested, argnums=(0, 1, 2))(1.5, 0.5, w)
    assert g[0] == pytest.approx(1.5) and g[1] == pytest.approx(1.0)
    np.testing.assert_allclose(g[2], 0.5 * np.full(2, w[0]), rtol=1e-15)
    assert adjit.value_and_grad(_stopped_nested)(1.5, 0.5, w)[0] == pytest.approx(
        _stopped_nested(1.5, 0.5, w), rel=1e-15)


def _stopped_tuple_with_an_array(x, a):
    z, b = stop_gradient((x * 2.0, a))
    return np.sum(z * x) * b + a * a


def test_stop_gradient_of_a_tuple_holding_an_array_stops_it():
    x = np.array([1.0, 2.0, 3.0])
    value, (gx, ga) = adjit.value_and_grad(_stopped_tuple_with_an_array, argnums=(0, 1))(
        x, 0.7)
    assert value == pytest.approx(numba.njit(_stopped_tuple_with_an_array)(x, 0.7), rel=1e-15)
    np.testing.assert_allclose(gx, 2.0 * x * 0.7, rtol=1e-15)     # z, b constants
    assert ga == pytest.approx(2 * 0.7, rel=1e-15)


# Each writes, after stopping an array, into it or into the stopped value (under another
# name, through a view, in a helper, on a later iteration) and reads the other afterwards:
# in numba both are one array, in adjit the stopped value was a copy, and each gave 9.8
# where numba gives 12.6 or 14.0 (x = [1, 2, 3], a = 0.7), or 2.5 where 14.5.
def _stopped_then_written(x, a):
    y = stop_gradient(x)
    y[0] = 5.0                  # numba: x[0] is 5 too
    return np.sum(x * x) * a


def _source_written_after(x, a):
    y = stop_gradient(x[1:])
    x[1] = 7.0                  # numba: y[0] is 7 too
    return np.sum(y) * a


def _written_under_another_name(x, a):
    w = stop_gradient(x)
    u = w
    u[0] = 5.0
    return np.sum(x * x) * a


def _view_of_the_stopped_value_written(x, a):
    z = stop_gradient(x)[1:]
    z[0] = 5.0                  # numba: x[1] is 5
    return np.sum(x * x) * a


def _view_made_before_written(x, a):
    v = x[1:]
    t = stop_gradient(x)
    v[0] = 5.0                  # numba: t[1] is 5
    return np.sum(t * x) * a


def _tuple_item_written(x, a):
    z, b = stop_gradient((x, a))
    z[0] = 5.0
    return np.sum(x * x) * b


@numba.njit
def _zero_first(v):
    v[0] = 0.0


def _written_by_a_helper(x, a):
    y = stop_gradient(x)
    _zero_first(x)
    return np.sum(y * x) * a


def _written_before_the_old_copy_is_read(x, a):
    y = stop_gradient(x)
    s = 0.0
    for t in range(3):
        x[0] = x[0] + a
        s += np.sum(y * x) * a      # y of the iteration before: numba's sees the write
        y = stop_gradient(x)
    return s


def _stopped_on_one_path(x, a):
    if a > 0:
        y = stop_gradient(x)
    else:
        y = np.zeros(3)
    x[0] = 5.0                  # numba: y[0] is 5 on the first path
    return np.sum(y) * a


def _stopped_on_one_path_written(x, a):
    if a > 0:
        y = stop_gradient(x)
    else:
        y = np.zeros(3)
    y[0] = 5.0                  # numba: x[0] is 5 on the first path
    return np.sum(x * x) * a


@numba.njit
def _stopped_or_doubled(v, a):
    if a > 0:
        return stop_gradient(v)
    return v * 2.0


def _stopped_by_a_helper_with_two_returns(x, a):
    y = _stopped_or_doubled(x, a)
    x[0] = 5.0
    return np.sum(y) * a


def _tuple_of_views(x, a):
    v, b = stop_gradient((x[1:], a))
    x[1] = 5.0                  # numba: v[0] is 5
    return np.sum(v) * a


@pytest.mark.parametrize("f", [_stopped_then_written, _source_written_after,
                               _written_under_another_name,
                               _view_of_the_stopped_value_written, _view_made_before_written,
                               _tuple_item_written, _written_by_a_helper,
                               _written_before_the_old_copy_is_read, _stopped_on_one_path,
                               _stopped_on_one_path_written,
                               _stopped_by_a_helper_with_two_returns, _tuple_of_views])
def test_a_write_after_stopping_an_array_is_refused(f):
    x = np.array([1.0, 2.0, 3.0])
    with pytest.raises(adjit.AdjitError, match=r"after `stop_gradient` of 'x' \(line \d+\), "
                       r"where .* is read afterwards: numba's stop_gradient gives the array "
                       r"itself"):
        grad(f, argnums=(0, 1))(x, 0.7)


def _copy_read_before_the_write(x, a):
    y = stop_gradient(x)
    s = np.sum(y * x) * a
    x[0] = 5.0 * a              # y is not read again
    return s + np.sum(x * x)


def _stopped_again_after_the_write(x, a):
    y = stop_gradient(x)
    s = 0.0
    for t in range(3):
        s += np.sum(y * x) * a
        x[0] = x[0] + a
        y = stop_gradient(x)    # numba's y is x again; adjit's a new copy
    return s


def _source_rebound_then_written(x, a):
    y = stop_gradient(x)
    x = np.zeros(3)             # a new array: the write below is not into y's
    x[0] = a
    return np.sum(y * a) + np.sum(x)


def _state_rebound_each_step(x, a):
    u = x * 1.0
    s = 0.0
    for t in range(3):
        c = stop_gradient(u)
        u = u * a               # a new array in numba (adjit stores it into u's own)
        u[0] = 1.0
        s += np.sum(c * u)
    return s


def test_a_name_rebound_to_a_new_array_is_written_freely():
    x, a = np.array([1.0, 2.0, 3.0]), 0.7
    value, (gx, ga) = adjit.value_and_grad(_source_rebound_then_written, argnums=(0, 1))(
        x.copy(), a)
    assert value == pytest.approx(numba.njit(_source_rebound_then_written)(x.copy(), a))
    np.testing.assert_allclose(gx, [0.0, 0.0, 0.0], atol=1e-15)     # y constant, x new
    assert ga == pytest.approx(np.sum(x) + 1.0, rel=1e-15)
    value, (gx, ga) = adjit.value_and_grad(_state_rebound_each_step, argnums=(0, 1))(
        x.copy(), a)
    assert value == pytest.approx(numba.njit(_state_rebound_each_step)(x.copy(), a))
    # step t: c_t = u_t constant (u_t[i] = x_i a^t for i > 0), u_(t+1) = u_t a with its
    # first element 1: the step adds c_t[0] + sum_(i>0) x_i^2 a^(2t+1)
    t = np.arange(3)
    np.testing.assert_allclose(gx, np.r_[0.0, x[1:] * np.sum(a ** (2 * t + 1))], rtol=1e-14)
    assert ga == pytest.approx(np.sum(x[1:] ** 2) * np.sum((t + 1) * a ** (2 * t)), rel=1e-14)


def test_stopped_arrays_read_only_where_numba_agrees():
    x, a = np.array([1.0, 2.0, 3.0]), 0.7
    value, (gx, ga) = adjit.value_and_grad(_copy_read_before_the_write, argnums=(0, 1))(
        x.copy(), a)
    assert value == pytest.approx(numba.njit(_copy_read_before_the_write)(x.copy(), a))
    # a * sum(y * x) with y constant, then x[0] = 5a: + 25 a^2 + x1^2 + x2^2
    np.testing.assert_allclose(gx, [a * 1.0, a * 2.0 + 4.0, a * 3.0 + 6.0], rtol=1e-15)
    assert ga == pytest.approx(14.0 + 50 * a, rel=1e-15)
    value, (gx, ga) = adjit.value_and_grad(_stopped_again_after_the_write, argnums=(0, 1))(
        x.copy(), a)
    assert value == pytest.approx(numba.njit(_stopped_again_after_the_write)(x.copy(), a))
    # step t: a * sum(y_t * x_t), y_t constant, x_t[0] = 1 + t a (d/dx0 1, d/da t)
    x0 = 1.0 + a * np.arange(3)
    np.testing.assert_allclose(gx, a * np.array([np.sum(x0), 6.0, 9.0]), rtol=1e-14)
    assert ga == pytest.approx(np.sum(x0 * x0 + 13.0) + a * np.sum(x0 * np.arange(3)),
                               rel=1e-14)


def _stopped_array_printed(x, a):
    y = stop_gradient(x)
    with numba.objmode():
        print("stopped:", y[0])     # an objmode block that only reads it writes nothing
    return np.sum(y * x) * a


def test_a_stopped_array_read_in_an_objmode_block(capfd):
    x = np.array([1.0, 2.0, 3.0])
    gx, ga = grad(_stopped_array_printed, argnums=(0, 1))(x, 0.7)
    np.testing.assert_allclose(gx, 0.7 * x, rtol=1e-15)
    assert ga == pytest.approx(14.0, rel=1e-15)
    assert "stopped: 1.0" in capfd.readouterr().out


def _stepped_with_stopped_state(u, a, steps):
    # a stopped copy of the state each step, the state written after (numpy computes the
    # right-hand side before it assigns, so numba's `c` reads the old state too)
    for t in range(steps):
        c = stop_gradient(u)
        u[1:] = u[1:] + a * c[:-1] * u[1:]
    return np.sum(u * u)


def test_state_stopped_then_written_in_a_time_loop():
    u0, a, steps = np.array([0.5, -0.3, 0.8, 0.2]), 0.3, 4
    value, (gu, ga) = adjit.value_and_grad(_stepped_with_stopped_state, argnums=(0, 1))(
        u0.copy(), a, steps)
    assert value == pytest.approx(numba.njit(_stepped_with_stopped_state)(u0.copy(), a, steps),
                                  rel=1e-14)
    frozen, u = [], u0.copy()           # the stopped states, as constants
    for t in range(steps):
        frozen.append(u.copy())
        u[1:] = u[1:] + a * u[:-1] * u[1:]

    def constant_c(u, a):
        u = u.copy()
        for c in frozen:
            u[1:] = u[1:] + a * c[:-1] * u[1:]
        return np.sum(u * u)

    np.testing.assert_allclose(gu, fd_grad(constant_c, (u0, a), 0), rtol=1e-7)
    assert ga == pytest.approx(fd_grad(constant_c, (u0, a), 1), rel=1e-7)


def _element_stopped(x, a):
    m = stop_gradient(x[1])     # one number: a copy in numba too
    for i in range(x.shape[0]):
        x[i] = x[i] / m
    return np.sum(x * x) * a


def _copied(x, a):
    y = stop_gradient(x).copy()
    y[0] = 5.0
    return np.sum(x * y) * a


def _written_before(x, a):
    x[0] = 2.0
    y = stop_gradient(x)
    return np.sum(x * y) * a


@pytest.mark.parametrize("f, dx, da", [
    (_element_stopped, [0.25, 0.5, 0.75], 3.5),     # a * sum((x / m) ** 2), m constant 2
    (_copied, [2.5, 1.0, 1.5], 18.0),               # a * sum(x * y), y = [5, 2, 3] constant
    (_written_before, [0.0, 1.0, 1.5], 17.0)])      # x[0] overwritten; y = [2, 2, 3]
def test_stopped_arrays_written_where_numba_agrees(f, dx, da):
    x = np.array([1.0, 2.0, 3.0])
    value, g = adjit.value_and_grad(f, argnums=(0, 1))(x.copy(), 0.5)
    assert value == pytest.approx(numba.njit(f)(x.copy(), 0.5), rel=1e-15)
    np.testing.assert_allclose(g[0], dx, rtol=1e-15)
    assert g[1] == pytest.approx(da, rel=1e-15)
