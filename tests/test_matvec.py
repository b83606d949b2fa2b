"""Matrix-vector products (`A @ x`, `x @ A`, `np.dot`, a transposed matrix) as numba users
write them: a logistic regression, least squares, a linear time-stepping loop, a recurrent
update, products inside loops over particles. Outside loops, and inside them where both
operands are whole arrays, adjit computes them by BLAS as numba's own np.dot does
(runtime/linalg.py mv, mv_t: the same numbers as numba's forward, to the bit) and adds the
matrix's adjoint in place (reverse/outer.py); a row or slice inside a loop (`R @ P[i]`) is
summed in a loop that fuses with what reads it. Every gradient against central differences
of numba's compile; jvp against vjp (the dot-product test) and Hessian-vector products
against differences of the gradient; products of lengths that do not match raise numba's
ValueError, not a broadcast result."""
import numpy as np
import numba
import pytest

import adjit
from fd import check_value_and_grad, fd_grad, fd_hessian


def logistic_loss(w, X, y):
    return np.sum(np.log1p(np.exp(-y * (X @ w)))) + 0.5 * np.sum(w * w)


def least_squares(x, A, b):
    r = A @ x - b
    return np.dot(r, r)


def row_times_matrix(x, A):
    return np.sum(np.sin(x @ A))


def transposed_products(A, x, y):
    return np.sum((A.T @ x) ** 2) + np.sum(np.tanh(y @ A.T)) + np.dot(A.T, x)[0]


def linear_steps(A, u0, steps):
    u = u0.copy()
    for t in range(steps):
        u = 0.5 * u + 0.01 * (A @ u)
    return np.sum(u * u)


def recurrent(W, h0, steps):
    h = h0
    for t in range(steps):
        h = np.tanh(h @ W)
    return np.sum(h)


def two_terms(A, x):
    y = A @ x
    z = y @ A
    return np.sum(z * x) + np.dot(x, x)


def rotate_particles(R, P):
    s = 0.0
    for i in range(P.shape[0]):
        q = R @ P[i]
        s += q[0] * q[0] + 0.5 * q[1] - q[2] * P[i, 0]
    return s


def column_block(A, x):
    return np.sum((A[:, 1:] @ x[1:]) ** 2)


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    return rng, rng.standard_normal


@pytest.mark.parametrize("argnums", [0, (0, 1)])
def test_logistic_regression(argnums):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((40, 6))
    y = np.sign(rng.standard_normal(40))
    w = rng.standard_normal(6) * 0.3
    built = adjit.value_and_grad(logistic_loss, argnums=argnums)
    check_value_and_grad(logistic_loss, (w, X, y), argnums, built=built)
    assert "vec.mv(" in built.source


def product_entries(x, A):
    y = A @ x
    return y[2] * y[5] - y[0]


def test_value_is_numbas_own_product():
    # BLAS in both: the product is numba's forward's to the bit, not a loop's other order
    rng = np.random.default_rng(2)
    x, A = rng.standard_normal(300), rng.standard_normal((50, 300))
    value, _ = adjit.value_and_grad(product_entries, argnums=(0, 1))(x, A)
    assert value == numba.njit(product_entries)(x, A)


def test_least_squares_against_the_analytic_gradient():
    rng = np.random.default_rng(3)
    x, A, b = rng.standard_normal(8), rng.standard_normal((12, 8)), rng.standard_normal(12)
    gx, gA, gb = check_value_and_grad(least_squares, (x, A, b), (0, 1, 2))
    r = A @ x - b
    np.testing.assert_allclose(gx, 2 * A.T @ r, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gA, 2 * np.outer(r, x), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gb, -2 * r, rtol=1e-12, atol=1e-12)


def test_vector_times_matrix_and_transposes():
    rng = np.random.default_rng(4)
    check_value_and_grad(row_times_matrix, (rng.standard_normal(5), rng.standard_normal((5, 3))),
                         (0, 1))
    A = rng.standard_normal((4, 6))
    built = adjit.value_and_grad(transposed_products, argnums=(0, 1, 2))
    check_value_and_grad(transposed_products,
                         (A, rng.standard_normal(4), rng.standard_normal(6)), (0, 1, 2),
                         built=built)
    # the transpose is BLAS's, not a copy
    assert "vec.mv_t(A," in built.source and "vec.mv(A," in built.source


