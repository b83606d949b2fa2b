"""Every construct of the core language, differentiated and checked against finite
differences; the normalized program of each is run against the original."""
import enum
import math

import numba
import numpy as np
import pytest

import adjit
from adjit.show import normalized_callable

from fd import assert_grad_matches_fd, check_value_and_grad, fd_grad
import programs
from programs import PROGRAMS

_IDS = [f"{f.__name__}-{k}" for k, (f, _, _) in enumerate(PROGRAMS)]
_GRADS = {}


def gradient(f, argnums):
    if (f, argnums) not in _GRADS:
        _GRADS[(f, argnums)] = adjit.grad(f, argnums=argnums)
    return _GRADS[(f, argnums)]


def _copy_args(args):
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def _fd_function(f):
    """The primal, on copies of its arguments (some programs write their inputs)."""
    return lambda *a: f(*_copy_args(a))


@pytest.mark.parametrize("f, args, argnums", PROGRAMS, ids=_IDS)
def test_gradient_matches_finite_differences(f, args, argnums):
    assert_grad_matches_fd(gradient(f, argnums), _fd_function(f), _copy_args(args), argnums)


@pytest.mark.parametrize("f, args, argnums", PROGRAMS, ids=_IDS)
def test_normalized_program_computes_the_same(f, args, argnums):
    assert normalized_callable(f)(*_copy_args(args)) == pytest.approx(f(*_copy_args(args)),
                                                                      rel=1e-12)


@pytest.mark.parametrize("f, args, argnums", PROGRAMS[:12], ids=_IDS[:12])
def test_value_and_grad(f, args, argnums):
    value, grads = adjit.value_and_grad(f, argnums=argnums)(*_copy_args(args))
    assert value == pytest.approx(f(*_copy_args(args)), rel=1e-12)
    expected = gradient(f, argnums)(*_copy_args(args))
    for got, want in zip(np.atleast_1d(grads) if isinstance(argnums, int) else grads,
                         np.atleast_1d(expected) if isinstance(argnums, int) else expected):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_inputs_are_not_mutated():
    x = np.random.default_rng(1).random(6)
    before = x.copy()
    for f in (programs.sum_of_sin, programs.inplace_square, programs.heat):
        args = (x, 0.1, 3) if f is programs.heat else (x,)
        gradient(f, 0)(*args)
        np.testing.assert_array_equal(x, before)


# "Never wrong": the cases where peers return silently wrong gradients, checked analytically.

def test_running_product_with_runtime_trip_count():
    x = np.array([0.5, 2.0, 3.0, -1.5, 0.25])
    g = gradient(programs.running_product, 0)(x)
    expected = np.array([np.prod(np.delete(x, i)) for i in range(len(x))])
    np.testing.assert_allclose(g, expected, rtol=1e-14)


def test_value_set_before_loop_used_after():
    def analytic(x, n):
        h = 1e-7
        lo, hi = x.copy(), x.copy()
        lo[0] -= h
        hi[0] += h
        return (programs.carried_through_loop(hi, n) - programs.carried_through_loop(lo, n)) \
            / (2 * h)
    x = np.array([0.3, 0.2, 0.1])
    for n in (0, 1, 5, 17):
        g = gradient(programs.carried_through_loop, 0)(x, n)
        assert g[0] == pytest.approx(analytic(x, n), rel=1e-6, abs=1e-9)


def newton_sqrt(a):
    x = a
    while abs(x * x - a) > 1e-12:
        x = 0.5 * (x + a / x)
    return x


def test_while_loop_newton_iteration():
    for a in (0.3, 2.0, 17.0):
        assert adjit.grad(newton_sqrt)(a) == pytest.approx(0.5 / math.sqrt(a), rel=1e-9)


def test_in_place_square_is_exact():
    u = np.array([0.3, 1.2, -0.7, 2.0])
    g = gradient(programs.inplace_square, 0)(u)
    expected = np.array([4 * u[0] ** 3, 2 * 4 * u[1] ** 3, 4 * u[2] ** 3, 0.0])
    np.testing.assert_allclose(g, expected, rtol=1e-14)


def swap_nonlinear(u, steps):
    a = u.copy()
    b = np.zeros_like(u)
    for t in range(steps):
        for i in range(a.shape[0]):
            b[i] = a[i] * a[i] * 0.5 + 0.1
        for i in range(a.shape[0]):
            a[i] = b[i]
    return a[0] + a[1]


def test_two_buffers_nonlinear_update():
    u = np.array([0.4, 0.9, 0.3])
    g = adjit.grad(swap_nonlinear)(u, 3)
    # analytic: a_{t+1} = a_t^2 / 2 + 0.1, so da3/da0 = a2 * a1 * a0
    expected = np.zeros(3)
    for k in range(2):
        a0 = u[k]
        a1 = a0 * a0 / 2 + 0.1
        a2 = a1 * a1 / 2 + 0.1
        expected[k] = a2 * a1 * a0
    np.testing.assert_allclose(g, expected, rtol=1e-14)


