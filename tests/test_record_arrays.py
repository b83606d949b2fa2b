"""Record arrays (numpy structured arrays) as numba code reads them: `data[i].x`,
`data[i]['x']`, `data.x`, `data['x']`, passed whole to helpers. The gradient with respect to
a record array is an array of the same dtype holding each float field's partials (0 in
integer fields). Each case against numba's compile of the same function (value) and central
differences of it (every float field)."""
import warnings

import numpy as np
import pytest
from numba import jit, njit

import adjit
from fd import check_value_and_grad, fd_grad

PARTICLE = np.dtype([("x", np.float64), ("y", np.float64), ("vx", np.float64),
                     ("vy", np.float64), ("m", np.float64)])
POINT = np.dtype([("x", np.double), ("y", np.double)])


def _particles(n=5, seed=0):
    rng = np.random.default_rng(seed)
    p = np.zeros(n, PARTICLE)
    for f in PARTICLE.names:
        p[f] = rng.random(n) + (np.arange(n) if f in ("x", "y") else 0.5)
    return p


def _assert_fields_close(got, want, rtol=1e-6, atol=1e-8):
    assert got.dtype == want.dtype and got.shape == want.shape
    for f in want.dtype.names:
        np.testing.assert_allclose(got[f], want[f], rtol=rtol, atol=atol, err_msg=f)


# the numba team's structures example (numba-examples, legacy/structures.py), as it is
# written there: @jit, element records read by attribute, np.empty_like with a dtype
@jit
def hypot(data):
    result = np.empty_like(data, dtype=np.float64)
    for i in range(data.shape[0]):
        result[i] = np.sqrt(data[i].x * data[i].x + data[i].y * data[i].y)
    return result


def weighted_hypot(data, w):
    return np.sum(hypot(data) * w)


def test_the_numba_structures_example_as_written():
    a = np.array([(1.0, 2.0), (3.0, 4.0), (-0.5, 1.5)], dtype=POINT)
    w = np.array([0.5, 2.0, -1.0])
    before = a.copy()
    value, (ga, gw) = adjit.value_and_grad(weighted_hypot, argnums=(0, 1))(a, w)
    assert value == pytest.approx(njit(weighted_hypot)(a, w), rel=1e-14)
    r = np.hypot(a["x"], a["y"])
    np.testing.assert_allclose(ga["x"], w * a["x"] / r, rtol=1e-14)    # d r / dx = x / r
    np.testing.assert_allclose(ga["y"], w * a["y"] / r, rtol=1e-14)
    np.testing.assert_allclose(gw, r, rtol=1e-14)
    _assert_fields_close(ga, fd_grad(njit(weighted_hypot), (a, w), 0))
    assert (a == before).all()                      # nothing the user passed is changed


@njit
def energy(p):
    """Kinetic and gravitational energy of particles held as records."""
    e = 0.0
    for i in range(len(p)):
        e += 0.5 * p[i].m * (p[i].vx ** 2 + p[i]["vy"] ** 2)
    for i in range(p.shape[0]):
        for j in range(i + 1, p.shape[0]):
            dx = p[i].x - p[j].x
            dy = p[i].y - p[j].y
            e -= p[i].m * p[j].m / np.sqrt(dx * dx + dy * dy)
    return e


def test_particles_as_records_match_finite_differences():
    p = _particles()
    g = adjit.grad(energy)(p)
    assert g.dtype == PARTICLE
    np.testing.assert_allclose(g["vx"], p["m"] * p["vx"], rtol=1e-14)
    _assert_fields_close(g, fd_grad(energy, (p,), 0))


def test_jvp_of_records_is_the_gradient_along_the_tangent():
    p = _particles(seed=1)
    t = np.zeros_like(p)
    for k, f in enumerate(PARTICLE.names):
        t[f] = np.linspace(-1.0, 1.0, p.shape[0]) * (k + 1)
    g = adjit.grad(energy)(p)
    value, tangent = adjit.jvp(energy)(p, t)
    assert value == pytest.approx(energy(p), rel=1e-14)
    assert tangent == pytest.approx(sum(np.sum(g[f] * t[f]) for f in PARTICLE.names),
                                    rel=1e-12)
    _, vjp = adjit.vjp(energy)(p, 2.0)
    _assert_fields_close(vjp, np.array(2.0 * g.view(np.float64)).view(PARTICLE), rtol=1e-14)


