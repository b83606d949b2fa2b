"""A tuple carried through a loop or a branch in one name, as its elements in names.

Time-stepping code keeps its state in a tuple or a named tuple and steps it in a loop
(`s = State(0.0, y0)` then `s = step(s, h)` inside it; numba unifies the tuple's type across
the iterations). The normalizer holds a tuple in a name as the tuple of its elements' values
where the name is bound once; a name bound again in a loop or a branch is written here as
its elements in names of their own, which the loop carries as it carries any name:

    s = State(0.0, y0)              s_t, s_y = State(0.0, y0)
    for k in range(n):              for k in range(n):
        s = step(s, h)                  s_t, s_y = step(State(s_t, s_y), h)
    return s.t + np.sum(s.y)        return s_t + np.sum(s_y)

Only where every binding of the name is a tuple whose length is known from the code (a
tuple written out, a named tuple's constructor, a helper each of whose returns is one of
those) and every read of it is an element (`s[1]`, `s.y`), the whole tuple (a call's
argument, rebuilt from the names) or `len(s)`; anything else is left to the normalizer,
which refuses it by name.
"""
import ast
import copy
import types

from ..frontend.source import read_function, unwrap


def carried_tuples(src, make_source):
    """`src` with each tuple name bound in a loop or branch held as its elements' names;
    `src` itself when there is none. `make_source(tree, extra)` builds the new source."""
    walk = _Walk()
    for stmt in src.tree.body:
        walk.visit(stmt)
    params = {a.arg for a in ast.walk(src.tree.args) if isinstance(a, ast.arg)}
    carried = {}
    for name, bindings in walk.bindings.items():
        if name in params or name in walk.nested or len(bindings) < 2 or \
                walk.stores.get(name, 0) != len(bindings) or \
                not any(inside for _, inside in bindings):
            # (a tuple bound once, or only in straight-line code, the normalizer holds)
            continue
        shapes = [_tuple_shape(src, value, walk) for value, _ in bindings]
        if None in shapes or len({n for n, _, _ in shapes}) != 1:
            continue
        fields = {f for _, f, _ in shapes if f is not None}
        if len(fields) > 1:
            continue
        fields = fields.pop() if fields else None
        maker = next((m for _, f, m in shapes if m is not None), None)
        if fields is not None and maker is None and walk.whole.get(name):
            continue        # (the whole named tuple read, no constructor to rebuild it with)
        if not walk.reads_ok(name, shapes[0][0], fields):
            continue
        carried[name] = (shapes[0][0], fields, maker)
    if not carried:
        return src
    names = {}
    for name, (n, fields, maker) in carried.items():
        parts = []
        for k in range(n):
            stem = f"{name}_{fields[k] if fields else k}"
            new, j = stem, 1
            while new in walk.used:
                j += 1
                new = f"{stem}{j}"
            walk.used.add(new)
            parts.append(new)
        names[name] = (parts, fields, maker)
    tree = _Carry(names).visit(copy.deepcopy(src.tree))
    ast.fix_missing_locations(tree)
    return make_source(tree, {})


def _tuple_shape(src, value, walk=None, element=None):
    """(length, field names or None, the constructor expression or None) of the tuple
    `value` makes (its element `element`, where given), where the code says it; else None.
    `walk`: the function's _Walk, for a name bound once to a tuple (`s = trial` after
    `trial, err = step(s, h)`)."""
    if element is not None:
        if isinstance(value, ast.Tuple) and -len(value.elts) <= element < len(value.elts) \
                and not any(isinstance(e, ast.Starred) for e in value.elts):
            return _tuple_shape(src, value.elts[element])
        fn = unwrap(src.resolve(value.func)) if isinstance(value, ast.Call) else None
        helper = _helper(fn)
        if helper is None:
            return None
        shapes = {_tuple_shape(helper, r.value, None, element) for r in ast.walk(helper.tree)
                  if isinstance(r, ast.Return) and r.value is not None}
        shapes = {None if s is None else s[:2] for s in shapes}
        return (*shapes.pop(), None) if len(shapes) == 1 and None not in shapes else None
    if isinstance(value, ast.Name) and walk is not None:
        unpacked = walk.unpacked.get(value.id, [])
        if walk.stores.get(value.id) != 1 or len(unpacked) != 1:
            return None
        shape = _tuple_shape(src, *unpacked[0][:1], None, unpacked[0][1])
        return None if shape is None else (shape[0], shape[1], None)
    if isinstance(value, ast.Tuple) and not any(isinstance(e, ast.Starred)
                                                for e in value.elts):
        return len(value.elts), None, None
    if not isinstance(value, ast.Call):
        return None
    cls = named_tuple(src.resolve(value.func))
    if cls is not None:
        if value.keywords or len(value.args) != len(cls._fields) or \
                any(isinstance(a, ast.Starred) for a in value.args):
            return None
        return len(cls._fields), tuple(cls._fields), value.func
    helper = _helper(unwrap(src.resolve(value.func)))
    if helper is None:
        return None
    returns = [r for r in ast.walk(helper.tree) if isinstance(r, ast.Return)]
    shapes = {_tuple_shape(helper, r.value)[:2] if r.value is not None and
              _tuple_shape(helper, r.value) is not None else None for r in returns}
    if not returns or None in shapes or len(shapes) != 1:
        return None
    n, fields = shapes.pop()
    return n, fields, None


