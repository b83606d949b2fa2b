"""Reject every construct adjit cannot differentiate, before any transformation.

The check is a whitelist over Python's `ast` node classes: a node class that is not listed
as supported raises an AdjitError naming the construct and what to write instead, so a node
added by a new Python version cannot slip through as a raw traceback.
"""
import ast

import numpy as np

from .. import ir

SUPPORTED_STMTS = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.If, ast.For,
                   ast.While, ast.Break, ast.Continue, ast.Return, ast.Pass, ast.Assert,
                   ast.Raise)
SUPPORTED_EXPRS = (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Call,
                   ast.Name, ast.Constant, ast.Attribute, ast.Subscript, ast.Tuple,
                   ast.keyword, ast.Slice, ast.List)
SUPPORTED_OTHER = (ast.expr_context, ast.operator, ast.unaryop, ast.boolop, ast.cmpop,
                   ast.arguments, ast.arg)
SUPPORTED_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.Mod, ast.FloorDiv,
                       ast.MatMult,
                       ast.USub, ast.UAdd, ast.Not, ast.And, ast.Or,
                       ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq,
                       ast.Is, ast.IsNot)      # (only `x is None`: anf.is_none says so)

_LOOP = "Write an explicit `for i in range(n):` loop instead"
ADVICE = {
    "Try": ("try/except", "Exceptions are not differentiable: move the try/except outside "
                          "the differentiated function"),
    "TryStar": ("try/except*", "Move the try/except* outside the differentiated function"),
    "With": ("a `with` block", "Move the with block outside the differentiated function "
                               "(numba's `with objmode(...)` blocks are accepted)"),
    "AsyncWith": ("`async with`", "Differentiate a plain synchronous function"),
    "AsyncFor": ("`async for`", "Differentiate a plain synchronous function"),
    "Await": ("`await`", "Differentiate a plain synchronous function"),
    "Yield": ("`yield` (a generator)", "Return a float instead of yielding values"),
    "YieldFrom": ("`yield from` (a generator)", "Return a float instead of yielding values"),
    "ClassDef": ("a class definition", "Define classes outside the differentiated function"),
    "FunctionDef": ("a nested function definition here",
                    "Define it at the top level of the function's body, or at module level"),
    "AsyncFunctionDef": ("a nested async function", "Define helpers at module level"),
    "Lambda": ("a lambda that is not assigned to a name",
               "Assign it to a name (h = lambda t: 2.0 * t) and call that, or use a def"),
    "ListComp": ("a list comprehension", _LOOP),
    "SetComp": ("a set comprehension", _LOOP),
    "DictComp": ("a dict comprehension", _LOOP),
    "GeneratorExp": ("a generator expression (numba compiles none)",
                     "Write a list comprehension, sum([x[i] * y[i] for i in range(n)]), or a "
                     "loop"),
    "Global": ("a `global` statement",
               "Pass the value in as an argument and return results instead of writing globals"),
    "Nonlocal": ("a `nonlocal` statement",
                 "Pass the value in as an argument and return results instead"),
    "Delete": ("a `del` statement", "Remove the del; locals end with the function"),
    "Import": ("an import inside the function", "Import at module level"),
    "ImportFrom": ("an import inside the function", "Import at module level"),
    "Match": ("a `match` statement", "Use if/elif/else"),
    "NamedExpr": ("an assignment expression (:=)", "Assign on a line of its own"),
    "Starred": ("star-unpacking (*args)", "Unpack values explicitly, one name each"),
    "Set": ("a set literal", "Use a numpy array"),
    "Dict": ("a dict literal", "Use separate variables or a numpy array"),
    "JoinedStr": ("an f-string", "Compute only numbers in the differentiated function"),
    "FormattedValue": ("an f-string", "Compute only numbers in the differentiated function"),
    "TypeAlias": ("a `type` alias statement", "Define type aliases at module level"),
    "Global_write": ("a global", "Pass values as arguments"),
    # (& | ^ << >> ~ are read as operator.and_, ... by sugar.bitwise_operators)
    "In": ("an `in` test", "Compare elements one by one in a loop"),
    "NotIn": ("a `not in` test", "Compare elements one by one in a loop"),
}

_SUPPORTED = SUPPORTED_STMTS + SUPPORTED_EXPRS + SUPPORTED_OTHER


def is_supported_class(cls):
    """True when adjit differentiates nodes of this ast class."""
    if issubclass(cls, (ast.operator, ast.unaryop, ast.cmpop, ast.boolop)):
        return issubclass(cls, SUPPORTED_OPERATORS)
    return issubclass(cls, _SUPPORTED)


def describe(cls):
    """(construct, advice) for an unsupported ast class."""
    name = cls.__name__
    if name in ADVICE:
        return ADVICE[name]
    return (f"the Python construct `{name}`",
            "Rewrite it with assignments, arithmetic, if/else and for-range loops")


