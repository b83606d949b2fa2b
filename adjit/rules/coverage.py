"""docs/coverage.md from the registry: which numba-supported functions adjit differentiates.

    python -m adjit.rules.coverage            # write docs/coverage.md (make coverage)
    python -m adjit.rules.coverage --refresh  # re-read the list from the installed numba

The rows are the numpy, numpy.linalg, numpy.random and math functions numba compiles in
nopython mode (numba_functions.txt: read once from numba's own typing registries, its ufunc
database and its math declarations, and kept in the repository so that the table does not
change with the installed numba), joined with the registry's entries.
tests/test_coverage.py fails when docs/coverage.md is not what this module writes.
"""
import argparse
import math
import warnings
import pathlib

import numpy as np

from .registry import REGISTRY
from . import table  # noqa: F401 - the entries register themselves

HERE = pathlib.Path(__file__).resolve().parent
LIST = HERE / "numba_functions.txt"
DOC = HERE.parent.parent / "docs" / "coverage.md"

_MODULES = (("np.linalg", np.linalg), ("np.random", np.random), ("np", np), ("math", math))


def numba_functions():
    """Names of the functions numba supports (numba_functions.txt), in order."""
    return [line.strip() for line in LIST.read_text().splitlines()
            if line.strip() and not line.startswith("#")]


def refresh():
    """Read the supported numpy and math functions from the installed numba."""
    import importlib
    from numba.core.registry import cpu_target
    from numba.core.typing import mathdecl, templates
    from numba.np import ufunc_db
    for name in ("numba.np.arraymath", "numba.np.linalg", "numba.np.npyfuncs",
                 "numba.np.arrayobj", "numba.np.polynomial"):
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    ctx = cpu_target.typing_context
    ctx.refresh()
    objs = set(ctx._functions) | {f for f, _ in templates.builtin_registry.globals}
    objs |= {f for f, _ in mathdecl.registry.globals} | set(ufunc_db.get_ufuncs())
    names = set()
    warnings.simplefilter("ignore")     # numpy's deprecated aliases warn when read
    for obj in objs:
        attr = getattr(obj, "__name__", None)
        for prefix, module in _MODULES:
            try:
                found = getattr(module, attr, None) if attr else None
                # (np.random's functions are bound methods: equal, not the same object)
                if found is obj or (module is np.random and found is not None and
                                    found == obj):
                    names.add(f"{prefix}.{attr}")
                    break
            except TypeError:
                pass
    header = ("# numpy, numpy.linalg and math functions numba compiles in nopython mode, read\n"
              "# from the installed numba by `python -m adjit.rules.coverage --refresh`\n")
    LIST.write_text(header + "\n".join(sorted(names)) + "\n")


def _object(name):
    prefix, attr = name.rsplit(".", 1)
    module = dict(_MODULES)[prefix]
    return getattr(module, attr, None)


_FAMILY = {"scalar": "on numbers", "elementwise": "elementwise", "reduction": "reduction",
           "array": "whole arrays", "allocate": "allocation", "helper": ""}


def _row(name):
    entry = REGISTRY.get(_object(name))
    if entry is None:
        return f"| `{name}` | | | | | |"
    if entry.family in ("scalar", "elementwise"):
        args = _differentiable(entry)
        cuda = "yes" if entry.cuda and (entry.family == "scalar" or not callable(entry.scalar)
                                        or isinstance(entry.scalar, type) or
                                        getattr(entry.scalar, "__module__", "") in
                                        ("math", "builtins")) else "CPU"
        how = _FAMILY[entry.family]
        notes = "; ".join(n for n in (how, entry.notes) if n)
        return f"| `{name}` | yes | yes | {cuda} | {args} | {notes} |"
    if entry.family == "reduction":
        return f"| `{name}` | yes | yes | | all | reduction, `axis=`; {entry.notes or ''} |" \
            .replace("; |", " |")
    if entry.family == "draw":
        params = ", ".join(q for q in entry.params if q != "size" and q not in entry.refused)
        refused = f"; none in {', '.join(entry.refused)} (refused)" if entry.refused else ""
        return f"| `{name}` | yes | yes | | {params} | a random draw, numba's transformation " \
            f"of its standard draw: the pathwise derivative{refused} |"
    if entry.family == "inactive":
        refused = f"; a derivative into {', '.join(entry.refused)} is refused" \
            if entry.refused else ""
        return f"| `{name}` | yes | yes | | none (no derivative) | called as it is: " \
            f"{entry.notes}{refused} |"
    if entry.family == "none":
        return f"| `{name}` | - | - | - | none | no derivative: {entry.notes}; called as it " \
            f"is |"
    if entry.family == "unsupported":
        return f"| `{name}` | no | no | | | not differentiated: {entry.notes} |"
    if entry.family == "allocate":
        return f"| `{name}` | yes | yes | | none | new array (no derivative to flow) |"
    if entry.handler == "packed":
        return f"| `{name}` | yes | yes | | a | at array level: {entry.notes} |"
    if entry.handler == "keep":
        return f"| `{name}` | yes | yes | | all | at array level: {entry.notes} |"
    return f"| `{name}` | yes | yes | | {entry.through or 'array'} | " \
        f"{entry.notes or 'whole arrays'} |"


