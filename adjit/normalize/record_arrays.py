"""Record arrays (numpy structured arrays of float fields) as numba code reads them.

numba compiles `data[i].x`, `data[i]['x']`, `data.x` and `data['x']` on an array of
records. To the passes each field is an array of its own: the derivative takes one
parameter per field of a record-array argument (`split_params`; the API passes the fields'
views and puts their gradients back into an array of the argument's dtype: `Adapter`), and
each function body, the argument's own and every helper's it is passed to, reads and writes
those arrays (`rewrite`: `data[i].x` becomes `data_x[i]`). A record array used any other way
(a record `r = data[i]`, `for r in data`, an operation on the whole array) is refused by
name, saying what to write instead."""
import ast
import collections
import copy

import numba
import numpy as np

from .. import ir
from ..errors import CallValueError, error_at
from .names import unused_name
from .values import RecordValue

FIELD_TYPES = (numba.types.float32, numba.types.float64)
"""The field types of a record array that carry derivatives (integer and boolean fields
are read as arrays too, and their gradients are 0)."""

LIKE = ("empty_like", "zeros_like", "ones_like", "full_like")
"""numpy's allocations shaped like an array: of a record array, given a float dtype."""

ATTRIBUTES = ("shape", "ndim", "size")
"""What a record array's fields share, read from its first field."""

_ADVICE = ("adjit reads a record array field by field: write data[i].x, data[i]['x'], "
           "data.x or data['x'] (and data.shape, len(data)); pass the array whole only to "
           "your own functions.")


def record_fields(t):
    """[(field, numba type)] of a numba record-array type, else None."""
    if isinstance(t, numba.types.Array) and isinstance(t.dtype, numba.types.Record):
        return list(t.dtype.members)
    return None


def unsupported_fields(t):
    """Why a record-array type's fields cannot be read (None when they can)."""
    members = record_fields(t)
    bad = [f"{name} ({ft})" for name, ft in members
           if not isinstance(ft, (numba.types.Float, numba.types.Integer, numba.types.Boolean))]
    if bad:
        return (f"an array of records with fields that are not numbers: {', '.join(bad)} "
                "(adjit reads fields of floats, integers and booleans)")
    return None


def _field_type(t, field):
    """The numba type of a view of one field of a record array of type `t`."""
    dtype = numba.np.numpy_support.as_dtype(t.dtype)
    sample = np.zeros((4,) * t.ndim, dtype)
    if t.layout == "F":
        sample = np.asfortranarray(sample)
    elif t.layout == "A":
        sample = sample[(slice(None, None, 2),) * t.ndim]
    view = numba.typeof(sample[field])
    # compiled code types the fields of an array of packed records (numpy's default, not
    # align=True) as unaligned views, which @njit callers pass (an aligned view, as numpy
    # makes it for a call from Python, converts to that type); a read-only array's fields
    # are read-only
    return numba.types.Array(view.dtype, view.ndim, view.layout, readonly=not t.mutable,
                             aligned=view.aligned and t.aligned)


class Layout:
    """Where the record-array arguments are among the user's arguments: [(index, numpy
    dtype, [field], [float field])]."""

    def __init__(self, entries, n_user):
        self.entries = entries
        self.n_user = n_user

    def split(self, args):
        """The user's arguments with each record array replaced by its fields' views."""
        out = []
        records = {k: fields for k, _, fields, _ in self.entries}
        for k, a in enumerate(args):
            if k in records:
                out.extend(a[f] for f in records[k])
            else:
                out.append(a)
        return out


