"""Allocations with a dtype, as numba code writes them: `np.zeros(n, dtype=np.float64)` in its
many spellings, integer index arrays and boolean masks filled in loops (kept in their dtype,
with no derivative: a float stored into an int array is truncated, as numba does), against
numba's own value and central differences; dtypes adjit does not allocate are refused by
name."""
import math

import numba
import numpy as np
import pytest

import adjit
from fd import check_value_and_grad, fd_grad

X = np.array([0.3, -0.7, 1.1, 2.3, -1.4])   # (2 x away from integers: int32 truncation)


def _module(tmp_path, name, body):
    """A module file with `body` (adjit reads the source of what it differentiates)."""
    import importlib.util
    path = tmp_path / f"{name}.py"
    path.write_text("import math\nimport numba\nimport numpy as np\n\n" + body)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("dtype", ["np.float64", "float", "np.double", "numba.float64",
                                   "'f8'", "'float64'", "np.dtype(np.float64)", "x.dtype"])
def test_float64_spelled_any_way(tmp_path, dtype):
    m = _module(tmp_path, "spelled", f"""
def f(x):
    n = x.shape[0]
    a = np.zeros(n, dtype={dtype})
    b = np.empty((n, 2), {dtype})
    for i in range(n):
        a[i] = math.sin(x[i])
        b[i, 0] = x[i] * a[i]
        b[i, 1] = 1.0
    return np.sum(b[:, 0]) + np.sum(a)
""")
    g = adjit.grad(m.f)(X)
    np.testing.assert_allclose(g, np.cos(X) * (1.0 + X) + np.sin(X), rtol=1e-13)
    np.testing.assert_allclose(g, fd_grad(numba.njit(m.f), (X,), 0), rtol=1e-7)


@numba.njit
def sorted_pairs(x):
    """The index array of the nearest neighbour of each point, built in a loop."""
    n = x.shape[0]
    nearest = np.zeros(n, dtype=np.int64)
    for i in range(n):
        best = np.inf
        for j in range(n):
            d = abs(x[i] - x[j])
            if j != i and d < best:
                best = d
                nearest[i] = j
    s = 0.0
    for i in range(n):
        s += (x[i] - x[nearest[i]]) ** 2
    return s


@numba.njit
def masked_energy(x, threshold):
    n = x.shape[0]
    keep = np.zeros(n, dtype=np.bool_)
    counts = np.empty(n, np.int32)
    for i in range(n):
        keep[i] = x[i] > threshold
        counts[i] = 2 * x[i]           # truncated, as numba stores a float into int32
    e = 0.0
    for i in range(n):
        if keep[i]:
            e += x[i] ** 3 + counts[i]
    return e


def test_an_index_array_filled_in_a_loop():
    value, g = adjit.value_and_grad(sorted_pairs)(X)
    assert value == sorted_pairs(X)
    np.testing.assert_allclose(g, fd_grad(sorted_pairs, (X,), 0), rtol=1e-7)


def test_a_boolean_mask_and_a_truncating_int32_array():
    value, g = adjit.value_and_grad(masked_energy)(X, 0.0)
    assert value == masked_energy(X, 0.0)
    np.testing.assert_allclose(g, np.where(X > 0.0, 3 * X ** 2, 0.0), rtol=1e-13)
    np.testing.assert_allclose(g, fd_grad(masked_energy, (X, 0.0), 0), rtol=1e-7)


def float32_scratch(x):
    a = np.zeros(x.shape[0], dtype=np.float32)
    for i in range(x.shape[0]):
        a[i] = x[i] * x[i]
    return np.sum(a)


def like_a_float32_argument(x, y):
    a = np.zeros(y.shape[0], dtype=y.dtype)
    for i in range(y.shape[0]):
        a[i] = x[i] * y[i]
    return np.sum(a)


def builtin_int(x):
    a = np.zeros(x.shape[0], dtype=int)
    return x[0] + a[0]


@numba.njit
def _distance_and_gradient(x, y):
    """umap's distances with a gradient: (distance, a float32 array) from a helper."""
    d = 0.0
    for i in range(x.shape[0]):
        d += (x[i] - y[i]) ** 2
    return d, np.zeros(x.shape, dtype=np.float32)


def distance_part(x, y):
    return _distance_and_gradient(x, y)[0]


def float32_difference(x, y):
    """umap's mahalanobis: x - y kept in a float32 buffer, summed in float64."""
    diff = np.empty(x.shape[0], dtype=np.float32)
    for i in range(x.shape[0]):
        diff[i] = x[i] - y[i]
    r = 0.0
    for i in range(x.shape[0]):
        r += diff[i] * diff[i]
    return r


