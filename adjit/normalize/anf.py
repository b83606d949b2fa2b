"""A-normal form: one primitive operation per assignment.

The output is still valid, runnable Python (tests run it against the original). This module
walks statements and expressions; what it meets is handed to the module with that one job:
numpy calls and array methods to numpy_calls.py (by what the registry says), array
expressions to vectorize.py (lowered to loops), indexing to views.py, names bound to views to
bindings.py, calls to the user's own functions to inline.py. Returns, `break` and `continue`
survive as statements; exits.py turns them into flags afterwards.
"""
import ast
import contextlib
import copy
import types

import numba
import numpy as np

from .. import ir
from ..errors import AdjitError, error_at
from ..frontend.source import (MISSING, FunctionSource, assigned_names,
                               compiled_entry_dispatcher, gufunc_kernel, numba_implementation,
                               read_function, ufunc_kernel, unwrap)
from ..runtime import special, vec
from ..rules.effects import is_draw
from ..rules.registry import REGISTRY, Refused
from ..rules.table import (ALLOCATORS, ARRAY_FUNCTIONS, ARRAY_OPS, ARRAY_QUERIES, ARRAY_RULES,
                           CONST_ARRAYS, DECLARED_ALLOCATORS, ELEMENTWISE, NEW_ARRAY_CALLS,
                           INACTIVE, INT_ALLOCATORS, MESSAGES, METHOD_FUNCTIONS,
                           METHOD_REDUCTIONS, attached_rule, ensure_entries, rule_for_call)

from . import appends, carried, closures, comprehensions, objmode, record_arrays, sugar, \
    swaps
from . import (einsum, lower_constructors, lower_diagonals, lower_kept,  # noqa: F401 - they
               lower_linalg, lower_scans, lower_shapes,  # register the lowerings of numpy
               lower_statistics)  # functions
from .appends import APPENDED
from . import bindings, joins
from .bindings import _At, _Binding
from .check import check_bound_before_read, check_dead_draws, check_supported
from .exits import always_returns, lower_exits
from .gufuncs import gufunc_call
from . import inline as inlining
from .prune import fold
from .lowering import missing
from .messages import message_call
from .stencils import stencil_call, stencil_kernel
from .names import lookup
from .numpy_calls import ARRAY_METHODS, NumpyCalls
from .values import (Copied, DtypeValue, EnumValue, FunctionValue, NoneValue, NoResult,
                     RecordValue, Shape, TupleValue, TypeOf, assigned_user_names,
                     dtype_constant, enum_member, plain_enum)
from .vectorize import ONE, Lazy, Op, Scalar, View, Vectorizer, _index_node
from .views import Indexer, has_take, lazy_reads

_RESERVED = {"math", "np", "numba", "stop_gradient"}

# every handler of the registry (whole-array functions, elementwise functions' other forms)
# has its lowering (normalize/lowering.py)
_HANDLERS = {e.handler for e in REGISTRY.family("array", "elementwise") if e.handler}
if missing(_HANDLERS):
    raise ImportError(f"registry handlers with no lowering: {', '.join(missing(_HANDLERS))}")


def _may_write(node):
    """Whether an AST node may write an array: a store into a subscript, an augmented
    assignment (`a += ...` is in place for an array), or a call of anything but a numpy or
    math function (a helper may write the arrays it is given)."""
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
        return True
    if isinstance(node, ast.AugAssign):
        return True
    if isinstance(node, ast.Call):
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr in _READING_METHODS:
            return False
        while isinstance(f, ast.Attribute):
            f = f.value
        return not (isinstance(f, ast.Name) and (f.id in ("np", "numpy", "math")
                                                 or f.id in _PURE_BUILTINS))
    return False


# methods that only read their array: those adjit lowers, and some it refuses
_READING_METHODS = ARRAY_METHODS | {"astype", "round", "item", "trace", "diagonal", "nonzero"}
_PURE_BUILTINS = frozenset((
    "range", "len", "float", "int", "bool", "abs", "min", "max", "round", "pow", "divmod",
    "enumerate", "zip", "reversed", "stop_gradient"))


def _holds_view(items):
    """Whether a returned tuple's items hold an array (a View), in a tuple inside it too."""
    return any(isinstance(e, View) or (isinstance(e, TupleValue) and _holds_view(e.items))
               for e in items)


def _is_copy_call(value):
    """Whether an expression is `a.copy()` of a name."""
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
        value.func.attr == "copy" and isinstance(value.func.value, ast.Name) and \
        not value.args and not value.keywords


_ARRAY_ATTRIBUTES = ("shape", "T", "size", "ndim", "dtype", "real", "imag", "flat", "flags",
                     "itemsize", "nbytes", "strides")
"""Attributes a call's array result may be asked for (read as the array's, not a field)."""


def _named_numbers(names, fields):
    """The TupleValue of the names a helper's returns assign (Normalizer.names_like)."""
    return TupleValue([_named_numbers(*n) if isinstance(n, tuple) else ir.name(n)
                       for n in names], fields)


class InlineContext:
    """State shared by a function and every function inlined into it."""

    def __init__(self, namegen, env, arrays=None, ints=(), layouts=None):
        self.namegen = namegen
        self.env = env
        self.ints = set(ints)               # names known to hold integers (for dtypes here)
        self.bools = set()                  # names known to hold booleans (for opaque calls)
        self.layouts = dict(layouts or {})  # numba layouts of argument arrays: "C", "F", "A"
        self.typed_args = False             # whether the arguments' types are known
        self.kernel = False                 # a CUDA kernel: a bare `return` ends the thread
        self.cuda = False                   # CUDA code (a kernel or a device function)
        self.blas_products = True           # matrix-vector products may call BLAS
        self.dtypes = {}                    # argument arrays' numpy dtypes (for x.dtype)
        self.int_enums = set()              # arguments given an IntEnum's member (its int)
        self.lists = set()                  # arrays made of a list written out ([a, b])
        self.user_names = set()             # user variables of every inlined function
        self.serial = 0                     # numbers the bindings of names to views
        # array variables: name -> (ndim, dtype), dtype "f", "i", "b" or "?" (not known here:
        # analysis/types.py infers it exactly)
        self.arrays = dict(arrays or {})
        self.vec_temps = _Temps()           # arrays the vectorizer allocated
        self.globals = {}                   # module-level arrays: spelled name -> user's name
        self.loop_depth = 0                 # user loops around the statement being lowered
        self.before_loops = None            # in loops: the arrays bound before them
        self.prange_depth = 0               # numba.prange loops around it
        self.stack = []
        self.prefix_counts = {}
        # inline._too_deep's calls cut, by the outermost inlined call of their function
        # (recursion_roots: function -> a token for that call, while it is inlined)
        self.recursion_copies = {}
        self.recursion_roots = {}
        # (arrays no statement may write, the join after which, the name, origin): views
        # copied where paths join (joins.py)
        self.frozen = []
        # ids of the statements that store a new array into the array of a name rebound in
        # place (assign_in_place): in Python, a binding to a new array, not a write
        self.rebound = set()
        # @njit helpers adjit could not read, by (helper, call site): the error it raised;
        # called as numba's there (normalize/inline.py: Unread)
        self.unread = {}
        # helpers called as one operation with a gradient of their own (adjit/outline.py),
        # the gradient options they get, and what the inliner saw of the others: the sizes of
        # each helper's copies whose calls passed numbers, the helpers a copy of which makes
        # a call with an effect
        self.outline = frozenset()
        self.outline_options = None
        self.outlined = None                # outline.outlined, given by the pipeline
        self.copies = {}
        self.not_outlined = set()

    @staticmethod
    def normalize_callee(src, ctx, prefix, subst, views):
        """A helper's body, normalized by the same pass (normalize_function): the inliner
        (inline.py) calls it here, so that it need not import this module."""
        return normalize_function(src, ctx, prefix, subst, views)

    def prefix_for(self, fname):
        k = self.prefix_counts.get(fname, 0) + 1
        self.prefix_counts[fname] = k
        return f"{fname}_" if k == 1 else f"{fname}{k}_"


def _array_kind(ctx, subst, views):
    """name -> the kind ("f", "i", "b") of the 1-D array a parameter of the function being
    normalized holds where the caller knows it (an argument's type, the caller's array a
    helper's parameter is bound to), else None."""
    def kind(name):
        if views and name in views:
            return None
        if subst and name in subst:
            bound = subst[name]
            if not isinstance(bound, ast.Name):
                return None
            name = bound.id
        entry = ctx.arrays.get(name)
        return entry[1] if entry is not None and entry[0] == 1 else None
    return kind


def normalize_function(src, ctx, prefix="", subst=None, views=None):
    """Normalize `src`'s body. Returns (statements, result atom or None). `views` binds
    local names to Views (a helper's parameters that alias the caller's arrays)."""
    check_dead_draws(src)       # (on the function as written: its closures, as numba sees it)
    check_bound_before_read(src, subst)
    src = sugar.read_only_declarations(src, src.with_tree)
    src = closures.lift(src, src.with_tree, FunctionSource)
    src = objmode.lift(src, src.with_tree)
    src = sugar.list_operations(src, src.with_tree)
    src = comprehensions.tuples_as_appends(src, src.with_tree)
    src = appends.desugar(src, src.with_tree)
    src = comprehensions.desugar(src, src.with_tree, _array_kind(ctx, subst, views))
    src = sugar.membership(src, src.with_tree)
    src = sugar.self_assignments(src, src.with_tree)
    src = sugar.loop_else(src, src.with_tree)
    src = sugar.chosen_values(src, src.with_tree)
    src = sugar.bitwise_operators(src, src.with_tree)
    src = sugar.raised_messages(src, src.with_tree)
    src = sugar.held_ranges(src, src.with_tree)
    src = carried.carried_tuples(src, src.with_tree)
    src, subst = record_arrays.rewrite(src, subst or {})
    check_supported(src.tree, src.loc)
    if src.fn in ctx.stack and ctx.cuda:
        # (elsewhere the inliner repeats a function that calls itself a few levels deep:
        # inline.RECURSION_DEPTH)
        chain = inlining.recursion_chain(ctx.stack, src.fn)
        raise src.loc.error(src.tree, f"recursion ({chain}) in CUDA code is not supported",
                            "Rewrite the recursion as a loop.")
    ctx.stack.append(src.fn)
    try:
        norm = _Normalizer(src, ctx, prefix, subst or {}, views or {})
        body = norm.block(src.tree.body, top=True)
        # (counted before lower_exits, which turns early returns into flags)
        returns = [x for x in ir.walk_stmts(body) if isinstance(x, ast.Return)]
        if returns and len(norm.returned_nothing) == len(returns) and \
                not always_returns(body):
            # a helper called for its effect that leaves early (`if n == 0: return`) and
            # otherwise runs to its end: returning there too is what Python does
            end = ast.Return(value=ir.const(0), lineno=returns[-1].lineno)
            body.append(ir.annotate(end, origin=ir.note(returns[-1], "origin", None)))
            returns.append(end)
            norm.returned_nothing.append(end)
        last = body[-1] if body else None
        merged = None
        if (len(returns) > 1 or (returns and last is not returns[0])) and \
                not norm.returned_views and norm.returned_numbers is None:
            body, merged = _returned_arrays(norm, body, returns)
        stmts, result = lower_exits(body, ctx.namegen, src.loc)
        if norm.returned_nothing:
            if len(norm.returned_nothing) != len(returns):
                raise src.loc.error(norm.returned_nothing[0], "a helper returning nothing "
                                    "(None) from one return and a value from another",
                                    "Return a value from every return.")
            result = None       # its call's value is None too (inline.py: NoResult)
        if merged is not None:
            ctx.ints.add(result.id)
            result = _merge_returned_arrays(norm, stmts, result, merged)
        if norm.returned_mixed is not None:
            return stmts, _copy_tuple_arrays(norm, src, stmts, result)
        if norm.returned_numbers is not None:
            if norm.returned_views:
                raise src.loc.error(norm.returned_views[0][0], "a helper returning arrays "
                                    "from one return and only numbers from another",
                                    "Return the same kinds of values from every return.")
            written = [n for n in ir.walk(src.tree) if isinstance(n, ast.Return)]
            if norm.tuple_returns != len(written):
                raise src.loc.error(norm.returned_numbers[0], "a helper returning a tuple "
                                    "from one return and something else from another",
                                    "Return a tuple of as many values from every return.")
            return stmts, _named_numbers(norm.returned_numbers[1], norm.returned_numbers[2])
        if norm.returned_views:
            if len(returns) != 1 or last is not returns[0]:
                raise src.loc.error(norm.returned_views[0][0], "a helper that returns an "
                                    "array or a view from one of several `return`s",
                                    "Return it once, at the end of the helper, or return a "
                                    "copy (return a[1:].copy()).")
            return stmts, norm.returned_views[0][1]
        return stmts, result
    finally:
        ctx.stack.pop()


def _unpacked_statements(tgt, name, at):
    """`x, y, z = u` of the array named `name` as numba runs it: its length checked
    (ValueError), then `x, y, z = u[0], u[1], u[2]` (statements at `at`'s line)."""
    n = len(tgt.elts)
    where = {"lineno": at.lineno, "col_offset": at.col_offset}

    def read(k):
        return ast.Subscript(value=ast.Name(id=name, ctx=ast.Load(), **where),
                             slice=ast.Constant(value=k, **where), ctx=ast.Load(), **where)
    check = ast.If(
        test=ast.Compare(left=ast.Subscript(
            value=ast.Attribute(value=ast.Name(id=name, ctx=ast.Load(), **where),
                                attr="shape", ctx=ast.Load(), **where),
            slice=ast.Constant(value=0, **where), ctx=ast.Load(), **where),
            ops=[ast.NotEq()], comparators=[ast.Constant(value=n, **where)], **where),
        body=[ast.Raise(exc=ast.Call(
            func=ast.Name(id="ValueError", ctx=ast.Load(), **where),
            args=[ast.Constant(value=f"cannot unpack an array whose length is not {n}",
                               **where)], keywords=[], **where), cause=None, **where)],
        orelse=[], **where)
    assign = ast.Assign(targets=[tgt], value=ast.Tuple(
        elts=[read(k) for k in range(n)], ctx=ast.Load(), **where), **where)
    return [check, assign]


def _count_returns(stmts):
    """How many `return` statements a function body has (nested functions' not counted)."""
    count = 0
    for s in stmts:
        if isinstance(s, ast.Return):
            count += 1
        elif not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            count += sum(_count_returns(getattr(s, f, [])) for f in
                         ("body", "orelse", "finalbody", "handlers"))
    return count


def _binds_anything(stmts):
    """Whether source statements bind or write anything (an assignment, a loop, a `with`)."""
    return any(isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.NamedExpr,
                              ast.For, ast.While, ast.With))
               for s in stmts for n in ast.walk(s))


def _made_by(stmts, name):
    """Whether `stmts` (those a `return`'s expression became) make `name` a new array: an
    assignment of a call's result to it (an allocation, a matrix product, np.cross)."""
    return any(isinstance(x, ast.Assign) and not ir.is_store(x) and
               ir.target_name(x) == name and isinstance(x.value, ast.Call)
               for x in ir.walk_stmts(stmts))


def _returned_arrays(norm, body, returns):
    """Several `return`s that return arrays (`if c: return X * a` / `else: return X + b`,
    each a new array): numba gives the call one array either way, adjit needs one name for
    one array. Each `return` keeps its own array, records its shape and returns its number
    instead; _merge_returned_arrays then copies the one taken into the call's result.
    Returns (the body, (arrays, shape names, dtype)), or (body, None) without arrays."""
    infos = [norm.ctx.arrays.get(r.value.id) if isinstance(r.value, ast.Name) else None
             for r in returns]
    known = [i for i in infos if i is not None]
    if not known:
        return body, None
    ndims = {i[0] for i in known}
    if len(known) != len(infos) or len(ndims) != 1:
        first = returns[infos.index(None)] if None in infos else returns[0]
        raise norm.error(first, "a function returning an array from one `return` and a "
                         "number or an array of another rank from another",
                         "Return values of the same kind from every return (np.full(shape, "
                         "v) for a constant array).")
    dtypes = {i[1] for i in known}
    if len(dtypes) != 1 or "?" in dtypes:
        raise norm.error(returns[0], "a function returning arrays whose dtype is not known "
                         "from several `return`s", "Return float arrays (x.astype(np.float64))"
                         " or assign the result to one variable and return it once, at the "
                         "end.")
    shape = [norm.fresh("_rs") for _ in range(ndims.pop())]
    norm.ctx.ints.update(shape)
    number = {id(r): k for k, r in enumerate(returns)}

    def rewrite(block):
        new = []
        for x in block:
            if not (isinstance(x, ast.Return) and id(x) in number):
                new.append(x)
                continue
            origin = ir.note(x, "origin", None)
            new.extend(joins.shape_and_number(norm, x.value.id, shape, None, None, origin))
            ret = ast.Return(value=ir.const(number[id(x)]), lineno=x.lineno)
            ir.annotate(ret, origin=origin)
            new.append(ret)
        return new

    arrays = [r.value.id for r in returns]
    # each made on its return's path, read by the copy after the body only where that
    # return was taken: not carried from one iteration of a loop around the call to the next
    # (bound in the helper's body, so by the call that returns it: a name a path returns
    # without binding it would be Python's UnboundLocalError)
    bound = ir.assigned(body)
    norm.ctx.vec_temps.joined.update(a for a in arrays if a in bound and
                                     a not in norm.arrays_before)
    return ir.rewrite_blocks(body, rewrite), (arrays, shape, dtypes.pop(), returns[0])


def _merge_returned_arrays(norm, stmts, which, merged):
    """After the body: `result = np.empty(shape)`, then `result[...] = array k` for the
    return k that was taken (its number is in `which`). Returns the result's name."""
    arrays, shape, dtype, first = merged
    return ir.name(joins.copy_taken(norm, stmts, which, arrays, shape, dtype,
                                    ir.note(first, "origin", None)))


def _copy_tuple_arrays(norm, src, stmts, which):
    """The TupleValue a helper's several returns of tuples with arrays give its call: the
    names every return assigned its numbers to, and for each array element a new array
    copied from the array of the return taken (its number in `which`)."""
    slots, returns, arrays, dtypes = norm.returned_mixed
    written = [n for n in ir.walk(src.tree) if isinstance(n, ast.Return)]
    if norm.returned_views:
        # (`return 0.0, y` beside `return d, best_y`: aeon's shift-scale distance)
        raise src.loc.error(norm.returned_views[0][0], "a helper returning, from one of "
                            "several returns, an array it was given (or a view of one) in "
                            "a tuple: numba's caller gets that array itself",
                            "Return a copy there (return 0.0, y.copy()), as the other "
                            "returns give new arrays.")
    if len(returns) != len(written) or norm.returned_views or \
            norm.returned_numbers is not None:
        raise src.loc.error(returns[0], "a helper returning a tuple with arrays from one "
                            "return and something else from another",
                            "Return a tuple of as many values, of the same kinds, from every "
                            "return.")
    norm.ctx.ints.add(which.id)
    items = []
    for k, (number, shape) in enumerate(slots):
        if shape is None:
            items.append(ir.name(number))
            continue
        kind, declared = dtypes[k]
        name = joins.copy_taken(norm, stmts, which, arrays[k], shape, kind,
                                ir.note(returns[0], "origin", None))
        if declared is not None:        # (a float32 array: numba returns one)
            made = next(x for x in stmts if isinstance(x, ast.Assign) and
                        ir.target_name(x) == name)
            made.value = norm.arrays.vcall(DECLARED_ALLOCATORS[np.empty, declared],
                                           made.value.args)
            norm.ctx.dtypes[name] = declared
        items.append(ir.name(name))
    return TupleValue(items, None)


def _rebinding_targets(stmts):
    """Names assigned with `name = ...` or `a, b = ...` anywhere in a loop body."""
    for s in stmts:
        if isinstance(s, ast.Assign):
            for t in s.targets:
                for e in (t.elts if isinstance(t, ast.Tuple) else [t]):
                    if isinstance(e, ast.Name):
                        yield e
        for field in ("body", "orelse"):
            if isinstance(s, (ast.If, ast.For, ast.While)):
                yield from _rebinding_targets(getattr(s, field))


def _rebound_to_views(stmts, results=frozenset()):
    """Names a loop body binds to a part of another array or another name (`v = x[i:i + 2]`,
    `v = a.T`, `v = w`): views and aliases, not new arrays. An element of a helper's tuple
    result (`r = step(y); y = r[0]`, `results` the names holding one) is not one: it is
    what `y, e = step(y)` binds."""
    out = set()
    for s in stmts:
        if isinstance(s, ast.Assign) and isinstance(s.value, (ast.Subscript, ast.Attribute)) \
                and isinstance(s.value.value, ast.Name) and s.value.value.id in results and \
                (isinstance(s.value, ast.Attribute) or isinstance(s.value.slice, ast.Constant)):
            continue        # (`y = r[0]`, `y = trial.y`: an element of a helper's tuple)
        if isinstance(s, ast.Assign) and isinstance(s.value, (ast.Subscript, ast.Attribute,
                                                              ast.Name)):
            out |= {t.id for t in s.targets if isinstance(t, ast.Name)}
        for field in ("body", "orelse"):
            if isinstance(s, (ast.If, ast.For, ast.While)):
                out |= _rebound_to_views(getattr(s, field), results)
    return out


def _makes_tuple(src, value):
    """Whether `value`, an expression of the function `src`, is a tuple written out or a
    named tuple's constructor."""
    return isinstance(value, ast.Tuple) or isinstance(value, ast.Call) and \
        carried.named_tuple(src.resolve(value.func)) is not None


def _other_names_for(body, names, handover):
    """Whether the loop body binds another name to (part of) one of `names` (`w = un`,
    `row = u[0]`, `t = u.T`) anywhere but in `handover` itself and in the same hand-over
    written again (`if converged: x = xn; break` before the step's own `x = xn`)."""
    for x in ir.walk_stmts(body):
        if x is handover or not isinstance(x, ast.Assign) or \
                not any(isinstance(t, (ast.Name, ast.Tuple)) for t in x.targets):
            continue        # (an element store `a[i] = u[0]` makes no name)
        if _is_name_assign(x) and x.targets[0].id == handover.targets[0].id and \
                x.value.id == handover.value.id:
            continue
        for part in x.value.elts if isinstance(x.value, ast.Tuple) else [x.value]:
            base = part
            while isinstance(base, (ast.Subscript, ast.Attribute)):
                base = base.value
            if isinstance(base, ast.Name) and base.id in names and \
                    isinstance(part, (ast.Name, ast.Subscript, ast.Attribute)):
                return True
    return False


def _copy_call(name, where):
    """`name.copy()`, located at `where`."""
    return ast.copy_location(ast.Call(func=ast.Attribute(
        value=ast.Name(id=name, ctx=ast.Load()), attr="copy", ctx=ast.Load()),
        args=[], keywords=[]), where)


def _is_name_assign(s):
    """`a = b` of two names."""
    return isinstance(s, ast.Assign) and len(s.targets) == 1 and \
        isinstance(s.targets[0], ast.Name) and isinstance(s.value, ast.Name)


def _binds(stmts, name):
    """Whether the statements (nested ones included) bind `name` (`name = ...`)."""
    return any(t.id == name for t in _rebinding_targets(stmts))


def _names_in(stmts):
    return {n.id for s in stmts for n in ir.walk(s) if isinstance(n, ast.Name)}


_FRESH_FAMILIES = ("operator", "scalar", "elementwise", "reduction", "allocate")
_SIZES = ("shape", "size", "ndim", "dtype")


