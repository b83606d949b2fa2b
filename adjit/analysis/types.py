"""Kinds of values, inferred over the normalized program from the argument types.

Kinds: FLOAT, INT, BOOL, OTHER, or an ArrayKind(ndim, is_float). Integers and booleans never
carry derivatives; the kind also picks the tape (float or integer) a recorded value goes on.
"""
import ast

import numpy as np

from ..errors import error_at
from .. import ir
from ..rules import opaque
from ..rules.registry import Refused
from ..rules.table import ALLOCATORS, ARRAY_RULES, DECLARED_ALLOCATORS, INACTIVE, \
    INT_ALLOCATORS
from .prims import classify

FLOAT, INT, BOOL, OTHER = "float", "int", "bool", "other"


class _Unsigned(str):
    """INT held as numba's uint64 (`ui = np.uint64(i)`, stumpy's indexing): equal to INT
    everywhere kinds are compared, but numba joins uint64 with int64 into float64, so a
    value of it restored from the int64 tape, or started at 0, is converted back."""


UINT64 = _Unsigned(INT)


def zero_source(kind):
    """The source of the zero of a scalar kind (a name defined before the paths that assign
    it), or None for a kind with no zero (arrays, other values)."""
    if isinstance(kind, _Unsigned):
        return "np.uint64(0)"
    return {FLOAT: "0.0", INT: "0", BOOL: "False"}.get(kind) if isinstance(kind, str) \
        else None


def stored_source(kind, value):
    """`value` as the tape and the checkpoints store a scalar of `kind`: floats on float64
    stacks, integers and booleans on int64 ones."""
    return f"int({value})" if kind == BOOL else value


def restored_source(kind, value):
    """The scalar of `kind` that `value`, read back from its store (stored_source), was."""
    if kind == BOOL:
        return f"{value} != 0"
    if isinstance(kind, _Unsigned):
        return f"np.uint64({value})"
    return value


class ArrayKind:
    """An array of `ndim` dimensions; `dtype` is "f" (float), "i" (integer) or "b" (bool)."""

    def __init__(self, ndim, is_float=True, dtype=None, layout="C"):
        self.ndim = ndim
        self.is_float = is_float
        self.dtype = dtype or ("f" if is_float else "i")
        self.layout = layout

    def __eq__(self, other):
        return isinstance(other, ArrayKind) and (self.ndim, self.is_float) == \
            (other.ndim, other.is_float)

    def __hash__(self):
        return hash((self.ndim, self.is_float))

    def __repr__(self):
        return f"array{self.ndim}d" + ("" if self.is_float else "[int]")


def is_array(kind):
    return isinstance(kind, ArrayKind)


def is_float_kind(kind):
    return kind == FLOAT or (is_array(kind) and kind.is_float)


def kind_of_numba_type(ty):
    """The kind of a numba type (what numba.typeof gives for an argument)."""
    from numba.core import types
    if isinstance(ty, types.Boolean):
        return BOOL
    if isinstance(ty, types.Integer):
        return UINT64 if ty == types.uint64 else INT
    if isinstance(ty, types.Float):
        return FLOAT
    if isinstance(ty, types.Array):
        dtype = "f" if isinstance(ty.dtype, types.Float) else \
            "b" if isinstance(ty.dtype, types.Boolean) else "i"
        return ArrayKind(ty.ndim, dtype == "f", dtype, ty.layout)
    return OTHER


def join(a, b, origin=None):
    if a is None or a == b:
        return b
    if b is None:
        return a
    if is_array(a) or is_array(b):
        raise error_at(origin, f"a variable holds both a {a} and a {b}",
                       "Use separate variables for arrays and numbers.")
    if OTHER in (a, b):
        return OTHER
    if FLOAT in (a, b):
        return FLOAT
    return INT


def infer_kinds(stmts, arg_kinds, env):
    """Map every variable of a normalized body to its kind (flow-insensitive fixpoint)."""
    while True:
        kinds = _fixpoint(stmts, arg_kinds, env)
        if not _floats_into_int_arrays(stmts, kinds):
            break
    _check_complete(stmts, kinds)
    return kinds


def _fixpoint(stmts, arg_kinds, env):
    kinds = dict(arg_kinds)
    for name, obj in env.items():
        # global arrays (not the numpy module or a class, whose `ndim` is no number)
        if isinstance(getattr(obj, "ndim", None), int) and hasattr(obj, "dtype"):
            kinds[name] = ArrayKind(obj.ndim, obj.dtype.kind == "f")
    changed = True
    while changed:
        changed = False
        for s in ir.walk_stmts(stmts):
            if isinstance(s, ast.For):
                for bound in s.iter.args:
                    k = _atom_kind(bound, kinds)
                    if k is not None and k not in (INT, BOOL):
                        raise error_at(ir.note(s, "origin", None),
                                       f"range() with a {k} bound",
                                       "Pass integers to range(): int(n) or a.shape[0].")
                new = {s.target.id: INT}
            elif isinstance(s, ast.Assign) and not ir.is_store(s):
                new = {ir.target_name(s): _kind_of(s, kinds, env)}
            else:
                continue
            for var, k in new.items():
                if k is None:
                    continue
                joined = join(kinds.get(var), k, ir.note(s, "origin", None))
                if joined != kinds.get(var):
                    kinds[var] = joined
                    changed = True
    return kinds


