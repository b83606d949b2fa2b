"""Activity analysis: which variables carry derivatives.

A variable is *varied* when it depends differentiably on an argument in argnums, and
*useful* when the result depends differentiably on it. Only variables that are both, and
hold floats, are active: they alone get adjoint variables and adjoint statements. The result
of stop_gradient is neither varied nor anything its argument came from made useful through
it, so a stopped expression produces no adjoint code at all.
"""
import ast
import warnings

from .. import ir
from ..errors import AdjitWarning, error_at
from ..rules.table import INACTIVE
from .prims import classify, message_names
from .types import BOOL, INT, is_array, is_float_kind


def _edges(stmts, env):
    """(target, source) pairs of differentiable data flow, arrays included."""
    edges = []
    for s in ir.walk_stmts(stmts):
        if not isinstance(s, ast.Assign):
            continue
        if ir.is_store(s):
            arr = s.targets[0].value.id
            if isinstance(s.value, ast.Name):
                edges.append((arr, s.value.id))
            continue
        prim = classify(s.value, env)
        target = ir.target_name(s)
        for _, atom in prim.diff_operands():
            if isinstance(atom, ast.Name):
                edges.append((target, atom.id))
    return edges


def active_variables(stmts, result, wrt, kinds, env, roots=(), fields=None, guard=None):
    """The set of active variable names (`roots`: more outputs, the arrays a kernel writes;
    `fields`: each parameter that is a field of a record-array argument -> (argument, field),
    for messages; `guard`: for refuse_draw_parameters)."""
    edges = _edges(stmts, env)
    # integers and booleans carry no derivative: a float stored into an int array is
    # truncated, and what is read back from it varies with nothing (the result may still
    # depend on its value: usefulness flows through every edge)
    numeric = [(t, s) for t, s in edges
               if not _carries_none(kinds.get(t)) and not _carries_none(kinds.get(s))]
    varied = {v for v in wrt if is_float_kind(kinds.get(v))}
    useful = {result.id} if isinstance(result, ast.Name) else set()
    useful |= set(roots)
    # MPI messages are active on every rank: a message's two ends are different statements
    # (on different ranks), and both adjoints must exist (rules/messages.py)
    carried = {v for v in message_names(stmts, env)[0] if is_float_kind(kinds.get(v))}
    varied |= carried
    useful |= carried
    varied = _closure(numeric, varied)
    useful = _closure([(source, target) for target, source in edges], useful)
    refuse_draw_parameters(stmts, env, lambda a: a in varied, useful, guard)
    if not roots:
        refuse_decided_only(stmts, result, wrt, kinds, env, fields or {})
    return {v for v in varied & useful if is_float_kind(kinds.get(v))}


def _carries_none(kind):
    """Whether a value of `kind` is an integer or a boolean (a scalar or an array's
    elements): known to carry no derivative."""
    if is_array(kind):
        return kind.dtype in ("i", "b")
    return kind in (INT, BOOL)


def _every_edge(stmts, env):
    """(target, source) pairs of any data flow, derivative or not (comparisons, int(x),
    indices, calls with no rule), but none through stop_gradient and none from an array's
    shape (`x.shape[0]`, `len(x)`: the same for every value of its elements)."""
    edges = []
    for s in ir.walk_stmts(stmts):
        if not isinstance(s, ast.Assign):
            continue
        if ir.is_store(s):
            target = s.targets[0].value.id
            read = [s.value, s.targets[0].slice]
        else:
            target = ir.target_name(s)
            if classify(s.value, env).kind == "stop":
                continue
            read = [s.value]
        edges += [(target, n) for r in read for n in _reads(r)]
    return edges


def _closure(edges, start):
    reached = set(start)
    changed = True
    while changed:
        changed = False
        for target, source in edges:
            if source in reached and target not in reached:
                reached.add(target)
                changed = True
    return reached


_SHAPE_ATTRS = ("shape", "size", "ndim", "dtype")


def _reads(node):
    """The names an expression reads the values of (not an array's shape)."""
    skip = set()
    for n in ir.walk(node):
        if isinstance(n, ast.Attribute) and n.attr in _SHAPE_ATTRS:
            skip.add(id(n.value))
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "len":
            skip.update(id(a) for a in n.args)
    return {n.id for n in ir.walk(node) if isinstance(n, ast.Name) and id(n) not in skip}


def _carried(body):
    """The names a loop body reads before it assigns them in an iteration (the values one
    iteration hands the next), arrays it stores into and reads included. A branch that
    leaves the iteration (continue, break, return) reaches no later read."""
    carried = set()

    def scan(stmts, known):
        """(names surely assigned after `stmts`, whether control falls through them)."""
        for st in stmts:
            if isinstance(st, (ast.Continue, ast.Break, ast.Return)):
                if isinstance(st, ast.Return) and st.value is not None:
                    carried.update(_reads(st.value) - known)
                return known, False
            if isinstance(st, ast.Assign):
                carried.update(_reads(st.value) - known)
                if ir.is_store(st):
                    carried.update(_reads(st.targets[0]) - known)
                else:
                    known = known | {ir.target_name(st)}
            elif isinstance(st, ast.If):
                carried.update(_reads(st.test) - known)
                arms = [scan(st.body, known), scan(st.orelse, known)]
                through = [k for k, falls in arms if falls]
                if not through:
                    return known, False
                known = set.intersection(*map(set, through))
            elif isinstance(st, (ast.For, ast.While)):
                carried.update(_reads(st.iter if isinstance(st, ast.For) else st.test) - known)
                scan(st.body, known)
            else:
                carried.update(_reads(st) - known)
        return known, True

    scan(body, set())
    assigned = ir.assigned(body) | ir.stored_names(body)
    return carried & assigned


