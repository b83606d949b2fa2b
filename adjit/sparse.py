"""Sparse Jacobians and Hessians from a given sparsity pattern: colored, compressed,
decompressed.

`jacobian(f, sparse=P)` with P the Jacobian's pattern (a scipy.sparse matrix or a boolean
array of shape (f(x).size, x.size), both flattened in C order) evaluates one jvp per color
of the columns (or one vjp per color of the rows, where the rows need fewer colors) in one
compiled call, and returns a scipy.sparse.csr_array with the pattern's entries.

Columns j and k may share a color when no row has an entry in both (a distance-2 coloring
of the bipartite graph of the pattern): the jvp in the direction of all the columns of one
color then gives each of their entries alone in its row. The coloring is greedy in the
largest-first order (Gebremedhin, Manne and Pothen, "What color is your Jacobian? Graph
coloring for computing derivatives", SIAM Review 47(4), 2005, section 3), computed once per
pattern.

A pattern that misses an entry that is not zero at the arguments would give a plausible
wrong Jacobian (the missing entry added to another of its row, or dropped). Every call
checks the result: one more jvp in a random direction v must equal J v to rounding, else an
AdjitError names the rows that differ. `hessian(f, sparse=P)` is the same with one hvp
per column color (the pattern made symmetric; the columns' distance-2 coloring, not yet the
star coloring that would need fewer).

`sparse=True` detects the pattern from the program (adjit/patterns.py), once per argument
types, shapes and integer values; `.pattern`, `.colors` and `.by` are those of the last call.
"""
import weakref

import numba
import numpy as np

from .codegen.emit import exec_source, njit
from .errors import function_error as _error
from .runtime.generator import restore_generator, save_generator
from .runtime.jitcache import key_by_level


_LOOPS = weakref.WeakKeyDictionary()
"""jvp object -> {(kind, by, argument types): the compiled loop over colors}."""


@numba.njit(cache=True)
def _start(ptr, n):
    """A greedy coloring's start: the vertices (ptr: each one's neighbours) by decreasing
    degree, their colors (-1: none yet), the forbidden-color marks."""
    degree = np.empty(n, np.int64)
    for j in range(n):
        degree[j] = ptr[j + 1] - ptr[j]
    return _largest_first(degree), np.full(n, -1, np.int64), np.full(n + 1, -1, np.int64)


@numba.njit(cache=True)
def _largest_first(degree):
    """The vertices by decreasing degree, ties in index order (a counting sort)."""
    n = degree.size
    top = 0
    for j in range(n):
        top = max(top, degree[j])
    count = np.zeros(top + 2, np.int64)
    for j in range(n):
        count[top - degree[j] + 1] += 1
    for d in range(1, top + 2):
        count[d] += count[d - 1]
    order = np.empty(n, np.int64)
    for j in range(n):
        k = top - degree[j]
        order[count[k]] = j
        count[k] += 1
    return order


@numba.njit(cache=True)
def _color(ptr, idx, tptr, tidx, n, m):
    """Greedy distance-2 coloring of the n columns of a pattern given by its columns (ptr,
    idx: rows of each column) and rows (tptr, tidx: columns of each row), largest degree
    first. Returns (colors, number of colors)."""
    order, colors, forbidden = _start(ptr, n)
    used = 0
    for t in range(n):
        j = order[t]
        for p in range(ptr[j], ptr[j + 1]):
            i = idx[p]
            for q in range(tptr[i], tptr[i + 1]):
                c = colors[tidx[q]]
                if c >= 0:
                    forbidden[c] = j
        c = 0
        while forbidden[c] == j:
            c += 1
        colors[j] = c
        if c + 1 > used:
            used = c + 1
    return colors, used


