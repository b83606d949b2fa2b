"""Whether an @njit helper adjit cannot read may be called as numba's call.

adjit differentiates a helper by reading its source. Where it cannot (complex numbers,
dicts, recursion, code numba compiles that adjit has no form for), the call is still exact
wherever no derivative flows through it (API.md: calls with no derivative rule): numba's
compiled helper runs, as in the user's program. That holds only if the call is a function of
its arguments, as an opaque call is taken to be:

- it writes into none of the arrays it is given (adjit would not see the change, and the
  backward sweep would read the values from after it);
- its result is no view of an array it is given (adjit holds the result as an array of its
  own);
- it makes no random draw and has no other effect (the backward sweep may compute it again).

`proof(dispatcher, signature)` shows this from numba's typed IR of the helper for those
argument types, the helpers it calls followed, and gives why not where it cannot: a write
through an argument, a view of one returned, a draw, a print, or a call adjit cannot see into.
The analysis is conservative: a value whose type can hold an array (an array, a tuple with
arrays, a list, an iterator) and that is made from an argument may be that argument's memory
unless it is made by arithmetic, a ufunc or a copy.
"""
import inspect

import numba
import numpy as np
from numba.core import ir, types
from numba.core.annotations.type_annotations import TypeAnnotation

from ..rules.effects import UNKNOWN, of_object, written_arguments
from ..rules.registry import REGISTRY

# array methods numba implements that change the array they are called on
_MUTATING_METHODS = ("sort", "fill", "itemset", "resize", "put", "partition", "setflags")
# array methods and attributes whose results never share the array's memory beyond numbers
_FRESH_METHODS = ("copy", "astype", "sum", "prod", "mean", "std", "var", "min", "max",
                  "argmin", "argmax", "argsort", "cumsum", "cumprod", "dot", "flatten",
                  "nonzero", "all", "any", "conj", "conjugate", "round", "take", "repeat",
                  "item", "tolist")
# the position of `out` among numpy's array methods' arguments (a.round(1, b) writes b)
_METHOD_OUT = {"round": 1, "clip": 2, "dot": 1, "take": 2, "cumsum": 2, "cumprod": 2,
               "sum": 2, "prod": 2, "mean": 2, "std": 2, "var": 2, "max": 1, "min": 1,
               "argmax": 1, "argmin": 1, "all": 1, "any": 1, "ptp": 1, "compress": 2,
               "conj": 0, "conjugate": 0, "trace": 4}
_VALUE_TYPES = (types.Number, types.Boolean, types.NoneType, types.Omitted, types.SliceType,
                types.UnicodeType, types.StringLiteral, types.Function, types.Module,
                types.Dispatcher, types.DType, types.NumberClass, types.BaseFunction,
                types.EnumMember, types.Literal, types.RangeType, types.RangeIteratorType,
                types.NPDatetime, types.NPTimedelta, types.Dummy)


class NotPure(Exception):
    """Why a helper cannot be called as numba's call: (what, line)."""


def _holds_memory(t):
    """Whether a value of numba type `t` may refer to an array's memory."""
    if isinstance(t, types.BaseTuple):
        return any(_holds_memory(x) for x in t.types)
    if isinstance(t, types.Optional):
        return _holds_memory(t.type)
    return not isinstance(t, _VALUE_TYPES)


def _same(a, b):
    return len(a) == len(b) and all(x == y or types.unliteral(x) == types.unliteral(y)
                                    for x, y in zip(a, b))


def _implementation(ftype, given, keywords):
    """(dispatcher, [argument types of each of its compiled versions the call may run]) of
    the implementation numba compiled for a call of an @overload'ed function of type
    `ftype` with positional argument types `given` and keyword ones `keywords`, or None."""
    for template in getattr(ftype, "templates", ()):
        for key, value in (getattr(template, "_impl_cache", None) or {}).items():
            if not (isinstance(key, tuple) and len(key) >= 3 and isinstance(value, tuple)
                    and len(value) == 2) or tuple(key[1]) != tuple(given) or \
                    tuple(key[2]) != tuple(keywords):
                continue        # (exactly: an implementation may be chosen by a literal)
            dispatcher, args = value
            code = getattr(getattr(dispatcher, "py_func", None), "__code__", None)
            if code is None or code.co_flags & inspect.CO_VARARGS:
                return None     # (which argument a parameter is, adjit does not follow)
            versions = [sig for sig in getattr(dispatcher, "overloads", {})
                        if _same(sig[:len(args)], args)]
            return (dispatcher, versions or [tuple(args)]) if dispatcher is not None else None
    return None


