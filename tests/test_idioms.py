"""Idioms of published numba code, written as their authors write them.

`T = type(x)` then `T(0.5)`: one body for float32 and float64 (the style of numba density
libraries). Functions as values: `e = math.exp`, and a right-hand side passed to an @njit
integrator that calls it (`rk4(f, y, h)`). Array names rebound in time loops as simulation
code does: an adaptive step accepted in a branch (`if err < tol: y = ynew`), backward Euler
with Newton updates (`z = z - np.linalg.solve(J, G)`, then `y = z`), and an integrator
helper that rebinds its own name (a recurrent cell whose helper makes temporaries from
slices is tests/test_natural_programs.py's lstm_slices_helper).
Loops over `np.ndindex` and `np.ndenumerate`, in the function and in its helpers. Optional
arguments tested with `is None` (`def f(x, w=None)`), the branch numba prunes pruned.
Conversions: `a.astype(np.int64)` as an index, `a.astype(np.float64)`, `np.float64(v)`.
Helpers taking `*args` (curve fitting's `model(t, *p)`) and tuples unpacked into calls. Every
gradient is checked against central differences of numba's own compiled forward (the same
functions under @njit)."""
import math
from collections import namedtuple

import numpy as np
import pytest
from numba import njit

import adjit
from adjit import AdjitError
from fd import check_value_and_grad, fd_grad
from idiom_programs import rotation, solve_tridiag
from adjit.runtime import vec as _vec

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


@njit
def truncated_logpdf(x, xmin, xmax, loc, scale):
    """The type taken of a parameter the body assigns again (`scale *= ...`)."""
    T = type(scale)
    inv = T(1) / scale
    z = (x - loc) * inv
    zmin, zmax = (xmin - loc) * inv, (xmax - loc) * inv
    scale *= 0.5 * (math.erf(zmax / math.sqrt(2.0)) - math.erf(zmin / math.sqrt(2.0)))
    for i in range(len(z)):
        if zmin <= z[i] < zmax:
            z[i] = -T(0.5) * z[i] * z[i] - T(_LOG_SQRT_2PI) - np.log(scale)
        else:
            z[i] = -T(np.inf)
    return z


@njit
def family_logpdf(x, q, loc, scale):
    """A density that hands its cases to other densities, as numba libraries do: each
    `return` returns another helper's new array."""
    if q == 1.0:
        return norm_logpdf(x, loc, scale)
    out = norm_logpdf(x, loc, scale * q)
    for i in range(len(out)):
        out[i] -= math.log(q)
    return out


def family_nll(params, x, q):
    return -np.sum(family_logpdf(x, q, params[0], params[1]))


def truncated_nll(params, x):
    return -np.sum(truncated_logpdf(x, -2.5, 3.0, params[0], params[1]))


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



def test_type_of_a_parameter_converts_constants_in_a_density():
    params = np.array([0.7, 1.9])
    g = check_value_and_grad(nll, (params, X), 0)
    mu, sigma = params
    assert g[0] == pytest.approx(-np.sum(X - mu) / sigma ** 2, rel=1e-12)
    assert g[1] == pytest.approx(X.size / sigma - np.sum((X - mu) ** 2) / sigma ** 3, rel=1e-12)


def test_type_of_a_parameter_assigned_again_later():
    check_value_and_grad(truncated_nll, (np.array([0.4, 1.3]), np.clip(X, -2.4, 2.9)), 0)


def test_a_helper_returning_other_helpers_arrays_from_several_returns():
    for q in (1.0, 1.7):
        check_value_and_grad(family_nll, (np.array([0.4, 1.3]), X, q), 0)


def test_type_of_an_element_follows_the_arrays_dtype():
    check_value_and_grad(element_typed_sum, (X[:7].copy(),), 0)
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
    check_value_and_grad(type_in_a_loop, (X[:5].copy(),), 0)


# functions as values ---------------------------------------------------------------------

def aliased(x):
    e = math.exp
    sq = np.sqrt
    s = 0.0
    for i in range(x.shape[0]):
        s += e(x[i]) * 0.1
    return s + np.sum(sq(x * x + 1.0))


@njit
def decay(y, k):
    return -k * y * y


@njit
def rk4_step(f, y, h, k):
    k1 = f(y, k)
    k2 = f(y + 0.5 * h * k1, k)
    k3 = f(y + 0.5 * h * k2, k)
    k4 = f(y + h * k3, k)
    return y + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


@njit
def integrate(f, y0, h, n, k):
    y = y0
    for _ in range(n):
        y = rk4_step(f, y, h, k)
    return y


def final_state(p):
    return integrate(decay, p[0], 0.1, 8, p[1])


def _function_as_a_number(x):
    e = math.exp
    return x[0] + e


def test_a_function_bound_to_a_name_is_that_function():
    check_value_and_grad(aliased, (X[:6].copy(),), 0)


def test_a_function_passed_through_helpers_is_called_where_they_call_it():
    p = np.array([0.9, 0.7])
    g = check_value_and_grad(final_state, (p,), 0)
    assert g[0] != 0.0 and g[1] != 0.0


def test_a_function_used_as_a_number_is_refused():
    with pytest.raises(AdjitError, match=r"the function `math.exp` used as a value"):
        adjit.grad(_function_as_a_number)(X)


def final_states(y0, k):
    return np.sum(integrate(decay, y0, 0.1, 6, k[0]) ** 2)


def test_an_array_state_through_a_passed_right_hand_side():
    check_value_and_grad(final_states, (np.array([0.9, 0.4, -0.3]), np.array([0.7])), (0, 1))


# array names rebound in time loops -------------------------------------------------------

def adaptive_euler(y0, rate):
    """Step doubling's error estimate, the step accepted in a branch or halved."""
    t = 0.0
    h = 0.25
    y = y0.copy()
    while t < 1.0:
        ynew = y + h * (-rate[0] * y * y)
        half = y + 0.5 * h * (-rate[0] * y * y)
        half = half + 0.5 * h * (-rate[0] * half * half)
        err = np.max(np.abs(ynew - half))
        if err < 2e-3:
            t += h
            y = ynew
        else:
            h *= 0.5
    return np.sum(y * y)


def backward_euler(y0, a):
    y = y0.copy()
    n = y.shape[0]
    for _ in range(4):
        z = y.copy()
        for _ in range(5):                         # Newton on z - y + dt * a * z**2 = 0
            G = z - y + 0.1 * a[0] * z * z
            J = np.eye(n) + 0.2 * a[0] * np.diag(z)
            z = z - np.linalg.solve(J, G)
        y = z
    return np.sum(y)


def test_an_adaptive_step_accepted_in_a_branch():
    y0, rate = np.array([0.8, 0.3, -0.5]), np.array([1.3])
    check_value_and_grad(adaptive_euler, (y0, rate), (0, 1))


def test_backward_euler_with_newton_updates():
    y0, a = np.array([0.8, 0.3, -0.5]), np.array([1.1])
    check_value_and_grad(backward_euler, (y0, a), (0, 1))


# loops over every index of an array --------------------------------------------------------

@njit
def smooth_into(out, a):
    """Writes every element of `out` through a tuple index, as n-dimensional code does."""
    for idx in np.ndindex(out.shape):
        i, j = idx
        out[idx] = 0.5 * a[idx] + 0.25 * (a[max(i - 1, 0), j] + a[i, min(j + 1, a.shape[1] - 1)])


def smoothed_energy(a):
    out = np.empty_like(a)
    smooth_into(out, a)
    total = 0.0
    for idx, v in np.ndenumerate(out):
        total += (idx[0] + 1.0) * v * v
    n, m = a.shape
    for i, j in np.ndindex(n, m):
        total += math.sin(a[i, j]) * (j - i)
    return total


def _break_in_ndindex(a):
    s = 0.0
    for idx in np.ndindex(a.shape):
        if a[idx] > 0.5:
            break
        s += a[idx]
    return s


def test_loops_over_every_index_in_the_function_and_its_helpers():
    a = np.random.default_rng(11).normal(size=(4, 3))
    check_value_and_grad(smoothed_energy, (a,), 0)


def test_break_in_an_index_loop_is_refused():
    with pytest.raises(AdjitError, match=r"break in a loop over np.ndindex"):
        adjit.grad(_break_in_ndindex)(np.ones((2, 2)))


# optional arguments -------------------------------------------------------------------------

@njit
def weighted_mean(x, w=None):
    if w is None:
        w = np.ones_like(x)
    return np.sum(w * x) / np.sum(w)


@njit
def affine(x, scale=None, shift=None):
    s = 1.0 if scale is None else scale
    out = x * s
    if shift is not None:
        out = out + shift
    return out


def optional_arguments(x):
    return weighted_mean(x) + weighted_mean(x, x * x) + weighted_mean(x, None) * 0.5 + \
        np.sum(affine(x) ** 2) + np.sum(affine(x, 2.0, x) ** 2)


@njit
def _uses_none(x, w=None):
    return np.sum(x * w)


def _none_as_a_number(x):
    return _uses_none(x)


def test_optional_arguments_left_out_given_and_given_none():
    check_value_and_grad(optional_arguments, (np.array([0.3, 0.7, -0.4, 1.2]),), 0)


@njit
def _assigned_on_a_path(x, w=None):
    if x[0] > 0.0:
        w = x
    if w is None:                 # None or not depends on the data: numba keeps both
        return np.sum(x)
    return np.sum(w * x)


def _optional_assigned_on_a_path(x):
    return _assigned_on_a_path(x)


def test_none_used_as_a_number_is_refused():
    with pytest.raises(AdjitError, match="None used as a value"):
        adjit.grad(_none_as_a_number)(X)
    # deciding `w is None` from the call alone would be wrong here: refused, not pruned
    with pytest.raises(AdjitError, match="optional argument `w`.*left out.*assigned where"):
        adjit.grad(_optional_assigned_on_a_path)(X)


@njit
def _default_after_a_test(x, r=None):
    """`r is not None` inside a longer test, read before `if r is None: r = 2.0` gives r
    its default: numba decides it from r's type there too (r is still None)."""
    if x[0] > 0.0 and r is not None:
        return 5.0 * x[0]
    if r is None:
        r = 2.0
    return x[0] * r


def _left_out_then_defaulted(x):
    return _default_after_a_test(x) + _default_after_a_test(x, 3.0)


@njit
def _band(n, radius=None):
    if radius is None:
        radius = n
    mask = np.full((n, n), False)
    for i in range(n):
        for j in range(n):
            mask[i, j] = abs(i - j) <= radius
    return mask


