"""The run-time index and scratch helpers generated code calls (as `vec.<name>`, through
runtime/vec.py): broadcast sizes, slice bounds, reshape sizes and index-array entries
computed exactly as numpy does (raising numpy's errors), scratch arrays (local and shared
memory in CUDA code), dtype widening for BLAS, asserts, tuple indices, numba's thread count
in a form its disk cache keeps, and digamma (the derivative of math.lgamma)."""
import math

import numba
from numba.core import types
from numba.extending import lower_builtin, overload, type_callable
import numpy as np
from ..errors import CallValueError, ValueRefusedError
from .jitcache import key_by_level
from .vmath import _as_float, _as_int, call_compiled  # (bit casts; calls from lowerings)


@numba.njit(cache=True)
def bcast(n, m):
    """The broadcast size of two dimensions (numpy's rule); ValueError if incompatible."""
    if n == m or m == 1:
        return n
    if n == 1:
        return m
    raise ValueError("operands could not be broadcast together")


@numba.njit(cache=True)
def check_assign(n, m):
    """A value's dimension of length m stored into a target's of length n (`a[0] = v`):
    numpy broadcasts a length of 1 only; ValueError otherwise, as numba raises."""
    if m != n and m != 1:
        raise ValueError("cannot assign slice from input of different size")


@numba.njit(cache=True)
def check_sequence(n, m):
    """A tuple of m numbers stored into a slice of length n (`out[j] = f(...)`): numba
    stores a sequence of exactly that length, broadcasting none."""
    if m != n:
        raise ValueError("cannot assign slice from input of different size")


@numba.njit(cache=True)
def stride(n, size):
    """True (1) when a dimension of length n runs along a loop of `size` iterations, False
    (0) when it is broadcast (length 1): the index multiplier of that dimension. A bool, so
    that LLVM reads `i * flag` as `flag ? i : 0`: an index that is the loop's own where the
    flag is set, and the loop vectorizes (an integer flag is an unknown stride to it)."""
    return n == size


@numba.njit(cache=True)
def slice_start(n, start, stop, step, has_start, has_stop):
    """The first index of `a[start:stop:step]` on a dimension of length n (slice.indices)."""
    if step > 0:
        if not has_start:
            return 0
        s = start + n if start < 0 else start
        return min(max(s, 0), n)
    if not has_start:
        return n - 1
    s = start + n if start < 0 else start
    return min(max(s, -1), n - 1)


