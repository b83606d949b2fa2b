"""The pipeline, end to end: frontend -> normalize -> analysis -> reverse -> codegen."""
import ast

import numba
import numpy as np

from .analysis.activity import active_variables
from .analysis.races import Ownership
from .analysis.types import FLOAT, infer_kinds, is_array, is_float_kind, kind_of_numba_type
from .codegen.emit import compile_source, exec_source, render
from .errors import AdjitError
from .forward.tangent import TangentBuilder
from .normalize import ir
from .frontend.source import read_function
from .normalize.anf import InlineContext, normalize_function
from .normalize.hoist import hoist_invariants, keep_operands
from .normalize.names import Env, NameGen
from .normalize.webs import split_webs
from .reverse.adjoint import ReverseBuilder
from .reverse.checkpoint import records
from .reverse.dce import eliminate_dead, upward_exposed
from .reverse.peephole import propagate_copies
from .reverse.tape import static_pushes
from .runtime.tape import DEFAULT_TAPE_LIMIT


class Transformed:
    """One specialization: generated source, its Python function and numba dispatcher.

    `pyfunc` takes the user's arguments (numba compiles it inline into @njit callers). For
    reverse modes `dispatcher` is the compiled function that also takes the tape-statistics
    array (`stats`, written by every call from Python: see TapeReport), and `limit_hint`
    says what to do when the tape would exceed tape_limit."""

    def __init__(self, source, pyfunc, dispatcher, stats=None, limit_hint=""):
        self.source = source
        self.pyfunc = pyfunc
        self.dispatcher = dispatcher
        self.stats = stats
        self.limit_hint = limit_hint

    def call(self, *args):
        if self.stats is None:
            return self.dispatcher(*args)
        return self.dispatcher(*args, self.stats)


def normalized(fn, arg_kinds=None, temps=False, kernel=False):
    """(FunctionSource, statements, result atom, Env) of a function in A-normal form.

    `arg_kinds` ({parameter: kind}) tells which arguments are arrays, so that vectorized
    numpy code on them is lowered to loops (normalize/vectorize.py)."""
    src = read_function(fn)
    namegen = NameGen(src.locals | set(src.params))
    env = Env()
    arrays = {p: (k.ndim, k.dtype) for p, k in (arg_kinds or {}).items() if is_array(k)}
    ints = {p for p, k in (arg_kinds or {}).items() if k == "int"}
    layouts = {p: k.layout for p, k in (arg_kinds or {}).items() if is_array(k)}
    ctx = InlineContext(namegen, env, arrays, ints, layouts)
    stmts, result = normalize_function(src, ctx)
    if kernel:
        if result is not None:
            raise src.loc.error(src.tree, "a CUDA kernel that returns a value",
                                "Kernels write their results into arrays; return nothing.")
        split_webs(stmts, src.params, ir.const(0.0))
        coalesce_temps(stmts, ctx.vec_temps, None)
        return src, stmts, None, env, namegen, ctx.vec_temps
    if result is None:
        raise src.loc.error(src.tree, "the function returns nothing",
                            "Return the float to differentiate.")
    result = split_webs(stmts, src.params, result)
    result = coalesce_temps(stmts, ctx.vec_temps, result)
    if temps:
        return src, stmts, result, env, namegen, ctx.vec_temps
    return src, stmts, result, env, namegen


def coalesce_temps(stmts, temps, result):
    """`y = _a` where `_a` is an array the vectorizer made for y's value: name it y.

    Only when y is assigned nowhere else and neither name is read between _a's allocation
    and the copy (so no reader of an earlier y can see the rename)."""
    for block in _blocks(stmts):
        for k, s in enumerate(block):
            if not (isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name) and
                    isinstance(s.value, ast.Name) and s.value.id in temps):
                continue
            y, a = s.targets[0].id, s.value.id
            start = next((j for j in range(k) if isinstance(block[j], ast.Assign) and
                          isinstance(block[j].targets[0], ast.Name) and
                          block[j].targets[0].id == a), None)
            if start is None:
                continue
            between = [n for t in block[start:k] for n in ast.walk(t) if isinstance(n, ast.Name)]
            if any(n.id == y for n in between):
                continue
            everywhere = [n for t in stmts for n in ast.walk(t) if isinstance(n, ast.Name)]
            if sum(1 for n in everywhere if n.id == y and isinstance(n.ctx, ast.Store)) != 1 or \
                    sum(1 for n in everywhere if n.id == a and isinstance(n.ctx, ast.Load)) != \
                    sum(1 for n in between if n.id == a and isinstance(n.ctx, ast.Load)) + 1:
                continue
            for t in block[start:k]:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name) and n.id == a:
                        n.id = y
            write_once = getattr(temps, "write_once", set())
            if a in write_once:
                write_once.discard(a)
                stores = [w for t in stmts for w in ir.walk_stmts([t]) if ir.is_store(w)
                          and w.targets[0].value.id == y]
                made = [w for w in ir.walk_stmts(block[start:k]) if ir.is_store(w)
                        and w.targets[0].value.id == y]
                if len(stores) == len(made):    # the user never writes y afterwards
                    write_once.add(y)
            temps.add(y)
            block[k] = ast.Pass()
        block[:] = [s for s in block if not isinstance(s, ast.Pass)] or [ast.Pass()]
    return result


