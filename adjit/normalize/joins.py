"""Arrays that meet where paths join: one name, a new array on each path.

numba gives `y` one array after

    if flag > 0:
        y = 2.0 * x
    else:
        y = np.sin(x)

(the one the path taken made) and a helper's call one array whichever of its `return`s
ran. adjit needs one name for one array (the reverse pass keeps one adjoint per array), so
each path keeps its own array under its own name, records its shape and its number, and
after the join one new array of that shape takes a copy of the one that was made:

    if _c1:                           else:
        _a1 = ... 2.0 * x ...             _a2 = ... np.sin(x) ...
        _rs1 = _a1.shape[0]               _rs1 = _a2.shape[0]
        _which1 = 0                       _which1 = 1
    _a3 = np.empty(_rs1)
    if _which1 == 0: _a3[...] = _a1
    if _which1 == 1: _a3[...] = _a2
    y = _a3

The copy costs one pass over the array; its adjoint hands the cotangent back to the array
the path made. A path may also keep the array the name held before the `if` (`b =
np.zeros(3)` then `if c: b = np.ones(3)`), or bind the name to another array or a view
(`y = x`, then `if unit: y = y / norm(y)`): those are copied too. Python's name then IS
that array on that path, which a copy is only while neither is written: a later write into
either, while the other is read afterwards (or is the caller's argument), is refused
(check_frozen), as is a kept array that a view still reads (the view would see the one
array and not the other)."""
import ast
import copy

from .. import ir
from .bindings import _At, _Binding, _rebased, _same_structure
from .views import view_atoms
from .values import Copied
from ..errors import error_at
from .vectorize import ONE

_EXITS = (ast.Break, ast.Continue)      # (what leaves an iteration before its end)


def shape_and_number(norm, array, shape, which, k, origin):
    """The statements a path ends with: the shape of its `array` (a name or a View) into
    the names `shape`, its number `k` into `which` (None: a helper's `return k`)."""
    out = []
    for j, n in enumerate(shape):
        if isinstance(array, str):
            value = ast.Subscript(value=ast.Attribute(value=ir.name(array), attr="shape",
                                                      ctx=ast.Load()),
                                  slice=ir.const(j), ctx=ast.Load())
        else:               # a View: its length in that dimension (an atom, or ONE)
            value = ir.const(1) if array.shape[j] is ONE else copy.deepcopy(array.shape[j])
        out.append(ir.assign(n, value, origin))
    if which is not None:
        out.append(ir.assign(which, ir.const(k), origin))
    return out


def copy_taken(norm, out, which, arrays, shape, dtype, origin):
    """After the join: a new array of the recorded shape, then a copy of array k (a name,
    or a View) where `which` is k. Returns the new array's name."""
    norm.origin = origin or norm.origin
    name = norm.fresh("_a")
    norm.arrays.allocate(name, [ir.name(n) for n in shape], out, dtype)
    norm.arrays.add_temp(name)
    target = norm.arrays.full_view(name, [ir.name(n) for n in shape])
    start = len(out)
    for k, arr in enumerate(arrays):
        branch = []
        source = norm.arrays.view_of(arr, branch) if isinstance(arr, str) else arr
        norm.arrays.store_elements(target, source, branch)
        norm.emit_if(out, ast.Compare(left=which, ops=[ast.Eq()], comparators=[ir.const(k)]),
                     branch, [])
    # a path's stopped array (stop_gradient of x), copied: numba's is x itself on that path
    stopped = sorted({b for c in norm.ctx.frozen if c.stopped for arr in arrays
                      if c.target == (arr if isinstance(arr, str) else arr.base)
                      for b in c.bases})
    if stopped:
        norm.ctx.frozen.append(Copied(stopped, name, out[start:], None, norm.origin,
                                      norm.origin[1] if norm.origin else 0, True))
    return name


def read_outside(norm, tree, stmt):
    """The names (as the normalizer spells them) `tree` reads outside `stmt`, or None for
    every name where `stmt` is in a loop (a later iteration may read what it binds)."""
    if norm.ctx.loop_depth > 0:
        return None
    inside = {id(n) for n in ast.walk(stmt)}
    return {norm.local(n.id) for n in ast.walk(tree) if isinstance(n, ast.Name) and
            isinstance(n.ctx, ast.Load) and id(n) not in inside}


