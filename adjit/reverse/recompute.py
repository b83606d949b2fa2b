"""Loops whose iterations the backward sweep computes again instead of recording.

A hand-written adjoint of a loop over data points (a likelihood, a pairwise energy) keeps
nothing from the forward sweep: for each point, in reverse, it computes the point's forward
values again and then their adjoints. adjit does the same for a loop whose iterations are
independent, where recording would fill the tape with values every iteration overwrites
(ADBench's mixture model taped n K d^2 values). The backward sweep of such a loop runs, for
each iteration, the iteration's recording forward (its body with the pushes that only the
iteration itself needs) and then its adjoint: the tape holds one iteration at a time, and
the planner does not record a value for the sake of a later iteration.

An iteration can be computed again when what it reads is what it read the first time:

* scalars it reads before assigning are either defined outside the loop (the planner keeps
  them for the backward sweep as it keeps any value the backward sweep reads) or additive
  reductions (`s = s + e`, which the backward sweep neither reads nor needs);
* arrays it reads are written nowhere after the loop starts (and in no loop around it), or
  are its own: allocated in the iteration, written only at the iteration's index and never
  read in the loop, or buffers the iteration fills completely before reading them
  (`for j in range(d): xc[j] = ...` with `xc = np.empty(d)`);
* no value it assigns is recorded for code outside it (code before the loop would see what
  the backward sweep of the loop left, not what the forward sweep did): the planner checks
  this on its plan and plans again without the loop otherwise; it does not leave early.

Loops are chosen only where the ordinary plan records values inside them (recomputing a
loop that records nothing would only add work), and not where everything it records is a
value costly to compute (exp, tanh, log: the registry's cost): reading a recorded value
back costs less than calling the function again (a softmax's exp loop: its gradient took
1.8 times the forward computed again, 1.2 times recorded). Not in CUDA code; in
checkpointed functions only top-level loops and the loops inside them (planner
`_outside_checkpoints`), which checkpointing then leaves alone.
"""
import ast

from .. import ir
from ..analysis import effects
from ..analysis.types import is_array
from .dce import upward_exposed

_ALLOCATORS = {"empty", "zeros", "ones", "full"}


def independent_loops(stmts, layout, kinds, joined=frozenset()):
    """Ids of the for loops whose iterations can be computed again (see the module).
    `joined`: arrays a path of an `if` (or a helper's `return`) keeps for the copy after it,
    read there only where that path ran (normalize/joins.py): never carried."""
    writes = _writes(stmts)
    return {id(loop) for loop in ir.walk_stmts(stmts)
            if isinstance(loop, ast.For) and
            _independent(loop, writes, layout, kinds, joined) is None}


def why_dependent(stmts, layout, kinds, loop, joined=frozenset()):
    """Why the iterations of `loop` cannot be computed again (a phrase), or None."""
    if not isinstance(loop, ast.For):
        return "it is a while loop"
    return _independent(loop, _writes(stmts), layout, kinds, joined)


def _writes(stmts):
    """Array or name -> the assignments of it (element stores included)."""
    writes = {}
    for s in ir.walk_stmts(stmts):
        if isinstance(s, ast.Assign):
            arr = s.targets[0].value.id if ir.is_store(s) else ir.target_name(s)
            writes.setdefault(arr, []).append(s)
    return writes