def _blocks(stmts):
    yield stmts
    for s in stmts:
        for field in ("body", "orelse"):
            inner = getattr(s, field, None)
            if isinstance(inner, list) and inner and isinstance(s, (ast.If, ast.For,
                                                                       ast.While)):
                yield from _blocks(inner)


def check_argnums(fn, argnums):
    """Validate argnums against fn's parameters; returns a tuple of non-negative ints."""
    src = read_function(fn)
    n = len(src.params)
    where = f"'{src.loc.name}' ({src.loc.filename}, line {src.loc.firstlineno})"
    items = (argnums,) if _is_int(argnums) else \
        tuple(argnums) if isinstance(argnums, (tuple, list)) else None
    if not items or not all(_is_int(k) for k in items):
        raise AdjitError(f"argnums={argnums!r} for {where} is not an int or a non-empty tuple "
                         f"of ints. Pass argnums=0 or argnums=(0, 2): the positions of the "
                         f"arguments to differentiate ({', '.join(src.params)}).")
    out = []
    for k in items:
        if not -n <= k < n:
            raise AdjitError(f"argnums {k} is out of range for {where}, which takes {n} "
                             f"argument(s): {', '.join(src.params)}. Use positions 0 to "
                             f"{n - 1} (or negative positions from the end).")
        out.append(k % n)
    if len(set(out)) != len(out):
        raise AdjitError(f"argnums={argnums!r} for {where} names an argument twice. List each "
                         f"argument position once.")
    return tuple(out)


def _is_int(k):
    return isinstance(k, int) and not isinstance(k, bool)