def plan(norm, before, views, paths, arrays_before, arguments=frozenset(), live=None):
    """What each path binds the names to join: {name: [source on each path]}, a source being
    ("site", the binding that makes the array: joined under a name of its own), ("made",
    the array the path made and bound the name to, as a whole), ("view", the View the
    name is bound to on that path: a view of an array the path did not make, or that
    another name views too, or the binding from before the `if` that the path kept) or
    ("kept", the name: an array bound before the `if` that the path leaves alone and no
    view reads; `arrays_before` holds what it is; `arguments`: the arguments still the
    caller's arrays before the `if`). Only names in `live` (read_outside; None: all) are
    joined: a name each path uses only itself needs no join. `before`: the bindings before the
    `if`; `views`: each path's at its end. Names that bindings.merge_views joins itself
    (views of one array at positions each path sets) and names no path binds anew are
    left out. Call before merge_views."""
    if norm.ctx.cuda:
        return {}               # (device code allocates no arrays: left refused)
    sites = [_joinable(norm, p, v) for p, v in zip(paths, views)]
    if live is not None:        # (an array a view reads is read where the view is)
        live = live | {b.view.base for v in views for b in v.values()
                       if isinstance(b, _Binding)}
    out = {}
    for target in set(sites[0]) | set(sites[1]) | set(views[0]) | set(views[1]):
        if live is not None and target not in live:
            continue
        got = [v.get(target) for v in views]
        if target not in sites[0] and target not in sites[1] and \
                all(g is before.get(target) for g in got):
            continue            # bound on neither path
        if all(isinstance(g, _Binding) for g in got) and \
                got[0].view.base == got[1].view.base and \
                _same_structure([g.view for g in got]):
            continue            # one array at positions each path sets (merge_views)
        sources = []
        for k, (path, g) in enumerate(zip(paths, got)):
            if target in sites[k]:
                sources.append(("site", sites[k][target]))
            elif g is None and before.get(target) is None and \
                    target in arrays_before and \
                    target not in ir.assigned(path) and \
                    not any(isinstance(c, _Binding) and c.view.base == target
                            for c in views[k].values()):
                sources.append(("kept", target, arrays_before[target], target in arguments))
            elif not isinstance(g, _Binding):
                break
            elif g.view.is_identity() and g.view.parent is None and \
                    _made_in(norm, path, g.view.base) and \
                    sum(1 for c in views[k].values() if isinstance(c, _Binding) and
                        c.view.base == g.view.base) == 1:
                sources.append(("made", g.view.base))
            else:
                sources.append(("view", g.view))
        else:
            if not any(_leaves_after(path, source) for path, source in zip(paths, sources)):
                out[target] = sources
    return out


def _leaves_after(path, source):
    """Whether `path` may break or continue its loop after binding the name to `source`:
    the join after the `if` would not run, and the name would keep its array from before
    (such names stay refused)."""
    kind, what = source[:2]
    if kind == "kept":
        return False
    if kind == "site":
        k = next(j for j, s in enumerate(path) if s is what)
        return ir.breaks(path[k + 1:], _EXITS)
    return ir.breaks(path, _EXITS)


