"""Large helpers called at several places: called as operations with gradients of their own
(adjit/outline.py), not copied into the generated code at every call.

The programs are written as pricing code is: FinancePy's normcdf (Hull's approximation,
which calls itself for negative x), Black-Scholes prices summed over a book of strikes,
helpers taking an int option type."""
import math
import re
import textwrap

import numba
import numpy as np
import pytest

import adjit
from adjit import outline
from fd import fd_grad, fd_hessian
from test_cache import _processes
from test_recursion import normcdf     # FinancePy's, as written there


def up_and_in_call(s, k, h, v, t):
    """The shape of FinancePy's barrier formulas: many normcdf calls on a few distances."""
    sq = v * np.sqrt(t)
    x1 = np.log(s / h) / sq
    y1 = np.log(h / s) / sq
    y = np.log(h * h / (s * k)) / sq
    return (s * normcdf(x1) - k * normcdf(x1 - sq)
            - s * (normcdf(-y) - normcdf(-y1))
            + k * (normcdf(-y + sq) - normcdf(-y1 + sq))
            + s * normcdf(y) - k * normcdf(y1 - sq)
            + 0.5 * s * (normcdf(x1 + sq) - normcdf(y + 2.0 * sq)))


BARRIER_ARGS = (100.0, 95.0, 110.0, 0.25, 1.0)


def _outlined_calls(source, name):
    """How many times the generated code calls the outlined `name` forward and backward."""
    return (len(re.findall(rf"\b\w*{name}_outlined\d*_value\(", source)),
            len(re.findall(rf"\b{name}_outlined\d*_cotangents\(", source)))


def test_a_helper_called_at_many_places_is_called_not_copied():
    g = adjit.grad(up_and_in_call, argnums=(0, 1, 2, 3, 4))
    got = np.array(g(*BARRIER_ARGS))
    source = g.source
    assert _outlined_calls(source, "normcdf") == (10, 10), source
    assert source.count("\n") < 300      # (inlined: 1,400 lines)
    fd = np.array([fd_grad(up_and_in_call, BARRIER_ARGS, k) for k in range(5)])
    np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-8)


def test_below_the_program_size_every_call_is_inlined(monkeypatch):
    outlined = np.array(adjit.grad(up_and_in_call, argnums=(0, 1, 2, 3, 4))(*BARRIER_ARGS))
    monkeypatch.setattr(outline, "OUTLINE_PROGRAM", 10 ** 6)
    g = adjit.grad(up_and_in_call, argnums=(0, 1, 2, 3, 4))
    inlined = np.array(g(*BARRIER_ARGS))
    assert _outlined_calls(g.source, "normcdf") == (0, 0)
    fd = np.array([fd_grad(up_and_in_call, BARRIER_ARGS, k) for k in range(5)])
    np.testing.assert_allclose(inlined, fd, rtol=1e-6, atol=1e-8)
    # the same derivative either way (the inlined copies compute it in another order)
    np.testing.assert_allclose(outlined, inlined, rtol=1e-13, atol=1e-13)


# Black-Scholes, exact normal CDF: its derivatives are known in closed form ----------------
@numba.njit
def ncdf(x):
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


@numba.njit
def bs_value(s, k, t, r, v, phi):
    """A call (phi = 1) or a put (phi = -1)."""
    sq = v * math.sqrt(t)
    d1 = (math.log(s / k) + (r + 0.5 * v * v) * t) / sq
    d2 = d1 - sq
    return phi * (s * ncdf(phi * d1) - k * math.exp(-r * t) * ncdf(phi * d2))


STRIKES = (70.0, 80.0, 90.0, 95.0, 100.0, 105.0, 110.0, 120.0)


def book(s, r, v):
    """Calls at four strikes, puts at four, one maturity: each price written out."""
    return (bs_value(s, 70.0, 1.5, r, v, 1) + bs_value(s, 80.0, 1.5, r, v, 1)
            + bs_value(s, 90.0, 1.5, r, v, 1) + bs_value(s, 95.0, 1.5, r, v, 1)
            + bs_value(s, 100.0, 1.5, r, v, -1) + bs_value(s, 105.0, 1.5, r, v, -1)
            + bs_value(s, 110.0, 1.5, r, v, -1) + bs_value(s, 120.0, 1.5, r, v, -1))


