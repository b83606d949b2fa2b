"""ADBench's Gaussian-mixture-model (GMM) objective: njit forward, adjit gradient, a
hand-written numba adjoint, and (when jax is importable) jax.jit(jax.grad).

The objective is ADBench's GMM log-likelihood with a Wishart prior (microsoft/ADBench,
src/cpp/shared/gmm.h and src/python/modules/PyTorch/gmm_objective.py; the formula was read
there, the code below is written from scratch):

    Q_k      = diag(exp(icf[k, :d])) + strictly-lower L_k, L_k's entries icf[k, d:] stored
               column by column (column 0 rows 1..d-1, then column 1 rows 2..d-1, ...)
    f        = -n d/2 log(2 pi)
               + sum_i logsumexp_k( alphas[k] + sum_j icf[k, j] - 1/2 |Q_k (x_i - means[k])|^2 )
               - n logsumexp(alphas)
               + sum_k ( gamma^2/2 (|exp(icf[k, :d])|^2 + |icf[k, d:]|^2) - m sum_j icf[k, j] )
               - K ( n_w d (log gamma - log(2)/2) - log Gamma_d(n_w / 2) ),   n_w = d + m + 1

with alphas (K,), means (K, d), icf (K, d(d+1)/2), x (n, d), and Wishart parameters gamma
(float) and m (int). Inputs are drawn as ADBench's generator does (alphas, icf, x ~ N(0, 1);
means ~ U(0, 1); gamma = 1, m = 0), from a fixed seed.

`gmm_objective` is written the way a numba user writes it: plain loops over points and
components, work buffers allocated once and overwritten for every (point, component), a
hand-written max-trick logsumexp, @njit helpers. It is the function both numba (forward
column) and adjit (`adjit.grad(gmm_objective, argnums=(0, 1, 2))`, gradient column) compile.
`gmm_hand_grad` is a careful reverse pass written by hand in @njit: for each point it runs
the forward for all K components (keeping Q_k(x_i - mu_k), K*d numbers), then the backward
for that point, recomputing x_i - mu_k instead of storing it; no tape at all.

Columns: forward ms (njit), adjit gradient ms, grad/fwd, hand adjoint ms, adjit/hand, the
tape adjit's gradient recorded (g.last_tape.total_bytes after a call), and JAX ms
(jax.jit(jax.grad) of a vectorized float64 JAX version, run in this process; "-" when jax
is not importable). A last table times `gmm_objective_prange`, the same objective with
`numba.prange` over the points (buffers allocated per point): forward with
njit(parallel=True) and adjit's gradient of it (which adjit runs in parallel), with numba's
thread count.

Times are medians of repeated calls (at least 5, more for fast ones), after warm-up calls
(compile excluded); the forward, adjit's gradient and the hand adjoint are called in turn
within each round, so each ratio comes from the same moments of the run. Before a size is timed, adjit's
gradient is checked against the hand adjoint (rtol 1e-8), and at the smallest size both are
also checked against central finite differences of the njit objective; a disagreement is
printed as FAIL and makes the script exit with status 1.

For context: ADBench's published Tapenade (the fastest general tool there) gradient/objective
ratios on this objective are 3.7 to 15.5, depending on the size.

    .venv/bin/python benchmarks/gmm_bench.py            # ADBench's d x K grid, n = 1000
    .venv/bin/python benchmarks/gmm_bench.py --quick    # four small sizes, ~20 s on 2 cores
"""
import argparse
import math
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numba  # noqa: E402
import numpy as np  # noqa: E402
from numba import njit, prange  # noqa: E402

FULL_SIZES = [(d, K) for d in (2, 10, 20, 32, 64) for K in (5, 10, 25, 50)]
QUICK_SIZES = [(2, 5), (10, 5), (10, 25), (20, 10)]
N_POINTS = 1000
TAPENADE_RATIOS = (3.7, 15.5)


# ----------------------------------------------------------------------------------------
# The objective, as a numba user writes it
# ----------------------------------------------------------------------------------------

