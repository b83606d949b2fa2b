"""Calls with no derivative rule, passed through as they are.

A function adjit has no entry for (np.searchsorted, np.digitize, np.unique, np.histogram,
np.cumprod, ...) is still called in the generated code, unchanged, wherever no derivative has
to flow through it: on integers, on data outside argnums, on values under stop_gradient, or
when its result only reaches integer uses, indexing, conditions or stop_gradient. adjit does
not know its result type, so it asks numba: `result(obj, args, keywords)` compiles a tiny
function making the same call on arguments of the same types (constants written out, as numba
may need their values) and reads the type numba infers. Activity analysis then treats the
result as depending on every argument; where a derivative would have to flow through the
call, the reverse and tangent passes refuse it by name.

Argument and result descriptors: ("f",) a float, ("i",) an int, ("b",) a bool, ("array",
ndim, code) an array (code "f", "i" or "b"), ("i", "uint64") an int numba holds as uint64 (it
joins uint64 with int64 into float64), ("const", value) a constant argument, ("tuple",
items) a tuple, ("none",) no value (a call made for its effect).
"""
import functools
import warnings

import numba
import numpy as np
from numba.core import types as nt
from numba.core.errors import NumbaPerformanceWarning

_SCALARS = {"f": nt.float64, "i": nt.int64, "b": nt.boolean}


def _numba_type(desc):
    if desc == ("i", "uint64"):
        return nt.uint64
    if desc[0] == "array":      # ("array", ndim, dtype) or with its layout, "C", "F" or "A"
        return nt.Array(_SCALARS[desc[2]], desc[1], desc[3] if len(desc) > 3 else "A")
    if desc[0] == "tuple":
        return nt.Tuple([_numba_type(d) for d in desc[1]])
    return _SCALARS[desc[0]]


def _descriptor(t):
    if isinstance(t, nt.Array):
        dtype = t.dtype
        code = "b" if isinstance(dtype, nt.Boolean) else "i" if isinstance(dtype, nt.Integer) \
            else "f" if isinstance(dtype, nt.Float) else None
        return None if code is None else ("array", t.ndim, code)
    if isinstance(t, nt.Boolean):
        return ("b",)
    if isinstance(t, nt.Integer):
        return ("i", "uint64") if t == nt.uint64 else ("i",)
    if isinstance(t, nt.Float):
        return ("f",)
    if isinstance(t, nt.BaseTuple):
        items = tuple(_descriptor(x) for x in t.types)
        return None if None in items else ("tuple", items)
    if isinstance(t, (nt.NoneType, nt.Omitted)) or t == nt.none:
        return ("none",)
    return None


def number_descriptor(v):
    """The descriptor of a Python number given where its type, not its value, is wanted (an
    item of a tuple argument); None for anything else."""
    if not isinstance(v, (bool, int, float)):
        return None
    return ("b",) if isinstance(v, bool) else ("i",) if isinstance(v, int) else ("f",)


class Untyped(Exception):
    """numba does not compile the call for these argument types (its message)."""


def _literal(v):
    """Python source for a constant argument: np.nan and the infinities as numba reads them
    (their repr, `nan`, is no name there)."""
    if isinstance(v, float) and not np.isfinite(v):
        return "np.nan" if np.isnan(v) else "np.inf" if v > 0 else "-np.inf"
    if isinstance(v, tuple) and any(_literal(x) != repr(x) for x in v):
        return "(" + "".join(_literal(x) + ", " for x in v) + ")"
    return repr(v)


def _call_text(args, keywords, contiguous=False):
    """(parameters, arguments): the non-constant arguments' parameter names and the
    call's arguments, constants written out. `contiguous`: arrays passed as
    np.ascontiguousarray(...) (a helper numba compiles for C arrays, where generated code
    may hold a view typed with layout A: the same values, as the helper writes none)."""
    params, call_args = [], []
    for key, d in [(None, d) for d in args] + list(keywords):
        if d[0] == "const":
            text = _literal(d[1])
        else:
            text = f"a{len(params)}"
            params.append(text)
            if contiguous and d[0] == "array":
                text = f"np.ascontiguousarray({text})"
        call_args.append(text if key is None else f"{key}={text}")
    return params, call_args


def _source(name, args, keywords, item, contiguous=False):
    """A function of the non-constant arguments making the call, constants written out."""
    params, call_args = _call_text(args, keywords, contiguous)
    tail = "" if item is None else f"[{item}]"
    return f"def {name}({', '.join(params)}):\n    return fn({', '.join(call_args)}){tail}\n"


def _function(obj, args, keywords, item, name, contiguous=False):
    namespace = {"fn": obj, "np": np}
    exec(compile(_source(name, args, keywords, item, contiguous), "<adjit call>",  # noqa: S102
                 "exec"), namespace)
    return numba.njit(namespace[name])