@njit
def _mask_of(n, constraint=0, radius=None, slope=None):
    """tslearn's _compute_mask: warnings raised as exceptions, defaults given in branches
    on data (constraint), the optional arguments passed on from its caller."""
    if constraint == 0 and radius is not None and slope is not None:
        raise RuntimeWarning("both radius and slope are set")
    if constraint == 2 or (constraint == 0 and radius is not None):
        if radius is None:
            radius = 1
        mask = _band(n, radius)
    elif constraint == 1 or (constraint == 0 and slope is not None):
        if slope is None:
            slope = 2.0
        mask = _band(n, int(slope))
    else:
        mask = _band(n)
    return mask


@njit
def _banded_spread(x, constraint=0, radius=None, slope=None):
    mask = _mask_of(x.shape[0], constraint, radius, slope)     # None passed on
    s = 0.0
    for i in range(x.shape[0]):
        for j in range(x.shape[0]):
            if mask[i, j]:
                s += (x[i] - x[j]) ** 2
    return s


def banded_spreads(x):
    return _banded_spread(x) + 0.5 * _banded_spread(x, 0, 1) + 0.25 * _banded_spread(x, 1)


@njit
def _defaulted_on_data(x, w=None):
    if x[0] > 0.0:
        if w is None:
            w = 2.0
    return x[0] * w             # None where x[0] <= 0


@njit
def _defaulted_with_eq(x, r=None):
    if r == None:       # noqa: E711 (numba decides == None from the type, as `is None`)
        r = 2.0
    return x[0] * r


@njit
def _held_then_tested(x, w=None):
    w2 = w
    if w2 is None:
        return x[0]
    return 3.0 * x[0] * w2


def none_tested_other_ways(x):
    return _defaulted_with_eq(x) + 10.0 * _held_then_tested(x) + \
        100.0 * _held_then_tested(x, 0.5)


@njit
def _cumulated(D, out=None):
    """tslearn's accumulated cost: written into `out` when one is given, else new."""
    m, n = D.shape
    if out is not None:
        cum = out
        out[...] = np.inf
    else:
        cum = np.full((m, n), np.inf)
    for i in range(m):
        for j in range(n):
            cum[i, j] = D[i, j] + (cum[i - 1, j] if i > 0 else 0.0)
    return cum


def cumulated_both_ways(x):
    D = np.outer(x, x)
    out = np.empty_like(D)
    _cumulated(D, out)
    return _cumulated(D)[-1, -1] + 0.5 * out[-1, 0]


@njit
def _defaulted_in_a_loop(x, p=None):
    s = 0.0
    for k in range(3):
        if p is None:       # None in the first iteration only: numba's value is 3 * x[0]
            p = x[k]
        s += p
    return s


def _loop_default(x):
    return _defaulted_in_a_loop(x)


def both_set(x):
    return _banded_spread(x, 0, 1, 2.0)


def _read_after_a_default_on_data(x):
    return _defaulted_on_data(x)


def test_optional_arguments_tested_inside_longer_tests():
    x = np.array([0.3, 0.7, -0.4, 1.2])
    g = check_value_and_grad(_left_out_then_defaulted, (x,), 0)
    np.testing.assert_allclose(g, [2.0 + 5.0, 0, 0, 0], rtol=1e-15)
    g = check_value_and_grad(banded_spreads, (x,), 0)
    # all pairs; |i - j| <= 1 with weight 0.5; |i - j| <= 2 (slope 2.0) with weight 0.25
    weights = sum(c * (np.abs(np.subtract.outer(np.arange(4), np.arange(4))) <= r)
                  for c, r in ((1.0, 4), (0.5, 1), (0.25, 2)))
    np.testing.assert_allclose(g, 4 * (weights.sum(1) * x - weights @ x), rtol=1e-14)
    with pytest.raises(AdjitError, match="optional argument `w`.*left out.*assigned where"):
        adjit.grad(_read_after_a_default_on_data)(x)
    with pytest.raises(AdjitError, match="optional argument `p`.*left out.*assigned where"):
        adjit.grad(_loop_default)(x)       # (adjit gave 6.0 where numba gives 3.0)
    g = check_value_and_grad(cumulated_both_ways, (x,), 0)
    # sum_i x_i x_3 + 0.5 sum_i x_i x_0
    np.testing.assert_allclose(g, x[3] + 0.5 * x[0] + np.array([0.5 * x.sum(), 0, 0,
                                                                  x.sum()]), rtol=1e-14)
    g = check_value_and_grad(none_tested_other_ways, (x,), 0)
    np.testing.assert_allclose(g, [2.0 + 10.0 + 150.0, 0, 0, 0], rtol=1e-15)
    for run in (njit(both_set), adjit.grad(both_set)):     # raised as numba raises it
        with pytest.raises(RuntimeWarning, match="both radius and slope are set"):
            run(x)


# conversions --------------------------------------------------------------------------------

def binned_lookup(x, table):
    """Bin indices from float data, as histogramming code computes them."""
    k = (x * 4.0 + 8.0).astype(np.int64)         # truncation, as C casts: toward zero
    z = x.astype(np.float64)                     # a copy: the derivative flows
    positive = x.astype(np.bool_)
    s = 0.0
    for i in range(x.shape[0]):
        s += table[k[i] % table.shape[0]] * z[i] * z[i]
        if positive[i]:
            s += 0.5 * x[i]
    return s + np.float64(x[0]) * 2.0 + np.int64(x[1] * 10.0)


def test_astype_and_numpy_scalar_conversions():
    x = np.array([0.3, -1.73, -0.4, 1.2, 0.05])
    table = np.linspace(0.5, 2.0, 7)
    check_value_and_grad(binned_lookup, (x, table), (0, 1))


def flat_energy(a):
    s = 0.0
    for v in a.flat:
        s += v * v * np.sin(v)
    for v in a[0].flat:
        s += 2.0 * v
    return s


def test_iterating_flat_visits_every_element_in_c_order():
    check_value_and_grad(flat_energy, (X[:12].reshape(3, 4).copy(),), 0)
    check_value_and_grad(flat_energy, (X[:12].reshape(4, 3).T.copy(order="F").T,), 0)


def tridiagonal_energy(a, b, c, d):
    x = solve_tridiag(a.copy(), b.copy(), c.copy(), d.copy())
    return np.sum(x * x)


@njit
def stencil_with_skips(u, k0, device="cpu"):
    """A literal-tuple loop that skips a case (`for kr in (0, 1): if ...: continue`) and an
    output shaped `u.shape + (2,)`, as isopycnal-mixing kernels write them; a string default
    the body never reads (a benchmark's `run(..., device="cpu")`)."""
    out = np.zeros(u.shape + (2,))
    for k in range(u.shape[0] - 1):
        for kr in (0, 1):
            if k == k0 and kr == 0:
                continue
            out[k, kr] = u[k + kr] * u[k] + kr
    return np.sum(out * out)


def run_with_device(u):
    return stencil_with_skips(u, 1) + stencil_with_skips(u, 2, device="cpu")


def test_shapes_compared_whole_and_tuple_loops_that_skip():
    n = 6
    rng = np.random.default_rng(4)
    a, c = rng.uniform(0.1, 0.5, n), rng.uniform(0.1, 0.5, n)
    b, d = rng.uniform(2.0, 3.0, n), rng.normal(size=n)
    check_value_and_grad(tridiagonal_energy, (a, b, c, d), (0, 1, 2, 3))
    check_value_and_grad(run_with_device, (X[:7].copy(),), 0)
    with pytest.raises(AssertionError):
        adjit.grad(tridiagonal_energy)(a, b[:4], c, d)


def test_shape_comparisons_and_joins():
    def f(x, y):
        same = x.shape == y.shape
        other = x.shape != (3,)
        z = np.ones(x.shape + y.shape)
        return np.sum(z) * x[0] * (2.0 if same else 1.0) + (1.0 if other else 0.0) * y[0]
    check_value_and_grad(f, (X[:4].copy(), X[4:8].copy()), (0, 1))
    check_value_and_grad(f, (X[:4].copy(), X[4:7].copy()), (0, 1))


# -- `*args`: a model's parameters as a tuple (curve fitting's `model(t, *p)`), a polynomial of
# any degree, a wrapper passing its arguments on

@njit
def decay_model(t, *p):
    return p[0] * np.exp(-p[1] * t) + p[2]


@njit
def polyval_args(x, *c):
    s = 0.0
    for k in range(len(c)):
        s += c[k] * x ** k
    return s


@njit
def scaled(factor, *args):
    return factor * decay_model(args[0], *args[1:])


def decay_misfit(a, k, c, t, y):
    r = decay_model(t, a, k, c) - y
    return np.sum(r * r)


def decay_misfit_tuple(a, k, c, t, y):
    theta = (a, k, c)
    r = decay_model(t, *theta) - y
    return np.sum(r * r)


def polynomial_terms(a, b, x):
    coeffs = (a, b, 0.5)
    return polyval_args(x, *coeffs) + polyval_args(x, a) + polyval_args(x, *(b, a))


def forwarded(a, k, t):
    return np.sum(scaled(2.0, t, a, k, 0.1) ** 2)


T_FIT = np.linspace(0.0, 2.0, 7)
Y_FIT = 1.5 * np.exp(-0.7 * T_FIT) + 0.2


@pytest.mark.parametrize("f, args, argnums", [
    (decay_misfit, (1.2, 0.5, 0.1, T_FIT, Y_FIT), (0, 1, 2)),
    (decay_misfit_tuple, (1.2, 0.5, 0.1, T_FIT, Y_FIT), (0, 1, 2)),
    (polynomial_terms, (1.2, 0.8, 0.7), (0, 1, 2)),
    (forwarded, (0.6, 0.9, T_FIT), (0, 1)),
], ids=["star-parameter", "star-tuple", "polynomial", "forwarded-slice"])
def test_star_args_helpers_and_unpacked_tuples(f, args, argnums):
    """`def model(t, *p)` called with extra positional arguments or `*theta`, `len(c)` of
    them, `*args[1:]` passed on: Python's and numba's meaning, against central differences
    of numba's compile."""
    check_value_and_grad(f, args, argnums)
    if f is polynomial_terms:       # a + b x + 0.5 x^2, + a, + b + a x
        a, b, x = args
        grads = adjit.grad(f, argnums=(0, 1, 2))(*args)
        np.testing.assert_allclose(grads, [2.0 + x, x + 1.0, b + x + a], rtol=1e-14)


def _singlethread(inner):
    """numba-examples' nogil.py: a plain Python wrapper over a kernel writing its result."""
    def func(*args):
        result = np.empty(len(args[0]), dtype=np.float64)
        inner(result, *args)
        return result
    return func


@njit
def _exp_kernel(result, a, b):
    for i in range(len(result)):
        result[i] = math.exp(2.1 * a[i] + 3.2 * b[i])


_exp_wrapped = _singlethread(_exp_kernel)


