"""`raise` in differentiated code, written as numba users write it: input checks at the top
of a function or a helper, a check inside a loop, and a solver that raises when it does not
converge after returning from inside its loop. The derivative is that of the path that does
not raise (against central differences and the analytic one); where the function raises,
its gradient, value_and_grad and jvp raise the same exception with the same message, from
Python and from @njit code. Forms numba cannot compile or adjit does not keep are refused by
name (tests/test_errors.py, docs/errors.md).

PYTEST_DONT_REWRITE: numba compiles this module's functions, `assert` included, which
pytest's assertion rewriting would turn into calls numba cannot type."""
import math

import numba
import numpy as np
import pytest

import adjit
from fd import fd_grad


@numba.njit
def decay_sum(x, scale):
    if scale <= 0.0:
        raise ValueError("scale must be positive")
    s = 0.0
    for i in range(x.shape[0]):
        s += np.exp(-x[i] / scale)
    return s


@numba.njit
def newton_sqrt(a):
    x = a
    for it in range(50):
        x_new = 0.5 * (x + a / x)
        if abs(x_new - x) < 1e-12:
            return x_new
        x = x_new
    raise RuntimeError("Newton's iteration did not converge")


@numba.njit
def check_positive(v):
    if v <= 0.0:
        raise ValueError("expected a positive value")
    return v


@numba.njit
def log_loss(x, s):
    s = check_positive(s)
    t = 0.0
    for i in range(x.shape[0]):
        t += math.log1p(x[i] ** 2 / s)
    return t


@numba.njit
def root_sum(x):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] < 0.0:
            raise ValueError("root_sum: negative entry")
        s += math.sqrt(x[i])
    return s


X = np.array([0.3, 0.7, 1.1, 2.0])


def test_a_guard_at_the_top_keeps_the_derivative_and_raises_where_the_function_does():
    g = adjit.grad(decay_sum, argnums=(0, 1))
    gx, gs = g(X, 2.0)
    want = [fd_grad(decay_sum, (X, 2.0), 0), fd_grad(decay_sum, (X, 2.0), 1)]
    np.testing.assert_allclose(gx, -np.exp(-X / 2.0) / 2.0, rtol=1e-13)
    np.testing.assert_allclose(gx, want[0], rtol=1e-7)
    np.testing.assert_allclose(gs, want[1], rtol=1e-7)
    for call in (lambda: g(X, -1.0), lambda: adjit.value_and_grad(decay_sum)(X, 0.0),
                 lambda: adjit.jvp(decay_sum, argnums=1)(X, -2.0, 1.0)):
        with pytest.raises(ValueError, match="^scale must be positive$"):
            call()
    with pytest.raises(ValueError, match="^scale must be positive$"):
        decay_sum(X, -1.0)              # (what numba's own function does)


def axis_rotation(x, axis):
    # poliastro's rotation_matrix checks `assert axis in (0, 1, 2)`; written with `or`
    assert axis == 0 or axis == 1 or axis == 2
    return x * x * (axis + 1)


def seeded_by_branch(x, k):
    if k > 0:
        seed = 7
    else:
        seed = 11
    np.random.seed(seed)       # the only later use of `seed`
    return x * np.random.random()


def test_an_assert_of_an_or_passes_where_its_last_operand_is_true():
    """`assert a or b` raised AssertionError where only b held: the `or`'s value, bound on
    both paths of the `if` it becomes, was split in two names and the check read the
    first path's (found calling poliastro's code). A seed chosen in a branch had the same
    fault: the seeding call read the other path's value (0), silently another stream."""
    g = adjit.grad(axis_rotation)
    for axis in (0, 1, 2):
        assert g(1.5, axis) == 3.0 * (axis + 1)
    with pytest.raises(AssertionError):
        g(1.5, 3)
    g = adjit.grad(seeded_by_branch)
    for k, seed in ((1, 7), (-1, 11)):
        np.random.seed(seed)
        assert g(2.0, k) == np.random.random()


