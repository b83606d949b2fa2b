"""Time-stepping simulations: the patterns explicit integrators are written in, each
differentiated through the whole time loop and checked against central finite differences.

Every function is a scalar loss of the final state (a weighted sum, so that the gradient is
not symmetric in the cells) as a function of the initial state and of a scalar parameter.
The patterns: copy-back loops, whole-array copy-back `u[:] = v`, in-place stencils (slice
`+=` and element loops), state in several arrays (velocity Verlet, leapfrog), pairwise
forces inside the time loop, `step(...)` helpers (plain and @njit) that write into arrays
passed to them, a step count that is an argument (zero included) or computed from a float,
nonlinear updates (sin, reaction terms) whose overwritten values the reverse sweep needs,
a scalar carried along an in-place sweep, misfits accumulated inside the time loop, an
early exit, and double buffering by reference swap (two buffers, and three time levels).

Each gradient object is built once at module level (numba compiles once per argument types).
"""
import math

import numba
import numpy as np
import pytest

import adjit

from fd import fd_grad

RNG = np.random.default_rng(20240605)


def _copy(args):
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def _primal(f):
    """f on copies of its arguments (several of these functions write their arguments)."""
    return lambda *a: f(*_copy(a))


def _weighted_square_sum(u):
    s = 0.0
    for i in range(u.shape[0]):
        s += (i + 1.0) * u[i] * u[i]
    return s


# ---------------------------------------------------------------------------------------
# (a) copy-back loops: stencil into a second array, then copy it back element by element

def heat_copyback(u0, alpha, steps):
    n = u0.shape[0]
    u = u0.copy()
    un = np.zeros(n)
    for t in range(steps):
        for i in range(1, n - 1):
            un[i] = u[i] + alpha * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        for i in range(1, n - 1):
            u[i] = un[i]
    s = 0.0
    for i in range(n):
        s += (i + 1.0) * u[i] * u[i]
    return s


def heat_copyback_2d(u0, alpha, steps):
    """2-D heat on an (n, m) grid, fixed boundary, copy-back loops over both axes."""
    n, m = u0.shape
    u = u0.copy()
    un = np.zeros((n, m))
    for t in range(steps):
        for i in range(1, n - 1):
            for j in range(1, m - 1):
                un[i, j] = u[i, j] + alpha * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1]
                                              + u[i, j + 1] - 4.0 * u[i, j])
        for i in range(1, n - 1):
            for j in range(1, m - 1):
                u[i, j] = un[i, j]
    s = 0.0
    for i in range(n):
        for j in range(m):
            s += (i + 2.0 * j + 1.0) * u[i, j] * u[i, j]
    return s


# ---------------------------------------------------------------------------------------
# (b) whole-array copy-back u[:] = v after computing v with vectorized numpy

def heat_whole_copy(u0, alpha, steps):
    n = u0.shape[0]
    u = u0.copy()
    lap = np.zeros(n)
    for t in range(steps):
        lap[1:-1] = u[2:] - 2.0 * u[1:-1] + u[:-2]
        v = u + alpha * lap
        u[:] = v
    return _weighted_square_sum(u)


def sine_whole_copy(u0, dt, steps):
    """u[:] = v with v a nonlinear, non-elementwise function of u (the boundary cells move)."""
    n = u0.shape[0]
    u = u0.copy()
    v = np.zeros(n)
    for t in range(steps):
        v[1:-1] = u[1:-1] + dt * np.sin(u[2:] - u[:-2]) + 0.3 * dt * u[1:-1] * u[1:-1]
        v[0] = u[0] + dt * np.sin(u[1])
        v[n - 1] = u[n - 1] - dt * np.sin(u[n - 2])
        u[:] = v
    return np.sum(np.linspace(1.0, 2.0, n) * u * u)


# ---------------------------------------------------------------------------------------
# (c) in-place stencil updates

def heat_inplace_slice(u0, alpha, steps):
    """numpy semantics: the right-hand side is computed before the store (a Jacobi step)."""
    u = u0.copy()
    for t in range(steps):
        u[1:-1] += alpha * (u[2:] - 2.0 * u[1:-1] + u[:-2])
    return _weighted_square_sum(u)


