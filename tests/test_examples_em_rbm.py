"""The stop_gradient examples em_gmm (EM for a Gaussian mixture, M-step by gradient ascent)
and rbm_cd (contrastive divergence for an RBM) run at small sizes and reach what they claim.
Each example runs once per module (its gradients compile once)."""
import importlib.util
import pathlib

import numpy as np
import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def em():
    return load("em_gmm").main(n=2000, n_em=100, seed=0)


@pytest.fixture(scope="module")
def rbm():
    return load("rbm_cd").main(side=4, n_hidden=32, ks=(1, 3), epochs=1000, n_chains=500,
                               chain_steps=100, seed=0)


def test_em_recovers_the_true_parameters(em):
    assert em["loglik_monotone"]                       # generalized EM never goes down
    assert em["loglik"][-1] > em["loglik"][0] + 100
    assert np.abs(em["pi"] - em["pi_true"]).max() < 0.04
    assert np.abs(em["mu"] - em["mu_true"]).max() < 0.15
    assert np.abs(em["sigma"] - em["sigma_true"]).max() < 0.1


def test_em_gradient_m_step_reaches_the_closed_form_fixed_point(em):
    assert em["grad_logp_at_fit"] < 1e-6               # a stationary point of log p(x)
    assert em["fixed_point_diff"] < 1e-5
    for name in ("pi", "mu", "sigma"):
        np.testing.assert_allclose(em[name], em[name + "_cf"], atol=1e-5)


def test_em_fisher_identity(em):
    # grad of Q(theta | theta) with r stopped == grad log p(x)
    assert em["fisher_rel_start"] < 1e-8 and em["fisher_rel_mid"] < 1e-8
    assert em["fisher_abs_fit"] < 1e-8 * em["grad_logp_scale"]


def test_em_without_stop_gradient_adds_the_entropy_gradient(em):
    # q_unstopped = log p - H(r): values and gradients
    assert em["entropy_value_error"] < 1e-8
    assert em["entropy_rel_start"] < 1e-8 and em["entropy_rel_fit"] < 1e-8
    assert em["entropy_diff_fit"] > 1.0                # a real difference, not rounding
    # ascending it hardens the responsibilities at the cost of the likelihood
    assert em["entropy_unstopped"] < 0.9 * em["entropy_fit"]
    assert em["loglik_unstopped"] < em["loglik_fit"]


def test_rbm_cd_gradient_is_the_textbook_update(rbm):
    assert rbm["cd_gradient_error"] < 1e-12


@pytest.mark.parametrize("k", [1, 3])
def test_rbm_learns_bars_and_stripes(rbm, k):
    r = rbm[f"cd{k}"]
    assert r["recon_end"] < r["recon_start"] / 100
    assert r["sample_fraction"] > 0.6
    assert r["sample_fraction"] > 100 * rbm["random_fraction"]
    assert r["sample_fraction"] > 20 * max(rbm["untrained_fraction"], 1e-3)
    assert r["patterns_seen"] >= 20
