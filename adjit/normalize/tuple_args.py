"""Tuple arguments, as numba code passes them: `u, v = state`, `state[0]`, `args[-1]`,
`len(args)`, `rhs(y, t, *args)`, a tuple handed on to a helper, tuples in tuples
(`(W1, b1), (W2, b2) = params`).

Each tuple parameter becomes one parameter per element (`state_0`, `state_1`; nested tuples
flattened: `params_1_0`), and the function's body starts by building the tuple again from
them (`state = (state_0, state_1)`), which the passes read as a tuple written out:
unpacked, indexed and passed to helpers as any local tuple is. The API's Adapter splits
the arguments and gives back, for a tuple in argnums, a tuple of the same structure: each
float or float-array element's gradient, and a zero of the element's own type for integers
and booleans (they carry no derivative, as an integer field of a record array).
"""
import ast
import copy

import numba
import numpy as np

from .. import ir
from ..errors import CallValueError, error_at
from .names import unused_name
from .record_arrays import entry_names, entry_source, per_argument, put_together, \
    tangent_argument

_ADVICE = ("Pass tuples of numbers and numpy arrays (and tuples of such tuples); pass "
           "anything else as an argument of its own.")


def is_tuple(t):
    return isinstance(t, numba.types.BaseTuple)


def _leaf_problem(t):
    if isinstance(t, (numba.types.Float, numba.types.Integer, numba.types.Boolean)):
        return None
    if isinstance(t, numba.types.Array) and isinstance(
            t.dtype, (numba.types.Float, numba.types.Integer, numba.types.Boolean)):
        return None
    return str(t)


def unsupported(t):
    """Why a tuple argument of numba type `t` cannot be taken (None when it can)."""
    for e in t:
        if is_tuple(e):
            problem = unsupported(e)
            if problem:
                return problem
        elif _leaf_problem(e):
            return f"a tuple holding {_leaf_problem(e)}", _ADVICE
    return None


def is_float_type(t):
    dtype = t.dtype if isinstance(t, numba.types.Array) else t
    return isinstance(dtype, numba.types.Float)


def _leaves(t, path=()):
    """[(path, numba type)] of a tuple type, depth first."""
    out = []
    for k, e in enumerate(t):
        if is_tuple(e):
            out.extend(_leaves(e, path + (k,)))
        else:
            out.append((path + (k,), e))
    return out


class Layout:
    """Where the tuple arguments are among the user's arguments: {index: numba type};
    `parts`: each element's parameter -> (the argument, the element as the user reads it:
    "the field 'CTG'" of a named tuple or a record passed as an np.void, "item 0")."""

    def __init__(self, tuples, n_user, parts=None):
        self.tuples = tuples
        self.n_user = n_user
        self.parts = parts or {}

    def split(self, args):
        """The user's arguments with each tuple replaced by its elements, depth first."""
        out = []
        for k, a in enumerate(args):
            if k in self.tuples:
                out.extend(_flatten(a))
            else:
                out.append(a)
        return out


def _at_path(value, path):
    for k in path:
        value = value[k]
    return value


def _flatten(value):
    out = []
    for e in value:
        if isinstance(e, tuple):
            out.extend(_flatten(e))
        else:
            out.append(e)
    return out


