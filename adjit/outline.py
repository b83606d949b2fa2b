"""Helpers compiled once, as functions with gradients of their own.

adjit inlines a helper at every call (normalize/inline.py): the copy and its adjoint are
specialized for that call's arguments and record what the backward sweep needs. A large
helper called at many places then repeats at each of them: FinancePy's 20-line `normcdf`,
called thirty times by its barrier option and calling itself once, becomes thousands of
lines of generated code that numba takes minutes to compile.

Where the program inlined is larger than OUTLINE_PROGRAM statements, a helper is called as
one operation with a derivative of its own (as a custom_vjp function is, adjit/custom.py)
when

- it is inlined at OUTLINE_COPIES places or more, its copies OUTLINE_SIZE statements or
  more together (calls inside a copy of the helper itself, its recursion, are part of that
  copy);
- each of those calls passes numbers (floats, ints, bools) and whole arrays (no views,
  tuples, functions, enum members or None), and its copy returns one number and makes no
  random draw, print or other call with an effect (analysis/effects.py): the backward
  sweep evaluates it again;
- given arrays, it writes into none of them, returns no view of one and has no effect, as
  frontend/purity.py shows from numba's typed code of it (a volatility smile read from a
  parameter array);
- it is a module-level function (no closure) with named parameters, which numba compiles
  for those arguments (an @njit function, or a Python function numba compiles as written),
  to a float;
- adjit's gradient of it, in the arguments that are floats, builds for those types.

Any call where one of these does not hold is inlined as before. The forward sweep calls
the helper as numba compiles it; the backward sweep calls adjit's gradient of the helper
(adjit.grad with the caller's fastmath, cache, tape_limit and vector_math) on the call's
arguments and scales it by the result's adjoint. The derivative is adjit's of the helper,
as exact as the inlined copy's; the price is one more evaluation of the helper per call in
the backward sweep, where the inlined copy read its intermediate values from the tape. The
helper's gradient is compiled once per argument types, however many places call it, and the
generated code shows the calls: `g_normcdf_outlined_value(x1)` forward,
`normcdf_outlined_cotangents(x1, _t9_bar)` backward.

First derivatives on the CPU only (grad, value_and_grad, vjp): forward mode, second
derivatives and CUDA code inline every call.
"""
import inspect
import sys

import numba
from numba.core import types as nt
from numba.core.registry import CPUDispatcher
from numba.extending import overload

from .codegen.emit import exec_sources
from .frontend import purity
from .rules import opaque
from .rules.registry import ArrayRule
from .rules.table import define_custom, fresh_key

OUTLINE_PROGRAM = 400
"""Statements of the normalized program (every helper inlined) below which nothing is
outlined: small programs compile in a second or two, and inlined copies run fastest."""
OUTLINE_COPIES = 2
"""Inlined copies of a helper from which it may be outlined (one copy is no smaller
outlined)."""
OUTLINE_SIZE = 120
"""Statements of a helper's inlined copies together from which it is outlined."""

_GRAD = None
"""adjit.grad, given by adjit.api (the layer above) when it is imported."""


def use_grad(grad):
    global _GRAD
    _GRAD = grad


def chosen(total, copies, refused):
    """The helpers to outline: `total` statements in the program inlined, `copies` the
    sizes of each helper's copies whose calls passed numbers (normalize/inline.py records
    them), `refused` helpers a copy of which cannot be outlined."""
    if total < OUTLINE_PROGRAM:
        return frozenset()
    return frozenset(fn for fn, sizes in copies.items()
                     if fn not in refused and len(sizes) >= OUTLINE_COPIES and
                     sum(sizes) >= OUTLINE_SIZE and outlinable(fn))


def outlinable(fn):
    """Whether the helper `fn` (its Python function) is of the form outlined: a
    module-level function with named parameters only, of a module in sys.modules (numba
    resolves a recursive @njit function's call of itself through its module there: called
    from other compiled code, one loaded without `import` aborts on an unresolved
    symbol)."""
    if fn.__code__.co_freevars or "<locals>" in fn.__qualname__:
        return False
    module = sys.modules.get(fn.__module__)
    if getattr(module, "__dict__", None) is not fn.__globals__:
        return False
    spec = inspect.getfullargspec(fn)
    return not (spec.varargs or spec.varkw or spec.kwonlyargs)


_OUTLINED = {}


def outlined(helper, options):
    """The Outlined of `helper` (the object the user's code calls: an @njit dispatcher or a
    Python function) for the gradient options `options` (fastmath, cache, tape_limit,
    vector_math)."""
    key = (helper, options)
    made = _OUTLINED.get(key)
    if made is None:
        made = _OUTLINED[key] = Outlined(helper, options)
    return made


