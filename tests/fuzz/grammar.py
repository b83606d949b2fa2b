"""A hypothesis strategy that writes random programs in adjit's core language.

`programs()` draws a `Program`: module source text with a function `f` and up to two helper
functions it calls, plus the arguments to call `f` with. The grammar covers float arithmetic,
`math` calls behind domain guards (log of 1 + a*a, asin of 0.9*tanh(a), ...), abs/min/max,
`if/elif/else` on comparisons joined by and/or/not, conditional expressions, `for` over
`range` with one to three arguments (negative steps, triangular loops, bounds from arguments
and from `len`/`.shape`), bounded `while`, `break`/`continue`, reassignment and augmented
assignment of the same names in loops, tuple swaps, local 1-D and 2-D arrays (zeros, ones,
copies) with element reads, overwrites and in-place updates, array names bound to new
arrays (`a = 2.0 * a + x`), calls to generated helpers
(including helpers that write into a local array), early returns, and `stop_gradient` at
random places.

Vectorized numpy (`Writer.aexpr`, `reduction`, `new_vec_array`, `vec_update`; half the
programs draw mostly these): array expressions of a given shape with broadcasting between
2-D, 1-D, columns and scalars, every elementwise numpy function adjit lowers, reductions
with and without an axis, matrix products, outer products, transposes, reshapes, slices
read and assigned, in-place updates, np.array/concatenate/stack/full/linspace/arange. The
programs mean the same in numpy and in adjit: a slice kept in a name (a numpy view, an
adjit copy) is copied or never written through, and in loops arrays read by matrix
products or reshapes are never written afterwards. Known adjit bugs are steered around
(AVOID).

Construct groups (GROUPS, each avoided by default through AVOID; `python -m fuzz --only
NAME` draws one): integer index arrays with repeats (gathers, scatters, np.take), boolean
masks, transposes with axes of 3-D arrays, reductions over axes of 3-D arrays, constant
exponents at exact zeros, float32 and non-contiguous arguments, views written and read
through both names, defaults and keyword-only parameters named like module globals,
constructors of differentiated values, scratch buffers and prange loops, integer counters,
time loops, module-level arrays, loops over arrays in helpers (`for v in a`, enumerate,
zip). There numpy itself is the oracle: views are written through, repeated scatter indices
keep their last write (refad.py). Two groups refad cannot run, random draws in a program
that seeds itself and the argument forms of adjit/rules/forms.py (FD_GROUPS), are judged by
finite differences of the program itself, in Python and compiled by numba (check.py); such
a program has no stop_gradient and no float32 argument, and means the same in numba
(reductions along an axis are np.sum, an in-place update never reads a view of its target).

Every choice is an integer drawn from hypothesis with the simplest option first, so
hypothesis shrinks a failing program toward fewer statements and simpler expressions.
Some programs write into their array arguments (the gradient must repeat exactly those
writes); helpers write only into local arrays. Programs always terminate (every `while`
increments its counter first); names defined inside a block are used only inside it, so
every program runs.
"""
import ast
import dataclasses
import functools
import math
import re
import warnings

import numpy as np
from hypothesis import strategies as st

N = 4                    # length of the 1-D arrays
SHAPE2 = (3, 2)          # shape of the 2-D arrays
SHAPE3 = (2, 3, 4)       # shape of the 3-D argument `t` (construct groups "transpose3d",
                         # "axis3d")
N_PARAM = 3              # the value passed for the int parameter `n`
CONSTS = ("0.5", "2.0", "-1.25", "0.3", "1.5", "-0.7", "3.0")
# statement kinds (see Writer.stmt), repeated to weight them: 0 new float, 1 reassignment,
# 2 array element write, 3 new array, 4 if, 5 for, 6 while, 7 break/continue, 8 early return,
# 9 swap, 10 helper call, 11 int assignment, 12 shape unpacking, 13 a float defined in every
# branch of an if, 14 a bool flag, 15 a new array from a vectorized expression, 16 slice
# assignment or in-place update of a whole array, 17 a float from a vectorized reduction
STMT_KINDS = (0, 0, 1, 1, 1, 2, 2, 3, 4, 4, 4, 5, 5, 5, 5, 6, 6, 7, 7, 8, 9, 10, 10, 11, 12,
              13, 13, 14, 15, 15, 16, 17, 19)
# the weights of half the programs: mostly vectorized statements
VEC_STMT_KINDS = (0, 1, 1, 2, 3, 4, 4, 5, 5, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
                  15, 15, 15, 15, 15, 15, 16, 16, 16, 16, 16, 17, 17, 17, 17, 17, 19, 19)
# shapes of arrays made by vectorized expressions, and of the arrays reductions read
# (repeated to weight them); every shape has sources: slices of x (N,) and w SHAPE2,
# products, broadcasts, np.array/np.full/np.stack
NEW_SHAPES = ((N,), (N,), (N,), SHAPE2, SHAPE2, (2,), (3,), (2, 2), (2, 3), (3, 1), (6,))
REDUCED_SHAPES = ((N,), (N,), SHAPE2, SHAPE2, (2,), (3,), (2, 2), (N, N), (3, 1))
# Known adjit bugs the fuzzer steers around, so that a campaign finds new ones (each was
# reported with a reproducer; docs/testing.md). Remove a name once adjit is fixed;
# `python -m fuzz --all-constructs` draws and reports them all.
# - "mm operand in loop" (grammar): a matrix product of two 2-D arrays, or a reshape, in a
#   loop is refused ("the array 'm' is changed after a matrix product or reshape reads it")
#   when an operand is defined or written in the loop, temporaries included
#   (`np.tanh(w) @ w.T`), even when nothing changes it after the product in the iteration:
#   in loops the grammar multiplies and reshapes only whole arrays the loop leaves alone;
# (Fixed since: "checkpoint sum order", with checkpoint=2 a top-level loop whose backward
# iterations commute ran downward, block by block, where the recorded gradient ran it upward
# (adjit/reverse/ascending.py): sums last bits apart (tests/regressions/fuzz_ckpt_ascending*.py);
# "aug slice reads target", `a[1:] += a[:-1]` was a running update; "prefix
# slice", `x[:3]` was taken for all of x where materialized; "like of computed array",
# `np.full_like(a, v)` of `a = -np.min(w, 0)` crashed; "slice update from its own name",
# `x[::-1] = x` was a running update leaving a palindrome; "alloc in loop", an array that
# vectorized code allocates in a loop where its size is computed in the loop (in a branch, a
# while loop, from np.linspace/np.arange made there) was refused as "allocated in a loop
# with a shape that changes between iterations".)
AVOID = {"mm operand in loop"}
# Construct groups drawn only when their name is not in AVOID (`python -m fuzz --only NAME`
# draws one of them in nearly every program, `--all-constructs` all of them): numpy is the
# oracle (refad runs real numpy indexing, views and masks on object arrays of Vars). With
# every group avoided the grammar makes no draw for them: the default programs are exactly
# those drawn before the groups existed. A program records the groups it drew
# (Program.groups); adjit's clean refusals there are discards the campaign counts per group.
# What adjit does with each, from a 400-program `--only` campaign per group at 7e1f57e and
# again at 6b920e7 (after the indexing/views commit 31a00af); docs/testing.md has the counts,
# the refusal messages and the reduced programs. Remove a name from AVOID once it passes:
GROUPS = {
    # gathers x[idx], A[idx, :], A[:, idx], np.take(x, idx), x[idx[i]] in loops, scatters
    # out[idx] = v / += v (numpy: a repeated index is written once, the last write wins);
    # idx a local np.array([0, 2, 2]) or an int64 argument `ix`, nearly always with a repeat.
    # 7e1f57e: x[idx] typed as one element (refusals downstream: "a scalar function applied
    # to a whole array", "np.outer of arguments that are not 1-D", ...; np.sum(x[ix]) made
    # the value an array); generated code indexed with a float array (IndexError); np.take
    # refused. 6b920e7: `w[:, -1] -= w[1, ix] - np.take(w, ix)` (ix = [1, -2, -1]) leaves
    # w different from numpy's (the two gathers combined; each alone passes)
    "index-arrays": "integer index arrays with repeats",
    # x[x > c] and x[m] read in reductions, y[m] = v, y[m] += v, y[x > 0.5] = 0.0,
    # np.where(m, a, b) with a named mask m. 7e1f57e: refused ("an array of booleans (an
    # array comparison outside np.where)"). 6b920e7: passes
    "masks": "boolean masks",
    # np.transpose(t, (1, 0, 2)), t.transpose(0, 2, 1), t.T, np.swapaxes, np.moveaxis on 3-D
    # arrays (the argument t and np.stack results), then indexed or reduced to 1-D/2-D.
    # 7e1f57e: np.transpose(t, axes) ignored the axes (wrong values); generated code raised
    # (broadcast); .transpose(axes), .swapaxes, np.swapaxes, np.moveaxis refused.
    # 6b920e7: passes
    "transpose3d": "transposes with axes on 3-D arrays",
    # np.sum/mean/max/min/prod over one axis of a 3-D array (0..2 and -1..-3, function and
    # method, keyword and positional) and axis=-2 on 2-D arrays (numba has no keepdims).
    # Passes (7e1f57e, 6b920e7)
    "axis3d": "reductions over an axis of 3-D arrays, negative axes",
    # a ** p, np.power(a, p), math.pow(a, p) for p in 0.0, 1.0, 0, 1, 2, 0.5, 2.0, 3, with
    # arguments that are exactly 0.0 (kinds "array1/zeros", "float/zero"). 7e1f57e: the
    # gradient of a ** 0 at a = 0 was NaN (0 * 0 ** -1); math.pow(y, 0.0) at y = 0 raised
    # ZeroDivisionError in the generated code. 6b920e7: passes
    "const-pow": "constant exponents, at 0.0 exactly",
    # float32 arguments ("array1/f32", ...): the gradient must be float32. Passes (both)
    "float32": "float32 array arguments",
    # arguments that are not C-contiguous: x_big[::2], x_big[::-1], Fortran order, a
    # transposed 3-D array ("array1/strided", "array1/rev", "array2/F", "array3/perm", ...).
    # Passes (both)
    "strided-args": "non-contiguous argument arrays",
    # a name for a view (v = a[1:3], a[i], a.T, a[::2], a.reshape(2, 2) of a C-contiguous
    # array, v = a) and writes through either name, read through the other. 7e1f57e: a view
    # was a copy (wrong values and gradients, arguments written differently); `v = a`
    # refused ("another array makes two names for one array"). 6b920e7: passes
    "views": "views written and read through both names",
    # module globals (gain = 5.0) and parameters with defaults / keyword-only ones named like
    # them, in f (never passed) and in helpers called with and without the keyword. 7e1f57e:
    # f's keyword-only default read the module global instead (wrong value); a rebound
    # keyword-only parameter was unbound in the generated code; keyword arguments and
    # keyword-only parameters refused. 6b920e7: f's positional default, not passed, is
    # refused ("called with 2 argument(s). 'f' takes 3: x, y, bias"); the rest passes
    "kwdefaults": "defaults and keyword-only parameters named like module globals",
    # np.linspace(a, b, n) and np.arange(a, a + 2.0, 0.5) with differentiated bounds,
    # np.full, np.full_like, np.array of active floats, np.eye(n) * a, np.diag(v), np.empty
    # filled in a loop. 7e1f57e: no gradient through np.arange / np.linspace bounds.
    # 6b920e7: np.linspace(0, v, 5) (an int start) leaves `v_bar` unbound in the generated
    # code. Both: np.diag refused (no derivative rule)
    "constructors": "constructors of active values",
    # a loop over the elements of an array whose iterations fill a scratch buffer
    # (np.empty before the loop), read it back and add to a sum; the outer loop sometimes a
    # numba.prange: the shapes adjit computes again per iteration in the backward sweep
    # (adjit/reverse/recompute.py) and runs in parallel (adjit/reverse/parallel.py)
    "buffers": "scratch buffers filled in every iteration, prange loops",
    # integer counters stepped by a constant in loops (idx += 1, j -= 1, k = k + 2),
    # carried across an outer loop, stepped in a branch, indexing loads a[idx % n] and
    # a[j]; an accumulator reset per outer iteration and read after its inner loop. What
    # the backward sweep steps back instead of recording (adjit/reverse/plan.py inverse,
    # replayable, reset_windows)
    "counters": "integer counters stepped in loops, indexing loads",
    # time loops as simulations write them: a step into a second array (a stencil over the
    # inside, a periodic one, or a pointwise update), then a copy back over the same range
    # or another one, sometimes a warm start of the second array, a read of it after the
    # loop, an early `break`. The backward sweep's adjoint resets that the next step
    # overwrites (adjit/reverse/resets.py) and stencil gathers (adjit/reverse/fission.py)
    "timesteps": "time loops: a step into a second array and a copy back",
    # np.random.seed(<int>) as f's first statement, then draws: np.random.random(),
    # standard_normal(), normal/uniform/exponential/laplace/gumbel/logistic/lognormal/rayleigh
    # with parameters from the program's active values (scales kept positive: 0.5 + e * e),
    # sized draws `np.random.normal(a, b, 4)` as array leaves, np.random.randint(0, n) as an
    # index, draws thrown away as statements, draws in helpers (helpers with an effect), in
    # loops, nested loops and noisy time loops. Judged by finite differences of the program
    # itself, which seeds its own generator (FD_GROUPS, check.py)
    "draws": "random draws with active parameters in a program that seeds itself",
    # module-level arrays G1 (2-D) and G2 (1-D) that f and the helpers read: sliced
    # (G1[1:, :2]), indexed (G1[i], G1[i, j]), in expressions with active values; constants
    # for refad too (its np.array of the module's literal)
    "globals": "module-level arrays sliced and indexed in f and in helpers",
    # helpers that loop over arrays (`for v in a`, `for k, v in enumerate(a)`, `for u, v in
    # zip(a, b)`, rows of 2-D arrays) given arguments, locals, slices and module-level
    # arrays; the same loops in f. refad iterates its arrays as numpy does
    "callee-loops": "loops over array elements in helpers: for v in a, enumerate, zip",
    # the argument forms numba accepts (adjit/rules/forms.py FORMS, not those marked `!` nor
    # the draws of group "draws") as float leaves (np.sum of an array form) in loops and
    # branches, their placeholders bound to extra parameters fx, fy, fp, fu, fM, fS, fT, fv,
    # fw, fs of f; judged by finite differences like "draws"
    "forms": "argument forms of numpy functions (adjit/rules/forms.py)",
    # numba code as its authors write it: module-level @vectorize kernels (eager and lazy,
    # one with a branch) called on numbers and on arrays, `type(v)(0.5)` conversions,
    # `for idx in np.ndindex(a.shape)` loops reading a[idx], a helper with an optional
    # argument tested `is None` (called with and without it), a function bound to a name
    # (`fn = math.sin`), scipy.special through a ctypes wrapper of its C function's
    # address, `raise ValueError(...)` under a test, np.zeros(n, dtype=<float64 spelled
    # several ways>). Judged by finite differences of numba's compile (FD_GROUPS)
    "idioms": "numba idioms: @vectorize kernels, type(v)(c), np.ndindex, is None, "
              "function values, scipy.special address wrappers, list comprehensions, "
              "nested defs and lambdas, @guvectorize gufuncs, f-string raises, a.flat, "
              "arrays of a length a loop's step sets, @njit helpers with complex "
              "numbers (kept as numba's calls)",
    # an array name bound to different arrays on the paths of an `if`: each path its own
    # expression, one path keeping what the name held before (an expression or a view),
    # or a conditional expression; read afterwards. adjit copies the array of the path
    # taken into one after the `if` (adjit/normalize/joins.py); before that it was refused
    # ("the array variable 'a3' is reassigned")
    "joins": "an array name bound on both paths of an if",
}
AVOID |= set(GROUPS)
# groups with statements of their own (Writer.group_stmt) and with array leaves (group_leaf)
STMT_GROUPS = ("index-arrays", "masks", "transpose3d", "axis3d", "const-pow", "views",
               "kwdefaults", "constructors", "buffers", "counters", "timesteps", "draws",
               "globals", "callee-loops", "forms", "idioms", "joins")
LEAF_GROUPS = ("index-arrays", "masks", "transpose3d", "axis3d", "const-pow", "constructors",
               "draws", "globals")
# groups whose programs refad cannot run (numpy's generator, the numpy functions of FORMS):
# a program drawing one is judged by finite differences of the program itself (check.py),
# so it has no stop_gradient (differences do not see it) and no float32 arguments
FD_GROUPS = ("draws", "forms", "idioms")
# module-level arrays (groups "globals", "callee-loops"): their shapes, and the views of
# them that array leaves read besides VIEWS
GLOBAL_SHAPES = {"G1": ((3, 4), SHAPE2), "G2": ((N,), (3,))}
GLOBAL_VIEWS = {1: ("[1:3]", "[::-1]", "[:3]"),
                2: ("[1:, :2]", "[:, :2]", "[:2, 1:]", "[:, ::2]", "[#0, 1:3]", "[1:, 1:]",
                    "[:, 1:3]")}
# what the elements of the module-level arrays are
GLOBAL_VALUES = ("0.5", "-1.25", "0.3", "2.0", "1.5", "-0.7", "0.25", "-2.0", "1.0", "0.75")
# placeholders of adjit/rules/forms.py: their shapes (s a number), the extra parameter of f
# each is bound to ("f" + placeholder), and the draws FORMS lists that group "draws" covers
FORM_SHAPES = {"x": (5,), "y": (3,), "p": (5,), "u": (5,), "M": (3, 3), "S": (3, 3),
               "T": SHAPE3, "v": (3,), "w": (3,), "s": ()}
