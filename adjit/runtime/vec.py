"""Small compiled helpers that generated code for vectorized numpy calls.

Generated code spells them `vec.<name>`. The integer helpers compute broadcast sizes and
slice bounds exactly as numpy does; the array helpers are the few operations adjit keeps at
array level (matrix products go to BLAS, reshape copies) with the products their adjoints
need.
"""
import numba
import numpy as np


@numba.njit(cache=False)
def bcast(n, m):
    """The broadcast size of two dimensions (numpy's rule); ValueError if incompatible."""
    if n == m or m == 1:
        return n
    if n == 1:
        return m
    raise ValueError("operands could not be broadcast together")


@numba.njit(cache=False)
def stride(n, size):
    """1 when a dimension of length n runs along a loop of `size` iterations, 0 when it is
    broadcast (length 1): the index multiplier of that dimension."""
    return 1 if n == size else 0


@numba.njit(cache=False)
def slice_start(n, start, stop, step, has_start, has_stop):
    """The first index of `a[start:stop:step]` on a dimension of length n (slice.indices)."""
    if step > 0:
        if not has_start:
            return 0
        s = start + n if start < 0 else start
        return min(max(s, 0), n)
    if not has_start:
        return n - 1
    s = start + n if start < 0 else start
    return min(max(s, -1), n - 1)


@numba.njit(cache=False)
def slice_len(n, start, stop, step, has_start, has_stop):
    """The length of `a[start:stop:step]` on a dimension of length n."""
    if step == 0:
        raise ValueError("slice step cannot be zero")
    s = slice_start(n, start, stop, step, has_start, has_stop)
    if step > 0:
        e = n if not has_stop else (stop + n if stop < 0 else stop)
        e = min(max(e, 0), n)
        return max(0, (e - s + step - 1) // step)
    e = -1 if not has_stop else (stop + n if stop < 0 else stop)
    e = min(max(e, -1), n - 1)
    return max(0, (s - e - step - 1) // (-step))


@numba.njit(cache=False)
def index(i, n):
    """An integer index into a dimension of length n, negative ones counted from the end."""
    return i + n if i < 0 else i


@numba.njit(cache=False)
def nanmax(a, b):
    """max(a, b) that propagates NaN, as np.max does."""
    if a >= b or a != a:
        return a
    return b


@numba.njit(cache=False)
def nanmin(a, b):
    """min(a, b) that propagates NaN, as np.min does."""
    if a <= b or a != a:
        return a
    return b


@numba.njit(cache=False)
def mm(a, b):
    """a @ b for 2-D arrays (BLAS)."""
    return np.dot(a, b)


@numba.njit(cache=False)
def mm_tn(a, b):
    """a.T @ b (BLAS)."""
    return np.dot(a.T, b)


@numba.njit(cache=False)
def mm_nt(a, b):
    """a @ b.T (BLAS)."""
    return np.dot(a, b.T)


@numba.njit(cache=False)
def mm_tt(a, b):
    """a.T @ b.T (BLAS)."""
    return np.dot(a.T, b.T)


@numba.njit(cache=False)
def reshape(a, shape):
    """A new C-ordered array with a's elements in `shape` (never a view of a)."""
    return np.ascontiguousarray(a).copy().reshape(shape)


@numba.njit(cache=False)
def add_reshaped(dst, src):
    """dst += src read in C order with dst's shape: the adjoint of reshape."""
    flat = dst.reshape(dst.size) if dst.flags.c_contiguous else dst.ravel()
    s = np.ascontiguousarray(src).reshape(src.size)
    if dst.flags.c_contiguous:
        flat += s
    else:
        tmp = flat + s
        dst[...] = tmp.reshape(dst.shape)
