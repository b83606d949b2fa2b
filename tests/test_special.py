"""scipy.special inside differentiated code, as numba users reach it and as Python users
write it.

numba cannot call scipy.special's ufuncs, so numba code takes the C function's address in
scipy.special.cython_special and wraps it in a ctypes function type (the style of numba
density libraries): adjit recognizes such a wrapper by its address and gives its call the
registry's derivative. Outside numba's reach, the ufuncs themselves work on numbers and
arrays. Gradients are checked against central differences of numba's forward (or of the
Python function where numba cannot compile it) and, where JAX is installed, against
jax.scipy.special."""
import ctypes
import math

import numpy as np
import pytest
import scipy.special as sc
from numba import njit
from numba.extending import get_cython_function_address

import adjit
from adjit import AdjitError
from fd import fd_grad


def _wrap(symbol, nargs):
    address = get_cython_function_address("scipy.special.cython_special", symbol)
    return ctypes.CFUNCTYPE(ctypes.c_double, *[ctypes.c_double] * nargs)(address)


_erf = _wrap("__pyx_fuse_1erf", 1)
_ndtri = _wrap("ndtri", 1)
_stdtr = _wrap("__pyx_fuse_0stdtr", 2)
_gammainc = _wrap("gammainc", 2)
_voigt = _wrap("voigt_profile", 3)


@njit
def norm_cdf(x, mu, sigma):
    z = (x - mu) / (sigma * math.sqrt(2.0))
    return 0.5 * (1.0 + _erf(z))


@njit
def norm_ppf(p, mu, sigma):
    return mu + sigma * _ndtri(p)


@njit
def t_cdf(x, df, loc, scale):
    return _stdtr(df, (x - loc) / scale)


def binned_fit_cost(params, edges, counts):
    """A binned least-squares fit of a normal and a Student t mixture, as a fitting library
    writes it: cdf differences per bin."""
    mu, sigma, frac = params[0], params[1], params[2]
    total = np.sum(counts)
    cost = 0.0
    for i in range(counts.shape[0]):
        p_norm = norm_cdf(edges[i + 1], mu, sigma) - norm_cdf(edges[i], mu, sigma)
        p_t = t_cdf(edges[i + 1], 4.0, mu, sigma) - t_cdf(edges[i], 4.0, mu, sigma)
        expected = total * (frac * p_norm + (1.0 - frac) * p_t)
        cost += (counts[i] - expected) ** 2 / (expected + 1.0)
    return cost


def quantile_loss(params, qs, targets):
    s = 0.0
    for i in range(qs.shape[0]):
        s += (norm_ppf(qs[i], params[0], params[1]) - targets[i]) ** 2
    return s + _gammainc(2.0, params[1])          # in x: differentiable


def vectorized_special(w, x):
    """scipy.special's ufuncs on arrays and numbers (numba does not compile these)."""
    z = x * w[0]
    return np.sum(sc.log_ndtr(z) + sc.xlogy(w[1], sc.expit(z) + 1.0)) + \
        sc.gammaln(w[1] + 2.0) + np.sum(sc.i0e(z) * sc.erfc(z)) + sc.betaln(w[0] + 1.0, w[1])


EDGES = np.linspace(-3.0, 3.0, 9)
COUNTS = np.array([3.0, 11.0, 24.0, 40.0, 38.0, 26.0, 9.0, 4.0])


def test_address_wrappers_in_a_binned_fit_match_numba_and_finite_differences():
    params = np.array([0.1, 1.2, 0.7])
    compiled = njit(binned_fit_cost)
    value, g = adjit.value_and_grad(binned_fit_cost)(params, EDGES, COUNTS)
    assert value == pytest.approx(compiled(params, EDGES, COUNTS), rel=1e-12)
    np.testing.assert_allclose(g, fd_grad(compiled, (params, EDGES, COUNTS), 0), rtol=1e-6)
    v = np.array([0.3, -0.2, 0.5])
    _, tangent = adjit.jvp(binned_fit_cost)(params, EDGES, COUNTS, v)
    assert tangent == pytest.approx(np.dot(g, v), rel=1e-11)


def test_a_quantile_function_matches_its_analytic_derivative():
    qs, targets = np.array([0.1, 0.5, 0.9]), np.array([-1.0, 0.2, 1.5])
    params = np.array([0.2, 0.9])
    g = adjit.grad(quantile_loss)(params, qs, targets)
    z = sc.ndtri(qs)
    r = params[0] + params[1] * z - targets
    expected = [2.0 * np.sum(r), 2.0 * np.sum(r * z) + params[1] * math.exp(-params[1])]
    np.testing.assert_allclose(g, expected, rtol=1e-12)


