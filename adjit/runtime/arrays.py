"""Adjoints and tangents of numpy's other whole-array functions adjit keeps at array level
(generated code calls them as `vec.<name>`, through runtime/vec.py; their rules are the
ArrayRules of rules/table.py): linspace and arange, cumprod, interp, kron, cross, convolve,
correlate, the quantiles, cov and corrcoef, vander, diagflat, geomspace, logspace,
nancumprod, append, take_along_axis, extract and delete, and the shape helpers they share."""
import math

import numba
from numba.core import types
from numba.extending import overload
import numpy as np

from ..errors import ValueRefusedError
from .index import as_float64, keep
from .jitcache import key_by_level


@numba.njit(cache=True)
def partition_order(a, kth):
    """Positions of a 1-D array's elements in the order numba's np.partition(a, kth) leaves
    them: a[partition_order(a, kth)] equals np.partition(a, kth) element for element (the
    k-th smallest of its sorted and its partitioned values paired up, NaNs last in both)."""
    parted = np.partition(a, kth)
    mine = np.argsort(a, kind="mergesort")
    theirs = np.argsort(parted, kind="mergesort")
    out = np.empty(a.shape[0], np.int64)
    for r in range(a.shape[0]):
        out[theirs[r]] = mine[r]
    return out


@numba.njit(cache=True)
def argsort_rows(a):
    """Flat positions (C order) of a 2-D array's elements with each row in sorted order:
    a.ravel()[argsort_rows(a)].reshape(a.shape) is np.sort(a) (numba sorts the last axis)."""
    m, n = a.shape
    out = np.empty(m * n, np.int64)
    for i in range(m):
        order = np.argsort(a[i])
        for j in range(n):
            out[i * n + j] = i * n + order[j]
    return out


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
                raise ValueRefusedError("adjit: broadcasting within an axis is not differentiated "
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
        raise ValueRefusedError("adjit: the derivative of np.take_along_axis is taken for 1-D and "
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


key_by_level(globals())     # numba caches each level apart (jitcache.py)
