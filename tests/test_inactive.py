"""Calls with no derivative, called as they are: integer results (np.argsort, np.argmax,
np.argmin) and random draws (np.random.*, seeded by np.random.seed as a statement). The
oracles are numba's own generator (the same draws, compiled by numba from the user's code)
and central finite differences of the numba-compiled function."""
import numba
from numba.extending import overload
import numpy as np
import pytest

import adjit
from adjit import AdjitError

from fd import fd_grad

X = np.linspace(0.1, 1.0, 5)


def noisy(x):
    np.random.seed(3)
    r = np.random.normal(0.0, 1.0, x.shape[0])
    return np.sum(x * r) + np.sum(x ** 2)


@numba.njit
def draws(n):
    np.random.seed(3)
    return np.random.normal(0.0, 1.0, n)


def test_random_draw_is_a_constant():
    np.testing.assert_allclose(adjit.grad(noisy)(X), draws(5) + 2 * X, rtol=1e-14)


def test_random_draw_in_forward_mode():
    v = np.linspace(-1.0, 1.0, 5)
    value, tangent = adjit.jvp(noisy)(X, v)
    assert value == pytest.approx(numba.njit(noisy)(X), rel=1e-14)
    assert tangent == pytest.approx(np.dot(draws(5) + 2 * X, v), rel=1e-12)


def noise_every_step(x, scale):
    np.random.seed(1)
    s = 0.0
    for k in range(3):
        noise = np.random.uniform(-1.0, 1.0, size=x.shape[0])
        s += np.sum(x * noise * scale) ** 2 + np.random.random() * scale
    return s


def test_draws_inside_a_loop_match_finite_differences():
    primal = numba.njit(noise_every_step)
    g = adjit.grad(noise_every_step, argnums=(0, 1))(X, 0.7)
    for k in (0, 1):
        np.testing.assert_allclose(g[k], fd_grad(primal, (X, 0.7), k), rtol=1e-6, atol=1e-9)


def sorted_weights(x):
    order = np.argsort(x)
    top = np.argmax(x)
    low = np.argmin(x)
    return np.sum(x[order] * np.arange(x.shape[0])) + x[top] ** 2 - 3.0 * x[low]


def test_integer_results_index_arrays():
    x = np.array([3.0, 1.0, 2.0])
    # order = [1, 2, 0]: weights 0, 1, 2 on x1, x2, x0; top = 0; low = 1
    np.testing.assert_allclose(adjit.grad(sorted_weights)(x), [2.0 + 6.0, -3.0, 1.0],
                               rtol=1e-14)
    np.testing.assert_allclose(adjit.grad(sorted_weights)(x), fd_grad(sorted_weights, (x,), 0),
                               rtol=1e-7)


def sort_by_stopped(x):
    return np.sum(x[np.argsort(adjit.stop_gradient(x))][:2] ** 2)


def test_argsort_of_a_stopped_value():
    x = np.array([0.5, -2.0, 0.25, 3.0])
    # the two smallest: x1 = -2 and x2 = 0.25
    np.testing.assert_allclose(adjit.grad(sort_by_stopped)(x), [0.0, -4.0, 0.5, 0.0],
                               rtol=1e-14)


def seed_as_value(x):
    s = np.random.seed(0)
    return x * 2.0 + s


def wrong_keyword(x):
    return x * np.random.normal(0.0, 1.0, shape=3)[0]


@pytest.mark.parametrize("f, match", [
    (seed_as_value, "np.random.seed` used as a value"),
    (wrong_keyword, "the keyword `shape`"),
], ids=["seed-as-value", "wrong-keyword"])
def test_misuse_is_refused(f, match):
    with pytest.raises(AdjitError, match=match):
        adjit.grad(f)(1.0)


def scalar_draw(x):
    return x * np.random.random()


def test_cuda_code_refuses_numpy_draws():
    with pytest.raises(AdjitError, match="np.random.random` in CUDA code"):
        adjit.grad(scalar_draw, target="cuda")(1.0)