@pytest.mark.parametrize("steps", [0, 1, 7])
def test_time_stepping(steps):
    rng = np.random.default_rng(5)
    A = rng.standard_normal((9, 9)) * 0.3
    built = adjit.value_and_grad(linear_steps, argnums=(0, 1))
    check_value_and_grad(linear_steps, (A, rng.standard_normal(9), steps), (0, 1), built=built)
    # the matrix adjoint added in place, no outer product allocated per step
    assert "vec.outer_vv" not in built.source
    assert "vec.mv_t(A," in built.source


def test_time_stepping_checkpointed_is_the_recorded_gradient():
    rng = np.random.default_rng(6)
    A, u0 = rng.standard_normal((6, 6)) * 0.3, rng.standard_normal(6)
    recorded = adjit.grad(linear_steps, argnums=(0, 1))(A, u0, 40)
    for checkpoint in (4, "auto"):
        ckpt = adjit.grad(linear_steps, argnums=(0, 1), checkpoint=checkpoint)(A, u0, 40)
        for a, b in zip(recorded, ckpt):
            assert np.array_equal(a, b)


def test_recurrent_update():
    rng = np.random.default_rng(7)
    check_value_and_grad(recurrent, (rng.standard_normal((5, 5)) * 0.5, rng.standard_normal(5),
                                     4), (0, 1))


def test_two_terms_into_one_matrix_adjoint():
    rng = np.random.default_rng(8)
    A, x = rng.standard_normal((7, 7)), rng.standard_normal(7)
    built = adjit.value_and_grad(two_terms, argnums=(0, 1))
    gA, gx = check_value_and_grad(two_terms, (A, x), (0, 1), built=built)
    # the first term assigned, the second added in place
    assert built.source.count("vec.outer_vv(") == 1
    # f = |A x|^2 + |x|^2
    np.testing.assert_allclose(gA, 2 * np.outer(A @ x, x), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gx, 2 * A.T @ (A @ x) + 2 * x, rtol=1e-12, atol=1e-12)


def test_rows_inside_a_loop_stay_loops():
    rng = np.random.default_rng(9)
    R, P = rng.standard_normal((3, 3)), rng.standard_normal((20, 3))
    built = adjit.value_and_grad(rotate_particles, argnums=(0, 1))
    check_value_and_grad(rotate_particles, (R, P), (0, 1), built=built)
    assert "vec.mv" not in built.source


def test_column_block():
    rng = np.random.default_rng(10)
    check_value_and_grad(column_block, (rng.standard_normal((5, 4)), rng.standard_normal(4)),
                         (0, 1))


def test_float32_and_integer_operands():
    rng = np.random.default_rng(11)
    X = rng.standard_normal((10, 4)).astype(np.float32)
    y = np.sign(rng.standard_normal(10)).astype(np.float32)
    w = (rng.standard_normal(4) * 0.3).astype(np.float32)
    g = adjit.grad(logistic_loss, argnums=(0, 1))(w, X, y)
    assert g[0].dtype == np.float32 and g[1].dtype == np.float32
    ref = fd_grad(logistic_loss, (w.astype(np.float64), X.astype(np.float64),
                                  y.astype(np.float64)), 0, h=1e-4)
    np.testing.assert_allclose(g[0], ref, rtol=1e-3, atol=1e-4)
    Xi = np.arange(12).reshape(4, 3) % 5 - 2
    x = rng.standard_normal(3)

    def through_ints(x, M):
        return np.sum((M @ x) ** 2)
    np.testing.assert_allclose(adjit.grad(through_ints)(x, Xi), 2 * Xi.T @ (Xi @ x),
                               rtol=1e-12)


