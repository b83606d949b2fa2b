"""adjit on published numba code, each function called as its repository defines it.

    python benchmarks/published.py numba-stats PATH    # PATH: a checkout of numba-stats
    python benchmarks/published.py numbagg PATH        # PATH: a checkout of numbagg
    python benchmarks/published.py pyhpc-benchmarks PATH
    python benchmarks/published.py numba-examples PATH  # PATH: a checkout of numba-examples
    python benchmarks/published.py statsforecast PATH   # a checkout from before 2.0 (numba)

Reads the code base from a checkout at run time (nothing of it is copied into adjit). For
every distribution function of numba-stats (`_logpdf`, `_pdf`, `_cdf`, `_ppf`, the
@njit(signatures) functions its public wrappers call) it differentiates the weighted sum of
the function's output with respect to every parameter, as a fit does, and checks the
gradient against central differences of numba's own compile of the same sum. For numbagg,
its gufuncs (moving windows, exponential moving windows, aggregations, correlation matrices,
fills) called as its public functions call them, on arrays with NaNs, the gradient in every
array input against central differences of numbagg's own gufunc. For numba-examples, the
numba team's own examples (examples/ and legacy/: Black-Scholes, kernel density estimation,
histograms, Lennard-Jones, image filters and stencils, k-means, regressions, wave-2d,
@vectorize and @guvectorize ufuncs, recursion, ctypes), each function called as the example's
driver calls it (the cases are published_examples.py), one process per case: the gradient of
its weighted output at two random points against a fourth-order stencil of numba's compile of
the same sum. For statsforecast (its releases before 2.0, whose models are numba code:
statsforecast/ets.py, theta.py, ces.py, garch.py, arima.py), the objectives its optimizers
minimize, called as its model code calls them: the exponential-smoothing target
(ets_target_fn) of every error, trend and season kind with each optimization criterion,
pegelsresid_C, the theta and CES targets, the GARCH log-likelihood, and ARIMA's conditional
sum of squares and exact (Kalman filter) likelihood through arima_transpar, _make_arima,
getQ0 and arima_like; judged as the numba-examples cases are. Prints one line per function
(ok, refused with adjit's reason, nan where adjit gives NaN for a derivative that is 0 or
finite, wrong, or crashed; numba-examples also: skipped, where the example itself does not
load here) and the counts.
"""
import argparse
import importlib
import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile
import types
import warnings

import numba
import numpy as np

import adjit
import published_examples
from adjit.errors import InternalError

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


def _differentiate(target, args, argnums):
    """(value, gradients), or the row of a refusal ('refused', adjit's reason) or of any
    other exception ('crash', what a user would see)."""
    return _attempt(lambda: adjit.value_and_grad(target, argnums=argnums)(*args))


