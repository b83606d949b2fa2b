"""custom_vjp functions and adjit.defvjp rules taking tuples: a grid of (start, stop, count)
tuples as EconForge/interpolation.py's entry points take it, parameters packed as `((a, b),
w)`. Each number and array inside a tuple is an operand of the call with its cotangent from
the tuple's cotangent that bwd returns (a tuple of the same structure, or None where nothing
in it is differentiated). Checked against central differences and the analytic derivative;
the refusals name what to write instead."""
import collections

import numba
import numpy as np
import pytest
from numba.extending import overload

import adjit
from adjit import AdjitError, custom_vjp

from fd import fd_grad


# parameters packed in nested tuples, arrays among them ------------------------------------

@custom_vjp
def affine(params, x):
    (a, b), w = params
    return a * np.sum(w * x) + b


def affine_fwd(params, x):
    (a, b), w = params
    s = np.sum(w * x)
    return a * s + b, (a, s, w, x)


def affine_bwd(res, g):
    a, s, w, x = res
    return ((g * s, g), g * a * x), g * a * w


affine.defvjp(affine_fwd, affine_bwd)


def affine_loss(a, b, w, x):
    return affine(((a, b), w), x) ** 2


def affine_loop(a, b, w, xs):
    total = 0.0
    for i in range(xs.shape[0]):
        total += affine(((a, b), w), xs[i]) ** 2
    return total


AFFINE_ARGS = (1.3, -0.2, np.array([0.5, 1.0, -2.0]), np.array([0.1, 0.2, 0.3]))


@pytest.mark.parametrize("k", range(4))
def test_every_number_and_array_in_nested_tuples_gets_its_cotangent(k):
    got = adjit.grad(affine_loss, argnums=k)(*AFFINE_ARGS)
    np.testing.assert_allclose(got, fd_grad(affine_loss, AFFINE_ARGS, k), rtol=1e-7, atol=1e-9)
    a, b, w, x = AFFINE_ARGS
    y = a * np.sum(w * x) + b
    analytic = [2 * y * np.sum(w * x), 2 * y, 2 * y * a * x, 2 * y * a * w][k]
    np.testing.assert_allclose(got, analytic, rtol=1e-14)


def test_tuples_in_a_loop_every_argument_at_once_and_value_and_grad():
    xs = np.random.default_rng(3).normal(size=(5, 3))
    args = AFFINE_ARGS[:3] + (xs,)
    value, grads = adjit.value_and_grad(affine_loop, argnums=(0, 1, 2, 3))(*args)
    assert value == pytest.approx(affine_loop(*args), rel=1e-14)
    for k, got in enumerate(grads):
        np.testing.assert_allclose(got, fd_grad(affine_loop, args, k), rtol=1e-6, atol=1e-9)


def test_a_gradient_through_tuples_called_from_njit_code():
    g = adjit.grad(affine_loss, argnums=0)

    @numba.njit
    def caller(a, b, w, x):
        return g(a, b, w, x)
    assert caller(*AFFINE_ARGS) == pytest.approx(adjit.grad(affine_loss)(*AFFINE_ARGS),
                                                 rel=1e-15)


# a grid of (start, stop, count): an @overload'ed entry point given a rule -----------------

def lerp(grid, values, points):
    """Piecewise linear interpolation on a uniform grid ((start, stop, count),), shaped as
    interpolation.py's eval_linear: numba's @overload, which adjit cannot read."""
    raise NotImplementedError


@overload(lerp)
def _lerp(grid, values, points):
    def impl(grid, values, points):
        lo, hi, n = grid[0]
        h = (hi - lo) / (n - 1)
        out = np.empty(points.shape[0])
        for k in range(points.shape[0]):
            s = (points[k, 0] - lo) / h
            i = min(max(int(np.floor(s)), 0), n - 2)
            t = s - i
            out[k] = values[i] * (1.0 - t) + values[i + 1] * t
        return out
    return impl


@numba.njit
def lerp_fwd(grid, values, points):
    return lerp(grid, values, points), (grid, values, points)


@numba.njit
def lerp_bwd(res, g):
    grid, values, points = res
    lo, hi, n = grid[0]
    h = (hi - lo) / (n - 1)
    values_bar = np.zeros_like(values)
    points_bar = np.zeros_like(points)
    for k in range(points.shape[0]):
        s = (points[k, 0] - lo) / h
        i = min(max(int(np.floor(s)), 0), n - 2)
        t = s - i
        values_bar[i] += g[k] * (1.0 - t)
        values_bar[i + 1] += g[k] * t
        points_bar[k, 0] = g[k] * (values[i + 1] - values[i]) / h
    return None, values_bar, points_bar


adjit.defvjp(lerp, lerp_fwd, lerp_bwd)
GRID = ((0.0, 1.0, 6),)


