"""scipy.special's functions as compiled code calls them.

numba cannot call scipy.special's ufuncs; numba users reach the same C functions through
their addresses in scipy.special.cython_special (numba.extending.get_cython_function_address,
wrapped in a ctypes function type), and numba calls a ctypes function directly. adjit makes
one such wrapper per function it knows (the double-precision version) inside an @njit
function named as scipy names it (a ctypes function cannot be a dictionary key; a
dispatcher can): the registry entries of scipy.special (rules/table.py) are these
functions, generated code calls them (`vec.special.i1(x)` in a derivative), and a user's own
wrapper of the same C function is recognized by its address (`by_address`), so its calls get
the same derivative.
"""
import ctypes
import math
import platform
import sys

import numba

from .index import digamma

_MODULE = "scipy.special.cython_special"
_BY_ADDRESS = {}
_MADE = {}


def _double_symbol(name, nargs):
    """The cython_special symbol of `name`'s version on doubles (or None)."""
    import scipy.special.cython_special as cs
    want = '"double (' + ", ".join(["double"] * nargs) + ', int __pyx_skip_dispatch)"'
    for symbol in (name, "__pyx_fuse_0" + name, "__pyx_fuse_1" + name):
        capsule = cs.__pyx_capi__.get(symbol)
        if capsule is not None and want in repr(capsule):   # a capsule's name: its signature
            return symbol
    return None


def function(name, nargs):
    """adjit's ctypes wrapper of scipy.special.<name> on doubles (None where this scipy has
    no such C function); made once, and also an attribute of this module."""
    if name in _MADE:
        return _MADE[name]
    fn = None
    symbol = _double_symbol(name, nargs)
    if symbol is not None:
        from numba.extending import get_cython_function_address
        address = get_cython_function_address(_MODULE, symbol)
        c_function = ctypes.CFUNCTYPE(ctypes.c_double, *[ctypes.c_double] * nargs)(address)
        fn = _compiled(c_function, nargs, name)
        _BY_ADDRESS[address] = fn
        globals()[name] = fn
    _MADE[name] = fn
    return fn


def _compiled(c_function, nargs, name):
    """An @njit function of `nargs` numbers calling `c_function`, named `name`."""
    if nargs == 1:
        def call(x):
            return c_function(x)
    elif nargs == 2:
        def call(x, y):
            return c_function(x, y)
    else:
        def call(x, y, z):
            return c_function(x, y, z)
    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"scipy.special.{name} on doubles (its C function, through ctypes)"
    return numba.njit(call)


def by_address(obj):
    """adjit's wrapper of the scipy.special C function that `obj` points to, or None: a
    ctypes function pointer or a numba WrapperAddressProtocol object (numba's first-class
    function wrapper of an address), as numba users wrap cython_special's functions."""
    if isinstance(obj, ctypes._CFuncPtr):
        return _BY_ADDRESS.get(ctypes.cast(obj, ctypes.c_void_p).value)
    if isinstance(obj, numba.types.WrapperAddressProtocol):
        try:
            return _BY_ADDRESS.get(obj.__wrapper_address__())
        except Exception:       # a wrapper that cannot tell its address yet
            return None
    return None


# The Faddeeva function w(z) = exp(-z**2) erfc(-iz), whose real part is scipy's voigt_profile
# (scaled) and whose imaginary part its derivatives need. cython_special's `wofz` takes and
# returns a C double complex, which ctypes cannot describe; generated code calls it by a symbol
# registered with LLVM (_WOFZ), an {double, double} in and out as the C ABI passes a
# double complex on x86-64 and aarch64.
_WOFZ = "adjit_scipy_special_wofz"
# where a {double, double} is passed and returned as a C double complex is (on Windows, a
# Cython complex is a struct returned through memory): elsewhere voigt_profile has no rule
HAS_WOFZ = sys.platform != "win32" and platform.machine().lower() in (
    "x86_64", "amd64", "aarch64", "arm64")


