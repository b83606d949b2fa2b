"""Binomial checkpointing ("Revolve", Griewank & Walther) for a checkpointed time loop.

The generated gradient runs the loop's steps without recording anything, keeping snapshots
of the loop state at a few steps (`descent`), and afterwards asks `next_action` what to do
until every step has been reversed:

    RESTORE s       copy snapshot slot s back into the state
    ADVANCE a, b    run steps a .. b-1 without recording
    SAVE s          copy the state into snapshot slot s
    STEP j, j2      run steps j .. j2-1 with the tape, then their adjoints from j2-1 down to
                    j (the state is at step j; j2 = j + 1 unless blocks are used, below)
    DONE

Snapshots are used as a stack: slot k holds the state at the start of the k-th pending
segment. Reversing a segment [a, b) whose start is in slot k with c = S - 1 - k free slots:

* one step: STEP a (after RESTORE k unless the state is already there);
* no free slot: for j = b-1 down to a, RESTORE k, ADVANCE a..j, STEP j;
* else split at m = a + d: ADVANCE a..m, SAVE k+1, reverse [m, b) with slot k+1, then
  reverse [a, m) with slot k again.

Blocks: with `block` = L > 1 the schedule works on blocks of L consecutive steps (the last
one may be shorter): snapshots are taken at block starts, ADVANCE runs whole blocks, and
STEP j, j2 runs the steps of one block with the tape, then their adjoints in reverse (the
tape holds L steps). `next_action`'s arguments are steps, not blocks. With a snapshot at
every block's start (`auto_plan` picks L and the snapshot count so that they fit the memory
allowed) no step is advanced again: each runs twice, plainly and then with the tape.

The last block is recorded by the first pass itself (the generated forward sweep runs the
steps from `last_block` on with the tape, and the backward sweep reverses them first): the
schedule covers the steps before it. The generated schedule loop starts with UNWIND (the
adjoints of the last block, whose tape the first pass left: STEP without its recording), so
that the steps' adjoints are written once in the generated code. So a loop in one block
(`auto_plan` picks that where recording every step fits the memory allowed and a step
records only a few numbers) runs each step once, as without checkpointing.

With c free slots and each step advanced (recomputed without the tape) at most r times, at
most L(c, r) = C(c + r + 1, c + 1) steps can be reversed (L(c, r) = L(c, r-1) + L(c-1, r)).
The split takes the smallest such r for the segment (no step is recomputed more than r
times) and, among the splits that keep that bound, leaves L(c-1, r-1) steps to the second
part: this matches the fewest recomputed steps that an exhaustive search finds (checked in
tests/test_checkpoint.py), as Revolve's schedule does. The state
array `st` keeps the stack, a short queue of actions, and counters of the work done.
"""
import math

import numba
import numpy as np
from .jitcache import key_by_level

DONE, RESTORE, ADVANCE, SAVE, STEP = 0, 1, 2, 3, 4
UNWIND = 5
"""The generated schedule loop's first action (next_action never gives it): the adjoints
of the last block's steps, recorded by the first pass."""

_ACTION, _ARG1, _ARG2, _CUR, _T, _S, _DEPTH, _QLEN, _QHEAD = 0, 1, 2, 3, 4, 5, 6, 7, 8
_QUEUE = 9          # 3 actions of 3 ints
_ADVANCED, _TAPED = 18, 19
_STEPS, _BLOCK = 20, 21     # the loop's steps and the block length (_T counts blocks)
_FRAMES = 22        # frames of 5 ints: a, b, slot, phase, j (in blocks)
_FRAME = 5


@numba.njit(cache=True)
def _binomial_at_least(c, r, cap):
    """min(C(c + r, r), cap), computed without overflow."""
    val = 1
    for i in range(1, r + 1):
        val = val * (c + i) // i
        if val >= cap:
            return cap
    return val


@numba.njit(cache=True)
def split(length, free):
    """Length of the first part of a segment of `length` steps with `free` snapshot slots."""
    c = min(free, length)
    r = 0
    while _binomial_at_least(c + 1, r, length) < length:     # L(c, r) < length
        r += 1
    lo = max(1, length - _binomial_at_least(c, r, length))   # second part <= L(c-1, r)
    hi = min(_binomial_at_least(c + 1, r - 1, length), length - 1)     # first <= L(c, r-1)
    return max(lo, min(hi, length - _binomial_at_least(c, r - 1, length)))


