"""Backward loops whose iterations commute run in ascending order.

The backward sweep reverses every loop: `for c in range(d)` becomes
`for c in range(d - 1, -1, -1)`. The reversed order matters only where an iteration's
adjoint reads something a later iteration's adjoint set (a value carried across
iterations). Where nothing is carried, the loop runs upward, as a hand-written adjoint
does, walking memory in the order the forward sweep did (on the Gaussian mixture objective
the triangular loop's adjoint runs 10-15% faster so). A reversed loop runs upward when
everything its body (nested loops included) touches is one of:

- read only in the loop (an array, a name);
- added to only (`icf_bar[k, idx] += e`, `s_bar += e`, never read in the loop): the
  additions commute;
- an array whose every index, read or written, has the loop's counter at the same
  place (`xc_bar[j]`, `Qxc_bar[j]` in the loop over j), where the counter's lowest value is
  a constant at least 0 (numba reads a negative index from the end: with `range(k, n)`
  and k < 0 two iterations may reach one element): each iteration has its own elements;
- a name each iteration sets before reading it, which nothing reads after the loop;
- a counter the forward loop stepped (`idx += 1`, whose mirror `idx = idx - 1` is a
  statement of the reversed loop's own body, with nothing before it naming the counter),
  read only in that loop's body.

Only the order in which sums are added changes (their rounding), as for the sums of
reverse/accumulators.py. A counter then follows its forward course: a copy of the nest that
does nothing but step it finds its value at the nest's entry first (the compiler turns its
innermost loop into one subtraction), each step moves to the end of its body with its sign
changed, and the counter is left at that entry value after the loop, as the reversed loop
left it.

Loops of the serial backward sweep only: not prange loops or anything inside them, not
CUDA code, and not loops with a jump (`break`, `while`) or a call that is not arithmetic.
Not a time loop checkpoint="auto" would checkpoint (noted `time_loop`): checkpointed, its
steps reverse downward block by block, and the recorded gradient must be the same to the bit
(the loops inside it may still run upward, checkpointed or not).
"""
import ast
import copy

from .. import ir
from ..analysis.effects import computes_only
from .dce import reads_of, upward_exposed

_SIMPLE = (ast.Assign, ast.AugAssign, ast.If, ast.For, ast.Pass)


def ascending_loops(stmts, live_after, namegen, forward=()):
    """Rewrite `stmts` (the backward sweep) in place; `live_after` names what is read after
    it, `forward` is the forward sweep (where a counter's start may be found)."""
    record = {}
    upward_exposed(stmts, live_after, record)
    starts = _Starts(list(forward) + list(stmts))
    _visit(stmts, record, (namegen, starts))
    return stmts


class _Starts:
    """Where the forward code sets a counter just before a loop (`idx = d` before
    `for c in range(d):`), with a value that is the same wherever the backward sweep is
    (constants, and names the function assigns once): then the counter's start is that
    value, and no copy of the nest need step it."""

    def __init__(self, stmts):
        self.sets = {}
        self.before = {}        # (origin, loop variable) -> [statement before each loop]
        for block in ir.blocks(stmts):
            for k, x in enumerate(block):
                if isinstance(x, ast.For) and isinstance(x.target, ast.Name) and \
                        not _descending(x):         # (a reversed loop starts nothing)
                    key = (ir.note(x, "origin", None), x.target.id)
                    self.before.setdefault(key, []).append(block[k - 1] if k else None)
        for node in ir.walk(ast.Module(body=list(stmts), type_ignores=[])):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                self.sets[node.id] = self.sets.get(node.id, 0) + 1

    def value(self, loop, counter):
        """The source of the counter's value where `loop`'s forward loop starts, or None."""
        origin = ir.note(loop, "origin", None)
        found = self.before.get((origin, loop.target.id), ())
        if origin is None or not found:
            return None
        texts = set()
        for x in found:
            if not (isinstance(x, ast.Assign) and isinstance(x.targets[0], ast.Name) and
                    x.targets[0].id == counter):
                return None
            if any(isinstance(n, (ast.Call, ast.Subscript, ast.Attribute))
                   for n in ir.walk(x.value)):
                return None
            if any(self.sets.get(n, 0) != 1 for n in reads_of(x.value)):
                return None
            texts.add(ir.unparse(x.value))
        return texts.pop() if len(texts) == 1 else None


