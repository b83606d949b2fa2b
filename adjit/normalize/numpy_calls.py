"""numpy calls and array methods, lowered by what the registry says about them.

`numpy_call` asks the registry (rules/table.py) what a function is - elementwise (one scalar
primitive per element), a reduction, a whole-array function (lowered by the function
registered for its handler: normalize/lowering.py; the lowerings live by topic in
lower_shapes.py, lower_constructors.py, lower_linalg.py, lower_diagonals.py, lower_scans.py,
lower_statistics.py, lower_kept.py and einsum.py), an allocation - and lowers it; `method`
does the same for array methods (`a.sum()`, `a.T`, `a.copy()`)."""
import ast
import copy
import math
import types

import numba
import numba.core.errors
import numba.np.numpy_support
import numpy as np

from .. import ir
from ..api_stop import stop_gradient
from ..rules.table import (ALLOCATORS, ARRAY_FUNCTIONS, DECLARED_ALLOCATORS, DRAWS, ELEMENTWISE,
                           ELEMENTWISE_ARITY, INACTIVE, METHOD_FUNCTIONS, METHOD_REDUCTIONS,
                           REDUCTIONS)
from ..frontend import purity
from ..errors import AdjitError
from ..rules import opaque
from ..rules.table import rule_for_call
from ..frontend.source import MISSING, numba_implementation, recover_parallel_kernel
from ..runtime import vec
from ..rules.effects import known_effect, library_function, reads_only, written_arguments
from ..rules.registry import REGISTRY
from . import appends
from .sugar import OPERATOR_SYMBOLS
from .values import NoneValue, Shape, TupleValue, left_out
from .inline import split_error, unread_reason
from .lowering import LOWERINGS
from .vectorize import ONE, Lazy, Op, Scalar, View
from .views import has_take


LIKE_BASES = {np.zeros_like: np.zeros, np.ones_like: np.ones, np.empty_like: np.empty}
"""The allocation each *_like allocation is, given its argument's shape."""

ARRAY_METHODS = frozenset(("copy", "astype", "reshape", "ravel", "flatten", "dot", "var", "std",
                           "ptp", "swapaxes", "transpose")) | set(METHOD_REDUCTIONS) | \
    set(METHOD_FUNCTIONS)
"""The array methods NumpyCalls.method lowers (none writes its array)."""


def _stopped(array):
    """stop_gradient of a Lazy array: every element stopped. Computed into an array it is a
    copy of what numba's gives, the array itself: `stops` names that array's base (for
    vectorize.materialize_into, joins.check_frozen), None where numba's is a new array too
    (a gather, an expression)."""
    op = Op(("call", stop_gradient), [array], array.shape)
    op.stops = array.base if isinstance(array, View) and not has_take(array) else \
        getattr(array, "stops", None)
    return op


def _written_out(a):
    """Whether `a` is a tuple or list of constants written out."""
    return isinstance(a, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Constant)
                                                        for e in a.elts)


