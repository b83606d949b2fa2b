"""custom_vjp: functions with their own derivative rules, used wherever they are called.

Each test shows that the user's rule is the one used (the automatic derivative would differ:
a clipped cotangent, a rule finite where the primal's own derivative overflows, a zero where
differentiating the code gives NaN), and checks the gradients of whole programs against
central differences of their values and against hand-written derivatives. The programs call
the functions as users do: in loops, from @njit helpers, with stop_gradient, argnums
tuples, checkpointed time loops, array arguments and array results.
"""
import math
import pickle

import numba
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import adjit
from adjit import AdjitError, custom_vjp, stop_gradient
from fd import fd_grad


# the functions with rules, as a user writes them --------------------------------------------

@custom_vjp
def log1pexp(x):
    return math.log(1.0 + math.exp(x))      # overflows for x > 709: the rule does not


def log1pexp_fwd(x):
    if x > 0.0:
        return x + math.log1p(math.exp(-x)), x
    return math.log1p(math.exp(x)), x


def log1pexp_bwd(x, g):
    return (g / (1.0 + math.exp(-x)),)


log1pexp.defvjp(log1pexp_fwd, log1pexp_bwd)


@custom_vjp
def clip_gradient(x, lo, hi):
    return x


def clip_gradient_fwd(x, lo, hi):
    return x, (lo, hi)


def clip_gradient_bwd(res, g):
    lo, hi = res
    return (min(max(g, lo), hi), 0.0, 0.0)


clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)


@custom_vjp
def softclip(x, lo, hi):
    return lo + (hi - lo) / (1.0 + math.exp(-x))


@numba.njit
def softclip_fwd(x, lo, hi):
    s = 1.0 / (1.0 + math.exp(-x))
    return lo + (hi - lo) * s, (s, lo, hi)


@numba.njit
def softclip_bwd(res, g):
    s, lo, hi = res
    return (g * (hi - lo) * s * (1.0 - s), g * (1.0 - s), g * s)


softclip.defvjp(softclip_fwd, softclip_bwd)


@softclip.defjvp
def softclip_jvp(primals, tangents):
    x, lo, hi = primals
    dx, dlo, dhi = tangents
    s = 1.0 / (1.0 + math.exp(-x))
    return lo + (hi - lo) * s, (hi - lo) * s * (1.0 - s) * dx + (1.0 - s) * dlo + s * dhi


@custom_vjp
def safe_norm(v):
    return np.sqrt(np.sum(v * v))


def safe_norm_fwd(v):
    n = np.sqrt(np.sum(v * v))
    return n, (v, n)


def safe_norm_bwd(res, g):
    v, n = res
    if n == 0.0:
        return (np.zeros_like(v),)
    return (g * v / n,)


safe_norm.defvjp(safe_norm_fwd, safe_norm_bwd)


@custom_vjp
def softmax(z):
    e = np.exp(z - np.max(z))
    return e / np.sum(e)


def softmax_fwd(z):
    s = softmax(z)
    return s, s


def softmax_bwd(s, g):
    return (s * (g - np.dot(g, s)),)


softmax.defvjp(softmax_fwd, softmax_bwd)


def sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


# the rule is the one used ---------------------------------------------------------------------

