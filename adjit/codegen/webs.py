"""One name for each web of a generated function's assignments (render, code for the CPU).

Generated code reuses names: the backward sweep computes an iteration again under the forward
sweep's names, a loop's adjoint assigns the forward's temporaries again, and accumulators are
reset between uses. numba's SSA pass (`reconstruct_ssa`) walks the whole function once for
every name assigned more than once, so its time grows as the number of such names times the
function's length: a 2,000-line adjoint of a spline kernel spent 3.6 of its 9 s of compilation
there.

A web is a set of a name's assignments joined by the reads they reach: two assignments are
in one web where some read of the name may see either (reaching definitions, computed over
the function's structured control flow: branches, loops, break, continue, return). A name
whose assignments form several webs gets one name per web (the first web, or the one holding
a parameter, keeps it; the others are `name_2`, `name_3`, ...), so that numba sees only the
names a merge of paths really needs as assigned more than once. The program is the same
program: every read reads the value it read before. A constant assigned where no read sees
it (the `x = 0.0` that starts a variable assigned in branches defined, where every read is
after another assignment) is dropped.

Names are left alone where renaming could change what numba compiles: names read or
assigned in an objmode (`with`) block, in a nested function, lambda or comprehension,
`del`eted names, names read where no assignment reaches (a global, or a read before any
assignment), and a function with a parallel (prange) loop is left as it is (numba finds a
parallel loop's reductions by the name they assign).

normalize/webs.py does the same for the user's program after normalization, so that
activity sees each value a user gave one name separately; that form has no break, continue,
return or `with` left, and keeps loop indices' names. (One reaching-definitions core for the
two is left to do.)
"""
import ast
import copy

from .. import ir

_SIMPLE = (ast.Expr, ast.Return, ast.Raise, ast.Assert, ast.Pass)


class _Unsupported(Exception):
    """A statement this pass does not follow: the function is left as it is."""


def split_webs(fn):
    """Rename `fn`'s (an ast.FunctionDef) names web by web, in place (see the module's
    docstring). Returns the number of webs given a new name."""
    if _has_prange(fn):
        return 0
    _unshare(fn)
    flow = _Flow([a.arg for a in fn.args.args])
    try:
        flow.run(fn.body)
    except _Unsupported:
        return 0
    return flow.rename(fn)


def _unshare(fn):
    """Give every place in `fn` a node of its own: the passes put one node object in several
    places (a loop's index read in the forward and the backward sweep), and one node can
    carry one name."""
    seen = set()
    todo = [fn]
    while todo:
        node = todo.pop()
        for field, value in ast.iter_fields(node):
            items = value if isinstance(value, list) else [value]
            for k, child in enumerate(items):
                if not isinstance(child, ast.AST) or isinstance(child, ast.expr_context):
                    continue
                if id(child) in seen:
                    child = copy.deepcopy(child)
                    if isinstance(value, list):
                        value[k] = child
                    else:
                        setattr(node, field, child)
                seen.add(id(child))
                todo.append(child)


def _has_prange(fn):
    for node in ir.walk(fn):
        if isinstance(node, ast.Attribute) and node.attr == "prange":
            return True
    return False


def _join(states):
    """The state where paths with these states meet (None: a path that does not get there)."""
    states = [s for s in states if s is not None]
    if not states:
        return None
    if len(states) == 1:
        return dict(states[0])
    out = dict(states[0])
    for s in states[1:]:
        for name, defs in s.items():
            have = out.get(name)
            out[name] = defs if have is None or have is defs else have | defs
    return out