if HAS_WOFZ:     # at import, so that machine code numba loads from its cache finds it too
    import llvmlite.binding
    from numba.extending import get_cython_function_address
    llvmlite.binding.add_symbol(_WOFZ, get_cython_function_address(_MODULE, "wofz"))


@numba.extending.intrinsic
def _wofz(typingctx, x, y):
    """(Re w(x + iy), Im w(x + iy)) from scipy's wofz."""
    if not (HAS_WOFZ and isinstance(x, numba.types.Float) and
            isinstance(y, numba.types.Float)):
        return None
    pair = numba.types.UniTuple(numba.types.float64, 2)

    def codegen(context, builder, signature, args):
        import llvmlite.ir as ll
        from numba.core import cgutils
        double = ll.DoubleType()
        cplx = ll.LiteralStructType([double, double])
        fn = cgutils.get_or_insert_function(
            builder.module, ll.FunctionType(cplx, [cplx, ll.IntType(32)]), _WOFZ)
        xs = [context.cast(builder, a, t, numba.types.float64)
              for a, t in zip(args, signature.args)]
        z = builder.insert_value(builder.insert_value(ll.Constant(cplx, None), xs[0], 0),
                                 xs[1], 1)
        w = builder.call(fn, [z, ll.Constant(ll.IntType(32), 0)])
        return context.make_tuple(builder, pair, [builder.extract_value(w, 0),
                                                  builder.extract_value(w, 1)])
    return pair(x, y), codegen


@numba.njit
def wofz(x, y):
    """(Re w(z), Im w(z)) of the Faddeeva function at z = x + iy (scipy.special.wofz)."""
    return _wofz(x, y)


_SQRT_PI = 1.7724538509055160273
_SQRT_2 = 1.4142135623730950488


_ASYMPTOTIC = 30.0      # |z| from which w(z) is summed from its asymptotic series


@numba.njit(error_model="numpy")
def voigt_partials(x, sigma, gamma):
    """(dV/dx, dV/dsigma, dV/dgamma) of V = Re w(z) / (sigma sqrt(2 pi)),
    z = (x + i gamma) / (sigma sqrt 2), from w'(z) = -2 z w + 2i / sqrt(pi):
    dV/dx = -Re(z w) / (sigma**2 sqrt(pi)), dV/dgamma = (Im(z w) - 1/sqrt(pi)) /
    (sigma**2 sqrt(pi)), dV/dsigma = (2 Re(z**2 w) + 2 Im z / sqrt(pi) - Re w) /
    (sigma**2 sqrt(2 pi)). Those subtract w's leading behaviour i / (sqrt(pi) z), losing
    eps |z|**4 of the result for large |z| (a profile far from its centre, or nearly
    Lorentzian): from |z| = 30 on, the subtracted series are summed directly, z w - i/sqrt(pi)
    = (i/sqrt(pi)) sum_n (2n-1)!! u**n, u = 1 / (2 z**2) = sigma**2 / (x + i gamma)**2, with
    sigma**2 divided out (finite as sigma -> 0: the Lorentzian's derivatives). The three
    at once are the joint adjoint where all three arguments are active (one w(z))."""
    if sigma == 0.0:
        d = x * x + gamma * gamma
        return (-2.0 * gamma * x / (math.pi * d * d), 0.0,
                (x * x - gamma * gamma) / (math.pi * d * d))
    zr = x / (sigma * _SQRT_2)
    zi = gamma / (sigma * _SQRT_2)
    if math.hypot(zr, zi) < _ASYMPTOTIC:
        wr, wi = _wofz(zr, zi)
        zw_r, zw_i = zr * wr - zi * wi, zr * wi + zi * wr
        s2 = sigma * sigma
        dx = -zw_r / (s2 * _SQRT_PI)
        dg = (zw_i - 1.0 / _SQRT_PI) / (s2 * _SQRT_PI)
        z2w_r = zr * zw_r - zi * zw_i
        ds = (2.0 * z2w_r + 2.0 * zi / _SQRT_PI - wr) / (s2 * _SQRT_PI * _SQRT_2)
        return dx, ds, dg
    p = 1.0 / complex(x, gamma)
    q = p * p
    u = sigma * sigma * q
    a_sum = complex(0.0, 0.0)      # sum_n a_n u**(n - 1), a_n = (2n - 1)!!
    b_sum = complex(0.0, 0.0)      # sum_n n a_n u**(n - 1)
    a, un = 1.0, complex(1.0, 0.0)
    for n in range(1, 13):
        a_sum += a * un
        b_sum += n * a * un
        a *= 2 * n + 1
        un *= u
    qa = q * a_sum
    return -(qa * 1j).real / math.pi, -2.0 * sigma / math.pi * (p * q * b_sum).imag, \
        qa.real / math.pi


