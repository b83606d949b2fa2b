"""@njit helpers adjit cannot read, called as numba compiles them where no derivative flows
through them (API.md: calls with no derivative rule). The programs are written as numba
users write them: a gravitational lens's deflection computed with complex numbers (as
lenstronomy's EPL_numba does), fixed while a source is fitted; helpers with dicts, with
cmath, returning tuples, checking their input. The oracles are numba's own functions and
central finite differences of them. A helper that writes into an array it is given, returns
a view of one, draws random numbers or prints is refused, as is a derivative that would
flow through any such helper."""
import cmath

import numba
from numba.extending import overload, overload_method
import numpy as np
import pytest

import adjit
from adjit import AdjitError, stop_gradient

from fd import fd_grad

RNG = np.random.default_rng(7)
X = RNG.uniform(-2.0, 2.0, 40)
Y = RNG.uniform(-2.0, 2.0, 40)
DATA = RNG.normal(size=40)
LENS = np.array([1.0, 2.0, 0.8])
SRC = np.array([1.0, 0.1, -0.2, 0.5])


@numba.njit
def alpha(x, y, b, q, t):
    """A power-law lens's deflection as a complex number (Tessore & Metcalf's form)."""
    zz = x * q + 1j * y
    R = np.abs(zz)
    phi = np.angle(zz)
    return 2 * b / (1 + q) * (b / R) ** (t - 1) * np.exp(1j * phi) * (1 - t / 2)


@numba.njit
def derivatives(x, y, theta_E, gamma, q, center_x=0.0, center_y=0.0):
    a = alpha(x - center_x, y - center_y, theta_E, q, gamma - 1)
    return a.real, a.imag


@numba.njit
def sersic_loss(src, x, y, lens, data):
    ax, ay = derivatives(x, y, lens[0], lens[1], lens[2], center_y=0.1)
    bx = x - ax
    by = y - ay
    model = src[0] * np.exp(-((bx - src[1]) ** 2 + (by - src[2]) ** 2) / src[3])
    return np.sum((model - data) ** 2)


def test_lens_fixed_source_fitted():
    args = (SRC, X, Y, LENS, DATA)
    value, g = adjit.value_and_grad(sersic_loss)(*args)
    assert value == sersic_loss(*args)
    np.testing.assert_allclose(g, fd_grad(sersic_loss, args, 0), rtol=1e-6, atol=1e-8)


def test_derivative_through_the_helper_is_refused_saying_why():
    with pytest.raises(AdjitError) as info:
        adjit.grad(sersic_loss, argnums=3)(SRC, X, Y, LENS, DATA)
    text = str(info.value)
    assert "a derivative would have to flow through `derivatives`" in text
    assert "an @njit function adjit cannot read" in text
    assert "the constant 1j is not supported" in text
    assert "test_unread_helpers.py" in text


def test_second_derivatives_with_the_lens_fixed():
    args = (SRC, X, Y, LENS, DATA)
    H = adjit.hessian(sersic_loss)(*args)
    g = adjit.grad(sersic_loss)
    expected = np.array([fd_grad(lambda s: g(s, *args[1:])[k], (SRC,), 0)
                         for k in range(SRC.size)])
    np.testing.assert_allclose(H, expected, rtol=1e-5, atol=1e-6 * np.abs(H).max())
    with pytest.raises(AdjitError, match="flow through `derivatives`"):
        adjit.hessian(sersic_loss, argnums=3)(*args)


@numba.njit
def lens_stopped(src, x, y, lens, data):
    ax, ay = derivatives(x, y, stop_gradient(lens[0]), stop_gradient(lens[1]),
                         stop_gradient(lens[2]))
    model = src[0] * np.exp(-((x - ax - src[1]) ** 2 + (y - ay - src[2]) ** 2) / src[3])
    return np.sum((model - data) ** 2) + np.sum(lens ** 2)


def test_stop_gradient_on_the_helpers_arguments():
    args = (SRC, X, Y, LENS, DATA)
    g = adjit.grad(lens_stopped, argnums=3)(*args)
    np.testing.assert_allclose(g, 2 * LENS, rtol=1e-14)


