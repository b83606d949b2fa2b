"""An array name bound on both paths of an `if`, as numba code binds it.

`y = 2.0 * x` on one path and `y = np.sin(x)` on the other; `i_t1, i_t2 = cross(a, h),
cross(b, h)` in each branch of poliastro's Lambert solver (izzo), then `ll, i_t1, i_t2 =
(ll, i_t1, i_t2) if prograde else (-ll, -i_t1, -i_t2)`; `y = x` and `if c: y = y / s`.
numba gives the name the array the path taken made (or the one it kept: `b = np.zeros(3)`
then `if c: b = np.ones(3)`); adjit copies that array into one array after the `if`. Where
a path keeps a view of another array, Python's name is that array: a write into either
afterwards is refused. Every gradient is checked against central differences of numba's
own compile of the same function."""
import re

import numpy as np
import pytest
from numba import njit
from numpy import cross
from numpy.linalg import norm

import adjit
from adjit import AdjitError
from fd import check_value_and_grad

W = np.array([1.0, 2.0, 3.0])


def squared_or_sine(x, flag):
    if flag > 0:
        y = 2.0 * x
    else:
        y = np.sin(x)
    return np.sum(y * y)


def chosen_expression(x, flag):
    y = 2.0 * x if flag > 0 else np.sin(x)
    return np.sum(y * W[:len(y)])


def elif_chain(x, k):
    if k == 0:
        y = np.exp(x)
    elif k == 1:
        y = x * x
    else:
        y = np.zeros(len(x))
        y[0] = x[0]
        y[1:] = x[1:] ** 3
    return np.sum(y * W[:len(y)]) + y[-1]


def lambert_directions(r1, r2, prograde):
    """The tangential directions of poliastro's izzo Lambert solver, as it writes them."""
    r1_norm, r2_norm = norm(r1), norm(r2)
    i_r1, i_r2 = r1 / r1_norm, r2 / r2_norm
    i_h = cross(i_r1, i_r2)
    i_h = i_h / norm(i_h)
    ll = np.sqrt(1 - min(1.0, norm(r2 - r1) / (r1_norm + r2_norm)))
    if i_h[2] < 0:
        ll = -ll
        i_t1, i_t2 = cross(i_r1, i_h), cross(i_r2, i_h)
    else:
        i_t1, i_t2 = cross(i_h, i_r1), cross(i_h, i_r2)
    ll, i_t1, i_t2 = (ll, i_t1, i_t2) if prograde else (-ll, -i_t1, -i_t2)
    return ll * np.sum(i_t1 * W) + np.sum(i_t2 * W[::-1]) + ll ** 2 * i_t1[0]


def normalized_maybe(x, unit):
    y = x
    if unit:
        y = y / norm(y)
    return np.sum(y * W)


def rows_of_either(a, b, first):
    if first:
        v = a[1:]
    else:
        v = 2.0 * b[:-1]
    return np.sum(v * v) + v[0]


def alternating(x, n):
    s = 0.0
    for t in range(n):
        if t % 2 == 0:
            y = np.sin(x) * t
        else:
            y = np.cos(x)
        s += np.sum(y * x)
    return s


@njit
def reflected(x, flag):
    if flag:
        return -x[::-1] * 2.0
    return x * x


@njit
def squared_norm_of_either(a, c):
    if c:
        b = a * 2.0
    else:
        b = a[::-1]
    return np.sum(b * b)


def helper_joins(x, c):
    y = x * 3.0
    return squared_norm_of_either(y, c) + squared_norm_of_either(x, not c)


@njit
def first_set_to_one(a, c):
    if c:
        b = a * 2.0
    else:
        b = a
    b[0] = 1.0                  # on the second path: the caller's array
    return np.sum(b)


def helper_writes_the_caller_array(x, c):
    return first_set_to_one(x, c) + np.sum(x * x)


def helper_in_branch(x, flag, other):
    if other:
        y = reflected(x, flag)
    else:
        y = x + 1.0
    return np.sum(y * W)


def matrices(A, flag):
    if flag:
        M = A @ A.T
    else:
        M = np.linalg.inv(A + 3.0 * np.eye(3))
    return np.sum(M * M)


def views_taken_on_each_path(x, flag):
    if flag:
        y = 2.0 * x
        v = y[1:]
    else:
        y = np.sin(x)
        v = y[:-1]
    y[0] = 0.5                  # the joined array: v sees the write on both paths
    return np.sum(v * W[:2]) + np.sum(y * y)


