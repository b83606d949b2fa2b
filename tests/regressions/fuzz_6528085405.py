"""Found by the program fuzzer (2026-11-29): value differs (numba runs).

value_and_grad argnums=(0, 1, 2, 3, 4) (numba): adjit -3.7677356621593203, program
-3.0505013706731625 (reduced here by hand)

Cause and fix: not adjit's. numba binds keyword-only parameters wrongly (numba issue 5903):
compiled by numba, `h1(1.5, y, bias=y)` runs as h1(1.5, -1.25, bias=...), so the program
numba compiles is no oracle for one with keyword-only parameters; adjit's value is Python's.
The checker now judges such programs in the interpreter only, and adjit refuses numba
dispatchers with keyword-only parameters (tests/test_numba_decorators.py).
"""
PARAMS = (('x', 'array1/strided'), ('y', 'float'), ('t', 'array3/F'), ('fy', 'form:y'), ('fM', 'form:M'))
SEED = 85
GROUPS = ('draws', 'kwdefaults')
SOURCE = '''\
G1 = np.array([[1.5, -2.0], [1.5, 1.5], [-0.7, -2.0]])


def h1(p, q=-1.25, *, bias=0.5):
    return 0.3 + q * p


def f(x, y, t, fy, fM):
    np.random.seed(10)
    a6 = np.random.exponential((0.5 + y * y), 3)
    v8 = 0.0
    for v9 in G1:
        v8 += np.sum(v9 * h1(1.5, y, bias=y))
    return a6[-1] + v8
'''