def _only_read(stmts, names, src, functions):
    """Whether `stmts` only read the arrays the user names `names` hold: no store into
    them (_written_in), no other name for them or a part of them (`v = u`, `row = u[0]`,
    `for row in u`, a view a numpy function or method may return), and no call they are
    passed to but numpy's and math's functions that make new values (the registry's
    families of elementwise functions, reductions and allocations) and reducing methods."""
    if _written_in(stmts, names, src, 0, functions):
        return False

    def root(e):
        while isinstance(e, (ast.Subscript, ast.Attribute, ast.Starred)):
            e = e.value
        return e.id if isinstance(e, ast.Name) else None

    def names_it(e):        # the array itself or a part of it, as a value (not its shape)
        return isinstance(e, (ast.Name, ast.Subscript, ast.Attribute, ast.Starred)) and \
            root(e) in names and not any(isinstance(x, ast.Attribute) and x.attr in _SIZES
                                         for x in ast.walk(e))

    for node in (x for s in stmts for x in ir.walk(s)):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return)) and \
                node.value is not None:
            values = node.value.elts if isinstance(node.value, (ast.Tuple, ast.List)) \
                else [node.value]
            if not isinstance(node, ast.Return) and any(names_it(v) for v in values):
                return False
        elif isinstance(node, (ast.For, ast.comprehension)) and names_it(node.iter):
            return False
        elif isinstance(node, (ast.Lambda, ast.FunctionDef, ast.With)):
            return False
        elif isinstance(node, ast.Call):
            passed = [a for a in node.args + [k.value for k in node.keywords] if names_it(a)]
            func = node.func
            if isinstance(func, ast.Attribute) and names_it(func.value):
                if func.attr in METHOD_REDUCTIONS or func.attr == "copy":
                    continue
                target = METHOD_FUNCTIONS.get(func.attr)
                entry = REGISTRY.get(target) if target is not None else None
                if entry is None or entry.family not in _FRESH_FAMILIES:
                    return False
            if passed:
                obj = functions.get(func.id) if isinstance(func, ast.Name) and \
                    func.id in functions else src.resolve(func)
                if obj is len or carried.named_tuple(obj) is not None:
                    continue        # (a named tuple holds them as a tuple written out does)
                entry = REGISTRY.get(obj)
                if entry is None or entry.family not in _FRESH_FAMILIES:
                    return False
    return True


def _written_in(stmts, names, src, depth=0, functions=None):
    """Whether `stmts` (of function `src`) write into one of `names`: `name[...] = `,
    `name op= `, or a call of a user function whose parameter receiving it it writes (read
    from that function's source, a few calls deep); any other call than numpy's or math's
    might. `functions`: names in `src` that hold a function (`e = math.exp`, a parameter
    given one) and the function each holds."""
    functions = functions or {}

    def resolve(node, local=False):
        if isinstance(node, ast.Name) and node.id in functions:
            return functions[node.id]
        if local and isinstance(node, ast.Name) and node.id in getattr(src, "locals", ()):
            return MISSING
        return src.resolve(node)

    for node in (n for s in stmts for n in ir.walk(s)):
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                written = isinstance(node, ast.AugAssign) or isinstance(t, ast.Subscript)
                while isinstance(t, ast.Subscript):
                    t = t.value
                if written and isinstance(t, ast.Name) and t.id in names:
                    return True
        if isinstance(node, ast.Call):
            func = ast.unparse(node.func)
            if func.startswith(("np.", "numpy.", "math.")) or func in (
                    "len", "range", "min", "max", "abs", "float", "int"):
                continue
            passed = [k for k, a in enumerate(node.args)
                      if isinstance(a, ast.Name) and a.id in names]
            if any(isinstance(k.value, ast.Name) and k.value.id in names
                   for k in node.keywords):
                return True
            if not passed:
                continue
            if stencil_kernel(resolve(node.func)) is not None:
                continue            # a stencil writes only its output (out=: above)
            if carried.named_tuple(resolve(node.func)) is not None:
                continue            # (a named tuple holds them as a tuple written out does)
            try:
                callee = read_function(resolve(node.func))
            except Exception:       # not a function adjit can read: it might write
                return True
            params = {callee.params[k] for k in passed if k < len(callee.params)}
            given = {}              # the callee's parameters given functions
            for k, a in enumerate(node.args[:len(callee.params)]):
                if isinstance(a, (ast.Name, ast.Attribute)):
                    obj = resolve(a, local=True)
                    if obj is not MISSING and callable(obj) and not isinstance(obj, type):
                        given[callee.params[k]] = obj
            if depth > 3 or len(params) < len(passed) or \
                    _written_in(callee.tree.body, params, callee, depth + 1, given):
                return True
    return False


