"""The program fuzzer in `make test`: a bounded profile of generated programs, plus the tests
that show the fuzzer itself can fail (its oracle is right, its grammar reaches every
construct, a planted wrong rule is caught and reduced). `make fuzz N=...` runs a campaign.
"""
import ast
import math
import os
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings

import adjit
from adjit.normalize import anf
from adjit.rules import table

from fuzz import grammar, refad
from fuzz.campaign import category, numba_sampled
from fuzz.check import ONCE_REFUSAL, REAL_NAMESPACE, _differences, check, copy_arg, load, reduce
from fuzz.grammar import Program, programs

FUZZ_PROGRAMS = int(os.environ.get("ADJIT_FUZZ_PROGRAMS", "260"))
FUZZ_CHUNKS = 4     # seeded chunks that any free worker runs (the chunk is in the seed)
_CHECKED = {}       # (source, seed) -> outcome: hypothesis draws a third of the programs twice


@pytest.mark.spread
@pytest.mark.parametrize("chunk", range(FUZZ_CHUNKS))
@settings(max_examples=FUZZ_PROGRAMS // FUZZ_CHUNKS, deadline=None, derandomize=True,
          database=None, suppress_health_check=[HealthCheck.too_slow,
                                                HealthCheck.data_too_large])
@given(program=programs())
def test_generated_programs_match_the_reference(chunk, program):
    """A few hundred random programs in FUZZ_CHUNKS chunks: every argnums subset in the
    interpreter, 1 in 20 also compiled by numba, against the reference AD (to 1e-10 of the
    gradient's scale) and finite differences. The same programs every run (derandomized, a
    chunk's parameter in its seed: an unrelated change cannot fail by drawing a new
    program); `make fuzz` explores new ones. A failure prints the program, shrunk by
    hypothesis; save it under tests/regressions/."""
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


def test_reference_slices_are_views_as_in_numpy():
    """The reference runs numpy's own indexing on object arrays: a basic slice kept in a
    name is a view (a write through it reaches x), slice assignment reads its whole
    right-hand side first. The value is numpy's, the gradient written out by hand."""
    src = ("def f(x):\n"
           "    b = x[1:]\n"
           "    b[0] = 5.0\n"
           "    a = x.copy()\n"
           "    a[1:] = a[:-1] + a[1:]\n"
           "    return np.sum(x) + np.sum(a * a)\n")
    x = np.array([0.3, -0.8, 1.1, 0.5])
    r = _ref(src, x)
    assert r.value == pytest.approx(_numpy(src, x), rel=1e-14)
    xs = x.copy()
    xs[1] = 5.0                     # x[1] is overwritten: no gradient reaches it
    a = xs.copy()
    a[1:] = xs[:-1] + xs[1:]
    want = np.ones(4) + 2 * a
    want[:-1] += 2 * a[1:]
    want[1] = 0.0
    np.testing.assert_allclose(r.grads[0], want, rtol=1e-14)


def _numpy(source, *args):
    """The program's value in numpy itself (arguments copied, layouts kept)."""
    real = {"np": np, "math": math}
    exec(source, real)  # noqa: S102
    return real["f"](*[copy_arg(a) for a in args])


# the oracle on the construct groups (grammar.GROUPS) ------------------------------------------
def test_reference_gather_with_repeats():
    """theta[idx] with a repeated index: its adjoint adds up (the worked example)."""
    theta = np.array([1.0, 2.0, 3.0])
    for src, args in [
            ("def f(theta):\n    idx = np.array([0, 2, 2])\n"
             "    return np.sum(theta[idx] ** 2)\n", ()),
            ("def f(theta, idx):\n    return np.sum(np.take(theta, idx) ** 2)\n",
             (np.array([0, 2, 2]),)),
            ("def f(theta, idx):\n    s = 0.0\n    for i in range(len(idx)):\n"
             "        s += theta[idx[i]] ** 2\n    return s\n", (np.array([0, 2, 2]),))]:
        r = _ref(src, theta, *args)
        assert r.value == _numpy(src, theta, *args) == 19.0
        np.testing.assert_array_equal(r.grads[0], [2.0, 0.0, 12.0])
    w = np.arange(6.0).reshape(3, 2)
    r = _ref("def f(w):\n    i = np.array([2, 0, 2])\n"
             "    return np.sum(w[i, :] * np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))"
             " + np.sum(w[:, np.array([1, 1])])\n", w)
    np.testing.assert_array_equal(r.grads[0], [[3.0, 6.0], [0.0, 2.0], [6.0, 10.0]])


def test_reference_scatter_with_repeats_keeps_the_last_write():
    """out[idx] = v and out[idx] += v with idx = [1, 3, 1]: numpy writes out[1] once, from
    the last occurrence (buffered), so the first occurrence gets no gradient."""
    src = ("def f(x):\n"
           "    out = np.zeros(4)\n"
           "    idx = np.array([1, 3, 1])\n"
           "    out[idx] = x[:3] * 2.0\n"
           "    out[idx] += x[1:] * x[1:]\n"
           "    return np.sum(out * np.array([1.0, 10.0, 100.0, 1000.0]))\n")
    x = np.array([1.0, -2.0, 0.5, 3.0])
    r = _ref(src, x)
    # out[1] = 2 x2 + x3^2, out[3] = 2 x1 + x2^2
    assert r.value == _numpy(src, x) == 10 * (2 * 0.5 + 9.0) + 1000 * (2 * -2.0 + 0.25)
    np.testing.assert_allclose(r.grads[0], [0.0, 2000.0, 20.0 + 1000.0, 60.0], rtol=1e-15)


