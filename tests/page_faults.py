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
print(g.last_tape.tape_bytes, (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 10)
"""


def tape_and_faults(tmp_path, program):
    """(the tape's bytes, minor page faults a call) of `g(*args)`, which the source
    `program` defines, after three warm-up calls, over ten calls."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, NUMBA_OPT="3", PYTHONPATH=os.pathsep.join(
        [root, os.environ.get("PYTHONPATH", "")]))
    script = tmp_path / "faults.py"
    script.write_text(program + _MEASURE)
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    tape, faults = out.stdout.split()[-2:]
    return int(tape), float(faults)
