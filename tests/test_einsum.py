"""np.einsum with constant subscripts, as array code writes it (numba does not compile
np.einsum, so values are checked against numpy's and gradients against central differences
of the function numpy runs)."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import adjit
from adjit import AdjitError
from fd import fd_grad

RNG = np.random.default_rng(11)
SIZES = {"i": 3, "j": 4, "k": 2, "b": 2, "l": 3}

FORMS = [
    "ij,jk->ik",        # matrix product
    "ij,jk",            # the same, implicit output
    "bij,bjk->bik",     # batched
    "i,i->",            # dot
    "i,i",
    "i,j->ij",          # outer
    "ij->ji",           # transpose
    "ii->",             # trace
    "ii->i",            # diagonal
    "i,ij,j->",         # bilinear form
    "ij,ij->i",         # row-wise dot
    "ijk->k",           # a sum over axes
    "ij,jk,kl->il",     # a chain of three
    "ij->",             # the sum of all
]


def _operands(form):
    given = form.split("->")[0].split(",")
    return [RNG.normal(size=tuple(SIZES["i"] if c == "i" and letters.count("i") > 1 else
                                  SIZES[c] for c in letters)) for letters in given]


def _loss(form):
    def f(*ops):
        r = np.einsum(form, *ops)
        return np.sum(np.tanh(r) * r)
    return f


@pytest.mark.parametrize("form", FORMS)
def test_einsum_matches_numpy_and_finite_differences(form):
    ops = _operands(form)
    f = _loss(form)
    nums = tuple(range(len(ops)))
    value, grads = adjit.value_and_grad(_as_function(form, len(ops)), argnums=nums)(*ops)
    assert value == pytest.approx(f(*ops), rel=1e-12)
    for k in nums:
        np.testing.assert_allclose(grads[k], fd_grad(f, ops, k), rtol=1e-6, atol=1e-8,
                                   err_msg=f"{form}: operand {k}")


_MADE = {}


def _as_function(form, count):
    """A module-level function (adjit reads its source) calling einsum with this form."""
    key = (form, count)
    if key not in _MADE:
        fn = {1: _one, 2: _two, 3: _three}[count]
        _MADE[key] = fn(form)
    return _MADE[key]


def _one(form):
    def f(a0):
        r = np.einsum(form, a0)
        return np.sum(np.tanh(r) * r)
    return f


def _two(form):
    def f(a0, a1):
        r = np.einsum(form, a0, a1)
        return np.sum(np.tanh(r) * r)
    return f


def _three(form):
    def f(a0, a1, a2):
        r = np.einsum(form, a0, a1, a2)
        return np.sum(np.tanh(r) * r)
    return f


def attention_scores(q, k, v):
    s = np.einsum("id,jd->ij", q, k) / np.sqrt(q.shape[1])
    w = np.exp(s - np.max(s))
    w = w / np.sum(w, axis=1).reshape(-1, 1)
    return np.sum(np.einsum("ij,jd->id", w, v) ** 2)


def test_attention_written_with_einsum():
    q, k, v = (RNG.normal(size=(4, 3)) for _ in range(3))
    args = (q, k, v)
    value, grads = adjit.value_and_grad(attention_scores, argnums=(0, 1, 2))(*args)
    assert value == pytest.approx(attention_scores(*args), rel=1e-12)
    for j in range(3):
        np.testing.assert_allclose(grads[j], fd_grad(attention_scores, args, j), rtol=1e-6,
                                   atol=1e-8)


def trace_of_product(A, B):
    return np.einsum("ij,ji->", A, B)


@given(st.integers(1, 4), st.integers(1, 4))
def test_trace_of_a_product_has_the_analytic_gradient(n, m):
    A, B = RNG.normal(size=(n, m)), RNG.normal(size=(m, n))
    gA, gB = adjit.grad(trace_of_product, argnums=(0, 1))(A, B)
    np.testing.assert_allclose(gA, B.T, rtol=1e-13)
    np.testing.assert_allclose(gB, A.T, rtol=1e-13)


def _ellipsis(a):
    return np.sum(np.einsum("...i,i", a, a[0]))


def _computed_subscripts(a, s):
    return np.sum(np.einsum(s, a))


def _integers(x):
    return np.sum(np.einsum("i,i->i", x, np.arange(3)))


def _wrong_count(a):
    return np.sum(np.einsum("ijk->i", a))


def test_subscripts_passed_as_an_argument_are_a_setting():
    """Subscripts the function is called with are a string setting: the gradient is made
    for that value (one per value)."""
    a = np.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(adjit.grad(_computed_subscripts)(a, "i->"), np.ones(3))
    np.testing.assert_array_equal(adjit.grad(_computed_subscripts)(a, "i->i"), np.ones(3))


@pytest.mark.parametrize("f, args, words", [
    (_ellipsis, (np.ones((2, 3)),), "np.einsum with an ellipsis"),
    (_integers, (np.ones(3),), "integer or boolean operand 2"),
    (_wrong_count, (np.ones((2, 3)),), r"with 2 dimension\(s\) for the subscripts 'ijk'"),
])
def test_what_einsum_cannot_do_is_refused_by_name(f, args, words):
    with pytest.raises(AdjitError, match=words):
        adjit.grad(f)(*args)


def test_operands_that_disagree_in_a_letter_raise_as_numpy_does():
    with pytest.raises(ValueError, match="differ in the size of a subscript letter"):
        adjit.grad(trace_of_product)(np.ones((2, 3)), np.ones((2, 2)))


# np.linalg.norm along an axis (numpy's; numba compiles no axis=) ------------------------------
def row_norms_cubed(A):
    return np.sum(np.linalg.norm(A, axis=1) ** 3)


def column_one_norms(A):
    return np.sum(np.linalg.norm(A, 1, axis=0) * np.arange(3.0))


def row_max_norms(A):
    return np.sum(np.linalg.norm(A, np.inf, 1))


def column_min_norms(A):
    return np.sum(np.linalg.norm(A, ord=-np.inf, axis=-2) ** 2)


@pytest.mark.parametrize("f", [row_norms_cubed, column_one_norms, row_max_norms,
                               column_min_norms])
def test_norm_along_an_axis_matches_numpy_and_finite_differences(f):
    A = np.arange(6.0).reshape(2, 3) - 2.2
    value, g = adjit.value_and_grad(f)(A)
    assert value == pytest.approx(f(A), rel=1e-12)
    np.testing.assert_allclose(g, fd_grad(f, (A,), 0), rtol=1e-6, atol=1e-8)


def test_row_norm_gradient_is_the_analytic_one():
    A = RNG.normal(size=(4, 3))
    r = np.linalg.norm(A, axis=1)
    np.testing.assert_allclose(adjit.grad(row_norms_cubed)(A), 3.0 * r[:, None] * A,
                               rtol=1e-12)
