"""Adjoint resets that the next write makes unnecessary.

The adjoint of `u[i] = un[i]` reads `u_bar[i]`, sets it to zero and adds it into
`un_bar[i]`; the adjoint of a loop that assigns `un[i]` ends with `un_bar[i] = 0.0`. A time
step's backward sweep is then "zero a range, then add into the same range":

    for t in range(steps - 1, -1, -1):
        for i in range(1, n - 1):          # copy-back's adjoint
            _t13_bar = u_bar[i]
            u_bar[i] = 0.0
            un_bar[i] += _t13_bar
        ... the stencil's adjoint: reads un_bar, adds into u_bar[0 .. n - 1] ...
        for i in range(1, n - 1):
            un_bar[i] = 0.0

Adding into an element known to be zero is assigning it, and a zero that the next write
replaces before anything reads it need not be stored. Three rewrites:

- within a statement list, a loop that resets `X[i]` (its last use of X) followed, with
  nothing between naming X, by a loop over the same range that adds into `X[i]` once per
  iteration and names X nowhere else: the addition becomes an assignment and the reset
  goes. A stencil adjoint in gather form (reverse/fission.py) counts as such a loop when
  its elements cover the range: its middle loop assigns, its end loops assign inside the
  range and add outside it.
- around a loop (the time loop above): the last thing its body does to X is such a reset
  and the first is such an addition, over the same range. The addition assigns; the reset
  goes; X's range then holds the last step's values after the loop instead of zeros, so
  where X is read after the loop one reset runs there. The first iteration must still add
  (X holds what came before the loop): where X is a fresh np.zeros_like with nothing
  between its allocation and the loop naming it, assigning is the same; elsewhere the
  first iteration runs the adding loop, the others the assigning one.

- an adjoint array allocated zeroed whose first use is a loop at the backward sweep's top
  level adding once into each of its elements, over its whole length (Horner's
  `c_bar[k] += p_bar`): it is allocated empty (`np.empty_like`) and the loop assigns.

- an adjoint array allocated zeroed whose first use is a statement at the backward sweep's
  top level adding a new array in exactly its shape (`h_bar += vec.mm_nt(_a2_bar, W2)`: the
  terms of matrix products, inverses, Cholesky factors; their registry entries say so,
  ArrayRule.exact, and reverse/adjoint.py notes the statement `whole`), with nothing
  between the allocation and it assigning the operand (which could change shape): the term
  is assigned (`h_bar = vec.mm_nt(_a2_bar, W2)`) and the allocation goes; no zeros written,
  no second pass over the array (9% of an MLP's gradient). Only where every adjoint and
  every term has one dtype (all floats float64, none complex: a float32 operand's adjoint
  stays float32, as adding into its zeros keeps it).

"The same range" means bounds with the same value: the same text, or names the function
assigns once, outside every loop and branch, from the same expression (`_t1 = n - 1` and
`_t12 = n - 1`), read only from such names and parameters it never assigns. Loops with
`break`, `continue` or `return` are left alone. Serial loops of the CPU backward sweep only
(not prange loops or their bodies, not CUDA code). Values are unchanged but for the sign of
a zero (0.0 + -0.0 is 0.0; an assignment keeps -0.0).
"""
import ast
import copy

from .. import ir
from .accumulators import serial_range_loops
from .dce import upward_exposed
from .fission import _bounds

_JUMPS = (ast.Break, ast.Continue, ast.Return, ast.While)


def drop_resets(stmts, array_bars, live_after, namegen, before=(), one_dtype=False):
    """Rewrite `stmts` (the backward sweep) in place. `array_bars` names the adjoint arrays,
    `live_after` what is read after the sweep, `before` the function's statements ahead of
    it (its forward sweep, where adjoint arrays are allocated), `one_dtype` whether all the
    program's floats are float64 and none complex (whole terms are then assigned). Returns
    the allocations of `before` that go (the caller removes them from their lists)."""
    gone = assign_whole(list(before), stmts) if one_dtype else []
    values = _Values(list(before) + list(stmts))
    bars = {x for x in array_bars if values.stores.get(x, 0) == 1}
    if not bars:
        return gone
    for block in list(ir.blocks(stmts)):
        _within(block, bars, values)
    record = {}
    upward_exposed(stmts, live_after, record)
    fresh = _fresh_at_top(list(before), stmts, bars)
    _around(stmts, bars, values, record, namegen, fresh)
    _filled_once(stmts, list(before), values, fresh)
    _drop_empty(stmts, live_after)
    return gone


