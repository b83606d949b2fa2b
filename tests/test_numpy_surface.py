"""numba's numpy surface, each function inside a loss written as a numba user writes it: the
same function compiles unchanged with @njit (the value's oracle) and adjit's gradient is
checked against central finite differences of that compiled function, in reverse mode and
(through the dot-product test) in forward mode."""
import math
import operator

import numba
import numpy as np
import pytest

import adjit

from fd import fd_grad


def spread(x, w):
    y = x * w
    return np.var(y) + 2.0 * np.std(x) + np.ptp(y) + x.var() + (x * 2.0).std()


def arithmetic_ufuncs(x, w):
    y = np.add(x, w) * np.subtract(x, 0.5 * w)
    z = np.divide(np.multiply(y, x), np.positive(w) + 2.0)
    return np.sum(z) + np.sum(np.remainder(x + 3.0, 1.7)) + np.sum(np.floor_divide(x, 0.7))


def special_functions(x, w):
    s = 0.0
    for i in range(x.shape[0]):
        s += math.lgamma(x[i] + 1.5) * w + math.gamma(0.5 + x[i] * x[i]) \
            + math.copysign(x[i], -w) + math.degrees(x[i]) * math.radians(w)
        if not math.isnan(x[i]) and math.isfinite(x[i]):
            s += np.rint(x[i] * 3.0) * x[i]
    return s + np.sum(np.copysign(x, w) * np.degrees(x))


def operator_module(x, w):
    "Written with the operator module, and a string as a comment mid-function."
    y = operator.mul(x, w)
    "the operator functions are the operators, on arrays too"
    z = operator.add(operator.pow(y, 2.0), operator.neg(operator.truediv(x, w)))
    return np.sum(operator.sub(z, operator.mod(x + 3.0, 1.3)))


LOSSES = [spread, arithmetic_ufuncs, special_functions, operator_module]
X = np.array([0.31, 1.17, -0.73, 0.52, 0.05])
W = 0.8


@pytest.mark.parametrize("loss", LOSSES, ids=[f.__name__ for f in LOSSES])
def test_loss_matches_numba_and_finite_differences(loss):
    compiled = numba.njit(loss)
    value, (gx, gw) = adjit.value_and_grad(loss, argnums=(0, 1))(X, W)
    assert value == pytest.approx(compiled(X, W), rel=1e-13)
    np.testing.assert_allclose(gx, fd_grad(compiled, (X, W), 0), rtol=1e-6, atol=1e-8)
    assert gw == pytest.approx(fd_grad(compiled, (X, W), 1), rel=1e-6, abs=1e-8)
    v = np.linspace(-1.0, 1.0, X.shape[0])
    _, tangent = adjit.jvp(loss)(X, W, v)
    assert tangent == pytest.approx(np.dot(gx, v), rel=1e-12, abs=1e-12)


def test_spread_takes_numbas_arguments_only():
    def with_axis(x):
        return np.sum(np.var(x, axis=0))
    with pytest.raises(adjit.AdjitError, match="np.var with arguments other than the array"):
        adjit.grad(with_axis)(np.ones((2, 3)))


def manipulation(x, a, w):
    f = np.flip(x) * np.arange(5.0)
    b = np.fliplr(a)[0] * 2.0 + np.flipud(a)[:, 1]
    c = np.expand_dims(x, 0) * np.expand_dims(x, 1)
    d = np.copy(x)
    d[0] = 5.0
    return (np.sum(f * x) + np.sum(b ** 2) + np.sum(c) + np.vdot(x, x * 2.0) + np.sum(d * x)
            + np.average(x, weights=np.abs(x) + 1.0) + np.average(a)
            + np.trapezoid(x * x, dx=0.5) + np.trapezoid(x ** 3, np.linspace(0.0, 1.0, 5))
            + np.flip(a)[0, 2] * w + np.sum(np.hstack((x, x * w)) ** 2)
            + np.sum(np.vstack((x, 2.0 * x)) * np.column_stack((x, x)).T)
            + np.sum(np.hstack((a, a * w)) * np.vstack((a, a)).T)
            + np.sum((np.tril(a * w) + np.triu(a, 1) * 2.0 + np.tril(a, -1) ** 2) ** 2))


def check_against_numba(loss, args):
    """Value against the numba-compiled loss, every gradient against its finite
    differences, and jvp in the first argument by the dot-product test."""
    compiled = numba.njit(loss)
    value, grads = adjit.value_and_grad(loss, argnums=tuple(range(len(args))))(*args)
    assert value == pytest.approx(compiled(*args), rel=1e-13)
    for k in range(len(args)):
        np.testing.assert_allclose(grads[k], fd_grad(compiled, args, k), rtol=1e-6, atol=1e-8)
    v = np.linspace(-1.0, 1.0, args[0].size).reshape(args[0].shape)
    _, tangent = adjit.jvp(loss)(*args, v)
    assert tangent == pytest.approx(np.sum(grads[0] * v), rel=1e-12)


def test_manipulation_matches_numba_and_finite_differences():
    check_against_numba(manipulation, (X, np.arange(9.0).reshape(3, 3) / 7.0, W))


def array_methods(x, lo):
    c = x.cumsum()
    p = (x * 0.5 + 1.0).cumprod()
    k = x.argmax()
    return (np.sum(c * x) + p[-1] + x.clip(lo, 0.8).sum() + x[k] + x.repeat(2).sum()
            + x.take(np.array([0, 2])).sum() + (1.0 if (x > 0).all() else 0.5 * x.sum())
            + x.conj().sum() + x[x.argsort()[0]])


def test_array_methods_are_their_numpy_functions():
    # a.cumsum() is np.cumsum(a), and so on for the methods numba compiles
    check_against_numba(array_methods, (X, 0.25))


def test_an_array_method_adjit_does_not_lower_is_refused_with_the_ones_it_does():
    def nonzero_method(x):
        return np.sum(x[x.nonzero()[0]])
    with pytest.raises(adjit.AdjitError, match=r"the method call `.nonzero\(...\)`.*cumsum"):
        adjit.grad(nonzero_method)(X)


def sorting_and_shifting(x, a, w):
    s = np.sort(x * w)
    return (np.sum(s * np.arange(5.0)) + np.median(x) + np.median(x[:4] * 2.0)
            + np.sum(np.roll(x, 2) * np.arange(5.0)) + np.sum(np.roll(a, -1) * a * 2.0)
            + np.sum(np.repeat(x, 3) * np.arange(15.0)) + np.sum(np.repeat(a, 2) ** 2))


def test_sorting_and_shifting_match_numba_and_finite_differences():
    check_against_numba(sorting_and_shifting, (X, np.arange(6.0).reshape(2, 3) / 7.0, W))


def linear_algebra(a, b, c):
    x = np.linalg.solve(a, b)
    y = np.linalg.solve(a @ a.T + np.eye(3), c)
    return np.sum(x ** 2) + np.sum(np.sin(y)) + np.sum(np.linalg.inv(a) * c)


def test_linear_algebra_matches_numba_and_finite_differences():
    rng = np.random.default_rng(1)
    args = (rng.random((3, 3)) + 3.0 * np.eye(3), rng.random(3), rng.random((3, 3)))
    compiled = numba.njit(linear_algebra)
    value, grads = adjit.value_and_grad(linear_algebra, argnums=(0, 1, 2))(*args)
    assert value == pytest.approx(compiled(*args), rel=1e-13)
    for k in range(3):
        np.testing.assert_allclose(grads[k], fd_grad(compiled, args, k), rtol=1e-6, atol=1e-8)
        tangent = np.linspace(-1.0, 1.0, args[k].size).reshape(args[k].shape)
        _, t = adjit.jvp(linear_algebra, argnums=k)(*args, tangent)
        assert t == pytest.approx(np.sum(grads[k] * tangent), rel=1e-10, abs=1e-12)


