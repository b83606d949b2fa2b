"""The public API: grad, value_and_grad, and the callable gradient object they return."""
import collections
import enum
import functools
import inspect
import keyword
import sys
import threading

import weakref

import numba
import numpy as np
from numba.core import errors as numba_errors
from numba.core import registry
from numba.core.datamodel.models import OpaqueModel
from numba.core.typing.typeof import Purpose
from numba.extending import NativeValue, overload, register_model, typeof_impl, unbox

from .api_stop import stop_gradient
from . import custom, higher, outline
from .errors import (AdjitError, AdjitWarning, CallValueError, error_at, function_origin,
                     internal_error, raised_by_user_code)
from .frontend.source import receive_script, script_source, ufunc_kernel
from .normalize import record_arrays, tuple_args
from .normalize.values import plain_enum, plain_enum_type
from .runtime.tape import RECORDED_TAPE_BYTES, TapeLimitError
from .transform import Mode as _Mode
from .transform import build, check_argnums
from .codegen.assemble import REPORTED
from .codegen.emit import exec_source


_KINDS = {"grad": (False, None), "value_and_grad": (True, None),
          "vjp": (True, "cotangent"), "jvp": (True, "tangent"), **higher.KINDS}


def _is_record(a):
    return isinstance(a, np.void) and a.dtype.names is not None


_RECORD_CLASSES = {}


def _record_tuple(rec, name, where):
    """A named tuple of the record's fields, of one class per dtype."""
    dtype = rec.dtype
    names = dtype.names
    bad = [f for f in names if not f.isidentifier() or keyword.iskeyword(f)]
    if bad or any(dtype.fields[f][0].shape or dtype.fields[f][0].names for f in names):
        raise error_at(where, f"argument '{name}' is a record (an np.void) whose fields are "
                       "not all numbers with names that are identifiers",
                       "Pass such a record's fields as arguments of their own.")
    cls = _RECORD_CLASSES.get(dtype)
    if cls is None:
        cls = _RECORD_CLASSES[dtype] = collections.namedtuple(
            f"record_{len(_RECORD_CLASSES)}", names)
        cls.__adjit_record__ = True     # (messages: read as params['x1'], not params.x1)
    return cls(*(rec[f] for f in names))     # (numpy scalars: float32 stays float32)


def _as_record(grad, dtype):
    """A record of `dtype` holding the gradient of a record's fields."""
    out = np.zeros((), dtype)
    for f, g in zip(dtype.names, grad):
        out[f] = g
    return out[()]


