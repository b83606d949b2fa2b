"""The gather form of a CUDA stencil's adjoint.

The adjoint of `out[i] = f(x[i - 1], x[i], x[i + 1])` computed by thread i scatters into
three elements of x_bar, two of which other threads add to as well: atomic adds, several per
point. A hand-written adjoint gathers instead: thread i computes every term that lands in its
own x_bar[i] (the term of its own point, and those the points i + 1 and i - 1 would scatter
to it) and stores their sum with one plain update. For a kernel whose every thread's work is
a function of its grid index, adjit does the same: the adjoint kernel runs, after its own
point's adjoint, the adjoint of each neighbouring point whose scatter reaches its element
(the same statements with the thread index shifted by the offset, keeping only that
scatter), guarded by the neighbour's being a thread of the launch.

Reading a neighbour's cotangent `out_bar[i + 1]` while its owner consumes it (`out_bar[i + 1]
= 0`) would race, so the gather kernel leaves the output shadows alone and a second kernel
of the same grid zeroes what the first one read (the launch runs both).

Applies to kernels with no loops, shared or local arrays, barriers or atomics; whose outputs
are only written, and whose differentiated input is only read, at indices that are the
thread's own grid index plus constant offsets (every grid axis the kernel reads told apart);
which read the thread index only to form that grid index, with the axes in the same
dimensions at every read of an array (not `u[i, j]` and `u[j, i]`); and where no thread
stores into an array twice (outside the two branches of one `if`). Otherwise the adjoint
keeps its atomic scatter. A thread's own element's terms add up in a local and go to memory
with one update.
"""
import ast
import copy

from .. import ir
from ..analysis.races import AXES
from ..reverse.dce import eliminate_dead
from .assemble import _scratch

_RAW = ("threadIdx", "blockIdx")


class Gather:
    """The plan of a gather-form adjoint: `offsets` {array: set of offset tuples} per
    gathered array, `axes` the grid axes in index order."""

    def __init__(self, arrays, axes):
        self.arrays = arrays
        self.axes = axes


def plan(stmts, forward, backward, ownership, wrt, written, bar):
    """A Gather when the kernel qualifies (see the module), else None."""
    if any(isinstance(s, (ast.For, ast.While)) or ir.is_barrier(s) or ir.note(s, "atomic", False)
           or isinstance(s, ast.Expr) and "atomic" in ir.unparse(s.value)
           for s in ir.walk_stmts(stmts + forward)):
        return None
    if ownership.shared or any(isinstance(s, ast.Assign) and isinstance(s.value, ast.Call)
                               and _scratch(s.value.func) for s in ir.walk_stmts(stmts)):
        return None
    loaded = {s.value.value.id for s in ir.walk_stmts(stmts) if isinstance(s, ast.Assign)
              and isinstance(s.value, ast.Subscript) and isinstance(s.value.value, ast.Name)}
    if set(written) & loaded or _stored_twice(stmts):
        return None
    if not _thread_index_only_in_grid_index(forward, ownership):
        return None
    axes = [t for t in (AXES["x"][0], AXES["y"][0], AXES["z"][0]) if t in ownership.coords]
    arrays = {}
    for q in wrt:
        if q in written:
            continue
        updates = [s for s in ir.walk_stmts(backward) if _updates(s, bar(q))]
        if not updates:
            continue
        offsets = set()
        for s in updates:
            off = _offset(s.target, ownership, axes) if isinstance(s, ast.AugAssign) and \
                isinstance(s.op, ast.Add) else None
            if off is None:
                offsets = None
                break
            offsets.add(off)
        # u[i, j] and u[j, i] both read at offset 0: thread (i, j)'s update of u_bar[j, i]
        # is thread (j, i)'s own element, so it cannot be a plain update
        if offsets and len({_layout(s.target, ownership) for s in updates}) > 1:
            offsets = None
        if offsets and any(any(c) for c in offsets):
            arrays[q] = offsets
    if not arrays:
        return None
    # (any other write into a gathered shadow, a zeroing, say, keeps the scatter)
    for s in ir.walk_stmts(backward):
        if isinstance(s, ast.Assign) and ir.is_store(s) and \
                s.targets[0].value.id in {bar(q) for q in arrays}:
            return None
    return Gather(arrays, axes)


def _stored_twice(stmts):
    """Whether a thread may store into an array twice (not in two branches of one `if`):
    the earlier store's adjoint must then see the shadow the later one consumed, which the
    gather form, leaving the output shadows to its second kernel, does not do."""
    stores = {}

    def visit(block, path):
        for s in block:
            if isinstance(s, ast.Assign) and ir.is_store(s):
                stores.setdefault(s.targets[0].value.id, []).append(path)
            elif isinstance(s, ast.If):
                visit(s.body, path + ((id(s), 0),))
                visit(s.orelse, path + ((id(s), 1),))

    def exclusive(p, q):
        branch = dict(p)
        return any(k in branch and branch[k] != v for k, v in q)

    visit(stmts, ())
    return any(not exclusive(p, q) for paths in stores.values()
               for k, p in enumerate(paths) for q in paths[k + 1:])