def _greeks(s, r, v, t=1.5):
    """(delta, rho, vega, gamma) of `book`, in closed form."""
    def pdf(x):
        return math.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)

    def cdf(x):
        return 0.5 * math.erfc(-x / math.sqrt(2.0))
    delta = rho = vega = gamma = 0.0
    for j, k in enumerate(STRIKES):
        phi = 1.0 if j < 4 else -1.0
        sq = v * math.sqrt(t)
        d1 = (math.log(s / k) + (r + 0.5 * v * v) * t) / sq
        d2 = d1 - sq
        delta += phi * cdf(phi * d1)
        rho += phi * k * t * math.exp(-r * t) * cdf(phi * d2)
        vega += s * pdf(d1) * math.sqrt(t)
        gamma += pdf(d1) / (s * sq)
    return delta, rho, vega, gamma


@pytest.fixture
def small_programs_outlined(monkeypatch):
    """Outline at the sizes of these short test programs (a book of eight prices is about
    200 statements inlined)."""
    monkeypatch.setattr(outline, "OUTLINE_PROGRAM", 50)
    monkeypatch.setattr(outline, "OUTLINE_SIZE", 20)


@pytest.mark.parametrize("s, r, v", [(100.0, 0.03, 0.2), (87.0, 0.01, 0.45),
                                     (131.0, 0.06, 0.12)])
def test_greeks_of_a_book_of_outlined_prices_are_the_closed_forms(
        small_programs_outlined, s, r, v):
    g = adjit.value_and_grad(book, argnums=(0, 1, 2))
    value, (delta, rho, vega) = g(s, r, v)
    assert _outlined_calls(g.source, "bs_value") == (8, 8), g.source
    assert value == book(s, r, v)       # the helper as numba compiles it, to the bit
    want = _greeks(s, r, v)
    np.testing.assert_allclose([delta, rho, vega], want[:3], rtol=1e-12, atol=1e-12)


def test_an_int_argument_of_an_outlined_helper_carries_no_derivative(small_programs_outlined):
    def straddles(s, v, put):
        return bs_value(s, 100.0, 1.0, 0.02, v, 1) + bs_value(s, 100.0, 1.0, 0.02, v, put) + \
            bs_value(s, 110.0, 1.0, 0.02, v, 1) + bs_value(s, 110.0, 1.0, 0.02, v, put)
    g = adjit.grad(straddles, argnums=(0, 1))
    for put in (-1, 1):
        got = g(105.0, 0.3, put)
        assert _outlined_calls(g.source, "bs_value")[1] == 4, g.source
        fd = [fd_grad(straddles, (105.0, 0.3, put), k) for k in range(2)]
        np.testing.assert_allclose(got, fd, rtol=1e-7)


def test_second_derivatives_inline_the_helper(small_programs_outlined):
    s, r, v = 100.0, 0.03, 0.2
    gamma = adjit.hessian(book, argnums=0)(s, r, v)
    np.testing.assert_allclose(gamma, _greeks(s, r, v)[3], rtol=1e-10)
    h = adjit.hessian(book, argnums=(0, 2))(s, r, v)
    want = fd_hessian(lambda x: book(x[0], r, x[1]), (np.array([s, v]),), 0)
    np.testing.assert_allclose(np.array(h).reshape(2, 2), want, rtol=1e-5, atol=1e-6)


def test_forward_mode_inlines_the_helper(small_programs_outlined):
    s, r, v = 100.0, 0.03, 0.2
    value, tangent = adjit.jvp(book, argnums=0)(s, r, v, 1.0)
    assert value == pytest.approx(book(s, r, v), rel=1e-14)
    assert tangent == pytest.approx(_greeks(s, r, v)[0], rel=1e-12)


def test_the_gradient_called_from_njit_code(small_programs_outlined):
    g = adjit.grad(book, argnums=2)

    @numba.njit
    def vegas(s, r, vols):
        out = np.empty_like(vols)
        for i in range(vols.shape[0]):
            out[i] = g(s, r, vols[i])
        return out
    vols = np.array([0.15, 0.2, 0.3])
    np.testing.assert_allclose(vegas(100.0, 0.03, vols),
                               [_greeks(100.0, 0.03, v)[2] for v in vols], rtol=1e-12)


