"""Found by the program fuzzer (2026-11-22): adjit refused a valid program.

argnums=(0,) (python): the array 'a6' is changed after a matrix product or reshape reads it.

Cause and fix: the adjoint of a matrix product reads its operands in the backward sweep, so
an operand updated afterwards (here in place by the product's own result) was refused. In
straight-line code the operand is now copied at the product (normalize/hoist.py
keep_operands).
"""
PARAMS = (('x', 'array1'), ('y', 'float'))
SEED = 364
SOURCE = '''\
def f(x, y):
    a6 = np.outer(x[1:], x)
    a7 = np.concatenate((x, a6[2]))
    a6 -= np.full((3, 3), 1.5) @ a6
    return 1.5 + np.sum(a6 * a6) * y + np.sum(a7)
'''
