"""The program fuzzer in `make test`: a bounded profile of generated programs, plus the tests
that show the fuzzer itself can fail (its oracle is right, its grammar reaches every
construct, a planted wrong rule is caught and reduced). `make fuzz N=...` runs a campaign.
"""
import ast
import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings

import adjit
from adjit.rules import table

from fuzz import refad
from fuzz.campaign import numba_sampled
from fuzz.check import check, reduce
from fuzz.grammar import Program, programs

FUZZ_PROGRAMS = int(os.environ.get("ADJIT_FUZZ_PROGRAMS", "260"))
_CHECKED = {}       # (source, seed) -> outcome: hypothesis draws a third of the programs twice


@settings(max_examples=FUZZ_PROGRAMS, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs())
def test_generated_programs_match_the_reference(program):
    """A few hundred random programs: every argnums subset in the interpreter, 1 in 20 also
    compiled by numba, against the reference AD (to 1e-10 of the gradient's scale) and
    finite differences. The same programs every run (derandomized: an unrelated change
    cannot fail by drawing a new program); `make fuzz` explores new ones. A failure prints
    the program, shrunk by hypothesis; save it under tests/regressions/."""
    key = (program.source, program.seed)
    if key not in _CHECKED:
        _CHECKED[key] = check(program, jit=numba_sampled(program, 20))
    out = _CHECKED[key]
    assert out.status != "mismatch", f"{out.reason}\n{out.detail}"


# the oracle ------------------------------------------------------------------------------------
def _ref(source, *args):
    ns = dict(refad.NAMESPACE)
    exec(source, ns)  # noqa: S102
    return refad.value_and_grad(ns["f"], list(args))


def test_reference_stop_gradient_example():
    """x*x + stop_gradient(y)*x at (2, 3): d/dx = 2x + y = 7 (not the 4 of the seed Q&A)."""
    r = _ref("def f(x, y):\n    return x * x + stop_gradient(y) * x\n", 2.0, 3.0)
    assert (r.value, r.grads[0], r.grads[1]) == (10.0, 7.0, 0.0)


def test_reference_against_analytic_derivatives():
    src = ("def f(x, y):\n"
           "    s = 0.0\n"
           "    for i in range(3):\n"
           "        s = s + math.sin(x[i]) * y ** 2 / (1.0 + x[i] * x[i])\n"
           "    return math.log(1.0 + s * s) + math.atan2(y, x[0])\n")
    x, y = np.array([0.3, -0.8, 1.1]), 0.7
    r = _ref(src, x, y)
    s = sum(math.sin(t) * y ** 2 / (1 + t * t) for t in x)
    ds = 2 * s / (1 + s * s)
    dx = np.array([ds * y ** 2 * (math.cos(t) * (1 + t * t) - math.sin(t) * 2 * t)
                   / (1 + t * t) ** 2 for t in x])
    dx[0] += -y / (x[0] ** 2 + y ** 2)
    dy = ds * sum(math.sin(t) * 2 * y / (1 + t * t) for t in x) + x[0] / (x[0] ** 2 + y ** 2)
    np.testing.assert_allclose(r.grads[0], dx, rtol=1e-13)
    assert r.grads[1] == pytest.approx(dy, rel=1e-13)


def test_reference_counts_kinks():
    """Ties and abs at 0 are counted: finite differences are not compared there."""
    assert _ref("def f(x):\n    return max(x, 1.0) + abs(x - x)\n", 1.0).kinks == 2
    assert _ref("def f(x):\n    return max(x, 2.0)\n", 1.0).kinks == 0


def test_reference_vectorized_against_analytic_derivatives():
    """Broadcasting, slices, a matrix-vector product, a reshape and reductions on the
    reference's arrays of Vars, against the gradient written out by hand."""
    src = ("def f(x, w):\n"
           "    t = np.tanh(w @ x[1:3])\n"
           "    m = x[1:, None] * w + w[0]\n"
           "    return np.sum(t) + np.mean(m, axis=0).sum() + np.prod(x.reshape((2, 2))[1])\n")
    x = np.array([0.3, -0.8, 1.1, 0.5])
    w = np.array([[0.1, 0.2], [-0.3, 0.4], [0.5, -0.6]])
    r = _ref(src, x, w)
    real = {"np": np}
    exec(src, real)  # noqa: S102
    assert r.value == pytest.approx(real["f"](x, w), rel=1e-14)
    d = 1.0 - np.tanh(w @ x[1:3]) ** 2
    dx = np.zeros(4)
    dx[1:3] = w.T @ d
    dx[1:] += w.sum(axis=1) / 3.0       # sum over columns of the row means of x[i] * w[i, :]
    dx[2] += x[3]
    dx[3] += x[2]
    dw = np.outer(d, x[1:3]) + x[1:, None] / 3.0
    dw[0] += 1.0                        # w[0] broadcast to all three rows, each mean / 3
    np.testing.assert_allclose(r.grads[0], dx, rtol=1e-13)
    np.testing.assert_allclose(r.grads[1], dw, rtol=1e-13)


