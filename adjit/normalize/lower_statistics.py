"""Lowerings of numpy's statistics, sorting and signal functions (var, std, ptp,
average, quantile, median, sort, the nan-reductions, cov, trapezoid, interp, convolve).

Each is a function of the normalizer (`norm`), the call's node, the function object and
the statement list, registered for its registry entry's handler (normalize/lowering.py)."""
import ast
import math

import numpy as np

from .. import ir
from ..runtime import vec
from .lowering import lowers
from .values import TupleValue, left_out
from .vectorize import UNLESS, Lazy, Scalar, View


@lowers("var", "std", "ptp")
def lower_spread(norm, node, obj, out):
    return norm.calls.spread(obj.__name__, node, node.args[0] if node.args else None,
                             node.args[1:], out)


@lowers("nan_to_num")
def lower_nan_to_num(norm, node, obj, out):
    """np.nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None) (numba's parameters):
    the one-argument function (infinities to the largest finite numbers), then each value
    given chosen where x is NaN, +inf or -inf, so that it carries its own derivative there."""
    a = norm.indexing.call_arguments(node, ["x", "copy", "nan", "posinf", "neginf"],
                                     {"copy": None, "nan": None, "posinf": None,
                                      "neginf": None}, out)
    if a["copy"] is not None and not (isinstance(a["copy"], ast.Constant) and
                                      a["copy"].value is True):
        raise norm.error(node, "np.nan_to_num with `copy=` other than True (it would write "
                         "the array in place)", "Leave copy out and assign the result: "
                         "x = np.nan_to_num(x, nan=...).")
    x = norm.operand(a["x"], out)
    result = norm.arrays.apply(("call", np.nan_to_num), [x], out, node)
    largest = float(np.finfo(np.float64).max)
    for name, test, bound in (("nan", ("call", math.isnan), None),
                              ("posinf", ("cmp", ast.Gt()), largest),
                              ("neginf", ("cmp", ast.Lt()), -largest)):
        given = a[name]
        if left_out(given):
            continue
        # an infinity: x beyond the largest float
        operands = [x] if bound is None else [x, ir.const(bound)]
        chosen = norm.arrays.apply(test, operands, out, node)
        value = norm.operand(given, out)
        result = norm.arrays.apply(("call", "where"), [chosen, value, result], out, node)
    return result


@lowers("average")
def lower_average(norm, node, obj, out):
    """np.average(a, weights=None) over all elements: the mean, or sum(a w) / sum(w)."""
    a = norm.indexing.call_arguments(node, ["a", "weights"], {"weights": None}, out)
    x = norm.indexing.array_operand(a["a"], out, "np.average")
    if left_out(a["weights"]):
        return norm.arrays.reduce("mean", x, None, out, node)
    w = norm.indexing.array_operand(a["weights"], out, "np.average")
    if not isinstance(w, View):
        w = norm.arrays.view_of(norm.arrays.materialize(w, out, node).id, out)
    top = norm.arrays.reduce("sum", norm.arrays.elementwise(("bin", ast.Mult()), [x, w], out, node),
                             None, out, node)
    bottom = norm.arrays.reduce("sum", w, None, out, node)
    return norm.to_atom(out, ast.BinOp(left=top, op=ast.Div(), right=bottom))


@lowers("quantile")
def lower_quantile(norm, node, obj, out):
    """np.quantile, np.percentile, their nan forms and np.nanmedian: an array of q kept
    whole; a number packed (vec.quantile1, its scale and whether it skips nans)."""
    args = node.args
    name = f"np.{obj.__name__}"
    wanted = 1 if obj is np.nanmedian else 2
    if node.keywords or len(args) != wanted:
        raise norm.error(node, f"{name} with other than ({'a' if wanted == 1 else 'a, q'})",
                         f"Write {name}({'a' if wanted == 1 else 'a, q'}) (numba takes "
                         "no other arguments).")
    args = _tuples_as_lists(norm, node, args, name, "q")
    atoms = [norm.calls.argument_atom(a, out) for a in args] + \
        ([ir.const(0.5)] if obj is np.nanmedian else [])
    if isinstance(atoms[1], ast.Name) and atoms[1].id in norm.ctx.arrays:
        return norm.calls.call_of(obj, atoms)
    scale = ir.const(0.01 if obj in (np.percentile, np.nanpercentile) else 1.0)
    skip = ir.const(obj in (np.nanpercentile, np.nanquantile, np.nanmedian))
    packed = norm.to_atom(out, norm.calls.call_of(vec.quantile1, atoms + [scale, skip]), "_p")
    return norm.calls.element(packed, 0, out)


