"""Run-time helpers that generated code calls."""
import numba
import numpy as np


@numba.njit(cache=False)
def grow_tape(tape):
    """A tape twice as long holding the same values (called only when a push finds it full)."""
    bigger = np.empty(2 * tape.shape[0], tape.dtype)
    bigger[: tape.shape[0]] = tape
    return bigger
