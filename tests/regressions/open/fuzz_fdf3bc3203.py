"""Found by the program fuzzer (2026-11-26): argument mutated.

argnums=(0,) (python): argument w differs from what the program itself leaves in it

Cause and fix: (write them here when fixing the bug)
"""
PARAMS = (('x', 'array1/f32+rev'), ('y', 'float/zero'), ('w', 'array2/zeros+F'), ('t', 'array3/zeros'))
SEED = 1246
SOURCE = '''\
def f(x, y, w, t, *, gain=0.7):
    ix5 = np.array([0, 3, 0, 0])
    for i6 in range(3, 1, -1):
        w[1] = np.arctan(x[2])
    a8 = x
    return 1.0
'''
