"""The public API: decorator forms, argnums, numba dispatchers in and out, .source."""
import math
import threading

import numba
import numpy as np
import pytest

import adjit
from adjit import AdjitError, grad, value_and_grad

import programs


@grad
def decorated(x):
    return x * math.exp(x)


@numba.njit
def jitted(x, y):
    return x * y + math.sin(x)


def test_decorator_without_arguments():
    assert decorated(0.5) == pytest.approx(math.exp(0.5) * 1.5, rel=1e-14)


def test_decorator_with_arguments():
    @grad(argnums=(1,))
    def f(x, y):
        return x * y * y
    assert f(2.0, 3.0) == (12.0,)


def test_numba_dispatcher_input():
    dx, dy = grad(jitted, argnums=(0, 1))(0.3, 2.0)
    assert dx == pytest.approx(2.0 + math.cos(0.3), rel=1e-14)
    assert dy == pytest.approx(0.3, rel=1e-14)


def test_argnums_int_gives_bare_gradient_and_tuple_gives_tuple():
    x = np.array([0.1, 0.2])
    bare = grad(programs.horner, argnums=0)(x, 0.5)
    assert isinstance(bare, np.ndarray) and bare.shape == x.shape
    tup = grad(programs.horner, argnums=(1, 0))(x, 0.5)
    assert isinstance(tup, tuple) and isinstance(tup[0], float)
    np.testing.assert_array_equal(tup[1], bare)


def test_negative_argnums():
    assert grad(jitted, argnums=-1)(0.3, 2.0) == pytest.approx(0.3)


def test_value_and_grad_shapes():
    value, g = value_and_grad(jitted)(0.3, 2.0)
    assert value == pytest.approx(jitted(0.3, 2.0))
    value, (gx, gy) = value_and_grad(jitted, argnums=(0, 1))(0.3, 2.0)
    assert gy == pytest.approx(0.3)


g_lj = grad(programs.lennard_jones)
g_horner = value_and_grad(programs.horner, argnums=(0, 1))


@numba.njit
def descend(x, steps, lr):
    for _ in range(steps):
        x = x - lr * g_lj(x)
    return x


@numba.njit
def horner_inside(c, t):
    v, (gc, gt) = g_horner(c, t)
    return v, gc.sum(), gt


def test_gradient_callable_from_njit():
    x0 = np.array([[0.0, 0, 0], [1.05, 0, 0], [0, 1.2, 0]])
    x = descend(x0.copy(), 200, 1e-3)
    assert programs.lennard_jones(x) < programs.lennard_jones(x0)
    c = np.array([1.0, 2.0, 3.0])
    v, gcsum, gt = horner_inside(c, 0.5)
    assert v == pytest.approx(programs.horner(c, 0.5))
    gc, gt2 = g_horner(c, 0.5)[1]
    assert gcsum == pytest.approx(gc.sum()) and gt == pytest.approx(gt2)


def scaled_misfit(x, scale, shift):
    return scale * np.sum((x - shift) ** 2)


def pair_weighted(x, p, w):
    a, b = p
    return a * np.sum(x ** 2) * w + b


g_misfit = grad(scaled_misfit)
jvp_misfit = adjit.jvp(scaled_misfit)
g_pair = grad(pair_weighted)


@numba.njit
def keyword_calls(x):
    # as numba code names arguments: every order, the tangent by name, a tuple by name
    return (g_misfit(x, shift=1.0, scale=2.0), g_misfit(x, 2.0, shift=1.0),
            jvp_misfit(x, 2.0, 1.0, tangent=np.ones(3)), g_pair(x, w=3.0, p=(2.0, 1.0)))


@numba.njit
def a_keyword_left_out(x):
    return g_misfit(x, scale=2.0)


