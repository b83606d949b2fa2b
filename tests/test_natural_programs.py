"""Programs written the way a numba user writes them first, not reshaped for adjit.

Every program below compiles unchanged with numba.njit, which is the value's oracle; adjit's
gradient (value_and_grad over the float inputs) is checked against central finite
differences of the numba-compiled program, and its forward mode (jvp in one argument) by
the dot-product test. The shapes are the everyday ones: ODE integrators (explicit Euler,
RK4, leapfrog, velocity Verlet), RNN / LSTM / GRU cells, linear dynamics, a Kalman filter,
Lennard-Jones with periodic boundaries, an ADBench-style Gaussian mixture, a survival model,
advection with np.roll, 3-D total variation, logistic regression over numba.prange,
closures built by factories, @njit helpers returning tuples / with defaults / with several
returns, tuple iteration, asserts, docstrings, list literals, np.newaxis, transpose(0, 2, 1),
module-level constant arrays and double buffers.

A program adjit refuses (AdjitError) or crashes on is marked xfail(strict=True) with the
exception class and the first line of adjit's message, so the suite stays green and
honest: when adjit learns the construct, the strict xfail turns into a failure to remove.
PYTEST_DONT_REWRITE: the programs contain `assert`, which numba compiles only unrewritten.
"""
import math

import numba
import numpy as np
import pytest
from numba import njit, prange

import adjit

from fd import fd_grad


# ---------------------------------------------------------------------------------------
# ODE integrators
# ---------------------------------------------------------------------------------------

def euler_logistic(r, K, y0, dt, n):
    y = y0
    for _ in range(n):
        y = y + dt * r * y * (1.0 - y / K)
    return y


def euler_lotka_volterra(p, y0, dt, n):
    a, b, c, d = p[0], p[1], p[2], p[3]
    y = y0.copy()
    for t in range(n):
        prey, pred = y[0], y[1]
        dy = np.array([a * prey - b * prey * pred, -c * pred + d * prey * pred])
        y = y + dt * dy
    return y[0] + 2.0 * y[1]


def euler_heat_roll(u0, kappa, dt, n):
    y = u0
    for _ in range(n):
        k1 = kappa * (np.roll(y, 1) - 2.0 * y + np.roll(y, -1))
        y = y + dt * k1
    return np.sum(y ** 3)


def euler_trajectory_fit(k, y0, dt, obs):
    n = obs.shape[0]
    traj = np.empty(n)
    y = y0
    for t in range(n):
        traj[t] = y
        y = y - dt * k * y ** 3 + dt * math.sin(t * dt)
    return np.sum((traj - obs) ** 2)


@njit
def pendulum_rhs(y, p):
    return np.array([y[1], -p[0] * np.sin(y[0]) - p[1] * y[1]])


def rk4_pendulum(y0, p, dt, n):
    y = y0.copy()
    for _ in range(n):
        k1 = pendulum_rhs(y, p)
        k2 = pendulum_rhs(y + 0.5 * dt * k1, p)
        k3 = pendulum_rhs(y + 0.5 * dt * k2, p)
        k4 = pendulum_rhs(y + dt * k3, p)
        y = y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return y[0] ** 2 + y[1]


@njit
def decay_rhs(lam, y):
    dy = -lam * y
    dy[1:] += lam[:-1] * y[:-1]
    return dy


def rk4_decay_chain(lam, y0, T, n):
    dt = T / n
    y = y0
    for _ in range(n):
        k1 = decay_rhs(lam, y)
        k2 = decay_rhs(lam, y + 0.5 * dt * k1)
        k3 = decay_rhs(lam, y + 0.5 * dt * k2)
        k4 = decay_rhs(lam, y + dt * k3)
        y = y + dt * (k1 + 2.0 * k2 + 2.0 * k3 + k4) / 6.0
    return y[-1] + 0.5 * y[0]


def rk3_tableau_lists(y0, lam, dt, n):
    b = [1.0 / 6.0, 2.0 / 3.0, 1.0 / 6.0]
    y = y0
    for _ in range(n):
        k1 = -lam * y + math.sin(y)
        k2 = -lam * (y + 0.5 * dt * k1) + math.sin(y + 0.5 * dt * k1)
        y3 = y - dt * k1 + 2.0 * dt * k2
        k3 = -lam * y3 + math.sin(y3)
        y = y + dt * (b[0] * k1 + b[1] * k2 + b[2] * k3)
    return y


def leapfrog_pendulum(q0, p0, g, dt, n):
    q = q0
    p = p0
    p -= 0.5 * dt * g * math.sin(q)
    for _ in range(n - 1):
        q += dt * p
        p -= dt * g * math.sin(q)
    q += dt * p
    p -= 0.5 * dt * g * math.sin(q)
    return 0.5 * p * p - g * math.cos(q) + q


@njit
def chain_accel(x, k):
    n = x.shape[0]
    a = np.zeros(n)
    for i in range(n):
        left = x[i - 1] if i > 0 else 0.0
        right = x[i + 1] if i < n - 1 else 0.0
        a[i] = k * (left - 2.0 * x[i] + right) - x[i] ** 3
    return a


def leapfrog_chain(x0, v0, k, dt, n):
    x = x0.copy()
    v = v0.copy()
    a = chain_accel(x, k)
    for _ in range(n):
        v += 0.5 * dt * a
        x += dt * v
        a = chain_accel(x, k)
        v += 0.5 * dt * a
    return np.sum(x * x) + 0.5 * np.sum(v * v)


@njit
def verlet_step(x, v, dt):
    a = -x - 0.1 * x ** 3
    v_half = v + 0.5 * dt * a
    x_new = x + dt * v_half
    a_new = -x_new - 0.1 * x_new ** 3
    return x_new, v_half + 0.5 * dt * a_new


def anharmonic_verlet(x0, v0, dt, n):
    x, v = x0, v0
    for _ in range(n):
        x, v = verlet_step(x, v, dt)
    return np.sum(x ** 2 + v ** 2)


@njit
def spring_step(x, v, dt, k=1.0, damping=0.0):
    a = -k * x - damping * v
    v = v + dt * a
    x = x + dt * v
    return x, v