def join_arrays(norm, paths, out, planned):
    """After an `if` statement's branches (`paths`: the two normalized blocks, already
    placed in the `if` emitted into `out`): each name of `planned` (plan()) is joined as
    the module's docstring shows. A path's view of an array it did not make is copied
    too, which is what Python does only while neither array is written afterwards: those
    arrays are noted (check_frozen refuses a write). Other arrays bound on both paths are
    left to the reverse pass, which refuses them."""
    if not planned:
        return
    which = norm.fresh("_which")
    norm.ctx.ints.add(which)
    line = norm.origin[1] if norm.origin else 0         # the `if`'s
    infos, origins = {}, {}
    for target in sorted(planned):
        sources = planned[target]
        infos[target] = [_info(norm, source) for source in sources]
        origin = origins[target] = next((ir.note(what, "origin", None)
                                         for kind, what, *_ in sources if kind == "site"),
                                        None) or norm.origin
        info = infos[target]
        if None in info or len({i[0] for i in info}) != 1 or \
                len({i[1] for i in info}) != 1 or info[0][1] == "?":
            unknown = None not in info and len({i[0] for i in info}) == 1 and \
                "?" in {i[1] for i in info}
            raise norm.error(_At(origin[1] if origin else 0),
                             f"'{_user(norm, target)}' is bound on the paths of "
                             "an `if` to arrays " + ("whose dtype adjit cannot tell there"
                                                     if unknown else
                                                     "of different ranks or dtypes"),
                             "Make arrays of one rank and dtype on every path (x.astype("
                             "np.float64), np.full(shape, v) for a constant array).")
    own = [{}, {}]          # per path: name -> the name its array is kept under there
    for target in sorted(planned):
        for k, (path, (kind, what, *_)) in enumerate(zip(paths, planned[target])):
            if kind == "site":
                own[k][target] = _own_name(norm, path, what, target)
    joined = []
    for target in sorted(planned):
        sources, origin = planned[target], origins[target]
        shape = [norm.fresh("_rs") for _ in range(infos[target][0][0])]
        norm.ctx.ints.update(shape)
        arrays, frozen = [], set()
        for k, (path, (kind, what, *more)) in enumerate(zip(paths, sources)):
            if kind == "site":
                what = own[k][target]
            elif kind == "view":
                frozen.add(what.base)
                if what.base in own[k]:     # a view of another joined name's array
                    what = _rebased(what, own[k][what.base])
                # the numbers the path computed its view's shape and place from (adjit's
                # own), read by the copy only where that path ran: not carried between
                # iterations of a loop around the `if`
                made = ir.assigned(path)
                norm.ctx.vec_temps.joined.update(
                    a.id for a in view_atoms(what) if isinstance(a, ast.Name) and
                    a.id in made and a.id not in norm.ctx.user_names)
            elif kind == "kept" and more[1]:
                frozen.add(what)            # (the caller's array on that path)
            if kind in ("site", "made"):
                norm.ctx.vec_temps.joined.add(what)
            arrays.append(what)
            path.extend(shape_and_number(norm, what, shape, which, k, origin))
        name = copy_taken(norm, out, ir.name(which), arrays, shape, infos[target][0][1],
                          origin)
        joined.append((target, name, frozen, origin))
    # every copy is made before any name is bound to its joined array: a path's view of
    # another joined name's array (`x, y = y, x` of two arguments) reads the array it meant
    for target, name, frozen, origin in joined:
        # views the paths took of the name's array after binding it (`v = y[1:]` on both
        # paths) view the joined array, which holds what theirs held; an argument's views
        # (taken before the `if`, on paths that only viewed other arrays) see the caller's
        # array, not the joined one: stale (bindings.rebinding)
        norm.views.pop(target, None)
        viewed_only = target in norm.src.params and \
            all(kind in ("view", "kept") for kind, *_ in planned[target])
        rooted = {} if viewed_only else \
            {t: b for t, b in norm.views.items()
             if isinstance(b, _Binding) and b.view.base == target}
        for t in rooted:
            del norm.views[t]
        norm.emit_assign(out, target, ir.name(name))
        norm.views.update(rooted)
        if frozen:
            norm.ctx.frozen.append(Copied(sorted(frozen), target, [out[-1]],
                                          _user(norm, target), origin, line, False))