@numba.njit(cache=True)
def slice_len(n, start, stop, step, has_start, has_stop):
    """The length of `a[start:stop:step]` on a dimension of length n."""
    if step == 0:
        raise ValueError("slice step cannot be zero")
    s = slice_start(n, start, stop, step, has_start, has_stop)
    if step > 0:
        e = n if not has_stop else (stop + n if stop < 0 else stop)
        e = min(max(e, 0), n)
        return max(0, (e - s + step - 1) // step)
    e = -1 if not has_stop else (stop + n if stop < 0 else stop)
    e = min(max(e, -1), n - 1)
    return max(0, (s - e - step - 1) // (-step))


@numba.njit(cache=True)
def index(i, n):
    """An integer index into a dimension of length n, negative ones counted from the end;
    an int64 whatever integer type i has (numba joins uint64 with int64 into float64:
    stumpy's np.uint64 indices)."""
    k = np.int64(i)
    return k + n if k < 0 else k


@numba.njit(cache=True)
def list_item(i, n):
    """An index into a list of n elements kept in an array with room past them (a list built
    by .append, normalize/appends.py): out of range raises IndexError, as numba's lists do."""
    if i < -n or i >= n:
        raise IndexError("getitem out of range")
    return i


@numba.njit(cache=True)
def take_index(i, n):
    """An entry of an index array used on a dimension of length n: negative entries count
    from the end; out-of-range ones raise IndexError, as numpy does."""
    i = np.int64(i)
    if i < 0:
        i += n
    if i < 0 or i >= n:
        raise IndexError("index out of bounds in an integer-array index")
    return i


@numba.njit(cache=True)
def same_length(m, n):
    """A boolean mask's length m against the dimension n it indexes (IndexError unless
    equal, as numpy)."""
    if m != n:
        raise IndexError("boolean index did not match indexed array")
    return n


@numba.njit(cache=True)
def dot_length(m, n):
    """The length a matrix product sums over: the operands' m and n, equal (numba's
    np.dot raises this ValueError otherwise; a product does not broadcast)."""
    if m != n:
        raise ValueError("incompatible array sizes for np.dot(a, b)")
    return n


@numba.njit(cache=True)
def infer_size(size, known):
    """The -1 of a reshape: size / known, or numpy's ValueError when that is not whole."""
    if known == 0 or size % known != 0:
        raise ValueError("cannot reshape array into the requested shape")
    return size // known


@numba.njit(cache=True)
def reshape_dim(size, n, others):
    """A size a reshape is given as a value (`x.reshape(shape)`, `x.reshape(2, n)`): n, or
    for a negative n the size it stands for (size / the product of the others), with
    numba's errors (another negative size among the others, a product that does not
    divide). numba, like numpy, reads any negative size as the unknown one."""
    if n < 0:
        if others < 0:
            raise ValueError("multiple negative shape values")
        if others == 0 or size % others != 0:
            raise ValueError("total size of new array must be unchanged")
        return size // others
    return n


@numba.njit(cache=True)
def check_reshape(size, *dims):
    """A reshape keeps the number of elements, one negative size at most standing for what
    the others leave (numba's ValueErrors otherwise): a statement of its own, kept where
    nothing reads the reshape's sizes."""
    known = 1
    unknown = 0
    for n in dims:
        if n < 0:
            unknown += 1
        else:
            known *= n
    if unknown > 1:
        raise ValueError("multiple negative shape values")
    if (unknown == 0 and known != size) or \
            (unknown == 1 and (known == 0 or size % known != 0)):
        raise ValueError("total size of new array must be unchanged")


@numba.njit(cache=True)
def empty_int(shape):
    """An uninitialized int64 array (index arrays and mask coordinates)."""
    return np.empty(shape, np.int64)


@numba.njit(cache=True)
def local_empty(shape):
    """A kernel's `cuda.local.array(shape, float64)`: the thread's own scratch array (CUDA
    code spells it cuda.local.array again; codegen/assemble.py cuda_parts)."""
    return np.empty(shape)


@numba.njit(cache=True)
def shared_empty(shape):
    """A kernel's `cuda.shared.array(shape, float64)`: the block's array (CUDA code spells it
    cuda.shared.array again; codegen/assemble.py cuda_parts)."""
    return np.empty(shape)


@numba.njit(cache=True)
def local_empty32(shape):
    """A kernel's `cuda.local.array(shape, float32)`."""
    return np.empty(shape, np.float32)


@numba.njit(cache=True)
def shared_empty32(shape):
    """A kernel's `cuda.shared.array(shape, float32)`."""
    return np.empty(shape, np.float32)


SCRATCH = {"local_empty": ("local", "float64"), "shared_empty": ("shared", "float64"),
           "local_empty32": ("local", "float32"), "shared_empty32": ("shared", "float32")}
"""A kernel's scratch arrays, by the name of their allocator here: (CUDA memory space,
numba dtype), spelled `cuda.<space>.array(shape, numba.<dtype>)` in CUDA code."""


DECLARED = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool_")
"""The integer and boolean dtypes a user's np.zeros / np.ones / np.empty may declare
(`np.zeros(n, dtype=np.int64)`): each gets zeros_<dtype>, ones_<dtype>, empty_<dtype>."""


def _declared(kind, dtype):
    make = {"zeros": np.zeros, "ones": np.ones, "empty": np.empty}[kind]
    typ = getattr(np, dtype)

    def allocate(shape):
        return make(shape, typ)
    allocate.__name__ = allocate.__qualname__ = f"{kind}_{dtype}"
    allocate.__doc__ = f"np.{kind}(shape, np.{dtype}), as the user's function allocates it."
    return numba.njit(cache=True)(allocate)


for _kind in ("zeros", "ones", "empty"):
    for _dtype in DECLARED + ("float32",):
        globals()[f"{_kind}_{_dtype}"] = _declared(_kind, _dtype)


# Allocations of the generated adjoints (codegen/emit.py spells np.zeros_like(x), np.empty(n),
# ... this way in the adjoint's source): numba compiles numpy's allocation overloads again in
# every process, a second or more of a first call; through these, once per machine (its
# disk cache) and per argument type.
@numba.njit(cache=True)
def zeros(shape):
    """np.zeros(shape): float64 zeros."""
    return np.zeros(shape)


@numba.njit(cache=True)
def empty(shape):
    """np.empty(shape): an uninitialized float64 array."""
    return np.empty(shape)


@numba.njit(cache=True)
def zeros_like(a):
    """np.zeros_like(a)."""
    return np.zeros_like(a)


@numba.njit(cache=True)
def empty_like(a):
    """np.empty_like(a)."""
    return np.empty_like(a)


@numba.njit(cache=True)
def zeros_as(shape, like):
    """np.zeros(shape, like.dtype): the generated code's stacks of an array's values
    (`np.zeros((slots,) + u.shape, u.dtype)`)."""
    return np.zeros(shape, like.dtype)


@numba.njit(cache=True)
def empty_as(shape, like):
    """np.empty(shape, like.dtype): the generated code's stacks of an array's values (a
    checkpoint's snapshots of u, `np.empty((slots,) + u.shape, u.dtype)`; an inner loop's
    arrays kept for every iteration)."""
    return np.empty(shape, like.dtype)


@numba.njit(cache=True)
def empty_bool(shape):
    """An uninitialized boolean array."""
    return np.empty(shape, np.bool_)


@numba.njit(cache=True)
def nanmax(a, b):
    """max(a, b) that propagates NaN, as np.max does."""
    if a >= b or a != a:
        return a
    return b


@numba.njit(cache=True)
def nanmin(a, b):
    """min(a, b) that propagates NaN, as np.min does."""
    if a <= b or a != a:
        return a
    return b


KEY_LOWEST = -2 ** 63
"""Below every order key (order_key): a largest-value loop that saw no element."""
KEY_HIGHEST = 2 ** 63 - 1
"""Above every order key: a smallest-value loop that saw no element."""
_KEY_MASK = 2 ** 63 - 1


@numba.njit(cache=True)
def order_key(v):
    """An int64 that orders as the number `v` does as a float64, for loops finding a largest
    or smallest value with integer max / min, which LLVM vectorizes (codegen/extrema.py):
    the float64's bits as int64, the 63 low bits flipped where the sign is set (-0.0 then
    orders below 0.0, and NaN outside the infinities: the loop tests for those itself).
    An integer is keyed as the float64 it is compared as with the running value (a float
    that starts at -inf)."""
    b = _as_int(np.float64(v))
    return b ^ ((b >> 63) & _KEY_MASK)


@numba.njit(cache=True)
def key_value(k):
    """The float64 whose order_key is `k`."""
    return _as_float(k ^ ((k >> 63) & _KEY_MASK))


def widened(a, other):
    """`a`, or `a` as float64 where `other` has another dtype: BLAS in numba multiplies
    only arrays of one dtype, and an adjoint (float64) meets float32 operands."""
    return a if a.dtype == other.dtype else a.astype(np.float64)


@overload(widened)
def _widened(a, other):
    if a.dtype == other.dtype:
        return lambda a, other: a
    return lambda a, other: a.astype(np.float64)


def as_float64(a):
    """`a` as float64, copied only when it has another dtype."""
    return a if a.dtype == np.float64 else a.astype(np.float64)


@overload(as_float64)
def _as_float64(a):
    if a.dtype == types.float64:
        return lambda a: a
    return lambda a: a.astype(np.float64)


@numba.njit(cache=True)
def convert_like(like, v):
    """`type(like)(v)`: the number v converted to the type of the number `like`, as numba
    converts (`T = type(x); T(0.5)`, `type(scale)(1)`)."""
    return type(like)(v)


@numba.njit(cache=True)
def norm_root(total):
    """The 2-norm from its sum of squares: sqrt(total). Its own registry entry so that its
    derivative at a zero vector is the zero subgradient (sqrt's 0.5 / out would give
    inf * 0 = NaN where the norm of 0 * y, |y| * y or a distance between equal points is
    differentiable with derivative 0)."""
    return math.sqrt(total)


@numba.njit(cache=True)
def digamma(x):
    """psi(x), the derivative of log Gamma(x) (math.lgamma's derivative; math.gamma's is
    gamma(x) psi(x)): the reflection psi(1 - x) - pi / tan(pi x) below 1/2, the recurrence
    psi(x) = psi(x + 1) - 1/x up to 10, then the asymptotic series (error below 1e-14)."""
    if x <= 0.0 and x == math.floor(x):
        return math.nan
    shift = 0.0
    if x < 0.5:
        shift = -math.pi / math.tan(math.pi * x)
        x = 1.0 - x
    while x < 10.0:
        shift -= 1.0 / x
        x += 1.0
    f = 1.0 / (x * x)
    series = f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f / 132))))
    return shift + math.log(x) - 0.5 / x - series