def build(fn, argnums, arg_types, mode, fastmath=False, jit=True, checkpoint=None,
          tape_limit=None, cache=False, target="cpu"):
    """Generate and compile the gradient of `fn` for arguments of these numba types.

    `mode.with_value` adds the value to the result ((value, gradient)); `mode.single` returns
    the one gradient bare (the user passed an int argnums) rather than a tuple. With
    jit=False nothing is compiled: the result's dispatcher is None and its pyfunc runs the
    generated source in the Python interpreter. `checkpoint` (snapshots, an int, or "auto")
    checkpoints the top-level time loops (reverse/checkpoint.py); `cache` keeps the compiled
    code on disk for later processes (codegen/emit.py).
    """
    params = read_function(fn).params
    extra = getattr(mode, "extra", None)     # "cotangent" (vjp) or "tangent" (jvp)
    user_types = arg_types[:-1] if extra else arg_types
    if len(user_types) != len(params) or (extra and not arg_types):
        src = read_function(fn)
        more = f" plus the {extra}" if extra else ""
        raise src.loc.error(src.tree, f"called with {len(arg_types)} argument(s)",
                            f"'{src.loc.name}' takes {len(params)}: {', '.join(params)}"
                            f"{more}.")
    arg_kinds = {p: kind_of_numba_type(t) for p, t in zip(params, user_types)}
    src, stmts, result, env, namegen, vec_temps = normalized(fn, arg_kinds, temps=True)
    wrt = [params[k] for k in argnums]
    for p in wrt:
        if not is_float_kind(arg_kinds[p]):
            raise src.loc.error(src.tree, f"argument '{p}' in argnums is {arg_types[params.index(p)]}"
                                ", which carries no derivative",
                                "Pass a float (2.0, not 2) or a float64 array, or leave the "
                                "argument out of argnums.")
    kinds = infer_kinds(stmts, arg_kinds, env.ns)
    keep_operands(stmts, kinds, env.ns, namegen)
    hoist_invariants(stmts, kinds, env.ns, vec_temps)
    if target == "cuda":
        _check_device_function(src, stmts, kinds, params)
    result_kind = kinds.get(result.id) if isinstance(result, ast.Name) else \
        kind_of_constant(result.value)
    if extra and is_float_kind(result_kind):
        extra_name = extra if extra not in namegen.taken else namegen.fresh(f"_{extra}")
        namegen.reserve(extra_name)
        if mode.name == "jvp":
            return _build_jvp(src, stmts, result, env, namegen, kinds, wrt, mode, extra_name,
                              arg_types, fastmath, jit, cache, target)
    elif result_kind != FLOAT:
        if is_array(result_kind):
            raise src.loc.error(src.tree, f"{mode.name} of a function that returns an array",
                                f"{mode.name} needs a scalar float result: reduce it (np.sum, "
                                "a loss), or use adjit.vjp(f)(*args, cotangent) for "
                                "cotangent-weighted gradients of an array result and "
                                "adjit.jvp for its directional derivatives (a Jacobian is "
                                "one vjp per output, or one jvp per input).")
        what = {"int": "an int", "bool": "a bool"}.get(result_kind,
                                                        f"a value of kind {result_kind}")
        raise src.loc.error(src.tree, f"the function returns {what}, not a float",
                            "grad differentiates functions with a scalar float result; return "
                            "a float (e.g. a sum), or use float(...).")
    active = active_variables(stmts, result, wrt, kinds, env.ns)
    builder = ReverseBuilder(stmts, result, params, kinds, active, env.ns, namegen,
                             vec_temps.write_once)
    builder.value_needed = mode.with_value
    builder.checkpoint = checkpoint
    builder.vec_temps = set(vec_temps)
    builder.tape.bounded = target == "cuda"
    prog = builder.build(wrt)
    if target == "cuda":
        builder.tape.bounds = static_pushes(prog.forward, builder.tape, _unbounded(src))
    if extra:
        _seed_cotangent(prog, builder, result, kinds, extra_name)
        params = params + [extra_name]
    grads = [builder.gradient_expr(p) for p in wrt]
    propagate_copies(prog.backward, prog.bars.values(), live_out=grads)
    grad_text = grads[0] if mode.single else "(" + ", ".join(grads) + ",)"
    value = ast.unparse(result)
    if mode.with_value:
        saved = "_value" if "_value" not in namegen.taken else namegen.fresh("_value")
        prog.backward_init.insert(0, ast.parse(f"{saved} = {value}").body[0])
        ret = f"return {saved}, {grad_text}"
    else:
        ret = f"return {grad_text}"
    name = f"{src.fn.__name__}_{mode.name}"
    if target == "cuda":
        return _device_function(name, params, prog, builder, grads, ret, kinds, env)
    stats_name = namegen.fresh("_tape_stats")
    stats = _stats_statements(stats_name, prog.tape, builder.checkpointed.values())
    tail = prog.backward_init + prog.backward + stats + ast.parse(ret).body
    parts = _forward_parts(prog, tail, params, kinds, tape_limit) + [
        ("backward sweep", prog.backward_init + prog.backward),
        ("what the tape took (TapeReport)", stats),
        (None, ast.parse(ret).body)]
    inner = f"{name}_taped"
    source = render(inner, params + [stats_name], parts)
    source += "\n\n" + render(name, params, [(None, ast.parse(
        f"return {inner}({', '.join(params)}, np.zeros({STATS_SIZE}, np.int64))").body)])
    stats_type = numba.types.int64[::1]
    pyfunc, dispatcher = compile_source(source, inner, env.ns, tuple(arg_types) +
                                        (stats_type,), fastmath, jit, wrapper=name,
                                        cache=cache)
    return Transformed(source, pyfunc, dispatcher, np.zeros(STATS_SIZE, np.int64),
                       _limit_hint(src, stmts, builder, checkpoint,
                                   DEFAULT_TAPE_LIMIT if tape_limit is None else tape_limit))


STATS_SIZE = 5
"""The tape statistics: tape bytes, snapshot bytes, checkpointed steps, steps advanced
again without the tape, steps run with the tape (see api.TapeReport)."""


def _forward_parts(prog, tail, params, kinds, limit, title="forward sweep"):
    """The first parts of a generated function: scalars defined up front, and the forward
    sweep (tape allocations, then the primal statements that `tail` - the rest of the
    function - needs)."""
    roots = upward_exposed(tail) | prog.tape.reserved_names()
    forward = eliminate_dead(prog.forward, roots, set(params))
    defined = defined_up_front(forward + tail, kinds, prog.bars, params)
    return [("variables assigned in branches start defined (numba prunes constant branches)",
             defined),
            (title, prog.init + prog.tape.allocations(limit) + forward)]


