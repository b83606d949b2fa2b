"""Vectorized numpy (adjit/normalize/vectorize.py), vjp and jvp.

Every elementwise rule, broadcasting of every binary operation, reductions with and without
an axis (np.max/np.min ties split equally), matrix products, transposes, reshapes, slicing,
slice assignment and array construction are checked at hypothesis-chosen shapes and values
against 4th-order central finite differences and, where the derivative has a closed form,
against it. vjp and jvp are checked against each other with the adjoint dot-product test
<vjp(x, u), v> == <u, jvp(x, v)>. Every call also checks that no argument (the cotangent and
the tangents included) was written.

numba compilation dominates the runtime: the compiled vjp/jvp/grad objects live in one
module-level dict keyed by (kind, function, argnums), so every hypothesis example with the
same argument types (dtype and ndim; sizes are free) reuses one specialization.
A new elementwise rule gets the whole harness by adding one row to UNARY or BINARY.
"""
import os

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import adjit

import fd as _fd

# ------------------------------------------------------------------------------------------
# shared compiled objects, argument-mutation check, oracles
# ------------------------------------------------------------------------------------------
# Each distinct (function, argument types) costs a numba compilation of ~0.3-2 s, and the full
# matrix below needs ~190 of them (~2 min on a 2-core machine). The cases marked extended()
# repeat op-independent machinery already run with other ops/axes (rank promotion, axis
# normalization, np.dot next to @, more slicing programs); they run by default, and
# ADJIT_VEC_FULL=0 skips them for a quick local run.
FULL = os.environ.get("ADJIT_VEC_FULL", "1") not in ("", "0")


def extended(*values, id=None):
    """A parameter set that ADJIT_VEC_FULL=0 skips (a quick local run)."""
    return pytest.param(*values, id=id, marks=pytest.mark.skipif(
        not FULL, reason="extended matrix skipped by ADJIT_VEC_FULL=0"))


_COMPILED = {}


def compiled(kind, f, argnums=0):
    """The adjit `kind` ("grad", "vjp", "jvp", "value_and_grad") of f, built once."""
    key = (kind, f, argnums)
    g = _COMPILED.get(key)
    if g is None:
        g = _COMPILED[key] = getattr(adjit, kind)(f, argnums=argnums)
    return g


def _snapshot(v):
    if isinstance(v, (tuple, list)):
        return tuple(_snapshot(e) for e in v)
    if isinstance(v, np.ndarray):
        return v.copy()
    return v


def _unchanged(before, after):
    if isinstance(before, tuple):
        return len(before) == len(after) and all(map(_unchanged, before, after))
    if isinstance(before, np.ndarray):
        return (isinstance(after, np.ndarray) and before.shape == after.shape
                and before.dtype == after.dtype
                and np.array_equal(before, after, equal_nan=True))
    return before == after or (before != before and after != after)


def call(kind, f, *args, argnums=0):
    """Call the compiled `kind` of f on args; no argument may be written by it."""
    g = compiled(kind, f, argnums)
    before = _snapshot(args)
    result = g(*args)
    assert _unchanged(before, args), f"{kind}({f.__name__}) wrote into an argument"
    return result


H = 1e-4


def fd_grad(f, args, k):
    """d f / d args[k] by fourth-order central differences (tests/fd.py) with h = 1e-4,
    args[k] taken in float64."""
    return _fd.fd_grad(f, args, k, H, order=4, dtype=np.float64)


def fd_vjp(f, args, k, u):
    """u^T J with respect to args[k], by finite differences of <u, f>."""
    return fd_grad(lambda *a: np.sum(u * np.asarray(f(*a))), args, k)


def fd_jvp(f, args, argnums, tangents):
    """J t: the derivative of f along the tangents of the argnums arguments."""
    return _fd.fd_jvp(f, args, argnums, tangents, H, order=4)


def _mag(*arrays):
    return max([float(np.max(np.abs(a), initial=0.0)) for a in arrays] + [0.0])


def assert_fd(got, expected, scale=0.0, what=""):
    """Against finite differences: relative 1e-6, absolute floor 1e-8 of the magnitudes
    involved (`scale`: the size of the function's terms, which sets the FD rounding)."""
    assert np.shape(got) == np.shape(expected), (what, np.shape(got), np.shape(expected))
    atol = 1e-8 * (1.0 + scale + _mag(expected))
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=atol, err_msg=what)


def assert_exact(got, expected, what="", rtol=1e-10):
    """Against a closed form (or numpy itself): relative 1e-10."""
    assert np.shape(got) == np.shape(expected), (what, np.shape(got), np.shape(expected))
    atol = 1e-13 * (1.0 + _mag(expected))
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, err_msg=what)


def assert_like(grad, arg, what=""):
    """A gradient/tangent has its argument's shape and is float64 (a float for a float)."""
    if np.ndim(arg) == 0:
        assert isinstance(grad, float), (what, type(grad))
    else:
        assert isinstance(grad, np.ndarray), (what, type(grad))
        assert grad.shape == np.shape(arg), (what, grad.shape, np.shape(arg))
        assert grad.dtype == np.float64, (what, grad.dtype)


def unbroadcast(g, shape):
    """Sum a broadcast-shaped adjoint back to an operand's shape."""
    g = np.asarray(g, dtype=np.float64)
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    for i, n in enumerate(shape):
        if n == 1 and g.shape[i] != 1:
            g = g.sum(axis=i, keepdims=True)
    return float(g) if shape == () else g


SEEDS = st.integers(0, 2 ** 32 - 1)
VECTORS = st.tuples(st.integers(1, 5))
MATRICES = st.tuples(st.integers(1, 3), st.integers(1, 4))
SHAPES = st.one_of(VECTORS, MATRICES)


def smooth(lo, hi):
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False)


def _away_from(lo, hi):
    """Floats in [-hi, -lo] or [lo, hi]: away from 0 (a branch cut or a pole)."""
    return st.one_of(smooth(lo, hi), smooth(-hi, -lo))


# Non-smooth ops (abs, sign, floor, clip, where, maximum, minimum) are evaluated on a lattice
# that stays >= 0.05 away from every kink used below, so central differences are valid.
KINK = st.integers(-12, 12).map(lambda n: 0.25 * n + 0.1)
LATTICE_A = st.integers(-12, 12).map(lambda n: 0.25 * n)
LATTICE_B = st.integers(-12, 12).map(lambda n: 0.25 * n + 0.1)      # never equal to an A


def draw_array(data, shape, elements, label):
    if shape == ():
        return float(data.draw(elements, label=label))
    return data.draw(hnp.arrays(np.float64, shape, elements=elements), label=label)


def random_like(rng, shape):
    if shape == ():
        return float(rng.uniform(-2.0, 2.0))
    return rng.uniform(-2.0, 2.0, size=shape)


def capped(n):
    """The active profile's example count, at most n (for the widely parametrized tests)."""
    return settings(max_examples=min(settings().max_examples, n))


