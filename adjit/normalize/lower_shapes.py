"""Lowerings of numpy's views, joins and rearrangements of arrays (transpose, reshape,
flip, rot90, stack, tril, roll, repeat, take, ...).

Each is a function of the normalizer (`norm`), the call's node, the function object and
the statement list, registered for its registry entry's handler (normalize/lowering.py)."""
import ast
import copy

import numpy as np

from .. import ir
from .lowering import lowers
from .views import has_take
from .values import left_out
from .vectorize import Lazy, Scalar, View, _index_node


@lowers("transpose")
def lower_transpose(norm, node, obj, out):
    """np.transpose(x, axes=None): a view."""
    args = node.args
    axes = args[1] if len(args) > 1 else None
    for kw in node.keywords:
        if kw.arg != "axes" or axes is not None:
            raise norm.error(node, f"np.transpose with `{kw.arg}=`",
                             "Write np.transpose(x) or np.transpose(x, (1, 0, 2)).")
        axes = kw.value
    return norm.arrays.transpose(norm.operand(args[0], out), out,
                                 norm.calls.axes_argument(axes, node), node)


@lowers("swapaxes", "moveaxis")
def lower_permute_axes(norm, node, obj, out):
    """np.swapaxes(x, a, b), np.moveaxis(x, source, destination): views."""
    args, what = node.args, obj.__name__
    if len(args) != 3 or node.keywords:
        raise norm.error(node, f"np.{what} with other than (array, axis, axis)",
                         f"Write np.{what}(x, a, b) with constant axes.")
    return norm.calls.permute_axes(what, norm.operand(args[0], out), args[1:], node, out)


@lowers("reshape")
def lower_reshape(norm, node, obj, out):
    args = node.args
    if len(args) != 2 or node.keywords:
        raise norm.error(node, "np.reshape with other than (array, shape)",
                         "Write np.reshape(x, (m, n)).")
    shape = args[1].elts if isinstance(args[1], (ast.Tuple, ast.List)) else [args[1]]
    return norm.indexing.reshape_view(norm.operand(args[0], out), shape, out, node)


@lowers("ravel")
def lower_ravel(norm, node, obj, out):
    args = node.args
    if len(args) != 1 or node.keywords:
        raise norm.error(node, "np.ravel with an order", "Write np.ravel(x).")
    return norm.indexing.reshape_view(norm.operand(args[0], out), [ir.const(-1)], out, node)


@lowers("flip", "fliplr", "flipud")
def lower_flip(norm, node, obj, out):
    """np.flip(m, axis=None), np.fliplr (axis 1), np.flipud (axis 0): a view with the
    axis (or every axis) read backwards, never a copy."""
    what = f"np.{obj.__name__}"
    axis_default = {"np.fliplr": 1, "np.flipud": 0}.get(what)
    names = ["m", "axis"] if what == "np.flip" else ["m"]
    a = norm.indexing.call_arguments(node, names, {"axis": None}, out)
    v = norm.indexing.array_operand(a["m"], out, what)
    ndim = len(v.shape)
    if what == "np.flip":
        axis = norm.calls.axes_argument(a["axis"], node, ndim)
    else:
        axis = axis_default
        if ndim <= axis:
            raise norm.error(node, f"{what} of a {ndim}-D array",
                             f"{what} needs at least {axis + 1} dimensions.")
    axes = set(range(ndim)) if axis is None else \
        set(axis) if isinstance(axis, tuple) else {axis}
    if not isinstance(v, View):
        v = norm.arrays.view_of(norm.arrays.materialize(v, out, node).id, out)
    items = [("slice", ast.Slice(lower=None, upper=None,
                                 step=ast.Constant(-1) if k in axes else None))
             for k in range(ndim)]
    return norm.indexing.index_view(v, items, out, node)


