"""Double buffering: loops that exchange array names (`u, v = v, u`), checked against finite
differences and the function's own value, with and without checkpointing."""
import numba
import numpy as np
import pytest

import adjit
from adjit import AdjitError
from fd import fd_grad


def heat_swap(u0, alpha, steps):
    n = u0.shape[0]
    u = u0.copy()
    v = u0.copy()
    for t in range(steps):
        for i in range(1, n - 1):
            v[i] = u[i] + alpha * (u[i - 1] - 2.0 * u[i] + u[i + 1]) + 0.1 * np.sin(u[i])
        u, v = v, u
    return np.sum(u * u) + 0.5 * np.sum(v)


def rotate3(x0, c, steps):
    a = x0.copy()
    b = x0 * 0.5
    d = x0 * 0.25
    for t in range(steps):
        d[:] = a * c + np.sin(b)
        a, b, d = b, d, a
    return np.sum(a * np.arange(a.shape[0])) + np.sum(b * b) + np.sum(d)


def swap_2d_while(m0, c, steps):
    cur = m0.copy()
    nxt = np.zeros_like(m0)
    t = 0
    while t < steps:
        nxt[:, :] = np.tanh(cur * c) + 0.1 * cur.T
        cur, nxt = nxt, cur
        t += 1
    return np.sum(cur * cur)


def swap_twice(x0, c, steps):
    """The body swaps back: one renamed copy, no phase."""
    u = x0.copy()
    v = np.zeros_like(x0)
    for t in range(steps):
        v[:] = u * c
        u, v = v, u
        v[:] = np.sin(u) + v
        u, v = v, u
    return np.sum(u * v)


def _step(src, dst, c):
    for i in range(src.shape[0]):
        dst[i] = src[i] + c * np.cos(src[i])


def swap_with_helper(x0, c, steps):
    u = x0.copy()
    v = np.empty_like(x0)
    for t in range(steps):
        _step(u, v, c)
        u, v = v, u
    return np.sum(u ** 3)


CASES = [(heat_swap, lambda r: r.random(7), (0, 1, 2, 3, 6)),
         (rotate3, lambda r: r.random(5), (0, 1, 2, 3, 4, 7)),
         (swap_2d_while, lambda r: r.random((3, 3)), (0, 1, 2, 5)),
         (swap_twice, lambda r: r.random(4), (0, 1, 3)),
         (swap_with_helper, lambda r: r.random(5), (0, 1, 4))]


@pytest.mark.parametrize("fn, make, steps_list", CASES, ids=[c[0].__name__ for c in CASES])
def test_swapping_loops_match_finite_differences(fn, make, steps_list):
    g = adjit.value_and_grad(fn, argnums=(0, 1))
    for steps in steps_list:
        args = (make(np.random.default_rng(steps)), 0.7, steps)
        value, (g0, g1) = g(*args)
        assert value == pytest.approx(fn(*args), rel=1e-12)
        np.testing.assert_allclose(g0, fd_grad(fn, args, 0), rtol=1e-6, atol=1e-7)
        assert g1 == pytest.approx(fd_grad(fn, args, 1), rel=1e-6, abs=1e-7)


@pytest.mark.parametrize("fn", [heat_swap, rotate3])
def test_swapping_loops_checkpoint_bit_for_bit(fn):
    args = (np.random.default_rng(1).random(6), 0.4, 11)
    a = adjit.value_and_grad(fn, argnums=(0, 1))(*args)
    b = adjit.value_and_grad(fn, argnums=(0, 1), checkpoint=3)(*args)
    assert a[0] == b[0] and np.array_equal(a[1][0], b[1][0]) and a[1][1] == b[1][1]


def test_no_array_name_is_rebound_in_the_generated_code():
    src = adjit.grad(heat_swap).source_for(np.ones(5), 0.1, 3)
    assert "u, v = v, u" not in src and "_phase" in src
    assert "u = v" not in src and "v = u\n" not in src


def swap_in_if(x0, c, steps):
    u = x0.copy()
    v = x0 * 2.0
    for t in range(steps):
        if c > 0.5:
            u, v = v, u
        u[0] += c
    return np.sum(u)


