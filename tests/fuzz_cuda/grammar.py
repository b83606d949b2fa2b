"""A hypothesis strategy that writes small numba.cuda kernels the way numba.cuda users do.

`kernels()` draws a `Kernel`: module source with a kernel `k` (`@cuda.jit`) and maybe a
device function `g` it calls, its parameters, the argnums to differentiate, the launch
(blocks, threads) and a seed for the argument values. What it draws:

- the thread's index (`FORMS`): `i = cuda.grid(1)` with a bounds guard `if i < n:` (or an
  early `return`), `if i >= 1 and i < n - 1:` for stencils, grid-stride loops
  `for i in range(cuda.grid(1), n, cuda.gridsize(1)):`, red-black parity
  `i = 2 * t + 1 + color` (`color` an int argument), two-level arrays
  `state[1 - cur, i] = f(state[cur, i - 1], ...)` (`cur` an int argument),
  `blockIdx.x * blockDim.x + threadIdx.x`, and 2-D kernels `i, j = cuda.grid(2)`;
- statements: element writes at the thread's index, at offsets (`u[i + 1]`), reversed
  (`u[n - 1 - i]`), through a permutation (`out[perm[i]]`), `=`, `+=`, `-=`, `*=`; local
  floats; per-thread loops with constant and run-time (`range(m)`) trip counts;
  branches on data; `cuda.atomic.add` into accumulators (`acc[0]`, `acc[i % 2]`,
  `hist[bins[i]]`); stencils updating an array from its neighbours; math functions;
  a device function;
- racy variants, on purpose: in-place stencils (`u[i] = u[i] + c * (u[i - 1] - 2 * u[i] +
  u[i + 1])` in one launch), `acc[0] += ...` and `acc[i % 2] += ...` without atomics,
  `hist[bins[i]] += ...` with data-dependent bins, reading an accumulator in the launch that
  adds to it atomically, two threads writing one element (`out[i // 2]`, `out[0]`).

Whether a drawn kernel is racy is decided by the oracle (oracle.py), not by the grammar: the
grammar only records the constructs it used (`Kernel.tags`). Every choice is an integer
drawn with the simplest option first, so hypothesis shrinks toward one statement at the
thread's own index. Arrays are long enough (`L = n + 2`) for every index drawn, so every
kernel runs.
"""
import dataclasses
import re

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st

N = 8                   # the int argument n: the threads that work
L = N + 2               # length of the 1-D arrays (room for u[i + 2] and perm)
ROWS = 3                # rows of the 2-D arrays of 2-D kernels
M_LOOP = 3              # the int argument m: a run-time trip count
CONSTS = ("0.5", "2.0", "-1.25", "0.3", "1.5", "-0.7")

# the thread index forms (repeated to weight them; simplest first)
FORMS = ("grid", "grid", "grid", "interior", "interior", "gridstride", "parity", "twolevel",
         "twolevel", "grid_return", "manual", "gridstride_interior", "grid2", "grid_shape")
# launches (blocks, threads): simplest first; grid-stride launches have fewer threads than n
LAUNCHES = {"grid": ((3, 4), (1, 16), (4, 2)),
            "stride": ((1, 3), (2, 2), (1, 1), (3, 4)),
            "grid2": (((1, 2), (4, 4)),)}
# statement kinds: 0 element write, 1 augmented write, 2 local float, 3 atomic add,
# 4 per-thread loop, 5 branch on data, 6 stencil, 7 plain (racy) accumulation, 8 loop over
# all other elements (pair interactions), 9 per-thread while loop, 10 local update,
# 11 branch on the thread's index, 12 loop over the rows of a 2-D array
STMT_KINDS = (0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 6, 6, 7, 8, 9, 10, 10, 11, 12)
UNARY = ("math.sin({a})", "math.cos({a})", "math.tanh({a})", "math.exp(math.tanh({a}))",
         "math.log(1.0 + {a} * {a})", "math.sqrt(1.0 + {a} * {a})", "({a} * {a})",
         "(-{a})", "math.atan({a})", "math.erf({a})", "abs({a})", "({a} ** 2)",
         "math.exp(-({a} * {a}))", "math.log1p(0.5 + math.tanh({a}))")
BINARY = ("({a} + {b})", "({a} * {b})", "({a} - {b})", "({a} / (1.5 + math.tanh({b})))",
          "math.atan2({a}, 1.0 + {b} * {b})", "math.hypot({a}, 0.5 + {b} * {b})",
          "min({a}, {b})", "max({a}, {b})", "({a} if {b} > 0.0 else {a} * {b})",
          "math.pow(1.5 + math.tanh({a}), {b})")