def gauss_seidel_inplace(u0, alpha, steps):
    """An element loop updating u in place: u[i-1] is already the new value when u[i] is
    computed, and the update is nonlinear, so every overwritten value matters."""
    n = u0.shape[0]
    u = u0.copy()
    for t in range(steps):
        for i in range(1, n - 1):
            u[i] = u[i] + alpha * (u[i - 1] - 2.0 * u[i] + u[i + 1]) + 0.1 * math.sin(u[i])
    return _weighted_square_sum(u)


def logistic_inplace(u0, r, steps):
    """Elementwise reaction u += dt r u (1 - u), an element loop then a whole-array +=."""
    n = u0.shape[0]
    u = u0.copy()
    dt = 0.1
    for t in range(steps):
        for i in range(n):
            u[i] += dt * r * u[i] * (1.0 - u[i])
        u += 0.5 * dt * r * u * (1.0 - u)
    return _weighted_square_sum(u)


def heat_writes_argument(u, alpha, steps):
    """The function integrates in its argument itself (no copy): the gradient is with
    respect to the value u had on entry."""
    for t in range(steps):
        u[1:-1] += alpha * (u[2:] - 2.0 * u[1:-1] + u[:-2])
    return _weighted_square_sum(u)


# ---------------------------------------------------------------------------------------
# (d) state in several arrays: velocity Verlet and leapfrog

def fpu_verlet(x0, v0, k, dt, steps):
    """A Fermi-Pasta-Ulam-like chain (quadratic + quartic springs, fixed ends) integrated with
    velocity Verlet; x, v and the force array a are all carried across steps."""
    n = x0.shape[0]
    x = x0.copy()
    v = v0.copy()
    a = np.zeros(n)
    for i in range(n):
        left = x[i] - x[i - 1] if i > 0 else x[i]
        right = x[i + 1] - x[i] if i < n - 1 else -x[i]
        a[i] = k * (right - left) + 0.5 * (right ** 3 - left ** 3)
    for t in range(steps):
        for i in range(n):
            v[i] += 0.5 * dt * a[i]
        for i in range(n):
            x[i] += dt * v[i]
        for i in range(n):
            left = x[i] - x[i - 1] if i > 0 else x[i]
            right = x[i + 1] - x[i] if i < n - 1 else -x[i]
            a[i] = k * (right - left) + 0.5 * (right ** 3 - left ** 3)
        for i in range(n):
            v[i] += 0.5 * dt * a[i]
    s = 0.0
    for i in range(n):
        s += (i + 1.0) * x[i] * x[i] + 0.5 * v[i] * v[i] * (n - i)
    return s


def pendulum_chain_leapfrog(q0, g, steps):
    """Vectorized leapfrog (kick-drift-kick with half steps merged) of pendula coupled by
    springs: p and q updated by slices, a nonlinear force np.sin(q)."""
    n = q0.shape[0]
    q = q0.copy()
    p = np.zeros(n)
    f = np.zeros(n)
    dt = 0.05
    f[:] = -g * np.sin(q)
    f[1:] += q[:-1] - q[1:]
    f[:-1] += q[1:] - q[:-1]
    p += 0.5 * dt * f
    for t in range(steps):
        q += dt * p
        f[:] = -g * np.sin(q)
        f[1:] += q[:-1] - q[1:]
        f[:-1] += q[1:] - q[:-1]
        p += dt * f
    return np.sum(np.linspace(1.0, 3.0, n) * q * q) + np.sum(p * p)


# ---------------------------------------------------------------------------------------
# (e) pairwise forces (O(n^2)) inside the time loop

