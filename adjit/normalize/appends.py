"""Lists of numbers grown by `.append` in a loop, written as an array and a counter.

numba compiles `out = []` followed by a loop that calls `out.append(e)` to a list that grows
element by element. adjit keeps the same values in an array allocated before the loop, with
room for every iteration that may append, and a count of the elements appended:

    out = []                                 out_buf = np.empty(<iterations that may append>)
    for i in range(n):                       out_n = 0
        if x[i] > 0.0:                       for i in range(n):
            out.append(x[i] * x[i])              if x[i] > 0.0:
                                                     out_buf[out_n] = x[i] * x[i]
                                                     out_n += 1
    s = np.sum(np.array(out))                s = np.sum(np.array(out_buf[:out_n]))

After the loop the list is `out_buf[:out_n]` wherever it is read (`len(out)` is `out_n`):
`np.array`, `np.asarray`, `sum`, `max`, `len`, indexing and `for` loops take it as they take
the list. The room is the number of iterations of the loops around each append (a range's
length bounds its iterations, an array's length its rows), computed before the loop, so
loops inside the appending loop must run over sizes the loop does not change. An int64
array holds loop counters, lengths and integer constants, a bool array comparisons, an
array of a's dtype elements of an array a the loop does not rebind (`idx[k]`, where the
normalizer knows a's dtype); anything else is float64 (a list of arrays is refused by
name). An index into the list (`out[k]`, `out[-1]`) is checked against the count, raising
IndexError as numba's lists do, since the array has room past it.

A list of tuples written out in every append, all of one length (`pairs.append((i, j))`),
is one such array per item, with one count; after the loop `for i, j in pairs` iterates
`zip(pairs_buf0[:n], pairs_buf1[:n])`, `for p in pairs` the same with `p[0]`, `p[1]` (or
`a, b = p`) the items' names, `i, j = pairs[k]` reads item by item, `pairs[k][c]` item c,
and `len(pairs)` is the count. Any other read of such a list keeps the refusal.

Rewritten where the function's body makes the empty list, one `for` statement after it
appends to it (at any depth) and nothing else touches the list until that loop has ended;
any other use of an empty list keeps the normalizer's refusal.
"""
import ast
import copy

import numpy as np

from .. import ir
from ..frontend.source import assigned_names
from ..runtime.index import list_item
from .comprehensions import LISTED
from .names import unused_name

NUMPY = "_adjit_np"        # the name the new code calls numpy by (resolved in the closure)
ITEM = "_adjit_list_item"  # and the check of an index into the list (runtime list_item)
DTYPE = "_adjit_element_dtype"  # and the dtype of the array an item is read from
APPENDED = "_adjit_appended"    # on an element store an append became: the list's name


def element_dtype(a):
    """`np.empty(room, element_dtype(a))`: a buffer of the dtype of the array `a`, where the
    normalizer knows it (numpy_calls.declared_dtype), else float64. Never called."""
    raise AssertionError("element_dtype is resolved by the normalizer")


def desugar(src, make_source):
    """`src` with each list its body grows by appends in a loop written as an array and a
    counter; `src` itself when there is none. `make_source(tree, extra)` builds the
    FunctionSource of the new tree, with `extra` names resolved in its closure."""
    if not any(_empty_list(s) is not None or _empty_lists(s) for s in src.tree.body):
        return src
    tree = copy.deepcopy(src.tree)
    body = []
    for s in tree.body:         # `small, large = [], []`: one statement each
        body += [ast.copy_location(ast.Assign(targets=[t], value=ast.List(elts=[],
                                                                          ctx=ast.Load())), s)
                 for t in s.targets[0].elts] if _empty_lists(s) else [s]
    tree.body = body
    taken = {n.id for n in ir.walk(tree) if isinstance(n, ast.Name)} | set(src.params)
    changed = False
    for s in list(tree.body):
        name = _empty_list(s)
        if name is not None and s in tree.body and _rewrite(src, tree, s, name, taken):
            changed = True
    return make_source(tree, {NUMPY: np, ITEM: list_item, DTYPE: element_dtype}) if changed else src