def assign_whole(before, stmts):
    """An adjoint array allocated zeroed at the top level (`h_bar = np.zeros_like(h)`, in
    `before`) whose first use is a top-level statement of the backward sweep `stmts` adding
    a whole new array in h's shape into it (noted `whole`, the term not reading h_bar), with
    no statement between assigning h: the addition becomes an assignment, in place. Returns
    the allocations that go."""
    wholes = {}
    for s in stmts:
        like = ir.note(s, "whole")
        if like is not None and isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name) \
                and s.target.id not in wholes and not _touches(s.value, s.target.id):
            wholes[s.target.id] = (s, like)
    if not wholes:
        return []
    whole = before + list(stmts)
    gone = []
    for x, first in _fresh_at_top(before, stmts, set(wholes)).items():
        add, like = wholes[x]
        if first is not add:
            continue
        k = next(k for k, s in enumerate(whole) if _allocates(s, x))
        alloc = whole[k].value
        if ir.unparse(alloc.func) != "np.zeros_like" or len(alloc.args) != 1 or \
                alloc.keywords or not isinstance(alloc.args[0], ast.Name) or \
                alloc.args[0].id != like:
            continue
        if any(like in _stores(s) for s in whole[k + 1:whole.index(add)]):
            continue
        stmts[stmts.index(add)] = _assign(add)
        gone.append(whole[k])
    return gone


def _allocates(s, x):
    """Whether `s` is `x = np.zeros_like(...)` or `x = np.zeros(...)` (what _fresh_at_top
    finds)."""
    return isinstance(s, ast.Assign) and len(s.targets) == 1 and \
        isinstance(s.targets[0], ast.Name) and s.targets[0].id == x and \
        isinstance(s.value, ast.Call) and \
        ir.unparse(s.value.func) in ("np.zeros_like", "np.zeros")


def _filled_once(stmts, before, values, fresh):
    """An adjoint array allocated zeroed (`c_bar = np.zeros_like(c)`) whose first use is a
    loop of the backward sweep's top level adding once into each of its elements
    (`for k in range(c.shape[0]): c_bar[k] += e`) is allocated empty and assigned."""
    body_names = {}     # id(loop) -> the names of each statement of its body
    for x, loop in fresh.items():
        if not any(s is loop for s in stmts) or not _range_loop(loop):
            continue
        if id(loop) not in body_names:      # (read once for all the arrays of one loop)
            body_names[id(loop)] = [_names(s) for s in loop.body]
        var = loop.target.id
        index = ast.dump(ast.Name(id=var, ctx=ast.Load()))
        add = _adder(loop, x, index, var, body_names[id(loop)])
        if add is None:
            continue
        lo, hi = _bounds(loop.iter)
        alloc = next((s for s in before + list(stmts) if isinstance(s, ast.Assign) and
                      isinstance(s.targets[0], ast.Name) and s.targets[0].id == x), None)
        call = alloc.value if alloc is not None else None
        if not isinstance(call, ast.Call) or not call.args or call.keywords:
            continue
        func = ir.unparse(call.func)
        if func == "np.zeros_like" and len(call.args) == 1 and \
                isinstance(call.args[0], ast.Name):
            length, empty = f"{call.args[0].id}.shape[0]", "np.empty_like"
        elif func == "np.zeros" and not isinstance(call.args[0], (ast.Tuple, ast.List)):
            length, empty = ir.unparse(call.args[0]), "np.empty"
        else:
            continue
        if not values.same(lo, "0") or not values.same(hi, length):
            continue
        # one index, the whole length: a 1-D array (x[k] of a 2-D one would be a row)
        if func == "np.zeros_like" and not _one_d(call.args[0].id, before + list(stmts)):
            continue
        loop.body[loop.body.index(add)] = _assign(add)
        call.func = ast.parse(empty, mode="eval").body


def _one_d(name, stmts):
    """Whether the code indexes `name` with one index only (a 1-D array), and somewhere."""
    found = False
    for node in ir.walk(ast.Module(body=stmts, type_ignores=[])):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and \
                node.value.id == name:
            if isinstance(node.slice, ast.Tuple):
                return False
            found = True
    return found


