"""Second derivatives: Hessian-vector products, dense Hessians, derivatives of gradients.

A Hessian-vector product H v is the gradient of the directional derivative: with
t(x) = f'(x) v, the jvp adjit generates for f (forward mode: straight-line tangent code
beside the primal, nothing recorded), H v = grad t(x). adjit builds it in two
transformations of source: the jvp of f, then the gradient of a small function returning
that jvp's tangent (reverse over forward). Its cost is about that of a gradient of f's
jvp: two to four times f's gradient. H is never formed. stop_gradient stays stopped in both
passes (its tangent is zero, and the reverse pass sees the same stop_gradient call).

`hessian` runs the Hessian-vector product over the basis vectors in one compiled loop (as
jacobian runs jvps or vjps), putting numba's random generator back where it was before each
product (runtime/generator.py), so that every column sees the same draws;
`jvp(grad(f))` returns (grad f, H v) and `grad(grad(f))` of a function of one float is
H 1. Each is a GradientFunction (api.py) of its own kind, so it compiles per argument
types, is callable from @njit code and pickles like grad's results.
"""
import inspect
import re

import numba
import numpy as np
from numba.core import types

from .codegen.emit import exec_source, njit
from .errors import AdjitError, InternalError, error_at, function_origin, internal_error
from .normalize import tuple_args
from .normalize.values import plain_enum_type
from .pipeline import Transformed
from .runtime.generator import restore_generator, save_generator
from .transform import Mode as _Mode
from .transform import build

KINDS = {"hvp": (False, "vector"), "hessian": (False, None), "jvp_of_grad": (True, "tangent"),
         "grad_of_grad": (False, None), "jacobian": (False, None), "jacfwd": (False, None),
         "jacrev": (False, None)}
"""The GradientFunction kinds built here: (returns the value too, trailing argument)."""


def specialize(gf, arg_types):
    """The Transformed of a higher-order GradientFunction for these numba argument types."""
    if gf.target != "cpu":
        raise _error(gf, f"{gf.mode.name} for target={gf.target!r}",
                     "Second derivatives run on the CPU: use target='cpu'.")
    own = len(gf._order) - bool(gf.mode.extra)
    if any(plain_enum_type(t) for t in arg_types):
        raise _error(gf, f"{gf.mode.name} of a function given a member of a plain enum.Enum "
                     "as an argument (not supported yet; grad, value_and_grad, vjp and jvp "
                     "take one)",
                     "Pass the member's value (option.value) and compare it with the "
                     "members' values (OptionTypes.CALL.value), or make the enum an "
                     "enum.IntEnum.")
    tuples = [k for k in range(own) if isinstance(arg_types[k], types.BaseTuple)]
    if tuples:
        return _with_tuples(gf, arg_types, tuples)
    make = {"hvp": _hvp, "hessian": _hessian, "jvp_of_grad": _jvp_of_grad,
            "grad_of_grad": _grad_of_grad, "jacobian": _jacobian, "jacfwd": _jacobian,
            "jacrev": _jacobian}[gf.mode.name]
    try:
        return make(gf, tuple(arg_types))
    except AdjitError:
        # the hvp it is made of refused: what the first derivatives refuse, said as hessian
        refusal = _first_order_refusal(gf, tuple(arg_types)) \
            if gf.mode.name == "hessian" else None
        if refusal is not None:
            raise refusal from None
        raise


