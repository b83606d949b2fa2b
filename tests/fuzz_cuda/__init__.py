"""The kernel fuzzer: grammar (hypothesis strategy of numba.cuda kernels), oracle (sequential
run, race detector, finite differences), check, campaign. See docs/testing.md."""
import os

# numba's CUDA simulator unless the environment chooses (as tests/conftest.py does)
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

# numba-cuda 0.2x overloads np.row_stack, which numpy 2.5 removed: give numpy the alias back
# (np.vstack, which it was) in the campaign's process and in every worker it spawns, as
# tests/conftest.py does for the tests
import numpy as _np  # noqa: E402

if not hasattr(_np, "row_stack"):
    _np.row_stack = _np.vstack
