"""Vector math in generated loops (grad(..., vector_math=True), the default): loops LLVM can
vectorize call adjit.runtime.vmath's exp, log, tanh, sin ... instead of the C library's;
every other loop, and every copy of a statement such a loop does not decide, keeps numba's
functions. Gradients are checked against finite differences of numba's own forward and
against the gradient with vector_math=False."""
import ast
import math
import re

import numba
import numpy as np
import pytest

import adjit
from adjit.analysis.vectorizable import vectorizable
from adjit.runtime import vec, vmath
from adjit.runtime.sums import sum_range, sum_range32

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
    """The functions of `module` the source calls; vmath's float64 functions by the name of
    the function that takes either precision (`exp64` as `exp`, `expm1_64` as `expm1`)."""
    return sorted({re.sub(r"_?64$", "", n.func.attr) if module == "vmath" else n.func.attr
                   for n in ast.walk(ast.parse(source))
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


def test_a_summing_loop_is_split_into_blocks_and_its_adjoint_loop_vectorizes():
    g = adjit.value_and_grad(summed_exponentials, argnums=(0, 1))
    g(X, 0.7)
    forward, backward = g.source.split("# backward sweep")
    # blocks of a map (exp into a buffer, vectorized) and the same sum in the same order
    code = "\n".join(ln for ln in forward.splitlines() if not ln.strip().startswith("#"))
    # (all of it float64: vmath's float64 function by name)
    assert "vmath.exp64(" in code and "vec.not_negative(" in code
    assert "math.exp(" not in code.replace("vmath.exp64(", "")
    for line in backward.splitlines():
        if "exp(" in line and not line.strip().startswith("#"):
            assert "vmath." in line, line
    off = adjit.value_and_grad(summed_exponentials, argnums=(0, 1), vector_math=False)
    off(X, 0.7)
    assert "not_negative" not in off.source


@numba.njit
def _exp_sum_reference(x, w, start):
    """summed_exponentials with vmath's exp, each block of 256 terms added by the runtime's
    sum_range (in vector lanes) and the blocks in order: the numbers a split loop must give
    to the bit."""
    s = 0.0
    buf = np.empty(256)
    n = x.shape[0]
    for k in range(start, n, 256):
        e = min(k + 256, n)
        for i in range(k, e):
            buf[i - k] = vmath.exp(w * x[i])
        s = s + sum_range(buf, 0, 1, e - k)
    return s


def log_likelihood(x, w):
    s = 0.0
    for i in range(1, x.shape[0]):
        s -= math.log(x[i] * w + 1.0) * x[i - 1]
    return s


@numba.njit
def _log_likelihood_reference(x, w):
    s = 0.0
    buf = np.empty(256)
    n = x.shape[0]
    for k in range(1, n, 256):
        e = min(k + 256, n)
        for i in range(k, e):
            buf[i - k] = vmath.log(x[i] * w + 1.0) * x[i - 1]
        s = s - sum_range(buf, 0, 1, e - k)
    return s


@pytest.mark.parametrize("n", [0, 1, 255, 256, 257, 1000])
def test_split_loops_give_the_same_numbers_at_every_block_edge(n):
    x = np.random.default_rng(n).uniform(0.1, 1.5, n)
    for loss, reference, start in ((summed_exponentials, _exp_sum_reference, 0),
                                   (log_likelihood, _log_likelihood_reference, 1)):
        vg = adjit.value_and_grad(loss, argnums=(0, 1))
        value, (gx, gw) = vg(x, 0.7)
        assert "not_negative" in vg.source
        expected = reference(x, 0.7, start) if start == 0 else reference(x, 0.7)
        assert value == expected                         # to the bit
        off, (ox, ow) = adjit.value_and_grad(loss, argnums=(0, 1), vector_math=False)(x, 0.7)
        assert value == pytest.approx(off, rel=1e-13, abs=1e-300)
        np.testing.assert_allclose(gx, ox, rtol=1e-13, atol=1e-300)
        assert gw == pytest.approx(ow, rel=1e-13, abs=1e-300)
        if 0 < n <= 257:
            compiled = numba.njit(loss)
            np.testing.assert_allclose(gx, fd_grad(compiled, (x, 0.7), 0), rtol=1e-6,
                                       atol=1e-8)
            assert gw == pytest.approx(fd_grad(compiled, (x, 0.7), 1), rel=1e-6, abs=1e-8)


def test_a_split_loop_with_no_derivative_through_it():
    # nothing recorded: its bound is used once, and folded into the split loop's own
    # statements (which then need source positions)
    def loss(x, w):
        total = 0.0
        for i in range(x.shape[0]):
            s = 0.0
            for j in range(i + 1):
                s += math.exp(x[j] * 0.5)
            total += s * s
        return w * total
    x = np.linspace(-1.0, 1.0, 300)
    vg = adjit.value_and_grad(loss, argnums=1)
    value, g = vg(x, 0.7)
    assert "not_negative" in vg.source
    assert value == pytest.approx(numba.njit(loss)(x, 0.7), rel=1e-14)
    assert g == pytest.approx(np.sum(np.cumsum(np.exp(x * 0.5)) ** 2), rel=1e-13)


def last_id(x, ids):
    q = 0.0
    s = 0.0
    c = 0
    for i in range(x.shape[0]):
        q = ids[i]
        s = s + math.exp(x[i])
        c = c + q
    return s + c % 1000 + 0.0 * q


def test_integers_kept_in_a_split_loop_are_exact():
    # q's kind is float (q = 0.0 before the loop) but numba types the loop's q as an int64:
    # a float64 slot would round 2**53 + 1 to 2**53, and the integer sum would drift by 256
    x = np.zeros(256)
    ids = np.full(256, 2 ** 53 + 1, dtype=np.int64)
    vg = adjit.value_and_grad(last_id)
    value, g = vg(x, ids)
    assert "not_negative" in vg.source
    assert value == numba.njit(last_id)(x, ids) == 464.0
    np.testing.assert_array_equal(g, np.ones(256))
    out, tangent = adjit.jvp(last_id)(x, ids, np.ones(256))
    assert out == 464.0 and tangent == 256.0


def test_a_float32_summing_loop_stays_float32():
    def loss(x):
        s = np.float32(0.0)
        for i in range(x.shape[0]):
            s += math.exp(x[i] * np.float32(0.5))
        return s

    @numba.njit
    def reference(x):
        s = np.float32(0.0)
        buf = np.empty(256)
        n = x.shape[0]
        for k in range(0, n, 256):
            e = min(k + 256, n)
            for i in range(k, e):
                buf[i - k] = vmath.exp(x[i] * np.float32(0.5))
            s = s + sum_range32(buf, e - k)
        return s
    x = np.linspace(-2.0, 2.0, 700).astype(np.float32)
    vg = adjit.value_and_grad(loss)
    value, g = vg(x)
    assert "not_negative" in vg.source_for(x)
    assert value == reference(x)           # (numba returns a float32 result as a float)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 0.5 * np.exp(0.5 * x.astype(np.float64)), rtol=3e-6)


def test_a_loop_whose_map_reads_the_sum_is_not_split():
    def loss(x):
        s = 0.0
        for i in range(x.shape[0]):
            s = s + math.exp(x[i] - 0.1 * s)
        return s
    vg = adjit.value_and_grad(loss)
    value, g = vg(X)
    forward = vg.source.split("# backward sweep")[0]
    assert "not_negative" not in forward and "vmath" not in forward
    compiled = numba.njit(loss)
    assert value == compiled(X)
    np.testing.assert_allclose(g, fd_grad(compiled, (X,), 0), rtol=1e-6, atol=1e-8)


def test_a_split_time_loop_checkpointed_and_recorded_are_identical_to_the_bit():
    def rollout(u0, k):
        u = u0.copy()
        total = 0.0
        for _ in range(10):
            s = 0.0
            for i in range(u.shape[0]):
                s += math.exp(-k * u[i] * u[i])
            total += math.log(s)
            u = u + 0.05 * np.tanh(k * u)
        return total
    assert "not_negative" in _checkpointed_as_recorded(rollout, np.linspace(-1.0, 1.0, 300))


def rows_logsumexp(A, w):
    out = np.empty(A.shape[0])
    for r in numba.prange(A.shape[0]):
        s = 0.0
        for j in range(A.shape[1]):
            s += math.exp(A[r, j] * w)
        out[r] = math.log(s)
    return np.sum(out * out)


def test_split_loops_in_parallel_loops_have_a_buffer_per_thread():
    A = np.random.default_rng(1).normal(size=(64, 300))
    vg = adjit.value_and_grad(rows_logsumexp, argnums=(0, 1))
    value, (gA, gw) = vg(A, 0.7)
    # each buffer allocated inside the parallel loop's body, never shared between threads
    tree = ast.parse(vg.source)
    allocated = [n.targets[0].id for n in ast.walk(tree) if isinstance(n, ast.Assign)
                 and isinstance(n.targets[0], ast.Name) and n.targets[0].id.startswith("_vb")]
    inside = [n.targets[0].id for p in ast.walk(tree) if isinstance(p, ast.For)
              and "prange" in ast.unparse(p.iter) for n in ast.walk(p)
              if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name)
              and n.targets[0].id.startswith("_vb")]
    assert allocated and sorted(allocated) == sorted(inside)
    off, (oA, ow) = adjit.value_and_grad(rows_logsumexp, argnums=(0, 1),
                                         vector_math=False)(A, 0.7)
    assert value == pytest.approx(off, rel=1e-13)
    np.testing.assert_allclose(gA, oA, rtol=1e-12, atol=1e-15)
    assert gw == pytest.approx(ow, rel=1e-12)
    small = A[:3, :7].copy()
    compiled = numba.njit(rows_logsumexp)
    np.testing.assert_allclose(adjit.grad(rows_logsumexp)(small, 0.7),
                               fd_grad(compiled, (small, 0.7), 0), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("text, split", [
    ("for i in range(n):\n    t = math.exp(x[i])\n    s = s + t", ["t"]),
    ("for i in range(2, n):\n    t = math.exp(x[i])\n    s += t * x[i]", ["t"]),
    ("for i in range(n):\n    t = math.exp(x[i])\n    u = t * s\n    s = s + u", ["t"]),
    ("for i in range(n):\n    t = math.exp(x[i] - s)\n    s = s + t", None),   # map reads s
    ("for i in range(n):\n    t = math.exp(x[i])\n    y[i] = t\n    s = s + y[i]",
     None),                                          # the sum reads an array the loop writes
    ("for i in range(n):\n    t = math.exp(x[i])\n    y[i] = t\n    s = s + v[i + 1]",
     None),                                          # v might be y under another name
    ("for i in range(n):\n    t = math.exp(x[i])\n    _ftape[i] = t\n    s = s + t * v[i]",
     ["t"]),                                         # (the tape is no one's view)
    ("for i in range(n):\n    t = math.exp(x[i])\n    s = s + t\n    y[i] = s", None),
    ("for i in range(n):\n    k = j[i]\n    t = math.exp(x[k])\n    s = s + t * k",
     ["k", "t"]),                                    # an integer's bits kept too
    ("for i in range(n):\n    v = a[i]\n    t = math.exp(x[i])\n    s = s + t * v",
     None),                                          # v's kind unknown (an array row?)
    ("for i in range(m, n):\n    t = math.exp(x[i])\n    s = s + t", None),  # start unknown
    ("for i in range(n):\n    t = math.exp(x[i])\n    y[i] = t", None),      # a map already
    ("for i in range(n):\n    t = g_helper(x[i])\n    s = s + t", None),
])
def test_which_loops_split(text, split):
    from adjit.codegen.vector_math import _split_plan
    kinds = {"t": "float", "u": "float", "s": "float", "k": "int"}
    plan = _split_plan(_loop(text), frozenset({"_ftape"}), {"math": math, "np": np}, kinds)
    assert (plan and plan.buffered) == split


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
    _checkpointed_as_recorded(rollout, np.linspace(-1.0, 1.0, 33))


def _checkpointed_as_recorded(rollout, u0):
    """rollout(u0, 0.8)'s gradient checkpointed ("auto", every 3 steps) identical to the bit
    to the recorded one, which matches finite differences; the recorded one's source."""
    rec = adjit.value_and_grad(rollout, argnums=(0, 1), checkpoint=False)
    out = rec(u0, 0.8)
    for checkpoint in ("auto", 3):
        ck = adjit.value_and_grad(rollout, argnums=(0, 1), checkpoint=checkpoint)(u0, 0.8)
        assert ck[0] == out[0]
        assert np.array_equal(ck[1][0], out[1][0]) and ck[1][1] == out[1][1]
    compiled = numba.njit(rollout)
    np.testing.assert_allclose(out[1][0], fd_grad(compiled, (u0, 0.8), 0), rtol=1e-6,
                               atol=1e-8)
    return rec.source


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
    # a loop that sums as it goes (the forward mode's fused np.sum) is split into blocks,
    # values and tangents kept in buffers
    fused = adjit.jvp(tanh_layer, argnums=(0, 1))
    x = np.linspace(-1.0, 1.0, 700)
    out, tangent = fused(x, 0.7, (x, 0.5))
    assert _calls(fused.source, "vmath") == ["exp", "tanh"] or \
        _calls(fused.source, "vmath") == ["tanh"]
    assert "not_negative" in fused.source
    plain = adjit.jvp(tanh_layer, argnums=(0, 1), vector_math=False)(x, 0.7, (x, 0.5))
    assert out == pytest.approx(plain[0], rel=1e-14)
    assert tangent == pytest.approx(plain[1], rel=1e-13)
    gx, gw = adjit.grad(tanh_layer, argnums=(0, 1))(x, 0.7)
    assert tangent == pytest.approx(np.dot(gx, x) + 0.5 * gw, rel=1e-12)


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
    # a sum the backward sweep adds in any order (reverse/accumulators.py) is a reduction
    ("for i in range(n):\n    s = add_any_order(s, math.exp(x[i]))\n    y[i] += x[i]", True),
    ("for i in range(n):\n    t = math.exp(x[i])\n    s = add_any_order(s, -(t * w))\n"
     "    y[i] += t", True),
    ("for i in range(n):\n    s = add_any_order(s, x[i])\n    y[i] = s", False),  # read
    ("for i in range(n):\n    s = add_any_order(s, x[i])\n    s = add_any_order(s, w)",
     False),
    ("for i in range(n):\n    s = add_any_order(s, s * x[i])", False),
    ("for i in range(n):\n    s = add_any_order(t, x[i])", False),
    ("for i in range(n):\n    s = add_any_order(s, g_helper(x[i]))", False),
])
def test_which_loops_count_as_vectorizable(text, expected):
    assert vectorizable(_loop(text), neutral={"_ftape", "_fn"}) is expected