def _independent(loop, writes, layout, kinds, joined=frozenset()):
    """None if the loop's iterations can be computed again, else why not."""
    body = loop.body
    inner = list(ir.walk_stmts(body))
    if leaves_early(body):
        return "it leaves early"
    effect = effects.first(body)
    if effect is not None:
        return f"it makes a call that must run once ({effects.of(effect)})"
    start = layout.pos[id(loop)]
    assigned = ir.assigned(body)
    # scalars carried from one iteration to the next: additive reductions only
    carried = (upward_exposed(body) & assigned) - {loop.target.id} - set(joined)
    for name in carried:
        if is_array(kinds.get(name)) or not _additive_reduction(name, inner):
            return f"`{name}` carries a value from one iteration to the next"
    # (scalars the loop assigns that code outside it needs from the forward sweep: the
    # planner's check, see Planner._plan_recomputed)
    # arrays
    loop_ids = set(layout.loops[id(loop)])
    stored = {s.targets[0].value.id for s in inner if ir.is_store(s)}
    read = set()
    for s in inner:
        read |= {n for n in _reads(s) if is_array(kinds.get(n))}
    for arr in read - stored - assigned:
        for w in writes.get(arr, ()):
            if layout.pos[id(w)] >= start or set(layout.loops[id(w)]) & loop_ids:
                return f"`{arr}` changes while the loop runs"
    for arr in stored - assigned:
        if not (_own_write_only(arr, loop, inner) or _buffer(arr, body, layout, kinds)):
            return f"iterations share the array `{arr}`"
    return None


def filled_buffers(loop, layout, kinds):
    """The arrays every iteration of `loop` fills before reading them (_buffer): an
    iteration computed again leaves in them nothing an earlier one wrote."""
    stored = ir.stored_names(loop.body)
    return frozenset(a for a in stored - ir.assigned(loop.body)
                     if _buffer(a, loop.body, layout, kinds))


def _reads(s):
    """Names a statement (not its nested blocks) reads, arrays of element stores included."""
    parts = [s.test] if isinstance(s, (ast.If, ast.While)) else \
        [s.iter] if isinstance(s, ast.For) else [s.value] if isinstance(s, ast.Assign) else [s]
    names = {n.id for p in parts for n in ir.walk(p) if isinstance(n, ast.Name)}
    if isinstance(s, ast.Assign) and ir.is_store(s):
        names |= {n.id for n in ir.walk(s.targets[0].slice) if isinstance(n, ast.Name)}
    return names


def leaves_early(body):
    """Whether a loop body has a `break`, `continue` or `return` of its own (not of a loop
    nested in it)."""
    return any(isinstance(s, (ast.Break, ast.Continue, ast.Return)) and
               not _in_inner_loop(body, s) for s in ir.walk_stmts(body))


def _in_inner_loop(body, target):
    for s in body:
        if isinstance(s, (ast.For, ast.While)) and any(t is target for t in ir.walk_stmts(s.body)):
            return True
        if isinstance(s, ast.If) and (_in_inner_loop(s.body, target) or
                                      _in_inner_loop(s.orelse, target)):
            return True
    return False


def _additive_reduction(name, inner):
    """Every statement touching `name` is `name = name +/- e`, or `t = name +/- e` followed
    by `name = t` with t used nowhere else; e never reads name (so nothing else reads it)."""
    users = [s for s in inner if name in _reads(s) or (
        isinstance(s, ast.Assign) and not ir.is_store(s) and ir.target_name(s) == name)]
    if any(not isinstance(s, ast.Assign) or ir.is_store(s) for s in users):
        return False
    temps = {s.value.id for s in users
             if ir.target_name(s) == name and isinstance(s.value, ast.Name)}
    for s in users:
        target, v = ir.target_name(s), s.value
        if target == name and isinstance(v, ast.Name):
            continue                    # name = t
        if not _adds_to(v, name) or (target != name and target not in temps):
            return False                # (t = name + 1.0 with t used elsewhere: a read)
    for temp in temps:
        defs = [s for s in inner if isinstance(s, ast.Assign) and not ir.is_store(s)
                and ir.target_name(s) == temp]
        uses = [s for s in inner if temp in _reads(s)]
        if len(defs) != 1 or len(uses) != 1 or not _adds_to(defs[0].value, name):
            return False
    return True


def _adds_to(v, name):
    return isinstance(v, ast.BinOp) and isinstance(v.op, (ast.Add, ast.Sub)) and \
        isinstance(v.left, ast.Name) and v.left.id == name and \
        name not in {n.id for n in ir.walk(v.right) if isinstance(n, ast.Name)}


