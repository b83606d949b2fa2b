"""Random draws and other calls with an effect, written as numba users write them.

A draw runs once per evaluation, in program order, in the forward sweep; the backward sweep
reads what it returned and never draws again. With active parameters a draw has the pathwise
derivative of numba's transformation of its standard draw. The oracles: numba's own compiled
function (which seeds itself, so finite differences of it see the same draws) and central
finite differences of it."""
import math

import numba
import numpy as np
import pytest

import adjit
from adjit import AdjitError
from adjit.errors import ValueRefusedError

from fd import fd_grad

X = np.array([0.3, 0.7, 1.1, -0.4])


def assert_matches_numba(f, args, argnums=0, rtol=1e-5, atol=1e-6):
    """grad(f) against central differences of numba's f, value_and_grad's value against
    numba's value (the same draws: to the bit)."""
    primal = numba.njit(f)
    value, g = adjit.value_and_grad(f, argnums=argnums)(*args)
    assert value == primal(*args)
    nums = (argnums,) if isinstance(argnums, int) else argnums
    gs = (g,) if isinstance(argnums, int) else g
    for k, got in zip(nums, gs):
        np.testing.assert_allclose(got, fd_grad(primal, args, k), rtol=rtol, atol=atol,
                                   err_msg=f"d/d arg {k} of {f.__name__}")


# draws in loops: recorded, never drawn again ---------------------------------------------------

def normal_in_a_loop(x):
    np.random.seed(42)
    s = 0.0
    sigma = 0.3
    for i in range(x.size):
        e = np.random.normal(0.0, 1.0)
        y = x[i] + sigma * e
        s += y * y * math.cos(x[i])
    return s


def random_in_a_loop(x):
    np.random.seed(1)
    s = 0.0
    for i in range(x.size):
        r = np.random.random()
        s += math.sin(x[i] * r) * x[i]
    return s


def standard_normal_in_nested_loops(x):
    np.random.seed(3)
    s = 0.0
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            z = np.random.standard_normal()
            s += (x[i, j] + z) ** 2 * x[i, j]
    return s


def draws_in_a_while_loop(x):
    np.random.seed(4)
    s = 0.0
    i = 0
    while i < x.size:
        u = np.random.random()
        s += x[i] * x[i] * u + math.exp(x[i] * u)
        i += 1
    return s


def draws_thrown_away(x):
    np.random.seed(5)
    np.random.random()              # advances the generator: the next draw is another
    np.random.normal(0.0, 1.0)
    s = 0.0
    for i in range(x.size):
        s += x[i] * np.random.random() * x[i]
    return s


def draws_in_expressions_thrown_away(x):
    # expression statements whose value is dropped, with a draw inside: adjit dropped the
    # whole statement, and every later draw came from another place of the stream (the
    # program fuzzer found it: value and gradient of another realization)
    np.random.seed(283)
    (2.0 * np.random.random())
    n = x.shape[0]
    float(n) * np.random.standard_normal() + 1.0
    s = 0.0
    for i in range(n):
        -np.random.random()
        s += x[i] * x[i] * np.random.random()
    return s * np.random.random()


@numba.njit
def noise_scale(p):
    np.random.exponential(0.5 + abs(p))     # a helper's draw whose number is not used
    return 2.0 * p


def draws_thrown_away_beside_a_parallel_loop(x, sigma):
    # numba's parallel pipeline deletes a draw whose number nothing reads; the gradient,
    # compiled with parallel=True for the prange loop, must still make it
    np.random.seed(302)
    np.random.standard_normal()
    noise_scale(sigma)
    r = np.random.rayleigh(1.0)
    acc = 0.0
    for i in numba.prange(x.size):
        acc += x[i] * x[i]
    return acc * sigma + r * sigma


@pytest.mark.parametrize("f, x", [
    (normal_in_a_loop, X), (random_in_a_loop, X),
    (standard_normal_in_nested_loops, X.reshape(2, 2)), (draws_in_a_while_loop, X),
    (draws_thrown_away, X), (draws_in_expressions_thrown_away, X)],
    ids=lambda v: getattr(v, "__name__", ""))
