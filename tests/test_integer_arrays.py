"""Integer and boolean arrays keep numba's integer types through numpy's functions: np.sum,
np.prod, np.max, np.min, np.cumsum (and the methods and builtins), np.abs, np.minimum,
np.maximum, np.where, np.clip and np.concatenate of integers are integers, as numba's are. A
float in their place loses integers above 2**53, cannot size an array, bound a range or index
one, and wraps differently when converted. And a largest or smallest value of no elements
raises as numba does, instead of giving -inf.

Each program is written as numba code uses integer arrays (counts, labels, offsets), with a
float argument to differentiate; the value is compared with numba's to the bit and the
gradient with central differences of numba's forward."""
import numba
import numpy as np
import pytest

import adjit

from fd import fd_grad

BIG = np.array([2 ** 53, 1, 1], dtype=np.int64)    # its float64 sum is 2**53, not 2**53 + 2
LABELS = np.array([0, 2, 1, 2], dtype=np.int64)
MASK = np.array([True, False, True, True])
UNSIGNED = np.array([3, 5, 7], dtype=np.uint64)
INT32 = np.array([3, -5, 7], dtype=np.int32)


def sum_exact(x, k):
    return x * (np.sum(k) - 2 ** 53)


def sum_method(x, k):
    return x * (k.sum() - 2 ** 53)


def builtin_sum(x, k):
    return x * (sum(k) - 2 ** 53)


def running_sum(x, k):
    return x * (np.cumsum(k)[2] - 2 ** 53)


def running_sum_of_rows(x, k):
    return x * (np.cumsum(k.reshape(1, 3), axis=1)[0, 2] - 2 ** 53)


def largest(x, k):
    return x * (np.max(k + 1) - 2 ** 53)


def smallest(x, k):
    return x * (np.min(k + 2 ** 53) - 2 ** 53)


def builtin_largest(x, k):
    return x * (max(k + 1) - 2 ** 53)


