"""List comprehensions of numbers, written as the loops numba runs for them.

numba compiles `[E for v in it if c]` to a list built element by element. adjit builds the
same values into a new array before the statement that holds the comprehension:

    n = <its length: len(it), a range's length, or a loop that counts>
    out = np.empty(n)                    # int64 or bool_ when E surely is one
    k = 0
    for v' in it:
        if c':
            out[k] = E'
            k += 1

and the statement reads `out` where the comprehension was. The loop's names are new (a
comprehension's variables do not leak into the function, as in Python), and the statement's
other parts see what Python's evaluation order gives them: the comprehension runs before
the statement, which is exact wherever it is evaluated once, at the statement. Where it is
not (in a `while` test, under `and`/`or`/`x if c else y`) it is refused, as are a condition
or an inner iterable that calls something with an effect (a draw, which the counting loop
would draw again). The array stands for the list wherever numba lets a list go: `sum`, `max`,
`min`, `len`, `np.array`, `np.asarray`, indexing, `for` loops.
"""
import ast
import copy

import numpy as np

from .. import ir
from ..rules.registry import REGISTRY
from ..frontend.source import assigned_names
from .names import unused_name

NUMPY = "_adjit_np"        # the name the new loops call numpy by (resolved in the closure)
OF_TUPLES = "_adjit_of_tuples"  # on the empty list a comprehension of tuples became
LISTED = "_adjit_listed"    # on the allocation of an array that stands for a list (anf.py)


def desugar(src, make_source, dtype_of=None):
    """`src` with every list comprehension of its body written as loops; `src` itself when
    it has none. `make_source(tree, extra)` builds the FunctionSource of the new tree, with
    `extra` names resolved in its closure. `dtype_of(name)`: "f", "i" or "b" for a
    parameter known to hold a 1-D array of floats, integers or booleans (else None): the
    elements of `[v for v in idx]` over an integer array are integers, as in numba's list."""
    if not any(isinstance(n, ast.ListComp) for n in ir.walk(src.tree)):
        return src
    tree = copy.deepcopy(src.tree)
    taken = {n.id for n in ir.walk(tree) if isinstance(n, ast.Name)} | set(src.params)
    # (a parameter the function binds again may hold other values by the comprehension)
    rebound = assigned_names(tree)
    kinds = {}
    for name in set(src.params) - rebound if dtype_of is not None else ():
        kind = dtype_of(name)
        if kind in ("i", "b"):
            kinds[name] = kind
    _Desugar(src, taken, kinds).block_into(tree)
    return make_source(tree, {NUMPY: np})


