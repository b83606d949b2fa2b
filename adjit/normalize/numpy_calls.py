"""numpy calls and array methods, lowered by what the registry says about them.

`numpy_call` asks the registry (rules/table.py) what a function is - elementwise (one scalar
primitive per element), a reduction, a whole-array function (lowered by the method registered
for its handler: normalize/lowering.py; the `lower_*` methods here and in views.py), an
allocation - and lowers it; `method` does the same for array methods (`a.sum()`, `a.T`,
`a.copy()`)."""
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
from ..rules import opaque
from ..runtime import vec
from ..rules.registry import REGISTRY
from .values import Shape, TupleValue
from .lowering import LOWERINGS, lowers
from .views import has_take
from .vectorize import ONE, Lazy, Op, Scalar, View, _index_node


ARRAY_METHODS = frozenset(("copy", "astype", "reshape", "ravel", "flatten", "dot", "var", "std", "ptp",
                           "swapaxes", "transpose")) | set(METHOD_REDUCTIONS) | \
    set(METHOD_FUNCTIONS)
"""The array methods NumpyCalls.method lowers (none writes its array)."""


class NumpyCalls:
    def method(self, node, out):
        """`a.sum()`, `a.reshape(...)`, `a.copy()` and the other array methods."""
        func = node.func
        name = func.attr
        if name == "copy" and not node.args and not node.keywords:
            base = self.rhs(func.value, out)
            if isinstance(base, ast.Name) and self.array_ndim(base) is not None:
                base = ir.name(self.array_name(func.value)) if isinstance(func.value, ast.Name) \
                    else base
                return ast.Call(func=ast.Attribute(value=base, attr="copy", ctx=ast.Load()),
                                args=[], keywords=[])
            base = self.lazy_operand(base, out)
            if isinstance(base, View) and base.is_identity():
                return ast.Call(func=ast.Attribute(value=ir.name(base.base), attr="copy",
                                                   ctx=ast.Load()), args=[], keywords=[])
            if isinstance(base, Lazy):
                return self.materialize(base, out, node)
            arr = self.array_name(func.value)
            return ast.Call(func=ast.Attribute(value=ir.name(arr), attr="copy", ctx=ast.Load()),
                            args=[], keywords=[])
        if name == "astype":
            return self.astype(node, out)
        if name in METHOD_REDUCTIONS:
            axis = self.axis_argument(node, node.args, 0)
            return self.reduce(METHOD_REDUCTIONS[name], self.operand(func.value, out), axis,
                               out, node)
        if name == "reshape" and not node.keywords:
            args = node.args[0].elts if len(node.args) == 1 and \
                isinstance(node.args[0], (ast.Tuple, ast.List)) else node.args
            return self.reshape_view(self.operand(func.value, out), args, out, node)
        if name in ("ravel", "flatten") and not node.args and not node.keywords:
            return self.reshape_view(self.operand(func.value, out), [ir.const(-1)], out, node,
                                     copy=name == "flatten")
        if name == "dot" and len(node.args) == 1:
            return self.matmul(self.operand(func.value, out), self.operand(node.args[0], out),
                               out, node)
        if name in ("var", "std", "ptp"):
            return self.spread(name, node, func.value, node.args, out)
        if name == "swapaxes" and len(node.args) == 2 and not node.keywords:
            return self.permute_axes("swapaxes", self.operand(func.value, out), node.args,
                                     node, out)
        if name == "transpose" and not node.keywords:
            axes = node.args[0] if len(node.args) == 1 and \
                isinstance(node.args[0], (ast.Tuple, ast.List)) else \
                (ast.Tuple(elts=node.args, ctx=ast.Load()) if node.args else None)
            return self.transpose(self.operand(func.value, out), out,
                                  self.axes_argument(axes, node), node)
        if name in METHOD_FUNCTIONS:      # a.cumsum(): np.cumsum(a)
            obj = METHOD_FUNCTIONS[name]
            spelled = ast.copy_location(ast.Attribute(value=ir.name("np"), attr=obj.__name__,
                                                      ctx=ast.Load()), node)
            call = ast.copy_location(ast.Call(func=spelled, args=[func.value] + node.args,
                                              keywords=node.keywords), node)
            return self.call_object(call, obj, out)
        raise self.error(node, f"the method call `.{name}(...)`",
                         f"Array methods adjit knows: {', '.join(sorted(ARRAY_METHODS))}; "
                         "use the numpy functions or loops for the rest.")

    def astype(self, node, out):
        """`a.astype(dtype)`: a new array (numpy copies): float64 values carry the
        derivative (a copy); an integer dtype truncates each element as int() does and a
        boolean one tests it against 0 (no derivative)."""
        func = node.func
        given = node.args + [kw.value for kw in node.keywords if kw.arg == "dtype"]
        if len(given) != 1 or any(kw.arg != "dtype" for kw in node.keywords):
            raise self.error(node, "`.astype(...)` with other than one dtype",
                             "Write a.astype(np.float64) or a.astype(np.int64).")
        dtype = self.declared_dtype(given[0], node)
        value = self.operand(func.value, out)
        if not isinstance(value, Lazy) or isinstance(value, Scalar):
            raise self.error(node, "`.astype(...)` of a number",
                             "Convert numbers with float(v) or int(v).")
        if dtype == np.float64:
            if self.lazy_dtype(value) == "f":
                return self.materialize(value, out, node, copy=True)
            op = ("call", float)
        elif dtype.kind in "iu":
            op = ("call", int)
        elif dtype.kind == "b":
            return self.elementwise(("cmp", ast.NotEq()), [value, ir.const(0)], out, node)
        else:
            raise self.error(node, f"`.astype({ast.unparse(given[0])})`",
                             "adjit keeps float64 arrays (and integer or boolean ones): "
                             "write .astype(np.float64), np.int64 or np.bool_.")
        return Op(op, [value], value.shape)

    def like_shape(self, arg, out, node, like=None):
        """Size atoms of the array expression `arg` (for the *_like allocators)."""
        like = self.operand(arg, out) if like is None else like
        if not isinstance(like, Lazy) or isinstance(like, Scalar):
            raise self.error(node, "a *_like allocation of something that is not an array",
                             "Pass an array: np.zeros_like(x).")
        return [ir.const(1) if s is ONE else s for s in like.shape]

    def axis_argument(self, node, args, position):
        """The constant `axis` of a reduction (positional or keyword), or None."""
        value = args[position] if len(args) > position else None
        for kw in node.keywords:
            if kw.arg == "axis":
                value = kw.value
            else:
                raise self.error(node, f"the keyword argument `{kw.arg}=`",
                                 "adjit supports axis= (an int constant) on reductions.")
        if value is None or (isinstance(value, ast.Constant) and value.value is None):
            return None
        if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub) and \
                isinstance(value.operand, ast.Constant):
            value = ast.Constant(value=-value.operand.value)
        if not (isinstance(value, ast.Constant) and isinstance(value.value, int)):
            raise self.error(node, "an axis that is not an int constant",
                             "Write the axis as a number: axis=0 or axis=-1.")
        return value.value

    def permute_axes(self, what, v, axis_nodes, node, out):
        """np.swapaxes(v, a, b) / v.swapaxes(a, b) and np.moveaxis(v, src, dst): views."""
        d = len(v.shape) if isinstance(v, Lazy) else 0
        a, b = (self.axes_argument(e, node, d) for e in axis_nodes)
        if what == "moveaxis":
            a, b = (list(e) if isinstance(e, list) else [e] for e in (a, b))
            if len(a) != len(b) or len(set(a)) != len(a) or len(set(b)) != len(b):
                raise self.error(node, "np.moveaxis with repeated axes or source and "
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
        return self.transpose(v, out, order, node)

    def axes_argument(self, node, where, ndim=None):
        """A constant axis (int) or tuple of axes (list of ints) from source; None for none.
        With `ndim`, negative axes count from the end and out-of-range ones are refused."""
        if node is None or (isinstance(node, ast.Constant) and node.value is None):
            return None
        if isinstance(node, (ast.Tuple, ast.List)):
            return [self.axes_argument(e, where, ndim) for e in node.elts]
        value = node
        if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub) and \
                isinstance(value.operand, ast.Constant):
            value = ast.Constant(value=-value.operand.value)
        if not (isinstance(value, ast.Constant) and isinstance(value.value, int) and
                not isinstance(value.value, bool)):
            raise self.error(where, "an axis that is not an int constant",
                             "Write axes as numbers: axis=0, axis=-1, (1, 0, 2).")
        k = value.value
        if ndim is not None:
            if not -ndim <= k < ndim:
                raise self.error(where, f"axis {k} of a {ndim}-D array",
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
        if not known:
            return None
        if obj in INACTIVE:
            return self.inactive_call(node, INACTIVE[obj], out)
        if obj in DRAWS:
            return self.draw_call(node, DRAWS[obj], out)
        args = node.args
        if obj in REDUCTIONS:
            axis = self.axis_argument(node, args, 1)
            return self.reduce(REDUCTIONS[obj], self.operand(args[0], out), axis, out, node)
        if obj in ELEMENTWISE:
            if node.keywords:
                raise self.error(node, f"keyword arguments to `{ast.unparse(node.func)}`",
                                 "Pass arguments by position.")
            fn = ELEMENTWISE[obj]
            if len(args) > ELEMENTWISE_ARITY[obj]:
                name = ast.unparse(node.func)
                extra = _parameter_name(obj, ELEMENTWISE_ARITY[obj])
                what = f"its argument `{extra}`" if extra else \
                    f"{len(args)} arguments"
                raise self.error(node, f"`{name}` with {what}",
                                 f"adjit differentiates {name} with "
                                 f"{ELEMENTWISE_ARITY[obj]} argument(s): its derivative would "
                                 f"ignore {f'`{extra}`' if extra else 'the others'}. Leave "
                                 "it out, or write the computation with operators.")
            if len(args) != ELEMENTWISE_ARITY[obj]:
                # another form of the function (np.where(cond) gives indices): as it is
                return self.opaque_call(node, obj, out)
            operands = self.operands(args, out)
            # an operator class (np.add is `+`) is that operator; anything else a call
            op = ("bin", fn()) if isinstance(fn, type) and issubclass(fn, ast.operator) else \
                ("unary", fn()) if isinstance(fn, type) and issubclass(fn, ast.unaryop) else \
                ("call", fn)
            lazy = self.elementwise(op, operands, out, node)
            if lazy is not None:
                return lazy
            scalar = Op(op, [Scalar(a) for a in operands], [])
            return self.scalar_op(scalar.fn, [a.atom for a in scalar.args], out)
        return LOWERINGS[ARRAY_FUNCTIONS[obj]](self, node, obj, out)

    # whole-array functions, each lowered by the method registered for its registry handler --
    @lowers("dot", "matmul")
    def lower_matmul(self, node, obj, out):
        """np.dot(a, b), np.matmul(a, b): matrix products (normalize/vectorize.py)."""
        args = node.args
        return self.matmul(self.operand(args[0], out), self.operand(args[1], out), out, node)

    @lowers("outer")
    def lower_outer(self, node, obj, out):
        args = node.args
        return self.outer(args[0] and self.operand(args[0], out),
                          self.operand(args[1], out), out, node)

    @lowers("transpose")
    def lower_transpose(self, node, obj, out):
        """np.transpose(x, axes=None): a view."""
        args = node.args
        axes = args[1] if len(args) > 1 else None
        for kw in node.keywords:
            if kw.arg != "axes" or axes is not None:
                raise self.error(node, f"np.transpose with `{kw.arg}=`",
                                 "Write np.transpose(x) or np.transpose(x, (1, 0, 2)).")
            axes = kw.value
        return self.transpose(self.operand(args[0], out), out,
                              self.axes_argument(axes, node), node)

    @lowers("swapaxes", "moveaxis")
    def lower_permute_axes(self, node, obj, out):
        """np.swapaxes(x, a, b), np.moveaxis(x, source, destination): views."""
        args, what = node.args, obj.__name__
        if len(args) != 3 or node.keywords:
            raise self.error(node, f"np.{what} with other than (array, axis, axis)",
                             f"Write np.{what}(x, a, b) with constant axes.")
        return self.permute_axes(what, self.operand(args[0], out), args[1:], node, out)

    @lowers("reshape")
    def lower_reshape(self, node, obj, out):
        args = node.args
        if len(args) != 2 or node.keywords:
            raise self.error(node, "np.reshape with other than (array, shape)",
                             "Write np.reshape(x, (m, n)).")
        shape = args[1].elts if isinstance(args[1], (ast.Tuple, ast.List)) else [args[1]]
        return self.reshape_view(self.operand(args[0], out), shape, out, node)

    @lowers("ravel")
    def lower_ravel(self, node, obj, out):
        args = node.args
        if len(args) != 1 or node.keywords:
            raise self.error(node, "np.ravel with an order", "Write np.ravel(x).")
        return self.reshape_view(self.operand(args[0], out), [ir.const(-1)], out, node)

    @lowers("take")
    def lower_take(self, node, obj, out):
        """np.take(x, idx, axis=None): a gather view (of the flattened array without an
        axis)."""
        args = node.args
        if len(args) not in (2, 3) or any(kw.arg != "axis" for kw in node.keywords):
            raise self.error(node, "np.take with other than (array, indices, axis)",
                             "Write np.take(x, idx) or np.take(x, idx, axis=k).")
        axis = args[2] if len(args) > 2 else next((kw.value for kw in node.keywords), None)
        x = self.operand(args[0], out)
        if not isinstance(x, Lazy) or isinstance(x, Scalar):
            raise self.error(node, "np.take from something that is not an array",
                             "Take from arrays.")
        axis = self.axes_argument(axis, node, len(x.shape))
        if axis is None:
            x = self.reshape_view(x, [ir.const(-1)], out, node)
            axis = 0
        if not isinstance(x, View):
            x = self.view_of(self.materialize(x, out, node).id, out)
        full = ("slice", ast.Slice(lower=None, upper=None, step=None))
        items = [full] * axis + self.index_items(args[1], out, node)
        w = self.index_view(x, items, out, node)
        if not w.shape and not has_take(w):
            return self.to_atom(out, ast.Subscript(value=ir.name(w.base), slice=_index_node(
                self.map_index(w, [], None, out)), ctx=ast.Load()))
        return w

    @lowers("norm")
    def lower_norm(self, node, obj, out):
        """np.linalg.norm(x, ord=None): the 2-norm as sqrt(sum(x * x)); other orders and
        matrix norms by norm_of_order."""
        args = node.args
        ord_ = args[1] if len(args) == 2 else None
        for kw in node.keywords:
            if kw.arg != "ord" or ord_ is not None:
                raise self.error(node, f"np.linalg.norm with `{kw.arg}=`",
                                 "numba takes np.linalg.norm(x) and np.linalg.norm(x, ord) "
                                 "only: no axis.")
            ord_ = kw.value
        if len(args) not in (1, 2):
            raise self.error(node, "np.linalg.norm with other than (x, ord)",
                             "Write np.linalg.norm(x) or np.linalg.norm(x, ord).")
        x = self.operand(args[0], out)
        if ord_ is not None:
            o = self.constant_number(ord_)
            if o is None:
                raise self.error(node, "np.linalg.norm with an `ord` that is not a "
                                 "number constant", "Write the number (1, 2, np.inf, ...).")
            if o != 2 or (isinstance(x, Lazy) and len(x.shape) == 2):
                return self.norm_of_order(x, o, out, node)
        sq = self.elementwise(("call", "square"), [x], out, node)
        total = self.reduce("sum", sq, None, out, node) if sq is not None else \
            self.to_atom(out, ast.BinOp(left=x, op=ast.Mult(), right=x))
        return self.scalar_op(("call", math.sqrt), [total], out)

    @lowers("array")
    def lower_array(self, node, obj, out):
        """np.array([a, b, c]) and np.asarray (of an array: the array itself)."""
        args = node.args
        if len(args) != 1 or any(kw.arg != "dtype" for kw in node.keywords):
            raise self.error(node, "np.array with other than one list argument",
                             "Write np.array([a, b, c]).")
        if not node.keywords and not isinstance(args[0], (ast.List, ast.Tuple)):
            # of an array (a list comprehension is built as one): np.asarray is the array,
            # np.array a copy of it
            value = self.operand(args[0], out)
            if isinstance(value, Lazy) and not isinstance(value, Scalar) or \
                    isinstance(value, ast.Name) and self.array_ndim(value) is not None:
                if obj is np.asarray:
                    return value
                return self.materialize(self.lazy_operand(value, out), out, node)
            raise self.error(node, f"`{ast.unparse(node.func)}` of something other than a list "
                             "or an array", "Write np.array([a, b, c]).")
        return self.array_literal(args[0], out)

    @lowers("concatenate", "stack")
    def lower_concatenate(self, node, obj, out):
        args, what = node.args, obj.__name__
        axis = self.axis_argument(node, args, 1) or 0
        if not args or not isinstance(args[0], (ast.Tuple, ast.List)):
            raise self.error(node, f"np.{what} of something other than a tuple of arrays",
                             f"Write np.{what}((a, b)).")
        return self.concatenate(args[0].elts, axis, out, node, stack=what == "stack")

    @lowers("full", "full_like")
    def lower_full(self, node, obj, out):
        """np.full(shape, value), np.full_like(a, value): a new array, every element
        stored."""
        args, what = node.args, obj.__name__
        if len(args) != 2 or node.keywords:
            raise self.error(node, f"np.{what} with other than (shape, value)",
                             f"Write np.{what}(shape, value).")
        if what == "full_like":
            shape = self.like_shape(args[0], out, node)
        else:
            shape_node = args[0]
            if isinstance(shape_node, ast.Attribute) and shape_node.attr == "shape":
                given = self.shape_of(shape_node.value, out)
                shape = [self.to_atom(out, given.item(k), "_n") for k in range(given.ndim)]
            else:
                elts = shape_node.elts if isinstance(shape_node, ast.Tuple) else [shape_node]
                shape = [self.atom(e, out) for e in elts]
        name = self.new_array(shape, out)
        self.store_elements(self.full_view(name, shape), self.operand(args[1], out), out,
                            node)
        return ir.name(name)

    @lowers("interp")
    def lower_interp(self, node, obj, out):
        """np.interp(x, xp, fp): an array of query points kept whole; a number packed."""
        args = node.args
        if node.keywords or len(args) != 3:
            raise self.error(node, "np.interp with other than (x, xp, fp)",
                             "Write np.interp(x, xp, fp) (numba takes no left=, right=).")
        atoms = [self.argument_atom(a, out) for a in args]
        if isinstance(atoms[0], ast.Name) and atoms[0].id in self.ctx.arrays:
            return self.call_of(obj, atoms)
        packed = self.to_atom(out, self.call_of(vec.interp1, atoms), "_p")
        return self.element(packed, 0, out)

    @lowers("quantile")
    def lower_quantile(self, node, obj, out):
        """np.quantile, np.percentile, their nan forms and np.nanmedian: an array of q kept
        whole; a number packed (vec.quantile1, its scale and whether it skips nans)."""
        args = node.args
        name = f"np.{obj.__name__}"
        wanted = 1 if obj is np.nanmedian else 2
        if node.keywords or len(args) != wanted:
            raise self.error(node, f"{name} with other than ({'a' if wanted == 1 else 'a, q'})",
                             f"Write {name}({'a' if wanted == 1 else 'a, q'}) (numba takes "
                             "no other arguments).")
        atoms = [self.argument_atom(a, out) for a in args] + \
            ([ir.const(0.5)] if obj is np.nanmedian else [])
        if isinstance(atoms[1], ast.Name) and atoms[1].id in self.ctx.arrays:
            return self.call_of(obj, atoms)
        scale = ir.const(0.01 if obj in (np.percentile, np.nanpercentile) else 1.0)
        skip = ir.const(obj in (np.nanpercentile, np.nanquantile, np.nanmedian))
        packed = self.to_atom(out, self.call_of(vec.quantile1, atoms + [scale, skip]), "_p")
        return self.element(packed, 0, out)

    @lowers("packed")
    def lower_packed(self, node, obj, out):
        """A number or a tuple (np.linalg.det, slogdet, eigh, svd, qr, matrix_power),
        computed as one array by the entry's `packed` helper and unpacked where the call
        stood."""
        args = node.args
        if node.keywords:
            raise self.error(node, f"keyword arguments to `{ast.unparse(node.func)}`",
                             "Pass arguments by position.")
        helper, how = REGISTRY.get(obj).packed
        rule = REGISTRY.get(helper).array_rule if REGISTRY.get(helper) else None
        if rule is not None and len(args) > len(rule.params):
            name = ast.unparse(node.func)
            extra = _parameter_name(obj, len(rule.params))
            raise self.error(node, f"`{name}` with its argument `{extra}`" if extra else
                             f"`{name}` with {len(args)} arguments",
                             f"adjit differentiates {name} with {len(rule.params)} "
                             "argument(s): its derivative would ignore the others; pass "
                             "those only.")
        atoms = [self.argument_atom(a, out) for a in args]
        packed = self.to_atom(out, self.call_of(helper, atoms), "_p")
        if how == "whole":
            return packed
        if how == "svd":
            if not (isinstance(atoms[0], ast.Name) and atoms[0].id in self.ctx.arrays):
                raise self.error(node, "np.linalg.svd of something that is not an array",
                                 "Pass a 2-D array.")
            return self.unpack_svd(packed, atoms[0], out, node)
        if how == "qr":     # [Q^T | R]: Q is the transpose of the first m columns
            if not (isinstance(atoms[0], ast.Name) and atoms[0].id in self.ctx.arrays):
                raise self.error(node, "np.linalg.qr of something that is not an array",
                                 "Pass a 2-D array.")
            m = self.size_local(atoms[0], 0, out)
            whole = self.view_of(packed.id, out)
            every = ast.Slice(lower=None, upper=None, step=None)
            q_t, r = (self.index_view(whole, [("slice", every), ("slice", part)], out, node)
                      for part in (ast.Slice(lower=None, upper=ir.name(m), step=None),
                                   ast.Slice(lower=ir.name(m), upper=None, step=None)))
            return TupleValue([self.transpose(q_t, out, node=node), r])
        if how == "item":
            return self.element(packed, 0, out)
        if how == "items":
            return TupleValue([self.element(packed, k, out) for k in range(2)])
        whole = self.view_of(packed.id, out)
        rest = ast.Slice(lower=ir.const(1), upper=None, step=None)
        return TupleValue([self.index_view(whole, [("int", ir.const(0))], out, node),
                           self.index_view(whole, [("slice", rest)], out, node)])

    @lowers("keep")
    def lower_keep(self, node, obj, out):
        """A call kept at array level (np.linalg.solve, inv, ...): its entry's ArrayRule is
        the derivative."""
        args = node.args
        rule = REGISTRY.get(obj).array_rule
        if node.keywords:
            args = self.by_position(node, args, rule)
        if rule is not None and len(args) > len(rule.params):
            name = ast.unparse(node.func)
            raise self.error(node, f"`{name}` with {len(args)} arguments",
                             f"adjit differentiates {name}({', '.join(rule.params)}): its "
                             "derivative would ignore the others; pass those only.")
        return self.call_as_is(obj, args, out, node)

    @lowers("linspace", "arange", "eye")
    def lower_spelled(self, node, obj, out):
        """np.linspace, np.arange, np.eye / np.identity: kept as the call, its arguments
        atoms (their array rules: rules/table.py)."""
        args = node.args
        what = ARRAY_FUNCTIONS[obj]
        if node.keywords:
            raise self.error(node, f"keyword arguments to np.{what}",
                             "Pass arguments by position.")
        spelled = ast.parse(self.ctx.env.spell(obj, what), mode="eval").body
        return ast.Call(func=spelled, args=[self.atom(a, out) for a in args], keywords=[])

    def primitive(self, node, obj, rule, out):
        if obj is stop_gradient:
            self.stopped += 1   # no derivative leaves: np.max needs no tie split
        try:
            args = self.operands(node.args, out)
        finally:
            if obj is stop_gradient:
                self.stopped -= 1
        if obj is stop_gradient and len(args) == 1 and isinstance(args[0], Lazy):
            # an array: every element stopped, fused like any elementwise operation
            return Op(("call", stop_gradient), [args[0]], args[0].shape)
        args = [self.to_atom(out, a) for a in args]
        spelled = ast.parse(self.ctx.env.spell(obj, "f"), mode="eval").body
        if obj in (min, max) and len(args) > 2:
            acc = args[0]
            for a in args[1:]:
                acc = self.to_atom(out, ast.Call(func=spelled, args=[acc, a], keywords=[]))
            return acc
        if len(args) != len(rule.params):
            raise self.error(node, f"`{ast.unparse(node.func)}` called with {len(args)} "
                             f"argument(s); adjit's rule takes {len(rule.params)}",
                             "Call it with the documented number of arguments "
                             "(math.log(x) / math.log(b) for a log in base b).")
        return ast.Call(func=spelled, args=args, keywords=[])

    def allocation(self, node, obj, out):
        kind = ALLOCATORS[obj]
        given = [kw.value for kw in node.keywords if kw.arg == "dtype"]
        for kw in node.keywords:
            if kw.arg != "dtype":
                raise self.error(node, f"`{ast.unparse(node.func)}` with "
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
            if dtype.kind in "iub" and kind != "like" and len(node.args) == 1:
                # an integer or boolean array of the user's: no derivative, kept in its dtype
                obj = DECLARED_ALLOCATORS[obj, dtype]
            elif dtype != np.float64:
                raise self.error(node, f"`{ast.unparse(node.func)}` with dtype {dtype}",
                                 "adjit allocates the arrays that carry derivatives as "
                                 "float64: leave the dtype out (or write np.float64), or "
                                 "allocate an integer or boolean array.")
        if len(node.args) != 1:
            raise self.error(node, f"`{ast.unparse(node.func)}` with {len(node.args)} arguments",
                             "Pass one shape (n or (n, m)), or one array for the *_like forms.")
        spelled = ast.parse(self.ctx.env.spell(obj, "alloc"), mode="eval").body
        arg = node.args[0]
        if isinstance(arg, ast.Attribute) and arg.attr == "shape" and kind != "like":
            given = self.shape_of(arg.value, out)
            elts = [self.to_atom(out, given.item(k), "_n") for k in range(given.ndim)]
            shape = ast.Tuple(elts=elts, ctx=ast.Load()) if len(elts) != 1 else elts[0]
            return ast.Call(func=spelled, args=[shape], keywords=[])
        if kind == "like":
            like = self.operand(arg, out)
            if isinstance(like, Lazy) and not (isinstance(like, View) and like.is_identity()):
                # an expression or a name kept lazy: allocate by its shape
                elts = self.like_shape(arg, out, node, like)
                shape = ast.Tuple(elts=elts, ctx=ast.Load()) if len(elts) > 1 else elts[0]
                base = {np.zeros_like: np.zeros, np.ones_like: np.ones,
                        np.empty_like: np.empty}[obj]
                spelled = ast.parse(self.ctx.env.spell(base, "alloc"), mode="eval").body
                return ast.Call(func=spelled, args=[shape], keywords=[])
            shape = ir.name(like.base if isinstance(like, View) else self.array_name(arg))
        else:       # a size, a tuple of sizes, or a name holding one
            shape = self.argument_atom(arg, out)
        return ast.Call(func=spelled, args=[shape], keywords=[])

    def declared_dtype(self, given, node):
        """The numpy dtype an allocation names: np.float64, float, np.int32, np.bool_,
        numba.float64, 'f8', np.dtype(...), or `x.dtype` of an argument array."""
        if isinstance(given, ast.Attribute) and given.attr == "dtype" and \
                isinstance(given.value, ast.Name):
            name = self.array_name(given.value) if given.value.id in self.src.locals or \
                given.value.id in self.ctx.dtypes else given.value.id
            if name in self.ctx.dtypes:
                return self.ctx.dtypes[name]
            raise self.error(node, f"`{ast.unparse(given)}` as a dtype, of an array that is "
                             "not an argument", "Write the dtype (np.float64, np.int64).")
        if isinstance(given, ast.Call) and self.src.resolve(given.func) is np.dtype and \
                len(given.args) == 1 and not given.keywords:
            return self.declared_dtype(given.args[0], node)
        value = given.value if isinstance(given, ast.Constant) else self.src.resolve(given)
        try:
            if isinstance(value, numba.types.Type):
                return np.dtype(numba.np.numpy_support.as_dtype(value))
            if value in (int, bool):     # (numba's np.zeros takes neither)
                raise TypeError(value)
            return np.dtype(value)
        except (TypeError, ValueError, NotImplementedError, numba.core.errors.NumbaError):
            raise self.error(node, f"`{ast.unparse(given)}` as a dtype",
                             "Write a numpy dtype: np.float64, np.int64, np.bool_.") from None

    def inactive_call(self, node, entry, out):
        """A function with no derivative (np.argsort, a random draw): called as it is, its
        arguments atoms (arrays evaluated), keywords placed by the entry's parameters."""
        args = list(node.args)
        if entry.params != ("*",):
            for kw in node.keywords:
                if kw.arg not in entry.params or entry.params.index(kw.arg) < len(node.args):
                    raise self.error(node, f"`{entry.name}` with the keyword `{kw.arg}`",
                                     f"Pass {', '.join(entry.params)} (by position or "
                                     "keyword) only.")
                k = entry.params.index(kw.arg)
                args += [None] * (k + 1 - len(args))
                args[k] = kw.value
            if None in args:
                raise self.error(node, f"`{entry.name}` with an argument left out before "
                                 "one given", "Pass the arguments before it too.")
        elif node.keywords:
            raise self.error(node, f"keyword arguments to `{entry.name}`",
                             "Pass the sizes by position.")
        if entry.statement != (self.statement_call is node) and not \
                (entry.effect and self.statement_call is node):     # (a draw thrown away)
            raise self.error(node, f"`{entry.name}` used as a value" if entry.statement else
                             f"`{entry.name}` called for nothing",
                             "Call it as a statement of its own." if entry.statement else
                             "Assign its result.")
        return self.call_as_is(entry.obj, args, out, node)

    def draw_call(self, node, entry, out):
        """np.random.normal(loc, scale) & co.: the function of rules/draws.py that computes
        it as numba does, from standard draws (with `size`, its array form), inlined in place
        of the call; its statements are the user's line's. The standard draws in it that
        have no pathwise derivative in a parameter (np.random.gamma's shape) are named as
        the user's draw where that is refused (analysis/activity.py)."""
        params = entry.params
        bound = {}
        if len(node.args) > len(params):
            raise self.error(node, f"`{entry.name}` with {len(node.args)} arguments",
                             f"It takes {', '.join(params)}.")
        for name, a in zip(params, node.args):
            bound[name] = a
        for kw in node.keywords:
            if kw.arg not in params or kw.arg in bound:
                raise self.error(node, f"`{entry.name}` with the keyword `{kw.arg}`",
                                 f"Pass {', '.join(params)} (by position or keyword), each "
                                 "once.")
            bound[kw.arg] = kw.value
        given = [k for k, name in enumerate(params) if name in bound]
        if given and any(params[k] not in bound for k in range(max(given))):
            raise self.error(node, f"`{entry.name}` with an argument left out before one "
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
                raise self.error(node, f"`{entry.name}` without its parameter `{name}`",
                                 f"Pass {name} (numba requires it).")
            args.append(bound[name] if name in bound else ir.const(defaults[name]))
        call = ast.Call(func=node.func, args=args + ([size] if size is not None else []),
                        keywords=[])
        ast.copy_location(call, node)
        start = len(out)
        result = self.inline(call, sized if size is not None else scalar, out)
        for s in ir.walk_stmts(out[start:]):
            ir.annotate(s, origin=self.origin)
            value = getattr(s, "value", None)
            if isinstance(value, ast.Call):
                inner = INACTIVE.get(self.resolve_generated(value.func))
                if inner is not None and inner.refused:
                    ir.annotate(value, callee=f"`{entry.name}`")
        return result

    def opaque_call(self, node, obj, out):
        """A call of a function with no derivative rule (np.searchsorted, np.digitize,
        np.unique, ...), kept as it is; its result type is numba's (rules/opaque.py). The
        reverse and tangent passes refuse it where a derivative would flow through it."""
        name = ast.unparse(node.func)
        if not callable(obj) and not isinstance(obj, numba.types.WrapperAddressProtocol):
            raise self.error(node, f"a call to `{name}`, which is not a function",
                             "Call functions.")
        if any(kw.arg in (None, "out") for kw in node.keywords):
            raise self.error(node, f"`{name}` with `out=` or `**keywords`",
                             "Assign the result instead of passing out=; pass keywords by name.")
        atoms, descs = zip(*[self.opaque_argument(a, out) for a in node.args]) \
            if node.args else ((), ())
        keywords = [(kw.arg, self.opaque_argument(kw.value, out)) for kw in node.keywords]
        kw_descs = tuple((k, d) for k, (_, d) in keywords)
        try:
            result = opaque.result(obj, descs, kw_descs)
        except opaque.Untyped as exc:
            entry = REGISTRY.get(obj)
            advice = ("Call it as numba accepts it; write it as Python/@njit code adjit can "
                      "read (loops and math functions) if a derivative must flow through it.")
            if entry is not None and entry.family == "unsupported":
                advice = f"`{name}` is not differentiated: {entry.notes}."
            raise self.error(node, f"a call to `{name}` that adjit has no derivative rule for "
                             f"and numba does not compile for these arguments ({exc})",
                             advice) from None
        if result is None:
            raise self.error(node, f"a call to `{name}`, whose result adjit cannot hold "
                             "(complex numbers, strings, objects)",
                             "Call it outside the differentiated function.")
        if result == ("none",):
            if self.statement_call is not node:
                raise self.error(node, f"`{name}` used as a value (it returns None)",
                                 "Call it as a statement of its own.")
            for atom, desc in zip(list(atoms) + [a for _, (a, _) in keywords],
                                  list(descs) + [d for _, d in kw_descs]):
                if desc[0] == "array" and self.ctx.arrays[atom.id][1] == "f":
                    raise self.error(node, f"a call to `{name}` for its effect, with the float "
                                     f"array `{ast.unparse(atom)}`, which it may change",
                                     "adjit cannot see what it writes: write the change as "
                                     "code adjit can read, or call it on a copy.")
        names = [a for a, d in zip(atoms, descs) if d[0] != "const"] + \
            [a for _, (a, d) in keywords if d[0] != "const"]
        if result[0] in ("array", "tuple") and opaque.may_share_memory(obj, descs, kw_descs):
            raise self.error(node, f"`{name}`, which has no derivative rule and may return a "
                             "view of its argument (memory adjit cannot follow writes through)",
                             "Index or reshape the array instead (x[None], x.reshape(...)), or "
                             "call it outside the differentiated function.")
        if result == ("none",):
            return self.effect_call(obj, atoms, descs, names, kw_descs, out, node)
        if result[0] == "tuple":
            items = []
            for k, item in enumerate(result[1]):
                call = self.call_of(opaque.caller(obj, descs, kw_descs, k), names)
                ir.annotate(call, opaque=item, callee=f"`{name}` (element {k} of its result)")
                items.append(self.own_copy(self.to_atom(out, call), item, out))
            return TupleValue(items)
        call = self.call_of(opaque.caller(obj, descs, kw_descs), names) if keywords else \
            self.call_of(obj, atoms)
        entry = REGISTRY.get(obj)
        why = f" (not differentiated: {entry.notes})" if entry is not None and \
            entry.family == "unsupported" else ""
        return self.own_copy(ir.annotate(call, opaque=result, callee=f"`{name}`{why}"), result,
                             out)

    def own_copy(self, value, desc, out):
        """An array result of a call with no rule, copied: the function may return a view of
        an argument (np.atleast_1d, np.ascontiguousarray), and adjit's analysis of writes
        needs every array name to own its elements."""
        if desc[0] != "array":
            return value
        name = value if isinstance(value, ast.Name) else self.to_atom(out, value)
        return ast.Call(func=ast.Attribute(value=name, attr="copy", ctx=ast.Load()), args=[],
                        keywords=[])

    def effect_call(self, obj, atoms, descs, names, kw_descs, out, node):
        """A call with no rule made for its effect (np.random.shuffle(idx), print(...)) on
        integer arrays: it gets copies of the arrays, which are then copied back element by
        element, so that the change is a store adjit sees (the backward sweep reads the
        values from before it where it needs them)."""
        copies = {}
        for a in names:
            if isinstance(a, ast.Name) and a.id in self.ctx.arrays:
                copy_of = ast.Call(func=ast.Attribute(value=ir.name(a.id), attr="copy",
                                                      ctx=ast.Load()), args=[], keywords=[])
                copies[a.id] = self.to_atom(out, copy_of, "_c")
        names = [copies.get(a.id, a) if isinstance(a, ast.Name) else a for a in names]
        if kw_descs:
            call = self.call_of(opaque.caller(obj, descs, kw_descs), names)
        else:
            call = self.call_of(obj, [copies.get(a.id, a) if isinstance(a, ast.Name) else a
                                      for a in atoms])
        out.append(ir.annotate(ast.Expr(value=ir.annotate(call, opaque=("none",))),
                               origin=self.origin))
        for arr, c in copies.items():
            self.store_view(self.view_of(arr, out), self.view_of(c.id, out), None, out, node)
        return ir.const(None)

    def opaque_argument(self, a, out):
        """(atom, descriptor) of an argument of a call with no derivative rule."""
        if isinstance(a, (ast.Tuple, ast.List)) and \
                all(isinstance(e, ast.Constant) for e in a.elts):
            return a, ("const", tuple(e.value for e in a.elts))
        value = self.operand(a, out)
        if isinstance(value, Scalar):
            value = value.atom
        elif isinstance(value, Lazy):
            value = ir.name(self.materialize(value, out).id)
        elif not ir.is_atom(value):
            value = self.to_atom(out, value)
        if isinstance(value, ast.Constant):
            return value, ("const", value.value)
        if value.id in self.ctx.arrays:
            ndim, dtype = self.ctx.arrays[value.id]
            return value, ("array", ndim, dtype if dtype in ("f", "i", "b") else "f")
        return value, ("i",) if value.id in self.ctx.ints else ("f",)

    def constant_number(self, node):
        """The value of a number written as a constant (2, -1, np.inf, -np.inf, a module
        global number), else None."""
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            v = self.constant_number(node.operand)
            return None if v is None else -v
        if isinstance(node, ast.Constant):
            v = node.value
        elif isinstance(node, (ast.Name, ast.Attribute)):
            v = self.src.resolve(node)
        else:
            return None
        return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    def norm_of_order(self, x, order, out, node):
        """np.linalg.norm(x, ord) as numba computes it: for vectors sum(|x|^p)^(1/p), 1, inf,
        -inf, 0 (the count of nonzeros); for matrices the max/min column (1, -1) or row
        (inf, -inf) sum of |x|, (2, -2) its largest (smallest) singular value."""
        if not isinstance(x, Lazy) or isinstance(x, Scalar) or len(x.shape) not in (1, 2):
            raise self.error(node, "np.linalg.norm with `ord` of something that is not a "
                             "vector or a matrix", "Pass a 1-D or 2-D array.")
        a = self.elementwise(("call", abs), [x], out, node)
        inf = math.inf
        if len(x.shape) == 2 and order in (2, -2):     # the largest / smallest singular value
            return self.reduce("max" if order > 0 else "min",
                               self.singular_values(x, out, node), None, out, node)
        if len(x.shape) == 2:
            if order not in (1, -1, inf, -inf):
                raise self.error(node, f"the matrix norm of order {order!r}",
                                 "adjit differentiates matrix norms of order 1, -1, 2, -2, inf, "
                                 "-inf and the Frobenius norm (no ord).")
            sums = self.reduce("sum", a, 0 if order in (1, -1) else 1, out, node)
            if isinstance(sums, ast.Name):
                sums = self.view_of(sums.id, out)
            return self.reduce("max" if order > 0 else "min", sums, None, out, node)
        if order == inf or order == -inf:
            return self.reduce("max" if order > 0 else "min", a, None, out, node)
        if order == 0:
            nonzero = self.elementwise(("call", "where"), [
                self.elementwise(("cmp", ast.NotEq()), [x, ir.const(0.0)], out, node),
                ir.const(1.0), ir.const(0.0)], out, node)
            return self.reduce("sum", nonzero, None, out, node)
        if order == 1:
            return self.reduce("sum", a, None, out, node)
        powered = self.elementwise(("call", "pow"), [a, ir.const(float(order))], out, node)
        total = self.reduce("sum", powered, None, out, node)
        return self.scalar_op(("call", "pow"), [total, ir.const(1.0 / order)], out)

    @lowers("convolve", "correlate")
    def lower_convolve(self, node, obj, out):
        """np.convolve(a, v, mode) and np.correlate(a, v, mode) of 1-D arrays: the full
        convolution (of a with v reversed, for a correlation) kept at array level, and for
        modes 'valid' and 'same' the part of it numba returns, a slice: with n the shorter
        length and m the longer, 'valid' starts at n - 1 and has m - n + 1 elements, 'same'
        starts at n - 1 - n // 2 and has m (numba's _np_correlate_core; one later for a
        correlation with the longer v and an even n, which numba computes reversed). A
        correlation in its default mode ('valid') is kept whole (its own rule)."""
        correlate = obj is np.correlate
        name = "np.correlate" if correlate else "np.convolve"
        a = self.call_arguments(node, ["a", "v", "mode"],
                                {"mode": ir.const("valid" if correlate else "full")}, out)
        mode = a["mode"]
        if not (isinstance(mode, ast.Constant) and mode.value in ("full", "valid", "same")):
            raise self.error(node, f"{name} with the mode `{ast.unparse(mode)}`",
                             "Write the mode as a constant string: 'full', 'valid' or 'same'.")
        x, v = (self.argument_atom(a[k], out) for k in ("a", "v"))
        for atom in (x, v):
            if not (isinstance(atom, ast.Name) and self.ctx.arrays.get(atom.id, (0,))[0] == 1):
                raise self.error(node, f"{name} of something that is not a 1-D array",
                                 "Pass two 1-D arrays (numba's np.convolve and np.correlate "
                                 "take no others).")
        if correlate and mode.value == "valid":
            return self.call_of(np.correlate, [x, v])
        if correlate:       # a correlation is the convolution with v reversed
            step = ast.Slice(lower=None, upper=None, step=ir.const(-1))
            v = self.materialize(self.index_view(self.view_of(v.id, out),
                                                 [("slice", step)], out, node), out, node)
        full = self.to_atom(out, self.call_of(np.convolve, [x, v]))
        if mode.value == "full":
            return full
        la, lv = (ir.name(self.local(self.size_local(t, 0, out))) for t in (x, v))

        def op(left, kind, right):
            return self.to_atom(out, ast.BinOp(left=left, op=kind(), right=right))
        n = self.to_atom(out, self.call_of(min, [la, lv]))
        m = self.to_atom(out, self.call_of(max, [la, lv]))
        start = op(n, ast.Sub, ir.const(1))
        if mode.value == "valid":
            stop = op(op(start, ast.Add, m), ast.Sub, op(n, ast.Sub, ir.const(1)))
        else:
            start = op(start, ast.Sub, op(n, ast.FloorDiv, ir.const(2)))
            if correlate:   # numba reverses a correlation with a longer v: even n shifts by 1
                longer = self.to_atom(out, self.call_of(min, [self.to_atom(out, self.call_of(
                    max, [op(lv, ast.Sub, la), ir.const(0)])), ir.const(1)]))
                even = op(ir.const(1), ast.Sub, op(n, ast.Mod, ir.const(2)))
                start = op(start, ast.Add, op(longer, ast.Mult, even))
            stop = op(start, ast.Add, m)
        bounds = []
        for value in (start, stop):     # locals of the user's function: the slice reads them
            name = self.fresh_local("_s")
            self.emit_assign(out, self.local(name), value)
            self.ctx.ints.add(self.local(name))
            bounds.append(ir.name(name))
        part = ast.Slice(lower=bounds[0], upper=bounds[1], step=None)
        return self.index_view(self.view_of(full.id, out), [("slice", part)], out, node)

    @lowers("lstsq")
    def lower_lstsq(self, node, obj, out):
        """np.linalg.lstsq(a, b): (x, residuals, rank, singular values). x is differentiated
        (vec.lstsq_x, pinv(a) b where a has full rank); the rest are calls with no rule, refused
        where a derivative would flow through them."""
        if len(node.args) != 2 or node.keywords:
            raise self.error(node, "np.linalg.lstsq with other than (a, b)",
                             "Write np.linalg.lstsq(a, b) (numba's rcond).")
        rest = self.opaque_call(node, np.linalg.lstsq, out)
        x = self.call_of(vec.lstsq_x, [self.argument_atom(a, out) for a in node.args])
        return TupleValue([self.to_atom(out, x)] + rest.items[1:])

    @lowers("cov")
    def lower_cov(self, node, obj, out):
        """np.cov(m) and np.corrcoef(m) of a 2-D array (rows are variables), kept at array
        level (runtime/arrays.py has their adjoints and tangents)."""
        name = f"np.{obj.__name__}"
        if len(node.args) != 1 or node.keywords:
            raise self.error(node, f"{name} with arguments other than one array",
                             f"Write {name}(m) with the variables in the rows of m "
                             "(np.vstack((x, y)) for two of them).")
        atom = self.argument_atom(node.args[0], out)
        if not (isinstance(atom, ast.Name) and self.ctx.arrays.get(atom.id, (0,))[0] == 2):
            raise self.error(node, f"{name} of something that is not a 2-D array",
                             f"Pass the variables as the rows of a 2-D array: "
                             f"{name}(x[None, :]) for one.")
        return self.call_of(obj, [atom])

    @lowers("cond")
    def lower_cond(self, node, obj, out):
        """np.linalg.cond(a) (numba: the 2-norm condition number, no p): the largest singular
        value over the smallest."""
        a = self.call_arguments(node, ["x"], {}, out)
        x = self.array_operand(a["x"], out, "np.linalg.cond")
        if len(x.shape) != 2:
            raise self.error(node, f"np.linalg.cond of a {len(x.shape)}-D array",
                             "Pass a 2-D array.")
        s = self.singular_values(x, out, node)
        top = self.reduce("max", s, None, out, node)
        bottom = self.reduce("min", s, None, out, node)
        return self.to_atom(out, ast.BinOp(left=top, op=ast.Div(), right=bottom))

    def size_local(self, a, k, out):
        """A new local holding a.shape[k], for slice bounds the views read as user code."""
        name = self.fresh_local("_m" if k == 0 else "_n")
        self.emit_assign(out, self.local(name), Shape(a.id).item(k))
        self.ctx.ints.add(self.local(name))
        return name

    def singular_values(self, x, out, node):
        """The view s of the singular values of the 2-D array value x (vec.svd_packed)."""
        arr = self.materialize(x, out, node)
        packed = self.to_atom(out, self.call_of(vec.svd_packed, [arr]), "_p")
        return self.unpack_svd(packed, arr, out, node).items[1]

    def unpack_svd(self, packed, a, out, node):
        """(U, s, Vh) as views of vec.svd_packed(a): U in the first m rows, s in row m,
        Vh below, zero-padded to max(m, n) columns."""
        m, n = self.size_local(a, 0, out), self.size_local(a, 1, out)
        whole = self.view_of(packed.id, out)
        rows_u = ast.Slice(lower=None, upper=ir.name(m), step=None)
        rows_vh = ast.Slice(lower=ast.BinOp(left=ir.name(m), op=ast.Add(), right=ir.const(1)),
                            upper=None, step=None)
        k = ast.Call(func=ast.Name(id="min", ctx=ast.Load()), args=[ir.name(m), ir.name(n)],
                     keywords=[])
        return TupleValue([
            self.index_view(whole, [("slice", rows_u), ("slice", rows_u)], out, node),
            self.index_view(whole, [("int", ir.name(m)), ("slice", ast.Slice(
                lower=None, upper=k, step=None))], out, node),
            self.index_view(whole, [("slice", rows_vh), ("slice", ast.Slice(
                lower=None, upper=ir.name(n), step=None))], out, node)])

    def element(self, array, k, out):
        """The number array[k], as an atom."""
        return self.to_atom(out, ast.Subscript(value=ir.name(array.id), slice=ir.const(k),
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
                raise self.error(node, f"`{name}` with `{kw.arg}=`",
                                 f"adjit differentiates {name}({', '.join(params)}); pass "
                                 "those (numba takes no others).")
            k = params.index(kw.arg)
            if placed[k] is not None:
                raise self.error(node, f"`{name}` given `{kw.arg}` twice", "Pass it once.")
            placed[k] = kw.value
        while placed and placed[-1] is None:
            placed.pop()
        for k, a in enumerate(placed):
            if a is None:
                if params[k] not in rule.defaults:
                    raise self.error(node, f"`{name}` without `{params[k]}`",
                                     f"Pass {params[k]}.")
                placed[k] = copy.deepcopy(rule.defaults[params[k]])
        return placed

    @lowers("custom")
    def lower_custom(self, node, obj, out):
        """A call of a custom_vjp function (adjit/custom.py): kept whole, as a call of its
        value helper, whose registry entry carries the user's rule."""
        fn = obj

        def error(what, instead):
            return self.error(node, what, instead)
        fn.require_rule(error)
        signature = types.SimpleNamespace(params=fn.params, defaults={
            p: ast.Constant(value=v) for p, v in fn.defaults.items()})
        args = self.by_position(node, node.args, signature)
        args += [signature.defaults[p] for p in fn.params[len(args):]
                 if p in signature.defaults]
        if len(args) != len(fn.params):
            raise self.error(node, f"a call to `{fn.__name__}` with {len(args)} argument(s)",
                             f"Pass {len(fn.params)}: {', '.join(fn.params)}.")
        atoms, descs = zip(*[self.opaque_argument(a, out) for a in args]) if args else ((), ())
        for a, d in zip(args, descs):
            if d[0] == "const" and not isinstance(d[1], (bool, int, float)):
                raise self.error(node, f"a tuple passed to the custom_vjp function "
                                 f"`{fn.__name__}`", "Pass numbers and arrays.")
        fn.check_call(descs, error)
        return self.call_of(fn.helpers[f"{fn.key}_value"], list(atoms))

    def call_as_is(self, obj, args, out, node):
        """A call of `obj` kept in the generated code, its arguments atoms: arrays evaluated
        into names, tuples of sizes kept as tuples of atoms."""
        return self.call_of(obj, [self.argument_atom(a, out) for a in args])

    def argument_atom(self, a, out):
        if isinstance(a, ast.Tuple):
            return ast.Tuple(elts=[self.atom(e, out) for e in a.elts], ctx=ast.Load())
        value = self.rhs(a, out) if isinstance(a, ast.Name) or (
            isinstance(a, ast.BinOp) and isinstance(a.op, ast.Add) and (
                self._tuple_length(a.left, out) is not None or
                self._tuple_length(a.right, out) is not None)) else None
        if isinstance(value, (Shape, TupleValue)):     # a tuple of sizes (a name, a sum)
            items = [value.item(k) for k in range(value.ndim)] if isinstance(value, Shape) \
                else value.items
            return ast.Tuple(elts=[self.to_atom(out, e) for e in items], ctx=ast.Load())
        value = self.operand(a, out)
        if isinstance(value, Scalar):
            value = value.atom
        elif isinstance(value, Lazy):
            value = ir.name(self.materialize(value, out).id)
        return value

    def call_of(self, obj, atoms):
        spelled = ast.parse(self.ctx.env.spell(obj, getattr(obj, "__name__", "f")),
                            mode="eval").body
        return ast.Call(func=spelled, args=list(atoms), keywords=[])

    @lowers("nan_reduce")
    def lower_nan_reduce(self, node, obj, out):
        """np.nansum/nanprod/nanmean/nanmax/nanmin(a): the reduction of np.where(a != a,
        fill, a), as numba computes them over all elements; nanmean divides by the count of
        numbers, nanmax/nanmin are NaN when there is none."""
        name = obj.__name__
        if len(node.args) != 1 or node.keywords:
            raise self.error(node, f"np.{name} with arguments other than the array",
                             f"numba compiles np.{name}(a) alone.")
        x = self.operand(node.args[0], out)
        if not isinstance(x, Lazy) or isinstance(x, Scalar):
            raise self.error(node, f"np.{name} of something that is not an array",
                             "Pass an array.")
        how, fill = {"nansum": ("sum", 0.0), "nanprod": ("prod", 1.0), "nanmean": ("sum", 0.0),
                     "nanvar": ("sum", 0.0), "nanstd": ("sum", 0.0), "nancumsum": ("", 0.0),
                     "nanmax": ("max", -math.inf), "nanmin": ("min", math.inf)}[name]
        if not isinstance(x, View):
            x = self.view_of(self.materialize(x, out, node).id, out)
        is_nan = self.elementwise(("cmp", ast.NotEq()), [x, x], out, node)
        if name == "nancumsum":     # the running sum of the flattened array, NaN as 0
            filled = self.elementwise(("call", "where"), [is_nan, ir.const(0.0), x], out, node)
            if len(x.shape) > 1:
                filled = self.reshape_view(self.view_of(self.materialize(filled, out, node).id,
                                                        out), [ir.const(-1)], out, node)
            return self.running_sum(filled, 0, out)
        total = self.reduce(how, self.elementwise(("call", "where"), [is_nan, ir.const(fill), x],
                                                  out, node), None, out, node)
        if name in ("nansum", "nanprod"):
            return total
        ones = self.elementwise(("call", "where"), [is_nan, ir.const(0.0), ir.const(1.0)],
                                out, node)
        count = self.reduce("sum", ones, None, out, node)
        if name == "nanmean":
            return self.to_atom(out, ast.BinOp(left=total, op=ast.Div(), right=count))
        if name in ("nanvar", "nanstd"):    # the mean square deviation of the numbers
            mean = self.to_atom(out, ast.BinOp(left=total, op=ast.Div(), right=count))
            dev = self.elementwise(("call", "where"), [is_nan, ir.const(0.0), self.elementwise(
                ("bin", ast.Sub()), [x, mean], out, node)], out, node)
            square = self.elementwise(("bin", ast.Mult()), [dev, dev], out, node)
            var = self.to_atom(out, ast.BinOp(left=self.reduce("sum", square, None, out, node),
                                              op=ast.Div(), right=count))
            return var if name == "nanvar" else self.scalar_op(("call", math.sqrt), [var], out)
        return self.to_atom(out, self.call_of(vec.nan_if_none, [total, count]))

    # statistics composed of reductions ------------------------------------------------------
    @lowers("var", "std", "ptp")
    def lower_spread(self, node, obj, out):
        return self.spread(obj.__name__, node, node.args[0] if node.args else None,
                           node.args[1:], out)

    def spread(self, what, node, array, rest, out):
        """np.var(a), np.std(a), np.ptp(a) (and the methods) over all elements, as numba
        compiles them: var = mean((a - mean(a)) ** 2) (numpy's two passes), std its square
        root, ptp = max - min; the derivative is that of the composition."""
        if array is None or rest or node.keywords:
            raise self.error(node, f"np.{what} with arguments other than the array",
                             f"numba compiles np.{what}(a) alone: write it over all elements, "
                             "or compose it from np.mean / np.max along an axis.")
        x = self.operand(array, out)
        if not isinstance(x, Lazy) or isinstance(x, Scalar):
            raise self.error(node, f"np.{what} of something that is not an array",
                             "Pass an array.")
        if not isinstance(x, View):
            x = self.view_of(self.materialize(x, out, node).id, out)
        if what == "ptp":
            hi = self.reduce("max", x, None, out, node)
            lo = self.reduce("min", x, None, out, node)
            return self.to_atom(out, ast.BinOp(left=hi, op=ast.Sub(), right=lo))
        m = self.reduce("mean", x, None, out, node)
        d = self.elementwise(("bin", ast.Sub()), [x, m], out, node)
        v = self.reduce("mean", self.elementwise(("call", "square"), [d], out, node), None,
                        out, node)
        if what == "var":
            return v
        return self.scalar_op(("call", math.sqrt), [v], out)

    # manipulation by views and compositions ------------------------------------------------
    @lowers("flip", "fliplr", "flipud")
    def lower_flip(self, node, obj, out):
        """np.flip(m, axis=None), np.fliplr (axis 1), np.flipud (axis 0): a view with the
        axis (or every axis) read backwards, never a copy."""
        what = f"np.{obj.__name__}"
        axis_default = {"np.fliplr": 1, "np.flipud": 0}.get(what)
        names = ["m", "axis"] if what == "np.flip" else ["m"]
        a = self.call_arguments(node, names, {"axis": None}, out)
        v = self.array_operand(a["m"], out, what)
        ndim = len(v.shape)
        if what == "np.flip":
            axis = self.axes_argument(a["axis"], node, ndim)
        else:
            axis = axis_default
            if ndim <= axis:
                raise self.error(node, f"{what} of a {ndim}-D array",
                                 f"{what} needs at least {axis + 1} dimensions.")
        axes = set(range(ndim)) if axis is None else \
            set(axis) if isinstance(axis, tuple) else {axis}
        if not isinstance(v, View):
            v = self.view_of(self.materialize(v, out, node).id, out)
        items = [("slice", ast.Slice(lower=None, upper=None,
                                     step=ast.Constant(-1) if k in axes else None))
                 for k in range(ndim)]
        return self.index_view(v, items, out, node)

    @lowers("rot90")
    def lower_rot90(self, node, obj, out):
        """np.rot90(m, k=1): a view, as numpy makes it - k = 1: flip axis 1, then swap axes 0
        and 1; k = 2: flip both; k = 3: swap, then flip axis 1 (k a constant, taken mod 4)."""
        a = self.call_arguments(node, ["m", "k"], {"k": ast.Constant(1)}, out)
        k = a["k"]
        if isinstance(k, ast.UnaryOp) and isinstance(k.op, ast.USub) and \
                isinstance(k.operand, ast.Constant):
            k = ast.Constant(-k.operand.value)
        if not (isinstance(k, ast.Constant) and isinstance(k.value, int) and
                not isinstance(k.value, bool)):
            raise self.error(node, "np.rot90 with a k that is not a constant integer",
                             "Write np.rot90(m) or np.rot90(m, 2) with a literal k.")
        v = self.array_operand(a["m"], out, "np.rot90")
        ndim = len(v.shape)
        if ndim < 2:
            raise self.error(node, f"np.rot90 of a {ndim}-D array", "Rotate a 2-D array.")
        if not isinstance(v, View):
            v = self.view_of(self.materialize(v, out, node).id, out)
        swap = [1, 0] + list(range(2, ndim))

        def flip(w, axes):
            items = [("slice", ast.Slice(lower=None, upper=None,
                                         step=ast.Constant(-1) if j in axes else None))
                     for j in range(ndim)]
            return self.index_view(w, items, out, node)
        turn = k.value % 4
        if turn == 0:
            return flip(v, ())
        if turn == 1:
            return self.transpose(flip(v, (1,)), out, swap, node)
        if turn == 2:
            return flip(v, (0, 1))
        return flip(self.transpose(v, out, swap, node), (1,))

    @lowers("real")
    def lower_real(self, node, obj, out):
        """np.real of real numbers: the number; of a real array, the array itself (a view
        of all of it, as numpy returns)."""
        a = self.call_arguments(node, ["val"], {}, out)
        v = self.operand(a["val"], out)
        if not isinstance(v, Lazy) or isinstance(v, Scalar):
            return v
        if not isinstance(v, View):
            v = self.view_of(self.materialize(v, out, node).id, out)
        full = ("slice", ast.Slice(lower=None, upper=None, step=None))
        return self.index_view(v, [full] * len(v.shape), out, node)

    @lowers("expand_dims")
    def lower_expand_dims(self, node, obj, out):
        """np.expand_dims(a, axis): a view with a new axis of length 1 (a[:, None])."""
        a = self.call_arguments(node, ["a", "axis"], {}, out)
        v = self.array_operand(a["a"], out, "np.expand_dims")
        ndim = len(v.shape) + 1
        axis = self.axes_argument(a["axis"], node, ndim)
        if not isinstance(axis, int):
            raise self.error(node, "np.expand_dims with several axes",
                             "Insert one axis per call.")
        if not isinstance(v, View):
            v = self.view_of(self.materialize(v, out, node).id, out)
        full = ("slice", ast.Slice(lower=None, upper=None, step=None))
        items = [full] * (ndim - 1)
        items.insert(axis, ("new",))
        return self.index_view(v, items, out, node)

    @lowers("atleast")
    def lower_atleast(self, node, obj, out):
        """np.atleast_1d/2d/3d(a) of one array: a view of it with axes of length 1 added as
        numpy adds them ((n,) -> (1, n) -> (1, n, 1); (m, n) -> (m, n, 1)), the array itself
        when it has enough."""
        name = obj.__name__
        if len(node.args) != 1 or node.keywords:
            raise self.error(node, f"np.{name} of other than one array",
                             f"Call np.{name} once per array.")
        v = self.array_operand(node.args[0], out, f"np.{name}")
        if not isinstance(v, View):
            v = self.view_of(self.materialize(v, out, node).id, out)
        full = ("slice", ast.Slice(lower=None, upper=None, step=None))
        want, ndim = int(name[-2]), len(v.shape)
        items = [full] * ndim
        if ndim < want:
            items = {(2, 1): [("new",), full], (3, 1): [("new",), full, ("new",)],
                     (3, 2): [full, full, ("new",)]}[want, ndim]
        return self.index_view(v, items, out, node)

    @lowers("copy")
    def lower_copy(self, node, obj, out):
        """np.copy(a): what a.copy() is."""
        a = self.call_arguments(node, ["a"], {}, out)
        call = ast.copy_location(ast.Call(func=ast.copy_location(ast.Attribute(
            value=a["a"], attr="copy", ctx=ast.Load()), node), args=[], keywords=[]), node)
        return self.method(call, out)

    @lowers("vdot")
    def lower_vdot(self, node, obj, out):
        """np.vdot(a, b): the sum of the products of the flattened arrays."""
        a = self.call_arguments(node, ["a", "b"], {}, out)
        x, y = (self.reshape_view(self.array_operand(a[k], out, "np.vdot"), [ir.const(-1)],
                                  out, node) for k in ("a", "b"))
        return self.reduce("sum", self.elementwise(("bin", ast.Mult()), [x, y], out, node),
                           None, out, node)

    @lowers("average")
    def lower_average(self, node, obj, out):
        """np.average(a, weights=None) over all elements: the mean, or sum(a w) / sum(w)."""
        a = self.call_arguments(node, ["a", "weights"], {"weights": None}, out)
        x = self.array_operand(a["a"], out, "np.average")
        if a["weights"] is None or (isinstance(a["weights"], ast.Constant) and
                                    a["weights"].value is None):
            return self.reduce("mean", x, None, out, node)
        w = self.array_operand(a["weights"], out, "np.average")
        if not isinstance(w, View):
            w = self.view_of(self.materialize(w, out, node).id, out)
        top = self.reduce("sum", self.elementwise(("bin", ast.Mult()), [x, w], out, node),
                          None, out, node)
        bottom = self.reduce("sum", w, None, out, node)
        return self.to_atom(out, ast.BinOp(left=top, op=ast.Div(), right=bottom))

    @lowers("trapezoid")
    def lower_trapezoid(self, node, obj, out):
        """np.trapezoid(y, x=None, dx=1.0) of 1-D arrays: sum((y[1:] + y[:-1]) * dx) / 2,
        with dx = x[1:] - x[:-1] when x is given."""
        a = self.call_arguments(node, ["y", "x", "dx"], {"x": None, "dx": None}, out)
        y = self.array_operand(a["y"], out, "np.trapezoid")
        if len(y.shape) != 1:
            raise self.error(node, f"np.trapezoid of a {len(y.shape)}-D array",
                             "Integrate 1-D arrays (one call per row).")
        if not isinstance(y, View):
            y = self.view_of(self.materialize(y, out, node).id, out)

        def part(v, lo, hi):
            return self.index_view(v, [("slice", ast.Slice(
                lower=None if lo is None else ast.Constant(lo),
                upper=None if hi is None else ast.Constant(hi), step=None))], out, node)
        pair = self.elementwise(("bin", ast.Add()), [part(y, 1, None), part(y, None, -1)], out,
                                node)
        if a["x"] is not None and not (isinstance(a["x"], ast.Constant) and
                                       a["x"].value is None):
            if a["dx"] is not None:
                raise self.error(node, "np.trapezoid with both x and dx", "Pass one of them.")
            x = self.array_operand(a["x"], out, "np.trapezoid")
            if not isinstance(x, View):
                x = self.view_of(self.materialize(x, out, node).id, out)
            dx = self.elementwise(("bin", ast.Sub()), [part(x, 1, None), part(x, None, -1)],
                                  out, node)
            total = self.reduce("sum", self.elementwise(("bin", ast.Mult()), [pair, dx], out,
                                                        node), None, out, node)
        else:
            total = self.reduce("sum", pair, None, out, node)
            if a["dx"] is not None:
                total = self.to_atom(out, ast.BinOp(left=total, op=ast.Mult(),
                                                    right=self.atom(a["dx"], out)))
        return self.to_atom(out, ast.BinOp(left=total, op=ast.Mult(), right=ir.const(0.5)))

    @lowers("hstack")
    def lower_hstack(self, node, obj, out):
        """np.hstack: 1-D arrays end to end, others along axis 1 (numpy's rule)."""
        return self.joined(node, out, "np.hstack", lambda ndim: (0 if ndim == 1 else 1, False))

    @lowers("vstack")
    def lower_vstack(self, node, obj, out):
        """np.vstack: 1-D arrays as rows, others along axis 0."""
        return self.joined(node, out, "np.vstack", lambda ndim: (0, ndim == 1))

    @lowers("column_stack")
    def lower_column_stack(self, node, obj, out):
        """np.column_stack: 1-D arrays as columns, others along axis 1."""
        return self.joined(node, out, "np.column_stack", lambda ndim: (1, ndim == 1))

    @lowers("dstack")
    def lower_dstack(self, node, obj, out):
        """np.dstack: along a third axis; 1-D arrays (n,) become (1, n, k), 2-D ones
        (m, n, k), 3-D ones are joined along axis 2."""
        a = self.call_arguments(node, ["tup"], {}, out)
        if not isinstance(a["tup"], (ast.Tuple, ast.List)):
            raise self.error(node, "np.dstack of something that is not a tuple of arrays",
                             "Write np.dstack((a, b)).")
        pieces = self.operands(list(a["tup"].elts), out)     # left to right (operands)
        if not pieces or any(not isinstance(p, Lazy) or isinstance(p, Scalar) for p in pieces):
            raise self.error(node, "joining something that is not an array",
                             "Pass a tuple of arrays: np.dstack((a, b)).")
        ndim = len(pieces[0].shape)
        if ndim == 3:
            return self.concatenate(None, 2, out, node, pieces=pieces)
        joined = self.concatenate(None, ndim, out, node, stack=True, pieces=pieces)
        if ndim == 2:
            return joined
        if isinstance(joined, ast.Name):
            joined = self.view_of(joined.id, out)
        view = joined if isinstance(joined, View) else self.view_of(
            self.materialize(joined, out, node).id, out)
        return self.reshape_view(view, [ir.const(1), ir.const(-1), ir.const(len(pieces))],
                                 out, node)

    def joined(self, node, out, what, rule):
        a = self.call_arguments(node, ["tup"], {}, out)
        if not isinstance(a["tup"], (ast.Tuple, ast.List)):
            raise self.error(node, f"{what} of something that is not a tuple of arrays",
                             f"Write {what}((a, b)).")
        pieces = self.operands(list(a["tup"].elts), out)     # left to right (operands)
        if not pieces or any(not isinstance(p, Lazy) or isinstance(p, Scalar) for p in pieces):
            raise self.error(node, "joining something that is not an array",
                             f"Pass a tuple of arrays: {what}((a, b)).")
        axis, stack = rule(len(pieces[0].shape))
        return self.concatenate(None, axis, out, node, stack=stack, pieces=pieces)

    @lowers("tril", "triu")
    def lower_tril(self, node, obj, out):
        """np.tril(m, k=0) / np.triu(m, k=0) of a 2-D array: a new array keeping the elements
        on and below (above) the k-th diagonal, zeros elsewhere; the adjoint keeps the same
        elements of the result's adjoint."""
        upper = obj is np.triu
        what = "np.triu" if upper else "np.tril"
        a = self.call_arguments(node, ["m", "k"], {"k": None}, out)
        v = self.array_operand(a["m"], out, what)
        if len(v.shape) != 2:
            raise self.error(node, f"{what} of a {len(v.shape)}-D array",
                             f"{what} takes a 2-D array here.")
        k = ir.const(0) if a["k"] is None else self.atom(a["k"], out)
        shape = [self._length(n) for n in v.shape]
        name = self.new_array(shape, out)
        target = self.full_view(name, shape)
        env = self.loop_env(v.shape, [v], out)

        def body(vars_, stmts):
            i, j = vars_
            edge = self.to_atom(stmts, ast.BinOp(left=i, op=ast.Add(), right=k))
            keep = self.to_atom(stmts, ast.Compare(left=j, ops=[ast.GtE() if upper else
                                                                 ast.LtE()],
                                                   comparators=[edge]))
            sub = ast.Subscript(value=ir.name(name), slice=_index_node(
                self.map_index(target, vars_, env, stmts)), ctx=ast.Store())
            kept, zero = [], []
            self.emit_assign(kept, copy.deepcopy(sub), self.scalar_at(v, vars_, env, kept))
            self.emit_assign(zero, copy.deepcopy(sub), ir.const(0.0))
            self.emit_if(stmts, keep, kept, zero)

        self.nest(v.shape, [0, 1], out, body)
        return ir.name(name)

    # sorting and shifting --------------------------------------------------------------------
    def sorted_view(self, node, array, out, what):
        """A 1-D array in sorted order: a gather through np.argsort (whose order carries no
        derivative: the values move with their own adjoints)."""
        v = self.array_operand(array, out, what)
        if len(v.shape) != 1:
            raise self.error(node, f"{what} of a {len(v.shape)}-D array",
                             f"{what} takes a 1-D array here (sort each row in a loop).")
        base = self.materialize(v, out, node)
        order = self.fresh("_s")
        self.emit_assign(out, order, ast.Call(func=ast.parse(
            self.ctx.env.spell(np.argsort, "argsort"), mode="eval").body, args=[base],
            keywords=[]))
        return self.index_view(self.view_of(base.id, out), [("array", order, 1)], out, node)

    @lowers("sort")
    def lower_sort(self, node, obj, out):
        """np.sort(a) of a 1-D array."""
        a = self.call_arguments(node, ["a"], {}, out)
        return self.sorted_view(node, a["a"], out, "np.sort")

    @lowers("median")
    def lower_median(self, node, obj, out):
        """np.median(a) of a 1-D array: the mean of the elements at (n - 1) // 2 and n // 2 of
        the sorted array (the same element when n is odd: (m + m) / 2 is m exactly)."""
        a = self.call_arguments(node, ["a"], {}, out)
        s = self.materialize(self.sorted_view(node, a["a"], out, "np.median"), out, node)
        n = self.to_atom(out, ast.Subscript(value=ast.Attribute(value=s, attr="shape",
                                                               ctx=ast.Load()),
                                            slice=ir.const(0), ctx=ast.Load()), "_n")
        less = self.to_atom(out, ast.BinOp(left=n, op=ast.Sub(), right=ir.const(1)), "_n")
        lo = self.to_atom(out, ast.BinOp(left=less, op=ast.FloorDiv(), right=ir.const(2)), "_n")
        hi = self.to_atom(out, ast.BinOp(left=n, op=ast.FloorDiv(), right=ir.const(2)), "_n")
        left = self.to_atom(out, ast.Subscript(value=s, slice=lo, ctx=ast.Load()))
        right = self.to_atom(out, ast.Subscript(value=s, slice=hi, ctx=ast.Load()))
        total = self.to_atom(out, ast.BinOp(left=left, op=ast.Add(), right=right))
        return self.to_atom(out, ast.BinOp(left=total, op=ast.Mult(), right=ir.const(0.5)))

    @lowers("roll")
    def lower_roll(self, node, obj, out):
        """np.roll(a, shift) without an axis: the flattened array shifted circularly
        (element i of the result is element (i - shift) mod n), in a's shape."""
        a = self.call_arguments(node, ["a", "shift"], {}, out)
        v = self.array_operand(a["a"], out, "np.roll")
        shape = [self._length(n) for n in v.shape]
        flat = self.reshape_view(v, [ir.const(-1)], out, node)
        n = self._length(flat.shape[0])
        shift = self.atom(a["shift"], out)
        name = self.new_array([n], out)
        target = self.full_view(name, [n])
        env = self.loop_env(flat.shape, [flat], out)

        def body(vars_, stmts):
            back = self.to_atom(stmts, ast.BinOp(left=vars_[0], op=ast.Sub(), right=shift))
            j = self.to_atom(stmts, ast.BinOp(left=back, op=ast.Mod(), right=n))
            sub = ast.Subscript(value=ir.name(name), slice=_index_node(
                self.map_index(target, vars_, env, stmts)), ctx=ast.Store())
            self.emit_assign(stmts, sub, self.scalar_at(flat, [j], env, stmts))

        self.nest(flat.shape, [0], out, body)
        if len(shape) == 1:
            return ir.name(name)
        return self.reshape_view(self.view_of(name, out), None, out, node, atoms=shape)

    @lowers("repeat")
    def lower_repeat(self, node, obj, out):
        """np.repeat(a, repeats) with an int number of repeats and no axis: each element of
        the flattened array `repeats` times in a row."""
        a = self.call_arguments(node, ["a", "repeats"], {}, out)
        flat = self.reshape_view(self.array_operand(a["a"], out, "np.repeat"), [ir.const(-1)],
                                 out, node)
        r = self.atom(a["repeats"], out)
        n = self._length(flat.shape[0])
        total = self.to_atom(out, ast.BinOp(left=n, op=ast.Mult(), right=r), "_n")
        name = self.new_array([total], out)
        target = self.full_view(name, [total])
        env = self.loop_env(flat.shape, [flat], out)     # flat is read at j, not at i

        def body(vars_, stmts):
            j = self.to_atom(stmts, ast.BinOp(left=vars_[0], op=ast.FloorDiv(), right=r))
            sub = ast.Subscript(value=ir.name(name), slice=_index_node(
                self.map_index(target, vars_, env, stmts)), ctx=ast.Store())
            self.emit_assign(stmts, sub, self.scalar_at(flat, [j], env, stmts))

        self.nest([total], [0], out, body)
        return ir.name(name)


def _parameter_name(obj, k):
    """What numpy calls the k-th positional parameter of obj (`decimals` of np.round)."""
    import inspect
    try:
        params = list(inspect.signature(obj).parameters)
    except (TypeError, ValueError):
        params = []
    return params[k] if k < len(params) else None
