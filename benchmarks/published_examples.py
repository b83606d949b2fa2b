"""The numba team's examples (github numba/numba-examples) as cases for published.py.

Nothing of the examples is copied here: `load` reads an example file from a checkout at run
time and runs it as a module with its top-level driver statements (prints, timing runs,
plots, data set-up, `if __name__ == "__main__"`) blanked, every other line as written and at
its own line number (adjit reads each function's source from the checkout's file). What is
ours is the table of cases at the end: which function, called how (as the example's driver
calls it, output buffers allocated as it allocates them), on what arguments (small, built as
the example builds them) and which arguments are differentiated. Not covered: CUDA-only
code, complex-valued and integer-only code (juliaset, mandel, bubblesort, histogram's
compute_bin), RNG-only code (pi.py), the jitclass, linked-list and object-mode demos, the
notebooks, and the numpy reference implementations (no numba decorator).
"""
import ast
import importlib.util
import os
import sys
import types
from typing import Callable, NamedTuple, Union

import numba
import numpy as np

# ---- loading an example file ----------------------------------------------------------------

# Per file, besides every top-level expression, loop and `if` (always driver code): the
# top-level names whose assignments set up the driver's data, the modules of `from M import`
# lines only the driver needs (scipy.misc.ascent is gone from scipy), and the functions
# numba cannot compile here at import (ufuncs.py's eager j0: its `polevl` is declared
# `f8[:]` but the global coefficient arrays are read-only).
DRIVER = {
    "legacy/blur_image.py": {"image", "filter", "result", "start", "duration", "result2",
                             "duration2", "scipy.misc"},
    "legacy/nogil.py": {"a", "b", "correct"},
    "legacy/ra24.py": {"py", "nump", "numb"},
    "legacy/sum.py": {"arr", "start", "res", "duration", "duration2"},
    "legacy/ufuncs.py": {"x", "y", "j0"},
    "legacy/movemean.py": {"arr"},
}


def _driver(statement, names):
    if isinstance(statement, (ast.Expr, ast.For, ast.While, ast.If)):
        return True
    if isinstance(statement, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id in names for t in statement.targets)
    if isinstance(statement, ast.ImportFrom):
        return statement.module in names
    return isinstance(statement, ast.FunctionDef) and statement.name in names


def _text(root, rel):
    """The file's text with its driver statements blanked, line numbers kept."""
    with open(os.path.join(root, rel)) as f:
        text = f.read()
    lines = text.split("\n")
    for statement in ast.parse(text).body:
        if _driver(statement, DRIVER.get(rel, ())):
            first = min([d.lineno for d in getattr(statement, "decorator_list", ())] +
                        [statement.lineno])
            lines[first - 1:statement.end_lineno] = [""] * (statement.end_lineno - first + 1)
    return "\n".join(lines)


def load(root, rel, name=None):
    """The example root/rel as a module (its driver blanked). A module of the same folder
    that it imports (legacy/blackscholes_numba.py: `from blackscholes import ...`) is loaded
    the same way first."""
    path = os.path.join(root, rel)
    text = _text(root, rel)
    for statement in ast.parse(text).body:
        imported = [a.name for a in statement.names] if isinstance(statement, ast.Import) \
            else [statement.module] if isinstance(statement, ast.ImportFrom) else []
        for sibling in imported:
            if sibling not in sys.modules and \
                    os.path.exists(os.path.join(os.path.dirname(path), f"{sibling}.py")):
                load(root, os.path.join(os.path.dirname(rel), f"{sibling}.py"), sibling)
    name = name or "numba_examples_" + rel[:-3].replace("/", "_").replace("-", "_")
    module = types.ModuleType(name)
    module.__file__ = path
    sys.modules[name] = module
    exec(compile(text, path, "exec"), module.__dict__)
    return module


def stub_plotting():
    """Do-nothing PIL, matplotlib and pylab where they are not installed: the examples
    import them at top level for their drivers' image files and plots only."""
    for name, parts in (("PIL", ("Image",)), ("pylab", ()),
                        ("matplotlib", ("pyplot", "pylab", "animation"))):
        if importlib.util.find_spec(name) is not None:
            continue
        for full in (name,) + tuple(f"{name}.{p}" for p in parts):
            module = types.ModuleType(full)
            module.__getattr__ = lambda attribute: (lambda *args, **kwargs: None)
            module.__path__ = []
            sys.modules[full] = module
        for p in parts:
            setattr(sys.modules[name], p, sys.modules[f"{name}.{p}"])


# ---- the losses: FN is the example's function, each case binds its own -----------------------

FN = None


def value1(x):
    return FN(x)


