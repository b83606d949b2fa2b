"""A matrix-vector product's matrix adjoint added in place.

`y = A @ x` is a BLAS product (runtime/linalg.py `mv`), and its rule adds the outer product
of `y_bar` and `x` into `A_bar` (rules/table.py). The first such term of an adjoint is
assigned to it (reverse/resets.py); every later one, written `A_bar += vec.outer_vv(y_bar,
x)`, would allocate an outer product as large as the matrix and then add it, once per term
(once per step in a time loop). Here it becomes the loop it is:

    for _i in range(A_bar.shape[0]):      # was: A_bar += vec.outer_vv(_a1_bar, x)
        _t = _a1_bar[_i]
        for _j in range(A_bar.shape[1]):
            A_bar[_i, _j] += _t * x[_j]

the same products added to the same elements (the gradient is the same to the bit), with
no array allocated: on glibc a matrix-sized block freed and allocated again at every call
was mapped afresh, page by page (a 400 x 400 product's gradient: 1.1 ms with the
temporary, 0.11 ms without). The serial backward sweep only (not inside prange loops,
whose threads share the adjoint), and only where both vectors are names.
"""
import ast

from .. import ir

OUTER = "outer_vv"
"""The runtime helper (runtime/linalg.py) whose additions are rewritten."""


def outer_in_place(stmts, namegen):
    """Rewrite `stmts` (the backward sweep) in place; returns it."""
    for block in list(ir.blocks(stmts, serial=True)):
        block[:] = [t for s in block for t in (_as_loop(s, namegen) or [s])]
    return stmts


def _as_loop(s, namegen):
    """The loop adding `vec.outer_vv(u, v)` into the matrix `s` adds it to, or None."""
    if not (isinstance(s, ast.AugAssign) and isinstance(s.op, ast.Add)
            and isinstance(s.target, ast.Name)):
        return None
    call = s.value
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and call.func.attr == OUTER and isinstance(call.func.value, ast.Name)
            and call.func.value.id == "vec" and len(call.args) == 2 and not call.keywords
            and all(isinstance(a, ast.Name) for a in call.args)):
        return None
    t = s.target.id
    u, v = (a.id for a in call.args)
    if t in (u, v):
        return None
    i, j, ui = namegen.fresh("_o"), namegen.fresh("_o"), namegen.fresh("_o")
    return ir.parse(f"for {i} in range({t}.shape[0]):\n"
                    f"    {ui} = {u}[{i}]\n"
                    f"    for {j} in range({t}.shape[1]):\n"
                    f"        {t}[{i}, {j}] += {ui} * {v}[{j}]\n")
