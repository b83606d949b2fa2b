"""Error messages: every failure at transformation time is an AdjitError that names the
function, its file and line, the construct, and what to write instead.

The user functions under test live at module level (adjit reads their source with inspect).
A line that an error must point at carries a trailing marker comment `# @tag`; `line_of(tag)`
finds it, so the expected line numbers survive edits to this file.
"""
import ast
import math
import os
import re

import numba
import numpy as np
import pytest

import adjit
from adjit import AdjitError, grad, value_and_grad
from adjit.normalize.check import describe, is_supported_class
from fd import check_value_and_grad

HERE = os.path.abspath(__file__)
FILE = os.path.basename(HERE)
with open(HERE, encoding="utf-8") as _fh:
    _LINES = _fh.read().splitlines()

G = 0.0                      # a module global that f_global tries to write
A1 = np.linspace(0.5, 1.5, 3)
A2 = np.ones((2, 2))
I1 = np.arange(3)            # int64 array


def line_of(tag):
    """The line of this file carrying the marker comment `# @tag`."""
    pattern = re.compile(r"# @" + re.escape(tag) + r"(\s|$)")
    hits = [i + 1 for i, text in enumerate(_LINES) if pattern.search(text)]
    assert len(hits) == 1, f"marker @{tag} found {len(hits)} times"
    return hits[0]


def error_of(fn, *args, argnums=0, transform=grad):
    """The AdjitError message raised by building and calling the gradient of fn.

    Anything other than an AdjitError (numba TypingError, TypeError, ...) propagates and
    fails the test, as does no error at all."""
    with pytest.raises(AdjitError) as info:
        transform(fn, argnums=argnums)(*args)
    return str(info.value)


def reported_line(msg, filename=FILE):
    m = re.search(re.escape(filename) + r", line (\d+)\b", msg)
    assert m, f"no '{filename}, line N' in message: {msg}"
    return int(m.group(1))


def check(msg, name, lines, construct, advice):
    """The message names `name`, this file, one of `lines` (tags or ints; None: any line), and
    contains the phrases in `construct` and `advice` (case-insensitive)."""
    assert name in msg, f"function name {name!r} missing: {msg}"
    got = reported_line(msg)
    if lines is not None:   # None: some line of this file, not checked further
        lines = [lines] if isinstance(lines, (str, int)) else lines
        expected = {line_of(t) if isinstance(t, str) else t for t in lines}
        assert got in expected, f"line {got} reported, expected one of {sorted(expected)}: {msg}"
    low = msg.lower()
    for words in (construct, advice):
        for w in ([words] if isinstance(words, str) else words):
            assert w.lower() in low, f"{w!r} missing: {msg}"


# ---------------------------------------------------------------------------------------------
# Unsupported syntax (the whitelist in adjit/normalize/check.py)
# ---------------------------------------------------------------------------------------------

def f_try(x):
    try:  # @try
        y = x * 2.0
    except ValueError:
        y = 0.0
    return y


def f_with(x):
    with np.errstate(all="ignore"):  # @with
        y = x * 2.0
    return y


def f_yield(x):
    yield x * 2.0  # @yield


def f_class(x):
    class Box:  # @class
        pass
    return x * 2.0


def f_lambda_inside(x):
    return (lambda t: t * 2.0)(x)  # @lambda_inside


def f_setcomp(x):
    s = len({x * i for i in range(3)})  # @setcomp
    return x * s


def f_dictcomp(x):
    d = {i: x * i for i in range(3)}  # @dictcomp
    return d[1]


def f_genexp(x):
    s = sum(x * i for i in range(3))  # @genexp
    return s


def f_global(x):
    global G  # @global
    G = x
    return x * 2.0


def _make_nonlocal():
    acc = 0.0

    def f_nonlocal(x):
        nonlocal acc  # @nonlocal
        acc = x
        return x * 2.0
    return f_nonlocal


f_nonlocal = _make_nonlocal()


def f_del(x):
    y = x * 2.0
    del y  # @del
    return x


def f_import(x):
    import cmath  # @import
    return x * 2.0


def f_import_from(x):
    from math import sin  # @import_from
    return sin(x)


def f_raise(x):
    if x < 0.0:
        raise ValueError("negative: %g" % x)  # @raise
    return x * 2.0


def f_assert(x):
    assert x > 0.0, "x must be positive"
    return x * 2.0


def f_walrus(x):
    if (y := x * 2.0) > 1.0:  # @walrus
        return y
    return x