def fit_global_grid(values, points):
    out = lerp(GRID, values, points)
    return np.sum(out * out)


def fit_grid_argument(values, points, grid):
    out = lerp(grid, values, points)
    return np.sum(out * out)


def fit_grid_written_out(values, points):
    out = lerp(((0.0, 1.0, 6),), values, points)
    return np.sum(out * out)


VALUES = np.cos(np.linspace(0.0, 1.0, 6) * 3.0)
POINTS = np.random.default_rng(0).random((8, 1)) * 0.98 + 0.01


@pytest.mark.parametrize("f, extra", [(fit_global_grid, ()), (fit_grid_argument, (GRID,)),
                                      (fit_grid_written_out, ())])
@pytest.mark.parametrize("k", [0, 1])
def test_a_rule_for_an_overloaded_function_taking_a_grid(f, extra, k):
    args = (VALUES, POINTS) + extra
    got = adjit.grad(f, argnums=k)(*args)
    forward = numba.njit(f)
    np.testing.assert_allclose(got, fd_grad(forward, args, k), rtol=1e-6, atol=1e-9)
    assert adjit.value_and_grad(f, argnums=k)(*args)[0] == pytest.approx(
        forward(*args), rel=1e-15)


# refusals ---------------------------------------------------------------------------------

@custom_vjp
def scaled(grid, x):
    lo, hi = grid
    return (x - lo) / (hi - lo)


scaled.defvjp(lambda grid, x: ((x - grid[0]) / (grid[1] - grid[0]), grid[1] - grid[0]),
              lambda r, g: (None, g / r))


def scaled_loss(x, lo):
    return scaled((lo, 2.0), x) ** 2


def test_none_for_a_tuple_is_zeros_where_nothing_in_it_is_differentiated():
    got = adjit.grad(scaled_loss, argnums=0)(1.5, 0.5)
    assert got == pytest.approx(2 * (1.5 - 0.5) / 1.5 ** 2, rel=1e-14)


def test_none_for_a_tuple_holding_a_differentiated_number_is_refused():
    # the rule gives lo no cotangent: a zero gradient would be a plausible wrong number
    with pytest.raises(AdjitError, match=r"a derivative through the tuple `grid` of the "
                       r"custom_vjp function `scaled`.*returns None for it.*Return the "
                       r"tuple's cotangents"):
        adjit.grad(scaled_loss, argnums=1)(1.5, 0.5)


def test_forward_mode_through_a_call_passing_a_tuple_needs_a_tangent_rule():
    with pytest.raises(AdjitError, match=r"forward mode through the custom_vjp function "
                       r"`scaled`.*which has no tangent rule\. Give it one with \.defjvp"):
        adjit.jvp(scaled_loss, argnums=0)(1.5, 0.5, 1.0)


@custom_vjp
def affine_j(params, x):
    (a, b), w = params
    return a * np.sum(w * x) + b


affine_j.defvjp(affine_fwd, affine_bwd)


@affine_j.defjvp
def _affine_jvp(primals, tangents):
    ((a, b), w), x = primals
    ((da, db), dw), dx = tangents
    s = np.sum(w * x)
    return a * s + b, da * s + db + a * np.sum(dw * x + w * dx)


def affine_j_loss(a, b, w, x):
    return affine_j(((a, b), w), x) ** 2


@pytest.mark.parametrize("k", range(4))
def test_forward_mode_through_tuples_with_a_tangent_rule(k):
    # the tangent rule gets the tangent in one leaf, zeros in the others
    v = 1.0 if k < 2 else np.array([0.3, -0.1, 0.7])
    value, tangent = adjit.jvp(affine_j_loss, argnums=k)(*AFFINE_ARGS, v)
    assert value == pytest.approx(affine_j_loss(*AFFINE_ARGS), rel=1e-15)
    assert tangent == pytest.approx(np.sum(adjit.grad(affine_j_loss, argnums=k)(*AFFINE_ARGS)
                                           * v), rel=1e-13)
    assert tangent == pytest.approx(np.sum(fd_grad(affine_j_loss, AFFINE_ARGS, k) * v),
                                    rel=1e-7)
    if k >= 2:
        np.testing.assert_allclose(adjit.jacfwd(affine_j_loss, argnums=k)(*AFFINE_ARGS),
                                   fd_grad(affine_j_loss, AFFINE_ARGS, k), rtol=1e-7)


def test_second_derivatives_through_a_tuple_call_are_refused():
    # (reverse mode over its tangent rule's helpers: refused, not taken as zero)
    with pytest.raises(AdjitError, match=r"second derivatives through the custom_vjp function "
                       r"`affine_j`.*called with a tuple argument"):
        adjit.hessian(affine_j_loss, argnums=0)(*AFFINE_ARGS)
    with pytest.raises(AdjitError, match=r"second derivatives through the custom_vjp function "
                       r"`affine_j`"):
        adjit.hvp(affine_j_loss, argnums=2)(*AFFINE_ARGS, np.ones(3))


