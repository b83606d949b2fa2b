"""The derivative rules, as data.

A rule lists, for each operand of a primitive, the partial derivative of the result with
respect to that operand, written as a Python expression over the operand names and `out`
(the result). The reverse pass turns a rule into `a_bar += out_bar * <partial>`; the same
partials serve forward mode later. `None` marks an operand the result does not depend on
differentiably (a floor, a comparison, an integer conversion).

`result` is the result's kind for type inference: "float", "int", "bool", or "join" (the
common kind of the operands, as `abs`, `min` and `max` keep integers integers).

Adding a function is one entry here and one parameter in tests/test_rules.py.
"""
import ast
import math

import numpy as np

from ..api_stop import stop_gradient
from ..runtime import vec


class Rule:
    """Partial derivatives of one primitive, as parsed expression templates."""

    def __init__(self, params, partials, result="float"):
        self.params = tuple(params)
        self.partials = tuple(None if p is None else ast.parse(p, mode="eval").body
                              for p in partials)
        self.result = result
        assert len(self.params) == len(self.partials)


def _unary(partial, result="float"):
    return Rule(("x",), (partial,), result)


_SIGN = "np.sign(x)"
# 1 - tanh(x)**2 cancels where |tanh(x)| is near 1: the relative error grows as
# eps / (1 - |out|), and all digits are gone past |x| = 19. (1 - out)(1 + out) keeps it under
# 3e-12 up to |out| = 0.9999 (|x| < 4.95) at the cost of a multiply; beyond, 1 / cosh(x)**2
# is exact to rounding and costs a cosh, where the derivative is below 2e-4 anyway.
_TANH = "(1.0 - out) * (1.0 + out) if abs(out) < 0.9999 else 1.0 / math.cosh(x) ** 2"
# d(a ** b)/da is b * a ** (b - 1) except at b == 0, where a ** 0 == 1 is constant: the
# formula would give 0 * inf = nan at a == 0 (JAX gives 0 there too). d/db is
# a ** b * log(a): 0 at a == 0 (the limit for b > 0), nan for a < 0 (no real derivative)
_POW = ("b * a ** (b - 1) if b != 0 else 0.0", "out * math.log(a) if a != 0.0 else 0.0")

BINOP_RULES = {
    ast.Add: Rule(("a", "b"), ("1.0", "1.0"), "join"),
    ast.Sub: Rule(("a", "b"), ("1.0", "-1.0"), "join"),
    ast.Mult: Rule(("a", "b"), ("b", "a"), "join"),
    ast.Div: Rule(("a", "b"), ("1.0 / b", "-out / b"), "float"),
    ast.Pow: Rule(("a", "b"), _POW, "join"),
    ast.Mod: Rule(("a", "b"), ("1.0", "-math.floor(a / b)"), "join"),
    ast.FloorDiv: Rule(("a", "b"), (None, None), "join"),
}

UNARY_RULES = {
    ast.USub: Rule(("x",), ("-1.0",), "join"),
    ast.UAdd: Rule(("x",), ("1.0",), "join"),
    ast.Not: Rule(("x",), (None,), "bool"),
}

CALL_RULES = {
    math.sin: _unary("math.cos(x)"),
    math.cos: _unary("-math.sin(x)"),
    math.tan: _unary("1.0 + out * out"),
    math.asin: _unary("1.0 / math.sqrt((1.0 - x) * (1.0 + x))"),
    math.acos: _unary("-1.0 / math.sqrt((1.0 - x) * (1.0 + x))"),
    math.atan: _unary("1.0 / (1.0 + x * x)"),
    math.sinh: _unary("math.cosh(x)"),
    math.cosh: _unary("math.sinh(x)"),
    math.tanh: _unary(_TANH),
    math.exp: _unary("out"),
    math.expm1: _unary("out + 1.0 if out > -0.5 else math.exp(x)"),
    math.log: _unary("1.0 / x"),
    math.log1p: _unary("1.0 / (1.0 + x)"),
    math.log10: _unary("1.0 / (x * 2.302585092994046)"),
    math.sqrt: _unary("0.5 / out"),
    math.erf: _unary("1.1283791670955126 * math.exp(-x * x)"),
    math.erfc: _unary("-1.1283791670955126 * math.exp(-x * x)"),
    math.fabs: _unary(_SIGN),
    math.floor: _unary(None, "int"),
    math.ceil: _unary(None, "int"),
    math.trunc: _unary(None, "int"),
    math.pow: Rule(("a", "b"), _POW),
    math.hypot: Rule(("a", "b"), ("a / out", "b / out")),
    math.atan2: Rule(("a", "b"), ("b / (a * a + b * b)", "-a / (a * a + b * b)")),
    abs: _unary(_SIGN, "join"),
    # min(a, b) is b only when b < a (ties and a NaN b give a, a NaN a gives a): the
    # adjoint follows the value
    min: Rule(("a", "b"), ("0.0 if b < a else 1.0", "1.0 if b < a else 0.0"), "join"),
    max: Rule(("a", "b"), ("0.0 if b > a else 1.0", "1.0 if b > a else 0.0"), "join"),
    float: _unary("1.0"),
    int: _unary(None, "int"),
    bool: _unary(None, "bool"),
    round: _unary(None, "int"),
    stop_gradient: _unary(None, "join"),
    np.sign: _unary(None),
    np.floor: _unary(None),
}