def _helper(fn):
    """The source of a user's function `fn`, or None."""
    if not isinstance(fn, types.FunctionType):
        return None
    try:
        return read_function(fn)
    except Exception:       # (its source cannot be read: the normalizer says so)
        return None


def named_tuple(obj):
    """`obj` if it is a named tuple class (collections.namedtuple), else None."""
    return obj if isinstance(obj, type) and issubclass(obj, tuple) and \
        isinstance(getattr(obj, "_fields", None), tuple) else None


class _Walk(ast.NodeVisitor):
    """Each name's bindings `name = value` (value, whether in a loop or branch), its stores
    of any kind, its reads by kind, and the names used in nested functions."""

    def __init__(self):
        self.bindings, self.stores, self.used, self.nested = {}, {}, set(), set()
        self.unpacked = {}      # name -> [(value, k)]: `a, name = value` binds element k
        self.reads = {}         # name -> [("index", k) | ("field", f) | ("whole",) | ("len",)
        self.whole = {}
        self.depth = 0

    def visit_Assign(self, node):
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            self.bindings.setdefault(node.targets[0].id, []).append((node.value,
                                                                     self.depth > 0))
        elif len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple):
            for k, e in enumerate(node.targets[0].elts):
                if isinstance(e, ast.Name):
                    self.unpacked.setdefault(e.id, []).append((node.value, k))
        self.generic_visit(node)

    def _block(self, node):
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_For = visit_While = visit_If = visit_With = visit_Try = _block

    def _nested(self, node):
        self.nested.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name))

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = _nested

    def visit_Name(self, node):
        self.used.add(node.id)
        if isinstance(node.ctx, ast.Load):
            self.reads.setdefault(node.id, []).append(("whole",))
            self.whole[node.id] = True
        else:
            self.stores[node.id] = self.stores.get(node.id, 0) + 1

    def visit_Subscript(self, node):
        if isinstance(node.value, ast.Name) and isinstance(node.ctx, ast.Load) and \
                isinstance(node.slice, ast.Constant) and type(node.slice.value) is int:
            self.used.add(node.value.id)
            self.reads.setdefault(node.value.id, []).append(("index", node.slice.value))
            return
        self.generic_visit(node)

    def visit_Attribute(self, node):
        if isinstance(node.value, ast.Name) and isinstance(node.ctx, ast.Load):
            self.used.add(node.value.id)
            self.reads.setdefault(node.value.id, []).append(("field", node.attr))
            return
        self.generic_visit(node)

    def visit_Call(self, node):
        if isinstance(node.func, ast.Name) and node.func.id == "len" and \
                len(node.args) == 1 and isinstance(node.args[0], ast.Name):
            self.used.add(node.args[0].id)
            self.reads.setdefault(node.args[0].id, []).append(("len",))
            self.visit(node.func)
            return
        self.generic_visit(node)

    def reads_ok(self, name, n, fields):
        for read in self.reads.get(name, []):
            if read[0] == "index" and not -n <= read[1] < n:
                return False
            if read[0] == "field" and (fields is None or read[1] not in fields):
                return False
        return True


class _Carry(ast.NodeTransformer):
    def __init__(self, names):
        self.names = names

    def visit_FunctionDef(self, node):
        if getattr(self, "_top", None) is None:
            self._top = node
            self.generic_visit(node)
        return node

    def visit_Assign(self, node):
        self.generic_visit(node)
        target = node.targets[0] if len(node.targets) == 1 else None
        if isinstance(target, ast.Name) and target.id in self.names:
            parts = self.names[target.id][0]
            node.targets = [ast.copy_location(ast.Tuple(
                elts=[ast.copy_location(ast.Name(id=p, ctx=ast.Store()), target)
                      for p in parts], ctx=ast.Store()), target)]
        return node

    def visit_Subscript(self, node):
        if isinstance(node.value, ast.Name) and node.value.id in self.names and \
                isinstance(node.ctx, ast.Load) and isinstance(node.slice, ast.Constant):
            parts = self.names[node.value.id][0]
            return ast.copy_location(ast.Name(id=parts[node.slice.value], ctx=ast.Load()),
                                     node)
        return self.generic_visit(node)

    def visit_Attribute(self, node):
        if isinstance(node.value, ast.Name) and node.value.id in self.names and \
                isinstance(node.ctx, ast.Load):
            parts, fields, _ = self.names[node.value.id]
            return ast.copy_location(ast.Name(id=parts[fields.index(node.attr)],
                                              ctx=ast.Load()), node)
        return self.generic_visit(node)

    def visit_Name(self, node):
        if node.id in self.names and isinstance(node.ctx, ast.Load):
            parts, fields, maker = self.names[node.id]
            elts = [ast.copy_location(ast.Name(id=p, ctx=ast.Load()), node) for p in parts]
            if maker is not None:
                return ast.copy_location(ast.Call(func=copy.deepcopy(maker), args=elts,
                                                  keywords=[]), node)
            return ast.copy_location(ast.Tuple(elts=elts, ctx=ast.Load()), node)
        return node