def check_frozen(stmts, ctx, loc, params):
    """Refuse a write, after adjit copied an array where Python's name is that array itself
    (a join that copied a view, join_arrays; stop_gradient of an array), into the array or
    into the copy: in Python both names are one array there, and the write would show
    through the other (where the other is read afterwards, or is one of `params`, the
    caller's arrays)."""
    if not ctx.frozen:
        return
    order = []          # (statement, the loops around it, its block), in program order
    ends = {}           # position of a statement -> position of the last one inside it
    spans = {}          # id(block) -> (first, last) positions of the statements in it
    bodies = {}         # id(loop) -> id(its body)

    def visit(block, loops):
        first = len(order)
        for s in block:
            k = len(order)
            order.append((s, loops, id(block)))
            if isinstance(s, (ast.For, ast.While)):
                # (a loop of vectorized code is one numpy operation, which reads what it
                # reads before it writes: it runs once here, not again after a write)
                bodies[id(s)] = id(s.body)
                again = isinstance(s, ast.While) or ir.note(s, "user", False)
                visit(s.body, loops + (id(s),) if again else loops)
            elif isinstance(s, ast.If):
                visit(s.body, loops)
                visit(s.orelse, loops)
            ends[k] = len(order) - 1
        spans[id(block)] = (first, len(order) - 1)
    visit(stmts, ())
    renamed = [(s.targets[0].id, s.value.id) for s, *_ in order
               if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name) and
               isinstance(s.value, ast.Name)]
    position = {id(s): k for k, (s, *_) in enumerate(order)}
    making = {}         # id(Copied) -> the positions of the statements that make it
    made = {}           # position of a statement that makes a copy -> its name
    for c in ctx.frozen:
        making[id(c)] = {k for p in (position.get(id(m)) for m in c.made) if p is not None
                         for k in range(p, ends[p] + 1)}
        made.update((k, c.target) for k in making[id(c)])
    # a name rebound in place (`u = u * a` in a loop, stored into u's array): in Python a
    # new array, which neither the copy nor the array copied is
    rebound = {}
    for p, (s, *_) in enumerate(order):
        if id(s) in ctx.rebound:
            name = next(iter(ir.stored_names([s])))
            rebound.update((k, name) for k in range(p, ends[p] + 1))
    bound = _Bound(order, spans, bodies, made, rebound)
    for c in ctx.frozen:
        bases, targets = _other_names(set(c.bases), renamed), _other_names({c.target}, renamed)
        at = position.get(id(c.made[-1]))
        loops = set(order[at][1]) if at is not None else set()
        for k, (s, around, _) in enumerate(order):
            if at is not None and k <= at and not loops & set(around) or \
                    k in making[id(c)] or made.get(k) in targets or k in rebound:
                continue        # (before the copy, or the copy itself or made again)
            written = _written(s, bases | targets)
            if written is None:
                continue
            if at is not None and k < at and _made_before(order, written, k, at):
                continue        # (the array this iteration makes, before the join)
            if at is not None and c.stopped and bound.bound_between(
                    ends[at], k, written, targets if written in targets else bases):
                continue        # (`x = np.zeros(3)` after the stop: a write into a new array)
            other = bases if written in targets else targets
            if at is not None and not other & set(params) and \
                    not _read_after(order, other, k,
                                    bound if c.stopped and written in bases else None):
                continue        # (no name that shares the array is read again; the
                #                  caller reads its arguments after the call)
            if c.stopped and (ir.note(s, "origin", None) or c.origin):
                # (at the write, in the function that makes it: a helper's own line)
                raise error_at(ir.note(s, "origin", None) or c.origin,
                               *_stopped_message(c, written, targets))
            if c.stopped:
                raise loc.error(_At(0), *_stopped_message(c, written, targets))
            raise loc.error(_At((ir.note(s, "origin", None) or c.origin or (0, 0))[1]),
                            *_joined_message(c, c.target if written in targets else written))


def _other_names(names, renamed):
    """`names` and the names bound to one of them (`u = w`: the same array), transitively."""
    names = set(names)
    while True:
        more = {a for a, b in renamed if b in names} - names
        if not more:
            return names
        names |= more


def _joined_message(c, written):
    user, line = c.user, c.line
    shown = [b for b in c.bases if not b.startswith("_")] or ["another array"]
    kept = " or ".join(f"'{b}'" if b != "another array" else b for b in shown)
    what = f"'{user}'" if written == c.target else f"'{written}'"
    if c.bases == [c.target]:       # an argument kept on one path
        return (f"a write into {what} after an `if` (line {line}) that binds '{user}' to a "
                "new array on one path and keeps the argument on the other, where the write "
                "would change the caller's array",
                f"Copy the argument before the `if` ({user} = {user}.copy()), or write into "
                "a new array.")
    return (f"a write into {what} after an `if` (line {line}) that bound '{user}' to {kept} "
            "(or a view of it) on one path and to a new array on the other: there Python's "
            "two names are one array, which the write changes for both",
            f"Copy where the path binds '{user}' to {kept}" + (
                f" ({user} = {shown[0]}.copy() for {user} = {shown[0]})"
                if shown[0] != "another array" else "") +
            f", so that '{user}' is an array of its own on every path; or write before the "
            "`if`.")


