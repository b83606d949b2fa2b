"""One small function per derivative rule, with its domain and analytic derivative.

tests/test_rules.py checks each against the analytic derivative and finite differences;
a new rule in adjit/rules/table.py needs one entry here.
"""
import math

import numpy as np
from scipy import special

from adjit.runtime import vec


def r_sin(x): return math.sin(x)  # noqa: E704
def r_cos(x): return math.cos(x)  # noqa: E704
def r_tan(x): return math.tan(x)  # noqa: E704
def r_asin(x): return math.asin(x)  # noqa: E704
def r_acos(x): return math.acos(x)  # noqa: E704
def r_atan(x): return math.atan(x)  # noqa: E704
def r_sinh(x): return math.sinh(x)  # noqa: E704
def r_cosh(x): return math.cosh(x)  # noqa: E704
def r_tanh(x): return math.tanh(x)  # noqa: E704
def r_exp(x): return math.exp(x)  # noqa: E704
def r_expm1(x): return math.expm1(x)  # noqa: E704
def r_log(x): return math.log(x)  # noqa: E704
def r_log1p(x): return math.log1p(x)  # noqa: E704
def r_log10(x): return math.log10(x)  # noqa: E704
def r_sqrt(x): return math.sqrt(x)  # noqa: E704
def r_erf(x): return math.erf(x)  # noqa: E704
def r_norm_root(x): return np.linalg.norm(np.array([x, 0.5, -x]))  # noqa: E704
def r_erfc(x): return math.erfc(x)  # noqa: E704
def r_fabs(x): return math.fabs(x)  # noqa: E704
def r_abs(x): return abs(x)  # noqa: E704
def r_floor(x): return math.floor(x) * 1.0 + x * 0.0  # noqa: E704
def r_np_floor(x): return np.floor(x) + x * x  # noqa: E704
def r_np_sign(x): return np.sign(x) * 3.0 + x  # noqa: E704
def r_ceil(x): return math.ceil(x) * 1.0 + x * 0.0  # noqa: E704
def r_trunc(x): return math.trunc(x) * 1.0 + x * 0.0  # noqa: E704
def r_int(x): return int(x) * 1.0 + x  # noqa: E704
def r_round(x): return round(x) * 1.0 + x  # noqa: E704
def r_bool(x): return float(bool(x > 0.0)) + x  # noqa: E704
def r_float(x): return float(x) * x  # noqa: E704
def r_neg(x): return -x  # noqa: E704
def r_pos(x): return +x * x  # noqa: E704
def r_square(x): return x ** 2  # noqa: E704
def r_cube(x): return x ** 3  # noqa: E704
def r_inv(x): return x ** -1  # noqa: E704
def r_floordiv1(x): return x // 0.3 + x  # noqa: E704
def r_asinh(x): return math.asinh(x)  # noqa: E704
def r_acosh(x): return math.acosh(x)  # noqa: E704
def r_atanh(x): return math.atanh(x)  # noqa: E704
def r_log2(x): return math.log2(x)  # noqa: E704
def r_cbrt(x): return np.cbrt(x)  # noqa: E704
def r_exp2(x): return np.exp2(x)  # noqa: E704
def r_deg2rad(x): return np.deg2rad(x) * x  # noqa: E704
def r_rad2deg(x): return np.rad2deg(x)  # noqa: E704
def r_sinc(x): return np.sinc(x)  # noqa: E704
def r_lgamma(x): return math.lgamma(x)  # noqa: E704
def r_gamma(x): return math.gamma(x)  # noqa: E704
def r_lgamma_neg(x): return math.lgamma(x)  # noqa: E704
def r_degrees(x): return math.degrees(x)  # noqa: E704
def r_radians(x): return math.radians(x) * x  # noqa: E704
def r_isnan(x): return x * 2.0 if not math.isnan(x) and math.isfinite(x) and \
    not math.isinf(x) else 0.0  # noqa: E704
