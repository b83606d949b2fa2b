"""Found by the program fuzzer (2026-11-26): value differs.

argnums=(0,) (python): adjit -1.0, program 1.0

Cause and fix: a negative global number (`gain = -0.7`) is inlined as the constant -0.7,
and ast.unparse spells Constant(-0.7) ** 2 as `-0.7 ** 2`, which Python reads as -(0.7 ** 2).
Generated code is now spelled by ir.unparse, which writes a negative base as `(-0.7)`.
"""
PARAMS = (('x', 'array1/strided'), ('y', 'float'), ('t', 'array3/zeros+perm'))
SEED = 1177
SOURCE = '''\
gain = 0.7
scale = -0.7
bias = 1.5

def h1(p, *, gain=3.0):
    a2 = 0.3
    return 1.0

def f(x, y, t):
    a5 = np.zeros(2)
    a6 = np.empty(2)
    for i7 in range(2):
        i7 = 3
    v8 = y
    v9 = scale ** 0.0
    return v9
'''