class _Desugar:
    def __init__(self, src, taken, kinds):
        self.src = src
        self.taken = taken
        self.kinds = kinds          # parameters holding arrays of integers ("i"), booleans
        self.count = 0

    def error(self, node, what, instead):
        return self.src.loc.error(node, what, instead)

    def number(self):
        """A number for a new comprehension, none of whose names the function uses."""
        while True:
            self.count += 1
            stem = f"listcomp{self.count}"
            if not any(n == stem or n.startswith(stem + "_") for n in self.taken):
                return stem

    def fresh(self, stem, suffix):
        return unused_name(f"{stem}_{suffix}" if suffix else stem, self.taken)

    # statements ------------------------------------------------------------------------
    def block_into(self, node):
        for field in ("body", "orelse"):
            stmts = getattr(node, field, None)
            if isinstance(stmts, list):
                setattr(node, field, self.block(stmts))

    def block(self, stmts):
        out = []
        for s in stmts:
            out.extend(self.statement(s))
        return out

    def statement(self, s):
        if isinstance(s, ast.While) and _comprehensions(s.test):
            raise self.error(s, "a list comprehension in a `while` condition (evaluated on "
                                "every test)",
                             "Build the list before the loop, or in the loop body, and test "
                             "a name.")
        if isinstance(s, (ast.If, ast.For, ast.While)):
            self.block_into(s)
        before = []
        for field in _EVALUATED_ONCE.get(type(s), ()):
            value = getattr(s, field, None)
            if isinstance(value, ast.expr):
                setattr(s, field, self.expression(value, before))
        for field in ("targets", "target"):
            value = getattr(s, field, None)
            for t in value if isinstance(value, list) else [value]:
                if isinstance(t, ast.AST) and _comprehensions(t):
                    raise self.error(s, "a list comprehension in an assignment's target",
                                     "Compute the index on a line of its own.")
        return self.block(before) + [s] if before else [s]

    def expression(self, e, before):
        """`e` with each list comprehension it evaluates replaced by the name of its array,
        the statements that build them appended to `before`."""
        if isinstance(e, ast.ListComp):
            return self.lower(e, before)
        if isinstance(e, (ast.IfExp, ast.BoolOp, ast.Lambda)) and _comprehensions(e):
            raise self.error(e, "a list comprehension under `and`, `or` or `x if c else y` "
                                "(evaluated only on some paths)",
                             "Build the list on a line of its own, before the statement.")
        if isinstance(e, ast.Call) and len(e.args) == 1 and not e.keywords and \
                isinstance(e.args[0], ast.ListComp) and \
                self.src.resolve(e.func) in (np.array, np.asarray):
            return self.lower(e.args[0], before, listed=False)  # np.array([...]): an array
        for field, value in ast.iter_fields(e):
            if isinstance(value, ast.expr):
                setattr(e, field, self.expression(value, before))
            elif isinstance(value, list):
                setattr(e, field, [self.expression(v, before) if isinstance(v, ast.expr)
                                   else v for v in value])
        return e

    # one comprehension -----------------------------------------------------------------
    def elements_of(self, gens, kind):
        """The targets of `gens` bound to the elements of a parameter holding an array of
        `kind` ("i", "b"): `v` of `for v in idx` and of `for k, v in enumerate(idx)`."""
        found = set()
        for t, it, _ in gens:
            if isinstance(it, ast.Call) and _is_call_of(it, self.src, enumerate) and \
                    len(it.args) == 1 and not it.keywords and isinstance(t, ast.Tuple) and \
                    len(t.elts) == 2:
                t, it = t.elts[1], it.args[0]
            if isinstance(t, ast.Name) and isinstance(it, ast.Name) and \
                    self.kinds.get(it.id) == kind:
                found.add(t.id)
        return found

    def lower(self, comp, before, listed=True):
        """The name of the array built for the comprehension `comp` (the statements that build
        it appended to `before`); `listed`: it stands for numba's list (anf.holds_list), not
        for np.array of it."""
        stem = self.number()
        rename = {}
        gens = []
        for k, g in enumerate(comp.generators):
            if g.is_async:
                raise self.error(comp, "an async comprehension", "Write a plain loop.")
            it = _renamed(g.iter, rename)
            if k > 0 or g.ifs:
                self.pure(comp, it, "an iterable after the first")
            if k == 0:
                it = self.evaluated_once(it, before, stem)
            new = {}
            for name in _target_names(g.target, comp, self):
                new[name] = self.fresh(stem, name)
            rename = {**rename, **new}
            target = _renamed(g.target, rename, store=True)
            ifs = [_renamed(c, rename) for c in g.ifs]
            for c in ifs:
                self.pure(comp, c, "a condition")
            gens.append((target, it, ifs))
        elt = _renamed(comp.elt, rename)
        if isinstance(elt, ast.ListComp) and len(gens) == 1 and not gens[0][2]:
            return self.rows(comp, gens[0], elt, rename, before, stem)
        if isinstance(elt, (ast.ListComp, ast.List, ast.Tuple, ast.Dict, ast.Set)):
            raise self.error(comp, "a list comprehension of lists or tuples",
                             "Allocate a 2-D array with np.empty((n, m)) and fill its rows "
                             "in a loop.")
        where = comp
        out, k, n = self.fresh(stem, ""), self.fresh(stem, "k"), self.fresh(stem, "n")
        length = self.length(gens, before) if not any(ifs for _, _, ifs in gens) else None
        if length is not None:
            before.append(_at(where, _assign(n, length)))
        else:
            before.append(_at(where, _assign(n, ir.const(0))))
            before.append(_at(where, _nest(gens, [_increment(n)])))
        ints = {t.id for t, it, _ in gens
                if isinstance(t, ast.Name) and _is_range(it, self.src)} | \
            {t.elts[0].id for t, it, _ in gens
             if isinstance(t, ast.Tuple) and t.elts and isinstance(t.elts[0], ast.Name) and
             _is_call_of(it, self.src, enumerate)} | self.elements_of(gens, "i")
        kind = _element_kind(elt, ints, self.elements_of(gens, "b"))
        before.append(_at(where, _assign(out, _empty(n, kind))))
        setattr(before[-1], LISTED, listed)     # (numba's `+` joins a list: anf.holds_list)
        before.append(_at(where, _assign(k, ir.const(0))))
        store = ast.Assign(targets=[ast.Subscript(value=ast.Name(id=out, ctx=ast.Load()),
                                                  slice=ast.Name(id=k, ctx=ast.Load()),
                                                  ctx=ast.Store())], value=elt)
        before.append(_at(where, _nest(gens, [_at(where, store), _increment(k)])))
        return _at(comp, ast.Name(id=out, ctx=ast.Load()))

    def rows(self, comp, gen, inner, rename, before, stem):
        """`[[E for j in it2] for i in it1]` (no conditions, it2 the same for every i): the
        rows of a 2-D array (numba's list of lists, which np.array makes that array)."""
        if len(inner.generators) != 1 or inner.generators[0].ifs or \
                inner.generators[0].is_async:
            raise self.error(comp, "a list comprehension of lists with conditions or "
                             "several loops inside", "Allocate a 2-D array with "
                             "np.empty((n, m)) and fill its rows in a loop.")
        g = inner.generators[0]
        outer = set(rename.values())
        if any(isinstance(n, ast.Name) and n.id in outer for n in ir.walk(g.iter)):
            raise self.error(comp, "a list comprehension of rows whose length changes from "
                             "row to row", "Make every row the same length (numba's "
                             "np.array refuses ragged lists too).")
        self.pure(comp, g.iter, "an inner iterable")
        it = self.evaluated_once(g.iter, before, stem)
        new = {name: self.fresh(stem, name) for name in _target_names(g.target, comp, self)}
        target = _renamed(g.target, new, store=True)
        elt = _renamed(inner.elt, new)
        if isinstance(elt, (ast.ListComp, ast.List, ast.Tuple, ast.Dict, ast.Set)):
            raise self.error(comp, "a list comprehension of lists of lists",
                             "Allocate the array with np.empty and fill it in loops.")
        lengths = [self.length([gen], before) for gen in (gen, (target, it, []))]
        if any(n is None for n in lengths):
            raise self.error(comp, "a list comprehension of rows over something whose "
                             "length adjit cannot tell before the loops",
                             "Loop over a range, an array, enumerate or zip of arrays.")
        out, k, j = self.fresh(stem, ""), self.fresh(stem, "k"), self.fresh(stem, "j")
        n, m = self.fresh(stem, "n"), self.fresh(stem, "m")
        before.append(_at(comp, _assign(n, lengths[0])))
        before.append(_at(comp, _assign(m, lengths[1])))
        ints = {t.id for t, i, _ in (gen, (target, it, [])) if isinstance(t, ast.Name) and
                _is_range(i, self.src)}
        shape = ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Load()), ast.Name(id=m, ctx=ast.Load())],
                          ctx=ast.Load())
        empty = _empty(n, _element_kind(elt, ints))
        empty.args = [shape]
        before.append(_at(comp, _assign(out, empty)))
        before.append(_at(comp, _assign(k, ir.const(0))))
        store = ast.Assign(targets=[ast.Subscript(
            value=ast.Name(id=out, ctx=ast.Load()),
            slice=ast.Tuple(elts=[ast.Name(id=k, ctx=ast.Load()),
                                  ast.Name(id=j, ctx=ast.Load())], ctx=ast.Load()),
            ctx=ast.Store())], value=elt)
        row = [_assign(j, ir.const(0)), _nest([(target, it, [])], [store, _increment(j)]),
               _increment(k)]
        before.append(_at(comp, _nest([gen], [_at(comp, s) for s in row])))
        return _at(comp, ast.Name(id=out, ctx=ast.Load()))

    def evaluated_once(self, it, before, stem):
        """The first iterable, its parts evaluated once, before the loops."""
        if isinstance(it, ast.Call) and _is_call_of(it, self.src, range, enumerate, zip):
            it.args = [self.simple(a, before, stem) for a in it.args]
            return it
        return self.simple(it, before, stem)

    def simple(self, e, before, stem):
        if isinstance(e, (ast.Name, ast.Constant)) or (
                isinstance(e, ast.UnaryOp) and isinstance(e.operand, ast.Constant)):
            return e
        name = self.fresh(stem, "it")
        before.append(_at(e, _assign(name, e)))
        return ast.Name(id=name, ctx=ast.Load())

    def length(self, gens, before):
        """The comprehension's length without counting, where one generator of a range, a
        name, enumerate(name) or zip(names) makes it; else None."""
        if len(gens) != 1:
            return None
        _, it, _ = gens[0]
        if isinstance(it, ast.Name):
            return _len(it)
        if _is_call_of(it, self.src, enumerate) and len(it.args) == 1 and not it.keywords \
                and isinstance(it.args[0], ast.Name):
            return _len(it.args[0])
        if _is_call_of(it, self.src, zip) and it.args and not it.keywords and \
                all(isinstance(a, ast.Name) for a in it.args):
            lens = [_len(a) for a in it.args]
            return lens[0] if len(lens) == 1 else _call("min", lens)
        if _is_range(it, self.src) and not it.keywords and 1 <= len(it.args) <= 3:
            args = it.args
            start, stop = (ir.const(0), args[0]) if len(args) == 1 else (args[0], args[1])
            span = ast.BinOp(left=stop, op=ast.Sub(), right=start) if len(args) > 1 else stop
            if len(args) == 3:
                step = ir.constant_int(args[2])
                if step is None or step == 0:
                    return None
                if step > 0:
                    span = ast.BinOp(left=ast.BinOp(left=span, op=ast.Add(),
                                                    right=ir.const(step - 1)),
                                     op=ast.FloorDiv(), right=ir.const(step))
                else:
                    span = ast.BinOp(left=ast.BinOp(
                        left=ast.UnaryOp(op=ast.USub(), operand=span), op=ast.Add(),
                        right=ir.const(-step - 1)), op=ast.FloorDiv(), right=ir.const(-step))
            return _call("max", [span, ir.const(0)])
        return None

    def pure(self, comp, e, what):
        """Refuse `e` (evaluated twice: counting, then filling) if it calls anything that is
        not a function of its arguments."""
        for node in ir.walk(e):
            if not isinstance(node, ast.Call):
                continue
            obj = self.src.resolve(node.func)
            entry = REGISTRY.get(obj)
            if obj in (range, enumerate, zip, len) or (
                    entry is not None and entry.effect is None and entry.draw is None and
                    entry.family not in ("unsupported",)):
                continue
            raise self.error(node, f"{what} of a list comprehension that calls "
                                   f"`{ast.unparse(node.func)}`",
                             "Write the loop out: adjit counts a filtered comprehension's "
                             "elements before it fills them, which would call it twice.")


