"""Unparse an adjoint program to readable source, exec it, and compile it with numba.

The source is kept as `.source`: the forward sweep, then the backward sweep, with a comment
naming the user's line above each group of statements generated from it.
"""
import ast
import collections
import hashlib
import importlib.abc
import importlib.util
import io
import itertools
import linecache
import os
import re
import sys
import threading
import tokenize
import types
import warnings

import numba
import numba.core.errors
import numpy as np
from numba.core import callconv, typeinfer
from numba.core import types as types_
from numba.core.compiler import CompilerBase, DefaultPassBuilder
from numba.core.compiler_machinery import FunctionPass, register_pass
from numba.core.typed_passes import NopythonTypeInference

from .. import ir
from ..errors import InternalError
from ..frontend.source import referenced
from . import extrema
from .fold import fold_temporaries
from .webs import split_webs

from ..runtime import vec
from ..runtime.linked import linked
from ..runtime.sums import add_any_order, copy_dot, dot_range, sum_range
from ..runtime.tape import (DEFAULT_TAPE_LIMIT, check_room, grow_tape, int_tape_from,
                            reserve_tape, tape_from, tape_room, tape_start)

_COMMENT = "__adjit_comment__"
_serial = itertools.count(1)


def _with_comments(stmts, comments, last=None):
    """Insert a comment marker wherever the originating user line changes."""
    out = []
    for s in stmts:
        origin = ir.note(s, "origin", None)
        if origin is not None and origin[:2] != last:
            last = origin[:2]
            out.append(section(_describe(origin), comments))
        if ir.note(s, "comment", None):
            out.append(section(ir.note(s, "comment"), comments))
        for field in ("body", "orelse"):
            inner = getattr(s, field, None)
            if isinstance(inner, list) and inner:
                setattr(s, field, _with_comments(inner, comments, last))
        out.append(s)
    return out


def _describe(origin):
    filename, line, fname = origin
    text = linecache.getline(filename, line).strip()
    return f"{fname}, line {line}: {text}" if text else f"{fname}, line {line}"


def section(text, comments):
    """A placeholder statement that render() turns into the comment `# text`."""
    comments.append(text)
    return ast.Expr(value=ast.Call(func=ast.Name(id=_COMMENT, ctx=ast.Load()),
                                   args=[ast.Constant(len(comments) - 1)], keywords=[]))


