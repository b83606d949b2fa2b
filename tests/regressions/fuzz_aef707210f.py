"""Found by the program fuzzer (2026-12-06): generated code raised.

argnums=(0,) (python): UnboundLocalError: cannot access local variable '_a1' where it is not associated with a value

Found by make fuzz SEED=42003 (2026-12-06); also raised by the code before that day.
Cause and fix: a loop that rebinds an argument (`x = ...` in the loop) updates an owned
copy of its array in place, and the normalizer's substitution x -> the copy outlived the
branch of the `if` that held the loop: after the `if`, `x` read the copy on the path that
never made it (UnboundLocalError here; a segfault, an internal error, or gradient 0 where it
is x's own in other programs). At the end of a branch the name is now bound to the copy by
an ordinary assignment and means its old array again, so the join after the `if` makes one
array of the paths' arrays (anf.bind_owned_copies). The drawn program's `a5 = np.empty(3)`
is np.zeros here: it summed uninitialized memory, which made the value differ between runs.
"""
PARAMS = (('x', 'array1/strided'), ('y', 'float'), ('z', 'float/zero'), ('w', 'array2/zeros'), ('n', 'int'), ('t', 'array3/zeros+F'), ('ix', 'index:0,1,1'), ('fM', 'form:M'), ('fS', 'form:S'), ('fs', 'form:s'))
SEED = 524249
GROUPS = ('axis3d', 'callee-loops', 'const-pow', 'constructors', 'draws', 'forms', 'globals', 'idioms', 'index-arrays', 'kwdefaults', 'masks', 'strided-args', 'timesteps', 'transpose3d')
SOURCE = '''\
G1 = np.array([[0.25, 2.0, 2.0, 1.25], [0.3, 1.25, 0.5, 0.3], [1.5, 0.75, 0.7, 1.5]])

def h1(p, bias=-0.7):
    return p + p

def f(x, y, z, w, n, t, ix, fM, fS, fs, *, bias=0.5):
    np.random.seed(917)
    a3 = x.copy()
    v4 = 0.5
    a5 = np.zeros(3)
    v8 = float(n)
    v7 = 1.0 if 1.0 else 1.0
    if not n == 3:
        x = x
        for i9 in range(n):
            a5[n] = 0.5
            x = (np.full(4, 3.0) - 1.25) ** 0
            if fs:
                v10 = G1
            elif i9:
                v11 = G1
                a3 = np.power(x, 0.0)
            else:
                v12 = max
                v13 = h1
    r14, c15 = fM.shape
    v16 = float(r14)
    u17 = a3.copy()
    un18 = np.zeros(4)
    for t20 in range(3):
        for i21 in range(0, 4):
            i21 = i21
        for i21 in range(0, 4):
            i21 = i21
    acc19 = 0.0
    for i21 in range(4):
        acc19 += i21
    v22 = 0.0
    for i24, v23 in enumerate(a5[:-1]):
        v22 += v23
    v25 = 0.0
    for e26 in a5.flat:
        v25 += n
    return x[ix[0]] + v22 + v25
'''
