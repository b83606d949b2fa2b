"""A function that calls itself, as numba code writes it.

Finance code reflects a function about a point by calling it again: the normal CDF as
`1.0 - normcdf(-x)` below zero (FinancePy's normcdf, Hull's approximation, in countless
Black-Scholes codes), a Black price as `intrinsic + black(F, K, sigma, T, -q)` for the
in-the-money side (lets_be_rational). The second call takes the other branch and does not
recurse. numba compiles such functions; adjit repeats the body of a function that calls
itself (directly or through others) inline.RECURSION_DEPTH levels deep and puts a raise of
RecursionError where one more call would go: a recursion that goes deeper at run time (a
factorial of its data) raises that error from the gradient, never a wrong number.

Every gradient is checked against central differences of numba's own compile of the same
function (tests/fd.py), and against the analytic derivative where there is one."""
import math

import numpy as np
import pytest
from numba import float64, njit

import adjit
from adjit import AdjitError
from fd import check_value_and_grad, fd_jvp

INV_ROOT_2_PI = 0.3989422804014327


@njit(float64(float64), fastmath=True, cache=False)
def normcdf(x):
    """Hull's approximation of the normal CDF, reflected below zero (as FinancePy writes it:
    a signature, fastmath, and the reflection by a call)."""
    a1 = 0.319381530
    a2 = -0.356563782
    a3 = 1.781477937
    a4 = -1.821255978
    a5 = 1.330274429
    g = 0.2316419
    k = 1.0 / (1.0 + g * np.abs(x))
    k2 = k * k
    k3 = k2 * k
    k4 = k3 * k
    k5 = k4 * k
    if x >= 0.0:
        c = a1 * k + a2 * k2 + a3 * k3 + a4 * k4 + a5 * k5
        phi = 1.0 - c * np.exp(-x * x / 2.0) * INV_ROOT_2_PI
    else:
        phi = 1.0 - normcdf(-x)
    return phi


def bs_call(s, k, r, sigma, t):
    d1 = (math.log(s / k) + (r + 0.5 * sigma * sigma) * t) / (sigma * math.sqrt(t))
    d2 = d1 - sigma * math.sqrt(t)
    return s * normcdf(d1) - k * math.exp(-r * t) * normcdf(d2)


@njit
def norm_cdf_early(x):
    """The reflection first, as a guard clause."""
    if x < 0.0:
        return 1.0 - norm_cdf_early(-x)
    t = 1.0 / (1.0 + 0.2316419 * x)
    poly = ((((1.330274429 * t - 1.821255978) * t + 1.781477937) * t - 0.356563782) * t
            + 0.319381530) * t
    return 1.0 - math.exp(-0.5 * x * x) * INV_ROOT_2_PI * poly


@njit
def black(F, K, sigma, T, q):
    """A Black price with q = +1 for a call and -1 for a put, the in-the-money side by
    put-call parity through a call of itself (lets_be_rational's `black` writes it so)."""
    intrinsic = abs(max(K - F if q < 0 else F - K, 0.0))
    if q * (F - K) > 0:
        return intrinsic + black(F, K, sigma, T, -q)
    s = sigma * math.sqrt(T)
    d1 = math.log(F / K) / s + 0.5 * s
    d2 = d1 - s
    if q > 0:
        return F * norm_cdf_early(d1) - K * norm_cdf_early(d2)
    return K * norm_cdf_early(-d2) - F * norm_cdf_early(-d1)


