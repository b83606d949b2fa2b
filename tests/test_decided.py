"""A differentiated argument that reaches the result only through conditions a loop decides
(a root found by bisection, an optimum a derivative-free search moves to, a count of
iterations): the program is a step function of it, whose derivative is zero wherever it
exists, while the function it approximates has another. adjit refuses such a gradient
(found in QuantEcon's bisect and nelder_mead: zero gradients, silently) and says what to
write instead. A condition outside loops, or one choosing each element of a map, is a
piecewise definition whose zero derivative is the usual one, and stays so."""
import math

import numba
import numpy as np
import pytest

import adjit
from adjit import AdjitError
from fd import check_value_and_grad


@numba.njit
def cubic(x, a):
    return x ** 3 - a


@numba.njit
def bisect_root(a):
    """quantecon.optimize.bisect's loop: the bracket moves by the residual's sign."""
    xa, xb = 0.0, 3.0
    fa = cubic(xa, a)
    dm = xb - xa
    xm = xa
    for itr in range(100):
        dm *= 0.5
        xm = xa + dm
        fm = cubic(xm, a)
        if fm * fa >= 0:
            xa = xm
        if fm == 0 or abs(dm) < 2e-12:
            break
    return xm


@numba.njit
def pattern_search(a):
    """A derivative-free maximizer of -(x - a)^2: the iterate moves by comparisons."""
    x, step = 0.0, 1.0
    for it in range(200):
        if -(x + step - a) ** 2 > -(x - a) ** 2:
            x = x + step
        elif -(x - step - a) ** 2 > -(x - a) ** 2:
            x = x - step
        else:
            step *= 0.5
    return x


@numba.njit
def iterations_until(tol):
    """How many halvings bring 1 below tol, as a float."""
    v = 1.0
    n = 0.0
    while v > tol:
        v *= 0.5
        n += 1.0
    return n


@numba.njit
def bisect_by_flags(t):
    """hapsira's Lambert solver (iod.vallado) brackets psi without branches: the comparison
    is a 0/1 factor (the refusal was missed: a zero gradient, silently)."""
    lo, hi, psi = 0.0, 4.0, 2.0
    for _ in range(60):
        below = psi * psi <= t
        lo = lo + (psi - lo) * below
        hi = hi + (psi - hi) * (not below)
        psi = (lo + hi) / 2
    return psi


@numba.njit
def bisect_by_weights(t):
    """The same with the condition as a float chosen by a conditional expression."""
    lo, hi, psi = 0.0, 4.0, 2.0
    for _ in range(60):
        w = 1.0 if psi * psi <= t else 0.0
        lo = lo + (psi - lo) * w
        hi = hi + (psi - hi) * (1.0 - w)
        psi = (lo + hi) / 2
    return np.cos(psi)


@pytest.mark.parametrize("fn, arg", [(bisect_root, 2.0), (pattern_search, 0.8),
                                     (iterations_until, 1e-3), (bisect_by_flags, 3.0),
                                     (bisect_by_weights, 3.0)])
def test_a_result_decided_by_comparisons_is_refused(fn, arg):
    with pytest.raises(AdjitError) as err:
        adjit.grad(fn)(arg)
    msg = str(err.value)
    assert fn.__name__ in msg and "only through conditions" in msg
    assert "custom_root" in msg and "stop_gradient" in msg


@adjit.custom_root(cubic)
def bisected(a):
    return bisect_root(a)


def root_of_cubic(a):
    return 2.0 * bisected(a) - bisected(a)


def test_the_converged_root_through_custom_root():
    """What the refusal advises: the root's derivative, a^(-2/3) / 3."""
    g = adjit.grad(root_of_cubic)(2.0)
    assert g == pytest.approx(2.0 ** (-2.0 / 3.0) / 3.0, rel=1e-9)


@numba.njit
def bisect_root_stopped(a):
    xa, dm = 0.0, 3.0
    fa = cubic(xa, adjit.stop_gradient(a))
    xm = xa
    for itr in range(100):
        dm *= 0.5
        xm = xa + dm
        if cubic(xm, adjit.stop_gradient(a)) * fa >= 0:
            xa = xm
    return xm + 0.0 * a


def test_a_stopped_comparison_gives_zero():
    assert adjit.grad(bisect_root_stopped)(2.0) == 0.0


def switched(x, c):
    if c > 0.0:
        return 2.0 * x
    return x


def floors_and_signs(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += np.floor(x[i]) + np.sign(x[i] - 0.5)
    return s + np.sum(np.round(3.0 * x))


def newton_root(a):
    """A solver whose iterates depend on `a` through arithmetic: differentiated as it runs."""
    x = 1.0
    for it in range(50):
        step = (x ** 3 - a) / (3.0 * x * x)
        x -= step
        if abs(step) < 1e-15:
            break
    return x


def masked_sum(x):
    """A comparison as a mask on the values themselves: differentiated (not a search)."""
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i] * (x[i] > 0.5)
    return s


def masked_by_another(x, y):
    """A mask of one array weighting another's elements: the map's choice, zero in x."""
    s = 0.0
    for i in range(x.shape[0]):
        s += y[i] * (x[i] > 0.5)
    return s


def test_piecewise_definitions_and_solvers_with_arithmetic_are_not_refused():
    x = np.array([0.2, 0.7, 0.9])
    g = check_value_and_grad(masked_sum, (x,), 0)
    np.testing.assert_array_equal(g, [0.0, 1.4, 1.8])
    assert np.array_equal(adjit.grad(masked_by_another)(x, x + 1.0), np.zeros(3))
    g = check_value_and_grad(switched, (1.5, 1.0), (0, 1))
    assert g[1] == 0.0
    x = np.random.default_rng(0).random(8) * 3.0
    assert np.array_equal(adjit.grad(floors_and_signs)(x), np.zeros(8))
    g = check_value_and_grad(newton_root, (2.0,), 0)
    assert g == pytest.approx(2.0 ** (-2.0 / 3.0) / 3.0, rel=1e-9)
    assert math.isfinite(g)


def _bisected_with_a_scale(theta):
    # theta = (a, s): a only moves the bracket, s scales the root found
    a, s = theta
    lo, hi = 0.0, 2.0
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        if mid * mid > a:
            hi = mid
        else:
            lo = mid
    return s * lo


def test_an_item_of_a_tuple_argument_decided_by_conditions_beside_another_is_said():
    # argnums takes the tuple whole: the bisected item gets the step function's zero, with a
    # warning naming it as written; the item with arithmetic gets its derivative
    with pytest.warns(adjit.AdjitWarning, match=r"item 0 of the argument 'theta' only "
                                                r"through conditions.*step function of "
                                                r"theta\[0\]"):
        g = adjit.grad(_bisected_with_a_scale)((2.0, 3.0))
    assert g[0] == 0.0
    assert g[1] == pytest.approx(math.sqrt(2.0), abs=1e-14)
