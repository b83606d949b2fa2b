"""The pipeline: named passes, in the order PIPELINES gives for each kind of derivative.

    source -> normalized -> typed -> hoisted -> active -> adjoint | tangent | kernel -> compiled

Each pass takes the Program (the function being differentiated and everything learned about
it so far) and the Options, and fills in the Program's next fields. grad and value_and_grad,
vjp (a cotangent argument), jvp (forward mode), CUDA device functions (target="cuda") and
CUDA adjoint kernels (derivative="kernel") run the same passes; they differ only in options.

`STAGES` names the stages a person can look at; `adjit.show(f, stage, *example_args)`
returns one as runnable Python, and `ADJIT_DEBUG_PRINT_AFTER=normalized,adjoint` (or `all`)
prints stages while adjit compiles, as numba's NUMBA_DEBUG_PRINT_AFTER does for its passes.
"""
import ast
import copy
import functools
import os
import sys
import textwrap

import numba
import numpy as np

from . import ir, outline
from .analysis import effects
from .analysis.activity import active_variables, replicated_result
from .analysis.hoist import hoist_invariants, keep_operands
from .analysis.races import Ownership
from .analysis.types import (FLOAT, infer_kinds, is_array, is_float_kind, kind_of_constant,
                             kind_of_numba_type)
from .codegen import assemble, kernel_sweep, usual, vector_math
from .codegen.indices import unsigned_indices
from .codegen.emit import HELPERS, compile_source, exec_source, generated, render
from .codegen.kernel_sweep import KernelSweep
from .errors import (AdjitError, AdjitWarning, ValueRefusedError, error_at, function_origin,
                     internal_error, raised_by_user_code)
from .forward.tangent import TangentBuilder
from .frontend.source import read_function
from .normalize.anf import InlineContext, normalize_function
from .normalize.inline import Unread
from .normalize import joins
from .normalize.coalesce import coalesce_temps
from .normalize.names import Env, NameGen, lookup, unused_name
from .normalize import record_arrays, tuple_args
from .normalize.prune import pruned_source, with_settings
from .normalize.values import NONE, EnumValue, assigned_user_names, plain_enum_type
from .normalize.webs import split_webs
from .reverse import sweep as sweep_passes
from .reverse.adjoint import ReverseBuilder
from .reverse.checkpoint import records
from .reverse.dce import eliminate_dead, upward_exposed
from .reverse.parallel import check_user_races
from .reverse.replay import replay_unbounded_loops
from .reverse.sweep import Sweep
from .reverse.tape import LENGTH_SLOTS, shared_room, static_pushes, unsigned_slots
from .rules.registry import REGISTRY
from .rules.table import INACTIVE, has_device_twin
from .runtime import vec
from .runtime.tape import DEFAULT_TAPE_LIMIT, INITIAL_CAPACITY, KEPT_TAPE_BYTES

STAGES = ("source", "normalized", "typed", "hoisted", "active", "adjoint", "tangent")
"""The stages `adjit.show` prints, in pipeline order. Every one is runnable Python: the first
five compute what the function computes, "adjoint" is the reverse-mode derivative
(grad(f).source), "tangent" the forward-mode one (jvp(f).source)."""

SWEEP_STAGES = sweep_passes.STAGES
"""The reverse-mode derivative after each rewrite of its backward sweep ("sweep.<name>",
reverse/sweep.py), in order: `adjit.show` prints them, runnable, as it prints STAGES; the
last is "adjoint" before its tape indices are made unsigned."""

STATS_SIZE = assemble.STATS_SIZE


class Options:
    """What kind of derivative the pipeline makes.

    `derivative`: "adjoint" (grad, value_and_grad, vjp), "tangent" (jvp) or "kernel" (a CUDA
    adjoint kernel); `name` is the user-facing name (grad, value_and_grad, vjp, jvp);
    `with_value` returns (value, derivative); `single` returns the one gradient bare (the
    user passed an int argnums); `extra` is the trailing argument vjp and jvp take
    ("cotangent", "tangent"); `target` "cpu" or "cuda" (a device function); `jit=False`
    compiles nothing (the generated source runs in the interpreter); `vector_math`: loops
    that vectorize call adjit/runtime/vmath.py's exp, log, tanh, ... instead of the C
    library's (codegen/vector_math.py; CPU code only); `split_tangents`: a
    jvp in several arguments takes one trailing tangent parameter per argument instead of a
    tuple (hvp reads that jvp as code, and adjit code does not index tuples); `outline`:
    large helpers called at several places may be called as operations with gradients of
    their own (adjit/outline.py; first derivatives on the CPU only)."""

    def __init__(self, argnums, derivative="adjoint", name="grad", with_value=False,
                 single=True, extra=None, target="cpu", checkpoint=None, tape_limit=None,
                 fastmath=False, jit=True, cache=False, split_tangents=False,
                 vector_math=True, element_products=False, outline=False):
        self.outline = outline and derivative == "adjoint" and target == "cpu"
        self.split_tangents = split_tangents and not single
        self.element_products = element_products
        self.argnums = tuple(argnums)
        self.derivative = derivative
        self.name = name
        self.with_value = with_value
        self.single = single
        self.extra = extra
        self.target = target
        self.checkpoint = checkpoint
        self.tape_limit = tape_limit
        self.fastmath = fastmath
        self.jit = jit
        self.cache = cache
        self.vector_math = vector_math

    @classmethod
    def of_mode(cls, mode, argnums, **options):
        """Options from an API mode (name, with_value, single, extra)."""
        extra = getattr(mode, "extra", None)
        return cls(argnums, "tangent" if mode.name == "jvp" else "adjoint", mode.name,
                   mode.with_value, mode.single, extra, **options)


class Program:
    """The function being differentiated, and what the passes have learned about it.

    Filled in pass by pass: `src` and `arg_kinds` (source), `stmts`, `result`, `env`,
    `namegen`, `vec_temps` (normalized), `kinds`, `wrt` (typed), `active` (active),
    `source` and `python` (adjoint / tangent), `compiled` (a Transformed)."""

    def __init__(self, fn, arg_types, options):
        self.fn = fn
        self.arg_types = tuple(arg_types)
        self.options = options
        self.src = self.params = self.arg_kinds = None
        self.stmts = self.result = self.env = self.namegen = self.vec_temps = None
        self.kinds = self.wrt = self.active = None
        self.source = self.python = self.compiled = None
        self.shadows = self.shadowed = self.ownership = self.builder = None
        self.after = []            # (CUDA) kernels launched after the adjoint kernel
        self.entry = self.wrapper = None
        self.records = {}          # record-array parameter -> RecordValue of its fields
        self.enums = {}            # parameter given a plain Enum's member -> its class
        self.int_enums = set()     # parameters given an IntEnum's member (passed its int)
        self.parts = {}            # a tuple argument's element's parameter -> (argument,
        #                            what it is, how it is written): for messages
        self.adapter = None        # how the API calls a derivative that split them
        self.steps = []
        self.done = []
        self.capture = ()         # sweep stages ("sweep.<name>") adjit.show asks for
        self.captured = {}        # their sources

    def render(self, stage):
        """The program at `stage` (one it has passed) as runnable Python."""
        if stage == "source":
            return ir.unparse(self.src.tree) + "\n"
        if stage in ("adjoint", "tangent"):
            return self.source
        if stage in self.captured:
            return self.captured[stage]
        body = self.stmts + ([ast.Return(value=self.result)] if self.result is not None else [])
        notes = {"typed": self._kind_notes, "hoisted": self._kind_notes,
                 "active": self._active_notes}.get(stage)
        title = notes() if notes else None
        return render(f"{self.src.fn.__name__}_{stage}", self.src.params, [(title, body)])

    def _kind_notes(self):
        names = set(self.params) | {s.target.id for s in ir.walk_stmts(self.stmts)
                                    if isinstance(s, ast.For)} | ir.assigned(self.stmts)
        kinds = ", ".join(f"{v}: {self.kinds[v]}" for v in sorted(names) if v in self.kinds)
        return _wrapped(f"kinds: {kinds}")

    def _active_notes(self):
        return _wrapped(f"active (carry derivatives): {', '.join(sorted(self.active)) or 'none'}")


