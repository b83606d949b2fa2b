"""Whether LLVM's loop vectorizer can take a loop of generated code as it stands.

codegen/vector_math.py replaces the C library's exp, log, sin ... by runtime/vmath.py's in
the loops this says vectorize (and splits a loop that sums as it goes); codegen/usual.py
versions such loops on a derivative's usual arm; reverse/fusion.py fuses backward loops only
where each one vectorizes, so that the fused loop does too and gets the same functions (the
same numbers to the bit)."""
import ast
import math

import numpy as np

from .. import ir
from ..normalize.names import lookup
from ..rules import REGISTRY
from ..runtime import vmath
from ..runtime.sums import ANY_ORDER, add_any_order

_NAMESPACE = {"math": math, "np": np}


def vectorizable(loop, neutral=frozenset(), ns=None):
    """Whether LLVM's loop vectorizer can take this innermost `for ... in range(...)` loop
    as it stands: assignments (and the tape's bookkeeping, `neutral`) only, no scalar read
    before the body assigns it (a value carried between iterations, such as a sum: LLVM does
    not reorder float additions), no `+=` into a scalar the iteration did not assign first,
    and no call but those it knows
    (math functions with a vector version count: they become vmath's). `ns`: the namespace
    the loop's names live in (generated code's: math and np)."""
    ns = _NAMESPACE if ns is None else ns
    if loop.orelse or not isinstance(loop.target, ast.Name) or not ir.is_range_loop(loop):
        return False
    body = [s for s in loop.body if not _bookkeeping(s, neutral)]
    assigned_in_body = {t.id for s in body if isinstance(s, ast.Assign)
                        for t in s.targets if isinstance(t, ast.Name)}
    sums = [_any_order_sum(s, ns) for s in body]
    if len(set(filter(None, sums))) != len([r for r in sums if r]):
        return False                # (one sum added to twice)
    seen = {loop.target.id}
    for s, total in zip(body, sums):
        if total is not None:
            term = s.value.args[1]
            reads = [n.id for n in ir.walk(term) if isinstance(n, ast.Name)]
            if total in reads or any(r in assigned_in_body and r not in seen for r in reads) \
                    or not all(_known(n, ns) for n in ir.walk(term)):
                return False
            continue
        if any(isinstance(n, ast.Name) and n.id in sums for n in ir.walk(s)):
            return False            # (a partial sum read)
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(
                s.targets[0], (ast.Name, ast.Subscript)):
            target = s.targets[0]
        elif isinstance(s, ast.AugAssign) and (isinstance(s.target, ast.Subscript) or (
                isinstance(s.target, ast.Name) and s.target.id in seen)):
            target = s.target       # (into a scalar this iteration assigned: not carried)
        else:
            return False
        reads = [n.id for n in ir.walk(s) if isinstance(n, ast.Name)
                 and isinstance(n.ctx, ast.Load)]
        if isinstance(target, ast.Subscript):
            reads += [n.id for n in ir.walk(target.slice) if isinstance(n, ast.Name)]
        if any(r in assigned_in_body and r not in seen for r in reads):
            return False            # carried from the iteration before
        if not all(_known(n, ns) for n in ir.walk(s)):
            return False
        if isinstance(target, ast.Name):
            seen.add(target.id)
    return True


def _any_order_sum(s, ns):
    """The name `s` of `s = add_any_order(s, term)` (a sum reverse/accumulators.py promoted:
    an addition LLVM may reorder, so a loop of them vectorizes as a reduction), else None."""
    if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and
            isinstance(s.targets[0], ast.Name) and isinstance(s.value, ast.Call) and
            len(s.value.args) == 2 and not s.value.keywords and
            isinstance(s.value.args[0], ast.Name) and
            s.value.args[0].id == s.targets[0].id):
        return None
    func = s.value.func         # (generated code calls it by its bare name)
    if not (isinstance(func, ast.Name) and func.id == ANY_ORDER and
            ns.get(ANY_ORDER, add_any_order) is add_any_order):
        return None
    return s.targets[0].id


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


def is_vmath(obj):
    """Whether `obj` is one of runtime/vmath.py's functions (pure, and they vectorize)."""
    return getattr(obj, "__module__", None) == vmath.__name__


def _known(node, ns):
    """A node LLVM vectorizes through: calls only of functions the registry says numba
    inlines ("inline") or vmath replaces, of vmath's own, and of numpy's scalar types
    (casts); no integer floor division or remainder (numba checks the divisor); powers of a
    constant exponent."""
    if isinstance(node, ast.Call):
        obj = lookup(node.func, ns)
        if isinstance(obj, type) and issubclass(obj, np.number) or is_vmath(obj):
            return True
        entry = REGISTRY.get(obj)
        return entry is not None and entry.vector is not None
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, (ast.FloorDiv, ast.Mod)):
            return False
        if isinstance(node.op, ast.Pow):
            return isinstance(node.right, ast.Constant)
    return True