@numba.njit
def phase_sum(w, t):
    s = 0j
    for k in range(w.shape[0]):
        s += cmath.exp(1j * w[k] * t)
    return abs(s)


@numba.njit
def weighted(x, w, ts):
    total = 0.0
    for i in range(ts.shape[0]):
        total += x[i] * phase_sum(w, ts[i]) + x[i] ** 2
    return total


def test_scalar_helper_in_a_loop():
    w = np.linspace(0.1, 1.0, 6)
    ts = np.linspace(0.0, 2.0, 5)
    x = np.linspace(-1.0, 1.0, 5)
    expected = np.array([phase_sum(w, t) for t in ts]) + 2 * x
    np.testing.assert_allclose(adjit.grad(weighted)(x, w, ts), expected, rtol=1e-13)
    for checkpoint in ("auto", 2):      # (a call with no effect: computed again as it is)
        np.testing.assert_allclose(adjit.grad(weighted, checkpoint=checkpoint)(x, w, ts),
                                   expected, rtol=1e-13)
    v = np.linspace(0.5, 1.5, 5)
    value, tangent = adjit.jvp(weighted)(x, w, ts, v)
    assert value == pytest.approx(weighted(x, w, ts), rel=1e-14)
    assert tangent == pytest.approx(np.dot(expected, v), rel=1e-12)


@numba.njit
def lookup_scale(n):
    table = {1: 0.5, 2: 0.25, 3: 0.125}
    return table[n]


@numba.njit
def dict_scaled(x, n):
    return lookup_scale(n) * np.sum(x ** 2)


def test_helper_with_a_dict():
    x = np.array([1.0, -2.0, 3.0])
    np.testing.assert_allclose(adjit.grad(dict_scaled)(x, 2), 0.5 * x, rtol=1e-15)


@numba.njit
def check_positive(x):
    for v in x:
        if not v > 0.0:
            raise ValueError("x must be positive")
    _ = {0: 0}


@numba.njit
def checked_log(x):
    check_positive(x)
    return np.sum(np.log(x))


def test_helper_that_checks_and_raises():
    x = np.array([1.0, 2.0, 4.0])
    np.testing.assert_allclose(adjit.grad(checked_log)(x), 1 / x, rtol=1e-15)
    with pytest.raises(ValueError, match="must be positive"):
        adjit.grad(checked_log)(np.array([1.0, -1.0]))


@numba.njit
def fills(out, y):
    for i in range(out.shape[0]):
        out[i] = abs(y[i] + 1j)


@numba.njit
def writer(x, y):
    out = np.zeros(x.shape[0])
    fills(out, y)
    return np.sum(out * x)


@numba.njit
def tail(y):
    z = y + 1j     # noqa: F841 (what adjit cannot read)
    return y[1:]


@numba.njit
def viewer(x, y):
    return np.sum(tail(y) * x[1:])


@numba.njit
def noisy_phase(y):
    return abs(y[0] + 1j) + np.random.normal()


@numba.njit
def drawer(x, y):
    return noisy_phase(y) * x[0]


@numba.njit
def talky(y):
    print(y[0] + 1j)
    return 1.0


@numba.njit
def printer(x, y):
    return talky(y) * x[0]


@pytest.mark.parametrize("f, helper, why", [
    (writer, "fills", "writes into its array argument `out`"),
    (viewer, "tail", "may return a view of its array argument `y`"),
    (drawer, "noisy_phase", "a random draw"),
    (printer, "talky", "prints"),
])
def test_helpers_kept_only_as_pure_functions(f, helper, why):
    with pytest.raises(AdjitError) as info:
        adjit.grad(f)(np.ones(3), np.ones(3))
    text = str(info.value)
    assert "1j is not supported" in text
    assert f"adjit does not call `{helper}` as numba compiles it" in text and why in text


