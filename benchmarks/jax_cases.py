"""JAX versions of the vectorized benchmark cases, mirroring benchmarks/cases.py line by line.

Run by run.py as a script in its own process when jax is installed (the optional extra
adjit[compare]): `python jax_cases.py OUTDIR REPEATS` times jax.jit(jax.grad(f)) for every
case of cases.py whose function has a mirror here, on the same inputs, and writes
OUTDIR/times.json and each gradient as OUTDIR/<k>.npz. Nothing else imports this module.
Float64 throughout (jax_enable_x64).
"""
import json
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)


def softmax_cross_entropy(z, y):
    m = jax.lax.stop_gradient(jnp.max(z))
    lse = m + jnp.log(jnp.sum(jnp.exp(z - m)))
    return -jnp.sum(y * (z - lse))


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


MIRRORS = {"softmax_cross_entropy": softmax_cross_entropy, "mlp_loss": mlp_loss,
           "lennard_jones_vec": lennard_jones_vec,
           "lennard_jones_vec_where": lennard_jones_vec_where}
"""JAX function for each benchmark function of the same __name__ in cases.py."""


def main(out, repeats):
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    from cases import cases
    from run import median_time

    times = {}
    for k, (name, fn, args, argnums, _) in enumerate(cases()):
        f = MIRRORS.get(fn.__name__)
        if f is None:
            continue
        g = jax.jit(jax.grad(f, argnums=argnums))
        jargs = tuple(jnp.asarray(a) for a in args)

        def call(*a):
            return jax.block_until_ready(g(*a))

        grads = call(*jargs)
        grads = grads if isinstance(grads, tuple) else (grads,)
        path = os.path.join(out, f"{k}.npz")
        np.savez(path, **{f"g{j}": np.asarray(v) for j, v in enumerate(grads)})
        times[name] = (median_time(call, jargs, repeats), path)
    about = f"JAX {jax.__version__} on {jax.devices()[0].platform} (in its own process): " \
            "jax.jit(jax.grad(f)), float64, inputs as jax arrays, timed to block_until_ready"
    with open(os.path.join(out, "times.json"), "w") as fh:
        json.dump({"about": about, "cases": times}, fh)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
