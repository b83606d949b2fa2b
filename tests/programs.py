"""User programs covering every construct of the core language.

Each entry of PROGRAMS is (function, arguments, argnums); the tests differentiate each with
adjit and compare against central finite differences, and check the normalized program
computes what the original does.
"""
import math

import numba
import numpy as np

from adjit import stop_gradient
from cases import heat, horner, lennard_jones, sum_of_sin  # noqa: F401  (benchmarks/cases.py)


def running_product(x):
    prod = 1.0
    for i in range(len(x)):
        prod *= x[i]
    return prod


def carried_through_loop(x, n):
    scale = x[0] * 2.0
    acc = 0.0
    for i in range(n):
        acc = acc * scale + math.sin(acc + x[i % x.shape[0]])
    return acc * scale


def while_loop(x):
    k = 0
    while x > 0.1 and k < 50:
        x = x * 0.7 + math.sin(x) * 0.1
        k += 1
    return x * k


def while_data_dependent(x):
    s = 0.0
    i = 0
    while s < 2.0:
        s += x[i % x.shape[0]] ** 2
        i += 1
    return s * s


def branches(x, y):
    if x > y:
        z = x * y
    elif x > 0:
        z = math.exp(x) - y
    else:
        z = -x
    return z * z if z > 1 else z + 1


def bool_conditions(x, y):
    r = 0.0
    if (x > 0 and y > 0) or not x < 2.0:
        r = x * y
    else:
        r = x + y * y
    if 0.0 < x < 1.0:
        r = r * x
    return r


def break_continue(x):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] < 0:
            continue
        s += x[i] ** 2
        if s > 3.0:
            break
    return s * s


def nested_break(x):
    s = 0.0
    for i in range(x.shape[0]):
        for j in range(x.shape[0]):
            if j > i:
                break
            s += x[i] * x[j]
    return s


def early_return(x):
    for i in range(x.shape[0]):
        if x[i] > 0.9:
            return x[i] * 3.0
    return x[0] + x[1]


def early_return_nested(x):
    for i in range(x.shape[0]):
        for j in range(x.shape[0]):
            if x[i] * x[j] > 0.8:
                return x[i] * x[j] * 10.0
    return -x[0]


def inplace_square(u):
    v = u.copy()
    for i in range(v.shape[0]):
        v[i] = v[i] * v[i]
    for i in range(v.shape[0]):
        v[i] = v[i] * v[i]
    return v[0] + v[1] * 2 + v[2]


def overwrite_same_element(x):
    y = np.zeros(2)
    for i in range(x.shape[0]):
        y[0] = y[0] * 0.5 + math.cos(x[i]) * y[1]
        y[1] = x[i] * x[i]
    return y[0] + y[1]


def swap_buffers_by_copy(u, steps):
    a = u.copy()
    b = np.zeros_like(u)
    for t in range(steps):
        for i in range(a.shape[0]):
            b[i] = math.sin(a[i]) * a[i]
        for i in range(a.shape[0]):
            a[i] = b[i]
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i]
    return s


@numba.njit
def njit_helper(a, b):
    return a * math.cos(b)


def plain_helper(a, n):
    s = 0.0
    for k in range(n):
        if s > 10.0:
            return s
        s = s + a * (k + 1)
    return s


def calls_helpers(x):
    s = 0.0
    for i in range(x.shape[0] - 1):
        s += njit_helper(x[i], x[i + 1]) + plain_helper(x[i], 3)
    return s


def writes_through_helper(y, i, v):
    y[i] = y[i] + v * v


def helper_writes_array(x):
    y = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        writes_through_helper(y, i, x[i])
    return y[0] * y[1] + y[2]


def tuple_assign(x, y):
    a, b = x, y
    a, b = b * a, a - b
    return a * b


def conditional_expression(x):
    y = x * 2 if x > 0 else -x
    return y * x


def two_d(a):
    s = 0.0
    n, m = a.shape
    for i in range(n):
        for j in range(m):
            s += a[i, j] * (i + 1) * math.cos(a[i, j])
    return s


def local_two_d(a):
    b = np.zeros((a.shape[0], 2))
    for i in range(a.shape[0]):
        b[i, 0] = a[i] * a[i]
        b[i, 1] = b[i, 0] + math.sin(a[i])
    s = 0.0
    for i in range(a.shape[0]):
        s += b[i, 0] * b[i, 1]
    return s


def negative_step(x):
    s = 0.0
    for i in range(x.shape[0] - 1, -1, -2):
        s = s * 0.5 + x[i] * x[i]
    return s


