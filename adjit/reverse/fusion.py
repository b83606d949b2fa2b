"""Backward loops over one range run as one loop.

The backward sweep of vectorized code is a loop per array operation, each over the whole
array: `-np.sum(y * (z - lse))` and `np.log(np.sum(np.exp(z - m)))` leave

    lse_bar -= _r3_bar * sum_range(y, 0, _f1, max(_n5, 0))
    for _i3 in range(_n5):                      # y * (z - lse), broadcast: strides _f1, _f2
        z_bar[_i3 * _f2] += _r3_bar * y[_i3 * _f1]
    _r2_bar += lse_bar * (1.0 / _r2)
    _fbase1 = _fn - max(_n2, 0)
    for _i2 in range(_n2):                      # exp's adjoint, the values from the tape
        z_bar[_i2] += _r2_bar * _ftape[_fbase1 + _i2]

two passes over z_bar, the first after np.zeros_like has written it. When the operands have
one shape (no operand is broadcast: every stride is 1, the bounds are equal), the loops are
one loop over the elements, and the adjoint's first addition is its first value:

    z_bar = np.empty_like(z)                    # (was np.zeros_like, where it was)
    ...
    _r2_bar += lse_bar * (1.0 / _r2)            # (moved up: it reads nothing the loop writes)
    _fbase1 = _fn - max(_n2, 0)
    if _f2 == 1 and _n2 == _n5:
        for _i3 in range(_n5):
            z_bar[_i3] = _r3_bar * y[_i3 * _f1]
            z_bar[_i3] += _r2_bar * _ftape[_fbase1 + _i3]
    else:
        z_bar[:] = 0.0
        ... the two loops as they were ...

what XLA does with the same expression's elementwise operations. The numbers are the same
to the bit but for the sign of a zero: each element gets the same additions in the same
order, the first onto a zero where the loops as they were ran (0.0 + -0.0 is 0.0; the
assignment keeps -0.0).

When: top-level serial `range` loops of the backward sweep running upward by 1 (not
prange loops, not CUDA code, not inside a time loop; each keeps the order of its
iterations, so a sum or a scan runs as before), next to each other but for statements the
fused loop may run before the first (assignments to a name, reading nothing the loops
write), with the same lower bound, bodies of assignments whose calls compute values only
(math, vector math, min/max, conversions) that LLVM vectorizes as they stand
(analysis/vectorizable.py: no scalar carried between iterations, only calls it knows, so
the fused loop vectorizes too and gets the same vector math as each loop would have: the
same numbers to the bit), and:

- every adjoint array a loop writes is read and written by all the loops at the loop's
  own index only: `x_bar[i]`, or `x_bar[i * f]` with f a name the loops do not change,
  which the fused version asks to be 1 (an operand broadcast against another has stride 0
  there), and a lower bound not known to be at least 0 is tested when the code runs
  (numba reads a negative index from the end: two iterations would reach one element).
  Every array name of the backward sweep is its own memory (accumulators.py), and arrays
  the loops only read are read at any index;
- a scalar one loop assigns is named by no other (a loop's own temporaries, its sums);
- no loop reads another's variable, and the other loops' variables are not read after
  them.

The longest run of such loops from a first one is fused (a loop that may not join ends the
run before it).

Bounds not equal by their text or their values (resets._Values) are compared when the
code runs. An adjoint array allocated zeroed (np.zeros_like, np.zeros) with nothing naming
it up to the loops, 1-D, whose first use in the fused body is an addition at the loop's
index, is allocated empty (where it was: the array keeps one binding, as resets.py's
rewrites of the time loops after it need) and assigned there, where the loops start at 0
and run over its whole length (compared when the code runs where the bound is not its
length by value), the loops as they were zeroing it first; resets.py does the same for a
single loop at the array's own index.
Where nothing needs comparing, the fused loop replaces the loops.
"""
import ast
import copy

from .. import ir
from ..analysis.effects import computes_only
from ..analysis.vectorizable import vectorizable
from .resets import _Values, _at_least_zero, _bounds, _names, _range_loop


def fuse_loops(stmts, array_bars, live_after, before=(), tail=()):
    """Rewrite `stmts` (the backward sweep) in place. `array_bars` maps the adjoint arrays'
    names to their number of dimensions, `live_after` names what is read after the sweep,
    `before` the function's statements ahead of it, `tail` those after it (the return).
    An allocation it makes empty (in `before` or `stmts`) stays where it is: the array
    keeps one binding, which the later passes (resets.py) read."""
    before = list(before)
    values = _Values(before + list(stmts))
    bars = {x: ndim for x, ndim in array_bars.items() if values.stores.get(x, 0) == 1}
    k = 0
    while k < len(stmts):
        if _candidate(stmts[k]):
            k = _fuse_from(stmts, k, bars, values, live_after, before, tail)
        k += 1


