"""Logistic regression fitted with scipy's L-BFGS-B, the loss and gradient from adjit.

The loss is ordinary vectorized numpy: the mean logistic loss log(1 + exp(-y X w)) written
stably as max(-m, 0) + log1p(exp(-|m|)), plus an L2 term. adjit.value_and_grad(loss) is a
compiled function returning (loss, gradient), exactly what
scipy.optimize.minimize(..., jac=True) expects.
Run: .venv/bin/python examples/logistic_regression.py
"""
import time

import numpy as np
from scipy.optimize import minimize

import adjit


def loss(w, X, y, lam):
    """Mean logistic loss of labels y in {-1, +1} plus lam/2 |w|^2."""
    m = y * (X @ w)
    per_point = np.maximum(-m, 0.0) + np.log1p(np.exp(-np.abs(m)))
    return np.mean(per_point) + 0.5 * lam * np.sum(w * w)


def synthetic(n=500, d=5, seed=0):
    rng = np.random.default_rng(seed)
    w_true = np.array([1.5, -2.0, 0.75, 0.0, 3.0])[:d]
    X = rng.normal(size=(n, d))
    p = 1.0 / (1.0 + np.exp(-(X @ w_true)))
    y = np.where(rng.random(n) < p, 1.0, -1.0)
    return X, y, w_true


def main(n=500, d=5, lam=1e-3):
    X, y, w_true = synthetic(n, d)
    fun = adjit.value_and_grad(loss)
    w0 = np.zeros(d)
    t0 = time.perf_counter()
    fun(w0, X, y, lam)
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = minimize(fun, w0, args=(X, y, lam), jac=True, method="L-BFGS-B")
    fit_s = time.perf_counter() - t0
    w = res.x
    accuracy = float(np.mean(np.sign(X @ w) == y))
    bayes = float(np.mean(np.sign(X @ w_true) == y))
    # the gradient at the optimum, checked against central differences of the loss
    _, g = fun(w, X, y, lam)
    h = 1e-6
    fd = np.array([(loss(w + h * e, X, y, lam) - loss(w - h * e, X, y, lam)) / (2 * h)
                   for e in np.eye(d)])
    print(f"{n} points, {d} features, labels drawn from a logistic model with known weights")
    print(f"L-BFGS-B: {res.message} after {res.nit} iterations, {res.nfev} loss+gradient "
          f"calls, {fit_s * 1e3:.1f} ms (first call compiled in {compile_s:.2f} s)")
    print(f"loss {res.fun:.6f}, |gradient| at the optimum {np.abs(res.jac).max():.1e}")
    print(f"{'':10}" + "".join(f"{f'w[{k}]':>9}" for k in range(d)))
    print(f"{'true':10}" + "".join(f"{v:9.3f}" for v in w_true))
    print(f"{'fitted':10}" + "".join(f"{v:9.3f}" for v in w))
    print(f"training accuracy {accuracy:.3f} (the true weights classify {bayes:.3f} of these "
          "noisy labels)")
    print(f"adjit gradient vs central differences at the optimum: max diff "
          f"{np.abs(g - fd).max():.1e}")
    return {"success": bool(res.success), "w": w, "w_true": w_true, "accuracy": accuracy,
            "bayes_accuracy": bayes, "grad_fd_error": float(np.abs(g - fd).max()),
            "grad_norm": float(np.abs(res.jac).max())}


if __name__ == "__main__":
    main()