def test_a_python_wrapper_passing_star_args_to_a_kernel():
    def loss(a, b, w):
        return np.sum(w * _exp_wrapped(a, b))
    rng = np.random.default_rng(5)
    a, b, w = rng.random(5), rng.random(5), rng.normal(size=5)
    ga, gb = adjit.grad(loss, argnums=(0, 1))(a, b, w)
    e = np.exp(2.1 * a + 3.2 * b)
    np.testing.assert_allclose(ga, 2.1 * w * e, rtol=1e-13)
    np.testing.assert_allclose(gb, 3.2 * w * e, rtol=1e-13)


def test_star_args_adjit_cannot_unpack_are_refused():
    def unpack_array(x):
        return polyval_args(0.5, *x)

    def top(*xs):
        return xs[0]
    with pytest.raises(AdjitError, match=r"star-unpacking `\*x` of what is not a tuple"):
        adjit.grad(unpack_array)(np.ones(3))
    with pytest.raises(AdjitError, match=r"argnums 0 for .*top.* is not one of the "
                                         r"parameters before \*xs \(there are none\)"):
        adjit.grad(top)(1.0)


# poliastro's iterations: a series summed until its terms are small, a check of an axis, a
# Newton iteration whose `else:` raises -----------------------------------------------------

@njit
def stumpff_series(z):
    # summed until the next term no longer changes the sum; left only by its return
    s = 0.0
    term = 1.0
    k = 0
    while True:
        s += term
        k += 1
        term *= -z / ((2 * k + 1) * (2 * k + 2))
        if abs(term) < 1e-17 * abs(s):
            return s
        if k > 200:
            raise RuntimeError("the series did not converge")


@njit
def eccentric_anomaly(M, ecc, numiter=50):
    E = M
    for _ in range(numiter):
        dE = (E - ecc * math.sin(E) - M) / (1.0 - ecc * math.cos(E))
        E = E - dE
        if abs(dE) < 1e-13:
            break
    else:
        raise RuntimeError("Maximum number of iterations reached")
    return E


def rotated(angle, axis, v):
    return np.sum(rotation(angle, axis) @ v)


def orbit_point(M, ecc, numiter):
    E = eccentric_anomaly(M, ecc, numiter)
    return math.cos(E) - ecc + 0.5 * stumpff_series(M * ecc)


def test_while_true_left_by_return_membership_and_loop_else():
    """Three forms of published numba code (poliastro's core) adjit refused: a `while True:`
    left only by a return ("a path through the function ends without `return`"), `axis in
    (0, 1, 2)` ("an `in` test") and a loop's `else:` clause. Each is read as Python runs
    it: against central differences of numba's compile, the raise where numba raises."""
    v = np.array([1.0, -2.0, 0.5])
    for axis in (0, 1, 2):
        check_value_and_grad(rotated, (0.7, axis, v), argnums=(0, 2))
    with pytest.raises(AssertionError):
        adjit.grad(rotated)(0.7, 3, v)
    for M, ecc in ((0.5, 0.1), (2.0, 0.7)):
        check_value_and_grad(orbit_point, (M, ecc, 50), argnums=(0, 1))
        E = eccentric_anomaly(M, ecc)
        dM = adjit.grad(lambda_free_anomaly)(M, ecc)
        assert dM == pytest.approx(1.0 / (1.0 - ecc * math.cos(E)), rel=1e-13)
    with pytest.raises(RuntimeError, match="Maximum number of iterations reached"):
        adjit.grad(orbit_point)(2.0, 0.9, 2)
    with pytest.raises(RuntimeError, match="Maximum number of iterations reached"):
        njit(orbit_point)(2.0, 0.9, 2)


def lambda_free_anomaly(M, ecc):
    return eccentric_anomaly(M, ecc)


@njit
def two_body(t0, u_, k):
    # poliastro's func_twobody: a state vector unpacked into names
    x, y, z, vx, vy, vz = u_
    r3 = (x ** 2 + y ** 2 + z ** 2) ** 1.5
    return np.array([vx, vy, vz, -k * x / r3, -k * y / r3, -k * z / r3])


@njit
def position_velocity(rv):
    r, v = rv       # the rows of a (2, 3) array
    return np.sum(r * v) + 2.0 * r[0] * v[2]


def weighted_rates(u, k):
    return np.sum(two_body(0.0, u, k) * np.arange(1.0, 7.0))


def unpacked_pair(u):
    a, b = u
    return a * b


def test_an_array_unpacked_into_names():
    """`x, y, z, vx, vy, vz = u_` (poliastro's func_twobody, every Lorenz right-hand side)
    was refused as "unpacking a value that is not a tuple": the elements (rows of a 2-D
    array, as views) after the length check numba makes (ValueError)."""
    u = np.array([1.0, 0.5, -0.3, 0.1, 0.9, 0.2])
    check_value_and_grad(weighted_rates, (u, 1.3), argnums=(0, 1))
    check_value_and_grad(position_velocity, (np.arange(6.0).reshape(2, 3) / 3.0,))
    np.testing.assert_array_equal(adjit.grad(unpacked_pair)(np.array([2.0, 3.0])), [3.0, 2.0])
    with pytest.raises(ValueError):
        njit(unpacked_pair)(np.ones(3))
    with pytest.raises(ValueError, match="cannot unpack an array whose length is not 2"):
        adjit.grad(unpacked_pair)(np.ones(3))


@njit
def state_matrix(k, p, ecc, nu):
    r = p / (1 + ecc * np.cos(nu)) * np.array([np.cos(nu), np.sin(nu), 0.0])
    v = np.sqrt(k / p) * np.array([-np.sin(nu), ecc + np.cos(nu), 0.0])
    return np.vstack((r, v))


def angular_momentum_z(p, nu):
    r, v = state_matrix(1.0, p, 0.1, nu)
    hx, hy, hz = np.cross(r, v)
    return hz + 0.5 * hx * hy + r[0]


def test_an_array_a_call_returns_unpacked_into_names():
    """`r, v = state_matrix(...)` and `hx, hy, hz = np.cross(r, v)`: an array made by a
    call (or an expression), unpacked as a name is (refused before: "unpacking a value
    that is not a tuple")."""
    check_value_and_grad(angular_momentum_z, (1.2, 0.4), argnums=(0, 1))
    check_value_and_grad(_sum_of_three, (np.array([0.1, 0.2, 0.3]),))
    with pytest.raises(ValueError, match="cannot unpack an array whose length is not 3"):
        adjit.grad(_sum_of_three)(np.ones(4))


def _sum_of_three(x):
    a, b, c = np.sin(x)
    return a * b + c


GRID = ((0.0, 1.0, 11), (0.0, 2.0, 5))      # interpolation.py's UCGrid(...) at module level
Settings = namedtuple("Settings", ["scale", "w"])
SETTINGS = Settings(2.5, np.array([1.0, 2.0, 3.0]))


@njit
def grid_step(grid):
    a, b, n = grid[1]
    return (b - a) / (n - 1)


@njit
def weighted_by(p, x):
    return p.scale * np.sum(p.w * x)


def stepped(x):
    return x * grid_step(GRID) + x * x


def weighted_global(x):
    return weighted_by(SETTINGS, x)


def test_module_level_tuples_passed_to_helpers():
    """A module-level tuple (a grid of (start, stop, count) tuples; a named tuple of
    settings holding an array) passed to a helper was refused ("the global 'grid' (tuple)
    used as a value"); numba freezes it as a constant, and so does adjit."""
    assert check_value_and_grad(stepped, (1.5,)) == pytest.approx(0.5 + 3.0, rel=1e-14)
    np.testing.assert_allclose(check_value_and_grad(weighted_global, (np.ones(3),)),
                               2.5 * SETTINGS.w, rtol=1e-15)


ARRAYS = (np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0]))


def grid_spacing(x, k):
    a, b, n = GRID[k]               # a row of the grid, chosen when it runs
    return x * (b - a) / (n - 1) + x * x * GRID[0][1]


def over_the_grid(x):
    s = 0.0
    for start, stop, n in GRID:
        s += x[0] * (stop - start) / n
    for a in ARRAYS:
        s += np.sum(a * x)
    return s


def picked_array(x, k):
    return np.sum(ARRAYS[k] * x)


def test_module_level_tuples_in_the_function():
    """`GRID[k]` with a variable k, `GRID[0][1]` and `for start, stop, n in GRID:` in the
    differentiated function itself (refused before: "indexing something that is not an
    array variable", "a for loop over something that is not an array")."""
    for k in (0, 1):
        assert check_value_and_grad(grid_spacing, (1.5, k)) == pytest.approx(
            (GRID[k][1] - GRID[k][0]) / (GRID[k][2] - 1) + 3.0, rel=1e-14)
    with pytest.raises(IndexError):
        adjit.grad(grid_spacing)(1.5, 2)
    np.testing.assert_allclose(check_value_and_grad(over_the_grid, (np.ones(3),)),
                               np.array([1.0 / 11 + 2.0 / 5, 0.0, 0.0]) + ARRAYS[0] +
                               ARRAYS[1], rtol=1e-14)
    with pytest.raises(AdjitError, match="a tuple of arrays .* indexed by a variable"):
        adjit.grad(picked_array)(np.ones(3), 1)


# -- bitwise operators on booleans and integers -------------------------------------------------

@njit('float64(float64)')
def equation_of_time_like(E):
    """pvlib's spa.equation_of_time: boolean masks combined with & and multiplied."""
    E = E % 360
    E *= 4
    greater = E > 20
    less = E < -20
    other = (E <= 20) & (E >= -20)
    E = greater * (E - 1440) + less * (E + 1440) + other * E
    return E


def masked_where(x, y):
    m = (x > 0.2) & (y < 0.8) | (x > 0.9)
    return np.sum(np.where(m, x * y, -x))


def even_terms(x):
    s = 0.0
    for i in range(x.shape[0]):
        if (i & 1) == 0 and (i >> 1) ^ 1 != 2:
            s += x[i] * (i << 2)
    return s


def sticky_flag(x):
    hit = False
    s = 0.0
    for i in range(x.shape[0]):
        hit |= x[i] > 0.5
        s += x[i] * x[i] if hit else x[i]
    return s


@pytest.mark.parametrize("E", [363.9, 4.0, 356.0, 181.3])
def test_boolean_masks_combined_with_and(E):
    g = check_value_and_grad(equation_of_time_like, (E,), 0, forward=equation_of_time_like)
    assert g == 4.0


def test_bitwise_operators_on_masks_integers_and_flags():
    rng = np.random.default_rng(3)
    x, y = rng.random(9), rng.random(9)
    check_value_and_grad(masked_where, (x, y), (0, 1))
    check_value_and_grad(even_terms, (x,), 0)
    check_value_and_grad(sticky_flag, (x,), 0)


# -- a root finder's named-tuple result and its failure message (QuantEcon's style) --------------

Found = namedtuple("Found", "root calls iterations converged")


@njit
def _found(r):
    x, calls, its, flag = r
    return Found(x, calls, its, flag == 0)


