"""Found by the program fuzzer (2026-11-22): adjit crashed (KeyError: array1d).

argnums=(0,) (python): KeyError: array1d   (reduced by the fuzzer's reducer from 40 lines)

Cause and fix: a local array allocated inside a loop (`a15 = np.zeros(4)` runs once per
iteration) and only read was treated like an array that keeps its final contents, so the
backward sweep planned to replay the load `a15[3]` and therefore asked to record the array
variable itself on the float tape, which crashed building the tape's initial values. With
contents that differ between iterations (`a = b.copy()` of a changing b) replaying would
also have read the wrong iteration's array. Loads now count a reallocation of their array's
name in a shared loop (or later) like a store: such loads are recorded as floats
(adjit/reverse/plan.py, final_loads). tests/programs.py has the copy-of-a-changing-array
variants.
"""
PARAMS = (('x', 'array1'), ('y', 'float'), ('z', 'float'))
SEED = 1059
SOURCE = '''\
def f(x, y, z):
    k8 = 0
    while k8 < 2:
        k8 += 1
        v9 = y
        v13 = -4
        a15 = np.zeros(4)
        if -0.7:
            y, z = (min(x[k8], a15[3]), k8)
        else:
            pass
    return y
'''
