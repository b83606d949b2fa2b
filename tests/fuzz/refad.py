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
also counts `kinks`: ties, abs at 0, comparisons between equal values, and the jumps of
step functions (a % b at a multiple of b, floor, ceil, trunc and // at an integer), points
where finite differences do not approximate this derivative.

Arrays are `VArray`s: numpy object arrays of Vars, so numpy does the broadcasting, slicing,
new axes, transposes, reshapes, joins, fancy indexing and boolean masks, and every numpy
function applies the scalar rules above element by element (np.maximum/np.minimum/np.clip
as max/min: ties to the first argument). Reductions are left-to-right Var sums and products;
`@` and np.dot are sums of Var products; np.max/np.min give every entry equal to the extreme
an equal share of the adjoint (a kink when there are several).

Views are numpy's: a basic slice, a row, `.T`, a transpose with axes, swapaxes/moveaxis and
a reshape numpy can do without copying share the Var slots of their base, so a write through
one name is read through the other, exactly as numpy does; fancy indexing and masks read
copies, and `a[idx] = v` / `a[idx] += v` with a repeated index keep the last write (numpy's
buffered semantics). Argument arrays keep their memory layout (Fortran order, strides,
negative strides), so that numpy decides view or copy for them as it does for the real
arguments. Arrays the program makes are in C order (np.zeros, copies, results of
arithmetic): a program must not rely on the layout numpy's order='K' gives a result of
arithmetic on a Fortran-ordered array (the grammar reshapes into views only arrays it knows
to be C-contiguous). Integer lists give int64 index arrays (`np.array([0, 2, 2])`).
"""
import math
import operator

import numpy as np


class Tape:
    """The operations of one run, in execution order."""

    def __init__(self):
        self.nodes = []
        self.kinks = 0
        self.singular = 0     # partials that came out inf or NaN (atan2 at (0, 0), ...)


_TAPE = None


def _scalar_only(method):
    """A binary Var method that leaves array operands to VArray's reflected method."""
    def wrapped(self, o):
        if isinstance(o, VArray):
            return NotImplemented
        return method(self, o)
    wrapped.__name__ = method.__name__
    return wrapped


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
    @_scalar_only
    def __add__(self, o):
        o = lift(o)
        return Var(self.value + o.value, ((self, 1.0), (o, 1.0)))

    __radd__ = __add__

    @_scalar_only
    def __sub__(self, o):
        o = lift(o)
        return Var(self.value - o.value, ((self, 1.0), (o, -1.0)))

    @_scalar_only
    def __rsub__(self, o):
        return lift(o) - self

    @_scalar_only
    def __mul__(self, o):
        o = lift(o)
        return Var(self.value * o.value, ((self, o.value), (o, self.value)))

    __rmul__ = __mul__

    @_scalar_only
    def __truediv__(self, o):
        o = lift(o)
        q = self.value / o.value
        return Var(q, ((self, 1.0 / o.value), (o, -self.value / (o.value * o.value))))

    @_scalar_only
    def __rtruediv__(self, o):
        return lift(o) / self

    @_scalar_only
    def __pow__(self, o):
        o = lift(o)
        a, b = self.value, o.value
        out = a ** b
        da = b * a ** (b - 1.0) if b != 0.0 else 0.0
        db = out * math.log(a) if a > 0.0 else 0.0
        return Var(out, ((self, da), (o, db)))

    @_scalar_only
    def __rpow__(self, o):
        return lift(o) ** self

    @_scalar_only
    def __mod__(self, o):
        o = lift(o)
        _multiple(self.value, o.value)
        return Var(self.value % o.value, ((self, 1.0), (o, -math.floor(self.value / o.value))))

    @_scalar_only
    def __rmod__(self, o):
        return lift(o) % self

    @_scalar_only
    def __floordiv__(self, o):
        _multiple(self.value, lift(o).value)
        return Var(self.value // lift(o).value)

    @_scalar_only
    def __rfloordiv__(self, o):
        _multiple(lift(o).value, self.value)
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

    @_scalar_only
    def __lt__(self, o):
        return self.value < self._cmp(o)

    @_scalar_only
    def __le__(self, o):
        return self.value <= self._cmp(o)

    @_scalar_only
    def __gt__(self, o):
        return self.value > self._cmp(o)

    @_scalar_only
    def __ge__(self, o):
        return self.value >= self._cmp(o)

    @_scalar_only
    def __eq__(self, o):
        return self.value == self._cmp(o)

    @_scalar_only
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
    """A numpy-like array of Vars: a numpy object array whose elements are Vars, so that
    numpy itself does the broadcasting, slicing, new axes, transposes, reshapes and joins.

    Elementwise operations apply Var arithmetic to every element (`_elementwise`). Reading
    anything but a single element (`a[1:]`, `a[:, None]`, `a.T`, `a.reshape(...)`,
    `a[idx]`, `a[mask]`) gives what numpy gives: a view sharing this array's slots, or a
    copy (fancy indexing, masks, reshapes numpy cannot do in place). Writing (`a[i] = v`,
    `a[1:-1] = e`, `a[idx] += e`, `a += e`) stores into the slots, which every view of them
    sees. Comparisons give plain bool arrays (masks, np.where)."""

    __slots__ = ("a",)
    __array_ufunc__ = None      # `ndarray op VArray` and `np.float64 op VArray` defer to us
    __hash__ = None

    def __init__(self, a):
        self.a = a

    @property
    def shape(self):
        return self.a.shape

    @property
    def ndim(self):
        return self.a.ndim

    @property
    def size(self):
        return self.a.size

    def __len__(self):
        return len(self.a)

    def __bool__(self):
        if self.a.size != 1:
            raise ValueError("the truth value of an array with more than one element is "
                             "ambiguous")
        return bool(self.a.ravel()[0])

    def __getitem__(self, idx):
        for i in (idx if isinstance(idx, tuple) else (idx,)):
            if isinstance(i, (Var, VArray, float, bool, np.bool_)):
                raise IndexError(f"index {i!r} is not an int, a slice or an index array")
        out = self.a[idx]       # numpy decides: a view (basic indexing) or a copy
        return VArray(out) if isinstance(out, np.ndarray) else out

    def __setitem__(self, idx, v):
        current = self[idx]     # the same index checks as a read
        if isinstance(v, VArray):
            if not isinstance(current, VArray):
                raise ValueError("setting an array element with a sequence")
            self.a[idx] = v.a
        else:
            self.a[idx] = lift(v)

    def copy(self):
        return VArray(self.a.copy())        # C order, as ndarray.copy()

    # arithmetic: elementwise over Vars with numpy broadcasting ---------------------------
    def __add__(self, o):
        return _elementwise(operator.add, self, o)

    def __radd__(self, o):
        return _elementwise(operator.add, o, self)

    def __sub__(self, o):
        return _elementwise(operator.sub, self, o)

    def __rsub__(self, o):
        return _elementwise(operator.sub, o, self)

    def __mul__(self, o):
        return _elementwise(operator.mul, self, o)

    def __rmul__(self, o):
        return _elementwise(operator.mul, o, self)

    def __truediv__(self, o):
        return _elementwise(operator.truediv, self, o)

    def __rtruediv__(self, o):
        return _elementwise(operator.truediv, o, self)

    def __pow__(self, o):
        return _elementwise(operator.pow, self, o)

    def __rpow__(self, o):
        return _elementwise(operator.pow, o, self)

    def __neg__(self):
        return _elementwise(operator.neg, self)

    def __pos__(self):
        return self.copy()

    def __abs__(self):
        return _elementwise(abs, self)

    def _inplace(self, op, o):
        self.a[...] = _elementwise(op, self, o).a    # raises if o would grow the shape
        return self

    def __iadd__(self, o):
        return self._inplace(operator.add, o)

    def __isub__(self, o):
        return self._inplace(operator.sub, o)

    def __imul__(self, o):
        return self._inplace(operator.mul, o)

    def __itruediv__(self, o):
        return self._inplace(operator.truediv, o)

    def __matmul__(self, o):
        return _matmul(self, o)

    def __rmatmul__(self, o):
        return _matmul(o, self)

    # comparisons: bool arrays, ties counted as kinks by Var's comparisons ---------------
    def __lt__(self, o):
        return _compare(operator.lt, self, o)

    def __le__(self, o):
        return _compare(operator.le, self, o)

    def __gt__(self, o):
        return _compare(operator.gt, self, o)

    def __ge__(self, o):
        return _compare(operator.ge, self, o)

    def __eq__(self, o):
        return _compare(operator.eq, self, o)

    def __ne__(self, o):
        return _compare(operator.ne, self, o)

    # methods --------------------------------------------------------------------------------
    @property
    def T(self):    # noqa: N802 - numpy's name
        return VArray(self.a.T)                 # a view, as in numpy

    def transpose(self, *axes):
        return VArray(self.a.transpose(*axes))  # a view

    def swapaxes(self, i, j):
        return VArray(self.a.swapaxes(i, j))    # a view

    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 else shape
        return VArray(self.a.reshape(shape))    # a view where numpy can, else a copy

    def dot(self, o):
        return _matmul(self, o)

    def sum(self, axis=None):
        return _reduce(self, axis, _sum)

    def mean(self, axis=None):
        return _reduce(self, axis, _mean)

    def prod(self, axis=None):
        return _reduce(self, axis, _prod)

    def max(self, axis=None):
        return _reduce(self, axis, _tied(max))

    def min(self, axis=None):
        return _reduce(self, axis, _tied(min))


def _objects(v):
    """v as a numpy object array of Vars (0-d for a scalar), for broadcasting."""
    if isinstance(v, VArray):
        return v.a
    if isinstance(v, np.ndarray):
        return _lift_all(v.astype(object)) if v.dtype != object else v
    out = np.empty((), dtype=object)
    out[()] = lift(v)
    return out


def _lift_all(a):
    for idx in np.ndindex(a.shape):
        a[idx] = lift(a[idx])
    return a


def _new(shape, fill, order="C"):
    """An object array of the given shape, every element the constant `fill`."""
    out = np.empty(shape, dtype=object, order=order)
    for idx in np.ndindex(out.shape):
        out[idx] = Var(fill)
    return VArray(out)


def _elementwise(fn, *args):
    """fn applied to every element of the broadcast arguments (Vars, numbers, VArrays); a
    scalar result when no argument is an array."""
    if not any(isinstance(a, VArray) for a in args):
        return fn(*args)
    arrays = np.broadcast_arrays(*[_objects(a) for a in args])
    out = np.empty(arrays[0].shape, dtype=object)
    for idx in np.ndindex(out.shape):
        out[idx] = lift(fn(*[a[idx] for a in arrays]))
    return VArray(out)


def _compare(op, a, b):
    arrays = np.broadcast_arrays(_objects(a), _objects(b))
    out = np.empty(arrays[0].shape, dtype=bool)
    for idx in np.ndindex(out.shape):
        out[idx] = bool(op(arrays[0][idx], arrays[1][idx]))
    return out


def _sum(elems):
    """Left to right, as a loop accumulating from 0.0 does."""
    if not elems:
        return Var(0.0)
    acc = elems[0]
    for e in elems[1:]:
        acc = acc + e
    return acc


def _mean(elems):
    return _sum(elems) / float(len(elems))


def _prod(elems):
    if not elems:
        return Var(1.0)
    acc = elems[0]
    for e in elems[1:]:
        acc = acc * e
    return acc


def _tied(pick):
    """np.max (pick=max) / np.min over some Vars: the extreme value, with the adjoint split
    equally among all entries equal to it (docs/semantics.md). A tie is a kink."""
    def reduce_(elems):
        if not elems:
            raise ValueError("zero-size array to reduction operation")
        values = [e.value for e in elems]
        if any(math.isnan(v) for v in values):
            return Var(math.nan)
        m = pick(values)
        tied = [e for e in elems if e.value == m]
        if len(tied) > 1:
            _TAPE.kinks += 1
        return Var(m, tuple((e, 1.0 / len(tied)) for e in tied))
    return reduce_


def _reduce(x, axis, one):
    """A reduction over all elements (axis None) or along one axis; `one` reduces a list."""
    if not isinstance(x, VArray):
        return one([lift(x)])
    a = x.a
    if axis is None:
        return one(list(a.ravel()))
    if not -a.ndim <= axis < a.ndim:
        raise ValueError(f"axis {axis} is out of bounds")
    moved = np.moveaxis(a, axis, -1)
    out = np.empty(moved.shape[:-1], dtype=object)
    for idx in np.ndindex(out.shape):
        out[idx] = one(list(moved[idx]))
    return VArray(out) if out.ndim else out[()]


def _matmul(x, y):
    """Matrix products of 1-D and 2-D arrays as sums of Var products."""
    if not (isinstance(x, VArray) and isinstance(y, VArray)):
        raise ValueError("matmul: a scalar operand")
    a, b = x.a, y.a
    if a.ndim > 2 or b.ndim > 2 or a.shape[-1] != b.shape[0]:
        raise ValueError(f"matmul: shapes {a.shape} and {b.shape} do not match")
    if a.ndim == 1 and b.ndim == 1:
        return _sum([a[k] * b[k] for k in range(len(a))])
    a2 = a if a.ndim == 2 else a[None, :]
    b2 = b if b.ndim == 2 else b[:, None]
    out = np.empty((a2.shape[0], b2.shape[1]), dtype=object)
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = _sum([a2[i, k] * b2[k, j] for k in range(a2.shape[1])])
    if a.ndim == 1:
        out = out[0]
    elif b.ndim == 1:
        out = out[:, 0]
    return VArray(out)


def _norm(x):
    """The 2-norm of all elements: d/dx_i = x_i / norm."""
    if not isinstance(x, VArray):
        return abs(lift(x))
    elems = list(x.a.ravel())
    n = math.sqrt(sum(e.value * e.value for e in elems))
    return Var(n, tuple((e, e.value / n) for e in elems))

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
    """A step function (floor, ceil, trunc): derivative 0, and a kink where it jumps."""
    return lambda x: _jump(value(x), f(value(x))) if isinstance(x, Var) else f(value(x))


def _jump(at, result):
    """`result` of a step function evaluated `at` a point; a kink when the point is where the
    step jumps (an integer): finite differences there straddle the jump."""
    if math.isfinite(at) and at == math.floor(at):
        _TAPE.kinks += 1
    return result


def _multiple(a, b):
    """A kink where a is a multiple of b: a % b and a // b jump there (the remainder tells
    exactly; a / b would round)."""
    if a % b == 0.0:
        _TAPE.kinks += 1


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
    if isinstance(x, VArray):
        return _constants(np.vectorize(value, otypes=[float])(x.a))
    return Var(value(x)) if isinstance(x, Var) else x


def _np_sign(x):
    s = _sign(value(x))
    return Var(s) if isinstance(x, Var) else s


def _np_floor(x):
    f = float(math.floor(value(x)))
    return Var(_jump(value(x), f)) if isinstance(x, Var) else f


def _clip(a, lo, hi):
    return _min(_max(a, lo), hi)        # numpy's minimum(maximum(a, lo), hi), ties as max/min


def _ufunc(fn):
    return staticmethod(lambda *args: _elementwise(fn, *args))


def _shape(shape):
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(n) for n in shape)


def _arrays(seq):
    if not all(isinstance(v, VArray) for v in seq):
        raise ValueError("joining something that is not an array")
    return [v.a for v in seq]


def _literal(obj, dtype=None):
    """np.array([...]) of numbers and Vars (nested lists for 2-D); of ints only (or with an
    int dtype): a real int64 ndarray, an index array."""
    if isinstance(obj, VArray):
        return obj.copy()
    if isinstance(obj, np.ndarray):
        return obj.copy() if obj.dtype.kind in "iub" else _constants(obj)
    items = list(_flat(obj))
    if items and all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
                     for v in items) or dtype in (int, np.int64):
        return np.array(obj, dtype=np.int64)
    shape = []
    probe = obj
    while isinstance(probe, (list, tuple)):
        shape.append(len(probe))
        probe = probe[0] if probe else None
    out = np.empty(tuple(shape), dtype=object)
    for idx in np.ndindex(out.shape):
        item = obj
        for k, i in enumerate(idx):
            if not isinstance(item, (list, tuple)) or len(item) != out.shape[k]:
                raise ValueError("np.array of ragged lists")
            item = item[i]
        if isinstance(item, (list, tuple, VArray)):
            raise ValueError("np.array of ragged lists or of arrays")
        out[idx] = lift(item)
    return VArray(out)