@njit
def newton_solve(func, x0, fprime, args=(), tol=1e-12, maxiter=50, disp=True):
    p0 = 1.0 * x0
    calls = 0
    status = -1
    p = p0
    for itr in range(maxiter):
        fval = func(p0, *args)
        fder = fprime(p0, *args)
        calls += 2
        p = p0 - fval / fder
        if abs(p - p0) < tol:
            status = 0
            break
        p0 = p
    if disp and status == -1:
        msg = "did not converge"
        raise RuntimeError(msg)
    return _found((p, calls, itr + 1, status))


@njit
def _cube_less(x, a):
    return x ** 3 - a


@njit
def _cube_slope(x, a):
    return 3.0 * x * x


def cube_root_by_field(a):
    return newton_solve(_cube_less, 1.0, _cube_slope, args=(a,)).root


def test_a_named_tuple_field_of_a_call_and_a_message_bound_to_a_name():
    g = check_value_and_grad(cube_root_by_field, (2.0,), 0)
    assert g == pytest.approx(2.0 ** (-2.0 / 3.0) / 3.0, rel=1e-9)
    with pytest.raises(RuntimeError, match="did not converge"):
        adjit.grad(cube_root_by_field)(-1e300)


# -- a helper returning a tuple inside its tuple (QuantEcon's brent_max: xf, fval, info) --------

@njit
def _with_info(a):
    if a > 0:
        return a * a, (1, a * 3.0)
    return a, (0, -a)


@njit
def _values_and_info(a, x):
    v = a * x
    return v, (2, a * a), x * 2.0


def nested_returns(a, x):
    v, (flag, b), w = _values_and_info(a, x)
    info = _values_and_info(a, x)[1]
    c, (k, d) = _with_info(a)
    return np.sum(v) * b + info[1] + flag * np.sum(w) + c * d * k


@pytest.mark.parametrize("a", [1.5, -0.5])
def test_a_helper_returning_a_tuple_inside_its_tuple(a):
    check_value_and_grad(nested_returns, (a, np.arange(3.0)), (0, 1))


# -- limits of types written out (QuantEcon's comb_jit: np.iinfo(np.intp).max) ------------------

@njit
def _choose(N, k):
    top = np.iinfo(np.intp).max
    if N < 0 or k < 0 or k > N or N == top:
        return 0
    val = 1
    for j in range(min(k, N - k)):
        val = (val * (N - j)) // (j + 1)
    return val


def binomial_mean(p):
    s = 0.0
    for k in range(11):
        s += _choose(10, k) * p ** k * (1 - p) ** (10 - k) * k
    return s + np.finfo(np.float64).eps * p


def test_integer_and_float_limits_of_a_type():
    g = check_value_and_grad(binomial_mean, (0.3,), 0)
    assert g == pytest.approx(10.0 + np.finfo(np.float64).eps, rel=1e-12)


# -- three-term recurrences over arrays (QuantEcon's _qnwlege1: p3 = p2; p2 = p1; p1 = ...) -----

def legendre_energy(z, n):
    """P_n and P_{n-1} at every z by Bonnet's recurrence, the oldest term rotated out."""
    p1 = np.ones_like(z)
    p2 = np.zeros_like(z)
    for j in range(1, n + 1):
        p3 = p2
        p2 = p1
        p1 = ((2 * j - 1) * z * p2 - (j - 1) * p3) / j
    return np.sum(p1 * p1) + np.sum(p2) + np.sum(p3 * z)


@njit
def _gauss_legendre(n, a, b):
    """Nodes and weights on [a, b]: Newton's iterations on the roots of P_n, the recurrence
    over all of them at once, and the nodes written from both ends (index arithmetic on
    np.arange)."""
    m = (n + 1) // 2
    half, mid = 0.5 * (b - a), 0.5 * (b + a)
    nodes = np.zeros(n)
    weights = np.zeros(n)
    i = np.arange(m)
    z = np.cos(np.pi * (i + 0.75) / (n + 0.5))
    dp = np.ones_like(z)
    for it in range(100):
        p1 = np.ones_like(z)
        p2 = np.zeros_like(z)
        for j in range(1, n + 1):
            p3 = p2
            p2 = p1
            p1 = ((2 * j - 1) * z * p2 - (j - 1) * p3) / j
        dp = n * (z * p1 - p2) / (z * z - 1.0)
        z_old = z.copy()
        z = z_old - p1 / dp
        if np.all(np.abs(z - z_old) < 1e-14):
            break
    nodes[i] = mid - half * z
    nodes[-i - 1] = mid + half * z
    weights[i] = 2.0 * half / ((1.0 - z * z) * dp * dp)
    weights[-i - 1] = weights[i]
    return nodes, weights


def integral_of_exp_sin(a, b):
    nodes, weights = _gauss_legendre(9, a, b)
    return np.sum(weights * np.exp(np.sin(nodes)))


def test_a_recurrence_that_rotates_array_names():
    z = np.linspace(-0.9, 0.8, 6)
    for n in (1, 2, 6):
        check_value_and_grad(legendre_energy, (z, n), 0)


def test_gauss_legendre_nodes_from_a_rotating_recurrence():
    """d/da and d/db of a quadrature of exp(sin(t)) over [a, b]: -f(a) and f(b), to the
    quadrature's error."""
    ga, gb = check_value_and_grad(integral_of_exp_sin, (0.3, 1.7), (0, 1))
    assert ga == pytest.approx(-math.exp(math.sin(0.3)), rel=1e-9)
    assert gb == pytest.approx(math.exp(math.sin(1.7)), rel=1e-9)


def rotation_with_a_write(z, n):
    p1 = z * 1.0
    p2 = np.zeros_like(z)
    for j in range(1, n + 1):
        p3 = p2
        p3[1] = z[0] * 3.0      # (in Python also a write into p2's array)
        p2 = p1
        p1 = (z * p2 - p3) / j
    return np.sum(p1 * p1) + np.sum(p2 * p3)


def test_a_rotation_whose_old_array_is_written_is_refused():
    with pytest.raises(AdjitError, match="rotation_with_a_write"):
        adjit.grad(rotation_with_a_write)(np.linspace(-0.9, 0.8, 6), 4)


def initial_kept_by_name(z, n):
    """The start of an iteration kept under another name while the iteration's own name is
    bound to new arrays: after the loop `first` is the old array if the loop ran and the
    same array as `u` if not. Nothing here writes either, so the two cannot be told apart."""
    u = z * 1.0
    first = u
    head = u[:2]
    for t in range(n):
        u = np.tanh(u * z) + 0.5 * first
    return np.sum(u) + np.sum(first * z) + np.sum(head ** 2)


def initial_kept_then_written(z, n):
    u = z * 1.0
    first = u
    for t in range(n):
        u = u * z
    u[1] = 0.0          # (first sees this write if n == 0, and not otherwise)
    return np.sum(u) + np.sum(first * z)


def initial_copied(z, n):
    u = z * 1.0
    first = u.copy()
    for t in range(n):
        u = u * z
    u[1] = 0.0
    return np.sum(u) + np.sum(first * z)


def test_a_name_kept_for_an_array_a_loop_rebinds():
    z = np.array([0.3, 0.5, -0.7])
    for n in (0, 1, 4):
        check_value_and_grad(initial_kept_by_name, (z, n), 0)
    with pytest.raises(AdjitError, match=r"'first' views the array of 'u', which the loop "
                       r"binds to another array.* Copy it where it is bound: first = "
                       r"u.copy\(\)"):
        adjit.grad(initial_kept_then_written)(z, 3)
    for n in (0, 3):        # the advice taken: u = z**(n + 1) but u[1] = 0, first * z = z**2
        g = check_value_and_grad(initial_copied, (z, n), 0)
        np.testing.assert_allclose(g, np.where([1, 0, 1], (n + 1) * z ** n, 0.0) + 2.0 * z,
                                   rtol=1e-14)


# -- tslearn's accumulated cost matrix: np.full(..., np.inf, dtype=D.dtype), a boolean mask -------

def masked_dtw_cost(x, y, mask):
    """DTW's accumulated cost within a band (mask), as tslearn allocates it."""
    D = (x[:, None] - y[None, :]) ** 2
    acc = np.full((x.shape[0] + 1, y.shape[0] + 1), np.inf, dtype=D.dtype)
    acc[0, 0] = 0.0
    for i in range(x.shape[0]):
        for j in range(y.shape[0]):
            if mask[i, j]:
                acc[i + 1, j + 1] = D[i, j] + min(acc[i, j + 1], acc[i + 1, j], acc[i, j])
    return acc[-1, -1]


def test_an_inf_filled_matrix_of_the_cost_matrix_dtype_beside_a_boolean_mask():
    """np.full with a dtype was refused, and `D.dtype` of a float array the function made
    was refused wherever an argument was a boolean array."""
    x = np.array([0.1, 0.9, 0.4, 1.3])
    y = np.array([0.2, 1.1, 0.3, 1.0, 1.2])
    mask = np.abs(np.arange(4)[:, None] - np.arange(5)[None, :]) <= 1
    check_value_and_grad(masked_dtw_cost, (x, y, mask), (0, 1))
    with pytest.raises(AdjitError, match="np.full with the dtype float32"):
        adjit.grad(single_filled)(x)


def single_filled(x):
    return np.sum(np.full(4, 1.0, dtype=np.float32) * x)


def nearest_neighbour_products(x):
    """stumpy's style: an index array filled with -1 beside an inf-filled distance array."""
    nearest = np.full(x.shape[0], -1, dtype=np.int64)
    best = np.full(x.shape[0], np.inf)
    for i in range(x.shape[0]):
        for j in range(x.shape[0]):
            if j != i and abs(x[i] - x[j]) < best[i]:
                best[i] = abs(x[i] - x[j])
                nearest[i] = j
    s = 0.0
    for i in range(x.shape[0]):
        s += best[i] * x[nearest[i]]
    return s


def test_an_integer_array_filled_with_np_full():
    x = np.array([0.5, 1.7, -2.0, 0.9])
    g = check_value_and_grad(nearest_neighbour_products, (x,), 0)
    np.testing.assert_allclose(g, [2.0, 0.9, -0.5, 1.7], rtol=1e-14)


# -- np.ascontiguousarray as published code calls it before a loop ------------------------------

def contiguous_then_loop(x, w):
    x = np.ascontiguousarray(x)
    s = 0.0
    for i in range(x.shape[0]):
        s += np.sin(x[i]) * w[i]
    return s


def contiguous_views(A):
    row = np.ascontiguousarray(A[1])
    rows = np.ascontiguousarray(A[1:3])
    scaled = np.ascontiguousarray(A[:, 0] * 2.0)
    return np.sum(row * row) + np.sum(rows) + np.sum(scaled ** 2) + \
        np.sum(np.ascontiguousarray(A.T) ** 3)


