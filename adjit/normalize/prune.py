"""Branches on optional arguments, decided where a helper is inlined.

numba compiles `def f(x, w=None)` once for `w` left out (None) and once for `w` given, and
prunes the branch of `if w is None:` that cannot run, so the other branch may use `w` as an
array or reassign it (`if w is None: w = np.ones_like(x)`). The inliner knows the same: for
each parameter, whether it holds None. Here every `if p is None:` / `if p is not None:`
(and `not (...)` of one) and every conditional expression `a if p is None else b` on such a
parameter is replaced by the part that runs, and every other test of one (`if g == 0 and p
is not None:`) by its constant, in order: after `if p is None: p = 1` p holds a value.
Statements after a return that is then at the top of a block are dropped, as they cannot
run either. (Before the tests inside longer ones were decided, `g == 0 and p is not None`
read a p defaulted later as a value, and took the branch numba does not.)"""
import ast
import copy
import operator

from ..frontend.source import FunctionSource


def has_none_tests(tree):
    """Whether the function's body compares anything with None (nothing to prune
    otherwise)."""
    return any(isinstance(n, ast.Compare) and any(isinstance(op, _NONE_TESTS)
                                                  for op in n.ops) and
               any(isinstance(e, ast.Constant) and e.value is None
                   for e in [n.left] + n.comparators) for n in ast.walk(tree))


_NONE_TESTS = (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)
"""The comparisons with None that numba decides from a parameter's type (`w == None` too)."""


def assigned_only_when_none(stmts, name, inside=False):
    """Whether every assignment of `name` in `stmts` sits in a branch that runs only while
    it is None (`if name is None: name = ...`, the else of `is not None`): the one way a
    body may give a left-out optional argument a value, for the tests of it to be decided
    where the helper is inlined."""
    for s in stmts:
        if isinstance(s, ast.If):
            when = decided(s.test, {name: True})
            for branch, runs in ((s.body, when is True), (s.orelse, when is False)):
                if not assigned_only_when_none(branch, name, inside or runs):
                    return False
            continue
        for field in ("body", "orelse"):
            if isinstance(getattr(s, field, None), list) and \
                    not assigned_only_when_none(getattr(s, field), name, inside):
                return False
        targets = s.targets if isinstance(s, ast.Assign) else \
            [s.target] if isinstance(s, (ast.AugAssign, ast.AnnAssign, ast.For)) else []
        if not inside and any(_assigns(t, name) for t in targets):  # (not `out[...] = ...`)
            return False
    return True


def decided(test, none):
    """True or False when `test` is `p is None`, `p is not None` (either way round, or
    written with == and !=), or `not` of one, on a parameter p in `none` (p -> whether it
    holds None); else None."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = decided(test.operand, none)
        return None if inner is None else not inner
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and
            isinstance(test.ops[0], _NONE_TESTS)):
        return None
    left, right = test.left, test.comparators[0]
    if isinstance(left, ast.Constant) and left.value is None:
        left, right = right, left
    if not (isinstance(right, ast.Constant) and right.value is None and
            isinstance(left, ast.Name) and left.id in none):
        return None
    return none[left.id] == isinstance(test.ops[0], (ast.Is, ast.Eq))


class _Expressions(ast.NodeTransformer):
    """An expression with each decided test of a parameter (`p is not None`, also inside
    `a and p is not None`) written as its constant, and the `and` / `or` it ends or
    leaves alone simplified as Python evaluates them (`False and b` never reads b)."""

    def __init__(self, none):
        self.none = none

    def visit_IfExp(self, node):
        taken = decided(node.test, self.none)
        if taken is None:
            return self.generic_visit(node)
        return self.visit(node.body if taken else node.orelse)

    def visit_Compare(self, node):
        taken = decided(node, self.none)
        if taken is None:
            return self.generic_visit(node)
        return ast.copy_location(ast.Constant(value=taken), node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not) and isinstance(node.operand, ast.Constant) and \
                isinstance(node.operand.value, bool):
            return ast.copy_location(ast.Constant(value=not node.operand.value), node)
        return node

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        ends = isinstance(node.op, ast.Or)      # the constant that decides: True for `or`
        values = []
        for v in node.values:
            if isinstance(v, ast.Constant) and isinstance(v.value, bool):
                if v.value == ends:             # decides: what follows is never read
                    values.append(v)
                    break
                continue                        # (True and b) is b, (False or b) is b
            values.append(v)
        if not values:
            return ast.copy_location(ast.Constant(value=not ends), node)
        if len(values) == 1:
            return values[0]
        node.values = values
        return node


class _Undecided(Exception):
    """A parameter left out (None), assigned on some paths only (in a loop, or a branch on
    data), then read: whether it is still None there is decided at run time."""


_UNKNOWN = "unknown"
"""The state of a parameter None on some paths and assigned on others (see _prune)."""


def prune(stmts, none, followed=frozenset()):
    """`stmts` with the branches that cannot run removed (new nodes; `stmts` unchanged).
    `none` (parameter -> whether it holds None) follows the statements: a parameter
    assigned in a branch that ran holds a value after it (`if w is None: w = 1.0`).
    `followed`: parameters left out that the body assigns outside such branches too, whose
    assignments give them a value only where it cannot be None (_assigned_none)."""
    return _prune(stmts, dict(none), frozenset(followed))


def _not_none(value):
    """Whether an expression's value cannot be None: a constant other than None,
    arithmetic, a comparison, a literal tuple or list, a call of a builtin or of numpy's or
    math's functions (`max(minp, 1)`, `np.ones_like(x)`)."""
    if isinstance(value, ast.Constant):
        return value.value is not None
    if isinstance(value, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.Tuple, ast.List)):
        return True
    if isinstance(value, ast.Call):
        f = value.func
        return (isinstance(f, ast.Name) and f.id in _BUILTINS) or (
            isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and
            f.value.id in ("np", "numpy", "math"))
    return False


