"""numba `@guvectorize` gufuncs, written as moving-window and statistics libraries write them:
a moving mean with several eager signatures, a NaN-skipping mean reducing its core
dimension, a matrix-vector product over a stack, a lazy gufunc given its output, a core
`()` input declared as an array. Called on arrays with loop dimensions and without, from a
Python function and from @njit code (with the output passed, as numba requires there). Values
against numba's own gufuncs, gradients against central differences of them."""
import numpy as np
import pytest
from numba import float32, float64, guvectorize, int64, njit

import adjit
from adjit import AdjitError
from fd import check_value_and_grad


@guvectorize([(float32[:], int64, float32[:]), (float64[:], int64, float64[:])],
             "(n),()->(n)", nopython=True)
def move_mean(a, window, out):
    asum = 0.0
    count = 0
    for i in range(window):
        ai = a[i]
        if not np.isnan(ai):
            asum += ai
            count += 1
        out[i] = asum / count if count else np.nan
    for i in range(window, len(a)):
        ai = a[i]
        aold = a[i - window]
        if not np.isnan(ai):
            asum += ai
            count += 1
        if not np.isnan(aold):
            asum -= aold
            count -= 1
        out[i] = asum / count if count else np.nan


@guvectorize([(float64[:], float64[:])], "(n)->()", nopython=True)
def nanmean(a, out):
    asum = 0.0
    count = 0
    for ai in a.flat:
        if not np.isnan(ai):
            asum += ai
            count += 1
    out[0] = asum / count if count > 0 else np.nan


@guvectorize([(float64[:, :], float64[:], float64[:])], "(m,n),(n)->(m)")
def matvec(a, x, out):
    for i in range(a.shape[0]):
        acc = 0.0
        for j in range(a.shape[1]):
            acc += a[i, j] * x[j]
        out[i] = acc


@guvectorize("(n),()->(n)")
def lazy_shift(a, c, out):
    for i in range(a.shape[0]):
        out[i] = a[i] + c * a[i] * a[i]


@guvectorize([(float64[:], float64[:], float64[:])], "(n),()->(n)")
def scaled(a, s, out):
    """A core () input declared as an array: the kernel reads s[0]."""
    for i in range(a.shape[0]):
        out[i] = a[i] * s[0]


def smoothed_loss(x):
    return np.sum(move_mean(x, 3) ** 2)


def weighted_rows(x, w):
    return np.sum(nanmean(x) * w)


def stacked_matvec(a, x):
    return np.sum(np.sin(matvec(a, x)))


def lazy_with_out(x, c):
    out = np.empty_like(x)
    lazy_shift(x, c, out)
    return np.sum(out * x)


def stacks_of_stacks(a, x):
    # a with one loop dimension (2), x with two (5, 2): numpy aligns a's with x's last one
    # (and stretches a dimension of size 1: a (1,) against x (5, 2), a (2,) against x (5, 1))
    return np.sum(np.cos(matvec(a, x)) * np.arange(1.0, 4.0))


def rows_against_one_stack(x, w):
    # a 2-D stack of rows (3, 4, 6) and weights with one loop dimension (4): per row
    return np.sum(np.sin(matvec(x, w)) ** 2)


def one_row_mean(x):
    return nanmean(x) * x[0]           # no loop dimension: a number


def array_scalar(x, s):
    return np.sum(scaled(x, s) ** 2)


RNG = np.random.default_rng(21)
X1 = RNG.normal(size=9)
X2 = RNG.normal(size=(4, 6))
A3 = RNG.normal(size=(2, 3, 4))

@guvectorize(["void(float64[:], intp[:], float64[:])"], "(n),()->(n)")
def move_mean(a, window_arr, out):
    """numba-examples' legacy/movemean.py: the window a 1-element array in the kernel."""
    window_width = window_arr[0]
    asum = 0.0
    count = 0
    for i in range(window_width):
        asum += a[i]
        count += 1
        out[i] = asum / count
    for i in range(window_width, len(a)):
        asum += a[i] - a[i - window_width]
        out[i] = asum / count


def moving_means_as_the_example_calls_them(arr):
    return np.sum(move_mean(arr, 3) * np.arange(arr.shape[-1]))


@guvectorize(["void(float64[:], float64[:], float64[:])"], "(n),()->(n)")
def boxed_scale(a, s, out):
    for i in range(len(a)):
        out[i] = a[i] * s[0]


def boxed_scale_by_a_number(x, s):
    out = np.empty_like(x)
    boxed_scale(x, s, out)
    return np.sum(out ** 2)


def boxed_scale_by_an_array(x):
    return np.sum(boxed_scale(x, np.array([3.0])) * np.arange(6.0))


