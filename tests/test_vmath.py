"""adjit.runtime.vmath: accuracy over each function's whole domain (about 1.2e6 points per
function, against a long-double reference and against numpy), the special values numpy
gives (infinities, nan, signed zeros, subnormal results, overflow thresholds), hard
arguments of sin and cos, the constants, and, in subprocesses, that an optimized loop is
vectorized and that the variant for targets without FMA is as accurate."""
import math
import os
import platform
import subprocess
import sys
import textwrap
from fractions import Fraction

import numba
import numpy as np
import pytest
import scipy.special

from adjit.runtime import vmath

LD = np.longdouble
EXTENDED = np.finfo(LD).nmant >= 63         # x87 long double: a reference 11 bits wider
ULP_BOUND = 2.0
NAMES = ["exp", "expm1", "log", "log1p", "tanh", "sigmoid", "sin", "cos", "pow"]
N = 200_000                                 # points per sample; 6 samples per function


def _loop1(f):
    @numba.njit
    def run(a):
        out = np.empty_like(a)
        for i in range(a.size):
            out[i] = f(a[i])
        return out
    return run


def _loop2(f):
    @numba.njit
    def run(a, b):
        out = np.empty_like(a)
        for i in range(a.size):
            out[i] = f(a[i], b[i])
        return out
    return run


_LOOPS = {}


def apply(name, *args):
    """vmath.<name> applied elementwise by one compiled numba loop per function."""
    if name not in _LOOPS:
        _LOOPS[name] = (_loop2 if name == "pow" else _loop1)(getattr(vmath, name))
    return _LOOPS[name](*(np.ascontiguousarray(a, np.float64) for a in args))


def numpy_ref(name, *args):
    """numpy's float64 result (scipy's expit for sigmoid); np.power with array exponents
    (numpy's scalar-exponent shortcut power(x, 0.5) = sqrt(x) differs at -0.0 and -inf)."""
    with np.errstate(all="ignore"):
        if name == "sigmoid":
            return scipy.special.expit(args[0])
        if name == "pow":
            return np.power(args[0], np.asarray(args[1], np.float64).copy())
        return getattr(np, name)(*args)


def exact_ref(name, *args):
    """The result in long double (64-bit significand): within 2^-63 relative of the exact
    value, so its error in ulps of a double is 2^-11 at most."""
    wide = tuple(np.asarray(a, np.float64).astype(LD) for a in args)
    with np.errstate(all="ignore"):
        if name == "sigmoid":
            return 1 / (1 + np.exp(-wide[0]))
        if name == "pow":
            return np.power(*wide)
        return getattr(np, name)(*wide)


def ulp_errors(got, exact):
    """|got - exact| in ulps of the exact value (2**(e - 52) for 2**e <= |exact| < 2**(e+1),
    at least 2**-1074); inf where a non-finite result differs from the rounded reference."""
    with np.errstate(all="ignore"):
        rounded = exact.astype(np.float64)
        e = np.frexp(np.abs(exact))[1].astype(np.int64) - 53
        ulp = np.ldexp(np.ones_like(exact), np.maximum(e, -1074))
        err = (np.abs(got.astype(LD) - exact) / ulp).astype(np.float64)
    same = (got == rounded) | (np.isnan(got) & np.isnan(rounded))
    finite = np.isfinite(got) & np.isfinite(rounded)
    return np.where(same, 0.0, np.where(finite, err, np.inf))


def ulp_distance(a, b):
    """The number of doubles between a and b, elementwise (0 where both are nan)."""
    def key(v):
        i = v.view(np.int64)
        return np.where(i < 0, np.iinfo(np.int64).min - i, i)
    d = np.abs(key(a) - key(b)).astype(np.float64)
    return np.where((a == b) | (np.isnan(a) & np.isnan(b)), 0.0, d)


def same_values(got, want):
    """Equal as numpy prints them: same value, same sign of zero, or both nan."""
    return ((got == want) & (np.signbit(got) == np.signbit(want))) | \
        (np.isnan(got) & np.isnan(want))


# -- samples ------------------------------------------------------------------------------------

def _logu(rng, lo, hi, n=N, signed=False):
    x = np.exp(rng.uniform(math.log(lo), math.log(hi), n))
    return x * rng.choice([-1.0, 1.0], n) if signed else x


def _subnormals(rng, n=N):
    return rng.integers(1, 1 << 52, n).view(np.float64)


