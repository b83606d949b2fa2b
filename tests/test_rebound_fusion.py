"""An array expression bound to a name that the next statement binds again from it.

numpy users write a computation in steps under one name: `r = pred - obs; r = r * r`,
`q = np.flip(beta) * sigma2[k - p:k]; q = np.nansum(q)` (statsforecast's GARCH), `y =
np.exp(x); y = y / np.sum(y)`. The first value is read only by the statement that binds the
name again, so it stays unevaluated and fuses into that statement's loop, as a name bound
once does: no temporary array, and a nan-reduction of it computes each element where it is
a number, so missing data gives a zero partial, not NaN. Each gradient is checked against
central differences of numba's compile of the function (checks.check_value_and_grad); the
forms that must not fuse (the first value read again, indexed, its arrays written between)
are checked the same way.
"""
import math

import numba
import numpy as np
import pytest

import adjit

from fd import check_value_and_grad, fd_grad


def residual_steps(pred, obs):
    r = pred - obs
    r = r * r
    return np.sum(r)


def missing_squares(pred, obs):
    r = pred - obs
    r = np.nansum(r * r)
    return r


def garch_like(beta, sigma2, p):
    """statsforecast's GARCH variance recursion, its `qsum = ...; qsum = np.nansum(qsum)`."""
    n = sigma2.shape[0]
    total = 0.0
    for k in range(p, n):
        qsum = np.flip(beta) * sigma2[k - p:k]
        qsum = np.nansum(qsum)
        total += qsum * qsum
    return total


def softmax_steps(x):
    y = np.exp(x)
    y = y / np.sum(y)
    return np.sum(y * y * np.arange(x.shape[0]))


def three_steps(x, m):
    d = x - m
    d = d * d
    d = np.sqrt(d + 1.0)
    return np.sum(d)


def written_between(x, w):
    y = x * w
    x[0] = 5.0          # the first value was computed before this write, as numpy did
    y = np.sum(y * y)
    return y + x[0] * w[0]


def reads_old_value(x, w):
    y = x * w
    y = y + 1.0          # (a name bound three times: the second reads the first)
    y = y * y + x
    return np.sum(y)


def indexed_again(x):
    y = np.sin(x)
    y = y[::2] * 2.0
    return np.sum(y * y)


def in_loop(x, w, steps):
    acc = np.zeros_like(x)
    s = 0.0
    for k in range(steps):
        s += np.sum(acc * w)        # the second binding of the iteration before
        acc = x * w + k
        acc = np.cos(acc) * 0.5
    return s + np.sum(acc)


def alias_then_new(x):
    """tests/test_views.py's keep_old_binding: u is bound to u_prev's array, then anew."""
    u_prev = x * 1.0
    u = u_prev
    u = u + 1.0
    return np.sum(u_prev * u)


def scalar_first(x):
    t = np.sum(x)
    t = t * t
    return t + np.sum(x * x)


@pytest.fixture
def rng():
    return np.random.default_rng(53)


def test_steps_under_one_name(rng):
    pred, obs = rng.normal(size=40), rng.normal(size=40)
    check_value_and_grad(residual_steps, (pred, obs), argnums=(0, 1))
    check_value_and_grad(three_steps, (pred, obs), argnums=(0, 1))
    check_value_and_grad(softmax_steps, (pred,))
    check_value_and_grad(scalar_first, (pred,))


def sum_of_steps(pred, obs):
    r = pred - obs
    r = np.sum(r * r)
    return r


def test_steps_fuse_without_a_temporary_array(rng):
    args = rng.normal(size=8), rng.normal(size=8)
    g = adjit.grad(sum_of_steps, argnums=(0, 1))
    g(*args)
    # the difference and its square are one loop's arithmetic: no array holds r
    assert "= vec.empty(" not in g.source and "= vec.zeros(" not in g.source
    # three steps, the last read by the return: the last is an array, made in one loop
    # from the steps before it
    for f, arrays in ((residual_steps, 1), (three_steps, 1)):
        g = adjit.grad(f, argnums=(0, 1))
        g(*args)
        assert g.source.count("= vec.empty(") == arrays


def test_missing_observations_give_zero_partials(rng):
    pred, obs = rng.normal(size=30), rng.normal(size=30)
    obs[[3, 11, 12]] = np.nan
    value, (gp, go) = adjit.value_and_grad(missing_squares, argnums=(0, 1))(pred, obs)
    assert value == pytest.approx(numba.njit(missing_squares)(pred, obs), rel=1e-13)
    assert np.all(np.isfinite(gp)) and np.all(gp[[3, 11, 12]] == 0.0)
    keep = ~np.isnan(obs)
    np.testing.assert_allclose(gp[keep], 2 * (pred - obs)[keep], rtol=1e-13)
    np.testing.assert_allclose(go[keep], -2 * (pred - obs)[keep], rtol=1e-13)
    np.testing.assert_allclose(gp, fd_grad(numba.njit(missing_squares), (pred, obs), 0),
                               rtol=1e-6, atol=1e-7)