def damped_spring_scalar(x0, v0, stiff, dt, n):
    x, v = x0, v0
    for _ in range(n):
        x, v = spring_step(x, v, dt, k=stiff, damping=0.1)
    x2, v2 = spring_step(x, v, dt)
    return x2 * x2 + v2 * v2


# ---------------------------------------------------------------------------------------
# recurrent cells
# ---------------------------------------------------------------------------------------

def rnn_tanh(W, U, b, x, h0):
    h = h0
    for t in range(x.shape[0]):
        h = np.tanh(W @ h + U @ x[t] + b)
    return np.sum(h)


def rnn_regression(W, U, v, xs, ys):
    h = np.zeros(W.shape[0])
    loss = 0.0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + U @ xs[t])
        pred = np.dot(v, h)
        loss += (pred - ys[t]) ** 2
    return loss / xs.shape[0]


@njit
def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def lstm_last_hidden(Wx, Wh, b, xs):
    H = Wh.shape[1]
    h = np.zeros(H)
    c = np.zeros(H)
    for t in range(xs.shape[0]):
        z = Wx @ xs[t] + Wh @ h + b
        i = sigmoid(z[:H])
        f = sigmoid(z[H:2 * H])
        o = sigmoid(z[2 * H:3 * H])
        g = np.tanh(z[3 * H:])
        c = f * c + i * g
        h = o * np.tanh(c)
    return np.sum(h * h)


def gru_rows(Wz, Wr, Wh, xs):
    h = np.zeros(Wz.shape[0])
    for x in xs:
        hx = np.concatenate((h, x))
        z = sigmoid(Wz @ hx)
        r = sigmoid(Wr @ hx)
        hc = np.tanh(Wh @ np.concatenate((r * h, x)))
        h = (1.0 - z) * h + z * hc
    return np.sum(h)


# ---------------------------------------------------------------------------------------
# linear dynamics, control, filtering
# ---------------------------------------------------------------------------------------

def linear_rollout(A, x0, n):
    x = x0
    for _ in range(n):
        x = A @ x
    return x @ x


def lqr_cost(A, B, x0, u):
    x = x0.copy()
    cost = 0.0
    for t in range(u.shape[0]):
        cost += x @ x + 0.1 * u[t] @ u[t]
        x = A @ x + B @ u[t]
    return cost + 10.0 * (x @ x)


def matrix_power_trace(A, n):
    M = np.eye(A.shape[0])
    for _ in range(n):
        M = M @ A
    return np.trace(M)


def kalman_nll(A, Q, H, R, x0, P0, ys):
    x = x0.copy()
    P = P0.copy()
    nll = 0.0
    for t in range(ys.shape[0]):
        x = A @ x
        P = A @ P @ A.T + Q
        S = H @ P @ H.T + R
        r = ys[t] - H @ x
        nll += 0.5 * (r @ np.linalg.solve(S, r) + np.log(np.linalg.det(S)))
        K = np.linalg.solve(S, H @ P).T
        x = x + K @ r
        P = P - K @ H @ P
    return nll


# ---------------------------------------------------------------------------------------
# molecular dynamics, periodic boundaries
# ---------------------------------------------------------------------------------------

def lj_periodic(pos, L, eps, sigma):
    n = pos.shape[0]
    e = 0.0
    for i in range(n - 1):
        for j in range(i + 1, n):
            d = pos[i] - pos[j]
            d = d - L * np.round(d / L)
            r2 = np.sum(d * d)
            sr6 = (sigma * sigma / r2) ** 3
            e += 4.0 * eps * (sr6 * sr6 - sr6)
    return e


def lj_min_image_scalar(x, L):
    n = x.shape[0]
    e = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            r2 = 0.0
            for k in range(3):
                dx = x[i, k] - x[j, k]
                dx -= L * round(dx / L)
                r2 += dx * dx
            inv6 = 1.0 / (r2 * r2 * r2)
            e += 4.0 * (inv6 * inv6 - inv6)
    return e


@njit
def lj_forces(pos, L):
    n = pos.shape[0]
    f = np.zeros_like(pos)
    for i in range(n):
        for j in range(i + 1, n):
            d = pos[i] - pos[j]
            d -= L * np.round(d / L)
            r2 = np.sum(d ** 2)
            inv6 = 1.0 / r2 ** 3
            fmag = 24.0 * (2.0 * inv6 * inv6 - inv6) / r2
            f[i] += fmag * d
            f[j] -= fmag * d
    return f


def md_kinetic_energy(pos0, vel0, L, dt, n):
    pos = pos0.copy()
    vel = vel0.copy()
    f = lj_forces(pos, L)
    for _ in range(n):
        vel += 0.5 * dt * f
        pos += dt * vel
        pos -= L * np.floor(pos / L)
        f = lj_forces(pos, L)
        vel += 0.5 * dt * f
    return 0.5 * np.sum(vel ** 2)


# ---------------------------------------------------------------------------------------
# statistics: Gaussian mixtures, survival, regression
# ---------------------------------------------------------------------------------------

@njit
def logsumexp(v):
    m = np.max(v)
    return m + np.log(np.sum(np.exp(v - m)))


def gmm_objective(alphas, means, icf, x, wishart_gamma, wishart_m):
    """ADBench's GMM objective: icf holds the log of Q's diagonal, then its strictly lower
    triangle column by column."""
    n, d = x.shape
    k = alphas.shape[0]
    Qdiags = np.exp(icf[:, :d])
    sum_qs = np.sum(icf[:, :d], axis=1)
    main_term = np.empty(k)
    slse = 0.0
    for ix in range(n):
        for ik in range(k):
            xc = x[ix] - means[ik]
            Lxc = Qdiags[ik] * xc
            idx = d
            for i in range(d):
                for j in range(i + 1, d):
                    Lxc[j] += icf[ik, idx] * xc[i]
                    idx += 1
            main_term[ik] = alphas[ik] + sum_qs[ik] - 0.5 * np.sum(Lxc * Lxc)
        slse += logsumexp(main_term)
    constant = -n * d * 0.5 * math.log(2.0 * math.pi)
    prior = 0.0
    for ik in range(k):
        prior += 0.5 * wishart_gamma ** 2 * (np.sum(Qdiags[ik] ** 2) + np.sum(icf[ik, d:] ** 2)) \
            - wishart_m * sum_qs[ik]
    return constant + slse - n * logsumexp(alphas) + prior


