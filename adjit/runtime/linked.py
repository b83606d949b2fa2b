"""Runtime functions that generated code calls through their machine code, not their IR.

numba links the LLVM IR of every jitted function a function calls into the caller's module,
then runs LLVM's optimizer and code generator over the whole module: a gradient calling the
checkpoint schedule (`ckpt.start`, `ckpt.next_action`, ...), the tape's growth or
`copy_dot` compiled those functions again, in every gradient, although numba's disk cache
holds their machine code (the heat equation's checkpointed gradient: a third of its
compile time). These functions are large, called a few times per loop or per step, and gain
nothing from inlining, so generated code calls them through a symbol instead:

    linked(dispatcher)      a function of the same arguments and result. Called from Python
                            it calls the dispatcher; in compiled code numba types the call as
                            the dispatcher's own (compiling it for the argument types, or
                            loading it from the disk cache) and the call is to the symbol
                            `adjit.<digest>.<module>.<name>.<argument types>`, which LLVM
                            resolves to the machine code already loaded.
    calls(module)           a module holding linked() of every public jitted function of
                            `module` and the module's other public values (what generated
                            code reads as `ckpt.start`, `ckpt.STEP`).

The symbol is defined (llvmlite's add_symbol) when a call to it is compiled, and again
before numba loads a cached caller in a later process: the caller's compiled code carries
a `_Symbol` in numba's `reload_init`, which numba runs before loading the machine code (and
which a library numba loaded keeps, so that a function compiled later and linking it carries
the names on: _rebuild_keeping_names).
`<digest>` is a digest of adjit's runtime sources: machine code cached by another version
of the runtime does not load (AdjitError) rather than call functions it was not compiled
against. Functions that must be inlined to be fast (the vector math, add_any_order) stay
ordinary calls.
"""
import functools
import hashlib
import importlib
import os
import types as pytypes

from llvmlite import binding as ll
from numba.core import cgutils, types
from numba.core.compiler import CompileResult
from numba.core.compiler_lock import global_compiler_lock
from numba.core.dispatcher import Dispatcher
from numba.core.imputils import fix_returning_optional, lower_builtin
from numba.core.itanium_mangler import mangle_args
from numba.core.typing.templates import AbstractTemplate, infer_global

from ..errors import AdjitError

_DIGEST = []
_DEFINED = set()


def runtime_digest():
    """A digest of adjit's runtime sources (this folder's .py files)."""
    if not _DIGEST:
        h = hashlib.sha256()
        root = os.path.dirname(os.path.abspath(__file__))
        for name in sorted(os.listdir(root)):
            if name.endswith(".py"):
                h.update(name.encode())
                with open(os.path.join(root, name), "rb") as fh:
                    h.update(fh.read())
        _DIGEST.append(h.hexdigest()[:16])
    return _DIGEST[0]


class _Symbol:
    """One runtime function compiled for one signature, under a name that is the same in
    every process: calling it defines the name (compiling the function or loading it from
    numba's disk cache). Picklable and comparable, as numba's reload_init needs."""

    def __init__(self, module, name, argtypes, digest):
        self.module, self.name, self.argtypes, self.digest = module, name, argtypes, digest

    def __eq__(self, other):
        if not isinstance(other, _Symbol):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def _key(self):
        return (self.module, self.name, self.argtypes, self.digest)

    @property
    def symbol(self):
        return f"adjit.{self.digest}.{self.module}.{self.name}.{mangle_args(self.argtypes)}"

    def __call__(self):
        if self.digest != runtime_digest():
            raise AdjitError(
                f"machine code cached by numba calls adjit's runtime function "
                f"{self.module}.{self.name} of another adjit version",
                "Delete the cache of the @njit(cache=True) function that calls an adjit "
                "gradient (its __pycache__ folder's .nbi/.nbc files), or change the file, "
                "so that numba compiles it again.")
        define(getattr(importlib.import_module(self.module), self.name), self)

    def __repr__(self):
        return f"_Symbol({self.symbol})"


