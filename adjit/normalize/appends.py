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
array holds loop counters, lengths and integer constants, a bool array comparisons; anything
else is float64 (a list of arrays is refused by name).

Rewritten where the function's body makes the empty list, one `for` statement after it
appends to it (at any depth) and nothing else touches the list until that loop has ended;
any other use of an empty list keeps the normalizer's refusal.
"""
import ast
import copy

import numpy as np

from .. import ir
from ..frontend.source import assigned_names
from .names import unused_name

NUMPY = "_adjit_np"        # the name the new code calls numpy by (resolved in the closure)
APPENDED = "_adjit_appended"    # on an element store an append became: the list's name


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
    return make_source(tree, {NUMPY: np}) if changed else src


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
    changed_in_loop = assigned_names(loop)
    room, counting = [], []
    ints = bools = True
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
        ints = ints and _surely_int(s.value.args[0], chain)
        bools = bools and _surely_bool(s.value.args[0])
    buf = unused_name(f"{name}_buf", taken)
    count = unused_name(f"{name}_n", taken)
    dtype = f", {NUMPY}.int64" if ints else f", {NUMPY}.bool_" if bools else ""
    before = ast.parse(f"{size} = {' + '.join(room) or '0'}").body
    for nest in counting:
        before += nest
    before += ast.parse(f"{buf} = {NUMPY}.empty({size}{dtype})\n{count} = 0").body
    for s in before:
        ast.copy_location(s, made)
        ast.fix_missing_locations(s)
    for s in appends:
        block = parents[id(s)]
        for field in ("body", "orelse"):
            stmts = getattr(block, field, None)
            if isinstance(stmts, list) and any(x is s for x in stmts):
                at = next(i for i, x in enumerate(stmts) if x is s)
                element = ast.Subscript(value=ast.Name(id=buf, ctx=ast.Load()),
                                        slice=ast.Name(id=count, ctx=ast.Load()),
                                        ctx=ast.Store())
                setattr(element, APPENDED, name)
                store = ast.Assign(targets=[element], value=s.value.args[0])
                step = ast.AugAssign(target=ast.Name(id=count, ctx=ast.Store()),
                                     op=ast.Add(), value=ast.Constant(1))
                for new in (store, step):
                    ast.copy_location(new, s)
                    ast.fix_missing_locations(new)
                stmts[at:at + 1] = [store, step]
    for s in body[j + 1:]:
        _ReadAs(name, buf, count).visit(s)
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
    counters = {L.target.id for L in chain if isinstance(L.target, ast.Name) and
                isinstance(L.iter, ast.Call) and isinstance(L.iter.func, ast.Name) and
                L.iter.func.id == "range"}
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


def _surely_bool(e):
    """A comparison, `not`, `and`/`or` of them, or True/False."""
    if isinstance(e, ast.Constant):
        return type(e.value) is bool
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
        return True
    if isinstance(e, ast.BoolOp):
        return all(_surely_bool(v) for v in e.values)
    return isinstance(e, ast.Compare)


class _ReadAs(ast.NodeTransformer):
    """After the loop: `len(name)` is the count, any other read the filled part."""

    def __init__(self, name, buf, count):
        self.name, self.buf, self.count = name, buf, count

    def visit_Call(self, node):
        if isinstance(node.func, ast.Name) and node.func.id == "len" and \
                len(node.args) == 1 and isinstance(node.args[0], ast.Name) and \
                node.args[0].id == self.name:
            return ast.copy_location(ast.Name(id=self.count, ctx=ast.Load()), node)
        self.generic_visit(node)
        return node

    def visit_Name(self, node):
        if node.id != self.name:
            return node
        part = ast.Subscript(value=ast.Name(id=self.buf, ctx=ast.Load()),
                             slice=ast.Slice(lower=None, upper=ast.Name(id=self.count,
                                                                        ctx=ast.Load()),
                                             step=None), ctx=ast.Load())
        return ast.fix_missing_locations(ast.copy_location(part, node))
