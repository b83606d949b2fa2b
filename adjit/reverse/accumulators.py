"""Adjoint accumulations held in a register across a loop.

The backward sweep of `for r in ...: Qxc[r] += icf[k, idx] * xc[c]` adds into `xc_bar[c]`
on every iteration, with `c` fixed: a load and a store of the same element per iteration,
which the compiler cannot keep in a register because it cannot prove that the other arrays
the loop writes (`icf_bar`) are different memory. adjit knows: every array name in the
backward sweep is its own array (views are index maps onto their base, so two names never
share memory), and adjoint arrays are allocated by adjit. So an adjoint element that a loop
adds to at an index the loop does not change, where the loop does nothing but add to that
adjoint array (additions in any order give the same sum, wherever the other indices point),
is summed in a local variable and added to the array once, after the loop, as a
hand-written adjoint does:

    xc_bar_sum = 0.0                 # was: for r in ...:
    for r in ...:                    #          xc_bar[c] += _t16_bar * _t13
        xc_bar_sum = add_any_order(xc_bar_sum, _t16_bar * _t13)
    if xc_bar_sum != 0.0:
        xc_bar[c] += xc_bar_sum

The element is read and written only when the loop added something (a loop that runs no
iteration touches no memory, as before). Only the order of the additions changes: the
loop's terms are summed first, then added to the element, and the sum adds them in any
order (runtime/sums.py add_any_order: an addition LLVM may reorder, so that it runs the
loop's sum in vector lanes; `s += v` would keep the additions in turn, each waiting for the
one before). `-=` adds the negated term (the same number, exactly).

Loops of the serial backward sweep only: not prange loops or anything inside them (their
adjoint arrays are per-thread or shared between threads), not CUDA code.
"""
import ast

from .. import ir
from ..runtime.sums import ANY_ORDER


def promote_accumulators(stmts, array_bars, namegen, time_loops=()):
    """Rewrite `stmts` (the backward sweep) in place; `array_bars` names the adjoint arrays.

    Not across the loops in `time_loops` (ids): the loops over a time loop's steps, which
    checkpointing cuts into blocks, each a loop of its own. Summed across such a loop, a sum
    would be added to its element once in the recorded gradient and once per block in the
    checkpointed one: the two would differ in the last bits, where checkpointing promises
    the same gradient to the bit."""
    _visit(stmts, set(array_bars), namegen, set(time_loops))
    return stmts


def serial_range_loops(stmts, rewrite, time_loops=True):
    """Call rewrite(block, k) for every `for ... in range(...)` loop block[k] of `stmts`,
    innermost first, outside prange loops and their bodies; rewrite may replace the loop by
    several statements and returns the index of the last statement it leaves for it. With
    time_loops=False, not for a time loop a checkpointed gradient runs step by step (the
    note time_loop; the loops inside it, yes): a rewrite that changes the order of its
    floating-point operations would make the recorded gradient another one."""
    k = 0
    while k < len(stmts):
        s = stmts[k]
        if isinstance(s, ast.For) and ir.is_prange_loop(s):
            k += 1
            continue
        for field in ("body", "orelse"):
            inner = getattr(s, field, None)
            if isinstance(inner, list) and inner:
                serial_range_loops(inner, rewrite, time_loops)
        if isinstance(s, ast.For) and ir.is_range_loop(s) and (
                time_loops or not ir.note(s, "time_loop", False)):
            k = rewrite(stmts, k)
        k += 1


def _visit(stmts, bars, namegen, time_loops=frozenset()):
    def promote(block, k):
        if id(block[k]) in time_loops:
            return k
        before, after = _promote(block[k], bars, namegen)
        if not before:
            return k
        # the sums start above the loop's header temporaries (`_t11 = c + 1`), which stay
        # next to the range they fold into
        at = k
        while at > 0 and isinstance(block[at - 1], ast.Assign) \
                and isinstance(block[at - 1].targets[0], ast.Name):
            at -= 1
        block[k + 1:k + 1] = after
        block[at:at] = before
        return k + len(before) + len(after)
    serial_range_loops(stmts, promote)