def _visit(block, record, namegen):
    k = 0
    while k < len(block):
        s = block[k]
        if isinstance(s, ast.For) and (ir.is_prange_loop(s) or ir.note(s, "parallel", False)):
            k += 1
            continue
        if isinstance(s, ast.For) and _descending(s) and not ir.note(s, "time_loop", False):
            new = _flip(s, record, namegen)
            if new is not None:
                block[k:k + 1] = new
                _visit(s.body, record, namegen)
                k += len(new)
                continue
        for field in ("body", "orelse"):
            inner = getattr(s, field, None)
            if isinstance(inner, list) and inner:
                _visit(inner, record, namegen)
        k += 1


def _descending(loop):
    if not (ir.is_range_loop(loop) and isinstance(loop.target, ast.Name) and not loop.orelse):
        return False
    args = loop.iter.args
    if len(args) != 3 or loop.iter.keywords:
        return False
    st = args[2]
    return (isinstance(st, ast.Constant) and st.value == -1) or (
        isinstance(st, ast.UnaryOp) and isinstance(st.op, ast.USub)
        and isinstance(st.operand, ast.Constant) and st.operand.value == 1)


def _flip(loop, record, namegen):
    """The statements replacing `loop` run upward, or None where its iterations may not
    commute."""
    counters = {}                   # counter name -> (its step statement, the loop it opens)
    nest = []                       # the loops to flip: `loop` and those holding a step
    if not _commutes(loop, record, counters, nest):
        return None
    namegen, starts = namegen
    skeleton, entry = [], {}
    known = {n: starts.value(loop, n) for n in counters}
    if counters and all(known.values()):
        # the forward code set each counter to a value known here
        for n, value in known.items():
            entry[n] = namegen.fresh(f"{n}_entry")
            skeleton.append(ir.parse(f"{entry[n]} = {value}")[0])
        ir.annotate(skeleton[0], comment="the loop below counts from where the forward sweep "
                    "started, upward")
    elif counters:
        found = _skeleton(loop, counters, namegen)
        if found is None:
            return None
        skeleton, entry = found
    for f in nest:
        hi = _plus_one(f.iter.args[0])
        lo = _plus_one(f.iter.args[1])
        args = [hi] if isinstance(lo, ast.Constant) and lo.value == 0 else [lo, hi]
        f.iter = ast.Call(func=ir.name("range"), args=args, keywords=[])
    for n, (step, owner) in counters.items():
        back = copy.deepcopy(step)
        _negate_step(back)
        owner.body = [s for s in owner.body if s is not step] + [back]
    before = skeleton + [ir.assign(n, ir.name(e)) for n, e in entry.items()]
    after = [ir.assign(n, ir.name(e)) for n, e in entry.items()]
    return before + [loop] + after


