"""Forms numba compiles, written as statements the normalizer already lowers.

- `x in (0, 1, 2)` as the comparisons Python makes: `x == 0 or x == 1 or x == 2` (the `and`
  of `!=` for `not in`), against a tuple or list written out in the code (poliastro's
  `assert axis in (0, 1, 2)`). The tested value must be a name, a constant, or a subscript
  or attribute of names and constants: it is written once per element, where Python
  evaluates it once. Any other `in` is left for check.py to refuse by name.
- a loop's `else:` clause as an `if` after the loop on a flag its breaks set (loop_else).
- a conditional expression assigned to names as an `if` that assigns one arm or the
  other: `ll, t1 = (ll, t1) if prograde else (-ll, -t1)` (poliastro's izzo), `y = x if
  unit else x / s`, as Python evaluates it: the test, then the arm it picks (chosen_values;
  the `if` joins arrays and views as any other, normalize/joins.py).
- an exception's message bound to a name first, `msg = "Failed to converge"` then `raise
  RuntimeError(msg)` (quantecon's root finders), as the message written in the raise
  (raised_messages).
- a range held in a name and looped over (stumpy's `iter_range = range(...)` chosen in a
  branch, then `for i in iter_range:`) as the range's bounds held in names, the loop over
  `range(start, stop, step)` of them (held_ranges).
- a list repeated, `[v] * n` or `n * [v]` (numba's list of n copies of v: a buffer `a = [0.0]
  * 4`), as the array np.full(max(n, 0), v) (list_operations), which adjit reads a list as;
  every other `+` or `*` of a list (a list written out, a comprehension, or a name bound to
  one: numba concatenates or repeats lists, where arrays add and multiply elements) is
  refused.
- a name assigned to itself, `y = y` (a statement Python runs as nothing), left out
  (self_assignments): as a rebinding it made an array name look bound twice.
- the bitwise operators `&`, `|`, `^`, `<<`, `>>`, `~` as the operator module's functions of
  them, which numba compiles as the operators: `(E <= 20) & (E >= -20)` (pvlib's spa) is
  operator.and_ of two booleans, a boolean (bitwise_operators; integer or boolean results,
  no derivative).
- a `nonlocal` or `global` statement whose names the function never assigns (FinancePy's
  `nonlocal r, q` in a closure that reads them), left out: Python runs it as nothing more
  than the read it already makes (read_only_declarations). One whose name is assigned is
  refused by check.py.
"""
import ast
import copy

import operator

import numpy


def membership(src, make_source):
    """`src` with each `v in (a, b, ...)` and `v not in (a, b, ...)` written as comparisons;
    `src` itself when there is none. `make_source(tree, extra)` builds the FunctionSource of
    the new tree."""
    return _rewritten(src, make_source, _literal_membership, _Membership())


def read_only_declarations(src, make_source):
    """`src` without the `nonlocal` and `global` statements whose names nothing in it
    assigns; `src` itself when there is none."""
    stored = {n.id for n in ast.walk(src.tree) if isinstance(n, ast.Name) and
              not isinstance(n.ctx, ast.Load)}

    def wanted(node):
        return isinstance(node, (ast.Nonlocal, ast.Global)) and not stored & set(node.names)
    return _rewritten(src, make_source, wanted, _Dropped(wanted))


class _Dropped(ast.NodeTransformer):
    """Statements that `wanted` picks replaced by `pass`."""

    def __init__(self, wanted):
        self.wanted = wanted

    def visit_Nonlocal(self, node):
        return ast.copy_location(ast.Pass(), node) if self.wanted(node) else node

    visit_Global = visit_Nonlocal


def _rewritten(src, make_source, wanted, transformer):
    """`src` rewritten by `transformer` (an ast.NodeTransformer) where a node is `wanted`;
    `src` itself where none is."""
    if not any(wanted(n) for n in ast.walk(src.tree)):
        return src
    tree = transformer.visit(copy.deepcopy(src.tree))
    ast.fix_missing_locations(tree)
    return make_source(tree, {})