def _drop_empty(stmts, live_after):
    """Remove the loops left with nothing to do (whose variable nothing reads after)."""
    record = {}
    upward_exposed(stmts, live_after, record)
    for block in list(ir.blocks(stmts)):
        block[:] = [s for s in block if not (
            _range_loop(s) and all(isinstance(x, ast.Pass) for x in s.body) and
            s.target.id not in record.get(id(s), ()))]


class _Values:
    """Names whose value is one expression for the whole function: assigned once, at the
    top level (outside loops and branches); and names never assigned (parameters)."""

    def __init__(self, stmts):
        self.stores = {}
        for node in ir.walk(ast.Module(body=stmts, type_ignores=[])):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                self.stores[node.id] = self.stores.get(node.id, 0) + 1
        self.defs = {}
        for s in stmts:
            if isinstance(s, ast.Assign) and len(s.targets) == 1 and \
                    isinstance(s.targets[0], ast.Name) and self.stores[s.targets[0].id] == 1:
                self.defs[s.targets[0].id] = s.value

    def canonical(self, text):
        """The dump of `text` with such names replaced by their values (a name whose value
        is no such expression stands for itself), or None where it reads a name whose value
        changes."""
        node = self._canon(ast.parse(text, mode="eval").body, 0)
        return None if node is None else ast.dump(node)

    def _canon(self, node, depth):
        if depth > 20:
            return None
        if isinstance(node, ast.Constant):
            return node
        if isinstance(node, ast.Name):
            if node.id in self.defs:
                value = self._canon(self.defs[node.id], depth + 1)
                return value if value is not None else ast.Name(id=node.id, ctx=ast.Load())
            return ast.Name(id=node.id, ctx=ast.Load()) if node.id not in self.stores else None
        if isinstance(node, ast.BinOp):
            left, right = self._canon(node.left, depth + 1), self._canon(node.right, depth + 1)
            if left is None or right is None:
                return None
            return ast.BinOp(left=left, op=node.op, right=right)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = self._canon(node.operand, depth + 1)
            return None if inner is None else ast.UnaryOp(op=node.op, operand=inner)
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and \
                node.value.attr == "shape" and isinstance(node.value.value, ast.Name) and \
                isinstance(node.slice, ast.Constant) and \
                self._canon(node.value.value, depth + 1) is not None:
            return copy.deepcopy(node)      # an array's shape never changes
        return None

    def same(self, a, b):
        """Whether two bound texts have one value wherever the backward sweep reads them."""
        ca = self.canonical(a)
        return ca is not None and ca == self.canonical(b)


def _at_least_zero(text):
    """Whether the index text is an integer constant >= 0: numba reads a negative index
    from the end, so a range reaching below zero may name one element twice."""
    try:
        value = ast.literal_eval(ir.unparse(ir.fold_int(ast.parse(text, mode="eval").body)))
    except ValueError:
        return False
    return isinstance(value, int) and value >= 0


def _names(node):
    return {n.id for n in ir.walk(node) if isinstance(n, ast.Name)}


def _touches(s, x):
    return x in _names(s)


def _range_loop(s):
    return isinstance(s, ast.For) and isinstance(s.target, ast.Name) and ir.is_range_loop(s) and \
        not ir.is_prange_loop(s) and not s.orelse and _bounds(s.iter) is not None


def _jumps(stmts):
    return any(isinstance(n, _JUMPS) for s in stmts for n in ir.walk(s))


def _own(sub, var, x):
    """Whether `sub` is `x[...]` at an index holding the loop variable."""
    return isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name) and \
        sub.value.id == x and any(isinstance(a, ast.Name) and a.id == var
                                  for a in ir.index_atoms(sub)) and \
        not any(isinstance(a, ast.Slice) for a in ir.index_atoms(sub))


