"""Tuple arguments as numba code passes them: a parameter tuple handed to a right-hand side
that unpacks it (`rhs(t, y, p)` with `alpha, beta = p`), scipy's `args=` tuple star-called
(`rhs(y, t, *args)`), a state tuple of arrays (`u, v = state`) written in place, elements read
by constant index (negative too), by a loop index, and `len`. The gradient with respect to a
tuple is a tuple of the same structure (0 for an integer element). Each case against numba's
compile of the same function (value) and central differences of it."""
from collections import namedtuple

import numpy as np
import pytest
from numba import njit

import adjit
from fd import fd_grad, fd_jvp


def _assert_tuple_close(got, want, rtol=1e-6, atol=1e-8):
    assert isinstance(got, tuple) and len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert np.shape(g) == np.shape(w), k
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"element {k}")


# a parameter tuple unpacked by the right-hand side, an RK4 step passing it on unchanged
@njit
def predator_prey(t, y, p):
    alpha, beta, delta, gamma = p
    out = np.empty(2)
    out[0] = alpha * y[0] - beta * y[0] * y[1]
    out[1] = delta * y[0] * y[1] - gamma * y[1]
    return out


@njit
def rk4_step(rhs, t, h, y, p):
    k1 = rhs(t, y, p)
    k2 = rhs(t + 0.5 * h, y + 0.5 * h * k1, p)
    k3 = rhs(t + 0.5 * h, y + 0.5 * h * k2, p)
    k4 = rhs(t + h, y + h * k3, p)
    return y + (h / 6.0) * (k1 + 2 * k2 + 2 * k3 + k4)


def fit_loss(y0, p, observed, h):
    y = y0.copy()
    t = 0.0
    loss = 0.0
    for i in range(observed.shape[0]):
        y = rk4_step(predator_prey, t, h, y, p)
        t += h
        loss += (y[0] - observed[i, 0]) ** 2 + (y[1] - observed[i, 1]) ** 2
    return loss


def test_a_parameter_tuple_handed_to_the_right_hand_side():
    y0 = np.array([1.0, 0.5])
    p = (1.1, 0.4, 0.1, 0.4)
    observed = np.random.default_rng(0).random((40, 2)) + 0.5
    args = (y0, p, observed, 0.05)
    forward = njit(fit_loss)
    value, (gy, gp) = adjit.value_and_grad(fit_loss, argnums=(0, 1))(*args)
    assert value == pytest.approx(forward(*args), rel=1e-13)
    np.testing.assert_allclose(gy, fd_grad(forward, args, 0), rtol=1e-6)
    assert all(type(g) is float for g in gp)
    _assert_tuple_close(gp, fd_grad(forward, args, 1))
    # an int argnums on the tuple: the tuple's gradient itself
    _assert_tuple_close(adjit.grad(fit_loss, argnums=1)(*args), gp, rtol=1e-15, atol=0)
    assert p == (1.1, 0.4, 0.1, 0.4) and (y0 == [1.0, 0.5]).all()


# scipy's convention: the integrator takes `args` and calls rhs(y, t, *args)
@njit
def lotka_volterra(y, t, alpha, beta, delta, gamma):
    return np.array([alpha * y[0] - beta * y[0] * y[1], delta * y[0] * y[1] - gamma * y[1]])


@njit
def integrate(rhs, y0, t0, dt, n, args):
    y = y0.copy()
    t = t0
    for i in range(n):
        k1 = rhs(y, t, *args)
        k2 = rhs(y + 0.5 * dt * k1, t + 0.5 * dt, *args)
        k3 = rhs(y + 0.5 * dt * k2, t + 0.5 * dt, *args)
        k4 = rhs(y + dt * k3, t + dt, *args)
        y = y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        t += dt
    return y


def final_state(y0, args):
    y = integrate(lotka_volterra, y0, 0.0, 0.01, 200, args)
    return y[0] ** 2 + y[1]


def test_scipy_style_args_star_called():
    args = (np.array([1.0, 0.5]), (1.1, 0.4, 0.1, 0.4))
    forward = njit(final_state)
    value, (gy, gargs) = adjit.value_and_grad(final_state, argnums=(0, 1))(*args)
    assert value == pytest.approx(forward(*args), rel=1e-13)
    np.testing.assert_allclose(gy, fd_grad(forward, args, 0), rtol=1e-6)
    _assert_tuple_close(gargs, fd_grad(forward, args, 1))


# a state tuple of arrays, unpacked and advanced in place (the user's arrays change, as
# under numba)
def wave_energy(state, c, dt, steps):
    u, v = state
    n = u.shape[0]
    for s in range(steps):
        for i in range(1, n - 1):
            v[i] += dt * c * c * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        for i in range(n):
            u[i] += dt * v[i]
    return np.sum(u * u) + 0.5 * np.sum(v * v)


