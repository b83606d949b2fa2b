"""A hypothesis strategy that writes random programs in adjit's core language.

`programs()` draws a `Program`: module source text with a function `f` and up to two helper
functions it calls, plus the arguments to call `f` with. The grammar covers float arithmetic,
`math` calls behind domain guards (log of 1 + a*a, asin of 0.9*tanh(a), ...), abs/min/max,
`if/elif/else` on comparisons joined by and/or/not, conditional expressions, `for` over
`range` with one to three arguments (negative steps, triangular loops, bounds from arguments
and from `len`/`.shape`), bounded `while`, `break`/`continue`, reassignment and augmented
assignment of the same names in loops, tuple swaps, local 1-D and 2-D arrays (zeros, ones,
copies) with element reads, overwrites and in-place updates, calls to generated helpers
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

import numpy as np
from hypothesis import strategies as st

N = 4                    # length of the 1-D arrays
SHAPE2 = (3, 2)          # shape of the 2-D arrays
N_PARAM = 3              # the value passed for the int parameter `n`
CONSTS = ("0.5", "2.0", "-1.25", "0.3", "1.5", "-0.7", "3.0")
# statement kinds (see Writer.stmt), repeated to weight them: 0 new float, 1 reassignment,
# 2 array element write, 3 new array, 4 if, 5 for, 6 while, 7 break/continue, 8 early return,
# 9 swap, 10 helper call, 11 int assignment, 12 shape unpacking, 13 a float defined in every
# branch of an if, 14 a bool flag, 15 a new array from a vectorized expression, 16 slice
# assignment or in-place update of a whole array, 17 a float from a vectorized reduction
STMT_KINDS = (0, 0, 1, 1, 1, 2, 2, 3, 4, 4, 4, 5, 5, 5, 5, 6, 6, 7, 7, 8, 9, 10, 10, 11, 12,
              13, 13, 14, 15, 15, 16, 17)
# the weights of half the programs: mostly vectorized statements
VEC_STMT_KINDS = (0, 1, 1, 2, 3, 4, 4, 5, 5, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
                  15, 15, 15, 15, 15, 15, 16, 16, 16, 16, 16, 17, 17, 17, 17, 17)
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
# - "alloc in loop" (grammar, and check.py discards what gets through): an array that
#   vectorized code allocates in a loop, where its size computation is not hoisted out of the
#   loop (inside an `if` or a conditional expression in the loop, in any `while` loop, sizes
#   read from np.linspace/np.arange made in the loop), is refused: "allocated in a loop with
#   a shape that changes between iterations".
# (Fixed since: "aug slice reads target", `a[1:] += a[:-1]` was a running update; "prefix
# slice", `x[:3]` was taken for all of x where materialized; "like of computed array",
# `np.full_like(a, v)` of `a = -np.min(w, 0)` crashed; "slice update from its own name",
# `x[::-1] = x` was a running update leaving a palindrome.)
AVOID = {"mm operand in loop", "alloc in loop"}
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
    return eval("a" + spec.replace("#0", "0").replace("#1", "0"),  # noqa: S307
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
                node.func.attr in ("reshape", "transpose"):
            base = node.func.value
            node = node.args[0] if isinstance(base, ast.Name) and base.id == "np" else base
        else:
            return None


@dataclasses.dataclass
class Program:
    source: str
    params: tuple        # (name, kind) with kind "float", "array1", "array2" or "int"
    seed: int

    def args(self):
        """Fresh argument values (floats, float64 arrays, ints) from the program's seed."""
        rng = np.random.default_rng(self.seed)
        out = []
        for _, kind in self.params:
            if kind == "float":
                out.append(float(rng.uniform(-1.5, 1.5)))
            elif kind == "array1":
                out.append(rng.uniform(-1.5, 1.5, N))
            elif kind == "array2":
                out.append(rng.uniform(-1.5, 1.5, SHAPE2))
            else:
                out.append(N_PARAM)
        return out

    def float_params(self):
        """Positions of the parameters adjit can differentiate."""
        return tuple(k for k, (_, kind) in enumerate(self.params) if kind != "int")


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
        c.loop_depth = self.loop_depth
        c.in_while = self.in_while
        return c