def _hvp(gf, arg_types):
    params = gf._order[:-1]
    name = gf.__adjit_function__.__name__
    single = gf.mode.single
    if not single and (not isinstance(arg_types[-1], numba.types.BaseTuple) or
                       len(arg_types[-1]) != len(gf.argnums)):
        said = getattr(gf, "_argnums_said", gf._argnums_arg)
        raise _error(gf, f"hvp with argnums={said!r} called with a vector of "
                     f"type {arg_types[-1]}", f"Pass a tuple of {len(gf.argnums)} directions, "
                     "one per argument in argnums, each shaped like its argument.")
    vector_types = (arg_types[-1],) if single else tuple(arg_types[-1])
    # the jvp, taking one direction per argument (adjit code does not index tuples)
    types = tuple(arg_types[:-1]) + vector_types
    tangent_mode = _Mode("jvp", True, single, "vector")     # (its messages say "vector")
    # (its source is differentiated again: it keeps the math module's functions, whose
    # derivatives adjit knows; the outer gradient's loops get vector math)
    forward = build(gf.fn, gf.argnums, types, tangent_mode, gf.fastmath, jit=False,
                    split_tangents=True, vector_math=False)
    vectors = ["vector"] if single else [f"vector{k}" for k in range(len(vector_types))]
    args = ", ".join(params + vectors)
    text = (f"def {name}_hvp({args}):\n"
            f"    _value, _tangent = {name}_jvp({args})\n"
            f"    return _tangent\n")
    wrapper = exec_source(text, f"{name}_hvp", {f"{name}_jvp": forward.pyfunc})
    outer = _Mode("grad", False, single, None)
    try:
        spec = build(wrapper, gf.argnums, types, outer, gf.fastmath, cache=gf.cache,
                     checkpoint=gf.checkpoint, tape_limit=gf.tape_limit)
    except InternalError as exc:    # a bug in adjit, not a construct reverse mode refuses
        raise internal_error(function_origin(gf.__adjit_function__),
                             f"in reverse mode over its generated {name}_jvp",
                             exc.__cause__ or exc) from exc
    except AdjitError as exc:
        refusal = _first_order_refusal(gf, tuple(arg_types[:-1]))
        if refusal is not None:     # (an array result, ...: said as grad says it)
            raise refusal from None
        # the user's code went through forward mode; what reverse mode refuses is in the
        # code forward mode generated (a tangent helper without a rule of its own)
        raise _error(gf, f"second derivatives of '{name}': reverse mode over its jvp (the "
                     f"generated {name}_jvp) refuses this: {str(exc).rstrip('.')}"
                     f"{_users_line(str(exc), forward.source)}",
                     "That construct has first derivatives in adjit but no second ones "
                     "yet; differentiate its result by hand or keep it out of the "
                     "function you take second derivatives of.") from None
    spec.source = (f"# H v of '{name}': the gradient of its jvp's tangent\n{spec.source}\n\n"
                   f"# the jvp it differentiates\n{forward.source}")
    if single:
        return spec
    # the tuple of directions, passed on element by element
    users = ", ".join(params)
    parts = ", ".join(f"vector[{k}]" for k in range(len(vector_types)))
    text = (f"def {name}_hvp_tuple({users}, vector):\n"
            f"    return _hvp({users}, {parts})\n")
    out = _compiled(text, f"{name}_hvp_tuple", {"_hvp": numba.njit(spec.pyfunc)}, arg_types)
    out.source = f"{text}\n{spec.source}"
    return out


