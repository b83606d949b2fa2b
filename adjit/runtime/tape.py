"""Run-time helpers that generated code calls."""
import numba
import numpy as np


@numba.njit(cache=False)
def grow_tape(tape):
    """A tape twice as long holding the same values (called only when a push finds it full)."""
    return reserve_tape(tape, 2 * tape.shape[0])


@numba.njit(cache=False)
def reserve_tape(tape, need):
    """`tape` if it holds `need` values, else a copy grown (by doubling) to hold them."""
    if need <= tape.shape[0]:
        return tape
    size = tape.shape[0]
    while size < need:
        size *= 2
    bigger = np.empty(size, tape.dtype)
    bigger[: tape.shape[0]] = tape
    return bigger
