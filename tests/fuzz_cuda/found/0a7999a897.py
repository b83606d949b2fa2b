"""Found by the kernel fuzzer (2026-11-25): MISMATCH-racy-accepted: read-write on an in-place array  [known: racy accepted]

    race: read-write on u[2] by threads [0, 1, 2, 3] (1 racy elements); adjit accepted the kernel

Arguments (u: float64 (10,); values from seed 1388):
    adjit.cuda.adjoint_kernel(k, argnums=(0,))[4, 2](u, <shadows>)

Run: .venv/bin/python tests/fuzz_cuda/found/0a7999a897.py  (exit status 1 while it
still mismatches). Not part of `make test`.
"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))   # tests/

from fuzz_cuda.check import check  # noqa: E402
from fuzz_cuda.grammar import Kernel  # noqa: E402

SOURCE = '''\
@cuda.jit
def k(u):
    i = cuda.grid(1)
    u[i] = u[2]
'''
KERNEL = Kernel(SOURCE, params=(('u', 'f'),),
                argnums=(0,), launch=(4, 2), seed=1388)

if __name__ == "__main__":
    out = check(KERNEL)
    print(out.label, out.reason)
    print(out.detail)
    sys.exit(out.status == "mismatch")
