"""The reverse builder's planning: which primal values the backward sweep reads are kept,
replayed or recorded (the rules are in plan.py), iterated until the needs stop growing."""
import ast
import copy

from .. import ir
from ..analysis.types import FLOAT, is_array
from ..rules.table import EXPENSIVE, PAIRED
from . import plan as planning
from .mirrors import AssignMirror, IfMirror, LoopMirror
from .recompute import independent_loops


class Planning:
    def _write_once(self, temps):
        """Arrays the vectorizer made outside any user loop: each element is stored
        exactly once (its own loop nest covers each index once). The adjoint of such a store
        need not zero the element's adjoint afterwards: no earlier store to the element
        exists to receive it."""
        return {a for a in temps if len(self.layout.sites.get(a, ())) == 1}

    def _increments(self):
        """Stores that add to the element they read: `t0 = A[i]; t = t0 + e; A[i] = t` (and
        `t0 - e`), the normal form of `A[i] += e`. The element's adjoint passes through
        unchanged, so the store's adjoint reads it without zeroing it and the load's adjoint
        adds nothing back. Returns {id(store): load temporary, id(add): load temporary}: the
        load temporary gets no adjoint. Only within one block, with no store to A and no new
        index value between the load and the store."""
        out = {}
        users = {}
        for s in ir.walk_stmts(self.stmts):
            for name in ir.reads(s):
                users.setdefault(name, []).append(s)
        for s in ir.walk_stmts(self.stmts):
            if not (ir.is_store(s) and isinstance(s.value, ast.Name)) \
                    or ir.note(s, "atomic", False):
                continue
            arr = s.targets[0].value.id
            t = s.value.id
            if arr not in self.active or arr in self.write_once \
                    or len(self.layout.sites.get(t, ())) != 1 or len(users.get(t, ())) != 1:
                continue
            add = self.layout.sites[t][0]
            if not (isinstance(add, ast.Assign) and isinstance(add.value, ast.BinOp)
                    and isinstance(add.value.op, (ast.Add, ast.Sub))):
                continue
            left, right = add.value.left, add.value.right
            loads = [a for a in ((left, right) if isinstance(add.value.op, ast.Add)
                                 else (left,))
                     if isinstance(a, ast.Name) and len(self.layout.sites.get(a.id, ())) == 1]
            if isinstance(left, ast.Name) and isinstance(right, ast.Name) \
                    and left.id == right.id:
                continue
            for atom in loads:
                load = self.layout.sites[atom.id][0]
                if isinstance(load, ast.Assign) and not ir.is_store(load) \
                        and isinstance(load.value, ast.Subscript) \
                        and isinstance(load.value.value, ast.Name) \
                        and load.value.value.id == arr \
                        and ast.dump(load.value.slice) == ast.dump(s.targets[0].slice) \
                        and users.get(atom.id) == [add] \
                        and self._same_block_untouched(load, add, s, arr):
                    out[id(s)] = out[id(add)] = atom.id
                    break
        return out

    def _stored_values(self):
        """Numbers the program stores into an array element that nothing writes again:
        `_t6 = math.tanh(_t5); h[i, j] = _t6` in a loop nest over (i, j). The adjoint of the
        tanh reads `h[i, j]` instead of recording `_t6` or computing the tanh again, as a
        hand-written adjoint does. Returns {var: the element, as a Subscript}.

        The element holds the value in the backward sweep when the store's index is the
        variables of all its enclosing loops (each a range from a non-negative constant with
        a positive step: every iteration writes its own element) and constants, the array has
        no other store or assignment except earlier ones outside those loops, and the value
        is the one stored (the function allocates the array as float64). Not in checkpointed or
        CUDA code, whose arrays are restored or shared."""
        if self.checkpoint is not None or self.tape.bounded:
            return {}
        layout = self.layout
        stores = {}
        for x in ir.walk_stmts(self.stmts):
            if ir.is_store(x):
                stores.setdefault(x.targets[0].value.id, []).append(x)
        loops = {id(x): x for x in ir.walk_stmts(self.stmts) if isinstance(x, ast.For)}
        out = {}
        for arr, sites in stores.items():
            kind = self.kinds.get(arr)
            if len(sites) != 1 or not is_array(kind) or not kind.is_float:
                continue
            store = sites[0]
            if not isinstance(store.value, ast.Name):
                continue
            var = store.value.id
            defs = layout.sites.get(var, ())
            if self.kinds.get(var) != FLOAT or len(defs) != 1 or var in self.params \
                    or layout.block_of[id(defs[0])] != layout.block_of[id(store)]:
                continue
            if any(L not in loops for L in layout.loops[id(store)]):
                continue        # in a while loop: its iterations are not counted
            enclosing = [loops[L] for L in layout.loops[id(store)]]
            atoms = ir.index_atoms(store.targets[0])
            names = {a.id for a in atoms if isinstance(a, ast.Name)}
            if not all(isinstance(a, ast.Constant) or a.id in
                       {L.target.id for L in enclosing} for a in atoms) or \
                    not all(_counts_up(L) and L.target.id in names
                            and L.target.id not in ir.assigned(L.body) for L in enclosing):
                continue
            if not _float64_allocation(layout.sites.get(arr, ())):
                continue
            here = set(layout.loops[id(store)])
            if any(layout.pos[id(w)] > layout.pos[id(store)] or here & set(layout.loops[id(w)])
                   for w in layout.sites.get(arr, ())):
                continue
            out[var] = ast.Subscript(value=ir.name(arr), slice=copy.deepcopy(
                store.targets[0].slice), ctx=ast.Load())
        return out

    def _same_block_untouched(self, load, add, store, arr):
        """Whether load, add and store are in this order in one block, with no store to
        `arr` and no assignment to a name the store's index reads between them."""
        block = self.layout.block_of[id(store)]
        if not (self.layout.block_of[id(load)] == block == self.layout.block_of[id(add)]):
            return False
        stmts = self.layout.blocks[block]
        i, j, k = (next(n for n, x in enumerate(stmts) if x is y) for y in (load, add, store))
        if not i < j < k:
            return False
        index = set(ir.atom_names(ir.index_atoms(store.targets[0])))
        for x in stmts[i + 1:k]:
            if not isinstance(x, ast.Assign):
                return False
            if ir.is_store(x):
                if x.targets[0].value.id == arr:
                    return False
            elif ir.target_name(x) in index:
                return False
        return True

    def _contributions(self):
        """{var: the statements its adjoint receives from, once per operand}."""
        out = {}
        for s in ir.walk_stmts(self.stmts):
            for atom in self._contributing_operands(s):
                out.setdefault(atom.id, []).append(s)
        return out

    def _single_use_temps(self, contributions):
        """Active scalars assigned once whose adjoint contributions all come from later in
        their own block, the last of them unconditionally: that one (the first the backward
        sweep meets) assigns the adjoint instead of accumulating into a reset zero, so the
        adjoint needs no initialization and no reset. Returns {var: id of that statement}."""
        out = {}
        for var, users in contributions.items():
            sites = self.layout.sites.get(var, [])
            if len(sites) != 1 or self.kinds.get(var) != FLOAT or var in self.params or \
                    (isinstance(self.result, ast.Name) and self.result.id == var):
                continue
            site = sites[0]
            if not isinstance(site, ast.Assign):
                continue
            block = self.layout.block_of[id(site)]
            pos = self.layout.pos[id(site)]
            last = max(users, key=lambda u: self.layout.pos[id(u)])
            if all(self.layout.inside(u, block) and self.layout.pos[id(u)] > pos
                   for u in users) and self.layout.block_of[id(last)] == block:
                out[var] = id(last)
        return out

    # planning --------------------------------------------------------------
    def make_plan(self, top):
        """Decide replays and tape pushes (self.plan, a reverse/plan.py Plan), iterating until
        the needs stop growing."""
        layout = self.layout
        self._windows = planning.reset_windows(self.stmts, layout,
                                               lambda s: self._inverse(s) is not None)
        replayable = planning.replayable(self.stmts, layout, self.prim)
        points = self._plan_with(top, replayable)
        # A transcendental value the backward sweep reads is cheaper to record than to
        # recompute, but only where the forward sweep computes it anyway: where it feeds a
        # value the backward sweep reads from the forward sweep (or the result, when the
        # value is returned too). Elsewhere recording would add a forward loop.
        # Not inside a prange loop: recording there would serialize it (reverse/parallel.py).
        wanted = self._forward_needed(points)
        parallel = {id(s) for s in ir.walk_stmts(self.stmts)
                    if isinstance(s, ast.For) and ir.note(s, "parallel", False)}
        # Except sin and cos where the backward sweep evaluates their own partial (cos of
        # the same argument for sin): computed again there, the value comes out of the
        # same sincos call (the pendulum's leapfrog: 32 -> 23 ms for 1e6 steps).
        costly = {v for v, s in replayable.items() if v in wanted
                  and self.prim(s).kind == "op" and self.prim(s).obj in EXPENSIVE
                  and not self._partial_pairs(s)
                  and not parallel & set(self.layout.loops.get(id(s), ()))}
        if costly:
            replayable = replayable.only(lambda v, s: v not in costly)
            self._plan_with(top, replayable)
        self._plan_recomputed(top, replayable)

    def _plan_recomputed(self, top, replayable):
        """Loops whose iterations record values and are independent (reverse/recompute.py)
        are computed again, iteration by iteration, in the backward sweep: plan again
        without recording for their later iterations."""
        if not self.allow_recompute or self.tape.bounded:
            return
        inside = {}
        for s in ir.walk_stmts(self.stmts):
            for loop in self.layout.loops[id(s)]:
                inside.setdefault(loop, set()).add(id(s))
        by_id = {id(s): s for s in ir.walk_stmts(self.stmts)}
        # a loop that records only values costly to compute (exp, tanh, ...) keeps its
        # record: computing the iteration again would compute them again, and reading a
        # recorded value back costs less (softmax's exp: 1.8x the forward computed again,
        # 1.1x recorded)
        chosen = {loop for loop in independent_loops(self.stmts, self.layout, self.kinds)
                  if inside.get(loop, set()) & self.plan.pushed and not all(
                      self._costly(by_id[i]) for i in inside[loop] & self.plan.pushed)}
        chosen = self._outside_checkpoints(chosen)
        while chosen:
            self.plan.recomputed = chosen
            final = planning.replayable(self.stmts, self.layout, self.prim, chosen)
            points = self._plan_with(top, final.only(
                lambda v, s: v in replayable or not self._costly(s)))
            # a value recorded inside such a loop for a reader outside it: the loop's plain
            # forward would not record it, and its backward would leave another value there
            bad = set()
            for s in ir.walk_stmts(self.stmts):
                if (id(s) not in self.plan.pushed and id(s) not in self.plan.inverted) or \
                        not isinstance(s, (ast.Assign, ast.For)):
                    continue
                var = s.target.id if isinstance(s, ast.For) else ir.target_name(s)
                for loop in chosen & set(self.layout.loops[id(s)]):
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
        prim = self.prim(s)
        return prim.obj in PAIRED and ir.target_name(s) in self.active and \
            all(self.is_active(a) for _, a in prim.diff_operands())

    def _outside_checkpoints(self, chosen):
        """With checkpointing, the loops computed again iteration by iteration are the
        top-level ones and the loops inside them, as without it: such a loop keeps nothing
        on the tape across iterations, so checkpointing leaves it alone (checkpoint.select)
        and its gradient is the one without checkpointing to the bit (the same plan, the same
        inner loops running upward: reverse/ascending.py). Not a loop inside a top-level
        loop that is checkpointed: each step is recorded as a whole there."""
        if self.checkpoint is None:
            return chosen
        top = chosen & {id(x) for x in self.stmts}
        return {loop for loop in chosen if loop in top or set(self.layout.loops[loop]) & top}

    def _costly(self, s):
        return self.prim(s).kind == "op" and self.prim(s).obj in EXPENSIVE

    def _forward_needed(self, points):
        """Variables the forward sweep must compute for the backward sweep (or the value)."""
        need = {v for v in points if v in self.kinds}
        if self.value_needed and isinstance(self.result, ast.Name):
            need.add(self.result.id)
        changed = True
        while changed:
            changed = False
            for s in ir.walk_stmts(self.stmts):
                if not isinstance(s, ast.Assign):
                    continue
                if ir.is_store(s):
                    hit = s.targets[0].value.id in need
                    reads = ir.atom_names([s.value])
                else:
                    hit = ir.target_name(s) in need
                    reads = ir.atom_names(self.prim(s).operands)
                if hit:
                    for r in reads:
                        if r not in need:
                            need.add(r)
                            changed = True
        return need

    def _plan_with(self, top, replayable):
        layout = self.layout
        self.plan.pushed = set()
        self.plan.inverted = {}
        self.plan.replays = {}
        self.plan.replays_after = {}
        self.plan.kept_loops = set()
        while True:
            points = {}
            self.plan.replays = {}
            self.plan.replays_after = {}
            self._collect(top, self.stmts, points)
            self._recompute_reads(points)
            self._add_replays(replayable, points)
            for site, _ in self.plan.inverted.values():
                # the undoing statement reads the value the site assigned
                self._need(points, [ir.target_name(site)], layout.pos[id(site)],
                           layout.loops[id(site)])
            pushed, inverted = set(), {}
            for var, pts in points.items():
                if is_array(self.kinds.get(var)):
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
            self._inverses[id(site)] = planning.inverse(site, self.layout, self.kinds)
        return self._inverses[id(site)]

    def _recompute_reads(self, points):
        """What a recomputed iteration reads from before its loop is read by the backward
        sweep there, so the planner keeps it as it keeps the backward sweep's own reads."""
        for s in ir.walk_stmts(self.stmts):
            if not isinstance(s, ast.For) or id(s) not in self.plan.recomputed:
                continue
            own = ir.assigned(s.body)
            for x in ir.walk_stmts(s.body):
                names = [n.id for n in ir.walk(x.test if isinstance(x, (ast.If, ast.While))
                                                else x.iter if isinstance(x, ast.For) else x)
                         if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
                         and n.id not in own]
                self._need(points, names, self.layout.pos[id(x)], self.layout.loops[id(x)])

    def _need(self, points, names, pos, loops):
        """Record backward reads; a read of a for loop's own index inside that loop is
        served by the reversed loop and needs nothing from the forward sweep."""
        for n in names:
            if n in self.kinds and not any(self.loop_target.get(L) == n for L in loops):
                points.setdefault(n, []).append(planning.NeedPoint(pos, loops))

    def _collect(self, mirrors, block, points):
        layout = self.layout
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
        layout = self.layout
        work = [v for v in points if v in replayable]
        done = set()
        while work:
            v = work.pop()
            if v in done:
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
            for a in self.prim(s).operands:
                if not (isinstance(a, ast.Name) and a.id in self.kinds):
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


def _counts_up(loop):
    """A for loop over a range starting at a non-negative constant with a positive constant
    step (its variable never wraps a negative index onto another element)."""
    lo, _, st = getattr(loop, "_bounds", (None, None, None))
    return isinstance(lo, ast.Constant) and type(lo.value) is int and lo.value >= 0 and \
        isinstance(st, ast.Constant) and type(st.value) is int and st.value > 0


def _float64_allocation(sites):
    """Whether the array's one assignment allocates float64 (`np.empty(shape)`,
    `np.zeros(shape, np.float64)`): a number stored into it is kept exactly."""
    if len(sites) != 1 or not isinstance(sites[0], ast.Assign):
        return False
    call = sites[0].value
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and isinstance(call.func.value, ast.Name) and call.func.value.id == "np"
            and call.func.attr in ("empty", "zeros", "ones")):
        return False
    dtype = call.args[1:] + [k.value for k in call.keywords if k.arg == "dtype"]
    return all(ast.unparse(d) in ("np.float64", "float") for d in dtype) and \
        all(k.arg == "dtype" for k in call.keywords)
