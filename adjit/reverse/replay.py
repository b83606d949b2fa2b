"""CUDA loops whose trip count is known only when they run: iterations replayed, not recorded.

On the CPU a tape grows. A CUDA thread's tape is a `cuda.local.array` of a size fixed when
the code is compiled, so a loop that records values at every iteration and whose number of
iterations is a run-time value (a Newton iteration `while abs(r) > tol`, `for k in
range(n)` with `n` an argument, a block reduction's `while s > 0: s //= 2`) cannot record.
Such a loop (innermost: no loop it contains records with a run-time trip count) is
differentiated by replaying its iterations instead:

* the forward sweep runs it without recording, after keeping the values it starts from
  (the scalars its body reads before assigning them: `_e_x = x`; on the tape instead when
  the loop is inside another loop, whose iterations each start it again);
* the backward sweep, for each iteration `j` in reverse, puts those values back, runs the
  `j` iterations before it again (only the statements that carry values from one iteration
  to the next: no stores, no synchronization, no atomics), runs iteration `j` with its
  pushes (one iteration's worth: a fixed number) and then its adjoint, which pops them.

The backward sweep of an `n`-iteration loop thus runs n (n - 1) / 2 iterations again (of
the statements that carry values only): nothing for a loop that records nothing, a few
dozen for a Newton iteration; a long per-thread loop should have a constant trip count.

A replayed iteration must read what the iteration read in the forward sweep: the arrays
the replayed statements read must not be written in the loop, in a loop around it, or
after it (an AdjitError names the loop otherwise: a value of such an array can be neither
recorded nor read again).
"""
import ast
import copy

from .. import ir
from ..analysis.types import BOOL, FLOAT, INT
from .dce import eliminate_dead, upward_exposed
from .tape import _constant_trips, _unused, static_pushes


def replay_unbounded_loops(forward, backward, tape, kinds, namegen, error, shared=()):
    """Rewrite (in place) the forward and backward sweeps of a bounded (CUDA) tape's program
    so that loops recording with a run-time trip count are replayed (see the module).
    Returns the (float, int) pushes one replayed iteration adds to the tape at most, for the
    tape's size; `error(loop, why)` is the exception for a loop that cannot be replayed
    (codegen/assemble.py unbounded_loop_error)."""
    arrays = {tape.names["f"][0], tape.names["i"][0]}
    tape_names = tape.reserved_names()
    found = []

    def find(block, outer):
        for s in block:
            if isinstance(s, ast.If):
                find(s.body, outer)
                find(s.orelse, outer)
            elif isinstance(s, (ast.For, ast.While)):
                if _constant_trips(s) is None and _records(s.body, arrays):
                    found.append((s, outer))
                else:
                    find(s.body, outer + (s,))
    find(forward, ())
    if not found:
        return 0, 0
    order = list(ir.walk_stmts(forward))
    position = {id(s): k for k, s in enumerate(order)}
    extra = [0, 0]
    loops = {}
    for loop, outer in found:
        if any(isinstance(x, ast.Return) for x in ir.walk_stmts(loop.body)):
            raise error(loop, "return")
        per = static_pushes(loop.body, tape, error)     # (a nested run-time loop: refused)
        extra = [max(extra[0], per[0]), max(extra[1], per[1])]
        inner = list(ir.walk_stmts(loop.body))
        end = position[id(loop)] + len(inner)
        later, changed = set(), set()
        for x in ([loop] + [w for o in outer for w in ir.walk_stmts(o.body)] + order[end + 1:]
                  + inner):
            later |= _stored_arrays(x)
            changed |= ir.assigned([x]) if isinstance(x, (ast.Assign, ast.For)) else set()
        loop_var = loop.target.id if isinstance(loop, ast.For) else None
        # (the values the loop starts from that it, or code after it, changes)
        entry = sorted(v for v in upward_exposed(loop.body) - tape_names - {loop_var}
                       if kinds.get(v) in (FLOAT, INT, BOOL) and v in changed)
        tiles = _refilled(loop, shared, order)
        recording = _side_effect_free(copy.deepcopy(loop.body), arrays | tiles, bool(tiles))
        plain = _without_pushes(copy.deepcopy(loop.body), arrays, tape_names)
        free = _side_effect_free(copy.deepcopy(plain), arrays)
        saved = {v: _unused(namegen, f"{v}_start") for v in entry}
        loops[id(loop)] = (loop, bool(outer), recording, free, saved, later, tiles)
        loop.body = plain or [ast.Pass()]

    def forward_rewrite(block):
        out = []
        for s in block:
            if id(s) in loops:
                loop, enclosed, _, _, saved, _, _ = loops[id(s)]
                for v, e in saved.items():
                    out += tape.push(v, kinds[v], checked=False) if enclosed else \
                        [ir.assign(e, ir.name(v))]
                ir.annotate(s, comment="iterations replayed in the backward sweep (a run-time "
                            "number of them)")
            out.append(s)
        return out
    forward[:] = ir.rewrite_blocks(forward, forward_rewrite)

    def backward_rewrite(block):
        out = []
        for s in block:
            key = ir.note(s, "pkey", None) if isinstance(s, ast.For) else None
            if key not in loops:
                out.append(s)
                continue
            loop, enclosed, recording, free, saved, later, tiles = loops[key]
            if enclosed:
                for v, e in reversed(list(saved.items())):
                    out += tape.pop(e, kinds[v])
            out.append(_replayed(s, loop, recording, free, saved, later, tiles, tape_names,
                                 namegen, error))
            out += [ir.assign(v, ir.name(e)) for v, e in saved.items()]
        return out
    backward[:] = ir.rewrite_blocks(backward, backward_rewrite)
    return tuple(extra)


