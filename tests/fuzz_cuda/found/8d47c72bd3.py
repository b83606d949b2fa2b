"""Found by the kernel fuzzer (2026-11-25): MISMATCH-racy-accepted: write-write on an output  [known: racy accepted]

    race: write-write on out[2] by threads [0, 1, 2] (1 racy elements); adjit accepted the kernel

Arguments (out: float64 (10,); values from seed 6):
    adjit.cuda.adjoint_kernel(k, argnums=(0,))[1, 3](out, <shadows>)

Run: .venv/bin/python tests/fuzz_cuda/found/8d47c72bd3.py  (exit status 1 while it
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
    out[2] = 0
'''
KERNEL = Kernel(SOURCE, params=(('out', 'f'),),
                argnums=(0,), launch=(1, 3), seed=6)

if __name__ == "__main__":
    out = check(KERNEL)
    print(out.label, out.reason)
    print(out.detail)
    sys.exit(out.status == "mismatch")
