"""numba's disk cache for adjit's runtime helpers, keyed by the optimization level too.

numba keys a cached function by its signature, the CPU and its bytecode, not by NUMBA_OPT:
machine code compiled by a process at NUMBA_OPT=0 (the test suite, a user debugging) was
loaded by every later process at the default -O3, so the runtime ran unoptimized there (the
Cholesky adjoint of a 200 x 200 matrix: 100 ms instead of 0.5 ms). Each runtime module ends
with `key_by_level(globals())`, which gives its caching dispatchers a LevelCache: entries of
both levels then live side by side in numba's index.
"""
import numba.core.config
from numba.core.caching import FunctionCache
from numba.core.dispatcher import Dispatcher


class LevelCache(FunctionCache):
    """numba's FunctionCache with NUMBA_OPT in the index key, and `keyed`: more (name,
    value) pairs the compiled code depends on (a global numba freezes into it)."""

    def __init__(self, py_func, keyed=()):
        super().__init__(py_func)
        self._keyed = tuple(keyed)

    def _index_key(self, sig, codegen):
        return super()._index_key(sig, codegen) + (
            ("NUMBA_OPT", str(numba.core.config.OPT)),) + self._keyed


def key_by_level(namespace, keyed=None):
    """Give every dispatcher of `namespace` (a module's globals) that caches on disk a
    LevelCache in place of numba's FunctionCache (before anything compiled it). `keyed`:
    {name: ((key, value), ...)} for the dispatchers whose code holds a global's value
    (tape.tape_room: this machine's memory), keyed by it too."""
    for name, value in list(namespace.items()):
        if isinstance(value, Dispatcher) and type(getattr(value, "_cache", None)) is \
                FunctionCache:
            value._cache = LevelCache(value.py_func, (keyed or {}).get(name, ()))
