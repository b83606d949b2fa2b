"""Dead-code elimination for the forward sweep.

The forward sweep recomputes the primal only for what the backward sweep reads (recorded
values, trip counts, arrays it replays loads from) and, for value_and_grad, the value. In
`grad` mode a loop whose values the backward sweep replays itself vanishes from the forward
sweep entirely, which is what a hand-written adjoint does.
"""
import ast

from ..analysis import effects
from ..ir import copy_notes, load_names, note, walk
from ..rules.table import SHAPE_ONLY_CALLS


def reads_of(node):
    return {n.id for n in load_names(node)}


def _once(memo, node, compute):
    """compute(node), computed once per memo: by the node's id, the node kept beside the
    result so that the id stays its own."""
    found = memo.get(id(node))
    if found is None or found[0] is not node:
        found = memo[id(node)] = (node, compute(node))
    return found[1]


def _reads(node, memo):
    return _once(memo, node, reads_of)


def _kept(s):
    """An effect statement whose value nothing reads. numba's parallel pipeline deletes a
    numpy.random call whose result is unused (numba/core/ir_utils.py,
    remove_dead_random_call), so in a function with a prange loop the draw would not be
    made and every later draw would differ from the program's: the value goes through
    vec.keep, a call numba keeps."""
    kept = getattr(s, "_dce_kept", None)     # the same node in every pruning round (the
    if kept is not None:                    # memo of eliminate_dead is by id)
        return kept
    call = s.value
    kept = s
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and \
            ast.unparse(call.func.value) in ("np.random", "numpy.random") and \
            call.func.attr not in ("seed", "shuffle"):
        keep = ast.Call(ast.Attribute(ast.Name("vec", ast.Load()), "keep", ast.Load()),
                        [call], [])
        kept = copy_notes(s, type(s)(**{f: getattr(s, f) for f in s._fields}))
        kept.value = keep
        ast.copy_location(kept, s)
    s._dce_kept = kept
    return kept


def _control_only(stmts):
    return all(isinstance(s, ast.Pass) or (isinstance(s, ast.If) and
               all(isinstance(b, ast.Break) for b in s.body)) for s in stmts)


def _prune(stmts, live, keep_stores, index_live):
    out = []
    for s in stmts:
        if isinstance(s, ast.Assign):
            tgt = s.targets[0]
            if isinstance(tgt, ast.Name):
                if tgt.id in live:
                    out.append(s)
                elif note(s, "effect") or effects.kept_call(s):     # (a draw, an MPI
                    out.append(_kept(s))    # message, a helper that may raise): though unread
            elif isinstance(tgt, ast.Tuple):    # a checkpointed loop's step: writes arrays
                out.append(s)
            elif tgt.value.id in keep_stores:
                out.append(s)
        elif isinstance(s, ast.AugAssign):
            if isinstance(s.target, ast.Subscript):     # (an adjoint's `x_bar[j] += e`)
                if s.target.value.id in keep_stores:
                    out.append(s)
            elif s.target.id in live:
                out.append(s)
        elif isinstance(s, ast.If):
            body = _prune(s.body, live, keep_stores, index_live)
            orelse = _prune(s.orelse, live, keep_stores, index_live)
            if any(isinstance(b, ast.Break) for b in body) or \
                    not _control_only(body) or not _control_only(orelse):
                out.append(_copy_with(s, body or [ast.Pass()], orelse))
        elif isinstance(s, (ast.For, ast.While)):
            body = _prune(s.body, live, keep_stores, index_live)
            index_read = isinstance(s, ast.For) and s.target.id in index_live
            if not _control_only(body) or index_read:
                out.append(_copy_with(s, body or [ast.Pass()], []))
        elif isinstance(s, ast.Expr) and note(s, "effect"):
            out.append(_kept(s))
        else:
            out.append(s)
    return out


def _copy_with(s, body, orelse):
    node = type(s)(**{f: getattr(s, f) for f in s._fields})
    node.body = body
    node.orelse = orelse
    return copy_notes(s, node, ("origin", "forward_only", "parallel", "time_loop"))


def eliminate_dead(forward, roots, keep_stores, bound=frozenset()):
    """The forward statements that anything in `roots` (names read later) depends on.
    Element stores into `keep_stores` (the caller's arrays) are always kept; stores into
    other arrays only where something kept reads the array's elements, not only its shape
    (`n = buf.shape[0]` needs `buf`, not what was stored in it). Names in `bound` are needed
    bound but not for their elements (a buffer later code fills before reading it:
    bindings_needed): their assignments stay, the stores into them do not."""
    live = set(roots) | set(bound)
    contents = set(roots)
    index_live = set(roots)
    memo = {}       # id(node) -> (names read, names whose elements are read): the pruning
    #                 rounds keep the same statement objects, so each is walked once
    while True:
        kept = _prune(forward, live, set(keep_stores) | (contents & live), index_live)
        reads, elements = set(live), set(roots)
        for s in kept:
            r, e = _stmt_reads(s, memo)
            reads |= r
            elements |= e
        unshadowed = set(roots) | _reads_outside_own_loops(kept, (), memo)
        if reads == live and elements == contents and unshadowed == index_live:
            return kept
        live, contents, index_live = reads, elements, unshadowed