def test_keyword_arguments_from_njit_code():
    """They raised numba's bare `typer() got an unexpected keyword argument` (a review
    found it)."""
    x = np.arange(3.0)
    by_name, mixed, (value, tangent), pair = keyword_calls(x)
    np.testing.assert_array_equal(by_name, 4.0 * (x - 1.0))
    np.testing.assert_array_equal(mixed, 4.0 * (x - 1.0))
    assert value == 4.0 and tangent == 0.0
    np.testing.assert_array_equal(pair, 12.0 * x)
    with pytest.raises(AdjitError, match=r"scaled_misfit.*missing a required argument: "
                       r"'shift'.*takes \(x, scale, shift\): pass each of them once.$"):
        a_keyword_left_out(x)
    with pytest.raises(AdjitError, match=r"keywords shfit .*takes \(x, scale, shift\)"):
        numba.njit(lambda x: g_misfit(x, 2.0, shfit=1.0))(x)


def damped(x, scale=2.0, power=2, weights=np.array([1.0, 0.5, 0.25])):
    s = 0.0
    for i in range(x.shape[0]):
        s += scale * weights[i] * x[i] ** power
    return s


g_damped = grad(damped)
vjp_damped = adjit.vjp(damped)
both_damped = adjit.value_and_grad(damped, argnums=(0, 1, 3))


@numba.njit
def defaults_left_out(x):
    # as in Python: the defaults taken where the call leaves them out
    return (g_damped(x), g_damped(x, 3.0), g_damped(x, power=3), both_damped(x),
            vjp_damped(x, cotangent=2.0))


def test_defaults_left_out_from_njit_code():
    """A call from @njit code that left out a parameter with a default got numba's "missing
    a required argument" (a review found it)."""
    x = np.array([0.5, -1.0, 2.0])
    w = np.array([1.0, 0.5, 0.25])
    plain, scaled, cubed, (value, (gx, gscale, gw)), (again, pulled) = defaults_left_out(x)
    np.testing.assert_allclose(plain, 4.0 * w * x, rtol=1e-15)
    np.testing.assert_allclose(scaled, 6.0 * w * x, rtol=1e-15)
    np.testing.assert_allclose(cubed, 6.0 * w * x ** 2, rtol=1e-15)
    assert value == again == pytest.approx(damped(x), rel=1e-15)
    np.testing.assert_allclose(gx, plain, rtol=1e-15)
    assert gscale == pytest.approx(np.sum(w * x ** 2), rel=1e-15)
    np.testing.assert_allclose(gw, 2.0 * x ** 2, rtol=1e-15)
    np.testing.assert_allclose(pulled, 2.0 * plain, rtol=1e-15)
    # the same derivatives from Python
    np.testing.assert_array_equal(plain, g_damped(x))
    np.testing.assert_array_equal(cubed, g_damped(x, power=3))
    with pytest.raises(AdjitError, match="the vjp called from @njit code without the "
                       "cotangent. Pass the cotangent by keyword"):
        numba.njit(lambda x: vjp_damped(x))(x)


_X, _Y = np.array([1.0, 2.0, 3.0]), np.array([2.0, 4.0, 6.5])


def fit_default_data(w, data=(_X, _Y), scale=1.0):
    return scale * np.sum((w * data[0] - data[1]) ** 2)


def cubic_kw(x, *, scale=2.0):
    return scale * np.sum(x ** 3)


def required_kw_after_default(x, b=2.0, *, c):
    return c * b * np.sum(x ** 2)


def by_mode(x, mode="sq", scale=2.0):
    if mode == "sq":
        return scale * np.sum(x ** 2)
    return scale * np.sum(x)


def listed_default(x, skip=[0.0]):     # noqa: B006 - a default numba cannot hold
    return np.sum(x ** 2)


g_fit = grad(fit_default_data)
jvp_cubic, hvp_cubic = adjit.jvp(cubic_kw), adjit.hvp(cubic_kw)
g_required = grad(required_kw_after_default)
g_listed = grad(listed_default)
g_mode = grad(by_mode)


