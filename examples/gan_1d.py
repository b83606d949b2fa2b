"""A 1-D GAN: a generator learns a two-mode Gaussian mixture from noise, trained with adjit.

Generator G(z; theta_G) and discriminator D(x; theta_D) are 1-16-16-1 tanh MLPs (D returns
a logit), each with its parameters in one flat vector; z ~ N(0, 1) and the data
x ~ 0.3 N(-1, 0.5^2) + 0.7 N(3, 0.6^2). With softplus(t) = log(1 + e^t) the two losses are

    L_D(theta_D, theta_G) = [mean softplus(-D(x_real)) + mean softplus(D(stop_gradient(G(z))))] / 2
    L_G(theta_G, theta_D) = mean softplus(-D(G(z); stop_gradient(theta_D)))

L_D is the cross-entropy of telling real samples from generated ones (one pass of D over
both batches); L_G is the non-saturating generator loss (-log sigmoid(D(G(z))) rather than
log(1 - sigmoid(D(G(z)))), whose gradient does not vanish while D is winning). Training
alternates two Adam steps on theta_D along dL_D/dtheta_D with one on theta_G along
dL_G/dtheta_G (Adam beta1 = 0.5, the usual choice for GANs).

What stop_gradient does here: each loss depends on both players' parameters, but each player
may only move its own. In L_D the generated samples are data: stop_gradient cuts the path
into the generator, so dL_D/dtheta_G = 0 exactly - the discriminator's update cannot flow
into the generator (which would otherwise be pushed to make D's job easier). In L_G the
discriminator's parameters are constants: dL_G/dtheta_D = 0 exactly, while the gradient
still flows *through* D, as a function, to its input G(z) and on to theta_G. The example
asks adjit for both halves, argnums=(0, 1), and reports that the stopped ones are exactly
zero at every training step, although the losses' values do depend on those parameters
(central differences of the same Python functions, where stop_gradient is the identity, are
not zero); the kept halves are checked against central differences.

Both gradients are called from one @numba.njit training loop (sampling included). The
outcome: the generated samples' mean, standard deviation, mass in the right-hand mode and
the overlap of their histogram with the target density, at the start and at the end.
Run: .venv/bin/python examples/gan_1d.py
"""
import math
import time

import numba
import numpy as np

import adjit
from adjit import stop_gradient

HIDDEN = 16
N_PARAMS = 3 * HIDDEN + HIDDEN * HIDDEN + HIDDEN + 1     # W1, b1, W2, b2, w3, b3: 321
WEIGHTS = (0.3, 0.7)          # the target: a mixture of two normals
MEANS = (-1.0, 3.0)
STDS = (0.5, 0.6)
SPLIT = 1.0                   # between the modes
BINS = np.linspace(-4.0, 6.0, 51)


def mlp(theta, x):
    """A 1-h-h-1 tanh network on a batch x (1-D); theta = [W1, b1, W2 (row-major), b2, w3, b3]."""
    h = HIDDEN
    H1 = np.tanh(x[:, None] * theta[:h] + theta[h:2 * h])
    W2 = theta[2 * h:2 * h + h * h].reshape(h, h)
    H2 = np.tanh(H1 @ W2.T + theta[2 * h + h * h:3 * h + h * h])
    return H2 @ theta[3 * h + h * h:4 * h + h * h] + theta[4 * h + h * h]


def softplus(t):
    return np.maximum(t, 0.0) + np.log1p(np.exp(-np.abs(t)))


def d_loss(theta_d, theta_g, x_real, z):
    """The discriminator's loss on real and generated samples; the generated ones are
    constants. One pass of D over both: the label sign s is +1 for real, -1 for generated."""
    x = np.concatenate((x_real, stop_gradient(mlp(theta_g, z))))
    s = np.concatenate((np.ones(x_real.shape[0]), -np.ones(z.shape[0])))
    return np.mean(softplus(-s * mlp(theta_d, x)))


def g_loss(theta_g, theta_d, z):
    """The non-saturating generator loss; the discriminator's parameters are constants."""
    return np.mean(softplus(-mlp(stop_gradient(theta_d), mlp(theta_g, z))))


d_grad = adjit.grad(d_loss, argnums=(0, 1))    # (dL_D/dtheta_D, dL_D/dtheta_G = 0)
g_grad = adjit.grad(g_loss, argnums=(0, 1))    # (dL_G/dtheta_G, dL_G/dtheta_D = 0)


