"""Indexing by integer arrays and boolean masks, transposes with axes, powers at zero.

Every program is written the way a numpy user writes it; its value is numpy's own (the
function run as plain Python on numpy arrays) and its gradient is compared with central
finite differences, never with adjit. The cases listed when these constructs were found to
be silently wrong are pinned to their exact numbers.
"""
import math

import numpy as np
import pytest

import adjit
from adjit import AdjitError
from fd import check_value_and_grad, fd_grad

R = np.random.default_rng(7)
THETA = np.array([1.0, 2.0, 3.0])
IDX = np.array([0, 2, 2])
A = R.normal(size=(3, 4))
X3 = R.normal(size=(2, 3, 4))
W3 = R.normal(size=(3, 2, 4))


def gather_sq(theta, idx):
    return np.sum(theta[idx] ** 2)


def gather_resid(theta, idx, y):
    return np.sum((theta[idx] - y) ** 2)


def gather_rows(a, idx):
    return np.sum(a[idx, :] ** 2)


def gather_cols(a, idx):
    return np.sum(a[:, idx] ** 3)


def gather_pairs(a, i1, i2):
    return np.sum(a[i1, i2] ** 2)


def gather_int_and_array(a, i1):
    return np.sum(a[1, i1] ** 2)


def gather_nonadjacent(x, i1):
    # numpy: advanced indices separated by a slice put their dimension first: shape (3, 3)
    return np.sum(x[0, :, i1] * np.arange(9.0).reshape(3, 3))


def gather_with_slices(x, i1):
    return np.sum(x[:, i1, 1:3] ** 2 * np.arange(12.0).reshape(2, 3, 2))


def gather_in_loop(x, idx):
    s = 0.0
    for k in range(3):
        s += np.sum(x[idx] * k)
    return s


def gather_elementwise_loop(x, idx):
    s = 0.0
    for k in range(idx.shape[0]):
        s += x[idx[k]] ** 2
    return s


def scatter_add(x, idx):
    out = np.zeros(3)
    out[idx] += x           # numpy: a repeated index is written once, by its last occurrence
    return np.sum(out * out)


def scatter_set(x, idx):
    out = np.zeros(3)
    out[idx] = x * 2.0
    return np.sum(out * out * np.arange(3.0))


def mask_read(x):
    return np.sum(x[x > 1.5] ** 2)


def mask_write_scalar(x):
    y = x.copy()
    y[x > 1.5] = 0.0
    return np.sum(y * x)


def mask_write_array(x):
    y = x * 1.0
    m = x > 1.5
    y[m] = x[m] ** 2
    return np.sum(y * x)


def mask_2d(a):
    return np.sum(a[a > 0.0] ** 3)


def mask_rows(a):
    return np.sum(a[a[:, 0] > 0.0] ** 2)


def take_flat(x, idx):
    return np.sum(np.take(x, idx) ** 2)


def take_axis(a, idx):
    return np.sum(np.take(a, idx, axis=1) ** 2)


def negative_indices(a, i):
    return np.sum(a[1, i] ** 2)


def list_index(x):
    return np.sum(x[[0, 2, 2]] ** 2)


def index_expression(x, idx):
    return np.sum(x[idx - 1] ** 2)


def where_of_gather(x, idx):
    return np.sum(np.where(x[idx] > 1.5, x[idx], -x[idx]) ** 2)


def local_index_array(x):
    idx = np.array([2, 0, 0, 1])
    return np.sum(x[idx] * np.arange(4.0))


def argument_int_array_is_data(x, counts):
    return np.sum(x * counts)


def gathers_of_views_and_views_of_gathers(x, idx):
    y = x * 1.0
    y[idx][0] = 100.0       # numpy writes a temporary copy: y is unchanged
    y[1:][idx] = y[1:][idx] * 2.0
    return np.sum(y * x) + np.sum(x[idx][1:] ** 2)


def one_index_array_on_two_dimensions(w, ix):
    # the same index array wraps negative entries by each dimension's own length
    w[:, -1] -= w[1, ix] - np.take(w, ix)
    return np.sum(w * w)


