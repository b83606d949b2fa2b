"""List comprehensions of numbers, and the builtins numba lets iterate them (`sum`, `max`,
`min`, `len`, `np.array`), written as numba users write them: an entropy, a polynomial, a
filtered mean, a pair potential over two generators, zip and enumerate, an index list for a
gather, a comprehension per time step in a helper, seeded draws. Every value is checked
against numba's own compile and every gradient against central differences of it."""
import math

import numpy as np
import pytest
from numba import njit

import adjit
from adjit import AdjitError
from fd import check_value_and_grad


def entropy(p):
    return -sum([p[i] * math.log(p[i]) for i in range(p.shape[0])])


def polynomial(c, x):
    terms = np.array([c[k] * x ** k for k in range(len(c))])
    return terms.sum()


def mean_above(x, threshold):
    kept = np.array([v for v in x if v > threshold])
    return np.mean(kept) * len(kept)


def sup_norm(x):
    return max([abs(v) for v in x]) + min([v * v for v in x])


def pair_energy(r):
    n = r.shape[0]
    return sum([1.0 / (1e-3 + (r[i] - r[j]) ** 2) for i in range(n) for j in range(n)
                if i < j])


def weighted_distance(w, x, y):
    return sum([wi * (xi - yi) ** 2 for wi, xi, yi in zip(w, x, y)])


def enumerate_weights(x):
    return sum([(i + 1) * v * v for i, v in enumerate(x)])


def even_gather(x):
    idx = np.array([i for i in range(x.shape[0]) if i % 2 == 0])
    return np.sum(x[idx] ** 2)


def row_sums(a):
    s = np.array([np.sum(row * row) for row in a])
    return s[0] * s[-1] + len(s)


def loop_over_comprehension(x):
    s = 0.0
    for v in [x[i] * 2.0 for i in range(x.shape[0])]:
        s += v * math.sin(v)
    return s


def names_do_not_leak(x):
    i = 1
    ys = [math.exp(x[i]) for i in range(x.shape[0])]
    return ys[i] * ys[-1]


def nested_sum(a):
    n = a.shape[0]
    return sum([sum([a[i, j] * a[j, i] for j in range(n)]) for i in range(n)])


@njit
def _spring_forces(x, k):
    return np.array([k * (x[i + 1] - x[i] - 1.0) for i in range(x.shape[0] - 1)])


def chain_relaxation(x0, k):
    x = x0.copy()
    for step in range(5):
        f = _spring_forces(x, k)
        for i in range(f.shape[0]):
            x[i] += 0.1 * f[i]
            x[i + 1] -= 0.1 * f[i]
    return np.sum(x * x)


def seeded_noise(x, sigma):
    np.random.seed(7)
    noise = np.array([np.random.normal(0.0, sigma) for _ in range(x.shape[0])])
    return np.sum((x + noise) ** 2)


RNG = np.random.default_rng(11)
P = RNG.uniform(0.1, 1.0, 6)
X = RNG.normal(0.0, 1.0, 7)
A = RNG.normal(0.0, 1.0, (4, 3))



