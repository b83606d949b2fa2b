"""The primitives adjit knows, as data: one entry per function (see registry.py).

A rule lists, for each operand of a primitive, the partial derivative of the result with
respect to that operand, written as a Python expression over the operand names and `out`
(the result). The reverse pass turns a rule into `a_bar += out_bar * <partial>`; forward
mode into `out_dot = <partial> * a_dot + ...`. `None` marks an operand the result does not
depend on differentiably (a floor, a comparison, an integer conversion). `result` is the
result's kind for type inference: "float", "int", "bool", "join" (the common kind of the
operands, as `abs`, `min` and `max` keep integers integers), or "first" (the first operand's
kind: a conversion to its type).

Adding a function is one entry here: its rule, its domain (where tests/test_registry.py
draws arguments to check it against finite differences in both modes), and for a numpy
function applied elementwise, the scalar primitive its elements get (`numpy=` on a math
entry, or the entry itself).
"""
import ast
import math
import operator

import numpy as np

from ..api_stop import stop_gradient
from ..runtime import special as _special_runtime, vec, vmath
from .effects import DRAW
from .registry import REGISTRY, ArrayRule, Refused, Rule

_R = REGISTRY


def _unary(partial, result="float", usual=False):
    return Rule(("x",), (partial,), result, usual=usual)


def _binary(pa, pb, result="float"):
    return Rule(("a", "b"), (pa, pb), result)


def scalar(obj, name, rule, numpy=(), cost="cheap", domain=((-2.0, 2.0),), notes="",
           cuda=True, paired=None, over_array=None, vector=None):
    """A function of numbers (math.sin): called as it is on scalars; `numpy` lists numpy
    functions that apply it to every element of arrays (np.sin). `over_array`: the builtin
    given one array is that reduction of its elements (numba iterates the array). `vector`:
    how a loop calling it vectorizes ("inline", or its runtime/vmath.py version)."""
    _R.define(obj, name, "scalar", rule=rule, cost=cost, domain=domain, notes=notes,
              cuda=cuda, paired=paired, over_array=over_array, vector=vector)
    for np_obj in numpy:
        _R.define(np_obj, f"np.{np_obj.__name__}", "elementwise", scalar=obj,
                  arity=len(rule.params), domain=domain, cuda=cuda)


def ufunc(obj, rule, cost="cheap", domain=((-2.0, 2.0),), notes="", handler=None):
    """A numpy function with no math counterpart (np.cbrt): the scalar primitive on numbers
    and, applied elementwise, on arrays. `handler` names the lowering of its forms with more
    arguments than the rule's (normalize/lowering.py)."""
    _R.define(obj, f"np.{obj.__name__}", "elementwise", rule=rule, scalar=obj,
              arity=len(rule.params), cost=cost, domain=domain, notes=notes, handler=handler)


def lowered(obj, keyword, arity, domain=((-2.0, 2.0),), notes=""):
    """A numpy elementwise function the vectorizer writes with operators or branches:
    `keyword` is an operator class (np.add is `+`) or one the vectorizer knows ("pow")."""
    _R.define(obj, f"np.{obj.__name__}", "elementwise", scalar=keyword, arity=arity,
              domain=domain, notes=notes)


_EXP = "expensive"
# sign(x) spelled with branches: numba.cuda compiles no np.sign on numbers; 0.0 * x keeps
# a NaN argument NaN as np.sign does
_SIGN = "1.0 if x > 0.0 else -1.0 if x < 0.0 else 0.0 * x"
# 1 - tanh(x)**2 cancels where |tanh(x)| is near 1: the relative error grows as
# eps / (1 - |out|), and all digits are gone past |x| = 19. (1 - out)(1 + out) keeps it under
# 3e-12 up to |out| = 0.9999 (|x| < 4.95) at the cost of a multiply; beyond, sech(x)**2 =
# 4 e / (1 + e)**2 with e = exp(-2|x|) is exact to rounding, where the derivative is below
# 2e-4 anyway, and goes to 0 without overflow (1 / cosh(x)**2 overflows cosh(x)**2 past
# |x| = 355: inf in numba, an OverflowError in the interpreter)
_TANH = ("(1.0 - out) * (1.0 + out) if abs(out) < 0.9999 else "
         "4.0 * math.exp(-2.0 * abs(x)) / (1.0 + math.exp(-2.0 * abs(x))) ** 2")
# d(a ** b)/da is b * a ** (b - 1) except at b == 0, where a ** 0 == 1 is constant: the
# formula would give 0 * inf = nan at a == 0 (JAX gives 0 there too). d/db is
# a ** b * log(a): 0 at a == 0 (the limit for b > 0), nan for a < 0 (no real derivative)
_POW = ("b * a ** (b - 1) if b != 0 else 0.0", "out * math.log(a) if a != 0.0 else 0.0")

# operators: keyed by the ast class of the operator --------------------------------------------
def operator_entry(cls, symbol, rule):
    _R.define(cls, symbol, "operator", rule=rule, arity=len(rule.params))


operator_entry(ast.Add, "+", _binary("1.0", "1.0", "join"))
operator_entry(ast.Sub, "-", _binary("1.0", "-1.0", "join"))
operator_entry(ast.Mult, "*", _binary("b", "a", "join"))
# d(1 / b)/db = -1 / b**2 = -out * out: a multiply where -out / b divides a second time
operator_entry(ast.Div, "/", Rule(("a", "b"), ("1.0 / b",
                                                "-out * out if literal(a, 1.0) else -out / b"),
                                   "float", joint=("bar / b", ("shared", "-(shared * out)"))))
operator_entry(ast.Pow, "**", Rule(("a", "b"), _POW, "join"))
operator_entry(ast.Mod, "%", _binary("1.0", "-math.floor(a / b)", "join"))
operator_entry(ast.FloorDiv, "//", _binary(None, None, "join"))
operator_entry(ast.USub, "unary -", _unary("-1.0", "join"))
operator_entry(ast.UAdd, "unary +", _unary("1.0", "join"))
operator_entry(ast.Not, "not", _unary(None, "bool"))

# math and builtins, and the numpy functions that apply them elementwise ---------------------
_POS = ((0.1, 4.0),)
_UNIT = ((-0.9, 0.9),)
scalar(math.sin, "math.sin", _unary("math.cos(x)"), (np.sin,), _EXP, paired=math.cos,
       vector=vmath.sin)
scalar(math.cos, "math.cos", _unary("-math.sin(x)"), (np.cos,), _EXP, paired=math.sin,
       vector=vmath.cos)
scalar(math.tan, "math.tan", _unary("1.0 + out * out"), (np.tan,), _EXP, ((-1.3, 1.3),))
scalar(math.asin, "math.asin", _unary("1.0 / math.sqrt((1.0 - x) * (1.0 + x))"),
       (np.arcsin,), _EXP, _UNIT)
scalar(math.acos, "math.acos", _unary("-1.0 / math.sqrt((1.0 - x) * (1.0 + x))"),
       (np.arccos,), _EXP, _UNIT)
scalar(math.atan, "math.atan", _unary("1.0 / (1.0 + x * x)"), (np.arctan,), _EXP)
scalar(math.sinh, "math.sinh", _unary("math.cosh(x)"), (np.sinh,), _EXP)
scalar(math.cosh, "math.cosh", _unary("math.sinh(x)"), (np.cosh,), _EXP)
scalar(math.tanh, "math.tanh", _unary(_TANH, usual=True), (np.tanh,), _EXP, vector=vmath.tanh)
scalar(math.exp, "math.exp", _unary("out"), (np.exp,), _EXP, vector=vmath.exp)
scalar(math.expm1, "math.expm1", _unary("out + 1.0 if out > -0.5 else math.exp(x)"),
       (np.expm1,), _EXP, vector=vmath.expm1)
scalar(math.log, "math.log", _unary("1.0 / x"), (np.log,), _EXP, _POS, vector=vmath.log)
scalar(math.log1p, "math.log1p", _unary("1.0 / (1.0 + x)"), (np.log1p,), _EXP,
       ((-0.5, 4.0),), vector=vmath.log1p)
scalar(math.log10, "math.log10", _unary("1.0 / (x * 2.302585092994046)"), (np.log10,), _EXP,
       _POS)
scalar(math.sqrt, "math.sqrt", _unary("0.5 / out"), (np.sqrt,), domain=_POS,
       vector="inline")
scalar(math.erf, "math.erf", _unary("1.1283791670955126 * math.exp(-x * x)"), cost=_EXP)
scalar(math.erfc, "math.erfc", _unary("-1.1283791670955126 * math.exp(-x * x)"), cost=_EXP)
scalar(math.fabs, "math.fabs", _unary(_SIGN), notes="sign(x): 0 at x == 0",
       vector="inline")
scalar(math.floor, "math.floor", _unary(None, "int"), vector="inline")
scalar(math.ceil, "math.ceil", _unary(None, "int"), vector="inline")
scalar(math.trunc, "math.trunc", _unary(None, "int"), vector="inline")
scalar(math.pow, "math.pow", Rule(("a", "b"), _POW), cost=_EXP, domain=(_POS[0], (-2.0, 2.0)))
scalar(math.hypot, "math.hypot", _binary("a / out", "b / out"), (np.hypot,), _EXP,
       ((0.2, 2.0), (0.2, 2.0)))
scalar(math.atan2, "math.atan2", _binary("b / (a * a + b * b)", "-a / (a * a + b * b)"),
       (np.arctan2,), _EXP, ((-2.0, 2.0), (0.2, 2.0)))
scalar(abs, "abs", _unary(_SIGN, "join"), (np.abs, np.fabs),
       notes="sign(x): 0 at x == 0", vector="inline")
# min(a, b) is b only when b < a (ties and a NaN b give a, a NaN a gives a): the adjoint
# follows the value
scalar(min, "min", _binary("0.0 if b < a else 1.0", "1.0 if b < a else 0.0", "join"),
       (np.minimum,), domain=((-2.0, 2.0), (-2.0, 2.0)),
       notes="ties to the first argument; min(a) of a 1-D array is np.min(a)",
       over_array="min", vector="inline")
scalar(max, "max", _binary("0.0 if b > a else 1.0", "1.0 if b > a else 0.0", "join"),
       (np.maximum,), domain=((-2.0, 2.0), (-2.0, 2.0)),
       notes="ties to the first argument; max(a) of a 1-D array is np.max(a)",
       over_array="max", vector="inline")
