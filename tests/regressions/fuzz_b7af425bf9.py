"""Found by the program fuzzer (2026-11-26): argument mutated.

argnums=(0,) (python): argument w differs from what the program itself leaves in it

Cause and fix: not an adjit bug. A float64 argument receives values computed from float32
data; numpy (NEP 50) keeps `x32 + 0.25` in float32 while numba and the generated code widen
it to float64, so the two differ by float32 rounding (relative 1e-8). The fuzzer now compares
arguments to float32's precision when any argument is float32, as it does the value.
"""
PARAMS = (('x', 'array1/zeros+f32+strided'), ('y', 'float/zero'), ('w', 'array2/zeros+strided'), ('t', 'array3/zeros+F'), ('ix', 'index:1,0,1,0'))
SEED = 1
SOURCE = '''\
scale = 0.7

def f(x, y, w, t, ix, *, bias=1.5):
    a5 = x + np.tanh(1.0) + 0.25
    y = -(a5[-4] + y)
    a9 = w
    a9[1] = y
    return 1.0
'''
