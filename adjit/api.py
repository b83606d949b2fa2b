"""The public API: grad, value_and_grad, and the callable gradient object they return."""
import functools
import inspect
import sys
import threading

import numba
from numba.core import errors as numba_errors
from numba.core import registry
from numba.extending import overload, typeof_impl

from .api_stop import stop_gradient
from .errors import AdjitError, error_at
from .transform import build, check_argnums


class _Mode:
    def __init__(self, name, with_value, single, extra=None):
        self.name = name
        self.with_value = with_value
        self.single = single
        self.extra = extra      # the trailing argument vjp/jvp take: "cotangent", "tangent"


_KINDS = {"grad": (False, None), "value_and_grad": (True, None),
          "vjp": (True, "cotangent"), "jvp": (True, "tangent")}


class GradientFunction:
    """A compiled gradient of a user function.

    Call it like the original function. It compiles (once per argument types) on first use,
    from Python or from inside another @numba.njit function. `.source` is the generated
    adjoint for the most recent argument types. Threads may share one object (compilation
    happens once, under a lock); pickling sends the function and options, and the receiving
    process compiles afresh.
    """

    def __init__(self, fn, argnums, with_value, fastmath=False, kind=None):
        functools.update_wrapper(self, fn, updated=())
        self.__adjit_function__ = getattr(fn, "py_func", fn)
        self.fn = fn
        self._argnums_arg = argnums
        self.argnums = check_argnums(fn, argnums)
        kind = kind or ("value_and_grad" if with_value else "grad")
        with_value, extra = _KINDS[kind]
        self.mode = _Mode(kind, with_value, isinstance(argnums, int), extra)
        self.fastmath = fastmath
        self._specs = {}
        self._last = None
        self._fast = None      # (Python types of the arguments, spec): one atomic read
        self._lock = threading.RLock()
        self._stub = _make_stub(self)

    def specialize(self, arg_types):
        """The Transformed specialization for these numba argument types."""
        key = tuple(arg_types)
        with self._lock:
            spec = self._specs.get(key)
            if spec is None:
                spec = build(self.fn, self.argnums, key, self.mode, self.fastmath)
                self._specs[key] = spec
            self._last = spec
            return spec

    def __call__(self, *args, **kwargs):
        if kwargs:
            args = self._positional(args, kwargs)
        pytypes = tuple(map(type, args))
        fast = self._fast
        if fast is not None and fast[0] == pytypes:
            try:
                return fast[1].dispatcher(*args)
            except TypeError as exc:
                if "No matching definition" not in str(exc):
                    raise
        spec = self.specialize(self._numba_types(args))
        self._fast = (pytypes, spec)
        try:
            return spec.dispatcher(*args)
        except numba_errors.TypingError as exc:
            raise AdjitError(f"numba could not compile the gradient of "
                             f"'{self.__adjit_function__.__qualname__}':\n{exc}\n"
                             f"generated source:\n{spec.source}") from None

    def _numba_types(self, args):
        """numba types of the arguments; an AdjitError for values numba cannot type at all
        (dicts, arbitrary objects). Values numba types but adjit cannot differentiate (a
        tuple, None, a string) are fine outside argnums; in argnums, build() refuses them."""
        out = []
        for k, a in enumerate(args):
            try:
                t = numba.typeof(a)
            except (ValueError, TypeError):
                t = None
            if t is None:
                fn = self.__adjit_function__
                params = list(inspect.signature(fn).parameters) + [self.mode.extra]
                name = params[k] if k < len(params) else f"#{k}"
                raise error_at((fn.__code__.co_filename, fn.__code__.co_firstlineno,
                                fn.__qualname__),
                               f"argument '{name}' is a {type(a).__name__} ({a!r:.60})",
                               "adjit compiles for floats, ints, bools and numpy arrays: pass "
                               "a float or np.array(...) instead (a tuple or list of numbers "
                               "as np.array(...); other settings as globals or constants).")
            out.append(t)
        return tuple(out)

    def __reduce__(self):
        """Pickle as (function, argnums, mode): the unpickling process compiles afresh, so
        gradients travel to multiprocessing and Dask workers. The function itself pickles
        by reference (a module-level def or @njit function); a module-level `@grad def f`
        is itself what its module holds under that name, so it pickles as that name."""
        module = sys.modules.get(getattr(self, "__module__", None) or "")
        if getattr(module, self.__qualname__, None) is self:
            return self.__qualname__
        return (_rebuild, (self.fn, self._argnums_arg, self.mode.with_value, self.fastmath,
                           self.mode.name))

    def _positional(self, args, kwargs):
        try:
            bound = _signature(self).bind(*args, **kwargs)
        except TypeError as exc:
            raise AdjitError(f"calling the gradient of "
                             f"'{self.__adjit_function__.__qualname__}': {exc}. Pass the "
                             f"arguments the function takes.") from None
        bound.apply_defaults()
        return bound.args

    @property
    def source(self):
        """The generated adjoint as Python source text."""
        if self._last is None:
            raise AdjitError("the adjoint depends on the argument types: call the gradient "
                             "once (or use .source_for(*args)) before reading .source")
        return self._last.source

    def source_for(self, *args):
        """The generated adjoint for these example arguments, without running it."""
        return self.specialize(self._numba_types(args)).source

    def __repr__(self):
        return f"<adjit {self.mode.name} of {self.__adjit_function__.__qualname__} " \
               f"argnums={self.argnums}>"