@numba.njit(error_model="numpy")
def voigt_d_x(x, sigma, gamma):
    """d voigt_profile(x, sigma, gamma) / dx (voigt_partials)."""
    return voigt_partials(x, sigma, gamma)[0]


@numba.njit(error_model="numpy")
def voigt_d_gamma(x, sigma, gamma):
    """d voigt_profile / d gamma (voigt_partials); at sigma = 0, the Lorentzian's."""
    return voigt_partials(x, sigma, gamma)[2]


@numba.njit(error_model="numpy")
def voigt_d_sigma(x, sigma, gamma):
    """d voigt_profile / d sigma (voigt_partials); at sigma = 0 (the Lorentzian, whose
    widening by a Gaussian is of second order in sigma) 0."""
    return voigt_partials(x, sigma, gamma)[1]


# The regularized lower incomplete gamma function P(a, x) (scipy's gammainc) in its shape a,
# which has no closed form: the series of P below x = a + 1, the continued fraction of
# Q = 1 - P above it (as Numerical Recipes' gser / gcf evaluate P and Q), each differentiated
# in a term by term.
_TINY = 1e-300


@numba.njit(error_model="numpy")
def _lentz_step(an, dan, b, db, c, dc, d, dd):
    """One step of the modified Lentz algorithm for a continued fraction with partial
    numerator `an` and denominator `b`, carried with derivatives along one direction (dual
    numbers `dan`, `db`, ...): the new (c, dc, d, dd), and the factor delta = c d (with its
    derivative) that multiplies the fraction's value."""
    u = an * d + b
    du = dan * d + an * dd + db
    if abs(u) < _TINY:
        u = _TINY
    d = 1.0 / u
    dd = -du * d * d
    v = b + an / c
    dv = db + (dan * c - an * dc) / (c * c)
    if abs(v) < _TINY:
        v = _TINY
    return v, dv, d, dd, d * v, dd * v + d * dv


@numba.njit(error_model="numpy")
def gammainc_d_a(a, x):
    """d gammainc(a, x) / d a (gammaincc's is its negative). Below x = a + 1 the series
    P = sum_n t_n, t_n = exp(-x) x**(a + n) / Gamma(a + n + 1), whose terms' derivatives are
    t_n (log x - psi(a + n + 1)); above it, the derivative of Q = exp(-x) x**a / Gamma(a) h,
    h the continued fraction of Q (modified Lentz), carried through its recurrence with
    dual numbers. 0 at x = 0 and x = inf, where P is 0 or 1 for every a; NaN outside
    scipy's domain (a > 0, x >= 0)."""
    if not (a > 0.0) or not (x >= 0.0):
        return math.nan
    if x == 0.0 or math.isinf(x) or math.isinf(a):
        return 0.0
    lx = math.log(x)
    if x < a + 1.0:
        t = math.exp(a * lx - x - math.lgamma(a + 1.0))
        psi = digamma(a + 1.0)
        s = t * (lx - psi)
        for n in range(1, 200000):
            t *= x / (a + n)
            psi += 1.0 / (a + n)
            term = t * (lx - psi)
            s += term
            if abs(term) <= 1e-17 * abs(s) or t == 0.0:
                return s
        return math.nan     # not converged (a shape beyond about 1e9)
    b, db = x + 1.0 - a, -1.0
    c, dc = 1.0 / _TINY, 0.0
    d = 1.0 / b
    dd = -db * d * d
    h, dh = d, dd
    for i in range(1, 100000):
        b += 2.0
        c, dc, d, dd, delta, ddelta = _lentz_step(-i * (i - a), float(i), b, db, c, dc, d, dd)
        h, dh = h * delta, dh * delta + h * ddelta
        if abs(delta - 1.0) <= 1e-16 and abs(ddelta) <= 1e-16 * abs(dh / h):
            e = math.exp(a * lx - x - math.lgamma(a))
            return -(e * (lx - digamma(a)) * h + e * dh)
    return math.nan     # not converged


