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
from fd import fd_grad


def _wrap(symbol, nargs):
    address = get_cython_function_address("scipy.special.cython_special", symbol)
    return ctypes.CFUNCTYPE(ctypes.c_double, *[ctypes.c_double] * nargs)(address)


_erf = _wrap("__pyx_fuse_1erf", 1)
_ndtri = _wrap("ndtri", 1)
_stdtr = _wrap("__pyx_fuse_0stdtr", 2)
_gammainc = _wrap("gammainc", 2)
_voigt = _wrap("voigt_profile", 3)
# voigt_profile's derivative calls scipy's complex wofz, where adjit knows how C passes a
# double complex (adjit/runtime/special.py HAS_WOFZ)
needs_wofz = pytest.mark.skipif(not adjit.runtime.special.HAS_WOFZ,
                                reason="no rule for voigt_profile on this platform")


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


def _voigt_inactive(x, sigma):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * _voigt(0.5, sigma, 0.3)          # no derivative flows through it
    return s


def test_a_special_function_where_no_derivative_flows_is_called_as_it_is():
    x = np.array([0.2, -0.4])
    np.testing.assert_allclose(adjit.grad(_voigt_inactive)(x, 1.2),
                               [sc.voigt_profile(0.5, 1.2, 0.3)] * 2, rtol=1e-14)


def lambda_free_t(x, df):
    return _stdtr(df, x)


def _jax():
    """JAX in float64 with its scipy.special and numpy (the test skips without JAX)."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax, pytest.importorskip("jax.scipy.special"), jax.numpy


def test_gradients_agree_with_jax_scipy_special():
    jax, jsp, jnp = _jax()

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


@needs_wofz
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
    # a derivative through the first-class wrapper's Voigt profile, in x
    h = 1e-6
    assert adjit.grad(_first_class_voigt_active)(p)[0] == pytest.approx(
        (sc.voigt_profile(p[0] + h, 1.0, 0.5) - sc.voigt_profile(p[0] - h, 1.0, 0.5)) / (2 * h),
        rel=1e-7)


_FC_NDTRI = _FC_VOIGT = None


def _first_class_loss(p, x):
    s = 0.0
    for i in range(x.shape[0]):
        s += _FC_NDTRI(x[i]) * p[0] + _FC_VOIGT(x[i], 1.0, 0.5) * p[1]
    return s


def _first_class_voigt_active(p):
    return _FC_VOIGT(p[0], 1.0, 0.5)


# the Voigt profile, as a density library writes its pdf (numba-stats' voigt: the C function
# through its address, a location and the Gaussian's and the Lorentzian's widths)
@njit
def voigt_pdf(x, gamma, loc, scale):
    r = np.empty_like(x)
    for i in range(len(x)):
        r[i] = _voigt(x[i] - loc, scale, gamma)
    return r


@njit
def voigt_nll(params, x):
    return -np.sum(np.log(voigt_pdf(x, params[0], params[1], params[2])))


@needs_wofz
def test_voigt_profile_fit_matches_finite_differences():
    x = np.array([-2.3, -0.7, 0.1, 0.4, 1.9, 3.5])
    for params in (np.array([0.3, 0.2, 0.9]), np.array([1.4, -0.5, 0.25]),
                   np.array([0.02, 0.1, 1.7])):
        value, g = adjit.value_and_grad(voigt_nll)(params, x)
        assert value == pytest.approx(voigt_nll(params, x), rel=1e-14)
        np.testing.assert_allclose(g, fd_grad(voigt_nll, (params, x), 0), rtol=1e-6)
        np.testing.assert_allclose(adjit.grad(voigt_nll, argnums=1)(params, x),
                                   fd_grad(voigt_nll, (params, x), 1), rtol=1e-6)


def _voigt_partials(x, sigma, gamma):
    def v(x, sigma, gamma):
        return _voigt(x, sigma, gamma)
    return adjit.grad(v, argnums=(0, 1, 2))(x, sigma, gamma)


@needs_wofz
@pytest.mark.parametrize("x, sigma", [(0.7, 1.3), (-2.5, 0.4), (0.0, 2.0), (6.0, 0.5)])
def test_voigt_profile_without_a_lorentzian_is_the_normal_density(x, sigma):
    """At gamma = 0 the profile is the normal density N(x; 0, sigma): dV/dx = -x V / sigma**2,
    dV/dsigma = V (x**2 / sigma**3 - 1 / sigma)."""
    v = sc.voigt_profile(x, sigma, 0.0)
    assert v == pytest.approx(math.exp(-x * x / (2 * sigma * sigma)) /
                              (sigma * math.sqrt(2 * math.pi)), rel=1e-13)
    dx, ds, _ = _voigt_partials(x, sigma, 0.0)
    assert dx == pytest.approx(-x * v / sigma ** 2, rel=1e-12, abs=1e-300)
    assert ds == pytest.approx(v * (x * x / sigma ** 3 - 1.0 / sigma), rel=1e-12, abs=1e-300)


@needs_wofz
@pytest.mark.parametrize("x, gamma", [(0.7, 0.4), (-1.5, 2.0), (0.0, 0.3)])
def test_voigt_profile_without_a_gaussian_is_the_lorentzian(x, gamma):
    """At sigma = 0 the profile is gamma / (pi (x**2 + gamma**2)); widening it by a Gaussian
    changes it at second order in sigma, so its derivative in sigma there is 0."""
    d = x * x + gamma * gamma
    assert sc.voigt_profile(x, 0.0, gamma) == pytest.approx(gamma / (math.pi * d), rel=1e-13)
    dx, ds, dg = _voigt_partials(x, 0.0, gamma)
    assert dx == pytest.approx(-2.0 * gamma * x / (math.pi * d * d), rel=1e-13, abs=1e-300)
    assert dg == pytest.approx((x * x - gamma * gamma) / (math.pi * d * d), rel=1e-13,
                               abs=1e-300)
    assert ds == 0.0
    # the one-sided difference from sigma > 0 agrees (V(sigma) - V(0) is O(sigma**2))
    h = 1e-7
    assert (sc.voigt_profile(x, h, gamma) - sc.voigt_profile(x, 0.0, gamma)) / h == \
        pytest.approx(0.0, abs=1e-5)


@needs_wofz
def test_voigt_profile_partials_obey_its_scaling():
    """V(t x, t sigma, t gamma) = V / t, so x dV/dx + sigma dV/dsigma + gamma dV/dgamma = -V,
    an identity the three partials satisfy only if each is right; and the Faddeeva function
    adjit calls is scipy's."""
    rng = np.random.default_rng(5)
    for _ in range(40):
        x, sigma, gamma = rng.uniform(-8, 8), rng.uniform(0.05, 3), rng.uniform(0.01, 3)
        dx, ds, dg = _voigt_partials(x, sigma, gamma)
        v = sc.voigt_profile(x, sigma, gamma)
        assert x * dx + sigma * ds + gamma * dg == pytest.approx(-v, rel=1e-11, abs=1e-15)
        w = sc.wofz(complex(x, gamma))
        assert adjit.runtime.special.wofz(x, gamma) == (w.real, w.imag)


