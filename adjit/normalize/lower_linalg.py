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
from .vectorize import Lazy, array_valued


@lowers("dot", "matmul")
def lower_matmul(norm, node, obj, out):
    """np.dot(a, b), np.matmul(a, b): matrix products (normalize/vectorize.py)."""
    args = node.args
    return norm.arrays.matmul(norm.operand(args[0], out), norm.operand(args[1], out), out, node)


@lowers("outer")
def lower_outer(norm, node, obj, out):
    args = node.args
    return norm.arrays.outer(args[0] and norm.operand(args[0], out),
                             norm.operand(args[1], out), out, node)


@lowers("norm")
def lower_norm(norm, node, obj, out):
    """np.linalg.norm(x, ord=None): the 2-norm as sqrt(sum(x * x)); other orders and
    matrix norms by norm_of_order."""
    args = node.args
    ord_ = args[1] if len(args) >= 2 else None
    axis = args[2] if len(args) == 3 else None
    for kw in node.keywords:
        if kw.arg not in ("ord", "axis") or (ord_ if kw.arg == "ord" else axis) is not None:
            raise norm.error(node, f"np.linalg.norm with `{kw.arg}=`",
                             "Write np.linalg.norm(x), np.linalg.norm(x, ord) or "
                             "np.linalg.norm(x, ord, axis=k).")
        if kw.arg == "ord":
            ord_ = kw.value
        else:
            axis = kw.value
    if len(args) not in (1, 2, 3):
        raise norm.error(node, "np.linalg.norm with other than (x, ord, axis)",
                         "Write np.linalg.norm(x) or np.linalg.norm(x, ord).")
    x = norm.operand(args[0], out)
    if axis is not None:
        return _norm_along(norm, node, x, ord_, axis, out)
    if ord_ is not None:
        o = norm.calls.constant_number(ord_)
        if o is None:
            raise norm.error(node, "np.linalg.norm with an `ord` that is not a "
                             "number constant", "Write the number (1, 2, np.inf, ...).")
        if o != 2 or (isinstance(x, Lazy) and len(x.shape) == 2):
            return norm.calls.norm_of_order(x, o, out, node)
    sq = norm.arrays.elementwise(("call", "square"), [x], out, node)
    total = norm.arrays.reduce("sum", sq, None, out, node) if sq is not None else \
        norm.to_atom(out, ast.BinOp(left=x, op=ast.Mult(), right=x))
    return norm.arrays.scalar_op(("call", vec.norm_root), [total], out)


def _norm_along(norm, node, x, ord_, axis, out):
    """np.linalg.norm(x, ord, axis=k) (numpy's, which numba does not compile): the vector
    norm of each slice along axis k of a 2-D array, as the reductions it is."""
    k = ir.constant_int(axis)
    ndim = len(x.shape) if array_valued(x) else 0
    if k is None or ndim != 2 or k not in (0, 1, -1, -2):
        raise norm.error(node, "np.linalg.norm with `axis=` other than a constant axis of "
                         "a 2-D array", "Write np.linalg.norm(A, axis=0) or axis=1 of a matrix.")
    k %= 2
    o = 2 if ord_ is None else norm.calls.constant_number(ord_)
    if o not in (1, 2, math.inf, -math.inf):
        raise norm.error(node, f"np.linalg.norm along an axis of order {o!r}",
                         "adjit takes the orders 1, 2 (the default), inf and -inf along an "
                         "axis.")

    def as_lazy(v):
        return norm.arrays.view_of(v.id, out) if isinstance(v, ast.Name) else v
    if o == 2:
        squares = norm.arrays.elementwise(("call", "square"), [x], out, node)
        total = as_lazy(norm.arrays.reduce("sum", squares, k, out, node))
        return norm.arrays.elementwise(("call", vec.norm_root), [total], out, node)
    a = norm.arrays.elementwise(("call", abs), [x], out, node)
    how = "sum" if o == 1 else "max" if o > 0 else "min"
    return norm.arrays.reduce(how, a, k, out, node)


@lowers("vdot")
def lower_vdot(norm, node, obj, out):
    """np.vdot(a, b): the sum of the products of the flattened arrays, of one length
    (numba's ValueError otherwise: they do not broadcast)."""
    a = norm.indexing.call_arguments(node, ["a", "b"], {}, out)
    x, y = (norm.indexing.reshape_view(norm.indexing.array_operand(a[k], out, "np.vdot"),
                                       [ir.const(-1)], out, node) for k in ("a", "b"))
    return norm.arrays.matmul(x, y, out, node)


@lowers("lstsq")
def lower_lstsq(norm, node, obj, out):
    """np.linalg.lstsq(a, b): (x, residuals, rank, singular values). x is differentiated
    (vec.lstsq_x, pinv(a) b where a has full rank); the rest are calls with no rule, refused
    where a derivative would flow through them."""
    if len(node.args) != 2 or node.keywords:
        raise norm.error(node, "np.linalg.lstsq with other than (a, b)",
                         "Write np.linalg.lstsq(a, b) (numba's rcond).")
    # each argument evaluated once (it may draw): both calls read the same atoms
    arguments = [norm.calls.opaque_argument(a, out) for a in node.args]
    rest = norm.calls.opaque_call(node, np.linalg.lstsq, out, arguments)
    x = norm.calls.call_of(vec.lstsq_x, [atom for atom, _ in arguments])
    return TupleValue([norm.to_atom(out, x)] + rest.items[1:])


@lowers("cond")
def lower_cond(norm, node, obj, out):
    """np.linalg.cond(a) (numba: the 2-norm condition number, no p): the largest singular
    value over the smallest."""
    a = norm.indexing.call_arguments(node, ["x"], {}, out)
    x = norm.indexing.array_operand(a["x"], out, "np.linalg.cond")
    if len(x.shape) != 2:
        raise norm.error(node, f"np.linalg.cond of a {len(x.shape)}-D array",
                         "Pass a 2-D array.")
    s = norm.calls.singular_values(x, out, node)
    top = norm.arrays.reduce("max", s, None, out, node)
    bottom = norm.arrays.reduce("min", s, None, out, node)
    return norm.to_atom(out, ast.BinOp(left=top, op=ast.Div(), right=bottom))
