"""Small compiled helpers that generated code for vectorized numpy calls.

Generated code spells them `vec.<name>`. The integer helpers compute broadcast sizes, slice
bounds, reshape sizes and index-array entries exactly as numpy does (raising numpy's errors);
the array helpers are the few operations adjit keeps at array level (matrix products go to
BLAS; linspace and arange) with what their adjoints and tangents need.
"""
import math

import numba
from numba.core import types
from numba.extending import overload
import numpy as np


@numba.njit(cache=True)
def bcast(n, m):
    """The broadcast size of two dimensions (numpy's rule); ValueError if incompatible."""
    if n == m or m == 1:
        return n
    if n == 1:
        return m
    raise ValueError("operands could not be broadcast together")


@numba.njit(cache=True)
def stride(n, size):
    """1 when a dimension of length n runs along a loop of `size` iterations, 0 when it is
    broadcast (length 1): the index multiplier of that dimension."""
    return 1 if n == size else 0


@numba.njit(cache=True)
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


@numba.njit(cache=True)
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


@numba.njit(cache=True)
def index(i, n):
    """An integer index into a dimension of length n, negative ones counted from the end."""
    return i + n if i < 0 else i


@numba.njit(cache=True)
def take_index(i, n):
    """An entry of an index array used on a dimension of length n: negative entries count
    from the end; out-of-range ones raise IndexError, as numpy does."""
    if i < 0:
        i += n
    if i < 0 or i >= n:
        raise IndexError("index out of bounds in an integer-array index")
    return i


@numba.njit(cache=True)
def same_length(m, n):
    """A boolean mask's length m against the dimension n it indexes (IndexError unless
    equal, as numpy)."""
    if m != n:
        raise IndexError("boolean index did not match indexed array")
    return n


@numba.njit(cache=True)
def infer_size(size, known):
    """The -1 of a reshape: size / known, or numpy's ValueError when that is not whole."""
    if known == 0 or size % known != 0:
        raise ValueError("cannot reshape array into the requested shape")
    return size // known


@numba.njit(cache=True)
def same_size(size, new):
    """A reshape keeps the number of elements (numpy's ValueError otherwise)."""
    if size != new:
        raise ValueError("cannot reshape array into the requested shape")
    return new


@numba.njit(cache=True)
def empty_int(shape):
    """An uninitialized int64 array (index arrays and mask coordinates)."""
    return np.empty(shape, np.int64)


@numba.njit(cache=True)
def local_empty(shape):
    """A kernel's `cuda.local.array(shape, float64)`: the thread's own scratch array (CUDA
    code spells it cuda.local.array again; codegen/assemble.py cuda_parts)."""
    return np.empty(shape)


@numba.njit(cache=True)
def shared_empty(shape):
    """A kernel's `cuda.shared.array(shape, float64)`: the block's array (CUDA code spells it
    cuda.shared.array again; codegen/assemble.py cuda_parts)."""
    return np.empty(shape)


@numba.njit(cache=True)
def local_empty32(shape):
    """A kernel's `cuda.local.array(shape, float32)`."""
    return np.empty(shape, np.float32)


@numba.njit(cache=True)
def shared_empty32(shape):
    """A kernel's `cuda.shared.array(shape, float32)`."""
    return np.empty(shape, np.float32)


SCRATCH = {"local_empty": ("local", "float64"), "shared_empty": ("shared", "float64"),
           "local_empty32": ("local", "float32"), "shared_empty32": ("shared", "float32")}
"""A kernel's scratch arrays, by the name of their allocator here: (CUDA memory space,
numba dtype), spelled `cuda.<space>.array(shape, numba.<dtype>)` in CUDA code."""


@numba.njit(cache=True)
def empty_bool(shape):
    """An uninitialized boolean array."""
    return np.empty(shape, np.bool_)


@numba.njit(cache=True)
def nanmax(a, b):
    """max(a, b) that propagates NaN, as np.max does."""
    if a >= b or a != a:
        return a
    return b


@numba.njit(cache=True)
def nanmin(a, b):
    """min(a, b) that propagates NaN, as np.min does."""
    if a <= b or a != a:
        return a
    return b


def widened(a, other):
    """`a`, or `a` as float64 where `other` has another dtype: BLAS in numba multiplies
    only arrays of one dtype, and an adjoint (float64) meets float32 operands."""
    return a if a.dtype == other.dtype else a.astype(np.float64)


@overload(widened)
def _widened(a, other):
    if a.dtype == other.dtype:
        return lambda a, other: a
    return lambda a, other: a.astype(np.float64)


def as_float64(a):
    """`a` as float64, copied only when it has another dtype."""
    return a if a.dtype == np.float64 else a.astype(np.float64)


@overload(as_float64)
def _as_float64(a):
    if a.dtype == types.float64:
        return lambda a: a
    return lambda a: a.astype(np.float64)


@numba.njit(cache=True)
def mm(a, b):
    """a @ b for 2-D arrays (BLAS)."""
    return np.dot(widened(a, b), widened(b, a))


@numba.njit(cache=True)
def mm_tn(a, b):
    """a.T @ b (BLAS)."""
    return np.dot(widened(a, b).T, widened(b, a))


@numba.njit(cache=True)
def mm_nt(a, b):
    """a @ b.T (BLAS)."""
    return np.dot(widened(a, b), widened(b, a).T)


@numba.njit(cache=True)
def mm_tt(a, b):
    """a.T @ b.T (BLAS)."""
    return np.dot(widened(a, b).T, widened(b, a).T)


@numba.njit(cache=True)
def sum_bar(out_bar):
    """The adjoint of a value every element of `out_bar`'s array adds (arange's start)."""
    return np.sum(out_bar)


@numba.njit(cache=True)
def linspace_start_bar(out_bar):
    """start's adjoint through np.linspace(start, stop, n): element k (k < n - 1) is
    start + k * ((stop - start) / (n - 1)), the last is stop."""
    n = out_bar.size
    acc = 0.0
    for k in range(n - 1 if n > 1 else n):
        acc += out_bar[k] * (1.0 - k / (n - 1) if n > 1 else 1.0)
    return acc


@numba.njit(cache=True)
def linspace_stop_bar(out_bar):
    """stop's adjoint through np.linspace(start, stop, n) (see linspace_start_bar)."""
    n = out_bar.size
    if n <= 1:
        return 0.0
    acc = out_bar[n - 1]
    for k in range(n - 1):
        acc += out_bar[k] * (k / (n - 1))
    return acc


@numba.njit(cache=True)
def arange_step_bar(out_bar):
    """step's adjoint through np.arange(start, stop, step): element k is start + k * step."""
    acc = 0.0
    for k in range(out_bar.size):
        acc += out_bar[k] * k
    return acc


@numba.njit(cache=True)
def arange_len(start, stop, step):
    """The length of np.arange(start, stop, step)."""
    return max(0, int(np.ceil((stop - start) / step)))


@numba.njit(cache=True)
def arange_tangent(start_dot, step_dot, n):
    """The tangent of np.arange(start, stop, step) of length n."""
    out = np.empty(n)
    for k in range(n):
        out[k] = start_dot + k * step_dot
    return out


