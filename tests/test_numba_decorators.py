"""numba's own decorators inside differentiated code, written as numba users write them.

A `@vectorize` ufunc (eager signatures or lazy) is an elementwise function: adjit inlines its
scalar kernel on numbers, and on arrays makes it the body of the loop over the broadcast
elements, like any other elementwise operation. Every gradient is checked against central
differences of numba's own compiled forward (the same function under @njit), and forward
mode against reverse mode by the dot-product test."""
import contextlib
import math

import numpy as np
import pytest
import numba
from numba import double, jit, njit, vectorize
from numba.extending import overload, register_jitable

import adjit
from adjit import AdjitError
from fd import check_value_and_grad, fd_grad

# a density library's style: eager signatures, a ufunc per formula ---------------------------

_SIGNATURES = ["float64(float64, float64, float64)", "float32(float32, float32, float32)"]


@vectorize(_SIGNATURES)
def norm_pdf(x, mu, sigma):
    z = (x - mu) / sigma
    return math.exp(-0.5 * z * z) / (sigma * math.sqrt(2.0 * math.pi))


@vectorize(_SIGNATURES)
def norm_logcdf(x, mu, sigma):
    z = (x - mu) / (sigma * math.sqrt(2.0))
    return math.log(0.5 * math.erfc(-z))


def negative_log_likelihood(mu, sigma, x):
    """An unbinned fit: the data an array, the parameters numbers broadcast against it."""
    return -np.sum(np.log(norm_pdf(x, mu, sigma)))


def censored_log_likelihood(params, x, limit):
    mu, sigma = params[0], params[1]
    inside = np.sum(np.log(norm_pdf(x, mu, sigma)))
    return inside + 3.0 * norm_logcdf(limit, mu, sigma)     # numbers in, a number out


# lazy: the kernel has branches; applied to arrays and to elements in a loop ------------------

@vectorize
def huber(r, delta):
    a = abs(r)
    if a <= delta:
        return 0.5 * r * r
    return delta * (a - 0.5 * delta)


def robust_fit_loss(theta, t, y):
    residual = theta[0] + theta[1] * t + theta[2] * t * t - y
    total = np.sum(huber(residual, 0.3))
    for i in range(t.shape[0]):
        total += 0.1 * huber(theta[0] * t[i] - y[i], 1.0)
    return total


@vectorize(["float64(float64, float64)"])
def soft_clip(v, limit):
    return limit * math.tanh(v / limit)


@njit
def layer(W, x):
    """An @njit helper that calls the ufunc on its own temporaries."""
    return soft_clip(W @ x, 2.0)


def two_layers(W1, W2, x):
    h = layer(W1, x)
    return np.sum(layer(W2, h) ** 2)


def broadcast_table(a, b):
    """A row and a column broadcast into a table; the result kept, indexed and written."""
    table = soft_clip(a[:, None] * b[None, :], 1.5)
    table[0, 0] = 0.0
    s = 0.0
    for i in range(table.shape[1]):     # the diagonal of the (5, 4) table
        s += table[i, i] * a[i]
    return s + np.sum(table[:, 1:])


RNG = np.random.default_rng(7)
X = RNG.normal(0.3, 1.2, size=40)



def test_eager_ufuncs_in_a_likelihood_match_numba_and_finite_differences():
    args = (0.2, 1.1, X)
    g_mu, g_sigma = check_value_and_grad(negative_log_likelihood, args, (0, 1))
    # the analytic gradient of the normal negative log-likelihood
    assert g_mu == pytest.approx(-np.sum(X - 0.2) / 1.1 ** 2, rel=1e-12)
    assert g_sigma == pytest.approx(X.size / 1.1 - np.sum((X - 0.2) ** 2) / 1.1 ** 3,
                                    rel=1e-12)
    check_value_and_grad(censored_log_likelihood, (np.array([0.1, 0.9]), X, 2.5), 0)


def test_a_lazy_ufunc_with_branches_on_arrays_and_on_elements():
    t = np.linspace(-1.0, 1.0, 25)
    y = 0.5 - 0.8 * t + 0.3 * t * t + RNG.normal(0.0, 0.4, size=t.size)
    theta = np.array([0.2, -0.5, 0.1])
    check_value_and_grad(robust_fit_loss, (theta, t, y), 0)
    # the forward and reverse modes agree (the dot-product test)
    g = adjit.grad(robust_fit_loss)(theta, t, y)
    v = np.array([0.3, -1.0, 0.7])
    _, tangent = adjit.jvp(robust_fit_loss)(theta, t, y, v)
    assert tangent == pytest.approx(np.dot(g, v), rel=1e-12)