def test_a_solver_that_raises_after_its_loop():
    """Returns from inside its loop on convergence; the path that finishes the loop raises.
    d sqrt(a) / da = 1 / (2 sqrt(a)); NaN never converges."""
    g = adjit.grad(newton_sqrt)
    for a in (0.5, 2.0, 9.0):
        assert g(a) == pytest.approx(0.5 / math.sqrt(a), rel=1e-12)
        assert g(a) == pytest.approx(fd_grad(newton_sqrt, (a,), 0), rel=1e-6)
    value, d = adjit.value_and_grad(newton_sqrt)(3.0)
    assert value == newton_sqrt(3.0) and d == pytest.approx(0.5 / math.sqrt(3.0), rel=1e-12)
    with pytest.raises(RuntimeError, match="did not converge"):
        newton_sqrt(math.nan)           # (what numba's own function does)
    with pytest.raises(RuntimeError, match="^Newton's iteration did not converge$"):
        g(math.nan)


def test_a_check_in_a_helper_and_in_a_loop():
    gx, gs = adjit.grad(log_loss, argnums=(0, 1))(X, 2.0)
    np.testing.assert_allclose(gx, fd_grad(log_loss, (X, 2.0), 0), rtol=1e-7)
    assert gs == pytest.approx(fd_grad(log_loss, (X, 2.0), 1), rel=1e-7)
    with pytest.raises(ValueError, match="^expected a positive value$"):
        adjit.grad(log_loss, argnums=(0, 1))(X, -2.0)
    g = adjit.grad(root_sum)
    np.testing.assert_allclose(g(X), 0.5 / np.sqrt(X), rtol=1e-13)
    with pytest.raises(ValueError, match="^root_sum: negative entry$"):
        g(np.array([1.0, -4.0]))


@numba.njit(parallel=True)
def parallel_roots(x):
    s = 0.0
    for i in numba.prange(x.shape[0]):
        if x[i] < 0.0:
            raise ValueError("negative entry")
        s += math.sqrt(x[i])
    return s


@numba.njit(parallel=True)
def parallel_asserted(x):
    s = 0.0
    for i in numba.prange(x.shape[0]):
        assert x[i] >= 0.0
        s += math.sqrt(x[i])
    return s


def test_a_raise_or_assert_in_a_prange_loop_reaches_the_caller():
    """numba runs a prange loop holding a raise or an assert serially, so the exception
    reaches the caller; so does the gradient (a helper raising inside a parallel loop was
    lost: the gradient returned NaN where numba raised)."""
    bad = np.array([1.0, -4.0, 2.0, 3.0])
    for fn, cls in ((parallel_roots, ValueError), (parallel_asserted, AssertionError)):
        g = adjit.grad(fn)
        np.testing.assert_allclose(g(X), 0.5 / np.sqrt(X), rtol=1e-13)
        with pytest.raises(cls):
            fn(bad)
        for call in (g, adjit.value_and_grad(fn)):
            with pytest.raises(cls):
                call(bad)


G_NEWTON = adjit.grad(newton_sqrt)


@numba.njit
def twice_the_slope(a):
    return 2.0 * G_NEWTON(a)


def test_a_gradient_called_from_njit_code_raises_there_too():
    assert twice_the_slope(4.0) == pytest.approx(0.5, rel=1e-12)
    with pytest.raises(RuntimeError, match="did not converge"):
        twice_the_slope(math.nan)


@numba.njit
def one_of_each(x, k):
    if k == 0:
        raise ValueError("value")
    elif k == 1:
        raise TypeError("type")
    elif k == 2:
        raise IndexError("index")
    elif k == 3:
        raise ZeroDivisionError("division")
    elif k == 4:
        raise NotImplementedError
    elif k == 5:
        raise Exception("anything")
    return x * x


def test_each_exception_class_is_raised_as_written():
    g = adjit.grad(one_of_each)
    assert g(1.5, -1) == 3.0
    for k, cls, message in ((0, ValueError, "value"), (1, TypeError, "type"),
                            (2, IndexError, "index"), (3, ZeroDivisionError, "division"),
                            (4, NotImplementedError, ""), (5, Exception, "anything")):
        with pytest.raises(cls) as raised:
            g(1.5, k)
        assert type(raised.value) is cls and str(raised.value) == message


