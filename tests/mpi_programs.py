"""MPI programs written as numba-mpi users write them, differentiated by adjit on every rank.

Run by tests/test_mpi.py as `mpiexec -n 2 python tests/mpi_programs.py OUT.json`: every rank
runs the same checks; rank 0 writes what it measured to OUT.json, which the tests read.

Each decomposed program has its undecomposed twin (the whole field in one process). The
checks compare the ranks' gradients (concatenated for a field split over ranks, summed for a
value every rank holds a copy of) with the twin's gradient, the twin's gradient with central
differences of the numba-compiled twin, and the decomposed value with numba's own run of the
decomposed program.
"""
import json
import sys

import numba
import numba_mpi as mpi
import numpy as np

import adjit
from adjit import AdjitError

from fd import stencil


# ---- the programs -----------------------------------------------------------------------------
def heat_periodic(u0, alpha, target, steps):
    """1-D heat equation with a reaction term on a ring, each rank a piece with two ghost
    cells, halos exchanged with sendrecv; the loss summed over ranks with allreduce."""
    rank = mpi.rank()
    size = mpi.size()
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
            u[i] = un[i] + alpha * (un[i - 1] - 2.0 * un[i] + un[i + 1]) + 0.01 * un[i] ** 2
    local = np.zeros(1)
    total = np.zeros(1)
    local[0] = np.sum((u[1:n + 1] - target) ** 2)
    mpi.allreduce(local, total)
    return total[0]


def heat_periodic_whole(u0, alpha, target, steps):
    n = u0.shape[0]
    u = u0.copy()
    for t in range(steps):
        un = u.copy()
        for i in range(n):
            u[i] = un[i] + alpha * (un[(i - 1) % n] - 2.0 * un[i] + un[(i + 1) % n]) + \
                0.01 * un[i] ** 2
    return np.sum((u - target) ** 2)


def heat_open(u0, alpha, w, steps):
    """Fixed zero ends; neighbours exchange with send and recv in rank branches."""
    rank = mpi.rank()
    size = mpi.size()
    n = u0.shape[0]
    u = np.zeros(n + 2)
    u[1:n + 1] = u0
    for t in range(steps):
        if rank > 0:
            mpi.send(u[1:2], dest=rank - 1, tag=1)
        if rank < size - 1:
            mpi.recv(u[n + 1:n + 2], source=rank + 1, tag=1)
        if rank < size - 1:
            mpi.send(u[n:n + 1], dest=rank + 1, tag=2)
        if rank > 0:
            mpi.recv(u[0:1], source=rank - 1, tag=2)
        un = u.copy()
        for i in range(1, n + 1):
            u[i] = un[i] + alpha * (un[i - 1] - 2.0 * un[i] + un[i + 1])
    part = np.zeros(1)
    total = np.zeros(1)
    part[0] = np.sum(w * u[1:n + 1] ** 3)
    mpi.allreduce(part, total)
    return total[0]


def heat_open_whole(u0, alpha, w, steps):
    n = u0.shape[0]
    u = np.zeros(n + 2)
    u[1:n + 1] = u0
    for t in range(steps):
        un = u.copy()
        for i in range(1, n + 1):
            u[i] = un[i] + alpha * (un[i - 1] - 2.0 * un[i] + un[i + 1])
    return np.sum(w * u[1:n + 1] ** 3)


def heat_2d(u0, alpha, steps):
    """2-D heat on a torus split into bands of rows: rows exchanged with tagged sendrecv."""
    rank = mpi.rank()
    size = mpi.size()
    n, m = u0.shape
    u = np.zeros((n + 2, m))
    u[1:n + 1, :] = u0
    up = (rank - 1) % size
    down = (rank + 1) % size
    for t in range(steps):
        mpi.sendrecv(u[n, :], down, u[0, :], up, 7, 7)
        mpi.sendrecv(u[1, :], up, u[n + 1, :], down, 8, 8)
        un = u.copy()
        for i in range(1, n + 1):
            for j in range(m):
                u[i, j] = un[i, j] + alpha * (un[i - 1, j] + un[i + 1, j] + un[i, (j - 1) % m]
                                              + un[i, (j + 1) % m] - 4.0 * un[i, j])
    s = np.sum(np.sin(u[1:n + 1, :]))
    total = np.zeros(1)
    mpi.allreduce(s, total)
    return total[0]