class GradientFunction:
    """A compiled gradient of a user function.

    Call it like the original function. It compiles (once per argument types) on first use,
    from Python or from inside another @numba.njit function. `.source` is the generated
    adjoint for the most recent argument types. Threads may share one object (compilation
    happens once, under a lock); pickling sends the function and options, and the receiving
    process compiles it once: every later copy it unpickles is the same object.
    """

    def __init__(self, fn, argnums, with_value, fastmath=False, kind=None, checkpoint=None,
                 tape_limit=None, cache=None, target="cpu", vector_math=True):
        self._of = None
        if isinstance(fn, GradientFunction):
            self._of = fn
            fn, kind = _of_gradient(fn, argnums, kind or ("value_and_grad" if with_value
                                                          else "grad"))
        kernel = ufunc_kernel(fn)
        if kernel is not None:
            # a @vectorize function (FinancePy's bs_value): its scalar kernel, which a call
            # with numbers runs
            fn = kernel
        functools.update_wrapper(self, fn, updated=())
        self.__adjit_function__ = getattr(fn, "py_func", fn)
        self.fn = fn
        self._argnums_arg = argnums
        self.argnums = check_argnums(fn, argnums)
        kind = kind or ("value_and_grad" if with_value else "grad")
        with_value, extra = _KINDS[kind]
        self.mode = _Mode(kind, with_value, isinstance(argnums, int), extra)
        self.fastmath = fastmath
        self.vector_math = bool(vector_math)
        self.checkpoint = _check_checkpoint(self, checkpoint)
        self.tape_limit = _check_limit(self, tape_limit)
        self.cache = None if cache is None else bool(cache)
        self.target = _check_target(self, target)
        self._cuda_stub = None
        if self.target == "cuda":
            _register_cuda_typeof()
        self._specs = {}
        self._last = None
        self._called = None     # the specialization the last call from Python ran
        self._fast = None      # (Python types of the arguments, spec): one atomic read
        self._lock = threading.RLock()
        self._vararg = any(q.kind is inspect.Parameter.VAR_POSITIONAL for q in
                           inspect.signature(self.__adjit_function__).parameters.values())
        self._order = _parameter_order(self)
        self._stub = _make_stub(self)

    def specialize(self, arg_types):
        """The Transformed specialization for these numba argument types."""
        key = tuple(arg_types)
        with self._lock:
            spec = self._specs.get(key)
            try:
                if spec is None and self.mode.name in higher.KINDS:
                    spec = self._specs[key] = higher.specialize(self, key)
                if spec is None:
                    spec = self._build(key, self.checkpoint or None)
                    spec.types = key
                    spec.adapt = self.checkpoint is None and self.target == "cpu" and \
                        spec.stats is not None
                    self._specs[key] = spec
            except (AdjitError, AdjitWarning):     # (a warning the user made an error)
                raise
            except Exception as exc:    # a bug in adjit (the pipeline's own net is inside
                # build(); this one also covers the steps of higher.py around it)
                if raised_by_user_code(exc):
                    raise
                raise internal_error(function_origin(self.__adjit_function__),
                                     f"while building its {self.mode.name}", exc) from exc
            self._last = spec
            return spec

    def __call__(self, *args, **kwargs):
        if kwargs or self._vararg or len(args) != len(self._order):
            args = self._positional(args, kwargs)
        if self.mode.name not in higher.KINDS and any(isinstance(a, tuple) for a in args):
            # (a member of an IntEnum on its own is read as its int by the pipeline, which
            # also reads its `.value`: _enum_values)
            args = tuple(_int_enums_in_tuple(a) if isinstance(a, tuple) else a for a in args)
        if self.target == "cpu" and any(_is_record(a) for a in args):
            if self.mode.name in ("grad", "value_and_grad"):
                return self._with_records(args)
            if not any(_is_record(args[k]) for k in self.argnums if k < len(args)):
                # a record outside argnums (a model's parameters held fixed): the named
                # tuple of its fields, as a call of grad passes it
                args = self._records_as_tuples(args)
        if self.target == "cuda":
            # a device function called from Python, or from a kernel in the CUDA simulator:
            # the generated Python function itself (numba-cuda compiles it inside kernels)
            return _device_callable(self.specialize(self._numba_types(args)))(*args)
        pytypes = tuple(_python_key(a) for a in args)
        # (a plain Enum's member is typed as one, and passed as its value: _enum_values)
        values = self._enum_values(args) if any(isinstance(a, enum.Enum) for a in args) \
            else args
        fast = self._fast
        if fast is not None and fast[0] == pytypes:
            spec = self._called = fast[1]
            try:
                return self._run(spec, pytypes, values)
            except TypeError as exc:
                if "No matching definition" not in str(exc):
                    raise
        spec = self.specialize(self._numba_types(args))
        self._fast = (pytypes, spec)
        self._called = spec
        try:
            return self._run(spec, pytypes, values)
        except numba_errors.TypingError as exc:
            raise AdjitError(f"numba could not compile the gradient of "
                             f"'{self.__adjit_function__.__qualname__}':\n{exc}\n"
                             f"generated source:\n{spec.source}") from None

    def _enum_values(self, args):
        """The arguments with each member of a plain enum.Enum (`OptionTypes.CALL`) its
        value: the derivative is built for the member's type (its class), and reads the
        value as numba reads the member (normalize/values.py EnumValue: compared with
        members of its class, whose values are distinct, and `.value`). An IntEnum's
        member is its int (`.value` of the argument reads it: anf.int_enum_argument)."""
        out = []
        for k, a in enumerate(args):
            if plain_enum(a):
                self._refuse_enum(k, type(a).__name__, a.value)
                a = a.value
            elif isinstance(a, enum.IntEnum) and self.mode.name not in higher.KINDS:
                a = int(a)      # (second derivatives compile for the member's type)
            out.append(a)
        return tuple(out)

    def _refuse_enum(self, k, kind, value):
        """An AdjitError for a member of the enum `kind` (its value `value`) passed as
        argument k where it cannot be read as its value: in argnums, or not a number."""
        fn = self.__adjit_function__
        name = self._order[k] if k < len(self._order) else f"#{k}"
        where = (fn.__code__.co_filename, fn.__code__.co_firstlineno, fn.__qualname__)
        if k in self.argnums:
            raise error_at(where, f"argument '{name}' is a member of the enum {kind}, which "
                           "has no derivative", f"Leave '{name}' out of argnums.")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise error_at(where, f"argument '{name}' is a member of the enum {kind}, whose "
                           f"value {value!r} is not a number",
                           "Give the enum's members int or float values (or pass a string "
                           "setting, mode=\"sum\").")

    def _records_as_tuples(self, args):
        """The arguments with each record (an np.void) the named tuple of its fields."""
        fn = self.__adjit_function__
        where = (fn.__code__.co_filename, fn.__code__.co_firstlineno, fn.__qualname__)
        return tuple(_record_tuple(a, self._order[k] if k < len(self._order) else f"#{k}",
                                   where) if _is_record(a) else a for k, a in enumerate(args))

    def _with_records(self, args):
        """A record (an np.void, `params[i]` of a structured array, as RRMPG's models take
        their parameters) passed as an argument: the function reads it as a named tuple of
        its fields (`p['x1']`, `p.x1`), as numba reads a record, and the record's gradient
        comes back as a record of its dtype (a field that is not a float: zero)."""
        result = self(*self._records_as_tuples(args))
        grads = result[1] if self.mode.with_value else result
        parts = [grads] if self.mode.single else list(grads)
        for j, k in enumerate(self.argnums):
            if _is_record(args[k]):
                parts[j] = _as_record(parts[j], args[k].dtype)
        grads = parts[0] if self.mode.single else tuple(parts)
        return (result[0], grads) if self.mode.with_value else grads

    def _run(self, spec, pytypes, args):
        try:
            if spec.adapt and not spec.tried:
                return self._first_call(spec, pytypes, args)
            return self._recorded(spec, pytypes, args)
        except AdjitError as exc:
            _explain_limit(exc, self._called)
            _locate(exc, self.__adjit_function__)
            raise

    def _recorded(self, spec, pytypes, args):
        """A call with the tape up to tape_limit; a gradient left to choose whose tape took
        more than the CPU's cache checkpoints from the next call on."""
        out = spec.call(*args)
        if spec.adapt and spec.stats[0] > RECORDED_TAPE_BYTES:
            self._checkpoint_instead(spec, pytypes)
        return out

    def _first_call(self, spec, pytypes, args):
        """The first call of a gradient left to choose (checkpoint=None) with these types:
        its tape capped at the CPU's largest cache. A tape that outgrows it (or tape_limit)
        stops the call there: the arguments get their values back (the function may write
        into them), and the call is made again, and every later one, with the time loops
        checkpointed (checkpoint="auto": the same numbers to the bit). A gradient that
        makes a call which must run once (a random draw, a message), or takes an argument
        whose values cannot be put back, runs once, recorded."""
        spec.tried = True
        if (spec.source, spec.types) in _OUTGREW:     # an earlier gradient of the same code
            now = self._checkpoint_instead(spec, pytypes)
            self._called = now
            return now.call(*args)
        saved = _saved_arguments(args) if spec.repeatable else None
        if saved is None:
            return self._recorded(spec, pytypes, args)
        try:
            return spec.call(*args, cap=RECORDED_TAPE_BYTES)
        except TapeLimitError as exc:
            stopped = exc
        _put_back(args, saved)
        now = self._checkpoint_instead(spec, pytypes)
        if now is spec and spec.limit <= RECORDED_TAPE_BYTES:
            raise stopped       # tape_limit stopped it, and there is nothing to checkpoint
        self._called = now
        return now.call(*args)  # checkpointed; or recorded in full, nothing to checkpoint

    def _build(self, key, checkpoint):
        """The Transformed specialization for numba argument types `key`."""
        return build(self.fn, self.argnums, key, self.mode, self.fastmath,
                     checkpoint=checkpoint, tape_limit=self.tape_limit, cache=self.cache,
                     target=self.target, jit=self.target == "cpu",
                     vector_math=self.vector_math, outline=self.target == "cpu")

    def _checkpoint_instead(self, spec, pytypes):
        """After a call whose tape outgrew the CPU's cache (checkpoint=None: adjit chooses),
        later calls with these argument types run the gradient with checkpoint="auto", the
        same numbers computed in the same order, where the function has a time loop to
        checkpoint (its steps then run about twice, against tape traffic through main
        memory; a loop whose steps record a few numbers each stays recorded in one block).
        Returns the specialization those calls run."""
        with self._lock:
            spec.adapt = False
            if self._specs.get(spec.types) is not spec:
                return self._specs.get(spec.types, spec)
            try:
                auto = self._build(spec.types, "auto")
            except AdjitError:      # (a loop adjit cannot checkpoint): it stays recorded
                return spec
            if auto.source == spec.source:      # nothing to checkpoint
                return spec
            auto.types, auto.adapt = spec.types, False
            self._specs[spec.types] = self._last = auto
            self._fast = (pytypes, auto)
            _OUTGREW[spec.source, spec.types] = True
            return auto

    def _numba_types(self, args):
        """numba types of the arguments; an AdjitError for values numba cannot type at all
        (dicts, arbitrary objects). Values numba types but adjit cannot differentiate (a
        tuple, None, a string) are fine outside argnums; in argnums, build() refuses them."""
        out = []
        for k, a in enumerate(args):
            try:
                t = numba.typeof(a)
            except Exception:  # noqa: BLE001 - numba's own errors for dtypes it cannot type
                t = None
            fn = self.__adjit_function__
            name = self._order[k] if k < len(self._order) else f"#{k}"
            where = (fn.__code__.co_filename, fn.__code__.co_firstlineno, fn.__qualname__)
            if t is None and hasattr(a, "dtype") and hasattr(a, "shape"):
                raise error_at(where, f"argument '{name}' is an array of {a.dtype}, which numba "
                               "cannot compile", "Pass float64 or float32 arrays "
                               "(np.asarray(a, np.float64)).")
            if t is None:
                raise error_at(where, f"argument '{name}' is a {type(a).__name__} ({a!r:.60})",
                               "adjit compiles for floats, ints, bools and numpy arrays: pass "
                               "a float or np.array(...) instead (a tuple or list of numbers "
                               "as np.array(...); other settings as globals or constants).")
            if isinstance(a, str):
                # a setting (mode == "sum"): the gradient is specialized for its value, as
                # numba's branches on it are decided here (normalize/prune.py)
                t = numba.types.literal(a)
            self._refuse_structure(k, t)
            if record_arrays.record_fields(t):
                out.append(t)
                continue
            problem = _unsupported_type(t)
            if problem:
                raise error_at(where, f"argument '{name}' is {problem}",
                               "adjit differentiates real floating-point code: pass float64 or "
                               "float32 values and arrays (integers and booleans are fine "
                               "outside argnums); convert with np.asarray(a, np.float64).")
            out.append(t)
        return tuple(out)

    def _refuse_structure(self, k, t):
        """An AdjitError for argument k of numba type t where it is a record array (with an
        unsupported field, or for a derivative that does not split it) or a tuple this
        derivative does not take: from Python's values and from @njit callers' types."""
        fn = self.__adjit_function__
        name = self._order[k] if k < len(self._order) else f"#{k}"
        where = (fn.__code__.co_filename, fn.__code__.co_firstlineno, fn.__qualname__)
        gpu = " on the GPU" if self.target != "cpu" else ""
        unsplit = self.target != "cpu" or self.mode.name in higher.KINDS
        if isinstance(t, numba.types.Record):
            raise error_at(where, f"argument '{name}' is a record (one element of a numpy "
                           "structured array, an np.void such as data[i]), which "
                           f"{self.mode.name}{gpu} called from here does not take",
                           "grad and value_and_grad called from Python take one, and "
                           "every derivative outside argnums; elsewhere "
                           "pass the record array and read data[i]['x'] or data[i].x in the "
                           "function (or pass data[i] on to your own functions, which read "
                           "it as numba does), or pass the fields as numbers.")
        if record_arrays.record_fields(t):
            if unsplit:
                raise error_at(where, f"argument '{name}' is a record array, which "
                               f"{self.mode.name} does not take{gpu}",
                               "grad, value_and_grad, vjp and jvp on the CPU take record "
                               "arrays; pass the fields as arrays of their own "
                               "(data['x']) here.")
            problem = record_arrays.unsupported_fields(t)
            if problem:
                raise error_at(where, f"argument '{name}' is {problem}",
                               "Pass such fields as arguments of their own.")
            return
        own = k < len(self._order) - bool(self.mode.extra)     # (not a tangent)
        if own and isinstance(t, (numba.types.List, numba.types.ListType)):
            # numba's reflected list (and numba.typed.List): adjit reads lists the function
            # builds itself, not lists passed in (a list argument was typed as its element)
            rows = isinstance(t.dtype, numba.types.BaseTuple)
            raise error_at(where, f"argument '{name}' is a list (of {t.dtype}), which adjit "
                           "does not take as an argument",
                           "Pass an array: np.array(" + name + ")" +
                           (" (a list of tuples: a 2-D array, each tuple a row, read as "
                            f"{name}[i, 0]; or a tuple of tuples)" if rows else
                            " (or a tuple of numbers)") + ".")
        if self.target == "cpu" and self.mode.name in higher.KINDS and k not in self.argnums:
            return      # its elements passed as arguments of their own (higher.py)
        if own and unsplit and tuple_args.is_tuple(t):
            raise error_at(where, f"argument '{name}' is a tuple, which "
                           f"{self.mode.name} does not take{gpu}",
                           "grad, value_and_grad, vjp and jvp on the CPU take tuples; "
                           "pass the elements as arguments of their own here.")

    def __adjit_operation__(self, error):
        """Called where differentiated code calls this object: registers it as an operation
        whose derivative is the Hessian (higher.inner_gradient), or raises error(...)."""
        higher.inner_gradient(self, error)

    def __adjit_parts__(self):
        """What cached code calling this gradient depends on (codegen/emit.py)."""
        return (self.fn, self.mode.name, self._argnums_arg, self.fastmath, self.checkpoint,
                self.vector_math)

    def __reduce__(self):
        """Pickle as (function, argnums, mode). The unpickling process builds the gradient
        once and returns that object for every later copy (in the process that pickled it,
        the original), so gradients travel to multiprocessing and Dask workers without
        compiling per task. The function itself pickles by reference (a module-level def or
        @njit function); a module-level `@grad def f` is itself what its module holds under
        that name, so it pickles as that name."""
        module = sys.modules.get(getattr(self, "__module__", None) or "")
        if getattr(module, self.__qualname__, None) is self:
            return self.__qualname__
        # a derivative of a gradient that differentiates a generated wrapper rebuilds it
        fn = self._of if self._of is not None and self.fn is not self._of.fn else self.fn
        args = (fn, self._argnums_arg, self.mode.with_value, self.fastmath, self.mode.name,
                self.checkpoint, self.tape_limit, self.cache, self.target, self.vector_math)
        try:                    # unpickled in this process, it is this object
            with _REBUILT_LOCK:
                _REBUILT.setdefault(args, self)
        except TypeError:
            pass
        script = script_source(fn)
        if script is None:
            return (_rebuild, args)
        # a function of the __main__ script travels by value (cloudpickle) without its
        # source and as a new object each time: the script's text goes along, and the
        # receiving process knows the function again by its place in the script
        return (_rebuild_from_script, (script, args))

    def _positional(self, args, kwargs):
        """The arguments in the generated function's order (positional parameters, then
        keyword-only ones, then the cotangent/tangent), defaults filled in."""
        fn = self.__adjit_function__
        where = (fn.__code__.co_filename, fn.__code__.co_firstlineno, fn.__qualname__)
        if self._vararg and self.mode.extra and args and self._order[-1] not in kwargs:
            # f(x, *args): the cotangent/tangent is the last argument passed
            kwargs = dict(kwargs, **{self._order[-1]: args[-1]})
            args = args[:-1]
        try:
            bound = _signature(self).bind(*args, **kwargs)
        except TypeError as exc:
            given = f"called with {len(args)} argument(s)" + \
                (f" and keywords {', '.join(kwargs)}" if kwargs else "")
            raise error_at(where, f"{given} ({exc})",
                           f"'{fn.__qualname__}' takes {len(self._order)}: "
                           f"{', '.join(self._order)}.") from None
        bound.apply_defaults()
        values = bound.arguments
        extra = self.mode.extra and self._order[-1]
        if extra and values[extra] is None:
            raise error_at(where, f"the {self.mode.name} called without the {self.mode.extra}",
                           f"The function's last parameter has a default, so pass the "
                           f"{self.mode.extra} by keyword ({extra}=...) or pass every "
                           f"argument.")
        return tuple(values[p] for p in self._order)

    @property
    def last_tape(self):
        """A TapeReport of the most recent call from Python (None before the first call):
        bytes of tape and checkpoint snapshots the gradient held, and with checkpointing
        how many steps it ran again. Calls from inside @njit code are not recorded."""
        spec = self._called
        if spec is None or spec.stats is None:
            return None
        return TapeReport(*(int(v) for v in spec.stats[:REPORTED]))

    @property
    def source(self):
        """The generated adjoint as Python source text."""
        if self._last is None:
            raise AdjitError("the adjoint depends on the argument types: call the gradient "
                             "once (or use .source_for(*args)) before reading .source")
        return self._last.source

    def source_for(self, *args, **kwargs):
        """The generated adjoint for these example arguments, without running it."""
        if kwargs or len(args) != len(self._order):
            args = self._positional(args, kwargs)
        if self.target == "cpu" and self.mode.name in ("grad", "value_and_grad"):
            # a record (an np.void) is read as the named tuple of its fields, as a call
            # passes it (_with_records)
            args = self._records_as_tuples(args)
        return self.specialize(self._numba_types(args)).source

    def __repr__(self):
        return f"<adjit {self.mode.name} of {self.__adjit_function__.__qualname__} " \
               f"argnums={self.argnums}>"