# calls adjit has no entry for, called as they are where no derivative flows through them --
def binned_loss(x, data, edges):
    """Interpolation weights from searchsorted/digitize on data, a histogram of the data, the
    distinct values: every one a constant for differentiation."""
    i = np.searchsorted(edges, 0.45)
    j = np.searchsorted(edges, 0.45, side="right")
    b = np.digitize(data, edges)
    counts, bounds = np.histogram(data, bins=3)
    u = np.unique(np.round(data * 4.0))
    c = np.cumprod(data)
    return (x[i] * x[j] + np.sum(x[b] ** 2) + np.sum(x[:3] * counts) + np.sum(bounds) * x[0]
            + np.sum(x[:u.shape[0]]) + np.sum(c * x))


DATA = np.array([0.05, 0.3, 0.62, 0.41, 0.88])
EDGES = np.array([0.0, 0.25, 0.5, 0.75, 1.0])


def test_calls_with_no_rule_on_data_match_numba_and_finite_differences():
    compiled = numba.njit(binned_loss)
    value, g = adjit.value_and_grad(binned_loss)(X, DATA, EDGES)
    assert value == pytest.approx(compiled(X, DATA, EDGES), rel=1e-14)
    np.testing.assert_allclose(g, fd_grad(compiled, (X, DATA, EDGES), 0), rtol=1e-7)
    v = np.linspace(-1.0, 1.0, 5)
    assert adjit.jvp(binned_loss)(X, DATA, EDGES, v)[1] == pytest.approx(np.dot(g, v),
                                                                        rel=1e-12)


def integer_results_of_varied_values(x):
    """Integer-valued results of varied values are piecewise constant: no derivative flows
    (np.round and np.ceil have derivative zero, as in JAX)."""
    k = np.searchsorted(np.sort(x), 0.5)
    return x[k] * 3.0 + np.sum(np.round(x * 3.0) * x) + np.sum(np.ceil(x) + np.trunc(x))


def test_integer_results_of_varied_values_match_finite_differences():
    compiled = numba.njit(integer_results_of_varied_values)
    x = np.array([0.31, 0.72, 0.14, 0.93, 0.58])
    g = adjit.grad(integer_results_of_varied_values)(x)
    np.testing.assert_allclose(g, fd_grad(compiled, (x,), 0, h=1e-7), rtol=1e-7)


def shuffled_minibatch_sgd(w, X, y, epochs):
    n = X.shape[0]
    idx = np.arange(n)
    np.random.seed(0)
    loss = 0.0
    for e in range(epochs):
        np.random.shuffle(idx)
        for k in range(0, n, 2):
            i = idx[k]
            r = np.dot(X[i], w) - y[i]
            loss += r * r
    return loss


def test_shuffling_an_index_array():
    rng = np.random.default_rng(0)
    X, y = rng.random((6, 3)), rng.random(6)
    w = np.array([0.2, -0.1, 0.4])
    compiled = numba.njit(shuffled_minibatch_sgd)
    value, g = adjit.value_and_grad(shuffled_minibatch_sgd)(w, X, y, 3)
    assert value == pytest.approx(compiled(w, X, y, 3), rel=1e-14)
    np.testing.assert_allclose(g, fd_grad(compiled, (w, X, y, 3), 0), rtol=1e-7)


def through_unique(x):
    return np.sum(np.unique(x))


def shuffle_floats(x):
    y = x * 2.0
    np.random.shuffle(y)
    return np.sum(y * np.arange(5.0))


def intersect_of_argument(x):
    return np.sum(np.intersect1d(x, x[:3])) * 2.0


@pytest.mark.parametrize("f, match", [
    (through_unique, "a derivative would have to flow through `np.unique` \\(not "
                     "differentiated: which elements it keeps depends on equal values: gather "
                     "with indices instead \\(np.argsort, x\\[idx\\]\\)\\), which has no "
                     "derivative rule"),
    (intersect_of_argument, "flow through `np.intersect1d`"),
    (shuffle_floats, "a call to `np.random.shuffle` for its effect, with the float array `y`"),
])
@pytest.mark.parametrize("mode", ["grad", "jvp"])
def test_a_derivative_through_a_call_with_no_rule_is_refused(f, match, mode):
    with pytest.raises(AdjitError, match=match):
        if mode == "grad":
            adjit.grad(f)(X)
        else:
            adjit.jvp(f)(X, X)


