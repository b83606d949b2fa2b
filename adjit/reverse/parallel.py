"""Parallel loops: a `numba.prange` loop of the user's runs in parallel in the generated code.

The forward sweep keeps `numba.prange` where its loop records nothing on the tape and its
iterations share nothing but reductions (`s += ...`, as numba's own rule): numba runs it as it
runs the user's function. The backward sweep of such a loop recomputes what each iteration
needs (the planner replays, records nothing) and runs as `numba.prange` over chunks of the
iterations, one chunk per thread: adjoints the iterations add into (`w_bar += ...`,
`x_bar[j] += ...`) go to the chunk's own copy, and the copies are added up in chunk order
after the loop, so the result does not depend on how the threads were scheduled (it depends
on the thread count, as a parallel sum does). An adjoint only iteration i touches
(`x_bar[i]`, `x_bar[i, k]`) is updated in place.

A loop that does not qualify runs serially in the generated code, which is always exact: the
gradient of a prange loop is the gradient of the same loop over `range` (numba gives prange
that meaning). `.source` says which it did and why.
"""
import ast
import copy

from .. import ir
from ..analysis import effects
from ..errors import error_at
from .dce import _live_before, eliminate_dead, reads_of, upward_exposed
from .recompute import leaves_early


def parallel_forward(stmts, live_after, forbidden):
    """The forward sweep with `numba.prange` back on the user's parallel loops that qualify."""
    def rewrite(loop, after):
        if _step(loop) != 1:
            return None
        effect = effects.first(loop.body)
        # numba's threads draw from generators of their own: the program's draws, and the
        # generator's state after the loop, are those of the loop run in order
        reason = "its iterations make a call that must run once, in order " \
            f"({effects.of(effect)})" if effect is not None else \
            _unshareable(loop, after, forbidden, forward=True)[0]
        if reason:
            ir.annotate(loop, comment=f"runs serially: {reason}")
            return None
        node = copy.copy(loop)
        # two arguments: numba types the index of prange(n) unsigned (i + n is then a float)
        args = loop.iter.args if len(loop.iter.args) == 2 else [ir.const(0)] + loop.iter.args
        node.iter = ast.Call(func=ast.Attribute(value=ir.name("numba"), attr="prange",
                                                ctx=ast.Load()),
                             args=args, keywords=[])
        return [ir.copy_notes(loop, node)]
    return _rewrite(stmts, set(live_after), rewrite)


