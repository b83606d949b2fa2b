"""The generic harness over the registry of primitives (adjit/rules): every function adjit
differentiates on numbers or elementwise is checked the moment it is added, with arguments
drawn from the domain its entry declares: reverse mode and forward mode against central
finite differences, and against each other (the dot-product test <grad, v> == jvp(v)).

For each entry a small program is written into a module (numpy functions applied to arrays,
math functions and builtins in a loop over elements) and transformed for its argument
types; the generated code runs in the Python interpreter, which makes the harness cheap,
and one program calling every entry is compiled by numba to show the generated calls
compile. The array-level functions (cumsum, diff, trace, ...) are tested below it.
"""
import importlib.util
import math

import numba
import numpy as np
import pytest

import adjit
from adjit.api import _Mode
from adjit.rules import REGISTRY
from adjit.transform import build

from fd import fd_grad

N = 4


def _entries():
    from adjit.api_stop import stop_gradient
    out = []
    for e in REGISTRY.family("scalar", "elementwise"):
        if e.obj is stop_gradient:
            continue            # tested by tests/test_stop_gradient.py
        out.append(e)
    return out


ENTRIES = _entries()


def _call(e, names):
    if e.obj is np.where:
        return f"np.where({names[0]} > 0.0, {names[1]}, {names[2]})"
    if e.name == "type(x)(v)":                  # written as users write it
        return f"type({names[0]})({names[1]})"
    if e.name == "vec.norm_root":               # the root of np.linalg.norm
        return f"np.linalg.norm(np.array([{names[0]}, 0.5]))"
    if e.family == "scalar" and e.rule is not None and e.rule.result in ("int", "bool"):
        return f"float({e.name}({', '.join(names)}))"
    return f"{e.name}({', '.join(names)})"


def _arity(e):
    return e.arity if e.family == "elementwise" else len(e.rule.params)


def _int_positions(e):
    return {j for j, (lo, _) in enumerate(e.domain or ()) if isinstance(lo, int)}


# conversions that round, whose derivative is taken as 1: finite differences see the steps of
# the rounding, so their oracle is the same program converting without rounding
UNROUNDED = {"np.float32": "np.float64"}


def _source(e, k):
    if e.name in UNROUNDED:
        rounded = _source_of(e, k)
        return rounded + "\n\n" + rounded.replace(e.name, UNROUNDED[e.name]).replace(
            f"def f{k}(", f"def oracle{k}(")
    return _source_of(e, k)


