"""Found by the kernel fuzzer (2026-11-27): MISMATCH-crash: building: IndentationError  [NEW]

    IndentationError: expected an indented block after function definition on line 1 (<adjit-56:k_adjoint>, line 1)

Arguments (x: float64 (10,), state: float64 (2, 10), n=8, cur=1; values from seed 2):
    adjit.cuda.adjoint_kernel(k, argnums=(1,))[3, 4](x, state, n, cur, <shadows>)

Run: .venv/bin/python tests/fuzz_cuda/found/fe15a8c7d0.py  (exit status 1 while it
still mismatches). Not part of `make test`.
"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))   # tests/

from fuzz_cuda.check import check  # noqa: E402
from fuzz_cuda.grammar import Kernel  # noqa: E402

SOURCE = '''\
@cuda.jit
def k(x, state, n, cur):
    i = cuda.grid(1)
'''
KERNEL = Kernel(SOURCE, params=(('x', 'f'), ('state', 'state'), ('n', 'n'), ('cur', 'cur')),
                argnums=(1,), launch=(3, 4), seed=2)

if __name__ == "__main__":
    out = check(KERNEL)
    print(out.label, out.reason)
    print(out.detail)
    sys.exit(out.status == "mismatch")
