"""examples/actor_critic.py: one-step actor-critic on a chain MDP, both updates from one
adjit gradient with stop_gradient separating the actor and critic losses."""
import importlib.util
import pathlib

import numpy as np
import pytest

EXAMPLE = pathlib.Path(__file__).resolve().parent.parent / "examples" / "actor_critic.py"


@pytest.fixture(scope="module")
def ac():
    spec = importlib.util.spec_from_file_location("actor_critic", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_actor_critic_learns_the_optimal_policy(ac, capsys):
    r = ac.main(n=8, episodes=2000, seed=1)
    assert capsys.readouterr().out
    # the uniform start policy is far from optimal, the learned one near it
    assert r["start_return"] < 0.5 * r["optimal_return"]
    assert r["final_return"] >= 0.95 * r["optimal_return"]
    assert r["final_return"] > 2 * r["always_left_return"]    # escaped the small reward
    assert r["final_return"] <= r["optimal_return"] + 1e-12
    assert r["greedy_matches_optimal"]
    assert r["sampled_curve"][-1] > 0.9 * r["optimal_return"]
    assert r["steps"] > 2000


def test_stop_gradient_separates_actor_and_critic(ac):
    r = ac.check_stop_gradient(n=8, gamma=0.9, seed=3)
    # stopped delta: the actor loss gives w exactly nothing; the critic gives theta nothing
    assert r["actor_w_grad_max"] == 0.0
    assert r["critic_theta_grad_max"] == 0.0
    # one combined gradient = (actor's theta-gradient, critic's w-gradient)
    assert r["split_error"] == 0.0
    # policy-gradient step and semi-gradient TD(0), the target not differentiated
    assert r["theta_grad_error"] < 1e-14
    assert r["w_grad_error"] < 1e-14
    assert r["w_grad_at_next_state"] == 0.0
    # without stop_gradient the w-gradient is the (different) full gradient
    assert r["unstopped_w_error"] < 1e-14
    assert r["unstopped_w_differs"] > 0.1


def test_against_finite_differences(ac):
    """stop_gradient changes derivatives, not values: central differences of the objective in
    theta equal adjit's theta-gradient (theta is not inside anything stopped), while in w
    they equal the gradient of the unstopped objective, not the stopped one."""
    rng = np.random.default_rng(5)
    n = 6
    theta = rng.normal(size=(n, 2))
    w = rng.normal(size=n)
    args = (2, 0, 0.0, 1, 1.0, 0.9)
    g_theta, g_w = ac.grad_objective(theta, w, *args)
    h = 1e-6
    fd = np.zeros_like(theta)
    for i in range(n):
        for j in range(2):
            e = np.zeros_like(theta)
            e[i, j] = h
            fd[i, j] = (ac.objective(theta + e, w, *args)
                        - ac.objective(theta - e, w, *args)) / (2 * h)
    assert np.abs(g_theta - fd).max() < 1e-8
    fd_w = np.zeros(n)
    for i in range(n):
        e = np.zeros(n)
        e[i] = h
        fd_w[i] = (ac.objective(theta, w + e, *args) - ac.objective(theta, w - e, *args)) / (2 * h)
    _, u_w = ac.grad_unstopped(theta, w, *args)
    assert np.abs(u_w - fd_w).max() < 1e-8
    assert np.abs(g_w - fd_w).max() > 0.1