def test_jvp_against_vjp():
    rng = np.random.default_rng(12)
    A, x = rng.standard_normal((6, 4)), rng.standard_normal(4)

    def products(A, x):
        return np.tanh(A @ x) * 2.0 + A.T @ np.sin(A @ x) @ A.T

    dA, dx = rng.standard_normal(A.shape), rng.standard_normal(x.shape)
    _, tangent = adjit.jvp(products, argnums=(0, 1))(A, x, (dA, dx))
    u = rng.standard_normal(6)
    _, (bA, bx) = adjit.vjp(products, argnums=(0, 1))(A, x, u)
    assert np.dot(u, tangent) == pytest.approx(np.sum(bA * dA) + np.dot(bx, dx), rel=1e-12)
    eps = 1e-6
    fd = (products(A + eps * dA, x + eps * dx) - products(A - eps * dA, x - eps * dx)) / (2 * eps)
    np.testing.assert_allclose(tangent, fd, rtol=1e-6, atol=1e-8)


def test_hessian_of_logistic_regression():
    rng = np.random.default_rng(13)
    X = rng.standard_normal((30, 4))
    y = np.sign(rng.standard_normal(30))
    w = rng.standard_normal(4) * 0.3
    H = adjit.hessian(logistic_loss)(w, X, y)
    np.testing.assert_allclose(H, fd_hessian(logistic_loss, (w, X, y), 0), rtol=1e-5,
                               atol=1e-6)
    p = 1.0 / (1.0 + np.exp(y * (X @ w)))
    exact = X.T @ (X * (p * (1 - p))[:, None]) + np.eye(4)
    np.testing.assert_allclose(H, exact, rtol=1e-10, atol=1e-10)
    v = rng.standard_normal(4)
    np.testing.assert_allclose(adjit.hvp(logistic_loss)(w, X, y, v), exact @ v, rtol=1e-10)


def test_gradient_of_a_gradient_through_the_matrix_adjoint():
    # the first gradient's matrix adjoint is an outer product; its own derivative is needed
    rng = np.random.default_rng(14)
    A, x = rng.standard_normal((5, 3)), rng.standard_normal(3)

    def squared(A, x):
        return np.sum((A @ x) ** 2)

    H = adjit.hessian(squared, argnums=0)(A, x)
    np.testing.assert_allclose(H.reshape(15, 15), fd_hessian(squared, (A, x), 0).reshape(15, 15),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("bad", ["matrix-vector", "vector-matrix", "vector-vector",
                                 "in a loop", "vdot"])
def test_lengths_that_do_not_match_raise(bad):
    rng = np.random.default_rng(15)

    def mv(A, x):
        return np.sum(A @ x)

    def vm(A, x):
        return np.sum(x @ A)

    def vv(A, x):
        return np.dot(A[0], x)

    def rows(A, x):
        s = 0.0
        for i in range(2):
            s += np.sum(A[i:i + 2] @ x)
        return s

    def vdot(A, x):
        return np.vdot(A[:, 0], x)

    f = {"matrix-vector": mv, "vector-matrix": vm, "vector-vector": vv, "in a loop": rows,
         "vdot": vdot}[bad]
    A, x = rng.standard_normal((4, 1)), rng.standard_normal(3)
    if bad == "vector-matrix":
        A = rng.standard_normal((1, 4))
    with pytest.raises(ValueError, match="incompatible array sizes"):
        numba.njit(f)(A, x)
    with pytest.raises(ValueError, match="incompatible array sizes"):
        adjit.grad(f, argnums=(0, 1))(A, x)


def in_prange(A, V):
    s = np.zeros(V.shape[0])
    x = V[0].copy()
    for i in numba.prange(V.shape[0]):
        s[i] = np.sum(np.sin(A @ x)) * i + np.sum(A @ V[i])
    return np.sum(s)


def test_products_inside_prange_are_loops():
    # the threads of a prange loop would share the matrix's adjoint: no BLAS term there
    rng = np.random.default_rng(16)
    A, V = rng.standard_normal((6, 5)) * 0.4, rng.standard_normal((8, 5))
    built = adjit.value_and_grad(in_prange, argnums=(0, 1))
    check_value_and_grad(in_prange, (A, V), (0, 1), forward=numba.njit(parallel=True)(in_prange),
                         built=built)
    assert "vec.mv" not in built.source
