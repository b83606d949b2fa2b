"""Lennard-Jones forces on the GPU from the adjoint of an energy kernel.

One CUDA thread per atom computes that atom's share of the pair energy, looping over all
atoms within a cutoff. adjit.cuda.adjoint_kernel turns the energy kernel into its adjoint:
launched with the same grid and a cotangent of ones on the per-atom energies, it
accumulates d E / d positions, minus the forces, into the positions' shadow. The pair loop
needs no tape (the positions are not written, so the backward sweep reads them again), and
the scatter into the other atom's gradient uses cuda.atomic.add.

The same energy written as a plain CPU function gives the CPU gradient with adjit.grad; the
two must agree to rounding. Without a GPU (no /dev/nvidia0) the example runs in numba's CUDA
simulator, which executes the kernels thread by thread on the CPU: use a small system then.
Run: .venv/bin/python examples/cuda_lj_forces.py
"""
import math
import os
import time

if not os.path.exists("/dev/nvidia0"):
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import numpy as np  # noqa: E402
from numba import config, cuda  # noqa: E402

import adjit  # noqa: E402
import adjit.cuda  # noqa: E402

CUTOFF2 = 2.5 * 2.5


@cuda.jit
def atom_energies(pos, e):
    """e[i] = 1/2 sum over j != i within the cutoff of 4 (r^-12 - r^-6)."""
    i = cuda.grid(1)
    n = pos.shape[0]
    if i < n:
        s = 0.0
        for j in range(n):
            if j != i:
                dx = pos[i, 0] - pos[j, 0]
                dy = pos[i, 1] - pos[j, 1]
                dz = pos[i, 2] - pos[j, 2]
                r2 = dx * dx + dy * dy + dz * dz
                if r2 < CUTOFF2:
                    inv6 = 1.0 / (r2 * r2 * r2)
                    s += 2.0 * (inv6 * inv6 - inv6)
        e[i] = s


def energy_cpu(pos):
    n = pos.shape[0]
    s = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            dx = pos[i, 0] - pos[j, 0]
            dy = pos[i, 1] - pos[j, 1]
            dz = pos[i, 2] - pos[j, 2]
            r2 = dx * dx + dy * dy + dz * dz
            if r2 < CUTOFF2:
                inv6 = 1.0 / (r2 * r2 * r2)
                s += 4.0 * (inv6 * inv6 - inv6)
    return s


def forces_analytic(pos):
    n = pos.shape[0]
    f = np.zeros_like(pos)
    for i in range(n):
        d = pos[i] - pos
        r2 = np.sum(d * d, axis=1)
        r2[i] = np.inf
        inside = r2 < CUTOFF2
        inv6 = np.where(inside, 1.0 / r2 ** 3, 0.0)
        coef = np.where(inside, 24.0 * (2.0 * inv6 * inv6 - inv6) / r2, 0.0)
        f[i] = np.sum(coef[:, None] * d, axis=0)
    return f


def lattice(n, spacing=1.12, seed=0):
    rng = np.random.default_rng(seed)
    side = int(math.ceil(n ** (1 / 3)))
    pts = np.array([(i, j, k) for i in range(side) for j in range(side) for k in range(side)],
                   dtype=np.float64)[:n]
    return pts * spacing + rng.uniform(-0.05, 0.05, pts.shape)


def main(n_atoms=None, threads=128):
    simulated = bool(config.ENABLE_CUDASIM)
    n = n_atoms or (64 if simulated else 10_000)
    pos = lattice(n)
    adjoint = adjit.cuda.adjoint_kernel(atom_energies, argnums=0)
    blocks = (n + threads - 1) // threads
    e = np.zeros(n)
    grad = np.zeros_like(pos)
    t0 = time.perf_counter()
    if simulated:
        adjoint[blocks, threads](pos, e, grad, np.ones(n))
    else:
        d_pos, d_e = cuda.to_device(pos), cuda.to_device(e)
        d_grad, d_cot = cuda.to_device(grad), cuda.to_device(np.ones(n))
        adjoint[blocks, threads](d_pos, d_e, d_grad, d_cot)
        cuda.synchronize()
        e, grad = d_e.copy_to_host(), d_grad.copy_to_host()
    gpu_s = time.perf_counter() - t0
    forces = -grad
    cpu_grad = adjit.grad(energy_cpu)(pos)
    ref = forces_analytic(pos)
    scale = np.max(np.abs(ref))
    err_cpu = float(np.max(np.abs(forces + cpu_grad)) / scale)
    err_ref = float(np.max(np.abs(forces - ref)) / scale)
    energy_err = abs(e.sum() - energy_cpu(pos)) / abs(energy_cpu(pos))
    where = "the CUDA simulator (no GPU found)" if simulated else cuda.get_current_device().name
    print(f"{n} atoms, cutoff 2.5, on {where}: adjoint kernel (first launch, compile "
          f"included) {gpu_s:.2f} s")
    print(f"total energy {e.sum():.6f} (CPU {energy_cpu(pos):.6f}, rel. diff {energy_err:.1e})")
    print(f"forces = -gradient: vs adjit.grad on the CPU {err_cpu:.1e}, vs the analytic "
          f"forces {err_ref:.1e} (relative to the largest force {scale:.3f})")
    print(f"net force {np.abs(forces.sum(axis=0)).max():.1e} (Newton's third law: 0)")
    print("the generated adjoint kernel:\n" + adjoint.source)
    return {"n": n, "simulated": simulated, "err_cpu": err_cpu, "err_ref": err_ref,
            "energy_err": energy_err, "net_force": float(np.abs(forces.sum(axis=0)).max())}


if __name__ == "__main__":
    main()