def test_a_ufunc_inside_an_njit_helper_and_broadcast_in_two_dimensions():
    W1, W2, x = RNG.normal(size=(6, 4)), RNG.normal(size=(3, 6)), RNG.normal(size=4)
    check_value_and_grad(two_layers, (W1, W2, x), (0, 1, 2))
    a, b = RNG.normal(size=5), RNG.normal(size=4)
    check_value_and_grad(broadcast_table, (a, b), (0, 1))


def test_the_generated_loop_is_the_kernel_inlined():
    text = adjit.show(negative_log_likelihood, "normalized", 0.2, 1.1, X)
    assert "# norm_pdf, line" in text and "math.exp(" in text    # the kernel's own lines
    code = [line for line in text.splitlines() if not line.strip().startswith("#")]
    assert not any("norm_pdf(" in line for line in code)          # no call is left


def _out_keyword(x):
    y = np.empty_like(x)
    soft_clip(x, 2.0, out=y)
    return np.sum(y)


def _integers_times(x, n):
    k = np.arange(n)
    return x * np.sum(soft_clip(k, 3))


def test_a_ufunc_passed_to_grad_itself_is_its_kernel_at_numbers():
    """`grad(norm_pdf)` of the @vectorize function itself (FinancePy's bs_value is one): the
    derivative of its scalar kernel, as a call with numbers runs it."""
    for f, args in ((norm_pdf, (0.4, 0.1, 1.3)), (huber, (0.2, 0.3)), (huber, (-0.9, 0.3))):
        value, g = adjit.value_and_grad(f, argnums=tuple(range(len(args))))(*args)
        assert value == pytest.approx(f(*args), rel=1e-15)
        np.testing.assert_allclose(g, [fd_grad(f, args, j) for j in range(len(args))],
                                   rtol=1e-7)


def test_keywords_are_refused_by_name_and_integer_operands_are_numbas_own_call():
    with pytest.raises(AdjitError, match=r"_out_keyword.*`out=` of the ufunc `soft_clip`"):
        adjit.grad(_out_keyword)(X)
    # integers in: no derivative flows through, and numba computes the call as it would
    g = adjit.grad(_integers_times)(1.5, 4)
    assert g == pytest.approx(njit(_integers_times)(1.0, 4), rel=1e-15)


def test_a_ufunc_with_an_accumulator_method_is_refused():
    def uses_reduce(x):
        return soft_clip.reduce(x)
    with pytest.raises(AdjitError, match=r"the ufunc method `soft_clip.reduce`.*as a loop"):
        adjit.grad(uses_reduce)(X)


@njit
def _shifted(x, c=1.0, *, gain=2.0):
    return gain * x + c