_EVALUATED_ONCE = {ast.Assign: ("value",), ast.AugAssign: ("value",),
                   ast.AnnAssign: ("value",), ast.Return: ("value",), ast.Expr: ("value",),
                   ast.If: ("test",), ast.For: ("iter",), ast.Assert: ("test", "msg"),
                   ast.Raise: ("exc",)}


def _comprehensions(node):
    return any(isinstance(n, ast.ListComp) for n in ir.walk(node))


def _target_names(target, comp, d):
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple) and all(isinstance(t, ast.Name) for t in target.elts):
        return [t.id for t in target.elts]
    raise d.error(comp, f"the comprehension target `{ast.unparse(target)}`",
                  "Unpack into plain names: `for i, v in enumerate(a)`.")


def _renamed(e, names, store=False):
    return _Rename(names, store).visit(copy.deepcopy(e))


class _Rename(ast.NodeTransformer):
    """A copy of an expression with a comprehension's variables renamed (those an inner
    comprehension binds again keep their inner meaning)."""

    def __init__(self, names, store=False):
        self.names = names
        self.store = store

    def visit_Name(self, node):
        if node.id in self.names and (self.store or isinstance(node.ctx, ast.Load)):
            node.id = self.names[node.id]
        return node

    def visit_ListComp(self, node):
        inner = dict(self.names)
        node.generators[0].iter = self.visit(node.generators[0].iter)
        for g in node.generators:
            for n in ir.walk(g.target):
                if isinstance(n, ast.Name):
                    inner.pop(n.id, None)
        for k, g in enumerate(node.generators):
            if k:
                g.iter = _Rename(inner).visit(g.iter)
            g.ifs = [_Rename(inner).visit(c) for c in g.ifs]
        node.elt = _Rename(inner).visit(node.elt)
        return node


