"""Assembling generated functions: the parts a derivative's source is made of.

A generated function is a list of titled parts (render() writes each title as a comment):
scalars defined up front, the forward sweep, the backward sweep, the tape statistics. This
module makes those parts from the reverse and tangent builders' statements; the pipeline
(adjit/pipeline.py) decides which parts a derivative has.
"""
import ast
import copy
import math

import numba

from .. import ir
from ..analysis.types import is_array, zero_source
from ..errors import error_at
from ..reverse.dce import bindings_needed, eliminate_dead, upward_exposed
from ..reverse.parallel import parallel_forward
from ..rules.table import device_twin
from ..runtime import vec


STATS_SIZE = 7
"""The tape statistics: tape bytes, snapshot bytes, checkpointed steps, steps advanced
again without the tape, steps run with the tape (the five numbers of api.TapeReport), then
how many values the float and the integer tape held at most, the length the next call
starts them at (reverse/tape.py LENGTH_SLOTS)."""

REPORTED = 5
"""The statistics api.TapeReport reports (the first ones)."""


def forward_parts(prog, tail, params, kinds, limit, title="forward sweep", parallel=False,
                  cap="0", stats=None, kept=None):
    """The first parts of a generated function: scalars defined up front, and the forward
    sweep (tape allocations, then the primal statements that `tail` - the rest of the
    function - needs). With `parallel`, the user's prange loops that qualify stay parallel
    (reverse/parallel.py). `cap`: the parameter capping the tape's room, `stats` the tape
    statistics', `kept` the kept tape buffer's (Tape.allocations)."""
    roots = upward_exposed(tail) | prog.tape.reserved_names()
    forward = eliminate_dead(prog.forward, roots, set(params), bindings_needed(tail, roots))
    if parallel:
        forward = parallel_forward(forward, roots, prog.tape.reserved_names())
    defined = defined_up_front(forward + tail, kinds, prog.bars, params)
    return [("variables assigned in branches start defined (numba prunes constant branches)",
             defined),
            (title, prog.init + prog.tape.allocations(limit, cap, stats, kept) + forward)]


def step_parts(body, results, kinds, params, packed=None):
    """The parts of a checkpointed loop's step function (reverse/checkpoint.py): its body
    and the return of the scalars the loop carries; with `packed`, first the unpacking of
    the one tuple it takes into its parameters."""
    ret = ir.parse(f"return {', '.join(results)}") if results else []
    unpack = [("its arguments, passed as one tuple (numba inlines no call of over 30 "
               "arguments)", ir.parse(f"{', '.join(params)} = {packed}"))] if packed else []
    return unpack + [
        ("variables assigned in branches start defined (numba prunes constant branches)",
         defined_up_front(body + ret, kinds, NoBars(), params)),
        ("one step of the loop, nothing recorded", body + ret)]


def stats_statements(stats, tape, checkpointed):
    lines = [f"{stats}[:] = 0", f"{stats}[0] = {tape.bytes_expr()}"]
    snaps = [cp.snapshot_bytes() for cp in checkpointed]
    snaps = [b for b in snaps if b != "0"]
    if snaps:
        lines.append(f"{stats}[1] = {' + '.join(snaps)}")
    for cp in checkpointed:
        lines.append(f"ckpt.add_counts({cp.names['sched']}, {stats}, {cp.names['steps']})")
    return ast.parse("\n".join(lines)).body + tape.length_statements(stats)


def seed_cotangent(prog, builder, result, kinds, cot):
    """vjp: the result's adjoint starts as the cotangent (grad seeds it with 1.0)."""
    if not builder.is_active(result):
        return
    bar = builder.bar(result.id)
    prog.backward_init = [s for s in prog.backward_init
                          if not (isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name)
                                  and s.targets[0].id == bar and
                                  isinstance(s.value, ast.Constant))]
    # (numba would broadcast a cotangent of another shape, or read past it)
    text = f"vec.check_cotangent({cot}, {result.id})\n{bar} += {cot}" \
        if is_array(kinds[result.id]) else f"{bar} = {cot}"
    prog.backward_init += ast.parse(text).body