def _flat(obj):
    if isinstance(obj, (list, tuple)):
        for item in obj:
            yield from _flat(item)
    else:
        yield obj


class _Linalg:
    norm = staticmethod(_norm)


class _Numpy:
    """Stands in for numpy inside programs run by the reference AD: arrays are VArrays
    (object arrays of Vars), and every function is applied to the Vars elementwise."""
    pi = math.pi
    e = math.e
    linalg = _Linalg
    float64 = float

    # construction
    zeros = staticmethod(lambda shape: _new(_shape(shape), 0.0))
    ones = staticmethod(lambda shape: _new(_shape(shape), 1.0))
    empty = staticmethod(lambda shape: _new(_shape(shape), 0.0))
    zeros_like = staticmethod(lambda a: _new(a.shape, 0.0, _order(a)))
    ones_like = staticmethod(lambda a: _new(a.shape, 1.0, _order(a)))
    empty_like = staticmethod(lambda a: _new(a.shape, 0.0, _order(a)))
    full = staticmethod(lambda shape, v: _full(_shape(shape), v))
    full_like = staticmethod(lambda a, v: _full(a.shape, v, _order(a)))
    array = staticmethod(_literal)
    asarray = staticmethod(lambda obj: obj if isinstance(obj, VArray) else _literal(obj))
    concatenate = staticmethod(lambda seq, axis=0: VArray(np.concatenate(_arrays(seq), axis)))
    stack = staticmethod(lambda seq, axis=0: VArray(np.stack(_arrays(seq), axis)))
    eye = staticmethod(lambda n: _constants(np.eye(n)))
    int64 = np.int64
    float32 = np.float32

    @staticmethod
    def linspace(start, stop, num):
        """numpy's formula, on Vars: i * ((stop - start) / div) + start, the last one stop
        (both end points are differentiable)."""
        if not isinstance(start, Var) and not isinstance(stop, Var):
            return _constants(np.linspace(start, stop, num))
        out = np.empty(num, dtype=object)
        div = num - 1
        delta = lift(stop) - lift(start)
        step = delta / float(div) if div > 0 else None
        for i in range(num):
            if div <= 0:
                out[i] = float(i) * delta + start
            elif step.value == 0.0:
                out[i] = float(i) / float(div) * delta + start
            else:
                out[i] = float(i) * step + start
        if num > 1:
            out[-1] = lift(stop)
        return VArray(out)

    @staticmethod
    def arange(*args):
        """numpy's fill, on Vars: a[0] = start, a[1] = start + step, a[i] = start +
        i * (a[1] - a[0]); the length from the values (numpy's)."""
        if not any(isinstance(a, Var) for a in args):
            return _constants(np.arange(*args))
        start, stop, step = (0.0, args[0], 1.0) if len(args) == 1 else \
            (args[0], args[1], 1.0) if len(args) == 2 else args
        n = len(np.arange(value(start), value(stop), value(step)))
        start = lift(start)
        out = np.empty(n, dtype=object)
        if n:
            out[0] = start
        if n > 1:
            out[1] = start + step
            delta = out[1] - out[0]
            for i in range(2, n):
                out[i] = start + float(i) * delta
        return VArray(out)

    @staticmethod
    def diag(v):
        """np.diag of a 1-D array: a square array, v on its diagonal, 0.0 elsewhere (a new
        array); of a 2-D array: its diagonal, a read-only view as in numpy."""
        if v.ndim == 2:
            return VArray(np.diag(v.a))
        out = _new((len(v), len(v)), 0.0)
        for i in range(len(v)):
            out.a[i, i] = v.a[i]
        return out

    @staticmethod
    def take(a, idx):
        out = np.take(a.a, idx)
        return VArray(out) if isinstance(out, np.ndarray) else out

    # elementwise (numpy broadcasting)
    exp = _ufunc(_Math.exp)
    log = _ufunc(_Math.log)
    log1p = _ufunc(_Math.log1p)
    expm1 = _ufunc(_Math.expm1)
    log10 = _ufunc(_Math.log10)
    sin = _ufunc(_Math.sin)
    cos = _ufunc(_Math.cos)
    tan = _ufunc(_Math.tan)
    tanh = _ufunc(_Math.tanh)
    sinh = _ufunc(_Math.sinh)
    cosh = _ufunc(_Math.cosh)
    arcsin = _ufunc(_Math.asin)
    arccos = _ufunc(_Math.acos)
    arctan = _ufunc(_Math.atan)
    arctan2 = _ufunc(_atan2)
    sqrt = _ufunc(_Math.sqrt)
    abs = _ufunc(abs)
    absolute = abs
    fabs = abs
    power = _ufunc(operator.pow)
    square = _ufunc(lambda a: a * a)
    negative = _ufunc(operator.neg)
    maximum = _ufunc(_max)
    minimum = _ufunc(_min)
    clip = _ufunc(_clip)
    sign = _ufunc(_np_sign)
    floor = _ufunc(_np_floor)

    @staticmethod
    def where(cond, a, b):
        if not isinstance(cond, np.ndarray):
            return lift(a) if cond else lift(b)
        cond, a, b = np.broadcast_arrays(cond, _objects(a), _objects(b))
        return VArray(np.where(cond, a, b))

    # reductions
    sum = staticmethod(lambda x, axis=None: _reduce(x, axis, _sum))
    mean = staticmethod(lambda x, axis=None: _reduce(x, axis, _mean))
    prod = staticmethod(lambda x, axis=None: _reduce(x, axis, _prod))
    max = staticmethod(lambda x, axis=None: _reduce(x, axis, _tied(max)))
    min = staticmethod(lambda x, axis=None: _reduce(x, axis, _tied(min)))
    amax = max
    amin = min

    # linear algebra and shapes
    dot = staticmethod(_matmul)
    matmul = staticmethod(_matmul)
    outer = staticmethod(lambda a, b: _elementwise(operator.mul, _literal(a)[:, None],
                                                   _literal(b)[None, :]))
    transpose = staticmethod(lambda a, axes=None: VArray(np.transpose(a.a, axes)))
    swapaxes = staticmethod(lambda a, i, j: VArray(np.swapaxes(a.a, i, j)))
    moveaxis = staticmethod(lambda a, s, d: VArray(np.moveaxis(a.a, s, d)))
    reshape = staticmethod(lambda a, shape: a.reshape(shape))