@lowers("rot90")
def lower_rot90(norm, node, obj, out):
    """np.rot90(m, k=1): a view, as numpy makes it - k = 1: flip axis 1, then swap axes 0
    and 1; k = 2: flip both; k = 3: swap, then flip axis 1 (k a constant, taken mod 4)."""
    a = norm.indexing.call_arguments(node, ["m", "k"], {"k": ast.Constant(1)}, out)
    k = a["k"]
    if isinstance(k, ast.UnaryOp) and isinstance(k.op, ast.USub) and \
            isinstance(k.operand, ast.Constant):
        k = ast.Constant(-k.operand.value)
    if not (isinstance(k, ast.Constant) and isinstance(k.value, int) and
            not isinstance(k.value, bool)):
        raise norm.error(node, "np.rot90 with a k that is not a constant integer",
                         "Write np.rot90(m) or np.rot90(m, 2) with a literal k.")
    v = norm.indexing.array_operand(a["m"], out, "np.rot90")
    ndim = len(v.shape)
    if ndim < 2:
        raise norm.error(node, f"np.rot90 of a {ndim}-D array", "Rotate a 2-D array.")
    if not isinstance(v, View):
        v = norm.arrays.view_of(norm.arrays.materialize(v, out, node).id, out)
    swap = [1, 0] + list(range(2, ndim))

    def flip(w, axes):
        items = [("slice", ast.Slice(lower=None, upper=None,
                                     step=ast.Constant(-1) if j in axes else None))
                 for j in range(ndim)]
        return norm.indexing.index_view(w, items, out, node)
    turn = k.value % 4
    if turn == 0:
        return flip(v, ())
    if turn == 1:
        return norm.arrays.transpose(flip(v, (1,)), out, swap, node)
    if turn == 2:
        return flip(v, (0, 1))
    return flip(norm.arrays.transpose(v, out, swap, node), (1,))


@lowers("real")
def lower_real(norm, node, obj, out):
    """np.real of real numbers: the number; of a real array, the array itself (a view
    of all of it, as numpy returns)."""
    a = norm.indexing.call_arguments(node, ["val"], {}, out)
    v = norm.operand(a["val"], out)
    if not isinstance(v, Lazy) or isinstance(v, Scalar):
        return v
    if not isinstance(v, View):
        v = norm.arrays.view_of(norm.arrays.materialize(v, out, node).id, out)
    full = ("slice", ast.Slice(lower=None, upper=None, step=None))
    return norm.indexing.index_view(v, [full] * len(v.shape), out, node)


@lowers("expand_dims")
def lower_expand_dims(norm, node, obj, out):
    """np.expand_dims(a, axis): a view with a new axis of length 1 (a[:, None])."""
    a = norm.indexing.call_arguments(node, ["a", "axis"], {}, out)
    v = norm.indexing.array_operand(a["a"], out, "np.expand_dims")
    ndim = len(v.shape) + 1
    axis = norm.calls.axes_argument(a["axis"], node, ndim)
    if not isinstance(axis, int):
        raise norm.error(node, "np.expand_dims with several axes",
                         "Insert one axis per call.")
    if not isinstance(v, View):
        v = norm.arrays.view_of(norm.arrays.materialize(v, out, node).id, out)
    full = ("slice", ast.Slice(lower=None, upper=None, step=None))
    items = [full] * (ndim - 1)
    items.insert(axis, ("new",))
    return norm.indexing.index_view(v, items, out, node)


@lowers("atleast")
def lower_atleast(norm, node, obj, out):
    """np.atleast_1d/2d/3d(a) of one array: a view of it with axes of length 1 added as
    numpy adds them ((n,) -> (1, n) -> (1, n, 1); (m, n) -> (m, n, 1)), the array itself
    when it has enough."""
    name = obj.__name__
    if len(node.args) != 1 or node.keywords:
        raise norm.error(node, f"np.{name} of other than one array",
                         f"Call np.{name} once per array.")
    v = norm.indexing.array_operand(node.args[0], out, f"np.{name}")
    if not isinstance(v, View):
        v = norm.arrays.view_of(norm.arrays.materialize(v, out, node).id, out)
    full = ("slice", ast.Slice(lower=None, upper=None, step=None))
    want, ndim = int(name[-2]), len(v.shape)
    items = [full] * ndim
    if ndim < want:
        items = {(2, 1): [("new",), full], (3, 1): [("new",), full, ("new",)],
                 (3, 2): [full, full, ("new",)]}[want, ndim]
    return norm.indexing.index_view(v, items, out, node)


@lowers("copy")
def lower_copy(norm, node, obj, out):
    """np.copy(a): what a.copy() is."""
    a = norm.indexing.call_arguments(node, ["a"], {}, out)
    call = ast.copy_location(ast.Call(func=ast.copy_location(ast.Attribute(
        value=a["a"], attr="copy", ctx=ast.Load()), node), args=[], keywords=[]), node)
    return norm.calls.method(call, out)


@lowers("concatenate", "stack")
def lower_concatenate(norm, node, obj, out):
    args, what = node.args, obj.__name__
    axis = norm.calls.axis_argument(node, args, 1) or 0
    if not args or not isinstance(args[0], (ast.Tuple, ast.List)):
        raise norm.error(node, f"np.{what} of something other than a tuple of arrays",
                         f"Write np.{what}((a, b)).")
    return norm.arrays.concatenate(args[0].elts, axis, out, node, stack=what == "stack")


