"""Sums the generated backward sweep computes in vector lanes."""
import numba
import numpy as np
from .jitcache import key_by_level

ANY_ORDER = "add_any_order"
"""The name generated code calls add_any_order by (reverse/accumulators.py writes it)."""


@numba.njit(fastmath={"reassoc"}, error_model="numpy", cache=True)
def dot_range(a, a0, sa, b, b0, sb, n):
    """sum over k < n of a[a0 + sa k] * b[b0 + sb k], the terms added in any order (so in
    vector lanes: the order of a sum's additions is all that `reassoc` lets change here).

    Indices that stay non-negative are used unsigned, so numba does not test each for
    wrapping around; where one would be negative (a user's `x[i - 1]` at i = 0 reads the
    last element), the loop indexes as numba does, element by element."""
    s = 0.0
    if n <= 0:
        return s
    if min(a0, a0 + sa * (n - 1)) >= 0 and min(b0, b0 + sb * (n - 1)) >= 0:
        for k in range(n):
            s += a[np.uint64(a0 + sa * k)] * b[np.uint64(b0 + sb * k)]
    else:
        for k in range(n):
            s += a[a0 + sa * k] * b[b0 + sb * k]
    return s


@numba.njit(fastmath={"reassoc"}, error_model="numpy", cache=True)
def sum_range(a, a0, sa, n):
    """sum over k < n of a[a0 + sa k], the terms added in any order (dot_range's one-array
    form)."""
    s = 0.0
    if n <= 0:
        return s
    if min(a0, a0 + sa * (n - 1)) >= 0:
        for k in range(n):
            s += a[np.uint64(a0 + sa * k)]
    else:
        for k in range(n):
            s += a[a0 + sa * k]
    return s


@numba.njit(fastmath={"reassoc"}, error_model="numpy", cache=True)
def copy_dot(dst, src, lo, b, b0, n):
    """dst[lo + k] = src[lo + k] for k < n, and the sum of src[lo + k] * b[b0 + k] (in any
    order): a copy and a sum over what it copied, in one pass (lo is never negative; b0 is
    indexed as numba does where it is)."""
    s = 0.0
    if n <= 0:
        return s
    if lo >= 0 and b0 >= 0:
        for k in range(n):
            v = src[np.uint64(lo + k)]
            dst[np.uint64(lo + k)] = v
            s += v * b[np.uint64(b0 + k)]
    else:
        for k in range(n):
            v = src[lo + k]
            dst[lo + k] = v
            s += v * b[b0 + k]
    return s


@numba.njit(fastmath={"reassoc"}, error_model="numpy", cache=True)
def sum_range32(buf, n):
    """sum_range(buf, 0, 1, n) of float32 values (held as float64 slots), added in float32:
    a float32 block of a loop that sums as it goes (codegen/vector_math.py)."""
    s = np.float32(0.0)
    for k in range(n):
        s += np.float32(buf[np.uint64(k)])
    return s


@numba.njit(fastmath={"reassoc"}, error_model="numpy", cache=True)
def add_any_order(s, v):
    """s + v, an addition the compiler may reorder with the others of its sum: a loop that
    adds into a scalar with it (`xc_bar_sum1 = add_any_order(xc_bar_sum1, _t16_bar * _t13)`)
    is a reduction LLVM runs in vector lanes, where `s += v` waits for each addition in
    turn. LLVM inlines it into the loop; the flag stays on the one addition (numba's own
    inlining would compile it with the caller's flags instead)."""
    return s + v


key_by_level(globals())     # numba caches each level apart (jitcache.py)