def f_fstring(x):
    s = f"{x}"  # @fstring
    return x * 2.0


def f_list_literal(x):
    v = [[x], [x]]  # @list_literal
    return v[0][0]


def f_set_literal(x):
    v = {x, 2.0 * x}  # @set_literal
    return x


def f_dict_literal(x):
    v = {"a": x}  # @dict_literal
    return x


def f_match(x):
    match 1:  # @match
        case 1:
            return x
    return x * 2.0


def f_starred(a):
    return max(*a)  # @starred


def f_string_constant(x):
    s = "abc"  # @string_constant
    return x


SYNTAX_CASES = [
    # (function, tag, construct words, advice words)
    (f_try, "try", "try/except", "outside the differentiated function"),
    (f_with, "with", "with", "outside the differentiated function"),
    (f_yield, "yield", "yield", "return a float"),
    (f_class, "class", "class definition", "outside the differentiated function"),
    (f_lambda_inside, "lambda_inside", "lambda", "assign it to a name"),
    (f_setcomp, "setcomp", "set comprehension", "for i in range(n)"),
    (f_dictcomp, "dictcomp", "dict comprehension", "for i in range(n)"),
    (f_genexp, "genexp", "generator expression", "for i in range(n)"),
    (f_global, "global", "global", "argument"),
    (f_nonlocal, "nonlocal", "nonlocal", "argument"),
    (f_del, "del", "del", "remove the del"),
    (f_import, "import", "import", "module level"),
    (f_import_from, "import_from", "import", "module level"),
    (f_raise, "raise", "raise", "string literal"),
    (f_walrus, "walrus", ":=", "line of its own"),
    (f_fstring, "fstring", "f-string", "numbers"),
    (f_list_literal, "list_literal", "list literal", "np.array"),
    (f_set_literal, "set_literal", "set literal", "numpy array"),
    (f_dict_literal, "dict_literal", "dict literal", "numpy array"),
    (f_match, "match", "match", "if/elif/else"),
    (f_starred, "starred", "star-unpacking", "explicitly"),
    (f_string_constant, "string_constant", "'abc'", "numbers"),
]


def test_assert_is_checked_and_a_list_of_numbers_is_an_array():
    assert grad(f_assert)(1.5) == 2.0
    with pytest.raises(AssertionError):
        grad(f_assert)(-1.5)


@pytest.mark.parametrize("fn, tag, construct, advice", SYNTAX_CASES,
                         ids=[c[1] for c in SYNTAX_CASES])
def test_unsupported_syntax(fn, tag, construct, advice):
    arg = A1.copy() if tag == "starred" else 1.5
    msg = error_of(fn, arg)
    check(msg, fn.__name__, tag, [construct, "not supported"], advice)


def f_for_else(x):
    s = 0.0
    for i in range(3):  # @for_else
        s = s + x
    else:
        s = s * 2.0
    return s


def f_while_else(x):
    s = 0.0
    while s < 3.0:  # @while_else
        s = s + x
    else:
        s = s * 2.0
    return s


@pytest.mark.parametrize("fn, expected", [(f_for_else, 6.0), (f_while_else, 4.0)])
def test_loop_else_runs_where_no_break_ended_the_loop(fn, expected):
    """A loop's `else:` was refused; it runs as Python runs it (here no break: always)."""
    value, derivative = adjit.value_and_grad(fn)(1.5)
    assert value == fn(1.5) and derivative == expected


def f_for_over_array(a):
    s = 0.0
    for v in a:
        s = s + v * v
    return s


def f_for_over_shape(a):
    s = 0.0
    for n in a.shape:  # @for_shape
        s = s + n * a[0]
    return s


def test_for_over_an_array_works_and_over_a_shape_is_refused():
    np.testing.assert_allclose(grad(f_for_over_array)(A1.copy()), 2.0 * A1, rtol=1e-15)
    check(error_of(f_for_over_shape, A1.copy()), "f_for_over_shape", "for_shape",
          "a for loop over something that is not an array or range", "range(len(x))")


# bitwise operators: numba takes integers and booleans (read as operator.and_, ...: they
# carry no derivative); floats are refused naming the operator
def f_bitand(x, n):
    k = n & 1  # @bitand
    return x * k


def f_bitor(x, n):
    k = n | 1  # @bitor
    return x * k


def f_bitxor(x, n):
    k = n ^ 1  # @bitxor
    return x * k


def f_lshift(x, n):
    k = n << 1  # @lshift
    return x * k


