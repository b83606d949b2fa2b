"""The reverse builder's emission: the forward sweep (with its tape pushes and reservations)
and the backward sweep (mirrors in reverse order, replays, pops, reversed loops), with the
checkpointed loops expanded through reverse/checkpoint.py."""
import ast
import copy

from .. import ir
from ..analysis.prims import classify
from ..analysis.types import BOOL, FLOAT, INT, is_array, restored_source, stored_source
from ..rules.table import PAIRED
from ..rules.templates import fold
from .dce import eliminate_dead, upward_exposed
from .recompute import filled_buffers
from .mirrors import AssignMirror, IfMirror


class Emitter:
    """The two sweeps of one ReverseBuilder (`b`) as its Plan (`plan`, from the planner)
    says: emission reads the builder's statements, rules and tape, and keeps what it makes
    for later passes on the builder (its recomputed loops' bodies, the forward sweep)."""

    def __init__(self, builder, plan):
        self.b = builder
        self.plan = plan

    def forward(self, stmts, reserved=False):
        """The primal statements with pushes. Inside a loop whose pushes were reserved in
        advance (see _reserve) the pushes store without a capacity check."""
        out = []
        for s in stmts:
            if isinstance(s, ast.Assign):
                target = ir.target_name(s)
                if id(s) in self.plan.pushed:
                    out += self.b.tape.push(target, self.b.kinds[target], checked=not reserved)
                if ir.note(s, "atomic", False):    # a store standing for cuda.atomic.add
                    sub = s.targets[0]
                    s = ir.atomic_add(sub.value.id, copy.deepcopy(sub.slice), s.value,
                                      ir.note(s, "origin", None))
                kept, results = self.b.snapshots.get(id(s), ((), ()))
                for a in kept:
                    out += self.b.tape.push_array(a)
                out.append(s)
                for a in results:
                    out += self.b.tape.push_array(a)
                if target in self.b.active and is_array(self.b.kinds[target]) and \
                        not self._replayed_allocation(s, target):
                    out += ir.parse(f"{self.b.bar(target)} = np.zeros_like({target})")
                if target in self.b.taped_trips:
                    out += self.b.tape.push(target, INT, checked=not reserved)
                continue
            if isinstance(s, ast.If):
                s.body = self.forward(s.body, reserved)
                s.orelse = self.forward(s.orelse, reserved)
            elif isinstance(s, (ast.For, ast.While)):
                if isinstance(s, ast.For) and id(s) in self.plan.pushed:
                    out += self.b.tape.push(s.target.id, INT, checked=not reserved)
                if id(s) in self.b.checkpointed:
                    out += self._checkpointed_forward(s)
                    continue
                if id(s) in self.plan.recomputed:
                    out.append(self._recomputed_forward(s))
                    continue
                if id(s) in self.b.time_loops:
                    ir.annotate(s, time_loop=True)
                if id(s) in self.b.indexed:
                    out += self._indexed_forward(s)
                    continue
                parallel = ir.note(s, "parallel", False) and not any(
                    id(x) in self.b.checkpointed for x in ir.walk_stmts(s.body))
                plain = copy.deepcopy(s.body) if parallel else None
                counts = self._reservable(s)
                if counts:
                    reserve = self._reserve(s, counts)
                    for r in reserve:
                        ir.annotate(r, pkey=id(s))
                    out += reserve
                elif not reserved and not self.b.tape.bounded:
                    out += self._reserve_nest(s)
                s.body = self.forward(s.body, bool(counts))
                if parallel:
                    self._recompute_variant(s, plain, counts)
            out.append(s)
        return out

    def _replayed_allocation(self, s, target):
        """Whether s allocates an array at a shape its loop changes that the backward sweep
        allocates again, with its adjoint (a replay: not inside a loop computed again
        iteration by iteration): the adjoint allocated here would never be read."""
        return target in self.b.reallocated and \
            not set(self.b.layout.loops[id(s)]) & self.plan.recomputed

    def _recomputed_forward(self, loop):
        """A loop whose iterations the backward sweep computes again: the forward sweep runs
        its plain body; its recording body (with a reservation for one iteration's pushes)
        is kept for the backward sweep (_expand_recomputed)."""
        plain = copy.deepcopy(loop.body)
        counts = self._reservable(loop)
        taped = self.forward(loop.body, bool(counts))
        per_iteration = []
        if counts:
            for kind, count in ((FLOAT, counts[0]), (INT, counts[1])):
                if count:
                    per_iteration += self.b.tape.reserve(kind, str(count))
        self.b.recompute[id(loop)] = (plain, per_iteration + taped)
        self.b.recompute_fills[id(loop)] = filled_buffers(loop, self.b.layout, self.b.kinds)
        self.b.recompute_loops[id(loop)] = loop
        loop.body = plain
        return loop

    def expand_recomputed(self, stmts):
        """Each reversed recomputed loop's marker becomes its iteration's recording forward,
        without what the iteration's adjoint does not read (innermost loops first, so an
        outer iteration keeps what an inner one reads)."""
        tape_names = self.b.tape.reserved_names()

        def expand(block):
            for s in block:
                for field in ("body", "orelse"):
                    inner = getattr(s, field, None)
                    if isinstance(inner, list) and inner:
                        setattr(s, field, expand(inner))
                at = next((k for k, x in enumerate(s.body[:2]) if isinstance(x, ast.Pass) and
                           ir.note(x, "pkey", None) in self.plan.recomputed), None) \
                    if isinstance(s, ast.For) else None
                if at is not None:
                    rest = s.body[at + 1:]
                    roots = upward_exposed(rest) | tape_names
                    key = ir.note(s.body[at], "pkey")
                    taped = eliminate_dead(copy.deepcopy(self.b.recompute[key][1]), roots, set())
                    kept = self._keep_iterations(key, s, taped, rest, tape_names)
                    if kept is not None:
                        s.body = s.body[:at] + kept[0] + rest
                        ir.annotate(s, comment="each iteration's values kept by the forward "
                                               "sweep, loaded before its adjoint")
                        if not upward_exposed(s.body[:at]) & kept[1]:
                            ir.annotate(s, fills=kept[1])
                        continue
                    s.body = s.body[:at] + taped + rest
                    ir.annotate(s, comment="each iteration computed again before its adjoint")
                    # what the iteration fills before reading is not needed from before it
                    # (so the forward sweep need not compute it for this loop)
                    fills = self.b.recompute_fills[key]
                    # and the values its first pushes record: the end of its backward
                    # sweep puts them back, and no one reads them then (the planner keeps
                    # no reader outside a recomputed loop of a value recorded in it)
                    fills |= upward_exposed(taped) - upward_exposed(
                        _without_pushes(taped, tape_names))
                    if not upward_exposed(s.body[:at]) & fills:
                        ir.annotate(s, fills=fills)
            return block
        return expand(stmts)

    def _keep_iterations(self, key, loop, taped, rest, tape_names):
        """The other way to give a recomputed loop's adjoint its iteration's values, where
        computing the iteration again costs a loop nest (ADBench's mixture model: a
        triangular product per component): the forward loop stores, at the end of each
        iteration, the buffers it filled and the numbers its adjoint reads (what the
        computation again would leave), and the reversed iteration loads them. Returns
        (loads, names they fill) or None where the iteration is computed again: it records
        on the tape, it has no nested loop nest, its adjoint reads an array it writes that
        it does not fill completely (or allocates), the loop is not a counted loop of step
        1, or it is not inside another recomputed loop (the kept rows then hold the
        components of one data point, not every point)."""
        fwd = self.b.recompute_loops.get(key)
        if fwd is None or not isinstance(fwd, ast.For) or \
                not (isinstance(fwd._bounds[2], ast.Constant) and fwd._bounds[2].value == 1):
            return None
        if not any(outer in self.plan.recomputed for outer in self.b.layout.loops[id(fwd)]):
            return None     # rows for every iteration of the loop over the data points would
            # be the tape growing with the data that computing again avoids
        if any(isinstance(n, ast.Name) and n.id in tape_names
               for x in taped for n in ir.walk(x)):
            return None
        loops = [x for x in ir.walk_stmts(taped) if isinstance(x, (ast.For, ast.While))]
        if not any(isinstance(y, (ast.For, ast.While)) for x in loops
                   for y in ir.walk_stmts(x.body)):
            return None         # computing it again costs about what storing it would
        reads = {n.id for x in rest for n in ir.walk(x) if isinstance(n, ast.Name)}
        stored = {x.targets[0].value.id for x in ir.walk_stmts(taped) if ir.is_store(x)}
        assigned = ir.assigned(taped) - {fwd.target.id}
        arrays = sorted(a for a in stored & reads)
        if any(a not in self.b.recompute_fills[key] or a in assigned for a in arrays):
            return None
        numbers = self.b._ordered((assigned & upward_exposed(rest)) - set(arrays))
        if any(self.b.kinds.get(v) not in (FLOAT, INT, BOOL) for v in numbers):
            return None
        floats = [v for v in numbers if self.b.kinds[v] == FLOAT]
        ints = [v for v in numbers if self.b.kinds[v] != FLOAT]
        parent = self._block_of(fwd)
        if parent is None:
            return None
        lo, trips = ast.unparse(fwd._bounds[0]), trip_count(fwd._bounds)
        slot = f"{fwd.target.id} - {lo}" if lo != "0" else fwd.target.id
        gen, alloc, store, load, after = self.b.namegen, [], [], [], []
        at = next(k for k, x in enumerate(parent) if x is fwd)
        later = parent[at + 1:]
        for a in arrays:
            keep = gen.fresh(f"_kept_{a.lstrip('_')}")
            alloc.append(f"{keep} = np.empty(({trips},) + {a}.shape, {a}.dtype)")
            if getattr(self.b.kinds.get(a), "ndim", None) == 1 and \
                    _elements_only(a, fwd.body + rest):
                # the iteration works in its own row: nothing to copy out or back
                _to_row(a, keep, slot, fwd.body + rest)
                if any(isinstance(n, ast.Name) and n.id == a for x in later
                       for n in ir.walk(x)):      # the last row, for what follows
                    j = gen.fresh("_j")
                    after.append(f"if {trips} > 0:\n    for {j} in range({a}.shape[0]):\n"
                                 f"        {a}[{j}] = {keep}[{trips} - 1, {j}]")
            elif getattr(self.b.kinds.get(a), "ndim", None) == 1:    # element loops: no views
                j = gen.fresh("_j")
                store.append(f"for {j} in range({a}.shape[0]):\n    {keep}[{slot}, {j}] = {a}[{j}]")
                load.append(f"for {j} in range({a}.shape[0]):\n    {a}[{j}] = {keep}[{slot}, {j}]")
            else:
                store.append(f"{keep}[{slot}] = {a}")
                load.append(f"{a}[...] = {keep}[{slot}]")
        for group, dtype in ((floats, ""), (ints, ", np.int64")):
            if not group:
                continue
            keep = gen.fresh("_kept")
            alloc.append(f"{keep} = np.empty(({trips}, {len(group)}){dtype})")
            for k, v in enumerate(group):
                kind = self.b.kinds[v]
                store.append(f"{keep}[{slot}, {k}] = {stored_source(kind, v)}")
                load.append(f"{v} = {restored_source(kind, f'{keep}[{slot}, {k}]')}")
        origin = ir.note(fwd, "origin", None)
        new = ir.parse("\n".join(alloc))
        for x in new:
            ir.annotate(x, origin=origin)
        parent[at + 1:at + 1] = ir.parse("\n".join(after))     # (before `new` moves fwd)
        sizes = {n.id for e in fwd._bounds[:2] for n in ir.walk(e) if isinstance(n, ast.Name)}
        if parent is not self.b.forward_stmts and all(
                not self.b.layout.loops[id(site)] for n in sizes | set(arrays)
                for site in self.b.layout.sites.get(n, ())):
            self.b.forward_stmts.extend(new)      # once per call, not per outer iteration
        else:
            parent[at:at] = new
        fwd.body = fwd.body + ir.parse("\n".join(store))
        return ir.parse("\n".join(load)), frozenset(arrays) | frozenset(numbers)

    def _block_of(self, loop):
        """The statement list holding `loop`: in the forward sweep or in the recording body
        of a recomputed loop."""
        lists = [self.b.forward_stmts] + [body for _, body in self.b.recompute.values()]
        seen = set()
        while lists:
            block = lists.pop()
            if id(block) in seen:
                continue
            seen.add(id(block))
            if any(x is loop for x in block):
                return block
            for x in block:
                for field in ("body", "orelse"):
                    inner = getattr(x, field, None)
                    if isinstance(inner, list):
                        lists.append(inner)
        return None

    def _recompute_variant(self, loop, plain, counts):
        """A prange loop whose body records values: the other way to differentiate it
        (reverse/parallel.py picks it where it is safe) runs the body plain in the forward
        sweep and, in the backward sweep, each iteration again with its recording just
        before its adjoint, on a tape of the thread's own."""
        tape_names = self.b.tape.reserved_names()
        if not any(isinstance(n, ast.Name) and n.id in tape_names
                   for x in loop.body for n in ir.walk(x)):
            return
        per_iteration = []
        if counts:
            for kind, count in ((FLOAT, counts[0]), (INT, counts[1])):
                if count:
                    per_iteration += self.b.tape.reserve(kind, str(count))
        self.b.recompute[id(loop)] = (plain, per_iteration + loop.body)

    def _checkpointed_forward(self, s):
        """A checkpointed loop: its taped body (one step's recording, run in the backward
        sweep) is kept aside; the forward sweep runs the plain loop, saving snapshots."""
        cp = self.b.checkpointed[id(s)]
        counts = self._reservable(s)
        reserve = []
        if counts:
            block = cp.names["block"]
            for kind, count in ((FLOAT, counts[0]), (INT, counts[1])):
                if count:
                    reserve += self.b.tape.reserve(kind, f"({count}) * {block}")
        per_step = tuple(str(c) for c in counts) if counts else self._body_pushes(s.body, s)
        if per_step:
            cp.step_counts = tuple(c for c in per_step if c != "0")
        cp.reserve = reserve        # where a STEP records: every block pops what it pushes
        cp.taped = self.forward(s.body, bool(counts))
        return cp.forward(cp.defined_before)

    def expand_checkpoints(self, stmts):
        def expand(block):
            out = []
            for s in block:
                key = ir.note(s, "checkpoint", None)
                out += self.b.checkpointed[key].backward() if key is not None else [s]
            return out
        return ir.rewrite_blocks(stmts, expand)

    def _assign_pushes(self, s):
        """(float pushes, int pushes) of one assignment: its recorded value, its trip count."""
        target = ir.target_name(s)
        f = i = 0
        if id(s) in self.plan.pushed:
            f, i = (1, 0) if self.b.kinds[target] == FLOAT else (0, 1)
        return f, i + (target in self.b.taped_trips)

    def _pushes_in(self, stmts):
        """(float pushes, int pushes) the statements make, not counting nested loop bodies,
        with both branches of an `if` counted (an upper bound); None if a nested loop body
        pushes too."""
        f = i = 0
        for s in stmts:
            if isinstance(s, ast.Assign):
                df, di = self._assign_pushes(s)
                f, i = f + df, i + di
            elif isinstance(s, ast.If):
                inner = [self._pushes_in(s.body), self._pushes_in(s.orelse)]
                if None in inner:
                    return None
                f += inner[0][0] + inner[1][0]
                i += inner[0][1] + inner[1][1]
            elif isinstance(s, (ast.For, ast.While)):
                if id(s) in self.plan.pushed:
                    i += 1
                nested = self._pushes_in(s.body)
                if nested is None or nested != (0, 0):
                    return None
        return f, i

    def _reservable(self, loop):
        """Push counts per iteration of a for loop whose trip count is known on entry and
        whose nested loops push nothing; None otherwise."""
        if not isinstance(loop, ast.For) or ir.note(loop, "trip"):
            return None
        counts = self._pushes_in(loop.body)
        return counts if counts and counts != (0, 0) else None

    def _reserve_nest(self, loop):
        """One reservation before a loop nest whose loops all have trip counts known when
        the nest starts: the tape grows once to its full size instead of doubling its way
        there (each doubling copies the tape and touches new memory)."""
        total = self._nest_pushes(loop, loop)
        if total is None:
            return []
        out = []
        for kind, expr in ((FLOAT, total[0]), (INT, total[1])):
            if expr != "0":
                out += self.b.tape.reserve(kind, expr)
        return out

    def _nest_pushes(self, loop, outer):
        """(float, int) source expressions of the pushes all iterations of `loop` make, or
        None: nested loops must be `for` loops whose bounds nothing in `outer` assigns."""
        if not isinstance(loop, ast.For) or ir.note(loop, "trip") or \
                id(loop) in self.b.checkpointed or id(loop) in self.plan.recomputed:
            return None
        names = [a.id for a in loop._bounds if isinstance(a, ast.Name)]
        counters = {x.target.id for x in [outer] + list(ir.walk_stmts(outer.body))
                    if isinstance(x, ast.For)}
        if loop is not outer and any(n in counters or any(
                self.b.layout.inside(site, id(outer.body))
                for site in self.b.layout.sites.get(n, ())) for n in names):
            return None         # (a triangular nest: the inner bounds change in it)
        per = self._body_pushes(loop.body, outer)
        if per is None:
            return None
        trips = trip_count(loop._bounds)
        return tuple("0" if e == "0" else trips if e == "1" else
                     f"{trips} * ({e})" if "+" in e else f"{trips} * {e}" for e in per)

    def _body_pushes(self, stmts, outer):
        f, i, nested = 0, 0, []
        for s in stmts:
            if isinstance(s, ast.Assign):
                if self.b.snapshots.get(id(s)):
                    return None
                df, di = self._assign_pushes(s)
                f, i = f + df, i + di
            elif isinstance(s, ast.If):
                for part in (s.body, s.orelse):
                    inner = self._body_pushes(part, outer)
                    if inner is None:
                        return None
                    nested.append(inner)
            elif isinstance(s, (ast.For, ast.While)):
                if id(s) in self.plan.pushed:
                    i += 1
                inner = self._nest_pushes(s, outer)
                if inner is None:
                    return None
                nested.append(inner)
        exprs = []
        for k, base in enumerate((f, i)):
            parts = ([str(base)] if base else []) + [n[k] for n in nested if n[k] != "0"]
            exprs.append(" + ".join(parts) if parts else "0")
        return tuple(exprs)

    def _reserve(self, loop, counts):
        lo, hi, st = (ast.unparse(a) for a in loop._bounds)
        trips = f"({hi} - {lo})" if st == "1" else f"len(range({lo}, {hi}, {st}))"
        out = []
        for kind, count in ((FLOAT, counts[0]), (INT, counts[1])):
            if count:
                out += self.b.tape.reserve(kind, f"{trips} * {count}" if count > 1 else trips)
        return out

    def _replay(self, block, names=None):
        """The block's statements defining `names` (by default the values replayed at the
        start of its backward sweep), in their order."""
        names = self.plan.replays.get(id(block), ()) if names is None else names
        out = []
        for s in block:
            if isinstance(s, ast.Assign) and ir.target_name(s) in names:
                target = ir.target_name(s)
                node = ast.Assign(targets=[ir.store(target)], value=s.value, lineno=0)
                ir.annotate(node, origin=ir.note(s, "origin", None))
                out.append(node)
                if target in self.b.reallocated and target in self.b.active:
                    # this iteration's array (and adjoint) in this iteration's shape
                    for x in ir.parse(f"{self.b.bar(target)} = np.zeros_like({target})"):
                        ir.annotate(x, origin=ir.note(s, "origin", None))
                        out.append(x)
        return out

    def backward(self, mirrors, block):
        return _merge_resets(self._backward_raw(mirrors, block))

    def _backward_raw(self, mirrors, block):
        head = self._replay(block)
        out = []
        for m in mirrors:
            s = m.stmt
            if isinstance(m, AssignMirror):
                out += self._with_snapshots(s, m.adj)
                if id(s) in self.plan.pushed and not self._loaded_at_iteration_start(s):
                    target = ir.target_name(s)
                    out += self.b.tape.pop(target, self.b.kinds[target])
                elif id(s) in self.plan.inverted:
                    undo = copy.deepcopy(self.plan.inverted[id(s)][1])
                    ir.annotate(undo, origin=ir.note(s, "origin", None))
                    out.append(undo)
                if id(s) in self.plan.replays_after:
                    out += self._replay(block, self.plan.replays_after[id(s)])
            elif isinstance(m, IfMirror):
                body = self.backward(m.body, s.body)
                orelse = self.backward(m.orelse, s.orelse)
                if body or orelse:
                    node = ast.If(test=ir.name(s.test.id), body=body or [ast.Pass()],
                                  orelse=orelse, lineno=0)
                    ir.annotate(node, origin=ir.note(s, "origin", None))
                    out.append(node)
            else:
                if id(s) in self.plan.kept_loops:
                    out += self._reverse_loop(m, s)
                if isinstance(s, ast.For) and id(s) in self.plan.pushed:
                    out += self.b.tape.pop(s.target.id, INT)
        return self._sink_paired(head, out)

    def _sink_paired(self, head, body):
        """The block's backward sweep: the replayed values `head`, then `body`. A replayed
        sin or cos (PAIRED) moves down to the first statement that reads it, which is where
        the block's partials are: LLVM computes sin(x) and cos(x) in one sincos call only
        when both are in one basic block. It stays where it is if anything before that
        statement assigns it or its argument, or another replayed value reads it."""
        keep, rest = [], list(body)
        for k, node in enumerate(head):
            prim = classify(node.value, self.b.env)
            name = ir.target_name(node)
            args = {a.id for a in prim.operands if isinstance(a, ast.Name)} | {name}
            if prim.kind != "op" or prim.obj not in PAIRED or \
                    any(name in _names(h, ast.Load) for h in head[k + 1:]):
                keep.append(node)
                continue
            for j, x in enumerate(rest):
                if name in _names(x, ast.Load):
                    rest.insert(j, node)
                    break
                if args & _names(x, ast.Store):
                    keep.append(node)
                    break
            else:
                keep.append(node)
        return keep + rest

    def _with_snapshots(self, s, adj):
        """An array operation's adjoint reading the operands (and result) recorded at it,
        taken back from the tape, instead of the arrays' later contents."""
        kept, results = self.b.snapshots.get(id(s), ((), ()))
        if not adj or not (kept or results):
            return adj
        names, out = {}, []
        for a in list(reversed(results)) + list(reversed(kept)):
            names[a] = self.b.namegen.fresh(f"{a.lstrip('_')}_then")
            out += self.b.tape.pop_array(a, names[a])

        class Rename(ast.NodeTransformer):
            def visit_Name(self, node):
                if node.id in names and isinstance(node.ctx, ast.Load):
                    return ast.copy_location(ir.name(names[node.id]), node)
                return node
        for x in adj:
            out.append(ir.copy_notes(x, Rename().visit(copy.deepcopy(x))))
        if out and ir.note(adj[0], "origin", None):
            for x in out[:-len(adj)]:
                ir.annotate(x, origin=ir.note(adj[0], "origin"))
        return out

    # values recorded at their definition, in slots the loop counter indexes --------------
    def indexed_loops(self):
        """{id(loop): IndexedTape} for the serial `for` loops of step 1 whose recorded values
        are all the iteration's own temporaries: each assigned once, directly in the body,
        not read before that in the body, and nowhere else. Such a loop records each value
        after its assignment into a slot computed from the loop counter (base + (i - lo) *
        count + k), and its reversed loop loads the iteration's values at its start: no
        value and no tape counter is carried from one reversed iteration to the next, so
        the backward loop can be split and vectorized (reverse/fission.py). Left as they are:
        loops with nested loops or branches that record, loops that leave early, checkpointed,
        recomputed or parallel loops, and CUDA code."""
        if self.b.tape.bounded:
            return {}
        out = {}
        for loop in ir.walk_stmts(self.b.stmts):
            if not isinstance(loop, ast.For) or ir.note(loop, "trip") or \
                    ir.note(loop, "parallel", False) or id(loop) in self.plan.recomputed or \
                    id(loop) in self.b.checkpointed:
                continue
            step = loop._bounds[2]
            if not (isinstance(step, ast.Constant) and step.value == 1):
                continue
            inner = list(ir.walk_stmts(loop.body))
            pushed = [x for x in inner if id(x) in self.plan.pushed]
            if not pushed or any(isinstance(x, (ast.For, ast.While)) and id(x) in self.plan.pushed
                                 for x in inner):
                continue
            if any(id(x) in self.plan.inverted or id(x) in self.plan.replays_after or
                   self.b.snapshots.get(id(x)) or ir.note(x, "atomic", False) or
                   (isinstance(x, ast.Assign) and ir.target_name(x) in self.b.taped_trips)
                   for x in inner):
                continue
            top = {id(x) for x in loop.body}
            exposed = upward_exposed(loop.body)
            # (an argument assigned in the loop holds its value from before the loop there
            # too, which the statements before the loop may read: not the iteration's own)
            if not all(id(x) in top and isinstance(x, ast.Assign) and ir.target_name(x)
                       and len(self.b.layout.sites.get(ir.target_name(x), ())) == 1
                       and ir.target_name(x) not in self.b.params
                       and ir.target_name(x) not in exposed for x in pushed):
                continue
            out[id(loop)] = IndexedTape(self.b, loop, pushed)
        return out

    def _loaded_at_iteration_start(self, s):
        return any(id(s) in tape.stmt_ids for tape in self.b.indexed.values())

    def _indexed_forward(self, loop):
        indexed = self.b.indexed[id(loop)]
        ids = indexed.stmt_ids
        saved = self.plan
        self.plan = saved.without_pushes(ids)
        try:
            body = self.forward(loop.body, True)
        finally:
            self.plan = saved
        new = []
        for x in body:
            new.append(x)
            if id(x) in ids:
                new += indexed.store(x)
        loop.body = new
        ir.annotate(loop, comment="values recorded in slots the loop counter indexes")
        return indexed.reserve() + indexed.before() + [loop] + indexed.after_forward()

    def _reverse_loop(self, m, s):
        body = self.backward(m.body, s.body) or [ast.Pass()]
        if id(s) in self.b.indexed:
            indexed = self.b.indexed[id(s)]
            lo = ast.unparse(s._bounds[0])
            header = f"for {s.target.id} in range({ast.unparse(s._bounds[1])} - 1, {lo} - 1, -1):\n    pass\n"
            loop = fold(ir.parse(header)[0])
            loop.body = indexed.loads() + body
            ir.annotate(loop, origin=ir.note(s, "origin", None), pkey=id(s),
                        time_loop=id(s) in self.b.time_loops)
            return indexed.before_backward() + [loop] + indexed.after_backward()
        if id(s) in self.b.checkpointed:
            self.b.checkpointed[id(s)].reverse = body
            marker = ast.Pass()
            ir.annotate(marker, checkpoint=id(s))
            return [marker]
        out = []
        trip = ir.note(s, "trip")
        if trip and trip in self.b.taped_trips:
            out += self.b.tape.pop(trip, INT)
        if isinstance(s, ast.While):
            k = self.b.namegen.fresh("_k")
            header = f"for {k} in range({trip}):\n    pass\n"
        else:
            lo, hi, st = (ast.unparse(a) for a in s._bounds)
            var = s.target.id
            if isinstance(s._bounds[2], ast.Constant) and s._bounds[2].value == 1:
                start = f"{lo} + {trip} - 1" if trip else f"{hi} - 1"
                header = f"for {var} in range({start}, {lo} - 1, -1):\n    pass\n"
            else:
                k = self.b.namegen.fresh("_k")
                count = trip or f"len(range({lo}, {hi}, {st}))"
                header = f"for {k} in range({count} - 1, -1, -1):\n    pass\n"
                body = ir.parse(f"{var} = {lo} + {k} * {st}") + body
        loop = fold(ir.parse(header)[0])
        if id(s) in self.plan.recomputed:     # after the index, before the adjoint
            marker = ast.Pass()
            ir.annotate(marker, pkey=id(s))
            at = 0 if header.startswith(f"for {getattr(s.target, 'id', '')} in") else 1
            body = body[:at] + [marker] + body[at:]
        loop.body = body
        ir.annotate(loop, origin=ir.note(s, "origin", None),
                    parallel=ir.note(s, "parallel", False) and not trip, pkey=id(s),
                    time_loop=id(s) in self.b.time_loops)
        return out + [loop]