@lowers("append")
def lower_append(norm, node, obj, out):
    """np.append(arr, values, axis=None): without an axis, the flattened arrays joined (kept
    at array level: its ArrayRule); with one, np.concatenate((arr, values), axis)."""
    a = norm.indexing.call_arguments(node, ["arr", "values", "axis"], {"axis": None}, out)
    axis = a["axis"]
    if left_out(axis):
        return norm.calls.call_as_is(obj, [a["arr"], a["values"]], out, node)
    k = ir.constant_int(axis)
    if k is None:
        raise norm.error(node, "np.append with an axis that is not an int constant",
                         "Write the axis as a number: np.append(a, b, axis=0).")
    return norm.arrays.concatenate([a["arr"], a["values"]], k, out, node)


@lowers("hstack")
def lower_hstack(norm, node, obj, out):
    """np.hstack: 1-D arrays end to end, others along axis 1 (numpy's rule)."""
    return norm.calls.joined(node, out, "np.hstack", lambda ndim: (0 if ndim == 1 else 1, False))


@lowers("vstack")
def lower_vstack(norm, node, obj, out):
    """np.vstack: 1-D arrays as rows, others along axis 0."""
    return norm.calls.joined(node, out, "np.vstack", lambda ndim: (0, ndim == 1))


@lowers("column_stack")
def lower_column_stack(norm, node, obj, out):
    """np.column_stack: 1-D arrays as columns, others along axis 1."""
    return norm.calls.joined(node, out, "np.column_stack", lambda ndim: (1, ndim == 1))


@lowers("dstack")
def lower_dstack(norm, node, obj, out):
    """np.dstack: along a third axis; 1-D arrays (n,) become (1, n, k), 2-D ones
    (m, n, k), 3-D ones are joined along axis 2."""
    a = norm.indexing.call_arguments(node, ["tup"], {}, out)
    if not isinstance(a["tup"], (ast.Tuple, ast.List)):
        raise norm.error(node, "np.dstack of something that is not a tuple of arrays",
                         "Write np.dstack((a, b)).")
    pieces = norm.operands(list(a["tup"].elts), out)     # left to right (operands)
    if not pieces or any(not isinstance(p, Lazy) or isinstance(p, Scalar) for p in pieces):
        raise norm.error(node, "joining something that is not an array",
                         "Pass a tuple of arrays: np.dstack((a, b)).")
    ndim = len(pieces[0].shape)
    if ndim == 3:
        return norm.arrays.concatenate(None, 2, out, node, pieces=pieces)
    joined = norm.arrays.concatenate(None, ndim, out, node, stack=True, pieces=pieces)
    if ndim == 2:
        return joined
    if isinstance(joined, ast.Name):
        joined = norm.arrays.view_of(joined.id, out)
    view = joined if isinstance(joined, View) else norm.arrays.view_of(
        norm.arrays.materialize(joined, out, node).id, out)
    return norm.indexing.reshape_view(view, [ir.const(1), ir.const(-1), ir.const(len(pieces))],
                                      out, node)


@lowers("tril", "triu")
def lower_tril(norm, node, obj, out):
    """np.tril(m, k=0) / np.triu(m, k=0) of a 2-D array: a new array keeping the elements
    on and below (above) the k-th diagonal, zeros elsewhere; the adjoint keeps the same
    elements of the result's adjoint."""
    upper = obj is np.triu
    what = "np.triu" if upper else "np.tril"
    a = norm.indexing.call_arguments(node, ["m", "k"], {"k": None}, out)
    v = norm.indexing.array_operand(a["m"], out, what)
    if len(v.shape) != 2:
        raise norm.error(node, f"{what} of a {len(v.shape)}-D array",
                         f"{what} takes a 2-D array here.")
    k = ir.const(0) if a["k"] is None else norm.atom(a["k"], out)
    shape = [norm.indexing._length(n) for n in v.shape]
    name = norm.arrays.new_array(shape, out)
    target = norm.arrays.full_view(name, shape)
    env = norm.arrays.loop_env(v.shape, [v], out)

    def body(vars_, stmts):
        i, j = vars_
        edge = norm.to_atom(stmts, ast.BinOp(left=i, op=ast.Add(), right=k))
        keep = norm.to_atom(stmts, ast.Compare(left=j, ops=[ast.GtE() if upper else
                                                            ast.LtE()],
                                               comparators=[edge]))
        sub = ast.Subscript(value=ir.name(name), slice=_index_node(
            norm.indexing.map_index(target, vars_, env, stmts)), ctx=ast.Store())
        kept, zero = [], []
        norm.emit_assign(kept, copy.deepcopy(sub), norm.arrays.scalar_at(v, vars_, env, kept))
        norm.emit_assign(zero, copy.deepcopy(sub), ir.const(0.0))
        norm.emit_if(stmts, keep, kept, zero)

    norm.arrays.nest(v.shape, [0, 1], out, body)
    return ir.name(name)

