"""CUDA kernels that write in place at indices other than `cuda.grid(1)`, and racy kernels.

A race-free kernel's adjoint consumes the cotangent of every element the forward
overwrote, by the thread that wrote it, whatever index expression wrote it (red-black
Gauss-Seidel, two time levels in one array, offsets, reversal, grid-stride loops). A kernel
in which two threads may touch one element (one of them writing) without atomics is refused
with an AdjitError naming the kernel, the line and the race. Shadows are compared with
central finite differences of the kernel itself, run in the simulator.
"""
import math

import numpy as np
import pytest

cuda = pytest.importorskip("numba.cuda")

import adjit  # noqa: E402
import adjit.cuda  # noqa: E402
from adjit import AdjitError  # noqa: E402
from fd import weighted_output_fd  # noqa: E402

pytestmark = pytest.mark.cuda

THREADS = 8


def run_kernel(kernel, blocks, args):
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    kernel[blocks, THREADS](*args)
    return args


def objective(kernel, blocks, args, written, weights):
    out = run_kernel(kernel, blocks, args)
    return sum(np.sum(w * out[k]) for k, w in zip(written, weights))


def check_kernel(kernel, blocks, args, argnums, written, seed=0):
    """The adjoint kernel's input shadows against central differences of
    L = sum_k <w_k, written array k after the launch>, with respect to the argnums arrays'
    values before the launch."""
    rng = np.random.default_rng(seed)
    weights = [rng.normal(size=args[k].shape) for k in written]
    adj = adjit.cuda.adjoint_kernel(kernel, argnums=argnums)
    shadows = adj.shadows_for(*args)
    params = adj.params
    shadow_args = []
    for name in shadows:
        array = name[:-len("_bar")] if name.endswith("_bar") else name
        k = params.index(array)
        if k in written:
            shadow_args.append(weights[written.index(k)].copy())
        else:
            shadow_args.append(np.zeros_like(args[k]))
    primal = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    adj[blocks, THREADS](*primal, *shadow_args)
    for pos, k in enumerate(argnums):
        got = shadow_args[pos]
        fd = np.zeros_like(args[k])
        for idx in np.ndindex(args[k].shape):
            hi = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
            lo = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
            hi[k][idx] += 1e-6
            lo[k][idx] -= 1e-6
            fd[idx] = (objective(kernel, blocks, hi, written, weights) -
                       objective(kernel, blocks, lo, written, weights)) / 2e-6
        np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-7,
                                   err_msg=f"shadow of argument {params[k]}")
    return adj


@cuda.jit
def red_black(u, f, color):
    t = cuda.grid(1)
    i = 2 * t + 1 + color
    if i < u.shape[0] - 1:
        u[i] = 0.5 * (u[i - 1] + u[i + 1] + f[i] * math.sin(u[i]))


@cuda.jit
def two_levels(state, c, cur):
    i = cuda.grid(1)
    if i >= 1 and i < state.shape[1] - 1:
        state[1 - cur, i] = state[cur, i] + c[0] * (state[cur, i - 1] - 2.0 * state[cur, i] +
                                                    state[cur, i + 1])


@cuda.jit
def shifted(u, x):
    i = cuda.grid(1)
    if i < x.shape[0]:
        u[i + 1] = u[i + 1] * x[i] + math.tanh(x[i])


@cuda.jit
def reversed_write(u, x):
    i = cuda.grid(1)
    n = u.shape[0]
    if i < n:
        u[n - 1 - i] = u[n - 1 - i] * u[n - 1 - i] + x[i]


@cuda.jit
def grid_stride(u, x):
    for i in range(cuda.grid(1), u.shape[0], cuda.gridsize(1)):
        u[i] += x[i] * x[i]


@cuda.jit
def grid_stride_nonlinear(u, x):
    for i in range(cuda.grid(1), u.shape[0], cuda.gridsize(1)):
        u[i] += x[i] * u[i]


@cuda.jit
def overwrite_twice(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i] * 2.0
        out[i] = math.sin(out[i])


@cuda.jit
def multiply_in_place(u):
    i = cuda.grid(1)
    j = i
    if j < u.shape[0]:
        u[j] *= u[j] + 1.0


@cuda.jit
def row_loop(x, out, m):
    i = cuda.grid(1)
    if i < out.shape[0] // m:
        for k in range(m):
            out[i * m + k] = math.sin(x[i * m + k]) + 0.5 * out[i * m + k]


@cuda.jit
def stencil_read_only(x, out):
    i = cuda.grid(1)
    if i >= 1 and i < x.shape[0] - 1:
        out[i] = x[i - 1] * x[i] + x[i + 1]


R = np.random.default_rng(3)