def _elements_only(array, stmts):
    """Whether the statements use a 1-D array only by its elements (`a[j]`)."""
    inner = set()
    for x in stmts:
        for n in ir.walk(x):
            if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and \
                    n.value.id == array:
                if isinstance(n.slice, (ast.Tuple, ast.Slice)):
                    return False
                inner.add(id(n.value))
    return all(id(n) in inner for x in stmts for n in ir.walk(x)
               if isinstance(n, ast.Name) and n.id == array)


def _to_row(array, keep, slot, stmts):
    """`a[j]` becomes `keep[slot, j]` in the statements (in place)."""
    row = ast.parse(slot, mode="eval").body

    class Rename(ast.NodeTransformer):
        def visit_Subscript(self, node):
            self.generic_visit(node)
            if isinstance(node.value, ast.Name) and node.value.id == array:
                node.value = ast.Name(id=keep, ctx=ast.Load())
                node.slice = ast.Tuple(elts=[copy.deepcopy(row), node.slice], ctx=ast.Load())
            return node
    for x in stmts:
        Rename().visit(x)


def _without_pushes(stmts, tape_names):
    """A copy of statements without their tape pushes (stores into the tape's arrays)."""
    out = []
    for s in stmts:
        if isinstance(s, ast.Assign) and ir.is_store(s) and \
                s.targets[0].value.id in tape_names:
            continue
        if isinstance(s, (ast.If, ast.For, ast.While)):
            s = copy.copy(s)
            s.body = _without_pushes(s.body, tape_names)
            s.orelse = _without_pushes(s.orelse, tape_names)
        out.append(s)
    return out


