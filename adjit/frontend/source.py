"""Read a user function's source and resolve the names it refers to.

adjit knows functions by identity, never by spelling: `from adjit import stop_gradient as sg`
and `ad.stop_gradient` both resolve to the same object here, and every later pass asks this
module what a name means.
"""
import ast
import builtins
import copy
import enum
import inspect
import sys
import textwrap
import types
from tokenize import TokenError

import numba
import numpy as np

from ..errors import AdjitError, Location, function_origin
from .. import ir
from . import stale

_MISSING = object()


class FunctionSource:
    """A parsed user function together with the namespace its names resolve in."""

    def __init__(self, fn, tree, loc):
        self.fn = fn
        self.tree = tree
        self.loc = loc
        args = tree.args
        # every parameter, in the order the generated function takes them: positional ones,
        # then keyword-only ones (they hide module globals of the same name, as in Python)
        self.params = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
        self.vararg = args.vararg.arg if args.vararg is not None else None     # `*args`
        self.locals = assigned_names(tree) | set(self.params) | {self.vararg} - {None}
        self._closure = _closure_dict(fn)

    def with_tree(self, tree, names):
        """The same function read as `tree` (a rewrite of its own), `names` resolved too."""
        other = FunctionSource(self.fn, tree, self.loc)
        other._closure = {**self._closure, **names}
        return other

    def resolve_name(self, name):
        """The object a non-local name refers to, or _MISSING."""
        if name in self.locals:
            return _MISSING
        if name in self._closure:
            return self._closure[name]
        if name in self.fn.__globals__:
            return self.fn.__globals__[name]
        return getattr(builtins, name, _MISSING)

    def resolve(self, node):
        """Resolve a Name or dotted Attribute chain of non-locals (`np.exp`, a module's
        attribute, a class's static method, an IntEnum's member as its integer); _MISSING
        if not one."""
        if isinstance(node, ast.Name):
            return self.resolve_name(node.id)
        if isinstance(node, ast.Attribute):
            if node.attr == "value" and isinstance(node.value, ast.Attribute):
                # an Enum member's value (`OptionTypes.EUROPEAN_CALL.value`: FinancePy's),
                # which numba compiles as the constant it is
                kind = self.resolve(node.value.value)
                member = kind.__members__.get(node.value.attr) \
                    if isinstance(kind, enum.EnumMeta) else None
                if member is not None and isinstance(member.value, (bool, int, float)):
                    return member.value
            base = self.resolve(node.value)
            if isinstance(base, types.ModuleType):
                return getattr(base, node.attr, _MISSING)
            if isinstance(base, type) and isinstance(
                    inspect.getattr_static(base, node.attr, None), staticmethod):
                # a library's `@staticmethod @njit def derivatives(...)` called on its class
                # (`EPL_numba.derivatives(...)`): the function it holds, as a module's would be
                return getattr(base, node.attr)
            if isinstance(base, enum.EnumMeta) and issubclass(base, int) and \
                    node.attr in base.__members__:
                # an IntEnum's member (`State.LOWER`): numba compiles it as its integer
                return int(base.__members__[node.attr])
        return _MISSING

    def enum_member(self, node):
        """The member of a plain enum.Enum that `Class.MEMBER` names (the normalizer reads
        it as numba does: normalize/values.py EnumValue), else None."""
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            if isinstance(base, enum.EnumMeta) and not issubclass(base, int):
                return base.__members__.get(node.attr)
        return None


def _closure_dict(fn):
    cells = fn.__closure__ or ()
    out = {}
    for name, cell in zip(fn.__code__.co_freevars, cells):
        try:
            out[name] = cell.cell_contents
        except ValueError:
            pass
    return out