def _with_tuples(gf, arg_types, tuples):
    """gf (of a function taking tuples outside argnums: `def f(x, *args)`, `def f(x, p)`
    with p = (a, b)) as the same derivative of a function of the tuples' elements, each an
    argument of its own (`def f_elements(x, args_0, args_1): return f(x, args_0, args_1)`,
    adjit inlining f into it), called with the elements of the tuples passed. (A tuple in
    argnums is refused before: GradientFunction._refuse_structure.)"""
    fn = gf.__adjit_function__
    name = fn.__name__
    params = inspect.signature(fn).parameters
    own = gf._order[:len(gf._order) - bool(gf.mode.extra)]
    taken = set(gf._order) | {name}

    def fresh(v):       # a name none of the user's (nor a generated one) has
        while v in taken:
            v = "_" + v
        taken.add(v)
        return v

    user, entry = fresh("_f"), fresh("_elements")
    flat, call, unpack, moved, classes = [], [], [], {}, {user: fn}
    for k, p in enumerate(own):
        if k not in tuples:
            moved[k] = len(flat)
            flat.append(p)
            unpack.append(p)
            call.append(f"{p}={p}" if params[p].kind is inspect.Parameter.KEYWORD_ONLY else p)
            continue
        inner = [t for t in arg_types[k] if isinstance(t, types.BaseTuple)]
        if inner:
            raise _error(gf, f"{gf.mode.name} of a function whose argument '{p}' holds a "
                         f"tuple ({arg_types[k]})", "Pass the inner tuple's elements in the "
                         "outer tuple, or as arguments of their own.")
        problem = tuple_args.unsupported(arg_types[k])
        if problem:     # (a string setting in the tuple, ...: as grad says)
            raise _error(gf, f"argument '{p}' is {problem[0]}", problem[1])
        names = [fresh(f"{p}_{j}") for j in range(len(arg_types[k]))]
        flat += names
        unpack += [f"{p}[{j}]" for j in range(len(names))]
        if params[p].kind is inspect.Parameter.VAR_POSITIONAL:
            call += names
            continue
        element = "(" + ", ".join(names) + ("," if len(names) == 1 else "") + ")"
        if isinstance(arg_types[k], (types.NamedTuple, types.NamedUniTuple)):
            # (built again as its class: the function reads its fields by name)
            cls = arg_types[k].instance_class
            alias = fresh(f"_{cls.__name__}")
            classes[alias] = cls
            element = f"{alias}{element}"
        call.append(f"{p}={element}" if params[p].kind is inspect.Parameter.KEYWORD_ONLY
                    else element)
    text = f"def {name}({', '.join(flat)}):\n    return {user}({', '.join(call)})\n"
    argnums = moved[gf.argnums[0]] if gf.mode.single else tuple(moved[k] for k in gf.argnums)
    key = (text, argnums)
    made = gf.__dict__.setdefault("_with_tuples", {})
    if key not in made:
        elements = exec_source(text, name, classes)
        elements.__adjit_origin__ = fn      # (messages name the user's function)
        made[key] = type(gf)(elements, argnums, gf.mode.with_value, fastmath=gf.fastmath,
                             kind=gf.mode.name, checkpoint=gf.checkpoint,
                             tape_limit=gf.tape_limit, cache=gf.cache,
                             vector_math=gf.vector_math)
        made[key]._argnums_said = gf._argnums_arg     # (messages: the user's argnums)
    extra = list(gf._order[len(own):])
    adapter = (f"def {name}_{gf.mode.name}({', '.join(own + extra)}):\n"
               f"    return {entry}({', '.join(unpack + extra)})\n")
    out = _compiled(adapter, f"{name}_{gf.mode.name}", {entry: made[key]}, arg_types)
    inner_types = tuple(t for k, t in enumerate(arg_types[:len(own)]) for t in (
        arg_types[k] if k in tuples else (t,))) + tuple(arg_types[len(own):])
    out.source = (f"# the tuples' elements passed as arguments of their own\n{adapter}\n"
                  f"{text}\n{made[key].specialize(inner_types).source}")
    return out


def _inner(gf, kind, argnums=None):
    """The GradientFunction of `kind` (grad, hvp, jvp, vjp) of gf's function, in gf's
    argnums or in `argnums`."""
    argnums = gf._argnums_arg if argnums is None else argnums
    cache = gf.__dict__.setdefault("_inner", {})
    if (kind, argnums) not in cache:
        cache[kind, argnums] = type(gf)(gf.fn, argnums, kind in ("jvp", "vjp"),
                                        fastmath=gf.fastmath, kind=kind, cache=gf.cache)
    return cache[kind, argnums]


