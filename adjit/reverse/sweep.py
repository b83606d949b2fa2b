"""The rewrites of the backward sweep, as named passes with one signature.

The planner (reverse/planner.py, reverse/adjoint.py) builds the forward and the backward
sweep statement by statement, the way the rules say. These passes then rewrite the backward
sweep into what a person writing the adjoint by hand would write; none changes what it
computes. Each is a function of the Sweep (below) that rewrites its statements in place:

    copies        adjoint copies propagated (`_t6_bar = s_bar; _t5_bar = _t6_bar * x`
                  becomes `_t5_bar = s_bar * x`)                        reverse/peephole.py
    parallel      backward loops of prange loops run by numba.prange, one chunk per thread,
                  where their iterations can be split                   reverse/parallel.py
    fission       a stencil's adjoint loop split into loops each thread of a vector can run
                                                                        reverse/fission.py
    ascending     backward loops whose iterations commute run upward    reverse/ascending.py
    dots          sums of products over the tape as dot_range calls     reverse/dots.py
    fuse          backward loops over one range run as one loop, where no operand is
                  broadcast                                             reverse/fusion.py
    resets        adjoint arrays zeroed once instead of every step, or assigned their
                  first term where it is a whole array                  reverse/resets.py
    outer         a matrix-vector product's matrix adjoint added in place, not as an outer
                  product allocated and added                           reverse/outer.py
    sums          a time loop's copy-back adjoint summed where it is made
                                                                        reverse/resets.py
    accumulators  an adjoint element added to in a loop kept in a scalar
                                                                        reverse/accumulators.py
    loads         loop-invariant loads of adjoint arrays made once before their loop
                                                                        reverse/accumulators.py

PIPELINES names the passes each kind of derivative runs, in order. `adjit.show(f,
"sweep.<name>", *args)` prints the derivative's source after one of them, and
ADJIT_DEBUG_PRINT_AFTER=sweep.<name> (or `sweep` for all) prints it while adjit compiles.
"""
import ast

from .. import ir
from ..analysis.types import is_array, zero_source
from .accumulators import hoist_loads, promote_accumulators
from .ascending import ascending_loops
from .dots import dot_sums
from .dce import upward_exposed
from .fission import split_stencil_loops
from .fusion import fuse_loops
from .outer import outer_in_place
from .parallel import has_parallel_loops, parallel_backward, use_plain_bodies
from .peephole import propagate_copies
from .resets import copy_sums, drop_resets


class Sweep:
    """What the sweep passes read and rewrite: the planner's program (`prog`: init, forward,
    backward_init, backward, tape, bars) and builder, the variables' kinds, the name
    generator, the gradients the function returns (`grads`: the copies pass keeps them
    readable), the function's return statement (`ret`), what is read after the backward
    sweep (`live_after`: the tape statistics and the return) and whether the program's
    floats are all float64 and none complex (`one_dtype`: every adjoint and every term
    added into one then has one dtype). The parallel pass sets `parallel`: whether the
    function has prange loops (its forward keeps them parallel)."""

    def __init__(self, prog, builder, kinds, namegen, grads, ret, one_dtype=False):
        self.prog = prog
        self.builder = builder
        self.kinds = kinds
        self.namegen = namegen
        self.grads = grads
        self.ret = ret
        self.one_dtype = one_dtype
        self.live_after = frozenset()
        self.parallel = False

    def array_bars(self):
        return [b for v, b in self.prog.bars.names.items() if is_array(self.kinds.get(v))]

    def before_backward(self):
        """The function's statements ahead of the backward sweep."""
        return self.prog.init + self.prog.forward + self.prog.backward_init


def copies(s):
    propagate_copies(s.prog.backward, s.prog.bars.values(), live_out=s.grads)


def parallel(s):
    prog = s.prog
    s.parallel = has_parallel_loops(prog.backward) or has_parallel_loops(prog.forward)
    if not s.parallel:
        return
    b = s.builder
    prog.backward, chosen = parallel_backward(
        prog.backward, s.live_after, prog.tape, s.namegen, b.recompute, prog.init,
        prog.backward_init, b.plan.recomputed, prog.forward)
    prog.forward = use_plain_bodies(prog.forward, chosen, b.recompute)


def fission(s):
    split_stencil_loops(s.prog.backward, s.live_after, namegen=s.namegen)


def ascending(s):
    ascending_loops(s.prog.backward, s.live_after, s.namegen, s.prog.forward)


def dots(s):
    prog = s.prog
    of_bar = {b: v for v, b in prog.bars.names.items()}
    dot_sums(prog.backward, lambda name: s.kinds.get(of_bar.get(name, name)),
             prog.tape.names["f"][0], s.live_after)


def fuse(s):
    prog = s.prog
    if s.parallel:
        return
    ndims = {b: s.kinds.get(v).ndim for v, b in prog.bars.names.items()
             if is_array(s.kinds.get(v))}
    fuse_loops(prog.backward, ndims, s.live_after, s.before_backward(), s.ret)


def resets(s):
    prog = s.prog
    gone = drop_resets(prog.backward, s.array_bars(), s.live_after, s.namegen,
                       s.before_backward(), s.one_dtype)
    for stmts in (prog.init, prog.forward, prog.backward_init):
        stmts[:] = [t for t in stmts if not any(t is g for g in gone)]


def outer(s):
    outer_in_place(s.prog.backward, s.namegen)


def sums(s):
    copy_sums(s.prog.backward, s.live_after, s.before_backward())


def accumulators(s):
    prog = s.prog
    # the loops over a time loop's steps: top-level loops that read the tape (a loop
    # checkpointing would cut into blocks), and the blocks where it did
    tape_names = prog.tape.reserved_names()
    time_loops = [id(t) for t in prog.backward if isinstance(t, ast.For) and any(
        isinstance(n, ast.Name) and n.id in tape_names for n in ir.walk(t))]
    time_loops += [id(t) for t in ir.walk_stmts(prog.backward) if ir.note(t, "steps", False)]
    promote_accumulators(prog.backward, s.array_bars(), s.namegen, time_loops)


def loads(s):
    prog = s.prog
    exposed = upward_exposed(prog.backward_init + prog.backward + s.ret)
    for t in dict.fromkeys(hoist_loads(prog.backward, exposed)):
        zero = zero_source(s.kinds.get(t))
        if zero is not None:
            prog.backward_init.insert(0, ir.parse(f"{t} = {zero}")[0])


PASSES = {"copies": copies, "parallel": parallel, "fission": fission,
          "ascending": ascending, "dots": dots, "fuse": fuse, "resets": resets, "outer": outer,
          "sums": sums, "accumulators": accumulators, "loads": loads}
"""Every sweep pass by name."""

PIPELINES = {
    "adjoint": ("copies", "parallel", "fission", "ascending", "dots", "fuse", "resets", "outer",
                "sums", "accumulators", "loads"),
    "device": ("copies",),      # a CUDA device function's gradient (one thread)
}
"""The sweep passes each kind of derivative runs, in order."""

STAGES = tuple(f"sweep.{name}" for name in PIPELINES["adjoint"])
"""The sweep passes `adjit.show` can print after (`sweep.<name>`)."""