def contiguous_alias_written(x):
    y = np.ascontiguousarray(x)     # (numba: x itself, so the write changes x)
    y[0] = 2.0 * y[1]
    return np.sum(x * x)


def contiguous_strided(A):
    c = np.ascontiguousarray(A[:, 0])
    return np.sum(c * c)


def test_ascontiguousarray_is_the_array_or_a_copy_as_numba_makes_it():
    x = np.linspace(0.1, 1.0, 5)
    g = check_value_and_grad(contiguous_then_loop, (x, np.arange(5.0)), 0)
    np.testing.assert_allclose(g, np.cos(x) * np.arange(5.0), rtol=1e-14)
    A = np.arange(12.0).reshape(3, 4) / 10.0
    g = check_value_and_grad(contiguous_views, (A,), 0)
    want = 3.0 * A ** 2
    want[1] += 2.0 * A[1]
    want[1:3] += 1.0
    want[:, 0] += 8.0 * A[:, 0]
    np.testing.assert_allclose(g, want, rtol=1e-13)
    check_value_and_grad(contiguous_alias_written, (x.copy(),), 0)
    with pytest.raises(AdjitError, match="numba returns or copies by its memory layout"):
        adjit.grad(contiguous_strided)(A)


# -- helpers' array and tuple defaults (QuantEcon's nelder_mead: bounds=np.array([[], []]).T) ----

@njit
def _tilt(x, c=0.0):
    return c * x[0]


@njit
def _penalized(x, a, bounds=np.array([[], []]).T, args=(), scale=np.float64(2.0)):
    s = scale * a * np.sum(x * x)
    for i in range(bounds.shape[0]):
        if x[i] < bounds[i, 0]:
            s += (bounds[i, 0] - x[i]) ** 2
    return s + _tilt(x, *args)


def with_defaults(x, a):
    return _penalized(x, a) + _penalized(x, a, np.array([[0.5, 1.0], [0.0, 1.0]]), (a,))


def test_a_helpers_array_and_tuple_defaults_are_its_constants():
    x = np.array([0.25, 0.75])
    ga, gx = check_value_and_grad(with_defaults, (x, 0.3), (1, 0))
    assert ga == pytest.approx(4.0 * (x @ x) + x[0], rel=1e-12)


_COMPLEX = np.array([1.0 + 2.0j, 3.0 - 1.0j])


def _real_parts(x, s):
    y = np.exp(x).real
    r = y.real              # the same array: a write through it is a write into y
    r[0] = 2.0 * s.real
    return np.sum(y * x.real) + x[1].real * s + (x * s).real[2]


def test_real_of_real_values_is_the_value_and_imag_is_zero():
    """`.real` of a float array is the array itself (numba's view of it), of a number the
    number (lenstronomy writes `.real` where a value may be complex); `.imag` is zero, an
    array of zeros for a float array, as numba has it (lenstronomy's cdot(a, b) given
    floats; it was refused)."""
    x, s = np.array([0.3, -0.2, 0.5]), 1.3
    gx, gs = check_value_and_grad(_real_parts, (x, s), argnums=(0, 1))
    # y = exp(x) with y[0] = 2s: sum(y * x) + x[1] s + s x[2]
    e = np.exp(x)
    np.testing.assert_allclose(gx, [2.0 * s, e[1] * (1 + x[1]) + s, e[2] * (1 + x[2]) + s],
                               rtol=1e-13)
    assert gs == pytest.approx(2.0 * x[0] + x[1] + x[2], rel=1e-13)

    def through_a_complex_global(s):
        c = _COMPLEX
        return s * np.sum(c.real * c.real)
    with pytest.raises(AdjitError, match=r"the module-level array '_COMPLEX' of complex "
                       r"numbers \(complex128\)"):
        adjit.grad(through_a_complex_global)(1.5)

    gx, gs = check_value_and_grad(_imaginary_parts, (x, s), argnums=(0, 1))
    np.testing.assert_array_equal(gx, 2.0 * s * x)
    assert gs == np.sum(x * x)


@njit
def _cdot(a, b):
    """lenstronomy's epl_util.cdot, written for complex numbers."""
    return a.real * b.real + a.imag * b.imag


def _imaginary_parts(x, s):
    y = np.exp(x)
    return s * np.sum(x * x + x.imag) + _cdot(s, x[0]) * x.imag[1] + s.imag + \
        np.sum(y.imag * x)


# -- stumpy's indices held as np.uint64 (numba joins uint64 with int64 into float64) ---------

def diagonal_products(T, m, g):
    """stumpy's _compute_diagonal: running dot products along a diagonal, indices held as
    np.uint64, the first window in a branch and the rest updated from it."""
    n = T.shape[0] - m + 1
    s = 0.0
    cov = 0.0
    for i in range(n - g):
        uint64_i = np.uint64(i)
        uint64_j = np.uint64(i + g)
        if uint64_i == 0:
            cov = np.dot(T[uint64_i:uint64_i + m], T[uint64_j:uint64_j + m])
        else:
            last = np.uint64(m) - np.uint64(1)
            cov = cov - T[uint64_i - np.uint64(1)] * T[uint64_j - np.uint64(1)] + \
                T[uint64_i + last] * T[uint64_j + last]
        s += cov * cov
    return s


def uint64_lookups(T, g):
    """np.uint64 indices into an array made in the function, in an expression of slices
    (stumpy's `T_B[uint64_j : uint64_j + uint64_m] - M_T[uint64_j]`): adjit's index check
    takes them as int64."""
    M = T * T
    uint64_m = np.uint64(2)
    s = 0.0
    cov = 0.0
    for i in range(T.shape[0] - g - 2):
        uint64_i = np.uint64(i)
        uint64_j = np.uint64(i + g)
        if uint64_i == 0 or uint64_j == 0:
            cov = np.dot(T[uint64_j:uint64_j + uint64_m] - M[uint64_j],
                         T[uint64_i:uint64_i + uint64_m] - M[uint64_i])
        else:
            cov = cov + M[uint64_j] * T[uint64_i]
        s += cov
    return s


def uint64_carried(x, steps):
    """A np.uint64 counter carried by a time loop (a checkpoint keeps it)."""
    k = np.uint64(0)
    y = 0.5
    for t in range(steps):
        y = math.sin(y * x[k]) + x[k]
        k = (k + np.uint64(1)) % np.uint64(x.shape[0])
    return y


@njit
def _checked_indices(k, n):
    # adjit's index checks, as generated code calls them on stumpy's np.uint64 indices:
    # numba would join uint64 with int64 into float64 and refuse it as an index
    a = np.arange(5.0)
    return a[_vec.index(k, n)] + a[_vec.take_index(k, n)]


def test_uint64_indices():
    assert _checked_indices(np.uint64(3), 5) == 6.0
    assert _checked_indices(np.int64(-2), 5) == 6.0
    T = np.linspace(-1.0, 1.3, 11) ** 2
    for g in (0, 2):
        check_value_and_grad(diagonal_products, (T, 4, g), 0)
    for g in (0, 3):
        check_value_and_grad(uint64_lookups, (T, g), 0)
    x = np.linspace(0.2, 0.9, 5)
    check_value_and_grad(uint64_carried, (x, 13), 0)
    recorded = adjit.grad(uint64_carried)(x, 13)
    for checkpoint in ("auto", 3):      # snapshots keep the counter on the int64 store
        ckpt = adjit.grad(uint64_carried, checkpoint=checkpoint)
        np.testing.assert_array_equal(ckpt(x, 13), recorded)
    assert "np.uint64(" in ckpt.source


# -- a range held in a name: stumpy's iter_range chosen by a diagonal's sign ----------------

def lagged_products(x, g):
    """stumpy's _compute_diagonal chooses the rows of a diagonal as a range held in a name."""
    n = x.shape[0]
    if g >= 0:
        iter_range = range(0, n - g)
    else:
        iter_range = range(-g, n)
    s = 0.0
    for i in iter_range:
        s += x[i] * x[i + g]
    for i in iter_range:        # read by a second loop
        s += 0.5 * x[i]
    return s


def strided_rows(x, backwards):
    rows = range(x.shape[0])
    if backwards:
        rows = range(x.shape[0] - 1, -1, -2)
    s = 1.0
    for i in rows:
        s = s * 0.5 + x[i] * x[i]
    return s


def range_measured(x):
    rows = range(1, x.shape[0])
    s = 0.0
    for i in rows:
        s += x[i] * x[i - 1]
    return s / len(rows)


def test_range_held_in_a_name():
    x = np.linspace(-0.4, 1.1, 7)
    for g in (-2, 0, 3):
        g_lag = check_value_and_grad(lagged_products, (x, g), 0)
        rows = range(-g, 7) if g < 0 else range(0, 7 - g)
        expected = np.full(7, 0.0)
        for i in rows:
            expected[i] += x[i + g] + 0.5
            expected[i + g] += x[i]
        np.testing.assert_allclose(g_lag, expected, rtol=1e-14)
    for backwards in (False, True):
        check_value_and_grad(strided_rows, (x, backwards), 0)
    with pytest.raises(AdjitError, match=r"a `range\(...\)` held as a value .* hold its "
                       r"bounds in names"):
        adjit.grad(range_measured)(x)


# -- a window tested whole before it is used (stumpy's rolling isfinite) ---------------------

def finite_windows(a, w):
    """Sums of squares over the windows with no NaN in them."""
    s = 0.0
    for i in range(a.shape[0] - w + 1):
        if np.all(np.isfinite(a[i:i + w])):
            s += np.sum(a[i:i + w] ** 2)
        elif np.any(np.isnan(a[i:i + w])):
            s += 0.5 * a[i] if not math.isnan(a[i]) else 0.0
    return s


def sorted_window_dot(a, x):
    """An inactive array of a slice's length that a derivative reads (np.dot's adjoint):
    still refused."""
    y = 0.4
    for i in range(a.shape[0] - 2):
        w = 1 + i % 3
        c = np.sort(a[i:i + w])
        y = np.sin(y) + np.dot(c, x[i:i + w]) * y
    return y


def test_window_tested_whole():
    a = np.linspace(0.1, 1.0, 8)
    a[4] = np.nan
    g = adjit.grad(finite_windows)(a, 3)
    # windows 0, 1 and 5 are finite (a[0:3], a[1:4], a[5:8]); windows 2, 3, 4 hold the
    # NaN: 0.5 * a[i] for i = 2, 3 (a[4] itself is NaN, so that window adds 0)
    expected = np.array([2 * a[0], 4 * a[1], 4 * a[2] + 0.5, 2 * a[3] + 0.5, 0,
                         2 * a[5], 2 * a[6], 2 * a[7]])
    np.testing.assert_allclose(g, expected, rtol=1e-14)
    assert adjit.value_and_grad(finite_windows)(a, 3)[0] == njit(finite_windows)(a, 3)
    b = np.linspace(0.1, 1.0, 8)
    check_value_and_grad(finite_windows, (b, 3), 0)
    # (y carries a value through the loop, so its iterations cannot be computed again)
    with pytest.raises(AdjitError, match=r"computed in a loop from a temporary array .* "
                       r"shape may change between iterations .* iterations depend on each "
                       r"other \(`y` carries"):
        adjit.grad(sorted_window_dot, argnums=1)(np.cos(np.arange(7.0)), np.ones(7))


