"""Found by the program fuzzer (2026-11-26): value differs.

argnums=(0,) (python): adjit 1.300301577896962, program 0.699698422103038

Cause and fix: (write them here when fixing the bug)
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
