"""NaN and inf propagate through gradients as the mathematics (and IEEE arithmetic) says;
nothing is silently zeroed. The table in docs/semantics.md lists the same cases."""
import math

import numpy as np
import pytest

from adjit import grad, stop_gradient, value_and_grad

nan, inf = float("nan"), float("inf")


def square(x):
    return x * x


def sum_squares(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    return s


def sqrt(x):
    return math.sqrt(x)


def exp(x):
    return math.exp(x)


def log(x):
    return math.log(x)


def tanh(x):
    return math.tanh(x)


def absolute(x):
    return abs(x)


def maximum(a, b):
    return max(a, b) * 2.0


def minimum(a, b):
    return min(a, b) * 2.0


def stopped(x, y):
    return x * stop_gradient(y)


def zero_times_overflow(x):
    return 0.0 * math.exp(x)


def same(a, b):
    """Equal as floats, NaN equal to NaN."""
    return (math.isnan(a) and math.isnan(b)) or a == b


CASES = [
    (square, (nan,), nan, nan),
    (sqrt, (0.0,), 0.0, inf),
    (sqrt, (inf,), inf, 0.0),
    (exp, (1000.0,), inf, inf),
    (log, (0.0,), -inf, inf),
    (tanh, (inf,), 1.0, 0.0),
    (tanh, (-inf,), -1.0, 0.0),
    (tanh, (nan,), nan, nan),
    (absolute, (-inf,), inf, -1.0),
    (absolute, (nan,), nan, nan),
    (zero_times_overflow, (1000.0,), nan, nan),
]


@pytest.mark.parametrize("f, args, value, gradient", CASES,
                         ids=[f"{c[0].__name__}{c[1]}" for c in CASES])
def test_nonfinite_scalar(f, args, value, gradient):
    v, g = value_and_grad(f)(*args)
    assert same(v, value) and same(g, gradient), (v, g)


def test_nan_element_stays_in_its_own_gradient():
    x = np.array([1.0, nan, 2.0])
    v, g = value_and_grad(sum_squares)(x)
    assert math.isnan(v)
    assert g[0] == 2.0 and math.isnan(g[1]) and g[2] == 4.0


@pytest.mark.parametrize("f", [maximum, minimum])
def test_min_max_adjoint_follows_the_value_with_nan(f):
    """max(1, nan) is 1 and max(nan, 1) is nan (Python and numba): either way the value
    came from the first argument, so its adjoint goes there."""
    g = value_and_grad(f, (0, 1))
    v, (ga, gb) = g(1.0, nan)
    assert (v, ga, gb) == (2.0, 2.0, 0.0)
    v, (ga, gb) = g(nan, 1.0)
    assert math.isnan(v) and (ga, gb) == (2.0, 0.0)


def test_min_max_adjoint_follows_the_value():
    assert grad(maximum, (0, 1))(1.0, 3.0) == (0.0, 2.0)
    assert grad(maximum, (0, 1))(3.0, 1.0) == (2.0, 0.0)
    assert grad(minimum, (0, 1))(1.0, 3.0) == (2.0, 0.0)
    assert grad(minimum, (0, 1))(3.0, 1.0) == (0.0, 2.0)


def test_stopped_nan_is_a_constant():
    gx, gy = grad(stopped, (0, 1))(2.0, nan)
    assert math.isnan(gx) and gy == 0.0


def missing_squares(pred, obs):
    return np.nansum((pred - obs) ** 2)


def missing_mean_abs(pred, obs):
    return np.nanmean(np.abs(pred - obs) * 2.0)


def missing_product(pred, obs):
    return np.nanprod(1.0 + 0.1 * pred * obs)


def missing_max(pred, obs):
    return np.nanmax(pred * obs) - np.nanmin(pred / obs)


def missing_steps(pred, obs):
    r = (pred - obs) ** 2
    r = np.nansum(r)        # (the name bound again from it: the expression fuses into the call)
    return r


def missing_kept(pred, obs):
    r = (pred - obs) ** 2
    total = np.nansum(r)
    return total + np.nanmax(r)     # (read by two statements: the array is made first)


MISSING = [missing_squares, missing_mean_abs, missing_product, missing_max, missing_steps]


@pytest.mark.parametrize("f", MISSING, ids=[f.__name__ for f in MISSING])
def test_nan_reductions_of_expressions_give_missing_elements_no_derivative(f):
    """A loss over observations with gaps (np.nansum((pred - obs) ** 2)): the function does
    not depend on a prediction whose observation is NaN, and its partial is 0 (it was 0 *
    NaN: NaN). The other partials are central differences'."""
    pred = np.array([1.0, 2.0, 3.0, -0.5])
    obs = np.array([1.5, nan, 2.0, 0.7])
    v, g = value_and_grad(f)(pred, obs)
    assert v == f(pred, obs)
    assert g[1] == 0.0
    h = 1e-6
    for i in (0, 2, 3):
        e = np.eye(4)[i] * h
        assert abs(g[i] - (f(pred + e, obs) - f(pred - e, obs)) / (2 * h)) < 1e-6


def test_an_array_made_before_a_nan_reduction_keeps_ieee_arithmetic():
    pred = np.array([1.0, 2.0, 3.0])
    obs = np.array([1.5, nan, 2.0])
    g = grad(missing_kept)(pred, obs)
    assert g[0] == -1.0 and math.isnan(g[1]) and g[2] == 4.0
