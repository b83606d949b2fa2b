"""Backward loops over one range run as one loop (reverse/fusion.py).

The programs are vectorized numpy and plain loops as numba users write them. Each gradient
is checked against central finite differences of numba's compile of the function, at
shapes where no operand is broadcast (the fused version runs) and where one is (the loops
run as they were), and against the same gradient built without the pass, to the bit.
"""
import math

import numba
import numpy as np
import pytest

import adjit
from adjit.reverse import sweep

from fd import check_value_and_grad


def softmax_cross_entropy(z, y):
    m = adjit.stop_gradient(np.max(z))
    lse = m + np.log(np.sum(np.exp(z - m)))
    return -np.sum(y * (z - lse))


def two_sums(x, w):
    """Two reductions of one array: two backward loops adding into x's adjoint."""
    return np.sum(x * w) + np.sum(np.sin(x) * np.cos(w)) + 0.5 * np.sum(x * x)


def loops_in_turn(x, w):
    """The same as loops: a dot product, then a sum of sines."""
    s = 0.0
    for i in range(x.shape[0]):
        s += w[i] * x[i]
    t = 0.0
    for i in range(x.shape[0]):
        t += math.sin(x[i]) * w[i]
    return s * t


def a_scan_beside(x, w):
    """A cumulative sum (its adjoint a scan running downward) beside elementwise terms."""
    return np.sum(np.cumsum(x) * w) + np.sum(x * x * w)


def shifted(x):
    """Differences of neighbours: adjoint loops writing x's adjoint one element over."""
    d = x[1:] - x[:-1]
    return np.sum(d * d) + np.sum(np.exp(x))


def coupled(x):
    """A sum the second reduction scales by: its adjoint needs the first loop's whole sum."""
    s = np.sum(x * x)
    return np.sum(np.sin(x) * s)


def inner_ranges(x, w):
    """Loops over the inner elements; the second also reads the weight one element back."""
    s = 0.0
    for i in range(1, x.shape[0] - 1):
        s += x[i] * w[i]
    t = 0.0
    for i in range(1, x.shape[0] - 1):
        t += math.exp(x[i]) * w[i]
    u = 0.0
    for i in range(1, x.shape[0] - 1):
        u += x[i] * x[i] * w[i - 1]
    return s * t + u


def updated_after_use(x, c):
    """An array changed after its last use (an element of it `+= c`): c's adjoint reads one
    element of the array's adjoint between the backward loops."""
    a = x * 2.0
    s1 = np.sum(a * a)
    a[0] += c
    return s1 + np.sum(np.sin(x))


def overwritten_after_use(x, w):
    """A buffer refilled after its last use: its adjoint's first use in the backward sweep
    reads it (zeros) rather than adding to it."""
    a = x * 2.0
    s1 = np.sum(a * a)
    for i in range(x.shape[0]):
        a[i] = w[i] * 3.0
    return s1 + np.sum(np.sin(x))


def without_vector_math(x):
    """sinh's adjoint has no vector version: its loop stays scalar, and sin's stays apart
    (fused, sin's adjoint would lose its vector version too)."""
    return np.sum(np.sin(x)) + np.sum(np.sinh(x))


def scalar_scale(x, c):
    """A float parameter's adjoint summed in one loop: that loop does not vectorize."""
    return np.sum(np.sin(x)) + np.sum(np.tanh(c * x))


FUSED = {"two_sums", "loops_in_turn", "a_scan_beside", "inner_ranges",
         "updated_after_use", "overwritten_after_use"}
"""The programs whose backward loops run fused (where their shapes allow)."""


def _unfused(monkeypatch):
    monkeypatch.setitem(sweep.PIPELINES, "adjoint",
                        tuple(p for p in sweep.PIPELINES["adjoint"] if p != "fuse"))


def _same_bits(a, b):
    for x, y in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


N = 9
RNG = np.random.default_rng(7)
Z = RNG.normal(size=N)
Y = np.abs(RNG.normal(size=N))


@pytest.mark.parametrize("shapes", [(N, N), (N, 1), (1, N), (1, 1)],
                         ids=["same", "y-broadcast", "z-broadcast", "one"])
def test_softmax_cross_entropy_fused_where_nothing_broadcasts(shapes, monkeypatch):
    z, y = Z[:shapes[0]].copy(), Y[:shapes[1]].copy()
    built = adjit.value_and_grad(softmax_cross_entropy, argnums=(0, 1))
    got = check_value_and_grad(softmax_cross_entropy, (z, y), argnums=(0, 1), built=built)
    e = np.exp(z - z.max())
    want_z = e / e.sum() * np.sum(y * np.ones(max(shapes))) - y * np.ones(max(shapes))
    if shapes[0] == 1:      # lse is z itself: z - lse does not change with z
        want_z = np.zeros(1)
    np.testing.assert_allclose(got[0], want_z, rtol=1e-12, atol=1e-15)
    _unfused(monkeypatch)
    plain = adjit.value_and_grad(softmax_cross_entropy, argnums=(0, 1))
    _same_bits(got, plain(z, y)[1])


