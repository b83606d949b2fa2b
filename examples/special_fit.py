"""Binned maximum-likelihood fits whose models are scipy.special functions, in numba code as
density libraries write it.

numba cannot call scipy.special's ufuncs, so numba code takes each C function's address in
scipy.special.cython_special and wraps it in a ctypes function type. adjit recognizes such a
wrapper by its address and differentiates it in every argument, including the ones whose
derivatives have no closed form: a gamma distribution's shape (gammainc in `a`) and a
Student t's degrees of freedom (stdtr in `df`).

This example draws data from a gamma distribution and a Student t, histograms them, and fits
(shape, scale) and (df, loc, scale) by minimizing the binned Poisson negative log-likelihood
with scipy's L-BFGS-B, the gradient from adjit.value_and_grad. It checks the gradient at the
start against central differences of numba's own compile.
Run: .venv/bin/python examples/special_fit.py
"""
import ctypes
import math

import numpy as np
import scipy.optimize
from numba import njit
from numba.extending import get_cython_function_address

import adjit


def _wrap(symbol, nargs):
    address = get_cython_function_address("scipy.special.cython_special", symbol)
    return ctypes.CFUNCTYPE(ctypes.c_double, *[ctypes.c_double] * nargs)(address)


_gammainc = _wrap("gammainc", 2)            # P(a, x), the gamma distribution's cdf
_stdtr = _wrap("__pyx_fuse_0stdtr", 2)      # Student's t cdf (the double version)


@njit
def gamma_cdf(x, shape, scale):
    return _gammainc(shape, x / scale) if x > 0.0 else 0.0


@njit
def t_cdf(x, df, loc, scale):
    return _stdtr(df, (x - loc) / scale)


@njit
def gamma_nll(params, edges, counts):
    """Binned Poisson negative log-likelihood of a gamma distribution, parameters on a log
    scale (shape = exp(params[0]), scale = exp(params[1])), constants dropped."""
    shape, scale = math.exp(params[0]), math.exp(params[1])
    total = np.sum(counts)
    nll = 0.0
    lo = gamma_cdf(edges[0], shape, scale)
    for i in range(counts.shape[0]):
        hi = gamma_cdf(edges[i + 1], shape, scale)
        mu = total * (hi - lo)
        nll += mu - counts[i] * math.log(mu)
        lo = hi
    return nll


@njit
def t_nll(params, edges, counts):
    """The same for a Student t: df = exp(params[0]), loc = params[1], scale = exp(params[2])."""
    df, loc, scale = math.exp(params[0]), params[1], math.exp(params[2])
    total = np.sum(counts)
    nll = 0.0
    lo = t_cdf(edges[0], df, loc, scale)
    for i in range(counts.shape[0]):
        hi = t_cdf(edges[i + 1], df, loc, scale)
        mu = total * (hi - lo)
        nll += mu - counts[i] * math.log(mu)
        lo = hi
    return nll


def _fd(f, p, args, h=1e-6):
    g = np.zeros_like(p)
    for k in range(p.shape[0]):
        e = np.zeros_like(p)
        e[k] = h
        g[k] = (f(p + e, *args) - f(p - e, *args)) / (2 * h)
    return g


def fit(nll, start, edges, counts):
    vg = adjit.value_and_grad(nll)
    g0 = vg(start, edges, counts)[1]
    fd_error = np.max(np.abs(g0 - _fd(nll, start, (edges, counts)))) / np.max(np.abs(g0))
    result = scipy.optimize.minimize(lambda p: vg(p, edges, counts), start, jac=True,
                                     method="L-BFGS-B")
    # how far the gradient fell from the start to the optimum
    result.drop = np.max(np.abs(result.jac)) / np.max(np.abs(g0))
    return result, fd_error


def main(n=20000, seed=0):
    rng = np.random.default_rng(seed)
    out = {}

    data = rng.gamma(2.5, 1.5, n)
    edges = np.linspace(0.0, 20.0, 41)
    counts = np.histogram(data, edges)[0].astype(np.float64)
    r, fd_error = fit(gamma_nll, np.log(np.array([1.0, 1.0])), edges, counts)
    shape, scale = np.exp(r.x)
    print(f"gamma: shape {shape:.3f} (drawn with 2.5), scale {scale:.3f} (1.5); "
          f"{r.nit} iterations; gradient at the start vs differences: {fd_error:.1e}")
    out.update(gamma_success=r.success, gamma_shape=shape, gamma_scale=scale,
               gamma_fd_error=fd_error, gamma_grad_drop=r.drop)

    data = 0.5 + 1.2 * rng.standard_t(3.0, n)
    edges = np.linspace(-12.0, 13.0, 51)
    counts = np.histogram(data, edges)[0].astype(np.float64)
    r, fd_error = fit(t_nll, np.array([math.log(10.0), 0.0, 0.0]), edges, counts)
    df, loc, scale = math.exp(r.x[0]), r.x[1], math.exp(r.x[2])
    print(f"Student t: df {df:.3f} (drawn with 3), loc {loc:.3f} (0.5), scale {scale:.3f} "
          f"(1.2); {r.nit} iterations; gradient at the start vs differences: {fd_error:.1e}")
    out.update(t_success=r.success, t_df=df, t_loc=loc, t_scale=scale, t_fd_error=fd_error,
               t_grad_drop=r.drop)
    return out


if __name__ == "__main__":
    main()