def _updates(s, shadow):
    target = getattr(s, "target", None) if isinstance(s, ast.AugAssign) else None
    return isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and \
        target.value.id == shadow


def _offset(sub, ownership, axes):
    """The constant offset of an index from the thread's own grid index, per axis in
    `axes` order, or None."""
    index = ownership.index(sub)
    if len(index) != len(axes) or any(d is None for d in index):
        return None
    out = {}
    for d in index:
        axis = _axis_of(d)
        if axis is None or axis not in axes or axis in out:
            return None
        out[axis] = dict(d.terms).get((), 0)
    return tuple(out[t] for t in axes)


def _thread_index_only_in_grid_index(forward, ownership):
    """Whether the kernel reads cuda.threadIdx / cuda.blockIdx / cuda.grid only to compute an
    axis' grid index (so shifting threadIdx shifts the thread): each statement reading them,
    and each reading a part of a grid index (`_t1 = cuda.blockIdx.x`), computes a grid index
    or such a part only for statements of the same kind."""
    canonical = {(t,) for t, _ in AXES.values()}
    readers = {}
    for s in ir.walk_stmts(forward):
        for n in ir.load_names(s) if not isinstance(s, (ast.If, ast.For, ast.While)) \
                else ir.load_names(getattr(s, "test", None) or s.iter):
            readers.setdefault(n.id, []).append(s)
    memo = {}

    def ok(s):
        if not (isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name)):
            return False
        name = s.targets[0].id
        if name in memo:
            return memo[name]
        memo[name] = False
        v = ownership.value(s.targets[0])
        if v is None:
            return False
        if set(v.terms) <= canonical and list(v.terms.values()) == [1]:
            memo[name] = True
        elif v.symbols() & {f"${r}.{a}" for r in _RAW for a in "xyz"}:
            memo[name] = all(ok(r) for r in readers.get(name, []))
        return memo[name]
    return all(ok(s) for s in ir.walk_stmts(forward) if _reads_thread_identity(s))


def _reads_thread_identity(s):
    if isinstance(s, (ast.If, ast.For, ast.While)):
        nodes = [s.test] if isinstance(s, (ast.If, ast.While)) else [s.iter]
    else:
        nodes = [s]
    for node in nodes:
        for n in ir.walk(node):
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and \
                    n.value.id == "cuda" and n.attr in _RAW + ("grid",):
                return True
    return False


class _Shift(ast.NodeTransformer):
    """cuda.threadIdx.a -> (cuda.threadIdx.a - c_a) and cuda.grid(1) -> (cuda.grid(1) - c)."""

    def __init__(self, shift):
        self.shift = shift          # {"x": c, ...}

    def visit_Attribute(self, node):
        if isinstance(node.value, ast.Attribute) and isinstance(node.value.value, ast.Name) \
                and node.value.value.id == "cuda" and node.value.attr == "threadIdx" \
                and self.shift.get(node.attr):
            return _minus(node, self.shift[node.attr])
        return self.generic_visit(node)

    def visit_Call(self, node):
        self.generic_visit(node)
        if ir.unparse(node.func) == "cuda.grid" and self.shift.get("x"):
            return _minus(node, self.shift["x"])
        return node


def _minus(node, k):
    """node - k, spelled node + |k| for a negative k."""
    return ast.BinOp(left=node, op=ast.Sub() if k > 0 else ast.Add(), right=ir.const(abs(k)))


def _axis_letter(t):
    return next(a for a, (sym, _) in AXES.items() if sym == t)


