"""CUDA kernels with shared memory: tiles, barriers, block reductions, tiled products.

Written as numba.cuda users write them (`cuda.shared.array`, `cuda.syncthreads()`, a tree
reduction over `s = cuda.blockDim.x // 2`, a tiled matrix product over a run-time number of
tiles). The adjoint kernel mirrors the forward: shadow tiles in shared memory, the barriers
reversed. Each adjoint is checked against central finite differences of a NumPy
re-implementation of the kernel (and the analytic gradient where it is short), never
against adjit. In CI these run in numba's CUDA simulator; on a GPU unchanged with
NUMBA_ENABLE_CUDASIM=0.
"""
import math

import numpy as np
import pytest

cuda = pytest.importorskip("numba.cuda")

from numba import float32, float64  # noqa: E402

import adjit  # noqa: E402
import adjit.cuda  # noqa: E402
from adjit import AdjitError  # noqa: E402
from fd import weighted_output_fd as fd  # noqa: E402

pytestmark = pytest.mark.cuda

TPB = 16


# a 1-D stencil through a tile with halo cells

@cuda.jit
def tiled_stencil(x, out):
    tile = cuda.shared.array(TPB + 2, float64)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    n = x.shape[0]
    if i < n:
        tile[t + 1] = x[i]
        if t == 0:
            tile[0] = x[i - 1] if i > 0 else 0.0
        if t == TPB - 1 or i == n - 1:
            tile[t + 2] = x[i + 1] if i + 1 < n else 0.0
    cuda.syncthreads()
    if i < n:
        out[i] = math.sin(tile[t]) * tile[t + 1] + tile[t + 2] ** 2


def tiled_stencil_numpy(x):
    p = np.concatenate([[0.0], x, [0.0]])
    return np.sin(p[:-2]) * p[1:-1] + p[2:] ** 2


