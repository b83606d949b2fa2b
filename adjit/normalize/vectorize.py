"""Vectorized numpy, lowered to fused loops over elements.

An array expression (`np.exp(x - m) * w[1:]`, broadcasting, slices, `.T`) is first built as
a lazy tree: leaves are *views* of array variables (an index map: slices, fixed indices,
new axes, transposes) or scalars, inner nodes are elementwise operations. Nothing is
computed until the tree is consumed: assigned to a name or a slice, reduced, or passed to
something that needs an array. Then it becomes one loop nest whose body computes one element
of the whole expression in scalar code, the form the reverse pass handles best: reductions
fuse into the same loop, intermediate arrays do not exist, and each adjoint loop mirrors it.

Matrix products of two matrices stay at array level (`vec.mm`, BLAS). Slices, rows,
transposes, reshapes and gathers are index maps onto their base array (normalize/views.py).
Everything else becomes element loads, scalar math and element stores.
Broadcasting follows numpy: sizes are combined at run time by `vec.bcast` (which raises
numpy's ValueError for incompatible shapes) and a dimension that may be broadcast indexes
with `i * vec.stride(n, size)`.
"""
import ast
import math

import numpy as np

from ..rules.table import DECLARED_ALLOCATORS
from ..runtime import vec
from .. import ir
from .values import Copied

ONE = None      # a dimension of static length 1 (a new axis, or a literal length 1)


class Lazy:
    """An array expression not yet computed; `shape` lists a size atom (or ONE) per dim."""


def array_valued(v):
    """Whether a normalized value is an array (a lazy expression with dimensions), not a
    number."""
    return isinstance(v, Lazy) and not isinstance(v, Scalar)


class Scalar(Lazy):
    def __init__(self, atom):
        self.atom = atom
        self.shape = []


class View(Lazy):
    """Elements of the array variable `base`: `dims[j]` is (base dim, start atom, step
    atom) for result dim j, None for a new axis, or a views.Take (a gather); `fixed` maps
    base dims to index atoms. With a `parent` View (a reshape), the base dims are the one
    flat C-order position within the parent (ndim 1). See normalize/views.py."""

    def __init__(self, base, ndim, dims, fixed, shape, whole=None, parent=None,
                 contiguous=False):
        self.base = base
        self.ndim = ndim
        self.dims = dims
        self.fixed = fixed
        self.shape = shape
        self.whole = whole      # "identity" or "transpose" for the whole array, else None
        self.parent = parent
        self.contiguous = contiguous    # known to be C-contiguous (a reshape is a view)

    def is_identity(self):
        return self.whole == "identity"

    def is_transpose(self):
        return self.whole == "transpose"


UNLESS = ("call", "unless")
"""The elementwise op UNLESS(test, fill, value): fill where test holds, else value, whose
elements are computed only where the test fails (Arrays.unless_at)."""


class Op(Lazy):
    def __init__(self, fn, args, shape):
        self.fn = fn
        self.args = args
        self.shape = shape


_FOLD = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
         ast.Mult: lambda a, b: a * b, ast.FloorDiv: lambda a, b: a // b,
         ast.Mod: lambda a, b: a % b}


def _is_const(atom, value):
    return isinstance(atom, ast.Constant) and atom.value == value and \
        not isinstance(atom.value, bool)


def _key(atom):
    return ("c", atom.value) if isinstance(atom, ast.Constant) else ("n", atom.id)


def _same(a, b):
    if a is ONE or b is ONE:
        return a is b
    return _key(a) == _key(b)


def leaves(v):
    if isinstance(v, Op):
        for a in v.args:
            yield from leaves(a)
    else:
        yield v