DEVICE_FN = ("@cuda.jit(device=True)\n"
             "def g(a, b):\n"
             "    return a * math.tanh(b) + 0.5 * a * a\n")

# parameters: (name, kind); kinds: "f" float array (L,), "p" one-element float array,
# "acc" float (2,), "hist" float (3,), "state" float (2, L), "a2" float (ROWS, L),
# "perm" a permutation of range(L), "bins" ints in [0, 3) (L,), int scalars "n", "color",
# "cur", "m", and a float scalar "c" (not differentiated); in this order in the signature
PARAM_ORDER = (("x", "f"), ("y", "f"), ("u", "f"), ("state", "state"), ("a2", "a2"),
               ("p", "p"), ("out", "f"), ("out2", "a2"), ("acc", "acc"), ("hist", "hist"),
               ("perm", "perm"), ("bins", "bins"), ("c", "c"), ("n", "n"),
               ("color", "color"), ("cur", "cur"), ("m", "m"))
FLOAT_KINDS = {"f", "p", "acc", "hist", "state", "a2"}


@dataclasses.dataclass
class Kernel:
    source: str          # module source: maybe `g`, then the kernel `k`
    params: tuple        # (name, kind), see PARAM_ORDER
    argnums: tuple       # positions of the differentiated float arrays
    launch: tuple        # (blocks, threads)
    seed: int
    tags: frozenset = frozenset()   # constructs the grammar used

    def args(self):
        """Fresh argument values from the kernel's seed."""
        rng = np.random.default_rng(self.seed)
        out = []
        for name, kind in self.params:
            if kind == "f":
                out.append(rng.uniform(-1.0, 1.0, L))
            elif kind == "p":
                out.append(rng.uniform(-1.0, 1.0, 1))
            elif kind == "acc":
                out.append(rng.uniform(-1.0, 1.0, 2))
            elif kind == "hist":
                out.append(rng.uniform(-1.0, 1.0, 3))
            elif kind == "state":
                out.append(rng.uniform(-1.0, 1.0, (2, L)))
            elif kind == "a2":
                out.append(rng.uniform(-1.0, 1.0, (ROWS, L)))
            elif kind == "perm":
                out.append(rng.permutation(L).astype(np.int64))
            elif kind == "bins":
                out.append(rng.integers(0, 3, L).astype(np.int64))
            elif kind == "n":
                out.append(N)
            elif kind == "m":
                out.append(M_LOOP)
            elif kind == "c":
                out.append(float(rng.uniform(0.1, 0.5)))
            else:                               # color, cur
                out.append(int(rng.integers(0, 2)))
        return out

    def float_params(self):
        return tuple(k for k, (_, kind) in enumerate(self.params) if kind in FLOAT_KINDS)

    def replace(self, **kw):
        return dataclasses.replace(self, **kw)


