"""Found by the program fuzzer (2026-11-26): value differs.

argnums=(0,) (python): adjit -0.48999999999999994, program 0.48999999999999994

Cause and fix: (write them here when fixing the bug)
"""
PARAMS = (('x', 'array1/f32'), ('y', 'float'))
SEED = 0
SOURCE = '''\
scale = -0.7
bias = 1.25

def f(x, y):
    v8 = y
    v10 = y
    v9 = scale
    return scale ** 2
'''