def test_draws_in_loops(f, x):
    assert_matches_numba(f, (x,))


def test_draws_nothing_reads_are_made_beside_a_parallel_loop():
    f = draws_thrown_away_beside_a_parallel_loop
    assert_matches_numba(f, (X, 0.7), argnums=(0, 1))
    value, tangent = adjit.jvp(f, argnums=1)(X, 0.7, 1.0)
    forward = numba.njit(f)
    assert value == forward(X, 0.7)
    assert tangent == pytest.approx(fd_grad(forward, (X, 0.7), 1), rel=1e-6)


def test_a_loop_with_a_draw_is_recorded_not_computed_again():
    source = adjit.grad(normal_in_a_loop).source_for(X)
    assert "computed again" not in source
    assert source.count("np.random.standard_normal()") == 1


@numba.njit
def jitter(m):
    return np.random.normal(m, 0.1)


def draws_through_a_helper(x):
    np.random.seed(5)
    s = 0.0
    for i in range(x.size):
        s += jitter(x[i]) ** 2
    return s


def test_draw_with_an_active_parameter_in_a_helper():
    assert_matches_numba(draws_through_a_helper, (X,))


# pathwise derivatives of every location/scale family -----------------------------------------

def normal_and_uniform(p):
    np.random.seed(6)
    return np.random.normal(p[0], p[1]) * p[2] + np.random.uniform(p[0], p[1]) ** 2


def every_family(p):
    np.random.seed(3)
    s = 0.0
    for i in range(4):
        s += np.random.laplace(p[0], p[1]) ** 2
        s += np.random.triangular(p[0], p[0] + p[1], p[0] + 2 * p[1])
        s += np.random.wald(p[2], p[1]) + np.random.gumbel(p[0], p[1]) * \
            np.random.logistic(p[0], p[1])
        s += np.random.exponential(p[1]) + np.random.lognormal(p[0], p[1]) + \
            np.random.rayleigh(p[1])
        s += np.random.weibull(p[2]) + np.random.pareto(p[2]) + np.random.power(p[2])
        s += np.random.gamma(2.5, p[1]) + np.random.normal(p[0]) + \
            np.random.normal(0.0, scale=p[1]) + np.random.uniform(0.0, high=p[2])
    return s


def every_family_sized(p):
    np.random.seed(2)
    a = np.random.laplace(p[0], p[1], 6)
    b = np.random.triangular(p[0], p[0] + p[1], p[0] + 2 * p[1] + 0.5, 5)
    c = np.random.wald(p[2], p[1], (2, 2))
    d = np.random.gumbel(p[0], p[1], 3)
    e = np.random.logistic(p[0], p[1], 3)
    f = np.random.exponential(p[1], 3)
    g = np.random.lognormal(p[0], p[1], 3)
    h = np.random.rayleigh(p[1], 3)
    i = np.random.weibull(p[2], 3)
    j = np.random.pareto(p[2], 3)
    k = np.random.power(p[2], 3)
    m = np.random.gamma(2.5, p[1], 3)
    n = np.random.normal(p[0], p[1], size=(2, 3))
    o = np.random.uniform(p[0], p[1], 4)
    return np.sum(a * a) + np.sum(b) + np.sum(c) + np.sum(d * e) + \
        np.sum(f + g + h + i + j + k + m) + np.sum(np.sin(n)) + np.sum(o ** 3)


P = np.array([0.3, 0.8, 1.3])


@pytest.mark.parametrize("f", [normal_and_uniform, every_family, every_family_sized],
                         ids=lambda f: f.__name__)
def test_pathwise_derivatives(f):
    assert_matches_numba(f, (P,))


@pytest.mark.parametrize("f", [normal_and_uniform, every_family, every_family_sized],
                         ids=lambda f: f.__name__)
