"""Vector math in generated loops: `math.exp(x)` becomes `vmath.exp(x)` where LLVM can then
vectorize the loop.

numba calls the C library's exp, log, tanh, sin ... once per element, and a loop with such a
call in it stays scalar; adjit/runtime/vmath.py has branch-free versions (within 1 ulp, numpy's
special values) that LLVM turns into SIMD code, several times faster in a loop that
vectorizes and no faster (sometimes slower) one element at a time. So the choice is made per
loop: a call is rewritten where every loop that evaluates its statement is an innermost
counted loop LLVM can vectorize (`vectorizable`: assignments only, no scalar carried from one
iteration to the next, no call but arithmetic LLVM knows). What is known of a function is
its registry entry's `vector` (rules/table.py): "inline" (numba lowers it to arithmetic or an
LLVM intrinsic), its vmath version, or None.

A loop that sums as it goes (`s = s + math.exp(x[i] - m)`, a log-likelihood's `s -=
math.log(p[i])`) does not vectorize as it stands: LLVM does not reorder float additions. Such a
loop is split into blocks (`_split_plan`, `_split`): over each block of 256 iterations, first
the statements that do not depend on the sum (a map that vectorizes, vmath's functions in
it, its values kept in small buffers), then the statements that do, one iteration at a time in
the loop's order. Every operation is the one the loop did, in the same order: the numbers
are the same to the bit as the loop with vmath's functions unsplit.

One statement, one function: the forward sweep, a checkpointed loop's step function and a
backward sweep that computes a primal value again must all get the same number, so a
statement's calls are rewritten together in every copy of it (copies are found by their text),
decided by the loops of its forward copies (or, for a statement only the backward sweep has,
by every loop it is in). The option `vector_math=False` keeps the C library everywhere: values
then equal numba's compiled forward to the bit; with it the values of rewritten statements
may differ from numba's in the last bit (as numpy's own SIMD functions differ from the C
library's).
"""
import ast
import re
import types

import numpy as np

from .. import ir
from ..normalize.names import lookup
from ..analysis.types import BOOL, FLOAT, INT
from ..analysis.vectorizable import vectorizable
from ..rules import REGISTRY
from ..runtime import vmath

NAME = "vmath"
"""The name generated code calls vmath's functions by (`vmath.exp(x)`)."""


def rewrite(forward, backward, ns, neutral=frozenset(), kinds=None, namegen=None,
            double=False):
    """Rewrite `math.<f>(...)` calls in the statement lists `forward` (the forward sweep, step
    functions: primal statements) and `backward` (the backward sweep) in place where their
    loops vectorize; adds the name `vmath` to the namespace `ns` when it rewrites anything.
    `neutral`: names of the tape's bookkeeping, whose statements (a push, a reserve) leave a
    loop's vectorizability to the rest of it (the same loop without a tape, checkpointed,
    must decide alike). With `kinds` (the program's variables' kinds) and `namegen` (fresh
    names), a loop that sums as it goes is split into blocks (`_split`). In a program whose
    floats are all float64 (`double`: float64_only's answer), the calls name vmath's float64
    functions (`vmath.exp64`)."""
    sites, splits = {}, []
    for blocks, forward_copy in ((forward, True), (backward, False)):
        for stmts in blocks:
            _collect(stmts, False, forward_copy, sites, neutral, ns, (kinds, splits), None)
    done = False
    for copies in sites.values():
        deciding = [c for c in copies if c[1]] or copies
        if all(vectorizable for _, _, vectorizable, _ in deciding):
            for _, _, _, calls in copies:
                for call, version in calls:
                    attr = version.double if double and hasattr(version, "double") \
                        else version.__name__
                    call.func = ast.Attribute(value=ast.Name(id=NAME, ctx=ast.Load()),
                                              attr=attr, ctx=ast.Load())
                    done = True
    for split in splits:
        if any(_calls_vmath(s) for s in split.first):
            _split(split, namegen)
    if done:
        ns[NAME] = vmath
    return done


