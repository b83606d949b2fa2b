"""Vector math in generated loops (grad(..., vector_math=True), the default): loops LLVM can
vectorize call adjit.runtime.vmath's exp, log, tanh, sin ... instead of the C library's;
every other loop, and every copy of a statement such a loop does not decide, keeps numba's
functions. Gradients are checked against finite differences of numba's own forward and
against the gradient with vector_math=False."""
import ast
import math

import numba
import numpy as np
import pytest

import adjit
from adjit.codegen.vector_math import vectorizable

from fd import fd_grad

RNG = np.random.default_rng(3)
X = RNG.uniform(0.2, 1.4, 9)


def tanh_layer(x, w):
    h = np.tanh(x * w + 0.1)
    return np.sum(h * h) + w * np.sum(x)


def summed_exponentials(x, w):
    s = 0.0
    for i in range(x.shape[0]):
        s += math.exp(w * x[i])
    return s


def sines_weighted(x, w):
    s = 0.0
    for i in range(x.shape[0]):
        s += math.sin(x[i] * w) * x[i]
    return s


def each_function(x, w):
    y = np.empty_like(x)
    for i in range(x.shape[0]):
        y[i] = (math.exp(x[i] * w) + math.expm1(x[i]) + math.log(x[i] + w)
                + math.log1p(x[i] * w) + math.tanh(x[i] - w) + math.sin(w * x[i])
                + math.cos(x[i] + w))
    return np.sum(y * x)


LOSSES = [tanh_layer, summed_exponentials, sines_weighted, each_function]


@pytest.mark.parametrize("loss", LOSSES, ids=[f.__name__ for f in LOSSES])
def test_gradient_matches_numba_and_the_c_library_version(loss):
    compiled = numba.njit(loss)
    w = 0.7
    value, (gx, gw) = adjit.value_and_grad(loss, argnums=(0, 1))(X, w)
    plain_value, (px, pw) = adjit.value_and_grad(loss, argnums=(0, 1), vector_math=False)(X, w)
    assert plain_value == compiled(X, w)            # the C library's: numba's to the bit
    assert value == pytest.approx(compiled(X, w), rel=1e-14)
    np.testing.assert_allclose(gx, fd_grad(compiled, (X, w), 0), rtol=1e-6, atol=1e-8)
    assert gw == pytest.approx(fd_grad(compiled, (X, w), 1), rel=1e-6)
    np.testing.assert_allclose(gx, px, rtol=1e-14, atol=1e-15)
    assert gw == pytest.approx(pw, rel=1e-14)


def _calls(source, module):
    return sorted({n.func.attr for n in ast.walk(ast.parse(source))
                   if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                   and isinstance(n.func.value, ast.Name) and n.func.value.id == module})


def test_a_map_uses_vector_math_and_the_option_turns_it_off():
    g = adjit.grad(tanh_layer)
    g(X, 0.7)
    assert _calls(g.source, "vmath") == ["exp", "tanh"]     # tanh; exp in its derivative
    assert _calls(g.source, "math") == []
    off = adjit.grad(tanh_layer, vector_math=False)
    off(X, 0.7)
    assert _calls(off.source, "vmath") == [] and _calls(off.source, "math") == ["exp", "tanh"]


def test_a_summing_loop_keeps_the_c_library_and_its_adjoint_loop_vectorizes():
    g = adjit.value_and_grad(summed_exponentials, argnums=(0, 1))
    g(X, 0.7)
    forward, backward = g.source.split("# backward sweep")
    assert "math.exp(" in forward and "vmath" not in forward
    # the adjoint loop is a map (x_bar[i] = ...): the derivative's exp is vmath's, unless it
    # is the forward statement computed again (then it keeps the forward's function)
    for line in backward.splitlines():
        if "exp(" in line and "_bar" not in line.split("=")[0]:
            assert "vmath." not in line, line


def test_a_statement_computed_again_gets_the_forward_copys_function():
    def loss(x, w):
        s = 0.0
        for i in range(x.shape[0]):
            e = math.exp(w * x[i])
            s += e * e
        return s
    g = adjit.value_and_grad(loss, argnums=(0, 1))
    g(X, 0.7)
    lines = [ln.strip() for ln in g.source.splitlines() if "exp(" in ln]
    primal = {ln.split("=", 1)[1].replace("vmath.", "math.") for ln in lines
              if not ln.split("=")[0].strip().endswith("_bar")}
    for text in primal:          # every copy of a primal statement, one function
        spelled = {ln.split("=", 1)[1] for ln in lines
                   if ln.split("=", 1)[1].replace("vmath.", "math.") == text}
        assert len(spelled) == 1, spelled