def _wrapped(text):
    """A long comment as several lines of a top-level section title."""
    return "\n    # ".join(textwrap.wrap(text, 100, subsequent_indent="  "))


# the passes ----------------------------------------------------------------------------------

GENERATED_NAMES = frozenset(Env().ns) | frozenset(HELPERS) | {vector_math.NAME, "cuda"}
"""The names generated code reads from its namespace (modules, runtime functions): a local
variable of the user's with one of these names is renamed (`_without_generated_names`)."""


def parse(p, o):
    """source: the function's syntax tree, its names resolved (frontend/source.py)."""
    p.src = _without_generated_names(_star_as_tuple(read_function(p.fn, vararg=True)))
    p.params = list(p.src.params)
    extra = o.extra if o.derivative != "kernel" else None
    trailing = len(o.argnums) if extra and o.split_tangents else 1
    user_types = p.arg_types[:-trailing] if extra else p.arg_types
    if len(user_types) != len(p.params) or (extra and not p.arg_types):
        what = "launched" if o.derivative == "kernel" else "called"
        more = f" plus the {extra}" if extra else ""
        raise p.src.loc.error(p.src.tree, f"{what} with {len(p.arg_types)} argument(s)",
                              f"'{p.src.loc.name}' takes {len(p.params)}: "
                              f"{', '.join(p.params)}{more}.")
    p.wrt = [p.params[k] for k in o.argnums]
    p.enums = {q: t.instance_class for q, t in zip(p.params, user_types)
               if plain_enum_type(t)}
    # an IntEnum's member: its int (as the API passes it), whose `.value` is itself
    p.int_enums = {q for q, t in zip(p.params, user_types)
                   if isinstance(t, numba.types.IntEnumMember)}
    if p.enums or p.int_enums:
        # a plain Enum's member: the derivative is passed its value (the API's
        # _enum_values), the body reads it as a member (normalize/values.py EnumValue)
        user_types = tuple(t.dtype if q in p.enums or q in p.int_enums else t
                           for q, t in zip(p.params, user_types))
        p.arg_types = user_types + tuple(p.arg_types[len(p.params):])
    tuples = tuple_args.split_params(p.src, p.params, user_types, p.wrt, p.src.loc.error)
    if tuples is not None:
        # each element of a tuple argument a parameter of its own, the tuple built again
        # from them where the body starts (the API's Adapter splits the arguments and puts
        # a tuple's gradients together)
        user_params, user_wrt = p.params, p.wrt
        p.src, p.params, types, p.wrt, layout = tuples
        p.parts = dict(layout.parts)
        trailing_types = p.arg_types[len(user_types):]
        tuple_adapter = tuple_args.Adapter(layout, user_params, user_wrt, o.derivative,
                                           o.with_value, o.single, o.split_tangents)
        if tuple_adapter.in_wrt:
            trailing_types = _split_tangent_types(p, o, types, trailing_types)
            o.single = False        # the elements' gradients, put together by the Adapter
        p.arg_types = tuple(types) + tuple(trailing_types)
        user_types = types
    split = record_arrays.split_params(p.src, p.params, user_types, p.wrt, p.src.loc.error)
    if split is not None:
        # each field of a record-array argument a parameter of its own (the API's Adapter
        # splits the arguments and puts the fields' gradients back together)
        user_params, user_wrt = p.params, p.wrt
        p.src, p.params, types, p.wrt, p.records, layout = split
        trailing_types = p.arg_types[len(user_types):]
        if any(q in p.records for q in user_wrt):
            # (a record with one float field in an int argnums: its one tangent, bare)
            trailing_types = _split_tangent_types(p, o, types, trailing_types, o.single)
        p.arg_types = tuple(types) + tuple(trailing_types)
        user_types = types
        p.adapter = record_arrays.Adapter(layout, user_params, user_wrt, o.derivative,
                                          o.with_value, o.single, o.split_tangents)
        if o.single and len(p.wrt) > 1:
            o.single = False        # the fields' gradients, put together by the Adapter
    if tuples is not None:
        tuple_adapter.inner = p.adapter
        p.adapter = tuple_adapter
    p.arg_kinds = {q: kind_of_numba_type(t) for q, t in zip(p.params, user_types)}


def _star_as_tuple(src):
    """`def f(x, *args)` read as `def f(x, args)`: the API passes the arguments after the
    named ones as one tuple (an empty one for none), which the tuple arguments' splitting
    then takes apart."""
    if src.vararg is None:
        return src
    tree = copy.deepcopy(src.tree)
    tree.args.args.append(tree.args.vararg)
    tree.args.vararg = None
    return src.with_tree(tree, {})


def _apart_checks(p):
    """`vec.check_apart(w, a)` for each array argument `w` the function writes and each
    other array argument `a`: the derivative treats arguments as separate arrays, so two
    that share memory (f(x, x), a view of one passed as the other) with one written would
    give the derivative of another function."""
    arrays = [q for q in p.params if is_array(p.arg_kinds.get(q))]
    written = ir.stored_names(p.stmts)
    # (the fields of one record array interleave in its memory but share no element)
    record = {getattr(atom, "id", None): r for r, v in (p.records or {}).items()
              for _, atom in v.fields}
    return [ast.Expr(value=ast.parse(f"vec.check_apart({w}, {a})", mode="eval").body)
            for w in arrays if w in written for a in arrays
            if a != w and (record.get(a) is None or record.get(a) != record.get(w))]


def _split_tangent_types(p, o, types, trailing_types, bare_one=False):
    """jvp's tangent types once the arguments in argnums were split into parameters (the
    Adapter splits the tangents as it splits the arguments): one per differentiated
    parameter, or a tuple of them (`bare_one`: one parameter's alone, where the derivative
    stays one of a single argument); other derivatives' trailing types unchanged."""
    if o.derivative != "tangent" or not trailing_types:
        return trailing_types
    split = [types[p.params.index(q)] for q in p.wrt]
    if o.split_tangents or (bare_one and len(split) == 1):
        return tuple(split)
    return (numba.types.BaseTuple.from_types(split),)