def gather_kernel(g, forward, backward, bar, outputs, ownership, shadows, namegen):
    """(the backward sweep of the gather kernel, the body of the kernel that zeroes the
    output shadows it read). `forward` is the forward sweep; `backward` the adjoint before
    atomic updates. The terms of the thread's own element add up in a local (`_g1 += ...`),
    stored with one update at the end (a hand-written adjoint's one read-modify-write per
    point, not one per neighbour: the compiler cannot merge updates through memory that may
    alias)."""
    gathered = {bar(q): offsets for q, offsets in g.arrays.items()}
    out_bars = {bar(q) for q in outputs}
    sums = {}
    for b in gathered:          # (plan() saw to one layout per gathered array)
        layout = next(_layout(s.target, ownership) for s in ir.walk_stmts(backward)
                      if _updates(s, b))
        sums[b] = (namegen.fresh("_g"), layout)

    def summed(s):
        b = s.target.value.id
        if b not in sums:
            return s
        add = ast.AugAssign(target=ir.store(sums[b][0]), op=ast.Add(), value=s.value)
        return ir.copy_notes(s, add, ("origin",))

    def is_zeroing(s):
        return isinstance(s, ast.Assign) and ir.is_store(s) and \
            s.targets[0].value.id in out_bars

    def own(s):
        return _offset(s.target, ownership, g.axes) if any(
            _updates(s, b) for b in gathered) else None

    def keep_real(s):
        if is_zeroing(s):
            return []
        if any(_updates(s, b) for b in gathered) and any(own(s)):
            # an element whose own thread is not in the launch (beyond the grid, or at a
            # negative index, which wraps around): nobody gathers it, so it is scattered
            tests = []
            for t, k in zip(g.axes, own(s)):
                if k:
                    a = _axis_letter(t)
                    v = f"cuda.blockIdx.{a} * cuda.blockDim.{a} + cuda.threadIdx.{a} " + \
                        (f"+ {k}" if k > 0 else f"- {-k}")
                    tests.append(f"not 0 <= {v} < cuda.blockDim.{a} * cuda.gridDim.{a}")
            guard = ir.parse(f"if {' or '.join(tests)}:\n    pass")[0]
            value = s.value if isinstance(s.op, ast.Add) else \
                ast.UnaryOp(op=ast.USub(), operand=s.value)
            guard.body = [ir.atomic_add(s.target.value.id, s.target.slice, value,
                                        ir.note(s, "origin", None))]
            ir.annotate(guard, origin=ir.note(s, "origin", None))
            return [guard]
        if any(_updates(s, b) for b in gathered):
            return [summed(s)]
        return [s]
    real = _filter(copy.deepcopy(backward), keep_real)
    zero = eliminate_dead(_filter(copy.deepcopy(forward), _no_calls) + _filter(copy.deepcopy(backward),
                                                            lambda s: [s] if is_zeroing(s)
                                                            or not _is_shadow_write(s, shadows)
                                                            else []),
                          set(), out_bars)
    shifts = sorted({c for offsets in gathered.values() for c in offsets if any(c)})
    for c in shifts:
        def keep_virtual(s, c=c):
            if is_zeroing(s):
                return []
            if any(_updates(s, b) for b in gathered):
                return [summed(s)] if own(s) == c else []
            return [] if _is_shadow_write(s, shadows) else [s]
        body = _filter(copy.deepcopy(forward), lambda s: [] if ir.is_store(s) or
                       isinstance(s, ast.Expr) else [s]) + \
            _filter(copy.deepcopy(backward), keep_virtual)
        body = eliminate_dead(body, {acc for acc, _ in sums.values()}, set(gathered))
        shift = {_axis_letter(t): k for t, k in zip(g.axes, c)}
        body = [_Shift(shift).visit(s) for s in body]
        tests = []
        for t, k in zip(g.axes, c):
            if k:
                a = _axis_letter(t)
                v = f"cuda.blockIdx.{a} * cuda.blockDim.{a} + cuda.threadIdx.{a} " + \
                    (f"- {k}" if k > 0 else f"+ {-k}")
                tests.append(f"0 <= {v} < cuda.blockDim.{a} * cuda.gridDim.{a}")
        guard = ir.parse(f"if {' and '.join(tests)}:\n    pass")[0]
        guard.body = body or [ast.Pass()]
        label = ", ".join(f"{_axis_letter(t)}{-k:+d}" for t, k in zip(g.axes, c) if k)
        ir.annotate(guard, comment=f"the neighbour at {label}: its adjoint's terms that land "
                    "in this thread's elements")
        real.append(guard)
    for b, (acc, layout) in sums.items():
        index = ", ".join(f"cuda.blockIdx.{a} * cuda.blockDim.{a} + cuda.threadIdx.{a}"
                          for a in map(_axis_letter, layout))
        flush = ir.if_nonzero(acc, ir.parse(f"{b}[{index}] += {acc}"))
        ir.annotate(flush, comment=f"this thread's element of {b}: its terms, summed, added once")
        real.append(flush)
    init = [ir.assign(acc, ir.const(0.0)) for acc, _ in sums.values()]
    return init + real, zero


def _layout(sub, ownership):
    """The grid axis symbol of each dimension of an index (see _axis_of)."""
    return tuple(_axis_of(d) for d in ownership.index(sub))


def _axis_of(poly):
    """The grid axis symbol an index is the grid index of plus a constant, or None."""
    if poly is None:
        return None
    terms = dict(poly.terms)
    terms.pop((), None)
    if len(terms) != 1:
        return None
    (mono, coeff), = terms.items()
    return mono[0] if coeff == 1 and len(mono) == 1 else None


def _is_shadow_write(s, shadows):
    """Whether a statement updates or stores into an array's shadow."""
    target = s.target if isinstance(s, ast.AugAssign) else \
        s.targets[0] if isinstance(s, ast.Assign) else None
    return isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and \
        target.value.id in shadows


def _no_calls(s):
    """Drops statements made for their effect (the zeroing kernel runs nothing twice)."""
    return [] if isinstance(s, ast.Expr) else [s]


def _filter(stmts, keep):
    out = []
    for s in stmts:
        if isinstance(s, ast.If):
            s.body = _filter(s.body, keep) or [ast.Pass()]
            s.orelse = _filter(s.orelse, keep)
            out.append(s)
        else:
            out += keep(s)
    return out
