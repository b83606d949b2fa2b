"""Sparsity patterns read from the program: `adjit.sparsity(f, argnums)(*args)`.

The pattern of a Jacobian is which outputs can depend on which inputs, for every value the
float arguments can take (types, shapes and the values of integer and boolean arguments
fixed). adjit finds it by running the normalized program (helpers inlined, vectorized numpy
lowered to element loops, views made index arithmetic: `adjit.show(f, "normalized", ...)`)
on abstract numbers: every float is a `Dep`, the set of the differentiated argument's
elements it depends on, and every integer or boolean computed from integers alone keeps its
value. The program is rewritten for that (`source`, printable as
`adjit.show(f, "sparsity", ...)`):

- an operation's result depends on the operands its registry rule gives a partial for
  (`a // b` and comparisons on nothing, `a * b` on both); a call adjit has no rule for on
  every float it is given, and it may write into every array it is given;
- an integer or boolean computed from float data is unknown: an element read at an unknown
  index is the union of the whole array, a store at one reaches every element;
- a branch whose test is unknown runs both sides: the numbers either side assigns are
  joined afterwards, and array stores inside it add to what an element held (they may not
  happen); a `break` under such a branch is recorded (the numbers at that point joined
  into what the loop ends with) and the loop goes on with its stores added, and a `while`
  loop (or a `for` loop whose count is unknown) goes on until nothing changes;
- what cannot be bounded (an array size computed from float data, an array variable a
  branch on float data rebinds) is an AdjitError that says so: pass the pattern instead
  (`jacobian(f, sparse=P)`).

For a Hessian each number also carries the pairs of inputs its second derivative can
couple: an operation adds the products of the dependencies of operands whose partials
mention each other (`a * b` couples a's inputs with b's, `sin(x)` x's with themselves,
`a + b` nothing).

The run is interpreted Python: a Brusselator on a 64 x 64 grid (8,192 unknowns, about
half a million statements) takes about a second, once per argument types and shapes.
"""
import ast
import copy
import itertools

import numpy as np

from . import ir
from .analysis.effects import of_object as effect_of
from .errors import AdjitError, function_error as _error
from .rules.registry import REGISTRY
from .rules.table import ARRAY_QUERIES

EMPTY = frozenset()


class Unbounded(Exception):
    """The program uses a value computed from float data where the pattern needs it known
    (an array size, a loop bound): args are (the construct, the advice)."""


class Dep:
    """An abstract number: `deps` the inputs it can depend on, `kind` "f", "i" or "b",
    `hess` (Hessian patterns only) the pairs (i, j), i <= j, of inputs its second
    derivative can couple."""
    __slots__ = ("deps", "kind", "hess")

    def __init__(self, deps=EMPTY, kind="f", hess=None):
        self.deps = deps
        self.kind = kind
        self.hess = hess

    def __repr__(self):
        return f"Dep({sorted(self.deps)}, {self.kind!r})"

    __hash__ = object.__hash__

    def __bool__(self):
        raise Unbounded("a condition computed from float data used as a number",
                        "Pass the pattern: jacobian(f, sparse=P).")

    def __index__(self):
        raise Unbounded("an integer computed from float data used as a size or count",
                        "Pass the pattern: jacobian(f, sparse=P).")

    __int__ = __float__ = __index__


def _operator(cls):
    info = _info(REGISTRY.get(cls).rule)

    def forward(a, b):
        if isinstance(b, np.ndarray):
            return NotImplemented
        return _apply(info, (a, b))

    def reflected(a, b):
        if isinstance(b, np.ndarray):
            return NotImplemented
        return _apply(info, (b, a))
    return forward, reflected


def _unary(cls):
    info = _info(REGISTRY.get(cls).rule)
    return lambda a: _apply(info, (a,))


def _compare(a, b):
    if isinstance(b, np.ndarray):
        return NotImplemented
    return Dep(EMPTY, "b")


def _bitwise(a, b):
    if isinstance(b, np.ndarray):
        return NotImplemented
    kinds = {_kind(a), _kind(b)}
    return Dep(EMPTY, "b" if kinds == {"b"} else "i")


class _Info:
    """What a rule says for patterns: which operands a derivative flows through, which
    operands each partial mentions (its second derivative couples them), the operand a
    partial is alone (`a * b`: a's partial is b, so nothing flows from a where b is a
    constant zero), the result's kind."""
    __slots__ = ("flows", "mentions", "factor", "result")


_INFOS = {}
"""Rule -> its _Info."""


def _info(rule):
    info = _INFOS.get(rule)
    if info is not None:
        return info
    info = _Info()
    info.flows = tuple(p is not None for p in rule.partials)
    every = tuple(range(len(rule.params)))
    mentions = []
    for p in rule.partials:
        names = set() if p is None else {n.id for n in ast.walk(p) if isinstance(n, ast.Name)}
        mentions.append(every if "out" in names else
                        tuple(k for k, q in enumerate(rule.params) if q in names))
    info.mentions = tuple(mentions)
    info.factor = tuple(rule.params.index(p.id) if isinstance(p, ast.Name) and
                        p.id in rule.params else None for p in rule.partials)
    info.result = rule.result
    _INFOS[rule] = info
    return info


def _kind(v):
    if type(v) is Dep:
        return v.kind
    if isinstance(v, (bool, np.bool_)):
        return "b"
    if isinstance(v, (int, np.integer)):
        return "i"
    return "f"


