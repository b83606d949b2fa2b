"""The kernel fuzzer: grammar (hypothesis strategy of numba.cuda kernels), oracle (sequential
run, race detector, finite differences), check, campaign. See docs/testing.md."""
import os

# numba's CUDA simulator unless the environment chooses (as tests/conftest.py does)
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
