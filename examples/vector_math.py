"""Vector math: generated loops that LLVM can vectorize call adjit's own exp, log, tanh, sin...

A two-layer tanh network's loss, written as numpy code, and its gradient with the default
(`vector_math=True`) and with `vector_math=False`, which calls the C library's functions one
element at a time as numba's own code does. The two gradients agree to rounding; the
default's elementwise loops (the tanh layer forward, the adjoint loops) run as SIMD code.

Then a loop that sums as it goes, as likelihoods are written: the negative log-likelihood of
a logistic distribution, `s -= ...` element by element. adjit runs such a loop in blocks: the
logs and exponentials of a block as a vectorized map, then the sum in the loop's order, so
the value is the same number the loop adds up.
Run: .venv/bin/python examples/vector_math.py
"""
import math
import time

import numpy as np

import adjit


def loss(W1, b1, W2, X, Y):
    """Mean squared error of a tanh layer and a linear read-out over the rows of X, and a
    penalty on the first layer's weights."""
    h = np.tanh(X @ W1 + b1)
    r = h @ W2 - Y
    return 0.5 * np.mean(r * r) + 1e-3 * np.sum(np.sin(W1) ** 2)


def logistic_nll(mu, log_s, x):
    """The negative log-likelihood of location mu and scale exp(log_s) for the data x."""
    s = math.exp(log_s)
    total = 0.0
    for i in range(x.shape[0]):
        z = (x[i] - mu) / s
        total -= -z - log_s - 2.0 * math.log1p(math.exp(-z))
    return total


def median_ms(f, args, repeats=21):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f(*args)
        times.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(times))


def main(n=512, d=32, hidden=128, out=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    W1 = rng.normal(size=(d, hidden)) / np.sqrt(d)
    b1 = rng.normal(size=hidden) * 0.1
    W2 = rng.normal(size=(hidden, out)) / np.sqrt(hidden)
    Y = np.sin(X[:, :out]) + 0.1 * rng.normal(size=(n, out))
    args = (W1, b1, W2, X, Y)

    fast = adjit.value_and_grad(loss, argnums=(0, 1, 2))
    plain = adjit.value_and_grad(loss, argnums=(0, 1, 2), vector_math=False)
    v_fast, g_fast = fast(*args)
    v_plain, g_plain = plain(*args)
    scale = max(np.abs(g).max() for g in g_plain)
    grad_diff = max(np.abs(a - b).max() for a, b in zip(g_fast, g_plain)) / scale
    vmath_lines = [line.strip() for line in fast.source.splitlines() if "vmath." in line]
    t_fast, t_plain = median_ms(fast, args), median_ms(plain, args)
    print(f"loss {v_fast:.15f} (vector_math=False: {v_plain:.15f})")
    print(f"gradients differ by {grad_diff:.1e} of the largest component")
    print(f"gradient: {t_fast:.3f} ms with vector math, {t_plain:.3f} ms without "
          f"({t_plain / t_fast:.2f}x)")
    print("generated lines calling vmath:")
    for line in vmath_lines:
        print("   ", line)

    data = rng.logistic(0.3, 0.8, size=50 * n)
    nll = adjit.value_and_grad(logistic_nll, argnums=(0, 1))
    nll_plain = adjit.value_and_grad(logistic_nll, argnums=(0, 1), vector_math=False)
    (value, grads), (value_plain, grads_plain) = nll(0.0, 0.0, data), nll_plain(0.0, 0.0, data)
    nll_diff = max(abs(value - value_plain) / abs(value_plain),
                   max(abs(a - b) / abs(b) for a, b in zip(grads, grads_plain)))
    blocks = "vec.not_negative" in nll.source
    n_fast, n_plain = median_ms(nll, (0.0, 0.0, data)), median_ms(nll_plain, (0.0, 0.0, data))
    print(f"logistic negative log-likelihood of {data.size} points: {value:.6f}, gradient "
          f"({grads[0]:.6f}, {grads[1]:.6f}); relative difference to vector_math=False "
          f"{nll_diff:.1e}")
    print(f"its loop sums as it goes{', run in blocks' if blocks else ''}: value and gradient "
          f"{n_fast:.3f} ms with vector math, {n_plain:.3f} ms without "
          f"({n_plain / n_fast:.2f}x)")
    return {"value_diff": abs(v_fast - v_plain) / abs(v_plain), "grad_diff": grad_diff,
            "vmath_lines": vmath_lines, "ms": (t_fast, t_plain), "nll_diff": nll_diff,
            "blocks": blocks, "nll_ms": (n_fast, n_plain)}


if __name__ == "__main__":
    main()
