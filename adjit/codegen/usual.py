"""Loops that vectorize, run with a derivative's usual arm where every element takes it.

Some derivatives have an accuracy branch: tanh's is `(1 - out)(1 + out)` while |out| <
0.9999 and `4 e / (1 + e)**2` with e = exp(-2|x|) beyond, where the first loses its digits.
One element at a time the branch costs nothing (the processor predicts it); in a loop LLVM
vectorizes, both arms run for every element and a select picks one, so every element pays
for the exp (and for computing x again, where only `out` was kept). An MLP's tanh layer
backward: 11% of the whole gradient (MLP 64-128-10).

Such rules say so in the registry (`Rule(usual=True)`: each partial is `A if C else B`, C
true for all but rare arguments). Where an adjoint's innermost loop vectorizes (its B arm
calls vmath's functions: codegen/vector_math.py rewrote it), stores only into arrays adjit
allocated (adjoints, the tape: no user array it writes can share memory with one C reads)
and C reads only what the loop does not change (its indices, names and arrays the body does
not assign) or names the body assigns once before it from such values (`out` read back
from the tape), the loop is versioned, with the loops around it whose bodies are only that
loop (one test for a whole matrix):

    _rare1 = False
    for _i1 in range(_n5):
        for _i2 in range(_n8):
            _rare1 |= not abs(h[_i1, _i2]) < 0.9999
    if _rare1:
        <the loops as they were>
    else:
        <the loops with A in place of the branch; what only B read no longer computed>

The first loop is an or-reduction LLVM vectorizes (a read of `out`); where no element is
rare, the second copy runs A alone (x and the exp are not computed). Either copy computes
exactly what the loops did, so the numbers are the same to the bit. C is evaluated only
where the loop evaluates the branch in any case: a branch inside another conditional
expression's arm, or after a short-circuit `and`/`or`, is left alone. Not versioned: a
loop computing `out` in its body (a tanh fused with what follows it and computed again,
`np.sum(np.tanh(x))`: the check would compute every tanh twice); tangents.
"""
import ast
import copy

import numpy as np

from .. import ir
from ..normalize.names import lookup
from ..reverse.dce import upward_exposed
from ..rules import REGISTRY
from ..analysis.vectorizable import is_vmath, vectorizable


def version_loops(functions, ns, namegen, own, neutral=frozenset()):
    """Version, in place, the innermost loops of each function's statement lists (nested
    statements included) as the module docstring says. `functions`: (the statement lists of
    one function's body in order, the names read after them; None: any). `own`: the arrays
    adjit allocated itself (adjoints, the tape), which no other array shares memory with: a
    loop storing into any other array is left alone (the store could change what the
    branch reads). `neutral`: the tape's bookkeeping names (analysis/vectorizable.py).
    Returns how many loops were versioned."""
    templates = _templates()
    if not templates:
        return 0
    done = 0
    for lists, live_after in functions:
        live = None
        if live_after is not None:      # what each loop leaves read after it
            live = {}
            upward_exposed([s for stmts in lists for s in stmts], live_after, live)
        for stmts in lists:
            done += _walk(stmts, templates, ns, namegen, neutral, live, own)
    return done


def _templates():
    """(C, A, pattern names) of every partial of a rule marked usual."""
    out, seen = [], set()
    for entry in REGISTRY.entries:
        rule = entry.rule
        if rule is None or not getattr(rule, "usual", False) or id(rule) in seen:
            continue
        seen.add(id(rule))
        names = set(rule.params) | {"out"}
        for partial in rule.partials:
            assert isinstance(partial, ast.IfExp), entry.name
            out.append((partial.test, partial.body, names))
    return out


def _walk(stmts, templates, ns, namegen, neutral, live, own):
    done = 0
    k = 0
    while k < len(stmts):
        s = stmts[k]
        nest = _nest(s)
        new = nest and _version(nest, templates, ns, namegen, neutral, live, own)
        if new:
            stmts[k:k + 1] = new
            k += len(new)
            done += 1
            continue
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(s, field, None)
            if isinstance(inner, list):
                done += _walk(inner, templates, ns, namegen, neutral, live, own)
        for handler in getattr(s, "handlers", ()):
            done += _walk(handler.body, templates, ns, namegen, neutral, live, own)
        k += 1
    return done


