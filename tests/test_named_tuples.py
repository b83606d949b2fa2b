"""Named tuples (collections.namedtuple), as numba code uses them for a model's parameters:
`p.alpha` in the function and in its @njit helpers, nested named tuples, one built in the
code (`Params(a, beta=b)`, defaults filled in), unpacked or indexed like any tuple. The
gradient with respect to a named tuple is a named tuple of its class (a zero of its type for
an integer field), as JAX gives it. Each case against numba's compile of the same function
(value) and central differences (tests/fd.py keeps the named tuple's class), and exactly
where the derivative is known."""
import re
from collections import namedtuple

import numba
import numpy as np
import pytest
from numba import njit

import adjit
from fd import fd_grad

LV = namedtuple("LV", ["alpha", "beta", "delta", "gamma"])
Model = namedtuple("Model", ["rates", "scale", "steps"])
Layer = namedtuple("Layer", "W b")
Net = namedtuple("Net", "hidden out")
Decay = namedtuple("Decay", ["k", "floor"])


def _close(got, want, rtol=1e-6, atol=1e-8):
    assert type(got) is type(want)
    for g, w in zip(got, want):
        if isinstance(w, tuple):
            _close(g, w, rtol, atol)
        else:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


@njit
def lotka_volterra(y, p):
    x, z = y[0], y[1]
    return np.array([p.alpha * x - p.beta * x * z, p.delta * x * z - p.gamma * z])


def lv_fit(y0, p, observed, h):
    y = y0.copy()
    loss = 0.0
    for k in range(observed.shape[0]):
        y = y + h * lotka_volterra(y, p)
        loss += np.sum((y - observed[k]) ** 2)
    return loss


def test_parameters_read_by_name_in_a_helper():
    y0 = np.array([1.0, 0.5])
    p = LV(1.1, 0.4, 0.1, 0.4)
    observed = np.abs(np.random.default_rng(0).normal(1.0, 0.2, size=(20, 2)))
    args = (y0, p, observed, 0.05)
    forward = njit(lv_fit)
    value, (gy, gp) = adjit.value_and_grad(lv_fit, argnums=(0, 1))(*args)
    assert value == pytest.approx(forward(*args), rel=1e-13)
    assert isinstance(gp, LV)
    np.testing.assert_allclose(gy, fd_grad(forward, args, 0), rtol=1e-6)
    _close(gp, fd_grad(forward, args, 1))


def decay_energy(x, m):
    s = 0.0
    for _ in range(m.steps):
        for i in range(x.shape[0]):
            s += m.scale * m.rates[i] * x[i] ** 2
        x = x * (1.0 - m.rates)
    return s + len(m)


def test_an_array_field_an_integer_field_and_len():
    m = Model(np.array([0.1, 0.2, 0.3]), 2.0, 4)
    x = np.array([1.0, -0.5, 2.0])
    forward = njit(decay_energy)
    value, g = adjit.value_and_grad(decay_energy, argnums=1)(x, m)
    assert value == pytest.approx(forward(x, m), rel=1e-13)
    assert isinstance(g, Model) and g.steps == 0 and type(g.steps) is int
    _close(g, fd_grad(forward, (x, m), 1))


@njit
def mlp(net, x):
    h = np.tanh(x @ net.hidden.W + net.hidden.b)
    return h @ net.out.W + net.out.b


def mlp_loss(net, x, y):
    r = mlp(net, x) - y
    return np.sum(r * r) + 0.1 * np.sum(net[0][0] ** 2)


def test_named_tuples_of_named_tuples():
    rng = np.random.default_rng(1)
    net = Net(Layer(rng.normal(size=(3, 4)), rng.normal(size=4)),
              Layer(rng.normal(size=(4, 2)), rng.normal(size=2)))
    x, y = rng.normal(size=(5, 3)), rng.normal(size=(5, 2))
    forward = njit(mlp_loss)
    value, g = adjit.value_and_grad(mlp_loss)(net, x, y)
    assert value == pytest.approx(forward(net, x, y), rel=1e-13)
    assert isinstance(g, Net) and isinstance(g.hidden, Layer)
    _close(g, fd_grad(forward, (net, x, y), 0))


