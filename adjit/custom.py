"""Functions with derivative rules of their own: `custom_vjp`, shaped as JAX's.

    @custom_vjp
    def log1pexp(x):                    # the primal: any code numba compiles
        return math.log1p(math.exp(x))

    def log1pexp_fwd(x):                # (primal result, residuals): a value or a tuple
        return log1pexp(x), x

    def log1pexp_bwd(x, g):             # one cotangent per argument, in a tuple
        return (g / (1.0 + math.exp(-x)),)

    log1pexp.defvjp(log1pexp_fwd, log1pexp_bwd)

Outside differentiation `log1pexp` is the numba-compiled primal (callable from @njit code).
Inside a function adjit differentiates, at any depth, a call to it is kept whole: the forward
sweep computes `fwd(*args)[0]`, the backward sweep `bwd(fwd(*args)[1], out_bar)` - the
residuals are computed again from the call's arguments, which adjit keeps (records them on
the tape where they change later), so `fwd` must be a function of its arguments alone (it is
refused if it draws random numbers). `defjvp(jvp)` adds a tangent rule, JAX-shaped
(`jvp(primals, tangents) -> (primal_out, tangent_out)`, linear in the tangents), for
forward mode (adjit.jvp, jacfwd).

How: `defvjp` compiles three small helpers (the call's value, its vector-Jacobian product,
and per argument its tangent) and enters them in the primitive registry as one operation
kept at array level (rules/table.py define_custom), whose ArrayRule is the derivative: every
pass reads it there, as it reads np.linalg.solve's.
"""
import ast
import collections
import functools
import importlib
import inspect
import sys

import numba
import numpy as np
from numba.core import types as nt
from numba.core.dispatcher import Dispatcher
from numba.core.extending import overload, typeof_impl

from .codegen.emit import exec_source, exec_sources as _exec_all
from .errors import AdjitError
from .runtime.index import extent
from .frontend import purity
from .frontend.source import code_names, read_function, referenced
from .rules import opaque
from .rules.registry import ArrayRule
from .rules.table import (attach_rule, attached_rule, define_custom, fresh_key,
                          set_array_rule, set_device_twin)
from . import ir

_VJP = None
"""adjit.vjp, given by adjit.api (the layer above) when it is imported: the second
derivatives through a tangent rule differentiate it."""


def use_vjp(vjp):
    global _VJP
    _VJP = vjp


def owned(value, like, what):
    """A cotangent or tangent as the generated code keeps it: an array copied (a rule may
    return its own argument, which the adjoint sweep changes) after checking it has the
    shape of `like` (broadcasting one of another shape would be silently wrong: a
    ValueError naming `what` instead), a number as a float."""
    raise NotImplementedError("called only from compiled code")


@overload(owned)
def _owned(value, like, what):
    if isinstance(value, nt.Array):
        def array(value, like, what):
            if value.shape != like.shape:
                raise ValueError(what)
            return value.astype(np.float64)
        return array
    if isinstance(value, nt.Boolean):
        return lambda value, like, what: 1.0 if value else 0.0
    if isinstance(value, (nt.Integer, nt.Float)):
        return lambda value, like, what: float(value)
    return None


def check_new(result, argument, what):
    """Raise ValueError(what) when an array result may share memory with an array argument
    (a rule returning `x` or a view of it: adjit gives every array name its own elements, so
    a write through one name would not show in the other as it does in numba)."""
    raise NotImplementedError("called only from compiled code")


@overload(check_new)
def _check_new(result, argument, what):
    if isinstance(result, nt.Array) and isinstance(argument, nt.Array):
        def check(result, argument, what):
            if result.size == 0 or argument.size == 0:
                return
            a0, a1 = extent(result)
            b0, b1 = extent(argument)
            if a0 < b1 and b0 < a1:
                raise ValueError(what)
        return check
    return lambda result, argument, what: None


def zero_like(value):
    """The zero tangent of an argument: zeros of an array's shape, 0.0 for a number."""
    raise NotImplementedError("called only from compiled code")


@overload(zero_like)
def _zero_like(value):
    if isinstance(value, nt.Array):
        return lambda value: np.zeros(value.shape)
    return lambda value: 0.0