def split_params(src, params, user_types, wrt, loc_error):
    """The function with each tuple parameter replaced by one parameter per element and its
    body starting with the tuple built from them. Returns (src, params, types, wrt, Layout)
    or None when no argument is a tuple."""
    if not any(is_tuple(t) for t in user_types):
        return None
    tree = copy.deepcopy(src.tree)
    taken = set(src.locals) | {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    new_params, new_types, built, tuples, classes, parts = [], [], {}, {}, {}, {}
    wrt_of = {}     # each parameter -> the parameters it becomes in argnums
    for k, (q, t) in enumerate(zip(params, user_types)):
        if not is_tuple(t):
            new_params.append(q)
            new_types.append(t)
            wrt_of[q] = [q]
            continue
        problem = unsupported(t)
        if problem:
            what, advice = problem
            raise loc_error(src.tree, f"argument '{q}' is {what}", advice)
        leaves = _leaves(t)
        if q in wrt and not any(is_float_type(e) for _, e in leaves):
            raise loc_error(src.tree, f"argument '{q}' in argnums is {t}, which carries no "
                            "derivative", "Pass a float or a float array in it (2.0, not 2), or "
                            "leave it out of argnums.")
        names = {path: unused_name(f"{q}_{'_'.join(map(str, path))}", taken)
                 for path, _ in leaves}
        for path, _ in leaves:
            parts[names[path]] = (q,) + _part_of(q, t, path)
        new_params.extend(names.values())
        new_types.extend(e for _, e in leaves)
        wrt_of[q] = [names[path] for path, e in leaves if is_float_type(e)]
        built[q] = _written_out(t, (), names, classes, taken)
        tuples[k] = t
    line = tree.body[0] if tree.body else tree
    for group in (tree.args.posonlyargs, tree.args.args, tree.args.kwonlyargs):
        replaced = []
        for a in group:
            if a.arg in built:
                replaced.extend(ast.arg(arg=n, annotation=None)
                                for n in _names_of(built[a.arg]))
            else:
                replaced.append(a)
        group[:] = replaced
    prologue = [ast.copy_location(ast.Assign(targets=[ast.Name(id=q, ctx=ast.Store())],
                                             value=value, lineno=line.lineno), line)
                for q, value in built.items()]
    tree.body[:0] = prologue
    ast.fix_missing_locations(tree)
    # in argnums order: the split derivative returns its gradients in that order
    new_wrt = [n for q in wrt for n in wrt_of[q]]
    return (src.with_tree(tree, classes), new_params, new_types, new_wrt,
            Layout(tuples, len(params), parts))


def _part_of(q, t, path):
    """An element of the tuple argument `q` of type `t`, as the user reads it: what it is
    ("the field 'CTG'" of a named tuple or of a record passed as an np.void, "item 1") and
    how it is written (`params['CTG']`, `p.CTG`, `state[1]`, `args[1][0]`)."""
    spelled, named = q, None
    for k in path:
        cls = named_class(t)
        named = cls._fields[k] if cls is not None else None
        spelled += f"[{k}]" if named is None else f"['{named}']" \
            if getattr(cls, "__adjit_record__", False) else f".{named}"
        t = t[k]
    if len(path) == 1:
        return (f"the field '{named}'" if named else f"item {path[0]}"), spelled
    return f"the element `{spelled}`", spelled


def named_class(t):
    """The collections.namedtuple class of a named tuple type, else None."""
    if isinstance(t, (numba.types.NamedTuple, numba.types.NamedUniTuple)):
        return t.instance_class
    return None


def _written_out(t, path, names, classes, taken):
    """The tuple (of type `t`) built again from its elements' parameters: `(p_0, p_1)`, or
    `Params(p_0, p_1)` for a named tuple, its class given a name in `classes`."""
    items = [_written_out(e, path + (k,), names, classes, taken) if is_tuple(e) else
             ir.name(names[path + (k,)]) for k, e in enumerate(t)]
    cls = named_class(t)
    if cls is None:
        return ast.Tuple(elts=items, ctx=ast.Load())
    spelled = next((n for n, c in classes.items() if c is cls), None) or \
        unused_name(f"_{cls.__name__}", taken)
    classes[spelled] = cls
    taken.add(spelled)
    return ast.Call(func=ir.name(spelled), args=items, keywords=[])


def _names_of(node):
    for e in (node.args if isinstance(node, ast.Call) else node.elts):
        if isinstance(e, (ast.Tuple, ast.Call)):
            yield from _names_of(e)
        else:
            yield e.id


class Adapter:
    """Calls a derivative whose tuple arguments were split into their elements: splits the
    arguments (and jvp's tangents) and gives each tuple in argnums its gradient as a tuple of
    the same structure. `inner`: the record arrays' Adapter of the split function, if any."""

    def __init__(self, layout, user_params, wrt_user, derivative, with_value, single,
                 split_tangents, inner=None):
        self.layout = layout
        self.tuples = {user_params[k]: k for k in layout.tuples}
        self.wrt_user = wrt_user
        self.derivative = derivative
        self.with_value = with_value
        self.single = single
        self.split_tangents = split_tangents
        self.inner = inner
        self.in_wrt = any(q in self.tuples for q in wrt_user)

    def _expand(self, values, user):
        """Per-argnums values (tangents) with each tuple's float elements in its place."""
        out = []
        for q, v in zip(self.wrt_user, values):
            if q in self.tuples:
                k = self.tuples[q]
                _check_tangent(v, user[k], self.layout.tuples[k], q)
                out.extend(_at_path(v, path) for path, e in _leaves(self.layout.tuples[k])
                           if is_float_type(e))
            else:
                out.append(v)
        return out

    def _run(self, raw, args):
        if self.inner is not None:
            return self.inner.call(raw, tuple(args))
        return raw(*args)

    def call(self, raw, args):
        user, trailing = args[:self.layout.n_user], list(args[self.layout.n_user:])
        split = self.layout.split(user)
        if self.derivative == "tangent":
            if self.in_wrt:
                if self.split_tangents:
                    trailing = self._expand(trailing, user)
                elif trailing:
                    tangents = [trailing[0]] if self.single else per_argument(
                        trailing[0], self.wrt_user)
                    trailing = [tuple(self._expand(tangents, user))]
            return self._run(raw, split + trailing)
        out = self._run(raw, split + trailing)
        if not self.in_wrt:
            return out

        def tuple_gradient(q, grads, k):
            if q not in self.tuples:
                return None
            k_user = self.tuples[q]
            return _rebuilt(user[k_user], self.layout.tuples[k_user], grads, k)
        return put_together(out, self, tuple_gradient)


def _check_tangent(v, arg, t, where):
    """A tangent given for the tuple argument `arg` (numba type `t`) has its structure: a
    tuple of as many elements at every level, an array of the same shape for a float array,
    a number for a float (anything for an element that carries no derivative)."""
    if is_tuple(t):
        if not isinstance(v, tuple) or len(v) != len(t):
            got = f"a tuple of {len(v)}" if isinstance(v, tuple) else _a(v)
            raise CallValueError(f"adjit: the tangent of {where} is {got} where {where} is "
                                 f"a tuple of {len(t)}",
                                 "Pass a tangent of the argument's structure: a tuple of the "
                                 "same length at every level, an array of each float array's "
                                 "shape and a number for each float.")
        for j, (vj, aj, tj) in enumerate(zip(v, arg, t)):
            _check_tangent(vj, aj, tj, f"{where}[{j}]")
        return
    if not is_float_type(t):
        return
    if isinstance(arg, np.ndarray):
        if not isinstance(v, np.ndarray) or v.shape != arg.shape:
            got = f"shape {v.shape}" if isinstance(v, np.ndarray) else _a(v)
            raise CallValueError(f"adjit: the tangent of {where} has {got} where {where} "
                                 f"has shape {arg.shape}", f"Pass an array of {where}'s shape.")
    elif isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.number)):
        raise CallValueError(f"adjit: the tangent of {where} is {_a(v)} where {where} is a "
                             "number", "Pass a number.")


