"""Adjoint arrays whose first term is a whole new array: assigned, not added into zeros.

The forward sweep allocates each array's adjoint as zeros and the backward sweep adds its
terms into it:

    h_bar = np.zeros_like(h)
    ...
    h_bar += vec.mm_nt(_a2_bar, W2)

Where that term is a new array in exactly the adjoint's shape (a matrix product's terms, an
inverse's, a Cholesky factor's: their registry entries say so, ArrayRule.exact, and
reverse/adjoint.py notes the statement
`whole`), both statements are in the function's body itself (no loop or branch runs either
twice or not at all), and no statement between them names the adjoint (no alias of it, no
term added before) or assigns the operand, the zeros are never read but by that addition
and have the term's shape: the term is assigned
(`h_bar = vec.mm_nt(_a2_bar, W2)`) and the allocation goes. That saves writing the zeros
and a second pass over the array (the MLP's gradient: 9% of its time). 0.0 + t is t for
every float but -0.0, so the gradient is the same (a -0.0 stays -0.0).

Only in a program whose floats are all float64 (codegen/vector_math.float64_only) with no
complex numbers: the product's dtype is then the adjoint's, as `+=` into the zeros would
have kept it (a float32 operand's adjoint stays float32).
"""
import ast

from .. import ir


def assign_fresh(parts):
    """Rewrite, in place, the statement lists of one function's body (`parts`: the
    (title, statements) pairs rendered one after another) as the module docstring says.
    Returns the adjoints assigned."""
    body = [(stmts, s) for _, stmts in parts for s in stmts]
    drop, done = set(), []
    for n, (stmts, s) in enumerate(body):
        like = ir.note(s, "whole")
        if like is None or not (isinstance(s, ast.AugAssign) and isinstance(s.op, ast.Add)
                                and isinstance(s.target, ast.Name)):
            continue
        bar = s.target.id
        if _names(s.value, bar):
            continue
        for m in range(n - 1, -1, -1):
            earlier = body[m][1]
            if _zeros_of(earlier, bar, like):
                drop.add(id(earlier))
                stmts[stmts.index(s)] = ir.copy_notes(s, ast.Assign(
                    targets=[ir.store(bar)], value=s.value, lineno=s.lineno), ("origin",))
                done.append(bar)
                break
            if _names(earlier, bar) or _stores(earlier, like):
                break
    for _, stmts in parts:
        stmts[:] = [s for s in stmts if id(s) not in drop]
    return done


def applies(arg_types, blocks, ns):
    """Whether the program's adjoints and their terms share one dtype: all its floats are
    float64 and none of its numbers complex."""
    from numba.core import types as nt
    from .vector_math import float64_only

    def complex_type(t):
        t = getattr(t, "dtype", t)
        return isinstance(t, nt.Complex) or any(
            complex_type(u) for u in getattr(t, "types", ()) if u is not t)

    if arg_types is None or any(complex_type(t) for t in arg_types):
        return False
    for stmts in blocks:
        for s in stmts:
            for node in ast.walk(s):
                if isinstance(node, ast.Constant) and isinstance(node.value, complex) or \
                        isinstance(node, (ast.Name, ast.Attribute)) and "complex" in (
                            node.id if isinstance(node, ast.Name) else node.attr):
                    return False
    return float64_only(blocks, ns, arg_types)


def _zeros_of(stmt, bar, like):
    """Whether `stmt` is `bar = np.zeros_like(like)`."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id == bar):
        return False
    call = stmt.value
    return isinstance(call, ast.Call) and ast.unparse(call.func) == "np.zeros_like" and \
        len(call.args) == 1 and not call.keywords and \
        isinstance(call.args[0], ast.Name) and call.args[0].id == like


def _stores(node, name):
    """Whether `node` assigns `name` (the operand could change shape after its adjoint's
    zeros were allocated)."""
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
               for n in ast.walk(node))


def _names(node, name):
    """Whether `node` (a statement with everything nested in it, or an expression) names
    `name`."""
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))