def samples(name):
    """About 1.2e6 arguments spread over the function's whole domain: log-uniform
    magnitudes over the full exponent range, dense uniform samples of the interesting
    intervals (the reduction's boundaries, the thresholds, the subnormal results)."""
    rng = np.random.default_rng(sum(map(ord, name)))
    u = rng.uniform
    if name == "exp":
        parts = [u(-745.2, 709.8, N), _logu(rng, 5e-324, 745, signed=True), u(-1, 1, N),
                 u(-745.14, -708.3, N), u(700, 709.79, N), u(-0.35, 0.35, N)]
    elif name == "expm1":
        parts = [_logu(rng, 5e-324, 709.78, signed=True), u(-2, 2, N), u(-40, 60, N),
                 u(36, 42, N), u(-0.4, 0.4, N), u(-745.2, 709.8, N)]
    elif name == "log":
        parts = [_logu(rng, 5e-324, 1.79e308), u(0.5, 2, N), 1 + u(-1e-6, 1e-6, N),
                 _subnormals(rng), u(0.7, 1.42, N), _logu(rng, 1e-10, 1e10)]
    elif name == "log1p":
        parts = [_logu(rng, 5e-324, 1.79e308), -_logu(rng, 5e-324, 1.0), u(-0.7, 0.5, N),
                 _logu(rng, 2.0 ** -53, 1.0) - 1.0, u(-1, 1, N),
                 _logu(rng, 5e-324, 1e-5, signed=True)]
    elif name == "tanh":
        parts = [_logu(rng, 5e-324, 30, signed=True), u(-2, 2, N), u(-20, 20, N),
                 u(-0.6, 0.6, N), _logu(rng, 1e-9, 1e-3, signed=True), u(18, 20, N)]
    elif name == "sigmoid":
        parts = [u(-745.5, 40, N), u(-8, 8, N), _logu(rng, 5e-324, 746, signed=True),
                 u(-745.2, -700, N), u(30, 40, N), u(-40, 0, N)]
    elif name in ("sin", "cos"):
        rng_k = rng.integers(1, 1 << 20, N)
        parts = [_logu(rng, 5e-324, 1.79e308, signed=True), u(-10, 10, N),
                 u(-2.0 ** 20, 2.0 ** 20, N), 2.0 ** 20 * (1 + u(-1e-3, 1e-3, N)),
                 rng_k * (np.pi / 2) * (1 + u(-1e-15, 1e-15, N)), _logu(rng, 1e6, 1e22)]
    else:   # pow: (x, y) pairs
        ints = rng.integers(-300, 301, N).astype(np.float64)
        xs = [_logu(rng, 1e-300, 1e300), _logu(rng, 0.5, 2), 1 + u(-1e-6, 1e-6, N),
              _subnormals(rng), -_logu(rng, 0.1, 10), _logu(rng, 1e-3, 1e3)]
        ys = [u(-2, 2, N) * 10.0 ** u(-3, 2.5, N), u(-1000, 1000, N), u(-1e8, 1e8, N),
              u(-1.05, -0.5, N), ints, u(-100, 100, N)]
        return np.concatenate(xs), np.concatenate(ys)
    return (np.concatenate(parts),)


# -- accuracy -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_accuracy(name):
    """Within 2 ulp of the exact result over about 1.2e6 points (long-double reference) and
    within 2 ulp of numpy's float64 result; non-finite results exactly as numpy's."""
    args = samples(name)
    got = apply(name, *args)
    assert got.shape == args[0].shape
    want = numpy_ref(name, *args)
    if name == "sigmoid":     # scipy's expit flushes results below 2.2e-308 to 0
        keep = want >= np.finfo(np.float64).tiny
        dist = ulp_distance(got[keep], want[keep])
    else:
        dist = ulp_distance(got, want)
    worst = int(np.argmax(dist))
    assert dist[worst] <= ULP_BOUND, (name, [a[worst] for a in args], got[worst])
    if EXTENDED:
        err = ulp_errors(got, exact_ref(name, *args))
        worst = int(np.argmax(err))
        assert err[worst] <= ULP_BOUND, (name, [a[worst] for a in args], got[worst],
                                         err[worst])


def test_ulp_measure_detects_errors():
    """The two measures above see a 3-ulp error and a flushed subnormal."""
    x = np.array([1.0, 0.3, 5e-321])
    bad = np.array([1.0 + 3 * 2.0 ** -52, 0.3, 0.0])
    assert ulp_distance(bad, x).tolist() == [3.0, 0.0, 1012.0]
    if EXTENDED:
        err = ulp_errors(bad, x.astype(LD))
        assert err[0] == pytest.approx(3.0) and err[1] == 0.0 and err[2] > 1000


