"""numba.prange loops, differentiated in parallel.

The programs are written as a numba user writes a parallel loop (pairwise energies, a
likelihood over samples, a row-wise map, a kernel matrix, a stencil inside a time loop).
Each is compiled unchanged by numba.njit(parallel=True), the value's oracle; the gradient is
checked against central finite differences of that compiled program and against adjit's
gradient of the same program written with range (an independent, serial derivation). The
generated source is read for the parallel loops: `numba.prange` in the forward sweep, the
chunked backward loop, or the comment saying why a loop runs serially.
"""
import math

import numba
import numpy as np
import pytest
from numba import prange

import adjit

from fd import check_value_and_grad


def lj_energy(pos, eps):
    n = pos.shape[0]
    e = 0.0
    for i in prange(n):
        for j in range(n):
            if i != j:
                dx = pos[i, 0] - pos[j, 0]
                dy = pos[i, 1] - pos[j, 1]
                r2 = dx * dx + dy * dy
                s6 = 1.0 / (r2 * r2 * r2)
                e += 2.0 * eps * (s6 * s6 - s6)
    return e


def lj_energy_serial(pos, eps):
    n = pos.shape[0]
    e = 0.0
    for i in range(n):
        for j in range(n):
            if i != j:
                dx = pos[i, 0] - pos[j, 0]
                dy = pos[i, 1] - pos[j, 1]
                r2 = dx * dx + dy * dy
                s6 = 1.0 / (r2 * r2 * r2)
                e += 2.0 * eps * (s6 * s6 - s6)
    return e


def logistic_nll(w, b, X, y):
    n = X.shape[0]
    total = 0.0
    for i in prange(n):
        z = b
        for k in range(X.shape[1]):
            z += X[i, k] * w[k]
        total += math.log1p(math.exp(-y[i] * z))
    return total / n


def tanh_rows(X, w):
    n = X.shape[0]
    out = np.empty(n)
    for i in prange(n):
        out[i] = np.tanh(X[i] @ w)
    return np.sum(out ** 2)


def rbf_kernel_fit(x, ell, W):
    n = x.shape[0]
    K = np.empty((n, n))
    for i in prange(n):
        for j in range(n):
            d = x[i] - x[j]
            K[i, j] = math.exp(-d * d / ell)
    return np.sum(K * W)


def heat_prange(u0, alpha, steps):
    u = u0.copy()
    new = np.empty_like(u)
    n = u.shape[0]
    for _ in range(steps):
        new[0] = u[0]
        new[n - 1] = u[n - 1]
        for i in prange(1, n - 1):
            new[i] = u[i] + alpha * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        u, new = new, u
    return np.sum(u ** 2)


@numba.njit
def pair_term(a, b, scale):
    d = a - b
    return scale * math.exp(-d * d)


def with_helper(x, scale):
    n = x.shape[0]
    s = 0.0
    for i in prange(1, n):
        s += pair_term(x[i], x[i - 1], scale)
    return s


def product_reduction(x):
    p = 1.0
    for i in prange(x.shape[0]):
        p *= 1.0 + 0.1 * x[i]
    return p


def racy_prefix(x):
    y = x.copy()
    for i in prange(1, x.shape[0]):
        y[i] = y[i - 1] + x[i]
    return np.sum(y * y)


@pytest.fixture(scope="module")
def rng():
    return np.random.default_rng(7)