def a_view_of_one_path_array(x, c):
    if c:
        y = 2.0 * x
        v = y[1:]
    else:
        y = np.sin(x)
        v = x[1:]
    return np.sum(v * v) + np.sum(y)


def only_the_view_read(x, c):
    if c:
        y = 2.0 * x
        v = y[1:]
    else:
        y = np.sin(x)
        v = x[1:]
    return np.sum(v * v)


def previous_iterations(x, n):
    y = np.zeros(3)
    s = 0.0
    for t in range(n):
        s += np.sum(y * x)
        if t % 2 == 0:
            y = np.sin(x) + y
        else:
            y = np.cos(x) * y
    return s + np.sum(y)


def three_ways_in_a_while(x, n):
    s = 0.0
    t = 0
    while t < n:
        if t % 3 == 0:
            y = x * x
        elif t % 3 == 1:
            y = np.exp(x)
        else:
            if x[0] > 100.0:
                break           # (before the binding: the name keeps its array)
            y = x[::-1] * 1.0
        s += np.sum(y) * t
        t += 1
    return s


def ones_where_positive(a):
    b = np.zeros(3)
    if a[0] > 0.0:
        b = np.ones(3)
    b[0] = a[0]
    return b[0] + b[1] * a[1]


def unit_if_asked(x, unit):
    v = np.sin(x) * 2.0
    if unit:
        v = v / np.linalg.norm(v)
    return np.sum(v * W)


def argument_or_zeros(b, flag):
    if flag:
        b = np.zeros(3)
    return np.sum(b * b) + b[0]


def copied_argument_written(b, flag):
    b = b.copy()
    if flag:
        b = np.zeros(3)
    b[0] = 2.0
    return np.sum(b * b * b)


def sometimes_in_a_loop(x, n):
    b = np.zeros(3)
    s = 0.0
    for t in range(n):
        if t % 2:
            b = np.sin(x) * t
        b[0] += x[0]
        s += np.sum(b * x)
    return s


X = np.array([0.3, -0.7, 1.1])
R1 = np.array([1.0, 0.2, 0.1])
R2 = np.array([0.3, 1.1, -0.2])


@pytest.mark.parametrize("f, args, argnums", [
    (squared_or_sine, (X, 1), 0),
    (squared_or_sine, (X, -1), 0),
    (chosen_expression, (X, 1), 0),
    (chosen_expression, (X, 0), 0),
    (elif_chain, (X, 0), 0),
    (elif_chain, (X, 1), 0),
    (elif_chain, (X, 2), 0),
    (lambert_directions, (R1, R2, True), (0, 1)),
    (lambert_directions, (R1, R2, False), (0, 1)),
    (lambert_directions, (R2, R1, True), (0, 1)),
    (lambert_directions, (R2, R1, False), (0, 1)),
    (normalized_maybe, (X, True), 0),
    (normalized_maybe, (X, False), 0),
    (rows_of_either, (X, X[::-1].copy(), True), (0, 1)),
    (rows_of_either, (X, X[::-1].copy(), False), (0, 1)),
    (alternating, (X, 5), 0),
    (views_taken_on_each_path, (X, True), 0),
    (views_taken_on_each_path, (X, False), 0),
    (a_view_of_one_path_array, (X, True), 0),
    (a_view_of_one_path_array, (X, False), 0),
    (only_the_view_read, (X, True), 0),
    (only_the_view_read, (X, False), 0),
    (previous_iterations, (X, 5), 0),
    (three_ways_in_a_while, (X, 7), 0),
    (ones_where_positive, (X,), 0),
    (ones_where_positive, (-X,), 0),
    (unit_if_asked, (X, True), 0),
    (unit_if_asked, (X, False), 0),
    (argument_or_zeros, (X, True), 0),
    (argument_or_zeros, (X, False), 0),
    (copied_argument_written, (X, True), 0),
    (copied_argument_written, (X, False), 0),
    (sometimes_in_a_loop, (X, 5), 0),
    (helper_joins, (X, True), 0),
    (helper_joins, (X, False), 0),
    (helper_in_branch, (X, True, True), 0),
    (helper_in_branch, (X, False, True), 0),
    (helper_in_branch, (X, True, False), 0),
    (matrices, (np.array([[1.0, 0.2, 0.1], [0.3, 2.0, -0.4], [0.0, 0.5, 1.5]]), True), 0),
    (matrices, (np.array([[1.0, 0.2, 0.1], [0.3, 2.0, -0.4], [0.0, 0.5, 1.5]]), False), 0),
])
def test_an_array_bound_on_both_paths(f, args, argnums):
    """Refused before as "the array variable 'y' is reassigned" (or "'i_t1' is bound to
    different arrays or views on the paths of an `if`")."""
    check_value_and_grad(f, args, argnums=argnums)


