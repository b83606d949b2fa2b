"""Found by the program fuzzer (2026-11-22): adjit crashed (TypeError).

argnums=(0,) (python): TypeError: 'NoneType' object cannot be interpreted as an integer

Cause and fix: np.full_like / np.zeros_like of a name kept lazy (assigned once, read once)
looked for an array that did not exist yet; the *_like allocators now take the shape of the
(lazy) expression.
"""
PARAMS = (('x', 'array1'), ('y', 'float'), ('w', 'array2'))
SEED = 147250
SOURCE = '''\
def f(x, y, w):
    v1 = y
    v3 = 1.0
    a8 = -np.min(w, 0) * v3
    return np.dot(-x[1:3], np.full_like(a8, v3))
'''
