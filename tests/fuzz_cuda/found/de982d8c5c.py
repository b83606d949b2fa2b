"""Found by the kernel fuzzer (2026-11-25): MISMATCH-wrong: shadow of a read-and-written array  [known: in-place write at non-grid index]

    d L / d out (read and written):
      adjit  [-1.312322, -1.183335,  3.46964 , -1.541567, -0.139658, -4.688818, 10.514525, -2.418041,  0.798837, -0.011008]
      FD     [ 0.      , -0.591668,  2.313093, -1.156176, -0.111726, -3.907348,  9.01245 , -2.115786,  0.798837, -0.011008]

Arguments (out: float64 (10,); values from seed 162007):
    adjit.cuda.adjoint_kernel(k, argnums=(0,))[4, 2](out, <shadows>)

Run: .venv/bin/python tests/fuzz_cuda/found/de982d8c5c.py  (exit status 1 while it
still mismatches). Not part of `make test`.
"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))   # tests/

from fuzz_cuda.check import check  # noqa: E402
from fuzz_cuda.grammar import Kernel  # noqa: E402

SOURCE = '''\
@cuda.jit
def k(out):
    t = cuda.grid(1)
    i = t
    out[i] *= i
'''
KERNEL = Kernel(SOURCE, params=(('out', 'f'),),
                argnums=(0,), launch=(4, 2), seed=162007)

if __name__ == "__main__":
    out = check(KERNEL)
    print(out.label, out.reason)
    print(out.detail)
    sys.exit(out.status == "mismatch")