@numba.njit(cache=True)
def _blocks(steps, block):
    return (steps + block - 1) // block if steps > 0 else 0


@numba.njit(cache=True)
def slots(steps, snapshots, block=1):
    """How many snapshot slots a loop of `steps` steps uses (at most `snapshots`)."""
    return max(1, min(snapshots, _blocks(steps, block)))


@numba.njit(cache=True)
def descent(steps, snapshots, block=1):
    """The steps before which the first (forward) pass saves snapshots 0, 1, ...: a
    -1-terminated int array."""
    s = slots(steps, snapshots, block)
    out = np.full(s + 1, -1, np.int64)
    blocks = _blocks(steps, block)
    if blocks <= 0:
        return out
    a, k = 0, 0
    out[0] = 0
    while blocks - a > 1 and s - 1 - k > 0:
        a += split(blocks - a, s - 1 - k)
        k += 1
        out[k] = a * block
    return out


@numba.njit(cache=True)
def start(steps, snapshots, block=1):
    """The schedule's state after the forward pass (which ran all steps, saving snapshots
    where `descent` says): the segments still to reverse, one per snapshot."""
    s = slots(steps, snapshots, block)
    blocks = _blocks(steps, block)
    st = np.zeros(_FRAMES + _FRAME * (s + 2), np.int64)
    st[_T] = blocks
    st[_S] = s
    st[_CUR] = blocks
    st[_STEPS] = max(steps, 0)
    st[_BLOCK] = block
    if blocks <= 0:
        return st
    pos = descent(steps, snapshots, block)
    k = 0
    while k + 1 <= s and pos[k + 1] >= 0:
        _push(st, pos[k] // block, blocks, k, 1, pos[k + 1] // block)  # waits for its 2nd part
        k += 1
    _push(st, pos[k] // block, blocks, k, 0, 0)
    return st


@numba.njit(cache=True)
def _step_of(st, a):
    """The first step of block a (the loop's end for a = the number of blocks)."""
    return min(a * st[_BLOCK], st[_STEPS])


@numba.njit(cache=True)
def auto_plan(steps, snapshot_bytes, step_bytes, budget):
    """checkpoint="auto": (snapshots, block) for a loop whose state takes `snapshot_bytes`
    and whose tape takes `step_bytes` per step (-1: not known before the loop runs), within
    `budget` bytes for both. A step that records at most SMALL_STEP bytes, where recording
    every step fits half the budget: one block (the first pass records every step, which
    then runs once; reading a few numbers back costs less than running the step again).
    Else, where they fit, blocks of about sqrt(steps * snapshot / step)
    steps with a snapshot at every block's start: memory about 2 sqrt(steps * snapshot *
    step), and each step runs twice (plainly, then with the tape). Where they do not, blocks
    that fill half the budget with tape and as many snapshots as the rest holds (the
    binomial schedule over the blocks then advances some steps again). Without a known step
    size: about sqrt(steps) snapshots of single steps (each step recomputed at most about
    twice)."""
    if steps <= 1 or step_bytes <= 0:
        return auto_snapshots(steps), 1
    if step_bytes <= SMALL_STEP and steps * step_bytes <= budget // 2:
        return 1, steps
    snap = max(snapshot_bytes, 8)
    block = max(1, min(steps, int(math.ceil(math.sqrt(steps * snap / step_bytes)))))
    blocks = _blocks(steps, block)
    if blocks * snap + block * step_bytes <= budget:
        return blocks, block
    block = max(1, min(steps, budget // (2 * step_bytes)))
    return max(1, min(_blocks(steps, block), (budget - block * step_bytes) // snap)), block


@numba.njit(cache=True)
def _push(st, a, b, slot, phase, j):
    f = _FRAMES + _FRAME * st[_DEPTH]
    st[f] = a
    st[f + 1] = b
    st[f + 2] = slot
    st[f + 3] = phase
    st[f + 4] = j
    st[_DEPTH] += 1


@numba.njit(cache=True)
def _queue(st, action, arg1, arg2):
    q = _QUEUE + 3 * st[_QLEN]
    st[q] = action
    st[q + 1] = arg1
    st[q + 2] = arg2
    st[_QLEN] += 1


@numba.njit(cache=True)
def _restore_to(st, a, slot):
    if st[_CUR] != a:
        _queue(st, RESTORE, slot, 0)
        st[_CUR] = a


@numba.njit(cache=True)
def _fill(st):
    """Queue the next actions (at least one)."""
    while st[_QLEN] == 0:
        if st[_DEPTH] == 0:
            _queue(st, DONE, 0, 0)
            return
        f = _FRAMES + _FRAME * (st[_DEPTH] - 1)
        a, b, slot, phase, j = st[f], st[f + 1], st[f + 2], st[f + 3], st[f + 4]
        if phase == 1:              # [j, b) is reversed: now [a, j) from the same slot
            st[f + 1] = j
            st[f + 3] = 0
            continue
        if phase == 2:              # no free slot: step j from the segment's start
            if j < a:
                st[_DEPTH] -= 1
                continue
            _restore_to(st, a, slot)
            if j > a:
                _queue(st, ADVANCE, a, j)
                st[_ADVANCED] += _step_of(st, j) - _step_of(st, a)
            _queue(st, STEP, j, j + 1)
            st[_TAPED] += _step_of(st, j + 1) - _step_of(st, j)
            st[_CUR] = j + 1
            st[f + 4] = j - 1
            continue
        length = b - a
        free = st[_S] - 1 - slot
        if length == 1:
            _restore_to(st, a, slot)
            _queue(st, STEP, a, a + 1)
            st[_TAPED] += _step_of(st, a + 1) - _step_of(st, a)
            st[_CUR] = a + 1
            st[_DEPTH] -= 1
        elif free <= 0:
            st[f + 3] = 2
            st[f + 4] = b - 1
        else:
            m = a + split(length, free)
            _restore_to(st, a, slot)
            _queue(st, ADVANCE, a, m)
            st[_ADVANCED] += _step_of(st, m) - _step_of(st, a)
            _queue(st, SAVE, slot + 1, 0)
            st[_CUR] = m
            st[f + 3] = 1
            st[f + 4] = m
            _push(st, m, b, slot + 1, 0, 0)


@numba.njit(cache=True)
def next_action(st):
    """The next action: st[0] is its kind, st[1] and st[2] its arguments."""
    if st[_QLEN] == st[_QHEAD]:
        st[_QLEN] = 0
        st[_QHEAD] = 0
        _fill(st)
    q = _QUEUE + 3 * st[_QHEAD]
    st[_ACTION] = st[q]
    st[_ARG1] = st[q + 1]
    st[_ARG2] = st[q + 2]
    if st[q] == ADVANCE or st[q] == STEP:        # blocks -> steps
        st[_ARG1] = _step_of(st, st[q + 1])
        st[_ARG2] = _step_of(st, st[q + 2])
    st[_QHEAD] += 1
    return st[_ACTION]


@numba.njit(cache=True)
def recomputed(st):
    """Steps run again after the first pass: advanced without the tape, and with it."""
    return st[_ADVANCED], st[_TAPED]


@numba.njit(cache=True)
def add_counts(st, stats, steps):
    """Add this loop's `steps`, steps advanced again and steps taped again to stats[2:5]
    (the TapeReport counts of the generated function)."""
    stats[2] += steps
    stats[3] += st[_ADVANCED]
    stats[4] += st[_TAPED]


SMALL_STEP = 64
"""checkpoint="auto" records every step of a loop whose step records at most this many bytes
(8 numbers), where that fits: the pendulum's leapfrog records 4 numbers a step, and its
gradient at 10^6 steps took 3.8 times the forward with blocks run twice against 2.3 times
recorded; the heat equation's step records 8 kB (a value per cell), which through main
memory costs more than running the step again (23 times the forward recorded, 4.7 in
blocks)."""


@numba.njit(cache=True)
def put(dst, src):
    """dst[...] = src for two arrays of one shape and dtype (a snapshot taken or put back),
    element by element: numba's slice assignment links its shape-mismatch error, and with it
    numba's string functions, into every checkpointed gradient."""
    k = 0
    for v in src.flat:
        dst.flat[k] = v
        k += 1


@numba.njit(cache=True)
def last_block(steps, block):
    """The first step of the last block (0 for no steps): where the first pass starts
    recording."""
    if steps <= 0:
        return 0
    return ((steps - 1) // block) * block


@numba.njit(cache=True)
def auto_snapshots(steps):
    """checkpoint="auto": about sqrt(steps) snapshots (at least 2), so that each step is
    recomputed at most about twice."""
    s = 2
    while s * s < steps:
        s += 1
    return s


key_by_level(globals())     # numba caches each level apart (jitcache.py)
