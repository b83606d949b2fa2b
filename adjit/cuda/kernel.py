"""adjit on CUDA: adjoint kernels (and, through grad(..., target="cuda"), device functions).

`adjoint_kernel(kernel, argnums)` takes a `numba.cuda.jit` kernel (or its Python function)
and returns a kernel launched like it, with the same grid:

    adj = adjit.cuda.adjoint_kernel(k, argnums=(0, 1))
    adj[blocks, threads](x, p, out, x_bar, p_bar, out_bar)

Its arguments are the primal arguments in their order, then the shadows of the `argnums`
arrays (in argnums order), then the shadows of the other arrays the kernel writes (in
argument order); every shadow has its array's shape. Output shadows carry the incoming
cotangent; input shadows accumulate (+=) the gradient. As in Enzyme, the adjoint kernel
also computes the primal: each thread redoes its part of the kernel (writing the outputs
again: give accumulators written with cuda.atomic.add fresh zeros if you read them after)
and then runs its adjoint. Shadow updates use cuda.atomic.add, except `a_bar[i]` where
`i = cuda.grid(1)` (or `i, j = cuda.grid(2)`, or `blockIdx.x * blockDim.x + threadIdx.x`
written out), which only this thread touches. A stencil's adjoint (`out[i] = f(x[i - 1], x[i],
x[i + 1])` in a kernel without loops or shared memory) is generated in gather form: each
thread adds up the terms of its own `x_bar[i]`, computing its neighbours' adjoints again,
with plain updates, and a second kernel launched after it (same grid) consumes the output
shadows (codegen/gather.py). A differentiable scalar is passed as a one-element array, and
its shadow is one element accumulated atomically.

Generated code allocates nothing: values the backward sweep needs are recomputed or kept in
registers, or recorded in fixed-size `cuda.local.array`s when the loop that records them has
a constant trip count; a loop whose trip count is known only when it runs is replayed from
its start in the backward sweep instead (reverse/replay.py). Shared-memory tiles
(`cuda.shared.array`) get shadow tiles in shared memory and `cuda.syncthreads()` barriers run
in reverse. What cannot be differentiated exactly is an AdjitError (docs/cuda.md). Under
numba's CUDA simulator (`NUMBA_ENABLE_CUDASIM=1`) the same code runs on the CPU.
`time_loop` (cuda/loop.py) differentiates a host loop of launches.
"""
import threading

import numba

from ..custom import register_cuda_typeof
from ..errors import AdjitError
from ..frontend.source import read_function, unwrap

register_cuda_typeof()      # (kernels calling custom_vjp functions, on a GPU)


def adjoint_kernel(kernel, argnums=0):
    """The adjoint kernel of a CUDA kernel (see the module docstring)."""
    return AdjointKernel(kernel, argnums)


class AdjointKernel:
    """An adjoint kernel, compiled per argument types at its first launch with them."""

    def __init__(self, kernel, argnums):
        fn = getattr(kernel, "py_func", None) or unwrap(kernel)
        self.fn = fn
        src = read_function(fn)
        self.params = src.params
        items = (argnums,) if isinstance(argnums, int) and not isinstance(argnums, bool) \
            else tuple(argnums) if isinstance(argnums, (tuple, list)) else None
        if not items or not all(isinstance(k, int) and not isinstance(k, bool) and
                                -len(self.params) <= k < len(self.params) for k in items):
            raise AdjitError(f"argnums={argnums!r} for kernel '{src.loc.name}' "
                             f"({src.loc.filename}, line {src.loc.firstlineno}) is not an int "
                             f"or tuple of ints naming its parameters "
                             f"({', '.join(self.params)}).")
        self.argnums = tuple(k % len(self.params) for k in items)
        self._specs = {}
        self._lock = threading.RLock()
        self.source = None

    def specialize(self, arg_types):
        from numba import cuda

        from ..transform import build_kernel
        key = tuple(arg_types)
        with self._lock:
            spec = self._specs.get(key)
            if spec is None:
                source, pyfunc, shadows, after, shadowed = build_kernel(self.fn, self.argnums,
                                                                        key)
                spec = (source, cuda.jit(pyfunc), shadows, [cuda.jit(f) for f in after],
                        shadowed)
                self._specs[key] = spec
            self.source = spec[0]
            return spec

    def source_for(self, *args):
        """The generated adjoint kernel for these primal arguments (no shadows needed)."""
        return self.specialize(tuple(numba.typeof(a) for a in args))[0]

    def shadows_for(self, *args):
        """Names of the shadow parameters, in order, for these primal arguments."""
        return self.specialize(tuple(numba.typeof(a) for a in args))[2]

    def __getitem__(self, config):
        def launch(*args):
            n = len(self.params)
            spec = self.specialize(tuple(numba.typeof(a) for a in args[:n]))
            if len(args) != n + len(spec[2]):
                raise AdjitError(f"the adjoint of kernel '{self.fn.__name__}' takes "
                                 f"{n + len(spec[2])} arguments: "
                                 f"{', '.join(list(self.params) + spec[2])}; got {len(args)}.")
            for name, k, shadow in zip(spec[2], spec[4], args[n:]):
                # (a shadow of another shape would be read and written out of its bounds,
                # or in another order)
                shape = tuple(getattr(shadow, "shape", ()))
                if shape != tuple(args[k].shape):
                    raise AdjitError(f"the adjoint of kernel '{self.fn.__name__}' was launched "
                                     f"with its shadow {name} of shape {shape} for "
                                     f"'{self.params[k]}' of shape {tuple(args[k].shape)}. "
                                     "Pass each shadow with its array's shape (np.zeros_like "
                                     "of the array, or cuda.device_array_like).")
            out = spec[1][config](*args)
            for kernel in spec[3]:      # (a gather-form adjoint: the consumed shadows zeroed)
                kernel[config](*args)
            return out
        return launch

    def __repr__(self):
        return f"<adjit adjoint kernel of {self.fn.__name__} argnums={self.argnums}>"

