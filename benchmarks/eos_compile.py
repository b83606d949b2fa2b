"""Compile time of adjit's gradient for a long vectorized numpy kernel: pyhpc-benchmarks' EOS.

The kernel is the equation-of-state benchmark of pyhpc-benchmarks
(github.com/dionhaefner/pyhpc-benchmarks, benchmarks/equation_of_state/eos_numpy.py and
eos_numba.py): gsw_dHdT, the temperature derivative of dynamic enthalpy from the 48-term
TEOS-10 density polynomial (IOC et al., 2010) in Absolute Salinity s, Conservative
Temperature t and pressure p -- about 90 array statements on 3-D arrays, written here as a
numba user would write it (the numpy code under @njit; fastmath off, as adjit's default).
The loss is np.sum(eos(s, t, p) * w).

    .venv/bin/python benchmarks/eos_compile.py [--repeat N] [--shape 64 64 32]

Every measurement runs in a fresh subprocess (numba's in-memory caches cold, no cache=True).
numba's one-time set-up (cpu_target.target_context.refresh(), as in warm_start.py) is paid
and reported before anything is timed, so both first calls measure compilation only:

  forward   numba.njit compile of the loss (first call minus a warm call); numba's own
            split from the dispatcher's metadata (typing / lowering / LLVM lock)
  gradient  adjit.grad(loss, argnums=(0, 1, 2)) first call, split into adjit's passes
            (adjit.pipeline.PASSES, each timed by wrapping it) and numba's compilation of
            the generated source (the "compiled" pass), itself split into typing, lowering
            and LLVM; sizes of g.source and of the forward's source; warm call times; the
            gradient at 3 random entries of each argument vs central differences of the
            numba forward (rtol 1e-5)
  profile   cProfile of adjit's transformation alone (pipeline.run(..., until="derivative")),
            top 25 by cumulative time written to /tmp/eos_profile.txt
"""
import argparse
import inspect
import json
import os
import subprocess
import sys
import time

import numba
import numpy as np

v01 = 9.998420897506056e2
v02 = 2.839940833161907e0
v03 = -3.147759265588511e-2
v04 = 1.181805545074306e-3
v05 = -6.698001071123802e0
v06 = -2.986498947203215e-2
v07 = 2.327859407479162e-4
v08 = -3.988822378968490e-2
v09 = 5.095422573880500e-4
v10 = -1.426984671633621e-5
v11 = 1.645039373682922e-7
v12 = -2.233269627352527e-2
v13 = -3.436090079851880e-4
v14 = 3.726050720345733e-6
v15 = -1.806789763745328e-4
v16 = 6.876837219536232e-7
v17 = -3.087032500374211e-7
v18 = -1.988366587925593e-8
v19 = -1.061519070296458e-11
v20 = 1.550932729220080e-10
v21 = 1.0e0
v22 = 2.775927747785646e-3
v23 = -2.349607444135925e-5
v24 = 1.119513357486743e-6
v25 = 6.743689325042773e-10
v26 = -7.521448093615448e-3
v27 = -2.764306979894411e-5
v28 = 1.262937315098546e-7
v29 = 9.527875081696435e-10
v30 = -1.811147201949891e-11
v31 = -3.303308871386421e-5
v32 = 3.801564588876298e-7
v33 = -7.672876869259043e-9
v34 = -4.634182341116144e-11
v35 = 2.681097235569143e-12
v36 = 5.419326551148740e-6
v37 = -2.742185394906099e-5
v38 = -3.212746477974189e-7
v39 = 3.191413910561627e-9
v40 = -1.931012931541776e-12
v41 = -1.105097577149576e-7
v42 = 6.211426728363857e-10
v43 = -1.119011592875110e-10
v44 = -1.941660213148725e-11
v45 = -1.864826425365600e-14
v46 = 1.119522344879478e-14
v47 = -1.200507748551599e-15
v48 = 6.057902487546866e-17


