"""Lowerings of numpy's running sums and differences (np.cumsum, np.diff, np.ediff1d).

Each is a function of the normalizer (`norm`), the call's node, the function object and
the statement list, registered for its registry entry's handler (normalize/lowering.py)."""
import ast

from .. import ir
from .lowering import lowers
from .values import left_out
from .vectorize import Lazy, Op, Scalar, View


@lowers("cumsum")
def lower_cumsum(norm, node, obj, out):
    """np.cumsum(x, axis=None): a running sum along the axis (of the flattened array
    without one); its adjoint is the mirrored loop, a reversed running sum."""
    a = norm.indexing.call_arguments(node, ["a", "axis"], {"axis": None}, out)
    v = norm.indexing.array_operand(a["a"], out, "np.cumsum")
    axis = norm.calls.axes_argument(a["axis"], node, len(v.shape))
    if axis is None:
        v, axis = norm.indexing.reshape_view(v, [ir.const(-1)], out, node), 0
    return norm.indexing.running_sum(v, axis, out)


@lowers("ediff1d")
def lower_ediff1d(norm, node, obj, out):
    """np.ediff1d(ary, to_end=None, to_begin=None): the differences of the flattened array,
    x[1:] - x[:-1], after the flattened to_begin and before the flattened to_end (a number
    is one element)."""
    a = norm.indexing.call_arguments(node, ["ary", "to_end", "to_begin"],
                                     {"to_end": None, "to_begin": None}, out)
    v = norm.indexing.reshape_view(norm.indexing.array_operand(a["ary"], out, "np.ediff1d"),
                                   [ir.const(-1)], out, node)
    later, earlier = (norm.indexing.index_view(v, [("slice", ast.Slice(
        lower=lo, upper=hi, step=None))], out, node) for lo, hi in (
            (ir.const(1), None), (None, ir.const(-1))))
    diffs = norm.arrays.elementwise(("bin", ast.Sub()), [later, earlier], out, node)
    ends = {}
    written = [None, "to_end", "to_begin"][:len(node.args)] + [k.arg for k in node.keywords]
    for key in sorted(("to_end", "to_begin"), key=lambda k: written.index(k) if k in written
                      else 3):       # evaluated in the order the call writes them
        given = a[key]
        if left_out(given):
            continue
        value = norm.operand(given, out)
        if isinstance(value, Lazy) and not isinstance(value, Scalar):
            ends[key] = norm.indexing.reshape_view(value, [ir.const(-1)], out, node)
        else:           # a number: one element
            name = norm.arrays.new_array([ir.const(1)], out)
            one = norm.arrays.full_view(name, [ir.const(1)])
            norm.arrays.store_elements(one, Scalar(norm.to_atom(out, value)), out, node)
            ends[key] = norm.arrays.view_of(name, out)
    if not ends:
        return diffs
    pieces = [p for p in (ends.get("to_begin"), diffs, ends.get("to_end")) if p is not None]
    return norm.arrays.concatenate(None, 0, out, node, pieces=pieces)


@lowers("diff")
def lower_diff(norm, node, obj, out):
    """np.diff(x, n=1, axis=-1): x[..., 1:] - x[..., :-1], n times (views: no copy)."""
    a = norm.indexing.call_arguments(node, ["a", "n", "axis"], {"n": ir.const(1),
                                                                "axis": ir.const(-1)}, out)
    v = norm.indexing.array_operand(a["a"], out, "np.diff")
    n = a["n"]
    if not (isinstance(n, ast.Constant) and isinstance(n.value, int) and n.value >= 0):
        raise norm.error(node, "np.diff with an order that is not a constant",
                         "Write the order as a number: np.diff(x, 2).")
    axis = norm.calls.axes_argument(a["axis"], node, len(v.shape))
    full = ("slice", ast.Slice(lower=None, upper=None, step=None))
    for _ in range(n.value):
        if not isinstance(v, View):
            v = norm.arrays.view_of(norm.arrays.materialize(v, out, node).id, out)
        hi = [full] * axis + [("slice", ast.Slice(lower=ir.const(1), upper=None,
                                                  step=None))]
        lo = [full] * axis + [("slice", ast.Slice(lower=None, upper=ir.const(-1),
                                                  step=None))]
        left = norm.indexing.index_view(v, hi, out, node)
        right = norm.indexing.index_view(v, lo, out, node)
        v = Op(("bin", ast.Sub()), [left, right], norm.arrays.broadcast([left.shape, right.shape],
                                                                        out, node))
    return v
