"""JAX versions of the vectorized benchmark cases, mirroring benchmarks/cases.py line by line,
and of the time-stepping cases (the heat equation, the pendulum loss) written the way JAX
wants them: the time loop as lax.scan over whole-array updates.

Run by run.py as a script in its own process when jax is installed (the optional extra
adjit[compare]): `python jax_cases.py OUTDIR REPEATS [--serve]` times jax.jit(jax.grad(f))
for every case of cases.py whose function has a mirror here (matched by __name__), on the
same inputs, and writes OUTDIR/times.json (each case's median time, the path of its
gradient, and the first call's time: tracing, XLA's compilation and one evaluation) and each
gradient as OUTDIR/<k>.npz. Python ints among the arguments (step counts) are static
arguments of the jitted gradient, everything else goes in as a jax array. Cases that share
their inputs and argnums with an earlier case (the same gradient with and without
checkpointing) reuse its time. With --serve no time is taken in that first pass (times.json
holds null), and the process stays to time cases on request (a name per line of stdin, the
median seconds per line of stdout), which run.py does beside each timing of adjit's
gradient. Nothing else imports this module.
Float64 throughout (jax_enable_x64).
"""
import json
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)


def softmax_cross_entropy(z, y):
    m = jax.lax.stop_gradient(jnp.max(z))
    lse = m + jnp.log(jnp.sum(jnp.exp(z - m)))
    return -jnp.sum(y * (z - lse))


def logistic_loss(w, X, y):
    return jnp.sum(jnp.log1p(jnp.exp(-y * (X @ w)))) + 0.5 * jnp.sum(w * w)


def mlp_loss(W1, b1, W2, b2, X, Y):
    h = jnp.tanh(X @ W1 + b1)
    z = h @ W2 + b2
    m = jax.lax.stop_gradient(jnp.max(z))
    lse = m + jnp.log(jnp.sum(jnp.exp(z - m), axis=1))
    return jnp.mean(lse - jnp.sum(Y * z, axis=1))


def lennard_jones_vec(x):
    n = x.shape[0]
    x0 = x[:, 0]
    x1 = x[:, 1]
    x2 = x[:, 2]
    dx = x0[:, None] - x0[None, :]
    dy = x1[:, None] - x1[None, :]
    dz = x2[:, None] - x2[None, :]
    r2 = dx * dx + dy * dy + dz * dz + jnp.eye(n)
    inv6 = 1.0 / (r2 * r2 * r2)
    return 2.0 * jnp.sum(inv6 * inv6 - inv6)


def lennard_jones_vec_where(x):
    x0 = x[:, 0]
    x1 = x[:, 1]
    x2 = x[:, 2]
    dx = x0[:, None] - x0[None, :]
    dy = x1[:, None] - x1[None, :]
    dz = x2[:, None] - x2[None, :]
    r2 = dx * dx + dy * dy + dz * dz
    r2 = jnp.where(r2 > 0.0, r2, 1.0)
    inv6 = 1.0 / (r2 * r2 * r2)
    return 2.0 * jnp.sum(inv6 * inv6 - inv6)


def heat(u0, alpha, steps):
    """cases.heat: the two end cells keep their initial values, the inner ones take the
    explicit stencil update; `steps` is static."""
    def step(u, _):
        return u.at[1:-1].set(u[1:-1] + alpha * (u[:-2] - 2.0 * u[1:-1] + u[2:])), None

    u, _ = jax.lax.scan(step, u0, None, length=steps)
    return jnp.sum(u * u)


def pendulum_loss(w2, c, theta0, omega0, dt, steps, obs_steps, obs):
    """cases.pendulum_loss: the observation counter k is carried through the scan, and the
    squared difference is added only at the step that reaches obs_steps[k]."""
    n_obs = obs_steps.shape[0]
    omega = omega0 + 0.5 * dt * (-w2 * jnp.sin(theta0) - c * omega0)

    def step(carry, t):
        theta, omega, k, s = carry
        theta = theta + dt * omega
        omega = omega + dt * (-w2 * jnp.sin(theta) - c * omega)
        j = jnp.minimum(k, n_obs - 1)
        hit = (k < n_obs) & (t + 1 == obs_steps[j])
        d = theta - obs[j]
        s = s + jnp.where(hit, d * d, 0.0)
        return (theta, omega, k + hit.astype(k.dtype), s), None

    start = (theta0 + 0.0 * omega, omega, jnp.zeros((), obs_steps.dtype), 0.0 * omega)
    (_, _, _, s), _ = jax.lax.scan(step, start, jnp.arange(steps))
    return s


def sum_of_sin(x):
    """cases.sum_of_sin, the loop as one array expression."""
    return jnp.sum(jnp.sin(x) * x)