@pytest.mark.parametrize("kernel, blocks, args, argnums, written", [
    (red_black, 2, (R.normal(size=21), R.normal(size=21), 0), (0, 1), [0]),
    (red_black, 2, (R.normal(size=21), R.normal(size=21), 1), (0, 1), [0]),
    (two_levels, 2, (R.normal(size=(2, 12)), np.array([0.2]), 0), (0, 1), [0]),
    (two_levels, 2, (R.normal(size=(2, 12)), np.array([0.2]), 1), (0, 1), [0]),
    (shifted, 2, (R.normal(size=13), R.normal(size=12)), (0, 1), [0]),
    (reversed_write, 2, (R.normal(size=11), R.normal(size=11)), (0, 1), [0]),
    (grid_stride, 1, (R.normal(size=29), R.normal(size=29)), (0, 1), [0]),
    (grid_stride_nonlinear, 1, (R.normal(size=29), R.normal(size=29)), (0,), [0]),
    (overwrite_twice, 2, (R.normal(size=10), np.zeros(10)), (0,), [1]),
    (multiply_in_place, 2, (R.normal(size=10),), (0,), [0]),
    (row_loop, 1, (R.normal(size=12), R.normal(size=12), 3), (0, 1), [1]),
    (stencil_read_only, 2, (R.normal(size=12), np.zeros(12)), (0,), [1]),
], ids=["red-black-0", "red-black-1", "two-levels-0", "two-levels-1", "offset", "reversed",
        "grid-stride", "grid-stride-u", "overwrite-twice", "multiply-in-place", "row-loop", "stencil"])
def test_in_place_writes_consume_their_cotangent(kernel, blocks, args, argnums, written):
    check_kernel(kernel, blocks, args, argnums, written)


def test_grid_stride_loop_that_needs_a_tape_is_refused():
    """u[i] += x[i] * u[i] needs every overwritten u[i] in the backward sweep, and a
    grid-stride loop's trip count is known only when the kernel runs: its iterations
    would be computed again, which needs u as it was."""
    with pytest.raises(AdjitError, match="written in the loop or after it"):
        adjit.cuda.adjoint_kernel(grid_stride_nonlinear, (0, 1)).source_for(np.ones(8),
                                                                             np.ones(8))


def test_shared_read_is_gathered():
    """x[i] of a stencil is read by threads i - 1, i and i + 1: thread i gathers the terms
    of x_bar[i] (its neighbours' adjoints computed again) with plain updates of its own
    element; a plain x_bar[i - 1] += ... would lose other threads' updates on a GPU. The
    terms add up in a local, and the element is updated once."""
    src = adjit.cuda.adjoint_kernel(stencil_read_only, 0).source_for(np.ones(8), np.zeros(8))
    lines = src.splitlines()
    # (elements no thread of the launch owns, beyond the grid, are still scattered)
    assert all(lines[k - 1].strip().startswith("if not 0 <= ")
               for k, line in enumerate(lines) if "cuda.atomic.add(x_bar" in line)
    assert "x_bar[i] += " not in src and "x_bar[_t" not in src
    assert src.count("_g1 += ") == 3                  # its own point's term and two neighbours'
    assert "x_bar[cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x] += _g1" in src
    assert "the neighbour at x-1" in src and "the neighbour at x+1" in src


@cuda.jit
def stencil_in_a_grid_stride_loop(x, out):
    for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        if i >= 1 and i < x.shape[0] - 1:
            out[i] = x[i - 1] * x[i] + x[i + 1]


def test_scatter_stays_atomic_where_the_gather_form_does_not_apply():
    """In a grid-stride loop a thread handles several points: the adjoint scatters into the
    neighbours with atomic adds."""
    x = np.random.default_rng(12).normal(size=20)
    w = np.random.default_rng(13).normal(size=20)
    out, x_bar = np.zeros(20), np.zeros(20)
    adj = adjit.cuda.adjoint_kernel(stencil_in_a_grid_stride_loop, 0)
    adj[2, 4](x, out, x_bar, w.copy())

    def run(v):
        o = np.zeros_like(v)
        o[1:-1] = v[:-2] * v[1:-1] + v[2:]
        return o
    h, g = 1e-6, np.zeros(20)
    for k in range(20):
        e = np.zeros(20)
        e[k] = h
        g[k] = (np.sum(w * run(x + e)) - np.sum(w * run(x - e))) / (2 * h)
    np.testing.assert_allclose(x_bar, g, rtol=1e-7, atol=1e-9)
    assert "cuda.atomic.add(x_bar" in adj.source and "the neighbour at" not in adj.source


@cuda.jit
def stored_then_overwritten(x, out, n):
    i = cuda.grid(1)
    if i >= 1 and i < n - 1:
        out[i] = x[i - 1] * x[i]
        out[i] = 2.0 * x[i + 1]