class custom_vjp:
    """A function with its own reverse-mode rule (see the module docstring); give the rule
    with `.defvjp(fwd, bwd)`, and a forward-mode rule with `.defjvp(jvp)`."""

    def __init__(self, fun):
        py = getattr(fun, "py_func", fun)
        if not inspect.isfunction(py):
            raise AdjitError(f"custom_vjp needs a Python or @njit function, not {fun!r}")
        functools.update_wrapper(self, py)
        self.primal = fun if isinstance(fun, Dispatcher) else numba.njit(py)
        spec = inspect.getfullargspec(py)
        if spec.varargs or spec.varkw or spec.kwonlyargs:
            raise AdjitError(f"custom_vjp function `{py.__name__}` "
                             f"({py.__code__.co_filename}, line {py.__code__.co_firstlineno}) "
                             "takes *args, **kwargs or keyword-only parameters; name each "
                             "parameter.")
        self.params = tuple(spec.args)
        self.defaults = dict(zip(self.params[len(self.params) - len(spec.defaults or ()):],
                                 spec.defaults or ()))
        self.fwd = self.bwd = self.jvp = None
        self.helpers = None
        self._tupled = {}
        self._device = self._device_primal = None
        register_cuda_typeof()
        self.key = fresh_key(py.__name__)
        define_custom(self, f"custom_vjp function `{py.__name__}`", "array", handler="custom",
                      notes="the user's own rule")

    def __call__(self, *args, **kwargs):
        return self.primal(*args, **kwargs)

    def __repr__(self):
        return f"<adjit.custom_vjp {self.__name__}>"

    def __adjit_parts__(self):
        """What a cached gradient calling this function depends on (codegen/emit.py)."""
        return (self.primal, self.fwd, self.bwd, self.jvp)

    def __reduce__(self):
        return (_by_name, (self.__module__, self.__qualname__))

    @property
    def where(self):
        code = self.__wrapped__.__code__
        return f"`{self.__name__}` ({code.co_filename}, line {code.co_firstlineno})"

    def defvjp(self, fwd, bwd):
        """Give the reverse-mode rule: `fwd(*args) -> (result, residuals)` and
        `bwd(residuals, g) -> (one cotangent per argument)`; plain Python or @njit."""
        if self.fwd is not None:
            raise AdjitError(f"custom_vjp function {self.where} already has a rule",
                             "Give defvjp once, before the first gradient that uses it.")
        _refuse_random(fwd, self)
        self.fwd, self.bwd = _compiled(fwd), _compiled(bwd)
        self._register()

    def defjvp(self, jvp):
        """Give the forward-mode rule: `jvp(primals, tangents) -> (result, tangent)`, both
        tuples with one entry per argument, linear in the tangents. Returns jvp (usable as a
        decorator)."""
        if self.fwd is None:
            raise AdjitError(f"custom_vjp function {self.where} has no reverse rule yet",
                             "Call defvjp(fwd, bwd) first, then defjvp(jvp).")
        if self.jvp is not None:
            raise AdjitError(f"custom_vjp function {self.where} already has a tangent rule",
                             "Give defjvp once.")
        self.jvp = _compiled(jvp)
        self._register()
        return jvp

    # the helpers generated code calls ---------------------------------------------------
    def _register(self):
        n = len(self.params)
        slots = tuple(f"p{k}" for k in range(n))   # (the user's names could clash with ours)
        ps = ", ".join(slots)
        k0 = self.key
        alias = (f"adjit: the fwd rule of the custom_vjp function `{self.__name__}` returned "
                 "an array that shares memory with an argument (the argument itself or a view "
                 "of it): return a new array (x.copy())")
        lines = [f"def {k0}_value({ps}):", f"    r = fwd({ps})[0]"]
        lines += [f"    check_new(r, {p}, {alias!r})" for p in slots]
        lines += ["    return r",
                  f"def {k0}_vjp({ps}, g):",
                  f"    c = bwd(fwd({ps})[1], g)",
                  "    return (" + "".join(
                      f"owned(c[{k}], p{k}, {self._shape_message('cotangent', p)!r}), "
                      for k, p in enumerate(self.params)) + ")",
                  f"def {k0}_cotangents({ps}, g):",
                  f"    return bwd(fwd({ps})[1], g)"]
        if self.jvp is not None:
            for k in range(n):
                tangents = ", ".join("d" if j == k else f"zero_like({p})"
                                     for j, p in enumerate(slots))
                lines += [f"def {k0}_jvp{k}({ps}, d):",
                          f"    r = jvp(({ps},), ({tangents},))",
                          f"    return owned(r[1], r[0], "
                          f"{self._shape_message('tangent', None)!r})"]
        ns = {"fwd": self.fwd, "bwd": self.bwd, "jvp": self.jvp, "owned": owned,
              "check_new": check_new,
              "zero_like": zero_like, "np": np, "__name__": __name__}
        exec(compile("\n".join(lines) + "\n", f"<custom_vjp {self.__name__}>", "exec"), ns)  # noqa: S102
        before = self.helpers or {}     # (defjvp after defvjp: those compiled already stay)
        helpers = {name: before.get(name) or numba.njit(ns[name]) for name in _defined(lines)}
        tangent = tuple(f"{k0}_jvp{k}({ps}, d)" if self.jvp is not None else None
                        for k in range(n))
        rule = ArrayRule(
            k0, slots, tuple(f"shared[{k}]" for k in range(n)), tangent,
            functools.partial(_result_of, helpers[f"{k0}_value"]),
            shared=f"{k0}_vjp({ps}, out_bar)", helpers=helpers,
            missing_tangent=None if self.jvp is not None else
            f"forward mode through the custom_vjp function {self.where}, which has no "
            "tangent rule")
        value = helpers[f"{k0}_value"]
        if self.helpers is None:
            define_custom(value, f"custom_vjp function `{self.__name__}`", "array",
                          handler="keep", array_rule=rule)
        else:       # defjvp after defvjp: the same helper, its rule now with tangents
            set_array_rule(value, rule)
        for k in range(n if self.jvp is not None else 0):
            define_custom(helpers[f"{k0}_jvp{k}"], f"the tangent rule of `{self.__name__}`",
                          "array", handler="keep", array_rule=self._tangent_rule(k, value))
        self._device = None
        self._tupled = {}       # (made again, with the tangent rule, where a call needs them)
        for name, helper in helpers.items():
            if name != f"{k0}_cotangents":     # (only check_call types that one, on the CPU)
                set_device_twin(helper, functools.partial(self._device_helper, name))
        self.helpers = helpers

    def tupled(self, descs, error):
        """The value helper for a call passing tuples (`descs`: the arguments' descriptors,
        a tuple's ("tuple", items), nested): helpers taking each number and array inside the
        tuples as a parameter of its own, rebuilding the tuples for fwd and bwd, so that
        every leaf is an operand of the call with its cotangent (the tuple's cotangent from
        bwd, of the tuple's structure, or None: zeros there, refused where differentiated)
        and, with a tangent rule, its tangent (jvp given the tangent in that leaf and zeros
        in the others; second derivatives through it are refused). Made once per structure
        of the arguments."""
        key = tuple(descs)
        if key in self._tupled:
            return self._tupled[key]
        flat, leaf_descs, paths, classes = [], [], [], {}

        def leaves(k, d, path):
            if d[0] == "tuple":
                if len(d) > 2:
                    classes[_class_name(d[2])] = named_class(d[2])
                for i, e in enumerate(d[1]):
                    leaves(k, e, path + (i,))
                return
            flat.append("_".join(["p" + str(k)] + [str(i) for i in path]))
            leaf_descs.append(d)
            paths.append((k, path))
        for k, d in enumerate(descs):
            leaves(k, d, ())
        names = iter(flat)
        rebuilt = [_spelled(d, str, names) for d in descs]
        g = self._result_desc(descs)
        bars = _type_of(self.helpers[f"{self.key}_cotangents"], list(descs) + [g])
        k0 = fresh_key(f"{self.key}_t{len(self._tupled) + 1}")
        args, ps = ", ".join(rebuilt), ", ".join(flat)
        alias = (f"adjit: the fwd rule of the custom_vjp function `{self.__name__}` returned "
                 "an array that shares memory with an argument (the argument itself or a view "
                 "of it): return a new array (x.copy())")
        cotangents, unanswered = [], {}
        for j, (name, (k, path)) in enumerate(zip(flat, paths)):
            if descs[k][0] == "tuple" and _none_on(bars[k], path):
                cotangents.append(f"zero_like({name})")
                unanswered[j] = (
                    f"a derivative through the tuple `{self.params[k]}` of the custom_vjp "
                    f"function {self.where}, whose bwd rule returns None for it (or for the "
                    f"part of it holding the value differentiated)",
                    "Return the tuple's cotangents (a tuple of its structure: a number for "
                    "a number, an array for an array), or pass the value differentiated "
                    "outside the tuple.")
                continue
            at = f"c[{k}]" + "".join(f"[{i}]" for i in path)
            cotangents.append(f"owned({at}, {name}, "
                              f"{self._shape_message('cotangent', self.params[k])!r})")
        lines = [f"def {k0}_value({ps}):", f"    r = fwd({args})[0]"]
        lines += [f"    check_new(r, {p}, {alias!r})" for p in flat]
        lines += ["    return r",
                  f"def {k0}_vjp({ps}, g):",
                  f"    c = bwd(fwd({args})[1], g)",
                  "    return (" + "".join(c + ", " for c in cotangents) + ")"]
        if self.jvp is not None:        # the tangent in each leaf, the others' zero
            for j in range(len(flat)):
                names = iter(flat)
                tangents = ", ".join(_spelled(d, lambda leaf: "d" if leaf == flat[j] else
                                              f"zero_like({leaf})", names) for d in descs)
                lines += [f"def {k0}_jvp{j}({ps}, d):",
                          f"    r = jvp(({args},), ({tangents},))",
                          f"    return owned(r[1], r[0], "
                          f"{self._shape_message('tangent', None)!r})"]
        ns = {"fwd": self.fwd, "bwd": self.bwd, "jvp": self.jvp, "owned": owned,
              "check_new": check_new, "zero_like": zero_like, "np": np, "__name__": __name__,
              **classes}
        exec(compile("\n".join(lines) + "\n", f"<custom_vjp {self.__name__}>", "exec"), ns)  # noqa: S102
        helpers = {name: numba.njit(ns[name]) for name in _defined(lines)}
        value = helpers[f"{k0}_value"]

        def result(args):
            return (g[1], "f") if g[0] == "array" else (0, "f")
        tangent = tuple(f"{k0}_jvp{j}({ps}, d)" if self.jvp is not None else None
                        for j in range(len(flat)))
        rule = ArrayRule(
            k0, tuple(flat), tuple(f"shared[{j}]" for j in range(len(flat))), tangent, result,
            shared=f"{k0}_vjp({ps}, out_bar)", helpers=helpers,
            missing_tangent=None if self.jvp is not None else (
                f"forward mode through the custom_vjp function {self.where}, which has no "
                "tangent rule", "Give it one with .defjvp(jvp), or use reverse mode (grad, "
                "vjp, jacrev)."),
            unanswered=unanswered)
        # (no device twins: CUDA code calling it is refused, pipeline._refuse_local_arrays)
        define_custom(value, f"custom_vjp function `{self.__name__}` with a tuple argument",
                      "array", handler="keep", array_rule=rule, cuda=False)
        # second derivatives differentiate a jvp's source in reverse: its tangent helpers
        # are refused there by name (reverse expressions that only mark every operand as
        # differentiable, so that validate's `unanswered` sees the derivative flow)
        refusal = (f"second derivatives through the custom_vjp function {self.where} called "
                   "with a tuple argument", "Pass the tuple's numbers and arrays as arguments "
                   "of their own, or take first derivatives only.")
        for j in range(len(flat) if self.jvp is not None else 0):
            every = {i: refusal for i in range(len(flat) + 1)}
            define_custom(helpers[f"{k0}_jvp{j}"], f"the tangent rule of `{self.__name__}` "
                          "with a tuple argument", "array", handler="keep", cuda=False,
                          array_rule=ArrayRule(
                              f"{k0}_jvp{j}", tuple(flat) + ("d",),
                              ("0.0",) * (len(flat) + 1), (None,) * (len(flat) + 1), result,
                              missing_tangent=refusal, unanswered=every))
        self._tupled[key] = value, leaf_descs
        return self._tupled[key]

    def _device_helper(self, name):
        """The CUDA device version of the helper `name` (kernels and device functions call
        the function on numbers: no shape checks, no copies), made when CUDA code first
        calls it, with the rules compiled for the GPU."""
        if self._device is None:
            from numba import cuda

            def device(fn):
                return None if fn is None else cuda.jit(device=True)(getattr(fn, "py_func", fn))
            n = len(self.params)
            ps = ", ".join(f"p{k}" for k in range(n))
            k0 = self.key
            lines = [f"def {k0}_value({ps}):", f"    return fwd({ps})[0]",
                     f"def {k0}_vjp({ps}, g):", f"    return bwd(fwd({ps})[1], g)"]
            for k in range(n if self.jvp is not None else 0):
                tangents = ", ".join("d" if j == k else "0.0" for j in range(n))
                lines += [f"def {k0}_jvp{k}({ps}, d):",
                          f"    return jvp(({ps},), ({tangents},))[1]"]
            ns = _exec_all("\n".join(lines) + "\n", f"{k0}_device",
                           {"fwd": device(self.fwd), "bwd": device(self.bwd),
                            "jvp": device(self.jvp)})
            self._device = {key: cuda.jit(device=True)(ns[key]) for key in _defined(lines)}
        return self._device[name]

    def _tangent_rule(self, k, value):
        """The reverse rule of the k-th tangent helper (`{key}_jvp{k}(p0, ..., d)`, the
        result's tangent in argument k), which a second derivative differentiates (hvp is
        reverse over forward): the vjp, by adjit, of the user's jvp rule written as a
        function of the arguments and that tangent. Compiled when first used."""
        if _VJP is None:
            raise AdjitError("adjit.custom needs adjit.api imported (import adjit)")
        n = len(self.params)
        slots = tuple(f"p{j}" for j in range(n))
        ps = ", ".join(slots)
        tangents = ", ".join("d" if j == k else f"0.0 * {p}" for j, p in enumerate(slots))
        name = f"{self.key}_tangent{k}"
        wrapper = exec_source(f"def {name}({ps}, d):\n"
                              f"    r = jvp(({ps},), ({tangents},))\n"
                              f"    return r[1]\n", name,
                              {"jvp": getattr(self.jvp, "py_func", self.jvp)})
        rule = f"{self.key}_tvjp{k}"

        def result(args):
            ints = [p for p, (_, is_float) in zip(self.params, args[:-1]) if not is_float]
            if ints:        # (adjit's vjp of the rule would be asked for d/d of an integer)
                raise AdjitError(f"second derivatives through the custom_vjp function "
                                 f"{self.where}, called with an integer `{ints[0]}`. Pass "
                                 "it as a float (n * 1.0), or take second derivatives of "
                                 "code that does not call the function.")
            return _result_of(value, args[:-1])
        return ArrayRule(
            f"{self.key}_jvp{k}", slots + ("d",), tuple(f"shared[{j}]" for j in range(n + 1)),
            (None,) * (n + 1), result,
            shared=f"{rule}({ps}, d, out_bar)[1]",
            helpers={rule: _VJP(wrapper, tuple(range(n + 1)))},
            missing_tangent=f"a third derivative through the custom_vjp function {self.where}")

    def _shape_message(self, what, param):
        of = f"for `{param}`" if param else "of the result"
        rule = "bwd" if what == "cotangent" else "jvp"
        return (f"adjit: the {rule} rule of the custom_vjp function `{self.__name__}` returned "
                f"a {what} {of} with another shape than "
                f"{'that argument' if param else 'the result'}: return one of its shape")

    # checks made where a call is normalized (numpy_calls.lower_custom) -------------------
    def require_rule(self, error):
        """`error(what, instead)` raised at a call in differentiated code before defvjp."""
        if self.fwd is None:
            raise error(f"a call to the custom_vjp function `{self.__name__}`, which has no "
                        "rule", f"Give it one with {self.__name__}.defvjp(fwd, bwd) before "
                        "differentiating code that calls it.")

    def check_call(self, descs, error):
        """The result descriptor of a call on arguments of these descriptors; `error(what,
        instead)` raises at the call for a rule that does not fit the arguments (the
        function has its rule: require_rule)."""
        for k, d in enumerate(descs):
            if d[0] == "array":
                for role, fn in (("fwd rule", self.fwd), ("primal", self.primal)):
                    line = _writes_to(fn, k)
                    if line is not None:
                        raise error(f"the {role} of the custom_vjp function `{self.__name__}`, "
                                    f"which changes its array argument `{self.params[k]}` in "
                                    f"place (line {line})", "A rule cannot say what the "
                                    "change does to the caller's array, and fwd runs again "
                                    "in the backward sweep: compute into a new array "
                                    "(v = v / n, not v /= n).")
        fwd_type = _type_of(self.fwd, descs)
        if isinstance(fwd_type, str):
            raise error(f"the fwd rule of `{self.__name__}` on these arguments ({fwd_type})",
                        "fwd takes the primal's arguments and returns (result, residuals).")
        if not isinstance(fwd_type, nt.BaseTuple) or len(fwd_type) != 2:
            raise error(f"the fwd rule of `{self.__name__}`, which returns {fwd_type}",
                        "Return a pair: (the primal's result, residuals), residuals a value or "
                        "a tuple.")
        out = opaque._descriptor(fwd_type[0])
        if out is None or out[0] not in ("f", "i", "array") or \
                (out[0] == "array" and out[2] != "f"):
            raise error(f"the custom_vjp function `{self.__name__}` with a result of type "
                        f"{fwd_type[0]}", "Return one float or one float array (a tuple of "
                        "results: write one custom_vjp function per result).")
        g = ("f",) if out[0] != "array" else out
        bars = _type_of(self.helpers[f"{self.key}_cotangents"], list(descs) + [g])
        for k, d in enumerate(descs):
            if d[0] == "tuple" and _holds_array(d):
                why = purity.proof(self.fwd, tuple(_numba_type(x) for x in descs))
                if why is not None and not why[0].startswith("may return a view"):
                    raise error(f"the fwd rule of the custom_vjp function `{self.__name__}` "
                                f"given arrays in the tuple `{self.params[k]}`: adjit cannot "
                                f"show it leaves them unchanged (it {why[0]}"
                                f"{'' if why[1] is None else f', line {why[1]}'})",
                                "fwd runs again in the backward sweep: compute into new "
                                "arrays, or pass the arrays as arguments of their own.")
        n = len(self.params)
        if isinstance(bars, str) or not isinstance(bars, nt.BaseTuple) or len(bars) != n:
            what = bars if isinstance(bars, str) else f"returns {bars}"
            raise error(f"the bwd rule of `{self.__name__}` ({what})",
                        f"bwd(residuals, g) returns a tuple of {n} cotangent(s), one per "
                        "argument of the primal (0.0 for one without a derivative).")
        for k, (d, t) in enumerate(zip(descs, bars)):
            if d[0] == "tuple":
                if not _fits(d, t):
                    raise error(f"the bwd rule of `{self.__name__}`: its cotangent for the "
                                f"tuple `{self.params[k]}` is {t}", "Return a tuple of the "
                                "argument's structure (a number for a number, an array of "
                                "the same dimensions for an array; None for the whole tuple or "
                                "a part of it where nothing is differentiated).")
                continue
            if not isinstance(t, (nt.Array, nt.Integer, nt.Float, nt.Boolean)):
                raise error(f"the bwd rule of `{self.__name__}`: its cotangent for "
                            f"`{self.params[k]}` is {t}", "Return a number for a number and "
                            "an array of its shape for an array (0.0 or zeros for one without "
                            "a derivative).")
            want_array = d[0] == "array"
            if want_array != isinstance(t, nt.Array) or (want_array and t.ndim != d[1]):
                raise error(f"the bwd rule of `{self.__name__}`: its cotangent for "
                            f"`{self.params[k]}` is {t}", "Return a cotangent of the "
                            "argument's shape: a number for a number, an array of the same "
                            "dimensions for an array.")
        return out

    def _result_desc(self, descs):
        """The descriptor of the result (a float or a float array) on these arguments."""
        return opaque._descriptor(_type_of(self.fwd, descs)[0])


