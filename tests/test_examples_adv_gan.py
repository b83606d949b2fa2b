"""examples/adversarial.py and examples/gan_1d.py run at a small size and reach what they claim.

Each example's main() runs once per module (numba compiling the gradients dominates: the
gradients are compiled once, the sizes change nothing but the loop counts).
"""
import importlib.util
import pathlib

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def load(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def adversarial():
    return load("adversarial").main(n=300, steps=800, seed=0)


@pytest.fixture(scope="module")
def gan():
    return load("gan_1d").main(steps=2000, samples=10000, seed=0)


def test_adversarial_training_raises_adversarial_accuracy(adversarial):
    before, after = adversarial["before"], adversarial["after"]
    # standard training: clean accuracy high, attacks at eps = 0.25 break it
    assert before["clean"] >= 0.95
    assert before["pgd"] <= 0.85 and before["pgd"] <= before["fgsm"] + 1e-12
    # adversarial training: robust accuracy up by a clear margin, clean accuracy kept
    assert after["pgd"] >= before["pgd"] + 0.08
    assert after["fgsm"] >= before["fgsm"] + 0.08
    assert after["clean"] >= 0.9


def test_adversarial_stop_gradient_blocks_the_attack(adversarial):
    r = adversarial
    assert r["input_grad_error"] < 1e-14      # the hand-written dL/dX inside adv_loss is adjit's
    # d adv_loss / d theta is dL/dtheta at the fixed attacked points ...
    assert r["fgsm_stop_vs_fixed"] < 1e-12
    assert r["l2_stop_vs_fixed"] < 1e-12
    # ... and, for the smooth attack, not the gradient through the attack, which is right too
    assert r["l2_stop_vs_unstopped"] > 1e-3
    assert r["l2_unstopped_fd_error"] < 1e-6


def test_gan_learns_the_mixture(gan):
    start, end = gan["start"], gan["end"]
    mean, std = gan["target_mean"], gan["target_std"]
    # (seeds 0-4 at 1500-3000 steps: |mean - 1.8| <= 0.38, |std - 1.92| <= 0.23,
    #  right-hand mass 0.64-0.71 for 0.7, overlap 0.54-0.84)
    assert abs(end["mean"] - mean) < 0.4
    assert abs(end["std"] - std) < 0.3
    assert abs(end["right_mass"] - gan["target_right_mass"]) < 0.1
    assert end["overlap"] > 0.5
    # and closer than at the start
    assert abs(end["mean"] - mean) < abs(start["mean"] - mean) - 0.5
    assert abs(end["std"] - std) < abs(start["std"] - std) - 1.0
    assert end["overlap"] > start["overlap"] + 0.4


def test_gan_stop_gradient_separates_the_players(gan):
    # the stopped halves of both gradients are exactly zero, at every training step ...
    assert gan["stopped_during_training"] == 0.0
    assert gan["stopped_halves"] == 0.0
    # ... although the losses do depend on the stopped parameters
    assert gan["cross_fd"] > 1e-3
    # the kept halves match central differences
    assert gan["fd_error"] < 1e-6