@njit
def logsumexp(v):
    """log(sum(exp(v))) of a 1-D array, with the max subtracted first."""
    mx = v[0]
    for i in range(1, v.shape[0]):
        if v[i] > mx:
            mx = v[i]
    s = 0.0
    for i in range(v.shape[0]):
        s += np.exp(v[i] - mx)
    return np.log(s) + mx


@njit
def log_gamma_distrib(a, p):
    """The log of the multivariate gamma function Gamma_p(a)."""
    out = 0.25 * p * (p - 1) * math.log(math.pi)
    for j in range(1, p + 1):
        out += math.lgamma(a + 0.5 * (1 - j))
    return out


@njit
def log_wishart_prior(icf, Qdiags, sum_qs, wishart_gamma, wishart_m):
    K = icf.shape[0]
    d = Qdiags.shape[1]
    n_w = d + wishart_m + 1
    C = n_w * d * (math.log(wishart_gamma) - 0.5 * math.log(2.0)) - log_gamma_distrib(0.5 * n_w, d)
    out = 0.0
    for k in range(K):
        frob = 0.0
        for j in range(d):
            frob += Qdiags[k, j] * Qdiags[k, j]
        for j in range(d, icf.shape[1]):
            frob += icf[k, j] * icf[k, j]
        out += 0.5 * wishart_gamma * wishart_gamma * frob - wishart_m * sum_qs[k]
    return out - K * C


@njit
def gmm_objective(alphas, means, icf, x, wishart_gamma, wishart_m):
    n = x.shape[0]
    d = x.shape[1]
    K = alphas.shape[0]
    Qdiags = np.empty((K, d))
    sum_qs = np.empty(K)
    for k in range(K):
        s = 0.0
        for j in range(d):
            s += icf[k, j]
            Qdiags[k, j] = np.exp(icf[k, j])
        sum_qs[k] = s

    xc = np.empty(d)
    Qxc = np.empty(d)
    main_term = np.empty(K)
    slse = 0.0
    for i in range(n):
        for k in range(K):
            for j in range(d):
                xc[j] = x[i, j] - means[k, j]
                Qxc[j] = Qdiags[k, j] * xc[j]
            idx = d
            for c in range(d):
                for r in range(c + 1, d):
                    Qxc[r] += icf[k, idx] * xc[c]
                    idx += 1
            sq = 0.0
            for j in range(d):
                sq += Qxc[j] * Qxc[j]
            main_term[k] = alphas[k] + sum_qs[k] - 0.5 * sq
        slse += logsumexp(main_term)

    const = -n * d * 0.5 * math.log(2.0 * math.pi)
    return (const + slse - n * logsumexp(alphas)
            + log_wishart_prior(icf, Qdiags, sum_qs, wishart_gamma, wishart_m))


@njit(parallel=True)
def gmm_objective_prange(alphas, means, icf, x, wishart_gamma, wishart_m):
    n = x.shape[0]
    d = x.shape[1]
    K = alphas.shape[0]
    Qdiags = np.empty((K, d))
    sum_qs = np.empty(K)
    for k in range(K):
        s = 0.0
        for j in range(d):
            s += icf[k, j]
            Qdiags[k, j] = np.exp(icf[k, j])
        sum_qs[k] = s

    slse = 0.0
    for i in prange(n):
        xc = np.empty(d)
        Qxc = np.empty(d)
        main_term = np.empty(K)
        for k in range(K):
            for j in range(d):
                xc[j] = x[i, j] - means[k, j]
                Qxc[j] = Qdiags[k, j] * xc[j]
            idx = d
            for c in range(d):
                for r in range(c + 1, d):
                    Qxc[r] += icf[k, idx] * xc[c]
                    idx += 1
            sq = 0.0
            for j in range(d):
                sq += Qxc[j] * Qxc[j]
            main_term[k] = alphas[k] + sum_qs[k] - 0.5 * sq
        slse += logsumexp(main_term)

    const = -n * d * 0.5 * math.log(2.0 * math.pi)
    return (const + slse - n * logsumexp(alphas)
            + log_wishart_prior(icf, Qdiags, sum_qs, wishart_gamma, wishart_m))


