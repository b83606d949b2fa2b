"""Small compiled helpers that generated code for vectorized numpy calls.

Generated code spells them `vec.<name>`. The integer helpers compute broadcast sizes, slice
bounds, reshape sizes and index-array entries exactly as numpy does (raising numpy's errors);
the array helpers are the few operations adjit keeps at array level (matrix products go to
BLAS; linspace and arange) with what their adjoints and tangents need.
"""
import math

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
def take_index(i, n):
    """An entry of an index array used on a dimension of length n: negative entries count
    from the end; out-of-range ones raise IndexError, as numpy does."""
    if i < 0:
        i += n
    if i < 0 or i >= n:
        raise IndexError("index out of bounds in an integer-array index")
    return i


@numba.njit(cache=False)
def same_length(m, n):
    """A boolean mask's length m against the dimension n it indexes (IndexError unless
    equal, as numpy)."""
    if m != n:
        raise IndexError("boolean index did not match indexed array")
    return n


@numba.njit(cache=False)
def infer_size(size, known):
    """The -1 of a reshape: size / known, or numpy's ValueError when that is not whole."""
    if known == 0 or size % known != 0:
        raise ValueError("cannot reshape array into the requested shape")
    return size // known


@numba.njit(cache=False)
def same_size(size, new):
    """A reshape keeps the number of elements (numpy's ValueError otherwise)."""
    if size != new:
        raise ValueError("cannot reshape array into the requested shape")
    return new


@numba.njit(cache=False)
def empty_int(shape):
    """An uninitialized int64 array (index arrays and mask coordinates)."""
    return np.empty(shape, np.int64)


@numba.njit(cache=False)
def empty_bool(shape):
    """An uninitialized boolean array."""
    return np.empty(shape, np.bool_)


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
def sum_bar(out_bar):
    """The adjoint of a value every element of `out_bar`'s array adds (arange's start)."""
    return np.sum(out_bar)


@numba.njit(cache=False)
def linspace_start_bar(out_bar):
    """start's adjoint through np.linspace(start, stop, n): element k (k < n - 1) is
    start + k * ((stop - start) / (n - 1)), the last is stop."""
    n = out_bar.size
    acc = 0.0
    for k in range(n - 1 if n > 1 else n):
        acc += out_bar[k] * (1.0 - k / (n - 1) if n > 1 else 1.0)
    return acc


@numba.njit(cache=False)
def linspace_stop_bar(out_bar):
    """stop's adjoint through np.linspace(start, stop, n) (see linspace_start_bar)."""
    n = out_bar.size
    if n <= 1:
        return 0.0
    acc = out_bar[n - 1]
    for k in range(n - 1):
        acc += out_bar[k] * (k / (n - 1))
    return acc


@numba.njit(cache=False)
def arange_step_bar(out_bar):
    """step's adjoint through np.arange(start, stop, step): element k is start + k * step."""
    acc = 0.0
    for k in range(out_bar.size):
        acc += out_bar[k] * k
    return acc


@numba.njit(cache=False)
def arange_len(start, stop, step):
    """The length of np.arange(start, stop, step)."""
    return max(0, int(np.ceil((stop - start) / step)))


@numba.njit(cache=False)
def arange_tangent(start_dot, step_dot, n):
    """The tangent of np.arange(start, stop, step) of length n."""
    out = np.empty(n)
    for k in range(n):
        out[k] = start_dot + k * step_dot
    return out


@numba.njit(cache=False)
def digamma(x):
    """psi(x), the derivative of log Gamma(x) (math.lgamma's derivative; math.gamma's is
    gamma(x) psi(x)): the reflection psi(1 - x) - pi / tan(pi x) below 1/2, the recurrence
    psi(x) = psi(x + 1) - 1/x up to 10, then the asymptotic series (error below 1e-14)."""
    if x <= 0.0 and x == math.floor(x):
        return math.nan
    shift = 0.0
    if x < 0.5:
        shift = -math.pi / math.tan(math.pi * x)
        x = 1.0 - x
    while x < 10.0:
        shift -= 1.0 / x
        x += 1.0
    f = 1.0 / (x * x)
    series = f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f / 132))))
    return shift + math.log(x) - 0.5 / x - series


@numba.njit(cache=False)
def solve_a_bar(a, out, out_bar):
    """A's adjoint through x = np.linalg.solve(A, b), without the sign: g x.T with
    g = solve(A.T, x_bar) (the outer product g x for vectors)."""
    g = np.ascontiguousarray(np.linalg.solve(a.T, out_bar))
    x = np.ascontiguousarray(out)
    return np.dot(g.reshape(g.shape[0], -1), x.reshape(x.shape[0], -1).T)
