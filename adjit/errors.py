"""AdjitError and the source-location formatting every pass uses.

Every error adjit raises at transformation time names the user's function, the file and
line in the user's source, the construct at fault, and what to write instead.
"""
import os
import sys


class AdjitError(Exception):
    """Raised when adjit cannot transform or differentiate a function. Made from the
    message alone, or from what is at fault and what to write instead (joined)."""

    def __init__(self, message, advice=None):
        super().__init__(message if advice is None else f"{message}. {advice}")


class AdjitWarning(UserWarning):
    """A derivative adjit computes as the code is written, but which may not be the one the
    program's author means: a field of a record (or an item of a tuple) reaching the result
    only through conditions, beside other fields that carry derivatives, gets zero, the
    derivative of a step function. `warnings.simplefilter("error", adjit.AdjitWarning)`
    makes it an error."""


class InternalError(AdjitError):
    """An unexpected failure inside adjit itself (a bug in adjit), not a refusal of the
    user's code: an exception other than AdjitError raised while transforming a function
    (chained as its __cause__), or numba failing to compile the code adjit generated. Tests
    and fuzzers count it as a failure, never as a refusal."""


class CallValueError(AdjitError):
    """A value passed to a derivative that does not fit it (a tangent or cotangent of
    another shape or structure), found as the call runs; called from Python, the message
    gets the function's name and place."""


class ValueRefusedError(CallValueError, ValueError):
    """A derivative that exists only for some values (eigenvectors at distinct eigenvalues,
    the QR factors of a matrix at least as tall as wide), refused by the compiled code for
    the values it was given; a ValueError too, as numba's own checks of values are. Called
    from Python, the message gets the function's name and place."""


class Location:
    """Where a function lives: its name, file and first line, for error messages."""

    def __init__(self, name, filename, firstlineno):
        self.name = name
        self.filename = filename
        self.firstlineno = firstlineno

    def error(self, node, construct, advice):
        """Build an AdjitError pointing at `node` (an AST node or None) in this function."""
        line = getattr(node, "lineno", None) or self.firstlineno
        return error_at((self.filename, line, self.name), construct, advice)


def error_at(origin, construct, advice):
    """An AdjitError at a normalized statement's origin (filename, line, function)."""
    filename, line, fname = origin or ("<unknown>", 0, "<unknown>")
    return AdjitError(f"in function '{fname}' ({filename}, line {line}): {construct}. {advice}")


def function_error(fn, construct, advice):
    """An AdjitError naming the function `fn` (its file and first line, where it has code)."""
    inner = getattr(fn, "py_func", fn)
    if getattr(inner, "__code__", None) is None:
        return AdjitError(f"{construct}. {advice}")
    return error_at(function_origin(fn), construct, advice)


def function_origin(fn):
    """(filename, first line, name) of a function or an @njit dispatcher, for messages (of
    the user's function where adjit generated `fn` around it: its __adjit_origin__)."""
    fn = getattr(fn, "py_func", fn)
    fn = getattr(fn, "__adjit_origin__", fn)
    fn = getattr(fn, "py_func", fn)
    code = getattr(fn, "__code__", None)
    name = getattr(fn, "__qualname__", None) or repr(fn)
    return (code.co_filename, code.co_firstlineno, name) if code is not None else \
        ("<unknown>", 0, name)


def raised_by_user_code(exc):
    """Whether `exc`, caught where adjit reports what it did not expect as an InternalError,
    is a timeout the user's own code raised in the middle of the work (their signal
    handler, while numba compiled): a TimeoutError whose innermost frame is outside adjit,
    numba, llvmlite, numpy, Python's own library and generated code. Such an exception is
    theirs, and is passed on as raised. (Any other exception is taken for adjit's: the
    tests make adjit fail by patching its passes with functions of their own.)"""
    tb = exc.__traceback__
    if tb is None or not isinstance(exc, TimeoutError):
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    name = tb.tb_frame.f_code.co_filename
    if name.startswith("<"):
        return False
    path = os.path.abspath(name)
    ours = [os.path.dirname(os.path.abspath(__file__))] + [
        os.path.dirname(os.path.abspath(m.__file__)) for m in
        (sys.modules.get(k) for k in ("numba", "numpy", "llvmlite"))
        if m is not None and getattr(m, "__file__", None)]
    if any(path.startswith(d + os.sep) for d in ours):
        return False
    stdlib = os.path.dirname(os.path.abspath(os.__file__)) + os.sep
    return not (path.startswith(stdlib) and "-packages" + os.sep not in path[len(stdlib):])


def internal_error(origin, during, exc):
    """The InternalError for `exc`, raised unexpectedly `during` (a phrase: "in the
    normalized pass") while transforming the function at `origin` (filename, line,
    function). Raise it `from exc` so that the original traceback stays chained."""
    filename, line, fname = origin or ("<unknown>", 0, "<unknown>")
    detail = f"{type(exc).__name__}: {exc}".strip()
    return InternalError(f"in function '{fname}' ({filename}, line {line}): internal adjit "
                         f"error {during} ({detail}). This is a bug in adjit, not a problem "
                         "with your code: please report it with this message and the "
                         "function (the original traceback is chained below).")
