"""adjit.runtime.vmath's accuracy and speed: its functions in a numba loop against the exact
result, numpy's results and special values, and against math.* in the same loop and numpy's
ufuncs, compiled at NUMBA_OPT=3.

Run `python benchmarks/vmath.py` (options: --n, --repeats, --f32 for the float32 tables too,
--docs to write docs/vector_math.md with both precisions: `make vmath-docs`). Two tables per
precision. Accuracy: about 2n arguments over each function's whole domain, the error in ulps
of the exact result (long double reference, where numpy's long double has 64 bits: the
largest, the mean, the share correctly rounded), the largest distance in doubles (floats)
from numpy's result, and how many special arguments (infinities, nan, signed zeros,
subnormals, thresholds) give numpy's value. Speed: the median of `repeats` runs over n
elements written into a preallocated array: the vmath function in a numba loop, the same
loop with math.* (numba lowers it to one libm call per element: no SIMD), and numpy's ufunc
with out= (scipy.special.expit for sigmoid), their ratios and the SIMD registers seen in the
vmath loop's machine code (zmm: AVX-512, ymm: AVX2, xmm: SSE packed ops, or "scalar"). The
load average is printed: the other cores' load moves these times.
"""
import argparse
import math
import os
import platform
import re
import sys
import time

# The comparison is about optimized code: LLVM vectorizes only at -O2 and above (the test
# suite runs at NUMBA_OPT=0), so the level is set here, before numba is imported.
os.environ["NUMBA_OPT"] = "3"
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numba  # noqa: E402
import numpy as np  # noqa: E402
import scipy.special  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from adjit.runtime import vmath  # noqa: E402

LD = np.longdouble
EXTENDED = np.finfo(LD).nmant >= 63


def loop1(f):
    """A numba loop applying the scalar function f elementwise into `out`."""
    @numba.njit
    def run(a, out):
        for i in range(a.size):
            out[i] = f(a[i])
    return run


def loop2(f):
    """A numba loop applying the binary scalar function f elementwise into `out`."""
    @numba.njit
    def run(a, b, out):
        for i in range(a.size):
            out[i] = f(a[i], b[i])
    return run


@numba.njit
def _math_sigmoid(x):
    e = math.exp(-abs(x))
    return (1.0 if x >= 0.0 else e) / (1.0 + e)


@numba.njit
def _math_pow(x, y):
    return x ** y


_ONE32 = np.float32(1.0)
_ZERO32 = np.float32(0.0)


@numba.njit
def _math_sigmoidf(x):
    e = math.exp(-abs(x))                   # libm's expf for a float32
    return (_ONE32 if x >= _ZERO32 else e) / (_ONE32 + e)


def _inputs(n, rng, dtype):
    """{name: (vmath function, math function, numpy function, args)} for the timings."""
    f32 = dtype == np.float32

    def u(lo, hi):
        return rng.uniform(lo, hi, n).astype(dtype)

    def lu(lo, hi):
        return np.exp(rng.uniform(math.log(lo), math.log(hi), n)).astype(dtype)
    big = 80.0 if f32 else 700.0
    sfx = "f" if f32 else ""
    rows = {
        "exp": (math.exp, np.exp, (u(-big, big),)),
        "expm1": (math.expm1, np.expm1, (u(-5, 5),)),
        "log": (math.log, np.log, (lu(1e-30, 1e30) if f32 else lu(1e-300, 1e300),)),
        "log1p": (math.log1p, np.log1p, (u(-0.9, 10),)),
        "tanh": (math.tanh, np.tanh, (u(-10, 10),)),
        "sigmoid": (_math_sigmoidf if f32 else _math_sigmoid, scipy.special.expit,
                    (u(-20, 20),)),
        "sin": (math.sin, np.sin, (u(-100, 100),)),
        "cos": (math.cos, np.cos, (u(-100, 100),)),
        "pow": (_math_pow, np.power, (lu(1e-3, 1e3), u(-10, 10))),
    }
    return {name: (getattr(vmath, name + sfx), m, f, args)
            for name, (m, f, args) in rows.items() if hasattr(vmath, name + sfx)}