def _none_on(t, path):
    """Whether the cotangent type `t` of a tuple is None at `path` or at a part holding it."""
    for i in path:
        if t == nt.none:
            return True
        t = t[i]
    return t == nt.none


def _spelled(desc, leaf, names):
    """Python source of a value of the structure `desc` whose leaves are `leaf(name)`, the
    names taken in order from the iterator `names` (a named tuple made by its class, held
    in the helpers' namespace as `_named_<fields>`)."""
    if desc[0] == "tuple":
        items = "".join(_spelled(d, leaf, names) + ", " for d in desc[1])
        return f"{_class_name(desc[2])}({items})" if len(desc) > 2 else f"({items})"
    return leaf(next(names))


def _class_name(fields):
    """The class's name in the helpers' namespace: numbered, as field names joined could
    coincide (('a', 'b_a') and ('a_b', 'a'))."""
    named_class(fields)
    return f"_named_{_NAMED[fields][1]}"


def _defined(lines):
    """The names of the functions generated source `lines` defines."""
    return [line[4:line.index("(")] for line in lines if line.startswith("def ")]


def _holds_array(desc):
    return desc[0] == "array" or desc[0] == "tuple" and any(_holds_array(d) for d in desc[1])


def _fits(desc, t):
    """Whether numba type `t` is a cotangent for an argument of descriptor `desc` inside a
    tuple: an array of its dimensions for an array, a number for a number, the same
    structure for a tuple, or None (no cotangent: zeros, refused where differentiated)."""
    if t == nt.none:
        return True
    if desc[0] == "tuple":
        return isinstance(t, nt.BaseTuple) and len(t) == len(desc[1]) and \
            all(_fits(d, x) for d, x in zip(desc[1], t))
    if desc[0] == "array":
        return isinstance(t, nt.Array) and t.ndim == desc[1]
    return isinstance(t, (nt.Integer, nt.Float, nt.Boolean))


