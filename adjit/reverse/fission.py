"""Stencil adjoints in gather form (or split into one loop per neighbour).

The adjoint of a stencil `un[i] = u[i] + alpha * (u[i - 1] - 2.0 * u[i] + u[i + 1])` adds
into three elements of `u_bar` per point. In one loop, iteration i adds into `u_bar[i - 1]`,
which iteration i - 1 adds into again: a chain of read-modify-writes through memory that
the compiler cannot vectorize. The gather form turns it around: each element is updated
once, by the iteration of the same index, from its neighbours' cotangents,

    for i in range(2, n - 2):                       # every neighbour inside the range
        u_bar[i] += un_bar[i + 1] * alpha + (un_bar[i] - 2 alpha un_bar[i]) + un_bar[i - 1] * alpha
    (short loops near both ends test each neighbour: `if 1 <= i + 1 < n - 1:`)
    for i in range(n - 2, 0, -1):                   # resets, sums, everything else
        un_bar[i] = 0.0

A neighbour's term is what the original iteration `i - k` computed: the statements it
needs are copied with the loop variable shifted (`(1.0 + 0.1 * (i - 1))`). Where the
gather form does not apply (an added-into index with the loop variable in two places, or
another index of the same array that changes with the iteration), the loop is split into
one loop per neighbour instead,

    for i in range(n - 2, 0, -1):
        u_bar[i + 1] += un_bar[i] * alpha
    for i in range(n - 2, 0, -1):
        u_bar[i - 1] += un_bar[i] * alpha
    ...

each writing each element once.

A loop of the backward sweep is gathered or split when all of this holds (anything else
stays as it is):

- its body is straight-line: assignments to numbers, `A[...] += e`, `A[...] = e`;
- some array is added into at two or more different indices (the neighbours), each index
  fixed within an iteration, and that array is neither read nor assigned in the loop;
- the numbers it assigns are the iteration's own (assigned before they are read) or sums
  (`s += e`) read nowhere else in the loop, and computing them calls nothing (each split
  loop computes again the numbers its additions read: additions and products only; the
  last loop computes all of them, so they hold after the loop what they held before);
- an array assigned with `=` (an adjoint reset to zero) is assigned at one index that holds
  the loop variable itself, and every read of it in the loop is at that index and comes
  before the assignment: the assignments stay in the last loop, after every read.

Additions into one element then happen in another order (the neighbours' terms summed
first), as floating-point sums in any order are equally exact; nothing else changes.
Serial loops of the CPU backward sweep only (not prange loops or their bodies, not CUDA
kernels, where another thread may own the element).
"""
import ast
import copy

from .. import ir
from .accumulators import serial_range_loops
from .dce import upward_exposed


def split_stencil_loops(stmts, live_out=(), namegen=None):
    """Rewrite `stmts` (the backward sweep) in place and return it. `live_out` names the
    variables read after it. What each loop leaves for later code is what is live after
    it (dce.upward_exposed): a number the loop computes that later code assigns again
    before reading (a copy of the same loop, the next time step's) is not kept."""
    live = {}
    upward_exposed(stmts, frozenset(live_out), live)
    _visit(stmts, live, namegen)
    return stmts


def _visit(stmts, live, namegen):
    def split(block, k):
        loop = block[k]
        if loop.orelse:
            return k
        loops = _split(loop, live.get(id(loop), set()), namegen)
        if not loops:
            return k
        block[k:k + 1] = loops
        return k + len(loops) - 1
    serial_range_loops(stmts, split, time_loops=False)