def _stats_statements(stats, tape, checkpointed):
    lines = [f"{stats}[:] = 0", f"{stats}[0] = {tape.bytes_expr()}"]
    snaps = [cp.snapshot_bytes() for cp in checkpointed]
    snaps = [b for b in snaps if b != "0"]
    if snaps:
        lines.append(f"{stats}[1] = {' + '.join(snaps)}")
    for cp in checkpointed:
        lines.append(f"ckpt.add_counts({cp.names['sched']}, {stats})")
    return ast.parse("\n".join(lines)).body


def _limit_hint(src, stmts, builder, checkpoint, limit):
    """What the tape-limit error tells the user, beyond the sizes."""
    where = f"the gradient of '{src.loc.name}' ({src.loc.filename}, line {src.loc.firstlineno})"
    if checkpoint is not None:
        return (f"{where}, checkpointed with checkpoint={checkpoint!r}: one step's tape or the "
                f"snapshots do not fit in tape_limit={limit}. Pass fewer snapshots "
                f"(checkpoint=<int>) or a larger tape_limit.")
    loops = [s for s in stmts if isinstance(s, (ast.For, ast.While)) and
             id(s) in builder.kept_loops and records(builder, s)]
    lines = [str(getattr(s, "_origin", (None, "?"))[1]) for s in loops]
    what = f"the loop(s) at line {', '.join(lines)} record every step" if lines else \
        "the recorded values do not fit"
    return (f"{where}: {what}. Pass checkpoint='auto' (or a number of snapshots) to grad / "
            f"value_and_grad / vjp to keep the tape to one step plus snapshots of the loop "
            f"state, or a larger tape_limit (now {limit} bytes).")


def _seed_cotangent(prog, builder, result, kinds, cot):
    """vjp: the result's adjoint starts as the cotangent (grad seeds it with 1.0)."""
    if not builder.is_active(result):
        return
    bar = builder.bar(result.id)
    prog.backward_init = [s for s in prog.backward_init
                          if not (isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name)
                                  and s.targets[0].id == bar and
                                  isinstance(s.value, ast.Constant))]
    text = f"{bar} += {cot}" if is_array(kinds[result.id]) else f"{bar} = {cot}"
    prog.backward_init += ast.parse(text).body


def _build_jvp(src, stmts, result, env, namegen, kinds, wrt, mode, tan, arg_types, fastmath,
               jit, cache=False, target="cpu"):
    """Forward mode: the primal with tangent statements, returning (value, tangent)."""
    params = src.params
    builder = TangentBuilder(stmts, result, kinds, env.ns, namegen, wrt)
    init_vars, body = builder.build()
    written = {s.targets[0].value.id for s in ir.walk_stmts(stmts) if ir.is_store(s)}
    seeds = []
    for k, p in enumerate(wrt):
        given = tan if mode.single else f"{tan}[{k}]"
        if is_array(kinds[p]) and p in written:
            given += ".copy()"
        seeds.append(f"{builder.dot(p)} = {given}")
    for p in params:
        if p in builder.varied and p not in wrt and is_array(kinds[p]):
            seeds.append(f"{builder.dot(p)} = np.zeros_like({p})")
    init_vars = [s for s in init_vars if s.targets[0].id not in
                 {builder.dot(p) for p in params}]
    value = ast.unparse(result)
    if isinstance(result, ast.Name) and result.id in builder.varied:
        out_dot = builder.dot(result.id)
    else:
        out_dot = f"np.zeros_like({value})" if is_array(kinds.get(getattr(result, "id", None))) \
            else "0.0"
    ret = ast.parse(f"return {value}, {out_dot}").body
    body = eliminate_dead(body, upward_exposed(ret), set(params))
    defined = defined_up_front(body, kinds, _NoBars(), params)
    parts = [("variables assigned in branches start defined (numba prunes constant branches)",
              defined),
             ("tangents of the inputs", ast.parse("\n".join(seeds)).body + init_vars),
             ("primal and tangent statements", body),
             (None, ret)]
    name = f"{src.fn.__name__}_{mode.name}"
    if target == "cuda":
        parts = _cuda_parts(parts)
    source = render(name, params + [tan], parts)
    if target == "cuda":
        return Transformed(source, exec_source(source, name, _cuda_namespace(env.ns)), None)
    pyfunc, dispatcher = compile_source(source, name, env.ns, arg_types, fastmath, jit,
                                        cache=cache)
    return Transformed(source, pyfunc, dispatcher)


