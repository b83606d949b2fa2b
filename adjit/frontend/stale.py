"""Is the text adjit read for a function the code Python runs for it?

adjit differentiates a function's source text, read from its file when asked; Python and
numba run the code compiled when the module was imported. A file edited after the import
(a notebook's module changed without a reload) holds another function than the one that
runs, and its gradient would be a plausible wrong number. `differs` compiles the text read,
in surroundings that give its names the same scopes (an enclosing `def` holding the
function's free variables, its class for private names and `super()`, the names its module
binds by `import`, which Python calls attributes of differently), and compares the
code object found with the function's own: instructions, names, constants (nested code
compared the same way), variables.
"""
import __future__
import ast
import linecache
import types
import warnings

_FUTURE_FLAGS = 0
for _feature in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _feature).compiler_flag


def _same(a, b):
    """Two code objects compile the same function (line numbers and positions aside)."""
    if a.co_code != b.co_code or a.co_names != b.co_names or \
            a.co_varnames != b.co_varnames or a.co_freevars != b.co_freevars or \
            a.co_cellvars != b.co_cellvars or len(a.co_consts) != len(b.co_consts):
        return False
    for k, (x, y) in enumerate(zip(a.co_consts, b.co_consts)):
        if k == 0 and isinstance(x, (str, type(None))) and isinstance(y, (str, type(None))):
            continue        # its docstring (or None): not code
        if isinstance(x, types.CodeType) or isinstance(y, types.CodeType):
            if not (isinstance(x, types.CodeType) and isinstance(y, types.CodeType) and
                    _same(x, y)):
                return False
        elif type(x) is not type(y) or repr(x) != repr(y):     # (-0.0 is not 0.0 here)
            return False
    return True


_IMPORTED = {}      # filename: (the lines linecache holds, the names they import)


def _imported(filename, module_globals):
    """The names the module (or notebook cell) in `filename` binds by `import` at its top
    level, as Python's compiler saw them; None where its text cannot be read."""
    lines = linecache.getlines(filename, module_globals)
    if not lines:
        return None
    cached = _IMPORTED.get(filename)
    if cached is not None and cached[0] is lines:
        return cached[1]
    try:
        module = ast.parse("".join(lines))
    except (SyntaxError, ValueError):
        return None
    names = imported_names(module)
    _IMPORTED[filename] = (lines, names)
    return names


def imported_names(module):
    """The names a parsed module binds by `import` at its top level (in its `if` and `try`
    blocks too): Python compiles `name.attr(...)` of those differently (no method call)."""
    names = set()
    stack = list(module.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names
                         if a.name != "*")
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                   ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))
    return names


def import_statements(names):
    """Statements binding `names` by import (compiled, never run: the scope a def made
    again needs for its code to be the module's)."""
    return ast.parse("import " + ", ".join(sorted(names))).body if names else []


def _wrapped(fn, text, imported):
    """`text` (a dedented `def`) inside the scopes that give its names fn's meanings: the
    class it is a method of, a function binding its free variables, the module's imports."""
    lines = text.splitlines()
    parts = fn.__qualname__.split(".")
    depth = 0
    if len(parts) > 1 and parts[-2] != "<locals>" and parts[-2].isidentifier():
        lines = [f"class {parts[-2]}:"] + ["    " + ln for ln in lines]
        depth += 1
    free = [v for v in fn.__code__.co_freevars if v != "__class__"]
    if free:
        body = [f"    {v} = None" for v in free]
        lines = ["def _adjit_enclosing_():"] + body + ["    " + ln for ln in lines]
        depth += 1
    if imported:
        lines = [ast.unparse(import_statements(imported)[0])] + lines
    return "\n".join(lines) + "\n", depth


def _find(code, name, depth):
    """The code object named `name` `depth` definitions inside the module's code."""
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            if depth == 0 and const.co_name == name:
                return const
            if depth > 0:
                found = _find(const, name, depth - 1)
                if found is not None:
                    return found
    return None


def differs(fn, text, filename):
    """True where the function `text` defines compiles to other code than `fn.__code__`;
    False where it is the same or where that cannot be told (the text does not compile
    alone, or an import hook rewrote the module: pytest's `assert` rewriting)."""
    code = fn.__code__
    key = (code, text, filename)
    if key not in _CHECKED:
        _CHECKED[key] = _differs(fn, code, text, filename)
    return _CHECKED[key]


_CHECKED = {}       # (code, text, filename): what differs said


def _differs(fn, code, text, filename):
    if "@pytest_ar" in fn.__globals__ and \
            any(isinstance(n, ast.Assert) for n in ast.walk(ast.parse(text))):
        return False
    imported = _imported(code.co_filename, fn.__globals__)
    if imported is None:
        return False
    wrapped, depth = _wrapped(fn, text, imported)
    try:
        with warnings.catch_warnings():     # (its SyntaxWarnings were shown at the import)
            warnings.simplefilter("ignore")
            module = compile(wrapped, filename, "exec", flags=code.co_flags & _FUTURE_FLAGS,
                             dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    found = _find(module, code.co_name, depth)
    if found is None:
        return False
    return not _same(found, code)