def _source_of(e, k):
    n = _arity(e)
    xs = [f"x{j}" for j in range(n)]
    if e.family == "elementwise":
        body = f"    return np.sum(w * {_call(e, xs)})\n"
    else:       # an integer element as a Python int (math.ldexp takes no numpy integer)
        items = [f"int(x{j}[i])" if j in _int_positions(e) else f"x{j}[i]" for j in range(n)]
        body = ("    s = 0.0\n"
                "    for i in range(w.shape[0]):\n"
                f"        s += w[i] * {_call(e, items)}\n"
                "    return s\n")
    return f"def f{k}({', '.join(xs)}, w):\n{body}"


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    """One module with a function per registry entry (adjit reads the source of functions
    from files)."""
    path = tmp_path_factory.mktemp("registry") / "registry_programs.py"
    path.write_text("import math\nimport operator\nimport numpy as np\nimport scipy.special"
                    "\n\n\n" +
                    "\n\n".join(_source(e, k) for k, e in enumerate(ENTRIES)))
    spec = importlib.util.spec_from_file_location("registry_programs", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _arguments(e, rng):
    domain = list(e.domain or ((-2.0, 2.0),))
    n = _arity(e)
    domain += [domain[-1]] * (n - len(domain))
    # an int domain is an integer argument (math.ldexp's exponent): drawn as ints, and not
    # differentiated
    xs = [rng.integers(lo, hi, N) if isinstance(lo, int) else rng.uniform(lo, hi, N)
          for lo, hi in domain[:n]]
    return xs + [rng.normal(size=N)]


def _float_positions(args, n):
    return tuple(j for j in range(n) if args[j].dtype.kind == "f")


_VJP = _Mode("value_and_grad", True, False)
_JVP = _Mode("jvp", True, False, "tangent")


@pytest.mark.parametrize("k", range(len(ENTRIES)), ids=[e.name for e in ENTRIES])
def test_entry_in_both_modes(programs, k):
    e = ENTRIES[k]
    f = getattr(programs, f"f{k}")
    rng = np.random.default_rng(k)
    args = _arguments(e, rng)
    n = _arity(e)
    argnums = _float_positions(args, n)
    types = tuple(numba.typeof(a) for a in args)
    value, grads = build(f, argnums, types, _VJP, jit=False).pyfunc(*args)
    assert value == pytest.approx(f(*args), rel=1e-13, abs=1e-13)
    oracle = getattr(programs, f"oracle{k}", f)
    for j, g in zip(argnums, grads):
        np.testing.assert_allclose(g, fd_grad(oracle, args, j), rtol=1e-5, atol=1e-6,
                                   err_msg=f"{e.name}: reverse mode, argument {j}")
    tangents = tuple(rng.normal(size=N) for _ in argnums)
    jvp = build(f, argnums, types + (numba.typeof(tangents),), _JVP, jit=False).pyfunc
    value2, tangent = jvp(*args, tangents)
    assert value2 == pytest.approx(value, rel=1e-13, abs=1e-13)
    expected = sum(np.dot(fd_grad(oracle, args, j), t) for j, t in zip(argnums, tangents))
    assert tangent == pytest.approx(expected, rel=1e-5, abs=1e-6), f"{e.name}: forward mode"
    # the dot-product test: forward and reverse mode agree to rounding
    assert tangent == pytest.approx(sum(np.dot(g, t) for g, t in zip(grads, tangents)),
                                    rel=1e-11, abs=1e-12)


def test_every_entry_compiles_with_numba(programs):
    """numba compiles the generated calls of the numpy functions with no math counterpart
    (np.cbrt(x) on a float): each entry's program, differentiated with numba."""
    rng = np.random.default_rng(0)
    checked = 0
    for k, e in enumerate(ENTRIES):
        if e.family == "elementwise" and e.rule is not None:     # np.cbrt & co. on scalars
            args = _arguments(e, rng)
            g = adjit.grad(getattr(programs, f"f{k}"), argnums=0)(*args)
            np.testing.assert_allclose(g, fd_grad(getattr(programs, f"f{k}"), args, 0),
                                       rtol=1e-5, atol=1e-6, err_msg=e.name)
            checked += 1
    assert checked >= 9


def test_every_differentiable_entry_has_a_domain():
    for e in ENTRIES:
        if e.rule is not None and e.differentiable:
            assert e.domain, e.name


def test_every_array_function_has_one_lowering_and_every_lowering_a_function():
    """An "array" entry names its lowering by handler (normalize/lowering.py): a handler no
    method lowers would fail only when a program calls the function, a lowering no entry
    names is dead code."""
    from adjit.normalize.lowering import LOWERINGS, missing, lowers
    handlers = {e.handler for e in REGISTRY.family("array", "elementwise") if e.handler} | \
        {"custom"}      # custom_vjp
    assert missing(handlers) == []
    assert sorted(set(LOWERINGS) - handlers) == []
    with pytest.raises(ValueError, match="two lowerings of the registry handler 'cumsum'"):
        lowers("cumsum")(lambda self, node, obj, out: None)


def test_every_helper_a_rule_calls_exists():
    """The rules are text the passes paste into generated code (`vec.convolve_bars(a, v,
    out_bar)`): a misspelt helper would fail only when a program first uses that rule."""
    import ast
    import math as math_
    from adjit.runtime import vec
    modules = {"vec": vec, "np": np, "math": math_}

    def chains(tree):
        for node in ast.walk(tree):
            parts = []
            while isinstance(node, ast.Attribute):
                parts.append(node.attr)
                node = node.value
            if parts and isinstance(node, ast.Name) and node.id in modules:
                yield node.id, parts[::-1]

    checked = 0
    for e in REGISTRY.entries:
        trees = []
        for rule in (e.rule,):
            if rule is not None:
                trees += [t for t in rule.partials if t is not None]
                if rule.joint is not None:
                    trees += [rule.joint[0], *rule.joint[1]]
        r = e.array_rule
        if r is not None:
            trees += [t for t in r.reverse + r.tangent + (r.shared,) if t is not None]
        for tree in trees:
            for root, parts in chains(tree):
                obj = modules[root]
                for part in parts:
                    assert hasattr(obj, part), f"{e.name}: {root}.{'.'.join(parts)}"
                    obj = getattr(obj, part)
                checked += 1
    assert checked > 150


# array-level functions --------------------------------------------------------------------
R = np.random.default_rng(1)
A = R.normal(size=(3, 4))
X = R.normal(size=5)


def cumsum_1d(x):
    return np.sum(np.cumsum(x) ** 2)


def cumsum_axes(a):
    return np.sum(np.cumsum(a, axis=1) ** 2) + np.sum(np.cumsum(a, 0) * a)


def cumsum_flat(a):
    return np.sum(np.cumsum(a) * np.arange(12.0))


def diff_orders(x):
    return np.sum(np.diff(x) ** 2) + np.sum(np.diff(x, 2) ** 3)


def diff_axes(a):
    return np.sum(np.diff(a, axis=0) ** 2) + np.sum(np.diff(a) * a[:, 1:])


def trace_and_diagonal(a):
    return np.trace(a) * np.trace(a[:, 1:]) + np.sum(np.diagonal(a) ** 2)


def diag_both_ways(x):
    return np.sum(np.diag(x) * np.arange(25.0).reshape(5, 5)) + np.sum(np.diag(np.outer(x, x)))


@pytest.mark.parametrize("fn, arg", [
    (cumsum_1d, X), (cumsum_axes, A), (cumsum_flat, A), (diff_orders, X), (diff_axes, A),
    (trace_and_diagonal, A), (diag_both_ways, X),
], ids=lambda v: getattr(v, "__name__", None))
def test_array_functions(fn, arg):
    v, g = adjit.value_and_grad(fn)(arg.copy())
    assert v == pytest.approx(fn(arg.copy()), rel=1e-13)
    np.testing.assert_allclose(g, fd_grad(fn, [arg.copy()], 0), rtol=1e-6, atol=1e-7)
    t = R.normal(size=arg.shape)
    _, tangent = adjit.jvp(fn)(arg.copy(), t)
    assert tangent == pytest.approx(np.sum(g * t), rel=1e-11, abs=1e-12)


def test_math_constants_are_numbers():
    def f(x):
        return x * math.pi
    assert adjit.grad(f)(1.0) == math.pi
