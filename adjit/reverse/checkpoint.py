"""Checkpointed time loops: bounded tape memory for long simulations.

Without checkpointing, a loop's forward sweep records what its backward sweep needs for
every step, so the tape grows with steps x state. A checkpointed loop instead runs its
steps plainly (nothing recorded), saving snapshots of the loop state at the steps the
binomial schedule picks (runtime/checkpoint.py), and reverses step j by restoring the nearest
snapshot, advancing to step j, running step j with the tape and then step j's adjoint
straight away. The tape holds one step; memory is the snapshots plus one step, and every
step's adjoint executes the same operations on the same values as without checkpointing,
so the gradient is identical to the bit.

The loop state is what a step reads that an earlier step may have written: the scalars the
loop assigns that its body (taped, adjoint or plain) reads before assigning, and the arrays
it stores into that exist before the loop (temporaries the vectorizer hoisted out of the
loop are completely rewritten by every step and are left out).
"""
import ast
import copy

from ..analysis.types import (BOOL, FLOAT, INT, is_array, restored_source, stored_source,
                              zero_source)
from ..errors import error_at
from .. import ir
from .ascending import own_elements
from .dce import eliminate_dead, reads_of, upward_exposed
from .emit import trip_count


def select(builder, mode=None):
    """The top-level loops to checkpoint: `for` loops over a range whose steps record on
    the tape. Raises AdjitError for a recording top-level loop that cannot be checkpointed.
    `mode`: the builder's checkpoint option, or the one given ("auto": the loops
    checkpoint="auto" would checkpoint, which raises nothing)."""
    mode = builder.checkpoint if mode is None else mode
    out = []
    for s in builder.stmts:
        if not isinstance(s, (ast.For, ast.While)) or id(s) not in builder.plan.kept_loops or \
                id(s) in builder.plan.recomputed:
            continue        # (a loop computed again iteration by iteration keeps no tape)
        if isinstance(s, ast.For) and not ir.note(s, "user", False):
            continue        # the loop nest of a vectorized statement, not a time loop
        if isinstance(s, ast.For) and reduction(s):
            continue        # recorded: its tape grows with what it reads, not with a state
        if not records(builder, s):
            continue
        origin = ir.note(s, "origin", None)
        # (an MPI message may run again: every rank runs the same steps again, in order)
        effect = next((x for x in ir.walk_stmts(s.body) if ir.note(x, "effect")
                       and not ir.note(x, "message")), None)
        if effect is not None:
            if mode == "auto":
                continue    # recorded: its steps may not run twice
            raise error_at(ir.note(effect, "origin", None) or origin,
                           "checkpointing a loop that makes a call which must run once ("
                           f"{ir.note(effect, 'effect')})", "A checkpointed loop runs its "
                           "steps again from snapshots, which would call it again: draw the "
                           "numbers before the loop (z = np.random.standard_normal((steps, "
                           "n)), then read z[t]), or pass checkpoint=None or 'auto' (which "
                           "records such a loop).")
        if (isinstance(s, ast.While) or ir.note(s, "trip")) and mode == "auto":
            continue        # recorded: its number of steps is not known when it starts
        if isinstance(s, ast.While):
            raise error_at(origin, "checkpointing a `while` loop",
                           "Checkpointing applies to `for t in range(steps)` loops, whose "
                           "number of steps is known when the loop starts: compute the "
                           "number of steps first, or pass checkpoint=None.")
        if ir.note(s, "trip"):
            raise error_at(origin, "checkpointing a loop left by `break` or `return`",
                           "Checkpointing needs every step to run: compute the number of "
                           "steps first and loop over range(steps), or pass "
                           "checkpoint=None.")
        out.append(s)
    return out


