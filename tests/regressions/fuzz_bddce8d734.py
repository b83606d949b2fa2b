"""Found by the program fuzzer (2026-11-26): generated code raised.

argnums=(0,) (python): TypingError: Failed in nopython mode pipeline (step: nopython frontend)
During: typing of call at /tmp/wtf/adjit/runtime/vec.py (133)
File "adjit/runtime/vec.py", line 133:

Cause and fix: a matrix product of float32 arrays (or of a float32 array and a float64
temporary adjit made) reached vec.mm_* with two dtypes, and numba's np.dot takes one. The
BLAS and LAPACK helpers in runtime/vec.py now widen an operand to float64 where the dtypes
differ (vec.widened, vec.as_float64).
"""
PARAMS = (('x', 'array1/zeros+f32+strided'), ('y', 'float'), ('w', 'array2/zeros+f32'))
SEED = 78330
SOURCE = '''\
def h1(p, gain=1.25, *, scale=1.25):
    return gain

def f(x, y, w, *, scale=1.5):
    a3 = 4
    v5 = 0.3
    v4 = 1.5
    v6 = 1.0
    ix7 = np.array([-1, 1])
    a8 = np.stack((np.dot(np.full((3, 3), v4), w.T.T), w, w), axis=2)
    a9 = np.stack((w, w, w), axis=1)
    a10 = 1.0
    return np.max(a8.transpose(1, 0, 2)) + a10
'''