def check_tangent_type(v, t, where, origin):
    """A tangent that @njit code passes for the tuple argument `where` (numba type `t`) has
    its structure, read from the numba types: as _check_tangent reads the values in Python
    (the shapes of arrays are checked when the derivative runs)."""
    if is_tuple(t):
        if not is_tuple(v) or len(v) != len(t):
            got = f"a tuple of {len(v)}" if is_tuple(v) else f"{v}"
            raise error_at(origin, f"the tangent of {where} is {got} where {where} is a tuple "
                           f"of {len(t)}", "Pass a tangent of the argument's structure: a "
                           "tuple of the same length at every level, an array of each float "
                           "array's shape and a number for each float.")
        for j, (vj, tj) in enumerate(zip(v, t)):
            check_tangent_type(vj, tj, f"{where}[{j}]", origin)
        return
    if not is_float_type(t):
        return
    if isinstance(t, numba.types.Array):
        if not isinstance(v, numba.types.Array) or v.ndim != t.ndim:
            raise error_at(origin, f"the tangent of {where} is {v} where {where} is a "
                           f"{t.ndim}-D array", f"Pass an array of {where}'s shape.")
    elif not isinstance(v, (numba.types.Float, numba.types.Integer)) or \
            isinstance(v, numba.types.Boolean):
        raise error_at(origin, f"the tangent of {where} is {v} where {where} is a number",
                       "Pass a number.")