def _empty_list(s):
    if isinstance(s, ast.Assign) and len(s.targets) == 1 and \
            isinstance(s.targets[0], ast.Name) and isinstance(s.value, ast.List) and \
            not s.value.elts:
        return s.targets[0].id
    return None


def _empty_lists(s):
    return isinstance(s, ast.Assign) and len(s.targets) == 1 and \
        isinstance(s.targets[0], ast.Tuple) and isinstance(s.value, ast.Tuple) and \
        len(s.targets[0].elts) == len(s.value.elts) and \
        all(isinstance(t, ast.Name) for t in s.targets[0].elts) and \
        all(isinstance(v, ast.List) and not v.elts for v in s.value.elts)


def _parents(tree):
    out = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            out[id(child)] = node
    return out


def _rewrite(src, tree, made, name, taken):
    """Rewrite the list `name` made by the statement `made` (in tree.body); False where the
    pattern does not hold (the statements are left as they are)."""
    body = tree.body
    k = body.index(made)
    parents = _parents(tree)
    uses = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == name
            and n is not made.targets[0]]
    appends = []
    for n in uses:
        attr = parents.get(id(n))
        call = parents.get(id(attr))
        stmt = parents.get(id(call))
        if isinstance(attr, ast.Attribute) and attr.attr == "append" and \
                isinstance(call, ast.Call) and call.func is attr and \
                len(call.args) == 1 and not call.keywords and \
                not isinstance(call.args[0], ast.Starred) and \
                isinstance(stmt, ast.Expr) and stmt.value is call:
            appends.append(stmt)
    if not appends:
        return False
    width = _tuple_width(appends)
    if width == -1:
        return False
    tops = {id(_top(s, parents, tree)) for s in appends}
    if len(tops) != 1:
        return False
    loop = _top(appends[0], parents, tree)
    j = next(i for i, s in enumerate(body) if s is loop)
    if not isinstance(loop, ast.For) or j <= k:
        return False
    inside = {id(n) for n in ast.walk(loop)}
    append_names = {id(s.value.func.value) for s in appends}
    for n in uses:
        if id(n) in append_names:
            continue
        if id(n) in inside or not isinstance(n.ctx, ast.Load):
            return False
        if any(id(n) in {id(x) for x in ast.walk(s)} for s in body[k + 1:j]):
            return False
    if any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
           for s in body[j + 1:] for n in ast.walk(s)):
        return False
    if width and not all(_tuple_read(n, parents, width) for n in uses
                         if id(n) not in inside):
        return False
    changed_in_loop = assigned_names(loop)
    room, counting = [], []
    ints, bools = [True] * (width or 1), [True] * (width or 1)
    items = None        # per buffer: the array every append reads an element of, or None
    size = unused_name(f"{name}_room", taken)
    for s in appends:
        chain = _loops_around(s, parents, loop)
        if chain is None:
            return False
        trips = [_trip_count(L.iter) for L in chain]
        if any(t is None for t in trips):
            return False
        targets = _targets(chain)
        if targets is None:
            return False
        moved = set()
        for L, t in zip(chain[1:], trips[1:]):
            read = _reads(t)
            if read & (changed_in_loop - targets):
                return False        # a size the loop computes: not known before it
            moved |= read & targets
        if not moved:
            room.append(" * ".join(f"({t})" for t in trips))
        else:
            # inner loops over sizes of the outer loops' counters (`range(i + 1, n)`):
            # the room is counted by the loops alone, their counters renamed
            counting.append(_counting_nest(chain, size, taken))
        parts = _parts(s, width)
        ints = [a and _surely_int(e, chain) for a, e in zip(ints, parts)]
        bools = [a and _surely_bool(e) for a, e in zip(bools, parts)]
        items = [a if a == _item_of(e, changed_in_loop, chain) else None
                 for a, e in zip(items or [_item_of(e, changed_in_loop, chain)
                                           for e in parts], parts)]
    bufs = [unused_name(f"{name}_buf{c if width else ''}", taken) for c in range(width or 1)]
    count = unused_name(f"{name}_n", taken)
    before = ast.parse(f"{size} = {' + '.join(room) or '0'}").body
    for nest in counting:
        before += nest
    for buf, i, b, a in zip(bufs, ints, bools, items):
        dtype = f", {NUMPY}.int64" if i else f", {NUMPY}.bool_" if b else \
            f", {DTYPE}({a})" if a else ""
        before += ast.parse(f"{buf} = {NUMPY}.empty({size}{dtype})").body
        if not width:       # (numba's `+` joins the list: anf.holds_list)
            setattr(before[-1], LISTED, True)
    before += ast.parse(f"{count} = 0").body
    for s in before:
        ast.copy_location(s, made)
        ast.fix_missing_locations(s)
    for s in appends:
        block = parents[id(s)]
        for field in ("body", "orelse"):
            stmts = getattr(block, field, None)
            if isinstance(stmts, list) and any(x is s for x in stmts):
                at = next(i for i, x in enumerate(stmts) if x is s)
                new = []
                for buf, part in zip(bufs, _parts(s, width)):
                    element = ast.Subscript(value=ast.Name(id=buf, ctx=ast.Load()),
                                            slice=ast.Name(id=count, ctx=ast.Load()),
                                            ctx=ast.Store())
                    setattr(element, APPENDED, name)
                    new.append(ast.Assign(targets=[element], value=part))
                new.append(ast.AugAssign(target=ast.Name(id=count, ctx=ast.Store()),
                                         op=ast.Add(), value=ast.Constant(1)))
                for x in new:
                    ast.copy_location(x, s)
                    ast.fix_missing_locations(x)
                stmts[at:at + 1] = new
    for s in body[j + 1:]:
        if width:
            _ReadTuples(name, bufs, count, taken).visit(s)
        else:
            _ReadAs(name, bufs[0], count).visit(s)
    body[k:k + 1] = []
    at = next(i for i, s in enumerate(body) if s is loop)
    body[at:at] = before
    return True