def _simple(node):
    """A value that evaluating twice cannot change: a name, a constant, or subscripts and
    attributes of them."""
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, ast.Attribute):
        return _simple(node.value)
    if isinstance(node, ast.Subscript):
        return _simple(node.value) and _simple(node.slice)
    if isinstance(node, ast.Tuple):
        return all(_simple(e) for e in node.elts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return _simple(node.operand)
    return False


def _literal_membership(node):
    return isinstance(node, ast.Compare) and len(node.ops) == 1 and \
        isinstance(node.ops[0], (ast.In, ast.NotIn)) and \
        isinstance(node.comparators[0], (ast.Tuple, ast.List)) and \
        node.comparators[0].elts and _simple(node.left) and \
        not any(isinstance(e, ast.Starred) for e in node.comparators[0].elts)


class _Membership(ast.NodeTransformer):
    def visit_Compare(self, node):
        self.generic_visit(node)
        if not _literal_membership(node):
            return node
        negated = isinstance(node.ops[0], ast.NotIn)
        op = ast.NotEq() if negated else ast.Eq()
        tests = [ast.copy_location(ast.Compare(left=copy.deepcopy(node.left), ops=[op],
                                               comparators=[e]), node)
                 for e in node.comparators[0].elts]
        if len(tests) == 1:
            return tests[0]
        return ast.copy_location(ast.BoolOp(op=ast.And() if negated else ast.Or(),
                                            values=tests), node)


_NUMPY = "_adjit_np"
_MAX = "_adjit_max"
_LISTS = (ast.List, ast.ListComp)


def _repeated(node):
    """(element, count) of `[v] * n` or `n * [v]` (one element, not itself a sequence)."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)):
        return None
    for seq, count in ((node.left, node.right), (node.right, node.left)):
        if isinstance(seq, ast.List) and len(seq.elts) == 1 and \
                not isinstance(seq.elts[0], (ast.List, ast.Tuple, ast.Starred, ast.ListComp)) \
                and not isinstance(count, _LISTS):
            return seq.elts[0], count
    return None


def list_operations(src, make_source):
    """`src` with each list repetition `[v] * n` (or `n * [v]`) as np.full(max(n, 0), v);
    `src` itself when it has none. Refuses any other `+` or `*` (or `+=`, `*=`) of a list:
    numba concatenates and repeats lists, while adjit reads a list as the array of its
    numbers, whose `+` and `*` act on each element: `[x] * 3` was the array [3 x]."""
    tree = src.tree
    found = []

    def refuse(node, what):
        raise src.loc.error(node, f"{what} of a list (numba's `+` joins lists and `*` repeats "
                            "them; adjit reads a list as the array of its numbers, whose `+` "
                            "and `*` act on each element)",
                            "Build the array with np.full(n, v), np.zeros(n), np.array([...]) "
                            "or np.concatenate((a, b)); a list repeated once, [v] * n, is "
                            "np.full(n, v).")

    def check(node, lists):
        """The `+` and `*` in an expression, `lists` the names that hold a list there."""
        def is_list(n):
            return isinstance(n, _LISTS) or isinstance(n, ast.Name) and n.id in lists
        for n in ast.walk(node):
            if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Add, ast.Mult)) and \
                    (is_list(n.left) or is_list(n.right)):
                if _repeated(n) is None:
                    refuse(n, "`+` (joining)" if isinstance(n.op, ast.Add) else
                           "`*` (repeating)")
                found.append(n)

    def block(stmts, lists):
        """The names holding a list after `stmts`, in the order they are written (a name
        rebound to an array, `w = np.array(w)`, no longer is one; after an `if`, one that
        either path leaves a list is)."""
        for x in stmts:
            if isinstance(x, ast.AugAssign) and isinstance(x.op, (ast.Add, ast.Mult)) and (
                    isinstance(x.value, _LISTS) or isinstance(x.target, ast.Name) and
                    x.target.id in lists):
                refuse(x, "`+=` (extending)" if isinstance(x.op, ast.Add) else
                       "`*=` (repeating)")
            if isinstance(x, (ast.If, ast.For, ast.While)):
                check(x.test if not isinstance(x, ast.For) else x.iter, lists)
                body = block(x.body, set(lists))
                orelse = block(x.orelse, set(lists))
                lists = body | orelse
                if not isinstance(x, ast.If):   # (a loop's body again, on what it left)
                    lists = block(x.body, lists) | orelse
                continue
            for field in ("body", "orelse", "finalbody"):
                if isinstance(getattr(x, field, None), list):
                    lists = block(getattr(x, field), lists)
            for part in ast.iter_child_nodes(x):
                if isinstance(part, ast.expr):
                    check(part, lists)
            if isinstance(x, ast.Assign):
                made = isinstance(x.value, _LISTS) or _repeated(x.value) is not None
                for t in x.targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                            lists = lists | {n.id} if made and t is n else lists - {n.id}
        return lists

    block(tree.body, set())
    if not found:
        return src

    class _Full(ast.NodeTransformer):
        def visit_BinOp(self, node):
            self.generic_visit(node)
            rep = _repeated(node)
            if rep is None:
                return node
            value, count = rep
            full = ast.Attribute(value=ast.Name(id=_NUMPY, ctx=ast.Load()), attr="full",
                                 ctx=ast.Load())
            size = ast.Call(func=ast.Name(id=_MAX, ctx=ast.Load()),
                            args=[count, ast.Constant(value=0)], keywords=[])
            return ast.copy_location(ast.Call(func=full, args=[size, value], keywords=[]),
                                     node)
    out = _Full().visit(copy.deepcopy(tree))
    ast.fix_missing_locations(out)
    return make_source(out, {_NUMPY: numpy, _MAX: max})


def self_assignments(src, make_source):
    """`src` without its statements `y = y` (one name on both sides), which bind a name to
    what it holds already; a block left empty gets a `pass`. `src` itself when it has
    none. (A `y` read there before anything binds it is refused before this:
    check.check_bound_before_read.)"""
    def same(s):
        return isinstance(s, ast.Assign) and len(s.targets) == 1 and \
            isinstance(s.targets[0], ast.Name) and isinstance(s.value, ast.Name) and \
            s.targets[0].id == s.value.id
    if not any(same(n) for n in ast.walk(src.tree)):
        return src
    tree = copy.deepcopy(src.tree)

    def block(stmts, keep_empty=False):
        out = []
        for s in stmts:
            for field in ("body", "orelse", "finalbody"):
                if isinstance(getattr(s, field, None), list) and getattr(s, field):
                    setattr(s, field, block(getattr(s, field)))
            if not same(s):
                out.append(s)
        if not out and stmts and not keep_empty:
            out.append(ast.copy_location(ast.Pass(), stmts[0]))
        return out
    tree.body = block(tree.body)
    return make_source(tree, {})


def loop_else(src, make_source):
    """`src` with each loop's `else:` clause as Python runs it: after the loop, unless a
    `break` of that loop ended it (a flag set before each such break):

        for k in range(n):              _broke1 = False
            if done(k):                 for k in range(n):
                break          ->           if done(k):
        else:                                   _broke1 = True
            raise Error()                       break
                                        if not _broke1:
                                            raise Error()

    (vallado's and danby's propagators end their iterations so); `src` itself when no loop
    has one."""
    if not any(isinstance(n, (ast.For, ast.While)) and n.orelse for n in ast.walk(src.tree)):
        return src
    tree = copy.deepcopy(src.tree)
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    counter = [0]

    def fresh():
        while True:
            counter[0] += 1
            name = f"_broke{counter[0]}"
            if name not in used:
                used.add(name)
                return name

    def block(stmts):
        out = []
        for s in stmts:
            for field in ("body", "orelse"):
                if isinstance(getattr(s, field, None), list):
                    setattr(s, field, block(getattr(s, field)))
            if isinstance(s, (ast.For, ast.While)) and s.orelse:
                flag = fresh()
                out.append(ast.copy_location(ast.Assign(
                    targets=[ast.Name(id=flag, ctx=ast.Store())],
                    value=ast.Constant(value=False)), s))
                s.body = _flag_breaks(s.body, flag)
                orelse, s.orelse = s.orelse, []
                out.append(s)
                out.append(ast.copy_location(ast.If(
                    test=ast.UnaryOp(op=ast.Not(), operand=ast.Name(id=flag, ctx=ast.Load())),
                    body=orelse, orelse=[]), orelse[0]))
            else:
                out.append(s)
        return out

    tree.body = block(tree.body)
    ast.fix_missing_locations(tree)
    return make_source(tree, {})


def _flag_breaks(stmts, flag):
    """`stmts` with `flag = True` before each `break` of their loop (not of loops inside)."""
    out = []
    for s in stmts:
        if isinstance(s, ast.Break):
            out.append(ast.copy_location(ast.Assign(
                targets=[ast.Name(id=flag, ctx=ast.Store())], value=ast.Constant(value=True)),
                s))
        elif isinstance(s, ast.If):
            s.body = _flag_breaks(s.body, flag)
            s.orelse = _flag_breaks(s.orelse, flag)
        out.append(s)
    return out


def chosen_values(src, make_source):
    """`src` with each `a, b = X if c else Y` (and `y = X if c else Y`) written as `if c:
    a, b = X` / `else: a, b = Y` (names, or tuples of names, as the targets); `src` itself
    when there is none."""
    return _rewritten(src, make_source, _chosen_value, _ChosenValues())


def _names_only(target):
    if isinstance(target, ast.Name):
        return True
    return isinstance(target, (ast.Tuple, ast.List)) and target.elts and \
        all(_names_only(e) for e in target.elts)


def _chosen_value(node):
    return isinstance(node, ast.Assign) and len(node.targets) == 1 and \
        _names_only(node.targets[0]) and isinstance(node.value, ast.IfExp)


class _ChosenValues(ast.NodeTransformer):
    def visit_Assign(self, node):
        if not _chosen_value(node):
            return node
        arms = []
        for value in (node.value.body, node.value.orelse):
            arm = ast.copy_location(ast.Assign(targets=[copy.deepcopy(node.targets[0])],
                                               value=value), node)
            arms.append([self.visit_Assign(arm)])
        return ast.copy_location(ast.If(test=node.value.test, body=arms[0], orelse=arms[1]),
                                 node)


_BITWISE = {ast.BitAnd: "and_", ast.BitOr: "or_", ast.BitXor: "xor", ast.LShift: "lshift",
            ast.RShift: "rshift"}
_OPERATOR = "_adjit_operator"       # the name the new code calls the operator module by
OPERATOR_SYMBOLS = {getattr(operator, name): symbol for name, symbol in (
    ("and_", "&"), ("or_", "|"), ("xor", "^"), ("lshift", "<<"), ("rshift", ">>"),
    ("invert", "~"))}
"""The operator each function written here stands for (for error messages)."""


def bitwise_operators(src, make_source):
    """`src` with each `a & b`, `a | b`, `a ^ b`, `a << b`, `a >> b` (and their augmented
    assignments) and `~a` written as the operator module's function (`operator.and_(a, b)`,
    `operator.invert(a)`, ...);
    `src` itself when there is none."""
    if not any(isinstance(n, (ast.BinOp, ast.AugAssign)) and type(n.op) in _BITWISE or
               isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Invert)
               for n in ast.walk(src.tree)):
        return src
    tree = _Bitwise().visit(copy.deepcopy(src.tree))
    ast.fix_missing_locations(tree)
    return make_source(tree, {_OPERATOR: operator})


def _bitwise_call(op, left, right, at):
    func = ast.Attribute(value=ast.Name(id=_OPERATOR, ctx=ast.Load()), attr=_BITWISE[type(op)],
                         ctx=ast.Load())
    return ast.copy_location(ast.Call(func=func, args=[left, right], keywords=[]), at)


class _Bitwise(ast.NodeTransformer):
    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if not isinstance(node.op, ast.Invert):
            return node
        func = ast.Attribute(value=ast.Name(id=_OPERATOR, ctx=ast.Load()), attr="invert",
                             ctx=ast.Load())
        return ast.copy_location(ast.Call(func=func, args=[node.operand], keywords=[]), node)

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if type(node.op) not in _BITWISE:
            return node
        return _bitwise_call(node.op, node.left, node.right, node)

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        if type(node.op) not in _BITWISE:
            return node
        load = copy.deepcopy(node.target)
        for n in ast.walk(load):
            if hasattr(n, "ctx"):
                n.ctx = ast.Load()
        load.ctx = ast.Load()
        return ast.copy_location(ast.Assign(targets=[node.target], value=_bitwise_call(
            node.op, load, node.value, node)), node)


def raised_messages(src, make_source):
    """`src` with each name assigned one string constant once and read only as the message
    of `raise E(name)` replaced there by the string, its assignment dropped; `src` itself
    when there is none."""
    assigns, loads, raised = {}, {}, {}
    for node in ast.walk(src.tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            assigns.setdefault(name, []).append(node)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            loads[node.id] = loads.get(node.id, 0) + 1
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args \
                and isinstance(node.exc.args[0], ast.Name):
            raised[node.exc.args[0].id] = raised.get(node.exc.args[0].id, 0) + 1
    texts = {name: nodes[0].value.value for name, nodes in assigns.items()
             if len(nodes) == 1 and isinstance(nodes[0].value, ast.Constant) and
             isinstance(nodes[0].value.value, str) and raised.get(name) and
             raised[name] == loads.get(name)}
    if not texts:
        return src
    tree = _Messages(texts).visit(copy.deepcopy(src.tree))
    ast.fix_missing_locations(tree)
    return make_source(tree, {})


class _Messages(ast.NodeTransformer):
    def __init__(self, texts):
        self.texts = texts

    def visit_Assign(self, node):
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and \
                node.targets[0].id in self.texts:
            return ast.copy_location(ast.Pass(), node)
        return node

    def visit_Raise(self, node):
        first = node.exc.args[0] if isinstance(node.exc, ast.Call) and node.exc.args else None
        if isinstance(first, ast.Name) and first.id in self.texts:
            node.exc.args[0] = ast.copy_location(ast.Constant(value=self.texts[first.id]),
                                                 first)
        return node


def held_ranges(src, make_source):
    """`src` with each name bound only to `range(...)` calls and read only as a for loop's
    iterable held as the range's bounds instead (`r = range(a, b)` is `r_start, r_stop = a,
    b`, the loop `for i in range(r_start, r_stop)`); `src` itself when there is none."""
    if src.resolve_name("range") is not range:
        return src
    stores, ranged, reads, looped, used = {}, {}, {}, {}, set()
    for node in ast.walk(src.tree):
        if isinstance(node, ast.Name):
            used.add(node.id)
            counts = reads if isinstance(node.ctx, ast.Load) else stores
            counts[node.id] = counts.get(node.id, 0) + 1
        elif isinstance(node, ast.arg):
            stores[node.arg] = stores.get(node.arg, 0) + 1
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name) and _range_call(node.value):
            ranged.setdefault(node.targets[0].id, []).append(len(node.value.args))
        if isinstance(node, ast.For) and isinstance(node.iter, ast.Name):
            looped[node.iter.id] = looped.get(node.iter.id, 0) + 1
    held = {name: max(counts) for name, counts in ranged.items()
            if stores.get(name) == len(counts) and looped.get(name) == reads.get(name)}
    if not held:
        return src
    names = {}
    for name, count in held.items():
        fresh = []
        for part in ("start", "stop", "step")[:max(count, 2)]:
            new, k = f"{name}_{part}", 1
            while new in used:
                k += 1
                new = f"{name}_{part}{k}"
            used.add(new)
            fresh.append(new)
        names[name] = fresh
    tree = _HeldRanges(names).visit(copy.deepcopy(src.tree))
    ast.fix_missing_locations(tree)
    return make_source(tree, {})


def _range_call(value):
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and \
        value.func.id == "range" and 1 <= len(value.args) <= 3 and not value.keywords and \
        not any(isinstance(a, ast.Starred) for a in value.args)


class _HeldRanges(ast.NodeTransformer):
    def __init__(self, names):
        self.names = names

    def visit_Assign(self, node):
        name = node.targets[0].id if isinstance(node.targets[0], ast.Name) else None
        if name not in self.names:
            return self.generic_visit(node)
        held = self.names[name]
        args = list(node.value.args)
        if len(args) == 1:
            args = [ast.Constant(value=0)] + args
        if len(args) < len(held):
            args.append(ast.Constant(value=1))
        target = ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Store()) for n in held],
                           ctx=ast.Store())
        return ast.copy_location(ast.Assign(targets=[target], value=ast.Tuple(
            elts=args, ctx=ast.Load())), node)

    def visit_For(self, node):
        self.generic_visit(node)
        if isinstance(node.iter, ast.Name) and node.iter.id in self.names:
            node.iter = ast.copy_location(ast.Call(
                func=ast.Name(id="range", ctx=ast.Load()),
                args=[ast.Name(id=n, ctx=ast.Load()) for n in self.names[node.iter.id]],
                keywords=[]), node.iter)
        return node