def _collect(stmts, in_vector_loop, forward_copy, sites, neutral, ns, splitting, top):
    """Every statement of `stmts` (nested) that calls a function with a vmath version,
    keyed by its text: (statement, from the forward lists, in a loop that vectorizes, its
    replaceable calls). `splitting`: (kinds, the list of loops to split, appended to);
    `top`: (list, statement) of the outermost statement around these."""
    kinds, splits = splitting
    for s in stmts:
        where = top or (stmts, s)
        if isinstance(s, ast.For):
            innermost = not any(isinstance(n, (ast.For, ast.While))
                                for b in s.body for n in ir.walk(b))
            # (a time loop a checkpointed gradient runs step by step: its own statements
            # keep the C library there, and so here: ir.NOTES, time_loop)
            steps = ir.note(s, "time_loop", False)
            ok = innermost and not steps and vectorizable(s, neutral, ns)
            split = None if ok or steps or not innermost or kinds is None else _split_plan(
                s, neutral, ns, kinds)
            if split is not None:
                split.within, split.top = stmts, where
                splits.append(split)
                for b in s.body:
                    _collect([b], any(b is f for f in split.first), forward_copy, sites,
                             neutral, ns, splitting, where)
            else:       # (a buffer is per thread: allocated in a parallel loop's body)
                _collect(s.body, ok, forward_copy, sites, neutral, ns, splitting,
                         None if ir.is_prange_loop(s) else where)
            _collect(s.orelse, False, forward_copy, sites, neutral, ns, splitting, where)
        elif isinstance(s, (ast.While, ast.If)):
            inside = in_vector_loop and isinstance(s, ast.If)
            _collect(s.body, inside, forward_copy, sites, neutral, ns, splitting, where)
            _collect(s.orelse, inside, forward_copy, sites, neutral, ns, splitting, where)
        else:
            calls = _replaceable(s, ns)
            if calls:
                sites.setdefault(ast.dump(s), []).append((s, forward_copy, in_vector_loop,
                                                          calls))


_SINGLE = re.compile(r"float32|float16|single|half|complex64|csingle|[<>=]?(f[24]|c8)")
"""Spellings of a float narrower than float64 (np.float32, np.single, 'f4', 'c8', ...), in
names, attributes and strings."""


def float64_only(blocks, ns, arg_types):
    """Whether every float the statement lists compute is a float64: no argument holds a
    narrower float (numba types; arrays and records by their dtype, tuples by their items),
    the statements spell none (a dtype, a cast), and no name they read is a narrower float
    array or number, or a function adjit did not make (a compiled callee may return a
    float32). Then `math.exp(x)` can become vmath's float64 function called by name: numba
    types it as any call, where vmath.exp (the precision chosen by the argument's type, an
    overload numba inlines) is typed again at every call site of every compile. False
    without argument types (`arg_types` None)."""
    if arg_types is None or any(_narrow(t) for t in arg_types):
        return False
    names = set()
    for stmts in blocks:
        for s in stmts:
            for n in ir.walk(s):
                word = n.id if isinstance(n, ast.Name) else n.attr if isinstance(
                    n, ast.Attribute) else n.value if isinstance(n, ast.Constant) and \
                    isinstance(n.value, str) else None
                if word is not None and _SINGLE.fullmatch(word):
                    return False
                if isinstance(n, ast.Name):
                    names.add(n.id)
    for name in names:
        value = ns.get(name)
        if value is None or isinstance(value, (int, float, bool, types.ModuleType)):
            continue
        if isinstance(value, np.ndarray):
            if value.dtype.kind in "fc" and value.dtype.itemsize < (8 if value.dtype.kind ==
                                                                    "f" else 16):
                return False
            continue
        if isinstance(value, np.generic):
            if isinstance(value, (np.floating, np.complexfloating)) and \
                    value.dtype not in (np.float64, np.complex128):
                return False
            continue
        if callable(value) and getattr(value, "__module__", "") and (
                value.__module__.split(".")[0] in ("adjit", "numpy", "math", "builtins")):
            continue
        return False
    return True