def _names(node, ctx):
    """The names node (a statement, with what it nests) reads (ctx ast.Load) or assigns
    (ast.Store)."""
    return {n.id for n in ir.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ctx)}


def _merge_resets(stmts):
    """`v_bar = 0.0` directly followed by `v_bar += e` becomes `v_bar = e`."""
    out = []
    for s in stmts:
        prev = out[-1] if out else None
        if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name) and \
                isinstance(prev, ast.Assign) and isinstance(prev.targets[0], ast.Name) and \
                prev.targets[0].id == s.target.id and isinstance(prev.value, ast.Constant) \
                and prev.value.value == 0.0:
            value = s.value if isinstance(s.op, ast.Add) else \
                ast.UnaryOp(op=ast.USub(), operand=s.value)
            merged = ast.Assign(targets=[prev.targets[0]], value=value, lineno=0)
            ir.annotate(merged, origin=ir.note(s, "origin", None))
            out[-1] = merged
            continue
        out.append(s)
    return out


def trip_count(bounds):
    """Source of the number of iterations of `for v in range(lo, hi, st)` (never negative)."""
    lo, hi, st = (ast.unparse(a) for a in bounds)
    if st != "1":
        return f"len(range({lo}, {hi}, {st}))"
    return f"max({hi}, 0)" if lo == "0" else f"max({hi} - {lo}, 0)"