def _is_size(node):
    """`len(a)` or `a.shape[k]`: an integer a loop bound may be."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and
            node.func.id == "len") or \
        (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and
         node.value.attr == "shape")


_THREAD_INDICES = ("threadIdx", "blockIdx", "blockDim", "gridDim")


def _cuda_attribute(part, axis):
    """`cuda.threadIdx.x` (blockIdx, blockDim, gridDim; x, y, z) as generated code spells it."""
    return ast.Attribute(value=ast.Attribute(value=ir.name("cuda"), attr=part, ctx=ast.Load()),
                         attr=axis, ctx=ast.Load())


def _store_counts(tree):
    """How often each name is assigned in a function's body (loop targets and augmented
    assignments count; a name assigned in a loop once counts once), and the names assigned
    only by statements of the body itself (not in a loop, branch or with block)."""
    counts, nested = {}, set()
    for node in ir.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            counts[node.id] = counts.get(node.id, 0) + 1
    for stmt in tree.body:
        if isinstance(stmt, (ast.For, ast.While, ast.If, ast.With, ast.Try)):
            nested.update(n.id for n in ir.walk(stmt) if isinstance(n, ast.Name) and
                          isinstance(n.ctx, (ast.Store, ast.Del)))
    return counts, set(counts) - nested


class _Normalizer:
    def __init__(self, src, ctx, prefix, subst, views):
        # its parts: array expressions as loops, index maps, numpy calls
        self.arrays = Vectorizer(self)
        self.indexing = Indexer(self)
        self.calls = NumpyCalls(self)
        self.src = src
        self.loc = src.loc
        self.ctx = ctx
        self.prefix = prefix
        self.subst = subst
        self.origin = None
        self.rebound_params = set()     # arguments the body has bound to something else
        self.loads = {}
        self.shape_cache = {}
        self.stopped = 0
        self.lazy = {}                      # name -> Lazy kept unevaluated (or its array)
        # names that may stay unevaluated; of those, the ones no helper receives (their
        # elements are stored once, when they are computed)
        self.lazy_ok, self.lazy_once, self.lazy_relays = _lazy_candidates(src)
        for local in sorted(src.locals):
            if local not in subst:
                ctx.namegen.reserve(self.local(local))
                ctx.user_names.add(self.local(local))
        self.returned_views = []            # (return statement, View) of an inlined helper
        self.arrays_before = set(ctx.arrays)    # the arrays made before this function's body
        self.several_returns = len(self.ctx.stack) > 1 and _count_returns(src.tree.body) > 1
        self.previous = None                # the statement before the one being normalized
        self.returned_numbers = None        # (first return, names, named fields) of a helper
        # returning tuples of numbers (from one or several returns), and how many returns did
        self.tuple_returns = 0
        # (slots: (number name, None) or (None, shape names) per element, the returns, each
        # array element's arrays by return, their dtypes) of a helper returning tuples with
        # arrays from several returns (tuple_with_arrays)
        self.returned_mixed = None
        self.returned_nothing = []     # `return h(a)` of a helper h that returns nothing
        self.tuples = {}                    # local name -> the TupleValue or Shape it holds
        self.held = {}                      # local name -> the TypeOf or FunctionValue it holds
        # user name -> how often it is assigned; names assigned only outside blocks
        self.stores, self.straight = _store_counts(src.tree)
        self.views = {}                     # local name -> _Binding or _Unknown
        self.statement_call = None          # the call of an expression statement being read
        self.in_place = set()               # array names a loop rebinds, updated in place
        self.in_place_names = {}            # an owned copy made for that -> the user's name
        self.view_uses = []                 # (name, serial) of every read of a binding
        # (serial -1: of a name not bound to a view)
        for name, view in views.items():
            self.views[name] = bindings.new_binding(self, view)

    # names ---------------------------------------------------------------
    def local(self, id_):
        if id_ in self.subst:
            return self.subst[id_]
        out = self.prefix + id_
        return out + "_" if out in _RESERVED else out

    def fresh(self, stem="_t"):
        return self.ctx.namegen.fresh(stem)

    def fresh_local(self, stem):
        """A new name treated as a local variable of the user's function."""
        name = self.fresh(stem)
        self.src.locals.add(name)
        return name

    def emit_assign(self, out, target, value):
        """Append an assignment; forget cached loads it may invalidate."""
        if isinstance(target, str):
            if self.lazy:
                # pending arrays that read what this name held are computed first (`y = x *
                # 2.0; x = np.zeros(3)`: y is the old x's, as numpy computed it)
                self.arrays.flush_lazy(out, target)
            if target in self.src.params:
                self.rebound_params.add(target)
            if self.views:
                bindings.rebinding(self, target, out)
            self.loads = {k: v for k, v in self.loads.items() if target not in v[2]}
            self.track_array(target, value)
            self.ctx.lists.discard(target)      # (bound to another value: holds_list)
            if self.is_int(value):
                self.ctx.ints.add(target)
            else:
                self.ctx.ints.discard(target)
            if self.is_bool(value):
                self.ctx.bools.add(target)
            else:
                self.ctx.bools.discard(target)
        else:
            if self.lazy:
                self.arrays.flush_lazy(out, target.value.id)
            self.loads = {k: v for k, v in self.loads.items() if k[0] != target.value.id}
        out.append(ir.assign(target, value, self.origin))

    def track_array(self, target, value):
        """Record whether `target` now holds an array (and of what dimension)."""
        info = self.array_info(value)
        if info is None:
            self.ctx.arrays.pop(target, None)
        else:
            self.ctx.arrays[target] = info
        if target not in self.src.params:     # (a local float32 array: its sums are too)
            func = value.func if isinstance(value, ast.Call) else None
            if isinstance(func, ast.Attribute) and func.attr == "copy" and \
                    isinstance(func.value, ast.Name) and func.value.id in self.ctx.dtypes:
                self.ctx.dtypes[target] = self.ctx.dtypes[func.value.id]
            elif func is not None and (dtype := self.allocated_dtype(value, info)) is not None:
                self.ctx.dtypes[target] = dtype
            else:
                self.ctx.dtypes.pop(target, None)

    def allocated_dtype(self, value, info):
        """The numpy dtype of the array a call of generated code makes (`info`: its
        array_info), where it is known here: the user's allocations with a dtype
        (vec.zeros_float32, vec.empty_int32); adjit's integer and boolean ones, numpy's
        integer results (np.flatnonzero) and those of calls with no rule, as rules/opaque.py
        types them: int64 and bool."""
        obj = self.resolve_generated(value.func)
        for (_, dtype), allocator in DECLARED_ALLOCATORS.items():
            if obj is allocator:
                return dtype
        if info is None or info[1] not in ("i", "b"):
            return None
        if obj in INT_ALLOCATORS or ir.note(value, "opaque", None) is not None or \
                (obj in INACTIVE and info[1] == "i"):
            return np.dtype(np.int64 if info[1] == "i" else np.bool_)
        return None

    def makes_array(self, value):
        """Whether a normalized right-hand side is a call that makes a new array (never a
        view of another): a copy, an allocation, np.arange, an array operation (a product,
        np.cross, a solve), as array_info knows them, a random draw of a size."""
        if not isinstance(value, ast.Call):
            return False
        func = value.func
        if isinstance(func, ast.Attribute) and func.attr == "copy" and \
                isinstance(func.value, ast.Name):
            return True
        obj = self.resolve_generated(func)
        return obj in ALLOCATORS or obj in CONST_ARRAYS or obj in INT_ALLOCATORS or \
            obj is np.arange or obj in ARRAY_OPS or \
            is_draw(obj)    # (assigned to an array: a draw of a size)

    def integer_atom(self, a):
        """Whether the atom `a` is an integer: an int constant or a name holding one (the
        bounds of an np.arange of integers)."""
        return isinstance(a, ast.Constant) and type(a.value) is int or \
            isinstance(a, ast.Name) and a.id in self.ctx.ints

    def array_info(self, value):
        """(rank, dtype) of the array a normalized right-hand side holds, or None."""
        info = None
        if isinstance(value, ast.Name):
            info = self.ctx.arrays.get(value.id)
        elif isinstance(value, ast.Call):
            func = value.func
            if isinstance(func, ast.Attribute) and func.attr == "copy" and \
                    isinstance(func.value, ast.Name):
                info = self.ctx.arrays.get(func.value.id)
            else:
                obj = self.resolve_generated(func)
                if obj in ALLOCATORS and ALLOCATORS[obj] == "like":
                    # np.zeros_like(idx): numba's array of idx's dtype
                    like = value.args[0]
                    info = (_alloc_ndim(value, obj, self.ctx.arrays),
                            self.ctx.arrays.get(like.id, (0, "f"))[1]
                            if isinstance(like, ast.Name) else "f")
                elif obj in ALLOCATORS or obj in CONST_ARRAYS:
                    info = (_alloc_ndim(value, obj, self.ctx.arrays), "f")
                elif obj in INT_ALLOCATORS:     # the user's integer and boolean arrays
                    info = (_alloc_ndim(value, obj, self.ctx.arrays), INT_ALLOCATORS[obj])
                elif obj is np.arange:
                    floats = any(isinstance(a, ast.Constant) and isinstance(a.value, float)
                                 for a in value.args)
                    ints = all(self.integer_atom(a) for a in value.args)
                    info = (1, "f" if floats else "i" if ints and value.args else "?")
                elif obj in ARRAY_OPS:
                    try:
                        info = ARRAY_RULES[ARRAY_OPS[obj]].result(
                            [self._operand_kind(a) for a in value.args])
                    except Refused as exc:
                        raise error_at(self.origin, *exc.args) from None
                    info = info if info[0] else None    # a number (custom_vjp functions)
                elif obj in INACTIVE:
                    ndim, dtype = INACTIVE[obj].result(
                        [self.argument_dims(a) for a in value.args])
                    info = (ndim, dtype) if ndim else None
                elif ir.note(value, "opaque", None) is not None:
                    desc = ir.note(value, "opaque")
                    info = (desc[1], desc[2]) if desc[0] == "array" else None
        return info

    def _operand_kind(self, atom):
        """(ndim, is_float) of an operand of an array-level operation, as ArrayRule.result
        takes them: an integer or boolean number or array is no float (a custom_vjp
        function's rules are typed for what they are given: `powers(x, n)` with `n` an int
        makes `np.empty(n)`, which a float `n` does not type)."""
        if isinstance(atom, ast.Name) and atom.id in self.ctx.arrays:
            ndim, dtype = self.ctx.arrays[atom.id]
            return ndim, dtype not in ("i", "b")
        return 0, not (self.integer_atom(atom) or self.is_bool(atom))

    def argument_dims(self, atom):
        """What a shape rule (rules/registry.py) knows of an argument: its dimensions."""
        if isinstance(atom, ast.Tuple):
            return ("tuple", len(atom.elts))
        if isinstance(atom, ast.Name) and atom.id in self.ctx.arrays:
            return self.ctx.arrays[atom.id][0]
        return 0

    def is_bool(self, value):
        """Whether a normalized right-hand side surely gives a boolean: a comparison, `not`,
        True or False, a name known to hold one, a call with no rule numba types as one (what
        a call with no rule is probed with: rules/opaque.py)."""
        if isinstance(value, ast.Constant):
            return isinstance(value.value, bool)
        if isinstance(value, ast.Compare) or \
                isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not):
            return True
        if isinstance(value, ast.BoolOp):
            return all(self.is_bool(v) for v in value.values)
        if isinstance(value, ast.Name):
            return value.id in self.ctx.bools
        return isinstance(value, ast.Call) and ir.note(value, "opaque", None) == ("b",)

    def is_int(self, value):
        """Whether a normalized right-hand side surely gives an integer (a guess for the
        dtype of arrays made from it; analysis/types.py decides exactly)."""
        if isinstance(value, ast.Constant):
            return isinstance(value.value, int) and not isinstance(value.value, bool)
        if isinstance(value, ast.Name):
            return value.id in self.ctx.ints
        if isinstance(value, ast.BinOp):    # (numba: int ** int is an int64)
            return isinstance(value.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod,
                                         ast.Pow)) \
                and self.is_int(value.left) and self.is_int(value.right)
        if isinstance(value, ast.UnaryOp):
            return isinstance(value.op, ast.USub) and self.is_int(value.operand)
        if isinstance(value, ast.Subscript):
            base = value.value
            if isinstance(base, ast.Attribute):
                return base.attr == "shape"
            return isinstance(base, ast.Name) and \
                self.ctx.arrays.get(base.id, (0, "?"))[1] == "i"
        if isinstance(value, ast.Call):
            if ir.note(value, "opaque", None) is not None:
                return ir.note(value, "opaque")[:1] == ("i",)
            obj = self.resolve_generated(value.func)
            if obj in INACTIVE and INACTIVE[obj].result is not None:
                return INACTIVE[obj].result([self.argument_dims(a) for a in value.args]) == \
                    (0, "i")
            return obj in (len, int, round) or (getattr(rule_for_call(obj), "result", None)
                                                == "int" and obj is not None)
        return False

    def resolve_generated(self, func):
        """The object a function expression of generated code names."""
        return lookup(func, self.ctx.env.ns)

    def to_atom(self, out, value, stem="_t"):
        if isinstance(value, (Shape, TupleValue)):      # (a.shape == b.shape, a.shape + 1)
            raise self.error(_At(self.origin[1]), "a tuple used as a value",
                             "Use tuples only to unpack them into names (a, b = b, a), or "
                             "compare their items (a.shape[0] == b.shape[0]).")
        if isinstance(value, NoResult):
            raise self.error(_At(self.origin[1]), f"the value of a call to `{value.name}`, "
                             "which returns nothing (None)", f"Return the value from "
                             f"`{value.name}`: numba cannot compute with None either.")
        if isinstance(value, NoneValue):
            raise self.error(_At(self.origin[1]), "None used as a value (an optional "
                             "argument left out)", "Test it first: `if w is None:` (the "
                             "branch for None is the one kept, as numba keeps it).")
        if isinstance(value, EnumValue):
            raise self.error(_At(self.origin[1]), f"the enum member `{value.spelled}` (of "
                             f"{value.cls.__name__}) used as a value", "numba compares a "
                             "member with members of its own class (==, !=) and reads its "
                             "number as `.value`: write `.value` where a number is meant.")
        if isinstance(value, (FunctionValue, TypeOf)):
            what = f"the function `{value.spelled}`" if isinstance(value, FunctionValue) \
                else "a type, type(...),"
            raise self.error(_At(self.origin[1]), f"{what} used as a value",
                             "Call it, bind it to a name (f = math.exp) or pass it to a "
                             "helper that calls it.")
        if isinstance(value, Lazy):
            return self.arrays.materialize(value, out)
        if ir.is_atom(value):
            return value
        t = self.fresh(stem)
        self.emit_assign(out, t, value)
        return ir.name(t)

    def error(self, node, construct, advice):
        return self.loc.error(node, construct, advice)

    # statements ----------------------------------------------------------
    def block(self, stmts, top=False):
        """`top`: the function's own body, whose statements after a loop that swaps an
        argument array the loop's rewrite takes over (normalize/swaps.py)."""
        out = []
        previous = None
        for k, s in enumerate(stmts):
            self.origin = (self.loc.filename, getattr(s, "lineno", self.loc.firstlineno),
                           self.loc.name)
            self.loads = {}
            self.shape_cache = {}
            self.previous = previous        # (counted_while: `k = 0` just before the loop)
            self.rest = stmts[k + 1:] if top else None
            self.rest_taken = False
            start = len(out)
            try:
                self.stmt(s, out)
            except inlining.NeverReturns as exc:
                if not ir.always_raises(out[start:]):
                    raise self.error(s, f"a call of `{exc.name}` that always raises here (its "
                                     "arguments select its `raise`) where it may not run: in "
                                     "a conditional expression, an `and`/`or` or a "
                                     "comprehension", "Call it in a statement of its own, "
                                     "under an `if`.") from None
                break       # (the statement never completes: the block ends in the raise)
            except AdjitError:
                raise
            except Exception as exc:        # a bug in adjit: pipeline.run reports it at the
                if getattr(exc, "adjit_origin", None) is None:   # innermost user statement
                    exc.adjit_origin = self.origin
                raise
            if self.rest_taken or ir.always_raises([s]):
                break       # (what follows a raise never runs)
            previous = s
        # (what follows the statement that ended this block is dropped here only: the
        # block holding this one goes on after it, `return r * x` after `if x >= 10.0:`
        # whose body was a pruned `if j != 2: return r`)
        self.rest_taken = False
        return out

    def decided_branch(self, branch, out):
        """The branch an `if` decided before it runs takes: the only code of that `if`; what
        follows a branch that returns never runs (numba prunes it: `return 3.0 * w2` after
        `if w2 is None: return ...`), so the block holding the `if` ends there."""
        stmts = self.block(branch)
        out.extend(stmts)
        self.rest_taken = always_returns(branch) or ir.always_raises(stmts)

    def inline(self, node, fn, out, atoms=None):
        """The helper `fn` called by `node`, inlined into `out` (normalize/inline.py)."""
        return inlining.inline(self, node, fn, out, atoms)

    def constant_test(self, test):
        """The truth of an `if` test made of numbers, operators and module-level numbers or
        flags only (none of the function's own names, no calls); None for any other test."""
        leaves = {}
        for n in ir.walk(test):
            if isinstance(n, ast.Name):
                if n.id in self.src.locals:
                    return None
                obj = self.src.resolve_name(n.id)
                if not isinstance(obj, (bool, int, float, str)):
                    return None
                leaves[n.id] = obj
            elif not isinstance(n, (ast.Constant, ast.BinOp, ast.UnaryOp, ast.Compare,
                                    ast.BoolOp, ast.operator, ast.unaryop, ast.cmpop,
                                    ast.boolop, ast.Load, ast.IfExp)):
                return None
            elif isinstance(n, ast.Constant) and not isinstance(n.value, (bool, int, float, str)):
                return None
        try:
            return bool(fold(test, leaves))
        except (ArithmeticError, ValueError, TypeError, KeyError):
            return None     # (ZeroDivisionError, ...): left to the program at run time

    def flush_before(self, s, out):
        """Pending lazy arrays are computed before an `if`, a loop, a conditional expression
        or a short-circuit `and`/`or` that may write arrays:
        numpy computed them where they were bound, and a write in the body would otherwise
        compute them inside the body, where only one path (or every iteration, from data the
        previous one changed) computes them."""
        if self.lazy and (any(_may_write(n) for n in ir.walk(s)) or self._rebinds_read(s)):
            self.arrays.flush_lazy(out)

    @staticmethod
    def lazy_reads(v):
        """views.lazy_reads, for the vectorizer (which views.py builds on)."""
        return lazy_reads(v)

    def _rebinds_read(self, s):
        """Whether statement `s` binds anew (`x = np.zeros(3)`, `c = 3.0`) a name a pending
        lazy array reads."""
        read = set().union(*(lazy_reads(v) for v in self.lazy.values() if isinstance(v, Lazy)))
        return any(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and
                   self.local(n.id) in read for n in ir.walk(s))

    def stmt(self, s, out):
        if isinstance(s, ast.Assign) and (unpacked := self.unpacked_array(s)) is not None:
            for part in unpacked:
                self.stmt(part, out)
        elif isinstance(s, ast.Assign):
            value = self.rhs(s.value, out)
            if len(s.targets) > 1 and not ir.is_atom(value):
                value = self.to_atom(out, value)
            for tgt in s.targets:
                self.assign_to(tgt, value, out)
            if getattr(s, comprehensions.LISTED, False):
                # an array a comprehension or appends fill in place of a list
                held = self.local(s.targets[0].id)
                self.ctx.lists.add(held.id if isinstance(held, ast.Name) else held)
        elif isinstance(s, ast.AnnAssign):
            if s.value is None:
                return
            self.assign_to(s.target, self.rhs(s.value, out), out)
        elif isinstance(s, ast.AugAssign):
            self.aug_assign(s, out)
        elif isinstance(s, ast.Expr):
            if isinstance(s.value, ast.Call) and \
                    self.cuda_intrinsic(s.value.func) == "atomic.add":
                self.atomic_add(s.value, out)
            elif isinstance(s.value, ast.Call) and \
                    self.cuda_intrinsic(s.value.func) == "syncthreads":
                if s.value.args or s.value.keywords:
                    raise self.error(s, "cuda.syncthreads with arguments",
                                     "Write cuda.syncthreads().")
                out.append(ir.annotate(ast.Expr(value=ir.barrier_call()), origin=self.origin))
            elif self.in_place_method(s.value, "fill", 1):
                # `a.fill(v)`: a[...] = v
                target = ast.copy_location(ast.Subscript(value=s.value.func.value, slice=(
                    ast.Constant(value=Ellipsis)), ctx=ast.Store()), s.value)
                self.stmt(ast.copy_location(ast.Assign(targets=[target],
                                                       value=s.value.args[0]), s), out)
            elif self.in_place_method(s.value, "sort", 0):
                # `y.sort()`, numba's in-place sort (no arguments): y[...] = np.sort(y)
                recv = s.value.func.value
                call = ast.copy_location(ast.Call(func=ast.Attribute(
                    value=ir.name("np"), attr="sort", ctx=ast.Load()), args=[recv],
                    keywords=[]), s.value)
                target = ast.copy_location(ast.Subscript(value=copy.deepcopy(recv), slice=(
                    ast.Constant(value=Ellipsis)), ctx=ast.Store()), s.value)
                value = self.call_object(call, np.sort, out)
                if isinstance(value, Lazy):     # (a new array before y is written)
                    value = self.arrays.materialize(value, out, s)
                self.assign_to(target, value, out)
            elif isinstance(s.value, ast.Call):
                self.statement_call = s.value
                value = self.rhs(s.value, out)
                self.statement_call = None
                if isinstance(value, ast.Call) and self.resolve_generated(value.func) in INACTIVE:
                    out.append(ir.annotate(ast.Expr(value=value), origin=self.origin))
            elif any(isinstance(n, ast.Call) for n in ast.walk(s.value)):
                # an expression whose value is dropped, with calls in it (`2.0 *
                # np.random.random()`): evaluated for what its calls do, as Python does (a
                # draw left out moved every later draw of the stream)
                self.rhs(s.value, out)
        elif isinstance(s, ast.Assert):
            # checked where Python checks it (its message is not evaluated: numba's neither
            # unless it fails); AssertionError from the gradient when it fails
            cond = self.atom(s.test, out)
            out.append(ir.annotate(ast.Expr(value=self.calls.call_of(vec.check_assert, [cond])),
                                   origin=self.origin))
        elif isinstance(s, ast.Raise):
            out.append(self.raise_statement(s, out))
        elif isinstance(s, ast.If) and (taken := self.constant_test(s.test)) is not None:
            # `if DEBUG:` with a module-level flag, `if 4.41 <= -0.3:`: only the branch taken
            # is code (numba would prune the other in one sweep and maybe not in the other)
            self.decided_branch(s.body if taken else s.orelse, out)
        elif isinstance(s, ast.If):
            self.flush_before(s, out)
            cond = self.atom(s.test, out)
            if isinstance(cond, ast.Constant) and isinstance(cond.value, bool):
                # decided here (`if w2 is None:` of a name holding None)
                self.decided_branch(s.body if cond.value else s.orelse, out)
                return
            raising = [ir.always_raises(b) and not _binds_anything(b)
                       for b in (s.body, s.orelse)]
            if raising[0] != raising[1]:
                # `if kind == 1: p = ... else: raise ValueError(...)` is `if not kind == 1:
                # raise ...` and then the other path: only that path goes on, so the names
                # it binds are bound after the `if` (nothing to join). (A raising path that
                # binds names first, `y = x * 3.0; raise ...`, is joined as any other.)
                before, subst_before = dict(self.views), dict(self.subst)
                stopped = self.block(s.body if raising[0] else s.orelse)
                # (what the raising path bound, an owned copy of an argument a loop there
                # updates included, is no name after it)
                self.views, self.subst = before, subst_before
                self.emit_if(out, cond, stopped if raising[0] else [],
                             [] if raising[0] else stopped)
                going = s.orelse if raising[0] else s.body
                out.extend(self.block(going))
                self.rest_taken = always_returns(going)
                return
            before, arrays_before = dict(self.views), dict(self.ctx.arrays)
            arguments = set(self.src.params) - self.rebound_params
            subst_before = dict(self.subst)
            body = self.block(s.body)
            self.bind_owned_copies(subst_before, before, body, s)
            after_body, self.views = self.views, dict(before)
            orelse = self.block(s.orelse)
            self.bind_owned_copies(subst_before, before, orelse, s)
            self.origin = (self.loc.filename, s.lineno, self.loc.name)
            joined = joins.plan(self, before, [after_body, self.views], [body, orelse],
                                arrays_before, arguments,
                                joins.read_outside(self, self.src.tree, s))
            returning = [always_returns(s.body), always_returns(s.orelse)]
            if returning[0] != returning[1] and \
                    all(kind in ("view", "kept") for sources in joined.values()
                        for kind, *_ in sources):
                # `if r == 1: res = res.reshape((r, r)); return res` (statsforecast's
                # getQ0): the path that returns leaves nothing after the `if`, where only
                # the other path's bindings hold; where neither path made a new array for
                # the names (views only: no assignment numba would have to unify, no name
                # a join would have to give a path's array), the returning path's are its own
                joined = {}
                if returning[0]:
                    after_body = dict(self.views)
                else:
                    self.views = after_body
            if after_body != before or self.views != before:
                bindings.merge_views(self, before, [after_body, self.views], [body, orelse],
                                     s.lineno)
            if joined and not body and not orelse:
                body = [ast.Pass()]     # (`x, y = y, x`: paths that only bind names)
            self.emit_if(out, cond, body, orelse)
            if not isinstance(cond, ast.Constant) and (body or orelse):
                joins.join_arrays(self, [out[-1].body, out[-1].orelse], out, joined)
        elif isinstance(s, (ast.For, ast.While)):
            counted = self.counted_while(s) if isinstance(s, ast.While) else None
            if counted is not None:
                for x in counted:
                    self.stmt(x, out)
                return
            self.flush_before(s, out)
            for inner in ir.walk_stmts(s.body):
                if isinstance(inner, (ast.For, ast.While)):
                    # an inner loop's hand-over (`y = x * 0.8; x = y`) is a new array for
                    # `x` in this loop too: written as one before this loop takes the names
                    # it rebinds (rebound_in_place), which would otherwise leave `x` to the
                    # inner loop, whose copy of the argument is then made afresh on every
                    # iteration of this one. (For an inner loop it returns no pair to restore.)
                    self.handed_over(inner)
            handed = self.handed_over(s)
            bindings.refuse_swapped_bases(self, s)
            unrolled = swaps.unroll(s, lambda n: bindings.is_array_local(self, n),
                                    self.fresh_local, self.error, set(self.src.params),
                                    lambda n: bindings.is_view_local(self, n), self.rest)
            if unrolled is not None:
                stmts, took = unrolled
                for x in stmts:
                    self.stmt(x, out)
                self.rest_taken = took
                return
            self.keep_old_arrays(s, out)
            outer = self.in_place
            self.in_place = outer | self.rebound_in_place(s, out)
            before, mark, first = dict(self.views), len(self.view_uses), self.ctx.serial
            if isinstance(s, ast.For):
                self.for_loop(s, out)
            else:
                self.while_loop(s, out)
            bindings.check_loop_views(self, before, mark, first, s.lineno)
            self.check_in_place_views(self.in_place - outer, s)
            self.in_place = outer
            for a, b in handed:     # after the loop both names mean one array again
                self.stmt(ast.copy_location(ast.parse(f"{b} = {a}").body[0], s), out)
        elif isinstance(s, (ast.Break, ast.Continue)):
            node = type(s)(lineno=s.lineno)
            ir.annotate(node, origin=self.origin)
            out.append(node)
        elif isinstance(s, ast.Return):
            if s.value is None and self.ctx.kernel and len(self.ctx.stack) == 1:
                node = ast.Return(value=None, lineno=s.lineno)  # (a kernel's thread is done)
                ir.annotate(node, origin=self.origin)
                out.append(node)
                return
            bare = s.value is None or (isinstance(s.value, ast.Constant) and
                                       s.value.value is None)
            if bare and len(self.ctx.stack) == 1:
                raise self.error(s, "`return` without a value",
                                 "Return a number: the function's result.")
            mark = len(out)
            # a helper called for its effect may leave with a bare `return` (stumpy's
            # _compute_diagonal): it returns nothing, as one whose return calls such a helper
            value = NoResult("return") if bare else self.rhs(s.value, out)
            if isinstance(value, NoResult) and len(self.ctx.stack) > 1:
                self.returned_nothing.append(s)     # (this helper returns nothing too)
                value = ir.const(0)
            owned = self.several_returns and isinstance(value, View) and \
                (_made_by(out[mark:], value.base) or value.base not in self.arrays_before)
            if owned and not value.is_identity() and not has_take(value):
                # part of an array this helper made, which nothing else holds (aeon's
                # soft-DTW: `return cost_matrix[1:, 1:]` beside `return _dtw_cost(...)`):
                # the caller may as well get a copy of that part, as a new array
                value = self.arrays.view_of(self.arrays.materialize(value, out, copy=True).id,
                                            out)
            if owned:
                # an array this helper made, no one else's (`return _logpdf(x, mu, sigma)`
                # in a branch, `out = _logpdf(...); ...; return out`, and vectorbt's
                # `if N == 0: return out` before the loop that fills it): copied into the
                # call's result like any array made by a return
                value = ir.name(value.base)
            elif self.several_returns and isinstance(value, ast.Name) and \
                    self.arrays.array_ndim(value) is not None and \
                    value.id not in self.arrays_before:
                owned = True
            if isinstance(value, ast.Name) and self.arrays.array_ndim(value) is not None and not (
                    self.several_returns and (owned or _made_by(out[mark:], value.id))):
                value = self.arrays.view_of(value.id, out)     # (a new array from one of several
                # returns stays a name: normalize_function copies it into the call's result)
            if isinstance(value, View) and not has_take(value) and len(self.ctx.stack) > 1:
                # a helper returning (part of) an array: the caller gets the same memory
                self.returned_views.append((s, value))
                value = ir.const(0)
            elif isinstance(value, TupleValue) and len(self.ctx.stack) > 1:
                # a helper returning several values (`return x_new, v_new`): numbers as
                # atoms, arrays as views (of the caller's arrays or of the helper's own)
                items = [self.returned_item(e, out, s) for e in value.items]
                made = [self.several_returns and self.owned_array(e, out[mark:])
                        for e in items]
                self.tuple_returns += 1
                if _holds_view(items) and all(m or not isinstance(e, (View, TupleValue))
                                              for m, e in zip(made, items)):
                    # `return 0.0, np.zeros(n)` here, `return dist, grad` there (umap's
                    # distance gradients): numbers into the names every return assigns,
                    # each array into the result copied from the return taken
                    value = ir.const(self.tuple_with_arrays(items, out, s))
                    self.returned_mixed[1].append(s)
                    node = ast.Return(value=value, lineno=s.lineno)
                    out.append(ir.annotate(node, origin=self.origin))
                    return
                if _holds_view(items):     # (an array in the tuple, or in a tuple in it)
                    self.returned_views.append((s, TupleValue(items, value.fields)))
                else:       # numbers: each return assigns the same names (several returns)
                    if self.returned_numbers is None:
                        self.returned_numbers = (s, self.names_like(items), value.fields)
                    self.assign_numbers(self.returned_numbers[1], items, out, s)
                value = ir.const(0)
            elif isinstance(value, (Shape, TupleValue)):
                raise self.error(s.value, "returning a tuple from the differentiated "
                                 "function", "Return one number (a helper may return "
                                 "several values).")
            node = ast.Return(value=self.to_atom(out, value), lineno=s.lineno)
            ir.annotate(node, origin=self.origin)
            out.append(node)
        elif isinstance(s, ast.Pass):
            return
        else:
            raise AssertionError(type(s))

    def keep_old_arrays(self, loop, out):
        """`first = u` before a loop that binds `u` to new arrays (`u = u * z`): in Python
        `first` keeps u's old array. Where the function's top-level loop and the statements
        after it only read both arrays (no store into them, no other name for them or a
        part of them, passed only to numpy's functions that make new values), the old
        contents are copied before the loop and `first` views the copy; `u` is then updated
        in place (rebound_in_place). Otherwise the name stays unknown after the loop and is
        refused where it is read (bindings.check_loop_views says why)."""
        if self.rest is None:
            return
        names = {t.id for t in _rebinding_targets(loop.body)} - \
            _rebound_to_views(loop.body, self.tuple_results(loop.body))
        for n in sorted(names):
            local = self.local(n)
            if n not in self.src.locals or n in self.src.params or \
                    not isinstance(local, str) or local not in self.ctx.arrays or \
                    local in self.views:
                continue
            viewers = {t for t, b in self.views.items()
                       if isinstance(b, _Binding) and b.view.base == local}
            users = {u for u in self.src.locals if self.local(u) in viewers}
            if not viewers or {self.local(u) for u in users} != viewers or \
                    not _only_read([loop] + self.rest, users | {n}, self.src,
                                   self.functions_held()):
                continue
            bindings.rebinding(self, local, out)

    def rebound_in_place(self, loop, out):
        """Array names the loop rebinds to new arrays (`y = y + dt * k1`, `h = np.tanh(W @ h
        + U @ x[t])`, `x = A @ x`) whose old array nothing else can see: each rebinding is an
        update in place of one array the function owns (numpy would make a new array and
        drop the old one; the values are the same). A name that aliases an argument (`y =
        y0`, or the argument itself) first gets an owned copy, when the loop writes neither
        it nor the argument. Returns the local names updated in place."""
        # (a name the loop binds to a view stays a view: see check_loop_views)
        names = {t.id for t in _rebinding_targets(loop.body)} - \
            _rebound_to_views(loop.body, self.tuple_results(loop.body))
        marked = set()
        for n in sorted(names):
            local = self.local(n)
            if not isinstance(local, str) or n not in self.src.locals:
                continue
            if any(isinstance(b, _Binding) and b.view.base == local
                   for b in self.views.values()):
                continue            # a view of the old array would see the updates
            binding = self.views.get(local)
            if local in self.ctx.arrays and binding is None and local not in self.src.params:
                if self.ctx.arrays[local][1] == "f":
                    marked.add(local)
                continue
            if binding is not None and isinstance(binding, _Binding):
                base = binding.view.base
            elif n in self.src.params and local in self.ctx.arrays:
                base = local
            else:
                continue
            # an argument, or an array only a helper's result reaches (not one of this
            # function's names): copied, when the loop writes neither it nor the name
            if (base not in self.src.params and base in self.own_names()) or \
                    self.ctx.arrays.get(base, (0, "?"))[1] != "f" or \
                    _written_in(loop.body, {n, base}, self.src, 0, self.functions_held()):
                continue
            value = self.arrays.view_of(local, out) if binding is None else binding.view
            own = self.arrays.materialize(value, out, loop, copy=True).id
            self.in_place_names[own] = n
            self.views.pop(local, None)
            self.subst[n] = own
            self.src.locals.add(own)
            marked.add(own)
        return marked

    def bind_owned_copies(self, subst_before, views_before, path, s):
        """At the end of a branch of the `if` `s`: a name a loop of the branch updated in
        place in an owned copy of its array (rebound_in_place) is bound to a view of that
        copy, as an assignment `name = copy` binds it, instead of standing for the copy
        everywhere after the loop (the other path never made it); the join after the `if`
        then makes one array of the paths' arrays (joins.py)."""
        for n in sorted(self.subst):
            own = self.subst[n]
            if not isinstance(own, str) or own not in self.in_place_names or \
                    subst_before.get(n) == own:
                continue
            if n in subst_before:
                self.subst[n] = subst_before[n]
            else:
                del self.subst[n]
            old = self.local(n)
            if old in views_before and old not in self.views:     # (a helper's argument)
                self.views[old] = views_before[old]
            if path and isinstance(path[-1], ast.Return):
                continue        # (the code after the `if` runs on the other path only)
            if ir.breaks(path, (ast.Break, ast.Continue, ast.Return)):
                raise self.error(s, f"'{self.in_place_names[own]}' rebound in a loop on a "
                                 "path of an `if` that may then leave its loop or function",
                                 f"Copy it once before the loops ({n} = {n}.copy()) and "
                                 f"update it in place in the loop ({n}[:] = ...), or leave "
                                 "after the `if`.")
            # (the name now views the whole copy: bound so, as `n = own` would bind it)
            self.views[old] = bindings.new_binding(self, self.arrays.view_of(own, path))

    def in_place_method(self, call, name, arity):
        """Whether `call` is the method `name` of an array (or of a subscript of one) with
        `arity` positional arguments, as numba takes them: `y.sort()`, `a.fill(v)`."""
        return isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and \
            call.func.attr == name and len(call.args) == arity and not call.keywords and \
            (self._array_name(call.func.value) or isinstance(call.func.value, ast.Subscript)
             and self._array_name(call.func.value.value))

    def handed_over(self, loop):
        """`for t in ...: un = u.copy(); (un written); u = un`: each iteration makes a new
        array and hands it to the name the loop carries. The hand-over becomes `u =
        un.copy()` (so `u` keeps one array the loop updates in place, see
        rebound_in_place), where that changes nothing a program can see: `un` is made
        afresh at the top of every iteration (a copy, an allocation or arithmetic, never a
        view; later bindings of it in the iteration make new arrays too, as Newton updates
        `z = z - np.linalg.solve(J, G)` do), nothing writes either name after the
        hand-over in the iteration, and `un` is not a name before the loop. The hand-over
        may sit in a branch of an `if` at the top of the body (an accepted step of an
        adaptive integrator: `if err < tol: t += h; y = ynew`) when `un` is not used after
        the loop. Rewrites the loop in place; returns the (u, un) pairs, whose aliasing the
        caller restores after the loop (`un = u`)."""
        body = loop.body
        out = []
        for k, s in enumerate(body):
            for site, after in self._handover_sites(s):
                pair = self._hand_over(loop, body, k, site, after, branch=site is not s)
                if pair is not None:
                    out.append(pair)
        return out

    @staticmethod
    def _handover_sites(s):
        """`a = b` statements at `s` (s itself, or the top level of a branch of the `if` s),
        each with the statements after it in its branch."""
        if isinstance(s, ast.If):
            for branch in (s.body, s.orelse):
                for j, x in enumerate(branch):
                    if _is_name_assign(x):
                        yield x, branch[j + 1:]
        elif _is_name_assign(s):
            yield s, []

    def _hand_over(self, loop, body, k, s, after, branch):
        a, b = s.targets[0].id, s.value.id
        if a == b or b in self.src.params:
            return None
        # `p3 = p2` where the loop introduces p3 (bound nowhere else; a recurrence's
        # oldest term, `p3 = p2; p2 = p1; p1 = ...`) is handled as an array name it carries
        introduced = not branch and a not in self.src.params and \
            bindings.is_array_local(self, b) and \
            sum(t.id == a for t in _rebinding_targets(self.src.tree.body)) == 1
        if not (bindings.is_array_local(self, a) or introduced) or \
                _other_names_for(body, {a, b}, s):
            return None         # (a third name for either array would see the difference)
        rest = after + body[k + 1:]
        if bindings.is_array_local(self, b):
            if branch:
                return None
            # `prev = cur; ...; cur = nxt`: b takes another array later in the
            # iteration, and neither name is written before that
            later = [j for j in range(k + 1, len(body)) if _binds([body[j]], b)]
            if later and isinstance(body[later[0]], ast.Assign) and \
                    len(body[later[0]].targets) == 1 and \
                    isinstance(body[later[0]].targets[0], ast.Name) and \
                    not _written_in(body[k + 1:later[0] + 1], {a, b}, self.src, 0,
                                    self.functions_held()) and \
                    not _binds(body[k + 1:later[0]], a) and \
                    not _binds(body[k + 1:later[0]], b):
                s.value = _copy_call(b, s.value)
            return None
        made = [j for j, x in enumerate(body[:k]) if isinstance(x, ast.Assign) and
                any(isinstance(t, ast.Name) and t.id == b for t in x.targets)] or \
            [j for j, x in enumerate(body[:k]) if isinstance(x, ast.If) and _binds([x], b)]
        if len(made) != 1 or not self.makes_anew([body[made[0]]], b) or \
                b in _names_in(body[:made[0]]) or _binds(rest, b) or \
                self.binds_other_than_new(body[:made[0]] + body[made[0] + 1:k], b) or \
                _written_in(rest, {a, b}, self.src, 0, self.functions_held()):
            return None
        outside, nested = self.mentioned_outside(b, loop)
        if outside and (nested or branch):
            return None     # (the name after the loop would need the alias in every pass)
        s.value = _copy_call(b, s.value)
        return (a, b) if outside else None

    def makes_anew(self, stmts, name):
        """Whether `stmts` bind `name` once, to a new array: `un = u + dt * f(u)`, or on
        every path of an `if` (`if c: un = ...` / `else: un = ...`, which joins.py copies
        into one new array)."""
        sites = [x for x in stmts if _binds([x], name)]
        if len(sites) != 1:
            return False
        x = sites[0]
        if isinstance(x, ast.Assign):
            return self.makes_new_array(x.value)
        return isinstance(x, ast.If) and self.makes_anew(x.body, name) and \
            self.makes_anew(x.orelse, name)

    def binds_other_than_new(self, stmts, name):
        """Whether `stmts` (nested ones included) bind `name` to anything but a new array
        (`z = z - np.linalg.solve(J, G)` makes one; `z = y`, `z = y[1:]` do not)."""
        for x in ir.walk_stmts(stmts):
            if isinstance(x, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name
                                                 for t in x.targets):
                if len(x.targets) != 1 or not self.makes_new_array(x.value):
                    return True
            elif _binds([x], name) and not isinstance(x, (ast.If, ast.For, ast.While)):
                return True
        return False

    def makes_new_array(self, value):
        """Whether an expression surely makes a new array (never a view of another): a
        copy, an allocation, arithmetic, an elementwise numpy function."""
        if isinstance(value, (ast.BinOp, ast.UnaryOp)):
            return True
        if not isinstance(value, ast.Call):
            return False
        if isinstance(value.func, ast.Attribute) and value.func.attr == "copy" and \
                not value.args:
            return True
        try:
            obj = self.src.resolve(value.func)
        except Exception:       # not a name the function can see: not known to be new
            return False
        return obj in NEW_ARRAY_CALLS or obj in ELEMENTWISE

    def mentioned_outside(self, name, loop):
        """(mentions of `name` in the function outside `loop`, whether `loop` is inside
        another loop of the function)."""
        tree = self.src.tree
        inside = sum(1 for n in ir.walk(loop) if isinstance(n, ast.Name) and n.id == name)
        total = sum(1 for n in ir.walk(tree) if isinstance(n, ast.Name) and n.id == name)

        def nested(stmts, in_loop):
            for x in stmts:
                if x is loop:
                    return in_loop
                for field in ("body", "orelse"):
                    found = nested(getattr(x, field, []) or [], in_loop or
                                   isinstance(x, (ast.For, ast.While)))
                    if found is not None:
                        return found
            return None
        return total - inside, nested(tree.body, False) is not False

    def own_names(self):
        """The local names of this function's own variables (not a helper's)."""
        return {self.local(u) for u in self.src.locals} - set(self.src.params)

    def check_in_place_views(self, names, loop):
        """A view of an array its loop updates in place must not outlive the iteration
        that made it (it would see the next iteration's values, numpy's the old ones)."""
        for b in self.views.values():
            if isinstance(b, _Binding) and b.view.base in names:
                raise self.error(loop, "a view of an array that the loop rebinds, kept "
                                 "from one iteration to the next",
                                 "Copy what you keep: v = x[i].copy().")

    def assign_in_place(self, tgt, target, value, out):
        """`name = <a new array>` for a name its loop updates in place: the values stored
        into the name's array, checked to have its shape. Returns None when done, else the
        value (evaluated) for an ordinary assignment (an alias, a number)."""
        if isinstance(value, ast.Call):         # a matrix product, np.linalg.solve, ...
            value = self.to_atom(out, value)
            if self.arrays.array_ndim(value) is None:
                return value
        if isinstance(value, ast.Name) and self.arrays.array_ndim(value) is not None:
            if value.id in self.ctx.user_names or value.id in self.src.params:
                return value            # another name for an array: an alias, not a value
            value = self.arrays.view_of(value.id, out)
        elif isinstance(value, View) and value.is_identity() and \
                value.base not in self.own_names() and value.base not in self.src.params and \
                value.base in self.ctx.arrays:
            pass                        # the whole of an array a helper made and returned
        elif not (isinstance(value, Lazy) and not isinstance(value, (Scalar, View))):
            return value
        if any(isinstance(b, _Binding) and b.view.base == target for b in self.views.values()):
            raise self.error(tgt, f"'{tgt.id}' rebound in a loop while a view of its array "
                             "is in use", "Copy what the view reads first: v = x[i].copy().")
        # the array is written again: not one the vectorizer fills once (whose adjoint
        # needs no record of overwritten values)
        self.ctx.vec_temps.write_once.discard(target)
        lazy = self.arrays.as_lazy(self.arrays.lazy_operand(value, out))
        ndim = self.ctx.arrays[target][0]
        if len(lazy.shape) != ndim:
            raise self.error(tgt, f"'{tgt.id}' rebound in a loop to an array of "
                             f"{len(lazy.shape)} dimensions where it has {ndim}",
                             "Keep its shape in the loop, or give the new array another name.")
        message = str(self.error(tgt, f"'{tgt.id}' rebound in a loop changed its shape "
                                 "(adjit updates the array in place)",
                                 "Give the new array another name."))
        for k, n in enumerate(lazy.shape):
            size = self.to_atom(out, Shape(target, ndim=ndim).item(k), "_n")
            out.append(ir.annotate(ast.Expr(value=self.calls.call_of(
                vec.check_same_length, [size, ir.const(1) if n is ONE else n,
                                        ir.const(message)])),
                origin=self.origin))
        start = len(out)
        self.store_view(self.arrays.view_of(target, out), lazy, None, out, tgt)
        self.ctx.rebound.update(id(x) for x in out[start:] if target in ir.stored_names([x]))
        if getattr(lazy, "stops", None) is not None:     # (stop_gradient of an array)
            self.ctx.frozen.append(Copied([lazy.stops], target, [out[-1]], tgt.id, self.origin,
                                          self.origin[1] if self.origin else 0, True))
        return None

    def owned_array(self, value, made):
        """Whether a returned value is a whole array this helper made (by the statements
        `made`, or before them in its body), no one else's."""
        name = value.id if isinstance(value, ast.Name) else value.base \
            if isinstance(value, View) and value.is_identity() else None
        return name is not None and self.arrays.array_ndim(ir.name(name)) is not None and \
            (_made_by(made, name) or name not in self.arrays_before)

    def tuple_with_arrays(self, items, out, node):
        """One of several returns of a tuple holding arrays the helper made: its numbers
        assigned to the names every return assigns, each array's shape recorded; returns
        the number of this return (normalize_function copies the arrays of the return
        taken into the call's result: copy_tuple_arrays)."""
        if self.returned_mixed is None:
            slots = [(self.fresh("_ret"), None) if not isinstance(e, View) else
                     (None, [self.fresh("_rs") for _ in range(e.ndim)]) for e in items]
            self.ctx.ints.update(n for _, shape in slots if shape for n in shape)
            self.returned_mixed = (slots, [], [[] for _ in items], [None] * len(items))
        slots, _, arrays, dtypes = self.returned_mixed
        kinds = [isinstance(e, View) for e in items]
        if len(items) != len(slots) or kinds != [shape is not None for _, shape in slots] or \
                any(len(shape) != e.ndim for (_, shape), e in zip(slots, items) if shape):
            raise self.error(node, "a helper returning tuples of different lengths, or with "
                             "an array where another return has a number or an array of "
                             "another rank", "Return the same kinds of values from every "
                             "return (np.zeros(shape) for an array of zeros).")
        for k, ((number, shape), e) in enumerate(zip(slots, items)):
            if shape is None:
                self.emit_assign(out, number, e)
                continue
            dtype = (self.ctx.arrays.get(e.base, (0, "?"))[1], self.ctx.dtypes.get(e.base))
            if dtype[0] == "?" or dtypes[k] not in (None, dtype):
                raise self.error(node, "a helper returning arrays of different dtypes (or one "
                                 "adjit cannot tell) from several `return`s",
                                 "Return arrays of one dtype from every return.")
            dtypes[k] = dtype
            for stmt in joins.shape_and_number(self, e.base, shape, None, None, self.origin):
                self.emit_assign(out, stmt.targets[0].id, stmt.value)
            arrays[k].append(e.base)
            if e.base not in self.arrays_before:
                # made by the helper, read by the copy after its body only where this return
                # was taken: not carried between iterations of a loop around the call
                self.ctx.vec_temps.joined.add(e.base)
        return len(self.returned_mixed[1])

    def names_like(self, items):
        """Fresh names for a returned tuple's numbers, a tuple inside it as (names, fields)."""
        return [(self.names_like(e.items), e.fields) if isinstance(e, TupleValue)
                else self.fresh("_ret") for e in items]

    def assign_numbers(self, names, items, out, node):
        """Assign a return's numbers to the names every return of the helper assigns."""
        if len(items) != len(names) or any(isinstance(n, tuple) != isinstance(e, TupleValue)
                                           for n, e in zip(names, items)):
            raise self.error(node, "a helper returning tuples of different lengths",
                             "Return as many values from every return.")
        for name, e in zip(names, items):
            if isinstance(name, tuple):
                self.assign_numbers(name[0], e.items, out, node)
            else:
                self.emit_assign(out, name, e)

    def returned_item(self, value, out, node):
        """One element of a helper's returned tuple, as the caller will hold it."""
        if isinstance(value, ast.Name) and self.arrays.array_ndim(value) is not None:
            return self.arrays.view_of(value.id, out)
        if isinstance(value, View) and not has_take(value):
            return value
        if isinstance(value, TupleValue):       # `return xf, fval, (flag, n)`
            return TupleValue([self.returned_item(v, out, node) for v in value.items],
                              value.fields)
        if isinstance(value, Shape):
            raise self.error(node, "returning a tuple inside a tuple",
                             "Return a flat tuple of numbers and arrays.")
        if isinstance(value, Lazy) and not isinstance(value, Scalar):
            return self.arrays.view_of(self.arrays.materialize(value, out, node).id, out)
        return self.to_atom(out, value)

    def emit_if(self, out, cond, body, orelse):
        """`if` on a fresh condition variable that nothing inside the branches reassigns.
        A constant condition keeps only its branch: numba would prune the other one and
        leave variables the backward sweep reads undefined."""
        if isinstance(cond, ast.Constant):
            out.extend(body if cond.value else orelse)
            return
        if not body and not orelse:
            return
        c = self.fresh("_c")
        self.emit_assign(out, c, cond)
        node = ast.If(test=ir.name(c), body=body or [ast.Pass()], orelse=orelse, lineno=0)
        ir.annotate(node, origin=self.origin)
        out.append(node)

    def _bound_otherwise(self, target):
        """Whether `target` holds something an unevaluated binding would not replace: a
        view of another array (`u = u_prev; u = u + 1.0`), a function or type, a list, an
        array a loop updates in place."""
        return target in self.views or target in self.held or target in self.in_place or \
            target in self.ctx.lists

    def assign_to(self, tgt, value, out):
        if isinstance(tgt, ast.Name):
            target = self.local(tgt.id)
            if not isinstance(target, str):
                raise self.error(tgt, f"assigning to parameter '{tgt.id}' of an inlined helper",
                                 "Copy the parameter into a new local variable first.")
            if target in self.lazy:
                # bound again (`q = E; q = np.nansum(q)`: E was read, fused or computed)
                del self.lazy[target]
            if isinstance(value, (Shape, TupleValue)):
                self.bind_tuple(tgt, target, value, out)
                return
            if isinstance(value, (TypeOf, FunctionValue, DtypeValue, EnumValue)):
                self.bind_held(tgt, target, value)
                return
            if isinstance(value, NoneValue):
                # `y = helper(x)` of a helper that returns nothing, or `w2 = w` of an
                # optional argument left out: y is None (numba's too), refused where it is
                # used as a value (or where the name is bound again), tested as None
                if not self.bound_once(tgt):
                    self.to_atom(out, value)
                self.held[target] = value
                return
            self.tuples.pop(target, None)       # (t = (a, b) earlier, now a number)
            if target in self.in_place:
                value = self.assign_in_place(tgt, target, value, out)
                if value is None:
                    return
            if isinstance(value, ast.Name) and self.arrays.array_ndim(value) is not None and \
                    value.id != target:
                value = self.arrays.view_of(value.id, out)     # `y = x`: two names, one array
            if isinstance(value, View) and not has_take(value):
                if bindings.same_binding(self, target, value):
                    return      # `l, s = update(l, s)`: the helper hands back the array given
                bindings.bind_view(self, target, value, out)
                return
            if isinstance(value, Lazy) and not isinstance(value, Scalar) and \
                    isinstance(target, str) and (
                        tgt.id in self.lazy_ok or tgt in self.lazy_relays and
                        target not in lazy_reads(value) and     # (`r = r * r` of an array)
                        not self._bound_otherwise(target)):
                self.arrays.bind_lazy(target, value, tgt.id)
                return
            if isinstance(value, Lazy):
                value = self.arrays.materialize(value, out, tgt)
            if isinstance(value, ast.Name) and value.id == target:
                return      # `z = z` does nothing (its adjoint would zero z_bar: fuzzer find)
            if target in ir.atom_names(ir.operands(value)) and not ir.is_atom(value) and \
                    not _is_copy_call(value) and not (isinstance(value, ast.Call) and
                                                      self.array_info(value) is not None):
                # (`x = x.copy()`, `d = np.append(d, 0.0)` stay one statement: the web split
                # names the new array x_2, where a temporary would make x_2 = _t1 two names
                # for one array)
                value = self.to_atom(out, value)
            self.emit_assign(out, target, value)
        elif isinstance(tgt, ast.Subscript):
            what, arr, idx = self.resolve_subscript(tgt.value, tgt.slice, out, tgt)
            self.check_global_write(arr if what == "elem" else arr.base, tgt)
            if what == "view":
                if isinstance(value, TupleValue):
                    value = self.tuple_as_array(value, arr, out, tgt)
                start = len(out)
                self.store_view(arr, value, None, out, tgt)
                ir.mark_written(out[start:], arr.base)
                return
            if (isinstance(value, Lazy) and not isinstance(value, Scalar) and value.shape) or \
                    (isinstance(value, ast.Name) and self.arrays.array_ndim(value)):
                listed = getattr(tgt, APPENDED, None)
                if listed is not None:
                    raise self.error(tgt, f"appending arrays to the list `{listed}`",
                                     "Allocate the array of them and fill its rows: out = "
                                     "np.empty((n, m)); out[k] = row; k += 1 (then out[:k]).")
                raise self.error(tgt, "storing an array into one element",
                                 "Index as many dimensions as the value leaves (a[i, :] = "
                                 "row), or store a number.")
            atom = self.to_atom(out, value)
            sub = ast.Subscript(value=ir.name(arr), slice=idx, ctx=ast.Store())
            self.emit_assign(out, sub, atom)
            ir.annotate(out[-1], written=True)
        elif isinstance(tgt, ast.Tuple):
            self.unpack(tgt, value, out)
        else:
            raise self.error(tgt, f"assigning to {type(tgt).__name__}",
                             "Assign to a variable name or an array element a[i].")

    def check_global_write(self, base, node):
        """A store into a module-level array (or one of its views): numba compiles a global
        array as a constant it may not write (a record array's fields it writes into a
        frozen copy); refused by name."""
        user = self.ctx.globals.get(base)
        if user is not None:
            raise self.error(node, f"writing into the module-level array '{user}'",
                             "numba compiles a module-level array as a constant: allocate "
                             "the array in the function (or pass it as an argument) to write "
                             "into it.")

    def tuple_as_array(self, value, view, out, node):
        """A tuple of numbers stored into a row or a slice (`vajs[j] = orbit(...)`, `a[:] =
        (x, y, z)`), as numba stores a sequence: into a 1-D slice of exactly its length
        (ValueError otherwise), the 1-D array of its items (int64 where all are integers);
        a tuple holding arrays or tuples is left as it is (refused where used as a value)."""
        items = value.items
        if not items or any(isinstance(e, (TupleValue, Shape)) or
                            (isinstance(e, Lazy) and not isinstance(e, Scalar)) or
                            (isinstance(e, ast.Name) and self.arrays.array_ndim(e))
                            for e in items):
            return value
        if len(view.shape) != 1:
            raise self.error(node, f"a tuple stored into a slice of {len(view.shape)} "
                             "dimensions", "numba stores a tuple of numbers into a 1-D slice "
                             "or row of its length: store row by row (a[i, :] = (x, y)).")
        length = view.shape[0]
        out.append(ir.annotate(ast.Expr(value=self.calls.call_of(vec.check_sequence, [
            ir.const(1) if length is ONE else length, ir.const(len(items))])),
            origin=self.origin))
        atoms = [self.to_atom(out, e) for e in items]
        name = self.arrays.new_array([ir.const(len(atoms))], out,
                                     "i" if all(self.is_int(a) for a in atoms) else "f")
        for k, a in enumerate(atoms):
            self.emit_assign(out, ast.Subscript(value=ir.name(name), slice=ir.const(k),
                                                ctx=ast.Store()), a)
            ir.annotate(out[-1], written=True)
        return ir.name(name)

    def tuple_results(self, stmts):
        """Names the statements bind to the result of a helper whose every return is a
        tuple written out or a named tuple's constructor (`r = step(y)`), or to such an
        element of a helper's tuple (`trial, err = step(s, h)`, every return `State(t, y),
        err`)."""
        out = set()
        for x in (n for s in stmts for n in ir.walk(s)):
            if not (isinstance(x, ast.Assign) and isinstance(x.value, ast.Call) and
                    len(x.targets) == 1 and isinstance(x.targets[0], (ast.Name, ast.Tuple))):
                continue
            fn = unwrap(self.src.resolve(x.value.func))
            if not isinstance(fn, types.FunctionType) or _library_function(fn):
                continue
            try:
                helper = read_function(fn)
            except AdjitError:
                continue
            returns = [r.value for r in ir.walk(helper.tree) if isinstance(r, ast.Return)]
            target = x.targets[0]
            if isinstance(target, ast.Name):
                if returns and all(_makes_tuple(helper, r) for r in returns):
                    out.add(target.id)
                continue
            for k, t in enumerate(target.elts):
                if isinstance(t, ast.Name) and returns and all(
                        isinstance(r, ast.Tuple) and len(r.elts) == len(target.elts) and
                        _makes_tuple(helper, r.elts[k]) for r in returns):
                    out.add(t.id)
        return out

    def bind_held(self, tgt, target, value):
        """`T = type(x)`, `e = math.exp`: the name holds a type or a function for calls
        (`T(0.5)`, `e(x)`); x's number is already an atom, so a later change of `x` leaves T
        as it was."""
        what = "type" if isinstance(value, TypeOf) else "dtype" if \
            isinstance(value, DtypeValue) else "n enum member" if \
            isinstance(value, EnumValue) else "function"
        if not self.bound_once(tgt):
            raise self.error(tgt, f"a {what} assigned to `{tgt.id}`, a name also assigned in "
                             "a loop or branch", f"Bind `{tgt.id}` once, before its uses.")
        self.held[target] = value

    def functions_held(self):
        """{user name: function} for the names that hold a function here (`e = math.exp`,
        a parameter given one)."""
        out = {}
        for name, v in self.subst.items():
            if isinstance(v, FunctionValue):
                out[name] = v.obj
        for name in self.src.locals:
            target = self.local(name)
            if isinstance(target, str) and isinstance(self.held.get(target), FunctionValue):
                out[name] = self.held[target].obj
        return out

    def held_value(self, func, out=None):
        """The TypeOf or FunctionValue that `func` holds: a local bound by `T = type(x)` or
        `e = math.exp`, a helper's parameter given a function, or `type(x)` itself (with
        `out`); else None."""
        if isinstance(func, ast.Name):
            if func.id in self.subst:
                v = self.subst[func.id]
                return v if isinstance(v, (TypeOf, FunctionValue)) else None
            if func.id in self.src.locals:
                target = self.local(func.id)
                return self.held.get(target) if isinstance(target, str) else None
            return None
        if out is not None and isinstance(func, ast.Call) and \
                self.src.resolve(func.func) is type:
            return self.rhs(func, out)
        return None

    def dtype_type_call(self, node, out):
        """`a.dtype.type(v)`: v as a number of a's dtype (numbagg's `a.dtype.type(0)`):
        float(v) for float64 arrays, int(v) for integer ones."""
        arr = node.func.value.value
        if len(node.args) != 1 or node.keywords:
            raise self.error(node, f"`{ast.unparse(node.func)}` called with other than one "
                             "argument", "Convert one number: a.dtype.type(0).")
        v = self.operand(arr, out)
        base = v.base if isinstance(v, View) else None
        dtype = self.ctx.dtypes.get(base) if base is not None else None
        if dtype is None and base is not None:
            dtype = {"f": np.dtype(np.float64), "i": np.dtype(np.int64),
                     "b": np.dtype(np.bool_)}.get(self.ctx.arrays.get(base, (0, "?"))[1])
        if dtype is None or dtype.kind not in "fiub" or dtype.kind == "f" and \
                dtype != np.float64:
            what = (f"a {dtype} array" if dtype is not None else
                    "an array whose dtype adjit does not know here")
            raise self.error(node, f"`{ast.unparse(node.func)}` of {what}",
                             "Write float(v) (or T = type(a[0]); T(v)).")
        convert = {"f": float, "b": bool}.get(dtype.kind, int)
        return self.rhs(ast.copy_location(ast.Call(
            func=ast.Name(id=convert.__name__, ctx=ast.Load()), args=node.args,
            keywords=[]), node), out)

    def type_of(self, node, out):
        """`type(v)` of a number: a TypeOf, only ever called."""
        if len(node.args) != 1 or node.keywords:
            raise self.error(node, "type() with other than one argument",
                             "Write type(x) of a number, then call it: type(x)(0.5).")
        value = self.operand(node.args[0], out)
        if isinstance(value, Lazy) and not isinstance(value, Scalar) or \
                isinstance(value, (Shape, TupleValue)) or self.arrays.array_ndim(value) is not None:
            raise self.error(node, f"`{ast.unparse(node)}` of an array or tuple",
                             "Take the type of an element, type(a[0]), to convert numbers "
                             "to the array's dtype.")
        value = value.atom if isinstance(value, Scalar) else value
        if isinstance(value, ast.Constant):
            return TypeOf(value)
        held = self.fresh()         # (a name of the user's may be assigned again later)
        self.emit_assign(out, held, value)
        return TypeOf(ir.name(held))

    def bound_once(self, tgt):
        """Whether the name `tgt` is assigned once (or only outside blocks) and is not a
        parameter: what it holds at a read is then what this assignment gave it."""
        return (self.stores.get(tgt.id, 0) == 1 or tgt.id in self.straight) and \
            tgt.id not in self.src.params

    def bind_tuple(self, tgt, target, value, out):
        """`r = step(x)`, `t = (a, b)`, `shp = a.shape`: the name (local `target`) holds the
        tuple for reads (`r[0]`, `a, b = r`, `len(r)`, `for v in r`, a helper's argument).
        Its numbers are copied where it is bound, so a later change of `a` does not reach
        `t[0]`."""
        if not self.bound_once(tgt):
            raise self.error(tgt, f"a tuple assigned to `{tgt.id}`, a name also assigned "
                             "in a loop or branch", "Bind a tuple to a name once "
                             "(r = step(x)), or unpack it into names: a, b = step(x).")
        if isinstance(value, Shape) and value.ndim is not None:
            # the sizes as they are now (a.shape is a tuple of numbers: rebinding `a` to
            # another array later does not change it)
            value = TupleValue([self.to_atom(out, value.item(k)) for k in range(value.ndim)])
        elif isinstance(value, Shape):
            raise self.error(tgt, "a shape of unknown length held in a name",
                             "Unpack it into names: n, m = a.shape.")
        if isinstance(value, TupleValue):
            value = self.kept_tuple(tgt, value, out)
        self.tuples[target] = value

    def kept_tuple(self, tgt, value, out):
        """The tuple `value` as a name bound to it keeps it: its numbers copied (tuples in
        it too), its arrays checked not to be assigned again later."""
        items = []
        for v in value.items:
            if isinstance(v, TupleValue):
                v = self.kept_tuple(tgt, v, out)
            elif isinstance(v, View):
                user = v.base[len(self.prefix):] if v.base.startswith(self.prefix) else v.base
                user = self.in_place_names.get(v.base, user)    # (an owned copy's name)
                once = 0 if user in self.src.params else 1
                if self.stores.get(user, 0) > once or v.base in self.in_place:
                    raise self.error(tgt, f"a tuple holding the array `{user}`, which is "
                                     "assigned again later", "Keep the array in a name of "
                                     "its own, or unpack the tuple at once.")
            elif isinstance(v, ast.Name):
                copy_ = self.fresh("_t")
                self.emit_assign(out, copy_, v)
                v = ir.name(copy_)
            items.append(v)
        return TupleValue(items, value.fields)

    def tuple_element(self, node):
        """The tuple that `p[1]` or `p[1][0]` (constant indices into a tuple name `p`) is,
        else None."""
        if isinstance(node, ast.Name):
            held = self.tuple_named(node.id)
            return held if isinstance(held, TupleValue) else None
        node = self.field_as_index(node) or node
        if isinstance(node, ast.Subscript):
            base = self.tuple_element(node.value)
            k = ir.constant_int(node.slice)
            if base is not None and k is not None and -len(base.items) <= k < len(base.items):
                item = base.items[k]
                return item if isinstance(item, TupleValue) else None
        return None

    def pick(self, items, k, out):
        """items[k] for a variable k (`weights[j]` in a loop over range(len(weights))): a
        chain of branches on the position (vec.tuple_index: IndexError out of range), each
        assigning its number."""
        n = len(items)
        if all(isinstance(v, TupleValue) for v in items) and \
                len({len(v.items) for v in items}) == 1:
            # grid[k] of a tuple of tuples: each position picked
            return TupleValue([self.pick([v.items[m] for v in items], k, out)
                               for m in range(len(items[0].items))])
        if any(isinstance(v, (TupleValue, Shape)) or
               (isinstance(v, ast.Name) and self.arrays.array_ndim(v)) for v in items):
            raise self.error(_At(self.origin[1]), "a tuple of arrays (or of tuples of "
                             "different lengths) indexed by a variable",
                             "Index it with a constant, or stack the arrays into one "
                             "(np.stack) and index its rows.")
        at = self.to_atom(out, self.calls.call_of(vec.tuple_index, [k, ir.const(n)]))
        conds = [self.to_atom(out, ast.Compare(left=at, ops=[ast.Eq()],
                                               comparators=[ir.const(j)]))
                 for j in range(n - 1)]
        picked = self.fresh("_t")

        def chain(j):
            body = []
            self.emit_assign(body, picked, items[j])
            if j == n - 1:
                return body
            branch = []
            self.emit_if(branch, conds[j], body, chain(j + 1))
            return branch
        out.extend(chain(0))
        return ir.name(picked)

    def tuple_named(self, name):
        """The TupleValue or Shape a name holds (bind_tuple, or a helper's parameter given
        a tuple), else None."""
        if name in self.subst:
            v = self.subst[name]
            return v if isinstance(v, (Shape, TupleValue)) else None
        if name in self.src.locals:
            return self.tuples.get(self.local(name))
        obj = self.src.resolve_name(name)
        if isinstance(obj, tuple) and obj and \
                not all(type(v) in (int, float, bool) for v in obj):
            # a module-level tuple of tuples (a grid of (start, stop, count)), of arrays or
            # a named tuple, as numba freezes it (tuples of numbers read as their array)
            return self.global_tuple(obj, name)
        return None

    def unpacked_array(self, s):
        """`x, y, z = u` of an array name (`r, v = rv` of a 2-D one: its rows, views), as
        numba runs it: the length checked (ValueError), then `x, y, z = u[0], u[1], u[2]`;
        None for any other statement."""
        tgt, value = s.targets[0], s.value
        if len(s.targets) != 1 or not isinstance(tgt, ast.Tuple) or \
                not isinstance(value, ast.Name) or \
                any(isinstance(t, ast.Starred) for t in tgt.elts):
            return None
        if value.id in self.src.locals or value.id in self.subst:
            held = self.load_name(value)
        else:
            return None
        if not (isinstance(held, ast.Name) and self.arrays.array_ndim(held)) and \
                not (isinstance(held, View) and not has_take(held)):
            return None
        return _unpacked_statements(tgt, value.id, s)

    def unpack(self, tgt, value, out):
        if isinstance(value, Shape):
            items = [value.item(k) for k in range(value.ndim if value.ndim is not None
                                                  else len(tgt.elts))]
        elif isinstance(value, TupleValue):
            items = value.items
        elif not any(isinstance(t, ast.Starred) for t in tgt.elts) and (
                (isinstance(value, ast.Call) and (self.array_info(value) or (0,))[0]) or
                (isinstance(value, ast.Name) and self.arrays.array_ndim(value)) or
                (isinstance(value, View) and not has_take(value)) or
                (isinstance(value, Lazy) and not isinstance(value, Scalar) and value.shape)):
            # an array a call or an expression made (`r, v = coe2rv(...)`, `a, b, c =
            # np.sin(x)`): held by a name of its own, then unpacked as a name is
            held = self.fresh_local("_u")
            self.assign_to(ast.Name(id=held, ctx=ast.Store()), value, out)
            for x in _unpacked_statements(tgt, held, tgt):
                self.stmt(x, out)
            return
        else:
            raise self.error(tgt, "unpacking a value that is not a tuple",
                             "Unpack a tuple written out (a, b = x, y), an array's shape, or "
                             "an array (its elements, or rows).")
        if len(items) != len(tgt.elts):
            raise self.error(tgt, f"unpacking {len(items)} values into {len(tgt.elts)} names",
                             "Use as many names as values.")
        targets = _tuple_target_names(tgt, self)
        held = [self.read_before(v, targets, out) for v in items]
        for t, v in zip(tgt.elts, held):
            if isinstance(t, ast.Tuple):
                self.unpack(t, v, out)          # (a, b), c = p
                continue
            self.assign_to(t, v, out)

    def read_before(self, v, targets, out):
        """A value being unpacked, read before any target is assigned, as Python evaluates
        the right-hand side first: a number held in a name among `targets` is copied (in a
        tuple inside the tuple too: `c, (a, b) = a, (c, 1.0)`)."""
        if isinstance(v, View) and not has_take(v):
            return v            # a view: nothing to compute, nothing the targets change
        if isinstance(v, TupleValue):
            return TupleValue([self.read_before(item, targets, out) for item in v.items],
                              v.fields)
        v = self.to_atom(out, v)
        if isinstance(v, ast.Name) and v.id in targets:
            t = self.fresh()
            self.emit_assign(out, t, v)
            v = ir.name(t)
        return v

    def aug_assign(self, s, out):
        """`t op= e`. Python loads an element target before it evaluates e (which may call a
        helper that writes the array), so the load comes first here too."""
        if isinstance(s.op, (ast.Add, ast.Mult)) and isinstance(s.target, ast.Name) and \
                self.holds_list(s.target):
            what = "`+=` (extending)" if isinstance(s.op, ast.Add) else "`*=` (repeating)"
            raise self.error(s, f"{what} of a list passed as `{s.target.id}` (numba extends "
                             "and repeats the list in place; adjit reads a list as the array "
                             "of its numbers, whose `+=` and `*=` act on each element)",
                             "Pass an array (np.array([...])) and make the longer array with "
                             "np.concatenate((a, b)) or np.tile.")
        if bindings.view_name(self, s.target) is not None:
            view = bindings.use_view(self, bindings.view_name(self, s.target), s.target)
            self.check_global_write(view.base, s)
            self.store_view(view, self.rhs(s.value, out), s.op, out, s)
            return
        if isinstance(s.target, ast.Name) and s.target.id in self.src.locals:
            local = self.local(s.target.id)
            arr = local if isinstance(local, str) else getattr(local, "id", None)
            if arr is not None and self.arrays.array_ndim(ir.name(arr)) is not None:
                # `a += e` on an array updates it in place, as numpy does
                self.store_view(self.arrays.view_of(arr, out), self.rhs(s.value, out), s.op, out, s)
                return
        if isinstance(s.target, ast.Name):
            rhs = self.atom(s.value, out)
            cur = ir.name(self.local(s.target.id))
            self.assign_to(s.target, self.binop(s.op, cur, rhs, s), out)
        elif isinstance(s.target, ast.Subscript):
            what, arr, idx = self.resolve_subscript(s.target.value, s.target.slice, out, s)
            self.check_global_write(arr if what == "elem" else arr.base, s)
            if what == "view":
                current = None
                if has_take(arr) and self.may_write(s.value):
                    # x[idx] op= e reads x[idx] (a copy) before e runs, which may write x
                    copied = self.arrays.materialize(arr, out, s, copy=True)
                    current = self.arrays.view_of(copied.id, out)
                self.store_view(arr, self.rhs(s.value, out), s.op, out, s, current)
                return
            cur = self.to_atom(out, ast.Subscript(value=ir.name(arr), slice=idx, ctx=ast.Load()))
            rhs = self.atom(s.value, out)
            new = self.to_atom(out, self.binop(s.op, cur, rhs, s))
            sub = ast.Subscript(value=ir.name(arr), slice=copy.deepcopy(idx), ctx=ast.Store())
            self.emit_assign(out, sub, new)
            ir.annotate(out[-1], written=True)
        else:
            raise self.error(s, "augmented assignment to this target",
                             "Use a variable name or an array element a[i].")

    def bound(self, atom, loop, out, stem):
        """A loop bound that keeps its value through the loop: a name the loop body assigns
        is copied first, as Python evaluates range(...) once."""
        if isinstance(atom, ast.Name) and atom.id in self.assigned_in(loop.body):
            t = self.fresh(stem)
            self.emit_assign(out, t, atom)
            return ir.name(t)
        return atom

    def assigned_in(self, stmts):
        return {self.local(n) for n in assigned_user_names(stmts)
                if isinstance(self.local(n), str)}

    def _loop_exits(self, stmts, kinds=(ast.Break, ast.Continue)):
        """Whether a break or continue (`kinds`) of this loop (not of an inner one) is in
        `stmts`."""
        for t in stmts:
            if isinstance(t, kinds):
                return True
            if isinstance(t, ast.If) and (self._loop_exits(t.body, kinds) or
                                          self._loop_exits(t.orelse, kinds)):
                return True
            if isinstance(t, (ast.With, ast.Try)) and self._loop_exits(t.body, kinds):
                return True
        return False

    def _array_name(self, node):
        """Whether `node` names an array (an argument, a local array, a view, a pending
        array expression or a module-level array)."""
        if not isinstance(node, ast.Name):
            return False
        if bindings.view_name(self, node) is not None:
            return True
        if node.id not in self.src.locals and node.id not in self.subst and \
                isinstance(self.src.resolve_name(node.id), np.ndarray):
            return True
        target = self.local(node.id)
        if isinstance(target, ast.Name):    # a helper's parameter bound to the caller's name
            target = target.id
        return isinstance(target, str) and (target in self.ctx.arrays or (
            target in self.lazy and isinstance(self.lazy[target], Lazy) and
            not isinstance(self.lazy[target], Scalar)))

    def iteration_by_index(self, s, out):
        """A for loop over something other than range, as numba users write them, rewritten
        to loops over range: `for k in (0, 1):` (a literal tuple or list: the body once
        per element), `for row in X:` (X[k] for k in range(len(X)); X may be a call making
        an array, evaluated once: `for j in np.arange(0, n, 2)`), `for i, v in
        enumerate(x)`, `for a, b in zip(x, y)` and `for i, (a, b) in enumerate(zip(x, y))`
        over arrays. True if `s` was one."""
        it, loc = s.iter, dict(lineno=s.lineno, col_offset=s.col_offset)
        held = self.tuple_named(it.id) if isinstance(it, ast.Name) else None
        if held is not None:        # a name holding a tuple: its elements, as a literal's
            n = len(held.items) if isinstance(held, TupleValue) else held.ndim
            if n is None:
                raise self.error(s, "a loop over a shape of unknown length",
                                 "Loop over range(a.ndim) and read a.shape[k].")
            it = ast.Tuple(elts=[ast.Subscript(value=ast.Name(id=it.id, ctx=ast.Load()),
                                               slice=ast.Constant(k), ctx=ast.Load())
                                 for k in range(n)], ctx=ast.Load())
        elif isinstance(it, ast.Name):     # a module-level tuple of numbers: a literal
            value = self.src.resolve(it)
            if isinstance(value, tuple) and value and \
                    all(type(v) in (int, float, bool) for v in value):
                it = ast.Tuple(elts=[ast.Constant(v) for v in value], ctx=ast.Load())
        if isinstance(it, (ast.Tuple, ast.List)) and self._loop_exits(s.body) and \
                it.elts and all(isinstance(e, ast.Constant) and type(e.value) in (int, float)
                                for e in it.elts):
            # `for kr in (0, 1): if ...: continue`: a loop over the array of the numbers
            it = self.assign_new_local("_seq", ast.List(elts=it.elts, ctx=ast.Load()), loc,
                                       out)
        if isinstance(it, (ast.Tuple, ast.List)):
            if self._loop_exits(s.body):
                raise self.error(s, "break or continue in a loop over a literal tuple of "
                                 "other than number constants",
                                 "Loop over range(len(...)) and index the values.")
            for elt in it.elts:
                assign = ast.Assign(targets=[copy.deepcopy(s.target)], value=copy.deepcopy(elt),
                                    **loc)
                out.extend(self.block([assign] + copy.deepcopy(s.body)))
            return True
        if isinstance(it, ast.Attribute) and it.attr == "flat" and (
                self._array_name(it.value) or not isinstance(it.value, ast.Name)):
            # `for v in a.flat`: every element in C order (a 1-D array's are its elements)
            if not isinstance(it.value, ast.Name):
                it = ast.Attribute(value=self.assign_new_local("_seq", it.value, loc, out),
                                   attr="flat", ctx=ast.Load())
            ndim = self.shape_of(it.value, out).ndim
            if ndim != 1:
                if s.orelse or self._loop_exits(s.body, ast.Break):
                    raise self.error(s, "break or else in a loop over a.flat of an N-D array",
                                     "Loop over range(...) per dimension.")
                arr = it.value
                sizes = [self.assign_new_local("_nd", ast.Subscript(value=ast.Attribute(
                    value=copy.deepcopy(arr), attr="shape", ctx=ast.Load()),
                    slice=ast.Constant(k), ctx=ast.Load()), loc, out) for k in range(ndim)]
                indices = [self.fresh("_k") for _ in range(ndim)]
                self.src.locals.update(indices)
                body = [ast.Assign(targets=[s.target], value=ast.Subscript(
                    value=copy.deepcopy(arr), slice=ast.Tuple(
                        elts=[ast.Name(id=k, ctx=ast.Load()) for k in indices],
                        ctx=ast.Load()), ctx=ast.Load()), **loc)] + s.body
                for k, n in reversed(list(zip(indices, sizes))):
                    body = [ast.For(target=ast.Name(id=k, ctx=ast.Store()),
                                    iter=ast.Call(func=ast.Name(id="range", ctx=ast.Load()),
                                                  args=[n], keywords=[]),
                                    body=body, orelse=[], **loc)]
                self.for_loop(ast.fix_missing_locations(body[0]), out)
                return True
            it = it.value
        func = self.src.resolve(it.func) if isinstance(it, ast.Call) and \
            not (isinstance(it.func, ast.Attribute) and self._array_name(it.func.value)) else None
        if func in (range, numba.prange):
            return False
        if func in (np.ndindex, np.ndenumerate):
            self.index_loops(s, it, func, out)
            return True
        inner = it.args[0] if func is enumerate and it.args else None
        if func is enumerate and len(it.args) in (1, 2) and not it.keywords and \
                isinstance(s.target, ast.Tuple) and len(s.target.elts) == 2 and \
                isinstance(inner, ast.Call) and self.src.resolve(inner.func) is zip and \
                inner.args and not inner.keywords and \
                isinstance(s.target.elts[1], ast.Tuple) and \
                len(s.target.elts[1].elts) == len(inner.args):
            # `for k, (a, b) in enumerate(zip(x, y))`: zip's loop, counted
            arrays, names = list(inner.args), list(s.target.elts[1].elts)
            start = it.args[1] if len(it.args) == 2 else ast.Constant(0)
        elif func is enumerate and len(it.args) in (1, 2) and not it.keywords and \
                isinstance(s.target, ast.Tuple) and len(s.target.elts) == 2:
            arrays, names = [it.args[0]], [s.target.elts[1]]
            start = it.args[1] if len(it.args) == 2 else ast.Constant(0)
        elif func is zip and it.args and not it.keywords and \
                isinstance(s.target, ast.Tuple) and len(s.target.elts) == len(it.args):
            arrays, names, start = list(it.args), list(s.target.elts), None
        else:       # an array, or a call making one (`for j in np.arange(0, n, 2)`)
            arrays, names, start = [it], [s.target], None
        refusal = self.error(s, "a for loop over something that is not an array or "
                             "range(...)",
                             "numba compiles no reversed(): loop over range(n - 1, -1, -1)."
                             if func is reversed else
                             "Loop over indices: `for i in range(len(x)):` and read x[i]; "
                             "arrays, enumerate(x), zip(x, y) and literal tuples also work.")
        for j, a in enumerate(arrays):      # each iterable evaluated once, before the loop
            if not isinstance(a, ast.Name):
                try:
                    arrays[j] = self.assign_new_local("_seq", a, loc, out)
                except AdjitError:
                    raise refusal from None
            if not self._array_name(arrays[j]):
                raise refusal
        k = self.fresh("_k")
        self.src.locals.add(k)          # the index: a local of the function from here on
        lengths = [ast.Call(func=ast.Name(id="len", ctx=ast.Load()), args=[a], keywords=[])
                   for a in arrays]
        n = lengths[0] if len(lengths) == 1 else \
            ast.Call(func=ast.Name(id="min", ctx=ast.Load()), args=lengths, keywords=[])
        head = [ast.Assign(targets=[t], value=ast.Subscript(value=copy.deepcopy(a),
                                                            slice=ast.Name(id=k, ctx=ast.Load()),
                                                            ctx=ast.Load()), **loc)
                for t, a in zip(names, arrays)]
        if start is not None:
            head.insert(0, ast.Assign(targets=[s.target.elts[0]], value=ast.BinOp(
                left=ast.Name(id=k, ctx=ast.Load()), op=ast.Add(), right=start), **loc))
        loop = ast.For(target=ast.Name(id=k, ctx=ast.Store()),
                       iter=ast.Call(func=ast.Name(id="range", ctx=ast.Load()), args=[n],
                                     keywords=[]),
                       body=head + s.body, orelse=s.orelse, **loc)
        self.for_loop(ast.fix_missing_locations(loop), out)
        return True

    def assign_new_local(self, stem, value, loc, out):
        """`<new local> = value`, normalized into `out` (an iterable or a size evaluated once
        before the loops a for statement becomes); returns the local's name to load."""
        name = self.fresh(stem)
        self.src.locals.add(name)
        self.stmt(ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=value, **loc),
                  out)
        return ast.Name(id=name, ctx=ast.Load())

    def index_loops(self, s, it, func, out):
        """`for idx in np.ndindex(a.shape)` (or `np.ndindex(n, m)`, `for i, j in ...`) and
        `for idx, v in np.ndenumerate(a)`: one range loop per dimension, in C order, the
        body under the innermost with `idx = (i0, i1, ...)` (and `v = a[i0, i1, ...]`)."""
        name = f"np.{func.__name__}"
        loc = dict(lineno=s.lineno, col_offset=s.col_offset)
        if it.keywords or s.orelse:
            raise self.error(s, f"a loop over {name} with keywords or an else",
                             f"Write {name}(shape) (or {name}(a)) and no else.")
        if self._loop_exits(s.body, ast.Break):
            raise self.error(s, f"break in a loop over {name}",
                             "Loop over range(...) per dimension and leave them with a flag.")

        def ref(name_):
            return ast.Name(id=name_, ctx=ast.Load())

        value_target = None
        if func is np.ndenumerate:
            if len(it.args) != 1 or not (isinstance(s.target, ast.Tuple) and
                                         len(s.target.elts) == 2):
                raise self.error(s, f"{name} with other than one array, or its items "
                                 "not unpacked", f"Write `for idx, v in {name}(a):`.")
            arr = it.args[0] if isinstance(it.args[0], ast.Name) else \
                self.assign_new_local("_seq", it.args[0], loc, out)
            if not self._array_name(arr):
                raise self.error(s, f"{name} of something that is not an array",
                                 f"Pass an array: {name}(a).")
            ndim = self.shape_of(arr, out).ndim
            sizes = [ast.Subscript(value=ast.Attribute(value=copy.deepcopy(arr), attr="shape",
                                                       ctx=ast.Load()),
                                   slice=ast.Constant(k), ctx=ast.Load()) for k in range(ndim)]
            index_target, value_target = s.target.elts
        else:
            index_target = s.target
            shape = it.args[0] if len(it.args) == 1 else ast.Tuple(elts=list(it.args),
                                                                   ctx=ast.Load())
            if isinstance(shape, ast.Tuple):
                sizes = list(shape.elts)
            else:
                held = self.tuple_named(shape.id) if isinstance(shape, ast.Name) else None
                ndim = len(held.items) if isinstance(held, TupleValue) else \
                    held.ndim if held is not None else \
                    self.shape_of(shape.value, out).ndim \
                    if isinstance(shape, ast.Attribute) and shape.attr == "shape" else None
                if ndim is None:
                    raise self.error(s, f"{name} of a shape adjit cannot count the dimensions "
                                     "of", f"Write {name}(a.shape), {name}((n, m)) or "
                                     f"{name}(n, m).")
                sizes = [ast.Subscript(value=copy.deepcopy(shape), slice=ast.Constant(k),
                                       ctx=ast.Load()) for k in range(ndim)]
        if not sizes:
            raise self.error(s, f"{name} over no dimensions", "Compute the one value directly.")
        sizes = [self.assign_new_local("_nd", n, loc, out) for n in sizes]   # evaluated once
        indices = [self.fresh("_k") for _ in sizes]
        self.src.locals.update(indices)
        head = [ast.Assign(targets=[index_target], value=ast.Tuple(
            elts=[ref(k) for k in indices], ctx=ast.Load()), **loc)]
        if value_target is not None:
            head.append(ast.Assign(targets=[value_target], value=ast.Subscript(
                value=copy.deepcopy(arr), slice=ast.Tuple(elts=[ref(k) for k in indices],
                                                          ctx=ast.Load()),
                ctx=ast.Load()), **loc))
        body = head + s.body
        for k, n in reversed(list(zip(indices, sizes))):
            body = [ast.For(target=ast.Name(id=k, ctx=ast.Store()),
                            iter=ast.Call(func=ast.Name(id="range", ctx=ast.Load()), args=[n],
                                          keywords=[]), body=body, orelse=[], **loc)]
        self.for_loop(ast.fix_missing_locations(body[0]), out)

    @contextlib.contextmanager
    def loop_body(self, parallel=False):
        """Lowering a user loop's body: the loop counted in loop_depth (and prange_depth),
        and, entering the outermost loop, the arrays bound before it (before_loops)."""
        ctx = self.ctx
        if ctx.loop_depth == 0:
            ctx.before_loops = frozenset(ctx.arrays)
        ctx.loop_depth += 1
        ctx.prange_depth += parallel
        try:
            yield
        finally:
            ctx.loop_depth -= 1
            ctx.prange_depth -= parallel
            if ctx.loop_depth == 0:
                ctx.before_loops = None

    def for_loop(self, s, out):
        if self.iteration_by_index(s, out):
            return
        it = s.iter
        # numba.prange means range with iterations in any order (reductions `s += ...`
        # included): the loop is marked parallel, and reverse/parallel.py runs it (and its
        # backward sweep) in parallel where that is safe, in order elsewhere
        if not (isinstance(it, ast.Call) and self.src.resolve(it.func) in (range, numba.prange)):
            raise self.error(s, "a for loop that is not over range(...)",
                             "Loop over indices: `for i in range(len(x)):` and read x[i].")
        if not isinstance(s.target, ast.Name):
            raise self.error(s, "a for loop with a tuple target",
                             "Loop over `range(...)` with a single index variable.")
        if it.keywords or not 1 <= len(it.args) <= 3:
            raise self.error(s, "range() with keywords or the wrong number of arguments",
                             "Call range with 1 to 3 positional arguments.")
        args = [self.atom(a, out) for a in it.args]
        lo, hi, st = ([ir.const(0)] + args + [ir.const(1)])[:3] if len(args) == 1 else \
            (args + [ir.const(1)])[:3]
        lo = self.bound(lo, s, out, "_lo")
        hi = self.bound(hi, s, out, "_hi")
        st = self.bound(st, s, out, "_st")
        target = self.local(s.target.id)
        body = []
        var = target
        with self.loop_body(parallel=self.src.resolve(it.func) is numba.prange):
            if s.target.id in assigned_user_names(s.body):
                var = self.fresh("_i")
                self.ctx.ints.add(var)          # (range counts in integers)
                self.emit_assign(body, target, ir.name(var))
            self.ctx.ints.add(target)
            self.ctx.bools.discard(target)
            body += self.block(s.body)
        self.origin = (self.loc.filename, s.lineno, self.loc.name)
        call = ast.Call(func=ir.name("range"), args=[lo, hi, st], keywords=[])
        if isinstance(st, ast.Constant) and st.value == 1:
            call.args = [hi] if isinstance(lo, ast.Constant) and lo.value == 0 else [lo, hi]
        node = ast.For(target=ir.store(var), iter=call, body=body or [ast.Pass()], orelse=[],
                       lineno=s.lineno)
        ir.annotate(node, user=True)    # a loop the user wrote (not one of vectorized code)
        ir.annotate(node, origin=self.origin)
        if self.src.resolve(it.func) is numba.prange:
            if any(ir.note(x, "message") for x in ir.walk_stmts(node.body)):
                raise self.error(s, "an MPI message inside a numba.prange loop",
                                 "Send and receive outside the parallel loop (threads would "
                                 "send in any order, and their answers could not be matched): "
                                 "use range, or exchange before or after the prange loop.")
            ir.annotate(node, parallel=True)
        node._bounds = (lo, hi, st)
        out.append(node)

    def counted_while(self, s):
        """`k = 0; while k < n: ...; k += 1` (the counter set to an integer constant just
        before, incremented once, as the last statement; n an integer the loop does not
        change; no break or continue) as the for loop it is: `for k in range(0, n)`, then
        k = max(0, n). Its trip count is then
        known when it starts (a CUDA kernel's tape gets a fixed size; a time loop can be
        checkpointed). Statements, or None for another while loop."""
        t = s.test
        if s.orelse or not s.body or not isinstance(t, ast.Compare) or len(t.ops) != 1:
            return None
        op, left, right = t.ops[0], t.left, t.comparators[0]
        if isinstance(op, (ast.Gt, ast.GtE)):
            op, left, right = (ast.Lt() if isinstance(op, ast.Gt) else ast.LtE()), right, left
        if not isinstance(op, (ast.Lt, ast.LtE)) or not isinstance(left, ast.Name):
            return None
        name, last, body = left.id, s.body[-1], s.body[:-1]
        one = ast.Constant(1)
        step = last.value if isinstance(last, ast.AugAssign) and \
            isinstance(last.op, ast.Add) and isinstance(last.target, ast.Name) and \
            last.target.id == name else \
            last.value.right if isinstance(last, ast.Assign) and len(last.targets) == 1 and \
            isinstance(last.targets[0], ast.Name) and last.targets[0].id == name and \
            isinstance(last.value, ast.BinOp) and isinstance(last.value.op, ast.Add) and \
            isinstance(last.value.left, ast.Name) and last.value.left.id == name else None
        if not (isinstance(step, ast.Constant) and step.value == 1 and type(step.value) is int):
            return None
        assigned = {n.id for x in body for n in ir.walk(x)
                    if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))}
        reads = {n.id for n in ir.walk(right) if isinstance(n, ast.Name)}
        if name in assigned or reads & assigned or self._loop_exits(body) or \
                any(isinstance(n, (ast.Call, ast.Subscript)) and not _is_size(n)
                    for n in ir.walk(right)):
            return None
        prev = self.previous
        known = prev.value if isinstance(prev, ast.Assign) and len(prev.targets) == 1 and \
            isinstance(prev.targets[0], ast.Name) and prev.targets[0].id == name and \
            isinstance(prev.value, ast.Constant) and type(prev.value.value) is int else None
        if known is None or name in self.src.params:
            return None     # (a counter that is surely an integer: `k = 0` just before)

        def surely_int(n):      # a parameter, or a local assigned once, typed int
            once = self.stores.get(n, 0) == (0 if n in self.src.params else 1)
            return once and n in self.src.locals and isinstance(self.local(n), str) and \
                self.local(n) in self.ctx.ints
        if not (isinstance(right, ast.Constant) and type(right.value) is int or _is_size(right)
                or isinstance(right, ast.Name) and (surely_int(right.id) or (
                    right.id not in self.src.locals and
                    type(self.src.resolve_name(right.id)) is int))):
            return None
        loc = dict(lineno=s.lineno, col_offset=s.col_offset)
        stop = right if isinstance(op, ast.Lt) else ast.BinOp(left=right, op=ast.Add(), right=one)
        start = ast.Constant(known.value)   # (`k = 0` just before: k's value at the start)
        return [
            ast.For(target=ast.Name(id=name, ctx=ast.Store()),
                    iter=ast.Call(func=ast.Name(id="range", ctx=ast.Load()),
                                  args=[copy.deepcopy(start), stop], keywords=[]),
                    body=body or [ast.Pass(**loc)], orelse=[], **loc),
            ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())],
                       value=ast.Call(func=ast.Name(id="max", ctx=ast.Load()),
                                      args=[copy.deepcopy(start), copy.deepcopy(stop)],
                                      keywords=[]), **loc)]

    def while_loop(self, s, out):
        body = []
        self.origin = (self.loc.filename, s.lineno, self.loc.name)
        cond = self.atom(s.test, body)
        if not (isinstance(cond, ast.Constant) and cond.value):
            # (`while True:` has no test: a loop left only by its break, return or raise)
            stop = self.fresh("_c")
            self.emit_assign(body, stop, ast.UnaryOp(op=ast.Not(), operand=cond))
            brk = ast.Break(lineno=s.lineno)
            ir.annotate(brk, origin=self.origin)
            node = ast.If(test=ir.name(stop), body=[brk], orelse=[], lineno=s.lineno)
            ir.annotate(node, origin=self.origin)
            body.append(node)
        with self.loop_body():
            body += self.block(s.body)
        loop = ast.While(test=ir.const(True), body=body, orelse=[], lineno=s.lineno)
        ir.annotate(loop, origin=(self.loc.filename, s.lineno, self.loc.name))
        out.append(loop)

    # expressions ---------------------------------------------------------
    def store_view(self, view, value, op, out, node, current=None):
        """`view = value` or `view op= value` elementwise. A value that reads the target
        array is computed into a new array first, as numpy computes the whole right-hand
        side before it assigns."""
        value = self.arrays.lazy_operand(value, out)
        if op is not None:
            cur = current or View(view.base, view.ndim, view.dims, view.fixed, view.shape,
                                  None, view.parent, view.contiguous)
            value = Op(("bin", op), [cur, self.arrays.as_lazy(value)],
                       self.arrays.broadcast([view.shape, self.arrays.as_lazy(value).shape], out,
                                             node))
        if isinstance(value, Lazy) and any(isinstance(leaf, View) and leaf.base == view.base
                                           and not _same_elements(leaf, view)
                                           and not _disjoint(leaf, view)
                                           for leaf in _leaves(value)):
            # x[::-1] = x, u[1:-1] = u[2:] + u[:-2], out[idx] += v (repeated indices): read
            # everything before writing
            value = self.arrays.lazy_operand(
                self.arrays.materialize(value, out, node, copy=True), out)
        self.arrays.store_elements(view, value, out, node)

    def operand(self, node, out):
        """An atom, or a Lazy array expression (fused into whatever consumes it)."""
        return self.arrays.lazy_operand(self.rhs(node, out), out)

    def operands(self, nodes, out):
        """Operands evaluated left to right. numpy computes an array expression when it is
        evaluated: one that a later operand could change by calling a helper that writes
        arrays (`(x + x) * h(x)`) is computed first (a view still reads the array when it is
        used, as numpy's views do)."""
        values = []
        for k, n in enumerate(nodes):
            v = self.operand(n, out)
            if isinstance(v, Op) and any(self.may_write(m) for m in nodes[k + 1:]):
                v = self.arrays.view_of(self.arrays.materialize(v, out, n).id, out)
            values.append(v)
        return values

    def may_write(self, node):
        """Whether evaluating `node` calls a helper (which may write arrays)."""
        for n in ir.walk(node):
            if isinstance(n, ast.Call):
                obj = self.src.resolve(n.func) if not isinstance(n.func, ast.Attribute) or \
                    self.src.resolve(n.func.value) is not MISSING else MISSING
                inner = unwrap(obj) if obj is not MISSING else None
                if isinstance(inner, types.FunctionType) and not _library_function(inner):
                    return True
        return False

    def atom(self, node, out):
        value = self.rhs(node, out)
        if isinstance(value, (Shape, TupleValue)):
            raise self.error(node, "a tuple used as a value",
                             "Use tuples only to unpack them into names (a, b = b, a).")
        return self.to_atom(out, value)

    def rhs(self, node, out):
        """Normalize an expression into an atom or a single primitive operation."""
        if isinstance(node, ast.Constant):
            return ir.const(node.value)
        if isinstance(node, ast.Name):
            return self.load_name(node)
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Add) and (
                    self._tuple_length(node.left, out) is not None or
                    self._tuple_length(node.right, out) is not None):
                return self.tuple_concatenation(node, out)
            if isinstance(node.op, (ast.Add, ast.Mult)):
                self.joined_list(node)
            left, right = self.operands([node.left, node.right], out)
            if isinstance(node.op, ast.MatMult):
                return self.arrays.matmul(left, right, out, node)
            if isinstance(left, Lazy) or isinstance(right, Lazy):
                return self.arrays.elementwise(("bin", node.op), [left, right], out, node)
            return self.binop(node.op, left, right, node)
        if isinstance(node, ast.UnaryOp):
            operand = self.operand(node.operand, out)
            if isinstance(operand, Lazy):
                if isinstance(node.op, ast.UAdd):
                    return operand
                if not isinstance(node.op, ast.USub):
                    raise self.error(node, "`not` on an array",
                                     "Use ~mask or np.logical_not(mask) for the elementwise "
                                     "not, np.where(cond, a, b) for elementwise choices.")
                return self.arrays.elementwise(("unary", node.op), [operand], out, node)
            if isinstance(node.op, ast.UAdd):
                return operand
            if isinstance(node.op, ast.Not) and isinstance(operand, ast.Constant):
                return ir.const(not operand.value)
            if isinstance(node.op, ast.USub) and isinstance(operand, ast.Constant) and \
                    isinstance(operand.value, int) and not isinstance(operand.value, bool):
                return ir.const(-operand.value)     # a[1:-1]: the bound is a constant
            return ast.UnaryOp(op=node.op, operand=operand)
        if isinstance(node, ast.Compare):
            return self.compare(node, out)
        if isinstance(node, ast.BoolOp):
            return self.boolop(node, out)
        if isinstance(node, ast.IfExp):
            return self.ifexp(node, out)
        if isinstance(node, ast.Call):
            return self.call(node, out)
        if isinstance(node, ast.Subscript):
            return self.subscript(node, out)
        if isinstance(node, ast.Attribute):
            return self.attribute(node, out)
        if isinstance(node, ast.Tuple):
            return TupleValue([self.tuple_item(e, out) for e in node.elts])
        if isinstance(node, ast.List):
            # a list of numbers is the array of them (numba's reflected list reads the same)
            if node.elts and not any(isinstance(e, (ast.List, ast.Tuple, ast.Starred))
                                     for e in node.elts):
                made = self.arrays.array_literal(node, out, bare=True)
                self.ctx.lists.add(made.id)     # (numba joins and repeats it: joined_list)
                return made
            if not node.elts and getattr(node, comprehensions.OF_TUPLES, False):
                raise self.error(node, "a list comprehension of tuples read other than as "
                                 "adjit reads a list of tuples",
                                 "adjit builds `pairs = [(i, v) for ...]`, a statement of "
                                 "the function's body, as the loops that append its tuples, "
                                 "and reads it by `for i, v in pairs`, `i, v = pairs[k]`, "
                                 "`pairs[k][0]` and `len(pairs)`; for an array of its "
                                 "numbers allocate np.empty((n, 2)) and fill its rows.")
            if not node.elts:
                raise self.error(node, "an empty list (a list built by .append) other "
                                 "than adjit builds one",
                                 "adjit builds `out = []` in the function's body appended to "
                                 "(out.append(number), or out.append((i, v)) of tuples "
                                 "written out) in one `for` loop after it, over ranges or "
                                 "arrays whose sizes that loop does not change, and read "
                                 "after the loop (a list of tuples by `for i, v in out`, "
                                 "`i, v = out[k]` or `out[k][0]`); otherwise build it with a "
                                 "list comprehension, [g(v) for v in x if c], or allocate "
                                 "np.empty(n) and fill it with a counter, out[k] = ...; "
                                 "k += 1, then use out[:k].")
            raise self.error(node, "a list literal (outside np.array) is not supported",
                             "Use np.array([a, b, c]) for an array of numbers.")
        raise AssertionError(type(node))

    def tuple_item(self, node, out):
        """An element of a tuple: an atom, or a view (`cur, nxt = nxt, cur` of views)."""
        value = self.rhs(node, out)
        if isinstance(value, ast.Name) and self.arrays.array_ndim(value) is not None:
            return self.arrays.view_of(value.id, out)
        if isinstance(value, View) and not has_take(value):
            return value
        if isinstance(value, TupleValue):
            return value        # ((W1, b1), (W2, b2)): read as the outer tuple's element
        if isinstance(value, Shape):
            raise self.error(node, "a shape inside a tuple", "Unpack the shape into names "
                             "first (n, m = a.shape).")
        return self.to_atom(out, value)

    def numpy_scalar(self, obj):
        """A numpy number of the program's globals, as numba freezes it: float64, int64 and
        bool_ as Python's numbers, other types converted to theirs (np.float32(c))."""
        if isinstance(obj, (np.float64, np.int64, np.bool_)):
            return ir.const(obj.item())
        if isinstance(obj, np.integer) or np.isfinite(obj):
            return ast.Call(func=ast.parse(self.ctx.env.spell(type(obj), "t"),
                                           mode="eval").body,
                            args=[ir.const(obj.item())], keywords=[])
        raise self.error(self.src.tree, f"the global number {obj!r} of type "
                         f"{type(obj).__name__}", "Use a float64 or a finite number.")

    def load_name(self, node):
        held = self.tuple_named(node.id)
        if held is not None:
            return held
        if bindings.view_name(self, node) is not None:
            return bindings.use_view(self, bindings.view_name(self, node), node)
        if node.id in self.src.locals:
            target = self.local(node.id)
            if isinstance(target, (FunctionValue, TypeOf, NoneValue, RecordValue,
                                   DtypeValue, EnumValue)):
                return target                  # a helper's parameter given a function
            if isinstance(target, str) and target in self.held:
                return self.held[target]       # e = math.exp; T = type(x)
            if isinstance(target, str):
                # a read of a name a loop may bind to a view later in its body
                # (check_loop_views: the next iteration would mean that view)
                self.view_uses.append((target, -1))
            if isinstance(target, str) and target in self.lazy:
                return self.lazy[target]
            return _copy(target) if not isinstance(target, str) else ir.name(target)
        obj = self.src.resolve_name(node.id)
        if obj is MISSING:
            if not any(isinstance(n, ast.Name) and n.id == node.id
                       for n in ast.walk(self.src.tree)):
                # a name of adjit's own (a lowering read its temporary as a user's name): a
                # bug, reported as an internal error (pipeline.run), not as the user's
                raise RuntimeError(f"a lowering read adjit's own '{node.id}' as a name of "
                                   "the program")
            raise self.error(node, f"the name '{node.id}' is not defined",
                             "Define it at module level before calling the gradient.")
        if isinstance(obj, (bool, int, float)) and not isinstance(obj, np.ndarray):
            return ir.const(obj)
        if isinstance(obj, (np.floating, np.integer, np.bool_)):
            return self.numpy_scalar(obj)      # FLOAT32_MAX = np.finfo(np.float32).max
        if isinstance(obj, np.ndarray):
            return ir.name(self.global_array(obj, node.id))
        dtype = dtype_constant(obj)
        if dtype is not None:
            return DtypeValue(dtype, node.id)  # kernel(values, result_dtype)
        if callable(obj) and not isinstance(obj, type):
            return FunctionValue(obj, node.id)
        if isinstance(obj, tuple) and (held := self.global_tuple(obj, node.id)) is not None:
            return held         # interpolation.py's `grid = UCGrid((0.0, 1.0, 10))`
        if plain_enum(obj):
            return self.enum_value(obj, node)      # DEFAULT_TYPE = OptionTypes.CALL
        raise self.error(node, f"the global '{node.id}' ({type(obj).__name__}) used as a value",
                         "Use numbers, numpy arrays, or call it as a function.")

    def shape_of(self, node, out):
        """The Shape of an array-valued expression (a name, a view, an expression)."""
        if isinstance(node, ast.Name) and bindings.view_name(self, node) is None:
            obj = None if node.id in self.src.locals else self.src.resolve_name(node.id)
            if node.id in self.src.params and len(self.ctx.stack) == 1 and \
                    self.ctx.typed_args and \
                    self.arrays.array_ndim(ir.name(self.local(node.id))) is None:
                raise self.error(node, f"the shape of `{node.id}`, which is not an array "
                                 "(the argument passed is a number)", "Ask arrays for their "
                                 "shape; pass an array (np.array([x])) for a 1-element one.")
            if node.id in self.src.locals or isinstance(obj, np.ndarray):
                arr = self.array_name(node)
                if arr not in self.lazy:
                    return Shape(arr, ndim=self.arrays.array_ndim(ir.name(arr)))
        value = self.operand(node, out)
        if not isinstance(value, Lazy) or isinstance(value, Scalar):
            raise self.error(node, f"the shape of `{ast.unparse(node)}`, which is not an array",
                             "Ask arrays for their shape.")
        return Shape(atoms=[ir.const(1) if a is ONE else a for a in value.shape])

    def field_as_index(self, node):
        """`p.alpha` of a named tuple `p` (`p.inner.x`, `p[1].x`, a helper's parameter given
        one) as the index `p[0]` numba reads it as; None for any other node."""
        if not isinstance(node, ast.Attribute):
            return None
        base = self.field_as_index(node.value) or node.value
        held = self.named_tuple_held(base)
        if held is None:
            return None
        if node.attr not in held.fields:
            raise self.error(node, f"the attribute `.{node.attr}` of a named tuple with the "
                             f"fields {', '.join(held.fields)}", "Read one of its fields "
                             "(numba's named tuples have no other attributes adjit reads).")
        return ast.copy_location(ast.Subscript(value=base, slice=ir.const(
            held.fields.index(node.attr)), ctx=ast.Load()), node)

    def named_tuple_held(self, base):
        """The named TupleValue a name or a tuple's element (`p`, `p[1]`) holds, else
        None."""
        held = self.tuple_named(base.id) if isinstance(base, ast.Name) else \
            self.tuple_element(base) if isinstance(base, ast.Subscript) else None
        return held if isinstance(held, TupleValue) and held.fields is not None else None

    def field_by_name(self, node):
        """`p['x1']`: a field of a record passed to a helper (`run(params[i])`), which adjit
        holds as a named tuple of its fields (normalize/record_arrays.py), read by position
        as numba reads a record's field; anything else indexed by a string is refused."""
        base = node.value
        held = self.named_tuple_held(base)
        name = node.slice.value
        if held is None:
            raise self.error(node, f"the index {name!r} of `{ast.unparse(base)}`, which is "
                             "not a record", "Index arrays by numbers; read a record "
                             "array's field as data['x'] or data[i]['x'].")
        if name not in held.fields:
            raise self.error(node, f"the field {name!r} of a record with the fields "
                             f"{', '.join(held.fields)}", "Read one of its fields.")
        return ast.copy_location(ast.Subscript(value=base, slice=ir.const(
            held.fields.index(name)), ctx=node.ctx), node)

    def type_limit(self, node):
        """`np.iinfo(np.intp).max`, `np.finfo(np.float64).eps`, `np.finfo(x.dtype).tiny`, ...
        of a type written out or an array's dtype: the number numba folds it to (a numpy
        float32 for float32's); None for any other node."""
        call = node.value
        if not (isinstance(call, ast.Call) and len(call.args) == 1 and not call.keywords):
            return None
        info = self.src.resolve(call.func)
        if info is not np.iinfo and info is not np.finfo:
            return None
        kind = self.src.resolve(call.args[0])
        if kind is MISSING:     # np.finfo(x.dtype), np.finfo(dt) of a name holding one
            kind = self.dtype_of(call.args[0])
            if kind is None:
                return None
        try:
            value = getattr(info(kind), node.attr)
        except (TypeError, ValueError, AttributeError):
            return None
        if isinstance(value, np.floating) and not isinstance(value, np.float64):
            return value        # (a float32 number, as numba's: np.float32(c))
        if isinstance(value, (np.integer, int)) and not isinstance(value, bool):
            return int(value)
        if isinstance(value, (np.floating, float)):
            return float(value)
        return None

    def attribute(self, node, out):
        member = self.src.enum_member(node)
        if member is not None:
            return self.enum_value(member, node)
        held = self.enum_of(node.value) if node.attr == "value" else None
        if held is not None:
            return held.atom        # `option_type.value`
        held = self.int_enum_argument(node.value) if node.attr == "value" else None
        if held is not None:
            return held             # `mode.value` of an argument given an IntEnum's member
        field = self.field_as_index(node)
        if field is not None:
            return self.subscript(field, out)
        limit = self.type_limit(node)
        if limit is not None:
            return self.numpy_scalar(limit) if isinstance(limit, np.generic) else \
                ir.const(limit)
        if isinstance(node.value, ast.Call) and node.attr not in _ARRAY_ATTRIBUTES:
            # a field of the named tuple a call returns: `newton(f, x0).root`
            held = self.rhs(node.value, out)
            if isinstance(held, TupleValue) and held.fields is not None:
                if node.attr not in held.fields:
                    raise self.error(node, f"the attribute `.{node.attr}` of a named tuple "
                                     f"with the fields {', '.join(held.fields)}",
                                     "Read one of its fields.")
                return held.items[held.fields.index(node.attr)]
        if node.attr == "shape" and not self.is_module(node.value):
            return self.shape_of(node.value, out)
        if node.attr == "T":
            return self.arrays.transpose(self.operand(node.value, out), out)
        if node.attr == "real" and self.src.resolve(node.value) is MISSING:
            # every number here is real (complex values are refused where they are made):
            # numba's `a.real` of a float array is the array itself, of a number the number
            return self.operand(node.value, out)
        if node.attr == "imag" and self.src.resolve(node.value) is MISSING:
            # numba's `x.imag` of a real number is 0 (lenstronomy's cdot(a, b) given floats),
            # of a float array an array of zeros
            v = self.operand(node.value, out)
            if isinstance(v, View) and self.ctx.arrays.get(v.base, (0, ""))[1] == "f":
                return self.arrays.elementwise(("call", "where"),
                                               [ir.const(True), ir.const(0.0), v], out, node)
            if isinstance(v, Lazy) and not isinstance(v, Scalar):
                raise self.error(node, "the attribute `.imag` of an array that is not a "
                                 "float array held in a name (adjit's numbers are real)",
                                 "Write what it is for a real value: np.zeros_like(a).")
            atom = v.atom if isinstance(v, Scalar) else v
            whole = (isinstance(atom, ast.Constant) and isinstance(atom.value, int)) or (
                isinstance(atom, ast.Name) and (atom.id in self.ctx.ints or
                                                atom.id in self.ctx.bools))
            return ir.const(0 if whole else 0.0)
        if node.attr in ("size", "ndim") and not self.is_module(node.value):
            shape = self.shape_of(node.value, out)
            if shape.ndim is None:
                raise self.error(node, f"`.{node.attr}` of an array whose dimensions are not "
                                 "known", "Pass example arguments (adjit.show(f, stage, *args)).")
            if node.attr == "ndim":
                return ir.const(shape.ndim)
            return self.size_of([self.to_atom(out, shape.item(k), "_n")
                                 for k in range(shape.ndim)], out)
        cu = self.cuda_intrinsic(node)
        if cu is not None:
            part, _, axis = cu.partition(".")
            if part in _THREAD_INDICES and axis in ("x", "y", "z"):
                return _cuda_attribute(part, axis)      # cuda.threadIdx.x, ...: integers
        obj = self.src.resolve(node)
        if obj is not MISSING and isinstance(obj, (int, float)):
            return ir.const(float(obj) if isinstance(obj, float) else obj)
        if obj is not MISSING and isinstance(obj, (np.floating, np.integer, np.bool_)):
            return self.numpy_scalar(obj)
        dtype = None if obj is MISSING else dtype_constant(obj)
        if dtype is not None:
            return DtypeValue(dtype, ast.unparse(node))     # np.float64 passed to a helper
        if node.attr == "dtype" and obj is MISSING:
            dtype = self.dtype_of(node)
            if dtype is not None:
                return DtypeValue(dtype, ast.unparse(node))     # dt = x.dtype
        if obj is not MISSING and callable(obj) and not isinstance(obj, type):
            return FunctionValue(obj, ast.unparse(node))         # e = math.exp
        raise self.error(node, f"the attribute `.{node.attr}`",
                         "Use elements a[i], a.shape[k], len(a), or constants like math.pi.")

    def dtype_of(self, node):
        """The numpy dtype of a name holding one (`dt = x.dtype`, a helper's parameter given
        a dtype) or of `x.dtype` for an array whose dtype adjit knows (calls.array_dtype);
        else None."""
        if isinstance(node, ast.Attribute) and node.attr == "dtype" and \
                isinstance(node.value, ast.Name):
            return self.calls.array_dtype(node.value)
        if not (isinstance(node, ast.Name) and node.id in self.src.locals):
            return None
        target = self.local(node.id)
        if isinstance(target, str):
            target = self.held.get(target)
        return target.dtype if isinstance(target, DtypeValue) else None

    def is_module(self, node):
        obj = self.src.resolve(node)
        return isinstance(obj, types.ModuleType)

    def size_of(self, shape, out):
        """The number of elements of an array of this shape (size atoms, ONE for 1)."""
        size = ir.const(1)
        for n in shape:
            if n is None or _is_one(n):
                continue
            size = n if _is_one(size) else \
                self.to_atom(out, ast.BinOp(left=size, op=ast.Mult(), right=n), "_n")
        return size

    def joined_list(self, node):
        """Refuse `+` or `*` of a list written out that reaches here under another name: a
        helper's parameter given one (numba's `+` joins lists and `*` repeats them, where the
        array adjit reads the list as adds and multiplies each element; normalize/sugar.py
        refuses those of the function's own names)."""
        for side in (node.left, node.right):
            if isinstance(side, ast.Name) and self.holds_list(side):
                what = "`+` (joining)" if isinstance(node.op, ast.Add) else "`*` (repeating)"
                raise self.error(node, f"{what} of a list passed as `{side.id}` (numba's `+` "
                                 "joins lists and `*` repeats them; adjit reads a list as the "
                                 "array of its numbers, whose `+` and `*` act on each "
                                 "element)", "Pass an array (np.array([...])) and join arrays "
                                 "with np.concatenate((a, b)), repeat them with np.tile.")

    def holds_list(self, node):
        """Whether `node` is a list written out (`[a, b]`), or a name holding the array adjit
        reads one as (bound to it, or a helper's parameter given it)."""
        if isinstance(node, ast.List):
            return True
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            return self.holds_list(node.value)      # (a list's slice: appends' v_buf[:v_n])
        if not (isinstance(node, ast.Name) and node.id in self.src.locals):
            return False
        target = self.local(node.id)
        name = target.id if isinstance(target, ast.Name) else target
        if not isinstance(name, str):
            return False
        view = getattr(self.views.get(name), "view", None)
        if isinstance(view, View):
            name = view.base        # `v = [a, b]`, a helper's `v`, `out[:n]` of appends
        return name in self.ctx.lists

    def binop(self, op, left, right, node):
        return ast.BinOp(left=left, op=op, right=right)

    def enum_value(self, member, node):
        """The EnumValue of a plain Enum's member named in the code (`OptionTypes.CALL`)."""
        if not enum_member(member):
            raise self.error(node, f"the enum member `{ast.unparse(node)}`, whose value "
                             f"{member.value!r} is not a number", "Give the enum's members "
                             "int or float values.")
        return EnumValue(ir.const(member.value), type(member), ast.unparse(node))

    def int_enum_argument(self, node):
        """The name of the argument given an IntEnum's member (passed its int) that `node`
        names, in the function or as a helper's parameter it was passed to; else None."""
        if not isinstance(node, ast.Name) or node.id in assigned_names(self.src.tree):
            return None         # (given a member, then bound to something else)
        name = self.local(node.id) if node.id in self.src.locals else node.id
        if isinstance(name, ast.Name):
            name = name.id
        return ir.name(name) if name in self.ctx.int_enums else None

    def enum_of(self, node):
        """The EnumValue `node` (a name or `Class.MEMBER`) holds, without code; else None."""
        if isinstance(node, ast.Attribute):
            member = self.src.enum_member(node)
            return None if member is None else self.enum_value(member, node)
        if isinstance(node, ast.Name) and node.id in self.src.locals:
            target = self.local(node.id)
            if isinstance(target, str):
                target = self.held.get(target)
            return target if isinstance(target, EnumValue) else None
        if isinstance(node, ast.Name):
            obj = self.src.resolve_name(node.id)
            if plain_enum(obj):
                return self.enum_value(obj, node)   # a module-level name of a member
        return None

    def enum_compare(self, node, out):
        """A comparison of enum members, as numba makes it: `==`, `!=` (`is`, `is not`)
        between members of one class, which are equal where their values are; None where
        no operand is a member."""
        sides = [self.enum_of(e) for e in [node.left] + node.comparators]
        if all(e is None for e in sides):
            return None
        held = next(e for e in sides if e is not None)
        other = next((e for e in sides if e is None or e.cls is not held.cls), None)
        if len(node.ops) != 1 or not isinstance(node.ops[0], (ast.Eq, ast.NotEq, ast.Is,
                                                               ast.IsNot)) or \
                any(e is None for e in sides) or other is not None:
            against = "a member of another class" if other is not None and \
                all(e is not None for e in sides) else "something that is not a member" \
                if any(e is None for e in sides) else "an operator other than == or !="
            raise self.error(node, f"the enum member `{held.spelled}` (of "
                             f"{held.cls.__name__}) compared with {against}",
                             "numba compares a member with members of its own class (==, "
                             "!=); compare `.value` with a number.")
        left, right = sides[0].atom, sides[1].atom
        eq = isinstance(node.ops[0], (ast.Eq, ast.Is))
        if isinstance(left, ast.Constant) and isinstance(right, ast.Constant):
            return ir.const((left.value == right.value) == eq)
        return ast.Compare(left=left, ops=[ast.Eq() if eq else ast.NotEq()],
                           comparators=[right])

    def compare(self, node, out):
        enums = self.enum_compare(node, out)
        if enums is not None:
            return enums
        if any(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
            if len(node.ops) > 1:
                raise self.error(node, "an `is` test in a chained comparison",
                                 "Test `x is None` on its own.")
            return self.is_none(node, out)
        if len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.NotEq)) and any(
                isinstance(e, ast.Constant) and e.value is None
                for e in (node.left, node.comparators[0])):
            return self.is_none(node, out)      # `w == None`, as numba decides it too
        if len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
            same = self.tuple_equality(node, out)
            if same is not None:
                return same
        if len(node.ops) == 1:
            left, right = self.operands([node.left, node.comparators[0]], out)
            if isinstance(left, Lazy) or isinstance(right, Lazy):
                return self.arrays.elementwise(("cmp", node.ops[0]), [left, right], out, node)
            if isinstance(left, ast.Constant) and isinstance(right, ast.Constant):
                return ir.const(_constant_compare(node.ops[0], left.value, right.value))
            return ast.Compare(left=left, ops=node.ops, comparators=[right])
        left = self.operand(node.left, out)
        if isinstance(left, Lazy):
            raise self.error(node, "a chained comparison of arrays",
                             "Compare arrays one pair at a time inside np.where.")
        result = self.fresh()
        pending = []
        for op, comp in zip(node.ops, node.comparators):
            pending.append((op, comp))
        return self._chain(left, pending, result, out, node)

    def tuple_equality(self, node, out):
        """`a.shape == b.shape` (and !=, of shapes, tuple names and literal tuples): item by
        item, as Python compares tuples (of different lengths: unequal); None when neither
        side is a tuple."""
        sides = [node.left, node.comparators[0]]
        lengths = [self._tuple_length(e, out) for e in sides]
        if lengths == [None, None]:
            return None
        eq = isinstance(node.ops[0], ast.Eq)
        if None in lengths:
            raise self.error(node, "a tuple compared with something that is not one",
                             "Compare shapes with shapes: a.shape == b.shape, or items: "
                             "a.shape[0] == n.")
        if lengths[0] != lengths[1] or not lengths[0]:
            return ir.const(eq == (lengths[0] == lengths[1]))

        def item(e, k):
            if isinstance(e, ast.Tuple):
                return e.elts[k]
            return ast.Subscript(value=copy.deepcopy(e), slice=ast.Constant(k), ctx=ast.Load())
        parts = [ast.Compare(left=item(sides[0], k), ops=[ast.Eq()],
                             comparators=[item(sides[1], k)]) for k in range(lengths[0])]
        test = parts[0] if len(parts) == 1 else ast.BoolOp(op=ast.And(), values=parts)
        if not eq:
            test = ast.UnaryOp(op=ast.Not(), operand=test)
        return self.rhs(ast.copy_location(ast.fix_missing_locations(
            ast.copy_location(test, node)), node), out)

    def tuple_concatenation(self, node, out):
        """`a.shape + (2, 2)`: a tuple of both sides' items (shapes numba code builds)."""
        items = []
        for side in (node.left, node.right):
            value = self.rhs(side, out)
            if isinstance(value, Shape):
                if value.ndim is None:
                    raise self.error(node, "a shape of unknown length joined to a tuple",
                                     "Join shapes of arrays adjit knows the dimensions of.")
                items += [value.item(k) for k in range(value.ndim)]
            elif isinstance(value, TupleValue):
                items += list(value.items)
            else:
                raise self.error(node, "a tuple added to something that is not a tuple",
                                 "Join tuples with tuples: a.shape + (2,).")
        return TupleValue(items)

    def _tuple_length(self, e, out):
        if isinstance(e, ast.Tuple):
            return len(e.elts)
        if isinstance(e, ast.Name):
            held = self.tuple_named(e.id)
            if held is not None:
                return len(held.items) if isinstance(held, TupleValue) else held.ndim
            return None
        if isinstance(e, ast.Attribute) and e.attr == "shape" and \
                isinstance(e.value, ast.Name) and self._array_name(e.value):
            return self.shape_of(e.value, out).ndim
        return None

    def is_none(self, node, out):
        """`w is None`, `w is not None` (or `w == None`, `w != None`): a constant, as numba
        makes it (an optional argument left out holds None; any number or array is not
        None)."""
        left, right = node.left, node.comparators[0]
        if isinstance(left, ast.Constant) and left.value is None:
            left, right = right, left
        if not (isinstance(right, ast.Constant) and right.value is None):
            op = "is not" if isinstance(node.ops[0], ast.IsNot) else "is"
            raise self.error(node, f"`{op}` between values other than None",
                             "Compare numbers with == and test optional arguments with "
                             "`is None`.")
        held = self.load_name(left) if isinstance(left, ast.Name) else self.rhs(left, out)
        none = isinstance(held, NoneValue) or \
            (isinstance(held, ast.Constant) and held.value is None)
        return ir.const(none == isinstance(node.ops[0], (ast.Is, ast.Eq)))

    def _chain(self, left, pending, result, out, node):
        op, comp = pending[0]
        right = self.operand(comp, out)
        if isinstance(right, Lazy) and not isinstance(right, Scalar):
            raise self.error(node, "a chained comparison of arrays",
                             "Compare arrays one pair at a time inside np.where.")
        right = self.to_atom(out, right)
        self.emit_assign(out, result, ast.Compare(left=left, ops=[op], comparators=[right]))
        if len(pending) > 1:
            inner = []
            self._chain(right, pending[1:], result, inner, node)
            self.emit_if(out, ir.name(result), inner, [])
        return ir.name(result)

    def boolop(self, node, out):
        # values whose truth is known from numbers and module-level flags decide here, as in
        # constant_test's `if`: `True and v` is v, `False and v` is False (v never runs)
        values = []
        for value in node.values:
            taken = self.constant_test(value) if value is not node.values[-1] else None
            if taken is None:
                values.append(value)
            elif taken != isinstance(node.op, ast.And):
                values.append(value)        # decides: `False and ...`, `True or ...`
                break
        if len(values) == 1:
            return self.atom(values[0], out)
        node = ast.BoolOp(op=node.op, values=values)
        self.flush_before(node, out)     # the later values are evaluated on one path only
        result, started = self.fresh(), False
        for k, value in enumerate(node.values):
            if not started:
                atom = self.atom(value, out)
                if k == len(node.values) - 1:
                    return atom
                if isinstance(atom, ast.Constant) and isinstance(atom.value, bool):
                    # decided where the code is made (`x.ndim == 1 and y.ndim == 1`, `w is
                    # None or ...`), as numba prunes it: the rest never runs, or decides
                    if atom.value != isinstance(node.op, ast.And):
                        return atom
                    continue
                started = True
                self.emit_assign(out, result, atom)
                continue
            rest = []
            self.emit_assign(rest, result, self.atom(value, rest))
            if isinstance(node.op, ast.And):
                self.emit_if(out, ir.name(result), rest, [])
            else:
                self.emit_if(out, ir.name(result), [], rest)
        return ir.name(result)

    def ifexp(self, node, out):
        if (taken := self.constant_test(node.test)) is not None:
            # only the value chosen is code, as for a constant `if` (numba prunes the other
            # branch in one sweep and maybe not in the other)
            return self.atom(node.body if taken else node.orelse, out)
        self.flush_before(node, out)     # each branch is evaluated on one path only
        cond = self.atom(node.test, out)
        result = self.fresh()
        body, orelse = [], []
        self.emit_assign(body, result, self.atom(node.body, body))
        self.emit_assign(orelse, result, self.atom(node.orelse, orelse))
        planned = joins.plan(self, self.views, [self.views, self.views], [body, orelse], {})
        self.emit_if(out, cond, body, orelse)
        if not isinstance(cond, ast.Constant):
            joins.join_arrays(self, [out[-1].body, out[-1].orelse], out, planned)
        return ir.name(result)

    def global_tuple(self, obj, hint):
        """A module-level tuple of numbers, arrays and such tuples as the TupleValue of its
        items (numba freezes it as a constant; a named tuple keeps its fields); None where
        an item is anything else."""
        items = []
        for k, v in enumerate(obj):
            if isinstance(v, (bool, int, float, np.integer, np.floating, np.bool_)):
                items.append(ir.const(v.item() if isinstance(v, np.generic) else v))
            elif isinstance(v, np.ndarray):
                items.append(ir.name(self.global_array(v, f"{hint}_{k}")))
            elif isinstance(v, tuple) and (inner := self.global_tuple(v, f"{hint}_{k}")):
                items.append(inner)
            else:
                return None
        return TupleValue(items, getattr(type(obj), "_fields", None))

    def global_array(self, obj, hint):
        """The generated name of a module-level numpy array, noted as an array (its rank
        and dtype) so that views and loops over it know its dimensions."""
        if obj.dtype.kind == "c":
            # (numba would compute with its complex values; adjit's numbers are real)
            raise error_at(self.origin, f"the module-level array '{hint}' of complex numbers "
                           f"({obj.dtype})", "adjit differentiates real-valued code: pass its "
                           "real and imaginary parts as float arrays (a.real.copy(), "
                           "a.imag.copy()).")
        spelled = self.ctx.env.spell(obj, hint)
        self.ctx.arrays[spelled] = (obj.ndim, {"f": "f", "b": "b"}.get(obj.dtype.kind, "i"))
        self.ctx.globals.setdefault(spelled, hint)
        return spelled

    def array_name(self, node):
        if isinstance(node, ast.Name) and node.id in self.src.locals:
            target = self.local(node.id)
            if isinstance(target, ast.Name):
                return target.id
            if isinstance(target, str):
                self.view_uses.append((target, -1))     # as in load_name
                return target
        if isinstance(node, ast.Name):
            obj = self.src.resolve_name(node.id)
            if isinstance(obj, tuple):      # a module-level tuple of numbers: numba freezes
                obj = _tuple_array(obj)     # it; indexed, it reads as an array would
            if isinstance(obj, np.ndarray):
                return self.global_array(obj, node.id)
        if isinstance(node, ast.Name) and isinstance(self.subst.get(node.id), NoneValue):
            raise self.error(node, "indexing a value that is not a number or an array "
                             f"(`{node.id}` is None)", "Pass numbers, arrays and tuples of "
                             f"them, or test it first: `if {node.id} is None:`.")
        held = self.tuple_named(node.id) if isinstance(node, ast.Name) else None
        if isinstance(held, TupleValue):
            raise self.error(node, f"writing into `{node.id}`, a tuple (or a record passed "
                             "to a helper, which adjit reads as a tuple of its fields)",
                             "Compute a new value instead; write a record's fields in the "
                             "record array itself (data[i]['x'] = ...).")
        raise self.error(node, "indexing something that is not an array variable",
                         "Index numpy arrays held in variables: a[i] or a[i, j].")

    def indices(self, sub, out):
        idx = sub.slice
        elts = idx.elts if isinstance(idx, ast.Tuple) else [idx]
        atoms = []
        for e in elts:
            if isinstance(e, ast.Slice):
                raise self.error(e, "a slice (a[i:j]) is not supported",
                                 "Index single elements in a loop (a[i]).")
            atoms.append(self.atom(e, out))
        return ast.Tuple(elts=atoms, ctx=ast.Load()) if len(atoms) != 1 else atoms[0]

    def subscript(self, node, out):
        field = self.field_as_index(node.value)
        if field is not None:           # p.weights[0], p.x[i] of a named tuple p
            node = ast.copy_location(ast.Subscript(value=field, slice=node.slice,
                                                   ctx=node.ctx), node)
        if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
            node = self.field_by_name(node)
        held = self.tuple_named(node.value.id) if isinstance(node.value, ast.Name) else None
        if held is None and isinstance(node.value, ast.Subscript):
            held = self.tuple_element(node.value)           # p[1][0] of nested tuples
        if isinstance(held, Shape) or \
                (isinstance(node.value, ast.Attribute) and node.value.attr == "shape"):
            shape = held if held is not None else self.attribute(node.value, out)
            if isinstance(node.slice, ast.Slice) and shape.ndim is not None:
                # a.shape[:2], a.shape[1:]: the sizes of those dimensions (a shape tuple)
                picked = ir.constant_slice(node.slice)
                if picked is None:
                    raise self.error(node, "a shape sliced with bounds that are not "
                                     "constants", "Slice the shape with constants "
                                     "(a.shape[:2]).")
                picked = range(shape.ndim)[picked]
                return Shape(atoms=[self.to_atom(out, shape.item(k), "_n") for k in picked])
            k = self.atom(node.slice, out)
            if shape.ndim is not None and isinstance(k, ast.Constant) and \
                    isinstance(k.value, int) and -shape.ndim <= k.value < shape.ndim:
                return shape.item(k.value % shape.ndim)
            if shape.array is None:
                raise self.error(node, "a shape indexed by a variable or out of range",
                                 f"Index the shape with a constant from 0 to {shape.ndim - 1}.")
            return ast.Subscript(value=ast.Attribute(value=ir.name(shape.array), attr="shape",
                                                     ctx=ast.Load()),
                                 slice=k, ctx=ast.Load())
        base = held
        if isinstance(node.value, ast.Call):
            base = self.rhs(node.value, out)
        if isinstance(base, TupleValue) and isinstance(node.slice, ast.Slice):
            picked = ir.constant_slice(node.slice)
            if picked is None:
                raise self.error(node, "a tuple sliced by variables",
                                 "Slice it with constants.")
            return TupleValue(base.items[picked])     # args[1:]
        if isinstance(base, TupleValue):
            # an element of a tuple: np.nonzero(x > 0.5)[0], r[1] of r = step(x)
            k = ir.constant_int(node.slice)
            if k is None and isinstance(node.slice, ast.Constant):
                k = node.slice.value
            if k is None and base.items and not any(isinstance(v, View) for v in base.items):
                return self.pick(base.items, self.atom(node.slice, out), out)
            if not isinstance(k, int) or not -len(base.items) <= k < len(base.items):
                raise self.error(node, "indexing a tuple with other than a constant in range",
                                 f"Index it from 0 to {len(base.items) - 1}.")
            return base.items[k]
        what, arr, idx = self.resolve_subscript(node.value, node.slice, out, node, base)
        if what == "view":
            return arr
        key = (arr, ast.unparse(idx))
        cached = self.loads.get(key)
        if cached is not None and cached[0] is out:
            return ir.name(cached[1])
        t = self.to_atom(out, ast.Subscript(value=ir.name(arr), slice=idx, ctx=ast.Load()))
        self.loads[key] = (out, t.id, set(ir.atom_names(ir.index_atoms(
            ast.Subscript(value=ir.name(arr), slice=idx)))))
        return t

    def resolve_subscript(self, base_node, sl, out, node, base=None):
        """("elem", array name, index node) for one element, or ("view", View, None);
        `base`: the base's value when the caller evaluated it already."""
        plain = view = None
        if isinstance(base_node, ast.Name) and bindings.view_name(self, base_node) is not None:
            view = bindings.use_view(self, bindings.view_name(self, base_node), base_node)
        elif isinstance(base_node, ast.Name):
            plain = self.array_name(base_node)
        else:
            base = self.operand(base_node, out) if base is None else \
                self.arrays.lazy_operand(base, out)
            if isinstance(base, View) and not has_take(base):
                view = base     # x[1:][0], x.T[i]: the same memory (a gather is a copy)
            elif isinstance(base, Lazy) and not isinstance(base, Scalar):
                view = self.arrays.view_of(self.arrays.materialize(base, out, node).id, out)
            else:
                raise self.error(node, "indexing something that is not an array",
                                 "Index numpy arrays: a[i], a[i, j], a[1:], a[idx].")
        items = self.indexing.index_items(sl, out, node)
        if plain is not None:
            ndim = self.arrays.array_ndim(ir.name(plain))
            if all(it[0] == "int" for it in items) and (ndim is None or len(items) == ndim):
                return "elem", plain, _index_node([it[1] for it in items])
            view = self.arrays.view_of(plain, out)
        w = self.indexing.index_view(view, items, out, node)
        if not w.shape and not has_take(w):
            return "elem", w.base, _index_node(self.indexing.map_index(w, [], None, out))
        return "view", w, None

    def cuda_intrinsic(self, func):
        """"grid", "gridsize", "atomic.add" for `cuda.<that>` (cuda = numba.cuda), else None.
        Resolved by name: outside the simulator numba.cuda has no Python attribute `grid`."""
        chain = []
        while isinstance(func, ast.Attribute):
            chain.append(func.attr)
            func = func.value
        if not isinstance(func, ast.Name) or not chain:
            return None
        base = self.src.resolve_name(func.id)
        if not (isinstance(base, types.ModuleType) and base.__name__.startswith("numba.cuda")
                or type(base).__module__.startswith("numba.cuda.simulator")):
            return None     # (the simulator swaps the module for a fake one in kernels)
        return ".".join(reversed(chain))

    def raise_statement(self, s, out):
        """`raise ValueError("...")` (or `raise ValueError`): a builtin exception of
        vec.RAISABLE with no argument or one string literal, kept in generated code as
        vec.raise_error(kind, message), which raises it where the statement would. An
        f-string message, vec.raise_error(kind, its text, RAISE_FORMATTED, *its values),
        and a message followed by values, (kind, message, RAISE_WITH_VALUES, *values), are
        written back as the user wrote them (codegen/emit.py). It has no derivative; a path
        that raises returns nothing to differentiate."""
        what = ast.unparse(s)
        if self.ctx.cuda:
            raise self.error(s, "a `raise` statement in CUDA code is not supported",
                             "Kernels and device functions cannot raise on the GPU: check "
                             "the inputs on the host before the launch.")
        if s.exc is None or s.cause is not None:
            raise self.error(s, f"`{what}` is not supported" if s.exc is not None else
                             "a bare `raise` (re-raising) is not supported",
                             "Raise a new exception: raise ValueError(\"...\").")
        call = s.exc if isinstance(s.exc, ast.Call) else None
        cls = self.src.resolve(call.func if call is not None else s.exc)
        kind = next((k for k, c in enumerate(vec.RAISABLE) if c is cls), None)
        if kind is None and isinstance(cls, type) and issubclass(cls, Exception):
            # the library's own exception class (FinancePy's `raise FinError("...")`, whose
            # __init__ keeps the message), which numba raises as it raises a builtin one:
            # the interpreter makes the exception from the class and its arguments when it
            # is raised, its own __init__ included. Named by its global in generated code.
            kind = self.ctx.env.spell(cls, cls.__name__)
        if kind is None:
            names = ", ".join(k.__name__ for k in vec.RAISABLE)
            raise self.error(s, f"`{what}`: raising "
                             f"{getattr(cls, '__name__', ast.unparse(s.exc))} is not supported",
                             f"Raise one of {names} (with a message saying which error).")
        args = call.args if call is not None else []
        first = args[0] if args else None
        pieces = self.joined_strings(first) if isinstance(first, ast.BinOp) else None
        if pieces is not None:
            # `"n must be positive, not " + str(n)`: the f-string it spells
            first = ast.copy_location(ast.JoinedStr(values=pieces), first)
        if call is not None and call.keywords or first is not None and not (
                isinstance(first, ast.Constant) and isinstance(first.value, str) or
                isinstance(first, ast.JoinedStr)):
            raise self.error(s, f"`{what}`: an exception message that is not a string "
                             "literal or an f-string is not supported",
                             f"Give the message as a string: raise {cls.__name__}(\"...\") "
                             "or an f-string, then any numbers: raise "
                             f"{cls.__name__}(\"x must be positive\", x).")
        if first is None or isinstance(first, ast.Constant) and len(args) == 1:
            message = first.value if first is not None else ""
            return ir.annotate(ast.Expr(value=self.calls.call_of(
                vec.raise_error, [ir.const(kind), ast.Constant(value=message)])),
                origin=self.origin, raises=True)
        if isinstance(first, ast.JoinedStr):
            if len(args) > 1:
                raise self.error(s, f"`{what}`: an f-string message followed by other "
                                 "arguments is not supported",
                                 "Put the values in the f-string.")
            parts, values = [""], []
            for piece in first.values:
                if isinstance(piece, ast.Constant):
                    parts[-1] += piece.value
                elif piece.conversion != -1 or piece.format_spec is not None:
                    raise self.error(s, f"`{what}`: a conversion or format spec in an "
                                     "exception's f-string (numba formats neither)",
                                     "Write the value plainly: {x}.")
                else:
                    values.append(self.atom(piece.value, out))
                    parts.append("")
            mode, text = vec.RAISE_FORMATTED, vec.RAISE_PARTS.join(parts)
        else:
            values = [self.atom(a, out) for a in args[1:]]
            mode, text = vec.RAISE_WITH_VALUES, first.value
        return ir.annotate(ast.Expr(value=self.calls.call_of(
            vec.raise_error, [ir.const(kind), ast.Constant(value=text), ir.const(mode)] +
            values)), origin=self.origin, raises=True)

    def joined_strings(self, node):
        """The pieces of an f-string (string constants, FormattedValues) that a sum of
        string constants and `str(x)` calls spells, or None for another expression."""
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.joined_strings(node.left), self.joined_strings(node.right)
            return None if left is None or right is None else left + right
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node]
        if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords and \
                self.src.resolve(node.func) is str:
            return [ast.FormattedValue(value=node.args[0], conversion=-1, format_spec=None)]
        return None

    def local_array(self, node, where="local"):
        """`cuda.local.array(shape, float64)` in a kernel: the thread's own scratch array,
        of a constant shape (vec.local_empty, spelled cuda.local.array in CUDA code); and
        `cuda.shared.array(shape, float64)`, the block's (vec.shared_empty); float32 too
        (vec.SCRATCH)."""
        args = list(node.args) + [kw.value for kw in node.keywords]
        shape = args[0] if args else None
        dims = shape.elts if isinstance(shape, ast.Tuple) else [shape]

        def constant(d):        # a number, a module-level int (NB = 16), or NB + 2
            if isinstance(d, ast.Constant):
                return d.value if type(d.value) is int else None
            if isinstance(d, ast.Name) and d.id not in self.src.locals and \
                    d.id not in self.src.params:
                v = self.src.resolve_name(d.id)
                return v if type(v) is int else None
            if isinstance(d, ast.BinOp) and isinstance(d.op, (ast.Add, ast.Sub, ast.Mult,
                                                              ast.FloorDiv)):
                a, b = constant(d.left), constant(d.right)
                if a is None or b is None or (isinstance(d.op, ast.FloorDiv) and b == 0):
                    return None
                return {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b}.get(
                    type(d.op), a // b if b else None)
            return None
        sizes = [constant(d) for d in dims]
        dtype = self.src.resolve(args[1]) if len(args) == 2 else None
        single = dtype in (numba.float32, np.float32)
        if len(args) != 2 or None in sizes or not (single or dtype in (numba.float64,
                                                                       np.float64, float)):
            raise self.error(node, f"cuda.{where}.array with other than a constant shape and "
                             "float64 or float32", f"Write cuda.{where}.array(3, numba.float64) "
                             f"or cuda.{where}.array((3, 4), numba.float32).")
        if where == "shared" and self.ctx.loop_depth:
            raise self.error(node, "cuda.shared.array inside a loop",
                             "Declare the block's shared arrays at the start of the kernel.")
        alloc = getattr(vec, f"{where}_empty{'32' if single else ''}")
        spelled = ast.parse(self.ctx.env.spell(alloc, "alloc"), mode="eval").body
        shape = ir.const(sizes[0]) if not isinstance(shape, ast.Tuple) else \
            ast.Tuple(elts=[ir.const(n) for n in sizes], ctx=ast.Load())
        return ast.Call(func=spelled, args=[shape], keywords=[])

    def atomic_add(self, node, out):
        """`cuda.atomic.add(a, i, v)`: a store that adds (kept atomic in generated code)."""
        if len(node.args) != 3 or node.keywords or not isinstance(node.args[0], ast.Name):
            raise self.error(node, "cuda.atomic.add with other than (array, index, value)",
                             "Write cuda.atomic.add(a, i, v) with an array name.")
        arr = self.array_name(node.args[0])
        target = ast.Subscript(value=node.args[0], slice=node.args[1], ctx=ast.Store())
        idx = self.indices(target, out)
        val = self.atom(node.args[2], out)
        sub = ast.Subscript(value=ir.name(arr), slice=idx, ctx=ast.Store())
        self.emit_assign(out, sub, val)
        ir.annotate(out[-1], atomic=True)

    def call(self, node, out):
        if any(isinstance(a, ast.Starred) for a in node.args):
            node = self.star_arguments(node, out)
        func = node.func
        cu = self.cuda_intrinsic(func)
        if cu in ("grid", "gridsize"):
            if len(node.args) != 1 or not isinstance(node.args[0], ast.Constant) or \
                    node.args[0].value not in (1, 2, 3) or node.keywords:
                raise self.error(node, f"cuda.{cu} with other than a constant 1, 2 or 3",
                                 f"Write cuda.{cu}(1), cuda.{cu}(2) or cuda.{cu}(3).")
            if node.args[0].value == 1:
                return ast.Call(func=ast.Attribute(value=ir.name("cuda"), attr=cu,
                                                   ctx=ast.Load()),
                                args=[ir.const(1)], keywords=[])
            # a 2-D or 3-D grid: per axis blockIdx * blockDim + threadIdx (grid), blockDim *
            # gridDim (gridsize), as numba.cuda computes them
            items = []
            for axis in "xyz"[:node.args[0].value]:
                if cu == "grid":
                    b = self.to_atom(out, _cuda_attribute("blockIdx", axis))
                    w = self.to_atom(out, _cuda_attribute("blockDim", axis))
                    t = self.to_atom(out, _cuda_attribute("threadIdx", axis))
                    bw = self.to_atom(out, ast.BinOp(left=b, op=ast.Mult(), right=w))
                    items.append(self.to_atom(out, ast.BinOp(left=bw, op=ast.Add(), right=t)))
                else:
                    w = self.to_atom(out, _cuda_attribute("blockDim", axis))
                    g = self.to_atom(out, _cuda_attribute("gridDim", axis))
                    items.append(self.to_atom(out, ast.BinOp(left=w, op=ast.Mult(), right=g)))
            return TupleValue(items)
        if cu == "local.array":
            return self.local_array(node)
        if cu == "shared.array":
            return self.local_array(node, "shared")
        if cu is not None:
            raise self.error(node, f"cuda.{cu} in differentiated code",
                             "Use cuda.grid(k), cuda.gridsize(k), cuda.threadIdx/blockIdx/"
                             "blockDim/gridDim, cuda.local.array, cuda.shared.array, "
                             "cuda.syncthreads() and cuda.atomic.add(a, i, v) as a statement.")
        held = self.held_value(func, out)
        if isinstance(held, FunctionValue):
            return self.call_object(node, held.obj, out)
        if held is not None:
            if len(node.args) != 1 or node.keywords:
                raise self.error(node, f"`{ast.unparse(node)}`: a type called with other than "
                                 "one argument", "Convert one number: T(0.5).")
            return self.arrays.vcall(vec.convert_like, [held.atom, self.atom(node.args[0], out)])
        if isinstance(func, ast.Attribute) and func.attr == "type" and \
                isinstance(func.value, ast.Attribute) and func.value.attr == "dtype":
            return self.dtype_type_call(node, out)
        if isinstance(func, ast.Attribute) and isinstance(self.tuple_element(func.value),
                                                          TupleValue):
            raise self.error(node, f"the method call `.{func.attr}(...)` of a tuple",
                             "Build a new tuple instead (for a named tuple: Params(a, b) "
                             "with the values it should hold).")
        if isinstance(func, ast.Attribute) and (self.src.resolve(func.value) is MISSING or
                                                isinstance(self.src.resolve(func.value),
                                                           np.ndarray)):
            return self.calls.method(node, out)
        obj = self.src.resolve(func)
        if obj is MISSING and isinstance(func, ast.Attribute) and \
                ufunc_kernel(self.src.resolve(func.value)) is not None:
            raise self.error(node, f"the ufunc method `{ast.unparse(func)}`",
                             "adjit differentiates a @vectorize ufunc called on its operands; "
                             "write the reduction or accumulation as a loop over the "
                             "elements calling the ufunc.")
        if obj is MISSING:
            raise self.error(node, f"a call to `{ast.unparse(func)}`, which adjit cannot resolve",
                             "Call module-level functions, a class's static methods, "
                             "math.*, or numpy allocation functions.")
        return self.call_object(node, obj, out)

    def named_tuple(self, node, cls, out):
        """`Params(1.0, beta=b)`: a collections.namedtuple class called, as numba builds
        one: a tuple written out with the class's field names (its defaults filled in)."""
        fields = tuple(cls._fields)
        given = dict(zip(fields, node.args))
        for kw in node.keywords:
            if kw.arg is None or kw.arg not in fields or kw.arg in given:
                raise self.error(node, f"`{ast.unparse(node)}`: a keyword argument that is "
                                 f"not one of {cls.__name__}'s fields ({', '.join(fields)}) "
                                 "once", "Pass each field once, by position or by name.")
            given[kw.arg] = kw.value
        if len(node.args) > len(fields):
            raise self.error(node, f"`{ast.unparse(node)}`: more values than "
                             f"{cls.__name__}'s fields ({', '.join(fields)})",
                             "Pass one value per field.")
        items = []
        for name in fields:
            if name in given:
                items.append(self.tuple_item(given[name], out))
            elif name in cls._field_defaults and \
                    isinstance(cls._field_defaults[name], (bool, int, float)):
                items.append(ir.const(cls._field_defaults[name]))
            else:
                raise self.error(node, f"`{ast.unparse(node)}` without its field `{name}`",
                                 "Pass every field (a default is taken for numbers only).")
        return TupleValue(items, fields)

    def star_arguments(self, node, out):
        """`f(x, *theta)` with a tuple (or a shape) `theta`, `*args[1:]`, `*(a, b)`: the call
        with the elements as positional arguments (`theta[0], theta[1]`), as Python passes
        them."""
        args = []
        for a in node.args:
            if not isinstance(a, ast.Starred):
                args.append(a)
                continue
            if isinstance(a.value, ast.Tuple):
                args.extend(a.value.elts)
                continue
            base, sl = a.value, None
            if isinstance(base, ast.Subscript) and isinstance(base.slice, ast.Slice):
                base, sl = base.value, base.slice
            if not _pure_reference(base):
                raise self.error(node, f"`*{ast.unparse(a.value)}` in a call",
                                 "Unpack a tuple held by a name (theta = (a, b); "
                                 "f(x, *theta)) or written out.")
            value = self.rhs(base, out)
            if isinstance(value, TupleValue):
                n = len(value.items)
            elif isinstance(value, Shape) and value.ndim is not None:
                n = value.ndim
            else:
                raise self.error(node, f"star-unpacking `*{ast.unparse(a.value)}` of what "
                                 "is not a tuple is not supported",
                                 "Unpack a tuple (numba unpacks only tuples), or pass values "
                                 "explicitly: an array as one argument.")
            picked = range(n)
            if sl is not None:
                kept = ir.constant_slice(sl)
                if kept is None:
                    raise self.error(node, f"`*{ast.unparse(a.value)}`: a tuple sliced by "
                                     "variables", "Slice it with constants.")
                picked = picked[kept]
            args.extend(ast.copy_location(ast.Subscript(value=base, slice=ir.const(k),
                                                        ctx=ast.Load()), a) for k in picked)
        return ast.copy_location(ast.Call(func=node.func, args=args, keywords=node.keywords),
                                 node)

    def call_object(self, node, obj, out):
        """The call `node` of the resolved object `obj`."""
        func = node.func
        obj = attached_rule(obj) or special.by_address(obj) or \
            compiled_entry_dispatcher(obj) or obj   # adjit.defvjp's rule; a user's address
        # wrapper of scipy.special; the dispatcher of `jit(f).compile(sig)`'s entry point
        if obj in ALLOCATORS:
            return self.calls.allocation(node, obj, out)
        if isinstance(obj, type) and issubclass(obj, tuple) and hasattr(obj, "_fields"):
            return self.named_tuple(node, obj, out)
        if obj is type:
            return self.type_of(node, out)
        ensure_entries(obj)
        if obj in MESSAGES and MESSAGES[obj].family == "message":
            return message_call(self, node, MESSAGES[obj], out)
        as_operation = getattr(obj, "__adjit_operation__", None)
        if as_operation is not None:    # a gradient object: registered as an operation
            as_operation(lambda what, instead: self.error(node, what, instead))
        kernel = ufunc_kernel(obj)
        if kernel is not None:
            return self.arrays.ufunc_call(node, obj, kernel, out)
        stencil = stencil_kernel(obj)
        if stencil is not None:
            return stencil_call(self, node, stencil, out)
        gufunc = gufunc_kernel(obj)
        if gufunc is not None:
            return gufunc_call(self, node, gufunc, out)
        handled = self.calls.numpy_call(node, obj, out)
        if handled is not None:
            return handled
        inner = unwrap(obj)
        if isinstance(inner, types.FunctionType) and not _library_function(inner) and \
                getattr(obj, "__adjit_function__", None) is None:
            return self.inline_or_opaque(node, obj, out)
        entry = REGISTRY.get(obj)
        if entry is not None and entry.over_array is not None and (
                len(node.args) == 1 or entry.family == "iterated"):
            return self.iterated(node, entry, out)
        if node.keywords and (obj in ARRAY_QUERIES or rule_for_call(obj) is not None):
            raise self.error(node, f"keyword arguments in a call to `{ast.unparse(func)}`",
                             "Pass arguments by position.")
        if obj in ARRAY_QUERIES:
            if len(node.args) != 1:
                raise self.error(node, "len() with other than one argument", "Use len(a).")
            held = None
            if obj is len and isinstance(node.args[0], ast.Name):
                held = self.tuple_named(node.args[0].id)
            elif obj is len and isinstance(node.args[0], ast.Subscript):
                held = self.tuple_element(node.args[0])     # len(p[0]) of nested tuples
            if held is not None:
                return ir.const(len(held.items) if isinstance(held, TupleValue) else held.ndim)
            shape = self.shape_of(node.args[0], out)
            if shape.ndim == 0:
                raise self.error(node, "len() of a 0-d array", "Use the value itself.")
            if shape.array is not None:
                return ast.Call(func=ir.name("len"), args=[ir.name(shape.array)], keywords=[])
            if not shape.ndim:
                raise self.error(node, "len() of a 0-d array", "Use the value itself.")
            return shape.item(0)
        rule = rule_for_call(obj)
        if rule is not None:
            return self.calls.primitive(node, obj, rule, out)
        inner = unwrap(obj)
        if isinstance(inner, types.FunctionType) and not _library_function(inner):
            return self.inline_or_opaque(node, obj, out)
        return self.calls.opaque_call(node, obj, out)

    def inline_or_opaque(self, node, obj, out):
        """A call of a Python function: its body inlined, except for a stub numba
        implements elsewhere (@overload, interpolation.py's `def _mlinterp(...): pass`) and
        a `with objmode()` block's helper: what runs is not a body adjit reads, so it is a
        call with no rule, accepted where no derivative flows through it."""
        if getattr(obj, "py_func", None) is None and \
                numba_implementation(unwrap(obj)) is not None or \
                hasattr(unwrap(obj), "__adjit_objmode__"):    # (normalize/objmode.py)
            return self.calls.opaque_call(node, obj, out)
        unread = self.ctx.unread.get((obj, inlining.call_site(self, node)))
        if unread is not None:
            return self.calls.opaque_call(node, obj, out, unread=unread)
        return self.inline(node, obj, out)

    def iterated(self, node, entry, out):
        """sum(a), max(a), min(a) of a 1-D array (or of a list comprehension's): numba
        iterates it, so it is that reduction of its elements."""
        name = ast.unparse(node.func)
        if node.keywords or not 1 <= len(node.args) <= (2 if entry.over_array == "sum" else 1):
            raise self.error(node, f"`{name}` with {len(node.args)} argument(s)"
                             f"{' and keywords' if node.keywords else ''}",
                             f"Write {name}(a) of an array" +
                             (", or sum(a, start)." if entry.over_array == "sum" else
                              f", or {name}(x, y) of numbers."))
        given = node.args[0]
        if isinstance(given, (ast.Tuple, ast.List)) and given.elts:
            # of a literal tuple or list of numbers: the numbers folded
            if entry.over_array != "sum":
                return self.rhs(ast.copy_location(ast.Call(
                    func=node.func, args=given.elts, keywords=[]), node), out) \
                    if len(given.elts) > 1 else self.rhs(given.elts[0], out)
            total = node.args[1] if len(node.args) == 2 else None
            for e in given.elts:
                total = e if total is None else ast.BinOp(left=total, op=ast.Add(), right=e)
            return self.rhs(ast.copy_location(total, node), out)
        v = self.rhs(given, out)
        if isinstance(v, Shape) and v.ndim:
            # min(a.shape), max(x.shape), sum(a.shape): numba iterates the tuple of sizes
            sizes = [self.to_atom(out, v.item(k)) for k in range(v.ndim)]
            if entry.over_array == "sum":
                total = self.atom(node.args[1], out) if len(node.args) == 2 else None
                for size in sizes:
                    total = size if total is None else \
                        self.to_atom(out, ast.BinOp(left=total, op=ast.Add(), right=size))
                return total
            return ast.Call(func=ir.name(entry.over_array), args=sizes, keywords=[]) \
                if len(sizes) > 1 else sizes[0]
        v = self.arrays.lazy_operand(v, out)
        if not isinstance(v, Lazy) or isinstance(v, Scalar):
            raise self.error(node, f"`{name}` of one number",
                             f"numba iterates {name}'s argument: pass an array" +
                             ("." if entry.over_array == "sum" else
                              f", or compare numbers with {name}(x, y)."))
        if len(v.shape) != 1:
            raise self.error(node, f"`{name}` of a {len(v.shape)}-D array (numba iterates "
                                   "1-D arrays only)",
                             f"Write np.{entry.over_array}(a) over every element, or with "
                             "axis=.")
        total = self.arrays.reduce(entry.over_array, v, None, out, node, empty={
            "max": "EMPTY_BUILTIN_MAX", "min": "EMPTY_BUILTIN_MIN"}.get(entry.over_array))
        if len(node.args) == 2:
            start = self.atom(node.args[1], out)
            return ast.BinOp(left=start, op=ast.Add(), right=self.to_atom(out, total))
        return total


_LIBRARIES = {"numpy", "scipy", "numba", "math", "builtins", "adjit"}



def _lazy_candidates(src):
    """Locals assigned exactly once, by a plain `y = ...` statement, and read by exactly
    one later simple statement of the same block (never indexed or written element-wise):
    an array value of such a name can stay unevaluated and fuse into the loop of that
    statement. Returns (those names, those of them never passed to a user function, the
    bindings of names bound more than once that may stay unevaluated as well: _relays)."""
    stores, loads, written, passed = {}, {}, set(), set()
    for node in ir.walk(src.tree):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Store):
                stores[node.id] = stores.get(node.id, 0) + 1
            else:
                loads[node.id] = loads.get(node.id, 0) + 1
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            stores[node.target.id] = stores.get(node.target.id, 0) + 2
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            written.add(node.value.id)      # indexed, sliced or written: a real array
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                node.attr in ("shape", "size", "ndim", "copy"):
            written.add(node.value.id)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id == "len":
            written.update(a.id for a in node.args if isinstance(a, ast.Name))
        if isinstance(node, ast.Call):
            fn = src.resolve(node.func)
            if fn is MISSING or not _library_function(unwrap(fn)):
                passed.update(a.id for a in node.args if isinstance(a, ast.Name))
    out = set()
    simple = (ast.Assign, ast.AugAssign, ast.Return, ast.Expr, ast.AnnAssign)

    def names_in(stmt):
        return [n.id for n in ir.walk(stmt) if isinstance(n, ast.Name) and
                isinstance(n.ctx, ast.Load)]

    def visit(block):
        for k, s in enumerate(block):
            for field in ("body", "orelse"):
                inner = getattr(s, field, None)
                if isinstance(inner, list) and not isinstance(s, simple):
                    visit(inner)
            if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and
                    isinstance(s.targets[0], ast.Name)):
                continue
            y = s.targets[0].id
            if stores.get(y) != 1 or y in src.params or y in written or not loads.get(y):
                continue
            users = [t for t in block[k + 1:] if y in names_in(t)]
            if len(users) == 1 and isinstance(users[0], simple) and \
                    names_in(users[0]).count(y) == loads[y]:
                out.add(y)

    visit(src.tree.body)
    return out, out - passed, _relays(src)