def double_buffer_by_rebinding(u, steps):
    a = u.copy()
    b = np.zeros_like(u)
    for t in range(steps):
        for i in range(a.shape[0]):
            b[i] = a[i] * a[i]
        a, b = b, a
    return a[0]


def test_reference_swap_double_buffering():
    """Once refused, now supported (normalize/swaps.py): a_T = u^(2^T), so d a_T[0] / d u[0]
    = 2^T u0^(2^T - 1), for even and odd numbers of swaps."""
    g = adjit.grad(double_buffer_by_rebinding)
    u = np.array([0.9, 1.1, 0.7])
    for steps in (0, 1, 2, 3):
        expected = np.zeros(3)
        expected[0] = 2 ** steps * u[0] ** (2 ** steps - 1)
        np.testing.assert_allclose(g(u, steps), expected, rtol=1e-14)


def unused_argument(x, y):
    return x * 2.0


def test_gradient_of_unused_argument_is_zero():
    gx, gy = adjit.grad(unused_argument, argnums=(0, 1))(1.0, 5.0)
    assert (gx, gy) == (2.0, 0.0)
    ga = adjit.grad(programs.sum_of_sin, argnums=0)
    assert ga(np.zeros(3)).tolist() == [0.0, 0.0, 0.0]


def constant_result(x):
    return 3.0


def test_constant_function_has_zero_gradient():
    assert adjit.grad(constant_result)(2.0) == 0.0
    _ = numba


DAMPING = -0.7
"""A negative module-level setting: adjit inlines it as a constant, and must spell
`DAMPING ** 2` as (-0.7) ** 2 = 0.49, not -0.7 ** 2 = -0.49."""


def _damped_energy(x, y):
    e = 0.0
    for i in range(x.shape[0]):
        e += DAMPING ** 2 * x[i] * x[i] + y * DAMPING ** 3
    return e


def test_negative_global_raised_to_a_power():
    x, y = np.array([0.5, -1.0, 2.0]), 1.5
    value, grads = adjit.value_and_grad(_damped_energy, argnums=(0, 1))(x, y)
    assert value == pytest.approx(_damped_energy(x, y), rel=1e-12)
    np.testing.assert_allclose(grads[0], 2 * 0.49 * x, rtol=1e-12)        # analytic
    assert grads[1] == pytest.approx(3 * (-0.343), rel=1e-12)
    assert_grad_matches_fd(adjit.grad(_damped_energy, argnums=(0, 1)), _damped_energy,
                           (x, y), (0, 1))


def prange_logistic_loss(w, X, y):
    n = X.shape[0]
    total = 0.0
    for i in numba.prange(n):
        z = 0.0
        for j in range(X.shape[1]):
            z += X[i, j] * w[j]
        total += np.log(1.0 + np.exp(-y[i] * z))
    return total / n


def test_prange_loop_is_differentiated_as_the_range_loop_it_means():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(12, 3))
    y = np.sign(X[:, 0] + 0.3)
    w = np.array([0.1, -0.2, 0.3])
    compiled = numba.njit(parallel=True)(prange_logistic_loss)
    value, g = adjit.value_and_grad(prange_logistic_loss)(w, X, y)
    assert value == pytest.approx(compiled(w, X, y), rel=1e-12)
    np.testing.assert_allclose(g, fd_grad(compiled, (w, X, y), 0), rtol=1e-6)


def iterations_as_written(x, X, w):
    """Loops over literal tuples and lists, over the rows of an array (a view: the write
    reaches X), enumerate (with a start) and zip, as numba users write them."""
    s = 0.0
    for k in (0, 2):
        s += x[k] * w
    for c in [0.5, 1.5]:
        s += c * x[1] ** 2
    for row in X:
        s += np.sum(row * row) * w
        row[0] = w * 2.0
    for i, v in enumerate(x):
        s += i * v
    for i, v in enumerate(x, 1):
        s += i * v * v
    for a, b in zip(x, X[0]):
        s += a * b
    for a, b in ((1.0, 2.0), (3.0, 4.0)):
        s += a * x[0] + b
    return s + np.sum(X * X)


def test_loops_over_tuples_rows_enumerate_and_zip():
    args = (np.array([0.5, -1.0, 2.0]), np.arange(6.0).reshape(2, 3) / 4.0, 0.7)
    compiled = numba.njit(iterations_as_written)
    run = lambda a, b, c: compiled(a.copy(), b.copy(), c)    # noqa: E731 (it writes X)
    value, grads = adjit.value_and_grad(iterations_as_written, argnums=(0, 1, 2))(
        args[0].copy(), args[1].copy(), args[2])
    assert value == pytest.approx(run(*args), rel=1e-13)
    for k in range(3):
        np.testing.assert_allclose(grads[k], fd_grad(run, args, k), rtol=1e-6, atol=1e-9)


def break_in_tuple_loop(x):
    s = 0.0
    for k in (0, 1, 2):
        if x[k] > 1.0:
            break
        s += x[k]
    return s


