"""Fit the parameters of a damped pendulum to a few noisy angle readings, differentiating
through 10^5 integrator steps.

The model is theta'' = -w2 sin(theta) - c theta', with w2 = g / L and a damping rate c,
integrated with the leapfrog (kick-drift with the velocity at half steps, the damping
evaluated at the half step):

    omega_{1/2}    = omega_0 + dt/2 (-w2 sin(theta_0) - c omega_0)
    theta_{k+1}    = theta_k + dt omega_{k+1/2}
    omega_{k+3/2}  = omega_{k+1/2} + dt (-w2 sin(theta_{k+1}) - c omega_{k+1/2})

"Observations" are the angle at a few irregular times (true w2, c, plus noise). The loss is
the sum of squared differences between the simulated angle and the observations; its time
loop is the outermost loop and visits every step (the observations are compared when the
step counter reaches them). adjit.value_and_grad(loss, argnums=(0, 1)) gives the loss and
d loss / d (w2, c) through the whole integration, which scipy's L-BFGS-B minimizes from a
start far from the truth (the early readings, before the simulated and the observed pendulum
drift half a period apart, keep the fit out of the local minima an oscillating signal has).
The reverse sweep needs the angle and the velocity of every step. Recorded, that is a tape
of 10^5 steps x a few numbers (3.2 MB). checkpoint="auto" uses the memory it is allowed:
where recording every step fits, it records them (a step records 4 numbers: reading them
back costs less than running the step again). Here the tape is limited to 1 MB
(tape_limit), so adjit cuts the steps into blocks of a few hundred, keeps a snapshot of the
loop state at each block's start, and in the reverse sweep runs each block again with the
tape before its adjoints: snapshots and one block's tape take a few kB, the gradient is the
same to the last bit (checked below against the recorded one), at the price of running each
step twice instead of once.
Run: .venv/bin/python examples/pendulum_fit.py
"""
import math
import time

import numba
import numpy as np
from scipy.optimize import minimize

import adjit


def loss(w2, c, theta0, omega0, dt, steps, obs_steps, obs):
    """Sum over k of (theta(obs_steps[k] dt) - obs[k])^2 for the observations up to `steps`."""
    n_obs = obs_steps.shape[0]
    theta = theta0
    omega = omega0 + 0.5 * dt * (-w2 * math.sin(theta0) - c * omega0)
    k = 0
    s = 0.0
    for t in range(steps):
        theta = theta + dt * omega
        omega = omega + dt * (-w2 * math.sin(theta) - c * omega)
        if k < n_obs and t + 1 == obs_steps[k]:
            d = theta - obs[k]
            s += d * d
            k += 1
    return s


loss_njit = numba.njit(loss)     # the same loss compiled plainly: for finite differences


@numba.njit
def angles(w2, c, theta0, omega0, dt, steps, obs_steps):
    out = np.zeros(obs_steps.shape[0])
    theta = theta0
    omega = omega0 + 0.5 * dt * (-w2 * math.sin(theta0) - c * omega0)
    k = 0
    for t in range(steps):
        theta = theta + dt * omega
        omega = omega + dt * (-w2 * math.sin(theta) - c * omega)
        if k < obs_steps.shape[0] and t + 1 == obs_steps[k]:
            out[k] = theta
            k += 1
    return out


