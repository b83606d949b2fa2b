"""Found by the program fuzzer (2026-11-26): generated code raised.

argnums=(0,) (python): UnboundLocalError: cannot access local variable 'm11'

Cause and fix: the mask `m11 = x ** 2 <= x[ix]` was kept unevaluated, and a write into x
(through the view a13 = x[::-1]) in one branch of an `if` computed it inside that branch only;
its use after the `if` then read an undefined name (UnboundLocalError; in numba, whatever the
name held). Pending arrays are now computed before an `if` or loop that may write arrays.
"""
PARAMS = (('x', 'array1/f32+rev'), ('y', 'float'), ('z', 'float'), ('ix', 'index:3,2,2,2'))
SEED = 1119
SOURCE = '''\
scale = 2.0
bias = 1.5


def h1(b, p):
    a2 = (np.log(1.0 + (2.0 ** np.tanh(np.full((3, 2), 1.5))) * (2.0 ** np.tanh(np.full((3, 2), 1.5)))) - np.log1p(np.full((3, 2), math.tan(0.5 * math.tanh(p))) * np.full((3, 2), math.tan(0.5 * math.tanh(p)))))
    a2 -= a2[-1]
    return (-0.7)


def h3(p, q):
    a4 = np.stack((np.array([[3.0, q], [((-1.25) ** 2.0), (q - (-1.25))], [(p * -1.25), 0.5]]), np.full((3, 2), (q - p)), (np.outer(np.full(3, (p + 0.5)), np.array([(p * 0.3), min(p, p)])) - np.max(np.outer(np.full(3, (p + 0.5)), np.array([(p * 0.3), min(p, p)])), axis=0))), axis=0)
    ix5 = np.array([-3, -3])
    return (math.sin((a4[ix5[0], ix5[0], -2] * p)) * -0.7)


def h6(p, bias=-1.25):
    for i7 in range(1, 4):
        v8 = (scale + 0.25 * float(i7))
        for i9 in range(3, 0, -2):
            v10 = 0.3
    return bias + bias * p


def f(x, y, z, ix, *, scale=3.0):
    m11 = ((x ** 2) <= x[ix])
    if math.asin(0.9 * math.tanh(bias)) >= 0.5:
        v12 = ((x[1:] @ np.full((3, 4), stop_gradient(x[1]))) @ ((np.array([3.0, 3.0]) - np.full((2, 2), (x[-2] + x[2]))).reshape((4,)) - x))
    else:
        a13 = x[::-1]
        a13[:-1] = (h3(a13[0], scale) - np.linspace(-1.0, 1.0, 3))
        v14 = h6(math.pow(stop_gradient((-1.25)), 3), a13[0])
    v15 = np.sum(((np.outer(x[:-1], x[:1]) ** 3) ** 0) * math.asin(0.9 * math.tanh(y)))
    v16 = np.sum(x[m11] ** 2)
    v17 = ((np.outer(x[:3], (x[::2] ** 3)) + x[1:3]) * np.reshape(x[1:, None].reshape((3,)), (3, 1))).sum()
    for i18 in range(len(x)):
        a19 = np.stack((np.exp(np.tanh(np.outer(x[:-1], x[-2:]))), (np.full((3, 2), h3(x[i18], float(i18))) / (1.0 + np.sum(np.full((3, 2), h3(x[i18], float(i18))) * np.full((3, 2), h3(x[i18], float(i18))))))), axis=0)
        a20 = (a19[:, :, (1 - i18) % 2] ** 0)
    a21 = np.stack(((np.abs(np.outer(x[1:], x[1::2])) ** 0.5), np.power(np.outer(x[:-1], (0.25 * np.arange(2))), 1), (x[1:, None] - np.full((3, 2), math.pow(1.25 + math.sin(y), 2.5)))), axis=0)
    a22 = np.swapaxes(np.swapaxes(a21, 0, 2), 0, 1)
    return ((1.5 if not np.mean((stop_gradient(np.outer(a22[:, 0, 2], np.array([max(y, a21[1, -1, -1]), v15]))) * (x[1:, None] + np.where((x[1:, None] > math.hypot(scale, 0.5 + scale * scale)), (v16 - a21[-2, -1, 0]), np.full((3, 1), (1.5 % (2.0 + math.tanh(v16)))))))) >= 0.0 else math.log1p(z * z)) / 1.5) + scale + np.sum(a21)
'''