def _zero(v):
    """A constant zero (a number the program computes from constants alone)."""
    return type(v) in (float, int, np.float64, np.float32, np.int64) and v == 0


def _cross(a, b):
    return frozenset((i, j) if i <= j else (j, i) for i in a for j in b)


def _apply(info, args):
    """The abstract result of a rule's operation on `args` (numbers, some of them Deps)."""
    deps = EMPTY
    hess = None
    flows = info.flows
    if any(m is not None and _zero(args[m]) for m in info.factor):
        flows = tuple(f and (m is None or not _zero(args[m]))
                      for f, m in zip(flows, info.factor))
    for k, a in enumerate(args):
        if type(a) is Dep:
            if flows[k] and a.deps:
                deps = a.deps if not deps else deps | a.deps
            if a.hess is not None:
                hess = a.hess if hess is None else hess | a.hess
    if hess is not None:
        for k, a in enumerate(args):
            if flows[k] and type(a) is Dep and a.deps:
                for m in info.mentions[k]:
                    b = args[m]
                    if type(b) is Dep and b.deps:
                        hess = hess | _cross(a.deps, b.deps)
    result = info.result
    if result == "float":
        kind = "f"
    elif result == "int":
        kind = "i"
    elif result == "bool":
        kind = "b"
    else:
        kind = "f" if any(_kind(a) == "f" for a in args) else "i"
    return Dep(deps, kind, hess)


for _cls, _names in ((ast.Add, ("add", "radd")), (ast.Sub, ("sub", "rsub")),
                     (ast.Mult, ("mul", "rmul")), (ast.Div, ("truediv", "rtruediv")),
                     (ast.Pow, ("pow", "rpow")), (ast.Mod, ("mod", "rmod")),
                     (ast.FloorDiv, ("floordiv", "rfloordiv"))):
    _f, _r = _operator(_cls)
    setattr(Dep, f"__{_names[0]}__", _f)
    setattr(Dep, f"__{_names[1]}__", _r)
Dep.__neg__ = _unary(ast.USub)
Dep.__pos__ = _unary(ast.UAdd)
Dep.__abs__ = _unary(abs)
for _name in ("lt", "le", "gt", "ge", "eq", "ne"):
    setattr(Dep, f"__{_name}__", _compare)
for _name in ("and", "rand", "or", "ror", "xor", "rxor", "lshift", "rlshift", "rshift",
              "rrshift"):
    setattr(Dep, f"__{_name}__", _bitwise)
Dep.__invert__ = lambda a: Dep(EMPTY, a.kind)


# values: abstract or concrete --------------------------------------------------------------
def _is_abstract(v):
    t = type(v)
    if t is Dep:
        return True
    if t is np.ndarray:
        return v.dtype == object and any(type(e) is Dep for e in v.flat)
    if t is tuple or t is list:
        return any(_is_abstract(e) for e in v)
    return False


def _deps_of(v):
    """(union of the inputs `v` depends on, union of its Hessian pairs or None)."""
    t = type(v)
    if t is Dep:
        return v.deps, v.hess
    if t is np.ndarray and v.dtype == object:
        deps, hess = set(), None
        for e in v.flat:
            if type(e) is Dep:
                deps |= e.deps
                if e.hess is not None:
                    hess = set(e.hess) if hess is None else hess | e.hess
        return frozenset(deps), (None if hess is None else frozenset(hess))
    if t is tuple or t is list:
        deps, hess = EMPTY, None
        for e in v:
            d, h = _deps_of(e)
            deps = deps | d
            if h is not None:
                hess = h if hess is None else hess | h
        return deps, hess
    return EMPTY, None


def _join(a, b):
    """The least value covering both `a` and `b` (scalars)."""
    if a is b or a is _UNDEF:
        return b
    if b is _UNDEF:
        return a
    ta, tb = type(a), type(b)
    kind = "f" if "f" in (_kind(a), _kind(b)) else _kind(a)
    if ta is not Dep and tb is not Dep:
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            raise Unbounded("an array chosen by a branch on float data",
                            "Pass the pattern: jacobian(f, sparse=P).")
        try:
            if ta is tb and a == b:
                return a
        except (TypeError, ValueError):
            pass
        if ta is tuple and tb is tuple and len(a) == len(b):
            return tuple(_join(x, y) for x, y in zip(a, b))
        return Dep(EMPTY, kind)
    da = a.deps if ta is Dep else EMPTY
    db = b.deps if tb is Dep else EMPTY
    ha = a.hess if ta is Dep else None
    hb = b.hess if tb is Dep else None
    hess = ha if hb is None else hb if ha is None else ha | hb
    if ta is Dep and tb is Dep and da == db and a.kind == kind and hess == ha:
        return a
    return Dep(da | db, kind, hess)


class _Undefined:
    def __repr__(self):
        return "UNDEF"


_UNDEF = _Undefined()