def float32_state(x, steps):
    """A float32 state a time loop updates in place."""
    u = np.zeros(x.shape[0], dtype=np.float32)
    for i in range(x.shape[0]):
        u[i] = x[i]
    for t in range(steps):
        for i in range(u.shape[0]):
            u[i] = 0.9 * u[i] + 0.1 * math.sin(u[i])
    return np.sum(u * u)


def test_float32_arrays_allocate_as_numba_does():
    """A float32 array is rounded where it is written, as numba rounds it; the rounding's
    derivative is taken as 1 (np.float32(v) of a number is the same)."""
    y = X[::-1].copy()
    for fn, args, expected in (
            (float32_scratch, (X,), 2.0 * X),
            (like_a_float32_argument, (X, y.astype(np.float32)), y.astype(np.float32)),
            (distance_part, (X, y), 2.0 * (X - y)),
            (float32_difference, (X, y), 2.0 * (X - y))):
        value, g = adjit.value_and_grad(fn)(*args)
        assert value == numba.njit(fn)(*args)
        assert g.dtype == np.float64
        np.testing.assert_allclose(g, expected, rtol=1e-6)
    np.testing.assert_allclose(adjit.grad(distance_part)(X, y),
                               fd_grad(numba.njit(distance_part), (X, y), 0), rtol=1e-7)


def test_a_float32_state_checkpointed_and_recorded():
    x = np.array([0.3, -0.7, 1.1, 0.5])
    recorded = adjit.value_and_grad(float32_state)(x, 30)
    checkpointed = adjit.value_and_grad(float32_state, checkpoint=4)(x, 30)
    assert recorded[0] == checkpointed[0] == numba.njit(float32_state)(x, 30)
    np.testing.assert_array_equal(recorded[1], checkpointed[1])

    def in_float64(x, steps):
        u = x.copy()
        for t in range(steps):
            for i in range(u.shape[0]):
                u[i] = 0.9 * u[i] + 0.1 * math.sin(u[i])
        return np.sum(u * u)
    np.testing.assert_allclose(recorded[1], fd_grad(numba.njit(in_float64), (x, 30), 0),
                               rtol=1e-5)


@pytest.mark.parametrize("fn, args, words", [
    (builtin_int, (X,), "`int` as a dtype"),
])
def test_dtypes_adjit_does_not_allocate_are_refused(fn, args, words):
    with pytest.raises(adjit.AdjitError, match=f"'{fn.__name__}'") as raised:
        adjit.grad(fn)(*args)
    assert words in str(raised.value)


@numba.njit
def _pair_sums(cluster):
    """numba-examples' Lennard-Jones numba_array_impl.py: a new array shaped by a slice of
    another's shape, in its dtype."""
    diff = cluster[:, None, :] - cluster
    mat = diff * diff
    out = np.empty(mat.shape[:2], dtype=mat.dtype)
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = mat[i, j].sum()
    return out


def _pair_energy(cluster):
    return np.sum(_pair_sums(cluster) ** 2)


def test_shape_slices_and_the_dtype_of_a_local_array_allocate_as_numba_does():
    cluster = np.random.default_rng(2).normal(size=(4, 3))
    check_value_and_grad(_pair_energy, (cluster,), 0)


@numba.njit
def _doubled(values, result_dtype):
    """pandas' window kernels take the result's dtype as a parameter."""
    out = np.empty(len(values), dtype=result_dtype)
    for i in range(len(values)):
        out[i] = 2.0 * values[i]
    return out


def dtype_passed_to_a_helper(x):
    return np.sum(_doubled(x, np.float64) * x) + np.sum(_doubled(x, numba.float32))


def test_a_dtype_passed_to_a_helper_allocates_as_numba_does():
    value, g = adjit.value_and_grad(dtype_passed_to_a_helper)(X)
    assert value == numba.njit(dtype_passed_to_a_helper)(X)
    np.testing.assert_allclose(g, 4.0 * X + 2.0, rtol=1e-6)


LARGEST32 = np.finfo(np.float32).max
TENTH32 = np.float32(0.1)
HALF = np.float64(0.5)
SEVEN = np.int32(7)


@numba.njit
def _clamped(x):
    """pynndescent's distances: module constants that are numpy numbers."""
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    if s <= 0.0:
        return LARGEST32
    return s * HALF + TENTH32 * SEVEN


def test_numpy_number_globals_are_constants_as_numba_freezes_them():
    value, g = adjit.value_and_grad(_clamped)(X)
    assert value == _clamped(X)
    np.testing.assert_allclose(g, X, rtol=1e-13)