def relax(x, k, floor):
    p = Decay(k, 0.0)
    q = Decay(k=2.0 * k, floor=floor)
    a, b = q
    return np.sum(p.k * x ** 2 + p.floor) + a * b + q[1] * p[0]


def test_a_named_tuple_built_in_the_code():
    x = np.array([0.5, 1.5])
    forward = njit(relax)
    value, (gx, gk, gf) = adjit.value_and_grad(relax, argnums=(0, 1, 2))(x, 0.7, 0.3)
    assert value == pytest.approx(forward(x, 0.7, 0.3), rel=1e-14)
    # exactly: k sum(x^2) + 2 k f + f k
    np.testing.assert_allclose(gx, 2 * 0.7 * x, rtol=1e-14)
    assert gk == pytest.approx(np.sum(x ** 2) + 3 * 0.3, rel=1e-14)
    assert gf == pytest.approx(3 * 0.7, rel=1e-14)


def test_jvp_takes_a_named_tuple_tangent():
    y0 = np.array([1.0, 0.5])
    p = LV(1.1, 0.4, 0.1, 0.4)
    observed = np.ones((5, 2))
    direction = LV(1.0, -0.5, 0.25, 2.0)
    out, t = adjit.jvp(lv_fit, argnums=1)(y0, p, observed, 0.05, direction)
    g = adjit.grad(lv_fit, argnums=1)(y0, p, observed, 0.05)
    assert t == pytest.approx(sum(a * b for a, b in zip(g, direction)), rel=1e-12)
    with pytest.raises(adjit.AdjitError, match="the tangent of p is a tuple of 3 where p is "
                                               "a tuple of 4"):
        adjit.jvp(lv_fit, argnums=1)(y0, p, observed, 0.05, (1.0, 0.0, 0.0))


def reads_a_method(x, p):
    q = p._replace(alpha=2.0)
    return q.alpha * x


def reads_a_missing_field(x, p):
    return p.epsilon * x


@pytest.mark.parametrize("fn, message", [
    (reads_a_missing_field, "the attribute `.epsilon` of a named tuple with the fields "
                            "alpha, beta, delta, gamma"),
    (reads_a_method, "the method call `._replace(...)` of a tuple"),
])
def test_what_is_not_taken_is_refused_by_name(fn, message):
    with pytest.raises(adjit.AdjitError, match=re.escape(message)):
        adjit.grad(fn)(1.5, LV(1.0, 2.0, 3.0, 4.0))


def test_from_njit_code_as_from_python():
    g = adjit.grad(lv_fit, argnums=(0, 1))

    @numba.njit
    def caller(y0, p, observed):
        return g(y0, p, observed, 0.05)

    args = (np.array([1.0, 0.5]), LV(1.1, 0.4, 0.1, 0.4), np.ones((3, 2)))
    (gy, gp), (wy, wp) = caller(*args), g(*args, 0.05)
    np.testing.assert_array_equal(gy, wy)
    assert type(gp) is LV and gp == wp


Pair = namedtuple("Pair", "a b")
Shifted = namedtuple("Shifted", ["k", "floor"], defaults=[0.5])


@njit
def make_pair(k):
    return Pair(k, 2.0 * k)


def from_a_helper(x, k):
    p = make_pair(k)
    s = 0.0
    for v in p:                 # a tuple's elements, looped over as numba unrolls them
        s += v
    return p.a * x * p.b + s


def test_a_named_tuple_returned_by_a_helper_and_looped_over():
    forward = njit(from_a_helper)
    value, (gx, gk) = adjit.value_and_grad(from_a_helper, argnums=(0, 1))(1.5, 2.0)
    assert value == pytest.approx(forward(1.5, 2.0), rel=1e-14)
    # exactly: 2 k^2 x + 3 k
    assert (gx, gk) == pytest.approx((2 * 2.0 ** 2, 4 * 2.0 * 1.5 + 3.0), rel=1e-14)


def with_a_default(x, k):
    p = Shifted(k)
    return p.k * x + p.floor


def test_a_field_left_to_its_default_as_python_fills_it():
    # (numba 0.68's own compile of Shifted(k) fails; Python's value is the reference)
    value, g = adjit.value_and_grad(with_a_default, argnums=(0, 1))(1.5, 2.0)
    assert value == with_a_default(1.5, 2.0) == 3.5
    assert g == (2.0, 1.5)