def _is_call_of(e, src, *objs):
    return isinstance(e, ast.Call) and src.resolve(e.func) in objs


def _is_range(e, src):
    return _is_call_of(e, src, range)


_INT_OPS = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)


def _element_kind(e, ints, bools=frozenset()):
    """"int" or "bool" where the element surely is one (a range's counter, an element of an
    integer array, and int constants under + - * // %, len(); comparisons, `not`, an element
    of a boolean array); else "float". A float taken for an int would truncate, so anything
    uncertain is a float."""
    if isinstance(e, ast.Compare) or (isinstance(e, ast.UnaryOp) and
                                      isinstance(e.op, ast.Not)) or \
            (isinstance(e, ast.Name) and e.id in bools):
        return "bool"
    return "int" if _surely_int(e, ints) else "float"


def _surely_int(e, ints):
    if isinstance(e, ast.Constant):
        return type(e.value) is int
    if isinstance(e, ast.Name):
        return e.id in ints
    if isinstance(e, ast.BinOp):
        return isinstance(e.op, _INT_OPS) and _surely_int(e.left, ints) and \
            _surely_int(e.right, ints)
    if isinstance(e, ast.UnaryOp):
        return isinstance(e.op, (ast.USub, ast.UAdd)) and _surely_int(e.operand, ints)
    return False


