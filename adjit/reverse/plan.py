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
loads of arrays that the function never writes. An array allocated in a loop with a shape
the loop changes is replayed as a value is: the block's backward sweep allocates it again
(and its adjoint), in the iteration's shape.
"""
import ast

from .. import ir
from ..analysis.types import INT
from ..rules.table import PAIRED


class Plan:
    """What the planner decided (reverse/planner.py), and all that emission (reverse/emit.py)
    and checkpointing read of its decisions. Statements and loops are named by id()."""

    def __init__(self):
        self.pushed = set()         # assignments whose old value is recorded on the tape
        self.inverted = {}          # site -> (site, the statement that undoes it)
        self.replays = {}           # block -> values replayed at its start
        self.replays_after = {}     # statement -> values replayed after its mirror
        self.kept_loops = set()     # loops whose backward sweep has content
        self.recomputed = set()     # loops computed again per iteration (reverse/recompute.py)

    def without_pushes(self, ids):
        """A copy with these assignments not recorded (emission's view of one loop)."""
        other = Plan()
        other.__dict__.update(self.__dict__)
        other.pushed = {k for k in self.pushed if k not in ids}
        return other


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





class Replayable(dict):
    """{var: stmt} of the values the backward sweep recomputes instead of recording, and in
    `after`, {var: stmt F} for those it recomputes only once F's mirror has restored the
    operands F overwrites (see replayable)."""

    def __init__(self, items=(), after=None):
        super().__init__(items)
        self.after = dict(after or {})

    def only(self, keep):
        """The entries whose var satisfies keep(var, stmt)."""
        return Replayable({v: s for v, s in self.items() if keep(v, s)}, self.after)


REPLAYED_KINDS = ("copy", "op", "compare", "shape", "len", "load", "stop")
"""The primitives a backward sweep may compute again from their operands (replayable)."""


def replayable(stmts, layout, prims_of, recomputed=frozenset(), reallocated=frozenset()):
    """Block-local definitions the backward sweep can recompute, as a Replayable.

    A definition whose operands are stable in its block (or, for sin and cos, assigned in
    it only before the definition: _settled) is recomputed at the start of the block's
    backward sweep. One whose operand the block assigns again only later, after
    every use of the definition (`t = icf[k, idx]; ... t ...; idx = idx + 1`), is
    recomputed right after the mirror of that later assignment F has restored the operand
    (the planner makes F restore it: see Planner._add_replays), where a person writing
    the adjoint by hand would load it again instead of recording it. Allocations of the
    `reallocated` arrays (a shape the loop changes) are replayed as values are: the block's
    backward sweep allocates the array again, with that iteration's shape."""
    final = final_loads(stmts, layout, recomputed)
    reads = {}
    for s in ir.walk_stmts(stmts):
        for v in _forward_reads(s):
            reads.setdefault(v, []).append(s)
    out, after = {}, {}
    for block_id, block in layout.blocks.items():
        if not layout.block_loops[block_id]:
            continue
        assigned_here = ir.assigned(block)
        local = {}
        for s in block:
            if not isinstance(s, ast.Assign) or ir.is_store(s) or ir.note(s, "effect"):
                continue
            v = ir.target_name(s)
            if len(layout.sites.get(v, ())) != 1:
                continue
            users = reads.get(v, [])
            if not all(layout.inside(u, block_id) and layout.pos[id(u)] > layout.pos[id(s)]
                       for u in users):
                continue
            prim = prims_of(s)
            if prim.kind not in REPLAYED_KINDS \
                    and not (prim.kind == "alloc" and v in reallocated):
                continue
            if prim.kind == "load" and id(s) not in final:
                continue
            operands = prim.operands[1:] if prim.kind in ("load", "shape", "len") \
                else prim.operands
            late = [a.id for a in operands if isinstance(a, ast.Name) and a.id not in local
                    and a.id in assigned_here
                    and (a.id in out or not _settled(a.id, s, block_id, layout, prim))]
            if not late:
                local[v] = s
                continue
            # operands replayed late themselves (x[cols[p]]) must be replayed at the same
            # place; the others must be assigned again only after s and its uses
            here = {n for n in late if n in after and layout.block_of[id(out[n])] == block_id}
            restore = _restoring_site(s, [n for n in late if n not in here], users, block,
                                      layout, {after[n] for n in here})
            if restore is not None:     # not in `local`: replayed later than the others
                out[v] = s
                after[v] = restore
        out.update(local)
    return Replayable(out, after)


def _settled(var, s, block_id, layout, prim):
    """Whether s is sin or cos (PAIRED) and the block assigns its argument var only before
    s (`theta = theta + dt * omega; _t = math.sin(theta)`): at the block's end var still
    holds the value s read, so s can be computed again at the start of the block's backward
    sweep, as if var were stable; its own partial (cos(theta)) reads var there anyway.
    (Not for other values: replaying a copy or a comparison there can make the planner
    record its operand at each of its assignments instead of recording it once.) Also an
    allocation's shape (`h = n // 2; w = np.empty(h)`): the array is allocated again there
    or not at all."""
    if prim.kind != "alloc" and (prim.kind != "op" or prim.obj not in PAIRED):
        return False
    pos = layout.pos[id(s)]
    return all(layout.pos[id(x)] < pos for x in layout.sites.get(var, ())
               if layout.inside(x, block_id))


def _restoring_site(s, late, users, block, layout, chained=()):
    """The first statement of `block` after `s` that assigns one of the `late` operands, if
    every such assignment in the block is a top-level statement after `s`, the operands
    are not changed between `s` and it, and every use of `s`'s value comes before it;
    else None. `chained`: the restoring sites of operands replayed late themselves, which
    must be that same statement."""
    pos = layout.pos[id(s)]
    if len(chained) > 1:
        return None
    first = next(iter(chained), None)
    for name in late:
        for site in layout.sites.get(name, ()):
            if not layout.inside(site, id(block)):
                continue
            if layout.block_of[id(site)] != id(block) or layout.pos[id(site)] < pos or \
                    not isinstance(site, ast.Assign):
                return None
            if first is None or layout.pos[id(site)] < layout.pos[id(first)]:
                if chained:
                    return None
                first = site
    if first is None or not all(layout.pos[id(u)] < layout.pos[id(first)] and
                                layout.block_of[id(u)] == id(block) for u in users):
        return None
    return first


def inverse(site, layout, kinds):
    """The statement that undoes `site`, an integer counter's step `v = t` with `t = v + c`
    or `t = v - c` (c an integer constant) just computed in the same block with no other
    assignment of v between: `v = v - c` (or `v + c`). The backward sweep restores v with
    it instead of recording v: integer arithmetic undoes exactly. None for other sites."""
    if not isinstance(site, ast.Assign) or ir.is_store(site) or \
            not isinstance(site.value, ast.Name):
        return None
    v, t = ir.target_name(site), site.value.id
    if kinds.get(v) != INT or len(layout.sites.get(t, ())) != 1:
        return None
    step = layout.sites[t][0]
    if not isinstance(step, ast.Assign) or layout.block_of[id(step)] != layout.block_of[id(site)] \
            or layout.pos[id(step)] > layout.pos[id(site)]:
        return None
    value = step.value
    if not isinstance(value, ast.BinOp) or not isinstance(value.op, (ast.Add, ast.Sub)):
        return None
    left, right = value.left, value.right
    if isinstance(left, ast.Name) and left.id == v and _int_const(right):
        c, op = right.value, value.op
    elif isinstance(value.op, ast.Add) and isinstance(right, ast.Name) and right.id == v \
            and _int_const(left):
        c, op = left.value, value.op
    else:
        return None
    if any(layout.pos[id(step)] < layout.pos[id(x)] < layout.pos[id(site)]
           for x in layout.sites[v]):
        return None
    undo = "-" if isinstance(op, ast.Add) else "+"
    return ir.parse(f"{v} = {v} {undo} {c}")[0]


def _int_const(node):
    return isinstance(node, ast.Constant) and type(node.value) is int


def _forward_reads(s):
    if isinstance(s, ast.Assign):
        return ir.reads(s)
    if isinstance(s, ast.If):
        return ir.atom_names([s.test])
    if isinstance(s, ast.For):
        return ir.atom_names(s.iter.args)
    return []


def reset_windows(stmts, layout, restores_by_undoing):
    """{id(site): (lo, hi)} for assignments inside a loop L whose variable is reset before L
    (`s = 0.0; for c in ...: s += ...`): the value such a site overwrites is one L or the
    reset wrote, alive only from the reset (position lo) to L's end (hi). If no backward
    read falls in that window, the site need not record it: the backward sweep of L leaves
    the variable as L left it, and the reset's own mirror then puts back the value before
    it. `restores_by_undoing(site)` says whether a site's mirror would compute the old value
    from the current one (reverse/plan.inverse) instead of taking it from the tape: such a
    reset cannot stand after unrestored sites, so it gives no window."""
    by_id = {id(s): s for s in ir.walk_stmts(stmts)}
    out = {}
    for var, sites in layout.sites.items():
        for site in sites:
            if not isinstance(site, ast.Assign):
                continue
            for loop_id in reversed(layout.loops[id(site)]):
                loop = by_id[loop_id]
                block = layout.block_of[loop_id]
                before = [x for x in sites if layout.inside(x, block)
                          and layout.pos[id(x)] < layout.pos[loop_id]]
                if not before:
                    continue
                reset = max(before, key=lambda x: layout.pos[id(x)])
                if layout.block_of[id(reset)] == block and isinstance(reset, ast.Assign) \
                        and not restores_by_undoing(reset):
                    out[id(site)] = (layout.pos[id(reset)], layout.end_pos(loop.body))
                break
    return out


def needs_push(layout, site, points, recomputed=frozenset(), window=None):
    """The to-be-recorded test: must the value `site` overwrites be saved first?

    Yes when some backward read of the variable happens at a forward position before the
    site, or shares a loop with it (the next iteration overwrites) other than a loop whose
    iterations the backward sweep computes again one at a time (`recomputed`). Reads inside
    a `for` loop of its own index are served by the reversed loop itself and do not count.
    No when the site has a reset window (reset_windows) and no read falls in it.
    """
    pos = layout.pos[id(site)]
    site_loops = set(layout.loops[id(site)])
    if window is not None and not any(window[0] <= p.pos <= window[1] for p in points):
        return False
    for p in points:
        if isinstance(site, ast.For) and id(site) in p.loops:
            continue
        if p.pos < pos or (p.loops & site_loops) - set(recomputed):
            return True
    return False
