"""Programs that once reached the user as a raw Python exception (TypeError and the like)
from inside the transformation, written the way a numba user writes them. Each now either
differentiates, checked against central finite differences of numba's own compiled
function, or is an AdjitError naming the function, its line and what to write instead."""
import ctypes
import ctypes.util
import inspect
import math

import numba
import numpy as np
import pytest
from numba import cfunc, njit, types

import adjit
from adjit import AdjitError, higher, pipeline
from adjit.codegen.emit import compile_source
from adjit.errors import InternalError
from adjit.normalize import anf

from fd import assert_grad_matches_fd, fd_grad


# ---------------------------------------------------------------------------------------
# helpers returning an array from several `return`s; module-level arrays sliced
# ---------------------------------------------------------------------------------------

@njit
def rodrigues_rotate_point(rot, X):
    sqtheta = np.sum(rot * rot)
    if sqtheta != 0.0:
        theta = math.sqrt(sqtheta)
        costheta = math.cos(theta)
        sintheta = math.sin(theta)
        theta_inverse = 1.0 / theta
        w = theta_inverse * rot
        w_cross_X = np.cross(w, X)
        tmp = (1.0 - costheta) * np.dot(w, X)
        return X * costheta + w_cross_X * sintheta + w * tmp
    else:
        return X + np.cross(rot, X)


@njit
def project(cam, X):
    Xcam = rodrigues_rotate_point(cam[0:3], X - cam[3:6])
    distorted = Xcam[0:2] / Xcam[2]
    rsq = np.sum(distorted * distorted)
    L = 1.0 + cam[9] * rsq + cam[10] * rsq * rsq
    return distorted * L * cam[6] + cam[7:9]


@njit
def ba_objective(cams, X, w, obs, feats):
    s = 0.0
    for i in range(obs.shape[0]):
        c = obs[i, 0]
        p = obs[i, 1]
        proj = project(cams[c], X[p])
        err = w[i] * (proj - feats[i])
        s += np.sum(err * err)
    return s


def test_bundle_adjustment_with_a_rodrigues_helper_returning_from_both_branches():
    """ADBench's bundle adjustment: the rotation helper returns an array from each branch of
    an `if`; camera 1 has no rotation, so both branches run inside the loop."""
    rng = np.random.default_rng(0)
    cams = rng.normal(size=(3, 11)) * 0.1
    cams[:, 6] = 1.0
    cams[1, 0:3] = 0.0
    X = rng.normal(size=(4, 3)) + np.array([0.0, 0.0, 5.0])
    w = np.ones(5)
    obs = np.array([[0, 0], [1, 1], [2, 2], [0, 3], [1, 0]])
    feats = rng.normal(size=(5, 2))
    g = adjit.grad(ba_objective, argnums=(0, 1, 2))
    assert_grad_matches_fd(g, ba_objective, (cams, X, w, obs, feats), (0, 1, 2))


@njit
def sum_rotated(rot, X):
    return np.sum(rodrigues_rotate_point(rot, X))


@pytest.mark.parametrize("rot", [[0.1, 0.2, 0.3], [0.0, 0.0, 0.0]], ids=["rotated", "zero"])
def test_sum_of_a_helper_returning_an_array_from_either_branch(rot):
    args = (np.array(rot), np.array([1.0, 2.0, 3.0]))
    assert_grad_matches_fd(adjit.grad(sum_rotated, argnums=(0, 1)), sum_rotated, args, (0, 1))


@njit
def first_above(x, k):
    for i in range(x.shape[0]):
        if x[i] > k:
            return x * x[i]         # a return inside a loop
    return x - 1.0


@njit
def calls_first_above(x):
    s = 0.0
    for j in range(3):
        s += np.sum(first_above(x, j * 0.5) ** 2)
    return s


@njit
def square_or_scale(A):
    if A[0, 0] > 0.0:
        return A @ A            # a new array from a matrix product
    else:
        return A.T * 3.0


