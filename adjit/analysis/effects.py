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

from .. import ir
from ..normalize.names import lookup
from ..rules.registry import REGISTRY

_PURE_MODULES = ("numpy", "math", "builtins", "scipy")
_UNKNOWN = "adjit cannot read it (what it does beyond its result is unknown)"


def of_object(obj):
    """Why a call of `obj` has an effect, or None."""
    entry = REGISTRY.get(obj)
    if entry is not None:
        return entry.effect
    if hasattr(getattr(obj, "py_func", obj), "__adjit_objmode__"):
        return "a `with objmode()` block: Python code that runs once, in order"
    inner = getattr(obj, "__adjit_calls__", None)     # a wrapper adjit made (rules/opaque.py)
    if inner is not None:
        return of_object(inner)
    module = getattr(obj, "__module__", None)
    if not isinstance(module, str):
        return _UNKNOWN
    if module == "numpy.random" or module.startswith("numpy.random."):
        return "a random draw: it advances numba's generator"
    if module.split(".")[0] in _PURE_MODULES or module.startswith("adjit."):
        return None
    return _UNKNOWN


def known_effect(obj):
    """Why a call of `obj` has an effect adjit knows of (a random draw, a seed, a print, an
    objmode block), or None: for no effect, and for one adjit cannot know (such a call is
    made at compile time only where adjit must: rules/opaque.py probes what it returns)."""
    why = of_object(obj)
    return None if why == _UNKNOWN else why


def of_call(call, env):
    """Why the call expression `call` has an effect, or None."""
    if ir.note(call, "opaque") is not None or isinstance(call.func, (ast.Name, ast.Attribute)):
        obj = lookup(call.func, env)
        if obj is None:
            return None
        return of_object(obj)
    return None


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
            why = of_call(value, env)
            if why is not None:
                ir.annotate(s, effect=why)


def of(stmt):
    """Why a statement has an effect (its note), or None."""
    return ir.note(stmt, "effect")


def first(stmts):
    """The first statement with an effect in `stmts` (nested ones included), or None."""
    return next((s for s in ir.walk_stmts(stmts) if of(s)), None)