@numba.njit
def eos(s, t, p):
    """d/dT of dynamic enthalpy (gsw_dHdT), elementwise on 3-D arrays s [g/kg], t [deg C],
    p [dbar]."""
    t1 = v45 * t
    t2 = 0.2e1 * t1
    t3 = v46 * s
    t4 = 0.5 * v12
    t5 = v14 * t
    t7 = t * (v13 + t5)
    t8 = 0.5 * t7
    t11 = s * (v15 + v16 * t)
    t12 = 0.5 * t11
    t13 = t4 + t8 + t12
    t15 = v19 * t
    t19 = v17 + t * (v18 + t15) + v20 * s
    t20 = 1.0 / t19
    t24 = v47 + v48 * t
    t25 = 0.5 * v13
    t26 = 1.0 * t5
    t27 = s * v16
    t28 = 0.5 * t27
    t29 = t25 + t26 + t28
    t33 = t24 * t13
    t34 = t19 ** 2
    t35 = 1.0 / t34
    t37 = v18 + 2.0 * t15
    t38 = t35 * t37
    t48 = t * (v44 + t1 + t3)
    t57 = v40 * t
    t59 = t * (v39 + t57)
    t64 = t13 ** 2
    t68 = t20 * t29
    t71 = t24 * t64
    t74 = v04 * t
    t76 = t * (v03 + t74)
    t79 = v07 * t
    t82 = np.sqrt(s)
    t83 = v11 * t
    t85 = t * (v10 + t83)
    t92 = (
        v01
        + t * (v02 + t76)
        + s * (v05 + t * (v06 + t79) + t82 * (v08 + t * (v09 + t85)))
    )
    t93 = v48 * t92
    t105 = (
        v02
        + t76
        + t * (v03 + 2.0 * t74)
        + s * (v06 + 2.0 * t79 + t82 * (v09 + t85 + t * (v10 + 2.0 * t83)))
    )
    t106 = t24 * t105
    t107 = v44 + t2 + t3
    t110 = v43 + t48
    t117 = t24 * t92
    t120 = 4.0 * t71 * t20 - t117 - 2.0 * t110 * t13
    t123 = (
        v38
        + t59
        + t * (v39 + 2.0 * t57)
        + s * v42
        + (
            4.0 * v48 * t64 * t20
            + 8.0 * t33 * t68
            - 4.0 * t71 * t38
            - t93
            - t106
            - 2.0 * t107 * t13
            - 2.0 * t110 * t29
        )
        * t20
        - t120 * t35 * t37
    )
    t128 = t19 * p
    t130 = p * (1.0 * v12 + 1.0 * t7 + 1.0 * t11 + t128)
    t131 = 1.0 / t92
    t133 = 1.0 + t130 * t131
    t134 = np.log(t133)
    t143 = v37 + t * (v38 + t59) + s * (v41 + v42 * t) + t120 * t20
    t152 = t37 * p
    t156 = t92 ** 2
    t165 = v25 * t
    t167 = t * (v24 + t165)
    t169 = t * (v23 + t167)
    t175 = v30 * t
    t177 = t * (v29 + t175)
    t179 = t * (v28 + t177)
    t185 = v35 * t
    t187 = t * (v34 + t185)
    t189 = t * (v33 + t187)
    t199 = t13 * t20
    t217 = 2.0 * t117 * t199 - t110 * t92
    t234 = (
        v21
        + t * (v22 + t169)
        + s * (v26 + t * (v27 + t179) + v36 * s + t82 * (v31 + t * (v32 + t189)))
        + t217 * t20
    )
    t241 = t64 - t92 * t19
    t242 = np.sqrt(t241)
    t243 = 1.0 / t242
    t244 = t4 + t8 + t12 - t242
    t245 = 1.0 / t244
    t247 = t4 + t8 + t12 + t242 + t128
    t248 = 1.0 / t247
    t249 = t242 * t245 * t248
    t252 = 1.0 + 2.0 * t128 * t249
    t253 = np.log(t252)
    t254 = t243 * t253
    t259 = t234 * t19 - t143 * t13
    t264 = t259 * t20
    t272 = 2.0 * t13 * t29 - t105 * t19 - t92 * t37
    t282 = t128 * t242
    t283 = t244 ** 2
    t287 = t243 * t272 / 2.0
    t292 = t247 ** 2
    t305 = (
        0.1e5
        * p
        * (
            v44
            + t2
            + t3
            - 2.0 * v48 * t13 * t20
            - 2.0 * t24 * t29 * t20
            + 2.0 * t33 * t38
            + 0.5 * v48 * p
        )
        * t20
        - 0.1e5 * p * (v43 + t48 - 2.0 * t33 * t20 + 0.5 * t24 * p) * t38
        + 0.5e4 * t123 * t20 * t134
        - 0.5e4 * t143 * t35 * t134 * t37
        + 0.5e4
        * t143
        * t20
        * (p * (1.0 * v13 + 2.0 * t5 + 1.0 * t27 + t152) * t131 - t130 / t156 * t105)
        / t133
        + 0.5e4
        * (
            (
                v22
                + t169
                + t * (v23 + t167 + t * (v24 + 2.0 * t165))
                + s
                * (
                    v27
                    + t179
                    + t * (v28 + t177 + t * (v29 + 2.0 * t175))
                    + t82 * (v32 + t189 + t * (v33 + t187 + t * (v34 + 2.0 * t185)))
                )
                + (
                    2.0 * t93 * t199
                    + 2.0 * t106 * t199
                    + 2.0 * t117 * t68
                    - 2.0 * t117 * t13 * t35 * t37
                    - t107 * t92
                    - t110 * t105
                )
                * t20
                - t217 * t35 * t37
            )
            * t19
            + t234 * t37
            - t123 * t13
            - t143 * t29
        )
        * t20
        * t254
        - 0.5e4 * t259 * t35 * t254 * t37
        - 0.25e4 * t264 / t242 / t241 * t253 * t272
        + 0.5e4
        * t264
        * t243
        * (
            2.0 * t152 * t249
            + t128 * t243 * t245 * t248 * t272
            - 2.0 * t282 / t283 * t248 * (t25 + t26 + t28 - t287)
            - 2.0 * t282 * t245 / t292 * (t25 + t26 + t28 + t287 + t152)
        )
        / t252
    )

    return t305


