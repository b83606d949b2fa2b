"""Array indices the generated code knows are not negative, written unsigned.

numba wraps a negative signed index around (`a[-1]` is the last element): a compare and a
select on every access, which LLVM removes only where it proves the index is not negative
itself. It often cannot: a loop that starts where another loop's index left it
(`for r in range(c + 1, d)`), an index counted along by hand (`idx += 1` from `idx = d`),
an index read from a shape. The loop then loads and stores one element at a time where it
could use vectors (a triangular matrix-vector product: 2.4 times slower).

`unsigned_indices` finds the integer names of one generated function that are never negative
(every assignment of the name is: a non-negative constant, a length or shape, a loop over a
range that never goes below zero, a sum or product of such values, ...) and writes each array
index made of them as `np.uint64(...)`: the same element, without the test (reverse/tape.py
does the same for the tape's slots). Indices it cannot prove are left as they are, so a
negative index the user wrote still counts from the end.
"""
import ast

from .. import ir

_ALLOCATORS = {"empty", "zeros", "ones", "empty_like", "zeros_like", "ones_like", "full"}
_READ_ONLY = {"shape", "size", "ndim", "dtype"}
_SIZES = {"bcast", "stride", "slice_len", "slice_start", "not_negative"}
"""adjit's runtime helpers whose integer result is never negative (vec.<name>); a stride
flag (vec.stride) is a bool, an index multiplier never an index alone."""


def unsigned_indices(stmts, params, arrays=frozenset()):
    """Rewrite, in place, the array indices of the statements `stmts` (one function's body,
    its parameters `params`: values not known) in the innermost loops that are never
    negative as `np.uint64(index)`. `arrays`: names known to hold arrays (the program's
    kinds); names every assignment of which allocates an array count too."""
    assigned = {}
    for node in ir.walk_stmts(stmts):
        for target, value in _assignments(node):
            assigned.setdefault(target, []).append(value)
    for stmt in stmts:
        for node in ir.walk(stmt):
            if isinstance(node, ast.NamedExpr):     # assigned inside an expression: not known
                assigned.setdefault(node.target.id, []).append(None)
            elif isinstance(node, (ast.With, ast.Try)):
                return stmts        # a body ir.walk_stmts does not enter: left as it is
    allocated = {name for name, values in assigned.items()
                 if all(_allocates(v) for v in values) and name not in params}
    arrays = set(arrays) | allocated
    for p in params:
        assigned.setdefault(p, []).append(None)
    _element_stores(stmts, allocated, assigned)      # (an argument's elements: unknown)
    known = _not_negative(assigned)
    flags = {name for name, values in assigned.items()
             if all(_calls_vec(v, "stride") for v in values)}
    plain = {name for name, values in assigned.items()
             if all(isinstance(v, tuple) and _counts_up(v[1]) or _calls_vec(v, "not_negative")
                    for v in values)}
    for loop in ir.walk_stmts(stmts):
        if not isinstance(loop, ast.For) or any(
                isinstance(s, (ast.For, ast.While)) for s in ir.walk_stmts(loop.body)):
            continue
        inside = {}
        for stmt in ir.walk_stmts(loop.body):
            for t, v in _assignments(stmt):
                inside.setdefault(t, []).append(v)
        varying = set(inside)
        here = plain | {t for t, values in inside.items()
                        if all(_calls_vec(v, "not_negative") for v in values)}
        known_here = known
        if isinstance(loop.target, ast.Name):
            if loop.target.id not in varying and _plain_range(loop):
                if _counts_up(loop.iter):
                    here = here | {loop.target.id}
                if _range_ok(loop.iter, known):
                    # (the name may hold anything elsewhere: here it is the loop's index)
                    known_here = known | {loop.target.id}
            varying.add(loop.target.id)
        for stmt in loop.body:
            for sub in ir.walk(stmt):
                if isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name) and \
                        sub.value.id in arrays:
                    sub.slice = _unsigned(sub.slice, known_here, flags, varying, here)
    return stmts


def _plain_range(loop):
    """Whether a for loop runs over range(...) with one to three positional arguments (the
    loops _counts_up and _range_ok read)."""
    return ir.is_range_loop(loop) and not loop.iter.keywords and \
        1 <= len(loop.iter.args) <= 3


def _counts_up(call):
    """Whether range(...) counts up by 1 from a constant not below 0 (LLVM knows such an
    index is not negative)."""
    args = call.args
    if len(args) == 3 and ir.constant_int(args[2]) != 1:
        return False
    first = ir.constant_int(args[0])
    return len(args) == 1 or (first is not None and first >= 0)


def _element_stores(stmts, arrays, assigned):
    """Add to `assigned` the values stored into each array's elements, under the key
    `name[]` (an array of indices the generated code keeps: `_kept1[k, 0] = idx`); None for
    a store not of that one form (augmented, in a tuple, a loop's target) and for an array
    the function names anywhere as a whole (aliased, passed to a call that might write it)."""
    direct = set()
    for stmt in stmts:
        for node in ir.walk(stmt):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                t = node.targets[0]
                if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and \
                        t.value.id in arrays:
                    assigned.setdefault(t.value.id + "[]", []).append(node.value)
                    direct.add(id(t))
    for stmt in stmts:
        for node in ir.walk(stmt):
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) and \
                    isinstance(node.value, ast.Name) and node.value.id in arrays and \
                    id(node) not in direct:
                assigned.setdefault(node.value.id + "[]", []).append(None)
            if isinstance(node, ast.Subscript) or (
                    isinstance(node, ast.Attribute) and node.attr in _READ_ONLY):
                continue
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.Name) and child.id in arrays and \
                        isinstance(child.ctx, ast.Load):
                    assigned.setdefault(child.id + "[]", []).append(None)