def parallel_backward(stmts, live_after, tape, namegen, recompute, init=(), prefix=(),
                      recomputed=frozenset(), forward=()):
    """The backward sweep with the reversed parallel loops that qualify split into chunks
    run by `numba.prange`, each with its own copies of the adjoints iterations share.
    A loop whose body records values (`recompute`: forward loop id -> (plain body,
    recording body)) qualifies if each iteration can be recorded again just before its
    adjoint, on a tape of the chunk's own. Returns (statements, ids of the forward loops
    that must now run plain: use_plain_bodies). `init`: the statements giving recorded
    scalars their first value (each chunk starts its own copies so); `prefix`: the statements
    before `stmts` (the backward sweep's initializations); `forward`: the forward sweep, whose
    writes after a loop (or anywhere, where the loop itself left the forward sweep) keep it
    from being computed again: it would read what was written after it."""
    tape_names = tape.reserved_names()
    first = {s.targets[0].id: s.value for s in init if isinstance(s, ast.Assign) and
             isinstance(s.targets[0], ast.Name)}
    zero_at = _zero_at_entry(prefix, stmts)
    chosen = set()

    def rewrite(loop, after):
        if _step(loop) != -1:
            return None
        key = ir.note(loop, "pkey", None)
        candidate = loop
        if key in recomputed:           # its body computes the iteration again already
            candidate = copy.copy(loop)
        elif key in recompute:
            effect = effects.first(recompute[key][1])
            if effect is not None:
                ir.annotate(loop, comment="backward runs serially: its iterations make a call "
                            f"that must run once ({effects.of(effect)})")
                return None
            roots = upward_exposed(_plain(loop.body)) | tape_names
            replay = eliminate_dead(copy.deepcopy(recompute[key][1]), roots, set())
            # (arrays the iteration allocates itself are its own to write again)
            stored = sorted({n.value.id for x in ir.walk_stmts(replay) for n in _targets(x)
                             if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name)
                             and n.value.id not in tape_names} - _assigned(replay))
            if stored:
                ir.annotate(loop, comment=f"backward runs serially: its iterations store "
                            f"into `{stored[0]}`, which running one again would repeat")
                return None
            later = sorted((_arrays_read(replay) & _written_after(forward, key))
                           - _assigned(replay))
            if later:
                ir.annotate(loop, comment=f"backward runs serially: `{later[0]}`, which its "
                            "iterations read, is written after the loop")
                return None
            candidate = copy.copy(loop)
            candidate.body = replay + loop.body
        # values recorded before they are overwritten: each chunk's own (balanced per iteration)
        recorded = {_recorded(x, tape_names) for x in ir.walk_stmts(candidate.body)} - {None} \
            if candidate is not loop else set()
        private = (tape_names | recorded) if candidate is not loop else set()
        reason, sums, arrays = _unshareable(candidate, after, set() if private else tape_names,
                                            forward=False, private=private,
                                            escapes=private - recorded,
                                            zero=zero_at.get(id(loop), set()))
        if reason:
            ir.annotate(loop, comment=f"backward runs serially: {reason}")
            return None
        if private and key not in recomputed:
            chosen.add(key)
        starts = [ast.Assign(targets=[ir.store(v)], value=copy.deepcopy(first.get(
            v, ast.Constant(0.0))), lineno=0) for v in sorted(recorded)]
        return _chunked(candidate, sums, arrays, namegen, tape if private else None, starts)
    return _rewrite(stmts, set(live_after), rewrite), chosen


def _arrays_read(stmts):
    """Names the statements index (read or written)."""
    return {n.value.id for x in stmts for n in ir.walk(x)
            if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name)}


def _written_after(forward, key):
    """Names the forward sweep stores into or assigns from the loop with pkey `key` on (the
    loop included); all it writes where the loop is not in it."""
    start = 0
    for k, s in enumerate(forward):
        if any(ir.note(n, "pkey", None) == key for n in ir.walk_stmts([s])):
            start = k
            break
    out = set()
    for x in ir.walk_stmts(forward[start:]):
        for t in [e for t in _targets(x) for e in (t.elts if isinstance(t, ast.Tuple)
                                                    else [t])]:
            out.add(t.value.id if isinstance(t, ast.Subscript) and
                    isinstance(t.value, ast.Name) else getattr(t, "id", None))
    return out - {None}


def _zero_at_entry(prefix, stmts):
    """For each top-level loop of `stmts`: the scalar names that are surely 0 when it starts
    (set to 0.0 before and not touched since), as {id(loop): names}."""
    zero, out = set(), {}
    for s in list(prefix) + list(stmts):
        if isinstance(s, ast.For):
            out[id(s)] = set(zero)
        if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name) and \
                isinstance(s.value, ast.Constant) and s.value.value == 0:
            zero.add(s.targets[0].id)
            continue
        zero -= {n.id for x in ir.walk_stmts([s]) for n in _own_nodes(x)
                 if isinstance(n, ast.Name)}
    return out


def use_plain_bodies(stmts, chosen, recompute):
    """The forward sweep with the loops whose iterations the backward sweep records again
    running their plain bodies (and no tape reservation in front of them)."""
    out = []
    for s in stmts:
        if ir.note(s, "pkey", None) in chosen and not isinstance(s, ast.For):
            continue
        if isinstance(s, ast.For) and id(s) in chosen:
            s.body = recompute[id(s)][0]
        elif isinstance(s, ast.If):
            s.body = use_plain_bodies(s.body, chosen, recompute)
            s.orelse = use_plain_bodies(s.orelse, chosen, recompute)
        elif isinstance(s, (ast.For, ast.While)):
            s.body = use_plain_bodies(s.body, chosen, recompute)
        out.append(s)
    return out