class _StandIns:
    """Concrete values for unknown numbers, to ask a function for its result's shape: each
    unknown float a different one (two tries draw differently, so that a shape that depends
    on the values, np.arange(x0, x0 + 2.0, 0.5), shows), unknown integers 1 or 2."""

    def __init__(self, which):
        self.which = which
        self.rng = None         # (made at the first unknown float: most calls have none)

    def __call__(self, v):
        t = type(v)
        if t is Dep:
            if v.kind == "f":
                if self.rng is None:
                    self.rng = np.random.default_rng(self.which)
                return float(self.rng.uniform(0.5, 1.5))
            return (1, 2)[self.which] if v.kind == "i" else (True, False)[self.which]
        if t is np.ndarray and v.dtype == object:
            kind = _element_kind({_kind(e) for e in v.flat})
            out = np.empty(v.shape, {"f": np.float64, "i": np.int64, "b": np.bool_}[kind])
            flat = out.reshape(-1)
            for k, e in enumerate(v.flat):
                flat[k] = self(e) if type(e) is Dep else e
            return out
        if t is tuple or t is list:
            return t(self(e) for e in v)
        return v


def _sample(v, which):
    """A concrete stand-in for `v` (_StandIns)."""
    return _StandIns(which)(v)


def _element_kind(kinds):
    """The kind of an element of an object array holding elements of these kinds."""
    return "f" if "f" in kinds or not kinds else "i" if "i" in kinds else "b"


def _first(index):
    """An index of the same form with element 0 for each unknown part: the shape of what
    it reads (a number, a row) does not depend on which element."""
    t = type(index)
    if t is Dep:
        return 0
    if t is tuple:
        return tuple(_first(e) for e in index)
    if t is np.ndarray and index.dtype == object:
        return np.array([0 if type(e) is Dep else e for e in index.flat],
                        np.int64).reshape(index.shape)
    return index


def _concrete(v):
    """A concrete value's numeric form (object arrays of numbers as numpy arrays)."""
    return _sample(v, 0) if type(v) in (np.ndarray, tuple, list) else v


def _filled(shape, value):
    out = np.empty(shape, object)
    out.fill(value)
    return out


def _from_concrete(r, fresh=False):
    """A concrete result as the program holds it: numeric arrays as object arrays (so an
    element can become abstract), numpy scalars as Python numbers; `fresh` (np.empty):
    elements no input reaches."""
    t = type(r)
    if t is np.ndarray:
        if r.dtype == object:
            return r
        if fresh:
            return _filled(r.shape, Dep(EMPTY, _kind(r.dtype.type(0))))
        return r.astype(object)
    if isinstance(r, np.generic):
        return r.item()
    if t is tuple:
        return tuple(_from_concrete(e, fresh) for e in r)
    return r


def _abstract_like(r, deps, hess):
    """A result of the shape and kind of the concrete `r`, every element depending on
    `deps` (ints and bools: unknown)."""
    if isinstance(r, np.ndarray):
        kind = _kind(r.dtype.type(0)) if r.dtype != object else "f"
        return _filled(r.shape, Dep(deps if kind == "f" else EMPTY, kind,
                                    hess if kind == "f" else None))
    if isinstance(r, tuple):
        return tuple(_abstract_like(e, deps, hess) for e in r)
    if r is None:
        return None
    kind = _kind(r)
    return Dep(deps if kind == "f" else EMPTY, kind, hess if kind == "f" else None)


def _same_structure(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.shape == b.shape
    if isinstance(a, tuple) or isinstance(b, tuple):
        return isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b) and \
            all(_same_structure(x, y) for x, y in zip(a, b))
    return True