def _without_generated_names(src):
    """`src` with its parameters and local variables that generated code's names would hide
    (a parameter `vec`, a local `np`) renamed `vec_`, `np_`: the user's function means its
    own variable there, generated code the module."""
    clash = sorted(src.locals & GENERATED_NAMES)
    if not clash:
        return src
    tree = copy.deepcopy(src.tree)
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | \
        {a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)} | GENERATED_NAMES
    renamed = {}
    for name in clash:
        renamed[name] = unused_name(name + "_", used)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in renamed:
            node.id = renamed[node.id]
        elif isinstance(node, ast.arg) and node.arg in renamed:
            node.arg = renamed[node.arg]
    return src.with_tree(tree, {})


def _refuse_unknown_settings(p):
    """A string argument whose value adjit is not given (numba types it as a str where
    compiled code calls the derivative: a hessian's loop, @njit code), compared with a
    constant: the branch cannot be chosen."""
    unknown = {q for q, t in zip(p.params or (), p.arg_types or ())
               if isinstance(t, numba.types.UnicodeType)}
    for node in ir.walk(p.src.tree) if unknown else ():
        if isinstance(node, ast.Compare) and any(
                isinstance(c, ast.Name) and c.id in unknown
                for c in [node.left] + node.comparators):
            raise p.src.loc.error(node, "a string setting whose value is not known here "
                                  "(the derivative is called from compiled code: a "
                                  "hessian, a jacobian, an @njit function)",
                                  "adjit decides `mode == \"...\"` for the value the "
                                  "function is called with: call this derivative from "
                                  "Python, write the value in the call as a constant "
                                  "(`g(x, \"lin\")` in @njit code), or write one "
                                  "function per value.")


_NONE_TYPES = (numba.types.NoneType, numba.types.Omitted)
"""numba's types of an argument passed None or left out with its default None."""


def _pruned_for_none(src, params, arg_types):
    """The function with the branches of `if w is None:` it cannot run removed, for the
    arguments it was called with (None, or left out with a default None, or a value), as
    numba compiles it."""
    none = {q: isinstance(t, _NONE_TYPES) for q, t in zip(params, arg_types)
            if not isinstance(t, numba.types.Optional)}
    return pruned_source(src, none, lambda q: src.loc.error(
        src.tree, f"the argument `{q}` passed as None and assigned where it may not be None",
        f"Assign it only under `if {q} is None:` (a default), or pass a value."))


def normalize(p, o):
    """normalized: A-normal form, helpers inlined, exits lowered to flags, vectorized numpy
    lowered to loops (normalize/), webs of reused names split, temporaries named."""
    unread, src, outlined = {}, p.src, frozenset()
    while True:     # again from the start for each @njit helper adjit finds it cannot read
        try:
            ctx = _normalize(p, o, unread, outlined)
        except Unread as exc:
            p.src = src
            key = (exc.fn, exc.site)
            if key in unread:
                raise AssertionError(f"{exc.fn} read again after it was unread") from None
            unread[key] = exc.error
            continue
        if outlined or not o.outline:
            return
        # and again with the large helpers called at several places outlined
        outlined = outline.chosen(sum(1 for _ in ir.walk_stmts(p.stmts)), ctx.copies,
                                  ctx.not_outlined)
        if not outlined:
            return
        p.src = src


def _normalize(p, o, unread, outlined):
    p.namegen = NameGen(p.src.locals | set(p.src.params))
    p.env = Env()
    kinds = p.arg_kinds or {}
    arrays = {q: (k.ndim, k.dtype) for q, k in kinds.items() if is_array(k)}
    ints = {q for q, k in kinds.items() if k == "int"}
    layouts = {q: k.layout for q, k in kinds.items() if is_array(k)}
    ctx = InlineContext(p.namegen, p.env, arrays, ints, layouts)
    ctx.typed_args = p.arg_kinds is not None
    ctx.unread = unread
    ctx.outline = outlined
    ctx.outlined = outline.outlined
    ctx.outline_options = (frozenset(o.fastmath) if isinstance(o.fastmath, (set, frozenset))
                           else o.fastmath, o.cache, o.tape_limit, o.vector_math)
    ctx.kernel = o.derivative == "kernel"
    ctx.cuda = o.target == "cuda"
    ctx.blas_products = not (o.element_products or ctx.cuda)
    ctx.dtypes = {q: np.dtype(numba.np.numpy_support.as_dtype(t.dtype))
                  for q, t in zip(p.params or (), p.arg_types or ())
                  if isinstance(t, numba.types.Array)}
    ctx.int_enums = set(p.int_enums)    # (one bound again: anf.int_enum_argument)
    if ctx.kernel:
        _refuse_early_return_before_barrier(p.src)
    elif p.arg_types:
        p.src = _pruned_for_none(p.src, p.params, p.arg_types)
    p.src = with_settings(p.src, {q: t.literal_value
                                  for q, t in zip(p.params or (), p.arg_types or ())
                                  if isinstance(t, numba.types.StringLiteral) and
                                  q not in (p.wrt or ())})
    _refuse_unknown_settings(p)
    subst = dict(p.records)
    if not generated(p.src.loc.filename):
        # (code adjit generated, which second derivatives differentiate again, reads the
        # value it is passed as a number: `option_type == 1`)
        assigned = assigned_user_names(p.src.tree.body)
        for q, cls in p.enums.items():
            if q in assigned:
                raise p.src.loc.error(p.src.tree, f"the argument '{q}', a member of the enum "
                                      f"{cls.__name__}, assigned again in the function",
                                      f"Read its number into a new name ({q}_value = "
                                      f"{q}.value).")
            subst[q] = EnumValue(ir.name(q), cls, q)
    if p.arg_types and not ctx.kernel:
        # an argument left out (or passed None) that the body never assigns is None where it
        # is passed on too: a helper's `if w is None:` decides on it (tslearn's radius)
        reassigned = assigned_user_names(p.src.tree.body)
        subst.update({q: NONE for q, t in zip(p.params, p.arg_types)
                      if isinstance(t, _NONE_TYPES) and q not in reassigned and
                      q not in subst and q not in (p.wrt or ())})
    p.stmts, result = normalize_function(p.src, ctx, subst=subst)
    joins.check_frozen(p.stmts, ctx, p.src.loc, p.src.params)
    p.vec_temps = ctx.vec_temps
    if o.derivative == "kernel":
        if result is not None:
            raise p.src.loc.error(p.src.tree, "a CUDA kernel that returns a value",
                                  "Kernels write their results into arrays; return nothing.")
        split_webs(p.stmts, p.src.params, ir.const(0.0))
        coalesce_temps(p.stmts, p.vec_temps, None)
        p.result = None
        effects.mark(p.stmts, p.env.ns)
        return ctx
    if result is None and ir.always_raises(p.stmts):
        result = ir.const(0.0)      # (it raises before it returns: a helper's raise)
    if result is None:
        raise p.src.loc.error(p.src.tree, "the function returns nothing",
                              "Return the float to differentiate.")
    result = split_webs(p.stmts, p.src.params, result)
    p.result = coalesce_temps(p.stmts, p.vec_temps, result)
    effects.mark(p.stmts, p.env.ns)
    return ctx


