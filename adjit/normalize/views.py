"""Indexing and views: numpy's memory semantics as index maps onto base arrays.

numpy and numba give views for basic slices, rows `A[i]`, `.T`, transposes, `reshape` of a
contiguous array and plain rebinding `y = x`: a write through either name changes the one
array both see. adjit keeps every such name as an *index map* onto its base array (a
`View`), never as a second array: `v = x[1:3]; v[0] = 5.0` stores into `x[1]`, and a read of
`v` after a write to `x` reads `x`. Later passes therefore see one array name per array, and
a view's adjoint is the same view of its base's adjoint without any special case.

An index map takes the view's result indices to positions of the base:

- a dimension `(b, start, step)` adds `start + step * i` to base dimension `b`;
- `fixed[b]` adds a position to base dimension `b` (an integer index, `A[i]`);
- a `Take` dimension gathers: position k of it reads an integer index array (`x[idx]`,
  `A[:, idx]`, `A[i1, i2]`, the coordinates of a boolean mask) and adds
  `start + step * idx[k]` to its base dimension (negative indices counted from the end,
  out-of-range ones an IndexError as in numpy). Gathers read; names bound to them are copies;
- a view with a `parent` (a reshape) indexes the parent's elements in C order: its own map
  gives a flat position, unravelled over the parent's shape.

Integer-array and mask indexing follow numpy: several index arrays broadcast together into
one dimension, placed where they stand when they are next to each other and first
otherwise; a boolean mask over k dimensions becomes the coordinates of its true elements.
Assigning through a gather (`out[idx] = v`, `out[idx] += v`) computes the right-hand side
first and stores element by element, so a repeated index is written once, by its last
occurrence (numpy's buffered semantics); reading through a gather accumulates adjoints of
repeated indices (a scatter-add).
"""
import ast
import collections
import numpy as np

from ..api_stop import stop_gradient
from ..runtime import vec
from .. import ir
from .vectorize import ONE, Lazy, Scalar, View, _common_kind, _index_node, _is_const, _key, \
    _same, leaves
from .values import Shape, TupleValue

TakeSource = collections.namedtuple(
    "TakeSource", "b arr col n_src flag n_dim start step")
"""One index array of a Take: base dimension `b` gets `start + step * arr[k]` (`arr[k, col]`
for a mask's coordinates); `n_src` is arr's length, `flag` the broadcast stride flag (None
when arr spans the whole Take), `n_dim` the length of the indexed dimension (for negative
indices and bounds)."""


class Take:
    """A gathered dimension of a View (see the module docstring)."""

    def __init__(self, sources, length):
        self.sources = sources
        self.length = length


class _Retry(Exception):
    """The index needs its base computed into an array first (a slice of a gather...)."""


def has_take(v):
    """Whether the View `v` gathers (its elements are a copy once bound to a name)."""
    while v is not None:
        if any(isinstance(d, Take) for d in v.dims):
            return True
        v = v.parent
    return False


def view_atoms(v):
    """Every atom an index map reads, in a fixed order (for `with_atoms`): names to freeze
    when the map is bound to a name, positions that differ between two branches."""
    out = []
    while v is not None:
        out += [a for a in v.shape if a is not ONE] + [v.fixed[b] for b in sorted(v.fixed)]
        for d in v.dims:
            if isinstance(d, Take):
                out.append(d.length)
                for s in d.sources:
                    out += [s.n_src, s.n_dim, s.start, s.step] + \
                        ([s.flag] if s.flag is not None else [])
            elif d is not None:
                out += [d[1], d[2]]
        v = v.parent
    return out


def lazy_reads(v):
    """The names a Lazy array expression reads where it is computed: the arrays its views
    index, their positions and index arrays, its numbers."""
    names = set()
    for leaf in leaves(v):
        if isinstance(leaf, View):
            names.add(leaf.base)
            names.update(a.id for a in view_atoms(leaf) if isinstance(a, ast.Name))
            w = leaf
            while w is not None:
                names.update(s.arr if isinstance(s.arr, str) else s.arr.id
                             for d in w.dims if isinstance(d, Take) for s in d.sources
                             if isinstance(s.arr, (str, ast.Name)))
                w = w.parent
        elif isinstance(leaf, Scalar) and isinstance(leaf.atom, ast.Name):
            names.add(leaf.atom.id)
    return names


