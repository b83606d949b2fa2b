"""Calls to the user's own functions, inlined into the caller's A-normal form.

A helper (a Python function or an @njit one adjit can read) is normalized with its
parameters bound to the caller's atoms (or views) and its locals renamed with a prefix; its
result (a scalar, an array, or a view) is the call's value."""
import ast

import numpy as np
from numba.core.registry import CPUDispatcher

from .. import ir
from ..errors import AdjitError, InternalError
from ..frontend.source import read_function
from ..rules.opaque import number_descriptor
from .exits import always_returns
from .names import call_effect
from .prune import pruned_source, with_settings
from .values import NONE, DtypeValue, EnumValue, FunctionValue, NoneValue, NoResult, \
    RecordValue, Shape, TupleValue, TypeOf, assigned_user_names
from .vectorize import View
from .views import has_take


def argument(norm, node, out):
    """A value passed to a helper: an atom, a tuple or shape (the helper reads its elements),
    None (a parameter of the caller left out: the helper's `is None` tests decide on it),
    or a view (the helper's parameter is then a name for part of the caller's array:
    writes through it reach the array)."""
    value = norm.rhs(node, out)
    if isinstance(value, (Shape, TupleValue, FunctionValue, TypeOf, RecordValue, DtypeValue,
                          EnumValue)) or \
            (isinstance(value, View) and not has_take(value)):
        return value
    if isinstance(value, NoneValue) and not isinstance(value, NoResult):
        return value        # an optional argument left out, passed on (tslearn's radius)
    return norm.to_atom(out, value)


class NeverReturns(Exception):
    """Raised by the inlining of a call whose helper raises before any return for its
    arguments, after the helper's statements (which end in that raise) are in the caller's
    code: the statement making the call never completes, and what follows it in its block
    never runs (_Normalizer.block ends the block there)."""

    def __init__(self, name):
        super().__init__(name)
        self.name = name


class Unread(Exception):
    """An @njit helper adjit could not read (`error`, the AdjitError it raised): the
    function is normalized again from its start, calling that helper as numba compiles it
    (normalize/numpy_calls.py: kept_helper) - exact wherever no derivative flows through
    it. (A whole new pass rather than an undo: inlining changes the shared state as it
    goes.)"""

    def __init__(self, fn, error, site):
        super().__init__(fn, error, site)
        self.fn = fn
        self.error = error
        self.site = site        # (a helper readable at one call and not at another: only
        # the call it was not read at is kept as numba's)


def call_site(norm, node):
    """The key of the call `node` of a helper: its file, line and column."""
    return (norm.src.loc.filename, getattr(node, "lineno", None),
            getattr(node, "col_offset", None))


def split_error(error):
    """(where, construct, advice) of an AdjitError's message ("in function 'h' (file.py,
    line 9): ", "the constant 1j is not supported", "Use only ..."); where is "" for a
    message that names no place."""
    text = str(error)
    head, sep, rest = text.partition("): ")
    if not sep or not head.startswith("in function "):
        head, rest = "", text
    else:
        head += sep
    construct, _, advice = rest.partition(". ")
    return head, construct, advice


def unread_reason(error):
    """What an Unread helper's error says adjit could not read, without its advice:
    "the constant 1j is not supported (file.py, line 9)"."""
    head, construct, _ = split_error(error)
    construct = construct.split("; and adjit does not call")[0]   # (a helper it calls)
    return f"{construct} ({head[head.index('(') + 1:-3]})" if head else construct


