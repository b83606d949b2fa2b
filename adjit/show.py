"""Print any stage of the pipeline: `adjit.show(f, "normalized")`.

Every stage is runnable Python: the normalized program computes what `f` computes, and the
tests run it against `f`.
"""
import ast

from .codegen.emit import render
from .errors import AdjitError

STAGES = ("source", "normalized", "adjoint")


def show(fn, stage="normalized", *example_args, argnums=0):
    """Source text of a pipeline stage of `fn`.

    "source" is the function as adjit parsed it; "normalized" its A-normal form (calls
    inlined, exits lowered to flags, vectorized numpy lowered to loops), a function returning
    the same value; "adjoint" the generated gradient for the example arguments (the same
    text as `grad(fn).source`). Vectorized code needs the example arguments for
    "normalized" too: whether a name is an array decides how it is lowered.
    """
    from .frontend.source import read_function
    from .transform import normalized
    if stage == "source":
        return ast.unparse(read_function(fn).tree) + "\n"
    if stage == "normalized":
        src, stmts, result, env, _ = normalized(fn, _kinds(fn, example_args))
        return render(f"{src.fn.__name__}_normalized", src.params,
                      [(None, stmts + [ast.Return(value=result)])])
    if stage == "adjoint":
        from .api import grad
        return grad(fn, argnums=argnums).source_for(*example_args)
    raise AdjitError(f"unknown stage {stage!r}; choose one of {', '.join(STAGES)}")


def _kinds(fn, args):
    if not args:
        return None
    import numba
    from .analysis.types import kind_of_numba_type
    from .frontend.source import read_function
    params = read_function(fn).params
    return {p: kind_of_numba_type(numba.typeof(a)) for p, a in zip(params, args)}


def normalized_callable(fn, *example_args):
    """The normalized program of `fn` as a Python function (for testing the pass)."""
    from .transform import normalized
    src, stmts, result, env, _ = normalized(fn, _kinds(fn, example_args))
    text = render("normalized", src.params, [(None, stmts + [ast.Return(value=result)])])
    ns = dict(env.ns)
    exec(compile(text, "<adjit-normalized>", "exec"), ns)  # noqa: S102
    return ns["normalized"]