@needs_wofz
def test_voigt_profile_ufunc_on_arrays_matches_finite_differences():
    def f(x, sigma, gamma):
        return np.sum(sc.voigt_profile(x, sigma, gamma) * x)
    x = np.array([0.3, -1.2, 0.7, 2.0])
    gx, gs, gg = adjit.grad(f, argnums=(0, 1, 2))(x, 0.8, 0.3)
    np.testing.assert_allclose(gx, fd_grad(f, (x, 0.8, 0.3), 0), rtol=1e-6)
    assert gs == pytest.approx(fd_grad(f, (x, 0.8, 0.3), 1), rel=1e-6)
    assert gg == pytest.approx(fd_grad(f, (x, 0.8, 0.3), 2), rel=1e-6)


# the regularized incomplete gamma functions in their shape parameter, as a gamma
# distribution's cdf in a fit of its shape
@njit
def gamma_cdf(x, a, scale):
    r = np.empty_like(x)
    for i in range(len(x)):
        r[i] = _gammainc(a, x[i] / scale)
    return r


def gamma_binned_cost(params, edges, counts):
    p = gamma_cdf(edges, params[0], params[1])
    return np.sum((counts - np.sum(counts) * (p[1:] - p[:-1])) ** 2)


def test_a_gamma_shape_fit_matches_finite_differences():
    edges = np.array([0.1, 0.5, 1.0, 2.0, 3.5, 6.0, 12.0])
    counts = np.array([3.0, 9.0, 14.0, 11.0, 6.0, 2.0])
    for params in (np.array([2.2, 1.1]), np.array([0.6, 2.5]), np.array([7.5, 0.4])):
        value, g = adjit.value_and_grad(gamma_binned_cost)(params, edges, counts)
        assert value == pytest.approx(gamma_binned_cost(params, edges, counts), rel=1e-13)
        np.testing.assert_allclose(g, fd_grad(gamma_binned_cost, (params, edges, counts), 0),
                                   rtol=1e-6)


