"""What adjit knows of a function's effect beyond its result (a random draw advances numba's
generator, np.random.seed resets it, print writes, an objmode block runs Python), by the
function object alone: the registry's `effect`, objmode's mark, numpy.random's module.
analysis/effects.py marks the statements that make such calls; the normalizer asks here
whether a call may be made at compile time (never one with an effect it knows of)."""
import inspect

import numpy as np

from .registry import REGISTRY

_PURE_MODULES = ("numpy", "math", "cmath", "builtins", "scipy")
DRAW = "a random draw: it advances numba's generator"
UNKNOWN = "adjit cannot read it (what it does beyond its result is unknown)"
WRITERS = frozenset({"copyto", "put", "place", "putmask", "fill_diagonal", "put_along_axis"})
"""numpy's functions that write into the arrays they are given (beside any given `out`)."""


def of_object(obj):
    """Why a call of `obj` has an effect, or None."""
    entry = REGISTRY.get(obj)
    if entry is not None:
        return entry.effect
    if hasattr(getattr(obj, "py_func", obj), "__adjit_objmode__"):
        return "a `with objmode()` block: Python code that runs once, in order"
    inner = getattr(obj, "__adjit_calls__", None)     # a wrapper adjit made (rules/opaque.py)
    if inner is not None:
        return of_object(inner)
    module = getattr(obj, "__module__", None)
    if not isinstance(module, str):
        return UNKNOWN
    if module == "numpy.random" or module.startswith("numpy.random."):
        return DRAW
    if module.split(".")[0] in _PURE_MODULES or module.startswith("adjit."):
        return None
    return UNKNOWN


def library_function(obj):
    """Whether `obj` is a function of numpy's, Python's own, scipy's, numba's or adjit's, not
    one of the user's (which numba compiles for whatever adjit passes it)."""
    module = getattr(getattr(obj, "py_func", obj), "__module__", None) or ""
    return module.split(".")[0] in _PURE_MODULES + ("numba", "llvmlite", "adjit")


def known_effect(obj):
    """Why a call of `obj` has an effect adjit knows of (a random draw, a seed, a print, an
    objmode block), or None: for no effect, and for one adjit cannot know (such a call is
    made at compile time only where adjit must: rules/opaque.py probes what it returns)."""
    why = of_object(obj)
    return None if why == UNKNOWN else why


def is_draw(obj):
    """Whether a call of `obj` is a random draw (numpy.random's functions, numba's generator):
    given a size, it makes a new array."""
    return of_object(obj) == DRAW


def reads_only(obj):
    """Whether a call of `obj` made for its effect only reads the arguments it is given
    (print): no array of them changes."""
    entry = REGISTRY.get(obj)
    return entry is not None and entry.reads_only


def written_arguments(obj, args, keywords):
    """The arguments a call of numpy's function `obj` writes into, of `args` (positional)
    and `keywords` ((name, value) pairs): every one of a function that writes its arguments
    (WRITERS), a ufunc's outputs after its inputs (np.add(a, b, c) writes c), what a
    function is given as `out` by keyword or by position (np.clip(a, 0, 1, b)); where it
    has no signature, every argument past two (one may be `out`). None where `copy` is
    given (np.nan_to_num(x, copy=False) writes into x and returns it). Of a function that is
    not numpy's (nor a ufunc), none."""
    keywords = list(keywords)
    module = getattr(obj, "__module__", None) or ""
    if not isinstance(obj, np.ufunc) and module.split(".")[0] != "numpy":
        return []       # (not numpy's: a custom_vjp function's parameter named `out`)
    if getattr(obj, "__name__", "") in WRITERS:
        return list(args) + [v for _, v in keywords]
    outs = [v for k, v in keywords if k == "out"]
    if isinstance(obj, np.ufunc):
        return list(args[obj.nin:]) + outs
    try:
        params = list(inspect.signature(obj).parameters.values())
    except (TypeError, ValueError):
        params = None
    names = []      # (the parameters positional arguments bind to, in order)
    for p in params or ():
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            break   # (np.einsum(*operands, out=None): `out` by keyword only)
        names.append(p.name)
    bound = dict(zip(names, args))
    bound.update(dict(keywords))
    if "copy" in bound:
        return None
    if params is None and len(args) > 2:
        return list(args)
    return [bound["out"]] if "out" in bound else []
