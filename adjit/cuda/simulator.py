"""numba's CUDA simulator, made safe for shared arrays.

The simulator runs each CUDA thread of a block as a Python thread. `cuda.shared.array(...)`
gives every thread of the block one array, found by the calling file and line: the first
thread to arrive allocates it and the others look it up. That lookup is a check and then a
store with no lock (numba-cuda 0.30), so a thread switch between them gives two threads two
different arrays: a block sum then silently drops the other threads' terms. adjit's adjoint
kernels sum the parameters' adjoints over a block in a shared array, and the simulator is
where CI and users without a GPU run them, so importing adjit.cuda under the simulator makes
that allocation atomic. Nothing changes on a GPU, and nothing else about the simulator.
"""
import sys
import threading

import numpy as np
from numba import config

_LOCK = threading.Lock()


def make_shared_arrays_thread_safe():
    """Under the simulator, make `cuda.shared.array` allocate each array once per block
    under a lock; returns True when the simulator's allocation is (now) safe."""
    if not config.ENABLE_CUDASIM:
        return False
    try:
        from numba.cuda import types
        from numba.cuda.np import numpy_support
        from numba.cuda.simulator.kernelapi import FakeCUDAShared
    except ImportError:                       # a numba-cuda that moved its simulator
        return False
    if getattr(FakeCUDAShared.array, "adjit_locked", False):
        return True
    unsafe = FakeCUDAShared.array

    def array(self, shape, dtype, alignment=None):
        if shape == 0 or alignment is not None:       # dynamic shared memory; errors
            return unsafe(self, shape, dtype, alignment)
        frame = sys._getframe(1)
        caller = (frame.f_code.co_filename, frame.f_lineno)
        with _LOCK:
            found = self._allocations.get(caller)
            if found is None:
                if isinstance(dtype, types.Type):
                    dtype = numpy_support.as_dtype(dtype)
                found = self._allocations[caller] = np.empty(shape, dtype)
            return found

    array.adjit_locked = True
    array.__doc__ = unsafe.__doc__
    FakeCUDAShared.array = array
    return True