scalar(float, "float", _unary("1.0"), vector="inline")
scalar(np.float64, "np.float64", _unary("1.0"), notes="a number converted to float64",
       cuda=False)
scalar(np.float32, "np.float32", _unary("1.0"), notes="a number rounded to float32 (the "
       "derivative of the rounding taken as 1, as for type(x)(v))", cuda=False)
scalar(int, "int", _unary(None, "int"), vector="inline")
scalar(np.int64, "np.int64", _unary(None, "int"), notes="a number truncated to int64",
       cuda=False)
scalar(vec.convert_like, "type(x)(v)", Rule(("like", "v"), (None, "1.0"), "first"),
       domain=((-2.0, 2.0), (-2.0, 2.0)), cuda=False,
       notes="`T = type(x); T(v)`: v in x's type (float64, float32: rounded; an integer "
       "type: no derivative)")
scalar(vec.norm_root, "vec.norm_root", _unary("0.5 / out if out > 0.0 else 0.0"),
       domain=_POS, cuda=False,
       notes="the root of np.linalg.norm's sum of squares: the zero subgradient at a zero "
       "vector (where sqrt's derivative is infinite and the chain through the squares 0)")
scalar(bool, "bool", _unary(None, "bool"))
scalar(round, "round", _unary(None, "int"))
scalar(stop_gradient, "stop_gradient", _unary(None, "join"),
       notes="the value, as a constant: no derivative flows through it")
scalar(math.asinh, "math.asinh", _unary("1.0 / math.sqrt(x * x + 1.0)"), (np.arcsinh,), _EXP)
scalar(math.acosh, "math.acosh", _unary("1.0 / math.sqrt((x - 1.0) * (x + 1.0))"),
       (np.arccosh,), _EXP, ((1.1, 4.0),))
scalar(math.atanh, "math.atanh", _unary("1.0 / ((1.0 - x) * (1.0 + x))"), (np.arctanh,), _EXP,
       _UNIT)
scalar(math.log2, "math.log2", _unary("1.0 / (x * 0.6931471805599453)"), (np.log2,), _EXP, _POS)
ufunc(np.cbrt, _unary("1.0 / (3.0 * out * out)"), _EXP, ((0.2, 3.0),))
ufunc(np.exp2, _unary("out * 0.6931471805599453"), _EXP)
scalar(math.exp2, "math.exp2", _unary("out * 0.6931471805599453"), cost=_EXP)
ufunc(np.logaddexp, _binary("math.exp(a - out)", "math.exp(b - out)"), _EXP,
      ((-2.0, 2.0), (-2.0, 2.0)))
ufunc(np.logaddexp2, _binary("2.0 ** (a - out)", "2.0 ** (b - out)"), _EXP,
      ((-2.0, 2.0), (-2.0, 2.0)))
ufunc(np.deg2rad, _unary("0.017453292519943295"))
ufunc(np.rad2deg, _unary("57.29577951308232"))
# d sinc(x)/dx = (cos(pi x) - sinc(x)) / x, 0 at x == 0 (sinc is even)
ufunc(np.sinc, _unary("(math.cos(3.141592653589793 * x) - out) / x if x != 0.0 else 0.0"), _EXP)
ufunc(np.sign, _unary(None), notes="piecewise constant")
ufunc(np.spacing, _unary(None), notes="piecewise constant")
ufunc(np.angle, _unary(None), notes="of real numbers: 0 or pi, piecewise constant")
# nextafter(a, b) is a moved by one unit in the last place: a step of rounding
scalar(math.nextafter, "math.nextafter", _binary("1.0", None), (np.nextafter,),
       domain=((-2.0, 2.0), (-2.0, 2.0)), notes="the next float after a: none through b",
       cuda=False)
# ldexp(x, i) = x * 2 ** i for an integer i
scalar(math.ldexp, "math.ldexp", _binary("math.ldexp(1.0, b)", None),
       domain=((-2.0, 2.0), (-3, 4)), notes="x * 2 ** i: none through the integer i")
ufunc(np.ldexp, _binary("np.ldexp(1.0, b)", None), domain=((-2.0, 2.0), (-3, 4)),
      notes="x * 2 ** i: none through the integer i")
ufunc(np.reciprocal, _unary("-out * out"), domain=((0.3, 3.0),))
ufunc(np.conjugate, _unary("1.0"), notes="of real numbers: the number")
# fmax/fmin ignore a NaN argument (the other is the result); otherwise as max/min, ties to
# the first argument: the derivative follows the value
ufunc(np.fmax, _binary("0.0 if b > a or a != a else 1.0", "1.0 if b > a or a != a else 0.0"),
      domain=((-2.0, 2.0), (-2.0, 2.0)), notes="a NaN argument is ignored; ties to the first")
ufunc(np.fmin, _binary("0.0 if b < a or a != a else 1.0", "1.0 if b < a or a != a else 0.0"),
      domain=((-2.0, 2.0), (-2.0, 2.0)), notes="a NaN argument is ignored; ties to the first")
# fmod(a, b) = a - b * trunc(a / b), with the sign of a (C's fmod; % takes b's sign)
ufunc(np.fmod, _binary("1.0", "-math.trunc(a / b)"), domain=((-2.0, 2.0), (0.3, 2.0)))
ufunc(np.nan_to_num, _unary("1.0 if math.isfinite(x) else 0.0"), handler="nan_to_num",
      notes="NaN and infinities (replaced by constants) get no derivative through x; "
      "`nan=`, `posinf=`, `neginf=` carry theirs where they are chosen")
ufunc(np.floor, _unary(None), notes="piecewise constant")

scalar(math.copysign, "math.copysign",
       _binary("math.copysign(1.0, a) * math.copysign(1.0, b)", None), (np.copysign,),
       domain=((0.2, 2.0), (-2.0, 2.0)), notes="abs(a) with the sign of b: none through b",
       vector="inline")
scalar(math.lgamma, "math.lgamma", _unary("vec.digamma(x)"), cost=_EXP, domain=((0.3, 4.0),),
       cuda=False)
scalar(math.gamma, "math.gamma", _unary("out * vec.digamma(x)"), cost=_EXP,
       domain=((0.3, 4.0),), cuda=False)
scalar(math.degrees, "math.degrees", _unary("57.29577951308232"), (np.degrees,))
scalar(math.radians, "math.radians", _unary("0.017453292519943295"), (np.radians,))
for _obj in (math.isnan, math.isinf, math.isfinite):
    scalar(_obj, f"math.{_obj.__name__}", _unary(None, "bool"))
for _obj in (np.rint, np.round, np.around, np.ceil, np.trunc):
    ufunc(_obj, _unary(None), notes="piecewise constant")

# scipy.special: the C functions numba users reach through their addresses (runtime/special.py
# wraps them; a user's own address wrapper of one is recognized by its address), and the
# scipy.special ufuncs themselves on numbers and arrays (which numba does not compile) ------
_SQRT_PI = "1.7724538509055159"
_SQRT_2PI = "2.5066282746310002"


def special(name, params, partials, domain, notes="", joint=None):
    """scipy.special.<name> on doubles: one entry for adjit's wrapper of its C function, and
    one for the ufunc applying it to every element of arrays (skipped where this scipy has
    no such function)."""
    import scipy.special
    from ..runtime import special as sp
    obj = sp.function(name, len(params))
    if obj is None:
        return
    spelled = f"scipy.special.{name}"
    rule = Rule(params, partials, joint=joint)
    _R.define(obj, spelled, "scalar", rule=rule, cost=_EXP, domain=domain, notes=notes,
              cuda=False)
    _R.define(getattr(scipy.special, name), spelled, "elementwise", scalar=obj,
              arity=len(params), domain=domain, cuda=False, notes=notes)


special("erf", ("x",), (f"2.0 / {_SQRT_PI} * math.exp(-x * x)",), ((-2.0, 2.0),))
special("erfc", ("x",), (f"-2.0 / {_SQRT_PI} * math.exp(-x * x)",), ((-2.0, 2.0),))
special("erfcx", ("x",), (f"2.0 * x * out - 2.0 / {_SQRT_PI}",), ((-2.0, 3.0),))
special("erfinv", ("x",), (f"0.5 * {_SQRT_PI} * math.exp(out * out)",), ((-0.9, 0.9),))
special("erfcinv", ("x",), (f"-0.5 * {_SQRT_PI} * math.exp(out * out)",), ((0.1, 1.9),))
special("ndtr", ("x",), (f"math.exp(-0.5 * x * x) / {_SQRT_2PI}",), ((-3.0, 3.0),))
special("log_ndtr", ("x",), (f"math.exp(-0.5 * x * x - out) / {_SQRT_2PI}",), ((-6.0, 3.0),))
special("ndtri", ("x",), (f"{_SQRT_2PI} * math.exp(0.5 * out * out)",), ((0.05, 0.95),))
special("gammaln", ("x",), ("vec.digamma(x)",), ((0.3, 6.0),))
special("gamma", ("x",), ("out * vec.digamma(x)",), ((0.3, 4.0),))
special("psi", ("x",), ("vec.trigamma(x)",), ((0.3, 6.0),),
        notes="scipy.special.digamma is the same function")
special("expit", ("x",), ("out * (1.0 - out)",), ((-4.0, 4.0),))
special("log_expit", ("x",), ("-math.expm1(out)",), ((-4.0, 4.0),))
special("logit", ("x",), ("1.0 / (x * (1.0 - x))",), ((0.05, 0.95),))
special("i0", ("x",), ("vec.special.i1(x)",), ((-3.0, 3.0),))
special("i1", ("x",), ("0.5 if x == 0.0 else vec.special.i0(x) - out / x",), ((-3.0, 3.0),))
# e**-|x| I0(x) and e**-|x| I1(x) are not differentiable at 0: there, as |x|, the mean of the
# one-sided derivatives (sign(0) = 0, as JAX)
special("i0e", ("x",), ("vec.special.i1e(x) - (0.0 if x == 0.0 else math.copysign(1.0, x)) "
                        "* out",), ((-3.0, 3.0),), notes="at 0 the mean of the one-sided "
                                                          "derivatives, 0")
