"""The values a derivative takes beside the function's arguments: jvp's tangent, hvp's vector
and vjp's cotangent, passed as a user would by mistake: a direction of another length, a
matrix transposed, a number for an array, a tuple of the wrong length. numba would broadcast
such a value or read past its end and return a plausible number; adjit refuses each with an
AdjitError naming the function, from Python and from @njit code. The right values still give
the exact derivatives (against the analytic ones and central differences)."""
import numba
import numpy as np
import pytest
from hypothesis import given, strategies as st

import adjit
from adjit import AdjitError
from adjit.runtime.index import share_elements
from fd import fd_grad, fd_vjp


def scaled(x, p):
    return x * p


def weighted(x, p):
    return np.sum(x * x * p)


def matrix_form(A, v):
    return np.sum(A @ v)


def with_params(x, params):
    a, (b, c) = params
    return np.sum(a * x) + b * c


X = np.array([1.0, 2.0, 3.0])


def test_right_values_exact():
    out, t = adjit.jvp(weighted)(X, 2.0, np.array([1.0, 0.5, -1.0]))
    assert out == pytest.approx(28.0)
    assert t == pytest.approx(np.sum(2 * X * 2.0 * np.array([1.0, 0.5, -1.0])))
    c = np.array([0.5, -1.0, 2.0])
    out, g = adjit.vjp(scaled)(X, 2.0, c)
    assert np.allclose(g, 2.0 * c)
    assert np.allclose(g, fd_vjp(scaled, [X, 2.0], 0, c))
    hv = adjit.hvp(weighted)(X, 2.0, np.array([1.0, 0.0, 2.0]))
    assert np.allclose(hv, 2 * 2.0 * np.array([1.0, 0.0, 2.0]))
    # a strided view of the right shape is a tangent like any other
    v = np.arange(6.0)[::2]
    _, t = adjit.jvp(weighted)(X, 2.0, v)
    assert t == pytest.approx(np.sum(4.0 * X * v))


@pytest.mark.parametrize("tangent", [np.ones(2), np.ones(4)])
def test_jvp_tangent_of_another_length(tangent):
    with pytest.raises(AdjitError, match=r"in function 'weighted' .*shape \((2|4),\) and "
                                         r"its argument \(3,\)"):
        adjit.jvp(weighted)(X, 2.0, tangent)


def test_transposed_matrix_refused():
    # the same number of elements: numba would read it in the wrong order
    A = np.arange(6.0).reshape(2, 3)
    with pytest.raises(AdjitError, match=r"shape \(3, 2\) and its argument \(2, 3\)"):
        adjit.jvp(matrix_form)(A, X, np.ones((3, 2)))
    with pytest.raises(AdjitError, match=r"shape \(3, 2\) and its argument \(2, 3\)"):
        adjit.hvp(matrix_form)(A, X, np.ones((3, 2)))
    _, t = adjit.jvp(matrix_form)(A, X, np.ones((2, 3)))
    assert t == pytest.approx(np.sum(np.ones((2, 3)) @ X))


@pytest.mark.parametrize("tangent, said", [
    (1.0, "the tangent for 'x' is a number where 'x' is a 1-D array"),
    ((np.ones(3), 1.0), "the tangent for 'x' is a tuple of 2 where 'x' is a 1-D array"),
    (np.ones((3, 1)), "the tangent for 'x' is a 2-D array where 'x' is a 1-D array"),
])
def test_jvp_tangent_of_another_kind(tangent, said):
    with pytest.raises(AdjitError, match=f"in function 'weighted' .*{said}"):
        adjit.jvp(weighted)(X, 2.0, tangent)


def test_jvp_number_tangent_for_number():
    with pytest.raises(AdjitError, match="the tangent for 'p' is a 1-D array where 'p' is a"):
        adjit.jvp(weighted, argnums=1)(X, 2.0, np.ones(3))
    out, t = adjit.jvp(weighted, argnums=1)(X, 2.0, 1)        # an int direction: fine
    assert t == pytest.approx(np.sum(X * X))


@pytest.mark.parametrize("tangent, said", [
    ((np.ones(3),), "the tangent is a tuple of 1 where 2 arguments are in argnums"),
    (np.ones(3), "the tangent is a 1-D array where 2 arguments are in argnums"),
    ((np.ones(2), 1.0), r"shape \(2,\) and its argument \(3,\)"),
])
def test_jvp_tuple_argnums(tangent, said):
    with pytest.raises(AdjitError, match=said):
        adjit.jvp(weighted, argnums=(0, 1))(X, 2.0, tangent)


@pytest.mark.parametrize("cotangent, said", [
    (np.ones(2), r"the cotangent has shape \(2,\) and the result \(3,\)"),
    (np.ones(4), r"the cotangent has shape \(4,\) and the result \(3,\)"),
    (1.0, "the cotangent is a number where the function returns a 1-D array"),
    (np.ones((3, 1)), "the cotangent is a 2-D array where the function returns a 1-D array"),
])
def test_vjp_cotangent(cotangent, said):
    with pytest.raises(AdjitError, match=f"in function 'scaled' .*{said}"):
        adjit.vjp(scaled)(X, 2.0, cotangent)