class _ForeignRule(custom_vjp):
    """The rule adjit.defvjp gives a function the user does not own (a cfunc, a ctypes or
    address-wrapper function, someone else's dispatcher): a custom_vjp whose primal is that
    object itself, its parameters those of the rule's `fwd`."""

    def __init__(self, obj, fwd):
        py = getattr(fwd, "py_func", fwd)
        if not inspect.isfunction(py):
            raise AdjitError(f"adjit.defvjp needs a Python or @njit fwd, not {fwd!r}")
        functools.update_wrapper(self, py)
        self.__name__ = getattr(obj, "__name__", None) or py.__name__
        self.obj = obj
        self.primal = obj
        spec = inspect.getfullargspec(py)
        if spec.varargs or spec.varkw or spec.kwonlyargs:
            raise AdjitError(f"the fwd rule `{py.__name__}` given to adjit.defvjp takes "
                             "*args, **kwargs or keyword-only parameters; name each "
                             "parameter, as the function takes them.")
        self.params = tuple(spec.args)
        self.defaults = {}
        self.fwd = self.bwd = self.jvp = None
        self.helpers = None
        self._tupled = {}
        self._device = self._device_primal = None
        self.key = fresh_key(self.__name__)
        define_custom(self, f"the function `{self.__name__}` (adjit.defvjp)", "array",
                      handler="custom", notes="the user's own rule")

    def __repr__(self):
        return f"<adjit.defvjp rule of {self.obj!r}>"

    def __reduce__(self):
        raise TypeError("a gradient through adjit.defvjp rules does not pickle: define them "
                        "in the process that uses it")

    @property
    def where(self):
        return f"`{self.__name__}` (given a rule by adjit.defvjp)"


