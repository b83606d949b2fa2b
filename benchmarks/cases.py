"""Benchmark cases: loop code written the way numba users write it, and vectorized numpy.

Each case gives the function, its inputs, and the argnums to differentiate. The same
functions are compiled with numba.njit for the forward time, and with adjit for the gradient.
The inputs of a case are a tuple, or a function of no arguments that makes the tuple (for
inputs that take a moment to make: `inputs(case_args)` gives the tuple; the makers are
cached, so the cases that share them share the very same arrays).

The time-stepping cases are the heat equation at 1024 cells x 10^4 steps (with
and without checkpointing), the Lennard-Jones energy of the 38 atoms of examples/lj_md.py
(its forces are the gradient), and the leapfrog loss of examples/pendulum_fit.py at 10^5
and 10^6 steps. The linear-algebra case is the Gaussian-process marginal likelihood of
examples/gaussian_process.py (cholesky and solve); the sorting case a 1-D transport loss of
np.sort and np.cumsum. The Gaussian mixture rows are ADBench's GMM objective at two of its
sizes (d = 10, K = 5 and d = 64, K = 10, 1000 points), written with loops and @njit helpers
in benchmarks/gmm_bench.py, which times its whole grid.
"""
import functools
import math

import numba
import numpy as np
from gmm_bench import gmm_objective, make_inputs as _gmm_make_inputs

from adjit import stop_gradient
from adjit.runtime.jitcache import key_by_level


def sum_of_sin(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += math.sin(x[i]) * x[i]
    return s


def horner(c, t):
    p = 0.0
    for k in range(c.shape[0]):
        p = p * t + c[k]
    return p


def lennard_jones(x):
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


def lennard_jones_prange(x):
    """The same energy with the outer loop over numba.prange (forward: njit(parallel=True))."""
    n = x.shape[0]
    e = 0.0
    for i in numba.prange(n):
        for j in range(i + 1, n):
            dx = x[i, 0] - x[j, 0]
            dy = x[i, 1] - x[j, 1]
            dz = x[i, 2] - x[j, 2]
            r2 = dx * dx + dy * dy + dz * dz
            inv6 = 1.0 / (r2 * r2 * r2)
            e += 4.0 * (inv6 * inv6 - inv6)
    return e


lennard_jones_prange.parallel = True


@numba.njit
def pair_energy(r2):
    inv6 = 1.0 / (r2 * r2 * r2)
    return 4.0 * (inv6 * inv6 - inv6)


def lennard_jones_helper(x):
    """The same energy with the pair term in an @njit helper, which adjit inlines."""
    n = x.shape[0]
    e = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            dx = x[i, 0] - x[j, 0]
            dy = x[i, 1] - x[j, 1]
            dz = x[i, 2] - x[j, 2]
            e += pair_energy(dx * dx + dy * dy + dz * dz)
    return e


def heat(u0, alpha, steps):
    n = u0.shape[0]
    u = u0.copy()
    un = np.zeros(n)
    for t in range(steps):
        for i in range(1, n - 1):
            un[i] = u[i] + alpha * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        for i in range(1, n - 1):
            u[i] = un[i]
    s = 0.0
    for i in range(n):
        s += u[i] * u[i]
    return s


# Vectorized numpy: the same kind of programs written with whole-array operations. The JAX
# versions (benchmarks/jax_cases.py) mirror these line by line.

def softmax_cross_entropy(z, y):
    """Cross-entropy of the softmax of logits z against target probabilities y, with the
    max shift stopped: the gradient is softmax(z) * sum(y) - y."""
    m = stop_gradient(np.max(z))
    lse = m + np.log(np.sum(np.exp(z - m)))
    return -np.sum(y * (z - lse))


def mlp_loss(W1, b1, W2, b2, X, Y):
    """Mean softmax cross-entropy of a 2-layer tanh MLP over a batch (rows of X, one-hot Y).

    The shift is the batch's largest logit, not each row's: numba has no np.max(z, axis=1)
    for the forward time, and adjit does not yet take stop_gradient of an array."""
    h = np.tanh(X @ W1 + b1)
    z = h @ W2 + b2
    m = stop_gradient(np.max(z))
    lse = m + np.log(np.sum(np.exp(z - m), axis=1))
    return np.mean(lse - np.sum(Y * z, axis=1))


def lennard_jones_vec(x):
    """The Lennard-Jones energy over all ordered pairs (half of it), pair distances by
    broadcasting; the identity added to r2 masks the diagonal: r2 = 1 there, which adds
    4 * (1 - 1) = 0."""
    n = x.shape[0]
    x0 = x[:, 0]
    x1 = x[:, 1]
    x2 = x[:, 2]
    dx = x0[:, None] - x0[None, :]
    dy = x1[:, None] - x1[None, :]
    dz = x2[:, None] - x2[None, :]
    r2 = dx * dx + dy * dy + dz * dz + np.eye(n)
    inv6 = 1.0 / (r2 * r2 * r2)
    return 2.0 * np.sum(inv6 * inv6 - inv6)


def lennard_jones_vec_where(x):
    """The same energy with the diagonal masked by np.where and r2 reassigned, as people
    often write it; this row differs from the one above only in that."""
    x0 = x[:, 0]
    x1 = x[:, 1]
    x2 = x[:, 2]
    dx = x0[:, None] - x0[None, :]
    dy = x1[:, None] - x1[None, :]
    dz = x2[:, None] - x2[None, :]
    r2 = dx * dx + dy * dy + dz * dz
    r2 = np.where(r2 > 0.0, r2, 1.0)
    inv6 = 1.0 / (r2 * r2 * r2)
    return 2.0 * np.sum(inv6 * inv6 - inv6)


def mlp_inputs(seed=0, batch=256, d_in=64, hidden=128, classes=10):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(batch, d_in))
    W1 = rng.normal(size=(d_in, hidden)) / np.sqrt(d_in)
    b1 = rng.normal(size=hidden) * 0.1
    W2 = rng.normal(size=(hidden, classes)) / np.sqrt(hidden)
    b2 = rng.normal(size=classes) * 0.1
    Y = np.eye(classes)[rng.integers(0, classes, batch)]
    return W1, b1, W2, b2, X, Y


