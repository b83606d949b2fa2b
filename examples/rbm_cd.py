"""A binary RBM trained by contrastive divergence (CD-1 and CD-k) on bars and stripes.

The data: all 2 * 2^s bars-and-stripes images of s x s pixels (every row pattern repeated
down the image, and every column pattern repeated across it; the blank and the full image
appear twice). A restricted Boltzmann machine with visible units v in {0,1}^V, hidden units
h in {0,1}^H and energy E(v, h) = -b.v - c.h - v.W.h has the free energy

    F(v) = -log sum_h exp(-E(v, h)) = -b.v - sum_j softplus(c_j + (v W)_j),

and p(v) = exp(-F(v)) / Z. The log-likelihood gradient is -<dF/dtheta>_data +
<dF/dtheta>_model; the model expectation is intractable, and contrastive divergence replaces
it by an average over samples v~ obtained by k steps of block Gibbs sampling
(h ~ p(h|v) = sigmoid(v W + c), v ~ p(v|h) = sigmoid(h W^T + b)) started at the data.

The update is the gradient of one scalar objective,

    L(W, b, c) = mean_n F(v_n) - mean_m F(stop_gradient(v~_m)),

with the negative-phase samples held constant. The samples depend on W, b, c (the chain
ran with them), but CD's update ignores that dependence: stop_gradient states it in the
objective, so adjit differentiates only the free energies' explicit dependence on the
parameters. (For binary samples made by thresholding uniforms the dependence has zero
derivative almost everywhere anyway; stop_gradient is what makes the objective mean "CD"
whatever produced v~, for instance mean-field probabilities, which do depend smoothly on W.)
Differentiating, dL/dW = -<v h^T>_data + <v h^T>_model with h = sigmoid(v W + c), the
textbook CD rule, which the example checks against adjit's gradient once.

The Gibbs sampler is @numba.njit code using np.random, and the whole training loop
(sampling the negative phase, calling adjit's gradient of L, the SGD step, measuring the
reconstruction error) is one @numba.njit function. Afterwards many long Gibbs chains from
random images sample the model: the fraction of samples that are exact bars-and-stripes
images, against the fraction among uniformly random images (30 of 65536 for 4 x 4) and
among samples of the untrained RBM.
Run: .venv/bin/python examples/rbm_cd.py
"""
import time

import numba
import numpy as np

import adjit
from adjit import stop_gradient


def mean_free_energy(W, b, c, v):
    """mean over the rows v_n of F(v_n) = -b.v_n - sum_j softplus(c_j + (v_n W)_j)."""
    pre = v @ W + c
    softplus = np.maximum(pre, 0.0) + np.log1p(np.exp(-np.abs(pre)))
    return -np.mean(v @ b) - np.sum(softplus) / v.shape[0]


def cd_objective(W, b, c, v_data, v_model):
    """F(data) - F(model samples); its gradient is minus the CD update."""
    return mean_free_energy(W, b, c, v_data) - mean_free_energy(W, b, c, stop_gradient(v_model))


d_cd = adjit.grad(cd_objective, argnums=(0, 1, 2))


@numba.njit
def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


@numba.njit
def gibbs(W, b, c, v0, k):
    """k steps of block Gibbs sampling v -> h -> v from every row of v0 (a new array)."""
    n, nv = v0.shape
    nh = W.shape[1]
    v = v0.copy()
    h = np.empty(nh)
    for _ in range(k):
        for r in range(n):
            for j in range(nh):                      # h ~ p(h | v) = sigmoid(v W + c)
                a = c[j]
                for i in range(nv):
                    a += v[r, i] * W[i, j]
                h[j] = 1.0 if np.random.random() < sigmoid(a) else 0.0
            for i in range(nv):                      # v ~ p(v | h) = sigmoid(W h + b)
                a = b[i]
                for j in range(nh):
                    a += W[i, j] * h[j]
                v[r, i] = 1.0 if np.random.random() < sigmoid(a) else 0.0
    return v


@numba.njit
def reconstruction_error(W, b, c, data):
    """Mean over images of the squared error of the mean-field reconstruction
    sigmoid(W sigmoid(v W + c) + b)."""
    n, nv = data.shape
    nh = W.shape[1]
    ph = np.empty(nh)
    err = 0.0
    for r in range(n):
        for j in range(nh):
            a = c[j]
            for i in range(nv):
                a += data[r, i] * W[i, j]
            ph[j] = sigmoid(a)
        for i in range(nv):
            a = b[i]
            for j in range(nh):
                a += W[i, j] * ph[j]
            err += (data[r, i] - sigmoid(a)) ** 2
    return err / n


@numba.njit
def train(W, b, c, data, k, epochs, lr, batch, seed):
    """SGD on the CD objective, in place; returns the reconstruction error per epoch."""
    np.random.seed(seed)
    n = data.shape[0]
    recon = np.empty(epochs + 1)
    recon[0] = reconstruction_error(W, b, c, data)
    for epoch in range(epochs):
        order = np.random.permutation(n)
        for start in range(0, n, batch):
            v_data = data[order[start:start + batch]]
            v_model = gibbs(W, b, c, v_data, k)            # the negative phase
            gW, gb, gc = d_cd(W, b, c, v_data, v_model)     # adjit, inside njit
            W -= lr * gW
            b -= lr * gb
            c -= lr * gc
        recon[epoch + 1] = reconstruction_error(W, b, c, data)
    return recon