def defvjp(obj, fwd, bwd):
    """Give `obj`, a function you do not own (a `cfunc`, a ctypes function, a scipy.special
    function reached through numba's address wrappers, a dispatcher in someone else's
    package), a reverse-mode rule shaped as custom_vjp's: `fwd(*args) -> (result,
    residuals)`, `bwd(residuals, g) -> one cotangent per argument`. Every call of `obj` in
    differentiated code, in any function it calls, then uses it."""
    if isinstance(obj, custom_vjp):
        raise AdjitError(f"{obj!r} is a custom_vjp function", "Give its rule with "
                         f"{obj.__name__}.defvjp(fwd, bwd).")
    if not callable(obj):
        raise AdjitError(f"adjit.defvjp needs a function, not {obj!r}")
    if attached_rule(obj) is not None:
        raise AdjitError(f"{obj!r} already has a rule from adjit.defvjp",
                         "Give it once, before the first gradient that calls it.")
    rule = _ForeignRule(obj, fwd)
    rule.defvjp(fwd, bwd)
    attach_rule(obj, rule)
    return rule


def defjvp(obj, jvp):
    """Give `obj` (already given a reverse rule by adjit.defvjp) a forward-mode rule shaped
    as custom_vjp's defjvp: `jvp(primals, tangents) -> (result, tangent)`."""
    rule = attached_rule(obj)
    if rule is None:
        raise AdjitError(f"{obj!r} has no rule from adjit.defvjp yet",
                         "Call adjit.defvjp(obj, fwd, bwd) first, then adjit.defjvp(obj, jvp).")
    rule.defjvp(jvp)
    return jvp