def test_reference_max_ties_split_equally():
    """np.max/np.min give each tied entry an equal share (a kink); np.maximum/np.minimum,
    like max/min, give a tie to the first argument."""
    x = np.array([1.0, 3.0, 3.0, -2.0])
    r = _ref("def f(x):\n    return np.max(x) + np.min(x[::-1] * 1.0)\n", x)
    np.testing.assert_array_equal(r.grads[0], [0.0, 0.5, 0.5, 1.0])
    assert r.kinks == 1
    r = _ref("def f(x):\n    return np.sum(np.maximum(x, 2.0 * x - 1.0))\n",
             np.array([1.0, 0.0, 3.0, 1.0]))
    np.testing.assert_array_equal(r.grads[0], [1.0, 1.0, 2.0, 1.0])     # a split: 1.5
    assert r.kinks == 2


def test_reference_slices_are_copies():
    """In adjit (and the reference) a slice read is a new array and slice assignment reads
    its whole right-hand side first; numpy's views would give other values here."""
    src = ("def f(x):\n"
           "    b = x[1:]\n"
           "    b[0] = 5.0\n"
           "    a = x.copy()\n"
           "    a[1:] = a[:-1] + a[1:]\n"
           "    return np.sum(x) + np.sum(a * a)\n")
    x = np.array([0.3, -0.8, 1.1, 0.5])
    r = _ref(src, x)
    a = x.copy()
    a[1:] = x[:-1] + x[1:]
    assert r.value == pytest.approx(np.sum(x) + np.sum(a * a), rel=1e-14)
    want = np.ones(4) + 2 * a
    want[:-1] += 2 * a[1:]
    np.testing.assert_allclose(r.grads[0], want, rtol=1e-14)


# the fuzzer can fail -----------------------------------------------------------------------------
PLANTED = Program("def f(x, y):\n"
                  "    s = 0.0\n"
                  "    for i in range(4):\n"
                  "        s += x[i] * y\n"
                  "        if s > 10.0:\n"
                  "            s = s * 0.5\n"
                  "    t = math.cos(s) + s * s\n"
                  "    return t + math.sin(y) * 2.0\n",
                  (("x", "array1"), ("y", "float")), 7)


def test_planted_wrong_rule_is_caught_and_reduced(monkeypatch):
    assert check(PLANTED).status == "ok"
    monkeypatch.setitem(table.CALL_RULES, math.sin,
                        table.Rule(("x",), ("math.cos(x) * (1.0 + 1e-9)",)))
    out = check(PLANTED)
    assert (out.status, out.reason) == ("mismatch", "gradient differs")
    small = reduce(PLANTED, jit=False)
    assert check(small).reason == "gradient differs"
    assert len(small.source) < len(PLANTED.source) / 2
    assert "math.sin(y)" in small.source and "for" not in small.source


PLANTED_VEC = Program("def f(x, y, w):\n"
                      "    a = np.sin(x[1:, None] * w) + y\n"
                      "    a[1:] += np.tanh(w[1:] @ w[1:].T)\n"
                      "    return np.sum(np.max(a, axis=1)) + np.mean(w @ x[::2])\n",
                      (("x", "array1"), ("y", "float"), ("w", "array2")), 11)


def test_planted_wrong_rule_is_caught_in_vectorized_code(monkeypatch):
    """A wrong rule reached only through np.sin inside a broadcast expression is caught
    (vectorized code is lowered to the same scalar rules)."""
    assert check(PLANTED_VEC).status == "ok"
    monkeypatch.setitem(table.CALL_RULES, math.sin,
                        table.Rule(("x",), ("math.cos(x) * (1.0 + 1e-9)",)))
    out = check(PLANTED_VEC)
    assert (out.status, out.reason) == ("mismatch", "gradient differs")


def test_planted_wrong_rule_is_caught_under_numba(monkeypatch):
    monkeypatch.setitem(table.CALL_RULES, math.cos,
                        table.Rule(("x",), ("-math.sin(x) * (1.0 + 1e-9)",)))
    out = check(PLANTED, jit=True, subsets=[])
    assert (out.status, out.reason) == ("mismatch", "gradient differs")
    assert "(numba)" in out.detail


def test_argument_mutation_is_caught(monkeypatch):
    """A gradient that wrote into its argument would be reported."""
    real = adjit.value_and_grad

    def mutating(f, argnums):
        g = real(f, argnums=argnums)

        def run(*args):
            out = g(*args)
            args[0][0] += 1.0
            return out
        return run
    monkeypatch.setattr(adjit, "value_and_grad", mutating)
    out = check(PLANTED, jit=True, subsets=[])
    assert (out.status, out.reason) == ("mismatch", "argument mutated")


