"""Found by the program fuzzer (2026-11-26): argument mutated.

argnums=(0,) (python): argument w differs from what the program itself leaves in it

Cause and fix: not an adjit bug. A float64 argument receives values computed from float32
data; numpy (NEP 50) keeps `x32 + 0.25` in float32 while numba and the generated code widen
it to float64, so the two differ by float32 rounding (relative 1e-8). The fuzzer now compares
arguments to float32's precision when any argument is float32, as it does the value.
"""
PARAMS = (('x', 'array1/zeros+f32+rev'), ('y', 'float'), ('w', 'array2/zeros+F'), ('n', 'int'), ('t', 'array3/zeros+f32+strided'), ('ix', 'index:2,1,2'))
SEED = 1175
SOURCE = '''\
def f(x, y, w, n, t, ix, *, gain=1.5):
    w -= np.tanh(x[:1] ** 1)
    a5 = x[2]
    a6 = a5
    return 1.0
'''
