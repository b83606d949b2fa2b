"""Lowerings of the numpy functions that make arrays from values (np.array, np.full,
np.linspace, np.arange, np.eye, np.ascontiguousarray).

Each is a function of the normalizer (`norm`), the call's node, the function object and
the statement list, registered for its registry entry's handler (normalize/lowering.py)."""
import ast

import numpy as np

from .. import ir
from ..rules.table import ARRAY_FUNCTIONS
from ..runtime import vec
from .lowering import lowers
from .vectorize import Lazy, Scalar, View
from .views import has_take


@lowers("array")
def lower_array(norm, node, obj, out):
    """np.array([a, b, c]) and np.asarray (of an array: the array itself)."""
    args = node.args
    given = [kw.value for kw in node.keywords if kw.arg == "dtype"] + list(args[1:2])
    if not 1 <= len(args) <= 2 or len(given) > 1 or \
            any(kw.arg != "dtype" for kw in node.keywords):
        raise norm.error(node, "np.array with other than one list argument and a dtype",
                         "Write np.array([a, b, c]), or np.array([a, b], dtype=np.int64).")
    declared = norm.calls.declared_dtype(given[0], node) if given else None
    if declared is not None and isinstance(args[0], (ast.List, ast.Tuple)):
        return norm.arrays.array_literal(args[0], out, declared)
    if given and obj is np.asarray:
        # (numba's gives the array itself where its dtype is that one, a copy otherwise)
        raise norm.error(node, f"`{ast.unparse(node.func)}` of an array with a dtype",
                         "Write np.asarray(x) for the array itself, or x.astype(np.float64) "
                         "for a copy of that dtype.")
    if not given and not isinstance(args[0], (ast.List, ast.Tuple)):
        # of an array (a list comprehension is built as one): np.asarray is the array,
        # np.array a copy of it
        value = norm.operand(args[0], out)
        if isinstance(value, Lazy) and not isinstance(value, Scalar) or \
                isinstance(value, ast.Name) and norm.arrays.array_ndim(value) is not None:
            listed = norm.holds_list(args[0])      # (a list: an array of its own)
            if obj is np.asarray and not listed:
                return value
            return norm.arrays.materialize(norm.arrays.lazy_operand(value, out), out, node,
                                           copy=listed)
        atom = value.atom if isinstance(value, Scalar) else value
        if ir.is_atom(atom) and not norm.is_int(atom) and not norm.is_bool(atom):
            # of a float: a 0-d array holding it, as numba makes one (hapsira's
            # `angle = np.asarray(angle)`, then `np.zeros(angle.shape + (3, 3))`)
            name = norm.fresh("_a")
            norm.arrays.allocate(name, [], out)
            norm.arrays.add_temp(name)
            norm.arrays.store_elements(norm.arrays.full_view(name, []), atom, out, node)
            return ir.name(name)
        raise norm.error(node, f"`{ast.unparse(node.func)}` of something other than a list, "
                         "an array or a float", "Write np.array([a, b, c]).")
    return norm.arrays.array_literal(args[0], out)


@lowers("contiguous")
def lower_contiguous(norm, node, obj, out):
    """np.ascontiguousarray(a): the array itself where it is C-contiguous, as numba returns
    it (an argument numba types C, an array of the function's own, a view of consecutive
    elements); a copy of the transpose of one, and of arithmetic or a gather. A strided view
    (or an argument of layout 'A') numba returns or copies by its layout at run time:
    refused."""
    if len(node.args) != 1 or node.keywords:
        raise norm.error(node, "np.ascontiguousarray with other than one argument",
                         "Pass the array alone.")
    value = norm.operand(node.args[0], out)
    if isinstance(value, View) and not has_take(value):
        if value.contiguous:
            return value
        if value.is_transpose() and len(value.shape) > 1 and \
                norm.ctx.layouts.get(value.base, "C") == "C":
            # (numba types it Fortran-ordered: always a copy)
            return norm.arrays.materialize(value, out, node)
        raise norm.error(node, "np.ascontiguousarray of an array or view that numba returns "
                         "or copies by its memory layout at run time",
                         "Write .copy() for an array of its own, or pass a C-contiguous "
                         "array.")
    if isinstance(value, Lazy) and not isinstance(value, Scalar):
        return norm.arrays.materialize(value, out, node)
    raise norm.error(node, "np.ascontiguousarray of something other than an array",
                     "Pass an array.")