# the interpreter's state and the functions the rewritten program calls -------------------------
class Run:
    """One abstract run: `depth` counts the unknown branches around the statement running,
    `weak` the same plus the loops that went on past an unknown `break` (stores add to
    elements while it is above 0), `changes` counts stores that grew an element."""

    def __init__(self):
        self.depth = 0
        self.weak = 0
        self.changes = 0
        self.steps = 0

    # calls -----------------------------------------------------------------------------
    def call(self, f, *args, **kwargs):
        if f is print:
            return None
        owner = getattr(f, "__self__", None)
        if type(owner) is np.ndarray and owner.dtype == object:     # a.sum(), a.copy()
            try:        # numpy's method on the abstract numbers themselves: exact
                return _from_concrete(f(*args, **kwargs))
            except Exception:   # noqa: BLE001 - (one that compares or converts them)
                pass
            deps, hess = _deps_of((owner,) + args + tuple(kwargs.values()))
            self._written((owner,), deps, hess)     # it may have written into its array
            stand_in = _StandIns(0)
            return _abstract_like(getattr(stand_in(owner), f.__name__)(
                *(stand_in(a) for a in args), **{k: stand_in(v) for k, v in kwargs.items()}),
                deps, hess)
        entry = REGISTRY.get(f)
        values = args + tuple(kwargs.values())
        abstract = any(_is_abstract(v) for v in values)
        effect = effect_of(f) if entry is None or entry.effect is not None else None
        if entry is not None and entry.statement:
            return None                       # (np.random.seed: nothing to know)
        if not abstract:
            if entry is not None and entry.family == "helper":
                f = getattr(f, "py_func", f)
            r = f(*(_concrete(a) for a in args),
                  **{k: _concrete(v) for k, v in kwargs.items()})
            if effect is not None:            # a draw: a value no one knows
                if entry is None:
                    self._written(args, EMPTY, None)
                return _abstract_like(r, EMPTY, None)
            if type(r) is np.ndarray and self._is_view(r, args):
                return f(*args, **kwargs)     # the same view of the program's arrays
            fresh = f is np.empty or f is np.empty_like
            return _from_concrete(r, fresh)
        return self._abstract_call(f, entry, effect, args, kwargs)

    def _abstract_call(self, f, entry, effect, args, kwargs):
        if f in ARRAY_QUERIES:                # len(x): the shape alone answers
            return f(*(_sample(a, 0) for a in args))
        flows = self._flows(entry, args, kwargs)
        if entry is not None and entry.rule is not None and \
                all(type(a) is not np.ndarray for a in args):
            return _apply(_info(entry.rule), args)
        tries, given = [], []
        for which in (0, 1):
            stand_in = _StandIns(which)
            given.append([stand_in(a) for a in args])
            try:
                tries.append(f(*given[-1], **{k: stand_in(v) for k, v in kwargs.items()}))
            except Exception as exc:          # noqa: BLE001 - the user's function's own
                raise Unbounded(f"a call of {_name(f)} on values computed from float data "
                                f"that fails on stand-in values ({type(exc).__name__}: "
                                f"{exc})", "Pass the pattern: jacobian(f, sparse=P).") \
                    from exc
        if not _same_structure(*tries):
            raise Unbounded(f"the shape of what {_name(f)} returns depends on float data",
                            "Pass the pattern: jacobian(f, sparse=P).")
        deps, hess = EMPTY, None
        for v in flows:
            d, h = _deps_of(v)
            deps = deps | d
            if h is not None:
                hess = h if hess is None else hess | h
        if hess is not None and deps:
            hess = hess | _cross(deps, deps)
        if effect is not None and entry is None:
            self._written(args, deps, hess)
        if type(tries[0]) is np.ndarray and self._is_view(tries[0], given[0]):
            return f(*args, **kwargs)         # a view: the same view of the program's arrays
        return _abstract_like(tries[0], deps, hess)

    @staticmethod
    def _flows(entry, args, kwargs):
        """The arguments a derivative can flow from (every one where adjit has no rule)."""
        if entry is None:
            return list(args) + list(kwargs.values())
        if entry.family in ("allocate", "inactive", "constant") or (
                entry.family == "helper" and entry.array_rule is None and entry.rule is None):
            return [a for a in args if type(a) is not Dep or a.kind == "f"] \
                if entry.family == "allocate" and entry.handler not in ("like", "shape") \
                else []
        rule = entry.array_rule
        if rule is not None:
            named = dict(zip(rule.params, args))
            named.update(kwargs)
            return [v for k, v in named.items() if k in rule.params and (
                rule.reverse[rule.params.index(k)] is not None or
                rule.tangent[rule.params.index(k)] is not None)]
        if entry.rule is not None:
            named = dict(zip(entry.rule.params, args))
            named.update(kwargs)
            return [v for k, v in named.items() if k in entry.rule.params and
                    entry.rule.partials[entry.rule.params.index(k)] is not None]
        return list(args) + list(kwargs.values())

    def _written(self, args, deps, hess):
        """A call adjit cannot read may write into the arrays it is given."""
        for a in args:
            if type(a) is np.ndarray:
                if a.dtype != object:
                    raise Unbounded("an integer array given to a function adjit cannot read "
                                    "(it may write into it)",
                                    "Pass the pattern: jacobian(f, sparse=P).")
                for k in itertools.product(*(range(s) for s in a.shape)):
                    new = _join(a[k], Dep(deps if _kind(a[k]) == "f" else EMPTY,
                                          _kind(a[k]), hess))
                    if not _equal(a[k], new):
                        a[k] = new
                        self.changes += 1

    @staticmethod
    def _is_view(r, args):
        return any(type(a) is np.ndarray and np.shares_memory(r, a) for a in args)

    @staticmethod
    def range_(*args):
        """The range, or None where a bound is computed from float data."""
        if any(type(a) is Dep for a in args):
            return None
        return range(*args)

    def iter_(self, v):
        if type(v) is Dep:
            raise Unbounded("a loop over a value computed from float data",
                            "Pass the pattern: jacobian(f, sparse=P).")
        return v

    # elements ----------------------------------------------------------------------------
    def load(self, a, index):
        if type(index) is int:
            r = a[index]
            return r.item() if isinstance(r, np.generic) else r
        if _is_abstract(index):
            if type(a) is not np.ndarray:
                raise Unbounded("an element of a tuple chosen by float data",
                                "Pass the pattern: jacobian(f, sparse=P).")
            deps, hess = _deps_of(a)
            kind = _kind(a.dtype.type(0)) if a.dtype != object else \
                _element_kind({_kind(e) for e in a.flat})
            if kind != "f":
                deps, hess = EMPTY, None
            probe = a[_first(index)]
            if type(probe) is np.ndarray:
                return _filled(probe.shape, Dep(deps, kind, hess))
            return Dep(deps, kind, hess)
        if type(index) is np.ndarray and index.dtype == object:
            index = _concrete(index)
        r = a[index]
        return r.item() if isinstance(r, np.generic) else r

    def store(self, a, index, value):
        if type(a) is not np.ndarray:
            raise Unbounded("a store into something other than an array",
                            "Pass the pattern: jacobian(f, sparse=P).")
        if a.dtype != object:
            if _is_abstract(value) or self.weak:
                raise Unbounded("an integer array element computed from float data",
                                "Pass the pattern: jacobian(f, sparse=P).")
            a[_concrete(index)] = value
            return
        if _is_abstract(index):
            deps, hess = _deps_of(value)
            kind = _kind(value) if type(value) is not np.ndarray else "f"
            whole = Dep(deps, kind, hess)
            grew = False
            for k in itertools.product(*(range(s) for s in a.shape)):
                new = _join(a[k], whole)
                if not _equal(a[k], new):
                    a[k] = new
                    grew = True
            self.changes += grew
            return
        if type(index) is np.ndarray and index.dtype == object:
            index = _concrete(index)
        if not self.weak:
            a[index] = value
            return
        old = a[index]
        if type(old) is np.ndarray:
            new = np.frompyfunc(_join, 2, 1)(old, value)
            grown = np.broadcast_to(new, old.shape)
            if any(not _equal(x, y) for x, y in zip(old.flat, grown.flat)):
                self.changes += 1
            a[index] = new
        else:
            new = _join(old, value)
            if not _equal(old, new):
                self.changes += 1
            a[index] = new

    # control -----------------------------------------------------------------------------
    @staticmethod
    def test(v):
        if type(v) is Dep:
            return None
        if type(v) is np.ndarray:
            if v.dtype == object and _is_abstract(v):
                return None
            v = _concrete(v)
        return bool(v)

    @staticmethod
    def not_(v):
        return Dep(EMPTY, "b") if type(v) is Dep else not v

    def ifexp(self, test, body, orelse):
        c = self.test(test)
        if c is None:
            return _join(body(), orelse())
        return body() if c else orelse()

    def boolop(self, is_and, *thunks):
        """`a and b and ...` (or `or`), evaluated in order as Python does while the values
        are known; an unknown one makes the result the join of every value it could be."""
        out = _UNDEF
        for t in thunks:
            v = t()
            c = self.test(v)
            if c is None or c is not is_and or t is thunks[-1]:
                out = _join(out, v)
            if c is not None and c is not is_and:
                break
        return out

    def compare(self, first, ops, thunks):
        left = first
        result = True
        for op, thunk in zip(ops, thunks):
            right = thunk()
            r = op(left, right)
            if type(r) is Dep:
                result = Dep(EMPTY, "b")
            elif not r:
                if result is True:
                    return False
                return Dep(EMPTY, "b")
            left = right
        return result

    def enter(self, names, scope):
        self.depth += 1
        self.weak += 1
        return self.grab(names, scope)

    @staticmethod
    def grab(names, scope):
        return {n: scope[n] for n in names if n in scope}

    @staticmethod
    def values(saved, names):
        return tuple(saved.get(n, _UNDEF) for n in names)

    def leave(self, taken, names, scope):
        self.depth -= 1
        self.weak -= 1
        return _joined(taken, scope, names)

    def broke(self, acc, names, scope, weakened):
        """An unknown `break`: the numbers it would leave the loop with join `acc`; the loop
        goes on with its stores added to elements (returned: whether it already did)."""
        got = self.grab(names, scope)
        if acc is not None:
            got = dict(zip(names, _joined(acc, got, names)))
        if not weakened:
            self.weak += 1
        return got

    def after(self, acc, names, scope, weakened):
        if weakened:
            self.weak -= 1
        return _joined(acc or {}, scope, names)

    def widen(self, before, names, scope):
        """A `while` loop past an unknown `break`: each iteration's numbers joined with the
        last's; (the joined values, whether anything changed since)."""
        joined = _joined(before, scope, names)
        changed = any(not _equal(before.get(n, _UNDEF), v) for n, v in zip(names, joined))
        return joined, changed

    def raised(self):
        if not self.depth:
            raise Unbounded("a raise that every call with these argument types and shapes "
                            "reaches", "Call it where it returns.")

    def count(self):
        self.steps += 1
        if self.steps > 10_000_000:
            raise Unbounded("a loop that runs more than 10,000,000 times in the abstract run",
                            "Pass the pattern: jacobian(f, sparse=P).")