class _NoBars:
    names = {}


def defined_up_front(stmts, kinds, bars, params):
    """`a = b = 0.0`-style statements defining every scalar that an `if` branch assigns.

    numba removes branches whose condition it can prove constant before it types the
    function; a variable assigned only there would then be undefined where the other sweep
    reads it. Defining it first keeps every path well-formed without changing any value a
    taken path computes.
    """
    names = {}
    assigned_before = set()
    for s in stmts:
        if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name):
            assigned_before.add(s.targets[0].id)
            continue
        for node in ast.walk(s):
            if isinstance(node, ast.If):
                for inner in ast.walk(node):
                    if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store) \
                            and inner.id not in assigned_before:
                        names.setdefault(inner.id, None)
    by_zero = {}
    primal_of = {bar: var for var, bar in bars.names.items()}
    for n in names:
        if n in params:
            continue
        kind = kinds.get(primal_of.get(n, n))
        zero = {FLOAT: "0.0", "int": "0", "bool": "False"}.get(kind)
        if zero is not None:
            by_zero.setdefault(zero, []).append(n)
    return [ast.parse(" = ".join(group + [zero])).body[0] for zero, group in by_zero.items()]


def kind_of_constant(value):
    if isinstance(value, bool):
        return "bool"
    return "int" if isinstance(value, int) else FLOAT


# CUDA ---------------------------------------------------------------------------------------

def _cuda_namespace(ns):
    from numba import cuda
    out = dict(ns)
    out["cuda"] = cuda
    out["numba"] = numba
    return out


class _StopAsValue(ast.NodeTransformer):
    """`stop_gradient(v)` in generated CUDA code is just `v`: the adjoint already ignores it,
    and no call is left for numba-cuda to compile (a call to another device function would
    need the GPU's compute capability at compile time)."""

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "stop_gradient" and \
                len(node.args) == 1:
            return node.args[0]
        return node


def _cuda_parts(parts):
    return [(title, [_StopAsValue().visit(s) for s in stmts]) for title, stmts in parts]


def _unbounded(src):
    def error(loop):
        origin = getattr(loop, "_origin", None) or (src.loc.filename, src.loc.firstlineno,
                                                     src.loc.name)
        from .errors import error_at
        return error_at(origin, "a loop whose backward sweep needs values recorded at every "
                        "iteration, with a number of iterations not known when the code is "
                        "compiled (CUDA device code cannot grow a tape)",
                        "Give the loop a constant trip count (for k in range(8)), or let the "
                        "backward sweep recompute what it needs (values of arrays the code "
                        "does not write are read again, never recorded).")
    return error


def _check_device_function(src, stmts, kinds, params):
    for p in params:
        if is_array(kinds.get(p)):
            raise src.loc.error(src.tree, f"argument '{p}' of a CUDA device function is an array",
                                "Device functions take and return scalars (a device function "
                                "cannot allocate a gradient array); differentiate kernels that "
                                "read arrays with adjit.cuda.adjoint_kernel.")
    _refuse_local_arrays(src, stmts, kinds)


def _refuse_local_arrays(src, stmts, kinds):
    """CUDA device code cannot allocate: no array may be made inside it."""
    local = sorted(v for v in ir.assigned(stmts) if is_array(kinds.get(v)))
    if local:
        raise src.loc.error(src.tree, f"the array '{local[0]}' made in CUDA code",
                            "Device functions and kernels read and write the arrays passed to "
                            "them; CUDA device code cannot allocate (numpy calls on whole "
                            "arrays allocate).")


def _device_function(name, params, prog, builder, grads, ret, kinds, env):
    """Source and Python function of a CUDA device function: no tape statistics, a tape in
    fixed-size local arrays, compiled by numba-cuda where a kernel calls it."""
    tail = prog.backward_init + prog.backward + ast.parse(ret).body
    parts = _forward_parts(prog, tail, params, kinds, 0) + [
        ("backward sweep", prog.backward_init + prog.backward),
        (None, ast.parse(ret).body)]
    source = render(name, params, _cuda_parts(parts))
    return Transformed(source, exec_source(source, name, _cuda_namespace(env.ns)), None)