def _replayed(rev, loop, recording, free, saved, later, tiles, tape_names, namegen, error):
    """The reversed loop `rev` with each iteration's state computed again before its
    adjoint."""
    body = list(rev.body)
    prefix = []
    var = loop.target.id if isinstance(loop, ast.For) else None
    if isinstance(loop, ast.While):
        j = f"{ir.unparse(rev.iter.args[0])} - 1 - {rev.target.id}"
    elif rev.target.id == var:
        j = f"{var} - ({ir.unparse(loop._bounds[0])})"
    else:
        j = rev.target.id
        if body and isinstance(body[0], ast.Assign) and ir.target_name(body[0]) == var:
            prefix, body = body[:1], body[1:]
    rest = body
    taped = eliminate_dead(recording, upward_exposed(rest) | tape_names, set())
    # the values carried from one iteration to the next that the iteration needs, and
    # those they need from the iterations before
    # (a value the iteration's pushes record before its first assignment in the iteration,
    # and which no statement of the iteration reads before that, is recorded only for the
    # iteration before, computed again by its own turn of this loop: its value at the start
    # is the loop's, kept, right for the first iteration and read by no one for the others)
    assigned = ir.assigned(loop.body)
    needs = upward_exposed(taped) & upward_exposed(free) & assigned
    carried = []
    while needs:
        carried = eliminate_dead(copy.deepcopy(free), needs, set())
        more = needs | (upward_exposed(carried) & assigned)
        if more == needs:
            break
        needs = more
    for block, allowed in ((carried, set()), (taped, tiles)):
        read = {n.value.id for x in block for n in ir.walk(x)
                if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load)
                and isinstance(n.value, ast.Name)} - tape_names
        if read & (later - allowed):
            raise error(loop, "reads")
    if tiles:       # (the block's threads are done with the tiles of the iteration after)
        taped = [ast.Expr(value=ir.barrier_call())] + taped
    jn = namegen.fresh("_j")
    kn = namegen.fresh("_r")
    stmts = [ir.assign(v, ir.name(e)) for v, e in saved.items()]
    if carried:
        stmts += ir.parse(f"{jn} = {j}")
        replay = ir.parse(f"for {kn} in range({jn}):\n    pass")[0]
        step = []
        if var is not None:
            lo, _, st = (ir.unparse(a) for a in loop._bounds)
            step = ir.parse(f"{var} = {lo} + {kn} * {st}" if st != "1" else f"{var} = {lo} + {kn}")
        replay.body = step + copy.deepcopy(carried)
        ir.annotate(replay, comment="the iterations before this one, again (what they carry)")
        stmts.append(replay)
        if var is not None:
            stmts += ir.parse(f"{var} = {lo} + {jn} * {st}" if st != "1"
                              else f"{var} = {lo} + {jn}")
    if taped and rest and ir.is_barrier(taped[-1]) and ir.is_barrier(rest[0]):
        rest = rest[1:]         # (one barrier ends the iteration's recording and starts its adjoint)
    for x in stmts:
        ir.annotate(x, origin=ir.note(rev, "origin", None))
    new = copy.copy(rev)
    new.body = prefix + stmts + taped + rest
    ir.copy_notes(rev, new)
    ir.annotate(new, comment="each iteration's values computed again from the loop's start")
    return new


