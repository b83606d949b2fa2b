"""Calls of numba `@stencil` kernels, as the loop nest numba's stencil machinery runs.

A stencil kernel indexes its array arguments relative to the element being computed
(`a[0, 1]` is the element one column to the right). Called on arrays, numba computes the
kernel at every element whose neighbourhood lies inside the first argument, and gives the
other elements (the border) `cval` (0 unless the decorator says):

    @stencil                                   out = np.empty(a.shape)
    def k(a):                                  for i0 in range(n0):
        return a[-1] + a[1] - 2.0 * a[0]           if 1 <= i0 < n0 - 1:
                                                       out[i0] = k'(a, i0)
    b = k(a)                                       else:
                                                       out[i0] = 0.0

where k' is the kernel with its relative indices made absolute (`a[i0 - 1]`), inlined like any
helper: the derivative is the derivative of those loops. The neighbourhood is the
decorator's `neighborhood=`, or the range of the kernel's constant relative indices;
`standard_indexing=` arguments are indexed as written; `out=` writes into the array given
(its border too only with `cval=`, as numba). Every relatively indexed array must have the
first argument's shape (checked when the gradient runs: numba reads past a smaller one).
Refused by name: relative indices that are not constants without a `neighborhood=`, a
relatively indexed array used other than by indexing it, writes to the kernel's arguments,
and kernels over integer arrays.
"""
import ast
import copy

import numpy as np

from .. import ir
from ..frontend.source import read_function
from ..runtime import vec
from .closures import made_helper
from .vectorize import View, array_valued


def stencil_kernel(obj):
    """The Python kernel and options of a numba StencilFunc, or None for anything else."""
    if type(obj).__name__ != "StencilFunc" or not hasattr(obj, "kernel_ir"):
        return None
    kernel = getattr(getattr(obj.kernel_ir, "func_id", None), "func", None)
    return (kernel, obj.mode, dict(obj.options)) if kernel is not None else None


def stencil_call(norm, node, stencil, out):
    """The call `node` of a stencil (stencil_kernel's triple) in the normalizer `norm`: the
    loop nest as a helper of the kernel's parameters (and `out`), inlined into `out`;
    returns the call's value (the output array)."""
    kernel, mode, options = stencil
    name = ast.unparse(node.func)
    if mode != "constant":      # (numba knows no other mode today)
        raise norm.error(node, f"the stencil `{name}` in mode {mode!r}",
                         "Use the default mode, 'constant'.")
    given = None
    for kw in node.keywords:
        if kw.arg != "out" or given is not None:
            raise norm.error(node, f"the keyword argument `{kw.arg}=` of the stencil `{name}`",
                             "Pass the kernel's arguments by position, and out= the array "
                             "to write into.")
        given = kw.value
    src = read_function(kernel)
    params = [a.arg for a in src.tree.args.posonlyargs + src.tree.args.args]
    if len(node.args) != len(params) or src.tree.args.kwonlyargs:
        raise norm.error(node, f"the stencil `{name}` called with {len(node.args)} "
                         "argument(s)", f"Pass its parameters by position: "
                         f"{', '.join(params)}.")
    loc = dict(lineno=node.lineno, col_offset=node.col_offset)
    # each argument evaluated once, here: the helper below receives names
    args = [a if isinstance(a, ast.Name) else norm.assign_new_local("_st", a, loc, out)
            for a in node.args + ([given] if given is not None else [])]
    values = [norm.operand(n, out) for n in args[:len(params)]]
    ndims = [len(v.shape) if array_valued(v) else None for v in values]
    if ndims[0] is None:
        raise norm.error(node, f"the stencil `{name}` with a first argument that is not an "
                         "array", "Pass the array the stencil runs over first (numba takes "
                         "the output's shape from it).")
    ndim = ndims[0]
    standard = set(options.get("standard_indexing", ()))
    relative = [p for p, d in zip(params, ndims) if d is not None and p not in standard]
    for p, v, d in zip(params, values, ndims):
        if p in relative:
            if d != ndim:
                raise norm.error(node, f"the stencil `{name}`'s argument `{p}` with {d} "
                                 f"dimension(s), the first with {ndim}",
                                 "Give relatively indexed arrays the first argument's "
                                 "dimensions (or name it in standard_indexing=).")
            if isinstance(v, View) and norm.ctx.arrays.get(v.base, (0, "f"))[1] in ("i", "b"):
                raise norm.error(node, f"the stencil `{name}` over the integer array `{p}`",
                                 "Pass float arrays (a.astype(np.float64)).")
    cval = options.get("cval", 0 if given is None else None)
    if cval is not None and (not isinstance(cval, (int, float)) or isinstance(cval, bool)):
        raise norm.error(node, f"the stencil `{name}`'s cval {cval!r}", "Use a number.")
    indices = [f"_si{j}" for j in range(ndim)]
    tree, reach = _absolute(norm, node, name, src, relative, indices, options)
    tree.args.kwonlyargs += [ast.arg(arg=i) for i in indices]
    tree.args.kw_defaults += [None] * ndim
    point = made_helper(kernel.__name__, tree, src.loc, kernel.__globals__, {}, fn=kernel)
    loops = _loop_helper(kernel, params, relative, ndim, reach, cval, given is not None)
    # the loops are the stencil's: read at its `def` line
    helper = made_helper(kernel.__name__, loops, src.loc, kernel.__globals__,
                         {"_snp": np, "_scheck": vec.check_stencil_shape, "_spoint": point},
                         line=src.tree.lineno)
    call = ast.Call(func=ast.Name(id=kernel.__name__, ctx=ast.Load(), **loc), args=args,
                    keywords=[], **loc)
    return norm.inline(call, helper, out)