def test_pathwise_derivatives_in_forward_mode(f):
    v = np.array([0.2, -0.4, 0.9])
    primal = numba.njit(f)
    value, tangent = adjit.jvp(f)(P, v)
    assert value == primal(P)
    h = 1e-6
    assert tangent == pytest.approx((primal(P + h * v) - primal(P - h * v)) / (2 * h),
                                    rel=1e-5, abs=1e-6)


def test_the_size_may_be_a_name_holding_a_tuple():
    def f(p):
        np.random.seed(9)
        shape = (2, 3)
        return np.sum(np.random.normal(p[0], p[1], shape) ** 2)
    assert_matches_numba(f, (P,))


def test_second_derivative_through_draws():
    h = 1e-5
    g = adjit.grad(every_family)
    H = adjit.hessian(every_family)(P)
    for k in range(3):
        e = np.zeros(3)
        e[k] = h
        np.testing.assert_allclose(H[:, k], (g(P + e) - g(P - e)) / (2 * h), rtol=1e-4,
                                   atol=1e-5)


# parameters with no pathwise derivative --------------------------------------------------------

def gamma_shape(x):
    np.random.seed(8)
    return np.random.gamma(x[0], 2.0) + x[0]


def poisson_rate(x):
    np.random.seed(8)
    return np.random.poisson(x[0]) * 1.0 + x[0]


def beta_parameter(x):
    np.random.seed(8)
    return np.random.beta(2.0, x[0]) * x[0]


def student_df(x):
    np.random.seed(8)
    return np.sum(np.random.standard_t(x[0], 3)) + x[0]


@pytest.mark.parametrize("f, draw, param", [
    (gamma_shape, "np.random.gamma", "shape"), (poisson_rate, "np.random.poisson", "lam"),
    (beta_parameter, "np.random.beta", "b"), (student_df, "np.random.standard_t", "df")],
    ids=lambda v: getattr(v, "__name__", None) or str(v))
def test_no_pathwise_derivative_is_refused(f, draw, param):
    with pytest.raises(AdjitError, match=f"parameter `{param}` of `{draw}`"):
        adjit.grad(f)(np.array([2.5]))
    with pytest.raises(AdjitError, match=f"parameter `{param}` of `{draw}`"):
        adjit.jvp(f)(np.array([2.5]), np.array([1.0]))


# A Monte Carlo function whose argument chooses the scheme, as FinancePy's CIR paths are
# written: the exact scheme draws a noncentral chi-square whose degrees of freedom depend on
# the model's parameters, the Euler scheme draws normals only.
EULER, EXACT = 1, 2


@numba.njit
def cir_step(r, a, b, sigma, dt):
    """The exact transition: a scaled noncentral chi-square draw."""
    sigma2 = sigma * sigma
    d = 4.0 * a * b / sigma2
    c = sigma2 * (1.0 - np.exp(-a * dt)) / 4.0 / a
    ll = r * np.exp(-a * dt) / c
    z = np.random.normal()
    x = np.random.chisquare(d - 1)
    return c * (x + (z + np.sqrt(ll)) ** 2)


@numba.njit
def cir_mean_rate(r0, a, b, sigma, steps, scheme):
    np.random.seed(5)
    dt = 1.0 / steps
    r = r0
    total = 0.0
    if scheme == EULER:
        for _ in range(steps):
            r = r + a * (b - r) * dt + sigma * np.sqrt(dt * max(r, 0.0)) * np.random.normal()
            total += r
    elif scheme == EXACT:
        for _ in range(steps):
            r = cir_step(r, a, b, sigma, dt)
            total += r
    else:
        raise ValueError("unknown scheme")
    return total / steps