class Writer:
    """Draws one kernel's body; `draw` is hypothesis's draw function."""

    def __init__(self, draw):
        self.draw = draw
        self.tags = set()
        self.locals = []        # local float names defined at the current level
        self.n_locals = 0
        self.in_loop = None     # the loop variable, inside a per-thread loop
        self.device = False

    # choices -------------------------------------------------------------------------------
    def pick(self, n):
        return self.draw(st.integers(0, n - 1))

    def choice(self, options):
        return options[self.pick(len(options))]

    def chance(self, percent):
        """True with about this probability; False is the simpler choice."""
        return self.pick(100) >= 100 - percent

    # indices --------------------------------------------------------------------------------
    def offsets(self):
        """Offsets d with `i + d` in bounds under this form's guard."""
        return (0, 1, 2) if self.form in ("grid", "grid_return", "gridstride", "manual",
                                          "grid_shape") else (0, -1, 1)

    def at(self, d):
        return "i" if d == 0 else f"i + {d}" if d > 0 else f"i - {-d}"

    def read_index(self):
        """An index for reading a 1-D array of length L."""
        k = self.pick(10)
        if k < 6:
            return self.at(self.choice(self.offsets()))
        if k == 6:
            self.tags.add("read:reversed")
            return "n - 1 - i"
        if k == 7:
            self.tags.add("read:perm")
            return "perm[i]"
        if k == 8 and self.in_loop:
            self.tags.add("read:loop var")
            return self.in_loop
        if k == 8:
            return "i"
        self.tags.add("read:bins")
        return "bins[i]"

    def write_index(self):
        """An index for writing out/u: the thread's own element mostly, else an offset, the
        reversed element, a permutation, or (racy) one element for two threads."""
        k = self.pick(14)
        if k < 7:
            self.tags.add("write:i")
            return "i"
        if k < 9:
            d = self.choice([d for d in self.offsets() if d != 0])
            self.tags.add("write:offset")
            return self.at(d)
        if k == 9:
            self.tags.add("write:reversed")
            return "n - 1 - i"
        if k == 10:
            self.tags.add("write:perm")
            return "perm[i]"
        if k == 11:
            self.tags.add("write:pair")
            return "i // 2"
        if k == 12:
            self.tags.add("write:const")
            return "0"
        if self.in_loop:
            self.tags.add("write:loop var")
            return self.in_loop
        self.tags.add("write:i")
        return "i"

    # expressions ----------------------------------------------------------------------------
    def leaf(self):
        k = self.pick(12)
        if k < 4:
            return f"x[{self.read_index()}]"
        if k == 4:
            return "p[0]"
        if k == 5 and self.locals:
            return self.choice(self.locals)
        if k == 6:
            return self.choice(CONSTS)
        if k == 7:
            return f"y[{self.read_index()}]"
        if k == 8 and self.in_loop:
            self.tags.add("loop var in expression")
            return f"({self.in_loop} * 0.25)"
        if k == 9:
            return self.read_state() if self.form == "twolevel" else f"u[{self.read_index()}]"
        if k == 10:
            self.tags.add("read:acc")       # an accumulator read (racy if added to)
            return self.choice(("acc[0]", "hist[1]"))
        if self.pick(2):
            self.tags.add("float scalar argument")
            return "c"
        return f"x[{self.read_index()}]"

    def read_state(self):
        own = self.chance(85)
        self.tags.add("read:state[cur]" if own else "read:state[1 - cur]")
        return f"state[{'cur' if own else '1 - cur'}, {self.at(self.choice(self.offsets()))}]"

    def expr(self, depth=0):
        k = self.pick(10) if depth < 2 else 0
        if k < 4:
            return self.leaf()
        if k < 7:
            self.tags.add("math")
            return self.choice(UNARY).format(a=self.expr(depth + 1))
        if k == 9 and self.device:
            self.tags.add("device function")
            return f"g({self.expr(depth + 1)}, {self.expr(depth + 1)})"
        return self.choice(BINARY).format(a=self.expr(depth + 1), b=self.expr(depth + 1))

    # statements -----------------------------------------------------------------------------
    def target(self):
        """An element to write: out[...] or u[...] (state[1 - cur, ...] in two-level kernels)."""
        if self.form == "twolevel":
            if self.chance(85):
                self.tags.add("write:state[1 - cur]")
                return f"state[1 - cur, {self.at(self.choice(self.offsets()))}]"
            self.tags.add("write:state[cur]")
            return f"state[cur, {self.write_index()}]"
        name = "out" if self.pick(2) == 0 else "u"
        return f"{name}[{self.write_index()}]"

    def stmt(self, depth):
        kind = self.choice(STMT_KINDS) if depth < 2 else self.choice((0, 1, 2))
        if kind == 0:
            return [f"{self.target()} = {self.expr()}"]
        if kind == 1:
            op = self.choice(("+=", "*=", "-="))
            self.tags.add(f"aug {op}")
            return [f"{self.target()} {op} {self.expr()}"]
        if kind == 2:
            name = f"s{self.n_locals}"
            self.n_locals += 1
            line = f"{name} = {self.expr()}"
            self.locals.append(name)
            return [line]
        if kind == 3:
            self.tags.add("atomic")
            k = self.pick(6)
            where = ("acc, 0", "out, i", "acc, i % 2", "hist, bins[i]", "out, perm[i]",
                     "u, i + 1")[k]
            if k in (1, 4, 5) and self.form == "twolevel" or k == 5 and self.form == "parity":
                where = "acc, 0"
            return [f"cuda.atomic.add({where}, {self.expr()})"]
        if kind == 4:
            return self.loop(depth)
        if kind == 5:
            self.tags.add("branch")
            saved = list(self.locals)
            body = self.stmt(depth + 1)
            self.locals = list(saved)
            orelse = self.stmt(depth + 1) if self.chance(50) else []
            self.locals = saved
            lines = [f"if {self.expr()} > 0.0:"] + indent(body)
            return lines + (["else:"] + indent(orelse) if orelse else [])
        if kind == 6:
            return [self.stencil()]
        if kind == 7:
            self.tags.add("plain accumulation")
            where = self.choice(("acc[0]", "acc[i % 2]", "hist[bins[i]]"))
            return [f"{where} += {self.expr()}"]
        if kind == 8:
            return self.pair_loop()
        if kind == 9:
            return self.while_loop(depth)
        if kind == 10:
            if not self.locals:
                return self.stmt(depth)
            self.tags.add("local update")
            name = self.choice(self.locals)
            op = self.choice(("=", "+=", "*="))
            rhs = self.expr() if op != "=" else f"{name} * {self.expr()}"
            return [f"{name} {op} {rhs}"]
        if kind == 11:
            self.tags.add("branch on the thread index")
            test = self.choice(("i % 2 == 0", "i == 1", "i < 4"))
            saved = list(self.locals)
            body = self.stmt(depth + 1)
            self.locals = saved
            return [f"if {test}:"] + indent(body)
        return self.row_loop()

    def pair_loop(self):
        """s = sum over j != i of f(x[i], x[j]) (a thread per particle)."""
        self.tags.add("pair loop")
        acc = f"s{self.n_locals}"
        self.n_locals += 1
        src = self.choice(("x", "x", "u")) if self.form != "twolevel" else "x"
        f = self.choice(("math.exp(-d * d)", "1.0 / (1.0 + d * d)", "d * math.tanh(d)"))
        lines = [f"{acc} = 0.0", "for j in range(n):", "    if j != i:",
                 f"        d = {src}[i] - {src}[j]", f"        {acc} += {f}"]
        self.locals.append(acc)
        if self.chance(80):
            lines.append(f"{self.target()} = {acc} * {self.leaf()}")
        return lines

    def while_loop(self, depth):
        """A per-thread while loop with a counter (constant trip count)."""
        self.tags.add("while loop")
        acc = f"s{self.n_locals}"
        self.n_locals += 1
        var = f"w{depth}"
        init = self.leaf()
        saved = list(self.locals)
        self.locals.append(acc)
        body = [f"{acc} = {acc} * 0.5 + {self.expr()}", f"{var} += 1"]
        self.locals = saved + [acc]
        return [f"{acc} = {init}", f"{var} = 0", f"while {var} < 3:"] + indent(body)

    def row_loop(self):
        """A loop over the rows of a 2-D array in a 1-D kernel: reads a2[r, i], maybe writes
        out2[r, i]."""
        self.tags.add("row loop")
        acc = f"s{self.n_locals}"
        self.n_locals += 1
        lines = [f"{acc} = 0.0", f"for r in range({ROWS}):",
                 f"    {acc} += a2[r, {self.at(self.choice(self.offsets()))}] * {self.leaf()}"]
        if self.chance(50):
            self.tags.add("write:out2[r, i]")
            lines.append(f"    out2[r, i] = {acc}")
        self.locals.append(acc)
        return lines

    def stencil(self):
        """u[i] updated from u[i - 1], u[i], u[i + 1] (racy in one launch unless parity
        indices or two levels keep readers and writers apart)."""
        self.tags.add("stencil")
        c = self.choice(("p[0]", "0.25", "x[i]"))
        if self.form == "twolevel":
            return (f"state[1 - cur, i] = state[cur, i] + {c} * (state[cur, i - 1] - "
                    f"2.0 * state[cur, i] + state[cur, i + 1])")
        if self.offsets() == (0, 1, 2):
            return f"u[i] = u[i] + {c} * (u[i + 2] - 2.0 * u[i + 1] + u[i])"
        if self.pick(2) == 0:
            return f"u[i] = u[i] + {c} * (u[i - 1] - 2.0 * u[i] + u[i + 1])"
        return f"u[i] = 0.5 * (u[i - 1] + u[i + 1]) + {c} * x[i]"

    def loop(self, depth):
        runtime = self.chance(30)
        self.tags.add("loop:runtime" if runtime else "loop:constant")
        acc = f"s{self.n_locals}"
        self.n_locals += 1
        var = f"k{depth}"
        bound = "m" if runtime else self.choice(("3", "2", "i"))
        if bound == "i":
            self.tags.add("loop:triangular")
        lines = [f"{acc} = 0.0", f"for {var} in range({bound}):"]
        saved, outer = list(self.locals), self.in_loop
        self.in_loop = var
        self.locals.append(acc)
        body = [f"{acc} = {acc} * {self.choice(('0.5', 'x[i]', 'p[0]'))} + {self.expr()}"]
        if self.chance(40):
            body += self.stmt(depth + 1)
        self.in_loop = outer
        self.locals = saved + [acc]
        lines += indent(body)
        if self.chance(70):
            lines.append(f"{self.target()} = {acc}")
        return lines

    # the kernel -----------------------------------------------------------------------------
    def kernel(self):
        self.form = self.choice(FORMS)
        self.tags.add(f"form:{self.form}")
        self.device = self.chance(10)
        if self.form == "grid2":
            return self.kernel2()
        body = [self.stmt(0) for _ in range(1 + self.pick(3))]
        body = [line for lines in body for line in lines]
        if not any(re.match(r"\s*(\w+\[.*\]\s*[-+*]?=[^=]|cuda\.atomic)", b) for b in body):
            body.append(f"{self.target()} = {self.locals[-1] if self.locals else self.expr()}")
        form = self.form
        if form in ("grid", "interior", "twolevel", "grid_return", "grid_shape"):
            head = ["i = cuda.grid(1)"]
        elif form == "manual":
            head = ["i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x"]
        elif form == "parity":
            head = ["t = cuda.grid(1)", "i = 2 * t + 1 + color"]
        else:
            head = []
        if form in ("grid", "manual"):
            lines = head + ["if i < n:"] + indent(body)
        elif form == "grid_shape":
            lines = head + [f"if i < {self.choice(('x.shape[0]', 'len(x)'))} - 2:"] + \
                indent(body)
        elif form == "grid_return":
            lines = head + ["if i >= n:", "    return"] + body
        elif form in ("interior", "twolevel"):
            lines = head + ["if i >= 1 and i < n - 1:"] + indent(body)
        elif form == "parity":
            lines = head + ["if i < n - 1:"] + indent(body)
        elif form == "gridstride":
            lines = ["for i in range(cuda.grid(1), n, cuda.gridsize(1)):"] + indent(body)
        else:
            lines = ["for i in range(cuda.grid(1) + 1, n - 1, cuda.gridsize(1)):"] + \
                indent(body)
        launches = LAUNCHES["stride" if form.startswith("gridstride") else "grid"]
        return lines, self.choice(launches)

    def kernel2(self):
        """A 2-D kernel: i, j = cuda.grid(2) (adjit refuses these today)."""
        k = self.pick(3)
        rhs = ("a2[i, j] * p[0]", "math.sin(a2[i, j]) * a2[i, j + 1]",
               "a2[i, j] + a2[i, j + 1] * x[j]")[k]
        lines = ["i, j = cuda.grid(2)", f"if i < {ROWS} and j < n:",
                 f"    out2[i, j] = {rhs}"]
        return lines, LAUNCHES["grid2"][0]