def _domain(n, rng, dtype):
    """{name: args} spread over each function's whole domain, for the accuracy columns."""
    f32 = dtype == np.float32
    tiny, huge = (1e-45, 3.4e38) if f32 else (5e-324, 1.79e308)

    def lu(lo, hi, signed=False):
        x = np.exp(rng.uniform(math.log(lo), math.log(hi), n))
        return x * rng.choice([-1.0, 1.0], n) if signed else x
    top = 88.7 if f32 else 709.78
    low = -103.9 if f32 else -745.1
    d = {
        "exp": np.concatenate([rng.uniform(low, top, n), lu(tiny, top, True)]),
        "expm1": np.concatenate([rng.uniform(-40, top, n), lu(tiny, top, True)]),
        "log": np.concatenate([lu(tiny, huge), rng.uniform(0.5, 2, n)]),
        "log1p": np.concatenate([lu(tiny, huge), lu(1e-300, 1) - 1.0,
                                 rng.uniform(-1, 1, n)]),
        "tanh": np.concatenate([lu(tiny, 25, True), rng.uniform(-2, 2, n)]),
        "sigmoid": np.concatenate([rng.uniform(low, 40, n), rng.uniform(-8, 8, n)]),
        "sin": np.concatenate([lu(tiny, huge, True), rng.uniform(-10, 10, n)]),
        "cos": np.concatenate([lu(tiny, huge, True), rng.uniform(-10, 10, n)]),
        "pow": (np.concatenate([lu(1e-300, 1e300), lu(0.5, 2)]),
                np.concatenate([rng.uniform(-2, 2, n) * 10.0 ** rng.uniform(-3, 2.3, n),
                                rng.uniform(-600, 600, n)])),
    }
    if f32:
        d["pow"] = (np.concatenate([lu(1e-30, 1e30), lu(0.5, 2)]),
                    np.concatenate([rng.uniform(-2, 2, n) * 10.0 ** rng.uniform(-3, 1, n),
                                    rng.uniform(-60, 60, n)]))
    return {k: tuple(np.asarray(a, dtype) for a in (v if isinstance(v, tuple) else (v,)))
            for k, v in d.items()}


def _reference(name, args):
    """The exact result in long double (or float64 where long double is not wider)."""
    wide = tuple(a.astype(LD if EXTENDED else np.float64) for a in args)
    with np.errstate(all="ignore"):
        if name == "sigmoid":
            return 1 / (1 + np.exp(-wide[0]))
        return {"pow": np.power}.get(name, getattr(np, name))(*wide)


def ulp_errors(got, exact, dtype):
    """|got - exact| in ulps of the exact value (2**(e - p + 1) for 2**e <= |exact| <
    2**(e + 1), at least the smallest subnormal), elementwise; 0 where got is the reference
    rounded, inf where a non-finite result differs from it."""
    fi = np.finfo(dtype)
    with np.errstate(all="ignore"):
        rounded = exact.astype(dtype)
        e = np.frexp(np.abs(exact))[1].astype(np.int64) - (fi.nmant + 1)
        ulp = np.ldexp(np.ones_like(exact), np.maximum(e, fi.minexp - fi.nmant))
        err = (np.abs(got.astype(exact.dtype) - exact) / ulp).astype(np.float64)
    same = (got == rounded) | (np.isnan(got) & np.isnan(rounded))
    bad = ~(np.isfinite(got) & np.isfinite(rounded))
    return np.where(same, 0.0, np.where(bad, np.inf, err))


def max_ulp(got, exact, dtype):
    """The largest of ulp_errors."""
    return float(np.max(ulp_errors(got, exact, dtype)))


def ulp_distance(a, b):
    """The largest number of representable values between a and b (nan matching nan)."""
    ints = np.int64 if a.dtype == np.float64 else np.int32

    def key(v):
        i = v.view(ints).astype(np.int64)
        return np.where(i < 0, np.iinfo(ints).min - i, i)
    both_nan = np.isnan(a) & np.isnan(b)
    d = np.abs(key(a) - key(b))
    return int(np.max(np.where(both_nan | (a == b), 0, d)))


def median_ms(fn, args, repeats):
    """Median milliseconds of fn(*args) over `repeats` runs (after one warm-up call)."""
    fn(*args)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(times))