def _commutes(loop, record, counters, nest):
    """Whether the iterations of `loop` commute (the module docstring); fills `counters`
    with the counters its nest steps and `nest` with the loops that must run upward with
    it."""
    var = loop.target.id
    if var in record.get(id(loop), ()):
        return False                    # the loop's last index is read after it
    stmts = list(_statements(loop.body, loop))
    assigns, loads, arrays = {}, {}, {}
    for s, _owner in stmts:
        if not isinstance(s, _SIMPLE):
            return False
        if isinstance(s, ast.Pass) and any(hasattr(s, "_" + k) for k in ir.NOTES):
            return False                # a marker a later pass expands
        if isinstance(s, ast.For) and not (ir.is_range_loop(s) and isinstance(s.target, ast.Name)
                                           and not s.orelse and not ir.is_prange_loop(s)):
            return False
        for node in ir.walk(s.iter if isinstance(s, ast.For) else
                             s.test if isinstance(s, ast.If) else s):
            if isinstance(node, ast.Call) and not computes_only(node):
                return False
            if isinstance(node, (ast.Lambda, ast.NamedExpr, ast.Starred)):
                return False
        if isinstance(s, ast.For):
            assigns.setdefault(s.target.id, []).append(s)
        elif isinstance(s, (ast.Assign, ast.AugAssign)):
            tgt = s.targets[0] if isinstance(s, ast.Assign) else s.target
            if isinstance(s, ast.Assign) and len(s.targets) != 1:
                return False
            if isinstance(tgt, ast.Name):
                assigns.setdefault(tgt.id, []).append(s)
            elif isinstance(tgt, ast.Subscript) and isinstance(tgt.value, ast.Name):
                arrays.setdefault(tgt.value.id, []).append((tgt, s))
            else:
                return False
    # every read of a name, and every element read (with where it is)
    for s, owner in stmts:
        if isinstance(s, ast.Pass):
            continue
        parts = [s.iter] if isinstance(s, ast.For) else [s.test] if isinstance(s, ast.If) \
            else [s.value] + ([s.targets[0]] if isinstance(s, ast.Assign) else [s.target])
        for part in parts:
            for node in ir.walk(part):
                if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
                    if _shape_of(node.value):
                        continue                # `x.shape[0]`: a number, read only
                    if not isinstance(node.value, ast.Name):
                        return False
                    arrays.setdefault(node.value.id, []).append((node, None))
                elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                    loads.setdefault(node.id, []).append((node, s, owner))
    element_bases = {id(sub.value) for found in arrays.values() for sub, _ in found}
    # arrays: read only, added to only, or each iteration its own elements
    for arr, found in arrays.items():
        writes = [w for _, w in found if w is not None]
        if not writes:
            continue
        bare = [n for n, _, _ in loads.get(arr, ()) if id(n) not in element_bases]
        if bare or arr in assigns:
            return False                # the whole array read or rebound in the loop
        added = all(isinstance(w, ast.AugAssign) and isinstance(w.op, (ast.Add, ast.Sub))
                    for w in writes) and len(writes) == len(found)
        if not added and not (own_elements([sub for sub, _ in found], var)
                              and _from_zero_up(loop)):
            return False
    exposed = upward_exposed(loop.body) - {var}
    live = record.get(id(loop), set())
    for name, sets in assigns.items():
        if name == var:
            return False
        reads = [r for r in loads.get(name, ())]
        if _accumulates(name, sets, reads):
            continue
        step = _counter_step(name, sets)
        if step is not None:
            owner = next(o for s, o in stmts if s is step)
            if not _opens(owner, step, name) or \
                    any(not _inside(r, owner) for _, r, _ in reads if r is not step) or \
                    (name in counters and counters[name][0] is not step):
                return False
            counters[name] = (step, owner)
            continue
        if name in exposed or name in live:     # (`t += e` reads t: both count it)
            return False
    # the loops between this one and each counter's step run upward too
    nest.append(loop)
    for name, (step, owner) in list(counters.items()):
        path = _path(loop, owner)
        for inner in path:
            if inner in nest:
                continue
            if not _descending(inner) or not _commutes(inner, record, counters, nest):
                return False
    return True


def _from_zero_up(loop):
    """Whether the reversed loop's counter takes no negative value: its lowest value is an
    integer constant at least 0. numba reads a negative index from the end, so with
    `range(k, n)` and k < 0 two iterations reach one element, and their adjoints do not
    commute."""
    lowest = ir.constant_int(_plus_one(loop.iter.args[1]))
    return lowest is not None and lowest >= 0


def _shape_of(node):
    return isinstance(node, ast.Attribute) and node.attr in ("shape", "strides") and \
        isinstance(node.value, ast.Name)