def whole_fields(data, w):
    return np.sum(data["x"] * data.y * w) + np.sum(np.sin(data.vx)) + data.m[0]


def test_fields_as_arrays_in_vectorized_code():
    p = _particles(seed=2)
    w = np.linspace(0.5, 1.5, p.shape[0])
    value, (gp, gw) = adjit.value_and_grad(whole_fields, argnums=(0, 1))(p, w)
    assert value == pytest.approx(njit(whole_fields)(p, w), rel=1e-14)
    np.testing.assert_allclose(gp["x"], p["y"] * w, rtol=1e-15)
    np.testing.assert_allclose(gp["vx"], np.cos(p["vx"]), rtol=1e-15)
    np.testing.assert_array_equal(gp["m"], [1.0, 0.0, 0.0, 0.0, 0.0])
    np.testing.assert_allclose(gw, p["x"] * p["y"], rtol=1e-15)


def drift(p, dt):
    q = np.empty_like(p, dtype=np.float64)
    for i in range(p.shape[0]):
        q[i] = p[i].x + dt * p[i].vx
    return np.sum(q ** 2)


def test_a_helper_given_records_and_a_scalar():
    p = _particles(seed=3)
    gp, gdt = adjit.grad(drift, argnums=(0, 1))(p, 0.1)
    _assert_fields_close(gp, fd_grad(njit(drift), (p, 0.1), 0))
    assert gdt == pytest.approx(fd_grad(njit(drift), (p, 0.1), 1), rel=1e-7)


def scale_in_place(d, s):
    for i in range(d.shape[0]):
        d[i].x = s * d[i].y
    return np.sum(d.x ** 2)


def test_writes_into_fields_reach_the_users_array_as_numbas_do():
    a = np.array([(1.0, 2.0), (3.0, 4.0), (0.5, -1.0)], dtype=POINT)
    mine, theirs = a.copy(), a.copy()
    g = adjit.grad(scale_in_place, argnums=1)(mine, 2.0)
    assert g == pytest.approx(2.0 * 2.0 * np.sum(a["y"] ** 2), rel=1e-15)
    njit(scale_in_place)(theirs, 2.0)
    np.testing.assert_array_equal(mine, theirs)


def grid_energy(d):
    s = 0.0
    for i in range(d.shape[0]):
        for j in range(d.shape[1]):
            s += d[i, j].x ** 2 * d[i, j]["y"]
    return s


@pytest.mark.parametrize("view", ["whole", "strided"])
def test_two_dimensional_and_strided_record_arrays(view):
    g2 = np.zeros((3, 4), POINT)
    g2["x"] = np.arange(12.0).reshape(3, 4) / 7.0
    g2["y"] = np.linspace(-1.0, 2.0, 12).reshape(3, 4)
    d = g2 if view == "whole" else g2[::2, 1:]
    g = adjit.grad(grid_energy)(d)
    np.testing.assert_allclose(g["x"], 2.0 * d["x"] * d["y"], rtol=1e-15)
    np.testing.assert_allclose(g["y"], d["x"] ** 2, rtol=1e-15)


def counted(d, s):
    t = 0.0
    for i in range(d.shape[0]):
        t += d[i].x * d[i].n * s
    return t


def test_integer_fields_are_read_and_get_zero_gradients():
    counts = np.dtype([("x", np.float64), ("n", np.int64)])
    d = np.zeros(3, counts)
    d["x"] = [1.0, 2.0, 3.0]
    d["n"] = [1, 0, 2]
    gd, gs = adjit.grad(counted, argnums=(0, 1))(d, 2.0)
    np.testing.assert_array_equal(gd["x"], [2.0, 0.0, 4.0])
    np.testing.assert_array_equal(gd["n"], [0, 0, 0])
    assert gs == 7.0


def product(d):
    return np.sum(d.x * d.y)


