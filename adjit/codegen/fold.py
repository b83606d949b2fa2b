"""Fold single-use temporaries back into the expression that uses them.

The passes work on A-normal form: one operation per statement, each result a temporary
(`_t3`, `_t3_bar`). Generated source a person reads should say `x_bar[i] += s_bar * w *
math.cos(x[i])`, not four statements. A temporary folds into its use when

- adjit made it (a name `_<letter><digits>`, optionally `_bar` or `_dot`), and every read of
  it, anywhere in the function, is the one read of the statement right after an assignment
  to it (so each assignment's value is read exactly there: copies of a loop body that the
  backward sweep runs again fold each on its own);
- the read is in the statement right after the assignment, in the same block, and that
  statement evaluates it once: a simple statement, the test of an `if`, or the range of a
  `for` (never a `while` test, never inside a nested body);
- nothing in that statement that runs before the read can change what the expression reads
  (a call other than a pure math one, when the expression reads memory);
- the folded line stays short.

Then the value is computed by the same operations on the same operands at the same point of
the program: only the spelling changes.
"""
import ast
import copy
import re

from .. import ir

_TEMP = re.compile(r"^_[a-z]+\d+(_bar|_dot)?$")
_PURE_MODULES = {"math", "np", "vec"}
_PURE_BUILTINS = {"float", "int", "abs", "min", "max", "bool", "range", "len"}
WIDTH = 100
"""The longest statement (indentation included) a fold may make."""


def fold_temporaries(fn):
    """Fold the single-use temporaries of a FunctionDef in place."""
    while True:
        loads = _counts(fn, ast.Load)
        pairs = {}
        for block, depth in ir.blocks(fn.body, 1):
            for s, nxt in zip(block, block[1:]):
                t = _temporary(s)
                if t is not None and _foldable(nxt, t, s.value):
                    pairs[t] = pairs.get(t, 0) + 1
        ready = {t for t, n in pairs.items() if n == loads.get(t)}
        folded = False
        for block, depth in ir.blocks(fn.body, 1):
            k = 0
            while k < len(block) - 1:
                t = _temporary(block[k])
                if t in ready and _fold_into(block[k + 1], t, block[k].value, depth):
                    del block[k]
                    folded = True
                    continue
                k += 1
        if not folded:
            break
    _drop_dead_definitions(fn)


def _counts(fn, ctx):
    out = {}
    for node in ir.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ctx):
            out[node.id] = out.get(node.id, 0) + 1
    return out


def _drop_dead_definitions(fn):
    """Temporaries no longer read leave the `a = b = 0.0` statements that define them up
    front (numba needs a variable defined on every path only where it is read), and a
    temporary nothing reads is not computed (no call: a call may be there for its
    effect)."""
    while True:
        loads = _counts(fn, ast.Load)
        dropped = False
        for block in ir.blocks(fn.body):
            for s in list(block):
                if isinstance(s, ast.Assign) and len(s.targets) > 1 and \
                        isinstance(s.value, ast.Constant):
                    s.targets = [n for n in s.targets if not (_TEMP.match(n.id) and
                                                              not loads.get(n.id))]
                    if not s.targets:
                        block.remove(s)
                elif _temporary(s) and not loads.get(s.targets[0].id) and \
                        sum(not isinstance(x, ast.Expr) for x in block) > 1 and \
                        not any(isinstance(n, ast.Call) for n in ir.walk(s.value)):
                    # (a block keeps a statement: its comments alone would leave it empty)
                    block.remove(s)         # (a split loop's index no term reads now)
                    dropped = True
        if not dropped:
            return


def _temporary(s):
    if isinstance(s, ast.Assign) and len(s.targets) == 1 and \
            isinstance(s.targets[0], ast.Name) and _TEMP.match(s.targets[0].id):
        return s.targets[0].id
    return None


def _where(nxt):
    """The part of `nxt` evaluated once, right after the statement before it."""
    if isinstance(nxt, (ast.Assign, ast.AugAssign, ast.Return, ast.Expr)):
        return nxt
    if isinstance(nxt, ast.If):
        return nxt.test
    if isinstance(nxt, ast.For):
        return nxt.iter
    return None


def _foldable(nxt, t, value):
    where = _where(nxt)
    if where is None or _comment(nxt):
        return False
    uses = [n for n in ir.walk(where) if isinstance(n, ast.Name) and n.id == t and
            isinstance(n.ctx, ast.Load)]
    if len(uses) != 1:
        return False
    return not (_reads_memory(value) and any(_impure(c) for c in ir.walk(where)
                                             if isinstance(c, ast.Call)))


def _fold_into(nxt, t, value, depth):
    where = _where(nxt)
    # the folded text is at most both texts, less the name, plus parentheses around the value
    bound = len(ast.unparse(where)) - len(t) + len(ast.unparse(value)) + 2
    if 4 * depth + bound + 8 > WIDTH:
        trial = _Replace(t, copy.deepcopy(value)).visit(copy.deepcopy(where))
        if 4 * depth + len(ast.unparse(trial)) + 8 > WIDTH:
            return False
    _substitute(nxt, t, value)
    return True


def _substitute(nxt, t, value):
    """Put `value` where `t` is read in `nxt` (its test or range for if and for)."""
    if isinstance(nxt, ast.If):
        nxt.test = _Replace(t, value).visit(nxt.test)
    elif isinstance(nxt, ast.For):
        nxt.iter = _Replace(t, value).visit(nxt.iter)
    else:
        _Replace(t, value).visit(nxt)
    return nxt


class _Replace(ast.NodeTransformer):
    def __init__(self, t, value):
        self.t, self.value = t, value

    def visit_Name(self, node):
        if node.id == self.t and isinstance(node.ctx, ast.Load):
            return self.value
        return node


def _comment(s):
    return isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and \
        isinstance(s.value.func, ast.Name) and s.value.func.id.startswith("__adjit")


def _reads_memory(value):
    return any(isinstance(n, (ast.Subscript, ast.Attribute, ast.Call)) for n in ir.walk(value))


def _impure(call):
    f = call.func
    if isinstance(f, ast.Name):
        return f.id not in _PURE_BUILTINS
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
        return f.value.id not in _PURE_MODULES
    return True
