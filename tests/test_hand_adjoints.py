"""benchmarks/hand.py: the hand-written adjoints the benchmark table measures adjit against.

Each is checked against central finite differences of the numba-compiled case on small
inputs (the oracle is independent of adjit and of the hand adjoint), and adjit's gradient
against the hand adjoint on the same inputs.
"""
import os
import sys

import numpy as np
import pytest

import adjit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "benchmarks"))
import hand  # noqa: E402

CASES = sorted(hand.HAND, key=lambda c: (c[0].__name__, str(c[1])))


@pytest.mark.parametrize("fn,argnums", CASES,
                         ids=[f"{fn.__name__}-{argnums}" for fn, argnums in CASES])
def test_hand_adjoint_matches_differences_and_adjit(fn, argnums):
    assert hand.check(fn, argnums) < 1e-6
    args = hand.small_inputs(fn, argnums)
    got = adjit.grad(fn, argnums=argnums)(*args)
    assert hand.max_rel_err(got, hand.HAND[(fn, argnums)](*args)) < 1e-10


def test_the_check_can_fail():
    """A wrong adjoint is caught: the heat adjoint with alpha's term dropped."""
    args = hand.small_inputs(hand.heat, (0, 1))
    g, ga = hand.heat_u0_alpha_hand(*args)
    want = hand.fd(__import__("numba").njit(hand.heat), args, (0, 1))
    assert hand.max_rel_err((g, ga), want) < 1e-6
    assert hand.max_rel_err((g, 0.0 * ga), want) > 1e-3
    assert np.isfinite(ga)