class _Flow:
    """Reaching definitions over a function's statements: `state` maps a name to the
    frozenset of the assignments (ids into self.defs) that may have given its value."""

    def __init__(self, params):
        self.defs = []          # def id -> (name, statement; None for a parameter)
        self.def_ids = {}       # (id(node), name) -> def id
        self.targets = {}       # def id -> [ast.Name target nodes]
        self.uses = []          # (ast.Name node, frozenset of def ids)
        self.aug = []           # (def id of an `x += v`, the def ids its read of x saw)
        self.excluded = set()   # names left alone
        self.loops = []         # per enclosing loop: (states at break, states at continue)
        self.heads = {}         # id(loop) -> the state at its head, last time
        self.recording = True
        self.params = params
        self.entry = {}
        for p in params:
            self.entry[p] = frozenset((self._def(None, p, None),))

    def _def(self, stmt, name, target):
        key = (id(stmt), name)
        d = self.def_ids.get(key)
        if d is None:
            d = self.def_ids[key] = len(self.defs)
            self.defs.append((name, stmt))
            self.targets[d] = []
        if target is not None and self.recording:     # (each statement is recorded once)
            self.targets[d].append(target)
        return d

    def run(self, body):
        self.stmts(body, dict(self.entry))

    # -- reads ---------------------------------------------------------------------------------

    def read(self, expr, state):
        """Record the reads of names in expression `expr` (nothing in nested scopes)."""
        if expr is None or not self.recording:
            return
        todo = [expr]
        for node in todo:
            cls = node.__class__
            if cls is ast.Name:
                self.uses.append((node, state.get(node.id, frozenset())))
                continue
            if cls in (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp):
                self._exclude_all(node)
                continue
            if cls is ast.NamedExpr:
                raise _Unsupported
            for child in ast.iter_child_nodes(node):
                if not isinstance(child, ast.expr_context):
                    todo.append(child)

    def _exclude_all(self, node):
        for n in ir.walk(node):
            if isinstance(n, ast.Name):
                self.excluded.add(n.id)
            elif isinstance(n, ast.arg):
                self.excluded.add(n.arg)

    def assign_target(self, target, stmt, state):
        """The names `target` assigns (their reads of subscripts and attributes recorded)."""
        if isinstance(target, ast.Name):
            state[target.id] = frozenset((self._def(stmt, target.id, target),))
        elif isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self.assign_target(elt, stmt, state)
        elif isinstance(target, (ast.Subscript, ast.Attribute)):
            self.read(target, state)
        else:
            raise _Unsupported

    # -- statements ----------------------------------------------------------------------------

    def stmts(self, body, state):
        for s in body:
            if state is None:       # after a return, break or continue: reached by nothing
                state = {}
            state = self.stmt(s, state)
        return state

    def stmt(self, s, state):
        cls = s.__class__
        if cls is ast.Assign:
            self.read(s.value, state)
            for t in s.targets:
                self.assign_target(t, s, state)
            return state
        if cls is ast.AugAssign:
            self.read(s.value, state)
            if isinstance(s.target, ast.Name):
                name = s.target.id
                seen = state.get(name, frozenset())
                d = self._def(s, name, s.target)
                if self.recording:
                    self.aug.append((d, seen))
                    if not seen:
                        self.excluded.add(name)
                state[name] = frozenset((d,))
            else:
                self.read(s.target, state)
            return state
        if cls in _SIMPLE:
            for child in ast.iter_child_nodes(s):
                self.read(child, state)
            return None if cls in (ast.Return, ast.Raise) else state
        if cls is ast.If:
            self.read(s.test, state)
            return _join([self.stmts(s.body, dict(state)), self.stmts(s.orelse, dict(state))])
        if cls in (ast.For, ast.While):
            return self.loop(s, state)
        if cls is ast.Break:
            self.loops[-1][0].append(state)
            return None
        if cls is ast.Continue:
            self.loops[-1][1].append(state)
            return None
        if cls is ast.With:
            for item in s.items:
                self.read(item.context_expr, state)
            self._exclude_all(s)
            for t in (item.optional_vars for item in s.items if item.optional_vars):
                self.assign_target(t, s, state)
            return self.stmts(s.body, state)
        if cls is ast.Delete:
            self._exclude_all(s)
            for t in s.targets:
                self.read(t, state)
                if isinstance(t, ast.Name):
                    state.pop(t.id, None)
            return state
        raise _Unsupported          # try, match, global, nested def, ...

    def loop(self, s, state):
        """A for or while loop: the state at its head found by iterating to a fixpoint, then
        its body and else walked once more from there, recording."""
        is_for = isinstance(s, ast.For)
        if is_for:
            self.read(s.iter, state)
        recording = self.recording
        self.recording = False
        # from the head this loop had the last time round an enclosing loop (below the
        # fixpoint for this entry, which only grows): nested loops do not start over
        head = _join([state, self.heads.get(id(s))])
        while True:
            breaks, out = self._body(s, head, is_for)
            new = _join([head, out] + breaks[1])
            if new == head:
                break
            head = new
        self.heads[id(s)] = head
        self.recording = recording
        if recording:
            breaks, out = self._body(s, head, is_for)
        return _join([self.stmts(s.orelse, dict(head))] + breaks[0])

    def _body(self, s, head, is_for):
        entry = dict(head)
        if is_for:
            self.assign_target(s.target, s, entry)
        else:
            self.read(s.test, entry)
        self.loops.append(([], []))
        out = self.stmts(s.body, entry)
        return self.loops.pop(), out

    # -- renaming ------------------------------------------------------------------------------

    def rename(self, fn):
        read = set()
        for node, defs in self.uses:
            if not defs:
                self.excluded.add(node.id)      # a global, or read before any assignment
            read |= defs
        # an accumulation (`x += v`) reads its name and assigns it in one web: its target
        # is one node (and `x = x + v` would copy an array that += changes in place)
        webs = _webs(len(self.defs), self.uses, [seen | {d} for d, seen in self.aug])
        for _, seen in self.aug:
            read |= seen
        by_name = {}                            # name -> {web: [def ids]}
        for d, (name, _) in enumerate(self.defs):
            if name not in self.excluded:
                by_name.setdefault(name, {}).setdefault(webs(d), []).append(d)
        taken = {n.id if isinstance(n, ast.Name) else n.arg for n in ir.walk(fn)
                 if isinstance(n, (ast.Name, ast.arg))}
        new_name = {}                           # web -> its new name
        dropped = set()                         # def ids of constants no read sees
        for name, by_web in by_name.items():
            if len(by_web) < 2:
                continue
            live = []
            for web, defs in by_web.items():
                if not any(d in read for d in defs) and all(_constant(self.defs[d][1])
                                                            for d in defs):
                    dropped.update(defs)
                else:
                    live.append((web, defs))
            keeps = next((w for w, defs in live if any(self.defs[d][1] is None
                                                       for d in defs)), None)
            if keeps is None and live:
                keeps = live[0][0]
            k = 2
            for web, _ in live:
                if web == keeps:
                    continue
                while f"{name}_{k}" in taken:
                    k += 1
                new_name[web] = f"{name}_{k}"
                taken.add(new_name[web])
        if not new_name and not dropped:
            return 0

        def named(d):
            return new_name.get(webs(d), self.defs[d][0])

        # (every node is in one place, _unshare: a read's defs are all of one web)
        for node, defs in self.uses:
            if defs and node.id not in self.excluded:
                node.id = named(next(iter(defs)))
        for d, targets in self.targets.items():
            if self.defs[d][0] not in self.excluded:
                for t in targets:
                    t.id = named(d)
        if dropped:
            _drop(fn, {(id(self.defs[d][1]), self.defs[d][0]) for d in dropped})
        return len(new_name)