def gmm_objective(alphas, means, icf, x, wishart_gamma, wishart_m):
    """ADBench's GMM objective (benchmarks/gmm_bench.py) as JAX users write it: the packed
    lower triangles scattered into K dense d x d matrices, the products of every point and
    component as one einsum; d and wishart_m are static."""
    from jax.scipy.special import gammaln, logsumexp
    n, d = x.shape
    K = alphas.shape[0]
    rows, cols = np.tril_indices(d, -1)
    order = np.lexsort((rows, cols))            # column by column, as gmm_bench packs them
    rows, cols = rows[order], cols[order]
    logdiag = icf[:, :d]
    sum_qs = jnp.sum(logdiag, axis=1)
    Qdiags = jnp.exp(logdiag)
    Q = jnp.zeros((K, d, d)).at[:, rows, cols].set(icf[:, d:]) + jax.vmap(jnp.diag)(Qdiags)
    xc = x[:, None, :] - means[None, :, :]
    Qxc = jnp.einsum("krc,nkc->nkr", Q, xc)
    main = alphas[None, :] + sum_qs[None, :] - 0.5 * jnp.sum(Qxc * Qxc, axis=2)
    n_w = d + wishart_m + 1
    log_gamma_d = 0.25 * d * (d - 1) * np.log(np.pi) + sum(
        gammaln(0.5 * n_w + 0.5 * (1 - j)) for j in range(1, d + 1))
    C = n_w * d * (jnp.log(wishart_gamma) - 0.5 * np.log(2.0)) - log_gamma_d
    prior = jnp.sum(0.5 * wishart_gamma ** 2 * (jnp.sum(Qdiags ** 2, axis=1)
                                                + jnp.sum(icf[:, d:] ** 2, axis=1))
                    - wishart_m * sum_qs) - K * C
    return (-n * d * 0.5 * np.log(2.0 * np.pi) + jnp.sum(logsumexp(main, axis=1))
            - n * logsumexp(alphas) + prior)


MIRRORS = {"sum_of_sin": sum_of_sin, "gmm_objective": gmm_objective,
           "softmax_cross_entropy": softmax_cross_entropy, "mlp_loss": mlp_loss,
           "logistic_loss": logistic_loss,
           "lennard_jones_vec": lennard_jones_vec,
           "lennard_jones_vec_where": lennard_jones_vec_where,
           # the loop forms of the energy: in JAX one writes it vectorized (a Python loop
           # over pairs would be unrolled into the traced program)
           "lennard_jones": lennard_jones_vec, "lennard_jones_prange": lennard_jones_vec,
           "lennard_jones_helper": lennard_jones_vec,
           "heat": heat, "pendulum_loss": pendulum_loss}
"""JAX function for each benchmark function of the same __name__ in cases.py."""


def main(out, repeats, serve=False):
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    from cases import cases, inputs
    from run import median_time

    # JAX itself warm before the first calls are timed (as numba is for adjit's column)
    jax.block_until_ready(jax.jit(jax.grad(lambda x: jnp.sum(jnp.tanh(x))))(jnp.ones(3)))
    times = {}
    done = {}       # (function, argnums, id of the inputs) -> the case's (time, path, first)
    calls, keys = {}, {}    # the same key -> (timed call, its arguments); case name -> key
    for k, (name, fn, args, argnums, _) in enumerate(cases()):
        f = MIRRORS.get(fn.__name__)
        if f is None:
            continue
        args = inputs(args)
        key = keys[name] = (fn.__name__, argnums, id(args))
        if key in done:
            times[name] = done[key]
            continue
        static = tuple(j for j, a in enumerate(args)
                       if isinstance(a, int) and not isinstance(a, bool))
        g = jax.jit(jax.grad(f, argnums=argnums), static_argnums=static)
        jargs = tuple(a if j in static else jnp.asarray(a) for j, a in enumerate(args))

        def call(*a, g=g):
            return jax.block_until_ready(g(*a))

        t0 = time.perf_counter()
        grads = call(*jargs)            # tracing, XLA's compilation and one evaluation
        first = time.perf_counter() - t0
        grads = grads if isinstance(grads, tuple) else (grads,)
        path = os.path.join(out, f"{k}.npz")
        np.savez(path, **{f"g{j}": np.asarray(v) for j, v in enumerate(grads)})
        # (with --serve run.py asks for the time beside adjit's: none is taken here)
        seconds = None if serve else median_time(call, jargs, repeats)
        times[name] = done[key] = (seconds, path, first)
        calls[key] = (call, jargs)
    about = f"JAX {jax.__version__} on {jax.devices()[0].platform} (in its own process): " \
            "jax.jit(jax.grad(f)), float64, inputs as jax arrays (ints static), timed to " \
            "block_until_ready"
    with open(os.path.join(out, "times.json"), "w") as fh:
        json.dump({"about": about, "cases": times}, fh)
    if not serve:
        return
    # --serve: time a case again whenever run.py asks (a case's name on a line of stdin; its
    # median seconds on a line of stdout), so that it can time adjit's gradient and JAX's
    # one after the other, under the same load
    print("ready", flush=True)
    for line in sys.stdin:
        name = line.strip()
        if name not in keys:
            break
        call, jargs = calls[keys[name]]
        print(json.dumps(median_time(call, jargs, repeats)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), serve="--serve" in sys.argv[3:])
