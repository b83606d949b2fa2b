"""Array-level operations (matrix products, np.linalg.solve / inv) whose operands a loop
computes again in every iteration, or that change after the operation: their adjoints read
the operands' values as they were at the operation, which the forward sweep records on the
tape. Checked against analytic derivatives and central finite differences of the
numba-compiled program."""
import numba
import numpy as np
import pytest

import adjit

from fd import fd_grad


def matrix_power_trace(A, n):
    M = np.eye(A.shape[0])
    for _ in range(n):
        M = M @ A
    return np.trace(M)


def linear_rollout_loss(A, x0, steps):
    x = x0.copy()
    loss = 0.0
    for _ in range(steps):
        x = A @ x
        loss += np.sum(np.sin(x))
    return loss


def changed_after_product(A, B):
    C = A @ B
    A[0, 0] = 2.0 * A[0, 0]
    return np.sum(C * C) + np.sum(A)


def solve_in_loop(S, b, steps):
    x = b.copy()
    total = 0.0
    for t in range(steps):
        M = S + (t + 1.0) * np.eye(S.shape[0])
        x = np.linalg.solve(M, x)
        total += np.sum(x ** 2)
    return total


def inverse_in_loop(S, steps):
    P = np.eye(S.shape[0])
    total = 0.0
    for _ in range(steps):
        P = np.linalg.inv(S + P)
        total += np.sum(P)
    return total


@pytest.fixture(scope="module")
def rng():
    return np.random.default_rng(11)


def _fd_check(fn, args, argnums, rtol=1e-6, atol=1e-8):
    compiled = numba.njit(fn)
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    value, grads = adjit.value_and_grad(fn, argnums=argnums)(*copies)
    np.testing.assert_allclose(value, compiled(*[a.copy() if isinstance(a, np.ndarray) else a
                                                 for a in args]), rtol=1e-12)

    def fresh(*a):
        return compiled(*[x.copy() if isinstance(x, np.ndarray) else x for x in a])
    grads = (grads,) if isinstance(argnums, int) else grads
    nums = (argnums,) if isinstance(argnums, int) else argnums
    for k, got in zip(nums, grads):
        np.testing.assert_allclose(got, fd_grad(fresh, args, k), rtol=rtol, atol=atol,
                                   err_msg=f"d/d arg {k} of {fn.__name__}")


def test_matrix_power_trace_against_its_analytic_gradient(rng):
    A = 0.3 * rng.standard_normal((4, 4)) + 0.5 * np.eye(4)
    n = 6
    got = adjit.grad(matrix_power_trace)(A, n)
    expected = n * np.linalg.matrix_power(A, n - 1).T      # d tr(A^n) / dA
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_linear_rollout(rng):
    A = 0.4 * rng.standard_normal((3, 3)) + 0.6 * np.eye(3)
    _fd_check(linear_rollout_loss, (A, rng.standard_normal(3), 7), (0, 1))


def test_operand_changed_after_the_product(rng):
    A, B = rng.standard_normal((3, 2)), rng.standard_normal((2, 4))
    _fd_check(changed_after_product, (A, B), (0, 1))
    # the caller's array is not written by the gradient (only by the user's own code,
    # which the gradient runs on its own copy)
    A0 = A.copy()
    adjit.grad(changed_after_product, argnums=(0, 1))(A, B)
    # (the user's function itself writes A[0, 0]: numba would too; adjit must not add more)
    assert np.array_equal(A[1:], A0[1:])


def test_solve_whose_matrix_and_result_change_every_iteration(rng):
    S = rng.standard_normal((3, 3))
    S = S @ S.T + 3.0 * np.eye(3)
    _fd_check(solve_in_loop, (S, rng.standard_normal(3), 4), (0, 1))


def test_inverse_in_loop(rng):
    S = rng.standard_normal((3, 3))
    S = S @ S.T + 2.0 * np.eye(3)
    _fd_check(inverse_in_loop, (S, 4), 0)


def test_what_the_tape_took_counts_the_recorded_operands(rng):
    A = 0.3 * rng.standard_normal((5, 5)) + 0.5 * np.eye(5)
    g = adjit.grad(matrix_power_trace)
    g(A, 50)
    assert g.last_tape.tape_bytes >= 50 * 25 * 8      # one 5x5 operand per step


def test_checkpointed_time_loop_with_a_product(rng):
    A = 0.4 * rng.standard_normal((3, 3)) + 0.6 * np.eye(3)
    x0 = rng.standard_normal(3)
    plain = adjit.grad(linear_rollout_loss, argnums=(0, 1))(A, x0, 40)
    ckpt = adjit.grad(linear_rollout_loss, argnums=(0, 1), checkpoint=4)(A, x0, 40)
    for a, b in zip(plain, ckpt):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_float32(rng):
    A = (0.3 * rng.standard_normal((3, 3)) + 0.5 * np.eye(3)).astype(np.float32)
    got = adjit.grad(matrix_power_trace)(A, 4)
    assert got.dtype == np.float32
    expected = 4 * np.linalg.matrix_power(A.astype(np.float64), 3).T
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