def reduction(loop):
    """Whether `loop`'s iterations are independent but for sums (`for i in range(n): e +=
    math.exp(y * x[i])`, `y[i] = math.tanh(w * x[i])`): every array it stores into is
    indexed with the loop's variable, bare, at one place of every index it takes there (each
    iteration its own elements), and every number it carries from one iteration to the next
    is a sum (`e = e + term`, normalized `t = e + term; e = t`, or `e -= term`, e read
    nowhere else in the body). Such a loop is not a time loop: what it records grows with
    the data it reads and writes, not with steps times a state, a snapshot of what it writes
    would copy its whole result, and recorded, every pass may run its iterations in the
    order it likes (vector lanes, upward); checkpointing leaves it to be recorded."""
    var = loop.target.id if isinstance(loop.target, ast.Name) else None
    body = ast.Module(body=list(loop.body), type_ignores=[])
    for a in ir.stored_names(loop.body):
        subs = [n for n in ir.walk(body) if isinstance(n, ast.Subscript)
                and isinstance(n.value, ast.Name) and n.value.id == a]
        bases = {id(n.value) for n in subs}
        if var is None or any(isinstance(n, ast.Name) and n.id == a and id(n) not in bases
                              for n in ir.walk(body)):
            return False        # (the whole array read, passed or rebound in the loop)
        if not own_elements(subs, var):
            return False
    carried = (upward_exposed(loop.body) & ir.assigned(loop.body)) - {loop.target.id}
    stmts = list(ir.walk_stmts(loop.body))
    for v in carried:
        partial = set()         # t of `t = v + term`: read only by `v = t`
        for x in stmts:
            if isinstance(x, ast.For):
                if x.target.id == v or v in reads_of(x.iter):
                    return False
                continue
            if isinstance(x, ast.If):
                if v in reads_of(x.test):
                    return False
                continue
            if isinstance(x, ast.AugAssign) and isinstance(x.target, ast.Name) and \
                    x.target.id == v:
                if not isinstance(x.op, (ast.Add, ast.Sub)) or v in reads_of(x.value):
                    return False
                continue
            if v not in reads_of(x):
                continue
            if not (isinstance(x, ast.Assign) and len(x.targets) == 1 and
                    isinstance(x.targets[0], ast.Name) and _plus(x.value, v)):
                return False
            if x.targets[0].id != v:
                partial.add(x.targets[0].id)
        for x in stmts:
            if isinstance(x, ast.Assign) and any(isinstance(t, ast.Name) and t.id == v
                                                 for t in x.targets):
                if not (_plus(x.value, v) or isinstance(x.value, ast.Name) and
                        x.value.id in partial):
                    return False
        for t in partial:
            uses = [x for x in stmts
                    if not isinstance(x, (ast.For, ast.If)) and t in reads_of(x)]
            if not all(isinstance(x, ast.Assign) and isinstance(x.value, ast.Name) and
                       [n.id for n in x.targets if isinstance(n, ast.Name)] == [v]
                       for x in uses):
                return False
    return True


def _plus(e, v):
    """Whether `e` is `v + term` or `v - term`, the term not reading v."""
    return isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub)) and \
        isinstance(e.left, ast.Name) and e.left.id == v and v not in reads_of(e.right)


def records(builder, loop):
    for s in ir.walk_stmts(loop.body):
        if id(s) in builder.plan.pushed:
            return True
        if isinstance(s, ast.Assign) and ir.target_name(s) in builder.taped_trips:
            return True
    return False


