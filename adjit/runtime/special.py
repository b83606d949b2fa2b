"""scipy.special's functions as compiled code calls them.

numba cannot call scipy.special's ufuncs; numba users reach the same C functions through
their addresses in scipy.special.cython_special (numba.extending.get_cython_function_address,
wrapped in a ctypes function type), and numba calls a ctypes function directly. adjit makes
one such wrapper per function it knows (the double-precision version) inside an @njit
function named as scipy names it (a ctypes function cannot be a dictionary key; a
dispatcher can): the registry entries of scipy.special (rules/table.py) are these
functions, generated code calls them (`vec.special.i1(x)` in a derivative), and a user's own
wrapper of the same C function is recognized by its address (`by_address`), so its calls get
the same derivative.
"""
import ctypes

import numba

_MODULE = "scipy.special.cython_special"
_BY_ADDRESS = {}
_MADE = {}


def _double_symbol(name, nargs):
    """The cython_special symbol of `name`'s version on doubles (or None)."""
    import scipy.special.cython_special as cs
    want = '"double (' + ", ".join(["double"] * nargs) + ', int __pyx_skip_dispatch)"'
    for symbol in (name, "__pyx_fuse_0" + name, "__pyx_fuse_1" + name):
        capsule = cs.__pyx_capi__.get(symbol)
        if capsule is not None and want in repr(capsule):   # a capsule's name: its signature
            return symbol
    return None


def function(name, nargs):
    """adjit's ctypes wrapper of scipy.special.<name> on doubles (None where this scipy has
    no such C function); made once, and also an attribute of this module."""
    if name in _MADE:
        return _MADE[name]
    fn = None
    symbol = _double_symbol(name, nargs)
    if symbol is not None:
        from numba.extending import get_cython_function_address
        address = get_cython_function_address(_MODULE, symbol)
        c_function = ctypes.CFUNCTYPE(ctypes.c_double, *[ctypes.c_double] * nargs)(address)
        fn = _compiled(c_function, nargs, name)
        _BY_ADDRESS[address] = fn
        globals()[name] = fn
    _MADE[name] = fn
    return fn


def _compiled(c_function, nargs, name):
    """An @njit function of `nargs` numbers calling `c_function`, named `name`."""
    if nargs == 1:
        def call(x):
            return c_function(x)
    elif nargs == 2:
        def call(x, y):
            return c_function(x, y)
    else:
        def call(x, y, z):
            return c_function(x, y, z)
    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"scipy.special.{name} on doubles (its C function, through ctypes)"
    return numba.njit(call)


def by_address(obj):
    """adjit's wrapper of the scipy.special C function that `obj` points to, or None: a
    ctypes function pointer or a numba WrapperAddressProtocol object (numba's first-class
    function wrapper of an address), as numba users wrap cython_special's functions."""
    if isinstance(obj, ctypes._CFuncPtr):
        return _BY_ADDRESS.get(ctypes.cast(obj, ctypes.c_void_p).value)
    if isinstance(obj, numba.types.WrapperAddressProtocol):
        try:
            return _BY_ADDRESS.get(obj.__wrapper_address__())
        except Exception:       # a wrapper that cannot tell its address yet
            return None
    return None