def _attempt(run):
    """run(), or the row of a refusal or crash (an InternalError is adjit's bug: a crash)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return run()
    except InternalError as exc:
        cause = exc.__cause__
        said = f" ({type(cause).__name__}: {_line(cause)[:80]})" if cause is not None else ""
        return "crash", f"InternalError: {str(exc).split('): ', 1)[-1][:120]}{said}"
    except adjit.AdjitError as exc:
        return "refused", str(exc).split(". ")[0].split("): ", 1)[-1]
    except Exception as exc:        # noqa: BLE001 - what a user would see
        return "crash", f"{type(exc).__name__}: {_line(exc)[:120]}"


def _line(exc):
    return (str(exc).strip().splitlines() or [""])[0]


def check(fn, params, domain, rng):
    """('ok' | 'refused' | 'wrong' | 'crash', detail)."""
    n = 9
    x = np.sort(rng.uniform(*domain, n)) if fn.__name__ != "_ppf" else \
        np.linspace(0.1, 0.9, n)
    w = rng.normal(size=n)
    target = _target(fn, len(params))
    args = (x, w) + tuple(float(p) for p in params)
    argnums = tuple(range(2, len(args)))
    got = _differentiate(target, args, argnums)
    if isinstance(got[0], str):
        return got
    value, grads = got
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
    got = _differentiate(target, args, argnums)
    if isinstance(got[0], str):
        return got
    value, grads = got
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


# pyhpc-benchmarks: its three numba kernels called as its `run` functions call them (the
# outputs it writes allocated as its inputs give them, the arrays it updates copied first),
# inputs from its own generate_inputs; a weighted sum of what the kernel produces,
# differentiated in each float input, checked at 12 elements of each against differences
# of the numba kernel itself
KERNEL = None


def eos(sa, ct, p, w):
    return np.sum(w * RUN(sa, ct, p))


def isoneutral(maskT, maskU, maskV, maskW, dxt, dxu, dyt, dyu, dzt, dzw, cost, cosu, salt,
               temp, zt, K_iso, w11, w22, w33, wez, wnz, wbx, wby):
    K_11 = np.zeros_like(maskT)
    K_22 = np.zeros_like(maskT)
    K_33 = np.zeros_like(maskT)
    Ai_ez = np.zeros(maskT.shape + (2, 2))
    Ai_nz = np.zeros(maskT.shape + (2, 2))
    Ai_bx = np.zeros(maskT.shape + (2, 2))
    Ai_by = np.zeros(maskT.shape + (2, 2))
    KERNEL(maskT, maskU, maskV, maskW, dxt, dxu, dyt, dyu, dzt, dzw, cost, cosu, salt, temp,
           zt, K_iso, K_11, K_22, K_33, Ai_ez, Ai_nz, Ai_bx, Ai_by)
    return (np.sum(w11 * K_11) + np.sum(w22 * K_22) + np.sum(w33 * K_33) +
            np.sum(wez * Ai_ez) + np.sum(wnz * Ai_nz) + np.sum(wbx * Ai_bx) +
            np.sum(wby * Ai_by))


def tke(u, v, w, maskU, maskV, maskW, dxt, dxu, dyt, dyu, dzt, dzw, cost, cosu, kbot,
        kappaM, mxl, forc, forc_tke_surface, tke0, dtke0, wt, wd, ws):
    t = tke0.copy()
    d = dtke0.copy()
    out_tke, out_dtke, surf = KERNEL(u, v, w, maskU, maskV, maskW, dxt, dxu, dyt, dyu, dzt,
                                     dzw, cost, cosu, kbot, kappaM, mxl, forc,
                                     forc_tke_surface, t, d)
    return np.sum(wt * out_tke) + np.sum(wd * out_dtke) + np.sum(ws * surf)


RUN = None
PYHPC = {   # benchmark -> (module, kernel, target, the inputs differentiated)
    "equation_of_state": ("eos_numba", "run", eos, ("sa", "ct", "p")),
    "isoneutral_mixing": ("isoneutral_numba", "isoneutral_diffusion_pre", isoneutral,
                          ("salt", "temp", "K_iso", "dzt")),
    "turbulent_kinetic_energy": ("tke_numba", "integrate_tke", tke,
                                 ("u", "w", "kappaM", "mxl", "forc", "forc_tke_surface",
                                  "tke0")),
}


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def pyhpc(path):
    rows = []
    rng = np.random.default_rng(0)
    for bench, (modname, kernel, form, wrt) in PYHPC.items():
        base = f"{path}/benchmarks/{bench}"
        inputs = _load(f"pyhpc_{bench}", f"{base}/__init__.py").generate_inputs(400)
        if bench == "isoneutral_mixing":
            inputs = inputs[:16]        # (the outputs it writes: the target allocates them)
        mod = _load(f"pyhpc_{modname}", f"{base}/{modname}.py")
        fn = getattr(mod, kernel)
        target = types.FunctionType(form.__code__, dict(form.__globals__, KERNEL=fn, RUN=fn),
                                    f"{form.__name__}_{kernel}")
        params = form.__code__.co_varnames[:form.__code__.co_argcount]
        produced = _produced(bench, fn, inputs)
        weights = tuple(rng.normal(size=np.shape(o)) for o in produced)
        args = tuple(np.copy(a) for a in inputs) + weights
        argnums = tuple(params.index(q) for q in wrt)
        rows.append((bench,) + _pyhpc_check(target, args, argnums, rng))
    return rows


def _produced(bench, fn, inputs):
    """What the kernel produces on these inputs (for the weights' shapes)."""
    inputs = [np.copy(a) for a in inputs]
    if bench == "equation_of_state":
        return [fn(*inputs)]
    if bench == "isoneutral_mixing":
        outputs = [np.zeros_like(inputs[0]) for _ in range(3)] + \
            [np.zeros(inputs[0].shape + (2, 2)) for _ in range(4)]
        fn(*inputs, *outputs)
        return outputs
    return list(fn(*inputs))


def _pyhpc_check(target, args, argnums, rng):
    got = _differentiate(target, args, argnums)
    if isinstance(got[0], str):
        return got
    value, grads = got
    reference = target(*[np.copy(a) for a in args])
    if not math.isclose(value, reference, rel_tol=1e-9, abs_tol=1e-9):
        return "wrong", f"value {value} against the kernel's {reference}"
    names = target.__code__.co_varnames
    judged = 0
    for k, g in zip(argnums, grads):
        x = args[k]
        for flat in rng.choice(x.size, size=min(12, x.size), replace=False):
            idx = np.unravel_index(flat, x.shape)
            # a fourth-order stencil at two steps: these kernels sum large terms that
            # cancel, so a small step drowns in rounding; an element where the two steps
            # disagree (a kink near it) is not judged
            d1, d2 = (_stencil(target, args, k, idx, r * max(1.0, abs(x[idx])))
                      for r in (1e-3, 3e-4))
            if abs(d1 - d2) > 1e-6 * (1.0 + abs(d1)):
                continue
            judged += 1
            if not abs(g[idx] - d2) <= 1e-5 * (1.0 + abs(d2)):
                return "wrong", f"d/d{names[k]}{list(idx)} {g[idx]} against differences {d2}"
    return "ok", f"{judged} elements judged"


def _stencil(target, args, k, idx, h, field=None):
    values = []
    for m in (-2, -1, 1, 2):
        moved = _copies(args)
        if field is not None:                   # a record array's field (a view of it)
            moved[k][field][idx] += m * h
        elif isinstance(moved[k], np.ndarray):
            moved[k][idx] += m * h
        else:
            moved[k] = moved[k] + m * h
        values.append(target(*moved))
    return (values[0] - 8 * values[1] + 8 * values[2] - values[3]) / (12 * h)


def _copies(args):
    """Fresh copies of the arrays (a target may write its arguments), the scalars as they
    are (a 0-d array would be another type to numba)."""
    return [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]


# numba-examples: the cases of published_examples.py, each in a process of its own (an
# example that hangs or takes the interpreter down costs its own row only). In the process:
# the example file loaded from the checkout (its driver statements blanked), adjit's value
# and gradient of the case's loss at two random points, checked against numba's compile of
# the same loss (the loss in Python where numba does not compile it: a parallel-target
# ufunc, a plain-Python caller) at every element of every differentiated argument
CASE_SECONDS = 600
ROW = "published-row: "


def numba_examples(path):
    for case in published_examples.CASES:
        command = [sys.executable, os.path.abspath(__file__), "numba-examples", path,
                   "--case", case.name]
        try:
            done = subprocess.run(command, capture_output=True, text=True,
                                  timeout=CASE_SECONDS)
        except subprocess.TimeoutExpired:
            yield case.name, "crash", f"no result in {CASE_SECONDS} s"
            continue
        said = [line[len(ROW):] for line in done.stdout.splitlines() if line.startswith(ROW)]
        if said:
            yield tuple(json.loads(said[-1]))
        else:
            last = (done.stderr.strip().splitlines() or [""])[-1]
            yield case.name, "crash", f"exit status {done.returncode}: {last[:120]}"


def example_case(path, name):
    """The row of one case, in this process."""
    case = next(c for c in published_examples.CASES if c.name == name)
    published_examples.stub_plotting()
    try:
        module = published_examples.load(path, case.file)
        fn = getattr(module, case.function) if isinstance(case.function, str) else \
            case.function(module)
        points = [case.args(np.random.default_rng(seed), module)
                  for seed in range(case.points)]
    except Exception as exc:        # noqa: BLE001 - not an adjit result
        return name, "skipped", f"the example does not load here ({type(exc).__name__}: " \
            f"{_line(exc)[:100]})"
    loss = case.loss
    target = types.FunctionType(loss.__code__, dict(loss.__globals__, FN=fn), loss.__name__)
    got = _attempt(lambda: [adjit.value_and_grad(target, argnums=case.wrt)(*_copies(a))
                            for a in points])
    if isinstance(got[0], str):
        return (name,) + got
    return (name,) + _example_check(target, points, got, case.wrt)


def _example_check(target, points, results, wrt, reference_target=None, reference_note=""):
    """Each derivative against a fourth-order stencil at two steps (relative to the
    element), judged where the two agree (a kink or rounding near an element makes them
    differ), to 1e-5 of its size plus 1% of the argument's largest derivative (the 1 of the
    other targets' 1e-5 * (1 + |d|), in the argument's own scale), plus the differences'
    rounding. NaN where the differences are finite is 'nan' when every other derivative
    agrees."""
    compiled = numba.njit(reference_target or target)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compiled(*_copies(points[0]))
        reference, whose, note = compiled, "numba's", reference_note
    except Exception:               # noqa: BLE001 - numba does not compile the loss
        reference, whose, note = target, "Python's", " (reference: the loss in Python)"
    names = target.__code__.co_varnames
    judged = total = 0
    nans = []
    own = numba.njit(target) if reference_target is not None else None
    for p, (args, (value, grads)) in enumerate(zip(points, results)):
        want = reference(*_copies(args))
        if own is not None:         # (the value: the target's own, compiled by numba)
            want = own(*_copies(args))
        if not math.isclose(value, want, rel_tol=1e-9, abs_tol=1e-9):
            return "wrong", f"point {p}: value {value} against {whose} {want}"
        noise = 1e-10 * abs(want)   # the differences' rounding: an ulp of it over the step
        for k, g_whole in zip(wrt, grads):
            a = np.asarray(args[k])
            if a.dtype.names:       # a record array: each float field judged as an array
                if np.asarray(g_whole).dtype != a.dtype:
                    return "wrong", f"d/d{names[k]} of dtype {np.asarray(g_whole).dtype}"
                parts = [(f, a[f], g_whole[f]) for f in a.dtype.names if a.dtype[f].kind == "f"]
            else:
                parts = [(None, a, g_whole)]
            for field, x, g in parts:
                result = _judge(reference, args, k, field, x, g, names, p, noise, nans)
                if isinstance(result, tuple):
                    return result
                judged, total = judged + result[0], total + result[1]
    if nans:
        return "nan", (f"NaN in {len(nans)} of {total} derivatives where the differences are "
                       f"finite (e.g. {nans[0]}); the other {judged} judged agree{note}")
    return "ok", f"{judged} of {total} derivatives judged{note}"


def _judge(reference, args, k, field, x, g, names, p, noise, nans):
    """One differentiated argument (or a record array's field) at point p: a ("wrong",
    detail) tuple, or (judged, total) counts as a list (NaNs appended to `nans`)."""
    judged = total = 0
    label = names[k] + (f".{field}" if field is not None else "")
    g = np.asarray(g, dtype=np.float64)
    if g.shape != x.shape:
        return "wrong", f"d/d{label} of shape {g.shape}, {label} {x.shape}"
    steps = [{idx: _stencil(reference, args, k, idx, r * max(1.0, abs(x[idx])), field)
              for idx in np.ndindex(x.shape)} for r in (1e-4, 3e-5)]
    unit = 0.01 * max(abs(d) for d in steps[1].values())
    for idx in np.ndindex(x.shape):
        total += 1
        d1, d2 = steps[0][idx], steps[1][idx]
        if math.isnan(g[idx]) and math.isfinite(d2):
            nans.append(f"{label}{list(idx)}: {d2:.4g}")
            continue
        if abs(d1 - d2) > 1e-6 * (abs(d1) + unit) + noise:
            continue
        judged += 1
        if not abs(g[idx] - d2) <= 1e-5 * (abs(d2) + unit) + noise:
            return "wrong", (f"point {p}: d/d{label}{list(idx)} {g[idx]} against "
                             f"differences {d2}")
    return [judged, total]


# statsforecast (releases before 2.0): the objectives its optimizers minimize, as its model
# code calls them. The modules are loaded from the checkout with what they import of
# statsmodels, pandas and the package's utils (used by their Python-level fitting, not by
# the numba functions checked here) stubbed.
ETS = THETA = CES = GARCH = ARIMA = None     # the modules, bound in each target's namespace


def sf_ets(par, y, crit, error, trend, season, damped, m, nstate, opt_beta, opt_gamma,
           opt_phi):
    return ETS.ets_target_fn(
        par, y, nstate, error, trend, season, damped, np.array([1e-4, 1e-4, 1e-4, 0.8]),
        np.array([0.9999, 0.9999, 0.9999, 0.98]), crit, 3, "both", m, True, opt_beta,
        opt_gamma, opt_phi, False, False, False, False, np.nan,
        0.0 if trend == 0 else np.nan, 0.0 if season == 0 else np.nan,
        1.0 if not damped else np.nan)


def sf_pegels(alpha, beta, init, y):
    amse, e, x, lik = ETS.pegelsresid_C(y, 4, init, "A", "A", "A", False, alpha, beta, 0.1,
                                        1.0, 3)
    return lik + np.sum(amse) + np.sum(x[-1]) + np.sum(e * e)


def sf_theta(par, y, model):
    return THETA.theta_target_fn(par, 0.0, 0.0, 0.0, True, True, True, y, model, 3)


def sf_ces(par, y, init, season, m, ncomp):
    return CES.ces_target_fn(par, 0.0, 0.0, 0.0, 0.0, True, True, season in ("P", "F"),
                             season == "F", y, m, init, ncomp, season, 3)


def sf_garch(x0, x, p, q):
    return GARCH.garch_loglik(x0, x, p, q)


def sf_css(par, x, arma, ncond):
    phi, theta = ARIMA.arima_transpar(par, arma, False)
    res, resid = ARIMA.arima_css(x, arma, phi, theta, ncond)
    return 0.5 * math.log(res)


def sf_ml(par, x, arma):
    phi, theta = ARIMA.arima_transpar(par, arma, True)
    model = ARIMA._make_arima(phi, theta, np.array([1.0]))
    res = ARIMA.arima_like(x, model[0], model[1], model[2], model[4], model[5], model[9], 0,
                           False)
    return 0.5 * (math.log(res[0] / res[2]) + res[1] / res[2])


def _twin_check(form, wide, target, points, got, wrt):
    """A model keeping its states in float32 (theta, CES): adjit's gradient of its float64
    twin judged against differences as any row's, and the float32 model's gradient within
    float32's rounding (1e-3 of each derivative plus 1e-5 of the argument's largest and 1e-8
    of any argument's largest) of the twin's; its value numba's own."""
    twin = types.FunctionType(form.__code__, dict(form.__globals__, **wide), form.__name__)
    wide_got = _attempt(lambda: [adjit.value_and_grad(twin, argnums=wrt)(*_copies(a))
                                 for a in points])
    if isinstance(wide_got[0], str):
        return wide_got[0], f"the float64 twin: {wide_got[1]}"
    verdict = _example_check(twin, points, wide_got, wrt)
    if verdict[0] != "ok":
        return verdict[0], f"the float64 twin: {verdict[1]}"
    own = numba.njit(target)
    worst = 0.0
    for args, (value, grads), (_, wide_grads) in zip(points, got, wide_got):
        if not math.isclose(value, own(*_copies(args)), rel_tol=1e-9, abs_tol=1e-9):
            return "wrong", f"value {value} against numba's {own(*_copies(args))}"
        largest = max(float(np.max(np.abs(w))) for w in wide_grads)
        for g, w in zip(grads, wide_grads):
            g, w = np.asarray(g, dtype=np.float64), np.asarray(w, dtype=np.float64)
            # (plus 1e-5 of the largest derivative of any argument: CES's derivatives in
            # its initial states are near 1e-66, which float32 states carry as 0)
            scale = np.abs(w) + 1e-2 * np.max(np.abs(w)) + 1e-5 * largest
            worst = max(worst, float(np.max(np.abs(g - w) / scale)))
    if worst > 1e-3:
        return "wrong", f"the float32 model's gradient {worst:.1e} from its float64 twin's"
    return "ok", f"{verdict[1]} on the float64 twin; the float32 model within {worst:.0e}"


def _sf_cases():
    """(name, target, point maker, argnums) of each statsforecast row."""
    t = np.arange(48)

    def series(g):
        return 10 + 0.1 * t + 2 * np.sin(2 * np.pi * t / 4) + g.normal(0, 0.3, t.size)

    def ets(par, crit, *kinds):
        return lambda g: (np.array(par) * (1 + 0.01 * g.normal(size=len(par))), series(g),
                          crit) + kinds

    rows = [(f"ets_target_fn ANN {crit}", sf_ets,
             ets([0.3, 10.0], crit, 1, 0, 0, False, 1, 1, False, False, False), (0, 1))
            for crit in ("lik", "mse", "amse", "sigma", "mae")]
    # (name, parameters, criterion, error, trend, season, damped, m, states, and which of
    # beta, gamma, phi are optimized)
    for name, par, crit, *kinds in (
            ("AAN lik", [0.3, 0.1, 10.0, 0.1], "lik", 1, 1, 0, False, 1, 2, True, False,
             False),
            ("AAdN lik", [0.3, 0.1, 0.9, 10.0, 0.1], "lik", 1, 1, 0, True, 1, 2, True,
             False, True),
            ("AAA lik", [0.3, 0.1, 0.1, 10.0, 0.1, 1.0, -1.0, 0.5], "lik", 1, 1, 1, False,
             4, 5, True, True, False),
            ("MAM lik", [0.3, 0.1, 0.1, 10.0, 0.1, 1.1, 0.9, 1.05], "lik", 2, 1, 2, False,
             4, 5, True, True, False),
            ("MMN lik", [0.3, 0.1, 10.0, 1.01], "lik", 2, 2, 0, False, 1, 2, True, False,
             False),
            ("MMdM mse", [0.3, 0.1, 0.1, 0.9, 10.0, 1.01, 1.1, 0.9, 1.05], "mse", 2, 2, 2,
             True, 4, 5, True, True, True)):
        rows.append((f"ets_target_fn {name}", sf_ets, ets(par, crit, *kinds), (0, 1)))
    rows.append(("pegelsresid_C AAA", sf_pegels,
                 lambda g: (0.3, 0.1, np.array([10.0, 0.1, 1.0, -1.0, 0.5, -0.5]), series(g)),
                 (0, 1, 2, 3)))
    rows += [(f"theta_target_fn {model}", sf_theta,
              lambda g, model=model: (np.array([9.0, 0.4, 2.0]), series(g), model), (0, 1))
             for model in ("STM", "OTM", "DSTM", "DOTM")]
    for season, par, init, m in (("N", [1.7, 1.0], [10.0, 5.0], 1),
                                 ("P", [1.7, 1.0, 0.4], [10.0, 5.0, 1.0], 4),
                                 ("F", [1.7, 1.0, 1.5, 1.1], [10.0, 5.0, 1.0, 0.5], 4)):
        rows.append((f"ces_target_fn {season}", sf_ces,
                     lambda g, season=season, par=par, init=init, m=m: (
                         np.array(par), series(g),
                         np.array([init] * m) + (m > 1) * g.normal(0, 0.1, (m, len(init))),
                         season, m, len(init)), (0, 1, 2)))
    rows += [(f"garch_loglik ({p}, {q})", sf_garch,
              lambda g, p=p, q=q: (np.full(1 + p + q, 0.1) + 0.05 * g.random(1 + p + q),
                                   g.normal(size=200), p, q), (0, 1))
             for p, q in ((1, 1), (2, 2), (2, 0))]
    # arma as statsforecast orders it: p, q, seasonal P, Q, period, d, seasonal D
    rows += [("arima_css ARMA(2, 1)", sf_css,
              lambda g: (np.array([0.4, -0.1, 0.2]), series(g),
                         np.array([2, 1, 0, 0, 1, 0, 0]), 2), (0, 1)),
             ("arima_css SARIMA(1,1,1)(1,0,1)4", sf_css,
              lambda g: (np.array([0.4, 0.2, 0.3, 0.1]), series(g),
                         np.array([1, 1, 1, 1, 4, 1, 0]), 6), (0, 1)),
             ("arima_like ARIMA(2,1,1)", sf_ml,
              lambda g: (np.array([0.4, -0.1, 0.2]), series(g),
                         np.array([2, 1, 0, 0, 1, 1, 0])), (0, 1))]
    return rows


def _stub(name, **attributes):
    if name in sys.modules:
        return
    module = types.ModuleType(name)
    module.__dict__.update(attributes)
    module.__getattr__ = lambda attr: None      # (what the Python-level fitting uses)
    sys.modules[name] = module


def statsforecast(path):
    base = next((d for d in (f"{path}/statsforecast", f"{path}/python/statsforecast")
                 if os.path.exists(f"{d}/ets.py")), None)
    if base is None:
        raise SystemExit(f"no statsforecast/ets.py under {path}")
    package = types.ModuleType("statsforecast")
    package.__path__ = [base]
    sys.modules["statsforecast"] = package
    _stub("statsforecast.utils", CACHE=False, NOGIL=False)
    for name in ("statsforecast.mstl", "pandas", "statsmodels", "statsmodels.api",
                 "statsmodels.tsa", "statsmodels.tsa.seasonal", "statsmodels.tsa.stattools"):
        _stub(name)
    modules = {name.upper(): importlib.import_module(f"statsforecast.{name}")
               for name in ("ets", "theta", "ces", "garch", "arima")}
    # theta and CES keep their states in float32 arrays: their differences are judged on
    # twins of the two modules with float64 states (the float32 code's rounding makes its
    # own differences too noisy to judge)
    wide = dict(modules)
    folder = tempfile.mkdtemp(prefix="statsforecast-float64-")
    package.__path__.append(folder)     # (adjit reads a function's source from its file)
    for name in ("theta", "ces"):
        with open(f"{base}/{name}.py", encoding="utf-8") as source:
            text = source.read().replace("dtype=np.float32", "dtype=np.float64")
        with open(f"{folder}/{name}_float64.py", "w", encoding="utf-8") as twin:
            twin.write(text)
        wide[name.upper()] = importlib.import_module(f"statsforecast.{name}_float64")
    for name, form, make, wrt in _sf_cases():
        points = [make(np.random.default_rng(seed)) for seed in range(2)]
        target = types.FunctionType(form.__code__, dict(form.__globals__, **modules),
                                    form.__name__)
        got = _attempt(lambda: [adjit.value_and_grad(target, argnums=wrt)(*_copies(a))
                                for a in points])
        if isinstance(got[0], str):
            yield (name,) + got
        elif form in (sf_theta, sf_ces):
            yield (name,) + _twin_check(form, wide, target, points, got, wrt)
        else:
            yield (name,) + _example_check(target, points, got, wrt)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("codebase", choices=["numba-stats", "numbagg", "pyhpc-benchmarks",
                                             "numba-examples", "statsforecast"])
    parser.add_argument("path", help="a checkout of the code base")
    parser.add_argument("--case", help=argparse.SUPPRESS)   # numba-examples: one case's row
    args = parser.parse_args(argv)
    if args.case:
        print(ROW + json.dumps(example_case(args.path, args.case)), flush=True)
        return 0
    rows = []
    for row in {"numba-stats": numba_stats, "numbagg": numbagg, "pyhpc-benchmarks": pyhpc,
                "numba-examples": numba_examples,
                "statsforecast": statsforecast}[args.codebase](args.path):
        name, outcome, detail = row
        print(f"{name:32s} {outcome:8s} {detail}", flush=True)
        rows.append(row)
    counts = {k: sum(1 for r in rows if r[1] == k)
              for k in ("ok", "refused", "nan", "wrong", "crash", "skipped")}
    if not counts["skipped"]:
        del counts["skipped"]
    print(", ".join(f"{v} {k}" for k, v in counts.items()), f"of {len(rows)}")
    return 1 if counts["wrong"] or counts["crash"] else 0


if __name__ == "__main__":
    sys.exit(main())
