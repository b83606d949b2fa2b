"""Sums of products in the backward sweep computed as one call, in vector lanes.

The adjoint of a coefficient that enters every point of a loop adds one product per
iteration into a number:

    for i in range(1, n - 1):
        _t9 = _ftape[np.uint64(_fbase1 + (i - 1))]      # the recorded Laplacian
        _t11_bar = un_bar[i]
        un_bar[i] = 0.0
        alpha_bar += _t11_bar * _t9

Each addition waits for the one before (numba keeps floating-point additions in order), so
the loop runs at one addition per few cycles, and nothing else in it vectorizes either.
Where the two factors are elements of one-dimensional float arrays at indices that step by
a constant with the loop variable, the sum is taken before the loop by
`dot_range(un_bar, 1, 1, _ftape, _fbase1, 1, n)` (runtime/sums.py), which adds the products
in vector lanes, and the loop keeps the rest (a sum of single elements, the adjoint of an
offset `y[i] = a * x[i] + b`, by `sum_range(y_bar, 0, 1, n)`):

    alpha_bar += dot_range(un_bar, 1, 1, _ftape, _fbase1, 1, max(_t1 - 1, 0))
    for i in range(1, _t1):
        un_bar[i] = 0.0

A factor no iteration changes is taken out of the sum (`lse_bar -= _r3_bar * sum_range(y,
0, _f1, n)` for softmax's `-np.sum(y * (z - lse))`), and an index may step by a number no
iteration changes (`y[i * _f1]`, a broadcast's stride flag: 0 for a one-element y).

Taken before the loop, the sum reads what each iteration read when nothing in the loop
writes the two arrays, or when the loop writes an array only at the index it reads it at,
after reading it (an adjoint reset): each iteration then reads an element no other
iteration writes. Only the order of the additions changes. Serial loops of the CPU
backward sweep only.
"""
import ast
import copy

from .. import ir
from ..analysis.types import FLOAT, is_array
from .accumulators import serial_range_loops
from .fission import _bounds, _simple, _target
from .dce import upward_exposed


def dot_sums(stmts, kind_of, float_tape, live_after):
    """Rewrite `stmts` (the backward sweep) in place. `kind_of(name)` gives a variable's
    kind (None when unknown); `float_tape` names the float tape array; `live_after` holds
    the names read after the sweep (what is live after each loop follows from it)."""
    live = {}
    upward_exposed(stmts, frozenset(live_after), live)

    def one_d_float(name):
        if name == float_tape:
            return True
        kind = kind_of(name)
        return is_array(kind) and kind.is_float and kind.ndim == 1 and kind.dtype == "f"

    def rewrite(block, k):
        loop = block[k]
        if loop.orelse:
            return k
        new = _rewrite(loop, one_d_float, kind_of, live.get(id(loop), set()))
        if new is None:
            return k
        block[k:k + 1] = new
        return k + len(new) - 1

    serial_range_loops(stmts, rewrite, time_loops=False)
    return stmts


