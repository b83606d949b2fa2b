"""Found by the program fuzzer (2026-11-26): gradient differs.

argnums=(1,) (python): d/dy
adjit     0.0
reference 8.483490439281256e-128

Cause and fix: not an adjit bug. The partial is 8.5e-128, carried through the float32
array x, where it underflows to 0 (float32's smallest normal number is 1.2e-38); the float64
reference keeps it. The fuzzer's float32 gradient bound now includes float32's smallest
normal number.
"""
PARAMS = (('x', 'array1/f32+strided'), ('y', 'float'), ('n', 'int'), ('t', 'array3/zeros'))
SEED = 4294967294
SOURCE = '''\
def h3(b, j, p):
    b[j] = 1.5
    return j

def f(x, y, n, t, *, scale=2.0):
    a9 = 4
    x[::-1] = np.sin(np.arctan2((t * t).swapaxes(0, 1).sum(1)[n - 1], x)) ** 2
    x[::2] += x[1::2] * (x[2:] * y)
    v13 = t
    a15 = x[1:]
    return h3(x, 1, x) / 1.5 + np.sum(a15 * a15)
'''
