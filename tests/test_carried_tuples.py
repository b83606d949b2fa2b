"""A tuple or a named tuple carried through a loop or chosen in a branch in one name: the
state of a time-stepping code (`s = State(0.0, y0)`, then `s = step(s, h)` in the loop, read
as `s.t`, `s.y` or `s[1]`). adjit holds such a name as its elements in names of their own
(normalize/carried.py); the values are compared with numba's, the gradients with central
differences of numba's forward."""
from collections import namedtuple

import numba
import numpy as np
import pytest

import adjit

from fd import fd_grad

State = namedtuple("State", ["t", "y"])
Counted = namedtuple("Counted", ["t", "y", "steps"])


@numba.njit
def euler(s, h):
    return State(s.t + h, s.y + h * (np.sin(s.y) - s.t * s.y))


def stepped(y0):
    s = State(0.0, y0)
    for k in range(20):
        s = euler(s, 0.05)
    return s.t * np.sum(s.y ** 2)


def stepped_plain(y0):
    s = (0.0, y0)
    for k in range(20):
        s = (s[0] + 0.05, s[1] + 0.05 * (np.sin(s[1]) - s[0] * s[1]))
    return s[0] * np.sum(s[1] ** 2)


@numba.njit
def counted_step(s, h):
    return Counted(s.t + h, s.y * (1.0 - h * s.y), s.steps + 1)


def counted(y0):
    s = Counted(0.0, y0, 0)
    while s.t < 0.5:
        s = counted_step(s, 0.1)
    return np.sum(s.y) * s.steps


def chosen(x):
    if x[0] > 0.0:
        s = (1.5, x * 2.0)
    else:
        s = (2.0, np.exp(x))
    return s[0] * np.sum(s[1])


@numba.njit
def rk_trial(s, h):
    k1 = -s.y * s.y
    k2 = -(s.y + h * k1) ** 2
    return State(s.t + h, s.y + 0.5 * h * (k1 + k2)), np.max(np.abs(k2 - k1)) * h


def accepted_steps(y0):
    """An adaptive integrator's accepted step: the state changes only when the error is
    small, the step size either way."""
    s = State(0.0, y0)
    h = 0.2
    for k in range(30):
        trial, err = rk_trial(s, h)
        if err < 1e-3:
            s = trial
            h = h * 1.2
        else:
            h = h * 0.5
    return np.sum(s.y) + s.t


Y0 = np.array([0.3, -0.5, 0.9])


@pytest.mark.parametrize("f, x", [
    (stepped, Y0), (stepped_plain, Y0), (counted, np.array([0.4, 0.7])),
    (chosen, Y0), (chosen, -Y0), (accepted_steps, np.array([0.5, 1.2])),
])
def test_a_tuple_state_carried_through_a_loop(f, x):
    value, g = adjit.value_and_grad(f)(x)
    forward = numba.njit(f)
    assert value == pytest.approx(forward(x), rel=1e-14, abs=1e-15)
    np.testing.assert_allclose(g, fd_grad(forward, [x], 0), rtol=1e-6, atol=1e-8)


def test_the_loop_forms_give_the_same_gradient():
    """The named tuple stepped by a helper and the tuple written out in the loop are one
    computation: the same gradient to the bit."""
    np.testing.assert_array_equal(adjit.grad(stepped)(Y0), adjit.grad(stepped_plain)(Y0))


def accepted_unpacked(y0):
    """The same integrator with the state in two names, the trial unpacked into them."""
    t, y = 0.0, y0
    h = 0.2
    for k in range(30):
        trial, err = rk_trial(State(t, y), h)
        if err < 1e-3:
            t, y = trial
            h = h * 1.2
        else:
            h = h * 0.5
    return np.sum(y) + t


def one_trial(y0):
    """A helper's tuple holding a named tuple that holds an array (it was an internal error:
    the array inside the inner tuple was taken for a number)."""
    trial, err = rk_trial(State(0.0, y0), 0.1)
    return np.sum(trial.y ** 2) + err * trial.t


@pytest.mark.parametrize("f", [accepted_unpacked, one_trial])
def test_named_tuples_inside_a_helpers_tuple(f):
    x = np.array([0.5, 1.2])
    value, g = adjit.value_and_grad(f)(x)
    forward = numba.njit(f)
    assert value == pytest.approx(forward(x), rel=1e-14)
    np.testing.assert_allclose(g, fd_grad(forward, [x], 0), rtol=1e-6, atol=1e-8)
    if f is accepted_unpacked:
        np.testing.assert_array_equal(g, adjit.grad(accepted_steps)(x))


def accepted_fields(y0):
    """The accepted step read field by field (`y = trial.y`: it was refused as an array name
    rebound to a view)."""
    t, y = 0.0, y0
    h = 0.2
    for k in range(30):
        trial, err = rk_trial(State(t, y), h)
        if err < 1e-3:
            t = trial.t
            y = trial.y
            h = h * 1.2
        else:
            h = h * 0.5
    return np.sum(y) + t


def accepted_elements(y0):
    """The same, by position (`y = trial[1]`)."""
    t, y = 0.0, y0
    h = 0.2
    for k in range(30):
        trial, err = rk_trial(State(t, y), h)
        if err < 1e-3:
            t = trial[0]
            y = trial[1]
            h = h * 1.2
        else:
            h = h * 0.5
    return np.sum(y) + t


def stepped_fields(y0):
    """A helper returning the named tuple itself, its fields taken into the loop's names (it
    was refused, naming a temporary of adjit's)."""
    t, y = 0.0, y0.copy()
    for k in range(20):
        r = euler(State(t, y), 0.05)
        y = r.y
        t = r.t
    return t * np.sum(y ** 2)


@pytest.mark.parametrize("f", [accepted_fields, accepted_elements])
def test_a_field_of_a_helpers_tuple_taken_in_a_branch(f):
    x = np.array([0.5, 1.2])
    value, g = adjit.value_and_grad(f)(x)
    forward = numba.njit(f)
    assert value == forward(x)
    np.testing.assert_allclose(g, fd_grad(forward, [x], 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(g, adjit.grad(accepted_unpacked)(x))


def test_a_field_of_a_helpers_named_tuple_taken_in_a_loop():
    value, g = adjit.value_and_grad(stepped_fields)(Y0)
    assert value == numba.njit(stepped_fields)(Y0)
    np.testing.assert_allclose(g, fd_grad(numba.njit(stepped_fields), [Y0], 0), rtol=1e-6,
                               atol=1e-8)
    np.testing.assert_array_equal(g, adjit.grad(stepped)(Y0))


@numba.njit
def reversed_trial(s, h):
    return State(s.t + h, s.y[::-1]), h


def reversed_fields(y0):
    t, y = 0.0, y0.copy()
    for k in range(3):
        trial, err = reversed_trial(State(t, y), 0.1)
        if err < 1.0:
            y = trial.y
    return np.sum(y * np.arange(1.0, 3.0))


def test_a_field_that_views_the_old_array_is_refused():
    """The helper's field is a view of the array the loop carries: copying it into that
    array in place would read what it writes; refused by name."""
    with pytest.raises(adjit.AdjitError, match="a tuple holding the array `y`"):
        adjit.grad(reversed_fields)(np.array([0.5, 1.2]))