def solve_then_write(a, b):
    x = np.linalg.solve(a, b)
    x[0] = 5.0
    return np.sum(x ** 2)


def test_writing_into_a_solution_is_refused():
    with pytest.raises(adjit.AdjitError, match="writing into 'x', the result of np.linalg.solve"):
        adjit.grad(solve_then_write)(2.0 * np.eye(3), np.ones(3))


def factorizations(a, w):
    L = np.linalg.cholesky(a)
    sign, logdet = np.linalg.slogdet(a)
    vals, vecs = np.linalg.eigh(a)
    return (np.sum(L * w) + sign * logdet + 0.01 * np.linalg.det(a) + np.sum(vals ** 2)
            + np.sum(vecs[:, 0] ** 2 * w[0]) + 0.01 * np.sum(np.linalg.eigvalsh(a) ** 3))


def spd(n, seed):
    b = np.random.default_rng(seed).random((n, n))
    return b @ b.T + n * np.eye(n)


def test_factorizations_match_numba_and_finite_differences():
    """cholesky, eigh and eigvalsh read the lower triangle (numba's LAPACK calls): the
    finite differences of the compiled function, entry by entry, see exactly that."""
    check_against_numba(factorizations, (spd(4, 2), np.random.default_rng(3).random((4, 4))))


def batch_of_determinants(a):
    total = 0.0
    for k in range(a.shape[0]):
        total += np.linalg.det(a[k]) * (k + 1.0)
        s, ld = np.linalg.slogdet(a[k] @ a[k].T)
        total += ld
    return total


def test_determinants_in_a_loop_over_views():
    """Array-level operations in a loop whose operands the loop recomputes: each
    iteration's operand is recorded. d det(A)/dA = det(A) A^-T and
    d log det(A A^T)/dA = 2 A^-T."""
    a = np.random.default_rng(4).random((3, 3, 3)) + 2.0 * np.eye(3)
    got = adjit.grad(batch_of_determinants)(a)
    expected = np.array([(k + 1.0) * np.linalg.det(a[k]) * np.linalg.inv(a[k]).T +
                         2.0 * np.linalg.inv(a[k]).T for k in range(3)])
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_cholesky_matches_the_analytic_derivative_of_a_2x2():
    """L = [[sqrt(p), 0], [q / sqrt(p), sqrt(r - q^2 / p)]] for A = [[p, .], [q, r]]."""
    def l21(a):
        return np.linalg.cholesky(a)[1, 0]
    p, q, r = 4.0, 1.0, 3.0
    g = adjit.grad(l21)(np.array([[p, 7.0], [q, r]]))
    np.testing.assert_allclose(g, [[-0.5 * q * p ** -1.5, 0.0], [p ** -0.5, 0.0]], rtol=1e-14)


def test_eigenvector_derivatives_at_a_repeated_eigenvalue_raise():
    def first_vector(a):
        vals, vecs = np.linalg.eigh(a)
        return np.sum(vecs[:, 0])
    with pytest.raises(ValueError, match="repeated eigenvalue"):
        adjit.grad(first_vector)(np.eye(3))
    def values_only(a):
        vals, vecs = np.linalg.eigh(a)
        return np.sum(vals * np.arange(3.0))
    np.testing.assert_allclose(adjit.grad(values_only)(np.eye(3)), np.diag(np.arange(3.0)))


def running_products_and_interpolation(x, xp, fp, a):
    """np.cumprod (a zero inside: exact), np.interp in all three arguments, with an array
    and with a number of query points, points outside the table included."""
    y = np.interp(x, xp, fp)
    z = np.interp(0.37 * a[0], xp, fp * 2.0)
    c = np.cumprod(a)
    return (np.sum(y ** 2) + z * 3.0 + np.sum(c * np.arange(4.0))
            + np.sum(np.cumprod(a.reshape(2, 2))))


def test_cumprod_and_interp_match_numba_and_finite_differences():
    args = (np.array([-0.2, 0.15, 0.5, 0.93, 1.4]), np.array([0.0, 0.3, 0.6, 1.0]),
            np.array([1.0, -0.5, 2.0, 0.7]), np.array([0.7, 0.0, 1.3, -0.4]))
    check_against_numba(running_products_and_interpolation, args)
    for k in range(1, 4):      # forward mode in each of the other arguments too
        v = np.linspace(-1.0, 1.0, args[k].size)
        g = adjit.grad(running_products_and_interpolation, argnums=k)(*args)
        assert adjit.jvp(running_products_and_interpolation, argnums=k)(*args, v)[1] == \
            pytest.approx(np.dot(g, v), rel=1e-12, abs=1e-12)


def test_cumprod_at_zeros_matches_the_analytic_derivative():
    """d/da_j sum_k cumprod(a)_k = sum_{k>=j} prod_{i<=k, i!=j} a_i, with two zeros."""
    def total(a):
        return np.sum(np.cumprod(a))
    a = np.array([2.0, 0.0, 3.0, 0.0, 5.0])
    expected = [1.0, 2.0 + 2.0 * 3.0, 0.0, 0.0, 0.0]
    np.testing.assert_array_equal(adjit.grad(total)(a), expected)


def nan_reductions(x, a):
    y = x * a
    return (np.nansum(y) + np.nanmean(y ** 2) + np.nanmax(y) * 2.0 + np.nanmin(x)
            + np.nanprod(x[:3]))


def test_nan_reductions_match_numba_and_finite_differences_at_the_numbers():
    """At a NaN element the derivative is what the arithmetic gives (0 * NaN through y ** 2
    is NaN, as in JAX); at the numbers it matches finite differences."""
    x = np.array([0.3, np.nan, -1.2, 0.8, np.nan, 0.5])
    a = np.array([1.0, 2.0, 0.5, 1.5, 1.0, -1.0])
    compiled = numba.njit(nan_reductions)
    value, (gx, ga) = adjit.value_and_grad(nan_reductions, argnums=(0, 1))(x, a)
    assert value == pytest.approx(compiled(x, a), rel=1e-14)
    numbers = ~np.isnan(x)
    for g, k in ((gx, 0), (ga, 1)):
        np.testing.assert_allclose(g[numbers], fd_grad(compiled, (x, a), k)[numbers],
                                   rtol=1e-7)
    v = np.where(numbers, np.linspace(-1.0, 1.0, 6), 0.0)
    assert adjit.jvp(nan_reductions)(x, a, v)[1] == pytest.approx(np.dot(gx[numbers],
                                                                         v[numbers]))


def test_nan_reductions_of_an_argument_give_zero_at_nan_and_nan_when_all_are_nan():
    def direct(x):
        return np.nansum(x) + np.nanmax(x) + np.nanmean(x)
    x = np.array([1.0, np.nan, 3.0])
    np.testing.assert_array_equal(adjit.grad(direct)(x), [1.5, 0.0, 2.5])
    value = adjit.value_and_grad(direct)(np.full(3, np.nan))[0]
    assert np.isnan(value) and np.isnan(numba.njit(direct)(np.full(3, np.nan)))


def norms(x, m):
    return (np.linalg.norm(x, 1) + np.linalg.norm(x, np.inf) + 2.0 * np.linalg.norm(x, -np.inf)
            + np.linalg.norm(x, 3) + np.linalg.norm(x, ord=0.5) + np.linalg.norm(x, 0)
            + np.linalg.norm(m, 1) + np.linalg.norm(m, -1) + np.linalg.norm(m, np.inf)
            + np.linalg.norm(m, -np.inf) + np.linalg.norm(x, 2) + np.linalg.norm(m))