def simd_width(dispatcher):
    """The widest SIMD registers used by packed floating-point instructions in the
    compiled loop's machine code ('scalar' if none)."""
    asm = dispatcher.inspect_asm(dispatcher.signatures[0])
    packed = [line for line in asm.splitlines()
              if re.search(r"\bv?(mul|add|sub|fmadd\w*|fnmadd\w*|div|blendv|max|min)p[sd]\b",
                           line)]
    text = "\n".join(packed)
    for reg in ("zmm", "ymm", "xmm"):
        if reg in text:
            return reg
    return "scalar"


_SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 2.2250738585072014e-308,
            -2.2250738585072014e-308, 1.7976931348623157e308, -1.7976931348623157e308, 1.0,
            -1.0, 1e-45, -1e-45, 3.4028234663852886e38, -3.4028234663852886e38]
"""Arguments every function is checked at, beside its own thresholds (_THRESHOLDS)."""

_THRESHOLDS = {
    "exp": [709.782712893384, 709.7827128933841, -708.3964185322641, -708.4, -745.1332191019411,
            -745.1332191019412, -746.0, 1e-300, 88.72283935546875, 88.73, -87.33654, -103.97,
            -104.0],
    "expm1": [709.782712893384, 709.7827128933841, -38.0, -40.0, 5e-300, -5e-300, 41.6, 88.72,
              88.73, 1e-30, -1e-30],
    "log": [1e-310, 4e-320, 1.0000000000000002, 0.9999999999999999, 1e-40, 1e-45],
    "log1p": [-0.9999999999999999, -1.0000000000000002, 1e-310, -1e-310, 1e-17, -1e-17,
              1e-40, -1e-40],
    "tanh": [19.06, 19.0616, 20.0, -20.0, 1e300, -1e300, 9.01, 9.02, 1e-310, -1e-310],
    "sigmoid": [37.43, 40.0, -40.0, -708.4, -709.78, -745.13, -745.2, 16.64, 17.0, -87.3,
                -103.9, -104.0],
    "sin": [1e300, -1e300, 2.0 ** 20, 1e22, 3.141592653589793, 1.5707963267948966,
            1e-310, 1e30, 102.0],
    "cos": [1e300, -1e300, 2.0 ** 20, 1e22, 3.141592653589793, 1.5707963267948966,
            1e-310, 1e30, 102.0],
}


def _special_args(name, dtype):
    """The special arguments of one function (pairs for pow) in the given precision."""
    with np.errstate(all="ignore"):
        if name == "pow":
            xs = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, np.inf, -np.inf, np.nan, 5e-324,
                  1e300, -1e300]
            ys = [0.0, -0.0, 1.0, -1.0, 2.0, 3.0, -3.0, 0.5, -0.5, np.inf, -np.inf, np.nan,
                  1e300, -1e300, 1.5, 2000.0]
            grid = np.array([(x, y) for x in xs for y in ys])
            return (grid[:, 0].astype(dtype), grid[:, 1].astype(dtype))
        vals = np.array(_SPECIAL + _THRESHOLDS.get(name, []))
        return (np.concatenate([vals, -vals]).astype(dtype),)


def _numpy_value(name, args):
    """numpy's result in the arguments' precision (scipy's expit for sigmoid)."""
    with np.errstate(all="ignore"):
        if name == "sigmoid":
            return scipy.special.expit(*args)
        if name == "pow":
            return np.power(*args)
        return getattr(np, name)(*args)


def _same_values(got, want):
    """Equal as numpy prints them (same value and sign of zero, or both nan), or, where both
    are finite, nonzero and of the same kind (normal or subnormal), within 2 ulp (a threshold
    argument's result is an ordinary number that either may round differently)."""
    exact = ((got == want) & (np.signbit(got) == np.signbit(want))) | \
        (np.isnan(got) & np.isnan(want))
    tiny = np.finfo(got.dtype).tiny
    with np.errstate(all="ignore"):
        close = np.isfinite(got) & np.isfinite(want) & (got != 0) & (want != 0) & \
            ((np.abs(got) < tiny) == (np.abs(want) < tiny)) & \
            (np.array([ulp_distance(g[None], w[None]) for g, w in zip(got, want)]) <= 2)
    return exact | close


def _loop(vf, args):
    return (loop2 if len(args) == 2 else loop1)(vf)