def main(steps=100_000, t_end=10.0, w2_true=9.81, c_true=0.3, theta0=1.2, n_obs=15,
         noise=0.01, start=(7.0, 1.0), checkpoint="auto", tape_limit=1_000_000, seed=0):
    rng = np.random.default_rng(seed)
    dt = t_end / steps
    times = np.sort(rng.uniform(0.2, t_end, n_obs))
    obs_steps = np.round(times / dt).astype(np.int64)
    obs_steps[-1] = steps                            # the last observation at the very end
    clean = angles(w2_true, c_true, theta0, 0.0, dt, steps, obs_steps)
    obs = clean + noise * rng.normal(size=n_obs)

    options = {} if checkpoint is None else {"checkpoint": checkpoint}
    if tape_limit is not None:
        options["tape_limit"] = tape_limit
    value_and_grad = adjit.value_and_grad(loss, argnums=(0, 1), **options)

    def fun(p, n_steps):
        value, (g_w2, g_c) = value_and_grad(p[0], p[1], theta0, 0.0, dt, n_steps, obs_steps,
                                            obs)
        return value, np.array([g_w2, g_c])

    p = np.array(start, dtype=np.float64)
    t0 = time.perf_counter()
    fun(p, steps)
    compile_s = time.perf_counter() - t0
    # the gradient at the start against central differences of the plain jitted loss
    _, g = fun(p, steps)
    fd = np.zeros(2)
    for k in range(2):
        h = 1e-6 * max(1.0, abs(p[k]))
        hi = p.copy()
        hi[k] += h
        lo = p.copy()
        lo[k] -= h
        fd[k] = (loss_njit(*hi, theta0, 0.0, dt, steps, obs_steps, obs)
                 - loss_njit(*lo, theta0, 0.0, dt, steps, obs_steps, obs)) / (2 * h)
    grad_fd_error = float(np.abs(g - fd).max() / np.abs(fd).max())
    tape = value_and_grad.last_tape
    recorded = adjit.value_and_grad(loss, argnums=(0, 1))      # no checkpointing
    g_recorded = np.array(recorded(p[0], p[1], theta0, 0.0, dt, steps, obs_steps, obs)[1])
    same_bits = bool(np.array_equal(g, g_recorded))
    full_tape = recorded.last_tape

    t0 = time.perf_counter()
    res = minimize(fun, p, args=(steps,), jac=True, method="L-BFGS-B",
                   bounds=[(0.5, 50.0), (0.0, 5.0)],
                   options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 200})
    fit_s = time.perf_counter() - t0
    nit, nfev = int(res.nit), int(res.nfev)
    w2, c = res.x
    fitted = angles(w2, c, theta0, 0.0, dt, steps, obs_steps)
    rms = float(np.sqrt(np.mean((fitted - obs) ** 2)))

    print(f"damped pendulum theta'' = -w2 sin(theta) - c theta', theta(0) = {theta0}, "
          f"leapfrog with {steps} steps of {dt:g} s, {n_obs} readings with noise {noise}")
    print(f"gradient vs central differences at the start: max rel. diff {grad_fd_error:.1e}")
    print(f"memory: checkpoint={checkpoint!r}, tape_limit={tape_limit}: "
          f"{tape.total_bytes / 1e3:.0f} kB of tape and "
          f"snapshots (recompute factor {tape.recompute_factor:.2f}); recorded without "
          f"checkpointing: {full_tape.total_bytes / 1e6:.1f} MB; gradients identical: "
          f"{same_bits}")
    print(f"L-BFGS-B: {res.message} after {nit} iterations, {nfev} loss+gradient calls in "
          f"{fit_s:.2f} s "
          f"({fit_s / nfev * 1e3:.1f} ms per call through {steps} steps; first call "
          f"compiled in {compile_s:.2f} s)")
    print(f"{'':8}{'w2 = g/L':>10}{'c':>10}")
    print(f"{'true':8}{w2_true:10.4f}{c_true:10.4f}")
    print(f"{'start':8}{start[0]:10.4f}{start[1]:10.4f}")
    print(f"{'fitted':8}{w2:10.4f}{c:10.4f}")
    print(f"rms residual {rms:.4f} (noise {noise})")
    return {"success": bool(res.success), "w2": float(w2), "c": float(c),
            "w2_true": w2_true, "c_true": c_true, "loss": float(res.fun),
            "rms": rms, "noise": noise, "grad_fd_error": grad_fd_error, "nit": nit,
            "nfev": nfev, "fit_s": fit_s, "compile_s": compile_s,
            "tape_bytes": tape.total_bytes, "recorded_tape_bytes": full_tape.total_bytes,
            "recompute_factor": tape.recompute_factor, "same_bits": same_bits}


if __name__ == "__main__":
    main()
