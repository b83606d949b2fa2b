"""Found by the kernel fuzzer (2026-11-25): MISMATCH-racy-accepted: atomic-read on an accumulator  [known: racy accepted]

    race: atomic-read on acc[0] by threads [0, 1, 2, 3] (1 racy elements); adjit accepted the kernel

Arguments (acc: float64 (2,); values from seed 8):
    adjit.cuda.adjoint_kernel(k, argnums=(0,))[3, 4](acc, <shadows>)

Run: .venv/bin/python tests/fuzz_cuda/found/d5f8353927.py  (exit status 1 while it
still mismatches). Not part of `make test`.
"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))   # tests/

from fuzz_cuda.check import check  # noqa: E402
from fuzz_cuda.grammar import Kernel  # noqa: E402

SOURCE = '''\
@cuda.jit
def k(acc):
    cuda.atomic.add(acc, 0, acc[0])
'''
KERNEL = Kernel(SOURCE, params=(('acc', 'acc'),),
                argnums=(0,), launch=(3, 4), seed=8)

if __name__ == "__main__":
    out = check(KERNEL)
    print(out.label, out.reason)
    print(out.detail)
    sys.exit(out.status == "mismatch")