# ----------------------------------------------------------------------------------------
# The hand-written adjoint: per point, forward over the K components, then backward
# ----------------------------------------------------------------------------------------

@njit
def gmm_hand_grad(alphas, means, icf, x, wishart_gamma, wishart_m):
    """(d f/d alphas, d f/d means, d f/d icf) of gmm_objective, by a hand-written reverse pass."""
    n = x.shape[0]
    d = x.shape[1]
    K = alphas.shape[0]
    Qdiags = np.empty((K, d))
    sum_qs = np.zeros(K)
    for k in range(K):
        for j in range(d):
            Qdiags[k, j] = np.exp(icf[k, j])
            sum_qs[k] += icf[k, j]

    d_alphas = np.zeros(K)
    d_means = np.zeros((K, d))
    d_icf = np.zeros((K, icf.shape[1]))
    d_Qdiags = np.zeros((K, d))     # adjoint of exp(icf[k, :d]) from the likelihood
    d_sum_qs = np.zeros(K)          # adjoint of sum_j icf[k, j] from the likelihood

    Qxc = np.empty((K, d))          # Q_k (x_i - mu_k) of the current point, all k
    main_term = np.empty(K)
    xc = np.empty(d)
    dQxc = np.empty(d)
    dxc = np.empty(d)
    for i in range(n):
        # forward for point i
        for k in range(K):
            for j in range(d):
                xc[j] = x[i, j] - means[k, j]
                Qxc[k, j] = Qdiags[k, j] * xc[j]
            idx = d
            for c in range(d):
                xcc = xc[c]
                for r in range(c + 1, d):
                    Qxc[k, r] += icf[k, idx] * xcc
                    idx += 1
            sq = 0.0
            for j in range(d):
                sq += Qxc[k, j] * Qxc[k, j]
            main_term[k] = alphas[k] + sum_qs[k] - 0.5 * sq
        # logsumexp over k: its adjoint is the softmax weights
        mx = main_term[0]
        for k in range(1, K):
            if main_term[k] > mx:
                mx = main_term[k]
        tot = 0.0
        for k in range(K):
            main_term[k] = np.exp(main_term[k] - mx)
            tot += main_term[k]
        # backward for point i
        for k in range(K):
            w = main_term[k] / tot
            d_alphas[k] += w
            d_sum_qs[k] += w
            for j in range(d):
                xc[j] = x[i, j] - means[k, j]
                dQxc[j] = -w * Qxc[k, j]          # d(-sq/2)/dQxc = -Qxc
            idx = d
            for c in range(d):
                xcc = xc[c]
                acc = 0.0
                for r in range(c + 1, d):
                    d_icf[k, idx] += dQxc[r] * xcc
                    acc += icf[k, idx] * dQxc[r]
                    idx += 1
                dxc[c] = acc
            for j in range(d):
                d_Qdiags[k, j] += dQxc[j] * xc[j]
                d_means[k, j] -= dxc[j] + Qdiags[k, j] * dQxc[j]

    # - n logsumexp(alphas)
    mx = alphas[0]
    for k in range(1, K):
        if alphas[k] > mx:
            mx = alphas[k]
    tot = 0.0
    for k in range(K):
        tot += np.exp(alphas[k] - mx)
    for k in range(K):
        d_alphas[k] -= n * np.exp(alphas[k] - mx) / tot

    # Wishart prior, then exp and the sum of the log-diagonal
    g2 = wishart_gamma * wishart_gamma
    for k in range(K):
        for j in range(d):
            q = Qdiags[k, j]
            d_icf[k, j] += (d_Qdiags[k, j] + g2 * q) * q + d_sum_qs[k] - wishart_m
        for j in range(d, icf.shape[1]):
            d_icf[k, j] += g2 * icf[k, j]
    return d_alphas, d_means, d_icf


