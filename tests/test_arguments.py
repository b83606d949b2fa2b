"""The argument audit: every argument form numba accepts for a function adjit lowers (the
registry's `forms`, adjit/rules/forms.py) is honoured as numba honours it, or refused with an
AdjitError; never replaced by a default.

An entry's forms run in one generated function (the loss adds up each form's squares and
values): adjit's generated code, run by Python, against the function run by numpy (whose
semantics numba's functions follow) and central finite differences of it, in every
differentiated placeholder; where an entry disagrees, each form is tried alone to name the
one at fault. A form marked `!` must be refused. tests/test_arguments_numba.py checks that
numba compiles every form and gives numpy's value, and runs adjit's compiled gradients."""
import importlib
import re
import sys

import numba
import numpy as np
import pytest

import adjit
from adjit import AdjitError
from adjit.rules.forms import FORMS
from adjit.transform import Mode, build
from adjit.rules.registry import REGISTRY

from fd import fd_grad

VALUES = {
    "x": np.array([0.31, -0.72, 1.13, 0.47, -1.36]),
    "y": np.array([0.52, -1.14, 0.83]),
    "p": np.array([0.4, 1.3, 0.7, 2.1, 0.9]),
    "u": np.array([0.3, -0.55, 0.12, 0.8, -0.25]),
    "M": np.array([[1.2, -0.4, 0.3], [0.5, 0.9, -0.7], [-0.2, 0.6, 1.4]]),
    "S": np.array([[2.0, 0.3, -0.4], [0.3, 1.5, 0.2], [-0.4, 0.2, 1.8]]),
    "T": np.linspace(-1.0, 1.3, 24).reshape(2, 3, 4) ** 3,
    "v": np.array([0.7, -0.2, 1.1]),
    "w": np.array([-0.3, 0.9, 0.4]),
    "s": 0.37,
}
PLACEHOLDER = re.compile(r"(?<![\w.])(" + "|".join(VALUES) + r")(?![\w(])")
AUDITED = ("reduction", "array", "allocate", "inactive", "draw")


def _placeholders(forms):
    return sorted({m for f in forms for m in PLACEHOLDER.findall(f.lstrip("!"))},
                  key=list(VALUES).index)


def _entries():
    """The registry entries with forms, and those of the audited families (numpy's and
    numba's generator's) that must have them."""
    return [e for e in REGISTRY.entries if e.forms or (
        e.family in AUDITED and e.name.startswith("np."))]


def _function(lines, name, forms, rewrite=lambda form: form, result="total"):
    names = _placeholders(forms)
    lines.append(f"def {name}({', '.join(names)}):")
    lines.append("    np.random.seed(0)")
    lines.append("    total = 0.0")
    for j, form in enumerate(forms):
        lines.append(f"    r{j} = {rewrite(form)}")
        lines.append(f"    total += np.sum(r{j} * r{j}) + np.sum(r{j})")
    lines += [f"    return {result}", ""]


def _module(tmp_path_factory, name, lines):
    """The module of generated functions `lines`, imported."""
    folder = tmp_path_factory.mktemp(name)
    (folder / f"{name}.py").write_text("\n".join(lines))
    sys.path.insert(0, str(folder))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(folder))


def ok_forms(entry):
    return [f for f in entry.forms if not f.startswith("!")]


def refused_forms():
    return [(e, f[1:]) for e in ENTRIES for f in e.forms if f.startswith("!")]


def generate(tmp_path_factory, name):
    """A module of generated functions: `f<k>` adds up the losses of entry k's forms numba
    accepts, `f<k>_<j>` has its form j alone, `r<i>` the refused form i alone."""
    lines = ["import math", "import numpy as np", ""]
    for k, e in enumerate(ENTRIES):
        if ok_forms(e):
            _function(lines, f"f{k}", ok_forms(e))
        for j, f in enumerate(e.forms):
            _function(lines, f"f{k}_{j}", [f.lstrip("!")])
    for i, (_, f) in enumerate(refused_forms()):
        _function(lines, f"r{i}", [f])
    return _module(tmp_path_factory, name, lines)


ENTRIES = _entries()


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    return generate(tmp_path_factory, "audited_forms")


def test_every_audited_entry_declares_its_forms():
    missing = [e.name for e in ENTRIES if e.obj not in FORMS]
    assert not missing, f"entries with no argument forms (adjit/rules/forms.py): {missing}"


_PY_MODE = Mode("value_and_grad", with_value=True, single=False)


def _check(fn, forms):
    """None if adjit's generated code, run by Python, agrees with the function run by numpy
    (the value, and central differences in every placeholder), else what differs."""
    names = _placeholders(forms)
    args = tuple(VALUES[n] for n in names)
    value = fn(*args)
    types = tuple(numba.typeof(a) for a in args)
    try:
        code = build(fn, tuple(range(len(args))), types, _PY_MODE, jit=False)
    except AdjitError as exc:
        return f"refused: {str(exc)[:300]}"
    got_value, got = code.pyfunc(*args)
    if not np.isclose(got_value, value, rtol=1e-12, atol=1e-12):
        return f"value {got_value!r}, the function's {value!r}"
    for k, name in enumerate(names):
        expected = fd_grad(fn, args, k)
        if not np.allclose(got[k], expected, rtol=1e-5, atol=1e-6):
            return f"d/d{name} {np.round(got[k], 6)!r}, differences give {expected!r}"
    return None