def _tuples_as_lists(norm, node, args, name, what):
    """`args` with a tuple written out (`(0.3, 0.7)`) as the list numba reads alike (an
    array of the points); a name holding a tuple is refused."""
    args = list(args)
    for k, a in enumerate(args):
        if isinstance(a, ast.Tuple):
            args[k] = ast.copy_location(ast.List(elts=a.elts, ctx=ast.Load()), a)
        elif isinstance(a, ast.Name) and isinstance(norm.tuple_named(a.id), TupleValue):
            raise norm.error(node, f"{name} of a tuple held in `{a.id}`",
                             f"Pass the {what} as an array: np.array([...]) or a list "
                             "written out.")
    return args


@lowers("median")
def lower_median(norm, node, obj, out):
    """np.median(a) of all elements (numba's takes no axis): the mean of the elements at
    (n - 1) // 2 and n // 2 of the sorted flattened array (the same element when n is odd:
    (m + m) / 2 is m exactly)."""
    a = norm.indexing.call_arguments(node, ["a"], {}, out)
    v = norm.indexing.array_operand(a["a"], out, "np.median")
    if len(v.shape) != 1:
        v = norm.indexing.reshape_view(v, [ir.const(-1)], out, node)
    s = norm.arrays.materialize(norm.calls.sorted_view(node, v, out, "np.median"), out, node)
    n = norm.to_atom(out, ast.Subscript(value=ast.Attribute(value=s, attr="shape",
                                                            ctx=ast.Load()),
                                        slice=ir.const(0), ctx=ast.Load()), "_n")
    less = norm.to_atom(out, ast.BinOp(left=n, op=ast.Sub(), right=ir.const(1)), "_n")
    lo = norm.to_atom(out, ast.BinOp(left=less, op=ast.FloorDiv(), right=ir.const(2)), "_n")
    hi = norm.to_atom(out, ast.BinOp(left=n, op=ast.FloorDiv(), right=ir.const(2)), "_n")
    left = norm.to_atom(out, ast.Subscript(value=s, slice=lo, ctx=ast.Load()))
    right = norm.to_atom(out, ast.Subscript(value=s, slice=hi, ctx=ast.Load()))
    total = norm.to_atom(out, ast.BinOp(left=left, op=ast.Add(), right=right))
    return norm.to_atom(out, ast.BinOp(left=total, op=ast.Mult(), right=ir.const(0.5)))


@lowers("sort")
def lower_sort(norm, node, obj, out):
    """np.sort(a) of a 1-D array, or of each row of a 2-D array."""
    a = norm.indexing.call_arguments(node, ["a"], {}, out)
    return norm.calls.sorted_view(node, norm.indexing.array_operand(a["a"], out, "np.sort"),
                                  out, "np.sort")


@lowers("partition")
def lower_partition(norm, node, obj, out):
    """np.partition(a, kth) of a 1-D array: a gather of `a` through the positions of its
    elements in numba's partitioned result (vec.partition_order), so the value is numba's
    element for element and each element's adjoint goes back to where it came from,
    whatever order the implementation leaves around the k-th."""
    a = norm.indexing.call_arguments(node, ["a", "kth"], {}, out)
    v = norm.indexing.array_operand(a["a"], out, "np.partition")
    if len(v.shape) != 1:
        raise norm.error(node, f"np.partition of a {len(v.shape)}-D array",
                         "Partition each row in a loop (np.partition(M[i], k)), or sort "
                         "them (np.sort(M) sorts each row).")
    kth = a["kth"]
    if isinstance(kth, (ast.Tuple, ast.List)) and \
            all(isinstance(e, ast.Constant) for e in kth.elts):
        kth = ast.Tuple(elts=list(kth.elts), ctx=ast.Load())
    else:
        kth = norm.atom(kth, out)
    base = norm.arrays.materialize(v, out, node)
    order = norm.to_atom(out, norm.calls.call_of(vec.partition_order, [base, kth]), "_s")
    return norm.indexing.index_view(norm.arrays.view_of(base.id, out),
                                    [("array", order.id, 1)], out, node)