def accuracy(dtype, n, rng):
    """Rows (name, points, max ulp, mean ulp, share correctly rounded, max ulp against numpy,
    special values equal to numpy's, their count, the arguments that differ) for one
    precision: the vmath loop over _domain's points (about 2n per function) against the
    long-double reference, and at the special arguments against numpy."""
    inputs = _inputs(8, rng, dtype)
    domain = _domain(n, rng, dtype)
    rows = []
    for name, (vf, _mf, _npf, _args) in inputs.items():
        vloop = _loop(vf, domain[name])
        dargs = domain[name]
        got = np.empty_like(dargs[0])
        vloop(*dargs, got)
        err = ulp_errors(got, _reference(name, dargs), dtype)
        ref = _numpy_value(name, dargs)
        if name == "sigmoid":   # expit flushes results below the smallest normal to 0
            keep = np.abs(ref) >= np.finfo(dtype).tiny
            dist = ulp_distance(got[keep], ref[keep])
        else:
            dist = ulp_distance(got, ref)
        sargs = _special_args(name, dtype)
        sgot = np.empty_like(sargs[0])
        vloop(*sargs, sgot)
        same = _same_values(sgot, _numpy_value(name, sargs))
        differ = [tuple(float(a[i]) for a in sargs) for i in np.flatnonzero(~same)]
        finite = err[np.isfinite(err)]
        rows.append((name + ("f" if dtype == np.float32 else ""), got.size, float(np.max(err)),
                     float(np.mean(finite)), float(np.mean(err == 0.0)), dist,
                     int(np.sum(same)), same.size, differ))
    return rows


