"""Found by the program fuzzer (2026-11-22, 16-worker campaign on the lent machine):
gradient differs.

argnums=(1,) (python): d/dy
adjit     0.0
reference 1.0

Cause and fix: with only y differentiated, the backward sweep ended the swap's branch with
the copy `y_bar = _t6_bar`, and copy propagation deleted it as a dead store: nothing in the
sweep read y_bar again, but the return statement does. propagate_copies now takes the
returned gradients as live-out (adjit/reverse/peephole.py).
"""
PARAMS = (('x', 'array1'), ('y', 'float'), ('z', 'float'))
SEED = 90836
SOURCE = '''\
def f(x, y, z):
    if not -3 * z > 0.0:
        y, z = (z, y)
    else:
        z = 1.0
    v6 = (1.5 + y) ** 0.3
    return z
'''
