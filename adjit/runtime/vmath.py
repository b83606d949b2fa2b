"""Branch-free, vectorizable transcendental functions for numba code.

numba (0.62 and later, without Intel's SVML) lowers math.exp, math.log, math.sin ... to one
call of the C library per element: a loop that calls them is not vectorized by LLVM, and each
call costs 5 to 20 ns. The functions here are written in plain arithmetic that LLVM's loop
vectorizer can turn into SIMD code: Cody-Waite (or Payne-Hanek) range reduction, a
polynomial, and the exponent set through integer bit operations; every condition is a select
on values already computed (`a if c else b`, which LLVM turns into a `select`), and no path
calls the C library. A numba loop such as

    for i in range(x.size):
        out[i] = vmath.exp(x[i])

compiled at NUMBA_OPT=3 runs several times faster than the same loop with math.exp (6x on a
2-core AMD EPYC with AVX-512; benchmarks/vmath.py prints the table for the machine at hand).
A loop LLVM does not vectorize (one that adds into a float sum: no reassociation) gains
nothing, and the polynomial can be slower than the C library one element at a time.

They are ordinary `numba.njit` functions (error_model="numpy", cached on disk with the
optimization level in the key: runtime/jitcache.py), callable from jitted code or from
Python. `exp`, `expm1`, `log`, `log1p`, `tanh`, `sin` and `cos` take either precision (a
float32 argument calls the float32 function, anything else the float64 one, whose result is
float64: what math.exp gives in numba); the float64 functions are also `exp64`, `expm1_64`,
`log64`, ..., and `sigmoid` and `pow` take float64 (ints and float32 converted), the float32
ones float32. Each marks its LLVM function `alwaysinline` (the intrinsic `_always_inline`):
LLVM's inliner otherwise keeps expm1, sin, pow ... as calls, and a loop with a call in it is
not vectorized. numba's own
inline="always" is not used: it inlines numba IR into the caller, where the caller's
fastmath and error_model flags would apply, and the error-free transformations below need
IEEE arithmetic exactly as written (no reassociation, no contraction, plain division).

Accuracy: within 1 ulp of the exact result everywhere (measured over 1.2e6 points per
function: at most 0.91 ulp for float64, against a long-double reference checked against
mpmath, and 0.91 ulp for float32); tests/test_vmath.py asserts 2 ulp. float32 versions
(expf, expm1f, logf, log1pf, tanhf, sigmoidf) compute in float32 arithmetic (twice the SIMD
lanes of float64); sinf, cosf and powf compute in float64 (simpler algorithms than the
float64 functions': a float32 argument has 24 bits) and round once.

Special values are numpy's (C99 Annex F): exp overflows to inf above 709.782712893384 and
gives numpy's subnormals below -708.39 (0 below -745.1332); log(0) = -inf, log(x < 0) = nan,
log of subnormals within an ulp; log1p(-1) = -inf; tanh(+-inf) = +-1; signed zeros are kept
(expm1, log1p, tanh, sin of -0.0 are -0.0); nan propagates. sigmoid is 1/(1 + exp(-x)) with
scipy.special.expit's special values, but from x = -709.78 to -745.13 it returns the
subnormal e**x where expit gives 0. pow covers the whole IEEE domain with np.power's special cases
(see `pow`). sin and cos reduce every finite argument exactly (Payne-Hanek above 2**20): no
range limit and no fallback to the C library.

Constants: ln 2, pi/2 and 2/pi are computed to 1400 bits at import with integer arithmetic
(Machin's formula for pi, the series 2 atanh(1/3) for ln 2) and split into the exact parts
the reductions need. Polynomial coefficients are the exact Taylor (or atanh series)
coefficients rounded to the nearest double (float32); the degrees keep the truncation error
below 2^-57 (float32: 2^-27) relative over the reduced interval. The only table is the
Payne-Hanek tables of 2/pi bits (1004 x 4 doubles, 32 KB; for sinf and cosf 140 x 3).

The designs follow the usual literature (fdlibm's log and expm1 decompositions, Cody-Waite
and Payne-Hanek reduction as in SLEEF and Cephes, two-step exponent scaling for subnormal
results, double-double error-free transformations); the code is written for this module.

Fused multiply-add: where the target has hardware FMA (x86 with the `fma` feature, aarch64,
ppc64le) `_mla` and `_two_prod` use llvm.fma; elsewhere (numba compiling for a generic
x86-64 CPU: NUMBA_CPU_NAME=generic) a separate multiply and add and Dekker's exact product,
with the same accuracy (tested).
"""
import math
import platform
from fractions import Fraction

import llvmlite.binding as llvm_binding
import numba
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic, lower_builtin, type_callable

from .jitcache import key_by_level

__all__ = ["exp", "expm1", "log", "log1p", "tanh", "sigmoid", "sin", "cos", "pow",
           "expf", "expm1f", "logf", "log1pf", "tanhf", "sigmoidf", "sinf", "cosf", "powf",
           "SINCOS_CW_RANGE"]


def _target_has_fma():
    """Whether numba compiles for a CPU with fused multiply-add (what its codegen passes to
    LLVM as target features: NUMBA_CPU_FEATURES when set, else the host's)."""
    machine = platform.machine().lower()
    if machine not in ("x86_64", "amd64", "i386", "i686", "x86"):
        return True
    features = numba.config.CPU_FEATURES
    if features is None:
        features = llvm_binding.get_host_cpu_features().flatten()
    return "+fma" in features.split(",")


_HAS_FMA = _target_has_fma()

# cached on disk, each optimization level apart (key_by_level at the end); numba keeps a
# cached function's LLVM bitcode beside its machine code, so callers still inline it. Under
# NUMBA_OPT=0 numba caches no function that calls another, so nothing is asked of it there.
_jit = numba.njit(error_model="numpy", cache=int(numba.core.config.OPT) != 0)


# -- exact constants, computed at import --------------------------------------------------------

_PREC = 1400                 # fixed-point bits of the constants below
_GUARD = 24


