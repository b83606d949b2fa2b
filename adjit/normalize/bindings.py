"""Names bound to views, tracked through branches and loops (see views.py).

A name bound to a view (`row = A[i]`, `y = x`) is an index map onto its base array: every read
and write through the name is rewritten into the base. The bindings of each name are tracked
here, by functions of the normalizer (`norm`, whose `views` maps each name to its binding):
merged after an `if` (differing positions come from variables each branch sets), checked
around loops, and refused where a path leaves them unknown."""
import ast

from .. import ir
from . import swaps
from .views import Take, view_atoms, with_atoms
from .vectorize import ONE, View


def new_binding(norm, view):
    """A new binding of a name to `view` (numbered: check_loop_views orders them)."""
    norm.ctx.serial += 1
    # an array the vectorizer filled once may now be written again through the name
    norm.ctx.vec_temps.write_once.discard(view.base)
    return _Binding(view, norm.ctx.serial)


def view_name(norm, node):
    """The local target name of `node` (a Name) when it is bound to a view, else None."""
    if not (isinstance(node, ast.Name) and node.id in norm.src.locals):
        return None
    target = norm.local(node.id)
    return target if isinstance(target, str) and target in norm.views else None


def use_view(norm, target, node):
    """The View a name is bound to, for a read or a write through it."""
    binding = norm.views[target]
    if isinstance(binding, _Unknown):
        user = getattr(node, "id", target)
        advice = binding.advice.format(name=user) if binding.advice else \
            "Bind the name to one array or view on every path (before the branch or " \
            "loop), or copy: v = x[1:].copy()."
        raise norm.error(node, f"'{user}' {binding.why} (line {binding.line}), so which "
                         "array it refers to is not known when the code is compiled", advice)
    norm.view_uses.append((target, binding.serial))
    return binding.view


def bind_view(norm, target, view, out):
    """`target = <a view>`: the name becomes an alias (an index map, no array). Names of
    user variables the map reads are copied, so that the map keeps the positions it had
    when the name was bound (`row = A[i]` stays row i when i changes)."""
    frozen, atoms = {}, view_atoms(view)
    for k, atom in enumerate(atoms):
        if isinstance(atom, ast.Name) and atom.id in norm.ctx.user_names and \
                atom.id not in norm.ctx.arrays:
            if atom.id not in frozen:
                keep = norm.fresh("_v")
                norm.emit_assign(out, keep, atom)
                frozen[atom.id] = ir.name(keep)
            atoms[k] = frozen[atom.id]
    if frozen:
        view = with_atoms(view, atoms)
    rebinding(norm, target, out, to_view=True)
    norm.views[target] = new_binding(norm, view)


def same_binding(norm, target, view):
    """Whether `target = <view>` leaves the name meaning what it means now: the whole of the
    array the name holds (`s` given to a helper that writes into it and returns it, as
    statsforecast's ETS update does: `l, b, s = update(..., s, ...)`), or the very view it
    is bound to (a view handed through a helper and back)."""
    now = norm.views.get(target)
    if now is None:
        return view.is_identity() and view.base == target and target in norm.ctx.arrays
    return isinstance(now, _Binding) and now.view is view


def rebinding(norm, name, out, to_view=False):
    """`name` is about to hold another array or value. Views of the array it held keep
    that array: its contents are kept in a new array they now read (in Python the old
    array lives on through them). Views of an argument that is rebound are stale, unless
    the name now views an array too (`x, y = y, x` of two arguments): the argument's array
    is then still the caller's, under its own name (a later binding of the name to a new
    array makes them stale there)."""
    norm.views.pop(name, None)
    rooted = [t for t, b in norm.views.items() if isinstance(b, _Binding) and
              b.view.base == name]
    if not rooted or (to_view and name in norm.src.params and name in norm.ctx.arrays):
        return
    if name in norm.src.params or name not in norm.ctx.arrays:
        for t in rooted:
            norm.views[t] = _Unknown(f"views the argument '{name}', which was rebound",
                                     norm.origin[1] if norm.origin else 0)
        return
    keep = norm.fresh(f"_{name}_old")
    ndim, dtype = norm.ctx.arrays[name]
    out.append(ir.assign(keep, ast.Call(func=ast.Attribute(value=ir.name(name),
                                                           attr="copy", ctx=ast.Load()),
                                        args=[], keywords=[]), norm.origin))
    norm.ctx.arrays[keep] = (ndim, dtype)
    for t in rooted:
        norm.views[t] = new_binding(norm, _rebased(norm.views[t].view, keep))
        norm.views[t].kept_from = name


