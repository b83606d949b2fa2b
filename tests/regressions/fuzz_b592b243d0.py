"""Found by the program fuzzer (2026-11-26): argument mutated.

argnums=(0,) (python): argument w differs from what the program itself leaves in it

Cause and fix: not an adjit bug. A float64 argument receives values computed from float32
data; numpy (NEP 50) keeps `x32 + 0.25` in float32 while numba and the generated code widen
it to float64, so the two differ by float32 rounding (relative 1e-8). The fuzzer now compares
arguments to float32's precision when any argument is float32, as it does the value.
"""
PARAMS = (('x', 'array1/f32+rev'), ('y', 'float'), ('z', 'float/zero'), ('w', 'array2/strided'), ('t', 'array3/zeros+f32'), ('ix', 'index:2,0,0,2'))
SEED = 2198623628
SOURCE = '''\
def f(x, y, z, w, t, ix, *, bias=1.5):
    w += np.stack((np.mean(np.transpose(t * t), -3)[0], np.swapaxes(t, 0, 1).sum(axis=-1)[2], t[:, 2, 3]), axis=0)
    a6 = 1.0
    return y
'''
