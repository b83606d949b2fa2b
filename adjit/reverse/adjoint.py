"""Statement-wise adjoint generation: a forward sweep and a backward sweep in one function.

The forward sweep is the normalized primal plus tape pushes; the backward sweep visits the
statements in reverse, with each statement's adjoint rule, the branch each `if` took (its
condition variable) and each loop reversed (its bounds, or its recorded trip count).
"""
import ast
import copy

from ..errors import error_at
from .. import ir
from ..analysis.prims import classify
from ..analysis.types import BOOL, FLOAT, INT, is_array
from . import checkpoint as checkpointing
from . import plan as planning
from .naming import BarNames
from .tape import Tape
from ..rules.templates import accumulate, fold, instantiate, scale


class _AssignMirror:
    def __init__(self, stmt, adj):
        self.stmt = stmt
        self.adj = adj


class _IfMirror:
    def __init__(self, stmt, body, orelse):
        self.stmt = stmt
        self.body = body
        self.orelse = orelse


class _LoopMirror:
    def __init__(self, stmt, body):
        self.stmt = stmt
        self.body = body


class AdjointProgram:
    """The pieces of a generated gradient function, ready for codegen to assemble."""

    def __init__(self, init, forward, backward_init, backward, bars, tape):
        self.init = init
        self.forward = forward
        self.backward_init = backward_init
        self.backward = backward
        self.bars = bars
        self.tape = tape


