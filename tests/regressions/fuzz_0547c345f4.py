"""Found by the program fuzzer (2026-11-26): argument mutated.

argnums=(0,) (python): argument w differs from what the program itself leaves in it

Cause and fix: not an adjit bug. A float64 argument receives values computed from float32
data; numpy (NEP 50) keeps `x32 + 0.25` in float32 while numba and the generated code widen
it to float64, so the two differ by float32 rounding (relative 1e-8). The fuzzer now compares
arguments to float32's precision when any argument is float32, as it does the value.
"""
PARAMS = (('x', 'array1/zeros+f32+strided'), ('y', 'float'), ('w', 'array2/zeros+F'), ('t', 'array3/f32+perm'), ('ix', 'index:0,2,2,2'))
SEED = 2
SOURCE = '''\
def f(x, y, w, t, ix):
    a3 = w.copy()
    v4 = 1.0
    w[::2] -= (np.mean(t, -3)[ix[-4]] - 1.0).reshape((2, 2))
    a9 = a3
    return v4
'''