def _targets(chain):
    """The names the loops bind (None where a target is not names)."""
    out = set()
    for L in chain:
        for n in ast.walk(L.target):
            if isinstance(n, ast.Name):
                out.add(n.id)
            elif not isinstance(n, (ast.Tuple, ast.Store)):
                return None
    return out


def _counting_nest(chain, size, taken):
    """`for i' in it: for j' in it'(i'): size += 1`: the loops around an append with
    their counters renamed (the function's own keep their values), counting iterations."""
    renamed = {}
    for L in chain:
        for n in ast.walk(L.target):
            if isinstance(n, ast.Name):
                renamed[n.id] = unused_name(f"{n.id}_count", taken)
    body = ast.parse(f"{size} += 1").body
    for L in reversed(chain):
        loop = ast.For(target=_Rename(renamed).visit(copy.deepcopy(L.target)),
                       iter=_Rename(renamed).visit(copy.deepcopy(L.iter)), body=body,
                       orelse=[])
        body = [ast.copy_location(loop, L)]
    return [ast.fix_missing_locations(body[0])]


class _Rename(ast.NodeTransformer):
    def __init__(self, names):
        self.names = names

    def visit_Name(self, node):
        if node.id in self.names:
            return ast.copy_location(ast.Name(id=self.names[node.id], ctx=node.ctx), node)
        return node


def _top(s, parents, tree):
    """The statement of tree.body holding `s`."""
    node = s
    while parents.get(id(node)) is not tree:
        node = parents[id(node)]
    return node


def _loops_around(s, parents, loop):
    """The for loops from `loop` down to `s`; None where a while loop (or anything but
    for/if) encloses it."""
    chain = []
    node = s
    while node is not loop:
        node = parents[id(node)]
        if isinstance(node, ast.For):
            chain.append(node)
        elif not isinstance(node, (ast.If,)):
            return None
    return list(reversed(chain))


def _trip_count(it):
    """Source of an upper bound on the iterations of `for v in it`, or None."""
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and not it.keywords:
        args = it.args
        if it.func.id == "range" and 1 <= len(args) <= 3 and all(_pure(a) for a in args):
            if len(args) == 1:
                return f"max({ast.unparse(args[0])}, 0)"
            return f"abs({ast.unparse(args[1])} - {ast.unparse(args[0])})"
        if it.func.id in ("enumerate", "zip") and args:
            return _trip_count(args[0])     # (zip stops at its shortest: the first bounds it)
        return None
    if _pure(it) and isinstance(it, (ast.Name, ast.Attribute, ast.Subscript)):
        if isinstance(it, ast.Attribute) and it.attr == "flat":
            return f"{ast.unparse(it.value)}.size"
        return f"len({ast.unparse(it)})"
    return None