def heat_2d_whole(u0, alpha, steps):
    n, m = u0.shape
    u = u0.copy()
    for t in range(steps):
        un = u.copy()
        for i in range(n):
            for j in range(m):
                u[i, j] = un[i, j] + alpha * (un[(i - 1) % n, j] + un[(i + 1) % n, j]
                                              + un[i, (j - 1) % m] + un[i, (j + 1) % m]
                                              - 4.0 * un[i, j])
    return np.sum(np.sin(u))


def logistic_nll(theta, X, y, n_total, lam):
    """A data-parallel loss: each rank's rows, the sum by allreduce, theta on every rank."""
    s = 0.0
    for i in range(X.shape[0]):
        z = np.dot(X[i], theta)
        s += np.log1p(np.exp(-y[i] * z))
    total = np.zeros(1)
    mpi.allreduce(s, total)
    return total[0] / n_total + 0.5 * lam * np.dot(theta, theta)


def logistic_nll_whole(theta, X, y, n_total, lam):
    s = 0.0
    for i in range(X.shape[0]):
        z = np.dot(X[i], theta)
        s += np.log1p(np.exp(-y[i] * z))
    return s / n_total + 0.5 * lam * np.dot(theta, theta)


def broadcast_params(p, x):
    """Rank 0 holds the parameters and broadcasts them."""
    mpi.bcast(p, 0)
    s = 0.0
    for i in range(x.shape[0]):
        s += p[0] * np.sin(p[1] * x[i])
    total = np.zeros(1)
    mpi.allreduce(s, total)
    return total[0]


def broadcast_params_whole(p, x):
    s = 0.0
    for i in range(x.shape[0]):
        s += p[0] * np.sin(p[1] * x[i])
    return s


def constant_message(x):
    """Rank 0 sends numbers that depend on no argument; rank 1 uses them."""
    rank = mpi.rank()
    buf = np.zeros(2)
    if rank == 0:
        mpi.send(np.ones(2) * 3.0, dest=1, tag=5)
        local = np.sum(x * x)
    else:
        mpi.recv(buf, source=0, tag=5)
        local = np.sum(buf * x)
    total = np.zeros(1)
    mpi.allreduce(local, total)
    return total[0]


def ring_shift(x):
    """Not reduced: each rank returns its own number, and the loss is their sum."""
    rank = mpi.rank()
    size = mpi.size()
    y = np.zeros_like(x)
    mpi.sendrecv(x, (rank + 1) % size, y, (rank - 1) % size)
    return np.sum(np.sin(y) * y)


@numba.njit
def exchange(u, n, left, right):
    assert mpi.sendrecv(u[n:n + 1], right, u[0:1], left) == mpi.SUCCESS
    status = mpi.sendrecv(u[1:2], left, u[n + 1:n + 2], right)
    return status


@numba.njit
def heat_njit(u0, alpha, steps):
    """An @njit program whose halo exchange is an @njit helper checking MPI's status, and
    whose allreduce names its operator and reduces a number."""
    rank, size = mpi.rank(), mpi.size()
    n = u0.shape[0]
    u = np.zeros(n + 2)
    u[1:n + 1] = u0
    left = (rank - 1) % size
    right = (rank + 1) % size
    for t in range(steps):
        exchange(u, n, left, right)
        un = u.copy()
        for i in range(1, n + 1):
            u[i] = un[i] + alpha * (un[i - 1] - 2.0 * un[i] + un[i + 1])
    total = np.zeros(1)
    mpi.allreduce(np.sum(u[1:n + 1] ** 2), total, mpi.Operator.SUM)
    return total[0]


def out_of_order(x):
    """Receives that take rank 0's messages in the other order, by tag."""
    rank = mpi.rank()
    a = np.zeros(1)
    b = np.zeros(1)
    if rank == 0:
        a[0] = 2.0 * x[0]
        b[0] = 3.0 * x[1]
        mpi.send(a, dest=1, tag=1)
        mpi.send(b, dest=1, tag=2)
    else:
        mpi.recv(b, source=0, tag=2)
        mpi.recv(a, source=0, tag=1)
    return a[0] * b[0]


def any_source(x):
    buf = np.zeros(1)
    mpi.recv(buf)
    return buf[0] * x[0]


def maximum(x):
    out = np.zeros(1)
    mpi.allreduce(x, out, mpi.Operator.MAX)
    return out[0]


def nonblocking(x):
    mpi.isend(x, 1, 0)
    return x[0]


def mixed_tags(x):
    a = np.zeros(1)
    b = np.zeros(1)
    mpi.recv(a, source=0, tag=3)
    mpi.recv(b, source=0)
    return a[0] + b[0] * x[0]