class Checkpointed:
    """The generated code of one checkpointed loop."""

    def __init__(self, builder, loop, plain, snapshots):
        self.b = builder
        self.loop = loop
        self.plain = plain              # the primal body, as normalized (no recording)
        self.snapshots = snapshots      # an int, or "auto"
        gen = builder.namegen
        self.names = {k: gen.fresh(f"_c{k}") for k in
                      ("steps", "snaps", "block", "slots", "pos", "next", "k", "sched", "act",
                       "sf", "si", "step", "last", "lo", "hi")}
        self.taped = None
        self.reverse = None
        self.reserve = []       # tape room for one block of steps, made where a STEP records
        self.step_counts = None     # (floats, ints) one step records, when known on entry

    # the state ---------------------------------------------------------------------------
    def state(self):
        """(scalars by kind, arrays) carried from step to step."""
        if getattr(self, "_state", None) is None:
            self._state = self._find_state()
        return self._state

    def _find_state(self):
        b = self.b
        primal_assigned = ir.assigned(self.plain) - {self.loop.target.id}
        exposed = upward_exposed(self.taped + self.reverse) | upward_exposed(self.plain)
        scalars = {FLOAT: [], INT: [], BOOL: []}
        for v in b._ordered(primal_assigned & exposed):
            kind = b.kinds.get(v)
            if is_array(kind):
                continue
            if kind not in scalars:
                raise error_at(ir.note(self.loop, "origin", None),
                               f"checkpointing a loop that carries '{v}' ({kind}) from step "
                               "to step", "Carry floats, ints, bools and arrays only.")
            scalars[kind].append(v)
        hoisted = ir.note(self.loop, "hoisted", set())
        stored = ir.stored_names(self.plain)
        arrays = [a for a in b._ordered(stored - primal_assigned)
                  if not (a in b.vec_temps and a in hoisted)]
        return scalars, arrays

    def inputs_changed_later(self):
        """(scalars, arrays) the loop reads but does not change, which code after the loop
        changes: a recomputed step must see them as the loop did, so their values on entry
        are kept and put back for the schedule (and the later values restored after it)."""
        if getattr(self, "_inputs", None) is not None:
            return self._inputs
        b = self.b
        after = b.stmts[b.stmts.index(self.loop) + 1:]
        assigned_after = ir.assigned(after)
        stored_after = ir.stored_names(after)
        reads = {n.id for st in self.plain for n in ir.walk(st)
                 if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        stored = ir.stored_names(self.plain)
        # (the loop's own variable: each step is given its value, _step_index; it need not
        # be bound before the loop, where a later loop over the same name assigns it)
        assigned = ir.assigned(self.plain) | {self.loop.target.id}
        scalars = [v for v in b._ordered((reads & assigned_after) - assigned)
                   if v in b.kinds and not is_array(b.kinds[v])]
        arrays = [a for a in b._ordered((reads & stored_after) - stored - assigned)
                  if is_array(b.kinds.get(a))]
        self._inputs = (scalars, arrays)
        return self._inputs

    # code --------------------------------------------------------------------------------
    def _step_index(self, k):
        lo, _, st = self.loop._bounds
        var = self.loop.target.id
        lo_t, st_t = ast.unparse(lo), ast.unparse(st)
        if _const(st, 1):
            value = k if _const(lo, 0) else f"{lo_t} + {k}"
        else:
            value = f"{lo_t} + {k} * {st_t}"
        return _parse(f"{var} = {value}")

    def _transfers(self, slot, scalars, arrays):
        """(save, restore) source lines for each piece of the state and snapshot `slot`:
        floats in one 2-D array, ints and bools (as 0/1) in another, each array in its own."""
        n = self.names
        out = []
        for k, v in enumerate(scalars[FLOAT]):
            place = f"{n['sf']}[{slot}, {k}]"
            out.append((f"{place} = {v}", f"{v} = {place}"))
        for k, v in enumerate(scalars[INT] + scalars[BOOL]):
            place = f"{n['si']}[{slot}, {k}]"
            kind = self.b.kinds[v]
            out.append((f"{place} = {stored_source(kind, v)}",
                        f"{v} = {restored_source(kind, place)}"))
        for a in arrays:
            place = f"{self._snap(a)}[{slot}]"
            out.append((f"ckpt.put({place}, {a})", f"ckpt.put({a}, {place})"))
        return out

    def _save(self, slot, scalars, arrays):
        return _parse("\n".join(save for save, _ in self._transfers(slot, scalars, arrays)))

    def _restore(self, slot, scalars, arrays):
        return _parse("\n".join(back for _, back in self._transfers(slot, scalars, arrays)))

    def _kept(self, v, when):
        key = f"{when}_{v}"
        if key not in self.names:
            self.names[key] = self.b.namegen.fresh(f"_c{when}_{v.lstrip('_')}")
        return self.names[key]

    def _snap(self, a):
        key = f"snap_{a}"
        if key not in self.names:
            self.names[key] = self.b.namegen.fresh(f"_c{a.lstrip('_')}")
        return self.names[key]

    def step_function(self):
        """One step of the loop, run plainly (nothing recorded), as a function of its own:
        the forward sweep and the schedule's ADVANCE both call it. Returns (name, parameters,
        body, results, packed): it writes the arrays among its parameters in place and returns
        the scalars the loop carries from step to step or leaves for the code after it (each
        of those is a parameter too, so a step that does not assign it passes it on). With
        more than _MAX_ARGS parameters, `packed` names the one tuple parameter the function
        takes instead, which it unpacks into them (None otherwise)."""
        if getattr(self, "_step", None) is None:
            self._step = self._make_step()
        return self._step

    def _make_step(self):
        b = self.b
        live_after = self._live_after()
        scalars, arrays = self.state()
        carried = {v for names in scalars.values() for v in names}
        assigned = ir.assigned(self.plain) - {self.loop.target.id}
        results = [v for v in b._ordered(assigned & (carried | live_after)) if v in b.kinds]
        stored = ir.stored_names(self.plain)
        plain = eliminate_dead(copy.deepcopy(self.plain), set(results),
                               set(arrays) | (stored & live_after))
        inner = self._joined_inside()
        params = [v for v in b._ordered(upward_exposed(plain) | set(results)) if v in b.kinds
                  and v not in inner]
        packed = b.namegen.fresh("_cargs") if len(params) > _MAX_ARGS else None
        return self.names["step"], params, plain, results, packed

    def unreturned(self):
        """Arrays a step reads from before it and binds anew (not updated in place: no
        array was bound to the name before the loop), which it would not hand to the next
        step: `if t % 3 == 0: y = u * a` then `s += np.sum(y * u)`."""
        names = upward_exposed(self.plain) & ir.assigned(self.plain) - self._live_after() - \
            self._joined_inside()
        return [v for v in self.b._ordered(names) if is_array(self.b.kinds.get(v))]

    def _live_after(self):
        """The names the code after the loop reads (the function's result included)."""
        b = self.b
        after = b.stmts[b.stmts.index(self.loop) + 1:]
        return upward_exposed(after, {b.result.id} if isinstance(b.result, ast.Name) else set())

    def _joined_inside(self):
        """Arrays a path of an `if` in the step keeps for the copy after it, read there only
        where that path ran, in the same step: not the step's input, which they may never be
        before the loop."""
        return self.b.joined - getattr(self, "defined_before", set())

    def refuse_unreturned(self, v):
        """Raise the AdjitError for the array `v` of unreturned() (an explicit checkpoint
        count)."""
        raise error_at(ir.note(self.loop, "origin", None),
                       f"checkpointing a loop whose steps bind '{v}' to a new array that a "
                       "later step reads, with no array bound to it before the loop",
                       f"Bind it before the loop ({v} = np.zeros(...) of its shape), so that "
                       "the loop updates that array step by step; or pass checkpoint=None or "
                       "'auto' (which records such a loop).")

    def _call_step(self):
        name, params, _, results, packed = self.step_function()
        args = ", ".join(params)
        call = f"{name}(({args}))" if packed else f"{name}({args})"
        if not results:
            return _parse(call)
        return _parse(f"{', '.join(results)} = {call}")

    def forward(self, defined_before):
        """Allocations and the plain loop with its snapshots (replaces the forward loop)."""
        n = self.names
        scalars, arrays = self.state()
        snaps = self._snapshots()
        lines = [f"{n['steps']} = {trip_count(self.loop._bounds)}"]
        if self.snapshots == "auto":
            lines.append(f"{n['snaps']}, {n['block']} = ckpt.auto_plan({n['steps']}, "
                         f"{self._state_bytes()}, {self._step_bytes()}, "
                         f"{self.b.tape.room} // 8)")
        else:
            lines.append(f"{n['block']} = 1")
        # the last block is recorded by this pass; the schedule covers the steps before it
        lines += [f"{n['last']} = ckpt.last_block({n['steps']}, {n['block']})",
                  f"{n['slots']} = ckpt.slots({n['last']}, {snaps}, {n['block']})",
                  f"{n['pos']} = ckpt.descent({n['last']}, {snaps}, {n['block']})"]
        if scalars[FLOAT]:
            lines.append(f"{n['sf']} = np.empty(({n['slots']}, {len(scalars[FLOAT])}))")
        ints = len(scalars[INT]) + len(scalars[BOOL])
        if ints:
            lines.append(f"{n['si']} = np.empty(({n['slots']}, {ints}), np.int64)")
        for a in arrays:
            lines.append(f"{self._snap(a)} = np.empty(({n['slots']},) + {a}.shape, "
                         f"{a}.dtype)")
        snap_bytes = self.snapshot_bytes()
        if snap_bytes != "0":
            room = self.b.tape.room
            lines.append(f"{room} = check_room({snap_bytes}, {room})")
        entry_scalars, entry_arrays = self.inputs_changed_later()
        for v in entry_scalars:
            lines.append(f"{self._kept(v, 'entry')} = {v}")
        for a in entry_arrays:
            lines.append(f"{self._kept(a, 'entry')} = {a}.copy()")
        lines.append(f"{n['next']} = 0")
        out = []
        results = self.step_function()[3]
        for names in scalars.values():
            for v in names:
                if v not in defined_before:
                    out += _parse(f"{v} = {zero_source(self.b.kinds[v])}")
        for v in results:       # a result a step may leave unassigned starts defined
            if v not in defined_before and not any(v in names for names in scalars.values()) \
                    and zero_source(self.b.kinds.get(v)) is not None:
                out += _parse(f"{v} = {zero_source(self.b.kinds[v])}")
        out += _parse("\n".join(lines))
        loop = _parse(f"for {n['k']} in range({n['last']}):\n    pass")[0]
        save = _parse(f"if {n['k']} == {n['pos']}[{n['next']}]:\n    pass")[0]
        save.body = self._save(n["next"], scalars, arrays) + \
            _parse(f"{n['next']} += 1")
        loop.body = [save] + self._step_index(n["k"]) + self._call_step()
        taped = _parse(f"for {n['k']} in range({n['last']}, {n['steps']}):\n    pass")[0]
        taped.body = self._step_index(n["k"]) + copy.deepcopy(self.taped)
        for node in (loop, taped):
            ir.annotate(node, origin=ir.note(self.loop, "origin", None))
        return out + [loop] + copy.deepcopy(self.reserve) + [taped]

    def _state_bytes(self):
        """Source of the bytes one snapshot of the state takes."""
        scalars, arrays = self.state()
        numbers = 8 * sum(len(v) for v in scalars.values())
        return " + ".join(([str(numbers)] if numbers else []) +
                          [f"{a}.nbytes" for a in arrays]) or "0"

    def _step_bytes(self):
        """Source of the bytes one step records (-1: not known before the loop runs)."""
        if not self.step_counts:
            return "-1"
        return " + ".join(f"8 * ({c})" for c in self.step_counts)

    def _snapshots(self):
        return str(self.snapshots) if self.snapshots != "auto" else self.names["snaps"]

    def snapshot_bytes(self):
        """Source of the bytes the snapshots take."""
        scalars, arrays = self.state()
        parts = [f"{self.names['sf']}.nbytes"] if scalars[FLOAT] else []
        if scalars[INT] or scalars[BOOL]:
            parts.append(f"{self.names['si']}.nbytes")
        parts += [f"{self._snap(a)}.nbytes" for a in arrays]
        parts += [f"2 * {a}.nbytes" for a in self.inputs_changed_later()[1]]
        parts += [f"{a}.nbytes" for a in arrays if a in self.b.params]
        return " + ".join(parts) or "0"

    def backward(self):
        """The schedule loop (replaces the reversed loop in the backward sweep). Its first
        action (UNWIND) runs the adjoints of the last block, which the forward sweep
        recorded; each STEP records a block and then runs the same adjoints: the steps'
        adjoints are written once."""
        n = self.names
        scalars, arrays = self.state()
        snaps = self._snapshots()
        text = f"""\
{n['act']} = ckpt.UNWIND
{n['lo']} = {n['last']}
{n['hi']} = {n['steps']}
{n['sched']} = ckpt.start({n['last']}, {snaps}, {n['block']})
while True:
    if {n['act']} == ckpt.STEP or {n['act']} == ckpt.UNWIND:
        if {n['act']} == ckpt.STEP:
            pass
        for {n['k']} in range({n['hi']} - 1, {n['lo']} - 1, -1):
            pass
    elif {n['act']} == ckpt.ADVANCE:
        for {n['k']} in range({n['lo']}, {n['hi']}):
            pass
    elif {n['act']} == ckpt.RESTORE:
        pass
    elif {n['act']} == ckpt.SAVE:
        pass
    else:
        break
    {n['act']} = ckpt.next_action({n['sched']})
    {n['lo']} = {n['sched']}[1]
    {n['hi']} = {n['sched']}[2]
"""
        *head, loop = _parse(text)
        step, advance, restore, save = _branches(loop.body[0])
        record, back = step.body
        # the steps of one block with the tape (room for them tested at each STEP, made at
        # the first: every block pops what it pushes), then their adjoints (one step without
        # blocks)
        taped = _parse(f"for {n['k']} in range({n['lo']}, {n['hi']}):\n    pass")[0]
        taped.body = self._step_index(n["k"]) + self.taped
        record.body = self.reserve + [taped] + self.b.tape.peak_updates()
        back.body = self._step_index(n["k"]) + self.reverse
        # (the steps' adjoints in the order and with the functions of the recorded
        # gradient's reversed loop: ir.NOTES, time_loop)
        ir.annotate(back, steps=True, time_loop=True)
        advance.body[0].body = self._step_index(n["k"]) + self._call_step()
        restore.body = self._restore(n["lo"], scalars, arrays) or [ast.Pass()]
        save.body = self._save(n["lo"], scalars, arrays) or [ast.Pass()]
        entry_scalars, entry_arrays = self.inputs_changed_later()
        swap_in, swap_out = [], []
        for v in entry_scalars:
            swap_in += [f"{self._kept(v, 'final')} = {v}", f"{v} = {self._kept(v, 'entry')}"]
            swap_out.append(f"{v} = {self._kept(v, 'final')}")
        for a in entry_arrays:
            swap_in += [f"{self._kept(a, 'final')} = {a}.copy()",
                        f"ckpt.put({a}, {self._kept(a, 'entry')})"]
            swap_out.append(f"ckpt.put({a}, {self._kept(a, 'final')})")
        for a in self.state()[1]:
            if a in self.b.params:
                # an argument the loop writes: the caller sees its final contents, which the
                # schedule's restores overwrite
                swap_in.append(f"{self._kept(a, 'final')} = {a}.copy()")
                swap_out.append(f"ckpt.put({a}, {self._kept(a, 'final')})")
        before, after = _parse("\n".join(swap_in)), _parse("\n".join(swap_out))
        nodes = before + head + [loop] + after
        for node in nodes:
            ir.annotate(node, origin=ir.note(self.loop, "origin", None))
        return nodes


def _branches(node):
    out = []
    while isinstance(node, ast.If):
        out.append(node)
        node = node.orelse[0] if node.orelse and isinstance(node.orelse[0], ast.If) else None
    return out


_MAX_ARGS = 30
"""The most arguments a step function is called with one by one: CPython compiles a call
with more as f(*args) (CALL_FUNCTION_EX), and numba cannot inline a function called so."""


def _const(atom, value):
    return isinstance(atom, ast.Constant) and atom.value == value


def _parse(text):
    return ast.parse(text).body