def r_np_degrees(x): return np.degrees(x)  # noqa: E704
def r_np_radians(x): return np.radians(x)  # noqa: E704
def r_rint(x): return np.rint(x) + x * x  # noqa: E704
def r_np_round(x): return np.round(x) + x * x  # noqa: E704
def r_np_around(x): return np.around(x) * x  # noqa: E704
def r_np_ceil(x): return np.ceil(x) + x * x  # noqa: E704
def r_np_trunc(x): return np.trunc(x) * x  # noqa: E704
def r_math_exp2(x): return math.exp2(x)  # noqa: E704
def r_spacing(x): return np.spacing(x) * 1e10 + x  # noqa: E704
def r_reciprocal(x): return np.reciprocal(x)  # noqa: E704
def r_conjugate(x): return np.conjugate(x) * x  # noqa: E704
def r_angle(x): return np.angle(x) + x  # noqa: E704
def r_nan_to_num(x): return np.nan_to_num(x) * x  # noqa: E704
def r_ldexp(x): return math.ldexp(x, 3)  # noqa: E704
def r_np_ldexp(x): return np.ldexp(x, -2)  # noqa: E704
def r_nextafter(x): return math.nextafter(x, 0.0) * x  # noqa: E704
def r_np_nextafter(x): return np.nextafter(x, 5.0) + x  # noqa: E704

# scipy.special, as code outside numba calls it (the ufunc), and as numba users call it (a
# ctypes wrapper of the C function at its address in scipy.special.cython_special)
def _address_wrapper(symbol, nargs):
    import ctypes
    from numba.extending import get_cython_function_address
    return ctypes.CFUNCTYPE(ctypes.c_double, *[ctypes.c_double] * nargs)(
        get_cython_function_address("scipy.special.cython_special", symbol))


_ndtri = _address_wrapper("ndtri", 1)
_i0e = _address_wrapper("i0e", 1)
_kv = _address_wrapper("__pyx_fuse_1kv", 2)
_stdtr = _address_wrapper("__pyx_fuse_0stdtr", 2)
_stdtrit = _address_wrapper("__pyx_fuse_0stdtrit", 2)


def s_erf(x): return special.erf(x)  # noqa: E704
def s_erfc(x): return special.erfc(x)  # noqa: E704
def s_erfcx(x): return special.erfcx(x)  # noqa: E704
def s_erfinv(x): return special.erfinv(x)  # noqa: E704
def s_erfcinv(x): return special.erfcinv(x)  # noqa: E704
def s_ndtr(x): return special.ndtr(x)  # noqa: E704
def s_log_ndtr(x): return special.log_ndtr(x)  # noqa: E704
def s_ndtri(x): return _ndtri(x)  # noqa: E704
def s_gammaln(x): return special.gammaln(x)  # noqa: E704
def s_gamma(x): return special.gamma(x)  # noqa: E704
def s_psi(x): return special.digamma(x)  # noqa: E704
def s_expit(x): return special.expit(x)  # noqa: E704
def s_log_expit(x): return special.log_expit(x)  # noqa: E704
def s_logit(x): return special.logit(x)  # noqa: E704
def s_i0(x): return special.i0(x)  # noqa: E704
def s_i1(x): return special.i1(x)  # noqa: E704
def s_i0e(x): return _i0e(x)  # noqa: E704
def s_i1e(x): return special.i1e(x)  # noqa: E704
def s_gammainc(x): return special.gammainc(2.5, x)  # noqa: E704
def s_gammaincc(x): return special.gammaincc(1.5, x)  # noqa: E704
def s_kv(x): return _kv(1.5, x)  # noqa: E704
def s_stdtr(x): return _stdtr(4.0, x)  # noqa: E704
def s_stdtrit(x): return _stdtrit(4.0, x)  # noqa: E704
def s_xlogy(a, b): return special.xlogy(a, b)  # noqa: E704
def s_xlog1py(a, b): return special.xlog1py(a, b)  # noqa: E704
def s_betaln(a, b): return special.betaln(a, b)  # noqa: E704
def s_beta(a, b): return special.beta(a, b)  # noqa: E704


def _t_pdf(t, df):
    return math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi) \
        * (1 + t * t / df) ** (-(df + 1) / 2)


def _sign(x):
    return 1.0 if x > 0 else -1.0


