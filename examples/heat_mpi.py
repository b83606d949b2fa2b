"""An inverse problem on a domain split over MPI ranks: the gradient through halo exchanges.

The model. A 1-D reaction-diffusion equation on a ring of N cells, explicit in time:

    u[i] <- u[i] + alpha (u[i-1] - 2 u[i] + u[i+1]) + dt kappa u[i] (1 - u[i]),

run for `steps` steps from a known initial field. Each MPI rank holds N / size cells and two
ghost cells; every step it exchanges its edge cells with its neighbours with numba-mpi's
`sendrecv`, as a numba-mpi program does. The loss is the squared misfit to a measured final
field, summed over the ranks with `allreduce`.

The inverse problem. The measurements come from (alpha, kappa) = (0.21, 0.8); starting from
(0.1, 0.3), every rank runs the same L-BFGS iterations: adjit's gradient on each rank is that
rank's share of dL/d(alpha, kappa) (the loss is one value every rank holds: it counts once),
and their sum, by allreduce, is the whole gradient. adjit differentiates the messages: the
adjoint of a halo exchange sends the ghost cells' cotangents back to the ranks they came
from.

main() checks the gradient against central differences, fits, and times the forward and the
gradient per time step. Run it on two ranks with `mpiexec -n 2 python examples/heat_mpi.py`
(make examples does); on one rank it is the undecomposed problem. Needs the extra:
pip install 'adjit[distributed]'.
"""
import sys
import time

import numba
import numba_mpi as mpi
import numpy as np

import adjit


@numba.njit
def evolve(params, u0, steps, dt):
    """This rank's cells after `steps` steps, halos exchanged with its neighbours."""
    rank = mpi.rank()
    size = mpi.size()
    alpha = params[0]
    kappa = params[1]
    n = u0.shape[0]
    u = np.zeros(n + 2)
    u[1:n + 1] = u0
    left = (rank - 1) % size
    right = (rank + 1) % size
    for t in range(steps):
        mpi.sendrecv(u[n:n + 1], right, u[0:1], left)
        mpi.sendrecv(u[1:2], left, u[n + 1:n + 2], right)
        un = u.copy()
        for i in range(1, n + 1):
            u[i] = un[i] + alpha * (un[i - 1] - 2.0 * un[i] + un[i + 1]) + \
                dt * kappa * un[i] * (1.0 - un[i])
    return u[1:n + 1].copy()


def misfit(params, u0, data, steps, dt):
    u = evolve(params, u0, steps, dt)
    local = np.zeros(1)
    total = np.zeros(1)
    local[0] = np.sum((u - data) ** 2)
    mpi.allreduce(local, total)
    return total[0]


def summed(v):
    out = np.zeros_like(v)
    mpi.allreduce(np.ascontiguousarray(v), out)
    return out


def main(cells=2048, steps=300):
    from scipy.optimize import minimize
    rank, size = mpi.rank(), mpi.size()
    dt = 0.01
    x = np.linspace(0.0, 1.0, cells, endpoint=False)
    mine = slice(rank * cells // size, (rank + 1) * cells // size)
    u0 = (0.1 + 0.5 * np.exp(-((x - 0.4) * cells / 60.0) ** 2))[mine].copy()
    truth = np.array([0.21, 0.8])
    forward = numba.njit(misfit)
    # the measurements: the final field of the true parameters
    data = evolve(truth, u0, steps, dt)
    g = adjit.value_and_grad(misfit)

    start = np.array([0.1, 0.3])
    value, grad = g(start, u0, data, steps, dt)
    whole = summed(grad)
    h = 1e-5
    fd = np.array([(forward(start + h * e, u0, data, steps, dt) -
                    forward(start - h * e, u0, data, steps, dt)) / (2 * h) for e in np.eye(2)])
    err = float(np.max(np.abs(whole - fd) / np.abs(fd)))
    if rank == 0:
        print(f"{size} rank(s), {cells} cells, {steps} steps: gradient vs central differences "
              f"{err:.1e}")
    assert err < 1e-5, err

    def objective(p):
        v, d = g(p, u0, data, steps, dt)
        return v, summed(d)                 # the same on every rank: L-BFGS runs in lockstep
    fit = minimize(objective, start, jac=True, method="L-BFGS-B",
                   bounds=[(0.0, 0.25), (0.0, 2.0)])
    if rank == 0:
        print(f"fit from {start}: (alpha, kappa) = {fit.x.round(4)} (truth {truth}), "
              f"{fit.nfev} gradients")
    assert np.allclose(fit.x, truth, rtol=1e-3), fit.x

    times = {"forward": [], "gradient": []}
    for _ in range(5):
        mpi.barrier()
        t0 = time.perf_counter()
        forward(start, u0, data, steps, dt)
        mpi.barrier()
        t1 = time.perf_counter()
        g(start, u0, data, steps, dt)
        mpi.barrier()
        t2 = time.perf_counter()
        times["forward"].append(t1 - t0)
        times["gradient"].append(t2 - t1)
    fwd = float(np.median(times["forward"])) / steps
    grd = float(np.median(times["gradient"])) / steps
    if rank == 0:
        print(f"per time step on {size} rank(s): forward {fwd * 1e6:.1f} us, gradient "
              f"{grd * 1e6:.1f} us (gradient / forward {grd / fwd:.1f})")
    return {"error": err, "fit": fit.x, "forward_step": fwd, "gradient_step": grd}


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
