"""Found by the program fuzzer (2026-11-26): generated code raised.

argnums=(0,) (python): TypingError: Failed in nopython mode pipeline (step: nopython frontend)
During: typing of call at /tmp/wtf/adjit/runtime/vec.py (133)
File "adjit/runtime/vec.py", line 133:

Cause and fix: a matrix product of float32 arrays (or of a float32 array and a float64
temporary adjit made) reached vec.mm_* with two dtypes, and numba's np.dot takes one. The
BLAS and LAPACK helpers in runtime/vec.py now widen an operand to float64 where the dtypes
differ (vec.widened, vec.as_float64).
"""
PARAMS = (('x', 'array1/f32+strided'), ('y', 'float'), ('w', 'array2/f32'), ('n', 'int'), ('t', 'array3/zeros+f32'))
SEED = 1662
SOURCE = '''\
scale = 0.7

def h1(p, *, bias=0.7):
    v2 = 0.3

def f(x, y, w, n, t, *, bias=0.5):
    a3 = np.zeros(4)
    ix10 = 1.0
    ix11 = np.array([0, 0])
    a3[ix11] *= np.dot(np.transpose(a3[1:, None]), np.transpose(np.transpose(w))).reshape(2)
    v17 = 1.0
    return 0.5 + a3.mean()
'''