SPECIAL = [
    (s_erf, (-3.0, 3.0), lambda x: 2.0 / math.sqrt(math.pi) * math.exp(-x * x)),
    (s_erfc, (-3.0, 3.0), lambda x: -2.0 / math.sqrt(math.pi) * math.exp(-x * x)),
    (s_erfcx, (-2.0, 5.0), lambda x: 2.0 * x * special.erfcx(x) - 2.0 / math.sqrt(math.pi)),
    (s_erfinv, (-0.95, 0.95), lambda x: math.sqrt(math.pi) / 2 * math.exp(special.erfinv(x) ** 2)),
    (s_erfcinv, (0.05, 1.95), lambda x: -math.sqrt(math.pi) / 2 *
     math.exp(special.erfcinv(x) ** 2)),
    (s_ndtr, (-4.0, 4.0), lambda x: math.exp(-x * x / 2) / math.sqrt(2 * math.pi)),
    (s_log_ndtr, (-8.0, 4.0), lambda x: math.exp(-x * x / 2) / math.sqrt(2 * math.pi) /
     special.ndtr(x)),
    (s_ndtri, (0.02, 0.98), lambda x: 1.0 / (math.exp(-special.ndtri(x) ** 2 / 2) /
                                            math.sqrt(2 * math.pi))),
    (s_gammaln, (0.2, 12.0), lambda x: float(special.digamma(x))),
    (s_gamma, (0.2, 5.0), lambda x: special.gamma(x) * float(special.digamma(x))),
    (s_psi, (0.2, 12.0), lambda x: float(special.polygamma(1, x))),
    (s_expit, (-6.0, 6.0), lambda x: special.expit(x) * special.expit(-x)),
    (s_log_expit, (-6.0, 6.0), lambda x: special.expit(-x)),
    (s_logit, (0.02, 0.98), lambda x: 1.0 / (x * (1.0 - x))),
    (s_i0, (-3.0, 3.0), lambda x: special.i1(x)),
    (s_i1, (0.1, 3.0), lambda x: special.i0(x) - special.i1(x) / x),
    (s_i0e, (0.1, 3.0), lambda x: special.i1e(x) - _sign(x) * special.i0e(x)),
    (s_i1e, (0.1, 3.0), lambda x: special.i0e(x) - special.i1e(x) / x -
     _sign(x) * special.i1e(x)),
    (s_gammainc, (0.1, 5.0), lambda x: x ** 1.5 * math.exp(-x) / math.gamma(2.5)),
    (s_gammaincc, (0.1, 5.0), lambda x: -x ** 0.5 * math.exp(-x) / math.gamma(1.5)),
    (s_kv, (0.2, 4.0), lambda x: float(special.kvp(1.5, x))),
    (s_stdtr, (-4.0, 4.0), lambda x: _t_pdf(x, 4.0)),
    # (not near p = 0.5: there scipy's stdtrit is accurate to about 1e-11 absolute, and
    # central differences of it to 4e-5)
    (s_stdtrit, (0.55, 0.98), lambda p: 1.0 / _t_pdf(special.stdtrit(4.0, p), 4.0)),
]

SPECIAL_BINARY = [
    (s_xlogy, (-3, 3), (0.2, 3), lambda a, b: (math.log(b), a / b)),
    (s_xlog1py, (-3, 3), (-0.5, 3), lambda a, b: (math.log1p(b), a / (1 + b))),
    (s_betaln, (0.2, 4), (0.2, 4), lambda a, b: (
        special.digamma(a) - special.digamma(a + b), special.digamma(b) - special.digamma(a + b))),
    (s_beta, (0.2, 4), (0.2, 4), lambda a, b: (
        special.beta(a, b) * (special.digamma(a) - special.digamma(a + b)),
        special.beta(a, b) * (special.digamma(b) - special.digamma(a + b)))),
]

