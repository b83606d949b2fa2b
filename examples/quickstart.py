"""Quick start: the gradient of a loop, compiled by numba, and its generated adjoint.

Run: .venv/bin/python examples/quickstart.py
"""
import math

import numpy as np

from adjit import grad, value_and_grad


@grad
def f(x):                      # x: 1-D float64 array
    s = 0.0
    for i in range(x.shape[0]):
        s += math.sin(x[i]) * x[i]
    return s


def main():
    x = np.linspace(0, 1, 5)
    g = f(x)
    exact = np.cos(x) * x + np.sin(x)
    print("adjit gradient :", g)
    print("analytic       :", exact)
    print("max abs error  :", np.abs(g - exact).max())
    value, g2 = value_and_grad(f.__wrapped__)(x)
    print("value          :", value)
    print("\nThe generated adjoint (f.source):\n")
    print(f.source)


if __name__ == "__main__":
    main()
