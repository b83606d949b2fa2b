"""Found by the program fuzzer (campaign --seed 5, 2026-11-22): wrong value and gradient.

`x[::-1] = x` was lowered as a running elementwise update (each element written before later
ones read it), leaving the palindrome [x0, x1, x1, x0] where numpy leaves x reversed; the same
for `a[::-1] += a`. Cause: a right-hand side that is the whole target array was not copied
(materializing a whole-array view returns the name itself). Fix: a right-hand side reading the
target other than element for element is computed into a copy first.
"""
PARAMS = (('x', 'array1'), ('y', 'float'))
SEED = 5
SOURCE = '''\
def f(x, y):
    a1 = x * y
    a1[::-1] = a1
    a2 = np.sin(x)
    a2[::-1] += a2
    return np.dot(a1, np.arange(4.0)) + np.sum(a2 * a1[::-1])
'''