def test_float32_fields_of_a_packed_dtype():
    packed = np.dtype([("x", np.float64), ("y", np.float32)])
    c = np.zeros(3, packed)
    c["x"] = [1.0, 2.0, 3.0]
    c["y"] = [0.5, 1.5, 2.5]
    g = adjit.grad(product)(c)
    assert g.dtype == packed
    np.testing.assert_array_equal(g["x"], c["y"].astype(np.float64))
    np.testing.assert_array_equal(g["y"], c["x"].astype(np.float32))


def _record_local(d):
    s = 0.0
    for i in range(d.shape[0]):
        r = d[i]
        s += r.x * r.y
    return s


def _loop_over_records(d):
    s = 0.0
    for r in d:
        s += r.x
    return s


def _no_such_field(d):
    return np.sum(d.z)


def _whole_array(d):
    return np.sum(d)


def _like_without_dtype(d):
    return np.sum(np.zeros_like(d))


@pytest.mark.parametrize("fn, message", [
    (_record_local, r"the record array `d` used as a whole \(`d\[i\]`\).*data\[i\]\.x"),
    (_loop_over_records, r"the record array `d` used as a whole \(`d`\)"),
    (_no_such_field, r"the field `z` of the record array `d`, which has the fields x, y"),
    (_whole_array, r"used as a whole \(`np.sum\(d\)`\)"),
    (_like_without_dtype, r"np.zeros_like of the record array `d` without a dtype.*"
                          r"dtype=np.float64"),
])
def test_what_adjit_does_not_read_is_refused_with_what_to_write(fn, message):
    a = np.array([(1.0, 2.0), (3.0, 4.0)], dtype=POINT)
    with pytest.raises(adjit.AdjitError, match=message):
        adjit.grad(fn)(a)


def record_and_tuple(d, p):
    return np.sum(d.x * d.y) * p[0] + p[1]


def test_record_arrays_where_they_are_not_taken_are_refused():
    a = np.array([(1.0, 2.0), (3.0, 4.0)], dtype=POINT)
    with pytest.raises(adjit.AdjitError, match="record array, which hessian does not take"):
        adjit.hessian(product)(a)
    hvp = adjit.hvp(product)
    inside = njit(lambda d, v: hvp(d, v))
    with pytest.raises(Exception, match="record array, which hvp does not take"):
        inside(a, a)
    nested = np.zeros(2, np.dtype([("x", np.float64), ("v", np.float64, (3,))]))
    with pytest.raises(adjit.AdjitError, match=r"fields that are not numbers: v"):
        adjit.grad(product)(nested)
    g = adjit.grad(record_and_tuple, argnums=(0, 1))

    @njit
    def caller(d, s):
        return g(d, (s, s))
    with pytest.raises(Exception, match="both tuple and record-array arguments called from "
                                        "@njit code"):
        caller(a, 1.0)


@njit
def scaled_by_a_record(params, x):
    """RRMPG's models take one record of the parameter array (`run_gr4j(..., params[i])`)."""
    return params['x'] * x + params['y']


def test_a_record_passed_alone():
    """A record (an np.void, `a[1]`) as the differentiated function's own argument: read as
    numba reads it (`params['x']`, `params.x`), its gradient a record of its dtype (it was
    refused: a record passed alone)."""
    a = np.array([(1.0, 2.0), (3.0, 4.0)], dtype=POINT)
    before = a.copy()
    g = adjit.grad(scaled_by_a_record, argnums=0)(a[1], 1.5)
    assert isinstance(g, np.void) and g.dtype == POINT
    assert g['x'] == 1.5 and g['y'] == 1.0
    value, (gp, gx) = adjit.value_and_grad(scaled_by_a_record, argnums=(0, 1))(a[1], 1.5)
    assert value == scaled_by_a_record(a[1], 1.5) and gx == 3.0 and gp == g
    assert adjit.grad(scaled_by_a_record, argnums=1)(a[0], 1.5) == 1.0
    np.testing.assert_array_equal(a, before)
    # outside argnums the other derivatives read it so too; in argnums they refuse it,
    # saying what works
    value, tangent = adjit.jvp(scaled_by_a_record, argnums=1)(a[1], 1.5, 1.0)
    assert value == scaled_by_a_record(a[1], 1.5) and tangent == 3.0
    with pytest.raises(adjit.AdjitError, match=r"argument 'params' is a record \(one "
                                               r"element of a numpy structured array.*"
                                               r"grad and value_and_grad called from Python"):
        adjit.jvp(scaled_by_a_record, argnums=0)(a[1], 1.5, a[0])