def _pure(node):
    """Names, constants, arithmetic, attributes (a.shape, a.T) and subscripts of them, and
    len(): evaluated twice (for the room and by the loop) with the same value."""
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            if not (isinstance(n.func, ast.Name) and n.func.id == "len"):
                return False
        elif isinstance(n, (ast.Lambda, ast.NamedExpr, ast.ListComp, ast.IfExp)):
            return False
    return True


def _reads(text):
    return {n.id for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Name)}


def _surely_int(e, chain):
    """An integer constant, a range loop's counter, len(), or integer arithmetic of them."""
    counters = {L.target.elts[0].id for L in chain if isinstance(L.target, ast.Tuple) and
                len(L.target.elts) == 2 and isinstance(L.target.elts[0], ast.Name) and
                isinstance(L.iter, ast.Call) and isinstance(L.iter.func, ast.Name) and
                L.iter.func.id == "enumerate" and
                not _rebound(L, L.target.elts[0].id)}      # (enumerate's count)
    counters |= {L.target.id for L in chain if isinstance(L.target, ast.Name) and
                 isinstance(L.iter, ast.Call) and isinstance(L.iter.func, ast.Name) and
                 L.iter.func.id == "range" and not _rebound(L, L.target.id)}
    if isinstance(e, ast.Constant):
        return type(e.value) is int
    if isinstance(e, ast.Name):
        return e.id in counters
    if isinstance(e, ast.Call):
        return isinstance(e.func, ast.Name) and e.func.id == "len"
    if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub, ast.Mult,
                                                      ast.FloorDiv, ast.Mod)):
        return _surely_int(e.left, chain) and _surely_int(e.right, chain)
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
        return _surely_int(e.operand, chain)
    return False


def _item_of(e, changed_in_loop, chain=()):
    """The name of the array whose element `e` is (`idx[k]`, `a[i, j]`; or the variable of
    a loop around the append over a 1-D array's elements, `for v in a`, `for k, v in
    enumerate(a)`, `for i, v in zip(a[:n], b[:n])`: how an earlier list is read), where the
    loop does not bind that name: the list then takes the array's dtype (an index list read
    from an integer array stays integer)."""
    if isinstance(e, ast.Subscript) and isinstance(e.value, ast.Name) and \
            e.value.id not in changed_in_loop and \
            not isinstance(e.slice, ast.Slice) and \
            not (isinstance(e.slice, ast.Tuple) and
                 any(isinstance(k, ast.Slice) for k in e.slice.elts)):
        return e.value.id
    if isinstance(e, ast.Name):
        for L in chain:
            source = _iterated(L, e.id)
            if source is not None:
                return source if source not in changed_in_loop and \
                    not _rebound(L, e.id) else None
    return None


def _rebound(loop, name):
    """Whether the body of `loop` binds `name` again (`v = v * 0.5`, `v += 1`, an inner
    loop's `for v in ...`): then it is no longer only what the loop takes."""
    return name in assigned_names(ast.Module(body=loop.body, type_ignores=[]))


def _iterated(loop, name):
    """The array whose elements the loop's variable `name` takes, else None."""
    def array_of(it):
        if isinstance(it, ast.Subscript) and isinstance(it.slice, ast.Slice):
            it = it.value
        return it.id if isinstance(it, ast.Name) else None
    target, it = loop.target, loop.iter
    if isinstance(target, ast.Name):
        return array_of(it) if target.id == name else None
    if not (isinstance(target, ast.Tuple) and isinstance(it, ast.Call) and
            isinstance(it.func, ast.Name) and not it.keywords):
        return None
    names = [t.id if isinstance(t, ast.Name) else None for t in target.elts]
    if name not in names:
        return None
    k = names.index(name)
    if it.func.id == "zip" and len(it.args) == len(names):
        return array_of(it.args[k])
    if it.func.id == "enumerate" and len(it.args) == 1 and len(names) == 2 and k == 1:
        return array_of(it.args[0])
    return None


