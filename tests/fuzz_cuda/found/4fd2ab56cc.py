"""Found by the kernel fuzzer (2026-11-25): MISMATCH-racy-accepted: write-write on an in-place array  [known: racy accepted]

    race: write-write on u[0] by threads [0, 1, 2, 3] (1 racy elements); adjit accepted the kernel

Arguments (u: float64 (10,), c=0.11175358173132538; values from seed 9695443):
    adjit.cuda.adjoint_kernel(k, argnums=(0,))[1, 16](u, c, <shadows>)

Run: .venv/bin/python tests/fuzz_cuda/found/4fd2ab56cc.py  (exit status 1 while it
still mismatches). Not part of `make test`.
"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))   # tests/

from fuzz_cuda.check import check  # noqa: E402
from fuzz_cuda.grammar import Kernel  # noqa: E402

SOURCE = '''\
@cuda.jit
def k(u, c):
    s0 = c
    u[0] = s0
'''
KERNEL = Kernel(SOURCE, params=(('u', 'f'), ('c', 'c')),
                argnums=(0,), launch=(1, 16), seed=9695443)

if __name__ == "__main__":
    out = check(KERNEL)
    print(out.label, out.reason)
    print(out.detail)
    sys.exit(out.status == "mismatch")
