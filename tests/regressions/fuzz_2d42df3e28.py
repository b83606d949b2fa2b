"""Found by the program fuzzer (2026-11-26): value differs.

argnums=(0,) (python): adjit 1.1169034760579117, program 2.0969034760579115

Cause and fix: a negative global number (`gain = -0.7`) is inlined as the constant -0.7,
and ast.unparse spells Constant(-0.7) ** 2 as `-0.7 ** 2`, which Python reads as -(0.7 ** 2).
Generated code is now spelled by ir.unparse, which writes a negative base as `(-0.7)`.
"""
PARAMS = (('x', 'array1/zeros+f32'), ('y', 'float'), ('z', 'float'), ('t', 'array3/zeros+f32'), ('ix', 'index:1,2,1'))
SEED = 362881
SOURCE = '''\
gain = 1.25
bias = -0.7

def h1(p, q=2.0, scale=1.5):
    v3 = 1.5
    v2 = 0.3
    return 1.0

def f(x, y, z, t, ix, *, gain=2.0):
    v7 = bias ** 2 + z
    a8 = 1.0
    a9 = 1
    v10 = gain
    a12 = 1.0
    return v7 + gain + a12
'''