def _joined(a, b, names):
    """The join of what the dictionaries `a` and `b` hold for each name (UNDEF for none)."""
    return tuple(_join(a.get(n, _UNDEF), b.get(n, _UNDEF)) for n in names)


def _equal(a, b):
    if a is b:
        return True
    if type(a) is Dep and type(b) is Dep:
        return a.deps == b.deps and a.kind == b.kind and a.hess == b.hess
    if type(a) is Dep or type(b) is Dep:
        return False
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return a is b
    try:
        return type(a) is type(b) and bool(a == b)
    except (TypeError, ValueError):
        return False


def _name(f):
    return getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or repr(f)


# the rewrite ---------------------------------------------------------------------------------
def _assigned(nodes):
    """Names assigned anywhere in the statements `nodes` (targets, loop variables)."""
    names = []
    for node in nodes:
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id not in names:
                names.append(n.id)
    return names


def _expr(text):
    return ast.parse(text, mode="eval").body


def _stmts(text):
    return ast.parse(text).body


def _thunk(node):
    return ast.Lambda(ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[],
                                    kw_defaults=[], kwarg=None, defaults=[]), node)


def _names_tuple(names):
    return "(" + "".join(f"{n}, " for n in names) + ")"


def _names_str(names):
    return "(" + "".join(f"{n!r}, " for n in names) + ")"