# Student's t distribution function stdtr(df, t) in its degrees of freedom, through the
# regularized incomplete beta function: stdtr = 1 - I_x(df / 2, 1 / 2) / 2 for t > 0 (and
# I_x(df / 2, 1 / 2) / 2 below 0), x = df / (df + t**2). Its derivative in a has no closed
# form: Numerical Recipes' betai (the continued fraction betacf at x or, by symmetry, at 1 - x)
# differentiated in a term by term.
@numba.njit(error_model="numpy")
def _betacf_d(a, da, b, db, x):
    """betacf(a, b, x) (modified Lentz) and its derivative along (da, db)."""
    qab, dqab = a + b, da + db
    qap, dqap = a + 1.0, da
    qam, dqam = a - 1.0, da
    c, dc = 1.0, 0.0
    u = 1.0 - qab * x / qap
    du = -x * (dqab * qap - qab * dqap) / (qap * qap)
    if abs(u) < _TINY:
        u = _TINY
    d = 1.0 / u
    dd = -du * d * d
    h, dh = d, dd
    for m in range(1, 20000):
        m2 = 2.0 * m
        for step in range(2):
            if step == 0:
                num = m * (b - m) * x
                dnum = m * db * x
                den = (qam + m2) * (a + m2)
                dden = dqam * (a + m2) + (qam + m2) * da
            else:
                num = -(a + m) * (qab + m) * x
                dnum = -(da * (qab + m) + (a + m) * dqab) * x
                den = (a + m2) * (qap + m2)
                dden = da * (qap + m2) + (a + m2) * dqap
            c, dc, d, dd, delta, ddelta = _lentz_step(
                num / den, (dnum * den - num * dden) / (den * den), 1.0, 0.0, c, dc, d, dd)
            h, dh = h * delta, dh * delta + h * ddelta
        if abs(delta - 1.0) <= 1e-16 and abs(ddelta) <= 1e-16 * abs(dh / h):
            return h, dh
    return math.nan, math.nan       # not converged (parameters beyond about 1e9)


@numba.njit(error_model="numpy")
def _betainc_d_a(a, b, x, y):
    """d I_x(a, b) / d a with y = 1 - x given exactly (a t distribution's x = df / (df + t**2)
    near 1 keeps its digits in y); NaN where the continued fraction did not converge."""
    if not (a > 0.0 and b > 0.0) or not (x >= 0.0 and y >= 0.0):
        return math.nan
    if x == 0.0 or y == 0.0:
        return 0.0
    lx = math.log1p(-y) if y < 0.5 else math.log(x)
    ly = math.log1p(-x) if x < 0.5 else math.log(y)
    bt = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * lx + b * ly)
    if x < (a + 1.0) / (a + b + 2.0):
        h, dh = _betacf_d(a, 1.0, b, 0.0, x)
        # d log(bt / a) / da, with psi(a) + 1/a written psi(a + 1) (no cancellation at small a)
        return bt * (h * (digamma(a + b) - digamma(a + 1.0) + lx) + dh) / a
    h, dh = _betacf_d(b, 0.0, a, 1.0, y)
    return -bt * (h * (digamma(a + b) - digamma(a) + lx) + dh) / b


