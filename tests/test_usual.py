"""Loops that vectorize run a derivative's usual arm alone where every element takes it
(codegen/usual.py): tanh's derivative is (1 - out)(1 + out) except where |out| >= 0.9999;
the loop is checked first and, where no element is that close to 1, runs without the
exp of the fallback. Network layers and loops as numba users write them; every gradient
against central differences of numba's compile, against the analytic derivative where
elements saturate, and to the bit against the same program with the versioning off."""
import ast
import math

import numpy as np
import pytest

import adjit
from adjit import ir
from adjit.codegen import usual
from adjit.normalize.names import NameGen
from fd import check_value_and_grad


def layer(W, b, V, X):
    h = np.tanh(X @ W + b)
    return np.sum((h @ V) ** 2)


def elementwise(x, s):
    return np.sum(np.tanh(s * x))


def dotted(x, s, w):
    h = np.tanh(s * x)
    return np.sum(h @ w)


def in_a_loop(x, s):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = math.tanh(s * x[i])
    return np.sum(out * out)


def squared_layer(W, b, X):
    h = np.tanh(X @ W + b)
    return np.sum(h * h)


def _sech2(x):
    """d tanh / dx to rounding for any x: 4 e / (1 + e)**2, e = exp(-2|x|)."""
    e = np.exp(-2.0 * np.abs(x))
    return 4.0 * e / (1.0 + e) ** 2


def _off(monkeypatch):
    monkeypatch.setattr(usual, "version_loops", lambda *a, **k: 0)


def test_a_tanh_layer_runs_the_usual_arm():
    rng = np.random.default_rng(0)
    args = (rng.standard_normal((5, 7)) * 0.3, rng.standard_normal(7) * 0.1,
            rng.standard_normal((7, 3)), rng.standard_normal((9, 5)))
    built = adjit.value_and_grad(layer, argnums=(0, 1, 2))
    check_value_and_grad(layer, args, (0, 1, 2), built=built)
    source = built.source
    assert "_rare1 |= not abs(h[" in source and "if _rare1:" in source


@pytest.mark.parametrize("f", [layer, dotted, elementwise, in_a_loop], ids=lambda f: f.__name__)
@pytest.mark.parametrize("scale", [0.5, 30.0])      # no element near 1; many at 1
def test_versioned_is_the_branch_to_the_bit(monkeypatch, f, scale):
    rng = np.random.default_rng(1)
    if f is layer:
        args = (rng.standard_normal((4, 6)) * scale, rng.standard_normal(6),
                rng.standard_normal((6, 2)), rng.standard_normal((8, 4)))
        argnums = (0, 1)
    elif f is dotted:
        args = (rng.standard_normal((30, 10)), scale, rng.standard_normal((10, 2)))
        argnums = (0, 1)
    else:
        args = (rng.standard_normal(300), scale)
        argnums = (0, 1)
    fast = adjit.grad(f, argnums=argnums)
    got = fast(*args)
    _off(monkeypatch)
    plain = adjit.grad(f, argnums=argnums)
    want = plain(*args)
    assert "_rare" not in plain.source
    for a, b in zip(got, want):
        assert np.array_equal(a, b)


def test_saturated_elements_keep_their_digits():
    """|s x| up to 40: tanh' down to 1e-34, where 1 - out**2 would be 0 or 2e-16."""
    x = np.linspace(-4.0, 4.0, 400).reshape(20, 20)
    w = np.ones((20, 1))
    g = adjit.grad(dotted)
    got = g(x, 10.0, w)
    assert "if _rare1:" in g.source
    # (1 - out)(1 + out) is within 3e-12 up to |out| = 0.9999 (rules/table.py), beyond exact
    np.testing.assert_allclose(got, 10.0 * _sech2(10.0 * x), rtol=3e-12, atol=0.0)
    mild = np.linspace(-0.2, 0.2, 400).reshape(20, 20)  # every element takes the usual arm
    np.testing.assert_allclose(g(mild, 10.0, w), 10.0 * _sech2(10.0 * mild), rtol=1e-14)