def break_in_a_tuple_of_values(x):
    s = 0.0
    for c in (x[0], 2.0 * x[1]):
        if c > 1.0:
            break
        s += c
    return s


def loop_over_a_number(x):
    s = 0.0
    for v in x[0]:
        s += v
    return s


def test_a_loop_over_a_tuple_of_numbers_may_break():
    x = np.array([0.5, 2.0, 1.0])
    np.testing.assert_allclose(adjit.grad(break_in_tuple_loop)(x),
                               fd_grad(numba.njit(break_in_tuple_loop), (x,), 0), atol=1e-9)
    assert adjit.grad(break_in_tuple_loop)(x)[0] == 1.0


STENCIL = (-1, 0, 1)
WEIGHTS = (0.25, 0.5, 0.25)


def smooth_with_module_tuples(x):
    """Stencil offsets and weights as module-level tuples, looped over as numba allows."""
    s = 0.0
    for i in range(1, x.size - 1):
        v = 0.0
        for k in STENCIL:
            v += WEIGHTS[k + 1] * x[i + k]
        s += v * v
    return s


def test_a_loop_over_a_module_level_tuple():
    x = np.array([0.5, -1.0, 2.0, 0.3, 1.1])
    value, g = adjit.value_and_grad(smooth_with_module_tuples)(x)
    compiled = numba.njit(smooth_with_module_tuples)
    assert value == pytest.approx(compiled(x), rel=1e-14)
    np.testing.assert_allclose(g, fd_grad(compiled, (x,), 0), rtol=1e-7, atol=1e-9)


def test_loops_over_tuples_of_values_with_exits_and_over_numbers_are_refused():
    with pytest.raises(adjit.AdjitError, match="break or continue in a loop over a literal"):
        adjit.grad(break_in_a_tuple_of_values)(np.array([0.5, 2.0, 1.0]))
    with pytest.raises(adjit.AdjitError, match="a for loop over something that is not an "
                                               "array"):
        adjit.grad(loop_over_a_number)(np.array([0.5, 2.0, 1.0]))


# array names a loop rebinds: updated in place when nothing else sees the old array --------
def rebound_state(x, W):
    h = x
    for t in range(3):
        h = np.tanh(W @ h + 0.1)
    y = x.copy()
    for t in range(2):
        y = y + 0.5 * np.roll(y, 1)
    return np.sum(h * h) + np.sum(y * x)


def test_array_names_rebound_in_loops_match_numba_and_finite_differences():
    x = np.array([0.5, -1.0, 2.0])
    W = np.arange(9.0).reshape(3, 3) / 10.0
    compiled = numba.njit(rebound_state)
    value, (gx, gW) = adjit.value_and_grad(rebound_state, argnums=(0, 1))(x, W)
    assert value == pytest.approx(compiled(x, W), rel=1e-13)
    np.testing.assert_allclose(gx, fd_grad(compiled, (x, W), 0), rtol=1e-6)
    np.testing.assert_allclose(gW, fd_grad(compiled, (x, W), 1), rtol=1e-6)
    np.testing.assert_array_equal(x, [0.5, -1.0, 2.0])      # the argument is not written


def view_made_each_iteration(x):
    h = x.copy()
    s = 0.0
    for t in range(3):
        h = np.tanh(h)
        v = h[0:2]
        s += np.sum(v)
    return s


def shrinking_rebinding(x):
    y = x.copy()
    for t in range(2):
        y = y[1:] * 2.0
    return np.sum(y)


def shrinking_in_a_helper(x):
    return 3.0 * shrinking_rebinding(x)


def test_rebinding_that_an_update_in_place_would_change_is_refused():
    x = np.array([0.5, -1.0, 2.0, 0.3])
    with pytest.raises(adjit.AdjitError, match="a view of an array that the loop rebinds"):
        adjit.grad(view_made_each_iteration)(x)
    line = shrinking_rebinding.__code__.co_firstlineno + 3     # y = y[1:] * 2.0
    for f in (shrinking_rebinding, shrinking_in_a_helper):
        # the refusal, raised as the gradient runs, names the rebinding's own line (in the
        # helper where a helper rebinds), as the refusals found as it builds do
        with pytest.raises(adjit.AdjitError, match=rf"in function 'shrinking_rebinding' "
                           rf"\(.*test_constructs.py, line {line}\): 'y' rebound in a loop "
                           "changed its shape"):
            adjit.grad(f)(x)


# helpers that return several values -------------------------------------------------------
@numba.njit
def verlet_step(x, v, k, dt):
    a = -k * x
    v_half = v + 0.5 * dt * a
    x_new = x + dt * v_half
    return x_new, v_half + 0.5 * dt * (-k * x_new)


@numba.njit
def energy_and_count(x):
    return 0.5 * np.sum(x * x), x.shape[0]


def verlet_with_tuple_helper(x0, v0, k):
    x, v = x0, v0
    for t in range(4):
        x, v = verlet_step(x, v, k, 0.1)
    e, n = energy_and_count(x)
    return e / n + np.sum(v * v)


