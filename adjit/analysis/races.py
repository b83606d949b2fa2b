"""Which thread owns each element a CUDA kernel touches: race detection and exclusivity.

A kernel's threads run in no fixed order. Its adjoint is exact only when no element is
written by one thread and read or written by another in the same launch (without atomics):
then every element a thread writes is that thread's alone, and the adjoint can consume the
written element's cotangent (`u_bar[j] = 0` after reading it) without other threads seeing
it. This module proves that, or names the race.

Each index is written as a polynomial in symbols: T (the thread's `cuda.grid(1)`), G
(`cuda.gridsize(1)`), integer kernel arguments and array sizes (the same in every thread),
and loop counters K (a loop `for j in range(lo, hi, st)` has j = lo + st * K, 0 <= K <
trip). Indices read from arrays (`perm[i]`), or assigned more than once, are unknown. Two
accesses by threads T != T' may touch the same element unless some dimension's difference
is provably never zero:

- injective: a * (T - T') with a != 0 (`u[i]`, `u[2 * i + 1]`, `u[n - 1 - i]`);
- GCD: every coefficient is a multiple of g and the constant is not (parity: red-black
  `u[2 * t + 1 + color]` against `u[2 * t + color]`, two levels `1 - cur` against `cur`);
- bounded: a * (T - T') + sum b_k (K_k - K'_k) + c with |c| + sum |b_k| (trip_k - 1) < |a|
  (`out[3 * i + k]` for k in range(3); `out[i * m + k]` for k in range(m));
- grid-stride: a * (T - T') + a * G * (K - K') (0 <= T, T' < G): `for i in range(cuda.grid(1),
  n, cuda.gridsize(1))`.
"""
import ast
import linecache
import math

from ..errors import error_at
from .. import ir

# (symbols of adjit's own start with "$", which no parameter name can: a kernel's int
# parameter `T` or `K0` is a symbol of its own)
T, G = "$T", "$G"
AXES = {"x": (T, G), "y": ("$T.y", "$G.y"), "z": ("$T.z", "$G.z")}
"""Per grid axis, the symbols of the thread's index (blockIdx * blockDim + threadIdx: the
axis of cuda.grid(k)) and of the grid's size (blockDim * gridDim: cuda.gridsize(k))."""
_GRID_SIZE = dict(AXES.values())
"""An axis' thread index symbol -> its grid size symbol."""
_VARYING = ("$T", "$K", "$threadIdx.", "$blockIdx.")
"""Symbols that differ from thread to thread (loop counters: within a thread)."""


def _canonical(poly):
    """blockIdx.a * blockDim.a + threadIdx.a as the axis' thread index, blockDim.a *
    gridDim.a as its grid size, however the kernel spelled them."""
    terms = dict(poly.terms)
    for axis, (t, g) in AXES.items():
        key = tuple(sorted((f"$blockIdx.{axis}", f"$blockDim.{axis}")))
        c = terms.get(key, 0)
        if c and terms.get((f"$threadIdx.{axis}",), 0) == c:
            del terms[key], terms[(f"$threadIdx.{axis}",)]
            terms[(t,)] = terms.get((t,), 0) + c
        key = tuple(sorted((f"$blockDim.{axis}", f"$gridDim.{axis}")))
        c = terms.pop(key, 0)
        if c:
            terms[(g,)] = terms.get((g,), 0) + c
    return Poly(terms)


class Poly:
    """An integer polynomial: {monomial (sorted tuple of symbols): int coefficient}."""

    def __init__(self, terms=None):
        self.terms = {m: c for m, c in (terms or {}).items() if c != 0}

    @staticmethod
    def const(c):
        return Poly({(): c})

    @staticmethod
    def sym(s):
        return Poly({(s,): 1})

    def __add__(self, other):
        out = dict(self.terms)
        for m, c in other.terms.items():
            out[m] = out.get(m, 0) + c
        return Poly(out)

    def __neg__(self):
        return Poly({m: -c for m, c in self.terms.items()})

    def __sub__(self, other):
        return self + (-other)

    def __mul__(self, other):
        out = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in other.terms.items():
                m = tuple(sorted(m1 + m2))
                out[m] = out.get(m, 0) + c1 * c2
        return Poly(out)

    def rename(self, mapping):
        out = {}
        for m, c in self.terms.items():
            key = tuple(sorted(mapping.get(s, s) for s in m))
            out[key] = out.get(key, 0) + c
        return Poly(out)

    def symbols(self):
        return {s for m in self.terms for s in m}


