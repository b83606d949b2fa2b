"""A reference reverse-mode AD by operator overloading: the fuzzer's exact oracle.

It shares no code with adjit. A program runs in the Python interpreter on `Var` objects (a
float and the partial derivatives with respect to the Vars it was computed from); every
operation appends its result to a dynamic tape, and one backward sweep over the tape in
reverse order gives the gradient. The partials are written from the calculus, not copied
from adjit's rule table (tan' = 1/cos^2 here, 1 + tan^2 there), so agreement between the two
is a real check.

The same sweep also accumulates |partial| products: `gabs`, the gradient of the program with
every partial replaced by its absolute value. Rounding error in any reverse sweep is bounded
by a small multiple of eps * gabs, which gives the comparison a scale-aware tolerance.

Conventions (docs/semantics.md): max/min give the whole adjoint to the first argument on
ties, abs and fabs have derivative 0 at 0, floor/ceil/trunc/round/int/// are constant,
a % b has partials 1 and -floor(a/b), stop_gradient(v) is a constant with v's value. A run
also counts `kinks`: ties, abs at 0 and comparisons between equal values, points where
finite differences do not approximate this derivative.
"""
import math

import numpy as np


class Tape:
    """The operations of one run, in execution order."""

    def __init__(self):
        self.nodes = []
        self.kinks = 0
        self.singular = 0     # partials that came out inf or NaN (atan2 at (0, 0), ...)


_TAPE = None