@lowers("nan_reduce")
def lower_nan_reduce(norm, node, obj, out):
    """np.nansum/nanprod/nanmean/nanmax/nanmin(a): the reduction of np.where(a != a,
    fill, a), as numba computes them over all elements; nanmean divides by the count of
    numbers, nanmax/nanmin are NaN when there is none."""
    name = obj.__name__
    if len(node.args) != 1 or node.keywords:
        raise norm.error(node, f"np.{name} with arguments other than the array",
                         f"numba compiles np.{name}(a) alone.")
    x = norm.operand(node.args[0], out)
    if not isinstance(x, Lazy) or isinstance(x, Scalar):
        raise norm.error(node, f"np.{name} of something that is not an array",
                         "Pass an array.")
    how, fill = {"nansum": ("sum", 0.0), "nanprod": ("prod", 1.0), "nanmean": ("sum", 0.0),
                 "nanvar": ("sum", 0.0), "nanstd": ("sum", 0.0), "nancumsum": ("", 0.0),
                 "nanmax": ("max", -math.inf), "nanmin": ("min", math.inf)}[name]
    # an expression's elements (np.nansum((pred - obs) ** 2)) are computed again where they
    # are numbers, and only there does a derivative flow to its operands (UNLESS): the
    # test's own computation of an element is an operand of a comparison alone. (An array
    # already made keeps the IEEE product: 0 * NaN in its operands' partials.)
    masked = name in ("nansum", "nanprod", "nanmean", "nanmax", "nanmin") and \
        not isinstance(x, View)
    if not isinstance(x, View) and not masked:
        x = norm.arrays.view_of(norm.arrays.materialize(x, out, node).id, out)
    is_nan = norm.arrays.elementwise(("cmp", ast.NotEq()), [x, x], out, node)
    if name == "nancumsum":     # the running sum of the flattened array, NaN as 0
        filled = norm.arrays.elementwise(("call", "where"), [is_nan, ir.const(0.0), x], out, node)
        if len(x.shape) > 1:
            whole = norm.arrays.materialize(filled, out, node)
            filled = norm.indexing.reshape_view(norm.arrays.view_of(whole.id, out), [ir.const(-1)],
                                                out, node)
        return norm.indexing.running_sum(filled, 0, out)
    total = norm.arrays.reduce(how, norm.arrays.elementwise(
        UNLESS if masked else ("call", "where"), [is_nan, ir.const(fill), x], out, node), None,
        out, node)
    if name in ("nansum", "nanprod"):
        return total
    ones = norm.arrays.elementwise(("call", "where"), [is_nan, ir.const(0.0), ir.const(1.0)],
                                   out, node)
    count = norm.arrays.reduce("sum", ones, None, out, node)
    if name == "nanmean":
        return norm.to_atom(out, ast.BinOp(left=total, op=ast.Div(), right=count))
    if name in ("nanvar", "nanstd"):    # the mean square deviation of the numbers
        mean = norm.to_atom(out, ast.BinOp(left=total, op=ast.Div(), right=count))
        centred = norm.arrays.elementwise(("bin", ast.Sub()), [x, mean], out, node)
        dev = norm.arrays.elementwise(("call", "where"), [is_nan, ir.const(0.0), centred], out,
                                      node)
        square = norm.arrays.elementwise(("bin", ast.Mult()), [dev, dev], out, node)
        var = norm.to_atom(out, ast.BinOp(left=norm.arrays.reduce("sum", square, None, out, node),
                                          op=ast.Div(), right=count))
        return var if name == "nanvar" else norm.arrays.scalar_op(("call", math.sqrt), [var], out)
    return norm.to_atom(out, norm.calls.call_of(vec.nan_if_none, [total, count]))

# statistics composed of reductions ------------------------------------------------------