def _reset(loop, x):
    """The statement of `loop` that resets x at the loop's own index, when it runs on every
    iteration and is the loop's last use of x (index and other statements may precede it);
    else None."""
    if not _range_loop(loop) or _jumps(loop.body) or not _at_least_zero(_bounds(loop.iter)[0]):
        return None
    var = loop.target.id
    found = None
    for s in loop.body:
        if found is not None and _touches(s, x):
            return None
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and \
                _own(s.targets[0], var, x) and isinstance(s.value, ast.Constant) and \
                s.value.value == 0.0 and not isinstance(s.value.value, bool):
            found = s
    if found is None:
        return None
    stored = {n.id for s in loop.body for n in ir.walk(s)
              if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    if any(isinstance(a, ast.Name) and a.id != var and a.id in stored
           for a in ir.index_atoms(found.targets[0])) or \
            any(not isinstance(a, (ast.Name, ast.Constant)) for a in ir.index_atoms(found.targets[0])):
        return None
    return found


def _adder(loop, x, index, var, names=None):
    """The statement `x[index] += e` of `loop` when it is the loop's only use of x, on every
    iteration; else None. `names`: the names of each statement of the loop's body, when the
    caller has them."""
    if not _range_loop(loop) or loop.target.id != var:
        return None
    if names is None:
        names = [_names(s) for s in loop.body]
    found = [s for s, held in zip(loop.body, names) if x in held]
    if len(found) != 1:
        return None
    s = found[0]
    if not (isinstance(s, ast.AugAssign) and isinstance(s.op, ast.Add) and
            isinstance(s.target, ast.Subscript) and isinstance(s.target.value, ast.Name) and
            s.target.value.id == x and ast.dump(s.target.slice) == index) or \
            _jumps(loop.body):
        return None
    stored = {n.id for n in ir.walk(loop) if isinstance(n, ast.Name)
              and isinstance(n.ctx, ast.Store)}
    if not (_names(s.target.slice) - {var}) & stored and \
            not _touches(s.value, x) and not _touches(s.target.slice, x):
        return s
    return None


def _assign(add):
    new = ast.Assign(targets=[add.target], value=add.value, lineno=0)
    ir.copy_notes(add, new)
    return new


def _group(block, k, x, index, var, values, bounds):
    """The gather form (reverse/fission.py) starting at block[k], adding into `x[index]`
    and covering `bounds`: ([(loop, its addition)] for its three loops, its description),
    or None."""
    first = block[k]
    head = first.body[0] if isinstance(first, ast.If) and len(first.body) == 1 and \
        not first.orelse else first
    role, info = ir.note(head, "gather", (None, None))
    if role != "head" or info["array"] != x or info["store"] != index or \
            head.target.id != var or not info["low"] <= 0 <= info["high"] or \
            not _at_least_zero(f"{info['lo']} + {info['low']}"):
        return None
    if not (values.same(info["lo"], bounds[0]) and values.same(info["hi"], bounds[1])):
        return None
    if k + 2 >= len(block):
        return None
    main, tail = block[k + 1], block[k + 2]
    for loop, role in ((main, "main"), (tail, "tail")):
        found = ir.note(loop, "gather", (None, None))
        if found[0] != role or found[1] is not info:
            return None
    parts = []
    for loop in (head, main, tail):
        if _jumps(loop.body):
            return None
        found = [s for s in loop.body if _touches(s, x)]
        if len(found) != 1 or not isinstance(found[0], ast.AugAssign) or \
                not isinstance(found[0].op, ast.Add) or \
                ast.dump(found[0].target.slice) != index or _touches(found[0].value, x):
            return None
        parts.append((loop, found[0]))
    return parts, info


def _rewrite_group(parts, info):
    for loop, add in parts:
        pos = loop.body.index(add)
        if ir.note(loop, "gather")[0] == "main":
            loop.body[pos] = _assign(add)       # the middle range lies inside the reset one
        else:
            test = ast.parse(f"{info['lo']} <= {loop.target.id} < {info['hi']}",
                             mode="eval").body
            loop.body[pos] = ast.If(test=test, body=[_assign(copy.deepcopy(add))],
                                    orelse=[add])


def _overwritten(loop, x):
    """Note that the code after `loop` assigns x's elements in the loop's range before it
    reads them (copy_sums may then use them)."""
    ir.annotate(loop, overwritten=ir.note(loop, "overwritten", frozenset()) | {x})


def _remove(loop, stmt):
    loop.body.remove(stmt)
    if not loop.body:
        loop.body.append(ast.Pass())


def _within(block, bars, values):
    """Reset loops followed by loops that add into the same elements, in one list."""
    for k, z in enumerate(block):
        if not _range_loop(z):
            continue
        for x in sorted(_zeroed(z) & bars):
            reset = _reset(z, x)
            if reset is None:
                continue
            var = z.target.id
            index = ast.dump(reset.targets[0].slice)
            bounds = _bounds(z.iter)
            # the next statement naming x, with nothing between assigning what the index reads
            between = set()
            for j in range(k + 1, len(block)):
                s = block[j]
                if _touches(s, x):
                    break
                between |= {n.id for n in ir.walk(s)
                            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            else:
                continue
            if _names(reset.targets[0].slice) - {var} & between:
                continue
            a = block[j]
            add = _adder(a, x, index, var) if isinstance(a, ast.For) else None
            if add is not None and values.same(_bounds(a.iter)[0], bounds[0]) and \
                    values.same(_bounds(a.iter)[1], bounds[1]):
                a.body[a.body.index(add)] = _assign(add)
                _remove(z, reset)
                _overwritten(z, x)
                continue
            found = _group(block, j, x, index, var, values, bounds)
            if found is not None:
                _rewrite_group(*found)
                _remove(z, reset)
                _overwritten(z, x)


def _zeroed(loop):
    """The arrays a statement of the loop's body sets an element of to 0.0 (those `_reset`
    can find), a cheap first test before looking for each adjoint array."""
    return {s.targets[0].value.id for s in loop.body
            if isinstance(s, ast.Assign) and len(s.targets) == 1 and
            isinstance(s.targets[0], ast.Subscript) and isinstance(s.targets[0].value, ast.Name)
            and isinstance(s.value, ast.Constant)}


def _fresh_at_top(before, stmts, bars):
    """{x: statement} for adjoint arrays allocated by np.zeros/np.zeros_like at the
    function's top level with nothing after the allocation naming them up to that top-level
    statement of the backward sweep (the first one naming them)."""
    out = {}
    whole = before + list(stmts)
    names = [_names(s) for s in whole]
    offset = len(before)
    for x in bars:
        alloc = None
        for p, s in enumerate(whole):
            if alloc is None:
                if _allocates(s, x):
                    alloc = p
                elif x in names[p]:
                    break
            elif x in names[p]:
                if p >= offset:
                    out[x] = s
                break
    return out


def _around(stmts, bars, values, record, namegen, fresh):
    def rewrite(block, k):
        loop = block[k]
        if loop.orelse or _jumps(loop.body):
            return k
        before, after = [], []
        # the adjoint arrays each statement of the body names, read once: rewriting one
        # array's statements keeps the positions and the other arrays' names
        names = [_names(s) & bars for s in loop.body]
        for x in sorted(set().union(*names)):
            b, a = _rotate(loop, x, values, record, namegen,
                           block is stmts and fresh.get(x) is loop, names)
            before += b
            after += a
        block[k + 1:k + 1] = after
        block[k:k] = before
        return k + len(before) + len(after)
    serial_range_loops(stmts, rewrite)


def _rotate(loop, x, values, record, namegen, fresh, names):
    """The reset at the end of `loop`'s body and the addition at its start (see the module
    docstring); returns the statements to run before the loop and after it. `names`: the
    adjoint arrays each statement of the body names."""
    body = loop.body
    touching = [p for p, held in enumerate(names) if x in held]
    if len(touching) < 2:
        return [], []
    a, z = body[touching[0]], body[touching[-1]]
    reset = _reset(z, x) if isinstance(z, ast.For) else None
    if reset is None:
        return [], []
    var = z.target.id
    bounds = _bounds(z.iter)
    add = _adder(a, x, ast.dump(reset.targets[0].slice), var)
    if add is None or not (values.same(_bounds(a.iter)[0], bounds[0]) and
                           values.same(_bounds(a.iter)[1], bounds[1])):
        return [], []
    # the index's other atoms and the bounds keep their values across the loop
    stored = {n.id for n in ir.walk(loop) if isinstance(n, ast.Name)
              and isinstance(n.ctx, ast.Store)}
    if (_names(reset.targets[0].slice) - {var}) & stored:
        return [], []
    live = x in record.get(id(loop), ())
    _remove(z, reset)
    after = []
    if live:
        reset_loop = ast.For(target=ast.Name(id=var, ctx=ast.Store()),
                             iter=copy.deepcopy(z.iter), body=[copy.deepcopy(reset)],
                             orelse=[], type_comment=None)
        ir.copy_notes(z, reset_loop)
        after.append(reset_loop)
    if fresh:
        a.body[a.body.index(add)] = _assign(add)
        return [], after
    # the first iteration adds to what x held before the loop; the others assign
    flag = namegen.fresh("_first")
    assigning = copy.deepcopy(a)
    for p, s in enumerate(assigning.body):
        if _touches(s, x):
            assigning.body[p] = _assign(s)
    pos = body.index(a)
    body[pos] = ast.If(test=ast.Name(id=flag, ctx=ast.Load()),
                       body=[a, ir.assign(flag, ast.Constant(value=False))],
                       orelse=[assigning])
    if after:
        after = [ast.If(test=ast.UnaryOp(op=ast.Not(), operand=ast.Name(id=flag, ctx=ast.Load())),
                        body=after, orelse=[])]
    return [ir.assign(flag, ast.Constant(value=True))], after


def copy_sums(stmts, live_after, before=()):
    """A loop copying X into Y (`for i in range(1, n - 1): un_bar[i] = u_bar[i]`, the
    copy-back's adjoint once it assigns) and, later, nothing between writing Y, a sum over
    the same elements of Y (`alpha_bar += dot_range(un_bar, 1, 1, _ftape, _fbase1, 1, ...)`):
    the sum is taken while copying, in one pass (`copy_dot`, runtime/sums.py), where the
    copy was. Where the copy is the assigning branch of a time loop's first-step test
    (drop_resets), the adding branch takes the sum after its loop. Numbers the sum's
    arguments read that are assigned between (`_fbase1 = _fn - ...`) move before the copy
    when what they read is not assigned there. Serial CPU code only."""
    values = _Values(list(before) + list(stmts))
    record = {}
    upward_exposed(stmts, live_after, record)
    for block in list(ir.blocks(stmts)):
        k = 0
        while k < len(block):
            if not _fuse_copy_sum(block, k, values, record):
                k += 1
    return stmts


def _dot_call(s):
    """(total, op, call) of `total += dot_range(...)` / `-=`, else None."""
    if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name) and \
            isinstance(s.op, (ast.Add, ast.Sub)) and isinstance(s.value, ast.Call) and \
            ir.unparse(s.value.func) == "dot_range" and len(s.value.args) == 7 and \
            isinstance(s.value.args[0], ast.Name):
        return s.target.id, s.op, s.value
    return None


def _writes(s, y):
    """Whether `s` (nested statements included) assigns y or one of its elements, or passes
    it to a call (which may write it)."""
    for n in ir.walk(s):
        if isinstance(n, ast.Name) and n.id == y and isinstance(n.ctx, ast.Store):
            return True
        if isinstance(n, (ast.Assign, ast.AugAssign)):
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and \
                        t.value.id == y:
                    return True
        if isinstance(n, ast.Call) and any(isinstance(a, ast.Name) and a.id == y
                                           for a in n.args):
            return True
    return False


def _stores(s):
    return {n.id for n in ir.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _fuse_copy_sum(block, d, values, record):
    found = _dot_call(block[d])
    if found is None:
        return False
    total, op, call = found
    y = call.args[0].id
    # the statement before the sum that last writes y: the copy (or the first-step test)
    c = next((p for p in range(d - 1, -1, -1) if _writes(block[p], y)), None)
    if c is None:
        return False
    site = block[c]
    adding = None
    if isinstance(site, ast.If) and len(site.orelse) == 1 and isinstance(site.orelse[0], ast.For):
        copy_loop, adding = site.orelse[0], site.body
    elif isinstance(site, ast.For):
        copy_loop = site
    else:
        return False
    if not _range_loop(copy_loop) or _jumps(copy_loop.body):
        return False
    pair = _copy_pair(copy_loop)
    if pair is None or pair[1] != y:
        return False
    x = pair[0]
    first = None
    if adding is not None:
        # the first step adds x into y: it adds y into x instead (x's elements in the range
        # are assigned again before they are read), and the copy with the sum follows for
        # every step alike, so each step's sum is taken the same way
        first = next((t for t in adding if isinstance(t, ast.For)), None)
        if x not in ir.note(copy_loop, "overwritten", ()) or first is None or \
                not _range_loop(first) or ast.dump(first.iter) != ast.dump(copy_loop.iter) or \
                first.target.id != copy_loop.target.id or \
                _added_pair(first) != (x, y) or \
                (_stores(first) - {x, y}) & set(record.get(id(first), ())) or \
                any(_touches(t, x) or _touches(t, y) for t in adding if t is not first):
            return False
    # the loop's variable and temporary are not read after it
    if (_stores(copy_loop) - {x, y}) & set(record.get(id(copy_loop), ())):
        return False
    lo, hi = _bounds(copy_loop.iter)
    a0, sa, b, b0, sb, count = call.args[1:]
    if not (isinstance(sa, ast.Constant) and sa.value == 1) or \
            not (isinstance(sb, ast.Constant) and sb.value == 1) or \
            not _at_least_zero(lo) or not values.same(ir.unparse(a0), lo):
        return False
    if not (isinstance(count, ast.Call) and ir.unparse(count.func) == "max" and
            len(count.args) == 2 and ir.unparse(count.args[1]) == "0"):
        return False
    length = ir.unparse(ir.fold_int(ast.parse(f"({hi}) - ({lo})", mode="eval").body))
    if not values.same(ir.unparse(count.args[0]), length):
        return False
    # between: nothing names y or the total; what the sum's arguments read is either left
    # alone or set by a number assignment that can move before the copy
    between = block[c + 1:d]
    if any(_touches(s, total) or _writes(s, y) for s in between):
        return False
    needed = set()
    for arg in (b, b0, sb, count):
        needed |= _names(arg)
    moved = []
    assigned = set(_stores(copy_loop)) | ({n for s in adding for n in _stores(s)}
                                          if adding else set())
    for s in between:
        hit = _stores(s) & needed
        if not hit:
            assigned |= _stores(s)
            continue
        if hit & {n for m in moved for n in _stores(m)} or hit & _names(site):
            return False
        if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and
                isinstance(s.targets[0], ast.Name)) or _names(s.value) & assigned or \
                any(isinstance(n, (ast.Call, ast.Subscript)) and not
                    (isinstance(n, ast.Call) and ir.unparse(n.func) in ("max", "min"))
                    for n in ir.walk(s.value)):
            return False
        moved.append(s)
        assigned |= _stores(s)
    if not isinstance(b, ast.Name) or b.id in assigned:
        return False
    fused = ast.AugAssign(target=ast.Name(id=total, ctx=ast.Store()), op=op, value=ast.Call(
        func=ast.Name(id="copy_dot", ctx=ast.Load()),
        args=[ast.Name(id=y, ctx=ast.Load()), ast.Name(id=x, ctx=ast.Load()),
              ast.parse(lo, mode="eval").body, b, b0, count], keywords=[]))
    ir.copy_notes(block[d], fused, ("origin",))
    sum_stmt = block[d]
    for s in moved + [sum_stmt]:
        block.remove(s)
    c = block.index(site)
    if adding is not None:
        var = first.target.id
        first.body = [ast.AugAssign(
            target=ast.Subscript(value=ast.Name(id=x, ctx=ast.Load()),
                                 slice=ast.Name(id=var, ctx=ast.Load()), ctx=ast.Store()),
            op=ast.Add(), value=ast.Subscript(value=ast.Name(id=y, ctx=ast.Load()),
                                              slice=ast.Name(id=var, ctx=ast.Load()),
                                              ctx=ast.Load()))]
        site.orelse = []
        block[c + 1:c + 1] = [fused]
    else:
        block[c] = fused
    block[c:c] = moved
    return True


def _added_pair(loop):
    """(X, Y) where the loop's body only adds X[i] into Y[i] (directly or through one
    temporary), else None."""
    return _elementwise_pair(loop, ast.AugAssign)


def _copy_pair(loop):
    """(X, Y) where the loop's body only copies X[i] into Y[i] (directly or through one
    temporary), 1-D, else None."""
    return _elementwise_pair(loop, ast.Assign)


def _elementwise_pair(loop, kind):
    """(X, Y) where the loop's body only moves X[i] into Y[i] by a statement of `kind`
    (`Y[i] = X[i]`, or `Y[i] += X[i]` for ast.AugAssign), directly or through one
    temporary; else None."""
    var = loop.target.id
    body = loop.body
    if len(body) == 2 and isinstance(body[0], ast.Assign) and \
            isinstance(body[0].targets[0], ast.Name) and isinstance(body[1], kind) and \
            isinstance(body[1].value, ast.Name) and body[1].value.id == body[0].targets[0].id:
        load, last = body[0].value, body[1]
    elif len(body) == 1 and isinstance(body[0], kind):
        load, last = body[0].value, body[0]
    else:
        return None
    if kind is ast.AugAssign and not isinstance(last.op, ast.Add):
        return None
    store = last.target if kind is ast.AugAssign else last.targets[0]
    for sub in (load, store):
        if not (isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name) and
                isinstance(sub.slice, ast.Name) and sub.slice.id == var):
            return None
    if load.value.id == store.value.id:
        return None
    return load.value.id, store.value.id