def f_rshift(x, n):
    k = n >> 1  # @rshift
    return x * k


def f_invert(x, n):
    k = ~n  # @invert
    return x * k


def f_float_bitand(x, n):
    k = x & n  # @float_bitand
    return x * k


# Operator nodes (ast.BitAnd, ast.Is, ...) carry no line number of their own: the message
# must still give the line of the expression that uses the operator.

BITWISE_CASES = [(f_bitand, 3 & 1), (f_bitor, 3 | 1), (f_bitxor, 3 ^ 1), (f_lshift, 3 << 1),
                 (f_rshift, 3 >> 1), (f_invert, ~3)]


@pytest.mark.parametrize("fn, k", BITWISE_CASES, ids=[c[0].__name__ for c in BITWISE_CASES])
def test_bitwise_operators_on_integers(fn, k):
    assert grad(fn)(1.5, 3) == k == numba.njit(fn)(1.0, 3)


def test_bitwise_operators_on_floats_are_refused():
    check(error_of(f_float_bitand, 1.5, 3), "f_float_bitand", "float_bitand",
          "the & operator on a float and an integer", "compare first")


def f_is(x, y):
    if x is y:  # @is
        return x
    return y


def f_is_not(x, y):
    if x is not y:  # @is_not
        return x
    return y


def f_in(x, a):
    if x in a:  # @in
        return x
    return 2.0 * x


def f_not_in(x, a):
    if x not in a:  # @not_in
        return x
    return 2.0 * x


COMPARE_CASES = [
    (f_is, "is", 2.0, "`is`", "=="),
    (f_is_not, "is_not", 2.0, "`is not`", "=="),
    (f_in, "in", A1, "`in`", "loop"),
    (f_not_in, "not_in", A1, "`not in`", "loop"),
]


@pytest.mark.parametrize("fn, tag, second, construct, advice", COMPARE_CASES,
                         ids=[c[1] for c in COMPARE_CASES])
def test_is_and_in_comparisons(fn, tag, second, construct, advice):
    check(error_of(fn, 1.5, second), fn.__name__, tag, construct, advice)


def _helper_with_try(t):
    try:  # @helper_try
        return t * 2.0
    except ZeroDivisionError:
        return 0.0


def f_calls_helper_with_try(x):
    return _helper_with_try(x) + 1.0


def test_unsupported_syntax_in_a_helper_names_the_helper():
    msg = error_of(f_calls_helper_with_try, 1.5)
    check(msg, "_helper_with_try", "helper_try", "try/except", "outside")


# ---------------------------------------------------------------------------------------------
# The ast whitelist covers every node class
# ---------------------------------------------------------------------------------------------

def _node_classes(*bases):
    return sorted((c for c in vars(ast).values()
                   if isinstance(c, type) and issubclass(c, bases) and c not in bases),
                  key=lambda c: c.__name__)


@pytest.mark.parametrize("cls", _node_classes(ast.stmt, ast.expr), ids=lambda c: c.__name__)
def test_every_stmt_and_expr_class_is_supported_or_described(cls):
    if is_supported_class(cls):
        return
    described = describe(cls)
    assert isinstance(described, tuple) and len(described) == 2
    construct, advice = described
    assert isinstance(construct, str) and construct.strip()
    assert isinstance(advice, str) and advice.strip()


@pytest.mark.parametrize("cls", _node_classes(ast.operator, ast.unaryop, ast.cmpop, ast.boolop),
                         ids=lambda c: c.__name__)
def test_every_operator_class_is_supported_or_described(cls):
    if is_supported_class(cls):
        return
    construct, advice = describe(cls)
    assert construct.strip() and advice.strip()


# (Recursion: adjit repeats a function that calls itself and raises RecursionError deeper,
# tests/test_recursion.py.)


# ---------------------------------------------------------------------------------------------
# Calls adjit has no derivative rule for, and calls it cannot take
# ---------------------------------------------------------------------------------------------

def f_frexp(x):
    return math.frexp(x)[0]  # @frexp


def f_print(x):
    print(x)  # @print
    return x * 2.0


def f_np_no_rule(a):
    b = np.sum(np.resize(a, 6))  # @np_no_rule
    return b * 2.0


def f_math_keyword(x):
    return math.exp(x=x)  # @math_keyword


def _helper_two(t, u):
    return t * u


def f_helper_wrong_arity(x):
    return _helper_two(x)  # @helper_arity