def test_checkpointed_and_recorded_gradients_are_identical_to_the_bit():
    def rollout(u0, k):
        u = u0.copy()
        for _ in range(12):
            u = u + 0.05 * np.tanh(k * u) - 0.01 * np.sin(u)
        return np.sum(np.exp(-u * u))
    u0 = np.linspace(-1.0, 1.0, 33)
    rec = adjit.value_and_grad(rollout, argnums=(0, 1), checkpoint=False)(u0, 0.8)
    for checkpoint in ("auto", 3):
        ck = adjit.value_and_grad(rollout, argnums=(0, 1), checkpoint=checkpoint)(u0, 0.8)
        assert ck[0] == rec[0]
        assert np.array_equal(ck[1][0], rec[1][0]) and ck[1][1] == rec[1][1]
    compiled = numba.njit(rollout)
    np.testing.assert_allclose(rec[1][0], fd_grad(compiled, (u0, 0.8), 0), rtol=1e-6,
                               atol=1e-9)


def test_float32_code_keeps_float32():
    def loss(x):
        return np.sum(np.exp(x * np.float32(0.5)) * x)
    x = X.astype(np.float32)
    g = adjit.grad(loss)(x)
    assert g.dtype == np.float32
    assert "vmath.exp" in adjit.grad(loss).source_for(x)
    exact = np.exp(0.5 * X) * (1.0 + 0.5 * X)
    np.testing.assert_allclose(g, exact, rtol=3e-6)


def test_jvp_uses_it_too():
    t = np.linspace(-1.0, 1.0, X.size)
    jv = adjit.jvp(each_function)
    out, tangent = jv(X, 0.7, t)
    assert _calls(jv.source, "vmath") == ["cos", "exp", "expm1", "log", "log1p", "sin", "tanh"]
    gx = adjit.grad(each_function)(X, 0.7)
    assert tangent == pytest.approx(np.dot(gx, t), rel=1e-13)
    # a loop that sums as it goes (the forward mode's fused np.sum) keeps the C library
    fused = adjit.jvp(tanh_layer)
    fused(X, 0.7, t)
    assert _calls(fused.source, "vmath") == []


def _loop(text):
    return ast.parse(text).body[0]


@pytest.mark.parametrize("text, expected", [
    ("for i in range(n):\n    y[i] = math.exp(x[i])", True),
    ("for i in range(n):\n    t = x[i] * 2.0\n    y[i] = math.tanh(t) if t > 0.0 else t", True),
    ("for i in range(n):\n    t = x[i]\n    g = a * t\n    g += b * math.cos(t)\n    y[i] = g",
     True),
    ("for i in range(n):\n    s += math.exp(x[i])", False),                # a carried sum
    ("for i in range(n):\n    s = s + math.exp(x[i])", False),
    ("for i in range(n):\n    y[i] = math.exp(t)\n    t = x[i]", False),   # t from before
    ("for i in range(n):\n    y[i] = g_helper(x[i])", False),              # an opaque call
    ("for i in range(n):\n    y[i] = math.lgamma(x[i])", False),           # libm only
    ("for i in range(n):\n    y[i] = x[i] ** w", False),                   # pow of a variable
    ("for i in range(n):\n    y[i] = x[i] ** 2", True),
    ("for i in range(n):\n    y[i] = x[i // 2]", False),                   # checked division
    ("for i in range(n):\n    if x[i] > 0.0:\n        y[i] = x[i]", False),
    ("for i in range(n):\n    if _fn + 1 > _ftape.shape[0]:\n"
     "        _ftape = reserve_tape(_ftape, _fn + 1, room)\n"
     "    _ftape[_fn] = math.exp(x[i])\n    _fn += 1\n    y[i] = x[i]", True),
    ("for v in x:\n    y[0] = v", False),
])
def test_which_loops_count_as_vectorizable(text, expected):
    assert vectorizable(_loop(text), neutral={"_ftape", "_fn"}) is expected


def test_only_one_argument_calls_are_replaced():
    from adjit.codegen.vector_math import _replaceable
    ns = {"math": math, "np": np}
    assert _replaceable(ast.parse("y = math.log(x, 2.0)").body[0], ns) == []
    assert [c.func.attr for c, _ in _replaceable(ast.parse("y = math.log(x)").body[0], ns)] \
        == ["log"]