class NoBars:
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
        for node in ir.walk(s):
            if isinstance(node, ast.If):
                for inner in ir.walk(node):
                    if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store) \
                            and inner.id not in assigned_before:
                        names.setdefault(inner.id, None)
    by_zero = {}
    primal_of = {bar: var for var, bar in bars.names.items()}
    for n in names:
        if n in params:
            continue
        zero = zero_source(kinds.get(primal_of.get(n, n)))
        if zero is not None:
            by_zero.setdefault(zero, []).append(n)
    out = []
    for zero, group in by_zero.items():
        line = []
        for n in group + [None]:        # lines of at most ~90 characters
            if n is None or (line and len(" = ".join(line + [n, zero])) > 90):
                out.append(ast.parse(" = ".join(line + [zero])).body[0])
                line = []
            if n is not None:
                line.append(n)
    return out


# CUDA ---------------------------------------------------------------------------------------

def cuda_namespace(ns):
    """Generated CUDA code's namespace: CPU functions it calls that have device twins (a
    custom_vjp function's rules) replaced by them."""
    from numba import cuda
    out = dict(ns)
    for name, value in ns.items():
        twin = device_twin(value)
        if twin is not None:
            out[name] = twin
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


def cuda_parts(parts):
    """Generated statements as CUDA code: stop_gradient calls dropped, and the kernel's
    scratch arrays (vec.local_empty) and their adjoints (np.zeros_like of one) as
    `cuda.local.array`s, the adjoints zeroed by a loop; its shared arrays
    (vec.shared_empty) and their adjoints as `cuda.shared.array`s, the adjoints zeroed by
    the block's threads together, then a barrier."""
    shapes = {}
    for _, stmts in parts:
        for s in ir.walk_stmts(stmts):
            if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name) and \
                    isinstance(s.value, ast.Call) and _scratch(s.value.func):
                shapes[s.targets[0].id] = (s.value.args[0],) + _scratch(s.value.func)
    return [(title, _local_arrays([_StopAsValue().visit(s) for s in stmts], shapes))
            for title, stmts in parts]


def _scratch(func):
    """(memory space, dtype) when `func` spells one of vec.SCRATCH's allocators."""
    name = ir.unparse(func)
    return vec.SCRATCH.get(name[4:]) if name.startswith("vec.") else None


def shared_arrays(stmts):
    """Names of the kernel's `cuda.shared.array`s (vec.shared_empty) in normalized code."""
    return {s.targets[0].id for s in ir.walk_stmts(stmts) if isinstance(s, ast.Assign)
            and isinstance(s.targets[0], ast.Name) and isinstance(s.value, ast.Call)
            and (_scratch(s.value.func) or ("",))[0] == "shared"}


_SHARED_ZERO = """\
{z} = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
while {z} < {size}:
    {target}[{index}] = 0.0
    {z} += cuda.blockDim.x * cuda.blockDim.y * cuda.blockDim.z
cuda.syncthreads()
"""


def _local_arrays(stmts, shapes):
    out = []
    for s in stmts:
        for field in ("body", "orelse"):
            if isinstance(getattr(s, field, None), list):
                setattr(s, field, _local_arrays(getattr(s, field), shapes))
        value = getattr(s, "value", None)
        if isinstance(s, ast.Assign) and isinstance(value, ast.Call) and value.args:
            func = ir.unparse(value.func)
            arg = value.args[0]
            found = (value.args[0],) + _scratch(value.func) if _scratch(value.func) else \
                shapes.get(arg.id) if func == "np.zeros_like" and \
                isinstance(arg, ast.Name) else None
            if found is not None:
                shape, where, dtype = found
                target = ir.unparse(s.targets[0])
                text = f"{target} = cuda.{where}.array({ir.unparse(shape)}, numba.{dtype})"
                if func == "np.zeros_like":
                    dims = [e.value for e in shape.elts] if isinstance(shape, ast.Tuple) \
                        else [shape.value]
                    if where == "shared":
                        z = f"_z_{target}"
                        index, stride = [], 1
                        for n in reversed(dims):
                            index.insert(0, f"({z} // {stride}) % {n}" if stride > 1
                                         else f"{z} % {n}")
                            stride *= n
                        text += "\n" + _SHARED_ZERO.format(z=z, size=math.prod(dims),
                                                           target=target,
                                                           index=", ".join(index))
                    else:
                        idx = ", ".join(f"_z{k}" for k in range(len(dims)))
                        for k, n in enumerate(dims):
                            text += "\n" + "    " * k + f"for _z{k} in range({n}):"
                        text += "\n" + "    " * len(dims) + f"{target}[{idx}] = 0.0"
                new = ast.parse(text).body
                for n in new:
                    ir.annotate(n, origin=ir.note(s, "origin", None))
                out.extend(new)
                continue
        out.append(s)
    return out


