"""Found by the program fuzzer (2026-11-26): generated code raised.

argnums=(0,) (python): TypingError: Failed in nopython mode pipeline (step: nopython frontend)
During: typing of call at /tmp/wtf/adjit/runtime/vec.py (145)
File "adjit/runtime/vec.py", line 145:

Cause and fix: a matrix product of float32 arrays (or of a float32 array and a float64
temporary adjit made) reached vec.mm_* with two dtypes, and numba's np.dot takes one. The
BLAS and LAPACK helpers in runtime/vec.py now widen an operand to float64 where the dtypes
differ (vec.widened, vec.as_float64).
"""
PARAMS = (('x', 'array1/f32+rev'), ('y', 'float/zero'), ('w', 'array2/zeros+f32+F'), ('t', 'array3/zeros+perm'))
SEED = 191715065
SOURCE = '''\
def h3(p, q):
    k4 = 0
    return stop_gradient

def f(x, y, w, t, gain=1.5):
    a10 = 4
    a11 = 0.3
    a12 = w[:1] @ w.T * 1.0
    r13, c14 = a12.shape
    v15 = c14
    ix16 = np.array([1, 3, 3])
    v18 = 0.0
    v21 = 1.0
    a22 = 1.0
    w[r13] = v21
    return 1.25
'''