def test_vjp_array_cotangent_for_float_result():
    with pytest.raises(AdjitError, match="the cotangent is a 1-D array where the function "
                                         "returns a float"):
        adjit.vjp(weighted)(X, 2.0, np.ones(3))
    out, g = adjit.vjp(weighted)(X, 2.0, 0.5)
    assert np.allclose(g, 0.5 * fd_grad(weighted, [X, 2.0], 0))


def test_hvp_vector():
    with pytest.raises(AdjitError, match=r"in function 'weighted' .*shape \(2,\) and its "
                                         r"argument \(3,\)"):
        adjit.hvp(weighted)(X, 2.0, np.ones(2))
    with pytest.raises(AdjitError, match="the vector for 'x' is a number"):
        adjit.hvp(weighted)(X, 2.0, 1.0)
    with pytest.raises(AdjitError, match=r"argnums=\(0, 1\) called with a vector of type float64"):
        adjit.hvp(weighted, argnums=(0, 1))(X, 2.0, 1.0)
    with pytest.raises(AdjitError, match=r"shape \(4,\) and its argument \(3,\)"):
        adjit.hvp(weighted, argnums=(0, 1))(X, 2.0, (np.ones(4), 1.0))


@pytest.mark.parametrize("tangent, said", [
    ((1.0,), r"the tangent of params is a tuple of 1 where params is a tuple of 2"),
    (1.0, r"the tangent of params is a float where params is a tuple of 2"),
    ([np.ones(3), (1.0, 0.0)], r"the tangent of params is a list where"),
    ((np.ones(2), (1.0, 0.0)), r"the tangent of params\[0\] has shape \(2,\) where "
                               r"params\[0\] has shape \(3,\)"),
    ((np.ones(3), 1.0), r"the tangent of params\[1\] is a float where params\[1\] is a "
                        "tuple of 2"),
    ((np.ones(3), (np.ones(2), 0.0)), r"the tangent of params\[1\]\[0\] is a 1-D array "
                                      r"where params\[1\]\[0\] is a number"),
])
def test_tuple_argument_tangent(tangent, said):
    params = (np.array([0.5, 1.0, 1.5]), (2.0, 3.0))
    with pytest.raises(AdjitError, match=f"in function 'with_params' .*{said}"):
        adjit.jvp(with_params, argnums=1)(X, params, tangent)
    out, t = adjit.jvp(with_params, argnums=1)(X, params, (np.ones(3), (1.0, 0.0)))
    assert t == pytest.approx(np.sum(X) + 3.0)


def test_from_njit_code():
    j = adjit.jvp(weighted)
    v = adjit.vjp(scaled)

    @numba.njit
    def directional(x, d):
        return j(x, 2.0, d)[1]

    @numba.njit
    def pulled_back(x, c):
        return v(x, 2.0, c)[1]

    assert directional(X, np.array([1.0, 0.0, 0.0])) == pytest.approx(4.0)
    assert np.allclose(pulled_back(X, np.ones(3)), 2.0)
    with pytest.raises(AdjitError, match=r"shape \(2,\) and its argument \(3,\)"):
        directional(X, np.ones(2))
    with pytest.raises(AdjitError, match=r"the cotangent has shape \(4,\) and the result"):
        pulled_back(X, np.ones(4))


# arguments that share memory, one of them written by the function ---------------------------
def overwrite_then_read(a, b):
    a[0] = 2.0 * b[1]
    return np.sum(a * b)


def running_product(a, b):
    for i in range(1, a.shape[0]):
        a[i] = a[i - 1] * b[i]
    return np.sum(a)