CASES = {
    "entropy": (entropy, (P,), 0),
    "polynomial": (polynomial, (np.array([0.5, -1.0, 2.0, 0.3]), 0.7), (0, 1)),
    "mean_above": (mean_above, (X, 0.1), 0),
    "sup_norm": (sup_norm, (X,), 0),
    "pair_energy": (pair_energy, (np.sort(X),), 0),
    "weighted_distance": (weighted_distance, (P, X[:6], X[1:]), (0, 1, 2)),
    "enumerate_weights": (enumerate_weights, (X,), 0),
    "even_gather": (even_gather, (X,), 0),
    "row_sums": (row_sums, (A,), 0),
    "loop_over_comprehension": (loop_over_comprehension, (X,), 0),
    "names_do_not_leak": (names_do_not_leak, (X,), 0),
    "nested_sum": (nested_sum, (A[:3, :3].copy(),), 0),
    "chain_relaxation": (chain_relaxation, (np.arange(5.0) * 1.1, 0.8), (0, 1)),
    "seeded_noise": (seeded_noise, (X, 0.3), (0, 1)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_comprehension_matches_numba_and_finite_differences(name):
    f, args, argnums = CASES[name]
    check_value_and_grad(f, args, argnums)


def test_entropy_gradient_is_the_analytic_one():
    g = check_value_and_grad(entropy, (P,))
    np.testing.assert_allclose(g, -(np.log(P) + 1.0), rtol=1e-12)


def test_the_comprehension_is_built_as_a_loop_into_an_array():
    text = adjit.show(entropy, "normalized", P)
    assert "listcomp1 = np.empty(" in text and "for listcomp1_i in range(" in text
    assert adjit.show(entropy, "source", P).count("for i in range") == 1     # as written


def test_integer_elements_index_and_float_elements_do_not_truncate():
    assert check_value_and_grad(even_gather, (X,))[1] == 0.0
    # an element that looks like an int but is not (x[i] of a float array) stays a float
    def halves(x):
        return sum([x[i] // 1 + x[i] * 0.5 for i in range(x.shape[0])])
    check_value_and_grad(halves, (X + 3.0,))


def gather_listed(x, idx):
    """The indices listed from an integer array (numba's list is of integers)."""
    ks = [v for v in idx]
    s = 0.0
    for k in ks:
        s += x[k] * x[k]
    return s


def halved_indices(x, idx, mask):
    picked = np.array([v // 2 for v in idx])
    kept = [m for m in mask]
    return np.sum(x[picked] ** 2) + x[0] * (picked[1] / 3) + \
        sum([x[i] for i, b in enumerate(kept) if b])


@njit
def _listed(idx):
    return [v * 2 for v in idx]


def listed_in_a_helper(x, idx):
    w = idx + 1
    return sum([x[k // 2] for k in _listed(w)]) + x[_listed(idx)[0] // 2]


def rebound_before(x, idx):
    """idx is bound again to floats before the comprehension: its elements are floats."""
    idx = idx * 0.5
    return sum([x[0] * v for v in idx])


def test_the_elements_of_an_integer_or_boolean_array_stay_integers_and_booleans():
    idx = np.array([4, 0, 3])
    check_value_and_grad(gather_listed, (X, idx))
    check_value_and_grad(halved_indices, (X, idx, np.array([True, False, True])))
    check_value_and_grad(listed_in_a_helper, (X, idx))
    check_value_and_grad(rebound_before, (X, np.array([3, 1])))    # 1.5 + 0.5, not 1 + 0


def _in_while(x):
    s = 0.0
    while sum([v for v in x]) > s:
        s += 1.0
    return s * x[0]


def _in_conditional(x, flag):
    return sum([v * v for v in x]) if flag else 0.0


def _drawn_filter(x):
    return sum([v for v in x if np.random.random() < 0.5])


def _of_lists(x):
    return np.array([[v, 2.0 * v] for v in x]).sum()


@pytest.mark.parametrize("f, args, words", [
    (_in_while, (X,), "`while` condition"),
    (_in_conditional, (X, True), "x if c else y"),
    (_drawn_filter, (X,), "np.random.random"),
    (_of_lists, (X,), "lists or tuples"),
])
def test_comprehensions_evaluated_other_than_once_are_refused_by_name(f, args, words):
    with pytest.raises(AdjitError, match="list comprehension") as info:
        adjit.grad(f)(*args)
    assert words in str(info.value)
    assert f.__name__ in str(info.value)


def test_builtin_reductions_of_arrays():
    def f(x):
        return sum(x * x) + max(x) * min(x) + sum(x, 1.5)
    check_value_and_grad(f, (X,))


def test_builtin_reductions_of_a_matrix_or_a_number_are_refused():
    def f(a):
        return max(a)
    def g2(a):
        return sum(a)[0]                    # (numba compiles neither)
    for h in (f, g2):
        with pytest.raises(AdjitError, match="2-D array"):
            adjit.grad(h)(A)

    def g(x):
        return max(x[0]) * x[1]
    with pytest.raises(AdjitError, match="of one number"):
        adjit.grad(g)(X)


@pytest.mark.parametrize("name", ["mean_above", "pair_energy", "seeded_noise"])
def test_forward_mode_agrees_with_the_gradient(name):
    """The dot-product test: jvp along t equals the gradient dotted with t."""
    f, args, _ = CASES[name]
    t = np.random.default_rng(5).normal(size=args[0].shape)
    value, tangent = adjit.jvp(f)(*args, t)
    assert value == pytest.approx(njit(f)(*args), rel=1e-12)
    assert tangent == pytest.approx(np.dot(adjit.grad(f)(*args), t), rel=1e-10)


def test_builtin_reductions_of_literal_tuples_and_lists():
    def f(x):
        return sum((x[0], x[1] * x[2], 2.0)) + max([x[0], x[1]]) * min((x[2], x[3], x[0]))
    check_value_and_grad(f, (X,))


@njit
def kmeans_distances(A, num_center, n, centroids):
    """numba-examples' k-means: the distances of every point to every centroid."""
    dist = np.array([[math.sqrt(np.sum((A[i, :] - centroids[j, :]) ** 2))
                      for j in range(num_center)] for i in range(n)])
    return dist


def kmeans_loss(A, centroids):
    return np.sum(kmeans_distances(A, 3, 10, centroids) * np.arange(30.0).reshape(10, 3))


def test_a_list_comprehension_of_rows_is_a_2d_array():
    rng = np.random.default_rng(4)
    check_value_and_grad(kmeans_loss, (rng.random((10, 4)), rng.random((3, 4))), (0, 1))


def ragged(x):
    return np.sum(np.array([[x[i] * j for j in range(i)] for i in range(3)]))


def test_ragged_rows_are_refused():
    with pytest.raises(AdjitError, match="rows whose length changes"):
        adjit.grad(ragged)(np.ones(3))