@pytest.mark.parametrize("src, value, grad", [
    ("    v = x[1:3]\n    v += 1.0\n    return np.sum(x * x)\n",
     13.25, [2.0, -2.0, 3.0, 6.0]),
    ("    A = x.reshape(2, 2)\n    A[0, 0] = 5.0\n    return np.sum(x * x)\n",
     38.25, [0.0, -4.0, 1.0, 6.0]),
    ("    A = x.reshape(2, 2)\n    row = A[0]\n    row[1] = row[0] * 3.0\n"
     "    return np.sum(x * x)\n", 1.0 + 9.0 + 0.25 + 9.0, [20.0, 0.0, 1.0, 6.0]),
    ("    y = np.zeros(4)\n    z = y[2:]\n    y[2] = x[0]\n"
     "    return np.sum(z * x[2:])\n", 0.5, [0.5, 0.0, 1.0, 0.0]),
    ("    y = x.copy()\n    w = y[::2]\n    w *= x[1]\n    return np.sum(y)\n",
     -2.0 * 1.5 - 2.0 + 3.0, [-2.0, 2.5, -2.0, 1.0]),
    ("    y = x\n    y[3] = y[0] * 2.0\n    return np.sum(x * x)\n",
     1.0 + 4.0 + 0.25 + 4.0, [10.0, -4.0, 1.0, 0.0]),
    ("    A = x.reshape(2, 2)\n    B = A.T\n    B[0, 1] = 0.0\n"
     "    return np.sum(x * x) + A[1, 0]\n", 14.0, [2.0, -4.0, 0.0, 6.0]),
], ids=["slice +=", "reshape", "row", "zeros then slice", "strided *=", "rebinding", ".T"])
def test_reference_views_are_written_through(src, value, grad):
    """Views written through one name and read through the other: numpy's values."""
    x = np.array([1.0, -2.0, 0.5, 3.0])
    src = "def f(x):\n" + src
    r = _ref(src, x)
    assert r.value == _numpy(src, x) == value
    np.testing.assert_array_equal(r.grads[0], grad)


def test_reference_constant_powers_at_zero():
    """x ** 0.0 and np.power(x, 0.0) at x = 0 have gradient 0, x ** 1 gradient 1, x ** 2
    gradient 0; x ** 0.5 at 0 has an infinite partial (the program is discarded)."""
    x = np.array([0.0, 2.0, 0.0, -1.0])
    r = _ref("def f(x):\n    return np.sum(x ** 0.0) + np.sum(np.power(x, 0.0)) + "
             "np.sum(x ** 0) + math.pow(x[0], 0.0)\n", x)
    assert (r.value, r.singular) == (13.0, 0)
    np.testing.assert_array_equal(r.grads[0], np.zeros(4))
    r = _ref("def f(x):\n    return np.sum(x ** 1.0) + np.sum(np.power(x, 2)) + "
             "x[2] ** 1 + x[0] ** 2.0\n", x)
    np.testing.assert_array_equal(r.grads[0], [1.0, 5.0, 2.0, -1.0])
    assert _ref("def f(x):\n    return np.sum(np.abs(x) ** 0.5)\n", x).singular
    program = Program("def f(x):\n    return np.sum(np.abs(x) ** 0.5)\n",
                      (("x", "array1/zeros"),), 1)
    assert list(program.args()[0] == 0.0) == [True, True, False, True]
    assert check(program, oracle_only=True).status == "discard"     # an inf partial


def test_reference_counts_jumps_of_step_functions():
    """y % 1.5 at y = 0 (a multiple of 1.5) and floor, // at an integer are where the step
    jumps: kinks, so finite differences (which straddle the jump) are not compared. Found by
    a --groups campaign (seed 312): `return y * (y % 1.5)` at y = 0, the differences 0.39
    against the exact 0.16."""
    program = Program("def f(x, y):\n    v = y % 1.5\n    return y * v + np.sum(x)\n",
                      (("x", "array1"), ("y", "float/zero")), 1)
    assert program.args()[1] == 0.0
    assert check(program, oracle_only=True).status != "mismatch"
    for body, y in (("y % 1.5", 3.0), ("math.floor(y)", 2.0), ("y // 1.0", -1.0),
                    ("np.floor(y)", 4.0)):
        r = _ref(f"def f(y):\n    return y * ({body})\n", y)
        assert r.kinks == 1, body
        assert _ref(f"def f(y):\n    return y * ({body})\n", y + 0.25).kinks == 0, body


def test_reference_masks():
    """x[x > c] in a sum, y[m] = 0.0 and np.where with a named mask: the selected entries
    get the gradient; a comparison of equal values is counted as a kink."""
    x = np.array([1.0, -2.0, 0.5, 3.0])
    src = ("def f(x):\n"
           "    y = x * x\n"
           "    m = x > 0.7\n"
           "    y[m] = 0.0\n"
           "    return np.sum(x[x > 0.0] * 2.0) + np.sum(y) + np.sum(np.where(m, x, -x))\n")
    r = _ref(src, x)
    assert r.value == _numpy(src, x)
    np.testing.assert_array_equal(r.grads[0], [3.0, -5.0, 2.0, 3.0])
    assert (r.kinks, _ref("def f(x):\n    return np.sum(x[x >= 0.5])\n", x).kinks) == (0, 1)