def _candidate(s):
    """A serial range loop upward by 1 (the loops keep their order of iterations: a sum or
    a scan of one runs as it did), of assignments whose calls compute values only."""
    if not _range_loop(s) or ir.note(s, "time_loop", False) or ir.note(s, "steps", False):
        return False
    args = s.iter.args
    if len(args) == 3 and not (isinstance(args[2], ast.Constant) and args[2].value == 1):
        return False
    return all(_plain(t) for t in s.body) and vectorizable(s)


def _plain(s):
    """An assignment (one target: a name or an element of an array name) of an expression
    whose calls compute values only."""
    if isinstance(s, ast.Assign):
        if len(s.targets) != 1:
            return False
        target = s.targets[0]
    elif isinstance(s, ast.AugAssign):
        target = s.target
    else:
        return False
    if not (isinstance(target, ast.Name) or (isinstance(target, ast.Subscript) and
                                             isinstance(target.value, ast.Name))):
        return False
    return all(computes_only(n) for n in ir.walk(s) if isinstance(n, ast.Call)) and \
        not any(isinstance(n, (ast.Lambda, ast.NamedExpr)) for n in ir.walk(s))


def _scalar_move(s):
    """A statement between the loops that may run before them: an assignment to a name
    (what it reads and writes is checked against the loops by _joins)."""
    target = s.targets[0] if isinstance(s, ast.Assign) and len(s.targets) == 1 else \
        getattr(s, "target", None)
    return isinstance(target, ast.Name) and _plain(s)


def _stores(node):
    """The names `node` assigns (not the arrays it writes elements of)."""
    return {n.id for n in ir.walk(node) if isinstance(n, ast.Name) and
            isinstance(n.ctx, ast.Store)}


def _writes(node):
    """The names `node` assigns and the arrays it writes elements of."""
    return _stores(node) | {n.value.id for n in ir.walk(node) if isinstance(n, ast.Subscript)
                            and isinstance(n.ctx, ast.Store) and isinstance(n.value, ast.Name)}


def _fuse_from(stmts, k, bars, values, live_after, before, tail):
    """Fuse the loop stmts[k] with the loops after it that may join it (the longest run of
    them that may run as one); returns the index of the last statement the rewrite leaves in
    place of what it read."""
    chain, hoists, pending = [stmts[k]], [], []
    j = k + 1
    while j < len(stmts):
        s = stmts[j]
        if _candidate(s) and _joins(chain, pending, s, values):
            chain.append(s)
            hoists.append(pending)      # (what runs before the loops if `s` joins them)
            pending = []
        elif _scalar_move(s):
            pending.append(s)
        else:
            break
        j += 1
    while len(chain) >= 2:
        last = stmts.index(chain[-1])
        plan = _Plan(chain, bars, values, stmts[last + 1:] + list(tail), live_after)
        if plan.ok:
            break
        chain.pop()
        hoists.pop()
    if len(chain) < 2:
        return k
    hoisted = [s for h in hoists for s in h]
    fused, conditions, emptied = plan.build(before + stmts[:k] + hoisted)
    if conditions:
        test = conditions[0] if len(conditions) == 1 else \
            ast.BoolOp(op=ast.And(), values=conditions)
        zeros = [ast.parse(f"{x}[:] = 0.0").body[0] for x in emptied]
        code = [ast.If(test=test, body=[fused], orelse=zeros + chain)]
    else:
        code = [fused]
    new = hoisted + code
    stmts[k:last + 1] = new
    return k + len(new) - 1


def _equal(a, b):
    """The test `a == b` of two expressions' texts."""
    return ast.Compare(left=ast.parse(a, mode="eval").body, ops=[ast.Eq()],
                       comparators=[ast.parse(b, mode="eval").body])


def _joins(chain, pending, loop, values):
    """Whether `loop` may join the loops of `chain` with the statements `pending` (between
    them) run before them all."""
    lo = _bounds(chain[0].iter)[0]
    if not values.same(lo, _bounds(loop.iter)[0]) and lo != _bounds(loop.iter)[0]:
        return False
    written = set().union(*(_writes(c) for c in chain))
    named = set().union(*(_names(c) for c in chain))
    for s in pending:
        # it runs before the loops: it reads nothing they write, writes nothing they name
        if _names(s) & written or _stores(s) & named:
            return False
    return not (_names(loop.iter) & written)


