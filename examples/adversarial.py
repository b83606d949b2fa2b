"""Adversarial training of a small MLP on two interleaved moons, the attacks from adjit.

The model is a 2-h-1 tanh network f(x) = w2 . tanh(W1 x + b1) + b2 for labels y in {-1, +1},
its parameters one flat vector theta = [W1, b1, w2, b2], trained on the mean logistic loss

    L(theta, X) = mean_i log(1 + exp(-y_i f(x_i))).

Attacks. adjit.grad(loss, argnums=1) is the gradient with respect to the INPUT points X.
The fast gradient sign method (FGSM) moves every point by eps against the classifier within
the L-infinity ball: x_adv = x + eps sign(dL/dx). PGD-k takes k sign steps and projects back
onto the ball |x_adv - x|_inf <= eps after each.

Adversarial training minimizes the loss at the attacked points,

    L_adv(theta) = L(theta, X_adv),    X_adv = stop_gradient(X + eps sign(dL/dX(theta, X))).

X_adv depends on theta, but it stands for the worst point in the ball, max_{|d| <= eps}
L(theta, X + d), and by Danskin's theorem the gradient of that max is the parameter gradient
at the maximizer, taken as fixed. stop_gradient says exactly this: the attack is a constant
for differentiation, no adjoint flows back through it, and dL_adv/dtheta is
dL/dtheta(theta, X_adv). The example checks the identity once: adjit.grad(adv_loss) against
adjit.grad(loss) at the precomputed X_adv. With the sign attack the path through the attack
would carry nothing anyway (sign is piecewise constant: its derivative is 0), so the check is
repeated with the smooth L2 attack x + eps g/|g| (the fast gradient method). There the
gradient without stop_gradient is a different one - it also differentiates the attack, a
second derivative of the loss - and that one is checked against central differences.

Inside adv_loss the input gradient is written out by hand (`input_grad`, compared with
adjit's): a gradient object called inside a function that adjit differentiates is currently
inlined as its primal function, which gives a wrong value and gradient.

Standard training and adversarial training (PGD-3 by default, attack_iters=1 for FGSM) start
from the same initialization and run full-batch Adam compiled inside @numba.njit, calling
adjit's gradients there: dL/dX for the attack, then dL/dtheta at the attacked points for the
step - the gradient of the stopped adversarial loss, as checked. Clean, FGSM and PGD-10
accuracy are measured on a held-out test set.
Run: .venv/bin/python examples/adversarial.py
"""
import time

import numba
import numpy as np

import adjit
from adjit import stop_gradient


def loss(theta, X, y):
    """Mean logistic loss of the 2-h-1 tanh MLP with parameters theta on points X (n x 2)."""
    h = (theta.shape[0] - 1) // 4       # theta = [W1 (h x 2, row-major), b1, w2, b2]
    W1 = theta[:2 * h].reshape(h, 2)
    H = np.tanh(X @ W1.T + theta[2 * h:3 * h])
    m = y * (H @ theta[3 * h:4 * h] + theta[4 * h])
    return np.mean(np.maximum(-m, 0.0) + np.log1p(np.exp(-np.abs(m))))


def input_grad(theta, X, y):
    """dL/dX written out: row i is (1/n) dl_i/dm_i y_i W1^T (w2 * (1 - h_i^2))."""
    h = (theta.shape[0] - 1) // 4       # theta = [W1 (h x 2, row-major), b1, w2, b2]
    W1 = theta[:2 * h].reshape(h, 2)
    H = np.tanh(X @ W1.T + theta[2 * h:3 * h])
    m = y * (H @ theta[3 * h:4 * h] + theta[4 * h])
    c = -0.5 * (1.0 - np.tanh(0.5 * m)) * y / X.shape[0]     # dl/dm = -sigmoid(-m)
    return (c[:, None] * (1.0 - H * H) * theta[3 * h:4 * h]) @ W1


def adv_loss(theta, X, y, eps):
    """The loss at the FGSM points; the attack is a constant for differentiation."""
    X_adv = stop_gradient(X + eps * np.sign(input_grad(theta, X, y)))
    return loss(theta, X_adv, y)


def l2_attack(theta, X, y, eps):
    """The fast gradient method: eps along dl_i/dx_i / |dl_i/dx_i| (smooth in theta)."""
    G = input_grad(theta, X, y)
    return X + eps * G / np.sqrt(np.sum(G * G, axis=1) + 1e-300)[:, None]