def _rebuild(fn, argnums, with_value, fastmath, kind=None):
    return GradientFunction(fn, argnums, with_value, fastmath, kind)


def _signature(gf):
    """The user function's signature, plus the cotangent/tangent parameter of vjp/jvp."""
    sig = inspect.signature(gf.__adjit_function__)
    if gf.mode.extra is None:
        return sig
    params = list(sig.parameters.values())
    name = gf.mode.extra
    while name in sig.parameters:
        name = "_" + name
    extra = inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if params and params[-1].default is not inspect.Parameter.empty:
        extra = extra.replace(default=None)
    return sig.replace(parameters=params + [extra])


def _make_stub(gf):
    """A Python function with the user's signature whose numba overload is the gradient,
    so that @njit code can call the GradientFunction like any jitted function."""
    params = list(_signature(gf).parameters)
    ns = {}
    exec(f"def stub({', '.join(params)}):\n    raise NotImplementedError\n", ns)  # noqa: S102
    stub = ns["stub"]

    def typer(*arg_types):
        return gf.specialize(arg_types).pyfunc

    typer.__signature__ = inspect.signature(stub)
    overload(stub)(typer)
    return stub


@typeof_impl.register(GradientFunction)
def _typeof_gradient(val, c):
    return registry.cpu_target.typing_context.resolve_value_type(val._stub)


def grad(fn=None, argnums=0, *, fastmath=False):
    """The gradient of `fn` with respect to the argument(s) in `argnums`.

    Use as `@grad` or `grad(f, argnums=(0, 2))`. With an int argnums the result is the
    gradient itself (a float for a float argument, an array of the argument's shape for an
    array); with a tuple it is a tuple in argnums order. `fn` must return a float.

    `fastmath` is passed to numba for the generated code (default False: IEEE arithmetic,
    reproducible to the bit). A set such as {"contract", "arcp", "nsz"} lets LLVM fuse and
    reorder the adjoint arithmetic while keeping NaN and inf semantics; it applies when the
    gradient is called from Python (inside @njit callers the caller's flags apply).
    """
    if fn is None:
        return lambda f: grad(f, argnums=argnums, fastmath=fastmath)
    return GradientFunction(fn, argnums, with_value=False, fastmath=fastmath)


def value_and_grad(fn=None, argnums=0, *, fastmath=False):
    """Like grad, but the compiled function returns (value, gradient)."""
    if fn is None:
        return lambda f: value_and_grad(f, argnums=argnums, fastmath=fastmath)
    return GradientFunction(fn, argnums, with_value=True, fastmath=fastmath)


def vjp(fn=None, argnums=0, *, fastmath=False):
    """Vector-Jacobian product: `vjp(f)(*args, cotangent) -> (out, gradient)`.

    `out` is f(*args), a float or a float array; `cotangent` has out's shape (a float for a
    float result) and the gradient is cotangent^T J with respect to the argnums arguments:
    the shape of the argument for an int argnums, a tuple for a tuple. With cotangent 1.0
    for a scalar f it is value_and_grad. Compiled like grad, callable from @njit code.
    """
    if fn is None:
        return lambda f: vjp(f, argnums=argnums, fastmath=fastmath)
    return GradientFunction(fn, argnums, True, fastmath, kind="vjp")


def jvp(fn=None, argnums=0, *, fastmath=False):
    """Jacobian-vector product (forward mode): `jvp(f)(*args, tangent) -> (out, out_tangent)`.

    `tangent` has the shape of the argument in argnums (a tuple of tangents, in argnums
    order, for a tuple argnums); `out_tangent` = J tangent has the shape of f's result. The
    tangent code runs alongside the primal in one compiled function, nothing is recorded.
    """
    if fn is None:
        return lambda f: jvp(f, argnums=argnums, fastmath=fastmath)
    return GradientFunction(fn, argnums, True, fastmath, kind="jvp")


__all__ = ["grad", "value_and_grad", "vjp", "jvp", "stop_gradient", "AdjitError",
           "GradientFunction"]