# ------------------------------------------------------------------------------------------
# 1. elementwise unary rules: vjp against closed form and FD, jvp against closed form
# ------------------------------------------------------------------------------------------
def e_exp(x): return np.exp(x)  # noqa: E704
def e_log(x): return np.log(x)  # noqa: E704
def e_log1p(x): return np.log1p(x)  # noqa: E704
def e_expm1(x): return np.expm1(x)  # noqa: E704
def e_sin(x): return np.sin(x)  # noqa: E704
def e_cos(x): return np.cos(x)  # noqa: E704
def e_tan(x): return np.tan(x)  # noqa: E704
def e_tanh(x): return np.tanh(x)  # noqa: E704
def e_sinh(x): return np.sinh(x)  # noqa: E704
def e_cosh(x): return np.cosh(x)  # noqa: E704
def e_arcsin(x): return np.arcsin(x)  # noqa: E704
def e_arccos(x): return np.arccos(x)  # noqa: E704
def e_arctan(x): return np.arctan(x)  # noqa: E704
def e_sqrt(x): return np.sqrt(x)  # noqa: E704
def e_abs(x): return np.abs(x)  # noqa: E704
def e_square(x): return np.square(x)  # noqa: E704
def e_sign(x): return np.sign(x)  # noqa: E704
def e_floor(x): return np.floor(x)  # noqa: E704
def e_power3(x): return np.power(x, 3.0)  # noqa: E704
def e_pow2(x): return x ** 2  # noqa: E704
def e_pow3(x): return x ** 3  # noqa: E704
def e_pow_half(x): return x ** 0.5  # noqa: E704
def e_pow_neg(x): return x ** -1.5  # noqa: E704
def e_neg(x): return 2.0 - x  # noqa: E704
def e_clip(x): return np.clip(x, -0.5, 0.7)  # noqa: E704
def e_where(x): return np.where(x > 0.0, x * x, -3.0 * x)  # noqa: E704


UNARY = [
    (e_exp, smooth(-3, 3), np.exp),
    (e_log, smooth(0.1, 5), lambda x: 1 / x),
    (e_log1p, smooth(-0.8, 5), lambda x: 1 / (1 + x)),
    (e_expm1, smooth(-3, 3), np.exp),
    (e_sin, smooth(-3, 3), np.cos),
    (e_cos, smooth(-3, 3), lambda x: -np.sin(x)),
    (e_tan, smooth(-1.3, 1.3), lambda x: 1 / np.cos(x) ** 2),
    (e_tanh, smooth(-3, 3), lambda x: 1 / np.cosh(x) ** 2),
    (e_sinh, smooth(-3, 3), np.cosh),
    (e_cosh, smooth(-3, 3), np.sinh),
    (e_arcsin, smooth(-0.9, 0.9), lambda x: 1 / np.sqrt(1 - x * x)),
    (e_arccos, smooth(-0.9, 0.9), lambda x: -1 / np.sqrt(1 - x * x)),
    (e_arctan, smooth(-5, 5), lambda x: 1 / (1 + x * x)),
    (e_sqrt, smooth(0.1, 5), lambda x: 0.5 / np.sqrt(x)),
    (e_abs, KINK, np.sign),
    (e_square, smooth(-3, 3), lambda x: 2 * x),
    (e_sign, KINK, np.zeros_like),
    (e_floor, KINK, np.zeros_like),
    (e_power3, smooth(-2, 2), lambda x: 3 * x * x),
    (e_pow2, smooth(-3, 3), lambda x: 2 * x),
    (e_pow3, smooth(-2, 2), lambda x: 3 * x * x),
    (e_pow_half, smooth(0.1, 5), lambda x: 0.5 * x ** -0.5),
    (e_pow_neg, smooth(0.3, 3), lambda x: -1.5 * x ** -2.5),
    (e_neg, smooth(-3, 3), lambda x: -np.ones_like(x)),
    (e_clip, KINK, lambda x: ((x > -0.5) & (x < 0.7)).astype(float)),
    (e_where, KINK, lambda x: np.where(x > 0, 2 * x, -3.0)),
]


# x ** 3 lowers like x ** 2, x ** -1.5 like x ** 0.5, 2.0 - x is the scalar-first subtraction
@pytest.mark.parametrize("f, elements, dfdx", [
    extended(*c, id=c[0].__name__) if c[0] in (e_pow3, e_pow_neg, e_neg)
    else pytest.param(*c, id=c[0].__name__) for c in UNARY])
@given(data=st.data())
def test_elementwise_unary(f, elements, dfdx, data):
    """Each rule on 1-D arrays (one compilation per rule and mode: 2-D vjps compile ~2x
    slower); 2-D elementwise loops are covered by test_elementwise_2d and the broadcasting
    tests."""
    shape = data.draw(VECTORS, label="shape")
    x = draw_array(data, shape, elements, "x")
    rng = np.random.default_rng(data.draw(SEEDS, label="seed"))
    u, t = random_like(rng, shape), random_like(rng, shape)
    y = f(x)

    out, gx = call("vjp", f, x, u)
    assert_exact(out, y, "value")
    assert_like(gx, x)
    assert_exact(gx, u * dfdx(x), "vjp vs closed form")
    assert_fd(gx, fd_vjp(f, (x,), 0, u), scale=_mag(u * y) * u.size, what="vjp vs FD")

    out, tx = call("jvp", f, x, t)
    assert_exact(out, y, "value")
    assert_like(tx, x)
    assert_exact(tx, t * dfdx(x), "jvp vs closed form")


def ew_2d(X):
    return np.exp(np.sin(X)) * np.tanh(X) + np.sqrt(X * X + 1.0) - np.log1p(X * X) * np.arctan(X)


def ew_2d_vjp(X, U):
    inner = np.exp(np.sin(X))
    d = inner * np.cos(X) * np.tanh(X) + inner / np.cosh(X) ** 2 + X / np.sqrt(X * X + 1.0) \
        - 2 * X / (1 + X * X) * np.arctan(X) - np.log1p(X * X) / (1 + X * X)
    return U * d


@given(data=st.data())
def test_elementwise_2d(data):
    shape = data.draw(MATRICES, label="shape")
    X = draw_array(data, shape, smooth(-3, 3), "X")
    rng = np.random.default_rng(data.draw(SEEDS, label="seed"))
    U = rng.normal(size=shape)
    out, gX = call("vjp", ew_2d, X, U)
    assert_exact(out, ew_2d(X), "value")
    assert_exact(gX, ew_2d_vjp(X, U), "vjp vs closed form")
    assert_fd(gX, fd_vjp(ew_2d, (X,), 0, U), scale=_mag(U * ew_2d(X)) * U.size)


def scalar_mix(x, y):
    """numpy functions of plain floats (0-d): every unary rule once, plus the binary ones."""
    a = np.exp(x) * np.sin(y) + np.log(x) * np.cos(x) + np.tan(0.3 * y) + np.tanh(x * y)
    b = np.sinh(y) - np.cosh(0.5 * x) + np.arcsin(0.3 * x) + np.arccos(0.2 * y)
    c = np.arctan(x - y) + np.sqrt(x + y) + np.abs(x - 2.0 * y) + np.square(y) * np.sign(x)
    d = np.log1p(x) * np.expm1(y) + np.arctan2(x, y) + np.power(x, y) + x ** y
    e = np.maximum(x, 2.0 * y) + np.minimum(x, 2.0 * y) + np.clip(x * y, 0.1, 0.4)
    return a + b + c + d + e + np.where(x > y, x * y, x + y) + np.floor(x) * y