def render(name, params, parts, fold=False, cpu=False, keys=True, allocate=False):
    """Source text of a function whose body is `parts`: a list of (section title, stmts).
    With `fold`, single-use temporaries are folded into their uses (codegen/fold.py); `cpu`:
    code for the CPU, whose loops finding a largest value stop at a NaN (codegen/extrema.py),
    with `keys` first as an integer max of order keys that vectorizes (the generated code's
    vector_math; without it, numba's loop alone: source adjit differentiates again, an hvp's
    jvp, reads that); `allocate`: arrays allocated through adjit's runtime (`vec.zeros_like(x)`
    for `np.zeros_like(x)`, ...: `cached_allocations`; not in source adjit differentiates
    again)."""
    comments = []
    body = []
    titles = set()
    for title, stmts in parts:
        if not stmts:
            continue
        if title:
            node = section(title, comments)
            titles.add(id(node))
            body.append(node)
        body += _with_comments(stmts, comments)
    args = ast.arguments(posonlyargs=[], args=[ast.arg(arg=p) for p in params], vararg=None,
                         kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
    fn = ast.FunctionDef(name=name, args=args, body=body, decorator_list=[], returns=None,
                         type_params=[], lineno=1)
    if fold:
        fold_temporaries(fn)
    if cpu:
        split_webs(fn)      # (numba's SSA pass walks the function once per name assigned twice)
    # a part whose statements all folded away (or were dropped by split_webs) loses its title
    fn.body = [s for k, s in enumerate(fn.body) if not (
        id(s) in titles and (k + 1 == len(fn.body) or id(fn.body[k + 1]) in titles))]
    fn.body = fn.body or [ast.Pass()]           # (a kernel whose adjoint does nothing)
    if cpu:
        extrema.rewrite(fn, keys)
    _raises_as_written(fn)
    _bodies_with_a_statement(fn)
    if allocate:
        cached_allocations(fn)
    text = ir.unparse(ast.fix_missing_locations(ast.Module(body=[fn], type_ignores=[])))
    pattern = re.compile(rf"^(\s*){_COMMENT}\((\d+)\)$", re.M)
    text = pattern.sub(lambda m: f"{m.group(1)}# {comments[int(m.group(2))]}", text)
    return "\n".join(wrap_line(line) for line in text.split("\n")) + "\n"


def _raises_as_written(fn):
    """The user's `raise ValueError("...")` and `assert c`, carried through the passes as
    the statements vec.raise_error(kind, message) and vec.check_assert(c), are raise
    statements again in generated code (`if not c: raise AssertionError(...)` for an
    assert): numba then treats them as it treats the user's. A prange loop holding one runs
    serially, so that the exception reaches the caller; raised by a called function inside
    a parallel loop, it is lost (the gradient returned NaN where numba raised)."""
    for node in ir.walk(fn):
        for field in ("body", "orelse"):
            stmts = getattr(node, field, None)
            if not isinstance(stmts, list):
                continue
            for k, s in enumerate(stmts):
                call = s.value if isinstance(s, ast.Expr) else None
                if not isinstance(call, ast.Call):
                    continue
                if ast.unparse(call.func) == "vec.raise_error":
                    kind, message = (a.value for a in call.args[:2])
                    # (a user's exception class: the name of its global, anf.raise_statement)
                    cls = ast.Name(id=kind if isinstance(kind, str) else
                                   vec.RAISABLE[kind].__name__, ctx=ast.Load())
                    exc = ast.Call(func=cls, args=_exception_args(call.args),
                                   keywords=[]) if message or len(call.args) > 2 else cls
                    stmts[k] = ast.copy_location(ast.Raise(exc=exc, cause=None), s)
                elif ast.unparse(call.func) == "vec.check_assert":
                    exc = ast.Call(func=ast.Name(id="AssertionError", ctx=ast.Load()),
                                   args=[ast.Constant(value=vec.ASSERT_FAILED)], keywords=[])
                    stmts[k] = ast.copy_location(ast.If(
                        test=ast.UnaryOp(op=ast.Not(), operand=call.args[0]),
                        body=[ast.Raise(exc=exc, cause=None)], orelse=[]), s)


def _exception_args(args):
    """The arguments of a raised exception, from vec.raise_error's: the message; an
    f-string (its text's pieces around the values); or the message and the values."""
    message = args[1].value
    if len(args) == 2:
        return [ast.Constant(value=message)]
    mode, values = args[2].value, args[3:]
    if mode == vec.RAISE_WITH_VALUES:
        return [ast.Constant(value=message)] + values
    pieces = []
    for k, text in enumerate(message.split(vec.RAISE_PARTS)):
        if text:
            pieces.append(ast.Constant(value=text))
        if k < len(values):
            pieces.append(ast.FormattedValue(value=values[k], conversion=-1,
                                             format_spec=None))
    return [ast.JoinedStr(values=pieces)]


def _is_comment(s):
    return isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and \
        isinstance(s.value.func, ast.Name) and s.value.func.id == _COMMENT


_ALLOCATORS = {"np.zeros_like": "zeros_like", "np.empty_like": "empty_like",
               "np.zeros": "zeros", "np.empty": "empty"}


def cached_allocations(tree):
    """Spell the allocations under `tree` as calls of adjit's runtime (runtime/index.py):
    `np.zeros_like(x)` as `vec.zeros_like(x)`, `np.empty(n)` as `vec.empty(n)`, `np.zeros(n,
    np.int64)` as `vec.zeros_int64(n)`, `np.empty(s, a.dtype)` as `vec.empty_as(s, a)`, ...
    (float64, a dtype vec.DECLARED names or an array's, given positionally; anything else
    stays). numba compiles numpy's allocations in every process
    that compiles a function calling them (a second of ADBench's GMM gradient's first call);
    vec's are compiled once per machine and argument type, in numba's disk cache."""
    parallel = {id(n) for loop in ir.walk(tree) if isinstance(loop, ast.For) and
                ir.is_prange_loop(loop) for n in ir.walk(loop)}
    for node in ir.walk(tree):
        if not isinstance(node, ast.Call) or node.keywords or not 1 <= len(node.args) <= 2 or \
                id(node) in parallel:       # (numba hoists np.empty out of a prange loop)
            continue
        kind = _ALLOCATORS.get(ir.unparse(node.func))
        if kind is None or kind.endswith("_like") and len(node.args) == 2:
            continue
        if len(node.args) == 2:
            dtype = ir.unparse(node.args[1])
            like = node.args[1]
            if kind in ("zeros", "empty") and isinstance(like, ast.Attribute) and \
                    like.attr == "dtype" and isinstance(like.value, ast.Name):
                # np.empty(shape, a.dtype): vec.empty_as(shape, a)
                node.args = [node.args[0], like.value]
                kind = f"{kind}_as"
            elif dtype == "np.float64":
                node.args = node.args[:1]
            elif dtype.startswith("np.") and dtype[3:] in vec.DECLARED:
                kind = f"{kind}_{dtype[3:]}"
                node.args = node.args[:1]
            else:
                continue
        node.func = ast.Attribute(value=ir.name("vec"), attr=kind, ctx=ast.Load())


def _bodies_with_a_statement(fn):
    """A loop or branch whose statements all folded away (or were never more than the
    comment quoting the user's line) gets `pass`: a comment alone is no body."""
    for node in ir.walk(fn):
        for field in ("body", "orelse"):
            inner = getattr(node, field, None)
            if not isinstance(inner, list) or node is fn:
                continue
            if (field == "body" and not inner) or (inner and all(_is_comment(x) for x in inner)):
                inner.append(ast.Pass())


WIDTH = 120
"""The longest line of generated source."""


def wrap_line(line, width=WIDTH):
    """A statement longer than `width`, broken inside its parentheses (Python joins the
    lines again): each piece ends at the last space that keeps it within the width."""
    if len(line) <= width or line.lstrip().startswith("#"):
        return line
    indent = " " * (len(line) - len(line.lstrip()) + 8)
    depth, quote, spaces = 0, None, []        # spaces inside brackets, outside strings
    for k, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == " " and depth > 0:
            spaces.append(k)
    pieces, start, prefix = [], 0, ""
    while len(prefix) + len(line) - start > width:
        fits = [k for k in spaces if start < k and len(prefix) + k - start <= width]
        if not fits or fits[-1] - start < 8:
            break
        pieces.append(prefix + line[start:fits[-1]])
        start, prefix = fits[-1] + 1, indent
    return "\n".join(pieces + [prefix + line[start:]])


def prange_only():
    """numba's parallel options for generated code: its prange loops (and their reductions)
    run in parallel, and nothing else is made parallel. The generated code says where it is
    parallel; numba's conversion of numpy calls and array expressions into parallel loops
    adds little to it and is not always numpy's function: np.linspace(a, b, 1) is [nan]
    under numba 0.68's parallel=True ([a] in numpy and in numba's serial code)."""
    return {"prange": True, "reduction": True, "fusion": True, "numpy": False,
            "setitem": False, "inplace_binop": False, "comprehension": False,
            "stencil": False}


def compile_source(source, name, namespace, signature, fastmath=False, jit=True, wrapper=None,
                   cache=False, callees=(), origin=None):
    """Exec generated source; returns (python function, numba dispatcher compiled for
    exactly these argument types). With jit=False the dispatcher is None: the plain Python
    function alone, which the program fuzzer runs to check many argnums choices cheaply.
    With a `wrapper` (a second function of the source calling `name`), the python function
    returned is the wrapper, and it calls the compiled `name`. With `cache` the source is
    written to a file named by its digest (cache_file) and numba keeps the machine code
    beside it (njit(cache=True)): a later process finds it instead of compiling. `callees`
    are other functions of the source that `name` calls (compiled for the types they get).
    numba failing to compile it is an InternalError at `origin` (the user's function:
    filename, line, name)."""
    if jit:
        key = _memo_key(source, name, namespace, signature, fastmath, wrapper, callees, cache)
        with _COMPILED_LOCK:
            compiled = _COMPILED.get(key) if key is not None else None
            if compiled is not None:
                _COMPILED.move_to_end(key)
                return compiled
        compiled = _compile_source(source, name, namespace, signature, fastmath, jit, wrapper,
                                   cache, callees, origin, key and key[-1])
        if key is not None:
            with _COMPILED_LOCK:
                _COMPILED[key] = compiled
                while len(_COMPILED) > _COMPILED_SIZE:
                    _COMPILED.popitem(last=False)
        return compiled
    return _compile_source(source, name, namespace, signature, fastmath, jit, wrapper, cache,
                           callees, origin)


_COMPILED = collections.OrderedDict()
_COMPILED_SIZE = 32
_COMPILED_LOCK = threading.Lock()
"""The last generated sources compiled in this process, by _memo_key: the same derivative
made again (grad and value_and_grad of one function share their source, a gradient made
again in a loop) is not compiled again."""


def _memo_key(source, name, namespace, signature, fastmath, wrapper, callees, cache):
    """What a compiled source depends on, as cache_file digests it (the values it reads from
    its namespace by content, numba's settings), or None where a value cannot be read."""
    try:
        values = _namespace_digest(namespace)
    except Exception:   # noqa: BLE001 - a value whose fingerprint fails: compile it again
        return None
    # with the disk cache on, where the file goes: a gradient made again after ADJIT_CACHE_DIR
    # changed is written there too (a later process looks for it there)
    where = cache_dir() if cache else None
    return (source, name, repr(tuple(signature)), repr(_flags(fastmath)), wrapper,
            tuple(callees), repr(cache), where, str(numba.core.config.OPT), values)


def _flags(fastmath):
    """fastmath as written into keys (a set's order changes from process to process)."""
    return sorted(fastmath) if isinstance(fastmath, (set, frozenset)) else fastmath


def _namespace_digest(namespace):
    """A digest of the values generated code reads from its namespace (_fingerprint)."""
    h = hashlib.sha256()
    for key in sorted(namespace):
        h.update(key.encode())
        h.update(_fingerprint(namespace[key]))
    return h.digest()


HELPERS = dict({name: linked(f) for name, f in (
    ("grow_tape", grow_tape), ("reserve_tape", reserve_tape), ("check_room", check_room),
    ("tape_room", tape_room), ("dot_range", dot_range), ("sum_range", sum_range),
    ("copy_dot", copy_dot), ("tape_start", tape_start), ("tape_from", tape_from),
    ("int_tape_from", int_tape_from))}, add_any_order=add_any_order)
"""Runtime functions generated code calls by their bare names (the tape's, the sums'):
called through their machine code (runtime/linked.py), but for add_any_order, which LLVM
must inline into the loop that sums with it."""


def _apart_from_numba_versions(source, keep):
    """`source` with each name `x_2` of a function that also has `x` renamed `x_2_` (not
    those in `keep`). numba's SSA names the versions of `x` `x.1`, `x.2`, ..., and its
    parallel lowering makes them identifiers by writing `x_1`, `x_2`: one that met a name of
    the generated code failed inside numba ("key already in dictionary: 'm_2'"; a prange
    sum `m` divided after its loop). Comments and layout are kept."""
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    names = {t.string for t in tokens if t.type == tokenize.NAME}
    renames = {}
    for n in names:
        m = re.match(r"^(\w+)_(\d+)$", n)
        if m and m.group(1) in names and n not in keep:
            new = n + "_"
            while new in names:
                new += "_"
            renames[n] = new
    if not renames:
        return source
    lines = source.splitlines(keepends=True)
    for k in range(len(tokens) - 1, -1, -1):
        t = tokens[k]
        if t.type != tokenize.NAME or t.string not in renames or \
                (k and tokens[k - 1].type == tokenize.OP and tokens[k - 1].string == "."):
            continue            # (an attribute: vec.name_2 is the module's)
        (row, col), (_, end) = t.start, t.end
        line = lines[row - 1]
        lines[row - 1] = line[:col] + renames[t.string] + line[end:]
    return "".join(lines)


_LONGEST_CACHED_NAME = 160
"""The longest generated function name (in bytes, UTF-8) kept in the disk cache: numba
names its index file after the module (cache_file: at most 68 bytes) and the function, and
file names end at 255 bytes. A longer one is compiled in every process."""


def _compile_source(source, name, namespace, signature, fastmath, jit, wrapper, cache, callees,
                    origin, values=None):
    helpers = HELPERS
    # parallel where a loop is a prange (not a comment quoting the user's prange loop)
    parallel = re.search(r"^\s*for \w+ in numba\.prange\(", source, re.M) is not None
    if parallel and jit:
        # (not the names the namespace gives: globals `g_W_2` beside `g_W`, helpers)
        source = _apart_from_numba_versions(source, {name, wrapper, *callees, *namespace,
                                                     *helpers})
    auto = cache is None
    if auto:
        cache = jit and caching_by_default()
    if cache and len(name.encode()) > _LONGEST_CACHED_NAME:
        cache = False           # (numba's index file would be named past 255 bytes)
    if cache:
        try:
            filename = cache_file(source, name, namespace, signature, fastmath, values)
        except OSError:
            if not auto:
                raise
            cache = False       # a cache directory that cannot be written: compile only
    if cache:
        # numba's cache rebuilds the function's globals by importing its module by name
        module = types.ModuleType(os.path.splitext(os.path.basename(filename))[0])
        module.__file__ = filename
        sys.modules[module.__name__] = module
        ns = module.__dict__
        ns.update(namespace)
        ns.update(helpers)
        exec(compile(source, filename, "exec"), ns)  # noqa: S102
    else:
        ns = _exec(source, name, dict(namespace, **helpers))
    pyfunc = ns[name]
    outer = ns[wrapper] if wrapper else pyfunc
    if not jit:
        return outer, None
    steps = {callee: ns[callee] for callee in callees}
    try:
        if parallel:
            try:
                return outer, _jit_into(ns, pyfunc, name, steps, signature, fastmath, cache,
                                        auto, parallel=True)
            except Exception:   # noqa: BLE001 - numba's parallel passes failed on it
                # numba's parfor passes stop on some loop bodies ("unexpected cycle in
                # lookup()" in its reduction analysis: pyts's nested prange of a helper with
                # masks); the same code compiled serially runs each prange as a range, as
                # numba runs the user's own prange without parallel=True
                pass
        return outer, _jit_into(ns, pyfunc, name, steps, signature, fastmath, cache, auto,
                                parallel=False)
    except numba.core.errors.NumbaError as exc:
        filename, line, fname = origin or ("<unknown>", 0, "<unknown>")
        raise InternalError(f"in function '{fname}' ({filename}, line {line}): internal "
                            f"adjit error: numba could not compile the generated {name} (an "
                            f"adjit bug: please report it with this message):\n{exc}\n"
                            f"generated source:\n{source}") from None


def _jit_into(ns, pyfunc, name, steps, signature, fastmath, cache, auto, parallel):
    """The dispatcher of `pyfunc` compiled for `signature` (the checkpoint steps `steps` too,
    by name into `ns`, where it is bound as `name`)."""
    jit = njit(tuple(signature), fastmath=fastmath, cache=cache,
               parallel=prange_only() if parallel else False)
    # the steps of checkpointed loops, inlined into their caller; not where it is
    # compiled parallel: numba's parallel pipeline miscompiled a step inlined into code
    # with a prange loop (a wrong gradient, where the same source compiled serially, or
    # calling the step, is right)
    for callee, step in steps.items():
        ns[callee] = numba.njit(error_model="numpy", fastmath=fastmath, cache=cache,
                                inline="never" if parallel else "always")(step)
    with warnings.catch_warnings():
        if auto:    # code numba will not cache (it calls a ctypes function, ...): compiled
            warnings.filterwarnings("ignore", "Cannot cache compiled function",
                                    numba.core.errors.NumbaWarning)
        # the matrix products of a derivative typed for arrays of any layout (a
        # Hessian's columns): numba's BLAS call copies one that is not contiguous when
        # it runs, and its advice is not the user's to act on
        warnings.filterwarnings("ignore", r"(np\.dot\(\)|'@') is faster on contiguous",
                                numba.core.errors.NumbaPerformanceWarning)
        dispatcher = jit(pyfunc)
    ns[name] = dispatcher
    return dispatcher


@register_pass(mutates_CFG=False, analysis_only=True)
class _NumpyErrorModel(FunctionPass):
    """Lower the function with numpy's error model (a float divided by zero is inf or NaN,
    as the derivative formulas adjit writes need at singular points) although it was typed
    under numba's default flags: numba keys the implementations of its numpy functions by
    the flags they are typed under, so generated code typed under the default flags shares
    them with the user's own @njit code instead of compiling each one a second time."""
    _name = "adjit_numpy_error_model"

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state):
        ctx = state.targetctx
        state.targetctx = ctx.subtarget(error_model=callconv.create_error_model("numpy", ctx))
        return False