@functools.lru_cache(maxsize=None)
def _writes_to(fn, k):
    """The line of a statement of fn (a Python or @njit function) writing into its k-th
    parameter in place (`v[i] = ...`, `v /= n`, `v.fill(0)`), or None; None too when its
    source cannot be read."""
    py = getattr(fn, "py_func", fn)
    try:
        src = read_function(py)
    except Exception:   # noqa: BLE001 - no source: nothing to check
        return None
    params = [a.arg for a in src.tree.args.posonlyargs + src.tree.args.args]
    if k >= len(params):
        return None
    name = params[k]

    def base(node):
        while isinstance(node, (ast.Subscript, ast.Attribute)):
            node = node.value
        return node.id if isinstance(node, ast.Name) else None

    rebinds = [node.lineno for node in ir.walk(src.tree) if isinstance(node, ast.Assign)
               and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)]
    until = min(rebinds, default=float("inf"))     # (v = v / n: a new array from there on)
    for node in ir.walk(src.tree):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AugAssign) else []
        writes = any(isinstance(t, ast.Subscript) and base(t) == name for t in targets) or \
            (isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and
             node.target.id == name) or \
            (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and
             node.func.attr in ("fill", "sort", "resize", "itemset") and
             base(node.func.value) == name)
        if writes and node.lineno < until:
            return node.lineno
    return None