@numba.njit(cache=True)
def _star_color(ptr, idx, n):
    """Greedy star coloring of the graph of a symmetric pattern (ptr, idx: its rows; the
    diagonal is skipped), largest degree first: a distance-1 coloring in which every path
    on four vertices has at least three colors. Vertex v may not take the color c of x on
    a path v - w - x if x has another neighbour of w's color (v - w - x - y would be a
    two-colored path) or v has (u - v - w - x would be). Gebremedhin, Manne and Pothen,
    SIAM Review 47(4), 2005, section 4.2. Returns (colors, number of colors)."""
    order, colors, forbidden = _start(ptr, n)
    used = 0
    for t in range(n):
        v = order[t]
        for p in range(ptr[v], ptr[v + 1]):
            w = idx[p]
            if w != v and colors[w] >= 0:
                forbidden[colors[w]] = v
        for p in range(ptr[v], ptr[v + 1]):
            w = idx[p]
            cw = colors[w]
            if w == v or cw < 0:
                continue
            twice = False           # another neighbour of v with w's color
            for q in range(ptr[v], ptr[v + 1]):
                u = idx[q]
                if u != w and u != v and colors[u] == cw:
                    twice = True
                    break
            for r in range(ptr[w], ptr[w + 1]):
                x = idx[r]
                cx = colors[x]
                if x == v or x == w or cx < 0 or forbidden[cx] == v:
                    continue
                if twice:
                    forbidden[cx] = v
                    continue
                for q in range(ptr[x], ptr[x + 1]):
                    y = idx[q]
                    if y != w and y != x and colors[y] == cw:
                        forbidden[cx] = v
                        break
        c = 0
        while forbidden[c] == v:
            c += 1
        colors[v] = c
        if c + 1 > used:
            used = c + 1
    return colors, used


@numba.njit(cache=True)
def _star_reads(ptr, idx, colors, n):
    """Where a star coloring's products hold each entry (i, j) of the symmetric pattern (in
    its CSR order): (the color of the product, the element read). Row i of the product of
    color(j) holds H[i, j] alone where j is i's only neighbour of that color, else row j of
    the product of color(i) does (one of the two holds in a star coloring)."""
    nnz = ptr[n]
    color = np.empty(nnz, np.int64)
    read = np.empty(nnz, np.int64)
    for i in range(n):
        for p in range(ptr[i], ptr[i + 1]):
            j = idx[p]
            alone = True
            if i != j:
                for q in range(ptr[i], ptr[i + 1]):
                    k = idx[q]
                    if k != j and k != i and colors[k] == colors[j]:
                        alone = False
                        break
            if alone:
                color[p], read[p] = colors[j], i
            else:
                color[p], read[p] = colors[i], j
    return color, read