def _recorded(s, tape_names):
    """The name a tape push `_ftape[_fn] = v` (or `= int(v)`) records, or None."""
    if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Subscript) and \
            isinstance(s.targets[0].value, ast.Name) and s.targets[0].value.id in tape_names:
        v = s.value
        if isinstance(v, ast.Call) and len(v.args) == 1:
            v = v.args[0]
        return v.id if isinstance(v, ast.Name) else None
    return None


def _targets(s):
    if isinstance(s, ast.Assign):
        return s.targets
    return [s.target] if isinstance(s, ast.AugAssign) else []


def has_parallel_loops(stmts):
    return any(isinstance(s, ast.For) and ir.note(s, "parallel", False)
               for s in ir.walk_stmts(stmts))


# ---------------------------------------------------------------------------------------------
def _rewrite(stmts, live_after, rewrite):
    """Statements with each outermost parallel loop replaced by rewrite(loop, names live after
    it) where that returns statements."""
    if not has_parallel_loops(stmts):   # nothing to rewrite: no liveness to work out
        return list(stmts)
    out = []
    live = set(live_after)
    memo = {}
    for s in reversed(stmts):
        after = live
        live = _live_before(_plain(s), live, None, True, memo)
        if isinstance(s, ast.For) and ir.note(s, "parallel", False):
            new = rewrite(s, after)
            if new is not None:
                out.extend(reversed(new))
                continue
        if isinstance(s, ast.If):
            s.body = _rewrite(s.body, after, rewrite)
            s.orelse = _rewrite(s.orelse, after, rewrite)
        elif isinstance(s, (ast.For, ast.While)):
            s.body = _rewrite(s.body, _loop_entry(s, after), rewrite)
        out.append(s)
    return list(reversed(out))


def _loop_entry(loop, after):
    """Names live at the end of a loop's body: after the loop, or read by a later iteration."""
    entry = set(after)
    while True:
        new = set(after) | upward_exposed(_plain(loop.body), entry)
        if new == entry:
            return entry
        entry = new


def _step(loop):
    it = loop.iter
    if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and
            it.func.id == "range" and 1 <= len(it.args) <= 3):
        return None
    if len(it.args) < 3:
        return 1
    st = it.args[2]
    if isinstance(st, ast.UnaryOp) and isinstance(st.op, ast.USub) and \
            isinstance(st.operand, ast.Constant):
        return -st.operand.value
    return st.value if isinstance(st, ast.Constant) else None


def _plain(node):
    """A copy with `x += e` spelled `x = x + e`: liveness that sees the read."""
    class Plain(ast.NodeTransformer):
        def visit_AugAssign(self, n):
            if isinstance(n.target, ast.Name):
                return ast.Assign(targets=[ir.store(n.target.id)],
                                  value=ast.BinOp(left=ir.name(n.target.id), op=n.op,
                                                  right=n.value), lineno=0)
            return n
    if isinstance(node, list):
        return [Plain().visit(copy.deepcopy(s)) for s in node]
    return Plain().visit(copy.deepcopy(node))


def _assigned(stmts):
    names = set()
    for s in ir.walk_stmts(stmts):
        if isinstance(s, ast.Assign):
            for t in s.targets:
                names |= {n.id for n in ir.walk(t) if isinstance(n, ast.Name)
                          and isinstance(n.ctx, ast.Store)}
        elif isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
            names.add(s.target.id)
        elif isinstance(s, ast.For):
            names.add(s.target.id)
    return names


def _is_reduction(s, name, forward):
    """`name += e` / `name -= e` (and, in the user's forward, `name = name + e`, `*=`), with
    `name` not read in e: numba's reduction rule."""
    ops = (ast.Add, ast.Sub, ast.Mult) if forward else (ast.Add, ast.Sub)
    if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name) and \
            s.target.id == name:
        return isinstance(s.op, ops) and name not in reads_of(s.value)
    if forward and isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name) and \
            s.targets[0].id == name and isinstance(s.value, ast.BinOp) and \
            isinstance(s.value.op, ops) and isinstance(s.value.left, ast.Name) and \
            s.value.left.id == name:
        return name not in reads_of(s.value.right)
    return False


