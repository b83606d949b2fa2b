"""Lowerings of numpy's products and norms (dot, @, outer, vdot, norm, lstsq, cond).

Each is a function of the normalizer (`norm`), the call's node, the function object and
the statement list, registered for its registry entry's handler (normalize/lowering.py)."""
import ast
import math

import numpy as np

from .. import ir
from ..runtime import vec
from .values import TupleValue
from .lowering import lowers
from .vectorize import Lazy


@lowers("dot", "matmul")
def lower_matmul(norm, node, obj, out):
    """np.dot(a, b), np.matmul(a, b): matrix products (normalize/vectorize.py)."""
    args = node.args
    return norm.matmul(norm.operand(args[0], out), norm.operand(args[1], out), out, node)


@lowers("outer")
def lower_outer(norm, node, obj, out):
    args = node.args
    return norm.outer(args[0] and norm.operand(args[0], out),
                      norm.operand(args[1], out), out, node)


@lowers("norm")
def lower_norm(norm, node, obj, out):
    """np.linalg.norm(x, ord=None): the 2-norm as sqrt(sum(x * x)); other orders and
    matrix norms by norm_of_order."""
    args = node.args
    ord_ = args[1] if len(args) == 2 else None
    for kw in node.keywords:
        if kw.arg != "ord" or ord_ is not None:
            raise norm.error(node, f"np.linalg.norm with `{kw.arg}=`",
                             "numba takes np.linalg.norm(x) and np.linalg.norm(x, ord) "
                             "only: no axis.")
        ord_ = kw.value
    if len(args) not in (1, 2):
        raise norm.error(node, "np.linalg.norm with other than (x, ord)",
                         "Write np.linalg.norm(x) or np.linalg.norm(x, ord).")
    x = norm.operand(args[0], out)
    if ord_ is not None:
        o = norm.constant_number(ord_)
        if o is None:
            raise norm.error(node, "np.linalg.norm with an `ord` that is not a "
                             "number constant", "Write the number (1, 2, np.inf, ...).")
        if o != 2 or (isinstance(x, Lazy) and len(x.shape) == 2):
            return norm.norm_of_order(x, o, out, node)
    sq = norm.elementwise(("call", "square"), [x], out, node)
    total = norm.reduce("sum", sq, None, out, node) if sq is not None else \
        norm.to_atom(out, ast.BinOp(left=x, op=ast.Mult(), right=x))
    return norm.scalar_op(("call", math.sqrt), [total], out)


@lowers("vdot")
def lower_vdot(norm, node, obj, out):
    """np.vdot(a, b): the sum of the products of the flattened arrays."""
    a = norm.call_arguments(node, ["a", "b"], {}, out)
    x, y = (norm.reshape_view(norm.array_operand(a[k], out, "np.vdot"), [ir.const(-1)],
                              out, node) for k in ("a", "b"))
    return norm.reduce("sum", norm.elementwise(("bin", ast.Mult()), [x, y], out, node),
                       None, out, node)


@lowers("lstsq")
def lower_lstsq(norm, node, obj, out):
    """np.linalg.lstsq(a, b): (x, residuals, rank, singular values). x is differentiated
    (vec.lstsq_x, pinv(a) b where a has full rank); the rest are calls with no rule, refused
    where a derivative would flow through them."""
    if len(node.args) != 2 or node.keywords:
        raise norm.error(node, "np.linalg.lstsq with other than (a, b)",
                         "Write np.linalg.lstsq(a, b) (numba's rcond).")
    rest = norm.opaque_call(node, np.linalg.lstsq, out)
    x = norm.call_of(vec.lstsq_x, [norm.argument_atom(a, out) for a in node.args])
    return TupleValue([norm.to_atom(out, x)] + rest.items[1:])


@lowers("cond")
def lower_cond(norm, node, obj, out):
    """np.linalg.cond(a) (numba: the 2-norm condition number, no p): the largest singular
    value over the smallest."""
    a = norm.call_arguments(node, ["x"], {}, out)
    x = norm.array_operand(a["x"], out, "np.linalg.cond")
    if len(x.shape) != 2:
        raise norm.error(node, f"np.linalg.cond of a {len(x.shape)}-D array",
                         "Pass a 2-D array.")
    s = norm.singular_values(x, out, node)
    top = norm.reduce("max", s, None, out, node)
    bottom = norm.reduce("min", s, None, out, node)
    return norm.to_atom(out, ast.BinOp(left=top, op=ast.Div(), right=bottom))