def _split(loop, read_outside, namegen):
    if not isinstance(loop.target, ast.Name):
        return None
    var = loop.target.id
    body = loop.body
    if not all(_simple(s) for s in body):
        return None
    local = set()           # numbers this iteration assigns before reading
    sums = set()            # numbers summed across iterations (s += e), read nowhere else
    read_arrays = {}        # array -> index dumps read
    stored = {}             # array -> (index dump, position)
    added = {}              # array -> {index dump: [positions]}
    for pos, s in enumerate(body):
        for node in ir.walk(s.value):
            if isinstance(node, ast.Call):
                return None
            if isinstance(node, ast.Subscript):
                if not isinstance(node.value, ast.Name):
                    return None
                read_arrays.setdefault(node.value.id, []).append((ast.dump(node.slice), pos))
            elif isinstance(node, ast.Name) and node.id != var and node.id in sums:
                return None
        target = s.target if isinstance(s, ast.AugAssign) else s.targets[0]
        if isinstance(target, ast.Name):
            if target.id == var:
                return None
            if isinstance(s, ast.AugAssign) and target.id not in local:
                if target.id in _read_names(body):
                    return None
                sums.add(target.id)
            else:
                local.add(target.id)
            continue
        arr = target.value.id
        index = ast.dump(target.slice)
        if any(isinstance(a, ast.Name) and a.id not in local and a.id != var
               and a.id in _assigned(body) for a in ir.index_atoms(target)):
            return None
        if isinstance(s, ast.AugAssign):
            if not isinstance(s.op, (ast.Add, ast.Sub)):
                return None
            added.setdefault(arr, {}).setdefault(index, []).append(pos)
        else:
            if arr in stored or not any(isinstance(a, ast.Name) and a.id == var
                                        for a in ir.index_atoms(target)):
                return None
            stored[arr] = (index, pos)
    # reads of numbers before their assignment in the iteration come from the last one
    for pos, s in enumerate(body):
        for node in ir.walk(s.value):
            if isinstance(node, ast.Name) and node.id in local and \
                    not any(_assigns(x, node.id) for x in body[:pos]):
                return None
    defs = {}
    for x in body:
        if isinstance(x, ast.Assign) and isinstance(x.targets[0], ast.Name):
            defs[x.targets[0].id] = x.value if x.targets[0].id not in defs else None
    neighbours = {arr for arr, idx in added.items()
                  if _stencil([_target(body[ps[0]]) for ps in idx.values()], var, defs)}
    if not neighbours:
        return None
    for arr in added:
        if arr in read_arrays or arr in stored:
            return None
    for arr, (index, pos) in stored.items():
        if any(i != index or p >= pos for i, p in read_arrays.get(arr, ())):
            return None
    # one loop per neighbour; the last one also does the rest (other additions, sums,
    # resets) and computes the numbers read after the loop
    groups = [(arr, index) for arr in sorted(neighbours) for index in added[arr]]
    parts = [_slice(body, set(added[arr][index])) for arr, index in groups[:-1]]
    if not all(_cheap(part) for part in parts):
        return None     # each neighbour's loop would compute too much again
    gathered = _gather(loop, var, body, neighbours, added, local, read_outside, defs, namegen)
    if gathered is not None:
        return gathered
    arr, index = groups[-1]
    rest = {pos for pos, s in enumerate(body)
            if not _in_group(s, groups[:-1]) and not (_assigns_local(s, local)
                                                      and _target(s).id not in read_outside)}
    parts.append(_slice(body, rest))
    out = []
    for part in parts:
        new = ast.For(target=copy.deepcopy(loop.target), iter=copy.deepcopy(loop.iter),
                      body=part, orelse=[], type_comment=None)
        ir.copy_notes(loop, new)
        out.append(new)
    return out