def build_kernel(fn, argnums, arg_types):
    """The adjoint of a CUDA kernel (Enzyme's convention): the primal arguments, then the
    shadows of the argnums arrays, then those of the other arrays the kernel writes. Each
    thread recomputes its part of the primal (writing the outputs again) and runs its
    adjoint: input shadows accumulate (+=), with cuda.atomic.add unless the thread owns the
    element (`i = cuda.grid(1)` and the access is `a[i]`). Returns (source, python function,
    shadow names)."""
    src = read_function(fn)
    params = src.params
    if len(arg_types) != len(params):
        raise src.loc.error(src.tree, f"launched with {len(arg_types)} argument(s)",
                            f"'{src.loc.name}' takes {len(params)}: {', '.join(params)}.")
    arg_kinds = {p: kind_of_numba_type(t) for p, t in zip(params, arg_types)}
    src, stmts, _, env, namegen, vec_temps = normalized(fn, arg_kinds, temps=True, kernel=True)
    wrt = [params[k] for k in argnums]
    for p in wrt:
        if not is_array(arg_kinds[p]) or not arg_kinds[p].is_float:
            raise src.loc.error(src.tree, f"argument '{p}' in argnums is not a float array",
                                "Differentiate float arrays; pass a differentiable scalar as a "
                                "one-element array (p[0] in the kernel).")
    kinds = infer_kinds(stmts, arg_kinds, env.ns)
    keep_operands(stmts, kinds, env.ns, namegen)
    hoist_invariants(stmts, kinds, env.ns, vec_temps)
    _refuse_local_arrays(src, stmts, kinds)
    ownership = Ownership(stmts, params, kinds, src.loc.name)
    ownership.check()
    written = [p for p in params if any(ir.is_store(s) and s.targets[0].value.id == p
                                        for s in ir.walk_stmts(stmts))]
    active = active_variables(stmts, None, wrt, kinds, env.ns, roots=written)
    builder = ReverseBuilder(stmts, None, params, kinds, active, env.ns, namegen,
                             vec_temps.write_once)
    builder.tape.bounded = True
    prog = builder.build(wrt)
    builder.tape.bounds = static_pushes(prog.forward, builder.tape, _unbounded(src))
    shadows = [builder.bar(p) for p in wrt] + [builder.bar(p) for p in written
                                               if p not in wrt]
    prog.backward_init = [x for x in prog.backward_init
                          if not (isinstance(x, ast.Assign) and isinstance(x.targets[0], ast.Name)
                                  and x.targets[0].id in shadows)]
    propagate_copies(prog.backward, prog.bars.values(), live_out=shadows)
    arrays_of = {builder.bar(p): p for p in params if is_array(arg_kinds[p])}
    backward = _atomic_shadow_updates(prog.backward_init + prog.backward, set(shadows),
                                      ownership, arrays_of)
    parts = _forward_parts(prog, backward, params, kinds, 0,
                           "forward sweep (this thread's part of the primal)") + [
        ("backward sweep", backward)]
    name = f"{src.fn.__name__}_adjoint"
    source = render(name, params + shadows, _cuda_parts(parts))
    return source, exec_source(source, name, _cuda_namespace(env.ns)), shadows


def _atomic_shadow_updates(stmts, shadows, ownership, arrays_of):
    """`x_bar[j] += v` on a shadow becomes cuda.atomic.add(x_bar, j, v) unless no other
    thread touches x[j] (analysis/races.py). A zeroing `x_bar[j] = 0.0` (the adjoint of
    overwriting x[j]) stays: in a race-free kernel the element a thread writes is its own."""
    out = []
    for s in stmts:
        for field in ("body", "orelse"):
            inner = getattr(s, field, None)
            if isinstance(inner, list) and inner:
                setattr(s, field, _atomic_shadow_updates(inner, shadows, ownership, arrays_of)
                        or [ast.Pass()])
        target = getattr(s, "target", None) if isinstance(s, ast.AugAssign) else \
            (s.targets[0] if isinstance(s, ast.Assign) else None)
        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and \
                target.value.id in shadows and isinstance(s, ast.AugAssign) and \
                not ownership.exclusive(arrays_of[target.value.id], ir.index_atoms(target)):
            value = s.value if isinstance(s.op, ast.Add) else \
                ast.UnaryOp(op=ast.USub(), operand=s.value)
            out.append(ir.atomic_add(target.value.id, target.slice, value,
                                     getattr(s, "_origin", None)))
            continue
        out.append(s)
    return out