def _jacobian(gf, arg_types):
    """jacobian / jacfwd / jacrev: per argument in argnums, the Jacobian of shape
    result.shape + x.shape, by jvp over the basis of x (columns) or vjp over the basis of
    the result (rows). jacobian takes whichever needs fewer products, at run time."""
    name = gf.__adjit_function__.__name__
    params = list(gf._order)
    args = ", ".join(params)
    lines = [f"def {name}_{gf.mode.name}({args}):",
             "    _generator = save_generator()"]
    namespace = {"np": np, "save_generator": save_generator,
                 "restore_generator": restore_generator}
    results = []
    for k in gf.argnums:
        x, x_type = params[k], arg_types[k]
        forward = _inner(gf, "jvp", k)      # (refuses arguments that carry no derivative)
        reverse = _inner(gf, "vjp", k)
        how = gf.mode.name
        try:
            compiled = forward.specialize(tuple(arg_types) + (x_type,)).dispatcher
        except AdjitError:
            if how == "jacfwd":
                raise
            # no forward mode through it (a custom_vjp function without a tangent rule):
            # rows by vjp, the result's shape from the function as numba compiles it
            compiled, how = _value_of(gf, arg_types), "jacrev"
            namespace[f"_value{k}"] = compiled
            out_type = compiled.nopython_signatures[0].return_type
        else:
            out_type = compiled.nopython_signatures[0].return_type[0]
        if not isinstance(out_type, (types.Array, types.Float)):
            raise _error(gf, f"{gf.mode.name} of a function returning {out_type}",
                         "Return a float or a float array.")
        namespace[f"_jvp{k}"], namespace[f"_vjp{k}"] = forward, reverse
        lines += _jacobian_lines(k, x, isinstance(x_type, types.Array),
                                 isinstance(out_type, types.Array), args, how,
                                 f"_value{k}" in namespace)
        results.append(f"_J{k}")
    ret = results[0] if gf.mode.single else f"({', '.join(results)},)"
    lines.append(f"    return {ret}")
    text = "\n".join(lines) + "\n"
    return _compiled(text, f"{name}_{gf.mode.name}", namespace, arg_types)


def _value_of(gf, arg_types):
    """The differentiated function compiled by numba for these argument types (its result's
    shape, where no jvp gives it), or the AdjitError of the jvp where numba fails."""
    fn = gf.fn
    try:
        value = numba.njit(getattr(fn, "py_func", fn))
        value.compile(tuple(arg_types))
    except Exception:   # noqa: BLE001 - numba's typing errors have many classes
        raise _error(gf, f"{gf.mode.name} of a function with no forward mode whose result "
                     "numba cannot compute alone",
                     "Give its custom_vjp functions tangent rules (defjvp), or take rows "
                     "with vjp.") from None
    return value


def _jacobian_lines(k, x, x_array, out_array, args, how, by_value=False):
    """Statements computing _J{k}, d result / d x, in the generated Jacobian function
    (`by_value`: the result's shape from _value{k}, the function compiled by numba, where
    the jvp cannot be made)."""
    again = "restore_generator(_generator)"   # (every pass draws what one evaluation draws)
    if not out_array:           # a float result: the Jacobian is the gradient
        return [f"    {again}", f"    _J{k} = _vjp{k}({args}, 1.0)[1]"]
    if not x_array and not by_value:        # a float argument: one jvp
        return [f"    {again}", f"    _J{k} = _jvp{k}({args}, 1.0)[1]"]
    fwd = [f"        _n{k} = {x}.size",
           f"        _e{k} = np.zeros(_n{k})",
           f"        _F{k} = np.empty((_out{k}.size, _n{k}))",
           f"        for _j in range(_n{k}):",
           f"            {again}",
           f"            _e{k}[_j] = 1.0",
           f"            _F{k}[:, _j] = _jvp{k}({args}, _e{k}.reshape({x}.shape))[1].ravel()",
           f"            _e{k}[_j] = 0.0",
           f"        _J{k} = _F{k}.reshape(_out{k}.shape + {x}.shape)"]
    size, shape = (f"{x}.size", f"{x}.shape") if x_array else ("1", "()")
    row = f"_vjp{k}({args}, _c{k}.reshape(_out{k}.shape))[1]"
    rev = [f"        _m{k} = _out{k}.size",
           f"        _c{k} = np.zeros(_m{k})",
           f"        _R{k} = np.empty((_m{k}, {size}))",
           f"        for _i in range(_m{k}):",
           f"            {again}",
           f"            _c{k}[_i] = 1.0",
           f"            _R{k}[_i, :] = {row}.ravel()" if x_array else
           f"            _R{k}[_i, 0] = {row}",
           f"            _c{k}[_i] = 0.0",
           f"        _J{k} = _R{k}.reshape(_out{k}.shape + {shape})"]
    # the result (for its shape): the value of one jvp, in the zero direction
    head = [f"    {again}", f"    _out{k} = _value{k}({args})" if by_value else
            f"    _out{k} = _jvp{k}({args}, np.zeros_like({x}))[0]"]
    if how == "jacfwd":
        return head + ["    if True:"] + fwd
    if how == "jacrev":
        return head + ["    if True:"] + rev
    return head + [f"    if _out{k}.size < {x}.size:"] + rev + ["    else:"] + fwd