def _of_gradient(inner, argnums, kind):
    """(function, kind) for a derivative of the gradient `inner`: jvp(grad(f)) returns
    (grad f, H v), grad(grad(f)) of a function of one float its second derivative; any other
    derivative of a gradient of one argument (mixed grad(grad(f, argnums=1), argnums=0),
    value_and_grad, vjp, jvp in other arguments) is that derivative of a function calling
    the gradient, whose derivative is f's Hessian (higher.inner_gradient)."""
    if inner.mode.name != "grad" or inner.target != "cpu" or not inner.mode.single or \
            kind not in ("grad", "value_and_grad", "vjp", "jvp"):
        raise AdjitError(
            f"{kind} of {inner!r}: adjit differentiates a gradient only as grad, "
            "value_and_grad, vjp or jvp of grad(f) with one argument (on the CPU). Use "
            "hvp(f, argnums) for Hessian-vector products and hessian(f, argnums) for the "
            "matrix of second derivatives.")
    if kind in ("jvp", "grad") and tuple(check_argnums(inner.fn, argnums)) == inner.argnums:
        return inner.fn, "jvp_of_grad" if kind == "jvp" else "grad_of_grad"
    return higher.calling(inner), kind


_REBUILT = {}
_REBUILT_LOCK = threading.Lock()