def calls_a_keyword_only_helper(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += _shifted(x[i], 0.5, gain=3.0)
    return s


def test_keyword_only_parameters_of_numba_compiled_helpers_are_refused():
    # numba itself computes this call as _shifted(x[i], 1.0, gain=2.0) (numba issue 5903):
    # the gradient of Python's meaning would not be the derivative of what numba runs
    x = np.array([0.5, -1.0])
    assert njit(calls_a_keyword_only_helper)(x) != calls_a_keyword_only_helper(x)
    with pytest.raises(AdjitError, match=r"keyword-only parameter\(s\) `gain` of a "
                                         r"numba-compiled function.*numba issue 5903"):
        adjit.grad(calls_a_keyword_only_helper)(x)


def test_keyword_only_parameters_of_plain_python_helpers_have_python_meaning():
    def scale(v, *, by=2.0):
        return by * v

    def f(x):
        return scale(x[0], by=3.0) + scale(x[1])
    np.testing.assert_allclose(adjit.grad(f)(np.array([1.0, 2.0])), [3.0, 2.0])


def _plain_sum(a, b):
    return a + b


parallel_sum = vectorize(["f8(f8, f8)"], target="parallel")(_plain_sum)


def _sum_of_parallel_sum(a, b):
    return np.sum(parallel_sum(a, b))


def test_a_parallel_target_ufunc_is_differentiated_through_its_kernel():
    """numba-examples' vectorize/sum.py: target='parallel' gives a plain ufunc with no
    Python kernel; adjit records the kernel when numba builds it (after adjit's import)."""
    a, b = np.array([0.5, 1.0, -2.0]), np.array([1.5, -1.0, 0.25])
    np.testing.assert_array_equal(adjit.grad(_sum_of_parallel_sum, argnums=(0, 1))(a, b)[1],
                                  np.ones(3))


@vectorize(["f8(f8, f8)", "f4(f4, f4)"], target="parallel")
def parallel_poly(a, b):
    return a * a * b + math.sin(b)


def _sum_of_parallel_poly(a, b):
    return np.sum(parallel_poly(a, b) * np.arange(1.0, a.size + 1.0))


@contextlib.contextmanager
def _built_before_adjit(ufunc):
    """As if numba had built `ufunc` before adjit's import: its kernel not recorded."""
    from adjit.frontend import source
    kernel = source._PARALLEL_KERNELS.pop(ufunc)
    try:
        yield
    finally:
        source._PARALLEL_KERNELS[ufunc] = kernel


def test_a_parallel_ufunc_built_before_adjit_is_read_from_its_module():
    """A parallel-target ufunc built before adjit's import (a library imported first, as
    numba-examples' scripts are): its kernel is the module's function of that name, or its
    decorated def read again, kept because it computes the ufunc's values."""
    a, b = np.array([0.5, 1.0, -2.0]), np.array([1.5, -1.0, 0.25])
    with _built_before_adjit(parallel_sum):
        np.testing.assert_array_equal(adjit.grad(_other_parallel_sum, argnums=(0, 1))(a, b)[0],
                                      np.full(3, 2.0))
    w = np.arange(1.0, 4.0)
    with _built_before_adjit(parallel_poly):
        ga, gb = adjit.grad(_sum_of_parallel_poly, argnums=(0, 1))(a, b)
    np.testing.assert_allclose(ga, w * 2.0 * a * b, rtol=1e-14)
    np.testing.assert_allclose(gb, w * (a * a + np.cos(b)), rtol=1e-14)
    np.testing.assert_allclose(ga, fd_grad(_sum_of_parallel_poly, (a, b), 0), rtol=1e-6)


def _shadowed(a, b):
    return a - b


def test_a_parallel_ufunc_whose_kernel_cannot_be_read_is_refused():
    """The module's function of the ufunc's name computes something else (the ufunc was
    built from a local def): refused, saying what to do, not differentiated through it."""
    def _shadowed(a, b):        # noqa: F811 - the ufunc's own kernel, not the module's
        return a + 2.0 * b
    ufunc = vectorize(["f8(f8, f8)"], target="parallel")(_shadowed)
    from adjit.frontend import source
    source._PARALLEL_KERNELS.pop(ufunc)
    globals()["_local_parallel"] = ufunc
    try:
        def f(a, b):
            return np.sum(_local_parallel(a, b))     # noqa: F821
        with pytest.raises(adjit.AdjitError, match="keeps no Python kernel.*Import adjit"):
            adjit.grad(f)(np.ones(3), np.ones(3))
    finally:
        del globals()["_local_parallel"]


def _other_parallel_sum(a, b):
    return np.sum(parallel_sum(a, b) * 2.0)


def _sum_of_squares(arr):
    m, n = arr.shape
    result = 0.0
    for i in range(m):
        for j in range(n):
            result += arr[i, j] * arr[i, j]
    return result


_jitted_sum_of_squares = jit(_sum_of_squares)
_compiled_sum_of_squares = _jitted_sum_of_squares.compile(double(double[:, ::1]))


def test_an_entry_point_from_dispatcher_compile_is_its_function():
    """numba-examples' legacy/sum.py: `csum2d = jit(sum2d).compile(sig)` returns the compiled
    entry point (a builtin keeping no reference to its dispatcher); adjit finds the
    dispatcher whose entry point it is and differentiates its function."""
    def loss(arr, w):
        return _compiled_sum_of_squares(arr * w)
    arr = np.arange(6.0).reshape(2, 3) / 5.0
    w = np.linspace(0.5, 1.5, 6).reshape(2, 3)
    np.testing.assert_allclose(adjit.grad(loss)(arr, w), 2.0 * arr * w * w, rtol=1e-14)
    assert loss(arr, w) == pytest.approx(np.sum((arr * w) ** 2), rel=1e-14)


# interpolation.py's style: a Python stub numba implements with @overload ---------------------

def _squared(x):
    pass        # numba compiles calls to it from _squared_impl below


@overload(_squared)
def _squared_impl(x):
    def impl(x):
        return x * x
    return impl


@njit
def squared(x):
    return _squared(x)


@register_jitable
def cubed(x):
    return x * x * x


def test_an_overload_stub_is_refused_naming_what_numba_runs():
    """The stub's Python body (`pass`) was inlined: value 0.0 and gradient 0, where numba
    gives 6.0 and 2x (found calling interpolation.py's `interp`, whose stubs are
    implemented by @overload). adjit now refuses a derivative through it by name; a
    @register_jitable function, whose body is what numba compiles, is differentiated as
    before."""
    def loss(x):
        return np.sum(squared(x))
    x = np.array([1.0, 1.0, 2.0])
    assert njit(loss)(x) == 6.0
    for make in (adjit.value_and_grad, adjit.grad, adjit.jvp):
        with pytest.raises(AdjitError, match=r"in function 'squared' .*a derivative would "
                           r"have to flow through `_squared` \(numba compiles calls to it "
                           r"from '_squared_impl' .*registered with numba.extending.overload"):
            make(loss)(x) if make is not adjit.jvp else make(loss)(x, np.ones(3))

    def cubes(x):
        return np.sum(cubed(x))
    np.testing.assert_allclose(adjit.grad(cubes)(x), 3.0 * x * x, rtol=1e-15)
    np.testing.assert_allclose(adjit.grad(cubes)(x), fd_grad(cubes, (x,), 0), rtol=1e-7)


def test_an_overload_stub_on_inactive_values_is_the_call_numba_makes():
    """Where no derivative flows through it (an integer, data outside argnums, a value
    under stop_gradient), the stub's call is kept as numba compiles it: its result is
    the overload's."""
    def by_count(x, n):
        return np.sum(x) * squared(n)

    def weighted(x, w):
        return np.sum(x * squared(w))

    def stopped(x):
        return np.sum(squared(adjit.stop_gradient(x)) * x)

    x = np.array([0.5, 1.0, 2.0])
    w = np.array([3.0, -1.0, 0.25])
    assert adjit.value_and_grad(by_count)(x, 3) == (pytest.approx(31.5), pytest.approx(
        np.full(3, 9.0)))
    np.testing.assert_allclose(adjit.grad(weighted)(x, w), w * w, rtol=1e-15)
    np.testing.assert_allclose(adjit.grad(stopped)(x), x * x, rtol=1e-15)
    np.testing.assert_allclose(adjit.grad(weighted)(x, w), fd_grad(njit(weighted), (x, w), 0),
                               rtol=1e-8)


def _no_result(x):
    x * x       # (no return: the call's value is None)


def _set_first(a):
    a[0] = 1.0


def _passes_on(a):
    return _set_first(a)    # returns what _set_first returns: None


def test_the_value_of_a_helper_that_returns_nothing_is_refused():
    """A helper without `return` gave 0.0 as its call's value: `2.0 * h(x)` differentiated
    to 0 where numba refuses to compile it. As a value (also through a name) it is refused;
    as a statement, and bound to a name never read, it is what numba runs."""
    def used(x):
        return 2.0 * _no_result(x)

    def through_a_name(x):
        y = _no_result(x)      # noqa: F841 - bound, never read
        return x + y

    def unused(x):
        _no_result(x)
        y = _no_result(x)      # noqa: F841 - bound, never read
        a = np.zeros(2)
        _passes_on(a)
        return 3.0 * x * a[0]

    def passed_on(x):
        return x * _passes_on(np.zeros(2))
    for fn in (used, through_a_name):
        with pytest.raises(AdjitError, match=r"the value of a call to `_no_result`, which "
                           r"returns nothing \(None\). Return the value from `_no_result`"):
            adjit.grad(fn)(1.5)
    assert adjit.grad(unused)(1.5) == 3.0
    with pytest.raises(AdjitError, match=r"the value of a call to `_passes_on`, which returns "
                       r"nothing"):
        adjit.grad(passed_on)(1.5)


class _Profile:
    """A library's lens profile as lenstronomy writes one: jitted static methods."""

    @staticmethod
    @njit
    def derivatives(x, y, b, center_x=0.0):
        r = np.sqrt((x - center_x) ** 2 + y ** 2)
        return b * (x - center_x) / r, b * y / r

    @staticmethod
    def scaled(x):
        return 3.0 * x

    def method(self, x):
        return x


def test_a_static_method_called_on_its_class_is_its_function():
    """`Profile.derivatives(...)` (a `@staticmethod @njit` function read from its class) is
    the function it holds; a plain method read from the class is refused by name."""
    def loss(b, cx):
        fx, fy = _Profile.derivatives(1.5, 0.5, b, cx)
        return fx * fx + fy + _Profile.scaled(b)

    # (numba compiles no class read as a global: the reference is the function run by Python)
    check_value_and_grad(loss, (2.0, 0.3), argnums=(0, 1), forward=loss)
    b, cx = 2.0, 0.3
    r2 = (1.5 - cx) ** 2 + 0.25
    # d/db: 2 b (1.5 - cx)^2 / r2 + 0.5 / sqrt(r2) + 3 (the analytic derivative)
    expected = 2 * b * (1.5 - cx) ** 2 / r2 + 0.5 / math.sqrt(r2) + 3.0
    assert math.isclose(adjit.grad(loss, argnums=(0, 1))(b, cx)[0], expected, rel_tol=1e-12)

    def unbound(b):
        return _Profile.method(None, b)
    with pytest.raises(AdjitError, match=r"a call to `_Profile.method`, which adjit cannot "
                       r"resolve. Call module-level functions, a class's static methods"):
        adjit.grad(unbound)(1.0)


# -- locals= declarations: numba converts what is assigned to a declared variable ------------

@njit("f4(f4[::1],f4[::1])", fastmath=True, locals={"result": numba.float32,
                                                   "diff": numba.float32})
def rdist32(x, y):
    """UMAP's layouts.rdist, as it is declared there: a float32 sum of squares."""
    result = 0.0
    dim = x.shape[0]
    for i in range(dim):
        diff = x[i] - y[i]
        result += diff * diff
    return result


@njit(locals={"s": numba.float32})
def float32_running_sum(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * 1.1
        if s > 100.0:
            s = s * 0.5
    return s * 3.0


@njit(locals={"k": numba.int32})
def truncated_index(x):
    k = x[0] * 3.0          # numba converts 2.7 to 2
    return x[k] * x[1]


@njit
def calls_the_float32_sum(x):
    return float32_running_sum(x) + x[0]


def test_locals_declared_float32_are_rounded_as_numba_rounds_them():
    rng = np.random.default_rng(3)
    x = (rng.random(60) * 3.0).astype(np.float32)
    y = rng.random(60).astype(np.float32)
    value, g = adjit.value_and_grad(rdist32)(x, y)
    assert value == rdist32(x, y)       # (summed in float64 it differs in the 7th digit)
    np.testing.assert_array_equal(g, 2.0 * (x - y))
    xd = rng.random(300)
    # the analytic gradient: 3.3 for each element, halved by every halving after it (the
    # halvings found by the same float32 arithmetic in Python)
    s, halved = np.float32(0.0), []
    for i, v in enumerate(xd):
        s = np.float32(s + v * 1.1)
        if s > 100.0:
            s = np.float32(s * 0.5)
            halved.append(i)
    want = np.array([3.3 * 0.5 ** sum(h >= i for h in halved) for i in range(xd.size)])
    assert halved
    for f, first in ((float32_running_sum, 0.0), (calls_the_float32_sum, 1.0)):
        value, g = adjit.value_and_grad(f)(xd)
        assert value == f(xd)
        np.testing.assert_allclose(g, want + np.eye(1, xd.size)[0] * first, rtol=1e-12)
    x3 = np.array([0.9, 1.5, 2.5, 0.5])
    value, g = adjit.value_and_grad(truncated_index)(x3)
    assert value == truncated_index(x3) == 2.5 * 1.5
    np.testing.assert_array_equal(g, [0.0, 2.5, 1.5, 0.0])