# in loops: the helper's arguments recorded per step -------------------------------------
@numba.njit
def drift(x, a, b):
    """A smooth, non-polynomial force law: long enough to outline."""
    u = a * x - b
    w = math.tanh(u) + 0.1 * math.sin(3.0 * u)
    z = math.exp(-0.5 * u * u)
    y = w * (1.0 + 0.25 * z) - 0.05 * u * z
    return y / (1.0 + 0.01 * x * x)


def integrate(x0, a, b, steps):
    x = x0
    y = 0.0
    dt = 0.01
    for _ in range(steps):
        k1 = drift(x, a, b)
        k2 = drift(x + 0.5 * dt * k1, a, b)
        x = x + dt * k2
        y = y + dt * drift(y, b, a)
    return x * x + y


@pytest.mark.parametrize("checkpoint", [None, "auto", 4])
def test_a_time_loop_calling_an_outlined_helper(small_programs_outlined, checkpoint):
    args = (0.3, 1.2, 0.4, 200)
    g = adjit.grad(integrate, argnums=(0, 1, 2), checkpoint=checkpoint)
    got = g(*args)
    assert _outlined_calls(g.source, "drift")[1] == 3, g.source
    fd = [fd_grad(integrate, args, k) for k in range(3)]
    np.testing.assert_allclose(got, fd, rtol=1e-7, atol=1e-9)
    recorded = adjit.grad(integrate, argnums=(0, 1, 2))(*args)
    assert got == recorded      # checkpointing computes the same numbers in the same order


# what is not outlined ---------------------------------------------------------------------
@numba.njit
def noisy(x, scale):
    e = np.random.standard_normal()
    u = x * scale
    w = math.tanh(u) + math.sin(u) * math.cos(u)
    return w + 1e-3 * e * x + math.exp(-u * u)


def noisy_total(x, s):
    return noisy(x, s) + noisy(2.0 * x, s) + noisy(3.0 * x, s) + noisy(4.0 * x, s)


@numba.njit
def seed(n):
    np.random.seed(n)       # (numba's generator, which @njit code draws from)


def test_a_helper_that_draws_is_inlined(small_programs_outlined):
    g = adjit.grad(noisy_total, argnums=0)
    seed(7)
    got = g(0.4, 1.3)
    assert _outlined_calls(g.source, "noisy") == (0, 0)

    def replay(x):
        seed(7)
        return noisy_total(x, 1.3)
    assert got == pytest.approx(fd_grad(replay, (0.4,), 0), rel=1e-7)


def printed(x):
    u = 0.5 * x
    print("u is", u)
    w = math.tanh(u) + math.sin(u) * math.cos(u)
    return w + math.exp(-u * u) + math.log1p(u * u)


def printing_total(x):
    return printed(x) + printed(2.0 * x) + printed(3.0 * x)


def test_a_helper_that_prints_is_inlined_and_prints_once_per_call(
        small_programs_outlined, capfd):
    g = adjit.grad(printing_total)
    got = g(0.7)
    assert _outlined_calls(g.source, "printed") == (0, 0)
    assert capfd.readouterr().out.count("u is") == 3
    assert got == pytest.approx(fd_grad(printing_total, (0.7,), 0), rel=1e-7)


def scaled(v, c):
    u = c * v
    w = np.tanh(u) + np.sin(u) * np.cos(u)
    return np.sum(w + np.exp(-u * u))


def pair(x, c):
    u = c * x
    return math.tanh(u) + math.sin(u) * math.cos(u) + math.exp(-u * u), math.log1p(u * u)


def arrays_and_tuples(v, x):
    a, b = pair(x, 1.5)
    c, d = pair(x, 2.5)
    return scaled(v, 1.0) + scaled(v, 2.0) + scaled(v, 3.0) + a * b + c * d


def test_helpers_returning_tuples_are_inlined(small_programs_outlined):
    v = np.linspace(-1.0, 1.0, 5)
    g = adjit.grad(arrays_and_tuples, argnums=(0, 1))
    gv, gx = g(v, 0.6)
    assert _outlined_calls(g.source, "pair") == (0, 0)
    assert _outlined_calls(g.source, "scaled") == (3, 3)     # (its array only read)
    np.testing.assert_allclose(gv, fd_grad(arrays_and_tuples, (v, 0.6), 0), rtol=1e-7)
    assert gx == pytest.approx(fd_grad(arrays_and_tuples, (v, 0.6), 1), rel=1e-7)


