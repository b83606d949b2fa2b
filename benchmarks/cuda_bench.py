"""CUDA benchmark: forward kernel, adjoint kernel, their ratio, a hand-written adjoint, JAX's
gradient and adjit's CPU gradient of the same work, for an elementwise map (10^7 elements), a
1-D stencil (10^7), a 2-D heat stencil on a 2-D grid (10^7 cells), a counted while loop per
thread (10^7, its values recorded in a local array), Lennard-Jones energies with a cutoff
(10^4 atoms, thread per atom), a block tree reduction in shared memory (10^7), Newton's
iteration to a tolerance in a while loop per thread (10^7: a run-time number of iterations,
replayed in the backward sweep) and numba's tiled matrix product in shared memory (1024^2,
tanh of the product).

Needs a GPU (numba-cuda and a driver); without one it says so and exits 0. Kernel times are
medians of repeated launches on device arrays, synchronized, after a warm-up launch (which
compiles). The adjoint kernel also recomputes the primal (Enzyme's convention), so its time
includes a forward. The CPU column is adjit.grad of the same math as a plain function,
compiled by numba, single-threaded. The hand-written column is a careful person's adjoint
kernel of the map, the stencil, the block reduction and the tiled product (below): it
recomputes and writes the primal as adjit's does, sums the parameter's adjoint over the block
in shared memory, for the stencil gathers each x_bar[i] from its neighbours' cotangents (one
plain store per point, no atomics; it leaves out_bar as it is, where adjit's zeroes it), and
for the product adds each block's parts of G B^T and A^T G (G = C_bar (1 - C**2), formed in
shared memory) with one atomic per element and block.

The JAX column is jax.jit(jax.grad(loss)) on JAX's GPU backend in float64 (jax_enable_x64),
where loss is the row's math written vectorized with jax.numpy: the sum of the kernel's
outputs (the bench's output cotangents are ones), differentiated with respect to the row's
argnums (slices for the stencils, jax.lax.fori_loop for the counted loop, a dense n x n
pair-distance matrix with the cutoff as a mask for Lennard-Jones, 40 Newton steps for the
cube root, jnp.tanh(A @ B) for the product). Its time is the median of
calls on device arrays with block_until_ready, after a warm-up call that compiles; its gradient
is checked against the adjit adjoint kernel's in the same run (|adjit - jax| <= 1e-9 |jax| +
1e-12 max|jax|, else the cell says MISMATCH and a line below the table gives the error).
adjit/JAX is the adjoint kernel's time over JAX's. Without jax the column is skipped ("JAX: not
installed"), as it is when jax has no GPU device ("JAX: no GPU backend"); the smoke run (SMOKE)
then runs JAX on the CPU at its tiny sizes, just to exercise the code ("JAX cpu ms").

A row that raises prints its name and the error and the other rows still run. Run:
.venv/bin/python benchmarks/cuda_bench.py
"""
import math
import os
import sys
import time

import numpy as np

# numba-cuda 0.2x registers an overload of np.row_stack, which numpy 2.5 removed: with both
# (the GPU machines' image), compiling any kernel fails inside numba-cuda. As the tests do
# (tests/conftest.py), give numpy back the alias before numba.cuda is imported.
if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack

from numba import cuda, float64  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))


SMOKE = os.environ.get("ADJIT_CUDA_BENCH_SMOKE") == "1"
"""Tiny sizes, one repeat, also in the simulator: checks the script itself (tests/test_cuda.py)."""


def median(fn, repeats=9):
    repeats = 1 if SMOKE else repeats
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


JAX_RTOL = 1e-9
"""Relative tolerance of the JAX gradient against the adjit adjoint kernel's (float64)."""


def jax_setup():
    """(jax, device, label): JAX and the device its column runs on, label "gpu" or "cpu"
    (the smoke test only); or (None, None, why) when the column is skipped."""
    # JAX takes 75% of the GPU's memory at its first use unless told not to; numba needs some
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    try:
        import jax
    except ImportError:
        return None, None, "JAX: not installed"
    except Exception as e:                      # a broken install: skip the column, say why
        return None, None, f"JAX: not installed (importing it failed: {type(e).__name__}: {e})"
    jax.config.update("jax_enable_x64", True)
    try:
        gpus = jax.devices("gpu")
    except Exception:                           # no GPU plugin, or it found no device
        gpus = []
    if gpus:
        return jax, gpus[0], "gpu"
    if SMOKE:
        return jax, jax.devices("cpu")[0], "cpu"
    return None, None, "JAX: no GPU backend"