def test_a_state_tuple_of_arrays_written_in_place():
    u = np.sin(np.linspace(0.0, 3.0, 12))
    v = np.zeros(12)
    forward = njit(wave_energy)
    mine, numbas = (u.copy(), v.copy()), (u.copy(), v.copy())
    value, (gs, gc) = adjit.value_and_grad(wave_energy, argnums=(0, 1))(mine, 1.0, 0.1, 8)
    assert value == pytest.approx(forward(numbas, 1.0, 0.1, 8), rel=1e-13)
    for a, b in zip(mine, numbas):      # written as numba writes them
        np.testing.assert_array_equal(a, b)
    args = ((u, v), 1.0, 0.1, 8)
    _assert_tuple_close(gs, fd_grad(forward, args, 0))
    assert gc == pytest.approx(fd_grad(forward, args, 1), rel=1e-6)


# elements by constant index (negative too), by a loop's index, and len
def weighted(x, w):
    s = w[-1] * np.sum(x)
    for k in range(len(w)):
        s += w[k] * x[k] ** 2
    return s + w[0] * x[0]


def test_elements_by_index_and_len():
    args = (np.array([0.5, -1.0, 2.0]), (1.5, -0.5, 2.5))
    forward = njit(weighted)
    value, (gx, gw) = adjit.value_and_grad(weighted, argnums=(0, 1))(*args)
    assert value == pytest.approx(forward(*args), rel=1e-14)
    np.testing.assert_allclose(gx, fd_grad(forward, args, 0), rtol=1e-7)
    _assert_tuple_close(gw, fd_grad(forward, args, 1))
    # exactly: d/dw_k = x_k^2 (+ sum(x) for the last, + x_0 for the first)
    x = args[0]
    assert gw == (x[0] ** 2 + x[0], x[1] ** 2, x[2] ** 2 + np.sum(x))


# an integer element (a step count) beside a float one: its gradient is a zero of its type
def decay(x, settings):
    n, rate = settings
    for i in range(n):
        x = x - rate * x * x
    return x


def test_an_integer_element_gets_a_zero_gradient():
    settings = (5, 0.1)
    g = adjit.grad(decay, argnums=(0, 1))(0.8, settings)
    assert g[1][0] == 0 and type(g[1][0]) is int
    forward = njit(decay)
    assert g[0] == pytest.approx(fd_grad(forward, (0.8, settings), 0), rel=1e-7)
    assert g[1][1] == pytest.approx(fd_grad(forward, (0.8, settings), 1)[1], rel=1e-7)


def test_jvp_and_vjp_take_a_tangent_tuple():
    args = (np.array([0.5, -1.0, 2.0]), (1.5, -0.5, 2.5))
    tangent = (0.3, -1.0, 0.7)
    value, along = adjit.jvp(weighted, argnums=1)(*args, tangent)
    assert value == pytest.approx(njit(weighted)(*args), rel=1e-14)
    assert along == pytest.approx(fd_jvp(weighted, args, (1,), (np.array(tangent),)), rel=1e-7)
    g = adjit.grad(weighted, argnums=1)(*args)
    assert along == pytest.approx(np.dot(g, tangent), rel=1e-13)     # the dot-product test
    _, back = adjit.vjp(weighted, argnums=(0, 1))(*args, 2.0)
    _assert_tuple_close(back[1], tuple(2.0 * np.array(g)), rtol=1e-14)


def test_float32_arrays_in_a_tuple_keep_their_type():
    def energy(state, k):
        x, v = state
        return np.sum(k * x * x) + np.sum(v * v)
    x = np.array([0.5, -1.0], np.float32)
    v = np.array([2.0, 0.25], np.float32)
    gx, gv = adjit.grad(energy)((x, v), 3.0)
    assert gx.dtype == np.float32 and gv.dtype == np.float32
    np.testing.assert_allclose(gx, 6.0 * x, rtol=1e-6)
    np.testing.assert_allclose(gv, 2.0 * v, rtol=1e-6)


# a record array beside a tuple: both split, both put back
POINT = np.dtype([("x", np.float64), ("y", np.float64)])


def records_and_weights(data, w):
    a, b = w
    s = 0.0
    for i in range(data.shape[0]):
        s += a * data[i].x * data[i].x + b * data[i].y
    return s


def test_a_record_array_beside_a_tuple():
    data = np.array([(1.0, 2.0), (3.0, -1.0)], dtype=POINT)
    gd, gw = adjit.grad(records_and_weights, argnums=(0, 1))(data, (0.5, 2.0))
    np.testing.assert_allclose(gd["x"], 2 * 0.5 * data["x"], rtol=1e-15)
    np.testing.assert_allclose(gd["y"], [2.0, 2.0], rtol=1e-15)
    assert gw == (np.sum(data["x"] ** 2), np.sum(data["y"]))