def test_the_fused_version_is_the_one_that_runs():
    """The source has the loops fused under a test of the strides and bounds, the adjoint
    allocated empty (where it was) and assigned there; the loops as they were zero it."""
    src = adjit.grad(softmax_cross_entropy).source_for(Z, Y).split("# backward sweep")[1]
    head, rest = src.split("if _f")
    fused, generic = rest.split("else:")
    assert "z_bar = vec.empty_like(z)" in head
    assert fused.count("for _i") == 1 and generic.count("for _i") == 2
    assert "z_bar[:] = 0.0" in generic and "zeros_like" not in src
    shown = adjit.show(softmax_cross_entropy, "sweep.fuse", Z, Y)
    assert "np.empty_like(z)" in shown and "np.empty_like" not in \
        adjit.show(softmax_cross_entropy, "sweep.dots", Z, Y)


@pytest.mark.parametrize("f", [two_sums, loops_in_turn, a_scan_beside, shifted, coupled,
                               inner_ranges, updated_after_use, overwritten_after_use,
                               without_vector_math, scalar_scale], ids=lambda f: f.__name__)
def test_programs_against_numba_and_unfused(f, monkeypatch):
    x = np.linspace(-0.8, 1.1, 7)
    w = np.cos(np.arange(7.0)) + 1.5
    if f in (shifted, coupled, without_vector_math):
        args, argnums = (x,), 0
    elif f in (updated_after_use, scalar_scale):
        args, argnums = (x, 0.3), (0, 1)
    else:
        args, argnums = (x, w), (0, 1)
    built = adjit.grad(f, argnums=argnums)
    got = built(*args)
    np.testing.assert_array_equal(x, np.linspace(-0.8, 1.1, 7))
    check_value_and_grad(f, args, argnums=argnums)
    source = built.source_for(*args)
    plain = adjit.show(f, "sweep.dots", *args, argnums=argnums)
    fused = adjit.show(f, "sweep.fuse", *args, argnums=argnums)
    assert (fused != plain) == (f.__name__ in FUSED), source
    _unfused(monkeypatch)
    _same_bits(got, adjit.grad(f, argnums=argnums)(*args))


def from_k(x, w, k):
    """Loops from a lower bound the caller passes: below 0, numba reads x[-3] as x[n - 3],
    so the loops visit some elements twice."""
    n = x.shape[0]
    a = x * 1.0
    s = 0.0
    for i in range(k, n):
        s += a[i] * w[i]
    for i in range(k, n):
        a[i] = a[i] * w[i]
    return s + np.sum(a * a)


def sums_from_k(x, w, k):
    """Two sums over range(k, n): below 0, some elements' terms are added twice."""
    n = x.shape[0]
    s = 0.0
    for i in range(k, n):
        s += x[i] * w[i]
    t = 0.0
    for i in range(k, n):
        t += math.sin(x[i]) * w[i]
    return s * t


@pytest.mark.parametrize("k", [-3, 0, 2])
def test_a_lower_bound_below_zero_runs_the_loops_as_they_were(k, monkeypatch):
    x = np.linspace(-0.9, 0.8, 8)
    w = np.linspace(0.3, 1.4, 8)
    got = check_value_and_grad(sums_from_k, (x, w, k), argnums=(0, 1))
    assert "if k >= 0" in adjit.grad(sums_from_k, argnums=(0, 1)).source_for(x, w, k)
    _unfused(monkeypatch)
    _same_bits(got, adjit.grad(sums_from_k, argnums=(0, 1))(x, w, k))


def test_the_weight_of_an_element_updated_twice_through_a_negative_index():
    """Older than the fusion: the in-place loop's adjoint ran upward (reverse/ascending.py),
    as if each iteration had its own element; with k < 0 two iterations update one."""
    x = np.linspace(-0.9, 0.8, 8)
    w = np.linspace(0.3, 1.4, 8)
    for k in (-3, 0, 2):
        check_value_and_grad(from_k, (x, w, k), argnums=(0, 1))


def test_broadcast_weight_runs_the_loops_as_they_were(monkeypatch):
    """A weight of length 1 broadcast against x: x's adjoint is still each element's; w's
    sums every element's term."""
    x = np.linspace(-0.8, 1.1, 7)
    w = np.array([0.7])
    got = check_value_and_grad(two_sums, (x, w), argnums=(0, 1))
    _unfused(monkeypatch)
    _same_bits(got, adjit.grad(two_sums, argnums=(0, 1))(x, w))


def test_fused_gradient_called_from_njit_code():
    g = adjit.grad(softmax_cross_entropy)

    @numba.njit
    def step(z, y, lr):
        return z - lr * g(z, y)

    z = Z.copy()
    np.testing.assert_allclose(step(z, Y, 0.1), Z - 0.1 * g(Z, Y), rtol=0, atol=0)
    np.testing.assert_array_equal(z, Z)