@pytest.mark.parametrize("fn, tag, arg, construct", [
    (f_frexp, "frexp", 1.5, "math.frexp"),
    (f_np_no_rule, "np_no_rule", A1, "np.resize"),
])
def test_call_without_derivative_rule(fn, tag, arg, construct):
    """A call with no rule is called as it is; a derivative that would flow through it is
    refused by name."""
    check(error_of(fn, arg), fn.__name__, tag, [construct, "no derivative rule",
                                                "a derivative would have to flow through"],
          "stop_gradient(...); otherwise write it as python/@njit code")


def test_a_call_for_its_effect_on_no_float_array_is_kept(capsys):
    assert grad(f_print)(1.5) == 2.0
    assert capsys.readouterr().out.strip() == "1.5"


def test_keyword_arguments_to_math_functions():
    check(error_of(f_math_keyword, 1.5), "f_math_keyword", "math_keyword",
          ["keyword arguments", "math.exp"], "by position")


def test_helper_called_with_wrong_number_of_arguments():
    check(error_of(f_helper_wrong_arity, 1.5), "f_helper_wrong_arity", "helper_arity",
          ["_helper_two", "wrong arguments"], "pass 2 argument(s): t, u")


# ---------------------------------------------------------------------------------------------
# Results and arguments
# ---------------------------------------------------------------------------------------------

def f_returns_int(x, n):  # @ret_int_def
    y = x * 2.0
    return n  # @ret_int


def f_returns_bool(x):  # @ret_bool_def
    return x > 0.0  # @ret_bool


def f_returns_array(a):  # @ret_array_def
    return a  # @ret_array


@pytest.mark.parametrize("fn, tag, args, what", [
    (f_returns_int, "ret_int", (1.5, 3), "returns a"),
    (f_returns_bool, "ret_bool", (1.5,), "bool"),
])
@pytest.mark.parametrize("transform", [grad, value_and_grad], ids=["grad", "value_and_grad"])
def test_non_float_result(fn, tag, args, what, transform):
    msg = error_of(fn, *args, transform=transform)
    check(msg, fn.__name__, [tag, tag + "_def"], [what, "not a float"], "return a float")


@pytest.mark.parametrize("transform", [grad, value_and_grad], ids=["grad", "value_and_grad"])
def test_array_result_points_to_vjp(transform):
    msg = error_of(f_returns_array, A1, transform=transform)
    check(msg, "f_returns_array", ["ret_array", "ret_array_def"],
          "of a function that returns an array", ["adjit.vjp", "adjit.jvp", "np.sum"])


def f_scale(x, y):  # @scale_def
    return x * y


def f_sum(a):  # @sum_def
    s = 0.0
    for i in range(len(a)):
        s = s + a[i] * a[i]
    return s


@pytest.mark.parametrize("fn, args, argnums, param", [
    (f_scale, (2, 1.5), 0, "x"),
    (f_scale, (1.5, True), 1, "y"),
    (f_scale, (1.5, np.int64(2)), (0, 1), "y"),
    (f_sum, (I1,), 0, "a"),
], ids=["python-int", "bool", "int64-scalar", "int64-array"])
def test_integer_or_boolean_argument_in_argnums(fn, args, argnums, param):
    msg = error_of(fn, *args, argnums=argnums)
    tag = fn.__name__[2:] + "_def"
    check(msg, fn.__name__, tag, [f"argument '{param}'", "carries no derivative"],
          ["pass a float", "leave the argument out of argnums"])


@pytest.mark.parametrize("value, typename", [({"a": 1.0}, "dict"), (object(), "object")],
                         ids=["dict", "object"])
@pytest.mark.parametrize("argnums", [0, 1], ids=["differentiated", "other"])
def test_argument_numba_cannot_type(value, typename, argnums):
    """A value numba has no type for is refused before numba sees it, differentiated or
    not."""
    msg = error_of(f_scale, 1.5, value, argnums=argnums)
    check(msg, "f_scale", "scale_def", [f"argument 'y' is a {typename}"],
          ["pass a float or np.array(...)"])


@pytest.mark.parametrize("value", ["text", (1, 2), None], ids=["str", "tuple-of-ints", "None"])
def test_non_number_in_argnums(value):
    msg = error_of(f_scale, 1.5, value, argnums=1)
    check(msg, "f_scale", "scale_def", ["argument 'y' in argnums", "carries no derivative"],
          ["pass a float"])