def gmm_diag_vectorized(alphas, means, log_prec, x):
    prec = np.exp(log_prec)
    diff = x[:, np.newaxis, :] - means[np.newaxis, :, :]
    maha = np.sum(diff * diff * prec[np.newaxis, :, :], axis=2)
    logp = alphas[np.newaxis, :] + 0.5 * np.sum(log_prec, axis=1)[np.newaxis, :] - 0.5 * maha
    n = x.shape[0]
    total = 0.0
    for i in range(n):
        row = logp[i]
        m = np.max(row)
        total += m + np.log(np.sum(np.exp(row - m)))
    return total - n * logsumexp(alphas)


def survival_cumsum(beta, log_h0, X, times, event, dt):
    base = np.exp(log_h0)
    H0 = np.cumsum(base) * dt
    n = X.shape[0]
    ll = 0.0
    for i in range(n):
        eta = np.dot(X[i], beta)
        t = times[i]
        ll += event[i] * (log_h0[t] + eta) - math.exp(eta) * H0[t]
    return -ll


def logreg_prange(w, b, X, y):
    n = X.shape[0]
    total = 0.0
    for i in numba.prange(n):
        z = b + np.dot(X[i], w)
        total += np.log1p(np.exp(-y[i] * z))
    return total / n + 0.5e-2 * np.dot(w, w)


def logreg_prange_losses(w, X, y):
    n = X.shape[0]
    losses = np.empty(n)
    for i in prange(n):
        s = 0.0
        for j in range(X.shape[1]):
            s += X[i, j] * w[j]
        losses[i] = math.log(1.0 + math.exp(-y[i] * s))
    return losses.mean()


def mlp_softmax_ce(W1, b1, W2, b2, X, labels):
    h = np.tanh(X @ W1 + b1)
    logits = h @ W2 + b2
    n = X.shape[0]
    loss = 0.0
    for i in range(n):
        z = logits[i]
        m = np.max(z)
        lse = m + np.log(np.sum(np.exp(z - m)))
        loss += lse - z[labels[i]]
    return loss / n


def mvn_cholesky_nll(mu, L_params, X):
    d = mu.shape[0]
    L = np.zeros((d, d))
    idx = 0
    for i in range(d):
        for j in range(i + 1):
            if i == j:
                L[i, j] = math.exp(L_params[idx])
            else:
                L[i, j] = L_params[idx]
            idx += 1
    Sigma = L @ L.T
    sign, logdet = np.linalg.slogdet(Sigma)
    n = X.shape[0]
    nll = 0.0
    for k in range(n):
        r = X[k] - mu
        nll += 0.5 * r @ np.linalg.solve(Sigma, r)
    return nll + 0.5 * n * logdet


def gp_marginal_likelihood(x, y, ell, noise):
    d = x[:, np.newaxis] - x[np.newaxis, :]
    K = np.exp(-0.5 * d * d / (ell * ell)) + noise * np.eye(x.shape[0])
    alpha = np.linalg.solve(K, y)
    sign, logdet = np.linalg.slogdet(K)
    return 0.5 * np.dot(y, alpha) + 0.5 * logdet


def mc_call_price(S0, sigma, r, T, K, z):
    ST = S0 * np.exp((r - 0.5 * sigma ** 2) * T + sigma * np.sqrt(T) * z)
    payoff = np.maximum(ST - K, 0.0)
    return math.exp(-r * T) * np.mean(payoff)


# ---------------------------------------------------------------------------------------
# PDEs, stencils, images
# ---------------------------------------------------------------------------------------

def upwind_advection(u0, c, dt, dx, n):
    u = u0.copy()
    nu = c * dt / dx
    for _ in range(n):
        u = u - nu * (u - np.roll(u, 1))
    return np.sum(u * u * np.arange(u.shape[0]))


def lax_wendroff(u0, c, target, n):
    u = u0
    for _ in range(n):
        up = np.roll(u, -1)
        um = np.roll(u, 1)
        u = u - 0.5 * c * (up - um) + 0.5 * c * c * (up - 2.0 * u + um)
    return 0.5 * np.sum((u - target) ** 2)


def tv_denoise_3d(u, f, lam, eps):
    dx = u[1:, :-1, :-1] - u[:-1, :-1, :-1]
    dy = u[:-1, 1:, :-1] - u[:-1, :-1, :-1]
    dz = u[:-1, :-1, 1:] - u[:-1, :-1, :-1]
    tv = np.sum(np.sqrt(dx ** 2 + dy ** 2 + dz ** 2 + eps))
    return 0.5 * np.sum((u - f) ** 2) + lam * tv


def heat_double_buffer(u0, alpha, n_steps):
    u = u0.copy()
    u_new = np.empty_like(u)
    n = u.shape[0]
    for _ in range(n_steps):
        u_new[0] = u[0]
        u_new[n - 1] = u[n - 1]
        for i in range(1, n - 1):
            u_new[i] = u[i] + alpha * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        u, u_new = u_new, u
    return np.sum(u ** 2)


def heat2d_slices_double_buffer(u0, alpha, n_steps):
    u = u0.copy()
    u_new = u0.copy()
    for _ in range(n_steps):
        u_new[1:-1, 1:-1] = u[1:-1, 1:-1] + alpha * (
            u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] - 4.0 * u[1:-1, 1:-1])
        u, u_new = u_new, u
    return np.sum(u * u)


def wave_three_buffers(u0, c, n_steps):
    n = u0.shape[0]
    u_prev = u0.copy()
    u = u0.copy()
    u_next = np.zeros(n)
    for _ in range(n_steps):
        for i in range(1, n - 1):
            u_next[i] = 2.0 * u[i] - u_prev[i] + c * c * (u[i + 1] - 2.0 * u[i] + u[i - 1])
        u_prev, u, u_next = u, u_next, u_prev
    return np.sum(u ** 2)