def test_a_draw_without_derivative_refuses_only_the_branch_that_draws_it():
    args = (0.03, 0.8, 0.05, 0.1, 50)
    g = adjit.grad(cir_mean_rate, argnums=(0, 1, 2, 3))
    got = g(*args, EULER)
    for k in range(4):
        want = fd_grad(cir_mean_rate, args + (EULER,), k)
        assert got[k] == pytest.approx(want, rel=1e-6, abs=1e-9), k
    with pytest.raises(ValueRefusedError,
                       match=r"in function 'cir_step' \(.*test_draws.py, line \d+\): a "
                       "derivative would have to flow through the parameter `df` of "
                       "`np.random.chisquare`"):
        g(*args, EXACT)
    with pytest.raises(ValueError, match="unknown scheme"):
        g(*args, 3)
    # (the rate alone carries no derivative into the draw's degrees of freedom)
    assert adjit.grad(cir_mean_rate)(*args, EXACT) == pytest.approx(
        fd_grad(cir_mean_rate, args + (EXACT,), 0), rel=1e-6)
    # forward mode refuses it as it builds
    with pytest.raises(AdjitError, match="parameter `df` of `np.random.chisquare`"):
        adjit.jvp(cir_mean_rate, argnums=1)(*args, EULER, 1.0)


def gamma_shape_stopped(x):
    np.random.seed(8)
    return np.random.gamma(adjit.stop_gradient(x[0]), x[1]) + x[0]


@numba.njit
def standard_gamma_after_seed(shape):
    np.random.seed(8)
    return np.random.standard_gamma(shape)


def test_a_stopped_parameter_is_accepted():
    # d/dx0 = 1 (the draw's shape is stopped); d/dx1 = the standard gamma draw
    x = np.array([2.5, 1.5])
    g = adjit.grad(gamma_shape_stopped)(x)
    assert g[0] == 1.0
    assert g[1] == pytest.approx(standard_gamma_after_seed(2.5), rel=1e-14)


def integer_draws_as_indices(x):
    np.random.seed(6)
    s = 0.0
    for i in range(3):
        k = np.random.randint(0, x.size)
        s += x[k] * np.random.poisson(3.0)
    p = np.random.permutation(x.size)
    return s + x[p[0]] * 2.0


def test_integer_draws_index_and_scale():
    assert_matches_numba(integer_draws_as_indices, (X,))


# time loops: recorded, never checkpointed --------------------------------------------------

def langevin(x, sigma):
    np.random.seed(4)
    y = x.copy()
    for t in range(50):
        for i in range(y.size):
            y[i] = y[i] - 0.01 * y[i] ** 3 + sigma * math.sqrt(0.01) * \
                np.random.standard_normal()
    return np.sum(y * y)


def test_time_loop_with_noise():
    assert_matches_numba(langevin, (X[:3], 0.4), (0, 1))
    auto = adjit.grad(langevin, argnums=(0, 1), checkpoint="auto")(X[:3], 0.4)
    recorded = adjit.grad(langevin, argnums=(0, 1))(X[:3], 0.4)
    assert np.array_equal(auto[0], recorded[0]) and auto[1] == recorded[1]


def test_checkpointing_a_loop_with_draws_is_refused():
    with pytest.raises(AdjitError, match="checkpointing a loop that makes a call which must "
                       "run once .a random draw"):
        adjit.grad(langevin, argnums=(0, 1), checkpoint=5)(X[:3], 0.4)


@numba.njit(parallel=True)
def parallel_draws(x):
    s = 0.0
    for i in numba.prange(x.size):
        s += x[i] * np.random.random()
    return s


def test_parallel_loop_with_draws_runs_serially_and_reads_its_draws():
    # numba's prange draws from per-thread generators, so no seed reproduces them; the
    # gradient's own value and gradient must agree: d/dx_i (sum x_i u_i) = u_i
    x = np.ones(6)
    value, g = adjit.value_and_grad(parallel_draws)(x)
    assert value == pytest.approx(np.sum(g), rel=1e-14)
    assert np.all((g >= 0.0) & (g < 1.0))
    assert "runs serially: its iterations make a call that must run once" in \
        adjit.grad(parallel_draws).source_for(x)


def burn_in_in_parallel_then_draw(x, sigma):
    # a prange loop whose draws carry no derivative (never recorded), then a draw whose
    # scale does: in numba's serial compile the loop draws on the one generator, in order
    np.random.seed(765)
    burned = 0.0
    for i in numba.prange(16):
        burned += math.floor(np.random.random())
    return burned + np.sum(x * x) * np.random.lognormal(0.0, sigma)