special("i1e", ("x",), ("0.5 if x == 0.0 else vec.special.i0e(x) - out / x - "
                        "math.copysign(1.0, x) * out",), ((-3.0, 3.0),))
special("xlogy", ("x", "y"), ("math.log(y)", "x / y"), ((-2.0, 2.0), (0.2, 3.0)))
special("xlog1py", ("x", "y"), ("math.log1p(y)", "x / (1.0 + y)"), ((-2.0, 2.0), (-0.5, 2.0)))
special("betaln", ("a", "b"), ("vec.digamma(a) - vec.digamma(a + b)",
                               "vec.digamma(b) - vec.digamma(a + b)"), ((0.3, 4.0), (0.3, 4.0)))
special("beta", ("a", "b"), ("out * (vec.digamma(a) - vec.digamma(a + b))",
                             "out * (vec.digamma(b) - vec.digamma(a + b))"),
        ((0.3, 4.0), (0.3, 4.0)))
special("gammainc", ("a", "x"), ("vec.special.gammainc_d_a(a, x)",
                                 "math.exp((a - 1.0) * math.log(x) - x - math.lgamma(a))"),
        ((0.5, 5.0), (0.2, 4.0)))
special("gammaincc", ("a", "x"), ("-vec.special.gammainc_d_a(a, x)",
                                  "-math.exp((a - 1.0) * math.log(x) - x - math.lgamma(a))"),
        ((0.5, 5.0), (0.2, 4.0)))
special("kv", ("v", "x"), ("vec.special.kv_d_v(v, x)", "-0.5 * (vec.special.kv(v - 1.0, x) + "
                                                      "vec.special.kv(v + 1.0, x))"),
        ((0.2, 3.0), (0.3, 3.0)))
special("stdtr", ("df", "t"), ("vec.special.stdtr_d_df(df, t)",
                               "math.exp(math.lgamma(0.5 * (df + 1.0)) - "
                               "math.lgamma(0.5 * df) - 0.5 * math.log(df * math.pi) - "
                               "0.5 * (df + 1.0) * math.log1p(t * t / df))"),
        ((1.0, 9.0), (-3.0, 3.0)))
# stdtrit(df, p) is the t that stdtr(df, t) maps to p: its derivative in p is 1 / the density
# at t, and in df (stdtr(df, t(df)) = p) -(d stdtr / d df) / the density
_STDTRIT_DP = ("math.exp(math.lgamma(0.5 * df) - math.lgamma(0.5 * (df + 1.0)) + "
               "0.5 * math.log(df * math.pi) + 0.5 * (df + 1.0) * math.log1p(out * out / df))")
special("stdtrit", ("df", "p"), (f"-vec.special.stdtr_d_df(df, out) * {_STDTRIT_DP}",
                                _STDTRIT_DP),
        ((1.0, 9.0), (0.55, 0.95)))
# (its domain, where the registry harness draws p, leaves out 0.5: scipy's stdtrit is accurate
# to about 1e-11 near t = 0, too little for central differences there)
# the regularized incomplete beta function I_x(a, b) (the beta distribution's cdf) and its
# complement: in a and b through vec.special.betainc_d_a and _d_b, in x
# the beta density
_BETA_DENSITY = ("math.exp((a - 1.0) * math.log(x) + (b - 1.0) * math.log1p(-x) + "
                 "math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b))")
special("betainc", ("a", "b", "x"), ("vec.special.betainc_d_a(a, b, x)",
                                     "vec.special.betainc_d_b(a, b, x)", _BETA_DENSITY),
        ((0.5, 4.0), (0.5, 4.0), (0.1, 0.9)))
special("betaincc", ("a", "b", "x"), ("-vec.special.betainc_d_a(a, b, x)",
                                      "-vec.special.betainc_d_b(a, b, x)",
                                      "-" + _BETA_DENSITY),
        ((0.5, 4.0), (0.5, 4.0), (0.1, 0.9)))
# the Voigt profile Re w(z) / (sigma sqrt(2 pi)), z = (x + i gamma) / (sigma sqrt 2): its
# partials need w(z) itself, complex (scipy's wofz, vec.special.voigt_d_*)
if _special_runtime.HAS_WOFZ:
    special("voigt_profile", ("x", "sigma", "gamma"),
            ("vec.special.voigt_d_x(x, sigma, gamma)",
             "vec.special.voigt_d_sigma(x, sigma, gamma)",
             "vec.special.voigt_d_gamma(x, sigma, gamma)"),
            ((-3.0, 3.0), (0.3, 2.0), (0.05, 2.0)),
            # all three active (a fit's x - loc, scale, gamma): w(z) once, not three times
            joint=("vec.special.voigt_partials(x, sigma, gamma)",
                   ("bar * shared[0]", "bar * shared[1]", "bar * shared[2]")))

# numpy elementwise functions the vectorizer writes out -----------------------------------------
lowered(np.add, ast.Add, 2)
lowered(np.subtract, ast.Sub, 2)
lowered(np.multiply, ast.Mult, 2)
lowered(np.divide, ast.Div, 2, ((-2.0, 2.0), (0.2, 2.0)))
lowered(np.floor_divide, ast.FloorDiv, 2, ((0.1, 0.9), (1.0, 2.0)), "piecewise constant")
lowered(np.remainder, ast.Mod, 2, ((0.1, 0.9), (1.0, 2.0)))
lowered(np.positive, ast.UAdd, 1)
# the operator module's functions are their operators, on numbers and on arrays
for _obj, _op, _n in ((operator.add, ast.Add, 2), (operator.sub, ast.Sub, 2),
                      (operator.mul, ast.Mult, 2), (operator.truediv, ast.Div, 2),
                      (operator.mod, ast.Mod, 2), (operator.floordiv, ast.FloorDiv, 2),
                      (operator.neg, ast.USub, 1), (operator.pos, ast.UAdd, 1)):
    _R.define(_obj, f"operator.{_obj.__name__}", "elementwise", scalar=_op, arity=_n,
              domain=((-2.0, 2.0), (0.2, 2.0)) if _op in (ast.Div, ast.Mod, ast.FloorDiv)
              else ((-2.0, 2.0),))
_R.define(operator.pow, "operator.pow", "elementwise", scalar="pow", arity=2,
          domain=((0.2, 2.0), (-2.0, 2.0)))
lowered(np.power, "pow", 2, ((0.2, 2.0), (-2.0, 2.0)))
# the builtin pow(a, b) is a ** b (numba's operator.pow); pow(a, b, mod) of integers has no
# derivative and is called as it is
_R.define(pow, "pow", "elementwise", scalar="pow", arity=2, domain=((0.2, 2.0), (-2.0, 2.0)),
          notes="a ** b")
lowered(np.float_power, "pow", 2, ((0.2, 2.0), (-2.0, 2.0)))
lowered(np.square, "square", 1)
lowered(np.negative, "neg", 1)
lowered(np.where, "where", 3, notes="no derivative through the condition")
lowered(np.clip, "clip", 3, notes="max then min: ties to the value")

def _np_name(obj):
    """How code names a numpy or math function: np.linalg.norm, np.sum, math.frexp."""
    for prefix, module in (("np.linalg", np.linalg), ("math", math)):
        if getattr(module, obj.__name__, None) is obj:
            return f"{prefix}.{obj.__name__}"
    return f"np.{obj.__name__}"


# reductions -------------------------------------------------------------------------------------
for _obj, _how, _methods in ((np.sum, "sum", ("sum",)), (np.mean, "mean", ("mean",)),
                             (np.prod, "prod", ("prod",)), (np.max, "max", ("max",)),
                             (np.min, "min", ("min",)), (np.amax, "max", ()),
                             (np.amin, "min", ())):
    _R.define(_obj, f"np.{_obj.__name__}", "reduction", reduction=_how, methods=_methods,
              notes="ties split equally" if _how in ("max", "min") else "")

# the builtin sum iterates what it is given (numba: a 1-D array's elements, a 2-D array's
# rows); max and min given one array are the scalar entries' over_array
_R.define(sum, "sum", "iterated", over_array="sum",
          notes="of an array: np.sum(a, axis=0); sum(a, start) adds start")

# whole-array operations, lowered by the normalizer's lowering of that handler name
# (normalize/lowering.py); the note and, where the handler does not tell, the arguments a
# derivative flows through are what docs/coverage.md says of them
_ATLEAST = "a view of one array (axes of length 1 added as numpy adds them)"
for _obj, _handler, _notes, *_through in (
        (np.dot, "dot", "matrix-matrix and matrix-vector products in BLAS (a row or slice "
                        "in a loop fused), vector dot products fused"),
        (np.matmul, "matmul", "as `@`"),
        (np.outer, "outer", ""),
        (np.transpose, "transpose", "a view, any axes"),
        (np.swapaxes, "swapaxes", "a view"),
        (np.moveaxis, "moveaxis", "a view"),
        (np.reshape, "reshape", "a view of C-contiguous arrays (else a copy, as numpy)"),
        (np.ravel, "ravel", "a view of C-contiguous arrays"),
        (np.take, "take", "gather, `axis=`", "a (not the indices)"),
        (np.linalg.norm, "norm", "`ord` as numba takes it: vectors 1, 2, inf, -inf, 0, p; "
                                 "matrices Frobenius, 1, -1, 2, -2 (singular values), inf, "
                                 "-inf", "x"),
        (np.array, "array", "of scalars (int lists: index arrays)"),
        (np.asarray, "array", "of scalars (int lists: index arrays)"),
        (np.ascontiguousarray, "contiguous", "the array itself where numba knows it is "
                                             "C-contiguous (as numba returns it); of "
                                             "arithmetic, a new array"),
        (np.concatenate, "concatenate", ""),
        (np.stack, "stack", ""),
        (np.full, "full", ""),
        (np.full_like, "full_like", ""),
        (np.linspace, "linspace", "linear in its endpoints", "start, stop"),
        (np.arange, "arange", "length piecewise constant", "start, step"),
        (np.eye, "eye", "constants", "none"),
        (np.identity, "eye", "constants", "none"),
        (np.cumsum, "cumsum", "`axis=`"),
        (np.diff, "diff", "`n=`, `axis=`"),
        (np.trace, "trace", "`offset=`"),
        (np.diagonal, "diagonal", "a view"),
        (np.diag, "diag", "1-D in: a diagonal matrix; 2-D in: a copy of the diagonal; `k=`"),
        (np.var, "var", "over all elements (numba: one argument)"),
        (np.std, "std", "as var"),
        (np.ptp, "ptp", "max - min"),
        (np.flip, "flip", "a view, `axis=`"),
        (np.fliplr, "fliplr", "a view"),
        (np.flipud, "flipud", "a view"),
        (np.expand_dims, "expand_dims", "a view"),
        (np.copy, "copy", ""),
        (np.vdot, "vdot", "of the flattened arrays"),
        (np.average, "average", "over all elements, `weights=`"),
        (np.trapezoid, "trapezoid", "1-D, `x=` or `dx=`"),
        (np.hstack, "hstack", ""),
        (np.vstack, "vstack", ""),
        (np.column_stack, "column_stack", ""),
        (np.tril, "tril", "2-D, `k=`"),
        (np.triu, "triu", "2-D, `k=`"),
        (np.sort, "sort", "1-D: a gather through argsort"),
        (np.partition, "partition", "1-D: a gather through the order numba's np.partition "
                                    "leaves the elements in"),
        (np.median, "median", "1-D"),
        (np.roll, "roll", "no axis: flattened"),
        (np.repeat, "repeat", "int repeats, no axis"),
        (np.ediff1d, "ediff1d", "of the flattened array (no to_end, to_begin)"),
        (np.dstack, "dstack", "1-D, 2-D and 3-D arrays"),
        (np.atleast_1d, "atleast", _ATLEAST),
        (np.atleast_2d, "atleast", _ATLEAST),
        (np.atleast_3d, "atleast", _ATLEAST),
        (np.rot90, "rot90", "a view, constant k"),
        (np.real, "real", "of real numbers and arrays: themselves (a view)"),
        (np.einsum, "einsum", "constant subscripts, no `...`: the loops they mean (numba does "
                              "not compile np.einsum)"),
):
    _R.define(_obj, _np_name(_obj), "array", handler=_handler, notes=_notes,
              through=_through[0] if _through else "")