# -- np.arange with a dtype (stumpy's np.arange(..., dtype=np.int64) of indices) -------------

def weighted_head(x, n):
    t = np.arange(n, dtype=np.float64)
    return np.sum(x[:n] * t) + np.sum(np.sin(x[1:n] * np.arange(1, n, dtype=np.float64)))


def every_other(x, n):
    s = 0.0
    for j in np.arange(0, n, 2, dtype=np.int64):
        s += x[j] ** 3
    idx = np.arange(1, n, 2, np.int64)          # the dtype by position
    return s + np.sum(x[idx] ** 2)


def int32_steps(x, n):
    return np.sum(x[:n] * np.arange(n, dtype=np.int32))


def test_arange_with_a_dtype():
    x = np.linspace(0.1, 1.0, 6)
    g = check_value_and_grad(weighted_head, (x, 4), 0)
    expected = np.array([0.0, 1.0, 2.0, 3.0, 0.0, 0.0])
    expected[1:4] += np.cos(x[1:4] * np.arange(1, 4)) * np.arange(1, 4)
    np.testing.assert_allclose(g, expected, rtol=1e-14)
    g = check_value_and_grad(every_other, (x, 5), 0)
    np.testing.assert_allclose(g, [3 * x[0] ** 2, 2 * x[1], 3 * x[2] ** 2, 2 * x[3],
                                   3 * x[4] ** 2, 0.0], rtol=1e-14)
    with pytest.raises(AdjitError, match=r"np.arange with the dtype int32.* \(\.astype"):
        adjit.grad(int32_steps)(x, 4)


def sorted_pairs(x):
    """A loop over an array a call makes, evaluated once before the loop."""
    s = 0.0
    prev = 0.0
    for v in np.sort(x):
        s += (v - prev) ** 2
        prev = v
    return s


def test_loop_over_a_call():
    x = np.array([0.3, -0.2, 0.9, 0.1])
    g = check_value_and_grad(sorted_pairs, (x,), 0)
    v = np.sort(x)      # d/dv of v0^2 + sum (v_k - v_{k-1})^2, mapped back through the order
    dv = 2 * (v - np.concatenate([[0.0], v[:-1]]))
    dv[:-1] -= 2 * (v[1:] - v[:-1])
    np.testing.assert_allclose(g, dv[np.argsort(np.argsort(x))], rtol=1e-14)


# -- a helper called for its effect that leaves with a bare `return` (stumpy) ---------------

@njit
def _scale_from(out, x, k):
    if k >= x.shape[0]:
        return
    for i in range(k, x.shape[0]):
        out[i] = x[i] * x[k]
    return


def scaled_tail(x, k):
    out = np.zeros(x.shape[0])
    _scale_from(out, x, k)
    return np.sum(out ** 2)


def test_bare_return_in_an_effect_helper():
    x = np.linspace(0.1, 1.0, 5)
    for k in (0, 2, 7):
        g = check_value_and_grad(scaled_tail, (x, k), 0)
        expected = np.zeros(5)
        if k < 5:       # sum_i (x_i x_k)^2 over i >= k
            expected[k:] += 2 * x[k:] * x[k] ** 2
            expected[k] += 2 * x[k] * np.sum(x[k:] ** 2)
        np.testing.assert_allclose(g, expected, rtol=1e-14)


@njit
def _scale_unless_zero(a, n):
    """The same without the final `return`: leaves early, else runs to its end (it was
    refused: "a path through the function ends without `return`")."""
    if n == 0:
        return
    for i in range(a.shape[0]):
        a[i] = a[i] * 1.1 + 0.1 * a[i] * a[i]
    a[0] += 1.0


def scaled_unless_zero(x, n):
    a = x.copy()
    _scale_unless_zero(a, n)
    return np.sum(a * a)


def test_bare_return_then_falling_off_the_end():
    x = np.array([0.5, 1.0, 1.5])
    check_value_and_grad(scaled_unless_zero, (x, 1), 0)
    np.testing.assert_allclose(check_value_and_grad(scaled_unless_zero, (x, 0), 0), 2 * x,
                               rtol=1e-15)


# -- ~ of a boolean mask (numpy's elementwise not) -------------------------------------------

def masked_out(D, mask):
    E = D.copy()
    E[~mask] = 10.0
    k = 5
    return np.sum(E ** 2) + (~k) * D[0] + np.sum(D[~mask] * 3.0) + np.sum(~mask * D)


def test_invert_of_a_mask():
    D = np.arange(6.0) / 7
    mask = np.array([True, False, True, False, True, True])
    g = check_value_and_grad(masked_out, (D, mask), 0)
    np.testing.assert_allclose(g, np.where(mask, 2 * D, 4.0) + [-6, 0, 0, 0, 0, 0],
                               rtol=1e-15)


# -- a name bound again to a new array made from itself (resampy's interp_delta) -------------

def rebound_from_itself(w, A):
    delta = np.diff(w)
    delta = np.append(delta, 0.0)       # a new array, bound to the same name
    v = np.sort(w)
    v = np.linalg.solve(A, v)
    return np.sum(delta * delta * w) + np.sum(v * w)


def test_name_bound_to_a_new_array_made_from_itself():
    w = np.linspace(0.1, 1.0, 5) ** 2
    A = np.eye(5) * 2.0 + 0.1
    check_value_and_grad(rebound_from_itself, (w, A), 0)
    check_value_and_grad(rebound_from_itself, (w, A), 1)


def _sorted_copy(x):
    y = x.copy()
    y.sort()
    return np.sum(y * np.arange(y.size))


def _sorted_rows(x):
    m = x.reshape(2, 3) * 1.5
    m.sort()
    return np.sum(m * np.arange(6.0).reshape(2, 3))


def _sorted_tail(x):
    y = x.copy()
    y[2:].sort()
    return np.sum(y * np.arange(6.0))


def _sorted_argument(x):
    x.sort()
    return np.sum(x * np.arange(6.0))


@pytest.mark.parametrize("f", [_sorted_copy, _sorted_rows, _sorted_tail, _sorted_argument])
def test_an_array_sorted_in_place(f):
    """`y.sort()`, numba's in-place sort (each row of a matrix; a slice sorts its part of the
    array; an argument sorted is the caller's, as numba leaves it): the gradient follows each
    element to its place (it was refused as an unknown method)."""
    x = np.array([0.31, 0.77, 0.12, 0.55, 0.93, 0.48])
    mine, theirs = x.copy(), x.copy()
    value, g = adjit.value_and_grad(f)(mine)
    assert value == njit(f)(theirs)
    np.testing.assert_array_equal(mine, theirs)
    forward = njit(f)
    np.testing.assert_allclose(g, fd_grad_copied(forward, x), rtol=1e-6, atol=1e-8)


def fd_grad_copied(forward, x, h=1e-6):
    """Central differences of a forward that sorts its argument in place: each call on a
    copy."""
    g = np.zeros_like(x)
    for i in range(x.size):
        up, down = x.copy(), x.copy()
        up[i] += h
        down[i] -= h
        g[i] = (forward(up) - forward(down)) / (2 * h)
    return g


def _filled_each_iteration(x):
    acc = np.empty(3)
    r = 0.0
    for k in range(4):
        acc.fill(0.0)
        for i in range(x.size):
            acc[i % 3] += x[i] * (k + 1)
        r += np.sum(acc ** 2)
    return r


def _filled_with_values(x):
    a = np.empty((2, 3))
    a.fill(x[0] * 2.0)
    a[1].fill(x[1])
    y = x * 1.0
    y[3:].fill(np.sin(x[0]))
    return np.sum(a * x.reshape(2, 3)) + np.sum(y ** 2)


@pytest.mark.parametrize("f", [_filled_each_iteration, _filled_with_values])
def test_an_array_filled_in_place(f):
    """`a.fill(v)` as numba's (a[...] = v; a row or a slice fills its part): a workspace
    cleared each iteration, values that carry a derivative (it was refused as an unknown
    method)."""
    check_value_and_grad(f, [np.array([0.31, 0.77, 0.12, 0.55, 0.93, 0.48])],
                         value_rtol=1e-15)


@njit
def _column_cost(x, y):
    s = 0.0
    for i in range(x.shape[1]):
        s += np.sum((x[:, i] - y[:, i]) ** 2)
    return s


@njit
def _maybe_transformed(x, y, pre=False, tx=None, ty=None):
    """aeon's distance functions: optional arrays defaulted to the series under `is None`,
    passed on by keyword."""
    if tx is None:
        tx = x
    if ty is None:
        ty = y
    if not pre:
        return _column_cost(x=x, y=y)
    return _column_cost(x=tx, y=ty)


def _passed_on_left_out(x, y, pre=False, tx=None, ty=None):
    return _maybe_transformed(x=x, y=y, pre=pre, tx=tx, ty=ty)


@njit
def _banded_length(n, flag=0, radius=None):
    if flag == 2 or (flag == 0 and radius is not None):
        if radius is None:
            radius = 1
        return n - radius
    return n


def _left_out_to_a_helper(x, flag=0, radius=None):
    s = 0.0
    for i in range(_banded_length(x.shape[0], flag, radius)):
        s += x[i] * x[i]
    return s


def test_an_argument_left_out_passed_on_to_a_helper():
    """The differentiated function's own optional argument left out (None) and passed on to
    a helper that tests it with `is None`: None there too, as numba types it (it was an
    internal error where the helper defaults an array to it, and a refusal pointing at a
    branch that never runs where it defaults a number)."""
    x = np.array([[1.0, 2.0, 3.0], [0.5, 0.1, 0.2]])
    y = np.array([[0.3, -1.0, 0.7], [0.2, 0.4, -0.6]])
    check_value_and_grad(_passed_on_left_out, (x, y), (0, 1), value_rtol=1e-15)
    check_value_and_grad(_left_out_to_a_helper, (np.array([1.0, 2.0, 3.0]),), 0,
                         value_rtol=1e-15)


@njit
def _univariate(x, y):
    d = 0.0
    for i in range(x.shape[0]):
        d += (x[i] - y[i]) ** 2
    return d


@njit
def _multivariate(x, y):
    d = 0.0
    for c in range(x.shape[0]):
        d += _univariate(x[c], y[c])
    return d


def _by_rank(x, y):
    """aeon's dispatch on the series' ranks: numba types each branch for the ranks given and
    prunes the others; so does adjit for `and` of such tests (it pruned single tests only:
    the other branch was refused, with a message about code that never runs)."""
    if x.ndim == 1 and y.ndim == 1:
        return _univariate(x, y)
    if x.ndim == 2 and y.ndim == 2:
        return _multivariate(x, y)
    raise ValueError("x and y must be 1D or 2D")