PERMUTED = ["np.transpose(t, (1, 0, 2))", "t.transpose(0, 2, 1)", "t.transpose((2, 0, 1))",
            "t.T", "np.transpose(t)", "np.swapaxes(t, 0, 2)", "t.swapaxes(-1, 1)",
            "np.moveaxis(t, 0, -1)", "np.moveaxis(t, -1, 0)"]


@pytest.mark.parametrize("perm", PERMUTED)
def test_reference_3d_transposes(perm):
    """A weighted sum of a permuted 3-D array, reduced over an axis too: linear in t, so its
    gradient is the program's value at each basis array (numpy's own permutation)."""
    t = np.arange(24.0).reshape(2, 3, 4) / 7.0
    src = (f"def f(t):\n    p = {perm}\n"
           f"    return np.sum(p * np.arange(24.0).reshape(p.shape)) + "
           f"np.sum(np.sum(p, axis=-2) * np.arange(1.0, 1.0 + p.shape[0] * p.shape[2])"
           f".reshape(p.shape[0], p.shape[2])) + p[1, 1, 0]\n")
    r = _ref(src, t)
    assert r.value == pytest.approx(_numpy(src, t), rel=1e-14)
    want = np.zeros(t.shape)
    for idx in np.ndindex(t.shape):
        e = np.zeros(t.shape)
        e[idx] = 1.0
        want[idx] = _numpy(src, e)
    np.testing.assert_array_equal(r.grads[0], want)


def test_reference_3d_axis_reductions():
    t = np.array([[[1.0, 5.0], [2.0, -1.0]], [[0.5, 0.5], [3.0, 2.0]]])
    src = ("def f(t):\n    return np.sum(np.max(t, axis=-1) * np.array([[1.0, 2.0], [3.0, 4.0]]))"
           " + np.sum(t.prod(0)) + np.mean(t, -3)[1, 0]\n")
    r = _ref(src, t)
    assert r.value == _numpy(src, t)
    want = np.zeros(t.shape)
    want[0, 0, 1], want[0, 1, 0], want[1, 1, 0] = 1.0, 2.0, 4.0
    want[1, 0] += 0.5 * 3.0          # np.max over [0.5, 0.5]: a tie, split equally
    want[0] += t[1]
    want[1] += t[0]
    want[:, 1, 0] += 0.5
    np.testing.assert_array_equal(r.grads[0], want)
    assert r.kinks == 1


def test_reference_active_constructors():
    """np.linspace with differentiated end points (numpy's formula), np.arange from a
    float start, np.full, np.full_like, np.array, np.eye * a, np.diag(v), np.empty filled."""
    x, y = np.array([1.0, -2.0, 0.5, 3.0]), 0.25
    cases = [
        ("np.sum(np.linspace(y, x[0], 5))", [2.5, 0, 0, 0], 2.5),
        ("np.linspace(y, x[0], 5)[1]", [0.25, 0, 0, 0], 0.75),
        ("np.sum(np.arange(y, y + 2.0, 0.5))", [0, 0, 0, 0], 4.0),
        ("np.sum(np.full(4, y * x[1]) + np.full_like(x, y))", [0, 1.0, 0, 0], -4.0),
        ("np.sum(np.array([y, x[2] * 2.0, 3.0]) ** 2)", [0, 0, 4.0, 0], 0.5),
        ("np.sum((np.eye(3) * y) @ x[1:])", [0, 0.25, 0.25, 0.25], 1.5),
        ("np.sum(np.diag(x) @ x)", [2.0, -4.0, 1.0, 6.0], 0.0),
    ]
    for expr, gx, gy in cases:
        src = f"def f(x, y):\n    return {expr}\n"
        r = _ref(src, x, y)
        assert r.value == pytest.approx(_numpy(src, x, y), rel=1e-15), expr
        np.testing.assert_allclose(r.grads[0], gx, rtol=1e-15, err_msg=expr)
        assert r.grads[1] == pytest.approx(gy, rel=1e-15), expr
    src = ("def f(x, y):\n    a = np.empty(4)\n    for i in range(4):\n"
           "        a[i] = x[3 - i] * y\n    return np.sum(a * np.arange(4.0))\n")
    r = _ref(src, x, y)
    assert r.value == _numpy(src, x, y)
    np.testing.assert_allclose(r.grads[0], [0.75, 0.5, 0.25, 0.0], rtol=1e-15)


def test_reference_defaults_named_like_globals():
    """A keyword-only parameter shadows the module global of the same name; the global is
    read where it is not shadowed; defaults are used where nothing is passed."""
    src = ("gain = 5.0\n"
           "def h(p, q=1.5, *, gain=2.0):\n    return p * gain + q\n"
           "def f(x, y, *, scale=0.5):\n"
           "    return h(y) + h(y, gain=x[0]) + h(y, x[1]) + gain * y * scale\n")
    x, y = np.array([1.0, -2.0, 0.5, 3.0]), 0.25
    r = _ref(src, x, y)
    assert r.value == _numpy(src, x, y) == 0.5 + 1.5 + 0.25 + 1.5 + 0.5 - 2.0 + 0.625
    np.testing.assert_array_equal(r.grads[0], [0.25, 1.0, 0.0, 0.0])
    assert r.grads[1] == 2.0 + 1.0 + 2.0 + 2.5


