"""Nested `def`s and lambdas that the function calls, as numba compiles them: helpers.

numba inlines a closure the function defines and calls (`def g(t): return a * t` reading the
enclosing `a`, or `g = lambda t: a * t`). adjit makes each one a helper of its own, whose
free variables (the enclosing function's names it reads) are keyword-only parameters passed
at every call: `g(x[i])` becomes `g(x[i], a=a)`. A call passes the values the names hold
when it is made, which is Python's late binding, and an array passed so is the caller's own
(a write through it reaches it), so the helper is inlined as any other (normalize/inline.py).

A nested function that calls another gets that one's free variables too. What is refused,
by name: a nested function defined inside a loop or a branch, or twice, one reading the
enclosing function's names used other than by calling it (stored, returned, passed on: one
that reads none may be passed to a helper, as a module-level function), recursion, and
decorators.
"""
import ast
import copy
import types

from .. import ir
from ..errors import Location
from ..frontend.source import FunctionSource, assigned_names

SOURCE = "__adjit_source__"   # the FunctionSource a made helper carries (frontend/source.py)


def _nothing():
    pass


def made_helper(name, tree, loc, namespace, names, line=None, fn=None):
    """A function object standing for a helper adjit writes (a stencil's loops, einsum's):
    read_function gives its FunctionSource, `tree` read as in the function at `loc`, its
    names resolved in `namespace` (a module's globals) and `names`. With `line`, every node
    of `tree` is at that line (what comments quote); `fn`: the function whose defaults the
    tree's parameters have (none: no defaults)."""
    if line is not None:
        for n in ast.walk(tree):
            if "lineno" in n._attributes:
                n.lineno = n.end_lineno = line
    carrier = types.FunctionType(_nothing.__code__, namespace, name)
    setattr(carrier, SOURCE, FunctionSource(fn or carrier, tree, loc).with_tree(tree, names))
    return carrier


def lift(src, make_source, function_source):
    """`src` with its nested functions made helpers; `src` itself when it has none.
    `make_source(tree, names)`: the FunctionSource of a rewritten tree with `names`
    resolved; `function_source(fn, tree, loc)`: a FunctionSource."""
    body = src.tree.body
    if not any(_nested(s) is not None for s in ir.walk_stmts(body)):
        return src
    for s in ir.walk_stmts(body):
        if _nested(s) is not None and s not in body:
            raise src.loc.error(s, f"the nested function `{_nested(s).name}` defined inside "
                                   "a loop or a branch",
                                "Define it at the top level of the function's body.")
    tree = copy.deepcopy(src.tree)
    defs = {}
    for s in list(tree.body):
        fdef = _nested(s)
        if fdef is None:
            continue
        if fdef.name in defs:
            raise src.loc.error(s, f"the nested function `{fdef.name}` defined twice",
                                "Give each nested function its own name.")
        if fdef.decorator_list:
            raise src.loc.error(s, f"a decorator on the nested function `{fdef.name}`",
                                "Define it without a decorator (adjit compiles it with the "
                                "function), or at module level.")
        defs[fdef.name] = fdef
        tree.body.remove(s)
    outer = assigned_names(tree) | set(src.params)
    clash = sorted(outer & set(defs))
    if clash:
        raise src.loc.error(defs[clash[0]], f"the name `{clash[0]}` of a nested function "
                                            "also assigned in the function",
                            "Give the nested function a name of its own.")
    free = {name: _free(fdef, outer) for name, fdef in defs.items()}
    changed = True
    while changed:              # a nested function that calls another reads its names too
        changed = False
        for name, fdef in defs.items():
            for other in _called(fdef, defs):
                more = free[other] - free[name]
                if more:
                    free[name] |= more
                    changed = True
    for fdef in [tree, *defs.values()]:
        _only_called(fdef, defs, src, free)
    made = {}
    for name, fdef in defs.items():
        _pass_free(fdef, defs, free)
        fdef.args.kwonlyargs += [ast.arg(arg=v) for v in sorted(free[name])]
        fdef.args.kw_defaults += [None] * len(free[name])
        made[name] = _function(src, fdef)
    _pass_free(tree, defs, free)
    for name, fdef in defs.items():
        fn = made[name]
        loc = Location(f"{src.loc.name}.{name}", src.loc.filename, fdef.lineno)
        setattr(fn, SOURCE, function_source(fn, fdef, loc).with_tree(fdef, made))
    return make_source(tree, made)