def _own_write_only(arr, loop, inner):
    """Written only at the iteration's own index (first index the loop variable), with
    plain stores, and not read in the loop."""
    var = loop.target.id
    for s in inner:
        if ir.is_store(s) and s.targets[0].value.id == arr:
            index = s.targets[0].slice
            first = index.elts[0] if isinstance(index, ast.Tuple) and index.elts else index
            if not (isinstance(first, ast.Name) and first.id == var):
                return False
            if arr in {n.id for n in ir.walk(s.value) if isinstance(n, ast.Name)}:
                return False
        elif arr in _reads(s):
            return False
    return True


def _buffer(arr, body, layout, kinds):
    """A 1-D array every iteration fills completely before it reads it: a loop
    `for j in range(n)` storing arr[j] first thing (unconditionally), arr allocated with
    length n; reads before that loop ends only of arr[j] after that store."""
    sites = layout.sites.get(arr, [])
    if len(sites) != 1 or not isinstance(sites[0], ast.Assign):
        return False
    alloc = sites[0].value
    if not (isinstance(alloc, ast.Call) and isinstance(alloc.func, ast.Attribute) and
            _allocator(alloc.func.attr) and alloc.args and
            isinstance(alloc.args[0], (ast.Name, ast.Constant)) and kinds.get(arr) is not None):
        return False
    length = alloc.args[0]
    if isinstance(length, ast.Name) and len(layout.sites.get(length.id, [])) > 1:
        return False
    return _filled_before_read(arr, length, body, False)


def _allocator(attr):
    """Whether `vec.<attr>(n)` allocates n elements: np.empty and the like, and adjit's
    typed ones (`vec.empty_bool(n)`, `vec.zeros_int64(n)`: a mask or an index array
    hoisted out of the loop), not those shaped like another array (`zeros_like(x)`)."""
    kind, _, dtype = attr.partition("_")
    return kind in _ALLOCATORS and dtype not in ("like", "as")


def _filled_before_read(arr, length, stmts, filled):
    """Walk a block in order: every read of arr comes after a filling loop (or is arr[j]
    after the store inside it). Returns whether all reads were so."""
    for s in stmts:
        if isinstance(s, ast.For):
            if not filled and _fills(s, arr, length):
                store_seen = False
                for x in s.body:
                    if not store_seen:
                        if ir.is_store(x) and x.targets[0].value.id == arr:
                            store_seen = True
                            if arr in {n.id for n in ir.walk(x.value) if isinstance(n, ast.Name)}:
                                return False
                            continue
                        if any(arr in _reads(y) for y in ir.walk_stmts([x])):
                            return False
                        continue
                    for y in ir.walk_stmts([x]):
                        if arr in _reads(y) and not _at(y, arr, s.target.id):
                            return False
                filled = True
                continue
            if arr in _reads(s) or not _filled_before_read(arr, length, s.body, filled):
                return False
        elif isinstance(s, (ast.If, ast.While)):
            if (arr in _reads(s) and not filled) or \
                    not _filled_before_read(arr, length, s.body, filled) or \
                    not _filled_before_read(arr, length, s.orelse, filled):
                return False
        elif arr in _reads(s) and not filled:
            return False
    return True


def _fills(loop, arr, length):
    it = loop.iter
    if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"):
        return False
    args = it.args
    if len(args) == 2 and isinstance(args[0], ast.Constant) and args[0].value == 0:
        args = args[1:]
    if not (len(args) == 1 and ast.dump(args[0]) == ast.dump(length)):
        return False
    for x in loop.body:     # the first store to arr at the top level of the body
        if ir.is_store(x) and x.targets[0].value.id == arr:
            index = x.targets[0].slice
            return isinstance(index, ast.Name) and index.id == loop.target.id
    return False


def _at(s, arr, var):
    """Whether every mention of arr in a simple statement is arr[var] (a load or a store)."""
    if not isinstance(s, ast.Assign):
        return False
    at = {id(n.value) for n in ir.walk(s) if isinstance(n, ast.Subscript) and
          isinstance(n.value, ast.Name) and n.value.id == arr and
          isinstance(n.slice, ast.Name) and n.slice.id == var}
    return all(id(n) in at for n in ir.walk(s) if isinstance(n, ast.Name) and n.id == arr)