@numba.njit
def sample_target(n):
    x = np.empty(n)
    for i in range(n):
        k = 0 if np.random.random() < WEIGHTS[0] else 1
        x[i] = MEANS[k] + STDS[k] * np.random.standard_normal()
    return x


@numba.njit
def adam(theta, g, m, v, t, lr):
    b1, b2 = 0.5, 0.999
    c1 = 1.0 - b1 ** t
    c2 = 1.0 - b2 ** t
    for k in range(theta.shape[0]):
        m[k] = b1 * m[k] + (1.0 - b1) * g[k]
        v[k] = b2 * v[k] + (1.0 - b2) * g[k] * g[k]
        theta[k] -= lr * (m[k] / c1) / (math.sqrt(v[k] / c2) + 1e-8)


@numba.njit
def train(theta_d, theta_g, steps, batch, lr_d, lr_g, d_steps, seed):
    """Alternating Adam steps in place; returns the largest |stopped gradient| seen (0.0)."""
    np.random.seed(seed)
    md, vd = np.zeros_like(theta_d), np.zeros_like(theta_d)
    mg, vg = np.zeros_like(theta_g), np.zeros_like(theta_g)
    stopped = 0.0
    td = 0
    for t in range(1, steps + 1):
        for _ in range(d_steps):
            td += 1
            x_real = sample_target(batch)
            z = np.random.standard_normal(batch)
            gd, gd_to_g = d_grad(theta_d, theta_g, x_real, z)
            adam(theta_d, gd, md, vd, td, lr_d)
            stopped = max(stopped, np.abs(gd_to_g).max())
        z = np.random.standard_normal(batch)
        gg, gg_to_d = g_grad(theta_g, theta_d, z)
        adam(theta_g, gg, mg, vg, t, lr_g)
        stopped = max(stopped, np.abs(gg_to_d).max())
    return stopped


@numba.njit
def generate(theta_g, z):
    h = HIDDEN
    out = np.empty(z.shape[0])
    h1 = np.empty(h)
    for i in range(z.shape[0]):
        for j in range(h):
            h1[j] = math.tanh(theta_g[j] * z[i] + theta_g[h + j])
        s = theta_g[4 * h + h * h]
        for j in range(h):
            a = theta_g[2 * h + h * h + j]
            for k in range(h):
                a += theta_g[2 * h + j * h + k] * h1[k]
            s += theta_g[3 * h + h * h + j] * math.tanh(a)
        out[i] = s
    return out


def target_pdf(x):
    return sum(w / (s * np.sqrt(2 * np.pi)) * np.exp(-0.5 * ((x - m) / s) ** 2)
               for w, m, s in zip(WEIGHTS, MEANS, STDS))


def target_moments():
    mean = sum(w * m for w, m in zip(WEIGHTS, MEANS))
    second = sum(w * (s * s + m * m) for w, m, s in zip(WEIGHTS, MEANS, STDS))
    return mean, math.sqrt(second - mean * mean)


def describe(x):
    """Mean, std, mass right of SPLIT (the target: 0.7) and histogram overlap with the density."""
    edges = BINS
    hist, _ = np.histogram(x, bins=edges)
    p = hist / x.shape[0]
    mid = 0.5 * (edges[1:] + edges[:-1])
    q = target_pdf(mid) * (edges[1] - edges[0])
    return {"mean": float(np.mean(x)), "std": float(np.std(x)),
            "right_mass": float(np.mean(x > SPLIT)), "overlap": float(np.minimum(p, q).sum())}


def init(rng):
    h = HIDDEN
    return np.concatenate([rng.normal(size=h), 0.5 * rng.normal(size=h),
                           rng.normal(size=h * h) / np.sqrt(h), np.zeros(h),
                           rng.normal(size=h) / np.sqrt(h), np.zeros(1)])