def _gather(loop, var, body, neighbours, added, local, read_outside, defs, namegen):
    """The gather form of a stencil adjoint, or None where it does not apply.

    Each element the neighbours' additions reach is written once, by the iteration that
    owns it, with every neighbour's term added up first:

        for i in range(lo + 1, hi - 1):
            u_bar[i] += un_bar[i + 1] * alpha + (un_bar[i] - ...) + un_bar[i - 1] * alpha

    Near the ends, where some neighbour lies outside the loop's range, a short loop tests
    each term (`if lo <= i - 1 < hi:`). The resets, sums and other additions then run in one
    more loop over the original range, after every read. A term is the neighbour's value as
    the original iteration `i - k` computed it: the statements it needs are copied with
    the loop variable shifted."""
    if namegen is None:
        return None
    bounds = _bounds(loop.iter)
    if bounds is None:
        return None
    rows = {}              # (array, index dump with the loop variable's place blanked) -> ...
    gathered = set()
    for arr in sorted(neighbours):
        for index, positions in added[arr].items():
            target = _target(body[positions[0]])
            atoms = ir.index_atoms(target)
            offsets = [_offset(a, var, defs) for a in atoms]
            at = [p for p, o in enumerate(offsets) if o is not None]
            if len(at) != 1:
                continue
            others = [a for p, a in enumerate(atoms) if p != at[0]]
            if any(isinstance(n, ast.Name) and (n.id == var or n.id in local)
                   for a in others for n in ir.walk(a)):
                continue
            key = (arr, at[0], tuple(ast.dump(a) for a in others))
            rows.setdefault(key, (target, {}))[1].setdefault(offsets[at[0]], []).extend(
                positions)
            gathered.update(positions)
    if not any(len(offs) > 1 for _, offs in rows.values()):
        return None
    acc = namegen.fresh("_g")
    terms = {}              # position -> the statements computing its term into acc
    for key, (target, offs) in rows.items():
        for o, positions in offs.items():
            for pos in positions:
                add = body[pos]
                value = add.value if isinstance(add.op, ast.Add) else \
                    ast.UnaryOp(op=ast.USub(), operand=add.value)
                own = body[:pos] + [ast.AugAssign(target=ast.Name(id=acc, ctx=ast.Store()),
                                                  op=ast.Add(), value=value)]
                term = _slice(own, {pos})
                if not _cheap(term):
                    return None
                terms[pos] = term
    lo, hi, setup = _named_bounds(bounds, namegen)
    out = list(setup)
    for (arr, place, _), (target, offs) in rows.items():
        index = list(ir.index_atoms(target))
        index[place] = ast.Name(id=var, ctx=ast.Load())
        store = ast.Subscript(value=ast.Name(id=arr, ctx=ast.Load()),
                              slice=(ast.Tuple(elts=index, ctx=ast.Load()) if len(index) > 1
                                     else index[0]), ctx=ast.Store())
        low, high = min(offs), max(offs)

        def body_for(guarded):
            stmts = [ir.assign(acc, ir.const(0.0))] if guarded else []
            first = not guarded
            for o in sorted(offs):
                for pos in offs[o]:
                    part = _shifted(terms[pos], var, o)
                    if first:
                        part[-1] = ir.assign(acc, part[-1].value)
                    first = False
                    if guarded:
                        test = _expr(f"{lo} <= {_plus_text(var, -o)} < {hi}")
                        part = [ast.If(test=test, body=part, orelse=[])]
                    stmts += part
            stmts.append(ast.AugAssign(target=copy.deepcopy(store), op=ast.Add(),
                                       value=ast.Name(id=acc, ctx=ast.Load())))
            return stmts

        def range_loop(start, stop, stmts):
            new = ast.For(target=copy.deepcopy(loop.target),
                          iter=_expr(f"range({start}, {stop})"), body=stmts,
                          orelse=[], type_comment=None)
            ir.copy_notes(loop, new)
            return new

        if low == high:
            out.append(range_loop(_plus_text(lo, low), _plus_text(hi, low), body_for(False)))
            continue
        head = range_loop(_plus_text(lo, low),
                          f"min({_plus_text(lo, high)}, {_plus_text(hi, high)})", body_for(True))
        main = range_loop(_plus_text(lo, high), _plus_text(hi, low), body_for(False))
        tail = range_loop(f"max({_plus_text(hi, low)}, {_plus_text(lo, high)})",
                          _plus_text(hi, high), body_for(True))
        info = {"array": arr, "store": ast.dump(store.slice), "lo": lo, "hi": hi,
                "low": low, "high": high}
        for role, part in (("head", head), ("main", main), ("tail", tail)):
            ir.annotate(part, gather=(role, info))
        # where the original range is empty the head loop could still run, adding nothing
        # to elements the original loop never touched: it runs only when the range is not
        out.append(head if _known_below(lo, hi) else
                   ast.If(test=_expr(f"{lo} < {hi}"), body=[head], orelse=[]))
        out += [main, tail]
    rest = {pos for pos, s in enumerate(body)
            if pos not in gathered and not (_assigns_local(s, local)
                                            and _target(s).id not in read_outside)}
    rest_stmts = _slice(body, rest) if rest else []
    if not rest_stmts and var in read_outside:
        return None         # the loop variable's last value comes from the original loop
    if rest_stmts:
        new = ast.For(target=copy.deepcopy(loop.target), iter=copy.deepcopy(loop.iter),
                      body=rest_stmts, orelse=[], type_comment=None)
        ir.copy_notes(loop, new)
        out.append(new)
    return out


