"""Found by the program fuzzer (2026-11-28, `python -m fuzz -n 1000 --seed 11 --groups`,
not reduced): value_and_grad(argnums=(0, 1, 2, 5, 6)) compiled by numba leaves the argument
x different from what the program compiled by numba leaves in it (x is written through the
view a17 = x[1:3] with `a17 -= ...`, whose right side reads a9 at two drawn indices).

value_and_grad argnums=(0, 1, 2, 5, 6) (numba): argument x differs from what the program itself leaves in it

Not investigated. Not numba dropping a dead draw (numba keeps an unused
np.random.exponential). Check the order and number of draws adjit's generated code makes
against the program's (h1 draws in a condition and in a branch; f returns early on a
rayleigh draw), then the write through the view.

Cause and fix: (write them here when fixing the bug)
"""
PARAMS = (('x', 'array1/zeros+rev'), ('y', 'float'), ('z', 'float/zero'), ('n', 'int'), ('ix', 'index:1,2,3,1'), ('fM', 'form:M'), ('fS', 'form:S'))
SEED = 11802
GROUPS = ("draws", "forms", "globals", "callee-loops", "kwdefaults")
SOURCE = '''\
bias = -0.7


G1 = np.array([[0.3, 1.5, 0.25, -2.0], [0.5, -2.0, -0.7, -0.7], [-0.7, -0.7, 0.25, 0.5]])


def h1(p, scale=2.0):
    if (bias < 0.5 and ((scale / (1.5 + math.tanh(scale))) / (1.5 + math.tanh(2.0))) > math.asin(0.9 * math.tanh(np.random.standard_normal()))):
        v2 = ((1.5 % (2.0 + math.tanh(0.5))) if (scale > (-(-1.25)) or (0.3 * 1.5) < -0.3) else (p if (math.atan2(scale, 1.0 + 0.3 * 0.3) + G1[-1, 2]) > 0.0 else bias))
    else:
        if G1[-2, 1] >= 1.0:
            v4 = (scale * -0.7)
            v3 = ((math.exp(-(scale * scale)) - (scale / (1.5 + math.tanh(p)))) * 0.5)
        else:
            v3 = ((np.random.exponential((0.5 + abs(math.tan(0.5 * math.tanh(p))))) - 0.3) * 0.3)
    return ((-(2.0 * 0.3)) * (math.sin(0.3) * p)) + scale * p


def h5(b, c, p):
    v6 = 0.0
    for v8, v7 in zip(G1[:, -4], c[1:3]):
        v6 += max(v7, (1.5 * (1.5 * -0.7)))
    return max(np.power(np.abs((np.abs((2.0 ** np.tanh(G1[1:, :2]))) ** 0.5)), 0.5).min(), v6) + v6


def f(x, y, z, n, ix, fM, fS, bias=-0.7):
    np.random.seed(302)
    np.random.standard_normal()
    a9 = np.zeros(4)
    for i10 in range(n):
        a11 = (np.sign((np.where((np.tan(0.5 * np.tanh(x[::2])) <= bias), (a9[::2] ** 1), x[-2:]) - np.array([(0.3 * 0.3), math.cosh(math.tanh(0.5))]))) * float(i10) + np.floor(z))
        if (z > (y * 2.0) or n < 0):
            y += 1.5
            v12 = (G1[n - 1, -1] + a11[-1])
        elif i10 == 3:
            v12 = x[n - 1]
        else:
            v12 = (-(3.0 if n % 2 == 0 else a9[-3]))
    if (not float(n) >= 0.0 and 0.5 > (-(-0.7))):
        v14 = (-1.25)
        v13 = 0.5
    else:
        v13 = float(n)
    v15 = h1(math.acos(0.9 * math.tanh(0.25 * float(n))), 0.3)
    if (1.5 > -0.3 and np.random.rayleigh((1.0 + math.tanh((bias if n < 1 else v13)) ** 2)) < v13):
        return 3.0
    k16 = 0
    while k16 < 4:
        k16 += 1
        a9[1] = a9[1] * max((2.0 ** math.tanh(float(k16))), G1[(2 - k16) % 3, -4])
        a9[(k16 + 2) % 4] = a9[(k16 + 2) % 4] * math.atan2(max((G1[n - 1, n] * -1.25), math.erf(float(n))), 1.0 + math.cos(float(math.floor(float(k16)))) * math.cos(float(math.floor(float(k16)))))
    a17 = x[1:3]
    a17 -= np.arctan2((x[1:3] ** 0), 1.0 + a9[np.random.randint(0, 4)] * a9[np.random.randint(0, 4)])
    a18 = (np.eye(2) * y + np.diag(a17[:3]))
    acc20 = 0.0
    for i22 in numba.prange(2):
        buf19 = np.empty(2)
        for j23 in range(2):
            buf19[j23] = a17[j23] - a17[i22]
        t21 = 0.0
        for j23 in range(2):
            t21 += buf19[j23] * buf19[j23]
        acc20 += t21 * t21
    idx24 = 0
    acc25 = 0.0
    for i27 in range(2):
        if a17[i27] > 0.0:
            acc25 += math.sin(a17[idx24] * math.cos(0.25 * float(n))) * a17[i27]
            idx24 = 1 + idx24
    v29 = h5(a9, fS[:, (2 - n) % 3], x[-2])
    return (-math.asin(0.9 * math.tanh(h1(G1[(2 * n + 1) % 3, 1])))) + v13 + acc20 + v29 + np.dot(np.concatenate(((x[-1:] * a18[1:, :1]).reshape(1), np.power((np.linspace(-1.0, 1.0, 1) ** 0.0), 0.0))), np.cos((np.exp(np.array([(v13 * 2.0), 3.0]) - np.max(np.array([(v13 * 2.0), 3.0]))) / np.sum(np.exp(np.array([(v13 * 2.0), 3.0]) - np.max(np.array([(v13 * 2.0), 3.0]))))))) + np.sum(a17) + np.sum(a17 * a17)
'''