@njit
def calls_square_or_scale(A):
    return np.sum(square_or_scale(A) ** 2)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_helpers_returning_new_arrays_from_several_returns(sign):
    x = sign * np.array([0.3, 1.2, -0.4])
    assert_grad_matches_fd(adjit.grad(calls_first_above), calls_first_above, (x,))
    A = sign * np.array([[0.5, 1.0], [-0.3, 0.7]])
    assert_grad_matches_fd(adjit.grad(calls_square_or_scale), calls_square_or_scale, (A,))


@njit
def array_or_number(x):
    if x[0] > 0.0:
        return x * 2.0
    return 1.0


@njit
def calls_array_or_number(x):
    return np.sum(array_or_number(x))


def test_a_helper_returning_an_array_or_a_number_is_refused():
    with pytest.raises(AdjitError, match=r"array_or_number.*test_raw_errors\.py.*line \d+.*"
                       r"an array from one `return` and a number"):
        adjit.grad(calls_array_or_number)(np.array([0.5, 1.0]))


M = np.arange(20.0).reshape(4, 5)


@njit
def scaled_corner(a):
    return np.sum(np.full((2, 3), a[0]) * M[:2, :3]) + np.sum(a * M[1, :2])


def test_a_slice_of_a_module_level_array():
    args = (np.array([1.5, -0.5]),)
    assert_grad_matches_fd(adjit.grad(scaled_corner), scaled_corner, args)


# ---------------------------------------------------------------------------------------
# opaque callees: a ctypes function, a cfunc
# ---------------------------------------------------------------------------------------

libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
c_cos = libm.cos
c_cos.restype = ctypes.c_double
c_cos.argtypes = [ctypes.c_double]


@cfunc(types.float64(types.float64))
def doubled(v):
    return v * 2.0


@njit
def ctypes_on_a_constant(x):
    s = 0.0
    for i in range(x.size):
        s += x[i] * c_cos(0.5) + c_cos(float(i)) * x[i] ** 2
    return s


@njit
def cfunc_on_a_constant(x):
    s = 0.0
    for i in range(x.size):
        s += x[i] * doubled(3.0) + doubled(float(i)) * x[i] ** 2
    return s


@njit
def cfunc_on_a_stopped_value(x):
    return np.sum(x * doubled(adjit.stop_gradient(x[0])))


@pytest.mark.parametrize("f", [ctypes_on_a_constant, cfunc_on_a_constant])
def test_an_opaque_callee_no_derivative_flows_through(f):
    """A ctypes function (unhashable, once a raw TypeError) or a cfunc on constants, integers
    and stopped values is called as it is."""
    x = np.array([1.0, -2.0, 0.5])
    assert_grad_matches_fd(adjit.grad(f), f, (x,))
    v = np.array([0.3, 1.0, -0.7])
    value, tangent = adjit.jvp(f)(x, v)
    assert value == pytest.approx(f(x), rel=1e-12)
    assert tangent == pytest.approx(np.dot(fd_grad(f, (x,), 0), v), rel=1e-6)


def test_an_opaque_callee_on_a_stopped_value_is_a_constant():
    x = np.array([1.5, -2.0, 0.5])
    np.testing.assert_allclose(adjit.grad(cfunc_on_a_stopped_value)(x), np.full(3, 3.0))


@njit
def ctypes_on_the_argument(x):
    return c_cos(x[0]) * x[1]


@njit
def cfunc_on_the_argument(x):
    return doubled(x[0]) + x[1]


@pytest.mark.parametrize("mode", ["grad", "jvp"])
@pytest.mark.parametrize("f, callee", [(ctypes_on_the_argument, "c_cos"),
                                       (cfunc_on_the_argument, "doubled")])
def test_a_derivative_through_an_opaque_callee_is_refused(f, callee, mode):
    x = np.array([1.0, 2.0])
    with pytest.raises(AdjitError) as info:
        if mode == "grad":
            adjit.grad(f)(x)
        else:
            adjit.jvp(f)(x, np.ones(2))
    message = str(info.value)
    assert f"'{f.__name__}' ({__file__}, line " in message
    assert f"flow through `{callee}`" in message
    assert "stop_gradient" in message and "custom_vjp" in message


@adjit.custom_vjp
def cos_with_a_rule(v):
    return c_cos(v)


def _cos_fwd(v):
    return c_cos(v), v


def _cos_bwd(v, g):
    return (-math.sin(v) * g,)


