"""AdjitError and the source-location formatting every pass uses.

Every error adjit raises at transformation time names the user's function, the file and
line in the user's source, the construct at fault, and what to write instead.
"""


class AdjitError(Exception):
    """Raised when adjit cannot transform or differentiate a function. Made from the
    message alone, or from what is at fault and what to write instead (joined)."""

    def __init__(self, message, advice=None):
        super().__init__(message if advice is None else f"{message}. {advice}")


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
