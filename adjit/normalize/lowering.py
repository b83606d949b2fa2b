"""Lowerings of numpy's whole-array functions, found by the name a registry entry gives.

An "array" entry of the registry (rules/table.py) names its lowering with `handler`: "dot",
"cumsum", "keep" (kept as a call at array level, its ArrayRule the derivative), "packed" (a
number or tuple computed as one array), ... The normalizer method that lowers it says so:

    @lowers("cumsum")
    def lower_cumsum(self, node, obj, out):
        ...

and is called as `LOWERINGS[entry.handler](normalizer, node, obj, out)`, with the call's
node, the function object it resolves to and the statement list being built; it returns
what the call's value is (an atom, a lazy array expression, a TupleValue). `missing` names
the handlers with no lowering: adjit checks the registry's at import (normalize/anf.py) and
tests/test_registry.py checks it again, so a misspelt handler fails at once rather than when
a program first calls that function.
"""

LOWERINGS = {}
"""handler name -> the normalizer method (a plain function of self, node, obj, out)."""


def lowers(*handlers):
    """Register the decorated normalizer method as the lowering of each named handler."""
    def register(method):
        for handler in handlers:
            if handler in LOWERINGS:
                raise ValueError(f"two lowerings of the registry handler {handler!r}: "
                                 f"{LOWERINGS[handler].__qualname__} and "
                                 f"{method.__qualname__}")
            LOWERINGS[handler] = method
        return method
    return register


def missing(handlers):
    """The handlers (of registry entries) no method lowers, sorted."""
    return sorted(set(handlers) - set(LOWERINGS))
