"""Calls of numba `@guvectorize` gufuncs, as the loops numpy's gufunc machinery runs.

A gufunc with layout `(n),()->(n)` and kernel `k(a, w, out)` called on arrays with more
dimensions than its core ones loops over the extra leading (loop) dimensions and calls the
kernel on each core slice:

    out = np.empty(loop shape + output core shape)      # unless the call passes `out`
    for i0 in range(n0): ...
        k(a[i0, ...], w, out[i0, ...])

(a core `()` output is a 1-element slice, `out[i0:i0 + 1]`, as numba gives the kernel; a
core `()` input is an element, or a 1-element slice where the kernel's declared type is an
array). The kernel is the user's Python function, inlined like any helper; its derivative
is the derivative of those loops. Arguments with all loop dimensions must agree in them
and in the sizes of shared core names (checked when the gradient runs, as numba checks);
an argument with no loop dimensions is used whole by every iteration. `axis=-1` and
`axes=` naming the last dimensions (what numbagg passes) change nothing. Arguments with some
but not all of the loop dimensions, several outputs, other axes and other keywords are
refused by name.
"""
import ast

from .. import ir
from ..runtime import vec
from .values import FunctionValue
from .vectorize import array_valued


def gufunc_call(norm, node, gu, out):
    """The call `node` of the gufunc `gu` (frontend/source.py GUFuncKernel) in the
    normalizer `norm`: its loops emitted into `out`; returns the call's value."""
    name = ast.unparse(node.func)
    nin, nout = len(gu.inputs), len(gu.outputs)
    args = list(node.args)
    for kw in node.keywords:
        if kw.arg in ("axis", "axes"):
            if not _default_axes(kw, gu):
                raise norm.error(node, f"`{kw.arg}={ast.unparse(kw.value)}` in a call of the "
                                 f"gufunc `{name}` (a core dimension other than the last)",
                                 "Move the axis first: np.moveaxis(a, axis, -1), and the "
                                 "result's back.")
            continue
        if kw.arg != "out" or len(args) != nin:
            raise norm.error(node, f"the keyword argument `{kw.arg}=` of the gufunc `{name}`",
                             f"Pass its {nin} input(s), then its output array if any.")
        args.append(kw.value)
    if nout != 1:
        raise norm.error(node, f"the gufunc `{name}` with {nout} outputs",
                         "Write the kernel's loop in the function (or a helper) instead.")
    if len(args) not in (nin, nin + nout):
        raise norm.error(node, f"the gufunc `{name}` called with {len(args)} argument(s)",
                         f"It takes {nin} input(s), then optionally its output array.")
    if len(args) == nin and gu.dynamic:
        raise norm.error(node, f"the lazy gufunc `{name}` called without its output",
                         f"numba requires it: {name}(..., out) (or give @guvectorize a "
                         "type signature).")
    loc = dict(lineno=node.lineno, col_offset=node.col_offset)
    names = [a if isinstance(a, ast.Name) else norm.assign_new_local("_gu", a, loc, out)
             for a in args[:nin]]
    values = [norm.operand(n, out) for n in names]
    dims = [len(v.shape) if array_valued(v) else 0 for v in values]
    # a number for a core () input the kernel declares as an array (`intp[:]`, read as
    # w[0]): numba gives the kernel a 1-element array of it, used whole by every iteration
    boxed = set()
    for k, core in enumerate(gu.inputs):
        if not dims[k] and not core and gu.scalar[k] is False:
            names[k] = norm.assign_new_local("_gu", ast.Call(
                func=ast.Attribute(value=ast.Name(id="np", ctx=ast.Load(), **loc),
                                   attr="array", ctx=ast.Load(), **loc),
                args=[ast.List(elts=[names[k]], ctx=ast.Load(), **loc)], keywords=[], **loc),
                loc, out)
            boxed.add(k)
    loops = []
    for k, (d, core) in enumerate(zip(dims, gu.inputs)):
        if d < len(core):
            raise norm.error(node, f"argument {k + 1} of the gufunc `{name}` with {d} "
                             f"dimension(s), under its core dimensions ({', '.join(core)})",
                             f"Pass an array of at least {len(core)} dimension(s).")
        loops.append(d - len(core))
    depth = max(loops, default=0)
    # the sizes of the values the names hold (a name may stand for part of another array)
    shapes = {k: [_size(norm, values[k], n, j, out) for j in range(dims[k])]
              for k, n in enumerate(names) if dims[k]}
    # the loop sizes: numpy's broadcasting of the arguments' loop dimensions, aligned on the
    # right (an argument with fewer has them as the call's last ones; a dimension of size 1
    # is stretched; sizes that differ otherwise raise ValueError when the gradient runs, as
    # numba does); a core name's size from the first argument that has it
    sizes, core_sizes = [None] * depth, {}
    for k, n in enumerate(loops):
        for j in range(n):
            size, given = sizes[depth - n + j], shapes[k][j]
            sizes[depth - n + j] = given if size is None else norm.to_atom(
                out, norm.calls.call_of(vec.bcast, [size, given]))
    # each argument's loop indices: the call's, times 0 where its dimension is stretched
    flags = {}
    for k, n in enumerate(loops):
        for j in range(n):
            if shapes[k][j] is not sizes[depth - n + j]:
                flags[k, j] = _source_name(norm, norm.to_atom(out, norm.calls.call_of(
                    vec.stride, [shapes[k][j], sizes[depth - n + j]])), loc, out)
    for k, core in enumerate(gu.inputs):
        for j, dim in enumerate(core):
            size = shapes[k][loops[k] + j]
            if dim in core_sizes:
                _check_same(norm, core_sizes[dim], size, name, out)
            else:
                core_sizes[dim] = size
    out_core = gu.outputs[0]
    kernel = norm.fresh("_gk")
    norm.src.locals.add(kernel)
    norm.held[norm.local(kernel)] = FunctionValue(gu.kernel, name)
    if len(args) == nin:
        missing = [d for d in out_core if d not in core_sizes]
        if missing:
            raise norm.error(node, f"the gufunc `{name}`'s output dimension `{missing[0]}`, "
                             "which no input has", "Pass the output array.")
        result = norm.fresh("_gu")
        norm.src.locals.add(result)
        shape = sizes + [core_sizes[d] for d in out_core]
        norm.arrays.allocate(norm.local(result), shape or [ir.const(1)], out)
        result = ast.Name(id=result, ctx=ast.Load())
    else:
        result = args[nin]
        if not isinstance(result, ast.Name):
            raise norm.error(node, f"the output of the gufunc `{name}` given as an expression",
                             "Pass the output array by its name.")
        given = norm.arrays.array_ndim(ir.name(norm.array_name(result)))
        if given != depth + len(out_core):
            # numpy's rule: the output has every loop dimension; numba is lenient where a
            # 1-element array stands for a core () input, and adjit does not guess
            raise norm.error(node, f"the output of the gufunc `{name}` with {given} "
                             f"dimension(s), where its loop and core dimensions make "
                             f"{depth + len(out_core)}",
                             "Pass an output with the loop dimensions of the inputs (a "
                             "number, not a 1-element array, for a core () input).")
    indices = [norm.fresh("_gi") for _ in range(depth)]
    norm.src.locals.update(indices)
    def at(k):
        """Argument k's loop indices (names, or index * stride flag)."""
        own = indices[depth - loops[k]:]
        return [ast.BinOp(left=ast.Name(id=i, ctx=ast.Load(), **loc), op=ast.Mult(),
                          right=ast.Name(id=flags[k, j], ctx=ast.Load(), **loc), **loc)
                if (k, j) in flags else i for j, i in enumerate(own)]
    call_args = [_slice(n, at(k) if loops[k] else [],
                        not core and gu.scalar[k] is False and k not in boxed, loc)
                 for k, (n, core) in enumerate(zip(names, gu.inputs))]
    # a core () output is a 1-element array in the kernel
    target = _slice(result, indices, not out_core, loc) if depth or out_core else result
    call = ast.Expr(value=ast.Call(func=ast.Name(id=kernel, ctx=ast.Load(), **loc),
                                   args=call_args + [target], keywords=[], **loc), **loc)
    body = [call]
    for k, n in reversed(list(zip(indices, sizes))):
        size = ast.Name(id=_source_name(norm, n, loc, out), ctx=ast.Load(), **loc)
        body = [ast.For(target=ast.Name(id=k, ctx=ast.Store(), **loc),
                        iter=ast.Call(func=ast.Name(id="range", ctx=ast.Load(), **loc),
                                      args=[size], keywords=[], **loc),
                        body=body, orelse=[], **loc)]
    norm.stmt(ast.fix_missing_locations(body[0]), out)
    if not depth and not out_core and len(args) == nin:
        return norm.rhs(ast.Subscript(value=result, slice=ast.Constant(0), ctx=ast.Load(),
                                      **loc), out)     # numba returns the number
    return norm.rhs(result, out)


