"""The reverse builder's planning: which primal values the backward sweep reads are kept,
replayed or recorded (the rules are in plan.py), iterated until the needs stop growing."""
import ast

from .. import ir
from ..analysis.types import is_array
from ..rules.table import EXPENSIVE, PAIRED
from . import plan as planning
from .mirrors import AssignMirror, IfMirror, LoopMirror
from .recompute import independent_loops, why_dependent
from .validate import reallocation_error, shape_error


class Planner:
    """The planner of one ReverseBuilder (`b`): reads its statements, layout, kinds and
    adjoint rules' needs (its mirrors), and decides a Plan (reverse/plan.py)."""

    def __init__(self, builder):
        self.b = builder
        self.plan = planning.Plan()
        self._inverses = {}
        self._windows = {}

    def make_plan(self, top):
        """Decide replays and tape pushes, iterating until the needs stop growing; returns
        the Plan (reverse/plan.py)."""
        layout = self.b.layout
        self._windows = planning.reset_windows(self.b.stmts, layout,
                                               lambda s: self._inverse(s) is not None)
        replayable = planning.replayable(self.b.stmts, layout, self.b.prim,
                                         reallocated=self.b.reallocated)
        points = self._plan_with(top, replayable)
        # A transcendental value the backward sweep reads is cheaper to record than to
        # recompute, but only where the forward sweep computes it anyway: where it feeds a
        # value the backward sweep reads from the forward sweep (or the result, when the
        # value is returned too). Elsewhere recording would add a forward loop.
        # Not inside a prange loop: recording there would serialize it (reverse/parallel.py).
        wanted = self._forward_needed(points)
        parallel = {id(s) for s in ir.walk_stmts(self.b.stmts)
                    if isinstance(s, ast.For) and ir.note(s, "parallel", False)}
        # Except sin and cos where the backward sweep evaluates their own partial (cos of
        # the same argument for sin): computed again there, the value comes out of the
        # same sincos call (the pendulum's leapfrog: 32 -> 23 ms for 1e6 steps).
        costly = {v for v, s in replayable.items() if v in wanted
                  and self.b.prim(s).kind == "op" and self.b.prim(s).obj in EXPENSIVE
                  and not self._partial_pairs(s)
                  and not parallel & set(self.b.layout.loops.get(id(s), ()))}
        if costly:
            replayable = replayable.only(lambda v, s: v not in costly)
            self._plan_with(top, replayable)
        self._plan_recomputed(top, replayable)
        self._check_reallocated()
        return self.plan

    def _check_reallocated(self):
        """Each array allocated in a loop with a shape the loop changes is allocated again
        by the backward sweep of its block (a replay), or inside a loop computed again
        iteration by iteration; anything else is refused. An array computed by an operation
        at a shape the loop changes (np.argsort's order of a resized window, np.arange(i)) is
        made again only by a loop computed again (or needed by no backward sweep)."""
        replayed = set().union(*self.plan.replays.values(), *self.plan.replays_after.values())
        by_id = {id(x): x for x in ir.walk_stmts(self.b.stmts)}
        for var, s in self.b.reallocated.items():
            if var in replayed or self._recomputed_allocation(var):
                continue
            loops = self.b.layout.loops[id(s)]
            why = None
            if loops and not self._read_outside(var, loops[-1]):
                why = why_dependent(self.b.stmts, self.b.layout, self.b.kinds,
                                    by_id[loops[-1]], self.b.joined)
            if why is not None:
                raise reallocation_error(s, var, ", and the backward sweep needs it at each "
                                         "iteration's shape: it cannot compute the loop's "
                                         f"iterations again one by one ({why})")
            raise reallocation_error(s, var, ", and the array is used outside the loop body "
                                     "that allocates it (or its shape changes there)")
        for var, (s, source, sizes) in self.b.recomputed_only.items():
            loops = self.b.layout.loops[id(s)]
            if set(loops) & self.plan.recomputed or not set(loops) & self.plan.kept_loops:
                continue    # (made again there, or the backward sweep never enters the loop)
            why = None if not self.b.allow_recompute or self.b.tape.bounded else next(
                (w for w in (why_dependent(self.b.stmts, self.b.layout, self.b.kinds,
                                           by_id[L], self.b.joined) for L in reversed(loops))
                 if w), None)
            raise shape_error(self.b.prim(s), s, var, source, why, sizes)

    def _read_outside(self, var, loop):
        """Whether a statement outside the loop (an id in layout.loops) reads `var`."""
        for x in ir.walk_stmts(self.b.stmts):
            if loop in self.b.layout.loops.get(id(x), ()) or id(x) == loop:
                continue
            fields = [x.value] if isinstance(x, ast.Assign) else \
                [x.test] if isinstance(x, (ast.If, ast.While)) else \
                [x.iter] if isinstance(x, ast.For) else \
                [x.value] if isinstance(x, (ast.Return, ast.Expr)) and x.value else []
            if isinstance(x, ast.Assign) and ir.is_store(x):
                fields.append(x.targets[0])
            if any(isinstance(n, ast.Name) and n.id == var for f in fields for n in ast.walk(f)):
                return True
        return False

    def _plan_recomputed(self, top, replayable):
        """Loops whose iterations record values and are independent (reverse/recompute.py)
        are computed again, iteration by iteration, in the backward sweep: plan again
        without recording for their later iterations."""
        if not self.b.allow_recompute or self.b.tape.bounded:
            return
        inside = {}
        for s in ir.walk_stmts(self.b.stmts):
            for loop in self.b.layout.loops[id(s)]:
                inside.setdefault(loop, set()).add(id(s))
        by_id = {id(s): s for s in ir.walk_stmts(self.b.stmts)}
        # a loop that records only values costly to compute (exp, tanh, ...) keeps its
        # record: computing the iteration again would compute them again, and reading a
        # recorded value back costs less (softmax's exp: 1.8x the forward computed again,
        # 1.1x recorded)
        independent = independent_loops(self.b.stmts, self.b.layout, self.b.kinds,
                                        self.b.joined)
        chosen = {loop for loop in independent
                  if inside.get(loop, set()) & self.plan.pushed and not all(
                      self._costly(by_id[i]) for i in inside[loop] & self.plan.pushed)}
        chosen = self._outside_checkpoints(chosen)
        while chosen:
            self.plan.recomputed = chosen
            final = planning.replayable(self.b.stmts, self.b.layout, self.b.prim, chosen,
                                        self.b.reallocated)
            points = self._plan_with(top, final.only(
                lambda v, s: v in replayable or not self._costly(s)))
            # a value recorded inside such a loop for a reader outside it: the loop's plain
            # forward would not record it, and its backward would leave another value there
            bad = set()
            for s in ir.walk_stmts(self.b.stmts):
                if (id(s) not in self.plan.pushed and id(s) not in self.plan.inverted) or \
                        not isinstance(s, (ast.Assign, ast.For)):
                    continue
                var = s.target.id if isinstance(s, ast.For) else ir.target_name(s)
                for loop in chosen & set(self.b.layout.loops[id(s)]):
                    if any(loop not in p.loops for p in points.get(var, ())):
                        bad.add(loop)
            if not bad:
                return
            chosen = self._outside_checkpoints(chosen - bad)
        self.plan.recomputed = set()
        self._plan_with(top, replayable)

    def _partial_pairs(self, s):
        """Whether the backward sweep evaluates the partial of s = sin(x) (cos(x)), whose
        call LLVM shares with sin(x) computed again beside it."""
        prim = self.b.prim(s)
        return prim.obj in PAIRED and ir.target_name(s) in self.b.active and \
            all(self.b.is_active(a) for _, a in prim.diff_operands())

    def _outside_checkpoints(self, chosen):
        """With checkpointing, the loops computed again iteration by iteration are the
        top-level ones and the loops inside them, as without it: such a loop keeps nothing
        on the tape across iterations, so checkpointing leaves it alone (checkpoint.select)
        and its gradient is the one without checkpointing to the bit (the same plan, the same
        inner loops running upward: reverse/ascending.py). Not a loop inside a top-level
        loop that is checkpointed: each step is recorded as a whole there."""
        if self.b.checkpoint is None:
            return chosen
        # (outside every loop: a top-level loop, or one in a top-level `if`, as after an
        # early return, which checkpoint.select never checkpoints)
        top = {loop for loop in chosen if not self.b.layout.loops[loop]}
        return {loop for loop in chosen if loop in top or set(self.b.layout.loops[loop]) & top}

    def _costly(self, s):
        return self.b.prim(s).kind == "op" and self.b.prim(s).obj in EXPENSIVE

    def _forward_needed(self, points):
        """Variables the forward sweep must compute for the backward sweep (or the value)."""
        need = {v for v in points if v in self.b.kinds}
        if self.b.value_needed and isinstance(self.b.result, ast.Name):
            need.add(self.b.result.id)
        reads = {}      # variable -> the names its assignments (and stores into it) read
        for s in ir.walk_stmts(self.b.stmts):
            if not isinstance(s, ast.Assign):
                continue
            if ir.is_store(s):
                reads.setdefault(s.targets[0].value.id, []).extend(ir.atom_names([s.value]))
            else:
                reads.setdefault(ir.target_name(s), []).extend(
                    ir.atom_names(self.b.prim(s).operands))
        todo = list(need)
        while todo:
            for r in reads.get(todo.pop(), ()):
                if r not in need:
                    need.add(r)
                    todo.append(r)
        return need

    def _plan_with(self, top, replayable):
        layout = self.b.layout
        self.plan.pushed = set()
        self.plan.inverted = {}
        self.plan.replays = {}
        self.plan.replays_after = {}
        self.plan.kept_loops = set()
        while True:
            points = {}
            self.plan.replays = {}
            self.plan.replays_after = {}
            self._collect(top, self.b.stmts, points)
            self._recompute_reads(points)
            self._reallocation_reads(points)
            self._add_replays(replayable, points)
            for site, _ in self.plan.inverted.values():
                # the undoing statement reads the value the site assigned
                self._need(points, [ir.target_name(site)], layout.pos[id(site)],
                           layout.loops[id(site)])
            pushed, inverted = set(), {}
            for var, pts in points.items():
                if is_array(self.b.kinds.get(var)):
                    # an array's backward readers need its shape (the same every iteration,
                    # see validate.py) or final contents (plan.final_loads), never a
                    # recorded copy
                    continue
                for site in layout.sites.get(var, []):
                    if planning.needs_push(layout, site, pts, self.plan.recomputed,
                                           self._windows.get(id(site))):
                        undo = self._inverse(site)
                        if undo is not None:
                            inverted[id(site)] = (site, undo)
                        else:
                            pushed.add(id(site))
            kept = self._nonempty_loops(top, pushed | set(inverted))
            if pushed == self.plan.pushed and inverted.keys() == self.plan.inverted.keys() and \
                    kept == self.plan.kept_loops:
                return points
            self.plan.pushed, self.plan.inverted, self.plan.kept_loops = pushed, inverted, kept

    def _inverse(self, site):
        if id(site) not in self._inverses:
            self._inverses[id(site)] = planning.inverse(site, self.b.layout, self.b.kinds)
        return self._inverses[id(site)]

    def _recompute_reads(self, points):
        """What a recomputed iteration reads from before its loop is read by the backward
        sweep there, so the planner keeps it as it keeps the backward sweep's own reads."""
        for s in ir.walk_stmts(self.b.stmts):
            if not isinstance(s, ast.For) or id(s) not in self.plan.recomputed:
                continue
            own = ir.assigned(s.body)
            for x in ir.walk_stmts(s.body):
                names = [n.id for n in ir.walk(x.test if isinstance(x, (ast.If, ast.While))
                                               else x.iter if isinstance(x, ast.For) else x)
                         if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
                         and n.id not in own]
                self._need(points, names, self.b.layout.pos[id(x)], self.b.layout.loops[id(x)])

    def _reallocation_reads(self, points):
        """An array allocated in a loop with a shape the loop changes is needed at the
        start of its block's backward sweep, where it is allocated again (a replay), unless
        a loop around it is computed again iteration by iteration (which allocates it)."""
        layout = self.b.layout
        for var, s in self.b.reallocated.items():
            if not self._recomputed_allocation(var):
                end = layout.end_pos(layout.blocks[layout.block_of[id(s)]])
                points.setdefault(var, []).append(
                    planning.NeedPoint(end, layout.loops[id(s)]))

    def _recomputed_allocation(self, var):
        """Whether var is an array allocated with a shape its loop changes inside a loop
        whose iterations are computed again (which allocates it again itself)."""
        s = self.b.reallocated.get(var)
        return s is not None and bool(set(self.b.layout.loops[id(s)]) & self.plan.recomputed)

    def _need(self, points, names, pos, loops):
        """Record backward reads; a read of a for loop's own index inside that loop is
        served by the reversed loop and needs nothing from the forward sweep."""
        for n in names:
            if n in self.b.kinds and not any(self.b.loop_target.get(L) == n for L in loops):
                points.setdefault(n, []).append(planning.NeedPoint(pos, loops))

    def _collect(self, mirrors, block, points):
        layout = self.b.layout
        for m in mirrors:
            s = m.stmt
            pos, loops = layout.pos[id(s)], layout.loops[id(s)]
            if isinstance(m, AssignMirror):
                names = [n.id for a in m.adj for n in ir.walk(a) if isinstance(n, ast.Name)
                         and isinstance(n.ctx, ast.Load)]
                self._need(points, names, pos, loops)
            elif isinstance(m, IfMirror):
                if self._has_content(m):
                    self._need(points, [s.test.id], pos, loops)
                self._collect(m.body, s.body, points)
                self._collect(m.orelse, s.orelse, points)
            else:
                if id(s) in self.plan.kept_loops:
                    if isinstance(s, ast.For):
                        self._need(points, ir.atom_names(s._bounds), pos, loops)
                self._collect(m.body, s.body, points)

    def _add_replays(self, replayable, points):
        """Needed block-local values are replayed; their inputs become needed in turn."""
        layout = self.b.layout
        work = [v for v in points if v in replayable]
        done = set()
        while work:
            v = work.pop()
            if v in done or self._recomputed_allocation(v):
                continue
            done.add(v)
            s = replayable[v]
            block_id = layout.block_of[id(s)]
            block = layout.blocks[block_id]
            end = layout.end_pos(block)
            loops = layout.block_loops[block_id]
            restore = replayable.after.get(v)
            if restore is None:
                self.plan.replays.setdefault(block_id, set()).add(v)
            else:
                # replayed once `restore`'s mirror has put back what it changes: operands
                # the block assigns are needed as they were at the definition (so the
                # mirrors of their later assignments restore them)
                self.plan.replays_after.setdefault(id(restore), set()).add(v)
                changed = ir.assigned(block)
            for a in self.b.prim(s).operands:
                if not (isinstance(a, ast.Name) and a.id in self.b.kinds):
                    continue
                if a.id in replayable and layout.block_of[id(replayable[a.id])] == block_id:
                    work.append(a.id)
                elif restore is not None and a.id in changed:
                    self._need(points, [a.id], layout.pos[id(s)], loops)
                else:
                    self._need(points, [a.id], end, loops)
                    if a.id in replayable:
                        # block-local in an enclosing block (its users are all inside
                        # it): replayed there, before this inner block's sweep
                        work.append(a.id)
        for v in done:
            points.pop(v, None)

    def _has_content(self, m, pushed=None, kept=None):
        """Whether a mirror emits anything: adjoint statements, pops, replays or a kept loop."""
        pushed = self.plan.pushed if pushed is None else pushed
        kept = self.plan.kept_loops if kept is None else kept
        if isinstance(m, AssignMirror):
            return bool(m.adj) or id(m.stmt) in pushed or id(m.stmt) in self.plan.inverted
        if isinstance(m, IfMirror):
            return any(self._has_content(x, pushed, kept) for x in m.body + m.orelse) or \
                bool(self.plan.replays.get(id(m.stmt.body)) or self.plan.replays.get(id(m.stmt.orelse)))
        return id(m.stmt) in kept

    def _nonempty_loops(self, mirrors, pushed):
        """The loops whose backward sweep has content, decided innermost first."""
        kept = set()

        def visit(ms):
            for m in ms:
                if isinstance(m, IfMirror):
                    visit(m.body)
                    visit(m.orelse)
                elif isinstance(m, LoopMirror):
                    visit(m.body)
                    if any(self._has_content(x, pushed, kept) for x in m.body) or \
                            self.plan.replays.get(id(m.stmt.body)) or id(m.stmt) in pushed:
                        kept.add(id(m.stmt))

        visit(mirrors)
        return kept