def _nest(s):
    """[outer, ..., innermost] where `s` is a for loop whose body is one loop whose body is
    one loop ... down to an innermost loop (no loop in its body); else None."""
    nest = []
    while isinstance(s, ast.For) and not s.orelse:
        nest.append(s)
        if len(s.body) == 1 and isinstance(s.body[0], ast.For):
            s = s.body[0]
            continue
        if any(isinstance(n, (ast.For, ast.While)) for b in s.body for n in ir.walk(b)):
            return None
        return nest
    return None


def _version(nest, templates, ns, namegen, neutral, live, own):
    """[flag, check loops, if] for the loop nest `nest` (outermost first), or None where no
    branch of its innermost loop qualifies. One check for the whole nest: the outer loops'
    bodies are only the next loop."""
    loop = nest[-1]
    if not _vectorizes(loop, ns, neutral):
        return None
    stored = set()
    for s in loop.body:
        for n in ir.walk(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                stored.add(n.id)
            elif isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store):
                base = n.value
                while isinstance(base, ast.Subscript):
                    base = base.value
                if not isinstance(base, ast.Name) or base.id not in own:
                    return None
                stored.add(base.id)
    tests, positions, needs = [], [], set()
    for p, s in enumerate(loop.body):
        for path, node in _evaluated(s, ()):
            if not isinstance(node, ast.IfExp):
                continue
            for test, arm, names in templates:
                bound = {}
                if _match(test, node.test, names, bound) and \
                        _match(arm, node.body, names, bound):
                    need = _computing(node.test, loop.body, p, stored, ns)
                    if need is not None:
                        tests.append(node.test)
                        positions.append((p, path))
                        needs |= need
                    break
    if not tests:
        return None
    flag = namegen.fresh("_rare")
    check = [copy.deepcopy(loop.body[k]) for k in sorted(needs)] + [
        ast.AugAssign(target=ir.store(flag), op=ast.BitOr(), value=ast.UnaryOp(
            op=ast.Not(), operand=copy.deepcopy(t)), lineno=0) for t in tests]
    for f in reversed(nest):
        check = [ast.For(target=copy.deepcopy(f.target), iter=copy.deepcopy(f.iter),
                         body=check, orelse=[], lineno=0)]
    top = nest[0]
    cheap_top = copy.deepcopy(top)
    cheap = cheap_top
    for _ in nest[1:]:
        cheap = cheap.body[0]
    for p, path in positions:
        _replace(cheap.body, p, path)
    if live is not None and id(loop) in live:
        _drop_unread(cheap, live[id(loop)], ns)
    return [ir.assign(flag, ir.const(False))] + check + [
        ast.If(test=ast.Name(id=flag, ctx=ast.Load()), body=[top], orelse=[cheap_top],
               lineno=0)]


def _vectorizes(loop, ns, neutral):
    """Whether vector math chose vmath's functions for the loop (some call in it is one)
    and LLVM vectorizes it with them."""
    return any(isinstance(n, ast.Call) and is_vmath(lookup(n.func, ns))
               for s in loop.body for n in ir.walk(s)) and vectorizable(loop, neutral, ns)


def _drop_unread(loop, read_after, ns):
    """Remove from `loop`'s body the assignments of names nothing reads any more (x, which
    only the rare arm read; `read_after`: what may be read after the loop): their values
    are reads and arithmetic, nothing else."""
    while True:
        reads = {n.id for s in loop.body for n in ir.walk(s)
                 if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        dead = [s for s in loop.body if isinstance(s, ast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], ast.Name) and s.targets[0].id != loop.target.id
                and s.targets[0].id not in reads | read_after
                and all(not isinstance(n, ast.Call) or is_vmath(lookup(n.func, ns)) or
                        lookup(n.func, ns) is abs for n in ir.walk(s.value))]
        if not dead:
            return
        loop.body = [s for s in loop.body if not any(s is d for d in dead)]