def integer_arithmetic(x, k):
    j = (k * 7) // 3 % x.shape[0]
    m = int(x[0] * 3.0) % x.shape[0]
    return x[j] * x[m] + x[(j + 1) % x.shape[0]] ** 2


def reassigned_argument(x, y):
    x = x * x
    x = x + y
    y = x * y
    return x * y


def allocations(x):
    a = np.ones(x.shape[0])
    b = np.empty_like(x)
    c = np.zeros_like(x)
    d = np.empty(x.shape[0])
    e = np.ones_like(x)
    for i in range(x.shape[0]):
        b[i] = x[i] * a[i]
        c[i] = b[i] * e[i] + 1.0
        d[i] = c[i] * x[i]
    s = 0.0
    for i in range(x.shape[0]):
        s += d[i] - c[i] * 0.5
    return s


def stopped_in_loop(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * stop_gradient(x[i] * x[i]) + stop_gradient(s) * x[i]
    return s


def loop_index_after_loop(x):
    for i in range(x.shape[0] - 1):
        x[i] = x[i]
    last = x[i] * x[i]
    for i in range(2):
        last = last + x[i]
    return last * x[i]


def copy_of_changing_array_in_loop(x, y):
    """A fresh copy each iteration of an array the loop writes: the copy's elements differ
    between iterations, so the backward sweep must not re-read the last one (fuzzer find)."""
    b = x.copy()
    for k in range(3):
        a = b.copy()
        b[k] = y * a[k] * a[k]
        y = y + a[k + 1] * b[k] * a[k]
    return y


def fresh_buffer_in_loop(x, y):
    """A buffer allocated, written and copied inside a loop, in a branch of a while loop."""
    b = x.copy()
    k = 0
    while k < 3:
        if b[k] > -1.0:
            a = np.zeros(4)
            a[0] = b[k]
            c = a.copy()
            b[k] = y * c[0] * c[0]
        k += 1
    return b[0] + b[1] * b[2]


rng = np.random.default_rng(42)

PROGRAMS = [
    (sum_of_sin, (rng.random(7),), 0),
    (horner, (rng.random(8), 0.7), (0, 1)),
    (running_product, (rng.random(6) + 0.5,), 0),
    (carried_through_loop, (rng.random(4) * 0.5, 9), 0),
    (while_loop, (2.0,), 0),
    (while_data_dependent, (np.array([0.3, 0.6, 0.5]),), 0),
    (branches, (2.0, 1.0), (0, 1)),
    (branches, (0.5, 1.0), (0, 1)),
    (branches, (-0.5, 1.0), (0, 1)),
    (branches, (-2.0, 1.0), (0, 1)),
    (bool_conditions, (0.5, 0.7), (0, 1)),
    (bool_conditions, (-0.5, 0.7), (0, 1)),
    (bool_conditions, (2.5, -0.7), (0, 1)),
    (break_continue, (np.array([0.5, -1.0, 1.0, 1.5, 1.0, 2.0]),), 0),
    (nested_break, (rng.random(5),), 0),
    (early_return, (np.array([0.5, 0.2, 0.95, 0.1]),), 0),
    (early_return, (np.array([0.5, 0.2, 0.5, 0.1]),), 0),
    (early_return_nested, (np.array([0.5, 0.3, 0.95, 0.1]),), 0),
    (early_return_nested, (np.array([0.5, 0.3, 0.4, 0.1]),), 0),
    (inplace_square, (rng.random(4),), 0),
    (overwrite_same_element, (rng.random(5),), 0),
    (swap_buffers_by_copy, (rng.random(5), 4), 0),
    (heat, (rng.random(10), 0.2, 5), (0, 1)),
    (lennard_jones, (np.array([[0.0, 0, 0], [1.1, 0.1, 0], [0.2, 1.2, 0.1], [1.0, 1.0, 1.0]]),),
     0),
    (calls_helpers, (rng.random(5),), 0),
    (helper_writes_array, (rng.random(3),), 0),
    (tuple_assign, (0.3, 1.7), (0, 1)),
    (conditional_expression, (0.6,), 0),
    (conditional_expression, (-0.6,), 0),
    (two_d, (rng.random((3, 4)),), 0),
    (local_two_d, (rng.random(4),), 0),
    (negative_step, (rng.random(7),), 0),
    (integer_arithmetic, (rng.random(5) + 0.1, 4), 0),
    (reassigned_argument, (0.7, 1.3), (0, 1)),
    (allocations, (rng.random(4),), 0),
    (loop_index_after_loop, (rng.random(4),), 0),
    (copy_of_changing_array_in_loop, (rng.random(4), 0.7), (0, 1)),
    (fresh_buffer_in_loop, (rng.random(4), 0.7), (0, 1)),
]