def test_norms_of_every_order_numba_takes_match_finite_differences():
    check_against_numba(norms, (np.array([0.3, -1.7, 0.9, 2.2]),
                                np.array([[1.0, -2.5, 0.4], [3.1, 0.2, -0.7]])))


def stretched(x, c):
    d = x - c
    return np.sum(np.linalg.norm(d) * d) + np.linalg.norm(d, 2) * d[0]


def rows_stretched(m, c):
    d = m - c
    return np.sum(np.linalg.norm(d, axis=1) * d[:, 0])


def test_the_norm_of_a_zero_vector_has_the_zero_subgradient():
    """At x == c the norm of x - c has no derivative; its zero subgradient makes the chain
    exact where the whole is differentiable (|d| d has derivative 0 at d = 0), matching
    central differences of numba's forward instead of sqrt's inf * 0 = NaN."""
    c = np.array([0.5, -1.0, 2.0])
    x = c.copy()
    value, g = adjit.value_and_grad(stretched)(x, c)
    assert value == numba.njit(stretched)(x, c) == 0.0
    # central differences of |d| d at d = 0 are h: the exact 0 within that
    np.testing.assert_allclose(g, fd_grad(numba.njit(stretched), (x, c), 0), atol=1e-5)
    np.testing.assert_array_equal(g, np.zeros(3))
    m = np.array([[0.5, -1.0], [1.5, 2.0]])
    at = np.array([[0.5, -1.0], [0.0, 1.0]])     # the first row's difference is zero
    np.testing.assert_allclose(adjit.grad(rows_stretched)(m, at), fd_grad(rows_stretched,
                               (m, at), 0), atol=1e-5)

    def length(x):
        return np.linalg.norm(x)
    np.testing.assert_array_equal(adjit.grad(length)(np.zeros(3)), np.zeros(3))
    assert adjit.jvp(length)(np.zeros(3), np.ones(3))[1] == 0.0


def spectral_norms(m, w):
    return (np.linalg.norm(m * w, 2) + 0.5 * np.linalg.norm(m, -2) + np.linalg.norm(m.T, 2)
            + np.linalg.cond(m @ m.T * w))


def test_matrix_two_norms_match_numba_and_finite_differences():
    """Order 2 and -2: the largest and smallest singular value (through np.linalg.svd)."""
    check_against_numba(spectral_norms, (np.array([[1.0, -2.5, 0.4], [3.1, 0.2, -0.7]]), 1.3))


def test_matrix_norm_of_another_order_is_refused():
    def three(m):
        return np.linalg.norm(m, 3)
    with pytest.raises(adjit.AdjitError, match="the matrix norm of order 3"):
        adjit.grad(three)(np.eye(2))


def test_solves_again_by_substitution_exactly_as_with_lu():
    """The adjoint and tangent of np.linalg.solve solve again with the same matrix: by
    substitution when it is triangular, by LU otherwise; both against finite differences."""
    rng = np.random.default_rng(5)
    lower = np.tril(rng.random((4, 4))) + 2.0 * np.eye(4)

    def triangular_solves(a, b):
        return np.sum(np.linalg.solve(a.T, np.linalg.solve(a, b)) ** 2)
    for a in (lower, lower.T.copy(), lower + 0.3):
        check_against_numba(triangular_solves, (a, rng.random(4)))


def single_precision_linear_algebra(a, b, w):
    """float32 matrices, as a user stores them, through every BLAS and LAPACK call adjit
    differentiates: the adjoints (float64) meet float32 operands, which numba's np.dot and
    np.linalg take only in one dtype."""
    top = a[:2] @ a.T
    sign, logdet = np.linalg.slogdet(a)
    return (np.sum(np.tanh(top) * 0.5) + np.sum(np.linalg.solve(a, b) * w[0])
            + np.linalg.det(a) * 0.1 + sign * logdet + np.sum(np.linalg.cholesky(a) * w)
            + np.sum(np.linalg.eigvalsh(a) ** 2) + np.sum(np.linalg.inv(a) * w)
            + np.dot(b, a @ b) * 0.01 + np.sum(np.outer(b, b) * w))


def test_float32_matrices_through_blas_and_lapack():
    args = (spd(3, 6).astype(np.float32), np.array([0.3, -0.8, 0.5], np.float32),
            np.random.default_rng(7).random((3, 3)).astype(np.float32))
    wide = tuple(a.astype(np.float64) for a in args)
    compiled = numba.njit(single_precision_linear_algebra)
    value, grads = adjit.value_and_grad(single_precision_linear_algebra,
                                        argnums=(0, 1, 2))(*args)
    assert value == pytest.approx(compiled(*args), rel=1e-6)
    for k in range(3):
        assert grads[k].dtype == np.float32
        # the float32 program's gradient, against the float64 program's finite differences
        np.testing.assert_allclose(grads[k], fd_grad(compiled, wide, k), rtol=2e-4, atol=2e-4)
    v = np.linspace(-1.0, 1.0, 9).reshape(3, 3).astype(np.float32)
    _, tangent = adjit.jvp(single_precision_linear_algebra)(*args, v)
    assert tangent == pytest.approx(np.sum(grads[0].astype(np.float64) * v), rel=1e-4)


# products and filters ----------------------------------------------------------------------
def block_operator(a, b):
    k = np.kron(a, b)
    return np.sum((k @ np.arange(1.0, k.shape[1] + 1.0)) ** 2) + np.sum(np.kron(a[0], b[1]))


def angular_momentum(r, v):
    moment = np.cross(r, v)
    about_axis = np.cross(r, v[0])
    return np.sum(moment * moment) + 0.5 * np.sum(about_axis) + np.sum(np.cross(r[1], v[2]))


def smoothing_and_matching(signal, kernel):
    smooth = np.convolve(signal, kernel)
    match = np.correlate(signal, kernel)
    flipped = np.correlate(kernel, signal)          # the shorter first: numpy reverses
    return (np.sum((smooth[1:-1] - 0.5) ** 2) + np.max(match) + np.sum(match ** 2)
            + np.sum(flipped * np.arange(flipped.shape[0])))


def markov_steps(p, weights):
    five = np.linalg.matrix_power(p, 5)
    back = np.linalg.matrix_power(p, -2)
    return (np.sum(weights @ five) + 0.1 * np.sum(back * weights)
            + np.sum(np.linalg.matrix_power(p, 1) ** 2) + np.sum(np.linalg.matrix_power(p, 0)))


def least_squares_by_pinv(a, y):
    coef = np.linalg.pinv(a) @ y
    wide = np.linalg.pinv(a.T)
    return np.sum((a @ coef - y) ** 2) + np.sum(coef ** 2) + 0.1 * np.sum(wide * wide)


_R8 = np.random.default_rng(8)


@pytest.mark.parametrize("loss, args", [
    (block_operator, (_R8.random((2, 3)), _R8.random((3, 2)))),
    (angular_momentum, (_R8.random((4, 3)) - 0.5, _R8.random((4, 3)) - 0.5)),
    (smoothing_and_matching, (_R8.random(7), _R8.random(3))),
    (markov_steps, (_R8.random((3, 3)) + 2.0 * np.eye(3), _R8.random((3, 3)))),
    (least_squares_by_pinv, (_R8.random((5, 3)), _R8.random(5))),
], ids=["kron", "cross", "convolve-correlate", "matrix_power", "pinv"])
def test_products_and_filters_match_numba_and_finite_differences(loss, args):
    check_against_numba(loss, args)


