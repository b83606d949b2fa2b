"""An adjoint whose first term is a whole new array (a matrix product's) is assigned that
term instead of adding it into zeros (reverse/resets.py, the sweep pass "resets"):
vectorized network code as numba users write it, the layers' activations read again in
other ways (elementwise, twice, in a loop, through a row), float32; each gradient against
central differences of numba's compile, the fast form against the added one to the bit,
and the source for which form ran; the rewrite on statement lists."""
import ast

import numpy as np
import pytest

import adjit
from adjit import ir
from adjit.codegen import vector_math
from adjit.reverse import resets
from fd import check_value_and_grad, fd_grad


def two_layers(W1, W2, X):
    h = np.tanh(X @ W1)
    return np.sum((h @ W2) ** 2)


def read_twice(W1, W2, W3, X):
    h = np.tanh(X @ W1)
    return np.sum(np.sin(h @ W2)) + np.sum(h @ W3)


def read_after(W1, W2, X):
    h = X @ W1
    z = h @ W2
    return np.sum(z * z) + np.sum(h ** 3)


def through_a_row(W1, W2, X):
    h = np.tanh(X @ W1)
    r = h[0]
    return np.sum(h @ W2) + np.sum(r * r)


def recurrent(W, h0):
    h = h0
    for _ in range(3):
        h = np.tanh(h @ W)
    return np.sum(h * h)


def through_inv(a):
    b = a + 3.0 * np.eye(3)
    return np.sum(np.linalg.inv(b) ** 2)


def through_cholesky(a):
    s = a @ a.T + np.eye(3)
    return np.sum(np.linalg.cholesky(s) ** 3)


def _inputs(*shapes, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return tuple((rng.standard_normal(s) * 0.5).astype(dtype) for s in shapes)


def test_a_layers_activation_is_assigned_its_product_term():
    args = _inputs((4, 5), (5, 3), (6, 4))
    built = adjit.value_and_grad(two_layers, argnums=(0, 1))
    check_value_and_grad(two_layers, args, (0, 1), built=built)
    source = built.source
    assert "h_bar = vec.mm_nt(" in source
    assert "h_bar = vec.zeros_like(h)" not in source and "h_bar +=" not in source
    assert "W2_bar = vec.mm_tn(h, " in source


def test_assigned_is_the_added_form_to_the_bit(monkeypatch):
    args = _inputs((4, 5), (5, 3), (6, 4), seed=1)
    fast = adjit.grad(two_layers, argnums=(0, 1))(*args)
    monkeypatch.setattr(vector_math, "has_complex", lambda *a: True)
    added = adjit.grad(two_layers, argnums=(0, 1))
    slow = added(*args)
    assert "h_bar += vec.mm_nt(" in added.source
    for a, b in zip(fast, slow):
        assert np.array_equal(a, b)


def test_a_second_term_adds_to_the_first():
    args = _inputs((4, 5), (5, 3), (5, 2), (6, 4), seed=2)
    built = adjit.value_and_grad(read_twice, argnums=(0, 1, 2))
    check_value_and_grad(read_twice, args, (0, 1, 2), built=built)
    source = built.source
    assert source.count("h_bar = vec.") == 1 and source.count("h_bar += vec.") == 1


@pytest.mark.parametrize("f, shapes", [
    (read_after, ((4, 5), (5, 3), (6, 4))),       # h's own terms come first backward
    (through_a_row, ((4, 5), (5, 3), (6, 4))),    # a row of h read on its own
])
def test_terms_before_the_product_keep_the_zeros(f, shapes):
    args = _inputs(*shapes, seed=3)
    built = adjit.value_and_grad(f, argnums=(0, 1))
    check_value_and_grad(f, args, (0, 1), built=built)
    assert "h_bar = vec.mm" not in built.source


def test_a_product_in_a_loop_keeps_adding():
    args = _inputs((4, 4), (3, 4), seed=4)
    check_value_and_grad(recurrent, args, (0, 1))


@pytest.mark.parametrize("f, assigned", [
    (through_inv, "b_bar = -vec.mm_nt("), (through_cholesky, "s_bar = vec.cholesky_a_bar(")])
def test_an_inverse_and_a_factorization_are_assigned_too(f, assigned):
    args = _inputs((3, 3), seed=6)
    built = adjit.value_and_grad(f)
    check_value_and_grad(f, args, 0, built=built)
    assert assigned in built.source


def test_float32_keeps_its_adjoints_dtype():
    args = _inputs((4, 5), (5, 3), (6, 4), seed=5, dtype=np.float32)
    g = adjit.grad(two_layers, argnums=(0, 1))
    got = g(*args)
    assert "h_bar = vec.zeros_like(h)" in g.source
    wide = tuple(a.astype(np.float64) for a in args)
    for k, value in enumerate(got):
        assert value.dtype == np.float32
        np.testing.assert_allclose(value, fd_grad(two_layers, wide, k), rtol=2e-4, atol=2e-5)


def _statements(text):
    """Statements of `text`, the last one noted as a whole term of h."""
    stmts = ir.parse(text)
    ir.annotate(stmts[-1], whole="h")
    return stmts


@pytest.mark.parametrize("between, assigned", [
    ("s = 1.0", True),
    ("v_bar = h_bar[0]", False),           # an alias of the adjoint
    ("h = np.ones((3, 3))", False),         # the operand again, maybe in another shape
    ("for i in range(3):\n    s = h_bar[i, 0]", False),
])
@pytest.mark.parametrize("backward", [False, True])
def test_what_may_stand_between_the_zeros_and_the_term(between, assigned, backward):
    """The statement between in the forward sweep or in the backward one."""
    stmts = _statements(f"h_bar = np.zeros_like(h)\n{between}\nh_bar += vec.mm_nt(g, w)")
    cut = 2 - backward
    before, sweep = stmts[:cut], stmts[cut:]
    gone = resets.assign_whole(before, sweep)
    text = "\n".join(ast.unparse(s) for s in sweep)
    assert (gone == [stmts[0]]) == assigned
    assert ("h_bar = vec.mm_nt(g, w)" in text) == assigned


@pytest.mark.parametrize("text", [
    "h_bar = np.zeros_like(h)\nh_bar += vec.mm_nt(h_bar, w)",     # the term reads the adjoint
    "h_bar = np.zeros_like(k)\nh_bar += vec.mm_nt(g, w)",         # another array's zeros
    "h_bar = np.zeros((3, 3))\nh_bar += vec.mm_nt(g, w)",         # zeros of a given shape
    "h_bar = np.zeros_like(h)\nif c:\n    h_bar += vec.mm_nt(g, w)",
])
def test_what_keeps_the_zeros(text):
    stmts = ir.parse(text)
    term = stmts[-1] if not isinstance(stmts[-1], ast.If) else stmts[-1].body[0]
    ir.annotate(term, whole="h")
    assert resets.assign_whole(stmts[:1], stmts[1:]) == []
    assert "h_bar +=" in "\n".join(ast.unparse(s) for s in stmts)
