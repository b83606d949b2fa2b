"""Found by the program fuzzer (2026-11-26): argument mutated.

argnums=(0,) (python): argument w differs from what the program itself leaves in it

Cause and fix: not an adjit bug. A float64 argument receives values computed from float32
data; numpy (NEP 50) keeps `x32 + 0.25` in float32 while numba and the generated code widen
it to float64, so the two differ by float32 rounding (relative 1e-8). The fuzzer now compares
arguments to float32's precision when any argument is float32, as it does the value.
"""
PARAMS = (('x', 'array1/zeros+f32+rev'), ('y', 'float/zero'), ('z', 'float/zero'), ('w', 'array2/zeros'), ('t', 'array3/zeros+f32'), ('ix', 'index:0,0,2,0'))
SEED = 26103665
SOURCE = '''\
bias = 0.7

def h3(p, gain=3.0):
    return math

def f(x, y, z, w, t, ix, scale=1.25):
    a6 = 1.0
    a20 = x.copy()
    a21 = w[:, -2]
    a21 += np.dot(np.full(6, bias).reshape(3, 2), np.tanh(a20[[1, 1]]))
    v22 = 1.0
    return 1.0
'''
