"""Found by the program fuzzer (2026-11-28, `python -m fuzz -n 1000 --seed 11 --groups`),
reduced by hand from a 60-line program (seed 11802) whose value_and_grad, compiled by numba,
returned early on a later draw and so left a view of x unwritten ("argument mutated").

Cause: numba's parallel pipeline deletes a numpy.random call whose result is unused
(numba/core/ir_utils.py, remove_dead_random_call). adjit compiles a gradient with a prange
loop with parallel=True, and dead-code elimination keeps a draw nothing reads (its effect
is the generator's advance), so numba then dropped it: the helper's exponential draw was not
made and every later draw differed from the program's. Fix: reverse/dce.py passes such a
draw's value through vec.keep, a call numba keeps (tests/test_draws.py,
test_draws_nothing_reads_are_made_beside_a_parallel_loop).
"""
PARAMS = (('x', 'array1/zeros+rev'), ('y', 'float'))
SEED = 11802
GROUPS = ("draws",)
SOURCE = '''\
def h1(p, scale=2.0):
    v3 = np.random.exponential(0.5 + abs(math.tan(0.5 * math.tanh(p))))
    return scale * p


def f(x, y):
    np.random.seed(302)
    np.random.standard_normal()
    v15 = h1(0.3, 0.3)
    r = np.random.rayleigh(1.0)
    if r < 0.3:
        return 3.0
    acc20 = 0.0
    for i22 in numba.prange(2):
        acc20 += x[i22] * x[i22]
    return np.sum(x) * y + acc20 + r
'''