def has_complex(blocks, arg_types):
    """Whether an argument (numba types: arrays by their dtype, tuples by their items) or
    the statement lists (a complex constant, a name or attribute spelling complex) bring a
    complex number in."""
    from numba.core import types as nt

    def complex_type(t):
        t = getattr(t, "dtype", t)
        return isinstance(t, nt.Complex) or any(
            complex_type(u) for u in getattr(t, "types", ()) if u is not t)

    if any(complex_type(t) for t in arg_types or ()):
        return True
    for stmts in blocks:
        for s in stmts:
            for node in ir.walk(s):
                if isinstance(node, ast.Constant) and isinstance(node.value, complex) or \
                        isinstance(node, (ast.Name, ast.Attribute)) and "complex" in (
                            node.id if isinstance(node, ast.Name) else node.attr):
                    return True
    return False


def _narrow(t):
    """Whether numba type t holds a float narrower than float64."""
    from numba.core import types as nt
    if isinstance(t, nt.Float):
        return t.bitwidth < 64
    if isinstance(t, nt.Complex):
        return t.bitwidth < 128
    if isinstance(t, nt.Array):
        return _narrow(t.dtype)
    if isinstance(t, nt.Record):
        return any(_narrow(field.type) for field in t.fields.values())
    if isinstance(t, nt.BaseTuple):
        return any(_narrow(x) for x in t.types)
    if isinstance(t, nt.Optional):
        return _narrow(t.type)
    return False


def _replaceable(stmt, ns):
    """(call, its vmath version) for every call in `stmt` of a function that has one (with
    one argument: vmath's functions take one; math.log(x, base) keeps the C library)."""
    out = []
    for n in ir.walk(stmt):
        if isinstance(n, ast.Call) and len(n.args) == 1 and not n.keywords:
            entry = REGISTRY.get(lookup(n.func, ns))
            if entry is not None and callable(entry.vector):
                out.append((n, entry.vector))
    return out


# -- loops that sum as they go ---------------------------------------------------------------

BLOCK = 256
"""Iterations per block of a split loop: its buffers (one float64 per iteration and value)
stay in the L1 cache."""


class _Split:
    """A loop `for i in range(start, stop)` whose statements split into `first` (a map: no
    value carried between iterations) and `then` (those that read a value carried from the
    iteration before, a sum, and what depends on them); `buffered`: the names `first`
    assigns that `then` reads."""

    def __init__(self, loop, start, stop, first, then, buffered):
        self.loop, self.start, self.stop = loop, start, stop
        self.first, self.then, self.buffered = first, then, buffered
        self.within = self.top = None


def _split_plan(loop, neutral, ns, kinds):
    """The _Split of an innermost loop that does not vectorize only because it sums as it
    goes (`s = s + math.exp(x[i] - m)`), or None. Blocks of it then run `first` over the
    block (a loop that vectorizes, vmath's functions in it), keeping the values `then`
    reads in buffers, and `then` over the block in the loop's order: every operation as
    before, in the same order, so the numbers are the same to the bit. Only for loops of
    assignments from a constant start of 0 or more; `then` writes names only (no array)
    and reads no array where the loop writes one (but the tape, `neutral`); the buffered
    values are numbers (`kinds`: floats, integers, booleans)."""
    it = loop.iter
    if loop.orelse or not isinstance(loop.target, ast.Name) or not ir.is_range_loop(loop) or (
            it.keywords or len(it.args) not in (1, 2)):
        return None
    start = it.args[0] if len(it.args) == 2 else ast.Constant(value=0)
    if not (isinstance(start, ast.Constant) and type(start.value) is int and start.value >= 0):
        return None
    body = loop.body
    if not all(isinstance(s, ast.AugAssign) or (isinstance(s, ast.Assign) and len(s.targets) == 1)
               for s in body):
        return None
    index = loop.target.id
    writes = {id(s): _assigned(s) for s in body}
    assigned = set().union(*writes.values())
    if index in assigned:
        return None
    seen, carried = {index}, set()
    for s in body:
        carried |= {r for r in _read(s) if r in assigned and r not in seen}
        seen |= writes[id(s)]
    if not carried:
        return None
    late, names = set(), set(carried)
    changed = True
    while changed:
        changed = False
        for s in body:
            if id(s) not in late and (writes[id(s)] & names or _read(s) & names):
                late.add(id(s))
                names |= writes[id(s)]
                changed = True
    first = [s for s in body if id(s) not in late]
    then = [s for s in body if id(s) in late]
    # `then` may read arrays only where `first` writes none but the tape's (an array `first`
    # writes might be the one `then` reads under another name: a view, an argument passed
    # twice; `then` of an earlier iteration would then read what a later `first` wrote)
    stored = {_target(s).value.id if isinstance(_target(s).value, ast.Name) else None
              for s in body if isinstance(_target(s), ast.Subscript)}
    if not first or any(not isinstance(_target(s), ast.Name) for s in then) or (
            stored - set(neutral) and any(isinstance(n, ast.Subscript) for s in then
                                          for n in ir.walk(s.value))):
        return None
    probe = ast.For(target=loop.target, iter=loop.iter, body=first, orelse=[])
    if not vectorizable(probe, neutral, ns):
        return None
    read_later = set().union(*(_read(s) for s in then))
    buffered = sorted({n for s in first for n in writes[id(s)] if n in read_later})
    if any(kinds.get(n) not in (FLOAT, INT, BOOL) for n in buffered):
        return None
    return _Split(loop, start, it.args[-1], first, then, buffered)