def _order(a):
    """The order numpy's *_like functions give a new array like `a` (order='K')."""
    return "F" if a.a.flags.f_contiguous and not a.a.flags.c_contiguous else "C"


def _full(shape, v, order="C"):
    out = np.empty(shape, dtype=object, order=order)
    out.fill(lift(v))
    return VArray(out)


def _leaves_like(a):
    """Fresh Vars with a's values (float32 ones exactly, in float64) in an object array
    with a's memory layout: the same strides in elements (Fortran order, steps, negative
    steps), so that numpy decides view or copy (a reshape) for it as for `a`."""
    steps = [s // a.itemsize for s in a.strides]
    if a.size == 0 or any(s * a.itemsize != t for s, t in zip(steps, a.strides)):
        return _constants(a)
    low = sum(min(0, s * (n - 1)) for s, n in zip(steps, a.shape))
    span = sum(abs(s) * (n - 1) for s, n in zip(steps, a.shape)) + 1
    buf = np.empty(span, dtype=object)
    out = np.lib.stride_tricks.as_strided(buf[-low:], a.shape,
                                          [s * buf.itemsize for s in steps])
    for idx in np.ndindex(a.shape):
        out[idx] = Var(float(a[idx]))
    return VArray(out)


def _constants(values):
    """An array of constants (np.linspace, np.arange: nothing flows from the arguments)."""
    out = np.empty(values.shape, dtype=object)
    for idx in np.ndindex(values.shape):
        out[idx] = Var(float(values[idx]))
    return VArray(out)


class _Numba:
    prange = range


NAMESPACE = {"math": _Math, "np": _Numpy, "numba": _Numba, "abs": _abs, "max": _max, "min": _min,
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
            arr = _leaves_like(a)       # fresh Vars: the leaves, in the argument's layout
            leaves.append(list(arr.a.ravel()))
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