def _webs(count, uses, joined):
    """The web of each def id (a function: def id -> its web's representative): def ids
    joined where one read sees them (`uses`: (node, def ids)) and as `joined` (sets of def
    ids) says."""
    parent = list(range(count))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(defs):
        it = iter(defs)
        first = next(it, None)
        if first is None:
            return
        r = find(first)
        for d in it:
            q = find(d)
            if q != r:
                parent[q] = r

    for _, defs in uses:
        union(defs)
    for defs in joined:
        union(defs)
    return find


def _constant(stmt):
    """An assignment of a constant (nothing to compute, nothing that may raise)."""
    return isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant) and \
        all(isinstance(t, ast.Name) for t in stmt.targets)


def _drop(fn, dead):
    """Remove the targets (id(statement), name) in `dead` from their assignments, and the
    assignments left without a target."""
    for node in ir.walk(fn):
        for field in ("body", "orelse"):
            stmts = getattr(node, field, None)
            if not isinstance(stmts, list) or not stmts:
                continue
            kept = []
            for s in stmts:
                if isinstance(s, ast.Assign) and any((id(s), t.id) in dead for t in s.targets
                                                     if isinstance(t, ast.Name)):
                    s.targets = [t for t in s.targets if (id(s), t.id) not in dead]
                    if not s.targets:
                        continue
                kept.append(s)
            if len(kept) != len(stmts):
                stmts[:] = kept or [ast.Pass()]