def check_gradients(theta_d, theta_g, rng, n=64, coords=12, h=1e-6):
    """Central differences of the plain Python losses (stop_gradient is the identity on
    values) on a few random coordinates: the kept halves match adjit's; the losses do depend
    on the stopped parameters (non-zero differences) while adjit's stopped halves are 0."""
    x_real = sample_target(n)
    z = rng.normal(size=n)
    gd, d_to_g = d_grad(theta_d, theta_g, x_real, z)
    gg, g_to_d = g_grad(theta_g, theta_d, z)
    fd_err = 0.0
    cross = 0.0
    for k in rng.choice(N_PARAMS, coords, replace=False):
        e = np.zeros(N_PARAMS)
        e[k] = h
        fd_dd = (d_loss(theta_d + e, theta_g, x_real, z)
                 - d_loss(theta_d - e, theta_g, x_real, z)) / (2 * h)
        fd_gg = (g_loss(theta_g + e, theta_d, z) - g_loss(theta_g - e, theta_d, z)) / (2 * h)
        fd_dg = (d_loss(theta_d, theta_g + e, x_real, z)
                 - d_loss(theta_d, theta_g - e, x_real, z)) / (2 * h)
        fd_gd = (g_loss(theta_g, theta_d + e, z) - g_loss(theta_g, theta_d - e, z)) / (2 * h)
        fd_err = max(fd_err, abs(fd_dd - gd[k]) / np.abs(gd).max(),
                     abs(fd_gg - gg[k]) / np.abs(gg).max())
        cross = max(cross, abs(fd_dg), abs(fd_gd))
    return {"stopped_halves": float(max(np.abs(d_to_g).max(), np.abs(g_to_d).max())),
            "cross_fd": float(cross), "fd_error": float(fd_err)}


def main(steps=3000, batch=128, lr_d=2e-3, lr_g=1e-3, d_steps=2, samples=20000, seed=0):
    rng = np.random.default_rng(seed)
    theta_d = init(rng)
    theta_g = init(rng)
    z_eval = rng.normal(size=samples)
    target_mean, target_std = target_moments()
    start = describe(generate(theta_g, z_eval))

    t0 = time.perf_counter()
    train(theta_d.copy(), theta_g.copy(), 1, batch, lr_d, lr_g, d_steps, seed)
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    stopped = train(theta_d, theta_g, steps, batch, lr_d, lr_g, d_steps, seed)
    train_s = time.perf_counter() - t0
    end = describe(generate(theta_g, z_eval))
    t0 = time.perf_counter()
    checks = check_gradients(theta_d, theta_g, rng)
    check_s = time.perf_counter() - t0

    print(f"1-D GAN, G and D 1-{HIDDEN}-{HIDDEN}-1 tanh ({N_PARAMS} parameters each), target "
          + " + ".join(f"{w} N({m}, {s}^2)" for w, m, s in zip(WEIGHTS, MEANS, STDS)))
    print(f"{steps} generator steps ({d_steps} discriminator steps each), batch {batch}, Adam: "
          f"{train_s:.2f} s jitted (compiling the gradients and the loop took {compile_s:.2f} s)")
    print(f"{'':22}{'mean':>8}{'std':>8}{f'P(x>{SPLIT:g})':>10}{'overlap':>9}")
    print(f"{'target':22}{target_mean:8.3f}{target_std:8.3f}{WEIGHTS[1]:10.3f}{1.0:9.3f}")
    for name, r in [("generated, start", start), ("generated, end", end)]:
        print(f"{name:22}{r['mean']:8.3f}{r['std']:8.3f}{r['right_mass']:10.3f}"
              f"{r['overlap']:9.3f}")
    print(f"({samples} generated samples; overlap: the sum over {BINS.shape[0] - 1} bins on "
          f"[{BINS[0]:g}, {BINS[-1]:g}] of min(generated fraction, target mass))")
    print(f"stop_gradient: adjit's dL_D/dtheta_G and dL_G/dtheta_D are exactly 0 at every "
          f"training step (largest: {stopped:g}), though the losses' values do depend on those "
          f"parameters (central differences up to {checks['cross_fd']:.1e})")
    print(f"dL_D/dtheta_D and dL_G/dtheta_G vs central differences: max rel. diff "
          f"{checks['fd_error']:.1e} ({check_s:.2f} s)")
    return {"target_mean": target_mean, "target_std": target_std, "target_right_mass": WEIGHTS[1],
            "start": start, "end": end, "stopped_during_training": stopped, **checks,
            "compile_s": compile_s, "train_s": train_s, "check_s": check_s}


if __name__ == "__main__":
    main()
