"""Generated code is typed by numba's type inference remembering what each call of a builtin
function (an operator, a math or numpy function) resolved to for its argument types
(codegen/emit.py _RememberingTypeInferer): here every remembered answer is checked against
numba resolving the same call afresh, over the core-language programs and the benchmark
cases."""
import collections
import copy

import numpy as np
import pytest

import adjit
from adjit.codegen import emit
from numba.core import typeinfer

import cases
import hand
from programs import PROGRAMS


@pytest.fixture
def checked(monkeypatch):
    """Every resolution the inferer takes from what it remembered, compared with numba's own
    (a fresh resolution: numba's TypeInferer.resolve_call) as it is taken."""
    compared = []
    # (compiled afresh: not a source this process compiled before)
    monkeypatch.setattr(emit, "_COMPILED", collections.OrderedDict())
    remembering = emit._RememberingTypeInferer.resolve_call
    fresh_resolution = typeinfer.TypeInferer.resolve_call     # (numba's, before a pass runs)

    def resolve_call(self, fnty, pos_args, kw_args):
        key = (self.context, fnty, tuple(pos_args))
        try:
            known = key in emit._RESOLVED
        except TypeError:
            known = False
        sig = remembering(self, fnty, pos_args, kw_args)
        if known:
            fresh = fresh_resolution(self, fnty, pos_args, kw_args)
            assert sig == fresh, (fnty, pos_args, sig, fresh)
            assert sig.return_type == fresh.return_type and sig.args == fresh.args
            compared.append(fnty)
        return sig

    monkeypatch.setattr(emit._RememberingTypeInferer, "resolve_call", resolve_call)
    return compared


@pytest.mark.parametrize("fn, args, argnums", PROGRAMS[:12],
                         ids=[p[0].__name__ for p in PROGRAMS[:12]])
def test_remembered_resolutions_are_numbas_own(checked, fn, args, argnums):
    # (the gradients themselves are checked against central differences in test_constructs)
    adjit.grad(fn, argnums=argnums, cache=False)(*copy.deepcopy(args))
    assert checked, "no call was resolved from what the inferer remembered"


def test_a_gradient_typed_from_remembered_calls_is_the_hand_written_adjoints(checked):
    # the leapfrog pendulum's loss: a hundred operators on floats and integers
    args = cases.pendulum_inputs(1000)
    got = adjit.grad(cases.pendulum_loss, argnums=(0, 1), cache=False)(*args)
    np.testing.assert_allclose(got, hand.pendulum_hand(*args), rtol=1e-12)
    assert len(checked) > 50


def test_the_remembering_inferer_types_only_adjits_generated_code():
    # numba's module attribute is its own again after a gradient is compiled: the user's own
    # @njit functions are typed by numba's inferer
    import numba
    g = adjit.grad(cases.sum_of_sin, cache=False)
    g(np.linspace(0.0, 1.0, 5))
    assert typeinfer.TypeInferer is not emit._RememberingTypeInferer
    assert numba.njit(lambda x: x * 2.0)(1.5) == 3.0
