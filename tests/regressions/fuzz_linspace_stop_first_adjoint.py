"""Found by the program fuzzer (2026-11-30, campaign --seed 23 --groups, chunk 12,
program seed 3797): generated code raised.

argnums=(3,) (python): UnboundLocalError: cannot access local variable 'v31_bar' where it
is not associated with a value (compiled by numba: "numba could not compile the generated
f_value_and_grad_taped (an adjit bug)": an InternalError, not a wrong number).

Reduced by hand (fails the same way, `adjit.grad(g3)(np.array([0.3, 0.4]))`):

    def g3(w):
        v = math.tan(w[0])
        return math.atan(v) + np.sum(np.linspace(1.0, v, 2) - w)

The backward sweep (adjit.show(g3, "adjoint", w)) reads

    v_bar += vec.linspace_stop_bar(_t3_bar)
    v_bar = _t10_bar * (1.0 / (1.0 + v * v))

with no `v_bar = 0.0` before the first line: atan's contribution is taken for v_bar's first
one (its `v_bar = 0.0; v_bar += ...` merged into an assignment by reverse/emit.py
_merge_resets), while np.linspace's stop adjoint (the registry rule
`vec.linspace_stop_bar(out_bar)`, an array call's adjoint of a scalar argument) comes before
it in the sweep. `v + np.sum(np.linspace(1.0, v, 2) - w)` works; atan(v) (or another
scalar use of v before the linspace in the expression) is needed.

Cause and fix: the adjoint's single-use analysis (reverse/facts.py single_use_temps) counts
the statements each scalar's adjoint receives from (ReverseBuilder._contributing_operands),
and skipped every statement assigning an array, np.linspace's among them: v's one counted
user was atan(v), whose contribution then assigned v_bar. An array operation's scalar
operands now count (reverse/adjoint.py); tests/test_numpy_surface.py has the reduced program.
"""
PARAMS = (('x', 'array1/zeros+rev'), ('y', 'float'), ('z', 'float'), ('w', 'array2/zeros+F'), ('t', 'array3'), ('fx', 'form:x'))
SEED = 3797
GROUPS = ('axis3d', 'buffers', 'callee-loops', 'const-pow', 'constructors', 'counters', 'draws', 'float32', 'forms', 'globals', 'idioms', 'index-arrays', 'kwdefaults', 'masks', 'strided-args', 'timesteps', 'transpose3d', 'views')
SOURCE = '''\
gain = -1.25


G1 = np.array([[0.25, 0.25, 0.3, 1.0], [0.25, 0.75, 0.75, -0.7], [2.0, 0.25, 0.3, -2.0]])
G2 = np.array([0.75, 1.5, 2.0])


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


def h1(p, q):
    k2 = 0
    while k2 < 2 and ((math.atan2(p, 1.5) // 1.0) < (1.5 * 0.3) or not (math.acos(0.9 * math.tanh(p)) % 1.5) > (q % 1.5)):
        k2 += 1
        v3 = G1[0, k2 - 1] * abs((G2[(2 * k2 + 1) % 3] * 2.0))
        if (math.pow(q, 0.0) if not (v3 * v3 * v3) < math.hypot(0.25 * float(k2), 0.5 + G2[k2] * G2[k2]) else (-np.random.normal(math.log1p(v3 * v3)))) >= 0.0:
            return (np.random.gumbel(0.25 * float(k2), (0.5 + abs((v3 * 3.0)))) * 3.0)
        v4 = ((v3 * (p // 1.0)) ** 0.0)
    return math.tanh(((-2.0) * -0.7))


def h5(p, *, q=1.5, scale=3.0):
    v6 = gain
    v7 = p
    return (math.log1p((-q) * (-q)) * math.pow(abs((scale / (1.0 + v7 * v7))), 0.5)) + scale * p


def h8(b, c, p):
    a9 = (np.concatenate((c[:1], b[:-1])) @ np.expm1(np.tanh(G1[:, 1:])))
    v10 = np.amax(np.minimum(np.sqrt(np.abs(G1[1, :]) + 0.25), (np.exp(np.tanh(G1[-2, :])) ** 1.0)))
    v11 = 0.0
    for v13, v12 in zip(G2, b[:-1]):
        v11 += v12 * v13
    v14 = 0.0
    for i16, v15 in enumerate(G1[1:]):
        v14 += np.sum(v15 * math.cos(0.5))
    return (c[2] * 0.3) + v11 + v14


def f(x, y, z, w, t, fx):
    np.random.seed(2166)
    np.random.standard_normal()
    v17 = (G2[-1] % 1.5)
    z += np.sum(np.flip(fx))
    a18 = t.swapaxes(1, 2).swapaxes(2, 0)
    v21 = np.sum(np.sum(np.sqrt(1.0 + a18 * a18), axis=-2) * (0.3 / 1.5))
    a22 = w[-1]
    w[1:] += math.erf(t[1, -1, -1])
    a23 = np.empty(3)
    for i24 in range(3):
        a23[i24] = 0.25 * float(i24)
    acc26 = 0.0
    for i28 in numba.prange(3):
        buf25 = np.zeros(3)
        for j29 in range(3):
            buf25[j29] = G2[j29] - G2[i28]
        t27 = 0.0
        for j29 in range(3):
            t27 += math.tanh(buf25[j29]) * G2[j29]
        acc26 += math.log1p(t27 * t27)
    v30 = h8(a18[:, 3, -1], a18[-3, :, np.random.randint(0, 2)], ((v21 * v21 * v21 * v21) * np.sum(np.flip(fx))))
    v31 = opt_scale(math.tan(0.5 * math.tanh(math.hypot(3.0, 0.5 + w[-3, -2] * w[-3, -2]))))
    return math.atan2((math.tan(0.5 * math.tanh(v30)) * (v17 / 1.5)), np.random.exponential((0.5 + math.atan(v31) * math.atan(v31)))) + acc26 + v31 + (G1[:, 1:] @ np.concatenate((np.where((np.cos(x[:1]) >= a23[1::2]), (x[0] ** 3), (a23[:1] - np.mean(a23[:1]))), (np.log(1.0 + np.linspace(math.log10(2.0 + math.sin(t[np.random.randint(0, 2), 2, -3])), v31, 2) * np.linspace(math.log10(2.0 + math.sin(t[np.random.randint(0, 2), 2, -3])), v31, 2)) - np.log1p(w[0, :] * w[0, :]))))).sum() + np.sum(a22) + np.sum(a22 * a22)
'''