def test_rrmpg_abc_model_of_one_record_of_parameters():
    """RRMPG's run_abcmodel as published, its loss of one record of the parameter array
    differentiated in that record."""
    rng = np.random.default_rng(5)
    prec, qobs = rng.gamma(0.6, 6.0, 60), rng.gamma(1.0, 1.0, 60)
    params = np.array([(0.3, 0.2, 0.15, 3)], dtype=ABC)

    def loss(p, prec, qobs):
        qsim, _ = run_abc(prec, 5.0, p)
        return np.sum((qsim - qobs) ** 2)
    g = adjit.grad(loss)(params[0], prec, qobs)
    assert g.dtype == ABC and g['n'] == 0
    for field in ("a", "b", "c"):
        def by_field(v, field=field):
            p = params.copy()
            p[field][0] = v
            return njit(loss)(p[0], prec, qobs)
        want = (by_field(params[field][0] + 1e-6) - by_field(params[field][0] - 1e-6)) / 2e-6
        assert g[field] == pytest.approx(want, rel=1e-6)


# derivatives of functions of record arrays called from @njit code: forces from the energy's
# gradient inside a velocity-Verlet loop written in numba, as a particle code holds its state
energy_grad = adjit.grad(energy)


@njit
def verlet(p, dt, steps):
    """Move the particles by the forces -dE/d(x, y), the velocities by half steps."""
    p = p.copy()
    for _ in range(steps):
        g = energy_grad(p)
        for i in range(p.shape[0]):
            p[i].vx -= 0.5 * dt * g[i].x / p[i].m
            p[i].vy -= 0.5 * dt * g[i].y / p[i].m
            p[i].x += dt * p[i].vx
            p[i].y += dt * p[i].vy
        g = energy_grad(p)
        for i in range(p.shape[0]):
            p[i].vx -= 0.5 * dt * g[i].x / p[i].m
            p[i].vy -= 0.5 * dt * g[i].y / p[i].m
    return p


def test_forces_of_record_particles_from_njit_code():
    p = _particles(seed=2)
    p["vx"] *= 0.01
    p["vy"] *= 0.01
    # one half kick in numba with the gradient adjit gives from Python
    g = energy_grad(p)
    moved = verlet(p, 1e-3, 1)
    want = p.copy()
    want["vx"] -= 0.5e-3 * g["x"] / p["m"]
    want["vy"] -= 0.5e-3 * g["y"] / p["m"]
    want["x"] += 1e-3 * want["vx"]
    np.testing.assert_array_equal(moved["x"], want["x"])
    # energy is kept by the integrator: the forces are the energy's
    e0 = energy(p)
    later = verlet(p, 1e-4, 200)
    assert abs(energy(later) - e0) < 1e-6 * abs(e0)


energy_value_and_grad = adjit.value_and_grad(energy)
counted_vjp = adjit.vjp(counted, argnums=(0, 1))
energy_jvp = adjit.jvp(energy)
weighted_jvp = adjit.jvp(weighted_hypot, argnums=(0, 1))


@njit
def each_mode(p, t, d, data, w, td, tw):
    return (energy_value_and_grad(p), energy_jvp(p, t), counted_vjp(d, 2.0, 3.0),
            weighted_jvp(data, w, (td, tw)))


