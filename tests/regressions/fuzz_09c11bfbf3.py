"""Found by the program fuzzer (2026-11-29, seed 20, program seed 0): generated code raised.

argnums=(1,) (python): ZeroDivisionError: float division by zero

y is drawn exactly 0.0, so `np.linalg.norm(y) * y` (reduced from a norm of `fx * y`)
takes the norm of zero: the norm was lowered to sqrt of a sum of squares, and sqrt's partial
0.5 / out divided by zero in the interpreted adjoint (inf under numba, and the gradient NaN
where the true derivative of |fx| |y| y is 0).

Cause and fix: the norm's root is its own registry entry (vec.norm_root) whose partial is the
zero subgradient at a zero vector; the chain through the squares then gives 0, as central
differences do.
"""
PARAMS = (('x', 'array1/strided'), ('y', 'float/zero'), ('fx', 'form:x'), ('fs', 'form:s'))
SEED = 0
SOURCE = '''\
def f(x, y, fx, fs):
    v26 = np.linalg.norm(y) * y
    return v26
'''