def _decided(stmts, tainted, loop, out, every=()):
    """Add to `out` the values a search decides by conditions reading `tainted` names: in a
    loop, the values one iteration hands the next where such a condition assigns them,
    leaves the loop (break, continue) or bounds it (its range, a while test). (A value a
    loop's last iteration alone sets, `return c` from inside it, is a choice of values
    like an `if`'s.) Returns the first such condition's statement, or None. (A condition
    outside loops, or one choosing each element of a map, is a piecewise definition whose
    zero derivative is the usual one: floor, sign, a switch argument.) `every`: the
    function's data flow (_every_edge), along which a value assigned under such a condition
    reaches the values the iteration hands on. `loop`: None outside loops, else the
    innermost loop's (carried names, its iteration's edges of `every`, the names those
    compute from the carried ones)."""
    first = None
    for s in stmts:
        if isinstance(s, ast.If):
            if loop is not None and _reads(s.test) & tainted:
                carried, inside, fed = loop
                chosen = ir.assigned(s.body + s.orelse) | ir.stored_names(s.body + s.orelse)
                hit = chosen & carried
                if _reads(s.test) & fed:
                    # a test of what earlier iterations decided (a search): what the
                    # iteration computes from the branches' values too (`c = 1.0 if f(m)
                    # <= t else 0.0`, then `lo = lo + (m - lo) * c`)
                    hit |= _closure(inside, chosen) & carried
                if ir.breaks(s.body + s.orelse, (ast.Break, ast.Continue)):
                    hit |= carried
                if hit:
                    out |= hit
                    first = first or s
            inner = _decided(s.body, tainted, loop, out, every) or \
                _decided(s.orelse, tainted, loop, out, every)
            first = first or inner
        elif loop is not None and isinstance(s, ast.Assign) and not ir.is_store(s) and \
                _is_test(s.value):
            # a condition used as a number in a loop, testing what earlier iterations
            # decided (`lo = lo + (m - lo) * (f(m) <= t)`, hapsira's Lambert bisection): an
            # `if` in arithmetic's clothes (a mask of the iteration's own values, `x[i] *
            # (x[i] > c)`, is a map's choice)
            carried, inside, fed = loop
            if _reads(s.value) & tainted and _reads(s.value) & fed:
                hit = _closure(inside, {ir.target_name(s)}) & carried
                if hit:
                    out |= hit
                    first = first or s
        elif isinstance(s, (ast.For, ast.While)):
            head = s.iter if isinstance(s, ast.For) else s.test
            carried = _carried(s.body)
            if _reads(head) & tainted and carried:
                out |= carried
                first = first or s
            inside = _within(s.body, every)
            first = _decided(s.body, tainted, (carried, inside, _closure(inside, carried)),
                             out, every) or first
    return first


def _is_test(value):
    """Whether an expression is a comparison or a logical operation (a condition)."""
    return isinstance(value, (ast.Compare, ast.BoolOp)) or \
        isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not)


def _within(body, every):
    """The edges of `every` into names a loop body assigns or stores into: the data flow of
    one iteration (nested loops included)."""
    inside = ir.assigned(body) | ir.stored_names(body)
    return [(t, source) for t, source in every if t in inside]