def indent(lines):
    return ["    " + s for s in lines]


def used_params(text):
    words = set(re.findall(r"(?<![.\w])[A-Za-z_]\w*", text))     # not attributes (.x)
    return tuple((p, kind) for p, kind in PARAM_ORDER if p in words)


def reads_of(text, name):
    """Whether `name` is read in the kernel text: any occurrence that is not the target of a
    plain `name[...] = ` assignment (augmented assignment reads its target)."""
    for line in text.splitlines():
        stripped = re.sub(r"cuda\.atomic\.add\(\w+,", "", line.strip())
        m = re.match(rf"{name}\[[^=]*\]\s*=(?!=)(.*)$", stripped)
        rest = m.group(1) if m else stripped
        if re.search(rf"\b{name}\b", rest):
            return True
    return False


def assemble(body, device, launch, argnums_pick, seed, tags):
    """The Kernel for a drawn body: its parameters (those it uses, in PARAM_ORDER), and
    argnums from `argnums_pick` over the float arrays it reads."""
    text = "\n".join(body)
    params = used_params(text)
    readable = [k for k, (p, kind) in enumerate(params)
                if kind in FLOAT_KINDS and reads_of(text, p)]
    if not readable:                          # nothing to differentiate: read x
        return None
    chosen = [k for b, k in enumerate(readable) if argnums_pick >> b & 1] or [readable[0]]
    head = f"@cuda.jit\ndef k({', '.join(p for p, _ in params)}):"
    source = (DEVICE_FN + "\n\n" if device else "") + "\n".join([head] + indent(body)) + "\n"
    return Kernel(source, params, tuple(chosen), launch, seed, frozenset(tags))


@st.composite
def kernels(draw):
    """A Kernel (see the module docstring)."""
    w = Writer(draw)
    body, launch = w.kernel()
    pick = draw(st.integers(0, 7))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    kernel = assemble(body, "device function" in w.tags, launch, pick, seed, w.tags)
    assume(kernel is not None)      # rare: no float array is read, nothing to differentiate
    return kernel