def _walk_with_lines(node, line):
    """Every node below `node`, with the line of the nearest node that has one (operator
    nodes have none)."""
    line = getattr(node, "lineno", None) or line
    yield node, line
    for child in ast.iter_child_nodes(node):
        yield from _walk_with_lines(child, line)


class _At:
    def __init__(self, lineno):
        self.lineno = lineno


def check_supported(tree, loc):
    """Raise AdjitError at the first unsupported construct in a function body."""
    # strings passed to a call (np.searchsorted(a, v, side="right")) are the call's business
    passed = {id(a) for node in ir.walk(tree) if isinstance(node, ast.Call)
              for a in node.args + [kw.value for kw in node.keywords]}
    # a comparison of constants (a string setting the function was called with, read as the
    # constant it holds: normalize/prune.py with_settings) is decided when it is normalized
    passed |= {id(n) for node in ir.walk(tree) if isinstance(node, ast.Compare)
               and all(isinstance(c, ast.Constant) for c in [node.left] + node.comparators)
               for n in [node.left] + node.comparators}
    # `f(x, *theta)`: a tuple unpacked into a call's arguments (anf.star_arguments)
    starred = {id(a) for node in ir.walk(tree) if isinstance(node, ast.Call)
               for a in node.args if isinstance(a, ast.Starred)}
    # a field name as an index (`params['x1']` of a record passed to a helper, which reads
    # it as a named tuple: anf.subscript)
    passed |= {id(node.slice) for node in ir.walk(tree) if isinstance(node, ast.Subscript)
               and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)}
    # an assert's message is not evaluated unless it fails (and then not by adjit)
    passed |= {id(node.msg) for node in ir.walk(tree) if isinstance(node, ast.Assert)}
    # `...` as an element of an index (a[..., 0]) is numpy's ellipsis, supported there
    for node in ir.walk(tree):
        if isinstance(node, ast.Subscript):
            elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            passed |= {id(e) for e in elts if isinstance(e, ast.Constant) and e.value is Ellipsis}
    # a raise statement's exception is the normalizer's business (anf.raise_statement says
    # which forms it keeps: an f-string message is refused there, with its own advice)
    raised = {id(n) for node in ir.walk(tree) if isinstance(node, ast.Raise)
              and node.exc is not None for n in ast.walk(node.exc)}
    for stmt in tree.body:
        for node, line in _walk_with_lines(stmt, stmt.lineno):
            if id(node) in raised or id(node) in starred:
                continue
            if not is_supported_class(type(node)):
                construct, advice = describe(type(node))
                raise loc.error(_At(line), f"{construct} is not supported", advice + ".")
            if isinstance(node, ast.Constant) and not _numeric(node.value) and not (
                    isinstance(node.value, str) and _is_docstring(tree, node)) and \
                    id(node) not in passed:
                raise loc.error(node, f"the constant {node.value!r} is not supported",
                                "Use only numbers and booleans in the differentiated function.")


def _numeric(value):
    return value is None or isinstance(value, (bool, int, float))


def _is_docstring(tree, node):
    """A string that is a statement of its own (a docstring, or a comment written as a
    string anywhere in the body): it computes nothing and is ignored."""
    return any(isinstance(s, ast.Expr) and s.value is node for s in ir.walk(tree))


def check_dead_draws(src):
    """Refuse `np.random.<draw>(...)` whose value nothing reads in a function where numba's
    dead-code elimination runs: numba deletes such a call there (ir_utils.
    remove_dead_random_call), and it runs when numba inlines a closure (a lambda or a nested
    def) or a bool() call, and in a function compiled with parallel=True. numba's draws would
    then differ from Python's, which adjit keeps (elsewhere numba keeps them too; a prange
    loop is a range in numba's serial compile, and adjit's parallel gradient keeps such
    draws itself: reverse/dce.py)."""
    tree = src.tree
    trigger = _dead_code_elimination(src)
    if trigger is None:
        return
    loads = {n.id for n in ir.walk(tree) if isinstance(n, ast.Name) and
             isinstance(n.ctx, ast.Load)}
    for stmt in ir.walk(tree):
        if isinstance(stmt, ast.Expr):
            value = stmt.value
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
                isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id not in loads:
            value = stmt.value
        else:
            continue
        # a draw itself, or one inside an expression whose value is dropped (`2.0 *
        # np.random.random()`: numba deletes the product, then the draw)
        draw = value if _numpy_random_draw(value, src) else None
        if draw is None and not isinstance(value, ast.Call):
            draw = next((n for n in ir.walk(value) if isinstance(n, ast.Call) and
                         _numpy_random_draw(n, src)), None)
        if draw is not None:
            raise src.loc.error(stmt, f"a random draw whose value is not used "
                                f"(`{ast.unparse(draw)}`) in a function with {trigger}: "
                                "numba deletes such a draw there (its dead-code elimination "
                                "removes unused np.random calls), so numba's draws and "
                                "Python's differ",
                                "Use the value it returns, or delete the call.")