# numpy < 2.5: vstack's deprecated alias (where something made it vstack itself, vstack's
# entry serves)
if getattr(np, "row_stack", np.vstack) is not np.vstack:
    _R.define(np.row_stack, "np.row_stack", "array", handler="vstack")

# np.linspace(start, stop, num) is linear in start and stop; np.arange(start, stop, step) has
# elements start + k * step (its length is piecewise constant: nothing through stop)
REGISTRY.get(np.linspace).array_rule = ArrayRule(
    "linspace", ("start", "stop", "num"),
    ("vec.linspace_start_bar(out_bar)", "vec.linspace_stop_bar(out_bar)", None),
    ("np.linspace(d, 0.0, num)", "np.linspace(0.0, d, num)", None),
    lambda args: (1, "f"), sized_by=("num",))
REGISTRY.get(np.arange).array_rule = ArrayRule(
    "arange", ("start", "stop", "step"),
    ("vec.sum_bar(out_bar)", None, "vec.arange_step_bar(out_bar)"),
    ("vec.arange_tangent(d, 0.0, vec.arange_len(start, stop, step))", None,
     "vec.arange_tangent(0.0, d, vec.arange_len(start, stop, step))"),
    lambda args: (1, "f" if any(f for _, f in args) else "i"), defaults={"step": "1"},
    sized_by=("start", "stop", "step"))

# linear algebra kept at array level, with reverse rules that solve rather than invert:
# x = solve(A, b): g = solve(A.T, x_bar), b_bar += g, A_bar -= g x.T; x_dot = solve(A, b_dot -
# A_dot x). C = inv(A): A_bar -= C.T C_bar C.T; C_dot = -C A_dot C
_R.define(np.linalg.solve, "np.linalg.solve", "array", handler="keep", array_rule=ArrayRule(
    "solve", ("a", "b"), ("-vec.outer_nt(shared, out)", "shared"),
    ("-vec.solve_again(a, np.dot(d, out), False)", "vec.solve_again(a, d, False)"),
    lambda args: (args[1][0], "f"), shared="vec.solve_again(a, out_bar, True)"),
    notes="the adjoint solves with the transpose (by substitution for a triangular matrix)")
# adjit's own solve in generated code (the tangents and adjoints above), differentiated again
# where a second derivative differentiates generated code (adjit/higher.py): the same rules,
# with the transpose when `transposed`
_R.define(vec.solve_again, "vec.solve_again", "array", handler="keep", array_rule=ArrayRule(
    "solve_again", ("a", "b", "transposed"),
    ("(-vec.outer_nt(out, shared) if transposed else -vec.outer_nt(shared, out))", "shared",
     None),
    ("-vec.solve_again(a, (np.dot(d.T, out) if transposed else np.dot(d, out)), transposed)",
     "vec.solve_again(a, d, transposed)", None),
    lambda args: (args[1][0], "f"),
    shared="vec.solve_again(a, out_bar, not transposed)"))
_R.define(np.linalg.inv, "np.linalg.inv", "array", handler="keep", array_rule=ArrayRule(
    "inv", ("a",), ("-vec.mm_nt(vec.mm_tn(out, out_bar), out)",), ("-vec.mm(vec.mm(out, d), out)",),
    lambda args: (2, "f"), exact=True), notes="the adjoint and tangent multiply by the inverse")

# reductions that skip NaN, over all elements (numba has no axis): the reduction of
# np.where(a != a, fill, a); nanmean divides by the count of numbers, nanmax/nanmin are NaN
# when there is none. No derivative flows to a NaN element.
for _obj in (np.nansum, np.nanprod, np.nanmean, np.nanmax, np.nanmin, np.nanvar, np.nanstd,
             np.nancumsum):
    _R.define(_obj, f"np.{_obj.__name__}", "array", handler="nan_reduce",
              notes="over all elements; NaN elements get no derivative (nor, for an "
                    "expression, its operands there)")

# factorizations of symmetric matrices read A's lower triangle (as numba's LAPACK calls do): their
# adjoints are zero above the diagonal, their tangents see tril(A_dot) + tril(A_dot, -1).T.
# L = cholesky(A): L_dot = L Phi(L^-1 S L^-T); A_bar from two triangular solves
_R.define(np.linalg.cholesky, "np.linalg.cholesky", "array", handler="keep",
          array_rule=ArrayRule("cholesky", ("a",), ("vec.cholesky_a_bar(out, out_bar)",),
                               ("vec.cholesky_tangent(out, d)",), lambda args: (2, "f"),
                               exact=True),
          notes="reads the lower triangle; adjoint by triangular solves")
_R.define(np.linalg.eigvalsh, "np.linalg.eigvalsh", "array", handler="keep",
          array_rule=ArrayRule("eigvalsh", ("a",), ("vec.eigvalsh_a_bar(a, out_bar)",),
                               ("vec.eigvalsh_tangent(a, d)",), lambda args: (1, "f")),
          notes="reads the lower triangle")
# results that are a number or a tuple are computed as one packed array by a helper (whose
# ArrayRule is the derivative) and unpacked where the call stood: `packed` = (helper, how)
_R.define(np.linalg.det, "np.linalg.det", "array", handler="packed",
          packed=(vec.det1, "item"), notes="adjoint det(A) A^-T by one LU solve")
_R.define(np.linalg.slogdet, "np.linalg.slogdet", "array", handler="packed",
          packed=(vec.slogdet2, "items"), notes="no derivative through the sign")
_R.define(np.linalg.eigh, "np.linalg.eigh", "array", handler="packed",
          packed=(vec.eigh_packed, "rows"),
          notes="reads the lower triangle; eigenvector derivatives raise ValueError at a "
                "repeated eigenvalue")
_R.define(np.linalg.svd, "np.linalg.svd", "array", handler="packed",
          packed=(vec.svd_packed, "svd"),
          notes="full_matrices=True (numba's default) or False (the reduced U, Vh); singular "
                "values for any shape; the first min(m, n) singular vectors where the "
                "singular values are distinct (and nonzero, for a matrix that is not "
                "square); the vectors full_matrices=True adds beyond them, which numpy "
                "chooses freely, are refused as the gradient runs (their tangent NaN)")
_R.define(np.vander, "np.vander", "array", handler="keep", array_rule=ArrayRule(
    "vander", ("x", "N", "increasing"), ("vec.vander_bar(x, increasing, out_bar)", None, None),
    ("vec.vander_tangent(x, increasing, out, d)", None, None), lambda args: (2, "f"),
    defaults={"N": "None", "increasing": "False"}, sized_by=("N",)),
    notes="in x; N and increasing by position")
_COV = "one 2-D array, rows are variables (numba's defaults)"
_R.define(np.cov, "np.cov", "array", handler="cov", array_rule=ArrayRule(
    "cov", ("m",), ("vec.cov_m_bar(m, out_bar)",), ("vec.cov_tangent(m, d)",),
    lambda args: (2, "f")), notes=_COV)
_R.define(np.corrcoef, "np.corrcoef", "array", handler="cov", array_rule=ArrayRule(
    "corrcoef", ("m",), ("vec.corrcoef_m_bar(m, out_bar)",), ("vec.corrcoef_tangent(m, d)",),
    lambda args: (2, "f")), notes=_COV)
_R.define(np.linalg.cond, "np.linalg.cond", "array", handler="cond",
          notes="the 2-norm condition number (numba's; no p): max(s) / min(s) of the SVD")
_R.define(np.linalg.lstsq, "np.linalg.lstsq", "array", handler="lstsq",
          notes="the solution x (pinv(a) b, a of full rank); residuals, rank and singular "
                "values have no derivative (refused where one would flow)")
_R.define(vec.lstsq_x, "vec.lstsq_x", "helper", array_rule=ArrayRule(
    "lstsq_x", ("a", "b"), ("shared[0]", "shared[1]"),
    ("vec.lstsq_tangent_a(a, b, d)", "vec.lstsq_tangent_b(a, d)"),
    lambda args: (args[1][0], "f"), shared="vec.lstsq_bars(a, b, out_bar)"))
_R.define(vec.svd_packed, "vec.svd_packed", "helper", array_rule=ArrayRule(
    "svd_packed", ("a",), ("vec.svd_a_bar(a, out, out_bar)",), ("vec.svd_tangent(a, out, d)",),
    lambda args: (2, "f")))
