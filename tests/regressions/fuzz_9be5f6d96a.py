"""Found by the program fuzzer (2026-11-29, --seed 14): gradient differs from finite differences.

argnums=(2,) (python): d/dz: adjit -1.52587890625e-05 (= -2**-16: z is halved 16 times and
leaves through -(z + y)), differences 0.0 at both steps

Cause and fix: not an adjit bug. y grows to about 3e8 in the loop, so a change of z by the
step (1e-6) is below the last bit of z + y: the differences are exactly 0 at h and h/2 and
look consistent. The fuzzer now looks at an entry that differs again with wider steps
(fuzz/check.py _resolved_wider) and calls it a mismatch only if no consistent wider step
agrees with the gradient.
"""
PARAMS = (('x', 'array1/strided'), ('y', 'float'), ('z', 'float/zero'), ('ix', 'index:1,0,1'), ('fM', 'form:M'))
SEED = 5
GROUPS = ('draws',)
SOURCE = '''\
gain = 0.3
scale = 0.5
bias = 0.5
G1 = np.array([[1.5, 0.5], [0.5, -1.25], [-1.25, 0.3]])

def h1(p, scale=-0.7, *, bias=-0.7):
    a2 = np.concatenate((np.exp(np.tanh((np.array([math.cos(gain), (0.5 * 1.5)]) - scale))), ((G1[-3, :] ** 0.0) + G1[-3])))
    return (math.exp(math.tanh(p)) + ((p / (1.5 + math.tanh(gain))) + (p + G1[0, -2]))) + scale * p

def f(x, y, z, ix, fM):
    np.random.seed(35)
    y += (((scale - y) * (scale - y) * (scale - y)) - ((gain + y) + math.log10(2.0 + math.sin(y))))
    for i3 in range(4):
        for i4 in range(4):
            v5 = y
            y = y * 0.5 + (((y + y) + (-G1[ix[0], (2 * i3 + 1) % 2])) - ((gain - 0.25 * float(i3)) + (-y)))
            z = z * 0.5 + (float(i3) - ((bias % 1.5) / (1.5 + math.tanh(np.random.random()))))
    v6 = h1(((scale + z) * (y + z)), y, bias=y)
    v7 = 0.0
    for v8 in G1:
        v7 += np.sum(v8 * (2.0 ** np.tanh(G1[-2])))
    return ((abs(y) + (scale ** 2)) + (-(z + y)))
'''