def _rebuild(fn, argnums, with_value, fastmath, kind=None, checkpoint=None, tape_limit=None,
             cache=None, target="cpu", vector_math=True):
    """Unpickle a gradient: the one this process already rebuilt with the same function and
    options, so that its compiled specializations are reused (a Dask worker that receives
    the same gradient in many tasks compiles it once), or a new one."""
    args = (fn, argnums, with_value, fastmath, kind, checkpoint, tape_limit, cache, target,
            vector_math)
    try:
        hash(args)
    except TypeError:           # an unhashable option (a list of argnums): build afresh
        return GradientFunction(*args)
    with _REBUILT_LOCK:
        made = _REBUILT.get(args)
        if made is None:
            made = _REBUILT[args] = GradientFunction(*args)
        return made


def _rebuild_from_script(script, args):
    """Unpickle a gradient of a function defined in the sender's __main__ script: its
    source comes with it (frontend/source.receive_script). Copies of a function with no
    closure are one gradient per process, known by the script, name and line; a closure
    (whose cells may hold other values in each copy) is built afresh."""
    receive_script(*script)
    fn = args[0]
    inner = getattr(fn, "__adjit_function__", None) or getattr(fn, "py_func", fn)
    if getattr(inner, "__closure__", None):
        return GradientFunction(*args)
    code = inner.__code__
    key = (script[0], inner.__qualname__, code.co_firstlineno, code.co_code) + args[1:]
    try:
        hash(key)
    except TypeError:
        return GradientFunction(*args)
    with _REBUILT_LOCK:
        made = _REBUILT.get(key)
        if made is None:
            made = _REBUILT[key] = GradientFunction(*args)
        return made


_CUDA_TYPEOF = []


def _register_cuda_typeof():
    """Let numba-cuda type a GradientFunction inside kernels: as a stub function whose
    CUDA overload is the generated device function for the argument types at hand."""
    if _CUDA_TYPEOF:
        return
    try:
        from numba import config
        if config.ENABLE_CUDASIM:
            _CUDA_TYPEOF.append(None)   # the simulator calls the object from Python
            return
        from numba.cuda.descriptor import cuda_target
        from numba.cuda.extending import overload as cuda_overload
        from numba.cuda.typing.typeof import typeof_impl as cuda_typeof
    except ImportError:                 # no numba-cuda: only Python calls are possible
        _CUDA_TYPEOF.append(None)
        return

    @cuda_typeof.register(GradientFunction)
    def _typeof_cuda(val, c):
        if val._cuda_stub is None:
            val._cuda_stub = _make_stub(val, cuda_overload)
            cuda_target.typing_context.refresh()    # pick up the new overload
        return cuda_target.typing_context.resolve_value_type(val._cuda_stub)

    _CUDA_TYPEOF.append(_typeof_cuda)


def _device_callable(spec):
    """What a Python-level call of a CUDA device function runs: under numba's CUDA simulator
    the function wrapped as a simulated device function (which gives it the simulator's
    `cuda.local`, `cuda.grid`, ...), else the generated Python function."""
    if spec.dispatcher is None:
        from numba import config, cuda
        spec.dispatcher = cuda.jit(device=True)(spec.pyfunc) if config.ENABLE_CUDASIM \
            else spec.pyfunc
    return spec.dispatcher


def _check_target(gf, target):
    name = gf.__adjit_function__.__qualname__
    if target not in ("cpu", "cuda"):
        raise AdjitError(f"target={target!r} for '{name}': pass target='cpu' (the default) or "
                         "'cuda' (a numba.cuda device function).")
    if target == "cuda" and (gf.checkpoint is not None or gf.cache):
        raise AdjitError(f"target='cuda' for '{name}' with checkpoint= or cache=: device "
                         "functions have neither (they are compiled inside the kernels that "
                         "call them). Leave those options out.")
    return target


class TapeReport:
    """What the tape of one gradient call took (GradientFunction.last_tape).

    tape_bytes: bytes held by the tape's stacks (their capacity: what was allocated);
    snapshot_bytes: bytes of checkpoint snapshots; total_bytes: both.
    steps: steps of the checkpointed loops; advanced: steps run again without the tape;
    taped: steps run with the tape (each once). recompute_factor: forward steps run per
    step, (steps + advanced + taped) / steps: 1.0 without checkpointing (each step runs
    once, recording), and 2 + advanced/steps with it."""

    __slots__ = ("tape_bytes", "snapshot_bytes", "steps", "advanced", "taped")

    def __init__(self, tape_bytes, snapshot_bytes, steps, advanced, taped):
        self.tape_bytes = tape_bytes
        self.snapshot_bytes = snapshot_bytes
        self.steps = steps
        self.advanced = advanced
        self.taped = taped

    @property
    def total_bytes(self):
        return self.tape_bytes + self.snapshot_bytes

    @property
    def recompute_factor(self):
        if not self.steps:
            return 1.0
        return (self.steps + self.advanced + self.taped) / self.steps

    def __repr__(self):
        text = f"TapeReport(tape_bytes={self.tape_bytes}, snapshot_bytes={self.snapshot_bytes}"
        if self.steps:
            text += (f", steps={self.steps}, advanced={self.advanced}, taped={self.taped}, "
                     f"recompute_factor={self.recompute_factor:.2f}")
        return text + ")"


_OUTGREW = {}
"""(generated source, argument types) of the recorded gradients whose tape outgrew the CPU's
cache in this process: a gradient of the same code made again (adjit.grad(f) in a loop)
checkpoints from its first call on. (A first call stopped at the cap leaves what it had
allocated behind: numba frees nothing on the way out of an exception, so a process stops
one such call per gradient, not one per object.)"""


def _saved_arguments(args):
    """Copies of the arrays among `args` (in tuples too), to put back with _put_back; None
    where an argument holds something else that a call could change (a list, an object)."""
    saved = []
    for a in args:
        if isinstance(a, np.ndarray):
            saved.append(a.copy() if a.flags.writeable else None)
        elif isinstance(a, tuple):
            inner = _saved_arguments(a)
            if inner is None:
                return None
            saved.append(inner)
        elif a is None or isinstance(a, (bool, int, float, complex, str, np.generic)):
            saved.append(None)
        else:
            return None
    return saved


def _put_back(args, saved):
    for a, copy in zip(args, saved):
        if isinstance(a, np.ndarray):
            if copy is not None:
                np.copyto(a, copy)
        elif isinstance(a, tuple):
            _put_back(a, copy)


def _explain_limit(exc, spec):
    """A tape-limit error from the compiled code gets the function and what to do."""
    from .runtime.tape import LIMIT_MESSAGE
    text = str(exc)
    if text.startswith(LIMIT_MESSAGE) and spec.limit_hint and spec.limit_hint not in text:
        exc.args = (f"{text}. In {spec.limit_hint}",)


def _locate(exc, fn):
    """An error in the values passed (raised as the call runs: a tangent or cotangent of
    another shape) gets the function's name and place, as the build's errors have."""
    text = str(exc)
    if isinstance(exc, CallValueError) and text.startswith("adjit: "):
        filename, line, name = function_origin(fn)
        exc.args = (f"in function '{name}' ({filename}, line {line}): {text[7:]}",)


def _check_checkpoint(gf, checkpoint):
    if checkpoint is None or checkpoint is False:
        return checkpoint
    if checkpoint == "auto" or (isinstance(checkpoint, int) and not isinstance(checkpoint, bool)
                                and checkpoint >= 1):
        return checkpoint
    raise AdjitError(f"checkpoint={checkpoint!r} for '{gf.__adjit_function__.__qualname__}' "
                     "is not a number of snapshots. Pass checkpoint='auto', a positive int "
                     "(snapshots of the loop state), None (adjit chooses: it records, and "
                     "checkpoints with 'auto' from the call whose tape outgrows the CPU's cache) "
                     "or False (it records, always).")


def _check_limit(gf, limit):
    if limit is None:
        return None
    if isinstance(limit, (int, float)) and not isinstance(limit, bool) and limit > 0:
        return int(limit)
    raise AdjitError(f"tape_limit={limit!r} for '{gf.__adjit_function__.__qualname__}' is not "
                     "a number of bytes. Pass a positive number (e.g. 2 * 2**30), or None for "
                     "the default (half the machine's memory).")