class Vectorizer:
    """The normalizer's part (`norm.arrays`) that writes array expressions as loops, with
    the normalizer (`n`) it writes through."""

    def __init__(self, norm):
        self.n = norm

    # kinds ------------------------------------------------------------------
    def array_ndim(self, atom):
        if isinstance(atom, ast.Name):
            info = self.n.ctx.arrays.get(atom.id)
            if info is not None:
                return info[0]
        return None

    def note_array(self, name, ndim, dtype="f"):
        self.n.ctx.arrays[name] = (ndim, dtype)

    def add_temp(self, name):
        """Record an array the vectorizer allocates (and fills completely, once)."""
        self.n.ctx.vec_temps.add(name)
        if self.n.ctx.loop_depth == 0:
            self.n.ctx.vec_temps.write_once.add(name)

    def shape_atom(self, name, k, out):
        key = (id(out), name, k)
        cached = self.n.shape_cache.get(key)
        if cached is not None:
            return cached
        sub = ast.Subscript(value=ast.Attribute(value=ir.name(name), attr="shape",
                                                ctx=ast.Load()),
                            slice=ir.const(k), ctx=ast.Load())
        atom = self.n.to_atom(out, sub, "_n")
        self.n.shape_cache[key] = atom
        return atom

    def view_of(self, name, out):
        ndim = self.array_ndim(ir.name(name))
        shape = [self.shape_atom(name, k, out) for k in range(ndim)]
        return View(name, ndim, [(k, ir.const(0), ir.const(1)) for k in range(ndim)], {},
                    shape, "identity", None, self.n.ctx.layouts.get(name, "C") == "C")

    def lazy_operand(self, value, out):
        """An atom or Lazy, with array names turned into views."""
        if isinstance(value, Lazy):
            return value
        atom = self.n.to_atom(out, value)
        if self.array_ndim(atom) is not None:
            return self.view_of(atom.id, out)
        return atom

    def as_lazy(self, v):
        return v if isinstance(v, Lazy) else Scalar(v)

    # building trees ---------------------------------------------------------
    def broadcast(self, shapes, out, node):
        d = max((len(s) for s in shapes), default=0)
        result = []
        for j in range(d):
            sizes = []
            for s in shapes:
                k = j - (d - len(s))
                if k >= 0 and s[k] is not ONE and not any(_same(s[k], u) for u in sizes):
                    sizes.append(s[k])
            consts = [s.value for s in sizes if isinstance(s, ast.Constant)]
            if len(set(consts)) > 1:
                raise self.n.error(node, f"operands of lengths {' and '.join(map(str, consts))} "
                                   "cannot be broadcast together",
                                   "Use arrays whose shapes broadcast (numpy's rules).")
            if not sizes:
                result.append(ONE)
                continue
            acc = sizes[0]
            for u in sizes[1:]:
                acc = self.n.to_atom(out, self.vcall(vec.bcast, [acc, u]), "_n")
            result.append(acc)
        return result

    def vcall(self, fn, args):
        spelled = ast.parse(self.n.ctx.env.spell(fn, "f"), mode="eval").body
        return ast.Call(func=spelled, args=list(args), keywords=[])

    def elementwise(self, fn, args, out, node):
        args = [self.lazy_operand(a, out) for a in args]
        if not any(isinstance(a, Lazy) for a in args):
            return None
        lz = [self.as_lazy(a) for a in args]
        return Op(fn, lz, self.broadcast([a.shape for a in lz], out, node))

    def apply(self, fn, args, out, node):
        """fn applied to numbers or arrays: a lazy array where any operand is one (numpy's
        broadcasting), else the scalar operation, as an atom."""
        lazy = self.elementwise(fn, args, out, node)
        if lazy is not None:
            return lazy
        return self.scalar_op(fn, [self.n.to_atom(out, a) for a in args], out)

    def ufunc_call(self, node, ufunc, kernel, out):
        """A call of a numba `@vectorize` ufunc: its scalar kernel, inlined, on numbers; on
        arrays an elementwise operation like any other (numpy's broadcasting), whose loop
        body is the kernel inlined on one element of each operand."""
        name = ast.unparse(node.func)
        if node.keywords:
            raise self.n.error(node, f"the keyword argument `{node.keywords[0].arg}=` of the "
                               f"ufunc `{name}`",
                               f"Call {name} with its operands only and assign the result "
                               "(`y[:] = f(x)` writes into an array).")
        if len(node.args) != ufunc.nin:
            raise self.n.error(node, f"the ufunc `{name}` called with {len(node.args)} "
                               f"operand(s)", f"It takes {ufunc.nin}.")
        operands = self.n.operands(node.args, out)
        kinds = [self.n.indexing.lazy_dtype(self.as_lazy(a)) for a in operands]
        if any(isinstance(a, Lazy) for a in operands) and all(k in "ib" for k in kinds):
            # integers in, no derivative out: numba's own call, with numba's result dtype
            return self.n.calls.opaque_call(node, ufunc, out)
        lazy = self.elementwise(("kernel", kernel), operands, out, node)
        if lazy is not None:
            return lazy
        return self.scalar_op(("kernel", kernel), [self.n.to_atom(out, a) for a in operands],
                              out)

    def transpose(self, v, out, axes=None, node=None):
        """v.T, np.transpose(v) (dimensions reversed) or with `axes` (result dimension j is
        v's dimension axes[j]): a view with its dimensions permuted, never a copy."""
        if isinstance(v, Scalar) or not isinstance(v, Lazy):     # a number
            if axes:
                raise self.n.error(node, "transposing a scalar with axes",
                                   "Transpose arrays; a number has no axes.")
            return v
        if not isinstance(v, View):
            v = self.view_of(self.materialize(v, out).id, out)
        d = len(v.shape)
        if axes is None:
            axes = list(reversed(range(d)))
        axes = [a + d if isinstance(a, int) and -d <= a < 0 else a for a in axes]
        if sorted(axes) != list(range(d)):
            raise self.n.error(node, f"axes {tuple(axes)} for a {d}-D array",
                               f"Give a permutation of 0..{d - 1} (np.transpose(x, (1, 0, 2))).")
        whole = v.whole
        if axes != list(range(d)):
            flip = d == 2 and v.ndim == 2 and len(v.dims) == 2
            whole = {"identity": "transpose", "transpose": "identity"}.get(v.whole) \
                if flip else None
        moved = [a for k, a in enumerate(axes) if a != k and v.shape[a] is not ONE]
        return View(v.base, v.ndim, [v.dims[a] for a in axes], v.fixed,
                    [v.shape[a] for a in axes], whole, v.parent, v.contiguous and not moved)

    def slice_bounds(self, e, n, out):
        """(start, length, step) atoms of slice `e` on a dimension of length atom n."""
        step = self.n.atom(e.step, out) if e.step is not None else ir.const(1)
        lo = self.n.atom(e.lower, out) if e.lower is not None else None
        hi = self.n.atom(e.upper, out) if e.upper is not None else None
        if _is_const(step, 1) and lo is None and hi is None:
            return ir.const(0), n, step
        args = [n, lo or ir.const(0), hi or ir.const(0), step,
                ir.const(int(lo is not None)), ir.const(int(hi is not None))]
        key = (id(out), "slice") + tuple(_key(a) for a in args)
        if key in self.n.shape_cache:
            return self.n.shape_cache[key]
        start = ir.const(0) if lo is None and isinstance(step, ast.Constant) and \
            step.value > 0 else self.n.to_atom(out, self.vcall(vec.slice_start, args))
        length = self.n.to_atom(out, self.vcall(vec.slice_len, args), "_n")
        self.n.shape_cache[key] = (start, length, step)
        return start, length, step

    # computing trees ----------------------------------------------------------
    def bind_lazy(self, name, v, user_name):
        """Keep `name = v` unevaluated: its one later use fuses v into its own loop."""
        v.binding = name
        v.user_name = user_name
        v.origin = self.n.origin
        self.n.lazy[name] = v

    def flush_lazy(self, out, base=None):
        """Compute pending lazy arrays (those reading `base`: an array they index or
        gather by, a number; or all) before a write into it or a binding of its name."""
        for name, v in list(self.n.lazy.items()):
            if isinstance(v, Lazy) and (base is None or base in self.n.lazy_reads(v)):
                self.materialize(v, out)

    def materialize(self, v, out, node=None, copy=False):
        """The array name holding Lazy `v` (a new array unless `v` is a whole variable and
        no `copy` is asked for)."""
        binding = getattr(v, "binding", None)
        if binding is not None and self.n.lazy.get(binding) is v:
            # a lazily bound name: computed now, under its own name, once
            del self.n.lazy[binding]
            self.n.lazy[binding] = ir.name(binding)
            # (at the line that bound it: what is said of the array is said there, not at
            # the statement that has it computed now)
            now, self.n.origin = self.n.origin, getattr(v, "origin", None) or self.n.origin
            try:
                self.materialize_into(v, binding, out, node)
            finally:
                self.n.origin = now
            if v.user_name in self.n.lazy_ok:     # (not a name bound again: _relays)
                self.n.ctx.vec_temps.add(binding)
            if self.n.ctx.loop_depth == 0 and v.user_name in self.n.lazy_once:
                self.n.ctx.vec_temps.write_once.add(binding)
            return ir.name(binding)
        if isinstance(v, View) and v.is_identity() and not copy:
            return ir.name(v.base)
        name = self.n.fresh("_a")
        self.materialize_into(v, name, out, node)
        self.add_temp(name)
        return ir.name(name)

    def materialize_into(self, v, name, out, node=None):
        if isinstance(v, Scalar):
            raise self.n.error(node or self.n.src.tree, "a scalar used where an array is needed",
                               "Pass an array.")
        shape = self.allocate(name, v.shape, out, self.n.indexing.lazy_dtype(v))
        target = View(name, len(shape), [(k, ir.const(0), ir.const(1))
                                         for k in range(len(shape))], {}, list(v.shape))
        self.store_elements(target, v, out, node)
        stops = getattr(v, "stops", None)
        if stops is not None:
            # stop_gradient of an array: numba's gives the array itself, this is a copy
            # (joins.check_frozen refuses a write into either that the other would show)
            origin = getattr(v, "origin", None) or self.n.origin
            user = v.user_name if getattr(v, "binding", None) == name else None
            self.n.ctx.frozen.append(Copied([stops], name, [out[-1]], user, origin,
                                            origin[1] if origin else 0, True))

    def store_elements(self, target, value, out, node=None):
        """target[...] = value elementwise, value broadcast to the target's shape."""
        value = self.as_lazy(value)
        if self.n.lazy:
            # pending arrays that read the target are computed before the loops that write
            # it (emit_assign's flush would put them inside, reading half-written data)
            self.flush_lazy(out, target.base)
        # a value with more dimensions than the target (`states[0, :] = row2d`, a (1, 5)
        # array, as statsforecast's theta model stores its first state): numpy and numba
        # take its leading lengths of 1 away (checked when it runs: 1 or a ValueError)
        extra = max(0, len(value.shape) - len(target.shape))
        shape = [ONE] * extra + list(target.shape)
        for j, size in enumerate(value.shape):
            # the value broadcasts to the target: each of its lengths 1 or the target's (a
            # longer or shorter row was read with a stride of 0, silently)
            full = shape[j + len(shape) - len(value.shape)]
            if size is ONE or (full is not ONE and _same(size, full)):
                continue
            out.append(ir.annotate(ast.Expr(value=self.vcall(vec.check_assign, [
                ir.const(1) if full is ONE else full, size])), origin=self.n.origin))
        env = self.loop_env(shape, [target, value], out)

        def body(vars_, stmts):
            vars_ = [ir.const(0) for _ in range(extra)] + list(vars_)
            val = self.scalar_at(value, vars_, env, stmts)
            idx = self.leaf_index(target, vars_, env, stmts)
            sub = ast.Subscript(value=ir.name(target.base), slice=_index_node(idx),
                                ctx=ast.Store())
            self.n.emit_assign(stmts, sub, self.n.to_atom(stmts, val))

        self.nest(target.shape, list(range(len(target.shape))), out, body)

    def loop_env(self, shape, trees, out):
        """Stride flags (atoms, computed before the loops) for leaf dimensions whose length
        may differ from the loop's: {(leaf length, loop length): flag}."""
        flags = {}
        d = len(shape)
        for t in trees:
            for leaf in leaves(t):
                if not isinstance(leaf, View):
                    continue
                k = len(leaf.shape)
                for j, size in enumerate(leaf.shape):
                    full = shape[j + d - k]
                    if size is ONE or _same(size, full):
                        continue
                    key = (_key(size), _key(full) if full is not ONE else None)
                    if key not in flags:
                        flags[key] = self.n.to_atom(out, self.vcall(
                            vec.stride, [size, ir.const(1) if full is ONE else full]), "_f")
        return {"shape": shape, "flags": flags, "loads": {}}

    def nest(self, shape, order, out, body, pre=None, post=None):
        """Loops over `shape` in `order` of dimensions (outermost first); pre/post run in the
        body of the second-innermost loop around the innermost (for reductions)."""
        vars_ = [ir.const(0)] * len(shape)
        names = {}
        for j in order:
            if shape[j] is not ONE:
                names[j] = self.n.fresh("_i")
                vars_[j] = ir.name(names[j])

        def build(level, stmts):
            if level == len(order) - 1 and pre is not None:
                pre(vars_, stmts)
            if level == len(order):
                body(vars_, stmts)
                return
            j = order[level]
            if j not in names:
                build(level + 1, stmts)
            else:
                inner = []
                build(level + 1, inner)
                stmts.append(self.for_range(names[j], shape[j], inner))
            if level == len(order) - 1 and post is not None:
                post(vars_, stmts)

        if not order:
            if pre is not None:
                pre(vars_, out)
            body(vars_, out)
            if post is not None:
                post(vars_, out)
            return
        build(0, out)

    def for_range(self, var, n, body):
        call = ast.Call(func=ir.name("range"), args=[n], keywords=[])
        node = ast.For(target=ir.store(var), iter=call, body=body or [ast.Pass()], orelse=[],
                       lineno=0)
        ir.annotate(node, origin=self.n.origin)
        node._bounds = (ir.const(0), n, ir.const(1))
        return node

    def leaf_index(self, view, vars_, env, stmts):
        shape = env["shape"]
        d, k = len(shape), len(view.shape)
        per_dim = []
        for j, size in enumerate(view.shape):
            if size is ONE:
                per_dim.append(ir.const(0))
                continue
            i = vars_[j + d - k]
            full = shape[j + d - k]
            flag = env["flags"].get((_key(size), _key(full) if full is not ONE else None))
            if flag is not None:
                i = self.int_op(i, ast.Mult(), flag, env, stmts)
            per_dim.append(i)
        return self.n.indexing.map_index(view, per_dim, env, stmts)

    def int_op(self, a, op, b, env, stmts):
        """`a op b` on integer atoms, computed once per loop body (env None: no sharing);
        constants fold."""
        if isinstance(a, ast.Constant) and isinstance(b, ast.Constant) and \
                not (isinstance(op, (ast.FloorDiv, ast.Mod)) and b.value == 0):
            return ir.const(_FOLD[type(op)](a.value, b.value))
        if env is None:
            return self.n.to_atom(stmts, ast.BinOp(left=a, op=op, right=b))
        key = ("int", type(op).__name__, _key(a), _key(b), id(stmts))
        if key not in env["loads"]:
            env["loads"][key] = self.n.to_atom(stmts, ast.BinOp(left=a, op=op, right=b))
        return env["loads"][key]

    def scalar_at(self, v, vars_, env, stmts):
        """The atom holding v's element at the loop position (emitting its computation)."""
        if isinstance(v, Scalar):
            return v.atom
        if isinstance(v, View):
            idx = self.leaf_index(v, vars_, env, stmts)
            key = (v.base, tuple(_key(a) for a in idx), id(stmts))
            if key in env["loads"]:
                return env["loads"][key]
            atom = self.n.to_atom(stmts, ast.Subscript(value=ir.name(v.base),
                                                       slice=_index_node(idx), ctx=ast.Load()))
            env["loads"][key] = atom
            return atom
        key = ("op", id(v), id(stmts))
        if key in env["loads"]:         # a subexpression used twice (r2 * r2) is computed once
            return env["loads"][key]
        if v.fn == UNLESS:
            env["loads"][key] = self.unless_at(v, vars_, env, stmts)
            return env["loads"][key]
        args = [self.scalar_at(a, vars_, env, stmts) for a in v.args]
        env["loads"][key] = self.scalar_op(v.fn, args, stmts)
        return env["loads"][key]

    def unless_at(self, v, vars_, env, stmts):
        """UNLESS(test, fill, value) at the loop position: `fill` where the test holds,
        else the value computed inside that branch, so that its derivative flows there
        only (the test's own computation of the value, an operand of a comparison alone,
        carries none): np.nansum((pred - obs) ** 2) with a missing observation gives that
        element's operands no derivative, where 0 * NaN would have made it NaN."""
        test, fill, value = v.args
        cond = self.scalar_at(test, vars_, env, stmts)
        r = self.n.fresh()
        then, orelse = [], []
        for branch, part in ((then, fill), (orelse, value)):
            branch.append(ir.assign(r, self.scalar_at(part, vars_, env, branch), self.n.origin))
        self.n.emit_if(stmts, cond, then, orelse)
        return ir.name(r)

    def scalar_op(self, fn, args, stmts):
        kind = fn[0]
        if kind == "bin":
            return self.n.to_atom(stmts, ast.BinOp(left=args[0], op=fn[1], right=args[1]))
        if kind == "unary":
            return self.n.to_atom(stmts, ast.UnaryOp(op=fn[1], operand=args[0]))
        if kind == "cmp":
            return self.n.to_atom(stmts, ast.Compare(left=args[0], ops=[fn[1]],
                                                     comparators=[args[1]]))
        what = fn[1]
        if kind == "kernel":            # a @vectorize kernel on one element of each operand
            call = ast.Call(func=ir.name(what.__name__), args=[], keywords=[])
            return self.n.to_atom(stmts, self.n.inline(call, what, stmts, atoms=args))
        if what == "square":
            return self.n.to_atom(stmts, ast.BinOp(left=args[0], op=ast.Mult(), right=args[0]))
        if what == "pow":
            return self.n.to_atom(stmts, ast.BinOp(left=args[0], op=ast.Pow(), right=args[1]))
        if what == "neg":
            return self.n.to_atom(stmts, ast.UnaryOp(op=ast.USub(), operand=args[0]))
        if what == "where":
            r = self.n.fresh()
            self.n.emit_if(stmts, args[0], [ir.assign(r, args[1], self.n.origin)],
                           [ir.assign(r, args[2], self.n.origin)])
            return ir.name(r)
        if what == "clip":     # (a bound None is none: np.clip(x, None, 1.5), as numba)
            bounded = args[0]
            for bound, pick in ((args[1], max), (args[2], min)):
                if not (isinstance(bound, ast.Constant) and bound.value is None):
                    bounded = self.n.to_atom(stmts, self.vcall(pick, [bounded, bound]))
            if bounded is args[0]:
                where = ast.Pass(lineno=self.n.origin[1], col_offset=0)
                raise self.n.error(where, "np.clip with neither "
                                   "bound (both None)", "Give a bound (numba does not "
                                   "compile it either).")
            return bounded
        return self.n.to_atom(stmts, self.vcall(what, args))

    # reductions ---------------------------------------------------------------
    def reduce(self, how, v, axis, out, node, empty=None):
        """np.sum/mean/prod/max/min of v over all elements (axis None) or one axis. Of an
        integer or boolean array, sum, prod, max and min are integers, as numba's (max and
        min of booleans: booleans); sum and prod of float32 elements add in float32. `empty`:
        what max and min of no elements give, as numba does: a number (np.linalg.norm's 0.0,
        over all elements only), or the ValueError vec.check_reducible raises, named by its
        runtime/index.py constant (None: np.max's or np.min's own)."""
        if not isinstance(v, Lazy):
            return v if how != "mean" else v
        if isinstance(v, Scalar):
            return v.atom
        ndim = len(v.shape)
        if how in ("max", "min") and not isinstance(v, View):
            v = self.view_of(self.materialize(v, out, node).id, out)
        elements = self._accumulated_kind(how, v)
        if axis is not None and not -ndim <= axis < ndim:
            raise self.n.error(node, f"axis {axis} of a {ndim}-D array",
                               f"Use an axis from {-ndim} to {ndim - 1}.")
        reduced = list(range(ndim)) if axis is None else [axis % ndim]
        count = None            # (max and min: the number of elements, where it may be 0)
        if how in ("max", "min"):
            count = self.n.size_of([v.shape[j] for j in reduced], out)
            if isinstance(count, ast.Constant) and count.value > 0:
                count = None
        numbered = isinstance(empty, (int, float))
        assert not (numbered and axis is not None), "a number for no elements: axis None"
        if count is not None and not numbered:
            # numba raises for a largest value of no elements (the loop would give -inf)
            what = empty or ("EMPTY_MAX" if how == "max" else "EMPTY_MIN")
            out.append(ir.annotate(ast.Expr(value=self.vcall(vec.check_reducible, [
                count, _vec_constant(what)])), origin=self.n.origin))
        if axis is None:
            result = self._reduce_into(how, v, reduced, None, out, node, elements)
            if elements == "f32":       # (numba's sum of float32: a float64 of that value)
                result = self.n.to_atom(out, self.vcall(np.float64, [result]))
            if count is not None and numbered:
                named = self.n.fresh("_r")
                self.n.emit_assign(out, named, result)
                self.n.emit_if(out, ast.Compare(left=count, ops=[ast.Eq()],
                                                comparators=[ir.const(0)]),
                               [ir.assign(named, ir.const(float(empty)), self.n.origin)], [])
                result = ir.name(named)
            return result
        axis %= ndim
        rest = [j for j in range(ndim) if j != axis]
        rshape = [v.shape[j] for j in rest]
        if not rshape:
            return self._reduce_into(how, v, [axis], None, out, node, elements)
        name = self.new_array(rshape, out, elements if elements in ("i", "b") else
                              "i" if elements == "u" else "f")
        self._reduce_into(how, v, rest + [axis], (name, rest), out, node, elements)
        return ir.name(name)

    def _accumulated_kind(self, how, v):
        """What a reduction of v accumulates, where it is not float64: "i", "u" or "b" for
        sum, prod, max and min of integer, unsigned or boolean elements, "f32" for sum and
        prod of float32 ones (numba's; where a float64 joins float32 elements, the
        accumulator is float64, as numba types the sum's variable), else None. The dtypes of
        the arrays v reads are known for arguments and for the arrays the function
        allocates with one (ctx.dtypes)."""
        kind = self.n.indexing.lazy_dtype(v)
        dtypes = [self.n.ctx.dtypes.get(leaf.base) for leaf in leaves(v)
                  if isinstance(leaf, View)]
        if how != "mean" and kind in ("i", "b"):
            return "u" if kind == "i" and any(d is not None and np.dtype(d).kind == "u"
                                              for d in dtypes) else kind
        if how in ("sum", "prod") and any(d == np.float32 for d in dtypes):
            return "f32"
        return None

    def _reduce_into(self, how, v, order, dest, out, node, elements=None):
        """Reduce v over its last dimension in `order` (all of them when dest is None),
        storing each result in dest[...] (dest = (array name, result dims)). `elements`: what
        the accumulator holds where it is not a float64 (_accumulated_kind)."""
        env = self.loop_env(v.shape, [v], out)
        full = dest is None
        count = None
        if how == "mean":
            dims = [v.shape[j] for j in (order if full else order[-1:]) if v.shape[j] is not ONE]
            count = dims[0] if dims else ir.const(1)
            for d in dims[1:]:
                count = self.n.to_atom(out, ast.BinOp(left=count, op=ast.Mult(), right=d))
        state = {}

        def start(stmts):
            if elements == "f32":
                init = self.vcall(np.float32, [ir.const(0.0 if how == "sum" else 1.0)])
            elif elements is None:
                init = ir.const({"sum": 0.0, "mean": 0.0, "prod": 1.0, "max": -math.inf,
                                 "min": math.inf}[how])
            elif elements == "b" and how in ("max", "min"):
                init = ir.const(how == "min")
            elif elements == "u":
                init = self.vcall(np.uint64, [ir.const(
                    {"sum": 0, "prod": 1, "max": 0, "min": 2 ** 64 - 1}[how])])
            else:
                init = ir.const({"sum": 0, "prod": 1}[how]) if how in ("sum", "prod") else \
                    _vec_constant("KEY_LOWEST" if how == "max" else "KEY_HIGHEST")
            state["acc"] = self.n.fresh("_r")
            self.n.emit_assign(stmts, state["acc"], init)

        def step(vars_, stmts):
            e = self.scalar_at(v, vars_, env, stmts)
            acc = state["acc"]
            if how in ("sum", "mean", "prod"):
                op = ast.Mult() if how == "prod" else ast.Add()
                t = self.n.to_atom(stmts, ast.BinOp(left=ir.name(acc), op=op, right=e))
            elif elements in ("i", "u", "b"):      # (numba's max of numbers: no NaN)
                t = self.n.to_atom(stmts, self.vcall(max if how == "max" else min,
                                                     [ir.name(acc), e]))
            else:
                t = self.n.to_atom(stmts, self.vcall(vec.nanmax if how == "max" else vec.nanmin,
                                                     [ir.name(acc), e]))
            self.n.emit_assign(stmts, acc, t)

        def finish(vars_, stmts):
            acc = ir.name(state["acc"])
            if how in ("max", "min") and not self.n.stopped and elements in (None, "f32"):
                acc = self._split_ties(v, vars_, env, state["acc"], order, full, stmts)
            if how == "mean":
                acc = self.n.to_atom(stmts, ast.BinOp(left=acc, op=ast.Div(), right=count))
            state["result"] = acc
            if not full:
                name, rest = dest
                idx = [vars_[j] for j in rest]
                sub = ast.Subscript(value=ir.name(name), slice=_index_node(idx),
                                    ctx=ast.Store())
                self.n.emit_assign(stmts, sub, acc)

        if full:
            start(out)
            self.nest(v.shape, order, out, step)
            finish([ir.const(0)] * len(v.shape), out)
            return state["result"]

        def pre(vars_, stmts):
            start(stmts)

        self.nest(v.shape, order, out, step, pre=pre, post=finish)
        return None

    def _split_ties(self, v, vars_, env, m0, order, full, stmts):
        """max/min with the derivative split equally among the entries equal to it:
        m0 + (sum over ties of (e - m0)) / (number of ties), whose value is m0 and whose
        partial is 1/ties for each tied entry. An infinite m0 is returned as is."""
        cnt, acc = self.n.fresh("_cnt"), self.n.fresh("_r")
        self.n.emit_assign(stmts, cnt, ir.const(0))
        self.n.emit_assign(stmts, acc, ir.const(0.0))
        loop_dims = order if full else order[-1:]

        def body(inner_vars, body_stmts):
            e = self.scalar_at(v, inner_vars, env, body_stmts)
            tie = self.n.to_atom(body_stmts, ast.Compare(left=e, ops=[ast.Eq()],
                                                         comparators=[ir.name(m0)]))
            branch = []
            c1 = self.n.to_atom(branch, ast.BinOp(left=ir.name(cnt), op=ast.Add(),
                                                  right=ir.const(1)))
            self.n.emit_assign(branch, cnt, c1)
            d = self.n.to_atom(branch, ast.BinOp(left=e, op=ast.Sub(), right=ir.name(m0)))
            a1 = self.n.to_atom(branch, ast.BinOp(left=ir.name(acc), op=ast.Add(), right=d))
            self.n.emit_assign(branch, acc, a1)
            self.n.emit_if(body_stmts, tie, branch, [])

        if full:
            self.nest(v.shape, loop_dims, stmts, body)
        else:
            j = loop_dims[0]
            shape = v.shape
            if shape[j] is ONE:
                body(vars_, stmts)
            else:
                var = self.n.fresh("_i")
                inner_vars = list(vars_)
                inner_vars[j] = ir.name(var)
                inner = []
                body(inner_vars, inner)
                stmts.append(self.for_range(var, shape[j], inner))
        finite = self.n.to_atom(stmts, ast.BinOp(left=ir.name(m0), op=ast.Sub(),
                                                 right=ir.name(m0)))
        ok = self.n.to_atom(stmts, ast.Compare(left=finite, ops=[ast.Eq()],
                                               comparators=[ir.const(0.0)]))
        result = self.n.fresh("_m")
        mean = []
        q = self.n.to_atom(mean, ast.BinOp(left=ir.name(acc), op=ast.Div(), right=ir.name(cnt)))
        self.n.emit_assign(mean, result, ast.BinOp(left=ir.name(m0), op=ast.Add(), right=q))
        self.n.emit_if(stmts, ok, mean, [ir.assign(result, ir.name(m0), self.n.origin)])
        return ir.name(result)

    # linear algebra -----------------------------------------------------------
    def matmul(self, a, b, out, node):
        a, b = self.lazy_operand(a, out), self.lazy_operand(b, out)
        if not isinstance(a, Lazy) or not isinstance(b, Lazy) or \
                isinstance(a, Scalar) or isinstance(b, Scalar):
            raise self.n.error(node, "a matrix product with a scalar operand",
                               "Multiply scalars with *; use @ / np.dot for arrays.")
        na, nb = len(a.shape), len(b.shape)
        if na > 2 or nb > 2:
            raise self.n.error(node, "a matrix product of arrays with more than 2 dimensions",
                               "Use 1-D and 2-D arrays, or loops.")
        if na == 1 and nb == 1:
            n = self.dot_length(a.shape[0], b.shape[0], out)
            return self.reduce("sum", Op(("bin", ast.Mult()), [a, b], [n]), None, out, node)
        if na + nb == 3 and self.blas_operands(a, b):
            return self.matrix_vector(a, b, out, node)
        if na == 2 and nb == 1:
            prod = Op(("bin", ast.Mult()), [a, b],
                      [a.shape[0], self.dot_length(a.shape[1], b.shape[0], out)])
            return self.reduce("sum", prod, 1, out, node)
        if na == 1 and nb == 2:
            if not isinstance(a, View):
                a = self.view_of(self.materialize(a, out, node).id, out)
            col = View(a.base, a.ndim, a.dims + [None], a.fixed, a.shape + [ONE], None,
                       a.parent)
            prod = Op(("bin", ast.Mult()), [col, b],
                      [self.dot_length(a.shape[0], b.shape[0], out), b.shape[1]])
            return self.reduce("sum", prod, 0, out, node)
        ta = isinstance(a, View) and a.is_transpose()
        tb = isinstance(b, View) and b.is_transpose()
        an = ir.name(a.base) if ta else self.materialize(a, out, node)
        bn = ir.name(b.base) if tb else self.materialize(b, out, node)
        fn = {(False, False): vec.mm, (True, False): vec.mm_tn, (False, True): vec.mm_nt,
              (True, True): vec.mm_tt}[(ta, tb)]
        name = self.n.fresh("_a")
        self.n.emit_assign(out, name, self.vcall(fn, [an, bn]))
        self.note_array(name, 2)
        self.n.ctx.vec_temps.add(name)
        return ir.name(name)

    def dot_length(self, m, n, out):
        """The length a product of arrays sums over, checked to be both operands' (numba's
        ValueError otherwise: a product does not broadcast, where elementwise `*` would)."""
        if m is ONE and n is ONE:
            return ONE
        if m is not ONE and n is not ONE and _same(m, n):
            return m
        m, n = (ir.const(1) if x is ONE else x for x in (m, n))
        return self.n.to_atom(out, self.vcall(vec.dot_length, [m, n]), "_n")

    def blas_operands(self, a, b):
        """Whether a matrix-vector product goes to BLAS (vec.mv, vec.mv_t: numba's np.dot,
        the same numbers and errors as the user's forward): outside loops, and inside them
        where every array the operands read is a whole array bound before the loops (an
        argument, a state the loop updates in place: `u = A @ u`) or its transpose, so that
        their shapes are the same in every iteration. Otherwise, a row or slice of an array
        inside a loop (`R @ P[i]`, a small fixed-size product, as particle codes write) or
        an array the loop allocates (at a length it may change), the product is summed in a
        loop of its own that fuses with what reads it, nothing allocated per iteration.
        Never for CUDA code, the sparsity patterns (`blas_products`: they read each
        element's dependencies) or inside a numba.prange loop (whose threads would share
        the matrix's adjoint)."""
        if not self.n.ctx.blas_products or self.n.ctx.prange_depth:
            return False
        if self.n.ctx.loop_depth == 0:
            return True
        before = self.n.ctx.before_loops
        for x in (a, b):
            for leaf in leaves(x):
                if isinstance(leaf, Scalar):
                    continue
                if not isinstance(leaf, View) or leaf.whole is None or \
                        leaf.parent is not None or leaf.base not in before:
                    return False
        return True

    def matrix_vector(self, a, b, out, node):
        """A @ x or x @ A by BLAS; a transposed operand is passed as the array it
        transposes."""
        if len(a.shape) == 2:
            matrix, vector, transposed = a, b, False     # A @ x
        else:
            matrix, vector, transposed = b, a, True      # x @ A = A.T @ x
        if isinstance(matrix, View) and matrix.is_transpose():
            m = ir.name(matrix.base)
            transposed = not transposed
        else:
            m = self.materialize(matrix, out, node)
        x = self.materialize(vector, out, node)
        name = self.n.fresh("_a")
        self.n.emit_assign(out, name, self.vcall(vec.mv_t if transposed else vec.mv, [m, x]))
        self.note_array(name, 1)
        self.n.ctx.vec_temps.add(name)
        return ir.name(name)

    def outer(self, a, b, out, node):
        a = self.lazy_operand(a, out)
        b = self.lazy_operand(b, out)
        views = []
        for x in (a, b):
            if not isinstance(x, Lazy) or len(x.shape) != 1:
                raise self.n.error(node, "np.outer of arguments that are not 1-D arrays",
                                   "Pass two 1-D arrays (or use broadcasting: a[:, None] * b).")
            if not isinstance(x, View):
                x = self.view_of(self.materialize(x, out, node).id, out)
            views.append(x)
        a, b = views
        col = View(a.base, a.ndim, a.dims + [None], a.fixed, a.shape + [ONE], None, a.parent)
        row = View(b.base, b.ndim, [None] + b.dims, b.fixed, [ONE] + b.shape, None, b.parent)
        return Op(("bin", ast.Mult()), [col, row], self.broadcast([col.shape, row.shape], out,
                                                                  node))

    # construction ---------------------------------------------------------------
    def allocate(self, name, shape, out, dtype="f"):
        """`name = np.empty(shape)` (int64 or bool for dtype "i", "b"); returns the shape as
        atoms."""
        shape = [ir.const(1) if s is ONE else s for s in shape]
        arg = ast.Tuple(elts=list(shape), ctx=ast.Load()) if len(shape) != 1 else shape[0]
        fn = {"i": vec.empty_int, "b": vec.empty_bool}.get(dtype, np.empty)
        self.n.emit_assign(out, name, self.vcall(fn, [arg]))
        self.note_array(name, len(shape), dtype if dtype in ("i", "b") else "f")
        return shape

    def new_array(self, shape, out, dtype="f"):
        """A new temporary array of this shape, to be filled completely (of integers or
        booleans for dtype "i", "b")."""
        name = self.n.fresh("_a")
        self.allocate(name, shape, out, dtype)
        self.add_temp(name)
        return name

    def full_view(self, name, shape):
        return View(name, len(shape), [(k, ir.const(0), ir.const(1)) for k in range(len(shape))],
                    {}, [ONE if _is_const(s, 1) else s for s in shape], "identity")

    def array_literal(self, node, out, declared=None, bare=False):
        """np.array([...]) of scalars (nested lists for 2-D); `declared`: the numpy dtype
        given (dtype=), which the values are converted to as numba converts them (a float
        stored into an integer array truncates, into a float32 one rounds). `bare`: a list
        written alone, which is read as the same array."""
        def shape_of(n):
            if isinstance(n, (ast.List, ast.Tuple)):
                inner = [shape_of(e) for e in n.elts]
                if not inner or any(s != inner[0] for s in inner):
                    raise self.n.error(node, "np.array of ragged or empty lists",
                                       "Give every row the same number of numbers.")
                return [len(n.elts)] + inner[0]
            return []
        shape = shape_of(node)
        if not shape:
            raise self.n.error(node, "np.array of something other than a list of numbers",
                               "Write np.array([a, b, c]).")
        values = []

        def evaluate(n, prefix):
            if isinstance(n, (ast.List, ast.Tuple)):
                for k, e in enumerate(n.elts):
                    evaluate(e, prefix + [ir.const(k)])
                return
            value = self.n.atom(n, out)
            if self.array_ndim(value) is not None:
                if bare:
                    raise self.n.error(node, "a list holding arrays",
                                       "adjit reads a list as the array of its numbers: hold "
                                       "arrays in a tuple, (a, b), or combine them with "
                                       "np.stack or np.concatenate.")
                raise self.n.error(node, "np.array of a list holding arrays",
                                   "Use np.stack or np.concatenate to combine arrays.")
            values.append((prefix, value))

        evaluate(node, [])
        # numpy's dtype: int64 for integers only (an index array), bool for booleans only
        bools = all(isinstance(v, ast.Constant) and isinstance(v.value, bool) for _, v in values)
        dtype = "b" if bools else "i" if all(self.n.is_int(v) for _, v in values) else "f"
        if declared is None and all(isinstance(v, ast.Constant) and type(v.value) in (int, bool)
                                    for _, v in values):
            # numbers written out (np.array([1, 2, 3])): numba's int64 (or bool) array, which
            # a float stored later truncates (analysis/types.py leaves such arrays alone)
            declared = np.dtype(np.bool_ if bools else np.int64)
        name = self.n.fresh("_a")
        if declared is not None and declared != np.float64:
            allocator = DECLARED_ALLOCATORS.get((np.empty, declared))
            if allocator is None:
                raise self.n.error(node, f"np.array with dtype {declared}",
                                   "Give float64, float32, an integer type or np.bool_.")
            dims = [ir.const(s) for s in shape]
            self.n.emit_assign(out, name, self.vcall(allocator, [
                dims[0] if len(dims) == 1 else ast.Tuple(elts=dims, ctx=ast.Load())]))
            dtype = "f" if declared.kind == "f" else "b" if declared.kind == "b" else "i"
            self.note_array(name, len(shape), dtype)
        else:
            if declared is not None:
                dtype = "f"
            self.allocate(name, [ir.const(s) for s in shape], out, dtype)
        if dtype == "f":
            self.add_temp(name)
        for prefix, value in values:
            sub = ast.Subscript(value=ir.name(name), slice=_index_node(prefix), ctx=ast.Store())
            self.n.emit_assign(out, sub, value)
        return ir.name(name)

    def concatenate(self, items, axis, out, node, stack=False, pieces=None):
        if pieces is None:
            # left to right; an array a later piece's helper call could write is computed
            # first, as numpy does (operands)
            pieces = self.n.operands(list(items), out)
        if not pieces or any(not isinstance(p, Lazy) or isinstance(p, Scalar) for p in pieces):
            raise self.n.error(node, "joining something that is not an array",
                               "Pass a tuple of arrays: np.concatenate((a, b)).")
        ndim = len(pieces[0].shape)
        if any(len(p.shape) != ndim for p in pieces):
            raise self.n.error(node, "joining arrays of different dimensions",
                               "Join arrays with the same number of dimensions.")
        out_ndim = ndim + 1 if stack else ndim
        if not -out_ndim <= axis < out_ndim:
            raise self.n.error(node, f"axis {axis} for {out_ndim}-D result",
                               f"Use an axis from {-out_ndim} to {out_ndim - 1}.")
        axis %= out_ndim
        if stack:
            others = self.broadcast([p.shape for p in pieces], out, node)
            shape = others[:axis] + [ir.const(len(pieces))] + others[axis:]
        else:
            rest = [[s for j, s in enumerate(p.shape) if j != axis] for p in pieces]
            others = self.broadcast(rest, out, node)
            sizes = [ir.const(1) if p.shape[axis] is ONE else p.shape[axis] for p in pieces]
            total = sizes[0]
            for s in sizes[1:]:
                total = self.n.to_atom(out, ast.BinOp(left=total, op=ast.Add(), right=s), "_n")
            shape = others[:axis] + [total] + others[axis:]
        shape = [ir.const(1) if s is ONE else s for s in shape]
        kind = _common_kind([self.n.indexing.lazy_dtype(p) for p in pieces])
        name = self.new_array(shape, out, kind if kind in ("i", "b") else "f")
        offset = ir.const(0)
        for k, p in enumerate(pieces):
            dims, fixed, vshape = [], {}, []
            for j in range(out_ndim):
                if j == axis and stack:
                    fixed[j] = ir.const(k)
                    continue
                if j == axis:
                    size = ir.const(1) if p.shape[axis] is ONE else p.shape[axis]
                    dims.append((j, offset, ir.const(1)))
                    vshape.append(ONE if _is_const(size, 1) else size)
                    continue
                dims.append((j, ir.const(0), ir.const(1)))
                vshape.append(shape[j])
            self.store_elements(View(name, out_ndim, dims, fixed, vshape), p, out, node)
            if not stack:
                offset = self.n.to_atom(out, ast.BinOp(left=offset, op=ast.Add(), right=size),
                                        "_n") if not _is_const(offset, 0) else size
        return ir.name(name)


def _index_node(idx):
    """a[i], a[i, j], or a[()] for the one element of a 0-d array."""
    return ast.Tuple(elts=list(idx), ctx=ast.Load()) if len(idx) != 1 else idx[0]


def _vec_constant(name):
    """`vec.<name>`: a constant of adjit's runtime (runtime/index.py) in generated code."""
    return ast.Attribute(value=ast.Name(id="vec", ctx=ast.Load()), attr=name, ctx=ast.Load())


def _common_kind(kinds):
    """The kind ("f", "i", "b" or "?") of a result of operands of these kinds (numpy's
    promotion: integers of integers and booleans, booleans of booleans)."""
    if "f" in kinds:
        return "f"
    if "?" in kinds or not kinds:
        return "?"
    return "b" if all(k == "b" for k in kinds) else "i"
