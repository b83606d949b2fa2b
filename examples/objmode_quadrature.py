"""Python inside numba code: `with numba.objmode(...)` blocks in a function adjit
differentiates.

numba users reach Python from compiled code with object-mode blocks: to call a library numba
cannot compile, to time a step, to print progress. Here an @njit model takes its
Gauss-Legendre nodes and weights from numpy's `leggauss` (which numba does not compile) in a
block with two outputs, and the loss logs each evaluation from another block. adjit keeps
each block as the call numba makes: it runs once per evaluation, in order, its outputs are
constants for differentiation, and the gradient flows through everything around it.

The model: the decay of a damped oscillator, y(t) = exp(-k t) cos(w t), fitted to noisy
samples on [0, 3] by least squares, with the energy of the model, the integral of y(t)^2
over [0, 3], as a penalty (a quadrature: this is where the nodes and weights are used). The
gradient in (k, w) is checked against central differences of numba's compile of the same
loss, then scipy's L-BFGS-B fits the two.
Run: .venv/bin/python examples/objmode_quadrature.py
"""
import math

import numpy as np
import scipy.optimize
from numba import njit, objmode

import adjit


@njit
def energy(k, w, a, b, n):
    """The integral of exp(-2 k t) cos(w t)^2 over [a, b], by n-point Gauss-Legendre."""
    with objmode(nodes="float64[:]", weights="float64[:]"):
        nodes, weights = np.polynomial.legendre.leggauss(n)
    half, mid = 0.5 * (b - a), 0.5 * (b + a)
    s = 0.0
    for i in range(n):
        t = mid + half * nodes[i]
        y = math.exp(-k * t) * math.cos(w * t)
        s += weights[i] * y * y
    return half * s


def loss(params, t, data, penalty):
    k, w = params[0], params[1]
    r = 0.0
    for i in range(t.shape[0]):
        r += (math.exp(-k * t[i]) * math.cos(w * t[i]) - data[i]) ** 2
    value = r + penalty * energy(k, w, 0.0, 3.0, 24)
    with objmode():
        print("  loss at k =", round(k, 5), "w =", round(w, 5), ":", round(value, 6))
    return value


def main(verbose=True):
    rng = np.random.default_rng(7)
    t = np.linspace(0.0, 3.0, 60)
    k_true, w_true = 0.8, 4.0
    data = np.exp(-k_true * t) * np.cos(w_true * t) + 0.02 * rng.normal(size=t.shape[0])
    penalty = 1e-3
    value_and_grad = adjit.value_and_grad(loss)

    start = np.array([0.5, 3.6])
    value, g = value_and_grad(start, t, data, penalty)
    compiled = njit(loss)
    h = 1e-6
    fd = np.array([(compiled(start + h * e, t, data, penalty) -
                    compiled(start - h * e, t, data, penalty)) / (2.0 * h)
                   for e in np.eye(2)])
    grad_fd_error = float(np.max(np.abs(g - fd)) / np.max(np.abs(fd)))
    print(f"gradient at the start {g}, central differences {fd}: relative error "
          f"{grad_fd_error:.1e}")
    # the quadrature against a fine trapezoid rule of the same integral
    tt = np.linspace(0.0, 3.0, 200_001)
    yy = (np.exp(-start[0] * tt) * np.cos(start[1] * tt)) ** 2
    trapezoid = float(np.sum(0.5 * (yy[1:] + yy[:-1])) * (tt[1] - tt[0]))
    quadrature_error = abs(energy(start[0], start[1], 0.0, 3.0, 24) - trapezoid)

    fit = scipy.optimize.minimize(lambda p: value_and_grad(p, t, data, penalty), start,
                                  jac=True, method="L-BFGS-B")
    k, w = fit.x
    print(f"fitted k = {k:.4f} (drawn with {k_true}), w = {w:.4f} (drawn with {w_true}), "
          f"{fit.nit} iterations, loss {fit.fun:.6f}")
    return {"grad_fd_error": grad_fd_error, "quadrature_error": quadrature_error,
            "success": bool(fit.success), "k": k, "w": w, "loss0": value, "loss": fit.fun}


if __name__ == "__main__":
    main()