def test_ufuncs_on_arrays_and_numbers_match_finite_differences():
    w, x = np.array([0.8, 1.7]), np.linspace(-2.0, 2.0, 9) + 0.1     # (i0e: a kink at 0)
    value, g = adjit.value_and_grad(vectorized_special)(w, x)
    assert value == pytest.approx(vectorized_special(w, x), rel=1e-13)
    np.testing.assert_allclose(g, fd_grad(vectorized_special, (w, x), 0), rtol=1e-6)
    g_x = adjit.grad(vectorized_special, argnums=1)(w, x)
    np.testing.assert_allclose(g_x, fd_grad(vectorized_special, (w, x), 1), rtol=1e-6,
                               atol=1e-9)


def _shape_parameter(a):
    return _gammainc(a[0], 1.5)


def _voigt_inactive(x, sigma):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * _voigt(0.5, sigma, 0.3)          # no derivative flows through it
    return s


def _voigt_active(x):
    return _voigt(x[0], 1.0, 0.3)


def test_parameters_without_a_derivative_are_refused_by_name():
    with pytest.raises(AdjitError, match=r"a derivative through `a`, argument 1 of "
                                         r"scipy.special.gammainc.*in `x` only"):
        adjit.grad(_shape_parameter)(np.array([2.0]))
    with pytest.raises(AdjitError, match=r"a derivative through `df`.*stdtr"):
        adjit.grad(lambda_free_t, argnums=1)(0.3, 4.0)
    x = np.array([0.2, -0.4])
    np.testing.assert_allclose(adjit.grad(_voigt_inactive)(x, 1.2),
                               [sc.voigt_profile(0.5, 1.2, 0.3)] * 2, rtol=1e-14)
    with pytest.raises(AdjitError, match="has no derivative rule"):
        adjit.grad(_voigt_active)(x)


def lambda_free_t(x, df):
    return _stdtr(df, x)


def test_gradients_agree_with_jax_scipy_special():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jsp = pytest.importorskip("jax.scipy.special")
    jnp = jax.numpy

    def jax_version(w, x):
        z = x * w[0]
        return jnp.sum(jsp.log_ndtr(z) + jsp.xlogy(w[1], jsp.expit(z) + 1.0)) + \
            jsp.gammaln(w[1] + 2.0) + jnp.sum(jsp.i0e(z) * jsp.erfc(z)) + \
            jsp.betaln(w[0] + 1.0, w[1])

    w, x = np.array([0.8, 1.7]), np.linspace(-2.0, 2.0, 9) + 0.1     # (i0e: a kink at 0)
    np.testing.assert_allclose(adjit.grad(vectorized_special)(w, x),
                               np.asarray(jax.grad(jax_version)(w, x)), rtol=1e-10)


# numba's first-class function wrappers of an address, the other way numba code reaches them
def _first_class(symbol, signature):
    from numba.types import WrapperAddressProtocol
    address = get_cython_function_address("scipy.special.cython_special", symbol)
    cls = type(symbol, (WrapperAddressProtocol,), {
        "__wrapper_address__": lambda self: address, "signature": lambda self: signature})
    return cls()


def test_wrapper_address_protocol_objects_are_recognized_too():
    from numba import float64
    ndtri = _first_class("ndtri", float64(float64))
    voigt = _first_class("voigt_profile", float64(float64, float64, float64))
    global _FC_NDTRI, _FC_VOIGT
    _FC_NDTRI, _FC_VOIGT = ndtri, voigt
    p, x = np.array([0.5, 2.0]), np.array([0.2, 0.6, 0.9])
    g = adjit.grad(_first_class_loss)(p, x)
    np.testing.assert_allclose(g, [np.sum(sc.ndtri(x)), np.sum(sc.voigt_profile(x, 1.0, 0.5))],
                               rtol=1e-13)
    with pytest.raises(AdjitError, match="has no derivative rule"):
        adjit.grad(_first_class_voigt_active)(p)


_FC_NDTRI = _FC_VOIGT = None


def _first_class_loss(p, x):
    s = 0.0
    for i in range(x.shape[0]):
        s += _FC_NDTRI(x[i]) * p[0] + _FC_VOIGT(x[i], 1.0, 0.5) * p[1]
    return s


def _first_class_voigt_active(p):
    return _FC_VOIGT(p[0], 1.0, 0.5)