def truncated_literal(x):
    return x * np.array([1.7, 2.2], dtype=np.int64)[1]


def float32_literal(x):
    return x * np.array([x, 2.2 * x], np.float32)[1]


def float64_literal(x):
    return x * (np.array([2 ** 53 + 1, 1], dtype=np.float64)[0] - 2 ** 53)


def counts_literal(x):
    """pynndescent's rankdata: np.array([n], nonzero.dtype), the dtype by position."""
    nonzero = np.flatnonzero(x > 0.0)
    count = np.concatenate((nonzero, np.array([len(x)], nonzero.dtype)))
    return np.sum(x[count[:-1]]) * count[-1]


@pytest.mark.parametrize("fn, expected", [
    (truncated_literal, 2.0),               # numba truncates 2.2 to 2
    (float32_literal, 2.0 * np.float32(2.2) * 1.5),
    (float64_literal, 0.0),                 # 2**53 + 1 rounds to 2**53
])
def test_np_array_converts_to_the_dtype_given(fn, expected):
    value, g = adjit.value_and_grad(fn)(1.5)
    assert value == numba.njit(fn)(1.5)
    assert g == pytest.approx(expected, rel=1e-6)


def test_np_array_with_an_arrays_dtype_by_position():
    value, g = adjit.value_and_grad(counts_literal)(X)
    assert value == numba.njit(counts_literal)(X)
    np.testing.assert_allclose(g, np.where(X > 0.0, len(X), 0.0), rtol=1e-13)


def written_into_a_literal(x):
    """np.array of integers written out is numba's int64 array: a float stored into it
    truncates (1.7 -> 1), so the derivative through it is zero."""
    a = np.array([1, 2, 3])
    a[0] = x
    return np.cumsum(a)[2] * x + np.max(a) + np.sum(np.concatenate((a, a)))


@pytest.mark.parametrize("x", [1.7, 3.4])
def test_a_float_stored_into_an_integer_literal_truncates(x):
    value, g = adjit.value_and_grad(written_into_a_literal)(x)
    assert value == numba.njit(written_into_a_literal)(x)
    assert g == pytest.approx(5.0 + math.floor(x), rel=1e-12)


def _stored_element(x):
    n = len(x)
    a = np.array([n, 2])
    a[0] = x[0] * 1.5
    return a[0] * x[1] + a[1]


def _stored_slice(x):
    n = len(x)
    a = np.array([n, 2])
    a[:1] = x[:1] * 1.5
    return a[0] * x[1] + a[1]


def _added_to_element(x):
    n = len(x)
    a = np.array([n, 2])
    a[0] += x[0] * 1.5
    return a[0] * x[1] + a[1]


def _stored_into_a_range(x):
    b = np.arange(3) * 2
    b[1] = x[0] * 1.5
    return b[1] * x[1] + b[0]


def _stored_into_a_product(x):
    n = len(x)
    b = np.array([n, 1]) * n
    b[:] = x[:2] * 1.5
    return b[1] * x[1] + b[0]


@pytest.mark.parametrize("fn, stored", [
    (_stored_element, lambda x: math.floor(1.5 * x[0])),
    (_stored_slice, lambda x: math.floor(1.5 * x[0])),
    (_added_to_element, lambda x: math.floor(3 + 1.5 * x[0])),
    (_stored_into_a_range, lambda x: math.floor(1.5 * x[0])),
    (_stored_into_a_product, lambda x: math.floor(1.5 * x[1])),
])
def test_a_float_the_user_stores_into_an_integer_array_truncates(fn, stored):
    """Integer arrays made from integer names (len(x)) or integer results (np.arange):
    numba's int64 arrays, into which a float the user stores later truncates. adjit made
    them float arrays when a float was stored (a value 1.9 off and a gradient through the
    stored value)."""
    x = np.array([1.3, 2.1, 3.0])
    value, g = adjit.value_and_grad(fn)(x)
    assert value == numba.njit(fn)(x)
    np.testing.assert_allclose(g, [0.0, stored(x), 0.0], rtol=1e-14)
    np.testing.assert_allclose(g, fd_grad(fn, [x], 0), atol=1e-6)


def float32_copy_energy(x):
    """Data kept in float32 (a.astype(np.float32)), the energy summed from it."""
    y = x.astype(np.float32)
    return np.sum(y * y)


def float32_matrix_rows(X):
    Y = (2.0 * X).astype(np.float32)
    total = 0.0
    for i in range(Y.shape[0]):
        total += Y[i, 0] * Y[i, 1]
    return total


