"""Found by the program fuzzer (2026-11-29, seed 20, program seed 0): generated code raised.

argnums=(1,) (python): ZeroDivisionError: float division by zero

Open. y is drawn exactly 0.0, so `np.linalg.norm(fx * (y if ... else v15)) * y` takes the
norm of a zero vector: the norm is lowered to sqrt of a sum of squares, and sqrt's partial
0.5 / out divides by zero in the interpreted adjoint (numba's gives inf, and the gradient
NaN where the true derivative of |fx| |y| y is 0). The checker already discards the same
singular point when it shows as 0.0 ** -0.5; to decide: discard division by zero at a
singular point in interpreted runs as well, or give the norm a zero subgradient at the zero
vector (as abs has at 0) so that the chain gives 0.
"""
PARAMS = (('x', 'array1/strided'), ('y', 'float/zero'), ('fx', 'form:x'), ('fs', 'form:s'))
SEED = 0
GROUPS = ('index-arrays', 'masks', 'transpose3d', 'axis3d', 'const-pow', 'float32', 'strided-args', 'views', 'kwdefaults', 'constructors', 'buffers', 'counters', 'timesteps', 'draws', 'globals', 'callee-loops', 'forms', 'idioms')
SOURCE = '''\
bias = 0.3


G1 = np.array([[1.0, 0.75], [-1.25, 1.0], [0.3, 2.0]])
G2 = np.array([-0.7, 1.0, 0.75])


@numba.vectorize(["float64(float64, float64)"])
def vk_tanh(a, b):
    return a * math.tanh(b) + 0.5 * b


@numba.vectorize
def vk_step(a, b):
    return a * b - 0.25 * a * a


@numba.vectorize
def vk_knee(a):
    if a > 0.3:
        return a * a
    return 0.6 * a - 0.09


@numba.njit
def opt_scale(a, w=None):
    if w is None:
        return 1.5 * a
    return a * w


@numba.guvectorize(["void(float64[:], float64, float64[:])"], "(n),()->(n)")
def gu_scale(a, s, out):
    for i in range(a.shape[0]):
        out[i] = a[i] * s + 0.1 * a[i] * a[i]


@numba.guvectorize(["void(float64[:], float64[:])"], "(n)->()")
def gu_norm(a, out):
    acc = 0.0
    for v in a:
        acc += v * v
    out[0] = math.sqrt(acc + 1.0)


@numba.stencil
def st_diff(a):
    return a[-1] - 2.0 * a[0] + a[1]


@numba.stencil(cval=0.5)
def st_blur(a, s):
    return s * (a[0, 1] + a[1, 0] + a[0, -1] + a[-1, 0]) + (1.0 - 4.0 * s) * a[0, 0]


sp_erf = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double)(
    get_cython_function_address("scipy.special.cython_special", "__pyx_fuse_1erf"))
sp_expit = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double)(
    get_cython_function_address("scipy.special.cython_special", "__pyx_fuse_0expit"))
sp_gammaln = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double)(
    get_cython_function_address("scipy.special.cython_special", "gammaln"))


def h1(b, c, p):
    v2 = 0.0
    for i4, v3 in enumerate(G1[1:]):
        v2 += np.sum(v3 * G2[-2:])
    return ((-(G2[1] * p)) - math.pow(1.25 + math.sin((v2 if math.tan(0.5 * math.tanh(p)) > 0.0 else v2)), 2.5)) + v2


def h5(p, q):
    flag6 = (np.random.uniform(q, G1[-1, np.random.randint(0, 2)]) > -0.3 or q <= 1.0)
    if max(p, math.log1p(p * p)) < (-q):
        for i8 in range(4):
            v9 = (math.exp(-((q if (G1[1, (i8 + 1) % 2] - math.sqrt(abs(np.random.normal((G1[(2 * i8 + 1) % 3, (2 * i8 + 1) % 2] - 0.3), (1.0 + math.tanh(q) ** 2))) + 0.25)) > 0.5 else 1.5) * (q if (G1[1, (i8 + 1) % 2] - math.sqrt(abs(np.random.normal((G1[(2 * i8 + 1) % 3, (2 * i8 + 1) % 2] - 0.3), (1.0 + math.tanh(q) ** 2))) + 0.25)) > 0.5 else 1.5))) / (1.5 + math.tanh(p)))
        v7 = p
    elif (flag6 or flag6):
        v7 = (math.sin(np.random.uniform(math.sin(G1[np.random.randint(0, 3), 0]), p)) + math.hypot(math.asin(0.9 * math.tanh(0.5)), 0.5 + abs((-0.7)) * abs((-0.7))))
    else:
        v7 = math.tan(0.5 * math.tanh(float(math.floor(G2[-2]))))
    return (G1[np.random.randint(0, 3), 1] // 1.0) + np.random.gumbel(math.pow(abs(v7), 0.5), (0.5 + (1.5 * -1.25) * (1.5 * -1.25)))


def h10(p, gain=1.5):
    for i11 in range(3, -1, -1):
        flag12 = not i11 != 3
        if i11 % 2 == 0:
            v14 = math.hypot(0.5, 0.5 + (min(G2[(2 - i11) % 3], G1[i11 - 1, (1 - i11) % 2]) % 1.5) * (min(G2[(2 - i11) % 3], G1[i11 - 1, (1 - i11) % 2]) % 1.5))
            v13 = h5(2.0, (-0.7))
        else:
            v13 = abs(bias)
    return (abs(math.atan2(p, 1.0 + G2[-3] * G2[-3])) * abs(math.atan2(p, 1.0 + G2[-3] * G2[-3])) * abs(math.atan2(p, 1.0 + G2[-3] * G2[-3])) * abs(math.atan2(p, 1.0 + G2[-3] * G2[-3]))) + gain * p


def f(x, y, fx, fs, *, bias=0.5):
    np.random.seed(1134)
    np.random.standard_normal()
    v15 = math.fabs(((y * 1.5) + abs(3.0)))
    v16 = bias
    ix17 = np.array([2, -1, 2, -1])
    v19 = 0.0
    for i18 in range(len(ix17)):
        v19 += G2[ix17[i18]] * math.tan(0.5 * math.tanh((0.5 if abs(bias) > 1.0 else np.random.logistic(math.erf(G2[ix17[0]]), (0.5 + (1.5 - 0.25 * float(i18)) * (1.5 - 0.25 * float(i18)))))))
    v20 = np.sum((np.where((np.exp(np.tanh(G1[:, 1:3])) < (v15 ** 2)), x[-1:], (math.cos(y) + np.array([[(y + v16)], [(y - y)], [(fs * fs * fs)]]))))[((G1[:, 1:] + (y + G1[1, -1])) > 0.0)])
    u21 = G2.copy()
    un22 = G2 * (y + y)
    for t24 in range(3):
        for i25 in range(1, 3 - 1):
            un22[i25] = u21[i25] + (y + y) * (u21[i25 - 1] - 2.0 * u21[i25] + u21[i25 + 1])
        for i25 in range(0, 3):
            u21[i25] = un22[i25]
        if u21[0] > 1.5:
            break
    acc23 = 0.0
    for i25 in range(3):
        acc23 += u21[i25] * u21[i25]
    v26 = (np.linalg.norm((fx * (y if x[ix17[-4]] < 0.0 else v15)))) * y
    v27 = h1(fx[1:], G2[::-1], ((G1[-2, 0] * y) * (y * y)))
    return (((v26 + acc23) / (1.5 + math.tanh(G1[-3, -2]))) + ((y + acc23) + ((float(fs)) - y)))
'''