def code_names(code):
    """The names a code object reads as globals or attributes, its nested code's included."""
    names = list(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names += code_names(c)
    return names


def referenced(fn):
    """(name, value) of what a function (or numba dispatcher) reads from outside its body:
    its closure's values and the globals its code names; empty for what has no code."""
    fn = getattr(fn, "py_func", fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        return []
    glb = getattr(fn, "__globals__", {})
    return list(_closure_dict(fn).items()) + [(n, glb[n]) for n in code_names(code) if n in glb]


def assigned_names(tree):
    """Every name a tree assigns (its locals, nested functions' included)."""
    names = set()
    for node in ir.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def unwrap(fn):
    """The plain Python function behind a numba dispatcher, an adjit gradient or a function."""
    inner = getattr(fn, "__adjit_function__", None)
    if inner is not None:
        return inner
    py_func = getattr(fn, "py_func", None)
    if py_func is not None:
        return py_func
    return fn


class GUFuncKernel:
    """A numba `@guvectorize` gufunc: its Python kernel, the core dimension names of its
    inputs and outputs, per input whether the kernel takes a core `()` input as a number
    (True), a 1-element array (False) or either (None: a lazy gufunc, typed per call, takes
    numbers), and whether it is lazy (numba then needs the output passed)."""

    def __init__(self, kernel, inputs, outputs, scalar, dynamic):
        self.kernel = kernel
        self.inputs = inputs
        self.outputs = outputs
        self.scalar = scalar
        self.dynamic = dynamic


def gufunc_kernel(obj):
    """The GUFuncKernel of a numba gufunc, or None for anything else."""
    builder = getattr(obj, "gufunc_builder", None)
    kernel = getattr(builder, "py_func", None)
    if not isinstance(kernel, types.FunctionType) or not hasattr(builder, "sin"):
        return None
    inputs = [tuple(c) for c in builder.sin]
    sigs = getattr(builder, "_sigs", None) or []
    dynamic = bool(getattr(obj, "_is_dynamic", False))
    scalar = [None] * len(inputs)
    if sigs and not dynamic:
        args = getattr(sigs[0], "args", ())
        scalar = [not hasattr(t, "ndim") for t in args[:len(inputs)]]
    return GUFuncKernel(kernel, inputs, [tuple(c) for c in builder.sout], scalar, dynamic)


_PARALLEL_KERNELS = {}
"""numba ufuncs built with @vectorize(target='parallel') since adjit's import -> kernel."""


def _record_parallel_kernels():
    """numba's parallel target returns a plain numpy ufunc that keeps no reference to its
    Python kernel: record the kernel as numba builds one (numba's behaviour unchanged)."""
    try:
        from numba.np.ufunc.parallel import ParallelUFuncBuilder
    except ImportError:         # pragma: no cover - a numba that moved it
        return
    build = ParallelUFuncBuilder.build_ufunc
    if getattr(build, "adjit_records", False):
        return

    def build_ufunc(self):
        ufunc = build(self)
        _PARALLEL_KERNELS[ufunc] = self.py_func
        return ufunc
    build_ufunc.adjit_records = True
    ParallelUFuncBuilder.build_ufunc = build_ufunc


_record_parallel_kernels()


def recover_parallel_kernel(ufunc):
    """The kernel of a parallel-target ufunc numba built before adjit's import, read again:
    the function of the ufunc's name, or the `def` of that name without its decorators, in a
    module holding the ufunc, else a function of that name in another module (a kernel
    imported from a library). Kept (and recorded) only where it computes the ufunc's own
    values at probe points; None otherwise."""
    if not isinstance(ufunc, np.ufunc) or getattr(ufunc, "__module__", None) == "numpy":
        return None
    name = ufunc.__name__
    holders = [m for m in _modules() if any(v is ufunc for v in list(m.__dict__.values()))]
    for module in _modules(first=holders):
        fn = module.__dict__.get(name)
        if not (isinstance(fn, types.FunctionType) and fn.__name__ == name):
            fn = _undecorated_def(module, name) if module in holders else None
        if fn is not None and _computes(fn, ufunc):
            _PARALLEL_KERNELS[ufunc] = fn
            return fn
    return None


def _modules(first=()):
    """The loaded modules with a namespace, those in `first` first (each once)."""
    first = [m for m in first if m is not None]
    rest = [m for m in list(sys.modules.values()) if all(m is not f for f in first)]
    return [m for m in first + rest if isinstance(getattr(m, "__dict__", None), dict)]


def compiled_entry_dispatcher(obj):
    """The numba dispatcher whose compiled entry point `obj` is (what `Dispatcher.compile(sig)`
    returns: a builtin method of numba's closure object, keeping no reference to its
    dispatcher), found in the module of its function or any other; None for anything else."""
    owner = getattr(obj, "__self__", None)
    if type(owner).__name__ != "_Closure" or \
            type(owner).__module__.split(".")[0] not in ("numba", "_dynfunc"):
        return None
    from numba.core.dispatcher import Dispatcher
    for module in _modules(first=[sys.modules.get(getattr(obj, "__module__", None))]):
        for value in list(module.__dict__.values()):
            if isinstance(value, Dispatcher) and any(
                    getattr(o, "entry_point", None) is obj
                    for o in list(value.overloads.values())):
                return value
    return None


def _undecorated_def(module, name):
    """The module's top-level `def name` made again without its decorators, with the
    module's globals (nothing in the module is rebound); None where there is none."""
    path = getattr(module, "__file__", None)
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
    except (OSError, TypeError, SyntaxError, ValueError):
        return None
    defs = [s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == name]
    if len(defs) != 1 or defs[0].args.defaults or defs[0].args.kw_defaults:
        return None
    fdef = defs[0]
    fdef.decorator_list = []
    # (with the module's imports, which decide how its attribute calls compile, so that its
    # code is the module's: stale.differs compares them)
    body = stale.import_statements(stale.imported_names(tree)) + [fdef]
    code = compile(ast.Module(body=body, type_ignores=[]), path, "exec")
    inner = [c for c in code.co_consts if isinstance(c, types.CodeType) and c.co_name == name]
    return types.FunctionType(inner[0], module.__dict__, name) if inner else None


def _computes(fn, ufunc):
    """Whether fn, called on numbers, gives the ufunc's values at probe points of its first
    floating-point loop: equal where both are finite (at least one such point), and where
    Python raises (math.sqrt of a negative number) the ufunc's value not finite."""
    loops = [t for t in ufunc.types if set(t.replace("->", "")) <= set("fd")]
    if not loops or ufunc.nout != 1:
        return False
    dtype = np.float64 if "d" in loops[0] else np.float32
    points = np.array([0.3, 1.1, 2.7, -0.4, 0.05, 3.9, -1.3, 0.7, 5.2])
    probes = [np.roll(points, 4 * k).astype(dtype) for k in range(ufunc.nin)]
    with np.errstate(all="ignore"):
        try:
            want = ufunc(*probes)
        except Exception:       # noqa: BLE001 - not callable on these: cannot be checked
            return False
        agreed = 0
        for i, value in enumerate(want):
            try:
                got = fn(*(p[i] for p in probes))
            except (ArithmeticError, ValueError):
                if np.isfinite(value):
                    return False
                continue
            except Exception:   # noqa: BLE001 - anything else it raises: not this kernel
                return False
            tol = 1e-12 if dtype == np.float64 else 1e-5
            if not np.isclose(got, value, rtol=tol, atol=tol, equal_nan=True):
                return False
            agreed += bool(np.isfinite(value))
    return agreed > 0


def ufunc_kernel(obj):
    """The scalar Python kernel of a numba `@vectorize` ufunc (a DUFunc: lazy, or with
    signatures on the cpu target; a parallel-target ufunc built after adjit was imported),
    or None for anything else."""
    try:
        from numba.np.ufunc.dufunc import DUFunc
    except ImportError:         # pragma: no cover - a numba that moved it
        return None
    if isinstance(obj, np.ufunc):
        try:
            return _PARALLEL_KERNELS.get(obj)
        except TypeError:       # pragma: no cover - an unhashable ufunc
            return None
    if not isinstance(obj, DUFunc):
        return None
    return getattr(getattr(obj, "_dispatcher", None), "py_func", None)


_SHIPPED = {}
"""Script files (path -> text) whose functions came pickled by value (cloudpickle, as Dask
sends what a `__main__` script defines): their code objects no longer name the file."""


def script_source(fn):
    """(path, text) of the script that defines `fn` when it is defined in `__main__` (a
    function Dask pickles by value, without its source); None otherwise."""
    fn = unwrap(fn)
    if getattr(fn, "__module__", None) != "__main__":
        return None
    path = getattr(fn, "__globals__", {}).get("__file__")
    if not isinstance(path, str):
        return None
    text = _SHIPPED.get(path)
    if text is None:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError:
            return None
    return path, text


def receive_script(path, text):
    """Remember a script's text that came with a pickled gradient (see script_source)."""
    _SHIPPED.setdefault(path, text)


def _script_block(fn):
    """(path, the def's source) from the script `fn` came from, for a function pickled by
    value; None if there is none."""
    found = script_source(fn)
    if found is None:
        return None
    path, text = found
    lines = text.splitlines(True)[fn.__code__.co_firstlineno - 1:]
    try:
        return path, "".join(inspect.getblock(lines))
    except (IndexError, SyntaxError, TokenError):
        return None


def numba_implementation(fn):
    """The name of what numba compiles a call to the Python function `fn` from, where that
    is not `fn`'s own body: an @overload (or other typing template) registered for it
    (interpolation.py's `def _mlinterp(...): pass` stubs); None for an ordinary function
    and for @register_jitable ones (numba compiles their body as written)."""
    from numba.core import registry as numba_registry
    context = numba_registry.cpu_target.typing_context
    try:
        context.refresh()
        fnty = context._lookup_global(fn)
    except Exception:   # noqa: BLE001 - no typing of its own (KeyError): an ordinary function
        return None
    for template in getattr(fnty, "templates", ()):
        impl = getattr(template, "_overload_func", None)
        if impl is None:
            return getattr(template, "__name__", "a typing template")
        if "register_jitable" not in getattr(impl, "__qualname__", ""):
            return f"'{impl.__qualname__}' ({impl.__code__.co_filename}, line " \
                f"{impl.__code__.co_firstlineno})"
    return None


def read_function(fn, vararg=False):
    """Parse `fn` (a plain function or numba dispatcher) into a FunctionSource. `vararg`:
    a `*args` parameter is allowed (a helper, whose calls give it a tuple)."""
    compiled_by_numba = getattr(fn, "py_func", None) is not None and \
        getattr(fn, "__adjit_function__", None) is None
    declared = (getattr(fn, "locals", None) or {}) if compiled_by_numba else {}
    fn = unwrap(fn)
    made = getattr(fn, "__adjit_source__", None)
    if made is not None:        # a nested function made a helper (normalize/closures.py)
        return made
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", repr(fn))
    if not isinstance(fn, types.FunctionType):
        raise AdjitError(
            f"cannot differentiate {name!r}: it is a {type(fn).__name__}, not a Python function "
            "adjit can read the source of. Pass a function defined with `def` (or an @njit "
            "dispatcher of one); builtins and C functions need a derivative rule instead."
        )
    filename = fn.__code__.co_filename
    firstlineno = fn.__code__.co_firstlineno
    loc = Location(name, filename, firstlineno)
    implementation = numba_implementation(fn)
    if implementation is not None and not compiled_by_numba:
        raise loc.error(None, "numba compiles calls to it from another function, "
                        f"{implementation}, registered with numba.extending.overload: its "
                        "own body is not what runs",
                        "Give the @njit function that calls it a derivative of its own "
                        "(adjit.custom_vjp), or differentiate code that calls the "
                        "implementation itself.")
    if fn.__name__ == "<lambda>":
        tree = _lambda_tree(fn)
        if tree is None:
            raise loc.error(None, "a lambda whose source adjit cannot single out (more than "
                            "one lambda of these parameters on its line, or no file)",
                            "Define the function with `def`, or give the lambda a line of "
                            "its own.")
        # (a copy named as its `def`: generated code's names are made from the function's)
        named = types.FunctionType(fn.__code__.replace(co_name="lambda_"), fn.__globals__,
                                   "lambda_", fn.__defaults__, fn.__closure__)
        named.__kwdefaults__ = fn.__kwdefaults__
        named.__qualname__ = fn.__qualname__.replace("<lambda>", "lambda_")
        named.__module__ = fn.__module__
        return _checked(named, tree, loc, vararg, compiled_by_numba)
    try:
        text = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError) as exc:
        block = _script_block(fn)
        if block is None:
            raise loc.error(None, f"its source cannot be read ({exc})",
                            "Define the function in a file (or a notebook cell), not with "
                            "exec or at the interactive prompt.") from None
        filename, text = block
        text = textwrap.dedent(text)
        loc = Location(name, filename, firstlineno)
    try:
        module = ast.parse(text)
    except SyntaxError as exc:
        raise loc.error(None, f"its source does not parse on its own ({exc.msg})",
                        "Define the function with a plain `def` statement.") from None
    tree = module.body[0] if module.body else None
    if not isinstance(tree, ast.FunctionDef):
        raise loc.error(None, "its source is not a plain `def` statement",
                        "Define the function with `def` (not async def, lambda or class).")
    if tree.name != fn.__code__.co_name:
        # the text found at its line is another function's: a function made by exec or
        # compile has no file of its own, and the lookups fall back on its module's file
        # (Python's own, or _script_block's for functions a script ships by value)
        raise loc.error(None, f"its source cannot be read (line {firstlineno} of "
                        f"{filename} holds `def {tree.name}`, not `def {fn.__code__.co_name}`)",
                        "Define the function in a file with `def`, not with exec or compile; "
                        "to differentiate a wrapper made so, differentiate the function it "
                        "calls.")
    if stale.differs(fn, text, filename):
        raise loc.error(None, "the text of its `def` in the file is not the code Python runs "
                        "for it (the file was changed after the module was imported)",
                        "Reload the module (importlib.reload, or restart the notebook's "
                        "kernel) so that the code that runs is the code in the file.")
    ast.increment_lineno(tree, firstlineno - 1)
    src = _checked(fn, tree, loc, vararg, compiled_by_numba)
    return _declared_locals(src, declared) if declared else src


_DECLARED = "_adjit_declared_np"    # the name the casts of declared locals call numpy by


def _declared_locals(src, declared):
    """`src` with numba's `locals=` declarations of number variables kept
    (@njit(locals={"result": numba.float32})): numba converts every value assigned to such a
    variable to its type, so each assignment (`+=` included) is written with the conversion:
    `result = np.float32(result + d * d)` (an integer type truncates a float, as numba's
    conversion does)."""
    kinds = {name: str(t) for name, t in declared.items()
             if isinstance(t, (numba.types.Float, numba.types.Integer)) and
             name in src.locals and name not in src.params}
    if not kinds:
        return src
    tree = copy.deepcopy(src.tree)

    def cast(name, value):
        func = ast.Attribute(value=ast.Name(id=_DECLARED, ctx=ast.Load()), attr=kinds[name],
                             ctx=ast.Load())
        return ast.copy_location(ast.Call(func=func, args=[value], keywords=[]), value)

    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(node, field, None)
            if not isinstance(stmts, list):
                continue
            for k, s in enumerate(stmts):
                if isinstance(s, ast.Assign) and len(s.targets) == 1 and \
                        isinstance(s.targets[0], ast.Name) and s.targets[0].id in kinds:
                    s.value = cast(s.targets[0].id, s.value)
                elif isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name) and \
                        s.target.id in kinds:
                    name = s.target.id
                    value = ast.copy_location(ast.BinOp(
                        left=ast.Name(id=name, ctx=ast.Load()), op=s.op, right=s.value), s)
                    stmts[k] = ast.copy_location(ast.Assign(
                        targets=[ast.Name(id=name, ctx=ast.Store())],
                        value=cast(name, value)), s)
                elif isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and \
                        s.target.id in kinds and s.value is not None:
                    s.value = cast(s.target.id, s.value)
    ast.fix_missing_locations(tree)
    return src.with_tree(tree, {_DECLARED: np})


