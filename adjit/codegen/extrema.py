"""Loops that find a largest or smallest value: `r = vec.nanmax(r, x[i])` (what np.max,
np.min, np.amax, ... become) stops at the first NaN.

`vec.nanmax(a, b)` is `a if a >= b or a != a else b`: numpy's maximum, which keeps the
first NaN. In a loop LLVM turns it into a select whose result the next iteration waits for,
about 5 cycles an element. Such a loop is written as two:

    _v = r
    _k = vec.KEY_LOWEST             # (KEY_HIGHEST for nanmin)
    _n = False
    for i in range(n):              # integer max of order keys: LLVM vectorizes it
        _v = <the element>
        _k = max(_k, vec.order_key(_v))
        _n |= _v != _v
    if _n or _k == 0 or _k == -1:   # a NaN, or a largest value of 0.0 or -0.0
        for i in range(n):          # the loop numba's np.max runs: the first NaN is the
            _v = <the element>      # result, ties keep the first
            if _v != _v:
                if r == r:
                    r = _v
                break
            if _v > r:              # (< for nanmin)
                r = _v
    elif _k != vec.KEY_LOWEST:
        _v = vec.key_value(_k)
        if _v > r:
            r = _v

An order key (runtime/index.py order_key) is an int64 that orders as the number does, so
the first loop finds the largest value exactly, a vector of elements at a time (a 1e5 array:
0.02 ms, against 0.13 ms for the second loop alone, whose branch the processor predicts, and
0.5 ms for the select). Where it can differ from numba's result, the second loop decides:
a NaN (numba returns the first one), and a largest value of zero (0.0 and -0.0 are equal to
numba, which keeps the first; keys order -0.0 below 0.0). Any other largest value has one
bit pattern, so the value is numba's to the bit, a NaN already in `r` stays, and ties keep
`r`. Only where the element is arithmetic on names, numbers and array elements (nothing an
extra evaluation changes or raises) and the loop's index is read nowhere after it (the
second loop may end early). Run on a generated function after its temporaries are folded
(codegen/emit.py `render`), on CPU code.
"""
import ast
import copy

from .. import ir

_COMPARE = {"nanmax": ast.Gt, "nanmin": ast.Lt}
_ELEMENT = (ast.Name, ast.Constant, ast.Subscript, ast.Tuple, ast.BinOp, ast.UnaryOp,
            ast.expr_context, ast.operator, ast.unaryop, ast.Slice)


_START = {"nanmax": "KEY_LOWEST", "nanmin": "KEY_HIGHEST"}
_REDUCE = {"nanmax": "max", "nanmin": "min"}


def rewrite(fn, keys=True):
    """Rewrite every such loop of the function definition `fn` in place: as the two loops
    above, or with `keys` False as the second alone (numba's loop: code with
    vector_math=False, which adjit may differentiate again)."""
    loose = set()
    _loose_reads(fn.body, frozenset(), loose)
    taken = {n.id for n in ir.walk(fn) if isinstance(n, ast.Name)}
    _visit(fn.body, loose, taken, keys)


def _loose_reads(stmts, indices, out):
    """The names read outside every loop that has them as its index (into `out`)."""
    for s in stmts:
        if isinstance(s, ast.For) and isinstance(s.target, ast.Name):
            _reads(s.iter, indices, out)
            _loose_reads(s.body, indices | {s.target.id}, out)
            _loose_reads(s.orelse, indices, out)
            continue
        for value in ast.iter_child_nodes(s):
            if isinstance(value, ast.stmt):
                _loose_reads([value], indices, out)
            else:
                _reads(value, indices, out)


def _reads(node, indices, out):
    out.update(n.id for n in ir.walk(node) if isinstance(n, ast.Name)
               and isinstance(n.ctx, ast.Load) and n.id not in indices)


def _visit(stmts, loose, taken, keys):
    out = []
    for s in stmts:
        if isinstance(s, ast.For) and _extremum(s, loose):
            out.extend(_rewrite(s, taken, keys))
            continue
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(s, field, None)
            if isinstance(inner, list):
                _visit(inner, loose, taken, keys)
        out.append(s)
    stmts[:] = out


