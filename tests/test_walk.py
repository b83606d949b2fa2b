"""ir.walk, which every pass uses to look through its trees: the nodes ast.walk yields, in
the same order, less the expression contexts (ast.Load, ast.Store, ast.Del), which the
passes read as a node's `ctx`. Checked node for node against ast.walk over the sources of
adjit itself and of the benchmark programs (every statement and expression kind they hold,
try/except, comprehensions, f-strings and decorators included), and over trees the passes
build by hand with fields left unset."""
import ast
import pathlib

import pytest

from adjit import ir

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCES = sorted(ROOT.glob("adjit/**/*.py")) + sorted(ROOT.glob("benchmarks/*.py")) + \
    sorted(ROOT.glob("examples/*.py"))


def _expected(tree):
    return [n for n in ast.walk(tree) if not isinstance(n, ast.expr_context)]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_walk_is_ast_walk_without_contexts(path):
    tree = ast.parse(path.read_text(), str(path))
    got = list(ir.walk(tree))
    want = _expected(tree)
    assert len(got) == len(want)
    assert all(a is b for a, b in zip(got, want))
    assert not any(isinstance(n, ast.expr_context) for n in got)
    names = [n for n in got if isinstance(n, ast.Name)]
    assert all(isinstance(n.ctx, ast.expr_context) for n in names)   # (read through .ctx)


def test_walk_of_hand_built_nodes():
    # nodes as the passes make them: optional fields and lists never set
    call = ast.Call(func=ast.Name(id="f", ctx=ast.Load()), args=[ast.Constant(value=1)])
    loop = ast.For(target=ast.Name(id="i", ctx=ast.Store()),
                   iter=ast.Call(func=ast.Name(id="range", ctx=ast.Load()),
                                 args=[ast.Name(id="n", ctx=ast.Load())], keywords=[]),
                   body=[ast.Expr(value=call)])
    got = list(ir.walk(loop))
    assert [type(n).__name__ for n in got] == \
        ["For", "Name", "Call", "Expr", "Name", "Name", "Call", "Name", "Constant"]
    assert got == [n for n in ast.walk(loop) if not isinstance(n, ast.expr_context)]


def test_walk_of_one_name():
    name = ast.Name(id="x", ctx=ast.Load())
    assert list(ir.walk(name)) == [name]
