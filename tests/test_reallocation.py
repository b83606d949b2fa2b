"""Arrays allocated in a loop with a shape that changes from one iteration to the next, as
published numba code allocates them: pyhpc-benchmarks' turbulent kinetic energy kernel calls
its tridiagonal solver on `a_tri[ks:]` for every water column, and the solver allocates its
result with `np.empty_like(a)`; windowed and growing-basis computations allocate `np.zeros(k
+ 1)` per step. The backward sweep allocates such an array (and its adjoint) again at the
start of each iteration, in that iteration's shape. Each case against numba's compile of the
same function (value) and central differences of it."""
import numpy as np
import pytest
from numba import njit

import adjit
from adjit import AdjitError
from fd import fd_grad


# pyhpc-benchmarks' solver as tke_numba.py writes it (an `assert` of the shapes: it lives in
# a module pytest does not rewrite)
from idiom_programs import solve_tridiag  # noqa: E402


def vertical_mixing(kappa, forc, tke, dzw, kbot, dt):
    """The kernel's implicit vertical step, one column at a time from its bottom cell
    `kbot[i]` up: the tridiagonal system is as long as the column is deep."""
    nx, nz = tke.shape
    a_tri = np.empty(nz)
    b_tri = np.empty(nz)
    c_tri = np.empty(nz)
    d_tri = np.empty(nz)
    delta = np.empty(nz)
    out = np.zeros_like(tke)
    ke = nz - 1
    for i in range(nx):
        ks = kbot[i]
        for k in range(ks, ke):
            delta[k] = dt / dzw[k + 1] * 0.5 * (kappa[i, k] + kappa[i, k + 1])
        delta[ke] = 0.0
        for k in range(ks + 1, ke):
            a_tri[k] = -delta[k - 1] / dzw[k]
        a_tri[ks] = 0.0
        a_tri[ke] = -delta[ke - 1] / (0.5 * dzw[ke])
        for k in range(ks + 1, ke):
            b_tri[k] = 1 + delta[k] / dzw[k] + delta[k - 1] / dzw[k]
        b_tri[ke] = 1 + delta[ke - 1] / (0.5 * dzw[ke])
        b_tri[ks] = 1 + delta[ks] / dzw[ks]
        for k in range(ks, ke):
            c_tri[k] = -delta[k] / dzw[k]
        c_tri[ke] = 0.0
        d_tri[ks:] = tke[i, ks:] + dt * forc[i, ks:]
        out[i, ks:] = solve_tridiag(a_tri[ks:], b_tri[ks:], c_tri[ks:], d_tri[ks:])
    return np.sum(out * out)


def _columns(seed=0):
    rng = np.random.default_rng(seed)
    nx, nz = 5, 7
    kappa = 0.5 + rng.random((nx, nz))
    forc = rng.random((nx, nz))
    tke = 0.5 + rng.random((nx, nz))
    dzw = 0.8 + 0.4 * rng.random(nz)
    kbot = np.array([0, 3, 1, 4, 2])
    return kappa, forc, tke, dzw, kbot, 0.3


def _check(f, args, argnums, rtol=1e-6, atol=1e-8, **options):
    before = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    value, grads = adjit.value_and_grad(f, argnums=argnums, **options)(*args)
    forward = njit(f)
    assert value == pytest.approx(forward(*args), rel=1e-12)
    for k, g in zip(argnums, grads):
        np.testing.assert_allclose(g, fd_grad(forward, args, k), rtol=rtol, atol=atol,
                                   err_msg=f"d/d arg {k}")
    for a, b in zip(args, before):
        np.testing.assert_array_equal(a, b)
    return grads


def test_the_tke_columns_with_pyhpc_s_tridiagonal_solver():
    """Every column's system has its own length (nz - kbot[i]); the loop over columns is
    recorded (the work arrays carry from column to column)."""
    _check(vertical_mixing, _columns(), (0, 1, 2, 3, 5))


def test_the_columns_checkpointed_give_the_same_gradient():
    args = _columns(1)
    recorded = adjit.grad(vertical_mixing, argnums=(0, 2), checkpoint=False)(*args)
    for checkpoint in (2, "auto"):
        got = adjit.grad(vertical_mixing, argnums=(0, 2), checkpoint=checkpoint)(*args)
        for a, b in zip(got, recorded):
            np.testing.assert_array_equal(a, b)


