"""Found by the program fuzzer (2026-11-26): gradient differs.

argnums=(0,) (python): d/dx
adjit     [0.0, 0.0, 0.0, 4.0]
reference [0.0, 0.0, 0.0, 1.0]

Cause and fix: `a10 = np.where(x > 0.0, 2.0, x)` is kept unevaluated until its use; the
later `a12 -= ...` (a12 is x) writes x in a loop over its elements, and the pending a10 was
computed inside that loop, at the first element store, reading a half-written x (a wrong
value and gradient: `a = x * 3.0; x -= 1.0; np.sum(a)` gave -1.44 for 7.56). store_elements
(normalize/vectorize.py) now computes pending arrays that read the target before its loops.
"""
PARAMS = (('x', 'array1/f32'), ('y', 'float/zero'), ('z', 'float'), ('n', 'int'), ('t', 'array3/zeros'), ('ix', 'index:0,3,3'))
SEED = 6202
SOURCE = '''\
def h6(p, *, bias=1.25):
    pass

def f(x, y, z, n, t, ix, *, bias=0.5):
    a8 = np.outer(t.sum(axis=1)[n % 2], x)
    v9 = 1.0
    a10 = np.where(x > 0.0, 2.0, x[:])
    a12 = x
    a12 -= 0.25 // 1.0
    return np.sum(a10)
'''
