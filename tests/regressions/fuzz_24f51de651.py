"""Found by the program fuzzer (2026-11-26): value differs.

argnums=(0,) (python): adjit 1.01, program np.float64(1.99)

Cause and fix: a negative global number (`gain = -0.7`) is inlined as the constant -0.7,
and ast.unparse spells Constant(-0.7) ** 2 as `-0.7 ** 2`, which Python reads as -(0.7 ** 2).
Generated code is now spelled by ir.unparse, which writes a negative base as `(-0.7)`.
"""
PARAMS = (('x', 'array1/zeros+f32+rev'), ('y', 'float/zero'), ('t', 'array3/f32+F'), ('ix', 'index:2,3,2,3'))
SEED = 1955729
SOURCE = '''\
gain = -0.7
bias = 0.5

def f(x, y, t, ix):
    v10 = 1.0
    v15 = np.concatenate((np.stack((x,), axis=1), np.full((1, 1), v10))).min()
    a16 = x
    a17 = np.where(x > 0.0, 0.5, gain ** 2)
    a19 = a17
    return np.sum(a19)
'''