def test_an_output_stored_twice_keeps_the_scatter():
    """(kernel-fuzzer find) The first store is overwritten: its adjoint must see the shadow
    the second store consumed. The gather form leaves output shadows to its second kernel,
    so it does not apply; d/dx is the second store's alone."""
    x = np.random.default_rng(14).normal(size=10)
    w = np.random.default_rng(15).normal(size=10)
    out, x_bar = np.zeros(10), np.zeros(10)
    adj = adjit.cuda.adjoint_kernel(stored_then_overwritten, 0)
    adj[3, 4](x, out, 8, x_bar, w.copy())
    expect = np.zeros(10)
    expect[2:8] = 2.0 * w[1:7]      # out[i] = 2 x[i + 1] for 1 <= i < 7
    np.testing.assert_allclose(x_bar, expect, rtol=1e-12, atol=1e-14)
    assert "the neighbour at" not in adj.source


@cuda.jit
def racy_stencil(u, c):
    i = cuda.grid(1)
    if i >= 1 and i < u.shape[0] - 1:
        u[i] = u[i] + c[0] * (u[i - 1] - 2.0 * u[i] + u[i + 1])


@cuda.jit
def racy_sum(x, acc):
    i = cuda.grid(1)
    if i < x.shape[0]:
        acc[0] += x[i]


@cuda.jit
def racy_parity(x, acc):
    i = cuda.grid(1)
    if i < x.shape[0]:
        acc[i % 2] += x[i]


@cuda.jit
def racy_histogram(y, hist, bins):
    i = cuda.grid(1)
    if i < y.shape[0]:
        hist[bins[i]] += y[i]


@cuda.jit
def reads_its_accumulator(x, acc):
    i = cuda.grid(1)
    if i < x.shape[0]:
        cuda.atomic.add(acc, 0, x[i] * acc[0])


@cuda.jit
def permuted_write(x, out, perm):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[perm[i]] = x[i] * 2.0


@cuda.jit
def halves(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i // 2] = x[i]


@pytest.mark.parametrize("kernel, args, what", [
    (racy_stencil, (np.ones(8), np.ones(1)), "may read an element of 'u' that another thread"),
    (racy_sum, (np.ones(8), np.zeros(1)), "'acc'"),
    (racy_parity, (np.ones(8), np.zeros(2)), "'acc'"),
    (racy_histogram, (np.ones(8), np.zeros(3), np.zeros(8, np.int64)), "'hist'"),
    (reads_its_accumulator, (np.ones(8), np.zeros(1)), "adds to atomically"),
    (permuted_write, (np.ones(8), np.zeros(8), np.arange(8)), "two threads may write"),
    (halves, (np.ones(8), np.zeros(4)), "two threads may write"),
], ids=["in-place-stencil", "acc0", "parity", "histogram", "read-accumulator", "permutation",
        "halves"])
def test_racy_kernels_are_refused(kernel, args, what):
    with pytest.raises(AdjitError) as info:
        adjit.cuda.adjoint_kernel(kernel, 0).source_for(*args)
    msg = str(info.value)
    assert f"a race in kernel '{kernel.py_func.__name__}'" in msg and what in msg
    assert "test_cuda_ownership.py, line" in msg and "cuda.atomic.add" in msg


def test_atomic_histogram_is_accepted():
    @cuda.jit
    def histogram(y, hist, bins):
        i = cuda.grid(1)
        if i < y.shape[0]:
            cuda.atomic.add(hist, bins[i], y[i] * y[i])
    y = R.normal(size=16)
    bins = R.integers(0, 3, size=16)
    check_kernel(histogram, 2, (y, np.zeros(3), bins), (0,), [1])


@cuda.jit
def reads_its_transpose(u, out):
    i, j = cuda.grid(2)
    n = u.shape[0]
    if i > 0 and i < n and j < n:
        out[i, j] = u[i, j] * u[j, i] + u[i - 1, j]


def reads_its_transpose_numpy(u):
    out = np.zeros_like(u)
    out[1:, :] = u[1:, :] * u.T[1:, :] + u[:-1, :]
    return out


def test_a_transposed_read_keeps_the_scatter():
    """Thread (i, j) reads u[j, i], thread (j, i)'s own element: its adjoint term is an
    atomic add there, not a plain update of an element another thread updates too (the
    gather form would treat both reads as the thread's own and race on a GPU)."""
    u = np.random.default_rng(5).random((6, 6))
    w = np.random.default_rng(6).normal(size=u.shape)
    out, u_bar = np.zeros_like(u), np.zeros_like(u)
    adj = adjit.cuda.adjoint_kernel(reads_its_transpose, 0)
    adj[(2, 2), (4, 4)](u, out, u_bar, w.copy())
    np.testing.assert_allclose(out, reads_its_transpose_numpy(u), rtol=1e-14)
    np.testing.assert_allclose(u_bar, weighted_output_fd(reads_its_transpose_numpy, [u], 0, w),
                               rtol=1e-6, atol=1e-8)
    src = adj.source_for(u, out)
    assert "the neighbour at" not in src and "cuda.atomic.add(u_bar, (j, i)" in src