def test_helpers_returning_tuples_of_arrays_and_numbers():
    args = (np.array([1.0, 0.5, -0.3]), np.array([0.2, -0.1, 0.4]), 1.3)
    compiled = numba.njit(verlet_with_tuple_helper)
    value, grads = adjit.value_and_grad(verlet_with_tuple_helper, argnums=(0, 1, 2))(*args)
    assert value == pytest.approx(compiled(*args), rel=1e-13)
    for k in range(3):
        np.testing.assert_allclose(grads[k], fd_grad(compiled, args, k), rtol=1e-6)


def returns_a_pair(x):
    return np.sum(x), np.sum(x * x)


def test_the_differentiated_function_returning_a_tuple_is_refused():
    with pytest.raises(adjit.AdjitError, match="returning a tuple from the differentiated "
                                               "function"):
        adjit.grad(returns_a_pair)(np.ones(3))


NOISE_SCALE = 1.5       # module-level settings a simulation reads in expressions
VERBOSE_CHECKS = False


def settings_in_expressions(x, fs):
    np.random.seed(3)
    # the branch not taken draws and allocates: it is not code, in either sweep
    v = (np.sum(np.random.standard_exponential(4) * fs) + x[0]) if NOISE_SCALE <= -0.3 \
        else math.fabs(x[1] * fs)
    checked = VERBOSE_CHECKS and np.sum(np.random.standard_exponential(3)) > 1.0
    use_x1 = (NOISE_SCALE > 1.0 and x[2] > 0.0) or VERBOSE_CHECKS
    return v + np.random.random() * x[0] + (1.0 if checked else 0.0) + \
        (2.0 * x[1] if use_x1 else x[0])


def test_conditional_expressions_and_and_or_of_module_settings_keep_the_value_taken():
    # numba prunes a branch whose test is made of constants: a draw and an array defined
    # only there must not be code in the gradient either (found by the program fuzzer:
    # numba could not compile the backward sweep's read of the pruned array)
    args = (np.array([0.5, -0.3, 0.2]), 0.7)
    g = check_value_and_grad(settings_in_expressions, args, (0, 1))
    np.random.seed(3)
    r = np.random.random()
    # d/dx of r x0 + |x1 fs| + 2 x1 (x1 fs < 0), d/dfs of |x1 fs|
    np.testing.assert_allclose(g[0], [r, 2.0 - 0.7, 0.0], rtol=1e-12)
    assert g[1] == pytest.approx(0.3, rel=1e-12)
    source = adjit.show(settings_in_expressions, "normalized", *args)
    code = [line for line in source.splitlines() if not line.lstrip().startswith("#")]
    assert not any("standard_exponential" in line for line in code)


def counted_pairs(x, y):
    s = 0.0
    for k, (u, v) in enumerate(zip(x, y), 1):
        s += k * u * math.sin(v)
    return s


def test_enumerate_of_zip_counts_zips_loop():
    args = (np.array([0.5, -1.0, 2.0]), np.array([0.3, 0.2, -0.7, 1.1]))
    g = check_value_and_grad(counted_pairs, args, (0, 1))
    np.testing.assert_allclose(g[0], [1.0 * math.sin(0.3), 2.0 * math.sin(0.2),
                                      3.0 * math.sin(-0.7)], rtol=1e-12)


def weighted_or_plain(x, w=None):
    s = 0.0
    for i in range(x.shape[0]):
        if w is not None:
            s += w[i] * x[i] ** 2
        else:
            s += x[i] ** 2
    return s


def early_default(x, w=None):
    if w is None:
        return np.sum(x ** 2)
    return np.sum(w * x ** 2)


@pytest.mark.parametrize("loss", [weighted_or_plain, early_default])
def test_optional_arguments_of_the_differentiated_function_prune_as_numba_does(loss):
    """`def f(x, w=None)` with `if w is None:` / `is not None` tests: called with w left
    out, passed as None or given, as numba compiles each (the branch that cannot run is not
    code)."""
    x = np.array([0.3, 1.2, -0.7])
    w = np.array([2.0, 0.5, 1.5])
    np.testing.assert_allclose(adjit.grad(loss)(x), 2.0 * x, rtol=1e-15)
    np.testing.assert_allclose(adjit.grad(loss)(x, None), 2.0 * x, rtol=1e-15)
    value, (gx, gw) = adjit.value_and_grad(loss, argnums=(0, 1))(x, w)
    assert value == pytest.approx(numba.njit(loss)(x, w), rel=1e-15)
    np.testing.assert_allclose(gx, 2.0 * w * x, rtol=1e-15)
    np.testing.assert_allclose(gw, x ** 2, rtol=1e-15)
    assert adjit.jvp(loss)(x, None, np.ones(3))[1] == pytest.approx(np.sum(2.0 * x))


def reduce_by(x, mode):
    if mode == "sum":
        return np.sum(x * x)
    elif mode != "max":
        return np.mean(x ** 3)
    return np.max(x * x)


@numba.njit
def settled_step(y, h, method):
    if method == "euler":
        return y - h * y ** 3
    return y - h * (y - 0.5 * h * y ** 3) ** 3