def kron_total(a, b):
    return np.sum(np.kron(a, b))


def convolved_total(x, v):
    return np.sum(np.convolve(x, v))


def test_kron_and_convolve_match_their_analytic_derivatives():
    """d/da sum(kron(a, b)) = sum(b) everywhere; d/da sum(convolve(a, v)) = sum(v)."""
    a, b = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[0.5, -1.0, 2.0]])
    ga, gb = adjit.grad(kron_total, argnums=(0, 1))(a, b)
    np.testing.assert_allclose(ga, np.full((2, 2), 1.5), rtol=1e-15)
    np.testing.assert_allclose(gb, np.full((1, 3), 10.0), rtol=1e-15)
    x, v = np.array([1.0, -2.0, 0.5, 3.0]), np.array([0.25, 0.5])
    gx = adjit.grad(convolved_total)(x, v)
    np.testing.assert_allclose(gx, np.full(4, 0.75), rtol=1e-15)


def kron_weighted(a, b):
    k = np.kron(a, b)
    return np.sum(np.sin(k) * k)


# the operand shapes of autograd's test_kron, numbers and rows/columns of one included: one
# gradient per pair of ranks (its compiled code serves every shape)
_KRON_A = {0: [()], 1: [(5,), (1,)], 2: [(5, 5), (4, 4), (5, 1), (1, 5), (2, 3)]}
_KRON_B = {0: [()], 1: [(3,), (1,)], 2: [(3, 3), (2, 2), (1, 3), (3, 1)]}


def _number_or_array(rng, shape):
    return float(rng.normal()) if shape == () else rng.normal(size=shape)


@pytest.mark.parametrize("rank_b", [0, 1, 2])
@pytest.mark.parametrize("rank_a", [0, 1, 2])
def test_kron_of_numbers_vectors_and_matrices_matches_finite_differences(rank_a, rank_b):
    """Every form numba's np.kron compiles: a number is a 1 x 1 matrix and a 1-D array one
    row (two numbers give an array of one element, as numba returns)."""
    compiled = numba.njit(kron_weighted)
    g = adjit.grad(kron_weighted, argnums=(0, 1))
    tangents = adjit.jvp(kron_weighted, argnums=(0, 1))
    rng = np.random.default_rng(10 * rank_a + rank_b)
    for shape_a in _KRON_A[rank_a]:
        for shape_b in _KRON_B[rank_b]:
            args = (_number_or_array(rng, shape_a), _number_or_array(rng, shape_b))
            grads = g(*args)
            for k in range(2):
                assert np.shape(grads[k]) == np.shape(args[k])
                np.testing.assert_allclose(grads[k], fd_grad(compiled, args, k), rtol=1e-6,
                                           atol=1e-8, err_msg=f"{shape_a} x {shape_b}, {k}")
            v = (_number_or_array(rng, shape_a), _number_or_array(rng, shape_b))
            _, tangent = tangents(*args, v)
            assert tangent == pytest.approx(np.sum(grads[0] * v[0]) + np.sum(grads[1] * v[1]),
                                            rel=1e-12, abs=1e-12)


def kron_of_counts(w, b):
    spread = np.kron(np.arange(3), b)       # numba: integer, as np.arange(3) is
    scaled = np.kron(b, np.arange(3))
    return np.sum(spread * w) + np.sum(scaled * scaled * w)


