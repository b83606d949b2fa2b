"""Stencil adjoints split into one loop per neighbour.

The adjoint of a stencil `un[i] = u[i] + alpha * (u[i - 1] - 2.0 * u[i] + u[i + 1])` adds
into three elements of `u_bar` per point. In one loop, iteration i adds into `u_bar[i - 1]`,
which iteration i - 1 adds into again: a chain of read-modify-writes through memory that
the compiler cannot vectorize. Split into one loop per neighbour,

    for i in range(n - 2, 0, -1):
        u_bar[i + 1] += un_bar[i] * alpha
    for i in range(n - 2, 0, -1):
        u_bar[i - 1] += un_bar[i] * alpha
    for i in range(n - 2, 0, -1):
        u_bar[i] += un_bar[i] * (1 - 2 alpha)
        un_bar[i] = 0.0

each loop writes each element once, and runs vectorized (SIMD): the gather form of the
adjoint, computed one neighbour at a time.

A loop of the backward sweep is split when all of this holds (anything else stays as it is):

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

Additions into one element then happen in another order (one neighbour's terms first), as
floating-point sums in any order are equally exact; nothing else changes. Serial loops of
the CPU backward sweep only (not prange loops or their bodies, not CUDA kernels, where
another thread may own the element).
"""
import ast
import copy

from .. import ir
from .accumulators import serial_range_loops


def split_stencil_loops(stmts, live_out=()):
    """Rewrite `stmts` (the backward sweep) in place and return it. `live_out` names the
    variables read after it."""
    loads = _loads(stmts)
    for name in live_out:
        loads[name] = loads.get(name, 0) + 1
    _visit(stmts, loads)
    return stmts


def _loads(stmts):
    counts = {}
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                counts[n.id] = counts.get(n.id, 0) + 1
    return counts


def _visit(stmts, loads):
    def split(block, k):
        loop = block[k]
        if loop.orelse:
            return k
        inside = _loads([loop])
        loops = _split(loop, {n for n, c in loads.items() if c > inside.get(n, 0)})
        if not loops:
            return k
        block[k:k + 1] = loops
        return k + len(loops) - 1
    serial_range_loops(stmts, split)


def _split(loop, read_outside):
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
        for node in ast.walk(s.value):
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
        for node in ast.walk(s.value):
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
    ops = [n for s in stmts for n in ast.walk(s) if isinstance(n, (ast.BinOp, ast.UnaryOp))]
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
    return {n.id for s in body for n in ast.walk(s.value) if isinstance(n, ast.Name)} | \
        {n.id for s in body for t in [s.target if isinstance(s, ast.AugAssign) else s.targets[0]]
         if isinstance(t, ast.Subscript) for n in ast.walk(t.slice) if isinstance(n, ast.Name)}


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
        for n in ast.walk(s):
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
                and not any(isinstance(n, ast.Subscript) for n in ast.walk(s.value))):
            continue
        name = s.targets[0].id
        operands = {n.id for n in ast.walk(s.value) if isinstance(n, ast.Name)}
        at = out.index(s)
        k = at + 1
        while k < len(out) and not any(
                isinstance(n, ast.Name) and (n.id == name or (n.id in operands and
                                                              isinstance(n.ctx, ast.Store)))
                for n in ast.walk(out[k])) and not (isinstance(out[k], ast.AugAssign)
                                                    and _target(out[k]).id in operands
                                                    if isinstance(_target(out[k]), ast.Name)
                                                    else False):
            k += 1
        if k > at + 1:
            out.insert(k - 1, out.pop(at))
    return out