@given(x=smooth(0.5, 1.5), y=smooth(0.2, 1.0))
def test_numpy_functions_of_plain_floats(x, y):
    # keep away from the kinks of abs/maximum/minimum/clip/where/floor (x vs 2y, xy vs
    # 0.1/0.4, x vs y, x vs 1)
    nudge = [abs(x - 2 * y), abs(x * y - 0.1), abs(x * y - 0.4), abs(x - y), abs(x - 1.0)]
    assume(min(nudge) > 1e-2)
    gx, gy = call("grad", scalar_mix, x, y, argnums=(0, 1))
    assert isinstance(gx, float) and isinstance(gy, float)
    assert_fd(gx, fd_grad(scalar_mix, (x, y), 0), scale=50.0, what="d/dx")
    assert_fd(gy, fd_grad(scalar_mix, (x, y), 1), scale=50.0, what="d/dy")


# ------------------------------------------------------------------------------------------
# 2. binary operations with broadcasting: both operands' gradients, own shapes
# ------------------------------------------------------------------------------------------
def b_add(a, b): return a + b  # noqa: E704
def b_sub(a, b): return a - b  # noqa: E704
def b_mul(a, b): return a * b  # noqa: E704
def b_div(a, b): return a / b  # noqa: E704
def b_pow(a, b): return a ** b  # noqa: E704
def b_power(a, b): return np.power(a, b)  # noqa: E704
def b_arctan2(a, b): return np.arctan2(a, b)  # noqa: E704
def b_maximum(a, b): return np.maximum(a, b)  # noqa: E704
def b_minimum(a, b): return np.minimum(a, b)  # noqa: E704


# The gradients are taken of <w, op(a, b)> with random weights w of the broadcast shape (the
# cotangent): grad of a weighted sum compiles about twice as fast as vjp of op itself.
def w_add(a, b, w): return np.sum(w * b_add(a, b))  # noqa: E704
def w_sub(a, b, w): return np.sum(w * b_sub(a, b))  # noqa: E704
def w_mul(a, b, w): return np.sum(w * b_mul(a, b))  # noqa: E704
def w_div(a, b, w): return np.sum(w * b_div(a, b))  # noqa: E704
def w_pow(a, b, w): return np.sum(w * b_pow(a, b))  # noqa: E704
def w_power(a, b, w): return np.sum(w * b_power(a, b))  # noqa: E704
def w_arctan2(a, b, w): return np.sum(w * b_arctan2(a, b))  # noqa: E704
def w_maximum(a, b, w): return np.sum(w * b_maximum(a, b))  # noqa: E704
def w_minimum(a, b, w): return np.sum(w * b_minimum(a, b))  # noqa: E704


def _ones(a, b):
    return np.ones(np.broadcast(a, b).shape)


BINARY = [
    (b_add, w_add, smooth(-3, 3), smooth(-3, 3), _ones, _ones),
    (b_sub, w_sub, smooth(-3, 3), smooth(-3, 3), _ones, lambda a, b: -_ones(a, b)),
    (b_mul, w_mul, smooth(-3, 3), smooth(-3, 3), lambda a, b: b * _ones(a, b),
     lambda a, b: a * _ones(a, b)),
    (b_div, w_div, smooth(-3, 3), _away_from(0.5, 3), lambda a, b: 1 / b * _ones(a, b),
     lambda a, b: -a / (b * b)),
    (b_pow, w_pow, smooth(0.5, 2.5), smooth(-2, 2.5), lambda a, b: b * a ** (b - 1),
     lambda a, b: np.log(a) * a ** b),
    (b_power, w_power, smooth(0.5, 2.5), smooth(-2, 2.5), lambda a, b: b * a ** (b - 1),
     lambda a, b: np.log(a) * a ** b),
    (b_arctan2, w_arctan2, _away_from(0.2, 3), smooth(-3, 3), lambda a, b: b / (a * a + b * b),
     lambda a, b: -a / (a * a + b * b)),
    (b_maximum, w_maximum, LATTICE_A, LATTICE_B, lambda a, b: (a > b) * 1.0,
     lambda a, b: (b > a) * 1.0),
    (b_minimum, w_minimum, LATTICE_A, LATTICE_B, lambda a, b: (a < b) * 1.0,
     lambda a, b: (b < a) * 1.0),
]

# Every op at the four broadcasting patterns (three argument-type signatures: three
# compilations per op); scalar-first for the ops not symmetric in their operands (constant
# op array: 1.0 / x, 2.0 ** x, np.arctan2(1.5, x)); row-first for two of them.
# By default rank promotion ((3,4) with (4,)) runs for four ops and array-with-scalar for
# five (the other ops at those patterns are extended: the op-specific derivative is the same
# code as at the 2-D patterns, and the broadcasting is op-independent).
BROADCAST_SHAPES = [((3,), ()), ((3, 1), (1, 4)), ((3, 4), (3, 1)), ((3, 4), (4,))]
_ASYMMETRIC = (b_sub, b_div, b_pow, b_arctan2)


def _binary_cases():
    for case in BINARY:
        f = case[0]
        for sa, sb in BROADCAST_SHAPES + ([((), (3,))] if f in _ASYMMETRIC else []) + \
                ([((4,), (3, 4))] if f in (b_sub, b_div) else []):
            name = f"{f.__name__[2:]}-{sa}-{sb}"
            rank_promotion = len(sa) != len(sb) and () not in (sa, sb)
            if rank_promotion and (sa == (4,) or f not in (b_add, b_div, b_pow, b_arctan2)) \
                    or sb == () and f in (b_add, b_mul, b_power, b_minimum):
                yield extended(*case, (sa, sb), id=name)
            else:
                yield pytest.param(*case, (sa, sb), id=name)


BINARY_CASES = list(_binary_cases())


@pytest.mark.parametrize("f, weighted, ea, eb, da, db, shapes", BINARY_CASES)
@capped(15)
@given(data=st.data())
def test_binary_broadcasting(f, weighted, ea, eb, da, db, shapes, data):
    sa, sb = shapes
    a = draw_array(data, sa, ea, "a")
    b = draw_array(data, sb, eb, "b")
    rng = np.random.default_rng(data.draw(SEEDS, label="seed"))
    y = f(a, b)
    u = random_like(rng, np.shape(y))
    A, B = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(b, dtype=float))

    value, (ga, gb) = call("value_and_grad", weighted, a, b, u, argnums=(0, 1))
    assert_exact(value, np.sum(u * y), "value")
    assert_like(ga, a, "d/da")
    assert_like(gb, b, "d/db")
    assert_exact(ga, unbroadcast(u * da(A, B), sa), "d/da vs closed form")
    assert_exact(gb, unbroadcast(u * db(A, B), sb), "d/db vs closed form")
    scale = _mag(np.asarray(u) * y) * np.size(y)
    assert_fd(ga, fd_vjp(f, (a, b), 0, u), scale, "d/da vs FD")
    assert_fd(gb, fd_vjp(f, (a, b), 1, u), scale, "d/db vs FD")
    if len(sa) != 2 or len(sb) != 2 or (not FULL and f in (b_add, b_sub, b_mul, b_power)):
        return      # jvp: one compilation per op, at the 2-D/2-D signature
    ta, tb = random_like(rng, sa), random_like(rng, sb)
    out, ty = call("jvp", f, a, b, (ta, tb), argnums=(0, 1))
    assert_exact(out, y, "value")
    assert_exact(ty, da(A, B) * ta + db(A, B) * tb, "jvp vs closed form")