def test_a_parallel_loop_that_draws_runs_in_order_even_where_nothing_is_recorded():
    # numba's threads draw from generators of their own: a prange loop kept parallel would
    # leave the generator elsewhere, and the lognormal draw after it would differ
    f = burn_in_in_parallel_then_draw
    assert_matches_numba(f, (X, 0.4), argnums=(0, 1))
    assert "runs serially: its iterations make a call that must run once, in order" in \
        adjit.grad(f, argnums=1).source_for(X, 0.4)


# other effects ---------------------------------------------------------------------------------

def prints_each_step(x):
    s = 0.0
    for i in range(x.size):
        print(i)
        s += x[i] * x[i]
    return s


def test_print_runs_once_per_evaluation(capfd):
    g = adjit.grad(prints_each_step)
    g(X)
    capfd.readouterr()
    np.testing.assert_allclose(g(X), 2 * X, rtol=1e-14)
    printed = capfd.readouterr().out.split()
    assert printed == [str(i) for i in range(X.size)]


def discounted_with_a_debug_print(rate, times):
    """FinancePy's risky PV01: a debug print of the float arrays it reads, the flag off."""
    debug = False
    if debug:
        print("times", times)
    s = 0.0
    for i in range(times.shape[0]):
        s += np.exp(-rate * times[i])
    return s


def prints_float_arrays(rate, times):
    grown = times * rate
    print("grown", grown, rate)
    return np.sum(grown * grown)


def test_print_of_float_arrays_reads_them(capfd):
    times = np.array([0.5, 1.0, 1.5, 2.0])
    for f in (discounted_with_a_debug_print, prints_float_arrays):
        value, g = adjit.value_and_grad(f, argnums=(0, 1))(0.03, times)
        forward = numba.njit(f)
        assert value == forward(0.03, times)
        for k in (0, 1):
            np.testing.assert_allclose(g[k], fd_grad(forward, [0.03, times], k),
                                       rtol=1e-6)
    capfd.readouterr()
    adjit.grad(prints_float_arrays)(0.03, times)
    assert capfd.readouterr().out.split() == ["grown", "[0.015", "0.03", "0.045", "0.06", "]",
                                              "0.03"]


@numba.njit
def _quasi_normals(n, d):
    return np.ones((n, d)) * 0.1 + np.arange(n).reshape(n, 1) * (0.8 / n)


def call_price_either_draws(spot, n, seed, use_quasi):
    """FinancePy's Black-Scholes Monte Carlo: the normals drawn, or taken from a quasi-random
    sequence, on the two paths of an `if`."""
    np.random.seed(seed)
    if use_quasi == 1:
        g = _quasi_normals(n, 1)[:, 0].copy()
    else:
        g = np.random.standard_normal(n)
    return np.mean(np.maximum(spot * np.exp(0.2 * g) - 100.0, 0.0))


def two_draws_on_two_paths(scale, n, seed, antithetic):
    np.random.seed(seed)
    if antithetic == 1:
        g = np.random.normal(0.0, scale, n) * 0.5
    else:
        g = np.random.normal(0.0, scale, n)
    return np.sum(g * g)


@pytest.mark.parametrize("f", [call_price_either_draws, two_draws_on_two_paths])
def test_arrays_drawn_on_the_paths_of_an_if(f):
    for flag in (0, 1):
        args = [101.0 if f is call_price_either_draws else 0.7, 200, 3, flag]
        value, g = adjit.value_and_grad(f)(*args)
        forward = numba.njit(f)
        assert value == forward(*args)
        np.testing.assert_allclose(g, fd_grad(forward, args, 0), rtol=1e-6)


def test_the_registry_says_which_calls_have_an_effect():
    from adjit.analysis import effects
    assert effects.of_object(np.random.normal)
    assert effects.of_object(np.random.seed)
    assert effects.of_object(print)
    assert effects.of_object(np.random.shuffle)       # no entry: numpy.random's
    assert effects.of_object(math.sin) is None
    assert effects.of_object(np.searchsorted) is None
    assert effects.of_object(len) is None