# tuples of tuples: a network's parameters as JAX users pass them
@njit
def mlp(params, x):
    (W1, b1), (W2, b2) = params
    h = np.tanh(x @ W1 + b1)
    return h @ W2 + b2


def mlp_loss(params, x, y):
    r = mlp(params, x) - y
    return np.sum(r * r) + 0.1 * np.sum(params[1][0] ** 2) + len(params[0])


def test_tuples_of_tuples_get_tuples_of_tuples():
    rng = np.random.default_rng(1)
    params = ((rng.random((3, 4)) - 0.5, rng.random(4)), (rng.random((4, 2)) - 0.5, rng.random(2)))
    x, y = rng.random((5, 3)), rng.random((5, 2))
    forward = njit(mlp_loss)
    value, g = adjit.value_and_grad(mlp_loss)(params, x, y)
    assert value == pytest.approx(forward(params, x, y), rel=1e-13)
    want = fd_grad(forward, (params, x, y), 0)
    assert len(g) == 2 and all(len(layer) == 2 for layer in g)
    for got_layer, want_layer in zip(g, want):
        _assert_tuple_close(got_layer, want_layer)


def nested_local(x):
    (a, b), c = (x, 2.0 * x), x
    pair = ((a, b), c)
    return a * b * c + pair[0][1]


def test_a_tuple_of_tuples_made_in_the_function():
    assert adjit.grad(nested_local)(1.5) == pytest.approx(6.0 * 1.5 ** 2 + 2.0, rel=1e-15)


# the right-hand side is read before any name is assigned, at every level of the target
def swap_across_levels(x, y):
    a = x
    c = y
    c, (a, b) = a, (c, 1.0)
    return a * 10.0 + c + b


def inner_target_read_outside(x, y):
    a = x
    (a, b), c = (3.0 * y, 2.0), a
    return a + 100.0 * c + b


@pytest.mark.parametrize("fn", [swap_across_levels, inner_target_read_outside])
def test_nested_unpacking_reads_the_right_hand_side_first(fn):
    args = (2.0, 5.0)
    forward = njit(fn)
    value, grads = adjit.value_and_grad(fn, argnums=(0, 1))(*args)
    assert value == forward(*args) == fn(*args)
    for k in (0, 1):
        assert grads[k] == pytest.approx(fd_grad(forward, args, k), rel=1e-7, abs=1e-9)
    assert grads == ((1.0, 10.0) if fn is swap_across_levels else (100.0, 3.0))


# a shape passed as a tuple (numba code reshapes by it), or taken from another array
def reshaped_energy(x, shape, weights):
    grid = x.reshape(shape)
    return np.sum(grid[1:] * grid[:-1]) + np.sum(np.reshape(x, weights.shape) * weights)


def test_a_reshape_to_a_shape_tuple_argument():
    rng = np.random.default_rng(3)
    x, weights = rng.normal(size=12), rng.normal(size=(4, 3))
    forward = njit(reshaped_energy)
    for shape in [(3, 4), (2, 6), (6, -1)]:
        args = (x, shape, weights)
        value, g = adjit.value_and_grad(reshaped_energy)(*args)
        assert value == pytest.approx(forward(*args), rel=1e-13)
        np.testing.assert_allclose(g, fd_grad(forward, args, 0), rtol=1e-7, atol=1e-9)
    with pytest.raises(ValueError):         # as numpy and numba raise
        adjit.grad(reshaped_energy)(x, (5, 3), weights)


# `*args` in the differentiated function's own signature (an objective as scipy.optimize
# calls it, fun(x, *args)): the values after the named parameters, as one tuple
def objective(theta, *data):
    s = 0.0
    for d in data:
        s += np.sum((d - theta) ** 2)
    return s + len(data)


def integrated(y0, *args):
    return np.sum(integrate(lotka_volterra, y0, 0.0, 0.01, 50, args) ** 2)


def test_star_args_of_the_differentiated_function():
    theta = np.array([0.5, -1.0, 2.0])
    data = (np.array([1.0, 0.0, 1.0]), np.array([0.0, -2.0, 3.0]))
    forward = njit(objective)
    for given in [data, data[:1], ()]:
        value, g = adjit.value_and_grad(objective)(theta, *given)
        # (numba 0.68 cannot loop over an empty tuple: Python's value for none)
        assert value == pytest.approx(forward(theta, *given) if given else
                                      objective(theta), rel=1e-14)
        # exactly: 2 * sum over the data of (theta - d)
        np.testing.assert_allclose(g, 2 * sum((theta - d for d in given), np.zeros(3)),
                                   rtol=1e-14)
    y0, args = np.array([1.0, 0.5]), (1.1, 0.4, 0.1, 0.4)
    value, g = adjit.value_and_grad(integrated)(y0, *args)
    assert value == pytest.approx(njit(integrated)(y0, *args), rel=1e-13)
    np.testing.assert_allclose(g, fd_grad(njit(integrated), (y0,) + args, 0), rtol=1e-6)
    # jvp and vjp: the tangent, the cotangent is the last argument
    out, t = adjit.jvp(integrated)(y0, *args, np.array([1.0, 0.0]))
    assert t == pytest.approx(g[0], rel=1e-12)
    out, gv = adjit.vjp(integrated)(y0, *args, 2.0)
    np.testing.assert_allclose(gv, 2.0 * g, rtol=1e-14)