# ------------------------------------------------------------------------------------------
# 3. reductions, with and without an axis; max/min ties split equally
# ------------------------------------------------------------------------------------------
def r_sum(x): return np.sum(x)  # noqa: E704
def r_sum0(x): return x.sum(axis=0)  # noqa: E704
def r_sum1(x): return np.sum(x, axis=1)  # noqa: E704
def r_sum_1(x): return x.sum(axis=-1)  # noqa: E704
def r_mean(x): return x.mean()  # noqa: E704
def r_mean0(x): return np.mean(x, axis=0)  # noqa: E704
def r_mean1(x): return x.mean(axis=1)  # noqa: E704
def r_mean_1(x): return np.mean(x, axis=-1)  # noqa: E704
def r_prod(x): return np.prod(x)  # noqa: E704
def r_prod0(x): return x.prod(axis=0)  # noqa: E704
def r_prod1(x): return np.prod(x, axis=1)  # noqa: E704
def r_prod_1(x): return x.prod(axis=-1)  # noqa: E704
def r_max(x): return x.max()  # noqa: E704
def r_max0(x): return np.max(x, axis=0)  # noqa: E704
def r_max1(x): return x.max(axis=1)  # noqa: E704
def r_max_1(x): return np.max(x, axis=-1)  # noqa: E704
def r_min(x): return np.min(x)  # noqa: E704
def r_min0(x): return x.min(axis=0)  # noqa: E704
def r_min1(x): return np.min(x, axis=1)  # noqa: E704
def r_min_1(x): return x.min(axis=-1)  # noqa: E704
def r_npmax(x): return np.max(x)  # noqa: E704
def r_npmin(x): return np.min(x)  # noqa: E704
def r_norm(x): return np.linalg.norm(x)  # noqa: E704


REDUCTIONS = [
    (r_sum, "sum", None), (r_sum0, "sum", 0), (r_sum1, "sum", 1), (r_sum_1, "sum", -1),
    (r_mean, "mean", None), (r_mean0, "mean", 0), (r_mean1, "mean", 1), (r_mean_1, "mean", -1),
    (r_prod, "prod", None), (r_prod0, "prod", 0), (r_prod1, "prod", 1), (r_prod_1, "prod", -1),
    (r_max, "max", None), (r_max0, "max", 0), (r_max1, "max", 1), (r_max_1, "max", -1),
    (r_min, "min", None), (r_min0, "min", 0), (r_min1, "min", 1), (r_min_1, "min", -1),
]


def reduction_vjp(op, x, axis, u):
    """The closed-form u^T J of np.<op>(x, axis); max/min split among ties equally."""
    x = np.asarray(x, dtype=float)
    ue = np.asarray(u, dtype=float)
    if axis is not None:
        ue = np.expand_dims(ue, axis)
    if op == "sum":
        return np.broadcast_to(ue, x.shape).copy()
    if op == "mean":
        n = x.size if axis is None else x.shape[axis]
        return np.broadcast_to(ue / n, x.shape).copy()
    if op == "prod":
        return ue * np.prod(x, axis=axis, keepdims=True) / x
    best = getattr(np, op)(x, axis=axis, keepdims=True)
    hit = (x == best).astype(float)
    return ue * hit / np.sum(hit, axis=axis, keepdims=True)


# distinct values (no ties), never 0 (prod's closed form divides by x)
DISTINCT = st.integers(-30, 30).map(lambda n: 0.1 * n + 0.05)


# axis=-1 is normalized before lowering, independently of the op: sum and max by default;
# mean is sum / n: by default over everything only
_REDUCTION_CASES = [
    extended(*c, id=c[0].__name__) if (c[2] == -1 and c[1] not in ("sum", "max"))
    or (c[1] == "mean" and c[2] is not None) else pytest.param(*c, id=c[0].__name__)
    for c in REDUCTIONS]


@pytest.mark.parametrize("f, op, axis", _REDUCTION_CASES)
@capped(20)
@given(data=st.data())
def test_reduction(f, op, axis, data):
    """vjp on 2-D arrays at every axis (1-D reductions are in almost every other test, axis=-1
    of a 1-D array in TIES). jvp of max/min: test_max_min_ties_split_equally."""
    shape = data.draw(MATRICES, label="shape")
    x = data.draw(hnp.arrays(np.float64, shape, elements=DISTINCT, unique=True), label="x")
    rng = np.random.default_rng(data.draw(SEEDS, label="seed"))
    y = getattr(np, op)(x, axis=axis)
    if axis is None:
        y = float(y)
    u = random_like(rng, np.shape(y))

    out, gx = call("vjp", f, x, u)
    assert_exact(out, y, "value")
    if axis is None:
        assert isinstance(out, float)
    assert_like(gx, x)
    assert_exact(gx, reduction_vjp(op, x, axis, u), "vjp vs closed form")
    assert_fd(gx, fd_vjp(f, (x,), 0, u), scale=_mag(np.asarray(u) * y) * np.size(y))


TIES = [
    (r_npmax, [1.0, 3.0, 3.0], 1.0, [0.0, 0.5, 0.5]),
    (r_max, [2.0, 2.0, 2.0, 2.0], 1.0, [0.25] * 4),
    (r_npmin, [2.0, 1.0, 1.0, 1.0], 3.0, [0.0, 1.0, 1.0, 1.0]),
    (r_min, [[1.0, 0.0], [0.0, 4.0]], 1.0, [[0.0, 0.5], [0.5, 0.0]]),
    (r_max1, [[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]], [1.0, 2.0],
     [[0.0, 0.5, 0.5], [1.0, 1.0, 0.0]]),
    (r_max0, [[1.0, 3.0], [1.0, 2.0], [0.0, 3.0]], [1.0, -2.0],
     [[0.5, -1.0], [0.5, 0.0], [0.0, -1.0]]),
    (r_max_1, [[5.0, 5.0, 5.0], [1.0, 2.0, 3.0]], [3.0, 1.0],
     [[1.0, 1.0, 1.0], [0.0, 0.0, 1.0]]),
    (r_min0, [[1.0, 3.0], [1.0, 2.0], [4.0, 2.0]], [2.0, 1.0],
     [[1.0, 0.0], [1.0, 0.5], [0.0, 0.5]]),
    (r_min1, [[0.0, 0.0, 1.0, 0.0]], [3.0], [[1.0, 1.0, 0.0, 1.0]]),
    (r_min_1, [[7.0], [2.0]], [1.0, 1.0], [[1.0], [1.0]]),
    (r_sum_1, [3.0, 1.0, 1.0], 2.0, [2.0, 2.0, 2.0]),
    (r_min_1, [3.0, 1.0, 1.0], 2.0, [0.0, 1.0, 1.0]),
]


