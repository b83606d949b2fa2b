"""Copy propagation for adjoint temporaries, so the backward sweep reads like a hand-written
adjoint: `_t6_bar = s_bar; _t5_bar = _t6_bar * x` becomes `_t5_bar = s_bar * x`.

Only copies into adjoint variables are propagated, and only when every read of the copy is
in a later simple statement of the same block and neither side changes before the last one.

A checkpointed loop's step adjoint is written twice (for the block the forward sweep
recorded and in the schedule: reverse/checkpoint.py, loops noted `steps`), with the same
names: a temporary read only inside such copies is counted in the copy at hand, so that
both are rewritten as the recorded gradient's one copy is (a copy counted twice stayed, the
loop it was in then kept its reversed order, and the checkpointed gradient added in another
order than the recorded one: last bits apart, where the two are promised identical).
"""
import ast

from ..ir import load_names, note, walk


def _writes(node):
    out = set()
    for n in walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.add(n.id)
        elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
            out.add(n.target.id)
    return out


def _countload_names(stmts):
    counts = {}
    for s in stmts:
        for n in load_names(s):
            counts[n.id] = counts.get(n.id, 0) + 1
        if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
            counts[s.target.id] = counts.get(s.target.id, 0) + 1
    return counts


def propagate_copies(stmts, adjoints, live_out=()):
    """Rewrite `stmts` (the backward sweep) in place and return it. `live_out` names the
    variables read after it (the returned gradients): a copy into one of those is never a
    dead store, even where nothing in the sweep reads it again."""
    counts = _countload_names(stmts)
    for name in live_out:
        counts[name] = counts.get(name, 0) + 1
    in_steps = {}       # loads inside the loops over a checkpointed loop's steps
    for loop in _steps_loops(stmts):
        for name, c in _countload_names(loop.body).items():
            in_steps[name] = in_steps.get(name, 0) + c
    only_in_steps = {name for name, c in in_steps.items() if counts.get(name) == c}
    _block(stmts, set(adjoints), counts, only_in_steps)
    return stmts


def _steps_loops(stmts):
    """The outermost loops noted `steps` (a checkpointed loop's step adjoints) in stmts."""
    for s in stmts:
        if isinstance(s, ast.For) and note(s, "steps", False):
            yield s
            continue
        for field in ("body", "orelse"):
            inner = getattr(s, field, None)
            if isinstance(inner, list):
                yield from _steps_loops(inner)


def _block(stmts, adjoints, counts, only_in_steps=frozenset()):
    k = 0
    while k < len(stmts):
        s = stmts[k]
        inner_counts, inner_only = counts, only_in_steps
        if only_in_steps and isinstance(s, ast.For) and note(s, "steps", False):
            # the names read only in the step copies: counted in this copy alone (once, at
            # the outermost such loop, as _steps_loops counted them)
            local = _countload_names(s.body)
            inner_counts = dict(counts)
            inner_counts.update({name: local.get(name, 0) for name in only_in_steps})
            inner_only = frozenset()
        for field in ("body", "orelse"):
            inner = getattr(s, field, None)
            if isinstance(inner, list) and inner:
                _block(inner, adjoints, inner_counts, inner_only)
                if field == "body" and not inner:
                    inner.append(ast.Pass())
        if _try_propagate(stmts, k, adjoints, counts):
            continue
        k += 1


def _is_copy(s, target, value):
    return isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name) and \
        isinstance(s.value, ast.Name) and s.targets[0].id == target and s.value.id == value


def _try_propagate(stmts, k, adjoints, counts):
    """Replace every read of the adjoint copy `tmp = src` at stmts[k] by `src`, when all
    reads are in later simple statements of this block and `src` keeps its value until the
    last of them (a `src = tmp` copy back does not change it)."""
    s = stmts[k]
    if not (isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name)
            and isinstance(s.value, ast.Name)):
        return False
    tmp, src = s.targets[0].id, s.value.id
    if tmp not in adjoints or tmp == src:
        return False
    remaining = counts.get(tmp, 0)
    users = []
    for j in range(k + 1, len(stmts)):
        if remaining == 0:
            break
        use = stmts[j]
        hits = [n for n in load_names(use) if n.id == tmp]
        if hits and isinstance(use, (ast.If, ast.For, ast.While)):
            return False
        if hits:
            users.append(use)
            remaining -= len(hits)
        if tmp in _writes(use) or (src in _writes(use) and not _is_copy(use, src, tmp)):
            if remaining:
                return False
    if remaining:
        return False
    for use in users:
        for n in load_names(use):
            if n.id == tmp:
                n.id = src
    del stmts[k]
    for use in users:
        if _is_copy(use, src, src):
            stmts.remove(use)
    return True