@lowers("cov")
def lower_cov(norm, node, obj, out):
    """np.cov(m, y=None, rowvar=True, bias=False, ddof=None) and np.corrcoef(x, y=None,
    rowvar=True) (numba's parameters): the variables as the rows of one 2-D array (m.T where
    rowvar is False; y's rows after m's; a 1-D array one row), kept at array level
    (runtime/arrays.py has the adjoints and tangents); bias and ddof scale the covariance
    by (n - 1) / (n - ddof)."""
    name = f"np.{obj.__name__}"
    cov = obj is np.cov
    names = ["m", "y", "rowvar", "bias", "ddof"] if cov else ["x", "y", "rowvar"]
    a = norm.indexing.call_arguments(node, names, {n: None for n in names[1:]}, out)
    flags = {}
    for key, default in (("rowvar", True), ("bias", False), ("ddof", None)):
        given = a.get(key)
        if left_out(given):
            flags[key] = default
        elif isinstance(given, ast.Constant) and isinstance(given.value, (bool, int)):
            flags[key] = given.value
        else:
            raise norm.error(node, f"{name} with `{key}` that is not a constant",
                             "Write True or False (an int for ddof).")

    def rows(arg):
        v = arg if isinstance(arg, Lazy) else norm.indexing.array_operand(arg, out, name)
        if len(v.shape) == 1:
            return norm.indexing.reshape_view(v, [ir.const(1), ir.const(-1)], out, node)
        if len(v.shape) != 2:
            raise norm.error(node, f"{name} of a {len(v.shape)}-D array",
                             "Pass the variables as the rows of a 2-D array.")
        return v if flags["rowvar"] or len(v.shape) == 1 else \
            norm.arrays.transpose(v, out, node=node)
    first = a["m" if cov else "x"]
    y = a["y"]
    if not left_out(y):
        v = norm.arrays.concatenate(None, 0, out, node, pieces=[rows(first), rows(y)])
    else:
        atom = norm.calls.argument_atom(first, out)
        if isinstance(atom, ast.Name) and norm.ctx.arrays.get(atom.id, (0,))[0] == 2 and \
                flags["rowvar"] and not flags["bias"] and flags["ddof"] is None:
            return norm.calls.call_of(obj, [atom])      # np.cov(m) as it was written
        if not (isinstance(atom, ast.Name) and norm.ctx.arrays.get(atom.id, (0,))[0] == 2):
            # numba's of one 1-D array is a 0-d array, which adjit does not hold
            raise norm.error(node, f"{name} of something that is not a 2-D array",
                             "Pass the variables as the rows of a 2-D array, or two 1-D "
                             f"arrays ({name}(x, y)); one variable's variance is "
                             "np.var(x) * x.size / (x.size - 1).")
        v = rows(norm.arrays.view_of(atom.id, out))     # (evaluated once: atom holds it)
    whole = v if isinstance(v, ast.Name) else norm.arrays.materialize(v, out, node)
    result = norm.to_atom(out, norm.calls.call_of(obj, [whole]))
    ddof = flags["ddof"] if flags["ddof"] is not None else 0 if flags["bias"] else 1
    if not cov or ddof == 1:
        return result
    n = norm.calls.size_local(whole, 1, out)
    less = [norm.to_atom(out, ast.BinOp(left=ir.name(n), op=ast.Sub(), right=ir.const(k)))
            for k in (1, ddof)]
    factor = norm.to_atom(out, ast.BinOp(left=less[0], op=ast.Div(), right=less[1]))
    return norm.arrays.apply(("bin", ast.Mult()), [result, factor], out, node)


@lowers("trapezoid")
def lower_trapezoid(norm, node, obj, out):
    """np.trapezoid(y, x=None, dx=1.0) of 1-D arrays: sum((y[1:] + y[:-1]) * dx) / 2,
    with dx = x[1:] - x[:-1] when x is given."""
    a = norm.indexing.call_arguments(node, ["y", "x", "dx"], {"x": None, "dx": None}, out)
    y = norm.indexing.array_operand(a["y"], out, "np.trapezoid")
    if len(y.shape) != 1:
        raise norm.error(node, f"np.trapezoid of a {len(y.shape)}-D array",
                         "Integrate 1-D arrays (one call per row).")
    if not isinstance(y, View):
        y = norm.arrays.view_of(norm.arrays.materialize(y, out, node).id, out)

    def part(v, lo, hi):
        return norm.indexing.index_view(v, [("slice", ast.Slice(
            lower=None if lo is None else ast.Constant(lo),
            upper=None if hi is None else ast.Constant(hi), step=None))], out, node)
    pair = norm.arrays.elementwise(("bin", ast.Add()), [part(y, 1, None), part(y, None, -1)], out,
                                   node)
    if not left_out(a["x"]):
        if a["dx"] is not None:
            raise norm.error(node, "np.trapezoid with both x and dx", "Pass one of them.")
        x = norm.indexing.array_operand(a["x"], out, "np.trapezoid")
        if not isinstance(x, View):
            x = norm.arrays.view_of(norm.arrays.materialize(x, out, node).id, out)
        dx = norm.arrays.elementwise(("bin", ast.Sub()), [part(x, 1, None), part(x, None, -1)],
                                     out, node)
        total = norm.arrays.reduce("sum", norm.arrays.elementwise(("bin", ast.Mult()), [pair, dx],
                                                                  out, node), None, out, node)
    else:
        total = norm.arrays.reduce("sum", pair, None, out, node)
        if a["dx"] is not None:
            total = norm.to_atom(out, ast.BinOp(left=total, op=ast.Mult(),
                                                right=norm.atom(a["dx"], out)))
    return norm.to_atom(out, ast.BinOp(left=total, op=ast.Mult(), right=ir.const(0.5)))


