"""Page faults of a gradient called again and again, counted in a fresh process optimized as
users run it (at the suite's NUMBA_OPT=0 the C library's thresholds end up elsewhere and
the cases these tests tell apart look alike)."""
import os
import subprocess
import sys

_MEASURE = """
import resource
for _ in range(3):
    g(*args)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    g(*args)
print(g.last_tape.tape_bytes, g.last_tape.snapshot_bytes,
      (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 10)
"""


FIXED_MMAP_THRESHOLD = {"MALLOC_MMAP_THRESHOLD_": str(128 * 1024)}
"""The environment under which glibc maps every block of 128 kB or more on its own and
unmaps it when freed: each such block allocated again faults all its pages, in any process.
(Left to itself, glibc raises the threshold as blocks are freed, and whether a block freed
at the end of a call is mapped again at the next depends on what the process allocated
before: a fresh clone's suite once counted 196 faults a call where a process alone counted
none.)"""


def tape_and_faults(tmp_path, program, **env):
    """(the tape's bytes, the checkpoint snapshots' bytes, minor page faults a call) of
    `g(*args)`, which the source `program` defines, after three warm-up calls, over ten
    calls; `env`: environment variables of that process beside the suite's."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, NUMBA_OPT="3", PYTHONPATH=os.pathsep.join(
        [root, os.environ.get("PYTHONPATH", "")]), **env)
    script = tmp_path / "faults.py"
    script.write_text(program + _MEASURE)
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    tape, snapshots, faults = out.stdout.split()[-3:]
    return int(tape), int(snapshots), float(faults)
