"""Calls with an effect beyond their result: run once, in program order, never again.

A random draw advances numba's generator, np.random.seed resets it, print writes, an MPI
message is matched by another rank, and a function adjit cannot read (a ctypes or cffi
function, a cfunc, an @overload'ed name) may do any of these: evaluated twice, such a call
answers differently or does its effect twice. What adjit knows of a function is its registry
entry (`effect`: why it has one); a function with no entry has one unless it is numpy's
(outside numpy.random), math's or a builtin.

The normalized statements that make such a call carry the note `effect` (`mark`, run once
after normalization). Every pass that would drop a statement, move it or evaluate it again
asks `of(stmt)`: dead-code elimination keeps it in the forward sweep (reverse/dce.py); a loop
holding one is neither computed again in the backward sweep (reverse/recompute.py) nor
checkpointed (reverse/checkpoint.py); invariant hoisting leaves it in its loop
(analysis/hoist.py); the planner never replays its value (reverse/plan.py); the backward
sweep reads what it returned from the tape.
"""
import ast

import numpy as np

from .. import ir
from ..normalize.names import call_effect
from ..rules.effects import of_object, written_arguments

_VALUE_BUILTINS = frozenset({"int", "float", "complex", "bool", "abs", "min", "max", "len",
                             "range"})
_VALUE_MODULES = frozenset({"math", "cmath", "vmath"})


def mark(stmts, env):
    """Give every simple statement that makes a call with an effect the note `effect`."""
    for s in ir.walk_stmts(stmts):
        if isinstance(s, (ast.If, ast.For, ast.While)):
            continue
        if ir.note(s, "message"):
            ir.annotate(s, effect="an MPI message: the other rank waits for it")
            continue
        value = getattr(s, "value", None)
        if isinstance(value, ast.Call):
            why = call_effect(value, env)
            if why is not None:
                ir.annotate(s, effect=why)


def kept_call(stmt):
    """Whether `stmt` calls an @njit helper adjit cannot read, kept as numba's (its call's
    note `pure`): no effect, but it may raise where numba's function would, so no pass
    drops it where its value is unread nor moves it out of its loop."""
    return isinstance(getattr(stmt, "value", None), ast.Call) and \
        ir.note(stmt.value, "pure", False)


def of(stmt):
    """Why a statement has an effect (its note), or None."""
    return ir.note(stmt, "effect")


def first(stmts):
    """The first statement with an effect in `stmts` (nested ones included), or None."""
    return next((s for s in ir.walk_stmts(stmts) if of(s)), None)


def computes_only(call):
    """Whether a call in generated code computes a value and does nothing else, named as
    generated code names such functions: a builtin conversion, abs, min, max, len or range; a
    function of math, cmath or runtime/vmath (`vmath.exp`); numpy's (`np.sqrt`) where it has
    no effect and is given nothing to write into (np.add(a, b, c) writes c). Passes that move
    or reorder generated statements ask this (reverse/ascending.py, reverse/fusion.py)."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id in _VALUE_BUILTINS
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
        return False
    if func.value.id in _VALUE_MODULES:
        return True
    if func.value.id not in ("np", "numpy"):
        return False
    obj = getattr(np, func.attr, None)
    return callable(obj) and of_object(obj) is None and written_arguments(
        obj, call.args, [(k.arg, k.value) for k in call.keywords]) == []
