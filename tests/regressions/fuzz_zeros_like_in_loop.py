"""Found by the program fuzzer (2026-11-22, 16-worker campaign on the lent machine):
adjit refused a valid program ("the array 'a19' is allocated in a loop with a shape that
changes between iterations").

Cause and fix: `np.zeros_like(a12)` where `a12 = a10.copy()` is made in the same loop: any
array operand assigned in the loop counted as a changing shape. The shape now varies only if
a shape operand (an int) is assigned in the loop, or an array operand made in the same loop
has a varying shape itself (adjit/reverse/adjoint.py, _shape_varies). The reducer's output
was extended by hand so that the arrays carry derivatives.
"""
PARAMS = (('x', 'array1'), ('y', 'float'), ('z', 'float'))
SEED = 1625
SOURCE = '''\
def f(x, y, z):
    a10 = x.copy()
    s = 0.0
    for i11 in range(len(x)):
        a12 = a10.copy()
        a19 = np.zeros_like(a12)
        a19[i11] = a12[i11] * z
        s += a19[i11] * a19[i11]
        a10[i11] = a10[i11] * 3.0 + s * y
    return z + s
'''
