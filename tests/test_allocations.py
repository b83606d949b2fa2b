"""An adjoint allocates through adjit's runtime (codegen/emit.py cached_allocations): numba
compiles its own numpy allocations again in every process, the runtime's are kept in its
disk cache. The spelling of each form, what stays numpy's, and gradients through the
runtime's allocations against central differences."""
import ast

import numpy as np
import pytest

import adjit
from adjit import ir
from adjit.codegen.emit import cached_allocations
from adjit.runtime import jitcache, vec
from fd import check_value_and_grad


@pytest.mark.parametrize("written, spelled", [
    ("a = np.zeros_like(x)", "a = vec.zeros_like(x)"),
    ("a = np.empty_like(x)", "a = vec.empty_like(x)"),
    ("a = np.empty(n)", "a = vec.empty(n)"),
    ("a = np.zeros((n, 3))", "a = vec.zeros((n, 3))"),
    ("a = np.zeros(5, np.int64)", "a = vec.zeros_int64(5)"),
    ("a = np.empty(n, np.float64)", "a = vec.empty(n)"),
    ("a = np.empty(n, np.bool_)", "a = vec.empty_bool_(n)"),
    ("a = np.zeros(n, np.float32)", "a = np.zeros(n, np.float32)"),     # not declared
    ("a = np.zeros(n, dtype=np.int64)", "a = np.zeros(n, dtype=np.int64)"),
    ("a = np.ones(n)", "a = np.ones(n)"),
    ("for i in numba.prange(n):\n    a = np.empty(3)",
     "for i in numba.prange(n):\n    a = np.empty(3)"),             # numba hoists it
])
def test_each_form_is_spelled_through_the_runtime(written, spelled):
    tree = ast.Module(body=ir.parse(written), type_ignores=[])
    cached_allocations(tree)
    assert ast.unparse(tree) == spelled
    head = spelled.split("(")[0].split("= ")[-1]
    if head.startswith("vec."):
        assert callable(getattr(vec, head[4:]))


@pytest.mark.parametrize("name", ["zeros", "empty", "zeros_like", "empty_like"])
def test_the_runtimes_allocations_are_cached_on_disk(name):
    assert isinstance(getattr(vec, name)._cache, jitcache.LevelCache)


def spread(x, w):
    n = x.shape[0]
    acc = np.zeros(n)
    for i in range(n):
        acc[i] = w * x[i] ** 2
    return np.sum(acc * np.sin(x))


def test_an_adjoint_allocates_through_the_runtime_and_a_jvp_through_numpy():
    x = np.linspace(-1.0, 1.2, 7)
    built = adjit.value_and_grad(spread, argnums=(0, 1))
    check_value_and_grad(spread, (x, 0.7), (0, 1), built=built)
    source = built.source
    assert "vec.zeros_like(" in source and "np.zeros_like(" not in source
    assert "acc = vec.zeros(n)" in source
    jvp = adjit.jvp(spread, argnums=0)
    out, t = jvp(x, 0.7, np.ones_like(x))
    assert "np.zeros(" in jvp.source and "vec.zeros(" not in jvp.source
    g = built(x, 0.7)[1][0]
    assert t == pytest.approx(float(np.sum(g)), rel=1e-12)