def test_astype_float32_rounds_as_numba_does():
    x = np.array([0.3, -0.5, 0.9, 0.4])
    value, g = adjit.value_and_grad(float32_copy_energy)(x)
    assert value == numba.njit(float32_copy_energy)(x)
    # the derivative of the rounded values' energy: 2 y, y the float32 values
    np.testing.assert_array_equal(g, 2.0 * x.astype(np.float32).astype(np.float64))
    X = np.random.default_rng(2).normal(size=(5, 2))
    value, g = adjit.value_and_grad(float32_matrix_rows)(X)
    assert value == numba.njit(float32_matrix_rows)(X)
    Y = (2.0 * X).astype(np.float32).astype(np.float64)
    np.testing.assert_allclose(g, 2.0 * Y[:, ::-1], rtol=1e-15)
    np.testing.assert_allclose(g, fd_grad(numba.njit(float32_matrix_rows), [X], 0, h=1e-3,
                                          order=4), rtol=1e-3, atol=1e-3)


def _dtype_held(x):
    dt = x.dtype
    z = np.zeros(3, dt)
    z[:] = x[:3] * 2.0
    return np.sum(z ** 2)


def _finfo_of_the_argument(x):
    tiny = np.finfo(x.dtype).tiny
    s = 0.0
    for i in range(x.size):
        s += x[i] * (1.0 + np.finfo(x.dtype).eps) + np.log(x[i] * x[i] + tiny)
    return s


def _zeros_like_in_its_dtype(x):
    z = np.zeros_like(x, dtype=x.dtype)
    k = np.zeros_like(x, dtype=np.int64)
    for i in range(x.size):
        z[i] = x[i] * 3.0
        k[i] = x[i] * 3.0           # (truncated, as numba's int64 array stores it)
    return np.sum(z * k)


@pytest.mark.parametrize("fn", [_dtype_held, _finfo_of_the_argument, _zeros_like_in_its_dtype])
def test_an_arrays_dtype_as_a_value(fn):
    """`dt = x.dtype` held in a name, `np.finfo(x.dtype).eps` and `.tiny`, and
    `np.zeros_like(x, dtype=...)` in the argument's or an integer dtype: numba's constants and
    allocations (they were refused: `.dtype` as a value, *_like with a dtype). float64
    exactly; float32 arguments give float32 gradients, values within float32's rounding
    (adjit computes float32 sums' later arithmetic in float64)."""
    check_value_and_grad(fn, (X,), 0, value_rtol=1e-15)
    x32 = X.astype(np.float32)
    value, g = adjit.value_and_grad(fn)(x32)
    assert g.dtype == np.float32
    forward = numba.njit(fn)
    assert value == pytest.approx(forward(x32), rel=2e-7)
    np.testing.assert_allclose(g, fd_grad(forward, (X,), 0), rtol=1e-5, atol=1e-6)


def _mask_weights(x):
    m = (x > 0.5).astype(np.float64)
    return np.sum(m * x * x)


def _stored_mask(x, b):
    m = x > 0.0
    return np.sum(m.astype(np.float64) * x) + np.sum(b.astype(np.float64) * x * x)


def _counted(x):
    return np.sum((x > 0.5).astype(np.float64)) * x[0] + np.sum((x < 0.0).astype(np.int64) * x)


def _mask_in_float32(x):
    w = (x > 0.5).astype(np.float32)
    k = np.arange(x.shape[0]).astype(np.float32)
    return np.sum(w * x) + np.sum(k * x)


@pytest.mark.parametrize("fn, args, expected", [
    (_mask_weights, (X,), 2.0 * X * (X > 0.5)),
    (_stored_mask, (X, X > 1.0), (X > 0.0) + 2.0 * X * (X > 1.0)),
    (_counted, (X,), np.array([2.0, 0, 0, 0, 0]) + (X < 0.0)),
    (_mask_in_float32, (X,), (X > 0.5) + np.arange(5.0))],
    ids=["mask", "stored-and-passed", "counted", "float32"])
def test_a_boolean_mask_converted_to_numbers_weighs_as_numba_does(fn, args, expected):
    """`(x > 0.5).astype(np.float64)`, a boolean array's astype to float64 and float32 (numba
    has no float() of a boolean: the generated code did not compile; float32 was refused
    for any array not holding floats), and an integer array's to float32: numbers without a
    derivative, against numba's value, the analytic gradient and central differences."""
    g = check_value_and_grad(fn, args, 0, value_rtol=1e-15)
    np.testing.assert_allclose(g, expected, rtol=1e-15)
