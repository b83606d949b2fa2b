"""numpy's memory semantics, name binding, constructors of active values, and arguments.

Views (basic slices, rows, reshape of a contiguous array, ravel, .T, transposes, `[::2]`,
plain rebinding `y = x`, arrays and slices passed to helpers) share memory with their base:
a write through either name is seen through both, in the value and in the gradient.
Copies (`.copy()`, arithmetic, fancy indexing, `flatten`) do not. Values are numpy's own,
gradients central differences'; the cases first reported wrong are pinned to their numbers.
"""
import numba
import numpy as np
import pytest

import adjit
from adjit import AdjitError
from fd import fd_grad
from test_indexing import check_against_numpy

X4 = np.array([1.0, -2.0, 0.5, 3.0])
R = np.random.default_rng(11)
A = R.normal(size=(3, 4))
X3 = R.normal(size=(2, 3, 4))


def slice_add(x):
    v = x[1:3]
    v += 1.0
    return np.sum(x * x)


def slice_element(x):
    v = x[1:]
    v[0] = 0.0
    return np.sum(x * x)


def reshape_element(x):
    a = x.reshape(2, 2)
    a[0, 0] = 5.0
    return np.sum(x * x)


def row_of_reshape(x):
    a = x.reshape(2, 2)
    row = a[0]
    row[1] = row[0] * 3.0
    return np.sum(a * a)


def view_sees_later_write(x):
    y = np.zeros(4)
    z = y[2:]
    y[2] = x[0]
    return np.sum(z * x[2:])


def strided_view(x):
    y = x * 1.0
    w = y[::2]
    w *= x[1]
    return np.sum(y)


def plain_rebinding(x):
    y = x
    y *= 2
    return np.sum(y * x)


def transpose_view(a):
    y = a * 1.0
    t = y.T
    t[0] = 7.0
    return np.sum(y * a)


def rows_double_buffer(x):
    u = np.zeros((2, 4))
    cur = u[0]
    nxt = u[1]
    cur[:] = x
    for t in range(3):
        nxt[:] = np.sin(cur) + x
        cur, nxt = nxt, cur
    return np.sum(cur * cur) + np.sum(u)


def keep_old_binding(x):
    u_prev = x * 1.0
    u = u_prev
    u = u + 1.0             # u is a new array; u_prev still holds the old one
    return np.sum(u_prev * u)


def ravel_view(x):
    y = x.copy()
    r = y.ravel()
    r[1] = 10.0
    return np.sum(y * x)


def reshape_minus_one(a):
    b = a * 2.0
    f = b.reshape(-1)
    f[5] = f[5] * f[0]
    return np.sum(b * a)


def flatten_copies(a):
    b = a * 2.0
    f = b.flatten()
    f[5] = 100.0            # a copy: b is unchanged
    return np.sum(b * a) + f[5] * a[0, 0]


def view_chosen_in_branch(x):
    y = x * 2.0
    if x[0] > 0:
        v = y[:2]
    else:
        v = y[2:]
    v *= 3.0
    return np.sum(y * x)


def row_in_loop(a):
    b = a.copy()
    for i in range(3):
        row = b[i]
        row[:] = row * a[i, 0]
    return np.sum(b * b)


def _scale_in_place(arr, c):
    arr *= c


def slice_to_helper(x):
    y = x.copy()
    _scale_in_place(y[1:3], 2.0)
    return np.sum(y * x)


def transposed_3d_view(x):
    y = x * 1.0
    s = np.transpose(y, (2, 0, 1))
    s[1] = 0.0
    return np.sum(y * x)