def test_star_args_refusals():
    with pytest.raises(adjit.AdjitError, match=r"argnums 1 for 'objective' .* is not one of "
                                               r"the parameters before \*data"):
        adjit.grad(objective, argnums=1)
    j = adjit.jvp(objective)

    @njit
    def without_tangent():
        return j()

    with pytest.raises(Exception, match=r"called with 0 argument\(s\) from @njit code"):
        without_tangent()


integrated_grad = adjit.grad(integrated)
integrated_jvp = adjit.jvp(integrated)
integrated_vjp = adjit.vjp(integrated)
objective_value_and_grad = adjit.value_and_grad(objective)


@njit
def star_calls(theta, d0, d1, y0, a, b, c, d):
    # as numba code calls an objective fun(x, *args): the values one by one
    return (objective_value_and_grad(theta, d0, d1), objective_value_and_grad(theta, d0),
            objective_value_and_grad(theta), integrated_grad(y0, a, b, c, d),
            integrated_jvp(y0, a, b, c, d, np.array([1.0, 0.0])),
            integrated_vjp(y0, a, b, c, d, 2.0))


def test_star_args_from_njit_code_as_from_python():
    theta = np.array([0.5, -1.0, 2.0])
    d0, d1 = np.array([1.0, 0.0, 1.0]), np.array([0.0, -2.0, 3.0])
    y0, args = np.array([1.0, 0.5]), (1.1, 0.4, 0.1, 0.4)
    got = star_calls(theta, d0, d1, y0, *args)
    want = (objective_value_and_grad(theta, d0, d1), objective_value_and_grad(theta, d0),
            objective_value_and_grad(theta), integrated_grad(y0, *args),
            integrated_jvp(y0, *args, np.array([1.0, 0.0])), integrated_vjp(y0, *args, 2.0))
    for k, (g, w) in enumerate(zip(got, want)):
        for gk, wk in zip(g if isinstance(g, tuple) else (g,), w if isinstance(w, tuple)
                          else (w,)):
            np.testing.assert_array_equal(gk, wk, err_msg=f"call {k}")
    np.testing.assert_allclose(got[3], fd_grad(njit(integrated), (y0,) + args, 0), rtol=1e-6)


Params = namedtuple("Params", ["a", "b"])


def uses_named(x, p):
    return p.a * x + p.b


def nested(x, p):
    (a, b), c = p
    return a * x + b * c


def by_setting(x, *args):
    if args[0] == "sum":
        return np.sum(x ** 2) * args[1]
    return np.sum(x ** 3) * args[1]


def weighted_pair(p, x, y):
    return p[0] * np.sum(x ** 2 * y)


def scaled(x, *args):
    return x * args[0]


def count_only(x, n):
    k, m = n
    return x * k * m


weights_jvp = adjit.jvp(weighted, argnums=1)


@njit
def directional(x, w, t):
    return weights_jvp(x, w, t)


weights_hvp = adjit.hvp(weighted, argnums=1)


@njit
def curvature(x, w, v):
    return weights_hvp(x, w, v)