_R.define(np.linalg.qr, "np.linalg.qr", "array", handler="packed", packed=(vec.qr_packed, "qr"),
          notes="reduced; the derivative for m >= n (a wide matrix raises ValueError)")
_R.define(vec.qr_packed, "vec.qr_packed", "helper", array_rule=ArrayRule(
    "qr_packed", ("a",), ("vec.qr_a_bar(a, out, out_bar)",), ("vec.qr_tangent(a, out, d)",),
    lambda args: (2, "f")))
_R.define(vec.det1, "vec.det1", "helper", array_rule=ArrayRule(
    "det1", ("a",), ("vec.det_a_bar(a, out, out_bar)",), ("vec.det_tangent(a, out, d)",),
    lambda args: (1, "f")))
_R.define(vec.slogdet2, "vec.slogdet2", "helper", array_rule=ArrayRule(
    "slogdet2", ("a",), ("vec.slogdet_a_bar(a, out_bar)",), ("vec.slogdet_tangent(a, d)",),
    lambda args: (1, "f")))
_R.define(vec.eigh_packed, "vec.eigh_packed", "helper", array_rule=ArrayRule(
    "eigh_packed", ("a",), ("vec.eigh_a_bar(out, out_bar)",), ("vec.eigh_tangent(out, d)",),
    lambda args: (2, "f")))

# np.diagflat(v, k): a new matrix with v's elements on its k-th diagonal. np.geomspace and
# np.logspace (numba: start, stop, num) are smooth in their endpoints (vec.geomspace_bars)
_R.define(np.diagflat, "np.diagflat", "array", handler="keep", array_rule=ArrayRule(
    "diagflat", ("v", "k"), ("vec.diagflat_bar(v, k, out_bar)", None), ("np.diagflat(d, k)", None),
    lambda args: (2, "f"), defaults={"k": "0"}), notes="k by position")
_R.define(np.geomspace, "np.geomspace", "array", handler="keep", array_rule=ArrayRule(
    "geomspace", ("start", "stop", "num"), ("shared[0]", "shared[1]", None),
    ("vec.geomspace_tangent(out, start, d, True)", "vec.geomspace_tangent(out, stop, d, False)",
     None), lambda args: (1, "f"), defaults={"num": "50"},
    shared="vec.geomspace_bars(start, stop, out, out_bar)", sized_by=("num",)),
    notes="in start and stop; num by position")
_R.define(np.logspace, "np.logspace", "array", handler="keep", array_rule=ArrayRule(
    "logspace", ("start", "stop", "num"), ("shared[0]", "shared[1]", None),
    ("vec.logspace_tangent(out, d, True)", "vec.logspace_tangent(out, d, False)", None),
    lambda args: (1, "f"), defaults={"num": "50"}, shared="vec.logspace_bars(out, out_bar)",
    sized_by=("num",)),
    notes="base 10 (numba's); in start and stop; num by position")

# np.nancumprod: cumprod's rule with NaN as 1. np.append(arr, values) joins the flattened
# arrays (a number is one element); with an axis it is np.concatenate
# (normalize/lower_shapes.py). np.unwrap adds a piecewise constant
_R.define(np.nancumprod, "np.nancumprod", "array", handler="keep", array_rule=ArrayRule(
    "nancumprod", ("a",), ("vec.nancumprod_bar(a, out_bar)",),
    ("vec.nancumprod_tangent(a, out, d)",), lambda args: (1, "f")),
    notes="of the flattened array; NaN elements get no derivative")
_R.define(np.append, "np.append", "array", handler="append", array_rule=ArrayRule(
    "append", ("arr", "values"),
    ("vec.append_head_bar(arr, out_bar)", "vec.append_tail_bar(arr, values, out_bar)"),
    ("np.append(d, vec.zero_like(values))", "np.append(vec.zero_like(arr), d)"),
    lambda args: (1, "f")), through="arr, values",
    notes="the flattened arrays; with `axis`, np.concatenate((arr, values), axis)")
_R.define(np.unwrap, "np.unwrap", "array", handler="keep", array_rule=ArrayRule(
    "unwrap", ("p",), ("out_bar",), ("d",), lambda args: (args[0][0], "f")),
    notes="adds multiples of 2 pi: the derivative is the identity; p alone")

# np.bincount(x, weights, minlength): out[j] sums the weights of the x[i] equal to j, a
# scatter-add linear in the weights: their adjoint is the gather out_bar[x]
_R.define(np.bincount, "np.bincount", "array", handler="keep", array_rule=ArrayRule(
    "bincount", ("x", "weights", "minlength"), (None, "vec.gather1(out_bar, x)", None),
    (None, "np.bincount(x, d, minlength)", None),
    lambda args: (1, "f" if len(args) > 1 and args[1][0] == 1 and args[1][1] else "i"),
    defaults={"weights": "None", "minlength": "0"}, sized_by=("x", "minlength")),
    notes="in the weights (counts without them are integers)")

# np.take_along_axis(arr, indices, axis): a gather; its adjoint scatters (repeats accumulate)
_R.define(np.take_along_axis, "np.take_along_axis", "array", handler="keep",
          array_rule=ArrayRule(
              "take_along_axis", ("arr", "indices", "axis"),
              ("vec.take_along_axis_adjoint(arr, indices, axis, out_bar)", None, None),
              ("np.take_along_axis(d, indices, axis)", None, None),
              lambda args: (args[1][0], "f")),
          notes="in arr; 1-D and 2-D arrays, or axis=None")

# np.extract(condition, arr) and np.delete(arr, obj): the elements of the flattened array a
# condition keeps, or obj does not delete; their adjoints put out_bar back there
_R.define(np.extract, "np.extract", "array", handler="keep", array_rule=ArrayRule(
    "extract", ("condition", "arr"), (None, "vec.extract_bar(condition, arr, out_bar)"),
    (None, "np.extract(condition, d)"), lambda args: (1, "f"),
    sized_by=("condition",)),
    notes="in arr")
_R.define(np.delete, "np.delete", "array", handler="keep", array_rule=ArrayRule(
    "delete", ("arr", "obj"), ("vec.delete_bar(arr, obj, out_bar)", None),
    ("np.delete(d, obj)", None), lambda args: (1, "f"), sized_by=("obj",)),
    notes="in arr; of the flattened array (numba's), obj an index or an index array")

# np.cumprod of the flattened array (numba has no axis): adjoint and tangent by recurrences, exact
# at zeros. np.interp(x, xp, fp): piecewise linear in all three (fp: np.interp of fp's tangent);
# a number x goes through the packed helper vec.interp1
_R.define(np.cumprod, "np.cumprod", "array", handler="keep", array_rule=ArrayRule(
    "cumprod", ("a",), ("vec.cumprod_bar(a, out_bar)",), ("vec.cumprod_tangent(a, out, d)",),
    lambda args: (1, "f")), notes="of the flattened array; exact at zeros")
_INTERP_BARS = "vec.interp_bars(x, xp, fp, out_bar)"
_R.define(np.interp, "np.interp", "array", handler="interp", array_rule=ArrayRule(
    "interp", ("x", "xp", "fp"), ("shared[0]", "shared[1]", "shared[2]"),
    ("vec.interp_slope(x, xp, fp) * d", "vec.interp_dxp(x, xp, fp, d)", "np.interp(x, xp, d)"),
    lambda args: (args[0][0], "f"), shared=_INTERP_BARS),
    notes="piecewise linear in x, xp and fp (end values outside); x an array or a number",
    through="x, xp, fp")
_R.define(vec.interp1, "vec.interp1", "helper", array_rule=ArrayRule(
    "interp1", ("x", "xp", "fp"), ("shared[0][0]", "shared[1]", "shared[2]"),
    ("vec.interp_slope(vec.as1(x), xp, fp) * d", "vec.interp_dxp(vec.as1(x), xp, fp, d)",
     "np.interp(vec.as1(x), xp, d)"),
    lambda args: (1, "f"),
    shared="vec.interp_bars(vec.as1(x), xp, fp, out_bar)"))

# products and filters kept at array level, adjoints by their definitions (runtime/arrays.py);
# tangents are the same bilinear function of one tangent and the other operand
def _kron_result(args):
    """numba's np.kron: numbers and 1-D or 2-D arrays; the result has the first operand's
    dtype (an integer `a` truncates the products) and the larger rank, 1 for two numbers
    (numba returns an array of one element where numpy returns a number)."""
    ndim = max(args[0][0], args[1][0], 1)
    if ndim > 2:
        raise Refused(f"np.kron of a {ndim}-D array, which numba does not compile",
                      "numba's np.kron takes numbers and 1-D or 2-D arrays: take the "
                      "products of 2-D slices, or write the loops.")
    return ndim, "f" if args[0][1] else "i"


_R.define(np.kron, "np.kron", "array", handler="keep", array_rule=ArrayRule(
    "kron", ("a", "b"), ("shared[0]", "shared[1]"), ("np.kron(d, b)", "np.kron(a, d)"),
    _kron_result, shared="vec.kron_bars(a, b, out_bar)"),
    notes="numbers, 1-D and 2-D arrays; an integer first operand makes numba's result "
          "integer (no derivative)")
_R.define(np.cross, "np.cross", "array", handler="keep", array_rule=ArrayRule(
    "cross", ("a", "b"), ("vec.cross_a_bar(a, b, out_bar)", "vec.cross_b_bar(a, b, out_bar)"),
    ("np.cross(d, b)", "np.cross(a, d)"), lambda args: (max(args[0][0], args[1][0]), "f")),
    notes="3-vectors and rows of 3-vectors; a vector against rows is summed")
_R.define(np.convolve, "np.convolve", "array", handler="convolve", array_rule=ArrayRule(
    "convolve", ("a", "v"), ("shared[0]", "shared[1]"),
    ("np.convolve(d, v)", "np.convolve(a, d)"), lambda args: (1, "f"),
    shared="vec.convolve_bars(a, v, out_bar)"),
          notes="1-D, modes 'full', 'valid', 'same' (slices of the full convolution)",
          through="a, v")