def unbounded_loop_error(src):
    """The AdjitError for a CUDA loop that records values at every iteration and can be
    neither recorded (its trip count is a run-time value) nor replayed (reverse/replay.py):
    `error(loop)` for one inside another such loop, `error(loop, why)` otherwise."""
    cases = {
        None: ("a loop with a number of iterations known only when the code runs, inside "
               "another such loop, both needing values recorded at every iteration (CUDA "
               "device code cannot grow a tape)",
               "Give the inner or the outer loop a constant trip count (for k in range(8)): "
               "a loop of constant count records into a fixed local array, and the other "
               "is computed again from its start."),
        "reads": ("a loop with a number of iterations known only when the code runs whose "
                  "iterations read array elements written in the loop or after it (CUDA "
                  "device code cannot grow a tape: the backward sweep computes such a loop's "
                  "iterations again from its start, which needs the arrays as they were)",
                  "Carry the running value in a local variable and store it after the loop "
                  "(s = out[i]; for k in range(n): s = f(s); out[i] = s), or give the loop a "
                  "constant trip count (for k in range(8))."),
        "return": ("a `return` inside a loop with a number of iterations known only when the "
                   "code runs, whose backward sweep computes its iterations again",
                   "Leave the loop with `break` and return after it."),
    }

    def error(loop, why=None):
        origin = ir.note(loop, "origin", None) or (src.loc.filename, src.loc.firstlineno,
                                                     src.loc.name)
        return error_at(origin, *cases[why])
    return error


def _constant_index(index):
    if isinstance(index, ast.Constant):
        return isinstance(index.value, int) and not isinstance(index.value, bool)
    return isinstance(index, ast.Tuple) and all(_constant_index(e) for e in index.elts)


_BLOCK_SUM = """\
{red} = cuda.shared.array(1024, numba.float64)
{tid} = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
{nt} = cuda.blockDim.x * cuda.blockDim.y * cuda.blockDim.z
"""
_ONE_SUM = """\
{red}[{tid}] = {acc}
cuda.syncthreads()
{s} = 1
while {s} < {nt}:
    {s} *= 2
{s} //= 2
while {s} > 0:
    if {tid} < {s} and {tid} + {s} < {nt}:
        {red}[{tid}] += {red}[{tid} + {s}]
    cuda.syncthreads()
    {s} //= 2
if {tid} == 0:
    cuda.atomic.add({array}, {index}, {red}[0])
"""


def block_summed_atomics(forward, backward, namegen, local=frozenset()):
    """Every thread adding into one fixed shadow element (`cuda.atomic.add(p_bar, 0, v)`, the
    adjoint of a parameter all threads read) contends for one address: 10^7 threads take
    milliseconds where the kernel takes microseconds. Each such element gets a per-thread
    sum instead (a local, in float64), added up across the block in shared memory at the end
    of the kernel, and one atomic add per block. The block-wide sum needs every thread of the
    block to reach the end: kernels with a `return` keep their atomics; so do the adjoints
    of the block's shared arrays (`local`), read again in the same sweep. Returns the backward
    sweep and the statements that end the kernel (the block sums)."""
    if any(isinstance(s, ast.Return) for s in ir.walk_stmts(forward + backward)):
        return backward, []
    sums = {}

    def local_sum(s):
        call = s.value if isinstance(s, ast.Expr) else None
        if not (ir.note(s, "atomic", False) is False and isinstance(call, ast.Call) and
                ir.unparse(call.func) == "cuda.atomic.add" and _constant_index(call.args[1])
                and isinstance(call.args[0], ast.Name) and call.args[0].id not in local):
            return s
        key = (call.args[0].id, ir.unparse(call.args[1]))
        if key not in sums:
            sums[key] = namegen.fresh("_sum")
        return ast.AugAssign(target=ir.store(sums[key]), op=ast.Add(), value=call.args[2])
    backward = ir.rewrite_blocks(backward, lambda block: [local_sum(s) for s in block])
    if not sums:
        return backward, []
    names = {k: namegen.fresh("_" + k) for k in ("red", "tid", "nt", "s")}
    code = _BLOCK_SUM.format(**names) + "cuda.syncthreads()\n".join(
        _ONE_SUM.format(acc=acc, array=array, index=index, **names)
        for (array, index), acc in sums.items())
    init = [ir.assign(acc, ir.const(0.0)) for acc in sums.values()]
    return init + backward, ast.parse(code).body


