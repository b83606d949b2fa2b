"""The pipeline's stages: each one printed by adjit.show is runnable Python, and run here
against the original function (the stages before the derivative compute the same value, the
adjoint gives the finite-difference gradient, the tangent the directional derivative). Also:
ADJIT_DEBUG_PRINT_AFTER, the layering of adjit's packages, and generated lines' length."""
import ast
import pathlib

import numpy as np
import pytest

import adjit
from adjit.show import stage_callable, sweep_callables

from fd import fd_grad
from programs import PROGRAMS


def vectorized(x, w):
    y = np.tanh(x * w) + x[::-1]
    return np.sum(y ** 2) + np.max(x) * w


def matrix(a, v):
    b = a @ v
    out = np.zeros(v.shape[0])
    for i in range(v.shape[0]):
        out[i] = b[i] * v[i]
    return np.sum(out * out) + np.trace(a)


_RNG = np.random.default_rng(3)
CASES = PROGRAMS + [(vectorized, (_RNG.random(5), 0.7), (0, 1)),
                    (matrix, (_RNG.random((3, 3)), _RNG.random(3)), (0, 1))]
IDS = [f"{f.__name__}-{k}" for k, (f, _, _) in enumerate(CASES)]
PRIMAL_STAGES = [s for s in adjit.STAGES if s not in ("adjoint", "tangent")]


def _copies(args):
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def test_stages_are_named_in_order():
    assert len(adjit.STAGES) >= 5
    assert adjit.STAGES[:2] == ("source", "normalized")
    assert {"adjoint", "tangent"} <= set(adjit.STAGES)


@pytest.mark.parametrize("f, args, argnums", CASES, ids=IDS)
def test_every_primal_stage_computes_the_function(f, args, argnums):
    want = f(*_copies(args))
    for stage in PRIMAL_STAGES:
        got = stage_callable(f, stage, *_copies(args), argnums=argnums)(*_copies(args))
        assert got == pytest.approx(want, rel=1e-12), stage


@pytest.mark.parametrize("f, args, argnums", CASES, ids=IDS)
def test_adjoint_stage_is_the_gradient(f, args, argnums):
    g = stage_callable(f, "adjoint", *_copies(args), argnums=argnums)(*_copies(args))
    nums = (argnums,) if isinstance(argnums, int) else argnums
    gots = (g,) if isinstance(argnums, int) else g
    for k, got in zip(nums, gots):
        want = fd_grad(lambda *a: f(*_copies(a)), _copies(args), k)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("f, args, argnums", CASES, ids=IDS)
def test_every_sweep_stage_is_the_gradient(f, args, argnums):
    """After each rewrite of the backward sweep the derivative still computes the gradient
    (the same to rounding as the finished one; and against finite differences)."""
    nums = (argnums,) if isinstance(argnums, int) else argnums
    final = stage_callable(f, "adjoint", *_copies(args), argnums=argnums)(*_copies(args))
    final = (final,) if isinstance(argnums, int) else final
    for stage, g in sweep_callables(f, *_copies(args), argnums=argnums).items():
        got = g(*_copies(args))
        gots = (got,) if isinstance(argnums, int) else got
        for k, x, want in zip(nums, gots, final):
            np.testing.assert_allclose(x, want, rtol=1e-12, atol=1e-14,
                                       err_msg=f"{stage}, d/d argument {k}")
    for k, want in zip(nums, final):
        np.testing.assert_allclose(want, fd_grad(lambda *a: f(*_copies(a)), _copies(args), k),
                                   rtol=1e-5, atol=1e-6)


