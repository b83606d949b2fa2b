"""The CUDA target: adjoint kernels and device functions.

In CI these run under numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1, set by conftest.py
unless the environment says otherwise); on a machine with a GPU run them unchanged with
NUMBA_ENABLE_CUDASIM=0. Every adjoint is checked against the CPU gradient of the same math
(adjit.grad on a plain function) and central finite differences.
"""
import math
import re

import numba
import numpy as np
import pytest

cuda = pytest.importorskip("numba.cuda")

import adjit  # noqa: E402
import adjit.cuda  # noqa: E402
from adjit import AdjitError, stop_gradient  # noqa: E402
from fd import fd_grad, weighted_output_fd  # noqa: E402

pytestmark = pytest.mark.cuda

THREADS = 32


def launch(kernel, n, *args):
    kernel[(n + THREADS - 1) // THREADS, THREADS](*args)


# 1. elementwise map -----------------------------------------------------------------------

@cuda.jit
def elementwise(x, p, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = math.exp(-p[0] * x[i]) * x[i]


def test_elementwise_map_matches_the_analytic_gradient():
    n = 37
    x = np.linspace(0.1, 2.0, n)
    p = np.array([0.7])
    out, x_bar, p_bar = np.zeros(n), np.zeros(n), np.zeros(1)
    w = np.random.default_rng(0).normal(size=n)
    adj = adjit.cuda.adjoint_kernel(elementwise, argnums=(0, 1))
    launch(adj, n, x, p, out, x_bar, p_bar, w.copy())
    e = np.exp(-p[0] * x)
    np.testing.assert_allclose(out, e * x, rtol=1e-15)             # the primal, recomputed
    np.testing.assert_allclose(x_bar, w * (e - p[0] * x * e), rtol=1e-13)
    np.testing.assert_allclose(p_bar[0], np.sum(w * -x * x * e), rtol=1e-12)
    # input shadows accumulate: a second launch adds the same again
    launch(adj, n, x, p, out, x_bar, p_bar, w.copy())
    np.testing.assert_allclose(x_bar, 2 * w * (e - p[0] * x * e), rtol=1e-13)


@pytest.mark.parametrize("which, shape", [(3, (36,)), (3, (38,)), (4, (2,)), (5, (37, 1))])
def test_a_shadow_of_another_shape_is_refused(which, shape):
    # a shorter shadow would be written out of its bounds on the GPU, another shape in
    # another order
    n = 37
    args = [np.linspace(0.1, 2.0, n), np.array([0.7]), np.zeros(n), np.zeros(n),
            np.zeros(1), np.ones(n)]
    name = {3: "x_bar", 4: "p_bar", 5: "out_bar"}[which]
    args[which] = np.zeros(shape)
    adj = adjit.cuda.adjoint_kernel(elementwise, argnums=(0, 1))
    with pytest.raises(AdjitError, match=re.escape(f"kernel 'elementwise' was launched with "
                                                   f"its shadow {name} of shape {shape}")):
        launch(adj, n, *args)
    assert not args[which].any()        # nothing was launched


def test_the_output_shadow_is_consumed_after_the_arithmetic_that_reads_it():
    """Zeroing out_bar[i] right after loading it made the adjoint of a map 0.64 ms on an
    H100, zeroing it after the arithmetic 0.24 ms: the store waits for the end of its block,
    unless something after it there reads the shadow (an in-place kernel adds into it)."""
    src = adjit.cuda.adjoint_kernel(elementwise, argnums=(0, 1)).source_for(
        np.ones(4), np.ones(1), np.ones(4))
    block = src[src.index("= out_bar[i]"):src.index("# the adjoints every thread adds to")]
    assert block.rstrip().endswith("out_bar[i] = 0.0")
    assert block.index("x_bar[i] += ") < block.index("out_bar[i] = 0.0")
    src = adjit.cuda.adjoint_kernel(in_place, argnums=(0, 1)).source_for(np.ones(4), np.ones(1))
    block = src[src.index("# backward sweep"):]
    assert block.index("x_bar[i] = 0.0") < block.index("x_bar[i] += ")


def test_owned_elements_are_plain_updates_others_atomic():
    src = adjit.cuda.adjoint_kernel(elementwise, argnums=(0, 1)).source_for(
        np.ones(4), np.ones(1), np.ones(4))
    assert "x_bar[i] += " in src                          # x[i]: this thread's element
    assert "cuda.atomic.add(p_bar, 0, " in src            # p[0]: every thread's
    assert "np." not in src.split("# forward sweep")[1]   # nothing allocates


@cuda.jit
def scaled_field(u, c, out):
    i = cuda.grid(1)
    if i < u.shape[0]:
        out[i] = c[0] * u[i] * u[i] + c[1] * math.sin(u[i])


@pytest.mark.parametrize("blocks, threads", [(3, 15), (1, 64), (40, 1)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_adjoints_every_thread_adds_to_are_summed_per_block(blocks, threads, dtype):
    """c_bar gets one atomic add per block, after a sum over the block in shared memory:
    blocks of any size (15 threads, 64, 1; threads past the array's end included), float32
    arrays summed in float64."""
    u = np.linspace(-1.0, 1.5, 35).astype(dtype)
    c = np.array([0.7, -1.3], dtype)
    w = np.random.default_rng(1).normal(size=u.shape).astype(dtype)
    out, u_bar, c_bar = np.zeros_like(u), np.zeros_like(u), np.zeros_like(c)
    adj = adjit.cuda.adjoint_kernel(scaled_field, argnums=(0, 1))
    adj[blocks, threads](u, c, out, u_bar, c_bar, w.copy())
    u64, w64 = u.astype(float), w.astype(float)
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(c_bar, [np.sum(w64 * u64 * u64), np.sum(w64 * np.sin(u64))],
                               rtol=rtol)
    np.testing.assert_allclose(u_bar, w64 * (2 * c[0] * u64 + c[1] * np.cos(u64)), rtol=rtol,
                               atol=1e-6 if dtype == np.float32 else 0)
    src = adj.source_for(u, c, out)
    body, sums = src.split("summed over the block")
    assert "c_bar" not in body.split("# backward sweep")[1]      # no per-thread atomics
    assert sums.count("cuda.atomic.add(c_bar, ") == 2 and "cuda.syncthreads()" in sums



def test_the_kernel_sweep_passes_print_after_each(monkeypatch, capsys):
    """ADJIT_DEBUG_PRINT_AFTER=sweep prints the adjoint kernel after each of its sweep
    passes (codegen/kernel_sweep.py), in order: c_bar's additions become atomics, then one
    atomic per block; the last print is the kernel compiled."""
    from adjit.codegen.kernel_sweep import KERNEL_PASSES
    monkeypatch.setenv("ADJIT_DEBUG_PRINT_AFTER", "sweep")
    u, c = np.linspace(-1.0, 1.5, 8), np.array([0.7, -1.3])
    src = adjit.cuda.adjoint_kernel(scaled_field, argnums=(0, 1)).source_for(
        u, c, np.zeros_like(u))
    out = capsys.readouterr().out
    printed = out.split("# adjit: scaled_field after sweep.")[1:]
    assert [p.split("\n", 1)[0] for p in printed] == list(KERNEL_PASSES)
    after = {p.split("\n", 1)[0]: p.split("\n", 1)[1] for p in printed}
    assert "cuda.atomic.add(c_bar" not in after["gather"]
    assert "cuda.atomic.add(c_bar" in after["atomics"] and \
        "summed over the block" not in after["atomics"]
    assert "summed over the block" in after["block_sums"]
    assert after["late_zeroing"].strip() == src.strip()


@cuda.jit
def grid_index_only(x, state):
    i = cuda.grid(1)  # noqa: F841 - a kernel that computes its index and nothing else


def test_a_kernel_that_differentiates_nothing_has_an_empty_adjoint():
    """Its adjoint kernel compiles (its body is `pass`, it was a source with no body) and
    leaves the shadows zero."""
    x, state = np.ones(8), np.ones((2, 8))
    adj = adjit.cuda.adjoint_kernel(grid_index_only, argnums=(1,))
    assert "pass" in adj.source_for(x, state)
    state_bar = np.zeros_like(state)
    launch(adj, 8, x, state, state_bar)
    assert not state_bar.any()


@cuda.jit
def add_index_inside(state, n):
    i = cuda.grid(1)
    if i >= 1 and i < n - 1:
        state[1, i] += i        # d state_out / d state_in = 1: the shadow passes through


def test_an_adjoint_branch_that_only_reads_a_shadow_compiles():
    """The branch's adjoint statement reads the shadow into a temporary nothing uses; the
    temporary stays, so the branch keeps a body (dropping it left `if _c2:` empty)."""
    n = 8
    state = np.zeros((2, 10))
    state_bar = np.random.default_rng(3).normal(size=(2, 10))
    want = state_bar.copy()
    adj = adjit.cuda.adjoint_kernel(add_index_inside, argnums=(0,))
    launch(adj, n, state, n, state_bar)
    np.testing.assert_array_equal(state_bar, want)
    np.testing.assert_array_equal(state[1, 1:n - 1], np.arange(1, n - 1))

# 2. stencil ---------------------------------------------------------------------------------

@cuda.jit
def stencil(x, a, out):
    i = cuda.grid(1)
    n = x.shape[0]
    if i > 0 and i < n - 1:
        out[i] = a[0] * x[i - 1] * x[i + 1] + math.sin(x[i]) - 2.0 * x[i] * x[i]


def _stencil_cpu(x, a):
    out = np.zeros_like(x)
    for i in range(1, x.shape[0] - 1):
        out[i] = a[0] * x[i - 1] * x[i + 1] + math.sin(x[i]) - 2.0 * x[i] * x[i]
    return out


def test_stencil_matches_finite_differences():
    n = 40
    rng = np.random.default_rng(1)
    x, a = rng.normal(size=n), np.array([0.3])
    w = rng.normal(size=n)
    out, x_bar, a_bar = np.zeros(n), np.zeros(n), np.zeros(1)
    launch(adjit.cuda.adjoint_kernel(stencil, argnums=(0, 1)), n, x, a, out, x_bar, a_bar,
           w.copy())
    np.testing.assert_allclose(x_bar, weighted_output_fd(_stencil_cpu, [x, a], 0, w),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(a_bar, weighted_output_fd(_stencil_cpu, [x, a], 1, w),
                               rtol=1e-6, atol=1e-8)


# 3. gather ----------------------------------------------------------------------------------

@cuda.jit
def gather(x, idx, w, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        v = x[idx[i]]
        out[i] = w[i] * v * v + math.tanh(v)


def test_gather_through_an_index_array_scatters_atomically():
    rng = np.random.default_rng(2)
    x = rng.normal(size=10)
    idx = rng.integers(0, 10, size=50)          # repeated indices: a true scatter
    w = rng.normal(size=50)
    cot = rng.normal(size=50)
    out, x_bar, w_bar = np.zeros(50), np.zeros(10), np.zeros(50)
    adj = adjit.cuda.adjoint_kernel(gather, argnums=(0, 2))
    launch(adj, 50, x, idx, w, out, x_bar, w_bar, cot.copy())
    v = x[idx]
    expect_x = np.zeros(10)
    np.add.at(expect_x, idx, cot * (2 * w * v + 1 - np.tanh(v) ** 2))
    np.testing.assert_allclose(x_bar, expect_x, rtol=1e-12)
    np.testing.assert_allclose(w_bar, cot * v * v, rtol=1e-13)
    assert "cuda.atomic.add(x_bar" in adj.source


# 4. per-thread loop over neighbours: Lennard-Jones, thread per atom ---------------------------

@cuda.jit
def lj_energies(pos, e):
    i = cuda.grid(1)
    n = pos.shape[0]
    if i < n:
        s = 0.0
        for j in range(n):
            if j != i:
                dx = pos[i, 0] - pos[j, 0]
                dy = pos[i, 1] - pos[j, 1]
                dz = pos[i, 2] - pos[j, 2]
                r2 = dx * dx + dy * dy + dz * dz
                if r2 < 6.25:                    # cutoff 2.5
                    inv6 = 1.0 / (r2 * r2 * r2)
                    s += 2.0 * (inv6 * inv6 - inv6)
        e[i] = s


def lj_total(pos):
    n = pos.shape[0]
    s = 0.0
    for i in range(n):
        for j in range(n):
            if j != i:
                dx = pos[i, 0] - pos[j, 0]
                dy = pos[i, 1] - pos[j, 1]
                dz = pos[i, 2] - pos[j, 2]
                r2 = dx * dx + dy * dy + dz * dz
                if r2 < 6.25:
                    inv6 = 1.0 / (r2 * r2 * r2)
                    s += 2.0 * (inv6 * inv6 - inv6)
    return s


def _lattice(n, spacing=1.15, seed=3):
    rng = np.random.default_rng(seed)
    side = int(math.ceil(n ** (1 / 3)))
    pts = np.array([(i, j, k) for i in range(side) for j in range(side) for k in range(side)],
                   dtype=np.float64)[:n]
    return pts * spacing + rng.uniform(-0.08, 0.08, pts.shape)


def test_lennard_jones_forces_from_the_adjoint_kernel():
    pos = _lattice(20)
    n = pos.shape[0]
    e, pos_bar = np.zeros(n), np.zeros_like(pos)
    adj = adjit.cuda.adjoint_kernel(lj_energies, argnums=0)
    launch(adj, n, pos, e, pos_bar, np.ones(n))
    assert e.sum() == pytest.approx(lj_total(pos), rel=1e-13)
    cpu = adjit.grad(lj_total)(pos)
    np.testing.assert_allclose(pos_bar, cpu, rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(pos_bar, fd_grad(lj_total, (pos,), 0), rtol=1e-5, atol=1e-6)
    assert "_ftape" not in adj.source          # the pair loop recomputes: no tape at all


@cuda.jit
def shared_pairs(x, w, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        s = 0.0
        for k in range(w.shape[0]):
            if w[k] > 0.0:                       # a mask: some iterations add nothing
                s += x[i // 2] * w[k] * x[k]
        out[i] = s


def shared_pairs_numpy(x, w):
    out = np.zeros(2 * x.shape[0] - 1)
    for i in range(out.shape[0]):
        out[i] = sum(x[i // 2] * w[k] * x[k] for k in range(w.shape[0]) if w[k] > 0.0)
    return out


def test_a_loop_adding_into_an_element_two_threads_share():
    """x[i // 2] belongs to threads 2m and 2m + 1: its adjoint stays atomic, summed over the
    loop first (one atomic add per thread); x[k]'s, whose element changes with k, is skipped
    where the mask made the term zero."""
    x = np.linspace(0.3, 1.7, 6)
    w = np.array([0.5, -1.0, 2.0, -0.2, 1.5, -0.3])
    n = 2 * x.shape[0] - 1
    cot = np.random.default_rng(7).normal(size=n)
    out, x_bar, w_bar = np.zeros(n), np.zeros_like(x), np.zeros_like(w)
    adj = adjit.cuda.adjoint_kernel(shared_pairs, argnums=(0, 1))
    launch(adj, n, x, w, out, x_bar, w_bar, cot.copy())
    np.testing.assert_allclose(out, shared_pairs_numpy(x, w), rtol=1e-14)
    np.testing.assert_allclose(x_bar, weighted_output_fd(shared_pairs_numpy, [x, w], 0, cot),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(w_bar, weighted_output_fd(shared_pairs_numpy, [x, w], 1, cot),
                               rtol=1e-6, atol=1e-8)
    src = adj.source_for(x, w, out)
    assert "summed: one atomic add" in src and "cuda.atomic.add(x_bar, i // 2, _acc" in src
    assert src.count("cuda.atomic.add(") == 3                 # x_bar[k], w_bar[k], the sum


def test_the_pair_loop_sums_its_own_atom_and_skips_zero_adds():
    """The adjoint of thread i's loop over j adds into pos_bar[i] (the same element every
    iteration) and pos_bar[j] (another atom's). The first goes through a local sum and one
    atomic add after the loop; the second is skipped when the pair lies beyond the cutoff
    (its adjoint is 0): what `.source` shows, and the forces stay those of the CPU."""
    pos = _lattice(27, spacing=1.6)           # many pairs beyond the cutoff of 2.5
    n = pos.shape[0]
    e, pos_bar = np.zeros(n), np.zeros_like(pos)
    adj = adjit.cuda.adjoint_kernel(lj_energies, argnums=0)
    launch(adj, n, pos, e, pos_bar, np.ones(n))
    np.testing.assert_allclose(pos_bar, fd_grad(lj_total, (pos,), 0), rtol=1e-5, atol=1e-6)
    src = adj.source_for(pos, e)
    for k in range(3):
        assert "summed: one atomic add\n        if _acc" in src
        assert f"cuda.atomic.add(pos_bar, (i, {k}), _acc" in src
    loop = src[src.index("for j in range(n - 1, -1, -1)"):src.index("summed: one atomic")]
    assert "(i, " not in loop.split("dx_bar = ")[1]            # no atomic into pos_bar[i] there
    assert loop.count("!= 0.0:\n") == 3 and loop.count("cuda.atomic.add(pos_bar, (j, ") == 3


# 5. reduction with cuda.atomic.add ------------------------------------------------------------

@cuda.jit
def atomic_sum(x, p, total):
    i = cuda.grid(1)
    if i < x.shape[0]:
        cuda.atomic.add(total, 0, p[0] * x[i] * x[i] + math.cos(x[i]))


def test_atomic_reduction():
    rng = np.random.default_rng(4)
    x, p = rng.normal(size=33), np.array([1.7])
    total, x_bar, p_bar = np.zeros(1), np.zeros(33), np.zeros(1)
    adj = adjit.cuda.adjoint_kernel(atomic_sum, argnums=(0, 1))
    launch(adj, 33, x, p, total, x_bar, p_bar, np.array([0.5]))
    assert total[0] == pytest.approx(np.sum(p[0] * x * x + np.cos(x)), rel=1e-13)
    np.testing.assert_allclose(x_bar, 0.5 * (2 * p[0] * x - np.sin(x)), rtol=1e-13)
    np.testing.assert_allclose(p_bar, 0.5 * np.sum(x * x), rtol=1e-13)


# 6. a kernel calling a device function -----------------------------------------------------

@cuda.jit(device=True)
def soft(v, s):
    return v * math.tanh(s * v) + 0.5 * v * v


@cuda.jit
def calls_device(x, s, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = soft(x[i], s[0]) * 2.0


def _soft_total(x, s):
    return np.sum(2.0 * (x * np.tanh(s * x) + 0.5 * x * x))


def test_kernel_calling_a_device_function():
    rng = np.random.default_rng(5)
    x, s = rng.normal(size=21), np.array([0.8])
    out, x_bar, s_bar = np.zeros(21), np.zeros(21), np.zeros(1)
    launch(adjit.cuda.adjoint_kernel(calls_device, argnums=(0, 1)), 21, x, s, out, x_bar,
           s_bar, np.ones(21))
    np.testing.assert_allclose(x_bar, fd_grad(_soft_total, (x, s), 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(s_bar, fd_grad(_soft_total, (x, s), 1), rtol=1e-6, atol=1e-8)


# 7. stop_gradient inside a kernel -------------------------------------------------------------

@cuda.jit
def stopped(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i] * stop_gradient(x[i]) + stop_gradient(math.exp(x[i]))


def test_stop_gradient_in_a_kernel():
    x = np.linspace(-1, 1, 9)
    out, x_bar = np.zeros(9), np.zeros(9)
    adj = adjit.cuda.adjoint_kernel(stopped, argnums=0)
    launch(adj, 9, x, out, x_bar, np.ones(9))
    np.testing.assert_allclose(out, x * x + np.exp(x), rtol=1e-15)
    np.testing.assert_allclose(x_bar, x, rtol=1e-15)       # not 2x + exp(x)
    backward = adj.source.split("# backward sweep")[1]
    assert not [line for line in backward.splitlines()
                if "math.exp" in line and not line.strip().startswith("#")]


# an in-place kernel: the one shadow is the output's cotangent in, the input's gradient out

@cuda.jit
def in_place(x, c):
    i = cuda.grid(1)
    if i < x.shape[0]:
        x[i] = math.sin(x[i]) * c[0]


def test_in_place_kernel_one_shadow_serves_both_roles():
    x0 = np.linspace(0.0, 1.0, 10)
    x, c = x0.copy(), np.array([1.5])
    cot = np.arange(10.0)
    x_bar, c_bar = cot.copy(), np.zeros(1)
    adj = adjit.cuda.adjoint_kernel(in_place, argnums=(0, 1))
    assert adj.shadows_for(x, c) == ["x_bar", "c_bar"]
    launch(adj, 10, x, c, x_bar, c_bar)
    np.testing.assert_allclose(x, np.sin(x0) * 1.5, rtol=1e-15)
    np.testing.assert_allclose(x_bar, cot * np.cos(x0) * 1.5, rtol=1e-14)
    np.testing.assert_allclose(c_bar, np.sum(cot * np.sin(x0)), rtol=1e-13)


# device functions ---------------------------------------------------------------------------

def scalar_model(x, p):
    s = 0.0
    for k in range(3):                      # constant trip count: a fixed-size local tape
        s = s * math.sin(x) + p * x ** k
    if s > 1.0:
        s = math.sqrt(s)
    return s * stop_gradient(p) + math.atan2(x, p)


GRAD_DEVICE = adjit.grad(scalar_model, argnums=(0, 1), target="cuda")
VG_DEVICE = adjit.value_and_grad(scalar_model, argnums=0, target="cuda")
JVP_DEVICE = adjit.jvp(scalar_model, argnums=0, target="cuda")


@cuda.jit
def use_device_gradients(x, p, gx, gp, val, vgx, tan):
    i = cuda.grid(1)
    if i < x.shape[0]:
        a, b = GRAD_DEVICE(x[i], p[0])
        gx[i] = a
        gp[i] = b
        v, g = VG_DEVICE(x[i], p[0])
        val[i] = v
        vgx[i] = g
        out, t = JVP_DEVICE(x[i], p[0], 1.0)
        tan[i] = t


def test_device_function_gradients_match_the_cpu_gradient():
    x = np.linspace(0.1, 2.5, 16)
    p = np.array([1.3])
    gx, gp, val, vgx, tan = (np.zeros(16) for _ in range(5))
    launch(use_device_gradients, 16, x, p, gx, gp, val, vgx, tan)
    cpu = adjit.grad(scalar_model, argnums=(0, 1))
    for k in range(16):
        a, b = cpu(x[k], 1.3)
        # equal to rounding, not to the bit: on a GPU the compiler fuses multiply-adds
        assert (gx[k], gp[k]) == (pytest.approx(a, rel=1e-14), pytest.approx(b, rel=1e-14))
        assert val[k] == pytest.approx(scalar_model(x[k], 1.3), rel=1e-14)
        assert vgx[k] == pytest.approx(a, rel=1e-14) and tan[k] == pytest.approx(a)
        assert a == pytest.approx(fd_grad(scalar_model, (x[k], 1.3), 0), rel=1e-6)


def test_device_function_source_allocates_only_fixed_local_arrays():
    src = GRAD_DEVICE.source_for(0.5, 1.0)
    assert "cuda.local.array(" in src
    assert "np.empty" not in src and "reserve_tape" not in src and "grow_tape" not in src


def unbounded_loop(x, n):
    s = 0.0
    for j in range(n):
        for k in range(n):
            s = math.sin(s + x)
    return s


def array_argument(x):
    return x[0] * 2.0


def test_device_function_refusals():
    with pytest.raises(AdjitError, match="known only when the code runs, inside another") \
            as info:
        adjit.grad(unbounded_loop, target="cuda").source_for(0.5, 4)
    assert "range(8)" in str(info.value) and "line" in str(info.value)
    with pytest.raises(AdjitError, match="array"):
        adjit.grad(array_argument, target="cuda").source_for(np.ones(3))
    with pytest.raises(AdjitError, match="target="):
        adjit.grad(scalar_model, target="tpu")
    with pytest.raises(AdjitError, match="checkpoint="):
        adjit.grad(scalar_model, target="cuda", checkpoint=4)


@cuda.jit
def recording_kernel(x, n, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        s = x[i]
        for k in range(n[0]):
            s = math.sin(s) * x[i]
        out[i] = s


def test_kernel_loop_with_a_run_time_trip_count_is_replayed():
    x = np.linspace(0.3, 1.2, 6)
    w = np.random.default_rng(5).normal(size=6)
    out, x_bar = np.zeros(6), np.zeros(6)
    adj = adjit.cuda.adjoint_kernel(recording_kernel, argnums=0)
    launch(adj, 6, x, np.array([3]), out, x_bar, w.copy())

    def run(v):
        s = v.copy()
        for _ in range(3):
            s = np.sin(s) * v
        return s
    np.testing.assert_allclose(out, run(x), rtol=1e-14)
    np.testing.assert_allclose(x_bar, weighted_output_fd(run, [x], 0, w), rtol=1e-7)


def test_scalar_in_argnums_of_a_kernel_is_refused():
    @cuda.jit
    def scaled(x, a, out):
        i = cuda.grid(1)
        if i < x.shape[0]:
            out[i] = a * x[i]

    with pytest.raises(AdjitError, match="one-element array"):
        adjit.cuda.adjoint_kernel(scaled, argnums=(1,)).source_for(np.ones(3), 2.0, np.ones(3))


# the real CUDA compiler, without a GPU ------------------------------------------------------

PTX_SCRIPT = r'''
import json, sys
import numpy as np
if not hasattr(np, "row_stack"):   # numba-cuda 0.2x overloads it; numpy 2.5 removed it
    np.row_stack = np.vstack       # (as tests/conftest.py does)
import numba
from numba import cuda
import adjit.cuda
import test_cuda as T
from adjit.transform import build_kernel
cases = [(T.elementwise, (np.ones(4), np.ones(1), np.ones(4)), (0, 1)),
         (T.stencil, (np.ones(4), np.ones(1), np.ones(4)), (0, 1)),
         (T.gather, (np.ones(4), np.arange(4), np.ones(4), np.ones(4)), (0, 2)),
         (T.lj_energies, (np.ones((4, 3)), np.ones(4)), (0,)),
         (T.atomic_sum, (np.ones(4), np.ones(1), np.ones(1)), (0, 1)),
         (T.calls_device, (np.ones(4), np.ones(1), np.ones(4)), (0, 1)),
         (T.stopped, (np.ones(4), np.ones(4)), (0,)),
         (T.in_place, (np.ones(4), np.ones(1)), (0, 1))]
done = []
try:
    for kernel, args, argnums in cases:
        adj = adjit.cuda.adjoint_kernel(kernel, argnums)
        types = tuple(numba.typeof(a) for a in args)
        source, pyfunc, shadows, after, _ = build_kernel(adj.fn, adj.argnums, types)
        shadow_types = tuple(types[adj.params.index(s[:-4])] for s in shadows)
        for f in [pyfunc] + after:
            cuda.compile_ptx(f, types + shadow_types, cc=(9, 0))
        done.append(kernel.py_func.__name__)
    spec = T.GRAD_DEVICE.specialize((numba.float64, numba.float64))
    cuda.compile_ptx(spec.pyfunc, (numba.float64, numba.float64), device=True, cc=(9, 0))
    done.append("device function")
except Exception as exc:   # no NVVM / NVRTC libraries: nothing to compile with
    if not any(w in f"{type(exc).__name__} {exc}" for w in ("Nvvm", "NVVM", "nvrtc", "NVRTC",
                                                           "libnvvm", "DynamicLib")):
        raise
    print(json.dumps({"skip": f"{type(exc).__name__}: {exc}"[:300]}))
    sys.exit(0)
print(json.dumps({"compiled": done}))
'''


def test_adjoints_compile_to_ptx_with_numba_cuda():
    """numba-cuda's real compiler (no GPU needed, but NVVM: pip install 'numba-cuda[cu12]')
    compiles every adjoint kernel above and a device-function gradient for sm_90."""
    import json
    import os
    import subprocess
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0",
               PYTHONPATH=os.pathsep.join([here, os.path.dirname(here),
                                           os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", PTX_SCRIPT], env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if "skip" in result:
        pytest.skip(f"no NVVM to compile with ({result['skip']})")
    assert len(result["compiled"]) == 9


def test_cuda_lj_forces_example():
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).resolve().parent.parent / "examples" / "cuda_lj_forces.py"
    spec = importlib.util.spec_from_file_location("cuda_lj_forces", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    r = module.main(n_atoms=27)
    assert r["err_cpu"] < 1e-13 and r["err_ref"] < 1e-12 and r["energy_err"] < 1e-13
    assert r["net_force"] < 1e-10


def test_cuda_bench_script_runs(capsys):
    """benchmarks/cuda_bench.py at tiny sizes in the simulator (its real run needs a GPU)."""
    import importlib.util
    import os
    import pathlib
    path = pathlib.Path(__file__).resolve().parent.parent / "benchmarks" / "cuda_bench.py"
    os.environ["ADJIT_CUDA_BENCH_SMOKE"] = "1"
    try:
        spec = importlib.util.spec_from_file_location("cuda_bench", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        assert module.main() == 0
    finally:
        del os.environ["ADJIT_CUDA_BENCH_SMOKE"]
    out = capsys.readouterr().out
    assert out.count("| ") >= 4 and "Lennard-Jones" in out
    assert "row failed" not in out and "MISMATCH" not in out, out
    for row in ("block reduction", "Newton to a tolerance", "tiled matrix product"):
        assert row in out


# every function of numbers docs/coverage.md marks as working on CUDA ----------------------------
def _cuda_scalar_entries():
    from adjit.rules import REGISTRY
    return [e for e in REGISTRY.family("scalar")
            if e.cuda and e.rule is not None and e.obj is not stop_gradient]


def _cuda_entry_module(tmp_path, entries):
    """One module with, per entry, a function of numbers calling it, its gradient as a
    device function, and a kernel applying that to arrays of arguments."""
    lines = ["import math", "from numba import cuda", "import adjit", ""]
    for k, e in enumerate(entries):
        n = len(e.rule.params)
        ints = {j for j, (lo, _) in enumerate(e.domain or ()) if isinstance(lo, int)}
        floats = [j for j in range(n) if j not in ints]
        xs = ", ".join(f"x{j}" for j in range(n))
        # an integer element as an int (the simulator's math.ldexp takes no numpy integer)
        items = [f"int(x{j}[i])" if j in ints else f"x{j}[i]" for j in range(n)]
        call = f"float({e.name}({xs}))" if e.rule.result in ("int", "bool") else \
            f"{e.name}({xs})"
        lines += [f"def f{k}({xs}):", f"    return {call}", "",
                  f"G{k} = adjit.grad(f{k}, argnums={tuple(floats)!r}, target='cuda')", "",
                  "@cuda.jit",
                  f"def k{k}({xs}, g):",
                  "    i = cuda.grid(1)",
                  "    if i < g.shape[1]:",
                  f"        d = G{k}({', '.join(items)})"]
        lines += [f"        g[{m}, i] = d[{m}]" for m in range(len(floats))] + [""]
    path = tmp_path / "cuda_entries.py"
    path.write_text("\n".join(lines) + "\n")
    import importlib.util
    spec = importlib.util.spec_from_file_location("cuda_entries", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_function_of_numbers_marked_cuda_differentiates_in_device_code(tmp_path):
    """Each math function and builtin docs/coverage.md marks "CUDA: yes": its gradient as a
    numba.cuda device function, called from a kernel, equals adjit's CPU gradient (itself
    checked against finite differences by tests/test_registry.py). On a GPU machine this
    compiles every rule with numba-cuda (NUMBA_ENABLE_CUDASIM=0)."""
    entries = _cuda_scalar_entries()
    module = _cuda_entry_module(tmp_path, entries)
    rng = np.random.default_rng(3)
    failures = []
    for k, e in enumerate(entries):
        n = len(e.rule.params)
        domain = list(e.domain or ((-2.0, 2.0),))
        domain += [domain[-1]] * (n - len(domain))
        xs = [rng.integers(lo, hi, 8) if isinstance(lo, int) else rng.uniform(lo, hi, 8)
              for lo, hi in domain[:n]]
        floats = [j for j in range(n) if xs[j].dtype.kind == "f"]
        g = np.zeros((len(floats), 8))
        launch(getattr(module, f"k{k}"), 8, *xs, g)
        cpu = adjit.grad(getattr(module, f"f{k}"), argnums=tuple(floats))
        for i in range(8):
            want = cpu(*[x[i].item() for x in xs])
            if not np.allclose(g[:, i], want, rtol=1e-12, atol=1e-14):
                failures.append(f"{e.name} at {[x[i] for x in xs]}: {g[:, i]} != {want}")
    assert not failures, "\n".join(failures[:10])
    assert len(entries) >= 40


# custom_vjp functions in kernels and device functions -----------------------------------------

@adjit.custom_vjp
def softplus_rule(x):
    return math.log(1.0 + math.exp(x))       # overflows for x > 709: the rules do not


@numba.njit
def _softplus_fwd(x):
    if x > 0.0:
        return x + math.log1p(math.exp(-x)), x
    return math.log1p(math.exp(x)), x


@numba.njit
def _sigmoid(x):       # (@njit: rules compiled for the CPU and the GPU call it)
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def _softplus_bwd(x, g):
    return (g * _sigmoid(x),)


softplus_rule.defvjp(_softplus_fwd, _softplus_bwd)


@softplus_rule.defjvp
def _softplus_jvp(primals, tangents):
    x, = primals
    dx, = tangents
    return _softplus_fwd(x)[0], dx * _sigmoid(x)


@adjit.custom_vjp
def clip_cotangent(x, bound):
    return x


clip_cotangent.defvjp(lambda x, bound: (x, bound),
                      lambda bound, g: (min(max(g, -bound), bound), 0.0))


@cuda.jit
def custom_rules_kernel(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = softplus_rule(x[i]) + clip_cotangent(x[i] * x[i], 1.0)


def test_adjoint_kernels_use_custom_rules():
    x = np.array([800.0, -800.0, 0.3, -1.2, 2.0, 0.0])
    n = x.shape[0]
    out, x_bar = np.zeros(n), np.zeros(n)
    primal = np.zeros(n - 2)            # (its own log(1 + exp(x)) overflows at 800)
    launch(custom_rules_kernel, n - 2, x[2:].copy(), primal)   # the user's kernel as written
    adj = adjit.cuda.adjoint_kernel(custom_rules_kernel, argnums=0)
    launch(adj, n, x, out, x_bar, np.full(n, 3.0))
    np.testing.assert_allclose(out[2:], primal, rtol=1e-15)
    s = 0.5 * (1.0 + np.tanh(0.5 * x))
    np.testing.assert_allclose(out, np.logaddexp(0.0, x) + x * x, rtol=1e-14)
    # softplus's rule is finite at 800 (the primal's own derivative is inf/inf there), and
    # the cotangent 3 reaching clip_cotangent is clipped to 1: 3 s + 1 * 2x, not 3 s + 3 * 2x
    np.testing.assert_allclose(x_bar, 3.0 * s + 2.0 * x, rtol=1e-14)
    assert "softplus_rule" in adj.source


def custom_scalar_model(x, p):
    return softplus_rule(p * x) * x + clip_cotangent(x, 0.5)


CUSTOM_GRAD_DEVICE = adjit.grad(custom_scalar_model, argnums=(0, 1), target="cuda")
CUSTOM_JVP_DEVICE = adjit.jvp(custom_scalar_model, argnums=1, target="cuda")


@cuda.jit
def use_custom_device_gradients(x, p, gx, gp, tan):
    i = cuda.grid(1)
    if i < x.shape[0]:
        a, b = CUSTOM_GRAD_DEVICE(x[i], p[0])
        gx[i] = a
        gp[i] = b
        out, t = CUSTOM_JVP_DEVICE(x[i], p[0], 1.0)
        tan[i] = t


def test_device_gradients_use_custom_rules():
    x = np.linspace(-2.0, 3.0, 9)
    p = np.array([0.8])
    gx, gp, tan = np.zeros(9), np.zeros(9), np.zeros(9)
    launch(use_custom_device_gradients, 9, x, p, gx, gp, tan)
    s = 1.0 / (1.0 + np.exp(-p[0] * x))
    np.testing.assert_allclose(gx, s * p[0] * x + np.logaddexp(0.0, p[0] * x) + 0.5,
                               rtol=1e-13)
    np.testing.assert_allclose(gp, s * x * x, rtol=1e-13)
    np.testing.assert_allclose(tan, gp, rtol=1e-13)


@adjit.custom_vjp
def vector_total(v):
    return np.sum(v)


vector_total.defvjp(lambda v: (np.sum(v), v.shape[0]), lambda n, g: (np.full(n, g),))


@cuda.jit
def custom_rule_on_an_array(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = vector_total(x) * x[i]


def test_custom_rules_on_arrays_in_kernels_are_refused():
    with pytest.raises(AdjitError, match="custom_vjp function `vector_total` on an array in "
                       "CUDA code"):
        adjit.cuda.adjoint_kernel(custom_rule_on_an_array, argnums=0).source_for(
            np.zeros(4), np.zeros(4))


# 2-D and 3-D grids, hand-written thread indices ------------------------------------------------

@cuda.jit
def heat_2d(u, alpha, out):
    i, j = cuda.grid(2)
    n, m = u.shape
    if i < n and j < m:
        if i == 0 or j == 0 or i == n - 1 or j == m - 1:
            out[i, j] = u[i, j]
        else:
            out[i, j] = u[i, j] + alpha[0] * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1]
                                              + u[i, j + 1] - 4.0 * u[i, j])


def heat_2d_numpy(u, alpha):
    out = u.copy()
    out[1:-1, 1:-1] += alpha[0] * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]
                                   - 4.0 * u[1:-1, 1:-1])
    return out


def test_2d_grid_stencil_with_boundary_branches():
    u, alpha = np.random.default_rng(3).random((7, 6)), np.array([0.15])
    w = np.random.default_rng(4).normal(size=u.shape)
    out, u_bar, alpha_bar = np.zeros_like(u), np.zeros_like(u), np.zeros(1)
    adj = adjit.cuda.adjoint_kernel(heat_2d, argnums=(0, 1))
    adj[(2, 2), (4, 4)](u, alpha, out, u_bar, alpha_bar, w.copy())
    np.testing.assert_allclose(out, heat_2d_numpy(u, alpha), rtol=1e-14)
    np.testing.assert_allclose(u_bar, weighted_output_fd(heat_2d_numpy, [u, alpha], 0, w),
                               rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(alpha_bar, weighted_output_fd(heat_2d_numpy, [u, alpha], 1, w),
                               rtol=1e-7)
    # out[i, j] is this thread's own; u[i, j] is also read by the neighbours' threads, whose
    # terms this thread gathers (computing their adjoints again), with plain updates; the
    # output shadows are consumed by a second kernel, once every thread has read them
    src = adj.source
    assert "out_bar[i, j] = 0.0" in src.split("def heat_2d_adjoint_zero")[1]
    lines = src.splitlines()
    assert all(lines[k - 1].strip().startswith("if not 0 <= ")     # (beyond the grid)
               for k, line in enumerate(lines) if "cuda.atomic.add(u_bar" in line)
    assert "u_bar[i, j] += " not in src and src.count("_g1 += ") == 6    # (2 own, 4 neighbours)
    flat = " ".join(src.split())
    assert ("u_bar[cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x, cuda.blockIdx.y * "
            "cuda.blockDim.y + cuda.threadIdx.y] += _g1") in flat
    assert src.count("the neighbour at") == 4


@cuda.jit
def scaled_squares_by_hand(x, out):
    i = cuda.threadIdx.x + cuda.blockIdx.x * cuda.blockDim.x
    if i < x.shape[0]:
        y = x[i]
        y *= y
        y *= 1.5
        out[i] = y


def test_hand_written_thread_index_owns_its_element():
    x = np.linspace(-1.0, 2.0, 37)
    out, x_bar = np.zeros(37), np.zeros(37)
    adj = adjit.cuda.adjoint_kernel(scaled_squares_by_hand, argnums=0)
    launch(adj, 37, x, out, x_bar, np.ones(37))
    np.testing.assert_allclose(out, 1.5 * x * x, rtol=1e-15)
    np.testing.assert_allclose(x_bar, 3.0 * x, rtol=1e-15)
    assert "x_bar[i] += " in adj.source and "atomic" not in adj.source


@cuda.jit
def strided_3d(x, p, out):
    i0, j0, k0 = cuda.grid(3)
    si, sj, sk = cuda.gridsize(3)
    for i in range(i0, x.shape[0], si):
        for j in range(j0, x.shape[1], sj):
            for k in range(k0, x.shape[2], sk):
                out[i, j, k] = math.sin(p[0] * x[i, j, k]) * x[i, j, k]


def test_3d_grid_stride_loops():
    x, p = np.random.default_rng(5).random((5, 4, 3)), np.array([0.8])
    out, x_bar, p_bar = np.zeros_like(x), np.zeros_like(x), np.zeros(1)
    w = np.random.default_rng(6).normal(size=x.shape)
    adj = adjit.cuda.adjoint_kernel(strided_3d, argnums=(0, 1))
    adj[(1, 1, 1), (2, 2, 2)](x, p, out, x_bar, p_bar, w.copy())    # each thread: several
    s, c = np.sin(p[0] * x), np.cos(p[0] * x)
    np.testing.assert_allclose(out, s * x, rtol=1e-15)
    np.testing.assert_allclose(x_bar, w * (c * p[0] * x + s), rtol=1e-14)
    np.testing.assert_allclose(p_bar, [np.sum(w * c * x * x)], rtol=1e-13)
    assert "x_bar[i, j, k] += " in adj.source       # each element one thread's


@cuda.jit
def rows_only_on_a_2d_grid(x, out):
    i, j = cuda.grid(2)
    if i < x.shape[0] and j < 4:
        out[i] = x[i] * x[i]


def test_2d_grid_writing_by_one_index_is_a_race():
    with pytest.raises(AdjitError, match="a race in kernel 'rows_only_on_a_2d_grid'"):
        adjit.cuda.adjoint_kernel(rows_only_on_a_2d_grid, argnums=0).source_for(
            np.ones(4), np.zeros(4))


@cuda.jit
def counted_while_kernel(a, out):
    i = cuda.grid(1)
    if i < a.shape[0]:
        x = a[i]
        k = 0
        while k < 6:            # a counted loop, as numba.cuda users write it
            x *= math.sin(x) + 1.5
            k += 1
        out[i] = x * k


def counted_while_numpy(a):
    x = a[0].copy()
    for _ in range(6):
        x = x * (np.sin(x) + 1.5)
    return x * 6


def test_counted_while_loop_in_a_kernel_records_into_a_fixed_local_array():
    a = np.linspace(0.2, 1.4, 9)
    w = np.random.default_rng(7).normal(size=9)
    out, a_bar = np.zeros(9), np.zeros(9)
    adj = adjit.cuda.adjoint_kernel(counted_while_kernel, argnums=0)
    launch(adj, 9, a, out, a_bar, w.copy())
    np.testing.assert_allclose(out, counted_while_numpy([a]), rtol=1e-14)
    np.testing.assert_allclose(a_bar, weighted_output_fd(lambda v: counted_while_numpy([v]),
                                                         [a], 0, w), rtol=1e-7)
    assert "cuda.local.array(" in adj.source


@cuda.jit
def local_scratch_kernel(x, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        buf = cuda.local.array(3, numba.float64)
        for k in range(3):
            buf[k] = x[i, k] * x[i, k]
        s = 0.0
        for k in range(3):
            s += buf[k] * (k + 1.0) + math.sin(buf[(k + 1) % 3])
        out[i] = s


def local_scratch_numpy(x):
    buf = x[0] * x[0]
    return sum(buf[:, k] * (k + 1.0) + np.sin(buf[:, (k + 1) % 3]) for k in range(3))


def test_local_scratch_arrays_have_local_adjoints():
    x = np.random.default_rng(8).random((7, 3))
    w = np.random.default_rng(9).normal(size=7)
    out, x_bar = np.zeros(7), np.zeros_like(x)
    adj = adjit.cuda.adjoint_kernel(local_scratch_kernel, argnums=0)
    launch(adj, 7, x, out, x_bar, w.copy())
    np.testing.assert_allclose(out, local_scratch_numpy([x]), rtol=1e-14)
    np.testing.assert_allclose(x_bar, weighted_output_fd(lambda v: local_scratch_numpy([v]),
                                                         [x], 0, w), rtol=1e-7)
    src = adj.source
    assert "buf_bar = cuda.local.array(3, numba.float64)" in src and "np." not in src
    assert "x_bar[i, k] += " in src         # the thread's own row: plain updates


@cuda.jit
def local_array_of_a_run_time_size(x, n, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        buf = cuda.local.array(n, numba.float64)
        buf[0] = x[i]
        out[i] = buf[0] * 2.0


def test_local_arrays_of_a_run_time_size_are_refused():
    with pytest.raises(AdjitError, match="cuda.local.array with other than a constant shape"):
        adjit.cuda.adjoint_kernel(local_array_of_a_run_time_size, argnums=0).source_for(
            np.ones(4), 3, np.zeros(4))


@cuda.jit
def coefficient_by_parameter(x, coef, out, T):
    i = cuda.grid(1)
    if i < x.shape[0]:
        w = (coef[T], 2.0 * coef[T + 1], coef[0])
        s = 0.0
        for j in range(3):
            s += w[j] * x[i] ** (j + 1)
        out[i] = s


def test_an_int_parameter_named_T_is_not_the_thread_index():
    """coef[T] is read by every thread: its shadow is added to atomically (the ownership
    analysis' own symbols cannot clash with a parameter's name); a tuple indexed by a loop
    variable in a kernel."""
    x, coef = np.linspace(-1.0, 1.0, 9), np.array([0.5, -1.2, 0.8])
    w = np.random.default_rng(10).normal(size=9)
    out, coef_bar = np.zeros(9), np.zeros(3)
    adj = adjit.cuda.adjoint_kernel(coefficient_by_parameter, argnums=1)
    launch(adj, 9, x, coef, out, 1, coef_bar, w.copy())
    assert "cuda.atomic.add(coef_bar, T" in adj.source

    def numpy_version(x, coef):
        return coef[1] * x + 2.0 * coef[2] * x ** 2 + coef[0] * x ** 3
    np.testing.assert_allclose(out, numpy_version(x, coef), rtol=1e-14)
    np.testing.assert_allclose(coef_bar, weighted_output_fd(numpy_version, [x, coef], 1, w),
                               rtol=1e-7)


SCRATCH = 3


def scratch_model(x, y):
    buf = cuda.local.array(SCRATCH, numba.float64)      # sized by a module constant
    for k in range(SCRATCH):
        buf[k] = x * (k + 1.0) + y
    return buf[0] * buf[2] + math.sin(buf[1])


SCRATCH_GRAD = adjit.grad(scratch_model, argnums=(0, 1), target="cuda")


@cuda.jit
def use_scratch_gradient(x, gx, gy):
    i = cuda.grid(1)
    if i < x.shape[0]:
        a, b = SCRATCH_GRAD(x[i], 0.4)
        gx[i] = a
        gy[i] = b


def test_device_gradient_with_a_local_scratch_array():
    x = np.linspace(-1.0, 1.0, 7)
    gx, gy = np.zeros(7), np.zeros(7)
    launch(use_scratch_gradient, 7, x, gx, gy)
    b0, b1, b2 = x + 0.4, 2.0 * x + 0.4, 3.0 * x + 0.4
    np.testing.assert_allclose(gx, 1.0 * b2 + 3.0 * b0 + 2.0 * np.cos(b1), rtol=1e-13)
    np.testing.assert_allclose(gy, b2 + b0 + np.cos(b1), rtol=1e-13)


@cuda.jit
def early_return(x, p, out):
    i = cuda.grid(1)
    if i >= x.shape[0]:
        return
    out[i] = math.sin(p[0] * x[i]) * x[i]


def test_early_return_guard_as_numba_cuda_users_write_it():
    x = np.linspace(-1.0, 2.0, 37)
    p = np.array([1.3])
    w = np.random.default_rng(11).normal(size=37)
    out, x_bar, p_bar = np.zeros(37), np.zeros(37), np.zeros(1)
    adj = adjit.cuda.adjoint_kernel(early_return, argnums=(0, 1))
    launch(adj, 37, x, p, out, x_bar, p_bar, w.copy())

    def run(v, q):
        return np.sin(q[0] * v) * v
    np.testing.assert_allclose(out, run(x, p), rtol=1e-14)
    np.testing.assert_allclose(x_bar, weighted_output_fd(run, [x, p], 0, w), rtol=1e-7)
    np.testing.assert_allclose(p_bar, weighted_output_fd(run, [x, p], 1, w), rtol=1e-7)
    assert "x_bar[i] += " in adj.source       # the thread's own element: no atomic