@custom_vjp
def badly_shaped(pair, x):
    return x * pair[0] * pair[1]


badly_shaped.defvjp(lambda pair, x: (x * pair[0] * pair[1], (pair, x)),
                    lambda r, g: ((g * r[1] * r[0][1],), g * r[0][0] * r[0][1]))


def test_a_cotangent_not_of_the_tuples_structure_is_refused():
    def f(x, a):
        return badly_shaped((a, 2.0), x)
    with pytest.raises(AdjitError, match=r"its cotangent for the tuple `pair` is "
                       r"UniTuple\(float64 x 1\)\. Return a tuple of the argument's structure"):
        adjit.grad(f, argnums=1)(1.5, 0.5)


@custom_vjp
def normalized(pair, x):
    return x * np.sum(pair[0]) + pair[1]


def _writing_fwd(pair, x):
    w, c = pair
    w[0] = 1.0                      # changes the caller's array
    return x * np.sum(w) + c, np.sum(w)


normalized.defvjp(_writing_fwd, lambda r, g: ((None, g), g * r))


def test_a_fwd_writing_into_an_array_inside_a_tuple_is_refused():
    def f(x, w):
        return normalized((w, 1.0), x)
    with pytest.raises(AdjitError, match=r"the fwd rule of the custom_vjp function "
                       r"`normalized` given arrays in the tuple `pair`: adjit cannot show it "
                       r"leaves them unchanged \(it writes into"):
        adjit.grad(f, argnums=0)(1.5, np.array([0.5, 0.25]))


@custom_vjp
def shifted(pair, x):
    return x * pair[0] + pair[1]


shifted.defvjp(lambda pair, x: (x * pair[0] + pair[1], (pair[0], x)),
               lambda r, g: ((g * r[1], g), g * r[0]))


def test_a_call_passing_a_tuple_in_cuda_code_is_refused():
    # (its rules are compiled for the CPU only)
    from numba import cuda

    @cuda.jit
    def kernel(x, out):
        i = cuda.grid(1)
        if i < x.shape[0]:
            out[i] = shifted((2.0, 1.0), x[i])
    with pytest.raises(AdjitError, match=r"a call to the custom_vjp function `shifted` with a "
                       r"tuple argument in CUDA code"):
        x = np.array([1.0, 2.0, 3.0])
        adjit.cuda.adjoint_kernel(kernel, argnums=0)[1, 32](x, np.zeros(3), np.zeros(3),
                                                            np.ones(3))


# found by a review: names, defaults, booleans, None for a part -----------------------------

@custom_vjp
def cube_t1(x):                 # (a name the tuple helpers of `cube` below would have had)
    return x * x * x


cube_t1.defvjp(lambda x: (x * x * x, x), lambda r, g: (3.0 * r * r * g,))


@custom_vjp
def cube(p):
    return p[0] * 10.0


cube.defvjp(lambda p: (p[0] * 10.0, 0.0), lambda r, g: ((10.0 * g,),))


def test_tuple_helpers_take_no_other_functions_name():
    # they were `cube_t1_value`, `cube_t1_vjp`: cube_t1's own, whose rule they replaced
    # (the gradient in c was 150 where it is 21)
    def f(a, c):
        return cube((a,)) * cube_t1(c)
    got = adjit.grad(f, argnums=(0, 1))(1.5, 0.7)
    np.testing.assert_allclose(got, (10.0 * 0.7 ** 3, 15.0 * 3 * 0.7 ** 2), rtol=1e-14)


@custom_vjp
def ranged(x, grid=(0.5, 2.0), nested=((1.0, 3),)):
    return (x - grid[0]) / (grid[1] - grid[0]) * nested[0][0]


ranged.defvjp(lambda x, grid, nested: (ranged(x, grid, nested), (grid, nested)),
              lambda r, g: (g / (r[0][1] - r[0][0]) * r[1][0][0], None, None))


def test_tuple_defaults_of_a_custom_vjp_function():
    def f(x):
        return ranged(x) ** 2
    assert adjit.grad(f)(1.5) == pytest.approx(2 * (1.0 / 1.5) / 1.5, rel=1e-14)


@custom_vjp
def gated(flags, x):
    return x * 2.0 if flags[0] else x


gated.defvjp(lambda flags, x: (gated(flags, x), flags[0]),
             lambda on, g: ((False, 0), g * 2.0 if on else g))


def test_boolean_cotangents_of_boolean_leaves():
    def f(x, on):
        return gated((on, 3), x) ** 2
    assert adjit.grad(f)(1.5, True) == pytest.approx(2 * 3.0 * 2.0, rel=1e-14)


