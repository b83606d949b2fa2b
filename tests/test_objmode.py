"""`with numba.objmode(...)` blocks as numba users write them: a timer, a progress message,
a library call numba cannot compile, in the differentiated function and in its @njit
helpers. A block is Python code adjit does not differentiate: it runs once per call, in
order (never again in the backward sweep or a checkpoint's recomputation), its outputs are
constants for differentiation, and a derivative that would have to flow through it, an array
it may write, or several outputs are refused by name."""
import math
import random
import time

import numpy as np
import pytest
import scipy.special
from numba import njit, objmode

import adjit
from adjit import AdjitError
from fd import check_value_and_grad


@njit
def _sum_of_sines_timed(x):
    with objmode(start="float64"):
        start = time.perf_counter()
    s = 0.0
    for i in range(x.shape[0]):
        s += np.sin(x[i])
    with objmode():
        print("sum of sines:", s, "in", time.perf_counter() - start, "s")
    return s


def timed_loss(x):
    with objmode():
        print("loss of", len(x), "values")
    return 2.0 * _sum_of_sines_timed(x)


def test_timers_and_messages_run_once_per_call(capsys):
    x = np.linspace(0.0, 1.0, 5)
    g = check_value_and_grad(timed_loss, (x,), 0)
    np.testing.assert_allclose(g, 2.0 * np.cos(x), rtol=1e-14)
    capsys.readouterr()
    adjit.grad(timed_loss)(x)
    printed = capsys.readouterr().out
    assert printed.count("loss of 5 values") == 1 and printed.count("sum of sines:") == 1


@njit
def _legendre_nodes(n):
    with objmode(t="float64[:]"):
        t = np.asarray(scipy.special.roots_legendre(n)[0])
    return t


def shifted_quadrature(x, n):
    t = _legendre_nodes(n)
    s = 0.0
    for i in range(t.shape[0]):
        s += math.exp(x * t[i]) * (1.0 + t[i])
    return s


def test_a_library_call_in_a_block_gives_constants():
    t = scipy.special.roots_legendre(6)[0]
    g = check_value_and_grad(shifted_quadrature, (0.7, 6), 0)
    assert g == pytest.approx(np.sum(t * (1.0 + t) * np.exp(0.7 * t)), rel=1e-13)


def scaled_by_a_draw(x):
    with objmode(r="float64"):
        r = random.random() + 0.5
    return x * x * r


def test_a_block_is_not_run_again_by_the_backward_sweep():
    """The block's output is read from what the forward sweep got: d/dx of x*x*r is
    2*x*r for the r of this call (value / x * 2)."""
    value, g = adjit.value_and_grad(scaled_by_a_draw)(1.5)
    assert g == pytest.approx(2.0 * value / 1.5, rel=1e-14)


def stepped(x, steps):
    u = x.copy()
    for t in range(steps):
        u = u + 0.1 * np.sin(u)
        if t % 5 == 0:
            with objmode():
                print("step", t, "first value", u[0])
    return np.sum(u * u)


def test_a_block_in_a_time_loop_is_recorded_not_checkpointed(capsys):
    x = np.linspace(0.1, 1.0, 4)
    recorded = check_value_and_grad(stepped, (x, 12), 0)
    auto = adjit.grad(stepped, checkpoint="auto")(x, 12)
    assert np.array_equal(auto, recorded)
    capsys.readouterr()
    adjit.grad(stepped)(x, 12)
    assert capsys.readouterr().out.count("step") == 3
    with pytest.raises(AdjitError, match="a call which must run once"):
        adjit.grad(stepped, checkpoint=2)(x, 12)


def through_a_block(x):
    with objmode(c="float64"):
        c = float(np.sum(x))
    return c * 2.0


def writes_in_a_block(x):
    y = x * 2.0
    with objmode():
        y[0] = 5.0
    return np.sum(y)


def sorts_in_a_block(x):
    y = x * 2.0
    with objmode():
        y.sort()
    return np.sum(y * x)


def two_outputs(x):
    with objmode(a="float64", b="float64"):
        a, b = 1.0, 2.0
    return a * x + b


def test_what_a_block_cannot_do_is_refused_by_name():
    x = np.linspace(0.1, 1.0, 4)
    with pytest.raises(AdjitError, match=r"through_a_block.*a derivative would have to flow "
                       r"through `with objmode\(\)` block at line \d+"):
        adjit.grad(through_a_block)(x)
    for f in (writes_in_a_block, sorts_in_a_block):
        with pytest.raises(AdjitError, match=r"block \(line \d+\) that may change the array "
                           r"`y`"):
            adjit.grad(f)(x)
    with pytest.raises(AdjitError, match="several outputs"):
        adjit.grad(two_outputs)(1.5)


def stopped_into_a_block(x):
    xs = adjit.stop_gradient(x)
    with objmode(c="float64"):
        c = float(np.sum(xs))
    return c * np.sum(x)


def test_a_block_given_a_stopped_value_is_a_constant():
    x = np.linspace(0.1, 1.0, 4)
    np.testing.assert_allclose(adjit.grad(stopped_into_a_block)(x), np.full(4, np.sum(x)),
                               rtol=1e-15)