def integrate_with(y0, h, n, method):
    y = y0.copy()
    for i in range(n):
        y = settled_step(y, h, method)
    return np.sum(y)


def test_string_settings_choose_the_branch_as_numba_runs_it():
    """A string argument compared with constants (`mode == "sum"`, in f or in an @njit
    helper it is passed to): the gradient is specialized for each value it is called
    with, and only that branch is code."""
    x = np.array([0.3, 1.2, -0.7])
    grad = adjit.grad(reduce_by)
    compiled = numba.njit(reduce_by)
    for mode in ("sum", "max", "mean"):
        np.testing.assert_allclose(grad(x, mode), fd_grad(compiled, (x, mode), 0), rtol=1e-6,
                                   atol=1e-9)
    np.testing.assert_allclose(grad(x, "sum"), 2.0 * x, rtol=1e-15)
    step = adjit.value_and_grad(integrate_with, argnums=(0, 1))
    for method in ("euler", "midpoint", "euler"):
        args = (x, 0.1, 5, method)
        value, (gy, gh) = step(*args)
        assert value == pytest.approx(numba.njit(integrate_with)(*args), rel=1e-14)
        np.testing.assert_allclose(gy, fd_grad(numba.njit(integrate_with), args, 0), rtol=1e-6)
        assert gh == pytest.approx(fd_grad(numba.njit(integrate_with), args, 1), rel=1e-6)
    assert adjit.jvp(reduce_by)(x, "max", np.ones(3))[1] == pytest.approx(2.0 * 1.2)


def test_a_string_setting_through_compiled_code_is_refused_clearly():
    """A hessian's loop calls the hvp from compiled code, where numba gives the string's
    type but not its value: the branch cannot be chosen, and the error says so."""
    x = np.array([0.3, 1.2, -0.7])
    np.testing.assert_allclose(adjit.hvp(reduce_by)(x, "sum", np.ones(3)), 2.0 * np.ones(3))
    with pytest.raises(adjit.AdjitError, match="a string setting whose value is not known"):
        adjit.hessian(reduce_by)(x, "sum")


class _Mode(enum.IntEnum):
    """A mode flag as numba code keeps one (pandas' window kernels, a solver's state)."""
    SUM = 0
    SQUARES = 1


_DEFAULT_MODE = _Mode.SQUARES


@numba.njit
def _reduce_by(x, mode):
    total = 0.0
    state = _Mode.SUM
    for i in range(x.shape[0]):
        if mode == _Mode.SUM or state == _Mode.SQUARES:
            total += x[i]
        else:
            total += x[i] * x[i]
        state = _Mode.SQUARES if state == _Mode.SUM else _Mode.SUM
    return total


def _by_modes(x):
    return _reduce_by(x, _Mode.SUM) + 2.0 * _reduce_by(x, _DEFAULT_MODE)


def test_int_enum_members_are_their_integers():
    """`_Mode.SUM` (an IntEnum's member, as numba compiles it: its integer), passed to a
    helper, compared, assigned and held in a module-level name."""
    x = np.array([0.5, 1.2, -0.3, 0.8])
    value, g = adjit.value_and_grad(_by_modes)(x)
    assert value == numba.njit(_by_modes)(x)
    np.testing.assert_allclose(g, [1.0 + 4.0 * x[0], 3.0, 1.0 + 4.0 * x[2], 3.0], rtol=1e-15)
    np.testing.assert_allclose(g, fd_grad(numba.njit(_by_modes), [x], 0), atol=1e-7)


@numba.njit
def _weighted(x, mode):
    # (the member's number read as FinancePy reads its option types: `.value`)
    if mode.value == _Mode.SUM.value:
        return np.sum(x)
    return np.sum(x * x)


def _by_mode_argument(x, mode):
    return _weighted(x, mode) + 0.5 * x[0] * mode.value + (mode == _Mode.SQUARES) * x[1]


def test_an_int_enum_argument_is_its_integer():
    x = np.array([0.5, 1.2, -0.3, 0.8])
    g = adjit.grad(_by_mode_argument)
    for mode, want in ((_Mode.SUM, np.ones(4)), (_Mode.SQUARES, 2.0 * x)):
        want = want + np.array([0.5 * mode.value, mode.value, 0.0, 0.0])
        np.testing.assert_allclose(g(x, mode), want, rtol=1e-15)
        np.testing.assert_allclose(g(x, mode), fd_grad(numba.njit(_by_mode_argument),
                                                       [x, mode], 0), atol=1e-7)

    @numba.njit
    def from_numba(x):
        return g(x, _Mode.SQUARES)
    np.testing.assert_allclose(from_numba(x), g(x, _Mode.SQUARES), rtol=1e-15)
    np.testing.assert_allclose(adjit.hessian(_by_mode_argument)(x, _Mode.SQUARES),
                               2.0 * np.eye(4), atol=1e-15)
    assert adjit.jvp(_by_mode_argument)(x, _Mode.SQUARES, np.ones(4))[1] == \
        pytest.approx(2.0 * np.sum(x) + 1.5, rel=1e-15)