_RESOLVED = collections.OrderedDict()
_RESOLVED_SIZE = 20000


class _RememberingTypeInferer(typeinfer.TypeInferer):
    """numba's type inference, remembering what a call of a builtin function (an operator,
    a math or numpy function: a types.Function) resolved to for its argument types. numba
    resolves every call again on every round of its propagation, trying the function's
    templates in turn (`a * b` of two floats: about 0.1 ms), and generated code is mostly
    such calls on the same few types. A resolution depends only on the typing context, the
    function type (its templates) and the argument types, which are the key; failures and
    imprecise results are not remembered."""

    def resolve_call(self, fnty, pos_args, kw_args):
        if type(fnty) is not types_.Function or kw_args:
            return super().resolve_call(fnty, pos_args, kw_args)
        key = (self.context, fnty, tuple(pos_args))
        try:
            sig = _RESOLVED.get(key)
        except TypeError:       # an argument type that cannot be hashed
            return super().resolve_call(fnty, pos_args, kw_args)
        if sig is None:
            sig = super().resolve_call(fnty, pos_args, kw_args)
            if sig is not None and sig.return_type.is_precise():
                _RESOLVED[key] = sig
                if len(_RESOLVED) > _RESOLVED_SIZE:
                    _RESOLVED.popitem(last=False)
        return sig


