"""Helpers to build and inspect normalized (A-normal form) statements.

The normalized program is ordinary Python AST with one primitive operation per assignment:
every operand is an *atom*, a Name or a numeric Constant. Control flow is `if` on a fresh
condition variable, `for` over `range` with atom bounds, and `while True` whose exits are
flags. Statements carry `_origin = (filename, line)` of the user code they came from.
"""
import ast


def name(id_):
    return ast.Name(id=id_, ctx=ast.Load())


def atomic_add(array, index, value, origin=None):
    """The statement `cuda.atomic.add(array, index, value)`."""
    func = ast.Attribute(value=ast.Attribute(value=name("cuda"), attr="atomic", ctx=ast.Load()),
                         attr="add", ctx=ast.Load())
    node = ast.Expr(value=ast.Call(func=func, args=[name(array), index, value], keywords=[]))
    node._origin = origin
    return node


def store(id_):
    return ast.Name(id=id_, ctx=ast.Store())


def const(value):
    return ast.Constant(value=value)


def assign(target, value, origin=None):
    node = ast.Assign(targets=[store(target) if isinstance(target, str) else target],
                      value=value, lineno=0)
    node._origin = origin
    return node


def load_names(node):
    """Every Name node `node` reads (loads), nested ones included."""
    return [n for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]


def is_atom(node):
    return isinstance(node, (ast.Name, ast.Constant))


def atom_names(nodes):
    """Names read by a list of atoms (constants read nothing)."""
    return [n.id for n in nodes if isinstance(n, ast.Name)]


def target_name(stmt):
    """The variable an assignment writes, or None for an element store."""
    tgt = stmt.targets[0]
    return tgt.id if isinstance(tgt, ast.Name) else None


def is_store(stmt):
    return isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Subscript)


def index_atoms(sub):
    """The index atoms of `a[i]` or `a[i, j]`."""
    idx = sub.slice
    return list(idx.elts) if isinstance(idx, ast.Tuple) else [idx]


def operands(value):
    """The atoms an assignment's right-hand side reads, in order."""
    if is_atom(value):
        return [value]
    if isinstance(value, ast.BinOp):
        return [value.left, value.right]
    if isinstance(value, ast.UnaryOp):
        return [value.operand]
    if isinstance(value, ast.Compare):
        return [value.left, value.comparators[0]]
    if isinstance(value, ast.Call):
        out = []
        for a in value.args:
            out.extend(a.elts if isinstance(a, ast.Tuple) else [a])
        if isinstance(value.func, ast.Attribute) and isinstance(value.func.value, ast.Name) \
                and value.func.value.id not in ("math", "np", "vec"):
            out.insert(0, value.func.value)
        return out
    if isinstance(value, ast.Subscript):
        base = value.value
        arr = base.value if isinstance(base, ast.Attribute) else base
        return [arr] + index_atoms(value)
    raise AssertionError(f"not a normalized right-hand side: {ast.dump(value)}")


def reads(stmt):
    """Variable names a simple statement reads."""
    if isinstance(stmt, ast.Assign):
        names = atom_names(operands(stmt.value))
        if is_store(stmt):
            names += [stmt.targets[0].value.id] + atom_names(index_atoms(stmt.targets[0]))
        return names
    if isinstance(stmt, ast.Return):
        return atom_names([stmt.value])
    return []


def walk_stmts(stmts):
    """Every statement in a body, nested ones included, in program order."""
    for s in stmts:
        yield s
        if isinstance(s, ast.If):
            yield from walk_stmts(s.body)
            yield from walk_stmts(s.orelse)
        elif isinstance(s, (ast.For, ast.While)):
            yield from walk_stmts(s.body)


def assigned(stmts):
    """Names assigned anywhere in a body, loop targets included."""
    out = set()
    for s in walk_stmts(stmts):
        if isinstance(s, ast.Assign) and not is_store(s):
            out.add(target_name(s))
        elif isinstance(s, ast.For):
            out.add(s.target.id)
    return out