def _evaluated(node, path):
    """(path, node) for `node` and every expression under it that runs whenever `node`
    does: not the arms of a conditional expression, not what follows the first operand of
    `and` / `or`. A path is the (field, index) steps from the statement down."""
    yield path, node
    for field, value in ast.iter_fields(node):
        if isinstance(node, ast.IfExp) and field in ("body", "orelse"):
            continue
        if isinstance(node, ast.BoolOp) and field == "values":
            value = value[:1]
        if isinstance(value, ast.AST):
            yield from _evaluated(value, path + ((field, None),))
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, ast.AST):
                    yield from _evaluated(item, path + ((field, i),))


def _replace(body, p, path):
    """Put the IfExp at `path` in statement body[p] by its first arm."""
    parent, node = None, body[p]
    for field, i in path:
        parent, step = node, (field, i)
        node = getattr(node, field) if i is None else getattr(node, field)[i]
    arm = node.body
    if parent is None:
        raise AssertionError("a statement is no conditional expression")
    field, i = step
    if i is None:
        setattr(parent, field, arm)
    else:
        getattr(parent, field)[i] = arm


def _match(template, node, names, bound):
    """Whether `node` is `template` with its pattern `names` standing for expressions (the
    same expression for every use of one name; `bound` collects them)."""
    if isinstance(template, ast.Name) and template.id in names:
        text = ast.dump(node)
        return bound.setdefault(template.id, text) == text
    if type(template) is not type(node):
        return False
    for field, value in ast.iter_fields(template):
        if field == "ctx":
            continue
        other = getattr(node, field, None)
        if isinstance(value, ast.AST):
            if not isinstance(other, ast.AST) or not _match(value, other, names, bound):
                return False
        elif isinstance(value, list):
            if not isinstance(other, list) or len(value) != len(other) or not all(
                    _match(a, b, names, bound) if isinstance(a, ast.AST) else a == b
                    for a, b in zip(value, other)):
                return False
        elif value != other or type(value) is not type(other):
            return False
    return True


def _computing(test, body, p, stored, ns):
    """The positions in `body` of the statements computing what `test` (in body[p]) reads
    that the body assigns: each such name assigned once, by a statement before body[p] (a
    name, its value), read from what the body does not assign or from such names again
    (`_t6 = _ftape[np.uint64(_fbase1 + _i2)]`, out read back from the tape). None where
    `test` reads anything else, or calls anything but abs and numpy's integer casts: with
    those statements, evaluated before the loop at each index it has its value in the loop."""
    needed, todo = set(), [test]
    while todo:
        expr = todo.pop()
        if not _pure(expr, ns):
            return None
        for name in {n.id for n in ir.walk(expr) if isinstance(n, ast.Name)} & stored:
            where = [k for k, t in enumerate(body) if any(
                isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id == name or
                isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store)
                and _base(n) == name for n in ir.walk(t))]
            if len(where) != 1 or where[0] >= p:
                return None
            k = where[0]
            t = body[k]
            if not (isinstance(t, ast.Assign) and len(t.targets) == 1 and
                    isinstance(t.targets[0], ast.Name) and t.targets[0].id == name):
                return None
            if k not in needed:
                needed.add(k)
                todo.append(t.value)
    return needed


def _base(sub):
    while isinstance(sub, ast.Subscript):
        sub = sub.value
    return sub.id if isinstance(sub, ast.Name) else None


def _pure(expr, ns):
    """Arithmetic, comparisons, names, constants and element reads, with calls of abs and
    of numpy's integer types (a tape slot's np.uint64) only."""
    funcs = set()
    for n in ir.walk(expr):
        if isinstance(n, ast.Call):
            f = lookup(n.func, ns)
            if not (f is abs or isinstance(f, type) and issubclass(f, np.integer)) or \
                    n.keywords:
                return False
            funcs.update(id(m) for m in ir.walk(n.func))
        elif isinstance(n, (ast.Attribute, ast.Lambda, ast.NamedExpr, ast.Starred,
                            ast.Await, ast.Yield, ast.YieldFrom)) and id(n) not in funcs:
            return False
    return True