_BUILTINS = {"max", "min", "int", "float", "abs", "len", "round", "sum", "bool"}


def _assigned_none(s, p, strict):
    """Whether parameter p holds None after `s` assigns it: True, False or _UNKNOWN. For a
    parameter assigned only in branches that run while it is None (`strict` false), any
    value is taken for one but the parameter itself or None again (`c = c`, `c = v if t
    else None`, `c = ident(c)`); otherwise only what _not_none knows."""
    if not isinstance(s, ast.Assign):
        return False            # (p += 1, p: float = 1.0)
    if not (len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)):
        return _UNKNOWN if strict else False     # (unpacked)
    value = s.value
    if isinstance(value, ast.Constant) and value.value is None:
        return True
    if _not_none(value):
        return False
    if strict or _may_hold_none(value, p):
        return _UNKNOWN
    return False


def _may_hold_none(value, p):
    """Whether an expression may give back None held in parameter p, or None itself: p,
    None, a conditional expression either of whose values may, a call given p."""
    if isinstance(value, ast.Name):
        return value.id == p
    if isinstance(value, ast.Constant):
        return value.value is None
    if isinstance(value, ast.IfExp):
        return _may_hold_none(value.body, p) or _may_hold_none(value.orelse, p)
    if isinstance(value, ast.Call):
        return any(_may_hold_none(a, p) for a in value.args) or \
            any(_may_hold_none(k.value, p) for k in value.keywords)
    return False


def _prune(stmts, none, followed=frozenset()):
    """prune, updating `none` in place; a parameter assigned on some paths only is
    _UNKNOWN after them, and _Undecided is raised where it is read again."""
    out = []
    for s in stmts:
        unknown = [p for p, v in none.items() if v == _UNKNOWN]
        read = next((n.id for n in ast.walk(s) if isinstance(n, ast.Name) and
                     n.id in unknown and isinstance(n.ctx, ast.Load)), None)
        if read is not None:
            raise _Undecided(read)
        if isinstance(s, ast.If):
            taken = decided(s.test, none)
            if taken is not None:
                # (the branch that runs while the tested parameter is None gives it its
                # default: any value there is one, as in `if p is None: p = window`)
                tested = {p for p in followed if decided(s.test, {p: True}) is not None and
                          none.get(p) is True}
                out.extend(_prune(s.body if taken else s.orelse, none, followed - tested))
                if out and isinstance(out[-1], ast.Return):
                    break
                continue
        s = copy.copy(s)
        for field, value in ast.iter_fields(s):
            if isinstance(value, ast.expr):
                setattr(s, field, _Expressions(none).visit(copy.deepcopy(value)))
        paths = []
        for field in ("body", "orelse"):
            if isinstance(getattr(s, field, None), list):
                state = dict(none)
                if isinstance(s, (ast.For, ast.While)) and field == "body":
                    # a default given in the loop holds from the next iteration on: the
                    # tests of it there are decided at run time (numba: 3 * x[0] of
                    # `if p is None: p = x[k]` then `s += p`), refused where read
                    for p in [p for p, v in state.items() if v is True and _assigns(s, p)]:
                        state[p] = _UNKNOWN
                setattr(s, field, _prune(getattr(s, field), state, followed))
                paths.append(state)
        if isinstance(s, (ast.For, ast.While)) or (isinstance(s, ast.If) and not s.orelse):
            paths.append(dict(none))        # (no iteration, or the branch not taken)
        for p in none:
            states = {state[p] for state in paths}
            if isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and _assigns(s, p):
                none[p] = _assigned_none(s, p, p in followed)
            elif states:
                none[p] = states.pop() if len(states) == 1 else _UNKNOWN
        if isinstance(s, ast.If) and not s.body:
            s.body = [ast.Pass()]
        out.append(s)
        if isinstance(s, ast.Return):
            break
    return out


