"""Found by the kernel fuzzer (2026-11-25): MISMATCH-wrong: shadow of a read-only array  [known: in-place write at non-grid index]

    d L / d x (read only):
      adjit  [ 0.373776, -0.511945,  0.748153, -0.093126,  0.935142, -1.309331, -1.174939,  0.      ,  0.      ,  0.      ]
      FD     [0., 0., 0., 0., 0., 0., 0., 0., 0., 0.]

Arguments (x: float64 (10,), out: float64 (10,), n=8; values from seed 5):
    adjit.cuda.adjoint_kernel(k, argnums=(0,))[1, 16](x, out, n, <shadows>)

Run: .venv/bin/python tests/fuzz_cuda/found/d841bce5d0.py  (exit status 1 while it
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
    t = cuda.grid(1)
    i = t
    if i < n - 1:
        out[i] = x[i]
        out[i] = i
'''
KERNEL = Kernel(SOURCE, params=(('x', 'f'), ('out', 'f'), ('n', 'n')),
                argnums=(0,), launch=(1, 16), seed=5)

if __name__ == "__main__":
    out = check(KERNEL)
    print(out.label, out.reason)
    print(out.detail)
    sys.exit(out.status == "mismatch")