@numba.njit
def deflection_angle(x, y, b):
    ax, ay = derivatives(x, y, b, 2.0, 0.9)
    return np.sqrt(ax ** 2 + ay ** 2)


@numba.njit
def nested(src, x, y):
    r = deflection_angle(x, y, 1.2)
    return np.sum(src[0] * np.exp(-r ** 2 / src[1]))


def test_readable_helper_calling_an_unread_one():
    src = np.array([1.5, 0.7])
    args = (src, X, Y)
    np.testing.assert_allclose(adjit.grad(nested)(*args), fd_grad(nested, args, 0),
                               rtol=1e-6, atol=1e-9)


@numba.njit
def add_in_place(a, y):
    np.add(a, abs(y[0] + 1j), a)


@numba.njit
def through_a_list(a, y):
    rows = [a]
    rows[0][0] = abs(y[0] + 1j)


@numba.njit
def through_rows(a, y):
    for row in a.reshape(1, -1):
        row[0] = abs(y[0] + 1j)


@numba.njit
def sorts(a, y):
    a.sort()
    a[0] += abs(y[0] + 1j)


@numba.njit
def clips(a, y):
    np.clip(a, 0.0, abs(y[0] + 1j), a)


@numba.njit
def rounds(a, y):
    np.around(a, 1, a)
    a[0] += abs(y[0] + 1j)


@numba.njit
def cleans(a, y):
    np.nan_to_num(a, copy=False)
    a[0] += 0.0 * abs(y[0] + 1j)


@numba.njit
def fills_zero(a, y):
    a.fill(abs(y[0] + 1j))


@numba.njit
def zero_last(*arrays):
    arrays[-1][0] = 0.0


@numba.njit
def through_star_args(a, y):
    scratch = np.zeros(2)
    zero_last(scratch, a)
    return abs(y[0] + 1j)


@numba.njit
def own_copy_written(a, y):
    b = np.empty_like(a)
    b[:] = a
    b[0] = abs(y[0] + 1j)
    return b


@numba.njit
def own_full_like_written(a, y):
    # statsforecast's pegelsresid_C: e = np.full_like(y, fill_value=np.nan), then written
    b = np.full_like(a, fill_value=np.nan)
    b[:] = a
    b[0] = abs(y[0] + 1j)
    return b


@numba.njit
def written_through_reshape(a, y):
    b = np.reshape(a, (a.size,))
    b[0] = abs(y[0] + 1j)


def _calls(helper, returns):
    if returns:
        def f(x, y):
            return np.sum(helper(y.copy(), y) * x)
    else:
        def f(x, y):
            a = y.copy()
            helper(a, y)
            return np.sum(a * x)
    return f


@pytest.mark.parametrize("helper", [add_in_place, through_a_list, through_rows, sorts, clips,
                                    rounds, cleans, fills_zero, through_star_args,
                                    written_through_reshape])
def test_writes_seen_through_every_form(helper):
    with pytest.raises(AdjitError, match="writes into its array argument `a`"):
        adjit.grad(_calls(helper, False))(np.ones(3), np.ones(3))


@numba.njit
def folded(a, y):
    return np.sum(a.reshape((2, -1)), axis=0) * abs(y[0] + 1j)


@numba.njit
def reads_folded(x, y):
    return np.sum(folded(y[:4], y) * x) + np.sum(folded(y[4:], y) * x)


def test_a_helper_reshaping_a_slice_it_is_given():
    # numba compiles reshape for contiguous arrays alone (y[:4] of a C array is one); adjit
    # gives the helper its arguments as contiguous arrays too
    x, y = np.array([1.0, -2.0]), np.linspace(0.5, 4.0, 8)
    expected = folded(y[:4], y) + folded(y[4:], y)
    value, g = adjit.value_and_grad(reads_folded)(x, y)
    assert value == reads_folded(x, y)
    np.testing.assert_allclose(g, expected, rtol=1e-15)