@numba.njit(cache=True)
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


@numba.njit(cache=True)
def outer_nt(g, x):
    """g x.T for g, x both vectors or both matrices (np.linalg.solve's A adjoint is -g x.T
    with g = solve(A.T, x_bar))."""
    g2 = np.ascontiguousarray(as_float64(g))
    x2 = np.ascontiguousarray(as_float64(x))
    return np.dot(g2.reshape(g2.shape[0], -1), x2.reshape(x2.shape[0], -1).T)


@numba.njit(cache=True)
def lower_sym(d):
    """The symmetric matrix a function of A's lower triangle sees when A moves by d:
    tril(d) + tril(d, -1).T."""
    n = d.shape[0]
    s = np.empty((n, n))
    for i in range(n):
        for j in range(i + 1):
            s[i, j] = d[i, j]
            s[j, i] = d[i, j]
    return s


@numba.njit(cache=True)
def lower_bar(m):
    """A's adjoint through a function of its lower triangle whose adjoint with respect to
    the symmetric matrix is m: tril(m + m.T) - diag(m) (zero above the diagonal)."""
    n = m.shape[0]
    a = np.zeros((n, n))
    for i in range(n):
        for j in range(i):
            a[i, j] = m[i, j] + m[j, i]
        a[i, i] = m[i, i]
    return a


@numba.njit(cache=True)
def cholesky_tangent(l, d):
    """L_dot = L Phi(L^-1 S L^-T) for L = cholesky(A), S the symmetric move of A's lower
    triangle, Phi the lower triangle with the diagonal halved."""
    z = _substitute(l, lower_sym(d), True, False)     # L^-1 S
    x = _substitute(l, z.T, True, False)              # L^-1 (L^-1 S)^T = L^-1 S L^-T
    n = l.shape[0]
    for i in range(n):
        x[i, i] *= 0.5
        for j in range(i + 1, n):
            x[i, j] = 0.0
    return np.dot(as_float64(l), x)


@numba.njit(cache=True)
def cholesky_a_bar(l, l_bar):
    """A's adjoint through L = cholesky(A), read through the lower triangle: the column-by-
    column reverse of the factorization (Murray 2016, "Differentiation of the Cholesky
    decomposition"), last column first, in place on a copy of tril(L_bar): about n^3 / 3
    multiply-adds, no inverse. Equal to tril(M + M.T) - diag(M) for M = L^-T Phi(L.T L_bar)
    L^-1 (Phi: the lower triangle, diagonal halved)."""
    n = l.shape[0]
    a = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1):
            a[i, j] = l_bar[i, j]
    for j in range(n - 1, -1, -1):
        d = l[j, j]
        s = 0.0
        for i in range(j + 1, n):
            s += l[i, j] * a[i, j]
        d_bar = (a[j, j] - s / d) / d
        for i in range(j + 1, n):
            a[i, j] /= d
        for k in range(j):              # the row left of the diagonal
            a[j, k] -= d_bar * l[j, k]
        for i in range(j + 1, n):
            c = a[i, j]
            for k in range(j):
                a[j, k] -= c * l[i, k]
        for i in range(j + 1, n):       # the block below it
            c = a[i, j]
            for k in range(j):
                a[i, k] -= c * l[j, k]
        a[j, j] = 0.5 * d_bar
    return a


@numba.njit(cache=True)
def det1(a):
    """[np.linalg.det(a)]."""
    out = np.empty(1)
    out[0] = np.linalg.det(a)
    return out


@numba.njit(cache=True)
def det_a_bar(a, out, out_bar):
    """A's adjoint through det(A): det_bar det(A) A^-T (A^-T from one LU solve)."""
    n = a.shape[0]
    return (out_bar[0] * out[0]) * np.linalg.solve(np.ascontiguousarray(as_float64(a).T),
                                                   np.eye(n))


@numba.njit(cache=True)
def det_tangent(a, out, d):
    """[det(A) tr(A^-1 A_dot)]."""
    t = np.empty(1)
    t[0] = out[0] * np.trace(np.linalg.solve(as_float64(a), as_float64(d)))
    return t


@numba.njit(cache=True)
def slogdet2(a):
    """[sign, log|det|] of np.linalg.slogdet(a)."""
    sign, logdet = np.linalg.slogdet(a)
    out = np.empty(2)
    out[0] = sign
    out[1] = logdet
    return out


@numba.njit(cache=True)
def slogdet_a_bar(a, out_bar):
    """A's adjoint through log|det A|: logdet_bar A^-T (the sign has no derivative)."""
    n = a.shape[0]
    return out_bar[1] * np.linalg.solve(np.ascontiguousarray(as_float64(a).T), np.eye(n))


@numba.njit(cache=True)
def slogdet_tangent(a, d):
    """[0, tr(A^-1 A_dot)]."""
    t = np.zeros(2)
    t[1] = np.trace(np.linalg.solve(as_float64(a), as_float64(d)))
    return t


@numba.njit(cache=True)
def eigh_packed(a):
    """np.linalg.eigh(a) as one (n + 1, n) array: eigenvalues in row 0, eigenvectors below."""
    w, v = np.linalg.eigh(a)
    n = a.shape[0]
    out = np.empty((n + 1, n))
    out[0] = w
    out[1:] = v
    return out


@numba.njit(cache=True)
def _gaps(w, need):
    """F[i, j] = 1 / (w[j] - w[i]) off the diagonal; ValueError when eigenvalues repeat and
    eigenvector derivatives are needed (they do not exist there)."""
    n = w.shape[0]
    f = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if i != j:
                gap = w[j] - w[i]
                if gap == 0.0 and need:
                    raise ValueError("adjit: np.linalg.eigh eigenvectors have no derivative "
                                     "at a repeated eigenvalue")
                f[i, j] = 1.0 / gap if gap != 0.0 else 0.0
    return f


@numba.njit(cache=True)
def eigh_a_bar(out, out_bar):
    """A's adjoint through (w, V) = eigh(A): M = V (diag(w_bar) + F o (V.T V_bar)) V.T, read
    through the lower triangle."""
    w = out[0]
    v = np.ascontiguousarray(out[1:])
    w_bar = out_bar[0]
    v_bar = np.ascontiguousarray(out_bar[1:])
    need = np.any(v_bar != 0.0)
    inner = _gaps(w, need) * np.dot(v.T, v_bar) if need else np.zeros((w.shape[0], w.shape[0]))
    for i in range(w.shape[0]):
        inner[i, i] += w_bar[i]
    return lower_bar(np.dot(np.dot(v, inner), v.T))


@numba.njit(cache=True)
def eigh_tangent(out, d):
    """[w_dot; V_dot]: w_dot = diag(V.T S V), V_dot = V (F o (V.T S V)), S the symmetric
    move of A's lower triangle."""
    w = out[0]
    v = np.ascontiguousarray(out[1:])
    n = w.shape[0]
    g = np.dot(np.dot(v.T, lower_sym(d)), v)
    t = np.empty((n + 1, n))
    for i in range(n):
        t[0, i] = g[i, i]
    t[1:] = np.dot(v, _gaps(w, True) * g)
    return t


