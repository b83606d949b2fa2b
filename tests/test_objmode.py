"""`with numba.objmode(...)` blocks as numba users write them: a timer, a progress message,
a library call numba cannot compile, in the differentiated function and in its @njit
helpers. A block is Python code adjit does not differentiate: it runs once per call, in
order (never again in the backward sweep or a checkpoint's recomputation), its outputs are
constants for differentiation (one output or several), and a derivative that would have to
flow through it, an array it may write, or an output of a tuple type are refused by name."""
import math
import random
import time

import numpy as np
import pytest
import scipy.special
from numba import njit, objmode

import adjit
from adjit import AdjitError
from fd import check_value_and_grad


@njit
def _sum_of_sines_timed(x):
    with objmode(start="float64"):
        start = time.perf_counter()
    s = 0.0
    for i in range(x.shape[0]):
        s += np.sin(x[i])
    with objmode():
        print("sum of sines:", s, "in", time.perf_counter() - start, "s")
    return s


def timed_loss(x):
    with objmode():
        print("loss of", len(x), "values")
    return 2.0 * _sum_of_sines_timed(x)


def test_timers_and_messages_run_once_per_call(capsys):
    x = np.linspace(0.0, 1.0, 5)
    g = check_value_and_grad(timed_loss, (x,), 0)
    np.testing.assert_allclose(g, 2.0 * np.cos(x), rtol=1e-14)
    capsys.readouterr()
    adjit.grad(timed_loss)(x)
    printed = capsys.readouterr().out
    assert printed.count("loss of 5 values") == 1 and printed.count("sum of sines:") == 1


@njit
def _legendre_nodes(n):
    with objmode(t="float64[:]"):
        t = np.asarray(scipy.special.roots_legendre(n)[0])
    return t


def shifted_quadrature(x, n):
    t = _legendre_nodes(n)
    s = 0.0
    for i in range(t.shape[0]):
        s += math.exp(x * t[i]) * (1.0 + t[i])
    return s


def test_a_library_call_in_a_block_gives_constants():
    t = scipy.special.roots_legendre(6)[0]
    g = check_value_and_grad(shifted_quadrature, (0.7, 6), 0)
    assert g == pytest.approx(np.sum(t * (1.0 + t) * np.exp(0.7 * t)), rel=1e-13)


def scaled_by_a_draw(x):
    with objmode(r="float64"):
        r = random.random() + 0.5
    return x * x * r


def test_a_block_is_not_run_again_by_the_backward_sweep():
    """The block's output is read from what the forward sweep got: d/dx of x*x*r is
    2*x*r for the r of this call (value / x * 2)."""
    value, g = adjit.value_and_grad(scaled_by_a_draw)(1.5)
    assert g == pytest.approx(2.0 * value / 1.5, rel=1e-14)


def stepped(x, steps):
    u = x.copy()
    for t in range(steps):
        u = u + 0.1 * np.sin(u)
        if t % 5 == 0:
            with objmode():
                print("step", t, "first value", u[0])
    return np.sum(u * u)


def test_a_block_in_a_time_loop_is_recorded_not_checkpointed(capsys):
    x = np.linspace(0.1, 1.0, 4)
    recorded = check_value_and_grad(stepped, (x, 12), 0)
    auto = adjit.grad(stepped, checkpoint="auto")(x, 12)
    assert np.array_equal(auto, recorded)
    capsys.readouterr()
    adjit.grad(stepped)(x, 12)
    assert capsys.readouterr().out.count("step") == 3
    with pytest.raises(AdjitError, match="a call which must run once"):
        adjit.grad(stepped, checkpoint=2)(x, 12)


def through_a_block(x):
    with objmode(c="float64"):
        c = float(np.sum(x))
    return c * 2.0


def writes_in_a_block(x):
    y = x * 2.0
    with objmode():
        y[0] = 5.0
    return np.sum(y)


def sorts_in_a_block(x):
    y = x * 2.0
    with objmode():
        y.sort()
    return np.sum(y * x)