@pytest.mark.parametrize("value, element", [([1.0, 2.0], "of float64"),
                                            ([(1.0, 5.0), (2.0, 105.0)], "of UniTuple")],
                         ids=["numbers", "tuples"])
@pytest.mark.parametrize("argnums", [0, 1], ids=["differentiated", "other"])
def test_a_list_argument_is_refused_naming_the_array_to_pass(value, element, argnums):
    """A list passed in (numba's reflected list) is refused up front, differentiated or
    not: adjit reads the lists a function builds, and typed a list argument as its
    element (a loop over it was 'not an array')."""
    msg = error_of(f_scale, 1.5, value, argnums=argnums)
    check(msg, "f_scale", "scale_def", ["argument 'y' is a list", element],
          ["pass an array: np.array(y)"] +
          (["a list of tuples: a 2-D array", "a tuple of tuples"] if "Tuple" in element
           else ["a tuple of numbers"]))


def present_value(rate, flows):
    """FinancePy's npv loop: flows as (time, amount) pairs."""
    pv = 0.0
    for t, cf in flows:
        pv += cf / (1.0 + rate) ** t
    return pv


def test_the_forms_a_list_refusal_advises_compute_the_derivative():
    flows = [(0.5, 4.0), (1.0, 4.0), (1.5, 104.0)]
    rate = 0.04
    exact = sum(-t * cf / (1.0 + rate) ** (t + 1.0) for t, cf in flows)
    assert grad(present_value)(rate, tuple(flows)) == pytest.approx(exact, rel=1e-13)

    def rows(rate, flows):      # the 2-D array form
        pv = 0.0
        for i in range(flows.shape[0]):
            pv += flows[i, 1] / (1.0 + rate) ** flows[i, 0]
        return pv
    assert grad(rows)(rate, np.array(flows)) == pytest.approx(exact, rel=1e-13)
    h = 1e-6
    fd = (present_value(rate + h, flows) - present_value(rate - h, flows)) / (2 * h)
    assert exact == pytest.approx(fd, rel=1e-7)


@pytest.mark.parametrize("value, what", [
    (1 + 2j, "complex"), (np.ones(2, np.complex128), "complex"),
    (np.ones(2, np.longdouble), "float128"), (np.ones(2, "datetime64[s]"), "datetime64"),
], ids=["complex", "complex-array", "longdouble", "datetime"])
@pytest.mark.parametrize("argnums", [0, 1], ids=["differentiated", "other"])
def test_unsupported_dtypes_are_named(value, what, argnums):
    """Values adjit cannot differentiate or numba cannot compile are refused up front, with
    the argument's name, whether or not they are differentiated."""
    msg = error_of(f_scale, 1.5, value, argnums=argnums)
    check(msg, "f_scale", "scale_def", ["argument 'y'", what], ["float64"])


def shape_argument(x, shape):
    a = np.zeros(shape)
    a[0] = x
    return a[0] * x


def test_non_number_outside_argnums_is_fine():
    """A tuple shape (or None, a string) that is not differentiated passes through."""
    assert grad(shape_argument)(1.5, (3,)) == 3.0


def test_integer_argument_outside_argnums_is_fine():
    assert grad(f_scale, argnums=1)(2, 1.5) == 2.0


@pytest.mark.parametrize("argnums", [2, -3, (0, 2)])
def test_argnums_out_of_range(argnums):
    with pytest.raises(AdjitError) as info:
        grad(f_scale, argnums=argnums)
    check(str(info.value), "f_scale", "scale_def", ["argnums", "out of range"], "x, y")


@pytest.mark.parametrize("argnums", [
    (0, 0),
    (0, -2),
])
def test_argnums_duplicated(argnums):
    with pytest.raises(AdjitError) as info:
        grad(f_scale, argnums=argnums)
    check(str(info.value), "f_scale", "scale_def", ["argnums", "twice"], "once")


@pytest.mark.parametrize("argnums", [
    1.5,
    None,
    "0",
    (0, 1.0),
    True,
    (),
], ids=["float", "None", "str", "tuple-with-float", "bool", "empty"])
def test_argnums_not_an_int(argnums):
    with pytest.raises(AdjitError) as info:
        grad(f_scale, argnums=argnums)
    check(str(info.value), "f_scale", "scale_def", "argnums", "int")


@pytest.mark.parametrize("args", [(1.5,), (1.5, 2.0, 3.0)], ids=["too-few", "too-many"])
def test_wrong_number_of_call_arguments(args):
    msg = error_of(f_scale, *args)
    check(msg, "f_scale", "scale_def", f"called with {len(args)} argument(s)", "takes 2: x, y")