# ---- the checks -------------------------------------------------------------------------------
RANK, SIZE = mpi.rank(), mpi.size()


def piece(a):
    n = a.shape[0]
    return a[RANK * n // SIZE:(RANK + 1) * n // SIZE].copy()


def gathered(a):
    """The pieces of all ranks, concatenated (every rank gets them)."""
    n_all = np.zeros(1)
    mpi.allreduce(float(a.shape[0]), n_all)
    counts = np.zeros(SIZE)
    counts[RANK] = a.shape[0]
    every = np.zeros(SIZE)
    mpi.allreduce(counts, every)
    start = int(np.sum(every[:RANK]))
    flat = np.zeros((int(n_all[0]),) + a.shape[1:])
    flat[start:start + a.shape[0]] = a
    out = np.zeros_like(flat)
    mpi.allreduce(flat, out)
    return out


def summed(v):
    v = np.atleast_1d(np.asarray(v, np.float64))
    out = np.zeros_like(v)
    mpi.allreduce(v, out)
    return out


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-300))


def central(f, x, k, h=1e-6):
    """d f / d x.flat[k] (tests/fd.py's stencil: one entry, not the whole gradient)."""
    e = np.zeros_like(x)
    e.flat[k] = 1.0
    return stencil(lambda d: f(x + d * e), h)