@numba.njit
def loss(s, t, p, w):
    return np.sum(eos(s, t, p) * w)


# inputs ------------------------------------------------------------------------------------

def inputs(shape, seed=17):
    """s, t, p on the ranges of pyhpc's generate_inputs (p full 3-D here), and weights w."""
    rng = np.random.default_rng(seed)
    s = rng.uniform(1e-2, 10, shape)
    t = rng.uniform(-12, 20, shape)
    p = rng.uniform(0, 1000, shape)
    w = rng.uniform(-1, 1, shape)
    return s, t, p, w


def forward_lines():
    """Source lines of the forward (eos and loss, decorators and docstring included)."""
    return sum(len(inspect.getsource(f.py_func).splitlines()) for f in (eos, loss))


def numba_setup():
    """numba's one-time set-up, paid before anything is timed (as benchmarks/warm_start.py)."""
    t0 = time.perf_counter()
    from numba.core.registry import cpu_target
    cpu_target.target_context.refresh()
    return time.perf_counter() - t0


def warm_ms(fn, args, n):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(times))


class PassTimes:
    """Self time of numba's compiler passes over every compilation (nested ones included:
    callees and overloads compile inside the outer typing pass), from numba:run_pass events."""

    def __init__(self):
        self.stack = []
        self.self_time = {}

    def on_event(self, event):
        now = time.perf_counter()
        if event.is_start:
            self.stack.append([event.data["name"].split(" [")[0], now, 0.0])
        else:
            name, start, children = self.stack.pop()
            took = now - start
            self.self_time[name] = self.self_time.get(name, 0.0) + took - children
            if self.stack:
                self.stack[-1][2] += took

    def split(self):
        typing = {"nopython_type_inference", "partial_type_inference"}
        lowering = {"native_lowering", "native_parfor_lowering"}
        out = {"typing": 0.0, "lowering": 0.0, "other_passes": 0.0}
        for name, sec in self.self_time.items():
            key = "typing" if name in typing else "lowering" if name in lowering else \
                "other_passes"
            out[key] += sec
        return out


def numba_listener():
    from numba.core import event as ev
    times = PassTimes()

    class L(ev.Listener):
        def on_start(self, event):
            times.on_event(event)

        def on_end(self, event):
            times.on_event(event)

    ev.register("numba:run_pass", L())
    return times