@pytest.mark.parametrize("shape", [(5,), (2, 4)])
def test_tests_of_ranks_joined_by_and_are_decided_where_the_code_is_made(shape):
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=shape), rng.normal(size=shape)
    check_value_and_grad(_by_rank, (x, y), (0, 1), value_rtol=1e-15)


def _longer_first(x, y):
    """DTW codes put the longer series first: `x, y = y, x` of two arguments in a branch
    (it was refused as names bound to different arrays on the paths of an `if`)."""
    if x.shape[0] < y.shape[0]:
        x, y = y, x
    s = 0.0
    for i in range(y.shape[0]):
        s += (x[i] - y[i]) ** 2 * x[i + 1]
    return s


@njit
def _ordered_pair(x, y):
    if x[0] < y[0]:
        x, y = y[1:], x[1:]
    return x[0] * y[1] + np.sum(x)


def _swapped_in_a_helper(x, y):
    return _ordered_pair(x, y) + _ordered_pair(y * 2.0, x)


def _swapped_then_rebound(a, b):
    if a[0] < b[0]:
        b, a = a, b * 2.0
    a = a * 0.5
    return np.sum(a[:3] ** 2 * b[:3])


X2 = np.array([1.1, 2.0, 3.0])
Y2 = np.array([0.5, 4.0, 1.5, 2.5])


@pytest.mark.parametrize("f", [_longer_first, _swapped_in_a_helper, _swapped_then_rebound])
@pytest.mark.parametrize("x, y", [(X2, Y2), (Y2, X2)])
def test_two_arguments_swapped_in_a_branch(f, x, y):
    check_value_and_grad(f, (x, y), (0, 1), value_rtol=1e-15)


def _view_kept_across_a_swap(x, y):
    v = x[1:]
    if x[0] < y[0]:
        x, y = y, x
    return np.sum(v * 2.0) + x[0] * y[1]


@njit
def _swapped_then_written(x, y):
    if x[0] < y[0]:
        x, y = y, x
    x[0] = 2.0 * y[0]
    return np.sum(x[:3] * y[:3])


def _writes_after_a_swap(x, y):
    a, b = x.copy(), y.copy()
    return _swapped_then_written(a, b) + a[0]


def test_what_a_swap_leaves_unknown_is_refused():
    """A view of an argument taken before the swap, and a write after it into arrays the
    caller reads again: which array each name means depends on the branch taken."""
    with pytest.raises(AdjitError, match="bound to different arrays or views"):
        adjit.grad(_view_kept_across_a_swap)(X2, Y2)
    with pytest.raises(AdjitError, match="a write into 'x' after an `if`"):
        adjit.grad(_writes_after_a_swap)(X2, Y2)


@njit
def _about_axis(angle, axis):
    """A rotation matrix for a number or an array of angles (np.asarray of a float is a 0-d
    array, whose shape prefixes the matrix's), as astrodynamics codes write it."""
    angle = np.asarray(angle)
    c, s = np.cos(angle), np.sin(angle)
    j, k = (axis + 1) % 3, (axis + 2) % 3
    R = np.zeros(angle.shape + (3, 3))
    R[..., axis, axis] = 1.0
    R[..., j, j] = c
    R[..., j, k] = -s
    R[..., k, j] = s
    R[..., k, k] = c
    return R


def _rotated(v, angle, tilt):
    u = _about_axis(angle, 2) @ v
    return np.sum((_about_axis(tilt, 0) @ u) * np.array([1.0, -2.0, 0.5])) + \
        np.asarray(angle * tilt).sum()


def test_asarray_of_a_float_is_a_zero_dimensional_array():
    """(it was refused: `np.asarray` of something other than a list or an array)"""
    check_value_and_grad(_rotated, (np.array([0.3, -1.2, 2.0]), 0.7, 0.4), (0, 1, 2),
                         value_rtol=1e-15)


# early returns and clamped defaults, as vectorbt's kernels write them ------------------------

@njit
def _ewm_mean_1d(a, alpha):
    """vectorbt's ewm_mean_1d_nb: an empty input answered before the recurrence."""
    N = len(a)
    out = np.empty(N, dtype=np.float64)
    if N == 0:
        return out
    out[0] = a[0]
    for i in range(1, N):
        out[i] = (1 - alpha) * out[i - 1] + alpha * a[i]
    return out


def _ewm_loss(prices, alpha):
    s = 0.0
    for col in range(prices.shape[1]):
        s += np.sum(_ewm_mean_1d(prices[:, col], alpha) ** 2)
    return s


def test_a_helper_returning_its_own_array_early():
    """`if N == 0: return out` before the loop that fills `out`, the same array returned at
    the end: numba gives the call that array either way (it was refused as a helper that
    returns an array from one of several `return`s). Also the empty input."""
    P = np.random.default_rng(5).uniform(1.0, 2.0, size=(12, 3))
    check_value_and_grad(_ewm_loss, (P, 0.3), (0, 1))
    assert adjit.grad(_ewm_loss)(np.zeros((0, 2)), 0.3).shape == (0, 2)


@njit
def _mean_square_of_finite(r):
    """vectorbt's tail_ratio_1d_nb / value_at_risk_1d_nb shape: a temporary array, then an
    early return when it is empty."""
    x = r[~np.isnan(r)]
    if len(x) < 1:
        return np.nan
    return np.mean(x * x)


def _per_column(R):
    out = np.empty(R.shape[1])
    for c in range(R.shape[1]):
        out[c] = _mean_square_of_finite(R[:, c])
    return np.nansum(out)


def test_an_early_return_in_a_helper_called_in_a_column_loop():
    """The columns' iterations are independent; the early return was lowered to a flag and
    a result assigned under two tests, which made the result look carried from one column
    to the next: the temporary array of a changing length was refused ("`_result1`
    carries a value"). The rest of the helper after `if ...: return` is now its `else`."""
    R = np.random.default_rng(6).normal(size=(20, 3))
    R[3, 1] = np.nan
    R[:, 2] = np.nan           # an all-NaN column takes the early return
    g = check_value_and_grad(_per_column, (R,), 0)
    assert np.all(g[:, 2] == 0.0) and g[3, 1] == 0.0


@njit
def _rolling_var(a, window, minp=None):
    """vectorbt's rolling_std_1d_nb: the left-out minp defaulted, then clamped."""
    if minp is None:
        minp = window
    minp = max(minp, 1)
    out = np.full(a.shape[0], np.nan)
    for i in range(minp - 1, a.shape[0]):
        out[i] = np.var(a[max(0, i - window + 1):i + 1])
    return out


def _rolling_var_loss(a):
    return np.nansum(_rolling_var(a, 4)) + np.nansum(_rolling_var(a, 3, 2) ** 2)


def test_an_optional_argument_defaulted_then_assigned_again():
    """`minp = max(minp, 1)` after `if minp is None: minp = window`: minp holds a value
    there on every path, as numba types it (it was refused as assigned where it may not be
    None). Where the data decides whether it is None it is still refused (above)."""
    check_value_and_grad(_rolling_var_loss, (np.linspace(1.0, 2.0, 10) ** 2,), 0)


@njit
def _cond_value_at_risk_1d(returns, cutoff=0.05):
    """vectorbt's cond_value_at_risk_1d_nb (returns/nb.py), as published."""
    if len(returns) == 0:
        return np.nan
    cutoff_index = int((len(returns) - 1) * cutoff)
    return np.mean(np.partition(returns, cutoff_index)[: cutoff_index + 1])


@njit
def _cond_value_at_risk(returns, cutoff=0.05):
    out = np.empty(returns.shape[1], dtype=np.float64)
    for col in range(returns.shape[1]):
        out[col] = _cond_value_at_risk_1d(returns[:, col], cutoff)
    return out


def _shortfall_loss(R):
    return np.sum(_cond_value_at_risk(R, 0.2)) + np.partition(R[:, 0], -1)[-1] + \
        np.partition(R[:, 1], (1, 4))[4]


def test_partition_as_expected_shortfall_uses_it():
    """np.partition: the mean of the k + 1 smallest returns does not depend on the order
    the implementation leaves them in; each element's adjoint goes back to where numba's
    partition took it from (it was refused: not differentiated)."""
    R = np.random.default_rng(7).normal(size=(30, 3))
    g = check_value_and_grad(_shortfall_loss, (R,), 0, value_rtol=0.0)
    k = int(29 * 0.2)
    for col in (1, 2):      # 1 / (k + 1) on each of the k + 1 smallest of the column
        want = np.zeros(30)
        want[np.argsort(R[:, col])[:k + 1]] = 1.0 / (k + 1)
        if col == 1:
            want[np.argsort(R[:, 1])[4]] += 1.0
        np.testing.assert_allclose(g[:, col], want, rtol=1e-14, atol=0)


@njit
def _same(v):
    return v


def _reassigned_itself(x, c=None):
    c = c
    if c is None:
        return np.sum(x)
    return 2.0 * np.sum(x * x)


def _reassigned_through_a_helper(x, c=None):
    c = _same(c)
    if c is None:
        return np.sum(x)
    return 2.0 * np.sum(x * x)


def _reassigned_maybe_none(x, c=None):
    c = c if x[0] > 0 else None
    if c is None:
        return np.sum(x)
    return 2.0 * np.sum(x * x)


def _defaulted_to_itself(x, c=None):
    if c is None:
        c = _same(c)
    if c is None:
        return np.sum(x)
    return 2.0 * np.sum(x * x)


@pytest.mark.parametrize("f", [_reassigned_itself, _reassigned_through_a_helper,
                               _reassigned_maybe_none, _defaulted_to_itself])
def test_an_optional_argument_assigned_what_may_still_be_none_is_refused(f):
    """A left-out argument assigned a value that may be None (itself, a helper's result,
    a conditional with a None branch): numba keeps `c is None` true there. Taking the
    assignment for a value pruned the branch numba runs (a review found it: [4, 8] where
    the gradient is [1, 1]); refused."""
    with pytest.raises(AdjitError, match="`c`.*assigned where it may not be None"):
        adjit.grad(f)(np.array([1.0, 2.0]))


def _self_assigned_array(x):
    s = 0.0
    y = x.copy()
    for i in range(3):
        y = y                       # (a line Python runs as nothing)
        y = np.sin(y) + x
        s += y[i]
    return s


def _self_assigned_in_branches(x):
    s = 0.0
    for i in range(3):
        s = s
    if x[0] > 0.0:
        x = x
    return np.sum(x * x) + s