# -- special values -----------------------------------------------------------------------------

SPECIAL = np.array([
    0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 5e-324, -5e-324, 2.2250738585072014e-308,
    -2.2250738585072014e-308, 2.225073858507201e-308, 1e-300, -1e-300, 1e-20, -1e-20,
    2.0 ** -54, -(2.0 ** -54), 2.0 ** -53, 2.0 ** -28, 7.450580596923828e-09, 1.0, -1.0,
    0.5, -0.5, 2.0, -2.0, 3.0, 0.3465735902799726, -0.3465735902799726, 709.78, 709.79,
    709.782712893384, 709.7827128933841, 710.0, -708.39, -708.4, -708.5, -720.0, -740.0, -744.44,
    -745.13, -745.1332191019411, -745.1332191019412, -745.2, -746.0, -1000.0, 1000.0,
    1e300, -1e300, 1.7976931348623157e308, -1.7976931348623157e308, 19.06, 19.07, 20.0,
    22.0, -19.07, 36.0, 36.8, 37.0, 40.0, -36.0, -37.0, -40.0, 1e5, -1e5, 2.0 ** 20,
    -(2.0 ** 20), 2.0 ** 20 - 0.25, 1e22, np.pi, np.pi / 2, -np.pi / 2, 4.5,
    -0.9999999999999999, -1.0000000000000002, 1e16, 2.0 ** 53, 2.0 ** 1023])


@pytest.mark.parametrize("name", [n for n in NAMES if n != "pow"])
def test_special_values(name):
    """The special values, element by element, as numpy gives them (sign of zero and nan
    included), or within an ulp for ordinary finite results; sigmoid's subnormal results
    (expit flushes them to 0) against the long-double reference."""
    got = apply(name, SPECIAL)
    want = numpy_ref(name, SPECIAL)
    if name == "sigmoid" and EXTENDED:
        exact = exact_ref(name, SPECIAL).astype(np.float64)
        flushed = (want == 0) & (exact > 0)
        assert flushed.sum() >= 4 and np.all(got[flushed] > 0)
        want = np.where(flushed, exact, want)
    exact = same_values(got, want)
    close = np.isfinite(want) & (want != 0) & (ulp_distance(got, want) <= 1)
    bad = ~(exact | close)
    assert not bad.any(), list(zip(SPECIAL[bad], got[bad], want[bad]))
    # the non-finite and zero results exactly (not +-1: tanh(19.06) is 1 - 2**-53 when
    # correctly rounded, numpy says 1)
    strict = ~np.isfinite(want) | (want == 0)
    assert np.all(same_values(got[strict], want[strict])), name


def test_exp_thresholds_and_subnormals():
    """exp overflows exactly where numpy does and gives its subnormals (not 0) down to
    -745.13, then 0."""
    big = 709.782712893384
    assert math.isfinite(vmath.exp(big)) and vmath.exp(big) == np.exp(big)
    assert vmath.exp(np.nextafter(big, np.inf)) == np.inf
    assert vmath.exp(709.78) < np.inf and vmath.exp(709.79) == np.inf
    x = np.linspace(-745.2, -708.0, 200_001)
    got, want = apply("exp", x), np.exp(x)
    assert np.array_equal(got == 0, want == 0)
    assert np.count_nonzero(got) > 199_000 and got[-1] > 0
    sub = want < np.finfo(np.float64).tiny
    assert sub.sum() > 100_000
    assert ulp_distance(got[sub], want[sub]).max() <= 1
    assert vmath.exp(-745.1332191019411) == 5e-324 and vmath.exp(-745.1332191019412) == 0.0
    assert vmath.expm1(big) == np.expm1(big) and vmath.expm1(709.79) == np.inf


def test_log_family_specials():
    """log and log1p at their boundaries: log of 0, negatives, subnormals; log1p(-1)."""
    assert vmath.log(0.0) == -np.inf and vmath.log(-0.0) == -np.inf
    assert math.isnan(vmath.log(-1e-300)) and math.isnan(vmath.log(-np.inf))
    assert vmath.log(5e-324) == np.log(5e-324) == -744.4400719213812
    for x in (5e-324, 1e-310, 2.2250738585072009e-308, 2.2250738585072014e-308):
        assert vmath.log(x) == np.log(x), x
    assert vmath.log(1.0) == 0.0 and not np.signbit(vmath.log(1.0))
    assert vmath.log1p(-1.0) == -np.inf and math.isnan(vmath.log1p(-1.0000000000000002))
    assert vmath.log1p(np.inf) == np.inf and math.isnan(vmath.log1p(-np.inf))
    assert np.signbit(vmath.log1p(-0.0)) and vmath.log1p(5e-324) == 5e-324
    assert np.signbit(vmath.expm1(-0.0)) and vmath.expm1(-5e-324) == -5e-324
    assert vmath.expm1(-np.inf) == -1.0 and vmath.expm1(-40.0) == -1.0


