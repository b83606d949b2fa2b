"""Found by the program fuzzer (2026-11-29, seed 20, program seed 0): generated code raised.

argnums=(1,) (python): ZeroDivisionError: float division by zero

Open. y is drawn exactly 0.0, so `np.linalg.norm(y) * y` (reduced from a norm of
`fx * y`) takes the norm of zero: the norm is lowered to sqrt of a sum of squares, and sqrt's partial
0.5 / out divides by zero in the interpreted adjoint (numba's gives inf, and the gradient
NaN where the true derivative of |fx| |y| y is 0). The checker already discards the same
singular point when it shows as 0.0 ** -0.5; to decide: discard division by zero at a
singular point in interpreted runs as well, or give the norm a zero subgradient at the zero
vector (as abs has at 0) so that the chain gives 0.
"""
PARAMS = (('x', 'array1/strided'), ('y', 'float/zero'), ('fx', 'form:x'), ('fs', 'form:s'))
SEED = 0
SOURCE = '''\
def f(x, y, fx, fs):
    v26 = np.linalg.norm(y) * y
    return v26
'''