UNARY = [
    (r_sin, (-3.0, 3.0), math.cos),
    (r_cos, (-3.0, 3.0), lambda x: -math.sin(x)),
    (r_tan, (-1.4, 1.4), lambda x: 1.0 / math.cos(x) ** 2),
    (r_asin, (-0.95, 0.95), lambda x: 1.0 / math.sqrt(1 - x * x)),
    (r_acos, (-0.95, 0.95), lambda x: -1.0 / math.sqrt(1 - x * x)),
    (r_atan, (-5.0, 5.0), lambda x: 1.0 / (1 + x * x)),
    (r_sinh, (-3.0, 3.0), math.cosh),
    (r_cosh, (-3.0, 3.0), math.sinh),
    (r_tanh, (-3.0, 3.0), lambda x: 1.0 / math.cosh(x) ** 2),
    (r_exp, (-3.0, 3.0), math.exp),
    (r_expm1, (-3.0, 3.0), math.exp),
    (r_log, (0.05, 10.0), lambda x: 1.0 / x),
    (r_log1p, (-0.9, 10.0), lambda x: 1.0 / (1.0 + x)),
    (r_log10, (0.05, 10.0), lambda x: 1.0 / (x * math.log(10.0))),
    (r_sqrt, (0.05, 10.0), lambda x: 0.5 / math.sqrt(x)),
    (r_norm_root, (-3.0, 3.0), lambda x: 2.0 * x / math.sqrt(2.0 * x * x + 0.25)),
    (r_erf, (-3.0, 3.0), lambda x: 2.0 / math.sqrt(math.pi) * math.exp(-x * x)),
    (r_erfc, (-3.0, 3.0), lambda x: -2.0 / math.sqrt(math.pi) * math.exp(-x * x)),
    (r_fabs, (0.05, 3.0), lambda x: 1.0),
    (r_abs, (-3.0, -0.05), lambda x: -1.0),
    (r_floor, (0.05, 0.95), lambda x: 0.0),
    (r_np_floor, (0.05, 0.95), lambda x: 2.0 * x),
    (r_np_sign, (0.05, 2.0), lambda x: 1.0),
    (r_ceil, (0.05, 0.95), lambda x: 0.0),
    (r_trunc, (0.05, 0.95), lambda x: 0.0),
    (r_int, (0.05, 0.95), lambda x: 1.0),
    (r_round, (0.05, 0.45), lambda x: 1.0),
    (r_bool, (0.05, 0.95), lambda x: 1.0),
    (r_float, (-3.0, 3.0), lambda x: 2.0 * x),
    (r_neg, (-3.0, 3.0), lambda x: -1.0),
    (r_pos, (-3.0, 3.0), lambda x: 2.0 * x),
    (r_square, (-3.0, 3.0), lambda x: 2.0 * x),
    (r_cube, (-3.0, 3.0), lambda x: 3.0 * x * x),
    (r_inv, (0.1, 3.0), lambda x: -1.0 / (x * x)),
    (r_floordiv1, (0.05, 0.25), lambda x: 1.0),
    (r_asinh, (-3.0, 3.0), lambda x: 1.0 / math.sqrt(1 + x * x)),
    (r_acosh, (1.1, 4.0), lambda x: 1.0 / math.sqrt(x * x - 1)),
    (r_atanh, (-0.9, 0.9), lambda x: 1.0 / (1 - x * x)),
    (r_log2, (0.05, 10.0), lambda x: 1.0 / (x * math.log(2.0))),
    (r_cbrt, (0.1, 8.0), lambda x: x ** (-2.0 / 3.0) / 3.0),
    (r_exp2, (-3.0, 3.0), lambda x: 2.0 ** x * math.log(2.0)),
    (r_deg2rad, (-3.0, 3.0), lambda x: 2.0 * x * math.pi / 180.0),
    (r_rad2deg, (-3.0, 3.0), lambda x: 180.0 / math.pi),
    (r_sinc, (0.1, 3.0), lambda x: (math.cos(math.pi * x) * math.pi * x - math.sin(math.pi * x))
     / (math.pi * x * x)),
    (r_lgamma, (0.2, 12.0), lambda x: float(special.digamma(x))),
    (r_gamma, (0.2, 5.0), lambda x: math.gamma(x) * float(special.digamma(x))),
    (r_lgamma_neg, (-2.9, -2.1), lambda x: float(special.digamma(x))),
    (r_degrees, (-3.0, 3.0), lambda x: 180.0 / math.pi),
    (r_radians, (-3.0, 3.0), lambda x: 2.0 * x * math.pi / 180.0),
    (r_isnan, (-3.0, 3.0), lambda x: 2.0),
    (r_np_degrees, (-3.0, 3.0), lambda x: 180.0 / math.pi),
    (r_np_radians, (-3.0, 3.0), lambda x: math.pi / 180.0),
    (r_rint, (0.05, 0.45), lambda x: 2.0 * x),
    (r_np_round, (0.05, 0.45), lambda x: 2.0 * x),
    (r_np_around, (0.55, 1.45), lambda x: 1.0),
    (r_np_ceil, (0.05, 0.95), lambda x: 2.0 * x),
    (r_np_trunc, (1.05, 1.95), lambda x: 1.0),
    (r_math_exp2, (-3.0, 3.0), lambda x: 2.0 ** x * math.log(2.0)),
    (r_spacing, (0.55, 0.95), lambda x: 1.0),
    (r_reciprocal, (0.2, 3.0), lambda x: -1.0 / (x * x)),
    (r_conjugate, (-3.0, 3.0), lambda x: 2.0 * x),
    (r_angle, (0.1, 3.0), lambda x: 1.0),
    (r_nan_to_num, (-3.0, 3.0), lambda x: 2.0 * x),
    (r_ldexp, (-3.0, 3.0), lambda x: 8.0),
    (r_np_ldexp, (-3.0, 3.0), lambda x: 0.25),
    (r_nextafter, (0.1, 3.0), lambda x: x + math.nextafter(x, 0.0)),
    (r_np_nextafter, (-3.0, 3.0), lambda x: 2.0),
]