def _lambda_tree(fn):
    """A `def` made of the lambda `fn` (`grad(lambda x: log1pexp(x) * 2.0)`), read from its
    file: the lambda on its first line whose parameters are fn's, where the columns of its
    code single out one. None where none or several do, or the file cannot be read."""
    code = fn.__code__
    try:
        lines, start = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return None
    text = textwrap.dedent("".join(lines))
    indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
    try:
        module = ast.parse(text)
    except SyntaxError:
        try:        # a lambda in an expression spanning lines around these
            module = ast.parse(textwrap.dedent("".join(
                inspect.findsource(fn)[0])))
            start, indent = 1, 0
        except (OSError, SyntaxError, TypeError):
            return None
    params = list(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])
    line = code.co_firstlineno - start + 1
    found = [n for n in ast.walk(module) if isinstance(n, ast.Lambda) and n.lineno == line and
             [a.arg for a in n.args.posonlyargs + n.args.args + n.args.kwonlyargs] == params]
    if len(found) > 1:      # the columns its instructions come from (Python 3.11 on)
        cols = {c for ln, _, c, end in getattr(code, "co_positions", lambda: ())()
                if ln == code.co_firstlineno and c is not None and end is not None and
                end > c}     # (not the zero-width RESUME at column 0)
        first = min(cols) if cols else None
        found = [n for n in found if first is not None and
                 n.body.col_offset + indent <= first and
                 (n.body.end_lineno > n.lineno or first < n.body.end_col_offset + indent)]
    if len(found) != 1:
        return None
    lam = found[0]
    tree = ast.FunctionDef(name="lambda_", args=lam.args,
                           body=[ast.copy_location(ast.Return(value=lam.body), lam.body)],
                           decorator_list=[], returns=None, type_comment=None, type_params=[])
    ast.copy_location(tree, lam)
    ast.fix_missing_locations(tree)
    ast.increment_lineno(tree, start - 1)
    return tree