def test_kron_with_an_integer_first_operand_is_integer_as_in_numba():
    """numba's np.kron takes its result's dtype from the first operand: integer products
    (truncated) carry no derivative; with the integers second the result is float."""
    args = (0.7, np.array([0.4, -1.3, 2.6]))
    compiled = numba.njit(kron_of_counts)
    grads = adjit.grad(kron_of_counts, argnums=(0, 1))(*args)
    for k in range(2):
        np.testing.assert_allclose(grads[k], fd_grad(compiled, args, k), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("shapes", [((2, 1, 2), (3, 3)), ((5,), (2, 1, 2)), ((), (2, 3, 2)),
                                    ((2, 3, 2), (2, 1, 2))])
def test_kron_of_a_3d_array_is_refused_as_numba_refuses_it(shapes):
    args = tuple(np.ones(s) if s else 1.5 for s in shapes)
    with pytest.raises(numba.core.errors.TypingError, match="only supported on 1 and 2-D"):
        numba.njit(kron_weighted)(*args)
    with pytest.raises(adjit.AdjitError, match="np.kron of a 3-D array, which numba does not "
                       "compile") as info:
        adjit.grad(kron_weighted, argnums=(0, 1)).source_for(*args)
    assert "kron_weighted" in str(info.value) and "test_numpy_surface.py" in str(info.value)
    assert "line" in str(info.value) and "1-D or 2-D arrays" in str(info.value)


def least_squares_by_qr(a, y):
    q, r = np.linalg.qr(a)
    coef = np.linalg.solve(r, q.T @ y)
    return np.sum(coef ** 2) + np.sum(q[:, 0] * y) + np.sum(np.log(np.abs(np.diag(r))))


@pytest.mark.parametrize("shape", [(5, 3), (3, 3)], ids=["tall", "square"])
def test_qr_matches_numba_and_finite_differences(shape):
    rng = np.random.default_rng(9)
    check_against_numba(least_squares_by_qr, (rng.random(shape), rng.random(shape[0])))


def qr_parts(a):
    q, r = np.linalg.qr(a)
    return np.sum(r ** 2) + np.sum(q)


def test_qr_of_a_wide_matrix_raises_when_differentiated():
    """The derivative is implemented for m >= n; a wide matrix is a ValueError, not a number."""
    a = np.random.default_rng(10).random((2, 3))
    assert adjit.value_and_grad(qr_parts)(np.random.default_rng(10).random((3, 2)))[0] > 0
    with pytest.raises(ValueError, match="at least as many rows as columns"):
        adjit.grad(qr_parts)(a)


def robust_spread(x, q):
    lo = np.percentile(x, 25.0 * q)
    hi = np.quantile(x, 0.8)
    qs = np.quantile(x * 2.0, np.array([0.1, 0.55, 0.9]) * q)
    return hi - lo + np.sum(qs ** 2) + np.percentile(x[:4], 30.0)


def test_percentile_and_quantile_match_numba_and_finite_differences():
    check_against_numba(robust_spread, (np.array([0.3, -1.2, 2.5, 0.7, 1.9, -0.4, 0.05]), 1.1))


def middle_quantile(x, q):
    return np.quantile(x, q)


def test_quantile_matches_its_analytic_derivative():
    """Sorted [0, 3, 1, 2] at q = 0.5: position 1.5 between 1 and 2, so half of the adjoint
    goes to each of them and d/dq = (2 - 1) * (n - 1) = 3."""
    gx, gq = adjit.grad(middle_quantile, argnums=(0, 1))(np.array([0.0, 3.0, 1.0, 2.0]), 0.5)
    np.testing.assert_array_equal(gx, [0.0, 0.0, 0.5, 0.5])
    assert gq == 3.0


def nuclear_norm_penalty(a, w):
    u, s, vh = np.linalg.svd(a)
    return np.sum(s) + np.sum(s ** 2) * w[0, 0]


def leading_singular_vectors(a, w):
    u, s, vh = np.linalg.svd(a)
    return np.sum(u[:, 0] ** 3 * w[0]) + np.sum(vh[1] * w[1]) + np.sum(s)


def reduced_singular_vectors(a, w):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return np.sum(u[:, 0] ** 3 * w[0, 0]) + np.sum(vh[1] * w[1, 1]) + np.sum(u * s)


def low_rank_projection(a, w):
    """The rank-2 part of a, as PCA-style code builds it from the reduced factors."""
    u, s, vh = np.linalg.svd(a, False)
    approx = np.dot(u[:, :2] * s[:2], vh[:2])
    return np.sum(approx * approx * w[0, 0]) + np.sum(approx[0])


def leading_vectors_of_full_matrices(a, w):
    u, s, vh = np.linalg.svd(a)
    k = min(a.shape[0], a.shape[1])
    return np.sum(u[:, :k] ** 3 * w[0, 0]) + np.sum(vh[:k] ** 2 * w[1, 1])


@pytest.mark.parametrize("loss, shape", [
    (nuclear_norm_penalty, (4, 3)), (nuclear_norm_penalty, (3, 5)),
    (leading_singular_vectors, (3, 3)),
    (reduced_singular_vectors, (5, 3)), (reduced_singular_vectors, (3, 5)),
    (low_rank_projection, (6, 4)), (low_rank_projection, (3, 7)),
    (leading_vectors_of_full_matrices, (5, 3)), (leading_vectors_of_full_matrices, (2, 4)),
], ids=["values-tall", "values-wide", "vectors-square", "reduced-tall", "reduced-wide",
        "low-rank-tall", "low-rank-wide", "full-leading-tall", "full-leading-wide"])
def test_svd_matches_numba_and_finite_differences(loss, shape):
    rng = np.random.default_rng(12)
    check_against_numba(loss, (rng.random(shape), rng.random((3, 3))))


def last_left_vector(a):
    u, s, vh = np.linalg.svd(a)
    return np.sum(u[:, -1] ** 3) + np.sum(s)


def last_right_vector(a):
    u, s, vh = np.linalg.svd(a)
    return np.sum(vh[-1] ** 3) + np.sum(s)


@pytest.mark.parametrize("f, shape", [(last_left_vector, (4, 3)),
                                      (last_right_vector, (3, 4))])
def test_singular_vectors_numpy_chooses_freely_raise_when_differentiated(f, shape):
    """The full U of a 4 x 3 matrix has a fourth column numpy chooses freely (the full Vh of
    a 3 x 4 a fourth row): no derivative, and the tangent is NaN."""
    a = np.random.default_rng(13).random(shape)
    with pytest.raises(adjit.AdjitError, match=f"in function '{f.__name__}' .*chosen freely "
                       "and have no derivative; pass full_matrices=False") as info:
        adjit.grad(f)(a)
    assert isinstance(info.value, ValueError)       # as numba's checks of values are
    assert np.isnan(adjit.jvp(f)(a, np.ones(shape))[1])


def test_singular_vectors_at_a_repeated_singular_value_raise_when_differentiated():
    with pytest.raises(adjit.AdjitError, match="need distinct singular values"):
        adjit.grad(leading_singular_vectors)(np.eye(3), np.ones((3, 3)))


def fit_by_lstsq(a, y):
    coef = np.linalg.lstsq(a, y)[0]
    return np.sum((a @ coef - y) ** 2) + np.sum(coef ** 2)


def unpacked_lstsq(a, y):
    coef, res, rank, sv = np.linalg.lstsq(a, y)
    return np.sum(coef ** 3) + 0.0 * rank


def lstsq_residuals(a, y):
    coef, res, rank, sv = np.linalg.lstsq(a, y)
    return np.sum(res)


@pytest.mark.parametrize("loss, shapes", [
    (fit_by_lstsq, ((5, 3), (5,))), (unpacked_lstsq, ((5, 3), (5, 2))),
    (unpacked_lstsq, ((2, 3), (2,))),
], ids=["overdetermined", "several-right-hand-sides", "underdetermined"])
def test_lstsq_solution_matches_numba_and_finite_differences(loss, shapes):
    rng = np.random.default_rng(14)
    check_against_numba(loss, tuple(rng.random(s) for s in shapes))


def test_lstsq_residuals_are_refused_when_differentiated():
    with pytest.raises(adjit.AdjitError, match="a derivative would have to flow through"):
        adjit.grad(lstsq_residuals)(np.random.default_rng(15).random((5, 3)), np.ones(5))


def nan_statistics(x, w):
    y = x * w
    return np.nanvar(y) + 2.0 * np.nanstd(x) + np.sum(np.nancumsum(y) * np.arange(5.0))


def differences(x, w):
    return (np.sum(np.ediff1d(x * w) ** 2) + np.sum(np.ediff1d(np.outer(x, x)))
            + np.sum(np.nancumsum(np.outer(x, x * w)) * 0.1))


@pytest.mark.parametrize("loss", [nan_statistics, differences])
def test_nan_statistics_and_differences_match_numba_and_finite_differences(loss):
    check_against_numba(loss, (np.array([0.3, 0.5, 1.7, -0.4, 0.9]), 1.3))


def test_nan_statistics_skip_the_nan_entries():
    """With a NaN in x: the value is numba's and the NaN entry gets no derivative; the other
    entries match finite differences (which keep the NaN where it is)."""
    x = np.array([0.3, np.nan, 1.7, -0.4, 0.9])
    compiled = numba.njit(nan_statistics)
    value, g = adjit.value_and_grad(nan_statistics)(x, 1.3)
    assert value == pytest.approx(compiled(x, 1.3), rel=1e-13)
    assert g[1] == 0.0
    fd = fd_grad(compiled, (x, 1.3), 0)
    keep = [0, 2, 3, 4]
    np.testing.assert_allclose(g[keep], fd[keep], rtol=1e-6, atol=1e-8)


def covariance_and_correlation(m, w):
    c = np.cov(m * w)
    r = np.corrcoef(m)
    weights = np.arange(9.0).reshape(3, 3)
    return (np.sum(c * weights) + np.sum(r ** 2 * weights)
            + np.sum(np.cov(np.vstack((m[0], m[2] * w)))))


def test_cov_and_corrcoef_match_numba_and_finite_differences():
    check_against_numba(covariance_and_correlation,
                        (np.random.default_rng(16).random((3, 6)), 1.2))


def covariance_of_a_vector(x):
    return np.cov(x)


def test_cov_of_a_vector_is_refused_with_the_forms_that_work():
    """numba's np.cov of one 1-D array is a 0-d array (and of a one-row matrix a run-time
    error): the refusal says what to write."""
    with pytest.raises(adjit.AdjitError, match=r"np.cov\(x, y\).*np.var\(x\) \* x.size"):
        adjit.grad(covariance_of_a_vector)(np.ones(4))


def depth_stacks(x, m):
    a = np.dstack((x, x * 2.0))
    b = np.dstack((m, m ** 2, m * x[:3]))
    c = np.dstack((b, b * 0.5))
    return (np.sum(a * np.arange(8.0).reshape(1, 4, 2)) + np.sum(b ** 2 * 0.3)
            + np.sum(c[:, :, 4] * 2.0) + np.sum(c))


def test_dstack_of_every_rank_matches_numba_and_finite_differences():
    rng = np.random.default_rng(17)
    check_against_numba(depth_stacks, (rng.random(4), rng.random((2, 3))))


def polynomial_design(x, c):
    v = np.vander(x, 4)
    w = np.vander(x, 3, True)
    return np.sum((v @ c - 1.0) ** 2) + np.sum(w * 0.5) + np.sum(np.vander(x))


def test_vander_matches_numba_and_finite_differences():
    """x = 0 included: the derivative of x ** 1 there is 1, of x ** 0 nothing."""
    check_against_numba(polynomial_design, (np.array([0.0, 0.5, -1.2, 2.0]),
                                            np.array([0.3, -0.2, 1.0, 0.5])))


def nan_quantiles(x, q):
    return (np.nanpercentile(x, 40.0 * q) + np.nanquantile(x * 2.0, np.array([0.2, 0.7]) * q).sum()
            + np.nanmedian(x) * 3.0)


def test_nan_quantiles_match_numba_and_finite_differences():
    check_against_numba(nan_quantiles, (np.array([0.3, -1.2, 2.5, 0.7, 1.9, -0.4, 0.05]), 1.1))


def test_nan_quantiles_skip_the_nan_entries():
    x = np.array([0.3, -1.2, np.nan, 0.7, 1.9, -0.4, 0.05])
    compiled = numba.njit(nan_quantiles)
    value, (gx, gq) = adjit.value_and_grad(nan_quantiles, argnums=(0, 1))(x, 1.1)
    assert value == pytest.approx(compiled(x, 1.1), rel=1e-13)
    np.testing.assert_allclose(gx, fd_grad(compiled, (x, 1.1), 0), rtol=1e-6, atol=1e-8)
    assert gx[2] == 0.0 and gq == pytest.approx(fd_grad(compiled, (x, 1.1), 1), rel=1e-6)


def clipped_and_wrapped(x, w):
    """fmax/fmin as a NaN-tolerant clip, fmod for a periodic coordinate, nan_to_num of a
    ratio, reciprocal weights, exp2 in a loop."""
    r = np.fmin(np.fmax(x * w, -0.5), 0.9)
    phase = np.fmod(x * 3.0 + 10.0, 1.3)
    s = 0.0
    for i in range(x.shape[0]):
        s += math.exp2(x[i] * w) * np.conjugate(x[i])
    return (np.sum(r * r) + np.sum(np.sin(phase)) + np.sum(np.nan_to_num(x / (x + 2.0)))
            + np.sum(np.reciprocal(x * x + 1.0)) + s + np.sum(np.spacing(x) * 0.0 + x))


def test_nan_tolerant_elementwise_functions_match_numba_and_finite_differences():
    check_against_numba(clipped_and_wrapped, (X, W))


def test_fmax_ignores_a_nan_argument_and_follows_the_other():
    def f(x, y):
        return np.sum(np.fmax(x, y) * np.arange(1.0, 4.0))
    x, y = np.array([np.nan, 1.0, 2.0]), np.array([0.5, np.nan, 3.0])
    gx, gy = adjit.grad(f, argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(gx, [0.0, 2.0, 0.0])
    np.testing.assert_array_equal(gy, [1.0, 0.0, 3.0])


def spaced_grids(v, a, b):
    """Geometric and logarithmic grids with moving endpoints, a diagonal matrix of a vector
    (on the main diagonal and above it), and the angle of real numbers (0 or pi)."""
    g = np.geomspace(1.0 + a, 2.0 + b * b, 6)
    grid = np.logspace(a, b, 5)
    m = np.diagflat(v * a) + np.diagflat(v, 1)[1:, 1:]
    return (np.sum(g * np.arange(6.0)) + np.sum(grid * grid) + np.sum(m * m)
            + np.sum(np.angle(v)))


def test_grids_and_diagflat_match_numba_and_finite_differences():
    check_against_numba(spaced_grids, (np.array([1.0, -2.0, 0.5]), 0.3, 0.8))


def at_least(x, m):
    """np.atleast_1d/2d/3d are views: a write through one reaches the array it views."""
    a = np.atleast_2d(x)
    b = np.atleast_3d(x)
    c = np.atleast_3d(m)
    d = np.atleast_1d(x * 2.0)
    e = np.atleast_2d(m)
    e[0, 0] = 3.0 * x[1]
    return (np.sum(a * a) + np.sum(b[0, :, 0] * x) + np.sum(c * c) + np.sum(d)
            + np.sum(m * m) + a.shape[0] + b.shape[2] + np.sum(np.row_stack((x, x)) * 0.5))


def test_atleast_views_match_numba_and_finite_differences():
    m = np.arange(6.0).reshape(2, 3) / 5.0
    check_against_numba(at_least, (np.array([1.0, -2.0, 0.5]), m))
    _, (gx, gm) = adjit.value_and_grad(at_least, argnums=(0, 1))(np.array([1.0, -2.0, 0.5]),
                                                                  m.copy())
    # m[0, 0] = 3 x[1], read through m and through c: 2 * 18 x[1]; a, b: 2 x[1] each;
    # d: 2; the stacked rows: 2 * 0.5
    assert gm[0, 0] == 0.0 and gx[1] == 2 * -2.0 + 2 * -2.0 + 2.0 + 2 * 18.0 * -2.0 + 1.0


def phases_and_products(x, w):
    """A phase track unwrapped, a running product that skips missing values, samples
    appended to a series, and exact powers of two."""
    phase = np.unwrap(np.array([0.1, 3.0, 6.1, 9.0]) + x[:4] * w)
    y = x.copy()
    y[2] = np.nan
    survival = np.nancumprod(1.0 - 0.1 * y * y)
    series = np.append(x * w, x[:2] * 2.0)
    ends = np.append(series, w * w)
    s = 0.0
    for i in range(x.shape[0]):
        s += math.ldexp(x[i], i - 2) + math.nextafter(x[i] * w, 0.0)
    return (np.sum(phase * phase) + np.sum(survival) + np.sum(ends * np.arange(8.0))
            + np.sum(np.ldexp(x, 3)) + s)


def test_unwrap_nancumprod_append_ldexp_match_numba_and_finite_differences():
    check_against_numba(phases_and_products, (X, W))


def weighted_histogram_and_rotations(w, m, idx):
    """np.bincount with weights (by keyword too), np.rot90 views (a write through one
    reaches m), np.real of real values."""
    h = np.bincount(idx, weights=w * w, minlength=6)
    counts = np.bincount(idx)
    h2 = np.bincount(idx, w)
    r1 = np.rot90(m)
    r3 = np.rot90(m, -1)
    r1[0, 1] = 2.0 * w[0]
    return (np.sum(h * np.arange(6.0)) + np.sum(counts * h2[:counts.shape[0]])
            + np.sum(r1 * np.arange(6.0).reshape(3, 2)) + np.sum(np.rot90(m, 2) ** 2)
            + np.sum(r3[:, 0] * w[:3]) + np.sum(np.real(m) * m) + np.real(w[1]) * 3.0)


def test_bincount_rot90_real_match_numba_and_finite_differences():
    w = np.array([0.5, -1.0, 2.0, 0.3, 0.7, 1.1])
    m = np.arange(6.0).reshape(2, 3) / 7.0
    idx = np.array([0, 2, 2, 3, 1, 0])
    compiled = numba.njit(weighted_histogram_and_rotations)
    value, (gw, gm) = adjit.value_and_grad(weighted_histogram_and_rotations, argnums=(0, 1))(
        w, m.copy(), idx)
    assert value == pytest.approx(compiled(w, m.copy(), idx), rel=1e-13)
    np.testing.assert_allclose(gw, fd_grad(lambda a, b, c: compiled(a, b.copy(), c),
                                           (w, m, idx), 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gm, fd_grad(lambda a, b, c: compiled(a, b.copy(), c),
                                           (w, m, idx), 1), rtol=1e-6, atol=1e-8)
    v = np.linspace(-1.0, 1.0, 6)
    _, tangent = adjit.jvp(weighted_histogram_and_rotations)(w, m.copy(), idx, v)
    assert tangent == pytest.approx(np.dot(gw, v), rel=1e-12)


def test_rot90_with_a_k_that_is_not_a_constant_is_refused():
    def f(m, k):
        return np.sum(np.rot90(m, k))
    with pytest.raises(adjit.AdjitError, match="np.rot90 with a k that is not a constant"):
        adjit.grad(f)(np.ones((2, 2)), 1)


def picked_log_probabilities(logits, x, labels):
    """Cross-entropy written with np.take_along_axis (labels as a column), a gather along
    axis 0 with a negative index, one of the flattened array, and indices broadcast along
    the other axis."""
    m = np.max(logits)
    lse = np.log(np.sum(np.exp(logits - m), axis=1)) + m
    picked = np.take_along_axis(logits, labels.reshape(-1, 1), axis=1)
    top = np.take_along_axis(x, np.array([2, 0, 0, -1]), 0)
    flat = np.take_along_axis(logits, np.array([5, 1, 1]), None)
    return (np.sum(lse - picked[:, 0]) + np.sum(top * top) + np.sum(flat * x[:3])
            + np.sum(np.take_along_axis(logits, np.array([[1, 0, 0]]), 0)))


def test_take_along_axis_matches_numba_and_finite_differences():
    args = (np.array([[0.5, -1.0, 2.0], [0.3, 0.7, 1.1], [1.5, 0.2, -0.4]]),
            np.array([0.5, -1.0, 2.0, 0.3]), np.array([2, 0, 1]))
    compiled = numba.njit(picked_log_probabilities)
    value, grads = adjit.value_and_grad(picked_log_probabilities, argnums=(0, 1))(*args)
    assert value == pytest.approx(compiled(*args), rel=1e-13)
    for k in range(2):
        np.testing.assert_allclose(grads[k], fd_grad(compiled, args, k), rtol=1e-6, atol=1e-8)
    v = np.linspace(-1.0, 1.0, 9).reshape(3, 3)
    _, tangent = adjit.jvp(picked_log_probabilities)(*args, v)
    assert tangent == pytest.approx(np.sum(grads[0] * v), rel=1e-12)


def kept_and_deleted(x, m):
    """np.extract by a mask computed from the data, np.delete of an index, of a negative
    index and of an index array (numba: the flattened array)."""
    picked = np.extract(m > 0.3, m)
    rest = np.delete(x, 1)
    ends = np.delete(m, np.array([0, 4]))
    return (np.sum(picked ** 2) + np.sum(rest * np.arange(4.0)) + np.sum(ends * ends)
            + np.sum(np.delete(x * x, -1)))


def test_extract_and_delete_match_numba_and_finite_differences():
    check_against_numba(kept_and_deleted, (X, np.arange(6.0).reshape(2, 3) / 7.0))


def products_by_name(a, x):
    """np.identity (np.eye is tested elsewhere); numba compiles no np.matmul by name, adjit
    differentiates it as `@` (below)."""
    return np.sum((a @ x) ** 2) + np.sum((a.T @ a) * np.identity(3))


def matmul_by_name(a, x):
    return np.sum(np.matmul(a, x) ** 2)


def test_identity_and_matmul_by_name_match_finite_differences():
    args = (np.arange(6.0).reshape(2, 3) / 5.0, np.array([0.5, -1.0, 2.0]))
    check_against_numba(products_by_name, args)
    g = adjit.grad(matmul_by_name, argnums=(0, 1))(*args)
    for k in range(2):
        np.testing.assert_allclose(g[k], fd_grad(matmul_by_name, args, k), rtol=1e-6)


def rounded_prices(x, s):
    return (np.sum(np.round(x * s, 1) * x) + np.sum(np.around(x, decimals=2) * s)
            + round(s * 3.0, 1) * s)


def test_rounding_to_decimals_is_numbas_value_with_no_derivative():
    """np.round(x, 1), np.around(x, decimals=2), round(s, 1): numba's rounding, piecewise
    constant, so only the factors outside it carry derivatives."""
    x, s = np.array([0.123, -1.456, 2.789]), 1.3
    value, (gx, gs) = adjit.value_and_grad(rounded_prices, argnums=(0, 1))(x, s)
    assert value == numba.njit(rounded_prices)(x, s)
    np.testing.assert_allclose(gx, np.round(x * s, 1), rtol=1e-15)
    assert gs == pytest.approx(np.sum(np.around(x, 2)) + round(s * 3.0, 1), rel=1e-14)
    np.testing.assert_allclose(gx, fd_grad(numba.njit(rounded_prices), (x, s), 0), rtol=1e-6)
    assert gs == pytest.approx(fd_grad(numba.njit(rounded_prices), (x, s), 1), rel=1e-6)


def cleaned(s, x, y):
    return (np.sum(np.nan_to_num(y, nan=0.5 * s) * s)
            + np.sum(np.nan_to_num(x, nan=s * s, posinf=s, neginf=-2.0 * s) * x[0])
            + np.nan_to_num(s, nan=2.0))


def test_nan_to_num_with_the_values_numba_takes():
    """nan=, posinf=, neginf= as numba takes them: each value carries its derivative where
    it replaces a NaN or an infinity; x's derivative is 1 where x is finite."""
    s, y = 1.37, np.array([0.3, np.nan, 1.0])
    x = np.array([0.5, np.nan, 2.0, np.inf, -np.inf])
    compiled = numba.njit(cleaned)
    value, (gs, gx, gy) = adjit.value_and_grad(cleaned, argnums=(0, 1, 2))(s, x, y)
    assert value == compiled(s, x, y)
    finite = np.isfinite(x)
    # d/ds of s (0.3 + 1.0) + 0.5 s^2, x0 (s^2 + s - 2 s) and s
    assert gs == pytest.approx(np.nansum(y) + s + x[0] * (2.0 * s - 1.0) + 1.0, rel=1e-14)
    assert gs == pytest.approx(fd_grad(compiled, (s, x, y), 0), rel=1e-7)
    np.testing.assert_allclose(gx[1:], np.where(finite, x[0], 0.0)[1:], rtol=1e-15)
    assert gx[0] == pytest.approx(x[0] + np.sum(np.nan_to_num(x, nan=s * s, posinf=s,
                                                              neginf=-2.0 * s)), rel=1e-14)
    np.testing.assert_array_equal(gy, np.where(np.isnan(y), 0.0, s))
    assert adjit.jvp(cleaned)(s, x, y, 1.0)[1] == pytest.approx(gs, rel=1e-14)


def reduced_svd(m, w):
    u, s, vh = np.linalg.svd(m, full_matrices=False)
    return np.sum(s * w[:s.shape[0]]) + u.shape[1] * np.sum(s) + vh.shape[0] * s[0]


def reduced_svd_vectors(m):
    u, s, vh = np.linalg.svd(m, False)
    return np.sum(np.abs(u[:, 0]) * s[0]) + np.sum(vh[0] ** 2 * s)


@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (3, 3)])
def test_the_reduced_svd_matches_numba_and_finite_differences(shape):
    """np.linalg.svd(m, full_matrices=False): U with min(m, n) columns, Vh with min(m, n)
    rows (the shapes enter the value), singular values differentiated for any shape,
    singular vectors for a square matrix."""
    m = np.random.default_rng(sum(shape)).standard_normal(shape)
    check_against_numba(reduced_svd, (m, np.array([1.0, 2.0, 3.0])))
    if shape[0] == shape[1]:
        check_against_numba(reduced_svd_vectors, (m,))


def cov_columns(m):
    return np.sum(np.cov(m, rowvar=False) * np.arange(9.0).reshape(3, 3))


def cov_biased(m):
    return np.sum(np.cov(m, bias=True) ** 2) + np.sum(np.cov(m, ddof=0) * m[:, :3])


def cov_pair(x, y):
    return np.sum(np.cov(x, y) * np.array([[1.0, 2.0], [3.0, 5.0]])) + \
        np.sum(np.corrcoef(x, y) ** 2)


def corrcoef_columns(m):
    return np.sum(np.corrcoef(m, rowvar=False) ** 2)


@pytest.mark.parametrize("loss, shapes", [(cov_columns, ((5, 3),)), (cov_biased, ((3, 5),)),
                                          (cov_pair, ((5,), (5,))),
                                          (corrcoef_columns, ((5, 3),))],
                         ids=["rowvar", "bias-ddof", "x-y", "corrcoef-rowvar"])
def test_cov_and_corrcoef_with_numbas_arguments(loss, shapes):
    """np.cov(m, y, rowvar, bias, ddof) and np.corrcoef(x, y, rowvar) as numba takes them:
    variables in columns, a second set of variables, the biased and ddof normalizations."""
    rng = np.random.default_rng(7)
    check_against_numba(loss, tuple(rng.standard_normal(s) for s in shapes))


def sorted_rows(m):
    return (np.sum(np.sort(m) * np.arange(12.0).reshape(3, 4)) + np.sum(np.sort(m.T * 2.0)[:, 0])
            + np.median(m) * 3.0 + np.median(m[:, :3]))


def test_rows_sorted_and_the_median_of_a_matrix_match_numba_and_finite_differences():
    """np.sort of a 2-D array sorts each row (numba's last axis); np.median of a matrix is
    the median of all its elements."""
    check_against_numba(sorted_rows, (np.random.default_rng(3).standard_normal((3, 4)),))


def appended_along_axes(m, s):
    return (np.sum(np.append(m, s, axis=0) * np.arange(9.0).reshape(3, 3))
            + np.sum(np.append(m, s[:, :2].T, axis=1) ** 2))


def differences_with_ends(x, y):
    return (np.sum(np.ediff1d(x, to_end=y, to_begin=y[:1] * 2.0) * np.arange(6.0))
            + np.sum(np.ediff1d(x, y[0]) ** 2) + np.sum(np.ediff1d(x, to_begin=3.0 * y[1]) ** 2))


@pytest.mark.parametrize("loss, shapes", [(appended_along_axes, ((2, 3), (1, 3))),
                                          (differences_with_ends, ((4,), (2,)))],
                         ids=["append-axis", "ediff1d-ends"])
def test_append_along_an_axis_and_differences_with_ends(loss, shapes):
    """np.append(a, b, axis) is np.concatenate((a, b), axis); np.ediff1d(x, to_end,
    to_begin) puts the flattened ends (a number is one element) around the differences."""
    rng = np.random.default_rng(5)
    check_against_numba(loss, tuple(rng.standard_normal(s) for s in shapes))


def angle_and_ramp(w):
    v = math.tan(w[0])
    return math.atan(v) + np.sum(np.linspace(1.0, v, 2) - w)


def test_a_number_used_by_a_scalar_function_and_by_np_linspace():
    # v's adjoint receives from atan(v) and from linspace's stop: both add into it (found
    # by the program fuzzer, where the first had been taken for v's only one)
    w = np.array([0.3, 0.4])
    check_against_numba(angle_and_ramp, (w,))
    g = adjit.grad(angle_and_ramp)(w)
    assert g[0] == pytest.approx(1.0 / math.cos(0.3) ** 2 * (math.cos(0.3) ** 2 + 1.0) - 1.0,
                                 rel=1e-14)
    assert g[1] == -1.0


def test_adjit_imports_where_numpy_has_no_row_stack(tmp_path):
    """numpy 2.5 removed np.row_stack: adjit imports there and its vstack entry still serves
    (a fresh process whose numpy lacks the alias)."""
    import os
    import subprocess
    import sys
    script = tmp_path / "no_row_stack.py"
    script.write_text("import numpy as np\n"
                      "import numba.core.inline_closurecall\n"   # (numba 0.68 reads it once)
                      "del np.row_stack\n"
                      "np.__all__ = [n for n in np.__all__ if n != 'row_stack']\n"
                      "import adjit\n"
                      "def f(x):\n"
                      "    return np.sum(np.vstack((x, 2.0 * x)) ** 2)\n"
                      "print(adjit.grad(f)(np.array([1.0, -0.5]))[1])\n")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=300, env=dict(os.environ, PYTHONPATH=root))
    assert out.returncode == 0, out.stderr[-2000:]
    # d/dx1 of x1**2 + 4 x1**2 at x1 = -0.5
    assert float(out.stdout.split()[-1]) == 10.0 * -0.5


