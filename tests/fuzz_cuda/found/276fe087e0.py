"""Found by the kernel fuzzer (2026-11-27): MISMATCH-wrong: shadow of a read-only array  [NEW]

    d L / d x (read only):
      adjit  [ 0.917222,  1.573005, -0.016295, -1.694405,  1.045357,  1.165501,  0.      ,  0.      ,  0.      ,  0.      ]
      FD     [0., 0., 0., 0., 0., 0., 0., 0., 0., 0.]

Arguments (x: float64 (10,), out: float64 (10,), n=8; values from seed 0):
    adjit.cuda.adjoint_kernel(k, argnums=(0,))[3, 4](x, out, n, <shadows>)

Run: .venv/bin/python tests/fuzz_cuda/found/276fe087e0.py  (exit status 1 while it
still mismatches). Not part of `make test`.
"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))   # tests/

from fuzz_cuda.check import check  # noqa: E402
from fuzz_cuda.grammar import Kernel  # noqa: E402

SOURCE = '''\
@cuda.jit
def k(x, out, n):
    i = cuda.grid(1)
    if i >= 1 and i < n - 1:
        out[i] = x[i - 1]
        out[i] = i
'''
KERNEL = Kernel(SOURCE, params=(('x', 'f'), ('out', 'f'), ('n', 'n')),
                argnums=(0,), launch=(3, 4), seed=0)

if __name__ == "__main__":
    out = check(KERNEL)
    print(out.label, out.reason)
    print(out.detail)
    sys.exit(out.status == "mismatch")