def test_stopped_arguments_make_a_call_with_no_rule_a_constant():
    def f(x):
        return np.sum(np.unique(adjit.stop_gradient(x)) * x)
    np.testing.assert_allclose(adjit.grad(f)(X), np.unique(X), rtol=1e-15)


def view_of_data(x, data):
    v = np.asfortranarray(data)
    return np.sum(x * v)


def test_a_call_with_no_rule_that_may_return_a_view_is_refused():
    with pytest.raises(AdjitError, match="may return a view of its argument"):
        adjit.grad(view_of_data)(X, X)


def scaled_by_roots(x, c):
    """numba's np.roots of a real array: its real roots, or a ValueError where one would be
    complex (so a trial call on [1, 2, 3] fails, and on [-1, 0, 1] does not)."""
    return x * np.sum(np.roots(c))


def test_roots_of_coefficients_held_constant():
    c = np.array([1.0, -3.0, 2.0])          # (x - 1)(x - 2)
    assert adjit.grad(scaled_by_roots)(2.0, c) == pytest.approx(3.0, rel=1e-15)
    assert adjit.grad(scaled_by_roots)(2.0, c) == pytest.approx(
        fd_grad(numba.njit(scaled_by_roots), (2.0, c), 0), rel=1e-8)
    with pytest.raises(AdjitError, match="flow through `np.roots`, which has no derivative"):
        adjit.grad(scaled_by_roots, argnums=1)(2.0, c)
    with pytest.raises(ValueError, match="domain change"):     # numba's own error, as in f
        adjit.grad(scaled_by_roots)(2.0, np.array([1.0, 2.0, 3.0]))


def _checked(a):
    pass        # numba compiles calls to it from _checked_impl below


@overload(_checked)
def _checked_impl(a):
    def impl(a):
        if a[0] < 100.0:
            raise ValueError("expects calibrated readings")
        return a + 0.0
    return impl


def test_a_call_that_fails_on_every_trial_array_is_refused_saying_so():
    """adjit tries a call with no rule on small arrays to see whether its result is a view;
    where it fails on all of them, the refusal says that, not that it is a view."""
    def f(x, readings):
        return x * np.sum(_checked(readings))
    with pytest.raises(AdjitError, match=r"could not tell whether its result is a view .*"
                       r"\(ValueError: expects calibrated readings\)"):
        adjit.grad(f)(2.0, np.array([150.0, 160.0]))


def selected_by_condition(x):
    """np.where(cond) and np.nonzero: index arrays from a tuple, indexed or unpacked."""
    idx = np.where(x > 0.5)[0]
    rows, = np.nonzero(x < 0.5)
    print("selected", idx.shape[0], "of", x.shape[0])
    return np.sum(x[idx] ** 2) + np.sum(x[rows])


def test_index_arrays_from_tuple_results(capsys):
    x = np.array([0.2, 0.9, 0.7, 0.1, 0.6])
    g = adjit.grad(selected_by_condition)(x)
    np.testing.assert_allclose(g, fd_grad(numba.njit(selected_by_condition), (x,), 0),
                               rtol=1e-8)
    np.testing.assert_array_equal(g, np.where(x > 0.5, 2 * x, 1.0))
    assert "selected 3 of 5" in capsys.readouterr().out


def ranked_stable(x):
    order = np.argsort(x, kind="mergesort")
    return np.sum(x[order] * np.arange(x.shape[0]))


def ranked_quick(x):
    order = x.argsort(kind="quicksort")
    return np.sum(x[order] * np.arange(x.shape[0]))


@numba.njit
def _order(x, stable):
    return np.argsort(x, kind="mergesort") if stable else np.argsort(x, kind="quicksort")


@pytest.mark.parametrize("f, stable", [(ranked_stable, True), (ranked_quick, False)])
def test_argsort_kind_decides_which_tie_gets_which_rank(f, stable):
    """np.argsort(x, kind=...) as numba sorts: with ties (rounded data), the stable sort
    and numba's quicksort rank tied elements differently, and the gradient of a rank-
    weighted sum gives each element its rank (x[order[k]] gets k)."""
    x = np.round(np.random.default_rng(5).normal(size=40), 1)
    order = _order(x, stable)
    expected = np.empty(40)
    expected[order] = np.arange(40.0)
    value, g = adjit.value_and_grad(f)(x)
    assert value == numba.njit(f)(x)
    np.testing.assert_array_equal(g, expected)


