"""ufuncs given their output array by position, numba's only form of `out` (`np.sin(y, y)`,
`np.multiply(a, b, c)`; numba refuses `out=`): the value stored into the array as
`out[...] = value` stores it, and the call's result that array. Each program's value is
checked against numba's compile and its gradient against central differences of it."""
import numba
import numpy as np
import pytest

import adjit
from fd import check_value_and_grad, fd_grad

X = np.array([0.3, -1.2, 2.0, 0.7])


def into_a_new_array(x):
    y = np.empty_like(x)
    np.exp(x, y)
    return np.sum(y * x)


def binary_into_a_third(x, w):
    y = np.empty_like(x)
    z = np.multiply(x, w, y)        # z is y
    z[0] = 0.5
    return np.sum(y * x) + z[1]


def in_place_on_a_copy(x):
    y = x.copy()
    np.sin(y, y)
    np.add(y, x, y)
    return np.sum(y * y)


def in_place_on_the_argument(x, steps):
    # a time step written with ufuncs into the state itself
    for _ in range(steps):
        np.multiply(x, 0.9, x)
        np.add(x, 0.1, x)
    return np.sum(x * x)


def sign_into_a_computed_array(x, w):
    # PyTransit's orbits_py: `z *= sign(1.0, sin(w + ta))`, np.sign's second argument its
    # `out`: the array of sin(w + ta) overwritten with ones, so z is unchanged
    z = x * x
    z *= np.sign(1.0, np.sin(w + x))
    return np.sum(z)


def into_a_slice(x):
    y = np.zeros(6)
    np.tanh(x, y[1:5])
    return np.sum(y * np.arange(6.0))


@pytest.mark.parametrize("f, args, argnums", [
    (into_a_new_array, (X,), 0),
    (binary_into_a_third, (X, 1.7), (0, 1)),
    (in_place_on_a_copy, (X,), 0),
    (sign_into_a_computed_array, (X, 0.3), (0, 1)),
    (into_a_slice, (X,), 0),
])
def test_a_ufuncs_out_matches_numba_and_finite_differences(f, args, argnums):
    check_value_and_grad(f, args, argnums)


def shift_half(x):
    # an output overlapping the input: numba's loop runs element by element, a running
    # update (x[i + 1] = x[i] / 2 reads what it wrote: numpy would compute it all first)
    y = x[1:]
    np.multiply(x[:-1], 0.5, y)
    return np.sum(x * x)


def add_neighbour(x):
    y = x.copy()
    np.add(y[:-1], y[1:], y[1:])
    return np.sum(y * y)


def expressions_and_a_view(x):
    # an input that is an expression is a new array before the loop writes (numba evaluates
    # the call's arguments first); a plain view of the output's array sees the running update
    y = x.copy()
    np.add(y[:-1] * 2.0, y[:-1], y[1:])
    z = x.copy()
    np.multiply(-z[::-1], 0.5, z)
    return np.sum(y * y) + np.sum(z * x)


@pytest.mark.parametrize("f", [shift_half, add_neighbour, expressions_and_a_view])
def test_an_output_overlapping_an_input_is_numbas_running_update(f):
    x, y = X.copy(), X.copy()
    value, g = adjit.value_and_grad(f)(x)
    forward = numba.njit(f)
    assert value == pytest.approx(forward(y), rel=1e-14)
    np.testing.assert_array_equal(x, y)
    np.testing.assert_allclose(g, fd_grad(forward, (X,), 0), rtol=1e-6, atol=1e-8)
    if f is shift_half:     # x0 halved down the array: d/dx0 sum x0^2 (1 + 1/4 + ...)
        np.testing.assert_allclose(g, [2 * X[0] * sum(0.25 ** k for k in range(4)), 0.0,
                                       0.0, 0.0], rtol=1e-14)


def test_the_argument_stepped_in_place_by_ufuncs():
    # the gradient with respect to the argument's value at entry; the caller's array is left
    # as numba leaves it
    x = X.copy()
    value, g = adjit.value_and_grad(in_place_on_the_argument)(x, 3)
    y = X.copy()
    assert value == pytest.approx(numba.njit(in_place_on_the_argument)(y, 3), rel=1e-14)
    np.testing.assert_array_equal(x, y)
    np.testing.assert_allclose(g, fd_grad(numba.njit(in_place_on_the_argument), (X, 3), 0),
                               rtol=1e-6, atol=1e-8)
    a = 0.9 ** 3        # x -> a x + b: d/dx sum((a x + b)^2) = 2 a (a x + b)
    np.testing.assert_allclose(g, 2 * a * y, rtol=1e-12)