def checked_newton(x, tol, n):
    """A solver that says what went wrong with the values that matter, as numba code does."""
    if tol <= 0.0:
        raise ValueError(f"tol must be positive, got n = {n}")
    y = x
    for k in range(n):
        y = y - (y * y - x) / (2.0 * y)
    if abs(y * y - x) > tol:
        raise RuntimeError("no convergence after", n, "steps; residual", y * y - x)
    return y


def test_messages_with_values_are_raised_as_numba_raises_them():
    compiled = numba.njit(checked_newton)
    g = adjit.grad(checked_newton)
    assert g(2.0, 1e-9, 30) == pytest.approx(0.5 / math.sqrt(2.0), rel=1e-12)
    value, tangent = adjit.jvp(checked_newton)(2.0, 1e-9, 30, 1.0)
    assert tangent == pytest.approx(0.5 / math.sqrt(2.0), rel=1e-12)
    for args in ((2.0, -1.0, 3), (2.0, 1e-12, 2)):
        with pytest.raises(Exception) as numba_raised:
            compiled(*args)
        for fn in (g, lambda *a: adjit.jvp(checked_newton)(*a, 1.0)):
            with pytest.raises(Exception) as raised:
                fn(*args)
            assert type(raised.value) is type(numba_raised.value)
            assert raised.value.args == numba_raised.value.args


class MyError(Exception):
    pass


class MyCodedError(Exception):
    def __init__(self, message, code=3):
        super().__init__(message)
        self.code = code


def custom_class(x):
    if x < 0.0:
        raise MyError("negative")
    return x * x


def custom_class_in_a_loop(x, a):
    s = 0.0
    for i in range(a.shape[0]):
        if a[i] < 0.0:
            raise MyError(f"entry {i} is negative")
        s += a[i] * x * x
    return s


def custom_init(x):
    if x < 0.0:
        raise MyCodedError("negative")
    return x * x


def test_an_exception_class_with_its_own_constructor():
    """FinancePy's FinError keeps its message in __init__; numba makes the exception from the
    class and the arguments when it raises, as the interpreter does (it was refused)."""
    g = adjit.value_and_grad(custom_init)
    assert g(1.5) == (2.25, 3.0)
    with pytest.raises(MyCodedError, match="negative") as raised:
        g(-1.5)
    assert raised.value.code == 3
    with pytest.raises(MyCodedError, match="negative") as raised:
        numba.njit(custom_init)(-1.5)
    assert raised.value.code == 3


def test_a_librarys_own_exception_class_is_raised_as_numba_raises_it():
    """`raise FinError("...")` of a class of the library's own (an Exception subclass with
    Exception's constructor), as FinancePy guards its inputs: numba raises it as it raises
    ValueError; it was refused."""
    g = adjit.value_and_grad(custom_class)
    assert g(1.5) == (2.25, 3.0)
    with pytest.raises(MyError, match="negative"):
        g(-1.5)
    a = np.array([0.5, 1.0, 2.0])
    value, (gx, ga) = adjit.value_and_grad(custom_class_in_a_loop, argnums=(0, 1))(1.5, a)
    assert value == numba.njit(custom_class_in_a_loop)(1.5, a)
    assert gx == pytest.approx(fd_grad(numba.njit(custom_class_in_a_loop), (1.5, a), 0))
    np.testing.assert_allclose(ga, 2.25 * np.ones(3), rtol=1e-15)
    with pytest.raises(MyError) as raised:
        adjit.grad(custom_class_in_a_loop)(1.5, -a)
    with pytest.raises(MyError) as numba_raised:
        numba.njit(custom_class_in_a_loop)(1.5, -a)
    assert str(raised.value) == str(numba_raised.value) == "entry 0 is negative"


def bare(x):
    if x < 0.0:
        raise
    return x * x


def chained(x):
    if x < 0.0:
        raise ValueError("negative") from None
    return x * x


def message_of_a_name(x):
    if x < 0.0:
        raise ValueError(MESSAGE)
    return x * x


