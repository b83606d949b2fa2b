"""Found by the program fuzzer (2026-11-26): argument mutated.

value_and_grad argnums=(0, 1, 2, 3, 4) (numba): argument w differs from what the program itself leaves in it

Cause and fix: not an adjit bug. A float64 argument receives values computed from float32
data; numpy (NEP 50) keeps `x32 + 0.25` in float32 while numba and the generated code widen
it to float64, so the two differ by float32 rounding (relative 1e-8). The fuzzer now compares
arguments to float32's precision when any argument is float32, as it does the value.
"""
PARAMS = (('x', 'array1/f32+rev'), ('y', 'float'), ('z', 'float/zero'), ('w', 'array2/zeros+F'), ('t', 'array3/f32'), ('ix', 'index:1,3,1'))
SEED = 1
SOURCE = '''\
scale = 3.0

def f(x, y, z, w, t, ix, gain=0.5):
    w[2] = t[1, -3, -4] + y
    return z
'''
