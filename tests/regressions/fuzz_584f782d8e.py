"""Found by the program fuzzer (2026-11-26): value differs.

argnums=(0,) (python): adjit -0.48999999999999994, program 0.48999999999999994

Cause and fix: a negative global number (`gain = -0.7`) is inlined as the constant -0.7,
and ast.unparse spells Constant(-0.7) ** 2 as `-0.7 ** 2`, which Python reads as -(0.7 ** 2).
Generated code is now spelled by ir.unparse, which writes a negative base as `(-0.7)`.
"""
PARAMS = (('x', 'array1/f32'), ('y', 'float'), ('t', 'array3'))
SEED = 31
SOURCE = '''\
gain = 1.5
bias = -0.7

def h7(p, *, gain=0.3):
    v8 = np

def f(x, y, t):
    v9 = y
    a11 = x[2]
    return bias ** 2
'''