def main(path):
    rng = np.random.default_rng(0)
    out = {"size": SIZE}

    # periodic heat: sendrecv halos, allreduce loss; d/du0 (split) and d/dalpha (a copy)
    u0, target = rng.normal(size=64), rng.normal(size=64)
    args = (piece(u0), 0.2, piece(target), 40)
    g = adjit.value_and_grad(heat_periodic, argnums=(0, 1))
    value, (du, dalpha) = g(*args)
    whole = adjit.value_and_grad(heat_periodic_whole, argnums=(0, 1))
    wvalue, (wdu, wdalpha) = whole(u0, 0.2, target, 40)
    fwd = numba.njit(heat_periodic_whole)
    fd = [central(lambda v: fwd(v, 0.2, target, 40), u0, k) for k in (0, 31, 32, 63)]
    out["periodic"] = {
        "value_vs_numba": rel(value, numba.njit(heat_periodic)(*args)),
        "value_vs_whole": rel(value, wvalue),
        "du_vs_whole": rel(gathered(du), wdu),
        "dalpha_vs_whole": rel(summed(dalpha), wdalpha),
        "whole_vs_fd": rel(wdu[[0, 31, 32, 63]], fd),
        "dalpha_whole_vs_fd": rel(wdalpha, central(
            lambda a: fwd(u0, a[0], target, 40), np.array([0.2]), 0)),
        "same_value_on_ranks": rel(summed(value)[0] / SIZE, value),
    }
    # the same with checkpointing
    gc = adjit.value_and_grad(heat_periodic, argnums=(0, 1), checkpoint=4)
    cvalue, (cdu, cdalpha) = gc(*args)
    out["checkpointed"] = {"du_vs_taped": rel(cdu, du), "dalpha_vs_taped": rel(cdalpha, dalpha),
                           "recompute_factor": gc.last_tape.recompute_factor}

    # open ends: send and recv in rank branches
    u0, w = rng.normal(size=40), rng.normal(size=40)
    g = adjit.value_and_grad(heat_open, argnums=(0, 1))
    value, (du, dalpha) = g(piece(u0), 0.2, piece(w), 30)
    wvalue, (wdu, wdalpha) = adjit.value_and_grad(heat_open_whole, argnums=(0, 1))(
        u0, 0.2, w, 30)
    fwd = numba.njit(heat_open_whole)
    out["open"] = {
        "value_vs_whole": rel(value, wvalue),
        "du_vs_whole": rel(gathered(du), wdu),
        "dalpha_vs_whole": rel(summed(dalpha), wdalpha),
        "whole_vs_fd": rel(wdu[[0, 19, 20, 39]],
                           [central(lambda v: fwd(v, 0.2, w, 30), u0, k) for k in (0, 19, 20, 39)]),
        # arrays taken back from the tape at an operation (named `<array>_then`): a message's
        # adjoint reads only the shape of what it sent or received, so none is recorded
        "recorded_at_messages": g.source.count("_then"),
    }
    # forward mode through the same messages: J v on every rank, against the reverse sweep
    v = rng.normal(size=40)
    jout, jtan = adjit.jvp(heat_open)(piece(u0), 0.2, piece(w), 30, piece(v))
    out["open"]["jvp_vs_vjp"] = rel(jtan, float(np.dot(wdu, v)))
    out["open"]["jvp_value"] = rel(jout, wvalue)

    # 2-D bands of rows, tagged sendrecv
    U = rng.normal(size=(12, 5))
    value, (dU, dalpha) = adjit.value_and_grad(heat_2d, argnums=(0, 1))(piece(U), 0.1, 10)
    wvalue, (wdU, wdalpha) = adjit.value_and_grad(heat_2d_whole, argnums=(0, 1))(U, 0.1, 10)
    fwd = numba.njit(heat_2d_whole)
    out["heat_2d"] = {
        "value_vs_whole": rel(value, wvalue),
        "du_vs_whole": rel(gathered(dU), wdU),
        "dalpha_vs_whole": rel(summed(dalpha), wdalpha),
        "whole_vs_fd": rel(wdU.flat[[0, 29, 30, 59]],
                           [central(lambda a: fwd(a, 0.1, 10), U, k) for k in (0, 29, 30, 59)]),
    }

    # a data-parallel loss with a scalar allreduce and a regularizer every rank computes
    X, y = rng.normal(size=(30, 3)), np.sign(rng.normal(size=30))
    theta = rng.normal(size=3)
    value, dtheta = adjit.value_and_grad(logistic_nll)(theta, piece(X), piece(y), 30.0, 0.1)
    wvalue, wdtheta = adjit.value_and_grad(logistic_nll_whole)(theta, X, y, 30.0, 0.1)
    fwd = numba.njit(logistic_nll_whole)
    out["logistic"] = {
        "value_vs_whole": rel(value, wvalue),
        "dtheta_summed_vs_whole": rel(summed(dtheta), wdtheta),
        "whole_vs_fd": rel(wdtheta, [central(lambda t: fwd(t, X, y, 30.0, 0.1), theta, k)
                                     for k in range(3)]),
    }

    # bcast from rank 0: the gradient gathers on rank 0
    p = np.array([1.3, 0.7]) if RANK == 0 else np.zeros(2)
    x = rng.normal(size=20)
    value, dp = adjit.value_and_grad(broadcast_params)(p.copy(), piece(x))
    wvalue, wdp = adjit.value_and_grad(broadcast_params_whole)(np.array([1.3, 0.7]), x)
    elsewhere = 0.0 if RANK == 0 else float(np.max(np.abs(dp)))
    out["bcast"] = {"value_vs_whole": rel(value, wvalue),
                    "dp_on_root_vs_whole": rel(summed(dp if RANK == 0 else 0.0 * dp), wdp),
                    "dp_elsewhere": float(summed(elsewhere)[0])}

    # @njit code as written: a helper, asserted statuses, a named operator
    u0 = piece(np.linspace(0.0, 1.0, 20))
    value, (du, dalpha) = adjit.value_and_grad(heat_njit, argnums=(0, 1))(u0, 0.2, 5)
    h = 1e-6
    fd = (heat_njit(u0, 0.2 + h, 5) - heat_njit(u0, 0.2 - h, 5)) / (2 * h)  # all ranks
    out["njit_forms"] = {"value_vs_numba": rel(value, heat_njit(u0, 0.2, 5)),
                         "dalpha_vs_fd": rel(summed(dalpha), fd)}

    # a message of constants, and a loss each rank returns without reducing it
    x = np.array([0.5, -1.5]) + RANK
    dx = adjit.grad(constant_message)(x.copy())
    out["constant_message"] = rel(dx, 2.0 * x if RANK == 0 else np.full(2, 3.0))
    dx = adjit.grad(ring_shift)(x.copy())
    out["ring_shift"] = rel(dx, np.sin(x) + x * np.cos(x))   # d/dx of the next rank's term
    out["constant_message"] = float(np.max(summed(out["constant_message"])))
    out["ring_shift"] = float(np.max(summed(out["ring_shift"])))

    # refusals, at transformation time (no message is sent)
    refusals = {}
    for fn in (any_source, maximum, nonblocking, mixed_tags):
        try:
            adjit.grad(fn)(np.ones(2))
            refusals[fn.__name__] = None
        except AdjitError as exc:
            refusals[fn.__name__] = str(exc)
    out["refusals"] = refusals

    # last (it leaves an adjoint message unreceived): receives out of the order of sends
    mpi.barrier()
    try:
        adjit.grad(out_of_order)(np.array([1.0, 2.0]))
        out["out_of_order"] = None if RANK == 0 else "rank 1 answers"
    except AdjitError as exc:
        out["out_of_order"] = str(exc)
    if RANK == 0:
        with open(path, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