@pytest.mark.parametrize("call, message", [
    (lambda: adjit.grad(uses_named)(1.0, Params(1.0, "fast")),
     "argument 'p' is a tuple holding unicode"),
    (lambda: adjit.grad(nested)(1.0, ((1.0, None), 3.0)), "argument 'p' is a tuple holding none"),
    (lambda: adjit.grad(count_only, argnums=1)(1.0, (2, 3)),
     "argument 'n' in argnums is UniTuple\\(int64 x 2\\), which carries no derivative"),
    (lambda: adjit.grad(uses_named)(1.0, (1.0, "fast")), "argument 'p' is a tuple holding"),
    (lambda: adjit.hessian(weighted, argnums=1)(np.ones(3), (1.0, 2.0, 3.0)),
     "argument 'w' is a tuple, which hessian does not take"),
    (lambda: adjit.hessian(nested)(1.0, ((1.0, 2.0), 3.0)),
     "hessian of a function whose argument 'p' holds a tuple"),
    # a string among *args: as grad says (hessian said "the constant 'sum' is not supported")
    (lambda: adjit.hessian(by_setting)(np.ones(3), "sum", 2.0),
     "argument 'args' is a tuple holding unicode_type"),
    (lambda: adjit.grad(by_setting)(np.ones(3), "sum", 2.0),
     "argument 'args' is a tuple holding unicode_type"),
    # an array result, at the user's `def` (it named adjit's generated function of the
    # elements, `<adjit-1:scaled>`, and blamed reverse mode over the jvp)
    (lambda: adjit.hessian(scaled)(np.ones(3), 2.0),
     r"'scaled' \(.*test_tuple_args.py, line \d+\): hessian of a function that returns an "
     "array. hessian needs a scalar float result"),
    (lambda: adjit.hvp(scaled)(np.ones(3), 2.0, np.ones(3)),
     r"'scaled' \(.*test_tuple_args.py, line \d+\): hvp of a function that returns an array"),
    # the user's argnums, not those of the function of the tuple's elements (2, 3)
    (lambda: adjit.hvp(weighted_pair, argnums=(1, 2))((1.0, 2.0), np.ones(3), np.ones(3),
                                                       np.ones(3)),
     r"'weighted_pair' \(.*test_tuple_args.py, line \d+\): hvp with argnums=\(1, 2\) called "
     r"with a vector of type array"),
    # from @njit code as from Python (it said "reverse mode over its jvp refuses this")
    (lambda: curvature(np.ones(3), (1.0, 2.0, 3.0), (1.0, 0.0, 0.0)),
     "argument 'w' is a tuple, which hvp does not take"),
    (lambda: directional(np.ones(3), (1.0, 2.0, 3.0), (1.0, 0.0)),
     "the tangent of w is a tuple of 2 where w is a tuple of 3"),
    (lambda: directional(np.ones(3), (1.0, 2.0, 3.0), (1.0, 0.0, np.ones(2))),
     r"the tangent of w\[2\] is array\(float64, 1d, C\) where w\[2\] is a number"),
])
def test_what_is_not_taken_is_refused_by_name(call, message):
    # (from @njit code numba reports the AdjitError inside its typing error)
    with pytest.raises(Exception, match=message) as info:
        call()
    assert isinstance(info.value, adjit.AdjitError) or "AdjitError" in str(info.value)
    assert "tests/test_tuple_args.py" in str(info.value) or \
        "test_tuple_args.py" in str(info.value)


# derivatives with tuple arguments called from @njit code: a training loop written in numba,
# parameters held in a tuple (numba code has no dicts or classes to hold them)
def regression_loss(params, X, y):
    (W1, b1), (W2, b2) = params
    h = np.tanh(X @ W1 + b1)
    out = h @ W2 + b2
    return np.mean((out[:, 0] - y) ** 2)


regression_value_and_grad = adjit.value_and_grad(regression_loss)


@njit
def train(params, X, y, rate, steps):
    losses = np.empty(steps)
    for s in range(steps):
        loss, grads = regression_value_and_grad(params, X, y)
        (gW1, gb1), (gW2, gb2) = grads
        (W1, b1), (W2, b2) = params
        params = ((W1 - rate * gW1, b1 - rate * gb1), (W2 - rate * gW2, b2 - rate * gb2))
        losses[s] = loss
    return params, losses


def _mlp_params(rng):
    return ((rng.normal(size=(3, 5)) * 0.5, np.zeros(5)), (rng.normal(size=(5, 1)) * 0.5,
                                                           np.zeros(1)))


def test_a_training_loop_in_njit_code_with_a_parameter_tuple():
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(20, 3)), rng.normal(size=20)
    params = _mlp_params(rng)
    # the first step from @njit code is the gradient from Python, to the bit
    value, grads = regression_value_and_grad(params, X, y)
    (W1, b1), (W2, b2) = params
    (gW1, gb1), (gW2, gb2) = grads
    stepped, losses = train(params, X, y, 0.1, 1)
    assert losses[0] == value
    np.testing.assert_array_equal(stepped[0][0], W1 - 0.1 * gW1)
    np.testing.assert_array_equal(stepped[1][1], b2 - 0.1 * gb2)
    # the gradient against finite differences of numba's compile, element by element
    forward = njit(regression_loss)
    for (i, j), g in ((((0, 0), gW1)), (((0, 1), gb1)), (((1, 0), gW2))):
        def moved(a, i=i, j=j):
            p = [list(t) for t in params]
            p[i][j] = a
            return forward(tuple(tuple(t) for t in p), X, y)
        np.testing.assert_allclose(g, fd_grad(moved, (params[i][j],), 0), rtol=1e-6,
                                   atol=1e-9)
    # and the loop trains
    _, losses = train(params, X, y, 0.1, 50)
    assert losses[-1] < 0.8 * losses[0]


Physics = namedtuple("Physics", "k damping n")


def spring_energy(x, phys):
    e = 0.0
    for i in range(phys.n):
        e += 0.5 * phys.k * x[i] ** 2 + phys.damping * x[i]
    return e


@njit
def every_derivative(x, phys, t, c):
    both = spring_dx_dphys(x, phys)
    return (both, spring_value_and_grad(x, phys), spring_vjp(x, phys, c),
            spring_jvp(x, phys, t))


