"""Found by the program fuzzer (2026-11-26): value differs.

argnums=(0,) (python): adjit np.float64(-1.5625), program np.float64(1.5625)

Cause and fix: a negative global number (`gain = -0.7`) is inlined as the constant -0.7,
and ast.unparse spells Constant(-0.7) ** 2 as `-0.7 ** 2`, which Python reads as -(0.7 ** 2).
Generated code is now spelled by ir.unparse, which writes a negative base as `(-0.7)`.
"""
PARAMS = (('x', 'array1/zeros+strided'), ('y', 'float'), ('z', 'float'), ('n', 'int'), ('t', 'array3/zeros'), ('ix', 'index:1,3,3'))
SEED = 2933
SOURCE = '''\
gain = -1.25

def h4(p, *, scale=0.5):
    v5 = gain ** 2
    v6 = np.amin(np.array([v5, v5, v5]).copy())
    return v6

def f(x, y, z, n, t, ix, gain=0.5):
    a7 = t[n % 2]
    v8 = h4(0.3)
    a9 = 1.0
    return v8
'''
