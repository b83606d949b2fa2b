"""Run-time helpers that generated code calls, compiled once per machine (on-disk cache)."""
import numba
import numpy as np

_SIGNATURES = ["float64[::1](float64[::1], int64)", "int64[::1](int64[::1], int64)"]


@numba.njit(_SIGNATURES, cache=True)
def reserve_tape(tape, need):
    """`tape` if it holds `need` values, else a copy grown (by doubling) to hold them."""
    if need <= tape.shape[0]:
        return tape
    size = max(tape.shape[0], 1)
    while size < need:
        size *= 2
    bigger = np.empty(size, tape.dtype)
    bigger[: tape.shape[0]] = tape
    return bigger


@numba.njit(["float64[::1](float64[::1])", "int64[::1](int64[::1])"], cache=True)
def grow_tape(tape):
    """A tape twice as long holding the same values (called only when a push finds it full)."""
    return reserve_tape(tape, 2 * tape.shape[0])
