"""Test configuration: a bounded hypothesis profile for CI, a larger one for local runs."""
import os
import pathlib
import sys

# The CUDA tests (tests/test_cuda.py) run in numba's CUDA simulator unless the environment
# chooses: on a machine with a GPU, NUMBA_ENABLE_CUDASIM=0 runs the same tests on it.
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

# numba-cuda 0.2x registers an overload of np.row_stack, which numpy 2.5 removed: on a GPU
# machine with both, compiling any kernel raises AttributeError inside numba-cuda. The tests
# give numpy back the alias (np.vstack, which it was) so they can run there; adjit itself
# leaves numpy alone.
import numpy as _np

if not hasattr(_np, "row_stack"):
    _np.row_stack = _np.vstack

from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=25, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=60, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))

# The benchmark cases are also test programs: one definition of each.
_ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(_ROOT / "benchmarks"))
sys.path.insert(0, str(_ROOT / "examples"))
