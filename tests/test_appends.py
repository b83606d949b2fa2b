"""Lists of numbers grown by `.append` in a loop, as numba code builds them: filtered
values, pairwise terms, index lists for gathers, per-row statistics. Each program's value is
checked against numba's own compile and its gradient against central differences of it."""
import math

import numpy as np
import pytest
from numba import njit

import adjit
from adjit import AdjitError
from fd import check_value_and_grad

RNG = np.random.default_rng(3)


def positive_energy(x):
    vals = []
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            vals.append(x[i] * x[i])
    return np.sum(np.array(vals)) + len(vals)


def mean_pair_kernel(x, w):
    terms = []
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            terms.append(math.exp(-w * (x[i] - x[j]) ** 2))
    total = 0.0
    for t in terms:
        total += t
    return total / len(terms)


def gathered_cubes(x):
    idx = []
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            idx.append(i)
    return np.sum(x[np.array(idx)] ** 3)


def row_statistics(a):
    norms = []
    for row in a:
        norms.append(np.sum(row * row))
    return max(norms) + sum(norms) / len(norms)


def weighted_pairs(x, y):
    prods = []
    for k, u in enumerate(x):
        prods.append((k + 1) * u * y[k])
    sums = []
    for i in range(len(x)):
        sums.append(x[i] + y[i] * y[i])
    return np.asarray(prods).sum() + np.array(sums).max()


@njit
def _residuals(p, t, y):
    r = []
    for i in range(t.shape[0]):
        r.append(p[0] * math.exp(-p[1] * t[i]) - y[i])
    return np.array(r)


def least_squares(p, t, y):
    r = _residuals(p, t, y)
    return 0.5 * np.sum(r * r)


def noisy_path(x, sigma):
    np.random.seed(5)
    path = []
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] + sigma * np.random.normal(0.0, 1.0)
        path.append(s)
    p = np.array(path)
    return np.sum(np.tanh(p)) + p[-1]


def two_lists(x):
    small, large = [], []
    for v in x:
        if abs(v) < 0.5:
            small.append(v)
        else:
            large.append(v * v)
    return np.sum(np.array(small)) * 2.0 + np.sum(np.array(large))


def neighbour_pairs(r, rc):
    # a neighbour list of index pairs, then the energy over it (molecular dynamics)
    n = r.shape[0]
    pairs = []
    for i in range(n):
        for j in range(i + 1, n):
            d = r[i] - r[j]
            if np.dot(d, d) < rc * rc:
                pairs.append((i, j))
    e = 0.0
    for (i, j) in pairs:
        d = r[i] - r[j]
        r2 = np.dot(d, d)
        e += 1.0 / r2 ** 6 - 1.0 / r2 ** 3
    return e / max(len(pairs), 1)


def index_and_weight(x, w):
    hits = []
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            hits.append((i, w * x[i] ** 2))
    s = 0.0
    for k in range(len(hits)):
        j, v = hits[k]
        s += v * math.sin(x[j])
    return s + hits[-1][1] + x[hits[0][0]]


def three_items(x):
    pts = []
    for v in x:
        pts.append((v * 2.0, v * v, v > 0.0))
    s = 0.0
    for a, b, positive in pts:
        if positive:
            s += a * b
        else:
            s -= b
    return s


def tuple_by_item(x):
    pts = []
    for v in x:
        pts.append((v, 2.0 * v))
    s = 0.0
    for p in pts:
        a, b = p
        s += p[0] * p[1] + a * b
    return s


def indexed_values(x, order):
    # the indices come from an integer array: the list keeps its dtype, so that they index
    picked = []
    for k in range(order.shape[0]):
        picked.append((order[k], x[k] * 0.5))
    s = 0.0
    for j, v in picked:
        s += x[j] * v
    ranks = []
    for k in range(order.shape[0]):
        ranks.append(order[k])
    for j in ranks:
        s += x[j] ** 3
    return s


