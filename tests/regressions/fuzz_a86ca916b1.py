"""Found by the program fuzzer (2026-11-22): checkpointed gradient differs.

checkpoint=2 gave a different gradient for w than the recorded adjoint. The checkpointed
loop (then: any top-level loop, here the loop nest of np.dot(...)) read a1, which the code
after the loop changes (a1 += ...): the steps recomputed in the backward sweep read a1's
final values instead of those the loop saw.

Cause and fix: a checkpointed loop now keeps, on entry, the values it reads that later code
changes (scalars and arrays) and puts them back while the schedule recomputes steps (the
later values are restored after it); and only loops the user wrote are checkpointed, not
the loop nests of vectorized statements. tests/test_checkpoint.py has a user-loop case.
"""
PARAMS = (('x', 'array1'), ('y', 'float'), ('w', 'array2'), ('n', 'int'))
SEED = 153057
SOURCE = '''\
def f(x, y, w, n):
    a1 = np.ones(4)
    a1 += np.dot(w[:, n % 2], np.outer(a1[:-1], a1)).max()
    v4 = 1.5
    a5 = w[:]
    a7 = 0.7
    for i8 in range(n):
        pass
    return np.sum(a1)
'''
