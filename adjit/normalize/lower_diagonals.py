"""Lowerings of numpy's diagonals (np.diagonal, np.trace, np.diag).

Each is a function of the normalizer (`norm`), the call's node, the function object and
the statement list, registered for its registry entry's handler (normalize/lowering.py)."""
from .. import ir
from .lowering import lowers
from .vectorize import Scalar


@lowers("diagonal")
def lower_diagonal(norm, node, obj, out):
    """np.diagonal(a) of a 2-D array: a view of the elements a[i, i] (the flat positions
    i * (m + 1) of an n x m array, read in C order)."""
    a = norm.call_arguments(node, ["a"], {}, out)
    return norm.diagonal_view(norm.array_operand(a["a"], out, "np.diagonal"), out, node)


@lowers("trace")
def lower_trace(norm, node, obj, out):
    """np.trace(a): the sum of the diagonal."""
    a = norm.call_arguments(node, ["a"], {}, out)
    diag = norm.diagonal_view(norm.array_operand(a["a"], out, "np.trace"), out, node)
    return norm.reduce("sum", diag, None, out, node)


@lowers("diag")
def lower_diag(norm, node, obj, out):
    """np.diag(v): a 2-D array with v on its diagonal (v 1-D), or a copy of the diagonal
    of a 2-D v."""
    a = norm.call_arguments(node, ["v"], {}, out)
    v = norm.array_operand(a["v"], out, "np.diag")
    if len(v.shape) == 2:
        return norm.materialize(norm.diagonal_view(v, out, node), out, node, copy=True)
    if len(v.shape) != 1:
        raise norm.error(node, f"np.diag of a {len(v.shape)}-D array",
                         "Pass a 1-D array (to make a diagonal matrix) or a 2-D one.")
    n = norm._length(v.shape[0])
    name = norm.new_array([n, n], out)
    norm.store_elements(norm.full_view(name, [n, n]), Scalar(ir.const(0.0)), out, node)
    target = norm.diagonal_view(norm.view_of(name, out), out, node)
    norm.store_elements(target, v, out, node)
    return ir.name(name)

# dtypes --------------------------------------------------------------------