@custom_vjp
def shifted_sum(p, x):
    (lo, n), w = p
    return np.sum(w * (x - lo)) * n


shifted_sum.defvjp(lambda p, x: (shifted_sum(p, x), (p, x)),
                   lambda r, c: (((-c * np.sum(r[0][1]) * r[0][0][1], None),
                                  c * (r[1] - r[0][0][0]) * r[0][0][1] * np.ones_like(r[0][1])),
                                 c * np.sum(r[0][1]) * r[0][0][1]))


def test_none_for_a_part_of_a_tuple():
    def f(lo, w, x, n):
        return shifted_sum(((lo, n), w), x)
    args = (0.5, np.array([1.0, 2.0, 3.0]), 1.5, 3.0)
    got = adjit.grad(f, argnums=(0, 1, 2))(*args)
    for k, g in enumerate(got):
        np.testing.assert_allclose(g, fd_grad(f, args, k), rtol=1e-7, atol=1e-9)
    with pytest.raises(AdjitError, match=r"returns None for it \(or for the part of it "
                       r"holding the value differentiated\)"):
        adjit.grad(f, argnums=3)(*args)


def test_none_for_a_number_argument_is_refused():
    @custom_vjp
    def lin(x, lo):
        return x - lo
    lin.defvjp(lambda x, lo: (x - lo, None), lambda r, g: (g, None))
    with pytest.raises(AdjitError, match=r"its cotangent for `lo` is none\. Return a number "
                       r"for a number"):
        adjit.grad(_caller_of(lin))(1.0, 0.5)


def _caller_of(lin):
    def f(x, lo):
        return lin(x, lo)
    return f


@pytest.mark.parametrize("name", ["f", "n", "zero", "check"])
def test_rules_of_functions_named_as_the_helpers_names_begin(name):
    # `f`: helpers were picked by name prefix from a namespace holding `fwd`
    ns = {}
    exec(f"def {name}(x):\n    return x * x\n", ns)    # noqa: S102
    fn = custom_vjp(ns[name])
    fn.defvjp(lambda x: (x * x, x), lambda r, g: (2.0 * r * g,))

    def loss(x):
        return fn(x) * 3.0
    assert adjit.grad(loss)(1.5) == pytest.approx(9.0, rel=1e-15)


Params = collections.namedtuple("Params", ["slope", "offset"])


@custom_vjp
def line(p, x):
    return p.slope * x + p.offset


line.defvjp(lambda p, x: (p.slope * x + p.offset, (p.slope, x)),
            lambda r, g: ((g * r[1], g), g * r[0]))


@line.defjvp
def _line_jvp(primals, tangents):
    p, x = primals
    dp, dx = tangents
    return p.slope * x + p.offset, dp.slope * x + p.slope * dx + dp.offset


def test_a_named_tuple_reaches_the_rules_with_its_fields():
    # fwd reads p.slope: the rules get a named tuple of the same fields
    def f(a, b, x):
        return line(Params(a, b), x) ** 2
    args = (1.2, 0.3, 0.7)
    got = adjit.grad(f, argnums=(0, 1, 2))(*args)
    np.testing.assert_allclose(got, [2 * 1.14 * 0.7, 2 * 1.14, 2 * 1.14 * 1.2], rtol=1e-14)
    assert adjit.jvp(f, argnums=1)(*args, 1.0)[1] == pytest.approx(2 * 1.14, rel=1e-14)


_FieldsA = collections.namedtuple("_FieldsA", ["a", "b_a"])
_FieldsB = collections.namedtuple("_FieldsB", ["a_b", "a"])


@custom_vjp
def _two_named(p, q, x):
    return p.a * x + q.a


_two_named.defvjp(lambda p, q, x: (p.a * x + q.a, (p.a, x)),
                  lambda r, g: ((g * r[1], 0.0), (0.0, g), g * r[0]))


def test_named_tuples_whose_joined_field_names_coincide():
    # ('a', 'b_a') and ('a_b', 'a') were both rebuilt as one class `_named_a_b_a`: q.a read
    # the wrong item (value 1.2321 where it is 3.0276)
    def f(u, v, w, y, x):
        return _two_named(_FieldsA(u, v), _FieldsB(w, y), x) ** 2
    args = (1.2, 0.3, 0.4, 0.9, 0.7)
    value, g = adjit.value_and_grad(f, argnums=(0, 1, 2, 3, 4))(*args)
    assert value == pytest.approx((1.2 * 0.7 + 0.9) ** 2, rel=1e-14)
    r = 2 * (1.2 * 0.7 + 0.9)
    np.testing.assert_allclose(g, [r * 0.7, 0.0, 0.0, r, r * 1.2], rtol=1e-14)