def _assignments(node):
    """(name, value) pairs node assigns: value an expression, ("range", call) for a loop's
    index, or None for a value not known (a tuple unpacked, a loop over anything else)."""
    if isinstance(node, ast.Assign):
        for t in node.targets:
            if isinstance(t, ast.Name):
                yield t.id, node.value
            elif isinstance(t, (ast.Tuple, ast.List)):
                for e in ir.walk(t):
                    if isinstance(e, ast.Name):
                        yield e.id, None
    elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        yield node.target.id, ast.BinOp(left=node.target, op=node.op, right=node.value)
    elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        yield node.target.id, node.value
    elif isinstance(node, ast.For):
        if isinstance(node.target, ast.Name) and _plain_range(node):
            yield node.target.id, ("range", node.iter)
        else:
            for e in ir.walk(node.target):
                if isinstance(e, ast.Name):
                    yield e.id, None


def _allocates(value):
    """Whether `value` is a call that allocates a numpy array (np.empty(...), ...)."""
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
        isinstance(value.func.value, ast.Name) and value.func.value.id == "np" and \
        value.func.attr in _ALLOCATORS


def _calls_vec(value, name):
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
        isinstance(value.func.value, ast.Name) and value.func.value.id == "vec" and \
        value.func.attr == name


def _not_negative(assigned):
    """The names none of whose values is ever negative (a fixed point: a name is assumed so
    until one of its values is not)."""
    known = {name for name, values in assigned.items() if all(v is not None for v in values)}
    changed = True
    while changed:
        changed = False
        for name in sorted(known):
            if not all(_value_ok(v, known) for v in assigned[name]):
                known.discard(name)
                changed = True
    return known


def _value_ok(value, known):
    if isinstance(value, tuple):            # a loop's index over range(...)
        return _range_ok(value[1], known)
    return _expr_ok(value, known)


def _range_ok(call, known):
    """Whether every index of range(...) is non-negative: start >= 0 counting up, stop >= -1
    counting down (the step a constant)."""
    args = call.args
    if len(args) == 1:
        return True
    if len(args) == 2:
        return _expr_ok(args[0], known)
    step = ir.constant_int(args[2])
    if step is None or step == 0:
        return False
    if step > 0:
        return _expr_ok(args[0], known)
    stop = ir.constant_int(args[1])
    return (stop is not None and stop >= -1) or _expr_ok(args[1], known)


def _expr_ok(node, known):
    """Whether the integer expression `node` is never negative."""
    if isinstance(node, ast.Constant):
        return type(node.value) is int and node.value >= 0
    if isinstance(node, ast.Name):
        return node.id in known
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, (ast.Add, ast.Mult, ast.FloorDiv)):
            return _expr_ok(node.left, known) and _expr_ok(node.right, known)
        if isinstance(node.op, ast.Mod):        # Python's remainder has the divisor's sign
            return _expr_ok(node.right, known)
        return False
    if isinstance(node, ast.Subscript):         # a.shape[k], an element of kept indices
        if isinstance(node.value, ast.Name):
            return node.value.id + "[]" in known
        return isinstance(node.value, ast.Attribute) and node.value.attr == "shape"
    if isinstance(node, ast.Attribute):
        return node.attr in ("size", "ndim")
    if isinstance(node, ast.Call):
        f = node.func
        if isinstance(f, ast.Name) and f.id == "len":
            return True
        if isinstance(f, ast.Name) and f.id in ("min", "max") and not node.keywords and \
                node.args:
            oks = [_expr_ok(a, known) for a in node.args]
            return all(oks) if f.id == "min" else any(oks)
        return any(_calls_vec(node, name) for name in _SIZES)
    return False


def _unsigned(index, known, flags, varying, plain):
    """The index with each non-negative part (a name or arithmetic of names) that changes
    in the loop unsigned (one the loop does not change is tested once, before it). Left
    as they are: a stride flag alone (a bool would index as a mask), and an index LLVM
    already knows is not negative (a loop's over range(n), times a stride flag)."""
    if isinstance(index, ast.Tuple):
        index.elts = [_unsigned(e, known, flags, varying, plain) for e in index.elts]
        return index
    names = {n.id for n in ir.walk(index) if isinstance(n, ast.Name)}
    if not names & varying or (isinstance(index, ast.Name) and index.id in flags) or \
            names <= plain | flags:
        return index
    if isinstance(index, (ast.Name, ast.BinOp)) and _expr_ok(index, known):
        return ast.Call(func=ast.Attribute(value=ast.Name(id="np", ctx=ast.Load()),
                                           attr="uint64", ctx=ast.Load()),
                        args=[index], keywords=[])
    return index