def _signature(gf):
    """The user function's signature, plus the cotangent/tangent parameter of vjp/jvp
    (after the positional parameters, before keyword-only ones)."""
    sig = inspect.signature(gf.__adjit_function__)
    if gf.mode.extra is None:
        return sig
    params = list(sig.parameters.values())
    positional = [p for p in params if p.kind is not inspect.Parameter.KEYWORD_ONLY]
    keyword = [p for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY]
    name = gf.mode.extra
    while name in sig.parameters:
        name = "_" + name
    star = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in positional)
    # (after *args it can only be keyword-only: _positional moves the last argument there)
    extra = inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY if star else
                              inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if positional and positional[-1].default is not inspect.Parameter.empty:
        extra = extra.replace(default=None)
    return sig.replace(parameters=positional + [extra] + keyword)


def _parameter_order(gf):
    """The generated function's parameters: the user's (positional, then keyword-only),
    then the cotangent/tangent of vjp/jvp."""
    sig = _signature(gf)
    params = inspect.signature(gf.__adjit_function__).parameters
    extra = [p for p in sig.parameters if p not in params]
    return [p for p in params] + extra


def _unsupported_type(t):
    """Why adjit cannot compile for the numba type `t` (None when it can)."""
    from numba.core import types
    dtype = t.dtype if isinstance(t, types.Array) else t
    if isinstance(dtype, types.Complex):
        return f"complex ({t}): complex numbers have no derivative in adjit"
    if isinstance(t, types.Array) and not isinstance(dtype, (types.Float, types.Integer,
                                                             types.Boolean)):
        return f"an array of {dtype}"
    return None


def _make_stub(gf, register=overload):
    """A Python function with the user's signature whose numba overload is the gradient,
    so that @njit code (and kernels: `register` is numba-cuda's overload there) can call the
    GradientFunction like any jitted function: as in Python, with arguments by name,
    keyword-only parameters by name, and defaults left out."""
    ns = {}
    cuda = register is not overload
    if gf._vararg:
        params = entry_params = "*args"
    else:
        params, entry_params = _stub_parameters(gf, ns)
    exec(f"def stub({params}):\n    raise NotImplementedError\n", ns)  # noqa: S102
    stub = ns["stub"]
    # numba's messages name it (`Function(<function grad(f) at 0x...>)`)
    stub.__qualname__ = f"{gf.mode.name}({gf.__adjit_function__.__qualname__})"
    # a call binds to the stub's parameters (Python's order: keyword-only ones after the
    # cotangent/tangent) where that is not the derivative's own order
    reordered = not gf._vararg and list(inspect.signature(stub).parameters) != gf._order

    def typer(*arg_types, **keyword_types):
        # numba offers the call's constants as literal types first (prefer_literal): a
        # string constant stays one (adjit decides `mode == "lin"` for its value); other
        # constants are declined here and come again as plain types, so that `g(x, 3)` and
        # `g(x, 4)` share one compilation
        given = arg_types + tuple(keyword_types.values())
        if not any(isinstance(t, numba.types.StringLiteral) for t in given) and \
                any(isinstance(t, numba.types.Literal) for t in given):
            return None
        star = None
        defaulted = ()
        if not gf._vararg and (keyword_types or reordered or len(arg_types) < len(gf._order)):
            # `g(x, shift=1.0)` in @njit code: the values in the derivative's order (numba
            # passes them to the implementation, whose parameters have the user's names);
            # `g(x)` leaving out `shift=1.0`: the default's type
            arg_types, defaulted = _by_position(gf, stub, arg_types, keyword_types, cuda)
        elif keyword_types:
            raise error_at(function_origin(gf.__adjit_function__), "a derivative of a "
                           "function with *args called with keyword arguments from "
                           f"{_caller(cuda)}", "Pass every value by position there.")
        if gf._vararg:
            star, arg_types = _star_types(gf, arg_types, cuda)
        enums = [k for k, t in enumerate(arg_types) if plain_enum_type(t)]
        for k in enums:
            # a plain Enum's member: its value, as from Python (_enum_values)
            t = arg_types[k]
            gf._refuse_enum(k, t.instance_class.__name__,
                            next(iter(t.instance_class.__members__.values())).value)
        # (an IntEnum's member: its int, as from Python; second derivatives compile for the
        # member's type)
        enums += [k for k, t in enumerate(arg_types)
                  if isinstance(t, numba.types.IntEnumMember) and
                  gf.mode.name not in higher.KINDS]
        for k, t in enumerate(arg_types):
            gf._refuse_structure(k, t)
        spec = gf.specialize(arg_types)
        if isinstance(spec.adapter, tuple_args.Adapter) and spec.adapter.inner is not None:
            raise error_at(function_origin(gf.__adjit_function__), "a derivative with both "
                           f"tuple and record-array arguments called from {_caller(cuda)}",
                           "Call it from Python, or pass the record arrays' fields as arrays "
                           "of their own (data['x'], data['y']).")
        if spec.adapter is not None:
            impl = _split_entry(gf, spec, arg_types, star)
        elif star is not None:
            impl = _star_entry(gf, spec, arg_types, star)
        else:
            impl = spec.pyfunc
        if enums:
            impl = _values_entry(impl, len(arg_types), enums, cuda)
        if defaulted or reordered or keyword_types:
            # (numba binds the call to the entry's parameters, as the stub did here)
            return _entry(gf, impl, entry_params, defaulted, ns, cuda)
        return impl

    # the typer takes what it is given and binds it itself (_by_position), so that a wrong
    # name or count gets adjit's message; numba then compares no signatures (strict=False)
    typer.__signature__ = inspect.Signature([
        inspect.Parameter("args", inspect.Parameter.VAR_POSITIONAL),
        inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD)])
    register(stub, strict=False, prefer_literal=True)(typer)
    return stub


def _caller(cuda):
    return "a CUDA kernel" if cuda else "@njit code"


def _stub_parameters(gf, ns):
    """The stub's parameter list as Python text, in the order of the function's signature
    with the cotangent/tangent (_signature): keyword-only parameters after a `*`, each
    default a name `_default_<k>` (k: the parameter's place in the derivative's order) that
    `ns` holds. And the same list for the implementation numba compiles (_entry) without
    the `*`: numba folds a call's arguments into keyword-only parameters wrongly (it takes
    the last positional values for them), and the stub's binding has already checked the
    call as Python would (a keyword-only parameter without a default gets None there,
    never used)."""
    out, entry, star = [], [], False
    for q in _signature(gf).parameters.values():
        if q.kind is inspect.Parameter.KEYWORD_ONLY and not star:
            out.append("*")
            star = True
        k = gf._order.index(q.name)
        if q.default is inspect.Parameter.empty:
            out.append(q.name)
            entry.append(f"{q.name}=None" if star else q.name)
        else:
            ns[f"_default_{k}"] = q.default
            out.append(f"{q.name}=_default_{k}")
            entry.append(out[-1])
    return ", ".join(out), ", ".join(entry)


def _by_position(gf, stub, arg_types, keyword_types, cuda=False):
    """The types of a call from @njit code (or a kernel) that names some arguments or leaves
    out some with defaults, in the order of the derivative's parameters (a left-out one:
    the type of its default), and the names of those left out; an AdjitError where they do
    not bind."""
    origin = function_origin(gf.__adjit_function__)
    name = gf.__adjit_function__.__qualname__
    try:
        bound = inspect.signature(stub).bind(*arg_types, **keyword_types)
    except TypeError as exc:
        given = f"called from {_caller(cuda)} with {len(arg_types)} argument(s)" + (
            f" and keywords {', '.join(keyword_types)}" if keyword_types else "")
        sig = inspect.signature(stub)
        named = any(q.kind is inspect.Parameter.KEYWORD_ONLY for q in sig.parameters.values())
        raise error_at(origin, f"{given} ({exc})", f"'{name}' takes {sig}: pass each of them "
                       "once" + (", keyword-only ones by name." if named else ".")) from None
    given = set(bound.arguments)
    bound.apply_defaults()
    defaulted = tuple(p for p in gf._order if p not in given)
    types = []
    for p in gf._order:
        value = bound.arguments[p]
        if p in given:
            types.append(value)
            continue
        if gf.mode.extra and p == gf._order[-1]:
            raise error_at(origin, f"the {gf.mode.name} called from {_caller(cuda)} without "
                           f"the {gf.mode.extra}", f"Pass the {gf.mode.extra} by keyword "
                           f"({p}=...) or pass every argument.")
        t = _constant_type(value)
        if t is None:
            raise error_at(origin, f"called from {_caller(cuda)} without '{p}', whose default "
                           f"{value!r} numba cannot take as a constant",
                           f"Pass '{p}' in the call.")
        types.append(t)
    return tuple(types), defaulted