def test_tanh_sigmoid_specials():
    """tanh saturates to +-1 and keeps -0.0; sigmoid is stable for both signs and gives
    the subnormal e**x where 1 / (1 + e**-x) would be 0."""
    assert vmath.tanh(20.0) == 1.0 and vmath.tanh(-1e300) == -1.0
    assert vmath.tanh(19.0616) == 1.0 and vmath.tanh(19.06) == 1 - 2.0 ** -53
    assert vmath.tanh(np.inf) == 1.0 and vmath.tanh(-np.inf) == -1.0
    assert np.signbit(vmath.tanh(-0.0)) and vmath.tanh(-5e-324) == -5e-324
    assert vmath.sigmoid(0.0) == 0.5 and vmath.sigmoid(-0.0) == 0.5
    assert vmath.sigmoid(np.inf) == 1.0 and vmath.sigmoid(-np.inf) == 0.0
    assert vmath.sigmoid(40.0) == 1.0 and vmath.sigmoid(-40.0) == scipy.special.expit(-40.0)
    assert vmath.sigmoid(-740.0) == np.exp(-740.0) > 0
    assert vmath.sigmoid(-745.2) == 0.0
    assert math.isnan(vmath.sigmoid(np.nan)) and math.isnan(vmath.tanh(np.nan))


def test_pow_special_cases():
    """pow over the cross product of special arguments equals np.power (C99 Annex F):
    signed zeros and infinities, negative bases with integer and non-integer exponents,
    nan, 1 and -1 with infinite exponents, huge and subnormal values."""
    v = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0,
                  -3.0, 2.5, -2.5, 5e-324, -5e-324, 1e300, -1e300, 2.0 ** 53, -(2.0 ** 53),
                  2.0 ** 53 + 2, 2.0 ** 52 + 1, -(2.0 ** 52 + 1), 2.0 ** 52 + 0.5, 1e-300,
                  1.0000000000000002, 0.9999999999999999, 1023.0, 1024.0, -1074.0, -1075.0,
                  0.1, -7.0, 1 / 3])
    x, y = (a.ravel() for a in np.meshgrid(v, v))
    got, want = apply("pow", x, y), numpy_ref("pow", x, y)
    ok = same_values(got, want) | (np.isfinite(want) & (ulp_distance(got, want) <= 1))
    assert ok.all(), list(zip(x[~ok], y[~ok], got[~ok], want[~ok]))
    assert (~np.isfinite(want)).sum() > 200 and (want == 0).sum() > 100


# sin and cos of hard arguments, correctly rounded (computed with mpmath at 2000 bits): the
# doubles nearest a multiple of pi/2 below 2**20 (Cody-Waite) and over the whole range
# (6381956970095103 * 2**797, Payne-Hanek), 1e22, pi/2, the largest double, both sides of 2**20
HARD = [
    ("0x1.39c6fd67805a7p+18", "-0x1.0000000000000p+0", "-0x1.988efe18ff83fp-55"),
    ("0x1.39c6fd67805a7p+19", "0x1.988efe18ff83fp-54", "-0x1.0000000000000p+0"),
    ("0x1.39c6fd67805a7p+20", "-0x1.988efe18ff83fp-53", "0x1.0000000000000p+0"),
    ("0x1.a9adcc7f96cf0p+19", "-0x1.0000000000000p+0", "-0x1.d2a4f27e8c119p-52"),
    ("0x1.6ac5b262ca1ffp+849", "0x1.0000000000000p+0", "-0x1.14ae72e6ba22fp-61"),
    ("0x1.0f0cf064dd592p+73", "-0x1.b453ab76bf397p-1", "0x1.0be2cef01c8f4p-1"),
    ("0x1.921fb54442d18p+0", "0x1.0000000000000p+0", "0x1.1a62633145c07p-54"),
    ("0x1.6300000000000p+8", "-0x1.f9bd0307d1de3p-16", "-0x1.fffffffc18e4cp-1"),
    ("0x1.fffffffffffffp+1023", "0x1.452fc98b34e97p-8", "-0x1.fffe62ecfab75p-1"),
    ("0x1.fffff80000000p+19", "0x1.633156c9d2a04p-4", "0x1.fe12400c920a8p-1"),
    ("0x1.0000000000000p+20", "0x1.526ccb2fc8656p-2", "0x1.e33ada92fe2aep-1"),
    ("0x1.0000000000001p+52", "0x1.053c35068e10dp-4", "-0x1.fef526a39c993p-1"),
]


