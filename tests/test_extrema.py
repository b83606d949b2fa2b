"""Loops that find a largest or smallest value stop at the first NaN (codegen/extrema.py):
the same value as numpy's and numba's np.max / np.min to the bit (NaNs anywhere, ties of 0.0
and -0.0, infinities), gradients against finite differences of numba's forward, and the
loops left as they are where the rewrite would change what the program does."""
import ast
import math

import numba
import numpy as np
import pytest

import adjit
from adjit.codegen import extrema

from fd import fd_grad


def shifted_logsumexp(z, y):
    m = adjit.stop_gradient(np.max(z))
    return m + np.log(np.sum(np.exp(z - m))) - np.sum(y * z) + 0.0 * np.min(y)


def spread(x):
    return np.max(x * 2.0) - np.min(x) + np.amax(x * x)


def _values(n, seed):
    rng = np.random.default_rng(seed)
    return rng.normal(size=n)


CASES = {
    "plain": _values(300, 0),
    "nan first": np.concatenate(([np.nan], _values(9, 1))),
    "nan middle": np.concatenate((_values(5, 2), [np.nan], _values(5, 3), [-np.nan])),
    "nan last": np.concatenate((_values(7, 4), [np.nan])),
    "zeros": np.array([-0.0, 0.0, -0.0]),
    "zeros the other way": np.array([0.0, -0.0, -1.0]),
    "infinities": np.array([-np.inf, -np.inf]),
    "one": np.array([2.5]),
    # long arrays, where the order keys' loop decides (a tie of the largest value, a largest
    # value of zero met as -0.0 first, a NaN after 1000 elements)
    "long ties": np.concatenate((_values(500, 7), [9.5], _values(500, 8), [9.5])),
    "long zeros": np.concatenate((-np.abs(_values(600, 9)), [-0.0, 0.0, -0.0])),
    "long nan": np.concatenate((_values(1000, 10), [np.nan], _values(10, 11))),
    "negative infinity only": np.full(1000, -np.inf),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_value_equals_numbas_to_the_bit(case):
    x = CASES[case]
    y = np.linspace(0.1, 1.0, x.size)

    def extremes(x, y):
        return np.max(x) + 2.0 * np.min(x * y) + np.amax(y)
    compiled = numba.njit(extremes)
    value = adjit.value_and_grad(extremes)(x, y)[0]
    expected = compiled(x, y)
    assert np.array_equal(np.float64(value).view(np.int64), np.float64(expected).view(np.int64)) \
        or (math.isnan(value) and math.isnan(expected))
    # the sign of a zero: the first of the ties, as numpy's (a largest value with a derivative
    # through it is the mean of the tied values plus their differences: -0.0 + 0.0 is 0.0)
    top = numba.njit(largest)(x, 1.0)
    got = adjit.value_and_grad(largest, argnums=1)(x, 1.0)[0]
    assert got == top or (math.isnan(got) and math.isnan(top))
    assert math.copysign(1.0, got) == math.copysign(1.0, top)


def _int_extremes(k, x):
    return np.max(k) * x[0] + np.min(k) * x[1] + np.max(k > 3) * x[2]


def test_integer_and_float32_extremes_equal_numbas():
    # (numba types each assignment of the running value apart: an integer element is keyed
    # as the float64 it is compared as)
    k = np.array([3, -1, 7, 7, 0, 2] * 50)
    x = np.linspace(-1.0, 1.0, 10)
    value, g = adjit.value_and_grad(_int_extremes, argnums=1)(k, x)
    assert value == numba.njit(_int_extremes)(k, x)
    np.testing.assert_array_equal(g[:3], [7.0, -1.0, 1.0])
    f32 = _values(1001, 12).astype(np.float32)
    f32[500] = 40.0
    y = np.linspace(0.1, 1.0, f32.size)

    def extremes(x, y):
        return np.max(x) + 2.0 * np.min(x * y)
    assert adjit.value_and_grad(extremes)(f32, y)[0] == numba.njit(extremes)(f32, y)
    code = adjit.value_and_grad(extremes).specialize(
        (numba.typeof(f32), numba.typeof(y))).source
    assert "vec.order_key" in code           # the loop of order keys, then the exact one


def largest(x, w):
    return adjit.stop_gradient(np.max(x)) * w


def test_the_loop_stops_at_a_nan_and_the_gradient_is_exact():
    g = adjit.grad(shifted_logsumexp)
    z = np.random.default_rng(5).normal(size=50)
    y = np.full(50, 1.0 / 50)
    got = g(z, y)
    code = "\n".join(ln for ln in g.source.splitlines() if not ln.strip().startswith("#"))
    assert "break" in code and "vec.nanmax" not in code
    compiled = numba.njit(shifted_logsumexp)
    np.testing.assert_allclose(got, fd_grad(compiled, (z, y), 0), rtol=1e-6, atol=1e-9)
    off = adjit.grad(shifted_logsumexp, vector_math=False)(z, y)
    np.testing.assert_allclose(got, off, rtol=1e-13, atol=1e-16)


def test_max_and_min_with_a_gradient_through_them():
    x = np.random.default_rng(6).normal(size=40)
    value, g = adjit.value_and_grad(spread)(x)
    compiled = numba.njit(spread)
    assert value == compiled(x)
    np.testing.assert_allclose(g, fd_grad(compiled, (x,), 0), rtol=1e-6, atol=1e-8)


def _function(text):
    fn = ast.parse(text).body[0]
    extrema.rewrite(fn)
    return ast.unparse(ast.fix_missing_locations(fn))


def test_which_loops_are_rewritten():
    plain = _function("def f(x, n):\n    r = -1e309\n    for i in range(n):\n"
                      "        r = vec.nanmax(r, x[i] * 2.0)\n    return r")
    assert "break" in plain and "_v1 > r" in plain
    assert "_vk1 = max(_vk1, vec.order_key(_v1))" in plain and "_vn1 |= _v1 != _v1" in plain
    smallest = _function("def f(x, n):\n    r = 1e309\n    for i in range(n):\n"
                         "        r = vec.nanmin(r, x[i])\n    return r")
    assert "_v1 < r" in smallest and "min(_vk1, vec.order_key(_v1))" in smallest
    for text in (
            # the index read after the loop: it would stop at the NaN's
            "def f(x, n):\n    r = -1e309\n    for i in range(n):\n"
            "        r = vec.nanmax(r, x[i])\n    return r + i",
            # a call in the element (it might have an effect the loop would skip)
            "def f(x, n):\n    r = -1e309\n    for i in range(n):\n"
            "        r = vec.nanmax(r, g(x[i]))\n    return r",
            # more than the one statement
            "def f(x, n):\n    r = -1e309\n    for i in range(n):\n"
            "        r = vec.nanmax(r, x[i])\n        y[i] = r\n    return r",
            # an integer division (numba checks its divisor)
            "def f(x, n):\n    r = -1e309\n    for i in range(n):\n"
            "        r = vec.nanmax(r, x[i // 2])\n    return r",
            # the element reads the running value
            "def f(x, n):\n    r = -1e309\n    for i in range(n):\n"
            "        r = vec.nanmax(r, x[i] - r)\n    return r"):
        assert "break" not in _function(text), text