def test_analytic_values_and_the_inputs_kept():
    x = X.copy()
    np.testing.assert_allclose(adjit.grad(squared_or_sine)(x, 1), 8.0 * X, rtol=1e-15)
    np.testing.assert_allclose(adjit.grad(squared_or_sine)(x, -1), np.sin(2.0 * X),
                               rtol=1e-14)
    np.testing.assert_allclose(adjit.grad(normalized_maybe)(x, False), W, rtol=1e-15)
    np.testing.assert_array_equal(x, X)


def test_second_derivatives_and_tangents():
    h = adjit.hessian(squared_or_sine)
    np.testing.assert_allclose(h(X, 1), 8.0 * np.eye(3), rtol=1e-14)
    np.testing.assert_allclose(h(X, -1), np.diag(2.0 * np.cos(2.0 * X)), rtol=1e-13,
                               atol=1e-15)
    v = np.array([0.5, -1.0, 2.0])
    value, tangent = adjit.jvp(lambert_directions, argnums=0)(R1, R2, False, v)
    assert value == pytest.approx(njit(lambert_directions)(R1, R2, False), rel=1e-13)
    assert tangent == pytest.approx(adjit.grad(lambert_directions)(R1, R2, False) @ v,
                                    rel=1e-12)


def branchy_steps(u0, alpha, n):
    """A time loop whose step is chosen each time (`un = ...` on both paths, then the
    hand-over `u = un`)."""
    u = u0.copy()
    for t in range(n):
        if t % 3 == 0:
            un = u + alpha * (np.roll(u, 1) - 2.0 * u + np.roll(u, -1))
        else:
            un = u * (1.0 - alpha * 0.1) + 0.01 * np.sin(u)
        u = un
    return np.sum(u * u)


def test_a_time_loop_whose_step_is_chosen_each_time():
    """The hand-over `u = un` of an array made on both paths of an `if` (refused before:
    "the loop hands 'u' the array of 'un'"), recorded and checkpointed: the step a
    checkpoint runs again keeps each path's array inside the step. Gradients identical to
    the bit either way."""
    u0 = np.linspace(0.1, 1.0, 16)
    recorded = check_value_and_grad(branchy_steps, (u0, 0.2, 40), argnums=(0, 1))
    for checkpoint in ("auto", 8):
        got = adjit.grad(branchy_steps, argnums=(0, 1), checkpoint=checkpoint)(u0, 0.2, 40)
        np.testing.assert_array_equal(got[0], recorded[0])
        assert got[1] == recorded[1]


def written_afterwards(x, unit):
    y = x
    if unit:
        y = y / norm(y)
    y[0] = 0.0                  # on one path this writes into x
    return np.sum(y * W)


def dead_alias_written(x, flag):
    a = np.sin(x)
    y = a
    if flag:
        y = y * 2.0
    s = np.sum(y * y)
    a[0] = 5.0 * x[1]           # y, which may be a, is not read again
    return s + np.sum(a * x)


def test_a_write_after_the_names_stop_sharing_runs():
    for flag in (True, False):
        check_value_and_grad(dead_alias_written, (X, flag))


def alias_read_after_the_write(x, flag):
    a = np.sin(x)
    y = a
    if flag:
        y = y * 2.0
    a[0] = 5.0
    return np.sum(y * x)


def argument_written_afterwards(b, flag):
    if flag:
        b = np.zeros(3)
    b[0] = 2.0                  # on the other path: the caller's array
    return np.sum(b * b)


def source_written_afterwards(a, b, first):
    if first:
        v = a[1:]
    else:
        v = 2.0 * b[:-1]
    a[1] = 5.0                  # on one path v sees this
    return np.sum(v * v)


def written_in_the_loop(x, n):
    s = 0.0
    for t in range(n):
        if t % 2 == 0:
            y = x
        else:
            y = np.sin(x)
        s += np.sum(y * y)
        x[0] = 0.1 * t          # on the first path: y[0] too
    return s


def read_on_the_next_iteration(x, a, flag):
    if flag > 0:
        y = x
    else:
        y = x * 2.0
    s = 0.0
    for t in range(3):
        s += np.sum(y) * a      # after the first iteration: numba's y[0] is x[0], changed
        x[0] = x[0] + 1.0
    return s