@pytest.mark.parametrize("x, s, c", HARD)
def test_sin_cos_hard_arguments(x, s, c):
    """sin and cos of arguments very close to multiples of pi/2 (the reduction keeps ~120
    bits) within an ulp of the correctly rounded value, for x and -x."""
    x, s, c = float.fromhex(x), float.fromhex(s), float.fromhex(c)
    for sign in (1.0, -1.0):
        assert abs(vmath.sin(sign * x) - sign * s) <= math.ulp(s), (x, sign)
        assert abs(vmath.cos(sign * x) - c) <= math.ulp(c), (x, sign)


def test_sin_cos_specials():
    """sin keeps -0.0 and tiny arguments, sin and cos of inf and nan are nan."""
    assert np.signbit(vmath.sin(-0.0)) and vmath.sin(-5e-324) == -5e-324
    assert vmath.sin(1e-9) == 1e-9 and vmath.cos(1e-9) == 1.0 and vmath.cos(-0.0) == 1.0
    for f in (vmath.sin, vmath.cos):
        assert all(math.isnan(f(v)) for v in (np.inf, -np.inf, np.nan))


def test_constants():
    """The split constants: exact parts of the stated widths that add up to ln 2, pi/2."""
    def bits(v):
        m = abs(math.frexp(v)[0])
        n = 0
        while m != int(m):
            m *= 2
            n += 1
        return n
    assert vmath._LN2_HI + vmath._LN2_LO == math.log(2) and bits(vmath._LN2_HI) <= 42
    assert vmath._PIO2_1 + vmath._PIO2_2 + vmath._PIO2_3 + vmath._PIO2_4 == math.pi / 2
    assert max(bits(vmath._PIO2_1), bits(vmath._PIO2_2), bits(vmath._PIO2_3)) <= 33
    assert vmath._PIO2_HI == math.pi / 2 and vmath._TWO_OVER_PI == 2 / math.pi
    assert abs(vmath._PIO2_2) < 2.0 ** -30 and abs(vmath._PIO2_4) < 2.0 ** -95
    # each Payne-Hanek row: 2/pi's bits from the exponent's position on, 53 per column
    table = vmath._PH_TABLE
    assert table.shape == (1004, 4) and np.all(table >= 0) and np.all(table[:, 0] < 4)
    # row 0 (2**20 <= x < 2**21): x = M * 2**-32 and x * 2/pi = M * (G0 + G1 + G2 + G3)
    assert table[0, :2].sum() * 2.0 ** 52 == pytest.approx(2 / math.pi * 2.0 ** 20, rel=1e-15)
    # the last row: x * 2/pi mod 4 for the largest double (in exact fractions), against the
    # long double sine
    if EXTENDED:
        turns = Fraction(2 ** 53 - 1) * sum(map(Fraction, table[-1])) % 4
        assert abs(math.sin(float(turns) * math.pi / 2)
                   - np.sin(np.longdouble(np.finfo(np.float64).max))) < 1e-12


# -- float32 -----------------------------------------------------------------------------------

NAMES32 = [n + "f" for n in NAMES]


def apply32(name, *args):
    """vmath.<name> (a float32 function) applied by one compiled numba loop."""
    if name not in _LOOPS:
        _LOOPS[name] = (_loop2 if name == "powf" else _loop1)(getattr(vmath, name))
    return _LOOPS[name](*(np.ascontiguousarray(a, np.float32) for a in args))