def with_atoms(v, atoms):
    """A copy of View `v` reading `atoms` (in view_atoms' order) instead of its own."""
    atoms = list(atoms)
    return _rebuild(v, atoms)


def _rebuild(v, atoms):
    if v is None:
        return None

    def nxt():
        return atoms.pop(0)

    shape = [a if a is ONE else nxt() for a in v.shape]
    fixed = {b: nxt() for b in sorted(v.fixed)}
    dims = []
    for d in v.dims:
        if isinstance(d, Take):
            length = nxt()
            sources = []
            for s in d.sources:
                n_src, n_dim, start, step = nxt(), nxt(), nxt(), nxt()
                flag = nxt() if s.flag is not None else None
                sources.append(s._replace(n_src=n_src, n_dim=n_dim, start=start, step=step,
                                          flag=flag))
            dims.append(Take(sources, length))
        elif d is None:
            dims.append(None)
        else:
            dims.append((d[0], nxt(), nxt()))
    parent = _rebuild(v.parent, atoms)
    return View(v.base, v.ndim, dims, fixed, shape, v.whole, parent, v.contiguous)


class Indexer:
    """The normalizer's part (`norm.indexing`) for subscripts, gathers, masks, reshapes and
    index maps, with the normalizer (`n`) it writes through."""

    def __init__(self, norm):
        self.n = norm

    # index maps -----------------------------------------------------------------
    def map_index(self, view, per_dim, env, stmts):
        """Base index atoms (one per dimension of the base array) of the element at result
        indices `per_dim` of `view`, emitting the integer arithmetic into `stmts`."""
        env = env if env is not None else {"loads": {}}
        nd = 1 if view.parent is not None else view.ndim
        terms = [[] for _ in range(nd)]
        for b, atom in view.fixed.items():
            terms[b].append(atom)
        for spec, i in zip(view.dims, per_dim):
            if spec is None:
                continue
            if isinstance(spec, Take):
                for s in spec.sources:
                    terms[s.b].append(self._take_position(s, i, env, stmts))
                continue
            b, start, step = spec
            terms[b].append(self._affine(start, step, i, env, stmts))
        idx = []
        for ts in terms:
            ts = [t for t in ts if not _is_const(t, 0)]
            acc = ts[0] if ts else ir.const(0)
            for t in ts[1:]:
                acc = self.n.arrays.int_op(acc, ast.Add(), t, env, stmts)
            idx.append(acc)
        if view.parent is None:
            return idx
        return self.map_index(view.parent, self._unravel(idx[0], view.parent.shape, env,
                                                         stmts), env, stmts)

    def _affine(self, start, step, i, env, stmts):
        if _is_const(i, 0):
            return start
        if not _is_const(step, 1):
            i = self.n.arrays.int_op(step, ast.Mult(), i, env, stmts)
        if not _is_const(start, 0):
            i = self.n.arrays.int_op(start, ast.Add(), i, env, stmts)
        return i

    def _take_position(self, s, i, env, stmts):
        if s.flag is not None:
            i = self.n.arrays.int_op(i, ast.Mult(), s.flag, env, stmts)
        key = ("take", s.arr, _key(i), s.col, id(stmts))
        if key not in env["loads"]:
            slot = i if s.col is None else ast.Tuple(elts=[i, ir.const(s.col)],
                                                     ctx=ast.Load())
            env["loads"][key] = self.n.to_atom(stmts, ast.Subscript(
                value=ir.name(s.arr), slice=slot, ctx=ast.Load()))
        position = env["loads"][key]
        if s.col is None:       # a user's index array: negative and out-of-range indices,
            wrap = ("wrap", _key(position), _key(s.n_dim), id(stmts))   # per dimension
            if wrap not in env["loads"]:
                env["loads"][wrap] = self.n.to_atom(stmts, self.n.arrays.vcall(vec.take_index,
                                                                               [position, s.n_dim]))
            position = env["loads"][wrap]
        return self._affine(s.start, s.step, position, env, stmts)

    def _unravel(self, flat, shape, env, stmts):
        """Indices of position `flat` (C order) in an array of this shape."""
        sizes = [s for s in shape if s is not ONE]
        if len(sizes) <= 1:
            return [flat if s is not ONE else ir.const(0) for s in shape] if sizes else \
                [ir.const(0)] * len(shape)
        out = [None] * len(shape)
        rest = flat
        first = min(k for k, s in enumerate(shape) if s is not ONE)
        for k in range(len(shape) - 1, -1, -1):
            n = shape[k]
            if n is ONE:
                out[k] = ir.const(0)
                continue
            if k == first:
                out[k] = rest
                continue
            out[k] = self.n.arrays.int_op(rest, ast.Mod(), n, env, stmts)
            rest = self.n.arrays.int_op(rest, ast.FloorDiv(), n, env, stmts)
        return out

    # subscripts --------------------------------------------------------------
    def index_items(self, sl, out, node):
        """Evaluate the elements of an index: [("new",), ("ellipsis",), ("slice", Slice),
        ("int", atom), ("array", name, ndim), ("mask", Lazy, ndim)]."""
        held = self.n.tuple_named(sl.id) if isinstance(sl, ast.Name) else None
        if held is None and isinstance(sl, ast.Call):
            # a call giving a tuple of index arrays (`x[np.where(x > 0)]`, `a[np.nonzero(m)]`,
            # `a[np.triu_indices(n)]`): its elements index the dimensions, as numba's
            made = self.n.rhs(sl, out)
            if not isinstance(made, (TupleValue, Shape)):     # (one index: an array, a number)
                return [self._operand_item(self.n.arrays.lazy_operand(made, out), out, node)]
            held = made
        if isinstance(held, (TupleValue, Shape)):        # idx = (i, j); a[idx]
            known = isinstance(held, TupleValue) or held.ndim is not None
            atoms = held.items if isinstance(held, TupleValue) else \
                [self.n.to_atom(out, held.item(k)) for k in range(held.ndim or 0)]
            atoms = [self.n.to_atom(out, a) if isinstance(a, ast.Call) else a for a in atoms]
            if not known or any(not (ir.is_atom(a) or isinstance(a, View)) for a in atoms):
                what = f"an index `{sl.id}`" if isinstance(sl, ast.Name) else "an index"
                raise self.n.error(node, f"{what} holding a tuple of unknown length or "
                                   "tuples", "Index with a tuple of integers or integer "
                                   "arrays: a[i, j] or idx = (i, j); a[idx].")
            return [self._held_item(a, out, node) for a in atoms]
        elts = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
        items = []
        for e in elts:
            if isinstance(e, ast.Constant) and e.value is None or \
                    isinstance(e, ast.Attribute) and e.attr == "newaxis" and \
                    self.n.src.resolve(e) is None:        # np.newaxis is None
                items.append(("new",))
            elif isinstance(e, ast.Constant) and e.value is Ellipsis:
                items.append(("ellipsis",))
            elif isinstance(e, ast.Slice):
                items.append(("slice", e))
            elif isinstance(e, (ast.List, ast.Tuple)):
                arr = self.n.arrays.array_literal(e, out)
                items.append(self._array_item(self.n.arrays.view_of(arr.id, out), out, node))
            else:
                items.append(self._operand_item(self.n.operand(e, out), out, node))
        return items

    def _operand_item(self, value, out, node):
        """The index item of an evaluated index element (an atom or a Lazy array)."""
        if isinstance(value, Lazy) and not isinstance(value, Scalar):
            return self._array_item(value, out, node)
        atom = value.atom if isinstance(value, Scalar) else value
        if isinstance(atom, ast.Constant) and not isinstance(atom.value, int):
            raise self.n.error(node, f"the index {atom.value!r}",
                               "Index arrays with integers (int(x) or x // 1 gives one), "
                               "slices or integer/boolean arrays.")
        return ("int", atom)

    def _held_item(self, item, out, node):
        """The index item of an element of a tuple used as an index: an integer, an integer
        or boolean array (a view, or an array's name)."""
        if isinstance(item, ast.Name) and self.n.arrays.array_ndim(item) is not None:
            item = self.n.arrays.view_of(item.id, out)
        return self._operand_item(item, out, node)

    def _array_item(self, value, out, node):
        dtype = self.lazy_dtype(value)
        ndim = len(value.shape)
        if dtype == "b":
            return ("mask", value, ndim)
        if dtype == "f":
            raise self.n.error(node, "indexing with an array of floats",
                               "Index with integer arrays (idx.astype(np.int64) outside, or "
                               "np.array([0, 2]) of ints) or boolean masks.")
        if ndim != 1:
            raise self.n.error(node, f"indexing with a {ndim}-D integer array",
                               "Index with 1-D integer arrays (as numba requires), or loop over "
                               "the index array.")
        if not (isinstance(value, View) and value.is_identity()):
            value = ir.name(self.n.arrays.materialize(value, out, node).id)
            return ("array", value.id, 1)
        return ("array", value.base, 1)

    def index_view(self, v, items, out, node):
        """v[items] for a View `v`: a View of the same base (a 0-d View for one element)."""
        try:
            return self._index_view(v, items, out, node)
        except _Retry:
            base = self.n.arrays.materialize(v, out, node, copy=True)
            return self._index_view(self.n.arrays.view_of(base.id, out), items, out, node)

    def _index_view(self, v, items, out, node):
        consumed = sum(it[2] if it[0] == "mask" else 1 for it in items
                       if it[0] in ("slice", "int", "array", "mask"))
        nd = len(v.shape)
        if sum(1 for it in items if it[0] == "ellipsis") > 1:
            raise self.n.error(node, "an index with two ellipses (...)", "Use at most one.")
        if consumed > nd:
            raise self.n.error(node, f"indexing a {nd}-D array with {consumed} indices",
                               "Index at most one position or slice per dimension.")
        full = ("slice", ast.Slice(lower=None, upper=None, step=None))
        if any(it[0] == "ellipsis" for it in items):
            k = next(k for k, it in enumerate(items) if it[0] == "ellipsis")
            items = items[:k] + [full] * (nd - consumed) + items[k + 1:]
        else:
            items = items + [full] * (nd - consumed)
        arrays = any(it[0] in ("array", "mask") for it in items)
        dims, shape, fixed = [], [], {b: [a] for b, a in v.fixed.items()}
        sources, adv_at = [], []
        j = 0
        for pos, it in enumerate(items):
            kind = it[0]
            if kind == "new":
                dims.append(None)
                shape.append(ONE)
                continue
            if kind == "slice":
                dims.append(self._slice_dim(v, j, it[1], out, shape))
                j += 1
                continue
            if kind == "int":
                spec, n = v.dims[j], self._length(v.shape[j])
                i = it[1]
                if not (isinstance(i, ast.Constant) and i.value >= 0):
                    i = self.n.to_atom(out, self.n.arrays.vcall(vec.index, [i, n]))
                if isinstance(spec, Take):
                    for s in spec.sources:
                        fixed.setdefault(s.b, []).append(
                            self._take_position(s, i, None, out))
                elif spec is not None:
                    fixed.setdefault(spec[0], []).append(
                        self._affine(spec[1], spec[2], i, None, out))
                if arrays:
                    adv_at.append(pos)
                j += 1
                continue
            adv_at.append(pos)
            if kind == "array":
                spec = self._simple(v, j)
                n_src = self.n.arrays.shape_atom(it[1], 0, out)
                sources.append((spec[0], it[1], None, n_src, self._length(v.shape[j]),
                                spec[1], spec[2]))
                j += 1
                continue
            k = it[2]                                   # a boolean mask over k dims
            specs = [self._simple(v, j + m) for m in range(k)]
            coords, count = self.mask_coords(it[1], [v.shape[j + m] for m in range(k)], out,
                                             node)
            for m, spec in enumerate(specs):
                sources.append((spec[0], coords, m, count, self._length(v.shape[j + m]),
                                spec[1], spec[2]))
            j += k
        dims += v.dims[j:]
        shape += v.shape[j:]
        if sources:
            take = self._take(sources, out, node)
            adjacent = adv_at == list(range(adv_at[0], adv_at[0] + len(adv_at)))
            at = sum(1 for it in items[:adv_at[0]] if it[0] in ("new", "slice")) \
                if adjacent else 0
            dims.insert(at, take)
            shape.insert(at, take.length)
        fixed = {b: self._sum(terms, out) for b, terms in fixed.items()}
        return View(v.base, v.ndim, dims, fixed, shape, None, v.parent,
                    v.contiguous and _keeps_contiguous(items))

    def _length(self, n):
        return ir.const(1) if n is ONE else n

    def _simple(self, v, j):
        spec = v.dims[j]
        if spec is None or isinstance(spec, Take):
            raise _Retry()
        return spec

    def _slice_dim(self, v, j, sl, out, shape):
        spec = v.dims[j]
        n = self._length(v.shape[j])
        whole = sl.lower is None and sl.upper is None and sl.step is None
        if whole:
            shape.append(v.shape[j])
            return spec
        if spec is None or isinstance(spec, Take):
            raise _Retry()
        start, length, step = self.n.arrays.slice_bounds(sl, n, out)
        b, s0, st0 = spec
        new_start = self._affine(s0, st0, start, None, out)
        new_step = step if _is_const(st0, 1) else \
            st0 if _is_const(step, 1) else \
            self.n.to_atom(out, ast.BinOp(left=st0, op=ast.Mult(), right=step))
        shape.append(ONE if _is_const(length, 1) else length)
        return (b, new_start, new_step)

    def _sum(self, terms, out):
        terms = [t for t in terms if not _is_const(t, 0)]
        acc = terms[0] if terms else ir.const(0)
        for t in terms[1:]:
            acc = self.n.to_atom(out, ast.BinOp(left=acc, op=ast.Add(), right=t))
        return acc

    def _take(self, raw, out, node):
        sizes = []
        for r in raw:
            if not any(_same(r[3], s) for s in sizes):
                sizes.append(r[3])
        length = sizes[0]
        for s in sizes[1:]:
            length = self.n.to_atom(out, self.n.arrays.vcall(vec.bcast, [length, s]), "_n")
        sources = []
        for b, arr, col, n_src, n_dim, start, step in raw:
            flag = None if _same(n_src, length) else \
                self.n.to_atom(out, self.n.arrays.vcall(vec.stride, [n_src, length]), "_f")
            sources.append(TakeSource(b, arr, col, n_src, flag, n_dim, start, step))
        return Take(sources, length)

    def mask_coords(self, mask, dims, out, node):
        """(coordinate array name, count atom) of the true elements of a boolean array
        expression `mask` (C order), checked against the lengths `dims` it indexes."""
        k = len(mask.shape)
        for m, (a, b) in enumerate(zip(mask.shape, dims)):
            a, b = self._length(a), self._length(b)
            if not _same(a, b):
                self.n.to_atom(out, self.n.arrays.vcall(vec.same_length, [a, b]), "_n")
        shape = [self._length(s) for s in mask.shape]
        total = self.n.size_of(shape, out)
        coords = self.n.fresh("_k")
        self.n.emit_assign(out, coords, self.n.arrays.vcall(vec.empty_int, [
            ast.Tuple(elts=[total, ir.const(k)], ctx=ast.Load())]))
        self.n.arrays.note_array(coords, 2, "i")
        count = self.n.fresh("_cnt")
        self.n.emit_assign(out, count, ir.const(0))
        env = self.n.arrays.loop_env(mask.shape, [mask], out)

        def body(vars_, stmts):
            c = self.n.arrays.scalar_at(mask, vars_, env, stmts)
            hit = []
            for m in range(k):
                sub = ast.Subscript(value=ir.name(coords), slice=ast.Tuple(
                    elts=[ir.name(count), ir.const(m)], ctx=ast.Load()), ctx=ast.Store())
                self.n.emit_assign(hit, sub, vars_[m])
            self.n.emit_assign(hit, count, ast.BinOp(left=ir.name(count), op=ast.Add(),
                                                     right=ir.const(1)))
            self.n.emit_if(stmts, c, hit, [])

        self.n.arrays.nest(mask.shape, list(range(k)), out, body)
        return coords, ir.name(count)

    # reshapes --------------------------------------------------------------------
    def reshape_view(self, v, shape_nodes, out, node, copy=False, atoms=None):
        """v.reshape(shape), np.reshape, ravel (a view of a C-contiguous array, as numpy and
        numba give; a copy otherwise, as numpy gives) and flatten (`copy`: always a copy).
        `shape_nodes` are AST nodes (one may be -1)."""
        v = self.n.arrays.lazy_operand(v, out)
        if not isinstance(v, Lazy) or isinstance(v, Scalar):
            raise self.n.error(node, "reshape of a scalar", "Reshape arrays.")
        if copy or not (isinstance(v, View) and v.contiguous and not has_take(v)):
            v = self.n.arrays.view_of(self.n.arrays.materialize(v, out, node, copy=True).id, out)
        size = self.n.size_of([self._length(n) for n in v.shape], out)
        if atoms is None:       # (adjit's own callers may pass the size atoms themselves)
            atoms = self._shape_atoms(shape_nodes, out, node)
        unknown = [k for k, a in enumerate(atoms) if isinstance(a, ast.Constant) and
                   a.value < 0]        # (numba reads any negative size as the unknown one)
        if len(unknown) > 1:
            raise self.n.error(node, "a reshape with more than one -1", "Give one size as -1.")
        # numpy's checks, as a statement of their own (kept where nothing reads the sizes)
        out.append(ir.annotate(ast.Expr(value=self.n.calls.call_of(
            vec.check_reshape, [size] + list(atoms))), origin=self.n.origin))
        if unknown:
            known = self.n.size_of([a for k, a in enumerate(atoms) if k not in unknown], out)
            atoms[unknown[0]] = self.n.to_atom(
                out, self.n.arrays.vcall(vec.infer_size, [size, known]), "_n")
        # a size given as a value may be -1 when the call runs (x.reshape(shape))
        for k, a in enumerate(atoms):
            if k not in unknown and not isinstance(a, ast.Constant):
                others = self.n.size_of([b for j, b in enumerate(atoms) if j != k], out)
                atoms[k] = self.n.to_atom(out, self.n.arrays.vcall(
                    vec.reshape_dim, [size, a, others]), "_n")
        strides, acc = [], ir.const(1)
        for a in reversed(atoms):
            strides.append(acc)
            acc = a if _is_const(acc, 1) else \
                self.n.to_atom(out, ast.BinOp(left=acc, op=ast.Mult(), right=a), "_n")
        strides.reverse()
        shape = [ONE if _is_const(a, 1) else a for a in atoms]
        flat = [d for d, n in zip(v.dims, v.shape) if d is not None and n is not ONE]
        if len(flat) == 1 and v.parent is None and not isinstance(flat[0], Take):
            # a 1-D view: element f of the reshape is element f of v, an affine position
            b, start, step = flat[0]
            dims = [(b, ir.const(0), st if _is_const(step, 1) else self.n.to_atom(
                out, ast.BinOp(left=step, op=ast.Mult(), right=st))) for st in strides]
            fixed = dict(v.fixed)
            if not _is_const(start, 0):
                fixed[b] = self._sum([fixed.get(b, ir.const(0)), start], out)
            return View(v.base, v.ndim, dims, fixed, shape, None, None, True)
        return View(v.base, 1, [(0, ir.const(0), st) for st in strides], {}, shape, None, v,
                    True)

    def _shape_atoms(self, shape_nodes, out, node):
        """The sizes a reshape is given: one node per size, or one node holding them all
        (`x.reshape(shape)` of a tuple argument or name, `x.reshape(y.shape)`)."""
        if len(shape_nodes) != 1 or isinstance(shape_nodes[0], ast.Constant):
            return [self.n.atom(n, out) for n in shape_nodes]
        value = self.n.rhs(shape_nodes[0], out)
        if isinstance(value, Shape) and value.ndim is not None:
            return [self.n.to_atom(out, value.item(k), "_n") for k in range(value.ndim)]
        if isinstance(value, TupleValue) and not any(isinstance(v, (TupleValue, Lazy))
                                                     for v in value.items):
            return [self.n.to_atom(out, v, "_n") for v in value.items]
        if isinstance(value, (Shape, TupleValue)):
            raise self.n.error(node, "a reshape to a tuple that is not of sizes",
                               "Reshape to integer sizes: x.reshape((m, n)), x.reshape(shape) "
                               "of a tuple of ints, or x.reshape(y.shape).")
        return [self.n.to_atom(out, value)]

    # numpy functions on whole arrays (the registry's "array" handlers) -------------
    def call_arguments(self, node, names, defaults, out):
        """{name: AST node} of a call's positional and keyword arguments (numpy's names)."""
        given = dict(zip(names, node.args))
        for kw in node.keywords:
            if kw.arg not in names or kw.arg in given:
                raise self.n.error(node, f"`{ast.unparse(node.func)}` with `{kw.arg}=`",
                                   f"Its arguments here are {', '.join(names)}.")
            given[kw.arg] = kw.value
        if len(node.args) > len(names):
            raise self.n.error(node, f"`{ast.unparse(node.func)}` with {len(node.args)} "
                               "arguments", f"Its arguments here are {', '.join(names)}.")
        for n in names:
            if n not in given and n not in defaults:
                raise self.n.error(node, f"`{ast.unparse(node.func)}` without `{n}`",
                                   f"Pass {', '.join(names)}.")
        return {n: given.get(n, defaults.get(n)) for n in names}

    def array_operand(self, node, out, what):
        v = self.n.operand(node, out)
        if not isinstance(v, Lazy) or isinstance(v, Scalar):
            raise self.n.error(node, f"{what} of something that is not an array",
                               f"Pass an array to {what}.")
        return v

    def running_sum(self, v, axis, out):
        """A new array of the running sums of v (a view or an expression) along `axis`."""
        integer = self.lazy_dtype(v) in ("i", "b")     # (numba's running sum: int64)
        name = self.n.arrays.new_array([self._length(n) for n in v.shape], out,
                                       "i" if integer else "f")
        target = self.n.arrays.full_view(name, [self._length(n) for n in v.shape])
        env = self.n.arrays.loop_env(v.shape, [v], out)
        acc = self.n.fresh("_r")
        rest = [j for j in range(len(v.shape)) if j != axis]

        def pre(vars_, stmts):
            self.n.emit_assign(stmts, acc, ir.const(0 if integer else 0.0))

        def body(vars_, stmts):
            e = self.n.arrays.scalar_at(v, vars_, env, stmts)
            total = self.n.to_atom(stmts, ast.BinOp(left=ir.name(acc), op=ast.Add(), right=e))
            self.n.emit_assign(stmts, acc, total)
            sub = ast.Subscript(value=ir.name(name), slice=_index_node(
                self.map_index(target, vars_, env, stmts)), ctx=ast.Store())
            self.n.emit_assign(stmts, sub, ir.name(acc))

        if rest:
            self.n.arrays.nest(v.shape, rest + [axis], out, body, pre=pre)
        else:
            pre(None, out)
            self.n.arrays.nest(v.shape, [axis], out, body)
        return ir.name(name)

    def diagonal_view(self, v, out, node, k=0):
        """A view of the k-th diagonal of a 2-D array (a[i, i + k]; below the main one for
        k < 0): flat positions start + i * (m + 1) of an n x m array, in C order."""
        if len(v.shape) != 2:
            raise self.n.error(node, f"the diagonal of a {len(v.shape)}-D array",
                               "Take diagonals of 2-D arrays.")
        if not isinstance(v, View):
            v = self.n.arrays.view_of(self.n.arrays.materialize(v, out, node).id, out)
        n, m = (self._length(s) for s in v.shape)
        step = self.n.to_atom(out, ast.BinOp(left=m, op=ast.Add(), right=ir.const(1)), "_n")
        if k == 0:
            start = ir.const(0)
            length = self.n.to_atom(out, self.n.arrays.vcall(min, [n, m]), "_n")
        else:
            # k > 0: rows 0.., columns k..; k < 0: rows -k.., columns 0..
            start = ir.const(k) if k > 0 else \
                self.n.to_atom(out, ast.BinOp(left=ir.const(-k), op=ast.Mult(), right=m), "_n")
            rows = n if k > 0 else self.n.to_atom(out, ast.BinOp(left=n, op=ast.Sub(),
                                                                 right=ir.const(-k)), "_n")
            cols = m if k < 0 else self.n.to_atom(out, ast.BinOp(left=m, op=ast.Sub(),
                                                                 right=ir.const(k)), "_n")
            length = self.n.to_atom(out, self.n.arrays.vcall(max, [self.n.to_atom(
                out, self.n.arrays.vcall(min, [rows, cols]), "_n"), ir.const(0)]), "_n")
        return View(v.base, 1, [(0, start, step)], {}, [length], None, v)

    # dtypes --------------------------------------------------------------------

    def lazy_dtype(self, v):
        """"f", "i", "b" or "?" for an array expression (what it holds, where this pass can
        tell; analysis/types.py checks exactly)."""
        if isinstance(v, Scalar):
            a = v.atom
            if isinstance(a, ast.Constant):
                return "b" if isinstance(a.value, bool) else \
                    "i" if isinstance(a.value, int) else "f"
            return "i" if a.id in self.n.ctx.ints else "?"
        if isinstance(v, View):
            return self.n.ctx.arrays.get(v.base, (0, "?"))[1]
        kind, op = v.fn[0], v.fn[1]
        if kind == "cmp":
            return "b"
        args = [self.lazy_dtype(a) for a in v.args]
        if kind == "call":
            if op in ("neg", stop_gradient, abs, np.abs):
                return args[0] if args[0] != "b" or op is stop_gradient else "?"
            if op in ("where", "unless"):
                return _common_kind(args[1:])
            if op in _KIND_KEEPING:
                return _common_kind(args)
            return "i" if op is int else "f"
        if kind == "kernel":        # a @vectorize kernel on at least one float operand
            return "f"
        if kind == "unary":
            return args[0] if args[0] in ("i", "f") else "?"
        if all(a == "i" for a in args) and isinstance(op, _INTEGER_OPS):
            return "i"
        if any(a == "f" for a in args):
            return "f"
        return "?"


_KIND_KEEPING = ("clip", "square", "pow", np.minimum, np.maximum, np.fmin, np.fmax, min, max,
                 np.square, np.negative, np.positive)
"""Elementwise calls whose result is of their operands' kind: integers of integers."""

_INTEGER_OPS = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.Pow, ast.BitAnd,
                ast.BitOr, ast.BitXor, ast.LShift, ast.RShift)
"""Operators that give integers of integers (numba: int ** int is an int64)."""


def _keeps_contiguous(items):
    """Whether indexing a C-contiguous view with these items gives a C-contiguous view:
    integers on the leading dimensions, then at most one step-1 slice, then whole slices."""
    stage = 0       # 0: leading integers, 1: after the first slice
    for it in items:
        kind = it[0]
        if kind == "new":
            continue
        if kind == "int" and stage == 0:
            continue
        if kind != "slice":
            return False
        sl = it[1]
        whole = sl.lower is None and sl.upper is None and sl.step is None
        if stage == 1 and not whole:
            return False
        if sl.step is not None and not (isinstance(sl.step, ast.Constant) and
                                        sl.step.value == 1):
            return False
        stage = 1
    return True