def _lattice(rng, n):
    side = int(math.ceil(math.sqrt(n)))
    pts = np.array([(i % side, i // side) for i in range(n)], dtype=np.float64) * 1.3
    return pts + 0.05 * rng.standard_normal((n, 2))


def _check(fn, args, argnums, rtol=1e-6, atol=1e-8):
    g = adjit.value_and_grad(fn, argnums=argnums)
    check_value_and_grad(fn, args, argnums, forward=numba.njit(parallel=True)(fn),
                         rtol=rtol, atol=atol, built=g)
    return g


def _backward_is_chunked(source):
    return "for _chunk1 in numba.prange(0, _nchunks1):" in source


def test_pairwise_energy_runs_its_backward_in_parallel(rng):
    pos, eps = _lattice(rng, 24), 0.7
    g = _check(lj_energy, (pos, eps), (0, 1), rtol=1e-5)
    assert "for i in numba.prange(0, n):" in g.source        # forward, as numba runs it
    assert _backward_is_chunked(g.source)
    serial = adjit.grad(lj_energy_serial, argnums=(0, 1))(pos, eps)
    got = adjit.grad(lj_energy, argnums=(0, 1))(pos, eps)
    np.testing.assert_allclose(got[0], serial[0], rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(got[1], serial[1], rtol=1e-11)


def test_likelihood_over_samples_with_an_inner_loop(rng):
    X = rng.standard_normal((60, 4))
    y = np.where(rng.random(60) < 0.5, -1.0, 1.0)
    w, b = rng.standard_normal(4), 0.3
    g = _check(logistic_nll, (w, b, X, y), (0, 1))
    assert "numba.prange(0, n)" in g.source
    assert _backward_is_chunked(g.source)


def test_row_map_computes_each_row_again_in_its_thread(rng):
    X, w = rng.standard_normal((40, 5)), 0.3 * rng.standard_normal(5)
    g = _check(tanh_rows, (X, w), 1)
    assert _backward_is_chunked(g.source)
    # the row's dot product is reset per row (recorded once per row at most) and the
    # backward sweep computes the row again in its thread: nothing recorded at all
    assert g.last_tape.tape_bytes == 0


def test_kernel_matrix_rows_are_owned_by_their_iteration(rng):
    x, W = rng.standard_normal(12), rng.standard_normal((12, 12))
    g = _check(rbf_kernel_fit, (x, 0.8, W), (0, 1))
    assert _backward_is_chunked(g.source)


def test_stencil_in_a_time_loop(rng):
    u0 = rng.standard_normal(32)
    _check(heat_prange, (u0, 0.2, 15), (0, 1))


def test_helper_called_in_the_loop_and_a_nonzero_start(rng):
    x = rng.standard_normal(30)
    g = _check(with_helper, (x, 1.5), (0, 1))
    assert _backward_is_chunked(g.source)


def test_a_loop_that_cannot_run_in_parallel_is_exact_and_says_why(rng):
    x = rng.standard_normal(20)
    g = _check(product_reduction, (x,), 0)
    assert "runs serially" in g.source
    expected = np.array([np.prod(1.0 + 0.1 * np.delete(x, k)) * 0.1 for k in range(20)])
    np.testing.assert_allclose(adjit.grad(product_reduction)(x), expected, rtol=1e-12)


def test_a_race_in_the_users_loop_is_refused():
    with pytest.raises(adjit.AdjitError, match=r"iterations of this numba\.prange loop read "
                       r"and write the same elements of `y`.*racy_prefix|racy_prefix.*`y`"):
        adjit.grad(racy_prefix)(np.ones(6))


def test_same_thread_count_gives_the_same_bits(rng):
    pos = _lattice(rng, 20)
    g = adjit.grad(lj_energy)
    first = g(pos, 0.5)
    for _ in range(3):
        assert np.array_equal(g(pos, 0.5), first)


def test_one_thread_and_all_threads_agree(rng):
    pos = _lattice(rng, 20)
    g = adjit.grad(lj_energy)
    everyone = g(pos, 0.5)
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        alone = g(pos, 0.5)
    finally:
        numba.set_num_threads(threads)
    np.testing.assert_allclose(everyone, alone, rtol=1e-12, atol=1e-12)


def test_float32_and_calls_from_njit(rng):
    X = rng.standard_normal((30, 3)).astype(np.float32)
    y = np.where(rng.random(30) < 0.5, -1.0, 1.0).astype(np.float32)
    w = rng.standard_normal(3).astype(np.float32)
    g = adjit.grad(logistic_nll)
    got = g(w, np.float32(0.1), X, y)
    assert got.dtype == np.float32
    expected = adjit.grad(logistic_nll)(w.astype(np.float64), 0.1, X.astype(np.float64),
                                        y.astype(np.float64))
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)

    @numba.njit
    def descend(w, X, y, steps):
        for _ in range(steps):
            w = w - 0.1 * g(w, 0.0, X, y)
        return w

    X64, y64 = X.astype(np.float64), y.astype(np.float64)
    w1 = descend(w.astype(np.float64), X64, y64, 3)
    ref = w.astype(np.float64)
    for _ in range(3):
        ref = ref - 0.1 * g(ref, 0.0, X64, y64)
    np.testing.assert_allclose(w1, ref, rtol=1e-12)


def _prange_then_overwrite(x):
    acc = 0.0
    for i in numba.prange(4):
        acc += math.sin(x[i])
    x[2] = 0.5
    return acc


def test_a_parallel_loop_read_before_its_array_is_written():
    """grad alone drops the loop from the forward sweep; its backward may not compute it
    again after x[2] = 0.5 (it did, giving cos(0.5) for d/dx[2]): it runs serially on the
    recorded values (a fuzzer finding, reduced)."""
    x = np.array([0.3, -0.7, 1.2, 0.4])
    g = adjit.grad(_prange_then_overwrite)(x.copy())
    np.testing.assert_allclose(g, np.cos(x), rtol=1e-14)


def _linspace_beside_a_parallel_loop(x, a):
    grid = np.linspace(a, 2.0, 1)       # one point: [a]
    acc = 0.0
    for i in numba.prange(x.shape[0]):
        acc += x[i] * x[i]
    return acc + grid[0] * a


def test_numpy_calls_beside_a_parallel_loop_mean_what_numpy_says():
    """The gradient is compiled with parallel=True for its prange loops only: numba's
    parallel conversion of numpy calls made np.linspace(a, 2.0, 1) [nan] (numba 0.68; numpy
    and numba's serial code give [a]): the value was nan (a fuzzer finding, reduced)."""
    x = np.array([0.3, -0.7, 1.2, 0.4])
    value, (gx, ga) = adjit.value_and_grad(_linspace_beside_a_parallel_loop, argnums=(0, 1))(
        x, 0.6)
    assert value == pytest.approx(np.sum(x * x) + 0.36, rel=1e-14)
    np.testing.assert_allclose(gx, 2 * x, rtol=1e-14)
    assert ga == pytest.approx(1.2, rel=1e-14)


# -- a prange loop feeding a checkpointed time loop (a snow model's parallel map, then the
# rainfall-runoff store of RRMPG's CemaneigeGR4J) ----------------------------------------

@numba.njit
def melt_map(P, g0):
    n = len(P)
    out = np.zeros(n)
    for j in prange(n):
        out[j] = P[j, 0] + 0.01 * g0
    return out


@numba.njit
def production_store(prec, etp, s0):
    n = len(prec)
    s = np.zeros(n + 1)
    qsim = np.zeros(n + 1)
    prec = np.concatenate((np.zeros(1), prec))
    etp = np.concatenate((np.zeros(1), etp))
    x1 = 350.0
    s[0] = s0 * x1
    uh1 = np.zeros(2)
    uh2 = np.zeros(4)
    for t in range(1, n + 1):
        if prec[t] >= etp[t]:
            p_n = prec[t] - etp[t]
            p_s = ((x1 * (1 - (s[t - 1] / x1) ** 2) * np.tanh(p_n / x1)) /
                   (1 + s[t - 1] / x1 * np.tanh(p_n / x1)))
            e_s = 0.0
        else:
            p_n = 0.0
            pe_n = etp[t] - prec[t]
            e_s = ((s[t - 1] * (2 - s[t - 1] / x1) * np.tanh(pe_n / x1))
                   / (1 + (1 - s[t - 1] / x1) * np.tanh(pe_n / x1)))
            p_s = 0.0
        s[t] = s[t - 1] - e_s + p_s
        perc = s[t] * (1 - (1 + (4 / 9 * s[t] / x1) ** 4) ** (-0.25))
        s[t] = s[t] - perc
        p_r = perc + (p_n - p_s)
        uh1[0] = 0.9 * p_r
        uh2[0] = 0.1 * p_r
        qsim[t] = uh1[0]
    return qsim[1:]


@numba.njit
def snow_then_runoff(P, etp, g0, s0):
    return np.sum(production_store(melt_map(P, g0), etp, s0) ** 2)


def test_a_checkpointed_time_loop_after_a_prange_loop():
    # the gradient is compiled parallel (it holds a prange loop), and numba's parallel
    # pipeline miscompiled the checkpointed loop's step function inlined into it:
    # (0.17, 17.6) with checkpoint='auto' and (0.09, 9.4) with checkpoint=2, against
    # (3.72, 1585.7); the default switched to that once the tape outgrew tape_limit
    rng = np.random.default_rng(0)
    n = 100
    P = np.ascontiguousarray(rng.gamma(0.8, 5.0, (n, 3)) + 0.3)
    etp = rng.uniform(0.5, 3.0, n)
    args = (P, etp, 10.0, 0.5)
    recorded = check_value_and_grad(snow_then_runoff, args, (2, 3))
    for options in (dict(checkpoint="auto"), dict(tape_limit=4096)):
        g = adjit.grad(snow_then_runoff, argnums=(2, 3), **options)
        assert g(*args) == recorded, options
        assert g.last_tape.steps == n, options       # (checkpointed)


@numba.njit(parallel=True)
def _mean_of_a_prange_sum(x):
    n = len(x)
    m = 0.0
    for i in numba.prange(n):
        m += x[i]
    m = m / n
    return m


@numba.njit(parallel=True)
def _second_moment(x):
    n = len(x)
    m = 0.0
    for i in numba.prange(n):
        m += x[i]
    m = m / n
    s = 0.0
    for i in numba.prange(n):
        s += (x[i] - m) ** 2
    s = s / n
    return s


@pytest.mark.parametrize("f", [_mean_of_a_prange_sum, _second_moment])
def test_a_prange_sum_divided_after_its_loop(f):
    """`m += x[i]` in a prange loop, then `m = m / n` (FinancePy's stats.mean and moment):
    the value and gradient failed inside numba's parallel lowering, whose names for the
    versions of `m` (m.2 written m_2) met the generated code's own `m_2`."""
    x = np.linspace(0.5, 2.0, 7)
    check_value_and_grad(f, (x,), 0, value_rtol=1e-13)


@numba.njit
def _gap(a, lo, hi, b, blo, bhi):
    if hi >= bhi:
        if lo < blo:
            s1 = np.sum(np.square(a[a > bhi] - bhi))
            s2 = np.sum(np.square(a[a < blo] - blo))
            return math.sqrt(s1 + s2 + 1.0)
        elif lo > bhi:
            return math.sqrt(max(np.sum(np.square(a - bhi)), np.sum(np.square(b - lo))))
        else:
            s1 = np.sum(np.square(a[a > bhi] - bhi))
            s2 = np.sum(np.square(b[b < lo] - lo))
            return math.sqrt(s1 + s2 + 1.0)
    return math.sqrt(np.sum(np.square(a - b)) + 1.0)


@numba.njit
def _gaps(A, lo, hi, B, blo, bhi):
    out = np.empty((A.shape[0], B.shape[0]))
    for i in prange(A.shape[0]):
        for j in prange(B.shape[0]):
            out[i, j] = _gap(A[i], lo[i], hi[i], B[j], blo[j], bhi[j])
    return out


def _total_gap(A, lo, hi, B, blo, bhi):
    return np.sum(_gaps(A, lo, hi, B, blo, bhi))


def test_a_prange_numbas_parallel_passes_stop_on_is_compiled_serially(monkeypatch):
    """Nested prange loops over a helper of masks and branches (the shape of pyts's lower
    bounds, which numba runs serially: @njit without parallel=True): numba's parallel
    passes stopped on the value-and-gradient's forward loop ("unexpected cycle in
    lookup()", an internal error); the generated code is then compiled serially, each
    prange a range."""
    from adjit.codegen import emit
    failed = []
    jit_into = emit._jit_into

    def watched(*args, **kwargs):
        try:
            return jit_into(*args, **kwargs)
        except Exception as exc:    # noqa: BLE001
            failed.append(kwargs.get("parallel"))
            raise
    monkeypatch.setattr(emit, "_jit_into", watched)
    rng = np.random.default_rng(3)
    A, B = rng.standard_normal((3, 5)), 0.5 * rng.standard_normal((2, 5))
    args = (A, A.min(1), A.max(1), B, B.min(1), B.max(1))
    check_value_and_grad(_total_gap, args, (0, 3), value_rtol=1e-14)
    assert failed == [True]     # (the case is still one numba's parallel passes refuse)


_W = np.linspace(0.1, 1.0, 5)
_W_2 = np.linspace(1.0, 2.0, 5)


@numba.njit(parallel=True)
def _weighted_by_two_globals(x):
    out = np.empty(x.shape[0])
    for i in prange(x.shape[0]):
        out[i] = _W[i] * x[i] + _W_2[i] * x[i] * x[i]
    return np.sum(out)


def test_globals_named_like_versions_in_a_parallel_gradient():
    """Module arrays `_W` and `_W_2` read in a prange loop: the generated code's globals
    keep their names where names like numba's versions are renamed (an internal error)."""
    x = np.linspace(0.3, 0.9, 5)
    g = check_value_and_grad(_weighted_by_two_globals, (x,), 0, value_rtol=1e-13)
    np.testing.assert_allclose(g, _W + 2.0 * _W_2 * x, rtol=1e-14)