MESSAGE = "negative"


def formatted_spec(x):
    if x < 0.0:
        raise ValueError(f"negative: {x:.3f}")
    return x * x


@pytest.mark.parametrize("fn, words", [
    (bare, "a bare `raise` (re-raising) is not supported"),
    (chained, "from None` is not supported"),
    (message_of_a_name, "not a string literal or an f-string is not supported"),
    (formatted_spec, "a conversion or format spec"),
])
def test_forms_adjit_does_not_keep_are_refused_by_name(fn, words):
    with pytest.raises(adjit.AdjitError, match=f"'{fn.__name__}'") as raised:
        adjit.grad(fn)(1.5)
    assert words in str(raised.value)
    assert f"line {fn.__code__.co_firstlineno + 2}" in str(raised.value)


@pytest.mark.cuda
def test_raise_in_a_kernel_is_refused():
    from numba import cuda

    @cuda.jit
    def kernel(x, out):
        i = cuda.grid(1)
        if x[i] < 0.0:
            raise ValueError("negative")
        out[i] = x[i] * x[i]

    with pytest.raises(adjit.AdjitError, match="a `raise` statement in CUDA code"):
        adjit.cuda.adjoint_kernel(kernel, argnums=(0,)).source_for(np.ones(4), np.ones(4))


# An array (or a number) bound on the paths of an if/elif whose last `else` raises, as pricing
# code picks a payoff (FinancePy's Monte Carlo pricers): only the paths that bind it go on.
# adjit's generated code used to read the name on the raising path (an internal error).

@numba.njit
def mean_payoff(paths, strike, kind):
    if kind == 1:
        payoff = np.maximum(paths - strike, 0.0)
    elif kind == 2:
        payoff = np.maximum(strike - paths, 0.0)
    else:
        raise ValueError("Unknown option type.")
    return np.mean(payoff)


@numba.njit
def scaled_or_raise(x, k, kind):
    if kind != 1:
        raise ValueError("only kind 1")
    else:
        y = x * k
        s = k * 2.0
    return np.sum(y * y) + s


@numba.njit
def checked_in_a_loop(x, k, kind):
    total = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            v = x[i] * k
        else:
            raise ValueError("negative price")
        total += v * v
    return total


@numba.njit
def updated_then_raised(x, k):
    """The raising path steps the argument in a loop before it raises: the other path reads
    the argument as given (adjit once read the raising path's copy there: 0.0)."""
    if k > 0:
        y = x * 2.0
    else:
        for i in range(3):
            x = x * 1.5 + np.sin(x)
        raise ValueError("k must be positive")
    return np.sum(y * x)


@numba.njit
def rebound_then_raised(x, k):
    y = x * 1.0
    s = 2.0
    if k > 0:
        z = y + 1.0
    else:
        y = x * 3.0
        s = 5.0
        raise ValueError("k must be positive")
    return np.sum(y * x * z) * s


@pytest.mark.parametrize("f", [mean_payoff, scaled_or_raise, checked_in_a_loop])
def test_names_bound_on_the_paths_that_do_not_raise(f):
    x = np.array([90.0, 100.0, 110.0, 120.0])
    for kind in (1, 2):
        try:
            expected = f(x, 104.0, kind)
        except ValueError as exc:
            with pytest.raises(ValueError, match=str(exc)):
                adjit.grad(f, argnums=1)(x, 104.0, kind)
            continue
        value, g = adjit.value_and_grad(f, argnums=(0, 1))(x, 104.0, kind)
        assert value == expected
        for k in (0, 1):
            np.testing.assert_allclose(g[k], fd_grad(f, [x, 104.0, kind], k), rtol=1e-6)
    with pytest.raises(ValueError):
        if f is checked_in_a_loop:
            adjit.grad(f)(-x, 1.0, 1)
        else:
            adjit.grad(f)(x, 104.0, 7)