def test_sweep_stages_show_each_rewrite():
    from cases import heat
    args = (np.linspace(0.0, 1.0, 12), 0.25, 6)
    texts = {st: adjit.show(heat, st, *args, argnums=(0, 1)) for st in adjit.SWEEP_STAGES}
    assert list(texts) == [f"sweep.{n}" for n in ("copies", "parallel", "fission", "ascending",
                                                  "dots", "fuse", "resets", "outer", "sums",
                                                  "accumulators", "loads")]
    for text in texts.values():
        ast.parse(text)
    # the stencil's adjoint loop is split (fission), its sum over the tape a dot_range (dots)
    assert "dot_range" not in texts["sweep.ascending"] and "dot_range" in texts["sweep.dots"]
    assert texts["sweep.parallel"] != texts["sweep.fission"]
    # the last stage is the finished source but for the unsigned tape indices, the names
    # given to the webs of a name and the allocations spelled through the runtime (the last
    # steps of unparsing)
    from adjit.codegen.emit import cached_allocations
    from adjit.codegen.webs import split_webs
    final = adjit.grad(heat, argnums=(0, 1)).source_for(*args)
    assert final.split("\n\n\n")[0].replace("np.uint64(", "") != final.split("\n\n\n")[0]
    last = ast.parse(texts["sweep.loads"])
    assert split_webs(last.body[0]) > 0
    cached_allocations(last)
    assert "vec.zeros(" in ast.unparse(last)
    assert _without_unsigned(final.split("\n\n\n")[0]) == ast.unparse(last)
    with pytest.raises(adjit.AdjitError, match="sweep.copies"):
        adjit.show(heat, "sweep.nothing", *args)


def _without_unsigned(text):
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Call) and \
                ast.unparse(node.slice.func) == "np.uint64":
            node.slice = node.slice.args[0]
    return ast.unparse(tree)


@pytest.mark.parametrize("f, args, argnums", CASES, ids=IDS)
def test_tangent_stage_is_the_directional_derivative(f, args, argnums):
    k = argnums if isinstance(argnums, int) else argnums[0]
    direction = np.linspace(0.3, 1.1, np.size(args[k])).reshape(np.shape(args[k]))
    if np.ndim(args[k]) == 0:
        direction = float(direction)
    value, tangent = stage_callable(f, "tangent", *_copies(args), argnums=k)(
        *_copies(args), direction)
    assert value == pytest.approx(f(*_copies(args)), rel=1e-12)
    want = np.sum(fd_grad(lambda *a: f(*_copies(a)), _copies(args), k) * direction)
    assert tangent == pytest.approx(want, rel=1e-5, abs=1e-6)


def test_show_prints_each_stage_as_python():
    x = np.linspace(0.1, 0.9, 5)
    for stage in adjit.STAGES:
        text = adjit.show(vectorized, stage, x, 0.7)
        ast.parse(text)
    assert "kinds:" in adjit.show(vectorized, "typed", x, 0.7)
    assert "active (carry derivatives):" in adjit.show(vectorized, "active", x, 0.7)
    assert adjit.show(vectorized, "adjoint", x, 0.7) == \
        adjit.grad(vectorized).source_for(x, 0.7)
    assert adjit.show(vectorized, "tangent", x, 0.7) == \
        adjit.jvp(vectorized).source_for(x, 0.7, np.ones(5))


def test_show_without_example_arguments():
    assert "def vectorized" in adjit.show(vectorized, "source")
    with pytest.raises(adjit.AdjitError, match="needs example arguments"):
        adjit.show(vectorized, "typed")


def test_debug_print_after(monkeypatch, capsys):
    monkeypatch.setenv("ADJIT_DEBUG_PRINT_AFTER", "normalized, adjoint")
    adjit.grad(matrix, argnums=1).source_for(np.eye(3), np.ones(3))
    out = capsys.readouterr().out
    assert "# adjit: matrix after normalized" in out and "def matrix_normalized" in out
    assert "# adjit: matrix after adjoint" in out and "def matrix_grad" in out
    assert "after typed" not in out
    monkeypatch.setenv("ADJIT_DEBUG_PRINT_AFTER", "sweep.dots")
    adjit.grad(matrix, argnums=0).source_for(np.eye(3), np.ones(3))
    out = capsys.readouterr().out
    assert "# adjit: matrix after sweep.dots" in out and "def matrix_grad_taped" in out
    assert "after sweep.copies" not in out


# layering: a package imports only from its own stage or earlier ones -------------------------
LAYERS = {"errors": 0, "api_stop": 0, "ir": 0, "runtime": 0, "rules": 0,
          "frontend": 1, "normalize": 2, "analysis": 3, "reverse": 4, "forward": 4,
          "codegen": 5, "outline": 5.5, "pipeline": 6, "transform": 7, "show": 7, "custom": 7,
          "higher": 7.5, "sparse": 7.5, "patterns": 7,
          "api": 8, "implicit": 8.5, "distributed": 8.5, "cuda": 9,
          "__init__": 10}