def typed(p, o):
    """typed: the kind (float, int, bool, array type) of every variable (analysis/types.py);
    the differentiated arguments and the result are checked."""
    src = p.src
    for q in p.wrt:
        kind = p.arg_kinds[q]
        if o.derivative == "kernel":
            if not is_array(kind) or not kind.is_float:
                raise src.loc.error(src.tree, f"argument '{q}' in argnums is not a float array",
                                    "Differentiate float arrays; pass a differentiable scalar "
                                    "as a one-element array (p[0] in the kernel).")
        elif not is_float_kind(kind):
            raise src.loc.error(src.tree, f"argument '{q}' in argnums is "
                                f"{p.arg_types[p.params.index(q)]}, which carries no derivative",
                                "Pass a float (2.0, not 2) or a float64 array, or leave the "
                                "argument out of argnums.")
    if o.derivative == "tangent" and o.extra:
        _check_tangent_types(p, o)
    p.kinds = infer_kinds(p.stmts, p.arg_kinds, p.env.ns)


def _check_tangent_types(p, o):
    """jvp's tangent (hvp's vector): per differentiated argument an array of its dimensions
    or a number for a number (numba would broadcast another array, or fail to compile)."""
    given = list(p.arg_types[len(p.params):])
    if not o.single and not o.split_tangents:
        t = given[0]
        if not isinstance(t, numba.types.BaseTuple) or len(t) != len(p.wrt):
            raise p.src.loc.error(p.src.tree, f"the {o.extra} is {_described(t)} where "
                                  f"{len(p.wrt)} arguments are in argnums",
                                  f"Pass a tuple of {len(p.wrt)} directions, one per argument "
                                  "in argnums, each shaped like its argument.")
        given = list(t.types)
    for q, t in zip(p.wrt, given):
        kind = p.arg_kinds[q]
        fits = isinstance(t, numba.types.Array) and t.ndim == kind.ndim if is_array(kind) \
            else isinstance(t, numba.types.Number)
        if not fits:
            want = _described(p.arg_types[p.params.index(q)])
            raise p.src.loc.error(p.src.tree, f"the {o.extra} for '{q}' is {_described(t)} "
                                  f"where '{q}' is {want}", "Pass " + (
                                      "an array of its shape" if is_array(kind) else
                                      "a number") + f" as the direction of '{q}'" + (
                                      ", last: hvp(f)(*args, vector) (scipy.optimize calls "
                                      "hessp(x, p, *args): pass hessp=lambda x, p, *args: "
                                      "h(x, *args, p) with h = adjit.hvp(f))."
                                      if o.extra == "vector" else "."))


def _described(t):
    """A numba type in words, for messages about the values passed in."""
    if isinstance(t, numba.types.Array):
        return f"a {t.ndim}-D array"
    if isinstance(t, numba.types.Number):
        return "a number"
    if isinstance(t, numba.types.BaseTuple):
        return f"a tuple of {len(t)}"
    return f"a {t}"


def hoist(p, o):
    """hoisted: operands a later write would change are copied for the adjoint; size
    arithmetic and allocations of vectorized code move out of loops (analysis/hoist.py).
    Then what the target cannot run is refused, and the result's kind is checked."""
    keep_operands(p.stmts, p.kinds, p.env.ns, p.namegen)
    hoist_invariants(p.stmts, p.kinds, p.env.ns, p.vec_temps)
    if o.derivative == "kernel":
        _refuse_local_arrays(p.src, p.stmts, p.kinds, p.env.ns)
        return
    if o.target == "cuda":
        _check_device_function(p.src, p.stmts, p.kinds, p.params, p.env.ns)
    _check_result(p, o)


def activity(p, o):
    """active: the variables that carry derivatives from the differentiated arguments to the
    result (or, for kernels, to the arrays the kernel writes) (analysis/activity.py)."""
    if o.derivative == "tangent":
        p.active = set()    # forward mode finds its own (the varied variables)
        return
    roots = ()
    if o.derivative == "kernel":
        p.ownership = Ownership(p.stmts, p.params, p.kinds, p.src.loc.name,
                                assemble.shared_arrays(p.stmts))
        p.ownership.check()
        stored = ir.stored_names(p.stmts)
        roots = [q for q in p.params if q in stored]
    fields = {atom.id: (q, f"the field '{field}'", f"{q}[i]['{field}']")
              for q, record in p.records.items() for field, atom in record.fields}
    fields.update(p.parts)
    p.active = active_variables(p.stmts, p.result, p.wrt, p.kinds, p.env.ns, roots=roots,
                                fields=fields,
                                guard=None if o.target == "cuda" else functools.partial(
                                    _refused_draw, p))


def _refused_draw(p, draw, error):
    """A draw with no pathwise derivative in a parameter that carries one, in a branch of
    an `if` (activity.refuse_draw_parameters): a raise of ValueRefusedError with the error's
    message is put before it, so that the gradient refuses the draw where the branch runs
    and is exact where it does not (a Monte Carlo function whose argument chooses a scheme:
    FinancePy's CIR paths draw a noncentral chi-square in one)."""
    kind = p.env.spell(ValueRefusedError, "ValueRefusedError")
    call = ast.Call(func=ast.parse(p.env.spell(vec.raise_error, "raise_error"),
                                   mode="eval").body,
                    args=[ast.Constant(value=kind), ast.Constant(value=str(error))],
                    keywords=[])
    guard = ir.annotate(ast.Expr(value=call), origin=ir.note(draw, "origin", None),
                        raises=True)
    for block in ir.blocks(p.stmts):
        for k, s in enumerate(block):
            if s is draw:
                block.insert(k, guard)
                return


def adjoint(p, o):
    """adjoint: the reverse-mode derivative's source (reverse/, its backward sweep rewritten
    by the passes of reverse/sweep.py, codegen/)."""
    check_user_races(p.stmts)
    _adjoint(p, o)


def tangent(p, o):
    """tangent: the forward-mode derivative's source (forward/, codegen/)."""
    check_user_races(p.stmts)
    _tangent(p, o)


def kernel(p, o):
    """kernel: a CUDA adjoint kernel's source (reverse/, its backward sweep rewritten by the
    named passes of codegen/kernel_sweep.py: copies, gather, atomics, block_sums,
    loop_atomics, late_zeroing)."""
    check_user_races(p.stmts)
    _adjoint_kernel(p)


def compile_(p, o):
    """compiled: numba compiles the generated source (codegen/emit.py)."""
    if p.compiled is not None:      # derivatives that run the source as it is
        return
    # a string setting, keyed by its value here, is a str to numba
    arg_types = tuple(numba.types.unliteral(t) for t in p.arg_types)
    if o.derivative == "tangent":
        pyfunc, dispatcher = compile_source(p.source, p.entry, p.env.ns, arg_types,
                                            o.fastmath, o.jit, cache=o.cache,
                                            origin=_origin(p, None))
        p.compiled = Transformed(p.source, pyfunc, dispatcher)
        p.compiled.adapter = p.adapter
        return
    stats_type = numba.types.int64[::1]
    pyfunc, dispatcher = compile_source(p.source, p.entry, p.env.ns,
                                        arg_types + (stats_type, numba.types.int64,
                                                     numba.types.float64[::1]),
                                        o.fastmath, o.jit,
                                        wrapper=p.wrapper, cache=o.cache, callees=p.steps,
                                        origin=_origin(p, None))
    limit = DEFAULT_TAPE_LIMIT if o.tape_limit is None else o.tape_limit
    p.compiled = Transformed(p.source, pyfunc, dispatcher, np.zeros(STATS_SIZE, np.int64),
                             _limit_hint(p, o.checkpoint, limit))
    # a call that draws random numbers, prints or sends a message runs once
    p.compiled.repeatable = effects.first(p.stmts) is None
    p.compiled.limit = limit
    p.compiled.adapter = p.adapter