def test_which_arguments_numpy_writes_into():
    """rules/effects.py written_arguments: numpy's outputs by position and by keyword."""
    from adjit.rules.effects import written_arguments
    assert written_arguments(np.add, ["a", "b", "c"], []) == ["c"]
    assert written_arguments(np.modf, ["a", "b", "c"], []) == ["b", "c"]
    assert written_arguments(np.dot, ["a", "x", "y"], []) == ["y"]
    assert written_arguments(np.clip, ["a", 0.0, 1.0, "b"], []) == ["b"]
    assert written_arguments(np.cumsum, ["a"], [("out", "b")]) == ["b"]
    assert written_arguments(np.copyto, ["a", "b"], []) == ["a", "b"]
    assert written_arguments(np.einsum, ["ij,j", "A", "x"], []) == []   # (*operands)
    assert written_arguments(np.sum, ["a", 0], []) == []
    assert written_arguments(np.nan_to_num, ["a"], [("copy", False)]) is None


@pytest.mark.parametrize("call, only", [
    ("np.sqrt(x)", True), ("np.add(a, b)", True), ("vmath.exp(x)", True),
    ("math.sin(x)", True), ("len(a)", True), ("min(i, n)", True), ("np.uint64(i)", True),
    ("np.add(a, b, c)", False), ("np.add(a, b, out=c)", False),
    ("np.clip(a, 0.0, 1.0, b)", False), ("np.copyto(a, b)", False),
    ("np.random.normal()", False), ("print(x)", False), ("vec.zeros(n)", False),
    ("np.no_such_function(x)", False)])
def test_calls_that_only_compute_a_value(call, only):
    """What passes that move generated statements ask of a call (reverse/ascending.py,
    reverse/fusion.py): one predicate, one list."""
    import ast
    from adjit.analysis import effects
    assert effects.computes_only(ast.parse(call, mode="eval").body) is only


def generator_object(x):
    rng = np.random.default_rng(0)
    return x[0] * rng.normal()


def test_a_generator_object_is_refused_with_what_to_write():
    with pytest.raises(AdjitError, match="np.random.default_rng` that adjit has no derivative rule "
                       "for.*is not differentiated: makes a numpy Generator object.*"
                       "np.random.seed"):
        adjit.grad(generator_object)(X)


# derivatives made of many passes: each pass draws what one evaluation draws ----------------

@numba.njit
def seed_numba(s):
    np.random.seed(s)


@numba.njit
def uniforms(n):
    return np.random.random(n)


def unseeded_draws(x):
    y = np.empty(3)
    for i in range(3):
        y[i] = x[i] * np.random.random() + x[0] * np.random.random()
    return y


def unseeded_energy(x):
    return np.sum(x * x) * np.random.random()


@pytest.mark.parametrize("how", ["jacobian", "jacfwd", "jacrev"])
def test_a_jacobian_sees_the_draws_of_one_evaluation(how):
    x = np.array([0.5, -1.0, 2.0])
    seed_numba(11)
    J = getattr(adjit, how)(unseeded_draws)(x)
    after = uniforms(2)
    seed_numba(11)
    u = uniforms(8)
    expected = np.diag(u[0:6:2])
    expected[:, 0] += u[1:6:2]
    np.testing.assert_allclose(J, expected, rtol=1e-15)
    # and the generator is left where one evaluation leaves it
    np.testing.assert_array_equal(after, u[6:8])


def test_a_hessian_sees_the_draws_of_one_evaluation():
    x = np.array([0.5, -1.0, 2.0])
    seed_numba(5)
    H = adjit.hessian(unseeded_energy)(x)
    seed_numba(5)
    np.testing.assert_allclose(H, 2.0 * uniforms(1)[0] * np.eye(3), rtol=1e-15)


def _burn_then_draw(x):
    np.random.seed(3)
    np.random.standard_normal()             # a draw burnt: its value unused
    return x * x + np.random.random()