def _target(s):
    return s.targets[0] if isinstance(s, ast.Assign) else s.target


def _assigned(s):
    """The names statement `s` assigns."""
    t = _target(s)
    return {t.id} if isinstance(t, ast.Name) else set()


def _read(s):
    """The names statement `s` reads (an augmented assignment reads its target)."""
    out = {n.id for n in ir.walk(s.value) if isinstance(n, ast.Name)}
    t = _target(s)
    if isinstance(t, ast.Subscript):
        out |= {n.id for n in ir.walk(t) if isinstance(n, ast.Name)}
    elif isinstance(s, ast.AugAssign):
        out.add(t.id)
    return out


def _calls_vmath(s):
    return any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
               and n.value.id == NAME for n in ir.walk(s))


def _split(split, namegen):
    """Replace the loop in its statement list by its blocks:

        _vn = stop
        for _vk in range(start, _vn, BLOCK):
            _ve = min(_vk + BLOCK, _vn)
            for _vj in range(_vk, _ve):
                i = vec.not_negative(_vj)
                <first>
                _vb[i - _vk] = vec.to_slot(t)
                _vw = t
            for _vj in range(_vk, _ve):
                i = vec.not_negative(_vj)
                t = vec.from_slot(_vw, _vb[i - _vk])
                <then>

    with each buffer `_vb = np.empty(BLOCK)` allocated before the outermost statement around
    the loop. `vec.not_negative` tells LLVM what numba cannot see (an index in a block of a
    loop from 0 or more is not negative; else numba's test for a negative index keeps the
    loop scalar). A buffer slot holds any number exactly (`to_slot`: a float's value, an
    integer's bits: a name whose kind is float may hold an int64 in the loop, numba typing
    each assignment apart), and `from_slot` gives it back in its own type (float32 stays
    float32), read from `_vw`, which only the block's map assigns (reading `t` itself would
    join its type with every other assignment of `t` in the function, a float64 0.0 at its
    top among them)."""
    loop = split.loop
    index = loop.target.id
    n, k, e, j = (namegen.fresh(stem) for stem in ("_vn", "_vk", "_ve", "_vj"))
    buffers = {t: namegen.fresh("_vb") for t in split.buffered}
    witness = {t: namegen.fresh("_vw") for t in split.buffered}

    name, store = ir.name, ir.store

    def slot(buffer, ctx=ast.Load):
        return ast.Subscript(value=name(buffer), slice=ast.BinOp(
            left=name(index), op=ast.Sub(), right=name(k)), ctx=ctx())

    def vec_call(fn, *args):
        return ast.Call(func=ast.Attribute(value=name("vec"), attr=fn, ctx=ast.Load()),
                        args=list(args), keywords=[])

    def block_loop(body):
        head = ast.Assign(targets=[store(index)], value=vec_call("not_negative", name(j)))
        return ast.For(target=store(j), iter=ast.Call(
            func=name("range"), args=[name(k), name(e)], keywords=[]),
            body=[head] + body, orelse=[])

    keep = [a for t in split.buffered for a in (
        ast.Assign(targets=[slot(buffers[t], ast.Store)], value=vec_call("to_slot", name(t))),
        ast.Assign(targets=[store(witness[t])], value=name(t)))]
    back = [ast.Assign(targets=[store(t)],
                       value=vec_call("from_slot", name(witness[t]), slot(buffers[t])))
            for t in split.buffered]
    end = ast.Assign(targets=[store(e)], value=ast.Call(func=name("min"), args=[
        ast.BinOp(left=name(k), op=ast.Add(), right=ast.Constant(value=BLOCK)), name(n)],
        keywords=[]))
    sums = _pure_sums(split)
    if sums is not None:    # each block's terms added in vector lanes (vec.sum_slots)
        count = ast.BinOp(left=name(e), op=ast.Sub(), right=name(k))
        then = []
        for acc, op, t, temp in sums:
            then.append(ast.Assign(targets=[store(acc)], value=ast.BinOp(
                left=name(acc), op=op, right=vec_call("sum_slots", name(witness[t]),
                                                      name(buffers[t]), count))))
            if temp:
                then.append(ast.Assign(targets=[store(temp)], value=name(acc)))
    else:
        then = [block_loop(back + split.then)]
    blocks = ast.For(target=store(k), iter=ast.Call(func=name("range"), args=[
        split.start, name(n), ast.Constant(value=BLOCK)], keywords=[]),
        body=[end, block_loop(split.first + keep)] + then, orelse=[])
    allocations = [ast.Assign(targets=[store(b)], value=ast.Call(
        func=ast.Attribute(value=name("np"), attr="empty", ctx=ast.Load()),
        args=[ast.Constant(value=BLOCK)], keywords=[])) for b in buffers.values()]
    replacement = [ast.Assign(targets=[store(n)], value=split.stop), blocks]
    for stmt in allocations + replacement:      # (their lines: the loop's)
        ast.fix_missing_locations(ast.copy_location(stmt, loop))
    outer, top = split.top
    if top is loop:
        replacement = allocations + replacement
    else:
        _insert_before(outer, top, allocations)
    _insert_before(split.within, loop, replacement, replace=True)