def _sum_as_int(x):
    return np.sum(x * 3.7, None, np.int64) + 0.0


def _method_sum_as_int(x):
    return x.reshape(2, 3).sum(1, np.int64)[0] * x[0]


def _sum_as_bool(x):
    return (x * 2.7).sum(None, np.bool_) * x[0]


@pytest.mark.parametrize("f", [_sum_as_int, _method_sum_as_int, _sum_as_bool])
def test_a_reductions_dtype_given_by_position_is_refused(f):
    """numba converts every element to the dtype given after the axis (a step function of
    x): a reduction differentiated without it was silently wrong (sum 22.57 for numba's 19)."""
    x = np.array([0.9, 1.3, 0.5, 1.6, 0.7, 1.1])
    numba.njit(f)(x)        # (numba compiles it)
    with pytest.raises(adjit.AdjitError, match=r"with its argument `dtype` after the axis\. "
                       r"adjit takes the array and the axis of a reduction"):
        adjit.grad(f)(x)


def clipped_on_one_side(x, w):
    """np.clip with one bound None: no bound on that side, as numba clips."""
    return np.sum(np.clip(x * w, None, 0.3) ** 2) + np.sum(np.clip(x, -0.2, None) * w)


def test_clip_with_a_bound_left_out():
    check_against_numba(clipped_on_one_side, (X, W))
    with pytest.raises(adjit.AdjitError, match=r"np.clip with neither bound \(both None\)"):
        adjit.grad(lambda x: np.sum(np.clip(x, None, None)))(X)