def boxed_scale_into_a_smaller_output(x):
    out = np.empty_like(x)
    boxed_scale(x, np.array([3.0]), out)
    return np.sum(out)


CASES = {
    "movemean_example": (moving_means_as_the_example_calls_them, (X2,), 0),
    "boxed_number": (boxed_scale_by_a_number, (X1[:6], 2.5), (0, 1)),
    "boxed_array": (boxed_scale_by_an_array, (X1[:6],), 0),
    "smoothed_1d": (smoothed_loss, (X1,), 0),
    "smoothed_rows": (smoothed_loss, (X2,), 0),
    "weighted_rows": (weighted_rows, (X2, np.arange(1.0, 5.0)), (0, 1)),
    "stacked_matvec": (stacked_matvec, (A3, RNG.normal(size=4)), (0, 1)),
    "lazy_with_out": (lazy_with_out, (X2, 0.3), (0, 1)),
    "one_row_mean": (one_row_mean, (X1,), 0),
    "loop_dims_broadcast": (stacks_of_stacks, (A3, RNG.normal(size=(5, 2, 4))), (0, 1)),
    "loop_dims_stretched": (stacks_of_stacks, (RNG.normal(size=(1, 3, 4)),
                                               RNG.normal(size=(5, 2, 4))), (0, 1)),
    "loop_dims_stretched_other": (stacks_of_stacks, (A3, RNG.normal(size=(5, 1, 4))), (0, 1)),
    "loop_dims_broadcast_rows": (rows_against_one_stack,
                                 (RNG.normal(size=(3, 4, 2, 6)), RNG.normal(size=(4, 6))),
                                 (0, 1)),
    "array_scalar": (array_scalar, (X2, np.array([0.5, 2.0, -1.0, 3.0])), (0, 1)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gufunc_matches_numba_and_finite_differences(name):
    f, args, argnums = CASES[name]
    # numba types some gufunc calls in jit code (not all): the forward is the function as
    # Python runs it, each gufunc compiled by numba
    check_value_and_grad(f, args, argnums, forward=f)


def test_moving_mean_gradient_is_the_window_average():
    g = adjit.grad(lambda_free_window_sum)(X1)
    # d/dx_j of sum_i mean(x[i-2..i]) : each x_j is in up to three windows
    expected = np.zeros_like(X1)
    for i in range(X1.size):
        lo = max(0, i - 2)
        expected[lo:i + 1] += 1.0 / (i + 1 - lo)
    np.testing.assert_allclose(g, expected, rtol=1e-12)


def lambda_free_window_sum(x):
    return np.sum(move_mean(x, 3))


@njit
def njit_caller(x, c):
    out = np.empty_like(x)
    lazy_shift(x, c, out)
    return np.sum(out * x)


def test_called_from_njit_code_with_its_output():
    check_value_and_grad(njit_caller, (X2, 0.3))


def test_forward_mode_agrees_with_the_gradient():
    t = RNG.normal(size=A3.shape)
    args = (A3, np.arange(4.0))
    value, tangent = adjit.jvp(stacked_matvec)(*args, t)
    assert tangent == pytest.approx(np.sum(adjit.grad(stacked_matvec)(*args) * t), rel=1e-10)


def test_loop_dimensions_that_differ_raise_as_numba_does():
    with pytest.raises(ValueError):
        weighted_rows(X2, np.ones(3))
    g = adjit.grad(stacked_matvec)
    with pytest.raises(ValueError, match="gufunc"):
        g(A3, np.ones(5))                  # core dimension n: 4 against 5
    with pytest.raises(ValueError, match="broadcast"):
        g(A3, np.ones((5, 3, 4)))          # loop dimensions (2,) against (5, 3)


def _lazy_without_out(x):
    return np.sum(lazy_shift(x, 1.0))


@pytest.mark.parametrize("f, args, words", [
    (_lazy_without_out, (X1,), "without its output"),
])
def test_calls_adjit_does_not_take_are_refused_by_name(f, args, words):
    with pytest.raises(AdjitError) as info:
        adjit.grad(f)(*args)
    assert words in str(info.value) and f.__name__ in str(info.value)


def test_an_output_without_the_loop_dimensions_is_refused():
    """A 1-element array for a core () input is a loop dimension of size 1 (numpy's rule:
    the result is (1, n)); an output without it is refused rather than guessed at (numba
    accepts it)."""
    with pytest.raises(AdjitError, match="output of the gufunc `boxed_scale` with 1 dim"):
        adjit.grad(boxed_scale_into_a_smaller_output)(X1[:6])