_R.define(np.correlate, "np.correlate", "array", handler="correlate", array_rule=ArrayRule(
    "correlate", ("a", "v"), ("shared[0]", "shared[1]"),
    ("np.correlate(d, v)", "np.correlate(a, d)"), lambda args: (1, "f"),
    shared="vec.correlate_bars(a, v, out_bar)"),
          notes="1-D, modes 'valid', 'full', 'same' (slices of the convolution with v "
                "reversed)", through="a, v")
_R.define(np.linalg.matrix_power, "np.linalg.matrix_power", "array", handler="packed",
          packed=(vec.matrix_power, "whole"),
          notes="any integer n (a negative one through the inverse)")
_R.define(vec.matrix_power, "vec.matrix_power", "helper", array_rule=ArrayRule(
    "matrix_power", ("a", "n"), ("vec.matrix_power_bar(a, n, out_bar)", None),
    ("vec.matrix_power_tangent(a, n, d)", None), lambda args: (2, "f")))
_R.define(np.linalg.pinv, "np.linalg.pinv", "array", handler="keep", array_rule=ArrayRule(
    "pinv", ("a",), ("vec.pinv_a_bar(a, out, out_bar)",), ("vec.pinv_tangent(a, out, d)",),
    lambda args: (2, "f")),
    notes="exact where A has full rank (elsewhere the pseudo-inverse jumps with the rank)")

# np.percentile(a, q) and np.quantile(a, q) (and the nan- forms, skipping NaN): linear in two
# order statistics of a and in q (see runtime/arrays.py); an array q kept whole, a number q
# through the packed helper vec.quantile1; np.nanmedian(a) is np.nanquantile(a, 0.5)
_QUANTILE = ("linear interpolation (numba's) of the flattened array; q an array or a number; "
             "the nan- forms skip NaN (nanmedian: nanquantile at 0.5)")
for _obj, _scale, _skip in ((np.percentile, "0.01", "False"), (np.quantile, "1.0", "False"),
                            (np.nanpercentile, "0.01", "True"), (np.nanquantile, "1.0", "True")):
    _R.define(_obj, f"np.{_obj.__name__}", "array", handler="quantile", array_rule=ArrayRule(
        _obj.__name__, ("a", "q"), ("shared[0]", "shared[1]"),
        (f"vec.quantile_tangent_a(a, q, {_scale}, {_skip}, d)",
         f"vec.quantile_tangent_q(a, q, {_scale}, {_skip}, d)"),
        lambda args: (args[1][0], "f"),
        shared=f"vec.quantile_bars(a, q, {_scale}, {_skip}, out_bar)"), notes=_QUANTILE,
        through="a, q")
_R.define(np.nanmedian, "np.nanmedian", "array", handler="quantile", notes=_QUANTILE,
          through="a, q")
_R.define(vec.quantile1, "vec.quantile1", "helper", array_rule=ArrayRule(
    "quantile1", ("a", "q", "scale", "skip"), ("shared[0]", "shared[1][0]", None, None),
    ("vec.quantile_tangent_a(a, vec.as1(q), scale, skip, d)",
     "vec.quantile_tangent_q(a, vec.as1(q), scale, skip, vec.as1(d))", None, None),
    lambda args: (1, "f"),
    shared="vec.quantile_bars(a, vec.as1(q), scale, skip, out_bar)"))

# allocation ------------------------------------------------------------------------------------
for _obj in (np.zeros, np.ones, np.empty):
    _R.define(_obj, f"np.{_obj.__name__}", "allocate", handler="shape")
for _name in vec.SCRATCH:             # (a CUDA kernel's local and shared arrays)
    _R.define(getattr(vec, _name), f"vec.{_name}", "allocate", handler="shape")
for _obj in (np.zeros_like, np.ones_like, np.empty_like):
    _R.define(_obj, f"np.{_obj.__name__}", "allocate", handler="like")

# adjit's own helpers in generated code: integer helpers of vectorized code (sizes, strides,
# slice bounds, index-array entries) and the NaN-propagating max/min whose result only seeds
# np.max's tie split: no derivatives flow through them -----------------------------------------
for _obj, _n, _result in ((vec.bcast, 2, "int"), (vec.stride, 2, "int"), (vec.index, 2, "int"),
                          (vec.take_index, 2, "int"), (vec.same_length, 2, "int"),
                          (vec.dot_length, 2, "int"),
                          (vec.infer_size, 2, "int"), (vec.reshape_dim, 3, "int"),
                          (vec.slice_start, 6, "int"), (vec.slice_len, 6, "int"),
                          (vec.nanmax, 2, "float"), (vec.nanmin, 2, "float")):
    _R.define(_obj, f"vec.{_obj.__name__}", "helper",
              rule=Rule("abcdef"[:_n], (None,) * _n, _result))
_R.define(vec.nan_if_none, "vec.nan_if_none", "helper", rule=Rule("ab", ("1.0", None)))
_R.define(vec.tuple_index, "vec.tuple_index", "helper", rule=Rule("kn", (None, None), "int"),
          notes="the position t[k] reads in a tuple of numbers")
for _obj, _dtype in ((vec.empty_int, "i"), (vec.empty_bool, "b")):
    _R.define(_obj, f"vec.{_obj.__name__}", "allocate", handler=_dtype)
# the user's integer and boolean arrays (np.zeros(n, dtype=np.int64)): kept in their dtype
DECLARED_ALLOCATORS = {}
"""(np.zeros / np.ones / np.empty, numpy dtype) -> the helper allocating that array."""
for _base in (np.zeros, np.ones, np.empty):
    for _dtype in vec.DECLARED:
        _obj = getattr(vec, f"{_base.__name__}_{_dtype}")
        _R.define(_obj, f"vec.{_obj.__name__}", "allocate",
                  handler="b" if _dtype == "bool_" else "i",
                  notes=f"np.{_base.__name__}(shape, np.{_dtype})")
        DECLARED_ALLOCATORS[_base, np.dtype(getattr(np, _dtype))] = _obj
    # a float32 array of the user's (umap's distance gradients, a float32 work buffer):
    # allocated as numba does, a float array like np.zeros's; its adjoint is float32 too
    _obj = getattr(vec, f"{_base.__name__}_float32")
    _R.define(_obj, f"vec.{_obj.__name__}", "allocate", handler="shape",
              notes=f"np.{_base.__name__}(shape, np.float32)")
    DECLARED_ALLOCATORS[_base, np.dtype(np.float32)] = _obj
# matrix products kept at array level (BLAS in both sweeps): C = A @ B gives
# A_bar += C_bar @ B.T and B_bar += A.T @ C_bar; C_dot = A_dot @ B + A @ B_dot
_MM = {"mm": (("vec.mm_nt(out_bar, b)", "vec.mm_tn(a, out_bar)"),
              ("vec.mm(d, b)", "vec.mm(a, d)")),
       "mm_tn": (("vec.mm_nt(b, out_bar)", "vec.mm(a, out_bar)"),
                 ("vec.mm_tn(d, b)", "vec.mm_tn(a, d)")),
       "mm_nt": (("vec.mm(out_bar, b)", "vec.mm_tn(out_bar, a)"),
                 ("vec.mm_nt(d, b)", "vec.mm_nt(a, d)")),
       "mm_tt": (("vec.mm_tt(b, out_bar)", "vec.mm_tt(out_bar, a)"),
                 ("vec.mm_tt(d, b)", "vec.mm_tt(a, d)"))}
for _obj in (vec.mm, vec.mm_tn, vec.mm_nt, vec.mm_tt):
    _key = _obj.__name__
    _R.define(_obj, f"vec.{_key}", "helper", array_rule=ArrayRule(
        _key, ("a", "b"), _MM[_key][0], _MM[_key][1], lambda args: (2, "f"),
        exact=True))
# matrix-vector products, BLAS as numba's np.dot: y = A @ x gives A_bar += outer(y_bar, x) and
# x_bar += A.T @ y_bar, y_dot = A_dot @ x + A @ x_dot; x @ A is A.T @ x (mv_t); the outer
# product the matrix adjoint is has its own rules (a gradient of a gradient meets it)
_MV = {"mv": (("vec.outer_vv(out_bar, b)", "vec.mv_t(a, out_bar)"),
              ("vec.mv(d, b)", "vec.mv(a, d)"), 1),
       "mv_t": (("vec.outer_vv(b, out_bar)", "vec.mv(a, out_bar)"),
                ("vec.mv_t(d, b)", "vec.mv_t(a, d)"), 1),
       "outer_vv": (("vec.mv(out_bar, b)", "vec.mv_t(out_bar, a)"),
                    ("vec.outer_vv(d, b)", "vec.outer_vv(a, d)"), 2)}
for _obj in (vec.mv, vec.mv_t, vec.outer_vv):
    _key = _obj.__name__
    _R.define(_obj, f"vec.{_key}", "helper", array_rule=ArrayRule(
        _key, ("a", "b"), _MV[_key][0], _MV[_key][1],
        lambda args, ndim=_MV[_key][2]: (ndim, "f"), exact=True))


# functions with no derivative, called as they are ---------------------------------------------
def _sized(k):
    """The shape rule of a random draw whose size is argument k: a number without it, a
    1-D array for an int, an m-D array for a tuple of m sizes."""
    def rule(dims):
        size = dims[k] if k < len(dims) else None
        if size is None:
            return 0, "f"
        return (size[1] if isinstance(size, tuple) else 1), "f"
    return rule


def inactive(obj, name, params, result, notes="", statement=False, options=None):
    _R.define(obj, name, "inactive", params=params, result=result, notes=notes,
              statement=statement, options=options)


inactive(np.argsort, "np.argsort", ("a",), lambda d: (d[0], "i"), "integer result; kind= "
         "'quicksort' (numba's default) or 'mergesort' (stable)",
         options={"kind": ("quicksort", "mergesort")})
inactive(vec.argsort_rows, "vec.argsort_rows", ("a",), lambda d: (1, "i"),
         "flat positions of each row's sorted order (np.sort of a 2-D array)")
inactive(vec.partition_order, "vec.partition_order", ("a", "kth"), lambda d: (1, "i"),
         "positions of a 1-D array's elements in the order np.partition leaves them")