def growing_basis(c, x, steps):
    """A state updated with a window that grows each step: np.zeros(k + 1) per step."""
    u = x.copy()
    s = 0.0
    for k in range(steps):
        w = np.zeros(k + 1)
        for j in range(k + 1):
            w[j] = c[j] * u[j]
        for j in range(k + 1):
            u[j] = u[j] + 0.1 * np.tanh(w[j]) * w[k - j]
        s += np.sum(w * w * w)
    return s + np.sum(u * u)


def test_a_window_that_grows_in_a_time_loop():
    rng = np.random.default_rng(2)
    _check(growing_basis, (rng.random(6), 0.3 + rng.random(6), 5), (0, 1))


def shrinking_while(x, tol):
    """A while loop halving an array's length until it is short: np.empty(n // 2) each time,
    the new array filled from the old one (pairwise sums, as a reduction tree does)."""
    v = x.copy()
    n = v.shape[0]
    s = 0.0
    while n > tol:
        h = n // 2
        w = np.empty(h)
        for i in range(h):
            w[i] = np.sin(v[2 * i]) * v[2 * i + 1]
        for i in range(h):
            v[i] = w[i]
        s += np.sum(w * w)
        n = h
    return s + v[0]


def test_a_while_loop_whose_arrays_shrink():
    x = np.linspace(0.3, 1.4, 16)
    _check(shrinking_while, (x, 1), (0,))


def ragged_rows(A, b, lens):
    """Each row's leading block on its own: a matrix allocated at that row's length, a copy
    of a slice, a matrix-vector product and np.empty_like of arrays allocated so."""
    n = A.shape[0]
    out = np.zeros(n)
    for r in range(lens.shape[0]):
        m = lens[r]
        M = np.eye(m) * 3.0 + A[:m, :m] * out[0]
        rhs = b[:m].copy()
        rhs[0] += r
        y = M @ rhs
        z = np.empty_like(y)
        for i in range(m):
            z[i] = np.sin(y[i]) * y[i]
        out[:m] += z
    return np.sum(out * np.arange(1.0, n + 1.0))


def test_products_of_arrays_allocated_per_iteration():
    rng = np.random.default_rng(3)
    n = 5
    _check(ragged_rows, (rng.random((n, n)), rng.random(n), np.array([2, 5, 1, 3, 4])),
           (0, 1))


def solve_leading(A, b):
    s = 0.0
    for m in range(1, 4):
        y = np.linalg.solve(A[:m, :m] + 3.0 * np.eye(m), b[:m])
        s += np.sum(y * y) * (1.0 + s)
    return s


def test_a_solve_on_a_matrix_whose_shape_the_loop_changes_is_refused():
    A = np.arange(16.0).reshape(4, 4) / 20
    with pytest.raises(AdjitError, match="np.linalg.solve computed in a loop from a temporary"
                                         " array"):
        adjit.grad(solve_leading)(A, np.linspace(0.5, 1.5, 4))


def branch_allocated(x, ks):
    """The allocation is in a branch inside the loop."""
    s = 0.0
    for i in range(ks.shape[0]):
        if ks[i] > 1:
            w = np.empty(ks[i])
            for j in range(ks[i]):
                w[j] = x[j] * x[i]
            s += np.sum(np.exp(w)) * s * 0.1 + np.sum(w)
        else:
            s += x[i]
    return s


def test_an_allocation_in_a_branch():
    x = np.linspace(0.1, 0.6, 6)
    _check(branch_allocated, (x, np.array([3, 1, 5, 2, 0, 4])), (0,))


def nested_triangle(x):
    """An inner loop's array whose length is set by both loop counters."""
    s = 0.0
    for i in range(1, 4):
        for j in range(i, 5):
            w = np.empty(j - i + 1)
            for k in range(w.shape[0]):
                w[k] = x[k] * x[j] + s * 0.01
            s += np.sum(w * w)
    return s


def test_nested_loops_with_a_triangular_allocation():
    _check(nested_triangle, (np.linspace(0.2, 1.0, 5),), (0,))


