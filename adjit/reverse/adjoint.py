"""Statement-wise adjoint generation: a forward sweep and a backward sweep in one function.

The forward sweep is the normalized primal plus tape pushes; the backward sweep visits the
statements in reverse, with each statement's adjoint rule, the branch each `if` took (its
condition variable) and each loop reversed (its bounds, or its recorded trip count).

ReverseBuilder holds the adjoint rules of statements (this module). validate.py says what is
refused before anything is built (and which operands are recorded at array-level
operations), facts.py what the rules know of the statements; two objects with one job each
make the rest: planner.py's Planner returns a Plan (which primal values are kept, replayed
or recorded: the rules are in plan.py), and emit.py's Emitter takes the builder and that
Plan and writes the two sweeps (checkpointed loops expanded by checkpoint.py).
"""
import ast
import copy

from .. import ir
from ..analysis.prims import classify
from ..analysis.types import FLOAT, is_array, zero_source
from ..rules.table import ARRAY_RULES
from ..rules.templates import accumulate, fold, instantiate, scale, substitute
from . import checkpoint as checkpointing
from . import plan as planning
from . import facts
from .emit import Emitter
from .mirrors import AssignMirror, IfMirror, LoopMirror
from .naming import BarNames
from .planner import Planner
from .tape import Tape
from .validate import validate


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
    """The adjoint of normalized statements: the adjoint rule of each statement (here), what
    those rules know about the statements (facts.py), the planner's decisions (a Plan from
    planner.py) and the two sweeps emitted as the Plan says (emit.py's Emitter)."""

    def __init__(self, stmts, result, params, kinds, active, env, namegen, temps=(),
                 bounded=False):
        self.stmts = stmts
        self.result = result
        self.params = params
        self.kinds = kinds
        self.active = active
        self.env = env
        self.namegen = namegen
        self.layout = ir.Layout(stmts)
        self.bar = BarNames(set(kinds) | set(namegen.taken))
        self.tape = Tape(namegen, bounded)   # bounded: CUDA device code
        self._prims = {}
        self.loop_target = {id(s): s.target.id for s in ir.walk_stmts(stmts)
                            if isinstance(s, ast.For)}
        # refusals first; id(array op) -> (operands, results) recorded at it; arrays
        # allocated in a loop with a shape it changes -> their allocation (the planner
        # replays it at the start of each iteration's backward sweep); arrays an operation
        # computes at such a shape -> what the planner needs to refuse them where their
        # loop is not computed again iteration by iteration
        self.snapshots, self.reallocated, self.recomputed_only = validate(
            stmts, self.layout, self.prim, kinds, active, params, bounded)
        contributions = facts.contributions(stmts, self._contributing_operands)
        self.single_use = facts.single_use_temps(contributions, self.layout, kinds, params,
                                                 result)
        self.write_once = facts.write_once(self.layout, temps)
        self.increments = facts.increments(stmts, self.layout, active, self.write_once)
        self.powers, self.folded_powers = self._power_chains(contributions)
        self.increment_loads = set(self.increments.values())
        self.checkpoint = None        # snapshots for top-level time loops: int or "auto"
        self.stored_in = {}           # var -> array element holding it (set in build)
        self.value_needed = False     # value_and_grad / vjp also return the value
        self.vec_temps = set()        # arrays the vectorizer made (fully written before read)
        self.joined = set()           # arrays an `if`'s paths keep (normalize/joins.py)
        self.checkpointed = {}        # id(loop) -> checkpointing.Checkpointed
        self.time_loops = set()       # id(loop): the loops checkpoint="auto" checkpoints
        self.sum_loops = set()        # id(loop): top-level loops whose iterations are
        #                               independent but for sums (checkpointing.reduction)
        self.recompute = {}           # id(prange loop) -> (plain body, recording body)
        self.plan = planning.Plan()   # what the planner decides (reverse/plan.py), in build
        self.indexed = {}             # id(loop) -> IndexedTape: slots by the loop counter
        self.recompute_fills = {}     # id(recomputed loop) -> arrays each iteration fills
        self.recompute_loops = {}     # id(recomputed loop) -> the loop, in the forward code
        self.forward_stmts = []       # the forward sweep, once built
        self.allow_recompute = True

    # helpers -------------------------------------------------------------
    def _ordered(self, names):
        """Names in the order of their first definition (parameters first)."""
        first = {}
        for p in self.params:
            first.setdefault(p, -1)
        for var, sites in self.layout.sites.items():
            first.setdefault(var, self.layout.pos[id(sites[0])])
        return sorted(names, key=lambda v: (first.get(v, 10**9), v))

    def prim(self, s):
        if id(s) not in self._prims:
            self._prims[id(s)] = classify(s.value, self.env)
        return self._prims[id(s)]

    def is_active(self, atom):
        return isinstance(atom, ast.Name) and atom.id in self.active

    def _contributing_operands(self, s):
        if not isinstance(s, ast.Assign):
            return []
        if ir.is_store(s):
            arr = s.targets[0].value.id
            return [s.value] if arr in self.active and self.is_active(s.value) else []
        target = ir.target_name(s)
        if target not in self.active:
            return []
        prim = self.prim(s)
        if is_array(self.kinds.get(target)):
            # an array operation's scalar operands (np.linspace's start and stop) receive
            # from it too: their adjoint is then never a single use's assignment
            return [a for _, a in prim.diff_operands() if self.is_active(a) and
                    not is_array(self.kinds.get(a.id))] if prim.kind == "arrayop" else []
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
            if arr in self.write_once or ir.note(s, "atomic", False) \
                    or id(s) in self.increments:
                return out      # (an atomic add, or A[i] += e, leaves the adjoint in place)
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
            if arr not in self.active or target in self.increment_loads:
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
        if id(s) in self.folded_powers:
            return []           # a partial product of a power chain: its last product's rule
        if id(s) in self.powers:
            var, k, inner = self.powers[id(s)]
            partial = fold(ast.BinOp(left=ir.const(float(k)), op=ast.Mult(),
                                     right=ir.name(inner)))
            expr, negated = scale(bar, partial)
            first = self.single_use.get(var) == id(s)
            return [accumulate(self.bar(var), expr, negated, first, origin)] + \
                self._reset(target, s)
        joint = self._joint_adjoint(s, prim, target, bar, origin)
        if joint is not None:
            return joint + self._reset(target, s)
        partials = {}
        for k, atom in prim.diff_operands():
            if not self.is_active(atom) or self.increments.get(id(s)) == atom.id:
                continue
            if prim.kind == "copy":
                partial = ir.const(1.0)
            else:
                partial = instantiate(prim.rule.partials[k], prim.rule.params, prim.operands,
                                      self.stored_in.get(target, target))
            partials.setdefault(atom.id, []).append(partial)
        out = []
        for var, terms in partials.items():
            expr, negated = scale(bar, _combine(terms))
            first = self.single_use.get(var) == id(s)
            out.append(accumulate(self.bar(var), expr, negated, first, origin))
        return out + self._reset(target, s)

    def _power_chains(self, contributions):
        """Products of one scalar with itself, `x * x * x` (normalized to `_t = x * x;
        u = _t * x`): the last product's adjoint is `u_bar * (3.0 * _t)`, one multiply by the
        partial product, where the product rule through each partial product computes
        `u_bar * _t + (u_bar * x) * (2.0 * x)`. A partial product qualifies where it is a
        single-use temporary whose adjoint only the next product adds to, in the same block,
        with x assigned nowhere in between. Returns ({id(last product): (x, power, partial
        product)}, {ids of the partial products' assignments}), over the longest chains."""
        defs = {}           # single-use temporary -> (x, power, its statement)
        found = {}          # id(product continuing a chain) -> (x, power, partial, its site)
        for s in ir.walk_stmts(self.stmts):
            if not (isinstance(s, ast.Assign) and not ir.is_store(s)
                    and isinstance(s.value, ast.BinOp) and isinstance(s.value.op, ast.Mult)):
                continue
            left, right = s.value.left, s.value.right
            if not (isinstance(left, ast.Name) and isinstance(right, ast.Name)):
                continue
            target = ir.target_name(s)
            if target not in self.active or id(s) in self.increments:
                continue
            chain = None
            if left.id == right.id and self.kinds.get(left.id) == FLOAT:
                chain = (left.id, 2, None)
            else:
                for inner, x in ((left.id, right.id), (right.id, left.id)):
                    if inner in defs and defs[inner][0] == x and \
                            len(contributions.get(inner, ())) == 1 and \
                            self.single_use.get(inner) == id(s) and \
                            self._unchanged_between(x, defs[inner][2], s):
                        chain = (x, defs[inner][1] + 1, inner)
                        break
            if chain is None:
                continue
            x, k, inner = chain
            if target in self.single_use:
                defs[target] = (x, k, s)
            if inner is not None:
                found[id(s)] = (x, k, inner, defs[inner][2])
        folded = {id(site) for _, _, _, site in found.values()}
        # a chain continued by a longer one: only its last product
        powers = {key: (x, k, inner) for key, (x, k, inner, _) in found.items()
                  if key not in folded}
        return powers, folded

    def _unchanged_between(self, var, first, last):
        """Whether nothing assigns var between statements first and last (same block)."""
        if self.layout.block_of[id(first)] != self.layout.block_of[id(last)]:
            return False
        lo, hi = self.layout.pos[id(first)], self.layout.pos[id(last)]
        return not any(lo < self.layout.pos[id(x)] < hi for x in self.layout.sites.get(var, []))

    def _joint_adjoint(self, s, prim, target, bar, origin):
        """The adjoint terms of a primitive whose rule has a joint form (Rule.joint), where
        all its operands are active and distinct: the shared value once, then each
        operand's term. None where the partials apply."""
        rule = prim.rule if prim.kind != "copy" else None
        if rule is None or getattr(rule, "joint", None) is None:
            return None
        operands = list(prim.diff_operands())
        names = [atom.id for _, atom in operands if isinstance(atom, ast.Name)]
        if len(operands) != len(rule.params) or len(set(names)) != len(operands) or \
                not all(self.is_active(atom) and self.increments.get(id(s)) != atom.id
                        for _, atom in operands):
            return None
        shared = self.namegen.fresh("_q")
        mapping = dict(zip(rule.params, prim.operands))
        mapping.update(out=self.stored_in.get(target, target), bar=bar)
        out = [ir.assign(shared, substitute(rule.joint[0], mapping), origin)]
        mapping["shared"] = shared
        for k, atom in operands:
            expr, negated = substitute(rule.joint[1][k], mapping), False
            if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
                expr, negated = expr.operand, True
            first = self.single_use.get(atom.id) == id(s)
            out.append(accumulate(self.bar(atom.id), expr, negated, first, origin))
        return out

    def _array_adjoint(self, s, prim, target, bar, origin):
        """Adjoints of the array-level operations (matrix products, linspace, arange), from
        their registry entries' reverse expressions."""
        rule = ARRAY_RULES[prim.obj]
        self.env.update(rule.helpers)
        names = dict(rule.defaults)
        names.update(zip(rule.params, prim.operands))
        names.update(out=target, out_bar=bar)
        out = []
        active = [(k, atom) for k, atom in prim.diff_operands() if self.is_active(atom)]
        if rule.shared is not None and active:
            shared = self.namegen.fresh("_g")
            out.append(ast.Assign(targets=[ast.Name(id=shared, ctx=ast.Store())],
                                  value=substitute(rule.shared, names), lineno=0))
            names["shared"] = shared
        for k, atom in active:
            first = self.single_use.get(atom.id) == id(s)   # linspace's scalar operands
            out.append(accumulate(self.bar(atom.id), substitute(rule.reverse[k], names),
                                  False, first, origin))
            if rule.exact and not first:    # a new array in the operand's shape
                ir.annotate(out[-1], whole=atom.id)
        for k in rule.always:       # (an MPI answer the other rank waits for: value dropped)
            if k not in dict(active) and k < len(prim.operands):
                out.append(ast.Assign(targets=[ir.store(self.namegen.fresh("_answered"))],
                                      value=substitute(rule.reverse[k], names), lineno=0))
        if not is_array(self.kinds.get(target)):
            out += self._reset(target, s)       # a number (a custom_vjp function's result)
        elif self.layout.loops[id(s)]:
            out += ir.parse(f"{bar}.fill(0.0)")
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
                out.append(AssignMirror(s, self.adjoint_of(s)))
            elif ir.is_barrier(s):      # the block's threads meet again, in reverse
                out.append(AssignMirror(s, [ir.copy_notes(s, ast.Expr(value=ir.barrier_call()))]))
            elif isinstance(s, ast.If):
                if ir.note(s, "forward_only", False):
                    continue
                out.append(IfMirror(s, self.mirrors(s.body), self.mirrors(s.orelse)))
            elif isinstance(s, (ast.For, ast.While)):
                out.append(LoopMirror(s, self.mirrors(s.body)))
        return out

    # assembly --------------------------------------------------------------
    def build(self, wrt):
        """Plan and assemble. Returns an AdjointProgram."""
        self.stored_in = facts.stored_values(self.stmts, self.layout, self.kinds, self.params,
                                             self.checkpoint is not None or self.tape.bounded)
        top = self.mirrors(self.stmts)
        self.plan = Planner(self).make_plan(top)
        self.taped_trips = {ir.note(s, "trip"): s for s in ir.walk_stmts(self.stmts)
                            if isinstance(s, (ast.For, ast.While)) and ir.note(s, "trip")
                            and id(s) in self.plan.kept_loops and self.layout.loops[id(s)]}
        # the loops checkpoint="auto" checkpoints run their steps one by one, reversed
        # downward block by block: recorded, no pass reorders their steps' arithmetic
        # either (the note time_loop, ir.NOTES), so the gradient is the same to the bit
        self.time_loops = {id(loop) for loop in checkpointing.select(self, "auto")}
        self.sum_loops = {id(s) for s in self.stmts if isinstance(s, ast.For) and
                          id(s) in self.plan.kept_loops and checkpointing.reduction(s)}
        if self.checkpoint is not None:
            for loop in checkpointing.select(self):
                cp = checkpointing.Checkpointed(self, loop, copy.deepcopy(loop.body),
                                                self.checkpoint)
                cp.defined_before = set(self.params) | {
                    ir.target_name(x) for x in ir.walk_stmts(self.stmts)
                    if isinstance(x, ast.Assign) and not ir.is_store(x)
                    and self.layout.pos[id(x)] < self.layout.pos[id(loop)]}
                unreturned = cp.unreturned()
                if unreturned:
                    if self.checkpoint == "auto":
                        continue    # recorded: a step reads an array an earlier one bound
                    cp.refuse_unreturned(unreturned[0])
                self.checkpointed[id(loop)] = cp
        emit = Emitter(self, self.plan)
        self.indexed = emit.indexed_loops()
        backward = emit.backward(top, self.stmts)
        forward = emit.forward(self.stmts)
        self.forward_stmts = forward
        if self.checkpointed:
            backward = emit.expand_checkpoints(backward)
        if self.plan.recomputed:
            backward = emit.expand_recomputed(backward)
        init = []
        # (from the layout: the bodies of recomputed loops are copies by now)
        recorded = {var for var, sites in self.layout.sites.items()
                    if any(id(x) in self.plan.pushed for x in sites)}
        for var in self._ordered(recorded - set(self.params)):
            first = self.layout.sites[var][0]
            defined_first = isinstance(first, ast.Assign) and id(first) not in self.plan.pushed \
                and any(first is s for s in self.stmts)
            if not defined_first:
                init += ir.parse(f"{var} = {zero_source(self.kinds[var])}")
        backward_init = []
        for var in self._ordered(self.active):
            if is_array(self.kinds[var]):
                if var in self.params:
                    backward_init += ir.parse(f"{self.bar(var)} = np.zeros_like({var})")
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


def _as_store(sub):
    return ast.Subscript(value=sub.value, slice=sub.slice, ctx=ast.Store())