def _atan_inv(n, bits):
    """atan(1/n) * 2**bits (n > 1), by its alternating series in integers."""
    term, total, k = (1 << bits) // n, 0, 0
    while term:
        total += -(term // (2 * k + 1)) if k & 1 else term // (2 * k + 1)
        term //= n * n
        k += 1
    return total


def _atanh_inv(n, bits):
    """atanh(1/n) * 2**bits (n > 1), by its series in integers."""
    term, total, k = (1 << bits) // n, 0, 0
    while term:
        total += term // (2 * k + 1)
        term //= n * n
        k += 1
    return total


_PI_FX = (16 * _atan_inv(5, _PREC + _GUARD) - 4 * _atan_inv(239, _PREC + _GUARD)) >> _GUARD
_LN2_FX = (2 * _atanh_inv(3, _PREC + _GUARD)) >> _GUARD
_TWO_OVER_PI_FX = (2 << (2 * _PREC)) // _PI_FX          # 2/pi * 2**_PREC


def _fx(v, shift=0):
    """The fixed-point integer v (scaled by 2**(_PREC + shift)) rounded to a double."""
    return float(Fraction(v, 1 << (_PREC + shift)))


def _chunks(v, shift, first_bits, count):
    """Split the fixed-point value v / 2**(_PREC + shift) (0 < value < 2) into `count`
    doubles: the first has `first_bits` significant bits, the others the next `first_bits`
    bits each (truncated, so every product with an integer below 2**(53 - first_bits) is
    exact), and a last one with the rest rounded to 53 bits."""
    parts = []
    lead = v.bit_length()
    taken = 0
    for _ in range(count):
        drop = lead - taken - first_bits
        chunk = (v >> drop) << drop
        part = chunk - sum(p for p in parts)
        parts.append(part)
        taken += first_bits
    rest = v - sum(parts)
    return [_fx(p, shift) for p in parts] + [_fx(rest, shift)]


_LN2_HI, _LN2_LO = _chunks(_LN2_FX, 0, 42, 1)            # k * _LN2_HI exact for |k| < 2**11
_INV_LN2 = float(Fraction(1 << _PREC, _LN2_FX))
_PIO2_1, _PIO2_2, _PIO2_3, _PIO2_4 = _chunks(_PI_FX, 1, 33, 3)   # q * part exact, q < 2**20
_PIO2_HI, _PIO2_LO = _chunks(_PI_FX, 1, 53, 1)
_TWO_OVER_PI = _fx(_TWO_OVER_PI_FX)

SINCOS_CW_RANGE = 2.0 ** 20
"""sin/cos reduce |x| < SINCOS_CW_RANGE by a 4-part Cody-Waite pi/2 (exact products with the
quotient q < 2**20), larger finite |x| by Payne-Hanek with a table of 2/pi bits."""


def _payne_hanek_table():
    """For every biased exponent E of |x| >= 2**20 (row E - 1043), four doubles G0..G3 with
    x * 2/pi = x * 2**-(E - 1075) * (G0 + G1 + G2 + G3)  (mod 4, to 2**-157): the bits of 2/pi
    from position E - 1076 on (the earlier ones contribute multiples of 4 to x * 2/pi), 53 per
    double, scaled by 2**(E - 1075) so that the products with x's 53-bit integer mantissa M
    are M*G0 < 2**55 (a multiple of 2**-51), M*G1 < 4, M*G2 < 2**-51, M*G3 < 2**-104."""
    rows = []
    mask = (1 << 53) - 1
    for e_biased in range(1043, 2047):
        start = e_biased - 1076                    # the first bit position kept
        row = []
        for k in range(4):
            last = start + 52 + 53 * k             # floor(2/pi * 2**last) holds the chunk
            n = 0 if last < 0 else (_TWO_OVER_PI_FX >> (_PREC - last)) & mask
            row.append(math.ldexp(float(n), -51 - 53 * k))
        rows.append(row)
    return np.array(rows, dtype=np.float64)


_PH_TABLE = _payne_hanek_table()


def _taylor(n):
    """1/n! rounded to the nearest double."""
    return float(Fraction(1, math.factorial(n)))


# exp(r) = 1 + r + r^2 (1/2 + r/6 + ... + r^11/13!): truncation r^14/14! < 2^-57.7 at ln2/2
_E2, _E3, _E4, _E5, _E6, _E7, _E8, _E9, _E10, _E11, _E12, _E13 = [_taylor(n) for n in
                                                                  range(2, 14)]
# sin r = r + r^3 (-1/3! + r^2/5! - ... + r^14/17!), cos r = 1 - r^2/2 + r^4 (1/4! - ... )
_S3, _S5, _S7, _S9, _S11, _S13, _S15, _S17 = [(-1) ** k * _taylor(2 * k + 1)
                                              for k in range(1, 9)]
_C4, _C6, _C8, _C10, _C12, _C14, _C16 = [(-1) ** k * _taylor(2 * k) for k in range(2, 9)]
# log(1+f) = 2 atanh(s), s = f/(2+f): 2s + s*R, R = sum 2 w^n/(2n+1), w = s^2 (n = 1..10)
_L1, _L2, _L3, _L4, _L5, _L6, _L7, _L8, _L9, _L10 = [float(Fraction(2, 2 * n + 1))
                                                     for n in range(1, 11)]
# pow's log: 2s + (2/3) s^3 + (2/5) s^5 (double-doubles) + s^7 (2/7 + 2w/9 + ... + 2w^9/25)
_T3H = float(Fraction(2, 3))
_T3L = float(Fraction(2, 3) - Fraction(_T3H))
_T5H = float(Fraction(2, 5))
_T5L = float(Fraction(2, 5) - Fraction(_T5H))
_P7, _P9, _P11, _P13, _P15, _P17, _P19, _P21, _P23, _P25 = [float(Fraction(2, n))
                                                            for n in range(7, 26, 2)]

_SHIFT = 6755399441055744.0      # 1.5 * 2**52: (v + _SHIFT) - _SHIFT rounds v (|v| < 2**51)
_SHIFT_BITS = 0x4338000000000000
_SQRT_HALF_BITS = 0x3FE6A09E667F3BCD
_TINY = 2.2250738585072014e-308   # the smallest normal double
_NAN = float("nan")
_INF = float("inf")


# -- intrinsics ---------------------------------------------------------------------------------

@intrinsic
def _as_int(typingctx, x):
    """The bits of a float64 as an int64 (float32: int32)."""
    if x == types.float64:
        sig, width = types.int64(types.float64), 64
    elif x == types.float32:
        sig, width = types.int32(types.float32), 32
    else:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.IntType(width))
    return sig, codegen


@intrinsic
def _as_float(typingctx, i):
    """The float64 with the bits of an int64 (int32: float32)."""
    if i == types.int64:
        sig, to = types.float64(types.int64), ir.DoubleType()
    elif i == types.int32:
        sig, to = types.float32(types.int32), ir.FloatType()
    else:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], to)
    return sig, codegen


def _llvm_call(builder, name, args):
    """Call llvm.<name> on args of one floating-point type."""
    ty = args[0].type
    fn = builder.module.declare_intrinsic("llvm." + name, [ty],
                                          ir.FunctionType(ty, [ty] * len(args)))
    return builder.call(fn, args)


@intrinsic
def _fma_hw(typingctx, a, b, c):
    """a * b + c with one rounding (llvm.fma) for float64 or float32."""
    if a not in (types.float64, types.float32) or b != a or c != a:
        return None
    return a(a, a, a), lambda context, builder, sig, args: _llvm_call(builder, "fma", args)


@intrinsic
def _copysign(typingctx, x, y):
    """|x| with the sign of y (llvm.copysign) for float64 or float32."""
    if x not in (types.float64, types.float32) or y != x:
        return None
    return x(x, x), lambda context, builder, sig, args: _llvm_call(builder, "copysign", args)


@intrinsic
def _always_inline(typingctx):
    """Mark the LLVM function being compiled `alwaysinline`: LLVM's inliner then inlines it
    into every caller, however large (its cost model refuses expm1, sin, pow otherwise,
    and a loop with a call in it is not vectorized). Unlike numba's inline="always" this
    keeps the function's own flags (error_model="numpy", no fastmath)."""
    def codegen(context, builder, sig, args):
        attrs = builder.function.attributes
        attrs.discard("noinline")
        attrs.add("alwaysinline")
        return context.get_dummy_value()
    return types.none(), codegen