def _int_enums_in_tuple(a):
    """A tuple argument with each enum.IntEnum member in it (at any depth) its int, as numba
    compares and computes with it (a namedtuple stays one); the tuple itself where it holds
    none."""
    if not any(isinstance(e, (enum.IntEnum, tuple)) for e in a):
        return a
    items = [int(e) if isinstance(e, enum.IntEnum) else
             _int_enums_in_tuple(e) if isinstance(e, tuple) else e for e in a]
    return type(a)(*items) if hasattr(a, "_fields") else tuple(items)


def _constant_type(value):
    """The numba type of `value` as a global constant of compiled code (arrays, also in
    tuples, are read-only there), or None where numba keeps no such constant (a list, a
    set, a dict, an object)."""
    if isinstance(value, str):
        # a setting (mode="sum"): its value is known here, as from Python (_numba_types)
        return numba.types.literal(value)
    try:
        t = numba.typeof(value)
    except ValueError:
        return None

    def constant(t):
        if isinstance(t, numba.types.Array):
            return t.copy(readonly=True)
        if isinstance(t, (numba.types.UniTuple, numba.types.Tuple)) and \
                not isinstance(t, (numba.types.NamedTuple, numba.types.NamedUniTuple)):
            inner = [constant(e) for e in t.types]
            return None if any(e is None for e in inner) else \
                numba.types.BaseTuple.from_types(inner)
        if isinstance(t, (numba.types.List, numba.types.Set, numba.types.DictType,
                          numba.types.Dispatcher, numba.types.Opaque)) or \
                t == numba.types.pyobject:
            return None
        return t
    return constant(t)


def _entry(gf, impl, params, defaulted, defaults, cuda):
    """The implementation of a call from @njit code (or a kernel) that binds to the stub's
    parameters `params` (the function's order, defaults) rather than the derivative's own:
    a function with the stub's parameters calling `impl` with every value in the
    derivative's order (a left-out one as the default itself, a constant of the type it
    was derived for)."""
    inner = _jitted(impl, cuda)
    values = [f"_default_{k}" if p in defaulted else p for k, p in enumerate(gf._order)]
    ns = dict(defaults, _adjit_inner=inner)
    exec(f"def entry({params}):\n    return _adjit_inner({', '.join(values)})\n",  # noqa: S102
         ns)
    return ns["entry"]


def _jitted(impl, cuda):
    """`impl` compiled for calls from @njit code, or as a device function for kernels."""
    if cuda:
        from numba import cuda as numba_cuda
        return numba_cuda.jit(device=True)(impl)
    return numba.njit(impl)


def _values_entry(impl, n, enums, cuda):
    """A function of n values that calls `impl` with the value (`.value`) of each enum
    member at the places `enums`: the derivative from @njit code given plain Enum
    members."""
    inner = _jitted(impl, cuda)
    params = [f"_a{k}" for k in range(n)]
    values = [f"{q}.value" if k in enums else q for k, q in enumerate(params)]
    ns = {"_adjit_inner": inner}
    exec(f"def entry({', '.join(params)}):\n"  # noqa: S102
         f"    return _adjit_inner({', '.join(values)})\n", ns)
    return ns["entry"]


def _python_key(a):
    """What the last call's derivative is kept for (GradientFunction._fast): a value's
    Python type, and a tuple's elements' (tuples of other lengths or element types are
    split into other arguments; numba tells apart arrays of other dtypes and dimensions)."""
    if isinstance(a, str):
        return a
    if isinstance(a, tuple):
        return type(a), tuple(_python_key(e) for e in a)
    if isinstance(a, np.ndarray) and a.dtype.names is not None:
        return type(a), a.dtype         # (a record array's fields are split by its dtype)
    return type(a)


def _star_types(gf, arg_types, cuda=False):
    """The name of the function's *args parameter and the argument types as the derivative
    takes them, from the types numba passes one by one (`objective(theta, x, y)` for `def
    objective(theta, *data)`): the values after the named parameters one tuple, before the
    tangent or cotangent of jvp and vjp, which is the last value."""
    star = next(q.name for q in inspect.signature(gf.__adjit_function__).parameters.values()
                if q.kind is inspect.Parameter.VAR_POSITIONAL)
    if gf._order.index(star) != len(gf._order) - 1 - bool(gf.mode.extra):
        raise error_at(function_origin(gf.__adjit_function__), "a derivative of a function "
                       "with keyword-only parameters after *args called from @njit code",
                       "Call it from Python, or give those parameters a place before *args.")
    n_named = gf._order.index(star)
    extra = 1 if gf.mode.extra else 0
    if len(arg_types) < n_named + extra:
        raise error_at(function_origin(gf.__adjit_function__), f"called with "
                       f"{len(arg_types)} argument(s) from {_caller(cuda)}",
                       f"'{gf.__adjit_function__.__qualname__}' takes "
                       f"{', '.join(gf._order[:n_named])} before *{star}" +
                       (f", and the {gf.mode.extra} last" if extra else "") +
                       ": pass each of them there (defaults before *args are not filled in "
                       "from compiled code).")
    end = len(arg_types) - extra
    packed = numba.types.BaseTuple.from_types(tuple(arg_types[n_named:end]))
    return star, tuple(arg_types[:n_named]) + (packed,) + tuple(arg_types[end:])


def _star_entry(gf, spec, arg_types, star):
    """What @njit code calls, value by value, for a derivative of `def f(x, *star)` that
    takes the values after x as one tuple (the second derivatives: higher.py); `arg_types`
    as _star_types packs them."""
    n_named = gf._order.index(star)
    count = len(arg_types[n_named])
    values = [f"args[{k}]" for k in range(n_named)]
    values.append("(" + "".join(f"args[{n_named + k}], " for k in range(count)) + ")")
    values += [f"args[{n_named + count + k}]" for k in range(len(arg_types) - n_named - 1)]
    text = f"def entry(*args):\n    return _derivative({', '.join(values)})\n"
    return exec_source(text, "entry", {"_derivative": numba.njit(spec.pyfunc)})


def _check_plain_tangent(t, arg, q, origin):
    """The tangent @njit code passes for an argument that was not split, beside split ones
    (the split derivative is compiled for the argument's own type as its tangent's): an
    array of its dimensions and dtype for an array, a number for a number."""
    if isinstance(arg, numba.types.Array):
        fits = isinstance(t, numba.types.Array) and t.ndim == arg.ndim and t.dtype == arg.dtype
        want = f"{arg}"
    else:
        fits = isinstance(t, (numba.types.Float, numba.types.Integer)) and \
            not isinstance(t, numba.types.Boolean)
        want = "a number"
    if not fits:
        raise error_at(origin, f"the tangent of {q} is {t} where {q} is {want}",
                       "Pass a direction of the argument's type and shape.")