def _a(v):
    """What a value is, in words."""
    if isinstance(v, np.ndarray):
        return f"a {v.ndim}-D array"
    name = type(v).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def _rebuilt(value, t, grads, k):
    """The gradient of the tuple `value` (numba type `t`) from grads[k:], and the next k."""
    out = []
    for v, e in zip(value, t):
        if is_tuple(e):
            g, k = _rebuilt(v, e, grads, k)
        elif is_float_type(e):
            g, k = grads[k], k + 1
        else:
            g = np.zeros_like(v) if isinstance(v, np.ndarray) else type(v)(0)
        out.append(g)
    # a named tuple's gradient is a named tuple of its class (as JAX gives it)
    return (type(value)(*out) if named_class(t) is not None else tuple(out)), k


def njit_entry(adapter, params, extra, raw, grads_tuple, star=None):
    """The derivative as @njit code calls it: a function of the user's arguments (and of the
    trailing tangent or cotangent, the parameter `extra`) that passes each tuple argument's
    elements to `raw` (the derivative of the split function, compiled) and, in reverse mode,
    gives each tuple in argnums its gradient as a tuple of its structure: what
    Adapter.call does in Python, written out for the argument types at hand (numba compiles
    it into the caller; record_arrays.entry_source). `grads_tuple`: whether raw returns its
    gradients as a tuple. `star`: the name of the function's `*args` parameter (the last of
    its own, before the tangent or cotangent), where it has one: the entry then takes every
    argument as one `*args` (the stub's signature), as numba passes them
    (`objective(theta, x, y)` for `def objective(theta, *data)`). Returns (source,
    namespace)."""
    layout, names = adapter.layout, entry_names(params)
    leaves = {q: _leaves(layout.tuples[k]) for q, k in adapter.tuples.items()}
    spelled = {}
    if star is not None:
        n_named = params.index(star)
        spelled = {q: f"args[{k}]" for k, q in enumerate(params[:n_named])}
        if extra:
            spelled[extra] = f"args[{n_named + len(layout.tuples[adapter.tuples[star]])}]"

    def at(base, path):
        if base == star:        # (the values after the named ones)
            base, path = f"args[{params.index(star) + path[0]}]", path[1:]
        return spelled.get(base, base) + "".join(f"[{i}]" for i in path)

    split = []
    for q in params[:layout.n_user]:
        if q in leaves:
            split.extend(at(q, path) for path, _ in leaves[q])
        else:
            split.append(at(q, ()))
    trailing = [at(extra, ())] if extra else []
    if adapter.derivative == "tangent" and adapter.in_wrt:
        given = [at(extra, ())] if adapter.single else [at(extra, (j,)) for j in
                                                        range(len(adapter.wrt_user))]
        trailing = [tangent_argument(
            adapter, given, lambda q, t: [at(t, path) for path, e in leaves[q]
                                          if is_float_type(e)] if q in leaves else None,
            bare_one=False)]
    ns = {names["raw"]: raw, names["np"]: np}

    def rebuilt(q, t, path, k):
        items = []
        for j, e in enumerate(t):
            if is_tuple(e):
                item, k = rebuilt(q, e, path + (j,), k)
            elif is_float_type(e):
                item, k = f"{names['g']}[{k}]", k + 1
            elif isinstance(e, numba.types.Array):
                item = f"{names['np']}.zeros_like({at(q, path + (j,))})"
            elif isinstance(e, numba.types.Boolean):
                item = "False"
            else:       # an integer: a zero of its type
                item = f"{names['np']}.{e}(0)"
            items.append(item)
        cls = named_class(t)
        if cls is None:
            return "(" + "".join(f"{x}, " for x in items) + ")", k
        name = f"{names['own']}class{len(ns)}"
        ns[name] = cls
        return f"{name}({', '.join(items)})", k

    def gradient_of(q, k, lines):
        return rebuilt(q, layout.tuples[adapter.tuples[q]], (), k) if q in leaves else None

    return entry_source(adapter, "*args" if star else ", ".join(params), split + trailing,
                        grads_tuple, gradient_of, names), ns