@pytest.mark.parametrize("f", [_self_assigned_array, _self_assigned_in_branches])
def test_a_name_assigned_to_itself_changes_nothing(f):
    """`y = y` binds y to what it holds: the array rebound after it in the loop was refused
    as an array assigned twice."""
    check_value_and_grad(f, (np.array([0.3, 0.5, 0.7]),), 0, value_rtol=1e-15)


# An optional argument left out and passed on to a helper adjit keeps as numba's call (aeon's
# dtw_distance(x, y) -> create_band_bounds(n, m, window): two arrays from either of two
# returns), where no derivative flows: numba's call gets None.

@njit
def _band_bounds(n, m, window=None):
    if window is not None and window != 1.0:
        return np.zeros(n, dtype=np.int32), np.full(n, m // 2, dtype=np.int32)
    return np.zeros(n, dtype=np.int32), np.full(n, m, dtype=np.int32)


@njit
def banded_squared_distance(x, y, window=None):
    j_start, j_end = _band_bounds(x.shape[0], y.shape[0], window)
    s = 0.0
    for i in range(x.shape[0]):
        for j in range(j_start[i], j_end[i]):
            s += (x[i] - y[j]) ** 2
    return s


def test_an_optional_argument_left_out_passed_to_a_kept_helper():
    x = np.array([0.3, -1.2, 0.8, 2.1, -0.4])
    y = np.array([1.1, 0.2, -0.7, 0.5, 1.9])
    for args in ((x, y), (x, y, 0.5)):
        value, g = adjit.value_and_grad(banded_squared_distance, argnums=(0, 1))(*args)
        assert value == banded_squared_distance(*args)
        for k in (0, 1):
            np.testing.assert_allclose(g[k], fd_grad(banded_squared_distance, list(args), k),
                                       rtol=1e-7)


# A helper returning part of an array it made from one of several returns (aeon's soft-DTW:
# `return _dtw_cost_matrix(x, y)` when gamma is 0, else `return cost_matrix[1:, 1:]`): the
# caller's copy of that part is what numba's view holds, since nothing else holds the array.
# Part of an argument returned so stays refused: numba's caller would write the argument.

@njit
def _hard_cost(x, y):
    cm = np.full((x.shape[0] + 1, y.shape[0] + 1), np.inf)
    cm[0, 0] = 0.0
    for i in range(x.shape[0]):
        for j in range(y.shape[0]):
            cm[i + 1, j + 1] = (x[i] - y[j]) ** 2 + min(cm[i, j], cm[i, j + 1], cm[i + 1, j])
    return cm[1:, 1:]


@njit
def _soft_cost(x, y, gamma):
    if gamma == 0.0:
        return _hard_cost(x, y)
    cm = np.full((x.shape[0] + 1, y.shape[0] + 1), np.inf)
    cm[0, 0] = 0.0
    for i in range(x.shape[0]):
        for j in range(y.shape[0]):
            a, b, c = -cm[i, j] / gamma, -cm[i, j + 1] / gamma, -cm[i + 1, j] / gamma
            m = max(a, b, c)
            cm[i + 1, j + 1] = (x[i] - y[j]) ** 2 - gamma * (
                math.log(math.exp(a - m) + math.exp(b - m) + math.exp(c - m)) + m)
    return cm[1:, 1:]


@njit
def soft_dtw(x, y, gamma=1.0):
    cost = _soft_cost(x, y, gamma)
    cost[0, 0] += 0.0           # (the caller may write its result, as numba's may)
    return cost[x.shape[0] - 1, y.shape[0] - 1]


@njit
def _tail_or_scaled(x, k):
    if k == 0:
        return x[1:]
    return x[1:] * 2.0


def tail_written(x, k):
    t = _tail_or_scaled(x, k)
    t[0] = 5.0                  # numba writes x[1] where k is 0
    return np.sum(x * x)


def test_a_helper_returning_part_of_its_own_array_from_several_returns():
    x = np.array([0.3, -1.2, 0.8, 2.1, -0.4])
    y = np.array([1.1, 0.2, -0.7, 0.5])
    for gamma in (1.0, 0.5, 0.0):
        value, g = adjit.value_and_grad(soft_dtw, argnums=(0, 1))(x, y, gamma)
        assert value == soft_dtw(x, y, gamma)
        for k in (0, 1):
            np.testing.assert_allclose(g[k], fd_grad(soft_dtw, [x, y, gamma], k), rtol=1e-6,
                                       atol=1e-9)
    with pytest.raises(AdjitError, match="one of several `return`s"):
        adjit.grad(tail_written)(x, 0)


# A helper swapping its series and transposing its (boolean) window mask on one path (aeon's
# _dtw_distance: `if x.shape[1] < y.shape[1]: x, y = y, x; bounding_matrix =
# bounding_matrix.T`), called from another function: the mask is the caller's array as it is
# on one path and its transpose on the other.

@njit
def _masked_pairs(x, y, bm):
    if x.shape[1] < y.shape[1]:
        x, y = y, x
        bm = bm.T
    s = 0.0
    for i in range(x.shape[1]):
        for j in range(y.shape[1]):
            if bm[i, j]:
                s += (x[0, i] - y[0, j]) ** 2
    return s


@njit
def masked_pair_distance(x, y):
    bm = np.full((x.shape[1], y.shape[1]), True)
    bm[0, y.shape[1] - 1] = False
    return _masked_pairs(x, y, bm)


def test_a_helper_transposing_its_mask_on_one_path():
    rng = np.random.default_rng(0)
    for n, m in ((4, 6), (6, 4)):
        x, y = rng.standard_normal((1, n)), rng.standard_normal((1, m))
        value, g = adjit.value_and_grad(masked_pair_distance, argnums=(0, 1))(x, y)
        assert value == masked_pair_distance(x, y)
        for k in (0, 1):
            np.testing.assert_allclose(g[k], fd_grad(masked_pair_distance, [x, y], k),
                                       rtol=1e-6)


# min, max and sum of an array's shape, as numba iterates the tuple of sizes (`k =
# min(a.shape)` for the rank of a thin SVD)

def _leading_block(a):
    k = min(a.shape)
    m = max(a.shape)
    t = sum(a.shape, 1)
    return np.sum(a[:k, :k] ** 2) * m + t * a[0, 0]


def _thin_singular_vectors(a):
    u, s, vh = np.linalg.svd(a)
    k = min(a.shape)
    return np.sum(u[:, :k] ** 3) + np.sum(vh[:k] * 0.5) + np.sum(s)


@pytest.mark.parametrize("f", [_leading_block, _thin_singular_vectors])
def test_builtins_over_an_array_shape(f):
    for shape in ((2, 3), (4, 2)):
        a = np.random.default_rng(5).random(shape)
        value, g = adjit.value_and_grad(f)(a)
        forward = njit(f)
        assert value == pytest.approx(forward(a), rel=1e-14)
        np.testing.assert_allclose(g, fd_grad(forward, [a], 0), rtol=1e-6, atol=1e-9)


# A helper that calls itself and returns an array no derivative flows through (aeon's
# _sakoe_chiba_bounding, a boolean window mask transposed from its own recursive call): kept
# as numba's call, as other helpers adjit cannot read are.

@njit
def _window_mask(n, m, r):
    if n > m:
        return _window_mask(m, n, r).T
    mat = np.full((n, m), False)
    t = int(r * min(n, m))
    for i in range(n):
        mat[max(0, i - t):min(m, i + t + 1), i] = True
    return mat


@njit
def windowed_pairs(x, y, window):
    mask = _window_mask(x.shape[0], y.shape[0], window)
    s = 0.0
    for i in range(x.shape[0]):
        for j in range(y.shape[0]):
            if mask[i, j]:
                s += (x[i] - 0.5 * y[j]) ** 2
    return s


@njit
def _fill_from(a, i, v):
    if i < a.shape[0]:
        a[i] = v
        _fill_from(a, i + 1, v * 2.0)


def filled_recursively(x):
    a = np.zeros(4)
    _fill_from(a, 0, x[0])          # read: repeated 2 levels deep, as it returns nothing
    return np.sum(a * x)


def test_a_recursive_helper_no_derivative_flows_through():
    x = np.array([0.3, -1.2, 0.8, 2.1, -0.4, 1.0])
    y = np.array([1.1, 0.2, -0.7, 0.5])
    for a, b in ((x, y), (y, x)):
        value, g = adjit.value_and_grad(windowed_pairs, argnums=(0, 1))(a, b, 0.4)
        assert value == windowed_pairs(a, b, 0.4)
        for k in (0, 1):
            np.testing.assert_allclose(g[k], fd_grad(windowed_pairs, [a, b, 0.4], k),
                                       rtol=1e-6)
    with pytest.raises(RecursionError, match="_fill_from called itself more than 2 levels"):
        adjit.grad(filled_recursively)(x[:4])       # (repeated, as numbers' recursion is)


# A solver given the function and an `args` tuple holding an array (FinancePy's
# newton_secant(delta_fit, x0, args=(..., params))): the arrays reach the function's
# `*args`, and what it writes there reaches the caller's array, as in numba.

@njit
def _secant_root(func, x0, args=(), tol=1e-13, maxiter=60):
    x = x0
    for _ in range(maxiter):
        fx = func(x, *args)
        d = (func(x + 1e-7, *args) - fx) / 1e-7
        x_new = x - fx / d
        if abs(x_new - x) < tol:
            return x_new
        x = x_new
    return x


@njit
def _cubic(x, *args):
    a = args[0]
    p = args[1]
    return x * x * x - a * x - p[0]


@njit
def cubic_root(a, p):
    return _secant_root(_cubic, 1.5, args=(a, p))


@njit
def _bumped(x, *args):
    p = args[0]
    p[0] += x
    return x * p[1] + args[1]


@njit
def _applied(func, x, args=()):
    return func(x, *args)


@njit
def written_through_star_args(x, q):
    q2 = q * 1.0
    r = _applied(_bumped, x, args=(q2[1:], 0.5))
    return r + np.sum(q2 * q2)


def test_arrays_in_star_args_of_a_function_passed_to_a_solver():
    a, p = 2.0, np.array([1.0])
    value, g = adjit.value_and_grad(cubic_root, argnums=(0, 1))(a, p)
    assert value == pytest.approx(cubic_root(a, p), rel=1e-12)
    root = value        # x^3 - a x - p = 0: dx/da = x / (3x^2 - a), dx/dp = 1 / (3x^2 - a)
    np.testing.assert_allclose(g[0], root / (3 * root ** 2 - a), rtol=1e-6)
    np.testing.assert_allclose(g[1], [1 / (3 * root ** 2 - a)], rtol=1e-6)
    q = np.array([1.0, 2.0, 3.0, 4.0])
    value, g = adjit.value_and_grad(written_through_star_args, argnums=(0, 1))(0.7, q)
    assert value == written_through_star_args(0.7, q)
    for k in (0, 1):
        np.testing.assert_allclose(g[k], fd_grad(written_through_star_args, [0.7, q], k),
                                   rtol=1e-6)