def _statements(stmts, owner):
    """(statement, the innermost loop holding it) for every statement, nested ones
    included."""
    for s in stmts:
        yield s, owner
        if isinstance(s, ast.For):
            yield from _statements(s.body, s)
        elif isinstance(s, ast.If):
            yield from _statements(s.body, owner)
            yield from _statements(s.orelse, owner)


def own_elements(subs, var):
    """Whether every index has the loop's counter, bare, at the same place."""
    shapes = {len(ir.index_atoms(s)) for s in subs}
    if len(shapes) != 1:
        return False
    for p in range(shapes.pop()):
        if all(isinstance(ir.index_atoms(s)[p], ast.Name) and ir.index_atoms(s)[p].id == var
               for s in subs):
            return True
    return False


def _accumulates(name, sets, reads):
    """`s += e` / `s = s + e` only, and nothing else reads s in the loop."""
    own = 0
    for s in sets:
        if isinstance(s, ast.For):
            return False
        if isinstance(s, ast.AugAssign) and isinstance(s.op, (ast.Add, ast.Sub)):
            if name in reads_of(s.value):
                return False
        elif isinstance(s, ast.Assign) and isinstance(s.value, ast.BinOp) and \
                isinstance(s.value.op, (ast.Add, ast.Sub)) and \
                isinstance(s.value.left, ast.Name) and s.value.left.id == name and \
                name not in reads_of(s.value.right):
            own += 1
        else:
            return False
    return len(reads) == own


def _counter_step(name, sets):
    """The one statement stepping a counter by a constant (`idx = idx - 1`), or None."""
    if len(sets) != 1 or isinstance(sets[0], ast.For):
        return None
    s = sets[0]
    if isinstance(s, ast.AugAssign):
        ok = isinstance(s.op, (ast.Add, ast.Sub)) and _int_constant(s.value)
    else:
        v = s.value
        ok = isinstance(s, ast.Assign) and isinstance(v, ast.BinOp) and \
            isinstance(v.op, (ast.Add, ast.Sub)) and isinstance(v.left, ast.Name) and \
            v.left.id == name and _int_constant(v.right)
    return s if ok else None


def _int_constant(node):
    return isinstance(node, ast.Constant) and type(node.value) is int


def _opens(loop, step, name):
    """Whether `step` is a statement of the loop's own body with nothing before it naming
    the counter."""
    for s in loop.body:
        if s is step:
            return True
        if any(isinstance(n, ast.Name) and n.id == name for n in ir.walk(s)):
            return False
    return False


def _negate_step(s):
    op = s.op if isinstance(s, ast.AugAssign) else s.value.op
    flipped = ast.Sub() if isinstance(op, ast.Add) else ast.Add()
    if isinstance(s, ast.AugAssign):
        s.op = flipped
    else:
        s.value.op = flipped


def _step_amount(s):
    """The signed amount a step adds (`idx = idx - 1`: -1)."""
    op = s.op if isinstance(s, ast.AugAssign) else s.value.op
    k = (s.value if isinstance(s, ast.AugAssign) else s.value.right).value
    return k if isinstance(op, ast.Add) else -k


def _signed(k, times=None):
    """`- 1`, `+ 2 * t`: adding k (times t) as source."""
    sign = "-" if k < 0 else "+"
    if times is None:
        return f"{sign} {abs(k)}"
    return f"{sign} {times}" if abs(k) == 1 else f"{sign} {abs(k)} * {times}"


def _operand(node):
    text = ir.unparse(node)
    return text if isinstance(node, (ast.Name, ast.Constant)) else f"({text})"


def _inside(stmt, loop):
    return any(s is stmt for s in ir.walk_stmts(loop.body))