def samples32(name):
    """About 1e6 float32 arguments over the function's whole float32 domain."""
    rng = np.random.default_rng(sum(map(ord, name)))
    u = rng.uniform
    n = 170_000
    tiny, huge = 1.4e-45, 3.4e38
    if name == "expf":
        parts = [u(-104, 88.8, n), _logu(rng, tiny, 104, n, True), u(-1, 1, n),
                 u(-104, -87, n), u(80, 88.73, n), u(-0.35, 0.35, n)]
    elif name == "expm1f":
        parts = [_logu(rng, tiny, 88.7, n, True), u(-2, 2, n), u(-20, 30, n),
                 u(-0.4, 0.4, n), u(10, 30, n), u(-104, 89, n)]
    elif name == "logf":
        parts = [_logu(rng, tiny, huge, n), u(0.5, 2, n), 1 + u(-1e-3, 1e-3, n),
                 _logu(rng, tiny, 1.2e-38, n), u(0.7, 1.42, n), _logu(rng, 1e-5, 1e5, n)]
    elif name == "log1pf":
        parts = [_logu(rng, tiny, huge, n), -_logu(rng, tiny, 1.0, n), u(-0.7, 0.5, n),
                 _logu(rng, 2.0 ** -24, 1.0, n) - 1.0, u(-1, 1, n),
                 _logu(rng, tiny, 1e-3, n, True)]
    elif name == "tanhf":
        parts = [_logu(rng, tiny, 12, n, True), u(-2, 2, n), u(-10, 10, n),
                 u(-0.6, 0.6, n), _logu(rng, 1e-5, 1e-2, n, True), u(8, 10, n)]
    elif name == "sigmoidf":
        parts = [u(-104, 20, n), u(-8, 8, n), _logu(rng, tiny, 105, n, True),
                 u(-104, -86, n), u(15, 20, n), u(-20, 0, n)]
    elif name in ("sinf", "cosf"):
        parts = [_logu(rng, tiny, huge, n, True), u(-10, 10, n), u(-1e4, 1e4, n),
                 _logu(rng, 1e4, 1e12, n, True), u(-2.0 ** 20, 2.0 ** 20, n), u(-1, 1, n)]
    else:   # powf
        ints = rng.integers(-40, 41, n).astype(np.float64)
        xs = [_logu(rng, 1e-30, 1e30, n), _logu(rng, 0.5, 2, n), 1 + u(-1e-3, 1e-3, n),
              _logu(rng, tiny, 1.2e-38, n), -_logu(rng, 0.1, 10, n), _logu(rng, 1e-3, 1e3, n)]
        ys = [u(-2, 2, n) * 10.0 ** u(-3, 1, n), u(-100, 100, n), u(-1e5, 1e5, n),
              u(-1.05, -0.5, n), ints, u(-10, 10, n)]
        return np.concatenate(xs).astype(np.float32), np.concatenate(ys).astype(np.float32)
    return (np.concatenate(parts).astype(np.float32),)


def ulp_errors32(got, exact):
    """`ulp_errors` for float32 results against a float64 reference (2^-29 relative)."""
    with np.errstate(all="ignore"):
        rounded = exact.astype(np.float32)
        e = np.frexp(np.abs(exact))[1].astype(np.int64) - 24
        err = np.abs(got.astype(np.float64) - exact) / np.ldexp(1.0, np.maximum(e, -149))
    same = (got == rounded) | (np.isnan(got) & np.isnan(rounded))
    finite = np.isfinite(got) & np.isfinite(rounded)
    return np.where(same, 0.0, np.where(finite, err, np.inf))


def ulp_distance32(a, b):
    """The number of float32 values between a and b."""
    def key(v):
        i = v.view(np.int32).astype(np.int64)
        return np.where(i < 0, -(1 << 31) - i, i)
    d = np.abs(key(a) - key(b)).astype(np.float64)
    return np.where((a == b) | (np.isnan(a) & np.isnan(b)), 0.0, d)


@pytest.mark.parametrize("name", NAMES32)
def test_accuracy_float32(name):
    """float32 functions: within 2 ulp of the exact result (the float64 one) over about
    1e6 points, and as close as numpy's float32 result or closer: within 2 ulp of it where
    numpy is within an ulp of the exact result (numpy's logf is up to 3.6 ulp off)."""
    args = samples32(name)
    got = apply32(name, *args)
    assert got.dtype == np.float32 and got.shape == args[0].shape
    base = name[:-1]
    with np.errstate(all="ignore"):
        exact = exact_ref(base, *(a.astype(np.float64) for a in args)).astype(np.float64)
    err = ulp_errors32(got, exact)
    worst = int(np.argmax(err))
    assert err[worst] <= ULP_BOUND, (name, [a[worst] for a in args], got[worst], err[worst])
    with np.errstate(all="ignore"):
        if base == "sigmoid":
            theirs = scipy.special.expit(args[0])
        elif base == "pow":
            theirs = np.power(*args)
        else:
            theirs = getattr(np, base)(*args)
    assert theirs.dtype == np.float32
    their_err = ulp_errors32(theirs, exact)
    good = their_err <= 1
    if base == "sigmoid":   # expit flushes float32 subnormal results
        good &= np.abs(theirs) >= np.finfo(np.float32).tiny
    assert good.mean() > 0.75          # (scipy's float32 expit: 80%)
    assert ulp_distance32(got[good], theirs[good]).max() <= ULP_BOUND
    assert np.all(err[~good] <= np.maximum(their_err[~good], 1.0))