def _module_function(obj):
    module = getattr(obj, "__module__", None) or ""
    return module.split(".")[0] == "numpy"


class _Summary:
    """What one compiled helper does with its parameters: the positions it writes into
    (with the first line that does), the positions its result may be a view of."""

    def __init__(self, writes, returns):
        self.writes = writes
        self.returns = returns


def _overload(dispatcher, args):
    """The compile result of `dispatcher` for argument types `args`."""
    over = dispatcher.overloads.get(tuple(args))
    if over is None:
        loose = [cres for sig, cres in dispatcher.overloads.items() if _same(sig, args)]
        if len(loose) == 1:
            return loose[0]
        try:
            dispatcher.compile(tuple(args))
        except Exception as exc:    # noqa: BLE001 - numba's errors have many classes
            raise NotPure((f"calls `{getattr(dispatcher, '__name__', dispatcher)}`, which "
                           f"adjit could not compile again to read ({type(exc).__name__})",
                           None)) from None
        over = dispatcher.overloads.get(tuple(args))
    return over


def _summary(dispatcher, args, seen):
    if seen.get(_ARRAYS_ONLY) and not any(_holds_memory(t) for t in args):
        return _Summary({}, frozenset())    # (it is given no array to write or return)
    key = (id(dispatcher), tuple(args))
    if key in seen:
        if seen[key] is None:
            raise NotPure(("calls itself (adjit follows no recursion into numba's code)",
                           None))
        return seen[key]
    seen[key] = None
    cres = _overload(dispatcher, args)
    if cres is not None and not isinstance(cres.type_annotation, TypeAnnotation):
        # loaded from numba's disk cache (cache=True), which keeps no typed code: the
        # function compiled again, uncached, to read it
        options = {k: v for k, v in dispatcher.targetoptions.items() if k != "cache"}
        fresh = numba.jit(**options)(dispatcher.py_func)
        cres = _overload(fresh, args)
    if cres is None or not isinstance(cres.type_annotation, TypeAnnotation):
        raise NotPure((f"calls `{getattr(dispatcher, '__name__', dispatcher)}`, whose "
                       "compiled code adjit cannot see", None))
    result = _Analysis(cres.type_annotation, seen).run()
    seen[key] = result
    return result


