"""Deterministic fresh names and the namespace generated code runs in."""
import ast
import builtins
import math

import numba
import numpy as np

from .. import ir
from ..api_stop import stop_gradient
from ..rules.effects import of_object
from ..runtime import checkpoint as ckpt
from ..runtime import vec
from ..runtime.linked import calls

_CKPT = calls(ckpt)
"""The checkpoint schedule as generated code calls it: through its machine code."""


def unused_name(stem, taken):
    """`stem`, or stem with underscores added, not in the set `taken` (which then holds it):
    a readable name for something made from the user's names (`x_field`, `lst_buf`)."""
    name = stem
    while name in taken:
        name += "_"
    taken.add(name)
    return name


class NameGen:
    """Fresh temporaries `_t1, _t2, ...`, numbered in order, never colliding with user names."""

    def __init__(self, taken=()):
        self.taken = set(taken)
        self.counts = {}

    def fresh(self, stem="_t"):
        while True:
            k = self.counts.get(stem, 0) + 1
            self.counts[stem] = k
            name = f"{stem}{k}"
            if name not in self.taken:
                self.taken.add(name)
                return name

    def reserve(self, name):
        self.taken.add(name)


class Env:
    """The globals of generated code: canonical, readable names for resolved objects.

    `math.sin` is spelled `math.sin` and numpy functions `np.<name>` whatever the user's
    import alias; any other object gets a unique `g_<name>` global.
    """

    def __init__(self):
        self.ns = {"math": math, "np": np, "numba": numba, "stop_gradient": stop_gradient,
                   "vec": vec, "ckpt": _CKPT}
        self._by_id = {}

    def spell(self, obj, hint):
        """Source text that evaluates to `obj` in the generated namespace."""
        if obj is math:
            return "math"
        if obj is np:
            return "np"
        if obj is stop_gradient:
            return "stop_gradient"
        for module, name in ((math, "math"), (np, "np"), (vec, "vec"), (np.random, "np.random"),
                             (np.linalg, "np.linalg")):
            attr = getattr(obj, "__name__", None)
            if attr and getattr(module, attr, None) is obj:
                return f"{name}.{attr}"
        attr = getattr(obj, "__name__", None)
        if attr and getattr(builtins, attr, None) is obj:
            return attr
        key = id(obj)
        if key in self._by_id:
            return self._by_id[key]
        base = "g_" + (attr if isinstance(attr, str) and attr.isidentifier() else hint)
        name, k = base, 1
        while name in self.ns:
            k += 1
            name = f"{base}{k}"
        self.ns[name] = obj
        self._by_id[key] = name
        return name


def lookup(func, ns):
    """The object a function expression of generated code names (`np.exp`, `vec.bcast`,
    `g_helper`, `len`): names looked up in the namespace `ns` (then builtins), attributes
    read; None for anything else. Generated code spells every object it calls this way
    (Env.spell), so no source text is ever evaluated."""
    if isinstance(func, ast.Name):
        if func.id in ns:
            return ns[func.id]
        return getattr(builtins, func.id, None)
    if isinstance(func, ast.Attribute):
        base = lookup(func.value, ns)
        return None if base is None else getattr(base, func.attr, None)
    return None


def call_effect(call, ns):
    """Why the call expression `call` of generated code has an effect, or None (for one with
    the note `pure`: an @njit helper adjit cannot read that frontend/purity.py showed has
    none, an outlined helper's value)."""
    if ir.note(call, "pure", False):
        return None
    if ir.note(call, "opaque") is not None or isinstance(call.func, (ast.Name, ast.Attribute)):
        obj = lookup(call.func, ns)
        if obj is None:
            return None
        return of_object(obj)
    return None