def jax_grad_error(mine, theirs):
    """None when every adjit gradient matches JAX's, else the worst max|diff| / max|jax|."""
    worst, ok = 0.0, True
    for m, t in zip(mine, theirs):
        m, t = np.asarray(m, dtype=np.float64), np.asarray(t, dtype=np.float64)
        if m.shape != t.shape:
            return float("inf")
        scale = float(np.max(np.abs(t))) if t.size else 0.0
        diff = np.abs(m - t)
        ok = ok and bool(np.all(diff <= JAX_RTOL * np.abs(t) + 1e-12 * max(scale, 1.0)))
        worst = max(worst, float(np.max(diff)) / max(scale, 1e-300) if t.size else 0.0)
    return None if ok else worst


def main():
    from numba import config, cuda
    if not SMOKE and (config.ENABLE_CUDASIM or not cuda.is_available()):
        print("note: no CUDA GPU available (or NUMBA_ENABLE_CUDASIM=1): the CUDA benchmark "
              "needs one; the CUDA tests run in the simulator (make test).")
        return 0
    import adjit
    import adjit.cuda
    import test_cuda as T

    if config.ENABLE_CUDASIM:
        print("device: the CUDA simulator (smoke test: tiny sizes, times mean nothing)")
    else:
        dev = cuda.get_current_device()
        print(f"device: {dev.name.decode() if isinstance(dev.name, bytes) else dev.name}, "
              f"compute capability {dev.compute_capability}")
    jax, jdev, jlabel = jax_setup()
    if jax is None:
        print(jlabel)
    else:
        print(f"JAX: {jax.__version__} on {jdev.platform} ({getattr(jdev, 'device_kind', jdev)})"
              + (", smoke test only: JAX's CPU backend (no GPU backend)" if jlabel == "cpu"
                 else ""), flush=True)
    threads = THREADS
    rows = []
    notes = []

    def run(name, kernel, argnums, host_args, n_threads, cpu_fn, cpu_args, cpu_argnums,
            hand=None, launch=None, jax_loss=None):
        d_args = [cuda.to_device(a) for a in host_args]
        adj = adjit.cuda.adjoint_kernel(kernel, argnums)
        n_diff = len(adj.argnums)
        shadows = adj.shadows_for(*host_args)
        params = adj.params
        d_shadows = [cuda.to_device(np.ones_like(host_args[params.index(s[:-4])]))
                     for s in shadows]
        blocks, threads_ = launch or ((n_threads + threads - 1) // threads, threads)

        def fwd():
            kernel[blocks, threads_](*d_args)
            cuda.synchronize()

        def bwd():
            adj[blocks, threads_](*d_args, *d_shadows)
            cuda.synchronize()

        def by_hand():
            hand[blocks, threads_](*d_args, *d_shadows)
            cuda.synchronize()

        def gradient(k):
            """The argnums' adjoints from kernel k: zero shadows, cotangents of ones."""
            fresh = [cuda.to_device(np.zeros_like(host_args[params.index(s[:-4])]))
                     for s in shadows[:n_diff]]
            ones = [cuda.to_device(np.ones_like(host_args[params.index(s[:-4])]))
                    for s in shadows[n_diff:]]
            k[blocks, threads_](*d_args, *fresh, *ones)
            cuda.synchronize()
            return [f.copy_to_host() for f in fresh]

        tf, tb = median(fwd), median(bwd)
        th = median(by_hand) if hand is not None else float("nan")
        mine = gradient(adj) if hand is not None or (jax is not None and jax_loss) else None
        if hand is not None:        # the hand-written adjoint computes what adjit's does
            for m, theirs in zip(mine, gradient(hand)):
                np.testing.assert_allclose(m, theirs, rtol=1e-9, atol=1e-12)
        tj, jax_cell = float("nan"), "-"
        if jax is not None and jax_loss is not None:
            try:
                jargs = [jax.device_put(host_args[k], jdev) for k in adj.argnums]
                g_jax = jax.jit(jax.grad(jax_loss, argnums=tuple(range(n_diff))))

                def by_jax():
                    jax.block_until_ready(g_jax(*jargs))

                by_jax()                        # compiles: kept out of the timing
                tj = median(by_jax)
                err = jax_grad_error(mine, [np.asarray(r) for r in g_jax(*jargs)])
                jax_cell = f"{tj * 1e3:.3f}"
                if err is not None:
                    jax_cell += " MISMATCH"
                    notes.append(f"JAX gradient MISMATCH in {name}: max |adjit - jax| / "
                                 f"max |jax| = {err:.3e} (tolerance rtol {JAX_RTOL:g})")
            except Exception as e:              # JAX alone failed: keep the row's other times
                jax_cell, tj = "error", float("nan")
                notes.append(f"JAX failed in {name}: {type(e).__name__}: {e}")
                print(notes[-1], flush=True)
        g = adjit.grad(cpu_fn, argnums=cpu_argnums)
        tc = median(lambda: g(*cpu_args), repeats=3)
        rows.append((name, tf * 1e3, tb * 1e3, th * 1e3, jax_cell, tb / tj, tc * 1e3))

    def row(name, *args, **kwargs):
        try:
            run(name, *args, **kwargs)
        except Exception as e:                  # one failing row does not stop the others
            msg = f"{type(e).__name__}: {e}".replace("\n", " ")
            print(f"row failed: {name}: {msg}", flush=True)
            rows.append((name, msg))

    jl = jax_losses() if jax is not None else {}
    n = 64 if SMOKE else 10_000_000
    x = np.linspace(0.0, 1.0, n)
    row("elementwise map (1e7)", T.elementwise, (0, 1), (x, np.array([0.7]), np.zeros(n)), n,
        _elementwise_cpu, (x, 0.7), (0, 1), map_hand, jax_loss=jl.get("map"))
    row("1-D stencil (1e7)", T.stencil, (0, 1), (x, np.array([0.3]), np.zeros(n)), n,
        _stencil_cpu, (x, 0.3), (0, 1), stencil_hand, jax_loss=jl.get("stencil"))
    side = 8 if SMOKE else 3162
    u = np.random.default_rng(0).random((side, side))
    tile = (16, 16)
    row("2-D heat stencil (3162^2, 2-D grid)", T.heat_2d, (0, 1),
        (u, np.array([0.15]), np.zeros_like(u)), None, _heat_2d_cpu, (u, 0.15), (0, 1),
        launch=(((side + 15) // 16, (side + 15) // 16), tile), jax_loss=jl.get("heat_2d"))
    a = np.linspace(0.2, 1.4, n)
    row("counted while loop, 6 steps (1e7)", T.counted_while_kernel, 0, (a, np.zeros(n)), n,
        _counted_while_cpu, (a,), 0, jax_loss=jl.get("counted_while"))
    pos = T._lattice(27 if SMOKE else 10_000, spacing=1.12)
    row("Lennard-Jones, cutoff 2.5 (1e4 atoms)", T.lj_energies, 0,
        (pos, np.zeros(pos.shape[0])), pos.shape[0], T.lj_total, (pos,), 0,
        jax_loss=jl.get("lj"))
    row("shared-memory block reduction (1e7)", block_reduce, (0, 1),
        (x, np.array([0.7]), np.zeros((n + threads - 1) // threads)), n,
        _block_reduce_cpu, (x, 0.7), (0, 1), block_reduce_hand,
        jax_loss=jl.get("block_reduce"))
    b = np.linspace(0.5, 30.0, n)
    row("Newton to a tolerance, while loop (1e7)", cube_root, 0, (b, np.zeros(n)), n,
        _cube_root_cpu, (b,), 0, jax_loss=jl.get("cube_root"))
    m = 32 if SMOKE else 1024
    rng = np.random.default_rng(1)
    A, B = rng.normal(size=(m, m)) / math.sqrt(m), rng.normal(size=(m, m)) / math.sqrt(m)
    g = (m + TILE - 1) // TILE
    row(f"tiled matrix product, shared memory ({m}^2)", tiled_matmul, (0, 1),
        (A, B, np.zeros((m, m))), None, _matmul_cpu, (A, B), (0, 1),
        tiled_matmul_hand, launch=((g, g), (TILE, TILE)), jax_loss=jl.get("matmul"))
    jax_head = "JAX cpu ms" if jlabel == "cpu" else "JAX ms"
    widths = (38, 10, 10, 7, 10, 10, 18, 9, 17, 15)
    print(f"| {'case':38} | {'forward ms':>10} | {'adjoint ms':>10} | {'adj/fwd':>7} | "
          f"{'by hand ms':>10} | {'adjit/hand':>10} | {jax_head:>18} | {'adjit/JAX':>9} | "
          f"{'CPU adjit grad ms':>17} | {'CPU/GPU adjoint':>15} |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        if len(r) == 2:
            print(f"| {r[0]:38} | failed: {r[1]}")
            continue
        name, tf, tb, th, jax_cell, vs_jax, tc = r
        hand_cells = f"{th:10.3f} | {tb / th:10.2f}" if th == th else f"{'-':>10} | {'-':>10}"
        vs_jax_cell = f"{vs_jax:9.2f}" if vs_jax == vs_jax else f"{'-':>9}"
        print(f"| {name:38} | {tf:10.3f} | {tb:10.3f} | {tb / tf:7.2f} | {hand_cells} | "
              f"{jax_cell:>18} | {vs_jax_cell} | {tc:17.1f} | {tc / tb:15.1f} |")
    for note in notes:
        print(note)
    print("Each adjoint kernel also computes the forward; the hand-written ones compute what "
          "adjit's do, and their gradients equal adjit's (checked above). docs/cuda.md "
          "discusses each row.")
    return 0


def jax_losses():
    """Each row's loss for JAX: the sum of the kernel's outputs (cotangents of ones) as a
    function of the row's argnums arrays, vectorized with jax.numpy."""
    import jax
    import jax.numpy as jnp

    def map_loss(x, p):                       # out[i] = exp(-p x[i]) x[i]
        return jnp.sum(jnp.exp(-p[0] * x) * x)

    def stencil_loss(x, a):                   # out[i], 0 < i < n - 1; the ends stay 0
        xm, xc, xp = x[:-2], x[1:-1], x[2:]
        return jnp.sum(a[0] * xm * xp + jnp.sin(xc) - 2.0 * xc * xc)

    def heat_2d_loss(u, alpha):               # out = u on the border, u + alpha lap inside
        lap = (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]
               - 4.0 * u[1:-1, 1:-1])
        return jnp.sum(u) + jnp.sum(alpha[0] * lap)

    def counted_while_loss(a):                # six steps of x *= sin(x) + 1.5, out = 6 x
        x = jax.lax.fori_loop(0, 6, lambda k, x: x * (jnp.sin(x) + 1.5), a)
        return jnp.sum(x * 6.0)

    def lj_loss(pos):                         # every ordered pair i != j with r^2 < 6.25
        n = pos.shape[0]
        d = [pos[:, c][:, None] - pos[:, c][None, :] for c in range(3)]
        r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2]
        idx = jnp.arange(n)
        inside = (r2 < 6.25) & (idx[:, None] != idx[None, :])
        r2 = jnp.where(inside, r2, 1.0)       # no 1/0 on the diagonal: no NaN in the gradient
        inv6 = 1.0 / (r2 * r2 * r2)
        return jnp.sum(jnp.where(inside, 2.0 * (inv6 * inv6 - inv6), 0.0))

    def block_reduce_loss(x, p):              # the block sums of exp(p x) x, all of them
        return jnp.sum(jnp.exp(p[0] * x) * x)

    def cube_root_loss(a):                    # Newton's iteration for a^(1/3), converged
        x = jax.lax.fori_loop(0, 40, lambda k, x: x - (x * x * x - a) / (3.0 * x * x),
                              1.0 + a / 3.0)
        return jnp.sum(x)

    def matmul_loss(A, B):
        return jnp.sum(jnp.tanh(A @ B))

    return {"map": map_loss, "stencil": stencil_loss, "heat_2d": heat_2d_loss,
            "counted_while": counted_while_loss, "lj": lj_loss,
            "block_reduce": block_reduce_loss, "cube_root": cube_root_loss,
            "matmul": matmul_loss}


THREADS = 256


@cuda.jit(device=True)
def _tree_sum(tile, t):
    """The block's values in `tile` summed into tile[0], a tree halving the stride (every
    thread of the block calls it, thread t with its value in tile[t])."""
    cuda.syncthreads()
    s = cuda.blockDim.x // 2
    while s > 0:
        if t < s:
            tile[t] += tile[t + s]
        cuda.syncthreads()
        s //= 2


@cuda.jit(device=True)
def _block_add(acc, target):
    red = cuda.shared.array(THREADS, float64)
    t = cuda.threadIdx.x
    red[t] = acc
    _tree_sum(red, t)
    if t == 0:
        cuda.atomic.add(target, 0, red[0])


# Hand-written adjoint kernels of tests/test_cuda.py's elementwise map and stencil, with
# adjit's calling convention (primal arguments, then x_bar, p_bar, out_bar)
@cuda.jit
def map_hand(x, p, out, x_bar, p_bar, out_bar):
    i = cuda.grid(1)
    acc = 0.0
    if i < x.shape[0]:
        xi = x[i]
        e = math.exp(-p[0] * xi)
        out[i] = e * xi
        g = out_bar[i]
        out_bar[i] = 0.0
        x_bar[i] += g * e * (1.0 - p[0] * xi)
        acc = -g * xi * xi * e
    _block_add(acc, p_bar)


@cuda.jit
def stencil_hand(x, a, out, x_bar, a_bar, out_bar):
    i = cuda.grid(1)
    n = x.shape[0]
    acc = 0.0
    if i < n:
        xi = x[i]
        g = 0.0
        if i > 0 and i < n - 1:
            out[i] = a[0] * x[i - 1] * x[i + 1] + math.sin(xi) - 2.0 * xi * xi
            gi = out_bar[i]
            g = gi * (math.cos(xi) - 4.0 * xi)
            acc = gi * x[i - 1] * x[i + 1]
        if i + 1 < n - 1:
            g += out_bar[i + 1] * a[0] * x[i + 2]
        if i - 1 > 0:
            g += out_bar[i - 1] * a[0] * x[i - 2]
        x_bar[i] += g
    _block_add(acc, a_bar)


def _elementwise_cpu(x, p):
    s = 0.0
    for i in range(x.shape[0]):
        s += math.exp(-p * x[i]) * x[i]
    return s


def _heat_2d_cpu(u, alpha):
    n, m = u.shape
    s = 0.0
    for i in range(n):
        for j in range(m):
            if i == 0 or j == 0 or i == n - 1 or j == m - 1:
                s += u[i, j]
            else:
                s += u[i, j] + alpha * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]
                                        - 4.0 * u[i, j])
    return s


# Kernels of the shapes numba.cuda users write with shared memory and run-time loops (the
# tests' versions are in tests/test_cuda_shared.py and tests/test_cuda_dynamic.py)
@cuda.jit
def block_reduce(x, p, out):
    tile = cuda.shared.array(THREADS, float64)
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


@cuda.jit
def cube_root(a, out):
    i = cuda.grid(1)
    if i < a.shape[0]:
        x = 1.0 + a[i] / 3.0
        r = x * x * x - a[i]
        while abs(r) > 1e-13 * a[i]:
            x = x - r / (3.0 * x * x)
            r = x * x * x - a[i]
        out[i] = x


TILE = 16


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


# Hand-written adjoints of the two shared-memory kernels, with adjit's calling convention:
# each recomputes and writes the primal as adjit's does, and zeroes the output's cotangent
@cuda.jit
def block_reduce_hand(x, p, out, x_bar, p_bar, out_bar):
    tile = cuda.shared.array(THREADS, float64)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    b = cuda.blockIdx.x
    g = out_bar[b]                      # every term of the block's sum has its cotangent
    xi = 0.0
    e = 0.0
    if i < x.shape[0]:
        xi = x[i]
        e = math.exp(p[0] * xi)
        x_bar[i] += g * e * (1.0 + p[0] * xi)
    tile[t] = e * xi
    _tree_sum(tile, t)
    if t == 0:
        out[b] = tile[0]
        out_bar[b] = 0.0
    _block_add(g * xi * xi * e, p_bar)


@cuda.jit(device=True)
def _fill_tiles(A, B, sA, sB, x, y, tx, ty, i):
    """Tile i of A's rows and B's columns into shared memory (zeros beyond the edges)."""
    sA[tx, ty] = 0.0
    sB[tx, ty] = 0.0
    if x < A.shape[0] and (ty + i * TILE) < A.shape[1]:
        sA[tx, ty] = A[x, ty + i * TILE]
    if y < B.shape[1] and (tx + i * TILE) < B.shape[0]:
        sB[tx, ty] = B[tx + i * TILE, y]
    cuda.syncthreads()


@cuda.jit
def tiled_matmul_hand(A, B, C, A_bar, B_bar, C_bar):
    """The product again, then G = C_bar (1 - C**2) in shared memory and, tile by tile, the
    block's parts of G B^T and A^T G added into A_bar and B_bar (one atomic per element and
    block, as the blocks along the other dimension add into the same elements)."""
    sA = cuda.shared.array(shape=(TILE, TILE), dtype=float64)
    sB = cuda.shared.array(shape=(TILE, TILE), dtype=float64)
    sG = cuda.shared.array(shape=(TILE, TILE), dtype=float64)
    x, y = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    bpg = cuda.gridDim.x
    tmp = 0.0
    for i in range(bpg):
        _fill_tiles(A, B, sA, sB, x, y, tx, ty, i)
        for j in range(TILE):
            tmp += sA[tx, j] * sB[j, ty]
        cuda.syncthreads()
    g = 0.0
    if x < C.shape[0] and y < C.shape[1]:
        c = math.tanh(tmp)
        C[x, y] = c
        g = C_bar[x, y] * (1.0 - c * c)
        C_bar[x, y] = 0.0
    sG[tx, ty] = g
    for i in range(bpg):
        _fill_tiles(A, B, sA, sB, x, y, tx, ty, i)
        a_part = 0.0                    # A_bar[x, i TILE + ty]: G's row times B's row ty
        b_part = 0.0                    # B_bar[i TILE + tx, y]: A's column tx times G's
        for j in range(TILE):
            a_part += sG[tx, j] * sB[ty, j]
            b_part += sA[j, tx] * sG[j, ty]
        if x < A.shape[0] and (ty + i * TILE) < A.shape[1]:
            cuda.atomic.add(A_bar, (x, ty + i * TILE), a_part)
        if y < B.shape[1] and (tx + i * TILE) < B.shape[0]:
            cuda.atomic.add(B_bar, (tx + i * TILE, y), b_part)
        cuda.syncthreads()


def _block_reduce_cpu(x, p):
    return np.sum(np.exp(p * x) * x)


def _cube_root_cpu(a):
    s = 0.0
    for i in range(a.shape[0]):
        x = 1.0 + a[i] / 3.0
        r = x * x * x - a[i]
        while abs(r) > 1e-13 * a[i]:
            x = x - r / (3.0 * x * x)
            r = x * x * x - a[i]
        s += x
    return s


def _matmul_cpu(A, B):
    return np.sum(np.tanh(A @ B))


def _counted_while_cpu(a):
    s = 0.0
    for i in range(a.shape[0]):
        x = a[i]
        k = 0
        while k < 6:
            x *= math.sin(x) + 1.5
            k += 1
        s += x * k
    return s


def _stencil_cpu(x, a):
    s = 0.0
    for i in range(1, x.shape[0] - 1):
        s += a * x[i - 1] * x[i + 1] + math.sin(x[i]) - 2.0 * x[i] * x[i]
    return s


if __name__ == "__main__":
    sys.exit(main())
