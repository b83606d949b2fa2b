"""Nested `def`s and lambdas, as numba code defines and calls them: a residual closing over
the data, an integrator whose steps call a right-hand side closing over a rate, a closure
writing into the enclosing function's array, a lambda, late binding (the value a name holds
at the call). Every value is checked against numba's own compile and every gradient
against central differences of it."""
import math

import numpy as np
import pytest
from numba import njit

import adjit
from adjit import AdjitError
from fd import check_value_and_grad


def least_squares(p, t, y):
    def model(s):
        return p[0] * math.exp(-p[1] * s)

    def residual(i):
        return y[i] - model(t[i])
    total = 0.0
    for i in range(t.shape[0]):
        r = residual(i)
        total += r * r
    return 0.5 * total


def integrate(y0, rate):
    def rhs(y):
        return -rate * y * y

    def step(y, h):
        k1 = rhs(y)
        k2 = rhs(y + 0.5 * h * k1)
        return y + h * k2
    y = y0
    for i in range(20):
        y = step(y, 0.05)
    return y


def fills_outer_array(x, w):
    out = np.empty_like(x)

    def fill(i):
        out[i] = w * x[i] ** 2
    for i in range(x.shape[0]):
        fill(i)
    return out.sum()


def lambda_of_a_parameter(x, k):
    sq = lambda t: k * t * t       # noqa: E731 (as numba code writes it)
    return sq(x[0]) + sq(x[1]) * sq(x[2])


def late_binding(x):
    a = 1.0

    def g(t):
        return a * t * t
    first = g(x[0])
    a = x[1]
    return first + g(x[2])


def array_helper(x, scale):
    def norm2(v):
        return np.sum(v * v) * scale
    return norm2(x) + norm2(x[1:])


def with_default(x):
    def power(t, n=3):
        return t ** n
    return power(x[0]) + power(x[1], 2)


def reads_nonlocals(x, r):
    """FinancePy's bjerksund_stensland_value: a closure declaring `nonlocal r, q` that it
    only reads, after the enclosing function swapped them."""
    q = x[0]
    if r > 0.0:
        r, q = q, r - q

    def phi(t, gamma):
        nonlocal r, q
        return math.exp(-r * t) * t ** gamma + q * t
    return phi(x[1], 2.0) + phi(x[2], 0.5)


def _writes_a_nonlocal(x):
    s = 0.0

    def add(t):
        nonlocal s
        s = s + t
    add(x[0])
    return s


RNG = np.random.default_rng(8)
T = np.linspace(0.0, 2.0, 9)
Y = 1.3 * np.exp(-0.7 * T) + 0.01 * RNG.normal(size=T.size)
X = RNG.uniform(0.5, 1.5, 4)