def _surely_bool(e):
    """A comparison, `not`, `and`/`or` of them, or True/False."""
    if isinstance(e, ast.Constant):
        return type(e.value) is bool
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
        return True
    if isinstance(e, ast.BoolOp):
        return all(_surely_bool(v) for v in e.values)
    return isinstance(e, ast.Compare)


class _ListReads(ast.NodeTransformer):
    """After the loop, the reads of a list kept in arrays and a count: `len(name)` is the
    count."""

    def __init__(self, name, count):
        self.name, self.count = name, count

    def visit_Call(self, node):
        if isinstance(node.func, ast.Name) and node.func.id == "len" and \
                len(node.args) == 1 and isinstance(node.args[0], ast.Name) and \
                node.args[0].id == self.name:
            return ast.copy_location(ast.Name(id=self.count, ctx=ast.Load()), node)
        self.generic_visit(node)
        return node


class _ReadAs(_ListReads):
    """After the loop: `len(name)` is the count, any other read the filled part."""

    def __init__(self, name, buf, count):
        super().__init__(name, count)
        self.buf = buf

    def visit_Subscript(self, node):
        if isinstance(node.value, ast.Name) and node.value.id == self.name and \
                not isinstance(node.slice, (ast.Slice, ast.Tuple)):
            node.slice = _checked(self.visit(node.slice), self.count)
            node.value = self.visit(node.value)
            return ast.fix_missing_locations(node)
        self.generic_visit(node)
        return node

    def visit_Name(self, node):
        if node.id != self.name:
            return node
        return ast.fix_missing_locations(ast.copy_location(_filled(self.buf, self.count),
                                                           node))


def _tuple_width(appends):
    """0 where every append adds a number; m where every one adds a tuple written out of m
    items (`pairs.append((i, j))`); -1 otherwise (left to the normalizer's refusal)."""
    widths = {len(s.value.args[0].elts) if isinstance(s.value.args[0], ast.Tuple) else 0
              for s in appends}
    if len(widths) != 1:
        return -1
    width = widths.pop()
    if width and any(isinstance(e, ast.Starred) for s in appends
                     for e in s.value.args[0].elts):
        return -1
    return width


def _parts(append, width):
    """What `append` adds, one expression per buffer."""
    value = append.value.args[0]
    return list(value.elts) if width else [value]


def _tuple_read(n, parents, width):
    """Whether the list of `width`-tuples named by `n` is read as adjit rewrites it: the
    iterable of a `for` unpacking each tuple, `len()`, `a, b = pairs[k]` or
    `pairs[k][c]` with a constant c."""
    up = parents.get(id(n))
    if isinstance(up, ast.For) and up.iter is n:
        if isinstance(up.target, ast.Name):
            return _items_only(up, parents, width)
        return isinstance(up.target, ast.Tuple) and len(up.target.elts) == width and \
            all(isinstance(t, ast.Name) for t in up.target.elts)
    if isinstance(up, ast.Call) and isinstance(up.func, ast.Name) and up.func.id == "len" \
            and up.args == [n]:
        return True
    if not (isinstance(up, ast.Subscript) and up.value is n and
            not isinstance(up.slice, (ast.Slice, ast.Tuple)) and _pure(up.slice)):
        return False
    above = parents.get(id(up))
    if isinstance(above, ast.Assign) and above.value is up:
        return _unpacks(above, width)
    return _constant_item(above, up, width)


def _unpacks(assign, width):
    """Whether `assign` unpacks its value into `width` names (`a, b = ...`)."""
    return len(assign.targets) == 1 and isinstance(assign.targets[0], ast.Tuple) and \
        len(assign.targets[0].elts) == width and \
        not any(isinstance(t, ast.Starred) for t in assign.targets[0].elts)


def _constant_item(node, of, width):
    """Whether `node` is `of[c]` with c an integer constant indexing a `width`-tuple."""
    return isinstance(node, ast.Subscript) and node.value is of and \
        isinstance(node.slice, ast.Constant) and type(node.slice.value) is int and \
        -width <= node.slice.value < width


