"""Activity analysis: which variables carry derivatives.

A variable is *varied* when it depends differentiably on an argument in argnums, and
*useful* when the result depends differentiably on it. Only variables that are both, and
hold floats, are active: they alone get adjoint variables and adjoint statements. The result
of stop_gradient is neither varied nor anything its argument came from made useful through
it, so a stopped expression produces no adjoint code at all.
"""
import ast

from .. import ir
from ..errors import error_at
from ..rules.table import INACTIVE
from .prims import classify, message_names
from .types import is_float_kind


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


def active_variables(stmts, result, wrt, kinds, env, roots=()):
    """The set of active variable names (`roots`: more outputs, the arrays a kernel writes)."""
    edges = _edges(stmts, env)
    varied = {v for v in wrt if is_float_kind(kinds.get(v))}
    useful = {result.id} if isinstance(result, ast.Name) else set()
    useful |= set(roots)
    # MPI messages are active on every rank: a message's two ends are different statements
    # (on different ranks), and both adjoints must exist (rules/messages.py)
    carried = {v for v in message_names(stmts, env)[0] if is_float_kind(kinds.get(v))}
    varied |= carried
    useful |= carried
    changed = True
    while changed:
        changed = False
        for target, source in edges:
            if source in varied and target not in varied:
                varied.add(target)
                changed = True
            if target in useful and source not in useful:
                useful.add(source)
                changed = True
    refuse_draw_parameters(stmts, env, lambda a: a in varied, useful)
    return {v for v in varied & useful if is_float_kind(kinds.get(v))}


def refuse_draw_parameters(stmts, env, is_varied, useful=None):
    """A random draw with no pathwise derivative in a parameter (np.random.gamma's shape,
    poisson's lam: rejection sampling, counts) whose parameter carries a derivative and whose
    value the result depends on (`useful`; None: any use) is an AdjitError naming both."""
    for s in ir.walk_stmts(stmts):
        if not (isinstance(s, ast.Assign) and isinstance(s.value, ast.Call)) or ir.is_store(s):
            continue
        prim = classify(s.value, env)
        entry = INACTIVE.get(prim.obj) if prim.kind == "inactive" else None
        if entry is None or not entry.refused:
            continue
        if useful is not None and ir.target_name(s) not in useful:
            continue
        for name, atom in zip(entry.params, prim.operands):
            if name in entry.refused and isinstance(atom, ast.Name) and is_varied(atom.id):
                draw = ir.note(s.value, "callee") or f"`{entry.name}`"
                raise error_at(ir.note(s, "origin", None),
                               f"a derivative would have to flow through the parameter "
                               f"`{name}` of {draw}, a random draw with no pathwise "
                               f"derivative in `{name}` (numba draws it by rejection or as a "
                               "count: a small change of the parameter changes which numbers "
                               "are drawn, not the number drawn)",
                               f"If `{name}` is a constant for differentiation, wrap it in "
                               "stop_gradient(...); for the gradient of an expectation in it, "
                               "write a score-function (REINFORCE) estimator with the draw's "
                               "log-density.")


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