def _len(name):
    return _call("len", [ast.Name(id=name.id, ctx=ast.Load())])


def _call(fn, args):
    return ast.Call(func=ast.Name(id=fn, ctx=ast.Load()), args=args, keywords=[])


def _assign(name, value):
    return ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=value)


def _increment(name):
    return ast.AugAssign(target=ast.Name(id=name, ctx=ast.Store()), op=ast.Add(),
                         value=ir.const(1))


def _empty(n, kind):
    func = ast.Attribute(value=ast.Name(id=NUMPY, ctx=ast.Load()), attr="empty",
                         ctx=ast.Load())
    keywords = [] if kind == "float" else [ast.keyword(arg="dtype", value=ast.Attribute(
        value=ast.Name(id=NUMPY, ctx=ast.Load()), attr="int64" if kind == "int" else "bool_",
        ctx=ast.Load()))]
    return ast.Call(func=func, args=[ast.Name(id=n, ctx=ast.Load())], keywords=keywords)


def _nest(gens, inner):
    """The comprehension's loops (and its conditions) around `inner`."""
    body = inner
    for target, it, ifs in reversed(gens):
        for c in reversed(ifs):
            body = [ast.If(test=c, body=body, orelse=[])]
        body = [ast.For(target=copy.deepcopy(target), iter=copy.deepcopy(it), body=body,
                        orelse=[])]
    return body[0]


def _at(where, node):
    """`node` (and its parts) placed at `where`'s line, for error messages."""
    for n in ir.walk(node):
        if isinstance(n, (ast.stmt, ast.expr)) and getattr(n, "lineno", None) is None:
            ast.copy_location(n, where)
    return node


def tuples_as_appends(src, make_source):
    """`pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if c]`, a statement of
    the function's body binding a comprehension of tuples written out: the loops numba runs
    for it, appending to an empty list (`pairs = []`, then `pairs.append((i, j))` under the
    loops and conditions, their variables renamed so that none leaks into the function), a
    list of tuples normalize/appends.py builds. `src` itself when there is none."""
    if not any(_tuple_comprehension(s) for s in src.tree.body):
        return src
    tree = copy.deepcopy(src.tree)
    taken = {n.id for n in ir.walk(tree) if isinstance(n, ast.Name)} | set(src.params)
    body = []
    for s in tree.body:
        if not _tuple_comprehension(s):
            body.append(s)
            continue
        name, comp = s.targets[0].id, s.value
        rename = {}
        loops = []
        for g in comp.generators:
            it = _renamed(g.iter, rename)
            new = {n.id: unused_name(f"_{name}_{n.id}", taken) for n in ast.walk(g.target)
                   if isinstance(n, ast.Name)}
            rename = {**rename, **new}
            loops.append((_renamed(g.target, rename, store=True), it,
                          [_renamed(c, rename) for c in g.ifs]))
        append = ast.Expr(value=ast.Call(
            func=ast.Attribute(value=ast.Name(id=name, ctx=ast.Load()), attr="append",
                               ctx=ast.Load()),
            args=[_renamed(comp.elt, rename)], keywords=[]))
        inner = [append]
        for target, it, ifs in reversed(loops):
            for c in reversed(ifs):
                inner = [ast.If(test=c, body=inner, orelse=[])]
            inner = [ast.For(target=target, iter=it, body=inner, orelse=[])]
        made = ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())],
                          value=ast.List(elts=[], ctx=ast.Load()))
        setattr(made.value, OF_TUPLES, True)    # (for the message where it is not built)
        for x in (made, inner[0]):
            ast.fix_missing_locations(ast.copy_location(x, s))
        body += [made, inner[0]]
    tree.body = body
    return make_source(tree, {})


def _tuple_comprehension(s):
    return isinstance(s, ast.Assign) and len(s.targets) == 1 and \
        isinstance(s.targets[0], ast.Name) and isinstance(s.value, ast.ListComp) and \
        isinstance(s.value.elt, ast.Tuple) and \
        not any(isinstance(e, ast.Starred) for e in s.value.elt.elts) and \
        not any(g.is_async for g in s.value.generators)