def _relays(src):
    """The targets (ast.Name nodes) of `y = E` statements whose value only the next
    statement naming y reads, where that statement binds y again from it: `q = beta * s;
    q = np.nansum(q)`, `r = x - m; r = r * r`. The first value may stay unevaluated and fuse
    into the second statement's loop, as a name bound once does. Not where the second reads
    y other than as a whole value (indexed, its shape, len), or where a nested function or
    lambda names y (it could see the first value). The normalizer keeps it unevaluated only
    where the value does not read the array the name holds (`r = r * r` of an r made into
    an array). (A name's last binding is made an array, as before: fusing it too into its
    reader, `r = r * r; return np.sum(r)`, made the vectorized Lennard-Jones row's
    gradient 1.7x slower, its fused backward loop not vectorized.)"""
    nested = set()
    for node in ir.walk(src.tree):
        if isinstance(node, (ast.Lambda, ast.FunctionDef, ast.Global, ast.Nonlocal)) and \
                node is not src.tree:
            nested.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name))
            nested.update(getattr(node, "names", ()))
    found = set()

    def whole_reads_only(stmt, y):
        for node in ast.walk(stmt.value):
            if isinstance(node, (ast.Subscript, ast.Attribute)) and \
                    isinstance(node.value, ast.Name) and node.value.id == y:
                return False
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                    node.func.id == "len" and any(isinstance(a, ast.Name) and a.id == y
                                                  for a in node.args):
                return False
            if isinstance(node, (ast.Lambda, ast.comprehension)):
                return False
        return True

    def mentions(stmt, y):
        return any(isinstance(n, ast.Name) and n.id == y for n in ir.walk(stmt))

    def visit(block):
        for k, s in enumerate(block):
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(s, field, None)
                if isinstance(inner, list):
                    visit(inner)
            if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and
                    isinstance(s.targets[0], ast.Name)):
                continue
            y = s.targets[0].id
            if y in src.params or y in nested:
                continue
            after = next((t for t in block[k + 1:] if mentions(t, y)), None)
            if isinstance(after, ast.Assign) and len(after.targets) == 1 and \
                    isinstance(after.targets[0], ast.Name) and after.targets[0].id == y and \
                    mentions(after.value, y) and whole_reads_only(after, y):
                found.add(s.targets[0])

    visit(src.tree.body)
    return found