def b_add(a, b): return a + b  # noqa: E704
def b_sub(a, b): return a - b  # noqa: E704
def b_mul(a, b): return a * b  # noqa: E704
def b_div(a, b): return a / b  # noqa: E704
def b_pow(a, b): return a ** b  # noqa: E704
def b_mod(a, b): return a % b  # noqa: E704
def b_floordiv(a, b): return (a // b) * 1.0 + a * b  # noqa: E704
def b_mpow(a, b): return math.pow(a, b)  # noqa: E704
def b_builtin_pow(a, b): return pow(a, b) + pow(b, 2)  # noqa: E704
def b_hypot(a, b): return math.hypot(a, b)  # noqa: E704
def b_atan2(a, b): return math.atan2(a, b)  # noqa: E704
def b_min(a, b): return min(a, b)  # noqa: E704
def b_max(a, b): return max(a, b)  # noqa: E704
def b_min3(a, b): return min(a, b, 0.25)  # noqa: E704
def b_max3(a, b): return max(a * b, b, 0.25)  # noqa: E704
def b_logaddexp(a, b): return np.logaddexp(a, b)  # noqa: E704
def b_logaddexp2(a, b): return np.logaddexp2(a, b)  # noqa: E704
def b_np_hypot(a, b): return np.hypot(a, b)  # noqa: E704
def b_copysign(a, b): return math.copysign(a, b) * b  # noqa: E704
def b_np_copysign(a, b): return np.copysign(a, b)  # noqa: E704
def b_fmax(a, b): return np.fmax(a, b)  # noqa: E704
def b_fmin(a, b): return np.fmin(a, b)  # noqa: E704
def b_fmod(a, b): return np.fmod(a, b)  # noqa: E704
def b_type(a, b): return type(a)(b) * a  # noqa: E704
def b_np_float64(a, b): return np.float64(a) * b + np.int64(a * 3.0) * b  # noqa: E704
# rounding to float32, its derivative taken as 1: the second term takes the rounding back out,
# so that finite differences see a smooth function (a * b; float(): in Python a float32 times
# a float is a float32, in numba a float64)
def b_np_float32(a, b): return float(np.float32(a)) * b + (a - float(np.float32(a))) * b  # noqa

BINARY = [
    (b_add, (-3, 3), (-3, 3), lambda a, b: (1.0, 1.0)),
    (b_sub, (-3, 3), (-3, 3), lambda a, b: (1.0, -1.0)),
    (b_mul, (-3, 3), (-3, 3), lambda a, b: (b, a)),
    (b_div, (-3, 3), (0.2, 3), lambda a, b: (1 / b, -a / b ** 2)),
    (b_pow, (0.2, 3), (-2, 2), lambda a, b: (b * a ** (b - 1), a ** b * math.log(a))),
    (b_mod, (0.1, 0.9), (1.1, 2.0), lambda a, b: (1.0, 0.0)),
    (b_floordiv, (0.1, 0.9), (1.1, 2.0), lambda a, b: (b, a)),
    (b_mpow, (0.2, 3), (-2, 2), lambda a, b: (b * a ** (b - 1), a ** b * math.log(a))),
    (b_builtin_pow, (0.2, 3), (-2, 2), lambda a, b: (b * a ** (b - 1),
                                                     a ** b * math.log(a) + 2.0 * b)),
    (b_hypot, (-3, 3), (0.5, 3), lambda a, b: (a / math.hypot(a, b), b / math.hypot(a, b))),
    (b_atan2, (-3, 3), (0.5, 3), lambda a, b: (b / (a * a + b * b), -a / (a * a + b * b))),
    (b_min, (-3, -0.1), (0.1, 3), lambda a, b: (1.0, 0.0)),
    (b_max, (-3, -0.1), (0.1, 3), lambda a, b: (0.0, 1.0)),
    (b_min3, (0.5, 3), (-3, 0.0), lambda a, b: (0.0, 1.0)),
    (b_max3, (1.2, 2.0), (1.0, 3.0), lambda a, b: (b, a)),
    (b_logaddexp, (-3, 3), (-3, 3), lambda a, b: (1 / (1 + math.exp(b - a)),
                                                  1 / (1 + math.exp(a - b)))),
    (b_logaddexp2, (-3, 3), (-3, 3), lambda a, b: (1 / (1 + 2.0 ** (b - a)),
                                                   1 / (1 + 2.0 ** (a - b)))),
    (b_np_hypot, (-3, 3), (0.5, 3), lambda a, b: (a / math.hypot(a, b), b / math.hypot(a, b))),
    (b_copysign, (0.1, 3), (-3, -0.1), lambda a, b: (-b, -a)),
    (b_np_copysign, (-3, -0.1), (0.1, 3), lambda a, b: (-1.0, 0.0)),
    (b_fmax, (-3, -0.1), (0.1, 3), lambda a, b: (0.0, 1.0)),
    (b_fmin, (-3, -0.1), (0.1, 3), lambda a, b: (1.0, 0.0)),
    (b_fmod, (2.1, 2.9), (1.1, 1.4), lambda a, b: (1.0, -float(math.trunc(a / b)))),
    (b_type, (-3, 3), (-3, 3), lambda a, b: (b, a)),
    (b_np_float64, (0.1, 0.3), (-3, 3), lambda a, b: (b, a)),
    (b_np_float32, (-3, 3), (-3, 3), lambda a, b: (b, a)),
]

UNARY += SPECIAL
BINARY += SPECIAL_BINARY

RULES_COVERED = {
    math.sin, math.cos, math.tan, math.asin, math.acos, math.atan, math.sinh, math.cosh,
    math.tanh, math.exp, math.expm1, math.log, math.log1p, math.log10, math.sqrt, math.erf,
    math.erfc, math.fabs, math.floor, math.ceil, math.trunc, math.pow, pow, math.hypot,
    math.atan2, abs, min, max, float, int, bool, round, np.floor, np.sign, math.asinh,
    math.acosh, math.atanh, math.log2, np.cbrt, np.exp2, np.deg2rad, np.rad2deg, np.sinc,
    np.logaddexp, np.logaddexp2, math.copysign, np.copysign, math.lgamma, math.gamma,
    math.degrees, math.radians, np.degrees, np.radians, math.isnan, math.isinf, math.isfinite,
    np.rint, np.round, np.around, np.ceil, np.trunc, math.exp2, np.spacing, np.reciprocal,
    np.conjugate, np.angle, np.nan_to_num, math.ldexp, np.ldexp, math.nextafter, np.nextafter,
    np.fmax, np.fmin, np.fmod, vec.convert_like, vec.norm_root, np.float64, np.float32, np.int64,
} | {vec.special.function(name, n) for name, n in (
    ("erf", 1), ("erfc", 1), ("erfcx", 1), ("erfinv", 1), ("erfcinv", 1), ("ndtr", 1),
    ("log_ndtr", 1), ("ndtri", 1), ("gammaln", 1), ("gamma", 1), ("psi", 1), ("expit", 1),
    ("log_expit", 1), ("logit", 1), ("i0", 1), ("i1", 1), ("i0e", 1), ("i1e", 1),
    ("gammainc", 2), ("gammaincc", 2), ("kv", 2), ("stdtr", 2), ("stdtrit", 2), ("xlogy", 2), ("xlog1py", 2),
    ("betaln", 2), ("beta", 2), ("betainc", 3), ("betaincc", 3), ("voigt_profile", 3))}
_ = np