def lattice(n, spacing, seed):
    """n atoms on a jittered cubic lattice: no two closer than about 0.8 * spacing."""
    rng = np.random.default_rng(seed)
    side = int(math.ceil(n ** (1.0 / 3.0)))
    pts = np.array([(i, j, k) for i in range(side) for j in range(side) for k in range(side)],
                   dtype=np.float64)[:n]
    return pts * spacing + rng.uniform(-0.1, 0.1, pts.shape) * spacing


def lj_cluster(n_atoms=38, seed=0):
    """The atoms of examples/lj_md.py, made as its main() makes them: the n_atoms sites of an
    fcc lattice (nearest neighbours at 2^(1/6)) closest to the centre, centred, plus normal
    noise of 0.01 from default_rng(seed). (A copy of its fcc_cluster; run.py checks that
    the example still makes the same atoms.)"""
    a = 2.0 ** (1.0 / 6.0) * np.sqrt(2.0)
    m = int(np.ceil(n_atoms ** (1.0 / 3.0))) + 2
    cells = np.array([(i, j, k) for i in range(-m, m + 1) for j in range(-m, m + 1)
                      for k in range(-m, m + 1)], dtype=np.float64)
    basis = np.array([[0, 0, 0], [0.5, 0.5, 0], [0.5, 0, 0.5], [0, 0.5, 0.5]])
    sites = (cells[:, None, :] + basis[None, :, :]).reshape(-1, 3) * a
    order = np.lexsort((sites[:, 2], sites[:, 1], sites[:, 0],
                        np.round(np.sum(sites ** 2, 1), 9)))
    x = sites[order[:n_atoms]]
    x = x - x.mean(axis=0)
    rng = np.random.default_rng(seed)
    return x + 0.01 * rng.normal(size=x.shape)


def pendulum_loss(w2, c, theta0, omega0, dt, steps, obs_steps, obs):
    """The loss of examples/pendulum_fit.py (a copy): the damped pendulum
    theta'' = -w2 sin(theta) - c theta' integrated by leapfrog for `steps` steps, and the sum
    of squared differences to the observed angles obs[k] at the steps obs_steps[k]."""
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


@numba.njit(cache=True)
def pendulum_angles(w2, c, theta0, omega0, dt, steps, obs_steps):
    """The simulated angles at obs_steps (examples/pendulum_fit.angles), for the data."""
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


