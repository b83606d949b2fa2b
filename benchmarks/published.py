"""adjit on published numba code, each function called as its repository defines it.

    python benchmarks/published.py numba-stats PATH    # PATH: a checkout of numba-stats
    python benchmarks/published.py numbagg PATH        # PATH: a checkout of numbagg

Reads the code base from a checkout at run time (nothing of it is copied into adjit). For
every distribution function of numba-stats (`_logpdf`, `_pdf`, `_cdf`, `_ppf`, the
@njit(signatures) functions its public wrappers call) it differentiates the weighted sum of
the function's output with respect to every parameter, as a fit does, and checks the
gradient against central differences of numba's own compile of the same sum. For numbagg,
its gufuncs (moving windows, exponential moving windows, aggregations, correlation matrices,
fills) called as its public functions call them, on arrays with NaNs, the gradient in every
array input against central differences of numbagg's own gufunc. Prints one
line per function (ok, refused with adjit's reason, nan where the derivative is 0, wrong, or
crashed) and the counts.
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


# numbagg: its gufuncs called as numbagg's public functions call them (decorators.py:
# `gufunc(*arrays, window, min_count, axis=-1)` for moving windows, `gufunc(*arrays, alpha,
# min_weight, axes=[...])` for exponential ones, `gufunc(*arrays[, ddof], axis=-1)` for
# aggregations), inside a weighted sum (np.nansum: a window's first outputs and a variance
# of one value are NaN); the gradient in every array against central differences of
# numbagg's own gufunc
GU = None


def move1(a, w):
    return np.nansum(w * GU(a, 4, 3, axis=-1))


def move2(a, b, w):
    return np.nansum(w * GU(a, b, 4, 3, axis=-1))


def exp1(a, alpha, w):
    return np.nansum(w * GU(a, alpha, 0.0, axes=[-1, -1, (), -1]))


def exp2(a, b, alpha, w):
    return np.nansum(w * GU(a, b, alpha, 0.0, axes=[-1, -1, -1, (), -1]))


def agg1(a, w):
    return np.nansum(w * GU(a, axis=-1))


def agg_ddof(a, w):
    return np.nansum(w * GU(a, 1, axis=-1))


def matrix(a, w):
    return np.nansum(w * GU(a, axes=[(-2, -1), (-2, -1)]))


def move_matrix(a, w):
    return np.nansum(w * GU(a, 4, 3))


def fill(a, w):
    return np.nansum(w * GU(a, 2, axis=-1))


NUMBAGG = {     # module -> (function, form)
    "moving": [("move_mean", move1), ("move_sum", move1), ("move_std", move1),
               ("move_var", move1), ("move_cov", move2), ("move_corr", move2)],
    "moving_exp": [("move_exp_nanmean", exp1), ("move_exp_nansum", exp1),
                   ("move_exp_nanvar", exp1), ("move_exp_nanstd", exp1),
                   ("move_exp_nancov", exp2), ("move_exp_nancorr", exp2)],
    "funcs": [("nansum", agg1), ("nanmean", agg1), ("nanvar", agg_ddof),
              ("nanstd", agg_ddof), ("nancorrmatrix", matrix), ("nancovmatrix", matrix),
              ("ffill", fill), ("bfill", fill)],
    "moving_matrix": [("move_corrmatrix", move_matrix), ("move_covmatrix", move_matrix)],
}


def _numbagg_check(gufunc, form, rng):
    target = types.FunctionType(form.__code__, dict(form.__globals__, GU=gufunc),
                                f"{form.__name__}_{gufunc.__name__}")
    shape = (10, 3) if form is move_matrix else (3, 10)    # (observations, variables)
    arrays = [rng.normal(size=shape) for _ in range(form.__code__.co_argcount - 1)]
    for a in arrays:
        a[rng.uniform(size=shape) < 0.1] = np.nan       # the values the nan-functions skip
    if form in (exp1, exp2):
        arrays[-1] = rng.uniform(0.2, 0.8, shape[-1])       # alpha: one per element
    out_shape = np.shape(target_value(gufunc, form, arrays))
    w = rng.normal(size=out_shape)
    args = tuple(arrays) + (w,)
    argnums = tuple(range(len(arrays)))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value, grads = adjit.value_and_grad(target, argnums=argnums)(*args)
    except adjit.AdjitError as exc:
        return "refused", str(exc).split(". ")[0].split("): ", 1)[-1]
    except Exception as exc:        # noqa: BLE001 - what a user would see
        return "crash", f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
    if not math.isclose(value, target(*args), rel_tol=1e-10, abs_tol=1e-12) or \
            math.isnan(value):
        return "wrong", f"value {value} against numbagg's {target(*args)}"
    for k, g in zip(argnums, grads):
        d = np.zeros_like(args[k])
        for idx in np.ndindex(d.shape):
            hi, lo = [np.copy(a) for a in args], [np.copy(a) for a in args]
            hi[k][idx] += 1e-6
            lo[k][idx] -= 1e-6
            d[idx] = (target(*hi) - target(*lo)) / 2e-6
        nan = np.isnan(g) & (d == 0.0)
        if nan.any() and np.allclose(g[~nan], d[~nan], rtol=1e-5, atol=1e-6):
            return "nan", (f"d/d(array {k}): NaN in {nan.sum()} element(s) whose derivative "
                           "is 0 (a value the result does not use on that path has an "
                           "infinite partial: 0 * inf)")
        if not np.allclose(g, d, rtol=1e-5, atol=1e-6):
            return "wrong", f"d/d(array {k}) off by {np.max(np.abs(g - d)):.3g}"
    return "ok", ""


def target_value(gufunc, form, arrays):
    """The gufunc's own output on these arrays (for the weights' shape)."""
    extra = {move1: (4, 3), move2: (4, 3), exp1: (0.0,), exp2: (0.0,), agg1: (),
             agg_ddof: (1,), matrix: (), move_matrix: (4, 3), fill: (2,)}[form]
    return gufunc(*arrays, *extra)


def numbagg(path):
    package = types.ModuleType("numbagg")
    package.__path__ = [f"{path}/numbagg"]
    sys.modules["numbagg"] = package
    rng = np.random.default_rng(0)
    rows = []
    for module, functions in NUMBAGG.items():
        mod = importlib.import_module(f"numbagg.{module}")
        for name, form in functions:
            public = getattr(mod, name)
            gufunc = public.gufunc(np.dtype(np.float64), target="cpu") if \
                form is fill else public.gufunc(target="cpu")
            rows.append((f"{module}.{name}",) + _numbagg_check(gufunc, form, rng))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("codebase", choices=["numba-stats", "numbagg"])
    parser.add_argument("path", help="a checkout of the code base")
    args = parser.parse_args(argv)
    rows = {"numba-stats": numba_stats, "numbagg": numbagg}[args.codebase](args.path)
    for name, outcome, detail in rows:
        print(f"{name:28s} {outcome:8s} {detail}")
    counts = {k: sum(1 for r in rows if r[1] == k)
              for k in ("ok", "refused", "nan", "wrong", "crash")}
    print(", ".join(f"{v} {k}" for k, v in counts.items()), f"of {len(rows)}")
    return 1 if counts["wrong"] or counts["crash"] else 0


if __name__ == "__main__":
    sys.exit(main())