def merge_views(norm, before, branches, out_blocks, line):
    """The bindings after an `if`: a name bound to the same view on both paths keeps it;
    views of one array that differ only in positions (`v = x[0]` / `v = x[1]`) read
    positions each branch sets; anything else cannot be known here."""
    names = set().union(*branches)
    merged = {}
    for name in names:
        got = [b.get(name) for b in branches]
        if all(g is got[0] for g in got):
            merged[name] = got[0]
            continue
        views = [g.view if isinstance(g, _Binding) else None for g in got]
        if all(v is not None for v in views) and _same_structure(views):
            atoms = [view_atoms(v) for v in views]
            chosen = list(atoms[0])
            for k, a in enumerate(atoms[0]):
                if all(_same_atom(a, other[k]) for other in atoms[1:]):
                    continue
                sel = norm.fresh("_sel")
                norm.ctx.ints.add(sel)
                for block, other in zip(out_blocks, atoms):
                    block.append(ir.assign(sel, other[k], norm.origin))
                chosen[k] = ir.name(sel)
            merged[name] = new_binding(norm, with_atoms(views[0], chosen))
            continue
        merged[name] = _Unknown("is bound to different arrays or views on the paths "
                                "of an `if`", line)
    norm.views = merged


def check_loop_views(norm, before, mark, first, line):
    """After a loop body: a name the body binds to another view must not be read in the
    body before that binding (it would mean the previous iteration's binding)."""
    rebound = {n for n in set(before) | set(norm.views)
               if norm.views.get(n) is not before.get(n)}
    kept_arrays = {name: _kept_from(norm, before, name) for name in rebound}
    for name, kept in kept_arrays.items():
        if kept is not None:
            # `first = u` before the loop, `u = u * z` in it: `first` is u's old array if
            # the loop ran, u itself if it did not (anf.keep_old_arrays takes the cases
            # where nothing tells the two apart)
            user = getattr(norm, "in_place_names", {}).get(kept, kept)
            norm.views[name] = _Unknown(
                f"views the array of '{user}', which the loop binds to another array: after "
                "the loop it is that old array if the loop ran and the same array as "
                f"'{user}' if it did not (adjit keeps the two apart where the loop and the "
                "code after it only read them)", line, f"Copy it where it is bound: {{name}} "
                f"= {user}.copy().")
            if any(n == name and serial <= first for n, serial in norm.view_uses[mark:]):
                use_view(norm, name, ast.Name(id=name, lineno=line))    # (read in the loop)
    for name, serial in norm.view_uses[mark:]:
        if name in rebound and serial <= first:
            user = getattr(norm, "in_place_names", {}).get(name, name)
            now = norm.views.get(name)
            if isinstance(now, _Binding) and now.view.is_identity() and \
                    now.view.base != name:
                other = getattr(norm, "in_place_names", {}).get(now.view.base,
                                                                now.view.base)
                raise norm.error(_At(line), f"the loop hands '{user}' the array of "
                                 f"'{other}' (`{user} = {other}`) and reads '{user}' "
                                 "before that in the next iteration, where both names "
                                 "may mean one array", f"Make '{other}' anew at the top of "
                                 "each iteration (a copy, an allocation or arithmetic) "
                                 f"and write neither name after `{user} = {other}` in the "
                                 f"iteration; or copy the values in: {user}[:] = {other}.")
            raise norm.error(_At(line), f"the name '{user}' is read in a loop before the loop "
                             "binds it to another view (which array it means changes "
                             "between iterations)", "Bind it at the top of the loop body, "
                             "or copy: v = x[i].copy().")
    for name in rebound:
        if before.get(name) is not None and name in norm.views and \
                kept_arrays[name] is None:
            norm.views[name] = _Unknown("is bound in a loop that may run zero times "
                                        "after it was bound before the loop", line)


