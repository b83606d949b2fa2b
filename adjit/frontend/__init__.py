"""Frontend: read a function's source, parse it, and resolve every name it uses."""
from .source import FunctionSource, read_function

__all__ = ["FunctionSource", "read_function"]
