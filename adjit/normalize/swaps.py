"""Double buffering: loops whose body exchanges array names (`u, v = v, u`).

A name swap rebinds which array each name refers to; an adjoint needs to know, at every
statement, which array a name means. Inside a loop the binding cycles with a period k
(k = 2 for a pair swap, 3 for a rotation `a, b, c = b, c, a`). The loop is rewritten, before
it is normalized, into k renamed copies of its body chosen by the step's phase, so that no
array name is ever rebound:

    _phase = 1                          for t in range(steps):
    for t in range(steps):                  (v = step of u)
        _phase = _phase + 1                 u, v = v, u
        if _phase == 2:
            _phase = 0
        if _phase == 0:
            (v = step of u)
        else:
            (u = step of v)
    if _phase == 0:                     # an odd number of steps: the result is in v
        (u, v contents exchanged once)

The swap itself costs nothing per step, as in the user's code; one content exchange after
the loop (O(n), once) puts each name's final array where the code after the loop reads it.
A swap inside an `if`, or in a loop left early (`break`, `continue`, `return`), is refused:
the binding after it would depend on the path taken. A swap of an argument array ends in no
exchange (the caller would see it): the statements after the loop, which must be at the
function's top level, are written once per phase instead (unroll's `rest`).
"""
import ast
import copy

from ..errors import AdjitError
from .. import ir


def find_swap(s, is_array):
    """(targets, values) of `a, b = b, a`-style statement permuting array names, else None."""
    if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and
            isinstance(s.targets[0], ast.Tuple) and isinstance(s.value, ast.Tuple)):
        return None
    t, v = s.targets[0].elts, s.value.elts
    if not all(isinstance(e, ast.Name) for e in t + v) or len(t) != len(v) or len(t) < 2:
        return None
    t, v = [e.id for e in t], [e.id for e in v]
    if len(set(t)) != len(t) or sorted(t) != sorted(v) or t == v:
        return None
    if not all(is_array(n) for n in t):
        return None
    return t, v


