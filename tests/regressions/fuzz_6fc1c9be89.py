"""Found by the program fuzzer (2026-12-05): gradient differs.

argnums=(2,) (python): d/dz
adjit     -8.250087276951705
reference -9.0270333367641

Cause and fix: the argument z, assigned a constant in a loop (`for i16 in range(4): z =
0.3`) and read after it, was recorded by the loop as one of the iteration's own values
(reverse/emit.py, indexed_loops: recorded after its assignment, loaded at the start of the
reversed iteration), so after the reversed loop z held 0.3, not the argument's value, which
the adjoint of `v15 = math.erfc(z)` before the loop reads (the gradient of erfc at 0.3, not
at 0.0). An argument assigned in a loop is no longer one of the iteration's own values: it is
recorded before each assignment, as any carried name. (Wrong since indexed recording was
added; found at the session of 2026-12-05.)
"""
PARAMS = (('x', 'array1/zeros+f32+rev'), ('y', 'float'), ('z', 'float/zero'), ('w', 'array2/zeros+strided'), ('t', 'array3/perm'), ('ix', 'index:0,3,1,1'))
SEED = 253
GROUPS = ('axis3d', 'buffers', 'callee-loops', 'const-pow', 'constructors', 'float32', 'globals', 'index-arrays', 'kwdefaults', 'masks', 'strided-args', 'timesteps', 'transpose3d', 'views')
SOURCE = '''\
gain = 1.5
G1 = np.array([[-1.25, 0.3, 2.0, 0.7], [0.25, 2.0, 0.75, 0.3], [0.3, 0.5, 1.25, 0.75]])
G2 = np.array([0.5, 0.7, 2.0, 0.5])

def h3(p, gain=0.3):
    return gain

def h7(b, p):
    v9 = 0.0
    v12 = 0.0
    return math

def f(x, y, z, w, t, ix):
    if 1.0:
        v15 = math.erfc(z)
    else:
        pass
    for i16 in range(4):
        z = 0.3
    a18 = 1.0
    if 1.0 > 0.0 and z:
        pass
    else:
        v17 = -1
    a20 = t.transpose(1, 2, 0)
    a21 = w[:, -1]
    buf22 = np.empty(4)
    acc23 = 0.0
    for i25 in range(4):
        for j26 in range(4):
            buf22 = G2
        t24 = 0.0
        t24 += v15
        acc23 += t24 * t24
    u27 = 1.0
    un28 = 4
    acc29 = 0.0
    return acc23 + 1.0
'''