def _fold_copies(users, name, stmts):
    """`t = name op e` followed by `name = t`, with t used nowhere else, as `name = name op e`."""
    out, folded = [], set()
    for s in users:
        if _assigns(s, name) and isinstance(s.value, ast.Name):
            temp = s.value.id
            defs = [d for d in users if _assigns(d, temp)]
            if len(defs) == 1 and sum(1 for t in stmts if _mentions(t, temp)) == 2:
                out.append(ast.Assign(targets=s.targets, value=defs[0].value, lineno=0))
                folded.add(id(defs[0]))
                continue
        out.append(s)
    return [s for s in out if id(s) not in folded]


def _assigns(s, name):
    return isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name) and \
        s.targets[0].id == name


def _reset_at_end(body, name):
    """Whether every iteration ends with `name = 0.0` (an adjoint consumed in the iteration):
    then only the first iteration sees the value it had before the loop."""
    for s in reversed(body):
        if isinstance(s, (ast.If, ast.For, ast.While)):
            if any(_mentions(x, name) for x in ir.walk_stmts([s])):
                return False
            continue
        if _mentions(s, name):
            return _assigns(s, name) and isinstance(s.value, ast.Constant) and \
                s.value.value == 0 and name not in reads_of(s.value)
    return False


def _leaves_zero(stmts, name):
    """Whether statements that start with `name` at 0 end with it at 0: the last one that
    touches it sets it to 0, or is a loop whose every iteration does (a loop that does not
    run leaves the 0)."""
    for s in reversed(stmts):
        if not any(_mentions(x, name) for x in ir.walk_stmts([s])):
            continue
        if isinstance(s, (ast.For, ast.While)):
            return not _mentions(s, name) and _leaves_zero(s.body, name)
        return _assigns(s, name) and isinstance(s.value, ast.Constant) and s.value.value == 0
    return True


def _mentions(s, name):
    """Whether a statement (not its nested blocks) reads or writes `name`."""
    parts = [s.test] if isinstance(s, (ast.If, ast.While)) else \
        [s.target, s.iter] if isinstance(s, ast.For) else [s]
    return any(isinstance(n, ast.Name) and n.id == name for p in parts for n in ir.walk(p))


def _first_index(sub):
    index = sub.slice
    return index.elts[0] if isinstance(index, ast.Tuple) and index.elts else index


def _unshareable(loop, after, forbidden, forward, private=frozenset(), escapes=None,
                 zero=frozenset()):
    """(reason the loop's iterations cannot run in parallel or None, the scalar reductions,
    the arrays iterations add into at shared elements). `private`: names each chunk will
    have its own of (a tape), left out of the checks (of `escapes` only these may be read
    after the loop). `zero`: names known to be 0 when the loop starts."""
    var, body = loop.target.id, loop.body
    stmts = list(ir.walk_stmts(body))
    if leaves_early(body):
        return "it leaves early", (), ()
    used = set()
    for s in stmts:
        used |= {n.id for n in ir.walk(s) if isinstance(n, ast.Name)}
    if used & set(forbidden):
        return "it records values on the tape", (), ()
    assigned = _assigned(body)
    carried = (upward_exposed(_plain(body)) & assigned) - {var} - set(private)
    sums, resets, zeros = [], [], []
    for name in sorted(carried):
        users = [s for s in stmts if _mentions(s, name)]
        if not forward and _reset_at_end(body, name):
            resets.append(name)
            continue
        if not forward and name in zero and _leaves_zero(body, name):
            zeros.append(name)
            continue
        if forward:     # `t = s + e; s = t`: how A-normal form spells `s = s + e`
            users = _fold_copies(users, name, stmts)
        if not all(_is_reduction(s, name, forward) for s in users):
            return f"`{name}` carries a value from one iteration to the next", (), ()
        sums.append(name)
    escaping = (assigned - set(carried) - set(private if escapes is None else escapes)) & after
    if escaping:
        return f"`{sorted(escaping)[0]}` is read after the loop", (), ()
    sums = [(name, "sum") for name in sums] + [(name, "reset") for name in resets] + \
        [(name, "zero") for name in zeros]
    # arrays: stores at the iteration's own index, or (backward) additions to privatize
    stored = {}
    for s in stmts:
        target = s.targets[0] if isinstance(s, ast.Assign) else \
            s.target if isinstance(s, ast.AugAssign) else None
        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
            stored.setdefault(target.value.id, []).append(s)
    shared = []
    for array, stores in sorted(stored.items()):
        if array in assigned or array in private:   # allocated by the iteration: its own
            continue
        subs = [n for s in stmts for n in _own_nodes(s) if isinstance(n, ast.Subscript)
                and isinstance(n.value, ast.Name) and n.value.id == array]
        whole = sum(1 for s in stmts for n in _own_nodes(s)
                    if isinstance(n, ast.Name) and n.id == array) - len(subs)
        owned = all(isinstance(_first_index(n), ast.Name) and _first_index(n).id == var
                    for n in subs)
        if whole == 0 and owned:
            continue
        adds = all(isinstance(s, ast.AugAssign) and isinstance(s.op, (ast.Add, ast.Sub))
                   for s in stores) and len(subs) == len(stores) and whole == 0
        if forward or not adds:
            return f"iterations touch the same elements of `{array}`", (), ()
        shared.append(array)
    return None, sums, shared