# -- error-free transformations -----------------------------------------------------------------

@_jit
def _mla(a, b, c):
    """a * b + c, fused where the target has FMA (the polynomial steps)."""
    if _HAS_FMA:
        return _fma_hw(a, b, c)
    return a * b + c


@_jit
def _two_prod(a, b):
    """(p, e) with p = fl(a * b) and p + e = a * b exactly (FMA, else Dekker's product)."""
    p = a * b
    if _HAS_FMA:
        return p, _fma_hw(a, b, -p)
    s = 134217729.0 * a
    ah = s - (s - a)
    al = a - ah
    s = 134217729.0 * b
    bh = s - (s - b)
    bl = b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


@_jit
def _two_sum(a, b):
    """(s, e) with s = fl(a + b) and s + e = a + b exactly (Knuth)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


@_jit
def _fast_two_sum(a, b):
    """(s, e) with s = fl(a + b) and s + e = a + b exactly, for |a| >= |b| or a = 0."""
    s = a + b
    return s, b - (s - a)


@_jit
def _pow2(k):
    """2.0**k for an int64 -1022 <= k <= 1023."""
    return _as_float((k + 1023) << 52)


# -- exp and expm1 ------------------------------------------------------------------------------

@_jit
def _exp_reduce(x):
    """x (|x| < 1100, or nan) = k ln2 + rh + rl: (k as int64, rh, rl), |rh| <= ln2/2 + tiny;
    rh + rl approximates x - k ln2 to 2^-85 absolute."""
    _always_inline()
    t = _mla(x, _INV_LN2, _SHIFT)
    kd = t - _SHIFT
    k = _as_int(t) - _SHIFT_BITS
    hi = x - kd * _LN2_HI                  # exact: |k| < 2**11 and Sterbenz
    rh, rl = _two_sum(hi, -(kd * _LN2_LO))
    return k, rh, rl


@_jit
def _expm1_poly(r):
    """r^2 (1/2 + r/3! + ... + r^11/13!), the part of exp(r) - 1 - r, for |r| <= 0.35."""
    _always_inline()
    p = _mla(r, _E13, _E12)
    p = _mla(r, p, _E11)
    p = _mla(r, p, _E10)
    p = _mla(r, p, _E9)
    p = _mla(r, p, _E8)
    p = _mla(r, p, _E7)
    p = _mla(r, p, _E6)
    p = _mla(r, p, _E5)
    p = _mla(r, p, _E4)
    p = _mla(r, p, _E3)
    p = _mla(r, p, _E2)
    return (r * r) * p


@_jit
def _exp_kernel(rh, rl):
    """exp(rh + rl) as (hi, lo), |hi + lo - exp| < 2^-60 relative, for |rh| <= 0.35."""
    _always_inline()
    h = _expm1_poly(rh)
    hi, lo = _fast_two_sum(1.0, rh)
    return hi, lo + (h + _mla(rl, rh, rl))


@_jit
def _scale(p, k):
    """p * 2**k for 0.5 < p < 2 and -1080 < k < 1030 (int64), rounding once: the two
    factors keep p * 2**(k >> 1) normal, so only the last product rounds (to a subnormal, 0
    or inf as the true result does)."""
    k1 = k >> 1
    return p * _pow2(k1) * _pow2(k - k1)


@_jit
def exp(x):
    """e**x for a float64, within 1 ulp. exp(x > 709.782712893384) = inf, results below
    2.2e-308 (x < -708.4) are numpy's subnormals, exp(x < -745.1332) = 0, exp(nan) = nan.

    x = k ln2 + r (Cody-Waite: ln2 in a 42-bit and a 53-bit part, r rounded once: its
    error, below 2^-54 |r|, moves the result by less than a quarter of an ulp), exp(r) =
    1 + r + r^2 p(r) by the Taylor polynomial to degree 13 (truncation below 2^-57.7 for
    |r| <= ln2/2), 1 + r kept exact until the last addition, and the result scaled by 2**k
    in two exact steps. At most 0.82 ulp over the test's 1.2e6 points (r as a
    double-double, as expm1 keeps it, gave 0.75 ulp and took 15% longer in a loop)."""
    _always_inline()
    x = np.float64(x)
    x = 710.0 if x > 710.0 else x
    x = -746.0 if x < -746.0 else x
    t = _mla(x, _INV_LN2, _SHIFT)
    kd = t - _SHIFT
    k = _as_int(t) - _SHIFT_BITS
    r = _mla(-kd, _LN2_LO, x - kd * _LN2_HI)        # (x - kd * _LN2_HI is exact)
    hi, lo = _fast_two_sum(1.0, r)
    return _scale(hi + (lo + _expm1_poly(r)), k)


@_jit
def _expm1_parts(x):
    """e**x - 1 = (a + b) * 2**k2 for -60 <= x <= 710 (two doubles a, b with |b| <= ulp(a),
    relative error below 2^-58, and an int64 k2 >= 0, nonzero only above x = 41.6)."""
    _always_inline()
    k, rh, rl = _exp_reduce(x)
    h = _expm1_poly(rh)
    ul = h + _mla(rl, rh, rl)             # expm1(rh + rl) = rh + ul
    k1 = 60 if k > 60 else k
    k2 = k - k1
    s = _pow2(k1)
    m1, m1e = _two_sum(s, -_pow2(-k2))    # 2**k1 - 2**-k2
    a, ae = _two_sum(m1, s * rh)          # 2^k (1 + rh + ul) - 1 = (m1 + s rh + s ul) 2^k2
    a, b = _fast_two_sum(a, (ae + m1e) + s * ul)
    return a, b, k2


@_jit
def expm1(x):
    """e**x - 1 for a float64, within 1 ulp, accurate for tiny x: expm1(x) = x for
    |x| < 2**-54 (so -0.0 and subnormals come back unchanged), -1 for x < -38, inf above
    709.782712893384, nan for nan.

    As exp (same reduction and Taylor polynomial, which is r + r^2/2 + ... here) with
    2**k (1 + expm1(r)) - 1 summed exactly (fdlibm's expm1 uses the same split); for
    k > 60 the -1 is below the rounding and 2**(k - 60) is applied last."""
    _always_inline()
    x = np.float64(x)
    xc = 710.0 if x > 710.0 else x
    xc = -60.0 if xc < -60.0 else xc
    a, b, k2 = _expm1_parts(xc)
    y = (a + b) * _pow2(k2)
    return x if abs(x) < 5.551115123125783e-17 else y


# -- log and log1p ------------------------------------------------------------------------------

@_jit
def _log_split(x):
    """x (positive, normal) = 2**e * m with sqrt(1/2) <= m < sqrt(2): (e as int64, m)."""
    bits = _as_int(x)
    e = (bits - _SQRT_HALF_BITS) >> 52
    return e, _as_float(bits - (e << 52))


@_jit
def _log1p_tail(f):
    """(hfsq, s * (hfsq + R)) for log(1 + f) = f - hfsq + s (hfsq + R), s = f / (2 + f),
    R = 2 s^2/3 + 2 s^4/5 + ... + 2 s^20/21 (fdlibm's decomposition; |f| < 0.415)."""
    _always_inline()
    s = f / (2.0 + f)
    w = s * s
    r = _mla(w, _L10, _L9)
    r = _mla(w, r, _L8)
    r = _mla(w, r, _L7)
    r = _mla(w, r, _L6)
    r = _mla(w, r, _L5)
    r = _mla(w, r, _L4)
    r = _mla(w, r, _L3)
    r = _mla(w, r, _L2)
    r = _mla(w, r, _L1)
    hfsq = 0.5 * f * f
    return hfsq, s * _mla(w, r, hfsq)


@_jit
def log(x):
    """The natural logarithm of a float64, within 1 ulp: log(0) = -inf, log(x < 0) = nan,
    log(inf) = inf, log(nan) = nan; subnormal x are scaled by 2**54 first.

    x = 2**e m, sqrt(1/2) <= m < sqrt(2), f = m - 1 (exact), log(m) = 2 atanh(f/(2+f)) by
    its series to s^21 (truncation below 2^-60), added to e ln2 (two parts) as fdlibm does."""
    _always_inline()
    x = np.float64(x)
    sub = x < _TINY
    xs = x * 18014398509481984.0 if sub else x
    e, m = _log_split(xs)
    e = e - 54 if sub else e
    f = m - 1.0
    hfsq, t = _log1p_tail(f)
    ed = float(e)
    y = ed * _LN2_HI + (f - (hfsq - (t + ed * _LN2_LO)))
    y = y if x < _INF else x
    y = -_INF if x == 0.0 else y
    return _NAN if x < 0.0 else y


@_jit
def log1p(x):
    """log(1 + x) for a float64, within 1 ulp, accurate for tiny x: log1p(x) = x for
    |x| < 2**-54 (-0.0 and subnormals unchanged), log1p(-1) = -inf, log1p(x < -1) = nan,
    log1p(inf) = inf, nan for nan.

    u = 1 + x with its rounding error c (exact two-sum), u = 2**e m as in `log`; for e = 0
    the kernel gets f = x itself, else f = m - 1 and the correction c / u is added."""
    _always_inline()
    x = np.float64(x)
    u, c = _two_sum(1.0, x)
    us = u if (u > 0.0) & (u < _INF) else 1.0      # (u = 0, < 0, inf, nan: selected below)
    e, m = _log_split(us)
    eb = 1023 - e
    eb = 1 if eb < 1 else eb
    corr = (c * _as_float(eb << 52)) / m   # c / u
    f = x if e == 0 else m - 1.0
    corr = 0.0 if e == 0 else corr
    hfsq, t = _log1p_tail(f)
    ed = float(e)
    y = ed * _LN2_HI + (f - (hfsq - (t + (ed * _LN2_LO + corr))))
    y = y if x < _INF else x
    y = -_INF if x == -1.0 else y
    y = _NAN if x < -1.0 else y
    return x if abs(x) < 5.551115123125783e-17 else y


# -- tanh and sigmoid ---------------------------------------------------------------------------

@_jit
def _div_dd(nh, nl, dh, dl):
    """(nh + nl) / (dh + dl) to about 2^-100 relative before the final rounding (one
    division and a Newton correction with the exact remainder)."""
    _always_inline()
    q = nh / dh
    if _HAS_FMA:
        res = _fma_hw(-q, dh, nh)          # the remainder of a rounded quotient is exact
    else:
        p, pe = _two_prod(q, dh)
        res = (nh - p) - pe
    return q + (res + nl - q * dl) / dh


@_jit
def tanh(x):
    """The hyperbolic tangent of a float64, within 1 ulp: tanh(x) = +-1 for |x| > 19.0616,
    tanh(+-0) = +-0, tanh(+-inf) = +-1, nan for nan.

    t = expm1(2|x|) as a double-double (the parts of `expm1`), tanh = t / (t + 2) divided
    in double-double, and the sign of x copied."""
    _always_inline()
    x = np.float64(x)
    a = abs(x)
    a = 20.0 if a > 20.0 else a
    th, tl, _ = _expm1_parts(2.0 * a)
    dh, dl = _two_sum(2.0, th)
    y = _div_dd(th, tl, dh, dl + tl)
    return _copysign(y, x)


@_jit
def sigmoid(x):
    """The logistic function 1 / (1 + e**-x) of a float64 (scipy.special.expit), within 1 ulp
    for both signs: 1 for x > 37.43, the subnormal e**x below -708.4 and down to -745.13 (where
    expit gives 0 below -709.78: e**-x overflows), 0.5 at +-0, 1 and 0 at +-inf, nan for nan.

    e = exp(-|x|) (the kernel of `exp`, kept as a double-double), then 1 / (1 + e) for x >= 0
    and e / (1 + e) for x < 0, each divided in double-double."""
    _always_inline()
    x = np.float64(x)
    a = -abs(x)
    a = -746.0 if a < -746.0 else a
    k, rh, rl = _exp_reduce(a)
    ph, pl = _exp_kernel(rh, rl)
    p, pe = _fast_two_sum(ph, pl)
    eh = _scale(p, k)
    el = _scale(pe, k)
    dh, dl = _fast_two_sum(1.0, eh)
    pos = x >= 0.0
    nh = 1.0 if pos else eh
    nl = 0.0 if pos else el
    return _div_dd(nh, nl, dh, dl + el)


# -- sin and cos --------------------------------------------------------------------------------

@_jit
def _rint(v):
    """The nearest integer to v (ties to even), for |v| < 2**51."""
    return (v + _SHIFT) - _SHIFT


@_jit
def _rint_pos(v):
    """The nearest integer to v (ties to even), for 0 <= v < 2**53 (v itself from 2**52 on,
    where every double is an integer)."""
    r = (v + 4503599627370496.0) - 4503599627370496.0
    return v if v >= 4503599627370496.0 else r


@_jit
def _reduce_cw(x):
    """x = q pi/2 + rh + rl for |x| < 2**20 (else it reduces 0): (q & 3, rh, rl) with
    |rh| <= pi/4 + tiny and an absolute error below 2^-130 (pi/2 in three 33-bit parts,
    whose products with q are exact, and a 53-bit fourth)."""
    _always_inline()
    x = x if abs(x) < SINCOS_CW_RANGE else 0.0
    t = _mla(x, _TWO_OVER_PI, _SHIFT)
    q = t - _SHIFT
    qi = _as_int(t) - _SHIFT_BITS
    a = x - q * _PIO2_1                    # exact: q _PIO2_1 exact, Sterbenz
    s1, e1 = _two_sum(a, -(q * _PIO2_2))
    s2, e2 = _two_sum(s1, -(q * _PIO2_3))
    rh, rl = _fast_two_sum(s2, (e1 + e2) - q * _PIO2_4)
    return qi & 3, rh, rl


@_jit
def _reduce_ph(x):
    """Payne-Hanek: x = q pi/2 + rh + rl for finite |x| >= 2**20 (others give garbage that
    the caller does not select): (q & 3, rh, rl), |rh| <= pi/4 + tiny, absolute error below
    2^-120 (the closest a double comes to a multiple of pi/2 is about 2^-61)."""
    _always_inline()
    a = abs(x)
    bits = _as_int(a)
    row = (bits >> 52) - 1043
    row = 0 if row < 0 else row
    row = 1003 if row > 1003 else row
    m = _as_float((bits & 0xFFFFFFFFFFFFF) | 0x4330000000000000)   # the integer mantissa
    p0, q0 = _two_prod(m, _PH_TABLE[row, 0])
    p1, q1 = _two_prod(m, _PH_TABLE[row, 1])
    p2, q2 = _two_prod(m, _PH_TABLE[row, 2])
    p3 = m * _PH_TABLE[row, 3]
    # p0 < 2**55, a multiple of 2**-51: drop multiples of 4 (exactly)
    p0 = p0 - 4.0 * _rint_pos(p0 * 0.25)
    b, be = _two_sum(p0 + q0, p1)          # p0 + q0 is exact (|.| <= 4, multiple of 2**-51)
    q = _rint(b)
    s, se = _two_sum(b - q, be)            # b - q exact
    s, s2e = _two_sum(s, q1)
    s, s3e = _two_sum(s, p2)
    fh, fl = _fast_two_sum(s, ((se + s2e) + s3e) + (q2 + p3))
    rh = fh * _PIO2_HI
    rl = _two_prod(fh, _PIO2_HI)[1] + (fh * _PIO2_LO + fl * _PIO2_HI)
    qi = (_as_int(q + _SHIFT) - _SHIFT_BITS) & 3
    neg = x < 0.0
    return ((-qi) & 3) if neg else qi, -rh if neg else rh, -rl if neg else rl


@_jit
def _sincos_kernel(rh, rl):
    """(sin, cos) of rh + rl for |rh| <= pi/4 + tiny: Taylor polynomials to degree 17 and
    16 (truncation below 2^-58), cos's 1 - r^2/2 summed exactly."""
    _always_inline()
    w = rh * rh
    ps = _mla(w, _S17, _S15)
    ps = _mla(w, ps, _S13)
    ps = _mla(w, ps, _S11)
    ps = _mla(w, ps, _S9)
    ps = _mla(w, ps, _S7)
    ps = _mla(w, ps, _S5)
    ps = _mla(w, ps, _S3)
    s = rh + (_mla(rh * w, ps, rl) - (0.5 * w) * rl)
    pc = _mla(w, _C16, _C14)
    pc = _mla(w, pc, _C12)
    pc = _mla(w, pc, _C10)
    pc = _mla(w, pc, _C8)
    pc = _mla(w, pc, _C6)
    pc = _mla(w, pc, _C4)
    wh, wl = _two_prod(rh, rh)
    wl = _mla(2.0 * rh, rl, wl)
    hz = 0.5 * wh
    c1, c1e = _fast_two_sum(1.0, -hz)
    c = c1 + ((c1e - 0.5 * wl) + (wh * wh) * pc)
    return s, c


@_jit
def _sincos_quadrant(x, shift):
    """sin(x) (shift 0) or cos(x) (shift 1): the reduction, the kernel and the quadrant."""
    _always_inline()
    qc, rhc, rlc = _reduce_cw(x)
    qp, rhp, rlp = _reduce_ph(x)
    near = abs(x) < SINCOS_CW_RANGE
    q = (qc if near else qp) + shift
    s, c = _sincos_kernel(rhc if near else rhp, rlc if near else rlp)
    v = c if q & 1 else s
    v = -v if q & 2 else v
    return v if abs(x) < _INF else x - x


@_jit
def sin(x):
    """The sine of a float64, within 1 ulp for every finite x (full-range reduction, no
    libm call): sin(x) = x for |x| < 2**-27 (-0.0 and subnormals unchanged), nan for
    +-inf and nan.

    |x| < 2**20: x = q pi/2 + r by a 4-part Cody-Waite reduction; larger: Payne-Hanek with a
    table of 2/pi bits (one row of four doubles per exponent, gathered). Both reductions run
    for every element and a select keeps one, so the loop stays vectorizable; r is a
    double-double and sin/cos(r) are Taylor polynomials on [-pi/4, pi/4]."""
    _always_inline()
    x = np.float64(x)
    v = _sincos_quadrant(x, 0)
    return x if abs(x) < 7.450580596923828e-09 else v


@_jit
def cos(x):
    """The cosine of a float64, within 1 ulp for every finite x (as `sin`): nan for +-inf
    and nan, cos(+-0) = 1."""
    _always_inline()
    x = np.float64(x)
    return _sincos_quadrant(x, 1)


# -- pow ----------------------------------------------------------------------------------------

@_jit
def _log_dd(a, eadj):
    """log(a * 2**eadj) as a double-double (hi, lo) with a relative error below 2^-66, for
    normal positive a (a subnormal x is passed as a = x * 2**54, eadj = -54)."""
    _always_inline()
    e, m = _log_split(a)
    e = e + eadj
    f = m - 1.0
    dh, dl = _fast_two_sum(2.0, f)
    inv = 1.0 / dh
    sh = f * inv
    sl = (_two_prod(-sh, dh)[1] + (f - sh * dh) - sh * dl) * inv   # s = f / (2 + f)
    # s^2, s^3, s^5 and (2/3) s^3, (2/5) s^5 in double-double
    wh, wl = _two_prod(sh, sh)
    wl = _mla(2.0 * sh, sl, wl)
    c3h, c3l = _two_prod(wh, sh)
    c3l = c3l + (wl * sh + wh * sl)
    c5h, c5l = _two_prod(c3h, wh)
    c5l = c5l + (c3l * wh + c3h * wl)
    t3h, t3l = _two_prod(c3h, _T3H)
    t3l = t3l + (c3l * _T3H + c3h * _T3L)
    t5h, t5l = _two_prod(c5h, _T5H)
    t5l = t5l + (c5l * _T5H + c5h * _T5L)
    p = _mla(wh, _P25, _P23)
    p = _mla(wh, p, _P21)
    p = _mla(wh, p, _P19)
    p = _mla(wh, p, _P17)
    p = _mla(wh, p, _P15)
    p = _mla(wh, p, _P13)
    p = _mla(wh, p, _P11)
    p = _mla(wh, p, _P9)
    p = _mla(wh, p, _P7)
    t7 = (c5h * wh) * p                    # below 2^-18 of log(m)
    ed = float(e)
    b, be = _two_sum(ed * _LN2_HI, 2.0 * sh)
    b, b2e = _two_sum(b, t3h)
    b, b3e = _two_sum(b, t5h)
    lo = ((be + b2e) + b3e) + ((t3l + t5l) + t7 + (2.0 * sl + ed * _LN2_LO))
    return _fast_two_sum(b, lo)


@_jit
def pow(x, y):
    """x**y for float64 x and y over the whole IEEE domain, within 1 ulp, with the special
    cases of C99 and np.power: pow(x, +-0) = 1 and pow(1, y) = 1 (even for nan),
    pow(x < 0, y) = +-|x|**y for integer y (odd y keeps the sign) and nan for finite
    non-integer y, pow(+-0, y < 0) = inf (+-inf for odd y), pow(+-0, y > 0) = +0 (+-0 for odd
    y), pow(-1, +-inf) = 1, pow(|x| < 1, -inf) = inf, pow(|x| > 1, -inf) = 0 (and the
    reverse for +inf), pow(-inf, y) = pow(-0, -y), overflow to inf and subnormal results as
    numpy.

    log|x| as a double-double (relative error below 2^-66), y log|x| as a double-double,
    and exp of it with `exp`'s reduction and polynomial: the product's error is what makes
    pow need the extra precision (|y log x| up to 745 amplifies the log's relative error)."""
    _always_inline()
    x = np.float64(x)
    y = np.float64(y)
    ax = abs(x)
    sub = ax < _TINY
    xs = ax * 18014398509481984.0 if sub else ax
    xs = 1.0 if (xs > 1.7976931348623157e308) | (xs != xs) | (xs == 0.0) else xs
    lh, ll = _log_dd(xs, -54 if sub else 0)
    lh = ax if (ax == _INF) | (ax != ax) else lh
    lh = -_INF if ax == 0.0 else lh
    ll = 0.0 if (ax == _INF) | (ax != ax) | (ax == 0.0) else ll
    zh, zl = _two_prod(y, lh)
    zl = _mla(y, ll, zl)
    far = (zh > 710.0) | (zh < -746.0)            # overflow, underflow (or inf)
    zl = 0.0 if far else zl
    zh = 710.0 if zh > 710.0 else zh
    zh = -746.0 if zh < -746.0 else zh
    k, rh, rl = _exp_reduce(zh)
    rh, rl2 = _two_sum(rh, zl)
    ph, pl = _exp_kernel(rh, rl + rl2)
    return _pow_special(x, y, ax, _scale(ph + pl, k))


@_jit
def _pow_special(x, y, ax, r):
    """pow's result from r = |x|**y (computed as exp(y log|x|), whatever that gives for the
    special cases): the sign for negative x and odd integer y, nan for negative x and
    non-integer y, 1 for y = +-0, x = 1 and |x| = 1 with infinite y."""
    _always_inline()
    ay = abs(y)
    y_int = (ay >= 4503599627370496.0) | (_rint_pos(ay) == ay)
    half = 0.5 * ay
    y_odd = (ay < 9007199254740992.0) & y_int & (_rint_pos(half) != half)
    r = -r if (_as_int(x) < 0) & y_odd else r
    r = _NAN if (x < 0.0) & (x > -_INF) & ~y_int else r
    r = 1.0 if (ax == 1.0) & (ay == _INF) else r
    return 1.0 if (y == 0.0) | (x == 1.0) else r


# -- float32 ------------------------------------------------------------------------------------
#
# expf ... sigmoidf: the float64 algorithms in float32 arithmetic (twice the SIMD lanes), with
# float32 constants throughout (a float64 constant would promote the arithmetic), shorter
# Taylor polynomials (truncation below 2^-27 relative) and the exponent in int32 bit patterns.
# sinf, cosf and powf compute in float64 and round once: their reductions need more than
# float32's precision (glibc's sinf and powf also work in double); a float32 argument's 24-bit
# mantissa makes them simpler than the float64 functions.

_f32 = np.float32


def _f32_split(v_fx, first_bits):
    """A fixed-point constant (scaled by 2**_PREC) as a float32 with `first_bits` significant
    bits and the rest rounded to a float32."""
    lead = v_fx.bit_length()
    drop = lead - first_bits
    hi = (v_fx >> drop) << drop
    return _f32(_fx(hi)), _f32(float(Fraction(v_fx - hi, 1 << _PREC)))


_F_LN2_HI, _F_LN2_LO = _f32_split(_LN2_FX, 16)            # k * _F_LN2_HI exact, |k| < 2**8
_F_INV_LN2 = _f32(_INV_LN2)
_F_SHIFT = _f32(12582912.0)                               # 1.5 * 2**23
_F_SHIFT_BITS = np.int32(0x4B400000)
_F_SQRT_HALF_BITS = np.int32(0x3F3504F3)
_F_TINY = _f32(1.1754943508222875e-38)                    # the smallest normal float32
_F_2P23 = _f32(8388608.0)
_F_0, _F_HALF, _F_1, _F_2 = _f32(0.0), _f32(0.5), _f32(1.0), _f32(2.0)
_F_INF, _F_NAN = _f32(np.inf), _f32(np.nan)
_F_EXP_HI, _F_EXP_LO = _f32(89.0), _f32(-104.0)
_F_EXPM1_LO = _f32(-18.0)
_F_2M25 = _f32(2.0 ** -25)
_F_TANH_CLAMP = _f32(10.0)
# exp(r) - 1 - r = r^2 (1/2 + r/3! + ... + r^6/8!): truncation r^9/9! < 2^-28.6 at ln2/2
_FE2, _FE3, _FE4, _FE5, _FE6, _FE7, _FE8 = [_f32(_taylor(n)) for n in range(2, 9)]
# log: R = 2w/3 + 2w^2/5 + 2w^3/7 + 2w^4/9 (truncation w^5/11 < 2^-28.9)
_FL1, _FL2, _FL3, _FL4 = [_f32(float(Fraction(2, 2 * n + 1))) for n in range(1, 5)]


@_jit
def _two_prod_f(a, b):
    """(p, e) with p = fl(a * b) and p + e = a * b exactly, for float32 (FMA, else the exact
    float64 product)."""
    if _HAS_FMA:
        p = a * b
        return p, _fma_hw(a, b, -p)
    w = np.float64(a) * np.float64(b)
    p = np.float32(w)
    return p, np.float32(w - np.float64(p))


@_jit
def _div_dd_f(nh, nl, dh, dl):
    """`_div_dd` for float32."""
    _always_inline()
    q = nh / dh
    p, pe = _two_prod_f(q, dh)
    res = (nh - p) - pe
    return q + (res + nl - q * dl) / dh


@_jit
def _pow2f(k):
    """2.0**k as a float32 for an integer -126 <= k <= 127 (numba computes int32 arithmetic
    in int64: the bit pattern is truncated back to int32)."""
    return _as_float(np.int32((k + 127) << 23))


@_jit
def _scalef(p, k):
    """p * 2**k (float32, int32 k in (-160, 140)) rounding once, as `_scale`."""
    k1 = k >> 1
    return p * _pow2f(k1) * _pow2f(k - k1)


@_jit
def _exp_reduce_f(x):
    """`_exp_reduce` for float32 (|x| < 110, or nan): (k as int32, rh, rl)."""
    _always_inline()
    t = _mla(x, _F_INV_LN2, _F_SHIFT)
    kd = t - _F_SHIFT
    k = _as_int(t) - _F_SHIFT_BITS
    hi = x - kd * _F_LN2_HI
    rh, rl = _two_sum(hi, -(kd * _F_LN2_LO))
    return k, rh, rl


@_jit
def _expm1_poly_f(r):
    """r^2 (1/2 + r/3! + ... + r^6/8!) in float32."""
    p = _mla(r, _FE8, _FE7)
    p = _mla(r, p, _FE6)
    p = _mla(r, p, _FE5)
    p = _mla(r, p, _FE4)
    p = _mla(r, p, _FE3)
    p = _mla(r, p, _FE2)
    return (r * r) * p


@_jit
def _exp_kernel_f(rh, rl):
    """exp(rh + rl) as float32 (hi, lo), |rh| <= 0.35."""
    _always_inline()
    h = _expm1_poly_f(rh)
    hi, lo = _fast_two_sum(_F_1, rh)
    return hi, lo + (h + _mla(rl, rh, rl))


@_jit
def expf(x):
    """e**x for a float32 in float32 arithmetic, within 1 ulp: inf above 88.7228, numpy's
    subnormals below -87.34, 0 below -103.97, nan for nan. As `exp`: Cody-Waite reduction
    (ln2 in a 16-bit and a 24-bit part), Taylor polynomial to degree 8, two-step scaling."""
    _always_inline()
    x = np.float32(x)
    x = _F_EXP_HI if x > _F_EXP_HI else x
    x = _F_EXP_LO if x < _F_EXP_LO else x
    k, rh, rl = _exp_reduce_f(x)
    hi, lo = _exp_kernel_f(rh, rl)
    return _scalef(hi + lo, k)


@_jit
def _expm1_parts_f(x):
    """`_expm1_parts` for float32, -18 <= x <= 89: (a, b, k2) with e**x - 1 = (a+b) 2**k2."""
    _always_inline()
    k, rh, rl = _exp_reduce_f(x)
    h = _expm1_poly_f(rh)
    ul = h + _mla(rl, rh, rl)
    k1 = 30 if k > 30 else k
    k2 = k - k1
    s = _pow2f(k1)
    m1, m1e = _two_sum(s, -_pow2f(-k2))
    a, ae = _two_sum(m1, s * rh)
    a, b = _fast_two_sum(a, (ae + m1e) + s * ul)
    return a, b, k2


@_jit
def expm1f(x):
    """e**x - 1 for a float32 in float32 arithmetic, within 1 ulp; x itself for
    |x| < 2**-25 (-0.0, subnormals), -1 below -17.4, inf above 88.7228, nan for nan."""
    _always_inline()
    x = np.float32(x)
    xc = _F_EXP_HI if x > _F_EXP_HI else x
    xc = _F_EXPM1_LO if xc < _F_EXPM1_LO else xc
    a, b, k2 = _expm1_parts_f(xc)
    y = (a + b) * _pow2f(k2)
    return x if abs(x) < _F_2M25 else y


@_jit
def _log_split_f(x):
    """x (positive normal float32) = 2**e m, sqrt(1/2) <= m < sqrt(2): (e as int32, m)."""
    bits = _as_int(x)
    e = (bits - _F_SQRT_HALF_BITS) >> 23
    return e, _as_float(np.int32(bits - (e << 23)))


@_jit
def _log1p_tail_f(f):
    """`_log1p_tail` in float32 (R to w^4)."""
    _always_inline()
    s = f / (_F_2 + f)
    w = s * s
    r = _mla(w, _FL4, _FL3)
    r = _mla(w, r, _FL2)
    r = _mla(w, r, _FL1)
    hfsq = _F_HALF * f * f
    return hfsq, s * _mla(w, r, hfsq)


@_jit
def logf(x):
    """The natural logarithm of a float32 in float32 arithmetic, within 1 ulp (as `log`):
    -inf at 0, nan below 0, inf at inf; subnormal x are scaled by 2**23 first."""
    _always_inline()
    x = np.float32(x)
    sub = x < _F_TINY
    xs = x * _F_2P23 if sub else x
    e, m = _log_split_f(xs)
    e = e - 23 if sub else e
    f = m - _F_1
    hfsq, t = _log1p_tail_f(f)
    ed = np.float32(e)
    y = ed * _F_LN2_HI + (f - (hfsq - (t + ed * _F_LN2_LO)))
    y = y if x < _F_INF else x
    y = -_F_INF if x == _F_0 else y
    return _F_NAN if x < _F_0 else y


@_jit
def log1pf(x):
    """log(1 + x) for a float32 in float32 arithmetic, within 1 ulp (as `log1p`): x itself
    for |x| < 2**-25, -inf at -1, nan below -1, inf at inf."""
    _always_inline()
    x = np.float32(x)
    u, c = _two_sum(_F_1, x)
    us = u if (u > _F_0) & (u < _F_INF) else _F_1
    e, m = _log_split_f(us)
    eb = 127 - e
    eb = 1 if eb < 1 else eb
    corr = (c * _as_float(np.int32(eb << 23))) / m
    f = x if e == 0 else m - _F_1
    corr = _F_0 if e == 0 else corr
    hfsq, t = _log1p_tail_f(f)
    ed = np.float32(e)
    y = ed * _F_LN2_HI + (f - (hfsq - (t + (ed * _F_LN2_LO + corr))))
    y = y if x < _F_INF else x
    y = -_F_INF if x == -_F_1 else y
    y = _F_NAN if x < -_F_1 else y
    return x if abs(x) < _F_2M25 else y


@_jit
def tanhf(x):
    """The hyperbolic tangent of a float32 in float32 arithmetic, within 1 ulp (as `tanh`):
    +-1 for |x| > 9.011, +-0 kept, nan for nan."""
    _always_inline()
    x = np.float32(x)
    a = abs(x)
    a = _F_TANH_CLAMP if a > _F_TANH_CLAMP else a
    th, tl, _ = _expm1_parts_f(_F_2 * a)
    dh, dl = _two_sum(_F_2, th)
    y = _div_dd_f(th, tl, dh, dl + tl)
    return _copysign(y, x)


@_jit
def sigmoidf(x):
    """The logistic function of a float32 in float32 arithmetic, within 1 ulp for both
    signs (as `sigmoid`): float32 subnormals e**x down to x = -103.97."""
    _always_inline()
    x = np.float32(x)
    a = -abs(x)
    a = _F_EXP_LO if a < _F_EXP_LO else a
    k, rh, rl = _exp_reduce_f(a)
    ph, pl = _exp_kernel_f(rh, rl)
    p, pe = _fast_two_sum(ph, pl)
    eh = _scalef(p, k)
    el = _scalef(pe, k)
    dh, dl = _fast_two_sum(_F_1, eh)
    pos = x >= _F_0
    nh = _F_1 if pos else eh
    nl = _F_0 if pos else el
    return _div_dd_f(nh, nl, dh, dl + el)


def _payne_hanek_table_f32():
    """For sinf/cosf: for every biased float32 exponent E from 115 (2**-12) to 254 (row
    E - 115) three doubles with x * 2/pi = M * (G0 + G1 + G2) (mod 4, to 2**-108), M the
    24-bit integer mantissa of x: 2/pi's bits from position E - 151 on in chunks of 29, 29 and
    53 bits, scaled so that M*G0 (< 2**26, a multiple of 2**-27) and M*G1 (< 1/8) are exact
    float64 products."""
    rows = []
    for e_biased in range(115, 255):
        start = e_biased - 151
        row = []
        for width, end, scale in ((29, 28, -27), (29, 57, -56), (53, 110, -109)):
            last = start + end
            n = 0 if last < 0 else (_TWO_OVER_PI_FX >> (_PREC - last)) & ((1 << width) - 1)
            row.append(math.ldexp(float(n), scale))
        rows.append(row)
    return np.array(rows, dtype=np.float64)


_PH32_TABLE = _payne_hanek_table_f32()
# sin r = r + r^3 (-1/3! + ... + r^10/13!), cos r = 1 - r^2/2 + r^4 (1/4! - ... + r^8/12!):
# truncation below 2^-36 on [-pi/4, pi/4], in float64, then one rounding to float32
_FS3, _FS5, _FS7, _FS9, _FS11, _FS13 = [(-1) ** k * _taylor(2 * k + 1) for k in range(1, 7)]
_FC4, _FC6, _FC8, _FC10, _FC12 = [(-1) ** k * _taylor(2 * k) for k in range(2, 7)]


@_jit
def _sincosf_quadrant(x, shift):
    """sinf (shift 0) or cosf (shift 1) of a float32, computed in float64: the float32
    Payne-Hanek reduction (exact products), Taylor polynomials, the quadrant, one rounding."""
    _always_inline()
    bits = _as_int(abs(x))
    row = (bits >> 23) - 115
    row = 0 if row < 0 else row
    row = 139 if row > 139 else row
    m = np.float64(_as_float(np.int32((bits & 0x7FFFFF) | 0x4B000000)))   # 2**23 <= M < 2**24
    p0 = m * _PH32_TABLE[row, 0]
    p0 = p0 - 4.0 * _rint(p0 * 0.25)
    a, ae = _two_sum(p0, m * _PH32_TABLE[row, 1])
    q = _rint(a)
    f = (a - q) + (ae + m * _PH32_TABLE[row, 2])
    r = f * _PIO2_HI
    qi = (_as_int(q + _SHIFT) - _SHIFT_BITS) & 3
    x64 = np.float64(x)
    tiny = abs(x64) < 2.44140625e-4                          # 2**-12: sinf = x, cosf = 1
    neg = x64 < 0.0
    r = x64 if tiny else (-r if neg else r)
    qi = 0 if tiny else (((-qi) & 3) if neg else qi)
    w = r * r
    ps = _mla(w, _FS13, _FS11)
    ps = _mla(w, ps, _FS9)
    ps = _mla(w, ps, _FS7)
    ps = _mla(w, ps, _FS5)
    ps = _mla(w, ps, _FS3)
    sv = _mla(r * w, ps, r)
    pc = _mla(w, _FC12, _FC10)
    pc = _mla(w, pc, _FC8)
    pc = _mla(w, pc, _FC6)
    pc = _mla(w, pc, _FC4)
    cv = _mla(w * w, pc, 1.0 - 0.5 * w)
    qs = qi + shift
    v = cv if qs & 1 else sv
    v = -v if qs & 2 else v
    v = v if abs(x64) < _INF else x64 - x64
    return np.float32(v)


@_jit
def sinf(x):
    """The sine of a float32, within 1 ulp for every finite x (full range): x itself for
    |x| < 2**-12 (-0.0 and subnormals unchanged), nan for inf and nan. Float64 arithmetic
    (a float32's 24-bit mantissa times 29-bit chunks of 2/pi are exact float64 products, so
    one table-driven reduction covers every argument), rounded once to float32."""
    _always_inline()
    x = np.float32(x)
    v = _sincosf_quadrant(x, 0)
    return x if abs(x) < _f32(2.0 ** -12) else v


@_jit
def cosf(x):
    """The cosine of a float32, within 1 ulp for every finite x (as `sinf`): nan for inf
    and nan."""
    _always_inline()
    return _sincosf_quadrant(np.float32(x), 1)


@_jit
def powf(x, y):
    """x**y for float32 x and y, within 1 ulp, with `pow`'s special cases (np.power's for
    float32): exp(y log|x|) in float64 (the product's relative error, below 2^-43, is far
    below a float32 ulp), rounded once: above 3.4e38 to inf, float32 subnormals as numpy."""
    _always_inline()
    x = np.float64(np.float32(x))
    y = np.float64(np.float32(y))
    ax = abs(x)
    r = exp(y * log(ax))
    return np.float32(_pow_special(x, y, ax, r))


# -- one name per function for both precisions (what adjit's generated code calls) --------------

def call_compiled(context, builder, dispatcher, argtys, args):
    """Call `dispatcher` (a caching njit function) from a lowering: compiled for `argtys`, or
    loaded from numba's disk cache, and linked into the caller (where LLVM may inline it)."""
    fnty = context.typing_context.resolve_value_type(dispatcher)
    sig = fnty.get_call_type(context.typing_context, argtys, {})
    return context.get_function(fnty, sig)(builder, args)


def _either_precision(f64, f32, double):
    """`f64`'s name for a function of either precision: a float32 argument goes to `f32` (a
    float32 result, as math.exp of a float32 in numba), anything else to `f64` (ints and
    float64: a float64 result). Compiled, numba types and lowers the choice itself
    (type_callable, lower_builtin): a direct call of f64 or f32, which LLVM inlines, so a
    loop calling it vectorizes as one calling f64 or f32 does, and no function of numba IR is
    built and typed at each call site (as an overload inlined by numba would be).
    `double`: f64's name in this module (generated code whose floats are all float64 calls
    it by that name: codegen/vector_math.py)."""
    def either(x):
        return f32(x) if isinstance(x, np.float32) else f64(x)

    def chosen(x):
        """The function a call with an argument of numba type x calls (None: none)."""
        if isinstance(x, types.Float) and x.bitwidth == 32:
            return f32
        if isinstance(x, (types.Float, types.Integer, types.Boolean)):
            return f64
        return None

    @type_callable(either)
    def _type_either(context):
        def typer(x):
            f = chosen(x)
            return None if f is None else \
                context.resolve_value_type(f).get_call_type(context, (x,), {})
        return typer

    @lower_builtin(either, types.Number)
    @lower_builtin(either, types.Boolean)
    def _lower_either(context, builder, sig, args):
        x = sig.args[0]
        return call_compiled(context, builder, chosen(x), (x,), args)

    either.__name__ = either.__qualname__ = f64.py_func.__name__
    either.double = double
    either.__doc__ = f64.__doc__ + f"\n\nA float32 argument: {f32.py_func.__name__}."
    return either


exp64, expm1_64, log64, log1p64, tanh64, sin64, cos64 = exp, expm1, log, log1p, tanh, sin, cos
exp = _either_precision(exp64, expf, "exp64")
expm1 = _either_precision(expm1_64, expm1f, "expm1_64")
log = _either_precision(log64, logf, "log64")
log1p = _either_precision(log1p64, log1pf, "log1p64")
tanh = _either_precision(tanh64, tanhf, "tanh64")
sin = _either_precision(sin64, sinf, "sin64")
cos = _either_precision(cos64, cosf, "cos64")


key_by_level(globals())     # numba caches each level apart (jitcache.py)
