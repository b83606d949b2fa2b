"""Found by the program fuzzer (2026-11-26): argument mutated.

argnums=(0,) (python): argument w differs from what the program itself leaves in it

Cause and fix: (write them here when fixing the bug)
"""
PARAMS = (('x', 'array1/zeros+f32+strided'), ('y', 'float/zero'), ('w', 'array2/zeros+strided'), ('t', 'array3/zeros+F'), ('ix', 'index:1,0,1,0'))
SEED = 1
SOURCE = '''\
scale = 0.7

def f(x, y, w, t, ix, *, bias=1.5):
    a5 = x + np.tanh(1.0) + 0.25
    y = -(a5[-4] + y)
    a9 = w
    a9[1] = y
    return 1.0
'''