class Outlined:
    """A helper called as one operation: its value helper (entered in the primitive
    registry with an ArrayRule, as custom_vjp's is) and its cotangents helper (the
    gradient of the helper, for the argument types numba gives it)."""

    def __init__(self, helper, options):
        self.helper = helper
        self.options = options
        py = getattr(helper, "py_func", helper)
        self.fn = py
        self.params = tuple(inspect.getfullargspec(py).args)
        self.primal = helper if isinstance(helper, CPUDispatcher) else numba.njit(py)
        self._gradients = {}
        self._checked = {}
        n = len(self.params)
        slots = [f"p{k}" for k in range(n)]
        ps = ", ".join(slots)
        key = fresh_key(f"{py.__name__}_outlined")
        lines = [f"def {key}_value({ps}):",
                 f"    return primal({ps})",
                 f"def {key}_cotangents({ps}, g):",
                 f"    return outlined.cotangents(({ps}{',' if n == 1 else ''}), g)",
                 f"def typer({ps}, g):",
                 f"    return outlined.implementation(({ps}{',' if n == 1 else ''}))"]
        ns = exec_sources("\n".join(lines) + "\n", key,
                          {"primal": self.primal, "outlined": self})
        self.value = numba.njit(ns[f"{key}_value"])
        self.cotangent_stub = ns[f"{key}_cotangents"]
        overload(self.cotangent_stub)(ns["typer"])
        self.rule = ArrayRule(
            key, slots, tuple(f"shared[{k}]" for k in range(n)), (None,) * n,
            _result_of,
            shared=f"{key}_cotangents({ps}, out_bar)",
            helpers={f"{key}_cotangents": self.cotangent_stub},
            missing_tangent=f"forward mode through `{py.__name__}`, outlined")
        define_custom(self.value, f"the helper `{py.__name__}`, compiled as its own "
                      "gradient", "array", handler="keep", array_rule=self.rule)

    def __adjit_parts__(self):
        """What a cached gradient calling this helper depends on (codegen/emit.py)."""
        return (self.helper, self.options)

    def __reduce__(self):
        return (outlined, (self.helper, self.options))

    def gradient(self, floats):
        """adjit's gradient of the helper in the parameters at positions `floats`."""
        gf = self._gradients.get(floats)
        if gf is None:
            fastmath, cache, tape_limit, vector_math = self.options
            gf = self._gradients[floats] = _GRAD(
                self.helper, argnums=floats, fastmath=fastmath, cache=cache,
                tape_limit=tape_limit, vector_math=vector_math)
        return gf

    def fits(self, descs):
        """Whether calls with arguments of these descriptors (("f",), ("i",), ("b",),
        ("array", ndim, dtype, layout)) are outlined: the helper compiles to a float for
        them, changes none of the arrays and its gradient builds."""
        descs = tuple(descs)
        if descs not in self._checked:
            # (False while it is checked: helpers calling each other, each outlined in the
            # other's gradient, would check each other again without end; inlined there)
            self._checked[descs] = False
            self._checked[descs] = self._fits(descs)
        return self._checked[descs]

    def _fits(self, descs):
        if any(d not in (("f",), ("i",), ("b",)) and d[0] != "array" for d in descs):
            return False
        arg_types = tuple(opaque._numba_type(d) for d in descs)
        floats = _floats(arg_types)
        if not floats:
            return False
        if not isinstance(self.helper, CPUDispatcher):
            # (a Python function: numba compiles it as written, alone, to a float)
            result = _type_of(self.value, descs)
            if not isinstance(result, nt.Float):
                return False
        if any(isinstance(t, nt.Array) for t in arg_types) and \
                purity.proof(self.primal, self._compiled_as(arg_types), arrays_only=True) \
                is not None:
            # (it may write an array it is given or return a view of one; its prints and
            # other calls with an effect the inliner checked in its copies)
            return False
        try:
            self.gradient(floats).specialize(arg_types)
        except Exception:   # noqa: BLE001 - (numba's errors have many classes): inlined
            return False
        return True

    def _compiled_as(self, arg_types):
        """The argument types of the helper's compiled version numba calls for these: an
        @njit function given signatures (FinancePy's `float64(int64, float64[:], ...)`)
        compiles no other, and takes a C-contiguous array as its any-layout one."""
        if getattr(self.primal, "_can_compile", True):
            return arg_types
        for sig in self.primal.overloads:
            if len(sig) == len(arg_types) and all(
                    t == a or isinstance(t, nt.Array) and isinstance(a, nt.Array) and
                    t.layout == "A" and (t.dtype, t.ndim) == (a.dtype, a.ndim)
                    for t, a in zip(sig, arg_types)):
                return tuple(sig)
        return arg_types

    def implementation(self, arg_types):
        """numba's implementation of the cotangents helper for these argument types: the
        gradient in the float arguments (numbers and arrays) times the result's adjoint,
        0.0 for the others."""
        floats = _floats(arg_types)
        n = len(arg_types)
        ps = ", ".join(f"p{k}" for k in range(n))
        where = {k: j for j, k in enumerate(floats)}
        terms = ", ".join(f"g * d[{where[k]}]" if k in where else "0.0" for k in range(n))
        lines = [f"def impl({ps}, g):"]
        if floats:
            lines.append(f"    d = gradient({ps})")
        lines.append(f"    return ({terms}{',' if n == 1 else ''})")
        ns = exec_sources("\n".join(lines) + "\n", "impl",
                          {"gradient": self.gradient(floats) if floats else None})
        return ns["impl"]

    def cotangents(self, args, g):
        """The cotangents helper called from Python (generated code run by the
        interpreter: adjit.show)."""
        floats = _floats(tuple(numba.typeof(a) for a in args))
        d = self.gradient(floats)(*args) if floats else ()
        where = {k: j for j, k in enumerate(floats)}
        return tuple(g * d[where[k]] if k in where else 0.0 for k in range(len(args)))

    def __repr__(self):
        return f"<adjit outlined {self.fn.__name__}>"


def _type_of(dispatcher, descs):
    """numba's result type of `dispatcher` on arguments of these descriptors, or None where
    it does not compile for them."""
    t = opaque.compiled_type(dispatcher, tuple(opaque._numba_type(d) for d in descs))
    return None if isinstance(t, str) else t


def _floats(arg_types):
    """The positions of the arguments that carry derivatives: floats and float arrays."""
    return tuple(k for k, t in enumerate(arg_types)
                 if isinstance(t, nt.Float) or
                 isinstance(t, nt.Array) and isinstance(t.dtype, nt.Float))


def _result_of(args):
    """The ArrayRule result, whatever the operands: a number."""
    return 0, "f"