@functools.cache
def pendulum_inputs(steps, t_end=10.0, n_obs=15, noise=0.01, seed=0):
    """The arguments of pendulum_loss as examples/pendulum_fit.py passes them at its start
    (w2, c) = (7, 1): 15 noisy readings of the pendulum with w2 = 9.81, c = 0.3, theta(0) =
    1.2 at irregular times in [0.2, t_end], the last at the end."""
    rng = np.random.default_rng(seed)
    dt = t_end / steps
    times = np.sort(rng.uniform(0.2, t_end, n_obs))
    obs_steps = np.round(times / dt).astype(np.int64)
    obs_steps[-1] = steps
    clean = pendulum_angles(9.81, 0.3, 1.2, 0.0, dt, steps, obs_steps)
    obs = clean + noise * rng.normal(size=n_obs)
    return (7.0, 1.0, 1.2, 0.0, dt, steps, obs_steps, obs)


def gp_nlml(log_ell, log_sf, log_sn, X, y):
    """The negative log marginal likelihood of examples/gaussian_process.py (a copy): kernel
    matrix by loops, np.linalg.cholesky, two np.linalg.solve."""
    n, d = X.shape
    ell2 = math.exp(2.0 * log_ell)
    sf2 = math.exp(2.0 * log_sf)
    sn2 = math.exp(2.0 * log_sn)
    K = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            d2 = 0.0
            for k in range(d):
                diff = X[i, k] - X[j, k]
                d2 += diff * diff
            K[i, j] = sf2 * math.exp(-0.5 * d2 / ell2)
        K[i, i] += sn2
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    return 0.5 * np.dot(y, alpha) + np.sum(np.log(np.diag(L))) + 0.5 * n * math.log(2.0 * math.pi)