@lowers("full", "full_like")
def lower_full(norm, node, obj, out):
    """np.full(shape, value), np.full_like(a, value): a new array, every element
    stored."""
    args, what = list(node.args), obj.__name__
    # numpy's own names, as numba takes them: np.full(shape=3, fill_value=2.0)
    named = {k.arg: k.value for k in node.keywords}
    for position, word in enumerate(("a" if what == "full_like" else "shape", "fill_value")):
        if len(args) == position and word in named:
            args.append(named.pop(word))
    node = ast.copy_location(ast.Call(func=node.func, args=args, keywords=[
        ast.keyword(arg=k, value=v) for k, v in named.items()]), node)
    dtype = [k.value for k in node.keywords if k.arg == "dtype"] + args[2:3]
    if len(args) not in (2, 3) or any(k.arg != "dtype" for k in node.keywords) or \
            len(dtype) > 1:
        raise norm.error(node, f"np.{what} with other than (shape, value) or (shape, "
                         "value, dtype)", f"Write np.{what}(shape, value).")
    declared = norm.calls.declared_dtype(dtype[0], node) if dtype else np.dtype(np.float64)
    if declared.kind in "iub" and what == "full" and isinstance(node.func, ast.Attribute):
        # an integer or boolean array (stumpy's `np.full(n, -1, dtype=np.int64)` of
        # indices): np.zeros of that dtype, then every element stored
        made = norm.fresh_local("_full")
        zeros = ast.Attribute(value=node.func.value, attr="zeros", ctx=ast.Load())
        for stmt in (ast.Assign(targets=[ast.Name(id=made, ctx=ast.Store())],
                                value=ast.Call(func=zeros, args=[args[0]], keywords=[
                                    ast.keyword(arg="dtype", value=dtype[0])])),
                     ast.Assign(targets=[ast.Subscript(
                         value=ast.Name(id=made, ctx=ast.Load()), slice=ast.Slice(),
                         ctx=ast.Store())], value=args[1])):
            norm.stmt(ast.fix_missing_locations(ast.copy_location(stmt, node)), out)
        return ir.name(norm.local(made))
    if declared != np.float64:
        raise norm.error(node, f"np.{what} with the dtype {declared}",
                         "Fill a float64 array (the default) for values that carry "
                         "derivatives, or an integer or boolean array (np.full(n, -1, "
                         "dtype=np.int64)).")
    if what == "full_like":
        like = norm.operand(args[0], out)
        if isinstance(like, Lazy) and not isinstance(like, Scalar) and not dtype and \
                norm.indexing.lazy_dtype(like) in ("i", "b"):
            # an integer or boolean array's dtype (numba's np.full_like(idx, 2.5) holds 2):
            # np.zeros_like of it (analysis/types.py gives it idx's kind), every element stored
            made = norm.arrays.materialize(like, out, node)
            name = norm.fresh("_a")
            spelled = ast.parse(norm.ctx.env.spell(np.zeros_like, "alloc"), mode="eval").body
            norm.emit_assign(out, name, ast.Call(func=spelled, args=[made], keywords=[]))
            norm.arrays.store_elements(norm.arrays.view_of(name, out),
                                       norm.operand(args[1], out), out, node)
            return ir.name(name)
        shape = norm.calls.like_shape(args[0], out, node, like)
    else:
        shape_node = args[0]
        if isinstance(shape_node, ast.Attribute) and shape_node.attr == "shape":
            given = norm.shape_of(shape_node.value, out)
            shape = [norm.to_atom(out, given.item(k), "_n") for k in range(given.ndim)]
        else:
            elts = shape_node.elts if isinstance(shape_node, ast.Tuple) else [shape_node]
            shape = [norm.atom(e, out) for e in elts]
    name = norm.arrays.new_array(shape, out)
    made = out[-1]
    fill = norm.operand(args[1], out)
    filled = norm.arrays.as_lazy(fill)
    if not isinstance(filled, Scalar):
        raise norm.error(node, f"np.{what} with an array as its value (numba fills with a "
                         "number; adjit reads a list repeated, [v] * n, as np.full(n, v))",
                         "Fill with a number; for copies of an array, np.empty((n,) + "
                         "v.shape) and a loop storing v, or a tuple (v, v).")
    kind = norm.indexing.lazy_dtype(filled)
    if what == "full" and not dtype and kind in ("i", "b"):
        # numba's np.full(n, 3) is an int64 array, np.full(n, True) a boolean one (a guess
        # analysis/types.py makes a float array where the value stored is a float)
        made.value = norm.arrays.vcall(vec.empty_int if kind == "i" else vec.empty_bool,
                                       made.value.args)
        norm.arrays.note_array(name, len(shape), kind)
    norm.arrays.store_elements(norm.arrays.full_view(name, shape), fill, out, node)
    return ir.name(name)


