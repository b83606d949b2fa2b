"""Adjoints and tangents of the np.linalg functions adjit keeps at array level (generated code
calls them as `vec.<name>`, through runtime/vec.py; their rules are the ArrayRules of
rules/table.py): matrix products by BLAS, cholesky, det, slogdet, eigh, eigvalsh, solve,
matrix_power, pinv, qr, svd and lstsq (the last three packed as one array)."""

import numba
import numpy as np

from ..errors import ValueRefusedError
from .index import as_float64, widened
from .jitcache import key_by_level


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
def mv(a, x):
    """a @ x for a 2-D a and a 1-D x (BLAS, as numba's own np.dot: the same numbers, and its
    ValueError where the lengths differ)."""
    return np.dot(widened(a, x), widened(x, a))


@numba.njit(cache=True)
def mv_t(a, x):
    """a.T @ x (= x @ a) for a 2-D a and a 1-D x (BLAS)."""
    return np.dot(widened(a, x).T, widened(x, a))


@numba.njit(cache=True)
def outer_vv(u, v):
    """The outer product u v.T of two 1-D arrays (a matrix-vector product's matrix
    adjoint)."""
    return np.outer(widened(u, v), widened(v, u))


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
                    raise ValueRefusedError("adjit: np.linalg.eigh eigenvectors have no derivative "
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
        raise ValueRefusedError("adjit: the derivative of np.linalg.qr is implemented for matrices "
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


# (U, s, Vh) = np.linalg.svd(A) (numba: full matrices), packed as one (m + 1 + n, max(m, n))
# array: U in the first m rows, s in row m, Vh below (unpacked as views where the call
# stood). The singular values' derivative holds for any shape (A_bar = U diag(s_bar) Vh over
# the first k = min(m, n) vectors); through the first k vectors of U and Vh it needs distinct
# singular values, nonzero where A is not square (Townsend 2016, F_ij = 1 / (s_j^2 - s_i^2)),
# and the vectors beyond k have none: elsewhere the adjoint raises ValueRefusedError and the
# tangent is NaN -----------------------------------------------------------------------------
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
def _svd_parts(packed, m, n):
    """(U[:, :k], s, V = Vh[:k].T), k = min(m, n), of a packed [U; s; Vh] (or of its
    adjoint): the vectors that have a derivative."""
    k = min(m, n)
    return (np.ascontiguousarray(packed[:m, :k]), packed[m, :k].copy(),
            np.ascontiguousarray(packed[m + 1:m + 1 + k, :n].T))


@numba.njit(cache=True)
def svd_a_bar(a, out, out_bar):
    """A's adjoint through (U, s, Vh) = np.linalg.svd(A), from the packed array's adjoint.
    With k = min(m, n), V = Vh[:k].T and the adjoints U_bar, V_bar of the first k vectors:
    A_bar = U [diag(s_bar) + (F o (U'U_bar - U_bar'U)) S + S (F o (V'V_bar - V_bar'V))] V'
    + (I - U U') U_bar S^-1 V' + U S^-1 V_bar' (I - V V') (the last two vanish for a square
    A). The vectors numpy adds beyond k (full_matrices=True of a matrix that is not square)
    are chosen freely: they have no derivative."""
    m, n = a.shape
    k = min(m, n)
    u, s, v = _svd_parts(out, m, n)
    u_bar, s_bar, v_bar = _svd_parts(out_bar, m, n)
    inner = np.zeros((k, k))
    for i in range(k):
        inner[i, i] = s_bar[i]
    a_bar = np.zeros((m, n))
    if np.any(out_bar[:m, k:m] != 0.0) or np.any(out_bar[m + 1 + k:, :n] != 0.0):
        raise ValueRefusedError("adjit: the singular vectors np.linalg.svd adds beyond "
                                "min(m, n) (full_matrices=True of a matrix that is not "
                                "square) are chosen freely and have no derivative; pass "
                                "full_matrices=False")
    if np.any(u_bar != 0.0) or np.any(v_bar != 0.0):
        f = _svd_f(s)
        if not np.all(np.isfinite(f)):
            raise ValueRefusedError("adjit: derivatives through the singular vectors of "
                                    "np.linalg.svd need distinct singular values")
        ut_ub = np.dot(u.T, u_bar)
        vt_vb = np.dot(v.T, v_bar)
        j = f * (ut_ub - ut_ub.T)
        kk = f * (vt_vb - vt_vb.T)
        for r in range(k):
            for c in range(k):
                inner[r, c] += j[r, c] * s[c] + s[r] * kk[r, c]
        if m != n:
            # (I - U U') U_bar S^-1 V' and U S^-1 V_bar' (I - V V'): one of them is zero
            left = u_bar - np.dot(u, ut_ub)
            right = v_bar - np.dot(v, vt_vb)
            for c in range(k):
                if s[c] != 0.0:
                    left[:, c] /= s[c]
                    right[:, c] /= s[c]
                elif np.any(left[:, c] != 0.0) or np.any(right[:, c] != 0.0):
                    raise ValueRefusedError("adjit: derivatives through the singular vectors "
                                            "of np.linalg.svd of a matrix that is not square "
                                            "need nonzero singular values")
            a_bar += np.dot(left, v.T) + np.dot(u, right.T)
    return a_bar + np.dot(np.dot(u, inner), np.ascontiguousarray(v.T))


@numba.njit(cache=True)
def svd_tangent(a, out, d):
    """The packed tangent [U_dot; s_dot; Vh_dot] for A's tangent d, with k = min(m, n),
    V = Vh[:k].T, P = U' d V: U_dot = U (F o (P S + S P')) + (I - U U') d V S^-1 and
    V_dot = V (F o (S P + P' S)) + (I - V V') d' U S^-1. NaN where they do not exist: the
    vectors beyond k of full matrices, equal singular values, a zero singular value of a
    matrix that is not square."""
    m, n = a.shape
    k = min(m, n)
    u, s, v = _svd_parts(out, m, n)
    d64 = np.ascontiguousarray(as_float64(d))
    p = np.dot(np.dot(u.T, d64), v)
    t = np.zeros(out.shape)
    for i in range(k):
        t[m, i] = p[i, i]
    t[:m, k:m] = np.nan
    t[m + 1 + k:, :n] = np.nan
    f = _svd_f(s)
    left = np.empty((k, k))
    right = np.empty((k, k))
    for r in range(k):
        for c in range(k):
            left[r, c] = f[r, c] * (p[r, c] * s[c] + s[r] * p[c, r]) if r != c else 0.0
            right[r, c] = f[r, c] * (s[r] * p[r, c] + p[c, r] * s[c]) if r != c else 0.0
    u_dot = np.dot(u, left)
    v_dot = np.dot(v, right)
    if m != n:
        du = np.dot(d64, v) - np.dot(u, p)              # (I - U U') d V
        dv = np.dot(d64.T, u) - np.dot(v, p.T)          # (I - V V') d' U
        for c in range(k):
            w = 1.0 / s[c] if s[c] != 0.0 else np.nan
            u_dot[:, c] += du[:, c] * w
            v_dot[:, c] += dv[:, c] * w
    t[:m, :k] = u_dot
    t[m + 1:m + 1 + k, :n] = v_dot.T
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


key_by_level(globals())     # numba caches each level apart (jitcache.py)