def _differentiable(entry):
    if isinstance(entry.scalar, type):          # lowered to an operator (np.add is `+`)
        entry = REGISTRY.get(entry.scalar)
    if entry.rule is not None:
        args = entry.differentiable
        return ", ".join(args) if args else "none (piecewise constant)"
    return {"pow": "a, b", "square": "x", "neg": "x", "where": "a, b (not the condition)",
            "clip": "a, bounds"}.get(entry.scalar, "")


def render():
    names = numba_functions()
    rows = [_row(n) for n in names]
    done = sum(1 for r in rows if "| yes |" in r)
    none = sum(1 for r in rows if "| no derivative: " in r)
    reasoned = sum(1 for r in rows if "| not differentiated: " in r)
    lines = [
        "# Coverage: what adjit differentiates of numba's numpy and math",
        "",
        "Generated by `make coverage` from adjit's registry of primitives (adjit/rules/) and the",
        "list of functions numba compiles in nopython mode (adjit/rules/numba_functions.txt).",
        "Do not edit by hand: tests/test_coverage.py fails when this file is out of date.",
        "",
        f"{done} of {len(names)} functions are differentiated; {none} have no derivative "
        f"to take",
        "(boolean, integer or complex results, types, constant arrays: rows marked `-`, with",
        f"the reason); {len(names) - done - none} are not differentiated, {reasoned} of them for "
        "the reason",
        "their row gives (with what to write instead; empty rows: not yet).",
        "",
        "*Reverse* and *forward*: grad / vjp",
        "and jvp differentiate calls of it; *CUDA*: it works in device functions and adjoint",
        "kernels on scalars (CPU: on the CPU only); *differentiable*: the arguments a",
        "derivative flows through. A function with an empty row has no derivative rule yet:",
        "it is called as it is (its result type is numba's) wherever no derivative flows",
        "through it - on data, integers, values under `stop_gradient`, or when its result is",
        "an integer or only reaches conditions and indices - and a call through which a",
        "derivative would have to flow is an AdjitError naming it.",
        "",
        "Operators (`+ - * / ** % // @`, unary `-`, comparisons) and the builtins `abs`, `min`,",
        "`max`, `float`, `int`, `round`, `len` are supported too; array methods (`a.sum()`,",
        "`a.T`, `a.reshape(...)`, ...) follow the functions they name. Random draws",
        "(`np.random.*`) run once per evaluation, in program order, and the backward sweep",
        "reads what they returned; with parameters that carry a derivative they have the",
        "pathwise derivative of numba's transformation of its standard draw (rows below),",
        "and a derivative into a parameter drawn by rejection or as a count (gamma's shape,",
        "poisson's lam) is refused. Every argument form numba accepts is honoured or",
        "refused by name (rules/forms.py lists them; tests/test_arguments.py runs them).",
        "",
        "| function | reverse | forward | CUDA | differentiable | notes |",
        "|---|---|---|---|---|---|",
    ] + rows
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--refresh", action="store_true",
                        help="re-read numba_functions.txt from the installed numba first")
    opts = parser.parse_args(argv)
    if opts.refresh:
        refresh()
    DOC.write_text(render())
    print(f"wrote {DOC}")


if __name__ == "__main__":
    main()