LAPLACE = np.array([1.0, -2.0, 1.0])
GAUSS_NODES = np.array([-0.7745966692414834, 0.0, 0.7745966692414834])
GAUSS_WEIGHTS = np.array([5.0 / 9.0, 8.0 / 9.0, 5.0 / 9.0])


def stencil_smoothness(u):
    n = u.shape[0]
    s = 0.0
    for i in range(1, n - 1):
        lap = 0.0
        for k in range(3):
            lap += LAPLACE[k] * u[i - 1 + k]
        s += lap * lap
    return s


def gauss_quadrature(a, b, p):
    half = 0.5 * (b - a)
    mid = 0.5 * (b + a)
    s = 0.0
    for i in range(GAUSS_NODES.shape[0]):
        t = mid + half * GAUSS_NODES[i]
        s += GAUSS_WEIGHTS[i] * math.exp(-p * t * t)
    return half * s


def gauss_seidel(A, b, sweeps):
    n = b.shape[0]
    x = np.zeros(n)
    for _ in range(sweeps):
        for i in range(n):
            s = b[i]
            for j in range(n):
                if j != i:
                    s -= A[i, j] * x[j]
            x[i] = s / A[i, i]
    return np.sum(x * x)


# ---------------------------------------------------------------------------------------
# closures built by factories
# ---------------------------------------------------------------------------------------

def make_least_squares(data):
    def loss(w):
        n = data.shape[0]
        s = 0.0
        for i in range(n):
            r = w[0] + w[1] * data[i, 0] - data[i, 1]
            s += r * r
        return s / n
    return loss


def make_ridge(X, y, alpha):
    n = X.shape[0]

    def loss(w, b):
        r = X @ w + b - y
        return np.dot(r, r) / n + alpha * np.dot(w, w)
    return loss


def make_gaussian_nll(obs):
    @njit
    def nll(mu, log_sigma):
        n = obs.shape[0]
        sigma = math.exp(log_sigma)
        s = 0.0
        for i in range(n):
            z = (obs[i] - mu) / sigma
            s += 0.5 * z * z
        return s + n * log_sigma
    return nll


# ---------------------------------------------------------------------------------------
# helpers: defaults, keywords, several returns, tuples
# ---------------------------------------------------------------------------------------

@njit
def huber(r, delta=1.0):
    a = abs(r)
    if a <= delta:
        return 0.5 * r * r
    return delta * (a - 0.5 * delta)


def robust_line_fit(theta, t, y):
    s = 0.0
    for i in range(t.shape[0]):
        r = theta[0] + theta[1] * t[i] - y[i]
        s += huber(r) + 0.1 * huber(r, delta=0.3)
    return s


@njit
def smooth_clip(x, lo, hi):
    if x < lo:
        return lo - math.log1p(lo - x)
    elif x > hi:
        return hi + math.log1p(x - hi)
    else:
        return x


def clipped_sum(x, lo, hi):
    s = 0.0
    for i in range(x.shape[0]):
        s += smooth_clip(x[i], lo, hi) ** 2
    return s


@njit
def first_crossing(y, level):
    for i in range(y.shape[0]):
        if y[i] > level:
            return i
    return y.shape[0] - 1


def crossing_value(y, level):
    i = first_crossing(y, level)
    return y[i] ** 2 + level * y[i]


@njit
def mean_and_var(x):
    m = np.mean(x)
    return m, np.mean((x - m) ** 2)


def standardized_score(x, w):
    m, v = mean_and_var(x * w)
    z = (x * w - m) / np.sqrt(v + 1e-3)
    return np.sum(z ** 3) + m


# ---------------------------------------------------------------------------------------
# small syntax: tuples, asserts, strings, lists, new axes, transposes, iteration
# ---------------------------------------------------------------------------------------

def tuple_loops(x):
    s = 0.0
    for k in (0, 1):
        s += x[k] * x[k + 2]
    for c in (0.5, 1.5, 2.5):
        s += math.sin(c * x[0])
    return s


def assert_checked_mse(w, X, y):
    assert X.shape[0] == y.shape[0]
    assert X.shape[1] == w.shape[0], "shape mismatch"
    r = X @ w - y
    return np.mean(r ** 2)


def documented_ring_energy(x, k):
    """Energy of a ring of springs.

    x: positions, k: stiffness."""
    n = x.shape[0]
    e = 0.0
    "sum over neighbouring pairs, the last one wraps around"
    for i in range(n):
        d = x[(i + 1) % n] - x[i] - 1.0
        e += 0.5 * k * d * d
    return e


def list_coefficients(x):
    c = [1.0, -0.5, 0.25, -0.125]
    s = 0.0
    for i in range(len(c)):
        s += c[i] * x ** i
    return s


def list_weights_array(x):
    w = np.array([0.2, 0.3, 0.5])
    shifts = [0.0, 1.0, -1.0]
    s = 0.0
    for k in range(3):
        s += w[k] * np.sum(np.exp(-(x - shifts[k]) ** 2))
    return s


def pairwise_newaxis(x, ell):
    d = x[:, np.newaxis] - x[np.newaxis, :]
    K = np.exp(-0.5 * d * d / (ell * ell))
    return np.sum(K * np.cos(d))


def batch_symmetrize(a, w):
    s = 0.5 * (a + a.transpose(0, 2, 1))
    total = 0.0
    for b in range(s.shape[0]):
        total += np.sum(s[b] @ s[b]) * w
    return total


def enumerate_residuals(theta, ts, ys):
    s = 0.0
    for i, t in enumerate(ts):
        pred = theta[0] * math.exp(-theta[1] * t)
        s += (i + 1) * (pred - ys[i]) ** 2
    return s


def zip_residuals(theta, ts, ys):
    s = 0.0
    for t, y in zip(ts, ys):
        s += (theta[0] * math.exp(-theta[1] * t) - y) ** 2
    return s


