"""Lowerings of the numpy functions computed as one call at array level: packed results
(det, slogdet, eigh, svd, qr), calls kept as they are, custom rules.

Each is a function of the normalizer (`norm`), the call's node, the function object and
the statement list, registered for its registry entry's handler (normalize/lowering.py)."""
import ast
import types

from .. import ir
from ..rules.registry import REGISTRY
from .values import TupleValue
from .lowering import lowers
from .numpy_calls import _parameter_name
from ..rules import opaque


@lowers("packed")
def lower_packed(norm, node, obj, out):
    """A number or a tuple (np.linalg.det, slogdet, eigh, svd, qr, matrix_power),
    computed as one array by the entry's `packed` helper and unpacked where the call
    stood."""
    args = node.args
    helper, how = REGISTRY.get(obj).packed
    full = True
    if how == "svd":    # numba's np.linalg.svd(a, full_matrices=True)
        given = norm.indexing.call_arguments(node, ["a", "full_matrices"],
                                             {"full_matrices": None}, out)
        if given["full_matrices"] is not None:
            flag = given["full_matrices"]
            full = flag.value if isinstance(flag, ast.Constant) and \
                isinstance(flag.value, (bool, int)) else None
            if full is None:
                raise norm.error(node, "np.linalg.svd with `full_matrices` that is not a "
                                 "constant", "Write True or False.")
        args = [given["a"]]
    elif node.keywords:
        raise norm.error(node, f"keyword arguments to `{ast.unparse(node.func)}`",
                         "Pass arguments by position.")
    rule = REGISTRY.get(helper).array_rule if REGISTRY.get(helper) else None
    if rule is not None and len(args) > len(rule.params):
        name = ast.unparse(node.func)
        extra = _parameter_name(obj, len(rule.params))
        raise norm.error(node, f"`{name}` with its argument `{extra}`" if extra else
                         f"`{name}` with {len(args)} arguments",
                         f"adjit differentiates {name} with {len(rule.params)} "
                         "argument(s): its derivative would ignore the others; pass "
                         "those only.")
    atoms = [norm.calls.argument_atom(a, out) for a in args]
    packed = norm.to_atom(out, norm.calls.call_of(helper, atoms), "_p")
    if how == "whole":
        return packed
    if how == "svd":
        if not (isinstance(atoms[0], ast.Name) and atoms[0].id in norm.ctx.arrays):
            raise norm.error(node, "np.linalg.svd of something that is not an array",
                             "Pass a 2-D array.")
        return norm.calls.unpack_svd(packed, atoms[0], out, node, bool(full))
    if how == "qr":     # [Q^T | R]: Q is the transpose of the first m columns
        if not (isinstance(atoms[0], ast.Name) and atoms[0].id in norm.ctx.arrays):
            raise norm.error(node, "np.linalg.qr of something that is not an array",
                             "Pass a 2-D array.")
        m = norm.calls.size_local(atoms[0], 0, out)
        whole = norm.arrays.view_of(packed.id, out)
        every = ast.Slice(lower=None, upper=None, step=None)
        q_t, r = (norm.indexing.index_view(whole, [("slice", every), ("slice", part)], out, node)
                  for part in (ast.Slice(lower=None, upper=ir.name(m), step=None),
                               ast.Slice(lower=ir.name(m), upper=None, step=None)))
        return TupleValue([norm.arrays.transpose(q_t, out, node=node), r])
    if how == "item":
        return norm.calls.element(packed, 0, out)
    if how == "items":
        return TupleValue([norm.calls.element(packed, k, out) for k in range(2)])
    whole = norm.arrays.view_of(packed.id, out)
    rest = ast.Slice(lower=ir.const(1), upper=None, step=None)
    return TupleValue([norm.indexing.index_view(whole, [("int", ir.const(0))], out, node),
                       norm.indexing.index_view(whole, [("slice", rest)], out, node)])


