"""Gradients of the core programs at hypothesis-chosen inputs, against finite differences."""
import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import adjit
import programs
from fd import assert_grad_matches_fd

_GRADS = {}


def gradient(f, argnums=0):
    if (f, argnums) not in _GRADS:
        _GRADS[(f, argnums)] = adjit.grad(f, argnums=argnums)
    return _GRADS[(f, argnums)]


def vectors(lo, hi, min_size=1, max_size=8):
    return st.integers(min_size, max_size).flatmap(
        lambda n: arrays(np.float64, n, elements=st.floats(lo, hi)))


@given(x=vectors(-3.0, 3.0))
def test_sum_of_sin(x):
    g = gradient(programs.sum_of_sin)(x)
    np.testing.assert_allclose(g, np.cos(x) * x + np.sin(x), rtol=1e-12, atol=1e-14)


@given(c=vectors(-2.0, 2.0), t=st.floats(-1.5, 1.5))
def test_horner(c, t):
    assert_grad_matches_fd(gradient(programs.horner, (0, 1)), programs.horner, (c, t), (0, 1),
                           rtol=1e-5, atol=1e-6)


@given(x=vectors(0.2, 2.0))
def test_running_product(x):
    g = gradient(programs.running_product)(x)
    expected = np.array([np.prod(np.delete(x, i)) for i in range(len(x))])
    np.testing.assert_allclose(g, expected, rtol=1e-12)


@given(x=vectors(-2.0, 2.0, 2, 6))
def test_break_continue(x):
    f = programs.break_continue
    total, hits = 0.0, []
    for v in x:
        if v >= 0:
            total += v * v
            hits.append(v)
            if total > 3.0:
                break
    expected = np.zeros_like(x)
    counted = 0
    for i, v in enumerate(x):
        if counted == len(hits):
            break
        if v >= 0:
            expected[i] = 2 * total * 2 * v
            counted += 1
    np.testing.assert_allclose(gradient(f)(x), expected, rtol=1e-12, atol=1e-14)


@given(seed=st.integers(0, 2 ** 16), n=st.integers(2, 6))
def test_lennard_jones(seed, n):
    rng = np.random.default_rng(seed)
    side = 2
    pts = np.array([(i, j, k) for i in range(side) for j in range(side) for k in range(side)],
                   dtype=np.float64)[:n] * 1.2 + rng.uniform(-0.1, 0.1, (n, 3))
    assert_grad_matches_fd(gradient(programs.lennard_jones), programs.lennard_jones, (pts,))


@given(u=vectors(-1.0, 1.0, 3, 8), alpha=st.floats(0.05, 0.45), steps=st.integers(0, 6))
def test_heat(u, alpha, steps):
    f = programs.heat
    assert_grad_matches_fd(gradient(f, (0, 1)), f, (u, alpha, steps), (0, 1))


@given(x=st.floats(0.15, 5.0))
def test_while_loop(x):
    assert_grad_matches_fd(gradient(programs.while_loop), programs.while_loop, (x,),
                           rtol=1e-5, atol=1e-5)