def _d_shape(a, x, upper=False):
    def f(a, x):
        return sc.gammaincc(a, x) if upper else sc.gammainc(a, x)
    return adjit.grad(f)(a, x)


@pytest.mark.parametrize("x", [0.05, 0.7, 1.0, 2.0, 7.0, 30.0])
def test_the_shape_derivative_at_one_is_the_exponential_integral(x):
    """P(1, x) = 1 - e**-x for every x, and d P(a, x) / da at a = 1 is
    -(e**-x (log x + Euler's gamma) + E1(x)): the series (x < 2) and the continued
    fraction (x > 2) alike."""
    exact = -(math.exp(-x) * (math.log(x) + np.euler_gamma) + sc.exp1(x))
    assert _d_shape(1.0, x) == pytest.approx(exact, rel=1e-13)
    assert _d_shape(1.0, x, upper=True) == pytest.approx(-exact, rel=1e-13)


@pytest.mark.parametrize("a", [0.05, 0.5, 1.7, 10.0, 120.0])
def test_the_shape_derivative_matches_finite_differences_over_the_domain(a):
    """Against a fourth-order stencil of scipy's own function, of P where P is small and of
    Q where P is close to 1 (its differences would be rounding there), from x far below a
    to far above it; 0 at x = 0."""
    for x in (1e-3, 0.3, 0.9 * a, a + 0.5, a + 1.5, 3.0 * a + 5.0, 10.0 * a + 40.0):
        if x < a + 1.0:
            expected = fd_grad(sc.gammainc, (a, x), 0, h=1e-5 * min(a, 1.0), order=4)
        else:
            expected = -fd_grad(sc.gammaincc, (a, x), 0, h=1e-5 * min(a, 1.0), order=4)
        assert _d_shape(a, x) == pytest.approx(expected, rel=1e-6), (a, x)
    assert _d_shape(a, 0.0) == 0.0


def _shape_loss(a, x):
    return np.sum(sc.gammainc(a[0], x) * x + sc.gammaincc(a[1], 0.5 * x))


def test_the_shape_derivative_agrees_with_jax():
    jax, jsp, jnp = _jax()

    def jax_version(a, x):
        return jnp.sum(jsp.gammainc(a[0], x) * x + jsp.gammaincc(a[1], 0.5 * x))

    x = np.array([0.05, 0.4, 1.3, 2.9, 4.4, 9.0, 25.0])
    for a in (np.array([0.7, 2.5]), np.array([3.0, 12.0])):
        np.testing.assert_allclose(adjit.grad(_shape_loss)(a, x),
                                   np.asarray(jax.grad(jax_version)(a, x)), rtol=1e-9)


# Student's t in its degrees of freedom, as a robust fit's binned cost writes it, and its
# quantile; the regularized incomplete beta function behind both
@njit
def t_binned_cost(params, edges, counts):
    cost = 0.0
    for i in range(counts.shape[0]):
        p = t_cdf(edges[i + 1], params[0], params[1], params[2]) - \
            t_cdf(edges[i], params[0], params[1], params[2])
        cost += (counts[i] - 100.0 * p) ** 2
    return cost


def test_a_student_t_fit_in_its_degrees_of_freedom_matches_finite_differences():
    edges = np.array([-6.0, -2.5, -1.0, -0.2, 0.4, 1.5, 3.0, 9.0])
    counts = np.array([3.0, 10.0, 22.0, 27.0, 23.0, 11.0, 4.0])
    for params in (np.array([4.0, 0.1, 1.2]), np.array([0.8, -0.3, 0.7]),
                   np.array([40.0, 0.0, 1.0])):
        value, g = adjit.value_and_grad(t_binned_cost)(params, edges, counts)
        assert value == pytest.approx(t_binned_cost(params, edges, counts), rel=1e-13)
        np.testing.assert_allclose(g, fd_grad(t_binned_cost, (params, edges, counts), 0,
                                              h=1e-5, order=4), rtol=1e-6)