@pytest.mark.parametrize("f, x, u, expected", TIES,
                         ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(TIES)])
def test_max_min_ties_split_equally(f, x, u, expected):
    x = np.array(x)
    u = float(u) if np.ndim(u) == 0 else np.array(u)
    out, gx = call("vjp", f, x, u)
    np.testing.assert_array_equal(out, f(x))
    np.testing.assert_allclose(gx, np.array(expected), rtol=1e-15, atol=0)
    if f not in (r_npmax, r_max0, r_max1, r_min0):
        return      # jvp at ties: one compilation each for full, axis 0 and axis 1 reductions
    # jvp at the tie is the transpose of the same linear map: the mean of the tied tangents
    v = np.random.default_rng(7).uniform(-1, 1, x.shape)
    _, ty = call("jvp", f, x, v)
    assert_exact(np.sum(np.asarray(u) * ty), np.sum(gx * v), "<u, J v> vs <J^T u, v> at a tie")


def scalar_max(x):
    return np.max(x)


def test_grad_of_np_max_with_ties():
    np.testing.assert_array_equal(call("grad", scalar_max, np.array([1.0, 3.0, 3.0])),
                                  [0.0, 0.5, 0.5])
    np.testing.assert_array_equal(call("grad", scalar_max, np.array([[3.0, 1.0], [3.0, 3.0]])),
                                  np.array([[1, 0], [1, 1]]) / 3.0)


@given(data=st.data())
def test_norm(data):
    shape = data.draw(SHAPES, label="shape")
    x = data.draw(hnp.arrays(np.float64, shape, elements=_away_from(0.1, 3)), label="x")
    u = data.draw(smooth(-2, 2), label="u")
    out, gx = call("vjp", r_norm, x, u)
    n = np.linalg.norm(x)
    assert_exact(out, n, "value")
    assert_exact(gx, u * x / n, "vjp vs x/|x|")
    assert_fd(gx, fd_vjp(r_norm, (x,), 0, u), scale=abs(u) * n)


# ------------------------------------------------------------------------------------------
# 4. linear algebra: @ / np.dot in every shape combination, outer, .T, transpose, reshape
# ------------------------------------------------------------------------------------------
def la_matmul(a, b): return a @ b  # noqa: E704
def la_dot(a, b): return np.dot(a, b)  # noqa: E704
def la_outer(a, b): return np.outer(a, b)  # noqa: E704


def matmul_vjp(a, b, u):
    """Closed-form cotangents of a @ b for 1-D/2-D operands."""
    if a.ndim == 2 and b.ndim == 2:
        return u @ b.T, a.T @ u
    if a.ndim == 2:
        return np.outer(u, b), a.T @ u
    if b.ndim == 2:
        return b @ u, np.outer(a, u)
    return u * b, u * a


PRODUCT_SHAPES = {"mat-mat": lambda n, m, k: ((n, m), (m, k)),
                  "mat-vec": lambda n, m, k: ((n, m), (m,)),
                  "vec-mat": lambda n, m, k: ((m,), (m, k)),
                  "vec-vec": lambda n, m, k: ((m,), (m,))}


# np.dot lowers like @: by default it runs at mat-mat and vec-vec only
_PRODUCT_CASES = [pytest.param(la_matmul, c, id=f"matmul-{c}") for c in PRODUCT_SHAPES] + \
    [pytest.param(la_dot, c, id=f"dot-{c}") if c in ("mat-mat", "vec-vec")
     else extended(la_dot, c, id=f"dot-{c}") for c in PRODUCT_SHAPES]


@pytest.mark.parametrize("f, combo", _PRODUCT_CASES)
@capped(20)
@given(n=st.integers(1, 4), m=st.integers(1, 4), k=st.integers(1, 4), seed=SEEDS)
def test_matrix_products(f, combo, n, m, k, seed):
    rng = np.random.default_rng(seed)
    sa, sb = PRODUCT_SHAPES[combo](n, m, k)
    a, b = rng.normal(size=sa), rng.normal(size=sb)
    y = a @ b
    u = random_like(rng, np.shape(y))
    out, (ga, gb) = call("vjp", f, a, b, u, argnums=(0, 1))
    assert_exact(out, y, "value")
    ea, eb = matmul_vjp(a, b, np.asarray(u))
    assert_like(ga, a)
    assert_like(gb, b)
    assert_exact(ga, ea, "d/da vs closed form")
    assert_exact(gb, eb, "d/db vs closed form")
    scale = _mag(y) * np.size(y) * 2
    assert_fd(ga, fd_vjp(f, (a, b), 0, u), scale)
    assert_fd(gb, fd_vjp(f, (a, b), 1, u), scale)
    if f is la_matmul and (FULL or combo in ("mat-mat", "vec-vec")):
        ta, tb = rng.normal(size=sa), rng.normal(size=sb)
        out, ty = call("jvp", f, a, b, (ta, tb), argnums=(0, 1))
        assert_exact(ty, ta @ b + a @ tb, "jvp vs product rule")


def sum_matmul(A, B):
    return np.sum(A @ B)


def quadratic_form(A, x):
    return x @ A @ x


def gram_trace(X):
    G = X.T @ X
    s = 0.0
    for i in range(G.shape[0]):
        s += G[i, i]
    return s


@given(n=st.integers(1, 4), m=st.integers(1, 4), k=st.integers(1, 4), seed=SEEDS)
def test_linear_algebra_known_gradients(n, m, k, seed):
    rng = np.random.default_rng(seed)
    A, B = rng.normal(size=(n, m)), rng.normal(size=(m, k))
    gA, gB = call("grad", sum_matmul, A, B, argnums=(0, 1))
    assert_exact(gA, np.ones((n, k)) @ B.T, "d/dA sum(A@B) = ones @ B.T")
    assert_exact(gB, A.T @ np.ones((n, k)), "d/dB sum(A@B) = A.T @ ones")

    S, x = rng.normal(size=(m, m)), rng.normal(size=m)
    gS, gx = call("grad", quadratic_form, S, x, argnums=(0, 1))
    assert_exact(gS, np.outer(x, x), "d/dA x@A@x = x x^T")
    assert_exact(gx, (S + S.T) @ x, "d/dx x@A@x = (A + A^T) x")

    assert_exact(call("grad", gram_trace, A), 2 * A, "d/dX tr(X^T X) = 2X")