@numba.njit(error_model="numpy")
def betainc_d_a(a, b, x):
    """d I_x(a, b) / d a, the regularized incomplete beta function in its first parameter."""
    if not (x <= 1.0):
        return math.nan
    return _betainc_d_a(a, b, x, 1.0 - x)


@numba.njit(error_model="numpy")
def betainc_d_b(a, b, x):
    """d I_x(a, b) / d b = -d I_(1-x)(b, a) / d b, with x kept exact as the complement."""
    if not (x <= 1.0):
        return math.nan
    return -_betainc_d_a(b, a, 1.0 - x, x)


_DF_MOST = 1e4      # beyond it the two terms of d stdtr / d df cancel to more than 1e-8


@numba.njit(error_model="numpy")
def stdtr_d_df(df, t):
    """d stdtr(df, t) / d df, through I_x(df / 2, 1 / 2), x = df / (df + t**2) and
    1 - x = t**2 / (df + t**2) computed apart; 0 at t = 0 (stdtr is 1/2 for every df there)
    and at infinite t. NaN above df = 1e4, where its two terms cancel to more than 1e-8 of
    the result (the distribution is all but normal there)."""
    if not (df > 0.0) or math.isnan(t) or df > _DF_MOST:
        return math.nan
    if t == 0.0 or math.isinf(t):
        return 0.0
    t2 = t * t
    x = df / (df + t2)
    y = t2 / (df + t2)
    a = 0.5 * df
    # dI/dx, the density of the beta distribution (a, 1/2), times dx/ddf
    dens = math.exp((a - 1.0) * math.log1p(-y) - 0.5 * math.log(y) + math.lgamma(a + 0.5) -
                    math.lgamma(a) - math.lgamma(0.5))
    d = 0.5 * _betainc_d_a(a, 0.5, x, y) + dens * t2 / ((df + t2) * (df + t2))
    return -0.5 * d if t > 0.0 else 0.5 * d


@numba.njit(error_model="numpy")
def kv_d_v(v, x):
    """d K_v(x) / d v, the modified Bessel function of the second kind in its order, from
    K_v(x) = int_0^inf exp(-x cosh t) cosh(v t) dt: the integral of t sinh(v t)
    exp(-x cosh t), an even function of t analytic everywhere, by the trapezoidal rule (whose
    error falls exponentially with 1 / step) with a step a quarter of the integrand's width
    at its peak (t = asinh(|v| / x)), summed until the terms fall below e**-60 of the peak.
    0 at v = 0 (K_v is even in v)."""
    if not (x > 0.0) or math.isnan(v):
        return math.nan
    if math.isinf(x):
        return 0.0
    av = abs(v)
    if av == 0.0:
        return 0.0
    if math.isinf(av):
        return math.nan         # K_v is infinite
    ts = math.asinh(av / x)
    top = av * ts - x * (math.cosh(ts) - 1.0)      # the largest exponent, exp(x) taken out
    if top - x > 720.0:
        return math.copysign(math.inf, v)          # beyond double range, as K_v is
    if top - x < -760.0:
        return 0.0                                 # below it, as K_v is
    h = min(0.1, 0.25 / math.sqrt(x * math.cosh(ts)))
    s = 0.0
    for k in range(1, 10000000):
        t = k * h
        damp = x * (math.cosh(t) - 1.0)
        e = av * t - damp - top
        # t sinh(v t) exp(-x cosh t), without cancelling at small v
        s += t * math.exp(e) * -0.5 * math.expm1(-2.0 * av * t)
        if t > ts and e < -60.0:
            break
    return math.copysign(h * s * math.exp(top - x), v)