def pair_md(x0, eps, steps):
    """2-D particles with a soft repulsion eps / (1 + r^2)^2 and a harmonic trap, integrated
    with velocity Verlet; the forces are recomputed by a double loop over pairs every step."""
    n = x0.shape[0]
    dt = 0.02
    x = x0.copy()
    v = np.zeros((n, 2))
    f = np.zeros((n, 2))
    for t in range(steps):
        for i in range(n):
            f[i, 0] = -x[i, 0]
            f[i, 1] = -x[i, 1]
        for i in range(n):
            for j in range(i + 1, n):
                dx = x[i, 0] - x[j, 0]
                dy = x[i, 1] - x[j, 1]
                d = 1.0 + dx * dx + dy * dy
                c = 4.0 * eps / (d * d * d)
                f[i, 0] += c * dx
                f[i, 1] += c * dy
                f[j, 0] -= c * dx
                f[j, 1] -= c * dy
        for i in range(n):
            v[i, 0] += dt * f[i, 0]
            v[i, 1] += dt * f[i, 1]
            x[i, 0] += dt * v[i, 0]
            x[i, 1] += dt * v[i, 1]
    s = 0.0
    for i in range(n):
        s += (i + 1.0) * x[i, 0] + x[i, 1] * x[i, 1] + v[i, 0] * v[i, 1]
    return s


# ---------------------------------------------------------------------------------------
# (f) step helpers that write into the arrays passed to them

def heat_step(u, un, alpha):
    n = u.shape[0]
    for i in range(1, n - 1):
        un[i] = u[i] + alpha * (u[i - 1] - 2.0 * u[i] + u[i + 1]) + 0.05 * math.sin(u[i])
    for i in range(1, n - 1):
        u[i] = un[i]


@numba.njit
def heat_step_njit(u, un, alpha):
    n = u.shape[0]
    for i in range(1, n - 1):
        un[i] = u[i] + alpha * (u[i - 1] - 2.0 * u[i] + u[i + 1]) + 0.05 * math.sin(u[i])
    for i in range(1, n - 1):
        u[i] = un[i]


def heat_with_helper(u0, alpha, steps):
    u = u0.copy()
    un = np.zeros(u0.shape[0])
    for t in range(steps):
        heat_step(u, un, alpha)
    return _weighted_square_sum(u)


def heat_with_njit_helper(u0, alpha, steps):
    u = u0.copy()
    un = np.zeros(u0.shape[0])
    for t in range(steps):
        heat_step_njit(u, un, alpha)
    return _weighted_square_sum(u)


def verlet_kick(v, a, h):
    for i in range(v.shape[0]):
        v[i] += h * a[i]


@numba.njit
def verlet_drift_and_force(x, v, a, k, dt):
    n = x.shape[0]
    for i in range(n):
        x[i] += dt * v[i]
    for i in range(n):
        a[i] = -k * x[i] - x[i] ** 3


def verlet_with_helpers(x0, k, steps):
    """Velocity Verlet of independent anharmonic oscillators, split over a plain helper (the
    kick) and an @njit helper (drift + force), both writing their arguments."""
    n = x0.shape[0]
    x = x0.copy()
    v = np.zeros(n)
    a = np.zeros(n)
    for i in range(n):
        a[i] = -k * x[i] - x[i] ** 3
    for t in range(steps):
        verlet_kick(v, a, 0.05)
        verlet_drift_and_force(x, v, a, k, 0.1)
        verlet_kick(v, a, 0.05)
    return _weighted_square_sum(x) + _weighted_square_sum(v)


# ---------------------------------------------------------------------------------------
# (g) a step count computed from arguments, and the time loop as a while loop

def heat_until(u0, alpha, t_end):
    """steps = int(t_end / dt) computed inside; a while loop over time."""
    n = u0.shape[0]
    dt = 0.25
    steps = int(t_end / dt)
    u = u0.copy()
    un = np.zeros(n)
    k = 0
    while k < steps:
        for i in range(1, n - 1):
            un[i] = u[i] + alpha * dt * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        for i in range(1, n - 1):
            u[i] = un[i]
        k += 1
    return _weighted_square_sum(u)


# ---------------------------------------------------------------------------------------
# (h) nonlinear reaction-diffusion (Fisher-KPP), copy-back loops with updated boundaries