CASES = {
    "least_squares": (least_squares, (np.array([1.1, 0.5]), T, Y), 0),
    "integrate": (integrate, (1.2, 0.4), (0, 1)),
    "fills_outer_array": (fills_outer_array, (X, 0.3), (0, 1)),
    "lambda_of_a_parameter": (lambda_of_a_parameter, (X, 1.5), (0, 1)),
    "late_binding": (late_binding, (X,), 0),
    "array_helper": (array_helper, (X, 2.0), (0, 1)),
    "with_default": (with_default, (X,), 0),
    "reads_nonlocals": (reads_nonlocals, (X, 0.4), (0, 1)),
    "reads_nonlocals_unswapped": (reads_nonlocals, (X, -0.4), (0, 1)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_nested_function_matches_numba_and_finite_differences(name):
    f, args, argnums = CASES[name]
    check_value_and_grad(f, args, argnums)


def test_late_binding_reads_the_value_at_the_call():
    g = adjit.grad(late_binding)(X)
    # first = x0^2, then a = x1: x1 * x2^2
    np.testing.assert_allclose(g, [2 * X[0], X[2] ** 2, 2 * X[1] * X[2], 0.0], rtol=1e-12)


def test_forward_mode_through_a_closure():
    t = np.array([0.3, -0.2])
    args = (np.array([1.1, 0.5]), T, Y)
    value, tangent = adjit.jvp(least_squares)(*args, t)
    assert tangent == pytest.approx(np.dot(adjit.grad(least_squares)(*args), t), rel=1e-10)


def _defined_in_a_loop(x):
    s = 0.0
    for i in range(3):
        def g(t):
            return t * i
        s += g(x[i])
    return s


def _returned(x):
    def g(t):
        return t * x[0]
    h = g
    return h(x[1])


def _both_names(x):
    def g(t):
        return t * t
    g = 2.0
    return g * x[0]


@pytest.mark.parametrize("f, words", [
    (_defined_in_a_loop, "inside a loop or a branch"),
    (_returned, "used other than by calling it"),
    (_both_names, "also assigned"),
    (_writes_a_nonlocal, "a `nonlocal` statement is not supported"),
])
def test_nested_functions_adjit_cannot_take_are_refused_by_name(f, words):
    with pytest.raises(AdjitError) as info:
        adjit.grad(f)(X)
    assert words in str(info.value)
    assert f.__name__ in str(info.value)


def with_a_comprehension(x, y):
    top = max([abs(e) + 1.0 for e in x])
    sq = lambda t: t * t * y       # noqa: E731
    return sq(y) + sq(np.min(x[1:])) + top


def test_a_lambda_beside_a_comprehension():
    check_value_and_grad(with_a_comprehension, (X, 0.5), (0, 1))


@njit
def _rolling_apply(a, window, apply_func, *args):
    """vectorbt's rolling_apply_nb: a window function passed in, its extra arguments after."""
    out = np.full(a.shape[0], np.nan)
    for i in range(window - 1, a.shape[0]):
        out[i] = apply_func(a[i + 1 - window:i + 1], *args)
    return out


@njit
def _rolling_scaled_rms(a, window, k):
    """vectorbt's rolling_sharpe_ratio_nb shape: a nested function that reads nothing of the
    enclosing one, passed to the apply helper with its arguments."""
    def _apply_func(w, _k):
        return _k * np.sqrt(np.mean(w * w))
    return _rolling_apply(a, window, _apply_func, k)


def _rolling_loss(a, k):
    return np.nansum(_rolling_scaled_rms(a, 3, k) ** 2)


def test_a_nested_function_reading_nothing_passed_to_a_helper():
    """(it was refused as used other than by calling it; one that reads the enclosing
    function's names still is, above, the message naming them)"""
    check_value_and_grad(_rolling_loss, (np.linspace(1.0, 2.0, 8), 2.0), (0, 1))
    with pytest.raises(AdjitError, match="reads the enclosing function's `x`"):
        adjit.grad(_returned)(X)


_triple, _quintuple = lambda x: x * 3.0 + math.sin(x), lambda x: x * 5.0 + math.sin(x)


def test_a_lambda_differentiated_as_jax_users_write_it():
    """`grad(lambda x: ...)`: the lambda's source is read from its line (the one lambda of
    its parameters there, or the one the columns of its code point at); its enclosing
    function's names are read as a nested function's. It was refused outright (and the
    README's custom-rule example wrote one)."""
    a, b = 2.0, 3.0
    g = adjit.grad(lambda x: np.sum(x ** 2) * a + b * x[0])(X)
    np.testing.assert_allclose(g, 2 * a * X + b * (np.arange(X.size) == 0), rtol=1e-14)
    assert adjit.grad(_triple)(0.5) == 3.0 + math.cos(0.5)
    assert adjit.grad(_quintuple)(0.5) == 5.0 + math.cos(0.5)
    value, (gx, gy) = adjit.value_and_grad(lambda x, y: x * y + math.exp(x),
                                           argnums=(0, 1))(0.5, 2.0)
    assert (gx, gy) == (2.0 + math.exp(0.5), 0.5)
    spread = (lambda v:
              np.sum(np.sin(v) * v))
    check_value_and_grad(spread, (X,), 0)