def swap_with_break(x0, c, steps):
    u = x0.copy()
    v = x0 * 2.0
    for t in range(steps):
        v[:] = u * c
        if v[0] > 10.0:
            break
        u, v = v, u
    return np.sum(u)


@pytest.mark.parametrize("fn, what", [(swap_in_if, "inside an `if`"),
                                      (swap_with_break, "`break` in a loop that swaps")])
def test_swaps_that_depend_on_the_path_are_refused(fn, what):
    with pytest.raises(AdjitError, match=what) as info:
        adjit.grad(fn).source_for(np.ones(3), 0.7, 2)
    assert "u[:] = v" in str(info.value) and "line" in str(info.value)


def swap_arguments(u, v, steps):
    for t in range(steps):
        for i in range(u.shape[0]):
            v[i] = 2.0 * u[i]
        u, v = v, u
    return np.sum(u)


@numba.stencil
def _blur(a):
    return 0.25 * (a[-1, 0] + a[1, 0] + a[0, -1] + a[0, 1])


@numba.njit
def _run_blur(input_arr, iterations):
    # numba-examples' gaussian-blur-pa.py: the argument array swapped with a local copy
    output_arr = input_arr.copy()
    for i in range(iterations):
        _blur(input_arr, out=output_arr)
        input_arr, output_arr = output_arr, input_arr
    return input_arr


def blurred(image, w, iterations):
    return np.sum(w * _run_blur(image, iterations))


@pytest.mark.parametrize("steps", [1, 2, 3, 4])
@pytest.mark.parametrize("fn, make", [
    (swap_arguments, lambda rng: (rng.normal(size=4), rng.normal(size=4))),
    (blurred, lambda rng: (rng.normal(size=(5, 6)), rng.normal(size=(5, 6))))])
def test_swapping_an_argument_array_leaves_the_callers_arrays_as_numba_does(fn, make, steps):
    """The caller's array is never swapped with a copy after the loop: the statements after
    the loop are written once per phase of the swap, so the gradient, the value and what
    the caller's arrays hold afterwards are numba's."""
    rng = np.random.default_rng(steps)
    args = make(rng) + (steps,)
    forward = numba.njit(fn)
    expected_args = [a.copy() for a in args[:2]]
    value = forward(*expected_args, steps)
    got_args = [a.copy() for a in args[:2]]
    got, grad = adjit.value_and_grad(fn, argnums=0)(*got_args, steps)
    assert got == pytest.approx(value, rel=1e-13)
    for mine, numbas in zip(got_args, expected_args):
        np.testing.assert_array_equal(mine, numbas)
    np.testing.assert_allclose(grad, fd_grad(forward, args, 0), rtol=1e-6, atol=1e-8)


def swap_argument_in_a_branch(u, c, steps):
    v = u.copy()
    if c > 0.0:
        for t in range(steps):
            v[:] = u * c
            u, v = v, u
    return np.sum(u)


def test_swapping_an_argument_array_in_a_nested_loop_is_refused():
    with pytest.raises(AdjitError, match="swap of the argument array 'u'") as info:
        adjit.grad(swap_argument_in_a_branch).source_for(np.ones(2), 0.5, 1)
    assert "top level of the function" in str(info.value)


def _double(w):
    for i in range(w.shape[0]):
        w[i] = 2.0 * w[i]


def writes_through_a_slice(x):
    u = x.copy()
    _double(u[1:])
    return np.sum(u * u)


def writes_through_a_row(m):
    u = m.copy()
    _double(u[0])
    return np.sum(u * u)


@pytest.mark.parametrize("fn, arg", [(writes_through_a_slice, np.array([0.5, -1.0, 2.0])),
                                     (writes_through_a_row, np.array([[0.5, -1.0], [2.0, 3.0]]))])
def test_a_helper_writing_into_a_slice_writes_the_array(fn, arg):
    """A slice or a row passed to a helper is a view: its writes reach the caller's array
    (they were lost once, silently, and then refused)."""
    v, g = adjit.value_and_grad(fn)(arg.copy())
    assert v == fn(arg.copy())
    np.testing.assert_allclose(g, fd_grad(lambda a: fn(a.copy()), [arg.copy()], 0), rtol=1e-7)