@lowers("keep")
def lower_keep(norm, node, obj, out):
    """A call kept at array level (np.linalg.solve, inv, ...): its entry's ArrayRule is
    the derivative."""
    args = node.args
    rule = REGISTRY.get(obj).array_rule
    if node.keywords:
        args = norm.calls.by_position(node, args, rule)
    if rule is not None and len(args) > len(rule.params):
        name = ast.unparse(node.func)
        raise norm.error(node, f"`{name}` with {len(args)} arguments",
                         f"adjit differentiates {name}({', '.join(rule.params)}): its "
                         "derivative would ignore the others; pass those only.")
    return norm.calls.call_as_is(obj, args, out, node)


@lowers("custom")
def lower_custom(norm, node, obj, out):
    """A call of a custom_vjp function (adjit/custom.py): kept whole, as a call of its
    value helper, whose registry entry carries the user's rule."""
    fn = obj

    def error(what, instead):
        return norm.error(node, what, instead)
    fn.require_rule(error)
    signature = types.SimpleNamespace(params=fn.params, defaults={
        p: ast.Constant(value=v) for p, v in fn.defaults.items()})
    args = norm.calls.by_position(node, node.args, signature)
    args += [signature.defaults[p] for p in fn.params[len(args):]
             if p in signature.defaults]
    if len(args) != len(fn.params):
        raise norm.error(node, f"a call to `{fn.__name__}` with {len(args)} argument(s)",
                         f"Pass {len(fn.params)}: {', '.join(fn.params)}.")
    atoms, descs = zip(*[norm.calls.opaque_argument(a, out, True) for a in args]) \
        if args else ((), ())
    atoms, descs = list(atoms), list(descs)
    for k, d in enumerate(descs):
        if d[0] == "const" and isinstance(d[1], tuple):     # (0.0, 2.0) written out
            descs[k] = _constant_tuple(d[1])
            if descs[k] is None:
                raise norm.error(node, f"a tuple holding something other than numbers and "
                                 f"arrays passed to the custom_vjp function `{fn.__name__}`",
                                 "Pass numbers, arrays and tuples of them.")
        elif d[0] == "const" and not isinstance(d[1], (bool, int, float)):
            raise norm.error(node, f"the constant {d[1]!r} passed to the custom_vjp function "
                             f"`{fn.__name__}`", "Pass numbers, arrays and tuples of them.")
    descs = [_named(a, d) for a, d in zip(atoms, descs)]
    fn.check_call(descs, error)
    if not any(d[0] == "tuple" for d in descs):
        return norm.calls.call_of(fn.helpers[f"{fn.key}_value"], atoms)
    # each number and array in a tuple an operand of its own (custom_vjp.tupled)
    value, _ = fn.tupled(descs, error)
    return norm.calls.call_of(value, [leaf for a in atoms for leaf in _leaves(a)])


def _named(atom, desc):
    """A tuple's descriptor with the field names of the named tuples in it, ("tuple", items,
    fields), as its rules get it (custom.named_class)."""
    if desc[0] != "tuple" or not isinstance(atom, ast.Tuple):
        return desc
    items = tuple(_named(a, d) for a, d in zip(atom.elts, desc[1]))
    fields = ir.note(atom, "named", None)
    return ("tuple", items) + ((fields,) if fields else ())


def _constant_tuple(value):
    """The descriptor of a tuple of numbers (nested) given as a constant, or None."""
    if isinstance(value, tuple):
        items = tuple(_constant_tuple(v) for v in value)
        return None if None in items else ("tuple", items)
    return opaque.number_descriptor(value)


def _leaves(atom):
    """The numbers and arrays in a tuple argument, in order (a default value is one
    constant: its numbers)."""
    if isinstance(atom, (ast.Tuple, ast.List)):
        return [leaf for e in atom.elts for leaf in _leaves(e)]
    if isinstance(atom, ast.Constant) and isinstance(atom.value, tuple):
        return [leaf for v in atom.value for leaf in _leaves(ast.Constant(value=v))]
    return [atom]