def _hessian(gf, arg_types):
    if not gf.mode.single:
        return _hessian_blocks(gf, arg_types)
    k = gf.argnums[0]
    x_type = arg_types[k]
    params = list(gf._order)
    name = gf.__adjit_function__.__name__
    args = ", ".join(params)
    x = params[k]
    if isinstance(x_type, types.Array):
        text = (f"def {name}_hessian({args}):\n"
                f"    _n = {x}.size\n"
                f"    _H = np.empty((_n, _n), {x}.dtype)\n"
                f"    _e = np.zeros(_n, {x}.dtype)\n"
                f"    _generator = save_generator()\n"
                f"    for _k in range(_n):\n"
                f"        restore_generator(_generator)\n"
                f"        _e[_k] = 1.0\n"
                f"        _column = _hvp({args}, _e.reshape({x}.shape))\n"
                f"        _H[:, _k] = _column.ravel()\n"
                f"        _e[_k] = 0.0\n"
                f"    return _H.reshape({x}.shape + {x}.shape)\n")
    elif isinstance(x_type, types.Float):
        text = (f"def {name}_hessian({args}):\n"
                f"    return _hvp({args}, {x} * 0.0 + 1.0)\n")
    else:       # the hvp refuses what carries no derivative, as grad does
        _inner(gf, "hvp").specialize(tuple(arg_types) + (x_type,))
        raise _error(gf, f"hessian in argument '{x}' of type {x_type}",
                     "Differentiate with respect to a float or a float array.")
    return _compiled(text, f"{name}_hessian", {"_hvp": _inner(gf, "hvp"), "np": np,
                                               **_GENERATOR}, arg_types)


_GENERATOR = {"save_generator": save_generator, "restore_generator": restore_generator}