def gp_inputs(n=200, seed=0):
    """(log ell, log sf, log sn, X, y): n random points of [0, 5]^2, a smooth target."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, 2)) * 5.0
    y = np.sin(X[:, 0]) * np.cos(X[:, 1]) + 0.1 * rng.normal(size=n)
    return 0.0, 0.0, math.log(0.5), X, y


def sorted_transport(x, target):
    """A 1-D optimal-transport loss between two samples: the squared distance of their sorted
    values (the quantile functions) plus that of their running sums (the CDFs' areas)."""
    d = np.sort(x) - np.sort(target)
    c = np.cumsum(d) / x.shape[0]
    return np.sum(d * d) + np.sum(c * c)


@functools.cache
def gmm_inputs(d, K, n=1000):
    """ADBench's GMM inputs (benchmarks/gmm_bench.py): alphas, means, icf, x, gamma, m."""
    return _gmm_make_inputs(d, K, n)


@functools.cache
def heat_inputs(n, steps, seed=1):
    """(u0, alpha, steps) for heat: n random cells, alpha = 0.25 (stable: alpha <= 1/2)."""
    return (np.random.default_rng(seed).random(n), 0.25, steps)


def inputs(case_args):
    """The argument tuple of a case (its args, or what its maker returns)."""
    return case_args() if callable(case_args) else case_args


FAST = {"contract", "arcp", "nsz"}
"""The fast-math flags that keep NaN and inf semantics (no nnan, ninf or afn)."""


def cases():
    """(name, function, args, argnums, grad options) for every benchmark; args is the tuple of
    inputs or a function making it (inputs(args) gives the tuple)."""
    rng = np.random.default_rng(0)
    sines = rng.random(100_000)
    return [
        ("sum-of-sin (1e5)", sum_of_sin, (sines,), 0, {}),
        ("sum-of-sin (1e5), vector_math=False", sum_of_sin, (sines,), 0,
         {"vector_math": False}),
        ("horner (1e5 coeffs)", horner, (rng.random(100_000) / 100_000, 0.999), (0, 1), {}),
        ("lennard-jones (200 atoms)", lennard_jones, (lattice(200, 1.2, 1),), 0, {}),
        ("lennard-jones, fastmath=FAST", lennard_jones, (lattice(200, 1.2, 1),), 0,
         {"fastmath": FAST}),
        ("lennard-jones, prange (200)", lennard_jones_prange, (lattice(200, 1.2, 1),), 0, {}),
        ("lennard-jones (1000 atoms)", lennard_jones, (lattice(1000, 1.2, 1),), 0, {}),
        ("lennard-jones, prange (1000)", lennard_jones_prange, (lattice(1000, 1.2, 1),), 0,
         {}),
        ("lennard-jones, njit helper (200)", lennard_jones_helper, (lattice(200, 1.2, 1),), 0,
         {}),
        ("heat d/du0 (256 x 2000)", heat, (rng.random(256), 0.25, 2000), 0, {}),
        ("heat d/(u0, alpha) (256 x 2000)", heat, (rng.random(256), 0.25, 2000), (0, 1), {}),
        ("softmax-CE, vectorized (1e5)", softmax_cross_entropy,
         (rng.normal(size=100_000) * 3.0, rng.dirichlet(np.ones(100_000))), 0, {}),
        ("MLP 64-128-10, vectorized (256)", mlp_loss, mlp_inputs(), (0, 1, 2, 3), {}),
        ("MLP 64-128-10, vector_math=False", mlp_loss, mlp_inputs(), (0, 1, 2, 3),
         {"vector_math": False}),
        ("logistic regression, vectorized (2000 x 50)", logistic_loss, logistic_inputs(), 0,
         {}),
        ("lennard-jones, vectorized (200)", lennard_jones_vec, (lattice(200, 1.2, 1),), 0, {}),
        ("lennard-jones, vec. np.where (200)", lennard_jones_vec_where, (lattice(200, 1.2, 1),),
         0, {}),
        ("GP marginal likelihood, cholesky (200)", gp_nlml, lambda: gp_inputs(200),
         (0, 1, 2), {}),
        ("sort + cumsum transport loss (1e5)", sorted_transport,
         (rng.normal(size=100_000), rng.normal(size=100_000) * 2.0 + 1.0), 0, {}),
        ("GMM d=10 K=5 (ADBench, 1000 points)", gmm_objective, lambda: gmm_inputs(10, 5),
         (0, 1, 2), {}),
        ("GMM d=64 K=10 (ADBench, 1000 points)", gmm_objective, lambda: gmm_inputs(64, 10),
         (0, 1, 2), {}),
        # time stepping at full size. Inputs made on first use (inputs()).
        ("heat d/(u0, alpha) (1024 x 1e4)", heat, lambda: heat_inputs(1024, 10_000), (0, 1),
         {}),
        ("heat d/(u0, alpha) (1024 x 1e4), ckpt=64", heat, lambda: heat_inputs(1024, 10_000),
         (0, 1), {"checkpoint": 64}),
        ("heat d/(u0, alpha) (1024 x 1e4), ckpt=auto", heat,
         lambda: heat_inputs(1024, 10_000), (0, 1), {"checkpoint": "auto"}),
        ("LJ MD forces (38 atoms of lj_md.py)", lennard_jones, lambda: (lj_cluster(),), 0, {}),
        ("pendulum leapfrog (1e5 steps)", pendulum_loss, lambda: pendulum_inputs(100_000),
         (0, 1), {}),
        ("pendulum leapfrog (1e5), ckpt=auto", pendulum_loss, lambda: pendulum_inputs(100_000),
         (0, 1), {"checkpoint": "auto"}),
        ("pendulum leapfrog (1e6), ckpt=auto", pendulum_loss,
         lambda: pendulum_inputs(1_000_000), (0, 1), {"checkpoint": "auto"}),
    ]


# (a later case, below the others: generated sources quote the lines of the ones before)

def logistic_loss(w, X, y):
    """L2-regularized logistic regression: labels y in {-1, 1}, one matrix-vector product
    forward (X @ w) and one backward (X.T @ ...)."""
    return np.sum(np.log1p(np.exp(-y * (X @ w)))) + 0.5 * np.sum(w * w)


def logistic_inputs(n=2000, d=50, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sign(rng.normal(size=n))
    return rng.normal(size=d) * 0.1, X, y


# numba keys its disk cache by signature, CPU and bytecode, not by NUMBA_OPT: the test suite
# imports this module at NUMBA_OPT=0, and `make bench` loaded those unoptimized functions
# (the hand-written adjoints ran 3-10x slower after a test run in the same checkout)
key_by_level(globals())