FORM_PLACEHOLDER = re.compile(r"(?<![\w.])(" + "|".join(FORM_SHAPES) + r")(?![\w(])")
DRAWN_BY_DRAWS = ("random", "standard_normal", "normal", "uniform", "exponential", "laplace",
                  "gumbel", "logistic", "lognormal", "rayleigh", "randint", "seed")
CONST_POWS = ("0.0", "1.0", "0", "1", "2", "0.5", "2.0", "3")
GLOBALS = ("gain", "scale", "bias")     # module globals of group "kwdefaults"
# views of 3-D arrays (indices only: transposes are drawn by Writer.tensor)
VIEWS3 = ("[#0]", "[:, #1]", "[:, :, #2]", "[#0, #1]", "[#0, :, #2]", "[:, #1, #2]")
# views that group "views" keeps in a name and writes through (".reshape" only of arrays
# known to be C-contiguous: numpy copies other ones)
VIEW_NAMES = {1: ("[1:3]", "[::2]", "[1:]", "[2:]", "[-2:]", "[::-1]", "[:3]", "",
                  ".reshape(2, 2)"),
              2: ("[#0]", ".T", "[1:]", "[:, #1]", "[::2]", "", ".reshape(6)",
                  ".reshape(2, 3)")}
# elementwise numpy on an array a, and operands b, c that broadcast to it; domains guarded
ELEMENTWISE = (
    "({a} / (1.5 + np.tanh({b})))", "({a} / (1.0 + {b} * {b}))", "(2.0 / (1.25 + np.sin({a})))",
    "np.sin({a})", "np.cos({a})", "np.tanh({a})", "np.arctan(np.negative({a}))",
    "(np.sinh(np.tanh({a})) + np.cosh(np.tanh({b})))", "np.exp(np.tanh({a}))",
    "np.exp(-({a} * {a}))", "np.expm1(np.tanh({a}))",
    "(np.log(1.0 + {a} * {a}) - np.log1p({b} * {b}))", "np.log10(2.0 + np.sin({a}))",
    "np.sqrt(1.0 + {a} * {a})", "np.sqrt(np.abs({a}) + 0.25)", "np.tan(0.5 * np.tanh({a}))",
    "(np.arcsin(0.9 * np.tanh({a})) * np.arccos(0.9 * np.tanh({b})))", "({a} ** 2)",
    "(np.square({a}) - {b} ** 3)", "((0.5 + np.abs({a})) ** 1.5)",
    "np.power(1.5 + np.tanh({a}), np.tanh({b}))", "(2.0 ** np.tanh({a}))",
    "np.arctan2({a}, 1.0 + {b} * {b})", "np.arctan2({a}, {b})", "np.maximum({a}, {b})",
    "np.minimum({b}, {a})", "np.clip({a}, -0.5, 0.7)", "np.where({a} > 0.0, {b}, {c})",
    "np.where({b} < {a}, {a}, {c})", "(np.sign({a}) * {b} + np.floor({c}))",
    "(stop_gradient({a}) * {b})")
# reductions of a whole array a to a float
REDUCTIONS = ("np.sum({a})", "{a}.sum()", "np.mean({a})", "{a}.mean()", "np.max({a})",
              "{a}.max()", "np.amax({a})", "np.min({a})", "{a}.min()", "np.amin({a})",
              "np.prod({a})", "{a}.prod()", "np.linalg.norm({a})", "np.sum({a})")
# views of an array that right-hand sides read (#k: an index drawn for dimension k), and the
# slices that are assigned to, by the array's number of dimensions
VIEWS = {1: ("", "[1:]", "[:-1]", "[::2]", "[1::2]", "[::-1]", "[:, None]", "[1:, None]",
             "[-2:]", "[1:3]", "[:3]", "[:1]", "[-1:]"),
         2: ("", ".T", "[#0]", "[#0, :]", "[:, #1]", "[1:]", "[:-1, :]", "[:, 1:]", "[:, :1]",
             "[:, #1, None]", "[::-1]", "[::2]", "[1:, :1]", "[:1]")}
STORES = {1: ("[1:]", "[:-1]", "[1:-1]", "[::2]", "[1::2]", "[:]", "[::-1]", "[:2]", "[2:]"),
          2: ("[#0]", "[#0, :]", "[:, #1]", "[1:]", "[:-1]", "[:, 1:]", "[:, :1]", "[1:, 1:]",
              "[:]", "[::2]")}


@functools.lru_cache(maxsize=None)
def view_shape(shape, spec):
    """The shape of `a<spec>` for an array `a` of `shape` (numpy computes it)."""
    return eval("a" + re.sub(r"#\d", "0", spec),  # noqa: S307
                {"a": np.empty(shape), "np": np}).shape


def _tuple(items):
    return ", ".join(items) + ("," if len(items) == 1 else "")


def _whole_array(text, transposed=True):
    """The array name when an operand is a whole array or (with transposed) its transpose:
    adjit's matrix products read that array itself, else a temporary copy. None if not."""
    if not transposed:
        return text if re.fullmatch(r"[A-Za-z_]\w*", text) else None
    m = re.fullmatch(r"([A-Za-z_]\w*)(\.T)?|np\.transpose\(([A-Za-z_]\w*)\)", text)
    return (m.group(1) or m.group(3)) if m else None


def _shape3(shape, form, a, b=None):
    """The shape after a 3-D permutation form of Writer.tensor."""
    x = np.empty(shape)
    if form == "transpose":
        return x.transpose(a).shape
    if form == "swapaxes":
        return np.swapaxes(x, a, b).shape
    if form == "moveaxis":
        return np.moveaxis(x, a, b).shape
    return x.T.shape


def _view_base(text):
    """The array an expression is a numpy view of (slices, new axes, transposes and
    reshapes of a name), else None."""
    node = ast.parse(text, mode="eval").body
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Subscript) or \
                isinstance(node, ast.Attribute) and node.attr == "T":
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("reshape", "transpose", "swapaxes", "moveaxis"):
            base = node.func.value
            node = node.args[0] if isinstance(base, ast.Name) and base.id == "np" else base
        else:
            return None


@dataclasses.dataclass
class Program:
    source: str
    params: tuple        # (name, kind): kind "float", "array1", "array2", "array3", "int",
                         # "index:0,2,2" (an int64 array of those values); a float or array
                         # kind may add "/mods" joined by "+": "zero" (a float 0.0), "zeros"
                         # (about half the entries 0.0), "f32" (float32), "strided"
                         # (big[::2]), "rev" (big[::-1]), "F" (Fortran order), "perm" (a
                         # transposed 3-D array, neither C nor F)
    seed: int
    groups: tuple = ()   # the construct groups (GROUPS) the program draws

    def args(self):
        """Fresh argument values (floats, float64 arrays, ints) from the program's seed."""
        rng = np.random.default_rng(self.seed)
        return [_make_arg(kind, rng) for _, kind in self.params]

    def float_params(self):
        """Positions of the parameters adjit can differentiate."""
        return tuple(k for k, (_, kind) in enumerate(self.params)
                     if kind.split("/")[0] in ("float", "array1", "array2", "array3")
                     or kind.startswith("form:"))


def _form_arg(placeholder, rng):
    """A value for a placeholder of adjit/rules/forms.py, in the domain its forms need: p
    positive, u in (-1, 1), M well conditioned, S symmetric positive definite, s in (0, 1)."""
    shape = FORM_SHAPES[placeholder]
    if placeholder == "s":
        return float(rng.uniform(0.2, 0.6))
    if placeholder == "p":
        return rng.uniform(0.3, 2.2, shape)
    if placeholder == "u":
        return rng.uniform(-0.9, 0.9, shape)
    if placeholder == "M":
        return np.eye(3) * 1.5 + rng.uniform(-0.5, 0.5, shape)
    if placeholder == "S":
        a = rng.uniform(-0.7, 0.7, shape)
        return a @ a.T + np.diag([1.0, 1.5, 2.0])
    return rng.uniform(-1.5, 1.5, shape)


def _make_arg(kind, rng):
    base, _, mods = kind.partition("/")
    mods = set(mods.split("+")) if mods else set()
    if base == "int":
        return N_PARAM
    if base.startswith("form:"):
        return _form_arg(base[5:], rng)
    if base.startswith("index:"):
        return np.array([int(v) for v in base[6:].split(",")], dtype=np.int64)
    if base == "float":
        v = float(rng.uniform(-1.5, 1.5))
        return 0.0 if "zero" in mods else v
    shape = {"array1": (N,), "array2": SHAPE2, "array3": SHAPE3}[base]
    values = rng.uniform(-1.5, 1.5, shape)
    if "zeros" in mods:
        values[rng.uniform(0.0, 1.0, shape) < 0.5] = 0.0
    dtype = np.float32 if "f32" in mods else np.float64
    values = values.astype(dtype)
    if "strided" in mods:
        out = np.zeros((2 * shape[0],) + shape[1:], dtype)[::2]
    elif "rev" in mods:
        out = np.zeros(shape, dtype)[::-1]
    elif "F" in mods:
        out = np.zeros(shape, dtype, order="F")
    elif "perm" in mods and len(shape) == 3:
        out = np.zeros((shape[1], shape[0], shape[2]), dtype).transpose(1, 0, 2)
    else:
        return values
    out[...] = values
    return out


@functools.lru_cache(maxsize=None)
def form_leaves():
    """(form, placeholders, whether its result is an array) for every form of adjit's
    adjit/rules/forms.py that numba accepts (not marked `!`), but the draws of group "draws";
    numpy's result at sample values tells array from number (forms numpy does not run, or
    whose result is not float, are left out). numpy's generator is left as it was."""
    from adjit.rules.forms import FORMS
    covered = {getattr(np.random, name) for name in DRAWN_BY_DRAWS}
    rng = np.random.default_rng(0)
    values = {ph: _form_arg(ph, rng) for ph in FORM_SHAPES}
    state = np.random.get_state()
    out = []
    try:
        for fn, forms in FORMS.items():
            if any(fn is c for c in covered):
                continue
            for form in forms:
                if form.startswith("!"):
                    continue
                names = tuple(sorted(set(FORM_PLACEHOLDER.findall(form)),
                                     key=list(FORM_SHAPES).index))
                names_ = {"np": np, "math": math, "round": round, "abs": abs, "min": min,
                          "max": max, "float": float}
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        r = eval(form, names_, values)  # noqa: S307
                except Exception:   # noqa: BLE001 - a form numpy does not run
                    continue
                if np.asarray(r).dtype.kind != "f":
                    continue
                out.append((form, names, bool(np.ndim(r))))
    finally:
        np.random.set_state(state)
    return tuple(out)


class Scope:
    """What a block may read and write. Copied on entry to a block, so names made inside a
    block stay inside it; writes to outer names are still allowed."""

    def __init__(self):
        self.floats = []        # readable float names
        self.assignable = []    # float names that may be reassigned
        self.ints = {}          # int name -> (lo, hi) bounds of its value
        self.arrays = {}        # array name -> shape
        self.writable = []      # local arrays that may be written
        self.flags = []         # bool names
        self.indexes = {}       # index array name -> its values (group "index-arrays")
        self.masks = {}         # bool array name -> its shape (group "masks")
        self.forms = False      # f's scope: its form parameters are here (group "forms")
        self.loop_depth = 0
        self.in_while = False

    def child(self):
        c = Scope()
        c.floats = list(self.floats)
        c.assignable = list(self.assignable)
        c.ints = dict(self.ints)
        c.arrays = dict(self.arrays)
        c.writable = list(self.writable)
        c.flags = list(self.flags)
        c.indexes = dict(self.indexes)
        c.masks = dict(self.masks)
        c.forms = self.forms
        c.loop_depth = self.loop_depth
        c.in_while = self.in_while
        return c


@dataclasses.dataclass
class Helper:
    name: str
    kind: str            # "reader" (array, float), "scalar" (float, float), "writer" (array, int, float),
                         # "kw" (float, then parameters with defaults: group "kwdefaults")
    vec: bool = False    # its body has vectorized code (may allocate arrays)
    defaults: tuple = ()     # "kw": (name, keyword-only) of its parameters with defaults
    shapes: tuple = ()       # "loop" (arrays, then a float): the shapes of its arrays


