"""Found by the program fuzzer (2026-11-26): value differs.

argnums=(0,) (python): adjit 1.01, program np.float64(1.99)

Cause and fix: (write them here when fixing the bug)
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