@numba.njit(cache=True)
def trigamma(x):
    """psi'(x), the derivative of digamma (scipy.special.psi's): the reflection
    pi**2 / sin(pi x)**2 - psi'(1 - x) below 1/2, the recurrence psi'(x) = psi'(x + 1) +
    1/x**2 up to 10, then the asymptotic series (relative error below 1e-13)."""
    if x <= 0.0 and x == math.floor(x):
        return math.nan
    sign, shift = 1.0, 0.0
    if x < 0.5:
        s = math.sin(math.pi * x)
        shift = math.pi * math.pi / (s * s)
        sign = -1.0
        x = 1.0 - x
    acc = 0.0
    while x < 10.0:
        acc += 1.0 / (x * x)
        x += 1.0
    f = 1.0 / (x * x)
    series = 1.0 / x + 0.5 * f + f / x * (1.0 / 6 - f * (1.0 / 30 - f * (1.0 / 42 - f * (
        1.0 / 30 - f * 5.0 / 66))))
    return shift + sign * (acc + series)


# np.cumprod (of the flattened array, as numba computes it) and np.interp ---------------------
@numba.njit(cache=True)
def keep(value):
    """`value`, through a call numba's dead-code elimination keeps (a draw whose number
    nothing reads is still made: reverse/dce.py)."""
    return value