def _exits(k, names):
    """The statements before and after loop k that record its unknown `break`s: the depth
    of unknown branches at its start, the numbers its breaks leave, whether its stores add
    to elements; after it, those numbers joined into what it ends with."""
    tup, strs = _names_tuple(names), _names_str(names)
    return (f"_sp_d{k} = _sp.depth\n_sp_acc{k} = None\n_sp_w{k} = False",
            f"if _sp_acc{k} is not None or _sp_w{k}:\n"
            f"    {tup + ' = ' if names else ''}_sp.after(_sp_acc{k}, {strs}, locals(), "
            f"_sp_w{k})")


class _Rewrite(ast.NodeTransformer):
    """The normalized program rewritten to run on abstract numbers (see the module doc)."""

    def __init__(self, where):
        self.where = where
        self.counter = itertools.count(1)
        self.loops = []          # per enclosing loop: (label, names it assigns)

    def refuse(self, node, what):
        raise AdjitError(f"adjit.sparsity of '{self.where}': {what} in its normalized "
                         f"program (line {getattr(node, 'lineno', '?')}) is not read by the "
                         "pattern detection yet. Pass the pattern: jacobian(f, sparse=P).")

    # expressions
    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if isinstance(func, ast.Name) and func.id == "range":
            return ast.Call(_expr("_sp.range_"), node.args, node.keywords)
        return ast.Call(_expr("_sp.call"), [func] + node.args, node.keywords)

    def visit_Subscript(self, node):
        self.generic_visit(node)
        if isinstance(node.ctx, ast.Load):
            return ast.Call(_expr("_sp.load"), [node.value, node.slice], [])
        return node

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return ast.Call(_expr("_sp.not_"), [node.operand], [])
        return node

    def visit_IfExp(self, node):
        self.generic_visit(node)
        return ast.Call(_expr("_sp.ifexp"),
                        [node.test, _thunk(node.body), _thunk(node.orelse)], [])

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        return ast.Call(_expr("_sp.boolop"),
                        [ast.Constant(isinstance(node.op, ast.And))] +
                        [_thunk(v) for v in node.values], [])

    def visit_Compare(self, node):
        self.generic_visit(node)
        if any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
            self.refuse(node, "an `in` test")
        if len(node.ops) == 1:
            return node
        ops = ast.Tuple([_expr(f"_operator.{_COMPARE[type(op)]}") for op in node.ops],
                        ast.Load())
        return ast.Call(_expr("_sp.compare"), [node.left, ops, ast.Tuple(
            [_thunk(c) for c in node.comparators], ast.Load())], [])

    def visit(self, node):
        what = _REFUSED.get(type(node))
        if what is not None:
            self.refuse(node, what)
        return super().visit(node)

    # statements
    def visit_Assign(self, node):
        node.value = self.visit(node.value)
        out = []
        for target in node.targets:
            if isinstance(target, ast.Subscript):
                target.value = self.visit(target.value)
                target.slice = self.visit(target.slice)
                out.append(ast.Expr(ast.Call(_expr("_sp.store"),
                                             [target.value, target.slice, node.value], [])))
            elif not any(isinstance(n, (ast.Subscript, ast.Attribute, ast.Starred))
                         for n in ast.walk(target)):
                out.append(ast.Assign([target], node.value))
            else:
                self.refuse(node, "an assignment to " + ast.unparse(target))
        return out

    def visit_AugAssign(self, node):
        target = node.target
        value = self.visit(node.value)
        if isinstance(target, ast.Name):
            return ast.Assign([ast.Name(target.id, ast.Store())],
                              ast.BinOp(ast.Name(target.id, ast.Load()), node.op, value))
        if isinstance(target, ast.Subscript):
            base = self.visit(target.value)
            index = self.visit(target.slice)
            read = ast.Call(_expr("_sp.load"), [base, index], [])
            return ast.Expr(ast.Call(_expr("_sp.store"), [
                base, index, ast.BinOp(read, node.op, value)], []))
        self.refuse(node, "an augmented assignment to " + ast.unparse(target))

    def visit_If(self, node):
        k = next(self.counter)
        names = _assigned(node.body + node.orelse)
        test = self.visit(node.test)
        body = self._block(node.body)
        orelse = self._block(node.orelse) or [ast.Pass()]
        tup, strs = _names_tuple(names), _names_str(names)
        out = [ast.Assign([ast.Name(f"_sp_c{k}", ast.Store())],
                          ast.Call(_expr("_sp.test"), [test], []))]
        out += _stmts(f"if _sp_c{k} is None:\n    _sp_s{k} = _sp.enter({strs}, locals())")
        out.append(ast.If(_expr(f"_sp_c{k} is not False"), body, []))
        restore = f"if _sp_c{k} is None:\n    _sp_a{k} = _sp.grab({strs}, locals())"
        if names:
            restore += f"\n    {tup} = _sp.values(_sp_s{k}, {strs})"
        out += _stmts(restore)
        out.append(ast.If(_expr(f"_sp_c{k} is not True"), orelse, []))
        merge = f"if _sp_c{k} is None:\n    "
        merge += f"{tup} = " if names else ""
        merge += f"_sp.leave(_sp_a{k}, {strs}, locals())"
        out += _stmts(merge)
        return out

    def _block(self, stmts):
        out = []
        for s in stmts:
            r = self.visit(s)
            if r is None:
                continue
            out.extend(r if isinstance(r, list) else [r])
        return out

    def visit_For(self, node):
        if node.orelse:
            self.refuse(node, "a for loop with an else")
        k = next(self.counter)
        names = _assigned(node.body)
        spare = copy.deepcopy(node)       # for a count computed from float data (below)
        self.loops.append((k, names))
        it = self.visit(node.iter)
        counted = isinstance(it, ast.Call) and ast.unparse(it.func) == "_sp.range_"
        if not counted:
            it = ast.Call(_expr("_sp.iter_"), [it], [])
        body = self._block(node.body)
        self.loops.pop()
        out = [ast.For(node.target, ast.Name(f"_sp_r{k}", ast.Load()) if counted else it,
                       body, [])]
        if ir.breaks(node.body):
            start, end = _exits(k, names)
            out = _stmts(start) + out + _stmts(end)
        if not counted:
            return out
        # range(n) with n computed from float data (the count of a mask's elements): any
        # number of iterations, each at an unknown index - a while loop on an unknown test
        unknown = ast.While(ast.Name("_sp_unknown", ast.Load()),
                            [ast.Assign([spare.target], ast.Name("_sp_unknown_int",
                                                                 ast.Load()))] + spare.body,
                            [])
        return [ast.Assign([ast.Name(f"_sp_r{k}", ast.Store())], it),
                ast.If(_expr(f"_sp_r{k} is not None"), out, self.visit_While(unknown))]

    def visit_While(self, node):
        if node.orelse:
            self.refuse(node, "a while loop with an else")
        k = next(self.counter)
        names = _assigned(node.body)
        tup, strs = _names_tuple(names), _names_str(names)
        self.loops.append((k, names))
        # while <test>: body  ->  while True: if not <test>: break; body; [widen]
        head = self.visit_If(ast.If(ast.UnaryOp(ast.Not(), node.test), [ast.Break()], []))
        body = self._block(node.body)
        self.loops.pop()
        widen = (f"_sp.count()\nif _sp_w{k}:\n"
                 f"    _sp_j{k}, _sp_ch{k} = _sp.widen(_sp_prev{k}, {strs}, locals())\n")
        if names:
            widen += f"    {tup} = _sp_j{k}\n"
        widen += (f"    if not _sp_ch{k} and _sp.changes == _sp_n{k}:\n        break\n"
                  f"    _sp_prev{k} = _sp.grab({strs}, locals())\n    _sp_n{k} = _sp.changes")
        start, end = _exits(k, names)
        return _stmts(f"{start}\n_sp_prev{k} = {{}}\n_sp_n{k} = -1") + \
            [ast.While(ast.Constant(True), head + body + _stmts(widen), [])] + _stmts(end)

    def _break(self, k, names):
        strs = _names_str(names)
        return _stmts(f"if _sp.depth > _sp_d{k}:\n"
                      f"    _sp_acc{k} = _sp.broke(_sp_acc{k}, {strs}, locals(), _sp_w{k})\n"
                      f"    _sp_w{k} = True\n"
                      f"else:\n    break")

    def visit_Break(self, node):
        if not self.loops:
            self.refuse(node, "a break outside a loop")
        k, names = self.loops[-1]
        return self._break(k, names)

    def visit_Return(self, node):
        node.value = self.visit(node.value) if node.value is not None else None
        return node

    def visit_Expr(self, node):
        node.value = self.visit(node.value)
        return node

    def visit_Assert(self, node):
        return None

    def visit_Pass(self, node):
        return node

    def visit_Raise(self, node):
        # the path that raises ends there: under an unknown test, going on past it only adds
        # to what the other path has; where it is certain, the function raises
        return ast.Expr(ast.Call(_expr("_sp.raised"), [], []))

    def visit_FunctionDef(self, node):
        node.body = self._block(node.body)
        return node


