"""Implicit functions: `custom_root`, the derivative of an equation's solution by the
implicit function theorem, whatever solver found it (built on custom_vjp, adjit/custom.py,
and on adjit's own jacobian, vjp and jvp of the residual)."""
import inspect

import numpy as np
from numba.core import types as nt
from numba.core.extending import overload

from .api import jacobian, jvp, vjp
from .custom import custom_vjp, zero_like
from .errors import AdjitError


def implicit_lambda(J, g):
    """The multiplier of an implicit function's adjoint: solves J^T lambda = g (J the
    residual's derivative in the solution; a number for a scalar solution)."""
    raise NotImplementedError("called only from compiled code")


@overload(implicit_lambda)
def _implicit_lambda(J, g):
    if isinstance(J, nt.Array):
        return lambda J, g: np.linalg.solve(J.T, g.ravel()).reshape(g.shape)
    return lambda J, g: g / J


def implicit_solve(J, s):
    """The tangent of an implicit function's solution: solves J dx = s."""
    raise NotImplementedError("called only from compiled code")


@overload(implicit_solve)
def _implicit_solve(J, s):
    if isinstance(J, nt.Array):
        return lambda J, s: np.linalg.solve(J, s.ravel()).reshape(s.shape)
    return lambda J, s: s / J


def custom_root(residual):
    """Differentiate the solution of an equation, not the iterations that found it:

        @numba.njit
        def kepler(E, M, e):                # the residual: zero at the solution
            return E - e * math.sin(E) - M

        @custom_root(kepler)
        def eccentric_anomaly(M, e, E0):    # any solver: Newton, bisection, fixed point
            E = E0
            while True:
                step = kepler(E, M, e) / (1.0 - e * math.cos(E))
                E -= step
                if abs(step) < 1e-14:
                    return E

    `residual(x, *params)` has the solution first; the solver takes the same params first,
    then anything else (initial guesses, tolerances: no derivative flows to them). Inside
    differentiated code the solution's adjoint is the implicit function theorem's: with
    J = d residual / d x at the solution, lambda solves J^T lambda = x_bar and each
    parameter's adjoint is -(d residual / d param)^T lambda - computed by adjit's jacobian
    and vjp of `residual`, so the residual must be code adjit differentiates. The solution
    is a float or a float array (J is then solved for with np.linalg.solve). Forward mode
    (jvp, jacfwd) solves J dx = -sum_k (d residual / d param_k) dparam_k. The result is a
    custom_vjp function (outside differentiation: the numba-compiled solver)."""
    res_params = list(inspect.signature(getattr(residual, "py_func", residual)).parameters)
    m = len(res_params) - 1
    if m < 1:
        raise AdjitError(f"custom_root's residual `{getattr(residual, '__name__', residual)}` "
                         "takes the solution and at least one parameter",
                         "Write residual(x, p1, ...), zero at the solution.")

    def wrap(solver):
        fn = custom_vjp(solver)
        n = len(fn.params)
        if n < m:
            raise AdjitError(f"custom_root solver {fn.where} takes {n} argument(s), fewer than "
                             f"the residual's {m} parameter(s)",
                             "Give the solver the residual's parameters first, in order.")
        slots = [f"p{k}" for k in range(n)]
        ps = ", ".join(slots)
        params = ", ".join(slots[:m])
        lines = [f"def fwd({ps}):",
                 f"    x = solve({ps})",
                 f"    return x, (x, {ps},)",
                 "def bwd(res, g):",
                 f"    x, {ps}, = res",
                 f"    lam = implicit_lambda(d_x(x, {params}), g)"]
        ns = {"solve": fn.primal, "implicit_lambda": implicit_lambda,
              "implicit_solve": implicit_solve, "zero_like": zero_like,
              "d_x": jacobian(residual, argnums=0), "__name__": __name__}
        for k in range(m):      # the residual's vjp and jvp in each parameter
            ns[f"pull{k}"] = vjp(residual, argnums=k + 1)
            ns[f"push{k}"] = jvp(residual, argnums=k + 1)
        lines += [f"    bar{k} = pull{k}(x, {params}, lam)[1]" for k in range(m)]
        bars = [f"-bar{k}" for k in range(m)] + [f"zero_like(p{k})" for k in range(m, n)]
        lines.append(f"    return ({', '.join(bars)},)")
        # forward mode: J dx = -sum_k (d residual / d param_k) dparam_k
        ts = ", ".join(f"t{k}" for k in range(n))
        lines += ["def tangent(primals, tangents):",
                  f"    {ps}, = primals",
                  f"    {ts}, = tangents",
                  f"    x = solve({ps})",
                  "    s = " + " + ".join(f"push{k}(x, {params}, t{k})[1]" for k in range(m)),
                  f"    return x, -implicit_solve(d_x(x, {params}), s)"]
        exec(compile("\n".join(lines) + "\n", f"<custom_root {fn.__name__}>", "exec"), ns)  # noqa: S102
        fn.defvjp(ns["fwd"], ns["bwd"])
        fn.defjvp(ns["tangent"])
        return fn
    return wrap