def fisher_kpp(u0, r, steps):
    n = u0.shape[0]
    d = 0.2
    dt = 0.1
    u = u0.copy()
    un = np.zeros(n)
    for t in range(steps):
        un[0] = u[0] + d * (u[1] - u[0]) + dt * r * u[0] * (1.0 - u[0])
        for i in range(1, n - 1):
            un[i] = (u[i] + d * (u[i - 1] - 2.0 * u[i] + u[i + 1])
                     + dt * r * u[i] * (1.0 - u[i]))
        un[n - 1] = u[n - 1] + d * (u[n - 2] - u[n - 1]) + dt * r * u[n - 1] * (1.0 - u[n - 1])
        for i in range(n):
            u[i] = un[i]
    return _weighted_square_sum(u)


# ---------------------------------------------------------------------------------------
# more shapes of time loops: a scalar carried along the sweep, observations compared inside
# the loop, Runge-Kutta stages in helpers, an early exit

def jacobi_scalar_carry(u0, alpha, steps):
    """An in-place sweep that keeps the old left neighbour in a scalar (a Jacobi step
    without a second array)."""
    n = u0.shape[0]
    u = u0.copy()
    for t in range(steps):
        prev = u[0]
        for i in range(1, n - 1):
            cur = u[i]
            u[i] = cur + alpha * (prev - 2.0 * cur + u[i + 1]) + 0.1 * math.sin(cur)
            prev = cur
    return _weighted_square_sum(u)


def heat_observed(u0, alpha, steps, obs):
    """A misfit accumulated every step against observations of two cells."""
    n = u0.shape[0]
    u = u0.copy()
    un = np.zeros(n)
    misfit = 0.0
    for t in range(steps):
        for i in range(1, n - 1):
            un[i] = u[i] + alpha * (u[i - 1] - 2.0 * u[i] + u[i + 1]) * (1.0 + 0.5 * u[i])
        for i in range(1, n - 1):
            u[i] = un[i]
        d = u[2] - obs[t, 0]
        e = u[5] - obs[t, 1]
        misfit += d * d + 2.0 * e * e
    return misfit


def rhs_into(u, out, k):
    out[:] = -k * u + np.sin(u)


def heun_with_helper(u0, k, steps):
    """Heun's method (RK2) with a right-hand-side helper that writes its result array."""
    n = u0.shape[0]
    u = u0.copy()
    k1 = np.zeros(n)
    k2 = np.zeros(n)
    tmp = np.zeros(n)
    h = 0.1
    for t in range(steps):
        rhs_into(u, k1, k)
        tmp[:] = u + h * k1
        rhs_into(tmp, k2, k)
        u += 0.5 * h * (k1 + k2)
    return _weighted_square_sum(u)


def heat_until_threshold(u0, alpha, steps):
    """Leaves the time loop early once the third cell warms past 0.4 (after 7 of the steps
    with the test's data, at least 0.01 away from the threshold at every step)."""
    u = u0.copy()
    for t in range(steps):
        u[1:-1] += alpha * (u[2:] - 2.0 * u[1:-1] + u[:-2]) + 0.05 * np.sin(u[1:-1])
        if u[2] > 0.4:
            break
    return _weighted_square_sum(u)


# ---------------------------------------------------------------------------------------
# (i) double buffering by reference swap

def heat_swap(u0, alpha, steps):
    n = u0.shape[0]
    u = u0.copy()
    v = u0.copy()
    for t in range(steps):
        for i in range(1, n - 1):
            v[i] = u[i] + alpha * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        u, v = v, u
    return _weighted_square_sum(u)


def swap_into_zeros(u0, alpha, steps):
    """The second buffer starts at zero and its boundary cells are never written, so the
    result depends on which buffer u names after the loop (the parity of steps); the loss
    reads both buffers."""
    n = u0.shape[0]
    u = u0.copy()
    v = np.zeros(n)
    for t in range(steps):
        for i in range(1, n - 1):
            v[i] = u[i] + alpha * (u[i - 1] - 2.0 * u[i] + u[i + 1]) + 0.1 * math.sin(u[i])
        u, v = v, u
    return _weighted_square_sum(u) + 0.5 * np.sum(v * v)