def inner_python(u):
    return math.tanh(u) + math.sin(u) * math.cos(u) + math.exp(-u * u)


def outer_python(x, c):
    u = c * x
    return inner_python(u) * inner_python(2.0 * u) + math.log1p(u * u)


def python_helpers(x):
    return outer_python(x, 1.0) + outer_python(x, 2.0) + outer_python(x, 3.0)


def test_python_helpers_numba_does_not_compile_alone_are_inlined(small_programs_outlined):
    # (outer_python calls a Python function: numba does not compile it as it is; its
    # copies stay inlined; inner_python compiles, and is called at six places)
    g = adjit.grad(python_helpers)
    got = g(0.45)
    assert _outlined_calls(g.source, "outer_python") == (0, 0)
    assert _outlined_calls(g.source, "inner_python") == (6, 6), g.source
    assert got == pytest.approx(fd_grad(python_helpers, (0.45,), 0), rel=1e-7)


class FinError(Exception):
    pass


@numba.njit
def checked_value(s, k, v, phi):
    if phi != 1 and phi != -1:
        raise FinError("Unknown option type")
    return bs_value(s, k, 1.0, 0.02, v, phi)


def checked_book(s, v, phi):
    return checked_value(s, 90.0, v, phi) + checked_value(s, 100.0, v, phi) + \
        checked_value(s, 110.0, v, phi)


def test_an_outlined_helper_raises_as_numba_does(small_programs_outlined):
    g = adjit.grad(checked_book, argnums=(0, 1))
    got = g(100.0, 0.25, -1)
    assert _outlined_calls(g.source, "checked_value")[1] == 3, g.source
    np.testing.assert_allclose(got, [fd_grad(checked_book, (100.0, 0.25, -1), k)
                                     for k in range(2)], rtol=1e-7)
    with pytest.raises(FinError, match="Unknown option type"):
        g(100.0, 0.25, 2)


def test_show_prints_the_outlined_calls(small_programs_outlined):
    text = adjit.show(book, "adjoint", 100.0, 0.03, 0.2, argnums=(0, 1, 2))
    # (the gradient alone reads no price, but the forward sweep keeps the calls: a helper
    # may raise, and raises where numba's code does)
    assert _outlined_calls(text, "bs_value") == (8, 8), text
    g = adjit.grad(book, argnums=(0, 1, 2))
    np.testing.assert_allclose(g(100.0, 0.03, 0.2), _greeks(100.0, 0.03, 0.2)[:3],
                               rtol=1e-12)
    assert g.source == text


CACHED = textwrap.dedent("""
    import json, math, time
    import numba
    import adjit
    from adjit import outline
    outline.OUTLINE_PROGRAM, outline.OUTLINE_SIZE = 50, 20

    @numba.njit
    def ncdf(x):
        return 0.5 * math.erfc(-x / math.sqrt(2.0))

    @numba.njit
    def call(s, k, v):
        sq = v * math.sqrt(2.0)
        d1 = (math.log(s / k) + 0.5 * v * v * 2.0) / sq
        return s * ncdf(d1) - k * ncdf(d1 - sq)

    def book(s, v):
        return call(s, 90.0, v) + call(s, 100.0, v) + call(s, 110.0, v) + call(s, 120.0, v)

    g = adjit.grad(book, argnums=(0, 1), cache=True)
    t = time.perf_counter()
    gs, gv = g(100.0, 0.2)
    first = time.perf_counter() - t
    hits = sum(g._called.dispatcher.stats.cache_hits.values())
    print(json.dumps({"gs": gs, "gv": gv, "hits": hits, "first": first,
                      "outlined": "call_outlined_cotangents(" in g.source}))
""")


