"""Fit the hyperparameters of a Gaussian process by maximizing its marginal likelihood, with
the gradient of the loss through np.linalg.cholesky and np.linalg.solve.

A GP regression model with the squared-exponential kernel

    k(x, x') = sf^2 exp(-|x - x'|^2 / (2 ell^2)),   K = k(X, X) + sn^2 I

has the negative log marginal likelihood

    nlml = 1/2 y^T K^-1 y + 1/2 log det K + n/2 log(2 pi),

computed the standard way: L = cholesky(K), alpha = L^-T (L^-1 y), and log det K = 2 sum
log diag(L). The loss below is written as a numba user writes it (loops build the kernel
matrix, numpy does the linear algebra), and it compiles unchanged with @njit. adjit
differentiates it with respect to the log hyperparameters (log ell, log sf, log sn): the
adjoint of cholesky uses two triangular solves, the adjoint of solve one more solve with the
transpose. The gradient is checked against central finite differences of the compiled loss
and handed to scipy's L-BFGS-B, which recovers hyperparameters close to those the data were
drawn with.
Run: .venv/bin/python examples/gaussian_process.py
"""
import math
import time

import numba
import numpy as np
from scipy.optimize import minimize

import adjit


def nlml(log_ell, log_sf, log_sn, X, y):
    """The negative log marginal likelihood of y at the inputs X (n x d)."""
    n, d = X.shape
    ell2 = math.exp(2.0 * log_ell)
    sf2 = math.exp(2.0 * log_sf)
    sn2 = math.exp(2.0 * log_sn)
    K = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            d2 = 0.0
            for k in range(d):
                diff = X[i, k] - X[j, k]
                d2 += diff * diff
            K[i, j] = sf2 * math.exp(-0.5 * d2 / ell2)
        K[i, i] += sn2
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    return 0.5 * np.dot(y, alpha) + np.sum(np.log(np.diag(L))) + 0.5 * n * math.log(2.0 * math.pi)


nlml_njit = numba.njit(nlml)     # the same loss compiled plainly: values, finite differences
nlml_grad = adjit.value_and_grad(nlml, argnums=(0, 1, 2))


def data(n=80, ell=0.7, sf=1.3, sn=0.1, seed=0):
    """n noisy draws of a GP with these hyperparameters at random points of [0, 5]^2."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, 2)) * 5.0
    d2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    K = sf ** 2 * np.exp(-0.5 * d2 / ell ** 2) + 1e-10 * np.eye(n)
    f = np.linalg.cholesky(K) @ rng.normal(size=n)
    return X, f + sn * rng.normal(size=n)


def fd_gradient(theta, X, y, h=1e-6):
    g = np.zeros(3)
    for k in range(3):
        e = np.zeros(3)
        e[k] = h
        g[k] = (nlml_njit(*(theta + e), X, y) - nlml_njit(*(theta - e), X, y)) / (2 * h)
    return g


def main(n=80, verbose=True):
    X, y = data(n)
    theta0 = np.array([0.0, 0.0, math.log(0.5)])      # ell = 1, sf = 1, sn = 0.5
    value, grads = nlml_grad(*theta0, X, y)
    fd = fd_gradient(theta0, X, y)
    grad_fd_error = float(np.max(np.abs(np.array(grads) - fd)) / np.max(np.abs(fd)))

    def fun(theta):
        v, g = nlml_grad(theta[0], theta[1], theta[2], X, y)
        return v, np.array(g)

    t = time.perf_counter()
    res = minimize(fun, theta0, jac=True, method="L-BFGS-B")
    seconds = time.perf_counter() - t
    ell, sf, sn = np.exp(res.x)
    if verbose:
        print(f"nlml at the start {value:.4f}; gradient {np.array(grads)}")
        print(f"  finite differences {fd} (largest relative difference {grad_fd_error:.1e})")
        print(f"L-BFGS-B: {res.nit} iterations, {res.nfev} gradients, {seconds:.3f} s; "
              f"nlml {res.fun:.4f}")
        print(f"fitted ell = {ell:.3f}, sf = {sf:.3f}, sn = {sn:.3f} "
              "(the data were drawn with 0.7, 1.3, 0.1)")
    return {"value0": value, "grad_fd_error": grad_fd_error, "success": res.success,
            "nlml": res.fun, "ell": ell, "sf": sf, "sn": sn,
            "grad_norm": float(np.max(np.abs(fun(res.x)[1])))}


if __name__ == "__main__":
    main()
