"""Loop-invariant code motion for the integer bookkeeping of vectorized code.

Vectorized statements inside a loop compute sizes, broadcast strides and slice bounds, and
allocate their temporary arrays, on every iteration. When those depend only on values the
loop does not change, they move in front of the loop: the sizes are computed once and each
temporary array is allocated once per call, not once per iteration. (Every temporary the
vectorizer allocates is completely written before it is read, so sharing it across
iterations changes no value.)
"""
import ast

from ..analysis.prims import classify
from ..analysis.types import INT
from . import ir


def keep_operands(stmts, kinds, env, namegen):
    """A matrix product (or reshape) whose operand array changes later reads a copy taken at
    the product: its adjoint needs the operand's value at that point."""
    from ..reverse.plan import Layout
    layout = Layout(stmts)
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
        if prim.kind != "arrayop":
            continue
        pos, loops = layout.pos[id(s)], set(layout.loops[id(s)])
        for k, atom in prim.diff_operands():
            later = [w for w in changes.get(atom.id, []) if w is not s and (
                layout.pos[id(w)] > pos or loops & set(layout.loops[id(w)]))]
            if not later or loops:
                continue        # in a loop a copy would change too: the adjoint refuses it
            copy = namegen.fresh(f"{atom.id}_at")
            block = layout.blocks[layout.block_of[id(s)]]
            node = ir.assign(copy, ast.Call(func=ast.Attribute(value=ir.name(atom.id),
                                                               attr="copy", ctx=ast.Load()),
                                            args=[], keywords=[]), getattr(s, "_origin", None))
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
    moved, kept = [], []
    for s in loop.body:
        if _movable(s, kinds, env, temps, sites) and \
                not (set(ir.reads(s)) & changing):
            moved.append(s)
            changing.discard(ir.target_name(s))
        else:
            kept.append(s)
    loop.body = kept or [ast.Pass()]
    loop._hoisted = getattr(loop, "_hoisted", set()) | {ir.target_name(s) for s in moved}
    return moved


def _movable(s, kinds, env, temps, sites):
    if not isinstance(s, ast.Assign) or ir.is_store(s):
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