ROOT = pathlib.Path(adjit.__file__).parent


def _imports(path):
    package = path.relative_to(ROOT).parts
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = list(package[:-1])[:len(package) - node.level]
            target = base + (node.module.split(".") if node.module else [])
            names = [target + [a.name] for a in node.names] if not node.module else [target]
            for t in names:
                yield node.lineno, t


def _module(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_import_cycles():
    """No two modules of adjit import each other, directly or through others, not even
    inside a function (a cycle the layering above cannot see: a module and a helper
    module of the same package)."""
    paths = {_module(p): p for p in ROOT.rglob("*.py")}
    graph = {}
    for name, path in paths.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        if package == [""]:
            package = []
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package[:len(package) - node.level + 1]
                target = base + (node.module.split(".") if node.module else [])
                for c in [target + [a.name] for a in node.names] + [target]:
                    if ".".join(c) in paths and ".".join(c) != name:
                        deps.add(".".join(c))
                        break
        graph[name] = deps
    cycles, state = [], {}

    def visit(v, trail):
        state[v] = "open"
        for w in sorted(graph[v]):
            if state.get(w) == "open":
                cycles.append(" -> ".join(trail[trail.index(w):] + [v, w]))
            elif w not in state:
                visit(w, trail + [v])
        state[v] = "done"

    for v in sorted(graph):
        if v not in state:
            visit(v, [])
    assert not cycles, "\n".join(cycles)


def test_imports_flow_down_the_pipeline():
    bad = []
    for path in sorted(ROOT.rglob("*.py")):
        here = path.relative_to(ROOT).parts
        layer = LAYERS[here[0].removesuffix(".py")]
        for line, target in _imports(path):
            top = target[0].removesuffix(".py") if target else "__init__"
            if top not in LAYERS:
                continue
            if LAYERS[top] > layer or {here[0], top} == {"reverse", "forward"}:
                bad.append(f"{'/'.join(here)}:{line} imports {'.'.join(target)}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("f, args, argnums", CASES, ids=IDS)
def test_generated_lines_fit_120_characters(f, args, argnums):
    for stage in ("adjoint", "tangent"):
        k = argnums if stage == "tangent" and isinstance(argnums, int) else \
            (argnums if stage == "adjoint" else argnums[0])
        text = adjit.show(f, stage, *_copies(args), argnums=k)
        long = [line for line in text.splitlines() if len(line) > 120]
        assert not long, long


def test_no_source_text_is_evaluated_to_find_a_callee():
    """Callees are looked up by name (normalize/names.py), never by evaluating spelled text."""
    found = [f"{path.relative_to(ROOT)}:{node.lineno}"
             for path in sorted(ROOT.rglob("*.py"))
             for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
             and node.func.id == "eval"]
    assert not found, found


def test_generated_source_holds_no_machine_constant():
    """The default tape limit (half the machine's memory) is read when the gradient runs."""
    from adjit.runtime.tape import DEFAULT_TAPE_LIMIT
    text = adjit.grad(matrix, argnums=1).source_for(np.eye(3), np.ones(3))
    assert str(DEFAULT_TAPE_LIMIT) not in text and "tape_room(-1, _tape_cap1)" in text


def test_long_generated_lines_are_wrapped_inside_parentheses():
    from adjit.codegen.emit import wrap_line
    line = "        _t1_bar = _r1_bar * (" + " + ".join(f"math.cosh(_t{k}) ** 2" for k in range(12)) \
        + ")"
    wrapped = wrap_line(line)
    assert all(len(part) <= 120 for part in wrapped.split("\n")) and "\n" in wrapped
    ns = {"math": __import__("math"), "_r1_bar": 2.0, **{f"_t{k}": 0.1 * k for k in range(12)}}
    exec(compile("if True:\n" + wrapped, "<wrapped>", "exec"), ns)
    exec(compile("if True:\n" + line.replace("_t1_bar", "want"), "<line>", "exec"), ns)
    assert ns["_t1_bar"] == ns["want"]