def test_argument_kinds_and_layouts():
    """The argument kinds of the groups: float32, exact zeros, index arrays, and layouts
    that copy_arg keeps and the reference mirrors (numpy's view-or-copy for a reshape)."""
    params = (("x", "array1/f32+strided"), ("y", "float/zero"), ("w", "array2/F"),
              ("t", "array3/perm"), ("u", "array1/rev+zeros"), ("ix", "index:0,2,2"))
    x, y, w, t, u, ix = Program("", params, 5).args()
    assert x.dtype == np.float32 and not x.flags.c_contiguous and x.shape == (4,)
    assert y == 0.0 and w.flags.f_contiguous and not w.flags.c_contiguous
    assert t.shape == (2, 3, 4) and not (t.flags.c_contiguous or t.flags.f_contiguous)
    assert u.strides[0] < 0 and np.any(u == 0.0)
    assert ix.dtype == np.int64 and list(ix) == [0, 2, 2]
    assert Program("", params, 5).float_params() == (0, 1, 2, 3, 4)
    for a in (x, w, t, u):
        c = copy_arg(a)
        assert c.strides == a.strides and c.dtype == a.dtype and np.array_equal(c, a)
        assert not np.shares_memory(c, a)
    # a reshape of a Fortran-order array copies in numpy: the write does not reach w
    src = "def f(w):\n    v = w.reshape(6)\n    v[0] = 5.0\n    return np.sum(w * w)\n"
    for arr in (w, np.ascontiguousarray(w)):
        r = _ref(src, arr)
        assert r.value == pytest.approx(_numpy(src, arr), rel=1e-15)
        assert (r.grads[0][0, 0] == 0.0) == arr.flags.c_contiguous
    r = _ref("def f(x):\n    return np.sum(x * x)\n", x)
    np.testing.assert_allclose(r.grads[0], 2.0 * x.astype(np.float64), rtol=1e-15)


# the construct groups' programs, oracle only: numpy's value and finite differences agree
# with the reference on drawn programs of every group (adjit does not run here)
GROUP_PROGRAMS = int(os.environ.get("ADJIT_FUZZ_GROUP_PROGRAMS", "12"))


# ... and adjit on a few programs of each group (every argnums subset, in the interpreter;
# `make fuzz` draws them all, by the thousand)
GROUP_ADJIT_PROGRAMS = int(os.environ.get("ADJIT_FUZZ_GROUP_ADJIT_PROGRAMS", "5"))