def _checked(fn, tree, loc, vararg, compiled_by_numba):
    """The FunctionSource of `fn`'s parsed `def` (at its file's line numbers), checked."""
    name = loc.name
    origin = getattr(fn, "__adjit_origin__", None)
    if origin is not None:
        # a function adjit generated around the user's (higher.py: a function of a tuple's
        # elements calling it): what is said of it is said at the user's `def`
        filename, line, _ = function_origin(origin)
        loc = Location(name, filename, line)
        for node in ast.walk(tree):
            if hasattr(node, "lineno"):
                node.lineno = node.end_lineno = line
    tree.decorator_list = []
    star = tree.args.kwarg or (None if vararg else tree.args.vararg)
    if star is not None:
        spelled = ("*" if star is tree.args.vararg else "**") + star.arg
        raise loc.error(tree, f"the parameter `{spelled}`",
                        "adjit compiles a function for a fixed list of named parameters: name "
                        "each argument (def f(x, y, z)), or pass the values as one array.")
    if compiled_by_numba and tree.args.kwonlyargs:
        names = ", ".join(f"`{a.arg}`" for a in tree.args.kwonlyargs)
        error = loc.error(tree, f"the keyword-only parameter(s) {names} of a numba-compiled "
                          "function",
                          "numba binds keyword-only parameters wrongly (numba issue 5903: a "
                          "call gets a default in place of an argument it passed, or does not "
                          "compile), so numba's code and Python's differ; adjit will not pick "
                          "one silently. Move them before the `*` (ordinary parameters with "
                          "defaults), as numba handles those.")
        error.numba_differs = True      # (so not called as numba's either: inline.py)
        raise error
    return FunctionSource(fn, tree, loc)


MISSING = _MISSING
