"""Found by the program fuzzer (2026-11-26): gradient differs.

argnums=(0,) (python): d/dx
adjit     [0.0, 0.0, -1.9599999999999997, 0.0]
reference [0.0, 0.0, 1.9599999999999997, 0.0]

Cause and fix: a negative global number (`gain = -0.7`) is inlined as the constant -0.7,
and ast.unparse spells Constant(-0.7) ** 2 as `-0.7 ** 2`, which Python reads as -(0.7 ** 2).
Generated code is now spelled by ir.unparse, which writes a negative base as `(-0.7)`.
"""
PARAMS = (('x', 'array1/zeros'), ('y', 'float/zero'), ('w', 'array2/zeros'), ('t', 'array3/zeros'))
SEED = 1048576
SOURCE = '''\
gain = -0.7

def f(x, y, w, t):
    a6 = 1.0
    a7 = 1.0
    a8 = 1.0
    ix9 = np.array([2, 2])
    v11 = 0.0
    for i10 in range(len(ix9)):
        v11 += np.sum(x[ix9] * gain ** 2.0)
    return v11
'''
