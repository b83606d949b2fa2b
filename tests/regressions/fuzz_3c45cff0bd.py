"""Found by the program fuzzer (2026-11-26): generated code raised.

argnums=(0,) (python): UnboundLocalError: cannot access local variable 'a14'

Cause and fix: `a14 = np.eye(2) * ...` was kept unevaluated; the return expression's
conditional `(... if cond else h1(x, 2.0))` calls a helper that may write arrays on one
branch, and the flush before that helper computed a14 inside that branch only. Conditional
expressions and `and`/`or` now compute pending arrays before them, as `if` statements do.
"""
PARAMS = (('x', 'array1/f32+rev'), ('y', 'float'), ('z', 'float'), ('n', 'int'), ('t', 'array3/zeros+strided'))
SEED = 64
SOURCE = '''\
gain = 3.0
scale = 2.0
bias = 3.0


def h1(b, p):
    a2 = (((stop_gradient(np.full((2, 3), math.hypot(p, 0.5 + 0.3 * 0.3))) * np.where(((np.array([[math.acos(0.9 * math.tanh(p)), p, (p if not math.asin(0.9 * math.tanh((b[-4] * 0.3))) < math.atan2((-1.25), b[0]) else p)], [math.exp(-(b[1] * b[1])), abs(p), b[0]]]) * np.outer(b[1::2], b[:1])) < 0.0), stop_gradient(p), 0.0)) * np.power(b[:3], 0.0)) - ((0.5 + np.abs(np.array([[b[1], (-p), (-p)], [(p * 3.0), 0.3, (b[-2] + p)]]))) ** 1.5))
    a2[0] -= abs(a2[0, -2])
    return (-1.25)


def h3(p, q=-0.7, *, gain=0.3, scale=0.3):
    v4 = np.power(np.array([[(scale / (1.5 + math.tanh(gain))), (p - bias)], [((-0.7) if math.exp(-(p * p)) > (p if (1.5 % (2.0 + math.tanh(math.sin(0.3)))) >= 0.0 else gain) else scale), math.exp(-(p * p))], [(bias - 1.5), (gain ** 1.0)]]), 2.0).prod()
    if (0.5 * (2.0 / (1.25 + math.sin(q)))) > (v4 + 0.5):
        if v4 >= 0.5:
            v5 = ((-1.25) if not v4 <= 1.0 else (1.5 % (2.0 + math.tanh(gain))))
        else:
            v6 = math.tan(0.5 * math.tanh((1.5 % (2.0 + math.tanh(bias)))))
    else:
        v7 = ((-q) / 1.5)
    return scale + q * p


def f(x, y, z, n, t):
    v8 = (t.transpose(0, 2, 1) + np.transpose(np.moveaxis(t, 1, 0), (1, 2, 0)))[(2 * n + 1) % 2, -3, (n + 0) % 3]
    flag9 = not n != 1
    ix10 = np.array([1, -4, -2, 1])
    v12 = 0.0
    for i11 in range(len(ix10)):
        v12 += x[ix10[i11]] * ((v8 / (1.5 + math.tanh(v8))) * 2.0)
    v13 = h3(0.5, q=(-0.7), gain=float(n), scale=0.25 * float(n))
    a14 = (np.eye(2) * math.sinh(math.tanh(0.25 * float(n))))
    return (stop_gradient(0.5) if ((0.3 + gain) + (y + z)) > y else h1(x, 2.0)) + np.sum(a14)
'''
