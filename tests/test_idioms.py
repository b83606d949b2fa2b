"""Idioms of published numba code, written as their authors write them.

`T = type(x)` then `T(0.5)`: one body for float32 and float64 (the style of numba density
libraries). Every gradient is checked against central differences of numba's own compiled
forward (the same functions under @njit)."""
import math

import numpy as np
import pytest
from numba import njit

import adjit
from adjit import AdjitError
from fd import fd_grad

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


@njit
def _standardize(x, loc, scale):
    inv_scale = type(scale)(1) / scale
    z = np.empty_like(x)
    for i in range(len(x)):
        z[i] = (x[i] - loc) * inv_scale
    return z


@njit
def norm_logpdf(x, loc, scale):
    T = type(scale)
    z = _standardize(x, loc, scale)
    r = np.empty_like(z)
    for i in range(len(z)):
        r[i] = -T(0.5) * z[i] * z[i] - T(_LOG_SQRT_2PI) - np.log(scale)
    return r


def nll(params, x):
    return -np.sum(norm_logpdf(x, params[0], params[1]))


def element_typed_sum(x):
    T = type(x[0])
    s = T(0.0)
    for i in range(x.shape[0]):
        s += T(0.5) * x[i] * x[i] + type(s)(1) * x[i]
    return s


def integer_typed(x, n):
    k = type(n)(2.7)           # int(2.7): 2, as numba converts
    return x[0] * k + type(x[0])(n) * x[1]


X = np.random.default_rng(3).normal(1.0, 2.0, size=30)


def _check(f, args, k):
    compiled = njit(f)
    value, g = adjit.value_and_grad(f, argnums=k)(*args)
    assert value == pytest.approx(compiled(*args), rel=1e-12)
    np.testing.assert_allclose(g, fd_grad(compiled, args, k), rtol=1e-6, atol=1e-7)
    return g


def test_type_of_a_parameter_converts_constants_in_a_density():
    params = np.array([0.7, 1.9])
    g = _check(nll, (params, X), 0)
    mu, sigma = params
    assert g[0] == pytest.approx(-np.sum(X - mu) / sigma ** 2, rel=1e-12)
    assert g[1] == pytest.approx(X.size / sigma - np.sum((X - mu) ** 2) / sigma ** 3, rel=1e-12)


def test_type_of_an_element_follows_the_arrays_dtype():
    _check(element_typed_sum, (X[:7].copy(),), 0)
    x32 = X[:7].astype(np.float32)
    g = adjit.grad(element_typed_sum)(x32)
    value = adjit.value_and_grad(element_typed_sum)(x32)[0]
    assert value == njit(element_typed_sum)(x32)           # float32 arithmetic, as numba's
    np.testing.assert_allclose(g, x32 + 1.0, rtol=1e-6)


def test_an_integer_type_converts_without_derivative():
    x = np.array([0.4, -1.3])
    value, g = adjit.value_and_grad(integer_typed)(x, 3)
    assert value == njit(integer_typed)(x, 3) == pytest.approx(0.4 * 2 - 3.9)
    np.testing.assert_array_equal(g, [2.0, 3.0])


def _type_of_array(x):
    T = type(x)
    return T(1.0) * x[0]


def type_in_a_loop(x):
    s = 0.0
    for i in range(x.shape[0]):
        T = type(x[i])
        s += T(x[i]) * x[i]
    return s


def _type_in_branches(x, flag):
    if flag:
        T = type(x[0])
    else:
        T = type(flag)
    return T(1.0) * x[0]


def test_types_adjit_cannot_hold_are_refused_with_what_to_write():
    with pytest.raises(AdjitError, match=r"`type\(x\)` of an array.*type\(a\[0\]\)"):
        adjit.grad(_type_of_array)(X)
    with pytest.raises(AdjitError, match="a type assigned to `T`.*loop or branch"):
        adjit.grad(_type_in_branches)(X, True)


def test_a_type_bound_in_a_loop_body_is_used_there():
    _check(type_in_a_loop, (X[:5].copy(),), 0)
