"""Recover the diffusivity and the initial temperature of a rod from later measurements.

The forward model is the 1-D heat equation u_t = alpha u_xx on [0, 1], n cells, fixed
boundary values (the two end cells keep their initial temperature), integrated with explicit
finite differences for `steps` steps of size dt:

    u_i <- u_i + alpha (dt / dx^2) (u_{i-1} - 2 u_i + u_{i+1}),   i = 1 .. n-2

(stable for alpha dt / dx^2 <= 1/2; here dt / dx^2 = 0.25, so alpha < 2).

"Measurements" are made from a true alpha and a true initial profile (two Gaussians on a
sloping background) plus a little noise. The unknowns are alpha and the whole initial profile
u0 (n + 1 numbers); the loss is the squared misfit to the measurements plus a small
smoothness penalty reg * sum (u0_{i+1} - u0_i)^2 on u0, because running the heat equation
backwards is ill-posed (the fine detail of u0 is damped below the noise by the time it is
measured).

One snapshot is not enough to identify alpha: evolving a smoother initial profile with a
smaller alpha gives exactly the same final state (exp(alpha T L) u0 = exp(alpha' T L)
exp((alpha - alpha') T L) u0), and a smoothness penalty would then prefer the smallest
alpha. So the rod is measured twice, at the middle of the run and at the end: the change
between the two snapshots fixes alpha, and the first one (with the penalty) fixes u0.

The loss is plain loop code over the whole time integration; adjit.value_and_grad(loss,
argnums=(0, 1)) returns the loss and its exact gradient with respect to (u0, alpha), which
scipy's L-BFGS-B uses packed into one vector of n + 1 numbers. The fit is stopped after
`maxiter` iterations rather than at a vanishing gradient: alpha has settled long before, and
further iterations only fit the noise into the fine detail of u0 (its error grows slowly
again). `checkpoint` is passed on to adjit.value_and_grad (None: no checkpointing).
Run: .venv/bin/python examples/heat_inverse.py
"""
import time

import numba
import numpy as np
from scipy.optimize import minimize

import adjit


def loss(u0, alpha, c, steps, u_mid, u_end, reg):
    """0.5 |u(T/2) - u_mid|^2 + 0.5 |u(T) - u_end|^2 + 0.5 reg |D u0|^2, with c = dt / dx^2."""
    n = u0.shape[0]
    u = u0.copy()
    un = np.zeros(n)
    misfit = 0.0
    mid = steps // 2
    for t in range(steps):
        for i in range(1, n - 1):
            un[i] = u[i] + alpha * c * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        for i in range(1, n - 1):
            u[i] = un[i]
        if t == mid - 1:
            for i in range(n):
                d = u[i] - u_mid[i]
                misfit += d * d
    for i in range(n):
        d = u[i] - u_end[i]
        misfit += d * d
    smooth = 0.0
    for i in range(n - 1):
        d = u0[i + 1] - u0[i]
        smooth += d * d
    return 0.5 * misfit + 0.5 * reg * smooth


loss_njit = numba.njit(loss)     # the same loss compiled plainly: for finite differences


@numba.njit
def simulate(u0, alpha, c, steps):
    """Forward model: the snapshots at steps // 2 and at steps."""
    n = u0.shape[0]
    u = u0.copy()
    un = np.zeros(n)
    u_mid = u0.copy()
    for t in range(steps):
        for i in range(1, n - 1):
            un[i] = u[i] + alpha * c * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        for i in range(1, n - 1):
            u[i] = un[i]
        if t == steps // 2 - 1:
            u_mid[:] = u
    return u_mid, u


def true_profile(n):
    x = np.linspace(0.0, 1.0, n)
    return (0.2 + 0.3 * x + np.exp(-((x - 0.3) / 0.08) ** 2)
            + 0.6 * np.exp(-((x - 0.65) / 0.12) ** 2))


def fd_check(fun, x, args, probes, h=1e-6):
    """Largest difference between the packed gradient and central differences of the njit
    loss at the coordinates `probes` of x (u0 cells and alpha, the last entry)."""
    _, g = fun(x, *args)
    worst = 0.0
    for k in probes:
        xp = x.copy()
        xp[k] += h
        xm = x.copy()
        xm[k] -= h
        fd = (loss_njit(xp[:-1], xp[-1], *args) - loss_njit(xm[:-1], xm[-1], *args)) / (2 * h)
        worst = max(worst, abs(g[k] - fd) / max(1.0, abs(fd)))
    return worst


