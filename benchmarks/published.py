"""adjit on published numba code, each function called as its repository defines it.

    python benchmarks/published.py numba-stats PATH    # PATH: a checkout of numba-stats

Reads the code base from a checkout at run time (nothing of it is copied into adjit). For
every distribution function of numba-stats (`_logpdf`, `_pdf`, `_cdf`, `_ppf`, the
@njit(signatures) functions its public wrappers call) it differentiates the weighted sum of
the function's output with respect to every parameter, as a fit does, and checks the
gradient against central differences of numba's own compile of the same sum. Prints one
line per function (ok, refused with adjit's reason, wrong, or crashed) and the counts.
"""
import argparse
import importlib
import math
import sys
import types
import warnings

import numba
import numpy as np

import adjit

# a weighted sum of fn(x, *parameters), one wrapper per number of parameters: adjit reads
# their source, and each target gets its own function object whose global FN is the target
FN = None


def weighted1(x, w, a):
    return np.sum(w * FN(x, a))


def weighted2(x, w, a, b):
    return np.sum(w * FN(x, a, b))


def weighted3(x, w, a, b, c):
    return np.sum(w * FN(x, a, b, c))


def weighted4(x, w, a, b, c, d):
    return np.sum(w * FN(x, a, b, c, d))


WRAPPERS = {1: weighted1, 2: weighted2, 3: weighted3, 4: weighted4}

# numba-stats: module -> (parameters, the domain of x)
NUMBA_STATS = {
    "norm": ((0.3, 1.4), (-2.0, 2.0)),
    "expon": ((0.1, 1.3), (0.3, 3.0)),
    "laplace": ((0.2, 0.9), (-2.0, 2.0)),
    "lognorm": ((0.6, 0.1, 1.2), (0.3, 3.0)),
    "t": ((4.0, 0.2, 1.1), (-2.0, 2.0)),
    "uniform": ((-0.5, 2.0), (-0.3, 1.3)),
    "qgaussian": ((1.5, 0.2, 1.1), (-2.0, 2.0)),
    "truncnorm": ((-1.5, 2.0, 0.3, 1.2), (-1.2, 1.8)),
    "truncexpon": ((0.0, 3.0, 0.1, 1.2), (0.2, 2.8)),
    "crystalball": ((1.5, 3.0, 0.1, 1.1), (-2.0, 2.0)),
    "argus": ((1.0, 2.0, 0.5), (0.1, 1.9)),
    "cmsshape": ((0.5, 0.3, 0.2), (0.3, 3.0)),
    "voigt": ((0.5, 0.1, 1.0), (-2.0, 2.0)),
    "tsallis": ((1.0, 0.5, 5.0), (0.2, 3.0)),
}
FUNCTIONS = ("_logpdf", "_pdf", "_cdf", "_ppf")


def _target(fn, nparams):
    base = WRAPPERS[nparams]
    namespace = dict(base.__globals__, FN=fn)
    return types.FunctionType(base.__code__, namespace, f"{base.__name__}_{fn.__name__}")


def _differences(f, args, k, h=1e-6):
    hi, lo = list(args), list(args)
    hi[k] += h
    lo[k] -= h
    return (f(*hi) - f(*lo)) / (2 * h)


def check(fn, params, domain, rng):
    """('ok' | 'refused' | 'wrong' | 'crash', detail)."""
    n = 9
    x = np.sort(rng.uniform(*domain, n)) if fn.__name__ != "_ppf" else \
        np.linspace(0.1, 0.9, n)
    w = rng.normal(size=n)
    target = _target(fn, len(params))
    args = (x, w) + tuple(float(p) for p in params)
    argnums = tuple(range(2, len(args)))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value, grads = adjit.value_and_grad(target, argnums=argnums)(*args)
    except adjit.AdjitError as exc:
        return "refused", str(exc).split(". ")[0].split("): ", 1)[-1]
    except Exception as exc:        # noqa: BLE001 - what a user would see
        return "crash", f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
    compiled = numba.njit(target)
    if not math.isclose(value, compiled(*args), rel_tol=1e-10, abs_tol=1e-12):
        return "wrong", f"value {value} against numba's {compiled(*args)}"
    for k, g in zip(argnums, grads):
        d = _differences(compiled, args, k)
        if not abs(g - d) <= 1e-5 * (1 + abs(d)):
            return "wrong", f"d/d(parameter {k - 1}) {g} against differences {d}"
    return "ok", ""


def numba_stats(path):
    # the package without its __init__ (which asks the installed distribution its version)
    package = types.ModuleType("numba_stats")
    package.__path__ = [f"{path}/src/numba_stats"]
    sys.modules["numba_stats"] = package
    rng = np.random.default_rng(0)
    rows = []
    for module, (params, domain) in NUMBA_STATS.items():
        mod = importlib.import_module(f"numba_stats.{module}")
        for name in FUNCTIONS:
            fn = getattr(mod, name, None)
            if fn is None:
                continue
            rows.append((f"{module}.{name}",) + check(fn, params, domain, rng))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("codebase", choices=["numba-stats"])
    parser.add_argument("path", help="a checkout of the code base")
    args = parser.parse_args(argv)
    rows = numba_stats(args.path)
    for name, outcome, detail in rows:
        print(f"{name:28s} {outcome:8s} {detail}")
    counts = {k: sum(1 for r in rows if r[1] == k) for k in ("ok", "refused", "wrong", "crash")}
    print(", ".join(f"{v} {k}" for k, v in counts.items()), f"of {len(rows)}")
    return 1 if counts["wrong"] or counts["crash"] else 0


if __name__ == "__main__":
    sys.exit(main())
