"""Branches on optional arguments, decided where a helper is inlined.

numba compiles `def f(x, w=None)` once for `w` left out (None) and once for `w` given, and
prunes the branch of `if w is None:` that cannot run, so the other branch may use `w` as an
array or reassign it (`if w is None: w = np.ones_like(x)`). The inliner knows the same: for
each parameter, whether it holds None. Here every `if p is None:` / `if p is not None:`
(and `not (...)` of one) and every conditional expression `a if p is None else b` on such a
parameter is replaced by the part that runs; statements after a return that is then at the
top of a block are dropped, as they cannot run either."""
import ast
import copy

from ..frontend.source import FunctionSource


def has_none_tests(tree):
    """Whether the function's body tests anything with `is` (nothing to prune otherwise)."""
    return any(isinstance(n, ast.Compare) and any(isinstance(op, (ast.Is, ast.IsNot))
                                                  for op in n.ops) for n in ast.walk(tree))


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
        for t in targets:
            if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(t)) and \
                    not inside:
                return False
    return True


def decided(test, none):
    """True or False when `test` is `p is None`, `p is not None` (either way round), or
    `not` of one, on a parameter p in `none` (p -> whether it holds None); else None."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = decided(test.operand, none)
        return None if inner is None else not inner
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and
            isinstance(test.ops[0], (ast.Is, ast.IsNot))):
        return None
    left, right = test.left, test.comparators[0]
    if isinstance(left, ast.Constant) and left.value is None:
        left, right = right, left
    if not (isinstance(right, ast.Constant) and right.value is None and
            isinstance(left, ast.Name) and left.id in none):
        return None
    return none[left.id] == isinstance(test.ops[0], ast.Is)


class _Expressions(ast.NodeTransformer):
    def __init__(self, none):
        self.none = none

    def visit_IfExp(self, node):
        taken = decided(node.test, self.none)
        if taken is None:
            return self.generic_visit(node)
        return self.visit(node.body if taken else node.orelse)


def prune(stmts, none):
    """`stmts` with the branches that cannot run removed (new nodes; `stmts` unchanged)."""
    out = []
    for s in stmts:
        if isinstance(s, ast.If):
            taken = decided(s.test, none)
            if taken is not None:
                out.extend(prune(s.body if taken else s.orelse, none))
                if out and isinstance(out[-1], ast.Return):
                    break
                continue
        s = copy.copy(s)
        for field in ("body", "orelse"):
            if isinstance(getattr(s, field, None), list):
                setattr(s, field, prune(getattr(s, field), none))
        for field, value in ast.iter_fields(s):
            if isinstance(value, ast.expr):
                setattr(s, field, _Expressions(none).visit(copy.deepcopy(value)))
        if isinstance(s, ast.If) and not s.body:
            s.body = [ast.Pass()]
        out.append(s)
        if isinstance(s, ast.Return):
            break
    return out


def pruned_source(src, none, refuse):
    """The FunctionSource `src` with the branches of its `is None` tests that cannot run
    removed, for `none` (parameter -> whether it holds None): where the function and where a
    helper is inlined. A parameter the body assigns outside `if p is None:` is left
    undecided where it holds a value; where it holds None the error `refuse(p)` is raised
    (whether it is None would then depend on the data, where numba keeps both branches)."""
    if not has_none_tests(src.tree):
        return src
    none = dict(none)
    for p in [p for p in none if not assigned_only_when_none(src.tree.body, p)]:
        if none[p]:
            raise refuse(p)
        del none[p]
    new = copy.copy(src.tree)
    new.body = prune(src.tree.body, none) or [ast.Pass()]
    return FunctionSource(src.fn, new, src.loc)


class _Settings(ast.NodeTransformer):
    def __init__(self, values):
        self.values = values

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id in self.values:
            return ast.copy_location(ast.Constant(value=self.values[node.id]), node)
        return node


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
    return FunctionSource(src.fn, new, src.loc)