PASSES = {"source": parse, "normalized": normalize, "typed": typed, "hoisted": hoist,
          "active": activity, "adjoint": adjoint, "tangent": tangent, "kernel": kernel,
          "compiled": compile_}
"""Every pass, by the name of the stage it makes."""

PIPELINES = {
    "adjoint": ("source", "normalized", "typed", "hoisted", "active", "adjoint", "compiled"),
    "tangent": ("source", "normalized", "typed", "hoisted", "active", "tangent", "compiled"),
    "kernel": ("source", "normalized", "typed", "hoisted", "active", "kernel", "compiled"),
}
"""The passes each kind of derivative (Options.derivative) runs, in order: grad,
value_and_grad, vjp and device functions are "adjoint", jvp "tangent", CUDA adjoint
kernels "kernel"; they share every pass but the one that writes the derivative."""


def run(fn, arg_types, options, until="compiled", capture=()):
    """Run the passes on `fn` for arguments of these numba types, up to and including the
    stage `until`; returns the Program. The sources after the sweep passes named in
    `capture` ("sweep.<name>") are kept in program.captured."""
    program = Program(fn, arg_types, options)
    program.capture = tuple(capture)
    wanted = _debug_stages()
    for stage in PIPELINES[options.derivative]:
        try:
            PASSES[stage](program, options)
        except (AdjitError, AdjitWarning):     # (a warning the user's filter made an error)
            raise
        except Exception as exc:    # a bug in adjit: an InternalError, never a raw exception
            if raised_by_user_code(exc):
                raise       # (a timeout the user's signal handler raised as numba compiled)
            raise internal_error(_origin(program, exc), f"in the {stage} pass",
                                 exc) from exc
        program.done.append(stage)
        shown = _printable(stage, options)
        if wanted and shown and (shown in wanted or "all" in wanted):
            print(f"# adjit: {program.src.loc.name} after {shown}\n{program.render(shown)}",
                  file=sys.stdout, flush=True)
        if stage == until:
            break
    return program


def _origin(program, exc):
    """Where an unexpected exception arose: the user's statement the normalizer was at
    (anf.py notes it on the exception), else the function's `def` line."""
    origin = getattr(exc, "adjit_origin", None)
    if origin is not None:
        return origin
    if program.src is not None:
        loc = program.src.loc
        return loc.filename, loc.firstlineno, loc.name
    return function_origin(program.fn)


def _printable(stage, options):
    if stage == "kernel":
        return "adjoint"        # (a kernel's adjoint prints as the adjoint stage)
    return stage if stage in STAGES else None


def _debug_stages():
    text = os.environ.get("ADJIT_DEBUG_PRINT_AFTER", "").strip()
    return {s.strip() for s in text.split(",") if s.strip()}


class Transformed:
    """One specialization: generated source, its Python function and numba dispatcher.

    `pyfunc` takes the user's arguments (numba compiles it inline into @njit callers). For
    reverse modes `dispatcher` is the compiled function that also takes the tape-statistics
    array (`stats`, written by every call from Python: see TapeReport), and `limit_hint`
    says what to do when the tape would exceed tape_limit."""

    adapt = False   # checkpoint=None: a call with a large tape makes the gradient checkpoint
    tried = False   # its first call from Python was made (GradientFunction._first_call)
    repeatable = False  # no call with an effect: a call stopped midway may be made again
    limit = None    # its tape_limit in bytes
    types = None    # the numba argument types it was built for
    adapter = None  # record-array arguments split into fields (normalize/record_arrays.py)

    def __init__(self, source, pyfunc, dispatcher, stats=None, limit_hint=""):
        self.source = source
        self.pyfunc = pyfunc
        self.dispatcher = dispatcher
        self.stats = stats
        self.limit_hint = limit_hint
        self._kept = _NOTHING_KEPT  # the buffer the next call's tapes start in (_keep)
        # (the statistics read as Python ints: numpy's scalars cost a small call 0.2 us)
        self._counts = None if stats is None else memoryview(stats)

    def call(self, *args, cap=0):
        """The compiled derivative of the user's arguments; a positive `cap` bounds the
        tape's bytes below tape_limit for this call (a TapeLimitError beyond it)."""
        run = functools.partial(self._call, cap=cap) if cap else self._call
        if self.adapter is not None:
            return self.adapter.call(run, args)
        return run(*args)

    def _call(self, *args, cap=0):
        if self.stats is None:
            return self.dispatcher(*args)
        kept, stats = self._kept, self.stats
        self._kept = _NOTHING_KEPT   # (taken off: a call made meanwhile starts its own)
        out = self.dispatcher(*args, stats, cap, kept)
        counts = self._counts
        if counts[_FLOATS] + counts[_INTS] >= _KEEP_FROM:
            self._kept = _keep(kept, counts, out)
        return out


_NOTHING_KEPT = np.empty(0)

_FLOATS, _INTS = LENGTH_SLOTS["f"], LENGTH_SLOTS["i"]

_KEEP_FROM = 16384
"""The values (128 kB) from which a gradient keeps its tapes' buffer: smaller blocks the C
library reuses by itself, and a call of a small gradient should not pay the bookkeeping."""


def _keep(kept, counts, out):
    """The buffer a gradient's next call from Python starts its tapes in (runtime/tape.py
    tape_from): `kept` where it holds what this call used (counts: the tape statistics,
    with the values each stack held at most), else a new one of that size; none for tapes
    beyond KEPT_TAPE_BYTES. Never one that an array of the result `out` may share memory
    with (nothing returns the tape itself: its values are copied out)."""
    need = max(INITIAL_CAPACITY, counts[_FLOATS]) + max(INITIAL_CAPACITY, counts[_INTS])
    if need * 8 > KEPT_TAPE_BYTES:
        return _NOTHING_KEPT
    if kept.shape[0] < need or any(np.may_share_memory(a, kept) for a in _arrays(out)):
        return np.empty(need)
    return kept


def _arrays(out):
    if isinstance(out, np.ndarray):
        yield out
    elif isinstance(out, tuple):
        for o in out:
            yield from _arrays(o)


# checks ----------------------------------------------------------------------------------------