def _stmt_reads(s, memo):
    """(names read, names read other than as `name.shape`) of a statement, nested ones
    included (compound statements from their header and their bodies' statements)."""
    if isinstance(s, (ast.If, ast.For, ast.While)):
        r, e = _node_reads(s.iter if isinstance(s, ast.For) else s.test, memo)
        r, e = set(r), set(e)
        for inner in s.body + s.orelse:
            ir_, ie = _stmt_reads(inner, memo)
            r |= ir_
            e |= ie
        return r, e
    return _node_reads(s, memo)


def _node_reads(node, memo):
    return _once(memo, node, lambda n: (reads_of(n), _element_reads(n)))


def _element_reads(s):
    """Names a statement (nested ones included) reads other than as `name.shape`."""
    shapes = {id(n.value) for n in walk(s) if isinstance(n, ast.Attribute)
              and n.attr in ("shape", "ndim", "size", "dtype") and isinstance(n.value, ast.Name)}
    shapes |= {id(n.args[0]) for n in walk(s) if isinstance(n, ast.Call) and n.args
               and ast.unparse(n.func) in SHAPE_ONLY_CALLS and isinstance(n.args[0], ast.Name)}
    return {n.id for n in load_names(s) if id(n) not in shapes}


def _reads_outside_own_loops(stmts, loop_vars, memo=None):
    """Names read where no enclosing `for` rebinds them: a loop kept only for its final
    index must be read after it, not inside another loop over the same name."""
    memo = {} if memo is None else memo
    out = set()
    for s in stmts:
        if isinstance(s, ast.For):
            out |= _node_reads(s.iter, memo)[0] - set(loop_vars)
            out |= _reads_outside_own_loops(s.body, loop_vars + (s.target.id,), memo)
        elif isinstance(s, (ast.If, ast.While)):
            out |= (_node_reads(s.test, memo)[0] if isinstance(s, ast.If) else set()) - \
                set(loop_vars)
            out |= _reads_outside_own_loops(s.body, loop_vars, memo)
            out |= _reads_outside_own_loops(s.orelse, loop_vars, memo)
        else:
            out |= _node_reads(s, memo)[0] - set(loop_vars)
    return out


def upward_exposed(stmts, live_after=frozenset(), record=None, contents=True, memo=None):
    """Names the statements may read before assigning them: what they need from earlier code.

    Structured liveness over assignments, element stores, `if` and `for` (the shapes the
    backward sweep is made of), so a value the backward sweep replays or pops itself is not
    asked of the forward sweep. With a dict `record`, every `for` loop's id maps to the
    names live after it (those its later code, or its enclosing loops' next iterations, may
    read). An array a loop's every iteration fills before reading it (its note `fills`: a
    recomputed iteration's buffers) is not needed from before the loop for its contents;
    with `contents=False` it counts all the same, as a name whose binding the statements
    need (the buffer must exist: bindings_needed). `memo` (by id: node and the names it
    reads) spares the walks of a loop's body that its fixpoint repeats, and of the loops it
    is nested in."""
    memo = {} if memo is None else memo
    live = set(live_after)
    for s in reversed(stmts):
        live = _live_before(s, live, record, contents, memo)
    return live


def bindings_needed(stmts, roots):
    """Arrays the statements write elements of, and so need bound whatever they held, beyond
    `roots`, the names whose values they read (upward_exposed): what eliminate_dead's
    `bound` keeps allocated without computing their elements."""
    stored = {n.value.id for n in walk(ast.Module(body=list(stmts), type_ignores=[]))
              if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store)
              and isinstance(n.value, ast.Name)}
    return (upward_exposed(stmts, contents=False) & stored) - set(roots)


def _live_before(s, live, record, contents, memo):
    if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name):
        return (live - {s.targets[0].id}) | _reads(s.value, memo)
    if isinstance(s, ast.If):
        return _reads(s.test, memo) | upward_exposed(s.body, live, record, contents, memo) | \
            upward_exposed(s.orelse, live, record, contents, memo)
    if isinstance(s, ast.For):
        if record is not None:
            record[id(s)] = record.get(id(s), set()) | live
        var = s.target.id
        entry = set(live)
        # arrays each iteration fills first
        fills = note(s, "fills", frozenset()) if contents else frozenset()
        while True:
            body_in = upward_exposed(s.body, entry, record, contents, memo) - {var} - fills
            new_entry = set(live) | body_in
            if new_entry == entry:
                break
            entry = new_entry
        return _reads(s.iter, memo) | entry
    if isinstance(s, ast.While):
        entry = set(live)
        while True:
            new_entry = set(live) | upward_exposed(s.body, entry, record, contents, memo)
            if new_entry == entry:
                return entry
            entry = new_entry
    if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
        return live | {s.target.id} | _reads(s.value, memo)     # `s += e` reads s
    return live | _reads(s, memo)