def test_jvp_and_second_derivatives_through_the_reallocation():
    rng = np.random.default_rng(4)
    c, x = rng.random(5), 0.3 + rng.random(5)
    g = adjit.grad(growing_basis, argnums=1)(c, x, 4)
    t = np.linspace(-1.0, 1.0, 5)
    value, tangent = adjit.jvp(growing_basis, argnums=1)(c, x, 4, t)
    assert tangent == pytest.approx(float(np.dot(g, t)), rel=1e-10)
    H = adjit.hessian(growing_basis, argnums=1)(c, x, 4)
    for k in range(5):
        e = np.zeros(5)
        e[k] = 1e-5
        column = (adjit.grad(growing_basis, argnums=1)(c, x + e, 4) -
                  adjit.grad(growing_basis, argnums=1)(c, x - e, 4)) / 2e-5
        np.testing.assert_allclose(H[:, k], column, rtol=1e-5, atol=1e-7)


def kept_after_the_loop(x):
    s = 0.0
    w = np.zeros(1)
    for k in range(3):
        w = np.zeros(k + 1)
        w[0] = x * w.shape[0]
        s += np.sum(w * w)
    return s + np.sum(w)


def last_window(x):
    for k in range(1, 4):
        w = np.zeros(k)
        w[0] = x * k
    return np.sum(w * w)


def test_an_array_used_after_the_loop_that_allocates_it_is_refused():
    with pytest.raises(AdjitError, match="allocated in a loop with a shape that changes"):
        adjit.grad(last_window)(1.5)
    # a name rebound in the loop to a new shape: numba's own ValueError-style refusal at run
    # time, as before
    with pytest.raises((AdjitError, ValueError), match="shape"):
        adjit.grad(kept_after_the_loop)(1.5)


@njit
def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def lstm_gates_sized_in_the_loop(W, U, b, xs, h0):
    """An LSTM cell whose gate size is computed in the loop from the stacked
    pre-activations (`n = z.shape[0] // 4`): the gates' temporaries are allocated in the
    loop at a size the loop computes."""
    h = h0.copy()
    c = np.zeros_like(h0)
    for t in range(xs.shape[0]):
        z = W @ xs[t] + U @ h + b
        n = z.shape[0] // 4
        i = sigmoid(z[:n])
        f = sigmoid(z[n:2 * n])
        o = sigmoid(z[2 * n:3 * n])
        g = np.tanh(z[3 * n:])
        c = f * c + i * g
        h = o * np.tanh(c)
    return np.sum(h * h)


def test_an_lstm_cell_sizing_its_gates_in_the_loop():
    rng = np.random.default_rng(5)
    H, D, T = 3, 2, 4
    args = (0.5 * rng.standard_normal((4 * H, D)), 0.5 * rng.standard_normal((4 * H, H)),
            0.1 * rng.standard_normal(4 * H), rng.standard_normal((T, D)),
            0.1 * rng.standard_normal(H))
    _check(lstm_gates_sized_in_the_loop, args, (0, 1, 2, 4))


# -- order statistics of a window whose length the loop changes (a rolling median as pandas'
# and bottleneck's users write it in numba) -------------------------------------------------

def rolling_median(x, k):
    """The median of the last k values, over a window that grows to k at the start."""
    n = x.shape[0]
    out = np.empty(n)
    for i in range(n):
        lo = max(0, i - k + 1)
        out[i] = np.median(x[lo:i + 1])
    return np.sum(out ** 2)


def rolling_range(x, k):
    """Sorted windows of a changing length: the largest minus the smallest."""
    s = 0.0
    for i in range(x.shape[0]):
        w = np.sort(x[max(0, i - k + 1):i + 1])
        s += w[-1] - w[0] * x[i]
    return s


def trimmed_prefix_means(x):
    """The mean of each prefix without its extremes (a prefix as long as the step)."""
    total = 0.0
    for i in range(3, x.shape[0]):
        w = np.sort(x[:i])
        total += np.mean(w[1:-1]) * x[i]
    return total