def _stopped_message(c, written, targets):
    source = next((b for b in c.bases if not b.startswith("_")), None)
    source = f"'{source}'" if source else "an array"
    named = c.user or next((n for n in sorted(targets) if not n.startswith("_")), None)
    stopped = f"'{named}'" if named else "the array it gave"
    if written in targets:
        what = f"'{written}'" if not written.startswith("_") else f"{stopped} (or a view of it)"
        told = (f"a write into {what} after `stop_gradient` of {source} (line {c.line}), "
                f"where {source} is read afterwards")
    else:
        told = (f"a write into '{written}' after `stop_gradient` of {source} (line "
                f"{c.line}), where {stopped} is read afterwards")
    return (told + ": numba's stop_gradient gives the array itself, so the write changes "
            "both, while adjit's stopped value is an array of its own",
            "Stop a copy (`stop_gradient(x.copy())`), write before stopping the array, or "
            "stop it again after the write.")


def _made_before(order, name, k, at):
    """Whether `name` is bound, in the block that holds the join at `at` (each time that
    block runs), before statement k does: statement k, between them, writes that new
    array, not the one the join copied an iteration earlier."""
    block = order[at][2]
    return any(b == block and j < k and isinstance(s, ast.Assign) and
               any(isinstance(t, ast.Name) and t.id == name for t in s.targets)
               for j, (s, _, b) in enumerate(order[:at]))


class _Bound:
    """Where names are bound anew (`name = ...`, on its own in its block; a copy made into
    the array, a name rebound in place: from the first statement that does it to the last
    one inside it, after which the binding holds): which reads of a stopped copy a write
    into the array it copied leaves alone (those every path from the write reaches through
    the copy made again)."""

    def __init__(self, order, spans, bodies, made, rebound):
        self.order, self.spans, self.bodies = order, spans, bodies
        self.at = {}        # name -> [(first, last) positions of a statement binding it]
        for p, (s, *_) in enumerate(order):
            if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name):
                self.at.setdefault(s.targets[0].id, []).append((p, p))
            for into in (made, rebound):
                if p in into and (p - 1 not in into or into[p - 1] != into[p]):
                    q = p
                    while into.get(q + 1) == into[p]:
                        q += 1
                    self.at.setdefault(into[p], []).append((p, q))

    def bound_between(self, k, j, name, same):
        """Whether every path from statement k to statement j binds `name` to another array
        than those of `same` (`y = _a3` of a name in `same` is the same array)."""
        return any(self._between(k, p, j) for p in self.at.get(name, ())
                   if not (isinstance(self.order[p[0]][0], ast.Assign) and
                           isinstance(self.order[p[0]][0].value, ast.Name) and
                           self.order[p[0]][0].value.id in same))

    def again(self, k, j, names):
        """Whether every name of `names` that statement j reads is bound again on every
        path from statement k to j."""
        read = _loads(self.order[j][0]) & names
        return all(any(self._between(k, p, j) for p in self.at.get(n, ())) for n in read)

    def _between(self, k, p, j):
        (p, last), block = p, self.order[p[0]][2]
        if j > k:       # on in program order: p's block holds both, k before p, p before j
            first, end = self.spans[block]
            return first <= k < p and last < j <= end
        shared = [m for m in self.order[j][1] if m in self.order[k][1]]
        # around the innermost loop holding both: bound on each iteration, before j, or
        # after k with no `break` or `continue` between (which would go round without it)
        return bool(shared) and self.bodies[shared[-1]] == block and (
            last < j or k < p and not any(isinstance(s, _EXITS) for s, *_ in self.order[k + 1:p]))


def _read_after(order, names, k, bound=None):
    """Whether a statement that may run after statement k reads one of `names`: a later one,
    or one in a loop around k (on the next iteration); with `bound` (a _Bound), not one that
    every path from k reaches only through those names bound again."""
    for j, (s, around, _) in enumerate(order):
        if not _loads(s) & names or j <= k and not set(around) & set(order[k][1]):
            continue
        if bound is not None and bound.again(k, j, names):
            continue
        return True
    return False