class Writer:
    """Draws one program; every decision is a small integer from hypothesis."""

    def __init__(self, draw):
        self.draw = draw
        self.counter = 0
        self.helpers = []
        self.stmt_budget = 0
        self.frozen = set()     # arrays never to be written again (see freeze, new_vec_array)
        self.writes = {}        # array -> the loops (sets of ids) of each definition or write
        self.loops = []         # ids of the loops around the statement being drawn
        self.no_freeze = set()  # a helper's array parameter (the caller may write it), and
                                # the array the statement being drawn writes
        self.no_helper_write = None     # the array a slice update being drawn writes
        self.prefer = None      # an array whose views array leaves prefer (slice updates)
        self.no_alloc = 0       # > 0 inside a branch in a loop, or in a while loop (AVOID)
        self.vec_drawn = 0      # vectorized expressions drawn so far
        self.rotation = 0       # rotating() choices made so far
        self.vec_heavy = False  # draw mostly vectorized statements (half the programs)
        # construct groups (GROUPS) not in AVOID; with none, no draw is made for them
        self.groups = [g for g in GROUPS if g not in AVOID]
        self.used = set()       # the groups drawn so far
        self.c_contig = set()   # arrays known to be C-contiguous (a reshape is a view)
        self.globals = []       # module globals (group "kwdefaults")
        self.view_names = []    # (view, base) pairs made by group "views"
        self.group_depth = 0    # > 0 while drawing a group leaf
        self.fd_judged = False  # a program of FD_GROUPS: seeded, no stop_gradient, no float32
        self.global_arrays = {}     # module-level arrays (groups "globals", "callee-loops")
        self.iterating = set()  # arrays a `for v in a` loop being drawn iterates: not written
        self.nesting = 0        # > 0 while drawing a draw's parameters or a form's arguments
        self.form_pool = []     # the forms of FORMS this program draws (group "forms")
        self.called = set()     # the "loop" helpers called so far (group "callee-loops")
        self.results = []       # floats of f's top level the new groups made: f returns them

    # choices -----------------------------------------------------------------------------
    def pick(self, n):
        return self.draw(st.integers(0, n - 1))

    def choice(self, options):
        return options[self.pick(len(options))]

    def rotating(self, options):
        """A choice from a long list, offset by how many were made before in this program:
        hypothesis repeats runs of draws across the programs it generates, and the offset
        spreads such repeats over the whole list (every numpy function shows up)."""
        self.rotation += 1
        return options[(self.pick(len(options)) + 7 * self.rotation) % len(options)]

    def chance(self, percent):
        return self.draw(st.integers(0, 99)) >= 100 - percent

    def fresh(self, prefix):
        self.counter += 1
        return f"{prefix}{self.counter}"

    # integers and indices ----------------------------------------------------------------
    def index(self, scope, n):
        """An int expression in [-n, n) for an axis of length n."""
        if self.on("draws") and self.chance(8):
            self.used.add("draws")
            return f"np.random.randint(0, {n})"
        if self.on("index-arrays") and scope.indexes and self.chance(25):
            text = self.index_element(scope, n)
            if text:
                return text
        ints = list(scope.ints.items())
        if ints and not self.chance(25):
            name, (lo, hi) = self.choice(ints)
            form = self.pick(4)
            if form == 0 and -n <= lo and hi < n:
                return name
            if form == 1 and 1 - n <= lo and hi < n + 1:
                return f"{name} - 1"
            if form == 2:
                return f"({name} + {self.pick(n)}) % {n}"
            return f"({n - 1} - {name}) % {n}" if self.chance(50) else f"(2 * {name} + 1) % {n}"
        return str(self.pick(2 * n) - n)

    def element(self, scope):
        name, shape = self.choice(sorted(scope.arrays.items()))
        return f"{name}[{', '.join(self.index(scope, n) for n in shape)}]"

    # float expressions -------------------------------------------------------------------
    def atom(self, scope):
        if (self.on("draws") or self.on("forms")) and not self.nesting:
            text = self.group_atom(scope)
            if text:
                return text
        k = self.pick(4)
        if k == 0 and scope.floats:
            return self.choice(scope.floats)
        if k == 1 and scope.arrays:
            return self.element(scope)
        if k == 2 and scope.ints:
            i = self.choice(sorted(scope.ints))
            return f"float({i})" if self.chance(50) else f"0.25 * float({i})"
        if k == 3 or not scope.floats:
            c = self.choice(CONSTS)
            return f"({c})" if c.startswith("-") else c
        return self.choice(scope.floats)

    def expr(self, scope, depth=0):
        if depth >= 3 or self.chance(30):
            return self.atom(scope)
        k = self.pick(17)
        a = self.expr(scope, depth + 1)
        if k == 0:
            return f"({a} + {self.expr(scope, depth + 1)})"
        if k == 1:
            return f"({a} - {self.expr(scope, depth + 1)})"
        if k == 2:
            if self.chance(20):     # a value times itself: the adjoint of a power
                return self.choice((f"({a} * {a} * {a})", f"({a} * ({a} * {a}))",
                                    f"({a} * {a} * {a} * {a})"))
            return f"({a} * {self.expr(scope, depth + 1)})"
        if k == 3:
            return f"(-{a})"
        if k == 4:
            b = self.expr(scope, depth + 1)
            return self.choice((f"({a} / (1.5 + math.tanh({b})))", f"({a} / (1.0 + {b} * {b}))",
                                f"({a} / 1.5)", f"(2.0 / (1.25 + math.sin({a})))"))
        if k == 5:
            return self.choice((f"math.sin({a})", f"math.cos({a})", f"math.tanh({a})",
                                f"math.atan({a})", f"math.erf({a})", f"math.erfc({a})",
                                f"math.sinh(math.tanh({a}))", f"math.cosh(math.tanh({a}))"))
        if k == 6:
            return self.choice((f"math.exp(math.tanh({a}))", f"math.exp(-({a} * {a}))",
                                f"math.expm1(math.tanh({a}))", f"math.log(1.0 + {a} * {a})",
                                f"math.log1p({a} * {a})", f"math.log10(2.0 + math.sin({a}))",
                                f"math.sqrt(1.0 + {a} * {a})", f"math.sqrt(abs({a}) + 0.25)"))
        if k == 7:
            return self.choice((f"math.tan(0.5 * math.tanh({a}))",
                                f"math.asin(0.9 * math.tanh({a}))",
                                f"math.acos(0.9 * math.tanh({a}))", f"math.fabs({a})"))
        if k == 8:
            b = self.expr(scope, depth + 1)
            return self.choice((f"math.atan2({a}, 1.0 + {b} * {b})",
                                f"math.hypot({a}, 0.5 + {b} * {b})",
                                f"math.atan2({a}, {b})"))
        if k == 9 and self.on("const-pow") and self.chance(60):
            return self.const_pow(a, scalar=True)
        if k == 9:
            b = self.expr(scope, depth + 1)
            return self.choice((f"({a} ** 2)", f"({a} ** 3)", f"((0.5 + abs({a})) ** 1.5)",
                                f"((1.5 + math.tanh({a})) ** math.tanh({b}))",
                                f"math.pow(1.25 + math.sin({a}), 2.5)",
                                f"(2.0 ** math.tanh({a}))"))
        if k == 10:
            return self.choice((f"({a} % 1.5)", f"({a} // 1.0)", f"float(math.floor({a}))",
                                f"(1.5 % (2.0 + math.tanh({a})))"))
        if k == 11:
            b = self.expr(scope, depth + 1)
            return self.choice((f"abs({a})", f"max({a}, {b})", f"min({a}, {b})"))
        if k == 12:
            a, b = self.in_branch(lambda: (self.expr(scope, depth + 1),
                                           self.expr(scope, depth + 1)))
            return f"({a} if {self.cond(scope)} else {b})"
        if k == 13:
            # (finite differences, the oracle of FD_GROUPS, do not see stop_gradient)
            return a if self.fd_judged else f"stop_gradient({a})"
        if k == 14 and self.helpers:
            return self.call(scope, a)
        if k == 15 and depth <= 1 and self.allocating():
            return self.reduction(scope)
        return f"({a} * {self.choice(CONSTS)})"

    def call(self, scope, a, h=None):
        if h is None:
            helpers = self.helpers if self.allocating() else \
                [h for h in self.helpers if not h.vec]
            if not helpers:
                return f"math.sin({a})"
            h = self.choice(helpers)
            self.vec_drawn += h.vec     # a helper calling h has vectorized code too
        if h.kind == "reader" and scope.arrays:
            arr = self.choice([n for n, s in sorted(scope.arrays.items()) if s == (N,)] or ["?"])
            if arr != "?":
                return f"{h.name}({arr}, {a})"
        if h.kind == "writer":
            arrs = [b for b in self.writable(scope, (N,)) if b != self.no_helper_write]
            if arrs:
                j = self.choice(sorted(scope.ints)) if scope.ints and self.chance(60) \
                    else str(self.pick(N))
                arr = self.choice(arrs)
                self.note_write(arr)
                return f"{h.name}({arr}, {j}, {a})"
        if h.kind == "scalar":
            return f"{h.name}({a}, {self.atom(scope)})"
        if h.kind == "kw":
            return self.kw_call(scope, h, a)
        if h.kind == "loop":     # arrays in scope, their views, module-level arrays
            self.called.add(h.name)
            args = []
            with_globals = scope.child()
            with_globals.arrays.update(self.global_arrays)
            for shape in h.shapes:
                cands = self.sources(with_globals, shape)
                if not cands:
                    return f"math.sin({a})"
                args.append(self.spell(with_globals, *self.choice(cands)))
            self.used.add("callee-loops")
            return f"{h.name}({', '.join(args)}, {a})"
        return f"math.sin({a})"

    def cond(self, scope, depth=0):
        k = self.pick(5)
        if k == 0 or (k == 4 and depth > 0):
            return f"{self.expr(scope, 1)} {self.choice(('<', '>', '<=', '>='))} " \
                   f"{self.choice(('0.0', '0.5', '-0.3', '1.0'))}"
        if k == 1:
            return f"{self.expr(scope, 1)} {self.choice(('<', '>'))} {self.expr(scope, 2)}"
        if k == 2 and scope.ints:
            i = self.choice(sorted(scope.ints))
            return self.choice((f"{i} < {self.pick(N)}", f"{i} == {self.pick(N)}",
                                f"{i} % 2 == 0", f"{i} != {self.pick(N)}"))
        if k == 3:
            if scope.flags and self.chance(50):
                return f"{'not ' if self.chance(30) else ''}{self.choice(scope.flags)}"
            return f"not {self.cond(scope, depth + 1)}" if depth < 2 else "True"
        if k == 4:
            first = self.cond(scope, depth + 1)
            second = self.in_branch(lambda: self.cond(scope, depth + 1))    # short-circuit
            return f"({first} {self.choice(('and', 'or'))} {second})"
        return f"{self.expr(scope, 1)} > 0.0"

    # statements --------------------------------------------------------------------------
    def block(self, scope, depth, lo=1, hi=3):
        out = []
        for _ in range(lo + self.pick(hi - lo + 1)):
            if self.stmt_budget <= 0:
                break
            out += self.stmt(scope, depth)
        return out or [self.new_float(scope)]

    def new_float(self, scope):
        v = self.fresh("v")
        line = f"{v} = {self.expr(scope)}"
        scope.floats.append(v)
        scope.assignable.append(v)
        return line

    def stmt(self, scope, depth):
        self.stmt_budget -= 1
        kinds = VEC_STMT_KINDS if self.vec_heavy else STMT_KINDS
        if self.groups:
            kinds = kinds + (18,) * 5
        k = self.choice(kinds)
        if k == 18:
            lines = self.group_stmt(scope, depth)
            if lines:
                return lines
        if k == 0:
            return [self.new_float(scope)]
        if k == 1 and scope.assignable:
            s = self.choice(scope.assignable)
            e = self.expr(scope)
            return [self.choice((f"{s} = {s} * 0.5 + {e}", f"{s} += {e}", f"{s} -= {e}",
                                 f"{s} *= math.tanh({e})", f"{s} = math.sin({s}) * {e}",
                                 f"{s} = {e}"))]
        if k == 2 and self.writable(scope):
            a = self.choice(self.writable(scope))
            self.note_write(a)
            idx = ", ".join(self.index(scope, n) for n in scope.arrays[a])
            e = self.protecting(a, lambda: self.expr(scope))
            return [self.choice((f"{a}[{idx}] = {e}", f"{a}[{idx}] += {e}",
                                 f"{a}[{idx}] = {a}[{idx}] * {e}",
                                 f"{a}[{idx}] = math.tanh({a}[{idx}] + {e})"))]
        if k == 3:
            return [self.new_array(scope)]
        if k == 4 and depth < 3:
            return self.if_stmt(scope, depth)
        if k == 5 and depth < 3 and scope.loop_depth < 2:
            return self.for_stmt(scope, depth)
        if k == 6 and depth < 3 and scope.loop_depth < 2:
            return self.while_stmt(scope, depth)
        if k == 7 and scope.loop_depth:
            word = "break" if self.chance(50) else "continue"
            return [f"if {self.cond(scope)}:", f"    {word}"]
        if k == 8:
            cond = self.cond(scope)
            return [f"if {cond}:", f"    return {self.in_branch(lambda: self.expr(scope))}"]
        if k == 9 and len(scope.assignable) >= 2:
            p, q = self.choice(scope.assignable), self.choice(scope.assignable)
            if p != q:
                return [f"{p}, {q} = {q}, {p}" if self.chance(60) else
                        f"{p}, {q} = {self.expr(scope, 1)}, {self.expr(scope, 1)}"]
        if k == 10 and self.helpers:
            v = self.fresh("v")
            line = f"{v} = {self.call(scope, self.expr(scope, 1))}"
            scope.floats.append(v)
            scope.assignable.append(v)
            return [line]
        if k == 11 and scope.loop_depth and scope.ints:
            j = self.fresh("j")
            i = self.choice(sorted(scope.ints))
            scope.ints[j] = (0, N - 1)
            return [f"{j} = ({i} + {1 + self.pick(3)}) % {N}"]
        if k == 12 and any(len(s) == 2 for s in scope.arrays.values()):
            a = self.choice([n for n, s in sorted(scope.arrays.items()) if len(s) == 2])
            r, c = self.fresh("r"), self.fresh("c")
            scope.ints[r] = (scope.arrays[a][0],) * 2
            scope.ints[c] = (scope.arrays[a][1],) * 2
            v = self.fresh("v")
            scope.floats.append(v)
            scope.assignable.append(v)
            return [f"{r}, {c} = {a}.shape", f"{v} = float({r} * {c})"]
        if k == 13 and depth < 3:
            v = self.fresh("v")
            cond = self.cond(scope)
            out = [f"if {cond}:"] + indent(self.in_branch(
                lambda: self.block(scope.child(), depth + 1, 0, 1) + [f"{v} = {self.expr(scope)}"]))
            if self.chance(40):
                out += self.in_branch(lambda: [f"elif {self.cond(scope)}:",
                                               f"    {v} = {self.expr(scope)}"])
            out += ["else:", f"    {self.in_branch(lambda: f'{v} = {self.expr(scope)}')}"]
            scope.floats.append(v)
            scope.assignable.append(v)
            return out
        if k == 14:
            b = self.fresh("flag")
            line = f"{b} = {self.cond(scope)}"
            scope.flags.append(b)
            return [line]
        if k == 15 and self.allocating():
            return [self.new_vec_array(scope)]
        if k == 16 and self.allocating():
            line = self.vec_update(scope)
            if line:
                return [line]
        if k == 17 and self.allocating():
            v = self.fresh("v")
            line = f"{v} = {self.reduction(scope)}"
            scope.floats.append(v)
            scope.assignable.append(v)
            return [line]
        if k == 19 and self.allocating():
            line = self.rebind_array(scope)
            if line:
                return [line]
        return [self.new_float(scope)]

    # vectorized numpy ----------------------------------------------------------------------
    def in_branch(self, draw, always=False):
        """draw() for code inside a branch (or, with always, inside a while loop): within a
        loop, vectorized allocations there are not drawn while "alloc in loop" is in AVOID
        (it was a known bug, fixed: allocations in a loop whose size the loop computes)."""
        inc = bool(self.loops) or always
        self.no_alloc += inc
        try:
            return draw()
        finally:
            self.no_alloc -= inc

    def protecting(self, a, draw):
        """draw() for the right-hand side of a write into array a: in a loop, no matrix
        product or reshape there may read a (adjit refuses a change right after)."""
        added = a not in self.no_freeze
        self.no_freeze.add(a)
        try:
            return draw()
        finally:
            if added:
                self.no_freeze.discard(a)

    def allocating(self):
        """Whether vectorized code (which may allocate arrays) may be drawn here."""
        return not (self.no_alloc and "alloc in loop" in AVOID)

    def writable(self, scope, shape=None):
        """Arrays that may be written here: local (or argument) arrays that no matrix
        product, reshape or numpy view still reads (see `freeze`)."""
        return [a for a in scope.writable if a not in self.frozen
                and a not in self.iterating and (shape is None or scope.arrays[a] == shape)]

    def note_write(self, a):
        """Record a definition of or a write into array `a` inside the current loops."""
        self.writes.setdefault(a, []).append(frozenset(self.loops))

    def freeze(self, scope, *operands, transposed=True):
        """Whether a matrix product or reshape may read these operand expressions here. Its
        adjoint needs the operands' values: outside loops adjit copies an operand that
        changes later, but in a loop (a helper's body counts: it may be inlined into one)
        nothing may change the arrays they name afterwards (they are never written again),
        nor before the product in the same loop (see AVOID). Operands that are not whole
        arrays (nor, for a reshape, their transposes) are temporaries (in a loop: see
        AVOID)."""
        if not self.loops:
            return True
        names = {_whole_array(e, transposed) for e in operands}
        in_loop = "mm operand in loop" in AVOID
        if in_loop and None in names:
            return False
        names = {a for a in names if a in scope.arrays}
        for a in names:
            if a in self.no_freeze:
                return False
            if in_loop and any(w & set(self.loops) for w in self.writes.get(a, ())):
                return False
        self.frozen.update(names)
        return True

    def sources(self, scope, shape):
        """(name, spec) for every array read whole or through a view spec with `shape`."""
        out = []
        for name, s in sorted(scope.arrays.items()):
            specs = VIEWS[len(s)] if len(s) < 3 else VIEWS3
            if name in self.global_arrays:
                specs = specs + GLOBAL_VIEWS[len(s)]
            for spec in specs:
                if view_shape(s, spec) == shape:
                    out.append((name, spec))
        return out

    def spell(self, scope, name, spec):
        shape = scope.arrays[name]
        text = name + spec
        for k in range(len(shape)):
            if f"#{k}" in text:
                text = text.replace(f"#{k}", self.index(scope, shape[k]))
        if spec == ".T" and self.chance(50):
            text = f"np.transpose({name})"
        return text

    def scalar(self, scope):
        """A float expression inside an array expression (shallow: no reductions)."""
        return self.expr(scope, 2)

    def aoperand(self, scope, shape, d):
        return self.scalar(scope) if shape == () else self.aexpr(scope, shape, d)

    def aleaf(self, scope, shape):
        """An array of exactly `shape`: a view of an array in scope, or a new one."""
        if self.groups and self.chance(35):
            text = self.group_leaf(scope, shape)
            if text:
                return text
        cands = self.sources(scope, shape)
        if self.prefer is not None:
            mine = [c for c in cands if c[0] == self.prefer]
            if mine and self.chance(60):
                cands = mine
        if cands and not self.chance(15):
            return self.spell(scope, *self.choice(cands))
        e = self.scalar(scope)
        like = [n for n, s in sorted(scope.arrays.items()) if s == shape]
        if like and self.chance(30):
            return f"np.full_like({self.choice(like)}, {e})"
        if len(shape) == 1:
            n = shape[0]
            forms = [f"np.full({n}, {e})",
                     f"np.array([{', '.join(self.scalar(scope) for _ in range(n))}])"]
            if not (self.loops and "alloc in loop" in AVOID):
                forms += [f"np.linspace(-1.0, 1.0, {n})", f"(0.25 * np.arange({n}))"]
            return self.choice(forms)
        r, c = shape
        k = self.pick(3)
        if k == 0 and r * c <= 6:
            rows = ", ".join("[" + ", ".join(self.scalar(scope) for _ in range(c)) + "]"
                             for _ in range(r))
            return f"np.array([{rows}])"
        if k == 1:
            return f"np.outer({self.aleaf(scope, (r,))}, {self.aleaf(scope, (c,))})"
        return f"np.full(({r}, {c}), {e})"

    def operand_shapes(self, shape):
        """Two shapes that broadcast to `shape` (numpy's rules), scalars included."""
        opts = [(shape, shape), (shape, shape), (shape, ()), ((), shape)]
        if len(shape) == 2:
            r, c = shape
            opts += [(shape, (c,)), ((c,), shape), ((r, 1), (c,)), ((c,), (r, 1))]
            if c != 1:
                opts += [(shape, (r, 1)), ((r, 1), shape)]
        return self.choice(opts)

    def sub_shape(self, shape):
        """A shape that broadcasts to `shape`."""
        opts = [shape, shape, ()]
        if len(shape) == 2:
            opts += [(shape[1],), (shape[0], 1)]
        return self.choice(opts)

    def aexpr(self, scope, shape, d=0):
        """An array expression of exactly `shape`, drawn over the arrays in scope: elementwise
        numpy with broadcasting, products, axis reductions, joins; every domain guarded."""
        self.vec_drawn += 1
        if d >= 3 or self.chance(15 + 15 * d):
            return self.aleaf(scope, shape)
        k = self.pick(11)
        if k <= 1:
            s1, s2 = self.operand_shapes(shape)
            a, b = self.aoperand(scope, s1, d + 1), self.aoperand(scope, s2, d + 1)
            return f"({a} {self.choice(('+', '-', '*'))} {b})"
        a = self.aexpr(scope, shape, d + 1)
        if k <= 6 and self.on("const-pow") and self.chance(30):
            return self.const_pow(a, scalar=False)
        if k <= 6:
            template = self.rotating(ELEMENTWISE)
            if self.fd_judged:
                template = template.replace("stop_gradient", "")
            b = self.aoperand(scope, self.sub_shape(shape), d + 1) if "{b}" in template else ""
            c = self.aoperand(scope, self.sub_shape(shape), d + 1) if "{c}" in template else ""
            return template.format(a=a, b=b, c=c)
        if k == 7:
            return self.matmul(scope, shape, d) or a
        if k == 8 and len(shape) == 1:
            return self.axis_reduction(scope, shape, d)
        if k in (8, 9):
            return self.joined(scope, shape, d) or a
        if len(shape) == 2 and self.chance(50):
            r, c = shape
            u, v = self.aexpr(scope, (r,), d + 1), self.aexpr(scope, (c,), d + 1)
            return f"np.outer({u}, {v})"
        # a reduction broadcast back (softmax-like: x - np.max(x), x / np.sum(x * x), ...)
        if len(shape) == 2 and self.chance(50):
            fn = self.axis_fn(self.choice(("mean", "max", "sum")))
            return self.choice((f"({a} - np.{fn}({a}, axis=0))", f"({a} - np.{fn}({a}, 0))"))
        return self.choice((f"({a} - np.max({a}))", f"({a} - np.mean({a}))",
                            f"({a} / (1.0 + np.sum({a} * {a})))",
                            f"(np.exp({a} - np.max({a})) / np.sum(np.exp({a} - np.max({a}))))"))

    def matmul(self, scope, shape, d):
        """`@`, np.dot or .dot with a result of `shape` (None where adjit's rule for the
        operands of matrix products forbids it here)."""
        k = self.choice((2, 3))
        if len(shape) == 1:
            sa, sb = ((shape[0], k), (k,)) if self.chance(50) else ((k,), (k, shape[0]))
        else:
            sa, sb = (shape[0], k), (k, shape[1])
        a, b = self.matrix(scope, sa, d + 1), self.matrix(scope, sb, d + 1)
        if len(sa) == 2 and len(sb) == 2 and not self.freeze(scope, a, b):
            return None
        return self.choice((f"({a} @ {b})", f"np.dot({a}, {b})", f"{a}.dot({b})"))

    def matrix(self, scope, shape, d):
        """An operand of a matrix product; a 2-D one is often a transpose."""
        if len(shape) == 2 and self.chance(30):
            a = self.aexpr(scope, shape[::-1], d)
            return f"np.transpose({a})" if self.chance(50) else f"{a}.T"
        return self.aexpr(scope, shape, d)

    def axis_reduction(self, scope, shape, d):
        """np.sum/mean/max/min/prod (function or method) along one axis of a 2-D array."""
        k = self.choice((2, 3, 4))
        axis = self.choice(("0", "1", "-1", "-2") if self.on("axis3d") else ("0", "1", "-1"))
        if axis == "-2":
            self.used.add("axis3d")
        src = (k, shape[0]) if axis in ("0", "-2") else (shape[0], k)
        a = self.aexpr(scope, src, d + 1)
        fn = self.axis_fn(self.choice(("sum", "mean", "max", "min", "prod")))
        return self.choice((f"np.{fn}({a}, axis={axis})", f"{a}.{fn}(axis={axis})",
                            f"np.{fn}({a}, {axis})", f"{a}.{fn}({axis})"))

    def joined(self, scope, shape, d):
        """np.concatenate / np.stack / reshape / np.array producing `shape`."""
        k = self.pick(4)
        if len(shape) == 1:
            n = shape[0]
            if k <= 1 and n >= 2:
                m = 1 + self.pick(n - 1)
                parts = (self.aexpr(scope, (m,), d + 1), self.aexpr(scope, (n - m,), d + 1))
                return f"np.concatenate(({parts[0]}, {parts[1]}))"
            src = self.choice(((2, n // 2), (n // 2, 2))) if n % 2 == 0 else (n, 1)
            return self.reshaped(scope, shape, src, d)
        r, c = shape
        if k == 0 and r <= 3:
            rows = _tuple([self.aexpr(scope, (c,), d + 1) for _ in range(r)])
            return f"np.stack(({rows}))" if self.chance(70) else f"np.stack(({rows}), axis=0)"
        if k == 1 and c <= 3:
            cols = _tuple([self.aexpr(scope, (r,), d + 1) for _ in range(c)])
            return f"np.stack(({cols}), axis={self.choice(('1', '-1'))})"
        if k == 2:
            if r >= 2 and (c == 1 or self.chance(50)):
                m = 1 + self.pick(r - 1)
                a, b = self.aexpr(scope, (m, c), d + 1), self.aexpr(scope, (r - m, c), d + 1)
                return f"np.concatenate(({a}, {b}))" if self.chance(50) else \
                    f"np.concatenate(({a}, {b}), axis=0)"
            if c >= 2:
                m = 1 + self.pick(c - 1)
                a, b = self.aexpr(scope, (r, m), d + 1), self.aexpr(scope, (r, c - m), d + 1)
                return f"np.concatenate(({a}, {b}), axis=1)"
            return None
        size = r * c
        srcs = [s for s in ((size,), (2, size // 2), (size // 2, 2))
                if s != shape and min(s) >= 1 and max(s) <= 6 and math.prod(s) == size]
        return self.reshaped(scope, shape, self.choice(srcs), d) if srcs else None

    def reshaped(self, scope, shape, src, d):
        a = self.aexpr(scope, src, d + 1)
        if not self.freeze(scope, a, transposed=False):
            return None
        target = ", ".join(map(str, shape))
        return self.choice((f"{a}.reshape(({target},))" if len(shape) == 1 else
                            f"{a}.reshape(({target}))", f"{a}.reshape({target})",
                            f"np.reshape({a}, ({target}{',' if len(shape) == 1 else ''}))"))

    def reduction(self, scope):
        """A float from a whole-array reduction, a norm, a dot product of vectors, or a
        reduction of a slice with a loop-variable bound."""
        self.vec_drawn += 1
        if self.groups and self.chance(40):
            text = self.group_reduction(scope)
            if text:
                return text
        k = self.pick(9)
        ints = [i for i, (lo, hi) in sorted(scope.ints.items()) if 0 <= lo and hi <= N - 1]
        ones = [a for a, s in sorted(scope.arrays.items()) if s == (N,)]
        if k == 8 and ints and ones:
            i, a = self.choice(ints), self.choice(ones)
            return self.choice((f"np.sum({a}[{i}:])", f"np.sum({a}[:{i}])",
                                f"np.max({a}[:{i} + 1])", f"np.min({a}[{i}:])",
                                f"np.sum(np.sin({a}[{i}:]) * {a}[{i}:])",
                                f"np.mean({a}[{i}:])"))
        d = 0 if self.chance(60) else 1
        if k == 7:
            n = self.choice((2, 3, N))
            u, v = self.aexpr(scope, (n,), d), self.aexpr(scope, (n,), d)
            return self.choice((f"({u} @ {v})", f"np.dot({u}, {v})", f"{u}.dot({v})"))
        a = self.aexpr(scope, self.choice(REDUCED_SHAPES), d)
        return self.rotating(REDUCTIONS).format(a=a)

    def new_vec_array(self, scope):
        """A new array from a vectorized expression. A numpy view of another array (a
        slice, a transpose, a reshape) is a copy in adjit: either copied explicitly, or
        neither it nor its base is written afterwards, so numpy agrees."""
        a = self.fresh("a")
        shape = self.choice(NEW_SHAPES)
        text = self.aleaf(scope, shape) if self.chance(25) else self.aexpr(scope, shape, 0)
        base = _view_base(text)
        writable = True
        if base is not None:
            if text == base or base in self.no_freeze or self.chance(40):
                text = f"{text}.copy()"
            else:
                self.frozen.add(base)
                writable = False
        scope.arrays[a] = shape
        if writable:
            scope.writable.append(a)
        self.note_write(a)
        return f"{a} = {text}"

    def rebind_array(self, scope):
        """`a = <expression>`: an array's name bound to a new array of its shape (often
        computed from `a` itself); arrays computed earlier from the old one keep its values."""
        targets = self.writable(scope)
        if not targets:
            return None
        a = self.choice(targets)
        shape = scope.arrays[a]
        self.prefer = a if self.chance(60) else None
        rhs = self.protecting(a, lambda: self.aexpr(scope, shape, 0))
        self.prefer = None
        if _view_base(rhs) is not None:
            rhs = f"{rhs}.copy()"
        self.note_write(a)
        return f"{a} = {rhs}"

    def vec_update(self, scope):
        """Slice assignment `a[1:-1] = ...`, `a[:, j] += ...`, or `a *= ...` on a whole array
        (the right-hand side often reads `a` itself)."""
        targets = self.writable(scope)
        if not targets:
            return None
        a = self.choice(targets)
        shape = scope.arrays[a]
        specs = [s for s in STORES[len(shape)] if all(view_shape(shape, s))]
        spec = self.choice(specs + [None, None])
        region = shape if spec is None else view_shape(shape, spec)
        op = self.choice(("+=", "-=", "*=")) if spec is None else \
            self.choice(("=", "=", "+=", "-=", "*="))
        self.prefer = a if self.chance(60) else None
        # the right-hand side neither multiplies `a` (it changes right after) nor passes it
        # to a helper that writes it (numpy's `a[s] += e` reads the view a[s] after e)
        self.no_helper_write = a
        rhs = self.protecting(a, lambda: self.aoperand(scope, self.sub_shape(region),
                                                       0 if self.chance(60) else 1))
        self.prefer = self.no_helper_write = None
        if rhs == a and spec is not None and "slice update from its own name" in AVOID:
            rhs = f"{a}.copy()"
        if op != "=":
            rhs = self.unaliased(rhs, a)
        self.note_write(a)
        if spec is None:
            return f"{a} {op} {rhs}"
        return f"{self.spell(scope, a, spec)} {op} {rhs}"

    def new_array(self, scope):
        a = self.fresh("a")
        ones = [n for n, s in sorted(scope.arrays.items()) if len(s) == 1]
        twos = [n for n, s in sorted(scope.arrays.items()) if len(s) == 2]
        k = self.pick(6)
        if k == 1:
            line, shape = f"{a} = np.ones({N})", (N,)
        elif k == 2 and ones:
            b = self.choice(ones)
            line, shape = f"{a} = {b}.copy()", scope.arrays[b]
        elif k == 3 and ones:
            b = self.choice(ones)
            line, shape = f"{a} = np.zeros_like({b})", scope.arrays[b]
        elif k == 4:
            line, shape = f"{a} = np.zeros({SHAPE2})", SHAPE2
        elif k == 5 and twos:
            b = self.choice(twos)
            line, shape = f"{a} = {b}.copy()", scope.arrays[b]
        else:
            line, shape = f"{a} = np.zeros({N})", (N,)
        scope.arrays[a] = shape
        scope.writable.append(a)
        self.note_write(a)
        if "zeros_like" not in line or line.split("(")[1][:-1] in self.c_contig:
            self.c_contig.add(a)
        return line

    def if_stmt(self, scope, depth):
        cond = self.cond(scope)
        out = [f"if {cond}:"] + indent(self.in_branch(
            lambda: self.block(scope.child(), depth + 1)))
        k = self.pick(3)
        if k >= 1:
            if k == 2:
                out += self.in_branch(lambda: [f"elif {self.cond(scope)}:"] + indent(
                    self.block(scope.child(), depth + 1)))
            out += ["else:"] + indent(self.in_branch(
                lambda: self.block(scope.child(), depth + 1)))
        return out

    def for_stmt(self, scope, depth):
        i = self.fresh("i")
        ints = sorted((n, b) for n, b in scope.ints.items() if b[1] <= N and b[0] >= 0)
        forms = [(f"range({N})", (0, N - 1)), (f"range(1, {N})", (1, N - 1)),
                 (f"range({N - 1}, -1, -1)", (0, N - 1)), (f"range(0, {N}, 2)", (0, N - 1)),
                 (f"range({N - 1}, 0, -2)", (1, N - 1))]
        ones = [n for n, s in sorted(scope.arrays.items()) if len(s) == 1]
        if ones:
            b = self.choice(ones)
            forms.append((f"range(len({b}))", (0, scope.arrays[b][0] - 1)))
        if "n" in scope.ints:
            forms += [("range(n)", (0, N_PARAM - 1))] * 2
        twos = [n for n, s in sorted(scope.arrays.items()) if len(s) == 2]
        if twos:
            b, axis = self.choice(twos), self.pick(2)
            forms.append((f"range({b}.shape[{axis}])", (0, scope.arrays[b][axis] - 1)))
        if ints:
            j, (lo, hi) = self.choice(ints)
            forms.append((f"range({j})", (0, max(hi - 1, 0))))
            forms.append((f"range({j}, {N})", (lo, N - 1)))
        header, bounds = self.choice(forms)
        inner = scope.child()
        inner.ints[i] = bounds
        inner.loop_depth += 1
        inner.in_while = False
        self.loops.append(i)
        body = self.block(inner, depth + 1)
        self.loops.pop()
        return [f"for {i} in {header}:"] + indent(body)

    def while_stmt(self, scope, depth):
        k = self.fresh("k")
        limit = 1 + self.pick(4)
        inner = scope.child()
        inner.ints[k] = (1, limit)
        inner.loop_depth += 1
        inner.in_while = True
        cond = f"{k} < {limit}"
        if self.chance(40):
            cond += f" and {self.in_branch(lambda: self.cond(scope), always=True)}"
        self.loops.append(k)
        body = [f"{k} += 1"] + self.in_branch(lambda: self.block(inner, depth + 1), always=True)
        self.loops.pop()
        return [f"{k} = 0", f"while {cond}:"] + indent(body)

    # functions ---------------------------------------------------------------------------
    def helper(self, kind=None):
        if kind is None:
            kind = self.choice(("scalar", "reader", "writer") +
                               (("kw",) if self.on("kwdefaults") else ()) +
                               (("loop",) if self.on("callee-loops") else ()))
        name = self.fresh("h")
        if kind == "kw":
            return self.kw_helper(name)
        if kind == "loop":
            return self.loop_helper(name)
        scope = Scope()
        if kind == "scalar":
            params = ["p", "q"]
            scope.floats += params
            scope.assignable += params
        elif kind == "reader":
            params = ["b", "p"]
            scope.arrays["b"] = (N,)
            scope.floats.append("p")
            scope.assignable.append("p")
        else:
            params = ["b", "j", "p"]
            scope.arrays["b"] = (N,)
            scope.ints["j"] = (0, N - 1)
            scope.floats.append("p")
        self.add_globals(scope)
        self.stmt_budget = 4
        # the body is inlined at every call, maybe inside the caller's loops: every write in
        # it counts as in a loop; the caller may write the array parameter (never frozen)
        self.loops, self.no_freeze = [name], {"b"}
        drawn = self.vec_drawn
        body = self.block(scope, 1, 1, 2)
        if kind == "writer":
            body.append(f"b[j % {N}] = {self.expr(scope)}")
        result = self.expr(scope)
        if self.on("draws") and self.chance(50):    # a helper with an effect
            result = f"{result} + {self.draw_scalar(scope)}"
        body.append(f"return {result}")
        self.loops, self.no_freeze = [], set()
        self.helpers.append(Helper(name, kind, self.vec_drawn > drawn))
        return [f"def {name}({', '.join(params)}):"] + indent(body)

    def function(self):
        params = [("x", "array1"), ("y", "float")]
        if self.chance(50):
            params.append(("z", "float"))
        if self.chance(25):
            params.append(("w", "array2"))
        if self.chance(35):
            params.append(("n", "int"))
        if self.groups:
            params = self.group_params(params)
        scope = Scope()
        for name, kind in params:
            kind = kind.split("/")[0]
            if kind == "float":
                scope.floats.append(name)
                scope.assignable.append(name)
            elif kind == "int":
                scope.ints[name] = (N_PARAM, N_PARAM)
            elif kind.startswith("index:"):
                scope.indexes[name] = tuple(int(v) for v in kind[6:].split(","))
            elif kind == "array3":
                scope.arrays[name] = SHAPE3
            elif kind.startswith("form:"):     # read, never written (their domains)
                scope.forms = True
                shape = FORM_SHAPES[kind[5:]]
                if shape:
                    scope.arrays[name] = shape
                else:
                    scope.floats.append(name)
            else:
                scope.arrays[name] = (N,) if kind == "array1" else SHAPE2
                if self.chance(15):
                    scope.writable.append(name)     # f writes into its argument
        extra = self.f_defaults(scope) if self.on("kwdefaults") else ""
        self.add_globals(scope)
        self.stmt_budget = 16
        body = []
        if self.fd_judged:      # the program seeds its own generator: each run draws alike
            body.append(f"np.random.seed({self.pick(10000)})")
            if self.on("draws") and self.chance(35):     # a draw thrown away
                body.append(self.choice(("np.random.random()", f"np.random.random({N})",
                                         "np.random.standard_normal()")))
        body += [self.new_array(scope)] if self.chance(40) else []
        body += self.block(scope, 0, 2, 6)
        for g in self.groups:       # every group drawn at least once (nearly: with several)
            if g in STMT_GROUPS and g not in self.used and self.likely(50):
                for _ in range(3):
                    body += self.group_stmt(scope, 0, g) or []
                    if g in self.used:
                        break
        if any(h.kind == "loop" and h.name not in self.called for h in self.helpers):
            before = len(scope.floats)
            body += self.stmt_callee_loops(scope, 0, call=True) or []
            self.results += scope.floats[before:]
        terms = [self.expr(scope)] + [self.choice(scope.floats) for _ in range(self.pick(3))]
        terms += [v for v in self.results if self.chance(70)]
        if self.chance(25):
            terms.append(self.reduction(scope))     # (not in a loop: always allowed)
        made = [a for a in sorted(scope.arrays) if a[0] == "a"]
        if made and self.chance(50):                # let gradients flow through local arrays
            a = self.choice(made)
            terms.append(self.choice((f"np.sum({a})", f"np.sum({a} * {a})", f"{a}.mean()")))
        for v, b in self.view_names:        # read what was written through either name
            if v in scope.arrays and b in scope.arrays:
                terms.append(self.choice((f"np.sum({b} * {b})", f"np.sum({v} * {v})",
                                          f"np.sum({b})")))
        body.append(f"return {' + '.join(terms)}")
        head = f"def f({', '.join(n for n, _ in params)}{extra}):"
        return [head] + indent(body), tuple(params)

    # construct groups (GROUPS; none is drawn while its name is in AVOID) --------------------
    def on(self, group):
        return group in self.groups

    def unaliased(self, rhs, a):
        """The right-hand side of an in-place update of array `a` (`a[1:] += rhs`): copied
        in a program of FD_GROUPS where it is a view of `a` (or of a name for a view of
        it). numpy reads such an operand before it writes (it copies what overlaps), numba
        element by element as it writes (`x[2:] -= x[1:3]` is a running update there), and
        a program of FD_GROUPS is compiled by numba too."""
        if not self.fd_judged:
            return rhs
        names = {a} | {v for v, b in self.view_names if b == a} | \
            {b for v, b in self.view_names if v == a}
        base = _view_base(rhs)
        return f"{rhs}.copy()" if base in names else rhs

    def axis_fn(self, fn):
        """The reduction along an axis: numba compiles only np.sum with an axis (adjit
        differentiates them all), and a program of FD_GROUPS is compiled by numba too."""
        return "sum" if self.fd_judged else fn

    def choose_oracle(self):
        """Whether this program draws the groups judged by finite differences (FD_GROUPS):
        then it seeds itself and has neither stop_gradient nor float32 arguments; else
        those groups are left out of it (half the programs when other groups are on)."""
        fd = [g for g in self.groups if g in FD_GROUPS]
        if fd and len(fd) < len(self.groups) and self.chance(50):
            self.groups = [g for g in self.groups if g not in FD_GROUPS]
        self.fd_judged = any(g in FD_GROUPS for g in self.groups)

    def likely(self, percent):
        """A chance for a program-level choice of a group: certain when it is the only
        group drawn (python -m fuzz --only NAME)."""
        return len(self.groups) == 1 or self.chance(percent)

    def group_params(self, params):
        """Arguments for the groups: the 3-D `t`, the index array `ix`, and argument kinds
        (exact zeros, float32, layouts)."""
        params = list(params)
        if (self.on("transpose3d") or self.on("axis3d")) and self.chance(75):
            params.append(("t", "array3"))
        if self.on("index-arrays") and self.chance(50):
            values = self.index_values(N, 3 + self.pick(2), nonneg=True)
            params.append(("ix", "index:" + ",".join(map(str, values))))
        mods = {name: [] for name, _ in params}
        if self.on("const-pow"):
            for name, kind in params:
                if kind.startswith("array") and self.chance(70):
                    mods[name].append("zeros")
                elif kind == "float" and self.chance(30):
                    mods[name].append("zero")
        if self.on("float32") and not self.fd_judged and self.likely(80):
            for name, kind in params:
                if kind.startswith("array") and (name == "x" or self.chance(50)):
                    mods[name].append("f32")
                    self.used.add("float32")
        if self.on("strided-args") and self.likely(80):
            for name, kind in params:
                if kind.startswith("array") and (name == "x" or self.chance(60)):
                    mods[name].append(self.choice({"array1": ("strided", "rev"),
                                                   "array2": ("F", "strided"),
                                                   "array3": ("F", "perm", "strided")}[kind]))
                    self.used.add("strided-args")
        out = []
        for name, kind in params:
            if mods[name]:
                kind += "/" + "+".join(mods[name])
            elif kind.startswith("array"):
                self.c_contig.add(name)
            out.append((name, kind))
        if self.on("forms"):        # the forms this program draws, their placeholders
            leaves = form_leaves()
            self.form_pool = [self.rotating(leaves) for _ in range(1 + self.pick(3))]
            used = {ph for _, names, _ in self.form_pool for ph in names}
            out += [("f" + ph, "form:" + ph) for ph in FORM_SHAPES if ph in used]
        return out

    def group_stmt(self, scope, depth, group=None):
        """A statement of a construct group (a random enabled one): lines, or None."""
        opts = [g for g in self.groups if g in STMT_GROUPS]
        if not opts:
            return None
        g = group or self.choice(opts)
        before = len(scope.floats)
        lines = getattr(self, "stmt_" + g.replace("-", "_"))(scope, depth)
        if depth == 0 and g in FD_GROUPS + ("globals", "callee-loops"):
            self.results += scope.floats[before:]     # f's result reads them (function)
        return lines

    def group_leaf(self, scope, shape):
        """An array of `shape` from a construct group (gathers, np.where with masks, 3-D
        arrays indexed or reduced, constant powers, constructors), or None."""
        opts = [g for g in self.groups if g in LEAF_GROUPS]
        if not opts or not self.allocating() or self.group_depth:
            return None     # (not inside another group leaf: expressions stay small)
        self.group_depth += 1
        try:
            return self.group_leaf_of(scope, shape, self.choice(opts))
        finally:
            self.group_depth -= 1

    def group_leaf_of(self, scope, shape, g):
        if g == "draws":
            return self.draw_sized(scope, shape)
        if g == "globals":
            cands = [c for c in self.sources(scope, shape) if c[0] in self.global_arrays]
            if not cands:
                return None
            self.used.add("globals")
            return self.spell(scope, *self.choice(cands))
        if g == "index-arrays":
            return self.gather(scope, shape)
        if g == "masks":
            m = self.mask(scope, shape)
            if m is None:
                return None
            a = self.aoperand(scope, self.sub_shape(shape), 2)
            b = self.aoperand(scope, self.sub_shape(shape), 2) if self.chance(60) else "0.0"
            self.used.add("masks")
            return f"np.where({m}, {a}, {b})"
        if g in ("transpose3d", "axis3d"):
            return self.tensor_to(scope, shape)
        if g == "const-pow":
            return self.const_pow(self.aleaf(scope, shape), scalar=False)
        return self.constructed(scope, shape)

    def group_reduction(self, scope):
        """A float from a construct group (masked sums, reductions of 3-D arrays, arange
        with float bounds), or None."""
        opts = [g for g in self.groups if g in ("masks", "transpose3d", "axis3d",
                                                 "constructors", "draws", "forms")]
        if not opts or not self.allocating():
            return None
        g = self.choice(opts)
        if g == "draws":
            a = self.draw_sized(scope, self.choice(((N,), (3,), SHAPE2)))
            return self.choice((f"np.sum({a})", f"np.sum({a} * {self.scalar(scope)})",
                                f"np.max({a})", f"np.mean(np.sin({a}))"))
        if g == "forms":
            return self.form_leaf(scope)
        if g == "masks":
            shape = self.choice([s for s in REDUCED_SHAPES if len(s) <= 2])
            a = self.aleaf(scope, shape)
            if self.chance(30):
                m = f"{a} {self.choice(('>', '<'))} {self.choice(('0.5', '0.0', '-0.3'))}"
            else:
                m = self.mask(scope, shape)
            if m is None:
                return None
            self.used.add("masks")
            sel = f"({a})[{m}]" if not re.fullmatch(r"\w+", a) else f"{a}[{m}]"
            return self.choice((f"np.sum({sel})", f"np.sum({sel} ** 2)",
                                f"np.sum(np.sin({sel}))", f"{sel}.sum()"))
        if g in ("transpose3d", "axis3d"):
            t = self.tensor(scope, 0)
            if t is None:
                return None
            text, shape = t
            if self.chance(40):
                idx = ", ".join(self.index(scope, n) for n in shape)
                return f"{text}[{idx}]"
            if g == "axis3d":
                k = self.choice(("0", "1", "2", "-1", "-2", "-3"))
                self.used.add("axis3d")
                fn = self.axis_fn(self.choice(("sum", "mean", "max", "min", "prod")))
                return f"np.sum(np.{fn}({text}, axis={k}) * {self.scalar(scope)})"
            return self.choice((f"np.sum({text})", f"np.max({text})", f"np.mean({text})"))
        e = f"math.tanh({self.scalar(scope)})"
        self.used.add("constructors")
        if self.loops and "alloc in loop" in AVOID:
            return f"np.sum(np.full({N}, {e}) * {self.scalar(scope)})"
        return self.choice((f"np.sum(np.arange({e}, {e} + 2.0, 0.5) * {self.scalar(scope)})",
                            f"np.sum(np.sin(np.arange({e}, 1.5, 0.5)))",
                            f"np.sum(np.linspace({e}, {self.scalar(scope)}, 5) ** 2)"))

    # group "index-arrays"
    def index_values(self, n, m=None, nonneg=False):
        """m values in [-n, n) (in [0, n) with nonneg), nearly always with a repeat."""
        m = m if m is not None else 2 + self.pick(3)
        lo = 0 if nonneg else -n
        values = [lo + self.pick(n - lo) for _ in range(m)]
        if not self.chance(15):
            values[-1] = values[self.pick(m - 1)]
        return values

    def index_arrays(self, scope, n, m=None):
        """Index arrays in scope whose values are valid for an axis of length n."""
        return [a for a, vs in sorted(scope.indexes.items())
                if all(-n <= v < n for v in vs) and (m is None or len(vs) == m)]

    def index_array(self, scope, n, m=None):
        """An index array for an axis of length n (of length m if given): a name in scope
        or a literal np.array([...])."""
        names = self.index_arrays(scope, n, m)
        self.used.add("index-arrays")
        if names and self.chance(70):
            return self.choice(names)
        if m is not None and m < 2:
            return None
        values = self.index_values(n, m)
        return f"np.array([{', '.join(map(str, values))}])"

    def index_element(self, scope, n):
        names = self.index_arrays(scope, n)
        if not names:
            return None
        ix = self.choice(names)
        m = len(scope.indexes[ix])
        ints = [i for i, (lo, hi) in sorted(scope.ints.items()) if 0 <= lo and hi < m]
        j = self.choice(ints) if ints and self.chance(60) else str(self.pick(2 * m) - m)
        self.used.add("index-arrays")
        return f"{ix}[{j}]"

    def gather(self, scope, shape):
        """x[ix], np.take(x, ix), w[ix], w[ix, :], w[:, ix], w[ix, j] of `shape`."""
        cands = []
        for name, s in sorted(scope.arrays.items()):
            if len(s) == 1 and len(shape) == 1:
                cands += [(name, s[0], "{a}[{i}]"), (name, s[0], "np.take({a}, {i})")]
            elif len(s) == 2 and len(shape) == 1:
                cands += [(name, s[0] * s[1], "np.take({a}, {i})"),
                          (name, s[0], "{a}[{i}, #1]"), (name, s[1], "{a}[#0, {i}]")]
            elif len(s) == 2 and len(shape) == 2 and shape[1] == s[1]:
                cands += [(name, s[0], "{a}[{i}]"), (name, s[0], "{a}[{i}, :]")]
            elif len(s) == 2 and len(shape) == 2 and shape[0] == s[0]:
                cands.append((name, s[1], "{a}[:, {i}]"))
        if not cands:
            return None
        name, n, form = self.choice(cands)
        m = shape[0] if "[:, {i}]" not in form else shape[1]
        ix = self.index_array(scope, n, m)
        if ix is None:
            return None
        s = scope.arrays[name]
        text = form.format(a=name, i=ix)
        return text.replace("#0", self.index(scope, s[0])).replace(
            "#1", self.index(scope, s[-1]))

    def stmt_index_arrays(self, scope, depth):
        k = self.choice((0, 1, 1, 1, 2, 2, 3, 3))      # mostly scatters
        if k == 0 or not scope.indexes:
            a = self.fresh("ix")
            values = self.index_values(self.choice((2, 3, N)))
            scope.indexes[a] = tuple(values)
            return [f"{a} = np.array([{', '.join(map(str, values))}])"]
        if k == 1 and self.allocating():
            return self.scatter(scope)
        if k == 2 and depth < 3 and scope.loop_depth < 2:
            return self.index_loop(scope, depth)
        if not self.allocating():
            return None
        v = self.fresh("v")
        e = self.gather(scope, self.choice(((2,), (3,), (N,), (3, 2), (2, 2))))
        if e is None:
            return None
        line = f"{v} = np.sum({e} * {self.scalar(scope)})"
        scope.floats.append(v)
        scope.assignable.append(v)
        return [line]

    def scatter(self, scope):
        """a[ix] = v, a[ix] += v, a[:, ix] *= v, with repeats (the last write wins)."""
        targets = [a for a in self.writable(scope) if len(scope.arrays[a]) <= 2]
        if not targets:
            return None
        a = self.choice(targets)
        shape = scope.arrays[a]
        cols = len(shape) == 2 and self.chance(40)
        n = shape[1] if cols else shape[0]
        ix = self.index_array(scope, n)
        if ix is None:
            return None
        m = len(scope.indexes[ix]) if ix in scope.indexes else ix.count(",") + 1
        region = (shape[0], m) if cols else (m,) + shape[1:]
        op = self.choice(("=", "=", "+=", "-=", "*="))
        rhs = self.protecting(a, lambda: self.aoperand(scope, self.sub_shape(region), 1))
        self.note_write(a)
        return [f"{a}[:, {ix}] {op} {rhs}" if cols else f"{a}[{ix}] {op} {rhs}"]

    def index_loop(self, scope, depth):
        """A loop over an index array: s += x[ix[i]] * e, a[ix[i]] = e, np.sum(x[ix] * e)."""
        ix = self.choice(sorted(scope.indexes))
        m = len(scope.indexes[ix])
        srcs = [a for a, s in sorted(scope.arrays.items())
                if len(s) == 1 and all(-s[0] <= v < s[0] for v in scope.indexes[ix])]
        if not srcs:
            return None
        i, s = self.fresh("i"), self.fresh("v")
        inner = scope.child()
        inner.ints[i] = (0, m - 1)
        inner.loop_depth += 1
        inner.in_while = False
        self.loops.append(i)
        src = self.choice(srcs)
        body = [f"{s} += {src}[{ix}[{i}]] * {self.expr(inner, 1)}"]
        outs = [a for a in self.writable(inner) if len(inner.arrays[a]) == 1 and
                all(-inner.arrays[a][0] <= v < inner.arrays[a][0] for v in inner.indexes[ix])]
        if outs and self.chance(50):
            a = self.choice(outs)
            self.note_write(a)
            body.append(f"{a}[{ix}[{i}]] {self.choice(('=', '+='))} "
                        f"{self.protecting(a, lambda: self.expr(inner, 1))}")
        if self.allocating() and self.chance(50):
            body.append(f"{s} += np.sum({src}[{ix}] * {self.scalar(inner)})")
        self.loops.pop()
        self.used.add("index-arrays")
        scope.floats.append(s)
        scope.assignable.append(s)
        header = self.choice((f"range(len({ix}))", f"range({m})"))
        return [f"{s} = 0.0", f"for {i} in {header}:"] + indent(body)

    # group "masks"
    def mask(self, scope, shape):
        """A bool array of `shape`: a mask name in scope or a comparison."""
        names = [m for m, s in sorted(scope.masks.items()) if s == shape]
        if names and self.chance(60):
            return self.choice(names)
        a = self.aexpr(scope, shape, 2)
        b = self.choice(("0.0", "0.5", "-0.3", self.scalar(scope), self.aleaf(scope, shape)))
        return f"({a} {self.choice(('>', '<', '>=', '<='))} {b})"

    def stmt_masks(self, scope, depth):
        if not self.allocating():
            return None
        k = self.pick(3)
        arrays = [(a, s) for a, s in sorted(scope.arrays.items()) if len(s) <= 2]
        if k == 0 or not arrays:
            shape = self.choice(arrays)[1] if arrays and self.chance(70) else \
                self.choice(NEW_SHAPES)
            m = self.fresh("m")
            line = f"{m} = {self.mask(scope, shape)}"
            scope.masks[m] = shape
            self.used.add("masks")
            return [line]
        targets = [a for a in self.writable(scope) if len(scope.arrays[a]) <= 2]
        if k == 1 and targets:
            a = self.choice(targets)
            shape = scope.arrays[a]
            self.note_write(a)
            self.used.add("masks")
            if self.chance(25):
                return [f"{a}[{a} {self.choice(('>', '<'))} {self.choice(('0.5', '0.0'))}] = "
                        f"{self.choice(('0.0', '1.0'))}"]
            m = self.mask(scope, shape)
            if self.chance(35):
                src = self.protecting(a, lambda: self.aleaf(scope, shape))
                src = src if re.fullmatch(r"\w+", src) else f"({src})"
                return [f"{a}[{m}] = {src}[{m}] * {self.scalar(scope)}"]
            op = self.choice(("=", "+=", "-=", "*="))
            return [f"{a}[{m}] {op} {self.protecting(a, lambda: self.scalar(scope))}"]
        v = self.fresh("v")
        text = self.group_reduction_of(scope, "masks")
        if text is None:
            return None
        scope.floats.append(v)
        scope.assignable.append(v)
        return [f"{v} = {text}"]

    def vector_loop(self, scope, group, stems):
        """The start of a group's loop statement over a 1-D array in scope: (the array, its
        length, fresh names for `stems`, a scalar expression), with the name of stem "acc"
        made a float of the scope; None when no 1-D array is in scope."""
        arrays = [a for a, s in sorted(scope.arrays.items()) if len(s) == 1]
        if not arrays:
            return None
        a = self.choice(arrays)
        names = [self.fresh(p) for p in stems]
        w = self.scalar(scope)
        self.used.add(group)
        acc = names[stems.index("acc")]
        scope.floats.append(acc)
        scope.assignable.append(acc)
        return a, scope.arrays[a][0], names, w

    def stmt_buffers(self, scope, depth):
        if scope.loop_depth or not self.allocating():
            return None
        start = self.vector_loop(scope, "buffers", ("buf", "acc", "t", "i", "j"))
        if start is None:
            return None
        a, n, (buf, acc, t, i, j), w = start
        fill = self.choice((f"{a}[{j}] - {a}[{i}]", f"math.sin({a}[{j}] * {w} + {a}[{i}])",
                            f"({a}[{j}] - {a}[{i}]) * {w}"))
        read = self.choice((f"{buf}[{j}] * {buf}[{j}]", f"math.tanh({buf}[{j}]) * {a}[{j}]",
                            f"{buf}[{j}] * {w}"))
        final = self.choice((f"math.exp(-{t} * {t})", f"{t} * {t}",
                             f"math.log1p({t} * {t})"))
        alloc = f"{buf} = np.{self.choice(('empty', 'zeros'))}({n})"
        if self.chance(35):     # prange: each iteration its own buffer (a shared one races)
            head = [f"{acc} = 0.0", f"for {i} in numba.prange({n}):", f"    {alloc}"]
        else:
            head = [alloc, f"{acc} = 0.0", f"for {i} in range({n}):"]
        return head + [
                f"    for {j} in range({n}):",
                f"        {buf}[{j}] = {fill}",
                f"    {t} = 0.0",
                f"    for {j} in range({n}):",
                f"        {t} += {read}",
                f"    {acc} += {final}"]

    def stmt_counters(self, scope, depth):
        if scope.loop_depth:
            return None
        start = self.vector_loop(scope, "counters", ("idx", "acc", "t", "i", "j"))
        if start is None:
            return None
        a, n, (idx, acc, t, i, j), w = start
        step = self.choice((f"{idx} += 1", f"{idx} = {idx} + 1", f"{idx} = 1 + {idx}"))
        final = self.choice((f"math.tanh({t})", f"{t} * {t}", f"math.exp(-{t} * {t})"))
        k = self.pick(3)
        if k == 0:      # carried across the outer loop (packed storage, CSR pointer)
            return [f"{idx} = 0", f"{acc} = 0.0", f"for {i} in range({n}):",
                    f"    {t} = 0.0",
                    f"    for {j} in range({i} + 1):",
                    f"        {t} += {a}[{idx} % {n}] * {a}[{j}] * {w}",
                    f"        {step}",
                    f"    {acc} += {final}"]
        if k == 1:      # stepped in a branch
            return [f"{idx} = 0", f"{acc} = 0.0", f"for {i} in range({n}):",
                    f"    if {a}[{i}] > 0.0:",
                    f"        {acc} += math.sin({a}[{idx}] * {w}) * {a}[{i}]",
                    f"        {step}"]
        down = self.choice((f"{idx} -= 1", f"{idx} = {idx} - 1"))
        return [f"{idx} = {n} - 1", f"{acc} = 0.0", f"for {i} in range({n}):",
                f"    {t} = {a}[{idx}] * {w}",
                f"    {acc} += {a}[{i}] * {final}",
                f"    {down}"]

    def stmt_timesteps(self, scope, depth):
        if scope.loop_depth or not self.allocating():
            return None
        start = self.vector_loop(scope, "timesteps", ("u", "un", "acc", "t", "i"))
        if start is None:
            return None
        a, n, (u, un, acc, t, i), w = start
        k = self.pick(3)
        if k == 0:          # the inside, neighbours on both sides
            lo, hi = "1", f"{n} - 1"
            step = self.choice((f"{u}[{i}] + {w} * ({u}[{i} - 1] - 2.0 * {u}[{i}] + {u}[{i} + 1])",
                                f"0.25 * {u}[{i} - 1] + 0.5 * {u}[{i}] + 0.25 * {u}[{i} + 1]",
                                f"{u}[{i}] - {w} * {u}[{i}] * ({u}[{i} + 1] - {u}[{i} - 1])"))
        elif k == 1:        # periodic: u[i - 1] at i = 0 is the last element
            lo, hi = "0", n
            step = self.choice((f"{u}[{i}] + {w} * ({u}[{i} - 1] - {u}[{i}])",
                                f"0.5 * ({u}[{i} - 1] + {u}[({i} + 1) % {n}])"))
        else:               # pointwise
            lo, hi = self.choice((("0", n), ("1", f"{n} - 1")))
            step = self.choice((f"{u}[{i}] - {w} * {u}[{i}] * {u}[{i}] * {u}[{i}]",
                                f"math.tanh({u}[{i}] * {w}) + {a}[{i}]"))
        lo2, hi2 = (lo, hi) if self.chance(75) else ("0", n)
        back = self.choice((f"{un}[{i}]", f"{un}[{i}]", f"0.5 * ({u}[{i}] + {un}[{i}])"))
        steps = self.choice(("3", "2", "0", "1", n))
        lines = [f"{u} = {a}.copy()",
                 f"{un} = np.zeros({n})" if self.chance(70) else f"{un} = {a} * {w}"]
        if self.chance(25):         # a warm start the first step does not overwrite
            lines += [f"for {i} in range({n}):", f"    {un}[{i}] = 0.5 * {a}[{i}]"]
        lines += [f"for {t} in range({steps}):",
                  f"    for {i} in range({lo}, {hi}):",
                  f"        {un}[{i}] = {step}",
                  f"    for {i} in range({lo2}, {hi2}):",
                  f"        {u}[{i}] = {back}"]
        if self.chance(20):
            lines += [f"    if {u}[0] > 1.5:", "        break"]
        final = f"{u}[{i}] * {u}[{i}]"
        if self.chance(40):
            final += f" + {w} * {un}[{i}]"
        lines += [f"{acc} = 0.0", f"for {i} in range({n}):", f"    {acc} += {final}"]
        return lines

    # group "draws" ---------------------------------------------------------------------
    def positive(self, scope, small=False):
        """A positive float expression of the program's values (a scale)."""
        t = self.expr(scope, 2)
        if small:
            return self.choice((f"(0.1 + 0.4 * math.tanh({t}) ** 2)", "0.3",
                                f"(0.2 + 0.1 * abs({t}))"))
        return self.choice((f"(0.5 + {t} * {t})", f"(0.5 + abs({t}))",
                            f"(1.0 + math.tanh({t}) ** 2)", "0.5", "1.5"))

    def drawing(self, make):
        """make() with draws and forms kept out of the expressions it draws."""
        self.nesting += 1
        try:
            return make()
        finally:
            self.nesting -= 1

    def draw_scalar(self, scope):
        """A float drawn from numba's generator, its parameters from the program's values."""
        self.used.add("draws")
        return self.drawing(lambda: self._draw_scalar(scope))

    def _draw_scalar(self, scope):
        k = self.pick(12)
        if k == 0:
            return "np.random.random()"
        if k == 1:
            return "np.random.standard_normal()"
        loc = self.expr(scope, 2)
        if k == 2:
            return self.choice((f"np.random.normal({loc}, {self.positive(scope)})",
                                f"np.random.normal({loc})",
                                f"np.random.normal(loc={loc}, scale={self.positive(scope)})",
                                f"np.random.normal(0.0, {self.positive(scope)})"))
        if k == 3:
            return f"np.random.uniform({loc}, {self.expr(scope, 2)})"
        if k == 4:
            return f"np.random.exponential({self.positive(scope)})"
        if k == 8:
            return f"np.random.lognormal(math.tanh({loc}), {self.positive(scope, True)})"
        if k == 9:
            return f"np.random.rayleigh({self.positive(scope)})"
        if k in (5, 6, 7):
            fn = ("laplace", "gumbel", "logistic")[k - 5]
            return f"np.random.{fn}({loc}, {self.positive(scope)})"
        return f"({loc} * np.random.random())"

    def draw_sized(self, scope, shape):
        """An array of `shape` drawn at once (a size argument)."""
        if not self.allocating():
            return None
        self.used.add("draws")
        return self.drawing(lambda: self._draw_sized(scope, shape))

    def _draw_sized(self, scope, shape):
        size = str(shape[0]) if len(shape) == 1 else f"({shape[0]}, {shape[1]})"
        k = self.pick(10 if len(shape) == 1 else 4)
        if k == 0:
            return self.choice((f"np.random.random({size})", f"np.random.random(size={size})"))
        if k == 1:
            return f"np.random.standard_normal({size})"
        loc = self.scalar(scope)
        if k == 2:
            return self.choice((f"np.random.normal({loc}, {self.positive(scope)}, {size})",
                                f"np.random.normal({loc}, {self.positive(scope)}, "
                                f"size={size})"))
        if k == 3:
            return f"np.random.uniform({loc}, {self.scalar(scope)}, {size})"
        if k == 4:
            return f"np.random.exponential({self.positive(scope)}, {size})"
        if k == 5:
            return f"np.random.lognormal(math.tanh({loc}), {self.positive(scope, True)}, " \
                   f"{size})"
        if k == 6:
            return f"np.random.rayleigh({self.positive(scope)}, {size})"
        fn = ("laplace", "gumbel", "logistic")[k - 7]
        return f"np.random.{fn}({loc}, {self.positive(scope)}, {size})"

    def group_atom(self, scope):
        """A float from a draw or a form, at an atom (or None)."""
        if self.on("draws") and self.chance(8):
            return self.draw_scalar(scope)
        if self.on("forms") and scope.forms and self.allocating() and self.chance(6):
            return self.form_leaf(scope)
        return None

    def stmt_draws(self, scope, depth):
        k = self.choice((0, 0, 1, 2, 3, 4, 5))
        if k == 0:          # a draw thrown away: it advances the generator
            return [self.choice(("np.random.random()", "np.random.standard_normal()",
                                 self.draw_scalar(scope), f"np.random.random({N})"))]
        if k == 1 and depth < 3 and scope.loop_depth < 2:
            return self.draw_loop(scope, depth)
        if k == 2 and not scope.loop_depth and self.allocating():
            return self.noisy_time_loop(scope)
        if k == 3 and self.allocating():
            v = self.fresh("v")
            a = self.draw_sized(scope, self.choice(((N,), (3,), SHAPE2, (2,))))
            if a is None:
                return None
            line = f"{v} = np.sum({a} * {self.scalar(scope)})"
            scope.floats.append(v)
            scope.assignable.append(v)
            return [line]
        if k == 4 and self.allocating():   # a new array drawn at once, then read and written
            a = self.fresh("a")
            shape = self.choice(((N,), SHAPE2))
            text = self.draw_sized(scope, shape)
            scope.arrays[a] = shape
            scope.writable.append(a)
            self.c_contig.add(a)
            self.note_write(a)
            return [f"{a} = {text}"]
        v = self.fresh("v")
        line = f"{v} = {self.draw_scalar(scope)}"
        if self.chance(40):
            line += f" * {self.expr(scope, 1)}"
        scope.floats.append(v)
        scope.assignable.append(v)
        return [line]

    def draw_loop(self, scope, depth):
        """A loop (or two nested) whose iterations draw: acc += draw * e."""
        acc, i = self.fresh("v"), self.fresh("i")
        n = self.choice((N, 3, 2))
        inner = scope.child()
        inner.ints[i] = (0, n - 1)
        inner.loop_depth += 1
        inner.in_while = False
        self.loops.append(i)
        lines = [f"for {i} in range({n}):"]
        body = inner
        if self.chance(40) and inner.loop_depth < 2:
            j = self.fresh("i")
            body = inner.child()
            body.ints[j] = (0, 2)
            body.loop_depth += 1
            self.loops.append(j)
            lines.append(f"    for {j} in range({self.choice(('3', f'{i} + 1'))}):")
        nested = len(lines)
        pad = "    " * nested
        if self.chance(30):     # a draw thrown away in the loop: the next one is another
            lines.append(f"{pad}np.random.{self.choice(('random', 'standard_normal'))}()")
        lines.append(f"{pad}{acc} += {self.draw_scalar(body)} * {self.expr(body, 1)}")
        if self.chance(50) and depth + nested < 3:
            lines += [pad + t for t in self.block(body, depth + nested, 0, 1)]
        del self.loops[-nested:]
        scope.floats.append(acc)
        scope.assignable.append(acc)
        self.used.add("draws")
        return [f"{acc} = 0.0"] + lines

    def noisy_time_loop(self, scope):
        """A time loop with noise (Langevin-like) over a copy of a 1-D array."""
        if not any(len(s) == 1 for s in scope.arrays.values()):
            return None
        scale = self.positive(scope)        # (before vector_loop makes `acc` a float)
        a, n, (u, acc, t, i), w = self.vector_loop(scope, "draws", ("u", "acc", "t", "i"))
        step = self.choice((
            f"{u}[{i}] - 0.1 * {u}[{i}] ** 3 + {scale} * np.random.standard_normal()",
            f"np.random.normal(0.9 * {u}[{i}], {scale})",
            f"0.5 * {u}[{i}] + {w} * np.random.uniform(-1.0, 1.0)",
            f"{u}[{i}] + 0.1 * np.random.laplace({u}[{i}], {scale})"))
        return [f"{u} = {a}.copy()",
                f"for {t} in range({self.choice(('3', '2', n))}):",
                f"    for {i} in range({n}):",
                f"        {u}[{i}] = {step}",
                f"{acc} = 0.0",
                f"for {i} in range({n}):",
                f"    {acc} += {u}[{i}] * {u}[{i}]"]

    # group "globals" ------------------------------------------------------------------
    def module_arrays(self):
        """Module-level arrays G1 (2-D) and G2 (1-D), or one of them: literals."""
        k = self.pick(3)
        names = ("G1", "G2") if k == 0 else ("G1",) if k == 1 else ("G2",)
        lines = []
        for g in names:
            shape = self.choice(GLOBAL_SHAPES[g])
            rows = [", ".join(self.choice(GLOBAL_VALUES) for _ in range(shape[-1]))
                    for _ in range(shape[0] if len(shape) == 2 else 1)]
            text = f"[{rows[0]}]" if len(shape) == 1 else \
                "[" + ", ".join(f"[{r}]" for r in rows) + "]"
            lines.append(f"{g} = np.array({text})")
            self.global_arrays[g] = shape
            self.c_contig.add(g)
        return lines

    def add_globals(self, scope):
        """The module-level arrays, readable in f and in helpers (group "globals")."""
        if self.on("globals"):
            scope.arrays.update(self.global_arrays)

    def stmt_globals(self, scope, depth):
        gs = [g for g in sorted(self.global_arrays) if g in scope.arrays]
        if not gs:
            return None
        g = self.choice(gs)
        shape = self.global_arrays[g]
        self.used.add("globals")
        v = self.fresh("v")
        k = self.pick(4)
        if k == 0 and self.allocating():
            spec = self.choice([sp for sp in ("",) + GLOBAL_VIEWS[len(shape)]
                                if all(view_shape(shape, sp))])
            region = view_shape(shape, spec)
            line = f"{v} = np.sum({self.spell(scope, g, spec)} * " \
                   f"{self.aoperand(scope, self.sub_shape(region), 1)})"
        elif k == 1 and depth < 3 and scope.loop_depth < 2:
            i = self.fresh("i")
            inner = scope.child()
            inner.ints[i] = (0, shape[0] - 1)
            inner.loop_depth += 1
            inner.in_while = False
            self.loops.append(i)
            e = self.expr(inner, 1)
            cell = f"{g}[{i}]" if len(shape) == 1 else f"{g}[{i}, {self.index(inner, shape[1])}]"
            self.loops.pop()
            scope.floats.append(v)
            scope.assignable.append(v)
            return [f"{v} = 0.0", f"for {i} in range({self.choice((f'len({g})', shape[0]))}):",
                    f"    {v} += {cell} * {e}"]
        elif k == 2 and self.allocating() and len(shape) == 2:
            a = self.fresh("a")
            line = f"{a} = {g}[{self.index(scope, shape[0])}] * {self.scalar(scope)}"
            scope.arrays[a] = (shape[1],)
            scope.writable.append(a)
            self.c_contig.add(a)
            self.note_write(a)
            return [line]
        else:
            idx = ", ".join(self.index(scope, n) for n in shape)
            line = f"{v} = {g}[{idx}] * {self.expr(scope, 1)}"
        scope.floats.append(v)
        scope.assignable.append(v)
        return [line]

    # group "idioms" ---------------------------------------------------------------------
    def stmt_idioms(self, scope, depth):
        """One idiom of published numba code (IDIOM_DEFINITIONS are the module's)."""
        v = self.fresh("v")
        k = self.pick(18)
        arrays = [a for a in sorted(scope.arrays) if len(scope.arrays[a]) <= 2]
        vectors = [a for a in arrays if len(scope.arrays[a]) == 1]
        if k == 0:
            lines = [f"{v} = vk_{self.choice(('tanh', 'step'))}({self.expr(scope, 1)}, "
                     f"{self.expr(scope, 1)})" if self.chance(50) else
                     f"{v} = vk_knee({self.expr(scope, 1)})"]
        elif k == 1 and self.allocating():
            shape = self.choice(((N,), SHAPE2))
            a = self.aexpr(scope, shape, 1)
            call = self.choice((f"vk_tanh({a}, {self.scalar(scope)})", f"vk_knee({a})",
                                f"vk_step({self.scalar(scope)}, {a})"))
            lines = [f"{v} = np.{self.choice(('sum', 'mean', 'max'))}({call})"]
        elif k == 2:
            t = self.fresh("T")
            lines = [f"{t} = type({self.choice(scope.floats)})",
                     f"{v} = {t}(0.5) * {self.expr(scope, 1)}"]
        elif k == 3 and arrays and depth < 3 and scope.loop_depth < 2:
            a = self.choice(arrays)
            idx = self.fresh("idx")
            e = self.expr(scope, 1)
            lines = [f"{v} = 0.0", f"for {idx} in np.ndindex({a}.shape):",
                     f"    {v} += {a}[{idx}] * {e}"]
        elif k == 4:
            lines = [f"{v} = opt_scale({self.expr(scope, 1)})" if self.chance(50) else
                     f"{v} = opt_scale({self.expr(scope, 1)}, {self.expr(scope, 1)})"]
        elif k == 5:
            fn = self.fresh("fn")
            lines = [f"{fn} = math.{self.choice(('sin', 'tanh', 'atan'))}",
                     f"{v} = {fn}({self.expr(scope, 1)}) * {self.expr(scope, 1)}"]
        elif k == 7:        # a raise that a finite program never reaches
            u = self.choice(scope.floats)
            lines = [f"if math.isnan({u}):", "    raise ValueError(\"a NaN\")",
                     f"{v} = {u} * {self.expr(scope, 1)}"]
        elif k == 8 and self.allocating():      # an allocation with its dtype spelled
            dtype = self.choice(("np.float64", "numba.float64", "'f8'"))
            lines = [f"{v} = np.sum(np.zeros({N}, dtype={dtype}) + {self.expr(scope, 1)})"]
        elif k == 9 and vectors and self.allocating():     # a list comprehension
            a, e, c = self.choice(vectors), self.fresh("e"), self.expr(scope, 1)
            lines = [self.choice((
                f"{v} = sum([{e} * math.sin({e}) * {c} for {e} in {a}])",
                f"{v} = np.sum(np.array([{e} * {c} for {e} in {a} if {e} > 0.1]))",
                f"{v} = max([abs({e}) + {c} for {e} in {a}])",
                f"{v} = sum([({e} + 1) * {a}[{e}] * {c} for {e} in range(len({a}))])"))]
        elif k == 10 and depth == 0 and scope.loop_depth == 0:   # a closure, called
            g, t = self.fresh("inner"), self.fresh("t")
            u = self.choice(scope.floats)
            lines = ([f"def {g}({t}):", f"    return {t} * {u} + math.tanh({t})"]
                     if self.chance(50) else [f"{g} = lambda {t}: {t} * {t} * {u}"])
            lines.append(f"{v} = {g}({self.expr(scope, 1)}) + {g}({self.expr(scope, 1)})")
        elif k == 11 and arrays and self.allocating():      # a gufunc given its output
            a, o = self.choice(arrays), self.fresh("o")
            if self.chance(50) or len(scope.arrays[a]) != 2:
                lines = [f"{o} = np.empty_like({a})",
                         f"gu_scale({a}, {self.expr(scope, 1)}, {o})",
                         f"{v} = np.sum({o} * {o})"]
            else:       # a row-wise reduction
                lines = [f"{o} = np.empty({a}.shape[0])", f"gu_norm({a}, {o})",
                         f"{v} = np.sum({o}) * {self.expr(scope, 1)}"]
        elif k == 12:       # a raise with values that a finite program never reaches
            u = self.choice(scope.floats)
            lines = [f"if math.isnan({u}):", f"    raise ValueError(f\"a NaN: {{{u}}}\")",
                     f"{v} = {u} * {self.expr(scope, 1)}"]
        elif k == 13 and arrays and depth < 3 and scope.loop_depth < 2:   # a.flat
            a, e = self.choice(arrays), self.fresh("e")
            lines = [f"{v} = 0.0", f"for {e} in {a}.flat:",
                     f"    {v} += {e} * {self.expr(scope, 1)}"]
        elif k == 15 and vectors and depth == 0 and scope.loop_depth == 0 and \
                self.allocating():      # a list grown by appends in a loop
            a, lst, i = self.choice(vectors), self.fresh("lst"), self.fresh("i")
            c, e = self.scalar(scope), self.expr(scope, 1)
            lines = [f"{lst} = []", f"for {i} in range(len({a})):",
                     f"    if {a}[{i}] > {c}:",
                     f"        {lst}.append({a}[{i}] * {e})",
                     f"{v} = np.sum(np.array({lst})) + 0.5 * len({lst})"]
        elif k == 16 and vectors and depth == 0 and scope.loop_depth == 0 and \
                self.allocating():      # an array of a length the step sets
            a, i, w = self.choice(vectors), self.fresh("i"), self.fresh("w")
            u, c = self.choice(scope.floats), self.scalar(scope)
            made = self.choice((
                f"np.arange({i}) * {u}", f"np.linspace(0.0, {u}, {i} + 1)",
                f"np.sort({a}[:{i}] * {u})", f"np.cumsum({a}[:{i}]) * {u}",
                f"np.zeros(len({a}[:{i}])) + {a}[{i} - 1] * {u}",
                f"np.median({a}[max(0, {i} - 2):{i}]) + np.zeros({i}) * {u}"))
            step = self.choice((f"{v} += np.sum({w} * {w}) * {c}",
                                f"{v} = 0.5 * {v} + np.sum(np.sin({w})) * {c}",
                                f"{v} = {v} + {w}[0] * {w}[{i} - 1] * {c}"))
            lines = [f"{v} = 0.0", f"for {i} in range(1, len({a}) + 1):",
                     f"    {w} = {made}", f"    {step}"]
        elif k == 17:       # helpers adjit cannot read (complex numbers), on constants
            n = self.choice((3, 4, 5))
            grid = f"np.linspace({self.choice(('-1.0', '0.0', '0.5'))}, 2.0, {n})"
            if vectors and self.chance(15):     # (on an argument: refused if it is active)
                grid = self.choice(vectors)
            p, q = self.fresh("p"), self.fresh("q")
            t = self.choice(("0.7", "1.3", "-0.4"))
            lines = [f"{v} = cx_phase({grid}, {t}) * {self.expr(scope, 1)}"] \
                if self.chance(50) else \
                [f"{p}, {q} = cx_parts({grid}, {t})",
                 f"{v} = (np.sum({p} * {p}) - 0.5 * np.sum({q})) * {self.expr(scope, 1)}"]
        elif k == 14 and arrays and self.allocating():      # a stencil
            a = self.choice(arrays)
            if len(scope.arrays[a]) == 1:
                lines = [f"{v} = np.sum(st_diff({a}) ** 2) * {self.expr(scope, 1)}"]
            else:
                lines = [f"{v} = np.sum(st_blur({a}, {self.expr(scope, 1)}) * {a})"]
        else:
            lines = [f"{v} = {self.choice(('sp_erf', 'sp_expit'))}({self.expr(scope, 1)})" +
                     (f" + sp_gammaln(1.5 + {self.expr(scope, 1)} ** 2)" if self.chance(40)
                      else "")]
        self.used.add("idioms")
        scope.floats.append(v)
        scope.assignable.append(v)
        return lines

    # group "callee-loops" --------------------------------------------------------------
    def iterables(self, scope):
        """(text, shape) of what a `for` loop over an array may iterate: 1-D arrays and their
        slices, 2-D arrays (rows), their transposes, rows and columns, module arrays."""
        arrays = dict(self.global_arrays)
        arrays.update(scope.arrays)
        out = []
        for name, s in sorted(arrays.items()):
            specs = {1: ("", "", "[1:]", "[::-1]", "[:-1]", "[::2]", "[1:3]"),
                     2: ("", "", ".T", "[1:]", "[#0]", "[:, #1]")}.get(len(s), ())
            for spec in specs:
                shape = view_shape(s, spec)
                if all(shape):
                    text = name + spec
                    for k in range(len(s)):
                        text = text.replace(f"#{k}", self.index(scope, s[k]))
                    out.append((text, shape))
        return out

    def callee_loop(self, scope, depth):
        """`for v in a:`, `for k, v in enumerate(a):` or `for u, v in zip(a, b):` adding to
        an accumulator: (lines, its name), or None. Nothing writes the arrays iterated."""
        its = self.iterables(scope)
        if not its or depth >= 3 or scope.loop_depth >= 2:
            return None
        text, shape = self.choice(its)
        acc, v = self.fresh("v"), self.fresh("v")
        inner = scope.child()
        inner.loop_depth += 1
        inner.in_while = False
        bases = {_view_base(text)}
        k = self.pick(3)
        ones = [c for c in its if len(c[1]) == 1]
        if k == 2 and len(shape) == 1 and ones:
            text2, _ = self.choice(ones)
            u = self.fresh("v")
            bases.add(_view_base(text2))
            header = f"for {u}, {v} in zip({text}, {text2}):"
            inner.floats.append(u)
        elif k >= 1:
            i = self.fresh("i")
            header = f"for {i}, {v} in enumerate({text}):"
            inner.ints[i] = (0, shape[0] - 1)
        else:
            header = f"for {v} in {text}:"
        if len(shape) == 1:
            inner.floats.append(v)
        else:
            inner.arrays[v] = shape[1:]     # a row: a view of the array (never written)
        new = bases - self.iterating
        self.iterating |= new
        self.loops.append(v)
        try:
            e = self.expr(inner, 1)
            if len(shape) == 1:
                first = self.choice((f"{acc} += {v} * {e}", f"{acc} += math.sin({v}) * {e}",
                                     f"{acc} = {acc} * 0.5 + {v} * {e}",
                                     f"{acc} += max({v}, {e})"))
            elif self.allocating():
                other = self.aoperand(inner, self.sub_shape(shape[1:]), 1)
                first = f"{acc} += np.sum({v} * {other})"
            else:
                first = f"{acc} += {v}[{self.index(inner, shape[1])}] * {e}"
            body = [first]
            if self.chance(40):
                body += self.block(inner, depth + 1, 0, 1)
        finally:
            self.loops.pop()
            self.iterating -= new
        scope.floats.append(acc)
        scope.assignable.append(acc)
        return [f"{acc} = 0.0", header] + indent(body), acc

    def stmt_callee_loops(self, scope, depth, call=False):
        """A call of a helper that loops over arrays (always with `call`, one not called
        yet first), or such a loop in place."""
        loops = [h for h in self.helpers if h.kind == "loop" and
                 (self.allocating() or not h.vec)]
        fresh = [h for h in loops if h.name not in self.called]     # not called yet
        if loops and (call or self.chance(90 if fresh else 50)):
            h = self.choice(fresh or loops)
            text = self.call(scope, self.expr(scope, 1), h)
            if text.startswith(h.name):
                self.called.add(h.name)
                self.vec_drawn += h.vec
                v = self.fresh("v")
                scope.floats.append(v)
                scope.assignable.append(v)
                return [f"{v} = {text}"]
        out = None if call else self.callee_loop(scope, depth)
        if out is None:
            return None
        self.used.add("callee-loops")
        return out[0]

    def loop_helper(self, name):
        """def h(b, p) / def h(b, c, p) whose body loops over b, c, their slices, locals
        and module arrays (group "callee-loops")."""
        scope = Scope()
        shapes = [self.choice(((N,), (N,), (3,), SHAPE2))]
        if self.chance(40):
            shapes.append(self.choice(((N,), (3,))))
        params = ["b", "c"][:len(shapes)]
        for p, shape in zip(params, shapes):
            scope.arrays[p] = shape
        scope.floats.append("p")
        scope.assignable.append("p")
        self.add_globals(scope)
        self.stmt_budget = 4
        self.loops, self.no_freeze = [name], {"b", "c"}
        drawn = self.vec_drawn
        body = []
        if self.chance(30) and self.allocating():       # a local array to loop over
            a = self.fresh("a")
            shape = self.choice(shapes)
            text = self.aexpr(scope, shape, 1)
            body.append(f"{a} = {text}.copy()" if _view_base(text) else f"{a} = {text}")
            scope.arrays[a] = shape
        if self.chance(40):
            body += self.block(scope, 1, 1, 1)
        accs = []
        for _ in range(1 + self.pick(2)):
            out = self.callee_loop(scope, 1)
            if out:
                body += out[0]
                accs.append(out[1])
        result = " + ".join([self.expr(scope)] + accs)
        body.append(f"return {result}")
        self.loops, self.no_freeze = [], set()
        self.helpers.append(Helper(name, "loop", self.vec_drawn > drawn, shapes=tuple(shapes)))
        return [f"def {name}({', '.join(params + ['p'])}):"] + indent(body)

    # group "forms" ---------------------------------------------------------------------
    def form_leaf(self, scope):
        """A form of the program's pool, its placeholders its parameters (free vectors
        sometimes scaled by an expression of the program's values): a float (np.sum of an
        array form)."""
        if not self.form_pool:
            return None
        form, names, is_array = self.choice(self.form_pool)
        self.used.add("forms")

        def bind(m):
            ph = m.group(1)
            name = "f" + ph
            return scaled.get(ph, name)
        scaled = {}
        for ph in names:
            if ph in "xyvwT" and self.chance(25):
                e = self.drawing(lambda: self.scalar(scope))
                scaled[ph] = f"(f{ph} * {e})"
        text = FORM_PLACEHOLDER.sub(bind, form)
        return f"np.sum({text})" if is_array else f"({text})"

    def stmt_forms(self, scope, depth):
        if not scope.forms or not self.allocating() or not self.form_pool:
            return None
        v = self.fresh("v")
        k = self.pick(3)
        if k == 1 and depth < 3 and scope.loop_depth < 2:
            i = self.fresh("i")
            inner = scope.child()
            inner.ints[i] = (0, N - 1)
            inner.loop_depth += 1
            inner.in_while = False
            self.loops.append(i)
            leaf, e = self.form_leaf(inner), self.expr(inner, 1)
            self.loops.pop()
            scope.floats.append(v)
            scope.assignable.append(v)
            return [f"{v} = 0.0", f"for {i} in range({self.choice((N, 3))}):",
                    f"    {v} += {leaf} * {e}"]
        if k == 2 and depth < 3:
            cond = self.cond(scope)
            leaf = self.in_branch(lambda: self.form_leaf(scope) if self.allocating() else None)
            if leaf is None:
                return None
            other = self.in_branch(lambda: self.expr(scope))
            scope.floats.append(v)
            scope.assignable.append(v)
            return [f"if {cond}:", f"    {v} = {leaf}", "else:", f"    {v} = {other}"]
        line = f"{v} = {self.form_leaf(scope)} * {self.expr(scope, 1)}"
        scope.floats.append(v)
        scope.assignable.append(v)
        return [line]

    def group_reduction_of(self, scope, group):
        saved = self.groups
        self.groups = [group]
        try:
            return self.group_reduction(scope)
        finally:
            self.groups = saved

    # groups "transpose3d" and "axis3d"
    def permute(self, text, shape):
        """A transpose with axes, .T, swapaxes or moveaxis of a 3-D expression."""
        k = self.pick(8)
        if k <= 2:
            p = self.choice(((1, 0, 2), (0, 2, 1), (2, 0, 1), (1, 2, 0), (2, 1, 0), (0, 1, 2)))
            a, b, c = p
            out = (f"np.transpose({text}, ({a}, {b}, {c}))", f"{text}.transpose({a}, {b}, {c})",
                   f"{text}.transpose(({a}, {b}, {c}))")[k]
            new = _shape3(shape, "transpose", p)
        elif k <= 4:
            out, new = f"{text}.T" if k == 3 else f"np.transpose({text})", shape[::-1]
        elif k <= 6:
            i, j = self.choice(((0, 1), (0, 2), (1, 2), (0, -1), (-1, -2), (2, 0)))
            out = f"np.swapaxes({text}, {i}, {j})" if k == 5 else f"{text}.swapaxes({i}, {j})"
            new = _shape3(shape, "swapaxes", i, j)
        else:
            i, j = self.choice(((0, -1), (0, 2), (2, 0), (-1, 0), (1, 0), (0, 1), (-3, 1)))
            out, new = f"np.moveaxis({text}, {i}, {j})", _shape3(shape, "moveaxis", i, j)
        self.used.add("transpose3d")
        return out, new

    def tensor(self, scope, d):
        """(text, shape): a 3-D array expression over the 3-D arrays in scope: elementwise
        functions, products, and (group "transpose3d") permutations of its axes."""
        names = [(n, s) for n, s in sorted(scope.arrays.items()) if len(s) == 3]
        if not names:
            return None
        text, shape = self.choice(names)
        if d < 2 and self.chance(40):
            e = self.scalar(scope)
            text = self.choice((f"np.sin({text})", f"np.tanh({text})", f"({text} * {e})",
                                f"({text} + {e})", f"np.exp(-({text} * {text}))",
                                f"({text} * {text})", f"np.sqrt(1.0 + {text} * {text})"))
        if self.on("transpose3d") and self.chance(60):
            text, shape = self.permute(text, shape)
        if d < 1 and self.chance(25):
            other = self.tensor(scope, d + 1)
            if other is not None:
                o, s = other
                perms = [p for p in ((0, 1, 2), (1, 0, 2), (0, 2, 1), (2, 0, 1), (1, 2, 0),
                                     (2, 1, 0)) if tuple(s[i] for i in p) == shape]
                if perms and (perms[0] == (0, 1, 2) or self.on("transpose3d")):
                    p = perms[0]
                    if p != (0, 1, 2):
                        o = f"np.transpose({o}, {p})"
                        self.used.add("transpose3d")
                    text = f"({text} {self.choice(('+', '-', '*'))} {o})"
        return text, shape

    def tensor_to(self, scope, shape):
        """An expression of `shape` (1-D or 2-D) from a 3-D one: indexed, or (group "axis3d")
        reduced over one axis, maybe then indexed."""
        t = self.tensor(scope, 1)
        if t is None:
            return None
        text, s = t
        cands = [("[#0]", s[1:]), ("[:, #1]", (s[0], s[2])), ("[:, :, #2]", s[:2]),
                 ("[#0, #1]", s[2:]), ("[#0, :, #2]", s[1:2]), ("[:, #1, #2]", s[:1])]
        if self.on("axis3d"):
            for k in ("0", "1", "2", "-1", "-2", "-3"):
                r = tuple(n for i, n in enumerate(s) if i != int(k) % 3)
                cands.append((k, r))
                cands.append((k + "[#0]", r[1:]))
        cands = [c for c in cands if c[1] == tuple(shape)]
        if not cands:
            return None
        spec, _ = self.choice(cands)
        if spec[0] != "[":
            k, _, rest = spec.partition("[")
            fn = self.axis_fn(self.choice(("sum", "mean", "max", "min", "prod")))
            text = self.choice((f"np.{fn}({text}, axis={k})", f"{text}.{fn}(axis={k})",
                                f"np.{fn}({text}, {k})", f"{text}.{fn}({k})"))
            self.used.add("axis3d")
            if rest:
                r = tuple(n for i, n in enumerate(s) if i != int(k) % 3)
                return f"{text}[{self.index(scope, r[0])}]"
            return text
        for k in range(3):
            spec = spec.replace(f"#{k}", self.index(scope, s[k]))
        return text + spec

    def stmt_transpose3d(self, scope, depth):
        return self.tensor_stmt(scope, "transpose3d")

    def stmt_axis3d(self, scope, depth):
        return self.tensor_stmt(scope, "axis3d")

    def tensor_stmt(self, scope, group):
        """A 3-D local (np.stack of 2-D arrays, or a permutation), a 2-D local reduced from
        one, or a float from one."""
        if not self.allocating():
            return None
        a = self.fresh("a")
        if not any(len(s) == 3 for s in scope.arrays.values()) or self.chance(20):
            k = self.choice((0, 1, 2, -1))
            parts = [self.aexpr(scope, SHAPE2, 1) for _ in range(2 + self.pick(2))]
            shape = np.stack([np.empty(SHAPE2)] * len(parts), axis=k).shape
            scope.arrays[a] = shape
            return [f"{a} = np.stack(({', '.join(parts)}), axis={k})"]
        k = self.pick(3)
        if k == 0 and group == "transpose3d":
            text, shape = self.permute(*self.tensor(scope, 1))
            scope.arrays[a] = shape
            return [f"{a} = {text}"]
        if k == 1:
            shape = self.choice((SHAPE2, (2, 3), (N,), (3,), (2, 4), (3, 4)))
            text = self.tensor_to(scope, shape)
            if text is None:
                return None
            scope.arrays[a] = shape
            scope.writable.append(a)
            self.note_write(a)
            return [f"{a} = {text}.copy()" if _view_base(text) else f"{a} = {text}"]
        v = self.fresh("v")
        text = self.group_reduction_of(scope, group)
        if text is None:
            return None
        scope.floats.append(v)
        scope.assignable.append(v)
        return [f"{v} = {text}"]

    # group "const-pow"
    def const_pow(self, a, scalar):
        """a ** p, np.power(a, p) or math.pow(a, p) for a constant p (0.0, 1, 0.5, ...);
        a non-negative base for 0.5."""
        p = self.choice(CONST_POWS)
        if p == "0.5":
            a = f"abs({a})" if scalar else f"np.abs({a})"
        self.used.add("const-pow")
        if scalar:
            return self.choice((f"({a} ** {p})", f"math.pow({a}, {p})"))
        return self.choice((f"({a} ** {p})", f"np.power({a}, {p})"))

    def stmt_const_pow(self, scope, depth):
        v = self.fresh("v")
        if self.allocating() and self.chance(50):
            a = self.const_pow(self.aleaf(scope, self.choice(REDUCED_SHAPES)), scalar=False)
            line = f"{v} = np.sum({a} * {self.scalar(scope)})"
        else:
            line = f"{v} = {self.const_pow(self.atom(scope), scalar=True)} * {self.expr(scope, 2)}"
        scope.floats.append(v)
        scope.assignable.append(v)
        return [line]

    # group "views"
    def stmt_views(self, scope, depth):
        """v = a[1:3] (a.T, a[i], a[::2], a.reshape(2, 2), a itself), then a write through
        v or a; f's result reads both names when the view was made at its top level."""
        args = [a for a in ("x", "w") if a in scope.arrays and a not in scope.writable]
        bases = [a for a in self.writable(scope) + args
                 if len(scope.arrays[a]) <= 2 and a not in self.frozen
                 and a not in self.iterating]
        if not bases:
            return None
        b = self.choice(sorted(bases))
        shape = scope.arrays[b]
        specs = []
        for spec in VIEW_NAMES[len(shape)]:
            if spec.startswith(".reshape"):
                new = tuple(int(n) for n in re.findall(r"\d+", spec))
                if b in self.c_contig and math.prod(new) == math.prod(shape) and \
                        new != shape:
                    specs.append(spec)
            elif all(view_shape(shape, spec)):
                specs.append(spec)
        spec = self.choice(specs)
        v = self.fresh("a")
        if spec.startswith(".reshape"):
            vshape = tuple(int(n) for n in re.findall(r"\d+", spec))
        else:
            vshape = view_shape(shape, spec)
        lines = [f"{v} = {self.spell(scope, b, spec) if spec != '.T' else b + '.T'}"]
        scope.arrays[v] = vshape
        scope.writable.append(v)
        if b not in scope.writable:
            scope.writable.append(b)
        if spec == "" and b in self.c_contig:
            self.c_contig.add(v)
        self.note_write(v)
        self.note_write(b)
        if depth == 0 and not self.loops:
            self.view_names.append((v, b))
        self.used.add("views")
        # a write through one of the names
        n = self.choice((v, b))
        nshape = scope.arrays[n]
        k = self.pick(3)
        if k == 0:
            idx = ", ".join(self.index(scope, m) for m in nshape)
            e = self.protecting(n, lambda: self.expr(scope, 1))
            lines.append(self.choice((f"{n}[{idx}] = {e}", f"{n}[{idx}] += {e}",
                                      f"{n}[{idx}] = {n}[{idx}] * {e}")))
        elif self.allocating():
            if k == 1:
                rhs = self.protecting(n, lambda: self.aoperand(scope, self.sub_shape(nshape), 1))
                rhs = self.unaliased(rhs, n)
                lines.append(f"{n} {self.choice(('+=', '-=', '*='))} {rhs}")
            else:
                stores = [s for s in STORES[len(nshape)] if all(view_shape(nshape, s))]
                st_ = self.choice(stores)
                region = view_shape(nshape, st_)
                rhs = self.protecting(n, lambda: self.aoperand(scope, self.sub_shape(region), 1))
                op = self.choice(('=', '+='))
                rhs = self.unaliased(rhs, n) if op == "+=" else rhs
                lines.append(f"{self.spell(scope, n, st_)} {op} {rhs}")
        return lines

    # group "joins"
    def stmt_joins(self, scope, depth):
        """`if c: y = A` / `else: y = B`, `y = A` then `if c: y = B`, or `y = A if c else B`
        (A or B a view sometimes: an array it names is then never written again, as adjit
        refuses a write into an array one path kept), then a float that reads y."""
        if not self.allocating():
            return None
        shape = self.choice(((N,), (N,), SHAPE2, (3,)))
        y, v = self.fresh("a"), self.fresh("v")
        cond = self.cond(scope)
        arms = [self.aoperand(scope, shape, 2),
                self.in_branch(lambda: self.aoperand(scope, shape, 2))]
        for arm in arms:
            whole = re.fullmatch(r"([A-Za-z_]\w*)(\[[^\]]*\]|\.T)?", arm)
            if whole and whole.group(1) in scope.arrays:
                self.frozen.add(whole.group(1))
        k = self.pick(3)
        leave = []          # in a loop: a path may leave it, before or after binding y
        if scope.loop_depth and k < 2 and self.chance(40):
            leave = [f"    if {self.cond(scope)}:",
                     f"        {'break' if self.chance(50) else 'continue'}"]
        first = self.chance(50)
        if k == 0:
            lines = [f"if {cond}:"] + (leave if first else []) + [f"    {y} = {arms[0]}"] + \
                ([] if first else leave) + ["else:", f"    {y} = {arms[1]}"]
        elif k == 1:
            lines = [f"{y} = {arms[0]}", f"if {cond}:"] + (leave if first else []) + \
                [f"    {y} = {arms[1]}"] + ([] if first else leave)
        else:
            lines = [f"{y} = {arms[0]} if {cond} else {arms[1]}"]
        scope.arrays[y] = shape
        self.frozen.add(y)
        lines.append(f"{v} = np.sum({y} * {self.aoperand(scope, shape, 1)})")
        scope.floats.append(v)
        scope.assignable.append(v)
        self.used.add("joins")
        return lines

    # group "kwdefaults"
    def module_globals(self):
        names = [g for g in GLOBALS if self.chance(60)] or [GLOBALS[0]]
        self.globals = names
        return [f"{g} = {self.choice(CONSTS)}" for g in names]

    def kw_helper(self, name):
        """def h(p, gain=2.0) / def h(p, *, gain=2.0, scale=0.5) / def h(p, q=1.5, *,
        bias=0.3): defaults named like module globals; its body reads them and the globals
        it does not shadow."""
        scope = Scope()
        scope.floats.append("p")
        scope.assignable.append("p")
        names = [g for g in GLOBALS if self.chance(40)] or [self.choice(GLOBALS)]
        if self.chance(30):
            names.insert(0, "q")
        split = self.pick(len(names) + 1)        # names[split:] are keyword-only
        defaults = tuple((d, k >= split) for k, d in enumerate(names))
        parts = ["p"] + [f"{d}={self.choice(CONSTS)}" for d in names[:split]]
        if split < len(names):
            parts += ["*"] + [f"{d}={self.choice(CONSTS)}" for d in names[split:]]
        for d in names:
            scope.floats.append(d)
            scope.assignable.append(d)
        scope.floats += [g for g in self.globals if g not in names]
        self.add_globals(scope)
        self.stmt_budget = 3
        self.loops, self.no_freeze = [name], {"b"}
        drawn = self.vec_drawn
        body = self.block(scope, 1, 1, 2)
        body.append(f"return {self.expr(scope)} + {self.choice(names)} * p")
        self.loops, self.no_freeze = [], set()
        self.helpers.append(Helper(name, "kw", self.vec_drawn > drawn, defaults))
        return [f"def {name}({', '.join(parts)}):"] + indent(body)

    def kw_call(self, scope, h, a):
        """A call of a "kw" helper passing some defaults by position, some by keyword."""
        parts = [a]
        by_keyword = False
        for d, kwonly in h.defaults:
            if self.chance(40):
                by_keyword = True       # skipped: later ones by keyword
                continue
            e = self.atom(scope)
            if kwonly or by_keyword or self.chance(50):
                parts.append(f"{d}={e}")
                by_keyword = True
            else:
                parts.append(e)
        self.used.add("kwdefaults")
        return f"{h.name}({', '.join(parts)})"

    def f_defaults(self, scope):
        """f's own parameters with defaults (never passed) named like module globals, and
        the globals it reads."""
        names = []
        if self.chance(60):
            names = [self.choice(self.globals or GLOBALS)]
        text = ""
        if names:
            text = (", *, " if self.chance(50) else ", ") + \
                ", ".join(f"{d}={self.choice(CONSTS)}" for d in names)
            self.used.add("kwdefaults")
        for d in names:
            scope.floats.append(d)
            scope.assignable.append(d)
        scope.floats += [g for g in self.globals if g not in names]
        return text

    def stmt_kwdefaults(self, scope, depth):
        v = self.fresh("v")
        kws = [h for h in self.helpers if h.kind == "kw"]
        if kws and (self.allocating() or not kws[0].vec):
            h = self.choice([h for h in kws if self.allocating() or not h.vec] or kws)
            self.vec_drawn += h.vec
            line = f"{v} = {self.kw_call(scope, h, self.expr(scope, 1))}"
        elif self.globals:
            line = f"{v} = {self.choice(self.globals)} * {self.expr(scope, 1)}"
            self.used.add("kwdefaults")
        else:
            return None
        scope.floats.append(v)
        scope.assignable.append(v)
        return [line]

    # group "constructors"
    def constructed(self, scope, shape):
        """np.linspace with active end points, np.full, np.array of active floats,
        np.eye(n) * a, np.diag(v) (of `shape`), or None."""
        e = self.scalar(scope)
        self.used.add("constructors")
        if len(shape) == 1:
            n = shape[0]
            forms = [f"np.full({n}, {e})",
                     "np.array([" + ", ".join(self.choice((self.scalar(scope), "3.0",
                                                           f"({self.scalar(scope)} * 2.0)"))
                                              for _ in range(n)) + "])"]
            if not (self.loops and "alloc in loop" in AVOID):
                forms.append(f"np.linspace({e}, {self.scalar(scope)}, {n})")
            like = [a for a, s in sorted(scope.arrays.items()) if s == shape]
            if like:
                forms.append(f"np.full_like({self.choice(like)}, {e})")
            if n <= 4:      # (numpy's diagonal of a 2-D array is a read-only view)
                forms.append(f"np.diag({self.aexpr(scope, (n, n), 2)}).copy()")
            return self.choice(forms)
        r, c = shape
        forms = [f"np.full(({r}, {c}), {e})"]
        if r == c:
            forms += [f"(np.eye({r}) * {e})", f"np.diag({self.aexpr(scope, (r,), 2)})",
                      f"(np.eye({r}) * {e} + np.diag({self.aexpr(scope, (r,), 2)}))"]
        return self.choice(forms)

    def stmt_constructors(self, scope, depth):
        """a = np.empty(n) filled in a loop (by elements or rows), or a new array from an
        active constructor."""
        if not self.allocating():
            return None
        a = self.fresh("a")
        shape = self.choice(((N,), SHAPE2, (3,), (2, 2), (2, 2)))
        self.used.add("constructors")
        if self.chance(50) or depth >= 3 or scope.loop_depth >= 2:
            line = f"{a} = {self.constructed(scope, shape)}"
            scope.arrays[a] = shape
            scope.writable.append(a)
            self.note_write(a)
            return [line]
        i = self.fresh("i")
        inner = scope.child()
        inner.ints[i] = (0, shape[0] - 1)
        inner.loop_depth += 1
        inner.in_while = False
        self.loops.append(i)
        if len(shape) == 1:
            fill = f"{a}[{i}] = {self.expr(inner)}"
        else:
            fill = f"{a}[{i}] = {self.aoperand(inner, self.sub_shape(shape[1:]), 1)}" \
                if self.allocating() else f"{a}[{i}, 0] = {self.expr(inner)}"
        self.loops.pop()
        scope.arrays[a] = shape
        scope.writable.append(a)
        self.c_contig.add(a)
        self.note_write(a)
        dims = f"{shape[0]}" if len(shape) == 1 else f"({shape[0]}, {shape[1]})"
        lines = [f"{a} = np.empty({dims})", f"for {i} in range({shape[0]}):", f"    {fill}"]
        if len(shape) == 2 and not fill.startswith(f"{a}[{i}] ="):
            lines.append(f"    {a}[{i}, 1:] = 0.0")
        return lines


# the module-level definitions programs of group "idioms" call (as numba code defines them)
IDIOM_DEFINITIONS = """\
@numba.vectorize(["float64(float64, float64)"])
def vk_tanh(a, b):
    return a * math.tanh(b) + 0.5 * b


@numba.vectorize
def vk_step(a, b):
    return a * b - 0.25 * a * a


@numba.vectorize
def vk_knee(a):
    if a > 0.3:
        return a * a
    return 0.6 * a - 0.09


@numba.njit
def opt_scale(a, w=None):
    if w is None:
        return 1.5 * a
    return a * w


@numba.njit
def cx_phase(a, t):
    z = 0j
    for v in a:
        z += cmath.exp(1j * v * t)
    return abs(z) / (1.0 + a.shape[0])


@numba.njit
def cx_parts(a, t):
    z = np.exp(1j * t * a) * (1.0 + 0.5j)
    return z.real.copy(), z.imag.copy()


@numba.guvectorize(["void(float64[:], float64, float64[:])"], "(n),()->(n)")
def gu_scale(a, s, out):
    for i in range(a.shape[0]):
        out[i] = a[i] * s + 0.1 * a[i] * a[i]


@numba.guvectorize(["void(float64[:], float64[:])"], "(n)->()")
def gu_norm(a, out):
    acc = 0.0
    for v in a:
        acc += v * v
    out[0] = math.sqrt(acc + 1.0)


@numba.stencil
def st_diff(a):
    return a[-1] - 2.0 * a[0] + a[1]


@numba.stencil(cval=0.5)
def st_blur(a, s):
    return s * (a[0, 1] + a[1, 0] + a[0, -1] + a[-1, 0]) + (1.0 - 4.0 * s) * a[0, 0]


sp_erf = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double)(
    get_cython_function_address("scipy.special.cython_special", "__pyx_fuse_1erf"))
sp_expit = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double)(
    get_cython_function_address("scipy.special.cython_special", "__pyx_fuse_0expit"))
sp_gammaln = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double)(
    get_cython_function_address("scipy.special.cython_special", "gammaln"))""".splitlines()


def indent(lines):
    return ["    " + s for s in lines]


@st.composite
def programs(draw):
    w = Writer(draw)
    w.vec_heavy = w.chance(50)
    w.choose_oracle()
    lines = []
    if w.on("kwdefaults"):
        lines += w.module_globals() + ["", ""]
    if w.on("globals") or w.on("callee-loops"):
        lines += w.module_arrays() + ["", ""]
    if w.on("idioms"):
        lines += IDIOM_DEFINITIONS + ["", ""]
    start = len(lines)
    for _ in range(draw(st.integers(0, 2))):
        lines += w.helper() + ["", ""]
    if w.on("kwdefaults") and not any(h.kind == "kw" for h in w.helpers):
        lines += w.helper("kw") + ["", ""]
    if w.on("callee-loops") and not any(h.kind == "loop" for h in w.helpers) and \
            w.likely(70):
        lines += w.helper("loop") + ["", ""]
    body, params = w.function()
    if w.on("globals") and re.search(r"\bG\d\b", "\n".join(lines[start:] + body)):
        w.used.add("globals")
    if w.fd_judged and not w.used & set(FD_GROUPS):     # (it seeds: judged as they are)
        w.used.add("draws" if w.on("draws") else "forms")
    seed = draw(st.integers(0, 2 ** 32 - 1))
    return Program("\n".join(lines + body) + "\n", params, seed, tuple(sorted(w.used)))