def _hessian_blocks(gf, arg_types):
    """hessian with a tuple argnums: H[a][b] of shape x_a.shape + x_b.shape, column by
    column from hvp in the direction of each element of x_b (zero in the others)."""
    params = list(gf._order)
    name = gf.__adjit_function__.__name__
    args = ", ".join(params)
    ks = gf.argnums
    is_array = []
    for k in ks:
        if not isinstance(arg_types[k], (types.Array, types.Float)):
            _inner(gf, "hvp").specialize(tuple(arg_types) + (types.Tuple(
                [arg_types[j] for j in ks]),))
            raise _error(gf, f"hessian in argument '{params[k]}' of type {arg_types[k]}",
                         "Differentiate with respect to floats or float arrays.")
        is_array.append(isinstance(arg_types[k], types.Array))
    lines = [f"def {name}_hessian({args}):", "    _generator = save_generator()"]
    for a, k in enumerate(ks):
        lines.append(f"    _z{a} = np.zeros_like({params[k]})" if is_array[a] else
                     f"    _z{a} = 0.0")
    for b, kb in enumerate(ks):
        xb = params[kb]
        if not is_array[b]:
            direction = ", ".join("1.0" if a == b else f"_z{a}" for a in range(len(ks)))
            lines.append("    restore_generator(_generator)")
            lines.append(f"    _hv{b} = _hvp({args}, ({direction},))")
            for a in range(len(ks)):
                lines.append(f"    _H{a}_{b} = _hv{b}[{a}]")
            continue
        direction = ", ".join(f"_e{b}.reshape({xb}.shape)" if a == b else f"_z{a}"
                              for a in range(len(ks)))
        lines += [f"    _n{b} = {xb}.size", f"    _e{b} = np.zeros(_n{b})"]
        for a, ka in enumerate(ks):
            size = f"{params[ka]}.size" if is_array[a] else "1"
            lines.append(f"    _B{a}_{b} = np.empty(({size}, _n{b}))")
        lines += [f"    for _k in range(_n{b}):", "        restore_generator(_generator)",
                  f"        _e{b}[_k] = 1.0",
                  f"        _hv = _hvp({args}, ({direction},))"]
        for a in range(len(ks)):
            lines.append(f"        _B{a}_{b}[:, _k] = _hv[{a}].ravel()" if is_array[a] else
                         f"        _B{a}_{b}[0, _k] = _hv[{a}]")
        lines.append(f"        _e{b}[_k] = 0.0")
        for a, ka in enumerate(ks):
            shape = f"{params[ka]}.shape + {xb}.shape" if is_array[a] else f"{xb}.shape"
            lines.append(f"    _H{a}_{b} = _B{a}_{b}.reshape({shape})")
    rows = ", ".join("(" + ", ".join(f"_H{a}_{b}" for b in range(len(ks))) + ",)"
                     for a in range(len(ks)))
    lines.append(f"    return ({rows},)")
    text = "\n".join(lines) + "\n"
    return _compiled(text, f"{name}_hessian", {"_hvp": _inner(gf, "hvp"), "np": np,
                                               **_GENERATOR}, arg_types)


def _jvp_of_grad(gf, arg_types):
    params = list(gf._order[:-1])
    name = gf.__adjit_function__.__name__
    args = ", ".join(params)
    text = (f"def {name}_grad_jvp({args}, tangent):\n"
            f"    return _grad({args}), _hvp({args}, tangent)\n")
    return _compiled(text, f"{name}_grad_jvp", {"_grad": _inner(gf, "grad"),
                                                 "_hvp": _inner(gf, "hvp")}, arg_types)


def _grad_of_grad(gf, arg_types):
    k = gf.argnums[0]
    if not isinstance(arg_types[k], types.Float):
        raise _error(gf, f"grad(grad(f)) in argument '{gf._order[k]}' of type {arg_types[k]}: "
                     "the inner gradient is an array, and grad needs a float result",
                     "Use hessian(f) for the matrix of second derivatives, or hvp(f) for its "
                     "products with a vector.")
    return _hessian(gf, arg_types)      # of a function of one float: H 1


def calling(gf):
    """A function with gf's parameters returning gf(...): what a derivative of the gradient
    gf differentiates (the call is then f's Hessian, inner_gradient)."""
    fn = gf.__adjit_function__
    params = [p.name for p in inspect.signature(fn).parameters.values()]
    args = ", ".join(params)
    name = f"{fn.__name__}_grad"
    return exec_source(f"def {name}({args}):\n    return _grad({args})\n", name,
                       {"_grad": gf})


def _compiled(text, name, namespace, arg_types):
    pyfunc = exec_source(text, name, namespace)
    # compiled for the types a call from Python has (a string is a str there: a setting
    # the derivative inside compares is then refused by name, as from any compiled code)
    dispatcher = njit(tuple(types.unliteral(t) for t in arg_types))(pyfunc)
    return Transformed(text, pyfunc, dispatcher)