def refuse_decided_only(stmts, result, wrt, kinds, env, fields):
    """A differentiated argument that reaches the result only through conditions (a root
    bisection finds, an optimum a search moves to by comparisons, a count): the result is
    a step function of it, whose derivative is zero wherever it exists, while the function
    the program approximates may have another. An AdjitError says so, at the first such
    condition, rather than giving a zero gradient."""
    if not isinstance(result, ast.Name):
        return
    diff, every = _edges(stmts, env), _every_edge(stmts, env)
    # the arguments (records, tuples) one of whose parts reaches the result by arithmetic
    carrying = {fields[v][0] for v in wrt if v in fields and is_float_kind(kinds.get(v))
                and result.id in _closure(diff, {v})}
    for v in wrt:
        if not is_float_kind(kinds.get(v)) or result.id in _closure(diff, {v}):
            continue
        data = _closure(every, {v})
        decided = set()
        first = None
        while True:
            before = len(decided)
            found = _decided(stmts, data | decided, None, decided, every)
            first = first or found
            decided = _closure(every, decided)
            if len(decided) == before:
                break
        if result.id in decided:
            if v in fields:     # a field of a record array or an item of a tuple, split
                q, part, spelled = fields[v]
                what, of = f"{part} of the argument '{q}'", spelled.replace("[i]", "")
                if q in carrying:
                    # the argument's other parts carry derivatives, and argnums cannot leave
                    # this one out (a model's threshold parameter in its parameter record):
                    # its zero, said
                    where = ir.note(first, "origin", None) or first
                    said = str(error_at(where, f"the result depends on {what} only through "
                                        "conditions, the first of them here: its derivative "
                                        "is zero, that of a step function of "
                                        f"{of} (a threshold, a count, a root found by "
                                        "bisection); the other parts of "
                                        f"'{q}' are differentiated",
                                        "For the derivative of a converged solution give the "
                                        "solver adjit.custom_root; if zero is meant, filter "
                                        "this warning (adjit.AdjitWarning)"))
                    filename, line = (where[0], where[1]) if isinstance(where, tuple) \
                        else ("<unknown>", 0)
                    warnings.warn_explicit(said, AdjitWarning, filename, line)
                    continue
                zero = (f"read it through stop_gradient where the conditions use it "
                        f"(stop_gradient({spelled})): the parts of one argument are "
                        "differentiated together.")
            else:
                what, of = f"the argument '{v}'", f"'{v}'"
                zero = (f"read stop_gradient({v}) in the conditions (or leave '{v}' out of "
                        "argnums).")
            raise error_at(ir.note(first, "origin", None) or first,
                           f"the result depends on {what} only through "
                           "conditions, the first of them here: it is a step function of "
                           f"{of}, whose derivative is zero wherever it exists (a root found "
                           "by bisection, an optimum a search reaches by comparisons, a count)",
                           "For the derivative of a converged solution, give the solver "
                           "adjit.custom_root (its residual); if zero is what you want, "
                           + zero)


def refuse_draw_parameters(stmts, env, is_varied, useful=None, guard=None):
    """A random draw with no pathwise derivative in a parameter (np.random.gamma's shape,
    poisson's lam: rejection sampling, counts) whose parameter carries a derivative and whose
    value the result depends on (`useful`; None: any use) is an AdjitError naming both. With
    `guard`, such a draw in a branch of an `if` (a Monte Carlo scheme chosen by an argument)
    is given to guard(statement, its error) instead: the gradient refuses it where the
    branch runs."""
    def draws(block, branch):
        for s in block:
            if isinstance(s, ast.If):
                yield from draws(s.body, True)
                yield from draws(s.orelse, True)
            elif isinstance(s, (ast.For, ast.While)):
                yield from draws(s.body, branch)
            elif isinstance(s, ast.Assign) and isinstance(s.value, ast.Call) and \
                    not ir.is_store(s):
                yield s, branch

    for s, branch in list(draws(stmts, False)):
        prim = classify(s.value, env)
        entry = INACTIVE.get(prim.obj) if prim.kind == "inactive" else None
        if entry is None or not entry.refused:
            continue
        if useful is not None and ir.target_name(s) not in useful:
            continue
        for name, atom in zip(entry.params, prim.operands):
            if name in entry.refused and isinstance(atom, ast.Name) and is_varied(atom.id):
                draw = ir.note(s.value, "callee") or f"`{entry.name}`"
                error = error_at(ir.note(s, "origin", None),
                                 f"a derivative would have to flow through the parameter "
                                 f"`{name}` of {draw}, a random draw with no pathwise "
                                 f"derivative in `{name}` (numba draws it by rejection or as "
                                 "a count: a small change of the parameter changes which "
                                 "numbers are drawn, not the number drawn)",
                                 f"If `{name}` is a constant for differentiation, wrap it in "
                                 "stop_gradient(...); for the gradient of an expectation in "
                                 "it, write a score-function (REINFORCE) estimator with the "
                                 "draw's log-density.")
                if not (branch and guard):
                    raise error
                guard(s, error)
                break


def replicated_result(stmts, result, env):
    """Whether the result depends on a value every MPI rank holds the same copy of (what
    an allreduce or a bcast returns): then it is one value, not one per rank, and its
    cotangent counts once (rules/messages.py)."""
    replicated = message_names(stmts, env)[1]
    if not replicated or not isinstance(result, ast.Name):
        return False
    reached = set(replicated)
    changed = True
    edges = _edges(stmts, env)
    while changed:
        changed = False
        for target, source in edges:
            if source in reached and target not in reached:
                reached.add(target)
                changed = True
    return result.id in reached


def opaque_refusal(s):
    """The error for a derivative that would flow through a call with no derivative rule."""
    return error_at(ir.note(s, "origin", None),
                    f"a derivative would have to flow through "
                    f"{ir.note(s.value, 'callee', None) or '`' + ast.unparse(s.value.func) + '`'}, "
                    "which has no derivative rule",
                    "If its result is a constant for differentiation, wrap its arguments in "
                    "stop_gradient(...); otherwise write it as Python/@njit code adjit can read "
                    "(loops and math functions), or call it from an @adjit.custom_vjp "
                    "function of your own that gives its derivative (fwd and bwd rules: for a "
                    "ctypes function or a cfunc, whose code adjit cannot read).")