def _t_cdf_d_df_by_quadrature(df, t):
    """d stdtr / d df as the integral of the t density's derivative in df up to t."""
    from scipy.integrate import quad

    def d_density(s):
        log_f = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi) \
            - (df + 1) / 2 * math.log1p(s * s / df)
        d_log_f = 0.5 * (sc.digamma((df + 1) / 2) - sc.digamma(df / 2)) - 0.5 / df \
            - 0.5 * math.log1p(s * s / df) + (df + 1) * s * s / (2 * df * (df + s * s))
        return math.exp(log_f) * d_log_f
    # the lower tail up to -|t|; above 0, minus it (the derivative is even in s and
    # integrates to 0 over the line)
    value, _ = quad(d_density, -math.inf, -abs(t), epsabs=1e-15, epsrel=1e-12)
    return -value if t > 0 else value


@pytest.mark.parametrize("df, t", [(0.6, -3.0), (1.0, 0.8), (2.5, -0.4), (7.0, 2.2),
                                   (30.0, -1.1), (300.0, 4.0)])
def test_the_t_distribution_in_its_degrees_of_freedom_against_quadrature(df, t):
    """Against an independent oracle: the integral of the density's derivative in df, and
    stdtrit's derivative in df against the implicit one, -(d stdtr / d df) / density."""
    g_df, g_t = adjit.grad(lambda_free_t, argnums=(1, 0))(t, df)
    assert g_df == pytest.approx(_t_cdf_d_df_by_quadrature(df, t), rel=1e-9)
    p = sc.stdtr(df, t)

    def quantile(df, p):
        return sc.stdtrit(df, p)
    d_df = adjit.grad(quantile)(df, p)
    assert d_df == pytest.approx(-g_df / g_t, rel=1e-9)


def _beta_cdfs(a, b, x):
    return sc.betainc(a, b, x) * x + sc.betaincc(b, a, 0.5 * x)


@pytest.mark.parametrize("a, b, x", [(2.0, 3.0, 0.3), (0.7, 5.0, 0.9), (12.0, 0.5, 0.95),
                                     (0.3, 0.4, 0.02), (150.0, 80.0, 0.6)])
def test_the_incomplete_beta_function_in_every_argument_matches_finite_differences(a, b, x):
    g = adjit.grad(_beta_cdfs, argnums=(0, 1, 2))(a, b, x)
    for k, gk in enumerate(g):
        args = [a, b, x]
        h = 1e-4 * args[k] * (1.0 if k < 2 else 0.1)
        assert gk == pytest.approx(fd_grad(_beta_cdfs, tuple(args), k, h=h, order=4),
                                   rel=1e-6, abs=1e-12), k


# the modified Bessel function K_v in its order, as a Matern covariance with a learned
# smoothness writes it (a Gaussian process's kernel)
_kv = _wrap("__pyx_fuse_1kv", 2)


@njit
def matern_sum(params, r):
    nu, ell = params[0], params[1]
    s = 0.0
    for i in range(r.shape[0]):
        z = math.sqrt(2.0 * nu) * r[i] / ell
        s += 2.0 ** (1.0 - nu) / math.gamma(nu) * z ** nu * _kv(nu, z)
    return s


def test_a_matern_kernel_in_its_smoothness_matches_finite_differences():
    r = np.array([0.05, 0.3, 0.8, 1.7, 4.0])
    for params in (np.array([0.5, 1.0]), np.array([1.7, 0.6]), np.array([6.0, 2.5])):
        value, g = adjit.value_and_grad(matern_sum)(params, r)
        assert value == pytest.approx(matern_sum(params, r), rel=1e-13)
        np.testing.assert_allclose(g, fd_grad(matern_sum, (params, r), 0, h=1e-5, order=4),
                                   rtol=1e-7)


@pytest.mark.parametrize("x", [0.01, 0.3, 2.0, 15.0, 200.0])
def test_the_order_derivative_at_one_half_is_the_exponential_integral(x):
    """K_(1/2)(x) = sqrt(pi / (2x)) e**-x, and d K_v(x) / dv at v = 1/2 is
    sqrt(pi / (2x)) E1(2x) e**x (DLMF 10.38.7); K_v is even in v, so at v = 0 it is 0."""
    def k(v, x):
        return sc.kv(v, x)
    exact = math.sqrt(math.pi / (2 * x)) * sc.exp1(2 * x) * math.exp(x)
    assert adjit.grad(k)(0.5, x) == pytest.approx(exact, rel=1e-13)
    assert adjit.grad(k)(-0.5, x) == pytest.approx(-exact, rel=1e-13)
    assert adjit.grad(k)(0.0, x) == 0.0