def test_the_overwritten_array_carries_nothing_into_the_gradient():
    gx, gw = adjit.grad(sign_into_a_computed_array, (0, 1))(X, 0.3)
    np.testing.assert_allclose(gx, 2.0 * X, rtol=1e-15)
    assert gw == 0.0


def _out_of_another_length(x):
    y = np.empty(3)
    np.exp(x, y)
    return np.sum(y)


def test_an_out_of_another_shape_raises():
    # numpy raises; numba's compile loops over the out's shape and reads x's first three
    # (a sum of three), which adjit does not copy: it raises as numpy does
    with pytest.raises(ValueError):
        _out_of_another_length(X)
    assert numba.njit(_out_of_another_length)(X) == pytest.approx(np.sum(np.exp(X[:3])))
    with pytest.raises(ValueError, match="cannot assign slice"):
        adjit.grad(_out_of_another_length)(X)


G_OUT = np.zeros(4)


def _into_a_module_level_array(x):
    np.sin(x, G_OUT)
    return np.sum(G_OUT)


def test_an_out_that_is_a_module_level_array_is_refused():
    with pytest.raises(adjit.AdjitError, match="writing into the module-level array 'G_OUT'"):
        adjit.grad(_into_a_module_level_array)(X)


def dot_into(x):
    y = np.zeros(x.shape[0])
    np.dot(np.outer(x, x), x, y)        # numba's np.dot takes `out` by position
    return np.sum(y)


def dot_into_by_keyword(x):
    y = np.zeros(x.shape[0])
    np.dot(np.outer(x, x), x, out=y)
    return np.sum(y)


def outer_into(x):
    a = np.outer(x, x)
    y = np.zeros((x.shape[0], x.shape[0]))
    np.outer(x, x, y)
    return np.sum(y * a)


@pytest.mark.parametrize("f", [dot_into, dot_into_by_keyword, outer_into])
def test_a_whole_array_function_given_its_output_is_refused(f):
    """numba writes np.dot's and np.outer's result into `out`; adjit lowers these as their
    value, and the stored array would carry no derivative: refused, saying what to write."""
    assert np.all(fd_grad(numba.njit(f), (X,), 0) != 0.0)      # (the exact one is not 0)
    with pytest.raises(adjit.AdjitError, match=r"given an array to write its result into "
                       r"\(its argument `out`\)\. Assign the result instead"):
        adjit.grad(f)(X)


def sign_mask(x):
    m = np.empty(x.shape[0], dtype=np.bool_)
    np.greater(x, 0.0, m)               # a comparison into a boolean array
    return np.sum(np.where(m, x * x, -x))


def parity_weights(x):
    b = np.zeros(x.shape[0], dtype=np.int64)
    r = np.bitwise_and(np.arange(x.shape[0]), 1, b)     # r is b
    r[0] = 2
    return np.sum(b * x * x)


def mask_into_a_view(x):
    m = np.zeros(x.shape[0] + 1, dtype=np.bool_)
    tail = m[1:]
    np.greater(x, 0.0, tail)
    return np.sum(np.where(m[:-1], x, 0.0)) + np.sum(np.where(tail, x * x, 0.0))


def mask_into_a_slice(x):
    m = np.zeros(x.shape[0] + 1, dtype=np.bool_)
    np.greater(x, 0.0, m[1:])
    return np.sum(np.where(m[:-1], x, 0.0))


@pytest.mark.parametrize("f", [sign_mask, parity_weights, mask_into_a_view])
def test_a_ufunc_without_a_derivative_writes_its_output(f):
    check_value_and_grad(f, (X,))


def test_a_ufunc_without_a_derivative_given_a_slice_to_write_is_refused():
    with pytest.raises(adjit.AdjitError, match=r"`np.greater` given its output array as an "
                       r"expression \(`m\[1:\]`\)\. Name it first"):
        adjit.grad(mask_into_a_slice)(X)