def test_each_mode_from_njit_code_as_from_python():
    p, d = _particles(seed=3), np.zeros(3, np.dtype([("x", np.float64), ("n", np.int64)]))
    d["x"], d["n"] = [1.0, 2.0, 3.0], [1, 0, 2]
    t = _particles(seed=4)
    data = np.array([(1.0, 2.0), (3.0, 4.0), (-0.5, 1.5)], dtype=POINT)
    w = np.array([0.5, 2.0, -1.0])
    td = np.array([(1.0, 0.0), (0.0, 1.0), (1.0, 1.0)], dtype=POINT)
    tw = np.array([1.0, -1.0, 0.5])
    got = each_mode(p, t, d, data, w, td, tw)
    want = (energy_value_and_grad(p), energy_jvp(p, t), counted_vjp(d, 2.0, 3.0),
            weighted_jvp(data, w, (td, tw)))
    (v, g), (v2, t2), (v3, (gd, gs)), (v4, t4) = got
    assert v == want[0][0] and g.dtype == PARTICLE
    np.testing.assert_array_equal(g, want[0][1])
    assert (v2, t2) == want[1] and (v4, t4) == want[3]
    assert v3 == want[2][0] and gs == want[2][1][1] and gd.dtype == d.dtype
    np.testing.assert_array_equal(gd, want[2][1][0])
    np.testing.assert_array_equal(gd["n"], [0, 0, 0])
    _assert_fields_close(g, fd_grad(energy, (p,), 0))


def test_a_tangent_that_is_not_a_record_array_of_the_dtype_is_refused():
    # (numpy raised IndexError or "no field of name y" from Python; from @njit code numba's
    # typing error)
    a = np.array([(1.0, 2.0), (3.0, 4.0)], dtype=POINT)
    other = np.zeros(2, np.dtype([("x", np.float64), ("z", np.float64)]))
    j = adjit.jvp(product)

    @njit
    def caller(d, t):
        return j(d, t)

    for t, said in [(np.ones(2), "an array of float64"), (other, r"an array of \[\('x'")]:
        with pytest.raises(adjit.AdjitError, match=f"in function 'product' .*the tangent of d "
                                                   f"is {said}.* where d is a record array"):
            j(a, t)
        with pytest.raises(Exception, match="the tangent of d is .* where d is a record array "
                                            "of dtype"):
            caller(a, t)
    t = np.zeros_like(a)
    t["x"] = 1.0
    assert caller(a, t) == j(a, t) == (njit(product)(a), 2.0 + 4.0)


def test_argnums_out_of_parameter_order_with_a_record_array():
    # argnums=(1, 0): the gradients in argnums order (the split function returned them in
    # parameter order: w got the record array's fields' gradients)
    a = np.array([(1.0, 2.0), (3.0, 4.0), (-0.5, 1.5)], dtype=POINT)
    w = np.array([0.5, 2.0, -1.0])
    gw, ga = adjit.grad(weighted_hypot, argnums=(1, 0))(a, w)
    ga2, gw2 = adjit.grad(weighted_hypot, argnums=(0, 1))(a, w)
    np.testing.assert_allclose(gw, np.hypot(a["x"], a["y"]), rtol=1e-14)
    np.testing.assert_array_equal(gw, gw2)
    np.testing.assert_array_equal(ga, ga2)
    t = np.zeros_like(a)
    t["x"] = 1.0
    _, tangent = adjit.jvp(weighted_hypot, argnums=(1, 0))(a, w, (np.ones(3), t))
    assert tangent == pytest.approx(np.sum(gw) + np.sum(ga["x"]), rel=1e-12)


def test_record_arrays_of_another_dtype_read_only_and_one_float_field():
    # a second call with another dtype gets its own derivative (the one kept for the last
    # call's Python types was reused: the gradient had the first dtype's fields)
    g = adjit.grad(counted, argnums=0)
    d = np.zeros(2, np.dtype([("x", np.float64), ("n", np.int64)]))
    d["x"], d["n"] = [1.0, 2.0], [3, 4]
    d2 = np.zeros(2, np.dtype([("x", np.float64), ("n", np.int64), ("z", np.float64)]))
    d2["x"], d2["n"] = [1.0, 2.0], [3, 4]
    assert g(d, 2.0).dtype == d.dtype and g(d2, 2.0).dtype == d2.dtype
    np.testing.assert_array_equal(g(d2, 2.0)["x"], [6.0, 8.0])
    # a read-only record array (its fields are read-only views)
    d.flags.writeable = False
    np.testing.assert_array_equal(g(d, 2.0)["x"], [6.0, 8.0])
    # jvp in an int argnums of a record array with one float field: its one tangent
    _, t = adjit.jvp(counted)(d, 2.0, np.ones(2, d.dtype))
    assert t == 2.0 * (3 + 4)
    j = adjit.jvp(counted)

    @njit
    def caller(d, s, t):
        return j(d, s, t)

    assert caller(d, 2.0, np.ones(2, d.dtype))[1] == t


