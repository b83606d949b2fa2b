"""Hand-written numba adjoints of the benchmark cases: the floor adjit's gradients are
measured against.

Each is what a careful person writes by hand in @njit: the forward once, storing only what
the reverse pass cannot get otherwise (the states of a time loop whose coefficient is
differentiated), the derivative in closed form where there is one, the reverse pass
vectorizable where the math allows. They return what adjit.grad returns for the case's
argnums (an array, or a tuple). `HAND` maps (case function, argnums) to the hand adjoint;
`check(fn, args, argnums)` compares one with central finite differences of the numba
forward (run.py does so on small inputs in the same run, tests/test_hand_adjoints.py too).
"""
import math

import numba
import numpy as np

from cases import (heat, horner, lennard_jones, lennard_jones_helper, lennard_jones_vec,
                   lennard_jones_vec_where, logistic_loss, mlp_loss, pendulum_loss,
                   softmax_cross_entropy, sum_of_sin)
from gmm_bench import gmm_hand_grad, gmm_objective

from adjit.runtime.jitcache import key_by_level


@numba.njit(cache=True)
def sum_of_sin_hand(x):
    g = np.empty_like(x)
    for i in range(x.shape[0]):
        g[i] = math.cos(x[i]) * x[i] + math.sin(x[i])
    return g


@numba.njit(cache=True)
def horner_hand(c, t):
    """p_k = p_{k-1} t + c_k: the reverse pass needs the partial sums p_{k-1} (stored)."""
    n = c.shape[0]
    p = np.empty(n)
    acc = 0.0
    for k in range(n):
        p[k] = acc              # p_{k-1}
        acc = acc * t + c[k]
    gc = np.empty(n)
    gt = 0.0
    pb = 1.0
    for k in range(n - 1, -1, -1):
        gc[k] = pb
        gt += pb * p[k]
        pb *= t
    return gc, gt


@numba.njit(cache=True)
def lennard_jones_hand(x):
    """Forces of the pair energy 4 (r^-12 - r^-6), each pair once, the i sums in locals."""
    n = x.shape[0]
    g = np.zeros_like(x)
    for i in range(n):
        gx = 0.0
        gy = 0.0
        gz = 0.0
        for j in range(i + 1, n):
            dx = x[i, 0] - x[j, 0]
            dy = x[i, 1] - x[j, 1]
            dz = x[i, 2] - x[j, 2]
            inv2 = 1.0 / (dx * dx + dy * dy + dz * dz)
            inv6 = inv2 * inv2 * inv2
            f = -24.0 * (2.0 * inv6 - 1.0) * inv6 * inv2     # 2 de/d(r^2)
            gx += f * dx
            gy += f * dy
            gz += f * dz
            g[j, 0] -= f * dx
            g[j, 1] -= f * dy
            g[j, 2] -= f * dz
        g[i, 0] += gx
        g[i, 1] += gy
        g[i, 2] += gz
    return g


@numba.njit(cache=True, inline="always")
def _heat_step_adjoint(g, gn, alpha):
    """gn = (d step / d u)^T g for one explicit step (ends held fixed), as one gather per
    cell: vectorizable, no read-modify-write."""
    n = g.shape[0]
    a = alpha
    b = 1.0 - 2.0 * alpha
    gn[0] = g[0] + a * g[1]
    gn[n - 1] = g[n - 1] + a * g[n - 2]
    gn[1] = b * g[1] + a * g[2]
    gn[n - 2] = b * g[n - 2] + a * g[n - 3]
    for i in range(2, n - 2):
        gn[i] = b * g[i] + a * (g[i - 1] + g[i + 1])


@numba.njit(cache=True)
def heat_u0_hand(u0, alpha, steps):
    """d/du0 only: the step is linear in u, so the reverse pass needs no stored state."""
    n = u0.shape[0]
    u = u0.copy()
    un = np.zeros(n)
    for t in range(steps):
        for i in range(1, n - 1):
            un[i] = u[i] + alpha * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        for i in range(1, n - 1):
            u[i] = un[i]
    g = 2.0 * u
    gn = np.empty(n)
    for t in range(0, steps - 1, 2):
        _heat_step_adjoint(g, gn, alpha)
        _heat_step_adjoint(gn, g, alpha)
    if steps % 2 == 1:
        _heat_step_adjoint(g, gn, alpha)
        return gn
    return g


