"""Fitting an ODE's parameters to an ensemble of experiments, the gradient summed on Dask.

The model. A damped pendulum, y'' = -omega2 sin(y) - c y', integrated by explicit Euler
(time step dt) from each experiment's own initial angle y0; theta = (omega2, c) is shared.
Each experiment measured the angle at every step, with noise. The objective is the sum over
experiments of the squared misfit,

    L(theta) = sum_m sum_k (y_m(t_k; theta) - data_m[k])^2,

and its gradient the sum of the members' gradients. Every member is an independent forward
run, so the members are Dask tasks: `adjit.distributed.ensemble_sum` maps
`value_and_grad(misfit)` over them on the cluster's workers and adds the results there, in a
tree; only (L, dL/dtheta) comes back. scipy.optimize (L-BFGS-B) takes it from there.

The gradient travels to the workers pickled; each worker process builds and compiles it
once, for every task it runs (with cache=True and one ADJIT_CACHE_DIR, it loads the machine
code the client compiled instead). main() checks the summed gradient against central
differences, fits theta from a wrong start, and times one ensemble gradient on one worker
and on two. Needs the extra: pip install 'adjit[distributed]'.
"""
import math
import os
import sys
import tempfile
import time

import numpy as np

import adjit
from adjit.distributed import ensemble_sum

DT = 0.002


def misfit(theta, y0, data):
    y, v = y0, 0.0
    s = 0.0
    for k in range(data.shape[0]):
        a = -theta[0] * math.sin(y) - theta[1] * v
        y = y + DT * v
        v = v + DT * a
        s += (y - data[k]) ** 2
    return s


def simulate(theta, y0, steps):
    y, v = y0, 0.0
    out = np.empty(steps)
    for k in range(steps):
        a = -theta[0] * math.sin(y) - theta[1] * v
        y = y + DT * v
        v = v + DT * a
        out[k] = y
    return out


def experiments(truth, members, steps, noise=0.01, seed=0):
    rng = np.random.default_rng(seed)
    y0s = np.linspace(0.2, 2.5, members)
    return [(y0, simulate(truth, y0, steps) + noise * rng.normal(size=steps)) for y0 in y0s]


def main(members=16, steps=300000):
    from dask.distributed import Client, LocalCluster
    from scipy.optimize import minimize

    os.environ.setdefault("ADJIT_CACHE_DIR", tempfile.mkdtemp(prefix="adjit-ensemble-"))
    truth = np.array([4.0, 0.3])
    data = experiments(truth, members, steps)
    g = adjit.value_and_grad(misfit, cache=True)
    g(truth, *data[0])                  # compile here: the workers load it from the cache

    timings = {}
    for workers in (1, 2):
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                          dashboard_address=None, silence_logs=40) as cluster, \
                Client(cluster) as client:
            # the measurements go to the workers once; each task names them by future
            remote = client.scatter([d for _, d in data], broadcast=True)

            def run_members(theta):
                return [(theta, y0, d) for (y0, _), d in zip(data, remote)]

            start = np.array([2.0, 1.0])
            ensemble_sum(client, g, run_members(start))            # workers warm
            times = []
            for _ in range(5):
                t0 = time.perf_counter()
                ensemble_sum(client, g, run_members(start))
                times.append(time.perf_counter() - t0)
            timings[workers] = float(np.median(times))
            if workers == 2:
                value, grad = ensemble_sum(client, g, run_members(start))
                serial = sum(misfit(start, y0, d) for y0, d in data[:3])
                h = 1e-6
                sub = run_members(start)[:3]
                _, grad3 = ensemble_sum(client, g, sub)
                fd = np.array([(sum(misfit(start + h * e, y0, d) for y0, d in data[:3])
                                - sum(misfit(start - h * e, y0, d) for y0, d in data[:3]))
                               / (2 * h) for e in np.eye(2)])
                err = np.max(np.abs(grad3 - fd) / np.abs(fd))
                print(f"summed gradient of 3 members vs central differences: max relative "
                      f"error {err:.1e} (loss of the 3: {serial:.4g})")
                assert err < 1e-5, err

                calls = []

                def objective(theta):
                    calls.append(1)
                    v, d = ensemble_sum(client, g, run_members(theta))
                    return v, d
                t0 = time.perf_counter()
                fit = minimize(objective, start, jac=True, method="L-BFGS-B",
                               bounds=[(0.1, 20.0), (0.0, 5.0)])
                took = time.perf_counter() - t0
                print(f"fit from {start}: theta = {fit.x.round(4)} (truth {truth}), "
                      f"{len(calls)} ensemble gradients in {took:.2f} s")
                assert np.allclose(fit.x, truth, rtol=2e-2), fit.x
    print(f"one ensemble gradient ({members} members x {steps} steps): "
          f"1 worker {timings[1] * 1e3:.0f} ms, 2 workers {timings[2] * 1e3:.0f} ms "
          f"(speed-up {timings[1] / timings[2]:.2f}, {os.cpu_count()} cores)")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