def _extremum(loop, loose):
    """Whether `loop` is `for i in range(...): r = vec.nanmax(r, e)` (or nanmin) as above."""
    if loop.orelse or len(loop.body) != 1 or not isinstance(loop.target, ast.Name) or \
            not ir.is_range_loop(loop):
        return False
    s = loop.body[0]
    if not (isinstance(s, ast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Name)):
        return False
    call, r = s.value, s.targets[0].id
    if not (isinstance(call, ast.Call) and len(call.args) == 2 and not call.keywords
            and isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name)
            and call.func.value.id == "vec" and call.func.attr in _COMPARE
            and isinstance(call.args[0], ast.Name) and call.args[0].id == r):
        return False
    element = call.args[1]
    return (loop.target.id not in loose and r != loop.target.id
            and all(isinstance(n, _ELEMENT) and not isinstance(n, (ast.FloorDiv, ast.Mod))
                    for n in ir.walk(element))
            and not any(isinstance(n, ast.Name) and n.id == r for n in ir.walk(element)))


def _fresh(stem, taken):
    k = 1
    while f"{stem}{k}" in taken:
        k += 1
    taken.add(f"{stem}{k}")
    return f"{stem}{k}"


def _rewrite(loop, taken, keys):
    """The statements replacing `loop` (the module's docstring)."""
    s = loop.body[0]
    r, how, element = s.targets[0].id, s.value.func.attr, s.value.args[1]
    v = _fresh("_v", taken)

    def compare(a, op, b):
        return ast.Compare(left=ir.name(a), ops=[op()], comparators=[ir.name(b)])

    def take():
        return ast.Assign(targets=[ir.store(r)], value=ir.name(v))

    def vec(attr):
        return ast.Attribute(value=ir.name("vec"), attr=attr, ctx=ast.Load())

    exact = ast.For(target=copy.deepcopy(loop.target), iter=copy.deepcopy(loop.iter), body=[
        ast.Assign(targets=[ir.store(v)], value=copy.deepcopy(element)),
        ast.If(test=compare(v, ast.NotEq, v), body=[
            ast.If(test=compare(r, ast.Eq, r), body=[take()], orelse=[]),
            ast.Break()], orelse=[]),
        ast.If(test=compare(v, _COMPARE[how], r), body=[take()], orelse=[]),
    ], orelse=[])
    if not keys:
        return [exact]
    key, nan = _fresh("_vk", taken), _fresh("_vn", taken)
    keyed = ast.For(target=loop.target, iter=loop.iter, body=[
        ast.Assign(targets=[ir.store(v)], value=element),
        ast.Assign(targets=[ir.store(key)], value=ast.Call(
            func=ir.name(_REDUCE[how]), args=[ir.name(key), ast.Call(
                func=vec("order_key"), args=[ir.name(v)], keywords=[])], keywords=[])),
        ast.AugAssign(target=ir.store(nan), op=ast.BitOr(), value=compare(v, ast.NotEq, v)),
    ], orelse=[])
    zero = ast.BoolOp(op=ast.Or(), values=[
        ir.name(nan), ast.Compare(left=ir.name(key), ops=[ast.Eq()], comparators=[ir.const(0)]),
        ast.Compare(left=ir.name(key), ops=[ast.Eq()], comparators=[ir.const(-1)])])
    found = [ast.Assign(targets=[ir.store(v)], value=ast.Call(
                 func=vec("key_value"), args=[ir.name(key)], keywords=[])),
             ast.If(test=compare(v, _COMPARE[how], r), body=[take()], orelse=[])]
    seen = ast.Compare(left=ir.name(key), ops=[ast.NotEq()], comparators=[vec(_START[how])])
    return [ast.Assign(targets=[ir.store(v)], value=ir.name(r)),
            ast.Assign(targets=[ir.store(key)], value=vec(_START[how])),
            ast.Assign(targets=[ir.store(nan)], value=ir.const(False)),
            keyed,
            ast.If(test=zero, body=[exact], orelse=[ast.If(test=seen, body=found, orelse=[])])]