def test_call_with_keyword_arguments():
    assert grad(f_scale)(1.5, y=2.0) == grad(f_scale)(1.5, 2.0)
    with pytest.raises(AdjitError) as info:
        grad(f_scale)(1.5, 2.0, z=2.0)
    assert "f_scale" in str(info.value) and "z" in str(info.value)


# ---------------------------------------------------------------------------------------------
# Functions adjit cannot read
# ---------------------------------------------------------------------------------------------

f_lambda = lambda x: x * x  # @lambda_arg  # noqa: E731

_exec_ns = {}
exec("def f_exec(x):\n    return x * x\n", _exec_ns)  # noqa: S102
exec("f_exec_lambda = lambda x: x * x\n", _exec_ns)  # noqa: S102
f_exec = _exec_ns["f_exec"]


def test_lambda_passed_to_grad():
    """A lambda is read from its line (it was refused); one with no file to read it from
    is refused, saying what to write."""
    assert grad(f_lambda)(1.5) == 3.0
    msg = error_of(_exec_ns["f_exec_lambda"], 1.5)
    assert "<lambda>" in msg and reported_line(msg, "<string>") == 1
    assert "cannot single out" in msg and "define the function with `def`" in msg.lower()


def test_function_made_with_exec():
    msg = error_of(f_exec, 1.5)
    assert "f_exec" in msg
    assert reported_line(msg, "<string>") == 1
    assert "source cannot be read" in msg and "define the function in a file" in msg.lower()


@pytest.mark.parametrize("fn, name", [(math.sin, "sin"), (np.sin, "sin"), (print, "print"),
                                      (abs, "abs")],
                         ids=["math.sin", "np.sin", "print", "abs"])
def test_builtin_passed_to_grad(fn, name):
    # builtins have no file or line; the message names the object and says what to pass
    with pytest.raises(AdjitError) as info:
        grad(fn)(1.5)
    msg = str(info.value)
    assert repr(name) in msg and "not a Python function" in msg
    assert "defined with `def`" in msg


# ---------------------------------------------------------------------------------------------
# Returns
# ---------------------------------------------------------------------------------------------

def f_falls_off(x):  # @falls_off_def
    if x > 0.0:  # @falls_off_if
        return x * 2.0  # @falls_off_return


def f_no_return(x):  # @no_return_def
    y = x * 2.0


def f_bare_return(x):
    y = x * 2.0
    return  # @bare_return


def test_path_falls_off_the_end():
    msg = error_of(f_falls_off, 1.5)
    check(msg, "f_falls_off", ["falls_off_def", "falls_off_if", "falls_off_return"],
          "without `return`", "return a value on every path")


def test_no_return_at_all():
    check(error_of(f_no_return, 1.5), "f_no_return", "no_return_def", "returns nothing",
          "return the float")


def test_bare_return():
    check(error_of(f_bare_return, 1.5), "f_bare_return", "bare_return",
          "`return` without a value", "return a number")


# ---------------------------------------------------------------------------------------------
# Arrays
# ---------------------------------------------------------------------------------------------

def f_alias(a):
    b = a
    b[1] = b[0] * 3.0      # a write through one name is seen through both (numpy)
    return b[0] + a[1] * a[2]


def test_plain_rebinding_is_an_alias():
    """`b = a` makes two names for one array, as in numpy: the write through b changes a."""
    x = np.array([0.5, -1.0, 2.0])
    v, g = adjit.value_and_grad(f_alias)(x.copy())
    assert v == 0.5 + 1.5 * 2.0
    np.testing.assert_allclose(g, [1.0 + 3.0 * 2.0, 0.0, 1.5])


def f_reassign(a):
    b = np.zeros(3)  # @reassign_first
    w = b[1:]
    if a[0] > 0.0:
        b = np.ones(3)  # @reassign
    return b[0] + b[1] + w[0]


def f_reassign_param(a):
    if a[0] > 0.0:
        a = np.zeros(3)
    a[1] = 1.0  # @reassign_param
    return a[0]


def f_reassign_in_loop(a):
    b = np.zeros(3)
    s = 0.0
    for i in range(2):
        b[0] = a[0] * b[0] + 1.0
        s = s + b[0]
        b = np.ones(3)
    return s