@register_pass(mutates_CFG=True, analysis_only=False)
class _TypeInference(NopythonTypeInference):
    """numba's nopython type inference with _RememberingTypeInferer (numba's pass builds its
    inferer by the module's name: it is that name for the pass's run, under numba's
    compiler lock)."""
    _name = "adjit_nopython_type_inference"

    def run_pass(self, state):
        plain = typeinfer.TypeInferer
        typeinfer.TypeInferer = _RememberingTypeInferer
        try:
            return super().run_pass(state)
        finally:
            typeinfer.TypeInferer = plain


class _Compiler(CompilerBase):
    """numba's nopython pipeline, typed by _TypeInference and lowered with numpy's error model
    (_NumpyErrorModel)."""

    def define_pipelines(self):
        pm = DefaultPassBuilder.define_nopython_pipeline(self.state)
        pm.passes = [(_TypeInference, what) if cls is NopythonTypeInference else (cls, what)
                     for cls, what in pm.passes]
        pm.add_pass_after(_NumpyErrorModel, _TypeInference)
        pm.finalize()
        return [pm]


def njit(*signature, **options):
    """numba.njit for code adjit generates: typed under numba's default flags, so that it
    shares the implementations of numba's numpy functions with the user's @njit code, and
    lowered with numpy's error model (_Compiler)."""
    return numba.njit(*signature, pipeline_class=_Compiler, **options)


