"""Found by the program fuzzer (2026-11-26): argument mutated.

argnums=(0,) (python): argument w differs from what the program itself leaves in it

Cause and fix: (write them here when fixing the bug)
"""
PARAMS = (('x', 'array1/zeros+f32+strided'), ('y', 'float'), ('w', 'array2/zeros+F'), ('t', 'array3/f32+perm'), ('ix', 'index:0,2,2,2'))
SEED = 2
SOURCE = '''\
def f(x, y, w, t, ix):
    a3 = w.copy()
    v4 = 1.0
    w[::2] -= (np.mean(t, -3)[ix[-4]] - 1.0).reshape((2, 2))
    a9 = a3
    return v4
'''