@pytest.mark.parametrize("scale", [0.3, 30.0])
def test_a_tanh_read_back_from_the_tape(monkeypatch, scale):
    """A small layer whose tanh values the tape keeps: the check reads them back too."""
    rng = np.random.default_rng(2)
    args = (rng.standard_normal((5, 7)) * scale, rng.standard_normal(7) * 0.1,
            rng.standard_normal((9, 5)))
    built = adjit.value_and_grad(squared_layer, argnums=(0, 1))
    if scale < 1.0:
        check_value_and_grad(squared_layer, args, (0, 1), built=built)
    got = built(*args)[1]
    assert "_rare1 |= not abs(_t" in built.source and "_ftape[" in built.source
    _off(monkeypatch)
    want = adjit.value_and_grad(squared_layer, argnums=(0, 1))(*args)[1]
    for a, b in zip(got, want):
        assert np.array_equal(a, b)


# the rewrite on statement lists ------------------------------------------------------------

def _loop(body, own=("y_bar",)):
    """`body` in a vectorizing loop over i, the tanh derivative's branch written in it as
    {d}: returns (statements after versioning, loops versioned)."""
    d = ("((1.0 - h[i]) * (1.0 + h[i]) if abs(h[i]) < 0.9999 else "
         "4.0 * vmath.exp64(-2.0 * abs(x[i])) / (1.0 + vmath.exp64(-2.0 * abs(x[i]))) ** 2)")
    from adjit.runtime import vmath
    stmts = ir.parse("for i in range(n):\n" + "".join(
        f"    {line}\n" for line in body.format(d=d).splitlines()))
    ns = {"vmath": vmath, "np": np, "math": math}
    done = usual.version_loops([([stmts], set())], ns, NameGen(), set(own))
    return stmts, done


def test_a_loop_of_the_branch_is_versioned():
    stmts, done = _loop("y_bar[i] += g[i] * {d}")
    assert done == 1
    text = "\n".join(ast.unparse(s) for s in stmts)
    assert "for i in range(n):\n    _rare1 |= not abs(h[i]) < 0.9999" in text
    assert "y_bar[i] += g[i] * ((1.0 - h[i]) * (1.0 + h[i]))" in text


_H2 = ("y_bar[i] += g[i] * ((1.0 - h2) * (1.0 + h2) if abs(h2) < 0.9999 else "
       "vmath.exp64(x[i]))")


def test_a_value_read_back_in_the_loop_is_read_by_the_check_too():
    """out read back from the tape (a tanh's value taped, not kept in an array)."""
    stmts, done = _loop("h2 = t[np.uint64(base + i)]\n" + _H2, own=("y_bar", "t"))
    assert done == 1
    text = "\n".join(ast.unparse(s) for s in stmts)
    assert ("for i in range(n):\n    h2 = t[np.uint64(base + i)]\n"
            "    _rare1 |= not abs(h2) < 0.9999") in text


@pytest.mark.parametrize("body", [
    "h[i] = x[i] * 2.0\ny_bar[i] += g[i] * {d}",           # the loop writes what it tests
    "y_bar[i] += g[i] * (0.0 if c[i] else {d})",           # only some iterations test
    "y_bar[i] += g[i] * (c[i] > 0.0 and {d})",             # after a short-circuit
    "h2 = vmath.tanh64(x[i])\n" + _H2,                     # out computed: computed twice
    "h2 = h[i]\nh2 = h2 * 2.0\n" + _H2,                    # assigned twice
    _H2 + "\nh2 = h[i]",                                   # read before it is assigned
])
def test_what_keeps_the_branch(body):
    stmts, done = _loop(body, own=("y_bar", "h"))
    assert done == 0
    assert "_rare" not in "\n".join(ast.unparse(s) for s in stmts)


def test_a_store_into_an_array_adjit_does_not_own_keeps_the_branch():
    """A user's array could share memory with the one the test reads."""
    stmts, done = _loop("z[i] = 1.0\ny_bar[i] += g[i] * {d}")
    assert done == 0