class SparseJacobian:
    """The callable `jacobian(f, argnums, sparse=P)` returns: `J(*args)` is a
    scipy.sparse.csr_array; `.pattern` is P (a boolean csr_array), `.colors` the color of
    each column (or row, `.by == "rows"`) used."""

    def __init__(self, fn, argnums, pattern, jvp, vjp, hvp=None):
        self.kind = "jacobian" if hvp is None else "hessian"
        if not isinstance(argnums, int):
            raise _error(fn, f"{self.kind}(sparse=...) with argnums={argnums!r}",
                         "Give one argument (an int): a sparse Jacobian is of one array.")
        self.fn = fn
        self.argnums = argnums
        self._jvp = jvp         # adjit.jvp(fn, argnums) and adjit.vjp(fn, argnums)
        self._vjp = vjp
        self._hvp = hvp         # adjit.hvp(fn, argnums), for a Hessian
        self._compiled = _LOOPS.setdefault(jvp, {})    # (shared by every pattern of f)
        self._colored = {}      # detected pattern's key -> (pattern, by, colors, ...)
        if pattern is True:     # detected from the program, per argument types and shapes
            from .patterns import Sparsity
            self._detect = Sparsity(fn, argnums, hessian=hvp is not None)
            self.pattern = self.colors = self.by = self.ncolors = None
        else:
            self._detect = None
            self._use(self._color(_as_pattern(fn, pattern)))
        self.__adjit_function__ = fn

    def _color(self, pattern):
        """(pattern, by, colors, number of colors, the CSR structure's pointers, indices,
        and per entry the color of the product holding it and the element read there)."""
        if self._hvp is not None and pattern.shape[0] != pattern.shape[1]:
            raise _error(self.fn, f"a Hessian pattern of shape {pattern.shape}",
                         "Give a square pattern, (x.size, x.size).")
        if self._hvp is not None:     # symmetric: the pattern's transpose too
            pattern = (pattern + pattern.T).astype(bool).tocsr()
        pattern = pattern.tocsr()
        pattern.sort_indices()
        cols = pattern.tocsc()
        cols.sort_indices()
        m, n = pattern.shape
        col_ptr, col_idx = cols.indptr.astype(np.int64), cols.indices.astype(np.int64)
        row_ptr, row_idx = pattern.indptr.astype(np.int64), pattern.indices.astype(np.int64)
        rows_of = np.repeat(np.arange(m, dtype=np.int64), np.diff(row_ptr))
        if self._hvp is not None:     # a star coloring: symmetric entries from either side
            colors, k = _star_color(row_ptr, row_idx, n)
            color, read = _star_reads(row_ptr, row_idx, colors, n)
            by = "star"
        else:
            by_cols, k_cols = _color(col_ptr, col_idx, row_ptr, row_idx, n, m)
            # rows instead where they need fewer colors
            by_rows, k_rows = _color(row_ptr, row_idx, col_ptr, col_idx, m, n)
            if k_rows < k_cols:       # entry (i, j): element j of the vjp of i's color
                by, colors, k = "rows", by_rows, k_rows
                color, read = by_rows[rows_of], row_idx
            else:                     # entry (i, j): element i of the jvp of j's color
                by, colors, k = "columns", by_cols, k_cols
                color, read = by_cols[row_idx], rows_of
        order = np.argsort(color, kind="stable").astype(np.int64)
        starts = np.zeros(k + 1, np.int64)
        np.cumsum(np.bincount(color, minlength=k), out=starts[1:])
        return (pattern, by, colors, int(k), row_ptr, row_idx,
                (order, starts, np.ascontiguousarray(read, dtype=np.int64)))

    def _use(self, colored):
        (self.pattern, self.by, self.colors, self.ncolors, self._ptr, self._idx,
         self._reads) = colored

    def __call__(self, *args):
        import scipy.sparse
        x = np.asarray(args[self.argnums])
        if x.ndim == 0:
            raise _error(self.fn, f"{self.kind}(sparse=...) in a float argument",
                         "Differentiate an array argument.")
        if self._detect is not None:
            from .patterns import key_of
            key = key_of(args)
            colored = self._colored.get(key)
            if colored is None:
                colored = self._colored[key] = self._color(self._detect(*args))
            self._use(colored)
        m, n = self.pattern.shape
        if x.size != n:
            raise _error(self.fn, f"a pattern with {n} columns for an argument of {x.size} "
                                  "elements", "Give the pattern shape (f(x).size, x.size).")
        types = (self.kind, self.by) + tuple(numba.typeof(a) for a in args)
        loop = self._compiled.get(types)
        if loop is None:
            loop = self._compiled[types] = self._make(len(args), types)
        value, data = loop(*args, self.colors, self.ncolors, *self._reads)
        if self.kind == "jacobian" and np.size(value) != m:
            raise _error(self.fn, f"a pattern with {m} rows for a result of {np.size(value)} "
                                  "elements", "Give the pattern shape (f(x).size, x.size).")
        J = scipy.sparse.csr_array((data, self._idx.copy(), self._ptr.copy()), shape=(m, n))
        self._check(J, args, x)
        return J

    def _check(self, J, args, x):
        """One jvp in a random direction must be J v: else the pattern misses an entry."""
        v = np.random.default_rng(12345).uniform(0.5, 1.5, x.size) * \
            np.where(np.arange(x.size) % 2 == 0, 1.0, -1.0)
        direction = v.reshape(x.shape).astype(x.dtype)
        if self.kind == "hessian":
            want = np.asarray(self._hvp(*args, direction), dtype=np.float64).ravel()
        else:
            want = np.asarray(self._jvp(*args, direction)[1], dtype=np.float64).ravel()
        got = J @ v
        scale = abs(J) @ np.abs(v) + np.abs(want) + 1e-300
        # (rounding: the products sum in other orders; float32 arguments round more)
        tol = max(1e-8, 1e3 * float(np.finfo(x.dtype).eps)) if x.dtype.kind == "f" else 1e-8
        bad = np.nonzero(np.abs(got - want) > tol * scale + 1e-4 * tol * np.max(scale))[0]
        if bad.size and self._detect is not None:
            raise _error(self.fn, f"the sparsity pattern adjit detected misses entries of the "
                                  f"{self.kind.capitalize()} at these arguments ({bad.size} "
                                  f"row(s), the first {int(bad[0])}): an internal error",
                         "Please report it with the function; meanwhile pass the pattern "
                         "(sparse=P).")
        if bad.size:
            raise _error(self.fn, f"a sparsity pattern that misses entries of the "
                                  f"{self.kind.capitalize()} at these arguments (J v differs "
                                  f"from the {'hvp' if self._hvp else 'jvp'} in "
                                  f"{bad.size} row(s), the first {int(bad[0])})",
                         "Give every entry that can be nonzero (both sides of a branch, every "
                         "element an index computed from data may reach).")

    def _make(self, count, types):
        """The compiled loop over colors: (value, data in the structure's order)."""
        params = [f"_a{k}" for k in range(count)]
        args = ", ".join(params)
        x = params[self.argnums]
        value = f"_jvp({args}, np.zeros_like({x}))[0]" if self.kind == "jacobian" else "0.0"
        lines = [f"def sparse_jacobian({args}, _colors, _ncolors, _order, _starts, _read):",
                 "    _generator = save_generator()",
                 f"    _value = {value}",
                 "    _data = np.empty(_read.size)",
                 "    _k = _colors.size",
                 "    _seed = np.zeros(_k)" if self.by == "rows" else
                 f"    _seed = np.zeros(_k, {x}.dtype)",
                 "    for _c in range(_ncolors):",
                 "        restore_generator(_generator)",
                 "        for _j in range(_k):",
                 "            _seed[_j] = 1.0 if _colors[_j] == _c else 0.0"]
        if self.kind == "hessian":
            lines.append(f"        _got = _hvp({args}, _seed.reshape({x}.shape)).ravel()")
        elif self.by == "columns":
            lines.append(f"        _got = _jvp({args}, _seed.reshape({x}.shape))[1].ravel()")
        else:
            lines.append(f"        _got = _vjp({args}, _seed.reshape(_value.shape))[1].ravel()")
        lines += ["        for _q in range(_starts[_c], _starts[_c + 1]):",
                  "            _p = _order[_q]",
                  "            _data[_p] = _got[_read[_p]]",
                  "    restore_generator(_generator)",
                  "    return _value, _data"]
        namespace = {"np": np, "_jvp": self._jvp, "_vjp": self._vjp, "_hvp": self._hvp,
                     "save_generator": save_generator, "restore_generator": restore_generator}
        pyfunc = exec_source("\n".join(lines) + "\n", "sparse_jacobian", namespace)
        return njit()(pyfunc)


def _as_pattern(fn, pattern):
    import scipy.sparse
    if scipy.sparse.issparse(pattern):
        P = scipy.sparse.csr_array(pattern, dtype=bool)
    else:
        a = np.asarray(pattern)
        if a.ndim != 2:
            raise _error(fn, f"a sparsity pattern of {a.ndim} dimension(s)",
                         "Give a scipy.sparse matrix or a 2-D boolean array of shape "
                         "(f(x).size, x.size).")
        P = scipy.sparse.csr_array(a != 0)
    P.eliminate_zeros()
    P.sort_indices()
    return P


key_by_level(globals())     # numba caches each level apart (runtime/jitcache.py)