@pytest.mark.parametrize("k", range(len(ENTRIES)), ids=[e.name for e in ENTRIES])
def test_forms_numba_accepts_are_honoured(generated, k):
    entry = ENTRIES[k]
    if not ok_forms(entry) or _check(getattr(generated, f"f{k}"), ok_forms(entry)) is None:
        return
    problems = [f"{form}: {problem}" for j, form in enumerate(entry.forms)
                if not form.startswith("!") and
                (problem := _check(getattr(generated, f"f{k}_{j}"), [form])) is not None]
    assert problems, "the forms fail together, and each alone passes"
    assert not problems, "\n  ".join([entry.name] + problems)


def test_forms_marked_refused_are_refused(generated):
    accepted = []
    for i, (entry, form) in enumerate(refused_forms()):
        names = _placeholders([form])
        types = tuple(numba.typeof(VALUES[n]) for n in names)
        try:
            build(getattr(generated, f"r{i}"), tuple(range(len(names))), types, _PY_MODE,
                  jit=False)
        except AdjitError:
            continue
        accepted.append(f"{entry.name}: !{form}: adjit differentiates it (check it against "
                        "numba and differences, and drop the `!`)")
    assert not accepted, "\n  ".join([""] + accepted)


SPELLED = [e for e in REGISTRY.family("scalar", "elementwise")
           if e.obj not in FORMS and "." in e.name and (e.rule is not None or
                                                         e.family == "elementwise")]


@pytest.fixture(scope="module")
def one_more(tmp_path_factory):
    """Per entry of a function of numbers or elements, `g<k>` calls it with one argument
    more than its rule takes."""
    lines = ["import math", "import operator", "import numpy as np", ""]
    for k, e in enumerate(SPELLED):
        arity = len(e.rule.params) if e.rule is not None else e.arity
        value = "x" if e.family == "elementwise" else "s"
        args = ", ".join([value] * arity + ["0.5"])
        lines += [f"def g{k}({value}):", f"    return np.sum({e.name}({args}))", ""]
    return _module(tmp_path_factory, "one_more_argument", lines)


def test_an_argument_more_than_a_rule_reads_is_refused(one_more):
    """np.exp(x, o) must not differentiate as np.exp(x): every function of numbers or
    elements called with an argument its rule does not read is an AdjitError, but for the
    piecewise-constant ones (no partial in the rule: np.angle(x, deg)), whose other
    arguments cannot change a zero derivative: numba's value, derivative zero."""
    accepted = []
    for k, e in enumerate(SPELLED):
        fn = getattr(one_more, f"g{k}")
        arg = VALUES["x"] if e.family == "elementwise" else VALUES["s"]
        try:
            value, grad = adjit.value_and_grad(fn)(arg)
        except AdjitError:
            continue
        except Exception as exc:        # noqa: BLE001 - numba refusing the call at run time
            accepted.append(f"{e.name}: {type(exc).__name__}: {str(exc)[:120]}")
            continue
        rule = e.rule or REGISTRY.get(e.scalar).rule
        if all(p is None for p in rule.partials):
            assert value == numba.njit(fn)(arg) and not np.any(grad), e.name
            continue
        accepted.append(e.name)
    assert not accepted, f"called with an argument more than the rule reads: {accepted}"


def drawn(form):
    """The form with every placeholder replaced by an expression that draws: each argument
    moves by a draw of its own, so an argument evaluated twice, or out of order, changes
    the value (every later draw is another number)."""
    return PLACEHOLDER.sub(lambda m: f"({m.group(1)} + 0.01 * np.random.random())", form)


@pytest.fixture(scope="module")
def drawing(tmp_path_factory):
    """`d<k>` adds up the losses of entry k's forms with arguments that draw, then draws
    once more; `d<k>_<j>` has its form j alone."""
    lines = ["import math", "import numpy as np", ""]
    for k, e in enumerate(ENTRIES):
        if ok_forms(e):
            _function(lines, f"d{k}", ok_forms(e), drawn, "total + np.random.random()")
            for j, f in enumerate(ok_forms(e)):
                _function(lines, f"d{k}_{j}", [f], drawn, "total + np.random.random()")
    return _module(tmp_path_factory, "drawing_forms", lines)


@pytest.mark.parametrize("k", [k for k, e in enumerate(ENTRIES) if ok_forms(e)],
                         ids=[e.name for e in ENTRIES if ok_forms(e)])
def test_every_argument_is_evaluated_once_in_order(drawing, k):
    """An argument that draws (or has any effect) is evaluated once, in the order Python
    evaluates it, by every lowering (np.linalg.lstsq(a, b)[0] evaluated b twice: the value
    came from other draws)."""
    entry = ENTRIES[k]
    forms = ok_forms(entry)
    if _check(getattr(drawing, f"d{k}"), forms) is None:
        return
    problems = [f"{drawn(form)}: {problem}" for j, form in enumerate(forms)
                if (problem := _check(getattr(drawing, f"d{k}_{j}"), [form])) is not None]
    assert problems, "the forms fail together, and each alone passes"
    assert not problems, "\n  ".join([entry.name] + problems)