@numba.njit(cache=True)
def eigvalsh_a_bar(a, out_bar):
    """A's adjoint through w = eigvalsh(A): V diag(w_bar) V.T, read through the lower
    triangle (V from eigh: eigvalsh does not keep it)."""
    _, v = np.linalg.eigh(as_float64(a))
    return lower_bar(np.dot(v * out_bar, v.T))


@numba.njit(cache=True)
def eigvalsh_tangent(a, d):
    """w_dot = diag(V.T S V)."""
    _, v = np.linalg.eigh(as_float64(a))
    g = np.dot(np.dot(v.T, lower_sym(d)), v)
    return np.diag(g).copy()


# np.cumprod (of the flattened array, as numba computes it) and np.interp ---------------------
@numba.njit(cache=True)
def cumprod_bar(a, out_bar):
    """a's adjoint through out = np.cumprod(a), exact at zeros (no division):
    a_bar[j] = prod(a[:j]) * R[j] with R[j] = out_bar[j] + a[j + 1] R[j + 1]."""
    x = a.ravel()
    n = x.shape[0]
    bar = np.empty(n)
    r = 0.0
    for j in range(n - 1, -1, -1):
        r = out_bar[j] + (x[j + 1] * r if j + 1 < n else 0.0)
        bar[j] = r
    p = 1.0
    for j in range(n):
        bar[j] *= p
        p *= x[j]
    return bar.reshape(a.shape)


@numba.njit(cache=True)
def cumprod_tangent(a, out, d):
    """out_dot[k] = out_dot[k - 1] a[k] + out[k - 1] a_dot[k]."""
    x = a.ravel()
    dx = d.ravel()
    n = x.shape[0]
    t = np.empty(n)
    prev_t, prev = 0.0, 1.0
    for k in range(n):
        prev_t = prev_t * x[k] + prev * dx[k]
        prev = out[k]
        t[k] = prev_t
    return t


@numba.njit(cache=True)
def _segment(xi, xp):
    """k with xp[k] <= xi < xp[k + 1] (clamped to the segments), and whether xi is outside
    [xp[0], xp[-1]] (np.interp gives an end value there)."""
    n = xp.shape[0]
    if xi < xp[0] or xi > xp[n - 1] or n < 2:
        return 0, True
    k = np.searchsorted(xp, xi, side="right") - 1
    if k >= n - 1:
        k = n - 2
    return k, False


@numba.njit(cache=True)
def interp_bars(x, xp, fp, out_bar):
    """(x_bar, xp_bar, fp_bar) through out = np.interp(x, xp, fp), x an array: inside
    segment k with t = (x - xp[k]) / h, s = (fp[k+1] - fp[k]) / h: d/dx = s,
    d/dfp[k] = 1 - t, d/dfp[k+1] = t, d/dxp[k] = s (t - 1), d/dxp[k+1] = -s t; outside,
    the end value: only fp[0] or fp[-1]."""
    xs = x.ravel()
    ob = out_bar.ravel()
    x_bar = np.zeros(xs.shape[0])
    xp_bar = np.zeros(xp.shape[0])
    fp_bar = np.zeros(fp.shape[0])
    n = xp.shape[0]
    for q in range(xs.shape[0]):
        xi, g = xs[q], ob[q]
        k, outside = _segment(xi, xp)
        if outside:
            fp_bar[0 if xi < xp[0] else n - 1] += g
            continue
        h = xp[k + 1] - xp[k]
        t = (xi - xp[k]) / h
        s = (fp[k + 1] - fp[k]) / h
        x_bar[q] += g * s
        fp_bar[k] += g * (1.0 - t)
        fp_bar[k + 1] += g * t
        xp_bar[k] += g * s * (t - 1.0)
        xp_bar[k + 1] -= g * s * t
    return x_bar.reshape(x.shape), xp_bar, fp_bar


@numba.njit(cache=True)
def interp_slope(x, xp, fp):
    """d np.interp(x, xp, fp) / dx elementwise: the slope of the segment (0 outside)."""
    xs = x.ravel()
    out = np.zeros(xs.shape[0])
    for q in range(xs.shape[0]):
        k, outside = _segment(xs[q], xp)
        if not outside:
            out[q] = (fp[k + 1] - fp[k]) / (xp[k + 1] - xp[k])
    return out.reshape(x.shape)


@numba.njit(cache=True)
def interp_dxp(x, xp, fp, d):
    """The tangent of np.interp(x, xp, fp) for a tangent d of xp."""
    xs = x.ravel()
    out = np.zeros(xs.shape[0])
    for q in range(xs.shape[0]):
        k, outside = _segment(xs[q], xp)
        if not outside:
            h = xp[k + 1] - xp[k]
            t = (xs[q] - xp[k]) / h
            s = (fp[k + 1] - fp[k]) / h
            out[q] = s * (t - 1.0) * d[k] - s * t * d[k + 1]
    return out.reshape(x.shape)


@numba.njit(cache=True)
def as1(x):
    """[x]."""
    out = np.empty(1)
    out[0] = x
    return out


@numba.njit(cache=True)
def interp1(x, xp, fp):
    """[np.interp(x, xp, fp)] for a number x."""
    return as1(np.interp(x, xp, fp))


@numba.njit(cache=True)
def nan_if_none(m, count):
    """m, or NaN when no element counted (np.nanmax/np.nanmin of all-NaN arrays)."""
    if count > 0.0:
        return m
    return np.nan


# np.linalg.solve's adjoint and tangent solve again with the same matrix: a triangular one
# (a Cholesky factor, as in L^-T (L^-1 y)) is solved by substitution in O(n^2) instead of a new
# O(n^3) LU factorization; any other matrix (or a zero on the diagonal: numba's LinAlgError)
# goes to np.linalg.solve --------------------------------------------------------------------
@numba.njit(cache=True)
def _triangle(a):
    """1 if a is lower triangular with a nonzero diagonal, 2 if upper, 0 otherwise."""
    n = a.shape[0]
    for i in range(n):
        if a[i, i] == 0.0:
            return 0
    lower = True
    for i in range(n):
        for j in range(i + 1, n):
            if a[i, j] != 0.0:
                lower = False
                break
        if not lower:
            break
    if lower:
        return 1
    for i in range(n):
        for j in range(i):
            if a[i, j] != 0.0:
                return 0
    return 2


@numba.njit(cache=True)
def _substitute(a, b, lower, transposed):
    """X with op(a) X = b for triangular a (op: a or a.T), b 1-D or 2-D, by rows."""
    n = a.shape[0]
    x = np.ascontiguousarray(b).astype(np.float64).reshape(n, -1).copy()
    m = x.shape[1]
    forward = lower != transposed          # op(a) is lower triangular
    for step in range(n):
        i = step if forward else n - 1 - step
        lo, hi = (0, i) if forward else (i + 1, n)
        for k in range(lo, hi):
            c = a[k, i] if transposed else a[i, k]
            for j in range(m):
                x[i, j] -= c * x[k, j]
        r = 1.0 / a[i, i]
        for j in range(m):
            x[i, j] *= r
    return x


