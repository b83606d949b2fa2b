"""Hashes of the code adjit generates, to show a refactoring changed none of it.

    PYTHONPATH=.:tests:benchmarks python tests/source_hashes.py > before.txt
    (change adjit)
    PYTHONPATH=.:tests:benchmarks python tests/source_hashes.py > after.txt
    diff before.txt after.txt          # no output: byte-identical generated code
    NUMBA_ENABLE_CUDASIM=1 PYTHONPATH=.:tests:benchmarks python tests/source_hashes.py \
        --kernels                       # the same for 150 CUDA adjoint kernels

One line per generated source: the program, the derivative (grad, value_and_grad, jvp, the
checkpointed grad where a benchmark asks for it) and the sha1 of `.source`, or of the
AdjitError's message where adjit refuses. The programs: every benchmark case
(benchmarks/cases.py), every program of tests/programs.py, and the first 200 distinct
programs the fuzzer draws from a fixed seed with every construct group. Nothing is compiled
(the sources are made with jit=False), so a run takes a few minutes; `--show NAME` prints
the sources of the lines whose name starts with NAME, to read a difference.
"""
import hashlib
import sys
import warnings

import numba
import numpy as np

from adjit.errors import AdjitError
from adjit.transform import Mode, build

FUZZ_SEED = 4242
FUZZ_PROGRAMS = 200
FUZZ_KERNELS = 150
MODES = (("grad", Mode("grad", False, False)),
         ("value_and_grad", Mode("value_and_grad", True, False)),
         ("jvp", Mode("jvp", True, False, "tangent")))


def _types(fn, args, argnums, mode):
    types = tuple(numba.typeof(a) for a in args)
    if mode.extra == "tangent":
        picked = tuple(args[k] for k in argnums)
        types += (numba.typeof(picked),)
    return types


def sources_of(name, fn, args, argnums, options=None):
    """(line name, source or refusal text) of each derivative of fn."""
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    out = []
    for label, mode in MODES:
        opts = dict(options or {})
        if mode.extra and "checkpoint" in opts:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                # (outline: as grad builds it; jvp inlines every helper)
                text = build(fn, nums, _types(fn, args, nums, mode), mode, jit=False,
                             outline=True, **opts).source
        except AdjitError as exc:
            text = f"refused: {exc}"
        shown = "".join(f" {k}={sorted(v) if isinstance(v, (set, frozenset)) else v}"
                        for k, v in opts.items())      # (a set prints in any order)
        out.append((f"{name} [{label}{shown}]", text))
    return out


def benchmark_sources():
    import cases
    for name, fn, args, argnums, options in cases.cases():
        if callable(args):
            args = cases.inputs(args)
        yield from sources_of(f"bench: {name}", fn, args, argnums, options)


def program_sources():
    import programs
    for k, (fn, args, argnums) in enumerate(programs.PROGRAMS):
        yield from sources_of(f"programs {k}: {fn.__name__}", fn, args, argnums)


def _first_distinct(strategy, count):
    """The first `count` distinct draws (by .source) of a hypothesis strategy, drawn from
    FUZZ_SEED: the same ones every run."""
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings
    from hypothesis import seed as hseed
    found = {}

    class Enough(Exception):
        pass

    def one(drawn):
        if len(found) >= count:
            raise Enough
        found.setdefault(drawn.source, drawn)

    for round_ in range(10):
        settings_ = settings(max_examples=2 * count, database=None, deadline=None,
                             phases=[Phase.generate], suppress_health_check=list(HealthCheck),
                             verbosity=Verbosity.quiet)
        try:
            settings_(hseed(FUZZ_SEED + round_)(given(strategy)(one)))()
        except Enough:
            break
    return list(found.values())[:count]


def fuzz_programs():
    """The first FUZZ_PROGRAMS distinct programs drawn from FUZZ_SEED, every group drawn."""
    from fuzz import grammar
    grammar.AVOID.difference_update(grammar.GROUPS)
    return _first_distinct(grammar.programs(), FUZZ_PROGRAMS)


def fuzz_sources():
    from fuzz.check import REAL_NAMESPACE, _with_defaults, load
    for k, program in enumerate(fuzz_programs()):
        f = load(program.source, REAL_NAMESPACE)
        args = _with_defaults(f, program.args())
        yield from sources_of(f"fuzz {k} (seed {program.seed})", f, args,
                              program.float_params())


def kernel_programs():
    """The first FUZZ_KERNELS distinct kernels the CUDA kernel fuzzer draws from FUZZ_SEED."""
    from fuzz_cuda.grammar import kernels
    return _first_distinct(kernels(), FUZZ_KERNELS)


def kernel_sources():
    """Adjoint kernels (adjit.cuda.adjoint_kernel), made under numba's CUDA simulator."""
    import adjit.cuda
    from fuzz_cuda.check import load
    for k, kernel in enumerate(kernel_programs()):
        try:
            text = adjit.cuda.adjoint_kernel(load(kernel.source), kernel.argnums).source_for(
                *kernel.args())
        except AdjitError as exc:
            text = f"refused: {exc}"
        yield f"kernel {k} (seed {kernel.seed}) [adjoint kernel]", text


def main(argv):
    show = argv[argv.index("--show") + 1] if "--show" in argv else None
    np.random.seed(0)
    groups = (benchmark_sources, program_sources, fuzz_sources)
    if "--kernels" in argv:
        groups = (kernel_sources,)
    for group in groups:
        for name, text in group():
            if show is not None:
                if name.startswith(show):
                    print(f"# ==== {name}\n{text}")
                continue
            print(f"{hashlib.sha1(text.encode()).hexdigest()}  {name}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