def _loads(s):
    """The names a normalized statement reads itself (a compound statement: its test or
    its range, not its body); a store's target array is not read, nor an array whose
    shape alone is (`x.shape[0]`: the copy's is the array's)."""
    if isinstance(s, ast.Assign):
        if isinstance(s.value, ast.Subscript) and isinstance(s.value.value, ast.Attribute) \
                and s.value.value.attr == "shape":
            return set()
        nodes = [s.value] + ([s.targets[0].slice] if ir.is_store(s) else [])
    elif isinstance(s, (ast.If, ast.While)):
        nodes = [s.test]
    elif isinstance(s, ast.For):
        nodes = [s.iter]
    elif isinstance(s, (ast.Expr, ast.Return)) and s.value is not None:
        nodes = [s.value]
    else:
        nodes = []
    return {n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name)}


def _written(s, names):
    """The name of `names` statement `s` writes into (an element or a slice, or passes to a
    call whose value is dropped, unless it is known to write none: an objmode block found
    to read its arrays only, a helper kept as numba's shown to write nothing), or None."""
    if ir.is_store(s) and s.targets[0].value.id in names:
        return s.targets[0].value.id
    if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and \
            not ir.note(s.value, "unwritten", False) and not ir.note(s.value, "pure", False):
        for n in ast.walk(s.value):
            if isinstance(n, ast.Name) and n.id in names:
                return n.id
    return None


def _info(norm, source):
    """(rank, dtype) of a path's source."""
    kind, what = source[:2]
    if kind == "site":          # (the target's own entry is the last path's)
        return norm.array_info(what.value)
    if kind == "made":
        return norm.ctx.arrays.get(what)
    if kind == "kept":
        return source[2]
    info = norm.ctx.arrays.get(what.base)
    return None if info is None else (len(what.shape), info[1])


def _joinable(norm, path, views):
    """{name: its binding} for the names `path` binds exactly once, at its top level, to an
    array the binding makes (an allocation, an array operation, a copy, an array the
    vectorizer filled)."""
    stores = {}
    for s in ir.walk_stmts(path):
        for t in _stored_names(s):
            stores[t] = stores.get(t, 0) + 1
    out = {}
    for s in path:
        if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and
                isinstance(s.targets[0], ast.Name)):
            continue
        target = s.targets[0].id
        if stores.get(target) != 1 or target not in norm.ctx.arrays or target in views:
            continue
        if isinstance(s.value, ast.Name):
            if s.value.id in norm.ctx.vec_temps and s.value.id in norm.ctx.arrays:
                out[target] = s
        elif norm.makes_array(s.value):
            out[target] = s
    return out


def _made_in(norm, path, array):
    """Whether `path` makes `array`: an array of the vectorizer's (or a product's),
    assigned once, at the path's top level."""
    if array in norm.src.params or array not in norm.ctx.arrays:
        return False
    sites = [s for s in ir.walk_stmts(path) if array in _stored_names(s)]
    return len(sites) == 1 and any(s is sites[0] for s in path) and \
        (array in norm.ctx.vec_temps or norm.makes_array(sites[0].value))


def _own_name(norm, path, site, target):
    """The name `path` keeps its array under: the vectorizer's array bound to `target`, or a
    new name for an array made by a call. The binding goes and what the path does with
    `target` afterwards it does with that name."""
    k = next(j for j, s in enumerate(path) if s is site)
    if isinstance(site.value, ast.Name):
        own = site.value.id
        del path[k]
        start = k
    else:
        own = norm.fresh("_a")
        norm.ctx.arrays[own] = norm.array_info(site.value)
        if target in norm.ctx.layouts:
            norm.ctx.layouts[own] = norm.ctx.layouts[target]
        site.targets[0] = ast.Name(id=own, ctx=ast.Store())
        start = k + 1
    for s in path[start:]:
        for n in ir.walk(s):
            if isinstance(n, ast.Name) and n.id == target:
                n.id = own
    return own


def _stored_names(s):
    if isinstance(s, ast.Assign):
        for t in s.targets:
            for e in (t.elts if isinstance(t, ast.Tuple) else [t]):
                if isinstance(e, ast.Name):
                    yield e.id
    elif isinstance(s, ast.For) and isinstance(s.target, ast.Name):
        yield s.target.id


def _user(norm, target):
    """The name as the user wrote it (a helper's locals carry its prefix here)."""
    name = getattr(norm, "in_place_names", {}).get(target, target)
    return name[len(norm.prefix):] if norm.prefix and name.startswith(norm.prefix) else name