@lowers("interp")
def lower_interp(norm, node, obj, out):
    """np.interp(x, xp, fp): an array of query points kept whole; a number packed."""
    args = node.args
    if node.keywords or len(args) != 3:
        raise norm.error(node, "np.interp with other than (x, xp, fp)",
                         "Write np.interp(x, xp, fp) (numba takes no left=, right=).")
    args = _tuples_as_lists(norm, node, args, "np.interp", "x")
    atoms = [norm.calls.argument_atom(a, out) for a in args]
    if isinstance(atoms[0], ast.Name) and atoms[0].id in norm.ctx.arrays:
        return norm.calls.call_of(obj, atoms)
    packed = norm.to_atom(out, norm.calls.call_of(vec.interp1, atoms), "_p")
    return norm.calls.element(packed, 0, out)


@lowers("convolve", "correlate")
def lower_convolve(norm, node, obj, out):
    """np.convolve(a, v, mode) and np.correlate(a, v, mode) of 1-D arrays: the full
    convolution (of a with v reversed, for a correlation) kept at array level, and for
    modes 'valid' and 'same' the part of it numba returns, a slice: with n the shorter
    length and m the longer, 'valid' starts at n - 1 and has m - n + 1 elements, 'same'
    starts at n - 1 - n // 2 and has m (numba's _np_correlate_core; one later for a
    correlation with the longer v and an even n, which numba computes reversed). A
    correlation in its default mode ('valid') is kept whole (its own rule)."""
    correlate = obj is np.correlate
    name = "np.correlate" if correlate else "np.convolve"
    a = norm.indexing.call_arguments(node, ["a", "v", "mode"],
                                     {"mode": ir.const("valid" if correlate else "full")}, out)
    mode = a["mode"]
    if not (isinstance(mode, ast.Constant) and mode.value in ("full", "valid", "same")):
        raise norm.error(node, f"{name} with the mode `{ast.unparse(mode)}`",
                         "Write the mode as a constant string: 'full', 'valid' or 'same'.")
    x, v = (norm.calls.argument_atom(a[k], out) for k in ("a", "v"))
    for atom in (x, v):
        if not (isinstance(atom, ast.Name) and norm.ctx.arrays.get(atom.id, (0,))[0] == 1):
            raise norm.error(node, f"{name} of something that is not a 1-D array",
                             "Pass two 1-D arrays (numba's np.convolve and np.correlate "
                             "take no others).")
    if correlate and mode.value == "valid":
        return norm.calls.call_of(np.correlate, [x, v])
    if correlate:       # a correlation is the convolution with v reversed
        step = ast.Slice(lower=None, upper=None, step=ir.const(-1))
        reversed_ = norm.indexing.index_view(norm.arrays.view_of(v.id, out), [("slice", step)],
                                             out, node)
        v = norm.arrays.materialize(reversed_, out, node)
    full = norm.to_atom(out, norm.calls.call_of(np.convolve, [x, v]))
    if mode.value == "full":
        return full
    la, lv = (ir.name(norm.local(norm.calls.size_local(t, 0, out))) for t in (x, v))

    def op(left, kind, right):
        return norm.to_atom(out, ast.BinOp(left=left, op=kind(), right=right))
    n = norm.to_atom(out, norm.calls.call_of(min, [la, lv]))
    m = norm.to_atom(out, norm.calls.call_of(max, [la, lv]))
    start = op(n, ast.Sub, ir.const(1))
    if mode.value == "valid":
        stop = op(op(start, ast.Add, m), ast.Sub, op(n, ast.Sub, ir.const(1)))
    else:
        start = op(start, ast.Sub, op(n, ast.FloorDiv, ir.const(2)))
        if correlate:   # numba reverses a correlation with a longer v: even n shifts by 1
            excess = norm.to_atom(out, norm.calls.call_of(max, [op(lv, ast.Sub, la), ir.const(0)]))
            longer = norm.to_atom(out, norm.calls.call_of(min, [excess, ir.const(1)]))
            even = op(ir.const(1), ast.Sub, op(n, ast.Mod, ir.const(2)))
            start = op(start, ast.Add, op(longer, ast.Mult, even))
        stop = op(start, ast.Add, m)
    bounds = []
    for value in (start, stop):     # locals of the user's function: the slice reads them
        name = norm.fresh_local("_s")
        norm.emit_assign(out, norm.local(name), value)
        norm.ctx.ints.add(norm.local(name))
        bounds.append(ir.name(name))
    part = ast.Slice(lower=bounds[0], upper=bounds[1], step=None)
    return norm.indexing.index_view(norm.arrays.view_of(full.id, out), [("slice", part)], out, node)