spring_dx_dphys = adjit.grad(spring_energy, argnums=(0, 1))
spring_value_and_grad = adjit.value_and_grad(spring_energy, argnums=1)
spring_vjp = adjit.vjp(spring_energy, argnums=1)
spring_jvp = adjit.jvp(spring_energy, argnums=(0, 1))


def test_named_tuples_from_njit_code_as_from_python():
    # each mode from @njit code gives what it gives from Python: a named tuple of the class
    # for the named tuple's gradient, the integer field's zero of its type
    x, phys = np.array([0.5, -1.0, 2.0]), Physics(2.0, 0.3, 3)
    t = (np.array([1.0, 0.0, -1.0]), Physics(0.5, 1.0, 0))
    got = every_derivative(x, phys, t, 2.0)
    want = (spring_dx_dphys(x, phys), spring_value_and_grad(x, phys),
            spring_vjp(x, phys, 2.0), spring_jvp(x, phys, t))
    (gx, gp), (v, gp2), (v3, gp3), (v4, t4) = got
    np.testing.assert_array_equal(gx, want[0][0])
    assert type(gp) is Physics and gp == want[0][1] and type(gp.n) is int and gp.n == 0
    assert (v, gp2) == want[1] and type(gp2) is Physics
    assert (v3, gp3) == want[2] and (v4, t4) == want[3]
    forward = njit(spring_energy)
    assert gp.k == pytest.approx(fd_grad(lambda k: forward(x, Physics(k, 0.3, 3)), (2.0,), 0),
                                 rel=1e-7)
    assert gp.damping == pytest.approx(np.sum(x))
    assert t4 == pytest.approx(np.dot(gx, t[0]) + gp.k * 0.5 + gp.damping * 1.0, rel=1e-12)


def test_a_tuple_outside_argnums_from_njit_code():
    @njit
    def caller(x, w):
        return x_grad(x, w)

    x_grad = adjit.grad(weighted, argnums=0)
    x, w = np.array([1.0, 2.0, 3.0]), (0.5, -1.0, 2.0)
    np.testing.assert_array_equal(caller(x, w), x_grad(x, w))
    np.testing.assert_allclose(caller(x, w), fd_grad(njit(weighted), (x, w), 0), rtol=1e-7)


def test_successive_calls_with_tuples_of_other_lengths_and_types():
    # the derivative kept for the last call's Python types is not reused for a tuple of
    # another length or element types (its elements are other arguments: a TypeError was
    # raised where a new derivative was due)
    g = adjit.value_and_grad(objective)
    theta, d = np.array([0.5, -1.0, 2.0]), np.array([1.0, 0.0, 1.0])
    for given in [(d, d), (d,), (d, d), (), (d, d, d)]:
        value, grad = g(theta, *given)
        assert value == pytest.approx(objective(theta, *given), rel=1e-14)
        np.testing.assert_allclose(grad, 2 * len(given) * (theta - d), rtol=1e-14)
    h = adjit.grad(weighted, argnums=(0, 1))
    x = np.array([1.0, 2.0, 3.0])
    for w in [(1.0, 2.0), (1.0, 2.0, 3.0), (1.0, 2.0)]:
        gx, gw = h(x, w)
        assert len(gw) == len(w)
        np.testing.assert_allclose(gx, fd_grad(njit(weighted), (x, w), 0), rtol=1e-7)
    # an element of another type: its own derivative (an integer's gradient is its zero)
    u = adjit.grad(scaled_sum, argnums=1)
    for p in [(2.0, 3.0), (2.0, 3), (2.0, 3.0)]:
        gp = u(x, p)
        assert gp[0] == pytest.approx(3.0 * np.sum(x)) and type(gp[1]) is type(p[1])
        assert gp[1] == (np.sum(x) * 2.0 if isinstance(p[1], float) else 0)


def scaled_sum(x, p):
    a, n = p
    return a * n * np.sum(x)