def test_garch_recursion_over_variances_not_computed_yet(rng):
    p = 2
    sigma2 = rng.uniform(0.5, 2.0, size=12)
    sigma2[:p] = np.nan          # (GARCH's first variances are not computed: NaN)
    beta = np.array([0.3, 0.2])
    value, gb = adjit.value_and_grad(garch_like)(beta, sigma2, p)
    forward = numba.njit(garch_like)
    assert value == pytest.approx(forward(beta, sigma2, p), rel=1e-13)
    assert np.all(np.isfinite(gb))
    np.testing.assert_allclose(gb, fd_grad(forward, (beta, sigma2, p), 0), rtol=1e-6)


def test_forms_that_keep_the_first_array(rng):
    x, w = rng.normal(size=10), rng.normal(size=10)
    check_value_and_grad(reads_old_value, (x, w), argnums=(0, 1))
    check_value_and_grad(indexed_again, (x,))
    check_value_and_grad(in_loop, (x, w, 4), argnums=(0, 1))
    check_value_and_grad(alias_then_new, (x,))


def test_arrays_written_between_the_bindings(rng):
    x, w = rng.normal(size=6), rng.normal(size=6)
    forward = numba.njit(written_between)
    value, (gx, gw) = adjit.value_and_grad(written_between, argnums=(0, 1))(x.copy(), w)
    assert value == pytest.approx(forward(x.copy(), w), rel=1e-13)
    # by hand: y = sum((x w)^2) with x's old values, then + 5 w[0]
    want_w = 2 * x * x * w
    want_w[0] += 5.0
    want_x = 2 * x * w * w      # (x[0]'s own value is read only before the write)
    np.testing.assert_allclose(gw, want_w, rtol=1e-13)
    np.testing.assert_allclose(gx, want_x, rtol=1e-13)


def test_math_module_functions_on_the_steps(rng):
    def f(x):
        y = x * 0.5
        y = np.tanh(y) + math.pi
        return np.sum(y * x)
    check_value_and_grad(f, (rng.normal(size=9),))


# programs drawn from the forms above: a value bound under one name in steps, statements
# between the steps that write or read what the steps read, inside a loop or not, ending in
# a reduction; each checked against numba's compile and central differences
_FIRST = ["x * w", "np.sin(x) + w", "z - w * 0.5", "np.exp(-x * x) * w"]
_STEP = ["y * y", "np.cos(y) + x", "y / (1.0 + w * w)", "np.sqrt(y * y + 1.0)", "y - z",
         "np.where(y > 0.0, y, 0.1 * y)", "y * np.sum(w)"]
_BETWEEN = ["z[0] = 2.0 * w[1]", "t = t + np.sum(z)", "z = z * 0.5", "t = t + y[0]",
            "t = t + np.sum(y)", "pass"]
_REDUCE = ["np.sum(y)", "np.nansum(y * w)", "np.mean(y)", "np.max(y)", "np.sum(y[1:] * z[:-1])"]


def _drawn_program(seed):
    import random
    r = random.Random(seed)
    body = ["z = x.copy()", "t = 0.0", f"y = {r.choice(_FIRST)}"]
    for _ in range(r.randint(1, 3)):
        if r.random() < 0.3:
            body.append(r.choice(_BETWEEN))
        body.append(f"y = {r.choice(_STEP)}")
    body.append(f"t = t + {r.choice(_REDUCE)}")
    if r.random() < 0.4:
        body = ["t = 0.0", "z = x.copy()", "for k in range(2):"] + \
            ["    " + s for s in body[2:]] + ["    x = x + 0.1 * k"]
    return "def f(x, w):\n" + "".join(f"    {s}\n" for s in body) + "    return t\n"


@pytest.mark.parametrize("seed", range(24))
def test_drawn_steps(seed, tmp_path):
    import importlib.util
    text = "import numpy as np\n\n\n" + _drawn_program(seed)
    path = tmp_path / f"steps_{seed}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(f"steps_{seed}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rng = np.random.default_rng(seed)
    x, w = rng.uniform(0.2, 1.5, size=7), rng.uniform(-1.0, 1.0, size=7)
    try:
        check_value_and_grad(module.f, (x, w), argnums=(0, 1), rtol=1e-5, atol=1e-6)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{text}") from None
