"""The simulation examples (heat_inverse, lj_md, pendulum_fit) run at small sizes and reach
what they claim."""
import importlib.util
import pathlib

import numpy as np

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_heat_inverse_recovers_diffusivity_and_initial_profile(capsys):
    r = load("heat_inverse").main(n=64, steps=300)
    assert capsys.readouterr().out
    assert r["grad_fd_error"] < 1e-6
    assert r["nit"] > 10
    # the data are fitted to the noise level, not below it and not far above
    assert 0.5 * r["noise"] < r["misfit_rms"] < 1.5 * r["noise"]
    assert r["alpha_error"] < 0.02                      # started 50% off
    # u0 is ill-determined in its fine detail; the fit must still be much better than the
    # last measurement it started from
    assert r["u0_rel_error"] < 0.15
    assert r["u0_rel_error"] < 0.5 * r["start_u0_rel_error"]


def test_heat_inverse_loss_matches_its_jitted_copy():
    m = load("heat_inverse")
    rng = np.random.default_rng(3)
    u0 = rng.random(20)
    u_mid, u_end = rng.random(20), rng.random(20)
    args = (0.7, 0.25, 30, u_mid, u_end, 1e-3)
    np.testing.assert_allclose(m.loss(u0, *args), m.loss_njit(u0, *args), rtol=1e-13)


def test_lj_md_forces_and_energy_conservation(capsys):
    r = load("lj_md").main(n_atoms=13, steps=2000)
    assert capsys.readouterr().out
    assert r["force_error"] < 1e-12
    assert r["drift"] < 1e-4 and r["end_drift"] < 1e-4
    # the adjit forces give the same trajectory energy as the analytic forces
    assert abs(r["drift"] - r["drift_analytic"]) < 1e-8
    assert r["bound"] and r["displacement"] > 0.01        # the atoms did move


def test_pendulum_fit_recovers_the_parameters(capsys):
    r = load("pendulum_fit").main(steps=10_000)
    assert capsys.readouterr().out
    assert r["success"]
    assert r["grad_fd_error"] < 1e-6
    assert abs(r["w2"] - r["w2_true"]) / r["w2_true"] < 0.01     # started at 7.0 vs 9.81
    assert abs(r["c"] - r["c_true"]) < 0.03                     # started at 1.0 vs 0.3
    assert r["rms"] < 1.5 * r["noise"]
    # checkpointed within a 1 MB tape limit (the example's default): bit-identical to the
    # recorded gradient, in far less memory
    assert r["same_bits"]
    assert r["tape_bytes"] < r["recorded_tape_bytes"] / 10
    # a snapshot at each block: every step twice, but for the last block's (recorded by the
    # first pass)
    assert 1.9 < r["recompute_factor"] < 2.0


def test_pendulum_fit_without_a_tape_limit_records_every_step(capsys):
    """checkpoint="auto" with the memory: a step records 4 numbers, so every step is
    recorded by the first pass and runs once."""
    r = load("pendulum_fit").main(steps=2_000, tape_limit=None)
    assert capsys.readouterr().out
    assert r["same_bits"] and r["recompute_factor"] == 1.0
    assert r["grad_fd_error"] < 1e-6
