"""Found by the program fuzzer (2026-12-07): gradient differs.

argnums=(0,) (python): d/dx
adjit     [0.0, 0.0, 0.0, 9119.3818359375]
reference [0.0, 0.0, 0.0, 9215.479821595318]

Cause and fix: (write them here when fixing the bug)
"""
PARAMS = (('x', 'array1/zeros+f32+strided'), ('y', 'float'), ('t', 'array3/zeros+f32+perm'), ('ix', 'index:0,2,2,3'))
SEED = 1923189
GROUPS = ('buffers', 'callee-loops', 'const-pow', 'constructors', 'float32', 'globals', 'index-arrays', 'joins', 'kwdefaults', 'masks', 'strided-args', 'timesteps', 'transpose3d', 'views')
SOURCE = '''\
G1 = np.array([[2.0, 1.5, 1.5, 1.0], [0.3, -1.25, -0.7, -2.0], [-0.7, -1.25, 1.5, -1.25]])

def h1(b, p):
    return 1.0

def h5(b, p):
    v7 = 0.0
    return 1.0

def f(x, y, t, ix, *, gain=0.5):
    a11 = G1.copy()
    v12 = 1.0
    v15 = t[0, 1, 1]
    a16 = a11[-1]
    a16[ix[1]] = math.tanh(v15 - 1.5)
    buf17 = np.empty(4)
    acc18 = 0.0
    for i20 in range(4):
        for j21 in range(4):
            buf17[j21] = a16[j21] - a16[i20]
        t19 = 0.0
        for j21 in range(4):
            t19 += buf17[j21] * y
        acc18 += -t19 * t19
    u22 = x.copy()
    un23 = x * 1.0
    for i26 in range(0, 4):
        un23[i26] = u22[i26] - a11[1, 1] * u22[i26] * u22[i26] * u22[i26]
    u22[i26] = un23[i26]
    acc24 = 0.0
    acc24 += u22[i26] * u22[i26]
    a27 = x
    v29 = 2.0
    return math.cos((acc18 + acc24) * (acc18 + acc24) * acc24) + np.sum(a11)
'''