class Var:
    __slots__ = ("value", "parents")

    def __init__(self, value, parents=()):
        self.value = np.float64(value)    # IEEE arithmetic: a partial at a pole is inf, not
                                          # an exception; it matters only if it is used
        self.parents = parents          # ((Var, partial), ...)
        if parents:
            _TAPE.nodes.append(self)
            if not all(math.isfinite(p) for _, p in parents):
                _TAPE.singular += 1

    # arithmetic -------------------------------------------------------------------------
    def __add__(self, o):
        o = lift(o)
        return Var(self.value + o.value, ((self, 1.0), (o, 1.0)))

    __radd__ = __add__

    def __sub__(self, o):
        o = lift(o)
        return Var(self.value - o.value, ((self, 1.0), (o, -1.0)))

    def __rsub__(self, o):
        return lift(o) - self

    def __mul__(self, o):
        o = lift(o)
        return Var(self.value * o.value, ((self, o.value), (o, self.value)))

    __rmul__ = __mul__

    def __truediv__(self, o):
        o = lift(o)
        q = self.value / o.value
        return Var(q, ((self, 1.0 / o.value), (o, -self.value / (o.value * o.value))))

    def __rtruediv__(self, o):
        return lift(o) / self

    def __pow__(self, o):
        o = lift(o)
        a, b = self.value, o.value
        out = a ** b
        da = b * a ** (b - 1.0) if b != 0.0 else 0.0
        db = out * math.log(a) if a > 0.0 else 0.0
        return Var(out, ((self, da), (o, db)))

    def __rpow__(self, o):
        return lift(o) ** self

    def __mod__(self, o):
        o = lift(o)
        return Var(self.value % o.value, ((self, 1.0), (o, -math.floor(self.value / o.value))))

    def __rmod__(self, o):
        return lift(o) % self

    def __floordiv__(self, o):
        return Var(self.value // lift(o).value)

    def __rfloordiv__(self, o):
        return Var(lift(o).value // self.value)

    def __neg__(self):
        return Var(-self.value, ((self, -1.0),))

    def __pos__(self):
        return self

    def __abs__(self):
        if self.value == 0.0:
            _TAPE.kinks += 1
        s = 1.0 if self.value > 0 else (-1.0 if self.value < 0 else 0.0)
        return Var(abs(self.value), ((self, s),))

    # comparisons by value ---------------------------------------------------------------
    def _cmp(self, o):
        ov = lift(o).value
        if ov == self.value:
            _TAPE.kinks += 1
        return ov

    def __lt__(self, o):
        return self.value < self._cmp(o)

    def __le__(self, o):
        return self.value <= self._cmp(o)

    def __gt__(self, o):
        return self.value > self._cmp(o)

    def __ge__(self, o):
        return self.value >= self._cmp(o)

    def __eq__(self, o):
        return self.value == self._cmp(o)

    def __ne__(self, o):
        return self.value != self._cmp(o)

    def __bool__(self):
        return self.value != 0.0

    __hash__ = None


def lift(v):
    """A Var for a number (a constant: no parents); Vars pass through."""
    return v if isinstance(v, Var) else Var(float(v))


def value(v):
    return v.value if isinstance(v, Var) else v


class VArray:
    """A numpy-like array of Vars: 1-D or 2-D, integer indexing with negative indices."""

    def __init__(self, shape, items):
        self.shape = shape
        self.items = items
        self.ndim = len(shape)

    @classmethod
    def full(cls, shape, fill):
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        return cls(shape, [Var(fill) for _ in range(math.prod(shape))])

    def _flat(self, idx):
        if not isinstance(idx, tuple):
            idx = (idx,)
        if len(idx) != self.ndim:
            raise IndexError("wrong number of indices")
        flat = 0
        for i, n in zip(idx, self.shape):
            if not isinstance(i, (int, np.integer)) or isinstance(i, bool):
                raise IndexError(f"index {i!r} is not an int")
            if not -n <= i < n:
                raise IndexError("index out of range")
            flat = flat * n + (i % n)
        return flat

    def __getitem__(self, idx):
        return self.items[self._flat(idx)]

    def __setitem__(self, idx, v):
        self.items[self._flat(idx)] = lift(v)

    def __len__(self):
        return self.shape[0]

    def copy(self):
        return VArray(self.shape, list(self.items))

    @property
    def size(self):
        return len(self.items)


# the math module on Vars ---------------------------------------------------------------------
def _unary(f, df):
    def op(x):
        if not isinstance(x, Var):
            return f(x)
        return Var(f(x.value), ((x, df(x.value)),))
    return op


def _atan2(a, b):
    a, b = lift(a), lift(b)
    r2 = a.value ** 2 + b.value ** 2
    return Var(math.atan2(a.value, b.value), ((a, b.value / r2), (b, -a.value / r2)))


def _hypot(a, b):
    a, b = lift(a), lift(b)
    h = math.hypot(a.value, b.value)
    return Var(h, ((a, a.value / h), (b, b.value / h)))


def _pow(a, b):
    return lift(a) ** b


def _const(f):
    return lambda x: f(value(x))


def _sign(x):
    if x == 0.0:
        _TAPE.kinks += 1
    return 1.0 if x > 0 else (-1.0 if x < 0 else 0.0)


class _Math:
    """Stands in for the `math` module inside programs run by the reference AD."""
    pi = math.pi
    e = math.e
    sin = staticmethod(_unary(math.sin, math.cos))
    cos = staticmethod(_unary(math.cos, lambda x: -math.sin(x)))
    tan = staticmethod(_unary(math.tan, lambda x: 1.0 / math.cos(x) ** 2))
    asin = staticmethod(_unary(math.asin, lambda x: 1.0 / math.sqrt((1.0 - x) * (1.0 + x))))
    acos = staticmethod(_unary(math.acos, lambda x: -1.0 / math.sqrt((1.0 - x) * (1.0 + x))))
    atan = staticmethod(_unary(math.atan, lambda x: 1.0 / (1.0 + x * x)))
    sinh = staticmethod(_unary(math.sinh, math.cosh))
    cosh = staticmethod(_unary(math.cosh, math.sinh))
    tanh = staticmethod(_unary(math.tanh, lambda x: 1.0 / math.cosh(x) ** 2))
    exp = staticmethod(_unary(math.exp, math.exp))
    expm1 = staticmethod(_unary(math.expm1, math.exp))
    log = staticmethod(_unary(math.log, lambda x: 1.0 / x))
    log1p = staticmethod(_unary(math.log1p, lambda x: 1.0 / (1.0 + x)))
    log10 = staticmethod(_unary(math.log10, lambda x: 1.0 / (x * math.log(10.0))))
    sqrt = staticmethod(_unary(math.sqrt, lambda x: 0.5 / math.sqrt(x)))
    erf = staticmethod(_unary(math.erf, lambda x: 2.0 / math.sqrt(math.pi) * math.exp(-x * x)))
    erfc = staticmethod(_unary(math.erfc, lambda x: -2.0 / math.sqrt(math.pi) * math.exp(-x * x)))
    fabs = staticmethod(_unary(math.fabs, _sign))
    floor = staticmethod(_const(math.floor))
    ceil = staticmethod(_const(math.ceil))
    trunc = staticmethod(_const(math.trunc))
    atan2 = staticmethod(_atan2)
    hypot = staticmethod(_hypot)
    pow = staticmethod(_pow)


def _max(a, b):
    if value(a) == value(b):
        _TAPE.kinks += 1
    return b if value(b) > value(a) else a      # as Python's max: a on ties and NaN


def _min(a, b):
    if value(a) == value(b):
        _TAPE.kinks += 1
    return b if value(b) < value(a) else a


def _abs(x):
    return abs(x)


def _float(x):
    return x if isinstance(x, Var) else float(x)


def _int(x):
    return int(value(x))


def _round(x):
    return round(value(x))


def _stop_gradient(x):
    return Var(value(x)) if isinstance(x, Var) else x


class _Numpy:
    """Stands in for numpy inside programs run by the reference AD."""

    @staticmethod
    def zeros(shape):
        return VArray.full(shape, 0.0)

    @staticmethod
    def ones(shape):
        return VArray.full(shape, 1.0)

    @staticmethod
    def zeros_like(a):
        return VArray.full(a.shape, 0.0)

    @staticmethod
    def ones_like(a):
        return VArray.full(a.shape, 1.0)


NAMESPACE = {"math": _Math, "np": _Numpy, "abs": _abs, "max": _max, "min": _min,
             "float": _float, "int": _int, "round": _round, "stop_gradient": _stop_gradient}
"""Globals for a program run by the reference AD (in place of math, numpy, builtins)."""


class Result:
    def __init__(self, value, grads, gabs, kinks, singular):
        self.singular = singular    # how many partials were inf or NaN
        self.value = value
        self.grads = grads    # per argument: float, ndarray, or None (not differentiable)
        self.gabs = gabs      # the same with |partials|: the rounding-error scale
        self.kinks = kinks


def value_and_grad(fn, args):
    """Run fn on Var versions of the float and float-array arguments; returns a Result.

    Integer arguments are passed as they are and get gradient None."""
    global _TAPE
    _TAPE = Tape()
    try:
        with np.errstate(all="ignore"):
            return _run(fn, args)
    finally:
        _TAPE = None


def _run(fn, args):
    leaves = []
    vargs = []
    for a in args:
        if isinstance(a, float):
            v = Var(a)
            leaves.append([v])
            vargs.append(v)
        elif isinstance(a, np.ndarray) and a.dtype.kind == "f":
            arr = VArray(a.shape, [Var(float(t)) for t in a.ravel()])
            leaves.append(list(arr.items))
            vargs.append(arr)
        else:
            leaves.append(None)
            vargs.append(a)
    out = lift(fn(*vargs))
    adj = {id(out): 1.0}
    aabs = {id(out): 1.0}
    for node in reversed(_TAPE.nodes):
        g = adj.pop(id(node), None)
        if g is None:
            continue
        ga = aabs.pop(id(node))
        for parent, partial in node.parents:
            k = id(parent)
            adj[k] = adj.get(k, 0.0) + g * partial
            aabs[k] = aabs.get(k, 0.0) + ga * abs(partial)
    grads, gabs = [], []
    for a, vs in zip(args, leaves):
        if vs is None:
            grads.append(None)
            gabs.append(None)
            continue
        g = np.array([adj.get(id(v), 0.0) for v in vs])
        ga = np.array([aabs.get(id(v), 0.0) for v in vs])
        if isinstance(a, float):
            grads.append(float(g[0]))
            gabs.append(float(ga[0]))
        else:
            grads.append(g.reshape(a.shape))
            gabs.append(ga.reshape(a.shape))
    return Result(float(out.value), grads, gabs, _TAPE.kinks, _TAPE.singular)