def wave_three_levels(u0, c2, steps):
    """The wave equation's three-level scheme with a cubic term, the time levels rotated by
    `prev, cur, nxt = cur, nxt, prev`."""
    n = u0.shape[0]
    prev = u0.copy()
    cur = u0.copy()
    nxt = np.zeros(n)
    for t in range(steps):
        for i in range(1, n - 1):
            nxt[i] = (2.0 * cur[i] - prev[i] + c2 * (cur[i - 1] - 2.0 * cur[i] + cur[i + 1])
                      - 0.1 * cur[i] ** 3)
        prev, cur, nxt = cur, nxt, prev
    return _weighted_square_sum(cur) + np.sum(np.linspace(2.0, 1.0, n) * prev)


# ---------------------------------------------------------------------------------------
# Cases: (function, args, argnums). Sizes: 6..12 cells or particles, 3..20 steps.

U8 = RNG.random(8)
U10 = 0.5 + 0.4 * RNG.random(10)          # in (0, 1) for the logistic reactions
U2D = RNG.random((6, 7))
X12 = 0.3 * RNG.normal(size=12)
V12 = 0.3 * RNG.normal(size=12)
Q9 = RNG.normal(size=9)
P6 = np.array([[0.0, 0.0], [1.1, 0.1], [-0.2, 0.9], [0.8, -1.0], [-1.0, -0.5], [0.3, 1.9]])
P6 = P6 + 0.05 * RNG.normal(size=P6.shape)
OBS = RNG.random((6, 2))

CASES = [
    ("copyback", heat_copyback, (U8, 0.2, 12), (0, 1)),
    ("copyback-2d", heat_copyback_2d, (U2D, 0.15, 6), (0, 1)),
    ("whole-copy", heat_whole_copy, (U8, 0.2, 12), (0, 1)),
    ("whole-copy-sine", sine_whole_copy, (U10, 0.1, 15), (0, 1)),
    ("inplace-slice", heat_inplace_slice, (U8, 0.2, 12), (0, 1)),
    ("gauss-seidel", gauss_seidel_inplace, (U8, 0.2, 10), (0, 1)),
    ("logistic-inplace", logistic_inplace, (U10, 1.3, 8), (0, 1)),
    ("writes-argument", heat_writes_argument, (U8, 0.2, 12), (0, 1)),
    ("fpu-verlet", fpu_verlet, (X12, V12, 0.8, 0.1, 20), (0, 1, 2)),
    ("leapfrog-vectorized", pendulum_chain_leapfrog, (Q9, 1.5, 20), (0, 1)),
    ("pair-md", pair_md, (P6, 0.7, 10), (0, 1)),
    ("plain-helper", heat_with_helper, (U8, 0.2, 10), (0, 1)),
    ("njit-helper", heat_with_njit_helper, (U8, 0.2, 10), (0, 1)),
    ("verlet-helpers", verlet_with_helpers, (X12, 0.9, 15), (0, 1)),
    ("while-t_end", heat_until, (U8, 0.6, 3.0), (0, 1)),
    ("fisher-kpp", fisher_kpp, (U10, 2.0, 15), (0, 1)),
    ("scalar-carry", jacobi_scalar_carry, (U8, 0.2, 9), (0, 1)),
    ("observed-in-loop", heat_observed, (U8, 0.2, 6, OBS), (0, 1, 3)),
    ("heun-helper", heun_with_helper, (U10, 0.7, 8), (0, 1)),
    ("early-exit", heat_until_threshold, (U8, 0.2, 20), (0, 1)),
]

GRADS = {name: adjit.grad(f, argnums=argnums) for name, f, _, argnums in CASES}
VALUE_AND_GRADS = {name: adjit.value_and_grad(f, argnums=argnums)
                   for name, f, _, argnums in CASES}
_IDS = [c[0] for c in CASES]
# the finite differences of each case, computed once (several tests compare with them)
_FD = {}


def _fd(name, f, args, argnums):
    if name not in _FD:
        _FD[name] = tuple(fd_grad(_primal(f), _copy(args), k) for k in argnums)
    return _FD[name]