@pytest.mark.parametrize("helper", [own_copy_written, own_full_like_written])
def test_a_helpers_own_copy_may_be_written(helper):
    # np.full_like's result is a new array (its registry entry says so): writing it writes
    # nothing the caller gave
    x, y = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])
    f = _calls(helper, True)
    expected = helper(y.copy(), y)
    np.testing.assert_allclose(adjit.grad(f)(x, y), expected, rtol=1e-15)
    np.testing.assert_allclose(adjit.grad(f)(x, y), fd_grad(f, (x, y), 0), rtol=1e-7)


CACHED_HELPER = """
import numba
from numba.extending import overload, overload_method
import numpy as np


@numba.njit(cache=True)
def deflect(x, y, b):
    a = b * np.exp(1j * np.arctan2(y, x))
    return a.real, a.imag
"""

CACHED_CALLER = """
import numba
from numba.extending import overload, overload_method
import numpy as np
import adjit
from cached_helper import deflect


@numba.njit
def loss(s, b, x, y):
    ax, ay = deflect(x, y, b[0])
    return np.sum((s[0] * (x - ax) + s[1] * (y - ay)) ** 2)


x = np.linspace(0.1, 1.0, 5)
y = np.linspace(-1.0, 1.0, 5)
s = np.array([1.0, 2.0])
g = adjit.grad(loss)(s, np.array([0.5]), x, y)
h = 1e-6
fd = [(loss(s + h * e, np.array([0.5]), x, y) - loss(s - h * e, np.array([0.5]), x, y)) / (2 * h)
      for e in np.eye(2)]
print("ok" if np.allclose(g, fd, rtol=1e-6) else f"wrong {g} {fd}")
"""


