"""The examples run and reach what they claim."""
import importlib.util
import pathlib
import sys

import numpy as np
import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def load(name):
    """The example imported as a module (in sys.modules, as `import` puts it: numba
    resolves a recursive @njit function's call of itself through its module there)."""
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["quickstart", "stop_gradient_softmax"])
def test_example_runs(name, capsys):
    load(name).main()
    assert capsys.readouterr().out


def test_relax_cluster_lowers_the_energy():
    e0, e1 = load("relax_cluster").main(n_side=2, steps=300)
    assert e1 < e0


def test_stable_softmax_matches_the_analytic_jacobian(capsys):
    r = load("stable_softmax").main()
    assert capsys.readouterr().out
    assert r["jacobian_error"] < 1e-14 and r["jvp_error"] < 1e-14
    assert r["lse_grad_error"] < 1e-14
    # logits around 1000: the stable versions are finite and exact, the naive ones are not
    assert r["big_finite"] and r["naive_broken"]
    assert r["big_vjp_error"] < 1e-14 and r["big_lse_grad_error"] < 1e-14
    assert r["big_lse_error"] < 1e-12
    # ties at the maximum
    assert r["ties_identical"]
    assert r["ties_error"] < 1e-14 and r["ties_unstopped_diff"] < 1e-14
    assert np.array_equal(r["flat_gradient"], np.full(4, 0.25))


def test_logistic_regression_recovers_the_weights(capsys):
    r = load("logistic_regression").main()
    assert capsys.readouterr().out
    assert r["success"] and r["grad_norm"] < 1e-4
    assert r["grad_fd_error"] < 1e-7
    assert np.abs(r["w"] - r["w_true"]).max() < 0.35
    assert r["accuracy"] >= r["bayes_accuracy"] - 0.01 and r["accuracy"] > 0.85


def test_gaussian_process_fit_recovers_the_hyperparameters(capsys):
    r = load("gaussian_process").main()
    assert capsys.readouterr().out
    assert r["grad_fd_error"] < 1e-6
    assert r["success"] and r["grad_norm"] < 1e-3 and r["nlml"] < r["value0"] - 30.0
    # the data were drawn with ell = 0.7, sf = 1.3, sn = 0.1 (80 points: estimates)
    assert 0.5 < r["ell"] < 0.9 and 0.8 < r["sf"] < 1.8 and 0.05 < r["sn"] < 0.15


def test_newton_hvp_converges_and_the_laplace_covariance_is_a_covariance(capsys):
    r = load("newton_hvp").main(n_side=2, newton_steps=40)
    assert capsys.readouterr().out
    assert r["e1"] < r["e0"] and r["gnorm"] < 1e-6 and r["steps"] < 40
    assert np.sum(np.abs(r["eig"]) < 1e-5) == 6 and r["eig"].min() > -1e-5
    assert np.all(np.linalg.eigvalsh(r["cov"]) > 0)
    # the MAP is a stationary point of the log posterior (its gradient by numpy, by hand)
    X, y, w = r["X"], r["y"], r["w"]
    s = 1.0 / (1.0 + np.exp(y * (X @ w)))
    np.testing.assert_allclose(X.T @ (y * s) - w, 0.0, atol=1e-10)


def test_custom_rules_are_used(capsys):
    r = load("custom_rules").main()
    assert capsys.readouterr().out
    assert r["loss_finite"] and r["naive_broken"]       # the rule, not the code's derivative
    assert r["grad_error"] < 1e-13                      # = the analytic gradient
    assert abs(r["clipped"]) < 0.5 * abs(r["unclipped"])
    assert r["quantized_error"] == 0.0
    assert r["kepler_error"] < 1e-13


def test_monte_carlo_greeks_are_the_pathwise_derivatives(capsys):
    r = load("monte_carlo_greeks").main(n_paths=2000, n_steps=20)
    assert capsys.readouterr().out
    # the same draws in every evaluation: finite differences of the function agree
    assert r["fd_error"] < 1e-6
    # within the Monte Carlo error of Black-Scholes' delta, vega and rho
    assert abs(r["grad"][0] - r["exact"][0]) < 0.03
    np.testing.assert_allclose(r["grad"][1:], r["exact"][1:], rtol=0.1)


def test_brusselator_integrates_with_the_sparse_jacobian(capsys):
    results = load("brusselator_sparse").main(n=6, t_end=1.0)
    assert capsys.readouterr().out
    sparse, colored = results.values()
    assert sparse.success and colored.success
    np.testing.assert_allclose(sparse.y[:, -1], colored.y[:, -1], rtol=1e-5)


def test_vector_math_gives_the_same_gradient(capsys):
    r = load("vector_math").main(n=64, hidden=32)
    assert capsys.readouterr().out
    assert r["value_diff"] < 1e-14 and r["grad_diff"] < 1e-13
    assert any("vmath.tanh" in line for line in r["vmath_lines"])
    assert r["blocks"] and r["nll_diff"] < 1e-12


def test_objmode_quadrature_fit(capsys):
    r = load("objmode_quadrature").main()
    out = capsys.readouterr().out
    assert r["grad_fd_error"] < 1e-7 and r["quadrature_error"] < 1e-9
    assert r["success"] and r["loss"] < 0.05 * r["loss0"]
    # drawn with k = 0.8, w = 4.0 and noise 0.02 on 60 points (estimates)
    assert abs(r["k"] - 0.8) < 0.03 and abs(r["w"] - 4.0) < 0.05
    # one line per evaluation: the block ran once for each (the gradient's included)
    assert out.count("loss at k =") >= 5


def test_special_function_fits_recover_the_parameters(capsys):
    r = load("special_fit").main()
    assert capsys.readouterr().out
    assert r["gamma_fd_error"] < 1e-5 and r["t_fd_error"] < 1e-5
    assert r["gamma_success"] and r["gamma_grad_drop"] < 1e-4
    assert r["t_success"] and r["t_grad_drop"] < 1e-4
    # drawn with shape 2.5, scale 1.5 and df 3, loc 0.5, scale 1.2 (20,000 points: estimates)
    assert abs(r["gamma_shape"] - 2.5) < 0.15 and abs(r["gamma_scale"] - 1.5) < 0.1
    assert abs(r["t_df"] - 3.0) < 0.4 and abs(r["t_loc"] - 0.5) < 0.05 and \
        abs(r["t_scale"] - 1.2) < 0.06


def test_barrier_greeks_call_the_outlined_normcdf(capsys):
    r = load("barrier_greeks").main()
    assert capsys.readouterr().out
    assert r["worst"] < 1e-6
    assert r["outlined"] >= 10 and r["lines"] < 600
