"""Found by the program fuzzer (2026-11-26): argument mutated.

argnums=(0,) (python): argument w differs from what the program itself leaves in it

Cause and fix: not an adjit bug. A float64 argument receives values computed from float32
data; numpy (NEP 50) keeps `x32 + 0.25` in float32 while numba and the generated code widen
it to float64, so the two differ by float32 rounding (relative 1e-8). The fuzzer now compares
arguments to float32's precision when any argument is float32, as it does the value.
"""
PARAMS = (('x', 'array1/f32+rev'), ('y', 'float/zero'), ('w', 'array2/zeros+F'), ('t', 'array3/zeros'))
SEED = 1246
SOURCE = '''\
def f(x, y, w, t, *, gain=0.7):
    ix5 = np.array([0, 2, 0, 0])
    for i6 in range(3, 1, -1):
        w[1] = np.arctan(x[2])
    a8 = x
    return 1.0
'''