@pytest.mark.spread
@pytest.mark.parametrize("group", sorted(grammar.GROUPS))
def test_group_programs_match_the_reference(group, monkeypatch):
    monkeypatch.setattr(grammar, "AVOID", grammar.AVOID - {group})
    outcomes = []

    @settings(max_examples=GROUP_ADJIT_PROGRAMS, database=None, phases=[Phase.generate],
              derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
    @given(programs())
    def run(program):
        out = check(program, fd=False)
        assert out.status != "mismatch", f"{out.reason}\n{out.detail}"
        outcomes.append(out.status)
    run()
    assert outcomes.count("ok") >= 1, outcomes


@pytest.mark.parametrize("group", sorted(grammar.GROUPS))
def test_group_programs_agree_with_numpy(group, monkeypatch):
    monkeypatch.setattr(grammar, "AVOID", grammar.AVOID - {group})
    outcomes = []

    @settings(max_examples=GROUP_PROGRAMS, database=None, phases=[Phase.generate],
              derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
    @given(programs())
    def run(program):
        out = check(program, oracle_only=True)
        assert out.status != "mismatch", f"{out.reason}\n{out.detail}"
        outcomes.append((out.status, group in program.groups))
    run()
    assert sum(s == "ok" and drew for s, drew in outcomes) >= len(outcomes) // 2, outcomes


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


def plant(monkeypatch, fn, partial):
    """Give `fn` a wrong derivative in the registry for the rest of one test."""
    monkeypatch.setattr(table.REGISTRY.get(fn), "rule", table.Rule(("x",), (partial,)))


def test_planted_wrong_rule_is_caught_and_reduced(monkeypatch):
    assert check(PLANTED).status == "ok"
    plant(monkeypatch, math.sin, "math.cos(x) * (1.0 + 1e-9)")
    out = check(PLANTED)
    assert (out.status, out.reason) == ("mismatch", "gradient differs")
    small = reduce(PLANTED, jit=False)
    assert check(small).reason == "gradient differs"
    assert len(small.source) < len(PLANTED.source) / 2
    assert "math.sin(y)" in small.source and "for" not in small.source


def test_an_internal_error_is_a_crash_never_a_refusal(monkeypatch):
    """An exception inside adjit (planted in the normalizer) reaches the fuzzer as an
    adjit.errors.InternalError: a crash, even in a construct-group program, where a clean
    refusal (AdjitError) is a discard the campaign counts."""
    def crash(self, s, out):
        raise TypeError("planted")
    monkeypatch.setattr(anf._Normalizer, "aug_assign", crash)
    grouped = Program(PLANTED.source, PLANTED.params, PLANTED.seed, ("loops",))
    for program in (PLANTED, grouped):
        out = check(program, fd=False)
        assert (out.status, out.reason) == ("mismatch", "adjit crashed (TypeError)")
        assert "internal adjit error" in out.detail
        assert category(out) == "crash"


PLANTED_VEC = Program("def f(x, y, w):\n"
                      "    a = np.sin(x[1:, None] * w) + y\n"
                      "    a[1:] += np.tanh(w[1:] @ w[1:].T)\n"
                      "    return np.sum(np.max(a, axis=1)) + np.mean(w @ x[::2])\n",
                      (("x", "array1"), ("y", "float"), ("w", "array2")), 11)


def test_planted_wrong_rule_is_caught_in_vectorized_code(monkeypatch):
    """A wrong rule reached only through np.sin inside a broadcast expression is caught
    (vectorized code is lowered to the same scalar rules)."""
    assert check(PLANTED_VEC).status == "ok"
    plant(monkeypatch, math.sin, "math.cos(x) * (1.0 + 1e-9)")
    out = check(PLANTED_VEC)
    assert (out.status, out.reason) == ("mismatch", "gradient differs")


def test_planted_wrong_rule_is_caught_under_numba(monkeypatch):
    plant(monkeypatch, math.cos, "-math.sin(x) * (1.0 + 1e-9)")
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


# float32 programs ill-conditioned in float32 -----------------------------------------------------
F32_COS = Program(
    "G1 = np.array([[2.0, 1.5, 1.5, 1.0], [0.3, -1.25, -0.7, -2.0], [-0.7, -1.25, 1.5, -1.25]])\n"
    "\n"
    "def h1(b, p):\n"
    "    return 1.0\n"
    "\n"
    "def h5(b, p):\n"
    "    v7 = 0.0\n"
    "    return 1.0\n"
    "\n"
    "def f(x, y, t, ix, *, gain=0.5):\n"
    "    a11 = G1.copy()\n"
    "    v12 = 1.0\n"
    "    v15 = t[0, 1, 1]\n"
    "    a16 = a11[-1]\n"
    "    a16[ix[1]] = math.tanh(v15 - 1.5)\n"
    "    buf17 = np.empty(4)\n"
    "    acc18 = 0.0\n"
    "    for i20 in range(4):\n"
    "        for j21 in range(4):\n"
    "            buf17[j21] = a16[j21] - a16[i20]\n"
    "        t19 = 0.0\n"
    "        for j21 in range(4):\n"
    "            t19 += buf17[j21] * y\n"
    "        acc18 += -t19 * t19\n"
    "    u22 = x.copy()\n"
    "    un23 = x * 1.0\n"
    "    for i26 in range(0, 4):\n"
    "        un23[i26] = u22[i26] - a11[1, 1] * u22[i26] * u22[i26] * u22[i26]\n"
    "    u22[i26] = un23[i26]\n"
    "    acc24 = 0.0\n"
    "    acc24 += u22[i26] * u22[i26]\n"
    "    a27 = x\n"
    "    v29 = 2.0\n"
    "    return math.cos((acc18 + acc24) * (acc18 + acc24) * acc24) + np.sum(a11)\n",
    (("x", "array1/zeros+f32+strided"), ("y", "float"), ("t", "array3/zeros+f32+perm"),
     ("ix", "index:0,2,2,3")), 1923189)


def test_a_float32_program_its_rounding_moves_far_is_discarded():
    """cos of an intermediate near 7279 built from float32 stores (a campaign's find, seed
    5201, reduced): float32's rounding of u22 and of u22 * u22 moves the gradient by 1 %, so
    the float64 reference (9215.48) cannot judge adjit there; adjit's partial is the float32
    program's own derivative, worked out here by hand as numba rounds (9119.382)."""
    out = check(F32_COS)
    assert (out.status, out.reason[:31]) == ("discard", "ill-conditioned in float32 (the")
    x, y, t, ix = F32_COS.args()
    g = adjit.grad(load(F32_COS.source, REAL_NAMESPACE))(*F32_COS.args())
    a16 = np.array([-0.7, -1.25, 1.5, -1.25])
    a16[ix[1]] = math.tanh(float(t[0, 1, 1]) - 1.5)
    acc18 = -sum((np.sum(a16 - a16[i]) * y) ** 2 for i in range(4))
    x3 = float(x[3])
    u = float(np.float32(x3 + 1.25 * x3 ** 3))             # un23[3], stored in float32
    acc24 = float(np.float32(np.float32(u) * np.float32(u)))    # float32 * float32
    big = (acc18 + acc24) ** 2 * acc24
    want = -math.sin(big) * (2 * (acc18 + acc24) * acc24 + (acc18 + acc24) ** 2) * 2 * u * \
        (1 + 3 * 1.25 * x3 ** 2)
    assert abs(big - 7279.19) < 0.01 and abs(want - 9119.382) < 1e-3
    np.testing.assert_allclose(g[3], want, rtol=1e-6)
    np.testing.assert_array_equal(g[:3], 0.0)


def test_a_wrong_rule_in_a_well_conditioned_float32_program_is_still_caught(monkeypatch):
    program = Program(PLANTED.source, (("x", "array1/zeros+f32+strided"), ("y", "float")), 7)
    assert check(program).status == "ok"
    plant(monkeypatch, math.sin, "math.cos(x) * 1.01")
    assert (check(program).status, check(program).reason) == ("mismatch", "gradient differs")


# the groups judged by finite differences (grammar.FD_GROUPS: draws, forms) -----------------------
DRAWS = Program("def h(b, p):\n"
                "    s = 0.0\n"
                "    for v in b:\n"
                "        s += v * np.random.normal(p, 0.5 + p * p)\n"
                "    return s\n"
                "\n"
                "\n"
                "def f(x, y):\n"
                "    np.random.seed(7)\n"
                "    np.random.random()\n"
                "    s = 0.0\n"
                "    for i in range(4):\n"
                "        s += math.sin(x[i]) * np.random.laplace(y, 0.5 + y * y)\n"
                "        s += x[np.random.randint(0, 4)] * np.random.standard_normal()\n"
                "    return s + h(x, y) + np.sum(np.random.normal(y, 1.5, 4) * x)\n",
                (("x", "array1"), ("y", "float")), 5, ("draws",))


def test_draws_are_judged_by_differences_of_the_program():
    """A program that seeds itself and draws in loops, in a helper, as an index and at
    once: adjit against differences of the program in Python (numpy's generator) and, for
    the numba runs, of the program compiled by numba; checkpoint=2 is refused for its loop
    that draws, and checkpoint="auto" is the recorded gradient to the bit."""
    out = check(DRAWS, jit=True)
    assert (out.status, out.fd) == ("ok", "checked"), f"{out.reason}\n{out.detail}"
    f = load(DRAWS.source, REAL_NAMESPACE)
    with pytest.raises(adjit.AdjitError, match=ONCE_REFUSAL):
        adjit.grad(f, argnums=(0, 1), checkpoint=2)(*DRAWS.args())


def test_a_wrong_rule_is_caught_by_differences(monkeypatch):
    """A planted wrong derivative of math.sin in a draws program: a mismatch in the
    interpreter and under numba (the numba oracle is the program compiled by numba)."""
    plant(monkeypatch, math.sin, "math.cos(x) * (1.0 + 1e-4)")
    out = check(DRAWS, subsets=[(0,)])
    assert (out.status, out.reason) == ("mismatch", "gradient differs from finite differences")
    out = check(DRAWS, jit=True, subsets=[])
    assert (out.status, out.reason) == ("mismatch", "gradient differs from finite differences")
    assert "(numba)" in out.detail


def test_a_program_that_does_not_seed_itself_is_reported():
    """Without its seed a draws program is no test (every evaluation draws anew): the
    checker says so instead of comparing."""
    source = DRAWS.source.replace("    np.random.seed(7)\n", "")
    out = check(Program(source, DRAWS.params, DRAWS.seed, DRAWS.groups), subsets=[])
    assert (out.status, out.reason) == ("mismatch", "the program draws differently each run")


def test_differences_skip_ties_kinks_and_flips():
    """Differences are compared only where two steps agree and so do the two sides: not at
    a tie of max, abs at 0, or a branch that flips within the step."""
    def f(x):
        flip = 1.0 if x[3] > 0.5 else 0.0
        return max(x[0], 2.0 * x[0]) + abs(x[1]) + math.sin(x[2]) + flip * x[3]
    x = np.array([0.0, 0.0, 0.7, 0.5])
    d, _, ok = _differences(f, [x], (0,), f(x))[0]
    assert list(ok) == [False, False, True, False]
    assert d[2] == pytest.approx(math.cos(0.7), rel=1e-8)


def test_form_leaves_and_arguments():
    """The forms of group "forms": adjit's FORMS that numba accepts (none marked `!`), but
    the draws of group "draws"; their placeholders' arguments in the domains they need."""
    from adjit.rules.forms import FORMS
    leaves = grammar.form_leaves()
    allowed = {f for forms in FORMS.values() for f in forms if not f.startswith("!")}
    assert len(leaves) > 200 and {form for form, _, _ in leaves} <= allowed
    assert not any(re.match(r"np\.random\.(normal|uniform|exponential|random\(|seed)", form)
                   for form, _, _ in leaves)
    assert any(form.startswith("np.random.weibull") for form, _, _ in leaves)
    params = tuple(("f" + ph, "form:" + ph) for ph in grammar.FORM_SHAPES)
    program = Program("", params, 3)
    args = dict(zip(grammar.FORM_SHAPES, program.args()))
    assert all(np.shape(args[ph]) == shape for ph, shape in grammar.FORM_SHAPES.items())
    assert np.all(args["p"] > 0) and np.all(np.abs(args["u"]) < 1) and 0 < args["s"] < 1
    assert np.all(np.linalg.eigvalsh(args["S"]) > 0.5) and abs(np.linalg.det(args["M"])) > 0.1
    assert program.float_params() == tuple(range(len(params)))


def test_reference_module_arrays_and_loops_over_arrays():
    """Module-level arrays sliced and indexed, `for v in a`, enumerate, zip and rows of a
    2-D array in a helper (groups "globals", "callee-loops"): refad's value is numpy's and
    its gradient the one written out by hand."""
    src = ("G1 = np.array([[0.5, -1.25, 0.3, 2.0], [1.5, -0.7, 3.0, 0.5], "
           "[0.25, 1.0, -2.0, 0.75]])\n"
           "G2 = np.array([2.0, -0.7, 0.75, 1.5])\n"
           "def h(b, c, p):\n"
           "    s = 0.0\n"
           "    for v in b:\n"
           "        s += v * p\n"
           "    for k, v in enumerate(c):\n"
           "        s += v * G2[k]\n"
           "    for u, v in zip(b, G2[1:]):\n"
           "        s += u * v\n"
           "    for r in G1[1:]:\n"
           "        s += np.sum(r[:2] * b[:2])\n"
           "    return s\n"
           "def f(x, y):\n"
           "    return h(x, x[1:], y) + np.sum(G1[1:, :2] * x[:2]) + G1[2, 1] * y\n")
    x, y = np.array([1.0, -2.0, 0.5, 3.0]), 0.25
    r = _ref(src, x, y)
    assert r.value == pytest.approx(_numpy(src, x, y), rel=1e-15)
    g1 = np.array([[0.5, -1.25, 0.3, 2.0], [1.5, -0.7, 3.0, 0.5], [0.25, 1.0, -2.0, 0.75]])
    g2 = np.array([2.0, -0.7, 0.75, 1.5])
    want = np.full(4, y) + np.concatenate(([0.0], g2[:3])) + np.concatenate((g2[1:], [0.0]))
    want[:2] += 2.0 * g1[1:, :2].sum(axis=0)
    np.testing.assert_allclose(r.grads[0], want, rtol=1e-15)
    assert r.grads[1] == pytest.approx(np.sum(x) + g1[2, 1], rel=1e-15)

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
    """Drawn programs, without running them, contain every construct of the core language
    and of vectorized numpy the fuzzer is meant to cover (a grammar change cannot silently
    drop one): 300 at a time, from fixed seeds, until all are seen or 3,000 are drawn (which
    programs a seed gives depends on the process's string hashing, so one batch may miss a
    rare construct)."""
    seen = set()

    def collect(k):
        @seed(k)
        @settings(max_examples=300, database=None, phases=[Phase.generate], deadline=None,
                  suppress_health_check=list(HealthCheck))
        @given(programs())
        def batch(program):
            seen.update(features(ast.parse(program.source)))
        batch()
    for k in range(10):
        collect(k)
        if REQUIRED | VECTORIZED <= seen:
            break
    assert REQUIRED | VECTORIZED <= seen, sorted((REQUIRED | VECTORIZED) - seen)


GROUP_CONSTRUCTS = {
    "index-arrays": ("np.take(", "index array literal", "index argument", "x[ix[i]]",
                     "scatter", "scatter +="),
    "masks": ("mask read", "mask write", "np.where(mask"),
    "transpose3d": ("np.transpose(t, (", ".transpose(", ".T", "np.swapaxes(", "np.moveaxis("),
    "axis3d": ("axis -2", "3-D axis reduction"),
    "const-pow": ("** 0.0", "** 0.5", "np.power(", "math.pow(", "zeros argument"),
    "float32": ("f32 argument",),
    "strided-args": ("strided", "rev", "F", "perm"),
    "views": ("view", "view of an argument"),
    "kwdefaults": ("keyword-only", "call with keyword", "call without", "f default",
                   "global"),
    "constructors": ("np.linspace(", "np.eye(", "np.diag(", "np.empty(", "np.arange("),
    "draws": ("np.random.seed(", "active draw", "sized draw", "np.random.randint(",
              "draw thrown away", "draw in a helper", "draw in a loop"),
    "globals": ("global slice", "global element", "global in a helper"),
    "callee-loops": ("for v in", "enumerate(", "zip(", "loop helper called", "rows",
                     "module array iterated"),
    "forms": ("form argument", "form in a loop", "np.random.seed("),
}


def _group_features(program):
    """Which of GROUP_CONSTRUCTS a group program shows (by its text and arguments)."""
    src, kinds = program.source, dict(program.params)
    seen = {c for cs in GROUP_CONSTRUCTS.values() for c in cs if c in src}
    seen.discard(".T")
    if re.search(r"np\.array\(\[-?\d+(, -?\d+)*\]\)", src):
        seen.add("index array literal")
    if "ix" in kinds and re.search(r"\[ix[\],]", src):
        seen.add("index argument")
    if re.search(r"\[ix\d*\[i\d+\]\]", src):
        seen.add("x[ix[i]]")
    if re.search(r"\w\[(:, )?(ix\d*|np\.array\(\[[-\d, ]+\]\))\] =", src):
        seen.add("scatter")
    if re.search(r"\w\[(:, )?(ix\d*|np\.array\(\[[-\d, ]+\]\))\] [-+*]=", src):
        seen.add("scatter +=")
    if re.search(r"\]\[(m\d+|\(.*[<>].*\))\]", src) or re.search(r"\w\[\w+ [<>]", src):
        seen.add("mask read")
    if re.search(r"\[(m\d+|\(.*[<>].*\)|\w+ [<>] [-\d.]+)\] [-+*]?=", src):
        seen.add("mask write")
    if re.search(r"np\.where\((m\d+|\()", src):
        seen.add("np.where(mask")
    if re.search(r"t\w*\)?\.T\b|\.T\.", src) and "array3" in str(kinds.values()):
        seen.add(".T")
    for k in ("-2",):
        if re.search(rf"axis={k}\b|\.(sum|mean|max|min|prod)\({k}\)|, {k}\)", src):
            seen.add(f"axis {k}")
    if re.search(r"(sum|mean|max|min|prod)\((t|a\d+|np\.\w+\(t\)), (axis=)?-?\d\)", src):
        seen.add("3-D axis reduction")
    if any(k.split("/")[0].startswith("array") and "zeros" in k for k in kinds.values()):
        seen.add("zeros argument")
    mods = {m for k in kinds.values() for m in k.partition("/")[2].split("+")}
    seen |= {"f32 argument"} if "f32" in mods else set()
    seen |= mods & {"strided", "rev", "F", "perm"}
    tree = ast.parse(src)
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, (ast.Subscript,
                                                                    ast.Attribute, ast.Call,
                                                                    ast.Name)) and \
                re.fullmatch(r"a\d+", ast.unparse(node.targets[0])):
            text = ast.unparse(node.value)
            if re.fullmatch(r"(x|w|a\d+)(\[[^\]]*\]|\.T|\.reshape\([\d, ]+\))?", text) and \
                    "np." not in text:
                seen.add("view")
                if text[0] in "xw":
                    seen.add("view of an argument")
        if isinstance(node, ast.FunctionDef):
            if node.args.kwonlyargs:
                seen.add("keyword-only")
            if node.name == "f" and (node.args.defaults or node.args.kw_defaults):
                seen.add("f default")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id.startswith("h"):
            seen.add("call with keyword" if node.keywords else "call without")
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and \
                node.targets[0].id in grammar.GLOBALS:
            seen.add("global")
        seen |= _new_group_features(node, kinds)
    if _loop_helper_called(tree):
        seen.add("loop helper called")
    return seen


def _new_group_features(node, kinds):
    """GROUP_CONSTRUCTS of groups "draws", "globals", "callee-loops" and "forms" in a node."""
    seen = set()
    # the text of the nodes read below only (unparsing every node of a program's walk took
    # most of this test's time)
    text = ast.unparse(node) if isinstance(
        node, (ast.Call, ast.Expr, ast.FunctionDef, ast.For, ast.While)) else ""
    if isinstance(node, ast.Call) and text.startswith("np.random."):
        if any(not isinstance(a, ast.Constant) for a in node.args[:2]) and \
                re.match(r"np\.random\.(normal|uniform|exponential|laplace|gumbel|logistic|"
                         r"lognormal|rayleigh)\(", text):
            seen.add("active draw")
        if re.match(r"np\.random\.\w+\(.*(, |size=)(\d|\(\d)", text):
            seen.add("sized draw")
    if isinstance(node, ast.Expr) and text.startswith("np.random.") and \
            "seed" not in text:
        seen.add("draw thrown away")
    if isinstance(node, ast.FunctionDef) and node.name != "f" and "np.random." in text:
        seen.add("draw in a helper")
    if isinstance(node, (ast.For, ast.While)) and "np.random." in text:
        seen.add("draw in a loop")
        if any(k.startswith("form:") for k in kinds.values()):
            seen.add("form in a loop")
    if isinstance(node, ast.Subscript) and re.fullmatch(r"G\d", ast.unparse(node.value)):
        elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        seen.add("global slice" if any(isinstance(e, ast.Slice) for e in elts) else
                 "global element")
    if isinstance(node, ast.FunctionDef) and node.name != "f" and \
            re.search(r"\bG\d\b", text):
        seen.add("global in a helper")
    if isinstance(node, ast.For) and not isinstance(node.iter, ast.Call):
        seen.add("for v in")
        if isinstance(node.target, ast.Name) and re.search(r"np\.sum\(" + node.target.id,
                                                             text):
            seen.add("rows")
        if re.fullmatch(r"G\d.*", ast.unparse(node.iter)):
            seen.add("module array iterated")
    if isinstance(node, ast.For) and isinstance(node.iter, ast.Call):
        fn = ast.unparse(node.iter.func)
        if fn in ("enumerate", "zip"):
            seen.add(fn + "(")
            if any(re.fullmatch(r"G\d.*", ast.unparse(a)) for a in node.iter.args):
                seen.add("module array iterated")
    if isinstance(node, ast.FunctionDef) and node.name == "f" and \
            any(k.startswith("form:") for k in kinds.values()):
        seen.add("form argument")
        for c in ast.walk(node):
            if isinstance(c, ast.For) and any(
                    isinstance(n, ast.Name) and n.id.startswith("f") and n.id[1:] in
                    grammar.FORM_SHAPES for n in ast.walk(c)):
                seen.add("form in a loop")
    return seen


def _loop_helper_called(tree):
    """Whether a helper with a loop over an array (not a range) is called."""
    loopers = {d.name for d in tree.body if isinstance(d, ast.FunctionDef) and d.name != "f"
               and any(isinstance(n, ast.For) and not (
                   isinstance(n.iter, ast.Call) and ast.unparse(n.iter.func) == "range")
                   for n in ast.walk(d))}
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and
               n.func.id in loopers for n in ast.walk(tree))