GATHERS = [
    (one_index_array_on_two_dimensions, (np.arange(6.0).reshape(3, 2), np.array([1, -2, -1])),
     0),
    (gathers_of_views_and_views_of_gathers, (np.array([1.0, -2.0, 0.5, 3.0]), IDX), 0),
    (gather_sq, (THETA, IDX), 0),
    (gather_resid, (THETA, IDX, np.array([1.0, 1.0, 1.0])), (0, 2)),
    (gather_rows, (A, IDX), 0),
    (gather_cols, (A, IDX), 0),
    (gather_pairs, (A, np.array([0, 2, 1]), np.array([3, 3, 0])), 0),
    (gather_int_and_array, (A, np.array([0, 2, 1])), 0),
    (gather_nonadjacent, (X3, np.array([0, 2, 1])), 0),
    (gather_with_slices, (X3, np.array([0, 2, 1])), 0),
    (gather_in_loop, (THETA, IDX), 0),
    (gather_elementwise_loop, (THETA, IDX), 0),
    (scatter_add, (THETA, IDX), 0),
    (scatter_set, (THETA, IDX), 0),
    (mask_read, (THETA,), 0),
    (mask_write_scalar, (THETA,), 0),
    (mask_write_array, (THETA,), 0),
    (mask_2d, (A,), 0),
    (mask_rows, (A,), 0),
    (take_flat, (THETA, IDX), 0),
    (take_axis, (A, IDX), 0),
    (negative_indices, (A, np.array([-1, 0, -4])), 0),
    (list_index, (THETA,), 0),
    (index_expression, (THETA, IDX), 0),
    (where_of_gather, (THETA, IDX), 0),
    (local_index_array, (np.array([0.5, -1.0, 2.0]),), 0),
    (argument_int_array_is_data, (THETA, IDX), 0),
]


def transpose_axes(x, w):
    return np.sum(np.transpose(x, (1, 0, 2)) * w)


def transpose_method_args(x, w):
    return np.sum(x.transpose(1, 0, 2) * w)


def transpose_method_tuple(x, w):
    return np.sum(x.transpose((1, 0, 2)) * w)


def swapaxes(x, w):
    return np.sum(np.swapaxes(x, 0, 1) * w)


def swapaxes_method(x, w):
    return np.sum(x.swapaxes(0, 1) * w)


def moveaxis(x, w):
    return np.sum(np.moveaxis(x, 0, 1) * w)


def transpose_3d_T(x, w):
    return np.sum(x.T * np.transpose(w, (2, 0, 1)))


def transpose_3d_plain(x, w):
    return np.sum(np.transpose(x) * np.transpose(w, (2, 0, 1)))


def transpose_row(x, w):
    return np.sum(np.transpose(x, (1, 0, 2))[1] ** 2 * w[0])


def transpose_kept_and_computed(x, w):
    y = np.exp(np.transpose(x, (1, 0, 2)))
    return np.sum(y.transpose(1, 0, 2) * x) + np.sum(np.transpose(x, (2, 0, 1)) *
                                                    np.transpose(w, (2, 1, 0)))


def transpose_negative_axes(x, w):
    return np.sum(np.transpose(x, (-2, -3, -1)) * w)


TRANSPOSES = [transpose_axes, transpose_method_args, transpose_method_tuple, swapaxes,
              swapaxes_method, moveaxis, transpose_3d_T, transpose_3d_plain, transpose_row,
              transpose_kept_and_computed, transpose_negative_axes]