ASSERT_FAILED = "an assert statement of the differentiated function failed"


@numba.njit(cache=True)
def check_assert(ok):
    """An `assert` of the user's function through the passes (a statement with no
    derivative); generated code spells it `if not ok: raise AssertionError(ASSERT_FAILED)`
    (codegen/emit.py)."""
    if not ok:
        raise AssertionError(ASSERT_FAILED)


RAISABLE = (ValueError, TypeError, IndexError, KeyError, RuntimeError, NotImplementedError,
            ZeroDivisionError, ArithmeticError, OverflowError, FloatingPointError,
            AssertionError, LookupError, Exception, RuntimeWarning, UserWarning, Warning,
            RecursionError)
"""The exception classes a differentiated function may raise (by position in raise_error):
numba raises a warning class as an exception too (tslearn's `raise RuntimeWarning(...)`)."""


RAISE_FORMATTED = 1      # raise_error(kind, text, 1, *values): an f-string's pieces, values
RAISE_WITH_VALUES = 2    # raise_error(kind, message, 2, *values): Error(message, *values)
RAISE_PARTS = "\x00"     # what separates an f-string's literal pieces in its text


@numba.njit(cache=True)
def raise_error(kind, message):
    """A `raise` statement of the user's function through the passes (a statement with no
    derivative): raises RAISABLE[kind](message), as the statement would; generated code
    spells it as that raise statement (codegen/emit.py)."""
    if kind == 0:
        raise ValueError(message)
    if kind == 1:
        raise TypeError(message)
    if kind == 2:
        raise IndexError(message)
    if kind == 3:
        raise KeyError(message)
    if kind == 4:
        raise RuntimeError(message)
    if kind == 5:
        raise NotImplementedError(message)
    if kind == 6:
        raise ZeroDivisionError(message)
    if kind == 7:
        raise ArithmeticError(message)
    if kind == 8:
        raise OverflowError(message)
    if kind == 9:
        raise FloatingPointError(message)
    if kind == 10:
        raise AssertionError(message)
    if kind == 11:
        raise LookupError(message)
    if kind == 13:
        raise RuntimeWarning(message)
    if kind == 14:
        raise UserWarning(message)
    if kind == 15:
        raise Warning(message)
    if kind == 16:
        raise RecursionError(message)
    raise Exception(message)


@numba.njit(cache=True)
def tuple_index(k, n):
    """The position t[k] reads in a tuple of n numbers (k < 0 counts from the end), or
    IndexError as Python raises."""
    if k < -n or k >= n:
        raise IndexError("tuple index out of range")
    return k + n if k < 0 else k