@numba.njit(cache=True)
def solve_again(a, b, transposed):
    """np.linalg.solve(a.T if transposed else a, b), by substitution when a is triangular."""
    kind = _triangle(a)
    if kind == 0:
        # float64 throughout: numba's LAPACK takes one dtype, and b is an adjoint or a
        # tangent (float64) where a may be float32
        if transposed:
            return np.linalg.solve(np.ascontiguousarray(as_float64(a).T), as_float64(b))
        return np.linalg.solve(as_float64(a), as_float64(b))
    x = _substitute(a, b, kind == 1, transposed)
    return x.reshape(b.shape)


# np.kron, np.cross, np.convolve, np.correlate: adjoints by the definitions ---------------------
@numba.njit(cache=True)
def kron_bars(a, b, out_bar):
    """(a_bar, b_bar) through out = np.kron(a, b) of numbers and 1-D or 2-D arrays, each read
    as numba's np.kron reads it (a number as a 1 x 1 matrix, a 1-D array as one row):
    out[i p + k, j q + l] = a[i, j] b[k, l] for b of shape (p, q). Each adjoint has its
    operand's shape (a number for a number)."""
    a2 = kron_matrix(a)
    b2 = kron_matrix(b)
    g = kron_matrix(out_bar)
    m, n = a2.shape
    p, q = b2.shape
    a_bar = np.zeros((m, n))
    b_bar = np.zeros((p, q))
    for i in range(m):
        for j in range(n):
            for k in range(p):
                for l in range(q):
                    gij = g[i * p + k, j * q + l]
                    a_bar[i, j] += gij * b2[k, l]
                    b_bar[k, l] += gij * a2[i, j]
    return shaped_like(a_bar.ravel(), a), shaped_like(b_bar.ravel(), b)


def kron_matrix(x):
    """x as a matrix, as numba's np.kron reads it: a number 1 x 1, a 1-D array one row."""
    return x


@overload(kron_matrix)
def _kron_matrix(x):
    if isinstance(x, types.Array):
        return lambda x: np.atleast_2d(x)
    return lambda x: np.full((1, 1), x)


def summed_like(x, like):
    """x summed over the leading axes `like` lacks (the adjoint of broadcasting a (3,) vector
    against (n, 3) rows); a ValueError where equal ranks differ in shape."""
    return x


@overload(summed_like)
def _summed_like(x, like):
    if x.ndim == like.ndim:
        def same(x, like):
            if x.shape != like.shape:
                raise ValueError("adjit: broadcasting within an axis is not differentiated "
                                 "here; pass arrays of the same shape")
            return x
        return same
    if x.ndim == 2 and like.ndim == 1:
        return lambda x, like: x.sum(axis=0)
    return None


@numba.njit(cache=True)
def cross_a_bar(a, b, out_bar):
    """a's adjoint through np.cross(a, b) of 3-vectors (rows): cross(b, out_bar)."""
    return summed_like(np.cross(as_float64(b), out_bar), a)


@numba.njit(cache=True)
def cross_b_bar(a, b, out_bar):
    """b's adjoint through np.cross(a, b): cross(out_bar, a)."""
    return summed_like(np.cross(out_bar, as_float64(a)), b)


@numba.njit(cache=True)
def convolve_bars(a, v, out_bar):
    """(a_bar, v_bar) through out = np.convolve(a, v) (numpy's 'full' mode, numba's only):
    out[k + j] += a[k] v[j]."""
    na, nv = a.shape[0], v.shape[0]
    a_bar = np.zeros(na)
    v_bar = np.zeros(nv)
    for k in range(na):
        for j in range(nv):
            a_bar[k] += out_bar[k + j] * v[j]
            v_bar[j] += out_bar[k + j] * a[k]
    return a_bar, v_bar


@numba.njit(cache=True)
def correlate_bars(a, v, out_bar):
    """(a_bar, v_bar) through out = np.correlate(a, v) (numpy's 'valid' mode, numba's only):
    out[k] = sum_n a[n + k] v[n] when a is the longer; otherwise numpy correlates the other
    way and reverses, out[k] = sum_n a[n] v[n + s - k] with s = len(v) - len(a)."""
    na, nv = a.shape[0], v.shape[0]
    a_bar = np.zeros(na)
    v_bar = np.zeros(nv)
    if na >= nv:
        for k in range(na - nv + 1):
            for n in range(nv):
                a_bar[n + k] += out_bar[k] * v[n]
                v_bar[n] += out_bar[k] * a[n + k]
    else:
        s = nv - na
        for k in range(s + 1):
            for n in range(na):
                a_bar[n] += out_bar[k] * v[n + s - k]
                v_bar[n + s - k] += out_bar[k] * a[n]
    return a_bar, v_bar


# np.linalg.matrix_power(a, n): A^n = A ... A, its adjoint sum_k (A^T)^k G (A^T)^(n-1-k) and its
# tangent sum_k A^k D A^(n-1-k) by one recurrence; a negative n is the power of inv(A) -----------
@numba.njit(cache=True)
def matrix_power(a, n):
    """np.linalg.matrix_power(a, n) as an array (numba types its result Optional)."""
    out = np.empty(a.shape, a.dtype)
    out[:, :] = np.linalg.matrix_power(a, n)
    return out


@numba.njit(cache=True)
def _power_sum(a, d, n):
    """sum over k < n of a^k d a^(n-1-k), for n >= 1: S_1 = d, S_j+1 = a S_j + d a^j."""
    s = d.copy()
    p = np.eye(a.shape[0])
    for _ in range(n - 1):
        p = np.dot(p, a)
        s = np.dot(a, s) + np.dot(d, p)
    return s


@numba.njit(cache=True)
def matrix_power_bar(a, n, out_bar):
    """A's adjoint through np.linalg.matrix_power(A, n)."""
    a64 = np.ascontiguousarray(as_float64(a))
    g = np.ascontiguousarray(out_bar)
    if n == 0:
        return np.zeros(a.shape)
    if n > 0:
        return _power_sum(np.ascontiguousarray(a64.T), g, n)
    b = np.linalg.inv(a64)
    bt = np.ascontiguousarray(b.T)
    return -np.dot(np.dot(bt, _power_sum(bt, g, -n)), bt)


@numba.njit(cache=True)
def matrix_power_tangent(a, n, d):
    """The tangent of np.linalg.matrix_power(A, n) for A's tangent d."""
    a64 = np.ascontiguousarray(as_float64(a))
    d64 = np.ascontiguousarray(as_float64(d))
    if n == 0:
        return np.zeros(a.shape)
    if n > 0:
        return _power_sum(a64, d64, n)
    b = np.linalg.inv(a64)
    return _power_sum(b, -np.dot(np.dot(b, d64), b), -n)


# np.linalg.pinv(A) where A has full rank (the pseudo-inverse is smooth only where the rank
# does not change): X_dot = -X A_dot X + X X^T A_dot^T (I - A X) + (I - X A) A_dot^T X^T X,
# and its transpose for the adjoint -------------------------------------------------------------
@numba.njit(cache=True)
def _pinv_parts(a, out):
    """(X, X^T, I - A X, I - X A) for X = pinv(A), in float64."""
    a64 = as_float64(a)
    x = as_float64(out)
    m, n = a64.shape
    return (x, np.ascontiguousarray(x.T), np.eye(m) - np.dot(a64, x),
            np.eye(n) - np.dot(x, a64))