def _check_result(p, o):
    src, result = p.src, p.result
    result_kind = p.kinds.get(result.id) if isinstance(result, ast.Name) else \
        kind_of_constant(result.value)
    if o.extra and is_float_kind(result_kind) and o.derivative == "tangent":
        return      # (jvp's tangent: _check_tangent_types)
    if o.extra and is_float_kind(result_kind):
        cot = p.arg_types[-1]
        fits = isinstance(cot, numba.types.Array) and cot.ndim == result_kind.ndim \
            if is_array(result_kind) else isinstance(cot, numba.types.Number)
        if not fits:
            want = f"a {result_kind.ndim}-D array" if is_array(result_kind) else "a float"
            raise src.loc.error(src.tree, f"the {o.extra} is {_described(cot)} where the "
                                f"function returns {want}", f"Pass a {o.extra} of the "
                                "result's shape (a number for a float result).")
        return
    if result_kind == FLOAT:
        return
    if is_array(result_kind):
        raise src.loc.error(src.tree, f"{o.name} of a function that returns an array",
                            f"{o.name} needs a scalar float result: reduce it (np.sum, "
                            "a loss), or use adjit.vjp(f)(*args, cotangent) for "
                            "cotangent-weighted gradients of an array result and "
                            "adjit.jvp for its directional derivatives (a Jacobian is "
                            "one vjp per output, or one jvp per input).")
    what = {"int": "an int", "bool": "a bool"}.get(result_kind,
                                                    f"a value of kind {result_kind}")
    raise src.loc.error(src.tree, f"the function returns {what}, not a float",
                        "grad differentiates functions with a scalar float result; return "
                        "a float (e.g. a sum), or use float(...).")


def _check_device_function(src, stmts, kinds, params, ns):
    for q in params:
        if is_array(kinds.get(q)):
            raise src.loc.error(src.tree, f"argument '{q}' of a CUDA device function is an array",
                                "Device functions take and return scalars (a device function "
                                "cannot allocate a gradient array); differentiate kernels that "
                                "read arrays with adjit.cuda.adjoint_kernel.")
    for s in ir.walk_stmts(stmts):
        shared = isinstance(s, ast.Assign) and isinstance(s.value, ast.Call) and \
            vec.SCRATCH.get(getattr(lookup(s.value.func, ns), "__name__", None),
                            ("",))[0] == "shared"
        if shared or ir.is_barrier(s):
            raise error_at(ir.note(s, "origin"), "cuda.shared.array or cuda.syncthreads in a "
                           "device function's gradient", "A device function's gradient runs "
                           "in one thread: keep shared memory in the kernel, and differentiate "
                           "the kernel with adjit.cuda.adjoint_kernel.")
    _refuse_local_arrays(src, stmts, kinds, ns)


def _refuse_early_return_before_barrier(src):
    """`if i >= n: return` and then `cuda.syncthreads()`: threads that left would miss the
    block's barriers (CUDA leaves that undefined), and the adjoint kernel adds barriers of
    its own."""
    returns = [n for n in ir.walk(src.tree) if isinstance(n, ast.Return) and n.value is None]
    barrier = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and
                  n.func.attr == "syncthreads" for n in ir.walk(src.tree))
    if returns and barrier:
        raise src.loc.error(returns[0], "a `return` in a kernel that calls cuda.syncthreads()",
                            "Every thread of a block must reach each barrier: guard the work "
                            "with `if i < n:` instead of returning early.")


def _refuse_local_arrays(src, stmts, kinds, ns):
    """CUDA device code cannot allocate: no array may be made inside it; nor call numpy's
    argsort, argmax or random generator (numba.cuda has none of them)."""
    for s in ir.walk_stmts(stmts):
        value = getattr(s, "value", None)
        if isinstance(value, ast.Call):
            obj = lookup(value.func, ns)
            entry = REGISTRY.get(obj)
            if entry is not None and entry.array_rule is not None and not entry.cuda:
                raise error_at(ir.note(s, "origin"), f"a call to the {entry.name} in CUDA code",
                               "Its rules are compiled for the CPU: call it in CPU code, or "
                               "write the function's own code in the kernel.")
            if has_device_twin(obj) and any(
                    isinstance(a, ast.Name) and is_array(kinds.get(a.id)) for a in value.args):
                raise error_at(ir.note(s, "origin"), f"a call to the {entry.name} on an array "
                               "in CUDA code", "Its rules would allocate arrays, which CUDA "
                               "code cannot: call it on numbers (x[i]) in kernels and device "
                               "functions.")
            if obj in INACTIVE:
                raise error_at(ir.note(s, "origin"), f"`{INACTIVE[obj].name}` in CUDA code",
                               "numba.cuda compiles none of numpy's random draws or arg-"
                               "functions: draw or sort on the host and pass the values in "
                               "(numba.cuda.random has a generator for kernels).")
    scratch = {ir.target_name(s) for s in ir.walk_stmts(stmts) if isinstance(s, ast.Assign)
               and not ir.is_store(s) and isinstance(s.value, ast.Call) and
               getattr(lookup(s.value.func, ns), "__name__", None) in vec.SCRATCH}
    local = sorted(v for v in ir.assigned(stmts) if is_array(kinds.get(v)) and v not in scratch)
    if local:
        raise src.loc.error(src.tree, f"the array '{local[0]}' made in CUDA code",
                            "Device functions and kernels read and write the arrays passed to "
                            "them; CUDA device code cannot allocate (numpy calls on whole "
                            "arrays allocate).")


def _limit_hint(p, checkpoint, limit):
    """What the tape-limit error tells the user, beyond the sizes."""
    src = p.src
    where = f"the gradient of '{src.loc.name}' ({src.loc.filename}, line {src.loc.firstlineno})"
    loops = [s for s in p.stmts if isinstance(s, (ast.For, ast.While)) and
             id(s) in p.builder.plan.kept_loops and records(p.builder, s)]
    # loops whose iterations are independent but for sums: recorded whatever `checkpoint`
    # says (reverse/checkpoint.py's reduction), their tape grows with the data they read
    sums = [s for s in loops if id(s) in p.builder.sum_loops]
    others = [s for s in loops if id(s) not in p.builder.sum_loops]
    if sums:
        summed = (f"the loop(s) at line {_lines(sums)} record what each iteration computes: "
                  "their iterations are independent but for sums, so the tape grows with the "
                  "data they read, and checkpointing does not shorten it (it applies to time "
                  "loops)")
        if not others:
            return f"{where}: {summed}. Pass a larger tape_limit (now {limit} bytes), or " \
                "smaller arrays."
    besides = f" Besides, {summed}." if sums else ""
    if checkpoint is not None:
        return (f"{where}, checkpointed with checkpoint={checkpoint!r}: one step's tape or the "
                f"snapshots do not fit in tape_limit={limit}. Pass fewer snapshots "
                f"(checkpoint=<int>) or a larger tape_limit.{besides}")
    what = f"the loop(s) at line {_lines(others)} record every step" if others else \
        "the recorded values do not fit"
    return (f"{where}: {what}. Pass checkpoint='auto' (or a number of snapshots) to grad / "
            f"value_and_grad / vjp to keep the tape to one step plus snapshots of the loop "
            f"state, or a larger tape_limit (now {limit} bytes).{besides}")


def _lines(loops):
    return ", ".join(str(ir.note(s, "origin", (None, "?"))[1]) for s in loops)