def _by_name(module, qualname):
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _compiled(fn):
    if isinstance(fn, Dispatcher):
        return fn
    if isinstance(fn, custom_vjp):
        return fn.primal
    if not inspect.isfunction(fn):
        raise AdjitError(f"a custom_vjp rule must be a Python or @njit function, not {fn!r}")
    return numba.njit(fn)


def named_class(fields):
    """The named tuple class a custom_vjp function's rules get a named tuple argument as
    (the user's class is not known where the call is normalized; fwd and bwd read its
    fields by name)."""
    if fields not in _NAMED:
        _NAMED[fields] = (collections.namedtuple("NamedArgument", fields), len(_NAMED))
    return _NAMED[fields][0]


_NAMED = {}     # fields -> (the class, the number naming it in generated helpers)


def _numba_type(desc):
    if desc[0] == "tuple":
        items = [_numba_type(d) for d in desc[1]]
        if len(desc) > 2:       # a named tuple
            cls = named_class(desc[2])
            if len(set(items)) == 1:
                return nt.NamedUniTuple(items[0], len(items), cls)
            return nt.NamedTuple(items, cls)
        return nt.Tuple(items)
    if desc[0] == "const":
        v = desc[1]
        return nt.boolean if isinstance(v, bool) else nt.int64 if isinstance(v, int) else \
            nt.float64
    return opaque._numba_type(desc)