def multiplies_into_in_a_block(x):
    """numpy's ufunc writes y, its output given by position (no `out=`)."""
    y = np.zeros(x.shape[0])
    y[:] = x * 1.0
    with objmode():
        np.multiply(x, 2.0, y)
    return np.sum(y * x)


def clips_into_in_a_block(x):
    """np.clip's `out` given by position."""
    y = x * 2.0
    with objmode():
        np.clip(x, 0.2, 0.5, y)
    return np.sum(y * x)


def reads_through_numpy_in_a_block(x, c):
    """The block gives c to numpy functions that only read it (c is the ufunc's input)."""
    with objmode(t="float64"):
        t = float(np.sum(np.multiply(c, 3.0)))
    return np.sum(c * x * x) + t


def test_a_block_giving_an_array_to_numpy_to_read_is_a_constant():
    x, c = np.linspace(0.1, 1.0, 4), np.array([1.0, -2.0, 0.5, 3.0])
    value, g = adjit.value_and_grad(reads_through_numpy_in_a_block)(x, c)
    assert value == njit(reads_through_numpy_in_a_block)(x, c)
    np.testing.assert_allclose(g, 2.0 * c * x, rtol=1e-15)


def tuple_output(x):
    with objmode(t="UniTuple(float64, 2)"):
        t = (1.0, 2.0)
    return t[0] * x + t[1]


def formatted_in_a_block(x):
    with objmode():
        print(f"x = {x:.3f}")       # (numba's bytecode reader refuses a format spec)
    return x * x


def test_a_block_numba_does_not_compile_is_refused_as_a_block():
    with pytest.raises(AdjitError, match=r"in function 'formatted_in_a_block' .*a `with "
                       r"objmode\(\)` block \(line \d+\) that numba does not compile "
                       r"\(format spec in f-strings not supported yet"):
        adjit.grad(formatted_in_a_block)(1.5)
    with pytest.raises(Exception, match="format spec in f-strings"):
        njit(formatted_in_a_block)(1.5)     # (numba's own refusal of the same code)


def test_what_a_block_cannot_do_is_refused_by_name():
    x = np.linspace(0.1, 1.0, 4)
    with pytest.raises(AdjitError, match=r"through_a_block.*a derivative would have to flow "
                       r"through `with objmode\(\)` block at line \d+"):
        adjit.grad(through_a_block)(x)
    for f in (writes_in_a_block, sorts_in_a_block, multiplies_into_in_a_block,
              clips_into_in_a_block):
        with pytest.raises(AdjitError, match=r"block \(line \d+\) that may change the array "
                           r"`y`"):
            adjit.grad(f)(x)
    with pytest.raises(AdjitError, match=r"block \(line \d+\) with a tuple output\. Declare "
                       r"each value as an output of its own"):
        adjit.grad(tuple_output)(1.5)


# -- several outputs: the block runs once, its outputs read in order -----------------------------

def drawn_window(x):
    """Bounds and weights drawn by Python's generator, which numba cannot compile."""
    n = x.shape[0]
    with objmode(lo="float64", hi="float64", w="float64[:]"):
        r = random.random()
        lo, hi = r, r + 1.0
        w = np.linspace(lo, hi, n)
    return np.sum(w * x * x) + lo * hi


def test_a_block_with_several_outputs_runs_once():
    x = np.linspace(0.1, 1.0, 4)
    random.seed(3)
    value, g = adjit.value_and_grad(drawn_window)(x)
    random.seed(3)
    r = random.random()
    w = np.linspace(r, r + 1.0, 4)
    assert value == pytest.approx(np.sum(w * x * x) + r * (r + 1.0), rel=1e-14)
    np.testing.assert_allclose(g, 2.0 * w * x, rtol=1e-14)
    # (the draw is the block's: a block run twice would have drawn another r for w)


def drawn_each_step(x):
    s = 0.0
    for i in range(x.shape[0]):
        with objmode(a="float64", b="float64"):
            a = random.random()
            b = 2.0 * a
            print("drew", a)
        s += a * x[i] + b * x[i] ** 2
    return s


