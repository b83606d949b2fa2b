"""Checkpointed time loops (grad(..., checkpoint=...)) and tape accounting / limits.

* the binomial schedule reverses every step exactly once, in order, from states it really
  reached, within its snapshot budget, recomputing as few steps as an exhaustive search;
* checkpointed gradients equal the uncheckpointed ones bit for bit, for many loop shapes and
  snapshot counts (in the interpreter for breadth, compiled for a few), and match central
  finite differences;
* the tape of a checkpointed loop does not grow with the number of steps; tape_limit
  raises an AdjitError naming the function and what to do.
"""
import functools
import math
import re
import sys

import numba
import numpy as np
import pytest

import adjit
from adjit import AdjitError
from adjit.api import _Mode
from adjit.runtime import checkpoint as ck
from adjit.runtime import tape
from adjit.transform import build
from fd import fd_grad
from programs import overwrite_same_element as cos_recurrence
from test_vector_math import summed_exponentials as exp_sum


# the schedule -----------------------------------------------------------------------------

def _run_schedule(steps, snapshots):
    """Simulate the schedule on 'states' that are step numbers; returns the advances."""
    pos = ck.descent(steps, snapshots)
    snaps, k = {}, 0
    for j in range(steps):
        if pos[k] == j:
            snaps[k] = j
            k += 1
    cur, reversed_steps, slots = steps, [], set(snaps)
    st = ck.start(steps, snapshots)
    while True:
        action = ck.next_action(st)
        if action == ck.DONE:
            break
        a, b = st[1], st[2]
        if action == ck.RESTORE:
            cur = snaps[a]
        elif action == ck.ADVANCE:
            assert cur == a
            cur = b
        elif action == ck.SAVE:
            snaps[a] = cur
            slots.add(a)
        else:
            assert action == ck.STEP and cur == a
            reversed_steps.append(a)
            cur = a + 1
    assert reversed_steps == list(range(steps - 1, -1, -1))
    assert not slots or max(slots) < max(1, min(snapshots, steps))
    advanced, taped = ck.recomputed(st)
    assert taped == steps
    return advanced + (max(p for p in pos if p >= 0) if steps else 0)


@functools.lru_cache(None)
def _fewest_advances(length, free):
    """Exhaustive search: fewest steps advanced to reverse `length` steps whose start is
    stored, with `free` more snapshot slots."""
    if length <= 1:
        return 0
    if free == 0:
        return length * (length - 1) // 2
    return min(d + _fewest_advances(length - d, free - 1) + _fewest_advances(d, free)
               for d in range(1, length))


@pytest.mark.parametrize("snapshots", [1, 2, 3, 4, 6])
def test_schedule_reverses_every_step_with_fewest_recomputations(snapshots):
    for steps in range(0, 70):
        advanced = _run_schedule(steps, snapshots)
        if steps:
            assert advanced == _fewest_advances(steps, min(snapshots, steps) - 1), steps


def test_schedule_recomputation_bound():
    """With s snapshots and r = the smallest repetition count with C(s + r, s) >= steps, no
    step is advanced more than r times (Griewank & Walther): advanced <= r * steps."""
    from math import comb
    for steps, s in ((10_000, 64), (10_000, 10), (100_000, 20), (1000, 1000)):
        r = 0
        while comb(s + r, s) < steps:
            r += 1
        st = ck.start(steps, s)
        while ck.next_action(st) != ck.DONE:
            pass
        advanced, taped = ck.recomputed(st)
        assert taped == steps and advanced <= r * steps