class _Plan:
    """Whether the loops of `chain` may run as one loop, and that loop."""

    def __init__(self, chain, bars, values, after, live_after):
        self.chain, self.bars, self.values = chain, bars, values
        self.var = chain[0].target.id
        self.strides = set()
        self.ok = self._check(after, live_after)

    def _check(self, after, live_after):
        chain = self.chain
        read_after = set(live_after).union(*(_names(s) for s in after))
        variables = {loop.target.id for loop in chain}
        for loop in chain:
            # a loop reads no other loop's variable (it is the fused loop's own there)
            if (_names(ast.Module(body=loop.body, type_ignores=[])) & variables) - \
                    {loop.target.id}:
                return False
        for loop in chain[1:]:
            if loop.target.id != self.var and loop.target.id in read_after:
                return False
        # scalars: each named by one loop only
        bodies = [_names(ast.Module(body=loop.body, type_ignores=[])) for loop in chain]
        for a, loop in enumerate(chain):
            own = _stores(ast.Module(body=loop.body, type_ignores=[]))
            own = {n for n in own if n not in self.bars}
            if any(own & bodies[b] for b in range(len(chain)) if b != a):
                return False
        # arrays the loops write: adjoint arrays, at each loop's own index only (an
        # adjoint array bound or added to whole is no element's)
        self.written = set()
        for loop in chain:
            for s in loop.body:
                target = s.targets[0] if isinstance(s, ast.Assign) else s.target
                if isinstance(target, ast.Name) and target.id in self.bars:
                    return False
                if isinstance(target, ast.Subscript):
                    if target.value.id not in self.bars:
                        return False
                    self.written.add(target.value.id)
        for loop in chain:
            if loop.target.id in _stores(ast.Module(body=loop.body, type_ignores=[])):
                return False
            temps = {}      # the body's index names assigned once, up to the statement
            once = _assigned_once(loop.body)
            for s in loop.body:
                for node in ir.walk(s):
                    if isinstance(node, ast.Name) and node.id in self.written and \
                            not self._element(loop, s, node, temps):
                        return False
                if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name) and \
                        s.targets[0].id in once and isinstance(s.value, (ast.Name, ast.BinOp)):
                    temps[s.targets[0].id] = s.value
        return True

    def _element(self, loop, stmt, name, temps):
        """Whether the name of a written array, in `stmt` of the loop's body, is the array
        of an element at the loop's own index (noting the strides that index asks to be 1).
        `temps`: the body's names assigned once before `stmt`, and what they hold."""
        for node in ir.walk(stmt):
            if isinstance(node, ast.Subscript) and node.value is name:
                index = node.slice
                if isinstance(index, ast.Name) and index.id in temps:
                    index = temps[index.id]
                stride = _own_index(index, loop.target.id, loop)
                if stride is False:
                    return False
                if stride is not None:
                    self.strides.add(stride)
                return True
        return False

    def build(self, ahead):
        """(the fused loop, the conditions it runs under, the arrays it assigns first: their
        zeroed allocations, found in `ahead` (the function's statements before the loops),
        now allocate them empty, and the loops as they were zero them first)."""
        chain, var = self.chain, self.var
        lo, hi = _bounds(chain[0].iter)
        conditions = [_equal(f, "1") for f in sorted(self.strides)]
        if not _at_least_zero(lo):
            # (numba reads a negative index from the end: the element i - n is element i,
            # which another iteration of the fused loop may have reached first)
            conditions.append(ast.Compare(left=ast.parse(lo, mode="eval").body,
                                          ops=[ast.GtE()], comparators=[ast.Constant(0)]))
        his = [hi]
        for loop in chain[1:]:
            other = _bounds(loop.iter)[1]
            his.append(other)
            if other != hi and not self.values.same(other, hi):
                conditions.append(_equal(other, hi))
        body = []
        for loop in chain:
            part = copy.deepcopy(loop.body)
            _Dense(loop.target.id, var, self.strides).visit(ast.Module(body=part,
                                                                       type_ignores=[]))
            body += part
        fused = copy.deepcopy(chain[0])
        fused.body = body
        emptied = []
        for x in sorted(self.written):
            alloc = self._first_assigned(x, body, ahead, lo, his, conditions)
            if alloc is None:
                continue
            call = alloc.value
            call.func = ast.parse("np.empty_like" if ir.unparse(call.func) == "np.zeros_like"
                                  else "np.empty", mode="eval").body
            emptied.append(x)
        return fused, conditions, emptied

    def _first_assigned(self, x, body, whole, lo, his, conditions):
        """The allocation of x when the fused body may assign its first addition (which it
        then does), else None; a bound not known to be x's length is compared with it when
        the code runs (added to `conditions`)."""
        alloc, p = None, None
        for q, s in enumerate(whole):
            if isinstance(s, ast.Assign) and len(s.targets) == 1 and \
                    isinstance(s.targets[0], ast.Name) and s.targets[0].id == x:
                alloc, p = s, q
        if alloc is None or any(x in _names(s) for s in whole[p + 1:]):
            return None
        call = alloc.value
        if not isinstance(call, ast.Call) or len(call.args) != 1 or call.keywords:
            return None
        func = ir.unparse(call.func)
        if self.bars[x] != 1:
            return None
        if func == "np.zeros_like" and isinstance(call.args[0], ast.Name):
            length = f"{call.args[0].id}.shape[0]"
        elif func == "np.zeros" and not isinstance(call.args[0], (ast.Tuple, ast.List)):
            length = ir.unparse(call.args[0])
        else:
            return None
        if not self.values.same(lo, "0"):
            return None
        same = any(self.values.same(h, length) for h in his)
        if not same and self.values.canonical(length) is None:
            return None         # (a length whose name is bound again: not compared later)
        first = next(s for s in body if x in _names(s))
        if not (isinstance(first, ast.AugAssign) and isinstance(first.op, ast.Add) and
                isinstance(first.target, ast.Subscript) and
                isinstance(first.target.value, ast.Name) and first.target.value.id == x and
                x not in _names(first.value)):
            return None
        index = first.target.slice
        if isinstance(index, ast.Name) and index.id in self._copies(body):
            index = ast.Name(id=self.var, ctx=ast.Load())
        if not (isinstance(index, ast.Name) and index.id == self.var):
            return None
        new = ast.Assign(targets=[first.target], value=first.value, lineno=0)
        ir.copy_notes(first, new)
        body[body.index(first)] = new
        if not same:
            conditions.append(_equal(his[0], length))
        return alloc

    def _copies(self, body):
        """The names the fused body assigns once (before they are read), to the loop's
        variable."""
        once = _assigned_once(body)
        return {s.targets[0].id for s in body
                if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name) and
                s.targets[0].id in once and isinstance(s.value, ast.Name) and
                s.value.id == self.var}