cos_with_a_rule.defvjp(_cos_fwd, _cos_bwd)


@njit
def ctypes_with_a_rule(x):
    return cos_with_a_rule(x[0]) * x[1]


def test_the_advice_for_an_opaque_callee_works():
    """What the refusal suggests: a custom_vjp function around the ctypes call."""
    x = np.array([1.0, 2.0])
    assert_grad_matches_fd(adjit.grad(ctypes_with_a_rule), ctypes_with_a_rule, (x,))


# ---------------------------------------------------------------------------------------
# for v in a, enumerate, zip inside @njit helpers
# ---------------------------------------------------------------------------------------

@njit
def sum_of_squares(a):
    s = 0.0
    for v in a:
        s += v * v
    return s


@njit
def weighted_by_position(a):
    s = 0.0
    for k, v in enumerate(a):
        s += k * v * v
    return s


@njit
def inner_product(a, b):
    s = 0.0
    for u, v in zip(a, b):
        s += u * v
    return s


@njit
def row_energy(M):
    s = 0.0
    for row in M:
        s += np.sum(row * row)
    return s


@njit
def loops_in_helpers(a, M):
    s = sum_of_squares(a) + weighted_by_position(a) + inner_product(a, a[::-1])
    s += sum_of_squares(a[1:]) + weighted_by_position(a * 2.0) + inner_product(M[0], M[1])
    return s + row_energy(M.T) + sum_of_squares(M[:, 1])


def test_for_enumerate_zip_over_arrays_in_helpers():
    """As in the differentiated function itself: over arguments, views, rows and new
    arrays passed to the helper."""
    args = (np.array([1.0, 2.0, 3.0]), np.arange(6.0).reshape(2, 3) * 0.3)
    assert_grad_matches_fd(adjit.grad(loops_in_helpers, argnums=(0, 1)), loops_in_helpers,
                           args, (0, 1))


W = np.array([0.5, -1.0, 2.0])


@njit
def weighted_by_module_array(a):
    s = 0.0
    for k, w in enumerate(W):
        s += w * a[k] ** 2
    for u, w in zip(a, W):
        s += u * w
    return s


@njit
def loops_over_a_module_array(a):
    s = 0.0
    for j in range(2):
        s += weighted_by_module_array(a * (j + 1.0))
    for w in W:
        s += w * a[0]
    return s


def test_loops_over_a_module_level_array():
    args = (np.array([1.0, -2.0, 0.5]),)
    assert_grad_matches_fd(adjit.grad(loops_over_a_module_array), loops_over_a_module_array,
                           args)


# ---------------------------------------------------------------------------------------
# the internal-error net: an unexpected exception inside adjit is an InternalError
# ---------------------------------------------------------------------------------------

def running_sum(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * 2.0     # @crash_here
    return s


def _line_of(fn, tag):
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, text in enumerate(lines) if f"# @{tag}" in text)


def test_an_unexpected_exception_while_normalizing_is_an_internal_error(monkeypatch):
    def crash(self, s, out):
        raise TypeError("'NoneType' object cannot be interpreted as an integer")
    monkeypatch.setattr(anf._Normalizer, "aug_assign", crash)
    with pytest.raises(InternalError) as info:
        adjit.grad(running_sum)(np.ones(3))
    message = str(info.value)
    line = _line_of(running_sum, "crash_here")
    assert message.startswith(f"in function 'running_sum' ({__file__}, line {line}): "
                              "internal adjit error in the normalized pass (TypeError: ")
    assert "cannot be interpreted as an integer" in message and "report" in message
    assert isinstance(info.value, AdjitError)
    assert isinstance(info.value.__cause__, TypeError)      # the traceback is kept


def test_an_unexpected_exception_in_a_later_pass_names_the_function(monkeypatch):
    def crash(program, options):
        raise KeyError("_t7")
    monkeypatch.setitem(pipeline.PASSES, "active", crash)
    with pytest.raises(InternalError, match=r"in function 'running_sum' \(.*test_raw_errors"
                       r"\.py, line \d+\): internal adjit error in the active pass "
                       r"\(KeyError: '_t7'\)") as info:
        adjit.value_and_grad(running_sum)(np.ones(3))
    assert isinstance(info.value.__cause__, KeyError)
    with pytest.raises(InternalError, match="in the active pass"):
        adjit.show(running_sum, "adjoint", np.ones(3))