def test_a_gradient_calling_an_outlined_helper_loads_from_the_disk_cache(tmp_path):
    runs = _processes(tmp_path, "outlined_script.py", CACHED, 2)
    assert runs[0]["outlined"] and runs[1]["outlined"]
    assert runs[0]["hits"] == 0 and runs[1]["hits"] == 1, runs
    assert (runs[1]["gs"], runs[1]["gv"]) == (runs[0]["gs"], runs[0]["gv"])
    s, v, t = 100.0, 0.2, 2.0
    delta = vega = 0.0
    for k in (90.0, 100.0, 110.0, 120.0):
        d1 = (math.log(s / k) + 0.5 * v * v * t) / (v * math.sqrt(t))
        delta += 0.5 * math.erfc(-d1 / math.sqrt(2.0))
        vega += s * math.exp(-0.5 * d1 * d1) / math.sqrt(2.0 * math.pi) * math.sqrt(t)
    np.testing.assert_allclose([runs[1]["gs"], runs[1]["gv"]], [delta, vega], rtol=1e-12)


# helpers given arrays they only read ---------------------------------------------------------
class FinError2(Exception):
    pass


@numba.njit(numba.float64(numba.float64[:], numba.float64, numba.float64, numba.float64),
            fastmath=True)
def smile_vol(params, f, k, t):
    """FinancePy's vol_function_clark, as written there: a polynomial in the strike's
    normal-CDF delta, read from a parameter array (given a signature, it takes any array)."""
    if f < 0.0:
        print("f:", f)
        raise FinError2("Forward is negative")
    if k < 0.0:
        print("k:", k)
        raise FinError2("Strike is negative")
    x = np.log(f / k)
    sigma0 = np.exp(params[0])
    arg = x / (sigma0 * np.sqrt(t))
    deltax = normcdf(arg) - 0.50
    f = 0.0
    for i in range(0, len(params)):
        f += params[i] * (deltax ** i)
    return np.exp(f)


def smile_fit(params, f, t):
    """Squared misfit of the smile at five quoted strikes."""
    return ((smile_vol(params, f, 0.8, t) - 0.14) ** 2 + (smile_vol(params, f, 0.9, t) - 0.12) ** 2
            + (smile_vol(params, f, 1.0, t) - 0.1) ** 2 + (smile_vol(params, f, 1.1, t) - 0.11) ** 2
            + (smile_vol(params, f, 1.2, t) - 0.13) ** 2)


def test_a_helper_reading_a_parameter_array_is_outlined(small_programs_outlined):
    params = np.array([np.log(0.1), 0.05, 0.3])
    g = adjit.grad(smile_fit, argnums=(0, 1))
    gp, gf = g(params.copy(), 1.05, 0.5)
    # (its prints come before raises: the call never returns there, nor is made again)
    assert _outlined_calls(g.source, "smile_vol")[1] == 5, g.source
    np.testing.assert_allclose(gp, fd_grad(smile_fit, (params, 1.05, 0.5), 0), rtol=1e-7,
                               atol=1e-10)
    assert gf == pytest.approx(fd_grad(smile_fit, (params, 1.05, 0.5), 1), rel=1e-7)
    with pytest.raises(FinError2, match="Forward is negative"):
        g(params, -1.0, 0.5)


def smile_steps(params, f, t, steps):
    """A parameter array changed in place between calls (a gradient step): the backward
    sweep reads the values each call was given."""
    e = 0.0
    for _ in range(steps):
        e += smile_vol(params, f, 0.9, t) + smile_vol(params, f, 1.1, t)
        params[1] = params[1] * 0.9 + 0.01 * e
    return e


def test_an_array_changed_between_outlined_calls(small_programs_outlined):
    params = np.array([np.log(0.1), 0.05, 0.3])
    g = adjit.grad(smile_steps, argnums=(0, 1))
    gp, gf = g(params.copy(), 1.02, 0.5, 4)
    assert _outlined_calls(g.source, "smile_vol")[1] == 2, g.source
    np.testing.assert_allclose(gp, fd_grad(smile_steps, (params, 1.02, 0.5, 4), 0),
                               rtol=1e-7, atol=1e-10)
    assert gf == pytest.approx(fd_grad(smile_steps, (params, 1.02, 0.5, 4), 1), rel=1e-7)


@numba.njit
def rescaled(w, s):
    w[0] = w[0] * s
    return math.tanh(w[0]) + math.sin(w[1] * s) + math.exp(-w[0] * w[0]) + w[2] * s


def rescaling(w, s):
    return rescaled(w, s) + rescaled(w, 2.0 * s) + rescaled(w, 3.0 * s)