@numba.njit(cache=True)
def check_same_length(n, m, message):
    """An array name a loop rebinds keeps its shape (adjit updates its array in place):
    ValueRefusedError(message) where it does not (the message names the rebinding's
    function and line: normalize/anf.py)."""
    if n != m:
        raise ValueRefusedError(message)


EMPTY_MAX, EMPTY_MIN, EMPTY_PTP, EMPTY_BUILTIN_MAX, EMPTY_BUILTIN_MIN = range(5)
"""What check_reducible says of an empty reduction: np.max, np.min (numpy's message),
np.ptp (numba's), and the builtins max(a), min(a) (Python's)."""


@numba.njit(cache=True)
def check_reducible(n, what):
    """A largest or smallest value of n elements: numba raises where there are none (adjit's
    loop would give -inf or inf)."""
    if n == 0:
        if what == EMPTY_MAX:
            raise ValueError("zero-size array to reduction operation maximum which has no "
                             "identity")
        if what == EMPTY_MIN:
            raise ValueError("zero-size array to reduction operation minimum which has no "
                             "identity")
        if what == EMPTY_PTP:
            raise ValueError("zero-size array reduction not possible")
        if what == EMPTY_BUILTIN_MAX:
            raise ValueError("max() arg is an empty sequence")
        raise ValueError("min() arg is an empty sequence")


@numba.njit(cache=True)
def check_gufunc_sizes(n, m):
    """Two arguments of a gufunc agree in a core dimension they share."""
    if n != m:
        raise ValueError("a gufunc's arguments differ in a core dimension")


@numba.njit(cache=True)
def check_einsum_sizes(n, m):
    """np.einsum's operands agree in the size of a subscript letter they share."""
    if n != m:
        raise ValueError("np.einsum's operands differ in the size of a subscript letter")


@numba.njit(cache=True)
def check_stencil_shape(n, m):
    """A relatively indexed argument of a stencil has the first argument's size in a
    dimension (numba would read past a smaller one)."""
    if n != m:
        raise ValueError("a stencil's relatively indexed arrays differ in shape from its "
                         "first argument")


class ShapeMismatchError(CallValueError):
    """A jvp's tangent (an hvp's vector) or a vjp's cotangent of another shape than its
    argument (the result): numba would broadcast it, or read past it, into a plausible
    wrong number. Compiled code raises it with the two shapes and Python writes the message
    (formatting text there would link numba's string functions into every derivative)."""

    def __init__(self, cotangent, got, want):
        if cotangent:
            super().__init__(f"adjit: the cotangent has shape {got} and the result {want}",
                             "Pass a cotangent of the result's shape.")
        else:
            super().__init__(f"adjit: a tangent (or hvp vector) has shape {got} and its "
                             f"argument {want}", "Pass, for each argument in argnums, a "
                             "direction of that argument's shape.")


class SharedMemoryError(CallValueError):
    """Two array arguments share memory and the function writes one of them: adjit
    differentiates each argument as an array of its own, numba's code sees one write
    through both names, so the derivative would be of another function."""

    def __init__(self):
        super().__init__("adjit: two array arguments share memory (the same array, or views "
                         "of one) and the function writes one of them; its derivative "
                         "treats them as separate arrays", "Pass a copy for one of them "
                         "(f(x, x.copy())).")


@numba.njit(cache=True)
def extent(a):
    """The first and one past the last byte address an array's elements occupy."""
    lo = np.int64(a.ctypes.data)
    hi = lo
    for k in range(a.ndim):
        e = np.int64(a.shape[k] - 1) * np.int64(a.strides[k])
        if e < 0:
            lo += e
        else:
            hi += e
    return lo, hi + a.itemsize


@numba.njit(cache=True)
def _addresses(a):
    """The first byte address of each of an array's elements, sorted."""
    out = np.empty(a.size, np.int64)
    base = np.int64(a.ctypes.data)
    for flat in range(a.size):
        address = base
        rest = flat
        for k in range(a.ndim - 1, -1, -1):
            address += np.int64(rest % a.shape[k]) * np.int64(a.strides[k])
            rest //= a.shape[k]
        out[flat] = address
    out.sort()
    return out