@lowers("linspace", "arange", "eye")
def lower_spelled(norm, node, obj, out):
    """np.linspace, np.arange, np.eye / np.identity: kept as the call, its arguments
    atoms (their array rules: rules/table.py)."""
    args = node.args
    what = ARRAY_FUNCTIONS[obj]
    if what == "arange" and (len(args) == 4 or [k.arg for k in node.keywords] == ["dtype"]):
        return _arange_of_dtype(norm, node, obj, out)
    if node.keywords:
        raise norm.error(node, f"keyword arguments to np.{what}",
                         "Pass arguments by position.")
    if what == "eye" and len(args) == (2 if obj is np.identity else 4):
        # np.eye(n, m, k, dtype), np.identity(n, dtype): float64 is the default
        declared = norm.calls.declared_dtype(args[-1], node)
        if declared != np.float64:
            raise norm.error(node, f"np.{obj.__name__} with the dtype {declared}",
                             f"Leave the dtype out (float64), or convert the result: "
                             f"np.{obj.__name__}(...).astype(...).")
        args = args[:-1]
    spelled = ast.parse(norm.ctx.env.spell(obj, what), mode="eval").body
    return ast.Call(func=spelled, args=[norm.atom(a, out) for a in args], keywords=[])


def _arange_of_dtype(norm, node, obj, out):
    """np.arange(start, stop, step, dtype) (or dtype=...): of int64, the arange of integer
    bounds; of float64, the arange of a float start: numpy's elements either way."""
    args = node.args[:3]
    given = node.args[3] if len(node.args) == 4 else node.keywords[0].value
    if len(node.args) == 4 and node.keywords:
        raise norm.error(node, "np.arange with keyword arguments besides its dtype",
                         "Pass start, stop and step by position.")
    declared = norm.calls.declared_dtype(given, node)     # (numba takes no int or float)
    atoms = [norm.atom(a, out) for a in args]
    ints = [norm.integer_atom(a) for a in atoms]
    if declared == np.int64 and all(ints):
        pass                            # the arange of integers is int64 already
    elif declared == np.float64:
        if all(ints):                   # computed in float64 from the start on, as numpy
            start = atoms[0]
            atoms[0] = ast.Constant(value=float(start.value)) \
                if isinstance(start, ast.Constant) else norm.atom(ast.Call(
                    func=ast.Name(id="float", ctx=ast.Load()), args=[start], keywords=[]), out)
    else:
        what = "int64 of bounds that are not all integers" if declared == np.int64 else \
            f"the dtype {declared}"
        raise norm.error(node, f"np.arange with {what}",
                         "Use np.int64 of integer bounds or np.float64, and convert the "
                         "result (.astype(...)) where another dtype is wanted.")
    spelled = ast.parse(norm.ctx.env.spell(obj, "arange"), mode="eval").body
    return ast.Call(func=spelled, args=atoms, keywords=[])
