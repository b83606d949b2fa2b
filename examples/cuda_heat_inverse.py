"""Recover the diffusion coefficient of a 2-D heat equation on the GPU from one measurement.

The forward model is a host loop of CUDA kernel launches, one explicit heat step per launch
with two swapped buffers, as numba.cuda code is usually written. A "measurement" is the
final field of a run with the true coefficient, plus noise. adjit.cuda.time_loop gives the
gradient of the misfit 1/2 |u_T(alpha) - measured|^2 with respect to alpha (and to the
initial field, unused here) by running the adjoint kernel of the step backwards through
the loop, recomputing states from a few snapshots kept on the device; scipy's L-BFGS-B
then fits alpha. The example first checks the gradient against central finite differences
of the same GPU loop.

Without a GPU (no /dev/nvidia0) it runs in numba's CUDA simulator, which executes every CUDA
thread as a Python thread: a tiny grid and few steps then (a note says so).
Run: .venv/bin/python examples/cuda_heat_inverse.py
"""
import os
import sys
import time

if not os.path.exists("/dev/nvidia0"):
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import numpy as np  # noqa: E402

# numba-cuda 0.2x registers an overload of np.row_stack, which numpy 2.5 removed: with both,
# compiling any kernel fails inside numba-cuda. Give numpy back the alias (np.vstack, which
# it was) before numba.cuda is imported.
if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack

from numba import config, cuda  # noqa: E402
from scipy.optimize import minimize  # noqa: E402

import adjit.cuda  # noqa: E402


@cuda.jit
def heat_step(u, alpha, u_new):
    """One explicit step of u_t = alpha * laplacian(u) (alpha includes dt / dx^2 and must
    stay below 1/4); the boundary values are kept."""
    i, j = cuda.grid(2)
    n, m = u.shape
    if i < n and j < m:
        if i == 0 or j == 0 or i == n - 1 or j == m - 1:
            u_new[i, j] = u[i, j]
        else:
            u_new[i, j] = u[i, j] + alpha[0] * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1]
                                                + u[i, j + 1] - 4.0 * u[i, j])


LOOP = adjit.cuda.time_loop(heat_step, state=(0, 2), params=(1,))


def initial_field(n):
    """Two warm spots on a cold plate."""
    x = np.linspace(0.0, 1.0, n)
    X, Y = np.meshgrid(x, x, indexing="ij")
    return (np.exp(-((X - 0.35) ** 2 + (Y - 0.4) ** 2) / 0.02)
            + 0.6 * np.exp(-((X - 0.7) ** 2 + (Y - 0.65) ** 2) / 0.01))


def main(n=None, steps=None, alpha_true=0.18, alpha_start=0.05, noise=1e-3, snapshots=None,
         threads=None, seed=0):
    simulated = bool(config.ENABLE_CUDASIM)
    n = n or (8 if simulated else 256)
    steps = steps or (8 if simulated else 400)
    threads = threads or ((8, 8) if simulated else (16, 16))
    grid = ((n + threads[0] - 1) // threads[0], (n + threads[1] - 1) // threads[1])
    launch = (grid, threads)
    if simulated:
        print(f"note: no GPU found, running in numba's CUDA simulator: a {n}x{n} grid and "
              f"{steps} steps (on a GPU the example uses 256x256 and 400 steps)")
        # the simulator runs each CUDA thread as a Python thread and switches between them
        # at barriers: a shorter switch interval makes that much faster
        interval = sys.getswitchinterval()
        sys.setswitchinterval(1e-4)
    try:
        return _fit(n, steps, alpha_true, alpha_start, noise, snapshots, launch, seed,
                    simulated)
    finally:
        if simulated:
            sys.setswitchinterval(interval)


def _fit(n, steps, alpha_true, alpha_start, noise, snapshots, launch, seed, simulated):
    u0 = cuda.to_device(initial_field(n))
    rng = np.random.default_rng(seed)
    measured = LOOP.run[launch](u0, np.array([alpha_true]), steps).copy_to_host()
    measured += noise * rng.normal(size=measured.shape)
    evals = []

    def misfit_and_grad(x):
        fwd = LOOP.forward[launch](u0, x.astype(np.float64), steps, snapshots=snapshots)
        r = fwd.state.copy_to_host() - measured
        _, alpha_bar = fwd.backward(r)            # d/d alpha of 1/2 |r|^2: cotangent r
        evals.append(fwd.stats)
        return 0.5 * float(np.sum(r * r)), alpha_bar.copy_to_host()

    def misfit(alpha):
        r = LOOP.run[launch](u0, np.array([alpha]), steps).copy_to_host() - measured
        return 0.5 * float(np.sum(r * r))

    # the adjoint gradient against central differences of the same GPU loop
    t0 = time.perf_counter()
    f0, g0 = misfit_and_grad(np.array([alpha_start]))
    h = 1e-6
    g_fd = (misfit(alpha_start + h) - misfit(alpha_start - h)) / (2 * h)
    grad_err = abs(g0[0] - g_fd) / abs(g_fd)
    print(f"misfit at alpha = {alpha_start}: {f0:.6e}; d misfit / d alpha: adjoint "
          f"{g0[0]:.8e}, central differences {g_fd:.8e} (rel. diff {grad_err:.1e})")

    result = minimize(misfit_and_grad, np.array([alpha_start]), jac=True, method="L-BFGS-B",
                      bounds=[(0.01, 0.24)], options={"ftol": 1e-14, "gtol": 1e-12})
    seconds = time.perf_counter() - t0
    alpha_fit = float(result.x[0])
    stats = evals[-1]
    where = "the CUDA simulator" if simulated else cuda.get_current_device().name
    print(f"{n}x{n} grid, {steps} steps, on {where}: L-BFGS-B took {result.nfev} misfit + "
          f"gradient evaluations ({seconds:.2f} s in all, compiling included)")
    print(f"alpha: true {alpha_true}, start {alpha_start}, recovered {alpha_fit:.6f} (rel. "
          f"error {abs(alpha_fit - alpha_true) / alpha_true:.1e}, noise {noise})")
    print(f"each gradient: {stats['snapshots']} snapshots of the field on the device, "
          f"{stats['forward_launches']} step launches forward for {steps} steps (recompute "
          f"factor {stats['forward_launches'] / max(steps, 1):.2f}), "
          f"{stats['adjoint_launches']} adjoint launches")
    return {"n": n, "steps": steps, "simulated": simulated, "alpha_true": alpha_true,
            "alpha_fit": alpha_fit, "grad_err": grad_err, "nfev": int(result.nfev),
            "stats": stats, "success": bool(result.success)}


if __name__ == "__main__":
    main()