# sorting and shifting --------------------------------------------------------------------


@lowers("roll")
def lower_roll(norm, node, obj, out):
    """np.roll(a, shift) without an axis: the flattened array shifted circularly
    (element i of the result is element (i - shift) mod n), in a's shape."""
    a = norm.indexing.call_arguments(node, ["a", "shift"], {}, out)
    v = norm.indexing.array_operand(a["a"], out, "np.roll")
    shape = [norm.indexing._length(n) for n in v.shape]
    flat = norm.indexing.reshape_view(v, [ir.const(-1)], out, node)
    n = norm.indexing._length(flat.shape[0])
    shift = norm.atom(a["shift"], out)
    name = norm.arrays.new_array([n], out)
    target = norm.arrays.full_view(name, [n])
    env = norm.arrays.loop_env(flat.shape, [flat], out)

    def body(vars_, stmts):
        back = norm.to_atom(stmts, ast.BinOp(left=vars_[0], op=ast.Sub(), right=shift))
        j = norm.to_atom(stmts, ast.BinOp(left=back, op=ast.Mod(), right=n))
        sub = ast.Subscript(value=ir.name(name), slice=_index_node(
            norm.indexing.map_index(target, vars_, env, stmts)), ctx=ast.Store())
        norm.emit_assign(stmts, sub, norm.arrays.scalar_at(flat, [j], env, stmts))

    norm.arrays.nest(flat.shape, [0], out, body)
    if len(shape) == 1:
        return ir.name(name)
    return norm.indexing.reshape_view(norm.arrays.view_of(name, out), None, out, node, atoms=shape)


@lowers("repeat")
def lower_repeat(norm, node, obj, out):
    """np.repeat(a, repeats) with an int number of repeats and no axis: each element of
    the flattened array `repeats` times in a row."""
    a = norm.indexing.call_arguments(node, ["a", "repeats"], {}, out)
    flat = norm.indexing.reshape_view(norm.indexing.array_operand(a["a"], out, "np.repeat"),
                                      [ir.const(-1)], out, node)
    r = norm.atom(a["repeats"], out)
    n = norm.indexing._length(flat.shape[0])
    total = norm.to_atom(out, ast.BinOp(left=n, op=ast.Mult(), right=r), "_n")
    kind = norm.indexing.lazy_dtype(flat)      # (an integer array's repeats: numba's int64)
    name = norm.arrays.new_array([total], out, kind if kind in ("i", "b") else "f")
    target = norm.arrays.full_view(name, [total])
    env = norm.arrays.loop_env(flat.shape, [flat], out)     # flat is read at j, not at i

    def body(vars_, stmts):
        j = norm.to_atom(stmts, ast.BinOp(left=vars_[0], op=ast.FloorDiv(), right=r))
        sub = ast.Subscript(value=ir.name(name), slice=_index_node(
            norm.indexing.map_index(target, vars_, env, stmts)), ctx=ast.Store())
        norm.emit_assign(stmts, sub, norm.arrays.scalar_at(flat, [j], env, stmts))

    norm.arrays.nest([total], [0], out, body)
    return ir.name(name)


@lowers("take")
def lower_take(norm, node, obj, out):
    """np.take(x, idx, axis=None): a gather view (of the flattened array without an
    axis)."""
    args = node.args
    if len(args) not in (2, 3) or any(kw.arg != "axis" for kw in node.keywords):
        raise norm.error(node, "np.take with other than (array, indices, axis)",
                         "Write np.take(x, idx) or np.take(x, idx, axis=k).")
    axis = args[2] if len(args) > 2 else next((kw.value for kw in node.keywords), None)
    x = norm.operand(args[0], out)
    if not isinstance(x, Lazy) or isinstance(x, Scalar):
        raise norm.error(node, "np.take from something that is not an array",
                         "Take from arrays.")
    axis = norm.calls.axes_argument(axis, node, len(x.shape))
    if axis is None:
        x = norm.indexing.reshape_view(x, [ir.const(-1)], out, node)
        axis = 0
    if not isinstance(x, View):
        x = norm.arrays.view_of(norm.arrays.materialize(x, out, node).id, out)
    full = ("slice", ast.Slice(lower=None, upper=None, step=None))
    items = [full] * axis + norm.indexing.index_items(args[1], out, node)
    w = norm.indexing.index_view(x, items, out, node)
    if not w.shape and not has_take(w):
        return norm.to_atom(out, ast.Subscript(value=ir.name(w.base), slice=_index_node(
            norm.indexing.map_index(w, [], None, out)), ctx=ast.Load()))
    return w
