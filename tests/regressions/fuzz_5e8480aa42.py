"""Found by the program fuzzer (2026-11-26): value differs.

argnums=(0,) (python): adjit -1.5625, program 1.5625

Cause and fix: a negative global number (`gain = -0.7`) is inlined as the constant -0.7,
and ast.unparse spells Constant(-0.7) ** 2 as `-0.7 ** 2`, which Python reads as -(0.7 ** 2).
Generated code is now spelled by ir.unparse, which writes a negative base as `(-0.7)`.
"""
PARAMS = (('x', 'array1/f32+strided'), ('y', 'float'), ('ix', 'index:2,3,2,2'))
SEED = 9
SOURCE = '''\
bias = -1.25

def h1(p, scale=0.5):
    p = bias ** 2.0
    return p

def f(x, y, ix, bias=0.3):
    k4 = 0
    k4 += 1
    y = h1(y, y)
    k5 = 0
    return y
'''