def inline(norm, node, fn, out, atoms=None):
    """The helper `fn` called by `node`, inlined into `out` by the normalizer `norm`.
    `atoms`: the arguments as the normalizer's atoms already (a @vectorize kernel on one
    element of each operand: it takes numbers, so it cannot write the arrays pending in
    norm.lazy). An @njit helper adjit cannot read raises Unread (CPU code)."""
    dispatcher = fn if isinstance(fn, CPUDispatcher) and not norm.ctx.cuda else None
    called = fn
    try:
        callee = read_function(fn, vararg=True)     # (a dispatcher's function: unwrapped)
    except AdjitError as exc:
        if not _falls_back(dispatcher, exc):
            raise
        raise Unread(dispatcher, exc, call_site(norm, node)) from None
    fn = callee.fn
    params = callee.params
    positional = [a.arg for a in callee.tree.args.posonlyargs + callee.tree.args.args]
    values = [argument(norm, a, out) for a in node.args] if atoms is None else list(atoms)
    if norm.lazy and atoms is None:
        norm.arrays.flush_lazy(out)     # the helper may write any array it is given
    extra = values[len(positional):]
    if extra and callee.vararg is None:
        raise norm.error(node, f"a call to {fn.__name__} with the wrong arguments "
                         f"({len(values)} positional)", f"It takes {len(positional)}: "
                         f"{', '.join(positional)}; pass the others by keyword.")
    if any(not (ir.is_atom(v) or isinstance(v, TupleValue) or
                (isinstance(v, View) and not has_take(v))) for v in extra):
        raise norm.error(node, f"a view, function or None passed to `*{callee.vararg}` "
                         f"of {fn.__name__}", "Pass numbers, arrays and tuples of them there "
                         "(a view's copy, a function by a named parameter).")
    bound = dict(zip(positional, values))
    for kw in node.keywords:
        if kw.arg is None or kw.arg not in params or kw.arg in bound:
            raise norm.error(node, f"the keyword argument `{kw.arg}`",
                             f"Pass the parameters of {fn.__name__}: {', '.join(params)}, "
                             "each once.")
        bound[kw.arg] = argument(norm, kw.value, out)
    defaults = dict(zip(positional[len(positional) - len(callee.fn.__defaults__ or ()):],
                        callee.fn.__defaults__ or ()))
    defaults.update(callee.fn.__kwdefaults__ or {})
    for p, d in defaults.items():
        if p not in bound:
            if d is None:
                bound[p] = NONE         # `w=None`: only `w is None` may read it
                continue
            if isinstance(d, np.ndarray):     # a constant array, as numba freezes it
                bound[p] = ir.name(norm.global_array(d, f"{fn.__name__}_{p}"))
                continue
            held = norm.global_tuple(d, f"{fn.__name__}_{p}") if isinstance(d, tuple) \
                else None
            if held is not None:                # `args=()`, a tuple of numbers or arrays
                bound[p] = held
                continue
            if isinstance(d, (np.integer, np.floating, np.bool_)):
                d = d.item()
            if not isinstance(d, (bool, int, float, str)):
                raise norm.error(node, f"the default of `{p}`, which is not a number, a "
                                 "string, an array or a tuple of those",
                                 f"Pass `{p}` explicitly.")
            bound[p] = ir.const(d) if not isinstance(d, str) else ast.Constant(value=d)
    missing = [p for p in params if p not in bound]
    if missing:
        raise norm.error(node, f"a call to {fn.__name__} with the wrong arguments (no "
                         f"value for `{missing[0]}`)",
                         f"Pass {len(params)} argument(s): {', '.join(params)}.")
    for p, v in bound.items():
        if isinstance(v, ast.Constant) and v.value is None:
            bound[p] = NONE             # None passed: as the default None
    if callee.vararg is not None:       # `*args`: the tuple of the other positional values
        params = params + [callee.vararg]
        bound[callee.vararg] = TupleValue(extra)
    elif callee.fn in norm.ctx.outline:
        made = _outlined_call(norm, called, [bound[p] for p in params], out)
        if made is not None:
            return made
    try:
        return _body(norm, node, callee, fn, params, bound, out)
    except AdjitError as exc:
        if not _falls_back(dispatcher, exc):
            raise
        raise Unread(dispatcher, exc, call_site(norm, node)) from None