def newton_sqrt(a, iters):
    y = a
    for _ in range(iters):
        y = 0.5 * (y + a / y)
    return y


def fixed_point_cos(p):
    x = 0.0
    it = 0
    while it < 60:
        x_new = math.cos(p * x)
        if abs(x_new - x) < 1e-300:
            break
        x = x_new
        it += 1
    return x


@njit
def njit_horner(c, x):
    """A loss that is itself an @njit dispatcher, with a while loop."""
    s = 0.0
    i = c.shape[0] - 1
    while i >= 0:
        s = s * x + c[i]
        i -= 1
    return s


def batch_symmetrize_no_loop(a, w):
    s = 0.5 * (a + a.transpose(0, 2, 1))
    return np.sum(s * s) * w


def pairwise_none(x, ell):
    d = x[:, None] - x[None, :]
    K = np.exp(-0.5 * d * d / (ell * ell))
    return np.sum(K * np.cos(d))


def rnn_tanh_copy_state(W, U, b, x, h0):
    h = h0.copy()
    for t in range(x.shape[0]):
        h = np.tanh(W @ h + U @ x[t] + b)
    return np.sum(h)


def euler_scalar_state_vector_inplace(y0, k, dt, n):
    y = y0.copy()
    for _ in range(n):
        y += dt * (-k * y + np.sin(y))
    return np.sum(y * y)


# a new array every step, handed to the loop's name (u = un)
def heat_copy_handover(u0, k, steps):
    u = u0.copy()
    n = u.shape[0]
    for t in range(steps):
        un = u.copy()
        for i in range(1, n - 1):
            un[i] = u[i] + k * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        u = un
    return np.sum(u * u)


def heat_empty_like_handover(u0, k, steps):
    u = u0
    n = u.shape[0]
    for t in range(steps):
        unew = np.empty_like(u)
        unew[0] = u[0]
        unew[n - 1] = u[n - 1]
        for i in range(1, n - 1):
            unew[i] = u[i] + k[i] * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        u = unew
    return np.sum(u ** 3)


def wave_three_levels(u0, c, steps):
    prev = u0.copy()
    cur = u0.copy()
    n = u0.shape[0]
    for t in range(steps):
        nxt = np.zeros(n)
        for i in range(1, n - 1):
            nxt[i] = 2.0 * cur[i] - prev[i] + c * c * (cur[i - 1] - 2.0 * cur[i] + cur[i + 1])
        prev = cur
        cur = nxt
    return np.sum(cur * cur) + 0.5 * np.sum(prev)


def relaxation_sweeps(x0, w, sweeps):
    x = x0.copy()
    for s in range(sweeps):
        xn = 0.5 * x
        for i in range(1, x.shape[0]):
            xn[i] += w * math.tanh(x[i - 1])
        x = xn
    total = np.sum(xn)
    return total + np.sum(x * x)


# ---------------------------------------------------------------------------------------
# Tuples held in names: a helper's result kept whole, shapes, parameter tuples
# ---------------------------------------------------------------------------------------

@njit
def _verlet_step(x, v, k, dt):
    a = -k * x
    v_half = v + 0.5 * dt * a
    x_new = x + dt * v_half
    return x_new, v_half + 0.5 * dt * (-k * x_new)


def verlet_state_tuple(x0, v0, k, dt, n):
    x, v = x0, v0
    for _ in range(n):
        state = _verlet_step(x, v, k, dt)
        x = state[0]
        v = state[1]
    return 0.5 * v * v + 0.5 * k * x * x


def shape_tuple_name(A, w):
    shp = A.shape
    rows, cols = shp
    s = 0.0
    for i in range(shp[0]):
        for j in range(cols):
            s += w[j] * A[i, j] ** 2
    return s / rows


@njit
def _decay_model(t, params):
    a, k, c = params
    return a * math.exp(-k * t) + c


def decay_fit_params_tuple(a, k, c, ts, ys):
    params = (a, k, c)
    s = 0.0
    for i in range(ts.shape[0]):
        r = _decay_model(ts[i], params) - ys[i]
        s += r * r
    return s


@njit
def _distance(p, q):
    dx = p[0] - q[0]
    dy = p[1] - q[1]
    return math.sqrt(dx * dx + dy * dy)


def polyline_length_point_tuples(x, y):
    s = 0.0
    for i in range(x.shape[0] - 1):
        s += _distance((x[i], y[i]), (x[i + 1], y[i + 1]))
    return s


def tuple_weights_loops(x):
    weights = (0.5, 0.3, 0.2)
    s = 0.0
    for w in weights:
        s += w * np.sum(x * x)
    for k in range(len(weights)):
        s += weights[k] * x[k] ** 3
    return s


def tuple_keeps_old_values(a, b):
    t = (a, b)
    a = a * 2.0 + b
    t2 = (t[1], a)
    return t[0] * a + t[1] * t2[1]


@njit
def _ramp(x):
    if x < 0.0:
        return 0.0, 0.0
    elif x < 1.0:
        return x * x, 2.0 * x
    return 2.0 * x - 1.0, 2.0


def ramp_tuples_from_several_returns(x, c):
    s = 0.0
    for i in range(x.shape[0]):
        v, slope = _ramp(x[i])
        s += v + c * slope * x[i]
    return s


def logistic_map_while_counter(r, x0, n):
    x = x0
    k = 0
    while k < n:
        x = r * x * (1.0 - x)
        k += 1
    return x + 0.01 * k


@njit
def _euler_step_with_error(y, dt):
    y_new = y + dt * np.sin(y)
    err = np.sum((y_new - y) ** 2)
    return y_new, err


def step_result_held_in_a_name(x, dt):
    y = x.copy()
    e = 0.0
    for i in range(4):
        r = _euler_step_with_error(y, dt)
        y = r[0]
        e += r[1]
    return np.sum(y * y) + e


def shape_kept_after_rebinding(x):
    a = x * 2.0
    shp = a.shape                   # the sizes now: rebinding `a` below does not change them
    a = np.ones(2)
    b = np.outer(x, x)
    rows, cols = b.shape
    b = x[:3] * 1.0
    return x[0] * shp[0] * a[0] + x[1] * cols + np.sum(b) * rows


