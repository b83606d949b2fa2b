"""Found by the kernel fuzzer (2026-11-27): MISMATCH-crash: building: IndentationError  [NEW]

    IndentationError: expected an indented block after 'if' statement on line 15 (<adjit-100:k_adjoint>, line 16)

Arguments (state: float64 (2, 10), n=8; values from seed 54952):
    adjit.cuda.adjoint_kernel(k, argnums=(0,))[3, 4](state, n, <shadows>)

Run: .venv/bin/python tests/fuzz_cuda/found/37a26bd72c.py  (exit status 1 while it
still mismatches). Not part of `make test`.
"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))   # tests/

from fuzz_cuda.check import check  # noqa: E402
from fuzz_cuda.grammar import Kernel  # noqa: E402

SOURCE = '''\
@cuda.jit
def k(state, n):
    i = cuda.grid(1)
    if i >= 1 and i < n - 1:
        state[1, i] += i
'''
KERNEL = Kernel(SOURCE, params=(('state', 'state'), ('n', 'n')),
                argnums=(0,), launch=(3, 4), seed=54952)

if __name__ == "__main__":
    out = check(KERNEL)
    print(out.label, out.reason)
    print(out.detail)
    sys.exit(out.status == "mismatch")
