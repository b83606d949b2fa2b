"""A new array made every iteration and handed to the name the loop carries (`un =
u.copy(); ...; u = un`, `prev = cur; cur = nxt`): numba code's everyday time step. In
Python the name takes the new array; adjit keeps one array per name and copies the new
values in, which no program can tell apart as long as neither name is written while both
mean the same array. Where one is, adjit refuses: two names for one array written through
either would need both followed everywhere.
"""
import math

import numba
import numpy as np
import pytest

import adjit

from fd import fd_grad


def written_through_the_post_loop_name(x0, steps):
    """After the loop `xn` is `x` (the last array handed over): a write through xn shows
    in x."""
    x = x0.copy()
    for s in range(steps):
        xn = np.sin(x)
        x = xn
    xn[0] = 7.0 * xn[1]
    return np.sum(x * x)


def handed_over_inside_an_outer_loop(x0, outer, inner):
    total = 0.0
    for o in range(outer):
        x = x0 * (1.0 + 0.1 * o)
        for s in range(inner):
            xn = np.tanh(x) + 0.5 * x
            x = xn
        total += np.sum(x * x)
    return total


def written_after_the_handover(x0, steps):
    """x and xn are one array in Python: the write through xn changes x."""
    x = x0.copy()
    for s in range(steps):
        xn = x * 0.5
        x = xn
        xn[0] = 3.0 * xn[1]
    return np.sum(x * x)


def a_third_name_for_the_new_array(x0, steps):
    """w and xn and (after the hand-over) x are one array in Python: the write through w
    changes x. (adjit once copied at the hand-over here and returned other numbers.)"""
    x = x0.copy()
    s = 0.0
    for t in range(steps):
        xn = np.sin(x) + 0.5 * x
        w = xn
        x = xn
        w[0] = 2.0 * w[1]
        s += x[0]
    return s + np.sum(x * x)


def fixed_point(x, steps):
    """A fixed-point iteration as pynndescent's sinkhorn writes it: the next iterate is
    arithmetic on the last, named, then handed over (its one use)."""
    u = np.ones(x.shape[0])
    for it in range(steps):
        next_u = 1.0 / (x * u + 1.0)
        u = next_u
    return np.sum(u)


def fixed_point_copied(x, steps):
    u = np.ones(x.shape[0])
    for it in range(steps):
        next_u = 1.0 / (x * u + 1.0)
        u = next_u.copy()
    return np.sum(u * u)


def scaled_pair(a, steps):
    """Two iterates, each handed the arithmetic of the other (Sinkhorn's scalings)."""
    u = np.ones(a.shape[0])
    v = np.ones(a.shape[0])
    for it in range(steps):
        next_u = a / (v + 1.0)
        u = next_u
        next_v = 0.5 / (u + a)
        v = next_v
    return np.sum(u * v)


def fixed_point_to_tolerance(a, steps):
    """The iteration stops once the iterate settles, handing the last one over before its
    `break` as well as at the end of each step."""
    x = np.zeros_like(a)
    for it in range(steps):
        xn = np.cos(x) * a
        if np.max(np.abs(xn - x)) < 1e-13:
            x = xn
            break
        x = xn
    return np.sum(x)


def handed_over_on_some_steps_too(a, steps):
    x = a.copy()
    s = 0.0
    for it in range(steps):
        xn = np.sin(x) + a
        if it % 2 == 0:
            x = xn
        s += np.sum(x * x)
        x = xn
    return s


def written_after_a_handover_in_a_branch(a, steps):
    x = a.copy()
    s = 0.0
    for it in range(steps):
        xn = np.sin(x) + a
        if it % 2 == 0:
            x = xn
        xn[0] = 2.0 * xn[1]
        s += np.sum(x * x)
        x = xn
    return s


def argument_handed_over_in_an_inner_loop(x, n):
    """The argument itself carried by the inner of two loops through a temporary: the
    outer loop takes it in place once, before it (the inner loop copied the caller's array
    afresh on every outer iteration: every outer step but the last was lost)."""
    for t in range(n):
        for k in range(2):
            y = x * 0.8 + 0.1
            x = y
    return np.sum(x * np.arange(1.0, 5.0))


def argument_filled_and_handed_over_in_an_inner_loop(x, c):
    for t in range(c.shape[0]):
        for k in range(2):
            y = np.zeros_like(x)
            for i in range(x.shape[0]):
                y[i] = x[i] * 0.8 + np.sin(x[(i + 1) % x.shape[0]]) * c[t]
            x = y
    return np.sum(x * np.arange(1.0, 5.0))


@pytest.mark.parametrize("f, args", [
    (argument_handed_over_in_an_inner_loop, (np.array([0.3, -0.2, 0.5, 1.1]), 2)),
    (argument_handed_over_in_an_inner_loop, (np.array([0.3, -0.2, 0.5, 1.1]), 0)),
    (argument_filled_and_handed_over_in_an_inner_loop,
     (np.array([0.3, -0.2, 0.5, 1.1]), np.array([0.5, -1.0, 2.0]))),
    (fixed_point_to_tolerance, (np.array([0.3, 0.5, 0.7]), 200)),
    (fixed_point_to_tolerance, (np.array([0.3, 0.5, 0.7]), 6)),
    (handed_over_on_some_steps_too, (np.array([0.3, 0.5, 0.7]), 5)),
    (fixed_point, (np.array([0.5, 1.2, 2.0]), 5)),
    (fixed_point_copied, (np.array([0.5, 1.2, 2.0]), 4)),
    (scaled_pair, (np.array([0.3, 0.7, 1.1, 0.2]), 6)),
    (written_through_the_post_loop_name, (np.linspace(-1.0, 1.2, 5), 3)),
    (handed_over_inside_an_outer_loop, (np.linspace(-0.8, 0.9, 4), 3, 4)),
])
def test_value_and_gradient(f, args):
    compiled = numba.njit(f)
    value, grad = adjit.value_and_grad(f)(*args)
    np.testing.assert_allclose(value, compiled(*args), rtol=1e-13)
    np.testing.assert_allclose(grad, fd_grad(compiled, args, 0), rtol=1e-6, atol=1e-9)


def test_an_argument_handed_over_in_an_inner_loop_analytically():
    x = np.array([0.3, -0.2, 0.5, 1.1])
    value, grad = adjit.value_and_grad(argument_handed_over_in_an_inner_loop)(x, 2)
    np.testing.assert_allclose(grad, 0.8 ** 4 * np.arange(1.0, 5.0), rtol=1e-14)


def test_a_write_while_both_names_mean_one_array_is_refused():
    with pytest.raises(adjit.AdjitError, match="line"):
        adjit.grad(written_after_the_handover)(np.linspace(-1.0, 1.0, 4), 2)


def test_a_third_name_for_either_array_is_refused():
    with pytest.raises(adjit.AdjitError, match="hands 'x' the array of 'xn'"):
        adjit.value_and_grad(a_third_name_for_the_new_array)(np.linspace(-1.0, 1.0, 4), 3)


def test_a_write_after_a_handover_in_a_branch_is_refused():
    """In Python `x` and `xn` are one array after the branch's hand-over: the write into
    xn changes x on the steps that took the branch."""
    with pytest.raises(adjit.AdjitError, match="a write into 'xn' after an `if`"):
        adjit.grad(written_after_a_handover_in_a_branch)(np.array([0.3, 0.5, 0.7]), 5)