def _type_of(dispatcher, descs):
    """numba's result type of dispatcher on arguments of these descriptors, or its message."""
    return opaque.compiled_type(dispatcher, tuple(_numba_type(d) for d in descs))


def _result_of(value, args):
    """The ArrayRule result: (ndim, dtype) of the call, from its arguments' (ndim, is_float)."""
    descs = [("array", nd, "f" if fl else "i") if nd else ("f",) if fl else ("i",)
             for nd, fl in args]
    t = _type_of(value, descs)
    if isinstance(t, nt.Array):
        return t.ndim, "f"
    return 0, "f"


def _refuse_random(fwd, owner):
    """fwd runs again in the backward sweep: a random draw in it would differ there."""
    seen = set()

    def draws(fn, depth):
        fn = getattr(fn, "py_func", fn)
        if not inspect.isfunction(fn) or id(fn) in seen or depth > 4:
            return False
        seen.add(id(fn))
        attributes = set(code_names(fn.__code__))
        for _, obj in referenced(fn):
            if obj is np.random or (obj is np and "random" in attributes) or \
                    getattr(obj, "__module__", "") in ("numpy.random", "numpy.random.mtrand"):
                return True
            if draws(obj, depth + 1):
                return True
        return False

    if draws(fwd, 0):
        raise AdjitError(f"the fwd rule of the custom_vjp function {owner.where} draws random "
                         "numbers", "adjit computes the residuals again in the backward sweep "
                         "from the arguments: draw outside and pass the draw in as an "
                         "argument.")


@typeof_impl.register(custom_vjp)
def _typeof_custom(val, c):
    """In @njit code a custom_vjp function is its compiled primal."""
    return nt.Dispatcher(val.primal)


_CUDA_TYPEOF = []


def register_cuda_typeof():
    """In numba.cuda kernels a custom_vjp function is its primal compiled as a device
    function: numba-cuda's typeof learns it once numba.cuda is imported (called by
    custom_vjp and by adjit.cuda; the simulator runs kernels as Python and needs nothing)."""
    if _CUDA_TYPEOF or "numba.cuda" not in sys.modules:
        return
    from numba.core import config
    _CUDA_TYPEOF.append(True)
    if config.ENABLE_CUDASIM:
        return
    try:
        from numba.cuda.typing.typeof import typeof_impl as cuda_typeof
    except ImportError:     # (a numba-cuda without its own typeof: numba's serves it)
        return

    @cuda_typeof.register(custom_vjp)
    def _typeof_custom_on_the_gpu(val, c):
        if val._device_primal is None:
            from numba import cuda
            val._device_primal = cuda.jit(device=True)(val.primal.py_func)
        return cuda_typeof(val._device_primal, c)