@pytest.mark.parametrize("f, args, line, name, kept", [
    (written_afterwards, (X.copy(), False), "y[0] = 0.0", "y", "x"),
    (read_on_the_next_iteration, (X.copy(), 0.7, 1), "x[0] = x[0] + 1.0", "x", "x"),
    (source_written_afterwards, (X.copy(), X.copy(), True), "a[1] = 5.0", "a", "a"),
    (written_in_the_loop, (X.copy(), 3), "x[0] = 0.1 * t", "x", "x"),
    (argument_written_afterwards, (X.copy(), True), "b[0] = 2.0", "b", "b"),
    (alias_read_after_the_write, (X.copy(), True), "a[0] = 5.0", "a", "a"),
    (helper_writes_the_caller_array, (X.copy(), True), "b[0] = 1.0", "b", "x"),
])
def test_a_write_into_an_array_one_path_kept_is_refused(f, args, line, name, kept):
    """Copying is what Python does only while neither array is written afterwards (where
    the other name is read after the write, or is the caller's array)."""
    with pytest.raises(AdjitError, match=f"a write into '{name}' after an `if`") as e:
        adjit.grad(f)(*args)
    if f is argument_written_afterwards:
        assert "keeps the argument on the other, where the write would change the caller's" \
            in str(e.value)
    else:
        assert f"to '{kept}' (or a view of it) on one path" in str(e.value)
    assert f"= {kept}.copy()" in str(e.value)
    at = int(re.search(r"line (\d+)\)", str(e.value)).group(1))
    assert line in open(__file__).read().splitlines()[at - 1]


def broken_after_binding(x, n):
    s = 0.0
    for t in range(n):
        if t == 3:
            y = np.cos(x)
            break           # the join after the `if` would not run
        else:
            y = np.sin(x) * t
        s += np.sum(y * x)
    return s + np.sum(y)


def test_a_path_that_leaves_the_loop_after_binding_stays_refused():
    """After `break`, Python's name is the array the path made; the copy after the `if`
    never runs there, so the name would still hold the last iteration's (found by a probe:
    a value off by 1.09). Such names are not joined and the reverse pass refuses them."""
    with pytest.raises(AdjitError, match="the array variable 'y' is reassigned"):
        adjit.grad(broken_after_binding)(X, 5)


def int_or_float(x, flag):
    if flag:
        y = np.arange(3)
    else:
        y = x * 2.0
    return np.sum(y * x)


def vector_or_matrix(x, flag):
    if flag:
        y = np.outer(x, x)
    else:
        y = x * 2.0
    return np.sum(y)


def test_different_dtypes_and_ranks_are_refused_as_numba_does():
    for f in (int_or_float, vector_or_matrix):
        with pytest.raises(Exception, match="Cannot unify"):
            njit(f)(X, True)
    with pytest.raises(AdjitError, match="arrays of different ranks or dtypes"):
        adjit.grad(int_or_float)(X, True)       # (np.arange of integers holds integers)
    with pytest.raises(AdjitError, match="arrays of different ranks or dtypes"):
        adjit.grad(vector_or_matrix)(X, True)


# An argument stepped in a loop on one path of an `if` (`if refine: for k in range(n): x =
# ...`), read after the `if`: the loop updates an owned copy of the argument's array, and
# after the `if` the name is the copy on that path and the argument on the other. (The name
# read the copy on both paths: a segfault, an internal error, or a zero gradient.)

def refined_if_asked(x, n):
    if n > 1:
        for k in range(n):
            x = x * 1.5 + np.sin(x)
    return np.sum(x ** 2)


def stepped_either_way(x, n):
    if n > 1:
        for k in range(n):
            x = x * 1.5 + np.sin(x)
    else:
        for k in range(2):
            x = np.cos(x) * 0.5
    return np.sum(x ** 2)


def stepped_or_mapped(x, n):
    if not n == 3:
        for k in range(n):
            x = x * 0.5 - np.cos(x)
    else:
        x = np.cos(x)
    return x[0] + np.sum(x[1:] ** 2)


@njit
def _stepped(x, n):
    if n > 0:
        for k in range(n):
            x = x * 1.5 + np.sin(x)
        return x
    return x * 2


def stepped_by_a_helper(x, n):
    return np.sum(_stepped(x, n) ** 2)