def softplus_loss(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += log1pexp(x[i] * 2.0)
    return s


def naive_softplus_loss(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += math.log(1.0 + math.exp(x[i] * 2.0))
    return s


def test_overflow_free_rule_at_800():
    x = np.array([400.0, -0.3, 0.0, 1.5])          # 2 * 400 = 800: exp overflows
    g = adjit.grad(softplus_loss)(x)
    np.testing.assert_allclose(g, 2.0 * np.array([sigmoid(2.0 * v) for v in x]), rtol=1e-14)
    assert g[0] == 2.0
    with np.errstate(over="ignore", invalid="ignore"):
        plain = adjit.grad(naive_softplus_loss)(x)  # the code's own derivative: inf / inf
    assert not np.isfinite(plain[0])
    value, _ = adjit.value_and_grad(softplus_loss)(x)
    assert value == pytest.approx(800.0 + sum(math.log1p(math.exp(2.0 * v)) for v in x[1:]))


def test_clipped_gradient():
    def f(x):
        return 10.0 * clip_gradient(x * x, -1.0, 1.0)
    assert adjit.grad(f)(3.0) == 6.0        # d(x*x)/dx * clip(10) = 6 * 1, not 60
    assert adjit.grad(f)(-0.5) == -1.0


def rnn(x, w, steps):
    """A recurrence with its hidden state's cotangent clipped at every step."""
    h = 0.0
    for t in range(steps):
        h = clip_gradient(math.tanh(w * h + x[t]), -0.5, 0.5)
    return 3.0 * h


def rnn_hand_grad(x, w, steps):
    hs = [0.0]
    for t in range(steps):
        hs.append(math.tanh(w * hs[-1] + x[t]))
    g, x_bar, w_bar = 3.0, np.zeros_like(x), 0.0
    for t in range(steps - 1, -1, -1):
        g = min(max(g, -0.5), 0.5)
        pre = g * (1.0 - hs[t + 1] ** 2)
        x_bar[t] += pre
        w_bar += pre * hs[t]
        g = pre * w
    return x_bar, w_bar


def test_clipped_recurrence_matches_the_hand_adjoint():
    x = np.array([0.4, -0.2, 0.9, 0.1, -0.6])
    x_bar, w_bar = adjit.grad(rnn, argnums=(0, 1))(x, 1.7, 5)
    hx, hw = rnn_hand_grad(x, 1.7, 5)
    np.testing.assert_allclose(x_bar, hx, rtol=1e-13)
    assert w_bar == pytest.approx(hw, rel=1e-13)


def norms(x):
    return safe_norm(x) ** 2 + safe_norm(2.0 * x)


def test_safe_norm_at_zero_and_elsewhere():
    x = np.array([3.0, 4.0])
    np.testing.assert_allclose(adjit.grad(norms)(x), 2.0 * x + 2.0 * x / 5.0, rtol=1e-14)
    np.testing.assert_array_equal(adjit.grad(norms)(np.zeros(3)), np.zeros(3))


# whole programs against central differences ----------------------------------------------------

def pull_in_loop(x, n):
    """An array argument that the loop changes after each call: the rule reads each
    iteration's value."""
    y = x.copy()
    s = 0.0
    for t in range(n):
        s += safe_norm(y)
        y[0] = y[0] * 1.5 + y[1]
    return s


def changed_after(x):
    y = x * 1.0
    s = safe_norm(y)
    y[0] = 0.0
    return s + np.sum(y)


def attention(z, w):
    """An array result: a weighted sum of a softmax."""
    p = softmax(z * 2.0)
    return np.sum(w * p) + p[0] ** 2


@pytest.mark.parametrize("f, args", [
    (pull_in_loop, (np.array([0.3, 0.4, -1.2]), 3)),
    (changed_after, (np.array([0.3, 0.4, -1.2]),)),
    (attention, (np.array([0.2, -0.5, 1.1, 0.0]), np.array([1.0, -2.0, 0.5, 3.0]))),
    (softplus_loss, (np.array([0.7, -1.3, 2.2]),)),
], ids=["array-changed-in-loop", "array-changed-after", "array-result", "scalar-in-loop"])
def test_programs_match_differences(f, args):
    np.testing.assert_allclose(adjit.grad(f)(*args), fd_grad(f, args, 0), rtol=1e-6,
                               atol=1e-8)


@numba.njit
def squash(a, b):
    return softclip(a * b, -1.0, b) ** 2


def with_helper(x, b):
    """Called from an @njit helper adjit reads, and with a stopped argument."""
    return squash(x, b) + softclip(x, stop_gradient(b), 2.0)


def with_helper_stopped_held(x, b, b_held):
    return squash(x, b) + softclip(x, b_held, 2.0)


def test_depth_stop_gradient_and_argnums():
    x, b = 0.3, 0.8
    gx, gb = adjit.grad(with_helper, argnums=(0, 1))(x, b)
    assert gx == pytest.approx(fd_grad(with_helper, (x, b), 0), rel=1e-7)
    # b under stop_gradient carries nothing: hold it fixed in the oracle
    assert gb == pytest.approx(fd_grad(lambda bb: with_helper_stopped_held(x, bb, b), (b,), 0),
                               rel=1e-7)


def relax(x0, k, dt, steps):
    """A time loop calling a custom function every step."""
    x = x0
    v = 0.0
    for t in range(steps):
        v = v - dt * k * softclip(x, -1.0, 1.0)
        x = x + dt * v
    return x * x


@pytest.mark.parametrize("checkpoint", [None, 4])
def test_time_loop_with_checkpointing(checkpoint):
    args = (0.9, 2.0, 0.05, 40)
    g = adjit.grad(relax, argnums=(0, 1), checkpoint=checkpoint)(*args)
    assert g[0] == pytest.approx(fd_grad(relax, args, 0), rel=1e-6)
    assert g[1] == pytest.approx(fd_grad(relax, args, 1), rel=1e-6)


@given(st.floats(-30.0, 30.0), st.floats(-3.0, 0.0), st.floats(0.5, 4.0))
def test_softclip_rule_is_the_derivative(x, lo, hi):
    """softclip's rule is its true derivative: grad agrees with the analytic one."""
    def f(x, lo, hi):
        return softclip(x, lo, hi) * 1.0
    gx, glo, ghi = adjit.grad(f, argnums=(0, 1, 2))(x, lo, hi)
    s = sigmoid(x)
    assert gx == pytest.approx((hi - lo) * s * (1.0 - s), rel=1e-12, abs=1e-300)
    assert glo == pytest.approx(1.0 - s, rel=1e-12, abs=1e-300)
    assert ghi == pytest.approx(s, rel=1e-12, abs=1e-300)


# forward mode ---------------------------------------------------------------------------------

def soft_energy(x, lo):
    s = 0.0
    for i in range(x.shape[0]):
        s += softclip(x[i], lo, 2.0) * x[i]
    return s


def test_forward_mode_with_a_tangent_rule():
    x, lo = np.array([0.3, -1.1, 2.0]), -0.5
    v = np.array([0.2, 1.0, -0.7])
    value, tangent = adjit.jvp(soft_energy)(x, lo, v)
    assert value == pytest.approx(soft_energy(x, lo))
    assert tangent == pytest.approx(np.dot(adjit.grad(soft_energy)(x, lo), v), rel=1e-13)
    np.testing.assert_allclose(adjit.jacfwd(soft_energy)(x, lo),
                               fd_grad(soft_energy, (x, lo), 0), rtol=1e-6)


def test_forward_mode_without_a_tangent_rule_is_refused():
    with pytest.raises(AdjitError, match=r"forward mode through the custom_vjp function "
                       r"`log1pexp`.*defjvp"):
        adjit.jvp(softplus_loss)(np.array([0.1, 0.2]), np.ones(2))


@custom_vjp
def softplus(x):
    return math.log(1.0 + math.exp(x))      # overflows for x > 709: the rules do not


softplus.defvjp(log1pexp_fwd, log1pexp_bwd)


@softplus.defjvp
def softplus_jvp(primals, tangents):
    x, = primals
    dx, = tangents
    if x > 0.0:
        return x + math.log1p(math.exp(-x)), dx / (1.0 + math.exp(-x))
    e = math.exp(x)
    return math.log1p(e), dx * e / (1.0 + e)


def softplus_sum(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += softplus(2.0 * x[i])
    return s


@custom_vjp
def cube(x):
    return x * x * x


cube.defvjp(lambda x: (x * x * x, x), lambda x, g: (3.0 * x * x * g,))


@cube.defjvp
def cube_jvp(primals, tangents):       # not cube's derivative, on purpose
    x, = primals
    dx, = tangents
    return x * x * x, 2.0 * x * dx


def cubes(x):
    return np.sum(np.array([cube(x[0]), cube(x[1])]) * x[2])


def soft_energy_gradient(x, lo):
    """d soft_energy / dx by hand."""
    s = 1.0 / (1.0 + np.exp(-x))
    return (2.0 - lo) * s * (1.0 - s) * x + lo + (2.0 - lo) * s


def test_second_derivatives_go_through_the_tangent_rule():
    x, lo = np.array([0.3, -1.1, 2.0]), -0.5
    s = 1.0 / (1.0 + np.exp(-x))
    analytic = np.diag((2.0 - lo) * (s * (1.0 - s) * (1.0 - 2.0 * s) * x + 2.0 * s * (1.0 - s)))
    np.testing.assert_allclose(adjit.hessian(soft_energy)(x, lo), analytic, rtol=1e-12)
    differences = np.array([fd_grad(lambda y: soft_energy_gradient(y, lo)[i], (x,), 0)
                            for i in range(3)])
    np.testing.assert_allclose(adjit.hessian(soft_energy)(x, lo), differences, rtol=1e-6,
                               atol=1e-8)
    u, v = np.array([0.2, 1.0, -0.7]), np.array([-1.3, 0.4, 0.9])
    hv, hu = adjit.hvp(soft_energy)(x, lo, v), adjit.hvp(soft_energy)(x, lo, u)
    np.testing.assert_allclose(hv, analytic @ v, rtol=1e-12)
    assert np.dot(u, hv) == pytest.approx(np.dot(v, hu), rel=1e-13)
    # the mixed block d/dlo (d/dx): differentiates the rule's tangent in lo
    _, mixed = adjit.hessian(soft_energy, argnums=(0, 1))(x, lo)[0]
    np.testing.assert_allclose(mixed, fd_grad(lambda b: soft_energy_gradient(x, b), (lo,), 0),
                               rtol=1e-6)


def test_the_tangent_rule_is_the_one_differentiated():
    x = np.array([0.5, -2.0, 1.5])
    h = adjit.hessian(cubes)(x)
    # from the rule: d/dx0 (2 x0 dx0) x2 = 2 x2, not cube's own 6 x0 x2
    assert h[0, 0] == 2.0 * x[2] and h[1, 1] == 2.0 * x[2]
    # the mixed entries take one derivative in each mode (the columns are gradients of
    # tangents): rules that disagree (3 x0^2 from bwd, 2 x0 from jvp) show as an asymmetry
    assert sorted((h[0, 2], h[2, 0])) == sorted((3.0 * x[0] ** 2, 2.0 * x[0]))


def test_an_overflow_free_tangent_rule_at_800():
    x = np.array([800.0, -800.0, 0.3])
    h = adjit.hessian(softplus_sum)(x)
    s = 1.0 / (1.0 + math.exp(-0.6))
    np.testing.assert_array_equal(np.diag(np.diag(h)), h)
    np.testing.assert_allclose(np.diag(h), [0.0, 0.0, 4.0 * s * (1.0 - s)], rtol=1e-14,
                               atol=0.0)
    assert adjit.grad(softplus_sum)(x) == pytest.approx([2.0, 0.0, 2.0 * s], rel=1e-14)


def test_second_derivatives_without_a_tangent_rule_are_refused():
    with pytest.raises(AdjitError, match="log1pexp.*defjvp"):
        adjit.hessian(softplus_loss)(np.array([0.1, 0.2]))


# outside differentiation, pickling ----------------------------------------------------------

@numba.njit
def uses_log1pexp(x):
    return log1pexp(x) + 1.0


def test_an_ordinary_compiled_function_outside_differentiation():
    assert log1pexp(0.5) == pytest.approx(math.log1p(math.exp(0.5)))
    assert uses_log1pexp(0.5) == pytest.approx(math.log1p(math.exp(0.5)) + 1.0)
    assert pickle.loads(pickle.dumps(log1pexp)) is log1pexp
    g = pickle.loads(pickle.dumps(adjit.grad(softplus_loss)))
    np.testing.assert_allclose(g(np.array([400.0])), [2.0])


def test_gradient_called_from_njit():
    g = adjit.grad(softplus_loss)

    @numba.njit
    def step(x):
        return x - 0.1 * g(x)
    x = np.array([0.5, -0.5])
    np.testing.assert_allclose(step(x), x - 0.1 * 2.0 / (1.0 + np.exp(-2.0 * x)), rtol=1e-14)


# refusals -------------------------------------------------------------------------------------

def test_a_function_without_a_rule_is_refused():
    @custom_vjp
    def bare(x):
        return x * x

    def f(x):
        return bare(x) + 1.0
    with pytest.raises(AdjitError, match=r"`bare`, which has no rule.*defvjp"):
        adjit.grad(f)(1.0)


def test_rules_of_the_wrong_shape_are_refused():
    @custom_vjp
    def two(x, y):
        return x * y

    def not_a_pair(x, y):
        return x * y

    def one_cotangent(res, g):
        return (g,)
    two.defvjp(not_a_pair, one_cotangent)

    def f(x):
        return two(x, 2.0)
    with pytest.raises(AdjitError, match=r"fwd rule of `two`.*Return a pair"):
        adjit.grad(f)(1.0)

    @custom_vjp
    def three(x, y):
        return x * y

    def fwd(x, y):
        return x * y, (x, y)
    three.defvjp(fwd, one_cotangent)

    def f3(x):
        return three(x, 2.0)
    with pytest.raises(AdjitError, match=r"bwd rule of `three`.*tuple of 2 cotangent"):
        adjit.grad(f3)(1.0)


@custom_vjp
def _spread(g, x):
    return x * (g[1] - g[0])


_spread.defvjp(lambda g, x: (x * (g[1] - g[0]), g),
               lambda g, ybar: ((0.0, 0.0), ybar * (g[1] - g[0])))
_GRID = (0.0, 2.0)


def _tuple_literal(x):
    return np.sum(_spread((0.0, 2.0), x))


def _tuple_named(x):
    g = (0.0, 2.0)
    return np.sum(_spread(g, x))


def _tuple_global(x):
    return np.sum(_spread(_GRID, x))


@pytest.mark.parametrize("f", [_tuple_literal, _tuple_named, _tuple_global])
def test_a_tuple_passed_to_a_custom_vjp_function(f):
    """Written out, held in a name or a module's: the rule's gradient, 2 (a tuple held in a
    name was once passed through as a call kept as numba's would be, and the gradient came
    out zero). More in test_custom_vjp_tuples.py."""
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(adjit.grad(f)(x), [2.0, 2.0], rtol=1e-15)
    np.testing.assert_allclose(adjit.grad(f)(x), fd_grad(f, (x,), 0), rtol=1e-7)


def test_rule_given_twice_and_random_fwd_are_refused():
    @custom_vjp
    def noisy(x):
        return x

    def fwd(x):
        return x + np.random.normal(), None

    def bwd(res, g):
        return (g,)
    with pytest.raises(AdjitError, match="draws random numbers"):
        noisy.defvjp(fwd, bwd)
    draw = np.random.normal     # reached through a closure, not a global

    def fwd_closure(x):
        return x + draw(), None
    with pytest.raises(AdjitError, match="draws random numbers"):
        noisy.defvjp(fwd_closure, bwd)
    with pytest.raises(AdjitError, match="already has a rule"):
        log1pexp.defvjp(log1pexp_fwd, log1pexp_bwd)


def test_a_cotangent_of_another_shape_raises_when_the_gradient_runs():
    @custom_vjp
    def total(v):
        return np.sum(v)

    def fwd(v):
        return np.sum(v), None

    def bwd(res, g):
        return (np.ones(1) * g,)        # would broadcast into every element
    total.defvjp(fwd, bwd)

    def f(x):
        return total(x * 2.0)
    with pytest.raises(ValueError, match="cotangent for `v` with another shape"):
        adjit.grad(f)(np.ones(3))


@custom_vjp
def scaled_product(d, g, out=2.0):
    """Parameter names the generated code also uses (d, g, out), and a default."""
    return d * g * out


def scaled_product_fwd(d, g, out=2.0):
    return d * g * out, (d, g, out)


def scaled_product_bwd(res, gbar):
    d, g, out = res
    return (gbar * g * out, gbar * d * out, gbar * d * g)


scaled_product.defvjp(scaled_product_fwd, scaled_product_bwd)


@scaled_product.defjvp
def scaled_product_jvp(primals, tangents):
    d, g, out = primals
    return d * g * out, tangents[0] * g * out + d * tangents[1] * out + d * g * tangents[2]


def test_keywords_defaults_and_parameter_names():
    def f(x, y):
        return scaled_product(x, y) + scaled_product(x, g=y, out=3.0) ** 2
    args = (1.5, 0.5)
    g = adjit.grad(f, argnums=(0, 1))(*args)
    assert g[0] == pytest.approx(0.5 * 2.0 + 2.0 * (1.5 * 0.5 * 3.0) * 0.5 * 3.0, rel=1e-14)
    assert g[1] == pytest.approx(1.5 * 2.0 + 2.0 * (1.5 * 0.5 * 3.0) * 1.5 * 3.0, rel=1e-14)
    _, t = adjit.jvp(f, argnums=(0, 1))(*args, (1.0, 0.0))
    assert t == pytest.approx(g[0], rel=1e-14)


def test_a_result_sharing_memory_with_an_argument_raises():
    """In numba `z = f(y)` with f returning y makes z and y one array; adjit's names each own
    their elements, so such a result is refused when the gradient runs."""
    @custom_vjp
    def ident(x, bound):
        return x

    def fwd(x, bound):
        return x, bound

    def bwd(bound, g):
        return (np.clip(g, -bound, bound), 0.0)
    ident.defvjp(fwd, bwd)

    def f(x):
        y = x * 1.0
        z = ident(y, 10.0)
        y[0] = 3.0 * y[0]
        return np.sum(z)
    with pytest.raises(ValueError, match="shares memory with an argument"):
        adjit.grad(f)(np.ones(4))
    with pytest.raises(ValueError, match="shares memory with an argument"):
        adjit.value_and_grad(f)(np.ones(4))


def test_a_rule_changing_its_array_argument_is_refused():
    @custom_vjp
    def normalize(v):
        n = np.sqrt(np.sum(v * v))
        v /= n
        return n

    def fwd(v):
        n = np.sqrt(np.sum(v * v))
        v /= n
        return n, v

    def bwd(v, g):
        return (g * v,)
    normalize.defvjp(fwd, bwd)

    def f(x):
        y = x * 1.0
        return normalize(y) + np.sum(y)
    with pytest.raises(AdjitError, match="changes its array argument `v` in place"):
        adjit.grad(f)(np.array([3.0, 4.0]))


def test_the_cache_key_follows_the_rules():
    """cache=True names the generated file by what its code reads: the user's rules,
    their closures and the functions they call included."""
    from adjit.codegen.emit import _fingerprint

    def make(bound):
        @custom_vjp
        def clip(x):
            return x

        def fwd(x):
            return x, None

        def bwd(res, g):
            return (min(max(g, -bound), bound),)
        clip.defvjp(fwd, bwd)
        return clip
    a, b = make(1.0), make(5.0)
    assert _fingerprint(a.helpers[f"{a.key}_vjp"]) != _fingerprint(b.helpers[f"{b.key}_vjp"])
    assert _fingerprint(a) != _fingerprint(b)


def test_a_cached_gradient_is_found_again_by_another_process(tmp_path):
    import subprocess
    import sys
    import textwrap
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent("""
        import hashlib, math, sys
        import numpy as np
        from adjit import custom_vjp, grad
        from adjit.codegen.emit import _fingerprint

        @custom_vjp
        def softplus(x):
            return math.log1p(math.exp(x))

        def fwd(x):
            return softplus(x), x

        def bwd(x, g):
            return (g / (1.0 + math.exp(-x)),)
        softplus.defvjp(fwd, bwd)
        print(hashlib.sha256(_fingerprint(softplus.helpers["softplus_vjp"])).hexdigest())
    """))
    runs = [subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                           check=True).stdout for _ in range(2)]
    assert runs[0] == runs[1] and len(runs[0]) > 60


@custom_vjp
def _powers(x, n):
    out = np.empty(n)
    p = 1.0
    for i in range(n):
        out[i] = p
        p *= x
    return out


def _powers_bwd(res, g):
    x, n = res
    s = 0.0
    for i in range(1, n):
        s += g[i] * i * x ** (i - 1)
    return s, 0


_powers.defvjp(lambda x, n: (_powers(x, n), (x, n)), _powers_bwd)


def test_an_integer_argument_sizing_the_array_result():
    # the normalizer typed the rule with every argument a float: np.empty(n) of a float n
    # did not type, the result was taken for a number, and `** 2` of it was refused as "a
    # scalar function applied to a whole array"
    def f(x, n):
        return np.sum(_powers(x, n) ** 2)
    got = adjit.grad(f)(0.7, 4)
    assert got == pytest.approx(sum(2 * 0.7 ** i * i * 0.7 ** (i - 1) for i in range(4)),
                                rel=1e-14)
    assert got == pytest.approx(fd_grad(lambda x, n: np.sum(_powers(x, n) ** 2), (0.7, 4), 0),
                                rel=1e-7)


@custom_vjp
def _scaled3(a, w, x):
    return a * w * x


_scaled3.defvjp(lambda a, w, x: (a * w * x, (a, w, x)),
                lambda r, g: (np.sum(g * r[1] * r[2]), g * r[0] * r[2], g * r[0] * r[1]))


def _vector_model(a, w, x):
    return _scaled3(a, w, x) + np.sin(w)


@pytest.mark.parametrize("how", ["jacobian", "jacrev"])
@pytest.mark.parametrize("k", [0, 1])
def test_reverse_jacobians_through_a_rule_without_forward_mode(how, k):
    # a function with no tangent rule: the Jacobian by rows (vjp), the result's shape from
    # the function as numba compiles it (the jvp they were sized by was refused)
    from fd import fd_jacobian
    args = (1.3, np.array([0.5, 1.0, -2.0]), np.array([0.1, 0.2, 0.3]))
    got = getattr(adjit, how)(_vector_model, argnums=k)(*args)
    want = fd_jacobian(numba.njit(_vector_model), args, k)
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)
    a, w, x = args
    exact = w * x if k == 0 else np.diag(a * x + np.cos(w))
    np.testing.assert_allclose(got, exact, rtol=1e-14)
    with pytest.raises(AdjitError, match="forward mode through the custom_vjp function "
                       "`_scaled3`"):
        adjit.jacfwd(_vector_model, argnums=k)(*args)