def quantiles_of_a_tuple(x, w):
    """q and interpolation points written as tuples in the call (numba reads them as its
    list): the points of each."""
    return np.sum(np.percentile(x * w, (30.0, 70.0)) * np.array([1.0, 2.0])) + \
        np.sum(np.quantile(x, (0.3, 0.7))) + np.sum(np.interp((0.7, 2.5), np.cumsum(w), x))


def test_quantiles_and_interpolation_points_written_as_tuples():
    check_against_numba(quantiles_of_a_tuple, (X, np.array([0.4, 1.1, 0.9, 0.3, 0.7])))


def test_argmax_along_an_axis_is_refused():
    """numba's np.argmax(a, axis) gives an array; adjit calls np.argmax(a) only."""
    with pytest.raises(adjit.AdjitError, match=r"`np.argmax` with the positional argument "
                       r"`axis`"):
        adjit.grad(lambda x: x[np.argmax(x.reshape(2, -1), 1)[0]])(X[:4])


def shifted_by_eye(x, w):
    """np.eye with its offset and dtype by position, np.identity with its dtype."""
    n = x.shape[0]
    return np.sum(np.dot(np.eye(n, n, -2, np.float64), x) * w) + \
        np.sum(np.dot(np.identity(n, np.float64), x * x))


def test_eye_and_identity_with_a_dtype():
    check_against_numba(shifted_by_eye, (X, np.array([0.4, 1.1, -0.9, 0.3, 0.7])))
    with pytest.raises(adjit.AdjitError, match=r"np.eye with the dtype int64\. Leave the "
                       r"dtype out"):
        adjit.grad(lambda x: np.sum(np.eye(5, 5, 0, np.int64) * x))(X)