def test_groups_are_drawn_only_when_enabled(monkeypatch):
    """25 drawn programs of each group (--only), and 20 with every group (--all-constructs),
    show each group and its constructs; with the groups avoided none of 50 programs draws any (the default programs are
    those of the grammar before the groups existed)."""
    seen, groups = set(), set()

    def collect(n):
        @settings(max_examples=n, database=None, phases=[Phase.generate], derandomize=True,
                  deadline=None, suppress_health_check=list(HealthCheck))
        @given(programs())
        def run(program):
            groups.update(program.groups)
            seen.update(_group_features(program))
        run()
    for group in grammar.GROUPS:
        monkeypatch.setattr(grammar, "AVOID", grammar.AVOID - {group})
        collect(25)
    monkeypatch.setattr(grammar, "AVOID", set())
    collect(20)
    assert groups == set(grammar.GROUPS)
    wanted = {c for cs in GROUP_CONSTRUCTS.values() for c in cs}
    assert wanted <= seen, sorted(wanted - seen)

    monkeypatch.setattr(grammar, "AVOID", grammar.AVOID | set(grammar.GROUPS))
    groups.clear()
    collect(50)
    assert not groups


def test_a_chunked_campaign_runs_each_chunk_in_a_fresh_process(capsys):
    """`--chunk K`: a worker's programs K at a time, each chunk in a new process (so that
    a long campaign's memory stays bounded), every program still counted."""
    from fuzz.campaign import main
    main(["-n", "3", "--workers", "1", "--chunk", "2", "--seed", "5", "--no-save",
          "--progress", "0", "--numba-every", "0"])
    out = capsys.readouterr().out
    assert re.search(r"programs tried:\s+3 ", out), out
    assert re.search(r"mismatches:\s+0", out), out