def _pure_sums(split):
    """[(acc, op, t, temp)] where the split's `then` is only sums of buffered values: each
    `acc = acc + t` (also `acc += t`, `acc = t + acc`, `acc -= t`), or in two steps
    `temp = acc + t; acc = temp` (as the normalizer writes it), each sum its own and each
    buffered value read by one sum only: the block's part of each sum is then one
    vec.sum_slots call (its terms added in vector lanes, in the same order wherever the loop
    is computed), and `temp` is set to the new sum as the loop would leave it. None
    otherwise (`then` keeps its loop)."""
    out, used, stmts = [], set(), list(split.then)
    while stmts:
        s = stmts.pop(0)
        temp = None
        if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name) and \
                isinstance(s.op, (ast.Add, ast.Sub)) and isinstance(s.value, ast.Name):
            acc, op, t = s.target.id, s.op, s.value.id
        elif isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name) and \
                isinstance(s.value, ast.BinOp) and isinstance(s.value.op, (ast.Add, ast.Sub)) \
                and isinstance(s.value.left, ast.Name) and isinstance(s.value.right, ast.Name):
            target, op = s.targets[0].id, s.value.op
            left, right = s.value.left.id, s.value.right.id
            if stmts and isinstance(stmts[0], ast.Assign) and \
                    isinstance(stmts[0].targets[0], ast.Name) and \
                    isinstance(stmts[0].value, ast.Name) and stmts[0].value.id == target:
                temp, acc = target, stmts.pop(0).targets[0].id     # temp = ...; acc = temp
            else:
                acc = target
            if left == acc:
                t = right
            elif right == acc and isinstance(op, ast.Add):
                t = left
            else:
                return None
        else:
            return None
        names = {acc, t} | ({temp} if temp else set())
        if t not in split.buffered or len(names) != 2 + bool(temp) or \
                acc in split.buffered or temp in split.buffered or names & used:
            return None
        used |= names
        out.append((acc, type(op)(), t, temp))
    return out if len(out) == len(split.buffered) else None


def _insert_before(stmts, stmt, new, replace=False):
    k = next(i for i, s in enumerate(stmts) if s is stmt)
    stmts[k:k + int(replace)] = new