def halved(x, k):
    return x * (np.sum(k) // 2 - 2 ** 52)


def shifted(x, k):
    return x * (np.sum(k) >> 1) / 2 ** 52


def as_int32(x, k):
    return x * np.int32(np.sum(k) * 1000000000)


def absolute(x, k):
    return x * (np.sum(np.abs(k - 2 ** 53 - 5)) - 2 ** 53)


def elementwise_minimum(x, k):
    return x * (np.sum(np.minimum(k, 2 ** 53 + 1)) - 2 ** 53)


def chosen(x, k):
    return x * (np.sum(np.where(k > 2, k, 1)) - 2 ** 53)


def clipped(x, k):
    return x * (np.sum(np.clip(k, 0, 2 ** 60)) - 2 ** 53)


def joined(x, k):
    return x * (np.sum(np.concatenate((k, k[1:]))) - 2 ** 53)


def counted_loop(x, k):
    r = 0.0
    for t in range(np.sum(k) - 2 ** 53):
        r += x * t
    return r


def indexed(x, k):
    return x * np.array([1.0, 2.0, 3.0, 4.0])[np.sum(k) - 2 ** 53]


def per_label(x, labels):
    """A histogram sized by the largest label: out = np.zeros(np.max(labels) + 1)."""
    out = np.zeros(np.max(labels) + 1)
    for i in range(labels.shape[0]):
        out[labels[i]] += x * (i + 1.0)
    return np.sum(out * out)


def summed_by_axis(x, labels):
    return x * np.sum(labels.reshape(2, 2), axis=0)[1]


def product(x, labels):
    return x * np.prod(labels + 1)


def mean_of_integers(x, labels):
    return x * np.mean(labels)


def ranked(x, mask):
    """Positions by the running count of a mask (a rank): an integer index array."""
    xs = np.array([x, 2.0 * x, 3.0 * x, 4.0 * x])
    return np.sum(xs[mask.cumsum() - 1])


def count_of_mask(x, mask):
    return x * np.sum(mask) + x * mask.cumsum()[3]


def any_and_all(x, mask):
    return x * np.max(mask) + x * (1 + np.min(mask))


def unsigned_sums(x, u):
    return x * np.sum(u) + x * np.prod(u) + x * np.max(u) + x * np.min(u)


def narrow_integers(x, k):
    return x * np.max(k) + x * np.sum(k) + x * np.min(k)


ON_BIG = (sum_exact, sum_method, builtin_sum, running_sum, running_sum_of_rows, largest,
          smallest, builtin_largest, halved, shifted, as_int32, absolute, elementwise_minimum,
          chosen, clipped, joined, counted_loop, indexed)
CASES = [(f, BIG) for f in ON_BIG] + \
    [(f, LABELS) for f in (per_label, summed_by_axis, product, mean_of_integers)] + \
    [(f, MASK) for f in (ranked, count_of_mask, any_and_all)] + \
    [(unsigned_sums, UNSIGNED), (narrow_integers, INT32)]


@pytest.mark.parametrize("f, ints", CASES, ids=[f.__name__ for f, _ in CASES])
def test_integer_results_are_numbas(f, ints):
    forward = numba.njit(f)
    given = ints.copy()
    value, g = adjit.value_and_grad(f)(1.5, given)
    assert value == forward(1.5, ints)
    assert g == pytest.approx(fd_grad(forward, (1.5, ints), 0, h=1e-4), rel=1e-7, abs=1e-9)
    np.testing.assert_array_equal(given, ints)


def test_an_integer_sum_indexes_as_numba_does():
    # a float64 sum (2**53) would read element 0, not element 2
    g = adjit.grad(indexed)(1.5, BIG)
    assert g == 3.0


def largest_of_none(x, n):
    return x * np.max(np.ones(n))


def smallest_of_a_slice(x):
    return np.min(x[:0]) + x[0]


def largest_along_an_empty_axis(x):
    return np.sum(np.max(x.reshape(3, 1)[:, :0], axis=1)) + x[0]


def spread_of_none(x):
    return np.ptp(x[:0]) + x[0]


def builtin_largest_of_none(x):
    return max(x[:0]) + x[0]


@pytest.mark.parametrize("f, args, message", [
    (largest_of_none, (1.5, 0), "zero-size array to reduction operation maximum"),
    (smallest_of_a_slice, (np.ones(3),), "zero-size array to reduction operation minimum"),
    (largest_along_an_empty_axis, (np.ones(3),),
     "zero-size array to reduction operation maximum"),
    (spread_of_none, (np.ones(3),), "zero-size array reduction not possible"),
    (builtin_largest_of_none, (np.ones(3),), "max\\(\\) arg is an empty sequence"),
])
def test_a_largest_value_of_no_elements_raises(f, args, message):
    """numba raises here (np.max and np.ptp with numpy's ValueError; the builtin max with
    StopIteration, where adjit says what Python says); a loop from -inf would return it."""
    with pytest.raises(ValueError, match=message):
        adjit.value_and_grad(f)(*args)


def infinity_norm_of_none(x):
    return np.linalg.norm(x[:0], np.inf) + np.linalg.norm(x[:0], -np.inf) + x[0]


def test_the_infinity_norm_of_no_elements_is_zero_as_numbas():
    x = np.array([2.0, -3.0, 1.0])
    value, g = adjit.value_and_grad(infinity_norm_of_none)(x)
    assert value == numba.njit(infinity_norm_of_none)(x) == 2.0
    np.testing.assert_array_equal(g, [1.0, 0.0, 0.0])


def norms(x):
    return np.linalg.norm(x, np.inf) + np.linalg.norm(x, -np.inf)


def test_infinity_norms_of_elements_keep_their_derivative():
    x = np.array([2.0, -3.0, 1.0])
    g = adjit.grad(norms)(x)
    np.testing.assert_allclose(g, fd_grad(numba.njit(norms), (x,), 0), rtol=1e-7)


# arrays numba makes in an integer dtype from integers (np.full(n, 0) where 0.0 was meant, a
# counts array like the labels, repeated labels): a float stored into one truncates, and no
# derivative flows through it. adjit made some of them float arrays (np.full, np.full_like,
# np.repeat: a different value) and gave others (the *_like of an integer array) the
# derivative of the float stored (the value right, the gradient not).

def best_per_group(x, labels):
    best = np.full(3, 0)                    # numba's int64: the maxima truncate
    for i in range(len(x)):
        best[labels[i]] = max(best[labels[i]], x[i] * 10.0)
    return np.sum(best) * x[0]


def counts_like_labels(x, labels):
    weights = np.zeros_like(labels)         # int64, as labels
    for i in range(len(x)):
        weights[labels[i]] += x[i] * 2.0
    return np.sum(weights[:3] * x[:3])


def full_of_an_int(x, labels):
    b = np.full(4, 3)
    b[0] = x[0] * 1.5
    b[1] += x[1] * 2.5
    return b[0] * x[1] + b[1] * x[2] + b[2] * x[3]


def full_of_a_length(x, labels):
    b = np.full(4, len(x))
    b[0] = x[0] * 1.5
    b[1] += x[1] * 2.5
    return b[0] * x[1] + b[1] * x[2] + b[2] * x[3]


def full_of_true(x, labels):
    b = np.full(4, True)
    b[0] = x[0] * 1.5
    b[1] += x[1] * 2.5
    return b[0] * x[1] + b[1] * x[2] + b[2] * x[3]


def full_like_labels(x, labels):
    b = np.full_like(labels, 3)
    b[0] = x[0] * 1.5
    b[1] += x[1] * 2.5
    return b[0] * x[1] + b[1] * x[2] + b[2] * x[3]


def full_like_an_expression(x, labels):
    b = np.full_like(labels * 2, 2.5)
    b[0] = x[0] * 1.5
    b[1] += x[1] * 2.5
    return b[0] * x[1] + b[1] * x[2] + b[2] * x[3]


def zeros_like_labels(x, labels):
    b = np.zeros_like(labels)
    b[0] = x[0] * 1.5
    b[1] += x[1] * 2.5
    return b[0] * x[1] + b[1] * x[2] + b[2] * x[3]


def ones_like_labels(x, labels):
    b = np.ones_like(labels)
    b[0] = x[0] * 1.5
    b[1] += x[1] * 2.5
    return b[0] * x[1] + b[1] * x[2] + b[2] * x[3]


def zeros_like_an_expression(x, labels):
    b = np.zeros_like(labels + 1)
    b[0] = x[0] * 1.5
    b[1] += x[1] * 2.5
    return b[0] * x[1] + b[1] * x[2] + b[2] * x[3]


def ones_like_a_mask(x, labels):
    b = np.ones_like(labels > 0)
    b[0] = x[0] * 1.5
    b[1] += x[1] * 2.5
    return b[0] * x[1] + b[1] * x[2] + b[2] * x[3]


def repeated_labels(x, labels):
    b = np.repeat(labels, 2)
    b[0] = x[0] * 1.5
    b[1] += x[1] * 2.5
    return b[0] * x[1] + b[1] * x[2] + b[2] * x[3]


def empty_like_labels(x, labels):
    b = np.empty_like(labels)
    b[:] = 1
    b[0] = x[0] * 1.5
    b[1] += x[1] * 2.5
    return b[0] * x[1] + b[1] * x[2] + b[2] * x[3]


@pytest.mark.parametrize("f", [
    full_of_an_int, full_of_a_length, full_of_true, full_like_labels, full_like_an_expression,
    zeros_like_labels, ones_like_labels, zeros_like_an_expression, ones_like_a_mask,
    repeated_labels, empty_like_labels])
def test_floats_stored_into_integer_arrays_numba_makes_truncate(f):
    x = np.array([1.3, 2.1, 3.3, 0.7])
    value, g = adjit.value_and_grad(f)(x, LABELS)
    forward = numba.njit(f)
    assert value == forward(x, LABELS)
    np.testing.assert_allclose(g, fd_grad(forward, [x, LABELS], 0), atol=1e-6)


def scaled_into_counts(x, labels):
    counts = np.zeros(4, np.int64)
    counts[:] = x * 3.7                     # truncates: counts vary with nothing
    weights = labels * 0.5
    return np.sum(counts * weights) + x[1]


def thresholds_and_levels(x, labels):
    above = np.zeros(4, np.bool_)
    above[:] = x > 0.5
    levels = np.zeros(4, np.int64)
    for i in range(4):
        levels[i] = x[i] * 3.0
    s = 0.0
    for i in range(4):
        s += levels[i] * x[i] + above[i] * x[i] ** 2 + levels[i] * 0.25
    return s


@pytest.mark.parametrize("f", [best_per_group, counts_like_labels, scaled_into_counts,
                               thresholds_and_levels])
def test_integer_arrays_written_as_numba_code_does(f):
    x = np.array([0.37, 0.52, 0.21, 0.44])
    value, g = adjit.value_and_grad(f)(x, LABELS)
    forward = numba.njit(f)
    assert value == forward(x, LABELS)
    np.testing.assert_allclose(g, fd_grad(forward, [x, LABELS], 0), atol=1e-6)