def _floats_into_int_arrays(stmts, kinds):
    """Integer arrays adjit made (np.array([...]) of values that looked like integers when
    it was lowered) that receive a float where they are made: they become float arrays, as
    numpy's np.array of those values would be. A float the user's own code stores into one
    later (ir.NOTES: written) truncates, as numba's does. Returns whether any changed."""
    declared = set(DECLARED_ALLOCATORS.values())     # the user's: numba truncates a float
    allocs = {ir.target_name(s): s for s in ir.walk_stmts(stmts)
              if isinstance(s, ast.Assign) and not ir.is_store(s) and
              isinstance(s.value, ast.Call) and _calls(s.value, INT_ALLOCATORS) and
              not _calls(s.value, declared)}
    changed = False
    for s in ir.walk_stmts(stmts):
        if ir.is_store(s) and s.targets[0].value.id in allocs and \
                not ir.note(s, "written", False) and _atom_kind(s.value, kinds) == FLOAT:
            alloc = allocs.pop(s.targets[0].value.id)
            alloc.value.func = ast.Attribute(value=ast.Name(id="np", ctx=ast.Load()),
                                             attr="empty", ctx=ast.Load())
            changed = True
    return changed


def _check_complete(stmts, kinds):
    """No variable is left without a kind (activity would silently treat it as a constant),
    and every array index is an integer."""
    for s in ir.walk_stmts(stmts):
        if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and \
                ir.note(s.value, "opaque", None) == ("none",) and \
                not ir.note(s.value, "unwritten", False):
            for a in s.value.args:
                if isinstance(a, ast.Name) and is_float_kind(kinds.get(a.id)) and \
                        is_array(kinds.get(a.id)):
                    raise error_at(ir.note(s, "origin", None), "a call to "
                                   f"`{ast.unparse(s.value.func)}` for its effect, with the "
                                   f"float array `{a.id}`, which it may change",
                                   "adjit cannot see what it writes: write the change as "
                                   "code adjit can read, or call it on a copy.")
        if not isinstance(s, ast.Assign):
            continue
        origin = ir.note(s, "origin", None)
        target = ir.target_name(s)
        if target is not None and kinds.get(target) is None:
            raise error_at(origin, f"adjit cannot tell what '{target}' holds (a float, an "
                           "integer or an array)", "Give it a value whose type is known "
                           "where it is first assigned (0.0 for a float, 0 for an integer).")
        if ir.is_store(s) and isinstance(s.targets[0].value, ast.Name):
            base = kinds.get(s.targets[0].value.id)
            if not is_array(base):
                # numba refuses it; left alone, the store would be lost (a helper's `o[i] =`
                # given an element out[j] writes nothing the gradient sees)
                what = "a value that is not a number or an array" if base == OTHER else \
                    f"a {base} value" if base else "a value of unknown type"
                raise error_at(origin, f"an indexed store into {what}", "Store only into "
                               "arrays: pass the array (or a slice of it, out[j:j + 1]) "
                               "where an element was passed.")
        subs = [s.targets[0]] if ir.is_store(s) else \
            [s.value] if isinstance(s.value, ast.Subscript) and \
            isinstance(s.value.value, ast.Name) else []
        for sub in subs:
            for atom in ir.index_atoms(sub):
                k = _atom_kind(atom, kinds)
                if k not in (INT, BOOL):
                    raise error_at(origin, f"an array index `{ast.unparse(atom)}` that is "
                                   f"{'a ' + str(k) if k else 'not known to be an integer'}",
                                   "Index arrays with integers: int(x), or an integer array "
                                   "(np.array([0, 2]) of ints).")


def _calls(call, table):
    func = call.func
    return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
        func.value.id == "vec" and any(getattr(f, "__name__", None) == func.attr
                                       for f in table)


def _opaque_kind(stmt, prim, kinds):
    """The kind of a call with no derivative rule: numba's type of it (rules/opaque.py)."""
    def described(a, in_tuple=False):
        if isinstance(a, ast.Constant):
            return opaque.number_descriptor(a.value) if in_tuple else ("const", a.value)
        if isinstance(a, ast.Tuple):    # (a grid passed to an @overload'ed function)
            items = tuple(described(e, True) for e in a.elts)
            return None if None in items else ("tuple", items)
        kind = kinds.get(a.id) if isinstance(a, ast.Name) else None
        if kind is None:
            return None
        return ("array", kind.ndim, kind.dtype) if is_array(kind) else \
            ("b",) if kind == BOOL else ("i", "uint64") if isinstance(kind, _Unsigned) \
            else ("i",) if kind == INT else ("f",)

    descs = [described(a) for a in stmt.value.args]
    if None in descs:
        return None
    try:
        desc = opaque.result(prim.obj, tuple(descs))
    except opaque.Untyped as exc:
        raise error_at(ir.note(stmt, "origin", None), "a call with no derivative rule that "
                       f"numba does not compile for these arguments ({exc})",
                       "Call it as numba accepts it.") from None
    if desc is None or desc[0] in ("tuple", "none"):
        return OTHER
    if desc[0] == "array":
        return ArrayKind(desc[1], desc[2] == "f", desc[2])
    if desc == ("i", "uint64"):
        return UINT64
    return {"f": FLOAT, "i": INT, "b": BOOL}[desc[0]]