def sh_T(x): return x.T  # noqa: E704
def sh_transpose(x): return np.transpose(x)  # noqa: E704
def sh_reshape_swap(x): return x.reshape(x.shape[1], x.shape[0])  # noqa: E704
def sh_reshape_flat(x): return np.reshape(x, (x.shape[0] * x.shape[1],))  # noqa: E704
def sh_reshape_rows(x): return x.reshape((2, x.shape[0] // 2))  # noqa: E704
def sh_T_expr(x): return np.sin(x.T) * x.T + 1.0  # noqa: E704


SHAPE_OPS = [  # (f, input shape from (n, m), numpy of the cotangent u -> expected vjp)
    (sh_T, lambda n, m: (n, m), lambda x, u: u.T),
    (sh_transpose, lambda n, m: (n, m), lambda x, u: u.T),
    (sh_reshape_swap, lambda n, m: (n, m), lambda x, u: u.reshape(x.shape)),
    (sh_reshape_flat, lambda n, m: (n, m), lambda x, u: u.reshape(x.shape)),
    (sh_reshape_rows, lambda n, m: (2 * m,), lambda x, u: u.reshape(x.shape)),
    (sh_T_expr, lambda n, m: (n, m), lambda x, u: (u * (np.cos(x.T) * x.T + np.sin(x.T))).T),
]


@pytest.mark.parametrize("f, shape, expected", [
    pytest.param(*c, id=c[0].__name__) if c[0] in (sh_T, sh_transpose, sh_reshape_swap)
    else extended(*c, id=c[0].__name__) for c in SHAPE_OPS])
@capped(15)
@given(n=st.integers(1, 3), m=st.integers(1, 4), seed=SEEDS)
def test_transpose_and_reshape(f, shape, expected, n, m, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=shape(n, m))
    y = f(x)
    u = rng.normal(size=y.shape)
    out, gx = call("vjp", f, x, u)
    assert_exact(out, y, "value")
    assert_like(gx, x)
    assert_exact(gx, expected(x, u), "vjp vs closed form")
    assert_fd(gx, fd_vjp(f, (x,), 0, u), scale=_mag(u * y) * y.size)


@given(n=st.integers(1, 4), m=st.integers(1, 4), seed=SEEDS)
def test_outer(n, m, seed):
    rng = np.random.default_rng(seed)
    a, b, u = rng.normal(size=n), rng.normal(size=m), rng.normal(size=(n, m))
    out, (ga, gb) = call("vjp", la_outer, a, b, u, argnums=(0, 1))
    assert_exact(out, np.outer(a, b), "value")
    assert_exact(ga, u @ b, "d/da")
    assert_exact(gb, u.T @ a, "d/db")
    assert_fd(ga, fd_vjp(la_outer, (a, b), 0, u), _mag(u) * n * m * _mag(a) * _mag(b))
    ta, tb = rng.normal(size=n), rng.normal(size=m)
    _, ty = call("jvp", la_outer, a, b, (ta, tb), argnums=(0, 1))
    assert_exact(ty, np.outer(ta, b) + np.outer(a, tb), "jvp")


# ------------------------------------------------------------------------------------------
# 5. slicing, slice assignment, in-place updates, construction: value_and_grad against FD
# ------------------------------------------------------------------------------------------
def sl_shifted(x):
    d = x[1:] - x[:-1]
    return np.sum(d * d * x[1:])


def sl_steps(x):
    z = x[::-1]
    return np.sum(x[::2] * x[1::2]) + np.sum(np.sin(x[::3])) + np.sum(z * np.arange(6.0) * x) + \
        np.sum(x[6:]) + np.sum(x[2:2] * 3.0) + np.sum(x[4:0:-2] * x[0:2]) + z[0] * x[-1]


def sl_rows_cols(x, i, j):
    return np.sum(x[i, :] ** 2) + np.sum(np.sin(x[:, j]) * x[:, 0]) + \
        np.sum(x[1:3, 2] ** 2 + x[0, 1:3]) + x[2, 3] * np.sum(x[:, 1]) + \
        np.sum(x[-1, :] * x[:, -2].sum())


def sl_blocks(x, a, b):
    return np.sum(np.exp(x[a:b, 1:3])) + np.sum(x[0:2, a:b] ** 2 * x[1:3, 0:2])


def sl_new_axes(x):
    d = x[:, None] - x[None, :]
    return np.sum(d * d * np.exp(-d))


def sl_size_one(x):
    return np.sum(x[:, 0:1] * x) + np.sum(x[1:2, :] * np.sin(x))


def sl_assign(x):
    y = np.zeros(x.shape[0])
    y[1:-1] = x[2:] - 2.0 * x[1:-1] + x[:-2]
    y[0] = x[0] * x[1]
    y[4:] = x[0] * 3.0
    z = np.ones(x.shape[0])
    z[1:-1] += x[1:-1] * x[:-2]
    z[:2] += np.exp(x[:2])
    return np.sum(y * y * np.arange(6.0)) + np.sum(np.sin(y)) + np.sum(z ** 3)


def sl_assign_2d(x):
    y = np.zeros((3, 4))
    y[1:, :] = x[:-1, :] ** 2
    y[0, :] += x[2, :]
    y[:, 3] = np.cos(x[:, 0])
    return np.sum(y * y)


def sl_inplace(x):
    y = x * 2.0
    y += np.sin(y)
    y -= x
    y *= x
    y /= 2.0
    return np.sum(y)


def sl_loop_rows(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += np.sum(np.exp(x[i, :])) * np.sum(x[i, 1:])
    y = np.zeros((x.shape[0], x.shape[1]))
    for i in range(x.shape[0]):
        y[i, :] = x[i, :] * x[i, :].sum()
    return s + np.sum(y ** 2)


def sl_loop_accumulate(x):
    s = np.zeros(x.shape[1])
    for i in range(x.shape[0]):
        s += x[i, :] ** 2
    return np.sum(np.sqrt(s + 1.0))


def sl_loop_bounds(x, y):
    s = 0.0
    for i in range(x.shape[0] - 1):
        s += np.sum(x[i:i + 2] * y[i:i + 2]) ** 2
    z = np.zeros(x.shape[0] + 1)
    for i in range(x.shape[0]):
        z[i:i + 2] += x[i] * y[i]
    return s + np.sum(z ** 3)


def sl_inplace_broadcast(X, x):
    Y = X.copy()
    Y += x
    Y[1:, :] += x[None, :] * 2.0
    Y[:, 1:3] = X[:, 0:1] * x[1:3]
    return np.sum(Y * Y)


def sl_loop_same_slice(x):
    y = np.zeros(x.shape[0])
    for k in range(3):
        y[1:] = y[1:] + np.sin(x[:-1] * y[1:]) + x[:-1] * k
    return np.sum(y * y)


def sl_heat_loop(u0, alpha):
    u = u0.copy()
    for t in range(4):
        u[1:-1] = u[1:-1] + alpha * (u[2:] - 2.0 * u[1:-1] + u[:-2])
    return np.sum(u ** 2 * np.arange(6.0))


def sl_heat_step(u0, alpha):
    """One explicit step outside a loop: the right-hand side reads the target (u[:-2] is
    written one element earlier), so it must be computed before any store."""
    u = u0.copy()
    u[1:-1] = u[1:-1] + alpha * (u[2:] - 2.0 * u[1:-1] + u[:-2])
    return np.sum(u ** 2 * np.arange(6.0))


def sl_overlap_1d(x):
    """Right-hand sides that read the slice being written, shifted either way, reversed, and
    in a loop: numpy computes the whole right-hand side before storing."""
    y = x.copy()
    y[1:] = y[:-1]
    z = x * 1.0
    z[1:] += z[:-1]
    w = x.copy()
    w[:-1] = w[1:] * w[:-1]
    w[:] = w[::-1]
    v = x.copy()
    for k in range(3):
        v[1:] = v[:-1] * 0.5 + v[1:]
    c = np.arange(1.0, 6.0)
    return np.sum(y * c) + np.sum(z * z * c) + np.sum(w * w * c) + np.sum(v * v * c)


def sl_overlap_2d(X):
    Y = X.copy()
    Y[1:, :] = Y[:-1, :] * 2.0
    Y[:, 1:] += Y[:, :-1]
    Z = X[:, :3] * 1.0
    Z += Z.T
    Z[0, :] = Z[:, 0]
    return np.sum(Y * Y * np.arange(4.0)) + np.sum(Z * Z * np.arange(3.0))


def c_concatenate(a, b):
    return np.sum(np.concatenate((a, 2.0 * b)) ** 2 * np.arange(5.0)) + \
        np.sum(np.sin(np.concatenate((a, b, a))) * np.arange(7.0))


def c_stack(a, b):
    s = np.stack((a, b * b))
    return np.sum(s ** 3 * np.arange(3.0)) + np.sum(s[0, :] * s[1, :])


def c_array(x, y):
    v = np.array([x, y * y, 3.0, x * y])
    return np.sum(v * v * np.arange(4.0))


def c_full(x, s):
    y = np.full(x.shape, 2.0)
    return np.sum(np.full((3, 4), 2.0) * x ** 2) + np.sum(np.full((4,), s) * x[0, :]) + \
        np.sum(y * x * x)


def c_zeros_ones_empty(x):
    y = np.empty(x.shape[0])
    y[:] = np.exp(x)
    z = np.ones((2, x.shape[0]))
    z[0, :] = y
    z[1, :] *= x
    w = np.zeros((x.shape[0],))
    w += z[1, :]
    return np.sum(z ** 2) + np.sum(w * y)


def c_zeros_of_shape(x):
    y = np.zeros(x.shape)
    z = np.ones(x.shape)
    w = np.empty(x.shape)
    w[:, :] = x * 2.0
    for i in range(x.shape[0]):
        y[i, :] = x[i, :] * w[i, :].sum()
    return np.sum((y + x) ** 2 * z) + np.sum(w * x)


def c_ties_through_broadcast(x):
    o = np.ones(3)
    return np.sum(np.max(x[:, None] * o[None, :], axis=1) * np.arange(1.0, 5.0)) + \
        np.sum(np.min(x[:, None] + 0.0 * o, axis=1) ** 2)


def la_transposed_products(A, B):
    x = A[0, :]
    return np.sum(A @ B.T) + np.sum(A.T @ A[:, 0]) + np.sum(x @ B.T) + \
        np.sum((A * 2.0) @ np.sin(B.T)) + np.sum(np.outer(x[1:], x[::2]) ** 2) + \
        x[1:] @ x[:-1] + np.sum(np.tanh(A[0:2, 0:2] @ A[1:3, 2:4]))


def c_linspace_arange(x):
    return np.sum(np.linspace(0.0, 1.0, 5) * x ** 2 + np.arange(5) * x + np.arange(1.0, 6.0) / x)


def c_reshape_in_expr(x):
    y = x.reshape(2, 6)
    z = x.reshape(-1)
    return np.sum(y[0, :] * y[1, :]) + np.sum(x.reshape(12) ** 2 * np.arange(12.0)) + \
        np.sum(np.exp(z[::5]))


def c_where_broadcast(x, y):
    # the branches agree to the third derivative at the switch (x == y), so that the
    # fourth-order stencil (h = 1e-4) straddling it stays accurate
    z = np.where(x[:, None] > y, (x[:, None] - y) ** 4 + x[:, None] * y, x[:, None] * y)
    return np.sum(z * z) + np.sum(np.where(y > 0.0, y, -2.0 * y))


def _vec(n):
    return lambda rng: (rng.uniform(-1, 1, n),)


def _mat(rng):
    return (rng.uniform(-1, 1, (3, 4)),)


CONSTRUCTS = [  # (f, argnums, args from rng)
    (sl_shifted, 0, _vec(6)),
    (sl_steps, 0, _vec(6)),
    (sl_rows_cols, 0, lambda r: (r.uniform(-1, 1, (3, 4)), int(r.integers(0, 3)),
                                 int(r.integers(0, 4)))),
    (sl_blocks, 0, lambda r: (r.uniform(-1, 1, (3, 4)), 1, 3)),
    (sl_new_axes, 0, _vec(5)),
    (sl_size_one, 0, _mat),
    (sl_assign, 0, _vec(6)),
    (sl_assign_2d, 0, _mat),
    (sl_inplace, 0, _vec(5)),
    (sl_loop_rows, 0, _mat),
    (sl_loop_accumulate, 0, _mat),
    (sl_loop_same_slice, 0, _vec(5)),
    (sl_loop_bounds, (0, 1), lambda r: (r.uniform(-1, 1, 5), r.uniform(-1, 1, 5))),
    (sl_inplace_broadcast, (0, 1), lambda r: (r.uniform(-1, 1, (3, 4)), r.uniform(-1, 1, 4))),
    (sl_overlap_1d, 0, _vec(5)),
    (sl_overlap_2d, 0, _mat),
    (sl_heat_loop, (0, 1), lambda r: (r.uniform(-1, 1, 6), 0.2)),
    (sl_heat_step, (0, 1), lambda r: (r.uniform(-1, 1, 6), 0.2)),
    (c_concatenate, (0, 1), lambda r: (r.uniform(-1, 1, 2), r.uniform(-1, 1, 3))),
    (c_stack, (0, 1), lambda r: (r.uniform(-1, 1, 3), r.uniform(-1, 1, 3))),
    (c_array, (0, 1), lambda r: (float(r.uniform(-1, 1)), float(r.uniform(-1, 1)))),
    (c_full, (0, 1), lambda r: (r.uniform(-1, 1, (3, 4)), float(r.uniform(-1, 1)))),
    (c_zeros_ones_empty, 0, _vec(5)),
    (c_linspace_arange, 0, lambda r: (r.uniform(0.5, 2, 5),)),
    (c_reshape_in_expr, 0, _mat),
    (c_where_broadcast, (0, 1), lambda r: (r.uniform(-1, 1, 3), r.uniform(-1, 1, 4))),
    (c_zeros_of_shape, 0, _mat),
    (c_ties_through_broadcast, 0, _vec(4)),
    (la_transposed_products, (0, 1), lambda r: (r.uniform(-1, 1, (3, 4)),
                                                r.uniform(-1, 1, (2, 4)))),
]

def _check_construct(f, argnums, make, seed):
    args = make(np.random.default_rng(seed))
    value, g = call("value_and_grad", f, *args, argnums=argnums)
    assert value == pytest.approx(f(*args), rel=1e-12, abs=1e-12)
    nums = (argnums,) if isinstance(argnums, int) else argnums
    gs = (g,) if isinstance(argnums, int) else g
    for k, gk in zip(nums, gs):
        assert_like(gk, args[k], f"d/d arg {k}")
        assert_fd(gk, fd_grad(f, args, k), scale=abs(value) + 10.0, what=f"d/d arg {k}")


# variations of what the default set already runs: an op-independent pattern again, or the
# same construct in another context
_EXTENDED_CONSTRUCTS = (sl_shifted, sl_size_one, sl_loop_accumulate, sl_loop_same_slice,
                        sl_loop_bounds, sl_inplace_broadcast, sl_overlap_2d, sl_heat_step,
                        c_zeros_ones_empty, c_reshape_in_expr, c_where_broadcast,
                        c_ties_through_broadcast, la_transposed_products)


@pytest.mark.parametrize("f, argnums, make", [
    extended(*c, id=c[0].__name__) if c[0] in _EXTENDED_CONSTRUCTS
    else pytest.param(*c, id=c[0].__name__) for c in CONSTRUCTS])
@capped(10)
@given(seed=SEEDS)
def test_construct(f, argnums, make, seed):
    _check_construct(f, argnums, make, seed)


# ------------------------------------------------------------------------------------------
# 6. vjp and jvp: the adjoint dot-product test, jvp against FD, softmax's Jacobian
# ------------------------------------------------------------------------------------------
def softmax(x):
    e = np.exp(x - np.max(x))
    return e / np.sum(e)


def mlp_layer(W, x, b):
    return np.tanh(W @ x + b)


def stencil(x):
    return x[2:] - 2.0 * x[1:-1] + x[:-2]


def broadcast_2d(a, B):
    return np.exp(-B * a[:, None]) / (1.0 + a[:, None] ** 2) + np.sin(B) * B.sum(axis=0)


def logsumexp_rows(X):
    m = X.max(axis=1)
    return m + np.log(np.sum(np.exp(X - m[:, None]), axis=1))


ADJOINT_CASES = [  # (f, argnums, args from rng)
    (softmax, 0, lambda r: (r.normal(size=5),)),
    (mlp_layer, (0, 1, 2), lambda r: (r.normal(size=(3, 4)), r.normal(size=4),
                                      r.normal(size=3))),
    (stencil, 0, lambda r: (r.normal(size=7),)),
    (broadcast_2d, (0, 1), lambda r: (r.normal(size=3), r.normal(size=(3, 4)))),
    (logsumexp_rows, 0, lambda r: (r.normal(size=(3, 4)),)),
]


def _tuple(argnums, value):
    return (value,) if isinstance(argnums, int) else tuple(value)


@pytest.mark.parametrize("f, argnums, make", ADJOINT_CASES,
                         ids=[f"{c[0].__name__}-{c[1]}" for c in ADJOINT_CASES])
@capped(15)
@given(seed=SEEDS)
def test_adjoint_dot_product(f, argnums, make, seed):
    rng = np.random.default_rng(seed)
    args = make(rng)
    nums = _tuple(argnums, argnums)
    y = f(*args)
    u = rng.normal(size=np.shape(y))
    vs = tuple(rng.normal(size=np.shape(args[k])) for k in nums)

    out, gs = call("vjp", f, *args, u, argnums=argnums)
    assert_exact(out, y, "vjp value")
    gs = _tuple(argnums, gs)
    for k, gk in zip(nums, gs):
        assert_like(gk, args[k], f"vjp d/d arg {k}")

    tangent = vs[0] if isinstance(argnums, int) else vs
    out, jv = call("jvp", f, *args, tangent, argnums=argnums)
    assert_exact(out, y, "jvp value")
    assert np.shape(jv) == np.shape(y)

    lhs = sum(float(np.sum(g * v)) for g, v in zip(gs, vs))
    rhs = float(np.sum(u * jv))
    scale = sum(float(np.sum(np.abs(g * v))) for g, v in zip(gs, vs)) + \
        float(np.sum(np.abs(u * jv)))
    assert abs(lhs - rhs) <= 1e-10 * scale, (lhs, rhs)

    assert_fd(jv, fd_jvp(f, args, nums, vs), scale=_mag(y), what="jvp vs FD")
    for k, gk in zip(nums, gs):
        assert_fd(gk, fd_vjp(f, args, k, u), scale=_mag(y) * np.size(y), what="vjp vs FD")


@given(seed=SEEDS, n=st.integers(1, 6))
def test_softmax_vjp_is_the_analytic_jacobian(seed, n):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n) * 3
    s = np.exp(x - x.max())
    s /= s.sum()
    J = np.diag(s) - np.outer(s, s)
    rows = np.array([call("vjp", softmax, x, np.eye(n)[i])[1] for i in range(n)])
    assert_exact(rows, J.T, "rows of J from vjp with basis cotangents", rtol=1e-12)
    cols = np.array([call("jvp", softmax, x, np.eye(n)[i])[1] for i in range(n)]).T
    assert_exact(cols, J, "columns of J from jvp with basis tangents", rtol=1e-12)
    u = rng.normal(size=n)
    assert_exact(call("vjp", softmax, x, u)[1], s * u - s * np.dot(s, u), "J^T u", rtol=1e-12)


@given(seed=SEEDS)
def test_vjp_of_scalar_function_with_unit_cotangent_is_value_and_grad(seed):
    x = np.random.default_rng(seed).normal(size=5)
    v1, g1 = call("value_and_grad", sl_new_axes, x)
    v2, g2 = call("vjp", sl_new_axes, x, 1.0)
    assert v1 == v2
    np.testing.assert_array_equal(g1, g2)
    v3, g3 = call("vjp", sl_new_axes, x, 2.5)
    assert_exact(g3, 2.5 * g1)


# ------------------------------------------------------------------------------------------
# 7. inputs are never mutated (also checked by every call above)
# ------------------------------------------------------------------------------------------
def local_updates(x, w):
    y = x.copy()
    y += w
    y[1:] *= 2.0
    z = np.zeros((2, 3))
    z[0, :] = np.exp(y[3:])
    z[1, :] = y[:3]
    return np.concatenate((z[0, :], z[1, :])) * w + y


def test_arguments_are_never_written():
    """Local copies are updated in place (+=, *=, slice writes); the arguments and the
    cotangent must stay as they were, call after call (every call() in this file checks the
    same for its arguments, tangents included)."""
    rng = np.random.default_rng(3)
    x, w, u = rng.normal(size=6), rng.normal(size=6), rng.normal(size=6)
    args = (x, w, u)
    saved = _snapshot(args)
    first = call("vjp", local_updates, *args, argnums=(0, 1))
    second = call("vjp", local_updates, *args, argnums=(0, 1))
    assert _unchanged(saved, args)
    assert _unchanged(_snapshot(first), second)
    assert_exact(first[0], local_updates(x, w), "value")
    for k in (0, 1):
        assert_fd(first[1][k], fd_vjp(local_updates, (x, w), k, u), scale=10.0)