def _assigned_once(body):
    """The names the statements assign once, each before any statement reads it."""
    counts, read_first = {}, set()
    for s in body:
        stored = _stores(s)
        read_first |= {n.id for n in ir.walk(s) if isinstance(n, ast.Name) and
                       isinstance(n.ctx, ast.Load) and n.id not in counts}
        if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
            read_first.add(s.target.id)
        for n in stored:
            counts[n] = counts.get(n, 0) + 1
    return {n for n, c in counts.items() if c == 1 and n not in read_first}


def _own_index(index, var, loop):
    """None for the index `var`; the stride's name for `var * f` (f a name the loop does not
    assign); False for any other index."""
    if isinstance(index, ast.Name) and index.id == var:
        return None
    if isinstance(index, ast.BinOp) and isinstance(index.op, ast.Mult):
        a, b = index.left, index.right
        for v, f in ((a, b), (b, a)):
            if isinstance(v, ast.Name) and v.id == var and isinstance(f, ast.Name) and \
                    f.id != var and f.id not in _stores(loop):
                return f.id
    return False


class _Dense(ast.NodeTransformer):
    """A body as it runs with the strides 1 and the loop's variable `var`."""

    def __init__(self, old, var, strides):
        self.old, self.var, self.strides = old, var, strides

    def visit_Name(self, node):
        if node.id == self.old:
            return ast.Name(id=self.var, ctx=node.ctx)
        return node

    def visit_BinOp(self, node):
        if isinstance(node.op, ast.Mult):
            for v, f in ((node.left, node.right), (node.right, node.left)):
                if isinstance(v, ast.Name) and v.id == self.old and \
                        isinstance(f, ast.Name) and f.id in self.strides:
                    return ast.Name(id=self.var, ctx=ast.Load())
        self.generic_visit(node)
        return node