def _assigns(s, name):
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
               for n in ast.walk(s))


def pruned_source(src, none, refuse):
    """The FunctionSource `src` with the branches of its `is None` tests that cannot run
    removed, for `none` (parameter -> whether it holds None): where the function and where a
    helper is inlined. A parameter the body assigns outside `if p is None:` is left
    undecided where it holds a value; where it holds None it is followed through the body,
    and where whether it is None would depend on the data (numba keeps both branches) the
    error `refuse(p)` is raised."""
    if not has_none_tests(src.tree):
        return src
    none = dict(none)
    followed = set()
    for p in [p for p in none if not assigned_only_when_none(src.tree.body, p)]:
        if not none[p]:
            del none[p]
        else:
            followed.add(p)
        # (a left-out one assigned elsewhere too, `if minp is None: minp = window` then
        # `minp = max(minp, 1)`, is followed statement by statement: refused where whether
        # it is None is decided at run time)
    new = copy.copy(src.tree)
    try:
        new.body = prune(src.tree.body, none, followed) or [ast.Pass()]
    except _Undecided as exc:
        raise refuse(exc.args[0]) from None
    return FunctionSource(src.fn, new, src.loc)


class _Settings(ast.NodeTransformer):
    def __init__(self, values):
        self.values = values

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id in self.values:
            return ast.copy_location(ast.Constant(value=self.values[node.id]), node)
        return node


_FOLD_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
             ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
             ast.Pow: operator.pow, ast.USub: operator.neg, ast.UAdd: operator.pos,
             ast.Not: operator.not_, ast.Eq: operator.eq, ast.NotEq: operator.ne,
             ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
             ast.GtE: operator.ge}


def fold(node, leaves):
    """The value of a test of numbers, strings and operators, `leaves` the values of its
    names (AnfNormalizer.constant_test, _Decided); a KeyError for a name or an operator it
    does not fold."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return leaves[node.id]
    if isinstance(node, ast.BinOp):
        return _FOLD_OPS[type(node.op)](fold(node.left, leaves), fold(node.right, leaves))
    if isinstance(node, ast.UnaryOp):
        return _FOLD_OPS[type(node.op)](fold(node.operand, leaves))
    if isinstance(node, ast.BoolOp):
        values = [fold(v, leaves) for v in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.IfExp):
        return fold(node.body if fold(node.test, leaves) else node.orelse, leaves)
    if isinstance(node, ast.Compare):
        left = fold(node.left, leaves)
        for op, right_node in zip(node.ops, node.comparators):
            right = fold(right_node, leaves)
            if not _FOLD_OPS[type(op)](left, right):
                return False
            left = right
        return True
    raise KeyError(type(node).__name__)


class _Decided(ast.NodeTransformer):
    """An `if` on settings read as constants (`if "real" == "complex":`) replaced by the
    branch that runs, before anything reads the other: numba does not compile a branch it
    prunes for a constant, so what adjit cannot read may stand there (a helper's complex
    arithmetic for another mode)."""

    def visit_If(self, node):
        self.generic_visit(node)
        if not any(isinstance(n, ast.Constant) and isinstance(n.value, str)
                   for n in ast.walk(node.test)):
            return node
        try:
            taken = bool(fold(node.test, {}))
        except (ArithmeticError, ValueError, TypeError, KeyError):
            return node     # (a name, a call: left to the normalizer)
        branch = node.body if taken else node.orelse
        return branch or ast.copy_location(ast.Pass(), node)


def with_settings(src, values):
    """The FunctionSource `src` with each parameter in `values` (name -> a string it was
    called with, a setting such as `mode`) read as that constant, where the body does not
    assign it: `if mode == "sum":` is then decided (AnfNormalizer.constant_test) and only
    the branch that runs is code, where numba compiles both. `src` itself for no values."""
    if not values:
        return src
    from .values import assigned_user_names
    kept = {p: v for p, v in values.items() if p not in assigned_user_names(src.tree.body)}
    new = copy.copy(src.tree)
    new.body = [_Settings(kept).visit(copy.deepcopy(s)) for s in src.tree.body]
    new = _Decided().visit(new)
    ast.fix_missing_locations(new)
    return FunctionSource(src.fn, new, src.loc)