def _atom_kind(atom, kinds):
    if isinstance(atom, ast.Constant):
        v = atom.value
        return BOOL if isinstance(v, bool) else INT if isinstance(v, int) else FLOAT
    return kinds.get(atom.id)


def _kind_of(stmt, kinds, env):
    prim = classify(stmt.value, env)
    ops = [_atom_kind(a, kinds) for a in prim.operands]
    origin = ir.note(stmt, "origin", None)
    if prim.kind in ("compare",):
        return BOOL
    if prim.kind in ("shape", "len"):
        return INT
    if prim.kind == "copy":
        return ops[0]
    if prim.kind == "copyarr":
        return ops[0]
    if prim.kind == "arrayop":
        try:
            ndim, dtype = ARRAY_RULES[prim.obj].result(
                [(k.ndim, k.is_float) if is_array(k) else (0, k == FLOAT) for k in ops])
        except Refused as exc:
            raise error_at(origin, *exc.args) from None
        if not ndim:    # a number (a custom_vjp function's result)
            return FLOAT if dtype == "f" else INT
        return ArrayKind(ndim, dtype == "f")
    if prim.kind == "opaque":
        return _opaque_kind(stmt, prim, kinds)
    if prim.kind == "inactive":
        dims = [("tuple", len(a.elts)) if isinstance(a, ast.Tuple) else
                (kinds[a.id].ndim if isinstance(a, ast.Name) and is_array(kinds.get(a.id))
                 else 0) for a in stmt.value.args]
        ndim, dtype = INACTIVE[prim.obj].result(dims)
        if ndim:
            return ArrayKind(ndim, dtype == "f", dtype)
        return FLOAT if dtype == "f" else INT
    if prim.kind == "alloc" and prim.obj in (np.eye, np.identity):
        return ArrayKind(2)
    if prim.kind == "alloc" and prim.obj in INT_ALLOCATORS:
        shape = stmt.value.args[0]
        ndim = len(shape.elts) if isinstance(shape, ast.Tuple) else 1
        return ArrayKind(ndim, False, INT_ALLOCATORS[prim.obj])
    if prim.kind == "alloc":
        shape = stmt.value.args[0]
        if isinstance(shape, ast.Tuple):
            return ArrayKind(len(shape.elts))
        like = kinds.get(shape.id) if isinstance(shape, ast.Name) else INT
        if is_array(like) and ALLOCATORS.get(prim.obj) == "like":
            # np.zeros_like(idx) is numba's array of idx's dtype: an integer one truncates
            # the floats stored into it and carries no derivative
            return ArrayKind(like.ndim, like.is_float, like.dtype)
        return ArrayKind(like.ndim) if is_array(like) else ArrayKind(1)
    if prim.kind == "load":
        arr = ops[0]
        if arr is None:
            return None
        if not is_array(arr):
            what = "a value that is not a number or an array (None, a string, ...)" \
                if arr == OTHER else f"a {arr} value"
            raise error_at(origin, f"indexing {what}", "Index only numpy arrays.")
        if len(prim.operands) - 1 != arr.ndim:
            raise error_at(origin, f"indexing a {arr.ndim}-D array with "
                           f"{len(prim.operands) - 1} index(es)",
                           "Index every dimension: a[i] for 1-D, a[i, j] for 2-D arrays.")
        return FLOAT if arr.is_float else INT
    if any(is_array(k) for k in ops):
        if prim.kind == "stop":
            return ops[0]
        raise error_at(origin, "a scalar function (math.*, abs, min, max, float) applied to "
                       "a whole array", "Use the numpy function (np.exp(x), np.abs(x), "
                       "np.maximum(a, b)) or a loop over the elements.")
    if any(k is None for k in ops):
        return None
    if OTHER in ops:
        raise error_at(origin, "an operation on a value adjit cannot type",
                       "Use float or int scalars and float64 arrays.")
    result = prim.rule.result
    if result == "first":
        return ops[0]
    if result == "join":
        out = None
        for k in ops:
            out = join(out, k)
        if out == BOOL and not (isinstance(stmt.value, ast.Call)):
            return INT
        return out
    return {"float": FLOAT, "int": INT, "bool": BOOL}[result]


def kind_of_constant(value):
    """The kind of a constant result (`return 0.0`, `return 1`)."""
    if isinstance(value, bool):
        return "bool"
    return "int" if isinstance(value, int) else FLOAT