@numba.njit(cache=True)
def pinv_a_bar(a, out, out_bar):
    """A's adjoint through X = np.linalg.pinv(A)."""
    x, xt, p, q = _pinv_parts(a, out)
    gt = np.ascontiguousarray(out_bar.T)
    return (-np.dot(np.dot(xt, out_bar), xt) + np.dot(np.dot(p, gt), np.dot(x, xt))
            + np.dot(np.dot(xt, x), np.dot(gt, q)))


@numba.njit(cache=True)
def pinv_tangent(a, out, d):
    """The tangent of X = np.linalg.pinv(A) for A's tangent d."""
    x, xt, p, q = _pinv_parts(a, out)
    d64 = as_float64(d)
    dt = np.ascontiguousarray(d64.T)
    return (-np.dot(np.dot(x, d64), x) + np.dot(np.dot(x, xt), np.dot(dt, p))
            + np.dot(np.dot(q, dt), np.dot(xt, x)))


# (Q, R) = np.linalg.qr(A), reduced, for A with m >= n of full column rank: packed as one
# (n, m + n) array [Q^T | R] (unpacked as views where the call stood). With X = Q^T A_dot R^-1
# and W the skew matrix with X's strict lower triangle, R_dot = (X - W) R and
# Q_dot = A_dot R^-1 - Q (X - W); the adjoint is (Q_bar + Q copyltu(M)) R^-T with
# M = R R_bar^T - Q_bar^T Q and copyltu(M) = tril(M) + tril(M, -1)^T -------------------------
@numba.njit(cache=True)
def qr_packed(a):
    """[Q^T | R] of np.linalg.qr(a) as one (k, m + n) array, k = min(m, n)."""
    q, r = np.linalg.qr(a)
    m = a.shape[0]
    out = np.empty((r.shape[0], m + a.shape[1]))
    out[:, :m] = q.T
    out[:, m:] = r
    return out


@numba.njit(cache=True)
def _qr_parts(a, out):
    m, n = a.shape
    if m < n:
        raise ValueError("adjit: the derivative of np.linalg.qr is implemented for matrices "
                         "with at least as many rows as columns")
    q = np.ascontiguousarray(out[:, :m].T)
    r = np.ascontiguousarray(out[:, m:])
    return q, r


@numba.njit(cache=True)
def qr_a_bar(a, out, out_bar):
    """A's adjoint through (Q, R) = np.linalg.qr(A), from the packed [Q^T | R] and its adjoint."""
    q, r = _qr_parts(a, out)
    m, n = a.shape
    q_bar = np.ascontiguousarray(out_bar[:, :m].T)
    r_bar = np.ascontiguousarray(out_bar[:, m:])
    mm_ = np.dot(r, r_bar.T) - np.dot(q_bar.T, q)
    for i in range(n):
        for j in range(i + 1, n):
            mm_[i, j] = mm_[j, i]                  # copyltu: the lower triangle mirrored
    c = q_bar + np.dot(q, mm_)
    return _substitute(r, np.ascontiguousarray(c.T), False, False).T.copy()   # C R^-T


@numba.njit(cache=True)
def qr_tangent(a, out, d):
    """The packed tangent [Q_dot^T | R_dot] of (Q, R) = np.linalg.qr(A) for A's tangent d."""
    q, r = _qr_parts(a, out)
    m, n = a.shape
    d64 = np.ascontiguousarray(as_float64(d))
    d_rinv = _substitute(r, np.ascontiguousarray(d64.T), False, True).T.copy()   # d R^-1
    x = np.dot(q.T, d_rinv)
    for i in range(n):                             # X - W: X's upper part, the skew fix below
        for j in range(i):
            x[j, i] += x[i, j]
            x[i, j] = 0.0
    t = np.empty((n, m + n))
    t[:, :m] = (d_rinv - np.dot(q, x)).T
    t[:, m:] = np.dot(x, r)
    return t


# np.percentile(a, q) and np.quantile(a, q) (numba: linear interpolation over the flattened a):
# with s = sort(a), pos = q scale (n - 1), the value is s[lo] + f (s[hi] - s[lo]) for
# lo = floor(pos), hi = lo + 1 (or n - 1), f = pos - lo: linear in the two order statistics
# (a gather through argsort, as np.sort) and in q, with slope (s[hi] - s[lo]) scale (n - 1) ----
@numba.njit(cache=True)
def _at(n, qk, scale):
    pos = qk * scale * (n - 1)
    lo = min(max(int(math.floor(pos)), 0), n - 1)
    hi = min(lo + 1, n - 1)
    return lo, hi, pos - lo if hi > lo else 0.0


@numba.njit(cache=True)
def _ordered(x, skip):
    """The indices of x's entries in sorted order (only the numbers when `skip`: NaN-skipping
    forms)."""
    if skip:
        idx = np.nonzero(x == x)[0]
        return idx[np.argsort(x[idx])]
    return np.argsort(x)


@numba.njit(cache=True)
def quantile1(a, q, scale, skip):
    """[np.percentile(a, q)] (scale 0.01) or [np.quantile(a, q)] (scale 1) for a number q; the
    nan- forms when `skip`."""
    out = np.empty(1)
    if skip:
        out[0] = np.nanpercentile(a, q) if scale == 0.01 else np.nanquantile(a, q)
    else:
        out[0] = np.percentile(a, q) if scale == 0.01 else np.quantile(a, q)
    return out


@numba.njit(cache=True)
def quantile_bars(a, q, scale, skip, out_bar):
    """(a_bar, q_bar) through np.percentile / np.quantile(a, q) (nan- forms when `skip`)."""
    x = as_float64(a).ravel()
    order = _ordered(x, skip)
    n = order.shape[0]
    qs = np.ascontiguousarray(q).ravel()
    g = np.ascontiguousarray(out_bar).ravel()
    a_bar = np.zeros(x.shape[0])
    q_bar = np.zeros(qs.shape[0])
    if n == 0:
        return a_bar.reshape(a.shape), q_bar.reshape(q.shape)
    for k in range(qs.shape[0]):
        lo, hi, f = _at(n, qs[k], scale)
        a_bar[order[lo]] += (1.0 - f) * g[k]
        a_bar[order[hi]] += f * g[k]
        if hi > lo:
            q_bar[k] = g[k] * (x[order[hi]] - x[order[lo]]) * scale * (n - 1)
    return a_bar.reshape(a.shape), q_bar.reshape(q.shape)


@numba.njit(cache=True)
def quantile_tangent_a(a, q, scale, skip, d):
    """The tangent of np.percentile / np.quantile(a, q) for a's tangent d (q an array)."""
    x = as_float64(a).ravel()
    order = _ordered(x, skip)
    n = order.shape[0]
    qs = np.ascontiguousarray(q).ravel()
    dx = np.ascontiguousarray(d).ravel()
    t = np.full(qs.shape[0], np.nan)
    for k in range(qs.shape[0] if n > 0 else 0):
        lo, hi, f = _at(n, qs[k], scale)
        t[k] = (1.0 - f) * dx[order[lo]] + f * dx[order[hi]]
    return t.reshape(q.shape)


