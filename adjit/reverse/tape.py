"""The tape the generated code records overwritten values on.

Two growable typed stacks, float64 and int64 (booleans go on the integer one), as plain
numpy arrays and counters in the generated function: no Python objects, nothing numba cannot
compile. A push grows the array by doubling when it is full; the initial capacity is sized
so most gradients never grow. A bounded variant for CUDA device code would emit the same
pushes into `cuda.local.array`s.
"""
import ast

from ..analysis.types import FLOAT, restored_source, stored_source
from .. import ir
from ..runtime.tape import INITIAL_CAPACITY

LENGTH_SLOTS = {"f": 5, "i": 6}
"""Where in the tape statistics (codegen/assemble.py STATS_SIZE) each stack's use is kept
for the next call from Python, which starts its stack that long (runtime/tape.py
tape_start): how many values it held when the backward sweep began (everything the forward
sweep recorded; with checkpointing, the last block's steps)."""


class Tape:
    def __init__(self, namegen, bounded=False):
        self.bounded = bounded      # CUDA device code: fixed-size local arrays, no growth
        self.bounds = (0, 0)        # their sizes, set once the forward sweep is known
        self.used = {"f": False, "i": False}
        self.room = _unused(namegen, "_tape_room")     # bytes the tape may still take
        self.names = {k: tuple(_unused(namegen, n) for n in names)
                      for k, names in (("f", ("_ftape", "_fn")), ("i", ("_itape", "_in")))}
        self.peaks = {k: _unused(namegen, n) for k, n in (("f", "_fpeak"), ("i", "_ipeak"))}

    def _which(self, kind):
        return "f" if kind == FLOAT else "i"

    def push(self, var, kind, checked=True):
        """Statements pushing `var`; unchecked inside a loop whose pushes were reserved."""
        which = self._which(kind)
        self.used[which] = True
        arr, top = self.names[which]
        value = stored_source(kind, var)
        check = (f"if {top} == {arr}.shape[0]:\n    {arr} = grow_tape({arr}, {self.room})\n"
                 if checked and not self.bounded else "")
        return _parse(f"{check}{arr}[{top}] = {value}\n{top} += 1\n")

    def push_array(self, var):
        """Statements recording the elements of the array `var` (any shape) on the float
        tape: what an array-level operation's adjoint reads, kept before the array changes."""
        self.used["f"] = True
        arr, top = self.names["f"]
        return _parse(f"{arr} = reserve_tape({arr}, {top} + {var}.size, {self.room})\n"
                      f"{arr}[{top}:{top} + {var}.size] = {var}.ravel()\n{top} += {var}.size\n")

    def pop_array(self, var, into):
        """Statements taking the elements push_array(var) recorded back, as a new array
        `into` of var's shape and dtype."""
        arr, top = self.names["f"]
        return _parse(f"{top} -= {var}.size\n"
                      f"{into} = {arr}[{top}:{top} + {var}.size].reshape({var}.shape)"
                      f".astype({var}.dtype)\n")

    def reserve(self, kind, count):
        """Make room for `count` more pushes before a loop, so its pushes need no check:
        a capacity check inside a hot loop costs numba several times the push itself."""
        which = self._which(kind)
        self.used[which] = True
        if self.bounded:
            return []
        arr, top = self.names[which]
        # the call only when the tape is short: a call that hands the array back costs
        # numba two reference counts, on every iteration of the loop around it
        return _parse(f"if {top} + {count} > {arr}.shape[0]:\n"
                      f"    {arr} = reserve_tape({arr}, {top} + max({count}, 0), {self.room})\n")

    def pop(self, var, kind):
        which = self._which(kind)
        self.used[which] = True
        arr, top = self.names[which]
        value = restored_source(kind, f"{arr}[{top}]")
        return _parse(f"{top} -= 1\n{var} = {value}\n")

    def reserved_names(self):
        return {name for pair in self.names.values() for name in pair} | {self.room}

    def bytes_expr(self):
        """Source of the bytes the tape stacks hold at the end (their capacity)."""
        parts = [f"{self.names[w][0]}.nbytes" for w in ("f", "i") if self.used[w]]
        return " + ".join(parts) or "0"

    def allocations(self, limit, cap="0", stats=None, kept=None):
        """The tape's allocations: its room (tape_room of `limit`, capped by the generated
        function's parameter `cap` where it has one) and its initial arrays, as long as the
        last call used them where the function has the statistics parameter `stats`, taken
        from the buffer its parameter `kept` holds where that is long enough (runtime/tape.py
        tape_from: the float tape first, the integer tape after it)."""
        if self.bounded:
            out = []
            for which, size, dtype in (("f",) + (self.bounds[0], "numba.float64"),
                                       ("i",) + (self.bounds[1], "numba.int64")):
                if self.used[which] and size:
                    arr, top = self.names[which]
                    out += _parse(f"{arr} = cuda.local.array({size}, {dtype})\n{top} = 0\n")
            return out
        out = _parse(f"{self.room} = tape_room({-1 if limit is None else int(limit)}, {cap})\n")
        for which, dtype in (("f", ""), ("i", ", np.int64")):
            if self.used[which]:
                arr, top = self.names[which]
                size = INITIAL_CAPACITY if stats is None else \
                    f"tape_start({stats}[{LENGTH_SLOTS[which]}], {self.room})"
                if kept is None:
                    new = f"np.empty({size}{dtype})"
                elif which == "f":
                    new = f"tape_from({kept}, {size})"
                else:
                    skip = f"{self.names['f'][0]}.shape[0]" if self.used["f"] else "0"
                    new = f"int_tape_from({kept}, {skip}, {size})"
                out += _parse(f"{arr} = {new}\n{top} = 0\n")
        return out

    def peak_statements(self):
        """Statements noting how many values each stack holds (at the start of the backward
        sweep), for length_statements."""
        if self.bounded:
            return []
        return self._each_stack(lambda w: f"{self.peaks[w]} = {self.names[w][1]}")

    def peak_updates(self):
        """Statements raising the noted use to what each stack holds now (after a
        checkpointed block's steps were recorded, before their adjoints pop them)."""
        if self.bounded:
            return []
        return self._each_stack(
            lambda w: f"{self.peaks[w]} = max({self.peaks[w]}, {self.names[w][1]})")

    def length_statements(self, stats):
        """Statements keeping in `stats` how many values each stack held at most where the
        backward sweep began and where a checkpointed block was recorded: the next call
        starts it that long. (Its use, not its capacity: a call that needs less than the
        last one then starts smaller again, where a start as large as the largest call's
        would map fresh memory for every small call.)"""
        return self._each_stack(lambda w: f"{stats}[{LENGTH_SLOTS[w]}] = {self.peaks[w]}")

    def _each_stack(self, line):
        """One statement, `line(w)`, for each stack this gradient uses (w: "f", "i")."""
        return _parse("".join(line(w) + "\n" for w in ("f", "i") if self.used[w]))