def _message(exc):
    lines = [x.strip() for x in str(exc).splitlines() if x.strip()]
    for line in lines:
        if line.startswith(("No implementation", "Invalid use", "Unknown attribute")) or \
                "unexpected keyword" in line or "got an unexpected" in line:
            return line[:300]
    return (lines[0] if lines else type(exc).__name__)[:300]


def compiled_type(dispatcher, sig):
    """numba's result type of `dispatcher` compiled for the argument types `sig`, or, where
    it does not compile for them, the line of numba's message that says why (a str)."""
    try:
        with warnings.catch_warnings():     # (a probe on any-layout arrays: no advice)
            warnings.simplefilter("ignore", NumbaPerformanceWarning)
            dispatcher.compile(sig)
    except Exception as exc:   # noqa: BLE001 - numba's typing errors have many classes
        return _message(exc)
    return dispatcher.overloads[sig].signature.return_type


class _Same:
    """A cache key holding an object by identity: a ctypes function is unhashable, and the
    callee of a call is one object either way."""
    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __hash__(self):
        return id(self.obj)

    def __eq__(self, other):
        return isinstance(other, _Same) and other.obj is self.obj


def _cached(fn):
    """functools.lru_cache keyed by the callee's identity (it keeps the callee alive, as
    lru_cache would); a call whose constant arguments are unhashable is not cached."""
    cache = {}

    @functools.wraps(fn)
    def wrapper(obj, *rest, **named):
        key = (_Same(obj), rest, tuple(sorted(named.items())))
        try:
            return cache[key]
        except KeyError:
            pass
        except TypeError:       # an unhashable constant argument
            return fn(obj, *rest, **named)
        value = fn(obj, *rest, **named)
        cache[key] = value
        return value
    wrapper.cache_clear = cache.clear
    return wrapper


@_cached
def _probe(obj, args, keywords, contiguous=False):
    """The compile result of a function making the call on arguments of these types."""
    dispatcher = _function(obj, args, keywords, None, "probe", contiguous)
    sig = tuple(_numba_type(d) for d in list(args) + [v for _, v in keywords]
                if d[0] != "const")
    try:
        dispatcher.compile(sig)
    except Exception as exc:   # noqa: BLE001 - numba's typing errors have many classes
        raise Untyped(_message(exc)) from None
    return dispatcher.overloads[sig]


@_cached
def _result(obj, args, keywords, contiguous=False):
    return _descriptor(_probe(obj, args, keywords, contiguous).signature.return_type)


def called_types(obj, args, keywords=(), contiguous=False):
    """numba's types of the arguments the @njit function `obj` is compiled for where
    generated code makes this call (descriptors as for `result`; defaults filled), or None
    where the call does not reach `obj` itself."""
    annotation = _probe(obj, tuple(args), tuple(keywords), contiguous).type_annotation
    for expr, sig in annotation.calltypes.items():
        if getattr(expr, "op", None) == "call":
            callee = annotation.typemap.get(expr.func.name)
            if isinstance(callee, nt.Dispatcher) and callee.dispatcher is obj:
                return sig.args
    return None


def _dummy(desc, family=0, at=0):
    """A small value of the descriptor's type. The families differ where a function accepts
    only some values: 0 counts from 1, 1 runs from -1 to 1 (np.roots of [1, 2, 3] has
    complex roots, which numba's roots of a real array refuses; of [-1, 0, 1] it has not),
    2 is an identity (eigenvalues numba keeps real). The numbers in a tuple rise with their
    position `at` (1.0, 2.0, 5 for a grid's start, stop and count)."""
    if desc[0] == "array":
        dtype = {"f": np.float64, "i": np.int64, "b": np.bool_}[desc[2]]
        n, shape = 3 ** desc[1], (3,) * desc[1]
        if desc[2] == "b":
            return (np.arange(n) % 2 == family % 2).reshape(shape)
        if family == 1:
            return np.linspace(-1, 1, n).astype(dtype).reshape(shape)
        if family == 2:
            return (np.eye(3) if desc[1] == 2 else np.zeros(n)).astype(dtype).reshape(shape)
        return np.arange(1, n + 1).astype(dtype).reshape(shape)
    if desc[0] == "tuple":      # numbers rising along it: a grid's (start, stop, count)
        return tuple(_dummy(d, family, k) for k, d in enumerate(desc[1]))
    return {"f": 1.0 + at, "i": 1 + 2 * at, "b": True}[desc[0]]