def _number(norm, value):
    """Whether a helper's argument is a number: a numeric constant or a name not of an
    array."""
    if isinstance(value, ast.Constant):
        return type(value.value) in (bool, int, float)
    return isinstance(value, ast.Name) and norm.arrays.array_ndim(value) is None


def _outlinable(norm, value):
    """Whether a helper's argument may be passed to it outlined: a number, or a whole array
    (not a view: the helper's parameter is then the caller's array), named or read from a
    tuple (FinancePy's `params = args[8]`)."""
    return _number(norm, value) or _whole_array(norm, value) is not None


def _whole_array(norm, value):
    """The name of the array `value` is the whole of, or None."""
    if isinstance(value, View) and value.is_identity() and value.parent is None:
        value = ir.name(value.base)
    return value if isinstance(value, ast.Name) and value.id in norm.ctx.arrays else None


def _outlined_call(norm, helper, values, out):
    """The call of a helper adjit/outline.py chose (norm.ctx.outlined: outline.outlined),
    passed `values` (its parameters' values in order), as one operation with its gradient
    for a rule; None where it is inlined
    (arguments other than numbers and arrays, a result numba does not type as a float, a
    gradient adjit does not build, an array argument the helper may change)."""
    if not all(_outlinable(norm, v) for v in values):
        return None
    values = [v if _number(norm, v) else _whole_array(norm, v) for v in values]
    descs = []
    for v in values:
        d = number_descriptor(v.value) if isinstance(v, ast.Constant) \
            else norm.calls.described(v, out)[1]
        if d[0] == "array":     # (with its layout where the caller's argument has one)
            d = d + (norm.ctx.layouts.get(v.id, "C"),)
        descs.append(d)
    made = norm.ctx.outlined(helper, norm.ctx.outline_options)
    if not made.fits(descs):
        return None
    call = norm.calls.call_of(made.value, values)
    # (as a call kept as numba's: it may raise where the helper does, so no pass drops it
    # where its value is unread nor moves it out of its loop)
    ir.annotate(call, pure=True)
    return call


def _copy_seen(norm, fn, params, bound, stmts, result):
    """Note an inlined copy of `fn` for adjit/outline.py: its size, where its call passed
    numbers and arrays and it returned a number; a call with an effect in it rules the
    helper out."""
    if norm.ctx.cuda or not all(_outlinable(norm, bound[p]) for p in params) or \
            not _number(norm, result):
        return
    if _has_effect(stmts, norm.ctx.env.ns):
        norm.ctx.not_outlined.add(fn)
        return
    norm.ctx.copies.setdefault(fn, []).append(sum(1 for _ in ir.walk_stmts(stmts)))


def _has_effect(stmts, ns):
    """Whether statements make a call with an effect, but in a block that ends in a raise
    (FinancePy's `print("k:", k)` before `raise FinError(...)`: the call that runs it never
    returns, and the backward sweep never evaluates it again)."""
    for s in ir.walk_stmts(stmts, raising=False):
        part = s.test if isinstance(s, (ast.If, ast.While)) else \
            s.iter if isinstance(s, ast.For) else s
        if any(isinstance(n, ast.Call) and call_effect(n, ns) is not None
               for n in ast.walk(part)):
            return True
    return False


def _falls_back(dispatcher, exc):
    """Whether adjit's error reading the helper `dispatcher` (None: not CPU numba code)
    makes it a call kept as numba's: not for a bug of adjit's (InternalError), nor where
    numba's code and Python's differ (keyword-only parameters, numba issue 5903)."""
    return dispatcher is not None and not isinstance(exc, InternalError) and \
        not getattr(exc, "numba_differs", False)


RECURSION_DEPTH = 2
"""How many copies deep a function that calls itself (directly or through others) is
inlined: the call that would make one more raises RecursionError when it runs."""

RECURSION_COPIES = 16
"""The most copies of one function the unrolling may make (a function calling itself at
several places grows as their number to the power RECURSION_DEPTH): beyond, refused."""