@numba.njit
def sample_model(W, b, c, n_chains, steps, seed):
    """The last state of n_chains Gibbs chains of `steps` steps from uniform random images."""
    np.random.seed(seed)
    v0 = (np.random.random((n_chains, W.shape[0])) < 0.5).astype(np.float64)
    return gibbs(W, b, c, v0, steps)


def bars_and_stripes(side):
    """All 2 * 2^side images (flattened, float64): stripes (rows) then bars (columns)."""
    images = []
    for bits in range(2 ** side):
        pattern = np.array([(bits >> i) & 1 for i in range(side)], dtype=np.float64)
        images.append(np.repeat(pattern[:, None], side, axis=1))   # row i all pattern[i]
        images.append(np.repeat(pattern[None, :], side, axis=0))   # column j all pattern[j]
    return np.array([im.ravel() for im in images])


def codes(v):
    """Each binary image as an integer."""
    return (v.astype(np.int64) << np.arange(v.shape[1])).sum(axis=1)


def textbook_cd_gradient(W, c, v_data, v_model):
    """<v h^T>_data - <v h^T>_model etc., with h = sigmoid(v W + c): the CD update."""
    hd = 1.0 / (1.0 + np.exp(-(v_data @ W + c)))
    hm = 1.0 / (1.0 + np.exp(-(v_model @ W + c)))
    dW = v_data.T @ hd / v_data.shape[0] - v_model.T @ hm / v_model.shape[0]
    return dW, v_data.mean(axis=0) - v_model.mean(axis=0), hd.mean(axis=0) - hm.mean(axis=0)


def main(side=4, n_hidden=32, ks=(1, 10), epochs=3000, lr=0.1, batch=8, n_chains=1000,
         chain_steps=200, seed=0):
    data = bars_and_stripes(side)
    nv = side * side
    bas = np.unique(codes(data))
    rng = np.random.default_rng(seed)
    W0 = 0.01 * rng.normal(size=(nv, n_hidden))
    b0 = np.zeros(nv)
    c0 = np.zeros(n_hidden)

    t0 = time.perf_counter()                  # compiles adjit's gradient inside train
    train(W0.copy(), b0.copy(), c0.copy(), data, 1, 1, lr, batch, seed)
    sample_model(W0, b0, c0, 2, 2, seed)
    compile_s = time.perf_counter() - t0

    # once: adjit's gradient of L is minus the textbook CD update, at random parameters
    W1 = rng.normal(size=(nv, n_hidden))
    b1, c1 = rng.normal(size=nv), rng.normal(size=n_hidden)
    v_model = (rng.random((20, nv)) < 0.5).astype(np.float64)
    grads = d_cd(W1, b1, c1, data, v_model)
    cd_error = max(np.abs(g + t).max() / np.abs(t).max()
                   for g, t in zip(grads, textbook_cd_gradient(W1, c1, data, v_model)))

    results = dict(cd_gradient_error=cd_error, data_patterns=len(bas),
                   random_fraction=len(bas) / 2.0 ** nv, compile_s=compile_s)
    untrained = sample_model(W0, b0, c0, n_chains, chain_steps, seed + 1)
    results["untrained_fraction"] = float(np.isin(codes(untrained), bas).mean())
    print(f"bars and stripes {side}x{side}: {data.shape[0]} images, {len(bas)} distinct; "
          f"RBM {nv} visible x {n_hidden} hidden")
    print(f"adjit's grad of F(data) - F(stop_gradient(samples)) vs the textbook CD update "
          f"<vh>_data - <vh>_model: max relative difference {cd_error:.1e}")
    print(f"compiled adjit's gradient, the njit training loop and sampler in "
          f"{results['compile_s']:.2f} s")
    for k in ks:
        W, b, c = W0.copy(), b0.copy(), c0.copy()
        t0 = time.perf_counter()
        recon = train(W, b, c, data, k, epochs, lr, batch, seed)
        train_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        samples = sample_model(W, b, c, n_chains, chain_steps, seed + 1)
        sample_s = time.perf_counter() - t0
        ok = np.isin(codes(samples), bas)
        results[f"cd{k}"] = dict(recon_start=float(recon[0]), recon_end=float(recon[-1]),
                                 recon=recon, sample_fraction=float(ok.mean()),
                                 patterns_seen=len(np.unique(codes(samples[ok]))),
                                 train_s=train_s, sample_s=sample_s)
        r = results[f"cd{k}"]
        print(f"CD-{k}: {epochs} epochs of {data.shape[0] // batch} minibatches in "
              f"{train_s:.2f} s; reconstruction error (squared, per image) "
              f"{r['recon_start']:.3f} -> {r['recon_end']:.1e}")
        print(f"      {n_chains} Gibbs chains of {chain_steps} steps from random images "
              f"({sample_s:.2f} s): {100 * r['sample_fraction']:.1f}% exact bars-and-stripes "
              f"images, {r['patterns_seen']} of the {len(bas)} patterns seen")
    print(f"baselines: uniformly random images {100 * results['random_fraction']:.3f}%, "
          f"chains of the untrained RBM {100 * results['untrained_fraction']:.2f}% "
          f"({int(round(results['untrained_fraction'] * n_chains))} of {n_chains})")
    return results


if __name__ == "__main__":
    main()