def f_alias_in_branch(a):
    b = np.zeros(3)  # @alias_branch_first
    w = b[1:]
    if a[0] > 0.0:
        b = a  # @alias_branch
    return b[0] + w[0]  # @alias_branch_use


def f_rebound_on_one_path(a):
    b = np.zeros(3)
    if a[0] > 0.0:
        b = np.ones(3) * a[1]
    b[0] = a[0]
    return b[0] + b[1]


def f_argument_rebound_on_one_path(a):
    if a[0] > 0.0:
        a = np.zeros(3)
    return a[0]


def f_alias_on_one_path(a):
    b = np.zeros(3)
    if a[0] > 0.0:
        b = a
    return b[0]


@pytest.mark.parametrize("fn", [f_rebound_on_one_path, f_argument_rebound_on_one_path,
                                f_alias_on_one_path])
def test_an_array_rebound_on_one_path_is_the_array_of_the_path_taken(fn):
    """Once refused as reassigned or bound to different arrays: the array of the path taken
    is copied into one array after the `if` (tests/test_branch_arrays.py has more)."""
    for a in (A1, -A1):
        check_value_and_grad(fn, (a.copy(),))


_REASSIGNED = ("array variable '{}' is reassigned", "assign each array variable once")


@pytest.mark.parametrize("fn, lines, construct, advice", [
    # a rebinding whose definitions reach a common use (branch, loop); the message may point
    # at the first definition or at the rebinding
    (f_reassign, ["reassign_first", "reassign"], _REASSIGNED[0].format("b"), _REASSIGNED[1]),
    (f_reassign_param, "reassign_param", ["a write into 'a' after an `if`",
                                          "keeps the argument"], "a = a.copy()"),
    (f_alias_in_branch, "alias_branch_use", ["'b' is bound to different arrays",
                                             "paths of an `if`"], "copy"),
], ids=["branch", "param-in-branch", "alias-in-branch"])
def test_array_reassignment_and_aliasing(fn, lines, construct, advice):
    check(error_of(fn, A1.copy()), fn.__name__, lines, construct, advice)


def test_rebinding_in_a_loop_updates_the_array_in_place():
    """`b = np.ones(3)` in the loop: b's array gets the new values (nothing else sees it)."""
    assert grad(f_reassign_in_loop)(A1.copy()).tolist() == [1.0, 0.0, 0.0]


def f_rebind_straight(a):
    b = np.zeros(3)
    b[0] = a[0]
    b = np.ones(3)
    return b[0] + a[1]


def test_straight_line_rebinding_is_not_an_error():
    """Rebinding whose definitions never meet is two variables that share a name."""
    np.testing.assert_allclose(grad(f_rebind_straight)(A1.copy()), [0.0, 1.0, 0.0])


def f_2d_one_index(m):
    s = m[0]
    return np.sum(s * 2.0)


def f_1d_two_indices(a):
    s = a[0, 0]  # @two_indices
    return s * 2.0


def test_2d_array_indexed_with_one_index_is_a_row():
    expected = np.zeros_like(A2)
    expected[0] = 2.0
    np.testing.assert_allclose(grad(f_2d_one_index)(A2.copy()), expected)


def test_1d_array_indexed_with_two_indices():
    check(error_of(f_1d_two_indices, A1.copy()), "f_1d_two_indices", "two_indices",
          "indexing a 1-D array with 2 indices", "at most one")


def f_whole_array_math(a):
    b = a * 2.0
    return b[0]


def test_whole_array_arithmetic_is_elementwise():
    expected = np.zeros_like(A1)
    expected[0] = 2.0
    np.testing.assert_allclose(grad(f_whole_array_math)(A1.copy()), expected)


# ---------------------------------------------------------------------------------------------
# Every error is an AdjitError, raised no later than the first call
# ---------------------------------------------------------------------------------------------

def test_adjit_error_is_an_exception_subclass():
    assert issubclass(AdjitError, Exception)
    assert adjit.AdjitError is AdjitError


def test_error_is_raised_again_on_a_second_call():
    g = grad(f_try)
    for _ in range(2):
        with pytest.raises(AdjitError, match="try/except"):
            g(1.5)


def _cube(x):
    return x * x * x


_D_CUBE = adjit.grad(_cube)


_VG_CUBE = adjit.value_and_grad(_cube)


def _uses_a_gradient(x):
    return adjit.stop_gradient(_D_CUBE(x)) * x


def _uses_value_and_grad(x):
    return adjit.stop_gradient(_VG_CUBE(x)[1]) * x


