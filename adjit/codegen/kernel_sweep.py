"""The rewrites of a CUDA adjoint kernel's backward sweep, as named passes with one signature.

The kernel's counterpart of reverse/sweep.py: the planner builds the kernel's two sweeps
(one thread's part of the primal, then its adjoint), and these passes make the backward
sweep safe and fast when thousands of threads run it at once; none changes what it
computes. Each is a function of a KernelSweep that rewrites `s.backward`:

    copies        adjoint copies propagated; the sweep is then the shadows' setup and the
                  adjoint statements                                    reverse/peephole.py
    gather        where every thread owns an output element, each thread gathers its own
                  elements' adjoints instead of scattering into others' (with a second,
                  zeroing kernel for the output shadows it read)        codegen/gather.py
    atomics       an addition into a shadow element another thread may add to as well
                  becomes cuda.atomic.add (analysis/races.py)           codegen/assemble.py
    block_sums    an atomic add every thread makes to the same element summed over the
                  block first: one atomic per block                     codegen/assemble.py
    loop_atomics  atomic adds to one element in a loop summed in a register, one atomic
                  after the loop                                        codegen/assemble.py
    late_zeroing  an output shadow zeroed after its last read           codegen/assemble.py

KERNEL_PASSES names them in order. ADJIT_DEBUG_PRINT_AFTER=sweep.<name> (or `sweep`) prints
the kernel's source after one of them while adjit compiles (pipeline._run_sweep).
"""
from . import assemble, gather as gathering
from ..reverse.peephole import propagate_copies


class KernelSweep:
    """What the kernel's sweep passes read and rewrite: the planner's program (`prog`) and
    builder, the normalized statements (`stmts`), the thread ownership of elements
    (analysis/races.py), the argnums arrays (`wrt`) and the arrays the kernel writes
    (`written`), their shadows (`shadows`: the kernel's extra arguments), the array each
    shadow belongs to (`arrays_of`), the name generator. The passes leave `backward` (the
    sweep, once `copies` made it), `zero` (the statements of the zeroing kernel that runs
    after a gathered one, or None), `gathered` (the shadows the gather pass owns) and
    `block_sums` (the statements that add a block's sums, or [])."""

    def __init__(self, prog, builder, stmts, ownership, wrt, written, shadows, arrays_of,
                 namegen):
        self.prog = prog
        self.builder = builder
        self.stmts = stmts
        self.ownership = ownership
        self.wrt = wrt
        self.written = written
        self.shadows = shadows
        self.arrays_of = arrays_of
        self.namegen = namegen
        self.backward = None
        self.zero = None
        self.gathered = frozenset()
        self.block_sums = []

    def shared_bars(self):
        """The adjoints of the block's shared-memory tiles."""
        return {self.builder.bar(a) for a in self.ownership.shared}


def copies(s):
    propagate_copies(s.prog.backward, s.prog.bars.values(), live_out=s.shadows)
    s.backward = s.prog.backward_init + s.prog.backward


def gather(s):
    plan = gathering.plan(s.stmts, s.prog.forward, s.backward, s.ownership, s.wrt,
                          s.written, s.builder.bar)
    if plan is not None:        # each thread gathers its own elements' adjoints
        s.backward, s.zero = gathering.gather_kernel(
            plan, s.prog.forward, s.backward, s.builder.bar, s.written, s.ownership,
            set(s.arrays_of), s.namegen)
        s.gathered = frozenset(s.builder.bar(q) for q in plan.arrays)


def atomics(s):
    arrays_of = dict(s.arrays_of)
    arrays_of.update({s.builder.bar(a): a for a in s.ownership.shared})   # the block's tiles
    s.backward = assemble.atomic_shadow_updates(s.backward, set(s.shadows) | s.shared_bars(),
                                                s.ownership, arrays_of, s.gathered)


def block_sums(s):
    s.backward, s.block_sums = assemble.block_summed_atomics(
        s.prog.forward, s.backward, s.namegen, s.shared_bars())


def loop_atomics(s):
    s.backward = assemble.loop_atomics(s.backward, s.namegen)


def late_zeroing(s):
    s.backward = assemble.late_zeroing(s.backward, set(s.shadows))


PASSES = {"copies": copies, "gather": gather, "atomics": atomics, "block_sums": block_sums,
          "loop_atomics": loop_atomics, "late_zeroing": late_zeroing}
"""Every kernel sweep pass by name."""

KERNEL_PASSES = ("copies", "gather", "atomics", "block_sums", "loop_atomics", "late_zeroing")
"""The order they run in."""