_REFUSED = {ast.Lambda: "a lambda", ast.NamedExpr: "an assignment expression",
            ast.Continue: "a continue", ast.With: "a with block", ast.Try: "a try block"}
"""What the normalized program does not hold (it lowers them), refused if it ever did."""

_COMPARE = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq",
            ast.NotEq: "ne", ast.Is: "is_", ast.IsNot: "is_not"}


# running it ------------------------------------------------------------------------------------
def normalized(fn, args, argnums):
    """The normalized program of `fn` for these arguments: (its text, its namespace, the
    name of its function)."""
    import numba
    from .pipeline import Options, run
    from .transform import check_argnums
    nums = check_argnums(fn, argnums)
    options = Options(nums, "adjoint", "grad", jit=False, single=isinstance(argnums, int),
                      element_products=True)
    program = run(fn, tuple(numba.typeof(a) for a in args), options, until="normalized")
    return program.render("normalized"), program.env.ns, \
        f"{program.src.fn.__name__}_normalized", program.src.loc.name


def rewritten(fn, args, argnums=0):
    """(the source of the program that runs on abstract numbers, its namespace, its name)."""
    text, ns, name, where = normalized(fn, args, argnums)
    tree = ast.parse(text)
    tree = _Rewrite(where).visit(tree)
    ast.fix_missing_locations(tree)
    return ast.unparse(tree) + "\n", ns, name, where