def _records(stmts, arrays):
    return any(isinstance(s, ast.Assign) and ir.is_store(s) and s.targets[0].value.id in arrays
               for s in ir.walk_stmts(stmts))


def _stored_arrays(s):
    """Arrays a (simple) statement writes elements of: stores and atomic adds."""
    if isinstance(s, ast.Assign) and ir.is_store(s):
        return {s.targets[0].value.id}
    if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Subscript):
        return {s.target.value.id}
    if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and s.value.args and \
            isinstance(s.value.args[0], ast.Name) and \
            ir.unparse(s.value.func) == "cuda.atomic.add":
        return {s.value.args[0].id}
    return set()


def _refilled(loop, shared, order):
    """The block's shared arrays each iteration of the loop fills before reading them (a
    tiled product's tiles): stored only in the loop, first by a statement of the body's own
    block, before any read. Storing them again in the backward sweep gives the iteration
    back the tiles it read."""
    inner = list(ir.walk_stmts(loop.body))
    inside = {id(x) for x in inner}
    out = set()
    for a in shared:
        stores = [x for x in order if a in _stored_arrays(x)]
        if not stores or any(id(x) not in inside for x in stores):
            continue
        first = next((x for x in inner if a in _stored_arrays(x) or a in _loaded(x)), None)
        if first is not None and a in _stored_arrays(first) and \
                any(first is b for b in loop.body):
            out.add(a)
    return out


def _loaded(s):
    if isinstance(s, ast.Assign) and isinstance(s.value, ast.Subscript) and \
            isinstance(s.value.value, ast.Name):
        return {s.value.value.id}
    return set()


def _side_effect_free(stmts, kept_arrays, barriers=False):
    """Statements without what must happen once: element stores (but those into
    `kept_arrays`: the tape's, refilled tiles), calls made for their effect
    (synchronization, unless `barriers`, and atomics) and loop exits."""
    out = []
    for s in stmts:
        if isinstance(s, ast.Expr) and not (barriers and ir.is_barrier(s)) or \
                isinstance(s, (ast.Break, ast.Continue)):
            continue
        if isinstance(s, ast.Assign) and ir.is_store(s) and \
                s.targets[0].value.id not in kept_arrays:
            continue
        if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Subscript):
            continue
        if isinstance(s, (ast.If, ast.For, ast.While)):
            s.body = _side_effect_free(s.body, kept_arrays, barriers) or [ast.Pass()]
            s.orelse = _side_effect_free(s.orelse, kept_arrays, barriers)
        out.append(s)
    return out


def _without_pushes(stmts, tape_arrays, tape_names):
    """Statements without their tape pushes (the stores and the counters' increments)."""
    out = []
    for s in stmts:
        if isinstance(s, ast.Assign) and ir.is_store(s) and s.targets[0].value.id in tape_arrays:
            continue
        if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name) and \
                s.target.id in tape_names:
            continue
        if isinstance(s, (ast.If, ast.For, ast.While)):
            s.body = _without_pushes(s.body, tape_arrays, tape_names) or [ast.Pass()]
            s.orelse = _without_pushes(s.orelse, tape_arrays, tape_names)
        out.append(s)
    return out