# emission ------------------------------------------------------------------------------------

def _extra_name(p, o):
    extra_name = o.extra if o.extra not in p.namegen.taken else p.namegen.fresh(f"_{o.extra}")
    p.namegen.reserve(extra_name)
    return extra_name


def _adjoint(p, o):
    """Reverse mode: forward sweep, backward sweep, (value,) gradients."""
    src, kinds, namegen, result = p.src, p.kinds, p.namegen, p.result
    params = list(p.params)
    extra_name = _extra_name(p, o) if o.extra else None
    builder = ReverseBuilder(p.stmts, result, params, kinds, p.active, p.env.ns, namegen,
                             p.vec_temps.write_once, bounded=o.target == "cuda")
    p.builder = builder
    builder.value_needed = o.with_value
    builder.checkpoint = o.checkpoint
    builder.vec_temps = set(p.vec_temps)
    builder.joined = set(p.vec_temps.joined)
    prog = builder.build(p.wrt)
    if o.target == "cpu":
        prog.init = _apart_checks(p) + prog.init
    if o.target == "cuda":
        builder.tape.bounds = _bounded_tape(prog, builder, src)
    if extra_name:
        assemble.seed_cotangent(prog, builder, result, kinds, extra_name)
        params = params + [extra_name]
    if builder.is_active(result) and replicated_result(p.stmts, result, p.env.ns):
        # one value every MPI rank holds: its cotangent counts once, on rank 0
        from .runtime import mpi
        bar = builder.bar(result.id)
        prog.backward_init += ast.parse(
            f"{bar} = {p.env.spell(mpi.only_on_root, 'only_on_root')}({bar})").body
    grads = [builder.gradient_expr(q) for q in p.wrt]
    grad_text = grads[0] if o.single else "(" + ", ".join(grads) + ",)"
    value = ir.unparse(result)
    if o.with_value:
        saved = "_value" if "_value" not in namegen.taken else namegen.fresh("_value")
        prog.backward_init.insert(0, ast.parse(f"{saved} = {value}").body[0])
        ret = ast.parse(f"return {saved}, {grad_text}").body
    else:
        ret = ast.parse(f"return {grad_text}").body
    name = f"{src.fn.__name__}_{o.name}"
    blocks = [prog.init, prog.forward, prog.backward_init, prog.backward]
    double = vector_math.float64_only(blocks, p.env.ns, p.arg_types)
    sweep = Sweep(prog, builder, kinds, namegen, grads, ret,
                  double and not vector_math.has_complex(blocks, p.arg_types))
    if o.target == "cuda":
        def device_source(copied=True):
            tail = prog.backward_init + prog.backward + ret
            parts = assemble.forward_parts(prog, tail, params, kinds, 0) + [
                ("backward sweep", prog.backward_init + prog.backward), (None, ret)]
            parts = copy.deepcopy(parts) if copied else parts
            return render(name, params, assemble.cuda_parts(parts), fold=True)
        _run_sweep(p, sweep, sweep_passes.PIPELINES["device"], sweep_passes.PASSES,
                   device_source)
        p.source = device_source(copied=False)
        p.python = exec_source(p.source, name, assemble.cuda_namespace(p.env.ns))
        p.compiled = Transformed(p.source, p.python, None)
        return
    stats_name = namegen.fresh("_tape_stats")
    cap_name = namegen.fresh("_tape_cap")
    kept_name = namegen.fresh("_tape_kept")
    extra = [stats_name, cap_name, kept_name]
    stats = assemble.stats_statements(stats_name, prog.tape, builder.checkpointed.values())
    sweep.live_after = upward_exposed(stats + ret)      # what the sweep leaves read
    inner = f"{name}_taped"

    def parts_now():
        tail = prog.backward_init + prog.backward + stats + ret
        return assemble.forward_parts(prog, tail, params, kinds, o.tape_limit,
                                      parallel=sweep.parallel, cap=cap_name,
                                      stats=stats_name, kept=kept_name) + [
            ("backward sweep", prog.tape.peak_statements() + prog.backward_init +
             prog.backward),
            ("what the tape took (TapeReport)", stats),
            (None, ret)]

    def source_now():       # (for adjit.show and ADJIT_DEBUG_PRINT_AFTER; changes nothing)
        return render(inner, params + extra, copy.deepcopy(parts_now()),
                      fold=True)

    _run_sweep(p, sweep, sweep_passes.PIPELINES["adjoint"], sweep_passes.PASSES, source_now)
    parts = parts_now()
    unsigned_slots(parts, prog.tape)
    shared_room(parts, prog.tape)
    steps = [cp.step_function() for cp in builder.checkpointed.values()]
    if _vector_math(o):
        forward = [stmts for _, stmts in parts[:-3]]    # (then backward, stats, return)
        backward = [stmts for title, stmts in parts if title == "backward sweep"]
        forward += [body for _, _, body, _, _ in steps]
        if vector_math.rewrite(forward, backward, p.env.ns, prog.tape.reserved_names(), kinds,
                               namegen, double):
            usual.version_loops([([stmts for _, stmts in parts], set())] + [
                ([body], None) for _, _, body, _, _ in steps], p.env.ns, namegen,
                set(prog.bars.names.values()) | prog.tape.reserved_names(),
                prog.tape.reserved_names())
    arrays = {v for v, k in kinds.items() if is_array(k)}
    unsigned_indices([s for _, stmts in parts for s in stmts], params + extra, arrays)
    source = render(inner, params + extra, parts, fold=True, cpu=True,
                    keys=o.vector_math, allocate=True)
    source += "\n\n" + render(name, params, [(None, ast.parse(
        f"return {inner}({', '.join(params)}, np.zeros({STATS_SIZE}, np.int64), 0, "
        f"vec.empty(0))").body)],
        allocate=True)
    p.steps = []
    for step, step_params, body, results, packed in steps:
        step_parts = assemble.step_parts(body, results, kinds, step_params, packed)
        unsigned_indices([s for _, stmts in step_parts for s in stmts],
                         [packed] if packed else step_params, arrays)
        source += "\n\n" + render(step, [packed] if packed else step_params, step_parts,
                                  fold=True, cpu=True, keys=o.vector_math, allocate=True)
        p.steps.append(step)
    p.source, p.entry, p.wrapper = source, inner, name


def _vector_math(o):
    """Whether generated loops call vmath's functions (codegen/vector_math.py): CPU code with
    the option on (CUDA keeps the math module; run by the interpreter, as adjit.show's
    stages are, vmath's functions are compiled functions called from Python)."""
    return o.vector_math and o.target == "cpu"


def _run_sweep(p, sweep, names, passes, source_now):
    """The sweep passes `names` (of reverse/sweep.py, or codegen/kernel_sweep.py for a CUDA
    adjoint kernel), in order; after each, the derivative's source (source_now()) is kept
    where adjit.show asked for it (p.capture) and printed where ADJIT_DEBUG_PRINT_AFTER
    names it (or `sweep`, `all`)."""
    wanted = _debug_stages()
    for name in names:
        stage = f"sweep.{name}"
        try:
            passes[name](sweep)
        except AdjitError:
            raise
        except Exception as exc:    # a bug in adjit (as in run())
            if raised_by_user_code(exc):
                raise
            raise internal_error(_origin(p, exc), f"in the {stage} pass", exc) from exc
        printed = bool(wanted & {stage, "sweep", "all"})
        if stage in p.capture or printed:
            text = source_now()
            p.captured[stage] = text
            if printed:
                print(f"# adjit: {p.src.loc.name} after {stage}\n{text}", file=sys.stdout,
                      flush=True)