def test_a_helper_writing_its_array_is_inlined(small_programs_outlined):
    w = np.array([0.3, 0.7, 1.1])
    g = adjit.grad(rescaling, argnums=(0, 1))
    gw, gs = g(w.copy(), 0.8)
    assert "_cotangents(" not in g.source
    np.testing.assert_allclose(gw, fd_grad(rescaling, (w, 0.8), 0), rtol=1e-7)
    assert gs == pytest.approx(fd_grad(rescaling, (w, 0.8), 1), rel=1e-7)


def ping(x, n):
    u = math.tanh(x) + math.sin(x) * math.cos(x) + math.exp(-x * x)
    if n > 0:
        return u + pong(0.5 * x, n - 1)
    return u


def pong(x, n):
    v = math.log1p(x * x) + math.atan(x) * math.sinh(0.1 * x)
    if n > 0:
        return v * ping(0.7 * x, n - 1)
    return v


def ping_pong(x):
    return ping(x, 1) + ping(2.0 * x, 1) + pong(x, 1) + pong(3.0 * x, 1)


def test_helpers_calling_each_other(small_programs_outlined):
    got = adjit.grad(ping_pong)(0.3)
    assert got == pytest.approx(fd_grad(ping_pong, (0.3,), 0), rel=1e-8)


# FinancePy's implied strike: a secant solver given the objective and a tuple of its
# arguments, the parameter array among them (fx_vol_surface.solver_for_smile_strike_fast)
@numba.njit
def smile_delta(k, *args):
    params = args[0]
    f = args[1]
    target = args[2]
    v = params[0] + params[1] * (k - f) + params[2] * (k - f) ** 2
    return 0.5 * math.erfc((math.log(k / f) - 0.5 * v * v) / (v * math.sqrt(2.0))) - target


@numba.njit
def secant(func, x0, args=(), tol=1e-13, maxiter=50):
    p0 = 1.0 * x0
    p1 = x0 * (1.0 + 1e-4) + 1e-4
    q0 = func(p0, *args)
    q1 = func(p1, *args)
    for _ in range(maxiter):
        if q1 == q0:
            p = (p1 + p0) / 2.0
            break
        p = p1 - q1 * (p1 - p0) / (q1 - q0)
        if abs(p - p1) < tol:
            break
        p0, q0 = p1, q1
        p1 = p
        q1 = func(p1, *args)
    return p    # (numba's typed code: `p` is unassigned on the path that never loops)


@numba.njit
def strike_for(params, f, target):
    return secant(smile_delta, f, args=(params, f, target))


def strikes_fit(params, f):
    return (strike_for(params, f, 0.25) - 1.1) ** 2 + (strike_for(params, f, 0.75) - 0.9) ** 2


@numba.njit
def smile_vol_at(params, f, k):
    x = k - f
    return params[0] + params[1] * x + params[2] * x * x + 0.01 * math.tanh(x) * math.exp(-x * x)


@numba.njit
def vol_gap(k, *args):
    params = args[0]        # (the parameter array, read from the tuple of arguments)
    f = args[1]
    target = args[2]
    return smile_vol_at(params, f, k) - target


def quotes_fit(params, f):
    quotes = (params, f, 0.2)
    return vol_gap(0.9, *quotes) ** 2 + vol_gap(1.0, *quotes) ** 2 + vol_gap(1.1, *quotes) ** 2


@pytest.mark.parametrize("fit, helper, calls, rtol", [
    (strikes_fit, "strike_for", 2, 1e-6),       # (the secant solver, followed by purity)
    (quotes_fit, "smile_vol_at", 3, 1e-7)],      # (an array read whole from a tuple)
    ids=["a solver given a tuple holding the array", "an array read from a tuple"])
def test_arrays_passed_through_tuples(small_programs_outlined, fit, helper, calls, rtol):
    params = np.array([0.2, -0.05, 0.1])
    g = adjit.grad(fit, argnums=(0, 1))
    gp, gf = g(params.copy(), 1.0)
    assert _outlined_calls(g.source, helper) == (calls, calls), g.source
    np.testing.assert_allclose(gp, fd_grad(fit, (params, 1.0), 0), rtol=rtol, atol=1e-9)
    assert gf == pytest.approx(fd_grad(fit, (params, 1.0), 1), rel=rtol)
