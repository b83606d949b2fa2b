"""A function whose file was edited after its module was imported.

adjit reads a function's text from its file; Python and numba run the code compiled at the
import. A notebook user edits the module and asks for a gradient without reloading it: the
text is another function than the one that runs, and differentiating it would give a
plausible wrong number. adjit refuses, and after `importlib.reload` the gradient is the new
function's. Functions whose file did not change are read as before, whatever scopes their
names come from (imports, closures, classes, `super()`, `from __future__`, nested defs).
"""
import importlib
import inspect
import math
import sys
import textwrap

import numpy as np
import pytest

import adjit
from adjit import AdjitError
from adjit.frontend import stale

from fd import fd_grad


@pytest.fixture
def module_dir(tmp_path):
    sys.path.insert(0, str(tmp_path))
    yield tmp_path
    sys.path.remove(str(tmp_path))


def _write(folder, name, text):
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(text))
    importlib.invalidate_caches()
    return path


def _module(folder, name, text):
    _write(folder, name, text)
    sys.modules.pop(name, None)
    return importlib.import_module(name)


MODEL = """
import math
from numba import njit

@njit
def energy(x):
    return math.sin(x) * {factor}
"""


def test_edited_module_is_refused_and_reload_gives_the_new_gradient(module_dir):
    mod = _module(module_dir, "stale_model_a", MODEL.format(factor="2.0"))
    assert adjit.grad(mod.energy)(1.0) == pytest.approx(2.0 * math.cos(1.0), rel=1e-14)
    _write(module_dir, "stale_model_a", MODEL.format(factor="3.0"))
    # the code that runs still multiplies by 2.0
    assert mod.energy(1.0) == pytest.approx(2.0 * math.sin(1.0), rel=1e-14)
    with pytest.raises(AdjitError) as info:
        adjit.grad(mod.energy)(1.0)
    message = str(info.value)
    assert "stale_model_a.py" in message and "'energy'" in message
    assert "changed after the module was imported" in message and "reload" in message
    importlib.reload(mod)
    assert adjit.grad(mod.energy)(1.0) == pytest.approx(3.0 * math.cos(1.0), rel=1e-14)


def test_edited_operator_with_the_same_names_and_constants_is_refused(module_dir):
    text = """
    def f(x, y):
        return x {op} y * y
    """
    mod = _module(module_dir, "stale_model_b", text.format(op="+"))
    _write(module_dir, "stale_model_b", text.format(op="-"))
    with pytest.raises(AdjitError, match="changed after the module was imported"):
        adjit.grad(mod.f, argnums=(0, 1))(1.0, 2.0)


def test_sign_of_a_zero_constant_is_code(module_dir):
    text = """
    def f(x):
        return math.copysign(x, {zero})
    import math
    """
    mod = _module(module_dir, "stale_model_c", text.format(zero="0.0"))
    _write(module_dir, "stale_model_c", text.format(zero="-0.0"))
    with pytest.raises(AdjitError, match="changed after the module was imported"):
        adjit.grad(mod.f)(1.5)


def test_edited_helper_is_refused(module_dir):
    text = """
    import numpy as np
    from numba import njit

    @njit
    def helper(v):
        return np.sum(v ** {power})

    @njit
    def loss(v):
        return helper(v) * 0.5
    """
    mod = _module(module_dir, "stale_model_d", text.format(power=2))
    _write(module_dir, "stale_model_d", text.format(power=3))
    # (numba's call of the helper, as loaded, is kept where no derivative flows through it)
    with pytest.raises(AdjitError, match="`helper`.*changed after the module was imported"):
        adjit.grad(mod.loss)(np.ones(3))


def test_lines_added_above_are_refused(module_dir):
    text = """
    import math
    {extra}
    def f(x):
        return math.exp(x)
    """
    mod = _module(module_dir, "stale_model_e", text.format(extra=""))
    _write(module_dir, "stale_model_e", text.format(extra="OFFSET = 1\n\n\n"))
    with pytest.raises(AdjitError):
        adjit.grad(mod.f)(0.5)


def test_docstring_only_edit_differentiates_the_code_that_runs(module_dir):
    text = '''
    import math

    def f(x):
        """{doc}"""
        return math.exp(2.0 * x)
    '''
    mod = _module(module_dir, "stale_model_f", text.format(doc="old words"))
    _write(module_dir, "stale_model_f", text.format(doc="new words, same code"))
    assert adjit.grad(mod.f)(0.5) == pytest.approx(2.0 * math.exp(1.0), rel=1e-14)


UNCHANGED = '''
from __future__ import annotations

import math
import numpy as np
from numba import njit
from math import tanh as th

SCALE = 1.5


def make_closure(a):
    b = a * 2.0

    def inner(x):
        return math.sin(a * x) + b * th(x)
    return inner


class Base:
    def value(self, x):
        return x * x


class Model(Base):
    __weight = 0.25

    def value(self, x):
        return super().value(x) + self.__weight * math.log1p(x * x)

    @staticmethod
    def energy(x):
        """A docstring."""
        def square(y: float) -> float:
            return y * y
        return np.exp(square(x) * SCALE) if x is not None else 0.0


@njit(fastmath=False)
def chained(v):
    s = 0.0
    for i in range(v.shape[0]):
        s += math.cos(v[i]) * np.float64(i)
    return s
'''


def test_unchanged_functions_of_every_scope_differentiate(module_dir):
    mod = _module(module_dir, "stale_model_g", UNCHANGED)
    x = 0.7
    for fn in [mod.make_closure(1.3), mod.Model.energy]:
        got = adjit.grad(fn)(x)
        assert got == pytest.approx(fd_grad(fn, (x,), 0), rel=1e-7)
    v = np.linspace(0.1, 1.0, 5)
    got = adjit.grad(mod.chained)(v)
    want = -np.sin(v) * np.arange(5)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)
    # a method's private names and super() (adjit does not differentiate bound methods:
    # the check that reads its text is asked directly)
    method = mod.Model.value
    text = textwrap.dedent(inspect.getsource(method))
    assert not stale.differs(method, text, method.__code__.co_filename)
    edited = text.replace("0.25", "0.5").replace("self.__weight", "self.__weight * 2.0")
    assert stale.differs(method, edited, method.__code__.co_filename)


def test_edited_closure_is_refused(module_dir):
    text = """
    import math

    def make(a):
        def inner(x):
            return math.sin(a * x) {tail}
        return inner
    """
    mod = _module(module_dir, "stale_model_h", text.format(tail=""))
    fn = mod.make(2.0)
    _write(module_dir, "stale_model_h", text.format(tail="+ a"))
    with pytest.raises(AdjitError, match="changed after the module was imported"):
        adjit.grad(fn)(0.3)