def _rewrite(loop, one_d_float, kind_of, read_outside):
    if not isinstance(loop.target, ast.Name):
        return None
    var = loop.target.id
    body = loop.body
    if not all(_simple(s) for s in body):
        return None
    bounds = _bounds(loop.iter)
    if bounds is None:
        return None
    lo, hi = bounds
    count = f"max({ir.unparse(ir.fold_int(ast.parse(f'({hi}) - ({lo})', mode='eval').body))}, 0)"
    assigned = {}
    for s in body:
        t = _target(s)
        if isinstance(t, ast.Name):
            assigned[t.id] = assigned.get(t.id, 0) + 1
    if var in assigned:
        return None
    calls = []
    taken = set()
    for pos, s in enumerate(body):
        if not (isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name)
                and isinstance(s.op, (ast.Add, ast.Sub))):
            continue
        total = s.target.id
        if assigned.get(total) != 1 or kind_of(total) not in (None, FLOAT) or \
                any(isinstance(n, ast.Name) and n.id == total and isinstance(n.ctx, ast.Load)
                    for x in body for n in ir.walk(x)):
            continue
        product = _product(s.value, body[:pos], var, assigned)
        if product is None:
            continue
        factors, scalars = product
        sign = -1 if isinstance(s.op, ast.Sub) else 1
        args = []
        for negative, array, step, rest, at in factors:
            sign *= -1 if negative else 1
            if not one_d_float(array) or not _unwritten(body, array, at):
                break
            args.append((array, step, rest))
        else:
            if len(args) == 1:
                (a, sa, ra), = args
                call = f"sum_range({a}, {_at(sa, lo, ra)}, {_src(sa)}, {count})"
            else:
                (a, sa, ra), (b, sb, rb) = args
                call = (f"dot_range({a}, {_at(sa, lo, ra)}, {_src(sa)}, {b}, "
                        f"{_at(sb, lo, rb)}, {_src(sb)}, {count})")
            for c in scalars:       # a factor no iteration changes: taken out of the sum
                call = f"{ir.unparse(c)} * {call}"
            op = "+=" if sign > 0 else "-="
            stmt = ir.parse(f"{total} {op} {call}")[0]
            ir.copy_notes(s, stmt)
            calls.append(stmt)
            taken.add(pos)
    if not calls:
        return None
    rest = [s for pos, s in enumerate(body) if pos not in taken]
    rest = _live(rest, read_outside, var)
    out = calls
    if rest:
        new = ast.For(target=copy.deepcopy(loop.target), iter=loop.iter, body=rest,
                      orelse=[], type_comment=None)
        ir.copy_notes(loop, new)
        out = calls + [new]
    elif var in read_outside:
        return None         # the loop variable's last value is read after the loop
    return out


def _product(value, before, var, assigned):
    """The factors of `value` as ([(negative, array, step, rest, load)], [number]): one
    element, or a product of two, each read at `step * var + rest` (rest not changing in the
    loop; step an integer, or a number no iteration changes: a broadcast's stride flag),
    through numbers the iteration assigned once before (`_t9 = _ftape[...]`) and negations,
    times numbers no iteration changes (`_r3_bar * y[i]`: taken out of the sum). None for
    anything else."""
    loads, scalars, sign = [], [], [False]
    if not _factors(value, before, var, assigned, loads, scalars, sign) or \
            not 1 <= len(loads) <= 2 or len(scalars) > 2:
        return None
    loads[0] = (sign[0],) + loads[0][1:]
    return loads, scalars