def _promote(loop, bars, namegen):
    assigned = {loop.target.id} if isinstance(loop.target, ast.Name) else {"*"}
    uses = {}
    for node in ir.walk(ast.Module(body=loop.body, type_ignores=[])):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Store):
                assigned.add(node.id)
            uses.setdefault(node.id, []).append(node)
        elif isinstance(node, (ast.While, ast.Return, ast.Break, ast.Continue)):
            return [], []
        elif isinstance(node, ast.For) and ir.is_prange_loop(node):
            return [], []
    if "*" in assigned:
        return [], []
    sites = {}          # adjoint array -> [(AugAssign, its parent list)]
    for parent, s in _simple_statements(loop.body):
        if isinstance(s, ast.AugAssign) and isinstance(s.op, (ast.Add, ast.Sub)) \
                and isinstance(s.target, ast.Subscript) \
                and isinstance(s.target.value, ast.Name) and s.target.value.id in bars:
            sites.setdefault(s.target.value.id, []).append((s, parent))
    before, after = [], []
    groups = {}
    for arr, found in sites.items():
        if len(uses.get(arr, ())) != len(found):
            continue        # read, or assigned, in the loop: only additions commute
        for s, parent in found:
            atoms = ir.index_atoms(s.target)
            if all(isinstance(a, ast.Constant) or (isinstance(a, ast.Name)
                                                   and a.id not in assigned) for a in atoms):
                groups.setdefault((arr, ast.dump(s.target.slice)), []).append((s, parent))
    for (arr, _), found in groups.items():
        index = found[0][0].target.slice
        total = namegen.fresh(f"{arr}_sum")
        for s, parent in found:
            i = next(n for n, x in enumerate(parent) if x is s)
            term = s.value if isinstance(s.op, ast.Add) else \
                ast.UnaryOp(op=ast.USub(), operand=s.value)
            parent[i] = ir.assign(total, ast.Call(
                func=ast.Name(id=ANY_ORDER, ctx=ast.Load()),
                args=[ir.name(total), term], keywords=[]))
            ir.copy_notes(s, parent[i])
        before.append(ir.assign(total, ir.const(0.0)))
        slot = ast.Subscript(value=ast.Name(id=arr, ctx=ast.Load()), slice=index,
                             ctx=ast.Store())
        after.append(ir.if_nonzero(total, [ast.AugAssign(target=slot, op=ast.Add(),
                                                         value=ir.name(total))]))
    return before, after


def _simple_statements(stmts):
    """(enclosing list, statement) for every statement in `stmts`, nested ones included."""
    for s in stmts:
        yield stmts, s
        for field in ("body", "orelse"):
            inner = getattr(s, field, None)
            if isinstance(inner, list):
                yield from _simple_statements(inner)


def hoist_loads(stmts, exposed):
    """A load the backward sweep repeats in every iteration of a loop (`_t14 = xc[c]` in the
    reversed loop over r, c fixed) is made once before it. The compiler cannot do this: the
    loop stores into other arrays (`icf_bar[k, idx] += ...`), and without knowing that they
    are different memory it loads again after every store. adjit knows (the module
    docstring). A load moves when it is a statement of the loop's own body (not under an
    `if`), its index does not change in the loop, nothing in the loop writes or rebinds the
    array, and the loop reads the name only after it; the load runs only when the loop runs
    at least once, so it reads no element the loop would not have read. Names in `exposed`
    (read from the forward sweep) stay; returns the names moved, which the caller defines
    up front (the guarded load is all that assigns them: without it they would look read
    from the forward sweep)."""
    names = []

    def rewrite(block, k):
        loop = block[k]
        moved = [s for s in _invariant_loads(loop) if s.targets[0].id not in exposed]
        if not moved:
            return k
        names.extend(s.targets[0].id for s in moved)
        loop.body = [s for s in loop.body if id(s) not in {id(m) for m in moved}]
        guard = ast.If(test=_nonempty(loop), body=moved, orelse=[])
        ir.copy_notes(moved[0], guard, ("origin",))
        block[k:k] = [guard]
        return k + 1
    serial_range_loops(stmts, rewrite)
    return names


def _invariant_loads(loop):
    if not isinstance(loop.target, ast.Name) or loop.orelse:
        return []
    stores, written = {loop.target.id: 1}, set()      # (name: how often the loop assigns it)
    for node in ir.walk(ast.Module(body=loop.body, type_ignores=[])):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            stores[node.id] = stores.get(node.id, 0) + 1
        elif isinstance(node, (ast.Subscript, ast.Attribute)) and \
                isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name):
            written.add(node.value.id)
        elif isinstance(node, ast.Call) and ir.unparse(node.func) != ANY_ORDER:
            return []           # (a call may write an array: a tape growing, a helper)
    moved = []
    first_use = {}          # name -> the statement of the loop's body that names it first
    for s in loop.body:
        for node in ir.walk(s):
            if isinstance(node, ast.Name):
                first_use.setdefault(node.id, s)
    for s in loop.body:
        if not (isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name) and
                isinstance(s.value, ast.Subscript) and isinstance(s.value.value, ast.Name)):
            continue
        t, array = s.targets[0].id, s.value.value.id
        atoms = ir.index_atoms(s.value)
        if array in written or array in stores or t in written or \
                any(not isinstance(a, (ast.Name, ast.Constant)) for a in atoms) or \
                any(isinstance(a, ast.Name) and a.id in stores for a in atoms):
            continue
        if stores[t] == 1 and first_use[t] is s:
            moved.append(s)
    return moved


def _nonempty(loop):
    args = loop.iter.args
    text = f"len({ir.unparse(loop.iter)}) > 0"
    if len(args) == 1:
        text = f"{ir.unparse(args[0])} > 0"
    elif len(args) == 2:
        text = f"{ir.unparse(args[0])} < {ir.unparse(args[1])}"
    elif isinstance(args[2], ast.Constant) and args[2].value in (1, -1):
        op = "<" if args[2].value == 1 else ">"
        text = f"{ir.unparse(args[0])} {op} {ir.unparse(args[1])}"
    return ast.parse(text, mode="eval").body