class NumpyCalls:
    """The normalizer's part (`norm.calls`) for calls of numpy functions and array methods,
    with the normalizer (`n`) it writes through."""

    def __init__(self, norm):
        self.n = norm

    def method(self, node, out):
        """`a.sum()`, `a.reshape(...)`, `a.copy()` and the other array methods."""
        func = node.func
        name = func.attr
        if name == "copy" and not node.args and not node.keywords:
            base = self.n.rhs(func.value, out)
            if isinstance(base, ast.Name) and self.n.arrays.array_ndim(base) is not None:
                base = ir.name(self.n.array_name(func.value)) if isinstance(func.value, ast.Name) \
                    else base
                return ast.Call(func=ast.Attribute(value=base, attr="copy", ctx=ast.Load()),
                                args=[], keywords=[])
            base = self.n.arrays.lazy_operand(base, out)
            if isinstance(base, View) and base.is_identity():
                return ast.Call(func=ast.Attribute(value=ir.name(base.base), attr="copy",
                                                   ctx=ast.Load()), args=[], keywords=[])
            if isinstance(base, Lazy):
                named = getattr(base, "binding", None) is not None and \
                    self.n.lazy.get(base.binding) is base
                if getattr(base, "stops", None) is not None:
                    base.stops = None   # (stop_gradient(x).copy(): an array of its own)
                made = self.n.arrays.materialize(base, out, node)
                if named and self.n.ctx.loop_depth:
                    # `un = 1.0 / (x * u + 1.0); u = un.copy()` (what a hand-over becomes):
                    # un is an array of its own, u gets another (as the name's one use
                    # outside loops, un's own array serves)
                    return ast.Call(func=ast.Attribute(value=made, attr="copy",
                                                       ctx=ast.Load()), args=[], keywords=[])
                return made
            arr = self.n.array_name(func.value)
            return ast.Call(func=ast.Attribute(value=ir.name(arr), attr="copy", ctx=ast.Load()),
                            args=[], keywords=[])
        if name == "astype":
            return self.astype(node, out)
        if name in METHOD_REDUCTIONS:
            axis = self.axis_argument(node, node.args, 0)
            return self.n.arrays.reduce(METHOD_REDUCTIONS[name], self.n.operand(func.value, out),
                                        axis, out, node)
        if name == "reshape" and not node.keywords:
            args = node.args[0].elts if len(node.args) == 1 and \
                isinstance(node.args[0], (ast.Tuple, ast.List)) else node.args
            return self.n.indexing.reshape_view(self.n.operand(func.value, out), args, out, node)
        if name in ("ravel", "flatten") and not node.args and not node.keywords:
            return self.n.indexing.reshape_view(self.n.operand(func.value, out), [ir.const(-1)],
                                                out, node, copy=name == "flatten")
        if name == "dot" and len(node.args) == 1:
            return self.n.arrays.matmul(self.n.operand(func.value, out),
                                        self.n.operand(node.args[0], out), out, node)
        if name in ("var", "std", "ptp"):
            return self.spread(name, node, func.value, node.args, out)
        if name == "swapaxes" and len(node.args) == 2 and not node.keywords:
            return self.permute_axes("swapaxes", self.n.operand(func.value, out), node.args,
                                     node, out)
        if name == "transpose" and not node.keywords:
            axes = node.args[0] if len(node.args) == 1 and \
                isinstance(node.args[0], (ast.Tuple, ast.List)) else \
                (ast.Tuple(elts=node.args, ctx=ast.Load()) if node.args else None)
            return self.n.arrays.transpose(self.n.operand(func.value, out), out,
                                           self.axes_argument(axes, node), node)
        if name in METHOD_FUNCTIONS:      # a.cumsum(): np.cumsum(a)
            obj = METHOD_FUNCTIONS[name]
            spelled = ast.copy_location(ast.Attribute(value=ir.name("np"), attr=obj.__name__,
                                                      ctx=ast.Load()), node)
            call = ast.copy_location(ast.Call(func=spelled, args=[func.value] + node.args,
                                              keywords=node.keywords), node)
            return self.n.call_object(call, obj, out)
        receiver = func.value
        if isinstance(receiver, ast.Name) and receiver.id not in self.n.src.locals and \
                receiver.id not in self.n.subst and \
                self.n.src.resolve_name(receiver.id) is MISSING:
            # `math.cos(x)` in a module that does not import math: a name, not a method
            raise self.n.error(node, f"the name '{receiver.id}' is not defined",
                               f"Import or define `{receiver.id}` at module level in the "
                               "module of this function.")
        if name in ("append", "extend", "insert", "pop", "remove"):
            raise self.n.error(node, f"`{ir.unparse(receiver)}.{name}(...)`: a list "
                               "method on what is not a list adjit builds (a list of lists "
                               "or a list made another way)",
                               "adjit builds a list made empty (`out = []`) in the "
                               "function's body and appended to in one `for` loop after it; "
                               "for a list per item (neighbours per atom), keep one flat "
                               "list of pairs, `pairs.append((i, j))`, or arrays of counts "
                               "and indices.")
        raise self.n.error(node, f"the method call `.{name}(...)`",
                           f"Array methods adjit knows: {', '.join(sorted(ARRAY_METHODS))}; "
                           "use the numpy functions or loops for the rest.")

    def astype(self, node, out):
        """`a.astype(dtype)`: a new array (numpy copies): float64 values carry the
        derivative (a copy); an integer dtype truncates each element as int() does and a
        boolean one tests it against 0 (no derivative)."""
        func = node.func
        given = node.args + [kw.value for kw in node.keywords if kw.arg == "dtype"]
        if len(given) != 1 or any(kw.arg != "dtype" for kw in node.keywords):
            raise self.n.error(node, "`.astype(...)` with other than one dtype",
                               "Write a.astype(np.float64) or a.astype(np.int64).")
        dtype = self.declared_dtype(given[0], node)
        value = self.n.operand(func.value, out)
        if not isinstance(value, Lazy) or isinstance(value, Scalar):
            raise self.n.error(node, "`.astype(...)` of a number",
                               "Convert numbers with float(v) or int(v).")
        held = self.n.indexing.lazy_dtype(value)
        if dtype == np.float64:
            if held == "f":
                return self.n.arrays.materialize(value, out, node, copy=True)
            # (numba has no float() of a boolean: np.float64 converts both)
            op = ("call", float if held == "i" else np.float64)
        elif dtype.kind in "iu":
            op = ("call", int)
        elif dtype.kind == "b":
            return self.n.arrays.elementwise(("cmp", ast.NotEq()), [value, ir.const(0)], out, node)
        elif dtype == np.float32:
            # a float32 copy (umap's distances keep their data in one): each element rounded
            # as numba stores it, its derivative that of the value (a.e. the rounding's is 1;
            # none for integers and booleans, stored as numba converts them)
            shape = [ir.const(1) if s is ONE else s for s in value.shape]
            name = self.n.fresh("_a")
            self.n.emit_assign(out, name, self.n.arrays.vcall(
                DECLARED_ALLOCATORS[np.empty, dtype],
                [shape[0] if len(shape) == 1 else ast.Tuple(elts=shape, ctx=ast.Load())]))
            self.n.arrays.note_array(name, len(shape), "f")
            self.n.arrays.add_temp(name)
            self.n.arrays.store_elements(self.n.arrays.full_view(name, shape), value, out, node)
            return ir.name(name)
        else:
            raise self.n.error(node, f"`.astype({ast.unparse(given[0])})`",
                               "adjit keeps float64 and float32 arrays (and integer or "
                               "boolean ones): write .astype(np.float64), np.float32, "
                               "np.int64 or np.bool_.")
        return Op(op, [value], value.shape)

    def like_shape(self, arg, out, node, like=None):
        """Size atoms of the array expression `arg` (for the *_like allocators)."""
        like = self.n.operand(arg, out) if like is None else like
        if not isinstance(like, Lazy) or isinstance(like, Scalar):
            raise self.n.error(node, "a *_like allocation of something that is not an array",
                               "Pass an array: np.zeros_like(x).")
        return [ir.const(1) if s is ONE else s for s in like.shape]

    def axis_argument(self, node, args, position):
        """The constant `axis` of a reduction (positional or keyword), or None. An argument
        after the axis (np.sum(a, 0, np.int64)'s dtype, which numba converts every element
        to) is refused: the reduction would be differentiated without it."""
        if len(args) > position + 1:
            name = ast.unparse(node.func)
            func = getattr(np, node.func.attr, None) if position == 0 and \
                isinstance(node.func, ast.Attribute) else self.n.src.resolve(node.func)
            extra = _parameter_name(func, position + 1 + (position == 0)) \
                if callable(func) else None
            what = f"`{extra}`" if extra else f"number {position + 2}"
            raise self.n.error(node, f"`{name}` with its argument {what} after the axis",
                               "adjit takes the array and the axis of a reduction; convert "
                               "the elements first where a dtype is meant: "
                               "np.sum(a.astype(np.int64), 0).")
        value = args[position] if len(args) > position else None
        for kw in node.keywords:
            if kw.arg == "axis":
                value = kw.value
            else:
                raise self.n.error(node, f"the keyword argument `{kw.arg}=`",
                                   "adjit supports axis= (an int constant) on reductions.")
        if left_out(value):
            return None
        if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub) and \
                isinstance(value.operand, ast.Constant):
            value = ast.Constant(value=-value.operand.value)
        if not (isinstance(value, ast.Constant) and isinstance(value.value, int)):
            raise self.n.error(node, "an axis that is not an int constant",
                               "Write the axis as a number: axis=0 or axis=-1.")
        return value.value

    def permute_axes(self, what, v, axis_nodes, node, out):
        """np.swapaxes(v, a, b) / v.swapaxes(a, b) and np.moveaxis(v, src, dst): views."""
        d = len(v.shape) if isinstance(v, Lazy) else 0
        a, b = (self.axes_argument(e, node, d) for e in axis_nodes)
        if what == "moveaxis":
            a, b = (list(e) if isinstance(e, list) else [e] for e in (a, b))
            if len(a) != len(b) or len(set(a)) != len(a) or len(set(b)) != len(b):
                raise self.n.error(node, "np.moveaxis with repeated axes or source and "
                                   "destination of different lengths",
                                   "Move as many distinct axes as you name.")
            rest = [k for k in range(d) if k not in a]
            order = [None] * d
            for src_axis, dst_axis in zip(a, b):
                order[dst_axis] = src_axis
            order = [k if k is not None else rest.pop(0) for k in order]
        else:
            order = list(range(d))
            order[a], order[b] = order[b], order[a]
        return self.n.arrays.transpose(v, out, order, node)

    def axes_argument(self, node, where, ndim=None):
        """A constant axis (int) or tuple of axes (list of ints) from source; None for none.
        With `ndim`, negative axes count from the end and out-of-range ones are refused."""
        if left_out(node):
            return None
        if isinstance(node, (ast.Tuple, ast.List)):
            return [self.axes_argument(e, where, ndim) for e in node.elts]
        value = node
        if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub) and \
                isinstance(value.operand, ast.Constant):
            value = ast.Constant(value=-value.operand.value)
        if not (isinstance(value, ast.Constant) and isinstance(value.value, int) and
                not isinstance(value.value, bool)):
            raise self.n.error(where, "an axis that is not an int constant",
                               "Write axes as numbers: axis=0, axis=-1, (1, 0, 2).")
        k = value.value
        if ndim is not None:
            if not -ndim <= k < ndim:
                raise self.n.error(where, f"axis {k} of a {ndim}-D array",
                                   f"Use an axis from {-ndim} to {ndim - 1}.")
            k %= ndim
        return k

    def numpy_call(self, node, obj, out):
        """Vectorized numpy functions; None when `obj` is not one of them."""
        try:
            known = obj in ELEMENTWISE or obj in REDUCTIONS or obj in ARRAY_FUNCTIONS or \
                obj in INACTIVE or obj in DRAWS
        except TypeError:
            return None
        if isinstance(obj, np.ufunc) and obj.nout == 1 and not node.keywords and \
                len(node.args) == obj.nin + 1 and \
                getattr(REGISTRY.get(obj), "family", None) == "none":
            if not isinstance(node.args[-1], ast.Name):
                given = ast.unparse(node.args[-1])
                raise self.n.error(node, f"`{ast.unparse(node.func)}` given its output "
                                   f"array as an expression (`{given}`)",
                                   f"Name it first: out = {given}, then pass `out`.")
            return self.no_derivative_into(node, obj, out)
        if not known:
            return None
        if obj in INACTIVE:
            return self.inactive_call(node, INACTIVE[obj], out)
        if obj in DRAWS:
            return self.draw_call(node, DRAWS[obj], out)
        args = node.args
        if obj in REDUCTIONS:
            axis = self.axis_argument(node, args, 1)
            return self.n.arrays.reduce(REDUCTIONS[obj], self.n.operand(args[0], out), axis, out,
                                        node)
        if obj in ELEMENTWISE and isinstance(obj, np.ufunc) and not node.keywords and \
                len(args) == obj.nin + 1 == ELEMENTWISE_ARITY[obj] + 1 and \
                not isinstance(args[-1], ast.Starred):
            return self.into_out(node, obj, args, out)      # np.sin(x, y): numba's `out`
        if obj in ELEMENTWISE:
            more = node.keywords or len(args) > ELEMENTWISE_ARITY[obj]
            if more and _constant(obj):
                # piecewise constant (np.round(x, 1), np.around(x, decimals=2)): numba's call
                # as it is, whatever its other arguments do; no derivative
                return self.without_derivative(self.opaque_call(node, obj, out), out)
            handler = REGISTRY.get(obj).handler
            if more and handler:
                return LOWERINGS[handler](self.n, node, obj, out)   # np.nan_to_num(x, nan=1.0)
            if node.keywords:
                raise self.n.error(node, f"keyword arguments to `{ast.unparse(node.func)}`",
                                   "Pass arguments by position.")
            if len(args) > ELEMENTWISE_ARITY[obj]:
                name = ast.unparse(node.func)
                extra = _parameter_name(obj, ELEMENTWISE_ARITY[obj])
                what = f"its argument `{extra}`" if extra else \
                    f"{len(args)} arguments"
                raise self.n.error(node, f"`{name}` with {what}",
                                   f"adjit differentiates {name} with "
                                   f"{ELEMENTWISE_ARITY[obj]} argument(s): its derivative would "
                                   f"ignore {f'`{extra}`' if extra else 'the others'}. Leave "
                                   "it out, or write the computation with operators.")
            if len(args) != ELEMENTWISE_ARITY[obj]:
                # another form of the function (np.where(cond) gives indices): as it is
                return self.opaque_call(node, obj, out)
            operands = self.n.operands(args, out)
            return self.n.arrays.apply(_elementwise_op(obj), operands, out, node)
        if written_arguments(obj, node.args, [(k.arg, k.value) for k in node.keywords]):
            name = ast.unparse(node.func)
            raise self.n.error(node, f"`{name}` given an array to write its result into (its "
                               "argument `out`)",
                               f"Assign the result instead: y[:] = {name}(...) (or y = "
                               f"{name}(...)).")
        return LOWERINGS[ARRAY_FUNCTIONS[obj]](self.n, node, obj, out)

    def no_derivative_into(self, node, obj, out):
        """A ufunc with no derivative (a comparison, a bitwise operation) given its output
        array by position (`np.greater(x, 0.0, m)`): `m[...] = np.greater(x, 0.0)`, as
        numba's loop stores it, and the call's value that array."""
        call = ast.copy_location(ast.Call(func=node.func, args=list(node.args[:-1]),
                                          keywords=[]), node)
        value = self.n.call_object(call, obj, out)
        if isinstance(value, Lazy):     # (computed whole before the output is written)
            value = self.n.arrays.materialize(value, out, node)
        name = node.args[-1].id
        target = ast.copy_location(ast.Subscript(value=ast.Name(id=name, ctx=ast.Load()),
                                                 slice=ast.Constant(value=Ellipsis),
                                                 ctx=ast.Store()), node)
        self.n.assign_to(target, value, out)
        return ast.Name(id=name, ctx=ast.Load())

    def into_out(self, node, obj, args, out):
        """A ufunc given its output array by position (`np.sin(y, y)`, `np.multiply(a, b,
        c)`, numba's only form of `out`): the value computed as the call without it, stored
        into the array element by element as numba's loop stores it (its shape checked),
        and the call's result that array."""
        # each input evaluated first, as numba evaluates a call's arguments: an expression
        # is a new array before the loop writes the output (only a plain view of the
        # output's array sees the running update)
        operands = []
        for a in self.n.operands(args[:-1], out):
            if isinstance(a, Lazy) and not isinstance(a, (Scalar, View)):
                a = self.n.arrays.view_of(self.n.arrays.materialize(a, out, node).id, out)
            operands.append(a)
        value = self.n.arrays.apply(_elementwise_op(obj), operands, out, node)
        target = self.n.operand(args[-1], out)
        if isinstance(target, Lazy) and not isinstance(target, (Scalar, View)):
            # an array computed for it (PyTransit's `sign(1.0, sin(w + ta))`): a new array
            target = self.n.arrays.materialize(target, out, node)
        if isinstance(target, ast.Name) and self.n.arrays.array_ndim(target) is not None:
            target = self.n.arrays.view_of(target.id, out)
        if not isinstance(target, View) or has_take(target):
            raise self.n.error(node, f"`{ast.unparse(node.func)}` with an `out` that is not "
                               "an array or a slice of one",
                               "Pass an array (or a basic slice of one) to write into.")
        self.n.check_global_write(target.base, node)
        # (an array the vectorizer filled once is written again: its adjoint needs the
        # record of what the write overwrote, as any array's)
        self.n.ctx.vec_temps.write_once.discard(target.base)
        start = len(out)
        # element by element in order, as numba's ufunc loop runs: an output overlapping an
        # input (np.multiply(x[:-1], 0.5, x[1:])) reads what earlier elements wrote, a
        # running update (numpy would compute the whole value first)
        self.n.arrays.store_elements(target, self.n.arrays.lazy_operand(value, out), out,
                                     node)
        ir.mark_written(out[start:], target.base)   # (the user's own write, as a[...] = v)
        return target

    def without_derivative(self, value, out):
        """`value` (a number or an array) as a constant: stop_gradient of it."""
        # (a view stays one: numba's stopped view is the array's elements themselves)
        value = self.n.arrays.lazy_operand(
            value if isinstance(value, Lazy) else self.n.to_atom(out, value), out)
        if isinstance(value, Lazy) and not isinstance(value, Scalar):
            return _stopped(value)
        atom = value.atom if isinstance(value, Scalar) else value
        return self.n.arrays.scalar_op(("call", stop_gradient), [atom], out)

    def _a_tuple(self, node):
        """Whether `node` surely gives a tuple: written out, a name holding one, a named
        tuple made by its class."""
        if isinstance(node, ast.Tuple):
            return True
        if isinstance(node, ast.Name):
            return isinstance(self.n.tuple_named(node.id), TupleValue)
        if isinstance(node, ast.Call):
            cls = self.n.src.resolve(node.func)
            return isinstance(cls, type) and issubclass(cls, tuple)
        return False

    def stopped_tuple(self, value, out, node):
        """stop_gradient of a tuple of numbers: each number in it stopped, the tuple's
        structure and field names kept, each array in it stopped."""
        items = []
        for item in value.items:
            if isinstance(item, TupleValue):
                items.append(self.stopped_tuple(item, out, node))
                continue
            # (an array: a copy of numba's, the array itself, which joins.check_frozen
            # keeps apart from writes)
            items.append(self.n.to_atom(out, self.without_derivative(item, out)))
        return TupleValue(items, value.fields)

    # whole-array functions, each lowered by the method registered for its registry handler --
    def primitive(self, node, obj, rule, out):
        if len(node.args) > len(rule.params) and _constant(obj):
            # piecewise constant (round(s, 2)): numba's call as it is, no derivative
            return self.without_derivative(self.opaque_call(node, obj, out), out)
        if obj is stop_gradient and len(node.args) == 1 and not node.keywords and \
                self._a_tuple(node.args[0]):
            self.n.stopped += 1     # (JAX's stop_gradient of a pytree)
            try:
                value = self.n.rhs(node.args[0], out)
            finally:
                self.n.stopped -= 1
            if not isinstance(value, TupleValue):
                raise self.n.error(node, "stop_gradient of a tuple adjit cannot read item by "
                                   "item", "Stop its numbers and arrays one by one.")
            return self.stopped_tuple(value, out, node)
        if obj is stop_gradient:
            self.n.stopped += 1   # no derivative leaves: np.max needs no tie split
        try:
            args = self.n.operands(node.args, out)
        finally:
            if obj is stop_gradient:
                self.n.stopped -= 1
        if obj is stop_gradient and len(args) == 1 and isinstance(args[0], Lazy):
            # an array: every element stopped, fused like any elementwise operation
            return _stopped(args[0])
        args = [self.n.to_atom(out, a) for a in args]
        spelled = ast.parse(self.n.ctx.env.spell(obj, "f"), mode="eval").body
        if obj in (min, max) and len(args) > 2:
            acc = args[0]
            for a in args[1:]:
                acc = self.n.to_atom(out, ast.Call(func=spelled, args=[acc, a], keywords=[]))
            return acc
        if len(args) != len(rule.params):
            raise self.n.error(node, f"`{ast.unparse(node.func)}` called with {len(args)} "
                               f"argument(s); adjit's rule takes {len(rule.params)}",
                               "Call it with the documented number of arguments "
                               "(math.log(x) / math.log(b) for a log in base b).")
        return ast.Call(func=spelled, args=args, keywords=[])

    def allocation(self, node, obj, out):
        kind = ALLOCATORS[obj]
        shape = [kw.value for kw in node.keywords if kw.arg == "shape"]
        if shape and kind != "like" and not node.args:
            # np.zeros(shape=(n, n)), as numba takes it: the shape by position
            node = ast.copy_location(ast.Call(
                func=node.func, args=shape, keywords=[kw for kw in node.keywords
                                                      if kw.arg != "shape"]), node)
        given = [kw.value for kw in node.keywords if kw.arg == "dtype"]
        for kw in node.keywords:
            if kw.arg != "dtype":
                raise self.n.error(node, f"`{ast.unparse(node.func)}` with "
                                   f"`{kw.arg}=` argument",
                                   "Pass the shape, and the dtype as dtype=.")
        if len(node.args) == 2 and kind != "like" and not (
                isinstance(node.args[1], ast.Constant) and
                isinstance(node.args[1].value, (int, float))):
            given.append(node.args[1])          # np.zeros(n, np.float64): by position
        if given:
            dtype = self.declared_dtype(given[-1], node)
            node = ast.copy_location(ast.Call(func=node.func, args=node.args[:1] if len(
                node.args) == 2 and kind != "like" else node.args, keywords=[]), node)
            if (dtype.kind in "iub" or dtype == np.float32) and kind == "like" and \
                    len(node.args) == 1 and obj in LIKE_BASES:
                # np.zeros_like(x, dtype=np.int64): numba's np.zeros(x.shape, np.int64)
                shape = ast.copy_location(ast.Attribute(value=node.args[0], attr="shape",
                                                        ctx=ast.Load()), node)
                node = ast.copy_location(ast.Call(func=node.func, args=[shape], keywords=[]),
                                         node)
                obj, kind = LIKE_BASES[obj], ALLOCATORS[LIKE_BASES[obj]]
            if (dtype.kind in "iub" or dtype == np.float32) and kind != "like" and \
                    len(node.args) == 1:
                # an integer or boolean array of the user's (no derivative) or a float32 one:
                # kept in its dtype
                obj = DECLARED_ALLOCATORS[obj, dtype]
            elif dtype.names is not None:
                raise self.n.error(node, f"`{ast.unparse(node.func)}` of a record array "
                                   f"(dtype {dtype}) other than at the top of the function's "
                                   "body", "adjit reads a record array the function "
                                   "allocates once, outside loops and branches (`params = "
                                   "np.zeros(1, dtype=DT)`, its only binding), with DT a "
                                   "module-level structured dtype of number fields: allocate "
                                   "it there, before the loop, and fill its fields in it.")
            elif dtype != np.float64:
                raise self.n.error(node, f"`{ast.unparse(node.func)}` with dtype {dtype}",
                                   "adjit allocates the arrays that carry derivatives as "
                                   "float64: leave the dtype out (or write np.float64), or "
                                   "allocate an integer or boolean array.")
        if len(node.args) != 1:
            raise self.n.error(node, f"`{ast.unparse(node.func)}` with {len(node.args)} arguments",
                               "Pass one shape (n or (n, m)), or one array for the *_like forms.")
        spelled = ast.parse(self.n.ctx.env.spell(obj, "alloc"), mode="eval").body
        arg = node.args[0]
        whole = isinstance(arg, ast.Attribute) and arg.attr == "shape"
        part = isinstance(arg, ast.Subscript) and isinstance(arg.slice, ast.Slice) and \
            isinstance(arg.value, ast.Attribute) and arg.value.attr == "shape"
        if (whole or part) and kind != "like":
            # a.shape, or a slice of it (a.shape[:2]): a Shape of those sizes
            given = self.n.shape_of(arg.value, out) if whole else self.n.rhs(arg, out)
            elts = [self.n.to_atom(out, given.item(k), "_n") for k in range(given.ndim)]
            shape = ast.Tuple(elts=elts, ctx=ast.Load()) if len(elts) != 1 else elts[0]
            return ast.Call(func=spelled, args=[shape], keywords=[])
        if kind == "like":
            like = self.n.operand(arg, out)
            if isinstance(like, Lazy) and not isinstance(like, Scalar) and \
                    self.n.indexing.lazy_dtype(like) in ("i", "b"):
                # np.zeros_like(idx + 1): numba's array of the expression's dtype, which the
                # expression's own array has (analysis/types.py follows it)
                like = self.n.arrays.view_of(
                    self.n.arrays.materialize(like, out, node).id, out)
            if isinstance(like, Lazy) and not (isinstance(like, View) and like.is_identity()):
                # an expression or a name kept lazy: allocate by its shape
                elts = self.like_shape(arg, out, node, like)
                shape = ast.Tuple(elts=elts, ctx=ast.Load()) if len(elts) > 1 else elts[0]
                base = LIKE_BASES[obj]
                spelled = ast.parse(self.n.ctx.env.spell(base, "alloc"), mode="eval").body
                return ast.Call(func=spelled, args=[shape], keywords=[])
            shape = ir.name(like.base if isinstance(like, View) else self.n.array_name(arg))
        else:       # a size, a tuple of sizes, or a name holding one
            shape = self.argument_atom(arg, out)
        return ast.Call(func=spelled, args=[shape], keywords=[])

    def array_dtype(self, name):
        """The dtype of the array the Name node `name` names, where adjit knows it (an
        argument's, a local integer or float32 array's, a float array made from float64
        arguments); else None."""
        arr = self.n.array_name(name) if name.id in self.n.src.locals or \
            name.id in self.n.ctx.dtypes else name.id
        if arr in self.n.ctx.dtypes:
            return self.n.ctx.dtypes[arr]
        if self.n.ctx.arrays.get(arr, (0, ""))[1] == "f" and all(
                d == np.float64 for d in self.n.ctx.dtypes.values() if d.kind in "fc"):
            # a float array made from float64 arguments (boolean and integer ones make
            # float64 with them, as Python's floats do)
            return np.dtype(np.float64)
        return None

    def declared_dtype(self, given, node):
        """The numpy dtype an allocation names: np.float64, float, np.int32, np.bool_,
        numba.float64, 'f8', np.dtype(...), `x.dtype` of an argument array, or a helper's
        parameter given one (`np.empty(n, dtype=result_dtype)`)."""
        if isinstance(given, ast.Call) and \
                self.n.src.resolve(given.func) is appends.element_dtype:
            # a list built by appends of an array's elements (normalize/appends.py)
            return self.array_dtype(given.args[0]) or np.dtype(np.float64)
        dtype = self.n.dtype_of(given)
        if dtype is not None:
            return dtype
        if isinstance(given, ast.Attribute) and given.attr == "dtype" and \
                isinstance(given.value, ast.Name):
            raise self.n.error(node, f"`{ast.unparse(given)}` as a dtype, of an array that is "
                               "not an argument", "Write the dtype (np.float64, np.int64).")
        if isinstance(given, ast.Call) and self.n.src.resolve(given.func) is np.dtype and \
                len(given.args) == 1 and not given.keywords:
            return self.declared_dtype(given.args[0], node)
        value = given.value if isinstance(given, ast.Constant) else self.n.src.resolve(given)
        try:
            if isinstance(value, numba.types.Type):
                return np.dtype(numba.np.numpy_support.as_dtype(value))
            if value in (int, bool):     # (numba's np.zeros takes neither)
                raise TypeError(value)
            return np.dtype(value)
        except (TypeError, ValueError, NotImplementedError, numba.core.errors.NumbaError):
            raise self.n.error(node, f"`{ast.unparse(given)}` as a dtype",
                               "Write a numpy dtype: np.float64, np.int64, np.bool_.") from None

    def inactive_call(self, node, entry, out):
        """A function with no derivative (np.argsort, a random draw): called as it is, its
        arguments atoms (arrays evaluated), keywords placed by the entry's parameters."""
        args = list(node.args)
        options = []
        for kw in node.keywords:
            if kw.arg in entry.options:
                if not (isinstance(kw.value, ast.Constant) and
                        kw.value.value in entry.options[kw.arg]):
                    raise self.n.error(node, f"`{entry.name}` with {kw.arg}="
                                       f"{ast.unparse(kw.value)}", f"Write {kw.arg}= as one "
                                       "of " + ", ".join(repr(v) for v in
                                                         entry.options[kw.arg]) + ".")
                options.append(ast.keyword(arg=kw.arg, value=ir.const(kw.value.value)))
        keywords = [kw for kw in node.keywords if kw.arg not in entry.options]
        if entry.params != ("*",):
            for kw in keywords:
                if kw.arg not in entry.params or entry.params.index(kw.arg) < len(node.args):
                    raise self.n.error(node, f"`{entry.name}` with the keyword `{kw.arg}`",
                                       f"Pass {', '.join(entry.params)} (by position or "
                                       "keyword) only.")
                k = entry.params.index(kw.arg)
                args += [None] * (k + 1 - len(args))
                args[k] = kw.value
            if None in args:
                raise self.n.error(node, f"`{entry.name}` with an argument left out before "
                                   "one given", "Pass the arguments before it too.")
        elif keywords:
            raise self.n.error(node, f"keyword arguments to `{entry.name}`",
                               "Pass the sizes by position.")
        if entry.params != ("*",) and len(node.args) > len(entry.params):
            extra = _parameter_name(entry.obj, len(entry.params))
            raise self.n.error(node, f"`{entry.name}` with the positional argument "
                               f"`{extra or len(entry.params) + 1}`",
                               f"adjit calls it with {', '.join(entry.params)} only"
                               + (" (of a whole array: np.argmax(a) indexes a.ravel(); "
                                  "loop over the rows for one per row)."
                                  if entry.obj in (np.argmax, np.argmin) else "."))
        if entry.statement != (self.n.statement_call is node) and not \
                (entry.effect and self.n.statement_call is node):     # (a draw thrown away)
            raise self.n.error(node, f"`{entry.name}` used as a value" if entry.statement else
                               f"`{entry.name}` called for nothing",
                               "Call it as a statement of its own." if entry.statement else
                               "Assign its result.")
        call = self.call_as_is(entry.obj, args, out, node)
        call.keywords = options         # (np.argsort's kind='mergesort', as written)
        return call

    def draw_call(self, node, entry, out):
        """np.random.normal(loc, scale) & co.: the function of rules/draws.py that computes
        it as numba does, from standard draws (with `size`, its array form), inlined in place
        of the call; its statements are the user's line's. The standard draws in it that
        have no pathwise derivative in a parameter (np.random.gamma's shape) are named as
        the user's draw where that is refused (analysis/activity.py)."""
        params = entry.params
        bound = {}
        if len(node.args) > len(params):
            raise self.n.error(node, f"`{entry.name}` with {len(node.args)} arguments",
                               f"It takes {', '.join(params)}.")
        for name, a in zip(params, node.args):
            bound[name] = a
        for kw in node.keywords:
            if kw.arg not in params or kw.arg in bound:
                raise self.n.error(node, f"`{entry.name}` with the keyword `{kw.arg}`",
                                   f"Pass {', '.join(params)} (by position or keyword), each "
                                   "once.")
            bound[kw.arg] = kw.value
        given = [k for k, name in enumerate(params) if name in bound]
        if given and any(params[k] not in bound for k in range(max(given))):
            raise self.n.error(node, f"`{entry.name}` with an argument left out before one "
                               "given", "Pass the arguments before it too (numba has no "
                               "defaults there).")
        size = bound.pop("size", None)
        if isinstance(size, ast.Constant) and size.value is None:
            size = None
        scalar, sized = entry.draw
        code = scalar.__code__
        defaults = dict(zip(code.co_varnames[:code.co_argcount][
            code.co_argcount - len(scalar.__defaults__ or ()):], scalar.__defaults__ or ()))
        args = []
        for name in params[:-1]:
            if name not in bound and name not in defaults:
                raise self.n.error(node, f"`{entry.name}` without its parameter `{name}`",
                                   f"Pass {name} (numba requires it).")
            args.append(bound[name] if name in bound else ir.const(defaults[name]))
        call = ast.Call(func=node.func, args=args + ([size] if size is not None else []),
                        keywords=[])
        ast.copy_location(call, node)
        start = len(out)
        result = self.n.inline(call, sized if size is not None else scalar, out)
        for s in ir.walk_stmts(out[start:]):
            ir.annotate(s, origin=self.n.origin)
            value = getattr(s, "value", None)
            if isinstance(value, ast.Call):
                inner = INACTIVE.get(self.n.resolve_generated(value.func))
                if inner is not None and inner.refused:
                    ir.annotate(value, callee=f"`{entry.name}`")
        return result

    def opaque_call(self, node, obj, out, arguments=None, unread=None):
        """A call of a function with no derivative rule (np.searchsorted, np.digitize,
        np.unique, ...), kept as it is; its result type is numba's (rules/opaque.py). The
        reverse and tangent passes refuse it where a derivative would flow through it.
        `arguments`: node's positional arguments as opaque_argument made them already (a
        lowering that passes them to a second call too evaluates each one once).
        `unread`: for an @njit helper adjit could not read, the AdjitError reading it
        raised; it is called as numba compiles it where frontend/purity.py shows that it
        writes no array it is given, returns no view of one and has no effect, and is
        refused with that error where it cannot."""
        name = ast.unparse(node.func)
        if unread is not None:
            return self.kept_helper(node, obj, out, unread)
        if not callable(obj) and not isinstance(obj, numba.types.WrapperAddressProtocol):
            raise self.n.error(node, f"a call to `{name}`, which is not a function",
                               "Call functions.")
        if any(kw.arg in (None, "out") for kw in node.keywords):
            raise self.n.error(node, f"`{name}` with `out=` or `**keywords`",
                               "Assign the result instead of passing out=; pass keywords by name.")
        user = not library_function(obj)
        if arguments is None:
            arguments = [self.opaque_argument(a, out, user) for a in node.args]
        atoms, descs = zip(*arguments) if arguments else ((), ())
        block = getattr(getattr(obj, "py_func", obj), "__adjit_objmode__", None)
        for k in sorted(block["written"]) if block else ():
            if descs[k][0] == "array":
                raise self.n.error(node, f"a `with objmode()` block (line {block['line']}) "
                                   f"that may change the array `{block['inputs'][k]}` (it "
                                   "writes into it, or passes it to a call or method)",
                                   "adjit cannot see what it writes: return what the block "
                                   "computes as an output (objmode(y=\"float64[:]\")) and "
                                   "store it outside the block.")
        keywords = [(kw.arg, self.opaque_argument(kw.value, out, user))
                    for kw in node.keywords]
        kw_descs = tuple((k, d) for k, (_, d) in keywords)
        try:
            result = opaque.result(obj, descs, kw_descs)
        except opaque.Untyped as exc:
            if obj in OPERATOR_SYMBOLS:
                kinds = " and ".join(_described(d) for d in descs)
                raise self.n.error(node, f"the {OPERATOR_SYMBOLS[obj]} operator on {kinds}",
                                   "numba takes integers or booleans (and arrays of them) "
                                   "there: compare first, (x > 0) & (y > 0), or convert "
                                   "with int(...).") from None
            if block is not None:
                raise self.n.error(node, f"a `with objmode()` block (line {block['line']}) "
                                   f"that numba does not compile ({exc})",
                                   "numba reads the block's code even though it runs it "
                                   "as Python: write it as numba accepts it (njit the "
                                   "function alone to see numba's message).") from None
            entry = REGISTRY.get(obj)
            advice = ("Call it as numba accepts it; write it as Python/@njit code adjit can "
                      "read (loops and math functions) if a derivative must flow through it.")
            if entry is not None and entry.family == "unsupported":
                advice = f"`{name}` is not differentiated: {entry.notes}."
            if isinstance(obj, np.ufunc) and entry is None:
                # numba's vectorize(target="parallel") returns a plain ufunc that keeps no
                # Python kernel (frontend/source.py records those built after adjit's import,
                # and reads one built before from its module where it computes the ufunc)
                kernel = recover_parallel_kernel(obj)
                if kernel is not None:
                    return self.n.arrays.ufunc_call(node, obj, kernel, out)
                raise self.n.error(node, f"a call to the ufunc `{name}`, which keeps no "
                                   "Python kernel adjit can read (numba's @vectorize with "
                                   "target='parallel' builds such a ufunc; adjit records "
                                   "the kernels of those built after it is imported)",
                                   "Import adjit before the module that builds it, or "
                                   "build it with @vectorize on the cpu target: adjit then "
                                   "differentiates its kernel.") from None
            raise self.n.error(node, f"a call to `{name}` that adjit has no derivative rule for "
                               f"and numba does not compile for these arguments ({exc})",
                               advice) from None
        if result is None and obj is range:
            raise self.n.error(node, "a `range(...)` held as a value (a range is held in a "
                               "name only where that name is read by nothing but for loops)",
                               "Loop over the range where it is made, or hold its bounds "
                               "in names (start, stop = a, b) and write range(start, stop) "
                               "where it is read.")
        if result is None:
            raise self.n.error(node, f"a call to `{name}`, whose result adjit cannot hold "
                               "(complex numbers, strings, objects)",
                               "Call it outside the differentiated function.")
        if result == ("none",):
            if self.n.statement_call is not node:
                raise self.n.error(node, f"`{name}` used as a value (it returns None)",
                                   "Call it as a statement of its own.")
            for atom, desc in zip(list(atoms) + [a for _, (a, _) in keywords],
                                  list(descs) + [d for _, d in kw_descs]):
                if desc[0] == "array" and self.n.ctx.arrays[atom.id][1] == "f" and \
                        block is None and not reads_only(obj):  # (a block's: refused above)
                    raise self.n.error(node, f"a call to `{name}` for its effect, with the float "
                                       f"array `{ast.unparse(atom)}`, which it may change",
                                       "adjit cannot see what it writes: write the change as "
                                       "code adjit can read, or call it on a copy.")
        names = [a for a, d in zip(atoms, descs) if d[0] != "const"] + \
            [a for _, (a, d) in keywords if d[0] != "const"]
        # (a call with an effect is never made to find out: a trial draw would advance
        # numba's generator, a trial block would run the user's Python. numpy's draws make
        # new arrays; a block's outputs are checked against its inputs where it runs,
        # normalize/objmode.py)
        shares = opaque.may_share_memory(obj, descs, kw_descs) \
            if result[0] in ("array", "tuple") and known_effect(obj) is None else False
        if isinstance(shares, str):
            raise self.n.error(node, f"`{name}`, which has no derivative rule: adjit could not "
                               "tell whether its result is a view of its argument (memory "
                               "adjit cannot follow writes through), since a trial call on "
                               f"small arrays of these types failed ({shares})",
                               "Call it outside the differentiated function and pass its "
                               "result in, or write it as code adjit can read.")
        if shares:
            raise self.n.error(node, f"`{name}`, which has no derivative rule and may return a "
                               "view of its argument (memory adjit cannot follow writes through)",
                               "Index or reshape the array instead (x[None], x.reshape(...)), or "
                               "call it outside the differentiated function.")
        if result == ("none",):
            return self.effect_call(obj, atoms, descs, names, kw_descs, out, node)
        if result[0] == "tuple" and block is not None:
            # (each element would be a call of its own: the block would run once for each;
            # several outputs are one call and readers of the others: normalize/objmode.py)
            raise self.n.error(node, f"a `with objmode()` block (line {block['line']}) with "
                               "a tuple output",
                               "Declare each value as an output of its own: objmode(a="
                               "\"float64\", b=\"float64\").")
        if result[0] == "tuple":
            items = []
            for k, item in enumerate(result[1]):
                call = self.call_of(opaque.caller(obj, descs, kw_descs, k), names)
                ir.annotate(call, opaque=item, callee=f"`{name}` (element {k} of its result)")
                items.append(self.own_copy(self.n.to_atom(out, call), item, out))
            return TupleValue(items)
        call = self.call_of(opaque.caller(obj, descs, kw_descs), names) if keywords else \
            self.call_of(obj, atoms)
        entry = REGISTRY.get(obj)
        why = f" (not differentiated: {entry.notes})" if entry is not None and \
            entry.family == "unsupported" else ""
        implementation = numba_implementation(obj) if isinstance(obj, types.FunctionType) \
            else None
        if implementation is not None:
            why = (f" (numba compiles calls to it from {implementation}, registered with "
                   "numba.extending.overload, which adjit does not read)")
        if block is not None:
            name = "with objmode()"
            why = f" block at line {block['line']} (Python code adjit does not differentiate)"
        return self.own_copy(ir.annotate(call, opaque=result, callee=f"`{name}`{why}"), result,
                             out)

    def kept_helper(self, node, obj, out, unread):
        """A call of the @njit helper `obj` adjit could not read (`unread`: why), kept as
        numba's call (opaque_call)."""
        name = ast.unparse(node.func)
        obj = opaque.not_inlined(obj)

        def refuse(why):
            head, construct, advice = split_error(unread)
            return AdjitError(f"{head}{construct}; and adjit does not call `{name}` as numba "
                              f"compiles it either: it {why} (adjit calls an @njit function "
                              "it cannot read so, where no derivative flows through it, when "
                              "the function writes no array it is given, returns no view of "
                              f"one and has no effect). {advice}")
        if any(kw.arg is None for kw in node.keywords):
            raise refuse("is called with **keywords")
        if any(self.given_list(a) for a in node.args + [kw.value for kw in node.keywords]):
            raise refuse("is given a list, which numba's function would get as the array "
                         "adjit reads the list as (where `+` adds each element, and joins "
                         "a list)")
        # (its lists refused above, with the reason adjit could not read the helper)
        arguments = [self.opaque_argument(a, out) for a in node.args]
        atoms, descs = zip(*arguments) if arguments else ((), ())
        keywords = [(kw.arg, self.opaque_argument(kw.value, out)) for kw in node.keywords]
        kw_descs = tuple((k, d) for k, (_, d) in keywords)
        try:
            result = opaque.result(obj, descs, kw_descs, contiguous=True)
        except opaque.Untyped as exc:
            raise refuse(f"is a call numba does not compile for these arguments ({exc})") \
                from None
        if result is None:
            raise refuse("returns something other than numbers, arrays of them and tuples "
                         "of those (complex numbers, strings, objects)")
        called = opaque.called_types(obj, descs, kw_descs, contiguous=True)
        why = purity.proof(obj, called) if called is not None else \
            ("is not called where numba compiles the call", None)
        if why is not None:
            what, line = why
            raise refuse(what + ("" if line is None else f", line {line}"))
        names = [a for a, d in zip(atoms, descs) if d[0] != "const"] + \
            [a for _, (a, d) in keywords if d[0] != "const"]
        if result == ("none",):     # (a check that may raise: the only thing it can do)
            if self.n.statement_call is not node:
                raise self.n.error(node, f"`{name}` used as a value (it returns None)",
                                   "Call it as a statement of its own.")
            call = self.call_of(opaque.caller(obj, descs, kw_descs, contiguous=True), names)
            out.append(ir.annotate(ast.Expr(value=ir.annotate(call, opaque=("none",),
                                                              unwritten=True)),
                                   origin=self.n.origin))
            return ir.const(None)
        callee = f"`{name}` (an @njit function adjit cannot read: {unread_reason(unread)})"

        def element(k):
            return callee.replace("` (", f"` (element {k} of its result; ", 1)
        if opaque.packable(result):     # (the call made once, its elements read after)
            pack, unpack = opaque.packed_callers(obj, descs, kw_descs, result[1],
                                                 contiguous=True)
            packed = self.n.to_atom(out, ir.annotate(self.call_of(pack, names), pure=True,
                                                     opaque=("array", 1, "f"), callee=callee))
            return TupleValue([self.own_copy(self.n.to_atom(out, ir.annotate(
                self.call_of(unpack[k], [packed]), opaque=item, pure=True, callee=element(k))),
                item, out) for k, item in enumerate(result[1])])
        if result[0] == "tuple":
            items = []
            for k, item in enumerate(result[1]):
                call = self.call_of(opaque.caller(obj, descs, kw_descs, k, contiguous=True),
                                    names)
                ir.annotate(call, opaque=item, pure=True, callee=element(k))
                items.append(self.own_copy(self.n.to_atom(out, call), item, out))
            return TupleValue(items)
        call = self.call_of(opaque.caller(obj, descs, kw_descs, contiguous=True), names)
        return self.own_copy(ir.annotate(call, opaque=result, callee=callee, pure=True),
                             result, out)

    def own_copy(self, value, desc, out):
        """An array result of a call with no rule, copied: the function may return a view of
        an argument (np.atleast_1d, np.ascontiguousarray), and adjit's analysis of writes
        needs every array name to own its elements."""
        if desc[0] != "array":
            return value
        name = value if isinstance(value, ast.Name) else self.n.to_atom(out, value)
        return ast.Call(func=ast.Attribute(value=name, attr="copy", ctx=ast.Load()), args=[],
                        keywords=[])

    def effect_call(self, obj, atoms, descs, names, kw_descs, out, node):
        """A call with no rule made for its effect (np.random.shuffle(idx), print(...)) on
        integer arrays: it gets copies of the arrays, which are then copied back element by
        element, so that the change is a store adjit sees (the backward sweep reads the
        values from before it where it needs them)."""
        copies = {}
        block = getattr(getattr(obj, "py_func", obj), "__adjit_objmode__", None)
        unwritten = block is not None or reads_only(obj)    # (print writes none)
        for a in names if not unwritten else ():    # (a block writes no array it is given)
            if isinstance(a, ast.Name) and a.id in self.n.ctx.arrays:
                copy_of = ast.Call(func=ast.Attribute(value=ir.name(a.id), attr="copy",
                                                      ctx=ast.Load()), args=[], keywords=[])
                copies[a.id] = self.n.to_atom(out, copy_of, "_c")
        names = [copies.get(a.id, a) if isinstance(a, ast.Name) else a for a in names]
        if kw_descs:
            call = self.call_of(opaque.caller(obj, descs, kw_descs), names)
        else:
            call = self.call_of(obj, [copies.get(a.id, a) if isinstance(a, ast.Name) else a
                                      for a in atoms])
        # (`unwritten`: a block's arrays, which it was found not to write, and print's:
        # analysis/types.py)
        out.append(ir.annotate(ast.Expr(value=ir.annotate(call, opaque=("none",),
                                                          unwritten=unwritten)),
                               origin=self.n.origin))
        for arr, c in copies.items():
            self.n.store_view(self.n.arrays.view_of(arr, out), self.n.arrays.view_of(c.id, out),
                              None, out, node)
        return ir.const(None)

    def given_list(self, a):
        """Whether the argument `a` is a list adjit reads as an array (anf.holds_list), other
        than numbers written out (passed to the call as they are written)."""
        return not _written_out(a) and self.n.holds_list(a)

    def opaque_argument(self, a, out, user=False):
        """(atom, descriptor) of an argument of a call with no derivative rule; `user`: of
        a function of the user's (numba compiles it for what adjit passes: an array for a
        list, which it would join where `+` adds numpy's arrays)."""
        if _written_out(a):
            return a, ("const", tuple(e.value for e in a.elts))
        if user and self.given_list(a):
            # numba's function would get the array adjit reads the list as (where its `+`
            # adds each element, a list's joins)
            shown = "" if isinstance(a, ast.Name) and a.id.startswith("listcomp") else \
                f" (`{ast.unparse(a)}`)"      # (a comprehension's array: comprehensions.py)
            raise self.n.error(a, f"a list{shown} passed to a function adjit calls as numba "
                               "compiles it", "Pass an array (np.array([...])) or a tuple, as "
                               "the function expects.")
        value = self.n.rhs(a, out)
        if isinstance(value, TupleValue):
            return self.opaque_tuple(value, a, out)
        if isinstance(value, NoneValue):        # an optional argument left out, passed on
            return ir.const(None), ("const", None)
        return self.described(self.n.arrays.lazy_operand(value, out), out)

    def described(self, value, out):
        """(atom, descriptor) of a value the normalizer made (an atom, a Lazy array)."""
        if isinstance(value, Scalar):
            value = value.atom
        elif isinstance(value, Lazy):
            value = ir.name(self.n.arrays.materialize(value, out).id)
        elif not ir.is_atom(value):
            value = self.n.to_atom(out, value)
        if isinstance(value, ast.Constant):
            return value, ("const", value.value)
        if value.id in self.n.ctx.arrays:
            ndim, dtype = self.n.ctx.arrays[value.id]
            return value, ("array", ndim, dtype if dtype in ("f", "i", "b") else "f")
        return value, ("i",) if value.id in self.n.ctx.ints else \
            ("b",) if value.id in self.n.ctx.bools else ("f",)

    def opaque_tuple(self, value, node, out):
        """(tuple expression, ("tuple", descriptors)) of a tuple passed to a call kept as
        numba's (interpolation.py's grids, `((0.0, 1.0, 10), (0.0, 2.0, 20))`, given to its
        @overload'ed entry points): its items as atoms, nested tuples as tuples."""
        elts, descs = [], []
        for item in value.items:
            if isinstance(item, TupleValue):
                e, d = self.opaque_tuple(item, node, out)
            else:
                e, d = self.described(item, out)
                if d[0] == "const":
                    d = opaque.number_descriptor(d[1])
                    if d is None:
                        raise self.n.error(node, "a tuple holding something other than "
                                           "numbers and arrays passed to a call kept as "
                                           "numba's", "Pass numbers, arrays and tuples of "
                                           "them.")
            elts.append(e)
            descs.append(d)
        made = ast.Tuple(elts=elts, ctx=ast.Load())
        if value.fields:    # (a custom_vjp function's rules get it back: lower_custom)
            ir.annotate(made, named=tuple(value.fields))
        return made, ("tuple", tuple(descs))

    def constant_number(self, node):
        """The value of a number written as a constant (2, -1, np.inf, -np.inf, a module
        global number), else None."""
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            v = self.constant_number(node.operand)
            return None if v is None else -v
        if isinstance(node, ast.Constant):
            v = node.value
        elif isinstance(node, (ast.Name, ast.Attribute)):
            v = self.n.src.resolve(node)
        else:
            return None
        return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    def norm_of_order(self, x, order, out, node):
        """np.linalg.norm(x, ord) as numba computes it: for vectors sum(|x|^p)^(1/p), 1, inf,
        -inf, 0 (the count of nonzeros); for matrices the max/min column (1, -1) or row
        (inf, -inf) sum of |x|, (2, -2) its largest (smallest) singular value."""
        if not isinstance(x, Lazy) or isinstance(x, Scalar) or len(x.shape) not in (1, 2):
            raise self.n.error(node, "np.linalg.norm with `ord` of something that is not a "
                               "vector or a matrix", "Pass a 1-D or 2-D array.")
        a = self.n.arrays.elementwise(("call", abs), [x], out, node)
        inf = math.inf
        if len(x.shape) == 2 and order in (2, -2):     # the largest / smallest singular value
            return self.n.arrays.reduce("max" if order > 0 else "min",
                                        self.singular_values(x, out, node), None, out, node)
        if len(x.shape) == 2:
            if order not in (1, -1, inf, -inf):
                raise self.n.error(node, f"the matrix norm of order {order!r}",
                                   "adjit differentiates matrix norms of order 1, -1, 2, -2, inf, "
                                   "-inf and the Frobenius norm (no ord).")
            sums = self.n.arrays.reduce("sum", a, 0 if order in (1, -1) else 1, out, node)
            if isinstance(sums, ast.Name):
                sums = self.n.arrays.view_of(sums.id, out)
            return self.n.arrays.reduce("max" if order > 0 else "min", sums, None, out, node,
                                        empty=0.0)      # (numba's norm of no elements)
        if order == inf or order == -inf:
            return self.n.arrays.reduce("max" if order > 0 else "min", a, None, out, node,
                                        empty=0.0)
        if order == 0:
            nonzero = self.n.arrays.elementwise(("call", "where"), [
                self.n.arrays.elementwise(("cmp", ast.NotEq()), [x, ir.const(0.0)], out, node),
                ir.const(1.0), ir.const(0.0)], out, node)
            return self.n.arrays.reduce("sum", nonzero, None, out, node)
        if order == 1:
            return self.n.arrays.reduce("sum", a, None, out, node)
        powered = self.n.arrays.elementwise(("call", "pow"), [a, ir.const(float(order))], out, node)
        total = self.n.arrays.reduce("sum", powered, None, out, node)
        return self.n.arrays.scalar_op(("call", "pow"), [total, ir.const(1.0 / order)], out)

    def size_local(self, a, k, out):
        """A new local holding a.shape[k], for slice bounds the views read as user code."""
        name = self.n.fresh_local("_m" if k == 0 else "_n")
        self.n.emit_assign(out, self.n.local(name), Shape(a.id).item(k))
        self.n.ctx.ints.add(self.n.local(name))
        return name

    def singular_values(self, x, out, node):
        """The view s of the singular values of the 2-D array value x (vec.svd_packed)."""
        arr = self.n.arrays.materialize(x, out, node)
        packed = self.n.to_atom(out, self.call_of(vec.svd_packed, [arr]), "_p")
        return self.unpack_svd(packed, arr, out, node).items[1]

    def unpack_svd(self, packed, a, out, node, full=True):
        """(U, s, Vh) as views of vec.svd_packed(a): U in the first m rows, s in row m,
        Vh below, zero-padded to max(m, n) columns. Not `full` (full_matrices=False): the
        first k = min(m, n) columns of U and rows of Vh, the reduced SVD."""
        m, n = self.size_local(a, 0, out), self.size_local(a, 1, out)
        whole = self.n.arrays.view_of(packed.id, out)
        rows_u = ast.Slice(lower=None, upper=ir.name(m), step=None)
        rows_vh = ast.Slice(lower=ast.BinOp(left=ir.name(m), op=ast.Add(), right=ir.const(1)),
                            upper=None, step=None)
        k = ast.Call(func=ast.Name(id="min", ctx=ast.Load()), args=[ir.name(m), ir.name(n)],
                     keywords=[])
        first_k = ast.Slice(lower=None, upper=k, step=None)
        cols_u = rows_u if full else first_k
        if not full:
            rows_vh = ast.Slice(lower=rows_vh.lower, upper=ast.BinOp(
                left=rows_vh.lower, op=ast.Add(), right=copy.deepcopy(k)), step=None)
        return TupleValue([
            self.n.indexing.index_view(whole, [("slice", rows_u), ("slice", cols_u)], out, node),
            self.n.indexing.index_view(whole, [("int", ir.name(m)), ("slice", copy.deepcopy(
                first_k))], out, node),
            self.n.indexing.index_view(whole, [("slice", rows_vh), ("slice", ast.Slice(
                lower=None, upper=ir.name(n), step=None))], out, node)])

    def element(self, array, k, out):
        """The number array[k], as an atom."""
        return self.n.to_atom(out, ast.Subscript(value=ir.name(array.id), slice=ir.const(k),
                                                 ctx=ast.Load()))

    def by_position(self, node, args, rule):
        """The arguments of a call kept at array level, keywords placed by the parameter
        names of its rule (`np.bincount(x, weights=w)`), a parameter left out before one
        given taking its default."""
        name = ast.unparse(node.func)
        params = rule.params if rule is not None else ()
        placed = list(args) + [None] * (len(params) - len(args))
        for kw in node.keywords:
            if kw.arg not in params:
                raise self.n.error(node, f"`{name}` with `{kw.arg}=`",
                                   f"adjit differentiates {name}({', '.join(params)}); pass "
                                   "those (numba takes no others).")
            k = params.index(kw.arg)
            if placed[k] is not None:
                raise self.n.error(node, f"`{name}` given `{kw.arg}` twice", "Pass it once.")
            placed[k] = kw.value
        while placed and placed[-1] is None:
            placed.pop()
        for k, a in enumerate(placed):
            if a is None:
                if params[k] not in rule.defaults:
                    raise self.n.error(node, f"`{name}` without `{params[k]}`",
                                       f"Pass {params[k]}.")
                placed[k] = copy.deepcopy(rule.defaults[params[k]])
        return placed

    def call_as_is(self, obj, args, out, node):
        """A call of `obj` kept in the generated code, its arguments atoms: arrays evaluated
        into names, tuples of sizes kept as tuples of atoms."""
        return self.call_of(obj, [self.argument_atom(a, out) for a in args])

    def argument_atom(self, a, out):
        if isinstance(a, ast.Tuple):
            return ast.Tuple(elts=[self.n.atom(e, out) for e in a.elts], ctx=ast.Load())
        value = self.n.rhs(a, out) if isinstance(a, ast.Name) or (
            isinstance(a, ast.BinOp) and isinstance(a.op, ast.Add) and (
                self.n._tuple_length(a.left, out) is not None or
                self.n._tuple_length(a.right, out) is not None)) else None
        if isinstance(value, (Shape, TupleValue)):     # a tuple of sizes (a name, a sum)
            items = [value.item(k) for k in range(value.ndim)] if isinstance(value, Shape) \
                else value.items
            return ast.Tuple(elts=[self.n.to_atom(out, e) for e in items], ctx=ast.Load())
        value = self.n.operand(a, out)
        if isinstance(value, Scalar):
            value = value.atom
        elif isinstance(value, Lazy):
            value = ir.name(self.n.arrays.materialize(value, out).id)
        return value

    def call_of(self, obj, atoms):
        spelled = ast.parse(self.n.ctx.env.spell(obj, getattr(obj, "__name__", "f")),
                            mode="eval").body
        return ast.Call(func=spelled, args=list(atoms), keywords=[])

    def spread(self, what, node, array, rest, out):
        """np.var(a), np.std(a), np.ptp(a) (and the methods) over all elements, as numba
        compiles them: var = mean((a - mean(a)) ** 2) (numpy's two passes), std its square
        root, ptp = max - min; the derivative is that of the composition."""
        if array is None or rest or node.keywords:
            raise self.n.error(node, f"np.{what} with arguments other than the array",
                               f"numba compiles np.{what}(a) alone: write it over all elements, "
                               "or compose it from np.mean / np.max along an axis.")
        x = self.n.operand(array, out)
        if not isinstance(x, Lazy) or isinstance(x, Scalar):
            raise self.n.error(node, f"np.{what} of something that is not an array",
                               "Pass an array.")
        if not isinstance(x, View):
            x = self.n.arrays.view_of(self.n.arrays.materialize(x, out, node).id, out)
        if what == "ptp":
            hi = self.n.arrays.reduce("max", x, None, out, node, empty="EMPTY_PTP")
            lo = self.n.arrays.reduce("min", x, None, out, node, empty="EMPTY_PTP")
            return self.n.to_atom(out, ast.BinOp(left=hi, op=ast.Sub(), right=lo))
        m = self.n.arrays.reduce("mean", x, None, out, node)
        d = self.n.arrays.elementwise(("bin", ast.Sub()), [x, m], out, node)
        v = self.n.arrays.reduce("mean", self.n.arrays.elementwise(("call", "square"), [d], out,
                                                                   node), None, out, node)
        if what == "var":
            return v
        return self.n.arrays.scalar_op(("call", math.sqrt), [v], out)

    # manipulation by views and compositions ------------------------------------------------
    def joined(self, node, out, what, rule):
        a = self.n.indexing.call_arguments(node, ["tup"], {}, out)
        if not isinstance(a["tup"], (ast.Tuple, ast.List)):
            raise self.n.error(node, f"{what} of something that is not a tuple of arrays",
                               f"Write {what}((a, b)).")
        pieces = self.n.operands(list(a["tup"].elts), out)     # left to right (operands)
        if not pieces or any(not isinstance(p, Lazy) or isinstance(p, Scalar) for p in pieces):
            raise self.n.error(node, "joining something that is not an array",
                               f"Pass a tuple of arrays: {what}((a, b)).")
        axis, stack = rule(len(pieces[0].shape))
        return self.n.arrays.concatenate(None, axis, out, node, stack=stack, pieces=pieces)

    def sorted_view(self, node, v, out, what):
        """An array (a lazy value) in sorted order: a gather through np.argsort (whose order
        carries no derivative: the values move with their own adjoints); a 2-D array's rows
        each sorted, as numba sorts the last axis."""
        if len(v.shape) == 2:
            base = self.n.arrays.materialize(v, out, node)
            rows, cols = self.size_local(base, 0, out), self.size_local(base, 1, out)
            order = self.n.to_atom(out, self.call_of(vec.argsort_rows, [base]), "_s")
            flat = self.n.indexing.reshape_view(self.n.arrays.view_of(base.id, out),
                                                [ir.const(-1)], out, node)
            gathered = self.n.indexing.index_view(flat, [("array", order.id, 1)], out, node)
            return self.n.indexing.reshape_view(gathered, [ir.name(rows), ir.name(cols)], out,
                                                node)
        if len(v.shape) != 1:
            raise self.n.error(node, f"{what} of a {len(v.shape)}-D array",
                               f"{what} takes a 1-D or 2-D array here (sort in a loop).")
        base = self.n.arrays.materialize(v, out, node)
        order = self.n.fresh("_s")
        self.n.emit_assign(out, order, ast.Call(func=ast.parse(
            self.n.ctx.env.spell(np.argsort, "argsort"), mode="eval").body, args=[base],
            keywords=[]))
        return self.n.indexing.index_view(self.n.arrays.view_of(base.id, out),
                                          [("array", order, 1)], out, node)