def _kept_from(norm, before, name):
    """The array whose old contents the loop's rebinding of it handed to `name` (which
    viewed that array before the loop), or None."""
    now, then = norm.views.get(name), before.get(name)
    kept = getattr(now, "kept_from", None)
    return kept if isinstance(then, _Binding) and then.view.base == kept else None


def refuse_swapped_bases(norm, loop):
    """A loop that swaps array names exchanges their contents after the loop (see
    normalize/swaps.py): a view of one of those arrays would then see the other one."""
    for x in loop.body:
        swap = swaps.find_swap(x, lambda n: is_array_local(norm, n))
        if not swap:
            continue
        for name in swap[0]:
            target = norm.local(name)
            if is_view_local(norm, name) or not isinstance(target, str):
                continue
            viewers = sorted(t for t, b in norm.views.items() if isinstance(b, _Binding)
                             and b.view.base == target)
            if viewers:
                raise norm.error(x, f"a swap of the array '{name}', which '{viewers[0]}' "
                                 "is a view of", "Take the view inside the loop, after the "
                                 "swap, or copy it (v = u[1:].copy()).")


def is_view_local(norm, name):
    target = norm.local(name) if name in norm.src.locals else None
    return isinstance(target, str) and isinstance(norm.views.get(target), _Binding)


def is_array_local(norm, name):
    if name not in norm.src.locals:
        return False
    target = norm.local(name)
    if isinstance(target, str) and isinstance(norm.views.get(target), _Binding):
        return True
    atom = ir.name(target) if isinstance(target, str) else target
    return norm.arrays.array_ndim(atom) is not None


class _Binding:
    """A local name bound to a View (an alias of part of an array)."""

    def __init__(self, view, serial):
        self.view = view
        self.serial = serial


class _Unknown:
    """A name whose view binding this pass cannot determine (why: for the error)."""

    def __init__(self, why, line, advice=None):
        self.why = why
        self.line = line
        self.advice = advice


class _At:
    def __init__(self, lineno):
        self.lineno = lineno


def _rebased(view, base):
    """The same index map onto another array (with the same shape)."""
    if view is None:
        return None
    return View(base, view.ndim, view.dims, view.fixed, view.shape, view.whole,
                _rebased(view.parent, base), view.contiguous)


def _same_atom(a, b):
    if isinstance(a, ast.Constant) or isinstance(b, ast.Constant):
        return isinstance(a, ast.Constant) and isinstance(b, ast.Constant) and \
            a.value == b.value and type(a.value) is type(b.value)
    return a.id == b.id


def _same_structure(views):
    """Views that differ at most in their position and length atoms."""
    first = views[0]
    for v in views[1:]:
        if first is None or v is None:
            if first is not v:
                return False
            continue
        if (v.base, v.ndim, len(v.dims), sorted(v.fixed), [s is ONE for s in v.shape]) != \
                (first.base, first.ndim, len(first.dims), sorted(first.fixed),
                 [s is ONE for s in first.shape]):
            return False
        for d, e in zip(first.dims, v.dims):
            if type(d) is not type(e):
                return False
            if isinstance(d, tuple) and d[0] != e[0]:
                return False
            if isinstance(d, Take) and [(x.b, x.arr, x.col, x.flag is None)
                                        for x in d.sources] != \
                    [(x.b, x.arr, x.col, x.flag is None) for x in e.sources]:
                return False
        if not _same_structure([first.parent, v.parent]):
            return False
    return True
