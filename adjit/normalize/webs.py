"""Split variables into webs: one name per set of definitions that reach common uses.

`m = max(...)` followed later by `m = stop_gradient(m)` are two different values that the
user gave one name. Activity analysis works per name, so without the split the stopped `m`
would look active and drag adjoint code behind it. After this pass each web has its own
name (the first keeps the user's name, later ones get `m_2`, `m_3`, ...), so activity, typing
and the tape see each value separately.
"""
import ast

from .. import ir


_ENTRY = "entry"


class _Webs:
    def __init__(self):
        self.parent = {}
        self.uses = []
        self.defs = {}
        self.loop_defs = set()
        self._loads = {}    # id(node) -> (node, the names it loads): a loop's fixpoint
        #                     visits its body's statements again and again

    def loads(self, node):
        found = self._loads.get(id(node))
        if found is None or found[0] is not node:
            found = self._loads[id(node)] = (node, ir.load_names(node))
        return found[1]

    def find(self, d):
        while self.parent.setdefault(d, d) != d:
            self.parent[d] = self.parent[self.parent[d]]
            d = self.parent[d]
        return d

    def union(self, a, b):
        self.parent[self.find(a)] = self.find(b)

    def use(self, node, state):
        reaching = state.get(node.id, frozenset())
        self.uses.append((node, reaching))
        reaching = sorted(reaching, key=str)
        for d in reaching[1:]:
            self.union(reaching[0], d)


def _merge(a, b):
    """A new dict: each name's definitions reaching from a or b (the branches of an `if`
    mostly share their sets with the state before it: those are taken as they are)."""
    out = dict(a)
    for k, v in b.items():
        w = out.get(k)
        if w is None:
            out[k] = v
        elif w is not v:
            out[k] = w | v
    return out


def _flow(stmts, state, webs):
    state = dict(state)     # the caller's state stays as it was (an if's other branch)
    for s in stmts:
        if isinstance(s, ast.Assign):
            for n in webs.loads(s.value):
                webs.use(n, state)
            tgt = s.targets[0]
            if isinstance(tgt, ast.Name):
                d = id(s)
                webs.defs[d] = (tgt.id, tgt)
                state[tgt.id] = frozenset([d])
            else:
                for n in webs.loads(tgt):
                    webs.use(n, state)
        elif isinstance(s, ast.If):
            webs.use(s.test, state) if isinstance(s.test, ast.Name) else None
            state = _merge(_flow(s.body, state, webs), _flow(s.orelse, state, webs))
        elif isinstance(s, ast.For):
            for n in webs.loads(s.iter):
                webs.use(n, state)
            state = _loop(s, state, webs, s.target)
        elif isinstance(s, ast.While):
            state = _loop(s, state, webs, None)
        else:
            # a call kept for what it does (`print("s =", s)`, an assert's check, a seed, a
            # message sent): its names are uses too (a value bound on both paths of an `if`
            # and read only here was split in two, the call reading the first path's)
            for n in webs.loads(s):
                webs.use(n, state)
    return state


def _loop(s, entry, webs, target):
    """Iterate the loop body to a fixpoint of reaching definitions."""
    d = id(s)
    if target is not None:
        webs.defs[d] = (target.id, target)
        webs.loop_defs.add(d)
    back = {}
    head = None
    while True:
        new_head = _merge(entry, back)
        if target is not None:
            new_head[target.id] = frozenset([d])
        if new_head == head:
            break
        head = new_head
        mark = len(webs.uses)
        back = _flow(s.body, head, webs)
        del webs.uses[mark:]
    back = _flow(s.body, head, webs)
    return back if target is None else _merge(entry, back)


def split_webs(stmts, params, result):
    """Rename variables in place so that each web has its own name; returns the result atom."""
    webs = _Webs()
    state = {p: frozenset([(_ENTRY, p)]) for p in params}
    state = _flow(stmts, state, webs)
    if isinstance(result, ast.Name):
        result = ast.Name(id=result.id, ctx=ast.Load())
        webs.use(result, state)
    for d in webs.defs:
        webs.find(d)
    for p in params:
        webs.find((_ENTRY, p))
    name_of = {}
    taken = set(params) | {v for v, _ in webs.defs.values()}
    order = [(_ENTRY, p) for p in params] + list(webs.defs)
    loop_only = {}
    for d in order:
        is_loop = not isinstance(d, tuple) and d in webs.loop_defs
        root = webs.find(d)
        loop_only[root] = loop_only.get(root, True) and is_loop
    counts = {}
    for d in order:     # loop variables keep their names (every loop over `i` is an int)
        root = webs.find(d)
        if loop_only[root]:
            var = d[1] if isinstance(d, tuple) else webs.defs[d][0]
            name_of[root] = var
            counts[var] = 1
    for d in order:     # other webs of that name (`i = 2.0` after the loops) get their own
        var = d[1] if isinstance(d, tuple) else webs.defs[d][0]
        root = webs.find(d)
        if root in name_of:
            continue
        counts[var] = counts.get(var, 0) + 1
        if counts[var] == 1:
            name_of[root] = var
            continue
        k = counts[var]
        while f"{var}_{k}" in taken:
            k += 1
        name_of[root] = f"{var}_{k}"
        taken.add(name_of[root])
    for d, (var, node) in webs.defs.items():
        node.id = name_of[webs.find(d)]
        if node.id != var:
            ir.annotate(node, web=ir.note(node, "web", var))   # (the user's name, for messages)
    for node, reaching in webs.uses:
        if reaching:
            node.id = name_of[webs.find(next(iter(reaching)))]
    return result