@pytest.mark.parametrize("body, reason", [
    ("    return math.exp(800.0 + y * y) + x[0]\n", "program raised OverflowError"),
    ("    v = math.atan2(0.0 * y, 0.0 * x[1])\n    return y\n",
     "singular point (a partial derivative is inf or NaN)"),
    ("    return math.sin(1e9 * y)\n", "ill-conditioned (gradient scale > 1e8)"),
], ids=["overflow", "singular", "ill-conditioned"])
def test_discards_are_deterministic(body, reason):
    program = Program("def f(x, y):\n" + body, (("x", "array1"), ("y", "float")), 3)
    outcomes = [check(program) for _ in range(2)]
    assert [(o.status, o.reason) for o in outcomes] == [("discard", reason)] * 2


# the grammar ---------------------------------------------------------------------------------
REQUIRED = {
    "While", "Break", "Continue", "IfExp", "BoolOp", "Not", "AugAssign", "swap", "elif",
    "early return", "return in loop", "helper", "helper writes array", "stop_gradient",
    "np.zeros", "np.ones", "np.zeros_like", "copy", "2-D index", "shape unpacking",
    "range 3 args", "range(len)", "range(n)", "triangular range", "negative index", "flag",
    "array write", "argument write", "%", "//", "**", "abs", "min", "max", "float",
} | {f"math.{name}" for name in (
    "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "exp", "expm1",
    "log", "log1p", "log10", "sqrt", "erf", "erfc", "fabs", "floor", "atan2", "hypot", "pow")}
VECTORIZED = {
    # elementwise numpy, reductions (function and method, with and without axis), products
    "@", "np.dot", ".dot()", "np.outer", ".T", "np.transpose", ".reshape()", "np.reshape",
    "np.linalg.norm", ".sum()", ".mean()", ".max()", ".min()", ".prod()", "axis=",
    "positional axis", "np.amax", "np.amin",
    # slices, new axes, slice assignment, in-place array updates, views kept in names
    "slice read", "strided slice", "negative step", "new axis", "loop-bound slice",
    "slice assignment", "slice +=", "array +=", "view in a name", "slice reads target",
    # construction
    "np.array", "np.array 2-D", "np.concatenate", "np.concatenate axis=1", "np.stack",
    "np.stack axis=1", "np.full", "np.full_like", "np.linspace", "np.arange",
    # broadcasting between 1-D, 2-D and scalars
    "broadcast column", "array * scalar",
} | {f"np.{name}" for name in (
    "exp", "log", "log1p", "expm1", "log10", "sin", "cos", "tan", "tanh", "sinh", "cosh",
    "arcsin", "arccos", "arctan", "arctan2", "sqrt", "abs", "power", "square", "maximum",
    "minimum", "where", "clip", "sign", "floor", "negative", "sum", "mean", "prod", "max",
    "min")}


def _vector_features(node, seen):
    """The vectorized-numpy constructs of one node (see VECTORIZED)."""
    if isinstance(node, ast.Call):
        func = ast.unparse(node.func)
        if isinstance(node.func, ast.Attribute) and node.func.attr in (
                "sum", "mean", "max", "min", "prod", "dot", "reshape") and \
                not func.startswith("np."):
            seen.add(f".{node.func.attr}()")
        if any(kw.arg == "axis" for kw in node.keywords):
            seen.add("axis=")
            if func in ("np.concatenate", "np.stack") and \
                    ast.unparse(node.keywords[0].value) in ("1", "-1"):
                seen.add(f"{func} axis=1")
        if func in ("np.sum", "np.mean", "np.max", "np.min", "np.prod") and len(node.args) == 2 \
                or isinstance(node.func, ast.Attribute) and not func.startswith("np.") and \
                node.func.attr in ("sum", "mean", "max", "min", "prod") and node.args:
            seen.add("positional axis")
        if func == "np.array" and node.args and isinstance(node.args[0], ast.List) and \
                node.args[0].elts and isinstance(node.args[0].elts[0], ast.List):
            seen.add("np.array 2-D")
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.MatMult):
            seen.add("@")
        sides = (node.left, node.right)
        if any(isinstance(s, ast.Constant) or isinstance(s, ast.Name) and s.id[0] in "yzv"
               for s in sides) and \
                any(isinstance(s, ast.Subscript) and _slices(s) or
                    isinstance(s, ast.Name) and (s.id in ("x", "w") or s.id[0] == "a")
                    for s in sides):
            seen.add("array * scalar")
    if isinstance(node, ast.Attribute) and node.attr == "T":
        seen.add(".T")
    if isinstance(node, ast.Subscript):
        elts = _slices(node)
        if any(isinstance(e, ast.Slice) for e in elts):
            seen.add("slice assignment" if isinstance(node.ctx, ast.Store) else "slice read")
        for e in elts:
            if isinstance(e, ast.Slice) and e.step is not None:
                seen.add("negative step" if isinstance(e.step, ast.UnaryOp) else
                         "strided slice")
            if isinstance(e, ast.Slice) and any(isinstance(b, (ast.Name, ast.BinOp))
                                                for b in (e.lower, e.upper)):
                seen.add("loop-bound slice")
            if isinstance(e, ast.Constant) and e.value is None:
                seen.add("new axis")
                if isinstance(elts[0], ast.Slice):
                    seen.add("broadcast column")
    if isinstance(node, ast.AugAssign):
        if isinstance(node.target, ast.Subscript) and \
                any(isinstance(e, ast.Slice) for e in _slices(node.target)):
            seen.add("slice +=")
        if isinstance(node.target, ast.Name) and (node.target.id[0] == "a" or
                                                  node.target.id in ("x", "w")):
            seen.add("array +=")
    if isinstance(node, (ast.Assign, ast.AugAssign)):
        target = node.targets[0] if isinstance(node, ast.Assign) else node.target
        if isinstance(target, ast.Subscript) and \
                any(isinstance(e, ast.Slice) for e in _slices(target)):
            arr = ast.unparse(target.value)
            if any(isinstance(n, ast.Subscript) and ast.unparse(n.value) == arr and
                   _slices(n) for n in ast.walk(node.value)):
                seen.add("slice reads target")
        if isinstance(target, ast.Name) and isinstance(node.value, ast.Subscript) and \
                isinstance(node.value.value, ast.Name) and \
                any(isinstance(e, ast.Slice) for e in _slices(node.value)):
            seen.add("view in a name")