def size_and_ravel(a):
    b = a * 1.0
    n = b.size
    return np.sum(b.ravel()[: n // 2] ** 2)


def view_of_view(a):
    b = a * 1.0
    c = b[1:]
    d = c[:, ::2]
    d[0, 1] = d[1, 0] * a[0, 0]
    return np.sum(b * a)


def fancy_copy_not_view(x):
    y = x[np.array([0, 1])]
    y[0] = 100.0            # a copy: x is unchanged
    return np.sum(x * x) + y[0] * x[1]


def reshape_of_params(theta, h):
    w = theta[:6].reshape(2, 3)
    b = theta[6:]
    return np.sum(np.tanh(w @ h + b))


def index_map_frozen(a):
    b = a * 1.0
    i = 0
    row = b[i]
    i = 2
    row[1] = a[i, 1]        # row is still row 0
    return np.sum(b * a)


def alias_through_elementwise_read(x):
    y = x.copy()
    v = y[1:]
    y[1:] = v * 2.0 + y[:-1]    # reads y before writing (numpy's right-hand side first)
    return np.sum(y * x)


def _tail(a):
    return a[1:]


def _first_row(m):
    return m[0]


def _fresh(n):
    a = np.zeros(n)
    a[0] = 1.0
    return a


def helper_returns_view(x):
    y = x * 1.0
    v = _tail(y)
    v[0] = 5.0 * x[0]
    return np.sum(y * x)


def helper_returns_row(x):
    y = x.reshape(2, 2) * 1.0
    r = _first_row(y)
    r *= 3.0
    return np.sum(y * y) + np.sum(_tail(x) ** 2)


def helper_returns_new_array(x):
    a = _fresh(4)
    a[1:] = x[1:] * 2.0
    return np.sum(a * x)


def reshape_then_transpose(x):
    y = x * 1.0
    t = y.reshape(2, 2).T
    t[0, 1] = 5.0 * x[3]
    return np.sum(y * x)


def new_axis_view(x):
    y = x * 1.0
    c = y[:, None]
    c[1, 0] = c[2, 0] * 3.0
    return np.sum(y * x)


def reversed_view(x):
    y = x * 1.0
    r = y[::-1]
    r[0] = r[1] * r[3]
    return np.sum(y * x)


def strided_block(a):
    b = a * 1.0
    v = b[1:, ::2]
    v[:] = v * a[0, 0]
    return np.sum(b * a)


def view_in_while(x):
    y = x * 1.0
    k = 0
    while k < 3:
        w = y[k:k + 2]
        w *= 0.5 + x[k]
        k += 1
    return np.sum(y * y)


VIEWS = [
    (slice_add, (X4,), 0), (slice_element, (X4,), 0), (reshape_element, (X4,), 0),
    (row_of_reshape, (X4,), 0), (view_sees_later_write, (X4,), 0), (strided_view, (X4,), 0),
    (plain_rebinding, (X4,), 0), (transpose_view, (A,), 0), (rows_double_buffer, (X4,), 0),
    (keep_old_binding, (X4,), 0), (ravel_view, (X4,), 0), (reshape_minus_one, (A,), 0),
    (flatten_copies, (A,), 0), (view_chosen_in_branch, (X4,), 0),
    (view_chosen_in_branch, (-X4,), 0), (row_in_loop, (A,), 0), (slice_to_helper, (X4,), 0),
    (transposed_3d_view, (X3,), 0), (size_and_ravel, (A,), 0), (view_of_view, (A,), 0),
    (fancy_copy_not_view, (X4,), 0), (reshape_of_params, (R.normal(size=8), R.normal(size=3)),
                                      (0, 1)),
    (index_map_frozen, (A,), 0), (alias_through_elementwise_read, (X4,), 0),
    (helper_returns_view, (X4,), 0), (helper_returns_row, (X4,), 0),
    (helper_returns_new_array, (X4,), 0), (reshape_then_transpose, (X4,), 0),
    (new_axis_view, (X4,), 0), (reversed_view, (X4,), 0), (strided_block, (A,), 0),
    (view_in_while, (X4,), 0),
]


@pytest.mark.parametrize("fn, args, argnums", VIEWS,
                         ids=[f"{c[0].__name__}-{k}" for k, c in enumerate(VIEWS)])
def test_views_share_memory(fn, args, argnums):
    check_against_numpy(fn, args, argnums)


@pytest.mark.parametrize("fn, value, gradient", [
    (slice_add, 13.25, [2.0, -2.0, 3.0, 6.0]),
    (slice_element, 10.25, None),
    (reshape_element, 38.25, None),
    (row_of_reshape, 19.25, None),
    (view_sees_later_write, 0.5, None),
    (strided_view, -2.0, None),
], ids=lambda v: getattr(v, "__name__", None))
def test_views_reported_cases(fn, value, gradient):
    """The programs first reported silently wrong, at x = [1, -2, 0.5, 3]."""
    v, g = adjit.value_and_grad(fn)(X4.copy())
    assert v == value
    if gradient is not None:
        np.testing.assert_array_equal(g, gradient)


def test_views_in_jvp():
    """Forward mode sees the same memory: jvp of a view write against finite differences."""
    t = R.normal(size=4)
    value, tangent = adjit.jvp(row_of_reshape)(X4.copy(), t)
    assert value == 19.25
    expected = np.dot(fd_grad(lambda x: row_of_reshape(x.copy()), [X4.copy()], 0), t)
    np.testing.assert_allclose(tangent, expected, rtol=1e-7)


def reads_view_bound_later_in_loop(x):
    y = x * 1.0
    v = y[:2]
    s = 0.0
    for i in range(2):
        s += np.sum(v)
        v = y[i:i + 2]
    return s


def trims_each_step(x):
    """An array name rebound to a slice of a new array each step: the next iteration's
    np.cumsum(x) means that slice (adjit read the argument x again: a wrong gradient)."""
    for k in range(2):
        y = np.cumsum(x) * 0.5
        x = y[1:]
    return np.sum(x ** 2)


def rebinds_argument_under_view(x):
    v = x[1:]
    x = x * 2.0
    return np.sum(v)


def view_of_swapped_array(x):
    u = x.copy()
    v = np.zeros_like(x)
    w = u[1:]
    for t in range(3):
        v[:] = np.sin(u) * 2.0
        u, v = v, u
    return np.sum(w * w)


@pytest.mark.parametrize("fn, what", [
    (reads_view_bound_later_in_loop, "read in a loop before the loop binds it"),
    (trims_each_step, "the name 'x' is read in a loop before the loop binds it"),
    (rebinds_argument_under_view, "which was rebound"),
    (view_of_swapped_array, "a swap of the array 'u', which 'w' is a view of"),
])
def test_views_that_cannot_be_known_are_refused(fn, what):
    with pytest.raises(AdjitError, match=what):
        adjit.grad(fn)(X4.copy())


# names ----------------------------------------------------------------------------------------
gain = 5.0
offset = 100.0


def kwonly_named_like_global(x, *, gain=2.0):
    return np.sum(x * x) * gain


def default_named_like_global(x, offset=1.0):
    return np.sum(x) + offset * x[0]


def local_named_like_global(x):
    gain = 3.0
    return np.sum(x) * gain


def parameter_named_like_builtin(x, len=2.0):
    return np.sum(x) * len


def make_closure():
    gain = 7.0

    def closure(x):
        return np.sum(x * x) * gain
    return closure


def test_keyword_only_parameter_hides_global():
    """The reported case: gain = 5 at module level, value 10.5 and gradient 2 * 2x without
    the keyword, 15.75 and 3 * 2x with gain=3."""
    x = np.array([1.0, -2.0, 0.5])
    v, g = adjit.value_and_grad(kwonly_named_like_global)(x)
    assert v == 10.5
    np.testing.assert_array_equal(g, 4.0 * x)
    v, g = adjit.value_and_grad(kwonly_named_like_global)(x, gain=3.0)
    assert v == 15.75
    np.testing.assert_array_equal(g, 6.0 * x)
    v, g = adjit.value_and_grad(kwonly_named_like_global, argnums=(0, 1))(x, gain=3.0)
    assert g[1] == np.sum(x * x)


@pytest.mark.parametrize("fn, args, kwargs, value", [
    (default_named_like_global, (X4,), {}, np.sum(X4) + X4[0]),
    (default_named_like_global, (X4, 3.0), {}, np.sum(X4) + 3.0 * X4[0]),
    (default_named_like_global, (X4,), {"offset": 4.0}, np.sum(X4) + 4.0 * X4[0]),
    (local_named_like_global, (X4,), {}, 3.0 * np.sum(X4)),
    (parameter_named_like_builtin, (X4,), {}, 2.0 * np.sum(X4)),
    (make_closure(), (X4,), {}, 7.0 * np.sum(X4 * X4)),
], ids=["default", "default-given", "default-keyword", "local", "builtin", "closure"])
def test_names_bind_as_in_python(fn, args, kwargs, value):
    v, g = adjit.value_and_grad(fn)(*args, **kwargs)
    assert v == value
    np.testing.assert_allclose(g, fd_grad(lambda *a: fn(*a, **kwargs), args, 0), rtol=1e-7)


def _helper_with_keywords(a, *, scale=2.0, shift=0.0):
    return a * scale + shift


def helper_keywords(x):
    return _helper_with_keywords(x[0], shift=1.0) + _helper_with_keywords(x[1], scale=3.0)


def test_helper_keyword_only_and_defaults():
    v, g = adjit.value_and_grad(helper_keywords)(X4.copy())
    assert v == X4[0] * 2.0 + 1.0 + X4[1] * 3.0
    np.testing.assert_array_equal(g, [2.0, 3.0, 0.0, 0.0])


def test_vjp_with_keyword_only_parameter():
    def f(x, *, c=2.0):
        return x * c
    out, xbar = adjit.vjp(f)(X4.copy(), np.ones(4), c=3.0)
    np.testing.assert_array_equal(out, 3.0 * X4)
    np.testing.assert_array_equal(xbar, 3.0 * np.ones(4))


def test_star_args_are_a_tuple_not_differentiated():
    def f(x, *rest):
        return x * len(rest)
    assert adjit.grad(f)(1.0, 2.0, 3.0) == 2.0
    with pytest.raises(AdjitError, match=r"argnums 1 .* before \*rest"):
        adjit.grad(f, argnums=1)(1.0, 2.0)


# constructors of active values -------------------------------------------------------------
W5 = np.array([0.3, -0.2, 0.5, 1.0, 0.7])


def linspace_active(a, b, w):
    return np.sum(w * np.linspace(a, b, 5) ** 2)


def full_active(a, b, w):
    return np.sum(w * np.full(5, a) * b)


def full_like_active(a, b, w):
    return np.sum(np.full_like(w, a) * w * b)


def array_literal_active(a, b, w):
    return np.sum(np.array([a, b * 2.0, 3.0, a * b, 1.0]) * w)


def stack_active(a, b, w):
    return np.sum(np.stack((w * a, w * b)) ** 2)


def concatenate_active(a, b, w):
    return np.sum(np.concatenate((w * a, w[:2] * b)) ** 2)


def empty_then_fill(a, b, w):
    e = np.empty(5)
    for i in range(5):
        e[i] = a * i + b
    return np.sum(e * w)


def eye_times_scalar(a, b, w):
    return np.sum(np.eye(5) * a * w + b)


def arange_active(a, b, w):
    return np.sum(np.arange(a, 1.7, b) ** 2 * w[0])


def fill_slice_with_scalar(a, b, w):
    e = np.zeros(5)
    e[:] = a
    return np.sum(e * w * b)


def linspace_from_int_constant(a, b, w):
    v = b * w[0] + 1.5
    return np.sum(np.linspace(0, v, 5) * w) + a


CONSTRUCTORS = [linspace_from_int_constant, linspace_active, full_active, full_like_active, array_literal_active,
                stack_active, concatenate_active, empty_then_fill, eye_times_scalar,
                arange_active, fill_slice_with_scalar]


@pytest.mark.parametrize("fn", CONSTRUCTORS, ids=[f.__name__ for f in CONSTRUCTORS])
def test_constructors_carry_derivatives(fn):
    check_against_numpy(fn, (-0.5, 0.5 if fn is arange_active else 1.5, W5), (0, 1, 2))


def test_linspace_reported_case():
    _, g = adjit.value_and_grad(linspace_active, argnums=(0, 1))(-0.5, 1.5, W5)
    np.testing.assert_allclose(g, (0.45, 3.85), rtol=1e-13)


@pytest.mark.parametrize("fn", [linspace_active, arange_active],
                         ids=["linspace", "arange"])
def test_constructors_in_forward_mode(fn):
    args = (-0.5, 0.5 if fn is arange_active else 1.5, W5)
    g = adjit.grad(fn, argnums=(0, 1))(*args)
    for k in (0, 1):
        tangent = (1.0, 0.0) if k == 0 else (0.0, 1.0)
        _, t = adjit.jvp(fn, argnums=(0, 1))(*args, tangent)
        np.testing.assert_allclose(t, g[k], rtol=1e-12)


def diag_of_active(a, w):
    return np.sum(np.diag(w * a) ** 2)


def test_diag_of_an_active_vector():
    # d/da sum((w a)^2) = 2 a sum(w^2): off-diagonal zeros carry nothing
    np.testing.assert_allclose(adjit.grad(diag_of_active)(0.5, W5), np.sum(W5 ** 2),
                               rtol=1e-13)


def geomspace_of_active(a, w):
    return np.sum(np.geomspace(1.0, 2.0 + a, 5) * w)


def test_geomspace_of_an_active_endpoint():
    # out[k] = (2 + a) ** (k / 4): d/da sum(w out) = sum(w out t / (2 + a))
    t = np.arange(5) / 4.0
    expected = np.sum(W5 * (2.5 ** t) * t / 2.5)
    np.testing.assert_allclose(adjit.grad(geomspace_of_active)(0.5, W5), expected, rtol=1e-13)


def kaiser_of_active(beta, w):
    return np.sum(np.kaiser(5, beta) * w)


def test_constructor_without_a_rule_is_refused():
    with pytest.raises(AdjitError, match="np.kaiser"):
        adjit.grad(kaiser_of_active)(0.5, W5)


# arguments --------------------------------------------------------------------------------------
def sum_sq(x):
    return np.sum(x * x)


@pytest.mark.parametrize("x", [
    np.array(3.0), np.zeros(0), np.arange(10.0)[::2], np.asfortranarray(A),
    np.arange(12.0).reshape(3, 4)[:, 1:3], np.array([1.0, 2.0], np.float32),
], ids=["0-d", "empty", "strided", "fortran", "2-d-slice", "float32"])
def test_array_arguments_of_every_layout(x):
    v, g = adjit.value_and_grad(sum_sq)(x)
    assert np.isclose(v, np.sum(x * x))
    assert g.shape == x.shape and g.dtype == x.dtype
    np.testing.assert_allclose(g, 2 * x, rtol=1e-6)


def reshape_argument(x):
    return np.sum(x.reshape(-1) * np.arange(x.size))


@pytest.mark.parametrize("x", [np.asfortranarray(A), A[:, 1:3], A],
                         ids=["fortran", "slice", "contiguous"])
def test_reshape_of_any_layout_reads_in_c_order(x):
    check_against_numpy(reshape_argument, (x,), 0)


def second_row(x, n):
    return np.sum(x.reshape(2, n)[1] ** 2)


def reshaped_unused(x):
    y = x.reshape(4, 4)     # noqa: F841 - the reshape alone raises: 16 is not x's size
    return np.sum(x * x)


def two_unknowns(x, n):
    return np.sum(x.reshape(n, -1, 3)[0])


@pytest.mark.parametrize("fn, args", [
    (second_row, (np.arange(6.0), 2)),          # 2 x 2 of 6 elements
    (reshaped_unused, (np.arange(6.0),)),
    (two_unknowns, (np.arange(6.0), -1)),       # -1 twice, one of them given as a value
    (two_unknowns, (np.arange(7.0), 1)),        # 7 is not a multiple of 3
], ids=["size", "unused", "two-unknowns", "not-whole"])
def test_a_reshape_to_another_size_raises_as_numba_does(fn, args):
    # (it gave a number: the size check was dropped with the sizes nothing read)
    with pytest.raises(ValueError):
        numba.njit(fn)(*args)
    with pytest.raises(ValueError):
        adjit.value_and_grad(fn)(*args)


def test_a_size_given_as_a_value_may_be_minus_one():
    x = np.arange(6.0) + 1.0
    for n in (3, -1, -2):       # (numba reads any negative size as the unknown one)
        value, g = adjit.value_and_grad(second_row)(x, n)
        assert value == numba.njit(second_row)(x, n) == 16.0 + 25.0 + 36.0
        np.testing.assert_array_equal(g, [0, 0, 0, 8.0, 10.0, 12.0])


def test_float32_gradient_is_float32():
    x = np.array([1.0, -2.0, 0.5], np.float32)
    g = adjit.grad(lambda_free_sum)(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, np.cos(x.astype(np.float64)), rtol=1e-6)


def lambda_free_sum(x):
    return np.sum(np.sin(x))


# time loops through views, with and without checkpointing -----------------------------------
def heat_through_views(u0, alpha, steps):
    u = u0.copy()
    inner = u[1:-1]
    left = u[:-2]
    right = u[2:]
    for t in range(steps):
        inner[:] = inner + alpha * (left - 2.0 * inner + right) + 0.1 * np.sin(inner)
    return np.sum(u * u)


def two_levels_by_parity(u0, c, steps):
    state = np.zeros((2, u0.shape[0]))
    state[0] = u0
    for t in range(steps):
        cur = state[t % 2]
        nxt = state[(t + 1) % 2]
        nxt[1:-1] = cur[1:-1] + c * (cur[:-2] - 2.0 * cur[1:-1] + cur[2:])
    return np.sum(state[steps % 2] ** 2)


@pytest.mark.parametrize("fn", [heat_through_views, two_levels_by_parity],
                         ids=["heat", "parity-rows"])
@pytest.mark.parametrize("checkpoint", [None, 2], ids=["recorded", "checkpointed"])
def test_time_loops_through_views(fn, checkpoint):
    args = (R.random(9), 0.2, 7)
    v, g = adjit.value_and_grad(fn, argnums=(0, 1), checkpoint=checkpoint)(*args)
    assert np.isclose(v, fn(*args), rtol=1e-14)
    for k in (0, 1):
        np.testing.assert_allclose(g[k], fd_grad(fn, args, k), rtol=1e-6, atol=1e-8)


# evaluation order: numpy computes an expression when it is evaluated -----------------------
def _set_element(b, j, p):
    b[j] = j * 1.0
    return p


def expression_before_a_writing_helper(x, n):
    return np.sum((x + x) * _set_element(x, n, 2.0) * x)


def gather_target_before_a_writing_helper(x, n, ix):
    x[ix] *= (x[:3] + x[1:]) * _set_element(x, n, 2.0)
    return np.sum(x * x)


@pytest.mark.parametrize("fn, args", [
    (expression_before_a_writing_helper, (X4, 1)),
    (gather_target_before_a_writing_helper, (X4, 1, np.array([0, 2, 2]))),
], ids=["expression", "gather-target"])
def test_expressions_are_computed_before_a_later_helper_writes(fn, args):
    """`(x + x) * h(x)` with h writing x: numpy computes x + x first; `x[ix] *= e` reads
    x[ix] (a copy) before e runs."""
    check_against_numpy(fn, args, 0)


# an array computed from x keeps x's values from before a later in-place write to x --------
def scaled_then_strided_add(x):
    a = x * 3.0
    x[::2] += 1.0
    return np.sum(a * x)


def scaled_then_index_store(x):
    a = x * 3.0
    ix = np.array([0, 2])
    x[ix] = 0.5
    return np.sum(a * x)


def shifted_then_filled(x):
    a = x[1:] * 2.0
    x[:] = 0.25
    return np.sum(a) + np.sum(x)


def sine_then_doubled(x):
    a = np.sin(x)
    x *= 2.0
    return np.sum(a) + np.sum(x ** 2)


def where_then_shifted(x):
    a = np.where(x > 0.0, 2.0, x)
    x -= 1.0
    return np.sum(a)


def transposed_then_row_update(x):
    w = np.outer(x, x)
    a = w.T * 1.0
    w[0] -= 1.0
    return np.sum(a * w)


def scaled_then_masked_store(x):
    a = x * 2.0
    x[x > 0.5] = 0.0
    return np.sum(a * x)


BEFORE_A_WRITE = [scaled_then_strided_add, scaled_then_index_store, shifted_then_filled,
                  sine_then_doubled, where_then_shifted, transposed_then_row_update,
                  scaled_then_masked_store]


@pytest.mark.parametrize("fn", BEFORE_A_WRITE, ids=[f.__name__ for f in BEFORE_A_WRITE])
def test_arrays_computed_before_an_in_place_write_keep_the_old_values(fn):
    """`a = x * 3.0; x -= 1.0` (the write a loop over x's elements): `a` is x's values from
    before the write. adjit keeps `a` unevaluated until its use, and must compute it before
    the loop that writes x, not inside it."""
    check_against_numpy(fn, (np.array([1.3, 0.2, 0.7, -0.38]),), 0)


def scaled_then_written_in_a_branch(x, c):
    a = x * 2.0
    if c > 0.0:
        x[0] = 5.0
    return np.sum(a * x)


def mask_then_view_written_in_a_branch(x, c):
    m = x > 0.5
    v = x[::-1]
    if c > 0.0:
        v[:-1] = 1.0
    return np.sum(x[m] ** 2)


def scaled_then_halved_in_a_loop(x, c):
    a = x * 3.0
    for i in range(2):
        x[:] = x * c
    return np.sum(a * x)


def read_in_a_loop_that_writes(x, c):
    a = x * c
    s = 0.0
    for i in range(3):
        s += np.sum(a)
        x[i] = 0.0
    return s + np.sum(x)


def _zero_first(b):
    b[0] = 0.0
    return 1.0


def helper_write_in_a_conditional_expression(x, c):
    a = x * 2.0
    s = _zero_first(x) if c > 0.0 else 0.5
    return s + np.sum(a * x)


def helper_write_after_and(x, c):
    a = x * 2.0
    if c > 0.0 and _zero_first(x) > 0.0:
        c = c * 2.0
    return c + np.sum(a * x)


BEFORE_A_BLOCK = [scaled_then_written_in_a_branch, mask_then_view_written_in_a_branch,
                  scaled_then_halved_in_a_loop, read_in_a_loop_that_writes,
                  helper_write_in_a_conditional_expression, helper_write_after_and]


@pytest.mark.parametrize("c", [0.5, -1.0])
@pytest.mark.parametrize("fn", BEFORE_A_BLOCK, ids=[f.__name__ for f in BEFORE_A_BLOCK])
def test_arrays_computed_before_a_branch_or_loop_that_writes(fn, c):
    """The write is in an `if` or a loop: the pending array is computed before it, not on
    one path only (it was undefined, or zero, on the other) nor in every iteration."""
    check_against_numpy(fn, (np.array([1.3, 0.2, 0.7, -0.38]), c), (0, 1))


def _off_diagonal_terms(M, x):
    return (np.trace(np.sin(M), 1) + np.trace(M * M, offset=-1) + np.trace(M, 5) +
            np.sum(np.diag(M, -2) ** 2) + np.sum(np.diag(M.T, 2) * 3.0) +
            np.sum(np.diag(x, 1) @ np.arange(4.0)) + np.sum(np.sin(np.diag(x, k=-2))))


def test_offset_diagonals_and_traces_match_numba_and_finite_differences():
    from fd import check_value_and_grad
    M = np.arange(12.0).reshape(3, 4) / 7.0 - 0.5
    x = np.array([0.3, -0.2, 0.9])
    check_value_and_grad(_off_diagonal_terms, (M, x), (0, 1))


@numba.njit
def _smooth_update(level, s, alpha, y):
    # as statsforecast's ETS `update`: writes the seasonal states it is given and hands them
    # back with the new level (`l, b, s = update(..., s, ...)`)
    new = level + alpha * (y - level - s[0])
    s[0] = s[1] + alpha * (y - new)
    s[1] = 0.5 * s[0]
    return new, s


@numba.njit
def _bump_first(v, a):
    v[0] += a
    return v


def states_handed_back(x, alpha, y):
    s = np.zeros(2)
    s[0] = x[1]
    s[1] = x[2]
    level = x[0]
    lik = 0.0
    for i in range(y.shape[0]):
        e = y[i] - level - s[1]
        lik += e * e
        level, s = _smooth_update(level, s, alpha, y[i])
    return lik + s[0]


def window_handed_back(x, a):
    buf = x.copy()
    w = buf[1:3]
    t = 0.0
    for i in range(4):
        t += w[0] * w[1]
        w = _bump_first(w, a * w[1])
    return t + np.sum(buf * buf)


def argument_handed_back(x, a):
    for i in range(3):
        x = _bump_first(x, a * x[1])
    return np.sum(x * x)


HANDED_BACK = [(states_handed_back, (np.array([0.1, 0.2, 0.3]), 0.3,
                                     np.sin(np.arange(12.0)))),
               (window_handed_back, (np.array([0.4, -0.3, 0.8, 1.1]), 0.7)),
               (argument_handed_back, (np.array([0.4, -0.3, 0.8]), 0.7))]


@pytest.mark.parametrize("fn, args", HANDED_BACK, ids=[c[0].__name__ for c in HANDED_BACK])
def test_a_helper_handing_back_the_array_it_was_given(fn, args):
    """`s = helper(s)` in a loop, where the helper writes s and returns it: s means the same
    array in every iteration (it was refused as a name bound to another view in the loop)."""
    check_against_numpy(fn, args, (0, 1))


@numba.njit
def _first_state(y, a):
    # as statsforecast's theta model: the first state built as a (1, n) array
    states = np.zeros((1, 3))
    states[0, 0] = a * y[0]
    states[0, 1] = y[1] * y[0]
    states[0, 2] = a
    return states


def row_from_a_one_row_matrix(y, a):
    states = np.zeros((4, 3))
    states[0, :] = _first_state(y, a)
    for i in range(1, 4):
        states[i] = states[i - 1] * a + y[i]
    return np.sum(states * states)


def slice_from_a_reshaped_row(y, a):
    out = np.zeros(3)
    out[:] = np.sin(y[:3]).reshape(1, 3) * a
    return np.sum(out ** 2)


def rows_into_one_row(y, a):
    out = np.zeros((2, 3))
    out[0] = np.ones((2, 3)) * a
    return np.sum(out)


@pytest.mark.parametrize("fn", [row_from_a_one_row_matrix, slice_from_a_reshaped_row])
def test_a_value_with_leading_lengths_of_one_stored_into_fewer_dimensions(fn):
    """numpy and numba take a value's leading lengths of 1 away when it is stored."""
    check_against_numpy(fn, (np.array([0.3, -0.7, 1.2, 0.4]), 0.8), (0, 1))


def test_a_value_with_a_leading_length_other_than_one_raises_as_numba_does():
    with pytest.raises(ValueError):
        numba.njit(rows_into_one_row)(np.ones(4), 0.8)
    with pytest.raises(ValueError, match="cannot assign slice"):
        adjit.grad(rows_into_one_row, argnums=1)(np.ones(4), 0.8)


@numba.njit
def _packed_or_square(phi, r):
    # as statsforecast's getQ0: a flat array, reshaped and returned early for one case
    res = np.zeros((r, r))
    res = res.flatten()
    if r == 1:
        res[0] = 1.0 / (1.0 - phi[0] * phi[0])
        res = res.reshape((r, r))
        return res
    for i in range(r * r):
        res[i] = phi[i % phi.size] * (i + 1)
    res = res.reshape((r, r))
    return res


def early_return_of_a_reshaped_view(phi, r):
    return np.sum(_packed_or_square(phi, r) ** 2)


@numba.njit
def _head_or_square(x, c):
    v = x[:2]
    if c > 0.0:
        v = x.reshape((2, 2))
        return np.sum(v, axis=0) * c
    v[0] = 5.0 * c
    return v * 2.0


def early_return_of_a_view_of_another_rank(x, c):
    return np.sum(_head_or_square(x, c) ** 2) + np.sum(x)


@pytest.mark.parametrize("fn, args", [
    (early_return_of_a_reshaped_view, (np.array([0.3, 0.2]), 1)),
    (early_return_of_a_reshaped_view, (np.array([0.3, 0.2]), 2)),
    (early_return_of_a_view_of_another_rank, (np.array([0.3, -0.7, 1.2, 0.4]), 0.5)),
    (early_return_of_a_view_of_another_rank, (np.array([0.3, -0.7, 1.2, 0.4]), -0.5))])
def test_a_path_that_returns_binds_a_view_of_another_rank(fn, args):
    """A name bound on a path that returns, to a view of another rank than the name's on
    the path that goes on: nothing after the `if` sees it (it was refused as an array of
    two ranks)."""
    argnums = (0, 1) if isinstance(args[1], float) else (0,)
    check_against_numpy(fn, args, argnums)
