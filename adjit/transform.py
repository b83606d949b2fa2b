"""Entry points into the pipeline (adjit/pipeline.py) for the API and the tests."""
from .errors import AdjitError
from .frontend.source import read_function
from .pipeline import STATS_SIZE, Options, Program, Transformed, normalize, run

__all__ = ["build", "build_kernel", "normalized", "check_argnums", "Transformed", "STATS_SIZE",
           "Mode"]


class Mode:
    """Which derivative the API asks build() for: `name` (grad, value_and_grad, vjp, jvp, or
    a kind of adjit/higher.py), whether the value is returned too, whether one argument was
    asked for (an int argnums), and the trailing argument it takes ("cotangent",
    "tangent", "vector", or None)."""

    def __init__(self, name, with_value, single, extra=None):
        self.name = name
        self.with_value = with_value
        self.single = single
        self.extra = extra


def build(fn, argnums, arg_types, mode, fastmath=False, jit=True, checkpoint=None,
          tape_limit=None, cache=False, target="cpu", split_tangents=False, vector_math=True,
          outline=False):
    """Generate and compile the derivative of `fn` for arguments of these numba types.

    `mode` (name, with_value, single, extra) says which: grad, value_and_grad, vjp (with a
    trailing cotangent) or jvp (forward mode, with a trailing tangent). With jit=False nothing
    is compiled: the result's dispatcher is None and its pyfunc runs the generated source in
    the Python interpreter. `checkpoint` (snapshots, an int, or "auto") checkpoints the
    top-level time loops (reverse/checkpoint.py); `cache` keeps the compiled code on disk for
    later processes (codegen/emit.py); target="cuda" makes a CUDA device function;
    `vector_math` lets loops that vectorize call adjit's vector exp, log, tanh, ...
    (codegen/vector_math.py); `outline` lets large helpers called at several places be
    called with gradients of their own (adjit/outline.py).
    Returns a Transformed."""
    options = Options.of_mode(mode, argnums, target=target, checkpoint=checkpoint,
                              tape_limit=tape_limit, fastmath=fastmath, jit=jit, cache=cache,
                              split_tangents=split_tangents, vector_math=vector_math,
                              outline=outline)
    return run(fn, arg_types, options).compiled


def build_kernel(fn, argnums, arg_types):
    """The adjoint of a CUDA kernel (pipeline._adjoint_kernel; its sweep passes:
    codegen/kernel_sweep.py). Returns (source, python function, shadow names, python
    functions of the kernels launched after it, the position of each shadow's array)."""
    program = run(fn, arg_types, Options(argnums, derivative="kernel", name="adjoint",
                                         target="cuda"))
    return program.source, program.python, program.shadows, program.after, program.shadowed


def normalized(fn, arg_kinds=None):
    """(FunctionSource, statements, result atom, Env, NameGen) of a function in A-normal form.

    `arg_kinds` ({parameter: kind}) tells which arguments are arrays, so that vectorized
    numpy code on them is lowered to loops (normalize/vectorize.py)."""
    program = Program(fn, (), Options(()))
    program.src = read_function(fn)
    program.arg_kinds = dict(arg_kinds or {})
    normalize(program, program.options)
    return program.src, program.stmts, program.result, program.env, program.namegen


def check_argnums(fn, argnums):
    """Validate argnums against fn's parameters; returns a tuple of non-negative ints."""
    src = read_function(fn, vararg=True)
    n = len(src.params)
    where = f"'{src.loc.name}' ({src.loc.filename}, line {src.loc.firstlineno})"
    items = (argnums,) if _is_int(argnums) else \
        tuple(argnums) if isinstance(argnums, (tuple, list)) else None
    if not items or not all(_is_int(k) for k in items):
        raise AdjitError(f"argnums={argnums!r} for {where} is not an int or a non-empty tuple "
                         f"of ints. Pass argnums=0 or argnums=(0, 2): the positions of the "
                         f"arguments to differentiate ({', '.join(src.params)}).")
    if src.vararg is not None:
        named = len(src.tree.args.posonlyargs) + len(src.tree.args.args)
        for k in items:
            if not 0 <= k < named:
                which = f"positions 0 to {named - 1}" if named else "there are none"
                raise AdjitError(f"argnums {k} for {where} is not one of the parameters "
                                 f"before *{src.vararg} ({which}). adjit differentiates "
                                 f"named parameters: name the argument (def f(x, a, *rest)), "
                                 f"or pass the values as one array or tuple.")
    out = []
    for k in items:
        if not -n <= k < n:
            raise AdjitError(f"argnums {k} is out of range for {where}, which takes {n} "
                             f"argument(s): {', '.join(src.params)}. Use positions 0 to "
                             f"{n - 1} (or negative positions from the end).")
        out.append(k % n)
    if len(set(out)) != len(out):
        raise AdjitError(f"argnums={argnums!r} for {where} names an argument twice. List each "
                         f"argument position once.")
    return tuple(out)


def _is_int(k):
    return isinstance(k, int) and not isinstance(k, bool)
