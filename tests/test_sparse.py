"""Sparse Jacobians from a given pattern: a reaction-diffusion right-hand side written as a
simulation code writes it, stencils in loops and with np.roll, an arrow shape; values equal
the dense Jacobian (and finite differences), and a pattern that misses an entry is refused."""
import numpy as np
import pytest
import scipy.sparse as sps
from hypothesis import given, strategies as st
from scipy.integrate import solve_ivp

import adjit
from adjit import AdjitError
from brusselator_sparse import brusselator, pattern as brusselator_pattern  # examples/
from fd import fd_jacobian


def diffusion_roll(u, d):
    return d * (np.roll(u, 1) - 2.0 * u + np.roll(u, -1)) - u ** 3


def arrow(x):
    """A dense first row (a total), a dense first column (every element scaled by x0)."""
    out = x * x[0]
    out[0] = np.sum(x * x)
    return out


def tridiagonal_pattern(n, periodic):
    P = np.eye(n, dtype=bool) | np.eye(n, k=1, dtype=bool) | np.eye(n, k=-1, dtype=bool)
    if periodic:
        P[0, -1] = P[-1, 0] = True
    return P


RNG = np.random.default_rng(5)


def test_brusselator_sparse_jacobian_is_the_dense_one():
    n = 6
    y = RNG.uniform(0.5, 1.5, 2 * n * n)
    args = (y, 1.0, 3.0, 0.02)
    J = adjit.jacobian(brusselator, sparse=brusselator_pattern(n))
    Js = J(*args)
    assert isinstance(Js, sps.csr_array) and Js.shape == (2 * n * n, 2 * n * n)
    dense = adjit.jacobian(brusselator)(*args)
    np.testing.assert_allclose(Js.toarray(), dense, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(Js.toarray(), fd_jacobian(brusselator, args, 0), rtol=1e-6,
                               atol=1e-8)
    # a row holds 6 entries (the 5-point stencil and the coupled field): 6 colors at least;
    # the greedy coloring needs 9 here
    assert 6 <= J.ncolors <= 10
    assert J.pattern.nnz == Js.nnz


@pytest.mark.parametrize("periodic", [False, True])
def test_tridiagonal_stencil_with_np_roll(periodic):
    n = 9
    u = RNG.normal(size=n)
    P = tridiagonal_pattern(n, True)        # np.roll wraps: the periodic pattern
    J = adjit.jacobian(diffusion_roll, sparse=P if periodic else sps.csr_array(P))
    Js = J(u, 0.3)
    np.testing.assert_allclose(Js.toarray(), fd_jacobian(diffusion_roll, (u, 0.3), 0),
                               rtol=1e-6, atol=1e-8)
    assert J.ncolors == 3                   # 9 columns, bandwidth 3: optimal


def test_arrow_shape():
    x = RNG.normal(size=7)
    P = np.eye(7, dtype=bool)
    P[0, :] = P[:, 0] = True
    J = adjit.jacobian(arrow, sparse=P)
    np.testing.assert_allclose(J(x).toarray(), adjit.jacobian(arrow)(x), rtol=1e-13)


def test_a_pattern_that_misses_an_entry_is_refused():
    u = RNG.normal(size=9)
    P = tridiagonal_pattern(9, False)       # np.roll wraps: (0, 8) and (8, 0) are missing
    with pytest.raises(AdjitError, match="misses entries of the Jacobian"):
        adjit.jacobian(diffusion_roll, sparse=P)(u, 0.3)


def test_a_pattern_of_the_wrong_shape_is_refused():
    with pytest.raises(AdjitError, match="a pattern with 5 columns for an argument of 9"):
        adjit.jacobian(diffusion_roll, sparse=np.eye(5, dtype=bool))(np.ones(9), 0.3)


def test_stiff_integration_with_scipy_bdf():
    n = 4
    P = brusselator_pattern(n)
    J = adjit.jacobian(brusselator, sparse=P)
    y0 = 1.0 + 0.2 * np.sin(np.arange(2 * n * n))
    params = (1.0, 3.0, 0.2)

    def rhs(t, y):
        return brusselator(y, *params)

    with_j = solve_ivp(rhs, (0.0, 2.0), y0, method="BDF", jac=lambda t, y: J(y, *params),
                       rtol=1e-8, atol=1e-10)
    with_fd = solve_ivp(rhs, (0.0, 2.0), y0, method="BDF", jac_sparsity=P, rtol=1e-8,
                        atol=1e-10)
    assert with_j.success and with_fd.success
    np.testing.assert_allclose(with_j.y[:, -1], with_fd.y[:, -1], rtol=1e-5)


def chain_energy(x, k):
    """Springs between neighbours and a quartic on-site term: a tridiagonal Hessian."""
    e = 0.0
    for i in range(x.shape[0] - 1):
        e += 0.5 * k * (x[i + 1] - x[i] - 1.0) ** 2
    for i in range(x.shape[0]):
        e += 0.25 * x[i] ** 4
    return e


def test_sparse_hessian_of_a_chain():
    n = 12
    x = RNG.normal(size=n)
    P = tridiagonal_pattern(n, False)
    P[np.tril_indices(n, -1)] = False       # the upper half is enough: made symmetric
    H = adjit.hessian(chain_energy, sparse=P)
    Hs = H(x, 2.0)
    np.testing.assert_allclose(Hs.toarray(), adjit.hessian(chain_energy)(x, 2.0), rtol=1e-13,
                               atol=1e-13)
    assert H.ncolors == 3 and H.by == "star"
    with pytest.raises(AdjitError, match="misses entries of the Hessian"):
        adjit.hessian(chain_energy, sparse=np.eye(n, dtype=bool))(x, 2.0)


def test_trust_constr_with_the_sparse_hessian():
    from scipy.optimize import minimize
    n = 10
    P = tridiagonal_pattern(n, False)
    g = adjit.grad(chain_energy)
    H = adjit.hessian(chain_energy, sparse=P)
    res = minimize(chain_energy, np.linspace(0.0, 1.0, n), args=(3.0,), jac=g, hess=H,
                   method="trust-constr", options={"gtol": 1e-10})
    assert res.success
    np.testing.assert_allclose(g(res.x, 3.0), 0.0, atol=1e-6)


def mix(x, A):
    """A @ tanh(x) with A sparse (stored dense): the Jacobian is A diag(1 - tanh(x)**2)."""
    return A @ np.tanh(x) + 0.1 * x[0] * np.sum(A, axis=1)


@given(st.integers(3, 12), st.integers(3, 12), st.floats(0.05, 0.5), st.integers(0, 2 ** 31))
def test_random_patterns_color_validly_and_decompress_exactly(m, n, density, seed):
    rng = np.random.default_rng(seed)
    A = np.where(rng.random((m, n)) < density, rng.normal(size=(m, n)), 0.0)
    P = A != 0.0
    P[:, 0] = True                          # the x[0] term reaches every row
    x = rng.normal(size=n)
    J = adjit.jacobian(mix, sparse=P)
    Js = J(x, A)
    np.testing.assert_allclose(Js.toarray(), A * (1.0 - np.tanh(x) ** 2) +
                               0.1 * np.outer(np.sum(A, axis=1), np.eye(n)[0]), rtol=1e-12,
                               atol=1e-14)
    # a valid coloring: no two columns (or rows) of one color share a row (or column)
    S = J.pattern.toarray()
    S = S if J.by == "columns" else S.T
    for c in range(J.ncolors):
        assert np.all(S[:, J.colors == c].sum(axis=1) <= 1)


def coupled_energy(x, A):
    """x^T A x / 2 + sum(x^4) / 4 for a symmetric A: the Hessian is A + 3 diag(x^2)."""
    return 0.5 * x @ (A @ x) + 0.25 * np.sum(x ** 4)


def _star_coloring_is_valid(S, colors):
    """Distance-1 proper, and no path on four vertices colored with two colors only."""
    n = S.shape[0]
    adj = [[j for j in range(n) if S[i, j] and j != i] for i in range(n)]
    for i in range(n):
        assert all(colors[i] != colors[j] for j in adj[i])
    for a in range(n):
        for b in adj[a]:
            for c in adj[b]:
                if c == a:
                    continue
                for d in adj[c]:
                    if d in (a, b):
                        continue
                    assert len({colors[a], colors[b], colors[c], colors[d]}) >= 3, (a, b, c, d)


@given(st.integers(3, 14), st.floats(0.05, 0.5), st.integers(0, 2 ** 31))
def test_random_hessian_patterns_star_color_validly_and_decompress_exactly(n, density, seed):
    rng = np.random.default_rng(seed)
    A = np.where(rng.random((n, n)) < density, rng.normal(size=(n, n)), 0.0)
    A = A + A.T
    x = rng.normal(size=n)
    P = (A != 0.0) | np.eye(n, dtype=bool)
    H = adjit.hessian(coupled_energy, sparse=np.triu(P))
    np.testing.assert_allclose(H(x, A).toarray(), A + np.diag(3.0 * x ** 2), rtol=1e-12,
                               atol=1e-13)
    _star_coloring_is_valid(H.pattern.toarray(), H.colors)


def test_star_coloring_needs_fewer_products_than_columns():
    """An arrow (one variable coupled to all others) is a star: 2 hvps, where the columns'
    distance-2 coloring needs one per variable; a 2-D grid's 5-point Hessian needs fewer
    than its 13-point distance-2 neighbourhood."""
    n = 30
    A = np.zeros((n, n))
    A[0, :] = A[:, 0] = 0.5
    x = RNG.normal(size=n)
    H = adjit.hessian(coupled_energy, sparse=(A != 0) | np.eye(n, dtype=bool))
    np.testing.assert_allclose(H(x, A).toarray(), A + np.diag(3.0 * x ** 2), rtol=1e-13)
    assert H.ncolors == 2
    g = 8
    L = np.zeros((g * g, g * g))
    for i in range(g):
        for j in range(g):
            for di, dj in ((1, 0), (0, 1)):
                if i + di < g and j + dj < g:
                    L[i * g + j, (i + di) * g + j + dj] = L[(i + di) * g + j + dj, i * g + j] = 1
    H2 = adjit.hessian(coupled_energy, sparse=(L != 0) | np.eye(g * g, dtype=bool))
    y = RNG.normal(size=g * g)
    np.testing.assert_allclose(H2(y, L).toarray(), L + np.diag(3.0 * y ** 2), rtol=1e-13)
    _star_coloring_is_valid(H2.pattern.toarray(), H2.colors)
    assert H2.ncolors <= 6


def rosenbrock_chain(x, *args):
    """scipy.optimize's rosen, its two constants passed as `args=(a, b)`."""
    a, b = args
    s = 0.0
    for i in range(x.shape[0] - 1):
        s += a * (x[i + 1] - x[i] ** 2) ** 2 + b * (1 - x[i]) ** 2
    return s


def coupled_rates(y, *args):
    k1, k2 = args
    out = np.empty_like(y)
    out[0] = -k1 * y[0]
    out[1:] = k1 * y[:-1] - k2 * y[1:] ** 2
    return out


def test_sparse_derivatives_of_a_function_with_star_args():
    """The pattern is read from the program with the values after x passed one by one (it
    ran the normalized program with `args` as one value: 'missing argument args_1')."""
    x = np.linspace(-1.0, 1.0, 7)
    H = adjit.hessian(rosenbrock_chain, sparse=True)(x, 100.0, 1.0)
    np.testing.assert_allclose(H.toarray(), adjit.hessian(rosenbrock_chain)(x, 100.0, 1.0),
                               rtol=1e-14)
    assert H.nnz == 7 + 2 * 6
    J = adjit.jacobian(coupled_rates, sparse=True)(x, 0.5, 2.0)
    np.testing.assert_allclose(J.toarray(), fd_jacobian(coupled_rates, (x, 0.5, 2.0), 0),
                               rtol=1e-7, atol=1e-9)
    P = adjit.sparsity(coupled_rates)(x, 0.5, 2.0)
    assert P.nnz == 1 + 2 * 6