def _path(outer, inner):
    """The loops from just inside `outer` down to `inner` (inner included)."""
    def walk(stmts, trail):
        for s in stmts:
            if s is inner:
                return trail + [s]
            if isinstance(s, ast.For):
                found = walk(s.body, trail + [s])
                if found:
                    return found
            elif isinstance(s, ast.If):
                found = walk(s.body, trail) or walk(s.orelse, trail)
                if found:
                    return found
        return None
    return walk(outer.body, []) or []


def _plus_one(node):
    return ir.fold_int(ast.BinOp(left=copy.deepcopy(node), op=ast.Add(),
                                 right=ast.Constant(value=1)))


def _skeleton(loop, counters, namegen):
    """(statements finding each counter's value at the nest's entry, {counter: the name
    holding it}), or None where the nest's bounds need more than names set by plain
    assignments at the top of its loops' bodies."""
    entry = {n: namegen.fresh(f"{n}_entry") for n in counters}
    steps = {id(step): n for n, (step, _) in counters.items()}
    holders = set()
    for _, owner in counters.values():
        holders |= {id(p) for p in _path(loop, owner)}

    made = {}           # id of a skeleton's step -> (the entry name, the amount)

    def slice_body(stmts):
        """The statements of a body that step the counters, or None."""
        items = []
        own = {id(s) for s in stmts}
        for s in stmts:
            if id(s) in steps:
                n, k = steps[id(s)], _step_amount(s)
                step = ir.parse(f"{entry[n]} = {entry[n]} {_signed(k)}")[0]
                made[id(step)] = (entry[n], k)
                items.append(step)
            elif isinstance(s, ast.For) and id(s) in holders:
                inner = slice_loop(s)
                if inner is None:
                    return None
                items.extend(inner)
            else:
                items.append(s)
        # the plain assignments the kept loops' bounds read, found walking back
        needed, kept = set(), []
        for s in reversed(items):
            if id(s) not in own:                        # a step or a sliced loop
                kept.append(s)
                needed |= reads_of(s) - set(entry.values())
            elif isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name) and \
                    s.targets[0].id in needed:
                if any(isinstance(n, (ast.Subscript, ast.Call)) for n in ir.walk(s.value)):
                    return None
                needed = (needed - {s.targets[0].id}) | reads_of(s.value)
                kept.append(copy.deepcopy(s))
            elif _sets_any(s, needed):
                return None
        if needed & set(counters):
            return None
        kept.reverse()
        return kept

    def slice_loop(f):
        body = slice_body(f.body)
        if body is None:
            return None
        if body and all(len(made.get(id(x), ())) == 2 for x in body):
            # only steps: the loop's trip count times each
            hi, lo = (_plus_one(x) for x in f.iter.args[:2])
            trip = f"max({ir.unparse(hi)}, 0)" if isinstance(lo, ast.Constant) and \
                lo.value == 0 else f"max({ir.unparse(hi)} - {_operand(lo)}, 0)"
            out = []
            for x in body:
                e, k = made[id(x)]
                out.append(ir.parse(f"{e} = {e} {_signed(k, trip)}")[0])
                made[id(out[-1])] = (e, k, trip)
            return out
        out = copy.copy(f)
        out.body = body or [ast.Pass()]
        return [out]

    top = slice_loop(loop)
    if top is None or any(reads_of(x) & set(counters) for x in top):
        return None
    if all(id(x) in made and len(made[id(x)]) == 3 for x in top):
        # one loop of steps: `idx_entry = idx - max(trip, 0)`
        start = []
        for x in top:
            e, k, trip = made[id(x)]
            n = next(c for c, name in entry.items() if name == e)
            start.append(ir.parse(f"{e} = {n} {_signed(k, trip)}")[0])
        top = []
    else:
        start = [ir.assign(e, ir.name(n)) for n, e in entry.items()]
    ir.annotate(start[0], comment="where the loop below starts counting: it runs upward, as "
                "the forward sweep did")
    return start + top, entry


def _sets_any(stmt, names):
    """Whether a statement (nested ones included) assigns one of `names`."""
    for node in ir.walk(stmt):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id in names:
            return True
    return False