def cdf_sum(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += normcdf(x[i]) * (i + 1.0)
    return s


@pytest.mark.parametrize("args", [
    (100.0, 110.0, 0.03, 0.2, 1.0),     # both d's negative: both calls reflect
    (100.0, 90.0, 0.03, 0.3, 0.5),      # both positive
    (100.0, 101.0, 0.0, 0.25, 0.1),     # one of each
])
def test_a_cdf_reflected_by_calling_itself(args):
    check_value_and_grad(bs_call, args, argnums=(0, 1, 2, 3, 4), rtol=1e-6, atol=1e-8)


def test_the_reflection_against_the_analytic_derivative():
    """d/dx (1 - Phi~(-x)) = Phi~'(-x): the same polynomial's derivative at -x."""
    d = adjit.grad(lambda x: normcdf(x))
    for x in (-2.0, -0.3, 0.7):
        h = 1e-7
        a = abs(x)
        fd = (normcdf.py_func(a + h) - normcdf.py_func(a - h)) / (2 * h)
        assert d(x) == pytest.approx(fd, rel=1e-6)


@pytest.mark.parametrize("F, K, q", [(100.0, 90.0, 1.0), (100.0, 90.0, -1.0),
                                     (100.0, 120.0, 1.0), (100.0, 120.0, -1.0)])
def test_a_price_through_parity_by_calling_itself(F, K, q):
    check_value_and_grad(black, (F, K, 0.3, 0.75, q), argnums=(0, 1, 2, 3))


def test_in_a_loop_over_an_array_and_forward_mode():
    # (not at 0, where np.abs's derivative is 0 by adjit's convention, docs/semantics.md:
    # this approximation's own derivative there is 0.399 from either side)
    x = np.array([-1.3, 0.4, -0.2, 2.1, 0.6])
    check_value_and_grad(cdf_sum, (x,))
    u = np.array([0.3, -1.0, 0.5, 0.2, 1.0])
    value, tangent = adjit.jvp(cdf_sum)(x, u)
    assert value == pytest.approx(cdf_sum(x), rel=1e-14)
    assert tangent == pytest.approx(fd_jvp(njit(cdf_sum), (x,), (0,), (u,)), rel=1e-6)


def scaled_power(x, n):
    if n == 0:
        return 1.0
    return x * scaled_power(x, n - 1)


def _even(t, n):
    if n == 0:
        return t
    return _odd(t * 0.5, n - 1)


def _odd(t, n):
    if n == 0:
        return t
    return _even(t + 1.0, n - 1)


def even_odd(x, n):
    return _even(x, n) * 2.0


def nested_recursion(x, n):
    def power(t, k):
        return 1.0 if k == 0 else t * power(t, k - 1)
    return power(x, n)


@pytest.mark.parametrize("f, n, expected", [
    (scaled_power, 0, 0.0),
    (scaled_power, 1, 1.0),
    (nested_recursion, 1, 1.0),
    (even_odd, 2, 1.0),         # 2 * (0.5 x + 1)
    (even_odd, 3, 0.5),         # 2 * ((0.5 x + 1) * 0.5)
])
def test_a_recursion_within_the_depth_adjit_repeats(f, n, expected):
    assert adjit.grad(f)(1.5, n) == pytest.approx(expected, rel=1e-15)


@pytest.mark.parametrize("f, n, chain", [
    (scaled_power, 2, "scaled_power -> scaled_power -> scaled_power"),
    (nested_recursion, 5, "nested_recursion -> power -> power -> power"),
    (even_odd, 4, "even_odd -> _even -> _odd -> _even -> _odd -> _even"),
])
def test_a_recursion_deeper_than_that_raises_when_it_runs(f, n, chain):
    g = adjit.grad(f)
    with pytest.raises(RecursionError, match=r"called itself more than 2 levels deep \("
                       + chain):
        g(1.5, n)
    # (the same compiled gradient is fine where the recursion stops in time: each of these
    # is x at n = 1, derivative 1)
    assert g(1.5, 1) == pytest.approx(1.0, rel=1e-15)


def five_ways(x, n):
    if n <= 0:
        return x
    return (five_ways(x, n - 1) + five_ways(x, n - 2) + five_ways(x, n - 3) +
            five_ways(x, n - 4) + five_ways(x, n - 5))


def test_a_recursion_at_many_places_is_refused():
    with pytest.raises(AdjitError, match=r"recursion \(five_ways -> five_ways -> five_ways\) "
                       r"at more places than adjit unrolls.*Rewrite the recursion as a loop"):
        adjit.grad(five_ways)(1.5, 3)


@njit
def value_and_slope(x, n):
    """x**n and its derivative, by the recursion of the product rule (a tuple returned)."""
    if n == 0:
        return 1.0, 0.0
    p, d = value_and_slope(x, n - 1)
    return x * p, p + x * d


def from_the_pair(x, n):
    p, d = value_and_slope(x, n)
    return p + 0.5 * d


@njit
def reflected_pair(x):
    if x < 0.0:
        a, b = reflected_pair(-x)
        return -a, b
    return math.sin(x) * x, math.exp(-x)


def from_the_reflected_pair(x):
    a, b = reflected_pair(x)
    return a * b + a


def test_a_recursion_returning_tuples():
    assert adjit.grad(from_the_pair)(1.5, 1) == pytest.approx(1.0, rel=1e-15)
    check_value_and_grad(njit(from_the_reflected_pair), (-0.7,))
    check_value_and_grad(njit(from_the_reflected_pair), (0.4,))
    with pytest.raises(RecursionError, match="value_and_slope called itself more than 2"):
        adjit.grad(from_the_pair)(1.5, 2)


_bs_call = njit(bs_call)


def condor(s, sigma):
    """Four calls of a price that calls the reflected CDF twice: every one of the sixteen
    reflections is its own recursion (they were counted together and refused)."""
    return (_bs_call(s, 90.0, 0.01, sigma, 1.0) - _bs_call(s, 95.0, 0.01, sigma, 1.0)
            - _bs_call(s, 105.0, 0.01, sigma, 1.0) + _bs_call(s, 110.0, 0.01, sigma, 1.0))


def test_many_calls_of_a_function_that_calls_itself():
    check_value_and_grad(condor, (100.0, 0.25), argnums=(0, 1))


@njit
def grow(a, n):
    """Called for its effect: leaves early with a bare return, else updates and recurses."""
    if n == 0:
        return
    for i in range(a.shape[0]):
        a[i] = a[i] * 1.1 + 0.1 * a[i] * a[i]
    grow(a, n - 1)


def grown(x, n):
    a = x.copy()
    grow(a, n)
    return np.sum(a * a)


def test_a_recursion_called_for_its_effect():
    x = np.array([0.5, -1.0, 1.5])
    check_value_and_grad(grown, (x, 1))
    with pytest.raises(RecursionError, match="grow called itself more than 2 levels deep"):
        adjit.grad(grown)(x, 2)


@njit
def halved(v, n):
    if n == 0:
        return v * 2.0
    return halved(v * 0.5, n - 1) + np.sin(v)


def from_halved(v, n):
    return np.sum(halved(v, n) ** 2)


def test_a_recursion_returning_arrays_is_refused():
    with pytest.raises(AdjitError, match=r"recursion \(from_halved -> halved -> halved\) of a "
                       r"function returning arrays"):
        adjit.grad(from_halved)(np.array([0.5, 1.0]), 1)


@njit
def reflected_array(v):
    if v[0] < 0.0:
        return -reflected_array(-v)
    return v * np.exp(-v * v)


def from_reflected_array(v):
    return np.sum(reflected_array(v) * np.arange(1.0, v.shape[0] + 1.0))


def test_a_refusal_inside_the_repeated_body_says_where_the_recursion_was_cut():
    """The cut call stands for a number; a function returning arrays then fails to read
    (here: an array from one return, a number from the other), and the message says so
    first."""
    with pytest.raises(AdjitError, match=r"recursion \(from_reflected_array -> "
                       r"reflected_array -> reflected_array\) cut 2 levels deep, where the "
                       r"cut call stands for a number"):
        adjit.grad(from_reflected_array)(np.array([-0.5, 1.0]))


@njit
def halvings(x):
    """An integer result: how many halvings bring x to 2 or below."""
    if x > 2.0:
        return 1 + halvings(x * 0.5)
    return 0


def weighted_by_halvings(x, a):
    s = 0.0
    for i in range(halvings(x) + 1):
        s += a[i] * x
    return s + a[halvings(x)] * x * x


def test_a_recursion_returning_an_integer_keeps_it_an_integer():
    """The cut call stands for an integer 0 (numba unifies it with a float where the
    function returns floats): a float there was refused as a range bound and an index."""
    a = np.array([1.0, 2.0, 3.0, 4.0])
    check_value_and_grad(weighted_by_halvings, (3.0, a), argnums=(0, 1))