def atomic_shadow_updates(stmts, shadows, ownership, arrays_of, plain=frozenset()):
    """`x_bar[j] += v` on a shadow becomes cuda.atomic.add(x_bar, j, v) unless no other
    thread touches x[j] (analysis/races.py) or the shadow is gathered (`plain`: each thread
    updates only its own elements, codegen/gather.py). A zeroing `x_bar[j] = 0.0` (the
    adjoint of overwriting x[j]) stays: in a race-free kernel the element a thread writes is
    its own."""
    def atomic(s):
        if not (isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Subscript) and
                isinstance(s.target.value, ast.Name) and s.target.value.id in shadows
                and s.target.value.id not in plain):
            return s
        target = s.target
        if ownership.exclusive(arrays_of[target.value.id], ir.index_atoms(target)):
            return s
        value = s.value if isinstance(s.op, ast.Add) else \
            ast.UnaryOp(op=ast.USub(), operand=s.value)
        return ir.atomic_add(target.value.id, target.slice, value, ir.note(s, "origin", None))
    return ir.rewrite_blocks(stmts, lambda block: [atomic(s) for s in block])


def _is_atomic(s):
    return isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and \
        ir.unparse(s.value.func) == "cuda.atomic.add" and isinstance(s.value.args[0], ast.Name)


def loop_atomics(stmts, namegen):
    """Atomic adds in the backward sweep's loops, made cheaper (each choice shows in `.source`).

    - An atomic add whose element does not change in the loop (`pos_bar[i, 0]` in a thread's
      loop over the other atoms `j`) adds into a local sum instead, and the sum goes to
      memory once after the loop: one atomic per thread where there was one per iteration.
      This needs the loop to leave that shadow alone otherwise (no read of it, no barrier
      after which another thread could read it, no `return` skipping the flush).
    - Every other atomic add in a loop is skipped when it adds zero: in a loop behind a
      branch (a cutoff radius, a mask) most iterations' adjoints are zero, and an atomic add
      costs a memory round trip where the test costs nothing. Adding 0.0 changes no value.
    """
    flushed = set()

    def visit(block):
        out = []
        for s in block:
            for field in ("body", "orelse"):
                inner = getattr(s, field, None)
                if isinstance(inner, list) and inner:
                    setattr(s, field, visit(inner))
            if isinstance(s, (ast.For, ast.While)):
                out.extend(_hoist_invariant(s, namegen, flushed))
            else:
                out.append(s)
        return out

    def guard(block, in_loop):
        out = []
        for s in block:
            loop = in_loop or isinstance(s, (ast.For, ast.While))
            for field in ("body", "orelse"):
                inner = getattr(s, field, None)
                if isinstance(inner, list) and inner:
                    setattr(s, field, guard(inner, loop))
            if in_loop and _is_atomic(s) and id(s) not in flushed:
                out.extend(_skip_zero(s, namegen))
            else:
                out.append(s)
        return out
    return guard(visit(stmts), False)


def _skip_zero(s, namegen):
    call = s.value
    value = call.args[2]
    pre = []
    if not isinstance(value, (ast.Name, ast.Constant)):
        v = namegen.fresh("_add")
        pre = [ir.assign(v, value, ir.note(s, "origin", None))]
        call.args[2] = value = ir.name(v)
    if isinstance(value, ast.Constant):
        return [s]
    return pre + [ir.if_nonzero(value.id, [s])]