def _known_below(lo, hi):
    """Whether lo < hi is known from the source text alone (two integer constants)."""
    try:
        return int(lo) < int(hi)
    except ValueError:
        return False


def _bounds(it):
    """(lo, hi) of the indices `range(...)` visits, in either order, as source text; None
    for another step."""
    if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and
            it.func.id == "range" and not it.keywords and 1 <= len(it.args) <= 3):
        return None
    args = it.args
    if len(args) == 1:
        return "0", ir.unparse(args[0])
    step = args[2] if len(args) == 3 else ast.Constant(value=1)
    if isinstance(step, ast.UnaryOp) and isinstance(step.op, ast.USub) and \
            isinstance(step.operand, ast.Constant):
        step = ast.Constant(value=-step.operand.value)
    if not isinstance(step, ast.Constant) or step.value not in (1, -1):
        return None
    if step.value == 1:
        return ir.unparse(args[0]), ir.unparse(args[1])
    return _plus_text(ir.unparse(args[1]), 1), _plus_text(ir.unparse(args[0]), 1)


def _named_bounds(bounds, namegen):
    """Bounds as names or constants (computed once before the loops), and their
    assignments."""
    out, setup = [], []
    for text in bounds:
        node = _expr(text)
        if isinstance(node, (ast.Name, ast.Constant)):
            out.append(text)
            continue
        name = namegen.fresh("_b")
        setup.append(ir.assign(name, node))
        out.append(name)
    return out[0], out[1], setup


def _plus_text(text, k):
    """Source of `text + k`, folding constants: `n - 1` plus 1 is `n`."""
    if k == 0:
        return text
    return ir.unparse(ir.fold_int(ast.BinOp(left=_expr(text), op=ast.Add(),
                                            right=ast.Constant(value=k))))


def _expr(text):
    return ast.parse(text, mode="eval").body


def _shifted(stmts, var, k):
    """Copies of `stmts` computing what iteration `var - k` computed."""
    if k == 0:
        return [copy.deepcopy(s) for s in stmts]
    shifted = _expr(_plus_text(var, -k))

    class Shift(ast.NodeTransformer):
        def visit_Name(self, node):
            if node.id == var and isinstance(node.ctx, ast.Load):
                return copy.deepcopy(shifted)
            return node
    return [Shift().visit(copy.deepcopy(s)) for s in stmts]


def _offset(atom, var, defs):
    """k when the index `atom` is the loop variable plus the constant k, else None."""
    if isinstance(atom, ast.Name) and atom.id == var:
        return 0
    value = defs.get(atom.id) if isinstance(atom, ast.Name) else None
    if isinstance(value, ast.BinOp) and isinstance(value.op, (ast.Add, ast.Sub)) \
            and isinstance(value.left, ast.Name) and value.left.id == var \
            and isinstance(value.right, ast.Constant) and type(value.right.value) is int:
        return value.right.value if isinstance(value.op, ast.Add) else -value.right.value
    return None