def _dead_code_elimination(src):
    """Why numba runs its dead-code elimination on the function, or None."""
    fn = src.fn
    compiled = getattr(fn, "__globals__", {}).get(getattr(fn, "__name__", None))
    if getattr(compiled, "py_func", None) is fn and \
            (getattr(compiled, "targetoptions", None) or {}).get("parallel"):
        return "parallel=True (numba's parallel passes)"
    for node in ir.walk(src.tree):
        if isinstance(node, ast.Lambda) or (isinstance(node, ast.FunctionDef) and
                                            node is not src.tree):
            return "a closure (a lambda or a nested def), which numba inlines"
        if isinstance(node, ast.Call) and src.resolve(node.func) is bool:
            return "a bool() call, which numba inlines"
    return None


def _numpy_random_draw(node, src):
    """`np.random.<name>(...)` (the form numba recognizes), not seed or shuffle."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and
            isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "random"
            and node.func.attr not in ("seed", "shuffle")):
        return False
    return src.resolve(node.func.value.value) is np


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _own_locals(tree):
    """The names a function's own scope binds (not its nested functions' or comprehensions':
    a nested def's name is the function's, what it binds inside is not)."""
    names = set()

    def visit(node):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, _SCOPES):
                if not isinstance(child, ast.Lambda):
                    names.add(child.name)
                continue
            if isinstance(child, _COMPREHENSIONS):
                continue
            visit(child)

    for stmt in tree.body:
        visit(stmt)
    return names


def check_bound_before_read(src, given=None):
    """Refuse a read of a local name that no statement before it (in the order they are
    written) binds: one that only a later statement of the same loop body binds (`s += y`
    then `y = ...` in a loop, with no `y` before the loop), or one bound further down a
    straight-line body. Python has no value for it in the loop's first step (an
    UnboundLocalError, unless a test keeps that step from reading it), and numba refuses the
    function ("Variable 'y' is not defined"); adjit would otherwise read a value numba
    never gives (zero), or type the name wrongly and say something unrelated. `given`: the
    names a caller binds (a helper's parameters, a record's fields)."""
    tree = src.tree
    declared = {name for node in ast.walk(tree) if isinstance(node, (ast.Global, ast.Nonlocal))
                for name in node.names}
    local = _own_locals(tree) - declared
    bound = set(src.params) | set(given or ()) | ({src.vararg} if src.vararg else set())
    loops = []

    def read(node):
        if node.id in local and node.id not in bound:
            if loops:
                where = (f"the loop at line {loops[-1].lineno} binds it later in its body, so "
                         "its first step has no value for it")
            else:
                where = "it is bound only further down"
            raise src.loc.error(node, f"'{node.id}' is read before any statement binds it: "
                                f"{where} (numba refuses the function too: Variable "
                                f"'{node.id}' is not defined)",
                                f"Give '{node.id}' a value before it is read (`{node.id} = "
                                "0.0`, or an array of its shape), as numba requires.")

    def store(target):
        if isinstance(target, ast.Name):
            bound.add(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                store(elt)
        elif isinstance(target, ast.Starred):
            store(target.value)
        else:                       # a[i] = ..., r.x = ...: reads a and i
            visit(target)

    def visit(node):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                read(node)
            else:
                bound.add(node.id)
        elif isinstance(node, ast.Assign):
            visit(node.value)
            for target in node.targets:
                store(target)
        elif isinstance(node, ast.AugAssign):
            visit(node.value)
            if isinstance(node.target, ast.Name):
                read(ast.Name(id=node.target.id, ctx=ast.Load(), lineno=node.lineno))
            store(node.target)
        elif isinstance(node, ast.AnnAssign):
            if node.value is not None:
                visit(node.value)
                store(node.target)
        elif isinstance(node, (ast.For, ast.While)):
            if isinstance(node, ast.For):
                visit(node.iter)
            loops.append(node)
            if isinstance(node, ast.For):
                store(node.target)
            else:
                visit(node.test)        # (evaluated before each step, the first included)
            for s in node.body:
                visit(s)
            loops.pop()
            for s in node.orelse:
                visit(s)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)    # (its body reads this scope's names when it is called)
        elif isinstance(node, ast.Lambda):
            pass
        elif isinstance(node, _COMPREHENSIONS):
            # the first iterable is evaluated here; the rest in the comprehension's scope,
            # whose own names (its targets) are not this function's
            if node.generators:
                visit(node.generators[0].iter)
        elif isinstance(node, ast.NamedExpr):
            visit(node.value)
            store(node.target)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                visit(item.context_expr)
                if item.optional_vars is not None:
                    store(item.optional_vars)
            for s in node.body:
                visit(s)
        else:
            for child in ast.iter_child_nodes(node):
                visit(child)

    for stmt in tree.body:
        visit(stmt)
