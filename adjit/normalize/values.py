"""Values the normalizer passes around besides atoms and lazy arrays."""
import ast
import collections
import enum

import numba
import numpy as np

from .. import ir


Copied = collections.namedtuple("Copied", "bases target made user origin line stopped")
"""An array adjit copies where Python's name is the array itself (ctx.frozen): `target`
holds a copy of `bases` made by the statements `made` (with the statements inside them), as
the user's name `user` (None for an unnamed value) at `origin`; `line` is the construct's
line. `stopped`: the copy is `stop_gradient` of an array (vectorize.materialize_into),
else a join's (join_arrays)."""


class Shape:
    """`a.shape`, which only tuple unpacking, indexing and shape arguments may consume:
    the sizes of an array variable, or the size atoms of a view or expression."""

    def __init__(self, array=None, atoms=None, ndim=None):
        self.array = array
        self.atoms = atoms
        self.ndim = ndim if atoms is None else len(atoms)

    def item(self, k):
        """Size k as a right-hand side (`a.shape[k]`) or an atom."""
        if self.atoms is not None:
            return self.atoms[k]
        return ast.Subscript(value=ast.Attribute(value=ir.name(self.array), attr="shape",
                                                 ctx=ast.Load()),
                             slice=ir.const(k), ctx=ast.Load())


class TupleValue:
    """A tuple written out: its items (atoms, views, tuples). A named tuple (a
    collections.namedtuple argument or one built in the code) also has its field names,
    `fields`, which `p.alpha` reads by position as numba does."""

    def __init__(self, items, fields=None):
        self.items = items
        self.fields = fields


class RecordValue:
    """A record array (normalize/record_arrays.py): one array atom per field, as
    [(field, atom)]. Only ever passed to a helper, whose body then reads the fields'
    arrays."""

    def __init__(self, fields):
        self.fields = fields


class FunctionValue:
    """A function as a value (`e = math.exp`, a helper passed to a helper `rk4(rhs, y, h)`):
    only ever called; each call is a call of `obj` itself."""

    def __init__(self, obj, spelled):
        self.obj = obj
        self.spelled = spelled          # the user's spelling, for messages


class DtypeValue:
    """A dtype as a value (`kernel(values, np.float64)`, pandas' `result_dtype` parameter):
    only ever given to an allocation's dtype (`np.empty(n, dtype=result_dtype)`) or passed
    on to another helper; a constant, as numba makes it."""

    def __init__(self, dtype, spelled):
        self.dtype = dtype
        self.spelled = spelled          # the user's spelling, for messages


class EnumValue:
    """A member of a plain enum.Enum (`OptionTypes.EUROPEAN_CALL`, or an argument given
    one): `atom` its value (a constant, or the argument's name, which the gradient is
    passed the value in), `cls` its class. Used as numba lets a member be used: compared
    (==, !=) with members of its own class, read by `.value`, bound to a name once, or
    passed to a helper; any other use is refused (Python and numba do not make it a
    number)."""

    def __init__(self, atom, cls, spelled):
        self.atom = atom
        self.cls = cls
        self.spelled = spelled          # the user's spelling, for messages


def plain_enum(obj):
    """Whether `obj` is a member of a plain enum.Enum (an IntEnum's members are ints, read
    as the ints they are)."""
    return isinstance(obj, enum.Enum) and not isinstance(obj, int)


def plain_enum_type(t):
    """Whether the numba type `t` is a plain enum.Enum's member's (not an IntEnum's)."""
    return isinstance(t, numba.types.EnumMember) and \
        not isinstance(t, numba.types.IntEnumMember)


def enum_member(obj):
    """Whether `obj` is a member of a plain enum.Enum whose value is an int or a float."""
    return plain_enum(obj) and type(obj.value) in (int, float)


def dtype_constant(obj):
    """The numpy dtype a global object names (np.float64, numba.float64, np.dtype('f8')),
    else None."""
    try:
        if isinstance(obj, type) and issubclass(obj, np.generic):
            return np.dtype(obj)
        if isinstance(obj, np.dtype):
            return obj
        if isinstance(obj, numba.types.Number):
            return np.dtype(numba.np.numpy_support.as_dtype(obj))
    except (TypeError, ValueError, NotImplementedError, numba.core.errors.NumbaError):
        return None
    return None


class NoneValue:
    """None, as a helper's optional argument holds it (`def f(x, w=None)`): only ever
    compared, `w is None` (a constant: the other branch goes, as numba prunes it)."""


NONE = NoneValue()


class NoResult(NoneValue):
    """The value of a call to a helper that returns nothing (None): its call is a statement
    (it writes into arrays it is given); used as a value it is refused, as numba cannot
    compute with None either (it was 0.0)."""

    def __init__(self, name):
        self.name = name


class TypeOf:
    """`type(v)` of a number (`T = type(x)`, `type(scale)`): only ever called, `T(0.5)`,
    which converts to v's type (float32, float64 or an integer type, as numba does)."""

    def __init__(self, atom):
        self.atom = atom


def left_out(arg):
    """Whether a call's argument (an AST node from call_arguments, or None) is left out or
    written None: numpy's default for it."""
    return arg is None or (isinstance(arg, ast.Constant) and arg.value is None)


def assigned_user_names(stmts):
    names = set()
    for s in stmts:
        for node in ir.walk(s):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return names