def test_a_helper_numba_loads_from_its_disk_cache(tmp_path):
    # numba keeps no typed code of a function it loads from its cache (cache=True, every
    # run after the first): the helper is compiled again, uncached, to be read
    import os
    import subprocess
    import sys
    (tmp_path / "cached_helper.py").write_text(CACHED_HELPER)
    (tmp_path / "caller.py").write_text(CACHED_CALLER)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               ADJIT_CACHE_DIR=str(tmp_path / "adjit_cache"))
    for run in range(2):
        done = subprocess.run([sys.executable, "caller.py"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.stdout.strip().endswith("ok"), (run, done.stdout, done.stderr[-2000:])


@numba.njit(inline="always")
def inlined_phase(t):
    return abs(cmath.exp(1j * t) + 0.5)


@numba.njit
def uses_inlined(x, t):
    return x * inlined_phase(t)


@numba.njit
def twice(x, mode):
    if mode == "complex":
        return x * abs(1.0 + 1j)
    return x * x


@numba.njit
def modes(x):
    return twice(x[0], "complex") + twice(x[1], "real")


def test_inline_always_helper_and_helpers_readable_at_one_call():
    assert adjit.grad(uses_inlined)(2.0, 0.3) == pytest.approx(inlined_phase(0.3), rel=1e-15)
    # twice(x, "real") is read and differentiated; twice(x, "complex") is numba's call,
    # through which a derivative would flow: refused there alone
    with pytest.raises(AdjitError, match="flow through `twice`"):
        adjit.grad(modes)(np.array([1.0, 3.0]))

    @numba.njit
    def one_kept(x):
        return twice(2.0, "complex") * x[0] + twice(x[1], "real")
    np.testing.assert_allclose(adjit.grad(one_kept)(np.array([1.0, 3.0])),
                               [2.0 * abs(1.0 + 1j), 6.0], rtol=1e-15)


def spectrum(x, scale):
    """A function numba compiles from its @overload (codex-africanus's pattern)."""


@overload(spectrum)
def _spectrum_impl(x, scale):
    def impl(x, scale):
        out = np.empty(x.shape[0])
        for i in range(x.shape[0]):
            out[i] = abs(cmath.exp(1j * scale * x[i]) + 0.5)
        return out
    return impl


def normalized(x):
    """Another, which normalizes in place."""


@overload(normalized)
def _normalized_impl(x):
    def impl(x):
        x /= np.sum(x)
        return x.shape[0]
    return impl


@numba.njit
def power(x, scale):
    z = 1j      # noqa: F841 (what adjit cannot read)
    return spectrum(x, scale)


@numba.njit
def renormalizes(x):
    z = 1j      # noqa: F841
    return normalized(x)


def test_helpers_calling_overloaded_functions():
    def fit(w, x):
        return np.sum(w * power(x, 0.7))

    def fit_normalized(w, x):
        c = x.copy()
        n = renormalizes(c)
        return np.sum(w * c) * n
    w, x = np.array([1.0, 2.0, 3.0]), np.array([0.2, 0.5, 0.9])
    np.testing.assert_allclose(adjit.grad(fit)(w, x), power(x, 0.7), rtol=1e-15)
    with pytest.raises(AdjitError, match="writes into its array argument `x`"):
        adjit.grad(fit_normalized)(w, x)


@numba.njit
def penalty(y):
    for v in y:
        if v < 0.0:
            raise ValueError("y must be non-negative")
    return abs(y[0] + 1j)


@numba.njit
def penalized(x, y):
    return np.sum(x ** 2) + penalty(y)


def test_a_kept_helper_raises_though_no_derivative_reads_its_value():
    x = np.array([0.3, -0.7])
    for derivative in (adjit.grad, adjit.value_and_grad, adjit.hessian):
        with pytest.raises(ValueError, match="non-negative"):
            derivative(penalized)(x, np.array([-1.0]))
    np.testing.assert_allclose(adjit.grad(penalized)(x, np.array([1.0])), 2 * x, rtol=1e-15)


def scale_by(a, how):
    """An @overload choosing its implementation by a string literal."""


@overload(scale_by, prefer_literal=True)
def _scale_by(a, how):
    if not isinstance(how, numba.types.StringLiteral):
        return None
    if how.literal_value == "inplace":
        def impl(a, how):
            a *= 2.0
            return 1.0
    else:
        def impl(a, how):
            return np.sum(a)
    return impl


@overload_method(numba.types.Array, "double_inplace")
def _double_inplace(arr):
    def impl(arr):
        for i in range(arr.shape[0]):
            arr[i] *= 2.0
    return impl


@numba.njit
def literal_writer(a, y):
    t = scale_by(a, "sum")
    scale_by(a, "inplace")
    return t * abs(y[0] + 1j)


@numba.njit
def method_writer(a, y):
    a.double_inplace()
    return abs(y[0] + 1j)


def total_of(*arrays):
    """An @overload taking *args."""


@overload(total_of)
def _total_of(*arrays):
    def impl(*arrays):
        s = 0.0
        for a in arrays:
            s += np.sum(a)
        return s
    return impl


@numba.njit
def star_overload(a, y):
    return total_of(a, y) * abs(y[0] + 1j)


@pytest.mark.parametrize("helper, why", [
    (literal_writer, "writes into its array argument `a`"),
    (method_writer, "an @overload_method adjit cannot see into"),
    (star_overload, "calls `total_of`, which adjit cannot see into")])
def test_overloads_a_kept_helper_calls(helper, why):
    def f(x, y):
        a = y.copy()
        s = np.sum(a * x ** 2)
        return s * helper(a, y)
    with pytest.raises(AdjitError, match=why):
        adjit.grad(f)(np.array([0.3, -0.7, 1.1]), np.array([0.5, 1.5, -0.4]))


@numba.njit
def parts_of(y):
    z = np.exp(1j * y)
    return z.real.copy(), z.imag.copy()


@numba.njit
def tuple_held(x, y):
    r = parts_of(y)
    return np.sum(r[0] * x) + np.sum(r[1] * x ** 2)


def test_a_kept_helpers_tuple_held_in_a_name():
    x, y = np.array([0.3, -0.7, 1.1]), np.array([0.5, 1.5, -0.4])
    r = parts_of(y)
    np.testing.assert_allclose(adjit.grad(tuple_held)(x, y), r[0] + 2 * x * r[1], rtol=1e-14)