def _copies(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def check_against_numpy(fn, args, argnums):
    """adjit's value is numpy's, its gradient central differences', and it leaves the
    arguments exactly as numpy does."""
    mine = _copies(args)
    value, grads = adjit.value_and_grad(fn, argnums=argnums)(*mine)
    theirs = _copies(args)
    expected = fn(*theirs)
    np.testing.assert_allclose(value, expected, rtol=1e-12, atol=1e-12)
    for a, b in zip(mine, theirs):
        np.testing.assert_array_equal(a, b)
    nums = (argnums,) if isinstance(argnums, int) else argnums
    grads = (grads,) if isinstance(argnums, int) else grads
    for k, g in zip(nums, grads):
        assert np.shape(g) == np.shape(args[k])
        np.testing.assert_allclose(g, fd_grad(lambda *a: fn(*_copies(a)), _copies(args), k),
                                   rtol=1e-6, atol=1e-7, err_msg=f"d/d arg {k}")
    return value, grads


@pytest.mark.parametrize("fn, args, argnums", GATHERS, ids=[c[0].__name__ for c in GATHERS])
def test_integer_and_mask_indexing(fn, args, argnums):
    check_against_numpy(fn, args, argnums)


@pytest.mark.parametrize("fn", TRANSPOSES, ids=[f.__name__ for f in TRANSPOSES])
def test_transposes_with_axes(fn):
    check_against_numpy(fn, (X3, W3), (0, 1))


def test_gather_reported_cases():
    """The numbers first reported wrong: value 19 (not an array), gradient [2, 0, 12]
    (repeated indices accumulate), and the residual form that crashed numba."""
    v, g = adjit.value_and_grad(gather_sq)(THETA.copy(), IDX)
    assert v == 19.0
    np.testing.assert_array_equal(g, [2.0, 0.0, 12.0])
    v, g = adjit.value_and_grad(gather_resid)(THETA.copy(), IDX, np.ones(3))
    assert v == 0.0 + 4.0 + 4.0
    np.testing.assert_array_equal(g, [0.0, 0.0, 8.0])


def test_scatter_last_write_wins():
    """out[idx] += x with idx = [0, 2, 2]: numpy writes out[2] once, from x[2]; the
    gradient of x[1] is zero (its write is lost)."""
    v, g = adjit.value_and_grad(scatter_add)(THETA.copy(), IDX)
    assert v == 1.0 + 9.0
    np.testing.assert_array_equal(g, [2.0, 0.0, 6.0])


def test_gather_vjp_and_jvp_agree():
    """The dot-product test through a gather and a scatter: <vjp(u), v> == <u, jvp(v)>."""
    def f(x, idx):
        y = x[idx] * 2.0
        out = np.zeros(4)
        out[idx] += y
        return out * x[1]
    x = np.array([0.3, -1.2, 2.0, 0.7])
    idx = np.array([3, 0, 3, 1])
    u, v = R.normal(size=4), R.normal(size=4)
    _, xbar = adjit.vjp(f)(x.copy(), idx, u)
    _, ydot = adjit.jvp(f)(x.copy(), idx, v)
    np.testing.assert_allclose(np.dot(xbar, v), np.dot(u, ydot), rtol=1e-12)


def test_out_of_range_index_raises_index_error():
    with pytest.raises(IndexError):
        adjit.grad(gather_sq)(THETA.copy(), np.array([0, 3]))


def test_float_index_array_is_refused():
    with pytest.raises(AdjitError, match="indexing with an array of floats"):
        adjit.grad(gather_sq)(THETA.copy(), np.array([0.0, 2.0]))


def test_two_dimensional_index_array_is_refused():
    with pytest.raises(AdjitError, match="2-D integer array"):
        adjit.grad(gather_sq)(THETA.copy(), np.array([[0, 1], [2, 2]]))


def test_bad_transpose_axes_are_refused():
    def f(x):
        return np.sum(np.transpose(x, (0, 0, 1)))
    with pytest.raises(AdjitError, match="permutation"):
        adjit.grad(f)(X3.copy())


# powers -------------------------------------------------------------------------------------
def power_constant_exponents(x):
    return np.sum(np.power(x, 0.0) + x ** 0 + x ** 1.0 + x ** 1 + np.float_power(x, 2.0) +
                  x ** 2 + np.power(x, 3))


def scalar_power_zero(x):
    return x ** 0.0 + math_pow(x)


def math_pow(x):
    return math.pow(x, 0.0) + math.pow(x, 1.0)


def power_both(x, y):
    return np.sum(np.power(x, y + 1.0))


@pytest.mark.parametrize("x", [np.array([0.0, 1.0, -2.0, 0.5]), np.zeros(3)],
                         ids=["mixed", "zeros"])
def test_powers_with_constant_exponents(x):
    """d/dx of x ** 0 is 0 everywhere, x = 0 included (JAX's value), and x ** 1 is 1."""
    v, g = adjit.value_and_grad(power_constant_exponents)(x.copy())
    assert v == power_constant_exponents(x.copy())
    np.testing.assert_allclose(g, 0 + 0 + 1 + 1 + 2 * x + 2 * x + 3 * x ** 2, rtol=1e-14)
    _, t = adjit.jvp(power_constant_exponents)(x.copy(), np.ones_like(x))
    np.testing.assert_allclose(t, np.sum(2 + 4 * x + 3 * x ** 2), rtol=1e-14)


def test_scalar_powers_at_zero():
    v, g = adjit.value_and_grad(scalar_power_zero)(0.0)
    assert (v, g) == (2.0, 1.0)


def test_power_with_both_operands_active():
    x, y = np.array([0.0, 1.0, 2.0]), np.array([0.0, 1.0, 0.5])
    check_against_numpy(power_both, (x, y), (0, 1))


# kinds: an index must be known to be an integer --------------------------------------------
def float_scalar_index(x):
    n = x.shape[0] / 2
    return x[n] * 2.0


def test_float_scalar_index_is_refused():
    """numba would reject the generated code; adjit names the index instead."""
    with pytest.raises(AdjitError, match="array index .* that is a float"):
        adjit.grad(float_scalar_index)(np.ones(4))


def int_literal_index(x, i):
    idx = np.array([i, i + 1, 0])
    return np.sum(x[idx] ** 2)


def test_array_literal_of_integer_variables_is_an_index_array():
    check_against_numpy(int_literal_index, (np.array([0.5, -1.0, 2.0, 3.0]), 1), 0)


@pytest.mark.parametrize("fn, args, argnums", [c for c in GATHERS if c[2] == 0],
                         ids=[c[0].__name__ for c in GATHERS if c[2] == 0])
def test_forward_mode_agrees_with_reverse(fn, args, argnums):
    """jvp through gathers, scatters and masks: <grad, v> == jvp(v)."""
    v = np.random.default_rng(5).normal(size=np.shape(args[0]))
    g = adjit.grad(fn)(*_copies(args))
    value, t = adjit.jvp(fn)(*_copies(args), v)
    np.testing.assert_allclose(value, fn(*_copies(args)), rtol=1e-13)
    np.testing.assert_allclose(t, np.sum(g * v), rtol=1e-11, atol=1e-12)


def literal_of_a_name_that_becomes_float(x):
    s = 0
    t = 0.0
    for i in range(3):
        v = np.array([s, 1])        # s is 0 here, 0.5 and 1.0 later: numpy makes floats
        t += np.sum(v * x[i])
        s = s + 0.5
    return t


def test_array_literal_of_a_name_that_becomes_float():
    check_against_numpy(literal_of_a_name_that_becomes_float, (np.array([1.0, 2.0, 3.0]),), 0)


def where_selected(x):
    return np.sum(x[np.where(x > 0.5)] ** 2)


def nonzero_of_a_matrix(x):
    m = x.reshape(2, 3)
    return np.sum(m[np.nonzero(m > 0.5)] * m[np.nonzero(m <= 0.5)][:1])


def upper_triangle(x):
    a = np.zeros((3, 3))
    a[np.triu_indices(3)] = x[:6]
    return np.sum(a @ a.T)


def upper_triangle_held(x):
    m = x.reshape(2, 3)
    idx = np.triu_indices(2, 1, 3)
    return np.sum(m[idx] ** 3)


def zeroed_where(x):
    m = x.reshape(2, 3) * 2.0
    m[np.where(m > 1.0)] = 0.0
    return np.sum(m * x.reshape(2, 3))


@pytest.mark.parametrize("f", [where_selected, nonzero_of_a_matrix, upper_triangle,
                               upper_triangle_held, zeroed_where])
def test_an_index_a_call_returns_as_a_tuple_of_index_arrays(f):
    """`x[np.where(c)]`, `m[np.nonzero(c)]`, `a[np.triu_indices(n)] = v` and the tuple held in
    a name: each element indexes one dimension, as numba's (they were refused as a tuple used
    as a value)."""
    x = np.array([0.31, 0.77, 0.12, 0.55, 0.93, 0.48])
    check_value_and_grad(f, [x], value_rtol=1e-15)