def _loop_helper(kernel, params, relative, ndim, reach, cval, given):
    """The tree of the helper that runs the stencil: sizes from the first argument, the
    others checked against them, the output allocated (or `_sout`, given), and the loop nest
    computing the kernel (`_spoint`) inside the reach and `cval` on the border."""
    sizes = [f"_sn{j}" for j in range(ndim)]
    indices = [f"_si{j}" for j in range(ndim)]
    lines = [f"def {kernel.__name__}({', '.join(params + (['_sout'] if given else []))}):"]
    lines += [f"    {n} = {params[0]}.shape[{j}]" for j, n in enumerate(sizes)]
    lines += [f"    _scheck({n}, {p}.shape[{j}])" for p in relative[1:]
              for j, n in enumerate(sizes)]
    if not given:
        shape = sizes[0] if ndim == 1 else f"({', '.join(sizes)})"
        lines.append(f"    _sout = _snp.empty({shape})")
    pad = "    "
    for i, n in zip(indices, sizes):
        lines.append(f"{pad}for {i} in range({n}):")
        pad += "    "
    inside = [f"{i} >= {lo}" for i, (lo, _) in zip(indices, reach) if lo] + \
        [f"{i} < {n} - {hi}" for i, n, (_, hi) in zip(indices, sizes, reach) if hi]
    element = f"_sout[{', '.join(indices)}]"
    point = f"_spoint({', '.join(params)}, {', '.join(f'{i}={i}' for i in indices)})"
    if inside:
        lines.append(f"{pad}if {' and '.join(inside)}:")
        lines.append(f"{pad}    {element} = {point}")
        if cval is not None:
            lines.append(f"{pad}else:")
            lines.append(f"{pad}    {element} = {float(cval)!r}")
    else:
        lines.append(f"{pad}{element} = {point}")
    lines.append("    return _sout")
    return ast.parse("\n".join(lines) + "\n").body[0]


def _absolute(norm, node, name, src, relative, indices, options):
    """The kernel's tree with `a[d0, d1]` of every relatively indexed parameter made
    `a[i0 + d0, i1 + d1]` (i0, i1: `indices`), and the reach (lo, hi) per dimension: how far
    the kernel looks before and after the element."""
    ndim = len(indices)
    tree = copy.deepcopy(src.tree)
    tree.decorator_list = []
    for n in ir.walk(tree):
        written = n.value if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store) \
            else n
        if isinstance(written, ast.Name) and written.id in relative and \
                isinstance(n.ctx, ast.Store):
            raise src.loc.error(n, f"an assignment to the stencil `{name}`'s argument "
                                   f"`{written.id}`", "Compute into a local variable.")
    subs = [n for n in ir.walk(tree) if isinstance(n, ast.Subscript)
            and isinstance(n.value, ast.Name) and n.value.id in relative]
    indexed = {id(n.value) for n in subs}
    for n in ir.walk(tree):
        if isinstance(n, ast.Name) and n.id in relative and id(n) not in indexed:
            raise src.loc.error(n, f"the stencil `{name}`'s argument `{n.id}` used other "
                                   "than by a relative index", "Index it relative to the "
                                   "element (a[-1], a[0, 1]); pass shapes and other arrays "
                                   "by standard_indexing=.")
    lows, highs = [0] * ndim, [0] * ndim
    constant = True
    placed = []
    for n in subs:
        items = list(n.slice.elts) if isinstance(n.slice, ast.Tuple) else [n.slice]
        if len(items) != ndim or any(isinstance(e, ast.Slice) for e in items):
            raise src.loc.error(n, f"the relative index `{ast.unparse(n)}` in the stencil "
                                   f"`{name}`", f"Index all {ndim} dimension(s) with one "
                                   "offset each.")
        for j, e in enumerate(items):
            d = ir.constant_int(e)
            if d is None:
                constant = False
            else:
                lows[j], highs[j] = min(lows[j], d), max(highs[j], d)
        placed.append((n, items))
    given = options.get("neighborhood")
    if given is not None:
        if len(given) != ndim:
            raise norm.error(node, f"the stencil `{name}`'s neighborhood of {len(given)} "
                             f"dimension(s) for a {ndim}-dimensional array",
                             "Give one (low, high) pair per dimension.")
        reach = [(-min(0, int(lo)), max(0, int(hi))) for lo, hi in given]
    elif not constant:
        raise norm.error(node, f"the stencil `{name}` with a relative index that is not a "
                         "constant", "Give the decorator its reach: "
                         "@stencil(neighborhood=((-k, k),)).")
    else:
        reach = [(-lo, hi) for lo, hi in zip(lows, highs)]
    for n, items in placed:
        moved = [_shifted(i, e) for i, e in zip(indices, items)]
        n.slice = moved[0] if ndim == 1 else ast.Tuple(elts=moved, ctx=ast.Load())
    return tree, reach


def _shifted(index, e):
    """`index + e` (`index - 1` for -1, `index` for 0)."""
    base = ast.Name(id=index, ctx=ast.Load())
    d = ir.constant_int(e)
    if d == 0:
        return base
    if d is not None:
        return ast.BinOp(left=base, op=ast.Sub() if d < 0 else ast.Add(),
                         right=ast.Constant(abs(d)))
    return ast.BinOp(left=base, op=ast.Add(), right=e)


def _source_name(norm, atom, loc, out):
    """A source-level local holding the size `atom` (a normalized atom)."""
    name = norm.fresh("_sn")
    norm.src.locals.add(name)
    norm.emit_assign(out, norm.local(name), atom)
    return name