def _own_nodes(s):
    """The expression nodes of a statement, not of its nested blocks."""
    parts = [s.test] if isinstance(s, (ast.If, ast.While)) else \
        [s.target, s.iter] if isinstance(s, ast.For) else [s]
    for p in parts:
        yield from ir.walk(p)


def _chunked(loop, sums, arrays, namegen, tape=None, starts=()):
    """The reversed loop `for i in range(a, b, -1)` as chunks: chunk c runs i = a - c,
    a - c - n, ... with its own copies of the shared adjoints; the copies are added up after.
    With `tape`, each chunk also records on a tape of its own."""
    start, stop = (ast.unparse(a) for a in loop.iter.args[:2])
    nc, c, k = namegen.fresh("_nchunks"), namegen.fresh("_chunk"), namegen.fresh("_chunk")
    resets = [name for name, how in sums if how == "reset"]
    zeros = [name for name, how in sums if how == "zero"]
    sums = [name for name, how in sums if how == "sum"]
    own = {name: namegen.fresh(f"{name}_own") for name in sums + resets + zeros + arrays}
    tape_init = []
    if tape is not None:
        used = {n.id for x in loop.body for n in ir.walk(x) if isinstance(n, ast.Name)}
        for which, dtype in (("f", ""), ("i", ", np.int64")):
            arr, top = tape.names[which]
            if arr in used:
                own[arr], own[top] = namegen.fresh(f"{arr}_own"), namegen.fresh(f"{top}_own")
                tape_init += [f"{own[arr]} = np.empty(64{dtype})", f"{own[top]} = 0"]
    parts = {name: namegen.fresh(f"{name}_parts") for name in sums + arrays}
    trips = f"{start} + 1" if stop == "-1" else f"{start} - ({stop})"
    before = [f"{nc} = min(vec.num_threads(), max({trips}, 0))"]
    before += [f"{parts[s]} = np.zeros({nc})" for s in sums]
    before += [f"{parts[a]} = np.zeros(({nc},) + {a}.shape, {a}.dtype)" for a in arrays]
    head = [f"{own[s]} = 0.0" for s in sums] + [f"{own[a]} = {parts[a]}[{c}]" for a in arrays]
    # an adjoint each iteration consumes: the first iteration (chunk 0's first) gets its value
    head += [f"{own[r]} = {r} if {c} == 0 else 0.0" for r in resets]
    head += [f"{own[z]} = 0.0" for z in zeros]      # 0 at the start, 0 after every iteration
    head += tape_init
    tail = [f"{parts[s]}[{c}] = {own[s]}" for s in sums]
    after = [f"{s} += {parts[s]}[{k}]" for s in sums] + \
        [f"{a} += {parts[a]}[{k}]" for a in arrays]
    inner = ast.For(target=ir.store(loop.target.id), iter=ast.parse(
        f"range({start} - {c}, {stop}, -{nc})", mode="eval").body,
        body=_renamed(loop.body, own), orelse=[], lineno=0)
    chunks = ast.For(target=ir.store(c), iter=ast.parse(f"numba.prange(0, {nc})",
                                                          mode="eval").body,
                     body=ir.parse("\n".join(head)) + list(starts) + [inner] +
                     ir.parse("\n".join(tail)),
                     orelse=[], lineno=0)
    shared = ", ".join(f"`{n}`" for n in sums + arrays)
    ir.annotate(ir.copy_notes(loop, chunks, ("origin",)),
                comment="iterations shared among the threads, one chunk each" +
                ("; each iteration computed again before its adjoint" if tape_init else "") +
                (f"; each chunk adds into its own {shared}, added up after" if shared else ""))
    out = ir.parse("\n".join(before)) + [chunks]
    if resets:
        out += ir.parse(f"if {nc} > 0:\n" + "".join(f"    {r} = 0.0\n" for r in resets))
    if after:
        out += [ast.For(target=ir.store(k), iter=ast.parse(f"range({nc})", mode="eval").body,
                        body=ir.parse("\n".join(after)), orelse=[], lineno=0)]
    return out