def adv_loss_l2(theta, X, y, eps):
    X_adv = stop_gradient(l2_attack(theta, X, y, eps))
    return loss(theta, X_adv, y)


def adv_loss_l2_unstopped(theta, X, y, eps):
    return loss(theta, l2_attack(theta, X, y, eps), y)


d_input = adjit.grad(loss, argnums=1)      # dL/dX: the attacks
d_theta = adjit.grad(loss, argnums=0)      # dL/dtheta: the training step


def accuracy(theta, X, y):
    h = (theta.shape[0] - 1) // 4
    W1 = theta[:2 * h].reshape(h, 2)
    f = np.tanh(X @ W1.T + theta[2 * h:3 * h]) @ theta[3 * h:4 * h] + theta[4 * h]
    return float(np.mean(y * f > 0.0))


def fgsm(theta, X, y, eps):
    return X + eps * np.sign(d_input(theta, X, y))


def pgd(theta, X, y, eps, iters):
    """Steps of eps/4 along sign(dL/dX), each projected back onto |X_adv - X|_inf <= eps."""
    X_adv = X.copy()
    for _ in range(iters):
        X_adv = np.clip(X_adv + eps / 4.0 * np.sign(d_input(theta, X_adv, y)), X - eps, X + eps)
    return X_adv


@numba.njit
def train(theta, X, y, eps, attack_iters, steps, lr):
    """Full-batch Adam on theta in place. attack_iters = 0: standard training; 1: every step
    at the FGSM points of the current model; k > 1: at its PGD-k points (steps 2.5 eps / k)."""
    m = np.zeros_like(theta)
    v = np.zeros_like(theta)
    X_t = X.copy()      # the points of the step: X, or X_adv
    alpha = eps if attack_iters == 1 else 2.5 * eps / max(attack_iters, 1)
    for t in range(1, steps + 1):
        # X_t = stop_gradient(attack(X)): computed apart, a constant for the step, whose
        # gradient dL/dtheta(theta, X_t) is d adv_loss/dtheta (see check_stop_gradient)
        X_t[:] = X
        for _ in range(attack_iters):
            G = d_input(theta, X_t, y)
            for i in range(X.shape[0]):
                for j in range(X.shape[1]):
                    a = X_t[i, j] + alpha * np.sign(G[i, j])
                    X_t[i, j] = min(max(a, X[i, j] - eps), X[i, j] + eps)
        g = d_theta(theta, X_t, y)
        for k in range(theta.shape[0]):
            m[k] = 0.9 * m[k] + 0.1 * g[k]
            v[k] = 0.999 * v[k] + 0.001 * g[k] * g[k]
            theta[k] -= lr * (m[k] / (1.0 - 0.9 ** t)) / (np.sqrt(v[k] / (1.0 - 0.999 ** t))
                                                          + 1e-8)


def moons(n, noise, rng):
    """Two interleaved half circles (labels -1 and +1) with Gaussian noise, centred."""
    k = n // 2
    t0 = np.pi * rng.random(k)
    t1 = np.pi * rng.random(n - k)
    upper = np.stack([np.cos(t0), np.sin(t0)], axis=1)
    lower = np.stack([1.0 - np.cos(t1), 0.5 - np.sin(t1)], axis=1)
    X = np.concatenate([upper, lower]) + noise * rng.normal(size=(n, 2))
    y = np.concatenate([-np.ones(k), np.ones(n - k)])
    X -= np.array([0.5, 0.25])
    return X, y


def init(hidden, rng):
    """W1 ~ N(0, 1), b1 ~ N(0, 0.25), w2 ~ N(0, 1/h), b2 = 0, packed into one vector."""
    return np.concatenate([rng.normal(size=2 * hidden), 0.5 * rng.normal(size=hidden),
                           rng.normal(size=hidden) / np.sqrt(hidden), np.zeros(1)])


def evaluate(theta, X, y, eps, pgd_iters):
    return {"clean": accuracy(theta, X, y), "fgsm": accuracy(theta, fgsm(theta, X, y, eps), y),
            "pgd": accuracy(theta, pgd(theta, X, y, eps, pgd_iters), y)}