@_cached
def may_share_memory(obj, args, keywords=()):
    """Whether obj's array result may be a view of an array argument (np.atleast_1d,
    np.ascontiguousarray): the call is made on small arrays of the same types and its result
    compared. True if it is; False if it is not; if the call fails on every family of small
    values tried, the text of its last failure (adjit cannot tell, and refuses saying why)."""
    sig_args = [d for d in list(args) + [v for _, v in keywords] if d[0] != "const"]
    if not any(d[0] == "array" for d in sig_args):
        return False
    failure = None
    for family in range(3):
        values = [_dummy(d, family) for d in sig_args]
        try:
            result = _function(obj, args, keywords, None, "probe")(*values)
        except Exception as exc:   # noqa: BLE001 - any failure: try other values
            failure = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
            continue
        results = result if isinstance(result, tuple) else (result,)
        return any(isinstance(r, np.ndarray) and isinstance(v, np.ndarray) and
                   np.shares_memory(r, v) for r in results for v in values)
    return failure


@_cached
def caller(obj, args, keywords, item=None, contiguous=False):
    """An @njit function of the non-constant arguments of obj(*args, **keywords) (constants
    and keywords written into it), returning the call's result or its element `item`: what
    generated code calls where the call has keywords or a tuple result. `args` and
    `keywords` are descriptors; only the constants' values matter here."""
    name = getattr(obj, "__name__", "call") + ("" if item is None else f"_{item}")
    return _function(obj, args, keywords, item, name if name.isidentifier() else "call",
                     contiguous)


@_cached
def not_inlined(obj):
    """`obj`, or for an @njit(inline="always") function the same function compiled without
    it: numba inlines such a function where it is called, so no call of it is left for
    called_types to find (the code is the same)."""
    options = getattr(obj, "targetoptions", None) or {}
    if options.get("inline", "never") == "never":
        return obj
    return numba.jit(**{k: v for k, v in options.items()
                        if k not in ("inline", "cache")})(obj.py_func)


def packable(desc):
    """Whether a tuple result can be returned packed (packed_callers): numbers and float
    arrays."""
    return desc[0] == "tuple" and all(d == ("f",) or d[0] == "array" and d[2] == "f"
                                      for d in desc[1])


@_cached
def packed_callers(obj, args, keywords, items, contiguous=False):
    """(pack, [unpack_k]) for a call whose result is the tuple of float numbers and float
    arrays `items` (descriptors): pack makes the call once and returns one float array,
    the arrays' shapes first and then every element's values in order; unpack_k(p) is
    element k of the result again (a new array). A tuple result is so computed once, not
    once for each element."""
    name = getattr(obj, "__name__", "call")
    name = name if name.isidentifier() else "call"
    params, call_args = _call_text(args, keywords, contiguous)
    ndims = [0 if d == ("f",) else d[1] for d in items]
    head = sum(ndims)
    sizes = [" * ".join(f"r[{j}].shape[{k}]" for k in range(n)) if n else "1"
             for j, n in enumerate(ndims)]
    lines = [f"def {name}_packed({', '.join(params)}):",
             f"    r = fn({', '.join(call_args)})",
             f"    out = np.empty({head} + {' + '.join(f'({z})' for z in sizes)})"]
    h = 0
    for j, n in enumerate(ndims):
        for k in range(n):
            lines.append(f"    out[{h}] = r[{j}].shape[{k}]")
            h += 1
    lines.append(f"    at = {head}")
    for j, n in enumerate(ndims):
        if n:
            lines += [f"    out[at:at + r[{j}].size] = r[{j}].ravel()", f"    at += r[{j}].size"]
        else:
            lines += [f"    out[at] = r[{j}]", "    at += 1"]
    lines.append("    return out")
    namespace = {"fn": obj, "np": np}
    exec(compile("\n".join(lines) + "\n", "<adjit call>", "exec"), namespace)  # noqa: S102
    pack = numba.njit(namespace[f"{name}_packed"])
    unpack = []
    for k, n in enumerate(ndims):
        body = [f"def {name}_{k}(p):", f"    at = {head}"]
        h = 0
        for j, m in enumerate(ndims[:k + 1]):
            dims = [f"int(p[{h + i}])" for i in range(m)]
            h += m
            if j < k:
                body.append(f"    at += {' * '.join(dims) if m else '1'}")
            elif m:
                shape = "(" + "".join(d + ", " for d in dims) + ")"
                body.append(f"    return p[at:at + {' * '.join(dims)}].copy().reshape({shape})")
            else:
                body.append("    return p[at]")
        namespace = {"np": np}
        exec(compile("\n".join(body) + "\n", "<adjit call>", "exec"), namespace)  # noqa: S102
        unpack.append(numba.njit(namespace[f"{name}_{k}"]))
    return pack, unpack


def result(obj, args, keywords=(), contiguous=False):
    """The result descriptor of obj(*args, **keywords) (descriptors, see the module
    docstring); None for a type adjit cannot hold (complex, strings, objects); Untyped if
    numba does not compile the call. `contiguous`: arrays passed as C arrays (_call_text)."""
    return _result(obj, tuple(args), tuple(keywords), contiguous)