def _factors(node, before, var, assigned, loads, scalars, sign):
    """Collect the factors of a product into `loads` and `scalars`, flipping sign[0] at each
    negation (see _product); False where `node` is something else."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        sign[0] = not sign[0]
        return _factors(node.operand, before, var, assigned, loads, scalars, sign)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return _factors(node.left, before, var, assigned, loads, scalars, sign) and \
            _factors(node.right, before, var, assigned, loads, scalars, sign)
    if (isinstance(node, ast.Name) and node.id != var and node.id not in assigned) or (
            isinstance(node, ast.Constant) and type(node.value) in (int, float)):
        scalars.append(node)
        return True
    if isinstance(node, ast.Name):
        if assigned.get(node.id) != 1:
            return False
        defs = [s for s in before if isinstance(s, ast.Assign)
                and isinstance(s.targets[0], ast.Name) and s.targets[0].id == node.id]
        if len(defs) != 1:
            return False
        return _factors(defs[0].value, before[:before.index(defs[0])], var, assigned, loads,
                        scalars, sign)
    load = _load(node, before, var, assigned, False)
    if load is None:
        return False
    loads.append(load)
    return True


def _load(node, before, var, assigned, negative):
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and \
            not isinstance(node.slice, (ast.Slice, ast.Tuple)):
        index = node.slice
        if isinstance(index, ast.Call) and ir.unparse(index.func) == "np.uint64" and \
                len(index.args) == 1:
            index = index.args[0]
        affine = _affine(_resolve(index, before, assigned), var, assigned)
        if affine is None or affine[0] == 0:
            return None
        step, rest = affine
        if any(isinstance(n, ast.Name) and n.id in assigned for n in ir.walk(rest)):
            return None
        return negative, node.value.id, step, rest, node
    return None


def _resolve(node, before, assigned):
    """`node` with the numbers the iteration assigned once before it (`_t1 = i - 1`)
    replaced by their definitions, so that an index reads in the loop variable."""
    if isinstance(node, ast.Name) and assigned.get(node.id) == 1:
        defs = [k for k, s in enumerate(before) if isinstance(s, ast.Assign)
                and isinstance(s.targets[0], ast.Name) and s.targets[0].id == node.id]
        if len(defs) == 1:
            return _resolve(before[defs[0]].value, before[:defs[0]], assigned)
        return node
    if isinstance(node, ast.BinOp):
        return ast.BinOp(left=_resolve(node.left, before, assigned), op=node.op,
                         right=_resolve(node.right, before, assigned))
    if isinstance(node, ast.UnaryOp):
        return ast.UnaryOp(op=node.op, operand=_resolve(node.operand, before, assigned))
    return node


def _affine(node, var, assigned=()):
    """(k, rest) with `node` = k * var + rest, k an integer constant (or, for `var * f`
    alone, the name f that no iteration changes: `assigned` holds those the loop assigns)
    and rest not reading var; None for anything else."""
    if isinstance(node, ast.Name) and node.id == var:
        return 1, ast.Constant(value=0)
    if not any(isinstance(n, ast.Name) and n.id == var for n in ir.walk(node)):
        return 0, node
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        left, right = _affine(node.left, var, assigned), _affine(node.right, var, assigned)
        if left is None or right is None:
            return None
        if isinstance(left[0], int) and isinstance(right[0], int):
            k = left[0] + right[0] if isinstance(node.op, ast.Add) else left[0] - right[0]
        elif right[0] == 0:             # (f * var) + rest, (f * var) - rest
            k = left[0]
        elif left[0] == 0 and isinstance(node.op, ast.Add):      # rest + (f * var)
            k = right[0]
        else:
            return None
        return k, ast.BinOp(left=left[1], op=node.op, right=right[1])
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        for a, b in ((node.left, node.right), (node.right, node.left)):
            if isinstance(b, ast.Constant) and type(b.value) is int:
                inner = _affine(a, var, assigned)
                if inner is None or not isinstance(inner[0], int):
                    return None
                return inner[0] * b.value, ast.BinOp(left=inner[1], op=ast.Mult(), right=b)
        for a, b in ((node.left, node.right), (node.right, node.left)):
            if isinstance(a, ast.Name) and a.id == var and isinstance(b, ast.Name) and \
                    b.id != var and b.id not in assigned:
                return b, ast.Constant(value=0)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _affine(node.operand, var, assigned)
        return None if inner is None or not isinstance(inner[0], int) else (
            -inner[0], ast.UnaryOp(op=ast.USub(), operand=inner[1]))
    return None


def _src(step):
    """A step as source: an integer, or the name of a number no iteration changes."""
    return str(step) if isinstance(step, int) else ir.unparse(step)


def _at(step, lo, rest):
    """Source of the index at the loop's first value: step * lo + rest."""
    first = ast.parse(lo, mode="eval").body
    if not isinstance(step, int):
        if not (isinstance(first, ast.Constant) and first.value == 0):
            first = ast.BinOp(left=step, op=ast.Mult(), right=first)
    elif step != 1:
        first = ast.BinOp(left=ast.Constant(value=step), op=ast.Mult(), right=first)
    return ir.unparse(ir.fold_int(ast.BinOp(left=first, op=ast.Add(), right=rest)))


def _unwritten(body, array, load):
    """Whether the loop leaves `array` alone, but for a reset at the load's own index after
    the load."""
    index = ast.dump(load.slice)
    read_at = next(p for p, s in enumerate(body) if any(n is load for n in ir.walk(s)))
    for pos, s in enumerate(body):
        t = _target(s)
        if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and \
                t.value.id == array:
            if isinstance(s, ast.AugAssign) or ast.dump(t.slice) != index or pos <= read_at:
                return False
        elif isinstance(t, ast.Name) and t.id == array:
            return False
    return True


def _live(body, read_outside, var):
    """`body` without assignments to numbers nothing reads any more (calls are kept)."""
    body = list(body)
    changed = True
    while changed:
        changed = False
        reads = {n.id for s in body for n in ir.walk(s)
                 if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        for s in body:
            t = _target(s)
            if isinstance(s, ast.Assign) and isinstance(t, ast.Name) and t.id not in reads \
                    and t.id not in read_outside and t.id != var and \
                    not any(isinstance(n, ast.Call) for n in ir.walk(s.value)):
                body.remove(s)
                changed = True
                break
    return body