def define(dispatcher, sym):
    """Give `dispatcher`'s machine code for sym.argtypes the name sym.symbol (under numba's
    compiler lock, which the lowering and the loading that call this hold already); returns
    that compile result."""
    with global_compiler_lock:
        cres = dispatcher.overloads.get(sym.argtypes)
        if cres is None:
            dispatcher.compile(sym.argtypes)
            cres = dispatcher.overloads[sym.argtypes]
        if sym not in _DEFINED:
            ll.add_symbol(sym.symbol,
                          cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name))
            _DEFINED.add(sym)
        return cres


def linked(dispatcher):
    """`dispatcher` (an njit function of a runtime module, cached on disk) as a function
    compiled code calls through its machine code (see the module's docstring); anything
    else (a plain function, under NUMBA_DISABLE_JIT) as it is."""
    if not isinstance(dispatcher, Dispatcher):
        return dispatcher
    with global_compiler_lock:
        made = _LINKED.get(dispatcher)
        if made is None:
            made = _LINKED[dispatcher] = _linked(dispatcher)
    return made


_LINKED = {}
"""linked() of each dispatcher, made once (numba's typing and lowering are registered for
it)."""


def _linked(dispatcher):
    module, name = dispatcher.py_func.__module__, dispatcher.py_func.__name__
    if getattr(importlib.import_module(module), name, None) is not dispatcher:
        raise TypeError(f"{module}.{name} is not the dispatcher it names")

    @functools.wraps(dispatcher.py_func)
    def call(*args):
        return dispatcher(*args)

    call.dispatcher = dispatcher
    key = ("adjit.linked", module, name)   # (call's own name is the dispatcher's)

    class _Typing(AbstractTemplate):
        def generic(self, args, kws):
            fnty = self.context.resolve_value_type(dispatcher)
            return fnty.get_call_type(self.context, args, kws)

    infer_global(call, typing_key=key)(_Typing)

    @lower_builtin(key, types.VarArg(types.Any))
    def _lower(context, builder, sig, args):
        sym = _Symbol(module, name, tuple(sig.args), runtime_digest())
        fndesc = define(dispatcher, sym).fndesc
        fnty = context.call_conv.get_function_type(fndesc.restype, fndesc.argtypes)
        fn = cgutils.get_or_insert_function(builder.module, fnty, sym.symbol)
        context.call_conv.decorate_function(fn, fndesc.args, fndesc.argtypes,
                                            noalias=fndesc.noalias)
        status, result = context.call_conv.call_function(builder, fn, fndesc.restype,
                                                         fndesc.argtypes, args)
        with cgutils.if_unlikely(builder, status.is_error):
            context.call_conv.return_status_propagate(builder, status)
        result = fix_returning_optional(context, builder, sig, status, result)
        # a later process loading the caller's machine code defines the symbol first
        context.active_code_library._reload_init.add(sym)
        return result

    return call


def _rebuild_keeping_names(rebuild):
    """numba's CompileResult._rebuild (loading a cached function), which also gives the
    library it loads the reload_init it ran (the names that library's code calls). numba
    keeps them with a library it compiled, and a function compiled later that links the
    library inherits them into its own cache entry; a library loaded from the disk cache
    started without them, so a caller compiled after such a load (a user's
    @njit(cache=True) function calling another cached one that calls a gradient) was cached
    without the names, and a later process loading only that caller ended inside LLVM."""
    def _rebuild(cls, *args, **kwargs):
        cr = rebuild(cls, *args, **kwargs)
        names = getattr(cr, "reload_init", None)
        library = getattr(cr, "library", None)
        if names and library is not None:
            library._reload_init.update(names)
        return cr
    _rebuild.__adjit_keeps_names__ = True
    return classmethod(_rebuild)


if not getattr(CompileResult._rebuild, "__adjit_keeps_names__", False):
    CompileResult._rebuild = _rebuild_keeping_names(CompileResult._rebuild.__func__)


def calls(module):
    """A module of `module`'s public values, its jitted functions linked()."""
    out = pytypes.ModuleType(module.__name__ + ".calls")
    for key, value in vars(module).items():
        if key.startswith("_"):
            continue
        out.__dict__[key] = linked(value) if isinstance(value, Dispatcher) else value
    return out


__all__ = ["linked", "calls", "define", "runtime_digest"]
