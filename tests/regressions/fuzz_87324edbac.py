"""Found by the program fuzzer (2026-11-26): argument mutated.

argnums=(0,) (python): argument w differs from what the program itself leaves in it

Cause and fix: not an adjit bug. A float64 argument receives values computed from float32
data; numpy (NEP 50) keeps `x32 + 0.25` in float32 while numba and the generated code widen
it to float64, so the two differ by float32 rounding (relative 1e-8). The fuzzer now compares
arguments to float32's precision when any argument is float32, as it does the value.
"""
PARAMS = (('x', 'array1/f32+strided'), ('y', 'float'), ('w', 'array2'))
SEED = 479001600
SOURCE = '''\
def f(x, y, w, *, bias=0.7):
    a3 = x
    v4 = -1
    ix5 = 1.0
    v7 = 0.0
    a8 = 1.0
    w += np.clip(np.power(x[1, None], 0.0), 0.5, 0.7)
    return 0.3
'''
