"""Found by the program fuzzer (2026-11-22, 16-worker campaign on the lent machine):
adjit crashed (KeyError: array1d).

Cause and fix: `range(len(a7))` of an array allocated inside the outer loop: the backward
sweep replays `len(a7)`, which made the array variable a value to record on the float tape.
Arrays are never recorded now: their shape is the same every iteration (enforced when they
are allocated) and replayed loads read only final contents (adjit/reverse/adjoint.py, plan).
"""
PARAMS = (('x', 'array1'), ('y', 'float'))
SEED = 83883414
SOURCE = '''\
def h1(b, p):
    return p

def f(x, y):
    for i6 in range(0, 4, 2):
        a7 = np.zeros(4)
        y += y
        k8 = 0
        for i14 in range(len(a7)):
            return 2.0
    return x[2]
'''