def test_argnums_out_of_parameter_order_with_a_tuple_argument():
    # argnums=(1, 0): the gradients in argnums order. The split function returned them in
    # parameter order, so x got the tuple's gradient and the tuple x's (a plausible wrong
    # answer, from Python and from @njit code alike)
    x, p = np.array([1.0, 2.0, 3.0]), (2.0, (0.5, 3))
    forward = njit(scaled_pair)
    gx, gp = adjit.grad(scaled_pair, argnums=(1, 0))(p, x)
    np.testing.assert_allclose(gx, fd_grad(forward, (p, x), 1), rtol=1e-7)
    assert gp[0] == pytest.approx(fd_grad(lambda a: forward((a, (0.5, 3)), x), (2.0,), 0))
    assert gp[1][0] == pytest.approx(np.sum(x) * 3) and gp[1][1] == 0
    rg, rp = adjit.grad(scaled_pair, argnums=(0, 1))(p, x)
    np.testing.assert_array_equal(rg[0], gp[0])
    np.testing.assert_array_equal(rp, gx)
    value, (gx2, gp2) = adjit.value_and_grad(scaled_pair, argnums=(1, 0))(p, x)
    np.testing.assert_array_equal(gx2, gx)
    assert gp2 == gp and value == forward(p, x)
    tangent = (np.ones(3), (1.0, (0.0, 0)))
    _, t = adjit.jvp(scaled_pair, argnums=(1, 0))(p, x, tangent)
    assert t == pytest.approx(np.sum(gx) + gp[0], rel=1e-12)
    g = adjit.grad(scaled_pair, argnums=(1, 0))

    @njit
    def caller(p, x):
        return g(p, x)

    cx, cp = caller(p, x)
    np.testing.assert_array_equal(cx, gx)
    assert cp == gp


def scaled_pair(p, x):
    a, (b, n) = p
    return np.sum(a * x * x) + b * n * np.sum(x)


def count_and_scale(x, p):
    n, s = p
    return n * s * np.sum(x)


def test_tangents_of_tuples_read_element_by_element():
    # a tangent given for an integer element in another shape than the element (it carries
    # no derivative) shifted the float elements after it: (7, 8) for n made s's tangent 8
    x = np.array([1.0, 2.0])
    j = adjit.jvp(count_and_scale, argnums=1)
    _, t = j(x, (2, 1.5), ((7, 8), 0.5))
    assert t == 2 * 0.5 * 3.0
    _, t2 = j(x, (2, 1.5), (0, 0.5))
    assert t2 == t


def mixed_scale(s, p):
    return s * p[0] + p[1]


def test_from_njit_code_a_plain_arguments_tangent_of_another_kind_is_refused():
    # beside a tuple argument in argnums, an array tangent for a float argument was taken
    # (numba broadcast it): refused as from Python
    j = adjit.jvp(mixed_scale, argnums=(0, 1))

    @njit
    def caller(s, p, t):
        return j(s, p, t)

    with pytest.raises(Exception, match=r"the tangent of s is array\(float64, 1d, C\) where s "
                                        "is a number"):
        caller(1.5, (2.0, 3.0), (np.array([1.0, 2.0]), (0.0, 0.0)))
    assert caller(1.5, (2.0, 3.0), (1.0, (0.0, 1.0))) == j(1.5, (2.0, 3.0), (1.0, (0.0, 1.0)))


def int32_scaled(x, p):
    a, k = p
    return a * k * np.sum(x)


def test_an_integer_elements_zero_keeps_its_type_from_njit_code():
    g = adjit.grad(int32_scaled, argnums=1)

    @njit
    def caller(x, p):
        return g(x, p)

    x, p = np.ones(3), (2.0, np.int32(4))
    from_python, from_njit = g(x, p), caller(x, p)
    assert from_python == from_njit == (12.0, 0)
    assert type(from_python[1]) is np.int32
    # (numba returns every integer to Python as an int: the type inside compiled code)
    result = caller.nopython_signatures[0].return_type
    assert str(result[1]) == "int32", result


def test_a_tangent_tuple_of_another_length_than_argnums_is_refused():
    # (one direction too many was dropped without a word where an argument was split)
    j = adjit.jvp(mixed_scale, argnums=(0, 1))

    @njit
    def caller(s, p, t):
        return j(s, p, t)

    extra = (1.0, (0.0, 1.0), 5.0)
    with pytest.raises(adjit.AdjitError, match="the tangent is a tuple of 3 where 2 "
                                               "arguments are in argnums"):
        j(1.5, (2.0, 3.0), extra)
    with pytest.raises(Exception, match="where 2 arguments are in argnums"):
        caller(1.5, (2.0, 3.0), extra)


# second derivatives of functions taking tuples outside argnums: scipy.optimize's
# `minimize(fun, x0, args=(X, y, lam), jac=..., hess=...)` calls hess(x, *args)
def ridge4(w, *args):
    X, y, lam = args
    r = X @ w - y
    return 0.5 * np.sum(r * r) + 0.25 * lam * np.sum(w ** 4)


def tanh_fit(w, data, *, scale=1.0):
    X, y = data
    return scale * np.sum(np.tanh(X @ w - y) ** 2)


def cubic_named(x, p):
    return p.a * np.sum(x ** 3) + p.b * np.sum(x)


def _ridge4_hessian(w, X, y, lam):
    """By hand: X^T X + 3 lam diag(w^2)."""
    return X.T @ X + 3.0 * lam * np.diag(w ** 2)