def _burn_beside_a_closure(x):
    np.random.seed(3)
    np.random.standard_normal()
    sq = lambda t: t * t                    # noqa: E731 - numba inlines it, then deletes the
    return sq(x) + np.random.random()       # unused draw


def _burn_in_an_expression_beside_a_closure(x):
    np.random.seed(3)
    (2.0 * np.random.standard_normal())     # numba deletes the product, then the draw
    sq = lambda t: t * t                    # noqa: E731
    return sq(x) + np.random.random()


def _used_beside_a_closure(x):
    np.random.seed(3)
    u = np.random.standard_normal()
    sq = lambda t: t * t                    # noqa: E731
    return sq(x) + np.random.random() * u


def test_an_unused_draw_is_kept_where_numba_keeps_it_and_refused_where_numba_deletes_it():
    """numba's dead-code elimination deletes an np.random call whose value is unused, and it
    runs on a function where numba inlines a closure (a lambda, a nested def) or bool():
    there numba's draws differ from Python's. Elsewhere the
    unused draw is made, as in Python and numba; there it is refused by name."""
    value, g = adjit.value_and_grad(_burn_then_draw)(1.5)
    assert value == numba.njit(_burn_then_draw)(1.5) and g == 3.0
    with pytest.raises(adjit.AdjitError, match=r"draw whose value is not used "
                       r"\(`np.random.standard_normal\(\)`\) in a function with a closure"):
        adjit.grad(_burn_beside_a_closure)(1.5)
    with pytest.raises(adjit.AdjitError, match=r"draw whose value is not used "
                       r"\(`np.random.standard_normal\(\)`\) in a function with a closure"):
        adjit.grad(_burn_in_an_expression_beside_a_closure)(1.5)
    value, g = adjit.value_and_grad(_used_beside_a_closure)(1.5)
    assert value == pytest.approx(numba.njit(_used_beside_a_closure)(1.5), rel=1e-15) and g == 3.0


@numba.njit(parallel=True)
def _burn_in_parallel(x):
    np.random.seed(3)
    np.random.standard_normal()             # numba's parallel passes delete it
    return x * x + np.random.random()


def test_an_unused_draw_in_a_parallel_function_is_refused():
    with pytest.raises(adjit.AdjitError, match=r"draw whose value is not used .* in a "
                       r"function with parallel=True"):
        adjit.grad(_burn_in_parallel)(1.5)


def lstsq_of_a_draw(x):
    np.random.seed(9999)
    v = np.linalg.lstsq(np.eye(2), x[:2] * np.random.randint(1, 4))[0]
    return v[0] * x[2] + np.random.uniform(x[3], 0.5)


def test_an_argument_that_draws_is_drawn_once_by_a_lowering_that_calls_twice():
    # np.linalg.lstsq(a, b)[0] is two calls (the solution, differentiated, and numba's
    # whole result): b was evaluated for each, so the uniform draw came from another
    # state of the generator (found by the program fuzzer)
    assert_matches_numba(lstsq_of_a_draw, (X,))


@numba.njit
def _seed(s):
    np.random.seed(s)


def permuted_weights(x, a):
    b = np.random.permutation(a)
    return np.sum(x * b)


def test_a_draw_of_an_array_is_not_made_to_see_what_it_returns():
    """np.random.permutation(a) was called on a trial array when adjit compiled the gradient
    (to see whether its result is a view of `a`), which advanced numba's generator: the
    gradient then saw the next permutation, not numba's (value 54 against 48 here)."""
    x = np.array([1.0, 2.0, 3.0, 4.0])
    a = np.array([1.0, 5.0, 7.0, 11.0])
    _seed(1)
    want = numba.njit(permuted_weights)(x, a)
    _seed(1)
    expected_b = numba.njit(lambda a: np.random.permutation(a))(a)
    _seed(1)
    value, g = adjit.value_and_grad(permuted_weights, argnums=0)(x, a)
    assert value == want
    np.testing.assert_array_equal(g, expected_b)