@njit
def _halves(z):
    n = z.shape[0] // 2
    return z[:n] * 2.0, z[n:] + 1.0


def helper_arrays_in_a_tuple(z, c):
    pair = _halves(z)
    lo = pair[0]
    hi = pair[1]
    return np.sum(lo * hi) + c * np.sum(pair[0])


# ---------------------------------------------------------------------------------------
# the check
# ---------------------------------------------------------------------------------------

def _oracle(loss, parallel=False):
    if isinstance(loss, numba.core.registry.CPUDispatcher):
        return loss
    return numba.njit(parallel=parallel)(loss) if parallel else numba.njit(loss)


def _copy(a):
    return a.copy() if isinstance(a, np.ndarray) else a


def _expect_close(got, want, rel, abs_, what):
    if not abs(got - want) <= max(rel * abs(want), abs_):
        raise AssertionError(f"{what}: adjit {got!r}, expected {want!r}, "
                             f"difference {got - want!r}")


def check(loss, args, argnums, jvp_argnum=None, rtol=1e-6, atol=1e-8, parallel=False):
    """value == numba's value; every gradient in argnums == central differences of numba's
    program; jvp in one argument == <gradient, tangent>; the arguments are not mutated."""
    args = tuple(_copy(a) for a in args)
    before = tuple(_copy(a) for a in args)
    compiled = _oracle(loss, parallel)
    expected = compiled(*args)
    value, grads = adjit.value_and_grad(loss, argnums=argnums)(*args)
    for a, b in zip(args, before):
        np.testing.assert_array_equal(a, b, err_msg="an argument was mutated")
    _expect_close(value, expected, 1e-12, 1e-14, "value_and_grad's value vs numba")
    for k, g in zip(argnums, grads):
        fd = fd_grad(compiled, args, k)
        if np.shape(g) != np.shape(args[k]):
            raise AssertionError(f"gradient {k} has shape {np.shape(g)}, "
                                 f"argument {np.shape(args[k])}")
        np.testing.assert_allclose(g, fd, rtol=rtol, atol=atol,
                                   err_msg=f"d/d arg {k} of {getattr(loss, '__name__', loss)}"
                                           f" (adjit = actual, central differences = desired)")
    k = argnums[0] if jvp_argnum is None else jvp_argnum
    g = grads[argnums.index(k)]
    if np.ndim(args[k]) == 0:
        tangent = 0.7
    else:
        tangent = np.linspace(-1.0, 1.0, args[k].size).reshape(args[k].shape)
    out, t = adjit.jvp(loss, argnums=k)(*args, tangent)
    _expect_close(out, expected, 1e-12, 1e-14, "jvp's value vs numba")
    _expect_close(t, float(np.sum(g * tangent)), 1e-10, 1e-12,
                  f"jvp in arg {k} vs <gradient, tangent>")


RNG = np.random.default_rng(20240601)


def _r(*shape, scale=1.0, shift=0.0):
    return shift + scale * RNG.standard_normal(shape)


def _spd(n, seed):
    b = np.random.default_rng(seed).random((n, n))
    return b @ b.T + n * np.eye(n)


def _lattice(n_side, L, jitter, seed):
    g = np.random.default_rng(seed)
    pts = []
    a = L / n_side
    for i in range(n_side):
        for j in range(n_side):
            pts.append([(i + 0.5) * a, (j + 0.5) * a, 0.5 * L])
    pts = np.array(pts)
    return pts + jitter * g.uniform(-1.0, 1.0, pts.shape)


# data sets used by several cases
LSQ_DATA = np.column_stack((np.linspace(0.0, 1.0, 6), 1.0 + 2.0 * np.linspace(0.0, 1.0, 6)
                            + 0.1 * np.sin(np.arange(6.0))))
RIDGE_X = np.random.default_rng(5).standard_normal((6, 3))
RIDGE_Y = np.random.default_rng(6).standard_normal(6)
OBS = np.random.default_rng(7).normal(1.5, 0.7, 8)
TS = np.linspace(0.0, 2.0, 6)
YS = 2.0 * np.exp(-0.7 * TS) + 0.05 * np.cos(7.0 * TS)
XLR = np.random.default_rng(8).standard_normal((7, 3))
YLR = np.where(np.random.default_rng(9).random(7) > 0.5, 1.0, -1.0)

def case(name, loss, args, argnums, xfail=None, **kw):
    marks = () if xfail is None else (pytest.mark.xfail(strict=True, raises=xfail[0],
                                                         reason=xfail[1]),)
    return pytest.param(loss, args, argnums, kw, id=name, marks=marks)



def clipped_descent_copy_input(x, w, steps):
    """`x = x.copy()` so the caller's array is left alone, then updated in place."""
    x = x.copy()
    for t in range(steps):
        for i in range(x.shape[0]):
            x[i] = x[i] - 0.1 * w[i] * math.tanh(x[i])
    return np.sum(x * x)



def asarray_then_scaled_copy(x, w):
    """`np.asarray` on what is already an array (a defensive first line), then a copy."""
    x = np.asarray(x)
    y = x[1:].copy()
    y[0] = y[0] * w
    return np.sum(y * y) + np.sum(x * np.asarray(x * w))


