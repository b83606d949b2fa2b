"""Found by the program fuzzer (2026-11-26): adjit crashed (numba could not compile).

value_and_grad argnums=(0, 1, 3) (numba): Type of variable _a13_bar cannot be determined

Cause and fix: a test made of numbers only (`if ((3.0 * (-0.7)) ** 2) <= -0.3:`) reached
numba, which pruned the dead branch where it allocated an array's adjoint in one sweep but
not in the other, so the adjoint's type was unknown. The normalizer now keeps only the branch
taken by a test of numbers, operators and module-level numbers or flags (`if DEBUG:`).
"""
PARAMS = (('x', 'array1/zeros+f32+strided'), ('y', 'float/zero'), ('n', 'int'), ('t', 'array3/zeros+f32'))
SEED = 364
SOURCE = '''\
gain = -0.7


def h1(p, *, scale=3.0):
    v2 = np.sum(np.power(np.outer((np.array([((0.5 + abs(p)) ** 1.5), stop_gradient(scale)]) ** 1), (np.full(2, math.hypot(scale, 0.5 + 0.3 * 0.3)) ** 3)), 2.0) * 1.5)
    a3 = np.zeros((3, 2))
    return (v2 + math.fabs((scale * 1.5))) + scale * p


def f(x, y, n, t, gain=3.0):
    v4 = h1(math.log(1.0 + math.tan(0.5 * math.tanh(float(n))) * math.tan(0.5 * math.tanh(float(n)))), scale=2.0)
    for i5 in range(n, 4):
        v6 = (-(((-1.25) if n == 0 else 0.5) // 1.0))
    v4 = math.exp(math.tanh(math.tan(0.5 * math.tanh((t[(n + 1) % 2, (n + 1) % 3, (n + 0) % 4] * 0.3)))))
    gain -= abs(((0.25 * float(n) if n < 0 else 0.25 * float(n)) * (2.0 / (1.25 + math.sin(0.25 * float(n))))))
    if n == 0:
        if n % 2 == 0:
            return ((1.5 % 1.5) * t[(2 * n + 1) % 2, (n + 0) % 3, -2])
        m7 = (np.array([(gain * 2.0), (y * 2.0), 3.0, (y * 3.0)]) < 0.5)
        a8 = np.min(np.tanh(t).swapaxes(0, -1), 0)
    elif not n < 3:
        if ((3.0 * (-0.7)) ** 2) <= -0.3:
            if (0.3 <= 0.0 and np.min(np.sin(x[1:, None])) <= -0.3):
                y = y * 0.5 + h1((math.pow(abs(2.0), 0.5) + (x[n - 1] ** 0)), scale=v4)
                a10 = np.diag((h1(t[(1 - n) % 2, (2 * n + 1) % 3, n - 1], scale=0.5) + np.outer(x[1:], t[(1 - n) % 2, :, n - 1]))).copy()
                a10 *= (a10[-1] * 0.3)
            v9 = math.asin(0.9 * math.tanh((h1(gain, scale=0.25 * float(n)) * 3.0)))
        else:
            v9 = float(n)
    else:
        for i11 in range(n, 4):
            if not math.acos(0.9 * math.tanh(2.0)) > min((-0.7), float(i11)):
                continue
    ix12 = np.array([-1, 1, 1, 1])
    v13 = np.sum(x[np.array([-1, -1])] * math.acos(0.9 * math.tanh(y)))
    a14 = x[:3]
    a14[2] += (gain * -1.25)
    return (x @ x[::-1]) + y + np.min((a14[:, None] ** 2)) + a14.mean() + np.sum(x * x)
'''
