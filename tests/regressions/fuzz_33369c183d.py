"""Found by the program fuzzer (2026-11-22): argument mutated (checkpoint=2).

The checkpointed loop writes into the argument x (through the helper h1); the schedule's
restores of the loop state left x as it was after step 0 instead of the program's final
values. Fix: a checkpointed loop keeps the final contents of the arguments it writes and
puts them back after the schedule.
"""
PARAMS = (('x', 'array1'), ('y', 'float'))
SEED = 42953
SOURCE = '''\
def h1(b, j, p):
    v2 = 1.0
    k3 = 0
    b[j] = p

def f(x, y):
    for i7 in range(4):
        j8 = i7
        v9 = h1(x, 1, math.tanh(y) + j8)
        k10 = 0
    return x[1]
'''
