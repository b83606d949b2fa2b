"""Found by the program fuzzer (2026-12-06): the program draws differently each run.



Open (2026-12-06, make fuzz SEED=42003): also raised by the code of 05afa6d, before that
day's changes. The interpreted and the compiled gradient read a kept array (`_aN`) that
no path bound: `x` rebound in a loop under `if not n == 3:` to an array made from
constants, read after the `if`. Not a wrong number. Cause and fix: (write them here when
fixing the bug)
"""
PARAMS = (('x', 'array1/strided'), ('y', 'float'), ('z', 'float/zero'), ('w', 'array2/zeros'), ('n', 'int'), ('t', 'array3/zeros+F'), ('ix', 'index:0,1,1'), ('fM', 'form:M'), ('fS', 'form:S'), ('fs', 'form:s'))
SEED = 524249
GROUPS = ('axis3d', 'callee-loops', 'const-pow', 'constructors', 'draws', 'forms', 'globals', 'idioms', 'index-arrays', 'kwdefaults', 'masks', 'strided-args', 'timesteps', 'transpose3d')
SOURCE = '''\
G1 = np.array([[0.25, -2.0, -2.0, -1.25], [0.3, -1.25, 0.5, 0.3], [1.5, 0.75, -0.7, 1.5]])

def h1(p, bias=-0.7):
    return p + p

def f(x, y, z, w, n, t, ix, fM, fS, fs, *, bias=0.5):
    np.random.seed(917)
    a3 = x.copy()
    v4 = 0.5
    a5 = np.empty(3)
    v8 = float(n)
    v7 = 1.0 if 1.0 else 1.0
    if not n == 3:
        x = np.maximum(x[::-1] + x, x[::-1])
        for i9 in range(n):
            a5[(n + 2) % 3] = np.random.vonmises(0.5, 2.0) * fs * h1(np.sum(np.random.gamma(2.5, fs, 3)), 0.25 * float(i9)) + max(-0.7 * -0.7, float(math.floor(-0.7)))
            x = (v7 ** 2 * (np.full(4, math.tanh(3.0)) - -1.25)) ** 0
            if fs < y and h1(-float(n), bias) < 0.0:
                v10 = G1[ix[i9], 0] * math.sqrt(1.0 + math.fabs(3.0) * math.fabs(3.0))
            elif a3[ix[i9]] > -G1[i9 - 1, (3 - n) % 4]:
                v11 = G1[0, ix[i9]]
                a3 = np.power(x, 0.0) + math.hypot(np.random.lognormal(math.tanh(float(i9) / (1.0 + w[ix[1], -2] * w[ix[1], -2])), 0.1 + 0.4 * math.tanh(fM[(n + 0) % 3, (2 * n + 1) % 3] + float(n)) ** 2), 0.5 + np.random.rayleigh(0.5 + abs(0.5 * -0.7)) * np.random.rayleigh(0.5 + abs(0.5 * -0.7)))
            else:
                v12 = max(min(math.tanh(0.3), float(n)), y ** 2)
                v13 = h1(np.sum(np.concatenate((fM, fS), 1)))
    r14, c15 = fM.shape
    v16 = float(r14 * c15)
    u17 = a3.copy()
    un18 = np.zeros(4)
    for t20 in range(3):
        for i21 in range(0, 4):
            un18[i21] = u17[i21] - (G1[-1, 2] + float(c15)) * u17[i21] * u17[i21] * u17[i21]
        for i21 in range(0, 4):
            u17[i21] = 0.5 * (u17[i21] + un18[i21])
    acc19 = 0.0
    for i21 in range(4):
        acc19 += u17[i21] * u17[i21]
    v22 = 0.0
    for i24, v23 in enumerate(a5[:-1]):
        v22 += max(v23, -0.5)
    v25 = 0.0
    for e26 in a5.flat:
        v25 += e26 * (math.atan2(3.0, 1.0 + w[(2 * c15 + 1) % 3, (1 - r14) % 2] * w[(2 * c15 + 1) % 3, (1 - r14) % 2]) + float(n))
    return math.asin(0.9 * math.tanh(x[ix[0]])) + v22 + v25
'''
