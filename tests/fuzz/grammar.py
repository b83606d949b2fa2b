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

Every choice is an integer drawn from hypothesis with the simplest option first, so
hypothesis shrinks a failing program toward fewer statements and simpler expressions.
Some programs write into their array arguments (the gradient must repeat exactly those
writes); helpers write only into local arrays. Programs always terminate (every `while`
increments its counter first); names defined inside a block are used only inside it, so
every program runs.
"""
import dataclasses

import numpy as np
from hypothesis import strategies as st

N = 4                    # length of the 1-D arrays
SHAPE2 = (3, 2)          # shape of the 2-D arrays
N_PARAM = 3              # the value passed for the int parameter `n`
CONSTS = ("0.5", "2.0", "-1.25", "0.3", "1.5", "-0.7", "3.0")
# statement kinds (see Writer.stmt), repeated to weight them: 0 new float, 1 reassignment,
# 2 array element write, 3 new array, 4 if, 5 for, 6 while, 7 break/continue, 8 early return,
# 9 swap, 10 helper call, 11 int assignment, 12 shape unpacking, 13 a float defined in every
# branch of an if, 14 a bool flag
STMT_KINDS = (0, 0, 1, 1, 1, 2, 2, 3, 4, 4, 4, 5, 5, 5, 5, 6, 6, 7, 7, 8, 9, 10, 10, 11, 12,
              13, 13, 14)


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


class Writer:
    """Draws one program; every decision is a small integer from hypothesis."""

    def __init__(self, draw):
        self.draw = draw
        self.counter = 0
        self.helpers = []
        self.stmt_budget = 0

    # choices -----------------------------------------------------------------------------
    def pick(self, n):
        return self.draw(st.integers(0, n - 1))

    def choice(self, options):
        return options[self.pick(len(options))]

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
        k = self.pick(16)
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
            b = self.expr(scope, depth + 1)
            return f"({a} if {self.cond(scope)} else {b})"
        if k == 13:
            return f"stop_gradient({a})"
        if k == 14 and self.helpers:
            return self.call(scope, a)
        return f"({a} * {self.choice(CONSTS)})"

    def call(self, scope, a):
        h = self.choice(self.helpers)
        if h.kind == "reader" and scope.arrays:
            arr = self.choice([n for n, s in sorted(scope.arrays.items()) if len(s) == 1] or ["?"])
            if arr != "?":
                return f"{h.name}({arr}, {a})"
        if h.kind == "writer":
            arrs = [n for n in scope.writable if len(scope.arrays[n]) == 1]
            if arrs:
                j = self.choice(sorted(scope.ints)) if scope.ints and self.chance(60) \
                    else str(self.pick(N))
                return f"{h.name}({self.choice(arrs)}, {j}, {a})"
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
            return f"({self.cond(scope, depth + 1)} {self.choice(('and', 'or'))} " \
                   f"{self.cond(scope, depth + 1)})"
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
        k = self.choice(STMT_KINDS)
        if k == 0:
            return [self.new_float(scope)]
        if k == 1 and scope.assignable:
            s = self.choice(scope.assignable)
            e = self.expr(scope)
            return [self.choice((f"{s} = {s} * 0.5 + {e}", f"{s} += {e}", f"{s} -= {e}",
                                 f"{s} *= math.tanh({e})", f"{s} = math.sin({s}) * {e}",
                                 f"{s} = {e}"))]
        if k == 2 and scope.writable:
            a = self.choice(scope.writable)
            idx = ", ".join(self.index(scope, n) for n in scope.arrays[a])
            e = self.expr(scope)
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
            return [f"if {self.cond(scope)}:", f"    return {self.expr(scope)}"]
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
            scope.ints[r] = (SHAPE2[0], SHAPE2[0])
            scope.ints[c] = (SHAPE2[1], SHAPE2[1])
            v = self.fresh("v")
            scope.floats.append(v)
            scope.assignable.append(v)
            return [f"{r}, {c} = {a}.shape", f"{v} = float({r} * {c})"]
        if k == 13 and depth < 3:
            v = self.fresh("v")
            out = [f"if {self.cond(scope)}:"] + indent(self.block(scope.child(), depth + 1, 0, 1)
                                                       + [f"{v} = {self.expr(scope)}"])
            if self.chance(40):
                out += [f"elif {self.cond(scope)}:", f"    {v} = {self.expr(scope)}"]
            out += ["else:", f"    {v} = {self.expr(scope)}"]
            scope.floats.append(v)
            scope.assignable.append(v)
            return out
        if k == 14:
            b = self.fresh("flag")
            line = f"{b} = {self.cond(scope)}"
            scope.flags.append(b)
            return [line]
        return [self.new_float(scope)]

    def new_array(self, scope):
        a = self.fresh("a")
        ones = [n for n, s in sorted(scope.arrays.items()) if len(s) == 1]
        twos = [n for n, s in sorted(scope.arrays.items()) if len(s) == 2]
        k = self.pick(6)
        if k == 1:
            line, shape = f"{a} = np.ones({N})", (N,)
        elif k == 2 and ones:
            line, shape = f"{a} = {self.choice(ones)}.copy()", (N,)
        elif k == 3 and ones:
            line, shape = f"{a} = np.zeros_like({self.choice(ones)})", (N,)
        elif k == 4:
            line, shape = f"{a} = np.zeros({SHAPE2})", SHAPE2
        elif k == 5 and twos:
            line, shape = f"{a} = {self.choice(twos)}.copy()", SHAPE2
        else:
            line, shape = f"{a} = np.zeros({N})", (N,)
        scope.arrays[a] = shape
        scope.writable.append(a)
        return line

    def if_stmt(self, scope, depth):
        out = [f"if {self.cond(scope)}:"] + indent(self.block(scope.child(), depth + 1))
        k = self.pick(3)
        if k >= 1:
            if k == 2:
                out += [f"elif {self.cond(scope)}:"] + indent(self.block(scope.child(), depth + 1))
            out += ["else:"] + indent(self.block(scope.child(), depth + 1))
        return out

    def for_stmt(self, scope, depth):
        i = self.fresh("i")
        ints = sorted((n, b) for n, b in scope.ints.items() if b[1] <= N and b[0] >= 0)
        forms = [(f"range({N})", (0, N - 1)), (f"range(1, {N})", (1, N - 1)),
                 (f"range({N - 1}, -1, -1)", (0, N - 1)), (f"range(0, {N}, 2)", (0, N - 1)),
                 (f"range({N - 1}, 0, -2)", (1, N - 1))]
        ones = [n for n, s in sorted(scope.arrays.items()) if len(s) == 1]
        if ones:
            forms.append((f"range(len({self.choice(ones)}))", (0, N - 1)))
        if "n" in scope.ints:
            forms.append(("range(n)", (0, N_PARAM - 1)))
        twos = [n for n, s in sorted(scope.arrays.items()) if len(s) == 2]
        if twos:
            forms.append((f"range({self.choice(twos)}.shape[{self.pick(2)}])",
                          (0, SHAPE2[0] - 1)))
        if ints:
            j, (lo, hi) = self.choice(ints)
            forms.append((f"range({j})", (0, max(hi - 1, 0))))
            forms.append((f"range({j}, {N})", (lo, N - 1)))
        header, bounds = self.choice(forms)
        inner = scope.child()
        inner.ints[i] = bounds
        inner.loop_depth += 1
        inner.in_while = False
        return [f"for {i} in {header}:"] + indent(self.block(inner, depth + 1))

    def while_stmt(self, scope, depth):
        k = self.fresh("k")
        limit = 1 + self.pick(4)
        inner = scope.child()
        inner.ints[k] = (1, limit)
        inner.loop_depth += 1
        inner.in_while = True
        cond = f"{k} < {limit}"
        if self.chance(40):
            cond += f" and {self.cond(scope)}"
        body = [f"{k} += 1"] + self.block(inner, depth + 1)
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
        body = self.block(scope, 1, 1, 2)
        if kind == "writer":
            body.append(f"b[j % {N}] = {self.expr(scope)}")
        body.append(f"return {self.expr(scope)}")
        self.helpers.append(Helper(name, kind))
        return [f"def {name}({', '.join(params)}):"] + indent(body)

    def function(self):
        params = [("x", "array1"), ("y", "float")]
        if self.chance(50):
            params.append(("z", "float"))
        if self.chance(25):
            params.append(("w", "array2"))
        if self.chance(25):
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
        self.stmt_budget = 14
        body = [self.new_array(scope)] if self.chance(40) else []
        body += self.block(scope, 0, 2, 6)
        terms = [self.expr(scope)] + [self.choice(scope.floats) for _ in range(self.pick(3))]
        body.append(f"return {' + '.join(terms)}")
        head = f"def f({', '.join(n for n, _ in params)}):"
        return [head] + indent(body), tuple(params)


def indent(lines):
    return ["    " + s for s in lines]


@st.composite
def programs(draw):
    w = Writer(draw)
    lines = []
    for _ in range(draw(st.integers(0, 2))):
        lines += w.helper() + ["", ""]
    body, params = w.function()
    seed = draw(st.integers(0, 2 ** 32 - 1))
    return Program("\n".join(lines + body) + "\n", params, seed)