def recursion_chain(stack, *fns):
    """`f -> g -> f`: the functions being inlined and `fns` after them, for messages."""
    return " -> ".join(f.__name__ for f in list(stack) + list(fns))


def _too_deep(norm, node, callee, out):
    """The call of a function that would be its RECURSION_DEPTH + 1-th copy on the stack:
    a raise of RecursionError where the call would run, and a value of the kind the
    function returns (zeros, read only after the raise, which never returns): a number, a
    tuple of as many numbers as its returns write, or nothing. A function that calls itself
    once more on the other side of a branch (FinancePy's `return 1.0 - normcdf(-x)`,
    lets_be_rational's black with -q) never reaches it; a recursion as deep as its data
    does, and says so."""
    fn = callee.fn
    chain = recursion_chain(norm.ctx.stack, fn)
    copies = norm.ctx.recursion_copies
    root = norm.ctx.recursion_roots.get(fn, fn)     # (the outermost call of fn now inlined)
    copies[root] = copies.get(root, 0) + 1
    if copies[root] > RECURSION_COPIES:
        raise norm.error(node, f"recursion ({chain}) at more places than adjit unrolls",
                         f"adjit repeats the body of a function that calls itself "
                         f"{RECURSION_DEPTH} levels deep; this one would need more than "
                         f"{RECURSION_COPIES} copies. Rewrite the recursion as a loop.")
    message = (f"adjit: {fn.__name__} called itself more than {RECURSION_DEPTH} levels deep "
               f"({chain}); adjit differentiates a function that calls itself by repeating "
               f"its body {RECURSION_DEPTH} levels deep. Rewrite the recursion as a loop.")
    raise_ = ast.copy_location(ast.Raise(exc=ast.Call(
        func=ast.Name(id="RecursionError", ctx=ast.Load()),
        args=[ast.Constant(value=message)], keywords=[]), cause=None), node)
    norm.stmt(raise_, out)
    return _stand_in(callee, fn)


def _stand_in(callee, fn):
    """The value of a call of `fn` that raises before it returns (zeros, read only after
    the raise, which never returns), of the kind its returns are written: a number, a
    tuple of as many numbers, or nothing."""
    returns = [r.value for r in ast.walk(callee.tree) if isinstance(r, ast.Return)
               and r.value is not None and
               not (isinstance(r.value, ast.Constant) and r.value.value is None)]
    if not returns:
        return NoResult(fn.__name__)
    sizes = {len(v.elts) for v in returns if isinstance(v, ast.Tuple)}
    if len(sizes) == 1 and all(isinstance(v, ast.Tuple) or _calls(v, fn) for v in returns):
        return TupleValue([ir.const(0)] * sizes.pop())
    return ir.const(0)


def _calls(value, fn):
    """Whether `value` is a call of a function named as `fn` is (`return f(x, n - 1)`)."""
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and \
        value.func.id == fn.__name__


def _numbers(norm, result):
    """Whether a helper's result is numbers (a number, a tuple of them) or nothing."""
    if result is None or isinstance(result, NoResult):
        return True
    if isinstance(result, TupleValue):
        return all(_numbers(norm, e) for e in result.items)
    return isinstance(result, ast.Constant) or \
        isinstance(result, ast.Name) and norm.arrays.array_ndim(result) is None