@numba.njit(cache=True)
def quantile_tangent_q(a, q, scale, skip, d):
    """The tangent of np.percentile / np.quantile(a, q) for q's tangent d."""
    x = as_float64(a).ravel()
    s = x[_ordered(x, skip)]
    n = s.shape[0]
    qs = np.ascontiguousarray(q).ravel()
    dq = np.ascontiguousarray(d).ravel()
    t = np.full(qs.shape[0], np.nan)
    for k in range(qs.shape[0] if n > 0 else 0):
        lo, hi, f = _at(n, qs[k], scale)
        t[k] = dq[k] * (s[hi] - s[lo]) * scale * (n - 1)
    return t.reshape(q.shape)


# (U, s, Vh) = np.linalg.svd(A) (numba: full matrices), packed as one (m + 1 + n, max(m, n))
# array: U in the first m rows, s in row m, Vh below (unpacked as views where the call
# stood). The singular values' derivative holds for any shape (A_bar = U diag(s_bar) Vh over
# the first k = min(m, n) vectors); through U and Vh it needs a square A with distinct
# singular values (Townsend 2016, F_ij = 1 / (s_j^2 - s_i^2)): elsewhere the adjoint raises
# ValueError and the tangent of U and Vh is NaN --------------------------------------------------
@numba.njit(cache=True)
def svd_packed(a):
    """[U; s; Vh] of np.linalg.svd(a), zero-padded to max(m, n) columns."""
    u, s, vh = np.linalg.svd(a)
    m, n = a.shape
    out = np.zeros((m + 1 + n, max(m, n)))
    out[:m, :m] = u
    out[m, :s.shape[0]] = s
    out[m + 1:, :n] = vh
    return out


@numba.njit(cache=True)
def _svd_f(s):
    """F_ij = 1 / (s_j^2 - s_i^2) off the diagonal; inf where two singular values are equal."""
    k = s.shape[0]
    f = np.zeros((k, k))
    for i in range(k):
        for j in range(k):
            if i != j:
                gap = s[j] * s[j] - s[i] * s[i]
                f[i, j] = 1.0 / gap if gap != 0.0 else np.inf
    return f


@numba.njit(cache=True)
def svd_a_bar(a, out, out_bar):
    """A's adjoint through (U, s, Vh) = np.linalg.svd(A), from the packed array's adjoint."""
    m, n = a.shape
    k = min(m, n)
    u = np.ascontiguousarray(out[:m, :m])
    s = out[m, :k].copy()
    vh = np.ascontiguousarray(out[m + 1:, :n])
    u_bar = np.ascontiguousarray(out_bar[:m, :m])
    s_bar = out_bar[m, :k].copy()
    vh_bar = np.ascontiguousarray(out_bar[m + 1:, :n])
    inner = np.zeros((k, k))
    for i in range(k):
        inner[i, i] = s_bar[i]
    if np.any(u_bar != 0.0) or np.any(vh_bar != 0.0):
        f = _svd_f(s)
        if m != n or not np.all(np.isfinite(f)):
            raise ValueError("adjit: derivatives through the singular vectors of "
                             "np.linalg.svd need a square matrix with distinct singular values")
        v = np.ascontiguousarray(vh.T)
        v_bar = np.ascontiguousarray(vh_bar.T)
        ut_ub = np.dot(u.T, u_bar)
        vt_vb = np.dot(v.T, v_bar)
        j = f * (ut_ub - ut_ub.T)
        kk = f * (vt_vb - vt_vb.T)
        for r in range(k):
            for c in range(k):
                inner[r, c] += j[r, c] * s[c] + s[r] * kk[r, c]
    return np.dot(np.dot(np.ascontiguousarray(u[:, :k]), inner),
                  np.ascontiguousarray(vh[:k, :]))


@numba.njit(cache=True)
def svd_tangent(a, out, d):
    """The packed tangent [U_dot; s_dot; Vh_dot] for A's tangent d (U_dot, Vh_dot NaN where
    they do not exist: a matrix that is not square, or equal singular values)."""
    m, n = a.shape
    k = min(m, n)
    u = np.ascontiguousarray(out[:m, :m])
    s = out[m, :k].copy()
    vh = np.ascontiguousarray(out[m + 1:, :n])
    d64 = np.ascontiguousarray(as_float64(d))
    p = np.dot(np.dot(np.ascontiguousarray(u[:, :k].T), d64), np.ascontiguousarray(vh[:k].T))
    t = np.zeros(out.shape)
    for i in range(k):
        t[m, i] = p[i, i]
    if m != n:
        t[:m, :m] = np.nan
        t[m + 1:, :n] = np.nan
        return t
    f = _svd_f(s)
    left = np.empty((k, k))
    right = np.empty((k, k))
    for r in range(k):
        for c in range(k):
            left[r, c] = f[r, c] * (p[r, c] * s[c] + s[r] * p[c, r]) if r != c else 0.0
            right[r, c] = f[r, c] * (s[r] * p[r, c] + p[c, r] * s[c]) if r != c else 0.0
    t[:m, :m] = np.dot(u, left)
    t[m + 1:, :n] = np.dot(np.ascontiguousarray(vh.T), right).T
    return t


# x = np.linalg.lstsq(a, b)[0] = pinv(a) b where a has full rank: the adjoint and tangent of
# pinv (above) carried through the product with b ------------------------------------------------
@numba.njit(cache=True)
def lstsq_x(a, b):
    """The solution of np.linalg.lstsq(a, b) (numba's rcond)."""
    x, res, rank, sv = np.linalg.lstsq(a, b)
    return x


@numba.njit(cache=True)
def _as_columns(v):
    c = np.ascontiguousarray(as_float64(v))
    return c.reshape(c.shape[0], -1)


@numba.njit(cache=True)
def lstsq_bars(a, b, out_bar):
    """(a_bar, b_bar) through x = pinv(a) b."""
    p = np.linalg.pinv(np.ascontiguousarray(as_float64(a)))
    g = _as_columns(out_bar)
    a_bar = pinv_a_bar(a, p, np.dot(g, _as_columns(b).T))
    return a_bar, np.dot(np.ascontiguousarray(p.T), g).reshape(b.shape)


@numba.njit(cache=True)
def lstsq_tangent_a(a, b, d):
    """x's tangent for a's tangent d: pinv's tangent times b."""
    p = np.linalg.pinv(np.ascontiguousarray(as_float64(a)))
    return np.dot(pinv_tangent(a, p, d), _as_columns(b)).reshape((p.shape[0],) + b.shape[1:])


@numba.njit(cache=True)
def lstsq_tangent_b(a, d):
    """x's tangent for b's tangent d: pinv(a) d."""
    p = np.linalg.pinv(np.ascontiguousarray(as_float64(a)))
    g = np.dot(p, _as_columns(d))
    return g.reshape((p.shape[0],) + d.shape[1:])


