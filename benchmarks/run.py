"""The JIT benchmark table: njit forward time, adjit gradient time, their ratio, compile time,
the warm-process time with numba's on-disk cache, and the tape's peak memory.

Times are medians of repeated runs in this one process; the ratio is taken from the same
run. First-call compile is the time of the gradient's first call (transformation plus numba
compilation of the gradient). Run with `make bench`; `make bench-docs` (run.py --docs)
also writes docs/benchmarks.md and the figure docs/benchmarks.png (needs matplotlib: the
optional extra adjit[plot]).

Every gradient is built with cache=True, each case with its own folder under a temporary
ADJIT_CACHE_DIR (two cases with the same function and argument types, such as a step count
of 10^5 and of 10^6, would otherwise share the generated source, and the second would load
the first one's machine code instead of compiling). After a case ran here, warm_start.py
builds the same gradient in a fresh process with the same ADJIT_CACHE_DIR and calls it once:
the "warm process" column is the time from starting that process to its first result, and
the time of that first call itself; a footer warns when numba did not load it from the cache.
The "peak tape" column is g.last_tape.total_bytes: the tape's stacks as allocated plus the
checkpoint snapshots. Checkpointed cases get a footer line with the recompute factor, the
tape recorded without checkpointing and whether the two gradients agree to the bit.

With jax installed (`pip install 'adjit[compare]'`), the cases that have a JAX mirror in
jax_cases.py also get the time of jax.jit(jax.grad(f)) on the same inputs (as device arrays,
float64, waiting for the result) and the ratio adjit/JAX; the two gradients are compared.
JAX runs in a separate process (jax_cases.py run as a script, before the table, then
staying to time a case again on request: each JAX row's ratio is the median of rounds that
time JAX's gradient and then adjit's, one after the other): its thread
pool left running here would compete with numba and OpenBLAS for the cores and distort the
adjit times. That process is pinned to one CPU, as the generated code is single-threaded: on
the 2-core CI machine JAX was also fastest and steadiest that way (0.18 ms for the softmax-CE
gradient pinned, 0.24 to 0.52 ms from run to run with its thread pool on both cores).
ADJIT_BENCH_JAX_PIN=0 leaves JAX its default threads. The rows of single-threaded code here
(all but the prange rows: the forward, the gradient, the hand-written adjoint) run on that
same CPU, one after the other: a virtual machine's CPUs need not be equally fast or equally
busy, and the ratio adjit/JAX should not depend on which one each side got.
Without jax a note line says so and
the table is the same otherwise.
"""
import argparse
import datetime
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

# One BLAS thread (before numpy loads OpenBLAS), unless the caller chose: on this 2-core CI
# machine a threaded GEMM waits a scheduler tick (4 ms) for its second thread whenever the
# other core is busy, which turned the MLP row's 0.6 ms into 8 ms from run to run. The
# generated code is single-threaded anyway (and JAX does its matrix products without BLAS).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numba  # noqa: E402
import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import adjit  # noqa: E402
import blas_kernels  # noqa: E402
import hand  # noqa: E402
from hand import HAND  # noqa: E402
from cases import cases, heat, heat_inputs, inputs, pendulum_inputs, pendulum_loss  # noqa: E402

# The time-stepping rows (reported after the table, and in docs/benchmarks.md)
HEAT = "heat d/(u0, alpha) (1024 x 1e4)"
HEAT_CKPT = "heat d/(u0, alpha) (1024 x 1e4), ckpt=64"
HEAT_AUTO = "heat d/(u0, alpha) (1024 x 1e4), ckpt=auto"
PENDULUM_1E6 = "pendulum leapfrog (1e6), ckpt=auto"
LJ_MD = "LJ MD forces (38 atoms of lj_md.py)"
HEAT_RATIO, HEAT_CKPT_RATIO, HEAT_SNAPSHOTS, PENDULUM_BYTES = 4.0, 10.0, 64, 100e6

# The figure: the heat equation at 1024 cells, and the pendulum, against the step count
JAX_ROUNDS = 3
"""Rounds per row of JAX's gradient timed and then adjit's (the adjit/jax column: the median
of the rounds' ratios, both under the load of the moment)."""
SWEEP_HEAT_STEPS = (100, 300, 1000, 3000, 10_000)
SWEEP_PENDULUM_STEPS = (1000, 10_000, 100_000, 1_000_000)


def median_time(fn, args, repeats, min_time=0.2):
    """Median seconds per call, over `repeats` batches sized to take about min_time/repeats."""
    fn(*args)
    t0 = time.perf_counter()
    fn(*args)
    one = max(time.perf_counter() - t0, 1e-7)
    inner = max(1, int(min_time / repeats / one))
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn(*args)
        samples.append((time.perf_counter() - t0) / inner)
    return float(np.median(samples))


class JaxTimer:
    """jax_cases.py running with --serve: times a case's JAX gradient again on request."""

    def __init__(self, proc):
        self.proc = proc

    def time(self, name):
        """Median seconds per call of case `name`'s JAX gradient, timed now."""
        self.proc.stdin.write(name + "\n")
        self.proc.stdin.flush()
        return float(json.loads(self.proc.stdout.readline()))

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        self.proc.wait(timeout=60)


