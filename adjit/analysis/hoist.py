"""Loop-invariant code motion for the integer bookkeeping of vectorized code.

Vectorized statements inside a loop compute sizes, broadcast strides and slice bounds, and
allocate their temporary arrays, on every iteration. When those depend only on values the
loop does not change, they move in front of the loop: the sizes are computed once and each
temporary array is allocated once per call, not once per iteration. (Every temporary the
vectorizer allocates is completely written before it is read, so sharing it across
iterations changes no value.)
"""
import ast

from .. import ir
from . import effects
from .prims import classify
from .types import INT, is_array


def keep_operands(stmts, kinds, env, namegen):
    """A matrix product (or reshape) whose operand array changes later reads a copy taken at
    the product: its adjoint needs the operand's value at that point."""
    layout = ir.Layout(stmts)
    changes = {}
    for s in ir.walk_stmts(stmts):
        if ir.is_store(s):
            changes.setdefault(s.targets[0].value.id, []).append(s)
        elif isinstance(s, ast.Assign):
            changes.setdefault(ir.target_name(s), []).append(s)
    for s in list(ir.walk_stmts(stmts)):
        if not isinstance(s, ast.Assign) or ir.is_store(s):
            continue
        prim = classify(s.value, env)
        if not prim.reads_operands():
            continue
        pos, loops = layout.pos[id(s)], set(layout.loops[id(s)])
        for k, atom in prim.read_operands():
            if not is_array(kinds.get(atom.id)):
                continue        # a number the backward sweep needs is recorded where it changes
            later = [w for w in changes.get(atom.id, []) if w is not s and (
                layout.pos[id(w)] > pos or loops & set(layout.loops[id(w)]))]
            if not later or loops:
                continue        # in a loop a copy would change too: the adjoint refuses it
            copy = namegen.fresh(f"{atom.id}_at")
            block = layout.blocks[layout.block_of[id(s)]]
            node = ir.assign(copy, ast.Call(func=ast.Attribute(value=ir.name(atom.id),
                                                               attr="copy", ctx=ast.Load()),
                                            args=[], keywords=[]), ir.note(s, "origin", None))
            block.insert(block.index(s), node)
            s.value.args[k] = ir.name(copy)
            kinds[copy] = kinds[atom.id]


def hoist_invariants(stmts, kinds, env, temps):
    """Move invariant integer statements and temporary allocations out of loops, in place."""
    sites = {}
    for s in ir.walk_stmts(stmts):
        if isinstance(s, ast.Assign) and not ir.is_store(s):
            sites[ir.target_name(s)] = sites.get(ir.target_name(s), 0) + 1
        elif isinstance(s, ast.For):
            sites[s.target.id] = sites.get(s.target.id, 0) + 1
    _visit(stmts, kinds, env, temps, sites)


def _visit(block, kinds, env, temps, sites):
    k = 0
    while k < len(block):
        s = block[k]
        if isinstance(s, ast.If):
            _visit(s.body, kinds, env, temps, sites)
            _visit(s.orelse, kinds, env, temps, sites)
        elif isinstance(s, (ast.For, ast.While)):
            _visit(s.body, kinds, env, temps, sites)
            moved = _hoist_from(s, kinds, env, temps, sites)
            block[k:k] = moved
            k += len(moved)
        k += 1


def _hoist_from(loop, kinds, env, temps, sites):
    changing = ir.assigned(loop.body)
    if isinstance(loop, ast.For):
        changing.add(loop.target.id)
    moved = []
    loop.body = _hoist_block(loop.body, kinds, env, temps, sites, changing, moved)
    ir.annotate(loop, hoisted=ir.note(loop, "hoisted", set()) | {ir.target_name(s) for s in moved})
    return moved


def _hoist_block(block, kinds, env, temps, sites, changing, moved, branch=False):
    """The block without its movable statements (appended to `moved`), looking into the
    branches of its `if`s too (the phases of a double-buffered loop). From a branch only
    what cannot raise moves (not a broadcast check, which raises for shapes that the branch,
    never taken, would never combine)."""
    kept = []
    for s in block:
        if _movable(s, kinds, env, temps, sites) and \
                not (set(ir.reads(s)) & changing) and not (branch and _may_raise(s, env)):
            moved.append(s)
            changing.discard(ir.target_name(s))
            continue
        if isinstance(s, ast.If):
            s.body = _hoist_block(s.body, kinds, env, temps, sites, changing, moved, True)
            s.orelse = _hoist_block(s.orelse, kinds, env, temps, sites, changing, moved, True)
        kept.append(s)
    return kept or [ast.Pass()]


def _movable(s, kinds, env, temps, sites):
    if not isinstance(s, ast.Assign) or ir.is_store(s) or ir.note(s, "effect") or \
            effects.kept_call(s):
        return False
    target = ir.target_name(s)
    if sites.get(target) != 1:
        return False
    prim = classify(s.value, env)
    if target in temps and prim.kind == "alloc":
        return True
    if kinds.get(target) != INT:
        return False
    # integer arithmetic and the vec.* size helpers; // and % could raise for a zero
    # divisor on a path the loop never takes
    return prim.kind in ("shape", "len") or (
        prim.kind == "op" and not isinstance(getattr(s.value, "op", None),
                                             (ast.FloorDiv, ast.Mod, ast.Div, ast.Pow)))


_SAFE_HELPERS = ("slice_start", "stride")


def _may_raise(s, env):
    """Whether a movable statement could raise where its branch would not have run: calls
    other than the slice and stride helpers (vec.bcast checks shapes; vec.slice_len raises
    for a step that is not a nonzero constant)."""
    value = s.value
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and
            func.value.id == "vec"):
        return True
    if func.attr == "slice_len":       # raises only for a zero step
        step = value.args[3]
        return not (isinstance(step, ast.Constant) and step.value != 0)
    return func.attr not in _SAFE_HELPERS