def test_gradients_of_gradients_are_right_or_refused():
    """Both once silently differentiated the primal instead (a helper's find): grad(grad f)
    gave f', and a gradient called inside differentiated code was inlined as f. Now
    grad(grad(f)) is f'' (tests/test_higher.py), a gradient called inside differentiated
    code is the gradient (its derivative the Hessian, tests/test_higher.py), and other
    derivatives of gradients and other derivative objects called inside are refused."""
    assert adjit.grad(_D_CUBE)(3.0) == 18.0           # d^2/dx^2 x^3 = 6 x
    with pytest.raises(AdjitError, match="only as grad, value_and_grad, vjp or jvp"):
        adjit.grad(adjit.value_and_grad(_cube))
    value, g = adjit.value_and_grad(_uses_a_gradient)(3.0)
    assert (value, g) == (81.0, 27.0)                 # stop_gradient(3 x^2) * x at x = 3
    with pytest.raises(AdjitError, match="a call to the value_and_grad object `_cube`") as info:
        adjit.value_and_grad(_uses_value_and_grad)(3.0)
    assert "pass their values in" in str(info.value)


def test_a_function_made_by_exec_is_refused_not_mistaken_for_its_neighbour(tmp_path):
    """A function exec made in a script has no source file; adjit's lookup for functions a
    script ships by value (Dask) read the script at the function's line instead and
    differentiated the function defined there (g: 3.0 where f's derivative is 4.0). Also
    compiled under the script's own name, where Python's own lookup finds g."""
    script = tmp_path / "script.py"
    script.write_text("import numpy as np\n\ndef g(x):\n    return 3.0 * x\n")
    made = "\n\ndef f(x):\n    return x * x\n"         # f's first line is 3, as g's
    ns = {"__name__": "__main__", "__file__": str(script)}
    exec(made, ns)  # noqa: S102
    with pytest.raises(adjit.AdjitError, match="its source cannot be read"):
        grad(ns["f"])(2.0)
    exec(compile(made, str(script), "exec"), ns)  # noqa: S102
    with pytest.raises(adjit.AdjitError, match="holds `def g`, not `def f`"):
        grad(ns["f"])(2.0)


@numba.njit
def _fill_triple(a, o):
    for i in range(a.shape[0]):
        o[i] = a[i] * 3.0


def _fill_an_element(x):
    out = np.zeros(6)
    for j in range(1):
        _fill_triple(x, out[j])
    return np.sum(out)


def test_a_store_into_an_element_passed_to_a_helper_is_refused():
    """numba refuses `o[i] = ...` on a number; adjit once lost the store (gradient 0)."""
    with pytest.raises(adjit.AdjitError, match="_fill_triple.*an indexed store into a float"):
        adjit.grad(_fill_an_element)(np.arange(6.0))


def slow_to_build(x, w):
    """A function whose gradient takes numba a while to compile."""
    s = 0.0
    for i in range(x.shape[0]):
        a = math.tanh(x[i] * w[0] + w[1])
        b = math.exp(-a * a) * w[2]
        c = math.log1p(b * b) + math.sin(a - b)
        s += a * b + c * math.cos(w[3] * c)
    return s


def test_an_exception_the_users_signal_handler_raises_as_the_gradient_builds_is_theirs():
    """A timeout the user's own signal handler raises while adjit builds (or numba compiles)
    is passed on as raised: it was reported as an internal adjit error, a bug to report."""
    signal = pytest.importorskip("signal")
    if not hasattr(signal, "setitimer"):
        pytest.skip("no interval timers on this platform")

    def on_alarm(signum, frame):
        raise TimeoutError("the user's time limit")
    before = signal.signal(signal.SIGALRM, on_alarm)
    raised = None
    try:
        # every 10 ms until the build stops (a timeout some probe of adjit's catches as a
        # failure to type a call is followed by the next one)
        signal.setitimer(signal.ITIMER_REAL, 0.01, 0.01)
        grad(slow_to_build, argnums=(0, 1))(np.linspace(0.1, 1.0, 5), np.ones(4))
    except Exception as exc:    # noqa: BLE001 - what the build raised, whatever it is
        raised = exc
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)
    assert isinstance(raised, TimeoutError) and str(raised) == "the user's time limit", raised
    # the gradient builds afterwards, and is exact
    x, w = np.linspace(0.1, 1.0, 5), np.array([0.7, -0.2, 1.3, 0.4])
    check_value_and_grad(slow_to_build, (x, w), (0, 1))