def unroll(loop, is_array, fresh, error, params=(), is_view=lambda name: False, rest=None):
    """(statements replacing `loop`, whether they replace `rest` too) if its body swaps
    array names, else None.

    `fresh(stem)` makes a new local name; `error(node, construct, fix)` makes an AdjitError;
    `params` are the function's parameters. Names bound to views of an array (`cur = u[0]`,
    normalize/views.py) are not arrays of their own: after the loop they are rebound as the
    phase says, and no contents move. A swap of a parameter (`u, v = v, u` with u the
    caller's array and v a local copy) cannot end in an exchange of contents, which the
    caller would see: `rest`, the function's statements after a loop at its top level, is
    then written once per phase with the names renamed as the phase binds them (`return u`
    is `return v` after an odd number of steps), and each array keeps what numba leaves in
    it."""
    swaps = [s for s in loop.body if find_swap(s, is_array)]
    if not swaps:
        _refuse_nested(loop.body, is_array, error)
        return None
    given = [n for s in swaps for n in find_swap(s, is_array)[0] if n in params]
    if given and rest is None:
        raise error(swaps[0], f"a swap of the argument array '{given[0]}' in a loop inside "
                    "another statement",
                    "Swap it in a loop at the top level of the function (adjit then writes "
                    "the rest of the function once per phase of the swap), or swap copies: "
                    f"a = {given[0]}.copy() before the loop, then swap a.")
    _refuse_nested([x for s in loop.body if not find_swap(s, is_array)
                    for x in _children(s)], is_array, error)
    for node in _walk_no_defs(loop.body):
        if isinstance(node, (ast.Break, ast.Continue, ast.Return)):
            raise error(node, f"`{type(node).__name__.lower()}` in a loop that swaps array "
                        "names", "Run every step to the end (compute the number of steps "
                        "first), or copy instead of swapping: u[:] = v.")
    names = sorted({n for s in swaps for n in find_swap(s, is_array)[0]})
    identity = {n: n for n in names}
    # the binding after one pass of the body, and its period
    after = _renamed_body(loop.body, identity, is_array)[1]
    powers = [identity]
    while True:
        nxt = {n: after[powers[-1][n]] for n in names}
        if nxt == identity:
            break
        powers.append(nxt)
    k = len(powers)
    if k == 1:
        out = copy.copy(loop)
        out.body = _renamed_body(loop.body, identity, is_array)[0]
        return [out], False
    phase = fresh("_phase")
    line = loop.lineno

    def parse(text):
        nodes = ast.parse(text).body
        for n in ir.walk(ast.Module(body=nodes, type_ignores=[])):
            if hasattr(n, "lineno"):
                n.lineno = line
                n.end_lineno = line
        return nodes

    def by_phase(statements, phase_of):
        """`if phase == phase_of(j): statements(j)` for j = 0 .. k - 2, else
        statements(k - 1)."""
        chain = statements(k - 1) or [ast.Pass()]
        for j in reversed(range(k - 1)):
            node = parse(f"if {phase} == {phase_of(j)}:\n    pass")[0]
            node.body = statements(j) or [ast.Pass()]
            node.orelse = chain
            chain = [node]
        return chain

    head = parse(f"{phase} = {k - 1}")
    body = parse(f"{phase} = {phase} + 1\nif {phase} == {k}:\n    {phase} = 0")
    new_loop = copy.copy(loop)
    new_loop.body = body + by_phase(lambda j: _renamed_body(loop.body, powers[j], is_array)[0],
                                    lambda j: j)
    if given:
        # after j steps (mod k) the phase is j - 1 (k - 1 for j = 0): the rest as bound then,
        # its closing `return e` as `_ret = e` (an array name copied into one new array: one
        # `return` of one array, as a helper must return it)
        last = rest[-1] if rest and isinstance(rest[-1], ast.Return) and \
            rest[-1].value is not None else None
        ret = fresh("_ret") if last is not None else None
        body_rest = rest[:-1] if last is not None else rest
        returned = last.value.id if last is not None and \
            isinstance(last.value, ast.Name) and is_array(last.value.id) else None

        def rest_at(j):
            stmts = _renamed_body(body_rest, powers[j], is_array)[0]
            if returned is not None:
                stmts += parse(f"{ret}[...] = {powers[j].get(returned, returned)}")
            elif last is not None:
                value = ast.Assign(targets=[ast.Name(id=ret, ctx=ast.Store())],
                                   value=last.value)
                stmts += _renamed_body([ast.copy_location(value, last)], powers[j], is_array)[0]
            return stmts

        chain = by_phase(rest_at, lambda j: (j - 1) % k)
        if returned is not None:
            chain = parse(f"{ret} = np.empty_like({returned})") + chain
        if last is not None:
            chain.append(ast.copy_location(ast.Return(value=ast.Name(id=ret, ctx=ast.Load())),
                                           last))
        return head + [new_loop] + chain, True
    tail = []
    views = [n for n in names if is_view(n)]
    arrays = [n for n in names if n not in views]
    for j in range(1, k):        # after j steps (mod k) name n's array is powers[j][n]
        keep = {n: fresh(f"_{n}_final") for n in arrays}
        fix = parse(f"if {phase} == {j - 1}:\n    pass")[0]
        lines = [f"{keep[n]} = {powers[j][n]}.copy()" for n in arrays] + \
            [f"{n}[:] = {keep[n]}" for n in arrays]
        if views:
            lines.append(f"{', '.join(views)} = {', '.join(powers[j][n] for n in views)}"
                         + ("," if len(views) == 1 else ""))
        fix.body = parse("\n".join(lines))
        tail.append(fix)
    return head + [new_loop] + tail, False


def _renamed_body(stmts, binding, is_array):
    """The statements with each array name replaced by the array it is bound to, swaps
    dropped; and the binding after them."""
    binding = dict(binding)
    out = []
    for s in stmts:
        swap = find_swap(s, is_array)
        if swap:
            t, v = swap
            new = {a: binding[b] for a, b in zip(t, v)}
            binding.update(new)
            continue
        node = copy.deepcopy(s)
        for n in ir.walk(node):
            if isinstance(n, ast.Name) and n.id in binding:
                n.id = binding[n.id]
        out.append(node)
    return out, binding


def _children(s):
    out = []
    for field in ("body", "orelse"):
        inner = getattr(s, field, None)
        if isinstance(inner, list) and not isinstance(s, (ast.For, ast.While)):
            out += inner
    return out


def _refuse_nested(stmts, is_array, error):
    """A swap inside an `if` (outside any nested loop, which handles its own)."""
    for s in stmts:
        if isinstance(s, (ast.For, ast.While, ast.FunctionDef, ast.Lambda)):
            continue
        if find_swap(s, is_array):
            raise error(s, "a swap of array names inside an `if`",
                        "Swap unconditionally at the top level of the loop body, or copy "
                        "instead: u[:] = v.")
        _refuse_nested(_children(s), is_array, error)


def _walk_no_defs(stmts):
    """Statements of a loop body, entering nested `if`s; `break`/`continue` of nested
    loops belong to those loops."""
    for s in stmts:
        yield s
        if isinstance(s, ast.If):
            yield from _walk_no_defs(s.body)
            yield from _walk_no_defs(s.orelse)
        elif isinstance(s, (ast.For, ast.While)):
            for inner in ir.walk(s):
                if isinstance(inner, ast.Return):
                    yield inner


__all__ = ["find_swap", "unroll", "AdjitError"]
