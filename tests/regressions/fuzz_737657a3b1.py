"""Found by the program fuzzer (2026-11-26): argument mutated.

argnums=(0,) (python): argument w differs from what the program itself leaves in it

Cause and fix: not an adjit bug. A float64 argument receives values computed from float32
data; numpy (NEP 50) keeps `x32 + 0.25` in float32 while numba and the generated code widen
it to float64, so the two differ by float32 rounding (relative 1e-8). The fuzzer now compares
arguments to float32's precision when any argument is float32, as it does the value.
"""
PARAMS = (('x', 'array1/zeros+f32+rev'), ('y', 'float'), ('z', 'float/zero'), ('w', 'array2'), ('n', 'int'))
SEED = 928994
SOURCE = '''\
bias = 1.25

def h1(p, *, scale=2.0):
    v2 = 0.3
    return p

def f(x, y, z, w, n):
    a5 = np.full((3, 1), n)
    v6 = 1.0
    ix14 = np.array([0, 1])
    a15 = w
    w[1] = np.concatenate((np.array([1.0]) ** 1, x[1] * np.full(1, x[n])))
    return 1.0
'''