@pytest.mark.parametrize("f", [updated_then_raised, rebound_then_raised])
def test_a_raising_path_that_binds_names_first(f):
    x = np.array([0.3, 0.8, -0.4])
    value, g = adjit.value_and_grad(f)(x, 1.0)
    assert value == f(x, 1.0)
    np.testing.assert_allclose(g, fd_grad(f, [x, 1.0], 0), rtol=1e-6)
    with pytest.raises(ValueError, match="k must be positive"):
        adjit.grad(f)(x, -1.0)


class FinError(Exception):
    pass


@numba.njit
def option_value(s, k, option_type):
    """FinancePy's bs_value: an option-type test that falls through to a raise."""
    if option_type == 1:
        phi = 1.0
    elif option_type == 2:
        phi = -1.0
    else:
        raise FinError("Unknown option type value")
    k = max(k, 1e-10)
    return phi * s * s - phi * k * s


@numba.njit
def american_value(s, k, phi):
    """FinancePy's baw_value, whose put branch passes -1 (an option type the helper does not
    know): that call always raises, and the call branch runs."""
    if phi == 1:
        return option_value(s, k, +1) + s
    elif phi == -1:
        v = option_value(s, k, -1)
        return s - v * 3.0
    raise FinError("Phi must equal 1 or -1.")


def test_a_helper_call_that_always_raises_ends_its_path():
    """A helper whose constant argument selects its `raise` never returns: the path that
    calls it raises there, as numba's does, and the other paths are differentiated."""
    value, g = adjit.value_and_grad(american_value, argnums=(0, 1))(1.3, 0.7, 1)
    assert value == american_value(1.3, 0.7, 1)
    np.testing.assert_allclose(g, [2.0 * 1.3 - 0.7 + 1.0, -1.3], rtol=1e-15)
    np.testing.assert_allclose(g, [fd_grad(american_value, [1.3, 0.7, 1], j) for j in (0, 1)],
                               rtol=1e-7)
    for fn in (american_value, adjit.grad(american_value)):
        with pytest.raises(FinError, match="Unknown option type value"):
            fn(1.3, 0.7, -1)
        with pytest.raises(FinError, match="Phi must equal 1 or -1"):
            fn(1.3, 0.7, 0)


@numba.njit
def counted(x, n):
    if n < 0:
        raise FinError("n must not be negative, not " + str(n) + " (x " + str(x) + ")")
    return x * x * n


def test_a_message_joined_with_str_is_raised_as_numba_raises_it():
    """`"..." + str(n)`, as FinancePy writes its messages: numba builds the string (a
    float's as numba writes it) and adjit the same."""
    assert adjit.grad(counted)(1.5, 3) == 9.0
    with pytest.raises(FinError) as numba_raised:
        counted(1.5, -2)
    with pytest.raises(FinError) as raised:
        adjit.grad(counted)(1.5, -2)
    assert raised.value.args == numba_raised.value.args
    assert "-2" in str(raised.value)


@numba.njit
def scaled_or_put(s, k, phi):
    """The call that always raises on one path of an `if` in the caller, whose block goes on
    after it on the other path."""
    y = 0.0
    if phi == 1:
        y = option_value(s, k, 1) + s
    else:
        y = s - option_value(s, k, -1) * 3.0
        y = y * 2.0
    for i in range(2):
        y = y * s
    return y


@numba.njit
def chosen_in_an_expression(s, k, phi):
    return option_value(s, k, 1) if phi == 1 else option_value(s, k, -1)


def test_a_call_that_always_raises_in_a_branch_or_an_expression():
    value, g = adjit.value_and_grad(scaled_or_put, argnums=(0, 1))(1.3, 0.7, 1)
    assert value == pytest.approx(scaled_or_put(1.3, 0.7, 1), rel=1e-15)
    np.testing.assert_allclose(g, [fd_grad(scaled_or_put, [1.3, 0.7, 1], j) for j in (0, 1)],
                               rtol=1e-7)
    with pytest.raises(FinError, match="Unknown option type value"):
        adjit.grad(scaled_or_put)(1.3, 0.7, 0)
    with pytest.raises(adjit.AdjitError, match="a call of `option_value` that always raises "
                                               "here .* where it may not run"):
        adjit.grad(chosen_in_an_expression)(1.3, 0.7, 1)