def test_second_derivatives_with_star_args_and_tuples():
    rng = np.random.default_rng(4)
    X, y, w, v = rng.normal(size=(6, 3)), rng.normal(size=6), rng.normal(size=3), \
        rng.normal(size=3)
    want = _ridge4_hessian(w, X, y, 0.3)
    H = adjit.hessian(ridge4)(w, X, y, 0.3)
    np.testing.assert_allclose(H, want, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(adjit.hvp(ridge4)(w, X, y, 0.3, v), want @ v, rtol=1e-13,
                               atol=1e-13)
    g, hv = adjit.jvp(adjit.grad(ridge4))(w, X, y, 0.3, v)
    np.testing.assert_allclose(g, adjit.grad(ridge4)(w, X, y, 0.3), rtol=1e-15)
    np.testing.assert_allclose(hv, want @ v, rtol=1e-13, atol=1e-13)
    # a tuple parameter and a keyword-only one: against central differences of the gradient
    H2 = adjit.hessian(tanh_fit)(w, (X, y), scale=2.0)
    grad = adjit.grad(tanh_fit)
    fd = np.array([fd_grad(lambda w_, X_, y_: grad(w_, (X_, y_), scale=2.0)[i], (w, X, y), 0)
                   for i in range(3)])
    np.testing.assert_allclose(H2, fd, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(H2, H2.T, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(adjit.hvp(tanh_fit)(w, (X, y), v, scale=2.0), H2 @ v,
                               rtol=1e-12, atol=1e-13)
    # tuples held by an argument of its own (w[k] by a loop index, len), a named tuple
    np.testing.assert_array_equal(adjit.hessian(weighted)(np.ones(3), (1.5, -0.5, 2.5)),
                                  np.diag([3.0, -1.0, 5.0]))
    np.testing.assert_allclose(adjit.hessian(uses_named)(1.5, Params(2.0, 3.0)), 0.0)
    np.testing.assert_allclose(adjit.hessian(cubic_named)(w, Params(2.0, 3.0)),
                               np.diag(12.0 * w), rtol=1e-15)


def test_hvp_in_scipys_hessp_order_is_refused_with_the_order_to_use():
    """scipy.optimize calls hessp(x, p, *args); hvp takes the vector last."""
    rng = np.random.default_rng(6)
    X, y, w = rng.normal(size=(6, 3)), rng.normal(size=6), rng.normal(size=3)
    with pytest.raises(adjit.AdjitError, match=r"hessp=lambda x, p, \*args: h\(x, \*args, p\)"):
        adjit.hvp(ridge4)(w, w, X, y, 0.3)
    h = adjit.hvp(ridge4)
    hessp = lambda x, p, *args: h(x, *args, p)      # noqa: E731 - as a user writes it
    np.testing.assert_allclose(hessp(w, w, X, y, 0.3), _ridge4_hessian(w, X, y, 0.3) @ w,
                               rtol=1e-13, atol=1e-13)


ridge4_hessian = adjit.hessian(ridge4)
ridge4_hvp = adjit.hvp(ridge4)


@njit
def newton_direction(w, X, y, lam):
    # as numba code calls them: the values after w one by one, the vector last
    return np.linalg.solve(ridge4_hessian(w, X, y, lam), w), ridge4_hvp(w, X, y, lam, w)


def test_second_derivatives_with_star_args_from_njit_code():
    rng = np.random.default_rng(5)
    X, y, w = rng.normal(size=(6, 3)), rng.normal(size=6), rng.normal(size=3)
    step, hv = newton_direction(w, X, y, 0.3)
    want = _ridge4_hessian(w, X, y, 0.3)
    np.testing.assert_allclose(step, np.linalg.solve(want, w), rtol=1e-12)
    np.testing.assert_allclose(hv, want @ w, rtol=1e-13, atol=1e-13)


# parameter and function names that the generated function of the elements uses too
def named_like_the_helper(x, _f, *args):
    return _f * np.sum(x ** 3) + args[0] * x[0] * x[1]


def _f(x, *args):
    return args[0] * np.sum(x ** 3)


def _elements(_elements, *args):
    return args[0] * np.sum(_elements ** 3)


def test_second_derivatives_with_tuples_whatever_the_names():
    """The generated function's names (the user's function, the entry, a named tuple's
    class) are chosen apart from the user's parameters and function name (a review found
    `_f` refused as an unknown call, a function named `_f` called recursive, a parameter
    named `_elements` an InternalError)."""
    x = np.array([0.3, -0.7, 1.1])
    np.testing.assert_allclose(adjit.hessian(named_like_the_helper)(x, 2.0, 5.0),
                               np.diag(12.0 * x) + 5.0 * np.array([[0, 1, 0], [1, 0, 0],
                                                                   [0, 0, 0]]), rtol=1e-15)
    np.testing.assert_allclose(adjit.hessian(_f)(x, 2.0), np.diag(12.0 * x), rtol=1e-15)
    np.testing.assert_allclose(adjit.hessian(_elements)(x, 2.0), np.diag(12.0 * x),
                               rtol=1e-15)
