"""A name read before any statement binds it (normalize/check.py check_bound_before_read).

A loop that reads a name only a later statement of its own body binds has no value for it
in its first step: numba refuses such a function ("Variable 'y' is not defined"), and
adjit refused the array form with an unrelated message and gave a number for the scalar
form (reading numba's zero). Each refused program here is also refused by numba, as the
message says; the forms that bind the name first are accepted and checked against central
differences."""
import numba
import numpy as np
import pytest

from adjit import AdjitError, grad
from fd import fd_grad


def scalar_guarded(x, n):
    s = 0.0
    for t in range(n):
        if t > 0:
            s += y * x[0]
        y = x[0] * 2.0
    return s


def scalar_unguarded(x, n):
    s = 0.0
    for t in range(n):
        s += y * x[0]
        y = x[0] * 2.0
    return s


def array_guarded(x, n):
    s = 0.0
    for t in range(n):
        if t > 0:
            s += np.sum(y * x)
        y = x * 2.0
    return s


def while_test(x, n):
    s = 0.0
    k = 0
    while k < n and err > 1e-3:
        err = abs(x[0]) / (k + 1.0)
        s += err
        k += 1
    return s


def augmented(x, n):
    for t in range(n):
        s += x[t]
    return s


def straight_line(x, n):
    s = x[0] * y
    y = 2.0
    return s


def _uses_later(v):
    w = v * c
    c = 3.0
    return np.sum(w)


def calls_a_helper(x, n):
    return _uses_later(x) + n


REFUSED = [(scalar_guarded, "y", "the loop at line"),
           (scalar_unguarded, "y", "the loop at line"),
           (array_guarded, "y", "the loop at line"),
           (while_test, "err", "the loop at line"),
           (augmented, "s", "the loop at line"),
           (straight_line, "y", "it is bound only further down"),
           (calls_a_helper, "c", "it is bound only further down")]


@pytest.mark.parametrize("f, name, where", REFUSED, ids=[r[0].__name__ for r in REFUSED])
def test_a_name_read_before_it_is_bound_is_refused_as_numba_refuses_it(f, name, where):
    x = np.array([0.7, 1.3, 2.1])
    with pytest.raises(AdjitError) as info:
        grad(f)(x, 3)
    msg = str(info.value)
    assert f"'{name}' is read before any statement binds it" in msg, msg
    assert where in msg and f"Variable '{name}' is not defined" in msg, msg
    assert f"Give '{name}' a value before it is read" in msg, msg
    # the claim the message makes: numba refuses the function as written
    with pytest.raises(numba.core.errors.NumbaError):
        numba.njit(f)(x, 3)


def bound_before(x, n):
    s = 0.0
    y = x[1]
    for t in range(n):
        s += y * x[0]
        y = x[0] * 2.0 + 0.5 * y
    return s


def earlier_loop(x, n):
    for t in range(n):
        y = x * (t + 1.0)
    s = 0.0
    for t in range(n):
        s += np.sum(y * x) / (t + 1.0)
    return s


def loop_targets_and_tuples(x, n):
    a, b = x[0], x[1]
    s = 0.0
    for i in range(n):
        a, b = b, a * b + 0.1
        s += a
    return s


def comprehension(x, n):
    parts = [x[i] * x[i] for i in range(n)]
    return sum(parts)


ACCEPTED = [bound_before, earlier_loop, loop_targets_and_tuples, comprehension]


@pytest.mark.parametrize("f", ACCEPTED, ids=[f.__name__ for f in ACCEPTED])
def test_names_bound_before_they_are_read_are_differentiated(f):
    x = np.array([0.7, 1.3, 2.1])
    g = grad(f)(x, 3)
    assert np.allclose(g, fd_grad(f, (x, 3), 0), rtol=1e-6, atol=1e-8)
    assert np.isclose(numba.njit(f)(x, 3), f(x, 3))
