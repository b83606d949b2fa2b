"""Second derivatives: a Newton optimizer with Hessian-vector products, and a Laplace
approximation with a dense Hessian.

1. The Lennard-Jones cluster of relax_cluster.py, relaxed by truncated Newton (Newton-CG):
   each step solves H p = -g by conjugate gradients, where CG only needs products H v,
   which `adjit.hvp` computes from the loop-written energy without forming H. All of it runs
   inside @numba.njit. Compared with the gradient descent of relax_cluster.py, it reaches a
   force 10^6 times smaller in tens of steps.
2. Bayesian logistic regression: the MAP estimate by Newton's method with `adjit.hessian` of
   the loop-written log posterior, then the Laplace approximation of the posterior (a
   Gaussian with covariance H^-1 at the MAP).

Run: .venv/bin/python examples/newton_hvp.py
"""
import math
import time

import numba
import numpy as np

from adjit import grad, hessian, hvp


def energy(x):
    n = x.shape[0]
    e = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            dx = x[i, 0] - x[j, 0]
            dy = x[i, 1] - x[j, 1]
            dz = x[i, 2] - x[j, 2]
            r2 = dx * dx + dy * dy + dz * dz
            inv6 = 1.0 / (r2 * r2 * r2)
            e += 4.0 * (inv6 * inv6 - inv6)
    return e


denergy = grad(energy)
energy_hvp = hvp(energy)
energy_njit = numba.njit(energy)


@numba.njit
def newton_cg(x, steps, tol):
    """Truncated Newton: CG on H p = -g (stopped at negative curvature), then a
    backtracking line search on the energy. Returns (x, steps taken, |g| at the end)."""
    for step in range(steps):
        g = denergy(x)
        gnorm = np.sqrt(np.sum(g * g))
        if gnorm < tol:
            return x, step, gnorm
        p = np.zeros_like(x)
        r = -g
        d = r.copy()
        rr = np.sum(r * r)
        for _ in range(50):
            hd = energy_hvp(x, d)
            curvature = np.sum(d * hd)
            if curvature <= 0.0:
                if step == 0 and not np.any(p):
                    p = -g
                break
            alpha = rr / curvature
            p += alpha * d
            r -= alpha * hd
            rr_new = np.sum(r * r)
            if math.sqrt(rr_new) < 0.1 * gnorm:
                break
            d = r + (rr_new / rr) * d
            rr = rr_new
        if not np.any(p):
            p = -g
        e0 = energy_njit(x)
        t = 1.0
        # Armijo's condition, with the energy's own rounding as slack: near the minimum the
        # decrease a step makes is below what float64 resolves in the energy
        slack = 1e-13 * abs(e0)
        while energy_njit(x + t * p) > e0 + 1e-4 * t * np.sum(g * p) + slack and t > 1e-8:
            t *= 0.5
        x = x + t * p
    g = denergy(x)
    return x, steps, np.sqrt(np.sum(g * g))


def log_posterior(w, X, y, prior_precision):
    """log p(w | X, y) up to a constant: logistic likelihood, Gaussian prior."""
    lp = -0.5 * prior_precision * np.dot(w, w)
    for i in range(X.shape[0]):
        z = 0.0
        for k in range(w.shape[0]):
            z += X[i, k] * w[k]
        # log sigmoid(y z), written stably
        t = y[i] * z
        lp += -math.log1p(math.exp(-t)) if t > 0.0 else t - math.log1p(math.exp(t))
    return lp


def main(n_side=2, newton_steps=40):
    rng = np.random.default_rng(0)
    grid = np.array([(i, j, k) for i in range(n_side) for j in range(n_side)
                     for k in range(n_side)], dtype=np.float64)
    x0 = grid * 1.3 + rng.uniform(-0.05, 0.05, grid.shape)
    t0 = time.perf_counter()
    x, taken, gnorm = newton_cg(x0.copy(), newton_steps, 1e-8)
    elapsed = time.perf_counter() - t0
    e0, e1 = energy(x0), energy(x)
    print(f"Newton-CG, {len(x)} atoms: energy {e0:.6f} -> {e1:.6f} in {taken} steps, "
          f"|force| {gnorm:.1e} ({elapsed:.1f} s including compilation)")
    # the Hessian at the minimum: positive semidefinite, six zero modes (translations,
    # rotations) up to the residual force
    H = hessian(energy)(x).reshape(x.size, x.size)
    eig = np.linalg.eigvalsh(H)
    print(f"Hessian eigenvalues at the minimum: {np.sum(np.abs(eig) < 1e-5)} near zero, "
          f"smallest other {eig[np.abs(eig) >= 1e-5].min():.3f}")

    # Laplace approximation of a Bayesian logistic regression
    X = np.column_stack((np.ones(60), rng.standard_normal((60, 2))))
    w_true = np.array([0.5, -1.0, 2.0])
    y = np.where(rng.random(60) < 1.0 / (1.0 + np.exp(-X @ w_true)), 1.0, -1.0)
    dlogp = grad(log_posterior)
    d2logp = hessian(log_posterior)
    w = np.zeros(3)
    for it in range(20):
        g = dlogp(w, X, y, 1.0)
        H = d2logp(w, X, y, 1.0)
        w = w - np.linalg.solve(H, g)
        if np.abs(g).max() < 1e-12:
            break
    cov = np.linalg.inv(-d2logp(w, X, y, 1.0))
    print(f"logistic regression MAP {np.round(w, 3)} after {it + 1} Newton steps; Laplace "
          f"posterior sd {np.round(np.sqrt(np.diag(cov)), 3)}")
    return {"e0": e0, "e1": e1, "gnorm": gnorm, "steps": taken, "eig": eig, "w": w,
            "cov": cov, "X": X, "y": y}


if __name__ == "__main__":
    main()