def _items_only(loop, parents, width):
    """Whether the body of `for p in pairs` reads `p` only by item (`p[0]`, a constant
    index) or unpacks it whole (`a, b = p`), and never binds it."""
    p = loop.target.id
    for s in loop.body:
        for n in ast.walk(s):
            if not (isinstance(n, ast.Name) and n.id == p):
                continue
            up = parents.get(id(n))
            if isinstance(n.ctx, ast.Load) and (
                    _constant_item(up, n, width) or
                    (isinstance(up, ast.Assign) and up.value is n and _unpacks(up, width))):
                continue
            return False
    return True


class _Items(ast.NodeTransformer):
    """In the body of `for p in pairs`, `p[c]` is the name of item c, `p` unpacked the
    tuple of those names."""

    def __init__(self, name, items):
        self.name, self.items = name, items

    def visit_Subscript(self, node):
        if isinstance(node.value, ast.Name) and node.value.id == self.name:
            item = self.items[node.slice.value % len(self.items)]
            return ast.copy_location(ast.Name(id=item, ctx=ast.Load()), node)
        self.generic_visit(node)
        return node

    def visit_Name(self, node):
        if node.id == self.name:
            return ast.copy_location(ast.Tuple(elts=[ast.Name(id=i, ctx=ast.Load())
                                                     for i in self.items],
                                               ctx=ast.Load()), node)
        return node


class _ReadTuples(_ListReads):
    """After the loop, a list of tuples kept as one array per item: `for a, b in pairs`
    iterates `zip(pairs_buf0[:n], pairs_buf1[:n])`, `pairs[k]` is the tuple of the items'
    `[:n][k]`, `pairs[k][c]` item c's, `len(pairs)` the count."""

    def __init__(self, name, bufs, count, taken):
        super().__init__(name, count)
        self.bufs, self.taken = bufs, taken

    def _filled(self, c):
        return _filled(self.bufs[c], self.count)

    def _listed(self, node):
        return isinstance(node, ast.Name) and node.id == self.name

    def visit_For(self, node):
        if self._listed(node.iter):
            if isinstance(node.target, ast.Name):      # `for p in pairs`: p[c] is item c
                p = node.target.id
                items = [unused_name(f"{p}_{c}", self.taken) for c in range(len(self.bufs))]
                node.body = [_Items(p, items).visit(s) for s in node.body]
                node.target = ast.copy_location(ast.Tuple(
                    elts=[ast.Name(id=i, ctx=ast.Store()) for i in items], ctx=ast.Store()),
                    node.target)
            node.iter = ast.copy_location(ast.Call(
                func=ast.Name(id="zip", ctx=ast.Load()),
                args=[self._filled(c) for c in range(len(self.bufs))], keywords=[]),
                node.iter)
        self.generic_visit(node)
        return ast.fix_missing_locations(node)

    def visit_Subscript(self, node):
        if isinstance(node.value, ast.Subscript) and self._listed(node.value.value):
            c = node.slice.value % len(self.bufs)
            item = ast.Subscript(value=self._filled(c),
                                 slice=_checked(self.visit(node.value.slice), self.count),
                                 ctx=ast.Load())
            return ast.fix_missing_locations(ast.copy_location(item, node))
        if self._listed(node.value):
            key = _checked(self.visit(node.slice), self.count)
            items = ast.Tuple(elts=[ast.Subscript(value=self._filled(c),
                                                  slice=copy.deepcopy(key), ctx=ast.Load())
                                    for c in range(len(self.bufs))], ctx=ast.Load())
            return ast.fix_missing_locations(ast.copy_location(items, node))
        self.generic_visit(node)
        return node


def _filled(buf, count):
    """`buf[:count]`: the part of a list's array its appends filled."""
    return ast.Subscript(value=ast.Name(id=buf, ctx=ast.Load()),
                         slice=ast.Slice(lower=None, upper=ast.Name(id=count, ctx=ast.Load()),
                                         step=None), ctx=ast.Load())


def _checked(key, count):
    """`_adjit_list_item(key, count)`: the index, checked against the list's length."""
    return ast.Call(func=ast.Name(id=ITEM, ctx=ast.Load()),
                    args=[key, ast.Name(id=count, ctx=ast.Load())], keywords=[])
