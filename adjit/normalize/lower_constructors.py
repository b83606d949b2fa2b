"""Lowerings of the numpy functions that make arrays from values (np.array, np.full,
np.linspace, np.arange, np.eye).

Each is a function of the normalizer (`norm`), the call's node, the function object and
the statement list, registered for its registry entry's handler (normalize/lowering.py)."""
import ast

import numpy as np

from .. import ir
from ..rules.table import ARRAY_FUNCTIONS
from .lowering import lowers
from .vectorize import Lazy, Scalar


@lowers("array")
def lower_array(norm, node, obj, out):
    """np.array([a, b, c]) and np.asarray (of an array: the array itself)."""
    args = node.args
    if len(args) != 1 or any(kw.arg != "dtype" for kw in node.keywords):
        raise norm.error(node, "np.array with other than one list argument",
                         "Write np.array([a, b, c]).")
    if not node.keywords and not isinstance(args[0], (ast.List, ast.Tuple)):
        # of an array (a list comprehension is built as one): np.asarray is the array,
        # np.array a copy of it
        value = norm.operand(args[0], out)
        if isinstance(value, Lazy) and not isinstance(value, Scalar) or \
                isinstance(value, ast.Name) and norm.arrays.array_ndim(value) is not None:
            if obj is np.asarray:
                return value
            return norm.arrays.materialize(norm.arrays.lazy_operand(value, out), out, node)
        raise norm.error(node, f"`{ast.unparse(node.func)}` of something other than a list "
                         "or an array", "Write np.array([a, b, c]).")
    return norm.arrays.array_literal(args[0], out)


@lowers("full", "full_like")
def lower_full(norm, node, obj, out):
    """np.full(shape, value), np.full_like(a, value): a new array, every element
    stored."""
    args, what = node.args, obj.__name__
    if len(args) != 2 or node.keywords:
        raise norm.error(node, f"np.{what} with other than (shape, value)",
                         f"Write np.{what}(shape, value).")
    if what == "full_like":
        shape = norm.calls.like_shape(args[0], out, node)
    else:
        shape_node = args[0]
        if isinstance(shape_node, ast.Attribute) and shape_node.attr == "shape":
            given = norm.shape_of(shape_node.value, out)
            shape = [norm.to_atom(out, given.item(k), "_n") for k in range(given.ndim)]
        else:
            elts = shape_node.elts if isinstance(shape_node, ast.Tuple) else [shape_node]
            shape = [norm.atom(e, out) for e in elts]
    name = norm.arrays.new_array(shape, out)
    norm.arrays.store_elements(norm.arrays.full_view(name, shape), norm.operand(args[1], out), out,
                               node)
    return ir.name(name)


@lowers("linspace", "arange", "eye")
def lower_spelled(norm, node, obj, out):
    """np.linspace, np.arange, np.eye / np.identity: kept as the call, its arguments
    atoms (their array rules: rules/table.py)."""
    args = node.args
    what = ARRAY_FUNCTIONS[obj]
    if node.keywords:
        raise norm.error(node, f"keyword arguments to np.{what}",
                         "Pass arguments by position.")
    spelled = ast.parse(norm.ctx.env.spell(obj, what), mode="eval").body
    return ast.Call(func=spelled, args=[norm.atom(a, out) for a in args], keywords=[])