def _same_elements(a, b):
    """Views `a` and `b` of one array name the same element at every index (an elementwise
    update `x[1:] = 2 * x[1:]` reads each element only where it writes it)."""
    from .vectorize import _same
    if has_take(a) or has_take(b) or a.parent is not b.parent:
        return False    # a gather may repeat an index: its elements are not distinct
    if a.ndim != b.ndim or len(a.shape) != len(b.shape) or \
            any(not _same(p, q) for p, q in zip(a.shape, b.shape)):
        return False
    if set(a.fixed) != set(b.fixed) or any(not _same(a.fixed[k], b.fixed[k]) for k in a.fixed):
        return False
    for p, q in zip(a.dims, b.dims):
        if (p is None) != (q is None):
            return False
        if p is not None and (p[0] != q[0] or not _same(p[1], q[1]) or not _same(p[2], q[2])):
            return False
    return True


def _disjoint(a, b):
    """Views of one array that never share an element: both fix a base dimension (that no
    dimension of theirs runs along) at different constant positions, as rows 0 and 1."""
    if a.parent is not None or b.parent is not None:
        return False
    running = {d[0] for d in a.dims + b.dims if isinstance(d, tuple)}
    return any(isinstance(a.fixed[d], ast.Constant) and isinstance(b.fixed[d], ast.Constant)
               and a.fixed[d].value != b.fixed[d].value and d not in running
               for d in set(a.fixed) & set(b.fixed))


