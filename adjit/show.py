"""Print any stage of the pipeline: `adjit.show(f, "normalized", x)`.

Every stage is runnable Python: the stages before "adjoint" compute what `f` computes (the
tests run each against `f`), "adjoint" is the reverse-mode derivative and "tangent" the
forward-mode one.
"""

from .errors import AdjitError
from .frontend.source import read_function
from .pipeline import STAGES, SWEEP_STAGES, Options, Program, normalize, run


def show(fn, stage="normalized", *example_args, argnums=0):
    """Source text of one stage of the pipeline for `fn` (see adjit.STAGES).

    "source": the function as adjit parsed it; "normalized": its A-normal form (helpers
    inlined, exits lowered to flags, vectorized numpy lowered to loops); "typed": the same
    with the kind of every variable; "hoisted": after loop-invariant size arithmetic and
    allocations moved out of loops; "active": with the variables that carry derivatives;
    "adjoint": the generated gradient (grad(fn, argnums).source_for(*example_args));
    "tangent": the generated forward-mode derivative (jvp(fn, argnums)). The stages of
    adjit.SWEEP_STAGES ("sweep.copies", "sweep.parallel", ..., "sweep.loads") are the
    reverse-mode derivative after each rewrite of its backward sweep (reverse/sweep.py):
    what each pass changed is the difference between one and the one before.

    The example arguments decide the types the code is specialized for (whether a name is an
    array decides how vectorized code is lowered). Only "source" and "normalized" can do
    without them: "normalized" then treats every argument as a float.

    "sparsity" is the normalized program rewritten to run on abstract numbers, the sets of
    inputs each value can depend on (adjit.sparsity, adjit/patterns.py).
    """
    if stage == "sparsity":
        from .patterns import rewritten
        return rewritten(fn, example_args, argnums)[0]
    return _program(fn, stage, example_args, argnums).render(stage)


def stage_callable(fn, stage, *example_args, argnums=0):
    """The Python function of one stage (for testing the passes): it takes `fn`'s arguments
    (plus the tangent for "tangent") and returns the stage's result - for the stages before
    "adjoint" what `fn` returns, for "adjoint" the gradient, for "tangent" (value, tangent)."""
    program = _program(fn, stage, example_args, argnums)
    if stage in ("adjoint", "tangent"):
        return program.compiled.pyfunc     # the generated source, run by the interpreter
    if stage in SWEEP_STAGES:
        return _sweep_callable(program, stage)
    text = program.render(stage)
    if stage == "source":
        ns = dict(getattr(fn, "py_func", fn).__globals__)
        name = program.src.fn.__name__
    else:
        ns = dict(program.env.ns)
        name = f"{program.src.fn.__name__}_{stage}"
    exec(compile(text, f"<adjit {stage}>", "exec"), ns)  # noqa: S102 - adjit's own output
    return ns[name]


def sweep_callables(fn, *example_args, argnums=0):
    """{stage: the gradient's Python function after that sweep pass} for every stage of
    SWEEP_STAGES, from one run of the pipeline (for testing the sweep passes)."""
    program = _program(fn, SWEEP_STAGES, example_args, argnums)
    return {stage: _sweep_callable(program, stage) for stage in SWEEP_STAGES}


def _sweep_callable(program, stage):
    """The derivative's functions (wrapper, checkpointed steps, helpers), with the taped
    function replaced by the one of `stage`: it takes fn's arguments, returns the gradient."""
    from .codegen.emit import compile_source
    wrapper, _ = compile_source(program.source, program.entry, program.env.ns, (), jit=False,
                                wrapper=program.wrapper)
    exec(compile(program.render(stage), f"<adjit {stage}>", "exec"),  # noqa: S102
         wrapper.__globals__)
    return wrapper


def normalized_callable(fn, *example_args):
    """The normalized program of `fn` as a Python function (for testing the pass)."""
    return stage_callable(fn, "normalized", *example_args)


def _program(fn, stage, example_args, argnums):
    if stage == SWEEP_STAGES:       # (all of them: sweep_callables)
        import numba
        from .transform import check_argnums
        options = Options(check_argnums(fn, argnums), "adjoint", "grad", jit=False,
                          single=isinstance(argnums, int))
        return run(fn, tuple(numba.typeof(a) for a in example_args), options,
                   capture=SWEEP_STAGES)
    if stage not in STAGES and stage not in SWEEP_STAGES:
        raise AdjitError(f"unknown stage {stage!r}; choose one of "
                         f"{', '.join(STAGES + SWEEP_STAGES)}")
    from .transform import check_argnums
    nums = check_argnums(fn, argnums)
    single = isinstance(argnums, int)
    if stage == "tangent":
        options = Options(nums, "tangent", "jvp", True, single, "tangent", jit=False)
    else:       # (large helpers called at several places outlined, as grad runs them,
        # with grad's default options for their gradients)
        options = Options(nums, "adjoint", "grad", jit=False, single=single, outline=True,
                          cache=None)
    if not example_args:
        if stage not in ("source", "normalized"):
            raise AdjitError(f"adjit.show(f, {stage!r}) needs example arguments: the code is "
                             f"specialized for their types. Call adjit.show(f, {stage!r}, "
                             f"*args).")
        program = Program(fn, (), options)
        program.src = read_function(fn)
        if stage == "normalized":
            normalize(program, options)
        return program
    import numba
    types = tuple(numba.typeof(a) for a in example_args)
    if stage == "tangent":
        picked = [example_args[k] for k in nums]
        types += (numba.typeof(picked[0] if single else tuple(picked)),)
    # the derivatives run to "compiled": with jit=False that only makes their Python function
    if stage in SWEEP_STAGES:
        return run(fn, types, options, capture=(stage,))
    return run(fn, types, options, until="compiled" if stage in ("adjoint", "tangent")
               else stage)
