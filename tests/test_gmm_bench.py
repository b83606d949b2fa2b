"""benchmarks/gmm_bench.py: ADBench's GMM objective, its hand-written adjoint and adjit's
gradient, at a tiny size.

The oracles are independent of adjit: the objective is checked against a vectorized
numpy/scipy implementation of ADBench's formula (scipy.special.logsumexp and multigammaln),
the hand adjoint against central finite differences of the njit objective, and adjit's
gradient (of the range and of the prange variant) against the hand adjoint.
"""
import math
import os
import sys

import numpy as np
import pytest
from scipy.special import logsumexp, multigammaln

import adjit

from fd import fd_grad

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "benchmarks"))
import gmm_bench  # noqa: E402

D, K, N = 3, 4, 20


def reference_objective(alphas, means, icf, x, gamma, m):
    """ADBench's GMM objective, vectorized with numpy/scipy (no loops over points)."""
    n, d = x.shape
    k = alphas.shape[0]
    Q = np.zeros((k, d, d))
    Q[:, np.arange(d), np.arange(d)] = np.exp(icf[:, :d])
    # strictly lower triangle, stored column by column
    cols, rows = zip(*[(c, r) for c in range(d) for r in range(c + 1, d)]) if d > 1 else ((), ())
    Q[:, list(rows), list(cols)] = icf[:, d:]
    xc = x[:, None, :] - means[None, :, :]                # (n, k, d)
    Qxc = np.einsum("krc,nkc->nkr", Q, xc)
    main = alphas[None, :] + icf[:, :d].sum(axis=1)[None, :] - 0.5 * (Qxc ** 2).sum(axis=2)
    n_w = d + m + 1
    C = n_w * d * (math.log(gamma) - 0.5 * math.log(2.0)) - multigammaln(0.5 * n_w, d)
    prior = (0.5 * gamma ** 2 * ((np.exp(icf[:, :d]) ** 2).sum() + (icf[:, d:] ** 2).sum())
             - m * icf[:, :d].sum() - k * C)
    return (-0.5 * n * d * math.log(2 * math.pi) + logsumexp(main, axis=1).sum()
            - n * logsumexp(alphas) + prior)


@pytest.fixture(scope="module")
def args():
    alphas, means, icf, x, _, _ = gmm_bench.make_inputs(D, K, N, seed=7)
    return alphas, means, icf, x, 1.3, 2     # gamma != 1 and m != 0: every prior term counts


def test_objective_matches_numpy_reference(args):
    got = gmm_bench.gmm_objective(*args)
    want = reference_objective(*args)
    assert got == pytest.approx(want, rel=1e-12)
    assert gmm_bench.gmm_objective_prange(*args) == pytest.approx(want, rel=1e-12)


def test_icf_layout_is_column_major_lower_triangle():
    # d = 4: icf[4:] = (L10, L20, L30, L21, L31, L32), column by column (row by row would be
    # L10, L20, L21, L30, ...). Only icf[0, 4 + 2] = 3 is set: column-major, that is L[3, 0],
    # so Q e_0 = (1, 0, 0, 3) and the point e_0 costs |Q e_0|^2 / 2 = 5 against the point 0.
    d = 4
    icf = np.zeros((1, d * (d + 1) // 2))
    icf[0, d + 2] = 3.0
    means = np.zeros((1, d))
    alphas = np.zeros(1)
    e0 = np.zeros((1, d))
    e0[0, 0] = 1.0
    zero = np.zeros((1, d))
    for f in (gmm_bench.gmm_objective, reference_objective):
        delta = f(alphas, means, icf, e0, 1.0, 0) - f(alphas, means, icf, zero, 1.0, 0)
        assert delta == pytest.approx(-5.0, rel=1e-12), f.__name__


def test_hand_adjoint_matches_finite_differences(args):
    hand = gmm_bench.gmm_hand_grad(*args)
    for k in range(3):
        fd = fd_grad(gmm_bench.gmm_objective, args, k, h=1e-6)
        assert hand[k].shape == args[k].shape
        np.testing.assert_allclose(hand[k], fd, rtol=1e-6, atol=1e-6,
                                   err_msg=f"hand adjoint, argument {k}")


def test_adjit_gradient_matches_hand_adjoint(args):
    g = adjit.grad(gmm_bench.gmm_objective, argnums=(0, 1, 2))
    got = g(*args)
    hand = gmm_bench.gmm_hand_grad(*args)
    for k in range(3):
        np.testing.assert_allclose(got[k], hand[k], rtol=1e-9, atol=1e-11,
                                   err_msg=f"adjit vs hand adjoint, argument {k}")
    assert g.last_tape.total_bytes > 0


def test_adjit_prange_gradient_matches_hand_adjoint(args):
    g = adjit.grad(gmm_bench.gmm_objective_prange, argnums=(0, 1, 2))
    got = g(*args)
    hand = gmm_bench.gmm_hand_grad(*args)
    for k in range(3):
        np.testing.assert_allclose(got[k], hand[k], rtol=1e-9, atol=1e-11,
                                   err_msg=f"adjit prange vs hand adjoint, argument {k}")