def _leaves(v):
    from .vectorize import leaves
    return leaves(v)


def _alloc_ndim(value, obj, arrays):
    """The dimension of the array an allocation call makes."""
    if obj in CONST_ARRAYS:
        return 2 if CONST_ARRAYS[obj] == "eye" else 1
    shape = value.args[0]
    if isinstance(shape, ast.Tuple):
        return len(shape.elts)
    if isinstance(shape, ast.Name) and shape.id in arrays:
        return arrays[shape.id][0]
    return 1


def _library_function(fn):
    """Functions of numpy & co. are primitives with rules (or none), never inlined."""
    return (getattr(fn, "__module__", None) or "").split(".")[0] in _LIBRARIES


def _is_one(atom):
    return isinstance(atom, ast.Constant) and atom.value == 1


def _constant_compare(op, a, b):
    return {ast.Lt: a < b, ast.LtE: a <= b, ast.Gt: a > b, ast.GtE: a >= b,
            ast.Eq: a == b, ast.NotEq: a != b}[type(op)]


class _Temps(set):
    """Names of the arrays the vectorizer allocated; `write_once` holds those made outside
    every user loop, whose elements are each stored exactly once; `joined` the arrays the
    paths of an `if` keep for the copy after it (joins.py: each is defined on its path
    only, and read after the `if` only where that path ran)."""

    def __init__(self):
        super().__init__()
        self.write_once = set()
        self.joined = set()


def _copy(node):
    return ast.Name(id=node.id, ctx=ast.Load()) if isinstance(node, ast.Name) else \
        ast.Constant(value=node.value)


def _tuple_target_names(tgt, norm):
    """The locals an unpacking assigns, in tuples inside the target too."""
    names = set()
    for t in tgt.elts:
        if isinstance(t, ast.Name):
            local = norm.local(t.id)
            if isinstance(local, str):
                names.add(local)
        elif isinstance(t, ast.Tuple):
            names |= _tuple_target_names(t, norm)
    return names


_TUPLE_ARRAYS = {}
"""id(tuple) -> (the tuple, its numbers as a read-only array): one array per tuple."""


def _tuple_array(t):
    """The array of a tuple of numbers of one kind (all floats, or all ints), or None."""
    hit = _TUPLE_ARRAYS.get(id(t))
    if hit is not None and hit[0] is t:
        return hit[1]
    kinds = {type(v) for v in t}
    if not t or not (kinds <= {float} or kinds <= {int}):
        return None
    a = np.array(t)
    a.flags.writeable = False
    _TUPLE_ARRAYS[id(t)] = (t, a)
    return a


def _pure_reference(node):
    """A name, or attributes of one (`theta`, `x.shape`): reading it again reads the same."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)
