"""Which OpenBLAS kernels the benchmark's matrix products run on, for its header.

numpy's and numba's `@` call OpenBLAS, which picks its kernels for the CPU when it loads,
unless OPENBLAS_CORETYPE names them. Some machines set that variable for every process (this
project's CI machine sets OPENBLAS_CORETYPE=Haswell, with OPENBLAS_L2_SIZE, because older
OpenBLAS builds compute wrong results on its CPU): current OpenBLAS then runs its AVX2 kernels
on a CPU with AVX-512, and the MLP's 256 x 64 by 64 x 128 product takes 70 us instead of 48.
XLA compiles its own products for the CPU it runs on, so the rows with matrix products
compare OpenBLAS's kernels as much as the derivatives. The benchmark changes nothing here (a
machine's setting may be there for a reason); it says in its header which kernels ran and
what OpenBLAS would choose by itself. To measure with OpenBLAS's own choice, unset both
variables for that command alone:

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE make bench
"""
import os
import subprocess
import sys

# asks the OpenBLAS that numba's products use (scipy's) which kernels it runs
_PROBE = """
import ctypes, sys
import scipy.linalg.cython_blas
names = [l.split()[-1] for l in open('/proc/self/maps') if 'openblas' in l.lower()]
for path in dict.fromkeys(names):
    lib = ctypes.CDLL(path)
    for sym in ('scipy_openblas_get_corename', 'scipy_openblas_get_corename64_',
                'openblas_get_corename', 'openblas_get_corename64_'):
        f = getattr(lib, sym, None)
        if f is not None:
            f.restype = ctypes.c_char_p
            print(f().decode())
            sys.exit(0)
"""

_SETTINGS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def chosen_core(env=None):
    """The kernels OpenBLAS runs in a fresh process with the environment `env` (this one's
    by default); None where it cannot be asked (not Linux, not OpenBLAS)."""
    try:
        out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                             timeout=60, env=env)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def describe():
    """A sentence for the benchmark's header: the kernels OpenBLAS runs here and, where the
    environment chose them, the ones it would choose itself; None where it cannot be asked."""
    core = chosen_core()
    if core is None:
        return None
    set_here = [f"{k}={os.environ[k]}" for k in _SETTINGS if os.environ.get(k)]
    if not os.environ.get("OPENBLAS_CORETYPE"):
        return f"OpenBLAS runs its {core} kernels (its own choice for this CPU)"
    own = chosen_core({k: v for k, v in os.environ.items() if k not in _SETTINGS})
    if own is None or own == core:
        return f"OpenBLAS runs its {core} kernels ({', '.join(set_here)} in the environment)"
    return (f"OpenBLAS runs its {core} kernels, as {', '.join(set_here)} in the environment "
            f"asks; by itself it would choose {own} for this CPU")
