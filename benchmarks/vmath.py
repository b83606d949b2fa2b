"""adjit.runtime.vmath against math.* in a numba loop and numpy's ufuncs: one 1e6-element
float64 loop per function, compiled at NUMBA_OPT=3.

Run `python benchmarks/vmath.py` (options: --n, --repeats, --f32 for the float32 table too).
Each column is the median of `repeats` runs writing into a preallocated array: the vmath
function in a numba loop, the same loop with math.* (numba lowers it to one libm call per
element: no SIMD), and numpy's ufunc with out= (scipy.special.expit for sigmoid). The table
adds the ratios, the SIMD registers seen in the vmath loop's machine code (zmm: AVX-512,
ymm: AVX2, xmm: SSE packed ops, or "scalar") and the largest error of the optimized vmath
code over a sample of the whole domain, in ulps of the exact result (long double reference,
where numpy's long double has 64 bits), and against numpy's float64 result (in ulps, the
distance between the two doubles). The load average is printed: the other cores' load moves
these times.
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


def max_ulp(got, exact, dtype):
    """The largest |got - exact| in ulps of the exact value (2**(e - p + 1) for
    2**e <= |exact| < 2**(e + 1), at least the smallest subnormal); a non-finite result
    that differs from the rounded reference counts as inf."""
    fi = np.finfo(dtype)
    with np.errstate(all="ignore"):
        rounded = exact.astype(dtype)
        e = np.frexp(np.abs(exact))[1].astype(np.int64) - (fi.nmant + 1)
        ulp = np.ldexp(np.ones_like(exact), np.maximum(e, fi.minexp - fi.nmant))
        err = (np.abs(got.astype(exact.dtype) - exact) / ulp).astype(np.float64)
    same = (got == rounded) | (np.isnan(got) & np.isnan(rounded))
    bad = ~(np.isfinite(got) & np.isfinite(rounded))
    err = np.where(same, 0.0, np.where(bad, np.inf, err))
    return float(np.max(err))


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


def table(dtype, n, repeats, rng):
    """The markdown table for one dtype."""
    inputs = _inputs(n, rng, dtype)
    domain = _domain(n, rng, dtype)
    rows = []
    for name, (vf, mf, npf, args) in inputs.items():
        loop = loop2 if len(args) == 2 else loop1
        vloop, mloop = loop(vf), loop(mf)
        out = np.empty_like(args[0])
        tv = median_ms(vloop, args + (out,), repeats)
        tm = median_ms(mloop, args + (out,), repeats)
        tn = median_ms(lambda *a: npf(*a, out=out), args, repeats)
        dargs = domain[name]
        got = np.empty_like(dargs[0])
        vloop(*dargs, got)
        ulp = max_ulp(got, _reference(name, dargs), dtype)
        with np.errstate(all="ignore"):
            ref = scipy.special.expit(*dargs) if name == "sigmoid" else \
                {"pow": np.power}.get(name, getattr(np, name))(*dargs)
        if name == "sigmoid":   # expit flushes results below the smallest normal to 0
            keep = np.abs(ref) >= np.finfo(dtype).tiny
            got, ref = got[keep], ref[keep]
        rows.append((name + ("f" if dtype == np.float32 else ""), tv, tm, tn, ulp,
                     ulp_distance(got, ref), simd_width(vloop)))
    head = ("| function | vmath ms | math ms | numpy ms | math / vmath | numpy / vmath "
            "| max ulp (exact) | max ulp (vs numpy) | SIMD |\n"
            "|---|---:|---:|---:|---:|---:|---:|---:|---|")
    lines = [head]
    for name, tv, tm, tn, ulp, dn, simd in rows:
        lines.append(f"| {name} | {tv:.2f} | {tm:.2f} | {tn:.2f} | {tm / tv:.1f} | "
                     f"{tn / tv:.1f} | {ulp:.2f} | {dn} | {simd} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="elements per loop")
    parser.add_argument("--repeats", type=int, default=11, help="timed runs per median")
    parser.add_argument("--f32", action="store_true", help="also the float32 functions")
    opts = parser.parse_args()
    rng = np.random.default_rng(2024)
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(f"# vmath, {opts.n:.0e} elements, median of {opts.repeats}, NUMBA_OPT="
          f"{int(numba.config.OPT)}, numba {numba.__version__}, numpy {np.__version__}, "
          f"{platform.processor() or platform.machine()} ({numba.config.CPU_NAME or 'host'}"
          f" CPU), FMA {'yes' if vmath._HAS_FMA else 'no'}")
    if load:
        print(f"# load average at the start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if not EXTENDED:
        print("# note: long double is not wider than double here: 'exact' is numpy's float64")
    print()
    print(table(np.float64, opts.n, opts.repeats, rng))
    if opts.f32:
        print()
        print(table(np.float32, opts.n, opts.repeats, rng))
    if load:
        print(f"\n# load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
