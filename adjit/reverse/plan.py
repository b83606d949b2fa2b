"""Where each statement sits, and what the backward sweep needs from the forward sweep.

The backward sweep reads primal values: operands of nonlinear partials, branch conditions,
loop bounds, array indices. Each such value is obtained in one of three ways, cheapest first:

* kept: its variable is assigned once, outside any loop, so its value is still there;
* replayed: it is a block-local value inside a loop (assigned once, at the top of the block,
  used only later in that block) computed from values stable in the block, so the backward
  sweep of the block recomputes it, as a person writing an adjoint by hand would;
* recorded: anything else is pushed on a tape just before each assignment that overwrites a
  value still needed (the to-be-recorded analysis) and popped back at the mirror point.

Arrays are never recorded: the backward sweep reads array elements only through replayed
loads of arrays that the function never writes.
"""
import ast

from .. import ir


class NeedPoint:
    """A place in the backward sweep that reads a primal variable, by forward position."""

    def __init__(self, pos, loops):
        self.pos = pos
        self.loops = set(loops)


def final_loads(stmts, layout, recomputed=frozenset()):
    """Ids of array loads that read an element's final value: no store to that array, and
    no assignment of a new array to its name (an allocation or copy inside a loop), comes
    later in the program or shares a loop with the load. The backward sweep, which never
    restores arrays, may read those elements again. Loops whose iterations the backward
    sweep computes again (`recomputed`) do not count as shared: the backward sweep of an
    iteration sees the arrays as that iteration left them. Nor does a store earlier in the
    same loop body at the same index, the loop's own variable (`y[j] = ...; t = y[j]`):
    no other iteration writes that element."""
    stores = {}
    targets = {}
    for s in ir.walk_stmts(stmts):
        if ir.is_store(s):
            stores.setdefault(s.targets[0].value.id, []).append(s)
        elif isinstance(s, ast.For):
            targets[id(s)] = s.target.id
    recomputed = set(recomputed)

    def earlier_in_iteration(w, s, loops):
        """w stores the element s loads, before it in s's innermost loop's body, at that
        loop's variable, and shares no other loop with s that could store it again."""
        inner = layout.loops[id(s)][-1] if layout.loops[id(s)] else None
        index = s.value.slice
        return inner is not None and layout.block_of[id(w)] == layout.block_of[id(s)] and \
            layout.pos[id(w)] < layout.pos[id(s)] and isinstance(index, ast.Name) and \
            index.id == targets.get(inner) and \
            ast.dump(w.targets[0].slice) == ast.dump(index) and \
            (loops & set(layout.loops[id(w)])) - recomputed == {inner}

    out = set()
    for s in ir.walk_stmts(stmts):
        if isinstance(s, ast.Assign) and not ir.is_store(s) and \
                isinstance(s.value, ast.Subscript) and isinstance(s.value.value, ast.Name):
            pos, loops = layout.pos[id(s)], set(layout.loops[id(s)])
            arr = s.value.value.id
            if all((layout.pos[id(w)] < pos and not (loops & set(layout.loops[id(w)])) -
                    recomputed) or (ir.is_store(w) and earlier_in_iteration(w, s, loops))
                   for w in stores.get(arr, []) + layout.sites.get(arr, [])):
                out.add(id(s))
    return out





def replayable(stmts, layout, prims_of, recomputed=frozenset()):
    """Block-local definitions the backward sweep can recompute, as {var: stmt}."""
    final = final_loads(stmts, layout, recomputed)
    reads = {}
    for s in ir.walk_stmts(stmts):
        for v in _forward_reads(s):
            reads.setdefault(v, []).append(s)
    out = {}
    for block_id, block in layout.blocks.items():
        if not layout.block_loops[block_id]:
            continue
        assigned_here = ir.assigned(block)
        local = {}
        for s in block:
            if not isinstance(s, ast.Assign) or ir.is_store(s):
                continue
            v = ir.target_name(s)
            if len(layout.sites.get(v, ())) != 1:
                continue
            users = reads.get(v, [])
            if not all(layout.inside(u, block_id) and layout.pos[id(u)] > layout.pos[id(s)]
                       for u in users):
                continue
            prim = prims_of(s)
            if prim.kind not in ("copy", "op", "compare", "shape", "len", "load", "stop"):
                continue
            if prim.kind == "load" and id(s) not in final:
                continue
            operands = prim.operands[1:] if prim.kind in ("load", "shape", "len") \
                else prim.operands
            if all(not isinstance(a, ast.Name) or a.id in local or a.id not in assigned_here
                   for a in operands):
                local[v] = s
        out.update(local)
    return out


def _forward_reads(s):
    if isinstance(s, ast.Assign):
        return ir.reads(s)
    if isinstance(s, ast.If):
        return ir.atom_names([s.test])
    if isinstance(s, ast.For):
        return ir.atom_names(s.iter.args)
    return []


def needs_push(layout, site, points, recomputed=frozenset()):
    """The to-be-recorded test: must the value `site` overwrites be saved first?

    Yes when some backward read of the variable happens at a forward position before the
    site, or shares a loop with it (the next iteration overwrites) other than a loop whose
    iterations the backward sweep computes again one at a time (`recomputed`). Reads inside
    a `for` loop of its own index are served by the reversed loop itself and do not count.
    """
    pos = layout.pos[id(site)]
    site_loops = set(layout.loops[id(site)])
    for p in points:
        if isinstance(site, ast.For) and id(site) in p.loops:
            continue
        if p.pos < pos or (p.loops & site_loops) - set(recomputed):
            return True
    return False
