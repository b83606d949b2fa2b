"""Test configuration: a bounded hypothesis profile for CI, a larger one for local runs."""
import os
import pathlib
import sys

# The CUDA tests (tests/test_cuda.py) run in numba's CUDA simulator unless the environment
# chooses: on a machine with a GPU, NUMBA_ENABLE_CUDASIM=0 runs the same tests on it.
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

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