def stepped_in_a_while_then_viewed(x, n):
    if n > 0:
        k = 0
        while k < n:
            x = x * 1.5 + np.sin(x)
            k += 1
    v = x[1:]
    return np.sum(v ** 2)


def stepped_then_written(x, n):
    if n > 0:
        for k in range(n):
            x = x * 1.5 + np.sin(x)
        x[0] = 7.0          # (the new array: the caller's is untouched)
    return np.sum(x ** 2)


def stepped_inside_a_loop(x, n):
    for t in range(3):
        if t < n:
            for k in range(2):
                x = x * 1.5 + np.sin(x)
    return np.sum(x ** 2)


@njit
def _stepped_if_asked(x, n):
    if n > 0:
        for k in range(n):
            x = x * 1.1 + 0.2 * np.sin(x)
    return x


def stepped_by_a_helper_twice(x, n):
    """The helper's parameter is a view of the caller's array: one path binds it to the
    loop's copy, the other keeps it (refused, and a gradient of zeros before that)."""
    y = _stepped_if_asked(x, n)
    z = _stepped_if_asked(y * 0.5, n - 1)
    return np.sum(y * z) + np.sum(_stepped_if_asked(x, 0))


@pytest.mark.parametrize("f, n", [
    (refined_if_asked, 2), (refined_if_asked, 1), (refined_if_asked, 0),
    (stepped_by_a_helper_twice, 2), (stepped_by_a_helper_twice, 1),
    (stepped_by_a_helper_twice, 0),
    (stepped_either_way, 2), (stepped_either_way, 1),
    (stepped_or_mapped, 2), (stepped_or_mapped, 3), (stepped_or_mapped, 0),
    (stepped_by_a_helper, 2), (stepped_by_a_helper, 0),
    (stepped_in_a_while_then_viewed, 2), (stepped_in_a_while_then_viewed, 0),
    (stepped_then_written, 2), (stepped_then_written, 0),
    (stepped_inside_a_loop, 0), (stepped_inside_a_loop, 2), (stepped_inside_a_loop, 5),
])
def test_an_argument_stepped_in_a_loop_on_one_path(f, n):
    x = np.array([0.3, -0.2, 0.5, 1.1])
    kept = x.copy()
    check_value_and_grad(f, (x, n), argnums=0)
    np.testing.assert_array_equal(x, kept)


def test_a_name_stepped_in_a_loop_on_one_path_of_two_values():
    """The analytic value: x stepped twice by 2x on one path, the argument itself on the
    other."""
    def twice_doubled(x, n):
        if n > 0:
            for k in range(2):
                x = 2.0 * x
        return np.sum(x * x)
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(adjit.grad(twice_doubled)(x, 1), 32.0 * x, rtol=1e-15)
    np.testing.assert_allclose(adjit.grad(twice_doubled)(x, 0), 2.0 * x, rtol=1e-15)


def stepped_then_continued(x, c):
    for t in range(3):
        if c[t] > 0:
            for k in range(2):
                x = x * 1.5 + np.sin(x)
            continue
        x[0] = x[0] * 2
    return np.sum(x ** 2)


def test_a_name_stepped_on_a_path_that_then_leaves_its_loop_is_refused():
    """After `continue` the next iteration reads the copy on that path, the argument on the
    other: not one array (crashed the process before)."""
    with pytest.raises(AdjitError, match=r"'x' rebound in a loop on a path of an `if` that "
                       r"may then leave its loop or function. Copy it once before the "
                       r"loops \(x = x.copy\(\)\) and update it in place"):
        adjit.grad(stepped_then_continued)(np.array([0.3, -0.2, 0.5]), np.array([0, 1, 0]))


def stepped_here_written_there(x, c):
    x = x.copy()
    for t in range(c.shape[0]):
        if c[t] > 0:
            for k in range(2):
                x = x * 0.9 + np.sin(x)
        else:
            x[0] = x[0] * 2.0
    return np.sum(x ** 2)


def test_a_refusal_names_the_variable_as_the_user_wrote_it():
    """A name bound twice (`x = x.copy()`, then `x = ...` in a loop) is two names inside
    adjit (`x`, `x_2`); the refusal names the user's `x`, not `x_2` (and before it the
    gradient was wrong)."""
    with pytest.raises(AdjitError, match=r"the array variable 'x' is reassigned"):
        adjit.grad(stepped_here_written_there)(np.array([0.3, -0.2, 0.5]),
                                               np.array([1.0, -1.0, 1.0]))