def main(n=128, steps=600, alpha_true=1.0, noise=1e-3, reg=1e-4, checkpoint=None, seed=0,
         maxiter=500):
    rng = np.random.default_rng(seed)
    c = 0.25                     # dt / dx^2: alpha * c < 1/2 for alpha < 2
    u0_true = true_profile(n)
    u_mid, u_end = simulate(u0_true, alpha_true, c, steps)
    u_mid = u_mid + noise * rng.normal(size=n)
    u_end = u_end + noise * rng.normal(size=n)
    args = (c, steps, u_mid, u_end, reg)

    options = {} if checkpoint is None else {"checkpoint": checkpoint}
    value_and_grad = adjit.value_and_grad(loss, argnums=(0, 1), **options)

    def fun(x, *args):
        value, (g_u0, g_alpha) = value_and_grad(x[:-1], x[-1], *args)
        return value, np.append(g_u0, g_alpha)

    # start: the last measurement as the initial profile, half the true diffusivity
    x0 = np.append(u_end, 0.5 * alpha_true)
    t0 = time.perf_counter()
    fun(x0, *args)
    compile_s = time.perf_counter() - t0
    probes = list(range(0, n, max(1, n // 16))) + [n - 2, n - 1, n]
    grad_fd_error = fd_check(fun, x0, args, probes)
    bounds = [(None, None)] * n + [(0.05, 1.9)]
    t0 = time.perf_counter()
    res = minimize(fun, x0, args=args, jac=True, method="L-BFGS-B", bounds=bounds,
                   options={"maxiter": maxiter, "gtol": 1e-10, "ftol": 1e-15})
    fit_s = time.perf_counter() - t0
    u0_fit, alpha_fit = res.x[:-1], res.x[-1]
    fit_mid, fit_end = simulate(u0_fit, alpha_fit, c, steps)
    misfit_rms = float(np.sqrt(0.5 * (np.mean((fit_mid - u_mid) ** 2)
                                      + np.mean((fit_end - u_end) ** 2))))
    alpha_error = abs(alpha_fit - alpha_true) / alpha_true
    u0_rel_error = float(np.linalg.norm(u0_fit - u0_true) / np.linalg.norm(u0_true))
    start_rel_error = float(np.linalg.norm(u_end - u0_true) / np.linalg.norm(u0_true))
    seconds_per_gradient = fit_s / max(res.nfev, 1)

    print(f"1-D heat equation, {n} cells, {steps} explicit steps; measured at step "
          f"{steps // 2} and {steps} with noise {noise:g}")
    print(f"unknowns: alpha and u0 ({n + 1} numbers), smoothness penalty reg = {reg:g}")
    print(f"gradient vs central differences at the start ({len(probes)} coordinates): "
          f"max rel. diff {grad_fd_error:.1e}")
    print(f"L-BFGS-B: {res.message} after {res.nit} iterations, {res.nfev} loss+gradient "
          f"calls, {fit_s:.2f} s ({seconds_per_gradient * 1e3:.1f} ms per call; first call "
          f"compiled in {compile_s:.2f} s)")
    print(f"rms misfit {misfit_rms:.2e} (noise {noise:g})")
    print(f"alpha: true {alpha_true:.4f}, start {0.5 * alpha_true:.4f}, fitted {alpha_fit:.4f} "
          f"(relative error {alpha_error:.1e})")
    print(f"u0: relative error {u0_rel_error:.3f} (the last measurement, used as the start, "
          f"is off by {start_rel_error:.3f})")
    return {"success": bool(res.success), "nit": int(res.nit), "nfev": int(res.nfev),
            "alpha": float(alpha_fit), "alpha_true": alpha_true,
            "alpha_error": float(alpha_error), "u0": u0_fit, "u0_true": u0_true,
            "u0_rel_error": u0_rel_error, "start_u0_rel_error": start_rel_error,
            "misfit_rms": misfit_rms, "noise": noise, "grad_fd_error": float(grad_fd_error),
            "fit_s": fit_s, "compile_s": compile_s}


if __name__ == "__main__":
    main()