def _slices(sub):
    """The index elements of a subscript that slices or adds an axis (else [])."""
    elts = list(sub.slice.elts) if isinstance(sub.slice, ast.Tuple) else [sub.slice]
    if any(isinstance(e, ast.Slice) or isinstance(e, ast.Constant) and e.value is None
           for e in elts):
        return elts
    return []


def features(tree):
    seen = set()
    for node in ast.walk(tree):
        seen.add(type(node).__name__)
        _vector_features(node, seen)
        if isinstance(node, ast.Call):
            seen.add(ast.unparse(node.func))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            seen.add("Not")
        if isinstance(node, ast.BinOp):
            seen.add({ast.Mod: "%", ast.FloorDiv: "//", ast.Pow: "**"}.get(type(node.op), ""))
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Tuple):
            value = node.value
            if isinstance(value, ast.Attribute) and value.attr == "shape":
                seen.add("shape unpacking")
            elif isinstance(value, ast.Tuple):
                seen.add("swap")
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Subscript):
            seen.add("array write")
            if ast.unparse(node.targets[0].value) in ("x", "w"):
                seen.add("argument write")
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Compare) or \
                isinstance(node, ast.Assign) and isinstance(node.value, ast.BoolOp):
            seen.add("flag")
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple):
            seen.add("2-D index")
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and \
                isinstance(node.slice.value, int) and node.slice.value < 0:
            seen.add("negative index")
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.UnaryOp):
            seen.add("negative index")
        if isinstance(node, ast.Attribute) and node.attr == "copy":
            seen.add("copy")
        if isinstance(node, ast.If) and node.orelse and isinstance(node.orelse[0], ast.If):
            seen.add("elif")
        if isinstance(node, ast.For):
            call = node.iter
            if len(call.args) == 3:
                seen.add("range 3 args")
            text = ast.unparse(call)
            if "len(" in text:
                seen.add("range(len)")
            if text == "range(n)":
                seen.add("range(n)")
            if any(isinstance(a, ast.Name) and a.id != "n" for a in call.args):
                seen.add("triangular range")
            if any(isinstance(s, ast.Return) for s in ast.walk(node)):
                seen.add("return in loop")
        if isinstance(node, ast.If) and any(isinstance(s, ast.Return) for s in node.body):
            seen.add("early return")
        if isinstance(node, ast.FunctionDef) and node.name != "f":
            seen.add("helper")
            if any(isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Subscript)
                   for s in ast.walk(node)):
                seen.add("helper writes array")
    return seen


def test_grammar_reaches_every_construct():
    """300 drawn programs, without running them, contain every construct of the core
    language and of vectorized numpy the fuzzer is meant to cover (a grammar change cannot
    silently drop one)."""
    seen = set()

    @settings(max_examples=300, database=None, phases=[Phase.generate], derandomize=True,
              deadline=None, suppress_health_check=list(HealthCheck))
    @given(programs())
    def collect(program):
        seen.update(features(ast.parse(program.source)))
    collect()
    assert REQUIRED | VECTORIZED <= seen, sorted((REQUIRED | VECTORIZED) - seen)