@numba.njit
def keyword_only_calls(w, x, v):
    # as Python writes them: a tuple of arrays left to its default, the tangent and the
    # vector after the parameters, keyword-only ones by name or left out
    return (g_fit(w), g_fit(w, scale=2.0), jvp_cubic(x, v), jvp_cubic(x, v, scale=1.0),
            jvp_cubic(x, tangent=v), hvp_cubic(x, vector=v), g_required(x, c=1.0))


def test_tuple_and_keyword_only_defaults_from_njit_code():
    """A tuple of arrays as a default crashed in numba (its arrays are read-only constants
    there); keyword-only parameters of jvp and hvp could not be left out (the stub put
    them before the tangent); `def f(x, b=2.0, *, c)` said b was missing (a review found
    them)."""
    x, v = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])
    fit, fit2, (val, tan), (val1, tan1), (val2, tan2), hv, req = keyword_only_calls(1.5, x, v)
    expected = 2.0 * np.sum((1.5 * _X - _Y) * _X)
    assert fit == pytest.approx(expected, rel=1e-15) and fit2 == pytest.approx(2 * expected)
    assert (val, tan) == (val2, tan2) == pytest.approx((2.0 * 36.0, 2.0 * np.sum(3 * x ** 2 * v)))
    assert (val1, tan1) == pytest.approx((36.0, np.sum(3 * x ** 2 * v)))
    np.testing.assert_allclose(hv, 2.0 * 6.0 * x * v, rtol=1e-15)
    np.testing.assert_allclose(req, 4.0 * x, rtol=1e-15)
    assert (val, tan) == jvp_cubic(x, v) and fit == g_fit(1.5)
    # a string setting left to its default is known, and one written in the call (it was
    # refused: numba offered the call's constants as literals only after plain types); one
    # whose value is known only when the code runs is refused by name
    by_default, scaled = numba.njit(lambda x: (g_mode(x), g_mode(x, scale=3.0)))(x)
    np.testing.assert_array_equal(by_default, 4.0 * x)
    np.testing.assert_array_equal(scaled, 6.0 * x)
    lin, lin3, quad = numba.njit(lambda x: (g_mode(x, "lin"), g_mode(x, "lin", 3),
                                            g_mode(x, mode="sq", scale=0.5)))(x)
    np.testing.assert_array_equal(lin, np.full(3, 2.0))
    np.testing.assert_array_equal(lin3, np.full(3, 3.0))
    np.testing.assert_array_equal(quad, x)
    with pytest.raises(AdjitError, match=r"a string setting whose value is not known here.*"
                       r"write the value in the call as a constant"):
        numba.njit(lambda x, m: g_mode(x, m))(x, "lin")
    with pytest.raises(AdjitError, match=r"listed_default.*without 'skip', whose default "
                       r"\[0.0\] numba cannot take as a constant. Pass 'skip' in the call"):
        numba.njit(lambda x: g_listed(x))(x)
    with pytest.raises(AdjitError, match=r"called from @njit code with 3 argument\(s\) "
                       r"\(too many positional arguments\). 'cubic_kw' takes \(x, tangent, \*, "
                       r"scale=2.0\): pass each of them once, keyword-only ones by name"):
        numba.njit(lambda x, v: jvp_cubic(x, v, 1.0))(x, v)


def potential(x):
    return np.sum(x ** 4 - 3.0 * x ** 2)


def scaled_by(k):
    def energy(x):
        return k * np.sum(np.sin(x))
    return energy


@numba.njit
def gradient_descent(gradf, x, lr, steps):
    # as an optimizer in numba code takes its gradient: as an argument
    for _ in range(steps):
        x = x - lr * gradf(x)
    return x


@numba.njit
def with_value_and_keywords(vg, g_kw, jv, x):
    value, gx = vg(x)
    return value, gx, g_kw(x, shift=1.0, scale=2.0), jv(x, np.ones(x.shape[0]))