HELPER_RULES = {
    # integer helpers of vectorized code (sizes, strides, slice bounds) and the NaN-propagating
    # max/min whose result only seeds np.max's tie split: no derivatives flow through them
    vec.bcast: Rule(("n", "m"), (None, None), "int"),
    vec.stride: Rule(("n", "m"), (None, None), "int"),
    vec.index: Rule(("i", "n"), (None, None), "int"),
    vec.take_index: Rule(("i", "n"), (None, None), "int"),
    vec.same_length: Rule(("m", "n"), (None, None), "int"),
    vec.infer_size: Rule(("n", "m"), (None, None), "int"),
    vec.same_size: Rule(("n", "m"), (None, None), "int"),
    vec.slice_start: Rule("abcdef", (None,) * 6, "int"),
    vec.slice_len: Rule("abcdef", (None,) * 6, "int"),
    vec.nanmax: Rule(("a", "b"), (None, None)),
    vec.nanmin: Rule(("a", "b"), (None, None)),
}

ARRAY_OPS = {vec.mm: "mm", vec.mm_tn: "mm_tn", vec.mm_nt: "mm_nt", vec.mm_tt: "mm_tt",
             np.linspace: "linspace", np.arange: "arange"}
"""Operations kept at array level, with adjoints written in adjit/reverse/adjoint.py and
tangents in adjit/forward/tangent.py. np.linspace(a, b, n) is linear in a and b;
np.arange(start, stop, step) has elements start + k * step (its length is piecewise
constant: no derivative through stop)."""

ARRAY_OP_OPERANDS = {"mm": (0, 1), "mm_tn": (0, 1), "mm_nt": (0, 1), "mm_tt": (0, 1),
                     "linspace": (0, 1), "arange": (0, 2)}
"""The differentiable operand positions of each array-level operation (arange: start and
step; np.arange(stop) alone has none)."""

READS_OPERANDS = {"mm", "mm_tn", "mm_nt", "mm_tt"}
"""Array operations whose adjoints read their operands' values (the others' adjoints read
only the result's cotangent)."""

CONST_ARRAYS = {np.eye: "eye", np.identity: "eye"}
"""numpy functions making arrays of constants: nothing flows from their arguments."""


def rule_for_call(obj):
    """The rule for calling `obj`, or None when adjit has none."""
    try:
        return CALL_RULES.get(obj) or HELPER_RULES.get(obj)
    except TypeError:
        return None

ALLOCATORS = {
    np.zeros: "shape", np.ones: "shape", np.empty: "shape",
    np.zeros_like: "like", np.ones_like: "like", np.empty_like: "like",
}
"""numpy functions that make a new float array: from a shape, or like another array."""

INT_ALLOCATORS = {vec.empty_int: "i", vec.empty_bool: "b"}
"""Allocations of integer and boolean arrays (index arrays, mask coordinates): no
derivatives, ever."""

ARRAY_QUERIES = {len: "int"}
"""Functions that read an array's size, not its values."""


class _Table(dict):
    """A rule table whose lookups by unhashable objects (arrays) simply miss."""

    def __contains__(self, obj):
        try:
            return dict.__contains__(self, obj)
        except TypeError:
            return False


ALLOCATORS = _Table(ALLOCATORS)
INT_ALLOCATORS = _Table(INT_ALLOCATORS)
ARRAY_OPS = _Table(ARRAY_OPS)
CONST_ARRAYS = _Table(CONST_ARRAYS)
ARRAY_QUERIES = _Table(ARRAY_QUERIES)