def test_argsort_kind_other_than_numbas_is_refused():
    def heap_ranked(x):
        return np.sum(x[np.argsort(x, kind="heapsort")])
    with pytest.raises(AdjitError, match="kind='heapsort'.*'quicksort', 'mergesort'"):
        adjit.grad(heap_ranked)(X)


def _shift_impl(arr, fill_value):
    """vectorbt's _fshift_nb shape: a shift registered with numba.extending.overload."""
    if isinstance(arr, numba.types.Type):
        def impl(arr, fill_value):
            out = np.empty(arr.shape[0])
            out[0] = fill_value
            for i in range(1, arr.shape[0]):
                out[i] = arr[i - 1]
            return out
        return impl


overload(_shift_impl)(_shift_impl)


@numba.njit
def _shifted(arr, fill_value=np.nan):
    return _shift_impl(arr, fill_value)


def _weighted_by_shifted(v):
    c = np.linspace(1.0, 2.0, 6)
    return np.nansum(_shifted(c) * v) + np.sum(_shifted(c, 0.0) * v) + \
        np.searchsorted(c, np.inf)


def test_a_call_with_no_rule_given_nan_or_inf_constants():
    """np.nan and np.inf passed to a call kept as numba's (an overloaded shift's default
    fill value, np.searchsorted's value): the probe that asks numba for the result's type
    wrote them as `nan` and `inf`, names numba does not know, and the call was refused as
    one numba does not compile (vectorbt's fshift_nb and obv_custom_nb)."""
    v = np.linspace(-1.0, 1.0, 6)
    value, g = adjit.value_and_grad(_weighted_by_shifted)(v)
    assert value == numba.njit(_weighted_by_shifted)(v)
    # nansum skips its NaN element nan * v[0], so nothing depends on v[0] there: 0 (it was
    # 0 * NaN, NaN as in JAX, before nan-reductions of expressions masked their operands)
    np.testing.assert_allclose(g[1:], 2 * np.linspace(1.0, 2.0, 6)[:-1], rtol=1e-15)
    np.testing.assert_allclose(g, fd_grad(_weighted_by_shifted, (v,), 0), rtol=1e-7, atol=1e-9)
    assert g[0] == 0.0


def _eval_on_grid(grid, C):
    """interpolation.py's entry points: an @overload'ed function taking a grid, a tuple of
    (start, stop, count) tuples (UCGrid)."""
    if isinstance(C, numba.types.Type):
        def impl(grid, C):
            (a, b, n), = grid
            step = (b - a) / (n - 1)
            return C * step
        return impl


overload(_eval_on_grid)(_eval_on_grid)

_GRID = ((0.0, 2.0, 5),)
_C = np.linspace(1.0, 2.0, 4)


def _weighted_on_grid(a, w):
    local = ((a, 3.0, 7),)
    return np.sum(_eval_on_grid(_GRID, _C) * w) + \
        np.sum(adjit.stop_gradient(_eval_on_grid(local, _C)) * w) + a * a


def _through_the_grid(a, w):
    return np.sum(_eval_on_grid(((a, 3.0, 7),), _C) * w)


def test_tuples_passed_to_a_call_kept_as_numbas():
    """A grid tuple (a module's, or one the function builds from its arguments) given to an
    @overload'ed function where no derivative flows through it: it was refused as "a tuple
    used as a value"; the call now gets the tuple. Where a derivative would flow through
    the call (an active number in the tuple) it is refused naming the call."""
    w = np.array([0.5, -1.0, 2.0, 0.25])
    value, g = adjit.value_and_grad(_weighted_on_grid, argnums=(0, 1))(0.4, w)
    assert value == numba.njit(_weighted_on_grid)(0.4, w)
    np.testing.assert_allclose(g[1], _C * 0.5 + _C * (3.0 - 0.4) / 6, rtol=1e-15)
    assert g[0] == 0.8
    for mode in ("grad", "jvp"):
        with pytest.raises(AdjitError, match="flow through `_eval_on_grid`"):
            if mode == "grad":
                adjit.grad(_through_the_grid)(0.4, w)
            else:
                adjit.jvp(_through_the_grid, argnums=0)(0.4, w, 1.0)