@pytest.mark.parametrize("v", [0.05, 1.5, 7.0, 40.0])
def test_the_order_derivative_matches_finite_differences_over_the_domain(v):
    def k(v, x):
        return sc.kv(v, x)
    for x in (1e-3, 0.2, 1.0, 8.0, 90.0):
        expected = fd_grad(sc.kv, (v, x), 0, h=1e-4 * v, order=4)
        assert adjit.grad(k)(v, x) == pytest.approx(expected, rel=1e-6), (v, x)


# where the derivatives' formulas would cancel: each against a limit known in closed form
def test_the_t_distribution_near_its_centre_against_its_density_there():
    """For |t| much below sqrt(df), x = df / (df + t**2) rounds to 1: stdtr(df, t) is
    1/2 + t f(0; df) + O(t**3), so d stdtr / d df = t f(0; df) (psi((df + 1)/2) / 2 -
    psi(df/2) / 2 - 1 / (2 df)) to O(t**3)."""
    from adjit.runtime import special as sp
    for df, t in ((1.0, 1e-8), (0.5, 1e-8), (100.0, 1e-6), (1e4, 1e-5)):
        f0 = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)
        expected = t * f0 * (0.5 * sc.digamma((df + 1) / 2) - 0.5 * sc.digamma(df / 2)
                             - 0.5 / df)
        assert sp.stdtr_d_df(df, t) == pytest.approx(expected, rel=1e-7), (df, t)
        assert sp.stdtr_d_df(df, -t) == pytest.approx(-expected, rel=1e-7), (df, t)
    # beyond df = 1e4 the two terms cancel past 1e-8: NaN, not a number without digits
    assert math.isnan(sp.stdtr_d_df(1e5, 1.0))


def test_the_incomplete_beta_function_at_its_edges():
    """I_x(a, 1) = x**a, so d/da = x**a log x even at a = 1e-20; for tiny x, I_x(a, b) =
    x**a / (a B(a, b)) (1 + O(x)), so d/db = I (psi(a + b) - psi(b)) to O(x)."""
    from adjit.runtime import special as sp
    for a, x in ((1e-20, 0.3), (1e-8, 0.9), (2.5, 1e-5)):
        assert sp.betainc_d_a(a, 1.0, x) == pytest.approx(x ** a * math.log(x), rel=1e-12)
    for a, b in ((1e-3, 0.5), (1e-3, 1e-3), (2.0, 7.0)):
        x = 1e-20
        expected = sc.betainc(a, b, x) * (sc.digamma(a + b) - sc.digamma(b))
        assert sp.betainc_d_b(a, b, x) == pytest.approx(expected, rel=1e-10), (a, b)


@needs_wofz
@pytest.mark.parametrize("x, sigma, gamma", [(1.0, 1e-6, 1.0), (30.0, 1e-6, 10.0),
                                             (1.0, 1e-160, 1.0), (-4.0, 1e-4, 0.5)])
def test_a_nearly_lorentzian_voigt_profile_has_the_lorentzians_derivatives(x, sigma, gamma):
    """|z| = |x + i gamma| / (sigma sqrt 2) large: V = L + sigma**2 L'' / 2 + O(sigma**4),
    L = gamma / (pi (x**2 + gamma**2)), so dV/dx and dV/dgamma are L's to O(sigma**2) and
    dV/dsigma = sigma L''."""
    from adjit.runtime import special as sp
    d = x * x + gamma * gamma
    assert sp.voigt_d_x(x, sigma, gamma) == pytest.approx(-2 * gamma * x / (math.pi * d * d),
                                                          rel=1e-6)
    assert sp.voigt_d_gamma(x, sigma, gamma) == pytest.approx(
        (x * x - gamma * gamma) / (math.pi * d * d), rel=1e-6, abs=1e-12)
    l2 = 2 * gamma * (3 * x * x - gamma * gamma) / (math.pi * d ** 3)     # L''
    assert sp.voigt_d_sigma(x, sigma, gamma) == pytest.approx(sigma * l2, rel=1e-6,
                                                              abs=1e-300)