def _nested(s):
    """The FunctionDef a statement makes: `def g(...)`, or `g = lambda ...: e`."""
    if isinstance(s, ast.FunctionDef):
        return s
    if isinstance(s, ast.Assign) and len(s.targets) == 1 and \
            isinstance(s.targets[0], ast.Name) and isinstance(s.value, ast.Lambda):
        fdef = ast.FunctionDef(name=s.targets[0].id, args=s.value.args,
                               body=[ast.copy_location(ast.Return(value=s.value.body),
                                                       s.value)], decorator_list=[],
                               returns=None, type_comment=None, type_params=[])
        return ast.copy_location(fdef, s)
    return None


def _params(fdef):
    a = fdef.args
    return {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs}


def _free(fdef, outer):
    own = assigned_names(fdef) | _params(fdef)
    return {n.id for n in ir.walk(fdef) if isinstance(n, ast.Name) and
            isinstance(n.ctx, ast.Load) and n.id in outer and n.id not in own}


def _called(fdef, defs):
    return {n.func.id for n in ir.walk(fdef) if isinstance(n, ast.Call) and
            isinstance(n.func, ast.Name) and n.func.id in defs}


def _only_called(node, defs, src, free):
    """A nested function that reads the enclosing function's names is only called (each
    call passes those names); one that reads none may also be passed to a helper as a
    value, as a module-level function is (vectorbt's rolling_sharpe_ratio_nb passes its
    `_apply_func_nb` to rolling_apply_nb)."""
    calls = {id(n.func) for n in ir.walk(node) if isinstance(n, ast.Call)}
    for n in ir.walk(node):
        if isinstance(n, ast.Name) and n.id in defs and id(n) not in calls and free[n.id]:
            names = ", ".join(f"`{v}`" for v in sorted(free[n.id]))
            raise src.loc.error(n, f"the nested function `{n.id}`, which reads the "
                                   f"enclosing function's {names}, used other than by "
                                   "calling it",
                                "Pass those values to it as arguments (then it may be "
                                "passed to a helper), call it where it is needed, or "
                                "define it at module level.")


def _pass_free(node, defs, free):
    """Every call of a nested function under `node` also passes its free variables."""
    for n in ir.walk(node):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in defs:
            given = {kw.arg for kw in n.keywords}
            n.keywords = n.keywords + [
                ast.copy_location(ast.keyword(arg=v, value=ast.Name(id=v, ctx=ast.Load())), n)
                for v in sorted(free[n.func.id]) if v not in given]


def _function(src, fdef):
    """A function object for the nested def (defaults evaluated as Python would, in the
    module's namespace: constants)."""
    module = ast.Module(body=[_without_body(fdef)], type_ignores=[])
    ast.fix_missing_locations(module)
    code = compile(module, src.fn.__code__.co_filename, "exec")
    ns = {}
    try:
        exec(code, src.fn.__globals__, ns)
    except Exception as exc:        # a default that reads the enclosing function's names
        raise src.loc.error(fdef, f"the defaults of the nested function `{fdef.name}` "
                                  f"({type(exc).__name__}: {exc})",
                            "Give it constant defaults, or pass the values.") from None
    fn = ns[fdef.name]
    if not isinstance(fn, types.FunctionType):
        raise src.loc.error(fdef, f"the nested function `{fdef.name}`", "Use a plain def.")
    return fn


def _without_body(fdef):
    stub = copy.copy(fdef)
    stub.body = [ast.Pass()]
    stub.decorator_list = []
    return stub