def check_stop_gradient(theta, X, y, eps):
    """d L_adv / d theta == dL/dtheta at the fixed attacked points; without the stop (smooth
    L2 attack) it is a different gradient, the total derivative (central differences)."""
    out = {"input_grad_error": float(np.abs(input_grad(theta, X, y)
                                            - d_input(theta, X, y)).max())}
    scale = np.abs(d_theta(theta, X, y)).max()
    g_fgsm = adjit.grad(adv_loss)(theta, X, y, eps)
    out["fgsm_stop_vs_fixed"] = float(np.abs(g_fgsm - d_theta(theta, fgsm(theta, X, y, eps), y))
                                      .max() / scale)
    g_l2 = adjit.grad(adv_loss_l2)(theta, X, y, eps)
    out["l2_stop_vs_fixed"] = float(np.abs(g_l2 - d_theta(theta, l2_attack(theta, X, y, eps), y))
                                    .max() / scale)
    g_full = adjit.grad(adv_loss_l2_unstopped)(theta, X, y, eps)
    out["l2_stop_vs_unstopped"] = float(np.abs(g_l2 - g_full).max() / scale)
    h = 1e-6
    fd = np.array([(adv_loss_l2_unstopped(theta + h * e, X, y, eps)
                    - adv_loss_l2_unstopped(theta - h * e, X, y, eps)) / (2 * h)
                   for e in np.eye(theta.shape[0])])
    out["l2_unstopped_fd_error"] = float(np.abs(fd - g_full).max() / scale)
    return out


def main(n=600, hidden=16, eps=0.25, steps=1500, lr=0.02, noise=0.1, attack_iters=3,
         pgd_iters=10, seed=0):
    rng = np.random.default_rng(seed)
    X, y = moons(n, noise, rng)
    X_test, y_test = moons(n, noise, rng)
    theta0 = init(hidden, rng)

    t0 = time.perf_counter()
    train(theta0.copy(), X, y, eps, attack_iters, 1, lr)
    compile_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    standard = theta0.copy()
    train(standard, X, y, eps, 0, steps, lr)
    standard_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    robust = theta0.copy()
    train(robust, X, y, eps, attack_iters, steps, lr)
    adversarial_s = time.perf_counter() - t0

    before = evaluate(standard, X_test, y_test, eps, pgd_iters)
    after = evaluate(robust, X_test, y_test, eps, pgd_iters)
    t0 = time.perf_counter()
    checks = check_stop_gradient(robust, X[:64].copy(), y[:64].copy(), eps)
    check_s = time.perf_counter() - t0

    trained_on = "FGSM" if attack_iters == 1 else f"PGD-{attack_iters}"
    print(f"two moons: {n} training and {n} test points (noise {noise}), MLP 2-{hidden}-1 tanh, "
          f"full-batch Adam, {steps} steps; attacks at eps = {eps} (L-inf)")
    print(f"{'test accuracy':32}{'clean':>8}{'FGSM':>8}{f'PGD-{pgd_iters}':>8}")
    for name, r in [("standard training", before),
                    (f"adversarial ({trained_on}) training", after)]:
        print(f"{name:32}{r['clean']:8.3f}{r['fgsm']:8.3f}{r['pgd']:8.3f}")
    print(f"jitted training: standard {standard_s:.2f} s, adversarial {adversarial_s:.2f} s "
          f"(compiling the gradients and the loops took {compile_s:.2f} s)")
    print("stop_gradient blocks the path through the attack (max diff / max |dL/dtheta|):")
    print(f"  hand-written dL/dX inside L_adv vs adjit.grad(loss, argnums=1): "
          f"{checks['input_grad_error']:.1e}")
    print(f"  FGSM: d L_adv vs dL/dtheta at the fixed X_adv {checks['fgsm_stop_vs_fixed']:.1e}")
    print(f"  L2 attack: d L_adv vs dL/dtheta at the fixed X_adv "
          f"{checks['l2_stop_vs_fixed']:.1e}; without stop_gradient it differs by "
          f"{checks['l2_stop_vs_unstopped']:.1e} (that one vs central differences "
          f"{checks['l2_unstopped_fd_error']:.1e})")
    print(f"  (these checks, compiling three more gradients: {check_s:.2f} s)")
    return {"before": before, "after": after, **checks, "compile_s": compile_s,
            "standard_s": standard_s, "adversarial_s": adversarial_s, "check_s": check_s}


if __name__ == "__main__":
    main()