def _body(norm, node, callee, fn, params, bound, out):
    """The helper's body normalized for its parameters' values `bound`."""
    if callee.fn in norm.ctx.stack and not norm.ctx.cuda and \
            norm.ctx.stack.count(callee.fn) >= RECURSION_DEPTH:
        return _too_deep(norm, node, callee, out)
    # the branches numba prunes for these arguments (None or not) go here too
    callee = pruned_source(callee, {p: isinstance(bound[p], NoneValue) for p in params},
                           lambda p: norm.error(
                               node, f"the optional argument `{p}` of {fn.__name__} left "
                               "out (None) and assigned where it may not be None",
                               f"Assign it only under `if {p} is None:` (a default), or "
                               "pass it."))
    # `if method == "euler":` in the helper, decided for this call
    callee = with_settings(callee, {p: v.value for p, v in bound.items()
                                    if isinstance(v, ast.Constant) and isinstance(v.value, str)})
    prefix = norm.ctx.prefix_for(norm.prefix + callee.fn.__name__)
    reassigned = assigned_user_names(callee.tree.body)
    subst, copies, views = {}, [], {}
    for p in params:
        v = bound[p]
        if isinstance(v, NoneValue) and p in reassigned:
            continue                    # `if w is None: w = ...`: a local from there on
        if isinstance(v, (FunctionValue, TypeOf, NoneValue, DtypeValue, EnumValue)):
            if p in reassigned:     # (called, compared)
                raise norm.error(node, f"a function, an enum member or None passed as "
                                 f"`{p}` to {fn.__name__}, which assigns that parameter "
                                 "again",
                                 "Assign to a new name in the helper.")
            subst[p] = v
            continue
        if isinstance(v, (Shape, TupleValue, RecordValue)):    # (the helper reads it)
            if p in reassigned:
                raise norm.error(node, f"a tuple or record array passed as `{p}` to "
                                 f"{fn.__name__}, which "
                                 "assigns that parameter again", "Assign to a new name "
                                 "in the helper.")
            subst[p] = v
            continue
        if isinstance(v, ast.Name) and norm.arrays.array_ndim(v) is not None and p in reassigned:
            v = norm.arrays.view_of(v.id, out)     # the parameter aliases the caller's array
        if isinstance(v, View):
            subst[p] = prefix + p
            norm.ctx.namegen.reserve(prefix + p)
            views[prefix + p] = v
        elif p in reassigned:
            copies.append(ir.assign(prefix + p, v, norm.origin))
        else:
            subst[p] = v
    out.extend(copies)
    # the callee goes through the same pass
    roots = norm.ctx.recursion_roots
    root = callee.fn not in norm.ctx.stack     # (not inside a call of itself: a new root)
    token = object()
    if root:
        roots[callee.fn] = token
    try:
        stmts, result = norm.ctx.normalize_callee(callee, norm.ctx, prefix, subst, views)
    except AdjitError as exc:
        if roots.get(callee.fn) not in norm.ctx.recursion_copies or \
                isinstance(exc, InternalError) or getattr(exc, "recursion_noted", False):
            raise
        # (the cut call's stand-in value is a number: the likely cause, said first)
        head, construct, _ = split_error(exc)
        chain = recursion_chain(norm.ctx.stack, fn)
        noted = AdjitError(f"{head}recursion ({chain}) cut {RECURSION_DEPTH} levels deep, "
                           "where the cut call stands for a number, a tuple of numbers or "
                           f"nothing as the returns are written, and then {construct}",
                           "adjit repeats a function that calls itself when it returns "
                           "numbers (not arrays); rewrite this one as a loop.")
        noted.recursion_noted = True
        raise noted from None
    finally:
        if root:
            roots.pop(callee.fn)
    if root and token in norm.ctx.recursion_copies and not _numbers(norm, result):
        chain = recursion_chain(norm.ctx.stack, fn, fn)
        raise norm.error(node, f"recursion ({chain}) of a function returning arrays",
                         "adjit repeats a function that calls itself when it returns "
                         "numbers or tuples of them; rewrite this one as a loop.")
    if root:
        _copy_seen(norm, callee.fn, params, bound, stmts, result)
    out.extend(stmts)
    norm.loads = {}
    if result is None and stmts and always_returns(stmts) and \
            not any(isinstance(x, ast.Return) for x in ir.walk_stmts(stmts)):
        # a helper that raises before any return for these arguments (FinancePy's
        # bs_value(..., -1), whose option-type test falls through to `raise`): its call
        # ends the caller's statement and block (_Normalizer.block)
        raise NeverReturns(fn.__name__)
    if result is None:
        return NoResult(fn.__name__)
    return result