@pytest.mark.parametrize("fn", [overwrite_then_read, running_product])
def test_a_written_argument_sharing_memory_is_refused(fn):
    # (the derivative treats a and b as separate arrays; with one array passed twice,
    # numba's code computes another function: the gradient was a plausible wrong number)
    x = np.array([1.0, 2.0, 3.0, 4.0])
    for a, b in [(x, x), (x[:3], x[1:]), (x[::-1], x)]:
        before = x.copy()
        with pytest.raises(AdjitError, match=f"in function '{fn.__name__}' .*two array "
                                             "arguments share memory"):
            adjit.value_and_grad(fn, argnums=(0, 1))(a, b)
        with pytest.raises(AdjitError, match="share memory"):
            adjit.jvp(fn)(a, b, np.ones(a.shape))
        np.testing.assert_array_equal(x, before)        # refused before anything ran
    # apart, the exact derivative: halves of one array
    y = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    a, b = y[:3], y[3:]
    value, (ga, gb) = adjit.value_and_grad(fn, argnums=(0, 1))(a.copy(), b)
    forward = numba.njit(fn)
    assert value == pytest.approx(forward(a.copy(), b), rel=1e-14)
    np.testing.assert_allclose(ga, fd_grad(forward, [a, b], 0), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(gb, fd_grad(forward, [a, b], 1), rtol=1e-7, atol=1e-9)


def test_interleaved_views_of_one_array_are_apart():
    # x[::2] and x[1::2] span the same bytes but share no element: the exact derivative, as
    # for two arrays (the check compares their elements where their byte ranges overlap)
    forward = numba.njit(overwrite_then_read)
    x = np.arange(1.0, 9.0)
    for a_of, b_of in [(lambda v: v[::2], lambda v: v[1::2]),
                       (lambda v: v.reshape(4, 2)[:, 1], lambda v: v.reshape(4, 2)[:, 0])]:
        y = x.copy()
        a, b = a_of(y), b_of(y)
        value, (ga, gb) = adjit.value_and_grad(overwrite_then_read, argnums=(0, 1))(a, b)
        assert y[0 if a_of(np.arange(8))[0] == 0 else 1] == 2.0 * b[1]    # the write went in
        z = x.copy()
        assert value == forward(a_of(z), b_of(z))
        a0, b0 = a_of(x).copy(), b_of(x).copy()
        np.testing.assert_allclose(ga, fd_grad(forward, [a0, b0], 0), rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(gb, fd_grad(forward, [a0, b0], 1), rtol=1e-7, atol=1e-9)
    # the real and imaginary parts of one complex array: apart; a part and itself: refused
    c = np.array([1.0 + 2.0j, 3.0 - 1.0j, 0.5 + 0.5j])
    value, (ga, gb) = adjit.value_and_grad(overwrite_then_read, argnums=(0, 1))(c.real, c.imag)
    a, b = c.real.copy(), c.imag.copy()      # d/db of 2 b1 b0 + a1 b1 + a2 b2
    np.testing.assert_array_equal(gb, [2.0 * b[1], 2.0 * b[0] + a[1], a[2]])
    with pytest.raises(AdjitError, match="share memory"):
        adjit.value_and_grad(overwrite_then_read, argnums=(0, 1))(c.real, c.real[::-1])
    # every other element against every third: they meet at 0, 6, ...
    with pytest.raises(AdjitError, match="share memory"):
        adjit.grad(overwrite_then_read, argnums=(0, 1))(x[::2], x[::3])


_BASE = np.zeros((6, 10))
_COMPLEX = np.zeros((4, 5), complex)


@st.composite
def _views(draw):
    base = draw(st.sampled_from([_BASE, _COMPLEX.real, _COMPLEX.imag, _BASE.T, _BASE.ravel()]))
    index = tuple(slice(draw(st.integers(-3, 3)), draw(st.integers(-8, 10)),
                        draw(st.sampled_from([1, 2, 3, -1, -2]))) for _ in range(base.ndim))
    return base[index]


@given(_views(), _views())
def test_shared_elements_are_numpys(a, b):
    # the element-by-element comparison against numpy's exact answer, on strided views of
    # one base (steps both ways, transposes, complex parts)
    if a.size and b.size:
        assert share_elements(a, b) == np.shares_memory(a, b)


def test_shared_elements_of_vectors_of_one_stride_are_numpys():
    # the arithmetic for two vectors of one stride and element size, on every pair of such
    # views of a small base (starts, lengths, both directions; float64, complex parts)
    bases = [np.zeros(24), np.zeros(12, complex).real, np.zeros(12, complex).imag]
    for base in bases:
        for step in (1, 2, 3, -1, -2, -3):
            views = [base[start:stop:step] for start in range(-5, 6)
                     for stop in (None, 1, 4, 9, -2)]
            views = [v for v in views if v.size]
            for a in views:
                for b in views:
                    assert share_elements(a, b) == np.shares_memory(a, b), (a.strides, b)
    # views at byte offsets that are not a multiple of the element size (fields of packed
    # records): elements meet part-way
    buffer = np.zeros(512, np.uint8)
    for stride in (16, 24, -16, -24):
        views = [np.ndarray((n,), np.float64, buffer=buffer, offset=offset + (
            (n - 1) * -stride if stride < 0 else 0), strides=(stride,))
            for offset in range(0, 30, 3) for n in (1, 3, 6)]
        for a in views:
            for b in views:
                assert share_elements(a, b) == np.shares_memory(a, b), (a.ctypes.data, b)
    complex_parts = np.zeros(12, complex)
    assert not share_elements(complex_parts.real, complex_parts.imag)
    assert share_elements(complex_parts.real[1:], complex_parts.real[::-1])


def reads_both(a, b):
    return np.sum(a * b)


def test_arguments_only_read_may_share_memory():
    x = np.array([1.0, 2.0, 3.0])
    ga, gb = adjit.grad(reads_both, argnums=(0, 1))(x, x)
    np.testing.assert_array_equal(ga, x)
    np.testing.assert_array_equal(gb, x)


def test_shared_memory_from_njit_code():
    g = adjit.grad(overwrite_then_read, argnums=(0, 1))

    @numba.njit
    def caller(x):
        return g(x, x)

    with pytest.raises(AdjitError, match="two array arguments share memory"):
        caller(np.ones(3))