def split_params(src, params, user_types, wrt, loc_error):
    """The function with each record-array parameter replaced by one parameter per field.
    Returns (src, params, types, wrt, subst, Layout) or None when no argument is a record
    array; `subst` binds each record parameter's name to its RecordValue."""
    if not any(record_fields(t) for t in user_types):
        return None
    tree = copy.deepcopy(src.tree)
    taken = set(src.locals) | {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    new_params, new_types, subst, entries = [], [], {}, []
    wrt_of = {}     # each parameter in argnums -> the parameters it becomes in argnums
    for k, (q, t) in enumerate(zip(params, user_types)):
        members = record_fields(t)
        if not members:
            new_params.append(q)
            new_types.append(t)
            wrt_of[q] = [q]
            continue
        if not any(ft in FIELD_TYPES for _, ft in members) and q in wrt:
            raise loc_error(src.tree, f"argument '{q}' in argnums is a record array with no "
                            "float64 or float32 field, which carries no derivative",
                            "Leave it out of argnums.")
        names = [unused_name(f"{q}_{field}", taken) for field, _ in members]
        new_params.extend(names)
        new_types.extend(_field_type(t, field) for field, _ in members)
        wrt_of[q] = [n for (_, ft), n in zip(members, names) if ft in FIELD_TYPES]
        subst[q] = RecordValue([(field, ir.name(n)) for (field, _), n in zip(members, names)])
        entries.append((k, numba.np.numpy_support.as_dtype(t.dtype),
                        [field for field, _ in members],
                        [field for field, ft in members if ft in FIELD_TYPES]))
    # the parameters in the tree: each record parameter's place taken by its fields
    for group in (tree.args.posonlyargs, tree.args.args, tree.args.kwonlyargs):
        replaced = []
        for a in group:
            if a.arg in subst:
                replaced.extend(ast.arg(arg=name.id, annotation=None)
                                for _, name in subst[a.arg].fields)
            else:
                replaced.append(a)
        group[:] = replaced
    # in argnums order: the split derivative returns its gradients in that order
    new_wrt = [n for q in wrt for n in wrt_of[q]]
    return (src.with_tree(tree, {}), new_params, new_types, new_wrt, subst,
            Layout(entries, len(params)))


def rewrite(src, subst):
    """`src` with its record arrays' field accesses written as reads and writes of one array
    per field, and `subst` with those arrays bound (the caller's, or the derivative's field
    parameters). Returns (src, subst); unchanged where `subst` holds no RecordValue."""
    records = {n: v for n, v in subst.items() if isinstance(v, RecordValue)}
    tree = copy.deepcopy(src.tree)
    taken = set(src.locals) | {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | \
        set(subst)
    allocated, dtypes = _allocated(src, tree, taken)
    frozen = _globals(src, tree, taken, set(subst), dtypes)
    allocated.update(frozen)
    if not records and not allocated:
        return src, subst
    local, subst = {}, dict(subst)
    for r, value in records.items():
        for field, atom in value.fields:
            local[r, field] = name = unused_name(f"{r}_{field}", taken)
            subst[name] = atom
    for r, fields in allocated.items():
        records[r] = RecordValue([(f, ast.Name(id=n, ctx=ast.Load())) for f, n in fields])
        local.update({(r, f): n for f, n in fields})
    rewriter = _Rewriter(src, records, local, taken, frozen)
    tree = rewriter.visit(tree)
    out = src.with_tree(tree, {**rewriter.classes, **dtypes})
    out.locals |= {n for (r, _), n in local.items() if r not in frozen} | \
        (set(records) - set(frozen))
    return out, subst


ALLOCATIONS = (np.zeros, np.empty)
"""numpy's allocations that make a record array of a structured dtype (numba's np.zeros
and np.empty take one)."""


def _allocated(src, tree, taken):
    """Record arrays the function's body allocates, `params = np.zeros(1, dtype=DT)` with
    DT a structured dtype of number fields (RRMPG's losses fill one from the optimizer's
    vector, `params[0]['x1'] = X[0]`, and pass `params[0]` to the model): each statement,
    at the top level of the body and the name's only binding, becomes one allocation per
    field (`params_x1 = np.zeros(params_shape, dtype=float64)`), which the rewrite then
    reads as it reads a record-array argument's fields. Returns ({name: [(field, array
    name)]}, the dtype names the new statements use)."""
    stores = collections.Counter(n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
                                 and isinstance(n.ctx, ast.Store))
    allocated, dtypes, body = {}, {}, []
    for s in tree.body:
        found = _record_allocation(src, s)
        if found is None or stores[s.targets[0].id] != 1:
            body.append(s)
            continue
        r, func, shape, dtype = found
        shape_name = unused_name(f"{r}_shape", taken)
        new = [ast.Assign(targets=[ast.Name(id=shape_name, ctx=ast.Store())], value=shape)]
        fields = []
        for field in dtype.names:
            name = unused_name(f"{r}_{field}", taken)
            kind = np.dtype(dtype.fields[field][0]).type
            spelled = f"_adjit_{np.dtype(kind).name}"
            dtypes[spelled] = kind
            call = ast.Call(func=ast.Attribute(value=ast.Name(id="_adjit_np", ctx=ast.Load()),
                                               attr=func.__name__, ctx=ast.Load()),
                            args=[ast.Name(id=shape_name, ctx=ast.Load())],
                            keywords=[ast.keyword(arg="dtype", value=ast.Name(
                                id=spelled, ctx=ast.Load()))])
            new.append(ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=call))
            fields.append((field, name))
        for x in new:
            ast.copy_location(x, s)
        body += new
        allocated[r] = fields
        dtypes["_adjit_np"] = np
    tree.body = body
    ast.fix_missing_locations(tree)
    return allocated, dtypes


def _globals(src, tree, taken, bound, extra):
    """Record arrays the body reads from module globals (`run_gr4j(prec, ..., PARAMS[0])`):
    numba freezes a global array as a constant, and adjit reads each field as a constant
    array of its own (bound in `extra`), as it reads a record-array argument's fields.
    Returns {name: [(field, array name)]}."""
    out = {}
    for n in ast.walk(tree):
        if not isinstance(n, ast.Name) or n.id in out or n.id in src.locals or n.id in bound:
            continue
        arr = src.resolve_name(n.id)
        if not isinstance(arr, np.ndarray) or not _number_fields(arr.dtype):
            continue
        fields = []
        for field in arr.dtype.names:
            name = unused_name(f"_{n.id}_{field}", taken)
            extra[name] = np.ascontiguousarray(arr[field])
            fields.append((field, name))
        out[n.id] = fields
    return out


def _record_allocation(src, s):
    """(name, np.zeros or np.empty, shape, dtype) of `name = np.zeros(shape, DT)` with DT
    (positional or dtype=) a structured dtype whose fields are numbers with names that are
    identifiers; else None."""
    if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and
            isinstance(s.targets[0], ast.Name) and isinstance(s.value, ast.Call)):
        return None
    call = s.value
    func = src.resolve(call.func)
    if not any(func is f for f in ALLOCATIONS) or not call.args or len(call.args) > 2:
        return None
    given = call.args[1] if len(call.args) == 2 else next(
        (k.value for k in call.keywords if k.arg == "dtype"), None)
    if given is None or any(k.arg not in ("dtype",) for k in call.keywords):
        return None
    dtype = src.resolve(given) if isinstance(given, (ast.Name, ast.Attribute)) else None
    if not isinstance(dtype, np.dtype) or not _number_fields(dtype):
        return None
    return s.targets[0].id, func, call.args[0], dtype


