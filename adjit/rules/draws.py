"""numba's random draws, written as the transformations of standard draws that numba applies.

numba computes `np.random.normal(loc, scale)` as `loc + scale * z`, z its standard normal
draw; `np.random.exponential(scale)` as `-log(1 - u) * scale`, u its uniform draw; and so on
(numba/np/random/legacy.py). Written here the same way, in the same order of draws, such a
function computes the same numbers as numba's and, read by adjit like any helper, has the
pathwise (reparameterization) derivative in its parameters: what finite differences of a
function that seeds its own generator give. The normalizer inlines the function a draw's
registry entry names (rules/table.py, `draw=`) in place of the call; the standard draws
inside it (np.random.random, np.random.standard_normal, np.random.standard_gamma) are calls
with an effect, made once and recorded (analysis/effects.py).

`<name>` is the draw of one number; `<name>_n(..., size)` the draw of an array of that size
(an int or a tuple), element after element in C order as numba fills it. Where each element
takes one standard draw and no branch, the array form is arithmetic on an array of standard
draws (the same numbers in the same order); where it takes a branch or several standard
draws, a loop over the elements.

numba raises ValueError for some invalid parameters (a scale <= 0); here such a check is an
assert, so the gradient fails where the function would (with AssertionError).
"""
import math

import numpy as np


def normal(loc=0.0, scale=1.0):
    return loc + scale * np.random.standard_normal()


def normal_n(loc, scale, size):
    return loc + scale * np.random.standard_normal(size)


def uniform(low=0.0, high=1.0):
    return low + (high - low) * np.random.random()


def uniform_n(low, high, size):
    return low + (high - low) * np.random.random(size)


def exponential(scale=1.0):
    return -math.log(1.0 - np.random.random()) * scale


def exponential_n(scale, size):
    return -np.log(1.0 - np.random.random(size)) * scale


def lognormal(mean=0.0, sigma=1.0):
    return math.exp(mean + sigma * np.random.standard_normal())


def lognormal_n(mean, sigma, size):
    return np.exp(mean + sigma * np.random.standard_normal(size))


def laplace(loc=0.0, scale=1.0):
    u = np.random.random()
    if u < 0.5:
        return loc + scale * math.log(u + u)
    return loc - scale * math.log(2.0 - u - u)


def laplace_n(loc, scale, size):
    # both sides are finite for every u in [0, 1) except the one taken at u = 0
    u = np.random.random(size)
    return np.where(u < 0.5, loc + scale * np.log(u + u), loc - scale * np.log(2.0 - u - u))


def logistic(loc=0.0, scale=1.0):
    u = np.random.random()
    return loc + scale * math.log(u / (1.0 - u))


def logistic_n(loc, scale, size):
    u = np.random.random(size)
    return loc + scale * np.log(u / (1.0 - u))


def gumbel(loc=0.0, scale=1.0):
    u = 1.0 - np.random.random()
    return loc - scale * math.log(-math.log(u))


def gumbel_n(loc, scale, size):
    u = 1.0 - np.random.random(size)
    return loc - scale * np.log(-np.log(u))


def rayleigh(scale=1.0):
    assert scale > 0.0
    return scale * math.sqrt(-2.0 * math.log(1.0 - np.random.random()))


def rayleigh_n(scale, size):
    assert scale > 0.0
    return scale * np.sqrt(-2.0 * np.log(1.0 - np.random.random(size)))


def weibull(a):
    u = 1.0 - np.random.random()
    return (-math.log(u)) ** (1.0 / a)


def weibull_n(a, size):
    u = 1.0 - np.random.random(size)
    return (-np.log(u)) ** (1.0 / a)


def pareto(a):
    u = 1.0 - np.random.random()
    return 1.0 / u ** (1.0 / a) - 1


def pareto_n(a, size):
    u = 1.0 - np.random.random(size)
    return 1.0 / u ** (1.0 / a) - 1


def power(a):
    assert a > 0.0
    e = -math.log(1.0 - np.random.random())
    return math.pow(1 - math.exp(-e), 1.0 / a)


def power_n(a, size):
    assert a > 0.0
    e = -np.log(1.0 - np.random.random(size))
    return (1 - np.exp(-e)) ** (1.0 / a)


def gamma(shape, scale=1.0):
    assert scale > 0.0
    return np.random.standard_gamma(shape) * scale


def gamma_n(shape, scale, size):
    assert scale > 0.0
    return np.random.standard_gamma(shape, size) * scale


def triangular(left, mode, right):
    if right == left:
        return left + 0.0
    u = np.random.random()
    c = (mode - left) / (right - left)
    if u > c:
        return right + (left - right) * math.sqrt((1.0 - u) * (1.0 - c))
    return left + (right - left) * math.sqrt(u * c)


def triangular_n(left, mode, right, size):
    out = np.empty(size)
    flat = out.reshape(-1)
    for k in range(flat.shape[0]):
        flat[k] = np.random.triangular(left, mode, right)
    return out


def wald(mean, scale):
    assert mean > 0.0
    assert scale > 0.0
    mu_2l = mean / (2.0 * scale)
    y = np.random.standard_normal()
    y = mean * y * y
    x = mean + mu_2l * (y - math.sqrt(4 * scale * y + y * y))
    u = np.random.random()
    if u <= mean / (mean + x):
        return x
    return mean * mean / x


def wald_n(mean, scale, size):
    out = np.empty(size)
    flat = out.reshape(-1)
    for k in range(flat.shape[0]):
        flat[k] = np.random.wald(mean, scale)
    return out