def test_an_internal_error_under_second_derivatives_stays_one(monkeypatch):
    """hvp differentiates the generated jvp: a crash there is not turned into a refusal of
    that construct, and a crash in higher.py's own steps is an InternalError as well."""
    active = pipeline.PASSES["active"]

    def crash(program, options):        # in reverse mode over the jvp only
        if options.derivative != "tangent":
            raise KeyError("_t7")
        active(program, options)
    monkeypatch.setitem(pipeline.PASSES, "active", crash)
    with pytest.raises(InternalError, match=r"'running_sum' \(.*test_raw_errors\.py, line "
                       r"\d+\): internal adjit error in reverse mode over its generated "
                       r"running_sum_jvp \(KeyError: '_t7'\)"):
        adjit.hvp(running_sum)(np.ones(3), np.ones(3))
    monkeypatch.setitem(pipeline.PASSES, "active", active)

    def crash_jacobian(gf, arg_types):
        raise IndexError("tuple index out of range")
    monkeypatch.setattr(higher, "_jacobian", crash_jacobian)
    with pytest.raises(InternalError, match=r"'running_sum' .*internal adjit error while "
                       r"building its jacobian \(IndexError: tuple index out of range\)"):
        adjit.jacobian(running_sum)(np.ones(3))


def test_numba_failing_on_generated_code_is_an_internal_error():
    origin = (__file__, 12, "running_sum")
    with pytest.raises(InternalError, match=r"in function 'running_sum' \(.*, line 12\): "
                       r"internal adjit error: numba could not compile the generated g "
                       r"\(an adjit bug"):
        compile_source("def g(x):\n    return undefined_name + x\n", "g", {},
                       (numba.float64,), origin=origin)


def test_refusals_are_not_internal_errors():
    with pytest.raises(AdjitError) as info:
        adjit.grad(calls_array_or_number)(np.array([0.5, 1.0]))
    assert not isinstance(info.value, InternalError)


def test_a_lowering_reading_its_own_temporary_is_an_internal_error(monkeypatch):
    # a name of adjit's own read as the program's is adjit's bug: an InternalError that asks
    # for a report, not "the name '_a1' is not defined" addressed to the user
    from adjit.errors import InternalError
    from adjit.normalize import lower_statistics

    def lower_cov_reading_a_temporary(norm, node, obj, out):
        atom = norm.calls.argument_atom(node.args[0], out)
        return norm.indexing.array_operand(atom, out, "np.cov")

    monkeypatch.setattr(lower_statistics.lower_cov, "__code__",
                        lower_cov_reading_a_temporary.__code__)

    def f(m):
        return np.sum(np.cov(m + 0.0))

    with pytest.raises(InternalError, match="adjit's own '_"):
        adjit.grad(f)(np.eye(3) + 0.1)


def _uses_generated_names(x, vec, ckpt, vmath):
    tape_room = 0.5 * vec
    s = 0.0
    for i in range(x.shape[0]):
        numba = math.exp(x[i] * ckpt) * tape_room[i]
        s += numba + vmath * x[i] ** 2
    return s


def test_variables_named_like_generated_codes_modules_are_renamed():
    """A parameter `vec` or a local `numba` hid the module of that name in the generated
    code (numba could not compile it: an internal error); they are renamed."""
    args = (np.linspace(0.1, 0.9, 5), np.linspace(1.0, 2.0, 5), 0.7, 1.3)
    compiled = njit(_uses_generated_names)
    value, grads = adjit.value_and_grad(_uses_generated_names, argnums=(0, 1, 2, 3))(*args)
    assert value == pytest.approx(compiled(*args), rel=1e-14)
    for k in range(4):
        np.testing.assert_allclose(grads[k], fd_grad(compiled, args, k), rtol=1e-6, atol=1e-9)
    g = adjit.grad(_uses_generated_names, argnums=1)
    g(*args)
    assert "vec_" in g.source and "def _uses_generated_names_grad(x, vec_, ckpt_, vmath_)" in \
        g.source