def _split_entry(gf, spec, arg_types, star=None):
    """What @njit code calls for a derivative with tuple or record-array arguments: the split
    function's derivative behind a function of the user's arguments (tuple_args.njit_entry,
    record_arrays.njit_entry). A tangent whose structure is not its tuple argument's, or not
    a record array of its argument's dtype, is refused here, as the Adapters refuse it in
    Python."""
    adapter, params = spec.adapter, gf._order
    extra = params[-1] if gf.mode.extra else None
    tuples = isinstance(adapter, tuple_args.Adapter)
    if adapter.derivative == "tangent" and adapter.in_wrt:
        origin = function_origin(gf.__adjit_function__)
        if not adapter.single and (not isinstance(arg_types[-1], numba.types.BaseTuple) or
                                   len(arg_types[-1]) != len(adapter.wrt_user)):
            raise error_at(origin, f"the tangent is {arg_types[-1]} where "
                           f"{len(adapter.wrt_user)} arguments are in argnums", "Pass a tuple "
                           "of directions, one per argument in argnums, each shaped like its "
                           "argument.")
        given = [arg_types[-1]] if adapter.single else list(arg_types[-1])
        for q, t in zip(adapter.wrt_user, given):
            if tuples and q in adapter.tuples:
                tuple_args.check_tangent_type(t, adapter.layout.tuples[adapter.tuples[q]], q,
                                              origin)
            elif not tuples and q in adapter.records:
                record_arrays.check_tangent_type(t, arg_types[params.index(q)], q, origin)
            else:
                _check_plain_tangent(t, arg_types[params.index(q)], q, origin)
    rt = spec.dispatcher.nopython_signatures[0].return_type
    grads = rt[1] if adapter.with_value and adapter.derivative != "tangent" else rt
    raw, grads_tuple = numba.njit(spec.pyfunc), isinstance(grads, numba.types.BaseTuple)
    source, ns = tuple_args.njit_entry(adapter, params, extra, raw, grads_tuple, star) if \
        tuples else record_arrays.njit_entry(adapter, params, extra, raw, grads_tuple)
    return exec_source(source, "entry", ns)


class GradientArgument(numba.types.Function):
    """numba's type of a GradientFunction passed to @njit code as an argument (`def
    descend(gradf, x): ... gradf(x)`): the same overload of its stub as where @njit code
    reads it as a global. Like a jitted function passed as an argument, it is known when
    the callee compiles (one compilation per GradientFunction): nothing of it is passed at
    run time."""

    def __reduce__(self):
        # numba's cache index of a caller compiled with cache=True holds its argument types
        return _Unmatched, ("adjit gradient argument",)


class _Unmatched(numba.types.Opaque):
    """What a GradientArgument is in numba's cache index of a caller compiled with
    cache=True: a type no argument of a later process equals, so that the caller compiles
    again there (as numba does for a jitted function passed as an argument); the gradient
    passed may be another function's by then."""


register_model(GradientArgument)(OpaqueModel)


@unbox(GradientArgument)
def _unbox_gradient(typ, obj, c):
    return NativeValue(c.context.get_dummy_value())


@typeof_impl.register(GradientFunction)
def _typeof_gradient(val, c):
    context = registry.cpu_target.typing_context
    try:
        fnty = context.resolve_value_type(val._stub)
    except ValueError:      # a stub made since numba last read its overloads
        context.refresh()
        fnty = context.resolve_value_type(val._stub)
    if c is not None and c.purpose == Purpose.argument:
        return GradientArgument(fnty.templates)
    return fnty


def grad(fn=None, argnums=0, *, fastmath=False, checkpoint=None, tape_limit=None,
         cache=None, target="cpu", vector_math=True):
    """The gradient of `fn` with respect to the argument(s) in `argnums`.

    Use as `@grad` or `grad(f, argnums=(0, 2))`. With an int argnums the result is the
    gradient itself (a float for a float argument, an array of the argument's shape for an
    array); with a tuple it is a tuple in argnums order. `fn` must return a float.

    `fastmath` is passed to numba for the generated code (default False: IEEE arithmetic,
    reproducible to the bit). A set such as {"contract", "arcp", "nsz"} lets LLVM fuse and
    reorder the adjoint arithmetic while keeping NaN and inf semantics; it applies when the
    gradient is called from Python (inside @njit callers the caller's flags apply).

    `vector_math` (default True): loops of the generated code that LLVM can vectorize call
    adjit's branch-free exp, expm1, log, log1p, tanh, sin and cos (adjit.runtime.vmath:
    within 1 ulp, numpy's special values) instead of the C library's, one element at a time;
    such loops run several times faster, and a loop that sums such values as it goes adds
    each block of 256 terms in vector lanes. Values computed there may then differ from
    numba's compiled function in the last bits (as numpy's own vector functions and pairwise
    sums do); with `vector_math=False` the generated code calls what numba calls and sums in
    the loop's order, and the value equals numba's to the bit.

    `checkpoint` bounds the tape of time loops: a number of snapshots or "auto" makes every
    top-level `for ... in range(...)` loop that records on the tape a checkpointed loop (not
    one whose iterations are independent but for sums, `e += math.exp(x[i])`: recorded)
    (binomial checkpointing, Revolve): its steps run without recording, the loop state is
    saved at a few steps, and each step is recomputed from the nearest snapshot when the
    backward sweep reaches it. With a number of snapshots, memory is the snapshots plus one
    step's tape. "auto" cuts the steps into blocks of about sqrt(steps * state / step tape)
    with a snapshot at each block's start (each step runs twice; memory about
    2 sqrt(steps * state * step tape), within an eighth of `tape_limit`; about sqrt(steps)
    single-step snapshots when a step's tape is not known before the loop). The gradient is
    identical to the bit; the cost is recomputed steps (see `.last_tape.recompute_factor`).
    Without `checkpoint` (None) adjit chooses: the gradient records, and from the call from
    Python whose tape outgrows the CPU's largest cache (a tape beyond it streams through main
    memory) or `tape_limit` it runs as checkpoint="auto" (compiled once more), where the
    function has a time loop to checkpoint. A first call stopped there is made again from
    the arguments as they were passed (unless the function draws random numbers or makes
    another call that must run once: then it records in full, and the later calls
    checkpoint). `checkpoint=False` records, always. `tape_limit` (bytes; default half the
    machine's memory) turns a tape that would grow beyond it into an AdjitError saying what
    to do.

    `cache` keeps the compiled gradient on disk (numba's cache, beside the generated
    source in $ADJIT_CACHE_DIR or ~/.cache/adjit): a later process with the same function
    and argument types loads it instead of compiling. The key is the generated source (the
    function and everything it calls, global arrays by content), the argument types, adjit's
    and numba's versions, so a changed function never loads stale code. Default (None): on,
    but where numba compiles unoptimized (NUMBA_OPT=0: it caches no function calling another
    compiled one), where ADJIT_CACHE=0, where the directory cannot be written, or where
    numba will not cache the code (it calls a ctypes function): then it compiles, silently.
    `cache=True` asks for it (numba warns where it cannot cache); `cache=False` never.

    `target="cuda"` returns a CUDA device function instead: call it from numba.cuda kernels
    (and from Python); scalar arguments, scalar gradients, no heap allocation (see
    adjit.cuda for kernels over arrays).
    """
    options = dict(fastmath=fastmath, checkpoint=checkpoint, tape_limit=tape_limit,
                   cache=cache, target=target, vector_math=vector_math)
    if fn is None:
        return lambda f: grad(f, argnums=argnums, **options)
    return GradientFunction(fn, argnums, False, **options)


def value_and_grad(fn=None, argnums=0, *, fastmath=False, checkpoint=None, tape_limit=None,
                   cache=None, target="cpu", vector_math=True):
    """Like grad (same options), but the compiled function returns (value, gradient)."""
    options = dict(fastmath=fastmath, checkpoint=checkpoint, tape_limit=tape_limit,
                   cache=cache, target=target, vector_math=vector_math)
    if fn is None:
        return lambda f: value_and_grad(f, argnums=argnums, **options)
    return GradientFunction(fn, argnums, True, **options)