def test_a_derivative_passed_to_njit_code_as_an_argument():
    """`descend(grad(f), x)`: numba could not take a GradientFunction as an argument ("can't
    unbox Function(stub) type"). Each derivative passed is its own type, as a jitted
    function is: two gradients through one caller (also two of closures alike but for a
    value) each give their own."""
    x = np.array([0.3, -1.2, 2.0])
    expected = x.copy()
    for _ in range(5):
        expected = expected - 0.01 * (4 * expected ** 3 - 6 * expected)
    np.testing.assert_allclose(gradient_descent(grad(potential), x, 0.01, 5), expected,
                               rtol=1e-14)
    two, three = grad(scaled_by(2.0)), grad(scaled_by(3.0))
    np.testing.assert_allclose(gradient_descent(two, x, 0.1, 1), x - 0.2 * np.cos(x),
                               rtol=1e-13)
    np.testing.assert_allclose(gradient_descent(three, x, 0.1, 1), x - 0.3 * np.cos(x),
                               rtol=1e-13)
    np.testing.assert_allclose(gradient_descent(two, x, 0.1, 1), x - 0.2 * np.cos(x),
                               rtol=1e-13)
    assert len(gradient_descent.signatures) == 3
    value, gx, fit, (v2, tangent) = with_value_and_keywords(
        value_and_grad(potential), g_misfit, adjit.jvp(potential), x)
    assert value == pytest.approx(potential(x), rel=1e-15) and v2 == value
    np.testing.assert_allclose(gx, 4 * x ** 3 - 6 * x, rtol=1e-13)
    np.testing.assert_allclose(fit, 4.0 * (x - 1.0), rtol=1e-15)
    assert tangent == pytest.approx(np.sum(4 * x ** 3 - 6 * x), rel=1e-14)


def test_source_is_readable_python_that_compiles():
    g = grad(programs.sum_of_sin)
    g(np.ones(3))
    src = g.source
    compile(src, "<adjit>", "exec")
    assert "def sum_of_sin_grad(x):" in src
    assert "# backward sweep" in src and "x_bar" in src
    assert "sum_of_sin, line" in src


def test_source_is_deterministic():
    a = grad(programs.lennard_jones).source_for(np.ones((3, 3)))
    b = grad(programs.lennard_jones).source_for(np.ones((3, 3)))
    assert a == b


def test_source_before_first_call_is_an_error():
    with pytest.raises(AdjitError, match="call the gradient once"):
        grad(programs.sum_of_sin).source


def test_show_stages():
    text = adjit.show(programs.horner, "normalized")
    compile(text, "<n>", "exec")
    assert "horner_normalized" in text
    assert "def horner(c, t)" in adjit.show(programs.horner, "source")
    assert adjit.show(programs.horner, "adjoint", np.ones(2), 0.5) == \
        grad(programs.horner).source_for(np.ones(2), 0.5)
    with pytest.raises(AdjitError):
        adjit.show(programs.horner, "bogus")


def test_specializations_per_argument_types():
    g = grad(programs.sum_of_sin)
    g1 = g(np.ones(3))
    g2 = g(np.ones(3, dtype=np.float32))
    np.testing.assert_allclose(g1, g2, rtol=1e-6)
    assert g2.dtype == np.float32


def test_many_threads_compile_once():
    g = grad(programs.running_product)
    x = np.array([1.0, 2.0, 3.0])
    results = []

    def work():
        results.append(g(x))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(g._specs) == 1
    for r in results:
        np.testing.assert_array_equal(r, [6.0, 3.0, 2.0])


def test_fastmath_option_gives_the_same_gradient_to_rounding():
    x = np.array([[0.0, 0, 0], [1.05, 0, 0], [0, 1.2, 0], [0.9, 0.8, 1.1]])
    exact = grad(programs.lennard_jones)(x)
    fast = grad(programs.lennard_jones, fastmath={"contract", "arcp", "nsz"})(x)
    np.testing.assert_allclose(fast, exact, rtol=1e-12)