@numba.njit(cache=True)
def share_elements(a, b):
    """Whether some byte of an element of `a` is a byte of an element of `b`: exact for
    strided views whose extents overlap though their elements interleave (x[::2] and
    x[1::2], the real and imaginary parts of one complex array, columns of a matrix). Two
    vectors of one stride and element size are decided by arithmetic: element i of a and j
    of b meet where |d + (j - i) s| < itemsize (d the distance of their first elements);
    otherwise each array's elements are one size, so both lists of element addresses,
    sorted, are walked once together."""
    s = a.strides[0] if a.ndim == 1 else 0
    if a.ndim == 1 and b.ndim == 1 and b.strides[0] == s and a.itemsize == b.itemsize and \
            a.itemsize <= abs(s):
        d = np.int64(b.ctypes.data) - np.int64(a.ctypes.data)
        k = -d // s                  # the two whole numbers j - i nearest -d / s
        for j_i in (k, k + 1):
            if -(a.size - 1) <= j_i <= b.size - 1 and abs(d + j_i * s) < a.itemsize:
                return True
        return False
    pa = _addresses(a)
    pb = _addresses(b)
    i = 0
    j = 0
    while i < pa.size and j < pb.size:
        if pa[i] + a.itemsize <= pb[j]:
            i += 1
        elif pb[j] + b.itemsize <= pa[i]:
            j += 1
        else:
            return True
    return False


@numba.njit(cache=True)
def check_apart(written, other):
    """An argument the function writes shares no memory with another array argument
    (SharedMemoryError otherwise). Arrays whose byte ranges overlap are compared element by
    element (share_elements: interleaved strided views are apart)."""
    if written.size == 0 or other.size == 0:
        return
    a0, a1 = extent(written)
    b0, b1 = extent(other)
    if a0 < b1 and b0 < a1 and share_elements(written, other):
        raise SharedMemoryError()


@numba.njit(cache=True)
def check_tangent(value, like):
    """A tangent (an hvp vector) has its argument's shape: ShapeMismatchError if not."""
    if value.shape != like.shape:
        raise ShapeMismatchError(False, value.shape, like.shape)


@numba.njit(cache=True)
def check_cotangent(value, like):
    """A vjp's cotangent has the result's shape: ShapeMismatchError if not."""
    if value.shape != like.shape:
        raise ShapeMismatchError(True, value.shape, like.shape)


@numba.extending.intrinsic
def _num_threads(typingctx):
    """numba's thread count, called by its symbol in the threading layer as numba's own
    parallel loops call it: numba.get_num_threads() reaches it through a ctypes pointer,
    which keeps a function from numba's disk cache."""
    from numba.np.ufunc import parallel
    parallel._launch_threads()      # (registers the symbol; numba.get_num_threads does too)

    def codegen(context, builder, signature, args):
        import llvmlite.ir
        from numba.core import cgutils
        fn = cgutils.get_or_insert_function(
            builder.module, llvmlite.ir.FunctionType(llvmlite.ir.IntType(64), []),
            "get_num_threads")
        return builder.call(fn, [])
    return types.int64(), codegen


@numba.njit
def num_threads():
    """The number of threads numba's parallel loops use now (numba.get_num_threads()), in a
    form numba can cache."""
    return _num_threads()


def not_negative(i):
    """`i`, an index the generated code knows is not negative (a loop over a block of a loop
    that starts at 0), said so to LLVM: numba then indexes with it without the test for a
    negative index, and a loop over the block vectorizes (codegen/vector_math.py)."""
    return i


# not_negative, to_slot and from_slot are typed and lowered to LLVM instructions directly
# (type_callable, lower_builtin), as numba's own casts are: no function of numba IR is built
# and typed again at every call site (an overload with inline="always" is: about a fifth of
# the time numba took to compile GMM's gradient, whose loops vectorize), and no call is left
# for LLVM to inline before it vectorizes the loop.
@type_callable(not_negative)
def _type_not_negative(context):
    def typer(i):
        if isinstance(i, types.Integer):
            return types.unliteral(i)
        return None
    return typer


@lower_builtin(not_negative, types.Integer)
def _lower_not_negative(context, builder, sig, args):
    i = context.cast(builder, args[0], sig.args[0], sig.return_type)
    if sig.return_type.signed:
        builder.assume(builder.icmp_signed(">=", i, i.type(0)))
    return i