@numba.njit(cache=True)
def heat_u0_alpha_hand(u0, alpha, steps):
    """d/(u0, alpha): alpha's adjoint needs every step's state (stored, n per step)."""
    n = u0.shape[0]
    states = np.empty((steps, n))
    u = u0.copy()
    un = np.zeros(n)
    for t in range(steps):
        states[t] = u
        for i in range(1, n - 1):
            un[i] = u[i] + alpha * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        for i in range(1, n - 1):
            u[i] = un[i]
    g = 2.0 * u
    gn = np.empty(n)
    ga = 0.0
    for t in range(steps - 1, -1, -1):
        s = states[t]
        for i in range(1, n - 1):
            ga += g[i] * (s[i - 1] - 2.0 * s[i] + s[i + 1])
        _heat_step_adjoint(g, gn, alpha)
        g, gn = gn, g
    return g, ga


@numba.njit(cache=True)
def softmax_cross_entropy_hand(z, y):
    """softmax(z) * sum(y) - y."""
    m = np.max(z)
    e = np.exp(z - m)
    return e * (np.sum(y) / np.sum(e)) - y


@numba.njit(cache=True)
def logistic_hand(w, X, y):
    """-X.T @ (y * sigmoid(-y * (X @ w))) + w: two matrix-vector products."""
    m = -y * (X @ w)
    return X.T @ (-y / (1.0 + np.exp(-m))) + w


@numba.njit(cache=True)
def mlp_hand(W1, b1, W2, b2, X, Y):
    """Back-propagation by hand: row softmax minus targets, two matrix products per layer."""
    B = X.shape[0]
    h = np.tanh(X @ W1 + b1)
    z = h @ W2 + b2
    e = np.exp(z - np.max(z))
    dz = np.empty_like(z)
    for b in range(B):
        s = 0.0
        for c in range(z.shape[1]):
            s += e[b, c]
        for c in range(z.shape[1]):
            dz[b, c] = (e[b, c] / s - Y[b, c]) / B
    dW2 = h.T @ dz
    db2 = np.sum(dz, axis=0)
    da = (dz @ W2.T) * (1.0 - h * h)
    dW1 = X.T @ da
    db1 = np.sum(da, axis=0)
    return dW1, db1, dW2, db2


@numba.njit(cache=True)
def pendulum_hand(w2, c, theta0, omega0, dt, steps, obs_steps, obs):
    """d/(w2, c) of the leapfrog loss: the forward stores theta and omega of every step
    (two numbers per step), the reverse pass runs the steps backwards."""
    n_obs = obs_steps.shape[0]
    th = np.empty(steps + 1)
    om = np.empty(steps + 1)
    th[0] = theta0
    om[0] = omega0 + 0.5 * dt * (-w2 * math.sin(theta0) - c * omega0)
    k = 0
    for t in range(steps):
        th[t + 1] = th[t] + dt * om[t]
        om[t + 1] = om[t] + dt * (-w2 * math.sin(th[t + 1]) - c * om[t])
        if k < n_obs and t + 1 == obs_steps[k]:
            k += 1
    tb = 0.0
    ob = 0.0
    gw = 0.0
    gc = 0.0
    for t in range(steps - 1, -1, -1):
        if k > 0 and t + 1 == obs_steps[k - 1]:
            k -= 1
            tb += 2.0 * (th[t + 1] - obs[k])
        # om[t+1] = om[t] + dt * (-w2 sin(th[t+1]) - c om[t])
        tb += ob * dt * (-w2 * math.cos(th[t + 1]))
        gw -= ob * dt * math.sin(th[t + 1])
        gc -= ob * dt * om[t]
        ob = ob * (1.0 - dt * c)
        # th[t+1] = th[t] + dt om[t]
        ob += tb * dt
    gw -= ob * 0.5 * dt * math.sin(theta0)
    gc -= ob * 0.5 * dt * omega0
    return gw, gc