def _users_line(message, source):
    """Where in the user's code the generated jvp's line a message names comes from (its
    nearest comment `# f, line N: ...` above it), said as ' (made from f, line N: ...)';
    '' where the message names no line of generated code."""
    found = re.search(r"\(<adjit-[^>]*>, line (\d+)\)", message)
    if found is None:
        return ""
    lines = source.splitlines()
    for k in range(min(int(found.group(1)), len(lines)) - 1, -1, -1):
        comment = re.match(r"\s*# (\S+), line (\d+): (.*)", lines[k])
        if comment:
            return f" (made from {comment.group(1)}, line {comment.group(2)}: " \
                   f"`{comment.group(3).strip()}`)"
    return ""


def _first_order_refusal(gf, arg_types):
    """The AdjitError building gf's function's gradient raises for these argument types
    (under gf's name: "hvp of a function that returns an array"), or None where it builds:
    a second derivative refused in reverse mode over the jvp says first what the function's
    first derivatives refuse."""
    try:
        build(gf.fn, gf.argnums, arg_types, _Mode(gf.mode.name, False, gf.mode.single),
              gf.fastmath, jit=False)
    except AdjitError as exc:
        return exc
    return None


def _error(gf, construct, fix):
    return error_at(function_origin(gf.__adjit_function__), construct, fix)



def inner_gradient(gf, error):
    """A gradient object called inside a function adjit differentiates
    (`L(x) = np.dot(g(x), v)` with `g = grad(E)`): the call is kept whole, as an array-level
    operation whose derivative is E's Hessian. With g = grad(E, argnums=k), the call's
    adjoint adds H_kk out_bar to its argument k (the Hessian is symmetric) and H_jk out_bar
    to another argument j; its tangent in argument j is H_kj d - each a Hessian-vector
    product (hvp), never a Hessian. The entry is made once per gradient object, in the
    primitive registry (rules/table.py define_custom), where every pass reads it.
    `error(what, instead)` raises at the call for a gradient that is not one of these."""
    if getattr(gf, "_inner_key", None) is not None:
        return
    from .custom import zero_like
    from .rules.registry import ArrayRule
    from .rules.table import define_custom, fresh_key

    def hvp(fn, argnums):       # (api.hvp, without importing the layer above)
        return type(gf)(fn, argnums, False, fastmath=gf.fastmath, kind="hvp",
                        checkpoint=gf.checkpoint, tape_limit=gf.tape_limit)
    name = gf.__adjit_function__.__name__
    if gf.mode.name != "grad" or not gf.mode.single or gf.target != "cpu":
        raise error(f"a call to the {gf.mode.name} object `{name}` inside a function adjit "
                    "differentiates", "Only a gradient (grad(f) with one argument, on the CPU) "
                    "can be called there; compute the others outside and pass their values "
                    "in, or use adjit.hvp / adjit.hessian of the original function.")
    params = inspect.signature(gf.__adjit_function__).parameters.values()
    if any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params):
        raise error(f"a call to the gradient `{name}`, whose function takes *args, **kwargs "
                    "or keyword-only parameters, inside a function adjit differentiates",
                    "Name each parameter of the function.")
    n = len(params)
    k = gf.argnums[0]
    slots = tuple(f"p{j}" for j in range(n))
    ps = ", ".join(slots)
    key = fresh_key(f"{name}_grad")
    helpers = {f"{key}_hvp": hvp(gf.fn, k), "zero_like": zero_like}
    reverse, tangent = [], []
    for j in range(n):
        if j == k:
            reverse.append(f"{key}_hvp({ps}, out_bar)")
            tangent.append(f"{key}_hvp({ps}, d)")
            continue
        helpers[f"{key}_hvp{j}"] = hvp(gf.fn, (k, j))
        reverse.append(f"{key}_hvp{j}({ps}, (out_bar, zero_like(p{j})))[1]")
        tangent.append(f"{key}_hvp{j}({ps}, (zero_like(p{k}), d))[0]")
    rule = ArrayRule(key, slots, tuple(reverse), tuple(tangent),
                     lambda args: (args[k][0], "f"), helpers=helpers)
    define_custom(gf, f"gradient `{name}`", "array", handler="keep", array_rule=rule,
                  cuda=False)
    gf._inner_key = key


__all__ = ["KINDS", "specialize", "AdjitError"]