def _hoist_invariant(loop, namegen, flushed):
    """[sums set to 0, the loop adding into them, the sums' atomic adds] (see loop_atomics)."""
    body = loop.body + loop.orelse
    if any(ir.is_barrier(s) or isinstance(s, ast.Return) for s in ir.walk_stmts(body)):
        return [loop]
    stored = {n.id for n in ir.walk(loop)
              if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    atomics = [s for s in ir.walk_stmts(body) if _is_atomic(s)]
    # a shadow named in the loop other than as the array of its atomic adds keeps them
    named, by_array = {}, {}
    for s in body:
        for n in ir.walk(s):
            if isinstance(n, ast.Name):
                named[n.id] = named.get(n.id, 0) + 1
    for s in atomics:
        by_array[s.value.args[0].id] = by_array.get(s.value.args[0].id, 0) + 1
    invariant = _invariant_values(loop, stored)
    sums, replaced = {}, {}
    for s in atomics:
        array = s.value.args[0].id
        index = invariant(s.value.args[1])
        if named.get(array) != by_array[array] or index is None:
            continue
        key = (array, ir.unparse(index))
        if key not in sums:
            sums[key] = (namegen.fresh("_acc"), index, ir.note(s, "origin", None))
        add = ast.AugAssign(target=ir.store(sums[key][0]), op=ast.Add(), value=s.value.args[2])
        ir.annotate(add, origin=ir.note(s, "origin", None))
        replaced[id(s)] = add
    if not sums:
        return [loop]
    for field in ("body", "orelse"):
        if getattr(loop, field):
            setattr(loop, field, ir.rewrite_blocks(
                getattr(loop, field), lambda block: [replaced.get(id(s), s) for s in block]))
    init = [ir.assign(acc, ir.const(0.0)) for acc, _, _ in sums.values()]
    flush = []
    for (array, _), (acc, index, origin) in sums.items():
        add = ir.atomic_add(array, index, ir.name(acc), origin)
        flushed.add(id(add))
        flush.append(ir.annotate(ir.if_nonzero(acc, [add]), origin=origin, comment=(
            f"the loop's adds into {array}[{_index_text(index)}], summed: one atomic add")))
    return init + [loop] + flush


_PURE = (ast.BinOp, ast.UnaryOp, ast.Constant, ast.Name, ast.Tuple, ast.operator,
         ast.unaryop, ast.expr_context)


def _invariant_values(loop, stored):
    """invariant(expr): `expr` with the names the loop assigns replaced by what they hold,
    where that is the same in every iteration (`_t6 = i // 2`, assigned once in the loop
    from names it does not assign), so it can be evaluated after the loop; None where the
    value may change from one iteration to the next."""
    defs = {}
    for s in ir.walk_stmts(loop.body):
        if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name):
            defs.setdefault(s.targets[0].id, []).append(s.value)
    memo = {}

    def value(name):
        if name not in stored:
            return ir.name(name)
        if name in memo:
            return memo[name]
        memo[name] = None                       # (a cycle: not invariant)
        found = defs.get(name, [])
        if len(found) == 1 and name != getattr(loop, "target", ast.Name(id="")).id and \
                all(isinstance(n, _PURE) for n in ir.walk(found[0])):
            memo[name] = expression(found[0])
        return memo[name]

    def expression(expr):
        for n in ir.walk(expr):
            if isinstance(n, ast.Name) and value(n.id) is None:
                return None
        return _SubstituteNames(value).visit(copy.deepcopy(expr))
    return expression


class _SubstituteNames(ast.NodeTransformer):
    def __init__(self, value):
        self.value = value

    def visit_Name(self, node):
        return copy.deepcopy(self.value(node.id))


def _index_text(index):
    return ", ".join(ir.unparse(e) for e in index.elts) if isinstance(index, ast.Tuple) \
        else ir.unparse(index)


def late_zeroing(stmts, shadows):
    """A consumed output shadow (`out_bar[i] = 0.0` right after `g = out_bar[i]`) is zeroed
    at the end of its block instead, once the thread's arithmetic has used what it read: the
    store then no longer follows the load of the same element at once. Only where nothing
    after it in the block names that shadow, reassigns its index, synchronizes or leaves the
    block early (`break`, `continue`, `return`: the moved store would not run)."""
    def is_zeroing(s):
        return isinstance(s, ast.Assign) and ir.is_store(s) and \
            s.targets[0].value.id in shadows and isinstance(s.value, ast.Constant)

    def rewrite(block):
        kept, moved = [], []
        for k, s in enumerate(block):
            if is_zeroing(s):
                later = block[k + 1:]
                shadow = s.targets[0].value.id
                index = {n.id for n in ir.walk(s.targets[0].slice) if isinstance(n, ast.Name)}
                names = {n.id for t in later for n in ir.walk(t) if isinstance(n, ast.Name)}
                stored = {n.id for t in later for n in ir.walk(t)
                          if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
                jumps = any(isinstance(n, (ast.Break, ast.Continue, ast.Return))
                            for t in later for n in ir.walk(t))
                if later and shadow not in names and not index & stored and not jumps and \
                        not any(ir.is_barrier(t) for t in ir.walk_stmts(later)):
                    moved.append(s)
                    continue
            kept.append(s)
        return kept + moved
    return ir.rewrite_blocks(stmts, rewrite)