def value2(x, y):
    return FN(x, y)


def weighted1(a, w):
    return np.sum(w * FN(a))


def weighted2(a, b, w):
    return np.sum(w * FN(a, b))


def weighted3(a, b, c, w):
    return np.sum(w * FN(a, b, c))


def weighted4(a, b, c, d, w):
    return np.sum(w * FN(a, b, c, d))


def weighted5(a, b, c, d, e, w):
    return np.sum(w * FN(a, b, c, d, e))


def weighted6(a, b, c, d, e, f, w):
    return np.sum(w * FN(a, b, c, d, e, f))


def edges(a, bins, w):                  # numba_histogram returns (hist, bin_edges)
    hist, bin_edges = FN(a, bins)
    return np.sum(w * bin_edges)


def rows(cluster, i, j):                # the distance of two atoms, as potential_* calls it
    return FN(cluster[i], cluster[j])


def call_put(S, X, T, R, V, w1, w2):    # returns (call, put)
    call, put = FN(S, X, T, R, V)
    return np.sum(w1 * call) + np.sum(w2 * put)


def call_put_into(S, X, T, R, V, w1, w2):   # writes them into its first two arguments
    n = S.shape[0]
    call = np.zeros(n)
    put = -np.ones(n)
    FN(call, put, S, X, T, R, V)
    return np.sum(w1 * call) + np.sum(w2 * put)


def into_last(a, b, w):                 # writes its result into its last argument
    out = np.zeros_like(w)
    FN(a, b, out)
    return np.sum(w * out)


def into_first(a, b, w):                # nogil.py's make_singlethread
    result = np.empty(len(a), dtype=np.float64)
    FN(result, a, b)
    return np.sum(w * result)


def relax(A, Anew, w):                  # returns the error, writes Anew
    error = FN(A, Anew)
    return error + np.sum(w * Anew)


def wave(p, c, r, t, n, s2, s4, s, w):  # writes the future f
    f = np.zeros_like(c)
    FN(p, c, f, r, t, n, s2, s4, s)
    return np.sum(w * f)


# ---- arguments, built as the examples build them (small) ------------------------------------

def normal(*shape):
    return lambda rng, m: tuple(rng.normal(size=s) for s in shape) if shape else \
        (rng.normal(),)


def image(shape, outputs=0):    # an image, the output buffers, the weights of the result
    return lambda rng, m: (rng.random(shape) * 255.0,) + \
        tuple(np.zeros(shape) for _ in range(outputs)) + (rng.normal(size=shape),)


def histogram_args(rng, m):
    return rng.normal(loc=0.0, scale=5.0, size=40), 10, rng.normal(size=11)


def kde_args(rng, m):
    samples = rng.normal(loc=0.0, scale=5.0, size=20)
    bandwidths = 1.06 * 20 ** 0.2 * 5.0 * (1 + 0.1 * rng.random(20))
    return rng.normal(loc=0.0, scale=5.0, size=10), samples, bandwidths, rng.normal(size=10)


def _randfloat(rng, n, low, high):
    r = rng.random(n)
    return (1.0 - r) * low + r * high


def options(rng, m):
    return (_randfloat(rng, 20, 5.0, 30.0), _randfloat(rng, 20, 1.0, 100.0),
            _randfloat(rng, 20, 0.25, 10.0), 0.02, 0.30, rng.normal(size=20),
            rng.normal(size=20))


def options_pa(rng, m):
    n = 10
    return (42.0 + rng.normal(size=n), 40 + (np.arange(n) + 1.0) / n,
            0.5 + 0.01 * rng.normal(size=n), 0.2 + 0.01 * rng.normal(size=n),
            0.5 + 0.01 * rng.normal(size=n), rng.normal(size=n))


def cluster(natoms, *extra):
    return lambda rng, m: (rng.normal(0, 20, size=(natoms, 3)) - 0.5,) + extra


def kmeans_args(rng, m):
    while True:             # initial centroids that leave no cluster empty
        A, init = rng.random((20, 3)), rng.random((3, 3))
        if np.all(np.isfinite(m.kmeans(A.copy(), 3, 2, 20, 3, init.copy()))):
            return A, 3, 2, 20, 3, init, rng.normal(size=(3, 3))