def comprehension_of_pairs(x):
    # a comprehension of tuples is the loops that append them (its names do not leak)
    n = x.shape[0]
    i = 7
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if x[i] * x[j] < 1.0]
    triples = [(k, x[k] * x[k], x[k] > 0.5) for k in range(n)]
    s = 0.0
    for i, j in pairs:
        s += (x[i] - x[j]) ** 2
    for k in range(len(triples)):
        j, v, big = triples[k]
        if big:
            s += v * x[j]
    return s + i


def list_from_a_list(x, order):
    # a list built while reading another: its items keep the dtype of what they are read
    # from (the indices stay integers, so that they index)
    pts = []
    for i in range(x.shape[0]):
        if x[i] > -0.5:
            pts.append((i, x[i]))
    sq = []
    for i, v in pts:
        sq.append((i, v * v))
    picked = []
    for k, j in enumerate(order):
        picked.append((j, k))
    s = 0.0
    for i, w in sq:
        s += w * x[i]
    for j, k in picked:
        s += x[j] * k
    return s


def loop_variables_rebound(x, a):
    # the variable of a loop over an integer array, bound again in the body (or an inner
    # loop's of the same name): not the array's elements, and not integers
    halves = []
    counts = []
    inner = []
    scaled = []
    for v in a:
        v = v * 0.5 + x[0]
        halves.append(v)
    for k, v in enumerate(a):
        k = k * 0.5 + x[1]
        counts.append(k)
    for v in a:
        for v in x[:2]:
            inner.append(v)
    for k in range(2):
        k = k * 0.5 * x[2]
        scaled.append(k)
    s = 0.0
    for w in halves:
        s += w * w
    for w in counts:
        s += w * w
    for w in inner:
        s += w * w
    for w in scaled:
        s += w * w
    return s


