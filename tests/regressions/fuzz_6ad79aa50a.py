"""Found by the program fuzzer (2026-11-26): value differs.

argnums=(0,) (python): adjit 1.300301577896962, program 0.699698422103038

Cause and fix: a negative global number (`gain = -0.7`) is inlined as the constant -0.7,
and ast.unparse spells Constant(-0.7) ** 2 as `-0.7 ** 2`, which Python reads as -(0.7 ** 2).
Generated code is now spelled by ir.unparse, which writes a negative base as `(-0.7)`.
"""
PARAMS = (('x', 'array1'), ('y', 'float'), ('t', 'array3'))
SEED = 2
SOURCE = '''\
gain = -0.7

def f(x, y, t):
    v13 = 0.5
    v14 = 1.0
    return 1.0 - gain ** 0 * y
'''
