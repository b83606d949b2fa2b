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
import math

import numpy as np

from ..normalize.names import lookup
from ..rules import REGISTRY
from ..runtime import vmath

NAME = "vmath"
"""The name generated code calls vmath's functions by (`vmath.exp(x)`)."""

_NAMESPACE = {"math": math, "np": np}


def rewrite(forward, backward, ns, neutral=frozenset()):
    """Rewrite `math.<f>(...)` calls in the statement lists `forward` (the forward sweep, step
    functions: primal statements) and `backward` (the backward sweep) in place where their
    loops vectorize; adds the name `vmath` to the namespace `ns` when it rewrites anything.
    `neutral`: names of the tape's bookkeeping, whose statements (a push, a reserve) leave a
    loop's vectorizability to the rest of it (the same loop without a tape, checkpointed,
    must decide alike)."""
    sites = {}
    for blocks, forward_copy in ((forward, True), (backward, False)):
        for stmts in blocks:
            _collect(stmts, False, forward_copy, sites, neutral, ns)
    done = False
    for copies in sites.values():
        deciding = [c for c in copies if c[1]] or copies
        if all(vectorizable for _, _, vectorizable, _ in deciding):
            for _, _, _, calls in copies:
                for call, version in calls:
                    call.func = ast.Attribute(value=ast.Name(id=NAME, ctx=ast.Load()),
                                              attr=version.__name__, ctx=ast.Load())
                    done = True
    if done:
        ns[NAME] = vmath
    return done


def _collect(stmts, in_vector_loop, forward_copy, sites, neutral, ns):
    """Every statement of `stmts` (nested) that calls a function with a vmath version,
    keyed by its text: (statement, from the forward lists, in a loop that vectorizes, its
    replaceable calls)."""
    for s in stmts:
        if isinstance(s, ast.For):
            innermost = not any(isinstance(n, (ast.For, ast.While))
                                for b in s.body for n in ast.walk(b))
            ok = innermost and vectorizable(s, neutral, ns)
            _collect(s.body, ok, forward_copy, sites, neutral, ns)
            _collect(s.orelse, False, forward_copy, sites, neutral, ns)
        elif isinstance(s, (ast.While, ast.If)):
            inside = in_vector_loop and isinstance(s, ast.If)
            _collect(s.body, inside, forward_copy, sites, neutral, ns)
            _collect(s.orelse, inside, forward_copy, sites, neutral, ns)
        else:
            calls = _replaceable(s, ns)
            if calls:
                sites.setdefault(ast.dump(s), []).append((s, forward_copy, in_vector_loop,
                                                          calls))


def _replaceable(stmt, ns):
    """(call, its vmath version) for every call in `stmt` of a function that has one (with
    one argument: vmath's functions take one; math.log(x, base) keeps the C library)."""
    out = []
    for n in ast.walk(stmt):
        if isinstance(n, ast.Call) and len(n.args) == 1 and not n.keywords:
            entry = REGISTRY.get(lookup(n.func, ns))
            if entry is not None and callable(entry.vector):
                out.append((n, entry.vector))
    return out


def vectorizable(loop, neutral=frozenset(), ns=None):
    """Whether LLVM's loop vectorizer can take this innermost `for ... in range(...)` loop
    as it stands: assignments (and the tape's bookkeeping, `neutral`) only, no scalar read
    before the body assigns it (a value carried between iterations, such as a sum: LLVM does
    not reorder float additions), no `+=` into a scalar the iteration did not assign first,
    and no call but those it knows
    (math functions with a vector version count: they become vmath's). `ns`: the namespace
    the loop's names live in (generated code's: math and np)."""
    ns = _NAMESPACE if ns is None else ns
    if loop.orelse or not isinstance(loop.target, ast.Name) or not (
            isinstance(loop.iter, ast.Call) and isinstance(loop.iter.func, ast.Name)
            and loop.iter.func.id == "range"):
        return False
    body = [s for s in loop.body if not _bookkeeping(s, neutral)]
    assigned_in_body = {t.id for s in body if isinstance(s, ast.Assign)
                        for t in s.targets if isinstance(t, ast.Name)}
    seen = {loop.target.id}
    for s in body:
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(
                s.targets[0], (ast.Name, ast.Subscript)):
            target = s.targets[0]
        elif isinstance(s, ast.AugAssign) and (isinstance(s.target, ast.Subscript) or (
                isinstance(s.target, ast.Name) and s.target.id in seen)):
            target = s.target       # (into a scalar this iteration assigned: not carried)
        else:
            return False
        reads = [n.id for n in ast.walk(s) if isinstance(n, ast.Name)
                 and isinstance(n.ctx, ast.Load)]
        if isinstance(target, ast.Subscript):
            reads += [n.id for n in ast.walk(target.slice) if isinstance(n, ast.Name)]
        if any(r in assigned_in_body and r not in seen for r in reads):
            return False            # carried from the iteration before
        if not all(_known(n, ns) for n in ast.walk(s)):
            return False
        if isinstance(target, ast.Name):
            seen.add(target.id)
    return True


def _bookkeeping(s, neutral):
    """A statement that writes only the tape's names (a push, a counter, a reserve under an
    `if`)."""
    if isinstance(s, ast.If):
        return all(_bookkeeping(b, neutral) for b in s.body + s.orelse)
    targets = s.targets if isinstance(s, ast.Assign) else [s.target] if isinstance(
        s, ast.AugAssign) else None
    if not targets:
        return False
    for t in targets:
        base = t.value if isinstance(t, ast.Subscript) else t
        if not (isinstance(base, ast.Name) and base.id in neutral):
            return False
    return True


def _known(node, ns):
    """A node LLVM vectorizes through: calls only of functions the registry says numba
    inlines ("inline") or vmath replaces, and of numpy's scalar types (casts); no integer
    floor division or remainder (numba checks the divisor); powers of a constant exponent."""
    if isinstance(node, ast.Call):
        obj = lookup(node.func, ns)
        if isinstance(obj, type) and issubclass(obj, np.number):
            return True
        entry = REGISTRY.get(obj)
        return entry is not None and entry.vector is not None
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, (ast.FloorDiv, ast.Mod)):
            return False
        if isinstance(node.op, ast.Pow):
            return isinstance(node.right, ast.Constant)
    return True