def _is_integer(v):
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def to_slot(v):
    """A number as a float64 that holds it exactly (a float's value, an integer's bits), for
    the buffers of a loop split into blocks (codegen/vector_math.py); from_slot gives it back."""
    return np.int64(v).view(np.float64) if _is_integer(v) else np.float64(v)


def from_slot(like, s):
    """The number to_slot(v) holds, in the type of the number `like` (v's type)."""
    return type(like)(np.float64(s).view(np.int64) if _is_integer(like) else s)


def sum_slots(like, buf, n):
    """The sum of from_slot(like, buf[k]) for k < n: the terms of one block of a loop that
    sums as it goes, in the type of `like`. Compiled, floats are added in any order (in
    vector lanes: runtime/sums.py's sum_range, one compiled function, so the same order
    wherever the loop is computed);
    integers exactly, in int64."""
    total = type(like)(0) if not isinstance(like, (bool, np.bool_)) else 0
    for k in range(n):
        total += from_slot(like, buf[k])
    return total


@numba.njit(cache=True)
def _sum_int_slots(buf, n):
    """The int64 sum of the integers buf[:n] holds (as to_slot's bits)."""
    total = 0
    for k in range(n):
        total += _as_int(buf[k])
    return total


@numba.njit(cache=True)
def _count_slots(buf, n):
    """How many of buf[:n] hold True."""
    total = 0
    for k in range(n):
        total += buf[k] != 0.0
    return total


# sum_slots is typed and lowered as a call of one of the compiled sums above (sums.py's for
# floats), loaded from numba's disk cache: an @overload returning the same call compiled a
# function of its own in every process (50 ms of every first call whose loops sum in blocks).
@type_callable(sum_slots)
def _type_sum_slots(context):
    def typer(like, buf, n):
        if isinstance(like, (types.Float, types.Integer, types.Boolean)) and \
                isinstance(buf, types.Array) and isinstance(n, types.Integer):
            return types.unliteral(like) if isinstance(like, types.Float) else types.int64
        return None
    return typer


@lower_builtin(sum_slots, types.Number, types.Array, types.Integer)
@lower_builtin(sum_slots, types.Boolean, types.Array, types.Integer)
def _lower_sum_slots(context, builder, sig, args):
    from .sums import sum_range, sum_range32
    like, buf, n = sig.args
    count = context.cast(builder, args[2], n, types.int64)
    if isinstance(like, types.Float) and like.bitwidth != 32:
        zero, one = (context.get_constant(types.int64, v) for v in (0, 1))
        return call_compiled(context, builder, sum_range,
                             (buf, types.int64, types.int64, types.int64),
                             (args[1], zero, one, count))
    total = sum_range32 if isinstance(like, types.Float) else \
        _sum_int_slots if isinstance(like, types.Integer) else _count_slots
    return call_compiled(context, builder, total, (buf, types.int64), (args[1], count))


@type_callable(to_slot)
def _type_to_slot(context):
    def typer(v):
        if isinstance(v, (types.Integer, types.Float, types.Boolean)):
            return types.float64
        return None
    return typer


@lower_builtin(to_slot, types.Integer)
def _lower_integer_to_slot(context, builder, sig, args):
    bits = context.cast(builder, args[0], sig.args[0], types.int64)
    return builder.bitcast(bits, context.get_value_type(types.float64))


@lower_builtin(to_slot, types.Float)
@lower_builtin(to_slot, types.Boolean)
def _lower_to_slot(context, builder, sig, args):
    return context.cast(builder, args[0], sig.args[0], types.float64)


@type_callable(from_slot)
def _type_from_slot(context):
    def typer(like, s):
        if isinstance(like, (types.Integer, types.Float, types.Boolean)) and \
                isinstance(s, types.Float):
            return types.unliteral(like)
        return None
    return typer


@lower_builtin(from_slot, types.Integer, types.Float)
def _lower_integer_from_slot(context, builder, sig, args):
    s = context.cast(builder, args[1], sig.args[1], types.float64)
    bits = builder.bitcast(s, context.get_value_type(types.int64))
    return context.cast(builder, bits, types.int64, sig.return_type)


@lower_builtin(from_slot, types.Float, types.Float)
@lower_builtin(from_slot, types.Boolean, types.Float)
def _lower_from_slot(context, builder, sig, args):
    return context.cast(builder, args[1], sig.args[1], sig.return_type)


key_by_level(globals())     # numba caches each level apart (jitcache.py)