def numba_split(dispatcher, times):
    """numba's compile of `dispatcher`'s one signature: total (compiler lock), LLVM (time
    holding the LLVM lock: IR parsing, optimization, machine code), typing and lowering
    (pass self times, all compilations)."""
    md = dispatcher.get_metadata(dispatcher.signatures[0])
    out = {"numba_total": md["timers"]["compiler_lock"], "llvm": md["timers"]["llvm_lock"]}
    out.update(times.split())
    out["top_passes"] = sorted(((round(v, 3), k) for k, v in times.self_time.items()),
                               reverse=True)[:6]
    return out


# children ----------------------------------------------------------------------------------

def child_forward(shape, warm_n):
    setup = numba_setup()
    times = numba_listener()
    args = inputs(shape)
    t0 = time.perf_counter()
    loss(*args)
    first = time.perf_counter() - t0
    warm = warm_ms(loss, args, warm_n)
    out = {"setup": setup, "first": first, "warm_ms": warm, "compile": first - warm / 1e3,
           "forward_lines": forward_lines()}
    out.update(numba_split(loss, times))
    return out


def child_gradient(shape, warm_n):
    import adjit
    import adjit.pipeline as pipeline
    setup = numba_setup()
    times = numba_listener()
    pass_times = {}

    def timed(stage, fn):
        def wrapper(p, o):
            t0 = time.perf_counter()
            try:
                return fn(p, o)
            finally:
                pass_times[stage] = pass_times.get(stage, 0.0) + time.perf_counter() - t0
        return wrapper

    pipeline.PASSES = tuple((stage, timed(stage, fn)) for stage, fn in pipeline.PASSES)
    args = inputs(shape)
    g = adjit.grad(loss, argnums=(0, 1, 2))
    out = {"setup": setup, "forward_lines": forward_lines()}
    t0 = time.perf_counter()
    try:
        grads = g(*args)
    except Exception as exc:  # noqa: BLE001 - reported, not hidden
        out["error"] = f"{type(exc).__name__}: {exc}"
        out["first"] = time.perf_counter() - t0
        out["passes"] = pass_times
        return out
    first = time.perf_counter() - t0
    warm = warm_ms(g, args, warm_n)
    transform = sum(v for k, v in pass_times.items() if k != "compiled")
    out.update({"first": first, "warm_ms": warm, "passes": pass_times, "transform": transform,
                "compiled_pass": pass_times.get("compiled", 0.0),
                "source_lines": len(g.source.splitlines()),
                "source_chars": len(g.source)})
    out.update(numba_split(g._called.dispatcher, times))
    # the forward, compiled only now (after the gradient's timing): its warm time, and the
    # oracle -- central differences of the numba forward
    loss(*args)
    out["forward_warm_ms"] = warm_ms(loss, args, warm_n)
    out["check"] = check(grads, args)
    return out


