"""The suite compiles with LLVM's optimizations off (tests/conftest.py sets NUMBA_OPT=0 for
speed); what users run is optimized. Here the tests that compare adjit's compiled gradients
to the bit or to hand-written adjoints run again in a process at numba's default level, so
that a difference only optimization shows (undefined behaviour in generated code, an
aliasing assumption) fails the suite."""
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
OPTIMIZED = [
    "tests/test_hand_adjoints.py",
    "tests/test_checkpoint.py::test_checkpointed_equals_a_recomputed_loop_bitwise",
    "tests/test_draws.py::test_pathwise_derivatives",
    # sums added in vector lanes (runtime/sums.py): the same numbers in every copy of a loop
    "tests/test_vector_math.py::test_split_loops_give_the_same_numbers_at_every_block_edge",
    "tests/test_vector_math.py::test_a_float32_summing_loop_stays_float32",
    "tests/test_vector_math.py::test_a_split_time_loop_checkpointed_and_recorded_"
    "are_identical_to_the_bit",
    "tests/test_vector_math.py::test_checkpointed_and_recorded_gradients_are_identical_to_the_bit",
    # numba caches nothing compiled at NUMBA_OPT=0 (the test is skipped there)
    "tests/test_distributed.py::test_workers_load_the_compiled_gradient_from_the_shared_cache",
]


@pytest.mark.spread
def test_gradients_compiled_at_numbas_default_optimization():
    env = dict(os.environ, NUMBA_OPT="3")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p",
                          "no:cacheprovider", *OPTIMIZED], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
    last = run.stdout.strip().splitlines()[-1]
    assert " passed" in last and "skipped" not in last, run.stdout[-2000:]
