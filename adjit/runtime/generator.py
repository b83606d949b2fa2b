"""numba's random generator state, saved and put back, for derivatives made of many passes.

A Jacobian or a Hessian is one jvp, vjp or Hessian-vector product per column or row: each
pass evaluates the function again. A function that draws random numbers without seeding
numba's generator itself would draw other numbers in every pass, and the columns would be
derivatives of different functions. The generated loops over the passes (adjit/higher.py)
save the generator's state once and put it back before each pass: every column sees the
draws one evaluation of the function would make, and afterwards the generator is where one
evaluation leaves it.

The state is numba's thread-local `rnd_state_t` of np.random (numba/cpython/randomimpl.py:
the Mersenne Twister words, the index, and the cached Gaussian), copied as bytes.
"""
import numba
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.core.registry import cpu_target
from numba.cpython import randomimpl
from numba.extending import intrinsic

STATE_BYTES = cpu_target.target_context.get_abi_sizeof(randomimpl.rnd_state_t)
"""The size of numba's np.random state."""


def _copier(into_buffer):
    @intrinsic
    def copy_state(typingctx, buffer):
        if not (isinstance(buffer, types.Array) and buffer.dtype == types.uint8):
            return None
        sig = types.void(buffer)

        def codegen(context, builder, sig, args):
            array = context.make_array(sig.args[0])(context, builder, args[0])
            state = builder.bitcast(randomimpl.get_state_ptr(context, builder, "np"),
                                    cgutils.voidptr_t)
            data = builder.bitcast(array.data, cgutils.voidptr_t)
            size = ir.Constant(cgutils.intp_t, STATE_BYTES)
            if into_buffer:
                cgutils.raw_memcpy(builder, data, state, size, 1)
            else:
                cgutils.raw_memcpy(builder, state, data, size, 1)
            return context.get_dummy_value()
        return sig, codegen
    return copy_state


_save_into = _copier(True)
_restore_from = _copier(False)


@numba.njit
def save_generator():
    """A copy of numba's np.random state (bytes)."""
    saved = np.empty(STATE_BYTES, np.uint8)
    _save_into(saved)
    return saved


@numba.njit
def restore_generator(saved):
    """Put numba's np.random state back to `saved` (from save_generator)."""
    _restore_from(saved)