def _number_fields(dtype):
    """Whether `dtype` is a structured dtype whose fields are numbers (no sub-arrays, no
    nested records) with names that are identifiers: the record arrays adjit reads field by
    field."""
    return dtype.names is not None and all(
        f.isidentifier() and not dtype.fields[f][0].shape and not dtype.fields[f][0].names
        and dtype.fields[f][0].kind in "fiub" for f in dtype.names)


class _Rewriter(ast.NodeTransformer):
    def __init__(self, src, records, local, taken, frozen=()):
        self.src = src
        self.records = records
        self.local = local
        self.taken = taken
        self.frozen = frozen        # module-level record arrays: constants
        self.classes = {}       # spelled name -> the named tuple class of a record's fields
        self.spelled = {}       # record array -> the spelled name of its records' class

    def _record(self, node):
        return node.id if isinstance(node, ast.Name) and node.id in self.records else None

    def _field(self, r, field, node):
        if (r, field) not in self.local:
            fields = ", ".join(f for f, _ in self.records[r].fields)
            raise self.src.loc.error(node, f"the field `{field}` of the record array `{r}`, "
                                     f"which has the fields {fields}",
                                     "Read one of its fields.")
        return self.local[r, field]

    def _first(self, r):
        return self.local[r, self.records[r].fields[0][0]]

    def _refuse(self, r, node):
        raise self.src.loc.error(node, f"the record array `{r}` used as a whole "
                                 f"(`{ast.unparse(node)}`)", _ADVICE)

    def _whole_field_stored(self, r, node):
        if isinstance(node.ctx, ast.Store):     # (numba compiles neither form)
            raise self.src.loc.error(node, f"assigning a whole field of the record array "
                                     f"`{r}` (`{ast.unparse(node)} = ...`)",
                                     f"Assign into its elements: {ast.unparse(node)}[:] = v, "
                                     f"or {r}[i]['field'] = v in a loop.")

    @staticmethod
    def _field_name(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        return None

    def _element_field(self, base, field, node):
        """`data[i].x` / `data[i]['x']`: element i of the field's array (a read or a
        store, as `node` is)."""
        r = self._record(base.value)
        name = self._field(r, field, node)
        if r in self.frozen and isinstance(node.ctx, ast.Store):
            raise self.src.loc.error(node, f"writing into the module-level array '{r}'",
                                     "numba compiles a module-level array as a constant: "
                                     "allocate the record array in the function (or pass "
                                     "it as an argument) to write into it.")
        index = self.visit(base.slice)
        return ast.copy_location(ast.Subscript(value=ast.Name(id=name, ctx=ast.Load()),
                                               slice=index, ctx=node.ctx), node)

    def visit_Attribute(self, node):
        if isinstance(node.value, ast.Subscript) and self._record(node.value.value):
            return self._element_field(node.value, node.attr, node)
        r = self._record(node.value)
        if r is None:
            return self.generic_visit(node)
        if node.attr in ATTRIBUTES:
            return ast.copy_location(ast.Attribute(
                value=ast.Name(id=self._first(r), ctx=ast.Load()), attr=node.attr,
                ctx=node.ctx), node)
        if (r, node.attr) in self.local:
            self._whole_field_stored(r, node)
            return ast.copy_location(ast.Name(id=self.local[r, node.attr], ctx=node.ctx), node)
        if not hasattr(np.ndarray, node.attr):
            self._field(r, node.attr, node)         # (no such field: refused by name)
        return self._refuse(r, node)

    def visit_Subscript(self, node):
        field = self._field_name(node.slice)
        if field is not None and isinstance(node.value, ast.Subscript) and \
                self._record(node.value.value):
            return self._element_field(node.value, field, node)
        r = self._record(node.value)
        if r is None:
            return self.generic_visit(node)
        if field is not None:
            name = self._field(r, field, node)
            self._whole_field_stored(r, node)
            return ast.copy_location(ast.Name(id=name, ctx=node.ctx), node)
        return self._refuse(r, node)        # a record `data[i]` as a value of its own

    def visit_Call(self, node):
        obj = self.src.resolve(node.func)
        records = [a for a in node.args if self._record(a)] + \
            [k.value for k in node.keywords if self._record(k.value)]
        if not records:
            if _user_function(obj) and any(self._is_element(a) for a in
                                           node.args + [k.value for k in node.keywords]):
                return self._helper_call(node)
            return self.generic_visit(node)
        r = records[0].id
        if obj is len and len(node.args) == 1:
            node.args = [ast.Name(id=self._first(r), ctx=ast.Load())]
            return node
        name = getattr(obj, "__name__", None)
        if getattr(obj, "__module__", None) == "numpy" and name in LIKE and \
                node.args and self._record(node.args[0]):
            given = any(k.arg == "dtype" for k in node.keywords) or \
                len(node.args) > (2 if name == "full_like" else 1)
            if not given:
                raise self.src.loc.error(node, f"np.{name} of the record array `{r}` without "
                                         "a dtype (an array of records)",
                                         f"Give a float dtype: np.{name}({r}, "
                                         "dtype=np.float64) has the record array's shape.")
            node.args[0] = ast.Name(id=self._first(r), ctx=ast.Load())
            return self.generic_visit(node)
        if _user_function(obj):
            # passed whole to a helper: the helper's body is rewritten for it in turn
            return self._helper_call(node)
        return self._refuse(r, node)

    def _helper_call(self, node):
        """A call of a helper: record arrays passed whole, records `data[i]` as named
        tuples of their fields (_record_element), the other arguments rewritten."""
        def one(a):
            return a if self._record(a) else self._record_element(a) or self.visit(a)
        node.args = [one(a) for a in node.args]
        for k in node.keywords:
            k.value = one(k.value)
        node.func = self.visit(node.func)
        return node

    def _is_element(self, node):
        return isinstance(node, ast.Subscript) and self._record(node.value) is not None \
            and self._field_name(node.slice) is None

    def _record_element(self, node):
        """`data[i]` passed to a helper (RRMPG's `run_gr4j(prec, ..., params[0])`): a
        named tuple of the record's fields at i, which the helper reads as numba reads a
        record (`params['x1']`, `params.x1`); None for any other node."""
        if not self._is_element(node):
            return None
        r = node.value.id
        fields = [f for f, _ in self.records[r].fields]
        if r not in self.spelled:
            self.spelled[r] = spelled = unused_name(f"_{r}_record", self.taken)
            self.taken.add(spelled)
            self.classes[spelled] = collections.namedtuple(f"{r}_record", fields)
        spelled = self.spelled[r]
        index = self.visit(node.slice)
        items = [ast.Subscript(value=ast.Name(id=self.local[r, f], ctx=ast.Load()),
                               slice=copy.deepcopy(index), ctx=ast.Load()) for f in fields]
        return ast.copy_location(ast.Call(func=ast.Name(id=spelled, ctx=ast.Load()),
                                          args=items, keywords=[]), node)

    def visit_Name(self, node):
        r = self._record(node)
        if r is not None:
            if isinstance(node.ctx, ast.Store):
                raise self.src.loc.error(node, f"the record array `{r}` assigned again",
                                         "Assign to a new name.")
            self._refuse(r, node)
        return node


def _user_function(obj):
    """Whether `obj` is a function of the user's (a Python function or a numba dispatcher
    of one), which adjit inlines, rather than numpy's, math's or a builtin."""
    fn = getattr(obj, "py_func", obj)
    package = (getattr(fn, "__module__", None) or "").split(".")[0]
    return callable(fn) and hasattr(fn, "__code__") and \
        package not in ("numpy", "math", "builtins", "numba", "adjit", "scipy")


class Adapter:
    """Calls a derivative whose record-array arguments were split into fields: splits the
    arguments (and jvp's tangents) and puts the fields' gradients back into arrays of each
    argument's dtype, shaped as the user asked (a bare gradient for an int argnums)."""

    def __init__(self, layout, user_params, wrt_user, derivative, with_value, single,
                 split_tangents):
        self.layout = layout
        self.records = {user_params[k]: (dtype, floats)       # (the differentiated fields)
                        for k, dtype, _, floats in layout.entries}
        self.wrt_user = wrt_user            # the user's argnums parameters, in order
        self.derivative = derivative
        self.with_value = with_value
        self.single = single
        self.split_tangents = split_tangents
        self.in_wrt = any(q in self.records for q in wrt_user)

    def _expand(self, values):
        """The user's per-argnums values (tangents) with each record's split into fields."""
        out = []
        for q, v in zip(self.wrt_user, values):
            if q in self.records:
                dtype = self.records[q][0]
                if not isinstance(v, np.ndarray) or v.dtype != dtype:
                    got = f"an array of {v.dtype}" if isinstance(v, np.ndarray) else \
                        f"a {type(v).__name__}"
                    raise CallValueError(_tangent_kind(q, got, dtype), _TANGENT_ADVICE)
                out.extend(v[f] for f in self.records[q][1])
            else:
                out.append(v)
        return out

    def call(self, raw, args):
        user, trailing = args[:self.layout.n_user], args[self.layout.n_user:]
        split = self.layout.split(user)
        if self.derivative == "tangent":
            if self.split_tangents:
                trailing = self._expand(trailing)
            elif trailing:
                tangents = [trailing[0]] if self.single else per_argument(trailing[0],
                                                                           self.wrt_user)
                if self.in_wrt:
                    expanded = self._expand(tangents)
                    # (one float field for an int argnums: the split derivative's one
                    # tangent, not a tuple)
                    trailing = [expanded[0] if self.single and len(expanded) == 1 else
                                tuple(expanded)]
            return raw(*split, *trailing)
        return put_together(raw(*split, *trailing), self, self._record_gradient)

    def _record_gradient(self, q, grads, k):
        """The record array q's gradient from the fields' gradients grads[k:], and the next
        k (None where q is not a record array)."""
        if q not in self.records:
            return None
        dtype, fields = self.records[q]
        parts = grads[k:k + len(fields)]
        g = np.zeros(parts[0].shape, dtype)
        for f, part in zip(fields, parts):
            g[f] = part
        return g, k + len(fields)


def per_argument(tangent, wrt_user):
    """The tangents of a jvp in a tuple argnums: a tuple of one per argument."""
    if not isinstance(tangent, tuple) or len(tangent) != len(wrt_user):
        got = f"a tuple of {len(tangent)}" if isinstance(tangent, tuple) else \
            f"a {type(tangent).__name__}"
        raise CallValueError(f"adjit: the tangent is {got} where {len(wrt_user)} arguments "
                             "are in argnums", f"Pass a tuple of {len(wrt_user)} directions, "
                             "one per argument in argnums, each shaped like its argument.")
    return list(tangent)


_TANGENT_ADVICE = "Pass a record array of the argument's dtype and shape (np.zeros_like(data))."


def _tangent_kind(q, got, dtype):
    return f"adjit: the tangent of {q} is {got} where {q} is a record array of dtype {dtype}"


def check_tangent_type(v, t, where, origin):
    """A tangent that @njit code passes for the record-array argument `where` (numba type
    `t`) is a record array of its dtype, read from the numba types (as Adapter._expand reads
    the values in Python; its shape is checked when the derivative runs)."""
    if not isinstance(v, numba.types.Array) or v.dtype != t.dtype:
        raise error_at(origin, _tangent_kind(where, str(v), numba.np.numpy_support.as_dtype(
            t.dtype))[len("adjit: "):], _TANGENT_ADVICE)


def put_together(out, adapter, gradient_of):
    """A split derivative's result `out` as the user's argnums ask for it: each argument's
    gradient from `gradient_of(q, grads, k)` -> (gradient, next k), or None for an argument
    that was not split (its gradient is grads[k]); `adapter` says whether the value comes
    first (with_value) and whether an int argnums asked for the gradient alone (single)."""
    value, grads = (out[0], out[1]) if adapter.with_value else (None, out)
    if not isinstance(grads, tuple):
        grads = (grads,)
    merged, k = [], 0
    for q in adapter.wrt_user:
        made = gradient_of(q, grads, k)
        if made is None:
            made = grads[k], k + 1
        g, k = made
        merged.append(g)
    result = merged[0] if adapter.single else tuple(merged)
    return (value, result) if adapter.with_value else result


def entry_names(params):
    """The names a derivative's @njit entry (entry_source) uses for itself, apart from the
    user's parameter names: {"own": the prefix, "raw", "out", "g", "np"}."""
    own = "_" * (1 + max((len(q) - len(q.lstrip("_")) for q in params), default=0))
    return dict({n: own + n for n in ("raw", "out", "g", "np")}, own=own)


def entry_source(adapter, signature, args, grads_tuple, gradient_of, names):
    """The source of `def entry(<signature>)` calling the split function's derivative
    (names["raw"]) with the expressions `args` and, in reverse mode with a split argument
    in argnums, putting the gradients together as put_together does in Python:
    `gradient_of(q, k, lines)` -> (expression, next k) for an argument that was split (it
    may append statements to `lines`), None for one whose gradient is raw's k-th.
    `grads_tuple`: whether raw returns its gradients as a tuple."""
    call = f"{names['raw']}({', '.join(args)})"
    lines = [f"def entry({signature}):"]
    if adapter.derivative == "tangent" or not adapter.in_wrt:
        return "\n".join(lines + [f"    return {call}"]) + "\n"
    out, g = names["out"], names["g"]
    lines.append(f"    {out} = {call}")
    grads = f"{out}[1]" if adapter.with_value else out
    lines.append(f"    {g} = {grads if grads_tuple else f'({grads},)'}")
    merged, k = [], 0
    for q in adapter.wrt_user:
        made = gradient_of(q, k, lines)
        if made is None:
            made = f"{g}[{k}]", k + 1
        expression, k = made
        merged.append(expression)
    result = merged[0] if adapter.single else "(" + "".join(f"{m}, " for m in merged) + ")"
    lines.append(f"    return ({out}[0], {result})" if adapter.with_value else
                 f"    return {result}")
    return "\n".join(lines) + "\n"


def tangent_argument(adapter, given, parts_of, bare_one):
    """The source of the tangent an @njit entry passes to the split function's jvp: the
    tangents `given` (source, one per argument in argnums) with each split argument's
    replaced by its parts (`parts_of(q, t)`: a list of sources, or None for an argument
    passed whole), as one tuple; with `bare_one`, a single argument in argnums with one
    part passes it bare (the record split gives a record of one float field one argument
    in argnums, where the tuple split keeps a tuple of argnums)."""
    expanded = []
    for q, t in zip(adapter.wrt_user, given):
        parts = parts_of(q, t)
        expanded.extend([t] if parts is None else parts)
    if bare_one and adapter.single and len(expanded) == 1:
        return expanded[0]
    return "(" + "".join(f"{e}, " for e in expanded) + ")"


def njit_entry(adapter, params, extra, raw, grads_tuple):
    """The derivative as @njit code calls it: a function of the user's arguments (and of the
    trailing tangent or cotangent, the parameter `extra`) that passes each record array's
    fields (views) to `raw` (the derivative of the split function, compiled) and, in
    reverse mode, gives each record array in argnums its gradient as an array of its dtype:
    what Adapter.call does in Python, written out (numba compiles it into the caller).
    `grads_tuple`: whether raw returns its gradients as a tuple. Returns (source,
    namespace)."""
    layout, names = adapter.layout, entry_names(params)
    user = params[:layout.n_user]
    fields = {user[k]: every for k, _, every, _ in layout.entries}
    split = []
    for q in user:
        if q in fields:
            split.extend(f"{q}[{f!r}]" for f in fields[q])
        else:
            split.append(q)
    trailing = [extra] if extra else []
    if adapter.derivative == "tangent" and adapter.in_wrt:
        given = [extra] if adapter.single else [f"{extra}[{j}]" for j in
                                                range(len(adapter.wrt_user))]
        trailing = [tangent_argument(
            adapter, given, lambda q, t: [f"{t}[{f!r}]" for f in adapter.records[q][1]]
            if q in adapter.records else None, bare_one=True)]

    def gradient_of(q, k, lines):
        if q not in adapter.records:
            return None
        made = f"{names['own']}rec_{q}"
        lines.append(f"    {made} = {names['np']}.zeros({q}.shape, {q}.dtype)")
        for f in adapter.records[q][1]:
            lines.append(f"    {made}[{f!r}][...] = {names['g']}[{k}]")
            k += 1
        return made, k

    return entry_source(adapter, ", ".join(params), split + trailing, grads_tuple,
                        gradient_of, names), {names["raw"]: raw, names["np"]: np}
