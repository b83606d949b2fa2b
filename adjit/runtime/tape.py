"""Run-time helpers that generated code calls, compiled once per machine (on-disk cache,
lazily: importing adjit compiles nothing)."""
import os

import numba
import numpy as np

from ..errors import AdjitError
from .jitcache import key_by_level


def _physical_memory():
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 16 << 30


INITIAL_CAPACITY = 1024
"""The values a tape stack holds at a gradient's first call (it grows by doubling)."""

DEFAULT_TAPE_LIMIT = _physical_memory() // 2
"""The tape_limit gradients get unless they pass their own: half the machine's memory."""


def _last_level_cache():
    """The largest CPU cache's size in bytes (Linux's sysfs), or 32 MiB where unknown."""
    root = "/sys/devices/system/cpu/cpu0/cache"
    sizes = []
    try:
        for entry in os.listdir(root):
            with open(os.path.join(root, entry, "size")) as fh:
                text = fh.read().strip().upper()
            scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
            sizes.append(int(text.rstrip("KMG")) * scale)
    except (OSError, ValueError):
        pass
    return max(sizes) if sizes else 32 << 20


RECORDED_TAPE_BYTES = max(_last_level_cache(), 8 << 20)
"""A gradient left to choose (checkpoint=None) whose tape takes more than this (the largest
CPU cache: a tape beyond it is written to and read back from main memory) checkpoints its
time loops with checkpoint="auto": its first call is capped here and made again where the
tape outgrows it, a later call's tape found beyond it makes the next calls checkpoint
(GradientFunction._run)."""

LIMIT_MESSAGE = "adjit: the tape would exceed tape_limit"
"""How a tape-limit error starts; the Python-side caller adds where and what to do."""


class TapeLimitError(AdjitError):
    """The tape (or the checkpoints' snapshots) would take more than tape_limit bytes.
    Compiled code raises it with the numbers alone and Python writes the message: text
    formatted in compiled code (str of an int, concatenation) would link numba's string
    functions into every gradient, a quarter of the machine code numba generates for a
    small one."""

    def __init__(self, what, need, room):
        super().__init__(f"{LIMIT_MESSAGE}: {what} {need} bytes, {room} are allowed")


@numba.njit(cache=True)
def tape_room(limit, cap):
    """The bytes a gradient's tape may take: `limit`, or half this machine's memory for -1
    (so generated source holds no machine-dependent number; numba freezes the global it
    reads into the machine code, so its disk cache is keyed by that value: key_by_level
    below, and codegen/emit.cache_file for the gradients that call it), and at most `cap` where that
    is positive: a gradient left to choose (checkpoint=None) runs its first call capped at
    the CPU's largest cache, so that a tape which outgrows it stops there and the call is
    made again with its time loops checkpointed (GradientFunction._first_call)."""
    room = DEFAULT_TAPE_LIMIT if limit < 0 else limit
    if 0 < cap < room:
        return cap
    return room


@numba.njit(cache=True)
def reserve_tape(tape, need, room, held=0):
    """`tape` if it holds `need` values, else a copy grown to hold them: twice as long, or
    exactly `need` where a loop reserves more than that at once. `held`: the bytes the
    gradient's other stack has allocated, so that the two together stay within `room`
    bytes; more raises AdjitError."""
    if need <= tape.shape[0]:
        return tape
    if need * 8 + held > room:
        raise TapeLimitError("it needs", need * 8 + held, room)
    size = min(max(2 * tape.shape[0], need), (room - held) // 8)
    bigger = np.empty(size, tape.dtype)
    for i in range(tape.shape[0]):      # (a slice assignment would link numba's
        bigger[i] = tape[i]             # shape-mismatch error into every gradient)
    return bigger


@numba.njit(cache=True)
def tape_start(last, room):
    """The values a tape stack starts with: as many as it held at most at the gradient's
    last call from Python (`last`, kept in the tape statistics: reverse/tape.py
    length_statements; 0 at the first call and from @njit code), at least INITIAL_CAPACITY,
    within `room` bytes. A gradient called again with arguments of the same size then
    allocates its tape once instead of growing it by doubling: each larger array is a fresh
    allocation, which the C library maps from the system page by page (on this project's
    machine 917 page faults a call of the heat equation's checkpointed gradient, a third of
    its time), where an allocation of the size the last call freed is reused. Never more
    than `room` holds, so that a tape_limit below INITIAL_CAPACITY's 8 KB holds too (the
    first push past it grows the stack, which checks the limit)."""
    return min(max(INITIAL_CAPACITY, last), room // 8)


KEPT_TAPE_BYTES = RECORDED_TAPE_BYTES
"""The largest tape a gradient called from Python keeps for its next call (Transformed in
pipeline.py): a tape that streams through main memory costs its traffic either way."""


@numba.njit(cache=True)
def tape_from(kept, n):
    """The float tape a gradient starts with: the first n values of `kept` (the buffer kept
    from the last call from Python, empty from @njit code) where it holds them, else a new
    array. Allocating the tape again on every call costs more than filling it where other
    arrays of the gradient are allocated too: the C library returns the memory two freed
    arrays of a few hundred kB leave at the top of its heap to the system, and maps it again
    page by page at the next call (a softmax over 10^5 numbers: 1.3 ms a gradient instead of
    0.4)."""
    if kept.shape[0] >= n:
        return kept[:n]
    return np.empty(n)


@numba.njit(cache=True)
def int_tape_from(kept, skip, n):
    """The integer tape a gradient starts with: n values of `kept` after the first `skip`
    (the float tape's, tape_from), viewed as int64, where it holds them; else a new array."""
    if kept.shape[0] >= skip + n:
        return kept[skip:skip + n].view(np.int64)
    return np.empty(n, np.int64)


@numba.njit(cache=True)
def grow_tape(tape, room, held=0):
    """A tape twice as long holding the same values (called only when a push finds it full;
    `held` as for reserve_tape)."""
    return reserve_tape(tape, tape.shape[0] + 1, room, held)


@numba.njit(cache=True)
def check_room(need, room):
    """Raise AdjitError when storage of `need` bytes exceeds the `room` left."""
    if need > room:
        raise TapeLimitError("checkpoint snapshots need", need, room)
    return room - need


# numba caches each level apart (jitcache.py), tape_room each machine's memory apart
key_by_level(globals(), {"tape_room": (("DEFAULT_TAPE_LIMIT", DEFAULT_TAPE_LIMIT),)})