def _by_settings(x, settings):
    """A mode and a scale passed together, as a solver's options."""
    mode, (scale, offset) = settings
    return _reduce_by(x, mode) * scale + offset * (mode == _Mode.SQUARES) * x[0]


def test_int_enum_members_inside_tuple_arguments_are_their_integers():
    x = np.array([0.5, 1.2, -0.3, 0.8])
    g = adjit.value_and_grad(_by_settings, argnums=(0, 1))
    for mode in _Mode:
        settings = (mode, (1.5, 2.0))
        value, (gx, (gmode, (gscale, goffset))) = g(x, settings)
        assert value == numba.njit(_by_settings)(x, settings)
        np.testing.assert_allclose(gx, fd_grad(numba.njit(_by_settings), [x, settings], 0),
                                   atol=1e-7)
        assert gmode == 0 and gscale == pytest.approx(_reduce_by(x, mode), rel=1e-15)
        assert goffset == (x[0] if mode == _Mode.SQUARES else 0.0)
    assert isinstance(settings[0], _Mode)      # the caller's tuple is left as it was


def _rebound_mode(x, mode):
    mode = 1
    return np.sum(x) * mode.value


def test_the_value_of_an_int_enum_argument_bound_again_is_refused():
    # (numba refuses it too: an int has no `.value`)
    with pytest.raises(adjit.AdjitError, match="the attribute `.value`"):
        adjit.grad(_rebound_mode)(np.ones(3), _Mode.SUM)


class OptionTypes(enum.Enum):
    """A plain Enum as FinancePy's (its members' values are ints)."""
    EUROPEAN_CALL = 1
    EUROPEAN_PUT = 2


class _Scale(enum.Enum):
    """A plain Enum whose members hold floats."""
    SMALL = 0.5
    LARGE = 2.0


@numba.njit
def _payoff(s, k, option_type):
    if option_type == OptionTypes.EUROPEAN_CALL:
        return s * s - k
    elif option_type == OptionTypes.EUROPEAN_PUT:
        return k * s
    raise ValueError("unknown option type")


@numba.njit
def _payoff_by_value(s, k, option_type, scale):
    if option_type.value == OptionTypes.EUROPEAN_CALL.value:
        v = s * s - k
    else:
        v = k * s
    return v * scale.value


@numba.njit
def _both_payoffs(s, k):
    return _payoff(s, k, OptionTypes.EUROPEAN_CALL) + \
        3.0 * _payoff_by_value(s, k, OptionTypes.EUROPEAN_PUT, _Scale.LARGE)


def test_plain_enum_members_as_arguments_and_constants():
    """Members of a plain enum.Enum (not an IntEnum) passed in, compared with the class's
    members, read by `.value`, and named in the code, as numba compiles them."""
    s, k = 1.3, 0.7
    for opt in OptionTypes:
        value, g = adjit.value_and_grad(_payoff, argnums=(0, 1))(s, k, opt)
        assert value == _payoff(s, k, opt)
        want = (2.0 * s, -1.0) if opt is OptionTypes.EUROPEAN_CALL else (k, s)
        np.testing.assert_allclose(g, want, rtol=1e-15)
        for scale in _Scale:
            g = adjit.grad(_payoff_by_value, argnums=(0, 1))(s, k, opt, scale)
            np.testing.assert_allclose(g, np.array(want) * scale.value, rtol=1e-15)
    g = adjit.grad(_both_payoffs, argnums=(0, 1))(s, k)
    np.testing.assert_allclose(g, [2.0 * s + 6.0 * k, -1.0 + 6.0 * s], rtol=1e-15)
    np.testing.assert_allclose(g, [fd_grad(_both_payoffs, [s, k], j) for j in (0, 1)],
                               atol=1e-7)


def test_plain_enum_members_from_njit_code():
    """The derivative called from @njit code with a member: numba passes the member, the
    derivative reads its value."""
    g = adjit.grad(_payoff, argnums=(0, 1))

    @numba.njit
    def caller(s, k):
        a = g(s, k, OptionTypes.EUROPEAN_CALL)
        b = g(s, k, OptionTypes.EUROPEAN_PUT)
        return a[0] + 10.0 * b[0]
    assert caller(1.3, 0.7) == pytest.approx(2.0 * 1.3 + 10.0 * 0.7, rel=1e-15)


class _Named(enum.Enum):
    SUM = "sum"


def _member_as_a_number(s, option_type):
    return s * s if option_type == 1 else s


def _members_of_two_classes(s, option_type):
    return s * s if option_type == _Scale.SMALL else s


def _member_times_a_number(s, option_type):
    return s * option_type


def _members_ordered(s, option_type):
    return s if option_type < OptionTypes.EUROPEAN_PUT else 2.0 * s


_DEFAULT_TYPE = OptionTypes.EUROPEAN_PUT