def measure_jax(repeats, out):
    """({case name: (None, path of its saved gradient, first call's seconds)} from
    jax_cases.py run in a subprocess writing into folder `out` (no time yet: the JaxTimer
    times each case beside adjit's gradient), a line to print: the JAX
    version, or why there is no comparison (None instead of the dict), and a JaxTimer (the
    subprocess, staying to time cases again: rounds beside adjit's timings)."""
    if importlib.util.find_spec("jax") is None:
        return None, "note: jax is not installed, no JAX comparison " \
                     "(pip install 'adjit[compare]' to add it)", None
    script = os.path.join(HERE, "jax_cases.py")
    cpu = bench_cpu()
    pin = cpu is not None
    # JAX on the CPU, like adjit here (a machine with a GPU would otherwise compare against
    # the GPU); ADJIT_BENCH_JAX_PLATFORM=gpu asks for that comparison
    env = dict(os.environ, JAX_PLATFORMS=os.environ.get("ADJIT_BENCH_JAX_PLATFORM", "cpu"))
    errors = os.path.join(out, "stderr.txt")
    os.makedirs(out, exist_ok=True)
    with open(errors, "w") as err:
        proc = subprocess.Popen([sys.executable, script, out, str(repeats), "--serve"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                text=True, env=env,
                                preexec_fn=(lambda: os.sched_setaffinity(0, {cpu})) if pin
                                else None)
    if proc.stdout.readline().strip() != "ready":
        proc.wait()
        with open(errors) as fh:
            return None, "note: no JAX comparison, jax_cases.py failed:\n" + fh.read()[-2000:], \
                None
    with open(os.path.join(out, "times.json")) as fh:
        info = json.load(fh)
    where = f"pinned to CPU {cpu}" if pin else "default threads"
    return info["cases"], info["about"].replace("(in its own process)",
                                                f"(in its own process, {where})"), \
        JaxTimer(proc)


def bench_cpu():
    """The CPU JAX's process and the single-threaded rows run on: the last one this process
    may use (None with ADJIT_BENCH_JAX_PIN=0 or where a process cannot be pinned)."""
    if os.environ.get("ADJIT_BENCH_JAX_PIN", "1") == "0" or not hasattr(os, "sched_setaffinity"):
        return None
    return max(os.sched_getaffinity(0))


def max_rel_diff(a, saved):
    """Largest |a - b| over the gradient (a tuple for tuple argnums), relative to max |a|;
    b is read from the .npz file jax_cases.py saved (arrays g0, g1, ...)."""
    a = a if isinstance(a, tuple) else (a,)
    with np.load(saved) as z:
        b = [z[f"g{k}"] for k in range(len(a))]
    scale = max(float(np.max(np.abs(x))) for x in a) or 1.0
    return max(float(np.max(np.abs(np.asarray(x) - np.asarray(y)))) for x, y in zip(a, b)) \
        / scale


def _chosen(options):
    """How a row's gradient checkpoints, for its footer line."""
    if options.get("checkpoint") is None:
        return ("default options (the first call's tape outgrew the CPU's cache: that call "
                "was made again, and the later ones run, with checkpoint='auto')")
    return f"checkpoint={options['checkpoint']!r}"


def same_bits(a, b):
    """'yes' where the gradients a and b hold the same bits; where only zeros differ in sign
    (equal values: a derivative that underflowed, added to a zero in one and assigned in the
    other), says how many; else a mismatch."""
    a = a if isinstance(a, tuple) else (a,)
    b = b if isinstance(b, tuple) else (b,)
    if not all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(a, b)):
        return "NO  <-- MISMATCH"
    signs = 0
    for x, y in zip(a, b):
        x, y = np.asarray(x, float), np.asarray(y, float)
        signs += int(np.sum(np.signbit(x) != np.signbit(y)))
    return "yes" if signs == 0 else f"equal values; {signs} zeros of the other sign"


def human_bytes(n):
    """131 kB, 80.0 MB, 8.19 kB: three significant digits, decimal units."""
    if n < 1000:
        return f"{n} B"
    v = float(n)
    for unit in ("kB", "MB", "GB", "TB"):
        v /= 1000.0
        if v < 999.5 or unit == "TB":
            break
    digits = 0 if v >= 99.95 else 1 if v >= 9.995 else 2
    return f"{v:.{digits}f} {unit}"


def ms(seconds):
    v = seconds * 1e3
    return f"{v:.3f}" if v >= 0.01 else f"{v:.4f}"


