"""Molecular dynamics of a Lennard-Jones cluster, the forces from adjit, inside @numba.njit.

The potential energy of N atoms in 3-D is a plain double loop over pairs,

    E(x) = sum_{i<j} 4 (r_ij^-12 - r_ij^-6)      (reduced units: epsilon = sigma = mass = 1),

and the forces are F = -dE/dx = -adjit.grad(energy)(x). The gradient object is a compiled
function that @numba.njit code can call, so the whole velocity-Verlet integrator

    v += dt/2 F(x);   x += dt v;   v += dt/2 F(x)

is one jitted loop that never returns to Python. Velocity Verlet is symplectic: the total
energy K + E oscillates at O(dt^2) around its initial value instead of drifting, so after
10^4 steps its largest relative deviation measures both the integrator and the forces (a
wrong force, even slightly, shows up as a drift). The forces are also compared with the
analytic ones, F_i = sum_j 24 (2 r^-14 - r^-8) (x_i - x_j).

The atoms start on an fcc lattice at the nearest-neighbour distance 2^(1/6) (the N sites
closest to the centre, a compact cluster) with random velocities at a low temperature, no
net momentum and no net angular momentum, so the cluster stays bound.
Run: .venv/bin/python examples/lj_md.py
"""
import time

import numba
import numpy as np

import adjit


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


denergy = adjit.grad(energy)
energy_njit = numba.njit(energy)


@numba.njit
def analytic_forces(x):
    n = x.shape[0]
    f = np.zeros((n, 3))
    for i in range(n):
        for j in range(i + 1, n):
            dx = x[i, 0] - x[j, 0]
            dy = x[i, 1] - x[j, 1]
            dz = x[i, 2] - x[j, 2]
            inv2 = 1.0 / (dx * dx + dy * dy + dz * dz)
            inv6 = inv2 * inv2 * inv2
            c = 24.0 * inv6 * (2.0 * inv6 - 1.0) * inv2
            f[i, 0] += c * dx
            f[i, 1] += c * dy
            f[i, 2] += c * dz
            f[j, 0] -= c * dx
            f[j, 1] -= c * dy
            f[j, 2] -= c * dz
    return f


@numba.njit
def kinetic(v):
    return 0.5 * np.sum(v * v)


@numba.njit
def velocity_verlet(x, v, dt, steps):
    """Integrates in place with the adjit forces; returns the total energy at every step."""
    total = np.empty(steps + 1)
    f = -denergy(x)
    total[0] = kinetic(v) + energy_njit(x)
    for t in range(steps):
        v += 0.5 * dt * f
        x += dt * v
        f = -denergy(x)
        v += 0.5 * dt * f
        total[t + 1] = kinetic(v) + energy_njit(x)
    return total


@numba.njit
def velocity_verlet_analytic(x, v, dt, steps):
    """The same integrator with the hand-written forces, for timing."""
    total = np.empty(steps + 1)
    f = analytic_forces(x)
    total[0] = kinetic(v) + energy_njit(x)
    for t in range(steps):
        v += 0.5 * dt * f
        x += dt * v
        f = analytic_forces(x)
        v += 0.5 * dt * f
        total[t + 1] = kinetic(v) + energy_njit(x)
    return total


def fcc_cluster(n_atoms):
    a = 2.0 ** (1.0 / 6.0) * np.sqrt(2.0)           # nearest neighbours at 2^(1/6)
    m = int(np.ceil(n_atoms ** (1.0 / 3.0))) + 2
    cells = np.array([(i, j, k) for i in range(-m, m + 1) for j in range(-m, m + 1)
                      for k in range(-m, m + 1)], dtype=np.float64)
    basis = np.array([[0, 0, 0], [0.5, 0.5, 0], [0.5, 0, 0.5], [0, 0.5, 0.5]])
    sites = (cells[:, None, :] + basis[None, :, :]).reshape(-1, 3) * a
    order = np.lexsort((sites[:, 2], sites[:, 1], sites[:, 0], np.round(np.sum(sites ** 2, 1), 9)))
    x = sites[order[:n_atoms]]
    return x - x.mean(axis=0)


def initial_velocities(x, temperature, rng):
    v = rng.normal(scale=np.sqrt(temperature), size=x.shape)
    v -= v.mean(axis=0)                               # no net momentum
    # no net angular momentum: subtract the rigid rotation omega x r, I omega = L
    r = x - x.mean(axis=0)
    ang = np.cross(r, v).sum(axis=0)
    inertia = np.sum(r * r) * np.eye(3) - r.T @ r
    omega = np.linalg.solve(inertia, ang)
    return v - np.cross(omega, r)


def main(n_atoms=38, steps=10_000, dt=0.002, temperature=0.05, seed=0):
    rng = np.random.default_rng(seed)
    x0 = fcc_cluster(n_atoms)
    x0 = x0 + 0.01 * rng.normal(size=x0.shape)
    v0 = initial_velocities(x0, temperature, rng)

    # forces: adjit against the analytic formula, at the start
    force_error = float(np.abs(-denergy(x0) - analytic_forces(x0)).max()
                        / np.abs(analytic_forces(x0)).max())

    x = x0.copy()
    v = v0.copy()
    t0 = time.perf_counter()
    velocity_verlet(x.copy(), v.copy(), dt, 1)         # compile
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    total = velocity_verlet(x, v, dt, steps)
    run_s = time.perf_counter() - t0
    drift = float(np.abs(total - total[0]).max() / abs(total[0]))
    end_drift = float(abs(total[-1] - total[0]) / abs(total[0]))
    # and at the end, after the atoms have moved
    force_error_end = float(np.abs(-denergy(x) - analytic_forces(x)).max()
                            / np.abs(analytic_forces(x)).max())
    force_error = max(force_error, force_error_end)
    displacement = float(np.sqrt(np.mean(np.sum((x - x0) ** 2, axis=1))))
    bound = bool(np.sqrt(np.sum((x - x.mean(axis=0)) ** 2, axis=1)).max() < 5.0)

    velocity_verlet_analytic(x0.copy(), v0.copy(), dt, 1)
    t0 = time.perf_counter()
    total_analytic = velocity_verlet_analytic(x0.copy(), v0.copy(), dt, steps)
    analytic_s = time.perf_counter() - t0
    drift_analytic = float(np.abs(total_analytic - total_analytic[0]).max()
                           / abs(total_analytic[0]))

    print(f"{n_atoms}-atom Lennard-Jones cluster, velocity Verlet, dt = {dt}, {steps} steps "
          f"(t = {steps * dt:g}), T0 = {temperature}")
    print(f"adjit forces vs analytic forces: max rel. diff {force_error:.1e}")
    print(f"total energy {total[0]:.6f}: max |E(t) - E(0)| / |E(0)| = {drift:.1e} "
          f"(at the end {end_drift:.1e}); analytic forces: {drift_analytic:.1e}")
    print(f"rms displacement {displacement:.3f}, cluster still bound: {bound}")
    print(f"jitted integrator with adjit forces: {run_s:.3f} s for {steps} steps "
          f"({run_s / steps * 1e6:.1f} us per step; compiled in {compile_s:.2f} s); "
          f"with analytic forces {analytic_s:.3f} s")
    return {"force_error": force_error, "drift": drift, "end_drift": end_drift,
            "drift_analytic": drift_analytic, "energy0": float(total[0]),
            "displacement": displacement, "bound": bound, "run_s": run_s,
            "analytic_s": analytic_s, "compile_s": compile_s}


if __name__ == "__main__":
    main()