def _assert_close_to_fd(name, got, f, args, argnums):
    for k, value, expected in zip(argnums, got, _fd(name, f, args, argnums)):
        assert np.shape(value) == np.shape(args[k])
        assert np.all(np.isfinite(value))
        # central differences with h=1e-6 on O(1)..O(100) losses: ~1e-8 absolute noise
        np.testing.assert_allclose(value, expected, rtol=1e-6, atol=1e-6,
                                   err_msg=f"{name}: d/d arg {k}")


@pytest.mark.parametrize("name, f, args, argnums", CASES, ids=_IDS)
def test_gradient_matches_finite_differences(name, f, args, argnums):
    passed = _copy(args)
    got = GRADS[name](*passed)
    _assert_close_to_fd(name, got, f, args, argnums)
    # no case is trivial: every requested gradient is clearly nonzero
    for value in got:
        assert np.abs(value).max() > 1e-3
    # the arguments are not changed (except by the function that writes its argument)
    if f is not heat_writes_argument:
        for a, b in zip(passed, args):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name, f, args, argnums", CASES, ids=_IDS)
def test_value_and_grad(name, f, args, argnums):
    value, grads = VALUE_AND_GRADS[name](*_copy(args))
    assert value == pytest.approx(f(*_copy(args)), rel=1e-12, abs=1e-13)
    _assert_close_to_fd(name, grads, f, args, argnums)


def test_gradient_of_a_function_that_writes_its_argument_repeats_the_writes():
    """adjit's contract: when f writes its argument, the gradient performs the same writes."""
    u = U8.copy()
    GRADS["writes-argument"](u, 0.2, 12)
    expected = U8.copy()
    heat_writes_argument(expected, 0.2, 12)
    np.testing.assert_allclose(u, expected, rtol=1e-14)


# ---------------------------------------------------------------------------------------
# (g) the step count as an argument, zero steps included

@pytest.mark.parametrize("steps", [0, 1, 3, 17])
def test_number_of_steps_is_an_argument(steps):
    g = GRADS["copyback"]
    got = g(U8.copy(), 0.2, steps)
    _check_against_fd(heat_copyback, (U8, 0.2, steps), got, (0, 1))
    if steps == 0:
        # nothing happens: d/du0 sum (i+1) u0_i^2 = 2 (i+1) u0_i, and alpha is unused
        np.testing.assert_allclose(got[0], 2.0 * np.arange(1.0, 9.0) * U8, rtol=1e-14)
        assert got[1] == 0.0


@pytest.mark.parametrize("steps", [0, 2, 11])
def test_number_of_steps_vectorized_and_helpers(steps):
    for name, f, args in (("inplace-slice", heat_inplace_slice, (U8, 0.2, steps)),
                          ("njit-helper", heat_with_njit_helper, (U8, 0.2, steps)),
                          ("fpu-verlet", fpu_verlet, (X12, V12, 0.8, 0.1, steps))):
        argnums = (0, 1, 2) if f is fpu_verlet else (0, 1)
        value, got = VALUE_AND_GRADS[name](*_copy(args))
        assert value == pytest.approx(f(*_copy(args)), rel=1e-12)
        _check_against_fd(f, args, got, argnums)


@pytest.mark.parametrize("t_end", [0.0, 0.2, 1.0, 2.6])
def test_while_loop_steps_from_a_float(t_end):
    got = GRADS["while-t_end"](U8.copy(), 0.6, t_end)
    _check_against_fd(heat_until, (U8, 0.6, t_end), got, (0, 1))


def _check_against_fd(f, args, got, argnums):
    for k, value in zip(argnums, got):
        expected = fd_grad(_primal(f), _copy(args), k)
        np.testing.assert_allclose(value, expected, rtol=1e-6, atol=1e-6,
                                   err_msg=f"{f.__name__}{args[2:]}: d/d arg {k}")


# ---------------------------------------------------------------------------------------
# the same gradients called from @njit code (a driver loop differentiating each step count)