def test_order_statistics_of_a_window_the_loop_resizes():
    # the loops' iterations are computed again, one by one, in the backward sweep: there
    # each window is sorted again (np.argsort's order, an integer array of that length)
    x = np.cos(np.arange(11.0) * 1.7) + 0.05 * np.arange(11.0)
    g = _check(rolling_median, (x, 4), (0,))[0]
    # analytic: d/dx of sum(out**2) is 2 out[i] times the median's weights (1/2 each on the
    # two middle elements of an even window, 1 on the middle one of an odd window)
    expected = np.zeros_like(x)
    for i in range(x.shape[0]):
        lo = max(0, i - 3)
        w = x[lo:i + 1]
        order = np.argsort(w)
        m = np.median(w)
        for j in {(w.shape[0] - 1) // 2, w.shape[0] // 2}:
            expected[lo + order[j]] += 2 * m / (1 if w.shape[0] % 2 else 2)
    np.testing.assert_allclose(g, expected, rtol=1e-13)
    _check(rolling_range, (x, 3), (0,))
    _check(trimmed_prefix_means, (x,), (0,))


def ewm_of_medians(x, k):
    s = 0.0
    for i in range(x.shape[0]):
        s = 0.9 * s + np.median(x[max(0, i - k + 1):i + 1])
    return s


def ewm_of_medians_in_two_loops(x, k):
    n = x.shape[0]
    m = np.empty(n)
    for i in range(n):
        m[i] = np.median(x[max(0, i - k + 1):i + 1])
    s = 0.0
    for i in range(n):
        s = 0.9 * s + m[i]
    return s


def test_a_window_sorted_in_a_loop_that_carries_a_value_is_refused_with_the_way_out():
    # the window's order would have to be recorded at a changing length: refused, naming the
    # carried value and the rewrite, which works
    x = np.cos(np.arange(9.0) * 1.3)
    with pytest.raises(AdjitError, match=r"line \d+\): the order that sorts an array .* "
                       r"iterations depend on each other \(`s` carries a value.*in a loop of "
                       r"their own"):
        adjit.grad(ewm_of_medians)(x, 3)
    _check(ewm_of_medians_in_two_loops, (x, 3), (0,))


def grown_then_sized_by_it(x):
    """b is allocated at the length of a, which the loop changes: b's shape changes too."""
    s = 0.0
    for i in range(1, x.shape[0]):
        a = np.zeros(i)
        for j in range(i):
            a[j] = x[j] * x[i]
        b = np.zeros(a.shape[0])
        for j in range(a.shape[0]):
            b[j] = np.sin(a[j])
        s = s * 0.5 + np.sum(b * b)
    return s


def grown_then_sized_by_its_len(x):
    s = 0.0
    for i in range(1, x.shape[0]):
        a = np.zeros(i)
        for j in range(i):
            a[j] = x[j] * x[i]
        b = np.zeros(len(a))
        for j in range(len(a)):
            b[j] = np.sin(a[j])
        s = s * 0.5 + np.sum(b * b)
    return s


def test_an_array_sized_by_an_array_the_loop_resizes():
    # b = np.zeros(a.shape[0]) (or len(a)) was taken for an allocation of a fixed shape: its
    # backward sweep read an array of another iteration's length (a wrong gradient, or NaN)
    x = np.linspace(0.2, 1.2, 6)
    _check(grown_then_sized_by_it, (x,), (0,))
    _check(grown_then_sized_by_its_len, (x,), (0,))


# -- arrays an operation makes at a size the loop changes ----------------------------------

def constructors_summed(x):
    """np.arange, np.linspace, np.geomspace and np.vander at a length the step sets, in a
    loop that carries only a sum: each iteration is computed again in the backward sweep."""
    s = 0.0
    for i in range(1, 5):
        a = np.arange(i) * x[i]
        b = np.linspace(0.0, x[i], i + 1)
        c = np.geomspace(1.0, 1.0 + x[i] ** 2, i + 1)
        v = np.vander(x[:3], i + 1)
        s += np.sum(np.sin(a)) + np.sum(b * b) + np.sum(c) + np.sum(v * v)
    return s


def solves_summed(A, b):
    s = 0.0
    for m in range(1, 4):
        y = np.linalg.solve(A[:m, :m] + 3.0 * np.eye(m), b[:m])
        s += np.sum(y * y)
    return s


def test_arrays_made_at_a_size_the_loop_changes_in_a_loop_of_sums():
    x = np.cos(np.arange(10.0) * 1.3) + 0.05 * np.arange(10.0)
    _check(constructors_summed, (x,), (0,))
    rng = np.random.default_rng(7)
    _check(solves_summed, (rng.random((4, 4)), rng.random(4)), (0, 1))


def arange_in_a_recurrence(x):
    s = 0.0
    for i in range(1, 5):
        s = 0.7 * s + np.sum(np.sin(np.arange(i) * x[i]))
    return s


def linspace_in_a_recurrence(x):
    s = 0.0
    for i in range(1, 5):
        a = np.linspace(0.0, x[i], i + 1)
        s = 0.7 * s + np.sum(a * a)
    return s


def extracted_in_a_loop(x):
    s = 0.0
    for i in range(1, 5):
        a = np.extract(x > x[i], x)
        s += np.sum(a * a) * x[i]
    return s


def extracted_in_a_recurrence(x):
    s = 0.0
    for i in range(1, 5):
        a = np.extract(x > x[i], x)
        s = 0.5 * s + np.sum(a * a) * x[i]
    return s


def test_arrays_made_at_a_size_the_loop_changes_in_a_recurrence_are_refused():
    # the backward sweep read the last iteration's array for every iteration (np.arange(i):
    # a gradient of 3e13; np.linspace: 0.28 off; np.extract of a mask the loop fills: wrong
    # in a loop of sums too, its adjoint read the last iteration's mask)
    x = np.cos(np.arange(10.0) * 1.3) + 0.05 * np.arange(10.0)
    with pytest.raises(AdjitError, match=r"np.arange computed in a loop from values the loop "
                                         r"changes \('i'\).* iterations depend on each other"):
        adjit.grad(arange_in_a_recurrence)(x)
    with pytest.raises(AdjitError, match=r"np.linspace computed in a loop from values the "
                                         r"loop changes"):
        adjit.grad(linspace_in_a_recurrence)(x)
    with pytest.raises(AdjitError, match=r"np.extract computed in a loop from values the "
                                         r"loop changes"):
        adjit.grad(extracted_in_a_recurrence)(x)


def test_an_extract_of_a_mask_filled_in_a_loop_of_sums():
    # the mask (a bool array each iteration fills before reading it) is a buffer: the loop
    # is computed again iteration by iteration, each with its own mask (refused before; its
    # adjoint once read the last iteration's mask)
    x = np.cos(np.arange(10.0) * 1.3) + 0.05 * np.arange(10.0)
    _check(extracted_in_a_loop, (x,), (0,))


# -- index operands an array operation's adjoint reads, changed after it -------------------

def gathered_then_indices_changed(x):
    idx = np.array([1, 4, 4])
    a = np.take_along_axis(x, idx, 0)
    idx[0] = 7
    return np.sum(a * a * a) + x[idx[0]] ** 2


def gathered_by_indices_the_loop_refills(x):
    s = 0.0
    idx = np.zeros(3, dtype=np.int64)
    for i in range(1, 5):
        for j in range(3):
            idx[j] = (i * (j + 2)) % 10
        a = np.take_along_axis(x, idx, 0)
        s = 0.7 * s + np.sum(a * a * a)
    return s


def counted_then_indices_changed(x):
    idx = np.array([0, 2, 2, 1])
    b = np.bincount(idx, x[:4] * x[5], 3)
    idx[1] = 0
    return np.sum(b * b) + x[idx[1]]


def counted_by_indices_the_loop_refills(x):
    s = 0.0
    idx = np.zeros(4, dtype=np.int64)
    for i in range(1, 5):
        for j in range(4):
            idx[j] = (i * (j + 1)) % 3
        b = np.bincount(idx, x[:4] * x[i], 3)
        s = 0.5 * s + np.sum(b * b)
    return s


def test_indices_an_adjoint_reads_are_kept_where_they_change_afterwards():
    # np.take_along_axis's adjoint scatters through the indices, np.bincount's gathers
    # through them: both read the indices' later contents (0.30, 2.5 and 4.3 off), as only the
    # differentiable operands were kept where they change
    x = np.cos(np.arange(10.0) * 1.3) + 0.05 * np.arange(10.0)
    _check(gathered_then_indices_changed, (x,), (0,))
    _check(gathered_by_indices_the_loop_refills, (x,), (0,))
    _check(counted_then_indices_changed, (x,), (0,))
    # np.bincount's length is max(idx) + 1 (at least minlength): indices the loop fills may
    # change it, and the loop carries s (it was 0.036 off)
    with pytest.raises(AdjitError, match=r"np.bincount computed in a loop from values the "
                                         r"loop changes \('idx'\)"):
        adjit.grad(counted_by_indices_the_loop_refills)(x)


# -- arrays of a length the loop's values decide -------------------------------------------

@njit
def ramp(n):
    return np.arange(n) + 1.0


def ramps_summed(x):
    """np.arange in a helper called at a length the loop sets; the backward sweep reads the
    ramp whole (nothing of the iteration is recorded), so the loop is computed again."""
    s = 0.0
    for i in range(1, 5):
        w = ramp(i)
        s += np.sum(w * x[:i] ** 2)
    return s


def above_in_a_recurrence(x):
    s = 0.0
    for i in range(2, 6):
        idx = np.where(x > x[i])[0]
        s = 0.5 * s + np.sum(x[idx] ** 2)
    return s


def test_arrays_whose_length_the_loop_decides():
    x = np.cos(np.arange(10.0) * 1.3) + 0.05 * np.arange(10.0)
    _check(ramps_summed, (x,), (0,))
    # np.where(c) of one argument, kept as numba's call: its length depends on c, which the
    # loop fills, and such a call cannot run again (a zero gradient before)
    with pytest.raises(AdjitError, match=r"the array 'idx' computed in a loop .* whose shape "
                                         r"may change between iterations"):
        adjit.grad(above_in_a_recurrence)(x)


def _suffix_sums_while_true(x):
    b = x.copy()
    k = 0
    s = 0.0
    while True:
        t = b[k:] * 2.0
        b[k] = b[k] ** 2
        s += np.sum(t)
        k += 1
        if k >= 3:
            break
    return s


def _suffix_sums_for(x):
    b = x.copy()
    s = 0.0
    for k in range(3):
        t = b[k:] * 2.0
        b[k] = b[k] ** 2
        s += np.sum(t)
    return s


def test_a_while_loop_resizing_an_array_it_reads_only_inside_says_why():
    """The array is read only inside its loop: the refusal says what stops the backward
    sweep (a while loop's iterations are not computed again one by one), not that it is
    used after the loop; the same body in a for loop is differentiated."""
    x = np.array([0.3, 0.5, 0.7, 0.9])
    with pytest.raises(AdjitError, match=r"'t' is allocated in a loop with a shape that "
                       r"changes between iterations, and the backward sweep needs it at each "
                       r"iteration's shape: .*\(it is a while loop\)"):
        adjit.grad(_suffix_sums_while_true)(x)
    g = adjit.grad(_suffix_sums_for)(x)
    np.testing.assert_allclose(g, [2.0, 4.0, 6.0, 6.0], rtol=1e-15)
    np.testing.assert_allclose(g, fd_grad(njit(_suffix_sums_for), (x,), 0), rtol=1e-7)


# PyTransit's general models call `z_ip_v(t[lcids == ilc], ...)` per light curve; the helper
# leaves early with `return full(t.size, nan)` where its data does not cover the epoch. The
# copy after the helper's returns reads each return's array only where that return was
# taken: it was read as carried from one iteration to the next, and the loop refused.
@njit
def _projected(t, a, lim):
    if a >= lim[-1]:
        return np.full(t.size, np.nan)
    z = a * np.sin(t * 1.7)
    return z


def per_light_curve(a, t, lcids, lim):
    s = 0.0
    for ilc in range(2):
        tlc = t[lcids == ilc]           # 4 then 5 points
        z = _projected(tlc, a, lim)
        s += np.sum(z * z)
    return s


def test_a_helper_returning_early_in_a_loop_of_changing_shapes():
    t = np.linspace(-0.1, 0.1, 9)
    lcids = np.array([0, 0, 0, 0, 1, 1, 1, 1, 1])
    lim = np.array([0.0, 50.0])
    value, g = adjit.value_and_grad(per_light_curve)(8.0, t, lcids, lim)
    assert value == pytest.approx(njit(per_light_curve)(8.0, t, lcids, lim), rel=1e-14)
    assert g == pytest.approx(fd_grad(njit(per_light_curve), (8.0, t, lcids, lim), 0),
                              rel=1e-7)
    assert g == pytest.approx(2.0 * 8.0 * np.sum(np.sin(1.7 * t) ** 2), rel=1e-13)
    # the early return taken: NaN, as numba's
    value, g = adjit.value_and_grad(per_light_curve)(80.0, t, lcids, lim)
    assert np.isnan(value) and np.isnan(njit(per_light_curve)(80.0, t, lcids, lim))


@njit
def _two_arrays(t, a):
    if t.size < 3:
        return t * a, np.ones(t.size)
    return t * t * a, t + a


def per_group_tuple(a, t, lcids):
    # a helper returning a tuple of arrays from two returns, per group of changing size
    s = 0.0
    for ilc in range(3):
        u, v = _two_arrays(t[lcids == ilc], a)
        s += np.sum(u * v)
    return s


def test_a_helper_returning_tuples_of_arrays_in_a_loop_of_changing_shapes():
    t = np.linspace(-0.3, 0.4, 12)
    lcids = np.array([0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2])
    value, g = adjit.value_and_grad(per_group_tuple, (0, 1))(0.7, t, lcids)
    assert value == pytest.approx(njit(per_group_tuple)(0.7, t, lcids), rel=1e-14)
    for k in (0, 1):
        np.testing.assert_allclose(g[k], fd_grad(njit(per_group_tuple), (0.7, t, lcids), k),
                                   rtol=1e-6, atol=1e-9)


@njit
def _two_returns(t, a):
    if a < 0.0:
        return -a * t * t
    return np.exp(-a * t)


def masked_groups(a, t, lcids):
    # a mask per group (a bool array the loop fills before it reads it, hoisted out of the
    # loop): the iterations share nothing (it was refused: "iterations share the array m")
    out = np.zeros(t.shape[0])
    for ilc in range(3):
        m = lcids == ilc
        out[m] = _two_returns(t[m], a)
    return np.sum(out * out)


def test_a_mask_filled_in_each_iteration_is_not_shared():
    t = np.linspace(-0.3, 0.4, 12)
    lcids = np.array([0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2])
    for a in (0.7, -0.4):
        value, g = adjit.value_and_grad(masked_groups, (0, 1))(a, t, lcids)
        assert value == pytest.approx(njit(masked_groups)(a, t, lcids), rel=1e-14)
        for k in (0, 1):
            np.testing.assert_allclose(g[k], fd_grad(njit(masked_groups), (a, t, lcids), k),
                                       rtol=1e-6, atol=1e-9)


@njit
def _projected_by_branches(t, a, lim):
    # PyTransit's z_ip_v: an early return, an inner `if` choosing one of two arrays (a view
    # of one on one path), and the result updated in place before the last return
    if a >= lim[-1]:
        return np.full(t.size, np.nan)
    ma = t * 1.7
    if a < 0.01:
        ta = ma
    else:
        ta = np.zeros_like(ma)
        for j in range(len(t)):
            ta[j] = ma[j] * a
    z = a * np.sin(ta) + 1.0
    z *= np.sign(np.sin(ta))
    return z


def per_light_curve_branches(a, t, lcids, lim):
    s = 0.0
    for ilc in range(2):
        z = _projected_by_branches(t[lcids == ilc], a, lim)
        s += np.sum(z * z)
    return s


@pytest.mark.parametrize("a", [8.0, 0.005])
def test_a_helper_with_an_inner_join_and_early_return_in_a_loop_of_changing_shapes(a):
    t = np.linspace(-0.3, 0.4, 9)
    lcids = np.array([0, 0, 0, 0, 1, 1, 1, 1, 1])
    _check(per_light_curve_branches, (a, t, lcids, np.array([0.0, 50.0])), (0, 1))