@dataclasses.dataclass
class Helper:
    name: str
    kind: str            # "reader" (array, float), "scalar" (float, float), "writer" (array, int, float)
    vec: bool = False    # its body has vectorized code (may allocate arrays)


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
            return f"stop_gradient({a})"
        if k == 14 and self.helpers:
            return self.call(scope, a)
        if k == 15 and depth <= 1 and self.allocating():
            return self.reduction(scope)
        return f"({a} * {self.choice(CONSTS)})"

    def call(self, scope, a):
        helpers = self.helpers if self.allocating() else [h for h in self.helpers if not h.vec]
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
        k = self.choice(VEC_STMT_KINDS if self.vec_heavy else STMT_KINDS)
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
        return [self.new_float(scope)]

    # vectorized numpy ----------------------------------------------------------------------
    def in_branch(self, draw, always=False):
        """draw() for code inside a branch (or, with always, inside a while loop): within a
        loop, adjit refuses vectorized allocations there ("alloc in loop" in AVOID)."""
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
                and (shape is None or scope.arrays[a] == shape)]

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
            for spec in VIEWS[len(s)]:
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
        if k <= 6:
            template = self.rotating(ELEMENTWISE)
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
            fn = self.choice(("mean", "max", "sum"))
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
        axis = self.choice(("0", "1", "-1"))
        src = (k, shape[0]) if axis == "0" else (shape[0], k)
        a = self.aexpr(scope, src, d + 1)
        fn = self.choice(("sum", "mean", "max", "min", "prod"))
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
    def helper(self):
        kind = self.choice(("scalar", "reader", "writer"))
        name = self.fresh("h")
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
        self.stmt_budget = 4
        # the body is inlined at every call, maybe inside the caller's loops: every write in
        # it counts as in a loop; the caller may write the array parameter (never frozen)
        self.loops, self.no_freeze = [name], {"b"}
        drawn = self.vec_drawn
        body = self.block(scope, 1, 1, 2)
        if kind == "writer":
            body.append(f"b[j % {N}] = {self.expr(scope)}")
        body.append(f"return {self.expr(scope)}")
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
        scope = Scope()
        for name, kind in params:
            if kind == "float":
                scope.floats.append(name)
                scope.assignable.append(name)
            elif kind == "int":
                scope.ints[name] = (N_PARAM, N_PARAM)
            else:
                scope.arrays[name] = (N,) if kind == "array1" else SHAPE2
                if self.chance(15):
                    scope.writable.append(name)     # f writes into its argument
        self.stmt_budget = 16
        body = [self.new_array(scope)] if self.chance(40) else []
        body += self.block(scope, 0, 2, 6)
        terms = [self.expr(scope)] + [self.choice(scope.floats) for _ in range(self.pick(3))]
        if self.chance(25):
            terms.append(self.reduction(scope))     # (not in a loop: always allowed)
        made = [a for a in sorted(scope.arrays) if a[0] == "a"]
        if made and self.chance(50):                # let gradients flow through local arrays
            a = self.choice(made)
            terms.append(self.choice((f"np.sum({a})", f"np.sum({a} * {a})", f"{a}.mean()")))
        body.append(f"return {' + '.join(terms)}")
        head = f"def f({', '.join(n for n, _ in params)}):"
        return [head] + indent(body), tuple(params)


def indent(lines):
    return ["    " + s for s in lines]


@st.composite
def programs(draw):
    w = Writer(draw)
    w.vec_heavy = w.chance(50)
    lines = []
    for _ in range(draw(st.integers(0, 2))):
        lines += w.helper() + ["", ""]
    body, params = w.function()
    seed = draw(st.integers(0, 2 ** 32 - 1))
    return Program("\n".join(lines + body) + "\n", params, seed)
