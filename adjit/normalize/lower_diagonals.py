"""Lowerings of numpy's diagonals (np.diagonal, np.trace, np.diag, with offsets).

Each is a function of the normalizer (`norm`), the call's node, the function object and
the statement list, registered for its registry entry's handler (normalize/lowering.py)."""
import ast

from .. import ir
from .lowering import lowers
from .vectorize import Scalar


@lowers("diagonal")
def lower_diagonal(norm, node, obj, out):
    """np.diagonal(a) of a 2-D array: a view of the elements a[i, i] (the flat positions
    i * (m + 1) of an n x m array, read in C order)."""
    a = norm.indexing.call_arguments(node, ["a"], {}, out)
    return norm.indexing.diagonal_view(norm.indexing.array_operand(a["a"], out, "np.diagonal"),
                                       out, node)


@lowers("trace")
def lower_trace(norm, node, obj, out):
    """np.trace(a, offset=0): the sum of the offset-th diagonal."""
    a = norm.indexing.call_arguments(node, ["a", "offset"], {"offset": ir.const(0)}, out)
    k = _offset(norm, node, a["offset"], "offset")
    diag = norm.indexing.diagonal_view(norm.indexing.array_operand(a["a"], out, "np.trace"),
                                       out, node, k)
    return norm.arrays.reduce("sum", diag, None, out, node)


@lowers("diag")
def lower_diag(norm, node, obj, out):
    """np.diag(v, k=0): a 2-D array with v on its k-th diagonal (v 1-D), or a copy of the
    k-th diagonal of a 2-D v."""
    a = norm.indexing.call_arguments(node, ["v", "k"], {"k": ir.const(0)}, out)
    k = _offset(norm, node, a["k"], "k")
    v = norm.indexing.array_operand(a["v"], out, "np.diag")
    if len(v.shape) == 2:
        return norm.arrays.materialize(norm.indexing.diagonal_view(v, out, node, k), out, node,
                                       copy=True)
    if len(v.shape) != 1:
        raise norm.error(node, f"np.diag of a {len(v.shape)}-D array",
                         "Pass a 1-D array (to make a diagonal matrix) or a 2-D one.")
    n = norm.indexing._length(v.shape[0])
    if k:
        n = norm.to_atom(out, ast.BinOp(left=n, op=ast.Add(), right=ir.const(abs(k))), "_n")
    name = norm.arrays.new_array([n, n], out)
    norm.arrays.store_elements(norm.arrays.full_view(name, [n, n]), Scalar(ir.const(0.0)), out,
                               node)
    target = norm.indexing.diagonal_view(norm.arrays.view_of(name, out), out, node, k)
    norm.arrays.store_elements(target, v, out, node)
    return ir.name(name)


def _offset(norm, node, given, what):
    """The diagonal's offset: an integer constant."""
    k = ir.constant_int(given)
    if k is None:
        raise norm.error(node, f"`{ast.unparse(node.func)}` with `{what}` that is not an "
                         "integer constant", f"Write the offset: {what}=1, {what}=-1.")
    return k

