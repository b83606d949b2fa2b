"""stop_gradient: the identity on values, a constant for differentiation.

It lives in its own module so the rule table can know it by identity without importing the
whole API. It works in plain Python, inside @njit code and inside CUDA device code.
"""
from numba.extending import overload


def stop_gradient(x):
    """Return `x` unchanged; adjit treats the result as a constant.

    No derivative flows through the result: the adjoint code adds nothing to the adjoints of
    anything `x` was computed from, and activity analysis drops the statements that would
    compute them. Use it for a stabilizing shift (`x - stop_gradient(max(x))` in a softmax),
    for an E-step inside an M-step objective, or for a stopped advantage in a policy
    gradient. adjit recognizes the function by identity, so any import alias works.
    """
    return x


@overload(stop_gradient, target="generic")
def _stop_gradient_numba(x):
    return lambda x: x