class IndexedTape:
    """The recording plan of a loop whose values sit in slots its counter indexes (see
    Emitter.indexed_loops)."""

    def __init__(self, builder, loop, pushed):
        self.builder = builder
        self.loop = loop
        self.stmts = list(pushed)
        self.stmt_ids = {id(x) for x in pushed}
        self.slots = {}         # id(stmt) -> (tape kind "f"/"i", k)
        self.counts = {"f": 0, "i": 0}
        for x in pushed:
            which = "f" if builder.kinds[ir.target_name(x)] == FLOAT else "i"
            self.slots[id(x)] = (which, self.counts[which])
            self.counts[which] += 1
        self.bases = {w: builder.namegen.fresh(f"_{w}base") for w in ("f", "i")
                      if self.counts[w]}
        lo, hi, _ = (ast.unparse(a) for a in loop._bounds)
        self.lo, self.trips = lo, trip_count(loop._bounds)
        self.span = f"({hi} - {lo})"     # (tape.reserve takes max(..., 0) itself)

    def _slot(self, which, k):
        c = self.counts[which]
        var = self.loop.target.id
        offset = f"({var} - {self.lo})" if self.lo != "0" else var
        return f"{self.bases[which]} + {offset}" + (f" * {c}" if c > 1 else "") + \
            (f" + {k}" if k else "")

    def reserve(self):
        out = []
        for which, kind in (("f", FLOAT), ("i", INT)):
            if self.counts[which]:
                count = self.counts[which]
                out += self.builder.tape.reserve(
                    kind, f"{self.span} * {count}" if count > 1 else self.span)
        return out

    def before(self):
        return ir.parse("\n".join(f"{base} = {self.builder.tape.names[w][1]}"
                                   for w, base in self.bases.items()))

    def store(self, stmt):
        which, k = self.slots[id(stmt)]
        target = ir.target_name(stmt)
        value = stored_source(self.builder.kinds[target], target)
        self.builder.tape.used[which] = True
        return ir.parse(f"{self.builder.tape.names[which][0]}[{self._slot(which, k)}] = {value}")

    def _span(self, w):
        c = self.counts[w]
        return self.trips + (f" * {c}" if c > 1 else "")

    def after_forward(self):
        """The tape's top past the loop's slots."""
        return ir.parse("\n".join(f"{self.builder.tape.names[w][1]} = {base} + {self._span(w)}"
                                   for w, base in self.bases.items()))

    def before_backward(self):
        """The loop's first slot, from the tape's top."""
        return ir.parse("\n".join(f"{base} = {self.builder.tape.names[w][1]} - {self._span(w)}"
                                   for w, base in self.bases.items()))

    def loads(self):
        """The iteration's values, at the start of its reversed iteration."""
        out = []
        for x in self.stmts:
            which, k = self.slots[id(x)]
            target = ir.target_name(x)
            value = restored_source(self.builder.kinds[target],
                                    f"{self.builder.tape.names[which][0]}"
                                    f"[{self._slot(which, k)}]")
            out += ir.parse(f"{target} = {value}")
        return out

    def after_backward(self):
        return ir.parse("\n".join(f"{self.builder.tape.names[w][1]} = {base}"
                                   for w, base in self.bases.items()))