class Access:
    """One element access of the forward kernel: kind "r" (read), "w" (write) or "a"
    (atomic add), the index as Polys (None where unknown), and the statement."""

    def __init__(self, array, kind, index, stmt, leaders=frozenset()):
        self.array = array
        self.kind = kind
        self.index = index
        self.stmt = stmt
        self.leaders = leaders      # axes on which one thread per block makes the access


class Ownership:
    """The accesses of a kernel and what they prove (see the module docstring)."""

    def __init__(self, stmts, params, kinds, name, shared=()):
        self.name = name
        self.params = set(params)
        self.kinds = kinds
        self.defs = {}
        for s in ir.walk_stmts(stmts):
            if isinstance(s, ast.Assign) and not ir.is_store(s):
                self.defs.setdefault(ir.target_name(s), []).append(s)
            elif isinstance(s, ast.For):
                self.defs.setdefault(s.target.id, []).append(s)
        self.bounds = {}        # loop counter -> trip count (Poly) when known
        self._memo = {}
        # the grid axes the kernel's threads may differ in: x, and y or z where it reads them
        self.coords = {T} | {AXES[v.attr][0] for s in ir.walk_stmts(stmts)
                             if isinstance(s, ast.Assign) and isinstance(v := s.value,
                                                                         ast.Attribute)
                             and v.attr in ("y", "z")}
        self.shared = set(shared)
        self.accesses = []
        self._collect(stmts, frozenset())

    def _collect(self, stmts, leaders):
        """The accesses of a block; `leaders`: the axes on which an enclosing `if` picks
        one thread of each block (`if cuda.threadIdx.x == 0:`)."""
        for s in stmts:
            if isinstance(s, ast.If):
                self._collect(s.body, leaders | self._leader_axes(s.test))
                self._collect(s.orelse, leaders)
            elif isinstance(s, (ast.For, ast.While)):
                self._collect(s.body, leaders)
            elif not isinstance(s, ast.Assign):
                continue
            elif ir.is_store(s):
                sub = s.targets[0]
                kind = "a" if ir.note(s, "atomic", False) else "w"
                self.accesses.append(Access(sub.value.id, kind, self.index(sub), s, leaders))
            elif isinstance(s.value, ast.Subscript) and isinstance(s.value.value, ast.Name):
                self.accesses.append(Access(s.value.value.id, "r", self.index(s.value), s,
                                            leaders))

    def _leader_axes(self, test):
        """{axis} when the test is `threadIdx.axis == c` for a constant c."""
        sites = self.defs.get(test.id, []) if isinstance(test, ast.Name) else []
        if len(sites) != 1 or not isinstance(sites[0], ast.Assign):
            return frozenset()
        v = sites[0].value
        if isinstance(v, ast.Name):             # (a copy of the test)
            return self._leader_axes(v)
        if not (isinstance(v, ast.Compare) and len(v.ops) == 1 and isinstance(v.ops[0], ast.Eq)):
            return frozenset()
        a, b = self.value(v.left), self.value(v.comparators[0])
        for x, y in ((a, b), (b, a)):
            if x is not None and y is not None and not y.symbols() and len(x.terms) == 1:
                (mono, coeff), = x.terms.items()
                if coeff == 1 and len(mono) == 1 and mono[0].startswith("$threadIdx."):
                    return frozenset({mono[0][len("$threadIdx."):]})
        return frozenset()

    # symbolic values ---------------------------------------------------------------
    def index(self, sub):
        return [self.value(a) for a in ir.index_atoms(sub)]

    def value(self, atom):
        """The Poly an integer atom holds, or None when it cannot be known."""
        if isinstance(atom, ast.Constant):
            return Poly.const(atom.value) if isinstance(atom.value, int) else None
        name = atom.id
        if name in self._memo:
            return self._memo[name]
        self._memo[name] = None     # a cycle (a loop-carried index) stays unknown
        value = self._value_of(name)
        self._memo[name] = None if value is None else _canonical(value)
        return self._memo[name]

    def _value_of(self, name):
        if name in self.params:
            return Poly.sym(name) if self.kinds.get(name) == "int" else None
        sites = self.defs.get(name, [])
        if len(sites) != 1:
            return None
        s = sites[0]
        if isinstance(s, ast.For):
            lo, hi, st = s._bounds
            lo, hi, st = self.value(lo), self.value(hi), self.value(st)
            if lo is None or st is None:
                return None
            counter = f"$K{len(self.bounds) + 1}:{name}"
            self.bounds[counter] = (hi - lo) if hi is not None and _is_one(st) else None
            return lo + st * Poly.sym(counter)
        return self._rhs(s.value)

    def _rhs(self, v):
        if ir.is_atom(v):
            return self.value(v)
        if isinstance(v, ast.BinOp):
            a, b = self.value(v.left), self.value(v.right)
            if a is None or b is None:
                return None
            if isinstance(v.op, ast.Add):
                return a + b
            if isinstance(v.op, ast.Sub):
                return a - b
            if isinstance(v.op, ast.Mult):
                return a * b
            return None
        if isinstance(v, ast.UnaryOp) and isinstance(v.op, ast.USub):
            a = self.value(v.operand)
            return None if a is None else -a
        if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and \
                isinstance(v.func.value, ast.Name) and v.func.value.id == "cuda":
            return Poly.sym(T if v.func.attr == "grid" else G)
        if isinstance(v, ast.Attribute):        # cuda.threadIdx.x, ...
            return Poly.sym(f"${v.value.attr}.{v.attr}")
        if isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "len" \
                and isinstance(v.args[0], ast.Name) and v.args[0].id in self.params:
            return Poly.sym(f"$len({v.args[0].id})")
        if isinstance(v, ast.Subscript) and isinstance(v.value, ast.Attribute) and \
                isinstance(v.value.value, ast.Name) and v.value.value.id in self.params and \
                isinstance(v.slice, ast.Constant):
            return Poly.sym(f"${v.value.value.id}.shape[{v.slice.value}]")
        return None

    # races ---------------------------------------------------------------------------
    def check(self):
        """Raise an AdjitError at the first pair of accesses two threads may race on."""
        by_array = {}
        for acc in self.accesses:
            if acc.array in self.params:    # (a cuda.local.array is the thread's own)
                by_array.setdefault(acc.array, []).append(acc)
        for array, accs in by_array.items():
            for p in accs:
                if p.kind == "r":
                    continue
                for q in accs:
                    if p.kind == "a" and q.kind == "a":
                        continue
                    if self.may_share(p, q):
                        raise self._race(p, q)

    def exclusive(self, array, index_atoms):
        """Whether the element array[index] is touched by this thread alone (no other
        thread reads or writes it): its shadow then needs no atomic update."""
        if array in self.shared:
            return self._own_shared(array, [self.value(a) for a in index_atoms])
        if array not in self.params:        # a cuda.local.array: the thread's own
            return True
        probe = Access(array, "r", [self.value(a) for a in index_atoms], None)
        return all(not self.may_share(probe, q) for q in self.accesses if q.array == array)

    def _own_shared(self, array, index):
        """An element of a block's shared array is one thread's alone when the kernel
        touches that array only at this index, and the index is the thread's position in
        the block on every axis its threads differ in (`tile[cuda.threadIdx.x]`)."""
        if any(d is None for d in index):
            return False
        own = {(f"$threadIdx.{ax}",) for ax, t in (("x", T), ("y", "$T.y"), ("z", "$T.z"))
               if t in self.coords}
        if not own <= {m for d in index if len(d.terms) == 1 for m, c in d.terms.items()
                       if c == 1}:
            return False
        return all(len(q.index) == len(index) and
                   all(a is not None and a.terms == b.terms for a, b in zip(q.index, index))
                   for q in self.accesses if q.array == array)

    def may_share(self, p, q):
        """Whether two threads may touch one element with p (one thread) and q (another).
        Two threads differ in the index of some grid axis the kernel reads (self.coords):
        the element is the thread's own when, for each such axis, some dimension of the
        index is nonzero whenever the threads' indices on that axis differ."""
        if len(p.index) != len(q.index):
            return True
        # both made by one thread per block on an axis: blocks tell them apart
        leaders = {f"$blockIdx.{ax}": AXES[ax][0] for ax in p.leaders & q.leaders}
        covered = set()
        for a, b in zip(p.index, q.index):
            if a is None or b is None:
                continue
            if leaders:
                a, b = a.rename(leaders), b.rename(leaders)
            d = a - self._other_thread(b)
            if _always_nonzero(d):
                return False
            covered |= {t for t in self.coords if self._never_zero(d, t)}
        return not covered >= self.coords

    def _other_thread(self, poly):
        mapping = {s: s + "'" for s in poly.symbols() if s.startswith(_VARYING)}
        return poly.rename(mapping)

    def _never_zero(self, d, t):
        """Whether d (primed symbols the other thread's) is nonzero whenever the threads'
        indices t and t' on one grid axis differ."""
        g = _GRID_SIZE[t]
        terms = dict(d.terms)
        const = terms.pop((), 0)
        a = terms.get((t,), 0)
        if a != 0 and terms.get((t + "'",), 0) == -a:
            rest = {m: c for m, c in terms.items() if m not in ((t,), (t + "'",))}
            if not rest and const == 0:
                return True                                     # injective
            if const == 0 and self._grid_stride(rest, a, g):
                return True
            if self._bounded(rest, const, abs(a)):
                return True
        return const == 0 and self._row_stride(terms, t)

    def _row_stride(self, terms, t):
        """a * m * (t - t') + b * (K - K') with K's trip count m and |b| <= |a|: rows of m
        elements, one row per thread (`out[i * m + k]` for k in range(m)); t the thread
        index symbol of one grid axis."""
        rows = [(m, c) for m, c in terms.items() if t in m or t + "'" in m]
        if len(rows) != 2 or len(terms) != 4:
            return False
        (m1, a), (m2, a2) = rows
        if a2 != -a or len(m1) != 2 or len(m2) != 2:
            return False
        width = [x for x in m1 if x not in (t, t + "'")]
        if len(width) != 1 or sorted(m2) != sorted([width[0], t + "'" if t in m1 else t]):
            return False
        ks = [(m, c) for m, c in terms.items() if (m, c) not in rows]
        if any(len(m) != 1 or not m[0].startswith("$K") for m, _ in ks):
            return False
        (k1, b), (k2, b2) = ks
        k = k1[0].rstrip("'")
        return b2 == -b and {k1[0], k2[0]} == {k, k + "'"} and abs(b) <= abs(a) and \
            self.bounds.get(k) is not None and self.bounds[k].terms == {(width[0],): 1}

    def _grid_stride(self, rest, a, g):
        """rest == a * g * (K - K') for one loop counter K, g an axis' grid size symbol."""
        counters = {s for m in rest for s in m if s.startswith("$K")}
        if len(counters) != 2 or len(rest) != 2:
            return False
        k = next(c for c in counters if not c.endswith("'"))
        return rest.get(tuple(sorted((g, k)))) == a and \
            rest.get(tuple(sorted((g, k + "'")))) == -a

    def _bounded(self, rest, const, a):
        """|const| + sum |b| (trip - 1) < a over terms b * (K - K') with known trips."""
        spread = abs(const)
        seen = set()
        for m, c in rest.items():
            if len(m) != 1 or not m[0].startswith("$K"):
                return False
            k = m[0].rstrip("'")
            if k in seen:
                continue
            seen.add(k)
            if rest.get((k,), 0) != -rest.get((k + "'",), 0):
                return False
            trip = self.bounds.get(k)
            if trip is None or set(trip.terms) - {()}:
                return False
            spread += abs(c) * (trip.terms.get((), 0) - 1)
        return spread < a

    def _race(self, p, q):
        what = {("w", "w"): "two threads may write one element of",
                ("w", "r"): "a thread may read an element of",
                ("w", "a"): "a thread may add atomically to an element of",
                ("a", "r"): "a thread may read an element of",
                ("a", "w"): "a thread may write an element of"}[(p.kind, q.kind)]
        verb = {"w": "another thread writes", "a": "the launch adds to atomically"}[p.kind]
        quotes = list(dict.fromkeys([_quote(p.stmt), _quote(q.stmt)]))
        where = " and ".join(quotes)
        detail = f"{what} '{p.array}'" if p.kind == q.kind == "w" else \
            f"{what} '{p.array}' that {verb}"
        return error_at(ir.note(p.stmt, "origin", None),
                        f"a race in kernel '{self.name}': {detail} in the same launch "
                        f"({where}), so the result depends on the order the threads run in",
                        "Give each thread its own elements (write out[i] with i = "
                        "cuda.grid(1); an index read from an array, out[perm[i]], cannot be "
                        "proved to be the thread's own), accumulate with cuda.atomic.add(a, "
                        "k, v), write the new values into a second array, or split the work "
                        "into two launches.")


def _always_nonzero(d):
    """The GCD test: every coefficient of d is a multiple of g and its constant is not
    (parity: red-black `u[2 * t + 1 + color]` against `u[2 * t + color]`)."""
    terms = dict(d.terms)
    const = terms.pop((), 0)
    g = 0
    for c in terms.values():
        g = math.gcd(g, c)
    return bool(terms) and const % g != 0


def _quote(stmt):
    """`line N: <the user's source line>` for a normalized statement."""
    origin = ir.note(stmt, "origin", None)
    if not origin:
        return "a statement"
    text = linecache.getline(origin[0], origin[1]).strip()
    return f"line {origin[1]}: `{text}`" if text else f"line {origin[1]}"


def _is_one(p):
    return p is not None and p.terms == {(): 1}
