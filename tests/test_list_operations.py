"""Lists joined and repeated (normalize/sugar.py list_operations).

adjit reads a list as the array of its numbers. numba's `[v] * n` is a list of n copies of v
(a buffer: `a = [0.0] * 4` then `a[i] = ...`, as FinancePy writes them), where an array's
`*` multiplies each element: `[x] * 3` was read as the array [3 x], a silent wrong (and
writes past its one element corrupted memory). A list repeated, `[v] * n` or `n * [v]`, is
now np.full(max(n, 0), v); every other `+` or `*` of a list is refused by name."""
import re

import numba
import numpy as np
import pytest

from adjit import AdjitError, value_and_grad
from fd import check_value_and_grad


def repeated_length(x):
    a = [x] * 3
    return x * len(a)


def repeated_buffer(x):
    a = [0.0] * 4
    s = 0.0
    for i in range(4):
        a[i] = x * (i + 1)
    for v in a:
        s += v
    return s


def repeated_by_a_count(x, n):
    a = n * [x * x]
    a[0] = a[0] + x
    return np.sum(np.array(a)) * len(a)


def repeated_no_times(x, n):
    a = [x] * (n - 5)
    return len(a) + x


def running_maximum(x, n):
    """A running maximum written into a list buffer, the way a finance library does."""
    m = [0.0] * n
    m[0] = x
    for i in range(1, n):
        m[i] = max(m[i - 1], x * np.sin(i))
    return m[n - 1] + m[n // 2]


def rebound_to_an_array(x):
    w = [1.0, 2.0, 3.0]
    w = np.array(w)
    v = [x * i for i in range(3)]
    v = np.array(v)
    return np.sum(w * x) + np.sum(v * v)


CASES = [(rebound_to_an_array, (2.0,), 26.0), (repeated_length, (2.0,), 3.0), (repeated_buffer, (2.0,), 10.0),
         (repeated_by_a_count, (1.5, 3), None), (repeated_no_times, (0.7, 2), 1.0),
         (running_maximum, (0.9, 6), None)]


@pytest.mark.parametrize("f, args, expected", CASES, ids=[c[0].__name__ for c in CASES])
def test_a_list_repeated_is_n_copies_as_numba_makes_it(f, args, expected):
    g = check_value_and_grad(f, args, 0, value_rtol=1e-15)
    if expected is not None:
        assert g == pytest.approx(expected, rel=1e-15)


def joined(x):
    a = [x] + [2.0 * x]
    return a[0] * a[1]


def repeated_name(x):
    a = [x]
    b = a * 2
    return b[0] + b[1]


def extended(x):
    a = [x, 1.0]
    a += [3.0]
    return a[0] * a[2]


def two_elements_repeated(x):
    a = [x, 1.0] * 2
    return a[0] * a[2] + a[3] * len(a)


def comprehension_joined(x):
    a = [x * i for i in range(3)] + [x]
    return a[3]


REFUSED = [(joined, "`+` (joining) of a list"), (repeated_name, "`*` (repeating) of a list"),
           (extended, "`+=` (extending) of a list"),
           (two_elements_repeated, "`*` (repeating) of a list"),
           (comprehension_joined, "`+` (joining) of a list")]


@pytest.mark.parametrize("f, words", REFUSED, ids=[r[0].__name__ for r in REFUSED])
def test_other_joins_and_repeats_of_lists_are_refused(f, words):
    with pytest.raises(AdjitError, match=re.escape(words)) as info:
        value_and_grad(f)(2.0)
    assert "np.full(n, v)" in str(info.value)
    numba.njit(f)(2.0)      # (numba compiles each: they are lists there)


def repeated_array(x):
    a = [x] * 2
    return np.sum(a[0] * a[1])


def test_a_list_of_one_array_repeated_is_refused():
    """numba's [x] * 2 of an array is a list of two references to it; np.full takes a
    number (numba refuses an array there, adjit read every element as x[0])."""
    with pytest.raises(AdjitError, match=re.escape("np.full with an array as its value")):
        value_and_grad(repeated_array)(np.array([0.5, 1.2, -0.7]))
    with pytest.raises(AdjitError, match=re.escape("np.full with an array as its value")):
        value_and_grad(lambda_free_full)(np.array([0.5, 1.2, -0.7]))


def lambda_free_full(x):
    return np.sum(np.full(2, x))


# a list passed to a helper: the helper's `+` and `*` of it are a list's too ---------------
@numba.njit
def weighted_join(v):
    w = v + v               # numba: the list joined to itself, twice as long
    s = 0.0
    for i in range(len(w)):
        s += w[i] * (i + 1)
    return s


@numba.njit
def extended_in_place(v):
    v += v                  # numba: the list extended by itself
    return v[len(v) - 1] * len(v)


def extend_in_a_helper(a, b):
    return extended_in_place([a, b])


def join_of_a_comprehension(a, b):
    return weighted_join([a * i + b for i in range(2)])


def join_of_appends(a, b):
    v = []
    for i in range(2):
        v.append(a * i + b)
    return weighted_join(v)


def join_of_appends_held_fixed(a, b):
    v = []
    for i in range(2):
        v.append(b * i + 1.0)
    return a * weighted_join(v)


def sorted_comprehension(a, b):
    # (numpy's functions take a list as its array: np.sort of it is numba's too)
    return np.sum(np.sort(np.array([a * i - b for i in range(3)])) * np.arange(3.0))


def repeated_parameter(v):
    w = v * 2
    return w[0] * w[len(w) - 1]


@numba.njit
def arrays_of_the_parameter(v):
    w = np.array(v)
    return np.sum(w + w * w)


def join_of_a_literal(a, b):
    return weighted_join([a, b])


def join_of_a_name(a, b):
    v = [a, b]
    return 2.0 * weighted_join(v)


def repeat_in_a_plain_helper(a, b):
    return repeated_parameter([a, b])


def join_of_constants(a):
    return a * weighted_join([1.0, 2.0])


def join_of_an_argument_held_fixed(a, b):
    return a * weighted_join([b, 2.0])


def arrays_made_of_a_passed_list(a, b):
    return arrays_of_the_parameter([a, b])


JOINED = "in function 'weighted_join' (.*, line %d): `+` (joining) of a list passed as `v`"
FELL_BACK = "adjit does not call `weighted_join` as numba compiles it either: it is given a list"


@pytest.mark.parametrize("f, argnums, words", [
    (join_of_a_literal, (0, 1), [JOINED, FELL_BACK]),
    (join_of_a_name, (0, 1), [JOINED, FELL_BACK]),
    (join_of_an_argument_held_fixed, 0, [JOINED, FELL_BACK]),
    (join_of_a_comprehension, (0, 1), [JOINED, FELL_BACK]),
    (join_of_appends, (0, 1), [JOINED, FELL_BACK]),
    (join_of_appends_held_fixed, 0, [JOINED, FELL_BACK]),
    (repeat_in_a_plain_helper, (0, 1), ["`*` (repeating) of a list passed as `v`"]),
    (extend_in_a_helper, (0, 1), ["in function 'extended_in_place'",
                                  "`+=` (extending) of a list passed as `v`"])],
    ids=["literal", "name", "held-fixed", "comprehension", "appends", "appends-held-fixed",
         "plain-helper", "extended"])
def test_a_list_a_helper_joins_or_repeats_is_refused(f, argnums, words):
    """numba's helper joins (repeats) the list it is given; adjit read the list as the array
    of its numbers, whose `+` adds each element: 5.0 where numba gives 9.0. The refusal names
    the helper's line; an @njit helper is then not called as numba compiles it either."""
    line = weighted_join.py_func.__code__.co_firstlineno + 2       # (@njit, def) w = v + v
    with pytest.raises(AdjitError) as info:
        value_and_grad(f, argnums=argnums)(1.5, 0.5)
    for w in words:
        pattern = re.escape(w).replace(re.escape(".*"), ".*").replace(re.escape("%d"), str(line))
        assert re.search(pattern, str(info.value)), (w, str(info.value))


def test_lists_a_helper_reads_as_numba_does_keep_their_derivatives():
    # numbers written out: the call is numba's own (joined there), times a
    assert value_and_grad(join_of_constants)(1.5) == (numba.njit(join_of_constants)(1.5), 16.0)
    # np.array of the list: an array, whose `+` is elementwise in numba too
    check_value_and_grad(arrays_made_of_a_passed_list, (1.5, 0.5), (0, 1))
    check_value_and_grad(sorted_comprehension, (1.5, 0.5), (0, 1))
