"""Found by the program fuzzer (2026-11-22): gradient differs.

argnums=(2,) (python): d/dz
adjit     0.0
reference -0.25

Cause and fix: `z = z` is a copy whose target is its own operand. Its adjoint,
`z_bar += z_bar; z_bar = 0.0` (the copy rule `b_bar += a_bar; a_bar = 0` with a == b),
zeroed every gradient flowing through z. The normalizer now drops self-assignments, which
do nothing (adjit/normalize/anf.py, assign_to).
"""
PARAMS = (('x', 'array1'), ('y', 'float'), ('z', 'float'))
SEED = 0
SOURCE = '''\
def f(x, y, z):
    v1 = 0.25
    k2 = 0
    while k2 < 1:
        k2 += 1
        z = z
    v4 = -(z * v1)
    return v4
'''