def test_only_one_argument_calls_are_replaced():
    from adjit.codegen.vector_math import _replaceable
    ns = {"math": math, "np": np}
    assert _replaceable(ast.parse("y = math.log(x, 2.0)").body[0], ns) == []
    assert [c.func.attr for c, _ in _replaceable(ast.parse("y = math.log(x)").body[0], ns)] \
        == ["log"]


G32 = np.linspace(0.5, 1.5, 300).astype(np.float32)


def _reads_a_float32_global(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += math.exp(x[i] * G32[i])
    return s


def _casts_to_float32(x):
    y = np.empty_like(x)
    for i in range(x.shape[0]):
        y[i] = math.tanh(np.float32(x[i]))
    return np.sum(y * x)


def test_float64_programs_call_the_float64_functions_by_name():
    """Where every float is a float64, generated loops call vmath.exp64 (typed as any call);
    a float32 argument, a float32 global the code reads, or a float32 spelled in the code
    keeps vmath.exp, which picks the precision by the argument's type. The same numbers."""
    x = np.linspace(-1.0, 1.0, 300)
    g = adjit.grad(tanh_layer)
    g(x, 0.7)
    assert "vmath.tanh64(" in g.source and "vmath.tanh(" not in g.source
    g32 = adjit.grad(tanh_layer)
    g32(x.astype(np.float32), np.float32(0.7))
    assert "vmath.tanh(" in g32.source_for(x.astype(np.float32), np.float32(0.7))
    g64 = G32.astype(np.float64)
    analytic = {_reads_a_float32_global: g64 * np.exp(x * g64),     # d/dx of sum exp(x g)
                _casts_to_float32: np.tanh(x) + x * (1.0 - np.tanh(x) ** 2)}
    for f, expected in analytic.items():
        vg = adjit.value_and_grad(f)
        value, grad = vg(x)
        assert "vmath." in vg.source and not re.search(r"vmath\.\w+64\(", vg.source), \
            vg.source
        assert value == pytest.approx(numba.njit(f)(x), rel=1e-6)
        np.testing.assert_allclose(grad, expected, rtol=1e-5, atol=1e-6)


@numba.njit
def _slots_compiled(i, b, f32, f64, n):
    return (vec.not_negative(n), vec.not_negative(np.uint64(n)),
            vec.from_slot(i, vec.to_slot(i)), vec.to_slot(i),
            vec.from_slot(b, vec.to_slot(b)), vec.to_slot(b),
            vec.from_slot(f32, vec.to_slot(f32)), vec.to_slot(f32),
            vec.from_slot(f64, vec.to_slot(f64)), vec.to_slot(f64))


@pytest.mark.parametrize("i, b, f32, f64, n", [
    (np.int32(-7), True, np.float32(0.1), -0.0, 5),
    (np.int64(-2**62 + 3), False, np.float32(np.inf), 1e-310, 0),
    (np.uint64(2**64 - 1), np.bool_(True), np.float32(-3e-39), np.nan, 2**40),
    (np.int8(-128), np.bool_(False), np.float32(np.nan), -np.inf, 1)])
def test_block_buffer_slots_compiled_as_in_python(i, b, f32, f64, n):
    """The buffers of loops split into blocks hold any number exactly (vec.to_slot: a float's
    value, an integer's bits) and give it back in its own type (vec.from_slot); numba lowers
    them, and vec.not_negative, to LLVM instructions: compiled as the Python functions are,
    to the bit (NaN and signed zeros included), in the argument's own type."""
    got = _slots_compiled(i, b, f32, f64, n)
    want = _slots_compiled.py_func(i, b, f32, f64, n)
    for g, w in zip(got, want):       # (numba returns its scalars as Python ints and floats)
        w = np.asarray(w)
        assert np.asarray(g, dtype=w.dtype).tobytes() == w.tobytes(), (g, w)
    assert got[2] == i and got[4] == b
    t = numba.typeof
    args = tuple(t(a) for a in (i, b, f32, f64, n))
    returned = _slots_compiled.overloads[args].signature.return_type
    assert tuple(returned) == (numba.int64, numba.uint64, t(i), numba.float64, numba.boolean,
                               numba.float64, numba.float32, numba.float64, numba.float64,
                               numba.float64)


def row_normalized_softplus(W, X):
    """A layer norm then softplus, as numpy code writes it: the backward sweep sums each
    row's adjoint of the scale in any order (add_any_order) in the loop that computes the
    softplus's exp again."""
    Z = X @ W
    mu = np.sum(Z, axis=1) / Z.shape[1]
    C = Z - mu[:, None]
    var = np.sum(C * C, axis=1) / Z.shape[1]
    Y = C / np.sqrt(var + 1e-5)[:, None]
    return np.sum(np.log1p(np.exp(Y)))


def test_a_loop_summing_in_any_order_uses_vector_math():
    rng = np.random.default_rng(11)
    W, X = rng.normal(size=(6, 5)) * 0.3, rng.normal(size=(7, 6))
    g = adjit.grad(row_normalized_softplus)
    gw = g(W, X)
    loops = [n for n in ast.walk(ast.parse(g.source)) if isinstance(n, ast.For)
             and "add_any_order" in ast.unparse(n) and "exp" in ast.unparse(n)]
    assert loops and all("vmath.exp" in ast.unparse(n) and "math.exp(" not in
                         ast.unparse(n).replace("vmath.exp", "") for n in loops)
    plain = adjit.grad(row_normalized_softplus, vector_math=False)(W, X)
    assert "vmath" not in adjit.grad(row_normalized_softplus, vector_math=False).source_for(
        W, X)
    np.testing.assert_allclose(gw, plain, rtol=1e-13, atol=1e-15)
    fd = fd_grad(numba.njit(row_normalized_softplus), (W, X), 0)
    np.testing.assert_allclose(gw, fd, rtol=1e-6, atol=1e-8)