def test_a_block_with_several_outputs_in_a_loop(capsys):
    x = np.array([0.3, -1.2, 2.0])
    random.seed(5)
    value, g = adjit.value_and_grad(drawn_each_step)(x)
    assert capsys.readouterr().out.count("drew") == 3
    random.seed(5)
    a = np.array([random.random() for _ in range(3)])
    assert value == pytest.approx(np.sum(a * x + 2.0 * a * x * x), rel=1e-14)
    np.testing.assert_allclose(g, a + 4.0 * a * x, rtol=1e-14)


@njit
def _bounds(n):
    with objmode(lo="float64", hi="float64"):
        lo, hi = -1.0, 1.0 + n
    return lo, hi


def clipped(x):
    lo, hi = _bounds(x.shape[0])
    return np.sum(np.clip(x, lo, hi) ** 2)


def stepped_by_a_block(x, steps):
    u = x.copy()
    for t in range(steps):
        with objmode(a="float64", b="float64"):
            a = 0.1
            b = 0.01 * t
        u = u + a * np.sin(u) + b
    return np.sum(u * u)


def test_several_outputs_in_a_helper_and_in_a_time_loop():
    x = np.array([0.5, -2.0, 7.0])
    g = check_value_and_grad(clipped, (x,), 0)
    np.testing.assert_array_equal(g, [1.0, 0.0, 0.0])
    recorded = check_value_and_grad(stepped_by_a_block, (x, 12), 0)
    assert np.array_equal(adjit.grad(stepped_by_a_block, checkpoint="auto")(x, 12), recorded)


def stopped_into_a_block(x):
    xs = adjit.stop_gradient(x)
    with objmode(c="float64"):
        c = float(np.sum(xs))
    return c * np.sum(x)


def test_a_block_given_a_stopped_value_is_a_constant():
    x = np.linspace(0.1, 1.0, 4)
    np.testing.assert_allclose(adjit.grad(stopped_into_a_block)(x), np.full(4, np.sum(x)),
                               rtol=1e-15)


def scaled_by_a_python_draw(x, c):
    with objmode(w="float64[:]"):
        print("block ran")
        w = c * random.random()
    return np.sum(w * x)


def test_a_block_given_arrays_runs_only_where_the_program_runs_it(capsys):
    """The block was run on trial arrays when adjit compiled the gradient (to see whether
    its output is a view of `c`): it printed, and took a number from Python's generator, so
    the gradient's value was not numba's."""
    x, c = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    random.seed(0)
    want = njit(scaled_by_a_python_draw)(x, c)
    capsys.readouterr()
    random.seed(0)
    value, g = adjit.value_and_grad(scaled_by_a_python_draw)(x, c)
    assert capsys.readouterr().out.count("block ran") == 1
    assert value == want
    random.seed(0)
    np.testing.assert_array_equal(g, c * random.random())


def viewed_in_a_block(x, c):
    with objmode(w="float64[:]"):
        w = c[::2]
    return np.sum(w * x)


def copied_in_a_block(x, c):
    with objmode(w="float64[:]"):
        w = c[::2].copy()
    return np.sum(w * x)


def test_a_block_output_sharing_memory_with_its_input_is_refused_where_it_runs():
    x, c = np.array([1.0, 2.0]), np.array([3.0, 4.0, 5.0, 6.0])
    with pytest.raises(AdjitError, match=r"in function 'viewed_in_a_block' .*line \d+\): a "
                       r"`with objmode\(\)` block whose output `w` shares memory with the "
                       r"array `c`"):
        adjit.grad(viewed_in_a_block)(x, c)
    np.testing.assert_array_equal(adjit.grad(copied_in_a_block)(x, c), c[::2])


def rebound_in_a_block(x, w):
    with objmode(w="float64[:]"):
        w = w * 2.0         # (the output's name is the input's: a new array)
    return np.sum(w * x)


def test_a_block_that_binds_its_input_name_to_a_new_array():
    x, w = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    value, g = adjit.value_and_grad(rebound_in_a_block)(x, w)
    assert value == njit(rebound_in_a_block)(x, w) == 22.0
    np.testing.assert_array_equal(g, 2.0 * w)