def _abstract_argument(a, seeded, hessian):
    """The value the abstract run gets for the argument `a`; `seeded`: the one the pattern
    is of (element k is input k)."""
    if isinstance(a, np.ndarray):
        if a.dtype.kind in "fc":
            out = np.empty(a.shape, object)
            flat = out.reshape(-1)
            if seeded:
                for k in range(a.size):
                    flat[k] = Dep(frozenset((k,)), "f", EMPTY if hessian else None)
            else:
                out.fill(Dep(EMPTY, "f"))
            return out
        return a.copy()
    if isinstance(a, (float, np.floating, complex, np.complexfloating)):
        return Dep(frozenset((0,)) if seeded else EMPTY, "f",
                   EMPTY if hessian and seeded else None)
    if isinstance(a, tuple):
        if seeded:
            raise AdjitError("adjit.sparsity of a tuple argument: give the pattern of one "
                             "array argument (argnums=k).")
        return tuple(_abstract_argument(e, False, hessian) for e in a)
    return a


def _elements(t):
    """A tuple's elements, nested tuples' included, in order."""
    return tuple(e for x in t for e in (_elements(x) if isinstance(x, tuple) else (x,)))


def key_of(args):
    """What the pattern depends on besides the program: the arguments' types and shapes and
    the values of every integer and boolean."""
    import numba
    parts = []
    for a in args:
        parts.append(str(numba.typeof(a)))
        if isinstance(a, np.ndarray):
            parts.append(a.shape)
            if a.dtype.kind in "iub":
                parts.append(a.tobytes())
        elif isinstance(a, (bool, int, np.integer, np.bool_)):
            parts.append(int(a))
        elif isinstance(a, tuple):
            parts.append(key_of(a))
    return tuple(parts)


def detect(fn, args, argnums=0, hessian=False):
    """The structural pattern of the Jacobian of `fn` in argument `argnums` (or of its
    Hessian) at arguments of these types and shapes: a boolean scipy.sparse.csr_array."""
    import scipy.sparse
    if not isinstance(argnums, int):
        raise AdjitError(f"adjit.sparsity with argnums={argnums!r}: give one argument (an "
                         "int), the array the Jacobian is of.")
    text, ns, name, where = rewritten(fn, args, argnums)
    import operator
    namespace = dict(ns)
    namespace["_sp"] = Run()
    namespace["_operator"] = operator
    namespace["_sp_unknown"] = Dep(EMPTY, "b")        # (loops of unknown count)
    namespace["_sp_unknown_int"] = Dep(EMPTY, "i")
    exec(compile(text, f"<adjit sparsity of {where}>", "exec"), namespace)  # noqa: S102
    x = args[argnums]
    n = int(np.size(x))
    inputs = [_abstract_argument(a, k == argnums, hessian) for k, a in enumerate(args)]
    import inspect
    if len(inspect.signature(namespace[name]).parameters) != len(inputs):
        # the normalized program takes a tuple's elements (a `*args` tuple's too) as
        # parameters of their own
        inputs = [e for a in inputs for e in (_elements(a) if isinstance(a, tuple) else (a,))]
    saved = np.random.get_state()
    try:
        result = namespace[name](*inputs)
    except Unbounded as exc:
        construct, fix = exc.args
        raise _error(fn, f"adjit.sparsity: {construct}", fix) from None
    finally:
        np.random.set_state(saved)
    if hessian:
        if isinstance(result, (np.ndarray, tuple)):
            raise _error(fn, "a Hessian pattern of a function that returns an array",
                         "The Hessian is of a function returning one number.")
        pairs = result.hess if type(result) is Dep and result.hess else EMPTY
        rows = [i for i, j in pairs] + [j for i, j in pairs if i != j]
        cols = [j for i, j in pairs] + [i for i, j in pairs if i != j]
        shape = (n, n)
    else:
        if isinstance(result, tuple):
            raise _error(fn, "adjit.sparsity of a function that returns a tuple",
                         "Return one array (np.concatenate the parts).")
        flat = np.asarray(result, dtype=object).reshape(-1)
        rows, cols = [], []
        for r, e in enumerate(flat):
            if type(e) is Dep:
                for c in e.deps:
                    rows.append(r)
                    cols.append(c)
        shape = (flat.size, n)
    rows, cols = np.asarray(rows, np.int64), np.asarray(cols, np.int64)
    P = scipy.sparse.csr_array((np.ones(rows.size, bool), (rows, cols)), shape=shape)
    P.sum_duplicates()
    P.sort_indices()
    return P


class Sparsity:
    """`adjit.sparsity(f, argnums)`: called with f's arguments, the boolean csr_array of the
    Jacobian's structural pattern (shape (f(x).size, x.size)); computed once per argument
    types, shapes and integer values, and kept."""

    def __init__(self, fn, argnums=0, hessian=False):
        self.fn = fn
        self.argnums = argnums
        self.hessian = hessian
        self._patterns = {}
        self.__adjit_function__ = fn

    def __call__(self, *args):
        args = _with_defaults(self.fn, args)
        key = key_of(args)
        P = self._patterns.get(key)
        if P is None:
            P = self._patterns[key] = detect(self.fn, args, self.argnums, self.hessian)
        return P.copy()


def _with_defaults(fn, args):
    """The arguments with the defaults of the parameters a call leaves out, in order (the
    normalized program takes every parameter)."""
    import inspect
    try:
        signature = inspect.signature(getattr(fn, "py_func", fn))
        bound = signature.bind(*args)
    except (TypeError, ValueError):
        return args
    bound.apply_defaults()
    return tuple(bound.arguments.values())