def unsigned_slots(parts, tape):
    """Index the tape's slots with unsigned integers in `parts` ((title, stmts) pairs, the
    CPU function about to be rendered), in place: `_ftape[np.uint64(_fbase1 + (i - 1))]`.

    numba wraps a negative signed index around (`a[-1]` is the last element), a compare and
    select on every access that LLVM removes only where it proves the index is not negative.
    A slot computed from a base the loop does not know (`_fbase1 + (i - 1)`) keeps it, and
    its loop then loads one element at a time instead of a vector. Slots are never
    negative, so the unsigned index reads the same element without the test. A plain top
    (`_ftape[_fn]`, a push or pop) keeps its form: the test costs little there and the
    source reads better."""
    arrays = {tape.names[w][0] for w in ("f", "i")}
    for _, stmts in parts:
        for stmt in stmts:
            for node in ir.walk(stmt):
                if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and \
                        node.value.id in arrays and isinstance(node.slice, ast.BinOp):
                    node.slice = ast.Call(
                        func=ast.Attribute(value=ast.Name(id="np", ctx=ast.Load()),
                                           attr="uint64", ctx=ast.Load()),
                        args=[node.slice], keywords=[])
    return parts


def shared_room(parts, tape):
    """Where a gradient uses both stacks, tell each stack's growth what the other has
    allocated, in place: `grow_tape(_ftape, _tape_room, _itape.nbytes)`, so that tape_limit
    bounds the two together (runtime/tape.py reserve_tape). Both stacks are allocated at the
    top of the function, before any push."""
    if tape.bounded or not (tape.used["f"] and tape.used["i"]):
        return parts
    other = {tape.names["f"][0]: tape.names["i"][0], tape.names["i"][0]: tape.names["f"][0]}
    for _, stmts in parts:
        for stmt in stmts:
            for node in ir.walk(stmt):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                        node.func.id in ("grow_tape", "reserve_tape") and node.args and \
                        isinstance(node.args[0], ast.Name) and node.args[0].id in other and \
                        isinstance(node.args[-1], ast.Name) and node.args[-1].id == tape.room:
                    node.args.append(ast.Attribute(
                        value=ast.Name(id=other[node.args[0].id], ctx=ast.Load()),
                        attr="nbytes", ctx=ast.Load()))
    return parts


def _unused(namegen, name):
    """`name`, or `name_`, ... if the user's code already uses it."""
    while name in namegen.taken:
        name += "_"
    namegen.reserve(name)
    return name


def _parse(text):
    return ast.parse(text).body


def static_pushes(stmts, tape, error):
    """(float pushes, int pushes) the statements make at most, for a tape of fixed size:
    loops multiply by their trip count, which must be a constant; both branches of an `if`
    count. `error(loop)` raises for a loop that records with a trip count not known before
    the code runs."""
    names = {tape.names["f"][0]: 0, tape.names["i"][0]: 1}

    def count(block):
        total = [0, 0]
        for s in block:
            if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Subscript) and \
                    isinstance(s.targets[0].value, ast.Name) and s.targets[0].value.id in names:
                total[names[s.targets[0].value.id]] += 1
            elif isinstance(s, ast.If):
                for part in (count(s.body), count(s.orelse)):
                    total[0] += part[0]
                    total[1] += part[1]
            elif isinstance(s, (ast.For, ast.While)):
                inner = count(s.body)
                if inner == [0, 0]:
                    continue
                trips = _constant_trips(s)
                if trips is None:
                    raise error(s)
                total[0] += trips * inner[0]
                total[1] += trips * inner[1]
        return total

    return tuple(count(stmts))


def _constant_trips(loop):
    if not isinstance(loop, ast.For):
        return None
    args = loop.iter.args
    if not all(isinstance(a, ast.Constant) and isinstance(a.value, int) for a in args):
        return None
    return len(range(*[a.value for a in args]))