def vjp(fn=None, argnums=0, *, fastmath=False, checkpoint=None, tape_limit=None, cache=None,
        vector_math=True):
    """Vector-Jacobian product: `vjp(f)(*args, cotangent) -> (out, gradient)`.

    `out` is f(*args), a float or a float array; `cotangent` has out's shape (a float for a
    float result) and the gradient is cotangent^T J with respect to the argnums arguments:
    the shape of the argument for an int argnums, a tuple for a tuple. With cotangent 1.0
    for a scalar f it is value_and_grad. Compiled like grad (same options: checkpoint,
    tape_limit, cache, vector_math), callable from @njit code. A cotangent of another shape
    or kind than out raises AdjitError (numba would broadcast it or read past it).
    """
    options = dict(fastmath=fastmath, checkpoint=checkpoint, tape_limit=tape_limit,
                   cache=cache, vector_math=vector_math)
    if fn is None:
        return lambda f: vjp(f, argnums=argnums, **options)
    return GradientFunction(fn, argnums, True, kind="vjp", **options)


def jvp(fn=None, argnums=0, *, fastmath=False, cache=None, target="cpu", vector_math=True):
    """Jacobian-vector product (forward mode): `jvp(f)(*args, tangent) -> (out, out_tangent)`.

    `tangent` has the shape of the argument in argnums (a tuple of tangents, in argnums
    order, for a tuple argnums); `out_tangent` = J tangent has the shape of f's result. The
    tangent code runs alongside the primal in one compiled function, nothing is recorded.
    `cache=True` keeps the compiled code on disk as for grad; `target="cuda"` makes a CUDA
    device function; `vector_math` as for grad. A tangent of another shape, kind or
    structure than its argument raises AdjitError.
    """
    if fn is None:
        return lambda f: jvp(f, argnums=argnums, fastmath=fastmath, cache=cache, target=target,
                             vector_math=vector_math)
    return GradientFunction(fn, argnums, True, fastmath=fastmath, kind="jvp", cache=cache,
                            target=target, vector_math=vector_math)


custom.use_vjp(lambda fn, argnums: vjp(fn, argnums))
outline.use_grad(grad)


def hvp(fn=None, argnums=0, *, fastmath=False, checkpoint=None, tape_limit=None, cache=None):
    """Hessian-vector product: `hvp(f)(*args, vector) -> H vector`, H the Hessian of the
    float-valued `f` in the argument(s) in argnums, never formed.

    `vector` has the argument's shape (a tuple, one per argument, for a tuple argnums; the
    result is then a tuple too). Computed as the gradient of f's jvp (forward mode, then
    reverse mode over its source): about two to four times the cost of f's gradient.
    `checkpoint` and `tape_limit` act on that reverse pass as on grad's. Compiled per
    argument types, callable from @njit code, picklable like grad's result. A vector of
    another shape than its argument raises AdjitError.
    """
    if fn is None:
        return lambda f: hvp(f, argnums=argnums, fastmath=fastmath, checkpoint=checkpoint,
                             tape_limit=tape_limit, cache=cache)
    return GradientFunction(fn, argnums, False, fastmath=fastmath, kind="hvp",
                            checkpoint=checkpoint, tape_limit=tape_limit, cache=cache)


def hessian(fn=None, argnums=0, *, fastmath=False, cache=None, sparse=None):
    """The Hessian of the float-valued `fn` in one argument: `hessian(f)(*args)`, of shape
    x.shape + x.shape for an array argument x (a float for a float argument).

    Dense: one Hessian-vector product (see hvp) per element of x, in one compiled loop;
    use hvp where n^2 numbers are too many. Callable from @njit code. `sparse=P` (the
    pattern, (x.size, x.size)) returns a scipy.sparse.csr_array from one hvp per color of
    the columns (adjit/sparse.py), each call checked against one more hvp; `sparse=True`
    detects the pattern from the program (adjit.sparsity(f, hessian=True)).
    """
    if fn is None:
        return lambda f: hessian(f, argnums=argnums, fastmath=fastmath, cache=cache,
                                 sparse=sparse)
    if sparse is not None and sparse is not False:
        from .sparse import SparseJacobian
        return SparseJacobian(fn, argnums, sparse,
                              *_products(fn, argnums, fastmath, cache, hessian=True))
    return GradientFunction(fn, argnums, False, fastmath=fastmath, kind="hessian", cache=cache)


_PRODUCTS = weakref.WeakKeyDictionary()


def _products(fn, argnums, fastmath, cache, hessian):
    """The jvp, vjp (and hvp) objects of a sparse Jacobian or Hessian, one set per function
    and options: every pattern given for the same function reuses what they compiled."""
    made = _PRODUCTS.setdefault(fn, {})
    key = (argnums, fastmath, cache)
    if key not in made:
        made[key] = [jvp(fn, argnums=argnums, fastmath=fastmath, cache=cache),
                     vjp(fn, argnums=argnums, fastmath=fastmath, cache=cache), None]
    if hessian and made[key][2] is None:
        made[key][2] = hvp(fn, argnums=argnums, fastmath=fastmath, cache=cache)
    return tuple(made[key]) if hessian else tuple(made[key][:2])


def jacobian(fn=None, argnums=0, *, fastmath=False, cache=None, sparse=None):
    """The Jacobian of `fn` (float or array result): `jacobian(f)(*args)` of shape
    f(*args).shape + x.shape (a tuple, one per argument, for a tuple argnums).

    One vjp per element of the result (rows) or one jvp per element of x (columns),
    whichever is fewer, decided at run time; jacfwd and jacrev force the mode. Compiled per
    argument types, callable from @njit code.

    `sparse=P` (the Jacobian's pattern: a scipy.sparse matrix or boolean array of shape
    (f(x).size, x.size)) returns a scipy.sparse.csr_array instead, from one jvp per color of
    the columns or one vjp per color of the rows (adjit/sparse.py), each call checked
    against one more jvp in a random direction. `sparse=True` detects the pattern from the
    program (adjit.sparsity), once per argument types, shapes and integer values.
    """
    if fn is None:
        return lambda f: jacobian(f, argnums=argnums, fastmath=fastmath, cache=cache,
                                  sparse=sparse)
    if sparse is not None and sparse is not False:
        from .sparse import SparseJacobian
        return SparseJacobian(fn, argnums, sparse,
                              *_products(fn, argnums, fastmath, cache, hessian=False))
    return GradientFunction(fn, argnums, False, fastmath=fastmath, kind="jacobian", cache=cache)


def sparsity(fn=None, argnums=0, *, hessian=False):
    """The structural sparsity pattern of the Jacobian of `fn` in argument `argnums` (of its
    Hessian with hessian=True): `sparsity(f)(*args)` is a boolean scipy.sparse.csr_array of
    shape (f(x).size, x.size) ((x.size, x.size) for a Hessian), both flattened in C order.

    Read from the program (adjit/patterns.py), never from derivatives: an entry is in it if
    the output can depend on the input for some value of the float arguments (both sides of
    a branch on float data; an index computed from float data reaches every element).
    Computed once per argument types, shapes and integer values, and kept. What it cannot
    bound (an array size computed from float data) is an AdjitError.
    """
    if fn is None:
        return lambda f: sparsity(f, argnums=argnums, hessian=hessian)
    from .patterns import Sparsity
    return Sparsity(fn, argnums, hessian=hessian)


def jacfwd(fn=None, argnums=0, *, fastmath=False, cache=None):
    """jacobian by forward mode: one jvp per element of x (good for few inputs)."""
    if fn is None:
        return lambda f: jacfwd(f, argnums=argnums, fastmath=fastmath, cache=cache)
    return GradientFunction(fn, argnums, False, fastmath=fastmath, kind="jacfwd", cache=cache)


def jacrev(fn=None, argnums=0, *, fastmath=False, cache=None):
    """jacobian by reverse mode: one vjp per element of the result (good for few outputs)."""
    if fn is None:
        return lambda f: jacrev(f, argnums=argnums, fastmath=fastmath, cache=cache)
    return GradientFunction(fn, argnums, False, fastmath=fastmath, kind="jacrev", cache=cache)


__all__ = ["grad", "value_and_grad", "vjp", "jvp", "hvp", "hessian", "jacobian", "jacfwd",
           "jacrev", "sparsity", "stop_gradient", "AdjitError", "GradientFunction", "TapeReport"]