class _Analysis:
    def __init__(self, annotation, seen):
        self.typemap = annotation.typemap
        self.calltypes = annotation.calltypes
        self.blocks = annotation.blocks
        self.seen = seen
        self.alias = {}         # variable -> the parameter positions it may refer into
        self.defs = {}          # variable -> its defining expression (getattr receivers)
        self.writes = {}        # parameter position -> the first line writing through it
        self.returns = set()
        self.changed = False    # (a container a method call put a view into)

    def type_of(self, var):
        return self.typemap.get(var.name)

    def of(self, var):
        return self.alias.get(var.name, frozenset())

    def run(self):
        for block in self.blocks.values():
            for stmt in block.body:
                if isinstance(stmt, ir.Assign):
                    self.defs[stmt.target.name] = stmt.value
        changed = True
        while changed:
            changed = False
            for block in self.blocks.values():
                for stmt in block.body:
                    changed |= self.statement(stmt)
        return _Summary(dict(self.writes), frozenset(self.returns))

    def statement(self, stmt):
        line = getattr(stmt.loc, "line", None)
        if isinstance(stmt, ir.Assign):
            refs = self.value(stmt.value, stmt.target, line)
            changed, self.changed = self.changed, False
            if refs and _holds_memory(self.type_of(stmt.target)):
                changed |= self.join(stmt.target, refs)
            return changed
        if isinstance(stmt, (ir.SetItem, ir.StaticSetItem, ir.SetAttr, ir.DelItem)):
            self.write(self.of(stmt.target), line)
            stored = getattr(stmt, "value", None)   # (a list or dict now holds the view;
            # an array holds a copy of the values)
            if isinstance(stored, ir.Var) and \
                    not isinstance(self.type_of(stmt.target), types.Array):
                return self.join(stmt.target, self.of(stored))
        elif isinstance(stmt, ir.Return):
            self.returns |= self.of(stmt.value)
        elif isinstance(stmt, ir.Print):
            if not self.seen.get(_ARRAYS_ONLY):
                raise NotPure(("prints", line))
        elif not isinstance(stmt, (ir.Del, ir.Jump, ir.Branch, ir.Raise, ir.StaticRaise,
                                   ir.TryRaise, ir.StaticTryRaise, ir.PopBlock)):
            raise NotPure((f"has a statement adjit cannot follow ({type(stmt).__name__})",
                           line))
        return False

    def join(self, var, refs):
        """Add `refs` to what `var` may refer into; whether that changed anything."""
        old = self.of(var)
        if refs <= old:
            return False
        self.alias[var.name] = old | refs
        return True

    def write(self, refs, line):
        for k in refs:
            self.writes.setdefault(k, line)

    def value(self, value, target, line):
        """The parameters `target` may refer into after `target = value` (writes and effects
        on the way are recorded or raised)."""
        if isinstance(value, ir.Arg):
            return frozenset([value.index])
        if isinstance(value, ir.Var):
            return self.of(value)
        if isinstance(value, (ir.Const, ir.Global, ir.FreeVar)):
            return frozenset()
        if not isinstance(value, ir.Expr):
            raise NotPure((f"has a value adjit cannot follow ({type(value).__name__})", line))
        op = value.op
        if op in ("binop", "unary", "arrayexpr", "build_slice", "null"):
            # (null: numba's value of a variable not yet assigned on a path into a join)
            return frozenset()
        if op == "inplace_binop":
            lhs = value.lhs
            if isinstance(self.type_of(lhs), types.Array):
                self.write(self.of(lhs), line)
                return self.of(lhs)
            return frozenset()
        if op in ("getattr",):
            if value.attr in _FRESH_METHODS + ("shape", "size", "ndim", "dtype", "strides"):
                return frozenset()
            return self.of(value.value)
        if op in ("getitem", "static_getitem", "typed_getitem", "getiter", "iternext",
                  "pair_first", "pair_second", "exhaust_iter", "cast", "phi"):
            if op == "phi":
                refs = frozenset()
                for v in value.incoming_values:
                    refs |= self.of(v) if isinstance(v, ir.Var) else frozenset()
                return refs
            return self.of(value.value)
        if op in ("build_tuple", "build_list", "build_set", "build_map"):
            refs = frozenset()
            for v in value.items:
                for x in (v if isinstance(v, tuple) else (v,)):
                    refs |= self.of(x) if isinstance(x, ir.Var) else frozenset()
            return refs
        if op == "call":
            return self.call(value, line)
        raise NotPure((f"has an expression adjit cannot follow ({op})", line))

    def through(self, dispatcher, args, named, expr, given, line):
        """What `target = expr` may refer into, a call of the compiled helper `dispatcher`
        for argument types `args`, its parameters named as `named`'s (the function an
        @overload implements: numba binds keywords by its signature)."""
        summary = _summary(dispatcher, args, self.seen)
        code = getattr(getattr(named, "py_func", named), "__code__", None)
        names = code.co_varnames[:code.co_argcount] if code is not None else ()
        if code is None or code.co_flags & inspect.CO_VARARGS or expr.vararg is not None:
            # (`*args` on either side: which argument a parameter is, adjit does not
            # follow; any write or view is charged to all of them)
            if summary.writes:
                self.write(given, line)
            return given if summary.returns else frozenset()
        at = dict(enumerate(expr.args))
        for key, v in expr.kws:
            if key not in names:
                raise NotPure((f"passes `{key}` by keyword to a helper adjit cannot "
                               "match it to a parameter of", line))
            at[names.index(key)] = v
        refs = frozenset()
        for k, a in at.items():
            if k in summary.writes:
                self.write(self.of(a), line)
            if k in summary.returns:
                refs |= self.of(a)
        return refs

    def call(self, expr, line):
        ftype = self.type_of(expr.func)
        args = list(expr.args) + [v for _, v in expr.kws] + \
            ([expr.vararg] if isinstance(expr.vararg, ir.Var) else [])
        given = frozenset().union(*[self.of(a) for a in args]) if args else frozenset()
        if isinstance(ftype, types.Dispatcher):
            sig = self.calltypes[expr]
            return self.through(ftype.dispatcher, sig.args, ftype.dispatcher, expr, given,
                                line)
        if isinstance(ftype, types.Function) and of_object(ftype.typing_key) == UNKNOWN:
            found = _implementation(ftype, [self.type_of(a) for a in expr.args],
                                    [(k, self.type_of(v)) for k, v in expr.kws])
            if found is not None:       # an @overload: numba's implementation, followed
                dispatcher, versions = found
                refs = frozenset()
                for args in versions:
                    refs |= self.through(dispatcher, args, ftype.typing_key, expr, given,
                                         line)
                return refs
        if isinstance(ftype, types.BoundFunction):
            receiver = self.defs.get(expr.func.name)
            if not (isinstance(receiver, ir.Expr) and receiver.op == "getattr"):
                raise NotPure((f"calls a method adjit cannot follow ({ftype})", line))
            mine = self.of(receiver.value)
            method = receiver.attr
            made = getattr(getattr(ftype, "template", None), "_overload_func", None)
            if made is not None and not (getattr(made, "__module__", "") or "").startswith(
                    "numba"):
                raise NotPure((f"calls the method `{method}`, an @overload_method adjit "
                               "cannot see into", line))
            if method in _MUTATING_METHODS:
                self.write(mine, line)
            out = _METHOD_OUT.get(method)
            for a in ([v for k, v in expr.kws if k == "out"] +
                      (expr.args[out:out + 1] if out is not None else [])):
                self.write(self.of(a), line)
            if given:
                self.changed |= self.join(receiver.value, given)   # (list.append(view))
            return frozenset() if method in _FRESH_METHODS else mine | given
        if isinstance(ftype, types.Function):
            obj = ftype.typing_key
            why = of_object(obj)
            if why is not None:
                name = getattr(obj, "__name__", None) or str(obj)
                raise NotPure((f"calls `{name}`, " +
                               ("which adjit cannot see into" if why == UNKNOWN else
                                f"which has an effect ({why})"), line))
            if _module_function(obj) or isinstance(obj, np.ufunc):
                written = written_arguments(obj, expr.args, expr.kws)
                if written is None:     # (copy=False: the argument is the result)
                    self.write(given, line)
                    return given
                for a in written:
                    self.write(self.of(a), line)
            elif any(k == "out" for k, _ in expr.kws):
                self.write(given, line)
            entry = REGISTRY.get(obj)
            if isinstance(obj, np.ufunc) or obj in (np.copy, np.array) or entry is not None \
                    and (entry.family in ("elementwise", "reduction", "allocate", "scalar") or
                         entry.array_rule is not None or entry.fresh):
                # (a new array: np.linspace, np.full_like)
                return frozenset()
            return given
        if isinstance(ftype, (types.ExceptionClass, types.NumberClass, types.DType)):
            return frozenset()      # (an exception to raise; a conversion of a number)
        if isinstance(ftype, types.ContextManager):     # (numba's objmode, parallel_chunksize)
            raise NotPure(("has a `with` block that runs other code (objmode: Python)", line))
        if isinstance(ftype, types.RecursiveCall):
            # the function calling itself (aeon's _sakoe_chiba_bounding): its effects are
            # this very scan's; what it writes or returns of its arguments is not known yet,
            # so every array it is given is taken as written and as returned
            self.write(given, line)
            return given
        raise NotPure((f"calls something adjit cannot see into ({ftype})", line))