def _tangent(p, o):
    """Forward mode: the primal with tangent statements, returning (value, tangent)."""
    params, kinds, result = p.params, p.kinds, p.result
    tan = _extra_name(p, o)
    builder = TangentBuilder(p.stmts, result, kinds, p.env.ns, p.namegen, p.wrt)
    init_vars, body = builder.build()
    written = ir.stored_names(p.stmts)
    seeds = []
    tans = [f"{tan}{k}" for k in range(len(p.wrt))] if o.split_tangents else [tan]
    for k, q in enumerate(p.wrt):
        given = tan if o.single else tans[k] if o.split_tangents else f"{tan}[{k}]"
        if is_array(kinds[q]):
            # (numba would broadcast a tangent of another shape, or read past it)
            seeds.append(f"vec.check_tangent({given}, {q})")
            if q in written:
                given += ".copy()"
        seeds.append(f"{builder.dot(q)} = {given}")
    for q in params:
        if q in builder.varied and q not in p.wrt and is_array(kinds[q]):
            seeds.append(f"{builder.dot(q)} = np.zeros_like({q})")
    # an argument outside argnums that the code reassigns from varied values starts with a
    # zero tangent (init_vars); the seeded arguments and array arguments are set above
    init_vars = [s for s in init_vars if s.targets[0].id not in
                 {builder.dot(q) for q in params if q in p.wrt or is_array(kinds[q])}]
    value = ir.unparse(result)
    if isinstance(result, ast.Name) and result.id in builder.varied:
        out_dot = builder.dot(result.id)
    else:
        out_dot = f"np.zeros_like({value})" if is_array(kinds.get(getattr(result, "id", None))) \
            else "0.0"
    ret = ast.parse(f"return {value}, {out_dot}").body
    body = eliminate_dead(body, upward_exposed(ret), set(params))
    defined = assemble.defined_up_front(body, kinds, assemble.NoBars(), params)
    parts = [("variables assigned in branches start defined (numba prunes constant branches)",
              defined),
             ("tangents of the inputs", _apart_checks(p) + ast.parse("\n".join(seeds)).body +
              init_vars),
             ("primal and tangent statements", body),
             (None, ret)]
    name = f"{p.src.fn.__name__}_{o.name}"
    if o.target == "cuda":
        parts = assemble.cuda_parts(parts)
    elif _vector_math(o):
        floats = {builder.dots[v]: FLOAT for v in builder.dots if kinds.get(v) == FLOAT}
        vector_math.rewrite([body], [], p.env.ns, kinds={**floats, **kinds},
                            namegen=p.namegen,
                            double=vector_math.float64_only([body], p.env.ns, p.arg_types))
    p.source = render(name, params + tans, parts, fold=True, cpu=o.target == "cpu",
                      keys=o.vector_math)
    p.entry = name
    if o.target == "cuda":
        p.python = exec_source(p.source, name, assemble.cuda_namespace(p.env.ns))
        p.compiled = Transformed(p.source, p.python, None)


def _bounded_tape(prog, builder, src, shared=()):
    """The sizes of a CUDA tape (its float and int local arrays): the forward sweep's pushes,
    with the loops that would record a run-time number of iterations replayed instead
    (reverse/replay.py), plus one replayed iteration's."""
    error = assemble.unbounded_loop_error(src)
    extra = replay_unbounded_loops(prog.forward, prog.backward, builder.tape, builder.kinds,
                                   builder.namegen, error, shared)
    bounds = static_pushes(prog.forward, builder.tape, error)
    return bounds[0] + extra[0], bounds[1] + extra[1]


def _adjoint_kernel(p):
    """The adjoint of a CUDA kernel (Enzyme's convention): the primal arguments, then the
    shadows of the argnums arrays, then those of the other arrays the kernel writes. Each
    thread recomputes its part of the primal (writing the outputs again) and runs its
    adjoint: input shadows accumulate (+=), with cuda.atomic.add unless the thread owns the
    element (analysis/races.py)."""
    src, params, kinds, ownership = p.src, p.params, p.kinds, p.ownership
    stored = ir.stored_names(p.stmts)
    written = [q for q in params if q in stored]
    builder = ReverseBuilder(p.stmts, None, params, kinds, p.active, p.env.ns, p.namegen,
                             p.vec_temps.write_once, bounded=True)
    prog = builder.build(p.wrt)
    builder.tape.bounds = _bounded_tape(prog, builder, src, p.ownership.shared)
    shadowed = list(p.wrt) + [q for q in written if q not in p.wrt]
    shadows = [builder.bar(q) for q in shadowed]
    prog.backward_init = [x for x in prog.backward_init
                          if not (isinstance(x, ast.Assign) and isinstance(x.targets[0], ast.Name)
                                  and x.targets[0].id in shadows)]
    arrays_of = {builder.bar(q): q for q in params if is_array(p.arg_kinds[q])}
    sweep = KernelSweep(prog, builder, p.stmts, ownership, p.wrt, written, shadows, arrays_of,
                        p.namegen)
    name = f"{src.fn.__name__}_adjoint"

    def kernel_parts():
        parts = assemble.forward_parts(prog, sweep.backward, params, kinds, 0,
                                       "forward sweep (this thread's part of the primal)") + [
            ("backward sweep", sweep.backward)]
        if sweep.block_sums:
            parts.append(("the adjoints every thread adds to, summed over the block: one "
                          "atomic add per block", sweep.block_sums))
        return assemble.cuda_parts(parts)

    def source_now():       # (for ADJIT_DEBUG_PRINT_AFTER; changes nothing)
        return render(name, params + shadows, copy.deepcopy(kernel_parts()), fold=True)

    _run_sweep(p, sweep, kernel_sweep.KERNEL_PASSES, kernel_sweep.PASSES, source_now)
    zero = sweep.zero
    p.source = render(name, params + shadows, kernel_parts(), fold=True)
    p.python = exec_source(p.source, name, assemble.cuda_namespace(p.env.ns))
    p.after = []
    if zero is not None:        # launched after the gather kernel, with its grid
        zname = f"{src.fn.__name__}_adjoint_zero"
        zparts = [("variables assigned in branches start defined (numba prunes constant "
                   "branches)", assemble.defined_up_front(zero, kinds, prog.bars, params)),
                  ("launched after the adjoint kernel: the output shadows it read, consumed",
                   zero)]
        zsource = render(zname, params + shadows, assemble.cuda_parts(zparts), fold=True)
        p.after = [exec_source(zsource, zname, assemble.cuda_namespace(p.env.ns))]
        p.source += "\n\n" + zsource
    p.shadows = shadows
    p.shadowed = [params.index(q) for q in shadowed]
    p.compiled = Transformed(p.source, p.python, None)