# one record of a record array passed to a helper, as RRMPG's models take their parameters
# (`run_abcmodel(prec, initial_state, params[i])`, reading `params['a']`)
ABC = np.dtype([("a", np.float64), ("b", np.float64), ("c", np.float64), ("n", np.int64)])


@njit
def run_abc(prec, initial_state, params):
    """The ABC rainfall-runoff model as RRMPG's abcmodel_model.py writes it."""
    num_timesteps = len(prec)
    a = params['a']
    b = params['b']
    c = params['c']
    qsim = np.zeros(num_timesteps, np.float64)
    storage = np.zeros(num_timesteps, np.float64)
    storage[0] = initial_state
    for t in range(1, num_timesteps):
        qsim[t] = (1 - a - b) * prec[t] + c * storage[t - 1]
        storage[t] = (1 - c) * storage[t - 1] + a * prec[t]
    return qsim, storage


@njit
def repeated(params, x):
    s = 0.0
    for k in range(params.n):
        s += params.a * x ** k + params['b']
    return s


def abc_loss(params, prec, qobs):
    qsim, _ = run_abc(prec, 5.0, params[0])
    return np.sum((qsim - qobs) ** 2) + repeated(params[1], qobs[2]) * repeated(params[0], 0.5)


def test_one_record_passed_to_a_helper():
    rng = np.random.default_rng(4)
    prec = rng.gamma(0.6, 6.0, 60)
    qobs = rng.gamma(1.0, 1.0, 60)
    params = np.array([(0.3, 0.2, 0.15, 3), (0.5, 0.1, 0.4, 2)], dtype=ABC)
    before = params.copy()
    value, (g, g_prec) = adjit.value_and_grad(abc_loss, argnums=(0, 1))(params, prec, qobs)
    assert value == pytest.approx(njit(abc_loss)(params, prec, qobs), rel=1e-13)
    assert g.dtype == ABC and g.shape == (2,)
    for field in ("a", "b", "c"):
        for i in range(2):
            def by_element(v, field=field, i=i):
                p = params.copy()
                p[field][i] = v
                return njit(abc_loss)(p, prec, qobs)
            h = 1e-6 * max(1.0, abs(params[field][i]))
            fd = (by_element(params[field][i] + h) - by_element(params[field][i] - h)) / (2 * h)
            assert g[field][i] == pytest.approx(fd, rel=1e-6), (field, i)
    assert np.all(g["n"] == 0)
    np.testing.assert_allclose(g_prec, fd_grad(njit(abc_loss), (params, prec, qobs), 1),
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(params, before)


@njit
def writes_its_record(params, x):
    params['a'] = 2.0 * x
    return params['a']


@njit
def reads_a_missing_field(params, x):
    return params['z'] * x


def first_record_written(p, x):
    return writes_its_record(p[0], x)


def first_record_missing_field(p, x):
    return reads_a_missing_field(p[0], x)


def test_a_record_passed_to_a_helper_is_read_only():
    params = np.array([(0.3, 0.2, 0.15, 3)], dtype=ABC)
    with pytest.raises(adjit.AdjitError, match=r"writing into `params`, a tuple \(or a record "
                                               r"passed to a helper"):
        adjit.grad(first_record_written, argnums=1)(params, 1.5)
    with pytest.raises(adjit.AdjitError, match=r"the field 'z' of a record with the fields "
                                               r"a, b, c, n"):
        adjit.grad(first_record_missing_field, argnums=1)(params, 1.5)


# a field that reaches the result only through a comparison (Cemaneige's CTG: the snow
# pack's thermal state is only compared with zero), beside one with a derivative
SNOW = np.dtype([("CTG", np.float64), ("Kf", np.float64)])


def melt(params, temp):
    CTG = params[0]['CTG']
    Kf = params[0]['Kf']
    e = 0.0
    s = 0.0
    for t in range(temp.shape[0]):
        e = min(CTG * e + (1 - CTG) * temp[t], 0.0)
        if e == 0.0 and temp[t] > 0:
            s += Kf * temp[t]
    return s


def melt_thermal_state_held(params, temp):
    CTG = adjit.stop_gradient(params[0]['CTG'])
    Kf = params[0]['Kf']
    e = 0.0
    s = 0.0
    for t in range(temp.shape[0]):
        e = min(CTG * e + (1 - CTG) * temp[t], 0.0)
        if e == 0.0 and temp[t] > 0:
            s += Kf * temp[t]
    return s


def melt_of_a_record(p, temp):
    # the record itself (an np.void, params[i], as RRMPG's simulate passes it)
    e = 0.0
    s = 0.0
    for t in range(temp.shape[0]):
        e = min(p['CTG'] * e + (1 - p['CTG']) * temp[t], 0.0)
        if e == 0.0 and temp[t] > 0:
            s += p['Kf'] * temp[t]
    return s


def threshold_only(params, temp):
    # no field carries a derivative: the whole gradient would be a step function's zero
    CTG = params[0]['CTG']
    e = 0.0
    s = 0.0
    for t in range(temp.shape[0]):
        e = min(CTG * e + (1 - CTG) * temp[t], 0.0)
        if e == 0.0 and temp[t] > 0:
            s += temp[t]
    return s


TEMP = np.array([-2.0, 1.0, 3.0, -1.0, 2.0, 4.0])


def test_a_field_decided_only_by_conditions_beside_others_is_zero_and_said():
    # Cemaneige's CTG: argnums cannot leave one field of the parameter record out, and the
    # published model cannot be edited to stop it; its derivative is the step function's
    # zero (central differences agree), the others are differentiated, and a warning names
    # the field as the user wrote it (the split parameter was `params_CTG`, `p_0`)
    params = np.array([(0.3, 2.0)], dtype=SNOW)
    for f, arg, spelled in ((melt, params, "params['CTG']"),
                            (melt_of_a_record, params[0], "p['CTG']")):
        with pytest.warns(adjit.AdjitWarning) as seen:
            g = adjit.grad(f)(arg, TEMP)
        said = str(seen[0].message)
        assert "depends on the field 'CTG' of the argument" in said
        assert f"a step function of {spelled}" in said and "other parts" in said
        assert seen[0].filename == __file__
        assert g["CTG"].item() == 0.0
        assert g["Kf"].item() == pytest.approx(10.0, rel=1e-14)  # temp at the melting steps
        for k, field in enumerate(("CTG", "Kf")):
            def at(h):
                a = params.copy()
                a[field][0] += h
                return njit(f)(a if arg is params else a[0], TEMP)
            assert g[field].item() == pytest.approx((at(1e-6) - at(-1e-6)) / 2e-6, abs=1e-6)
    g = adjit.grad(melt_thermal_state_held)(params, TEMP)
    assert g["CTG"][0] == 0.0 and g["Kf"][0] == pytest.approx(10.0, rel=1e-14)


def test_a_warning_filtered_as_an_error_raises():
    params = np.array([(0.3, 2.0)], dtype=SNOW)
    with warnings.catch_warnings():
        warnings.simplefilter("error", adjit.AdjitWarning)
        with pytest.raises(adjit.AdjitWarning, match="the field 'CTG'"):
            adjit.grad(melt)(params, TEMP)


def test_a_record_whose_fields_all_reach_the_result_by_conditions_is_refused():
    params = np.array([(0.3, 2.0)], dtype=SNOW)
    with pytest.raises(adjit.AdjitError, match=r"depends on the field 'CTG' of the argument "
                                               r"'params' only through conditions.*"
                                               r"stop_gradient\(params\[i\]\['CTG'\]\)"):
        adjit.grad(threshold_only)(params, TEMP)


# a loss that fills a parameter record from the optimizer's vector and runs the model on
# it (RRMPG's fit: `params = np.zeros(1, dtype=...)`, `params[0]['a'] = X[0]`)
ABC3 = np.dtype([("a", np.float64), ("b", np.float64), ("c", np.float64)])


@njit
def abc_model(prec, initial_state, params):
    a = params['a']
    b = params['b']
    c = params['c']
    qsim = np.zeros(len(prec), np.float64)
    storage = np.zeros(len(prec), np.float64)
    storage[0] = initial_state
    for t in range(1, len(prec)):
        qsim[t] = (1 - a - b) * prec[t] + c * storage[t - 1]
        storage[t] = (1 - c) * storage[t - 1] + a * prec[t]
    return qsim, storage


PREC = np.where(np.arange(40) % 3 == 0, 0.0, 1.0 + np.sin(np.arange(40.0)) ** 2)
QOBS = abc_model(PREC, 20.0, np.array([(0.4, 0.3, 0.1)], ABC3)[0])[0] * 1.1


def fit_loss(X):
    params = np.zeros(1, dtype=ABC3)
    params[0]['a'] = X[0]
    params[0]['b'] = X[1]
    params[0]['c'] = X[2]
    qsim, _ = abc_model(PREC, 20.0, params[0])
    return np.mean((QOBS - qsim) ** 2)


def fit_loss_fields(X, n):
    # np.empty, the dtype passed by position, whole fields and a record array's rows
    params = np.empty(n, ABC3)
    params['a'][:] = X[0]
    for k in range(n):
        params[k]['b'] = X[1] * 0.5
        params[k].c = X[2] + 0.01 * k
    s = 0.0
    for k in range(n):
        qsim, storage = abc_model(PREC, 20.0, params[k])
        s += np.mean((QOBS - qsim) ** 2) + 1e-3 * storage[-1]
    return s


def test_a_record_array_the_function_allocates_is_read_field_by_field():
    X = np.array([0.45, 0.3, 0.12])
    check_value_and_grad(fit_loss, (X,), 0)
    check_value_and_grad(fit_loss_fields, (X, 3), 0)
    text = adjit.show(fit_loss, "normalized", X)
    assert "params_a = np.zeros(params_shape)" in text


PARAMS = np.array([(0.4, 0.3, 0.1), (0.2, 0.1, 0.3)], ABC3)


def loss_of_the_forcing(prec):
    # the record read from a module-level structured array: a constant, as numba freezes it
    qsim, _ = abc_model(prec, 20.0, PARAMS[0])
    return np.sum((qsim - QOBS) ** 2) + PARAMS[1]['c'] * np.sum(PARAMS['a'] * prec[:2])


def test_a_module_level_record_array_is_read_field_by_field():
    check_value_and_grad(loss_of_the_forcing, (PREC,), 0)


def test_the_source_for_a_record_argument():
    # source_for reads a record (np.void) as a call passes it: the named tuple of its fields
    params = np.array([(0.3, 2.0)], dtype=SNOW)
    g = adjit.grad(melt_of_a_record, argnums=1)
    text = g.source_for(params[0], TEMP)
    assert "def melt_of_a_record_grad" in text
    assert g(params[0], TEMP) == pytest.approx(
        fd_grad(njit(melt_of_a_record), (params[0], TEMP), 1), rel=1e-7)


def _cubic_of_a_record(x, p):
    return p['a'] * np.sum(x ** 3) + p['b'] * x[0] * x[1]


def test_a_record_outside_argnums_of_second_derivatives_and_jvp():
    # the model's parameters held fixed: read as a call of grad reads them
    params = np.array([(2.0, 0.5)], dtype=[("a", np.float64), ("b", np.float64)])
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(adjit.hessian(_cubic_of_a_record)(x, params[0]),
                               [[12.0, 0.5], [0.5, 24.0]], rtol=1e-14)
    value, tangent = adjit.jvp(_cubic_of_a_record)(x, params[0], np.ones(2))
    assert value == pytest.approx(19.0, rel=1e-15)
    assert tangent == pytest.approx(31.5, rel=1e-15)
    with pytest.raises(adjit.AdjitError, match="argument 'p' is a record"):
        adjit.hessian(_cubic_of_a_record, argnums=1)(x, params[0])