def _module_level_member(s, k, option_type):
    """A member held in a module-level name, compared and passed to a helper."""
    if option_type == _DEFAULT_TYPE:
        return _payoff(s, k, _DEFAULT_TYPE)
    return _payoff(s, k, option_type) * 2.0


def test_plain_enum_members_held_in_module_level_names():
    s, k = 1.3, 0.7
    assert adjit.grad(_module_level_member)(s, k, OptionTypes.EUROPEAN_PUT) == \
        pytest.approx(k, rel=1e-15)
    assert adjit.grad(_module_level_member)(s, k, OptionTypes.EUROPEAN_CALL) == \
        pytest.approx(4.0 * s, rel=1e-15)


def _member_assigned_again(s, option_type):
    option_type = option_type.value
    return s * option_type


@pytest.mark.parametrize("f, words", [
    (_member_assigned_again, "a member of the enum OptionTypes, assigned again"),
    (_member_as_a_number, "compared with something that is not a member"),
    (_members_of_two_classes, "compared with a member of another class"),
    (_member_times_a_number, "used as a value"),
    (_members_ordered, "compared with an operator other than == or !="),
])
def test_plain_enum_members_used_as_numbers_are_refused(f, words):
    """What numba refuses of a member (and Python does not make a number: a member never
    equals its value, nor a member of another class) is refused, not read as its value."""
    with pytest.raises(adjit.AdjitError, match=words):
        adjit.grad(f)(1.3, OptionTypes.EUROPEAN_CALL)


def test_second_derivatives_of_plain_enum_members():
    """Members named in the code work in second derivatives; a member passed in is refused
    there, by name."""
    s, k = 1.3, 0.7
    assert adjit.hessian(_both_payoffs, argnums=0)(s, k) == pytest.approx(2.0, rel=1e-15)
    with pytest.raises(adjit.AdjitError, match="hessian of a function given a member of a "
                                               "plain enum.Enum as an argument"):
        adjit.hessian(_payoff, argnums=0)(s, k, OptionTypes.EUROPEAN_CALL)


def test_plain_enum_members_refused_where_they_have_no_number():
    with pytest.raises(adjit.AdjitError,
                       match="member of the enum OptionTypes, which has no derivative"):
        adjit.grad(_payoff, argnums=(0, 2))(1.3, 0.7, OptionTypes.EUROPEAN_CALL)
    with pytest.raises(adjit.AdjitError, match="whose value 'sum' is not a number"):
        adjit.grad(_payoff, argnums=(0, 1))(1.3, 0.7, _Named.SUM)


def _argument_overwritten_in_a_loop(z):
    v = math.erfc(z) + math.sin(z)
    for k in range(4):
        z = 0.3 + 0.0 * k
    return v * v + z


def test_an_argument_assigned_in_a_loop_keeps_its_value_for_earlier_adjoints():
    """The adjoint of `math.erfc(z)` before the loop reads z as the argument was: the loop's
    assignments of z are recorded before they overwrite it (the fuzzer found the gradient at
    0.3, from a loop that recorded z after its assignment as an iteration's own value)."""
    z = 0.1
    g = adjit.grad(_argument_overwritten_in_a_loop)(z)
    v = math.erfc(z) + math.sin(z)
    assert g == pytest.approx(2.0 * v * (-2.0 / math.sqrt(math.pi) * math.exp(-z * z) +
                                         math.cos(z)), rel=1e-14)
    assert g == pytest.approx(fd_grad(numba.njit(_argument_overwritten_in_a_loop), [z], 0),
                              rel=1e-7)


@numba.njit
def _returns_early_unless(x, j):
    r = x * 3.0
    if x >= 10.0:
        if j != 2:
            return r
    return r * x


@numba.njit
def _calls_with_a_constant(x):
    return _returns_early_unless(x, 0)


@numba.njit
def _returns_in_a_loop_unless(x, n, j):
    s = 0.0
    for i in range(n):
        s += x * i
        if j == 0:
            if s > 100.0:
                return s
    return s * x


@numba.njit
def _loop_with_a_constant(x, n):
    return _returns_in_a_loop_unless(x, n, 0)


@pytest.mark.parametrize("f, args", [(_calls_with_a_constant, (0.5,)),
                                     (_calls_with_a_constant, (12.0,)),
                                     (_loop_with_a_constant, (0.5, 4)),
                                     (_loop_with_a_constant, (30.0, 4))])
def test_a_return_decided_by_a_constant_argument_ends_only_its_own_block(f, args):
    """A helper called with a constant: its `if j != 2: return r`, decided, ends the block
    it is in (the `if x >= 10.0:` body); the statements after that `if` (the final return)
    were dropped with it, refusing the helper as having a path without a return (FinancePy's
    erf_cody -> calerf(x, 0))."""
    check_value_and_grad(f, args, 0, value_rtol=1e-15)


class _OptionTypes(enum.Enum):
    """An option's kind as a finance library keeps it (FinancePy's OptionTypes)."""
    EUROPEAN_CALL = 1
    EUROPEAN_PUT = 2