_ARRAYS_ONLY = "arrays only"
"""The key of `seen` (the analyses made, by helper and argument types) that says whether
only the arrays given are asked about (proof's `arrays_only`)."""


def proof(dispatcher, args, arrays_only=False):
    """None if calling the compiled `dispatcher` with argument types `args` (numba types)
    writes no array it is given, returns no view of one and has no effect; else (why,
    line): what it does, and the line (in the file of the helper or of one it calls; None
    where there is no one line). With `arrays_only`, effects are not asked about (the
    caller checks them: adjit/outline.py, on adjit's own copies of the helper, lets a print
    before a raise pass), and calls given no memory (numbers: FinancePy's normcdf, which
    calls itself) are not followed."""
    try:
        summary = _summary(dispatcher, tuple(args), {_ARRAYS_ONLY: arrays_only})
    except NotPure as exc:
        return exc.args[0]
    code = getattr(getattr(dispatcher, "py_func", None), "__code__", None)
    names = code.co_varnames[:code.co_argcount] if code is not None else ()

    def named(k):
        return f"`{names[k]}`" if k < len(names) else f"number {k + 1}"
    if summary.writes:
        k = min(summary.writes)
        return (f"writes into its array argument {named(k)}", summary.writes[k])
    if summary.returns:
        k = min(summary.returns)
        return (f"may return a view of its array argument {named(k)}", None)
    return None