inactive(np.argmax, "np.argmax", ("a",), lambda d: (0, "i"), "integer result, no axis")
inactive(np.argmin, "np.argmin", ("a",), lambda d: (0, "i"), "integer result, no axis")
# numba's random draws: calls with an effect (each advances numba's generator), run once in
# the forward sweep and recorded, never evaluated again (analysis/effects.py). The standard
# draws are called as they are; the others are written as numba transforms a standard draw
# (rules/draws.py) and have the pathwise derivative in their parameters, except those
# `refused`: numba draws them by rejection or as counts.


def _sized_as(k, dtype):
    rule = _sized(k)
    return lambda dims: (rule(dims)[0], dtype)


def standard_draw(obj, params, dtype="f", refused=(), notes="a random draw"):
    """A draw called as it is: its `size` is its last parameter (or `*` sizes)."""
    size = len(params) - 1
    result = (lambda d: (len(d), dtype)) if params == ("*",) else _sized_as(size, dtype)
    _R.define(obj, f"np.random.{obj.__name__}", "inactive", params=params, result=result,
              notes=notes, effect=DRAW, refused=refused)


def transformed_draw(obj, params, notes=""):
    """A draw written as numba's transformation of standard draws (rules/draws.py)."""
    from . import draws
    name = obj.__name__
    _R.define(obj, f"np.random.{name}", "draw", params=params,
              draw=(getattr(draws, name), getattr(draws, name + "_n")), effect=DRAW,
              notes=notes or "a random draw, with the pathwise derivative in its parameters",
              refused=("shape",) if name == "gamma" else ())


for _obj in (np.random.random, np.random.random_sample, np.random.sample, np.random.ranf,
             np.random.standard_normal, np.random.standard_exponential,
             np.random.standard_cauchy):
    standard_draw(_obj, ("size",))
standard_draw(np.random.rand, ("*",))
standard_draw(np.random.randn, ("*",))
standard_draw(np.random.randint, ("low", "high", "size"), "i", notes="integer result")
for _obj, _params, _dtype in (
        (np.random.standard_gamma, ("shape",), "f"), (np.random.beta, ("a", "b"), "f"),
        (np.random.chisquare, ("df",), "f"), (np.random.f, ("dfnum", "dfden"), "f"),
        (np.random.standard_t, ("df",), "f"), (np.random.vonmises, ("mu", "kappa"), "f"),
        (np.random.poisson, ("lam",), "i"), (np.random.binomial, ("n", "p"), "i"),
        (np.random.negative_binomial, ("n", "p"), "i"), (np.random.geometric, ("p",), "i"),
        (np.random.hypergeometric, ("ngood", "nbad", "nsample"), "i"),
        (np.random.logseries, ("p",), "i"), (np.random.zipf, ("a",), "i")):
    standard_draw(_obj, _params + ("size",), _dtype, refused=_params,
                  notes="a random draw by rejection or a count")
for _obj, _params in (
        (np.random.normal, ("loc", "scale")), (np.random.uniform, ("low", "high")),
        (np.random.exponential, ("scale",)), (np.random.lognormal, ("mean", "sigma")),
        (np.random.laplace, ("loc", "scale")), (np.random.logistic, ("loc", "scale")),
        (np.random.gumbel, ("loc", "scale")), (np.random.rayleigh, ("scale",)),
        (np.random.weibull, ("a",)), (np.random.pareto, ("a",)), (np.random.power, ("a",)),
        (np.random.gamma, ("shape", "scale")),
        (np.random.triangular, ("left", "mode", "right")),
        (np.random.wald, ("mean", "scale"))):
    transformed_draw(_obj, _params + ("size",))
_R.define(np.random.seed, "np.random.seed", "inactive", params=("seed",), result=None,
          notes="seeds numba's generator", statement=True,
          effect="it seeds numba's generator")
_R.define(print, "print", "none", notes="prints", effect="it prints", reads_only=True)
# the run-time checks and raises of generated code: statements with no derivative
for _obj, _params, _notes in (
        (vec.check_assert, ("ok",), "an assert statement"),
        (vec.raise_error, ("kind", "message"), "a raise statement"),
        (vec.check_same_length, ("n", "m", "message"),
         "an array rebound in a loop keeps its shape"),
        (vec.check_reducible, ("n", "what"), "a largest or smallest value of no elements"),
        (vec.check_gufunc_sizes, ("n", "m"), "a gufunc's arguments agree in their dimensions"),
        (vec.check_einsum_sizes, ("n", "m"), "np.einsum's operands agree in each letter's size"),
        (vec.check_apart, ("written", "other"),
         "an array argument the function writes shares no memory with another"),
        (vec.check_reshape, ("size", "dims"), "a reshape keeps the number of elements"),
        (vec.check_tangent, ("value", "like"), "a jvp's tangent has its argument's shape"),
        (vec.check_cotangent, ("value", "like"), "a vjp's cotangent has the result's shape"),
        (vec.check_stencil_shape, ("n", "m"),
         "a stencil's relatively indexed arrays have its first argument's shape")):
    inactive(_obj, f"vec.{_obj.__name__}", _params, None, _notes, statement=True)


def no_derivative(reason, *objs):
    """Functions whose values carry no derivative (boolean or integer results, types, constant
    arrays of integer arguments, complex results): they need no rule. Calls are handled as
    every call with no rule is (adjit/rules/opaque.py: called as they are wherever no
    derivative flows, which for these is everywhere a real float result is not needed); the
    entry records the reason for docs/coverage.md. The passes read no table of this family."""
    for obj in objs:
        _R.define(obj, _np_name(obj), "none", notes=reason)


no_derivative("boolean result", np.all, np.any, np.allclose, np.array_equal, np.isclose,
              np.equal, np.not_equal, np.greater, np.greater_equal, np.less, np.less_equal,
              np.logical_and, np.logical_or, np.logical_xor, np.logical_not, np.isfinite,
              np.isinf, np.isnan, np.isnat, np.isneginf, np.isposinf, np.iscomplex,
              np.iscomplexobj, np.isreal, np.isrealobj, np.isscalar, np.signbit, np.isin)
no_derivative("integer result", np.argpartition, np.argwhere, np.count_nonzero, np.digitize,
              np.flatnonzero, np.searchsorted, np.nanargmax, np.nanargmin, np.indices,
              np.tril_indices, np.tril_indices_from, np.triu_indices, np.triu_indices_from,
              np.shape, np.size, np.gcd, np.lcm, math.gcd, np.bitwise_and, np.bitwise_or,
              np.bitwise_xor, np.invert, np.left_shift, np.right_shift)
# `a & b`, `a | b`, `~a`, ... (normalize/sugar.py writes the operators as these calls)
for _obj in (operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift,
             operator.invert):
    _R.define(_obj, f"operator.{_obj.__name__}", "none", notes="integer or boolean result")
no_derivative("describes a type or a shape, not values", np.dtype, np.finfo, np.iinfo,
              np.broadcast_shapes)
no_derivative("a constant array made from integer arguments", np.tri, np.bartlett,
              np.blackman, np.hamming, np.hanning)
no_derivative("complex results (adjit differentiates real-valued code)", np.imag)
no_derivative("numba computes them of real input where they are real, "
              "and raises where they would be complex", np.linalg.eig, np.linalg.eigvals,
              np.roots)
no_derivative("integer result", np.linalg.matrix_rank)


def not_differentiated(reason, *objs):
    """Functions with a derivative adjit does not take, and why (what to write instead):
    called as they are wherever no derivative flows, refused by name where one would."""
    for obj in objs:
        _R.define(obj, _np_name(obj), "unsupported", notes=reason)


not_differentiated("returns a list of arrays: slice instead (x[:k], x[k:])", np.split,
                   np.array_split, np.hsplit, np.vsplit, np.dsplit, np.broadcast_arrays)
not_differentiated("takes lists of arrays: write nested np.where", np.select)
not_differentiated("a tuple of a // b and a % b: write those (both differentiated)", np.divmod)
not_differentiated("which elements it keeps depends on equal values: gather with indices "
                   "instead (np.argsort, x[idx])", np.unique, np.intersect1d, np.union1d,
                   np.setdiff1d, np.setxor1d)
not_differentiated("integer counts and bin edges: np.bincount with weights is "
                   "differentiated", np.histogram)
not_differentiated("its derivative in beta needs the Bessel function I1, which numba lacks",
                   np.kaiser)
not_differentiated("changes its argument in place: write the loop a[i, i] = v",
                   np.fill_diagonal)
not_differentiated("a read-only view with repeated elements: write the arithmetic with "
                   "broadcasting (x[None, :] + zeros) instead", np.broadcast_to)
not_differentiated("not yet: np.concatenate of the pieces is differentiated", np.insert)
not_differentiated("not yet (a shape from a tuple argument): np.concatenate or np.repeat of "
                   "the array", np.resize)
not_differentiated("not yet (a view whose bounds depend on the values): slice with bounds "
                   "computed under stop_gradient", np.trim_zeros)
not_differentiated("a mantissa and an integer exponent: write x / 2.0 ** e with "
                   "e = math.frexp(stop_gradient(x))[1]", math.frexp)
not_differentiated("the array itself or a copy, by the memory layout of its argument: "
                   "write x or x.copy()", np.asfortranarray, np.asarray_chkfinite)
no_derivative("reads raw bytes", np.frombuffer)
not_differentiated("makes a numpy Generator object, which adjit does not hold: seed numba's "
                   "generator with np.random.seed(s) and draw with np.random.normal(...) & "
                   "co., which adjit differentiates", np.random.default_rng)


# whole-array functions whose result numba always makes anew (or a number): never an argument
# or a view of one (np.reshape, np.asarray, np.flip, np.real may be; np.linalg.matrix_power
# and np.diagonal are left unmarked, as not known)
for _obj in (np.dot, np.matmul, np.outer, np.vdot, np.einsum, np.var, np.std, np.ptp,
             np.average, np.trapezoid, np.median, np.trace, np.concatenate, np.stack,
             np.hstack, np.vstack, np.column_stack, np.dstack, np.full, np.full_like, np.eye,
             np.identity, np.tril, np.triu, np.diag, np.cumsum, np.diff, np.ediff1d, np.sort,
             np.partition, np.roll, np.repeat, np.take, np.nansum, np.nanprod, np.nanmean,
             np.nanmax, np.nanmin, np.nanvar, np.nanstd, np.nanmedian, np.nancumsum,
             np.linalg.norm, np.linalg.det, np.linalg.slogdet, np.linalg.cond, np.linalg.eigh,
             np.linalg.lstsq, np.linalg.qr, np.linalg.svd):
    _R.get(_obj).fresh = True