SPECIAL32 = np.array([
    0.0, -0.0, np.inf, -np.inf, np.nan, 1.4e-45, -1.4e-45, 1.1754944e-38, -1.1754944e-38,
    1e-30, -1e-30, 2.0 ** -25, -(2.0 ** -25), 2.0 ** -24, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0,
    3.0, 88.72283, 88.72284, 89.0, -87.33, -87.34, -100.0, -103.97, -103.98, -104.0,
    -1000.0, 1000.0, 3.4028235e38, -3.4028235e38, 9.0, 9.02, 10.0, -9.02, 17.0, 20.0, -17.4,
    -18.0, 1e5, 1e20, np.pi, -0.99999994, -1.0000001, 16777216.0], dtype=np.float32)


@pytest.mark.parametrize("name", [n for n in NAMES32 if n != "powf"])
def test_special_values_float32(name):
    """float32 special values: non-finite results and zeros (with their sign) exactly as
    numpy's float32 ufuncs give them, finite ones within an ulp of the rounded float64
    result; sigmoidf's float32 subnormals where expit flushes."""
    base = name[:-1]
    got = apply32(name, SPECIAL32)
    with np.errstate(all="ignore"):
        wide = numpy_ref(base, SPECIAL32.astype(np.float64))
        exact = wide.astype(np.float32)
        theirs = scipy.special.expit(SPECIAL32) if base == "sigmoid" else \
            getattr(np, base)(SPECIAL32)
    if base == "sigmoid":
        exact = exact_ref(base, SPECIAL32).astype(np.float32)
        flushed = (theirs == 0) & (exact > 0)
        assert flushed.sum() >= 2 and np.all(got[flushed] > 0)
        theirs = np.where(flushed, exact, theirs)
    strict = ~np.isfinite(theirs) | (theirs == 0)
    assert np.all(same_values(got[strict], theirs[strict])), SPECIAL32[strict]
    close = same_values(got, exact) | (np.isfinite(exact) & (ulp_distance32(got, exact) <= 1))
    assert close.all(), list(zip(SPECIAL32[~close], got[~close], exact[~close]))


def test_pow_special_cases_float32():
    """powf's special cases over the cross product equal np.power's for float32."""
    v = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0,
                  -3.0, 2.5, 1.4e-45, -1.4e-45, 3e38, -3e38, 16777216.0, 16777218.0,
                  8388609.0, -8388609.0, 127.0, 128.0, -149.0, -150.0], dtype=np.float32)
    x, y = (a.ravel() for a in np.meshgrid(v, v))
    got = apply32("powf", x, y)
    with np.errstate(all="ignore"):
        theirs = np.power(x, y.copy())
    ok = same_values(got, theirs) | (np.isfinite(theirs) & (ulp_distance32(got, theirs) <= 1))
    assert ok.all(), list(zip(x[~ok], y[~ok], got[~ok], theirs[~ok]))


def test_argument_types():
    """In jitted code the float64 functions take ints and float32 (returning float64), the
    float32 ones take float64 and ints (returning float32), and the names of both
    precisions (exp, log, sin, ...: what generated code calls) follow the argument, as
    math.exp does in numba: float32 for a float32, float64 for an int or a float64."""
    @numba.njit
    def mixed(i, x32, x64):
        return (vmath.exp(i), vmath.log64(x32), vmath.pow(i, x32), vmath.sin64(x32),
                vmath.expf(x64), vmath.logf(i), vmath.powf(x64, i), vmath.sinf(x64),
                vmath.log(x32), vmath.sin(x32), vmath.tanh(x64))
    out = mixed(2, np.float32(0.5), 0.5)
    returned = mixed.nopython_signatures[0].return_type
    assert [str(t) for t in returned] == ["float64"] * 4 + ["float32"] * 6 + ["float64"]
    assert out[0] == np.exp(2.0) and out[1] == np.log(0.5) and out[2] == np.sqrt(2.0)
    assert out[4] == np.exp(np.float32(0.5)) and out[5] == np.float32(np.log(2.0))
    assert out[6] == np.float32(0.25) and out[7] == np.float32(np.sin(0.5))
    assert out[8] == vmath.logf(np.float32(0.5)) and out[9] == vmath.sinf(np.float32(0.5))
    assert out[10] == vmath.tanh64(0.5)

    @numba.njit
    def small(b, u):
        return vmath.exp(b), vmath.tanh(u), vmath.log1p(np.int32(3))
    assert small(True, np.uint8(2)) == (vmath.exp64(1.0), vmath.tanh64(2.0), vmath.log1p64(3.0))
    # called from Python, the same choice
    assert isinstance(vmath.exp(np.float32(0.5)), float) and \
        vmath.exp(np.float32(0.5)) == vmath.expf(np.float32(0.5))
    assert vmath.exp(0.5) == vmath.exp64(0.5)


