"""vjp and jvp agree with grad on every construct program of the core language.

For a float-valued f: vjp(f)(*args, 1.0) is value_and_grad, and jvp(f)(*args, v) is the
directional derivative <grad f, v> (forward mode computed independently of the backward
sweep: the same rules, a different generator). The generated sources run in the
interpreter here (transform.build(jit=False): every construct's code, cheaply); a few
programs also go through the public, numba-compiled objects.
"""
import numba
import numpy as np
import pytest

import adjit
from adjit.api import _KINDS, _Mode
from adjit.transform import build

from programs import PROGRAMS

_IDS = [f"{f.__name__}-{k}" for k, (f, _, _) in enumerate(PROGRAMS)]


def _copy(args):
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def _mode(kind, argnums):
    with_value, extra = _KINDS[kind]
    return _Mode(kind, with_value, isinstance(argnums, int), extra)


def _python(f, argnums, kind, args, extra_value):
    nums = (argnums,) if isinstance(argnums, int) else argnums
    types = tuple(numba.typeof(a) for a in args) + (numba.typeof(extra_value),)
    spec = build(f, nums, types, _mode(kind, argnums), jit=False)
    return spec.pyfunc(*_copy(args), extra_value)


def _tangents(args, argnums, rng):
    nums = (argnums,) if isinstance(argnums, int) else argnums
    ts = tuple(rng.normal(size=np.shape(args[k])) if isinstance(args[k], np.ndarray)
               else float(rng.normal()) for k in nums)
    return ts[0] if isinstance(argnums, int) else ts


def _grads_tuple(g, argnums):
    return (g,) if isinstance(argnums, int) else tuple(g)


@pytest.mark.parametrize("f, args, argnums", PROGRAMS, ids=_IDS)
def test_vjp_with_unit_cotangent_is_value_and_grad(f, args, argnums):
    value, grads = _python(f, argnums, "vjp", args, 1.0)
    v2, expected = _value_and_grad_python(f, argnums, args)
    assert value == v2
    for got, want in zip(_grads_tuple(grads, argnums), _grads_tuple(expected, argnums)):
        np.testing.assert_array_equal(got, want)


def _value_and_grad_python(f, argnums, args):
    nums = (argnums,) if isinstance(argnums, int) else argnums
    types = tuple(numba.typeof(a) for a in args)
    spec = build(f, nums, types, _mode("value_and_grad", argnums), jit=False)
    return spec.pyfunc(*_copy(args))


@pytest.mark.parametrize("f, args, argnums", PROGRAMS, ids=_IDS)
def test_jvp_is_the_directional_derivative(f, args, argnums):
    rng = np.random.default_rng(len(_IDS))
    tangent = _tangents(args, argnums, rng)
    value, out_tangent = _python(f, argnums, "jvp", args, tangent)
    v2, grads = _value_and_grad_python(f, argnums, args)
    assert value == pytest.approx(v2, rel=1e-13, abs=1e-300)
    expected = sum(float(np.sum(g * t)) for g, t in
                   zip(_grads_tuple(grads, argnums), _grads_tuple(tangent, argnums)))
    scale = sum(float(np.sum(np.abs(g * t))) for g, t in
                zip(_grads_tuple(grads, argnums), _grads_tuple(tangent, argnums)))
    assert abs(out_tangent - expected) <= 1e-12 * max(scale, 1e-300)


@pytest.mark.parametrize("f, args, argnums", PROGRAMS[:6], ids=_IDS[:6])
def test_compiled_vjp_and_jvp(f, args, argnums):
    rng = np.random.default_rng(3)
    tangent = _tangents(args, argnums, rng)
    v1, grads = adjit.vjp(f, argnums=argnums)(*_copy(args), 0.5)
    v2, out_tangent = adjit.jvp(f, argnums=argnums)(*_copy(args), tangent)
    expected_value, expected = _value_and_grad_python(f, argnums, args)
    assert v1 == pytest.approx(expected_value, rel=1e-13)
    assert v2 == pytest.approx(expected_value, rel=1e-13)
    for got, want in zip(_grads_tuple(grads, argnums), _grads_tuple(expected, argnums)):
        np.testing.assert_allclose(got, 0.5 * np.asarray(want), rtol=1e-13)
    dd = sum(float(np.sum(g * t)) for g, t in
             zip(_grads_tuple(expected, argnums), _grads_tuple(tangent, argnums)))
    assert out_tangent == pytest.approx(dd, rel=1e-11, abs=1e-13)
