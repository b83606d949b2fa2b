"""Vector math: generated loops that LLVM can vectorize call adjit's own exp, log, tanh, sin...

A two-layer tanh network's loss, written as numpy code, and its gradient with the default
(`vector_math=True`) and with `vector_math=False`, which calls the C library's functions one
element at a time as numba's own code does. The two gradients agree to rounding; the
default's elementwise loops (the tanh layer forward, the adjoint loops) run as SIMD code.
Run: .venv/bin/python examples/vector_math.py
"""
import time

import numpy as np

import adjit


def loss(W1, b1, W2, X, Y):
    """Mean squared error of a tanh layer and a linear read-out over the rows of X, and a
    penalty on the first layer's weights."""
    h = np.tanh(X @ W1 + b1)
    r = h @ W2 - Y
    return 0.5 * np.mean(r * r) + 1e-3 * np.sum(np.sin(W1) ** 2)


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
    return {"value_diff": abs(v_fast - v_plain) / abs(v_plain), "grad_diff": grad_diff,
            "vmath_lines": vmath_lines, "ms": (t_fast, t_plain)}


if __name__ == "__main__":
    main()
