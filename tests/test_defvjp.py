"""adjit.defvjp / adjit.defjvp: a rule for a function the user does not own, used by every
call of it in differentiated code, its callers' code included: a numba `cfunc`, scipy's
C function reached by address through ctypes (as numba code reaches scipy.special), and an
@njit dispatcher from "someone else's package" whose own code adjit would otherwise read.
Gradients against central differences of numba's compile, and the rule shown to be the
one used."""
import ctypes
import math

import numpy as np
import pytest
from numba import cfunc, njit
from numba.extending import get_cython_function_address

import adjit
from adjit import AdjitError
from fd import fd_grad


@cfunc("float64(float64)")
def softplus_c(x):
    return math.log1p(math.exp(-abs(x))) + max(x, 0.0)


def softplus_fwd(x):
    return softplus_c(x), x


def softplus_bwd(x, g):
    return (g / (1.0 + math.exp(-x)),)


adjit.defvjp(softplus_c, softplus_fwd, softplus_bwd)

ERF = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double)(
    get_cython_function_address("scipy.special.cython_special", "__pyx_fuse_1erf"))


@njit
def erf_fwd(x):
    return ERF(x), x


@njit
def erf_bwd(x, g):
    return (g * 1.1283791670955126 * math.exp(-x * x),)


adjit.defvjp(ERF, erf_fwd, erf_bwd)


@njit
def library_kernel(x):
    """Someone else's dispatcher; its rule below says twice the true derivative, so the
    test can tell whether the rule or the code was differentiated."""
    return x * x


adjit.defvjp(library_kernel, lambda x: (library_kernel(x), x), lambda x, g: (4.0 * x * g,))
adjit.defjvp(library_kernel, lambda primals, tangents: (library_kernel(primals[0]),
                                                        4.0 * primals[0] * tangents[0]))


@njit
def uses_softplus(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += softplus_c(x[i]) * (i + 1)
    return s


@njit
def helper_calling_erf(v):
    return ERF(v) * v


def loss(x):
    return uses_softplus(x) + helper_calling_erf(x[0]) + math.erf(x[1])


X = np.array([0.3, -1.2, 2.0, 0.7])


def test_rules_for_a_cfunc_and_an_address_function_match_differences():
    g = adjit.grad(loss)(X)
    np.testing.assert_allclose(g, fd_grad(njit(loss), (X,), 0), rtol=1e-6, atol=1e-8)
    value = adjit.value_and_grad(loss)(X)[0]
    assert value == pytest.approx(njit(loss)(X), rel=1e-12)


def test_a_dispatchers_rule_is_used_instead_of_its_code():
    def f(x):
        return library_kernel(x[0]) + x[1]
    assert adjit.grad(f)(X)[0] == pytest.approx(4.0 * X[0], rel=1e-12)   # the rule's
    value, tangent = adjit.jvp(f)(X, np.array([1.0, 0.0, 0.0, 0.0]))
    assert tangent == pytest.approx(4.0 * X[0], rel=1e-12)


def test_forward_mode_without_a_tangent_rule_is_refused():
    with pytest.raises(AdjitError, match="tangent rule"):
        adjit.jvp(loss)(X, np.ones(4))


def test_a_second_rule_and_rules_for_custom_vjp_functions_are_refused():
    with pytest.raises(AdjitError, match="already has a rule"):
        adjit.defvjp(softplus_c, softplus_fwd, softplus_bwd)

    @adjit.custom_vjp
    def own(x):
        return x
    with pytest.raises(AdjitError, match="custom_vjp function"):
        adjit.defvjp(own, softplus_fwd, softplus_bwd)
