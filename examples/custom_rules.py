"""Derivatives of your own with custom_vjp: a stable softplus, clipped cotangents, and a
straight-through estimator.

1. Logistic regression on well-separated data: margins reach hundreds, where
   log(1 + exp(m)) overflows and its derivative (inf / inf) is NaN. A custom rule makes
   the loss and its gradient finite and exact, without changing the loss code.
2. A recurrence whose hidden state's cotangent is clipped at every step (gradient clipping
   through time, as in training recurrent networks).
3. Rounding with the identity as its derivative (a straight-through estimator): the
   gradient a quantized model is trained with.
4. An implicit function (custom_root): a position on a Kepler orbit, through Newton's
   method on Kepler's equation in a while loop; the solution is differentiated by the
   implicit function theorem, not through the iterations.

Run: python examples/custom_rules.py
"""
import math

import numba
import numpy as np

from adjit import custom_root, custom_vjp, grad, value_and_grad


# 1. a stable softplus ---------------------------------------------------------------------

@custom_vjp
def softplus(m):
    return math.log(1.0 + math.exp(m))


def softplus_fwd(m):
    if m > 0.0:
        return m + math.log1p(math.exp(-m)), m
    return math.log1p(math.exp(m)), m


def softplus_bwd(m, g):
    return (g / (1.0 + math.exp(-m)),)


softplus.defvjp(softplus_fwd, softplus_bwd)


def logistic_loss(w, X, y):
    """Mean of log(1 + exp(-y_i <w, x_i>)), written as a loop over the samples."""
    total = 0.0
    for i in range(X.shape[0]):
        margin = 0.0
        for j in range(X.shape[1]):
            margin += X[i, j] * w[j]
        total += softplus(-y[i] * margin)
    return total / X.shape[0]


def naive_logistic_loss(w, X, y):
    total = 0.0
    for i in range(X.shape[0]):
        margin = 0.0
        for j in range(X.shape[1]):
            margin += X[i, j] * w[j]
        total += math.log(1.0 + math.exp(-y[i] * margin))
    return total / X.shape[0]


def logistic_grad_by_hand(w, X, y):
    m = -y * (X @ w)
    with np.errstate(over="ignore"):        # exp(-m) = inf where m << 0: sigmoid 0, exact
        sigmoid = 1.0 / (1.0 + np.exp(-m))
    return X.T @ (-y * sigmoid) / X.shape[0]


# 2. clipped cotangents through time --------------------------------------------------------

@custom_vjp
def clip_gradient(x, bound):
    return x


def clip_gradient_fwd(x, bound):
    return x, bound


def clip_gradient_bwd(bound, g):
    return (min(max(g, -bound), bound), 0.0)


clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)


def rnn_loss(w, xs, bound):
    h = 0.0
    for t in range(xs.shape[0]):
        h = clip_gradient(math.tanh(w * h + xs[t]), bound)
    return 50.0 * h


# 3. a straight-through estimator -----------------------------------------------------------

@custom_vjp
def round_ste(x):
    return float(round(x))


def round_ste_fwd(x):
    return float(round(x)), None


def round_ste_bwd(res, g):
    return (g,)


round_ste.defvjp(round_ste_fwd, round_ste_bwd)


def quantized_fit(scale, xs, ys):
    """Squared error of a model whose outputs are rounded to integers."""
    err = 0.0
    for i in range(xs.shape[0]):
        err += (round_ste(scale * xs[i]) - ys[i]) ** 2
    return err


# 4. an implicit function --------------------------------------------------------------------

@numba.njit
def kepler(E, M, e):
    return E - e * math.sin(E) - M


@custom_root(kepler)
def eccentric_anomaly(M, e, E0):
    E = E0
    while True:
        step = kepler(E, M, e) / (1.0 - e * math.cos(E))
        E -= step
        if abs(step) < 1e-14:
            return E


def orbit_x(M, e):
    return math.cos(eccentric_anomaly(M, e, M)) - e


def main():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    w_true = np.array([400.0, -250.0, 100.0])      # separable, with huge margins
    y = np.sign(X @ w_true)
    w = 0.9 * w_true + np.array([0.0, 600.0, 0.0])     # misclassifies some, by hundreds
    loss, g = value_and_grad(logistic_loss)(w, X, y)
    with np.errstate(over="ignore", invalid="ignore"):
        naive = grad(naive_logistic_loss)(w, X, y)
    by_hand = logistic_grad_by_hand(w, X, y)
    err = np.max(np.abs(g - by_hand)) / np.max(np.abs(by_hand))
    print(f"1. logistic loss {loss:.3e}; largest margin {np.max(np.abs(X @ w)):.0f}")
    print(f"   gradient with the rule {g}, by hand {by_hand} (rel. error {err:.1e})")
    print(f"   the loss code's own derivative (no rule): {naive}")

    xs = np.array([0.9, -0.4, 1.3, 0.2, -1.1, 0.6])
    clipped = grad(rnn_loss)(1.4, xs, 0.5)
    unclipped = grad(rnn_loss)(1.4, xs, 1e300)
    print(f"2. recurrence: d loss / d w = {clipped:.4f} clipped at 0.5 per step, "
          f"{unclipped:.4f} unclipped")

    xs = np.linspace(0.0, 3.0, 7)
    ys = np.round(2.0 * xs)
    scale, step = 1.2, 0.02
    for _ in range(60):
        scale -= step * grad(quantized_fit)(scale, xs, ys)
    print(f"3. quantized fit: scale {scale:.3f} (every scale rounding to ys fits), error "
          f"{quantized_fit(scale, xs, ys):.1f}")

    M, e = 1.1, 0.4
    dM, de = grad(orbit_x, argnums=(0, 1))(M, e)
    E = eccentric_anomaly(M, e, M)
    by_hand = (-math.sin(E) / (1.0 - e * math.cos(E)),
               -math.sin(E) ** 2 / (1.0 - e * math.cos(E)) - 1.0)
    kepler_err = max(abs(dM - by_hand[0]), abs(de - by_hand[1]))
    print(f"4. Kepler orbit: dx/dM = {dM:.12f}, dx/de = {de:.12f} (by hand {by_hand[0]:.12f}, "
          f"{by_hand[1]:.12f})")
    return {"loss_finite": bool(np.isfinite(loss)), "grad_error": float(err),
            "kepler_error": kepler_err,
            "naive_broken": not np.all(np.isfinite(naive)),
            "clipped": clipped, "unclipped": unclipped,
            "quantized_error": quantized_fit(scale, xs, ys), "scale": scale}


if __name__ == "__main__":
    main()