# ----------------------------------------------------------------------------------------
# JAX (optional): a vectorized float64 version, jax.jit(jax.grad)
# ----------------------------------------------------------------------------------------

def _jax_device():
    """Where JAX runs (its default device: a GPU when one is visible, else the CPU)."""
    import jax
    dev = jax.devices()[0]
    return f"yes, on {dev.platform.upper()} ({getattr(dev, 'device_kind', dev.platform)})"


def make_jax_grad(d):
    """jax.jit(jax.grad(objective, argnums=(0, 1, 2))) for dimension d, or None without jax
    (the objective is benchmarks/jax_cases.py's gmm_objective, the mirror make bench times;
    d comes from the inputs' shapes, static under jit)."""
    try:
        import jax
        import jax.numpy as jnp
        from jax_cases import gmm_objective as objective
    except Exception:  # noqa: BLE001 - any import failure means: no JAX column
        return None

    g = jax.jit(jax.grad(objective, argnums=(0, 1, 2)), static_argnums=(5,))

    def call(alphas, means, icf, x, wishart_gamma, wishart_m):
        out = g(alphas, means, icf, x, wishart_gamma, wishart_m)
        return tuple(np.asarray(jax.block_until_ready(o)) for o in out)

    def prepared(args):
        a = tuple(jnp.asarray(v) for v in args[:4]) + (args[4], args[5])

        def run(*_):
            return jax.block_until_ready(g(*a))
        return run
    call.prepared = prepared
    return call


# ----------------------------------------------------------------------------------------
# Harness
# ----------------------------------------------------------------------------------------

def make_inputs(d, K, n, seed=0):
    rng = np.random.default_rng(seed + 1000 * d + K)
    icf_sz = d * (d + 1) // 2
    alphas = rng.standard_normal(K)
    means = rng.uniform(0.0, 1.0, (K, d))
    icf = rng.standard_normal((K, icf_sz))
    x = rng.standard_normal((n, d))
    return alphas, means, icf, x, 1.0, 0


def median_ms(fn, args, min_repeats=5, target_s=1.0, max_repeats=200):
    """Median ms of single calls: at least min_repeats, more while under target_s in total."""
    t0 = time.perf_counter()
    fn(*args)
    one = time.perf_counter() - t0
    reps = int(min(max_repeats, max(min_repeats, target_s / max(one, 1e-9))))
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn(*args)
        samples.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(samples))


def interleaved_ms(fns, args, min_repeats=5, target_s=1.5, max_repeats=200):
    """Median ms of single calls of each function, called in turn within each round (a
    burst of load on the shared machine then slows all of them, not one: steadier ratios)."""
    one = 0.0
    for fn in fns:
        t0 = time.perf_counter()
        fn(*args)
        one += time.perf_counter() - t0
    reps = int(min(max_repeats, max(min_repeats, target_s / max(one, 1e-9))))
    samples = [[] for _ in fns]
    for _ in range(reps):
        for fn, out in zip(fns, samples):
            t0 = time.perf_counter()
            fn(*args)
            out.append(time.perf_counter() - t0)
    return [1e3 * float(np.median(s)) for s in samples]


def max_rel_err(a, b):
    """max |a - b| / max(|b|, 1) over all entries of the tuples of arrays a and b."""
    worst = 0.0
    for u, v in zip(a, b):
        worst = max(worst, float(np.max(np.abs(u - v) / np.maximum(np.abs(v), 1.0))))
    return worst


def fd_grads(f, args, argnums=(0, 1, 2), h=1e-5):
    """Central finite differences of f with respect to args[k], k in argnums."""
    out = []
    for k in argnums:
        base = args[k]
        g = np.zeros_like(base)
        for idx in np.ndindex(base.shape):
            xp = base.copy()
            xp[idx] += h
            xm = base.copy()
            xm[idx] -= h
            hi = list(args)
            hi[k] = xp
            lo = list(args)
            lo[k] = xm
            g[idx] = (f(*hi) - f(*lo)) / (2 * h)
        out.append(g)
    return tuple(out)