def caching_by_default():
    """Whether a gradient made without cache= keeps its compiled code on disk: yes, unless
    numba compiles with LLVM's optimizations off (NUMBA_OPT=0, as the test suite does),
    where numba caches no function that calls another compiled one (every gradient calls
    adjit's runtime), or ADJIT_CACHE=0 turns it off."""
    if os.environ.get("ADJIT_CACHE", "1").strip().lower() in ("0", "false", "no", "off"):
        return False
    return int(numba.core.config.OPT) != 0


def cache_dir():
    """Where cache=True keeps generated sources (numba's machine code goes beside them):
    $ADJIT_CACHE_DIR, else ~/.cache/adjit."""
    root = os.environ.get("ADJIT_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "adjit")
    os.makedirs(root, exist_ok=True)
    return root


def cache_file(source, name, namespace, signature, fastmath, values=None):
    """The file holding this generated source, written once: its name is a digest of the
    source, the argument types, numba's version, the values the code reads from its
    namespace (global arrays by content, functions by their source) and the default tape
    limit (half this machine's memory, which tape_room compiles into it: a cache directory
    shared by machines of other sizes), so that any change gives a new file and numba's
    cache, keyed by the file, never serves stale code.
    `values`: the namespace's _namespace_digest where the caller has it already."""
    h = hashlib.sha256()
    for part in (source, repr(tuple(signature)), repr(_flags(fastmath)), numba.__version__,
                 sys.version, str(numba.core.config.OPT), _adjit_digest(),
                 str(DEFAULT_TAPE_LIMIT)):
        h.update(part.encode())
    h.update(values if values is not None else _namespace_digest(namespace))
    # (numba names its index file `<this file's stem>.<name>-<line>.py311.nbi`: a long
    # function name would take it past the file system's 255 bytes twice over)
    stem = name.encode()[:40].decode(errors="ignore")     # (40 bytes of it)
    path = os.path.join(cache_dir(), f"_adjit_{stem}_{h.hexdigest()[:20]}.py")
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as fh:
            fh.write(source)
        os.replace(tmp, path)       # atomic: concurrent processes write the same text
    return path


_DIGEST = []


def _adjit_digest():
    """A digest of adjit's own source files: the runtime helpers the generated code calls
    (reached through modules, which _fingerprint names only) are compiled into it, so a
    changed adjit never loads code cached by another."""
    if not _DIGEST:
        h = hashlib.sha256()
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        for folder, dirs, files in sorted(os.walk(root)):
            dirs.sort()
            for f in sorted(files):
                if f.endswith(".py"):
                    h.update(f.encode())
                    with open(os.path.join(folder, f), "rb") as fh:
                        h.update(fh.read())
        _DIGEST.append(h.hexdigest())
    return _DIGEST[0]


def _fingerprint(obj, seen=None, depth=0):
    """Bytes that change when what `obj` computes may change: an array's contents, a
    function's code with, recursively, its closure's values and the globals it reads (the
    functions it calls, their rules: an object's `__adjit_parts__()`, as custom_vjp
    functions and gradient objects give); other values by repr."""
    if isinstance(obj, np.ndarray):
        return obj.tobytes() + repr((obj.dtype, obj.shape)).encode()
    if isinstance(obj, types.ModuleType):
        return obj.__name__.encode()
    if isinstance(obj, (bool, int, float, complex, str, bytes, type(None))):
        return repr(obj).encode()
    seen = set() if seen is None else seen
    if id(obj) in seen or depth > 12:
        return b"<seen>"
    seen.add(id(obj))
    if isinstance(obj, (tuple, list)):
        return b"(" + b",".join(_fingerprint(x, seen, depth + 1) for x in obj) + b")"
    parts = getattr(type(obj), "__adjit_parts__", None)
    if parts is not None:
        return b"[" + b",".join(_fingerprint(x, seen, depth + 1) for x in parts(obj)) + b"]"
    fn = getattr(obj, "py_func", obj)
    code = getattr(fn, "__code__", None)
    if code is None:
        return repr(obj).encode()
    # (its module's name too: numba's cached code of a call names the module it imports
    # the callee from, and the same code under another module name, a script run as
    # __main__ and imported, must not load it)
    out = [_code_fingerprint(code), getattr(fn, "__qualname__", "").encode(),
           str(getattr(fn, "__module__", "")).encode()]
    out += [name.encode() + b"=" + _fingerprint(value, seen, depth + 1)
            for name, value in referenced(fn)]
    return b"|".join(out)


def _code_fingerprint(code):
    consts = [_code_fingerprint(c) if isinstance(c, types.CodeType) else repr(c).encode()
              for c in code.co_consts]
    return code.co_code + b"".join(consts) + repr(code.co_names).encode()


_MODULE_NAME = re.compile(r"_adjit_\w+_[0-9a-f]{20}")


class _GeneratedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """The modules of cached derivatives (`_adjit_<name>_<digest>`, _compile_source), found
    by name in any process. numba's cache of an @njit(cache=True) function that calls a
    derivative holds the derivative's Environment, which a later process rebuilds by
    importing the derivative's module by that name, before adjit has built the derivative
    there (it raised ModuleNotFoundError). An empty module of the name serves: compiled
    code keeps its constants in the cache and reads no globals from the module; adjit puts
    the real one in its place when it builds the derivative in that process."""

    def find_spec(self, fullname, path, target=None):
        if path is None and _MODULE_NAME.fullmatch(fullname):
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        module.__file__ = os.path.join(cache_dir(), module.__name__ + ".py")


if not any(isinstance(f, _GeneratedModules) for f in sys.meta_path):
    sys.meta_path.append(_GeneratedModules())


def exec_source(source, name, namespace):
    """The Python function `name` of generated source, executed in `namespace`."""
    return _exec(source, name, dict(namespace))[name]


def exec_sources(source, name, namespace):
    """The namespace after executing generated source defining several functions."""
    return _exec(source, name, dict(namespace))


def generated(filename):
    """Whether `filename` names source adjit generated (_exec)."""
    return filename.startswith("<adjit-")


def _exec(source, name, ns):
    """Execute generated source in `ns` (returned), under a file name registered with
    linecache so that tracebacks show the generated lines."""
    filename = f"<adjit-{next(_serial)}:{name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), ns)  # noqa: S102
    return ns