def _constant(obj):
    """Whether the registry says obj is piecewise constant (no partial in any operand)."""
    rule = rule_for_call(obj)
    return rule is not None and all(p is None for p in rule.partials)


def _elementwise_op(obj):
    """The vectorizer's operation of an elementwise function: an operator class (np.add is
    `+`) is that operator; anything else a call."""
    fn = ELEMENTWISE[obj]
    if isinstance(fn, type) and issubclass(fn, ast.operator):
        return ("bin", fn())
    if isinstance(fn, type) and issubclass(fn, ast.unaryop):
        return ("unary", fn())
    return ("call", fn)


def _parameter_name(obj, k):
    """What numpy calls the k-th positional parameter of obj (`decimals` of np.round)."""
    import inspect
    try:
        params = list(inspect.signature(obj).parameters)
    except (TypeError, ValueError):
        params = []
    return params[k] if k < len(params) else None


def _described(desc):
    """An operand of a call with no rule in words: 'a float', 'an integer array', ..."""
    if desc[0] == "const":
        desc = ("b",) if isinstance(desc[1], bool) else ("i",) if isinstance(desc[1], int) \
            else ("f",)
    if desc[0] == "array":
        return {"f": "a float array", "i": "an integer array", "b": "a boolean array"}.get(
            desc[2], "an array")
    return {"f": "a float", "i": "an integer", "b": "a boolean"}.get(desc[0], "a value")