HAND = {
    (sum_of_sin, 0): sum_of_sin_hand,
    (horner, (0, 1)): horner_hand,
    (lennard_jones, 0): lennard_jones_hand,
    (lennard_jones_helper, 0): lennard_jones_hand,
    (lennard_jones_vec, 0): lennard_jones_hand,
    (lennard_jones_vec_where, 0): lennard_jones_hand,
    (heat, 0): heat_u0_hand,
    (heat, (0, 1)): heat_u0_alpha_hand,
    (softmax_cross_entropy, 0): softmax_cross_entropy_hand,
    (mlp_loss, (0, 1, 2, 3)): mlp_hand,
    (logistic_loss, 0): logistic_hand,
    (pendulum_loss, (0, 1)): pendulum_hand,
    (gmm_objective, (0, 1, 2)): gmm_hand_grad,
}
"""(case function, argnums) -> its hand-written adjoint."""


def small_inputs(fn, argnums):
    """Inputs small enough for central differences of every component."""
    rng = np.random.default_rng(7)
    if fn is sum_of_sin:
        return (rng.random(9),)
    if fn is horner:
        return (rng.random(8), 0.9)
    if fn in (lennard_jones, lennard_jones_helper, lennard_jones_vec, lennard_jones_vec_where):
        from cases import lattice
        return (lattice(8, 1.2, 3),)
    if fn is heat:
        return (rng.random(9), 0.25, 7)
    if fn is softmax_cross_entropy:
        return (rng.normal(size=11), rng.dirichlet(np.ones(11)))
    if fn is logistic_loss:
        from cases import logistic_inputs
        return logistic_inputs(n=12, d=4, seed=3)
    if fn is mlp_loss:
        from cases import mlp_inputs
        return mlp_inputs(seed=3, batch=5, d_in=4, hidden=6, classes=3)
    if fn is pendulum_loss:
        from cases import pendulum_inputs
        return pendulum_inputs(400, t_end=2.0, n_obs=5)
    if fn is gmm_objective:
        from gmm_bench import make_inputs
        return make_inputs(3, 2, 6)
    raise KeyError(fn)


def fd(f, args, argnums, h=1e-6):
    """Central differences of f with respect to args[k], k in argnums (a tuple of arrays or
    floats, or one when argnums is an int)."""
    nums = (argnums,) if isinstance(argnums, int) else argnums
    out = []
    for k in nums:
        x = args[k]
        if np.ndim(x) == 0:
            hi, lo = list(args), list(args)
            hi[k], lo[k] = x + h, x - h
            out.append((f(*hi) - f(*lo)) / (2 * h))
            continue
        g = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            hi, lo = list(args), list(args)
            hi[k], lo[k] = x.copy(), x.copy()
            hi[k][idx] += h
            lo[k][idx] -= h
            g[idx] = (f(*hi) - f(*lo)) / (2 * h)
        out.append(g)
    return out[0] if isinstance(argnums, int) else tuple(out)


def max_rel_err(got, want):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    scale = max(float(np.max(np.abs(w))) for w in want) or 1.0
    return max(float(np.max(np.abs(np.asarray(a) - np.asarray(b))))
               for a, b in zip(got, want)) / scale


def check(fn, argnums):
    """Largest |hand - finite differences| relative to the largest component, on small
    inputs."""
    args = small_inputs(fn, argnums)
    forward = fn if isinstance(fn, numba.core.dispatcher.Dispatcher) else numba.njit(fn)
    return max_rel_err(HAND[(fn, argnums)](*args), fd(forward, args, argnums))


# numba keys its disk cache by signature, CPU and bytecode, not by NUMBA_OPT: the test suite
# imports this module at NUMBA_OPT=0, and `make bench` loaded those unoptimized functions
# (the hand-written adjoints ran 3-10x slower after a test run in the same checkout)
key_by_level(globals())