# np.cov(m) and np.corrcoef(m) of a 2-D m (rows are variables, numba's defaults): with
# X = m - mean(m, axis=1) and n columns, C = X X^T / (n - 1); the adjoint of C is
# X_bar = (C_bar + C_bar^T) X / (n - 1), centred along each row; R = C_ij / sqrt(C_ii C_jj) ------
@numba.njit(cache=True)
def _centred(m):
    x = np.ascontiguousarray(as_float64(m)).copy()
    for i in range(x.shape[0]):
        x[i] -= np.mean(x[i])
    return x


@numba.njit(cache=True)
def cov_m_bar(m, out_bar):
    """m's adjoint through C = np.cov(m)."""
    x = _centred(m)
    n = x.shape[1]
    g = np.ascontiguousarray(out_bar)
    xb = np.dot(g + g.T, x) / (n - 1)
    return _centred(xb)


@numba.njit(cache=True)
def cov_tangent(m, d):
    """C's tangent for m's tangent d: (dX X^T + X dX^T) / (n - 1)."""
    x = _centred(m)
    dx = _centred(d)
    t = np.dot(dx, x.T)
    return (t + t.T) / (x.shape[1] - 1)


@numba.njit(cache=True)
def corrcoef_m_bar(m, out_bar):
    """m's adjoint through R = np.corrcoef(m), by way of C = np.cov(m)."""
    x = _centred(m)
    c = np.dot(x, x.T) / (x.shape[1] - 1)
    k = c.shape[0]
    d = np.sqrt(np.diag(c))
    c_bar = np.zeros((k, k))
    for i in range(k):
        for j in range(k):
            r = c[i, j] / (d[i] * d[j])
            c_bar[i, j] += out_bar[i, j] / (d[i] * d[j])
            c_bar[i, i] -= 0.5 * out_bar[i, j] * r / c[i, i]
            c_bar[j, j] -= 0.5 * out_bar[i, j] * r / c[j, j]
    return cov_m_bar(m, c_bar)


@numba.njit(cache=True)
def corrcoef_tangent(m, d):
    """R's tangent: dC_ij / (d_i d_j) - R_ij (dC_ii / C_ii + dC_jj / C_jj) / 2."""
    x = _centred(m)
    c = np.dot(x, x.T) / (x.shape[1] - 1)
    dc = cov_tangent(m, d)
    k = c.shape[0]
    s = np.sqrt(np.diag(c))
    t = np.empty((k, k))
    for i in range(k):
        for j in range(k):
            r = c[i, j] / (s[i] * s[j])
            t[i, j] = dc[i, j] / (s[i] * s[j]) - 0.5 * r * (dc[i, i] / c[i, i]
                                                           + dc[j, j] / c[j, j])
    return t


# np.vander(x, N, increasing): out[i, j] = x[i] ** p_j with p_j = j (increasing) or N - 1 - j --
@numba.njit(cache=True)
def vander_bar(x, increasing, out_bar):
    """x's adjoint through np.vander: sum_j out_bar[i, j] p_j x[i] ** (p_j - 1)."""
    n = out_bar.shape[1]
    bar = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        for j in range(n):
            p = j if increasing else n - 1 - j
            if p > 0:
                bar[i] += out_bar[i, j] * p * x[i] ** (p - 1)
    return bar


@numba.njit(cache=True)
def vander_tangent(x, increasing, out, d):
    """The tangent of np.vander for x's tangent d."""
    n = out.shape[1]
    t = np.zeros(out.shape)
    for i in range(x.shape[0]):
        for j in range(n):
            p = j if increasing else n - 1 - j
            if p > 0:
                t[i, j] = p * x[i] ** (p - 1) * d[i]
    return t


# np.diagflat(v, k), np.geomspace(start, stop, num), np.logspace(start, stop, num) ------------
@numba.njit(cache=True)
def diagflat_bar(v, k, out_bar):
    """v's adjoint through np.diagflat(v, k): the k-th diagonal of out_bar, in v's shape."""
    flat = np.empty(v.size)
    for i in range(v.size):
        flat[i] = out_bar[i, i + k] if k >= 0 else out_bar[i - k, i]
    return flat.reshape(v.shape)


@numba.njit(cache=True)
def _fraction(k, n):
    return k / (n - 1) if n > 1 else 0.0


@numba.njit(cache=True)
def geomspace_bars(start, stop, out, out_bar):
    """(start's, stop's) adjoints through out = np.geomspace(start, stop, n): out[k] is
    start (stop / start) ** t_k with t_k = k / (n - 1), so d out[k] / d start is
    out[k] (1 - t_k) / start and d out[k] / d stop is out[k] t_k / stop."""
    n = out.size
    a = 0.0
    b = 0.0
    for k in range(n):
        t = _fraction(k, n)
        a += out_bar[k] * out[k] * (1.0 - t) / start
        b += out_bar[k] * out[k] * t / stop
    return a, b


@numba.njit(cache=True)
def geomspace_tangent(out, end, d, first):
    """out's tangent through np.geomspace for the tangent d of start (first) or stop."""
    n = out.size
    t = np.empty(n)
    for k in range(n):
        f = _fraction(k, n)
        t[k] = out[k] * ((1.0 - f) if first else f) / end * d
    return t


@numba.njit(cache=True)
def logspace_bars(out, out_bar):
    """(start's, stop's) adjoints through out = np.logspace(start, stop, n) = 10 **
    linspace(start, stop, n): d out[k] / d start is out[k] ln(10) (1 - t_k)."""
    n = out.size
    a = 0.0
    b = 0.0
    for k in range(n):
        t = _fraction(k, n)
        g = out_bar[k] * out[k] * 2.302585092994046
        a += g * (1.0 - t)
        b += g * t
    return a, b


@numba.njit(cache=True)
def logspace_tangent(out, d, first):
    """out's tangent through np.logspace for the tangent d of start (first) or stop."""
    n = out.size
    t = np.empty(n)
    for k in range(n):
        f = _fraction(k, n)
        t[k] = out[k] * 2.302585092994046 * ((1.0 - f) if first else f) * d
    return t


# np.nancumprod (NaN as 1, of the flattened array), np.append (of the flattened arrays) --------
@numba.njit(cache=True)
def nancumprod_bar(a, out_bar):
    """a's adjoint through np.nancumprod(a): cumprod's of the array with NaN as 1; no
    derivative reaches a NaN element."""
    x = a.ravel()
    filled = np.where(x != x, 1.0, x)
    bar = cumprod_bar(filled, out_bar).ravel()
    return np.where(x != x, 0.0, bar).reshape(a.shape)


@numba.njit(cache=True)
def nancumprod_tangent(a, out, d):
    """The tangent of np.nancumprod(a) for a's tangent d (NaN elements contribute none)."""
    x = a.ravel()
    filled = np.where(x != x, 1.0, x)
    return cumprod_tangent(filled, out, np.where(x != x, 0.0, d.ravel()))


def size_of(a):
    """The number of elements of an array, 1 for a number."""
    return np.size(a)


@overload(size_of)
def _size_of(a):
    if isinstance(a, types.Array):
        return lambda a: a.size
    return lambda a: 1