# -- subprocesses: the optimized loop, the target without FMA -----------------------------------

def _run(code, env_extra, timeout=120):
    env = dict(os.environ, **env_extra)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=timeout,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                    reason="looks for x86 packed instructions")
def test_loops_vectorize_at_opt3():
    """At NUMBA_OPT=3 a loop calling vmath functions has no call left (every function is
    inlined: they are marked alwaysinline) and is vectorized: packed double instructions,
    which the math.exp loop does not have."""
    out = _run("""
        import math, re
        import numba, numpy as np
        from adjit.runtime import vmath

        def packed(f):
            asm = f.inspect_asm(f.signatures[0])
            return len(re.findall(r"\\b(?:v?mul|v?add|v?sub|vf\\w*madd\\w*)pd\\b", asm))

        def calls(f):
            return len(re.findall(r"call [^@]*@\\w*vmath", f.inspect_llvm(f.signatures[0])))

        @numba.njit
        def fast(a, b, out):
            for i in range(a.size):
                out[i] = (vmath.exp(a[i]) + vmath.sin(a[i]) + vmath.pow(a[i], b[i])
                          + vmath.expm1(b[i]) + vmath.log1p(a[i]) + vmath.tanh(b[i]))

        @numba.njit
        def fast32(a, out):
            for i in range(a.size):
                out[i] = vmath.expf(a[i]) + vmath.logf(a[i]) + vmath.tanhf(a[i])

        @numba.njit
        def slow(a, out):
            for i in range(a.size):
                out[i] = math.exp(a[i])

        a = np.linspace(0.1, 1.0, 64)
        fast(a, a, a.copy())
        a32 = a.astype(np.float32)
        fast32(a32, a32.copy())
        slow(a, a.copy())
        asm32 = fast32.inspect_asm(fast32.signatures[0])
        single = len(re.findall(r"\\b(?:v?mul|v?add|vf\\w*madd\\w*)ps\\b", asm32))
        print(packed(fast), calls(fast), packed(slow), single, calls(fast32))
        """, {"NUMBA_OPT": "3"})
    n_fast, n_calls, n_slow, n_single, n_calls32 = map(int, out.split())
    assert n_calls == 0 and n_fast > 50 and n_slow == 0, out
    assert n_calls32 == 0 and n_single > 20, out


def test_without_fma():
    """For a target without FMA (NUMBA_CPU_NAME=generic: `_mla` multiplies and adds,
    `_two_prod` is Dekker's, `_two_prod_f` a float64 product) every function keeps the
    2-ulp bound on a smaller sample."""
    out = _run(f"""
        import numpy as np, sys
        sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
        import test_vmath as t
        from adjit.runtime import vmath
        assert not vmath._HAS_FMA
        for name in t.NAMES:
            args = tuple(a[::40] for a in t.samples(name))
            got = t.apply(name, *args)
            err = t.ulp_errors(got, t.exact_ref(name, *args)) if t.EXTENDED else \\
                t.ulp_distance(got, t.numpy_ref(name, *args))
            print(name, err.max())
        for name in t.NAMES32[:6]:      # the float32-arithmetic ones
            args = tuple(a[::40] for a in t.samples32(name))
            got = t.apply32(name, *args)
            exact = t.exact_ref(name[:-1], *(a.astype(np.float64) for a in args))
            print(name, t.ulp_errors32(got, exact.astype(np.float64)).max())
        """, {"NUMBA_CPU_NAME": "generic", "NUMBA_CPU_FEATURES": "", "NUMBA_OPT": "0"})
    worst = {line.split()[0]: float(line.split()[1]) for line in out.splitlines()}
    assert set(worst) == set(NAMES) | set(NAMES32[:6]), out
    assert max(worst.values()) <= ULP_BOUND, worst