def wave_args(s):
    def make(rng, m):
        return (0.1 * rng.normal(size=(s, s)), 0.1 * rng.normal(size=(s, s)),
                10 * 0.0001 / 0.01, 0.0013, 300, s // 2, s // 4, s, rng.normal(size=(s, s)))
    return make


def records(rng, m):
    a = np.zeros(4, dtype=m.record_type)
    a["x"], a["y"] = rng.normal(size=4), rng.normal(size=4)
    return a, rng.normal(size=4)


def vectorized(kernel, signatures, target):     # as the file's main() builds its ufunc
    return lambda m: numba.vectorize(signatures, target=target)(getattr(m, kernel))


# ---- the cases --------------------------------------------------------------------------------

class Case(NamedTuple):
    name: str
    file: str               # in the checkout
    function: Union[str, Callable]  # a name in the example's module, or module -> function
    loss: Callable          # one of the losses above; FN is bound to the function
    args: Callable          # (rng, module) -> the loss's arguments
    wrt: tuple              # the arguments differentiated
    points: int = 2         # random points (seeds 0, 1, ...)


HIST = "examples/density_estimation/histogram/impl.py"
KDE = "examples/density_estimation/kernel/impl.py"
BS = "examples/finance/blackscholes/blackscholes_numba.py"
LJ = "examples/physics/lennard_jones/numba_%s_impl.py"
BLUR = "legacy/gaussian-blur/gaussian-blur.py"
BLUR_PA = "legacy/gaussian-blur/gaussian-blur-pa.py"
HARRIS = "legacy/harris/harris_numba.py"
HARRIS_PA = "legacy/harris/harris_pa.py"
WAVE = "legacy/wave-2d/wave_2d%s.py"
UFUNCS = "legacy/ufuncs.py"
F8 = ["f4(f4, f4)", "f8(f8, f8)"]
F8_3 = ["f4(f4, f4, f4)", "f8(f8, f8, f8)"]

CASES = [
    Case("ex_hist_get_bin_edges", HIST, "get_bin_edges", weighted2, histogram_args, (0,)),
    Case("ex_hist_numba_histogram", HIST, "numba_histogram", edges, histogram_args, (0,)),
    Case("ex_kde_gaussian", KDE, "gaussian", value1, normal(), (0,)),
    Case("ex_kde_numba_kde", KDE, "numba_kde", weighted3, kde_args, (0, 1, 2)),
    Case("ex_kde_numba_kde_multithread", KDE, "numba_kde_multithread", weighted3, kde_args,
         (0, 1, 2)),
    Case("ex_bs_cnd_numba", BS, "cnd_numba", value1, normal(), (0,)),
    Case("ex_bs_black_scholes_numba", BS, "black_scholes_numba", call_put, options,
         (0, 1, 2, 3, 4)),
    Case("ex_lj_array_lj", LJ % "array", "lj_numba_array", value1,
         lambda rng, m: (rng.uniform(0.9, 2.0),), (0,)),
    Case("ex_lj_array_distances", LJ % "array", "distances_numba_array", weighted1,
         lambda rng, m: cluster(8)(rng, m) + (rng.normal(size=(8, 8)),), (0,)),
    Case("ex_lj_array_potential", LJ % "array", "potential_numba_array", value1, cluster(10),
         (0,)),
] + [c for tag, kind in (("scalar", "scalar"), ("prange", "scalar_prange")) for c in (
    Case(f"ex_lj_{tag}_lj", LJ % kind, f"lj_numba_{kind}", value1,
         lambda rng, m: (rng.uniform(0.9, 2.0),), (0,)),
    Case(f"ex_lj_{tag}_distance", LJ % kind, f"distance_numba_{kind}", rows,
         cluster(8, 1, 5), (0,)),
    Case(f"ex_lj_{tag}_potential", LJ % kind, f"potential_numba_{kind}", value1,
         cluster(10), (0,)),
)] + [
    Case("ex_zero_suppression", "examples/waveforms/zero_suppression/impl.py",
         "numba_zero_suppression", weighted2,
         lambda rng, m: (rng.normal(0.0, 5.0, 30) + 50 * np.clip(
             np.cos(np.linspace(0.0, 1.0, num=30) * np.pi * 10), 0, 1.0), 8.0,
             rng.normal(size=30)), (0, 1)),
    # legacy/
    Case("lg_bs_cnd_numba", "legacy/blackscholes/blackscholes_numba.py", "cnd_numba", value1,
         normal(), (0,)),
    Case("lg_bs_black_scholes_numba", "legacy/blackscholes/blackscholes_numba.py",
         "black_scholes_numba", call_put_into, options, (0, 1, 2, 3, 4)),
] + [c for tag in ("pa", "vec") for c in (
    Case(f"lg_bs{tag}_cndf2", f"legacy/blackscholes/blackscholes_{tag}.py", "cndf2",
         weighted1, normal(10, 10), (0,)),
    Case(f"lg_bs{tag}_blackscholes", f"legacy/blackscholes/blackscholes_{tag}.py",
         "blackscholes", weighted5, options_pa, (0, 1, 2, 3, 4)),
)] + [
    Case("lg_blur_filter2d_core", "legacy/blur_image.py", "filter2d_core", into_last,
         lambda rng, m: (rng.random((12, 12)) * 255.0, 1 + 0.1 * rng.normal(size=(5, 5)),
                         rng.normal(size=(12, 12))), (0, 1)),
    Case("lg_blur_filter2d", "legacy/blur_image.py", "filter2d", weighted2,
         lambda rng, m: (rng.random((12, 12)) * 255.0, 1 + 0.1 * rng.normal(size=(5, 5)),
                         rng.normal(size=(12, 12))), (0, 1)),
    Case("lg_fbcorr", "legacy/fbcorr.py", "fbcorr", into_last, normal((2, 6, 6, 3),
         (2, 3, 3, 3), (2, 2, 4, 4)), (0, 1)),
    Case("lg_gblur_gaussian_blur", BLUR, "gaussian_blur", weighted1, image((10, 10)), (0,)),
    Case("lg_gblur_gaussian_blur_3d", BLUR, "gaussian_blur_3d", weighted1, image((8, 8, 3)),
         (0,)),
    Case("lg_gblurpa_run_gaussian_blur", BLUR_PA, "run_gaussian_blur", weighted2,
         lambda rng, m: (rng.random((10, 10)) * 255.0, 3, rng.normal(size=(10, 10))), (0,)),
    Case("lg_gblurpa_run_gaussian_blur_3d", BLUR_PA, "run_gaussian_blur_3d", weighted2,
         lambda rng, m: (rng.random((8, 8, 3)) * 255.0, 3, rng.normal(size=(8, 8, 3))),
         (0,)),
] + [Case(f"lg_harris_numba_{f}", HARRIS, f, weighted1, image((10, 10)), (0,))
     for f in ("xsten", "ysten", "harris_common", "harris")] + \
    [Case(f"lg_harris_pa_{f}", HARRIS_PA, f, weighted1, image((10, 10)), (0,))
     for f in ("xsten", "ysten", "harris_common")] + [
    # the output buffers are zeros, not the example's np.empty_like (whose borders the
    # stencils leave uninitialized)
    Case("lg_harris_pa_harris", HARRIS_PA, "harris", weighted6, image((10, 10), outputs=5),
         (0,)),
    Case("lg_kmeans_numba", "legacy/k-means/k-means_numba.py", "kmeans", weighted6,
         kmeans_args, (0, 5)),
    Case("lg_kmeans_pa", "legacy/k-means/k-means_pa.py", "kmeans", weighted6, kmeans_args,
         (0, 5)),
    Case("lg_kde_numba", "legacy/kernel-density-estimation/kernel_density_estimation_numba.py",
         "kde", value1, lambda rng, m: (rng.random(10),), (0,)),
    Case("lg_kde_pa", "legacy/kernel-density-estimation/kernel_density_estimation_pa.py",
         "kde", value1, lambda rng, m: (rng.random(10),), (0,)),
    Case("lg_laplace_numba", "legacy/laplace2d/laplace2d-numba.py", "jacobi_relax_core", relax,
         lambda rng, m: (rng.random((8, 8)), rng.random((8, 8)), rng.normal(size=(8, 8))),
         (0, 1)),
    Case("lg_laplace_pa", "legacy/laplace2d/laplace2d-pa.py", "jacobi_relax_core", value2,
         lambda rng, m: (rng.random((8, 8)), rng.random((8, 8))), (0, 1)),
] + [Case(f"lg_linreg_{tag}", f"legacy/linear_regression/linear_regression_{tag}.py",
          "linear_regression", weighted5,
          lambda rng, m: (rng.random((20, 2)), rng.random((20, 3)),
                          0.1 * rng.normal(size=(3, 2)), 3, 0.01 / 20 * 50,
                          rng.normal(size=(3, 2))), (0, 1, 2, 4))
     for tag in ("numba", "pa")] + [
    Case("lg_logreg", "legacy/logistic-regression/logistic_regression.py",
         "logistic_regression", weighted4,
         lambda rng, m: (rng.random(20), rng.random((20, 3)), 0.7 + 0.1 * rng.normal(size=3),
                         3, rng.normal(size=3)), (0, 1, 2)),
    Case("lg_movemean", "legacy/movemean.py", "move_mean", weighted2,
         lambda rng, m: (rng.normal(size=(2, 10)), 3, rng.normal(size=(2, 10))), (0,)),
    Case("lg_nogil_inner_func_nb", "legacy/nogil.py", "inner_func_nb", into_first,
         lambda rng, m: (rng.random(20), rng.random(20), rng.normal(size=20)), (0, 1)),
    # func_nb = make_singlethread(inner_func_nb): a plain Python closure taking *args
    Case("lg_nogil_func_nb", "legacy/nogil.py", "func_nb", weighted2,
         lambda rng, m: (rng.random(20), rng.random(20), rng.normal(size=20)), (0, 1)),
    Case("lg_ra24", "legacy/ra24.py", "ra_numba", weighted2,
         lambda rng, m: (m.doy, np.deg2rad(45.0 + rng.normal(size=(5, 5))),
                         rng.normal(size=(5, 5))), (1,)),
    Case("lg_sum_jitsum2d", "legacy/sum.py", "jitsum2d", value1,
         lambda rng, m: (rng.standard_normal((5, 6)),), (0,)),
    # csum2d = jitsum2d.compile(double(double[:,::1])): a compiled entry point
    Case("lg_sum_csum2d", "legacy/sum.py", "csum2d", value1,
         lambda rng, m: (rng.standard_normal((5, 6)),), (0,)),
    Case("lg_ufuncs_sinc", UFUNCS, "sinc", weighted1, normal(10, 10), (0,)),
    Case("lg_ufuncs_logit", UFUNCS, "logit", weighted1,
         lambda rng, m: (rng.uniform(0.05, 0.95, size=10), rng.normal(size=10)), (0,)),
    Case("lg_ufuncs_expit", UFUNCS, "expit", weighted1,
         lambda rng, m: (3 * rng.normal(size=10), rng.normal(size=10)), (0,)),
    Case("lg_ufuncs_add", UFUNCS, "add", weighted2, normal(10, 10, 10), (0, 1)),
] + [Case(f"lg_ufuncs_{f}", UFUNCS, f, value2,
          lambda rng, m: (rng.uniform(0.1, 2.0), m.PP * (1 + 0.1 * rng.normal(size=m.PP.size))),
          (0, 1)) for f in ("polevl", "p1evl")] + \
    [c for target in ("cpu", "parallel") for c in (
        Case(f"lg_vec_discriminant_{target}", "legacy/vectorize/polynomial.py",
             vectorized("discriminant", F8_3, target), weighted3,
             lambda rng, m: (rng.random(10), rng.random(10) + 10, rng.random(10),
                             rng.normal(size=10)), (0, 1, 2)),
        Case(f"lg_vec_sum_{target}", "legacy/vectorize/sum.py", vectorized("sum", F8, target),
             weighted2, lambda rng, m: (rng.random(10), rng.random(10), rng.normal(size=10)),
             (0, 1)))] + [
    Case("lg_wave2d_numba_runWaveStencil", WAVE % "_numba", "runWaveStencil", wave,
         wave_args(16), (0, 1, 2, 3)),
    Case("lg_wave2d_pa_runWaveStencil", WAVE % "_pa", "runWaveStencil", wave, wave_args(16),
         (0, 1, 2, 3)),
    # a plain Python function calling the stencil: its reference runs in Python (slow)
    Case("lg_wave2d_plain_runWaveStencil", WAVE % "", "runWaveStencil", wave, wave_args(8),
         (0, 1, 2, 3), points=1),
    Case("lg_wave2d_rws_kernel", WAVE % "_numba", "rws_kernel", weighted3,
         lambda rng, m: (rng.normal(size=(8, 8)), rng.normal(size=(8, 8)), 0.1,
                         rng.normal(size=(8, 8))), (0, 1, 2)),
    Case("lg_mergesort", "legacy/mergesort.py", "mergesort", weighted1,
         lambda rng, m: (rng.random(6), rng.normal(size=6)), (0,)),
    Case("lg_mergesort_inplace", "legacy/mergesort.py", "mergesort_inplace", weighted1,
         lambda rng, m: (rng.random(6), rng.normal(size=6)), (0,)),
    Case("lg_structures_hypot", "legacy/structures.py", "hypot", weighted1, records, (0,)),
    # cfunc = jit(nopython=True)(use_c_sin), as the file first builds it; then of the
    # CFUNCTYPE callback of use_c_sin (the module's own cfunc)
    Case("lg_ctypes_use_c_sin", "legacy/ctypes_example.py",
         lambda m: numba.jit(nopython=True)(m.use_c_sin), value1, normal(), (0,)),
    Case("lg_ctypes_use_ctype_wrapping", "legacy/ctypes_example.py", "cfunc", value1, normal(),
         (0,)),
    Case("lg_cffi_sin_example", "legacy/cffi_example.py", "cffi_sin_example", value1,
         normal(), (0,)),
]