class ReverseBuilder:
    def __init__(self, stmts, result, params, kinds, active, env, namegen, temps=()):
        self.stmts = stmts
        self.result = result
        self.params = params
        self.kinds = kinds
        self.active = active
        self.env = env
        self.namegen = namegen
        self.layout = planning.Layout(stmts)
        self.bar = BarNames(set(kinds) | set(namegen.taken))
        self.tape = Tape(namegen)
        self._prims = {}
        self.loop_target = {id(s): s.target.id for s in ir.walk_stmts(stmts)
                            if isinstance(s, ast.For)}
        self._check_arrays()
        self.single_use = self._single_use_temps()
        self.write_once = self._write_once(temps)
        self.value_needed = False     # value_and_grad / vjp also return the value
        self.checkpoint = None        # snapshots for top-level time loops: int or "auto"
        self.vec_temps = set()        # arrays the vectorizer made (fully written before read)
        self.checkpointed = {}        # id(loop) -> checkpointing.Checkpointed

    # helpers -------------------------------------------------------------
    def prim(self, s):
        if id(s) not in self._prims:
            self._prims[id(s)] = classify(s.value, self.env)
        return self._prims[id(s)]

    def is_active(self, atom):
        return isinstance(atom, ast.Name) and atom.id in self.active

    def _check_arrays(self):
        for var, sites in self.layout.sites.items():
            if not is_array(self.kinds.get(var)):
                continue
            origin = ir.note(sites[0], "origin", None)
            if var in self.params or len(sites) > 1:
                raise error_at(origin, f"the array variable '{var}' is reassigned",
                               "Assign each array variable once; update it in place "
                               f"({var}[:] = ...) or copy values (b = a.copy()) instead of "
                               "rebinding names.")
            s = sites[0]
            if self.prim(s).kind == "copy":
                raise error_at(origin, f"'{var}' = another array makes two names for one array"
                               " (or rebinds an array name to a new value inside a loop)",
                               "Use a.copy() for a new array, keep using the original name, or "
                               "update the array in place (a[:] = ...).")
            if self.prim(s).reads_operands() and var in self.active:
                self._check_operands_kept(s)    # (an inactive product has no adjoint)
            loops = self.layout.loops[id(s)]
            if loops and self.prim(s).kind == "alloc":
                varying = set()
                for loop_id in loops:
                    loop = next(x for x in ir.walk_stmts(self.stmts) if id(x) == loop_id)
                    varying |= ir.assigned(loop.body)
                # an array operand (np.zeros_like(a)) lends its own shape, which this
                # same check fixed where that array was allocated (or it is an argument)
                shape = [a.id for a in self.prim(s).operands if isinstance(a, ast.Name)
                         and not is_array(self.kinds.get(a.id))]
                if any(n in varying for n in shape):
                    raise error_at(origin, f"the array '{var}' is allocated in a loop with a "
                                   "shape that changes between iterations",
                                   "Allocate it once before the loop, with its largest shape.")

    def _write_once(self, temps):
        """Arrays the vectorizer made outside any user loop: each element is stored
        exactly once (its own loop nest covers each index once). The adjoint of such a store
        need not zero the element's adjoint afterwards: no earlier store to the element
        exists to receive it."""
        return {a for a in temps if len(self.layout.sites.get(a, ())) == 1}

    def _check_operands_kept(self, s):
        """The adjoint of an array-level operation reads its operands' values in the
        backward sweep: nothing may change them after the operation."""
        pos, loops = self.layout.pos[id(s)], set(self.layout.loops[id(s)])
        for a in self.prim(s).diff_operands():
            arr = a[1].id
            for w in ir.walk_stmts(self.stmts):
                changes = (ir.is_store(w) and w.targets[0].value.id == arr) or \
                    (isinstance(w, ast.Assign) and ir.target_name(w) == arr)
                if changes and loops and loops & set(self.layout.loops[id(w)]):
                    what = "an array expression" if arr.startswith("_") else \
                        f"the array '{arr}'"
                    raise error_at(ir.note(s, "origin", None),
                                   f"a matrix product inside a loop reading {what} "
                                   "that the same loop computes again in its next iteration",
                                   "Its adjoint would need every iteration's operand: write the "
                                   "product as explicit loops over elements (one row of A times "
                                   "x at a time), or move it out of the loop.")
                if changes and (self.layout.pos[id(w)] > pos or
                                loops & set(self.layout.loops[id(w)])):
                    raise error_at(ir.note(s, "origin", None),
                                   f"the array '{arr}' is changed after a matrix product "
                                   "reads it", "Finish changing the array before the "
                                   "product, or multiply a copy (a.copy() @ b).")

    def _single_use_temps(self):
        """Active scalars assigned once whose adjoint contributions all come from later in
        their own block, the last of them unconditionally: that one (the first the backward
        sweep meets) assigns the adjoint instead of accumulating into a reset zero, so the
        adjoint needs no initialization and no reset. Returns {var: id of that statement}."""
        contributions = {}
        for s in ir.walk_stmts(self.stmts):
            for atom in self._contributing_operands(s):
                contributions.setdefault(atom.id, []).append(s)
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

    def _contributing_operands(self, s):
        if not isinstance(s, ast.Assign):
            return []
        if ir.is_store(s):
            arr = s.targets[0].value.id
            return [s.value] if arr in self.active and self.is_active(s.value) else []
        target = ir.target_name(s)
        if target not in self.active or is_array(self.kinds.get(target)):
            return []
        prim = self.prim(s)
        if prim.kind == "load":
            return []
        return [a for _, a in prim.diff_operands() if self.is_active(a)]

    # adjoint rules ---------------------------------------------------------
    def adjoint_of(self, s):
        """Adjoint statements of one simple assignment."""
        origin = ir.note(s, "origin", None)
        if ir.is_store(s):
            sub = s.targets[0]
            arr = sub.value.id
            if arr not in self.active:
                return []
            slot = ast.Subscript(value=ir.name(self.bar(arr)), slice=copy.deepcopy(sub.slice),
                                 ctx=ast.Load())
            out = []
            if self.is_active(s.value):
                out.append(accumulate(self.bar(s.value.id), slot, False,
                                      self.single_use.get(s.value.id) == id(s), origin))
            if arr in self.write_once or ir.note(s, "atomic", False):
                return out      # (an atomic add does not overwrite: the adjoint stays)
            zero = ast.Assign(targets=[_as_store(slot)], value=ir.const(0.0), lineno=0)
            ir.annotate(zero, origin=origin)
            return out + [zero]
        target = ir.target_name(s)
        if target not in self.active:
            return []
        prim = self.prim(s)
        bar = self.bar(target)
        if prim.kind == "load":
            arr = prim.operands[0].id
            if arr not in self.active:
                return []
            slot = ast.Subscript(value=ir.name(self.bar(arr)), slice=copy.deepcopy(s.value.slice),
                                 ctx=ast.Store())
            out = [accumulate(slot, ir.name(bar), False, False, origin)]
            return out + self._reset(target, s)
        if prim.kind == "arrayop":
            return self._array_adjoint(s, prim, target, bar, origin)
        if prim.kind in ("copyarr", "alloc"):
            out = []
            src = prim.operands[0].id if prim.kind == "copyarr" else None
            if src in self.active:
                out.append(accumulate(self.bar(src), ir.name(bar), False, False, origin))
            if self.layout.loops[id(s)]:
                # the array is new each iteration: the earlier iteration's starts with no adjoint
                fill = ast.Expr(value=ast.Call(func=ast.Attribute(value=ir.name(bar),
                                                                  attr="fill", ctx=ast.Load()),
                                               args=[ir.const(0.0)], keywords=[]))
                ir.annotate(fill, origin=origin)
                out.append(fill)
            return out
        partials = {}
        for k, atom in prim.diff_operands():
            if not self.is_active(atom):
                continue
            if prim.kind == "copy":
                partial = ir.const(1.0)
            else:
                partial = instantiate(prim.rule.partials[k], prim.rule.params, prim.operands,
                                      target)
            partials.setdefault(atom.id, []).append(partial)
        out = []
        for var, terms in partials.items():
            expr, negated = scale(bar, _combine(terms))
            first = self.single_use.get(var) == id(s)
            out.append(accumulate(self.bar(var), expr, negated, first, origin))
        return out + self._reset(target, s)

    def _array_adjoint(self, s, prim, target, bar, origin):
        """Adjoints of the array-level operations (matrix products, linspace, arange)."""
        ops = prim.operands
        # (operand, expression adding to its adjoint) for C = op(...), C_bar the cotangent
        if prim.obj in ("linspace", "arange"):
            helper = {("linspace", 0): "linspace_start_bar", ("linspace", 1): "linspace_stop_bar",
                      ("arange", 0): "sum_bar", ("arange", 2): "arange_step_bar"}
            rules = [(atom, f"vec.{helper[prim.obj, k]}({bar})")
                     for k, atom in prim.diff_operands()]
        else:
            a, b = ops[0], ops[1]
            rules = {"mm": ((a, f"vec.mm_nt({bar}, {b.id})"), (b, f"vec.mm_tn({a.id}, {bar})")),
                     "mm_tn": ((a, f"vec.mm_nt({b.id}, {bar})"), (b, f"vec.mm({a.id}, {bar})")),
                     "mm_nt": ((a, f"vec.mm({bar}, {b.id})"), (b, f"vec.mm_tn({bar}, {a.id})")),
                     "mm_tt": ((a, f"vec.mm_tt({b.id}, {bar})"),
                               (b, f"vec.mm_tt({bar}, {a.id})"))}[prim.obj]
        out = []
        for atom, expr in rules:
            if self.is_active(atom):
                first = self.single_use.get(atom.id) == id(s)   # linspace's scalar operands
                out.append(accumulate(self.bar(atom.id), ast.parse(expr, mode="eval").body,
                                      False, first, origin))
        if self.layout.loops[id(s)]:
            out += _parse(f"{bar}.fill(0.0)")
        for node in out:
            ir.annotate(node, origin=origin)
        return out

    def _reset(self, var, site):
        """`v_bar = 0.0` at the mirror of v's assignment, unless nothing reads v_bar again:
        a single-use temporary, or a variable whose other assignments (the only readers of
        v_bar after this mirror) all come later in the forward sweep and share no loop."""
        if var in self.single_use:
            return []
        sites = self.layout.sites.get(var, [])
        readers = [planning.NeedPoint(self.layout.pos[id(s)], self.layout.loops[id(s)])
                   for s in sites]
        if var not in self.params and not planning.needs_push(self.layout, site, readers):
            return []
        node = ast.Assign(targets=[ir.store(self.bar(var))], value=ir.const(0.0), lineno=0)
        ir.annotate(node, origin=None)
        return [node]

    # mirrors ---------------------------------------------------------------
    def mirrors(self, stmts):
        out = []
        for s in reversed(stmts):
            if isinstance(s, ast.Assign):
                out.append(_AssignMirror(s, self.adjoint_of(s)))
            elif isinstance(s, ast.If):
                if ir.note(s, "forward_only", False):
                    continue
                out.append(_IfMirror(s, self.mirrors(s.body), self.mirrors(s.orelse)))
            elif isinstance(s, (ast.For, ast.While)):
                out.append(_LoopMirror(s, self.mirrors(s.body)))
        return out

    # planning --------------------------------------------------------------
    def plan(self, top):
        """Decide replays and tape pushes, iterating until the needs stop growing."""
        layout = self.layout
        replayable = planning.replayable(self.stmts, layout, self.prim)
        points = self._plan_with(top, replayable)
        # A transcendental value the backward sweep reads is cheaper to record than to
        # recompute, but only where the forward sweep computes it anyway: where it feeds a
        # value the backward sweep reads from the forward sweep (or the result, when the
        # value is returned too). Elsewhere recording would add a forward loop.
        wanted = self._forward_needed(points)
        costly = {v for v, s in replayable.items() if v in wanted
                  and self.prim(s).kind == "op" and self.prim(s).obj in planning.EXPENSIVE}
        if costly:
            self._plan_with(top, {v: s for v, s in replayable.items() if v not in costly})

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
        self.pushed = set()
        self.replays = {}
        self.kept_loops = set()
        while True:
            points = {}
            self.replays = {}
            self._collect(top, self.stmts, points)
            self._add_replays(replayable, points)
            pushed = set()
            for var, pts in points.items():
                if is_array(self.kinds.get(var)):
                    # an array's backward readers need its shape (the same every iteration,
                    # see _check_arrays) or final contents (plan.final_loads), never a
                    # recorded copy
                    continue
                for site in layout.sites.get(var, []):
                    if planning.needs_push(layout, site, pts):
                        pushed.add(id(site))
            kept = self._nonempty_loops(top, pushed)
            if pushed == self.pushed and kept == self.kept_loops:
                return points
            self.pushed, self.kept_loops = pushed, kept

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
            if isinstance(m, _AssignMirror):
                names = [n.id for a in m.adj for n in ast.walk(a) if isinstance(n, ast.Name)
                         and isinstance(n.ctx, ast.Load)]
                self._need(points, names, pos, loops)
            elif isinstance(m, _IfMirror):
                if self._has_content(m):
                    self._need(points, [s.test.id], pos, loops)
                self._collect(m.body, s.body, points)
                self._collect(m.orelse, s.orelse, points)
            else:
                if id(s) in self.kept_loops:
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
            self.replays.setdefault(block_id, set()).add(v)
            end = layout.end_pos(block)
            loops = layout.block_loops[block_id]
            for a in self.prim(s).operands:
                if isinstance(a, ast.Name) and a.id in self.kinds:
                    if a.id in replayable and layout.block_of[id(replayable[a.id])] == block_id:
                        work.append(a.id)
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
        pushed = self.pushed if pushed is None else pushed
        kept = self.kept_loops if kept is None else kept
        if isinstance(m, _AssignMirror):
            return bool(m.adj) or id(m.stmt) in pushed
        if isinstance(m, _IfMirror):
            return any(self._has_content(x, pushed, kept) for x in m.body + m.orelse) or \
                bool(self.replays.get(id(m.stmt.body)) or self.replays.get(id(m.stmt.orelse)))
        return id(m.stmt) in kept

    def _nonempty_loops(self, mirrors, pushed):
        """The loops whose backward sweep has content, decided innermost first."""
        kept = set()

        def visit(ms):
            for m in ms:
                if isinstance(m, _IfMirror):
                    visit(m.body)
                    visit(m.orelse)
                elif isinstance(m, _LoopMirror):
                    visit(m.body)
                    if any(self._has_content(x, pushed, kept) for x in m.body) or \
                            self.replays.get(id(m.stmt.body)) or id(m.stmt) in pushed:
                        kept.add(id(m.stmt))

        visit(mirrors)
        return kept

    # assembly --------------------------------------------------------------
    def build(self, wrt):
        """Plan and assemble. Returns an AdjointProgram."""
        top = self.mirrors(self.stmts)
        self.plan(top)
        self.taped_trips = {ir.note(s, "trip"): s for s in ir.walk_stmts(self.stmts)
                            if isinstance(s, (ast.For, ast.While)) and ir.note(s, "trip")
                            and id(s) in self.kept_loops and self.layout.loops[id(s)]}
        if self.checkpoint is not None:
            for loop in checkpointing.select(self):
                cp = checkpointing.Checkpointed(self, loop, copy.deepcopy(loop.body),
                                                self.checkpoint)
                cp.defined_before = set(self.params) | {
                    ir.target_name(x) for x in ir.walk_stmts(self.stmts)
                    if isinstance(x, ast.Assign) and not ir.is_store(x)
                    and self.layout.pos[id(x)] < self.layout.pos[id(loop)]}
                self.checkpointed[id(loop)] = cp
        backward = self._backward(top, self.stmts)
        forward = self._forward(self.stmts)
        if self.checkpointed:
            backward = self._expand_checkpoints(backward)
        init = []
        for var in self._ordered({_target(s) for s in ir.walk_stmts(self.stmts)
                                  if id(s) in self.pushed} - set(self.params)):
            first = self.layout.sites[var][0]
            defined_first = isinstance(first, ast.Assign) and id(first) not in self.pushed \
                and any(first is s for s in self.stmts)
            if not defined_first:
                init.append(ir.assign(var, ir.const(_ZERO[self.kinds[var]])))
        backward_init = []
        for var in self._ordered(self.active):
            if is_array(self.kinds[var]):
                if var in self.params:
                    backward_init += _parse(f"{self.bar(var)} = np.zeros_like({var})")
            elif var not in self.single_use and not (isinstance(self.result, ast.Name)
                                                     and var == self.result.id):
                backward_init.append(ir.assign(self.bar(var), ir.const(0.0)))
        if self.is_active(self.result):
            backward_init.append(ir.assign(self.bar(self.result.id), ir.const(1.0)))
        return AdjointProgram(init, forward, backward_init, backward, self.bar, self.tape)

    def gradient_expr(self, var):
        """The expression the generated function returns as d result / d var."""
        if var in self.active:
            return self.bar(var)
        if is_array(self.kinds[var]):
            return f"np.zeros_like({var})"
        return "0.0"

    def _ordered(self, names):
        first = {}
        for p in self.params:
            first.setdefault(p, -1)
        for var, sites in self.layout.sites.items():
            first.setdefault(var, self.layout.pos[id(sites[0])])
        return sorted(names, key=lambda v: (first.get(v, 10**9), v))

    def _forward(self, stmts, reserved=False):
        """The primal statements with pushes. Inside a loop whose pushes were reserved in
        advance (see _reserve) the pushes store without a capacity check."""
        out = []
        for s in stmts:
            if isinstance(s, ast.Assign):
                target = ir.target_name(s)
                if id(s) in self.pushed:
                    out += self.tape.push(target, self.kinds[target], checked=not reserved)
                if ir.note(s, "atomic", False):    # a store standing for cuda.atomic.add
                    sub = s.targets[0]
                    s = ir.atomic_add(sub.value.id, copy.deepcopy(sub.slice), s.value,
                                      ir.note(s, "origin", None))
                out.append(s)
                if target in self.active and is_array(self.kinds[target]):
                    out += _parse(f"{self.bar(target)} = np.zeros_like({target})")
                if target in self.taped_trips:
                    out += self.tape.push(target, INT, checked=not reserved)
                continue
            if isinstance(s, ast.If):
                s.body = self._forward(s.body, reserved)
                s.orelse = self._forward(s.orelse, reserved)
            elif isinstance(s, (ast.For, ast.While)):
                if isinstance(s, ast.For) and id(s) in self.pushed:
                    out += self.tape.push(s.target.id, INT, checked=not reserved)
                if id(s) in self.checkpointed:
                    out += self._checkpointed_forward(s)
                    continue
                counts = self._reservable(s)
                if counts:
                    out += self._reserve(s, counts)
                s.body = self._forward(s.body, bool(counts))
            out.append(s)
        return out

    def _checkpointed_forward(self, s):
        """A checkpointed loop: its taped body (one step's recording, run in the backward
        sweep) is kept aside; the forward sweep runs the plain loop, saving snapshots."""
        cp = self.checkpointed[id(s)]
        counts = self._reservable(s)
        reserve = []
        if counts:
            for kind, count in ((FLOAT, counts[0]), (INT, counts[1])):
                if count:
                    reserve += self.tape.reserve(kind, str(count))
        cp.reserve = reserve        # once before the schedule: every step pops what it pushes
        cp.taped = self._forward(s.body, bool(counts))
        return cp.forward(cp.defined_before)

    def _expand_checkpoints(self, stmts):
        out = []
        for s in stmts:
            key = ir.note(s, "checkpoint", None)
            if key is not None:
                out += self.checkpointed[key].backward()
                continue
            for field in ("body", "orelse"):
                inner = getattr(s, field, None)
                if isinstance(inner, list) and inner:
                    setattr(s, field, self._expand_checkpoints(inner))
            out.append(s)
        return out

    def _pushes_in(self, stmts):
        """(float pushes, int pushes) the statements make, not counting nested loop bodies,
        with both branches of an `if` counted (an upper bound); None if a nested loop body
        pushes too."""
        f = i = 0
        for s in stmts:
            if isinstance(s, ast.Assign):
                target = ir.target_name(s)
                if id(s) in self.pushed:
                    f, i = (f + 1, i) if self.kinds[target] == FLOAT else (f, i + 1)
                if target in self.taped_trips:
                    i += 1
            elif isinstance(s, ast.If):
                inner = [self._pushes_in(s.body), self._pushes_in(s.orelse)]
                if None in inner:
                    return None
                f += inner[0][0] + inner[1][0]
                i += inner[0][1] + inner[1][1]
            elif isinstance(s, (ast.For, ast.While)):
                if id(s) in self.pushed:
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

    def _reserve(self, loop, counts):
        lo, hi, st = (ast.unparse(a) for a in loop._bounds)
        trips = f"({hi} - {lo})" if st == "1" else f"len(range({lo}, {hi}, {st}))"
        out = []
        for kind, count in ((FLOAT, counts[0]), (INT, counts[1])):
            if count:
                out += self.tape.reserve(kind, f"{trips} * {count}" if count > 1 else trips)
        return out

    def _replay(self, block):
        names = self.replays.get(id(block), ())
        out = []
        for s in block:
            if isinstance(s, ast.Assign) and ir.target_name(s) in names:
                node = ast.Assign(targets=[ir.store(ir.target_name(s))], value=s.value,
                                  lineno=0)
                ir.annotate(node, origin=ir.note(s, "origin", None))
                out.append(node)
        return out

    def _backward(self, mirrors, block):
        return _merge_resets(self._backward_raw(mirrors, block))

    def _backward_raw(self, mirrors, block):
        out = self._replay(block)
        for m in mirrors:
            s = m.stmt
            if isinstance(m, _AssignMirror):
                out += m.adj
                if id(s) in self.pushed:
                    target = ir.target_name(s)
                    out += self.tape.pop(target, self.kinds[target])
            elif isinstance(m, _IfMirror):
                body = self._backward(m.body, s.body)
                orelse = self._backward(m.orelse, s.orelse)
                if body or orelse:
                    node = ast.If(test=ir.name(s.test.id), body=body or [ast.Pass()],
                                  orelse=orelse, lineno=0)
                    ir.annotate(node, origin=ir.note(s, "origin", None))
                    out.append(node)
            else:
                if id(s) in self.kept_loops:
                    out += self._reverse_loop(m, s)
                if isinstance(s, ast.For) and id(s) in self.pushed:
                    out += self.tape.pop(s.target.id, INT)
        return out

    def _reverse_loop(self, m, s):
        body = self._backward(m.body, s.body) or [ast.Pass()]
        if id(s) in self.checkpointed:
            self.checkpointed[id(s)].reverse = body
            marker = ast.Pass()
            ir.annotate(marker, checkpoint=id(s))
            return [marker]
        out = []
        trip = ir.note(s, "trip")
        if trip and trip in self.taped_trips:
            out += self.tape.pop(trip, INT)
        if isinstance(s, ast.While):
            k = self.namegen.fresh("_k")
            header = f"for {k} in range({trip}):\n    pass\n"
        else:
            lo, hi, st = (ast.unparse(a) for a in s._bounds)
            var = s.target.id
            if isinstance(s._bounds[2], ast.Constant) and s._bounds[2].value == 1:
                start = f"{lo} + {trip} - 1" if trip else f"{hi} - 1"
                header = f"for {var} in range({start}, {lo} - 1, -1):\n    pass\n"
            else:
                k = self.namegen.fresh("_k")
                count = trip or f"len(range({lo}, {hi}, {st}))"
                header = f"for {k} in range({count} - 1, -1, -1):\n    pass\n"
                body = _parse(f"{var} = {lo} + {k} * {st}") + body
        loop = fold(_parse(header)[0])
        loop.body = body
        ir.annotate(loop, origin=ir.note(s, "origin", None))
        return out + [loop]


_ZERO = {FLOAT: 0.0, INT: 0, BOOL: False}


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


def _combine(terms):
    """One partial for an operand that appears several times (`a * a`): 2.0 * a, or a sum."""
    if len(terms) == 1:
        return terms[0]
    if all(ast.dump(t) == ast.dump(terms[0]) for t in terms):
        return fold(ast.BinOp(left=ir.const(float(len(terms))), op=ast.Mult(), right=terms[0]))
    total = terms[0]
    for t in terms[1:]:
        total = ast.BinOp(left=total, op=ast.Add(), right=t)
    return fold(total)


def _target(s):
    return s.target.id if isinstance(s, ast.For) else ir.target_name(s)


def _parse(text):
    return ast.parse(text).body


def _as_store(sub):
    return ast.Subscript(value=sub.value, slice=sub.slice, ctx=ast.Store())