def shaped_like(flat, like):
    """A 1-D array in the shape of `like`; its one element when `like` is a number."""
    return flat.reshape(np.shape(like)) if isinstance(like, np.ndarray) else flat[0]


@overload(shaped_like)
def _shaped_like(flat, like):
    if isinstance(like, types.Array):
        return lambda flat, like: flat.reshape(like.shape)
    return lambda flat, like: flat[0]


def zero_like(a):
    """Zeros in the shape of an array, 0.0 for a number."""
    return np.zeros(np.shape(a)) if isinstance(a, np.ndarray) else 0.0


@overload(zero_like)
def _zero_like(a):
    if isinstance(a, types.Array):
        return lambda a: np.zeros(a.shape)
    return lambda a: 0.0


@numba.njit(cache=True)
def append_head_bar(arr, out_bar):
    """arr's adjoint through np.append(arr, values): the first arr.size elements."""
    return shaped_like(out_bar[:size_of(arr)].copy(), arr)


@numba.njit(cache=True)
def append_tail_bar(arr, values, out_bar):
    """values' adjoint through np.append(arr, values): the elements after arr's."""
    return shaped_like(out_bar[size_of(arr):].copy(), values)


@numba.njit(cache=True)
def gather1(values, idx):
    """values[idx] for a 1-D integer array idx (np.bincount's adjoint in its weights)."""
    out = np.empty(idx.shape[0])
    for i in range(idx.shape[0]):
        out[i] = values[idx[i]]
    return out


# np.take_along_axis(arr, indices, axis): its adjoint scatters out_bar back ------------------
def take_along_axis_bar(arr, indices, axis, out_bar):
    """arr's adjoint through np.take_along_axis(arr, indices, axis): out_bar added at the
    elements each output read (repeated indices accumulate); axis None: of the flattened
    array. 1-D and 2-D arrays (broadcast in the other axis as numpy does)."""
    return take_along_axis_adjoint(arr, indices, axis, out_bar)     # compiled


@overload(take_along_axis_bar)
def _take_along_axis_bar(arr, indices, axis, out_bar):
    if isinstance(axis, (types.NoneType, types.Omitted)):
        def flat(arr, indices, axis, out_bar):
            bar = np.zeros(arr.size)
            idx = indices.ravel()
            g = out_bar.ravel()
            for k in range(idx.shape[0]):
                t = idx[k]
                bar[t + arr.size if t < 0 else t] += g[k]
            return bar.reshape(arr.shape)
        return flat
    if arr.ndim == 1:
        def one(arr, indices, axis, out_bar):
            bar = np.zeros(arr.shape[0])
            for k in range(out_bar.shape[0]):
                t = indices[k if indices.shape[0] != 1 else 0]
                bar[t + arr.shape[0] if t < 0 else t] += out_bar[k]
            return bar
        return one
    if arr.ndim == 2:
        def two(arr, indices, axis, out_bar):
            bar = np.zeros(arr.shape)
            ax = axis % 2
            for i in range(out_bar.shape[0]):
                for j in range(out_bar.shape[1]):
                    t = indices[i if indices.shape[0] != 1 else 0,
                                j if indices.shape[1] != 1 else 0]
                    ai = i if arr.shape[0] != 1 else 0
                    aj = j if arr.shape[1] != 1 else 0
                    if ax == 0:
                        bar[t + arr.shape[0] if t < 0 else t, aj] += out_bar[i, j]
                    else:
                        bar[ai, t + arr.shape[1] if t < 0 else t] += out_bar[i, j]
            return bar
        return two

    def more(arr, indices, axis, out_bar):
        raise ValueError("adjit: the derivative of np.take_along_axis is taken for 1-D and "
                         "2-D arrays (or axis=None)")
    return more


@numba.njit(cache=True)
def take_along_axis_adjoint(arr, indices, axis, out_bar):
    """The compiled form of take_along_axis_bar (generated code calls this)."""
    return take_along_axis_bar(arr, indices, axis, out_bar)


# np.extract(condition, arr) and np.delete(arr, obj), of the flattened array -----------------
@numba.njit(cache=True)
def _put_back(keep, arr, out_bar):
    """out_bar's elements, in order, at the flat positions of arr where `keep` is true;
    zeros elsewhere; in arr's shape."""
    bar = np.zeros(arr.size)
    k = 0
    for i in range(bar.shape[0]):
        if keep[i]:
            bar[i] = out_bar[k]
            k += 1
    return bar.reshape(arr.shape)


@numba.njit(cache=True)
def extract_bar(condition, arr, out_bar):
    """arr's adjoint through np.extract(condition, arr): out_bar back at the elements whose
    condition is true, in order."""
    return _put_back(condition.ravel(), arr, out_bar)


@numba.njit(cache=True)
def _kept(n, obj):
    keep = np.ones(n, dtype=np.bool_)
    for t in np.asarray(obj).ravel():
        if t < -n or t >= n:
            raise IndexError("index out of bounds for np.delete")
        keep[t + n if t < 0 else t] = False
    return keep


@numba.njit(cache=True)
def delete_bar(arr, obj, out_bar):
    """arr's adjoint through np.delete(arr, obj) (numba: of the flattened array): out_bar
    back at the elements kept, in order; none at the deleted ones."""
    return _put_back(_kept(arr.size, obj), arr, out_bar)


@numba.njit(cache=True)
def keep(value):
    """`value`, through a call numba's dead-code elimination keeps (a draw whose number
    nothing reads is still made: reverse/dce.py)."""
    return value


@numba.njit(cache=True)
def check_assert(ok):
    """An `assert` of the user's function, kept in generated code (a statement with no
    derivative)."""
    if not ok:
        raise AssertionError("an assert statement of the differentiated function failed")


@numba.njit(cache=True)
def tuple_index(k, n):
    """The position t[k] reads in a tuple of n numbers (k < 0 counts from the end), or
    IndexError as Python raises."""
    if k < -n or k >= n:
        raise IndexError("tuple index out of range")
    return k + n if k < 0 else k


@numba.njit(cache=True)
def check_same_length(n, m):
    """An array name a loop rebinds keeps its shape (adjit updates its array in place)."""
    if n != m:
        raise ValueError("adjit: an array name rebound in a loop changed its shape (adjit "
                         "updates the array in place); give the new array another name")


@numba.extending.intrinsic
def _num_threads(typingctx):
    """numba's thread count, called by its symbol in the threading layer as numba's own
    parallel loops call it: numba.get_num_threads() reaches it through a ctypes pointer,
    which keeps a function from numba's disk cache."""
    from numba.np.ufunc import parallel
    parallel._launch_threads()      # (registers the symbol; numba.get_num_threads does too)

    def codegen(context, builder, signature, args):
        import llvmlite.ir
        from numba.core import cgutils
        fn = cgutils.get_or_insert_function(
            builder.module, llvmlite.ir.FunctionType(llvmlite.ir.IntType(64), []),
            "get_num_threads")
        return builder.call(fn, [])
    return types.int64(), codegen


@numba.njit
def num_threads():
    """The number of threads numba's parallel loops use now (numba.get_num_threads()), in a
    form numba can cache."""
    return _num_threads()