def _size(norm, value, name, j, out):
    """The size of dimension j of the array `value` that `name` holds, as an atom."""
    size = value.shape[j] if array_valued(value) else None
    if size is None:
        return norm.arrays.shape_atom(norm.array_name(name), j, out)
    return size


def _default_axes(kw, gu):
    """Whether `axis=` / `axes=` names each operand's last dimensions as its core ones (what
    a gufunc does without them): axis=-1 where every core has at most one dimension; axes=
    with (-k, ..., -1) (or -1) for k core dimensions and () for none."""
    cores = gu.inputs + gu.outputs

    if kw.arg == "axis":
        return ir.constant_int(kw.value) == -1 and all(len(c) <= 1 for c in cores)
    v = kw.value
    if not isinstance(v, (ast.List, ast.Tuple)) or len(v.elts) not in (len(cores),
                                                                       len(gu.inputs)):
        return False
    for e, core in zip(v.elts, cores):
        items = e.elts if isinstance(e, ast.Tuple) else [e]
        if [ir.constant_int(i) for i in items] != list(range(-len(core), 0)):
            return False
    return True


def _slice(name, indices, one_element, loc):
    """`name[i0, ..]` (the core slice at these loop indices), or with the last index a
    1-element slice (`name[i0:i0 + 1]`, `name[0:1]` with no loop indices)."""
    if not indices and not one_element:
        return ast.Name(id=name.id, ctx=ast.Load(), **loc)
    items = [ast.Name(id=i, ctx=ast.Load(), **loc) if isinstance(i, str) else i
             for i in indices]
    if one_element:
        last = items.pop() if items else ast.Constant(0)
        items.append(ast.Slice(lower=last, upper=ast.BinOp(
            left=last, op=ast.Add(), right=ast.Constant(1)), step=None))
    index = items[0] if len(items) == 1 else ast.Tuple(elts=items, ctx=ast.Load())
    return ast.Subscript(value=ast.Name(id=name.id, ctx=ast.Load(), **loc), slice=index,
                         ctx=ast.Load(), **loc)


def _source_name(norm, atom, loc, out):
    """A source-level local holding the size `atom` (a normalized atom)."""
    name = norm.fresh("_gn")
    norm.src.locals.add(name)
    norm.emit_assign(out, norm.local(name), atom)
    return name


def _check_same(norm, a, b, name, out):
    if isinstance(a, ast.Constant) and isinstance(b, ast.Constant) and a.value == b.value:
        return
    out.append(ir.annotate(ast.Expr(value=norm.calls.call_of(vec.check_gufunc_sizes, [a, b])),
                           origin=norm.origin))
