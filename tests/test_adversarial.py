"""Adversarial correctness tests for adjit.

Every gradient is checked against central finite differences of the plain Python function
(or, where stop_gradient makes finite differences meaningless, against a hand-derived
derivative) -- never against adjit itself. Each check also verifies that value_and_grad's
value equals the plain function's value and that the gradient call mutates the arguments
exactly as the function itself does (i.e. not at all unless the function writes into them).

Inputs are chosen away from kinks and branch boundaries.

Cases that currently fail because of an adjit bug are marked xfail(strict=True) with a
minimal reproducer in a comment; "FIXED BUG" comments mark bugs these tests found that
have been fixed since (the reproducer is kept as a regression test).
"""
import math

import numba
import numpy as np
import pytest

from adjit import grad, stop_gradient, value_and_grad

from fd import check_value_and_grad, fd_grad

X5 = np.array([1.1, 2.0, -0.7, 1.5, 0.3])
A3 = np.array([[1.1, 0.3, -0.4], [0.2, 1.5, 0.7], [-0.6, 0.9, 1.2]])


# --------------------------------------------------------------------------- harness
def _copy(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


_CACHE = {}


def _compiled(kind, f, argnums):
    key = (kind, f, argnums)
    if key not in _CACHE:
        _CACHE[key] = (value_and_grad if kind == "vag" else grad)(f, argnums=argnums)
    return _CACHE[key]


def check(f, *args, argnums=None, expected=None, rtol=1e-5, atol=1e-7, modes=("vag", "grad")):
    """grad(f) and value_and_grad(f) (their forward sweeps are pruned differently) vs the
    plain f (value, argument mutation) and finite differences (or `expected`, a tuple of
    gradients in argnums order). `modes` trims compilation time for the heaviest cases."""
    if argnums is None:
        argnums = tuple(i for i, a in enumerate(args) if isinstance(a, (float, np.ndarray)))
    theirs = _copy(args)
    plain = f(*theirs)
    if expected is None:
        expected = tuple(fd_grad(f, args, k) for k in argnums)
    for kind in modes:
        ours = _copy(args)
        out = _compiled(kind, f, argnums)(*ours)
        if kind == "vag":
            value, grads = out
            assert value == pytest.approx(plain, rel=1e-12, abs=1e-14), "value_and_grad value"
        else:
            grads = out
        for a, b in zip(ours, theirs):
            if isinstance(a, np.ndarray):
                np.testing.assert_array_equal(a, b, err_msg=f"{kind}: arguments mutated "
                                                            "differently from f itself")
        assert isinstance(grads, tuple) and len(grads) == len(argnums)
        for k, got, exp in zip(argnums, grads, expected):
            if isinstance(args[k], np.ndarray):
                assert isinstance(got, np.ndarray) and got.shape == args[k].shape
            np.testing.assert_allclose(got, exp, rtol=rtol, atol=atol,
                                       err_msg=f"{kind}: gradient w.r.t. argument {k}")


# --------------------------------------------------------------------------- loops, products
def loop_power(x, n):
    p = 1.0
    for i in range(n):
        p *= x
    return p


@pytest.mark.parametrize("n", [0, 1, 5, -3])
def test_loop_carried_power_runtime_trip(n):
    check(loop_power, 1.3, n, expected=(n * 1.3 ** (n - 1) if n > 0 else 0.0,))


def long_loop(x, n):
    s = x
    for i in range(n):
        s = s * 0.999 + math.sin(s) * 0.001
    return s


def test_long_loop_tape_growth():
    check(long_loop, 0.7, 5000)


def prod_array(x):
    p = 1.0
    for i in range(x.shape[0]):
        p *= x[i]
    return p


@pytest.mark.parametrize("x", [X5, np.array([0.5, -2.0, 3.0]), np.array([2.0])])
def test_prod_times_equals(x):
    check(prod_array, x, expected=(np.prod(x) / x,))


def nested_triangular(x, n):
    s = 0.0
    for i in range(n):
        s = math.sin(s) + x[i % 5]
        for j in range(i, n):
            s = s * 0.999 + math.cos(s) * 0.001 * x[j % 5]
            if j % 7 == 3:
                continue
            s = math.tanh(s) + 0.5 * s
    return s


def test_nested_triangular_loops_long():
    check(nested_triangular, X5, 60, modes=("grad",))


def stencil(x, n):
    u = np.zeros(n)
    for i in range(n):
        u[i] = x[i % 5]
    for r in range(30):
        for i in range(1, n - 1):
            u[i] = 0.25 * u[i - 1] + 0.5 * math.sin(u[i]) + 0.25 * u[i + 1]
    return u[n // 2] + u[1]


def test_inplace_stencil_many_sweeps():
    check(stencil, X5, 100, modes=("grad",))


def while_nested_neg_step(x, n):
    s = 0.0
    k = 0
    while k < n:
        for j in range(n - k, 0, -3):
            s = math.sin(s * x[j % 5]) + 0.5
        k += 1
    return s


def test_while_with_inner_negative_step_loop():
    check(while_nested_neg_step, X5, 40)


# --------------------------------------------------------------------------- in-place arrays
def square_in_place(x):
    n = x.shape[0]
    u = x.copy()
    for i in range(n):
        u[i] = u[i] * u[i]
    s = 0.0
    for i in range(n):
        s += u[i] * x[i]
    return s


def test_in_place_square_then_read():
    check(square_in_place, X5, expected=(3 * X5 ** 2,))


def same_element_many_times(x):
    y = np.zeros(1)
    for i in range(x.shape[0]):
        y[0] = y[0] * x[i] + math.sin(x[i])
    return y[0]


def test_same_element_overwritten_in_loop():
    check(same_element_many_times, X5)


def reads_after_writes(x):
    u = x.copy()
    a = u[2]
    u[2] = u[2] * 3.0
    b = u[2]
    u[2] = math.sin(u[2])
    return a * b * u[2]


def read_next_then_overwrite(x):
    u = x.copy()
    s = 0.0
    for i in range(len(x) - 1):
        t = u[i + 1] * u[i + 1]
        u[i + 1] = u[i] * 0.5 + t
        s += t * x[i]
    return s + u[4]


def overwrite_chain(x):
    u = x.copy()
    for i in range(len(u)):
        u[i] = u[i] * u[i]
        u[i] = u[i] * u[i]
        u[i] = math.exp(u[i] * 0.1) * u[i]
    return u[0] + u[1] * u[2] + u[4]


def rotating_index(x):
    u = x.copy()
    j = 0
    s = 0.0
    for i in range(len(u)):
        j = (j + 3) % 5
        s += u[j] * u[i]
        u[j] = s
    return s


def index_reassigned(x):
    u = x.copy()
    i = 2
    a = u[i]
    u[i] = 10.0
    i = 0
    u[i] = a * a
    return a * u[0] + u[2] * a


def modulo_slots(x):
    y = np.zeros(3)
    for i in range(x.shape[0]):
        y[i % 3] = y[i % 3] * x[i] + x[i]
    return y[0] + y[1] * y[2]


def repeated_sweeps(x):
    u = x.copy()
    s = 0.0
    for k in range(3):
        for i in range(len(u)):
            s += math.sin(u[i]) * u[(i + 1) % 5]
            u[i] = s * 0.1 + u[i]
    return s


def copies_of_copies(x):
    u = x.copy()
    u[0] = u[0] * u[1]
    v = u.copy()
    u[1] = u[0] * 3.0
    v[0] = v[0] * v[0]
    w = v.copy()
    v[2] = w[0] + u[1]
    return u[0] + u[1] * v[0] + v[2] * w[0]


def swap_elements(x):
    n = len(x)
    u = np.zeros(n)
    v = np.ones(n)
    for i in range(n):
        u[i], v[i] = v[i] * x[i], u[i] + x[i]
        v[i], u[i] = u[i], v[i]
    return u[1] * v[2] + u[3]


def sequential_rebind(x):
    # adjit accepts a straight-line rebinding of an array name; it must then be right
    u = x.copy()
    u[0] = u[0] * u[1]
    a = u[0]
    u = np.ones(5)
    u[1] = x[2] * u[1] * a
    return u[0] * x[0] + u[1]


@pytest.mark.parametrize("f", [reads_after_writes, read_next_then_overwrite, overwrite_chain,
                               rotating_index, index_reassigned, modulo_slots, repeated_sweeps,
                               copies_of_copies, swap_elements, sequential_rebind])
def test_array_overwrites(f):
    check(f, X5 * 0.6)


def branch_on_overwritten(x):
    u = np.empty_like(x)
    for i in range(x.shape[0]):
        u[i] = x[i]
    for i in range(x.shape[0]):
        if u[i] > 1.0:
            u[i] = u[i] * u[i]
        u[i] = u[i] + x[i]
    t = 0.0
    for i in range(x.shape[0]):
        if u[i] > 2.5:
            t += u[i] * x[i]
    return t


def test_branch_on_overwritten_values():
    check(branch_on_overwritten, X5)


def mutates_argument(x):
    a = x[0] * x[1]
    x[0] = 3.0
    x[1] = a * x[1]
    s = 0.0
    for i in range(x.shape[0]):
        x[i] = x[i] * x[i]
        s += x[i]
    return a * a + s


def test_function_that_mutates_its_argument():
    # the gradient call must mutate x exactly as f does (checked inside `check`)
    check(mutates_argument, X5)


# FIXED BUG: an array made by `.copy()` inside a loop: the adjoint of `u = x.copy()` adds u_bar
# into x_bar but never clears u_bar (np.zeros/np.ones allocations do get `u_bar.fill(0)`),
# so every earlier iteration's contribution is added again.
#   def f(x):
#       s = 0.0
#       for k in range(3):
#           u = x.copy()
#           s += u[k]
#       return s
# grad(f)(X5) -> [1, 2, 3, 0, 0]; expected [1, 1, 1, 0, 0].
def copy_in_loop(x):
    s = 0.0
    for k in range(3):
        u = x.copy()
        s += u[k]
    return s


def _scratch_copy(x, k):
    t = x.copy()
    t[k] = t[k] * t[k]
    return t[k] + t[0]


def helper_copy_in_loop(x):
    s = 0.0
    for k in range(3):
        s += _scratch_copy(x, k)
    return s


@pytest.mark.parametrize("f", [copy_in_loop, helper_copy_in_loop])
def test_copy_allocated_inside_loop(f):
    check(f, X5)


def zeros_in_loop(x):
    s = 0.0
    for k in range(3):
        u = np.zeros(3)
        u[0] += x[0]
        u[1] = u[1] + x[1] * s
        v = np.ones(2)
        v[1] *= x[2]
        s += u[0] * u[1] + v[1] * v[0]
    return s


def _scratch_zeros(x, k):
    t = np.zeros(3)
    for i in range(3):
        t[i] += x[i] * k
    return t[0] * t[1] + t[2]


def helper_zeros_in_loop(x):
    s = 0.0
    for k in range(3):
        s += _scratch_zeros(x, s + 1.0)
    return s


@pytest.mark.parametrize("f", [zeros_in_loop, helper_zeros_in_loop])
def test_zeros_allocated_inside_loop(f):
    check(f, X5)


# --------------------------------------------------------------------------- scalars
def scalar_chain(x, y):
    x = x * x
    y = x + y
    x = y * x
    x, y = y, x
    t = math.sin(x) * y
    t = t * t
    return x * y + t


def test_scalar_reassignment_chain():
    check(scalar_chain, 1.1, 0.4)


def fib_like(x, y):
    a, b = x, y
    for i in range(3):
        a, b = b, a * b
    return a + b


def swap_in_loop(x, y):
    a = x
    b = y
    for i in range(5):
        a, b = a * b, a + b
        if a > 10.0:
            a, b = b, a
    return a - b


@pytest.mark.parametrize("f", [fib_like, swap_in_loop])
def test_tuple_assignment_in_loops(f):
    check(f, 1.3, 0.9)


def int_then_float(x):
    s = 0
    for i in range(x.shape[0]):
        s = s + x[i] * x[i]
    t = 1
    t *= x[0]
    return s + t


def int_return_branch(x):
    if x[0] > 5.0:
        return 0
    return x[0] * x[1]


@pytest.mark.parametrize("f", [int_then_float, int_return_branch])
def test_int_initialised_accumulators(f):
    check(f, X5)


def floor_mod(x, y):
    return (x // y) * x + (x % y) * y + x % 0.3


@pytest.mark.parametrize("x,y", [(5.3, 1.7), (-5.3, 1.7), (5.3, -1.7)])
def test_floordiv_mod(x, y):
    check(floor_mod, x, y)


def augmented_float_ops(x, y):
    x //= 0.3
    y %= 0.4
    y **= 2.0
    return x * y + y


def test_augmented_floordiv_mod_pow():
    check(augmented_float_ops, 1.6, -0.7)


def math_zoo(x, y):
    return (math.atan2(x, y) + math.hypot(x, y) + math.erf(x) + math.erfc(y)
            + math.fabs(-x) + math.floor(x) + math.ceil(y) * x + math.log10(x)
            + math.log1p(y) + math.expm1(x) + math.pow(x, y) + math.asin(x * 0.5)
            + math.acos(y * 0.5) + math.atan(x) + math.sinh(x) + math.cosh(y)
            + math.tanh(x * y) + math.tan(y) + math.sqrt(x) + math.exp(-y) + math.log(x)
            + x ** y + y ** 2 + 2.0 ** x + (-x) ** 2.0 + abs(x - y)
            + max(x, y) * min(x, 3.0 * y) + min(x, y, 0.5) + 2 * x + 3 / x - x / 2)


def test_math_zoo():
    check(math_zoo, 1.3, 0.7)


def powers(x):
    return x ** 2 + x ** 3.0 + math.pow(x, 2.0) + x * x


@pytest.mark.parametrize("x", [0.0, -1.0])
def test_powers_at_zero_and_negative_base(x):  # no NaN from x**(y-1) or log(x)
    check(powers, x, expected=(2 * x + 3 * x * x + 2 * x + 2 * x,))


# FIXED BUG: d(x**y)/dy at x == 0 (y > 0) is 0 (0**y is constant 0 for y > 0; JAX gives 0 too),
# but adjit computes x**y * log(x) = 0 * -inf = NaN.
#   def f(x, y):
#       return x ** y
# grad(f, argnums=1)(0.0, 2.0) -> nan; expected 0.0 (same for math.pow).
def pow_both(x, y):
    return x ** y + math.pow(x, y)


def test_pow_exponent_derivative_at_zero_base():
    check(pow_both, 0.0, 2.0, expected=(0.0, 0.0))


def test_pow_exponent_derivative_positive_base():
    check(pow_both, 0.7, 2.5)


def _three(a, b, c):
    return a * 2.0 + b * 3.0 + c[0] * 5.0


def test_argnums_order_is_respected():
    c = np.ones(2)
    gc, ga = grad(_three, argnums=(2, 0))(1.0, 1.0, c)
    np.testing.assert_array_equal(gc, [5.0, 0.0])
    assert ga == 2.0
    v, (gb, gc, ga) = value_and_grad(_three, argnums=(1, -1, 0))(1.0, 1.0, c)
    assert (v, gb, ga) == (10.0, 3.0, 2.0)
    np.testing.assert_array_equal(gc, [5.0, 0.0])


def int_index_from_float(x):
    k = int(x[0] * 2.0)
    j = int(abs(x[2]) * 3.0) % 5
    return x[k] * x[0] + x[j] * float(k)


def test_int_index_from_float():
    check(int_index_from_float, X5)


def logic_values(x, y):
    v = x or y
    w = (x > 1.0) and y
    r = 0.0
    if not x:
        r = y
    else:
        r = x * y
    return v * 2.0 + w + r + ((x * y) if 0.0 < x < y * 3.0 < 5.0 else -x)


def test_and_or_not_as_values_and_conditions():
    check(logic_values, 1.5, 0.7)


def target_order(x):
    u = x.copy()
    i = 0
    i, u[i] = 2, x[0] * x[1]
    j = 0
    u[j], j = x[3] * x[4], 4
    k = 1
    k = u[k] = 3
    return u[0] + u[2] * 3.0 + u[3] * u[4] + u[1] + i + j + k


def test_tuple_and_chained_assignment_target_order():
    check(target_order, X5)


# --------------------------------------------------------------------------- control flow
def data_while(x):
    s = 0.0
    i = 0
    while s < 10.0:
        s = s + x * x
        i += 1
    return s * i


def test_while_data_dependent_exit():
    check(data_while, 1.3)


def while_true_return(x):
    i = 0
    s = 0.0
    while True:
        s += x[i] * x[i]
        if s > 4.0:
            return s * x[i]
        i += 1
        if i >= x.shape[0]:
            break
    return -s


@pytest.mark.parametrize("scale", [1.0, 0.1])
def test_while_true_with_return_and_break(scale):
    check(while_true_return, X5 * scale)


def break_continue_nested(x):
    s = 0.0
    for i in range(len(x)):
        for j in range(len(x)):
            if j == i:
                continue
            if x[j] < 0.0:
                if x[i] > 1.4:
                    break
                s += 0.5 * x[j]
                continue
            s = s * 0.9 + x[i] * x[j]
            if s > 6.0:
                return s * x[j]
        s += x[i]
    return s


@pytest.mark.parametrize("scale", [1.0, 0.3])
def test_break_continue_return_nested(scale):
    check(break_continue_nested, X5 * scale, modes=("grad",))


def triple_nested(x):
    total = 0.0
    for i in range(3):
        for j in range(3):
            for k in range(3):
                if k > j:
                    break
                if (i + j + k) % 2 == 1:
                    continue
                total = total * 0.5 + x[i] * x[j] * x[k]
    return total


def nested_whiles(x):
    s = 1.0
    i = 0
    while True:
        j = 0
        while True:
            s = s * 0.7 + x[i] * x[j]
            j += 1
            if j > i:
                break
        i += 1
        if i == len(x):
            break
        if s > 3.0:
            continue
        s = s + 1.0
    return s


def early_return_nested(x):
    for i in range(len(x)):
        for j in range(i):
            if x[i] * x[j] < -1.0:
                return x[i] * x[j] * x[0]
        if x[i] > 1.8:
            return x[i] ** 3
    return 0.0


def index_mutated_in_for_body(x):
    s = 0.0
    for i in range(4):
        s += x[i] * x[i]
        i = i + 1
        s += x[i] * s * 0.1
    return s


def guarded_lookahead(x):
    s = 0.0
    n = len(x)
    for i in range(n):
        s += x[i] * (x[i + 1] if i + 1 < n else 1.0)
    i = 0
    while i < len(x) and x[i] > 0.0:
        s += x[i] * x[i]
        i += 1
    return s


@pytest.mark.parametrize("f", [triple_nested, nested_whiles, early_return_nested,
                               index_mutated_in_for_body, guarded_lookahead])
@pytest.mark.parametrize("x", [X5, np.array([1.1, 1.0, 0.7, 1.5, 0.3]),
                               np.array([1.1, 1.0, -0.7, 1.5, 0.3])])
def test_control_flow(f, x):
    check(f, x)


def loop_index_after_loop(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    for i in range(2):
        s += x[i] * x[i]
    t = 0.0
    for k in range(x.shape[0] - 1, -1, -2):
        t = t * x[k] + 1.0
    return s * x[i] + t + x[k]


def test_loop_index_reused_and_read_after_loop():
    check(loop_index_after_loop, X5)


# FIXED BUG: the forward-sweep DCE drops a `for` loop whose body computes nothing the gradient
# needs, even though the loop variable is read after the loop.
#   def f(x):
#       for i in range(x.shape[0]):
#           pass
#       return x[i] * x[i]
# grad(f)(x) -> raw numba TypingError "NameError: name 'i' is not defined".
def dead_loop_index_undefined(x):
    for i in range(x.shape[0]):
        pass
    return x[i] * x[i]


def dead_loop_index_after_body(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    return x[i] * x[i]


# The realistic form: a search loop whose body is only `if ...: break`.
#   def f(x):
#       for i in range(len(x)):
#           if x[i] > 1.5:
#               break
#       return x[i] * x[i]
def find_first(x):
    for i in range(len(x)):
        if x[i] > 1.5:
            break
    return x[i] * x[i]


@pytest.mark.parametrize("f", [dead_loop_index_undefined, dead_loop_index_after_body,
                               find_first])
def test_dead_loop_index_read_after_loop_raises(f):
    check(f, X5)


# Same bug, silent variant: with `i = 0` before the loop the dropped loop leaves i == 0,
# so value and gradient are silently wrong.
#   def f(x):
#       i = 0
#       for i in range(x.shape[0] - 2):
#           pass
#       return x[i] * x[i]
# value_and_grad(f)(X5) -> (1.21, [2.2, 0, 0, 0, 0]); expected (0.49, [0, 0, -1.4, 0, 0]).
def dead_loop_index_initialised(x):
    i = 0
    for i in range(x.shape[0] - 2):
        pass
    return x[i] * x[i]


def dead_inner_loop_index(x, y):
    i3 = 0
    for w in range(3):
        for i3 in range(2):
            pass
        y = y * x[i3]
    return y


def find_first_initialised(x):
    i = 0
    for i in range(len(x)):
        if x[i] > 1.5:
            break
    return x[i] * x[i]


@pytest.mark.parametrize("f", [dead_loop_index_initialised, find_first_initialised])
def test_dead_loop_index_initialised_silently_wrong(f):
    # find_first_initialised(X5): value_and_grad gives (1.21, [2.2, 0, ...]) instead of
    # (4.0, [0, 4, 0, 0, 0])
    check(f, X5)


def find_first_recorded(x):
    k = -1
    for i in range(len(x)):
        if x[i] > 1.5:
            k = i
            break
    return x[k] * x[k]


def indices_after_breaks(x):
    s = 0.0
    for i in range(len(x)):
        for j in range(len(x)):
            s += x[i] * x[j]
            if s > 3.0:
                break
        if s > 5.0:
            break
    k = 0
    while k < len(x):
        s += x[k] * 0.5
        if s > 7.0:
            break
        k += 1
    return s * x[i] * x[j] + x[k % 5]


def test_loop_indices_read_after_break():
    check(indices_after_breaks, X5)


def test_search_loop_with_recorded_index():
    check(find_first_recorded, X5, expected=(np.array([0, 4.0, 0, 0, 0]),))


def test_dead_inner_loop_index_silently_wrong():
    check(dead_inner_loop_index, X5, 0.3)


def runtime_range(x, lo, hi, st):
    s = 0.5
    for i in range(lo, hi, st):
        s = s * x[i] + x[i] * x[i]
        if s > 50.0:
            break
    return s


@pytest.mark.parametrize("lo,hi,st", [(0, 5, 1), (4, -1, -1), (4, -1, -2), (1, 5, 2), (3, 1, 1),
                                      (1, 3, -1), (0, 5, 3), (-1, -6, -1)])
def test_runtime_range_arguments(lo, hi, st):
    check(runtime_range, X5, lo, hi, st)


def bound_changed_after_loop(x):
    n = 3
    s = 0.0
    for i in range(n):
        s += x[i] * x[i]
    n = 5
    st = 1
    for i in range(0, 5, st):
        s = s * x[i] * 0.3 + 1.0
    st = 2
    m = 5
    for i in range(m):
        if x[i] < 0.0:
            break
        s = s * x[i] + 1.0
    m = 2
    return s + x[n - 1] + st + m


def bound_changed_in_body(x, n):
    s = 0.0
    for i in range(n):
        s += x[i] * x[i]
        n = n - 1
    m = 4
    for i in range(1, m):
        for j in range(i, m):
            s = s + x[i] * x[j] * s * 0.1 + x[j]
        m -= 1
    lo = 0
    while lo < 3:
        for i in range(lo, 5, 2):
            s = s * x[i] * 0.5 + x[lo]
        lo += 1
    return s


def test_loop_bounds_changed_after_and_inside_loop():
    check(bound_changed_after_loop, X5)
    check(bound_changed_in_body, X5 * 0.5, 5, modes=("grad",))


# --------------------------------------------------------------------------- branches, guards
def guarded_division(x, y):
    a = x * x if y == 0.0 else x / y
    b = 0.0
    if y != 0.0 and x / y > 1.0:
        b = x
    c = math.sqrt(x) if x > 0.0 else y * y
    d = math.log(x) if x > 0.0 else y * y
    return a + b + c + d


def test_unselected_branches_not_evaluated():
    # at x=-1, y=0: a = x*x, b = 0, c = y*y, d = y*y
    check(guarded_division, -1.0, 0.0, expected=(-2.0, 0.0))


def elif_chain(x):
    r = 0.0
    if x > 1.0:
        r = x
    elif x > 0.5:
        r = x * x
    else:
        r = -x
    return r * 2


@pytest.mark.parametrize("x", [1.3, 0.7, 0.2])
def test_elif_chain(x):
    check(elif_chain, x)


# --------------------------------------------------------------------------- stop_gradient
def sg_in_loop(x):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            s += stop_gradient(x[i] * x[i]) * x[i]
        else:
            s -= stop_gradient(s) * x[i]
    return s


def test_stop_gradient_in_loop():
    # d/dx_i: x_i^2 for positive x_i; -s(before) for negative ones
    exp = np.zeros(5)
    s = 0.0
    for i, v in enumerate(X5):
        if v > 0:
            exp[i] = v * v
            s += v ** 3
        else:
            exp[i] = -s
            s -= s * v
    check(sg_in_loop, X5, expected=(exp,))


def sg_reassigned(x):
    s = x
    for i in range(4):
        s = stop_gradient(s) * x
    return s


def test_stop_gradient_of_loop_carried_value():
    check(sg_reassigned, 1.5, expected=(1.5 ** 4,))


def sg_mutating_helper(u, k):
    u[0] = u[0] * k
    return u[0]


def sg_with_side_effect(x):
    u = x.copy()
    a = stop_gradient(sg_mutating_helper(u, x[1]))
    return a * x[2] + u[0] * x[3]


def test_stop_gradient_keeps_side_effects():
    x0, x1, x2, x3 = X5[:4]
    check(sg_with_side_effect, X5, expected=(np.array([x1 * x3, x0 * x3, x0 * x1, x0 * x1, 0]),))


def logsumexp(x):
    m = x[0]
    for i in range(len(x)):
        m = max(m, x[i])
    m = stop_gradient(m)
    s = 0.0
    for i in range(len(x)):
        s += math.exp(x[i] - m)
    return math.log(s) + m


def test_stop_gradient_logsumexp():
    e = np.exp(X5 - X5.max())
    check(logsumexp, X5, expected=(e / e.sum(),))


def sg_array_element(x):
    u = x.copy()
    for i in range(len(x)):
        u[i] = stop_gradient(u[i] * u[i]) + u[i]
    s = 0.0
    for i in range(len(x)):
        s = stop_gradient(s) + x[i] * x[i]
    return u[0] * u[1] + s


def test_stop_gradient_on_array_elements():
    x = X5
    exp = np.zeros(5)
    exp[0] = x[1] ** 2 + x[1]
    exp[1] = x[0] ** 2 + x[0]
    exp[4] += 2 * x[4]
    check(sg_array_element, x, expected=(exp,))


# --------------------------------------------------------------------------- helpers
def helper_branchy(a, b):
    if a > b:
        return a * b
    s = 0.0
    for i in range(3):
        s += a ** i
    return s + b


@numba.njit
def helper_jit_pair(a, i):
    return a[i] * a[i - 1]


def helper_scan(x, k):
    for i in range(len(x)):
        if x[i] * k > 1.0:
            return x[i] * k
    return k * k


def helper_early_break(a):
    t = a
    for k in range(3):
        t = t * a
        if t > 3.0:
            break
    return t


def helper_shadow(x):
    x = x * x
    i = 3
    return x + i


def helpers_everywhere(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += helper_branchy(x[i], s)
    s += helper_branchy(x[0], x[1])
    for i in range(1, x.shape[0]):
        s = s + helper_jit_pair(x, i)
    s += helper_scan(x, x[0]) * helper_scan(x, x[3]) + helper_scan(x, 0.1)
    for j in range(3):
        s += helper_scan(x, s * 0.01) + helper_scan(x, x[j])
    for i in range(len(x)):
        s = s * 0.5 + helper_early_break(x[i]) * helper_early_break(s * 0.01 + 1.0)
    i = 2.0
    s = s + helper_shadow(x[0]) * i
    return s * i


def test_helpers_called_repeatedly_and_in_loops():
    check(helpers_everywhere, X5, modes=("vag",))


def helper_mutator(v, i):
    v[i] = v[i] * v[i] + 1.0
    return v[i]


def helper_mutates_local(x):
    u = x.copy()
    s = 0.0
    for k in range(3):
        for i in range(u.shape[0]):
            s += helper_mutator(u, i) * 0.1
    return s + u[2]


def test_helper_mutating_caller_array():
    check(helper_mutates_local, X5 * 0.5, modes=("vag",))


@numba.njit
def _inner2(a):
    return a * a


@numba.njit
def _inner1(a, b):
    return _inner2(a) * b + math.sin(a)


@numba.njit
def jitted_f(x, y):
    s = 0.0
    for i in range(len(x)):
        s += _inner1(x[i], y)
    return s


def test_njit_function_with_njit_helpers():
    check(jitted_f, X5, 0.7)


# FIXED BUG: in `a[i] op= rhs`, adjit evaluates rhs before loading a[i]; Python (and numba) load
# a[i] first. Observable when rhs calls a helper that writes a[i]:
#   def h(u):
#       u[0] = 2.0 * u[0]
#       return 1.0
#   def f(x):
#       u = x.copy()
#       u[0] += h(u)
#       return u[0]
# Python: x0 + 1, d/dx0 = 1.  adjit: value 2*x0 + 1, gradient 2.
def _doubling_helper(u):
    u[0] = 2.0 * u[0]
    return 1.0


def aug_assign_helper_mutates(x):
    u = x.copy()
    u[0] += _doubling_helper(u)
    return u[0]


def test_aug_assign_element_with_mutating_helper_rhs():
    check(aug_assign_helper_mutates, X5, expected=(np.array([1.0, 0, 0, 0, 0]),))


def binop_helper_mutates(x):
    u = x.copy()
    a = u[0] + _doubling_helper(u) + u[0]
    u[1] = u[0] * _doubling_helper(u) * u[0]
    return a + u[1]


def test_binop_loads_around_mutating_helper():
    check(binop_helper_mutates, X5)


# --------------------------------------------------------------------------- 2-D arrays
def quad_form_2d(A):
    n, m = A.shape
    s = 0.0
    for i in range(n):
        for j in range(m):
            s += A[i, j] * A[j % n, i % m]
    return s


def running_columns(A):
    n = len(A)
    m = A.shape[1]
    B = np.ones((n, m))
    c = np.zeros(m)
    for i in range(n):
        for j in range(m):
            B[i, j] = A[i, j] * B[i, j] + c[j]
            c[j] = B[i, j]
    return c[0] * c[m - 1]


def transpose_mix(A):
    n, m = A.shape
    B = A.copy()
    C = np.zeros_like(B)
    for i in range(n):
        for j in range(m):
            C[i, j] = B[i, j] * B[j, i]
            B[j, i] = C[i, j] + 1.0
    s = 0.0
    for i in range(len(A)):
        s += C[i, i] * B[i, (i + 1) % m]
    return s


def empty_like_2d(A):
    B = np.ones((A.shape[0], A.shape[1]))
    E = np.empty_like(A)
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            E[i, j] = A[i, j] * B[i, j]
            B[i, j] = E[i, j] * E[i, j]
    return B[0, 0] + B[2, 1] * E[1, 2]


@pytest.mark.parametrize("f", [quad_form_2d, running_columns, transpose_mix, empty_like_2d])
def test_2d_arrays(f):
    check(f, A3, modes=("grad",))


def det_by_elimination(A):
    n = A.shape[0]
    U = A.copy()
    for k in range(n):
        for i in range(k + 1, n):
            f = U[i, k] / U[k, k]
            for j in range(k, n):
                U[i, j] = U[i, j] - f * U[k, j]
    d = 1.0
    for k in range(n):
        d *= U[k, k]
    return d


def test_determinant_analytic():
    check(det_by_elimination, A3,
          expected=(np.linalg.det(A3) * np.linalg.inv(A3).T,), rtol=1e-9, modes=("grad",))


def matvec_tanh(A, x):
    n = A.shape[0]
    y = np.empty(n)
    for i in range(n):
        acc = 0.0
        for j in range(A.shape[1]):
            acc += A[i, j] * x[j]
        y[i] = math.tanh(acc)
    s = 0.0
    for i in range(n):
        s += y[i] * y[i]
    return s


def test_matvec_two_array_args():
    check(matvec_tanh, A3, X5[:3].copy(), modes=("vag",))


# FIXED BUG: augmented assignment to a 2-D element crashes the normalizer.
#   def f(A):
#       B = np.zeros((3, 4))
#       B[0, 1] += A[0, 0]
#       return B[0, 1]
# grad(f)(A) -> AttributeError: 'Tuple' object has no attribute 'value'
# (normalize/anf.py aug_assign: _copy(idx) only handles Name/Constant, not a Tuple index).
def aug_assign_2d(A):
    B = np.zeros((A.shape[0], A.shape[1]))
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            B[i, j] = A[i, j] * A[i, j]
            B[i, j] += A[i, j]
            B[i, j] *= B[i, j]
    return B[0, 1] + B[2, 2] * B[1, 0]


def test_aug_assign_2d_element():
    check(aug_assign_2d, A3)


# --------------------------------------------------------------------------- classic programs
def newton_sqrt(a):
    x = a
    it = 0
    while abs(x * x - a) > 1e-12 and it < 100:
        x = 0.5 * (x + a / x)
        it += 1
    return x


def test_newton_iteration_data_dependent_while():
    check(newton_sqrt, 2.0, expected=(0.5 / math.sqrt(2.0),), rtol=1e-8)


def bubble_sort_weighted(x):
    u = x.copy()
    n = len(u)
    for i in range(n):
        for j in range(n - 1 - i):
            if u[j] > u[j + 1]:
                u[j], u[j + 1] = u[j + 1], u[j]
    s = 0.0
    for i in range(n):
        s += u[i] * (i + 1)
    return s


def test_bubble_sort_swaps():
    rank = np.argsort(np.argsort(X5)) + 1.0
    check(bubble_sort_weighted, X5, expected=(rank,), modes=("grad",))


def gauss_seidel(A, b):
    n = len(b)
    x = np.zeros(n)
    for it in range(200):
        diff = 0.0
        for i in range(n):
            s = b[i]
            for j in range(n):
                if j != i:
                    s -= A[i, j] * x[j]
            new = s / A[i, i]
            diff = max(diff, abs(new - x[i]))
            x[i] = new
        if diff < 1e-14:
            break
    return x[0] + 2.0 * x[1] + 3.0 * x[2]


def test_gauss_seidel_with_convergence_break():
    A = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 5.0]])
    b = np.array([1.0, 2.0, 3.0])
    w = np.linalg.solve(A.T, np.array([1.0, 2.0, 3.0]))
    xs = np.linalg.solve(A, b)
    check(gauss_seidel, A, b, expected=(-np.outer(w, xs), w), rtol=1e-7, atol=1e-10,
          modes=("vag",))


# --------------------------------------------------------------------------- names
def user_bar_names(x, x_bar):
    s_bar = 0.0
    s = 0.0
    u = x.copy()
    u_bar = np.zeros(5)
    for i in range(len(x)):
        s_bar = s * x_bar
        s = s + x[i] * x[i] + s_bar
        u_bar[i] = u[i] * u[i]
        u[i] = u_bar[i] + x[i]
    return s + s_bar + u[0] + u_bar[1] * u[2]


def user_generated_looking_names(x):
    _t1 = x[0] * 2.0
    _value = _t1 * x[1]
    _result1 = 0.0
    _brk1 = 2.0
    _count1 = 0.5
    _n1 = 0
    _k1 = 1
    _g1 = x[2]
    _c1 = x[3]
    _skip1 = x[4]
    for _t2 in range(3):
        _result1 = _result1 * _g1 + _c1 * _skip1 + _value * 0.25
        if _result1 > 100.0:
            break
    return _result1 + _brk1 * _count1 + x[_n1] * x[_k1]


def test_user_names_that_look_generated():
    check(user_bar_names, X5, 0.5, modes=("vag",))
    check(user_generated_looking_names, X5, modes=("grad",))


# FIXED BUG: user variables named like the tape (_ftape, _itape, _fn, _in) are not renamed and
# collide with the generated tape variables:
#   def f(x):
#       _fn = 2
#       s = 0.0
#       for i in range(3):
#           s = s * x[i] + _fn
#       return s
# value_and_grad(f)(X5) -> value -2.0 (expected -2.2), gradient [0, -2.1, 10, 0, 0]
# (expected [0, -1.4, 6, 0, 0]); with `_ftape = 0.25` instead: raw numba TypingError
# "Unknown attribute 'shape' of type float64".
def user_named_fn(x):
    _fn = 2
    s = 0.0
    for i in range(3):
        s = s * x[i] + _fn
    return s


def user_named_ftape(x):
    _ftape = 0.25
    s = 0.0
    for i in range(3):
        s = s * x[i] + _ftape
    return s


@pytest.mark.parametrize("f", [user_named_fn, user_named_ftape])
def test_user_names_colliding_with_tape(f):
    check(f, X5)


# --------------------------------------------------------------------------- API corners
# FIXED BUG: value_and_grad of a function with an early return inside a loop whose condition is a
# constant numba folds away raises a raw numba TypingError (`_result1` has no typed
# definition left) instead of working (grad works):
#   def f(x, y):
#       for i in range(2):
#           if 1.0 > 2.0:
#               return y
#       return x[3]
def const_false_return_in_loop(x, y):
    for i in range(2):
        if 1.0 > 2.0:
            return y
    return x[3] * y


def test_value_and_grad_constant_false_return_in_loop():
    check(const_false_return_in_loop, X5, 0.3)


def test_grad_constant_false_return_in_loop():
    g = grad(const_false_return_in_loop, argnums=(0, 1))
    gx, gy = g(X5.copy(), 0.3)
    np.testing.assert_allclose(gx, [0, 0, 0, 0.3, 0])
    assert gy == pytest.approx(X5[3])


# FIXED BUG: a branch numba can fold (a comparison of two literals) makes numba prune the
# forward definition of a temporary that the backward sweep still reads -> raw numba
# UnsupportedError "Unsupported assignment encountered: Undefined" (grad and value_and_grad).
# The plain function compiles with numba.njit fine.
#   def f(x):
#       y = 0.45
#       if 1.0 > 2.0:
#           y = x[3]
#       return x[4] * (y if y < 0.7 else math.cos(x[2]))
def literal_condition(x):
    y = 0.45
    if 1.0 > 2.0:
        y = x[3]
    return x[4] * (y if y < 0.7 else math.cos(x[2]))


def test_literal_constant_condition():
    check(literal_condition, X5, expected=(np.array([0, 0, 0, 0, 0.45]),))


# FIXED BUG: a first fix folded only comparisons of two literals in the normalizer, but
# numba also folds a negative literal (`-1.0`, a unary minus in the AST) and a local
# constant (`c = 2.0; if 1.0 > c:`), prunes the branch, and leaves a forward temporary that
# the backward sweep reads undefined -> raw numba UnsupportedError/TypingError:
#   def f(x):
#       y = 0.45
#       c = 2.0
#       if 1.0 > c:
#           y = x[3]
#       return x[4] * (y if y < 0.7 else math.cos(x[2]))
# grad(f)(X5) -> numba UnsupportedError "Unsupported assignment encountered: Undefined".
#   def g(x, y):
#       for i in range(2):
#           if -1.0 > 2.0:
#               return y
#       return x[3] * y
# value_and_grad(g)(X5, 0.3) -> numba TypingError "Type of variable '_result1.3' cannot be
# determined" (grad works).
def negative_literal_condition(x):
    y = 0.45
    if -1.0 > -0.5:
        y = x[3]
    return x[4] * (y if y < 0.7 else math.cos(x[2]))


def local_constant_condition(x):
    y = 0.45
    c = 2.0
    if 1.0 > c:
        y = x[3]
    return x[4] * (y if y < 0.7 else math.cos(x[2]))


@pytest.mark.parametrize("f", [negative_literal_condition, local_constant_condition])
def test_constant_condition_numba_prunes(f):
    check(f, X5, expected=(np.array([0, 0, 0, 0, 0.45]),))


def negative_literal_return_in_loop(x, y):
    for i in range(2):
        if -1.0 > 2.0:
            return y
    return x[3] * y


def test_value_and_grad_negative_literal_return_in_loop():
    check(negative_literal_return_in_loop, X5, 0.3, modes=("vag",))


def sum_sq_scaled(x, c):
    s = 0.0
    for i in range(len(x)):
        s += x[i] * x[i] * c
    return s


def test_non_contiguous_and_fortran_arrays():
    g = grad(sum_sq_scaled, argnums=(0, 1))
    xs = np.arange(10.0) * 0.3
    gx, gc = g(xs[::2], 2.0)
    np.testing.assert_allclose(gx, 4 * xs[::2])
    assert gc == pytest.approx((xs[::2] ** 2).sum())
    check(quad_form_2d, np.asfortranarray(A3))
    check(quad_form_2d, np.ascontiguousarray(A3.T).T)


def test_gradient_called_inside_njit():
    g = grad(sum_sq_scaled, argnums=(0, 1))
    vg = value_and_grad(sum_sq_scaled, argnums=1)
    gl = grad(loop_power)

    @numba.njit
    def outer(x, c):
        t = 0.0
        for k in range(3):
            gx, gc = g(x, c + k)
            v, gc2 = vg(x, c)
            t += gx[0] + gc + v + gc2 + gl(1.3, 4)
        return t

    x = X5.copy()
    got = outer(x, 0.5)
    np.testing.assert_array_equal(x, X5)  # not mutated
    exp = 0.0
    for k in range(3):
        exp += 2 * X5[0] * (0.5 + k) + (X5 ** 2).sum() + 0.5 * (X5 ** 2).sum() \
            + (X5 ** 2).sum() + 4 * 1.3 ** 3
    assert got == pytest.approx(exp, rel=1e-12)


def _const(x, y):
    return 3.0


def test_independent_output_gives_zeros():
    g = grad(_const, argnums=(0, 1))
    gx, gy = g(X5.copy(), 2.0)
    np.testing.assert_array_equal(gx, np.zeros(5))
    assert gy == 0.0


def _array_cond_rebind(x):
    if x[0] > 0.0:
        u = x.copy()
    else:
        u = np.ones(5)
    u[0] = u[0] * x[1]
    return u[0]


def _array_alias(x):
    u = x
    u[0] = u[0] * 2.0
    return u[0] * x[0]


def _recursive(x, n):
    if n == 0:
        return x
    return _recursive(x * x, n - 1)


def test_array_alias_is_one_array():
    """`u = x` names one array twice (numpy): u[0] * x[0] after doubling u[0] is 4 x0^2."""
    x = X5.copy()
    g = grad(_array_alias)(x)
    np.testing.assert_allclose(g, [8.0 * X5[0]] + [0.0] * (len(X5) - 1))
    np.testing.assert_allclose(x, X5 * np.r_[2.0, np.ones(len(X5) - 1)])   # as numpy writes


def test_an_array_rebound_on_both_paths_of_an_if():
    """Refused once ("the array variable 'u' is reassigned"); each path's array is now
    copied into one after the `if` (normalize/joins.py)."""
    for x in (X5, -X5):
        check_value_and_grad(_array_cond_rebind, (x.copy(),))


def test_a_recursion_deeper_than_adjit_repeats_raises_not_a_wrong_number():
    """x squared n times: adjit repeats the recursion two levels deep (n <= 1 exact: d/dx
    x^2 = 2x) and raises RecursionError where it would go deeper."""
    assert grad(_recursive)(0.7, 1) == pytest.approx(1.4, rel=1e-15)
    with pytest.raises(RecursionError, match="called itself more than 2 levels deep"):
        grad(_recursive)(0.7, 3)


# FIXED BUG: np.stack / np.concatenate evaluated their pieces lazily, after the later pieces
# were evaluated: a helper writing an array (b[j] = 3.0) inside a later piece reached an
# earlier piece that numpy had already computed (the value was 44.34 instead of 10.59).
# Found by the program fuzzer (seed 3030, --groups).
def _writes_its_argument(b, j, p):
    b[j] = 3.0
    return p


def stack_then_write(x):
    s = np.stack((x * 2.0, np.array([_writes_its_argument(x, 2, 0.3), 1.0, 1.0, 1.0])))
    return np.sum(s * s)


def concatenate_then_write(x):
    s = np.concatenate((x * 2.0, np.array([_writes_its_argument(x, 2, 0.3), 1.0])))
    return np.sum(s * s)


def outer_in_stack_then_write(x):
    s = np.stack((np.outer(x[:-1], x[:2]),
                  np.array([[_writes_its_argument(x, 2, 0.3), 1.0], [1.0, 2.0], [2.0, 0.3]])),
                 axis=1)
    return np.sum(s * s)


@pytest.mark.parametrize("f", [stack_then_write, concatenate_then_write,
                               outer_in_stack_then_write])
def test_joined_pieces_are_computed_before_a_later_piece_writes(f):
    check(f, np.array([0.5, 0.25, 0.75, 1.0]))


# FIXED BUG: a loop nest whose statements all folded away in the generated source (only the
# comment quoting the user's line was left in its body) made the generated function an
# IndentationError. Found by the program fuzzer (seed 3131, --groups).
def counts_then_gathered(x, n):
    a = np.zeros(4)
    for i in range(n):
        for j in range(1, 4):
            a[1] += 1.5
    a += x[np.array([3, 3, 1, 1])]
    return np.sum(a)


def test_a_loop_left_without_statements_still_compiles():
    check(counts_then_gathered, np.array([0.5, 0.25, 0.75, 1.0]), 3,
          expected=(np.array([0.0, 2.0, 0.0, 2.0]),))


# --------------------------------------------------------------------------- rebinding
# FIXED BUG: `y = x * 2.0` used once later is kept unevaluated and fused into its use; a
# binding of `x` to a new array in between made y read the new array (0.0 where numba gives
# 8.4 for rebinding_in_a_branch, 5.04 where 10.5 for rebinding_a_local; nine of these ten
# were wrong). The same for a number it reads (9.8 where 5.6 for
# rebinding_a_number_argument; all four were wrong).
def rebinding_the_argument(x, a):
    y = x * 1.0
    x = np.zeros(3)
    x[0] = a
    return np.sum(y * a) + np.sum(x)


def rebinding_in_a_branch(x, a):
    y = x * 2.0
    if a > 0:
        x = np.zeros(3)
    return np.sum(y * a) + np.sum(x)


def rebinding_a_local(x, a):
    u = x * 1.0
    y = np.sin(u) * 2.0
    u = np.ones(3) * a
    return np.sum(y * a) + np.sum(u)


def rebinding_in_a_loop(x, a):
    y = np.sin(x)
    for t in range(2):
        x = x * a
    return np.sum(y * a) + np.sum(x)


def rebinding_to_itself_scaled(x, a):
    y = x * 2.0
    x = x * a
    x[1] = 0.5
    return np.sum(y * a) + np.sum(x)


def rebinding_on_both_paths(x, a):
    y = x * x
    if a > 0.5:
        x = x + 1.0
    else:
        x = x - 1.0
    return np.sum(y) * a + np.sum(x)


def rebinding_read_by_a_chain(x, a):
    y = x * 2.0
    z = y + x
    x = np.zeros(3)
    return np.sum(z * a) + np.sum(x)


def rebinding_by_a_conditional_expression(x, a):
    y = x * 2.0
    x = np.zeros(3) if a > 0 else x
    return np.sum(y * a) + np.sum(x)


def rebinding_read_together(x, a):
    y = x * 2.0
    x = np.ones(3) * a
    return np.sum(y * x)


def rebinding_a_matrix(A, a):
    y = A.T * 2.0
    A = np.ones((2, 2))
    return np.sum(y * a) + np.sum(A)


def rebinding_a_number_argument(x, a):
    y = x * a
    a = 2.0 * a                 # y is x times the old a
    return np.sum(y) + a


def rebinding_a_number_local(x, a):
    c = a * 1.0
    y = x * c
    c = 3.0
    return np.sum(y) + c


def rebinding_a_number_in_a_branch(x, a):
    c = a + 0.0
    y = np.sin(x) * c
    if a > 0:
        c = c * 2.0
    return np.sum(y) + c


def rebinding_a_number_in_a_loop(x, a):
    c = a + 0.0
    y = x * c
    for t in range(2):
        c = c * a
    return np.sum(y) + c


def gather_by_an_index_array_written(x, a, idx):
    y = x[idx] * a
    idx[0] = 2                  # y gathered by the old indices
    return np.sum(y)


def gather_by_an_index_array_rebound(x, a, idx):
    y = x[idx] * a
    idx = np.zeros(3, np.int64)
    return np.sum(y) + np.sum(x[idx])


def gather_by_an_index_array_written_through_a_view(x, a, idx):
    w = idx[1:]
    y = np.take(x, idx) * a
    w[0] = 2
    return np.sum(y)


def gather_by_a_local_index_array_rebound(x, a, idx):
    j = np.argsort(x)
    y = x[j] * a * x
    j = np.argsort(-x)
    return np.sum(y) + x[j[0]]


@pytest.mark.parametrize("f", [gather_by_an_index_array_written,
                               gather_by_an_index_array_rebound,
                               gather_by_an_index_array_written_through_a_view,
                               gather_by_a_local_index_array_rebound])
def test_a_gather_kept_for_its_use_reads_the_indices_it_was_given(f):
    # FIXED BUG: the gather read the index array where it was used (6.3 where numba gives
    # 4.9 for the first, 2.1 where 4.9 for the second)
    x, idx = np.array([1.0, 2.0, 3.0, 4.0]), np.array([0, 1, 3])
    forward = numba.njit(f)
    value, (gx, ga) = value_and_grad(f, argnums=(0, 1))(x.copy(), 0.7, idx.copy())
    assert value == pytest.approx(forward(x.copy(), 0.7, idx.copy()), rel=1e-14)

    def fresh(x, a):            # (f writes its index array: each evaluation gets its own)
        return forward(x.copy(), a, idx.copy())

    np.testing.assert_allclose(gx, fd_grad(fresh, (x, 0.7), 0), rtol=1e-6, atol=1e-7)
    assert ga == pytest.approx(fd_grad(fresh, (x, 0.7), 1), rel=1e-6)


@pytest.mark.parametrize("f", [rebinding_a_number_argument, rebinding_a_number_local,
                               rebinding_a_number_in_a_branch, rebinding_a_number_in_a_loop,
                               rebinding_the_argument, rebinding_in_a_branch,
                               rebinding_a_local, rebinding_in_a_loop,
                               rebinding_to_itself_scaled, rebinding_on_both_paths,
                               rebinding_read_by_a_chain, rebinding_by_a_conditional_expression,
                               rebinding_read_together, rebinding_a_matrix])
def test_a_value_kept_for_its_use_reads_the_array_its_name_held(f):
    x = np.array([[1.0, 2.0], [0.5, -1.0]]) if f is rebinding_a_matrix else \
        np.array([1.0, 2.0, 3.0])
    check_value_and_grad(f, (x, 0.7), argnums=(0, 1))