def _warm_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([ROOT, HERE] + (
        [env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


def warm_runtime():
    """Every case's gradient built and called once in a fresh process with adjit's default
    disk cache (warm_start.py --all): numba then holds adjit's runtime in its disk cache
    (compiled on a machine's first use), and the first-call column does not depend on
    whether this is the checkout's first run. A line for the table's head."""
    env = _warm_env()
    env.pop("ADJIT_CACHE_DIR", None)
    env["ADJIT_CACHE"] = "1"
    proc = subprocess.run([sys.executable, os.path.join(HERE, "warm_start.py"), "--all"],
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1] if proc.stderr else "failed"
        return f"warning: the warm-up process before the table failed: {tail}"
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    return (f"before the table a fresh process built and called every row's gradient once "
            f"with adjit's default disk cache ({info['loaded']} loaded, {info['compiled']} "
            f"compiled, {info['seconds']:.0f} s), so that adjit's runtime, which numba "
            "compiles on a machine's first use, is in numba's disk cache for every row's "
            "first call")


def warm_process(index, name):
    """(seconds from starting a fresh process to the first result, seconds of that first
    call, numba cache hits, error text or None) for case `index`, built by warm_start.py
    with the ADJIT_CACHE_DIR this process compiled it into."""
    env = _warm_env()
    script = os.path.join(HERE, "warm_start.py")
    start = time.time()
    proc = subprocess.run([sys.executable, script, str(index)], capture_output=True, text=True,
                          env=env)
    if proc.returncode != 0:
        return None, None, 0, proc.stderr.strip().splitlines()[-1] if proc.stderr else "failed"
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    if info["name"] != name:
        return None, None, 0, f"warm_start.py ran case {info['name']!r}"
    return info["end"] - start, info["first"], info["hits"], None


def machine_line():
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    load = f", load average {os.getloadavg()[0]:.2f} at the start" \
        if hasattr(os, "getloadavg") else ""
    return (f"machine: {platform.machine()} {cpu} ({os.cpu_count()} cores{load}), "
            f"python {platform.python_version()}, numba {numba.__version__}, "
            f"numpy {np.__version__}")


class Bench:
    """Runs the table, keeps what the docs need: lines printed, results by case name."""

    def __init__(self, tmp, repeats):
        self.tmp = tmp
        self.repeats = repeats
        self.lines = []         # everything printed, in order
        self.head = []          # the lines above the table
        self.table = []
        self.footers = []
        self.results = {}       # case name -> dict
        self.md = None          # the velocity-Verlet times of examples/lj_md.py
        self.grads = {}         # (function, argnums, options) -> gradient object
        self.forwards = {}      # function -> numba.njit(function)

    def out(self, text, where):
        print(text, flush=True)
        where.append(text)

    def gradient(self, fn, argnums, options):
        """The gradient object for these options (built once, cache=True)."""
        key = (fn, argnums, tuple(sorted((k, repr(v)) for k, v in options.items())))
        if key not in self.grads:
            self.grads[key] = adjit.grad(fn, argnums=argnums, cache=True, **options)
        return self.grads[key]

    def forward(self, fn):
        if fn not in self.forwards:
            # (a function its module compiles with @njit already is its own forward)
            self.forwards[fn] = fn if isinstance(fn, numba.core.dispatcher.Dispatcher) else \
                numba.njit(parallel=getattr(fn, "parallel", False))(fn)
        return self.forwards[fn]

    def run(self):
        self.machine = machine_line()
        self.out(self.machine, self.head)
        self.out(f"medians of {self.repeats} runs; 'first call' is the gradient's first call "
                 "in a process where numba itself is already warm; forward = numba.njit(f) "
                 "with default flags; FAST = fastmath={'contract', 'arcp', 'nsz'} for the "
                 "gradient only; OPENBLAS_NUM_THREADS="
                 f"{os.environ['OPENBLAS_NUM_THREADS']}" + (
                     "" if bench_cpu() is None else f"; every row but the prange ones on CPU "
                     f"{bench_cpu()}, where JAX runs too"), self.head)
        blas = blas_kernels.describe()
        if blas is not None:
            self.out(f"matrix products: {blas} (benchmarks/blas_kernels.py)", self.head)
        self.out(warm_runtime(), self.head)
        self.jax_times, self.about, self.jax_timer = measure_jax(
            self.repeats, os.path.join(self.tmp, "jax"))
        try:
            self._rows()
        finally:
            if self.jax_timer is not None:
                self.jax_timer.close()

    def _rows(self):
        if self.jax_timer is not None:
            self.about += (f"; adjit/jax: the median over {JAX_ROUNDS} rounds of JAX's "
                           "gradient timed, then adjit's, one after the other")
        self.out(self.about + "\n", self.head)
        self.target_lines = []
        numba.njit(lambda v: v + 1.0)(1.0)
        all_cases = cases()
        width = max(len(c[0]) for c in all_cases)
        cols = [("case", width), ("forward ms", 10), ("gradient ms", 11), ("grad/fwd", 8),
                ("hand ms", 8), ("adjit/hand", 10),
                ("first call s", 12), ("warm process s", 14), ("peak tape", 9)]
        if self.jax_times is not None:
            cols += [("jax grad ms", 11), ("adjit/jax", 9)]
        header = "| " + " | ".join(f"{c:{w}}" if k == 0 else f"{c:>{w}}"
                                   for k, (c, w) in enumerate(cols)) + " |"
        self.out(header, self.table)
        self.out("|" + "|".join("-" * (w + 2) for _, w in cols) + "|", self.table)
        warnings, diffs, ckpt_lines, hand_diffs, fwd_compiles = [], [], [], [], []
        # numba's worker threads start before this thread is pinned (they keep every CPU)
        numba.get_num_threads()
        cpu = bench_cpu()
        every_cpu = os.sched_getaffinity(0) if cpu is not None else None
        for index, (name, fn, args, argnums, options) in enumerate(all_cases):
            if cpu is not None:
                # a prange row's threads on every CPU; the others on JAX's
                os.sched_setaffinity(0, every_cpu if getattr(fn, "parallel", False) else {cpu})
            args = inputs(args)
            os.environ["ADJIT_CACHE_DIR"] = os.path.join(self.tmp, "cache", str(index))
            forward = self.forward(fn)
            g = adjit.grad(fn, argnums=argnums, cache=True, **options)
            t0 = time.perf_counter()
            g(*args)
            compile_s = time.perf_counter() - t0
            if sum(g._called.dispatcher.stats.cache_hits.values()):
                warnings.append(f"warning: {name}: the first call here loaded the gradient "
                                "from the disk cache: its first-call time is not a compile")
            if not forward.signatures:
                t0 = time.perf_counter()
                forward(*args)
                fwd_compiles.append((name, time.perf_counter() - t0))
            tf = median_time(forward, args, self.repeats)
            tg = median_time(g, args, self.repeats)
            tape = g.last_tape
            grad_value = g(*args)
            warm_s, warm_first, hits, error = warm_process(index, name)
            if error is not None:
                warm = "error"
                warnings.append(f"warning: {name}: the warm process failed: {error}")
            else:
                warm = f"{warm_s:.2f} / {warm_first:.2f}"
                if hits != 1:
                    warnings.append(f"warning: {name}: the warm process did not load the "
                                    f"gradient from the disk cache (cache hits {hits}): "
                                    "it compiled again")
            r = {"name": name, "forward": tf, "gradient": tg, "ratio": tg / tf,
                 "compile": compile_s, "warm": warm_s, "warm_first": warm_first,
                 "warm_hits": hits, "tape": tape, "options": options}
            hand_fn = HAND.get((fn, argnums))
            if hand_fn is not None:
                th = median_time(hand_fn, args, self.repeats)
                r["hand"] = th
                r["hand_diff"] = hand.max_rel_err(grad_value, hand_fn(*args))
                hand_diffs.append((name, r["hand_diff"]))
                hand_cols = [f"{ms(th):>8}", f"{tg / th:10.2f}"]
            else:
                hand_cols = [f"{'-':>8}", f"{'-':>10}"]
            row = [f"{name:{width}}", f"{ms(tf):>10}", f"{ms(tg):>11}", f"{tg / tf:8.2f}",
                   *hand_cols,
                   f"{compile_s:12.2f}", f"{warm:>14}", f"{human_bytes(tape.total_bytes):>9}"]
            if self.jax_times is not None and name in self.jax_times:
                saved = self.jax_times[name][1]
                # JAX's gradient and adjit's timed one after the other, JAX_ROUNDS times:
                # the ratio is the median of the rounds' ratios (the two under one load)
                tjs, tgs = [], []
                for _ in range(JAX_ROUNDS):
                    tjs.append(self.jax_timer.time(name))
                    tgs.append(median_time(g, args, self.repeats))
                tj = float(np.median(tjs))
                r["jax"] = tj
                r["jax_ratio"] = float(np.median([a / b for a, b in zip(tgs, tjs)]))
                r["jax_diff"] = max_rel_diff(grad_value, saved)
                diffs.append((name, r["jax_diff"]))
                row += [f"{ms(tj):>11}", f"{r['jax_ratio']:9.2f}"]
            elif self.jax_times is not None:
                row += [f"{'-':>11}", f"{'-':>9}"]
            self.out("| " + " | ".join(row) + " |", self.table)
            if options.get("checkpoint") not in (None, False) or tape.steps:
                plain = self.gradient(fn, argnums, dict(options, checkpoint=False))
                recorded = plain(*args)
                r["recorded"] = plain.last_tape
                r["same_bits"] = same_bits(grad_value, recorded)
                ckpt_lines.append(
                    f"{name}: {_chosen(options)}, {tape.steps} steps: tape "
                    f"{human_bytes(tape.tape_bytes)} + snapshots "
                    f"{human_bytes(tape.snapshot_bytes)} = {human_bytes(tape.total_bytes)} "
                    f"(recorded without checkpointing: "
                    f"{human_bytes(r['recorded'].total_bytes)}); recompute factor "
                    f"{tape.recompute_factor:.2f} ({tape.advanced} steps advanced again, "
                    f"{tape.taped} taped); gradient identical to the recorded one to the bit: "
                    f"{r['same_bits']}")
            self.results[name] = r
            # keep the gradient for the figure (the same options, other step counts)
            self.grads.setdefault((fn, argnums, tuple(sorted((k, repr(v)) for k, v in
                                                            options.items()))), g)
        if cpu is not None:
            os.sched_setaffinity(0, every_cpu)
        self.out("", self.footers)
        for line in ckpt_lines:
            self.out(line, self.footers)
        self.hand_footer(hand_diffs)
        self.md_footer()
        self.out("numba's own first call of each forward (numba.njit(f), compiling it, in the "
                 "same process), for the 'first call' column: " + ", ".join(
                     f"{name} {s:.2f} s" for name, s in fwd_compiles), self.footers)
        if self.jax_times is not None:
            firsts = [(name, r["compile"], self.jax_times[name][2])
                      for name, r in self.results.items()
                      if name in self.jax_times and "checkpoint" not in r["options"]]
            self.out("first calls, adjit (the 'first call' column) against JAX (its own "
                     "process: tracing, XLA's compilation and one evaluation): " + ", ".join(
                         f"{name} {a:.2f} s / {j:.2f} s" for name, a, j in firsts),
                     self.footers)
        for name, d in diffs:
            self.out(f"{name}: adjit and JAX gradients differ by {d:.1e} of the largest "
                     "component" + ("" if d < 1e-8 else "  <-- MISMATCH"), self.footers)
        if self.jax_times is not None:
            self.out("JAX rows with checkpointing show the JAX gradient without it (the mirrors "
                     "store every step, as jax.grad of lax.scan does)", self.footers)
        hits_ok = all(r["warm_hits"] == 1 for r in self.results.values())
        if hits_ok:
            self.out("warm process: numba loaded every gradient from the disk cache "
                     "(1 cache hit each)", self.footers)
        for line in warnings:
            self.out(line, self.footers)
        self.out("", self.footers)
        self.target_lines = self.targets()
        for line in self.target_lines:
            self.out(line, self.footers)

    def hand_footer(self, hand_diffs):
        """The hand-written adjoints (hand.py): checked against central differences on small
        inputs, and against adjit's gradient on each row's inputs."""
        checks = [(fn.__name__, argnums, hand.check(fn, argnums))
                  for fn, argnums in hand.HAND]
        worst = max(err for _, _, err in checks)
        self.out(f"hand-written adjoints (benchmarks/hand.py; each stores what its reverse "
                 f"pass needs, every step's state for the heat rows with alpha and the "
                 f"leapfrog rows, and does not checkpoint): against central differences on "
                 f"small inputs, largest error {worst:.1e} of the largest component"
                 + ("" if worst < 1e-6 else "  <-- MISMATCH"), self.footers)
        if hand_diffs:
            name, d = max(hand_diffs, key=lambda t: t[1])
            self.out(f"adjit and hand-written gradients on the rows' inputs differ by at most "
                     f"{d:.1e} of the largest component ({name})"
                     + ("" if d < 1e-8 else "  <-- MISMATCH"), self.footers)

    def md_footer(self):
        """Velocity Verlet of examples/lj_md.py with the adjit forces and the analytic ones."""
        path = os.path.join(ROOT, "examples", "lj_md.py")
        try:
            spec = importlib.util.spec_from_file_location("_bench_lj_md", path)
            lj = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(lj)
            rng = np.random.default_rng(0)
            x0 = lj.fcc_cluster(38)
            x0 = x0 + 0.01 * rng.normal(size=x0.shape)
            v0 = lj.initial_velocities(x0, 0.05, rng)
            steps, dt = 10_000, 0.002
            for run in (lj.velocity_verlet, lj.velocity_verlet_analytic):
                run(x0.copy(), v0.copy(), dt, 1)          # compile
            times = {}
            for run in (lj.velocity_verlet, lj.velocity_verlet_analytic):
                samples = []
                for _ in range(3):
                    x, v = x0.copy(), v0.copy()
                    t0 = time.perf_counter()
                    run(x, v, dt, steps)
                    samples.append(time.perf_counter() - t0)
                times[run.__name__] = float(np.median(samples))
            ta, tb = times["velocity_verlet"], times["velocity_verlet_analytic"]
            err = float(np.abs(-lj.denergy(x0) - lj.analytic_forces(x0)).max()
                        / np.abs(lj.analytic_forces(x0)).max())
            from cases import lj_cluster
            same = np.array_equal(lj_cluster(), x0)
            self.md = {"adjit": ta, "analytic": tb, "steps": steps}
            self.out(f"LJ MD (examples/lj_md.py, 38 atoms): {steps} velocity-Verlet steps in "
                     f"one @njit loop: adjit forces {ta:.3f} s ({ta / steps * 1e6:.1f} us per "
                     f"step), analytic forces {tb:.3f} s ({tb / steps * 1e6:.1f} us per "
                     f"step): {ta / tb:.2f}x (each step also evaluates the energy, as the "
                     f"example does); forces agree to {err:.1e}"
                     + ("" if same else "; NOTE: the example's atoms differ from the case's"),
                     self.footers)
        except Exception as exc:   # the example is edited elsewhere: say so, keep the table
            self.out(f"LJ MD footer skipped: examples/lj_md.py failed: "
                     f"{type(exc).__name__}: {exc}", self.footers)

    def targets(self):
        """Lines saying where adjit stands: the time-stepping rows' cost and memory (the
        heat gradient with default options, "auto" and 64 snapshots; the pendulum's tape),
        and the gradients against JAX's and the hand-written adjoints, from the numbers
        measured. `self.verdicts` keeps (what, measured) for docs/benchmarks.md."""
        res = self.results
        self.verdicts = []
        if HEAT in res:
            self.verdicts.append(("heat 1024 x 1e4, d/(u0, alpha), default options",
                                  f"{res[HEAT]['ratio']:.1f}x its forward"))
        if HEAT_AUTO in res:
            self.verdicts.append(("heat 1024 x 1e4, d/(u0, alpha), checkpoint='auto'",
                                  f"{res[HEAT_AUTO]['ratio']:.1f}x its forward"))
        if HEAT_CKPT in res:
            r = res[HEAT_CKPT]
            n = heat_inputs(1024, 10_000)[0].shape[0]
            state_bytes = 2 * n * 8        # the loop state: u and un
            t = r["tape"]
            per = t.snapshot_bytes / HEAT_SNAPSHOTS
            self.verdicts.append((
                "heat 1024 x 1e4, checkpoint=64",
                f"{r['ratio']:.1f}x its forward in {human_bytes(t.total_bytes)}: "
                f"{HEAT_SNAPSHOTS} snapshots of {per:.0f} B (the state u, un: {state_bytes} B, "
                f"and {per - state_bytes:.0f} B of loop scalars) + {t.tape_bytes} B of tape "
                f"for one step; {human_bytes(r['recorded'].total_bytes)} without "
                "checkpointing"))
        if PENDULUM_1E6 in res:
            t = res[PENDULUM_1E6]["tape"]
            self.verdicts.append((
                "pendulum 1e6 steps, checkpoint='auto'",
                f"{human_bytes(t.total_bytes)} of tape (recompute factor "
                f"{t.recompute_factor:.2f}; recorded: "
                f"{human_bytes(res[PENDULUM_1E6]['recorded'].total_bytes)})"))
        lines = ["time stepping:"] + [f"  {what}: {measured}" for what, measured in
                                      self.verdicts]
        lines += self.standing()
        return lines

    def standing(self):
        """Where adjit stands against JAX and the hand-written adjoints, over the rows that
        have them (medians, and the rows on the slower side)."""
        lines = []
        against = {
            "JAX": [(name, r["jax_ratio"]) for name, r in self.results.items()
                    if "jax_ratio" in r],
            "the hand-written adjoints": [(name, r["gradient"] / r["hand"]) for name, r in
                                          self.results.items() if r.get("hand")]}
        for label, rows in against.items():
            if not rows:
                continue
            ratios = [v for _, v in rows]
            slower = [f"{name} {v:.2f}" for name, v in rows if v > 1.0]
            lines.append(f"adjit against {label}: median time ratio {np.median(ratios):.2f} "
                         f"over {len(rows)} rows; slower on "
                         + (", ".join(slower) if slower else "none"))
        return lines

    def sweep(self):
        """Gradient/forward and tape bytes against the step count, for the figure."""
        repeats = max(3, self.repeats // 2)
        series = []
        heat_sets = [("heat, recorded", {"checkpoint": False}),
                     ("heat, checkpoint=64", {"checkpoint": 64}),
                     ("heat, checkpoint='auto'", {"checkpoint": "auto"})]
        pend_sets = [("pendulum, recorded", {"checkpoint": False}),
                     ("pendulum, checkpoint='auto'", {"checkpoint": "auto"})]
        for fn, argnums, sets, steps_list, make in (
                (heat, (0, 1), heat_sets, SWEEP_HEAT_STEPS, lambda s: heat_inputs(1024, s)),
                (pendulum_loss, (0, 1), pend_sets, SWEEP_PENDULUM_STEPS, pendulum_inputs)):
            os.environ["ADJIT_CACHE_DIR"] = os.path.join(self.tmp, "cache", "sweep")
            forward = self.forward(fn)
            for label, options in sets:
                g = self.gradient(fn, argnums, options)
                points = []
                for steps in steps_list:
                    args = make(steps)
                    tf = median_time(forward, args, repeats)
                    tg = median_time(g, args, repeats)
                    t = g.last_tape
                    points.append((steps, tg / tf, t.total_bytes, t.recompute_factor))
                    print(f"  {label:28} {steps:>8} steps: grad/fwd {tg / tf:6.2f}, tape "
                          f"{human_bytes(t.total_bytes):>9}, recompute "
                          f"{t.recompute_factor:.2f}", flush=True)
                series.append((label, points))
        return series


def plot(series, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.6))
    styles = {"heat, recorded": ("C0", "o", "-"), "heat, checkpoint=64": ("C1", "s", "-"),
              "heat, checkpoint='auto'": ("C2", "^", "-"),
              "pendulum, recorded": ("C0", "o", "--"),
              "pendulum, checkpoint='auto'": ("C2", "^", "--")}
    for label, points in series:
        color, marker, line = styles[label]
        steps = [p[0] for p in points]
        a1.plot(steps, [p[1] for p in points], color=color, marker=marker, linestyle=line,
                label=label)
        a2.plot(steps, [p[2] for p in points], color=color, marker=marker, linestyle=line,
                label=label)
    a1.axhline(HEAT_RATIO, color="C0", linestyle=":", linewidth=1)
    a1.axhline(HEAT_CKPT_RATIO, color="C1", linestyle=":", linewidth=1)
    right = max(SWEEP_HEAT_STEPS + SWEEP_PENDULUM_STEPS)
    a1.text(right, HEAT_RATIO * 1.04, f"{HEAT_RATIO:g}x (heat, recorded)",
            fontsize=7, color="C0", ha="right", va="bottom")
    a1.text(right, HEAT_CKPT_RATIO * 1.04,
            f"{HEAT_CKPT_RATIO:g}x (heat, checkpoint=64)", fontsize=7,
            color="C1", ha="right", va="bottom")
    a1.set_xscale("log")
    a1.set_xlabel("time steps")
    a1.set_ylabel("gradient time / njit forward time")
    a1.set_title("gradient / forward")
    a1.set_ylim(bottom=0)
    a2.axhline(PENDULUM_BYTES, color="gray", linestyle=":", linewidth=1)
    a2.text(right, PENDULUM_BYTES * 1.15, "100 MB",
            fontsize=7, color="gray", ha="right", va="bottom")
    a2.set_xscale("log")
    a2.set_yscale("log")
    a2.set_xlabel("time steps")
    a2.set_ylabel("bytes (tape as allocated + snapshots)")
    a2.set_title("peak tape memory (g.last_tape.total_bytes)")
    for a in (a1, a2):
        a.grid(True, which="major", alpha=0.3)
    handles, labels = a1.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8,
               frameon=False)
    fig.suptitle("adjit: heat equation, 1024 cells, d/(u0, alpha) (solid); pendulum leapfrog "
                 "loss, d/(w2, c) (dashed)", fontsize=10)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_docs(bench, series, path, elapsed):
    r = bench.results
    heat_row, ckpt_row = r.get(HEAT), r.get(HEAT_CKPT)
    n_cells = 1022 * 10_000
    lines = [
        "# Benchmarks",
        "",
        "Written by `make bench-docs` (`python benchmarks/run.py --docs`) on "
        f"{datetime.date.today().isoformat()}; `make bench` prints the same table and "
        "footers without writing files. The whole run took "
        f"{elapsed / 60:.1f} minutes.",
        "",
        f"**Machine:** {bench.machine.removeprefix('machine: ')}.",
        "",
        "The machine is shared: another engineer runs the test suite on the same two cores "
        "(the load average at the start of this run is in the line above), so the times are "
        "noisy: differences of 10-30% between runs are common, more for the sub-millisecond "
        "rows and for the heat rows, which depend on memory bandwidth. The ratios are taken "
        "within one run and are steadier than the absolute times.",
        "",
        "```",
        *[line.rstrip() for line in bench.head if line.strip()],
        "```",
        "",
        *bench.table,
        "",
        "```",
        *[line for line in bench.footers if line.strip() and line not in bench.target_lines],
        "```",
        "",
        "## What the columns mean",
        "",
        "- **forward ms**: `numba.njit(f)` with default flags on the same inputs, median of "
        "repeated calls from Python.",
        "- **gradient ms**: the adjit gradient (`adjit.grad(f, argnums, cache=True, ...)`, the "
        "options of the row), median of repeated calls from Python in the same process.",
        "- **grad/fwd**: the two times' ratio, from the same run.",
        "- **first call s**: the gradient's first call in the benchmark process: the source "
        "transformation, numba's compilation of the generated adjoint, writing it to the disk "
        "cache, and one gradient evaluation (numba itself is already warm, and adjit's "
        "runtime, which numba compiles on a machine's first use, is already in numba's disk "
        "cache: a process before the table built every row's gradient once). A footer gives "
        "numba's own first call of each forward, which compiles it, for comparison, and "
        "another (with jax installed) JAX's first call of its gradient (tracing, XLA's "
        "compilation and one evaluation, JAX itself warm).",
        "- **warm process s**: `A / B`. A fresh Python process (benchmarks/warm_start.py, "
        "same interpreter and environment, the `ADJIT_CACHE_DIR` the benchmark process "
        "compiled into) builds the same gradient with `cache=True` and calls it once. A is "
        "the time from starting that process to the first result (interpreter start, "
        "importing numpy, numba and adjit, the transformation, which is not cached, and "
        "loading the machine code); B is the first call alone (numba's one-time set-up in a "
        "process, about 0.2 s here, is done before it and counts in A only). The process "
        "checks that "
        "numba loaded the gradient from the cache (one cache hit); a footer warns if not.",
        "- **peak tape**: `g.last_tape.total_bytes` after a call: the tape's stacks as "
        "allocated (a call starts them as long as the last call used them and grows them by "
        "doubling where it needs more, so this is up to twice what was written) plus the "
        "checkpoint snapshots. Decimal units (1 MB = 10^6 bytes).",
        "- **jax grad ms**, **adjit/jax** (with jax installed): `jax.jit(jax.grad(f, "
        "argnums))` of the mirror in benchmarks/jax_cases.py, float64, in its own process "
        "pinned to one CPU (the one every row but the prange ones runs on here), int "
        "arguments (step counts) static; the time loops are "
        "`lax.scan` over whole-array updates, and the Lennard-Jones rows written with loops "
        "are compared with the vectorized energy (how one writes it in JAX). JAX stores every step for the reverse pass, "
        "so the checkpointed rows repeat the time of the uncheckpointed mirror. The "
        f"process stays: for each row JAX's gradient is timed again and then adjit's, "
        f"{JAX_ROUNDS} rounds; **jax grad ms** is the median of JAX's rounds and "
        "**adjit/jax** the median of the rounds' ratios, so that both sides of a ratio ran "
        "under the same load of the shared machine. The gradients are compared (footer "
        "lines).",
        "",
        "The footers give, for each checkpointed case, the recompute factor (forward steps "
        "run per step: `(steps + advanced + taped) / steps`), the tape of the same gradient "
        "recorded without checkpointing, and whether the two gradients agree to the bit; and "
        "the velocity-Verlet integration of examples/lj_md.py with adjit forces against its "
        "hand-written forces.",
        "",
        "## Time stepping",
        "",
        "| case | measured |",
        "|---|---|",
        *[f"| {what} | {measured} |" for what, measured in bench.verdicts],
        "",
        *bench.standing(),
        "",
    ]
    if heat_row is not None:
        fwd_ns = heat_row["forward"] / n_cells * 1e9
        grad_ns = heat_row["gradient"] / n_cells * 1e9
        text = (f"What the heat gradients cost: the forward runs at {fwd_ns:.2f} ns per cell update "
                "(1022 x 10^4 updates), under one clock cycle: its stencil loop runs "
                "vectorized (SIMD). Recorded, the gradient's forward sweep records one float "
                "per cell update (the stencil value `u[i-1] - 2 u[i] + u[i+1]` that alpha's "
                f"adjoint multiplies: {human_bytes(n_cells * 8)}) and its reverse sweep reads "
                "them back through main memory (the step series below). The default gradient "
                "finds that tape beyond the cache at its first call and checkpoints from then "
                f"on: {grad_ns:.1f} ns per cell update, {heat_row['ratio']:.1f} times the "
                f"forward, in {human_bytes(heat_row['tape'].total_bytes)}.")
        auto_row = r.get(HEAT_AUTO)
        if auto_row is not None:
            text += (f" With checkpoint='auto' (blocks of about sqrt(steps x state / tape per "
                     "step) steps, each step run twice: plainly, then recording) the working "
                     f"set ({human_bytes(auto_row['tape'].total_bytes)}) stays in the caches "
                     f"and the gradient takes {auto_row['gradient'] / n_cells * 1e9:.1f} ns per "
                     f"cell update, {auto_row['ratio']:.1f} times the forward: two forward "
                     "steps, then a backward step of two passes over the cells (the "
                     "copy-back's adjoint, which assigns un_bar, together with alpha's sum of "
                     "products, then the stencil's adjoint in gather form, which assigns "
                     "u_bar).")
        if ckpt_row is not None:
            text += (f" With checkpoint=64 the gradient takes "
                     f"{ckpt_row['gradient'] / n_cells * 1e9:.1f} ns per cell update: it runs "
                     f"every step {ckpt_row['tape'].recompute_factor:.2f} times.")
        lines += [text, ""]
    md = r.get(LJ_MD)
    if md is not None:
        lines += [f"The LJ MD row (38 atoms) takes {md['forward'] * 1e6:.1f} us forward and "
                  f"{md['gradient'] * 1e6:.1f} us for the gradient, called from Python: at this "
                  "size the cost of the call itself is a good part of both. The footer's "
                  "velocity-Verlet loop calls the gradient from @njit code, as "
                  "examples/lj_md.py does.", ""]
    gmm = [x for x in r.values() if x["name"].startswith("GMM") and "jax_ratio" in x]
    if gmm:
        rows = ", ".join(f"{x['name'].split(' (')[0]}: gradient {x['ratio']:.2f}x numba's "
                         f"forward, {x['jax_ratio']:.2f}x JAX" for x in gmm)
        lines += [f"Where JAX is faster, GMM ({rows}): the JAX mirror computes the products "
                  "of every point with every component's triangular factor as one einsum "
                  "over all the points, matrix-matrix products that XLA tiles for the caches "
                  "(twice the arithmetic of the packed triangle, at several times the rate). "
                  "adjit differentiates the loops as written, one point at a time: for each "
                  "point and component a triangular matrix-vector product, whose adjoint is a "
                  "dot product and an update of the factor's adjoint for each column, every "
                  "factor read again for every point. Its gradient runs these loops "
                  "vectorized, faster than numba runs the forward's; to run at JAX's rate it "
                  "would have to reorder the user's loops (several points per pass over a "
                  "factor), which it does not do. The MLP rows are matrix products on both "
                  "sides (numba calls BLAS, XLA its own kernels), with the elementwise work "
                  "between them vectorized in both.", ""]
    fastmath_miss = [x["name"] for x in r.values() if x.get("warm_hits", 1) != 1
                     and isinstance(x.get("options", {}).get("fastmath"), (set, frozenset))]
    if fastmath_miss:
        lines += [f"Cache miss in the warm process for {', '.join(fastmath_miss)}: the "
                  "options give fastmath as a set of flags, and the name of adjit's cache "
                  "file is a digest that includes `repr()` of that set, whose order changes "
                  "from process to process (string hashing is randomized, PYTHONHASHSEED). "
                  "With PYTHONHASHSEED fixed the second process loads it from the cache. "
                  "The warm column of that row shows a compile, not a cache load.", ""]
    lines += [
        "## Gradient cost and tape memory against the number of steps",
        "",
        "![grad/fwd and tape memory against the step count](benchmarks.png)",
        "",
        "The heat equation at 1024 cells, d/(u0, alpha), at "
        f"{', '.join(str(s) for s in SWEEP_HEAT_STEPS)} steps, and the pendulum loss at "
        f"{', '.join(f'{s:,}' for s in SWEEP_PENDULUM_STEPS)} steps (medians of "
        f"{max(3, bench.repeats // 2)} runs; the same gradient objects for every step count):",
        "",
        "| series | steps | grad/fwd | peak tape | recompute factor |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, points in series:
        for steps, ratio, nbytes, factor in points:
            lines.append(f"| {label} | {steps} | {ratio:.2f} | {human_bytes(nbytes)} | "
                         f"{factor:.2f} |")
    heat_rec = dict(series).get("heat, recorded")
    if heat_rec:
        lines += ["", "The recorded heat gradient's ratio against the step count: " + ", ".join(
            f"{ratio:.1f} at {steps} steps ({human_bytes(nbytes)} of tape)"
            for steps, ratio, nbytes, _ in heat_rec) + ": it grows with the tape, while the "
            "checkpointed gradients, whose memory stays small, keep about the same ratio at "
            "every step count."]
    lines += [
        "",
        "Without checkpointing the tape grows in proportion to the step count; with it the "
        "tape holds one step and the snapshots, so memory stays flat (checkpoint=64) or grows "
        "as sqrt(steps) (checkpoint='auto' on the heat equation), for a recompute factor of "
        "about 2 to 4. checkpoint='auto' records every step where that fits the memory "
        "allowed and a step records at most 8 numbers (the pendulum: 4): the first pass "
        "records, each step runs once, and the tape is the recorded one.",
        "",
    ]
    with open(path, "w") as fh:
        fh.write("\n".join(lines))


def main():
    # compile times are measured here: gradients made without cache= compile (no disk
    # cache; set in main, so that importing this module changes nothing)
    os.environ.setdefault("ADJIT_CACHE", "0")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", action="store_true",
                        help="also write docs/benchmarks.md and docs/benchmarks.png "
                             "(needs matplotlib: pip install -e '.[plot]')")
    opts = parser.parse_args()
    if opts.docs and importlib.util.find_spec("matplotlib") is None:
        sys.exit("run.py --docs needs matplotlib: pip install -e '.[plot]' (make bench-docs "
                 "does)")
    start = time.perf_counter()
    repeats = int(os.environ.get("ADJIT_BENCH_REPEATS", "7"))
    with tempfile.TemporaryDirectory(prefix="adjit-bench-") as tmp:
        os.makedirs(os.path.join(tmp, "jax"))
        bench = Bench(tmp, repeats)
        bench.run()
        if opts.docs:
            print("\nfigure: gradient/forward and tape against the step count", flush=True)
            series = bench.sweep()
            docs = os.path.join(ROOT, "docs")
            plot(series, os.path.join(docs, "benchmarks.png"))
            write_docs(bench, series, os.path.join(docs, "benchmarks.md"),
                       time.perf_counter() - start)
            print(f"wrote {os.path.join(docs, 'benchmarks.md')} and benchmarks.png")
    print(f"\n{time.perf_counter() - start:.0f} s in all")


if __name__ == "__main__":
    main()