def _attach_forms():
    from .forms import FORMS
    for obj, forms in FORMS.items():
        _R.get(obj).forms = forms


_attach_forms()


# what the passes read ---------------------------------------------------------------------------
def rule_for_call(obj):
    """The rule for calling `obj` on numbers, or None when adjit has none."""
    entry = _R.get(obj)
    return entry.rule if entry is not None else None


class _Table(dict):
    """A table whose lookups by unhashable objects (arrays) simply miss."""

    def __contains__(self, obj):
        try:
            return dict.__contains__(self, obj)
        except TypeError:
            return False


BINOP_RULES = {e.obj: e.rule for e in _R.family("operator") if e.arity == 2}
"""Binary operators by ast class (ast.Add: `+`)."""

UNARY_RULES = {e.obj: e.rule for e in _R.family("operator") if e.arity == 1}
"""Unary operators by ast class (ast.USub: unary `-`)."""

CALL_RULES = _Table({e.obj: e.rule for e in _R.family("scalar", "elementwise")
                     if e.rule is not None})
"""Rules of the functions user code calls on numbers (the tests' checklist)."""

ELEMENTWISE = _Table({e.obj: e.scalar for e in _R.family("elementwise")})
"""numpy elementwise functions: the scalar primitive (or lowering keyword) each element
gets."""

ELEMENTWISE_ARITY = _Table({e.obj: e.arity for e in _R.family("elementwise")})

REDUCTIONS = _Table({e.obj: e.reduction for e in _R.family("reduction")})
METHOD_REDUCTIONS = {m: e.reduction for e in _R.family("reduction") for m in e.methods}

# array methods numba compiles that are the numpy function of the same array: `a.cumsum()`
# is np.cumsum(a), lowered the same way (normalize/numpy_calls.py). Not a.sort(), which
# sorts in place.
for _obj, _names in ((np.cumsum, ("cumsum",)), (np.cumprod, ("cumprod",)),
                     (np.clip, ("clip",)), (np.repeat, ("repeat",)), (np.take, ("take",)),
                     (np.argmax, ("argmax",)), (np.argmin, ("argmin",)),
                     (np.argsort, ("argsort",)), (np.any, ("any",)), (np.all, ("all",)),
                     (np.conjugate, ("conj", "conjugate"))):
    _R.get(_obj).methods += _names
METHOD_FUNCTIONS = {m: e.obj for e in _R.entries if e.family != "reduction"
                    for m in e.methods}
"""Array methods that are a numpy function of the array: method name -> the function."""

def _array_tables():
    """The tables of array-level functions and operations, from the registry: computed at
    import and again when a function gets its rule at run time (define_custom)."""
    kept = [e for e in _R.entries if e.array_rule is not None]
    rules = {e.array_rule.key: e.array_rule for e in kept}
    return {
        "ARRAY_FUNCTIONS": {e.obj: e.handler for e in _R.family("array")},
        "ARRAY_OPS": {e.obj: e.array_rule.key for e in kept},
        "ARRAY_RULES": rules,
        "ARRAY_OP_NAMES": {**{e.array_rule.key: e.name for e in kept},
                           **{e.packed[0].__name__: e.name for e in _R.entries
                              if e.packed is not None},
                           **{k: "a matrix product"
                              for k in ("mm", "mm_tn", "mm_nt", "mm_tt", "mv", "mv_t")},
                           "outer_vv": "an outer product"},
        "ARRAY_OP_OPERANDS": {k: r.differentiable for k, r in rules.items()},
        "READS_OPERANDS": {k for k, r in rules.items() if r.reads},
    }


ARRAY_FUNCTIONS = _Table()
"""numpy functions on whole arrays, by the vectorizer handler that lowers them."""

ARRAY_OPS = _Table()
"""Operations kept at array level in the normalized program, with adjoints written in
adjit/reverse/adjoint.py and tangents in adjit/forward/tangent.py. np.linspace(a, b, n) is
linear in a and b; np.arange(start, stop, step) has elements start + k * step (its length
is piecewise constant: no derivative through stop)."""

ARRAY_RULES = {}
"""The derivatives of the array-level operations, by key."""

_KEYS = set()


def fresh_key(name):
    """A key for a rule made as a program runs (a custom_vjp function's, an outlined
    helper's, a gradient's called inside another): `name`, numbered when a rule or another
    such key has it already. Their generated helpers are named after it (`softclip_vjp`,
    `normcdf_outlined2`)."""
    key, k = name, 1
    while key in _KEYS or key in ARRAY_RULES:
        k += 1
        key = f"{name}{k}"
    _KEYS.add(key)
    return key


ARRAY_OP_NAMES = {}
"""What an error message calls each array-level operation."""

ARRAY_OP_OPERANDS = {}
"""The differentiable operand positions of each array-level operation (arange: start and
step; np.arange(stop) alone has none)."""

READS_OPERANDS = set()
"""Array operations whose adjoints read their operands' values (the others' adjoints read
only the result's cotangent)."""


def _refresh_array_tables():
    for name, value in _array_tables().items():
        table = globals()[name]
        table.clear()
        table.update(value)


_refresh_array_tables()


_ATTACHED = {}


def attach_rule(obj, rule):
    """Calls of `obj` (a function the user does not own) are calls of `rule`, the custom_vjp
    adjit.defvjp made for it (adjit/custom.py)."""
    _ATTACHED[id(obj)] = (obj, rule)


def attached_rule(obj):
    """The rule adjit.defvjp attached to `obj`, or None."""
    held = _ATTACHED.get(id(obj))
    return held[1] if held is not None and held[0] is obj else None


def define_custom(obj, name, family, **fields):
    """A registry entry made at run time (a function given its own derivative rule,
    adjit/custom.py): the entry, and the array tables the passes read, now include it."""
    entry = _R.define(obj, name, family, **fields)
    _refresh_array_tables()
    return entry


_DEVICE_TWINS = {}


def set_device_twin(obj, make):
    """What CUDA code calls in place of `obj`, a CPU function generated code calls (a
    custom_vjp function's compiled rules): `make()` returns the device function, and is
    called once, when CUDA code first needs it."""
    _DEVICE_TWINS[obj] = [make, None]


def has_device_twin(obj):
    try:
        return obj in _DEVICE_TWINS
    except TypeError:
        return False


def device_twin(obj):
    """The device function standing for `obj` in CUDA code (set_device_twin), or None."""
    try:
        twin = _DEVICE_TWINS.get(obj)
    except TypeError:       # (an unhashable value in a namespace)
        return None
    if twin is None:
        return None
    if twin[1] is None:
        twin[1] = twin[0]()
    return twin[1]


_LAZY = {"numba_mpi": "messages"}
"""Libraries whose entries are defined the first time a differentiated function refers to
one of their objects (their import has effects: numba_mpi initializes MPI): top-level
module -> the module of adjit/rules/ that defines them (its `load()`)."""
_LOADED = set()


def ensure_entries(obj):
    """Define the registry entries of `obj`'s library if it is one loaded on demand."""
    try:
        module = getattr(obj, "__module__", None)
    except Exception:   # noqa: BLE001 - an object whose attributes raise: not a library's
        return
    top = module.split(".")[0] if isinstance(module, str) else None
    if top not in _LAZY or top in _LOADED:
        return
    _LOADED.add(top)
    import importlib
    made = importlib.import_module(f".{_LAZY[top]}", __package__).load()
    _refresh_array_tables()
    INACTIVE.update({e.obj: e for e in made if e.family == "inactive"})
    MESSAGES.update({e.obj: e for e in made if e.message is not None})


def set_array_rule(obj, rule):
    """Give a run-time entry a new ArrayRule (a custom_vjp function given its tangent rule
    after its reverse one), and the tables the passes read with it."""
    _R.get(obj).array_rule = rule
    _refresh_array_tables()


CONST_ARRAYS = _Table({e.obj: "eye" for e in _R.family("array") if e.handler == "eye"})
"""numpy functions making arrays of constants: nothing flows from their arguments."""

ALLOCATORS = _Table({e.obj: e.handler for e in _R.family("allocate")
                     if e.handler in ("shape", "like")})
"""numpy functions that make a new float array: from a shape, or like another array."""

SHAPE_ONLY_CALLS = frozenset(e.name for e in _R.family("allocate") if e.handler == "like")
"""How generated code spells the calls that read only their argument's shape and dtype
(np.zeros_like(x)): dead-code elimination keeps stores into x only for readers of its
elements (reverse/dce.py)."""

NEW_ARRAY_CALLS = _Table({e.obj: e.name for e in _R.family("allocate")
                          if e.name.startswith("np.")} | {np.copy: "np.copy", np.array: "np.array"})
"""numpy functions that always make a new array (never a view of another)."""

INT_ALLOCATORS = _Table({e.obj: e.handler for e in _R.family("allocate")
                         if e.handler in ("i", "b")})
"""Allocations of integer and boolean arrays (index arrays, mask coordinates): no
derivatives, ever."""

INACTIVE = _Table({e.obj: e for e in _R.family("inactive")})
"""Functions with no derivative, called as they are (their registry entries)."""

MESSAGES = _Table()
"""MPI calls and the functions of values they are lowered to, by object (their registry
entries; rules/messages.py, defined on first use)."""

ARRAY_QUERIES = _Table({len: "int"})
"""Functions that read an array's size, not its values."""

EXPENSIVE = {e.obj for e in _R.entries if e.cost == _EXP}
"""Functions that cost more to recompute (tens of cycles) than a tape push and pop: a value
of theirs that the backward sweep reads is recorded rather than replayed when the forward
sweep computes it anyway (see ReverseBuilder.make_plan)."""

PAIRED = {e.obj for e in _R.entries if e.paired is not None}

DRAWS = _Table({e.obj: e for e in _R.family("draw")})
"""Random draws written as numba's transformations of standard draws (rules/draws.py)."""
"""Expensive functions whose rule's partial calls their pair on the same argument (sin, cos):
LLVM computes both in one sincos call, so the value is replayed beside the partial rather
than recorded."""
