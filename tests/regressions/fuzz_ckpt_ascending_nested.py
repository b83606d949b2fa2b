"""Found by the program fuzzer (2026-11-28, `--only callee-loops -n 300 --seed 1`, reduced;
all five mismatches of that campaign): checkpointed gradient differs.

value_and_grad with checkpoint=2 differs from the recorded gradient in the last bits
(d/dx[1] -0.10297153577476491 against -0.10297153577476474 in the program before
reduction). The cause of fuzz_ckpt_ascending.py, in an inner loop: the outer loop carries
v11 (its backward runs downward either way), the inlined helper's loop over the rows of
G1 only adds into p_bar, so the recorded backward sweep runs it upward
(reverse/ascending.py) and the checkpointed one downward.

Cause and fix: this reduced program already agreed to the bit before the fix of
fuzz_ckpt_ascending.py (an earlier change, not identified, plans the helper's loop alike
in both); kept as a regression for the inner-loop form of that cause.
"""
PARAMS = (('x', 'array1'), ('y', 'float'), ('z', 'float'))
SEED = 1903938572
GROUPS = ()
SOURCE = '''\
G1 = np.array([[0.25, 0.25, 0.75, 1.5], [0.7, 0.7, 1.0, 1.0], [1.0, 1.5, 0.3, 1.0]])

def h5(b, p):
    v6 = 0.0
    for i8, v7 in enumerate(G1):
        v6 += np.sum(v7 * p)
    return v6

def f(x, y, z):
    v11 = 0.3
    for i12 in range(4):
        v11 = v11 * 0.5 + math.sqrt(h5(x, x[i12] * y) + 0.25)
    return v11
'''