def test_tiled_stencil_with_halo():
    n = 45
    x = np.random.default_rng(0).normal(size=n)
    w = np.random.default_rng(1).normal(size=n)
    out, x_bar = np.zeros(n), np.zeros(n)
    adj = adjit.cuda.adjoint_kernel(tiled_stencil, argnums=0)
    adj[(n + TPB - 1) // TPB, TPB](x, out, x_bar, w.copy())
    np.testing.assert_allclose(out, tiled_stencil_numpy(x), rtol=1e-14)
    np.testing.assert_allclose(x_bar, fd(tiled_stencil_numpy, [x], 0, w), rtol=1e-7,
                               atol=1e-9)
    src = adj.source
    assert "tile_bar = cuda.shared.array(18, numba.float64)" in src
    # every thread reads three cells of the tile: their adjoints add atomically
    assert "cuda.atomic.add(tile_bar, " in src
    assert src.count("cuda.syncthreads()") >= 2


# a block's tree reduction, as in numba's documentation

@cuda.jit
def block_sums(x, p, out):
    tile = cuda.shared.array(64, float64)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    if i < x.shape[0]:
        tile[t] = math.exp(p[0] * x[i]) * x[i]
    else:
        tile[t] = 0.0
    cuda.syncthreads()
    s = cuda.blockDim.x // 2
    while s > 0:
        if t < s:
            tile[t] += tile[t + s]
        cuda.syncthreads()
        s //= 2
    if t == 0:
        out[cuda.blockIdx.x] = tile[0]


def block_sums_numpy(x, p, threads):
    y = np.exp(p[0] * x) * x
    return np.array([y[b:b + threads].sum() for b in range(0, x.size, threads)])


@pytest.mark.parametrize("threads", [8, 32, 64])
def test_block_tree_reduction(threads):
    n = 150
    x = np.random.default_rng(2).normal(size=n) * 0.5
    p = np.array([0.7])
    blocks = (n + threads - 1) // threads
    w = np.random.default_rng(3).normal(size=blocks)
    out, x_bar, p_bar = np.zeros(blocks), np.zeros(n), np.zeros(1)
    adj = adjit.cuda.adjoint_kernel(block_sums, argnums=(0, 1))
    adj[blocks, threads](x, p, out, x_bar, p_bar, w.copy())
    run = lambda a, b: block_sums_numpy(a, b, threads)      # noqa: E731
    np.testing.assert_allclose(out, run(x, p), rtol=1e-13)
    wx = w[np.arange(n) // threads]
    np.testing.assert_allclose(x_bar, wx * np.exp(p[0] * x) * (1 + p[0] * x), rtol=1e-12)
    np.testing.assert_allclose(p_bar, fd(run, [x, p], 1, w), rtol=1e-7)


# a block-wide softmax: the reduction's result read by every thread of the block

@cuda.jit
def block_softmax(x, out):
    tile = cuda.shared.array(32, float64)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    e = 0.0
    if i < x.shape[0]:
        e = math.exp(x[i])
    tile[t] = e
    cuda.syncthreads()
    s = 16
    while s > 0:
        if t < s:
            tile[t] += tile[t + s]
        cuda.syncthreads()
        s //= 2
    if i < x.shape[0]:
        out[i] = e / tile[0]


def block_softmax_numpy(x):
    out = np.empty_like(x)
    for b in range(0, x.size, 32):
        e = np.exp(x[b:b + 32])
        out[b:b + 32] = e / e.sum()
    return out


def test_block_softmax_reads_the_reduction_in_every_thread():
    n = 70
    x = np.random.default_rng(4).normal(size=n)
    w = np.random.default_rng(5).normal(size=n)
    out, x_bar = np.zeros(n), np.zeros(n)
    adj = adjit.cuda.adjoint_kernel(block_softmax, argnums=0)
    adj[(n + 31) // 32, 32](x, out, x_bar, w.copy())
    np.testing.assert_allclose(out, block_softmax_numpy(x), rtol=1e-13)
    np.testing.assert_allclose(x_bar, fd(block_softmax_numpy, [x], 0, w), rtol=1e-7,
                               atol=1e-10)


# numba's tiled matrix product: a run-time number of tiles, each loaded, used, released

TILE = 4


@cuda.jit
def tiled_matmul(A, B, C):
    sA = cuda.shared.array(shape=(TILE, TILE), dtype=float64)
    sB = cuda.shared.array(shape=(TILE, TILE), dtype=float64)
    x, y = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    bpg = cuda.gridDim.x
    tmp = 0.0
    for i in range(bpg):
        sA[tx, ty] = 0.0
        sB[tx, ty] = 0.0
        if x < A.shape[0] and (ty + i * TILE) < A.shape[1]:
            sA[tx, ty] = A[x, ty + i * TILE]
        if y < B.shape[1] and (tx + i * TILE) < B.shape[0]:
            sB[tx, ty] = B[tx + i * TILE, y]
        cuda.syncthreads()
        for j in range(TILE):
            tmp += sA[tx, j] * sB[j, ty]
        cuda.syncthreads()
    if x < C.shape[0] and y < C.shape[1]:
        C[x, y] = math.tanh(tmp)


@pytest.mark.parametrize("n", [4, 10])
def test_tiled_matrix_product(n):
    rng = np.random.default_rng(6)
    A, B = rng.normal(size=(n, n)) * 0.4, rng.normal(size=(n, n)) * 0.4
    W = rng.normal(size=(n, n))
    C, A_bar, B_bar = np.zeros((n, n)), np.zeros((n, n)), np.zeros((n, n))
    adj = adjit.cuda.adjoint_kernel(tiled_matmul, argnums=(0, 1))
    g = (n + TILE - 1) // TILE
    adj[(g, g), (TILE, TILE)](A, B, C, A_bar, B_bar, W.copy())
    np.testing.assert_allclose(C, np.tanh(A @ B), rtol=1e-13)
    G = W * (1 - np.tanh(A @ B) ** 2)
    np.testing.assert_allclose(A_bar, G @ B.T, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(B_bar, A.T @ G, rtol=1e-12, atol=1e-14)
    if n == 4:
        run = lambda a, b: np.tanh(a @ b)       # noqa: E731
        np.testing.assert_allclose(A_bar, fd(run, [A, B], 0, W), rtol=1e-7, atol=1e-10)
    src = adj.source
    assert "sA_bar = cuda.shared.array((4, 4), numba.float64)" in src
    assert "each iteration's values computed again" in src


# a tile each thread touches only at its own cell: plain adjoint updates

@cuda.jit
def own_cells(x, out):
    tile = cuda.shared.array(TPB, float64)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    if i < x.shape[0]:
        tile[t] = x[i] * x[i]
        cuda.syncthreads()
        out[i] = math.sqrt(tile[t] + 1.0)


def test_a_threads_own_cell_needs_no_atomic():
    x = np.linspace(-2, 2, 16)
    w = np.random.default_rng(7).normal(size=16)
    out, x_bar = np.zeros(16), np.zeros(16)
    adj = adjit.cuda.adjoint_kernel(own_cells, argnums=0)
    adj[1, TPB](x, out, x_bar, w.copy())
    np.testing.assert_allclose(x_bar, w * x / np.sqrt(x * x + 1.0), rtol=1e-13)
    assert "cuda.atomic.add(tile_bar" not in adj.source


# refusals

@cuda.jit
def shared_in_a_loop(x, out):
    i = cuda.grid(1)
    for k in range(2):
        tile = cuda.shared.array(8, float64)
        tile[cuda.threadIdx.x] = x[i]
    out[i] = x[i]


@cuda.jit
def shared_of_a_run_time_size(x, n, out):
    tile = cuda.shared.array(n, float64)
    i = cuda.grid(1)
    tile[cuda.threadIdx.x] = x[i]
    out[i] = tile[cuda.threadIdx.x]


def test_shared_arrays_outside_the_supported_shapes_are_refused():
    with pytest.raises(AdjitError, match="cuda.shared.array inside a loop"):
        adjit.cuda.adjoint_kernel(shared_in_a_loop, argnums=0).source_for(
            np.ones(8), np.zeros(8))
    with pytest.raises(AdjitError, match="cuda.shared.array with other than a constant shape"):
        adjit.cuda.adjoint_kernel(shared_of_a_run_time_size, argnums=0).source_for(
            np.ones(8), 8, np.zeros(8))


@cuda.jit
def returns_before_a_barrier(x, out):
    tile = cuda.shared.array(TPB, float64)
    i = cuda.grid(1)
    if i >= x.shape[0]:
        return
    tile[cuda.threadIdx.x] = x[i]
    cuda.syncthreads()
    out[i] = tile[cuda.threadIdx.x] * 2.0


def device_with_a_tile(x):
    tile = cuda.shared.array(4, float64)
    tile[0] = x
    cuda.syncthreads()
    return tile[0] * x


def test_barriers_every_thread_may_not_reach_are_refused():
    with pytest.raises(AdjitError, match="a `return` in a kernel that calls cuda.syncthreads"):
        adjit.cuda.adjoint_kernel(returns_before_a_barrier, argnums=0).source_for(
            np.ones(8), np.zeros(8))
    with pytest.raises(AdjitError, match="in a device function's gradient"):
        adjit.grad(device_with_a_tile, target="cuda").source_for(1.0)


# float32 tiles for float32 data

@cuda.jit
def tiled_stencil32(x, out):
    tile = cuda.shared.array(TPB + 2, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    n = x.shape[0]
    if i < n:
        tile[t + 1] = x[i]
        if t == 0:
            tile[0] = x[i - 1] if i > 0 else 0.0
        if t == TPB - 1 or i == n - 1:
            tile[t + 2] = x[i + 1] if i + 1 < n else 0.0
    cuda.syncthreads()
    if i < n:
        out[i] = math.sin(tile[t]) * tile[t + 1] + tile[t + 2] * tile[t + 2]


def test_float32_tiles():
    n = 40
    x = np.random.default_rng(8).normal(size=n).astype(np.float32)
    w = np.random.default_rng(9).normal(size=n).astype(np.float32)
    out, x_bar = np.zeros(n, np.float32), np.zeros(n, np.float32)
    adj = adjit.cuda.adjoint_kernel(tiled_stencil32, argnums=0)
    adj[(n + TPB - 1) // TPB, TPB](x, out, x_bar, w.copy())
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    np.testing.assert_allclose(out, tiled_stencil_numpy(x64), rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(x_bar, fd(tiled_stencil_numpy, [x64], 0, w64), rtol=1e-4,
                               atol=1e-5)
    assert "cuda.shared.array(18, numba.float32)" in adj.source


# numba's simulator allocates a shared array when the first thread of a block reaches it; its
# lookup had no lock, so a thread switch in between gave two threads two arrays (a block sum
# then lost terms: the time-loop tests' parameter adjoints came out wrong under load).
# Importing adjit.cuda makes that allocation atomic under the simulator.

def test_simulated_shared_arrays_are_one_array_per_block_under_thread_switches():
    import threading
    import time

    from numba import config
    if not config.ENABLE_CUDASIM:
        pytest.skip("runs in numba's CUDA simulator only")
    from numba.cuda.simulator.kernelapi import FakeCUDAShared

    class SlowLookup(dict):            # a thread switch between the lookup and the store
        def get(self, key, default=None):
            found = super().get(key, default)
            time.sleep(0.01)
            return found

    shared = FakeCUDAShared(0)
    shared._allocations = SlowLookup()
    got = []
    start = threading.Barrier(8)

    def thread():
        start.wait()
        got.append(shared.array(4, float64))

    threads = [threading.Thread(target=thread) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 8 and all(a is got[0] for a in got)
    assert shared.array(3, float64) is not got[0]            # another line: another array