def _stencil(targets, var, defs):
    """Whether two of the indices differ only by the constant added to the loop variable in
    one position (`u_bar[i - 1]`, `u_bar[i + 1]`): the elements one iteration adds into, a
    neighbouring one adds into again."""
    shapes = []
    for t in targets:
        atoms = ir.index_atoms(t)
        shapes.append(([_offset(a, var, defs) for a in atoms], [ast.dump(a) for a in atoms]))
    for n, (off1, dump1) in enumerate(shapes):
        for off2, dump2 in shapes[n + 1:]:
            if len(off1) != len(off2):
                continue
            differ = [p for p in range(len(off1)) if dump1[p] != dump2[p]]
            if len(differ) == 1 and off1[differ[0]] is not None \
                    and off2[differ[0]] is not None:
                return True
    return False


def _cheap(stmts):
    """A few additions and multiplications: no call, division or power."""
    ops = [n for s in stmts for n in ir.walk(s) if isinstance(n, (ast.BinOp, ast.UnaryOp))]
    return len(ops) <= 6 and not any(
        isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Div, ast.Pow, ast.Mod,
                                                       ast.FloorDiv)) for n in ops)


def _target(s):
    return s.target if isinstance(s, ast.AugAssign) else s.targets[0]


def _assigns_local(s, local):
    return isinstance(_target(s), ast.Name) and _target(s).id in local


def _simple(s):
    return isinstance(s, (ast.Assign, ast.AugAssign)) and \
        (not isinstance(s, ast.Assign) or len(s.targets) == 1) and \
        isinstance(s.target if isinstance(s, ast.AugAssign) else s.targets[0],
                   (ast.Name, ast.Subscript))


def _assigns(s, name):
    target = s.target if isinstance(s, ast.AugAssign) else s.targets[0]
    return isinstance(target, ast.Name) and target.id == name


def _assigned(body):
    return {t.id for s in body for t in [s.target if isinstance(s, ast.AugAssign)
                                          else s.targets[0]] if isinstance(t, ast.Name)}


def _read_names(body):
    return {n.id for s in body for n in ir.walk(s.value) if isinstance(n, ast.Name)} | \
        {n.id for s in body for t in [s.target if isinstance(s, ast.AugAssign) else s.targets[0]]
         if isinstance(t, ast.Subscript) for n in ir.walk(t.slice) if isinstance(n, ast.Name)}


def _in_group(s, groups):
    target = s.target if isinstance(s, ast.AugAssign) else s.targets[0]
    return isinstance(s, ast.AugAssign) and isinstance(target, ast.Subscript) and \
        (target.value.id, ast.dump(target.slice)) in groups


def _slice(body, keep):
    """The statements at positions `keep` and the local numbers they read, in order."""
    need = set()
    chosen = set(keep)
    for pos in range(len(body) - 1, -1, -1):
        s = body[pos]
        target = s.target if isinstance(s, ast.AugAssign) else s.targets[0]
        if pos not in chosen and not (isinstance(target, ast.Name) and target.id in need):
            continue
        chosen.add(pos)
        for n in ir.walk(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                need.add(n.id)
        if isinstance(s, ast.AugAssign) and isinstance(target, ast.Name):
            need.add(target.id)
    return _sink([copy.deepcopy(body[pos]) for pos in sorted(chosen)])


def _sink(stmts):
    """Move each assignment of a number computed from numbers alone (`_t3 = i - 1`) down to
    the statement that first reads it, so the two read as one (codegen folds them)."""
    out = list(stmts)
    for s in reversed(stmts):
        if not (isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name)
                and not any(isinstance(n, ast.Subscript) for n in ir.walk(s.value))):
            continue
        name = s.targets[0].id
        operands = {n.id for n in ir.walk(s.value) if isinstance(n, ast.Name)}
        at = out.index(s)
        k = at + 1
        while k < len(out) and not any(
                isinstance(n, ast.Name) and (n.id == name or (n.id in operands and
                                                              isinstance(n.ctx, ast.Store)))
                for n in ir.walk(out[k])) and not (isinstance(out[k], ast.AugAssign)
                                                    and _target(out[k]).id in operands
                                                    if isinstance(_target(out[k]), ast.Name)
                                                    else False):
            k += 1
        if k > at + 1:
            out.insert(k - 1, out.pop(at))
    return out