CASES = [
    # ODE integrators
    case("euler_logistic", euler_logistic, (1.3, 2.0, 0.1, 0.05, 40), (0, 1, 2, 3)),
    case("euler_lotka_volterra", euler_lotka_volterra,
         (np.array([1.1, 0.4, 0.9, 0.3]), np.array([1.2, 0.8]), 0.02, 30), (0, 1, 2)),
    case("euler_heat_roll", euler_heat_roll, (_r(6, scale=0.5), 0.8, 0.1, 8), (0, 1, 2)),
    case("euler_trajectory_fit", euler_trajectory_fit,
         (0.7, 0.9, 0.05, np.linspace(1.0, 0.4, 10)), (0, 1, 2)),
    case("rk4_pendulum_helper", rk4_pendulum,
         (np.array([0.6, -0.2]), np.array([9.81, 0.3]), 0.02, 25), (0, 1, 2)),
    case("rk4_decay_chain_helper_writes", rk4_decay_chain,
         (np.array([1.0, 0.6, 0.3, 0.1]), np.array([1.0, 0.2, 0.0, 0.0]), 2.0, 20), (0, 1, 2)),
    case("rk3_tableau_lists", rk3_tableau_lists, (0.8, 0.5, 0.05, 20), (0, 1, 2)),
    case("leapfrog_pendulum_scalar", leapfrog_pendulum, (0.7, 0.1, 9.81, 0.01, 50),
         (0, 1, 2, 3)),
    case("leapfrog_chain_helper", leapfrog_chain,
         (_r(5, scale=0.3), _r(5, scale=0.2), 1.5, 0.05, 15), (0, 1, 2, 3)),
    case("verlet_tuple_helper", anharmonic_verlet, (_r(4, scale=0.5), _r(4, scale=0.5), 0.05, 20),
         (0, 1, 2)),
    case("spring_step_defaults_keywords", damped_spring_scalar, (0.9, -0.3, 2.0, 0.05, 30),
         (0, 1, 2, 3)),
    # recurrent cells
    case("rnn_tanh", rnn_tanh,
         (_r(3, 3, scale=0.5), _r(3, 2, scale=0.5), _r(3, scale=0.1), _r(4, 2), _r(3, scale=0.1)),
         (0, 1, 2, 4)),
    case("rnn_regression", rnn_regression,
         (_r(3, 3, scale=0.5), _r(3, 2, scale=0.5), _r(3), _r(5, 2), _r(5)), (0, 1, 2)),
    case("lstm_slices_helper", lstm_last_hidden,
         (_r(8, 2, scale=0.5), _r(8, 2, scale=0.5), _r(8, scale=0.1), _r(3, 2)), (0, 1, 2)),
    case("gru_for_row_in_array", gru_rows,
         (_r(2, 4, scale=0.5), _r(2, 4, scale=0.5), _r(2, 4, scale=0.5), _r(3, 2)), (0, 1, 2)),
    # linear dynamics, filtering
    case("linear_rollout", linear_rollout, (0.4 * _r(3, 3) + 0.5 * np.eye(3), _r(3), 6), (0, 1)),
    case("lqr_cost", lqr_cost,
         (0.3 * _r(3, 3) + 0.8 * np.eye(3), _r(3, 2, scale=0.5), _r(3), _r(5, 2, scale=0.3)),
         (0, 1, 2, 3)),
    case("matrix_power_trace", matrix_power_trace, (0.3 * _r(3, 3) + 0.6 * np.eye(3), 5), (0,)),
    case("kalman_filter_solve", kalman_nll,
         (np.array([[1.0, 0.1], [0.0, 0.95]]), 0.05 * np.eye(2), np.array([[1.0, 0.0]]),
          np.array([[0.2]]), np.array([0.0, 1.0]), np.eye(2), _r(5, 1, scale=0.5)),
         (0, 1, 3, 4, 5)),
    # molecular dynamics
    case("lj_periodic_np_round", lj_periodic, (_lattice(2, 2.6, 0.15, 1), 2.6, 1.0, 0.9),
         (0, 1, 2, 3)),
    case("lj_min_image_builtin_round", lj_min_image_scalar, (_lattice(2, 2.4, 0.15, 2), 2.4),
         (0, 1)),
    case("md_velocity_verlet_lj_forces", md_kinetic_energy,
         (_lattice(2, 2.4, 0.1, 3), _r(4, 3, scale=0.1), 2.4, 0.002, 5), (0, 1, 2, 3)),
    # statistics
    case("gmm_adbench_loops", gmm_objective,
         (_r(3), _r(3, 2), _r(3, 3, scale=0.3), _r(5, 2), 1.2, 2), (0, 1, 2, 4)),
    case("gmm_diag_newaxis", gmm_diag_vectorized,
         (_r(3), _r(3, 2), _r(3, 2, scale=0.3), _r(5, 2)), (0, 1, 2)),
    case("survival_cumsum", survival_cumsum,
         (_r(2, scale=0.3), _r(5, scale=0.3, shift=-1.0), _r(6, 2),
          np.array([0, 3, 4, 1, 2, 4]), np.array([1.0, 0.0, 1.0, 1.0, 0.0, 1.0]), 0.5), (0, 1)),
    case("logreg_numba_prange", logreg_prange, (_r(3), 0.2, XLR, YLR), (0, 1), parallel=True),
    case("logreg_prange_losses", logreg_prange_losses, (_r(3), XLR, YLR), (0,)),
    case("mlp_softmax_ce", mlp_softmax_ce,
         (_r(3, 4, scale=0.5), _r(4, scale=0.1), _r(4, 3, scale=0.5), _r(3, scale=0.1), _r(5, 3),
          np.array([0, 2, 1, 1, 0])), (0, 1, 2, 3)),
    case("mvn_cholesky_nll", mvn_cholesky_nll,
         (_r(2, scale=0.2), np.array([0.1, 0.3, -0.2]), _r(5, 2)), (0, 1)),
    case("gp_marginal_likelihood", gp_marginal_likelihood,
         (np.linspace(0.0, 2.0, 5), np.sin(np.linspace(0.0, 2.0, 5)), 0.8, 0.1), (0, 1, 2, 3)),
    case("mc_call_price", mc_call_price,
         (100.0, 0.2, 0.03, 1.0, 100.0, np.linspace(-2.0, 2.0, 9) + 0.013), (0, 1, 2, 3),
         atol=1e-6),
    # PDEs, stencils
    case("upwind_advection_roll", upwind_advection, (_r(6), 1.0, 0.05, 0.1, 8), (0, 1, 2)),
    case("lax_wendroff_roll", lax_wendroff, (_r(6), 0.4, _r(6), 6), (0, 1, 2)),
    case("tv_denoise_3d_slices", tv_denoise_3d, (_r(3, 3, 4), _r(3, 3, 4), 0.3, 1e-2),
         (0, 1, 2, 3)),
    case("heat_double_buffer_swap", heat_double_buffer, (_r(6), 0.2, 7), (0, 1)),
    case("heat2d_slices_double_buffer", heat2d_slices_double_buffer, (_r(4, 5), 0.15, 4), (0, 1)),
    case("wave_three_buffer_rotation", wave_three_buffers, (_r(6), 0.5, 6), (0, 1)),
    case("stencil_module_constant", stencil_smoothness, (_r(6),), (0,)),
    case("gauss_quadrature_module_constants", gauss_quadrature, (0.1, 1.3, 0.8), (0, 1, 2)),
    case("gauss_seidel", gauss_seidel, (_spd(3, 4), _r(3), 4), (0, 1)),
    # closures
    case("closure_least_squares", make_least_squares(LSQ_DATA), (np.array([0.5, 1.5]),), (0,)),
    case("closure_ridge", make_ridge(RIDGE_X, RIDGE_Y, 0.1), (_r(3), 0.3), (0, 1)),
    case("closure_njit_inner", make_gaussian_nll(OBS), (1.2, -0.1), (0, 1)),
    # helpers
    case("helper_defaults_keywords_huber", robust_line_fit, (np.array([0.3, 0.8]), TS, YS),
         (0,)),
    case("helper_several_returns", clipped_sum, (np.linspace(-2.0, 2.0, 7) + 0.01, -1.0, 1.2),
         (0, 1, 2)),
    case("helper_returns_int_early", crossing_value, (np.array([0.1, 0.5, 1.3, 0.2, 2.0]), 1.0),
         (0, 1)),
    case("helper_returns_tuple_arrays", standardized_score, (_r(5), 1.3), (0, 1)),
    # small syntax
    case("tuple_iteration", tuple_loops, (_r(4),), (0,)),
    case("assert_statements", assert_checked_mse, (_r(3), _r(5, 3), _r(5)), (0, 1)),
    case("docstring_and_mid_string", documented_ring_energy, (_r(5), 1.3), (0, 1)),
    case("list_literal_coefficients", list_coefficients, (0.7,), (0,)),
    case("list_literal_in_loop_and_np_array", list_weights_array, (_r(4),), (0,)),
    case("np_newaxis_pairwise", pairwise_newaxis, (_r(4), 0.9), (0, 1)),
    case("transpose_0_2_1", batch_symmetrize, (_r(2, 3, 3), 0.7), (0, 1)),
    case("enumerate_array", enumerate_residuals, (np.array([2.0, 0.7]), TS, YS), (0,)),
    case("zip_arrays", zip_residuals, (np.array([2.0, 0.7]), TS, YS), (0,)),
    case("newton_sqrt", newton_sqrt, (2.3, 8), (0,)),
    case("while_break_fixed_point", fixed_point_cos, (0.9,), (0,)),
    case("njit_dispatcher_horner_while", njit_horner, (_r(5), 0.6), (0, 1)),
    # isolating variants of constructs refused above
    case("transpose_0_2_1_no_loop", batch_symmetrize_no_loop, (_r(2, 3, 3), 0.7), (0, 1)),
    case("none_new_axis_pairwise", pairwise_none, (_r(4), 0.9), (0, 1)),
    case("rnn_tanh_copied_state", rnn_tanh_copy_state,
         (_r(3, 3, scale=0.5), _r(3, 2, scale=0.5), _r(3, scale=0.1), _r(4, 2), _r(3, scale=0.1)),
         (0, 1, 2, 4)),
    case("euler_inplace_update", euler_scalar_state_vector_inplace, (_r(4), 0.8, 0.05, 12),
         (0, 1, 2)),
    case("heat_copy_then_handover", heat_copy_handover, (_r(7), 0.2, 6), (0, 1)),
    case("heat_empty_like_handover", heat_empty_like_handover,
         (_r(7, scale=0.5), 0.1 + 0.1 * np.abs(_r(7)), 5), (0, 1)),
    case("wave_three_time_levels", wave_three_levels, (_r(8, scale=0.5), 0.4, 6), (0, 1)),
    case("relaxation_new_array_expression", relaxation_sweeps, (_r(5, scale=0.5), 0.3, 4),
         (0, 1)),
    # tuples held in names
    case("verlet_state_tuple", verlet_state_tuple, (0.8, -0.3, 1.7, 0.05, 30), (0, 1, 2, 3)),
    case("shape_tuple_name", shape_tuple_name, (_r(3, 4), _r(4)), (0, 1)),
    case("decay_fit_params_tuple", decay_fit_params_tuple, (2.0, 0.7, 0.1, TS, YS),
         (0, 1, 2)),
    case("polyline_length_point_tuples", polyline_length_point_tuples, (_r(6), _r(6)),
         (0, 1)),
    case("tuple_weights_loops", tuple_weights_loops, (_r(4),), (0,)),
    case("tuple_keeps_old_values", tuple_keeps_old_values, (0.7, -1.3), (0, 1)),
    case("ramp_tuples_from_several_returns", ramp_tuples_from_several_returns,
         (np.array([-0.5, 0.3, 0.8, 1.7, 2.5]), 0.4), (0, 1)),
    case("logistic_map_while_counter", logistic_map_while_counter, (3.1, 0.3, 25), (0, 1)),
    case("step_result_held_in_a_name", step_result_held_in_a_name, (_r(4), 0.1), (0, 1)),
    case("shape_kept_after_rebinding", shape_kept_after_rebinding, (_r(5),), (0,)),
    case("helper_arrays_in_a_tuple", helper_arrays_in_a_tuple, (_r(6), 0.4), (0, 1)),
    case("copy_the_input_then_update_it", clipped_descent_copy_input, (_r(5), _r(5), 4),
         (0, 1)),
    case("asarray_and_array_of_arrays", asarray_then_scaled_copy, (_r(5), 0.7), (0, 1)),
]


@pytest.mark.parametrize("loss, args, argnums, kw", CASES)
def test_natural_program(loss, args, argnums, kw):
    check(loss, args, argnums, **kw)

