"""Gradients through time loops of CUDA kernel launches (adjit.cuda.time_loop).

Every gradient is checked against central finite differences of a NumPy re-implementation
of the same step, never against adjit. In CI the kernels run in numba's CUDA simulator
(tests/conftest.py); on a GPU machine run the file with NUMBA_ENABLE_CUDASIM=0. The simulator
runs each CUDA thread as a Python thread: grids are small, steps few, and the kernels (and
their adjoints, compiled once) are shared by the tests.
"""
import math
import sys

import numpy as np
import pytest

cuda = pytest.importorskip("numba.cuda")

import adjit  # noqa: E402
import adjit.cuda  # noqa: E402
from adjit import AdjitError  # noqa: E402
from fd import fd_weighted  # noqa: E402

pytestmark = pytest.mark.cuda


@pytest.fixture(autouse=True, scope="module")
def _fast_simulator_threads():
    """The simulator's threads wait for each other at every cuda.syncthreads() (the block
    sums of the parameters' adjoints): a short thread switch interval makes that fast."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)
    yield
    sys.setswitchinterval(interval)


# the 2-D heat step, as users write it: boundary copied, interior explicit Euler -----------

@cuda.jit
def heat_step(u, alpha, u_new):
    i, j = cuda.grid(2)
    n, m = u.shape
    if i < n and j < m:
        if i == 0 or j == 0 or i == n - 1 or j == m - 1:
            u_new[i, j] = u[i, j]
        else:
            u_new[i, j] = u[i, j] + alpha[0] * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1]
                                                + u[i, j + 1] - 4.0 * u[i, j])


def heat_numpy(u, alpha, steps):
    u = u.copy()
    for _ in range(steps):
        v = u.copy()
        v[1:-1, 1:-1] += alpha[0] * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]
                                     - 4.0 * u[1:-1, 1:-1])
        u = v
    return u


HEAT = adjit.cuda.time_loop(heat_step, state=(0, 2), params=(1,))
HEAT_GRID = ((2, 2), (6, 5))          # 4 blocks of 6 x 5 threads over a 12 x 10 field


@pytest.fixture(scope="module")
def heat_case():
    rng = np.random.default_rng(0)
    u0, alpha, w = rng.random((12, 10)), np.array([0.2]), rng.normal(size=(12, 10))
    steps = 20
    kept = (u0.copy(), alpha.copy(), w.copy())
    fwd = HEAT.forward[HEAT_GRID](u0, alpha, steps, snapshots=3)
    u0_bar, alpha_bar = (g.copy_to_host() for g in fwd.backward(w))
    return dict(u0=u0, alpha=alpha, w=w, steps=steps, kept=kept, fwd=fwd, u0_bar=u0_bar,
                alpha_bar=alpha_bar)


def test_heat_2d_gradients_match_finite_differences(heat_case):
    c = heat_case
    u0, alpha, w, steps = c["u0"], c["alpha"], c["w"], c["steps"]
    np.testing.assert_allclose(c["fwd"].state.copy_to_host(), heat_numpy(u0, alpha, steps),
                               rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(c["u0_bar"], fd_weighted(heat_numpy, [u0, alpha, steps], 0, w),
                               rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(c["alpha_bar"], fd_weighted(heat_numpy, [u0, alpha, steps], 1, w),
                               rtol=1e-7)
    # 3 snapshots for 20 steps: each step recomputed at most twice, every step reversed once
    stats = c["fwd"].stats
    assert stats["snapshots"] == 3 and stats["levels"] == 1
    assert stats["adjoint_launches"] == steps
    assert steps < stats["forward_launches"] <= 3 * steps
    for given, kept in zip((u0, alpha, w), c["kept"]):           # nothing passed is mutated
        np.testing.assert_array_equal(given, kept)
    u_T = HEAT.run[HEAT_GRID](u0, alpha, steps)
    np.testing.assert_array_equal(u_T.copy_to_host(), c["fwd"].state.copy_to_host())


# 1-D: several parameters, a scalar passed through, a boundary the kernel never writes -----

@cuda.jit
def reaction_diffusion(d, u, r, u_new, dt):
    i = cuda.grid(1)
    n = u.shape[0]
    if i > 0 and i < n - 1:
        lap = u[i - 1] - 2.0 * u[i] + u[i + 1]
        u_new[i] = u[i] + dt * (d[0] * lap + r[0] * u[i] * (1.0 - u[i]) + r[1] * math.sin(u[i]))


def reaction_diffusion_numpy(u, d, r, dt, steps):
    u = u.copy()
    for _ in range(steps):
        v = u.copy()                   # the ends are never written: they keep their values
        c = u[1:-1]
        v[1:-1] = c + dt * (d[0] * (u[:-2] - 2.0 * c + u[2:]) + r[0] * c * (1.0 - c)
                            + r[1] * np.sin(c))
        u = v
    return u


RD = adjit.cuda.time_loop(reaction_diffusion, state=(1, 3), params=(0, 2))
RD_GRID = (1, 16)


@pytest.fixture(scope="module")
def rd_case():
    rng = np.random.default_rng(1)
    c = dict(u0=rng.random(13), d=np.array([0.3]), r=np.array([0.5, -0.2]), dt=0.4,
             steps=12, w=rng.normal(size=13))
    every = RD.vjp[RD_GRID](c["d"], c["u0"], c["r"], c["dt"], c["steps"], c["w"], snapshots=12)
    c["every_state_kept"] = [g.copy_to_host() for g in every]
    return c


def test_1d_several_parameters_match_finite_differences(rd_case):
    c = rd_case
    u0, d, r, dt, steps, w = c["u0"], c["d"], c["r"], c["dt"], c["steps"], c["w"]
    kept = [a.copy() for a in (u0, d, r, w)]
    fwd = RD.forward[RD_GRID](d, u0, r, dt, steps, snapshots=2)
    np.testing.assert_allclose(fwd.state.copy_to_host(),
                               reaction_diffusion_numpy(u0, d, r, dt, steps), rtol=1e-14)
    grads = [g.copy_to_host() for g in fwd.backward(w)]      # (u0_bar, d_bar, r_bar)
    args = [u0, d, r, dt, steps]
    for k, g in enumerate(grads):
        np.testing.assert_allclose(g, fd_weighted(reaction_diffusion_numpy, args, k, w),
                                   rtol=1e-7, atol=1e-9)
    assert grads[0][0] != 0.0 and grads[0][-1] != 0.0       # the ends reach the interior
    for given, k in zip((u0, d, r, w), kept):
        np.testing.assert_array_equal(given, k)
    # a second backward (the forward pass runs again): linear in the cotangent
    stats = dict(fwd.stats)
    again = [g.copy_to_host() for g in fwd.backward(2.0 * w)]
    assert fwd.stats == stats
    for g, g2 in zip(grads, again):
        np.testing.assert_allclose(g2, 2.0 * g, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("snapshots", [1, 3, 5, 12, None])
def test_1d_any_number_of_snapshots_gives_the_same_gradient(rd_case, snapshots):
    c = rd_case
    args = (c["d"], c["u0"], c["r"], c["dt"], c["steps"])
    fwd = RD.forward[RD_GRID](*args, snapshots=snapshots)
    grads = [g.copy_to_host() for g in fwd.backward(c["w"])]
    for g, g_ref in zip(grads, c["every_state_kept"]):
        np.testing.assert_allclose(g, g_ref, rtol=1e-12, atol=1e-15)
    steps, stats = c["steps"], fwd.stats
    s = stats["snapshots"]
    assert s == (min(snapshots, steps) if snapshots else 4)      # None: about sqrt(steps)
    assert stats["adjoint_launches"] == steps
    # the binomial schedule: each step runs forward at most r + 1 times, C(s + r, s) >= steps
    r = next(r for r in range(steps + 1) if math.comb(s + r, s) >= steps)
    assert stats["forward_launches"] <= steps * (r + 1)
    if snapshots == 1:
        assert stats["forward_launches"] == steps + steps * (steps - 1) // 2
    if snapshots == 12:
        assert stats["forward_launches"] == steps


def test_device_arrays_in_are_left_as_they_were(rd_case):
    c = rd_case
    d, u0, r, w = (cuda.to_device(c[k]) for k in ("d", "u0", "r", "w"))
    grads = RD.vjp[RD_GRID](d, u0, r, c["dt"], c["steps"], w, snapshots=12)
    for g, g_ref in zip(grads, c["every_state_kept"]):
        np.testing.assert_allclose(g.copy_to_host(), g_ref, rtol=1e-13, atol=1e-15)
    for given, k in zip((d, u0, r, w), ("d", "u0", "r", "w")):
        np.testing.assert_array_equal(given.copy_to_host(), c[k])
    u_T = RD.run[RD_GRID](d, u0, r, c["dt"], c["steps"])
    np.testing.assert_allclose(u_T.copy_to_host(), reaction_diffusion_numpy(
        c["u0"], c["d"], c["r"], c["dt"], c["steps"]), rtol=1e-14)


def test_scalar_cotangent_and_zero_steps(rd_case):
    c = rd_case
    args = (c["d"], c["u0"], c["r"], c["dt"])
    ones = [g.copy_to_host() for g in RD.vjp[RD_GRID](*args, 5, np.ones(13), snapshots=2)]
    scalar = [g.copy_to_host() for g in RD.vjp[RD_GRID](*args, 5, 1.0, snapshots=2)]
    for a, b in zip(ones, scalar):
        np.testing.assert_array_equal(a, b)
    u0_bar, d_bar, r_bar = (g.copy_to_host() for g in RD.vjp[RD_GRID](*args, 0, c["w"]))
    np.testing.assert_array_equal(u0_bar, c["w"])
    assert not d_bar.any() and not r_bar.any()
    u_T = RD.run[RD_GRID](*args, steps=0)
    np.testing.assert_array_equal(u_T.copy_to_host(), c["u0"])


def test_buffers_are_allocated_once_per_call_not_per_step(rd_case, monkeypatch):
    c = rd_case
    made = []
    for name in ("device_array", "to_device", "device_array_like"):
        real = getattr(cuda, name)
        monkeypatch.setattr(cuda, name, lambda *a, _real=real, **k: made.append(1) or
                            _real(*a, **k))

    def allocations(steps):
        made.clear()
        RD.vjp[RD_GRID](c["d"], c["u0"], c["r"], c["dt"], steps, c["w"], snapshots=2)
        return len(made)

    assert allocations(3) == allocations(9)


# a scheme with two time levels: the kernel reads the buffer it writes -----------------------

@cuda.jit
def wave_step(u, c2, gamma, u_prev):
    """Damped leapfrog: u_prev is overwritten with the next state (ends fixed)."""
    i = cuda.grid(1)
    n = u.shape[0]
    if i > 0 and i < n - 1:
        lap = u[i - 1] - 2.0 * u[i] + u[i + 1]
        u_prev[i] = (2.0 * u[i] - (1.0 - gamma[0]) * u_prev[i] + c2[0] * lap) / (1.0 + gamma[0])


def wave_numpy(u, c2, gamma, steps):
    u, prev = u.copy(), u.copy()            # the second buffer starts as the initial state
    for _ in range(steps):
        new = prev.copy()
        c = u[1:-1]
        new[1:-1] = (2.0 * c - (1.0 - gamma[0]) * prev[1:-1] + c2[0] * (u[:-2] - 2.0 * c
                                                                        + u[2:])) / (1.0 + gamma[0])
        prev, u = u, new
    return u


WAVE = adjit.cuda.time_loop(wave_step, state=(0, 3), params=(1, 2))


def test_two_level_scheme_snapshots_both_buffers():
    rng = np.random.default_rng(2)
    u0, c2, gamma, w = rng.random(12), np.array([0.3]), np.array([0.05]), rng.normal(size=12)
    steps = 10
    assert WAVE.levels == 2 and HEAT.levels == 1 and RD.levels == 1
    fwd = WAVE.forward[(1, 12)](u0, c2, gamma, steps, snapshots=3)
    np.testing.assert_allclose(fwd.state.copy_to_host(), wave_numpy(u0, c2, gamma, steps),
                               rtol=1e-13, atol=1e-14)
    grads = [g.copy_to_host() for g in fwd.backward(w)]
    assert fwd.stats["levels"] == 2 and fwd.stats["forward_launches"] > steps
    for k, g in enumerate(grads):
        np.testing.assert_allclose(g, fd_weighted(wave_numpy, [u0, c2, gamma, steps], k, w),
                                   rtol=1e-7, atol=1e-8)
    every = [g.copy_to_host() for g in WAVE.vjp[(1, 12)](u0, c2, gamma, steps, w, snapshots=10)]
    for g, g_all in zip(grads, every):
        np.testing.assert_allclose(g, g_all, rtol=1e-12, atol=1e-15)


# what a user can get wrong ------------------------------------------------------------------

@cuda.jit
def two_outputs(u, a, u_new, flux):
    i = cuda.grid(1)
    if i < u.shape[0]:
        flux[i] = a[0] * u[i]
        u_new[i] = u[i] - flux[i]


@cuda.jit
def writes_its_parameter(u, k, u_new):
    i = cuda.grid(1)
    if i < u.shape[0]:
        u_new[i] = k[i] * u[i]
        k[i] = 2.0 * k[i]


@pytest.mark.parametrize("state, params, match", [
    ((0, 0), (1,), "both the state read and the state written"),
    ((0, 5), (1,), "state position 5 is out of range"),
    (0, (1,), "is not a pair of argument positions"),
    ((0, 2), (2,), "params names argument 'u_new', which is part of state"),
    ((0, 2), (1, 1), "names argument 'alpha' twice"),
    ((0, 2), ("alpha",), "is not an int or a tuple of ints"),
])
def test_bad_positions_are_refused(state, params, match):
    with pytest.raises(AdjitError, match=match) as info:
        adjit.cuda.time_loop(heat_step, state=state, params=params)
    assert "kernel 'heat_step'" in str(info.value)


U0, ALPHA = np.ones((4, 5)), np.array([0.1])


@pytest.mark.parametrize("call, match", [
    (lambda: HEAT.run[HEAT_GRID](U0, ALPHA, -1), "steps=-1 is not a number of steps"),
    (lambda: HEAT.run[HEAT_GRID](U0, ALPHA, 2.5), "steps=2.5 is not a number of steps"),
    (lambda: HEAT.run[HEAT_GRID](U0, 0.1, 3), r"one-element array \(np.array\(\[alpha\]\)\)"),
    (lambda: HEAT.run[HEAT_GRID](U0, np.array([1]), 3), "'alpha' has dtype int64"),
    (lambda: HEAT.run[HEAT_GRID](U0.astype(int), ALPHA, 3), "state 'u' has dtype int64"),
    (lambda: HEAT.run[HEAT_GRID](3.0, ALPHA, 3), "state 'u' is a float, not an array"),
    (lambda: HEAT.run[HEAT_GRID](U0, ALPHA, U0, 3), r"takes 3 arguments \(u, alpha, steps\)"),
    (lambda: HEAT.vjp[HEAT_GRID](U0, ALPHA, 3), r"vjp takes 4 arguments"),
    (lambda: HEAT.vjp[HEAT_GRID](U0, ALPHA, 3, np.ones(3)), r"cotangent has shape \(3,\)"),
    (lambda: HEAT.vjp[HEAT_GRID](U0, ALPHA, 3, U0, snapshots=0), "snapshots=0 is not a"),
    (lambda: HEAT.run(U0, ALPHA, 3), r"launched with a grid, as its kernel. Write loop.run\[blocks, threads\]"),
    (lambda: adjit.cuda.time_loop(heat_step, state=(2, 0), params=(1,)).run[HEAT_GRID](
        ALPHA, U0, 3), r"state=\(2, 0\) looks swapped.*here state=\(0, 2\)"),
    (lambda: adjit.cuda.time_loop(two_outputs, state=(0, 2), params=(1,)).run[(1, 8)](
        np.ones(4), ALPHA, np.zeros(4), 3), "writes 'flux' besides its output state 'u_new'"),
    (lambda: adjit.cuda.time_loop(writes_its_parameter, state=(0, 2), params=(1,)).run[(1, 8)](
        np.ones(4), np.ones(4), 3), "writes 'k' besides its output state 'u_new'"),
])
def test_bad_arguments_are_refused(call, match):
    with pytest.raises(AdjitError, match=match) as info:
        call()
    assert "time_loop of kernel '" in str(info.value)


def test_cuda_heat_inverse_example():
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).resolve().parent.parent / "examples" / "cuda_heat_inverse.py"
    spec = importlib.util.spec_from_file_location("cuda_heat_inverse", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    r = module.main(n=8, steps=3, alpha_start=0.15, noise=0.0, snapshots=2)
    assert r["grad_err"] < 1e-6
    assert abs(r["alpha_fit"] - r["alpha_true"]) < 1e-5 * r["alpha_true"]
    assert r["stats"]["snapshots"] == 2 and r["stats"]["adjoint_launches"] == 3
