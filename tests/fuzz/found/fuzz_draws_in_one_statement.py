"""Found by the program fuzzer (2026-11-28, `python -m fuzz -n 1000 --seed 11 --groups`,
not reduced): gradient differs from finite differences, in the interpreter
(argnums=(0,)); values agree.

argnums=(0,) (python): d/dx
adjit       [6.3939637663531474, 7.141084036888548, 1.6340288019586686, -7.545539062445082]
differences [-5.576299474788358, 8.188425824687675, 2.3885498818107616, 3.0498441678046198]
half step   [-5.576299474013055, 8.188425823097619, 2.3885498846732096, 3.0498441662783917]
compared    [True, True, True, True]

A wrong gradient. Reduced (fuzz.check.reduce) to a prange loop read before its array is
written:

    def f(x):
        acc = 0.0
        for i in numba.prange(4):
            acc += math.sin(x[i])
        x[2] = 0.5
        return acc

grad alone drops the loop from the forward sweep and computes it again in the backward
sweep, after x[2] = 0.5, so d/dx[2] is cos(0.5); a serial loop is right. Pinned by
tests/test_prange.py::test_a_parallel_loop_read_before_its_array_is_written (xfail,
strict): reverse/parallel.py must not recompute a loop that reads an array written after
it (or must record x first), as the serial planner already does.

Cause and fix: (write them here when fixing the bug)
"""
PARAMS = (('x', 'array1/rev'), ('y', 'float/zero'), ('z', 'float'), ('t', 'array3/perm'), ('ix', 'index:1,3,1,3'), ('fM', 'form:M'), ('fs', 'form:s'))
SEED = 83768
GROUPS = ("draws", "forms", "globals", "callee-loops", "kwdefaults")
SOURCE = '''\
gain = 2.0
bias = 3.0


G1 = np.array([[1.0, -0.7], [0.3, 0.5], [-2.0, 0.25]])


def h1(b, j, p):
    v2 = float(j)
    b[j % 4] = (1.5 % (2.0 + math.tanh((G1[(j + 2) % 3, (2 * j + 1) % 2] + 0.25 * float(j)))))
    return float(j) + np.random.random()


def h3(p, q):
    for i4 in range(1, 4):
        v5 = math.acos(0.9 * math.tanh(float(i4)))
        v6 = math.sin((math.log10(2.0 + math.sin(np.random.random())) * (math.log10(2.0 + math.sin(np.random.random())) * math.log10(2.0 + math.sin(np.random.random())))))
    if (not (0.3 + math.atan(q)) >= 1.0 or not math.sin((0.5 - 0.5)) > 0.0):
        v7 = ((-0.7) * 0.3)
    elif (np.random.random() <= 0.5 or not (-0.7) < math.atan2((math.sqrt(1.0 + q * q) * np.random.random()), q)):
        v8 = (q / 1.5)
    else:
        v9 = (G1[-2, -2] if (math.erfc(p) * math.erfc(p) * math.erfc(p) * math.erfc(p)) > 0.5 else math.fabs((G1[-1, -1] * 3.0)))
    return q


def h10(p, gain=1.5, *, bias=-0.7):
    if np.random.logistic(2.0, (0.5 + (2.0 / (1.25 + math.sin(G1[0, -2]))) * (2.0 / (1.25 + math.sin(G1[0, -2]))))) < -0.3:
        v12 = G1[1, 1]
        v11 = math.erf(math.expm1(math.tanh(math.pow(G1[-1, 1], 0.0))))
    elif (bias * (0.3 + p)) > 0.0:
        v11 = bias
    else:
        v11 = (G1[-3, 1] * 2.0)
    a13 = np.diag(G1[-3])
    return math.sin(math.cos(math.cosh(math.tanh(G1[-3, -2])))) + bias * p


def h14(b, p):
    a15 = G1[:, 0].copy()
    if (3.0 < -0.3 or ((3.0 + p) // 1.0) > 0.5):
        for i16 in range(len(b)):
            p -= ((G1[(i16 + 2) % 3, (i16 + 1) % 2] * np.random.random()) % 1.5)
            v17 = math.exp(math.tanh(0.25 * float(i16)))
    v18 = 0.0
    for v19 in G1[:, -2]:
        v18 += v19 * math.hypot(max(a15[0], 0.5), 0.5 + v19 * v19)
        v20 = ((0.5 + abs((1.5 % (2.0 + math.tanh((v19 / 1.5)))))) ** 1.5)
    v21 = 0.0
    for i23, v22 in enumerate(b[1:]):
        v21 += math.sin(v22) * ((a15[i23] - G1[np.random.randint(0, 3), (i23 + 0) % 2]) + h10(p, bias=0.25 * float(i23)))
    return np.where((np.array([((-0.7) + p), math.acos(0.9 * math.tanh(v21)), (b[-3] - G1[2, -2]), math.hypot(v21, 0.5 + 2.0 * 2.0)]) >= -0.3), np.full(4, math.cos(2.0)), a15[1]).sum() + v18 + v21


def f(x, y, z, t, ix, fM, fs, *, gain=1.5):
    np.random.seed(120)
    np.random.standard_normal()
    a24 = fM.copy()
    k25 = 0
    while k25 < 1 and not not True:
        k25 += 1
        for i26 in range(0, 4, 2):
            v27 = (math.sin(0.25 * float(i26)) * 1.5)
        j28 = (k25 + 3) % 4
    acc30 = 0.0
    for i32 in numba.prange(4):
        buf29 = np.empty(4)
        for j33 in range(4):
            buf29[j33] = math.sin(x[j33] * math.atan2(z, 1.0 + 0.5 * 0.5) + x[i32])
        t31 = 0.0
        for j33 in range(4):
            t31 += buf29[j33] * buf29[j33]
        acc30 += t31 * t31
    if bias > float(math.floor(fM[-2, -3])):
        v35 = 0.3
        v34 = ((gain * 2.0) * -1.25)
    elif (bias + (t[np.random.randint(0, 2), -2, 2] if math.fabs(abs(G1[-2, 1])) <= 1.0 else a24[0, -3])) < (gain ** 3):
        v34 = (-h10(math.exp(-(acc30 * acc30)), acc30, bias=(-0.7)))
    else:
        v34 = ((-gain) ** 1)
    v36 = float(math.floor(math.pow(abs((G1[2, 0] * 0.3)), 0.5)))
    v37 = np.sum(np.take(fM, ix) * (t[1, 0, -3] + t[np.random.randint(0, 2), -2, ix[2]]))
    v39 = t[-2, 1, -1]
    a40 = np.tanh(t).sum(axis=-2)[-2]
    a41 = x[1:3]
    x[2:] = (np.where(((a40[::2] - np.mean(a40[::2])) >= 0.5), ((z + 2.0) * a41[::-1]), 0.0) - (np.where(((a41[::-1] / (1.0 + x[1:3] * x[1:3])) < G1[np.random.randint(0, 3), :]), (0.25 * np.arange(2)), x[1:3]) / (1.0 + np.sum(np.where(((a41[::-1] / (1.0 + x[1:3] * x[1:3])) < G1[np.random.randint(0, 3), :]), (0.25 * np.arange(2)), x[1:3]) * np.where(((a41[::-1] / (1.0 + x[1:3] * x[1:3])) < G1[np.random.randint(0, 3), :]), (0.25 * np.arange(2)), x[1:3])))))
    u42 = x.copy()
    un43 = np.zeros(4)
    for t45 in range(0):
        for i46 in range(1, 4 - 1):
            un43[i46] = u42[i46] - v36 * u42[i46] * (u42[i46 + 1] - u42[i46 - 1])
        for i46 in range(1, 4 - 1):
            u42[i46] = un43[i46]
    acc44 = 0.0
    for i46 in range(4):
        acc44 += u42[i46] * u42[i46]
    return gain + z + acc30 + np.sum(a24) + np.sum(a41 * a41)
'''