@numba.njit
def _payoff_by_kind(x, kind):
    if kind == _OptionTypes.EUROPEAN_CALL.value:
        return max(x - 1.0, 0.0) + x * x
    return x


@numba.njit
def _grid_by_keyword(x):
    a = np.zeros(shape=(3, 3))
    a[0, 0] = x
    a[1, :] = np.ones(shape=3) * x
    b = np.full(shape=3, fill_value=2.0) + np.full_like(a[0], fill_value=x)
    return np.sum(a * x) + np.sum(b * x)


@pytest.mark.parametrize("f, args", [(_payoff_by_kind, (1.5, 1)), (_payoff_by_kind, (1.5, 2)),
                                     (_grid_by_keyword, (1.5,))])
def test_enum_values_and_shapes_by_keyword_as_numba_compiles_them(f, args):
    """`OptionTypes.EUROPEAN_CALL.value` (a plain Enum member's value: numba's constant) and
    `np.zeros(shape=(3, 3))` were refused (FinancePy's bs_value, corr_matrix_generator)."""
    check_value_and_grad(f, args, 0, value_rtol=1e-15)


_CHECKED = True


@numba.njit
def _scaled_unless_none(x, w=None):
    if _CHECKED:
        if w is None:
            return x * x
    return x * w


def _both_ways(x):
    return _scaled_unless_none(x) + _scaled_unless_none(x, 2.0)


def test_a_decided_return_inside_a_module_flag_ends_the_helper_there():
    """`if w is None: return ...` (decided by the call) inside `if _CHECKED:` (a module
    flag): what follows never runs for that call; it was typed with w None and refused."""
    g = check_value_and_grad(_both_ways, (1.5,), 0, value_rtol=1e-15)
    assert g == pytest.approx(2.0 * 1.5 + 2.0, rel=1e-15)


# a tuple of numbers stored into a row or a slice, as numba stores a sequence (PyTransit's
# Taylor orbit: `vajs[j] = vajs_from_paiew(...)`, a helper returning nine numbers)
@numba.njit
def _polar(a, t):
    return a * math.cos(t), a * math.sin(t), a * t


def rows_from_a_helper(x, ts):
    out = np.zeros((ts.shape[0], 3))
    for j in range(ts.shape[0]):
        out[j] = _polar(x, ts[j])
    return np.sum(out ** 2)


def tuple_into_slices(x):
    out = np.zeros((2, 3))
    out[0, :] = (x, 2.0 * x, x * x)
    out[1, 1:] = x * 3.0, 1.0
    idx = np.zeros(2, np.int64)
    idx[:] = (2, 0)
    return np.sum(out * out) + out[0, idx[0]]


@pytest.mark.parametrize("f, args", [(rows_from_a_helper, (1.3, np.linspace(0.0, 1.0, 5))),
                                     (tuple_into_slices, (1.3,))])
def test_a_tuple_stored_into_a_row_matches_numba_and_finite_differences(f, args):
    check_value_and_grad(f, args, 0)


def _row_of_another_length(x, v):
    out = np.zeros((2, 3))
    out[0] = v * x
    return np.sum(out)


def _tuple_of_another_length(x):
    out = np.zeros((2, 3))
    out[0] = (x, 1.0)
    return np.sum(out)


def _tuple_of_one_into_three(x):
    out = np.zeros(3)
    out[:] = (x * x,)       # numba stores a sequence of its own length only
    return np.sum(out)


@pytest.mark.parametrize("f, args", [(_row_of_another_length, (1.3, np.ones(2))),
                                     (_tuple_of_another_length, (1.3,)),
                                     (_tuple_of_one_into_three, (1.3,))])
def test_a_value_that_does_not_broadcast_to_the_target_raises_as_numba_does(f, args):
    # a length-2 row stored into a length-3 one was read with a stride of 0 (x three times)
    with pytest.raises(ValueError, match="cannot assign slice"):
        numba.njit(f)(*args)
    with pytest.raises(ValueError, match="cannot assign slice"):
        adjit.grad(f)(*args)


def test_a_value_of_length_one_broadcasts_to_the_target():
    check_value_and_grad(_row_of_another_length, (1.3, np.full(1, 0.5)), (0, 1))
    assert adjit.grad(_row_of_another_length)(1.3, np.full(1, 0.5)) == pytest.approx(1.5)


GLOBAL_GRID = np.zeros(4)


def _writes_a_global(x):
    GLOBAL_GRID[0] = x[0]
    return GLOBAL_GRID[0] * x[1]


def _writes_a_global_view(x):
    v = GLOBAL_GRID[1:]
    v += x[0]
    return GLOBAL_GRID[1] * x[1]


@pytest.mark.parametrize("f", [_writes_a_global, _writes_a_global_view])
def test_a_write_into_a_module_level_array_is_refused_by_name(f):
    # (an internal error before: the adjoint of a constant does not exist)
    with pytest.raises(adjit.AdjitError, match="writing into the module-level array "
                                               "'GLOBAL_GRID'"):
        adjit.grad(f)(np.array([0.3, -1.2]))