@numba.njit
def _njit_driver(u0, alpha, max_steps):
    out = np.zeros((max_steps + 1, u0.shape[0] + 1))
    for steps in range(max_steps + 1):
        gu, ga = _COPYBACK_GRAD(u0, alpha, steps)
        out[steps, :-1] = gu
        out[steps, -1] = ga
    return out


_COPYBACK_GRAD = GRADS["copyback"]


def test_called_from_njit_code():
    out = _njit_driver(U8.copy(), 0.2, 4)
    for steps in range(5):
        gu, ga = GRADS["copyback"](U8.copy(), 0.2, steps)
        np.testing.assert_array_equal(out[steps, :-1], gu)
        assert out[steps, -1] == ga
    # and they are the finite differences'
    _check_against_fd(heat_copyback, (U8, 0.2, 4), (out[4, :-1], out[4, -1]), (0, 1))


# ---------------------------------------------------------------------------------------
# the overwritten values matter: a gradient recomputed from final values would be wrong

def test_nonlinear_gradient_depends_on_the_trajectory():
    """The gradient of logistic_inplace against the forward-mode recursion of the map
    u' = u + h r u (1 - u):  du'/dr = (1 + h r (1 - 2 u)) du/dr + h u (1 - u), applied twice
    per step as logistic_inplace does (h = dt, then h = dt / 2)."""
    r = 1.3
    u = U10.copy()
    du_dr = np.zeros_like(u)
    du_du0 = np.ones_like(u)
    for t in range(8):
        for h in (0.1, 0.05):
            du_dr = (1.0 + h * r * (1.0 - 2.0 * u)) * du_dr + h * u * (1.0 - u)
            du_du0 = (1.0 + h * r * (1.0 - 2.0 * u)) * du_du0
            u = u + h * r * u * (1.0 - u)
    w = np.arange(1.0, 11.0)
    gu0, gr = GRADS["logistic-inplace"](U10.copy(), r, 8)
    np.testing.assert_allclose(gr, np.sum(2.0 * w * u * du_dr), rtol=1e-12)
    np.testing.assert_allclose(gu0, 2.0 * w * u * du_du0, rtol=1e-12)


def test_early_exit_happens_inside_the_loop():
    """The early-exit case really leaves after 7 steps (so its check covers a break)."""
    assert heat_until_threshold(U8.copy(), 0.2, 20) == heat_until_threshold(U8.copy(), 0.2, 7)
    assert heat_until_threshold(U8.copy(), 0.2, 20) != heat_until_threshold(U8.copy(), 0.2, 6)


# ---------------------------------------------------------------------------------------
# (i) reference swap (`u, v = v, u`; adjit up to cd9d3bb refused it with "the array variable
# 'u' is reassigned"), every parity of the step count

SWAPS = {f: adjit.value_and_grad(f, argnums=(0, 1))
         for f in (heat_swap, swap_into_zeros, wave_three_levels)}


@pytest.mark.parametrize("steps", [0, 1, 4, 7])
@pytest.mark.parametrize("f, param", [(heat_swap, 0.2), (swap_into_zeros, 0.2),
                                      (wave_three_levels, 0.3)],
                         ids=["heat", "zeros", "three-levels"])
def test_double_buffering_by_reference_swap(f, param, steps):
    args = (U8, param, steps)
    value, got = SWAPS[f](*_copy(args))
    assert value == pytest.approx(f(*_copy(args)), rel=1e-12)
    _check_against_fd(f, args, got, (0, 1))


def test_recorded_slots_are_read_with_an_unsigned_index():
    """The values a stencil step records sit in slots computed from the step's base
    (`_fbase1 + (i - 1)`). The generated code indexes them with an unsigned integer, so
    numba does not test each slot for a negative index (which keeps the loop from loading
    vectors); the gradient is the same."""
    name = "copyback"
    g = GRADS[name]
    args = next(c[2] for c in CASES if c[0] == name)
    _assert_close_to_fd(name, g(*_copy(args)), heat_copyback, args, (0, 1))
    source = g.source
    slots = [line.strip() for line in source.splitlines() if "_ftape[" in line and "_fbase" in line]
    assert slots, source
    assert all("_ftape[np.uint64(_fbase" in line for line in slots), slots