def _run_block_schedule(steps, snapshots, block):
    """Simulate a schedule over blocks of `block` steps; returns (advanced, taped) steps and
    checks that every step is reversed once, in order, from the state it starts at."""
    pos = [p for p in ck.descent(steps, snapshots, block) if p >= 0]
    assert all(p % block == 0 for p in pos) and pos == sorted(set(pos))
    snaps = dict(enumerate(pos))
    cur, order, advanced = steps, [], 0
    st = ck.start(steps, snapshots, block)
    while True:
        action = ck.next_action(st)
        if action == ck.DONE:
            break
        a, b = int(st[1]), int(st[2])
        if action == ck.RESTORE:
            cur = snaps[a]
        elif action == ck.ADVANCE:
            assert cur == a and a < b <= steps
            advanced += b - a
            cur = b
        elif action == ck.SAVE:
            snaps[a] = cur
            assert a < max(1, min(snapshots, -(-steps // block)))
        else:       # steps a .. b-1 with the tape, then their adjoints
            assert action == ck.STEP and cur == a and a < b <= min(a + block, steps)
            order.extend(range(b - 1, a - 1, -1))
            cur = b
    assert order == list(range(steps - 1, -1, -1))
    got = ck.recomputed(st)
    assert got[0] == advanced and got[1] == steps
    return advanced


@pytest.mark.parametrize("block", [2, 3, 7])
def test_block_schedule_reverses_every_step_once(block):
    for steps in range(0, 60):
        for snapshots in (1, 2, 3, 5, 100):
            advanced = _run_block_schedule(steps, snapshots, block)
            if snapshots * block >= steps:
                assert advanced == 0        # a snapshot at every block's start


def test_auto_plan_fits_the_budget():
    # where it fits: a snapshot at each block's start, blocks of about sqrt(T s / b) steps
    snaps, block = ck.auto_plan(10**6, 48, 40, 6 * 10**7)
    assert block == 1096 and snaps * block >= 10**6
    assert snaps * 48 + block * 40 <= 6 * 10**7
    snaps, block = ck.auto_plan(10**6, 48, 80, 10**9)
    assert block == 775 and snaps * block >= 10**6
    # a step that records a few numbers, where recording every step fits half the budget:
    # one block, which the first pass records (each step runs once)
    assert ck.auto_plan(10**6, 48, 40, 10**8) == (1, 10**6)
    assert ck.auto_plan(10**6, 48, 64, 2 * 64 * 10**6) == (1, 10**6)
    assert ck.auto_plan(10**6, 48, 72, 10**12)[1] < 10**6
    assert ck.last_block(10**6, 10**6) == 0 and ck.last_block(0, 4) == 0
    assert ck.last_block(10, 4) == 8 and ck.last_block(8, 4) == 4 and ck.last_block(7, 1) == 6
    # a tight budget: blocks fill half of it, the snapshots the rest (binomial over blocks)
    assert ck.auto_plan(10**4, 16_000, 8_000, 4_000_000) == (71, 142)
    snaps, block = ck.auto_plan(10**4, 16_000, 8_000, 1_000_000)
    assert block == 62 and snaps == 31 and snaps * 16_000 + block * 8_000 <= 1_000_000
    assert _run_block_schedule(10**4, snaps, block) > 0
    # a step's tape not known before the loop: about sqrt(steps) snapshots of single steps
    assert ck.auto_plan(10**4, 100, -1, 10**9) == (100, 1)
    assert ck.auto_plan(1, 100, 8, 10**9) == (2, 1)


# programs ------------------------------------------------------------------------------

def heat_loops(u0, alpha, steps):
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
        s += u[i] * u[i]
    return s


def reaction_vectorized(u0, alpha, steps):
    u = u0.copy()
    for t in range(steps):
        u[1:-1] += alpha * (u[2:] - 2.0 * u[1:-1] + u[:-2]) + 0.1 * u[1:-1] * (1.0 - u[1:-1])
        u[:] = np.tanh(u)
    return np.sum(u * u)


def _forces(x, f):
    n = x.shape[0]
    for i in range(n):
        f[i] = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            d = x[i] - x[j]
            g = -d / (1.0 + d * d) ** 2
            f[i] += g
            f[j] -= g


def leapfrog_particles(x0, k, steps):
    n = x0.shape[0]
    x = x0.copy()
    v = np.zeros(n)
    f = np.zeros(n)
    dt = 0.05
    energy = 0.0
    for t in range(steps):
        _forces(x, f)
        for i in range(n):
            v[i] += dt * (f[i] - k * x[i])
            x[i] += dt * v[i]
        energy = 0.5 * np.sum(v * v) + 0.5 * k * np.sum(x * x)
    return energy + np.sum(np.sin(x))


def branches_and_scalars(x0, c, steps):
    x = x0.copy()
    acc = 0.0
    flips = 0
    last = 0.0
    for t in range(2, 2 + 2 * steps, 2):
        for i in range(x.shape[0]):
            if x[i] > 0.3:
                x[i] = x[i] * c - 0.1 * last
                flips += 1
            else:
                x[i] = math_sin(x[i]) + c * x[i]
        k = 0
        while k < flips % 3:
            acc += x[k] * x[k]
            k += 1
        last = acc * 0.01 + x[0]
        acc = acc * 0.5 + np.sum(x) * t
    return acc + last


def math_sin(v):
    return v - v * v * v / 6.0


def two_loops(x0, c, steps):
    x = x0.copy()
    s = 0.0
    for t in range(steps):
        x[:] = np.sin(x) * c + 0.1
    for t in range(steps - 1):
        for i in range(x.shape[0]):
            s += x[i] * x[i] * c
            x[i] = s * 0.01 + x[i]
    return s


def changed_after_the_loop(x0, k, steps):
    """The loop reads w and kk, which code after it changes (fuzzer find: recomputed steps
    must see the values the loop saw)."""
    x = x0.copy()
    w = x0 * 0.5
    kk = k * 1.0
    for t in range(steps):
        for i in range(x.shape[0]):
            x[i] = x[i] + 0.1 * w[i] * kk + 0.05 * np.sin(x[i])
    w[0] = 7.0
    w[1:] += x[1:] * kk
    kk = kk * 3.0
    return np.sum(x * x) + kk + np.sum(w * w)


PROGRAMS = {
    "heat_loops": (heat_loops, lambda r, T: (r.random(7), 0.21, T)),
    "reaction_vectorized": (reaction_vectorized, lambda r, T: (r.random(6), 0.2, T)),
    "leapfrog_particles": (leapfrog_particles, lambda r, T: (r.normal(size=5), 0.7, T)),
    "branches_and_scalars": (branches_and_scalars, lambda r, T: (r.random(5), 0.9, T)),
    "two_loops": (two_loops, lambda r, T: (r.random(4), 0.8, T)),
    "changed_after_the_loop": (changed_after_the_loop, lambda r, T: (r.random(5), 0.6, T)),
}
_GRAD = _Mode("value_and_grad", True, False)


@functools.lru_cache(None)
def _built(name, checkpoint, jit):
    fn, make = PROGRAMS[name]
    args = make(np.random.default_rng(0), 3)
    types = tuple(numba.typeof(a) for a in args)
    return build(fn, (0, 1), types, _GRAD, jit=jit, checkpoint=checkpoint)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_checkpointed_equals_uncheckpointed_bitwise(name):
    """Interpreter runs of the generated code (the exact source numba compiles): every
    snapshot budget and step count, including 0 and 1 steps, gives the same bits."""
    fn, make = PROGRAMS[name]
    plain = _built(name, None, False)
    for steps in (0, 1, 2, 5, 13):
        args = make(np.random.default_rng(steps), steps)
        value, (g0, g1) = plain.pyfunc(*args)
        assert value == pytest.approx(fn(*args), rel=1e-12, abs=1e-12)  # np.sum: pairwise
        for checkpoint in (1, 2, 3, "auto", 40):
            v, (h0, h1) = _built(name, checkpoint, False).pyfunc(*args)
            assert v == value and np.array_equal(h0, g0) and h1 == g1, (steps, checkpoint)


# loops whose tape for one step is known before they start (the others' nested loops have
# trip counts that change in the loop: checkpoint="auto" then snapshots single steps)
_STEP_SIZE_KNOWN = {"heat_loops", "changed_after_the_loop"}


@pytest.mark.parametrize("name", ["heat_loops", "leapfrog_particles", "branches_and_scalars",
                                  "changed_after_the_loop"])
def test_compiled_checkpointed_matches_bitwise_and_finite_differences(name):
    fn, make = PROGRAMS[name]
    args = make(np.random.default_rng(1), 30)
    plain = adjit.value_and_grad(fn, argnums=(0, 1))
    value, grads = plain(*args)
    for checkpoint in (2, "auto"):
        g = adjit.value_and_grad(fn, argnums=(0, 1), checkpoint=checkpoint)
        v, h = g(*args)
        assert v == value and np.array_equal(h[0], grads[0]) and h[1] == grads[1]
        report = g.last_tape
        assert report.steps == 30
        if checkpoint == 2:
            # blocks of one step; the last one the first pass records, the others again
            assert report.taped == 29 and report.recompute_factor > 2.0
        elif name == "heat_loops":
            # a step records 8 numbers: the first pass records every step, which runs once
            assert report.advanced == report.taped == 0 and report.recompute_factor == 1.0
        elif name in _STEP_SIZE_KNOWN:
            # a snapshot at every block's start fits the memory: each step runs twice, but
            # for the last block's, which the first pass records
            assert report.advanced == 0 and 1.0 < report.recompute_factor < 2.0
            assert report.taped < 30
        else:
            assert report.recompute_factor > 2.0
    fd0, fd1 = fd_grad(fn, args, 0), fd_grad(fn, args, 1)
    scale = max(1.0, np.max(np.abs(grads[0])), abs(grads[1]))
    assert np.max(np.abs(grads[0] - fd0)) < 1e-6 * scale
    assert abs(grads[1] - fd1) < 1e-6 * scale


def test_vjp_checkpointed():
    g = adjit.vjp(heat_loops, argnums=0, checkpoint=3)
    ref = adjit.vjp(heat_loops, argnums=0)
    args = (np.random.default_rng(2).random(8), 0.2, 25)
    a, b = g(*args, 0.5), ref(*args, 0.5)
    assert a[0] == b[0] and np.array_equal(a[1], b[1])


# memory -----------------------------------------------------------------------------------

_HEAT = adjit.grad(heat_loops, argnums=(0, 1))
_HEAT_CK = adjit.grad(heat_loops, argnums=(0, 1), checkpoint=8)


def test_tape_grows_with_steps_without_checkpointing_and_not_with_it():
    u0 = np.random.default_rng(3).random(50)
    plain, ckpt = [], []
    for steps in (100, 400, 1600):
        _HEAT(u0, 0.2, steps)
        plain.append(_HEAT.last_tape)
        _HEAT_CK(u0, 0.2, steps)
        ckpt.append(_HEAT_CK.last_tape)
    # 48 recorded floats a step: the capacity doubles past 8 * 48 * steps
    for report, steps in zip(plain, (100, 400, 1600)):
        assert 8 * 48 * steps <= report.tape_bytes < 2 * 8 * 48 * steps
        assert report.snapshot_bytes == 0 and report.recompute_factor == 1.0
    # one step's tape (the initial 1024-float stack holds it), 8 snapshots of u and un (no
    # number is carried from one step to the next: the Laplacian is recorded in the slots
    # of its own iteration)
    for report, steps in zip(ckpt, (100, 400, 1600)):
        # this call's, not a sum; the last step the first pass records
        assert report.steps == steps and report.taped == steps - 1
        assert report.tape_bytes == 8 * 1024
        assert report.snapshot_bytes == 8 * (50 + 50) * 8
    assert ckpt[0].recompute_factor < ckpt[-1].recompute_factor < 8


def test_a_gradient_called_again_starts_its_tape_as_long_as_the_last_call_used():
    """The second call allocates the tape once, as long as the first call used
    (tape_start): no doubling, so no fresh pages to map on every call; the same numbers."""
    g = adjit.grad(heat_loops, argnums=(0, 1), checkpoint=False)
    u0 = np.random.default_rng(4).random(50)
    need = 8 * 48 * 400                 # 48 recorded floats a step
    first = g(u0, 0.2, 400)
    grown = g.last_tape.tape_bytes
    assert need <= grown < 2 * need
    src = g.source
    assert re.search(r"_ftape = tape_from\(_tape_kept\d*, tape_start\(_tape_stats\d*\[5\], "
                     r"_tape_room\)\)", src), src
    assert re.search(r"_tape_stats\d*\[5\] = _fpeak", src), src
    again = g(u0, 0.2, 400)
    assert need <= g.last_tape.tape_bytes <= grown     # what was used, no doubling slack
    assert np.array_equal(first[0], again[0]) and first[1] == again[1]
    # a call that needs less starts as long as the last one used, and the next one small
    g(u0, 0.2, 10)
    assert g.last_tape.tape_bytes >= need
    g(u0, 0.2, 10)
    assert g.last_tape.tape_bytes == 8 * 1024       # the initial 1024 values hold 480
    # from @njit code the tape starts at 1024 values and grows as it must
    call = numba.njit(lambda u, a, s: g(u, a, s))
    inside = call(u0, 0.2, 400)
    assert np.array_equal(inside[0], first[0]) and inside[1] == first[1]
    # the length carried over stays within tape_limit (tape_start caps it by the room)
    small = adjit.grad(heat_loops, argnums=(0, 1), checkpoint=False, tape_limit=64 * 1024)
    small(u0, 0.2, 100)
    with pytest.raises(AdjitError, match="tape"):
        small(u0, 0.2, 400)


# (the loops are written out here, not imported: importing the benchmark or test modules
# allocates enough that glibc raises its thresholds, and the old way then maps no new pages
# either, so the test would no longer tell the two apart)
_FAULTS = """
import numpy as np
import adjit


def heat_loops(u0, alpha, steps):
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
        s += u[i] * u[i]
    return s


g = adjit.grad(heat_loops, argnums=(0, 1), checkpoint="auto")
args = (np.random.default_rng(5).random(1024), 0.2, 3000)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts Linux page faults")
def test_repeated_calls_map_no_new_pages_for_the_tape(tmp_path):
    """The checkpointed heat equation in a fresh process: growing its 1 MB tape by doubling
    on every call mapped hundreds of fresh pages a call (the C library hands large freed
    blocks back to the system), a third of the gradient's time; started at the last call's
    length, in the buffer the last call left, the memory is reused. Counted under a fixed
    mmap threshold (page_faults.FIXED_MMAP_THRESHOLD: every large block allocated again
    faults all its pages, in any process), where the snapshots, allocated at every call,
    fault theirs and the tape must not. (Optimized as users run it: at the suite's
    NUMBA_OPT=0 the old way mapped no new pages either.)"""
    from page_faults import FIXED_MMAP_THRESHOLD, tape_and_faults
    tape, snapshots, faults = tape_and_faults(tmp_path, _FAULTS, **FIXED_MMAP_THRESHOLD)
    assert tape > 500_000 and faults <= (snapshots + 0.2 * tape) / 4096 + 10, \
        (tape, snapshots, faults)


def _bits(result):
    value, grads = result
    return (value,) + tuple(np.asarray(g).tobytes() for g in grads)


def _cache_of(monkeypatch, size):
    """The CPU's largest cache, as a gradient left to choose sees it, set to `size` bytes for
    this test (and what the process learned of gradients whose tape outgrew it, emptied)."""
    import adjit.api
    monkeypatch.setattr(adjit.api, "RECORDED_TAPE_BYTES", size)
    monkeypatch.setattr(adjit.api, "_OUTGREW", {})


def test_a_gradient_left_to_choose_checkpoints_from_the_call_whose_tape_outgrows_the_cache(
        monkeypatch):
    # checkpoint=None (the default): the first call records until its tape outgrows the
    # CPU's cache (here: 100 kB); it is then made again with checkpoint="auto", as are the
    # later calls, to the same bits as recording
    _cache_of(monkeypatch, 100_000)
    u0, args = np.random.default_rng(8).random(50), (0.2, 1000)
    kept_u0 = u0.copy()
    short = adjit.value_and_grad(heat_loops, argnums=(0, 1))   # a short run stays recorded
    assert short(u0, 0.2, 10)[0] == pytest.approx(heat_loops(u0, 0.2, 10))
    assert short.last_tape.steps == 0
    assert "ckpt." not in short.source
    g = adjit.value_and_grad(heat_loops, argnums=(0, 1))
    first = g(u0, *args)
    chosen = g.last_tape
    assert chosen.steps == 1000 and chosen.total_bytes < 100_000
    assert np.array_equal(u0, kept_u0)
    recorded = adjit.value_and_grad(heat_loops, argnums=(0, 1), checkpoint=False)
    assert _bits(first) == _bits(recorded(u0, *args))
    assert recorded.last_tape.steps == 0 and recorded.last_tape.tape_bytes > 3 * 100_000
    assert _bits(g(u0, *args)) == _bits(first) and g.last_tape.steps == 1000
    assert "ckpt.auto_plan" in g.source and "ckpt." not in recorded.source_for(u0, *args)
    np.testing.assert_allclose(first[1][1], fd_grad(numba.njit(heat_loops), (u0,) + args, 1),
                               rtol=1e-6)


def heat_in_place(u, alpha, steps):
    """Steps the user's own array (no copy): a gradient writes into its argument as the
    function does."""
    n = u.shape[0]
    un = np.zeros(n)
    for t in range(steps):
        for i in range(1, n - 1):
            un[i] = u[i] + alpha * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        for i in range(1, n - 1):
            u[i] = un[i]
    return np.sum(u * u)


def test_a_first_call_made_again_starts_from_the_arguments_as_they_were_passed(monkeypatch):
    _cache_of(monkeypatch, 100_000)
    u0 = np.random.default_rng(9).random(50)
    g = adjit.value_and_grad(heat_in_place, argnums=(0, 1))
    u = u0.copy()
    got = g(u, 0.2, 1000)       # stopped after some steps, its array put back, made again
    assert g.last_tape.steps == 1000
    expected_u = u0.copy()
    numba.njit(heat_in_place)(expected_u, 0.2, 1000)
    assert np.array_equal(u, expected_u)     # the function's own writes, once
    u_rec = u0.copy()
    want = adjit.value_and_grad(heat_in_place, argnums=(0, 1), checkpoint=False)(u_rec, 0.2, 1000)
    assert _bits(got) == _bits(want) and np.array_equal(u_rec, expected_u)


def heat_with_noise(u0, alpha, steps):
    u = u0 + 0.01 * np.random.standard_normal(u0.shape[0])
    n = u.shape[0]
    un = np.zeros(n)
    for t in range(steps):
        for i in range(1, n - 1):
            un[i] = u[i] + alpha * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        for i in range(1, n - 1):
            u[i] = un[i]
    return np.sum(u * u)


@numba.njit
def _seed(k):
    np.random.seed(k)


@numba.njit
def _draw():
    return np.random.random()


def test_a_first_call_that_draws_random_numbers_runs_once(monkeypatch):
    # a call stopped midway would have drawn its numbers: it records in full, once, and the
    # later calls checkpoint
    _cache_of(monkeypatch, 100_000)
    u0 = np.random.default_rng(10).random(50)
    g = adjit.value_and_grad(heat_with_noise, argnums=(0, 1))
    _seed(3)
    first = g(u0, 0.2, 1000)
    after_gradient = _draw()
    assert g.last_tape.steps == 0      # recorded
    _seed(3)
    value = numba.njit(heat_with_noise)(u0, 0.2, 1000)
    assert after_gradient == _draw() and first[0] == value
    _seed(3)
    second = g(u0, 0.2, 1000)
    assert g.last_tape.steps == 1000 and _bits(second) == _bits(first)


def test_a_gradient_left_to_choose_checkpoints_where_recording_would_exceed_tape_limit():
    u0 = np.random.default_rng(11).random(50)
    g = adjit.grad(heat_loops, argnums=(0, 1), tape_limit=100_000)
    got = g(u0, 0.2, 1000)      # recording needs 384 kB
    report = g.last_tape
    assert report.steps == 1000 and report.total_bytes <= 100_000
    want = adjit.grad(heat_loops, argnums=(0, 1), checkpoint=False)(u0, 0.2, 1000)
    assert np.array_equal(got[0], want[0]) and got[1] == want[1]


def test_a_gradient_made_again_checkpoints_from_its_first_call(monkeypatch):
    # adjit.grad(f) in a loop: once a gradient of this code outgrew the cache, the next
    # one's first call is not stopped midway (numba frees nothing an exception leaves)
    _cache_of(monkeypatch, 100_000)
    from adjit.pipeline import Transformed
    caps = []
    call = Transformed.call

    def spy(self, *args, cap=0):
        caps.append(cap)
        return call(self, *args, cap=cap)
    monkeypatch.setattr(Transformed, "call", spy)
    u0 = np.random.default_rng(12).random(50)
    first = adjit.grad(heat_loops, argnums=(0, 1))(u0, 0.2, 1000)
    assert caps == [100_000, 0]
    again = adjit.grad(heat_loops, argnums=(0, 1))
    assert np.array_equal(again(u0, 0.2, 1000)[0], first[0]) and caps[2:] == [0]
    assert again.last_tape.steps == 1000


def recurrence_in_a_branch(x):
    """A recorded loop that is not a time loop of the function (it sits in a branch): there
    is nothing to checkpoint."""
    s = 0.0
    if x.shape[0] > 0:
        for i in range(x.shape[0]):
            s = math.sin(s + x[i])
    return s


def test_a_large_tape_without_a_time_loop_stays_recorded(monkeypatch):
    _cache_of(monkeypatch, 1_000)
    x = np.linspace(0.0, 1.0, 5000)
    g = adjit.grad(recurrence_in_a_branch)
    first = g(x)        # stopped at the cap, nothing to checkpoint: made again, recorded
    source = g.source
    assert g.last_tape.tape_bytes >= 8 * 5000 and "ckpt." not in source
    assert np.array_equal(g(x), first) and g.source == source and g.last_tape.steps == 0
    assert np.array_equal(first, adjit.grad(recurrence_in_a_branch, checkpoint=False)(x))
    np.testing.assert_allclose(first, fd_grad(numba.njit(recurrence_in_a_branch), (x,), 0),
                               rtol=1e-6, atol=1e-9)
    # tape_limit stops it, and there is nothing to checkpoint: the limit's error
    with pytest.raises(AdjitError, match="tape_limit"):
        adjit.grad(recurrence_in_a_branch, tape_limit=10_000)(x)


def test_the_default_threshold_is_the_largest_cache():
    assert tape.RECORDED_TAPE_BYTES == max(tape._last_level_cache(), 8 << 20) >= 8 << 20


def test_tape_limit_raises_an_adjit_error_naming_the_function_and_the_remedy():
    g = adjit.grad(heat_loops, argnums=(0, 1), tape_limit=100_000)
    u0 = np.random.default_rng(4).random(50)
    g(u0, 0.2, 100)     # 38 KB of tape: fits
    with pytest.raises(AdjitError) as info:
        g(u0, 0.2, 1000)
    text = str(info.value)
    assert "tape_limit" in text and "heat_loops" in text and "test_checkpoint.py" in text
    assert "line" in text and "checkpoint=" in text
    assert "100000 are allowed" in text     # 48 floats a step: it crosses at step 261
    g2 = adjit.grad(heat_loops, argnums=(0, 1), tape_limit=100_000, checkpoint=4)
    assert np.array_equal(g2(u0, 0.2, 1000)[0], _HEAT(u0, 0.2, 1000)[0])


def horner_sine(c, t):
    s = 0.0
    for i in range(c.shape[0]):
        s = s * t + np.sin(c[i] * s)
    return s


@pytest.mark.parametrize("limit, fits", [(100, False), (1599, False), (1600, True),
                                         (4000, True)])
def test_a_tape_limit_below_the_tapes_first_allocation_holds_to_the_byte(limit, fits):
    """A tape starts with room for 1024 values (8 KB), and the limit was checked only when
    it grew: under tape_limit=1000 a loop recording 1600 bytes ran. The first allocation
    is now within the limit too."""
    c = np.linspace(0.0, 1.0, 200) / 200     # 200 steps, one float each: 1600 bytes
    g = adjit.grad(horner_sine, tape_limit=limit, checkpoint=False)
    if fits:
        np.testing.assert_allclose(g(c, 0.9), fd_grad(horner_sine, (c, 0.9), 0),
                                   rtol=1e-6, atol=1e-12)
        assert g.last_tape.total_bytes <= limit
    else:
        with pytest.raises(AdjitError, match=f"it needs 1600 bytes, {limit} are allowed"):
            g(c, 0.9)


def test_the_limit_error_is_written_in_python_with_the_numbers_the_compiled_code_gave():
    """Compiled code raises the limit error with its numbers alone (TapeLimitError): the
    same message from Python and from an @njit caller."""
    g = adjit.grad(heat_loops, argnums=(0, 1), tape_limit=100_000, checkpoint=False)
    u0 = np.random.default_rng(4).random(50)

    @numba.njit
    def outer(u, alpha, steps):
        return g(u, alpha, steps)
    with pytest.raises(AdjitError) as direct:
        g(u0, 0.2, 1000)
    with pytest.raises(AdjitError) as nested:
        outer(u0, 0.2, 1000)
    # the tape is reserved for every step before the loop: 1000 steps of 48 floats
    stem = ("adjit: the tape would exceed tape_limit: it needs 384000 bytes, 100000 are "
            "allowed")
    assert str(direct.value).startswith(stem + ". In the gradient of 'heat_loops'")
    assert str(nested.value) == stem
    assert isinstance(nested.value, tape.TapeLimitError)


@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_a_tape_grows_by_doubling_keeps_its_values_and_stops_at_the_room(dtype):
    t = np.arange(1, 6).astype(dtype)
    assert tape.reserve_tape(t, 5, 1 << 20) is t
    bigger = tape.reserve_tape(t, 6, 1 << 20)
    assert bigger.dtype == t.dtype and bigger.shape == (10,)
    assert np.array_equal(bigger[:5], t)
    capped = tape.reserve_tape(t, 7, 64)        # room for 8 values, not the 10 doubling asks
    assert capped.shape == (8,) and np.array_equal(capped[:5], t)
    with pytest.raises(tape.TapeLimitError, match="it needs 72 bytes, 64 are allowed$"):
        tape.reserve_tape(t, 9, 64)
    with pytest.raises(AdjitError, match="checkpoint snapshots need 80 bytes, 64 are allowed$"):
        tape.check_room(80, 64)
    assert tape.check_room(24, 64) == 40


def test_a_gradients_machine_code_holds_no_string_functions():
    """Nothing a gradient calls formats text in compiled code (numba's str and
    concatenation would be compiled again into every gradient: a quarter of a small one's
    machine code), nor copies with a slice assignment (numba's shape-mismatch error)."""
    for checkpoint in (None, "auto"):     # (snapshots are taken and put back by ckpt.put)
        g = adjit.value_and_grad(heat_loops, argnums=(0, 1), checkpoint=checkpoint)
        g(np.random.default_rng(4).random(8), 0.2, 3)
        assert "reserve_tape(" in g.source
        assert checkpoint is None or "ckpt.put(" in g.source
        ir = g._called.dispatcher.inspect_llvm(g._called.dispatcher.signatures[0])
        assert "unicode" not in ir and "raise_with_shape_context" not in ir


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.bool_])
def test_a_snapshot_is_copied_element_by_element_in_any_layout(dtype):
    state = (np.arange(24).reshape(4, 6) % 3 == 0).astype(dtype)
    snaps = np.zeros((3, 6, 4), dtype)
    ck.put(snaps[1], state.T)                # a transposed (not C-contiguous) array
    assert np.array_equal(snaps[1], state.T) and not snaps[0].any() and not snaps[2].any()
    back = np.zeros((6, 4), dtype)[::-1]     # a reversed view
    ck.put(back, snaps[1])
    assert np.array_equal(back, state.T)


def test_snapshots_over_the_limit_raise():
    g = adjit.grad(heat_loops, argnums=(0, 1), tape_limit=20_000, checkpoint=100)
    with pytest.raises(AdjitError, match="snapshots need"):
        g(np.random.default_rng(5).random(50), 0.2, 1000)


# options ----------------------------------------------------------------------------------

@pytest.mark.parametrize("bad", [0, -2, "sometimes", True, 2.5])
def test_checkpoint_option_is_checked(bad):
    with pytest.raises(AdjitError, match="checkpoint="):
        adjit.grad(heat_loops, checkpoint=bad)


@pytest.mark.parametrize("bad", [0, -1, "big", True])
def test_tape_limit_option_is_checked(bad):
    with pytest.raises(AdjitError, match="tape_limit="):
        adjit.grad(heat_loops, tape_limit=bad)


def while_loop(x, steps):
    s = 0.0
    t = 0
    while t < steps and s < 1e6:
        s = s * 0.5 + x * x * s + x
        t += 1
    return s


def counted_while_loop(x, steps):
    s = 0.0
    t = 0
    while t < steps:
        s = s * 0.5 + x * x * s + x
        t += 1
    return s * t


def test_a_counted_while_loop_is_checkpointed():
    """`while t < steps: ...; t += 1` is the for loop it counts: checkpointed, bitwise."""
    plain = adjit.value_and_grad(counted_while_loop)
    ckpt = adjit.value_and_grad(counted_while_loop, checkpoint=3)
    for steps in (0, 1, 7, 40):
        assert ckpt(0.3, steps) == plain(0.3, steps)
        assert plain(0.3, steps)[0] == pytest.approx(counted_while_loop(0.3, steps), rel=1e-15)
    assert ckpt.last_tape.steps == 40 and ckpt.last_tape.recompute_factor > 1.0
    assert plain(0.3, 40)[1] == pytest.approx(fd_grad(counted_while_loop, (0.3, 40), 0),
                                              rel=1e-7)


def loop_with_break(x, steps):
    s = 0.0
    for t in range(steps):
        s = s * x + 1.0
        if s > 100.0:
            break
    return s


@pytest.mark.parametrize("fn, what", [(while_loop, "`while` loop"),
                                      (loop_with_break, "left by `break`")])
def test_loops_that_cannot_be_checkpointed_are_named(fn, what):
    g = adjit.grad(fn, checkpoint=4)
    with pytest.raises(AdjitError, match=what) as info:
        g.source_for(0.5, 10)
    assert "line" in str(info.value) and "checkpoint=None" in str(info.value)


@pytest.mark.parametrize("fn", [while_loop, loop_with_break])
def test_auto_records_the_loops_it_cannot_checkpoint(fn):
    # checkpoint="auto" checkpoints what it can; such a loop is recorded as without it
    plain = adjit.value_and_grad(fn)(0.5, 10)
    assert adjit.value_and_grad(fn, checkpoint="auto")(0.5, 10) == plain
    assert plain[1] == pytest.approx(fd_grad(fn, (0.5, 10), 0), rel=1e-7)


def test_generated_source_reads_like_a_checkpointed_adjoint():
    src = _HEAT_CK.source_for(np.ones(5), 0.2, 3)
    for piece in ("ckpt.descent", "ckpt.start", "ckpt.next_action", "ckpt.STEP",
                  "ckpt.ADVANCE", "ckpt.RESTORE", "ckpt.SAVE", "ckpt.put(u, ", "check_room"):
        assert piece in src, piece


def writes_its_argument(x, c, steps):
    for t in range(steps):
        for i in range(x.shape[0]):
            x[i] = 0.9 * x[i] * c + 0.1 * np.sin(x[i])
    return np.sum(x * x)


def test_an_argument_the_loop_writes_ends_as_the_program_leaves_it():
    """(fuzzer find) The schedule's restores must not leave an argument at an earlier step."""
    x0 = np.random.default_rng(6).random(5)
    expect = x0.copy()
    value = writes_its_argument(expect, 0.8, 9)
    for checkpoint in (None, 2, "auto"):
        x = x0.copy()
        v, g = adjit.value_and_grad(writes_its_argument, argnums=(0, 1),
                                    checkpoint=checkpoint)(x, 0.8, 9)
        np.testing.assert_allclose(x, expect, rtol=1e-15)
        assert v == pytest.approx(value, rel=1e-15)


def relax_with_a_rate_from_the_array(x, steps):
    """The rate is an element of the input (x[3]): its adjoint is added once per step, at
    an index no step changes."""
    u = x.copy()
    un = np.zeros(x.shape[0])
    for t in range(steps):
        for i in range(x.shape[0]):
            un[i] = math.tanh(u[i] * 0.75 * x[3]) + x[i]
        for i in range(x.shape[0]):
            u[i] = un[i]
    s = 0.0
    for i in range(x.shape[0]):
        s += u[i] * u[i]
    return s


def test_a_sum_into_one_element_across_steps_stays_identical_to_the_bit():
    """A sum into x_bar[3] across the time loop is not kept in a local across the loop:
    checkpointing runs the loop in blocks, and a local summed per block would add in
    another order than the recorded gradient (last bits apart)."""
    x = np.random.default_rng(0).uniform(-1.5, 1.5, 6)
    want = adjit.grad(relax_with_a_rate_from_the_array)(x, 9)
    for checkpoint in (2, 3, "auto"):
        got = adjit.grad(relax_with_a_rate_from_the_array, checkpoint=checkpoint)(x, 9)
        assert np.array_equal(got, want), (checkpoint, got - want)
    np.testing.assert_allclose(want, fd_grad(relax_with_a_rate_from_the_array, (x, 9), 0),
                               rtol=1e-6, atol=1e-8)


def pair_sums(x, n):
    """Independent iterations (each fills buf, then sums over it): the backward sweep
    computes each iteration again and runs the inner loops upward, the sum held for
    x_bar[i] adding in that order, with checkpointing as without."""
    acc = 0.0
    buf = np.zeros(4)
    for i in range(4):
        for j in range(4):
            if n != 2:
                c = -1.25
            else:
                c = float(n)
            buf[j] = (x[j] - x[i]) * c
        t = 0.0
        for j in range(4):
            t += math.tanh(buf[j]) * x[j]
        acc += math.log1p(t * t)
    return acc


def test_checkpointed_equals_a_recomputed_loop_bitwise():
    """A top-level loop whose iterations the backward sweep computes again records nothing
    across iterations: checkpointing leaves it alone and the plan is the same, so the
    gradients agree to the bit (before, the checkpointed one recorded the iterations and ran
    the inner loop downward: 22 of 40 random inputs differed in the last bits; the program
    fuzzer found it, seed 4242)."""
    for seed in range(12):
        x = np.random.default_rng(seed).normal(size=4)
        plain = adjit.grad(pair_sums)(x, 3)
        checkpointed = adjit.grad(pair_sums, checkpoint=2)(x, 3)
        assert np.array_equal(plain, checkpointed), seed
        np.testing.assert_allclose(plain, fd_grad(numba.njit(pair_sums), (x, 3), 0),
                                   rtol=1e-6, atol=1e-9)


@numba.njit
def lotka_volterra(y, p):
    a, b, c, d = p[0], p[1], p[2], p[3]
    out = np.empty(2)
    out[0] = a * y[0] - b * y[0] * y[1]
    out[1] = c * y[0] * y[1] - d * y[1]
    return out


@numba.njit
def rk4_lotka_volterra(p, y0):
    y = y0.copy()
    dt = 0.01
    for t in range(100):
        k1 = lotka_volterra(y, p)
        k2 = lotka_volterra(y + 0.5 * dt * k1, p)
        k3 = lotka_volterra(y + 0.5 * dt * k2, p)
        k4 = lotka_volterra(y + dt * k3, p)
        y = y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return y[0] + y[1]


@numba.njit
def rk4_lotka_volterra_in_place(p, y0):
    y = y0.copy()
    dt = 0.01
    for t in range(100):
        k1 = lotka_volterra(y, p)
        k2 = lotka_volterra(y + 0.5 * dt * k1, p)
        k3 = lotka_volterra(y + 0.5 * dt * k2, p)
        k4 = lotka_volterra(y + dt * k3, p)
        y[:] = y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return y[0] + y[1]


def test_a_runge_kutta_step_of_many_values_is_checkpointed():
    """An RK4 step calling its right-hand side four times carries 32 values into the step
    function: a call of over 30 arguments, which CPython compiles as f(*args) and numba
    would not inline (numba could not compile the gradient). They pass as one tuple; the
    gradient is the recorded one to the bit (written `y = ...` or `y[:] = ...`, the same
    operations) and matches finite differences."""
    args = (np.array([1.1, 0.4, 0.1, 0.4]), np.array([10.0, 5.0]))
    plain = adjit.grad(rk4_lotka_volterra, argnums=(0, 1))(*args)
    for k in range(2):
        np.testing.assert_allclose(plain[k], fd_grad(rk4_lotka_volterra, args, k), rtol=1e-6)
    for loss, checkpoint in ((rk4_lotka_volterra, "auto"), (rk4_lotka_volterra, 10),
                             (rk4_lotka_volterra_in_place, 3)):
        g = adjit.grad(loss, argnums=(0, 1), checkpoint=checkpoint)
        got = g(*args)
        assert np.array_equal(got[0], plain[0]) and np.array_equal(got[1], plain[1])
        assert g.last_tape.steps == 100 and g.last_tape.recompute_factor > 1.0
        assert re.search(r"^def _cstep\d+\(_cargs\d+\):$", g.source, re.M)


def scaled_then_summed(w, x):
    """The first loop's variable is the name a later loop counts with again."""
    K = w.shape[0]
    a = np.empty(K)
    for k in range(K):
        a[k] = math.exp(w[k]) * x[k]
    s = 0.0
    for k in range(K):
        s += a[k] * math.sin(a[k])
    return s


@pytest.mark.parametrize("checkpoint", [2, "auto"])
def test_a_checkpointed_loop_whose_variable_a_later_loop_counts_with(checkpoint):
    """The loop's own variable was kept as a value the loop reads on entry (`_centry_k1 =
    k`, k not yet bound: numba refused the generated code); each step is given it."""
    w, x = np.linspace(0.1, 0.9, 7), np.linspace(1.0, 2.0, 7)
    got = adjit.grad(scaled_then_summed, argnums=(0, 1), checkpoint=checkpoint)(w, x)
    recorded = adjit.grad(scaled_then_summed, argnums=(0, 1), checkpoint=False)(w, x)
    for a, b in zip(got, recorded):
        assert a.tobytes() == b.tobytes()
    compiled = numba.njit(scaled_then_summed)
    for k in (0, 1):
        np.testing.assert_allclose(got[k], fd_grad(compiled, (w, x), k), rtol=1e-7, atol=1e-9)


def pair_sum_steps(x, w, steps):
    """A pair energy taken from a state that every step moves."""
    n = x.shape[0]
    u = x.copy()
    e = 0.0
    for t in range(steps):
        for i in range(n):
            for j in range(i + 1, n):
                d = u[j] - u[i]
                e -= w[0] / (1 + d * d) * u[i]
        for i in range(n):
            u[i] = u[i] + 0.01 * np.sin(u[i])
    return e


@pytest.mark.parametrize("checkpoint", [1, 3, "auto"])
def test_the_schedules_step_adjoint_is_rewritten_as_the_recorded_one(checkpoint):
    """The step's adjoint is written twice in a checkpointed gradient (the block the forward
    sweep recorded, and the schedule's), with the same names; copy propagation counted the
    reads of both and rewrote neither copy, so the inner loop kept its reversed order while
    the recorded gradient's ran upward: the sums came out in another order (2.8e-14 apart,
    where the two are promised identical to the bit). A review of the code found it."""
    rng = np.random.default_rng(1)
    args = (rng.normal(size=37), np.array([0.7]), 9)
    recorded = adjit.value_and_grad(pair_sum_steps, argnums=(0, 1), checkpoint=False)(*args)
    got = adjit.value_and_grad(pair_sum_steps, argnums=(0, 1), checkpoint=checkpoint)(*args)
    assert got[0] == recorded[0]
    for a, b in zip(got[1], recorded[1]):
        assert a.tobytes() == b.tobytes()
    source = adjit.grad(pair_sum_steps, argnums=(0, 1), checkpoint=checkpoint).source_for(*args)
    assert not re.search(r"_t\d+_bar = e_bar\n", source), source
    assert "for j in range(n - 1, " not in source, source      # every copy runs upward


def tanh_energy(x, y, n):
    """A time loop (it carries c) whose steps commute in the backward sweep: each adds into
    y_bar and x_bar[i] only, nothing carried back across steps."""
    e = 0.0
    c = 1.0
    for i in range(n):
        c = c * 1.001
        e += 2.0 ** math.tanh(y * x[i]) * c
    return e + y


@pytest.mark.parametrize("checkpoint", [2, 5, "auto"])
def test_a_time_loop_whose_steps_commute_adds_in_one_order(checkpoint):
    """The recorded backward sweep ran such a loop upward (its iterations commute:
    reverse/ascending.py) and the checkpointed one downward, block by block: y_bar's sum
    over 400 steps came out last bits apart, where the two are promised identical to the
    bit (the program fuzzer found it). A time loop checkpoint="auto" would checkpoint now
    keeps its downward order recorded too."""
    rng = np.random.default_rng(0)         # (before: 2.7e-12 apart in y_bar)
    args = (rng.normal(size=400) * 3.0, 0.7, 400)
    recorded = adjit.value_and_grad(tanh_energy, argnums=(0, 1), checkpoint=False)(*args)
    got = adjit.value_and_grad(tanh_energy, argnums=(0, 1), checkpoint=checkpoint)(*args)
    assert got[0] == recorded[0]
    assert got[1][0].tobytes() == recorded[1][0].tobytes()
    assert got[1][1] == recorded[1][1], (got[1][1], recorded[1][1])
    np.testing.assert_allclose(recorded[1][1], fd_grad(tanh_energy, args, 1), rtol=1e-7)
    np.testing.assert_allclose(recorded[1][0], fd_grad(tanh_energy, args, 0), rtol=1e-5,
                               atol=1e-4)      # (the sum is ~1e5: differences carry ~1e-5)


def exp_decay_sum(x, y):
    e = 0.0
    c = 1.0
    for i in range(x.shape[0]):
        c = c * 0.999
        e += math.exp(y * x[i]) * c
    return e


@pytest.mark.parametrize("checkpoint", [None, 8, "auto"])
def test_a_loops_arithmetic_is_the_same_checkpointed_or_not(checkpoint):
    """Recorded, exp_sum's sum of exponentials was taken in vector lanes with vmath's exp
    (the sum split into blocks of 256), and y_bar's sum over the steps as one dot product;
    checkpointed, each step ran alone with the C library's exp: value, x_bar and y_bar last
    bits apart (a review found it). A loop that only sums over its iterations is now
    recorded whatever the option (checkpoint.reduction: its tape grows with the data it
    reads), and a time loop (exp_decay_sum carries c) keeps the order and the functions of
    its steps' arithmetic when recorded (y_bar's sum was a dot product there)."""
    x = np.random.default_rng(1).standard_normal(1000)
    for fn in (exp_sum, exp_decay_sum):
        recorded = adjit.value_and_grad(fn, argnums=(0, 1), checkpoint=False)(x, 0.37)
        got = adjit.value_and_grad(fn, argnums=(0, 1), checkpoint=checkpoint)(x, 0.37)
        assert got[0] == recorded[0], fn.__name__
        assert got[1][0].tobytes() == recorded[1][0].tobytes(), fn.__name__
        assert got[1][1] == recorded[1][1], fn.__name__
    decay = 0.999 ** np.arange(1, 1001)
    np.testing.assert_allclose(recorded[1][1], np.sum(decay * x * np.exp(0.37 * x)),
                               rtol=1e-13)
    np.testing.assert_allclose(recorded[1][0], decay * 0.37 * np.exp(0.37 * x), rtol=1e-13)
    reduction = adjit.value_and_grad(exp_sum, argnums=(0, 1), checkpoint=checkpoint)
    reduction(x, 0.37)
    assert reduction.last_tape.steps == 0          # recorded: nothing checkpointed
    assert "vmath.exp64(" in reduction.source       # and its map in vector lanes


@pytest.mark.parametrize("checkpoint", [None, False, 8, "auto"])
def test_a_sum_loops_limit_error_says_checkpointing_does_not_shorten_its_tape(checkpoint):
    """Past tape_limit, a loop that only sums over its iterations (recorded whatever the
    option) was said to "record every step: pass checkpoint='auto'", and with it "one
    step's tape or the snapshots do not fit": advice that cannot help."""
    x = np.random.default_rng(2).standard_normal(4000)
    g = adjit.value_and_grad(exp_sum, argnums=(0, 1), checkpoint=checkpoint, tape_limit=16000)
    with pytest.raises(AdjitError, match=r"it needs 32000 bytes, 16000 are allowed. In the "
                       r"gradient of 'summed_exponentials' \(.*test_vector_math.py, line \d+\): "
                       r"the loop\(s\) at line \d+ record what each iteration computes: .* "
                       r"checkpointing does not shorten it .* Pass a larger tape_limit"):
        g(x, 0.37)
    # a time loop keeps the advice to checkpoint (by default it checkpoints by itself)
    with pytest.raises(AdjitError, match="record every step. Pass checkpoint='auto'"):
        adjit.value_and_grad(exp_decay_sum, argnums=(0, 1), checkpoint=False,
                             tape_limit=16000)(x, 0.37)


def sum_then_steps(x, w, y0, n):
    s = 0.0
    for i in range(x.shape[0]):        # a loop that sums
        s += math.exp(w * x[i])
    y = y0.copy()
    for t in range(n):                 # a time loop
        for j in range(y.shape[0]):
            y[j] = math.sin(y[j]) * w
    return s + np.sum(y)


def test_a_limit_error_with_a_sum_loop_and_a_time_loop_advises_for_the_time_loop():
    """With both, the sum loop's message replaced the advice that helps: checkpointing the
    time loop, or fewer snapshots (a review found it)."""
    x, y0 = np.random.default_rng(2).standard_normal(4000), np.linspace(0, 1, 1000)
    with pytest.raises(AdjitError, match=r"the loop\(s\) at line \d+ record every step. Pass "
                       r"checkpoint='auto' .* Besides, the loop\(s\) at line \d+ record what "
                       "each iteration computes"):
        adjit.value_and_grad(sum_then_steps, argnums=(0, 1), checkpoint=False,
                             tape_limit=200_000)(x, 0.37, y0, 500)
    with pytest.raises(AdjitError, match=r"checkpointed with checkpoint=64: .* Pass fewer "
                       r"snapshots .* Besides, the loop\(s\) at line \d+ record what"):
        adjit.value_and_grad(sum_then_steps, argnums=(0, 1), checkpoint=64,
                             tape_limit=140_000)(x, 0.37, y0, 500)
    fits = adjit.value_and_grad(sum_then_steps, argnums=(0, 1), checkpoint=8,
                                tape_limit=200_000)
    recorded = adjit.value_and_grad(sum_then_steps, argnums=(0, 1), checkpoint=False)
    got, want = fits(x, 0.37, y0, 500), recorded(x, 0.37, y0, 500)
    assert got[0] == want[0] and got[1][1] == want[1][1]
    assert got[1][0].tobytes() == want[1][0].tobytes()


def exp_map(x, w):
    y = np.empty_like(x)
    for i in range(x.shape[0]):
        y[i] = math.exp(w * x[i]) + 1.0
    return np.sum(y * y)


@pytest.mark.parametrize("checkpoint", [3, "auto"])
def test_a_time_loops_own_statements_keep_the_c_library_recorded(checkpoint):
    """cos_recurrence (tests/programs.py) carries y[0] and y[1]: a time loop. Recorded,
    its cos and sin were vmath's (the loop counted as vectorizable: no scalar carried);
    checkpointed, each step runs alone with the C library's: value and gradient last bits
    apart in 15 of 20 draws (a review found it). Its own statements now keep the C library
    recorded too; a map (exp_map: each iteration its own element) is no time loop and is
    recorded either way."""
    for seed in range(6):
        x = np.random.default_rng(seed).uniform(-3.0, 3.0, 50)
        for fn in (cos_recurrence, exp_map):
            args = (x,) if fn is cos_recurrence else (x, 0.37)
            recorded = adjit.value_and_grad(fn, checkpoint=False)(*args)
            got = adjit.value_and_grad(fn, checkpoint=checkpoint)(*args)
            assert got[0] == recorded[0], (fn.__name__, seed)
            assert got[1].tobytes() == recorded[1].tobytes(), (fn.__name__, seed)
    np.testing.assert_allclose(recorded[1], fd_grad(exp_map, (x, 0.37), 0), rtol=1e-6)


def running_max_sines(x):
    mx = x[0]
    s = 0.0
    for i in range(1, x.shape[0]):
        if x[i] > mx:           # a condition on the integer stack
            mx = x[i]
        s = np.sin(s + x[i] * mx)
    return s


def test_tape_limit_bounds_both_stacks_together():
    """A gradient recording floats (two a step) and conditions (one a step) on its two stacks:
    tape_limit bounds what both allocate together, the loop's reservation taken exactly."""
    x = np.random.default_rng(0).random(20000)
    need = 8 * 3 * (x.shape[0] - 1)
    g = adjit.grad(running_max_sines, checkpoint=False)
    want = g(x)
    assert g.last_tape.tape_bytes == need
    assert "_tape_room, _itape.nbytes)" in g.source and "_tape_room, _ftape.nbytes)" in g.source
    ok = adjit.grad(running_max_sines, checkpoint=False, tape_limit=need)
    assert np.array_equal(ok(x), want) and ok.last_tape.tape_bytes <= need
    for limit in (need - 8, 2 * need // 3):     # either stack alone would fit in both
        short = adjit.grad(running_max_sines, checkpoint=False, tape_limit=limit)
        with pytest.raises(AdjitError, match=rf"it needs \d+ bytes, {limit} are allowed"):
            short(x)


def abc_model(a, b, c, prec, s0):
    """RRMPG's ABC model (kratzert/RRMPG, abcmodel_model.py) with its loss."""
    n = len(prec)
    qsim = np.zeros(n)
    storage = np.zeros(n)
    storage[0] = s0
    for t in range(1, n):
        qsim[t] = (1 - a - b) * prec[t] + c * storage[t-1]
        storage[t] = (1 - c) * storage[t-1] + a * prec[t]
    return np.sum(qsim ** 2)


@pytest.mark.parametrize("checkpoint", [16, "auto"])
def test_a_steps_sum_of_products_stays_in_the_recorded_order(checkpoint):
    """b's adjoint is a sum over the steps of `qsim_bar[t] * prec[t]`. Checkpointed, the
    backward of each block took it as one sum in vector lanes (reverse/dots.py), where the
    recorded gradient adds it step by step: with checkpoint='auto' (one block) b_bar came out
    a last bit apart for 28 of 30 random inputs. The steps' adjoints now keep the recorded
    order in every block."""
    g = adjit.grad(abc_model, argnums=(0, 1, 2, 4), checkpoint=checkpoint)
    recorded = adjit.grad(abc_model, argnums=(0, 1, 2, 4), checkpoint=False)
    for seed in range(8):
        rng = np.random.default_rng(seed)
        args = (0.3, 0.2, 0.15, rng.random(int(rng.integers(50, 900))) * 10, 5.0)
        assert g(*args) == recorded(*args), seed
    assert "dot_range" not in g.source
    want = [fd_grad(abc_model, args, k) for k in (0, 1, 2, 4)]
    np.testing.assert_allclose(recorded(*args), want, rtol=1e-6)


def _after_early_return(x, y):
    if x[0] > 5.0:
        return y
    v = 0.0
    for i in range(1, len(x) + 1):
        w = np.arange(i) * 1.5
        v += np.sum(w * w) * x[-2] + math.sin(x[i - 1]) * y
    return v + y


@pytest.mark.parametrize("checkpoint", ["auto", 2])
def test_a_loop_after_an_early_return_sized_by_its_counter(checkpoint):
    # (the loop is in the `else` an early return makes: never checkpointed, computed again
    # iteration by iteration as without checkpointing; it was refused for np.arange(i))
    x, y = np.linspace(0.1, 0.5, 5), 1.5
    recorded = adjit.value_and_grad(_after_early_return, argnums=(0, 1),
                                    checkpoint=False)(x, y)
    checkpointed = adjit.value_and_grad(_after_early_return, argnums=(0, 1),
                                        checkpoint=checkpoint)(x, y)
    assert checkpointed[0] == recorded[0]
    for a, b in zip(checkpointed[1], recorded[1]):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(recorded[1][0], fd_grad(_after_early_return, (x, y), 0),
                               rtol=1e-6, atol=1e-8)


def _bound_on_some_steps(x, a):
    u = x * 1.0
    s = 0.0
    for t in range(9):
        if t % 3 == 0:
            y = u * a               # a new array every third step, read on every step
        s += np.sum(y * u)
        u = np.sin(u) + a * 0.5
    return s


def _bound_before_the_loop(x, a):
    u = x * 1.0
    s = 0.0
    y = np.zeros_like(u)
    for t in range(9):
        if t % 3 == 0:
            y = u * a               # updated in place: a state the snapshots keep
        s += np.sum(y * u)
        u = np.sin(u) + a * 0.5
    return s


def test_a_step_reading_an_array_an_earlier_step_bound():
    # checkpointing ran the steps with the array bound before the loop, which did not exist:
    # numba could not compile the generated code ("Variable 'y' is not defined")
    x, a = np.array([0.51, 0.23, 0.91, 0.72]), 0.3
    with pytest.raises(AdjitError, match=r"checkpointing a loop whose steps bind 'y' to a "
                       r"new array that a later step reads.*Bind it before the loop"):
        adjit.grad(_bound_on_some_steps, argnums=(0, 1), checkpoint=2)(x, a)
    forward = numba.njit(_bound_on_some_steps)
    gx, ga = adjit.grad(_bound_on_some_steps, argnums=(0, 1), checkpoint="auto")(x, a)
    np.testing.assert_allclose(gx, fd_grad(forward, (x, a), 0), rtol=1e-7)
    assert ga == pytest.approx(fd_grad(forward, (x, a), 1), rel=1e-7)
    forward = numba.njit(_bound_before_the_loop)
    gx, ga = adjit.grad(_bound_before_the_loop, argnums=(0, 1), checkpoint=2)(x, a)
    np.testing.assert_allclose(gx, fd_grad(forward, (x, a), 0), rtol=1e-7)
    assert ga == pytest.approx(fd_grad(forward, (x, a), 1), rel=1e-7)