def check(grads, args, per_arg=3, rtol=1e-5):
    """The gradient at `per_arg` random entries of s, t, p vs central differences of the numba
    forward, Richardson-extrapolated (steps h and h/2, h = 2e-3 * max(|x|, 1), at most s/4 for
    the salinity under sqrt). The differences are summed after subtracting elementwise
    (sum((eos(x+h) - eos(x-h)) * w)): the same as differencing the loss, without the
    cancellation of a sum over every entry. The EOS polynomial itself cancels heavily (terms
    of 1e4 summing to about 1), so a float64 difference quotient is only good to about 1e-5 at
    h = 1e-4 |x| (measured: relative errors of 2e-5 to 1.7e-4 at h = 1e-4 and 1e-5); hence the
    larger step. A complex-step derivative of the numpy forward (eos.py_func on the one entry,
    exact to rounding) is reported beside it, as a second opinion."""
    s, t, p, w = args
    rng = np.random.default_rng(3)
    rows, worst = [], 0.0
    for k, name in enumerate("stp"):
        for _ in range(per_arg):
            idx = tuple(int(rng.integers(n)) for n in s.shape)
            x = args[k]

            def cd(h):
                xp, xm = x.copy(), x.copy()
                xp[idx] += h
                xm[idx] -= h
                a = list(args[:3])
                a[k] = xp
                up = eos(*a)
                a[k] = xm
                return float(np.sum((up - eos(*a)) * w)) / (2 * h)

            h = 2e-3 * max(abs(x[idx]), 1.0)
            if name == "s":
                h = min(h, 0.25 * x[idx])
            fd = (4 * cd(h / 2) - cd(h)) / 3
            one = [np.full((1, 1, 1), a[idx], complex) for a in args[:3]]
            one[k] += 1e-30j
            cs = float(eos.py_func(*one)[0, 0, 0].imag / 1e-30 * w[idx])
            ad = float(grads[k][idx])
            rel = abs(ad - fd) / max(abs(fd), 1e-300)
            worst = max(worst, rel)
            rows.append({"arg": name, "index": idx, "adjit": ad, "fd": fd, "rel": rel,
                         "complex_step": cs, "rel_cs": abs(ad - cs) / max(abs(cs), 1e-300),
                         "ok": bool(np.isclose(ad, fd, rtol=rtol, atol=0.0))})
    return {"rows": rows, "worst_rel": worst, "all_ok": all(r["ok"] for r in rows),
            "worst_rel_cs": max(r["rel_cs"] for r in rows)}


def child_transform(shape):
    """adjit's passes up to the generated source (no numba), each timed, no profiler."""
    import adjit.pipeline as pipeline
    args = inputs(shape)
    arg_types = tuple(numba.typeof(a) for a in args)
    options = pipeline.Options((0, 1, 2), name="grad", single=False)
    times = {}
    for stage, fn in pipeline.PASSES:
        if stage == "compiled":
            break
        times[stage] = fn
    program = pipeline.Program(loss, arg_types, options)
    took = {}
    for stage, fn in times.items():
        t0 = time.perf_counter()
        fn(program, options)
        took[stage] = time.perf_counter() - t0
    return {"passes": took, "transform": sum(took.values()),
            "source_lines": len(program.source.splitlines())}


def child_profile(shape, path):
    import cProfile
    import io
    import pstats

    import adjit.pipeline as pipeline
    args = inputs(shape)
    arg_types = tuple(numba.typeof(a) for a in args)
    options = pipeline.Options((0, 1, 2), name="grad", single=False)
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    program = pipeline.run(loss, arg_types, options, until="derivative")
    prof.disable()
    took = time.perf_counter() - t0
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(25)
    sizes = {stage: len(program.render(stage).splitlines())
             for stage in ("source", "normalized", "adjoint")}
    with open(path, "w") as f:
        f.write(f"# cProfile of adjit.pipeline.run(loss, {arg_types}, until='derivative')\n")
        f.write(f"# {took:.2f} s under the profiler; stage sizes (lines): {sizes}\n")
        f.write(f"# load: {os.getloadavg()}\n")
        f.write(text.getvalue())
    return {"profiled_s": took, "stage_lines": sizes}


# the parent --------------------------------------------------------------------------------