def accuracy_table(rows):
    """The markdown accuracy table of accuracy()'s rows."""
    lines = ["| function | points | max ulp (exact) | mean ulp | correctly rounded "
             "| max ulp (vs numpy) | special values as numpy |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for name, pts, worst, mean, cr, dist, same, total, _ in rows:
        lines.append(f"| {name} | {pts:,} | {worst:.2f} | {mean:.3f} | {100 * cr:.1f}% | "
                     f"{dist} | {same} / {total} |")
    return "\n".join(lines)


def speed_table(dtype, n, repeats, rng):
    """The markdown timing table for one precision: the vmath loop, the same loop with
    math.* and numpy's ufunc, each over n elements."""
    lines = ["| function | vmath ms | math ms | numpy ms | math / vmath | numpy / vmath | SIMD |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for name, (vf, mf, npf, args) in _inputs(n, rng, dtype).items():
        vloop, mloop = _loop(vf, args), _loop(mf, args)
        out = np.empty_like(args[0])
        tv = median_ms(vloop, args + (out,), repeats)
        tm = median_ms(mloop, args + (out,), repeats)
        tn = median_ms(lambda *a: npf(*a, out=out), args, repeats)
        lines.append(f"| {name + ('f' if dtype == np.float32 else '')} | {tv:.2f} | {tm:.2f} | "
                     f"{tn:.2f} | {tm / tv:.1f} | {tn / tv:.1f} | {simd_width(vloop)} |")
    return "\n".join(lines)


def _differences(rows):
    """A line per function whose special values differ from numpy's, naming the arguments."""
    out = []
    for name, *_, differ in rows:
        if differ:
            shown = ", ".join(repr(d[0]) if len(d) == 1 else repr(d) for d in differ[:8])
            out.append(f"{name} differs from numpy at {shown}")
    return out


DOC_INTRO = """# Vector math

adjit's generated loops call the branch-free functions of `adjit.runtime.vmath` instead of the
C library's `exp`, `log`, `tanh`, ... where LLVM can then vectorize the loop (see
[semantics.md](semantics.md#vector-math) for which loops, and `grad(f, vector_math=False)` to
keep the C library's). The user's own compiled function is never changed. This page is written
by `make vmath-docs` (`python benchmarks/vmath.py --docs`); `python benchmarks/vmath.py --f32`
prints the same tables.

**Accuracy.** Each function is evaluated by a compiled, optimized (NUMBA_OPT=3) numba loop, as
generated code calls it, at about two million arguments spread over its whole domain
(log-uniform magnitudes over the full exponent range, and a dense uniform interval), and
compared with the exact result in long double (64-bit significand: 11 bits more than a
double, so the reference's own error is below 0.0005 ulp). 'max ulp (exact)' is the largest
error in units in the last place of the exact result, 'mean ulp' the average, 'correctly
rounded' the share of results equal to the exact result rounded, 'max ulp (vs numpy)' the
largest distance in doubles (floats) from numpy's result (scipy's `expit` for sigmoid; numpy's
float64 functions are within about 1 ulp of the exact result, some of its float32 ones several
ulp). 'special values' are infinities, nan, signed zeros, subnormals, the largest values and
each function's overflow and underflow thresholds (both signs; for pow a grid of special bases
and exponents), compared with numpy's result including the sign of zero (an ordinary finite
result at a threshold: within 2 ulp). tests/test_vmath.py asserts 2 ulp over 1.2 million points
per function and numpy's special values. sinf, cosf and powf compute in float64 and round
once, so their float32 results are nearly always the correctly rounded ones.

**Speed.** Milliseconds for one loop over the elements (the number in the first line below),
median of several runs, writing into an array allocated before: the vmath function in a numba
loop, the same loop calling `math.*` (numba calls the C library once per element: no SIMD),
numpy's ufunc with `out=`, and the ratios. numpy's own float32 `sin` and `cos` are SIMD code
too (faster than vmath's, which go through float64); its float64 functions are the C
library's speed.
"""


def write_docs(path, header, rows64, rows32, speed64, speed32):
    """docs/vector_math.md: the introduction, the machine, the tables and the notes."""
    notes = _differences(rows64) + _differences(rows32)
    text = [DOC_INTRO, "```", *header, "```", "", "## Accuracy, float64", "",
            accuracy_table(rows64), "", "## Accuracy, float32", "", accuracy_table(rows32), ""]
    if notes:
        text += ["Special values that differ from numpy's (by design: see the function's "
                 "docstring in adjit/runtime/vmath.py):", ""]
        text += [f"- {line}" for line in notes] + [""]
    text += ["## Speed, float64", "",
             speed64, "", "## Speed, float32", "", speed32, ""]
    with open(path, "w") as f:
        f.write("\n".join(text))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="elements per loop")
    parser.add_argument("--repeats", type=int, default=11, help="timed runs per median")
    parser.add_argument("--f32", action="store_true", help="also the float32 functions")
    parser.add_argument("--docs", nargs="?", metavar="PATH",
                        const=os.path.join(os.path.dirname(HERE), "docs", "vector_math.md"),
                        help="write the page of both precisions' tables (docs/vector_math.md)")
    opts = parser.parse_args()
    rng = np.random.default_rng(2024)
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    header = [f"vmath, {opts.n:.0e} elements per timed loop, median of {opts.repeats}, "
              f"NUMBA_OPT={int(numba.config.OPT)}, numba {numba.__version__}, numpy "
              f"{np.__version__}, {platform.machine()} "
              f"({numba.config.CPU_NAME or llvm_host_cpu()} CPU), FMA "
              f"{'yes' if vmath._HAS_FMA else 'no'}"]
    if load:
        header.append(f"load average at the start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if not EXTENDED:
        header.append("note: long double is not wider than double here: 'exact' is numpy's "
                      "float64")
    for line in header:
        print("# " + line)
    precisions = (np.float64, np.float32) if (opts.f32 or opts.docs) else (np.float64,)
    acc, speed = {}, {}
    for dtype in precisions:
        acc[dtype] = accuracy(dtype, opts.n, rng)
        print()
        print(accuracy_table(acc[dtype]))
        for line in _differences(acc[dtype]):
            print("# " + line)
        speed[dtype] = speed_table(dtype, opts.n, opts.repeats, rng)
        print()
        print(speed[dtype])
    if load:
        header.append(f"load average at the end: {os.getloadavg()[0]:.2f}")
        print("\n# " + header[-1])
    if opts.docs:
        path = opts.docs
        write_docs(path, header, acc[np.float64], acc[np.float32], speed[np.float64],
                   speed[np.float32])
        print(f"wrote {path}")


def llvm_host_cpu():
    """The host CPU's name as LLVM knows it (what numba compiles for)."""
    import llvmlite.binding as llvm
    return llvm.get_host_cpu_name()


if __name__ == "__main__":
    main()