def _renamed(stmts, names):
    class Rename(ast.NodeTransformer):
        def visit_Name(self, node):
            if node.id in names:
                return ast.copy_location(ast.Name(id=names[node.id], ctx=node.ctx), node)
            return node
    out = []
    for s in stmts:
        new = Rename().visit(copy.deepcopy(s))
        out.append(ir.copy_notes(s, new))
    return out


def check_user_races(stmts):
    """Refuse a prange loop whose iterations provably read and write the same elements: one
    stores y[i] (i the loop index) and the loop also reads or writes y[i + c], c != 0. numba
    runs such iterations in any order, so the function has no single value to differentiate.
    (Loops adjit cannot prove race-free are differentiated as the same loop over range.)"""
    for loop in ir.walk_stmts(stmts):
        if not (isinstance(loop, ast.For) and ir.note(loop, "parallel", False)):
            continue
        var = loop.target.id
        stmts_in = list(ir.walk_stmts(loop.body))
        offsets = {}                    # name -> c, for `name = i + c` / `name = i - c`
        for s in stmts_in:
            if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name) and \
                    isinstance(s.value, ast.BinOp) and isinstance(s.value.op, (ast.Add, ast.Sub)) \
                    and isinstance(s.value.left, ast.Name) and s.value.left.id == var and \
                    isinstance(s.value.right, ast.Constant) and \
                    isinstance(s.value.right.value, int) and s.value.right.value:
                c = s.value.right.value
                offsets[s.targets[0].id] = c if isinstance(s.value.op, ast.Add) else -c
        own, other = set(), {}
        for s in stmts_in:
            target = s.targets[0] if isinstance(s, ast.Assign) else \
                s.target if isinstance(s, ast.AugAssign) else None
            for n in _own_nodes(s):
                if not (isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name)):
                    continue
                first = _first_index(n)
                if n is target and isinstance(first, ast.Name) and first.id == var:
                    own.add(n.value.id)
                elif isinstance(first, ast.Name) and first.id in offsets:
                    other.setdefault(n.value.id, offsets[first.id])
        for array in sorted(own & set(other)):
            c = other[array]
            other_i = f"{var} {'+' if c > 0 else '-'} {abs(c)}"
            raise error_at(
                ir.note(loop, "origin"),
                f"iterations of this numba.prange loop read and write the same elements of "
                f"`{array}` (iteration {var} writes {array}[{var}] and also uses {array}[{other_i}], "
                f"which iteration {other_i} writes): numba runs them in any order, so the "
                f"function has no single value to differentiate",
                "Loop with range(...) if each iteration needs another's result, or write "
                "into a second array (y_new[i] = f(y[i - 1], y[i]))")