def check(name, got, want, rtol):
    ok = all(np.allclose(u, v, rtol=rtol, atol=rtol * max(1.0, float(np.max(np.abs(v)))))
             for u, v in zip(got, want))
    if not ok:
        print(f"FAIL: {name}: max relative error {max_rel_err(got, want):.3e} (rtol {rtol:g})",
              flush=True)
    return ok


def fmt_bytes(b):
    if b is None:
        return "-"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if b >= scale:
            return f"{b / scale:.1f} {unit}"
    return f"{b} B"


def main(argv=None):
    # compile times are measured here: gradients made without cache= compile (no disk
    # cache; set in main, so that importing this module changes nothing)
    os.environ.setdefault("ADJIT_CACHE", "0")
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="four small sizes")
    ap.add_argument("--sizes", default=None,
                    help="comma-separated dxK list, e.g. 2x5,64x50 (overrides --quick)")
    ap.add_argument("-n", type=int, default=N_POINTS, help="number of points (1000)")
    ap.add_argument("--no-prange", action="store_true", help="skip the prange table")
    opts = ap.parse_args(argv)
    if opts.sizes:
        sizes = [tuple(int(t) for t in s.split("x")) for s in opts.sizes.split(",")]
    else:
        sizes = QUICK_SIZES if opts.quick else FULL_SIZES
    n = opts.n

    import adjit
    g_adjit = adjit.grad(gmm_objective, argnums=(0, 1, 2))
    jax_probe = make_jax_grad(2)
    have_jax = jax_probe is not None
    print(f"# ADBench GMM, n = {n}; numba {numba.__version__}, numba threads "
          f"{numba.get_num_threads()}; jax: "
          f"{_jax_device() if have_jax else 'not importable (column -)'}",
          flush=True)
    try:
        print(f"# load before: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}", flush=True)
    except OSError:
        pass

    # compile everything once on the smallest size (not timed in the table)
    d0, K0 = sizes[0]
    args0 = make_inputs(d0, K0, n)
    t0 = time.perf_counter()
    gmm_objective(*args0)
    t_fwd_c = time.perf_counter() - t0
    t0 = time.perf_counter()
    gmm_hand_grad(*args0)
    t_hand_c = time.perf_counter() - t0
    t0 = time.perf_counter()
    g_adjit(*args0)
    t_adj_c = time.perf_counter() - t0
    print(f"# first-call compile: njit forward {t_fwd_c:.1f} s, hand adjoint {t_hand_c:.1f} s, "
          f"adjit gradient {t_adj_c:.1f} s", flush=True)

    failures = 0
    # finite differences at the smallest size (the objective is O(n), so FD error ~1e-7)
    fd = fd_grads(gmm_objective, args0)
    hand0 = gmm_hand_grad(*args0)
    adj0 = g_adjit(*args0)
    ok_h = check(f"hand adjoint vs finite differences (d={d0}, K={K0})", hand0, fd, 1e-5)
    ok_a = check(f"adjit vs finite differences (d={d0}, K={K0})", adj0, fd, 1e-5)
    failures += (not ok_h) + (not ok_a)
    print(f"# FD check at d={d0}, K={K0}: hand {'ok' if ok_h else 'FAIL'} "
          f"({max_rel_err(hand0, fd):.1e}), adjit {'ok' if ok_a else 'FAIL'} "
          f"({max_rel_err(adj0, fd):.1e})", flush=True)

    header = ("| d | K | n | forward ms | adjit grad ms | grad/fwd | hand adjoint ms | "
              "hand/fwd | adjit/hand | adjit tape | JAX grad ms |")
    rows = [header, "|" + "---|" * 11]
    print("\n" + "\n".join(rows), flush=True)
    tape_d10_k5 = None
    for d, K in sizes:
        args = make_inputs(d, K, n)
        hand = gmm_hand_grad(*args)
        try:
            adj = g_adjit(*args)
        except Exception as exc:  # noqa: BLE001 - report and continue with the next size
            print(f"FAIL: adjit gradient at d={d}, K={K}: {type(exc).__name__}: {exc}", flush=True)
            failures += 1
            continue
        if not check(f"adjit vs hand adjoint (d={d}, K={K})", adj, hand, 1e-8):
            failures += 1
        tape = g_adjit.last_tape.total_bytes
        if (d, K) == (10, 5):
            tape_d10_k5 = tape
        fwd, grad_ms, hand_ms = interleaved_ms((gmm_objective, g_adjit, gmm_hand_grad), args)
        jax_col = "-"
        if have_jax:
            jg = make_jax_grad(d)
            jres = jg(*args)
            if not check(f"JAX vs hand adjoint (d={d}, K={K})", jres, hand, 1e-8):
                failures += 1
            jax_col = f"{median_ms(jg.prepared(args), ()):.3f}"
        row = (f"| {d} | {K} | {n} | {fwd:.3f} | {grad_ms:.3f} | {grad_ms / fwd:.2f} | "
               f"{hand_ms:.3f} | {hand_ms / fwd:.2f} | {grad_ms / hand_ms:.2f} | "
               f"{fmt_bytes(tape)} | {jax_col} |")
        rows.append(row)
        print(row, flush=True)

    if not opts.no_prange:
        # the prange variant, at the largest size of this run
        d, K = max(sizes, key=lambda s: s[0] * s[0] * s[1])
        args = make_inputs(d, K, n)
        g_par = adjit.grad(gmm_objective_prange, argnums=(0, 1, 2))
        print(f"\n# prange variant, numba threads = {numba.get_num_threads()} "
              f"(NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS', 'default')})", flush=True)
        try:
            t0 = time.perf_counter()
            par = g_par(*args)
            t_par_c = time.perf_counter() - t0
            gmm_objective_prange(*args)
            ok = check(f"adjit prange gradient vs hand adjoint (d={d}, K={K})", par,
                       gmm_hand_grad(*args), 1e-8)
            ok_v = abs(gmm_objective_prange(*args) - gmm_objective(*args)) <= \
                1e-9 * abs(gmm_objective(*args))
            if not ok_v:
                print("FAIL: prange objective differs from the serial one", flush=True)
            failures += (not ok) + (not ok_v)
            fwd_p = median_ms(gmm_objective_prange, args)
            grad_p = median_ms(g_par, args)
            fwd_s = median_ms(gmm_objective, args)
            grad_s = median_ms(g_adjit, args)
            print(f"# adjit prange gradient first call (compile) {t_par_c:.1f} s; "
                  f"tape {fmt_bytes(g_par.last_tape.total_bytes)}")
            print("| variant | d | K | n | threads | forward ms | adjit grad ms | grad/fwd |")
            print("|---|---|---|---|---|---|---|---|")
            print(f"| range (serial) | {d} | {K} | {n} | 1 | {fwd_s:.3f} | {grad_s:.3f} | "
                  f"{grad_s / fwd_s:.2f} |")
            print(f"| prange, njit(parallel=True) | {d} | {K} | {n} | {numba.get_num_threads()} | "
                  f"{fwd_p:.3f} | {grad_p:.3f} | {grad_p / fwd_p:.2f} |", flush=True)
        except Exception as exc:  # noqa: BLE001
            print(f"FAIL: adjit gradient of the prange variant: {type(exc).__name__}: {exc}",
                  flush=True)
            failures += 1

    if tape_d10_k5 is not None:
        print(f"\n# adjit tape at d=10, K=5, n={n}: {tape_d10_k5} bytes")
    try:
        print(f"# load after: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}")
    except OSError:
        pass
    print(f"# ADBench's Tapenade gradient/objective ratios: {TAPENADE_RATIOS[0]}-"
          f"{TAPENADE_RATIOS[1]} (by size), for context")
    if failures:
        print(f"FAIL: {failures} check(s) failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
