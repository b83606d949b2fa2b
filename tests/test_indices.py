"""Array indices the generated loops know are never negative are written unsigned
(codegen/indices.py): numba then skips its test for a negative index, which otherwise keeps
an innermost loop that starts where another loop left off, or counts a packed index by hand,
from running in vector registers. Each program is the kind numba users write (a packed
triangular matrix as ADBench's GMM stores it, a loop from the far end, a user's own negative
index that must still wrap around); each gradient against central differences of numba's
compile, and the generated source for where the unsigned indices are."""
import re

import numpy as np
import pytest
from numba import njit

import adjit
from fd import fd_grad


def packed_lower_quadratic(icf, x):
    """|L x|^2 with L's diagonal exp(icf[:d]) and its strictly lower part stored column by
    column after it (icf[d:]), the packed layout ADBench's GMM uses."""
    d = x.shape[0]
    q = np.empty(d)
    for j in range(d):
        q[j] = np.exp(icf[j]) * x[j]
    idx = d
    for c in range(d):
        for r in range(c + 1, d):
            q[r] += icf[idx] * x[c]
            idx += 1
    s = 0.0
    for j in range(d):
        s += q[j] * q[j]
    return s


def from_the_middle(x, w):
    """A loop from a computed start (half the length), and one counting down to 0."""
    n = x.shape[0]
    h = n // 2
    s = 0.0
    for i in range(h, n):
        s += w[i] * x[i] * x[i - h]
    for i in range(n - 1, -1, -1):
        s = s * 0.5 + w[i] * x[i]
    return s


def wraps_around(x, k):
    """x[i - 1] at i = 0 is the last element, and x[i + k] with a negative k counts from the
    end: numba's meaning, which the unsigned indices must keep."""
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        s += x[i] * x[i - 1] + 0.5 * x[i + k] * x[i]
    return s


def _check(f, args, argnums):
    g = adjit.grad(f, argnums)
    got = g(*args)
    got = got if isinstance(got, tuple) else (got,)
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    forward = njit(f)
    for k, gk in zip(nums, got):
        want = fd_grad(forward, args, k)
        np.testing.assert_allclose(gk, want, rtol=1e-6, atol=1e-7)
    return g.source


def _inner_loops(src):
    """The lines of the innermost loops' bodies (a rough split by indentation)."""
    lines = src.splitlines()
    out = []
    for k, line in enumerate(lines):
        if line.strip().startswith("for ") and k + 1 < len(lines):
            depth = len(line) - len(line.lstrip())
            body = []
            for nxt in lines[k + 1:]:
                if nxt.strip() and len(nxt) - len(nxt.lstrip()) <= depth:
                    break
                body.append(nxt.strip())
            if not any(b.startswith(("for ", "while ")) for b in body):
                out += body
    return out


def test_a_packed_triangular_product_indexes_unsigned():
    rng = np.random.default_rng(0)
    d = 6
    icf = rng.normal(size=d * (d + 1) // 2) * 0.3
    x = rng.normal(size=d)
    src = _check(packed_lower_quadratic, (icf, x), (0, 1))
    inner = _inner_loops(src)
    assert any("icf[np.uint64(idx)]" in line for line in inner), src
    assert any("q[np.uint64(r)]" in line for line in inner), src
    # a loop over range(d) LLVM already knows: left as written
    assert not any("np.uint64(j)" in line for line in src.splitlines()), src


def test_a_loop_from_a_computed_start():
    rng = np.random.default_rng(1)
    x, w = rng.normal(size=7), rng.normal(size=7)
    src = _check(from_the_middle, (x, w), (0, 1))
    # (the loop's index is `i` or, where the backward sweep's loop reuses the name, `i_2`)
    assert re.search(r"w\[np\.uint64\(i(_\d+)?\)\]", src), src
    assert not re.search(r"np\.uint64\(i(_\d+)? - h\)", src), src  # a difference: left signed


def test_a_negative_index_still_wraps_around():
    rng = np.random.default_rng(2)
    x = rng.normal(size=6)
    for k in (-2, 0, -6):
        g = adjit.grad(wraps_around, 0)
        np.testing.assert_allclose(g(x, k), fd_grad(njit(wraps_around), (x, k), 0),
                                   rtol=1e-6, atol=1e-7)
    src = g.source
    assert "np.uint64(i - 1)" not in src and "np.uint64(i + k)" not in src, src


def test_the_value_is_numbas_to_the_bit():
    """Unsigned indices read the same elements: with vector_math=False (the C library's
    exp, as numba's compile calls it) the value is numba's own to the bit."""
    rng = np.random.default_rng(3)
    d = 9
    icf = rng.normal(size=d * (d + 1) // 2) * 0.3
    x = rng.normal(size=d)
    vg = adjit.value_and_grad(packed_lower_quadratic, (0, 1), vector_math=False)
    value, _ = vg(icf, x)
    assert "np.uint64(idx)" in vg.source
    assert value == njit(packed_lower_quadratic)(icf, x)


def reassigned_argument(x, k):
    """k is an argument (negative here) that the function also sets to 0 later: before
    that it holds the caller's value, and x[i + k] counts from the end."""
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        s += x[i] * x[i + k]
    k = 0
    for i in range(n):
        s += x[i + k]
    return s


def test_an_argument_reassigned_later_is_not_known():
    x = np.random.default_rng(4).normal(size=5)
    g = adjit.grad(reassigned_argument, 0)
    np.testing.assert_allclose(g(x, -2), fd_grad(njit(reassigned_argument), (x, -2), 0),
                               rtol=1e-6, atol=1e-7)
    assert "np.uint64(i + k)" not in g.source, g.source


def offsets_from_an_argument(x, shift):
    """An integer array argument whose entries may be negative (counting from the end): the
    function writes a non-negative entry into it, but its other entries are the caller's."""
    n = x.shape[0]
    shift[0] = 1
    s = 0.0
    for i in range(n):
        j = shift[i % 3]
        s += x[i] * x[j]
    return s


def aliased_offsets(x):
    """An index array the function allocates, written through another name."""
    n = x.shape[0]
    off = np.zeros(3, np.int64)
    alias = off
    alias[1] = -2
    s = 0.0
    for i in range(n):
        j = off[i % 3]
        s += x[i] * x[j]
    return s


@pytest.mark.parametrize("f, extra", [(offsets_from_an_argument, (np.array([0, -2, -5]),)),
                                      (aliased_offsets, ())], ids=["argument", "alias"])
def test_an_index_read_from_entries_not_known_stays_signed(f, extra):
    x = np.random.default_rng(6).normal(size=6)
    args = (x,) + extra
    g = adjit.grad(f, 0)
    got = g(*[a.copy() for a in args])      # (the function writes into its index array)
    np.testing.assert_allclose(got, fd_grad(njit(f), args, 0), rtol=1e-6, atol=1e-7)
    assert "np.uint64(j)" not in g.source, g.source
