"""Found by the program fuzzer (2026-11-29): argument mutated.

value_and_grad argnums=(0, 1, 2, 3, 4, 5) (numba): argument x differs from what the program itself leaves in it

Cause and fix: an oracle fault, not adjit's. numba compiles a function with a nested def
through its closure-inlining pass, whose dead-code elimination treats every np.random call
but seed and shuffle as free of effects (numba/core/ir_utils.py, remove_dead_random_call):
the three logistic draws whose value is unused are dropped, so numba's randint draws differ
from the program's (x ends 3.0 in numba, 4.5 in Python and in adjit, which draws every
number the program draws). The checker judges programs with a nested def that draw in the
interpreter only (check._nested_def_and_draws). Reduced from seed 19 (program seed 6741).
Since then adjit refuses a draw whose value is unused in a function numba compiles so
(normalize/check.py check_dead_draws): the logistic draw's value is read here (`0.0 * v16`),
which keeps it in numba too.
"""
PARAMS = (('x', 'array1'), ('y', 'float'), ('z', 'float'), ('t', 'array3/zeros'), ('fy', 'form:y'), ('fM', 'form:M'))
SEED = 6741
GROUPS = ('index-arrays', 'masks', 'transpose3d', 'axis3d', 'const-pow', 'float32', 'strided-args', 'views', 'kwdefaults', 'constructors', 'buffers', 'counters', 'timesteps', 'draws', 'globals', 'callee-loops', 'forms', 'idioms')
SOURCE = '''\
G1 = np.array([[2.0, 0.7, 1.5, 0.5], [1.25, 1.0, 0.75, 2.0], [2.0, 1.0, 1.0, 0.5]])

def f(x, y, z, t, fy, fM, scale=0.5):
    np.random.seed(272)
    for i15 in range(1, 4):
        v16 = np.random.logistic(1.5, 0.5)
        x += 0.0 * v16
    for i19 in range(4):
        x += G1[2, np.random.randint(0, 4)]

    def inner26(t27):
        return t27
    v25 = 1.0 + inner26(0.7)
    return 1.0
'''
