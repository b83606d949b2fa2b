"""np.einsum with a constant subscripts string, lowered to the loops it means.

numba does not compile np.einsum; adjit reads the source, so a function that calls it can be
differentiated all the same. `np.einsum("ij,jk->ik", A, B)` is a helper of its operands,
inlined like any other:

    out = np.zeros((n_i, n_k))
    for i in range(n_i):
        for k in range(n_k):
            acc = 0.0
            for j in range(n_j):
                acc += A[i, j] * B[j, k]
            out[i, k] = acc

(a scalar result is `acc` itself). Output letters loop outermost in the output's order,
summed letters inside in the order they first appear. Without `->` the output is the
letters that appear once, sorted (numpy's implicit mode). A letter's sizes must agree in
every operand (checked when the gradient runs, a ValueError as numpy raises); a letter
repeated in one operand reads its diagonal (`"ii->"` is the trace). `optimize=` changes
only the order numpy contracts in, and is accepted. Refused by name: a subscripts string
that is not a constant (or a module-level string), `...`, operands that are not float
arrays, other keywords.
"""
import ast

import numpy as np

from ..errors import Location
from ..runtime import vec
from .closures import made_helper
from .lowering import lowers
from .vectorize import View, array_valued


@lowers("einsum")
def lower_einsum(norm, node, obj, out):
    """np.einsum(subscripts, *operands) in the normalizer `norm`."""
    spec = node.args[0] if node.args else None
    if isinstance(spec, ast.Name) and spec.id not in norm.src.locals:
        spec = norm.src.resolve_name(spec.id)       # a module-level (or closure) string
    else:
        spec = spec.value if isinstance(spec, ast.Constant) else None
    if not isinstance(spec, str):
        raise norm.error(node, "np.einsum with subscripts that are not a constant string",
                         "Write the subscripts in the call: np.einsum(\"ij,jk->ik\", a, b), "
                         "or name a module-level string.")
    for kw in node.keywords:
        if kw.arg != "optimize":
            raise norm.error(node, f"np.einsum with `{kw.arg}=`",
                             "Pass the subscripts and the operands (optimize= is accepted).")
    operands = node.args[1:]
    inputs, output = _parse(norm, node, spec, len(operands))
    loc = dict(lineno=node.lineno, col_offset=node.col_offset)
    args = [a if isinstance(a, ast.Name) else norm.assign_new_local("_ein", a, loc, out)
            for a in operands]
    for k, (a, letters) in enumerate(zip(args, inputs)):
        value = norm.operand(a, out)
        ndim = len(value.shape) if array_valued(value) else 0
        if ndim != len(letters):
            raise norm.error(node, f"np.einsum's operand {k + 1} with {ndim} dimension(s) for "
                             f"the subscripts {letters!r}",
                             "Give each operand one letter per dimension.")
        if isinstance(value, View) and norm.ctx.arrays.get(value.base, (0, "f"))[1] != "f":
            raise norm.error(node, f"np.einsum of the integer or boolean operand {k + 1}",
                             "Pass float arrays (numpy keeps integers integers).")
    helper = _helper(norm, node, inputs, output)
    call = ast.Call(func=ast.Name(id="einsum", ctx=ast.Load(), **loc), args=args,
                    keywords=[], **loc)
    return norm.inline(call, helper, out)


def _parse(norm, node, text, count):
    """([letters of each operand], output letters) of a subscripts string."""
    spec = text.replace(" ", "")
    if "." in spec:
        raise norm.error(node, f"np.einsum with an ellipsis ({text!r})",
                         "Name every dimension with a letter.")
    given, arrow, result = spec.partition("->")
    inputs = given.split(",")
    if len(inputs) != count or not all(s.isalpha() or s == "" for s in inputs) or \
            not (result.isalpha() or result == ""):
        raise norm.error(node, f"np.einsum's subscripts {text!r} for {count} operand(s)",
                         "Give one group of letters per operand: \"ij,jk->ik\".")
    letters = "".join(inputs)
    if not arrow:
        result = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    if len(set(result)) != len(result) or not set(result) <= set(letters):
        raise norm.error(node, f"np.einsum's output subscripts {result!r}",
                         "Name each output letter once, and only letters of the operands.")
    return inputs, result


def _helper(norm, node, inputs, output):
    """The helper function running the loops (its source made here, read as the caller's
    line)."""
    names = [f"_e{k}" for k in range(len(inputs))]
    order = []
    for c in "".join(inputs):
        if c not in order:
            order.append(c)
    summed = [c for c in order if c not in output]
    lines = [f"def einsum({', '.join(names)}):"]
    first = {}
    for name, letters in zip(names, inputs):
        for j, c in enumerate(letters):
            size = f"{name}.shape[{j}]"
            if c in first:
                lines.append(f"    _echeck(_en_{c}, {size})")
            else:
                first[c] = size
                lines.append(f"    _en_{c} = {size}")
    terms = " * ".join(f"{name}[{', '.join(f'_ei_{c}' for c in letters)}]"
                       if letters else name for name, letters in zip(names, inputs))
    if output:
        shape = ", ".join(f"_en_{c}" for c in output)
        lines.append(f"    _eout = _enp.zeros(({shape},))")
    pad = "    "
    for c in output:
        lines.append(f"{pad}for _ei_{c} in range(_en_{c}):")
        pad += "    "
    lines.append(f"{pad}_eacc = 0.0")
    inner = pad
    for c in summed:
        lines.append(f"{inner}for _ei_{c} in range(_en_{c}):")
        inner += "    "
    lines.append(f"{inner}_eacc += {terms}")
    if output:
        lines.append(f"{pad}_eout[{', '.join(f'_ei_{c}' for c in output)}] = _eacc")
        lines.append("    return _eout")
    else:
        lines.append("    return _eacc")
    tree = ast.parse("\n".join(lines) + "\n").body[0]
    # the loops are the call's: read at its line
    return made_helper("einsum", tree, Location("np.einsum", norm.loc.filename, node.lineno),
                       {}, {"_enp": np, "_echeck": vec.check_einsum_sizes}, line=node.lineno)
