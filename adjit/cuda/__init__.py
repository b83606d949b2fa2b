"""adjit on CUDA: adjoint kernels (kernel.py) and time loops of kernel launches (loop.py).

    adj = adjit.cuda.adjoint_kernel(k, argnums=(0, 1))
    adj[blocks, threads](x, p, out, x_bar, p_bar, out_bar)

    loop = adjit.cuda.time_loop(step_kernel, state=(0, 2), params=(1,))

Device functions' gradients are grad(f, target="cuda"); docs/cuda.md says what each does.
"""
from .kernel import AdjointKernel, adjoint_kernel
from .loop import LoopForward, TimeLoop, time_loop
from .simulator import make_shared_arrays_thread_safe

make_shared_arrays_thread_safe()      # a no-op on a GPU; see simulator.py

__all__ = ["adjoint_kernel", "AdjointKernel", "time_loop", "TimeLoop", "LoopForward"]