X = RNG.normal(size=7)
T = np.linspace(0.0, 2.0, 8)
R = RNG.random((12, 3)) * 3.0
CASES = {
    "lists_of_an_integer_arrays_elements": (indexed_values, (X, np.array([3, 1, 2, 0, 6])), 0),
    "tuples_neighbour_pairs": (neighbour_pairs, (R, 1.6), 0),
    "tuples_of_an_index_and_a_value": (index_and_weight, (X, 0.7), (0, 1)),
    "tuples_of_three_kinds": (three_items, (X,), 0),
    "tuples_read_by_item": (tuple_by_item, (X,), 0),
    "tuples_of_a_comprehension": (comprehension_of_pairs, (X,), 0),
    "tuples_from_another_list": (list_from_a_list, (X, np.array([4, 0, 2])), 0),
    "loop_variables_rebound": (loop_variables_rebound, (X, np.array([3, 1, 2])), 0),
    "filtered_values_and_len": (positive_energy, (X,), 0),
    "triangular_pairs_counted": (mean_pair_kernel, (X, 0.7), (0, 1)),
    "index_list_gather": (gathered_cubes, (X,), 0),
    "rows_max_sum_len": (row_statistics, (RNG.normal(size=(4, 3)),), 0),
    "enumerate_and_asarray": (weighted_pairs, (X, X[::-1].copy()), (0, 1)),
    "in_an_njit_helper": (least_squares, (np.array([1.5, 0.8]), T,
                                          1.4 * np.exp(-0.7 * T)), 0),
    "seeded_draws": (noisy_path, (X, 0.3), (0, 1)),
    "two_lists_one_loop_each_branch": (two_lists, (X,), 0),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_appended_list_matches_numba_and_finite_differences(name):
    f, args, argnums = CASES[name]
    check_value_and_grad(f, args, argnums)


def test_filtered_values_gradient_is_the_analytic_one():
    g = adjit.grad(positive_energy)(X)
    np.testing.assert_allclose(g, np.where(X > 0.0, 2.0 * X, 0.0), rtol=1e-12)


def test_tuples_gradient_is_the_analytic_one():
    # sum over v of 2v * v^2 where v > 0, and -v^2 elsewhere
    g = adjit.grad(three_items)(X)
    np.testing.assert_allclose(g, np.where(X > 0.0, 6.0 * X * X, -2.0 * X), rtol=1e-12)


def test_a_list_of_tuples_is_an_array_per_item():
    text = adjit.show(index_and_weight, "normalized", X, 0.7)
    assert "hits_buf0 = vec.empty_int64(hits_room)" in text
    assert "hits_buf1 = np.empty(hits_room)" in text


def _first_of_none(x):
    hits = []
    for i in range(x.shape[0]):
        if x[i] > 10.0:
            hits.append((i, x[i]))
    return hits[0][1] + x[0]


def _last_of_none(x):
    vals = []
    for v in x:
        if v > 10.0:
            vals.append(v)
    return vals[-1] + x[0]


@pytest.mark.parametrize("f", [_first_of_none, _last_of_none])
def test_an_index_past_the_list_raises_as_numba_does(f):
    # the array keeping the list has room past its count: the index is checked as numba's
    # lists check it, not read from the room
    with pytest.raises(IndexError, match="getitem out of range"):
        njit(f)(X)
    with pytest.raises(IndexError, match="getitem out of range"):
        adjit.grad(f)(X)


def test_the_list_is_an_array_with_room_for_every_iteration_and_a_count():
    text = adjit.show(positive_energy, "normalized", X)
    assert "vals_buf = np.empty(vals_room)" in text
    assert "vals_buf[vals_n] = " in text


def _in_a_while_loop(x):
    out = []
    k = 0
    while k < 3:
        out.append(x[k])
        k += 1
    return np.sum(np.array(out))


def _read_while_appending(x):
    out = []
    for i in range(3):
        out.append(x[i])
        if len(out) > 1:
            x[0] += 1.0
    return np.sum(np.array(out))


def _of_arrays(a):
    rows = []
    for i in range(a.shape[0]):
        rows.append(a[i] * 2.0)
    return np.sum(np.array(rows))


def _sizes_the_loop_changes(x):
    out = []
    n = 1
    for i in range(3):
        n += 1
        for j in range(n):
            out.append(x[j])
    return np.sum(np.array(out))


def _tuples_of_two_widths(x):
    out = []
    for v in x:
        if v > 0.0:
            out.append((v, v))
        else:
            out.append((v, v, v))
    return float(len(out))


def _a_tuple_kept_whole(x):
    out = []
    for v in x:
        out.append((v, 2.0 * v))
    s = 0.0
    for p in out:
        q = p
        s += q[0]
    return s


def _lists_of_lists(r):
    per_atom = [[0 for _ in range(0)] for _ in range(r.shape[0])]
    for i in range(r.shape[0]):
        for j in range(r.shape[0]):
            if i != j and abs(r[i] - r[j]) < 1.0:
                per_atom[i].append(j)
    e = 0.0
    for i in range(r.shape[0]):
        for j in per_atom[i]:
            e += (r[i] - r[j]) ** 2
    return e


@pytest.mark.parametrize("f, args, words", [
    (_in_a_while_loop, (X,), "other than adjit builds one"),
    (_lists_of_lists, (X,), r"`per_atom\[i\].append\(...\)`: a list method on what is not"),
    (_tuples_of_two_widths, (X,), "other than adjit builds one"),
    (_a_tuple_kept_whole, (X,), "other than adjit builds one"),
    (_read_while_appending, (X,), "other than adjit builds one"),
    (_sizes_the_loop_changes, (X,), "other than adjit builds one"),
    (_of_arrays, (np.ones((3, 2)),), "appending arrays to the list `rows`"),
])
def test_lists_adjit_does_not_build_are_refused_by_name(f, args, words):
    with pytest.raises(AdjitError, match=words):
        adjit.grad(f)(*args)