def run_child(kind, shape, extra=()):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", kind, "--shape",
           *map(str, shape), *extra]
    load = os.getloadavg()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{kind} child failed ({done.returncode}):\n{done.stderr[-4000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    out["load_before"] = load
    out["load_after"] = os.getloadavg()
    return out


def fmt_load(r):
    return "load {:.2f}/{:.2f}/{:.2f} -> {:.2f}/{:.2f}/{:.2f}".format(*r["load_before"],
                                                                    *r["load_after"])


def main():
    # compile times are measured here: gradients made without cache= compile (no disk
    # cache; set in main, so that importing this module changes nothing)
    os.environ.setdefault("ADJIT_CACHE", "0")
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", choices=("forward", "gradient", "transform", "profile"))
    ap.add_argument("--shape", type=int, nargs=3, default=(64, 64, 32))
    ap.add_argument("--repeat", type=int, default=1, help="fresh processes per measurement")
    ap.add_argument("--warm", type=int, default=7, help="warm calls (median)")
    ap.add_argument("--profile-out", default="/tmp/eos_profile.txt")
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--transform-only", action="store_true",
                    help="only adjit's transformation (timed passes) and its profile")
    ap.add_argument("--json", help="also write all results to this file")
    a = ap.parse_args()
    shape = tuple(a.shape)
    if a.child:
        out = {"forward": lambda: child_forward(shape, a.warm),
               "gradient": lambda: child_gradient(shape, a.warm),
               "transform": lambda: child_transform(shape),
               "profile": lambda: child_profile(shape, a.profile_out)}[a.child]()
        print(json.dumps(out))
        return
    print(f"numba {numba.__version__}, numpy {np.__version__}, python "
          f"{sys.version.split()[0]}, {os.cpu_count()} CPUs, shape {shape}", flush=True)
    results = {"forward": [], "gradient": [], "transform": [], "profile": None}
    for r in range(a.repeat):
        tr = run_child("transform", shape)
        results["transform"].append(tr)
        passes = ", ".join(f"{k} {v:.2f}" for k, v in tr["passes"].items())
        print(f"[{r}] transform alone: {tr['transform']:.2f} s ({passes}); "
              f"{tr['source_lines']} lines; {fmt_load(tr)}", flush=True)
        if a.transform_only:
            continue
        f = run_child("forward", shape, ["--warm", str(a.warm)])
        results["forward"].append(f)
        print(f"[{r}] forward : compile {f['compile']:.2f} s (numba {f['numba_total']:.2f}: "
              f"typing {f['typing']:.2f}, lowering {f['lowering']:.2f} incl. LLVM "
              f"{f['llvm']:.2f}, other passes {f['other_passes']:.2f}); warm "
              f"{f['warm_ms']:.2f} ms; setup {f['setup']:.2f} s; {fmt_load(f)}", flush=True)
        g = run_child("gradient", shape, ["--warm", str(a.warm)])
        results["gradient"].append(g)
        if "error" in g:
            print(f"[{r}] gradient: REFUSED/FAILED after {g['first']:.2f} s: {g['error']}")
            continue
        passes = ", ".join(f"{k} {v:.2f}" for k, v in g["passes"].items())
        print(f"[{r}] gradient: first call {g['first']:.2f} s = transform {g['transform']:.2f}"
              f" + compiled pass {g['compiled_pass']:.2f} (numba {g['numba_total']:.2f}: "
              f"typing {g['typing']:.2f}, lowering {g['lowering']:.2f} incl. LLVM "
              f"{g['llvm']:.2f}, other passes {g['other_passes']:.2f}) + rest "
              f"{g['first'] - g['transform'] - g['compiled_pass']:.2f}; {fmt_load(g)}",
              flush=True)
        print(f"    passes: {passes}")
        print(f"    numba top passes (self s): {g['top_passes']}")
        print(f"    warm: gradient {g['warm_ms']:.2f} ms, forward {g['forward_warm_ms']:.2f} ms"
              f" (x{g['warm_ms'] / g['forward_warm_ms']:.1f})")
        print(f"    sizes: forward {g['forward_lines']} lines, g.source {g['source_lines']} "
              f"lines ({g['source_chars']} chars)")
        print(f"    ratio gradient first call / forward compile: "
              f"{g['first'] / f['compile']:.1f}x (numba only: "
              f"{g['numba_total'] / f['numba_total']:.1f}x)")
        c = g["check"]
        print(f"    check vs central differences (rtol 1e-5): "
              f"{'ok' if c['all_ok'] else 'WRONG'}, worst rel {c['worst_rel']:.1e} "
              f"(vs complex step of the numpy forward: worst rel {c['worst_rel_cs']:.1e})")
        for row in c["rows"]:
            if not row["ok"]:
                print(f"      WRONG d/d{row['arg']}{list(row['index'])}: adjit {row['adjit']!r}"
                      f" fd {row['fd']!r} rel {row['rel']:.1e}")
    if not a.no_profile:
        pr = run_child("profile", shape, ["--profile-out", a.profile_out])
        results["profile"] = pr
        print(f"profile: transformation {pr['profiled_s']:.2f} s under cProfile, stage lines "
              f"{pr['stage_lines']}; top 25 in {a.profile_out}; {fmt_load(pr)}")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
